#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# e2e-creds: who may see what (SPEC §7, README "Who may do what"), tried as unprivileged
# members of the socket group would, with two users the test creates and removes:
#  - an exec of a set-uid program: the owner is refused from then on, and after the
#    process exits gets only what was recorded before the exec; its automatic snapshots
#    are root's alone;
#  - a set-gid process of a group the peer is not in, a process that is not dumpable;
#  - another user's process, and a launcher (root) whose child is the peer's: the
#    refusal names the child;
#  - a flood of status requests never read: the daemon's memory stays bounded;
#  - snapshot streams: at most 2 per user, and root still gets one.
. "$(dirname "$0")/lib.sh"
require_root
for t in setpriv useradd userdel groupadd jq; do command -v $t >/dev/null || skip "no $t"; done
grp=hpe2e$$
ua=hpa$$
ub=hpb$$
groupadd --system "$grp" || skip "cannot create a group"
useradd --system -M -N -g nogroup -s /usr/sbin/nologin "$ua" || { groupdel "$grp"; skip "cannot create users"; }
useradd --system -M -N -g nogroup -s /usr/sbin/nologin "$ub" || { userdel "$ua"; groupdel "$grp"; skip "cannot create users"; }
trap 'userdel "$ua" 2>/dev/null; userdel "$ub" 2>/dev/null; groupdel "$grp" 2>/dev/null; cleanup' EXIT
chmod 755 "$tmp"
mkdir -m 777 "$tmp/out"
uida=$(id -u "$ua")

as() { local u=$1; shift; setpriv --reuid="$u" --regid=nogroup --groups="$grp" "$@"; }
hctl() { local u=$1; shift; as "$u" "$HOSTPROFCTL" --socket "$sock" "$@"; }

# a set-uid and a set-gid copy of sleep, and a program that makes itself undumpable
cp "$(command -v sleep)" "$tmp/suid-sleep" && chmod 4755 "$tmp/suid-sleep"
cp "$(command -v sleep)" "$tmp/sgid-sleep" && chgrp shadow "$tmp/sgid-sleep" && chmod 2755 "$tmp/sgid-sleep"

# its own thread pattern: nothing another test runs at the same time is watched with ours
start_daemon --socket-group "$grp" --snapshot-dir "$tmp/snaps" --trigger 'ex:offcpu:sleep:50ms' --window 30s \
	--watch-thread "nomatch$$"

# --- 1. an exec of a set-uid program ---
spawn_as "$ua" bash -c "sleep 1.5; exec $tmp/suid-sleep 2"
p1=$spawned
sleep 0.3
expect_rc 0 "$ua watches its own process" -- hctl "$ua" watch --pid "$p1"
sleep 0.2
expect_rc 0 "and snapshots it before the exec" -- hctl "$ua" snapshot --pid "$p1" -o "$tmp/out/before.pftrace"
for _ in $(seq 40); do grep -q '^Uid:.*\b0\b' "/proc/$p1/status" 2>/dev/null && break; sleep 0.05; done
grep -q '^Uid:.*\b0\b' "/proc/$p1/status" 2>/dev/null || fail "the set-uid exec did not happen: $(grep ^Uid "/proc/$p1/status")"
expect_rc 4 "after the set-uid exec $ua is refused" -- hctl "$ua" snapshot --pid "$p1" -o "$tmp/out/after.pftrace"
expect_match "changed credentials" "the refusal says the credentials changed"
expect_rc 4 "and cannot unwatch it" -- hctl "$ua" unwatch --pid "$p1"
expect_rc 0 "root snapshots it" -- ctl snapshot --pid "$p1" -o "$tmp/out/root.pftrace"
wait "$p1" 2>/dev/null
sleep 1.2 # the tick notes the change and the exit
grep -q "pid $p1 (.*) changed credentials at an exec" "$tmp/daemon.log" && ok "the change is logged" \
	|| fail "no credential change in the log: $(tail -5 "$tmp/daemon.log")"
expect_rc 0 "after it exited, $ua gets what was recorded before the exec" -- hctl "$ua" snapshot --pid "$p1" --format report-json -o "$tmp/out/exited.json"
# the snapshot ends at the exec (the tick saw the change within a second of it)
end=$(jq .window.end_ns "$tmp/out/exited.json")
ctl snapshot --pid "$p1" --format report-json -o "$tmp/out/root-exited.json" >/dev/null 2>&1
rend=$(jq .window.end_ns "$tmp/out/root-exited.json" 2>/dev/null)
[ -n "$end" ] && [ -n "$rend" ] && [ "$end" -lt "$rend" ] && ok "the owner's snapshot ends at the exec ($(( (rend - end) / 1000000 )) ms before root's)" \
	|| fail "the owner's snapshot does not end at the exec: end $end, root's $rend"
hctl "$ua" snapshots --json >"$tmp/out/list.json" 2>&1 || true
if jq -e --arg p "$p1" '.entries // . | map(select(.pid == ($p | tonumber))) | length > 0' "$tmp/out/list.json" >/dev/null 2>&1; then
	fail "$ua sees an automatic snapshot of the set-uid process: $(cat "$tmp/out/list.json")"
else
	ok "$ua does not see its automatic snapshots"
fi

