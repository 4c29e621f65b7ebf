#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# SO_PEERCRED authorization (SPEC §7): a user in the socket group sees and snapshots only
# its own processes; a user outside it cannot connect.
. "$(dirname "$0")/lib.sh"
require_root
command -v setpriv >/dev/null || skip "no setpriv"
grp=hostprof-e2e-$$
groupadd --system "$grp" || skip "cannot create a group"
trap 'groupdel "$grp" 2>/dev/null; cleanup' EXIT
chmod 755 "$tmp"
mkdir -m 777 "$tmp/out"

as_user() { setpriv --reuid=nobody --regid=nogroup --groups="$grp" "$@"; }
sleep 60 & root_proc=$!; bg_pids+=("$root_proc")
spawn_as nobody sleep 60; user_proc=$spawned
sleep 0.2

expect_rc 2 "a --socket-group that does not exist" -- "$HOSTPROFD" --config /dev/null --socket "$sock" --socket-group no-such-group-$$
start_daemon --socket-group "$grp" --pid "$root_proc" --pid "$user_proc"
[ "$(stat -c '%a %U %G' "$sock")" = "660 root $grp" ] && ok "socket 0660 root:$grp" || fail "socket is $(stat -c '%a %U %G' "$sock")"

expect_rc 0 "status as nobody in the group" -- as_user "$HOSTPROFCTL" --socket "$sock" status --json
pids=$(jq -c '[.processes[].pid]' <<<"$out")
[ "$pids" = "[$user_proc]" ] && ok "nobody sees only its own process" || fail "nobody sees $pids"
expect_rc 0 "status as root" -- ctl status --json
[ "$(jq '.processes | length' <<<"$out")" = 2 ] && ok "root sees both" || fail "root sees $(jq -c '[.processes[].pid]' <<<"$out")"

expect_rc 4 "snapshot of root's process as nobody" -- as_user "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$root_proc" -o "$tmp/out/x.pftrace"
expect_match "permission denied: pid $root_proc belongs to uid 0" "the refusal says why"
grep -q "refused uid 65534" "$tmp/daemon.log" && ok "the daemon logs the refusal" || fail "no refusal in the log"
[ -e "$tmp/out/x.pftrace" ] && fail "a refused snapshot left a file"
expect_rc 0 "snapshot of its own process as nobody" -- as_user "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$user_proc" -o "$tmp/out/own.pftrace"
[ -s "$tmp/out/own.pftrace" ] && ok "its snapshot is written" || fail "no snapshot file"

expect_rc 4 "status as nobody outside the group" -- setpriv --reuid=nobody --regid=nogroup --clear-groups "$HOSTPROFCTL" --socket "$sock" status
expect_match "permission denied on $sock" "says permission denied"
finish
