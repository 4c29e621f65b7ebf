// SPDX-License-Identifier: GPL-2.0-only
/* Reading and writing .hps snapshot files; see hps.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob_match.h"
#include "hps.h"
#include "macro.h"
#include "prefault.h"

int hps_pack_room(const Hostprof__Snapshot *snap, size_t room, uint8_t **ret_data, size_t *ret_len)
{
	size_t n = protobuf_c_message_get_packed_size(&snap->base);
	uint8_t *p;

	p = malloc(room + HPS_MAGIC_LEN + n);
	if (!p)
		return -ENOMEM;
	prefault(p, room + HPS_MAGIC_LEN + n);
	memcpy(p + room, HPS_MAGIC, HPS_MAGIC_LEN);
	protobuf_c_message_pack(&snap->base, p + room + HPS_MAGIC_LEN);
	*ret_data = p;
	*ret_len = room + HPS_MAGIC_LEN + n;
	return 0;
}

int hps_pack(const Hostprof__Snapshot *snap, uint8_t **ret_data, size_t *ret_len)
{
	return hps_pack_room(snap, 0, ret_data, ret_len);
}

/* Every column of a table as long as the first, and every index within its table. */
#define SAME_LEN(t, n, col) ((t)->n_##col == (n))
#define IDX_OK(v, limit) ((v) < (limit))
#define IDX1_OK(v, limit) ((v) <= (limit)) /* index + 1, 0 = none */

static bool switches_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__SchedSwitchTable *t = s->switches;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, cpu) || !SAME_LEN(t, n, prev_tid) || !SAME_LEN(t, n, prev_pid) ||
	    !SAME_LEN(t, n, prev_comm) || !SAME_LEN(t, n, prev_prio) || !SAME_LEN(t, n, prev_state) ||
	    !SAME_LEN(t, n, next_tid) || !SAME_LEN(t, n, next_pid) || !SAME_LEN(t, n, next_comm) ||
	    !SAME_LEN(t, n, next_prio))
		return false;
	/* columns added later: absent (older snapshots) or complete */
	if ((t->n_prev_policy && !SAME_LEN(t, n, prev_policy)) || (t->n_next_policy && !SAME_LEN(t, n, next_policy)) ||
	    (t->n_next_wait_ns && !SAME_LEN(t, n, next_wait_ns)) ||
	    (t->n_next_wait_kind && !SAME_LEN(t, n, next_wait_kind)))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX_OK(t->prev_comm[i], s->n_strings) || !IDX_OK(t->next_comm[i], s->n_strings))
			return false;
	return true;
}

static bool wakeups_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__WakeupTable *t = s->wakeups;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, cpu) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, target_cpu) ||
	    !SAME_LEN(t, n, waker_tid) || !SAME_LEN(t, n, waker_pid) || !SAME_LEN(t, n, waker_comm) ||
	    !SAME_LEN(t, n, flags))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX_OK(t->waker_comm[i], s->n_strings))
			return false;
	return true;
}

static bool migrations_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__MigrationTable *t = s->migrations;
	size_t n = t->n_ts_delta;

	return SAME_LEN(t, n, tid) && SAME_LEN(t, n, pid) && SAME_LEN(t, n, from_cpu) && SAME_LEN(t, n, to_cpu);
}

static bool syscalls_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__SyscallTable *t = s->syscalls;
	size_t n = t->n_ts_delta;

	return SAME_LEN(t, n, dur_ns) && SAME_LEN(t, n, tid) && SAME_LEN(t, n, pid) && SAME_LEN(t, n, nr) &&
	       SAME_LEN(t, n, ret) && SAME_LEN(t, n, arg0) && SAME_LEN(t, n, arg1) && SAME_LEN(t, n, arg2) &&
	       SAME_LEN(t, n, cpu) && (t->n_flags == 0 || SAME_LEN(t, n, flags));
}

