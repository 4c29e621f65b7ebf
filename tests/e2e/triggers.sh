#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Triggers and automatic snapshots (SPEC §6), each kind on a workload made for it.
. "$(dirname "$0")/lib.sh"
require_root
command -v unshare >/dev/null || skip "no unshare"
snaps=$tmp/snaps
# The stall workload in a session of its own at nice -20, its autogroup too (with
# autogroups, nice counts only within a session): on a machine busy with other work
# (other tests, a build) its CFS tasks then take little of acl_thread's CPU, and what each
# case plants (the hog's bursts, the blocks, the sleeps) is what acl_thread loses most to
# and what the triggers see. The hog is SCHED_FIFO: nice does not change its bursts.
cat >"$tmp/stall-high" <<EOS
#!/bin/sh
exec setsid sh -c 'echo -20 >/proc/self/autogroup 2>/dev/null; exec nice -n -20 "\$0" "\$@"' "$STALL" "\$@"
EOS
chmod +x "$tmp/stall-high"
STALL=$tmp/stall-high

# wait_snapshots N: until N automatic snapshots are listed (at most 20 s: snapshot jobs run
# at nice 19, SCHED_BATCH, and take long on a busy machine)
wait_snapshots() {
	for _ in $(seq 200); do
		[ "$(ctl snapshots --json | jq '.snapshots | length')" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- acl_preempt, the default, in a private mount namespace with a journal socket of our own
cat >"$tmp/ns.sh" <<NS
set -e
mount -t tmpfs tmpfs /run/systemd/journal 2>/dev/null || { mkdir -p /run/systemd/journal && mount -t tmpfs tmpfs /run/systemd/journal; }
"$JOURNAL_LISTEN" /run/systemd/journal/socket 9 >"$tmp/journal.out" &
for i in \$(seq 50); do grep -q listening "$tmp/journal.out" && break; sleep 0.05; done
"$HOSTPROFD" --config /dev/null --socket "$sock" --metrics-dir none --snapshot-dir "$snaps" >"$tmp/daemon.log" 2>&1 &
echo \$! >"$tmp/daemon.pid"
wait
NS
mkdir -p /run/systemd 2>/dev/null
unshare -m --propagation private bash "$tmp/ns.sh" &
ns_pid=$!; bg_pids+=("$ns_pid")
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
daemon_pid=$(cat "$tmp/daemon.pid")
# bursts of 100 ms in every 200: the hog costs acl_thread more than a busy machine's other
# work does, so that the report's first line names it (totals rank)
run_stall --duration 3 --period-ms 200 --burst-ms 100 --cpu 1
wait "$stall_pid"
wait_snapshots 1 || fail "no automatic snapshot after a 100 ms preemption"
sleep 1.5
expect_rc 0 "snapshots" -- ctl snapshots --json
[ "$(jq '.snapshots | length' <<<"$out")" = 1 ] && ok "exactly one automatic snapshot per cooldown" || fail "$(jq -c '[.snapshots[].name]' <<<"$out")"
name=$(jq -r '.snapshots[0].name' <<<"$out")
[[ "$name" =~ ^[0-9]{8}T[0-9]{6}Z-$trainer-acl_preempt$ ]] && ok "named <UTC>-<pid>-<trigger>: $name" || fail "name $name"
for ext in hps pftrace txt; do
	[ -s "$snaps/$name.$ext" ] && [ "$(stat -c %a "$snaps/$name.$ext")" = 600 ] && ok "$ext written, 0600" || fail "$snaps/$name.$ext"
done
ls "$snaps" | grep -q tmp && fail "temporary files left in $snaps"
head -1 "$snaps/$name.txt" | grep -q "realtime task hog (pid $hog" && ok "its report names the neighbour" || fail "report: $(head -1 "$snaps/$name.txt")"
decode_perfetto "$snaps/$name.pftrace" | grep -q 'acl_preempt' && ok "the trigger point is marked in the trace" || fail "no marker in the trace"
n=$(perfetto_sched "$snaps/$name.pftrace" | awk '$1 == "switch" && $5 == "acl_thread" && $9 == "hog" { n++ } END { print n + 0 }')
[ "$n" -ge 1 ] && ok "its trace holds the preemption ($n)" || fail "no acl_thread -> hog switch in the trace"
expect_rc 0 "snapshots (text)" -- ctl snapshots
expect_match "$name +20[0-9-]+T[0-9:.]+Z +$trainer +acl_preempt .*realtime task hog" "listed with its time and reason"
cd "$tmp" || exit 1
expect_rc 0 "fetch NAME" -- ctl fetch "$name" -o "$tmp/fetched"
[ -s "$tmp/fetched.hps" ] && cmp -s "$tmp/fetched.hps" "$snaps/$name.hps" && ok "fetch gives the same .hps" || fail "fetched.hps differs"
sleep 1
grep -q "MESSAGE_ID=c3a1f0e27d4b4b8e9a52d6f1e0b7a913" "$tmp/journal.out" && ok "journal entry with the MESSAGE_ID" || fail "journal: $(cat "$tmp/journal.out")"
for field in "HOSTPROF_PID=$trainer" "HOSTPROF_TRIGGER=acl_preempt" "HOSTPROF_FILE=$snaps/$name.hps" "HOSTPROF_CULPRIT_COMM=" "PRIORITY=4" "HOSTPROF_TIME=20" "HOSTPROF_REALTIME_NS=1"; do
	grep -q "^$field" "$tmp/journal.out" && ok "journal field $field" || fail "no $field in the journal entry"
done
# the journal entry carries the report's verdict, its first line
grep -qxF "HOSTPROF_SUMMARY=$(head -1 "$snaps/$name.txt")" "$tmp/journal.out" && ok "the journal's summary is the report's first line" ||
	fail "journal summary: $(grep HOSTPROF_SUMMARY "$tmp/journal.out"), report: $(head -1 "$snaps/$name.txt")"
kill "$daemon_pid"; wait "$ns_pid" 2>/dev/null; daemon_pid=

# --- each other kind fires on its workload and stays silent under its threshold
kind_case() { # NAME TRIGGER STALL-ARGS... ; sets fired
	local name=$1 trig=$2
	shift 2
	rm -rf "$snaps"
	start_daemon --snapshot-dir "$snaps" --trigger "$trig" --sample-hz 0
	run_stall "$@"
	wait "$stall_pid"
	sleep 1.5
	fired=$(ctl snapshots --json | jq '.snapshots | length')
	stop_daemon
}
kind_case offcpu "blk:offcpu:acl_thread:20ms" --mode block --block-ms 50 --duration 1.5
[ "$fired" -ge 1 ] && ok "offcpu fires on a 50 ms block" || fail "offcpu: $fired"
kind_case offcpu-quiet "blk:offcpu:acl_thread:200ms" --mode block --block-ms 50 --duration 1.5
[ "$fired" = 0 ] && ok "offcpu stays silent under its threshold" || fail "offcpu quiet: $fired"
kind_case syscall "rd:syscall:acl_thread:20ms" --mode block --block-ms 50 --duration 1.5
[ "$fired" -ge 1 ] && ok "syscall fires on a 50 ms read" || fail "syscall: $fired"
kind_case syscall-quiet "rd:syscall:acl_thread:200ms" --mode block --block-ms 50 --duration 1.5
[ "$fired" = 0 ] && ok "syscall stays silent under its threshold" || fail "syscall quiet: $fired"
kind_case runq "rq:runq:acl_thread:5ms" --mode sleep --duration 2 --period-ms 300 --burst-ms 25
[ "$fired" -ge 1 ] && ok "runq fires when a burst delays the wakeups" || fail "runq: $fired"
kind_case runq-quiet "rq:runq:acl_thread:100ms" --mode sleep --duration 2 --period-ms 300 --burst-ms 25
[ "$fired" = 0 ] && ok "runq stays silent under its threshold" || fail "runq quiet: $fired"
kind_case migrate "mv:migrate:acl_thread:5" --mode migrate --duration 2
[ "$fired" -ge 1 ] && ok "migrate fires on a thread moving every 20 ms" || fail "migrate: $fired"
kind_case migrate-quiet "mv:migrate:acl_thread:500" --mode migrate --duration 2
[ "$fired" = 0 ] && ok "migrate stays silent under its threshold" || fail "migrate quiet: $fired"

# --- retention: a cooldown of 1 s makes several; max 2 are kept, the oldest go
rm -rf "$snaps"
printf '[trigger p]\nkind = preempt\nthreads = acl_thread\nthreshold = 5ms\ncooldown = 1s\nafter = 200ms\n' >"$tmp/ret.conf"
"$HOSTPROFD" --config "$tmp/ret.conf" --socket "$sock" --metrics-dir none --snapshot-dir "$snaps" --max-snapshots 2 >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
run_stall --duration 5 --period-ms 600 --burst-ms 25 --cpu 1
wait "$stall_pid"
for _ in $(seq 150); do grep -q "pruned automatic snapshot" "$tmp/daemon.log" && break; sleep 0.1; done
sleep 1
[ "$(ls "$snaps"/*.hps | wc -l)" = 2 ] && ok "2 snapshots kept" || fail "kept: $(ls "$snaps")"
grep -q "pruned automatic snapshot" "$tmp/daemon.log" && ok "the oldest were pruned" || fail "nothing pruned"
stop_daemon

# --- a full snapshot dir: logged, no partial file, capture goes on
mkdir -p "$tmp/full"
mount -t tmpfs -o size=16k tmpfs "$tmp/full" || skip "cannot mount a tmpfs"
trap 'umount "$tmp/full" 2>/dev/null; cleanup' EXIT
start_daemon --snapshot-dir "$tmp/full/snaps"
run_stall --duration 2 --period-ms 500 --burst-ms 25 --cpu 1
wait "$stall_pid"
sleep 1.5
grep -q "failed to write the snapshot.*capture goes on" "$tmp/daemon.log" && ok "the full disk is logged" || fail "log: $(cat "$tmp/daemon.log")"
[ -z "$(ls -A "$tmp/full/snaps" 2>/dev/null)" ] && ok "no partial file left" || fail "left: $(ls -la "$tmp/full/snaps")"
expect_rc 0 "capture goes on: a snapshot on request" -- ctl snapshot --pid "$trainer" -o "$tmp/after-full.pftrace"
stop_daemon
umount "$tmp/full"
finish
