#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# syscalls.sh MODE: what each `syscalls` mode (exact, blocking) promises, as a user sees it.
#  - a library dlopen'ed after the watch began resolves after the process has exited:
#    exact sees the mmap syscall, blocking the mapping change at the process's mmap_lock;
#  - syscalls that never sleep: exact counts them; blocking says in every snapshot's
#    header and report that they are not covered, never that they are absent or fast;
#  - SIGHUP switches the mode: the hooks follow, snapshots say since when.
. "$(dirname "$0")/lib.sh"
require_root
mode=${1:?exact or blocking}
[ -x "${DLCHILD:-}" ] && [ -r "${DLLIB:-}" ] || skip "DLCHILD and DLLIB are not set (meson sets them)"

# start_child ARGS...: dlchild waiting on a fifo; sets child, child_pid
start_child() {
	rm -f "$tmp/go"
	mkfifo "$tmp/go"
	"$DLCHILD" "$@" <"$tmp/go" >"$tmp/child.out" 2>&1 &
	child=$!
	bg_pids+=("$child")
	exec 3>"$tmp/go"
	for _ in $(seq 50); do grep -q '^pid ' "$tmp/child.out" && break; sleep 0.05; done
	child_pid=$(sed -n 's/^pid //p' "$tmp/child.out")
	[ "$child_pid" = "$child" ] || { fail "dlchild did not start: $(cat "$tmp/child.out")"; finish; }
}

# go_child: let it run, wait for it to exit
go_child() {
	echo go >&3
	exec 3>&-
	wait "$child" || fail "dlchild $*: exit $?: $(cat "$tmp/child.out")"
}

# decode_hps FILE: the snapshot as protoc text
decode_hps() {
	tail -c +9 "$1" | protoc --proto_path="$SRCDIR/proto" --decode=hostprof.Snapshot snapshot.proto
}

# no acl_thread of another test is ever watched here: no pattern
start_daemon --syscalls "$mode" --watch-thread none --trigger none --sample-hz 0
grep -q 'Failed to attach' "$tmp/daemon.log" && fail "attach: $(cat "$tmp/daemon.log")"

# the tracepoints this daemon has programs on now (its links, from its fds)
daemon_tps() {
	local ids
	ids=$(grep -h '^link_id:' /proc/"$daemon_pid"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un | paste -sd, -)
	bpftool link list --json | jq -r --arg ids "$ids" \
		'($ids | split(",") | map(select(. != "") | tonumber)) as $m | [.[] | select(.id as $i | $m | index($i)) | .tp_name // empty] | sort | join(" ")'
}
tps=$(daemon_tps)
grep -qw sched_switch <<<"$tps" && fail "sched_switch attached with nothing watched: $tps" ||
	ok "nothing on the switch path while nothing is watched ($tps)"

# --- a library dlopen'ed after the watch began
start_child dlopen "$DLLIB" 1500
expect_rc 0 "watch the child" -- ctl watch --pid "$child_pid"
sleep 1.2 # its mappings are read at the daemon's next tick: without the library
go_child dlopen
grep -q '^called 0' "$tmp/child.out" || fail "the library call: $(cat "$tmp/child.out")"
expect_rc 0 "snapshot of the exited child" -- ctl snapshot --pid "$child_pid" --format folded,hps -o "$tmp/dl"
if grep -q 'hpdl_blocking_call' "$tmp/dl.offcpu.folded"; then
	ok "$mode: a library dlopen'ed after the watch resolves after the exit"
else
	fail "$mode: no hpdl_blocking_call in the off-CPU stacks: $(cat "$tmp/dl.offcpu.folded")"
fi
hdr=$(decode_hps "$tmp/dl.hps") || fail "protoc cannot decode the snapshot"
if [ "$mode" = blocking ]; then
	grep -q '^syscall_mode: SYSCALLS_BLOCKING' <<<"$hdr" && ok "the header says syscalls = blocking" ||
		fail "header: $(grep -E '^(syscall_mode|not_covered)' <<<"$hdr")"
	grep -q '^not_covered: "syscalls that never sleep' <<<"$hdr" && ok "and what it does not cover" ||
		fail "no not_covered in the header"
	# the blocked nanosleep: seen at the switch-out, its time blocked, no return value
	awk '/^syscalls \{/ { in_t = 1 } in_t && /^\}/ { in_t = 0 } in_t && /flags: 3/ { n++ } END { exit !n }' <<<"$hdr" &&
		ok "the blocked call is marked blocked, ret unknown" || fail "no blocked syscall row: $(grep -A14 '^syscalls {' <<<"$hdr")"
else
	grep -q '^syscall_mode: SYSCALLS_EXACT' <<<"$hdr" && ok "the header says syscalls = exact" ||
		fail "header: $(grep -E '^syscall_mode' <<<"$hdr")"
	grep -q '^not_covered:' <<<"$hdr" && fail "exact mode claims something is not covered"
