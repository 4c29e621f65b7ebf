#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# sd_notify(3) as Type=notify and WatchdogSec= use it: notify-listen stands in for
# systemd's NOTIFY_SOCKET and prints "PID FIELD" per field received. hostprofd must send
# READY=1 once it serves, WATCHDOG=1 when WATCHDOG_USEC asks for it (200 ms: every 100 ms
# tick), STOPPING=1 on SIGTERM, in that order, all from its own pid (NotifyAccess=main);
# and no WATCHDOG=1 when the watchdog is off.
. "$SRCDIR/tests/e2e/lib.sh"
require_root

# run_notified LABEL ENV...: the daemon with NOTIFY_SOCKET and ENV, until STOPPING=1
run_notified() {
	local label=$1 out=$tmp/$1.notify
	shift
	"$NOTIFY_LISTEN" "$tmp/notify" 15 STOPPING=1 >"$out" &
	local listener=$!
	bg_pids+=("$listener")
	for _ in $(seq 50); do grep -q listening "$out" && break; sleep 0.1; done
	env NOTIFY_SOCKET="$tmp/notify" "$@" "$HOSTPROFD" --config /dev/null --socket "$sock" --metrics-dir none --trigger none \
		--watch-thread none --snapshot-dir "$tmp/snaps" >"$tmp/$label.log" 2>&1 &
	daemon_pid=$!
	pid=$daemon_pid
	for _ in $(seq 100); do grep -q ' READY=1$' "$out" && break; sleep 0.1; done
	if [[ "$*" == *WATCHDOG_USEC=* ]]; then
		for _ in $(seq 50); do grep -q ' WATCHDOG=1$' "$out" && break; sleep 0.1; done
	else
		sleep 0.5 # five ticks of the loop, time enough to ping if it wrongly would
	fi
	rc=0; stop_daemon || rc=$?
	[ $rc = 0 ] && ok "$label: SIGTERM, exit 0" || fail "$label: exit $rc: $(cat "$tmp/$label.log")"
	wait "$listener"
	uniq -c "$out"
}

run_notified watchdog WATCHDOG_USEC=200000
out=$tmp/watchdog.notify
ready=$(grep -n "^$pid READY=1$" "$out" | head -1 | cut -d: -f1)
dog=$(grep -n "^$pid WATCHDOG=1$" "$out" | head -1 | cut -d: -f1)
stopping=$(grep -n "^$pid STOPPING=1$" "$out" | head -1 | cut -d: -f1)
[ -n "$ready" ] && ok "READY=1 from pid $pid" || fail "no READY=1 from $pid"
[ -n "$dog" ] && ok "WATCHDOG=1 with WATCHDOG_USEC=200000 ($(grep -c "WATCHDOG=1$" "$out") pings)" || fail "no WATCHDOG=1"
[ -n "$stopping" ] && ok "STOPPING=1 on SIGTERM" || fail "no STOPPING=1"
[ -n "$ready" ] && [ -n "$dog" ] && [ -n "$stopping" ] && [ "$ready" -lt "$dog" ] && [ "$dog" -lt "$stopping" ] &&
	ok "in order: READY=1, WATCHDOG=1, STOPPING=1" || fail "order: READY line $ready, WATCHDOG $dog, STOPPING $stopping"
others=$(grep -v -e '^listening$' -e "^$pid " "$out")
[ -z "$others" ] && ok "every message from the daemon's own pid" || fail "from other pids: $others"
grep -q "^$pid STATUS=" "$out" && ok "STATUS= is set" || fail "no STATUS="

run_notified quiet
grep -q "WATCHDOG=1" "$tmp/quiet.notify" && fail "WATCHDOG=1 without WATCHDOG_USEC" || ok "no WATCHDOG=1 when the watchdog is off"
grep -q "^$pid READY=1$" "$tmp/quiet.notify" && ok "READY=1 all the same" || fail "no READY=1 without the watchdog"
finish
