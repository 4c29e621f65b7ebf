# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# tests/workloads/interfere-env.sh: the environments that tests/workloads/interfere needs,
# made and unmade around one command. Source it from a bash test (root):
#
#   . "$SRCDIR/tests/workloads/interfere-env.sh"
#   hp_netns_exec 1 "$INTERFERE" softirq --cpu 1 --flood-cpu 0 --start-delay 500
#   hp_memcg_run 64 "$INTERFERE" reclaim --mb 512
#
# hp_netns_exec CPU CMD...
#	Runs CMD in a new network namespace (and a private mount namespace, where /sys is
#	mounted again so that /sys/class/net is the new namespace's) with lo up and its
#	receive work steered to CPU by RPS (/sys/class/net/lo/queues/rx-0/rps_cpus), read
#	back to check. Both namespaces go with CMD's last process. CMD sees the new sysfs
#	alone at /sys: the mounts under the old one (cgroup, bpf, tracing) are not there.
# hp_memcg_run LIMIT_MB CMD...
#	Runs CMD in a new memory cgroup limited to LIMIT_MB MiB: cgroup v2 (memory.max) when
#	the unified hierarchy has the memory controller, else v1 (memory.limit_in_bytes), and
#	removes the cgroup after. v1: hostprof-test-PID under the caller's own memory cgroup
#	(its limits still apply); v2: hostprof-test-PID beside the caller's cgroup (a v2
#	cgroup with processes cannot have children with controllers), or under the root.
#	HP_MEMCG, in CMD's environment, is the cgroup's directory. v1: the cgroup's OOM
#	killer is off (memory.oom_control): a charge that finds nothing to reclaim waits, or
#	fails with ENOMEM in a system call, instead of killing CMD.
#
# Each returns CMD's exit status. When the environment cannot be made (not root, no
# unshare or ip, no RPS, a CPU offline, no memory controller, a limit that does not
# take) it says why on stderr and exits 77 (the test is skipped); inside the
# namespaces, it is the command that exits 77.

hp_skip() {
	echo "interfere-env: skipped: $*" >&2
	exit 77
}

# The RPS mask of one CPU as the kernel writes it: 32-bit hex groups joined by commas.
hp_cpu_mask() {
	local cpu=$1 groups=$(($1 / 32 + 1)) i out=""
	for ((i = groups - 1; i >= 0; i--)); do
		if ((i == cpu / 32)); then
			out+=$(printf '%08x' $((1 << (cpu % 32))))
		else
			out+=00000000
		fi
		((i)) && out+=,
	done
	echo "$out"
}

# A mask without its commas and leading zeros, to compare what was written with what reads back.
hp_mask_norm() {
	local m
	m=$(echo "$1" | sed 's/,//g; s/^0*//')
	echo "${m:-0}"
}

