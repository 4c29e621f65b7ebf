#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# e2e-quotas: what one user may take (README "Who may do what", hostprofd.conf(5)
# user_watched, user_memory_mb), tried as unprivileged members of the socket group
# would, with two users the test creates and removes:
#  - a user that floods the recorder (every syscall recorded) never evicts another
#    user's history: the other's process keeps every record it had, and the flooder
#    holds at most its user_memory_mb;
#  - a user watches at most user_watched processes: its next request is refused, and
#    the children the kernel starts watching past it are not watched (counted);
#  - root's watches are not limited by it: root watches that user's next process, and
#    its own.
. "$(dirname "$0")/lib.sh"
require_root
for t in setpriv useradd userdel groupadd jq dd; do command -v $t >/dev/null || skip "no $t"; done
grp=hpq$$
ua=hpqa$$
ub=hpqb$$
groupadd --system "$grp" || skip "cannot create a group"
useradd --system -M -N -g nogroup -s /usr/sbin/nologin "$ua" || { groupdel "$grp"; skip "cannot create users"; }
useradd --system -M -N -g nogroup -s /usr/sbin/nologin "$ub" || { userdel "$ua"; groupdel "$grp"; skip "cannot create users"; }
trap 'userdel "$ua" 2>/dev/null; userdel "$ub" 2>/dev/null; groupdel "$grp" 2>/dev/null; cleanup' EXIT
chmod 755 "$tmp"
uida=$(id -u "$ua")
uidb=$(id -u "$ub")

as() { local u=$1; shift; setpriv --reuid="$u" --regid=nogroup --groups="$grp" "$@"; }
hctl() { local u=$1; shift; as "$u" "$HOSTPROFCTL" --socket "$sock" "$@"; }
# field PID JQ: of that process in root's status
field() { ctl status --json | jq -r "[.processes[] | select(.pid == $1)][0] | $2"; }

# every syscall is a record (syscalls = exact, no threshold): a dd of 1-byte reads and
# writes is a flood
start_daemon --socket-group "$grp" --watch-thread none --trigger none --syscalls exact --syscall-min-us 0 --window 60s \
	--memory-mb 8 --buffer-mb 8 --user-memory-mb 2 --user-watched 4

# --- 1. one user's flood does not evict another's history ---
spawn_as "$ub" bash -c 'sleep 0.5; exec dd if=/dev/zero of=/dev/null bs=1 count=3000 status=none'
pb=$spawned
expect_rc 0 "$ub watches its process" -- hctl "$ub" watch --pid "$pb"
wait "$pb"
sleep 1.3 # its exit is seen, its history stays for the window
events_b=$(field "$pb" .events)
bytes_b=$(field "$pb" .bytes)
[ "$events_b" -ge 6000 ] && ok "$ub's process has its history ($events_b events, $bytes_b bytes)" \
	|| fail "$ub's process has $events_b events, want at least its 6000 syscalls"

spawn_as "$ua" bash -c 'sleep 0.3; exec dd if=/dev/zero of=/dev/null bs=1 count=300000 status=none'
pa=$spawned
expect_rc 0 "$ua watches its flooding process" -- hctl "$ua" watch --pid "$pa"
wait "$pa"
sleep 1.3
expect_rc 0 "$ua's status" -- hctl "$ua" status --json
qa_bytes=$(jq .quota.bytes <<<"$out")
qa_limit=$(jq .quota.bytes_limit <<<"$out")
qa_dropped=$(jq .quota.dropped <<<"$out")
[ "$qa_limit" = $((2 << 20)) ] && ok "its quota says 2 MiB" || fail "bytes_limit $qa_limit"
[ "$qa_bytes" -le "$qa_limit" ] && [ "$qa_bytes" -gt 0 ] && ok "$ua holds $qa_bytes bytes, within its quota" \
	|| fail "$ua holds $qa_bytes bytes, quota $qa_limit"
[ "$(field "$pa" .events)" -gt 100000 ] && ok "the flood was recorded ($(field "$pa" .events) events)" \
	|| fail "the flood has $(field "$pa" .events) events"
[ "$(field "$pb" .events)" = "$events_b" ] && [ "$(field "$pb" .bytes)" = "$bytes_b" ] \
	&& ok "$ub's history is whole after $ua's flood ($events_b events, $bytes_b bytes)" \
	|| fail "$ub's process: $(field "$pb" .events) events, $(field "$pb" .bytes) bytes; had $events_b, $bytes_b"
expect_rc 0 "$ub's status" -- hctl "$ub" status --json
[ "$(jq .quota.uid <<<"$out")" = "$uidb" ] && [ "$(jq .quota.dropped <<<"$out")" = 0 ] \
	&& ok "$ub lost no record" || fail "$ub's quota: $(jq -c .quota <<<"$out")"
echo "note: $ua's flood: $qa_dropped records not kept (it evicts its own oldest first)"

# --- 2. at most user_watched processes of a user ---
mine=()
for _ in 1 2 3 4 5; do spawn_as "$ua" sleep 60; mine+=("$spawned"); done
sleep 0.2
for i in 0 1 2 3; do
	expect_rc 0 "$ua watches process $((i + 1)) of 4" -- hctl "$ua" watch --pid "${mine[$i]}"
done
expect_rc 1 "$ua's 5th is refused" -- hctl "$ua" watch --pid "${mine[4]}"
expect_match "at once \(user_watched\)" "the refusal names the quota"
expect_rc 0 "root watches $ua's 5th" -- ctl watch --pid "${mine[4]}"
sleep 60 & rootp=$!; bg_pids+=("$rootp")
expect_rc 0 "root watches its own" -- ctl watch --pid "$rootp"
spawn_as "$ub" sleep 60
expect_rc 0 "$ub's quota is its own: it watches its process" -- hctl "$ub" watch --pid "$spawned"
# root's watch of the 5th counts as $ua's: it unwatches two to watch one more
expect_rc 0 "$ua unwatches one" -- hctl "$ua" unwatch --pid "${mine[0]}"
expect_rc 0 "$ua unwatches another" -- hctl "$ua" unwatch --pid "${mine[1]}"

# children the kernel watches past the quota: not watched, counted
spawn_as "$ua" bash -c 'sleep 0.5; for i in $(seq 8); do sleep 30 & done; wait'
forker=$spawned
expect_rc 0 "$ua watches a process that forks 8 children" -- hctl "$ua" watch --pid "$forker"
sleep 1.5
expect_rc 0 "$ua's status" -- hctl "$ua" status --json
w=$(jq .quota.watched <<<"$out")
r=$(jq .quota.refused <<<"$out")
[ "$w" = 4 ] && ok "$ua has 4 processes watched" || fail "$ua has $w watched: $(jq -c .quota <<<"$out")"
[ "$r" -ge 8 ] && ok "$r of its children were not watched (counted)" || fail "refused $r, want at least 8"
expect_rc 0 "root's status" -- ctl status --json
[ "$(jq ".users[] | select(.uid == $uida) | .refused" <<<"$out")" = "$r" ] \
	&& ok "root's status lists $ua's use" || fail "users: $(jq -c .users <<<"$out")"
[ "$(jq '.quota.watched_limit' <<<"$out")" = 0 ] && ok "root has no limit" || fail "root's quota: $(jq -c .quota <<<"$out")"
sleep 60 & rootq=$!; bg_pids+=("$rootq")
expect_rc 0 "root still watches another process" -- ctl watch --pid "$rootq"
finish
