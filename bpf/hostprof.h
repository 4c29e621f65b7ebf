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
#define HP_HIST_SLOTS 16384 /* syscall histograms kept at once (thread x syscall number) */
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
#define HP_EV_GIL 17     /* struct hp_gil: a watched thread waited for a CPython GIL */
#define HP_EV_PYSTACK 18 /* struct hp_pystack + frame pairs: the Python stack of a sample or off-CPU interval */
#define HP_EV_PYGC 19    /* struct hp_pygc: a CPython garbage collection (--python-gc) */
/* struct hp_rawsample + frames + stack bytes: an on-CPU sample whose user stack the daemon
 * unwinds as it drains it (--unwind); it keeps the HP_EV_SAMPLE made of it, never this */
#define HP_EV_RAWSAMPLE 20
/* struct hp_rawsample, no frames, then the stack: the registers and stack copy of a watched
 * thread whose off-CPU interval's user stack was just walked (hdr.ts: the interval's
 * start); the daemon unwinds it and gives the interval those frames; never recorded */
#define HP_EV_RAWUSTACK 21
#define HP_EV_MAX 22

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
	X(HP_EV_LOCK, hp_lock, lock, e->kstack_len)                        \
	X(HP_EV_GIL, hp_gil, gil, 0)                                       \
	X(HP_EV_PYSTACK, hp_pystack, pystack, 2 * e->n_frames)            \
	X(HP_EV_PYGC, hp_pygc, pygc, 0)                                    \
	X(HP_EV_RAWSAMPLE, hp_rawsample, rawsample, e->kstack_len + e->ustack_len + e->stack_len / 8) \
	X(HP_EV_RAWUSTACK, hp_rawsample, rawustack, e->kstack_len + e->ustack_len + e->stack_len / 8)

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
#define HP_STATE_EXIT_DEAD 0x10   /* EXIT_DEAD ("X"): a thread's last switch-out */
#define HP_STATE_EXIT_ZOMBIE 0x20 /* EXIT_ZOMBIE ("Z"): a thread group leader's last */
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
	__u64 next_wait_ns; /* next's time on the runqueue before this switch, 0: not known */
	__u32 victim_pid;   /* HP_SW_VICTIM_CPU: the watched process whose thread waits here */
	__s16 prev_prio;    /* task_struct::prio: 0..139, -1 for deadline tasks */
	__s16 next_prio;
	__u16 prev_state; /* HP_STATE_* encoding */
	__u16 flags;      /* HP_SW_* */
	__u8 prev_policy;
	__u8 next_policy;
	__u8 next_wait_kind; /* HP_WAIT_* */
	__u8 pad;
	char prev_comm[HP_COMM_LEN];
	char next_comm[HP_COMM_LEN];
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

/* hp_syscall.flags */
/* syscalls = blocking: seen at the switch-out that blocked in it; ts and dur_ns are that
 * off-CPU interval, not the whole call */
#define HP_SYSCALL_BLOCKED 0x1
#define HP_SYSCALL_RET_UNKNOWN 0x2 /* the return value is not known (ret is 0) */

struct hp_syscall {
	struct hp_hdr hdr; /* ts: entry; cpu: where it returned (HP_SYSCALL_BLOCKED: where it ran again) */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__u32 nr;
	__u32 flags; /* HP_SYSCALL_* */
	__s64 ret;
	__u64 args[HP_SYSCALL_ARGS];
};

/* Stacks follow a record as frames[kstack_len + ustack_len]: kernel first, innermost first. */
#define HP_STACK_KTRUNC 0x1      /* the kernel stack was deeper than HP_MAX_STACK */
#define HP_STACK_UTRUNC 0x2
#define HP_STACK_KFAIL 0x4       /* the kernel stack could not be taken */
#define HP_STACK_UFAIL 0x8
#define HP_STACK_USTACK_LATER 0x10 /* hp_offcpu: the user stack follows as HP_EV_USTACK */
/* syscalls = blocking: the user stack was not taken at the switch-out (its thread's walks
 * are rate-limited; counted in HP_STAT_USTACK_SKIPPED) */