static bool offcpu_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__OffCpuTable *t = s->offcpu;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, dur_ns) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, state) ||
	    !SAME_LEN(t, n, waker_tid) || !SAME_LEN(t, n, waker_pid) || !SAME_LEN(t, n, waker_comm) ||
	    !SAME_LEN(t, n, kstack) || !SAME_LEN(t, n, ustack) || !SAME_LEN(t, n, cpu))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX_OK(t->waker_comm[i], s->n_strings) || !IDX1_OK(t->kstack[i], s->n_stacks) ||
		    !IDX1_OK(t->ustack[i], s->n_stacks))
			return false;
	return true;
}

static bool samples_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__SampleTable *t = s->samples;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, cpu) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, kstack) ||
	    !SAME_LEN(t, n, ustack))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX1_OK(t->kstack[i], s->n_stacks) || !IDX1_OK(t->ustack[i], s->n_stacks))
			return false;
	return true;
}

static bool task_events_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__TaskEventTable *t = s->task_events;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, kind) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, child_tid) ||
	    !SAME_LEN(t, n, child_pid) || !SAME_LEN(t, n, comm))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX_OK(t->comm[i], s->n_strings))
			return false;
	return true;
}

static bool irqs_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__IrqTable *t = s->irqs;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, dur_ns) || !SAME_LEN(t, n, cpu) || !SAME_LEN(t, n, kind) || !SAME_LEN(t, n, num) ||
	    !SAME_LEN(t, n, name) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, flags))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX_OK(t->name[i], s->n_strings))
			return false;
	return true;
}

static bool reclaims_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__ReclaimTable *t = s->reclaims;
	size_t n = t->n_ts_delta;

	return SAME_LEN(t, n, dur_ns) && SAME_LEN(t, n, tid) && SAME_LEN(t, n, pid) && SAME_LEN(t, n, kind) &&
	       SAME_LEN(t, n, order) && SAME_LEN(t, n, gfp) && SAME_LEN(t, n, result) && SAME_LEN(t, n, cpu);
}

static bool faults_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__FaultTable *t = s->faults;
	size_t n = t->n_ts_delta;

	return SAME_LEN(t, n, dur_ns) && SAME_LEN(t, n, tid) && SAME_LEN(t, n, pid) && SAME_LEN(t, n, faults) &&
	       SAME_LEN(t, n, write) && SAME_LEN(t, n, exec) && SAME_LEN(t, n, prot) && SAME_LEN(t, n, minor) &&
	       SAME_LEN(t, n, major);
}

static bool locks_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__LockTable *t = s->locks;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, dur_ns) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, lock) ||
	    !SAME_LEN(t, n, flags) || !SAME_LEN(t, n, ret) || !SAME_LEN(t, n, kstack) || !SAME_LEN(t, n, cpu) ||
	    !SAME_LEN(t, n, name))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX1_OK(t->kstack[i], s->n_stacks) || !IDX_OK(t->name[i], s->n_strings))
			return false;
	return true;
}

static bool stacks_ok(const Hostprof__Snapshot *s)
{
	for (size_t i = 0; i < s->n_stacks; i++)
		for (size_t j = 0; j < s->stacks[i]->n_frames; j++)
			if (!IDX_OK(s->stacks[i]->frames[j], s->n_frames))
				return false;
	for (size_t i = 0; i < s->n_frames; i++)
		if (!IDX1_OK(s->frames[i]->mapping, s->n_mappings))
			return false;
	return true;
}

/* Every entry of an array of messages is there (a snapshot built in memory may hold NULLs). */
static bool all_set(void *const *p, size_t n)
{
	if (n && !p)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!p[i])
			return false;
	return true;
}