fi

# --- syscalls that never sleep
start_child busy 400
expect_rc 0 "watch the busy child" -- ctl watch --pid "$child_pid"
sleep 0.3
tps=$(daemon_tps)
grep -qw sched_switch <<<"$tps" && ok "sched hooks attached while it is watched" || fail "attached: $tps"
if [ "$mode" = blocking ]; then
	grep -qwE 'sys_enter|sys_exit' <<<"$tps" && fail "blocking attaches syscall hooks: $tps" ||
		ok "blocking: no sys_enter/sys_exit ($tps)"
else
	grep -qw sys_enter <<<"$tps" && grep -qw sys_exit <<<"$tps" && ok "exact: sys_enter and sys_exit attached" ||
		fail "exact: $tps"
fi
go_child busy
reads=$(sed -n 's/^reads //p' "$tmp/child.out")
expect_rc 0 "snapshot of it" -- ctl snapshot --pid "$child_pid" --format report,report-json,hps -o "$tmp/busy"
if [ "$mode" = blocking ]; then
	grep -q 'syscall totals    not covered (syscalls = blocking)' "$tmp/busy.txt" &&
		ok "the report says the totals are not covered" || fail "report: $(grep -A3 syscall "$tmp/busy.txt")"
	grep -q 'calls that never sleep, totals and return values not covered' "$tmp/busy.txt" &&
		ok "and that calls that never sleep are not" || fail "report: $(grep -A3 syscall "$tmp/busy.txt")"
	n=$(jq '[.. | objects | select(has("totals_covered")) | select(.totals_covered == false and .non_sleeping_covered == false)] | length' "$tmp/busy.report.json")
	[ "$n" -ge 1 ] && ok "report-json: totals_covered and non_sleeping_covered false" || fail "report-json: $n"
	n=$(jq '[.. | objects | select(has("totals")) | .totals[]] | length' "$tmp/busy.report.json")
	[ "$n" = 0 ] && ok "no totals shown, not even zero" || fail "$n totals in blocking mode"
	# none of the reads blocked: none is shown, and none as fast
	decode_hps "$tmp/busy.hps" | grep -A2 'syscall_hist {' | grep -q . && fail "syscall histograms in blocking mode"
else
	n=$(jq '[.. | objects | select(has("totals")) | .totals[] | select(.name == "read") | .count] | max // 0' "$tmp/busy.report.json")
	[ "$n" -ge "$reads" ] && ok "exact: $n reads counted for the $reads it made" || fail "exact: $n reads counted, $reads made"
fi

stop_daemon || fail "hostprofd exit $?"

# --- SIGHUP switches the mode: the hooks follow, and snapshots say since when
other=exact
[ "$mode" = exact ] && other=blocking
printf 'syscalls = %s\nwatch_threads = none\n' "$mode" >"$tmp/conf"
"$HOSTPROFD" --config "$tmp/conf" --socket "$sock" --trigger none --sample-hz 0 >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
sleep 30 &
sleeper=$!
bg_pids+=("$sleeper")
expect_rc 0 "watch a sleeper" -- ctl watch --pid "$sleeper"
has_sys() { grep -qw sys_enter <<<"$(daemon_tps)"; }
for _ in $(seq 20); do [ "$mode" = exact ] && has_sys && break; [ "$mode" = blocking ] && ! has_sys && break; sleep 0.1; done
printf 'syscalls = %s\nwatch_threads = none\n' "$other" >"$tmp/conf"
kill -HUP "$daemon_pid"
for _ in $(seq 50); do grep -q reloaded "$tmp/daemon.log" && break; sleep 0.1; done
sleep 0.3
if [ "$other" = exact ]; then
	has_sys && ok "SIGHUP to exact attaches sys_enter/sys_exit" || fail "after SIGHUP to exact: $(daemon_tps)"
else
	has_sys && fail "after SIGHUP to blocking: $(daemon_tps)" || ok "SIGHUP to blocking detaches sys_enter/sys_exit"
fi
expect_rc 0 "snapshot after the switch" -- ctl snapshot --pid "$sleeper" --format hps -o "$tmp/re.hps"
hdr=$(decode_hps "$tmp/re.hps")
want=SYSCALLS_EXACT
[ "$other" = blocking ] && want=SYSCALLS_BLOCKING
grep -q "^syscall_mode: $want" <<<"$hdr" && grep -qE '^syscall_mode_since_ns: [1-9]' <<<"$hdr" &&
	ok "the snapshot says $other, and since when" || fail "header: $(grep -E '^syscall_mode' <<<"$hdr")"
stop_daemon || fail "hostprofd exit $?"
finish
