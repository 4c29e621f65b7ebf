#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# merge-fixture (unit) / e2e-merge: snapshots of several nodes, taken of the same
# wall-clock instant, merged into one Perfetto trace and reported on together.
#
# The nodes are made with tests/e2e/hps-node from one snapshot each, rewritten as another
# node's: another host, booted at another time (every BOOTTIME time of the snapshot, its
# anchor's included, moved by a known amount), its REALTIME a known amount ahead or
# behind, and a marker "planted" at one wall-clock instant W on each node's own clock.
#   fixture: tests/fixtures/stall.hps (synthetic, known exactly), three nodes of it;
#   real:    two snapshots that hostprofd takes of two stall workloads (a heavy and a light
#            hog) with `snapshot --at T --window 2s`, T an instant both ran at, as node-a
#            and node-b, plus node-c, a copy of node-a's on another clock.
# Checked, by reading the merged trace back with protoc (merge-check):
#   - one Perfetto machine per node, each with its clock snapshot and system info, no
#     sequence id shared;
#   - the planted events land within 1 us of each other, and each machine's clock reads
#     them as W;
#   - a copy's scheduler events are the original's, each exactly its REALTIME lead later;
#   - the fixture discriminates: the planted events' BOOTTIMEs differ by far more than
#     1 us between nodes, so a merge that ignored an anchor (BOOTTIME as it is) or
#     inverted one (BOOTTIME - REALTIME) puts them that far apart and fails;
# the cross-node report: who stalled first (decided, and undecidable within the clocks'
# error, with an unsynchronized clock, with no sync recorded), who lost the most, each
# node's first line; and bad input: a snapshot without an anchor, a corrupt one among good
# ones, two of one host, an -o that exists or cannot be written: a clear error, exit 1,
# and nothing written (no file, no temporary file).
. "$(dirname "$0")/lib.sh"
mode=${1:-fixture}
command -v protoc >/dev/null || skip "protoc not found (apt-get install protobuf-compiler)"
command -v jq >/dev/null || skip "no jq"

node() { "$HPS_NODE" "$@"; }
check_merged() { "$MERGE_CHECK" "$SRCDIR/tests/unit" "$@"; }
hpctl() { "$HOSTPROFCTL" "$@"; }

# the REALTIME instant in the middle of a snapshot's window, on its own clock
window_mid() {
	tail -c +9 "$1" | protoc --proto_path="$SRCDIR/proto" --decode=hostprof.Snapshot snapshot.proto |
		sed -n 's/^start_ns: //p; s/^end_ns: //p; s/^  boottime_ns: //p; s/^  realtime_ns: //p' | head -4 |
		{ read -r b; read -r r; read -r s; read -r e; echo $(((s + e) / 2 - b + r)); }
}

if [ "$mode" = fixture ]; then
	base_a=$FIXTURE
	base_b=$FIXTURE
	# node-b: booted 777.123456789 s earlier, REALTIME 200.654321 ms ahead; node-c: booted
	# 500 s later, REALTIME 150.001234 ms behind
	ahead_b=200654321
	ahead_c=-150001234
	later_b=-777123456789
	later_c=500000000000
	W=$(window_mid "$FIXTURE")
	pids=100,100,100
