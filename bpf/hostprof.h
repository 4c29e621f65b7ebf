/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Records that hostprof's BPF programs write into the ring buffers, and the maps they
 * share with the daemon. Plain __u32/__u64 with explicit padding: this header is
 * compiled both for the BPF target and for user space.
 */
#ifndef HOSTPROF_BPF_H
#define HOSTPROF_BPF_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define HP_COMM_LEN 16
#define HP_MAX_GLOBS 8      /* --watch-thread patterns the kernel matches */
#define HP_MAX_WATCHED 4096 /* processes watched at once */
#define HP_MAX_TASKS 65536  /* threads of watched processes with state in the kernel */
#define HP_MAX_STACK 64     /* frames kept per kernel or user stack */
#define HP_MAX_CPUS 1024    /* for the --cpus mask */
#define HP_HIST_BUCKETS 24  /* syscall histogram: log2 of microseconds */
#define HP_SYSCALL_ARGS 3
#define HP_FILTER_SIZE 65536 /* watch_filter: one byte per tgid & (HP_FILTER_SIZE - 1) */

/* Record types (hp_hdr.type). Defines, not an enum: clang 14 truncates 64-bit enums. */
#define HP_EV_SWITCH 1 /* struct hp_switch */
#define HP_EV_COMM 2   /* struct hp_comm: a watched thread got a name (rename, exec) */
#define HP_EV_WATCH 3  /* struct hp_comm: a process became watched in the kernel */
#define HP_EV_FORK 4   /* struct hp_fork: a watched task forked a thread or a process */
#define HP_EV_EXIT 5   /* struct hp_exit: a watched thread exited */
#define HP_EV_WAKE 6    /* struct hp_wake: a watched task was woken */
#define HP_EV_MIGRATE 7 /* struct hp_migrate */
#define HP_EV_SYSCALL 8 /* struct hp_syscall: a slow syscall, or any mmap/munmap/mprotect/exec */
#define HP_EV_OFFCPU 9  /* struct hp_offcpu + frames: blocked at least offcpu_min_ns */
#define HP_EV_SAMPLE 10 /* struct hp_sample + frames: on-CPU stack sample */
#define HP_EV_USTACK 11 /* struct hp_ustack + frames: the user stack of an off-CPU interval */
#define HP_EV_EXEC 12   /* struct hp_exec */
#define HP_EV_IRQ 13     /* struct hp_irq: an interrupt on a CPU where a watched thread ran or waited */
#define HP_EV_RECLAIM 14 /* struct hp_reclaim: direct/memcg reclaim or compaction in a watched thread */
#define HP_EV_FAULTS 15  /* struct hp_faults: a watched thread's page faults over a period */
#define HP_EV_LOCK 16    /* struct hp_lock + kernel frames: a watched thread waited for a kernel lock */
#define HP_EV_MAX 17

/*
 * Every record type once: X(type, struct, name, frames). `name` is a bare word: the
 * daemon names each type's handlers after it (append_<name>, kind_<name>) and prints it
 * ("switch"); `frames` is how many __u64 frames follow the struct, an expression of the
 * record `e` (0: the record is exactly its struct). User space derives from this table
 * the size check of every record it drains, its dispatch, and the names; a type added
 * here and not handled there does not compile.
 */
#define HP_RECORDS(X)                                                      \
	X(HP_EV_SWITCH, hp_switch, switch, 0)                              \
	X(HP_EV_COMM, hp_comm, comm, 0)                                    \
	X(HP_EV_WATCH, hp_comm, watch, 0)                                  \
	X(HP_EV_FORK, hp_fork, fork, 0)                                    \
	X(HP_EV_EXIT, hp_exit, exit, 0)                                    \
	X(HP_EV_WAKE, hp_wake, wake, 0)                                    \
	X(HP_EV_MIGRATE, hp_migrate, migrate, 0)                           \
	X(HP_EV_SYSCALL, hp_syscall, syscall, 0)                           \
	X(HP_EV_OFFCPU, hp_offcpu, offcpu, e->kstack_len + e->ustack_len)  \
	X(HP_EV_SAMPLE, hp_sample, sample, e->kstack_len + e->ustack_len)  \
	X(HP_EV_USTACK, hp_ustack, ustack, e->ustack_len)                  \
	X(HP_EV_EXEC, hp_exec, exec, 0)                                    \
	X(HP_EV_IRQ, hp_irq, irq, 0)                                       \
	X(HP_EV_RECLAIM, hp_reclaim, reclaim, 0)                           \
	X(HP_EV_FAULTS, hp_faults, faults, 0)                              \
	X(HP_EV_LOCK, hp_lock, lock, e->kstack_len)

