#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Socket activation as hostprofd.socket does it, with systemd-socket-activate standing
# in for PID 1: it binds the socket, and on the first connection execs hostprofd with the
# listening fd (LISTEN_FDS=1). The client that triggered it waits in the backlog and is
# answered; after SIGTERM the socket file stays, since the daemon did not make it.
. "$SRCDIR/tests/e2e/lib.sh"
require_root
command -v systemd-socket-activate >/dev/null || skip "no systemd-socket-activate (apt-get install systemd)"

base=$(our_progs)
systemd-socket-activate -l "$sock" "$HOSTPROFD" --config /dev/null --metrics-dir none --trigger none \
	--watch-thread none --snapshot-dir "$tmp/snaps" >"$tmp/daemon.log" 2>&1 &
daemon_pid=$! # systemd-socket-activate execs hostprofd: the same pid
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] && ok "systemd-socket-activate listens on $sock" || { fail "no socket: $(cat "$tmp/daemon.log")"; finish; }

expect_rc 0 "hostprofctl status through the passed socket" -- "$HOSTPROFCTL" --socket "$sock" status
expect_match "^hostprofd " "status is answered"
grep -q "listening on the socket systemd passed" "$tmp/daemon.log" && ok "the daemon took the passed fd" ||
	fail "daemon log: $(cat "$tmp/daemon.log")"
[ "$(readlink "/proc/$daemon_pid/exe")" = "$(readlink -f "$HOSTPROFD")" ] && ok "pid $daemon_pid is hostprofd" ||
	fail "pid $daemon_pid is $(readlink "/proc/$daemon_pid/exe")"

rc=0; stop_daemon || rc=$?
[ $rc = 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc; $(cat "$tmp/daemon.log")"
[ -S "$sock" ] && ok "the socket file stays (systemd made it)" || fail "the daemon removed a socket it did not make"
wait_progs "$base" && ok "no BPF program left attached" || fail "$(our_progs) programs left (base $base)"
finish
