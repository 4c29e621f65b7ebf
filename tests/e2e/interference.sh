#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Interference beyond the scheduler, end to end: hostprofd watches the interfere workload
# (tests/workloads/interfere.c) while it provokes one kind, and what the snapshot's report
# says is checked against the workload's own ground truth.
#
#   interference.sh softirq   NET_RX of a loopback UDP flood, steered by RPS to the CPU of
#                             the watched spinner: softirq time is attributed to it while
#                             it runs, bounded by the time it saw itself lose and within
#                             10% of what perf times of the same softirqs
#   interference.sh reclaim   writing and reading a file in a memory cgroup far below its
#                             size: memcg reclaim slices inside the watched thread, and a
#                             `reclaim` trigger fires on them
#   interference.sh faults    touching every page of a fresh mapping: fault counts within
#                             10% of the pages touched
#   interference.sh locks     mappers mmap/munmap beside a watched thread that maps and
#                             faults: waits on its mmap_lock, with wait times and stacks
. "$(dirname "$0")/lib.sh"
. "$SRCDIR/tests/workloads/interfere-env.sh"
require_root
case=${1:?usage: interference.sh softirq|reclaim|faults|locks}

# run_workload MODE ARGS... (through the env wrapper in $wrap): starts it, watches its
# pid as soon as it says ready, waits for it; its ground truth goes to $tmp/truth
wrap=()
run_workload() {
	local rc
	"${wrap[@]}" "$INTERFERE" "$@" --start-delay 1000 >"$tmp/truth" 2>"$tmp/workload.err" &
	wl=$!
	bg_pids+=("$wl")
	for _ in $(seq 200); do
		grep -q '^ready pid=' "$tmp/truth" && break
		kill -0 "$wl" 2>/dev/null || break
		sleep 0.02
	done
	if ! grep -q '^ready pid=' "$tmp/truth"; then
		wait "$wl" && rc=0 || rc=$?
		[ "$rc" = 77 ] && skip "$(cat "$tmp/workload.err")"
		fail "interfere $1 did not start (exit $rc): $(cat "$tmp/workload.err")"
		finish
	fi
	read -r pid tid < <(sed -n 's/^ready pid=\([0-9]*\) tid=\([0-9]*\).*/\1 \2/p' "$tmp/truth")
	ctl watch --pid "$pid" >/dev/null || fail "watch --pid $pid"
	wait "$wl" && rc=0 || rc=$?
	[ "$rc" = 77 ] && skip "$(cat "$tmp/workload.err")"
	[ "$rc" = 0 ] || { fail "interfere $1 exited $rc: $(cat "$tmp/workload.err")"; finish; }
	expect_rc 0 "snapshot of the workload" -- ctl snapshot --pid "$pid" --format hps,report-json,perfetto,report -o "$tmp/s"
	thread=$(jq -c --argjson tid "$tid" '.threads[] | select(.tid == $tid)' "$tmp/s.report.json")
	[ -n "$thread" ] || { fail "no thread $tid in the report: $(head -c 600 "$tmp/s.report.json")"; finish; }
}

truth() { sed -n "s/^$1=//p" "$tmp/truth" | head -1; }
num() { jq -r "$1" <<<"$thread"; }
# within A B PCT: |A - B| <= PCT% of B
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * p / 100) }'; }

# each case's trigger kind fires on what its workload provokes
case $case in
reclaim) trig=memrec:reclaim:acl_thread:200us ;;
locks) trig=mmlock:lock:acl_thread:1ms ;;
softirq) trig=netrx:irq:acl_thread:20us ;;
*) trig=none ;;
esac
start_daemon --trigger "$trig" --watch-thread none --interference all --irq-min-us 0 --lock-min-us 0 \
	--snapshot-dir "$tmp/snaps"

