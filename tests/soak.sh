#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/dev soak MINUTES: hostprofd under the worst load for a long time, as on a node.
# The pinned pipe benchmark runs watched; a snapshot is taken every 3 s; clients connect,
# ask for status, hang up mid-stream and flood. Every 10 s it prints the daemon's RSS,
# recorder memory, events/s and drops; at the end, whether RSS stayed flat.
# Usage: tests/soak.sh BUILDDIR MINUTES
set -u
build=${1:?usage: soak.sh BUILDDIR MINUTES}
minutes=${2:-10}
[ "$(id -u)" = 0 ] || { echo "soak: run as root" >&2; exit 1; }
command -v perf >/dev/null || { echo "soak: needs perf (linux-perf)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/hostprof-soak.XXXXXX)
sock=$tmp/s.sock
ctl() { "$build/client/hostprofctl" --socket "$sock" "$@"; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

"$build/daemon/hostprofd" --config /dev/null --socket "$sock" --metrics-dir none --snapshot-dir "$tmp/snaps" \
	--trigger none --watch-thread none >"$tmp/daemon.log" 2>&1 &
daemon=$!; pids+=("$daemon")
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
taskset -c 1 perf bench sched pipe -T -l 1000000000 >/dev/null 2>&1 &
load=$!; pids+=("$load")
sleep 0.3
ctl watch --pid "$load" >/dev/null

end=$((SECONDS + minutes * 60))
errors=0 snaps=0 first_rss= last_rss= max_rss=0
next_report=$SECONDS
echo "soak: $minutes min, pipe benchmark pid $load watched; every 10 s: elapsed, RSS, recorder, events/s, drops"
while [ $SECONDS -lt $end ]; do
	ctl snapshot --pid "$load" --window 5s --format hps -o "$tmp/s.hps" >/dev/null 2>&1 && snaps=$((snaps + 1)) \
		|| errors=$((errors + 1))
	for _ in 1 2 3; do ctl status >/dev/null 2>&1 || errors=$((errors + 1)); done
	"$build/tests/rawclient" "$sock" midstream "$load" >/dev/null 2>&1 || errors=$((errors + 1))
	"$build/tests/rawclient" "$sock" garbage >/dev/null 2>&1 || errors=$((errors + 1))
	if [ $SECONDS -ge $next_report ]; then
		st=$(ctl status --json) || { errors=$((errors + 1)); continue; }
		rss=$(jq .rss_bytes <<<"$st")
		[ -z "$first_rss" ] && [ $SECONDS -gt 20 ] && first_rss=$rss
		last_rss=$rss
		[ "$rss" -gt "$max_rss" ] && max_rss=$rss
		printf 'soak: %5ds  rss %6d KiB  recorder %6d KiB  %8.0f events/s  drops %s\n' "$SECONDS" $((rss >> 10)) \
			$(($(jq .memory_bytes <<<"$st") >> 10)) "$(jq .events_per_sec <<<"$st")" "$(jq -c .drops <<<"$st")"
		next_report=$((SECONDS + 10))
	fi
	sleep 3
done
kill -0 "$daemon" || { echo "soak: FAIL: the daemon died"; exit 1; }
growth=$(( ${last_rss:-0} - ${first_rss:-${last_rss:-0}} ))
echo "soak: $snaps snapshots, $errors errors; RSS after warm-up $(( ${first_rss:-0} >> 10 )) KiB, at the end $(( ${last_rss:-0} >> 10 )) KiB, max $((max_rss >> 10)) KiB"
if [ "$errors" -gt 0 ] || [ "$growth" -gt $((8 << 20)) ]; then
	echo "soak: FAIL (errors, or RSS grew more than 8 MiB after warm-up)"
	exit 1
fi
echo "soak: ok, RSS flat"
