#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# e2e-planted: what a hostile process owner or client plants cannot make the root daemon
# hang, read for it or forge its output:
#  - FIFOs and symlinks in the snapshot directory: `snapshots` answers at once and lists
#    neither, `fetch` refuses them; a snapshot directory others may write to is refused;
#  - a thread name and a glob with a newline and terminal escapes: one log line each,
#    escaped, and `status` prints no control byte.
. "$(dirname "$0")/lib.sh"
require_root
command -v mkfifo >/dev/null || skip "mkfifo not found"

answers_in() { # SECONDS COMMAND...: runs it with a deadline, output in $out
	local t=$1
	shift
	out=$(timeout "$t" "$@" 2>&1) && rc=0 || rc=$?
	return $rc
}

# --- the snapshot directory ---
snaps=$tmp/snaps
mkdir -m 0700 "$snaps"
echo "secret text of root" >"$tmp/secret"
chmod 0600 "$tmp/secret"
mkfifo "$snaps/20260101T000000Z-4242-fifo.hps"
ln -s "$tmp/secret" "$snaps/20260101T000001Z-4243-link.hps"
mkfifo "$snaps/20260101T000002Z-4244-sidecar.txt"
start_daemon --snapshot-dir "$snaps" --trigger 'x:preempt:nomatch:1ms'
if answers_in 5 "$HOSTPROFCTL" --socket "$sock" snapshots; then
	ok "snapshots answers with a FIFO and a symlink in the directory"
else
	fail "snapshots hung or failed (rc $rc): $out"
fi
grep -q fifo <<<"$out" && fail "a FIFO is listed: $out" || ok "the FIFO is not listed"
grep -q link <<<"$out" && fail "a symlink is listed: $out" || ok "the symlink is not listed"
answers_in 5 "$HOSTPROFCTL" --socket "$sock" fetch 20260101T000001Z-4243-link -o "$tmp/got"
[ $rc = 1 ] && ! grep -rqs "secret text" "$tmp"/got* && ok "fetch of the symlink is refused, nothing read" \
	|| fail "fetch of the symlink: rc $rc: $out"
answers_in 2 "$HOSTPROFCTL" --socket "$sock" status >/dev/null && ok "status answers" || fail "status did not answer"
stop_daemon

# a directory others may write to, or one that is a symlink: refused, and said why
chmod 0777 "$snaps"
start_daemon --snapshot-dir "$snaps" --trigger 'x:preempt:nomatch:1ms'
answers_in 5 "$HOSTPROFCTL" --socket "$sock" snapshots
grep -q fifo <<<"$out" && fail "a world-writable directory was indexed: $out" || ok "a world-writable directory is not indexed"
grep -q "not root's, or writable by others" "$tmp/daemon.log" && ok "the log says why" \
	|| fail "no reason logged: $(cat "$tmp/daemon.log")"
stop_daemon
chmod 0700 "$snaps"
ln -s "$snaps" "$tmp/snaplink"
start_daemon --snapshot-dir "$tmp/snaplink" --trigger 'x:preempt:nomatch:1ms'
grep -q "is not a directory" "$tmp/daemon.log" && ok "a symlinked snapshot directory is refused" \
	|| fail "symlinked directory: $(cat "$tmp/daemon.log")"
stop_daemon

# --- names with newlines and terminal escapes ---
# a process renames itself (only it may), in one write
perl -e 'open(my $f, ">", "/proc/self/comm") or die; syswrite($f, "ev\e[2J\nx<0>"); close($f); sleep 60' &
victim=$!
bg_pids+=("$victim")
for _ in $(seq 50); do grep -q '^ev' "/proc/$victim/comm" 2>/dev/null && break; sleep 0.05; done
start_daemon
expect_rc 0 "watch a process whose name has a newline and an escape" -- ctl watch --pid "$victim"
ctl watch --thread $'a\n<0>forged' >/dev/null 2>&1
sleep 0.3
if grep -q $'\033' "$tmp/daemon.log"; then fail "a raw escape byte reached the log"; else ok "no raw escape in the log"; fi
grep -q '^<0>\|^forged\|^x<0>' "$tmp/daemon.log" && fail "a forged log line: $(cat -v "$tmp/daemon.log")" \
	|| ok "no forged log line"
