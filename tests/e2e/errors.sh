#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a user gets for mistakes: clear messages and the exit codes of SPEC §3.
. "$(dirname "$0")/lib.sh"

expect_rc 3 "status without a daemon" -- ctl status
expect_match "hostprofd is not running: no socket at $sock; start it with \`systemctl start hostprofd\`" "says how to start it"
: >"$tmp/stale.sock"
expect_rc 3 "status with HOSTPROF_SOCKET pointing at a non-socket" -- env HOSTPROF_SOCKET="$tmp/stale.sock" "$HOSTPROFCTL" status
expect_rc 2 "no command" -- "$HOSTPROFCTL"
expect_rc 2 "unknown command" -- "$HOSTPROFCTL" frobnicate
expect_rc 2 "snapshot without --pid" -- ctl snapshot
expect_rc 2 "snapshot --pid abc" -- ctl snapshot --pid abc
expect_rc 2 "snapshot --window 5x" -- ctl snapshot --pid 1 --window 5x
expect_rc 2 "an unknown format" -- ctl snapshot --pid 1 --format nope
expect_match "unknown format 'nope'" "names the bad format"
expect_rc 2 "export without --format" -- "$HOSTPROFCTL" export "$SRCDIR/tests/fixtures/stall.hps"
expect_rc 1 "report of a file that is not a snapshot" -- "$HOSTPROFCTL" report /etc/hostname
expect_match "not a hostprof snapshot" "says it is not a snapshot"
expect_rc 1 "report of a missing file" -- "$HOSTPROFCTL" report "$tmp/missing.hps"
expect_rc 2 "watch without --pid or --thread" -- ctl watch
expect_rc 2 "fetch without a name" -- ctl fetch
expect_rc 0 "hostprofctl --help" -- "$HOSTPROFCTL" --help
expect_match "Exit status" "help documents the exit codes"

expect_rc 2 "hostprofd --ring-kb 3" -- "$HOSTPROFD" --config /dev/null --ring-kb 3
expect_match "power of two" "names the constraint"
expect_rc 2 "hostprofd --window 0" -- "$HOSTPROFD" --config /dev/null --window 0
expect_rc 2 "hostprofd --pid 0" -- "$HOSTPROFD" --config /dev/null --pid 0
expect_rc 2 "hostprofd --watch-thread with 16 characters" -- "$HOSTPROFD" --config /dev/null --watch-thread 0123456789abcdef
expect_rc 2 "hostprofd --bogus" -- "$HOSTPROFD" --bogus
expect_rc 2 "hostprofd with a missing --config" -- "$HOSTPROFD" --config "$tmp/missing.conf"
expect_match "cannot read config file" "says the file is missing"
printf 'window = 30s\nnot_a_key = 1\n' >"$tmp/bad.conf"
expect_rc 2 "a config file with an unknown key" -- "$HOSTPROFD" --config "$tmp/bad.conf"
expect_match "bad.conf: unknown key 'not_a_key'" "names the file and the key"
printf 'ring_kb = 1000\n' >"$tmp/bad2.conf"
expect_rc 2 "a config file with a bad value" -- "$HOSTPROFD" --config "$tmp/bad2.conf"
printf '[trigger x\n' >"$tmp/bad3.conf"
expect_rc 2 "a config file that is not INI" -- "$HOSTPROFD" --config "$tmp/bad3.conf"
expect_rc 0 "hostprofd --help" -- "$HOSTPROFD" --help
expect_rc 0 "hostprofd --version" -- "$HOSTPROFD" --version

if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ]; then
	sh -c 'exit 0' & dead=$!; wait $dead
	expect_rc 2 "hostprofd --pid of a process that is gone" -- "$HOSTPROFD" --config /dev/null --socket "$sock" --pid "$dead"
	expect_match "No process with pid $dead" "names the pid"
	[ -e "$sock" ] && fail "a failed start left $sock behind"
	expect_rc 2 "hostprofd as an unprivileged user" -- setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOSTPROFD" --config /dev/null --socket "$sock"
	expect_match "must run as root" "says it needs root"
fi
finish