#define HP_STACK_USKIPPED 0x20
/* the kernel stack of an earlier block of the thread from the same user instruction and
 * stack pointer in the same syscall, walked at most 10 ms before (a reuse, not a walk) */
#define HP_STACK_KREUSED 0x40

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
	__u32 place; /* HP_EV_RAWUSTACK.place of the user stack's walk; 0: none */
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

/*
 * An on-CPU sample with what unwinding its user stack from CFI takes (--unwind): the user
 * registers, by their DWARF numbers (x86_64 0-16: rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp,
 * r8-r15, rip; aarch64 0-32: x0-x30, sp, pc), and stack_len bytes of its stack from the
 * stack pointer up (HP_RAW_STACK_MAX at most; the copy stops at the first page it cannot
 * read), after the frames. The frames are hp_sample's: the kernel stack, then the user
 * stack by frame pointers, which the daemon keeps where the unwind gets less.
 */
#define HP_RAW_REGS 33
#define HP_RAW_STACK_MAX 16384
struct hp_rawsample {
	struct hp_hdr hdr;
	__u32 tid;
	__u32 pid;
	__u16 kstack_len;
	__u16 ustack_len;
	__u32 stack_flags;
	__u32 stack_len; /* a multiple of 8 */
	/* HP_EV_RAWUSTACK: which of its thread's user-stack places (1 + index) the walk it
	 * copies for went to; the off-CPU records that take that walk name the same; 0 in
	 * HP_EV_RAWSAMPLE */
	__u32 place;
	__u64 regs_valid; /* bit n: regs[n] was read */
	__u64 regs[HP_RAW_REGS];
	__u64 frames[]; /* kstack_len + ustack_len, then the stack's stack_len bytes */
};

