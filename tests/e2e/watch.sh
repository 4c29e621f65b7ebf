#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# watch/unwatch at run time, by pid and by thread name, with the permissions of SPEC §7;
# a process that exited is still there; a reused pid is a new process; counts are true.
. "$(dirname "$0")/lib.sh"
require_root
grp=hostprof-w-$$
groupadd --system "$grp" || skip "cannot create a group"
trap 'groupdel "$grp" 2>/dev/null; cleanup' EXIT
chmod 755 "$tmp"
as_user() { setpriv --reuid=nobody --regid=nogroup --groups="$grp" "$@"; }

start_daemon --socket-group "$grp" --watch-thread none --trigger none --snapshot-dir "$tmp/snaps"
sleep 60 & target=$!; bg_pids+=("$target")
spawn_as nobody sleep 60; mine=$spawned
sleep 0.2

expect_rc 0 "watch --pid" -- ctl watch --pid "$target"
expect_match "watching pid $target \(sleep\)" "acknowledged"
expect_rc 0 "status lists it" -- ctl status --json
[ "$(jq ".processes[] | select(.pid == $target) | .why" <<<"$out")" = '"pid"' ] && ok "watched for its pid" || fail "$out"
expect_rc 1 "watch a pid that does not exist" -- ctl watch --pid 99999999
expect_rc 4 "nobody watches root's process" -- as_user "$HOSTPROFCTL" --socket "$sock" watch --pid "$target"
expect_rc 0 "nobody watches its own" -- as_user "$HOSTPROFCTL" --socket "$sock" watch --pid "$mine"
expect_rc 4 "nobody adds a thread pattern" -- as_user "$HOSTPROFCTL" --socket "$sock" watch --thread 'x*'
expect_match "only root may change thread patterns" "says why"
expect_rc 4 "nobody unwatches root's process" -- as_user "$HOSTPROFCTL" --socket "$sock" unwatch --pid "$target"
expect_rc 1 "fetch of a snapshot that does not exist" -- as_user "$HOSTPROFCTL" --socket "$sock" fetch 20260101T000000Z-1-x
expect_rc 1 "fetch of a name that is not a snapshot" -- ctl fetch ../../etc/passwd
expect_match "no automatic snapshot" "refused by name"

# thread patterns at run time: a process renames a thread afterwards
expect_rc 0 "watch --thread" -- ctl watch --thread 'late_*'
"$STALL" --mode sleep --duration 2 --start-delay-ms 300 >"$tmp/late.out" 2>&1 &
late=$!; bg_pids+=("$late")
sleep 0.1
expect_rc 0 "status" -- ctl status --json
[ "$(jq -c .watch_threads <<<"$out")" = '["late_*"]' ] && ok "the pattern is listed" || fail "$(jq -c .watch_threads <<<"$out")"
expect_rc 0 "unwatch --thread" -- ctl unwatch --thread 'late_*'
expect_rc 1 "unwatch a pattern that is not there" -- ctl unwatch --thread 'late_*'
wait "$late"

# counts: 40 sleeps of 5 ms in a watched process are 40 switch-outs in S (within 5%)
mkfifo "$tmp/go"
"$SLEEPER" 40 5 <"$tmp/go" >"$tmp/sleeper.pid" &
counter=$!; bg_pids+=("$counter")
exec 7>"$tmp/go"
for _ in $(seq 50); do [ -s "$tmp/sleeper.pid" ] && break; sleep 0.05; done
expect_rc 0 "watch the counting process" -- ctl watch --pid "$counter"
echo go >&7
exec 7>&-
wait "$counter"
sleep 0.3
expect_rc 0 "snapshot of the exited process" -- ctl snapshot --pid "$counter" -o "$tmp/count.pftrace"
n=$(perfetto_sched "$tmp/count.pftrace" | awk -v p="$counter" '$1 == "switch" && $4 == p && $6 == 1 { n++ } END { print n + 0 }')
[ "$n" -ge 38 ] && [ "$n" -le 42 ] && ok "40 sleeps seen as $n switch-outs in S" || fail "$n switch-outs in S, want 40 within 5%"

# unwatch keeps the history
expect_rc 0 "unwatch --pid" -- ctl unwatch --pid "$target"
expect_rc 0 "status after unwatch" -- ctl status --json
[ "$(jq ".processes[] | select(.pid == $target) | .why" <<<"$out")" = '"unwatched"' ] && ok "listed as unwatched" || fail "$out"
expect_rc 0 "its snapshot still works" -- ctl snapshot --pid "$target" -o "$tmp/t.pftrace"