else
	require_root
	start_daemon
	STALL_A=(--duration 6 --period-ms 200 --burst-ms 20 --cpu 1)
	STALL_B=(--duration 6 --period-ms 400 --burst-ms 3 --cpu 0)
	# trainer A runs as rank 3 of job 4242: its snapshot records that (read once a second)
	export RANK=3 SLURM_JOB_ID=4242
	run_stall "${STALL_A[@]}"
	unset RANK SLURM_JOB_ID
	pid_a=$trainer
	mv "$tmp/stall.out" "$tmp/stall-a.out"
	run_stall "${STALL_B[@]}"
	pid_b=$trainer
	# the instant every "node" is asked for, as an operator would: 2 s into both runs
	sleep 2
	at=$(date +%s.%N)
	for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null; done
	bg_pids=()
	expect_rc 0 "snapshot --at $at of trainer A (hog 20 ms every 200 ms)" -- \
		ctl snapshot --pid "$pid_a" --at "$at" --window 2s --format hps -o "$tmp/real-a.hps"
	expect_rc 0 "snapshot --at $at of trainer B (hog 3 ms every 400 ms)" -- \
		ctl snapshot --pid "$pid_b" --at "$at" --window 2s --format hps -o "$tmp/real-b.hps"
	labels=$(tail -c +9 "$tmp/real-a.hps" | protoc --proto_path="$SRCDIR/proto" --decode=hostprof.Snapshot snapshot.proto |
		sed -n 's/^  rank: "\(.*\)"/rank=\1/p; s/^  job: "\(.*\)"/job=\1/p' | tr '\n' ' ')
	[ "$labels" = "rank=3 job=4242 " ] && ok "the snapshot records the process's rank and job: $labels" \
		|| fail "the snapshot's labels: '$labels', want rank=3 job=4242"
	base_a=$tmp/real-a.hps
	base_b=$tmp/real-b.hps
	ahead_b=200654321
	ahead_c=-150001234
	later_b=-3600000000000
	later_c=1000000000000
	# the instant asked for, in ns: each window is it +- 1 s, room for the clocks' leads
	W=$(awk -v t="$at" 'BEGIN { split(t, p, "."); printf "%s%s\n", p[1], substr(p[2] "000000000", 1, 9) }')
	# (e2e-at checks the centring; here the instant needs room for the clocks' leads, 0.3 s)
	for f in "$base_a" "$base_b"; do
		mid=$(window_mid "$f")
		d=$((mid > W ? mid - W : W - mid))
		[ "$d" -lt 700000000 ] && ok "$(basename "$f"): its 2 s window holds the instant asked for, $d ns from its centre" \
			|| fail "$(basename "$f"): window centre $mid, the instant $W"
	done
	pids=$pid_a,$pid_b,$pid_a
fi
echo "planting at REALTIME $W"

boot_a=$(node --host node-a --rank 0 --job 777 --sync synced --max-error 500000 --est-error 100000 --plant "$W" \
	"$base_a" "$tmp/a.hps") || fail "hps-node a"
boot_b=$(node --host node-b --rank 1 --job 777 --boot-later $later_b --realtime-ahead $ahead_b --sync synced \
	--max-error 300000 --est-error 50000 --plant "$W" "$base_b" "$tmp/b.hps") || fail "hps-node b"
boot_c=$(node --host node-c --rank 2 --job 777 --boot-later $later_c --realtime-ahead $ahead_c --sync synced \
	--max-error 400000 --est-error 80000 --plant "$W" "$base_a" "$tmp/c.hps") || fail "hps-node c"

# --- the fixture discriminates ---
far() { awk -v x="$1" -v y="$2" 'BEGIN { d = x - y; if (d < 0) d = -d; exit !(d > 1e6) }'; }
for pair in "$boot_a $boot_b" "$boot_a $boot_c" "$boot_b $boot_c"; do
	# shellcheck disable=SC2086
	set -- $pair
	far "$1" "$2" && ok "planted BOOTTIMEs $1 and $2 differ by more than 1 ms: a merge ignoring the anchors fails" \
		|| fail "planted BOOTTIMEs $1 and $2 too close to tell a merge that ignores anchors"
done
# inverted (each node moved by BOOTTIME - REALTIME instead of REALTIME - BOOTTIME): a
# planted event at 2 * its BOOTTIME - W + a constant, twice the differences above
ok "so a merge that inverted the anchors puts them twice as far apart"

# --- the merge ---
expect_rc 0 "merge a b c" -- hpctl merge "$tmp/a.hps" "$tmp/b.hps" "$tmp/c.hps" -o "$tmp/job.pftrace"
expect_match "^machine 1: node-a \(rank 0, job 777\) from .*a.hps, \+[0-9.]+ s, clock synced, max error 0.500 ms" \
	"it says which machine is which node, its shift and its clock"