/* The user stack of the off-CPU interval of tid that began at off_ts. */
struct hp_ustack {
	struct hp_hdr hdr;
	__u64 off_ts;
	__u32 tid;
	__u32 pid;
	__u16 ustack_len;
	__u16 place; /* HP_EV_RAWUSTACK.place of the user stack's walk; 0: none */
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

/*
 * The Python stack of a sample (HP_PY_FOR_SAMPLE: key_ts is the sample's hdr.ts) or of an
 * off-CPU interval (HP_PY_FOR_OFFCPU: key_ts is its off_ts), as the BPF walk found it
 * (bpf/python.bpf.h): per frame, innermost first, two words: the code object's address
 * (f_code / f_executable, as the frame holds it) and the instruction word, HP_PY_INSTR_*
 * below. The daemon turns the pairs into names, files and lines (daemon/python/).
 */
#define HP_PY_MAX_FRAMES 64
#define HP_PY_FOR_SAMPLE 1
#define HP_PY_FOR_OFFCPU 2
/* hp_pystack.flags */
#define HP_PY_TRUNC 0x1      /* deeper than HP_PY_MAX_FRAMES */
#define HP_PY_READ_FAIL 0x2  /* a frame could not be read: the frames stop there */
#define HP_PY_LOOP 0x4       /* the frames loop (a torn or hostile chain): not to be trusted */
/* the instruction word: bits 0-55 what the frame holds at fr_instr (3.8-3.10: f_lasti, an
 * int, as its 32 bits; 3.11+: prev_instr / instr_ptr), bits 56-62 its owner byte (3.11+),
 * bit 63 its is_entry (3.11) */
#define HP_PY_INSTR_MASK ((1ULL << 56) - 1)
#define HP_PY_INSTR_OWNER(w) ((unsigned)((w) >> 56) & 0x7f)
#define HP_PY_INSTR_ENTRY (1ULL << 63)

struct hp_pystack {
	struct hp_hdr hdr; /* ts: when the walk ran */
	__u64 key_ts;
	__u32 tid;
	__u32 pid;
	__u16 n_frames;
	__u8 kind;  /* HP_PY_FOR_* */
	__u8 flags; /* HP_PY_* */
	__u32 pad;
	__u64 frames[]; /* [2 * n_frames]: code, instruction word */
};

/*
 * What the BPF walk needs of one CPython process (py_procs map, key: tgid), filled by the
 * daemon when it finds the process is CPython 3.8-3.13 (daemon/python/): where the thread
 * states are and the offsets of the fields it reads, from the daemon's checked table.
 * Every frame offset the walk uses lies below HP_PY_SPAN_MAX: it reads a frame's head in
 * one read of frame_span bytes (a thread state's fields one by one: they lie far apart).
 */
#define HP_PY_SPAN_MAX 128
#define HP_PY_FRAMES_INTERP 0x1 /* 3.11+: _PyInterpreterFrame (else PyFrameObject) */
#define HP_PY_NATIVE_TID 0x2    /* 3.11+: ts_tid is native_thread_id (else a pthread_t, read pthread_tid_off in it) */
#define HP_PY_HAS_CFRAME 0x4    /* 3.11, 3.12: ts_frame is a _PyCFrame *, current_frame at ts_cframe_frame */
#define HP_PY_HAS_OWNER 0x8     /* 3.11+: fr_owner */
#define HP_PY_HAS_ENTRY 0x10    /* 3.11: fr_is_entry */
#define HP_PY_INSTR_INT 0x20    /* 3.8-3.10: fr_instr is an int (f_lasti) */

struct hp_py_proc {
	__u64 threads_head; /* &interp->threads.head (tstate_head) of the main interpreter */
	__u32 flags;        /* HP_PY_* */
	__u32 pthread_tid_off; /* glibc's struct pthread: its tid (before 3.11) */
	__u16 frame_span;
	__u16 ts_next, ts_tid, ts_frame, ts_cframe_frame;
	__u16 fr_back, fr_code, fr_instr, fr_owner, fr_is_entry;
	__u16 max_threads; /* thread states looked at for one thread's */
	__u16 pad;
};

/* A garbage collection of a CPython process: USDT gc__start(generation) to gc__done(collected). */
struct hp_pygc {
	struct hp_hdr hdr; /* ts: gc__start; cpu: where it ended */
	__u64 dur_ns;
	__u32 tid;
	__u32 pid;
	__s32 generation;
	__u32 pad;
	__s64 collected; /* objects collected (-1: the collection failed) */
};

/* py_stats map (per-CPU array) indices: the BPF Python walk's own counts, not drops */
#define HP_PYSTAT_WALKS 0     /* stacks walked (records written or not) */
#define HP_PYSTAT_NO_TSTATE 1 /* a thread with no thread state in the list (a native thread, or not yet) */
#define HP_PYSTAT_READ_FAIL 2 /* a walk stopped at something unreadable */
#define HP_PYSTAT_SCANS 3     /* thread-state lists scanned (the per-thread cache missed) */
#define HP_PYSTAT_OFFCPU 4    /* of the walks: for off-CPU intervals (the others: samples) */
#define HP_PYSTAT_NS_SAMPLE 5 /* time in the walks of samples, ns (bpf_ktime_get_ns around them) */
#define HP_PYSTAT_NS_OFFCPU 6 /* and of off-CPU intervals */
#define HP_PYSTAT_MAX 7

#define HP_MAX_RECORD (sizeof(struct hp_offcpu) + 2 * HP_MAX_STACK * sizeof(__u64))
/* HP_EV_RAWSAMPLE's, the one type past HP_MAX_RECORD: drained, never recorded */
#define HP_MAX_RAW_RECORD (sizeof(struct hp_rawsample) + 2 * HP_MAX_STACK * sizeof(__u64) + HP_RAW_STACK_MAX)

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

/*
 * In the kernel a histogram is a slot of the hist_slots array, which hist_index maps each
 * key to; only its thread writes it, and it fills two cache lines of its own, so threads
 * on different CPUs never write the same line. The count is the buckets' sum, added up by
 * the daemon.
 */
struct hp_hist_slot {
	__u64 total_ns;
	__u64 max_ns;
	__u32 buckets[HP_HIST_BUCKETS];
	__u64 pad[2]; /* to 128 bytes */
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
	__u32 flags; /* HP_EXIT_* */
};

/* hp_exit.flags */
#define HP_EXIT_GROUP 0x1 /* the process's last thread: the kernel stopped watching its pid */

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
	__u32 gen;    /* which watch of the process this is: per-thread state of an earlier one is stale */
	/* syscalls = blocking: moved on whenever the process changed its mappings (it took its
	 * mmap_lock to write); the daemon reads the mappings again when it has moved */
	__u32 maps_changes;
};

