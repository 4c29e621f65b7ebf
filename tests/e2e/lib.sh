# SPDX-License-Identifier: GPL-2.0-only
# Shared by the end-to-end tests: each runs hostprofd and hostprofctl as a user would,
# on a socket of its own in a temporary directory.
#
# Environment (set by meson): HOSTPROFD, HOSTPROFCTL, STALL, RAWCLIENT, SRCDIR.
set -u

fails=0
tmp=$(mktemp -d /tmp/hostprof-e2e.XXXXXX)
sock=$tmp/hostprofd.sock
daemon_pid=
bg_pids=()

cleanup() {
	[ -n "$daemon_pid" ] && kill -KILL "$daemon_pid" 2>/dev/null
	for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
finish() {
	[ $fails -eq 0 ] && { echo "all checks passed"; exit 0; }
	echo "$fails checks failed" >&2
	# the daemon's own words, for a failure seen where no one can rerun it (tests/kernel)
	[ -s "${tmp:-}/daemon.log" ] && { echo "--- daemon log (last 30 lines):" >&2; tail -30 "$tmp/daemon.log" >&2; }
	exit 1
}

require_root() { [ "$(id -u)" = 0 ] || skip "needs root (BPF)"; [ -r /sys/kernel/btf/vmlinux ] || skip "no BTF"; }

ctl() { "$HOSTPROFCTL" --socket "$sock" "$@"; }
# spawn_as USER COMMAND...: runs COMMAND as USER (no groups) in the background, its pid in
# $spawned, and returns once it runs as USER in COMMAND: before, the process is the
# shell's fork (root's) or setpriv (root's, then USER's but undumpable after its setuid),
# and a watch of it is refused as root's
spawn_as() {
	local u=$1 uid i
	shift
	uid=$(id -u "$u")
	setpriv --reuid="$u" --regid=nogroup --clear-groups "$@" &
	spawned=$!
	bg_pids+=("$spawned")
	for ((i = 0; i < 500; i++)); do
		if [ "$(cat "/proc/$spawned/comm" 2>/dev/null)" != setpriv ] &&
			awk -v u="$uid" '/^Uid:/ { found = $2 == u } END { exit !found }' "/proc/$spawned/status" 2>/dev/null; then
			return 0
		fi
		sleep 0.01
	done
	fail "spawn_as $u $1: not running as $u after 5 s"
}

# expect_rc RC DESCRIPTION -- COMMAND...: runs it, output in $out
expect_rc() {
	local want=$1 what=$2 rc
	shift 3
	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = "$want" ]; then ok "$what (exit $rc)"; else fail "$what: exit $rc, want $want; output: $out"; fi
}

# expect_match REGEX DESCRIPTION: on the last $out
expect_match() {
	if grep -qE -- "$1" <<<"$out"; then ok "$2"; else fail "$2: no /$1/ in: $out"; fi
}

# start_daemon [FLAGS...]: starts hostprofd and waits until it answers
start_daemon() {
	# no metrics file but where a test asks for one (node_exporter's directory may exist here)
	"$HOSTPROFD" --config /dev/null --socket "$sock" --metrics-dir none "$@" >"$tmp/daemon.log" 2>&1 &
	daemon_pid=$!
	for _ in $(seq 100); do
		# this daemon's answer, not one left running on the same socket
		"$HOSTPROFCTL" --socket "$sock" status --json 2>/dev/null | grep -q "\"pid\": *$daemon_pid[,}]" && return 0
		kill -0 "$daemon_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "hostprofd did not start:" >&2
	cat "$tmp/daemon.log" >&2
	exit 1
}

stop_daemon() {
	local rc=0
	[ -n "$daemon_pid" ] || return 0
	kill -TERM "$daemon_pid"
	wait "$daemon_pid" || rc=$?
	daemon_pid=
	return $rc
}

# Our BPF programs that are loaded now (bpftool shows names up to 15 characters).
our_progs() {
	bpftool prog show 2>/dev/null | grep -cE ' name (tp_btf|raw_tp)_(sched_|task_ren)' || true
}

# wait_progs N: until N of our programs are loaded (the kernel frees them after the
# last fd closes, asynchronously), at most 3 s
wait_progs() {
	for _ in $(seq 30); do [ "$(our_progs)" = "$1" ] && return 0; sleep 0.1; done
	return 1
}

# run_stall ARGS...: starts the stall workload in the background, sets trainer/acl/hog
run_stall() {
	"$STALL" "$@" >"$tmp/stall.out" 2>"$tmp/stall.err" &
	stall_pid=$!
	bg_pids+=("$stall_pid")
	for _ in $(seq 100); do
		grep -q '^stall: trainer=' "$tmp/stall.out" && break
		if ! kill -0 "$stall_pid" 2>/dev/null; then
			wait "$stall_pid" && rc=0 || rc=$?
			[ $rc = 77 ] && skip "$(cat "$tmp/stall.err")"
			fail "stall workload exited $rc: $(cat "$tmp/stall.err")"
			finish
		fi
		sleep 0.05
	done
	read -r trainer acl hog < <(sed -n 's/^stall: trainer=\([0-9]*\) acl_thread=\([0-9]*\) hog=\([0-9]*\).*/\1 \2 \3/p' "$tmp/stall.out")
}

# decode_perfetto FILE: the trace as protoc text, against the public field numbers
decode_perfetto() {
	protoc --proto_path="$SRCDIR/tests/unit" --decode=perfetto.protos.Trace perfetto_subset.proto <"$1"
}

# perfetto_sched FILE: its sched_switch and sched_waking events, one a line, the compact_sched
# ones as a reader completes them (tests/e2e/perfetto-sched.c says the columns)
perfetto_sched() {
	"$PERFETTO_SCHED" "$SRCDIR/tests/unit" "$1"
}