expect_match "^machine 3: node-c \(rank 2, job 777\)" "machine 3 is node-c"
if [ -s "$tmp/job.pftrace" ]; then
	twins=(--twin "1:3:$ahead_c")
	[ "$mode" = fixture ] && twins+=(--twin "1:2:$ahead_b")
	out=$(check_merged "$tmp/job.pftrace" 3 --planted "$W" "${twins[@]}") && rc=0 || rc=$?
	echo "$out"
	[ $rc = 0 ] && ok "merge-check: machines, planted events, twins" || fail "merge-check failed (exit $rc)"
else
	fail "no merged trace"
fi
ls "$tmp"/*.tmp* >/dev/null 2>&1 && fail "temporary files left behind"

cp "$tmp/a.hps" "$tmp/a-again.hps"

# --- the cross-node report ---
expect_rc 0 "report a b c" -- hpctl --json report "$tmp/a.hps" "$tmp/b.hps" "$tmp/c.hps"
rep=$out
n=$(jq '.nodes | length' <<<"$rep")
[ "$n" = 3 ] && ok "three nodes" || fail "$n nodes in the report"
for i in 0 1 2; do
	[ "$(jq -r ".nodes[$i].rank" <<<"$rep")" = "$i" ] && ok "node $i is rank $i" || fail "node $i's rank"
	[ -n "$(jq -r ".nodes[$i].first_line" <<<"$rep")" ] && ok "node $i has its first line" || fail "node $i: no first line"
done
# node-c is node-a's twin whose clock runs 150.001234 ms behind: its first stall, the same
# one, is that much earlier on the wall clock
# (jq reads numbers as doubles: 19 digits do not survive it)
mapfile -t rt < <(grep -o '"realtime_ns":[0-9]*' <<<"$rep" | cut -d: -f2)
d=$((rt[0] - rt[2]))
[ "$d" = "${ahead_c#-}" ] && ok "node-c's first stall is ${ahead_c#-} ns before node-a's, its twin's" \
	|| fail "node-a's and node-c's first stalls are $d ns apart, want ${ahead_c#-}"
# each node's numbers against the merged trace: exactly the stall episodes the trace
# draws for its machine (merge-check --episodes: count, total, the first on the machine's
# own clock), and, read another way, never less than the scheduler shows: every gap of
# 1 ms or more between a switch-out and the next switch-in of the watched process's
# acl_thread (merge-check --gaps) lies inside an episode, so the report's lost time is at
# least their sum and its first stall begins no later than the first gap
mapfile -t first_rt < <(sed 's/"first_stall":null/"first_stall":{"tid":0,"realtime_ns":0,"duration_ns":0}/g' <<<"$rep" |
	grep -o '"first_stall":{"tid"[^}]*}' | sed 's/.*"realtime_ns":\([0-9]*\).*"duration_ns":\([0-9]*\).*/\1 \2/')
merged=$(check_merged "$tmp/job.pftrace" 3 --episodes --gaps acl_thread "$pids")
best=-1 best_lost=-1
while read -r _ m count total rt dur; do
	i=$((m - 1))
	want="$(jq -r ".nodes[$i] | \"\(.stalls) \(.lost_ns)\"" <<<"$rep") ${first_rt[$i]}"
	[ "$count $total $rt $dur" = "$want" ] \
		&& ok "node $i: $count stalls, $total ns lost, the first at REALTIME $rt for $dur ns, as the merged trace draws them" \
		|| fail "node $i: the trace draws $count stalls, $total ns lost, the first at $rt for $dur ns; the report says $want"
	[ "$total" -gt "$best_lost" ] && best=$i best_lost=$total
done < <(grep '^episodes ' <<<"$merged")
while read -r _ m count total _ rt _; do
	i=$((m - 1))
	lost=$(jq -r ".nodes[$i].lost_ns" <<<"$rep")
	first=${first_rt[$i]% *}
	[ "$lost" -ge "$total" ] && { [ "$count" = 0 ] || [ "$first" -le "$rt" ]; } \
		&& ok "node $i: the scheduler shows $count gaps, $total ns, the first at $rt: within the report's episodes" \
		|| fail "node $i: the scheduler shows $count gaps, $total ns, the first at $rt; the report $lost ns, the first at $first"
done < <(grep '^gaps ' <<<"$merged")
[ "$(jq -r .most_lost <<<"$rep")" = "$best" ] && ok "most lost: node $best, as the trace shows" \
	|| fail "most lost: node $(jq -r .most_lost <<<"$rep"), the trace says node $best"