/* Every record starts with this. */
struct hp_hdr {
	__u64 ts;   /* CLOCK_BOOTTIME, ns */
	__u16 type; /* HP_EV_* */
	__u16 size; /* of the whole record, bytes */
	__u32 cpu;
};

/* hp_switch.prev_state: the sched_switch tracepoint's output encoding. */
#define HP_STATE_RUNNING 0x0
#define HP_STATE_IDLE 0x80     /* TASK_REPORT_IDLE ("I"), not D */
#define HP_STATE_PREEMPT 0x100 /* TASK_REPORT_MAX: preempted in the kernel ("R+") */
/*
 * Switched out while still runnable: preempted. A kernel built with PREEMPT_NONE or
 * PREEMPT_VOLUNTARY preempts user code on its return to user mode, through a plain
 * schedule() whose tracepoint says preempt=false: the state is then R, not R+.
 */
#define HP_STATE_RUNNABLE(s) ((s) == HP_STATE_RUNNING || (s) == HP_STATE_PREEMPT)

/* hp_switch.flags: which side of the switch is a watched process */
#define HP_SW_PREV_WATCHED 0x1
#define HP_SW_NEXT_WATCHED 0x2
#define HP_SW_VICTIM_CPU 0x4 /* neither side watched: a watched thread waits on this CPU (victim_pid) */
#define HP_SW_HOST_CPU 0x8   /* a --cpus CPU */

struct hp_switch {
	struct hp_hdr hdr;
	__u32 prev_tid;
	__u32 prev_pid;
	__u32 next_tid;
	__u32 next_pid;
	__s32 prev_prio;
	__s32 next_prio;
	__u32 prev_state;
	__u8 prev_policy;
	__u8 next_policy;
	__u16 flags;
	char prev_comm[HP_COMM_LEN];
	char next_comm[HP_COMM_LEN];
	__u64 next_wait_ns;  /* next's time on the runqueue before this switch, 0: not known */
	__u32 next_wait_kind; /* HP_WAIT_* */
	__u32 victim_pid;     /* HP_SW_VICTIM_CPU: the watched process whose thread waits here */
};

#define HP_WAIT_WAKEUP 1  /* from its wakeup (sched_waking) */
#define HP_WAIT_PREEMPT 2 /* from its preemption (switched out runnable) */

struct hp_wake {
	struct hp_hdr hdr; /* cpu: where the waker ran */
	__u32 tid;
	__u32 pid;
	__u32 target_cpu;
	__u32 flags; /* HP_WAKE_NEW */
	__u32 waker_tid;
	__u32 waker_pid;
	char waker_comm[HP_COMM_LEN];
};

#define HP_WAKE_NEW 1 /* sched_wakeup_new: a new task's first wakeup */

struct hp_migrate {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__u32 from_cpu;
	__u32 to_cpu;
};

struct hp_syscall {
	struct hp_hdr hdr; /* ts: entry; cpu: where it returned */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__u32 nr;
	__u32 pad;
	__s64 ret;
	__u64 args[HP_SYSCALL_ARGS];
};

/* Stacks follow a record as frames[kstack_len + ustack_len]: kernel first, innermost first. */
#define HP_STACK_KTRUNC 0x1      /* the kernel stack was deeper than HP_MAX_STACK */
#define HP_STACK_UTRUNC 0x2
#define HP_STACK_KFAIL 0x4       /* the kernel stack could not be taken */
#define HP_STACK_UFAIL 0x8
#define HP_STACK_USTACK_LATER 0x10 /* hp_offcpu: the user stack follows as HP_EV_USTACK */