hp_netns_exec() {
	local cpu=${1-}
	if ! [[ $cpu =~ ^[0-9]+$ ]] || [ $# -lt 2 ]; then
		echo "usage: hp_netns_exec CPU CMD..." >&2
		return 2
	fi
	shift
	[ "$(id -u)" = 0 ] || hp_skip "hp_netns_exec needs root (a network namespace, /sys)"
	command -v unshare >/dev/null || hp_skip "no unshare (util-linux)"
	command -v ip >/dev/null || hp_skip "no ip (iproute2)"
	[ -e /sys/class/net/lo/queues/rx-0/rps_cpus ] || hp_skip "no RPS in this kernel (CONFIG_RPS)"
	# cpu0 often has no online file: it cannot go offline
	if ! [ -e "/sys/devices/system/cpu/cpu$cpu" ] ||
	   [ "$(cat "/sys/devices/system/cpu/cpu$cpu/online" 2>/dev/null || echo 1)" != 1 ]; then
		hp_skip "CPU $cpu is not online"
	fi
	local mask
	mask=$(hp_cpu_mask "$cpu")
	# The setup runs in the new namespaces, then becomes CMD; it exits 77 when it fails.
	# shellcheck disable=SC2016 # expanded by the inner bash
	unshare --net --mount --propagation private -- bash -c '
		skip() { echo "interfere-env: skipped: $*" >&2; exit 77; }
		mask=$1 norm=$2; shift 2
		mount -t sysfs sysfs /sys || skip "cannot mount sysfs in the new namespace"
		ip link set lo up || skip "cannot set lo up in the new namespace"
		rps=/sys/class/net/lo/queues/rx-0/rps_cpus
		echo "$mask" > "$rps" 2>/dev/null || skip "cannot write $mask to $rps"
		got=$(sed "s/,//g; s/^0*//" "$rps"); got=${got:-0}
		[ "$got" = "$norm" ] || skip "$rps reads $(cat "$rps") after writing $mask"
		exec "$@"
	' hp_netns_exec "$mask" "$(hp_mask_norm "$mask")" "$@"
}

# hp_memcg_where VERSION: prints the hierarchy's mount point and the caller's cgroup path in it.
hp_memcg_where() {
	local version=$1 mnt line
	if [ "$version" = 2 ]; then
		mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
		line=$(grep '^0::' /proc/self/cgroup)
	else
		mnt=$(awk '$3 == "cgroup" && ("," $4 ",") ~ /,memory,/ { print $2; exit }' /proc/self/mounts)
		line=$(awk -F: '("," $2 ",") ~ /,memory,/' /proc/self/cgroup)
	fi
	[ -n "$mnt" ] && [ -n "$line" ] || return 1
	echo "$mnt"
	echo "${line#*:*:}"
}

# Removes the cgroups hostprof-test-PID under DIR whose PID is gone (a killed test's).
hp_memcg_reap() {
	local d pid
	for d in "$1"/hostprof-test-*; do
		[ -d "$d" ] || continue
		pid=${d##*/hostprof-test-}
		if [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then
			rmdir "$d" 2>/dev/null || true
		fi
	done
	return 0
}

hp_memcg_run() {
	local mb=${1-}
	if ! [[ $mb =~ ^[0-9]+$ ]] || ((mb == 0)) || [ $# -lt 2 ]; then
		echo "usage: hp_memcg_run LIMIT_MB CMD..." >&2
		return 2
	fi
	shift
	[ "$(id -u)" = 0 ] || hp_skip "hp_memcg_run needs root (a memory cgroup)"
	local version where mnt own parent limit_file enabled_memory=""
	where=$(hp_memcg_where 2) || where=""
	if [ -n "$where" ] && grep -qw memory "$(head -1 <<<"$where")/cgroup.controllers" 2>/dev/null; then
		version=2
	elif where=$(hp_memcg_where 1); then
		version=1
	else
		hp_skip "no memory cgroup controller (cgroup v2 without memory, and no v1 memory hierarchy)"
	fi
	mnt=$(head -1 <<<"$where")
	own=$(tail -1 <<<"$where")
	own=${own%/}
	if [ "$version" = 1 ]; then
		parent=$mnt$own
		limit_file=memory.limit_in_bytes
	else
		limit_file=memory.max
		if [ -n "$own" ] && [ -e "$mnt$own/memory.max" ]; then
			parent=$mnt${own%/*}	# the caller's cgroup has memory: so have its siblings
		else
			parent=$mnt
			if ! grep -qw memory "$parent/cgroup.subtree_control"; then
				echo +memory > "$parent/cgroup.subtree_control" 2>/dev/null ||
					hp_skip "cannot enable the memory controller in $parent"
				enabled_memory=$parent
			fi
		fi
	fi
	hp_memcg_reap "$parent"
	local cg=$parent/hostprof-test-$$
	mkdir "$cg" 2>/dev/null || hp_skip "cannot create $cg"
	if ! echo $((mb * 1024 * 1024)) > "$cg/$limit_file" 2>/dev/null ||
	   [ "$(cat "$cg/$limit_file")" -gt $((mb * 1024 * 1024)) ]; then
		rmdir "$cg"
		hp_skip "cannot set $cg/$limit_file to $mb MiB"
	fi
	# v1: the cgroup's OOM killer stays off. A stalled disk leaves a cgroup full of page
	# cache under writeback with nothing reclaim can free, for seconds: its OOM killer then
	# took the command (its anonymous memory is all there is to kill) and ended the test.
	# Off, a fault that cannot be charged waits for memory to be freed (uncharged), and a
	# system call's charge fails with ENOMEM (the workloads retry it), until writeback ends.
	# v2 has no such switch (its memory.max OOM-kills).
	if [ "$version" = 1 ] && [ -e "$cg/memory.oom_control" ]; then
		echo 1 > "$cg/memory.oom_control" 2>/dev/null ||
			echo "interfere-env: note: cannot turn $cg's OOM killer off" >&2
	fi
	# no swap here or not, the limit has to be met by reclaiming, not by swapping
	if [ -e "$cg/memory.swap.max" ]; then echo 0 > "$cg/memory.swap.max" || true; fi 2>/dev/null
	if [ -e "$cg/memory.swappiness" ]; then echo 0 > "$cg/memory.swappiness" || true; fi 2>/dev/null

	# The command runs in a child that joins the cgroup; this shell stays out, waits, and
	# removes the cgroup when the command is over, or when the test is interrupted.
	local rc=0 child sig="" old_traps
	(
		echo "$BASHPID" > "$cg/cgroup.procs" || hp_skip "cannot move into $cg"
		HP_MEMCG=$cg exec "$@"
	) <&0 &
	child=$!
	old_traps=$(trap -p INT TERM)
	trap 'sig=INT; kill -TERM "$child" 2>/dev/null' INT
	trap 'sig=TERM; kill -TERM "$child" 2>/dev/null' TERM
	wait "$child" || rc=$?
	# a wait cut short by a signal: wait for the command itself
	while kill -0 "$child" 2>/dev/null; do wait "$child" || rc=$?; done
	trap - INT TERM
	eval "$old_traps"
	local i
	for ((i = 0; i < 50; i++)); do
		rmdir "$cg" 2>/dev/null && break
		sleep 0.1
	done
	if [ -d "$cg" ]; then echo "interfere-env: could not remove $cg" >&2; fi
	if [ -n "$enabled_memory" ]; then
		echo -memory > "$enabled_memory/cgroup.subtree_control" 2>/dev/null || true
	fi
	# the signal that cut the command short goes on to the caller, now that all is clean
	if [ -n "$sig" ]; then kill -s "$sig" "$BASHPID"; fi
	return "$rc"
}
