#!/bin/busybox sh
# SPDX-License-Identifier: GPL-2.0-only
# /init of the tests/kernel guests (busybox sh as PID 1): mounts what the tests need, runs
# each test of /hostprof/guest-tests.txt under a timeout, and frames its output and exit
# status on the console for tests/kernel/run-guest.sh:
#   @@hostprof boot RELEASE MACHINE MODEL      once, before the first test
#   @@hostprof begin NAME                      then the test's stdout and stderr (and where
#                                              it failed, all the kernel logged meanwhile)
#   @@hostprof end NAME RC                     RC: its exit status (137: killed at its timeout)
#   @@hostprof summary NAME=RC...              all of them again, at the end
#   @@hostprof done
# then powers the machine off (qemu runs with -no-reboot: a reset ends it).
/bin/busybox --install -s /bin
export PATH=/hostprof/bin:/bin:/usr/bin HOME=/root
mount -t proc proc /proc
# the boot's messages are on the console; from here on only warnings and worse
echo 4 >/proc/sys/kernel/printk
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
ln -s /proc/self/fd /dev/fd
ip link set lo up 2>/dev/null
# a soft lockup's report shows every CPU's stack, not only the stuck one's
echo 1 >/proc/sys/kernel/softlockup_all_cpu_backtrace 2>/dev/null

MODEL=
for a in $(cat /proc/cmdline); do
	case $a in hostprof.model=*) MODEL=${a#hostprof.model=} ;; esac
done
export MODEL
export HOSTPROFD=/hostprof/bin/hostprofd HOSTPROFCTL=/hostprof/bin/hostprofctl STALL=/hostprof/bin/stall
export PERFETTO_SCHED=/hostprof/bin/perfetto-sched
export SRCDIR=/hostprof HOOKCOST_NOTE="TCG-emulated (qemu), not a real CPU's cost"
# TCG runs the kernel's paths some 10-50 times slower than a CPU, its TSC is unstable (the
# clock is the HPET, read by syscall) and its vCPUs stall for milliseconds on a loaded host:
# tests/bpf/test-capture.c widens its timing windows by this factor and checks counts
# instead of the gaps a workload's clock saw
export HOSTPROF_TEST_SLOWDOWN=50

# run_test NAME TIMEOUT CMD: sets rc
run_test() {
	klines=$(dmesg | wc -l)
	# just before the time limit: what each CPU runs and the blocked tasks, into the kernel's
	# log (a hung test is killed without a word of where it hung otherwise)
	(sleep $(($2 - 3)) && echo l >/proc/sysrq-trigger && echo w >/proc/sysrq-trigger) &
	watcher=$!
	(cd /hostprof && eval "timeout -s KILL $2 $3") </dev/null 2>&1
	rc=$?
	kill $watcher 2>/dev/null
	wait $watcher 2>/dev/null
	if [ $rc != 0 ] && [ $rc != 77 ]; then
		# the console shows warnings and worse; a failed test gets all the kernel said
		# meanwhile (a soft lockup's or a hung task's backtrace are below that level)
		echo "--- the kernel's log while $1 ran, every level (dmesg):"
		dmesg | tail -n +$((klines + 1)) | tail -n 400
	fi
}

echo "@@hostprof boot $(uname -r) $(uname -m) $MODEL"
summary=
while read -r name timeout cmd; do
	case $name in '' | '#'*) continue ;; esac
	echo "@@hostprof begin $name"
	run_test "$name" "$timeout" "$cmd"
	# Killed at its time limit: once more, the first try's log (and the kernel's) above it.
	# Seen twice in the 6.1-full guest (capture-rename): a vCPU looping in the int3 of a
	# tracepoint's static branch the kernel was patching (text_poke_bp) as the hooks were
	# attached, for minutes, in qemu's multi-threaded TCG; a hang of ours would hang again.
	if [ $rc = 137 ]; then
		echo "--- $name: killed at its time limit ($timeout s); a second try (the first's log is above)"
		run_test "$name" "$timeout" "$cmd"
	fi
	echo "@@hostprof end $name $rc"
	summary="$summary $name=$rc"
done </hostprof/guest-tests.txt
echo "@@hostprof summary$summary"
echo "@@hostprof done"
sync
reboot -f