struct hp_offcpu {
	struct hp_hdr hdr; /* ts: when it went off the CPU; cpu: where it runs again */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__u32 state; /* prev_state encoding at the switch-out */
	__u32 waker_tid;
	__u32 waker_pid;
	__u16 kstack_len;
	__u16 ustack_len;
	__u32 stack_flags;
	__u32 pad;
	char waker_comm[HP_COMM_LEN];
	__u64 frames[];
};

struct hp_sample {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__u16 kstack_len;
	__u16 ustack_len;
	__u32 stack_flags;
	__u64 frames[];
};

/* The user stack of the off-CPU interval of tid that began at off_ts. */
struct hp_ustack {
	struct hp_hdr hdr;
	__u64 off_ts;
	__u32 tid;
	__u32 pid;
	__u16 ustack_len;
	__u16 pad16;
	__u32 stack_flags;
	__u64 frames[];
};

struct hp_exec {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__u32 old_tid;
	__u32 pad;
	char comm[HP_COMM_LEN];
};

/* hp_irq.kind */
#define HP_IRQ_HARD 1 /* irq_handler_entry/exit: num is the IRQ number, name the handler's */
#define HP_IRQ_SOFT 2 /* softirq_entry/exit: num is the vector (HI 0, TIMER 1, NET_TX 2, NET_RX 3, ...) */
/* hp_irq.flags: how it touched a watched thread */
#define HP_IRQ_RUNNING 0x1 /* it interrupted the watched thread tid */
#define HP_IRQ_WAITING 0x2 /* a watched thread of pid waited (preempted) on this CPU */

struct hp_irq {
	struct hp_hdr hdr; /* ts: entry; cpu: where it ran */
	__u64 dur_ns;
	__u32 tid; /* HP_IRQ_RUNNING: the watched thread it interrupted; else 0 */
	__u32 pid; /* that thread's process, or the one of the thread waiting */
	__u16 kind;  /* HP_IRQ_* */
	__u16 flags; /* HP_IRQ_RUNNING, HP_IRQ_WAITING */
	__u32 num;
	char name[HP_COMM_LEN]; /* HP_IRQ_HARD: irqaction name */
};

/* hp_reclaim.kind */
#define HP_RECLAIM_DIRECT 1  /* mm_vmscan_direct_reclaim_begin/end: result = pages reclaimed */
#define HP_RECLAIM_MEMCG 2   /* mm_vmscan_memcg_reclaim_begin/end: result = pages reclaimed */
#define HP_RECLAIM_COMPACT 3 /* mm_compaction_begin/end: result = the compaction status */

struct hp_reclaim {
	struct hp_hdr hdr; /* ts: begin; cpu: where it ended */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__u32 kind; /* HP_RECLAIM_* */
	__s32 order;
	__u32 gfp; /* reclaim: the allocation's gfp flags; compaction: 0 */
	__s32 pad;
	__s64 result;
};

/*
 * Page faults of a watched thread over [ts, ts + dur_ns): minor and major from the task's
 * own min_flt/maj_flt counters (every arch, group `faults`); `faults` and its split from
 * exceptions:page_fault_user (group `fault-types`; x86 only: aarch64 has no such
 * tracepoint, and they are 0 there, as they are when the group is off).
 */
struct hp_faults {
	struct hp_hdr hdr; /* ts: the start of the period; cpu: where it ended */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__u32 faults; /* user page faults taken (the tracepoint) */
	__u32 write;  /* of those: on a write access */
	__u32 exec;   /* of those: an instruction fetch */
	__u32 prot;   /* of those: a protection fault on a present page */
	__u32 minor;  /* min_flt: resolved without I/O */
	__u32 major;  /* maj_flt: needed I/O */
};

/* hp_lock.flags: the kernel's LCB_F_* of lock:contention_begin */
#define HP_LOCK_SPIN 0x1
#define HP_LOCK_READ 0x2
#define HP_LOCK_WRITE 0x4
#define HP_LOCK_RT 0x8
#define HP_LOCK_PERCPU 0x10
#define HP_LOCK_MUTEX 0x20
#define HP_LOCK_MMAP 0x10000 /* hostprof's: the lock is the mmap_lock of the thread's own mm */

