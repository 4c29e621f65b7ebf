/* SPDX-License-Identifier: GPL-2.0-only */
/* What the daemon reads about processes from /proc. */
#ifndef HOSTPROF_PROCFS_H
#define HOSTPROF_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Who a process is: its uids and gids (real, effective, saved, file system). */
struct proc_cred {
	uint32_t uid, euid, suid, fsuid;
	uint32_t gid, egid, sgid, fsgid;
	bool dumpable; /* /proc/PID/status is its euid's: not set-id, no PR_SET_DUMPABLE 0 */
};

struct proc_info {
	uint32_t pid, ppid;
	uint64_t start_time; /* clock ticks after boot: with pid, names one process */
	struct proc_cred cred;
	char comm[16];
};

int proc_read_info(uint32_t pid, struct proc_info *ret);
bool proc_same_cred(const struct proc_cred *a, const struct proc_cred *b);
/* Arguments, NUL-separated as the kernel keeps them; *ret_len 0 for kernel threads. */
int proc_read_cmdline(uint32_t pid, char **ret, size_t *ret_len);
int proc_read_thread_comm(uint32_t pid, uint32_t tid, char ret[16]);
/* Calls fn for every thread of every process; stops early when fn returns < 0. */
int proc_for_each_thread(int (*fn)(uint32_t pid, uint32_t tid, const char *comm, void *ud), void *ud);
/* Threads of one process. */
int proc_for_each_task(uint32_t pid, int (*fn)(uint32_t pid, uint32_t tid, const char *comm, void *ud),
		       void *ud);
/* The cpu cgroup of a thread, and its CFS bandwidth. */
struct cpu_bandwidth {
	char cgroup[256];  /* its path in the hierarchy */
	int64_t quota_us;  /* per period; -1: no limit */
	uint64_t period_us;
};

/* The thread's cgroup, where the cpu controller is (v1, else v2), and its cpu.max (v2) or
 * cpu.cfs_quota_us and cpu.cfs_period_us (v1): its own, not its ancestors'. -ENOENT: no
 * cpu controller for it. */
int proc_read_cpu_bandwidth(uint32_t pid, uint32_t tid, struct cpu_bandwidth *ret);

/* What a job launcher put in a process's environment to name the job and the rank
 * (torchrun, Slurm, MPI): each value cut at its size, "" when absent. */
struct proc_labels {
	char rank[16];       /* RANK, else OMPI_COMM_WORLD_RANK, else SLURM_PROCID */
	char local_rank[16]; /* LOCAL_RANK, else SLURM_LOCALID */
	char world_size[16]; /* WORLD_SIZE, else SLURM_NTASKS */
	char job[64];        /* SLURM_JOB_ID, else TORCHELASTIC_RUN_ID */
	/* from its cgroup path (/proc/PID/cgroup): the container's id (12 hex digits, as
	 * docker shows it) and the Kubernetes pod's uid */
	char container[16];
	char pod[40];
};

/* /proc/PID/environ, at most PROC_ENVIRON_MAX bytes of it (a job's labels come first
 * in practice; what lies beyond is not looked at). */
#define PROC_ENVIRON_MAX (256 * 1024)
int proc_read_labels(uint32_t pid, struct proc_labels *ret);
/* The container and pod of a cgroup path ("/kubepods.slice/.../cri-containerd-ID.scope",
 * "/docker/ID", "/system.slice/docker-ID.scope", ...) into l; "" where it names none. */
void proc_cgroup_labels(const char *path, struct proc_labels *l);

/* The daemon's own resident set, bytes. */
uint64_t proc_self_rss(void);

#endif