static bool pointers_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__SchedSwitchTable *t = s->switches;

	if ((s->n_strings && !s->strings) || (s->n_syscall_names && !s->syscall_names) ||
	    !all_set((void *const *)s->processes, s->n_processes) || !all_set((void *const *)s->threads, s->n_threads) ||
	    !all_set((void *const *)s->stacks, s->n_stacks) || !all_set((void *const *)s->frames, s->n_frames) ||
	    !all_set((void *const *)s->mappings, s->n_mappings) || !all_set((void *const *)s->markers, s->n_markers))
		return false;
	for (size_t i = 0; i < s->n_processes; i++)
		if (s->processes[i]->n_cmdline && !s->processes[i]->cmdline)
			return false;
	for (size_t i = 0; i < s->n_stacks; i++)
		if (s->stacks[i]->n_frames && !s->stacks[i]->frames)
			return false;
	for (size_t i = 0; i < s->n_frames; i++)
		if (!all_set((void *const *)s->frames[i]->inlined, s->frames[i]->n_inlined))
			return false;
	for (size_t i = 0; i < s->n_mappings; i++)
		if (s->mappings[i]->n_debug_packages && !s->mappings[i]->debug_packages)
			return false;
	if (t && t->n_ts_delta &&
	    (!t->ts_delta || !t->cpu || !t->prev_tid || !t->prev_pid || !t->prev_comm || !t->prev_prio ||
	     !t->prev_state || !t->next_tid || !t->next_pid || !t->next_comm || !t->next_prio))
		return false;
	return true;
}

/* start + the running sum of delta (+ dur) never wraps. */
static bool times_ok(uint64_t start, const uint64_t *delta, const uint64_t *dur, size_t n)
{
	uint64_t ts = start;

	if (n && !delta)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (delta[i] > UINT64_MAX - ts)
			return false;
		ts += delta[i];
		if (dur && dur[i] > UINT64_MAX - ts)
			return false;
	}
	return true;
}

/* The Python threads' frames are indexes into their table; eval_entry, when there, is one per frame. */
static bool python_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__PythonState *py = s->python;

	if (!all_set((void *const *)py->threads, py->n_threads) || !all_set((void *const *)py->frames, py->n_frames))
		return false;
	for (size_t i = 0; i < py->n_threads; i++) {
		const Hostprof__PythonThread *t = py->threads[i];

		if ((t->n_frames && !t->frames) || (t->n_eval_entry && t->n_eval_entry != t->n_frames))
			return false;
		for (size_t k = 0; k < t->n_frames; k++)
			if (!IDX_OK(t->frames[k], py->n_frames))
				return false;
	}
	return true;
}

/* The Python GC table's columns line up. */
static bool pygc_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__PythonGcTable *t = s->python_gc;
	size_t n = t->n_ts_delta;

	return SAME_LEN(t, n, dur_ns) && SAME_LEN(t, n, tid) && SAME_LEN(t, n, pid) && SAME_LEN(t, n, generation) &&
	       SAME_LEN(t, n, collected) && times_ok(s->start_ns, t->ts_delta, t->dur_ns, n);
}

/* The GIL table's columns line up, its stacks' frames and its rows' stacks index their tables. */
static bool gil_ok(const Hostprof__Snapshot *s)
{
	const Hostprof__GilTable *t = s->gil;
	size_t n = t->n_ts_delta;

	if (!SAME_LEN(t, n, dur_ns) || !SAME_LEN(t, n, tid) || !SAME_LEN(t, n, pid) || !SAME_LEN(t, n, holder_tid) ||
	    !SAME_LEN(t, n, first_holder_tid) || !SAME_LEN(t, n, waits) || !SAME_LEN(t, n, blocked_ns) ||
	    !SAME_LEN(t, n, holder_stack))
		return false;
	if (!all_set((void *const *)t->stacks, t->n_stacks) || !all_set((void *const *)t->frames, t->n_frames) ||
	    !all_set((void *const *)t->totals, t->n_totals))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!IDX1_OK(t->holder_stack[i], t->n_stacks))
			return false;
	for (size_t i = 0; i < t->n_stacks; i++) {
		if (t->stacks[i]->n_frames && !t->stacks[i]->frames)
			return false;
		for (size_t k = 0; k < t->stacks[i]->n_frames; k++)
			if (!IDX_OK(t->stacks[i]->frames[k], t->n_frames))
				return false;
	}
	return times_ok(s->start_ns, t->ts_delta, t->dur_ns, n);
}