/* A wait for a contended kernel lock; the kernel stack when it lasted >= offcpu_min_ns. */
struct hp_lock {
	struct hp_hdr hdr; /* ts: contention began; cpu: where it ended */
	__u64 dur_ns;
	__u64 lock; /* the lock's address */
	__u32 tid;
	__u32 pid;
	__u32 flags; /* HP_LOCK_* */
	__s32 ret;   /* contention_end's: 0 acquired, -EINTR... */
	__u16 kstack_len;
	__u16 pad16;
	__u32 stack_flags;
	__u64 frames[];
};

/* --interference: which groups of hooks are attached */
#define HP_INTF_IRQ 0x1
#define HP_INTF_RECLAIM 0x2
#define HP_INTF_FAULTS 0x4
#define HP_INTF_LOCKS 0x8
#define HP_INTF_FAULT_TYPES 0x10 /* exceptions:page_fault_user: the write/exec/protection split */

#define HP_MAX_RECORD (sizeof(struct hp_offcpu) + 2 * HP_MAX_STACK * sizeof(__u64))

/* syscall histograms: per thread and syscall number, every call */
struct hp_hist_key {
	__u32 pid;
	__u32 tid;
	__u32 nr;
	__u32 pad;
};

struct hp_hist {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u32 buckets[HP_HIST_BUCKETS]; /* [i]: [2^i, 2^(i+1)) us; [0] also below 1 us */
};

struct hp_comm {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__u32 glob; /* HP_EV_WATCH: index of the pattern that matched */
	__u32 pad;
	char comm[HP_COMM_LEN];
};

struct hp_fork {
	struct hp_hdr hdr;
	__u32 parent_tid;
	__u32 parent_pid;
	__u32 child_tid;
	__u32 child_pid; /* == parent_pid for a new thread */
	char comm[HP_COMM_LEN];
};

struct hp_exit {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__s32 exit_code;
	__u32 pad;
};

/*
 * A --watch-thread glob compiled for a shift-and matcher ('*' any run, '?' one
 * character). Bit j of the state means "the first j pattern characters matched".
 * For each name character c: state = ((state << 1) & charmask[c]) | (state & self_loop),
 * then state |= (state & epsilon) << 1. The name matches when bit `accept` is set.
 * Compiled in user space (lib/glob.c), which also folds runs of '*'.
 */
struct hp_glob {
	__u32 charmask[256]; /* bit j+1: pattern[j] is c or '?' */
	__u32 self_loop;     /* bit j+1: pattern[j] is '*' (it eats any character) */
	__u32 epsilon;       /* bit j: pattern[j] is '*' (it also matches nothing) */
	__u32 accept;        /* 1 << strlen(pattern) */
	__u32 pad;
};

/* watched map: key = tgid */
#define HP_WATCH_PID 1   /* asked for by pid */
#define HP_WATCH_GLOB 2  /* one of its threads matched a --watch-thread pattern */
#define HP_WATCH_CHILD 3 /* forked by a watched process */

struct hp_watch {
	__u32 reason; /* HP_WATCH_* */
	__u32 parent; /* HP_WATCH_CHILD: the parent's tgid */
};

/* stats map (per-CPU array) indices: every event and every loss, by cause */
#define HP_STAT_EVENTS 0      /* records written */
#define HP_STAT_RING_FULL 1   /* record dropped: its CPU's ring buffer was full */
#define HP_STAT_MAP_FULL 2    /* a process could not be added to the watched map */
#define HP_STAT_NO_RING 3     /* no ring buffer for this CPU (CPU came online later) */
#define HP_STAT_TASK_FULL 4   /* per-thread state could not be kept (task map full) */
#define HP_STAT_HIST_FULL 5   /* a syscall histogram could not be created */
#define HP_STAT_STACK_FAILED 6 /* a stack could not be taken */
#define HP_STAT_NESTED 7      /* a record dropped: too deeply nested programs on one CPU */
#define HP_STAT_WAIT_FULL 8   /* a reclaim, compaction or lock wait could not be tracked (map full) */
#define HP_STAT_MAX 9

#endif /* HOSTPROF_BPF_H */