/*
 * A CPython process's GIL (gil_procs map, key: tgid), from the daemon's discovery
 * (daemon/python/gil.c): a futex wait of one of its threads on a word in [start, end)
 * (struct _gil_runtime_state: its condition variables and mutexes) is a GIL wait, and its
 * holder's tid is last_holder -> PyThreadState -> native_thread_id (ts_native_tid >= 0),
 * else -> thread_id (a pthread_t) -> glibc's struct pthread's tid (pthread_tid).
 */
struct hp_gil_proc {
	__u64 start, end;
	__u64 holder;         /* &last_holder */
	__u64 switch_number;  /* &switch_number: +1 each time the GIL changes hands */
	__u64 cond_start, cond_end; /* the condition variables: a wait woken on one got its turn */
	__u64 switch_start, switch_end;
	__s32 ts_native_tid;
	__u32 ts_thread_id;
	__s32 pthread_tid;
	__u32 pad;
};

/* The syscall histogram number (hp_hist_key.nr) that counts each thread's GIL waits: every
 * one, merged as the records are, recorded or not (no syscall has it). */
#define HP_HIST_NR_GIL 0x7fff0001u

/* hp_gil.flags */
#define HP_GIL_WOKEN 0x1   /* its last wait was woken on the GIL's condition (else timed out, or a mutex) */
#define HP_GIL_HOLDER_UNREAD 0x2 /* the holder's tid could not be read */

/*
 * One take of the GIL that waited: a watched thread's futex waits on the GIL merged
 * (CPython's waits time out every switch interval, 5 ms by default, to ask the holder to
 * drop it, and wait again), at least gil_min_ns from the first wait's start to the last
 * one's end.
 */
struct hp_gil {
	struct hp_hdr hdr; /* ts: the first wait began; cpu: where it ended */
	__u64 dur_ns;
	__u64 blocked_ns; /* inside the futex waits */
	__u64 holder_ts;  /* the holder's PyThreadState as the last wait ended */
	__u32 tid;
	__u32 pid;
	__u32 holder_tid; /* as the last wait ended: who dropped it to this thread; 0 not known */
	__u32 first_holder_tid; /* as the first began */
	__u32 waits;
	__u32 flags; /* HP_GIL_* */
};
/* Syscall capture modes (the `syscalls` setting): what syscall_mode says in .bss. */
#define HP_SYSCALLS_EXACT 1    /* sys_enter/sys_exit: every call counted and timed */
#define HP_SYSCALLS_BLOCKING 2 /* no syscall hooks: calls that block, seen at the switch-out */

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
#define HP_STAT_USTACK_SKIPPED 9 /* blocking: an off-CPU interval's user stack not taken (rate limit) */
#define HP_STAT_SWITCH_UNREPORTED 10 /* a recorded switch-in whose switch-out the kernel did not report */
#define HP_STAT_MAX 11

#endif /* HOSTPROF_BPF_H */
