#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# hostprofd --record: the one-shot capture for hosts without the service.
. "$(dirname "$0")/lib.sh"
require_root

base=$(our_progs)
expect_rc 2 "--record without --pid" -- "$HOSTPROFD" --config /dev/null --record --duration 1s -o "$tmp/x"
expect_match "needs one --pid, --duration and -o PREFIX" "says what it needs"
expect_rc 2 "--duration without --record" -- "$HOSTPROFD" --config /dev/null --duration 1s
# the workload outlives the recording however long the programs take to load here
run_stall --duration 30 --period-ms 300 --burst-ms 10 --cpu 1
start=$(date +%s%N)
expect_rc 0 "hostprofd --record --pid --duration 2s" -- "$HOSTPROFD" --config /dev/null --record --pid "$trainer" --duration 2s -o "$tmp/rec"
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$took" -ge 1900 ] && [ "$took" -lt 25000 ] && ok "it ran for its duration ($took ms)" || fail "took $took ms"
for f in rec.hps rec.pftrace rec.txt; do [ -s "$tmp/$f" ] && ok "wrote $f" || fail "no $f"; done
expect_match "^$tmp/rec.pftrace$" "prints the files it wrote"
head -1 "$tmp/rec.txt" | grep -qE "^acl_thread (lost [0-9.]+ ms of [0-9.]+ s|lost nothing)" && ok "the report has its verdict" ||
	fail "$(head -3 "$tmp/rec.txt")"
n=$(perfetto_sched "$tmp/rec.pftrace" | grep -c '^switch ')
[ "$n" -gt 10 ] && ok "the trace holds $n switches" || fail "$n switches"
wait_progs "$base" && ok "nothing left attached" || fail "programs left: $(our_progs), $base before"

# it stops early when the process exits: the process ends once the recording has begun
kill "$stall_pid" 2>/dev/null; wait "$stall_pid" 2>/dev/null || true
sleep 600 & short=$!
bg_pids+=("$short")
"$HOSTPROFD" --config /dev/null --record --pid "$short" --duration 60s -o "$tmp/short" --format hps >"$tmp/short.log" 2>&1 &
rec=$!
for _ in $(seq 600); do grep -q "recording pid $short" "$tmp/short.log" && break; kill -0 "$rec" 2>/dev/null || break; sleep 0.05; done
grep -q "recording pid $short" "$tmp/short.log" && ok "--record of a process that exits first: recording" || fail "no recording: $(cat "$tmp/short.log")"
start=$(date +%s%N)
kill "$short"
wait "$rec" && rc=0 || rc=$?
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$rc" = 0 ] && ok "--record of a process that exits first (exit 0)" || fail "exit $rc: $(cat "$tmp/short.log")"
[ "$took" -lt 10000 ] && ok "it stopped when the process exited ($took ms after)" || fail "took $took ms after the exit"
[ -s "$tmp/short.hps" ] && ok "and wrote its history" || fail "no short.hps"
finish