/* What every exporter may rely on: no missing entries, tables line up, indexes stay in
 * range, and absolute times do not wrap. NULL when it holds, else the part that does not. */
static const char *snapshot_inconsistency(const Hostprof__Snapshot *s)
{
	const uint64_t t0 = s->start_ns;

	if (!pointers_ok(s))
		return "an entry of an array is missing";
	if (s->switches && !switches_ok(s))
		return "the switch table";
	if (s->wakeups && !wakeups_ok(s))
		return "the wakeup table";
	if (s->migrations && !migrations_ok(s))
		return "the migration table";
	if (s->syscalls && !syscalls_ok(s))
		return "the syscall table";
	if (s->offcpu && !offcpu_ok(s))
		return "the off-CPU table";
	if (s->samples && !samples_ok(s))
		return "the sample table";
	if (s->task_events && !task_events_ok(s))
		return "the task event table";
	if (s->irqs && !irqs_ok(s))
		return "the interrupt table";
	if (s->reclaims && !reclaims_ok(s))
		return "the reclaim table";
	if (s->faults && !faults_ok(s))
		return "the fault table";
	if (s->locks && !locks_ok(s))
		return "the lock table";
	if (s->python && !python_ok(s))
		return "the Python state";
	if (s->gil && !gil_ok(s))
		return "the GIL table";
	if (s->python_gc && !pygc_ok(s))
		return "the Python GC table";
	if (!stacks_ok(s))
		return "the stacks";
	/* after the lengths: dur_ns is as long as ts_delta */
	if (s->switches && !times_ok(t0, s->switches->ts_delta, NULL, s->switches->n_ts_delta))
		return "the switch table's times";
	if (s->wakeups && !times_ok(t0, s->wakeups->ts_delta, NULL, s->wakeups->n_ts_delta))
		return "the wakeup table's times";
	if (s->migrations && !times_ok(t0, s->migrations->ts_delta, NULL, s->migrations->n_ts_delta))
		return "the migration table's times";
	if (s->syscalls && !times_ok(t0, s->syscalls->ts_delta, s->syscalls->dur_ns, s->syscalls->n_ts_delta))
		return "the syscall table's times";
	if (s->offcpu && !times_ok(t0, s->offcpu->ts_delta, s->offcpu->dur_ns, s->offcpu->n_ts_delta))
		return "the off-CPU table's times";
	if (s->samples && !times_ok(t0, s->samples->ts_delta, NULL, s->samples->n_ts_delta))
		return "the sample table's times";
	if (s->task_events && !times_ok(t0, s->task_events->ts_delta, NULL, s->task_events->n_ts_delta))
		return "the task event table's times";
	if (s->irqs && !times_ok(t0, s->irqs->ts_delta, s->irqs->dur_ns, s->irqs->n_ts_delta))
		return "the interrupt table's times";
	if (s->reclaims && !times_ok(t0, s->reclaims->ts_delta, s->reclaims->dur_ns, s->reclaims->n_ts_delta))
		return "the reclaim table's times";
	if (s->faults && !times_ok(t0, s->faults->ts_delta, s->faults->dur_ns, s->faults->n_ts_delta))
		return "the fault table's times";
	if (s->locks && !times_ok(t0, s->locks->ts_delta, s->locks->dur_ns, s->locks->n_ts_delta))
		return "the lock table's times";
	return NULL;
}

int hps_unpack(const uint8_t *data, size_t len, Hostprof__Snapshot **ret_snap)
{
	Hostprof__Snapshot *s;

	if (len < HPS_MAGIC_LEN || memcmp(data, HPS_MAGIC, HPS_MAGIC_LEN))
		return -EBADMSG;
	s = hostprof__snapshot__unpack(NULL, len - HPS_MAGIC_LEN, data + HPS_MAGIC_LEN);
	if (!s)
		return -EBADMSG;
	if (snapshot_inconsistency(s)) {
		hostprof__snapshot__free_unpacked(s, NULL);
		return -EBADMSG;
	}
	*ret_snap = s;
	return 0;
}