if [ "$mode" = fixture ]; then
	[ "$(jq -r '.first_stall | "\(.verdict) \(.node) \(.next) \(.gap_ns) \(.error_ns)"' <<<"$rep")" = "decided 2 0 150001234 900000" ] \
		&& ok "node-c stalled first, 150.001234 ms before node-a, beyond their clocks' 0.9 ms" \
		|| fail "first stall: $(jq -c .first_stall <<<"$rep")"
	expect_rc 0 "report (text)" -- hpctl report "$tmp/a.hps" "$tmp/b.hps" "$tmp/c.hps"
	expect_match "^first stall: rank 2 on node-c: acl_thread \(tid 101\) stalled 1.0 ms \(1.0 runqueue\) at 2026-11-18T11:06:38.854998Z, 150.001 ms before the next \(rank 0 on node-a\)" \
		"the first line names node-c, when, and by how much"
	expect_match "^most lost: a tie of 3 nodes, 89.0 ms each" "three copies of one snapshot lose the same"
	expect_match "^  node-b \(rank 1, job 777\): acl_thread lost 89 ms of 1.0 s \(8.9%\): CPU taken by realtime task hog" \
		"each node's own first line: its report's"
	# the same set with node-c's clock error 200 ms: within it, undecidable
	node --host node-c --rank 2 --boot-later $later_c --realtime-ahead $ahead_c --sync synced --max-error 200000000 \
		"$FIXTURE" "$tmp/c-loose.hps" >/dev/null
	expect_rc 0 "report with node-c's clock +- 200 ms" -- hpctl report "$tmp/a.hps" "$tmp/b.hps" "$tmp/c-loose.hps"
	expect_match "^first stall: undecidable: rank 2 on node-c at .* and rank 0 on node-a at .* are 150.001 ms apart, within the clocks' combined error \(200.500 ms\)" \
		"within the clocks' error: undecidable, and between whom"
	node --host node-c --rank 2 --boot-later $later_c --realtime-ahead $ahead_c --sync unsynced \
		"$FIXTURE" "$tmp/c-unsynced.hps" >/dev/null
	expect_rc 0 "report with node-c's clock not synchronized" -- hpctl report "$tmp/a.hps" "$tmp/b.hps" "$tmp/c-unsynced.hps"
	expect_match "^first stall: undecidable: .*combined error \(unknown: a clock is not synchronized" "an unsynchronized clock: undecidable"
	expect_match "NOT synchronized" "the table says which clock"
	# two ranks of one host share its clock: 50 us apart is decided
	node --host node-a --rank 1 --job 777 --start-time 12345 --realtime-ahead 50000 --sync unsynced "$FIXTURE" \
		"$tmp/a-rank1.hps" >/dev/null
	expect_rc 0 "report of two ranks on one host" -- hpctl --json report "$tmp/a.hps" "$tmp/a-rank1.hps"
	[ "$(jq -r '.first_stall | "\(.verdict) \(.node) \(.next) \(.gap_ns) \(.error_ns)"' <<<"$out")" = "decided 0 1 50000 0" ] \
		&& ok "one host, one clock: rank 0 first, 50 us before rank 1, no clock error between them" \
		|| fail "two ranks of one host: $(jq -c .first_stall <<<"$out")"
	expect_rc 1 "merge of two ranks on one host" -- hpctl merge "$tmp/a.hps" "$tmp/a-rank1.hps" -o "$tmp/bad.pftrace"
	expect_match "both of host node-a: merge makes one Perfetto machine per node" "merge says one snapshot per host"
	expect_rc 1 "report of one process twice" -- hpctl report "$tmp/a.hps" "$tmp/a-again.hps"
	expect_match "a.hps and .*a-again.hps are snapshots of one process \(pid 100 of host node-a\)" "report says which"
	node --host node-c --rank 2 --boot-later $later_c --realtime-ahead $ahead_c --sync unrecorded \
		"$FIXTURE" "$tmp/c-unrecorded.hps" >/dev/null
	expect_rc 0 "report with node-c's sync not recorded" -- hpctl report "$tmp/a.hps" "$tmp/c-unrecorded.hps"
	expect_match "^first stall: undecidable" "no sync recorded: undecidable"
	expect_match "sync not recorded" "the table says so"
