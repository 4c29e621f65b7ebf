#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# e2e-at: a snapshot of the same wall-clock instant on every node, and by rank.
#  - two daemons on this machine, standing for two nodes (own sockets, own watched
#    processes), each asked `snapshot --at T --window 2s`: each window is T +- 1 s on
#    its own clock;
#  - `--rank R --job ID` names the process whose environment says so; an ambiguous rank,
#    an unknown one, a time outside the history or in the future: clear errors, no file.
. "$(dirname "$0")/lib.sh"
require_root
command -v jq >/dev/null || skip "no jq"

sock2=$tmp/node2.sock
# two "ranks" of one job, and a rank 0 of another job
env RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 SLURM_JOB_ID=777 perl -e 'while (1) { select(undef, undef, undef, 0.002) }' &
r0=$!
env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 SLURM_JOB_ID=777 perl -e 'while (1) { select(undef, undef, undef, 0.002) }' &
r1=$!
env RANK=0 TORCHELASTIC_RUN_ID=other perl -e 'while (1) { select(undef, undef, undef, 0.002) }' &
o0=$!
bg_pids+=("$r0" "$r1" "$o0")
start_daemon --watch-thread "nomatch$$" --pid "$r0" --pid "$o0"
d1=$daemon_pid
"$HOSTPROFD" --config /dev/null --socket "$sock2" --metrics-dir none --watch-thread "nomatch$$" --pid "$r1" >"$tmp/daemon2.log" 2>&1 &
d2=$!
bg_pids+=("$d2")
for _ in $(seq 100); do "$HOSTPROFCTL" --socket "$sock2" status >/dev/null 2>&1 && break; sleep 0.1; done
ctl2() { "$HOSTPROFCTL" --socket "$sock2" "$@"; }
sleep 4 # history on both, and the labels read (once a second, on the worker)

expect_rc 0 "status shows the ranks" -- ctl status --json
[ "$(jq -r --arg p "$r0" '.processes[] | select(.pid == ($p | tonumber)) | "\(.rank) \(.local_rank) \(.world_size) \(.job)"' <<<"$out")" = "0 0 2 777" ] \
	&& ok "rank 0 of job 777, local rank 0 of 2" || fail "labels: $out"
expect_rc 0 "snapshot --rank 0 --job 777" -- ctl snapshot --rank 0 --job 777 --format report-json -o "$tmp/r0.json"
[ "$(jq .process.pid "$tmp/r0.json")" = "$r0" ] && ok "it is pid $r0" || fail "snapshot of pid $(jq .process.pid "$tmp/r0.json")"
expect_rc 2 "rank 0 alone names two processes" -- ctl snapshot --rank 0 -o "$tmp/amb.json"
expect_match "rank 0 names 2 watched processes: .*add --job" "the error lists them and says what to add"
expect_rc 1 "an unknown rank" -- ctl snapshot --rank 5 -o "$tmp/none.json"
expect_match "no watched process you may see has RANK=5" "says none has it"
expect_rc 2 "--job without --rank" -- ctl snapshot --pid "$r0" --job 777 -o "$tmp/x.json"

# the same instant on both "nodes": 1.5 s ago, a 2 s window around it
t=$(date +%s.%N)
at=$(awk -v t="$t" 'BEGIN { printf "%.3f", t - 1.5 }')
up=$(awk '{ print $1 }' /proc/uptime)
expect_rc 0 "node 1: --at $at --window 2s" -- ctl snapshot --pid "$r0" --at "$at" --window 2s --format report-json -o "$tmp/n1.json"
expect_rc 0 "node 2: --rank 1 --at $at --window 2s" -- ctl2 snapshot --rank 1 --at "$at" --window 2s --format report-json -o "$tmp/n2.json"
for n in n1 n2; do
	s=$(jq .window.start_ns "$tmp/$n.json")
	e=$(jq .window.end_ns "$tmp/$n.json")
	# the instant on BOOTTIME: uptime then minus 1.5 s (uptime has 10 ms steps)
	awk -v s="$s" -v e="$e" -v up="$up" 'BEGIN { at = (up - 1.5) * 1e9; d = e - s;
		exit !(d > 1.9e9 && d < 2.1e9 && s < at && at < e && (at - s) > 0.8e9 && (e - at) > 0.8e9) }' \
		&& ok "$n: the window is the instant +- 1 s ($(( (e - s) / 1000000 )) ms)" \
		|| fail "$n: window $s..$e, the instant at ~$(awk -v up="$up" 'BEGIN { printf "%.0f", (up - 1.5) * 1e9 }')"
done
expect_rc 1 "--at outside the history" -- ctl snapshot --pid "$r0" --at 2020-01-01T00:00:00Z -o "$tmp/old.json"
expect_match "outside the history of pid $r0, which runs from 20[0-9-]+T[0-9:.]+Z to " "the error says what history there is"
expect_rc 2 "--at in the future" -- ctl snapshot --pid "$r0" --at "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" -o "$tmp/future.json"
expect_match "is in the future" "says so"
expect_rc 2 "--at without a zone" -- ctl snapshot --pid "$r0" --at 2026-01-01T00:00:00 -o "$tmp/nozone.json"
for f in amb none x old future nozone; do [ -e "$tmp/$f.json" ] && fail "a refused snapshot left $f.json"; done
kill "$d2" 2>/dev/null
finish
