#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/dev demo: hostprofd on its defaults, a workload whose acl_thread a neighbour
# preempts, and the snapshot of it. Usage: tests/demo.sh BUILDDIR
set -euo pipefail

build=${1:?usage: demo.sh BUILDDIR}
hostprofd=$build/daemon/hostprofd
hostprofctl=$build/client/hostprofctl
stall=$build/tests/stall
sock=/run/hostprof/hostprofd.sock
out=$(mktemp -d /tmp/hostprof-demo.XXXXXX)
started=

[ "$(id -u)" = 0 ] || { echo "demo: run as root (hostprofd loads BPF programs)" >&2; exit 1; }
cleanup() {
	[ -n "${stall_pid:-}" ] && kill "$stall_pid" 2>/dev/null
	[ -n "$started" ] && kill -TERM "$started" 2>/dev/null && wait "$started" 2>/dev/null
	return 0
}
trap cleanup EXIT

if "$hostprofctl" status >/dev/null 2>&1; then
	echo "demo: using the hostprofd already running on $sock"
else
	"$hostprofd" >"$out/hostprofd.log" 2>&1 &
	started=$!
	for _ in $(seq 100); do "$hostprofctl" status >/dev/null 2>&1 && break; sleep 0.1; done
	"$hostprofctl" status >/dev/null 2>&1 || { cat "$out/hostprofd.log" >&2; exit 1; }
	echo "demo: started hostprofd (pid $started) on its defaults: socket $sock, watching threads named acl_thread"
fi

cpu=$(( $(nproc) > 1 ? 1 : 0 ))
"$stall" --cpu "$cpu" --duration 5 --period-ms 700 --burst-ms 25 >"$out/stall.out" 2>"$out/stall.err" &
stall_pid=$!
for _ in $(seq 100); do grep -q '^stall: trainer=' "$out/stall.out" && break; sleep 0.05; done
if ! grep -q '^stall: trainer=' "$out/stall.out"; then
	wait "$stall_pid" || true
	echo "demo: the workload did not start: $(cat "$out/stall.err")" >&2
	exit 1
fi
read -r trainer acl hog < <(sed -n 's/^stall: trainer=\([0-9]*\) acl_thread=\([0-9]*\) hog=\([0-9]*\).*/\1 \2 \3/p' "$out/stall.out")
echo "demo: workload 'trainer' pid $trainer: acl_thread (tid $acl) spins on CPU $cpu; its neighbour 'hog' (pid $hog, SCHED_FIFO 50) takes that CPU for 25 ms every 700 ms, for 5 s"
wait "$stall_pid"
stall_pid=

# the acl_preempt trigger took a snapshot by itself, 1 s after the first preemption
name=
for _ in $(seq 50); do
	name=$("$hostprofctl" snapshots --json | jq -r --arg p "$trainer" '[.snapshots[] | select(.pid == ($p | tonumber))][0].name // empty')
	[ -n "$name" ] && break
	sleep 0.1
done
if [ -n "$name" ]; then
	dir=$("$hostprofctl" snapshots --json | jq -r .dir)
	echo "demo: the acl_preempt trigger saved an automatic snapshot by itself:"
	for f in "$dir/$name".*; do echo "demo:   $f"; done
	echo "demo: its report (hostprofctl report $dir/$name.hps):"
	"$hostprofctl" report "$dir/$name.hps" | head -14 | sed 's/^/demo: | /'
else
	echo "demo: no automatic snapshot appeared (is the acl_preempt trigger configured away?)"
fi

echo "demo: and one on request: hostprofctl snapshot --pid $trainer"
file=$("$hostprofctl" snapshot --pid "$trainer" 2>"$out/summary")
echo "demo: wrote $(realpath "$file")  (open it in https://ui.perfetto.dev)"
sed 's/^/demo: /' "$out/summary"
rm -rf "$out"
