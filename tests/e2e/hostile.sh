#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Hostile input on the socket: each bad client is refused or closed, and the daemon keeps
# serving everyone else.
. "$(dirname "$0")/lib.sh"
require_root

run_stall --duration 6 --period-ms 300 --burst-ms 5 --cpu 1
target=$trainer
start_daemon --pid "$target"
for mode in garbage bigprefix truncated nohello badversion; do
	expect_rc 0 "$mode: refused or closed" -- "$RAWCLIENT" "$sock" "$mode"
done
expect_match "protocol mismatch" "badversion: the error names the mismatch"
sleep 1 # some history, so the snapshot takes more than one chunk
expect_rc 0 "a client that hangs up mid-stream" -- "$RAWCLIENT" "$sock" midstream "$target"
expect_rc 0 "the next client is served" -- ctl snapshot --pid "$target" -o "$tmp/after.pftrace"

"$RAWCLIENT" "$sock" flood 200 6 "$target" >"$tmp/flood.out" 2>&1 & flood=$!; bg_pids+=("$flood")
for _ in $(seq 100); do grep -q "connections open" "$tmp/flood.out" && break; sleep 0.05; done
grep -q "200 connections open" "$tmp/flood.out" && ok "200 clients connected that never read" || fail "flood: $(cat "$tmp/flood.out")"
expect_rc 0 "status while they hang" -- ctl status
# snapshots are capped (8 at once): one now is sent, or refused with a reason, never hung
out=$(timeout 20 "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$target" -o "$tmp/s.pftrace" 2>&1) && rc=0 || rc=$?
[ $rc = 0 ] || { [ $rc = 1 ] && grep -q "try again" <<<"$out"; } && ok "a snapshot while they hang is sent or refused (exit $rc)" \
	|| fail "snapshot while they hang: exit $rc: $out"
wait "$flood"
expect_rc 0 "a snapshot once they left" -- ctl snapshot --pid "$target" -o "$tmp/s2.pftrace"
expect_rc 0 "status after they left" -- ctl status
# a client that never reads is closed once it has read nothing for 10 s (a snapshot of
# megabytes, more than a socket holds, so the daemon has output waiting for it)
if command -v perf >/dev/null; then
	taskset -c 1 perf bench sched pipe -T -l 300000 >/dev/null 2>&1 & big=$!
	sleep 0.2
	ctl watch --pid "$big" >/dev/null
	wait "$big"
else
	big=$target
fi
"$RAWCLIENT" "$sock" flood 3 13 "$big" >/dev/null 2>&1 & slow=$!; bg_pids+=("$slow")
wait "$slow"
grep -q "read nothing for 10 s: closing it" "$tmp/daemon.log" && ok "clients that never read are closed after 10 s" \
	|| fail "no stalled client was closed: $(tail -5 "$tmp/daemon.log")"
kill -0 "$daemon_pid" && ok "the daemon is still running" || fail "the daemon died"
rc=0; stop_daemon || rc=$?
[ $rc = 0 ] && ok "clean exit" || fail "exit $rc"
finish