/* ---- reading the encoding without decoding it (hps_peek) ---- */

struct wire {
	const uint8_t *p, *end;
};

static int wire_varint(struct wire *w, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (w->p >= w->end)
			return -EBADMSG;
		b = *w->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* The next field: its number, and for a length-delimited one its bytes (*ret_sub); a
 * varint's value in *ret_v; fixed-width ones skipped. */
static int wire_field(struct wire *w, uint32_t *ret_field, uint64_t *ret_v, struct wire *ret_sub)
{
	uint64_t key, len;
	int r;

	r = wire_varint(w, &key);
	if (r < 0)
		return r;
	*ret_field = (uint32_t)(key >> 3);
	*ret_sub = (struct wire){};
	switch (key & 7) {
	case 0:
		return wire_varint(w, ret_v);
	case 1:
	case 5:
		len = (key & 7) == 1 ? 8 : 4;
		break;
	case 2:
		r = wire_varint(w, &len);
		if (r < 0)
			return r;
		if (len > (uint64_t)(w->end - w->p))
			return -EBADMSG;
		*ret_sub = (struct wire){ w->p, w->p + len };
		w->p += len;
		return 0;
	default: /* groups: not in snapshot.proto */
		return -EBADMSG;
	}
	if (len > (uint64_t)(w->end - w->p))
		return -EBADMSG;
	w->p += len;
	return 0;
}

/* A name at most this long can be a thread's (comm: 15 bytes); a longer string is none */
#define PEEK_NAME_MAX 64

static bool wire_name_matches(const struct wire *s, const char *glob)
{
	char name[PEEK_NAME_MAX + 1];
	size_t n = s->end - s->p;

	if (n > PEEK_NAME_MAX || memchr(s->p, 0, n))
		return false;
	memcpy(name, s->p, n);
	name[n] = 0;
	return thread_glob_match(glob, name);
}

int hps_peek(const uint8_t *data, size_t len, const char *thread_glob, struct hps_peek *ret)
{
	struct wire w = { data + HPS_MAGIC_LEN, data + len };
	struct hps_peek pk = {};

	if (len < HPS_MAGIC_LEN || memcmp(data, HPS_MAGIC, HPS_MAGIC_LEN))
		return -EBADMSG;
	while (w.p < w.end) {
		struct wire sub;
		uint32_t field;
		uint64_t v = 0;
		int r = wire_field(&w, &field, &v, &sub);

		if (r < 0)
			return r;
		if (field == 5)
			pk.start_ns = v;
		else if (field == 6)
			pk.end_ns = v;
		else if (field == 7)
			pk.pid = (uint32_t)v;
		else if (field == 9 && sub.p && !pk.named) /* strings */
			pk.named = wire_name_matches(&sub, thread_glob);
		else if (field == 11 && sub.p) { /* threads */
			pk.n_threads++;
			while (sub.p < sub.end) {
				struct wire comm;
				uint32_t tf;
				uint64_t tv;

				r = wire_field(&sub, &tf, &tv, &comm);
				if (r < 0)
					return r;
				if (tf == 3 && comm.p && !pk.named)
					pk.named = wire_name_matches(&comm, thread_glob);
			}
		}
	}
	*ret = pk;
	return 0;
}

/* The same checks for a snapshot built in memory. */
int hps_validate(const Hostprof__Snapshot *snap)
{
	return snapshot_inconsistency(snap) ? -EINVAL : 0;
}

const char *hps_inconsistency(const Hostprof__Snapshot *snap)
{
	return snapshot_inconsistency(snap);
}

int hps_read_file(const char *path, Hostprof__Snapshot **ret_snap)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *data = NULL;
	struct stat st;
	size_t off = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > HPS_MAX_FILE)
		return -EFBIG;
	data = malloc(st.st_size ? st.st_size : 1);
	if (!data)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, data + off, st.st_size - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		off += n;
	}
	return hps_unpack(data, off, ret_snap);
}