else
	expect_rc 0 "report (text)" -- hpctl report "$tmp/a.hps" "$tmp/b.hps" "$tmp/c.hps"
	echo "$out"
	expect_match "^first stall: " "a first-stall line"
	expect_match "^  node-a \(rank 0, job 777\): " "node-a's own first line"
fi

# --- bad input: a clear error, exit 1, nothing written ---
bad() { # DESCRIPTION REGEX ARGS...
	local what=$1 re=$2
	shift 2
	rm -f "$tmp/bad.pftrace"
	expect_rc 1 "$what" -- hpctl merge "$@" -o "$tmp/bad.pftrace"
	expect_match "$re" "$what: the error says why"
	[ -e "$tmp/bad.pftrace" ] && fail "$what: a file was written"
	ls "$tmp"/*.tmp* >/dev/null 2>&1 && fail "$what: temporary files left behind"
}
node --host node-x --no-anchor "$base_a" "$tmp/noanchor.hps" >/dev/null
bad "a snapshot without an anchor" "noanchor.hps has no clock anchor" "$tmp/a.hps" "$tmp/noanchor.hps"
expect_rc 1 "report: a snapshot without an anchor" -- hpctl report "$tmp/a.hps" "$tmp/noanchor.hps"
expect_match "noanchor.hps has no clock anchor" "report says which"
# damaged in the middle: 64 bytes of 0xff (field 31, wire type 7: no such wire type)
cp "$tmp/b.hps" "$tmp/corrupt.hps"
head -c 64 /dev/zero | tr '\0' '\377' | dd of="$tmp/corrupt.hps" bs=1 seek=2000 conv=notrunc status=none
bad "a corrupt snapshot among good ones" "corrupt.hps is not a hostprof snapshot \(.hps\), or it is damaged" \
	"$tmp/a.hps" "$tmp/corrupt.hps" "$tmp/c.hps"
bad "a file that is no snapshot among good ones" "job.pftrace is not a hostprof snapshot" \
	"$tmp/a.hps" "$tmp/b.hps" "$tmp/job.pftrace"
bad "two snapshots of one host" "a.hps and .*a-again.hps are both of host node-a" "$tmp/a.hps" "$tmp/b.hps" "$tmp/a-again.hps"
expect_rc 2 "merge of one snapshot" -- hpctl merge "$tmp/a.hps" -o "$tmp/one.pftrace"
echo "precious" >"$tmp/exists.pftrace"
expect_rc 1 "-o names a file that exists" -- hpctl merge "$tmp/a.hps" "$tmp/b.hps" -o "$tmp/exists.pftrace"
expect_match "exists.pftrace exists: merge never replaces a file" "the error says so"
[ "$(cat "$tmp/exists.pftrace")" = precious ] && ok "the file is untouched" || fail "the existing file changed"
expect_rc 1 "-o in a directory that does not exist" -- hpctl merge "$tmp/a.hps" "$tmp/b.hps" -o "$tmp/no/such/dir/x.pftrace"
expect_match "cannot write .*x.pftrace: No such file or directory; nothing written" "the error says why"
mkdir "$tmp/ro"
if mount -t tmpfs -o ro,size=1m tmpfs "$tmp/ro" 2>/dev/null; then
	expect_rc 1 "-o on a read-only file system" -- hpctl merge "$tmp/a.hps" "$tmp/b.hps" -o "$tmp/ro/x.pftrace"
	expect_match "cannot write .*Read-only file system; nothing written" "the error says why"
	umount "$tmp/ro"
elif [ "$(id -u)" != 0 ]; then
	chmod 0555 "$tmp/ro"
	expect_rc 1 "-o in a directory it may not write" -- hpctl merge "$tmp/a.hps" "$tmp/b.hps" -o "$tmp/ro/x.pftrace"
	expect_match "cannot write .*Permission denied; nothing written" "the error says why"
fi
ls "$tmp"/*.tmp* "$tmp"/ro/* >/dev/null 2>&1 && fail "temporary files left behind"
finish