# unwatched while it switches thousands of times a second: the records the kernel wrote of
# it before it stopped, drained after, are the unwatched process's; they do not watch it
# again (they did: a second entry, "thread name", and the hooks left on)
( while :; do echo x; done ) | cat >/dev/null &
busy=$!; bg_pids+=("$busy")
sleep 0.1
for round in 1 2 3; do
	expect_rc 0 "watch the busy reader ($round)" -- ctl watch --pid "$busy"
	sleep 0.3
	expect_rc 0 "unwatch it ($round)" -- ctl unwatch --pid "$busy"
	sleep 0.3
	expect_rc 0 "status" -- ctl status --json
	live=$(jq "[.processes[] | select(.pid == $busy and .why != \"unwatched\")] | length" <<<"$out")
	[ "$live" = 0 ] && ok "not watched again by its own records ($round)" || fail "$(jq -c ".processes[] | select(.pid == $busy)" <<<"$out")"
	[ "$(jq "[.processes[] | select(.pid == $busy and .exited)] | length" <<<"$out")" = 0 ] && ok "not shown as exited ($round)" ||
		fail "$(jq -c ".processes[] | select(.pid == $busy)" <<<"$out")"
done
kill "$busy" 2>/dev/null

# take_pid PID COMMAND...: runs COMMAND in the background as pid PID (ns_last_pid), sets
# $taken to its pid, or empty when the kernel handed out another one 3 times
take_pid() {
	local want=$1 p
	shift
	taken=
	for _ in 1 2 3; do
		echo $((want - 1)) >/proc/sys/kernel/ns_last_pid 2>/dev/null || return 0
		"$@" & p=$!
		if [ "$p" = "$want" ]; then taken=$p; bg_pids+=("$p"); return 0; fi
		kill "$p" 2>/dev/null
	done
}

# a pid reused at once (before the daemon's next look) is not recorded as its old holder:
# nobody's process exits, root's takes its pid and runs; nobody's history has none of it
cp "$SLEEPER" "$tmp/pidreuser"
mkdir "$tmp/nobody" && chown nobody "$tmp/nobody"
spawn_as nobody sleep 60; old=$spawned
sleep 0.2
expect_rc 0 "nobody watches its process" -- as_user "$HOSTPROFCTL" --socket "$sock" watch --pid "$old"
sleep 0.2
kill "$old"; wait "$old" 2>/dev/null
take_pid "$old" "$tmp/pidreuser" 100 2 <<<go >/dev/null
if [ -n "$taken" ]; then
	wait "$taken"
	sleep 1.3 # the daemon's next look
	expect_rc 0 "status" -- ctl status --json
	[ "$(jq -r "[.processes[] | select(.pid == $old)] | map(.comm) | join(\",\")" <<<"$out")" = sleep ] \
		&& ok "pid $old is its first holder only (sleep)" || fail "$(jq -c "[.processes[] | select(.pid == $old)]" <<<"$out")"
	expect_rc 0 "nobody's snapshot of its exited process" -- \
		as_user "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$old" -o "$tmp/nobody/old.pftrace"
	n=$(perfetto_sched "$tmp/nobody/old.pftrace" | awk -v p="$old" '$1 == "switch" && (($4 == p && $5 == "pidreuser") || ($8 == p && $9 == "pidreuser")) { n++ } END { print n + 0 }')
	[ "$n" = 0 ] && ok "none of the new holder's switches in it" || fail "$n switches of root's pidreuser (pid $old) in nobody's history"
	grep -q "pid $old (sleep) exited" "$tmp/daemon.log" && ok "the exit was seen in the drain" || fail "$(grep "pid $old" "$tmp/daemon.log")"
else
	echo "note: could not get pid $old again (ns_last_pid), quick reuse not checked"
fi

# a reused pid is a new process: ns_last_pid makes the kernel hand out the same pid again
sleep 60 & first=$!; bg_pids+=("$first")
expect_rc 0 "watch the first holder of a pid" -- ctl watch --pid "$first"
kill "$first"; wait "$first" 2>/dev/null
sleep 1.3 # the daemon notices the exit within a second
second=
for _ in 1 2 3; do
	echo $((first - 1)) >/proc/sys/kernel/ns_last_pid 2>/dev/null || break
	sleep 60 & p=$!
	if [ "$p" = "$first" ]; then second=$p; bg_pids+=("$p"); break; fi
	kill "$p"
done
if [ -n "$second" ]; then
	expect_rc 0 "watch the second holder of the same pid" -- ctl watch --pid "$second"
	expect_rc 0 "status" -- ctl status --json
	[ "$(jq "[.processes[] | select(.pid == $first)] | length" <<<"$out")" = 2 ] && ok "two processes with pid $first" \
		|| fail "$(jq -c "[.processes[] | select(.pid == $first)]" <<<"$out")"
	[ "$(jq "[.processes[] | select(.pid == $first and .exited)] | length" <<<"$out")" = 1 ] && ok "one of them exited" \
		|| fail "exited flags: $out"
else
	echo "note: could not get pid $first again (ns_last_pid), reuse not checked"
fi
finish
