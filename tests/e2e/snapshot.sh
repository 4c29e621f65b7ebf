#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A stall workload watched by thread name: the snapshot a user takes holds acl_thread's
# switches, the hog that preempted it, and the thread names, in a trace Perfetto reads.
. "$(dirname "$0")/lib.sh"
require_root

start_daemon
# 5 s: in a TCG guest the hooks attach seconds late, and the 1 s window below must still
# hold fewer switches than the whole history
run_stall --duration 5 --period-ms 250 --burst-ms 10 --cpu 1
wait "$stall_pid" || fail "stall workload failed"
bursts=$(sed -n 's/^stall: bursts=\([0-9]*\).*/\1/p' "$tmp/stall.out")

expect_rc 0 "status lists the trainer, watched for its thread name" -- ctl status
expect_match "^$trainer +trainer .*thread name" "status row of the trainer"

# the process has exited: its history is still there
cd "$tmp" || exit 1
expect_rc 0 "snapshot of the exited trainer" -- ctl snapshot --pid "$trainer"
expect_match "^hostprof-$trainer-[0-9]{8}T[0-9]{6}Z\.pftrace$" "default file name hostprof-<pid>-<UTC>.pftrace"
expect_match "acl_thread: [0-9]+ preemptions, .* waited" "a summary of acl_thread's preemptions"
default_file=$(grep -E '\.pftrace$' <<<"$out")
[ -s "$tmp/$default_file" ] || fail "no file $default_file"

expect_rc 0 "snapshot -o FILE" -- ctl snapshot --pid "$trainer" --format perfetto -o "$tmp/t.pftrace"
trace=$(decode_perfetto "$tmp/t.pftrace") || fail "protoc cannot decode the trace"
sched=$(perfetto_sched "$tmp/t.pftrace") || fail "the trace's scheduler events cannot be read back"
preempted=$(awk '$1 == "switch" && $5 == "acl_thread" && ($6 == 0 || $6 == 256) && $9 == "hog" { n++ } END { print n + 0 }' <<<"$sched")
# each burst preempts acl_thread unless something else held CPU 1 then (capture-preempt
# checks the rate against the workload's own clock)
[ "$preempted" -ge 1 ] && [ "$preempted" -le "$bursts" ] && ok "trace: $preempted switches acl_thread -> hog for $bursts bursts" \
	|| fail "trace: $preempted switches acl_thread -> hog, want 1..$bursts"
grep -q "name: \"acl_thread\"" <<<"$trace" && ok "process tree names acl_thread" || fail "no acl_thread thread in the process tree"
grep -q "release: \"$(uname -r)\"" <<<"$trace" && ok "system info carries the kernel release" || fail "no kernel release"
grep -q "primary_trace_clock: BUILTIN_CLOCK_BOOTTIME" <<<"$trace" && ok "BOOTTIME clock" || fail "no BOOTTIME clock snapshot"

# the lines the snapshot jobs looked up in DWARF (the stall workload is built with -g) came
# back to the daemon, kept for the jobs after them, none lost (no jq: this runs in the
# kernel guests too)
expect_rc 0 "status --json after the snapshots" -- ctl status --json
dlines=$(grep -oE '"dwarf_lines": ?[0-9]+' <<<"$out" | grep -oE '[0-9]+$')
ddropped=$(grep -oE '"dwarf_lines_dropped": ?[0-9]+' <<<"$out" | grep -oE '[0-9]+$')
[ "${dlines:-0}" -gt 0 ] && ok "the daemon keeps what the jobs looked up in DWARF ($dlines address ranges)" \
	|| fail "status .dwarf_lines: '$dlines'"
[ "$ddropped" = 0 ] && ok "none of it dropped" || fail "status .dwarf_lines_dropped: '$ddropped'"
expect_rc 0 "status" -- ctl status
expect_match "lines of ${dlines:-?} address ranges kept from snapshot jobs' DWARF lookups" "status says so"

expect_rc 0 "snapshot --format all -o PREFIX" -- ctl snapshot --pid "$trainer" --format all -o "$tmp/all"
[ -s "$tmp/all.pftrace" ] && [ -s "$tmp/all.hps" ] && ok "all formats written" || fail "missing $tmp/all.*"
[ "$(head -c 8 "$tmp/all.hps")" = HPSNAP01 ] && ok ".hps starts with its magic" || fail ".hps magic"
ls "$tmp"/*.tmp* >/dev/null 2>&1 && fail "temporary files left behind"

# --format hps alone is written as it came, its summary line read off the bytes (the
# snapshot decoded only when it names acl_thread, for that line): both lines as a decoded
# snapshot's, of the exited trainer (which has acl_thread) and of an exited process without
summary_of() { grep -E "^(pid [0-9]+: |acl_thread: )" <<<"$out"; }
# summaries PID NAME: the lines of --format hps into sum_hps, of --format report into sum_rep
summaries() {
	expect_rc 0 "snapshot --format hps of $2" -- ctl snapshot --pid "$1" --format hps -o "$tmp/$2.hps"
	sum_hps=$(summary_of)
	expect_rc 0 "snapshot --format report of $2" -- ctl snapshot --pid "$1" --format report -o "$tmp/$2.txt"
	sum_rep=$(summary_of)
}
summaries "$trainer" trainer
grep -q "^acl_thread: " <<<"$sum_hps" && [ "$sum_hps" = "$sum_rep" ] \
	&& ok "--format hps: the summary and acl_thread lines of the decoded snapshot" \
	|| fail "--format hps: '$sum_hps', decoded: '$sum_rep'"
sleep 0.5 & short=$!
expect_rc 0 "watch a short process" -- ctl watch --pid "$short"
wait "$short"
summaries "$short" short
grep -qE "^pid $short: [0-9]+ events over [0-9.]+ s, [1-9][0-9]* threads$" <<<"$sum_hps" && [ "$sum_hps" = "$sum_rep" ] \
	&& ok "--format hps, no acl_thread: the summary line of the decoded snapshot ($sum_hps)" \
	|| fail "--format hps, no acl_thread: '$sum_hps', decoded: '$sum_rep'"
expect_rc 0 "the .hps reads back" -- ctl export "$tmp/short.hps" --format report -o "$tmp/short2.txt"
cmp -s "$tmp/short.txt" "$tmp/short2.txt" && ok "and makes the report the daemon's snapshot made" || fail "s.hps: another report"

expect_rc 0 "snapshot --window 1s" -- ctl snapshot --pid "$trainer" --window 1s -o "$tmp/w.pftrace"
n_all=$(perfetto_sched "$tmp/t.pftrace" | grep -c '^switch ')
n_win=$(perfetto_sched "$tmp/w.pftrace" | grep -c '^switch ')
[ "$n_win" -lt "$n_all" ] && [ "$n_win" -gt 0 ] && ok "a 1 s window holds fewer switches ($n_win < $n_all)" \
	|| fail "window: $n_win of $n_all switches"

expect_rc 1 "snapshot of a pid that is not watched" -- ctl snapshot --pid 1
expect_match "pid 1 is not watched" "the error says why"
finish