void hps_free(Hostprof__Snapshot *snap)
{
	if (snap)
		hostprof__snapshot__free_unpacked(snap, NULL);
}

int hps_abs_times(uint64_t start_ns, const uint64_t *delta, size_t n, uint64_t **ret_ts)
{
	uint64_t *ts, cur = start_ns;

	ts = malloc(MAX(n, (size_t)1) * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cur += delta[i];
		ts[i] = cur;
	}
	*ret_ts = ts;
	return 0;
}

int hps_switch_times(const Hostprof__Snapshot *snap, uint64_t **ret_ts)
{
	const Hostprof__SchedSwitchTable *t = snap->switches;

	return hps_abs_times(snap->start_ns, t ? t->ts_delta : NULL, t ? t->n_ts_delta : 0, ret_ts);
}

/* The letter(s) `ps` and the sched_switch tracepoint print for a prev_state value. */
const char *hps_state_name(uint32_t state, char *buf, size_t len)
{
	switch (state) {
	case HPS_STATE_RUNNING:
		return "R";
	case 0x1:
		return "S";
	case HPS_STATE_UNINTERRUPTIBLE:
		return "D";
	case 0x4:
		return "T";
	case 0x8:
		return "t";
	case 0x10:
		return "X";
	case 0x20:
		return "Z";
	case 0x40:
		return "P";
	case 0x80:
		return "I";
	case HPS_STATE_PREEMPTED:
		return "R+";
	}
	snprintf(buf, len, "0x%x", state);
	return buf;
}

const char *hps_thread_comm(const Hostprof__Snapshot *snap, uint32_t tid)
{
	for (size_t i = 0; tid && i < snap->n_threads; i++)
		if (snap->threads[i]->tid == tid && snap->threads[i]->comm)
			return snap->threads[i]->comm;
	return NULL;
}

const char *hps_softirq_name(uint32_t vec)
{
	static const char *const names[] = { "HI",    "TIMER",   "NET_TX", "NET_RX",  "BLOCK",
					     "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };

	return vec < ARRAY_SIZE(names) ? names[vec] : "?";
}

const char *hps_reclaim_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		"?",
		[HPS_RECLAIM_DIRECT] = "direct reclaim",
		[HPS_RECLAIM_MEMCG] = "memcg reclaim",
		[HPS_RECLAIM_COMPACT] = "compaction",
	};

	return kind < ARRAY_SIZE(names) ? names[kind] : "?";
}

const char *hps_lock_kind_name(uint32_t flags)
{
	if (flags & HPS_LOCK_MUTEX)
		return (flags & HPS_LOCK_RT) ? "rt_mutex" : "mutex";
	if (flags & HPS_LOCK_PERCPU)
		return (flags & HPS_LOCK_WRITE) ? "percpu rwsem write" : "percpu rwsem read";
	if (flags & HPS_LOCK_WRITE)
		return (flags & HPS_LOCK_SPIN) ? "rwlock write" : "rwsem write";
	if (flags & HPS_LOCK_READ)
		return (flags & HPS_LOCK_SPIN) ? "rwlock read" : "rwsem read";
	if (flags & HPS_LOCK_RT)
		return "rt_mutex";
	if (flags & HPS_LOCK_SPIN)
		return "spinlock";
	return "lock";
}

void hps_lock_wait_name(const Hostprof__Snapshot *snap, size_t i, char *buf, size_t len)
{
	const Hostprof__LockTable *t = snap->locks;
	const char *lock = t->flags[i] & HPS_LOCK_MMAP ? "mmap_lock" : hps_str(snap, t->name[i]);
	const char *kind = hps_lock_kind_name(t->flags[i]);

	if (*lock)
		snprintf(buf, len, "lock wait: %s (%s)", lock, kind);
	else
		snprintf(buf, len, "lock wait: %s", kind);
}