grep -q 'ev\\x1b\[2J\\x0ax<0>' "$tmp/daemon.log" && ok "the name is logged escaped" \
	|| fail "escaped name not in the log: $(cat -v "$tmp/daemon.log")"
grep -q 'thread named a\\x0a<0>forged' "$tmp/daemon.log" && ok "the glob is logged escaped" \
	|| fail "escaped glob not in the log: $(cat -v "$tmp/daemon.log")"
out=$(ctl status 2>&1)
if grep -q $'\033' <<<"$out"; then fail "status printed a raw escape: $(cat -v <<<"$out")"; else ok "status text is escaped"; fi
grep -q 'ev\\x1b' <<<"$out" && ok "status shows the name escaped" || fail "status: $out"
out=$(ctl status --json 2>&1)
jq -e --arg pid "$victim" '.processes[] | select(.pid == ($pid | tonumber)) | .comm | test("\u001b")' <<<"$out" >/dev/null \
	&& ok "status --json keeps the bytes" || fail "status --json: $out"
stop_daemon

# --- files a watched process points the daemon at: it never waits on them ---
# (1) a perf map that is a symlink to tracefs' trace_pipe (a read never returns), and
# (2) a binary whose .gnu_debuglink names a sparse 1 GiB ELF and another of 16 TiB.
# status must answer within a second all along.
command -v objcopy >/dev/null || skip "objcopy not found (binutils)"
mkdir "$tmp/tr" "$tmp/dbg"
tracefs=0
mount -t tracefs nodev "$tmp/tr" 2>/dev/null && tracefs=1
cp "$(command -v sleep)" "$tmp/dbg/sleepy"
objcopy --only-keep-debug "$tmp/dbg/sleepy" "$tmp/dbg/sleepy.debug"
objcopy --remove-section=.gnu_debuglink "$tmp/dbg/sleepy"
objcopy --add-gnu-debuglink="$tmp/dbg/sleepy.debug" "$tmp/dbg/sleepy"
truncate -s 1G "$tmp/dbg/sleepy.debug" # still an ELF header up front; the CRC no longer matches
cp "$(command -v sleep)" "$tmp/dbg/sleepier"
objcopy --only-keep-debug "$tmp/dbg/sleepier" "$tmp/dbg/sleepier.debug"
objcopy --remove-section=.gnu_debuglink "$tmp/dbg/sleepier"
objcopy --add-gnu-debuglink="$tmp/dbg/sleepier.debug" "$tmp/dbg/sleepier"
truncate -s 16T "$tmp/dbg/sleepier.debug" 2>/dev/null || truncate -s 1T "$tmp/dbg/sleepier.debug" # after objcopy's own CRC
"$tmp/dbg/sleepy" 30 &
pa=$!
"$tmp/dbg/sleepier" 30 &
pb=$!
sleep 30 &
pc=$!
bg_pids+=("$pa" "$pb" "$pc")
[ $tracefs = 1 ] && ln -s "$tmp/tr/trace_pipe" "/tmp/perf-$pc.map"
start_daemon --pid "$pa" --pid "$pb" --pid "$pc"
slow=0
for _ in $(seq 12); do
	t0=$(date +%s%N)
	if ! timeout 1 "$HOSTPROFCTL" --socket "$sock" status >/dev/null 2>&1; then slow=$((slow + 1)); fi
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ] || slow=$((slow + 1))
	sleep 0.25
done
[ $slow = 0 ] && ok "status answered within a second for 3 s (trace_pipe symlink: $tracefs, sparse debug files)" \
	|| fail "status was slow or silent $slow times of 12"
expect_rc 0 "a snapshot of the process behind the trace_pipe symlink" -- timeout 10 "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$pc" -o "$tmp/pc.pftrace"
expect_rc 0 "a snapshot of the process with the sparse debug file" -- timeout 20 "$HOSTPROFCTL" --socket "$sock" snapshot --pid "$pa" -o "$tmp/pa.pftrace"
rm -f "/tmp/perf-$pc.map"
stop_daemon
[ $tracefs = 1 ] && umount "$tmp/tr"
finish
