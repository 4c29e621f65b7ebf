#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What a daemon that watches nothing costs the machine: no program on the switch path and
# no sampling interrupt (the on-CPU samples run only while some process is watched, at
# --sample-hz on every CPU); both come with the first watched process and go with the
# last. The samples are counted by the kernel (kernel.bpf_stats_enabled: the run count of
# the daemon's on_cpu_sample), not by the daemon.
. "$(dirname "$0")/lib.sh"
require_root
stats_before=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null) || skip "no kernel.bpf_stats_enabled"
trap 'sysctl -qw kernel.bpf_stats_enabled="$stats_before"; cleanup' EXIT
sysctl -qw kernel.bpf_stats_enabled=1 || skip "cannot turn on kernel.bpf_stats_enabled"

start_daemon --watch-thread none --trigger none --sample-hz 99

# the daemon's programs and links, from its fds
daemon_ids() { grep -h "^$1_id:" /proc/"$daemon_pid"/fdinfo/* 2>/dev/null | awk '{print $2}' | sort -un | paste -sd, -; }
daemon_tps() {
	bpftool link list --json | jq -r --arg ids "$(daemon_ids link)" \
		'($ids | split(",") | map(select(. != "") | tonumber)) as $m | [.[] | select(.id as $i | $m | index($i)) | .tp_name // empty] | sort | join(" ")'
}
samples() {
	bpftool prog show --json | jq -r --arg ids "$(daemon_ids prog)" \
		'($ids | split(",") | map(select(. != "") | tonumber)) as $m | [.[] | select(.id as $i | $m | index($i)) | select(.name == "on_cpu_sample") | .run_cnt // 0] | add // "none"'
}
# samples over 0.6 s: 99 Hz on each CPU is ~60 a CPU when they run
samples_in() {
	local a b
	a=$(samples)
	sleep 0.6
	b=$(samples)
	[ "$a" != none ] && [ "$b" != none ] || { echo none; return; }
	echo $((b - a))
}

[ "$(samples)" != none ] || { fail "no on_cpu_sample program among the daemon's"; finish; }
tps=$(daemon_tps)
grep -qw sched_switch <<<"$tps" && fail "sched_switch attached with nothing watched: $tps" ||
	ok "nothing on the switch path while nothing is watched"
n=$(samples_in)
[ "$n" = 0 ] && ok "no samples while nothing is watched" || fail "$n samples in 0.6 s with nothing watched"

sleep 60 &
target=$!
bg_pids+=("$target")
expect_rc 0 "watch a process" -- ctl watch --pid "$target"
n=$(samples_in)
[ "$n" != none ] && [ "$n" -ge 30 ] && ok "samples while it is watched ($n in 0.6 s)" ||
	fail "$n samples in 0.6 s while a process is watched"
grep -qw sched_switch <<<"$(daemon_tps)" && ok "the sched hooks with it" || fail "attached: $(daemon_tps)"

expect_rc 0 "unwatch it" -- ctl unwatch --pid "$target"
# the daemon's next tick (100 ms) sees that nothing is watched, and stops both together
for _ in $(seq 50); do grep -qw sched_switch <<<"$(daemon_tps)" || break; sleep 0.1; done
tps=$(daemon_tps)
grep -qw sched_switch <<<"$tps" && fail "sched_switch still attached 5 s after the unwatch: $tps" ||
	ok "no sched hooks once the last is unwatched"
sleep 0.1
n=$(samples_in)
[ "$n" = 0 ] && ok "nor samples" || fail "$n samples in 0.6 s after the unwatch"
# and they come back with the next one
expect_rc 0 "watch it again" -- ctl watch --pid "$target"
n=$(samples_in)
[ "$n" != none ] && [ "$n" -ge 30 ] && ok "samples again ($n in 0.6 s)" || fail "$n samples in 0.6 s once watched again"
finish