# --- 3. set-gid and undumpable processes ---
spawn_as "$ua" "$tmp/sgid-sleep" 30
p3=$spawned
sleep 0.3
expect_rc 4 "a set-gid process (group shadow) is refused to its user" -- hctl "$ua" watch --pid "$p3"
expect_match "not dumpable|group" "the refusal says why"
spawn_as "$ua" perl -e 'syscall(157, 4, 0, 0, 0, 0); sleep 30' # prctl(PR_SET_DUMPABLE, 0), x86_64
p4=$spawned
sleep 0.3
if [ "$(stat -c %u "/proc/$p4/status")" = 0 ]; then
	expect_rc 4 "a process that made itself undumpable is refused" -- hctl "$ua" watch --pid "$p4"
	expect_match "not dumpable" "the refusal says not dumpable"
else
	fail "prctl(PR_SET_DUMPABLE, 0) did not take (x86_64 syscall 157)"
fi

# --- 9. another user's process, and a launcher ---
spawn_as "$ub" sleep 30
pb=$spawned
bash -c "setpriv --reuid=$ua --regid=nogroup --clear-groups sleep 30 & wait" &
launcher=$!
bg_pids+=("$launcher")
sleep 0.3
expect_rc 4 "$ua may not watch $ub's process" -- hctl "$ua" watch --pid "$pb"
expect_match "belongs to uid $(id -u "$ub")" "the refusal names the owner"
expect_rc 4 "$ua may not watch root's launcher" -- hctl "$ua" watch --pid "$launcher"
expect_match "its child pid [0-9]+ \(sleep\) is yours" "the refusal names the child that is $ua's"

# --- 4. kernel addresses: never to a peer that is not root ---
spawn_as "$ua" perl -e 'while (1) { select(undef, undef, undef, 0.002) }' # off-CPU 2 ms: kernel stacks
pk=$spawned
sleep 0.2
hctl "$ua" watch --pid "$pk" >/dev/null
sleep 1.5
decode_hps() { tail -c +9 "$1" | protoc --proto_path="$SRCDIR/proto" --decode=hostprof.Snapshot snapshot.proto; }
kframes() { # FILE: "frames with kernel: true, how many of them carry an address"
	decode_hps "$1" | awk '/^frames \{/ { f = 1; a = 0; k = 0 } f && /^  address:/ { a = 1 } f && /^  kernel: true/ { k = 1 }
		f && /^\}/ { if (k) { n++; if (a) wa++ } f = 0 } END { printf "%d %d\n", n, wa }'
}
hctl "$ua" snapshot --pid "$pk" --format hps -o "$tmp/out/user.hps" >/dev/null 2>&1
ctl snapshot --pid "$pk" --format hps -o "$tmp/out/root.hps" >/dev/null 2>&1
read -r un ua_addr < <(kframes "$tmp/out/user.hps")
read -r rn r_addr < <(kframes "$tmp/out/root.hps")
[ "${rn:-0}" -gt 0 ] && [ "${r_addr:-0}" -gt 0 ] && ok "root's snapshot has $rn kernel frames with addresses" \
	|| fail "root's snapshot: $rn kernel frames, $r_addr with an address"
[ "${un:-0}" -gt 0 ] && [ "${ua_addr:-1}" = 0 ] && ok "$ua's snapshot has $un kernel frames, none with an address" \
	|| fail "$ua's snapshot: $un kernel frames, $ua_addr with an address"

# --- 5. replies nobody reads ---
rss0=$(ctl status --json | jq .rss_bytes)
as "$ua" "$RAWCLIENT" "$sock" statusflood 4 >"$tmp/flood.out" 2>&1
rss1=$(ctl status --json | jq .rss_bytes)
grow=$(( (rss1 - rss0) / 1048576 ))
[ "$grow" -lt 8 ] && ok "a status flood read by nobody grows the daemon by $grow MiB (< 8)" \
	|| fail "a status flood grew the daemon by $grow MiB ($(cat "$tmp/flood.out"))"

# --- 6. snapshot streams per user ---
# a process with a history larger than a socket holds, so a stream nobody reads stays open
spawn_as "$ua" perl -e 'while (1) { select(undef, undef, undef, 0.0001) }'
pa=$spawned
sleep 0.2
hctl "$ua" watch --pid "$pa" >/dev/null
sleep 3
ctl snapshot --pid "$pa" --format hps -o "$tmp/out/size.hps" >/dev/null 2>&1
size=$(stat -c %s "$tmp/out/size.hps" 2>/dev/null || echo 0)
[ "$size" -gt 524288 ] || fail "the history of pid $pa is $size bytes, too small to hold a stream open"
as "$ua" "$RAWCLIENT" "$sock" flood 4 8 "$pa" >"$tmp/flood2.out" 2>&1 &
bg_pids+=($!)
sleep 2
expect_rc 1 "a third stream of $ua waits" -- hctl "$ua" snapshot --pid "$pa" -o "$tmp/out/third.pftrace"
expect_match "you have 2 snapshots being sent already" "the refusal says why"
expect_rc 0 "root still gets a snapshot" -- ctl snapshot --pid "$pa" --format hps -o "$tmp/out/rootstream.hps"
stop_daemon
finish
