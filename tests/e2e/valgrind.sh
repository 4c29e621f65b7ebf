#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# hostprofd under valgrind's memcheck for one ordinary session: start, watch a shell that
# sleeps in a loop (so its children are followed too), status, the metrics (the file
# every second, and hostprofctl metrics), a snapshot, SIGTERM.
# Any memcheck error or definite leak, in the daemon or in the child a snapshot job
# forks, fails the test. What valgrind 3.19 misjudges is suppressed in
# tests/valgrind.supp, each entry saying why.
. "$(dirname "$0")/lib.sh"
require_root
command -v valgrind >/dev/null || skip "valgrind is not installed (apt-get install valgrind)"
if ldd "$HOSTPROFD" 2>/dev/null | grep -qE 'lib(a|ub)san'; then
	skip "$HOSTPROFD is built with sanitizers: valgrind runs on the plain build"
fi

bash -c 'while :; do sleep 0.02; done' &
loop_pid=$!
bg_pids+=("$loop_pid")
mkdir "$tmp/metrics"

# one log per process: the daemon's, and one per forked snapshot job
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 --num-callers=30 \
	--suppressions="$SRCDIR/tests/valgrind.supp" --log-file="$tmp/valgrind.%p.log" \
	"$HOSTPROFD" --config /dev/null --socket "$sock" --metrics-dir "$tmp/metrics" --metrics-interval 1s --pid "$loop_pid" >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
vglog=$tmp/valgrind.$daemon_pid.log

# valgrind takes seconds to start it (libbpf parses the kernel's BTF): up to 120 s
up=0
for _ in $(seq 1200); do
	ctl status >/dev/null 2>&1 && { up=1; break; }
	kill -0 "$daemon_pid" 2>/dev/null || break
	sleep 0.1
done
if [ $up = 0 ]; then
	echo "hostprofd did not start under valgrind:" >&2
	cat "$tmp/daemon.log" "$tmp"/valgrind.*.log >&2
	exit 1
fi
ok "hostprofd answers under valgrind"

sleep 1 # some switches, forks and exits of the loop's sleeps
expect_rc 0 "status" -- ctl status
expect_match "^$loop_pid +bash " "status lists the watched shell"
expect_rc 0 "metrics" -- ctl metrics
expect_match "^hostprof_process_events_total\\{pid=\"$loop_pid\"" "metrics have the watched shell"
sleep 1.5
grep -q "^hostprof_process_events_total{pid=\"$loop_pid\"" "$tmp/metrics/hostprofd.prom" 2>/dev/null \
	&& ok "the metrics file has it" || fail "no metrics file with the shell: $(ls "$tmp/metrics")"
expect_rc 0 "snapshot of the watched shell" -- ctl snapshot --pid "$loop_pid" -o "$tmp/s.pftrace"
[ -s "$tmp/s.pftrace" ] && ok "snapshot written" || fail "no snapshot file"
expect_rc 1 "snapshot of a pid that is not watched" -- ctl snapshot --pid 1

rc=0
stop_daemon || rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc (99: valgrind found errors)"
for log in "$tmp"/valgrind.*.log; do
	who="hostprofd"
	[ "$log" = "$vglog" ] || who="its child $(basename "$log" .log | sed 's/^valgrind\.//')"
	errors=$(sed -n 's/^==[0-9]*== ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log")
	if [ "$errors" = 0 ]; then
		ok "valgrind: 0 errors in $who"
	else
		fail "valgrind: ${errors:-no summary, so it did not exit:} errors in $who; its log:"
		grep -v -- '^--[0-9]*-- ' "$log" >&2
	fi
done
[ -f "$vglog" ] || fail "no valgrind log of hostprofd"
[ $fails = 0 ] || { echo "hostprofd's log:" >&2; cat "$tmp/daemon.log" >&2; }
finish
