// SPDX-License-Identifier: GPL-2.0-only
/*
 * The floors of bench/run: empty programs on the hooks hostprof uses, so a hostprofd
 * configuration is compared with what its hooks cost before any work is done in them.
 * bench/floor attaches the ones named on its command line. Each returns at once: what a
 * run costs here is the kernel's own price of calling a BPF program at that hook.
 */
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int floor_sched_switch(void *ctx)
{
	return 0;
}

SEC("tp_btf/sched_waking")
int floor_sched_waking(void *ctx)
{
	return 0;
}

SEC("tp_btf/sys_enter")
int floor_sys_enter(void *ctx)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int floor_sys_exit(void *ctx)
{
	return 0;
}