# trigger_expect NAME LONGEST_NS THRESHOLD_NS: trigger NAME saved an automatic snapshot of
# $pid and logged it when the longest event the report saw reached its threshold, and did
# neither when it did not
trigger_expect() {
	local f
	if [ "$2" -lt "$3" ]; then
		sleep 1
		f=$(ls "$tmp/snaps"/*-"$pid"-"$1".hps 2>/dev/null | head -1)
		[ -z "$f" ] && ! grep -q "trigger $1 fired for pid $pid" "$tmp/daemon.log" &&
			ok "the $1 trigger stayed silent: the longest was $(($2 / 1000)) us, under its $(($3 / 1000)) us" ||
			fail "the $1 trigger fired, but the longest was $2 ns, under its $3 ns"
		return
	fi
	for _ in $(seq 50); do ls "$tmp/snaps"/*-"$pid"-"$1".hps >/dev/null 2>&1 && break; sleep 0.1; done
	f=$(ls "$tmp/snaps"/*-"$pid"-"$1".hps 2>/dev/null | head -1)
	[ -n "$f" ] && ok "the $1 trigger saved $(basename "$f")" || fail "no automatic snapshot by $1: $(ls "$tmp/snaps" 2>&1)"
	grep -q "trigger $1 fired for pid $pid" "$tmp/daemon.log" && ok "and logged it" ||
		fail "not in the log: $(tail -5 "$tmp/daemon.log")"
}
expect_rc 0 "status" -- ctl status
expect_match "^interference: irq,reclaim,faults,locks" "status says what interference is captured"

case $case in
faults)
	run_workload faults --mb 64 --duration 0
	pages=$(truth pages)
	# the pages it touched, as the kernel counted them for the thread (getrusage around the
	# touches): the pages of the mapping, and under ASan their shadow too
	minflt=$(truth minflt)
	faults=$(num .interference.faults.faults)
	minor=$(num .interference.faults.minor)
	[ "$pages" = 16384 ] || fail "the workload touched $pages pages, not 16384"
	if [ "$(uname -m)" = x86_64 ]; then
		within "$faults" "$minflt" 10 && ok "page_fault_user counted $faults faults for $minflt pages touched ($pages mapped)" ||
			fail "$faults faults counted for $minflt pages touched"
		w=$(num .interference.faults.write)
		# each page of the mapping is written once (ASan's shadow pages are read)
		within "$w" "$pages" 10 && ok "$w of them on a write, for $pages pages written" ||
			fail "$w write faults for $pages written pages"
	fi
	within "$minor" "$minflt" 10 && ok "$minor minor faults, the thread's own count $minflt" ||
		fail "$minor minor faults captured, the thread counted $minflt"
	[ "$(num .interference.faults.major)" = 0 ] && ok "no major fault on anonymous memory" ||
		fail "major faults: $(num .interference.faults.major)"
	# the groups change on reload (SIGHUP), from the config file
	stop_daemon || fail "hostprofd exit"
	printf 'interference = faults,locks\nirq_min_us = 5\n' >"$tmp/conf"
	# and through the raw_tp fallback
	start_daemon --config "$tmp/conf" --trigger none --watch-thread none --force-raw-tp
	expect_rc 0 "status" -- ctl status
	expect_match "^interference: faults,locks$" "interference from the config file"
	# without fault-types (the default) the counts come from the thread's own counters alone
	run_workload faults --mb 64 --duration 0
	minor=$(num .interference.faults.minor)
	within "$minor" "$(truth minflt)" 10 && ok "without page_fault_user: $minor minor faults for $(truth minflt) pages touched" ||
		fail "without page_fault_user: $minor minor faults for $(truth minflt) pages touched"
	[ "$(num .interference.faults.faults)" = 0 ] && ok "and no write/exec/protection split" ||
		fail "a split without fault-types: $(num .interference.faults)"
	# what is attached while something is watched: the groups asked for, not the others
	sleep 30 &
	bg_pids+=($!)
	ctl watch --pid $! >/dev/null || fail "watch the sleeper"
	for _ in $(seq 30); do
		tps=$(bpftool link list --json | jq -r '[.[] | .tp_name // empty] | join(" ")')
		grep -qw contention_begin <<<"$tps" && break
		sleep 0.1
	done
	grep -qw contention_begin <<<"$tps" && ok "locks attached while a process is watched" || fail "links: $tps"
	grep -qwE 'page_fault_user|softirq_entry|mm_vmscan_memcg_reclaim_begin' <<<"$tps" &&
		fail "groups not asked for are attached: $tps" || ok "page_fault_user, irq and reclaim hooks are not"
	printf 'interference = none\n' >"$tmp/conf"
	kill -HUP "$daemon_pid"
	for _ in $(seq 30); do ctl status | grep -q '^interference: none' && break; sleep 0.1; done
	expect_rc 0 "status" -- ctl status
	expect_match "^interference: none$" "and none after a reload"
	printf 'interference = faults,bogus\n' >"$tmp/conf"
	kill -HUP "$daemon_pid"
	sleep 0.5
	grep -q "bogus" "$tmp/daemon.log" && ok "a bad value is refused with its reason in the log" ||
		fail "no error for 'bogus': $(tail -3 "$tmp/daemon.log")"
	expect_rc 0 "status" -- ctl status
	expect_match "^interference: none$" "and the running configuration stays"
	;;
reclaim)
	wrap=(hp_memcg_run 64)
	run_workload reclaim --mb 256 --duration 2000
	n=$(num .interference.reclaim.count)
	total=$(num .interference.reclaim.time_ns)
	kinds=$(num '[.interference.reclaim.by[].kind] | unique | join(",")')
	truth_events=$(truth failcnt)
	[ -z "$truth_events" ] && truth_events=$(truth events_max)
	[ "$n" -gt 0 ] && ok "$n reclaims inside the thread ($kinds), $((total / 1000)) us in all; the cgroup hit its limit ${truth_events:-?} times" ||
		fail "no reclaim captured; the workload says: $(tr '\n' ' ' <"$tmp/truth")"
	grep -q "memcg reclaim" <<<"$kinds" && ok "memcg reclaim named" || fail "kinds: $kinds"
	# each reclaim lies inside the thread's time in read()/write(): at most its time in the calls
	calls=$(($(truth write_ns) + $(truth read_ns)))
	[ "$total" -le "$calls" ] && ok "reclaim time $((total / 1000000)) ms <= time in read/write $((calls / 1000000)) ms" ||
		fail "reclaim time $total ns > the $calls ns the thread spent in read/write"
	decode_perfetto "$tmp/s.pftrace" | grep -q 'memcg reclaim' && ok "Perfetto has memcg reclaim slices" ||
		fail "no memcg reclaim slice in the trace"
	grep -q "memcg reclaim" "$tmp/s.txt" && ok "the report lists them" || fail "$(grep -A8 interference "$tmp/s.txt")"
	trigger_expect memrec "$(num .interference.reclaim.max_ns)" 200000
	;;
locks)
	wrap=()
	ncpu=$(nproc)
	run_workload lock --threads 2 --cpu $((ncpu - 1)) --duration 2000
	n=$(num '[.interference.locks.by[] | select(.mmap_lock)] | map(.count) | add // 0')
	t=$(num '[.interference.locks.by[] | select(.mmap_lock)] | map(.time_ns) | add // 0')
	max=$(num '[.interference.locks.by[] | select(.mmap_lock)] | map(.max_ns) | max // 0')
	[ "$n" -gt 0 ] && ok "$n waits on its mmap_lock, $((t / 1000)) us in all, the longest $((max / 1000)) us" ||
		fail "no mmap_lock wait captured: $(num .interference.locks)"
	# the longest wait cannot be longer than the slowest mmap, munmap or touch it measured
	slowest=$(truth max_ns)
	[ "$max" -le "$((slowest + 1000000))" ] && ok "the longest wait <= the slowest call it timed ($((slowest / 1000)) us)" ||
		fail "a wait of $max ns, but its slowest call took $slowest ns"
	kinds=$(num '[.interference.locks.by[] | select(.mmap_lock) | .kind] | unique | join(",")')
	grep -qE "rwsem (read|write)" <<<"$kinds" && ok "as an rwsem ($kinds)" || fail "mmap_lock kinds: $kinds"
	stacked=$(num '[.interference.locks.by[] | select(.mmap_lock) | .longest.frames | length] | max // 0')
	lmax=$(num '[.interference.locks.by[] | select(.mmap_lock) | .max_ns] | max // 0')
	# two mappers on one CPU make waits of ms: the longest passes --offcpu-min-us (200 us)
	[ "$lmax" -ge 200000 ] && ok "the longest mmap_lock wait ($((lmax / 1000)) us) passes --offcpu-min-us" ||
		fail "no mmap_lock wait of 200 us or more (longest $lmax ns): the workload did not contend"
	short=$(num '[.interference.locks.by[] | select(.max_ns < 200000) | .longest.frames | length] | max // 0')
	[ "$short" = 0 ] && ok "waits under --offcpu-min-us carry no stack" || fail "a wait under 200 us has $short frames"
	if [ "$lmax" -ge 200000 ]; then
		[ "$stacked" -gt 0 ] && ok "the longest wait ($((lmax / 1000)) us >= offcpu-min) has a kernel stack" ||
			fail "a wait of $lmax ns without a stack"
		num '[.interference.locks.by[] | select(.mmap_lock) | .longest.frames[].function] | join(" ")' |
			grep -qE 'down_(read|write)|rwsem|mmap_(read|write)_lock|lock_mm_and_find_vma' &&
			ok "its stack is in the rwsem/mmap_lock code" || fail "stack: $(num '.interference.locks.by[0].longest.frames')"
		inner=$(num '[.interference.locks.by[] | select(.mmap_lock and .max_ns >= 200000) | .longest.frames[0].function] | .[0] // ""')
		grep -qE '^(rwsem_|down_|up_|mmap_|lock_mm)' <<<"$inner" && ok "innermost frame $inner: no tracing frames above it" ||
			fail "innermost frame of a lock wait: '$inner'"
	fi
	decode_perfetto "$tmp/s.pftrace" | grep -q 'lock wait: mmap_lock' && ok "Perfetto has lock wait slices" ||
		fail "no lock wait slice in the trace"
	trigger_expect mmlock "$(num .interference.locks.max_ns)" 1000000
	;;
softirq)
	[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs"
	wrap=(hp_netns_exec 1)
	# perf, an independent tracer, times every NET_RX on CPU 1 (its own entry and exit
	# tracepoints) for the reference of the time attributed
	perf=$(command -v perf) || fail "no perf (linux-perf)"
	"$perf" record -q -e irq:softirq_entry,irq:softirq_exit --filter 'vec == 3' -C 1 -k monotonic \
		-o "$tmp/perf.data" 2>"$tmp/perf.err" &
	perf_pid=$!
	bg_pids+=("$perf_pid")
	run_workload softirq --cpu 1 --flood-cpu 0 --duration 2000
	kill -INT "$perf_pid"
	wait "$perf_pid" || true
	# NET_RX time on CPU 1 in the workload's window, by perf: entry to exit, in ns
	perf_ns=$("$perf" script -i "$tmp/perf.data" -F time,event --ns 2>/dev/null |
		awk -v s="$(truth start_mono_ns)" -v e="$(truth end_mono_ns)" '
			{ t = $1; sub(/:$/, "", t); split(t, p, "."); ns = p[1] * 1000000000 + p[2] }
			$2 ~ /softirq_entry/ { at = ns; next }
			$2 ~ /softirq_exit/ && at && at >= s && ns <= e { sum += ns - at; n++ }
			{ at = 0 }
			END { printf "%d %d\n", sum, n }')
	read -r perf_ns perf_n <<<"$perf_ns"
	netrx=$(truth netrx_c)
	got=$(num '[.interference.irqs.while_running.by[] | select(.kind == "softirq" and .name == "NET_RX")] | map(.time_ns) | add // 0')
	cnt=$(num '[.interference.irqs.while_running.by[] | select(.kind == "softirq" and .name == "NET_RX")] | map(.count) | add // 0')
	all=$(num '.interference.irqs.while_running.time_ns')
	# when NET_RX outgrows irq exit, ksoftirqd runs it while the spinner waits preempted
	waited=$(num '[.interference.irqs.while_waiting.by[]? | select(.kind == "softirq" and .name == "NET_RX")] | map(.count) | add // 0')
	waited_ns=$(num '[.interference.irqs.while_waiting.by[]? | select(.kind == "softirq" and .name == "NET_RX")] | map(.time_ns) | add // 0')
	echo "workload: $(tr '\n' ' ' <"$tmp/truth")"
	[ "$cnt" -gt 100 ] && ok "$cnt NET_RX softirqs interrupted the spinner ($((got / 1000)) us); /proc/softirqs counted $netrx on CPU 1" ||
		fail "only $cnt NET_RX softirqs attributed; /proc/softirqs counted $netrx on CPU 1"
	[ "$cnt" -le "$netrx" ] && ok "no more than /proc/softirqs saw" || fail "$cnt attributed > $netrx counted by the kernel"
	# the spinner spins on CPU 1 for the whole run: every NET_RX there interrupted it, or ran
	# in ksoftirqd while it waited
	[ "$(((cnt + waited) * 100))" -ge "$((netrx * 90))" ] && ok "with the $waited that ran while it waited, >= 90% of them" ||
		fail "$cnt + $waited attributed of the $netrx NET_RX softirqs CPU 1 ran"
	# What interrupted it while it was on its CPU is time it saw itself lose (gaps > 5 us),
	# and what ran while it waited for ksoftirqd lies in the gaps in which it was switched
	# out. The workload tells those apart by its context switch count across a gap, so a
	# softirq that began while it ran and ended in a switch (to ksoftirqd, when NET_RX
	# outgrows irq exit) puts its whole gap among the switched ones: the time while running
	# is bounded by all it lost, not by the gaps it kept the CPU through alone (781 ms
	# attributed against 617 ms of those in one CI run, all of it within the 1694 ms lost).
	# The rest of the loss is what no tracer in the guest sees: the RPS IPI's delivery, irq
	# entry and exit, the hypervisor's exits.
	slack=$((cnt * 5000))
	lost=$(truth lost_ns)
	switched=$(truth switched_lost_ns)
	[ "$all" -le "$((lost + slack))" ] && ok "interrupt time $((all / 1000)) us <= the $((lost / 1000)) us it lost (+5 us per gap)" ||
		fail "interrupt time $all ns > lost $lost ns + $slack"
	[ "$waited_ns" -le "$((switched + waited * 5000))" ] &&
		ok "NET_RX while it waited, $((waited_ns / 1000)) us <= the $((switched / 1000)) us it lost switched out" ||
		fail "NET_RX while waiting $waited_ns ns > switched out $switched ns + $((waited * 5000))"
	# The reference for the time is perf's: every NET_RX of CPU 1 in the window, timed from
	# its own softirq_entry to softirq_exit, ran either while the spinner ran or while it
	# waited for ksoftirqd
	echo "perf: $perf_n NET_RX on CPU 1 in the window, $((perf_ns / 1000)) us; hostprof: $((got / 1000)) us while running, $((waited_ns / 1000)) us while waiting"
	if [ "$perf_n" -gt 100 ]; then
		within "$((got + waited_ns))" "$perf_ns" 10 &&
			ok "NET_RX time $(((got + waited_ns) / 1000)) us within 10% of perf's $((perf_ns / 1000)) us" ||
			fail "NET_RX time $((got + waited_ns)) ns (running $got + waiting $waited_ns), perf timed $perf_ns ns"
	else
		fail "perf saw $perf_n NET_RX softirqs on CPU 1: $(head -c 300 "$tmp/perf.err")"
	fi
	decode_perfetto "$tmp/s.pftrace" | grep -q 'softirq_entry' && ok "Perfetto has softirq events on the CPU" ||
		fail "no softirq_entry in the trace"
	trigger_expect netrx "$(num '[.interference.irqs.while_running.by[].max_ns] | max // 0')" 20000
	;;
*)
	fail "unknown case $case"
	;;
esac
stop_daemon || fail "hostprofd exit"
finish
