#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# hostprofd --record: the one-shot capture for hosts without the service.
. "$(dirname "$0")/lib.sh"
require_root

base=$(our_progs)
expect_rc 2 "--record without --pid" -- "$HOSTPROFD" --config /dev/null --record --duration 1s -o "$tmp/x"
expect_match "needs one --pid, --duration and -o PREFIX" "says what it needs"
expect_rc 2 "--duration without --record" -- "$HOSTPROFD" --config /dev/null --duration 1s
run_stall --duration 4 --period-ms 300 --burst-ms 10 --cpu 1
start=$(date +%s%N)
expect_rc 0 "hostprofd --record --pid --duration 2s" -- "$HOSTPROFD" --config /dev/null --record --pid "$trainer" --duration 2s -o "$tmp/rec"
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$took" -ge 1900 ] && [ "$took" -lt 6000 ] && ok "it ran for its duration ($took ms)" || fail "took $took ms"
for f in rec.hps rec.pftrace rec.txt; do [ -s "$tmp/$f" ] && ok "wrote $f" || fail "no $f"; done
expect_match "^$tmp/rec.pftrace$" "prints the files it wrote"
grep -q "^worst stall:" "$tmp/rec.txt" && ok "the report has its verdict" || fail "$(head -3 "$tmp/rec.txt")"
n=$(perfetto_sched "$tmp/rec.pftrace" | grep -c '^switch ')
[ "$n" -gt 10 ] && ok "the trace holds $n switches" || fail "$n switches"
wait_progs "$base" && ok "nothing left attached" || fail "programs left: $(our_progs), $base before"

# it stops early when the process exits
sleep 1.5 & short=$!  # long enough for the programs to load on a busy machine
start=$(date +%s%N)
expect_rc 0 "--record of a process that exits first" -- "$HOSTPROFD" --config /dev/null --record --pid "$short" --duration 30s -o "$tmp/short" --format hps
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$took" -lt 5000 ] && ok "it stopped when the process exited ($took ms)" || fail "took $took ms"
[ -s "$tmp/short.hps" ] && ok "and wrote its history" || fail "no short.hps"
wait "$stall_pid"
finish
