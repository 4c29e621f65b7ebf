#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Start, reload, stop, crash and restart, as an administrator would.
. "$(dirname "$0")/lib.sh"
require_root

base=$(our_progs)
sleep 60 & sleeper=$!; bg_pids+=("$sleeper")
printf 'watch_threads = foo\npids = %s\n' "$sleeper" >"$tmp/hostprofd.conf"
"$HOSTPROFD" --config "$tmp/hostprofd.conf" --socket "$sock" --metrics-dir none >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done

[ "$(our_progs)" -gt "$base" ] && ok "programs attached while running" || fail "no programs attached"
[ -S "$sock" ] && [ "$(stat -c %a "$sock")" = 600 ] && ok "socket 0600 without a group" || fail "socket mode $(stat -c %a "$sock" 2>&1)"
expect_rc 0 "status --json" -- ctl status --json
[ "$(jq -c .watch_threads <<<"$out")" = '["foo"]' ] && ok "config file's watch_threads" || fail "watch_threads $(jq -c .watch_threads <<<"$out")"
[ "$(jq ".processes[] | select(.pid == $sleeper) | .why" <<<"$out")" = '"pid"' ] && ok "config file's pids" || fail "pids: $out"

expect_rc 2 "a second hostprofd on the same socket" -- "$HOSTPROFD" --config /dev/null --socket "$sock"
expect_match "Another hostprofd is listening" "says another daemon listens"

printf 'watch_threads = bar, baz*\npids = %s\n' "$sleeper" >"$tmp/hostprofd.conf"
kill -HUP "$daemon_pid"
for _ in $(seq 50); do grep -q reloaded "$tmp/daemon.log" && break; sleep 0.1; done
expect_rc 0 "status after SIGHUP" -- ctl status --json
[ "$(jq -c .watch_threads <<<"$out")" = '["bar","baz*"]' ] && ok "SIGHUP reloads the config" || fail "after reload: $(jq -c .watch_threads <<<"$out")"

rc=0; stop_daemon || rc=$?
[ $rc = 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc"
[ -e "$sock" ] && fail "socket left after exit" || ok "the socket it made is removed"
wait_progs "$base" && ok "no BPF program left attached" || fail "$(our_progs) programs left (base $base)"

start_daemon
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=
[ -S "$sock" ] && ok "SIGKILL leaves a stale socket" || fail "no stale socket after SIGKILL"
wait_progs "$base" && ok "SIGKILL: the kernel detached the programs" || fail "$(our_progs) programs left after SIGKILL"
start_daemon
grep -q "removing the stale socket" "$tmp/daemon.log" && ok "restart over a stale socket" || fail "restart: $(cat "$tmp/daemon.log")"
stop_daemon

# a kernel feature missing: the raw_tp fallback, forced, still captures
start_daemon --force-raw-tp --trigger none
grep -q "attached (raw_tp)" "$tmp/daemon.log" && ok "--force-raw-tp attaches raw tracepoints" || fail "$(cat "$tmp/daemon.log")"
run_stall --duration 1.5 --period-ms 300 --burst-ms 10 --cpu 1
wait "$stall_pid"
expect_rc 0 "snapshot under raw_tp" -- ctl snapshot --pid "$trainer" --format hps -o "$tmp/raw.hps"
"$HOSTPROFCTL" export "$tmp/raw.hps" --format perfetto -o "$tmp/raw.pftrace" >/dev/null
n=$(perfetto_sched "$tmp/raw.pftrace" | grep -c '^switch ')
[ "$n" -gt 10 ] && ok "raw_tp captured $n switches" || fail "raw_tp captured $n switches"
stop_daemon

# socket permissions are checked at start
mkdir -m 0777 "$tmp/open"
expect_rc 2 "a socket directory others may write to" -- "$HOSTPROFD" --config /dev/null --socket "$tmp/open/s.sock"
expect_match "writable by others" "says why"
[ -e "$tmp/open/s.sock" ] && fail "it left a socket there"

rm -f "$sock"; : >"$sock"
expect_rc 2 "a regular file where the socket goes" -- "$HOSTPROFD" --config /dev/null --socket "$sock"
expect_match "is not a socket" "refuses to replace it"
finish
