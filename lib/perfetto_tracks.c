// SPDX-License-Identifier: GPL-2.0-only
/*
 * Part 5 of the Perfetto trace (export_perfetto.c describes what it holds): the slices and
 * instants on the thread tracks, one packet sequence per track's owner (a thread, or the
 * process for rows without a thread), so that the sequence can carry what the events
 * share:
 *   - TracePacketDefaults: the owner's track as every TrackEvent's default track_uuid, and
 *     the sequence's own clock as every packet's timestamp_clock_id;
 *   - that clock (PERFETTO_TRACK_CLOCK_ID) is incremental: a ClockSnapshot ties it to
 *     BOOTTIME at the owner's first event, and each packet's timestamp is the time since
 *     the sequence's previous one, so the events of an owner go out in time order (a few
 *     bytes instead of eight);
 *   - interning: event names, categories, debug annotation names and string values
 *     (states, wakers' names, stacks as text, hex numbers) are sent once per sequence, in
 *     the InternedData of the first packet that uses them, and referred to by iid after.
 *     An iid means one string in the whole trace. Names made per row (page faults: their
 *     counts) stay inline.
 * The first packet of a sequence says SEQ_INCREMENTAL_STATE_CLEARED and carries the
 * defaults and the owner's TrackDescriptor; the second its ClockSnapshot. The rows of each
 * table are grouped by owner (a counting sort, which keeps each table's time order), and an
 * owner's rows of all tables are merged by time: a slice's END waits in a min-heap, and
 * goes before a BEGIN of the same nanosecond; of two slices that begin together the longer
 * goes first, so it is the outer one. The dispatch threads' stall episodes
 * (report_episodes()), on a child track of the thread's, come last, each thread's on a
 * sequence of their own that does not describe the thread's track again: they come from
 * the diagnosis model, which the client builds on another thread meanwhile
 * (report_model_prebuild()), and nothing before them waits for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hps.h"
#include "macro.h"
#include "perfetto_internal.h"
#include "report.h"
#include "snapview.h"

#define EXPORT_STACK_TEXT 4096 /* the longest stack annotation, bytes */
#define STATES 0x200 /* prev_state values with cached names: HPS_STATE_KNOWN + 1 */

enum {
	TRACK_DESCRIPTOR_UUID = 1,
	TRACK_DESCRIPTOR_NAME = 2,
	TRACK_DESCRIPTOR_PROCESS = 3,
	TRACK_DESCRIPTOR_THREAD = 4,
	TRACK_DESCRIPTOR_PARENT_UUID = 5,
	PROCESS_DESCRIPTOR_PID = 1,
	PROCESS_DESCRIPTOR_PROCESS_NAME = 6,
	THREAD_DESCRIPTOR_PID = 1,
	THREAD_DESCRIPTOR_TID = 2,
	THREAD_DESCRIPTOR_THREAD_NAME = 5,
};

enum {
	DEFAULTS_TRACK_EVENT_DEFAULTS = 11,
	DEFAULTS_TIMESTAMP_CLOCK_ID = 58,
	TRACK_EVENT_DEFAULTS_TRACK_UUID = 11,
};

enum {
	TRACK_EVENT_CATEGORY_IIDS = 3,
	TRACK_EVENT_DEBUG_ANNOTATIONS = 4,
	TRACK_EVENT_TYPE = 9,
	TRACK_EVENT_NAME_IID = 10,
	TRACK_EVENT_TRACK_UUID = 11,
	TRACK_EVENT_NAME = 23,
	TRACK_EVENT_FLOW_IDS = 47, /* fixed64 */
	TRACK_EVENT_TERMINATING_FLOW_IDS = 48,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	DEBUG_ANNOTATION_NAME_IID = 1,
	DEBUG_ANNOTATION_UINT_VALUE = 3,
	DEBUG_ANNOTATION_INT_VALUE = 4,
	DEBUG_ANNOTATION_STRING_VALUE_IID = 17,
};

enum {
	INTERNED_EVENT_CATEGORIES = 1,
	INTERNED_EVENT_NAMES = 2,
	INTERNED_DEBUG_ANNOTATION_NAMES = 3,
	INTERNED_DEBUG_ANNOTATION_STRING_VALUES = 29,
	INTERNED_IID = 1, /* EventCategory, EventName, DebugAnnotationName, InternedString */
	INTERNED_NAME = 2,
};

/* The tables whose rows go on thread tracks. */
/* K_GIL: a GIL wait on its waiter's track; K_GIL_HELD: its end on the holder's, where its flow lands */
/* K_PYGC: a Python garbage collection (gc__start to gc__done) on its thread's track */
enum { K_SYSCALL, K_OFFCPU, K_MIGRATION, K_MARKER, K_RECLAIM, K_LOCK, K_FAULT, K_EPISODE, K_GIL, K_GIL_HELD, K_PYGC, KINDS };

/* The flow of GilTable row i: from the waiter's slice to the holder's instant. */
#define GIL_FLOW_ID(i) (UINT64_C(0x4850470000000000) | (uint64_t)(i))

/* Debug annotation names; iid = position + 1. */
enum {
	A_NR,
	A_ARG0,
	A_ARG1,
	A_ARG2,
	A_RET,
	A_DURATION_NS,
	A_CPU,
	A_STATE,
	A_WAKER_TID,
	A_WAKER_PID,
	A_WAKER_COMM,
	A_KERNEL_STACK,
	A_USER_STACK,
	A_FROM_CPU,
	A_TO_CPU,
	A_DETAIL,
	A_ORDER,
	A_GFP,
	A_RESULT,
	A_LOCK,
	A_FLAGS,
	A_FAULTS,
	A_WRITE,
	A_EXEC,
	A_PROT,
	A_MINOR,
	A_MAJOR,
	A_MADE_OF,
	A_HOLDER_TID,
	A_HOLDER_FUNCTION,
	A_WAITS,
	A_BLOCKED_NS,
	A_WAITER_TID,
	A_BLOCKED,
	A_GENERATION,
	A_COLLECTED,
	ANNOTATIONS,
};

static const char *const annotation_names[ANNOTATIONS] = {
	[A_NR] = "nr",
	[A_ARG0] = "arg0",
	[A_ARG1] = "arg1",
	[A_ARG2] = "arg2",
	[A_RET] = "ret",
	[A_DURATION_NS] = "duration_ns",
	[A_CPU] = "cpu",
	[A_STATE] = "state",
	[A_WAKER_TID] = "waker_tid",
	[A_WAKER_PID] = "waker_pid",
	[A_WAKER_COMM] = "waker_comm",
	[A_KERNEL_STACK] = "kernel_stack",
	[A_USER_STACK] = "user_stack",
	[A_FROM_CPU] = "from_cpu",
	[A_TO_CPU] = "to_cpu",
	[A_DETAIL] = "detail",
	[A_ORDER] = "order",
	[A_GFP] = "gfp",
	[A_RESULT] = "result",
	[A_LOCK] = "lock",
	[A_FLAGS] = "flags",
	[A_FAULTS] = "faults",
	[A_WRITE] = "write",
	[A_EXEC] = "exec",
	[A_PROT] = "prot",
	[A_MINOR] = "minor",
	[A_MAJOR] = "major",
	[A_MADE_OF] = "made_of",
	[A_HOLDER_TID] = "holder_tid",
	[A_HOLDER_FUNCTION] = "holder_function",
	[A_WAITS] = "futex_waits",
	[A_BLOCKED_NS] = "blocked_ns",
	[A_WAITER_TID] = "waiter_tid",
	[A_BLOCKED] = "blocked",
	[A_GENERATION] = "generation",
	[A_COLLECTED] = "collected",
};

/* Interned strings of one kind: iid = position + 1, one string per iid in the trace. */
struct strtab {
	uint32_t *slots; /* open addressing: iid, 0 empty */
	size_t nslots;
	char *arena;
	size_t arena_len, arena_cap;
	size_t *off;
	uint32_t *len, *hash, *sent; /* by iid - 1; sent: the sequence that last got it */
	size_t n, cap;
};

/* A slice's END, waiting for its time. */
struct end {
	uint64_t ts, uuid; /* uuid 0: the sequence's default track */
};

struct tracks {
	struct pf_exporter *e;
	struct pbw data; /* the InternedData of the packet being written */
	uint32_t seq; /* the sequence being written */
	uint64_t last_ts; /* its clock */
	struct strtab names, cats, values;
	uint32_t annotation_sent[ANNOTATIONS];
	uint64_t cat_syscall, cat_sched, cat_marker, cat_memory, cat_lock, cat_stall, cat_python;
	struct report_episode *ep; /* the dispatch threads' stall episodes */
	size_t n_ep;
	bool *described; /* by owner: its track described by a sequence before */
	/* iids by what they are made of (0: not yet) */
	uint64_t *syscall_name; /* by nr, below n_syscall_names */
	uint64_t state_name[STATES], state_value[STATES];
	uint64_t *comm_value; /* by index into Snapshot.strings */
	uint64_t *stack_value; /* by stack index + 1 */
	/* the rows: absolute times per table, row numbers grouped by owner and table */
	const uint64_t *ts[KINDS];
	uint64_t *owned_ts[KINDS];
	size_t nrows[KINDS];
	uint32_t *order;
	size_t *start; /* runs: start[owner * KINDS + kind] .. start[owner * KINDS + kind + 1] */
	size_t nowners;
	struct end *ends; /* a min-heap by ts */
	size_t nends, ends_cap;
	char text[EXPORT_STACK_TEXT];
};

/* ---- Interning ------------------------------------------------------------------------------ */

static uint32_t hash_bytes(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static void strtab_free(struct strtab *st)
{
	free(st->slots);
	free(st->arena);
	free(st->off);
	free(st->len);
	free(st->hash);
	free(st->sent);
}

static int strtab_rehash(struct strtab *st, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t k = 0; k < st->n; k++) {
		size_t i = st->hash[k] & (nslots - 1);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)k + 1;
	}
	free(st->slots);
	st->slots = slots;
	st->nslots = nslots;
	return 0;
}

static int strtab_add(struct strtab *st, const char *s, size_t len, uint32_t h)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		size_t *off = reallocarray(st->off, cap, sizeof(*off));
		uint32_t *l, *hh, *sent;

		if (!off)
			return -ENOMEM;
		st->off = off;
		if (!(l = reallocarray(st->len, cap, sizeof(*l))))
			return -ENOMEM;
		st->len = l;
		if (!(hh = reallocarray(st->hash, cap, sizeof(*hh))))
			return -ENOMEM;
		st->hash = hh;
		if (!(sent = reallocarray(st->sent, cap, sizeof(*sent))))
			return -ENOMEM;
		st->sent = sent;
		st->cap = cap;
	}
	if (st->arena_cap - st->arena_len < len) {
		size_t cap = MAX(2 * st->arena_cap, st->arena_len + len + 4096);
		char *a = realloc(st->arena, cap);

		if (!a)
			return -ENOMEM;
		st->arena = a;
		st->arena_cap = cap;
	}
	memcpy(st->arena + st->arena_len, s, len);
	st->off[st->n] = st->arena_len;
	st->len[st->n] = (uint32_t)len;
	st->hash[st->n] = h;
	st->sent[st->n] = 0;
	st->arena_len += len;
	st->n++;
	return 0;
}

/* The iid of s, added on first sight; 0 when out of memory. */
static uint64_t strtab_intern(struct strtab *st, const char *s, size_t len)
{
	uint32_t h = hash_bytes(s, len);
	size_t i;

	if (len > UINT32_MAX)
		return 0;
	if (2 * (st->n + 1) > st->nslots && strtab_rehash(st, st->nslots ? 2 * st->nslots : 256) < 0)
		return 0;
	for (i = h & (st->nslots - 1); st->slots[i]; i = (i + 1) & (st->nslots - 1)) {
		size_t k = st->slots[i] - 1;

		if (st->hash[k] == h && st->len[k] == len && !memcmp(st->arena + st->off[k], s, len))
			return k + 1;
	}
	if (strtab_add(st, s, len, h) < 0)
		return 0;
	st->slots[i] = (uint32_t)st->n;
	return st->n;
}

/* An interned entry {iid, name} of the given InternedData field. */
static void write_interned(struct pbw *w, uint32_t field, uint64_t iid, const char *s, size_t len)
{
	size_t entry = pbw_begin(w, field);

	pbw_varint(w, INTERNED_IID, iid);
	pbw_bytes(w, INTERNED_NAME, s, len);
	pbw_end(w, entry);
}

/* iid, sent in this packet's InternedData unless this sequence had it. 0 stays 0. */
static uint64_t strtab_use(struct tracks *t, struct strtab *st, uint32_t field, uint64_t iid)
{
	if (iid && st->sent[iid - 1] != t->seq) {
		st->sent[iid - 1] = t->seq;
		write_interned(&t->data, field, iid, st->arena + st->off[iid - 1], st->len[iid - 1]);
	}
	return iid;
}

static uint64_t name_iid(struct tracks *t, uint64_t iid)
{
	return strtab_use(t, &t->names, INTERNED_EVENT_NAMES, iid);
}

static uint64_t value_iid(struct tracks *t, uint64_t iid)
{
	return strtab_use(t, &t->values, INTERNED_DEBUG_ANNOTATION_STRING_VALUES, iid);
}

static uint64_t intern_value(struct tracks *t, const char *s)
{
	return strtab_intern(&t->values, s, strlen(s));
}

/* The iid a cache holds, or the one of the string `make` writes into t->text. */
#define CACHED(t, slot, st, make)                                                 \
	({                                                                        \
		uint64_t *slot_ = (slot);                                         \
		if (!*slot_) {                                                    \
			make;                                                     \
			*slot_ = strtab_intern(st, (t)->text, strlen((t)->text)); \
		}                                                                 \
		*slot_;                                                           \
	})

/* ---- Packets ------------------------------------------------------------------------------ */

/* Opens a TrackEvent packet at ts on the current sequence; its track_event token. */
static size_t event_begin(struct tracks *t, uint64_t ts, uint32_t type, uint64_t uuid, uint64_t category,
			  size_t *ret_packet)
{
	struct pbw *w = &t->e->w;
	size_t packet = pbw_begin(w, TRACE_PACKET), te;

	pbw_varint(w, PACKET_TIMESTAMP, ts - t->last_ts);
	t->last_ts = ts;
	pf_packet_ids(t->e, t->seq);
	te = pbw_begin(w, PACKET_TRACK_EVENT);
	pbw_varint(w, TRACK_EVENT_TYPE, type);
	if (uuid)
		pbw_varint(w, TRACK_EVENT_TRACK_UUID, uuid);
	if (category)
		pbw_varint(w, TRACK_EVENT_CATEGORY_IIDS,
			   strtab_use(t, &t->cats, INTERNED_EVENT_CATEGORIES, category));
	*ret_packet = packet;
	return te;
}

/* Closes it, with the interned entries its event introduced. */
static int event_end(struct tracks *t, size_t packet, size_t te)
{
	struct pbw *w = &t->e->w;

	pbw_end(w, te);
	if (t->data.err)
		return t->data.err;
	if (t->data.len) {
		pbw_bytes(w, PACKET_INTERNED_DATA, t->data.buf, t->data.len);
		pbw_reset(&t->data);
	}
	return pf_packet_end(t->e, packet);
}

static void event_name(struct tracks *t, uint64_t iid)
{
	if (iid)
		pbw_varint(&t->e->w, TRACK_EVENT_NAME_IID, name_iid(t, iid));
	else if (!t->e->w.err)
		t->e->w.err = -ENOMEM;
}

static size_t annotation_begin(struct tracks *t, unsigned int a)
{
	struct pbw *w = &t->e->w;
	size_t da = pbw_begin(w, TRACK_EVENT_DEBUG_ANNOTATIONS);

	if (t->annotation_sent[a] != t->seq) {
		t->annotation_sent[a] = t->seq;
		write_interned(&t->data, INTERNED_DEBUG_ANNOTATION_NAMES, a + 1, annotation_names[a],
			       strlen(annotation_names[a]));
	}
	pbw_varint(w, DEBUG_ANNOTATION_NAME_IID, a + 1);
	return da;
}

static void annotate_uint(struct tracks *t, unsigned int a, uint64_t v)
{
	size_t da = annotation_begin(t, a);

	pbw_varint(&t->e->w, DEBUG_ANNOTATION_UINT_VALUE, v);
	pbw_end(&t->e->w, da);
}

static void annotate_int(struct tracks *t, unsigned int a, int64_t v)
{
	size_t da = annotation_begin(t, a);

	pbw_int(&t->e->w, DEBUG_ANNOTATION_INT_VALUE, v);
	pbw_end(&t->e->w, da);
}

/* A string value by its iid in t->values. */
static void annotate_value(struct tracks *t, unsigned int a, uint64_t iid)
{
	size_t da;

	if (!iid) {
		if (!t->e->w.err)
			t->e->w.err = -ENOMEM;
		return;
	}
	da = annotation_begin(t, a);
	pbw_varint(&t->e->w, DEBUG_ANNOTATION_STRING_VALUE_IID, value_iid(t, iid));
	pbw_end(&t->e->w, da);
}

static void annotate_hex(struct tracks *t, unsigned int a, uint64_t v)
{
	snprintf(t->text, sizeof(t->text), "0x%" PRIx64, v);
	annotate_value(t, a, intern_value(t, t->text));
}

/* ---- Stacks as text ------------------------------------------------------------------------- */

/* One frame as text: its function, else module+0xoffset, else "[unknown]". */
static int frame_text(const Hostprof__Snapshot *s, uint32_t idx, char *buf, size_t len)
{
	const Hostprof__Frame *f = s->frames[idx];
	const char *file, *slash;

	if (f->python)
		return python_frame_text(f, buf, len);
	if (f->function && *f->function)
		return snprintf(buf, len, "%s", f->function);
	if (f->mapping) {
		file = s->mappings[f->mapping - 1]->file;
		if (file && *file) {
			slash = strrchr(file, '/');
			return snprintf(buf, len, "%s+0x%" PRIx64, slash ? slash + 1 : file,
					f->module_offset);
		}
	}
	return snprintf(buf, len, "[unknown]");
}

/*
 * Stack stack_ref (index + 1) as text in t->text: innermost first, " <- " between frames,
 * " ..." at the end of a stack that was cut, at capture or here for its length.
 */
static void stack_text(struct tracks *t, uint32_t stack_ref)
{
	static const char more[] = " ...";
	const Hostprof__Stack *st = t->e->snap->stacks[stack_ref - 1];
	size_t i, len = 0, cap = sizeof(t->text) - sizeof(more);
	int n;

	for (i = 0; i < st->n_frames; i++) {
		if (i) {
			n = snprintf(t->text + len, cap - len, " <- ");
			if (n < 0 || (size_t)n >= cap - len)
				break;
			len += n;
		}
		n = frame_text(t->e->snap, st->frames[i], t->text + len, cap - len);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += n;
	}
	t->text[len] = '\0'; /* drops a part that did not fit */
	if (i < st->n_frames || st->truncated)
		memcpy(t->text + len, more, sizeof(more));
}

static uint64_t stack_value(struct tracks *t, uint32_t stack_ref)
{
	return CACHED(t, &t->stack_value[stack_ref], &t->values, stack_text(t, stack_ref));
}

static uint64_t state_value(struct tracks *t, uint32_t state)
{
	char buf[16];

	if (state >= STATES)
		return intern_value(t, hps_state_name(state, buf, sizeof(buf)));
	return CACHED(t, &t->state_value[state], &t->values,
		      snprintf(t->text, sizeof(t->text), "%s", hps_state_name(state, buf, sizeof(buf))));
}

/* ---- The rows ------------------------------------------------------------------------------ */

static uint64_t row_dur(const struct tracks *t, unsigned int kind, size_t i)
{
	const Hostprof__Snapshot *s = t->e->snap;

	switch (kind) {
	case K_SYSCALL:
		return s->syscalls->dur_ns[i];
	case K_OFFCPU:
		return s->offcpu->dur_ns[i];
	case K_RECLAIM:
		return s->reclaims->dur_ns[i];
	case K_LOCK:
		return s->locks->dur_ns[i];
	case K_FAULT:
		return s->faults->dur_ns[i];
	case K_EPISODE:
		return t->ep[i].end - t->ep[i].begin;
	case K_GIL:
		return s->gil->dur_ns[i];
	case K_PYGC:
		return s->python_gc->dur_ns[i];
	default:
		return 0; /* instants */
	}
}

static int push_end(struct tracks *t, uint64_t ts, uint64_t uuid)
{
	struct end x = { .ts = ts, .uuid = uuid };
	size_t i;

	if (t->nends == t->ends_cap) {
		size_t cap = t->ends_cap ? 2 * t->ends_cap : 16;
		struct end *p = reallocarray(t->ends, cap, sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->ends = p;
		t->ends_cap = cap;
	}
	for (i = t->nends++; i > 0 && x.ts < t->ends[(i - 1) / 2].ts; i = (i - 1) / 2)
		t->ends[i] = t->ends[(i - 1) / 2];
	t->ends[i] = x;
	return 0;
}

static struct end pop_end(struct tracks *t)
{
	struct end top = t->ends[0], last = t->ends[--t->nends];
	size_t i = 0, child;

	for (; (child = 2 * i + 1) < t->nends; i = child) {
		if (child + 1 < t->nends && t->ends[child + 1].ts < t->ends[child].ts)
			child++;
		if (t->ends[child].ts >= last.ts)
			break;
		t->ends[i] = t->ends[child];
	}
	if (t->nends)
		t->ends[i] = last;
	return top;
}

static int write_end(struct tracks *t, const struct end *x)
{
	size_t packet, te = event_begin(t, x->ts, TYPE_SLICE_END, x->uuid, 0, &packet);

	return event_end(t, packet, te);
}

/* A BEGIN now, and its END into the heap. */
static int slice_done(struct tracks *t, size_t packet, size_t te, uint64_t ts, uint64_t dur, uint64_t uuid)
{
	int r = event_end(t, packet, te);

	return r < 0 ? r : push_end(t, ts + dur, uuid);
}

static int write_syscall(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__Snapshot *s = t->e->snap;
	const Hostprof__SyscallTable *sc = s->syscalls;
	uint32_t nr = sc->nr[i];
	const char *sys = nr < s->n_syscall_names ? s->syscall_names[nr] : NULL;
	size_t packet, te;
	uint64_t iid;

	if (sys && *sys) {
		iid = CACHED(t, &t->syscall_name[nr], &t->names,
			     snprintf(t->text, sizeof(t->text), "%s", sys));
	} else {
		snprintf(t->text, sizeof(t->text), "syscall_%" PRIu32, nr);
		iid = strtab_intern(&t->names, t->text, strlen(t->text));
	}
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_syscall, &packet);
	event_name(t, iid);
	annotate_uint(t, A_NR, nr);
	annotate_uint(t, A_ARG0, sc->arg0[i]);
	annotate_uint(t, A_ARG1, sc->arg1[i]);
	annotate_uint(t, A_ARG2, sc->arg2[i]);
	if (!(hps_syscall_flags(sc, i) & HPS_SYSCALL_RET_UNKNOWN))
		annotate_int(t, A_RET, sc->ret[i]);
	if (hps_syscall_flags(sc, i) & HPS_SYSCALL_BLOCKED)
		annotate_uint(t, A_BLOCKED, 1);
	annotate_uint(t, A_DURATION_NS, sc->dur_ns[i]);
	annotate_uint(t, A_CPU, sc->cpu[i]);
	return slice_done(t, packet, te, ts, sc->dur_ns[i], 0);
}

static int write_offcpu(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__Snapshot *s = t->e->snap;
	const Hostprof__OffCpuTable *o = s->offcpu;
	uint32_t state = o->state[i];
	size_t packet, te;
	uint64_t iid;
	char buf[16];

	if (state < STATES)
		iid = CACHED(t, &t->state_name[state], &t->names,
			     snprintf(t->text, sizeof(t->text), "off-cpu %s",
				      hps_state_name(state, buf, sizeof(buf))));
	else
		iid = strtab_intern(&t->names, t->text,
				    (size_t)snprintf(t->text, sizeof(t->text), "off-cpu %s",
						     hps_state_name(state, buf, sizeof(buf))));
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_sched, &packet);
	event_name(t, iid);
	annotate_value(t, A_STATE, state_value(t, state));
	annotate_uint(t, A_DURATION_NS, o->dur_ns[i]);
	if (o->waker_tid[i]) {
		uint32_t c = o->waker_comm[i];

		annotate_uint(t, A_WAKER_TID, o->waker_tid[i]);
		annotate_uint(t, A_WAKER_PID, o->waker_pid[i]);
		annotate_value(t, A_WAKER_COMM,
			       CACHED(t, &t->comm_value[c], &t->values,
				      snprintf(t->text, sizeof(t->text), "%s", pf_string(s, c))));
	}
	annotate_uint(t, A_CPU, o->cpu[i]);
	if (o->kstack[i])
		annotate_value(t, A_KERNEL_STACK, stack_value(t, o->kstack[i]));
	if (o->ustack[i])
		annotate_value(t, A_USER_STACK, stack_value(t, o->ustack[i]));
	return slice_done(t, packet, te, ts, o->dur_ns[i], 0);
}

static int write_migration(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__MigrationTable *m = t->e->snap->migrations;
	size_t packet, te;
	int n;

	n = snprintf(t->text, sizeof(t->text), "migrate %" PRIu32 "->%" PRIu32, m->from_cpu[i], m->to_cpu[i]);
	te = event_begin(t, ts, TYPE_INSTANT, 0, t->cat_sched, &packet);
	event_name(t, strtab_intern(&t->names, t->text, (size_t)n));
	annotate_uint(t, A_FROM_CPU, m->from_cpu[i]);
	annotate_uint(t, A_TO_CPU, m->to_cpu[i]);
	return event_end(t, packet, te);
}

static int write_marker(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__Marker *m = t->e->snap->markers[i];
	const char *name = m->name && *m->name ? m->name : "marker";
	size_t packet, te;

	te = event_begin(t, ts, TYPE_INSTANT, 0, t->cat_marker, &packet);
	event_name(t, strtab_intern(&t->names, name, strlen(name)));
	if (m->detail && *m->detail)
		annotate_value(t, A_DETAIL, intern_value(t, m->detail));
	return event_end(t, packet, te);
}

static int write_reclaim(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__ReclaimTable *rc = t->e->snap->reclaims;
	const char *name = hps_reclaim_kind_name(rc->kind[i]);
	size_t packet, te;

	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_memory, &packet);
	event_name(t, strtab_intern(&t->names, name, strlen(name)));
	annotate_int(t, A_ORDER, rc->order[i]);
	annotate_hex(t, A_GFP, rc->gfp[i]);
	annotate_int(t, A_RESULT, rc->result[i]);
	annotate_uint(t, A_DURATION_NS, rc->dur_ns[i]);
	annotate_uint(t, A_CPU, rc->cpu[i]);
	return slice_done(t, packet, te, ts, rc->dur_ns[i], 0);
}

static int write_lock(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__Snapshot *s = t->e->snap;
	const Hostprof__LockTable *l = s->locks;
	size_t packet, te;

	hps_lock_wait_name(s, i, t->text, sizeof(t->text));
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_lock, &packet);
	event_name(t, strtab_intern(&t->names, t->text, strlen(t->text)));
	annotate_hex(t, A_LOCK, l->lock[i]);
	annotate_hex(t, A_FLAGS, l->flags[i]);
	annotate_int(t, A_RET, l->ret[i]);
	annotate_uint(t, A_DURATION_NS, l->dur_ns[i]);
	annotate_uint(t, A_CPU, l->cpu[i]);
	if (l->kstack[i])
		annotate_value(t, A_KERNEL_STACK, stack_value(t, l->kstack[i]));
	return slice_done(t, packet, te, ts, l->dur_ns[i], 0);
}

/*
 * A page-fault period, on a child track of the thread's (described before its first
 * period): periods are long and would break the nesting of the thread's own slices.
 * Without a thread, on the process track.
 */
static int write_fault(struct tracks *t, size_t i, uint64_t ts, bool *described)
{
	const Hostprof__FaultTable *f = t->e->snap->faults;
	uint64_t total = f->faults[i] ? f->faults[i] : (uint64_t)f->minor[i] + f->major[i], uuid = 0;
	struct pbw *w = &t->e->w;
	size_t packet, te, td;
	int r;

	if (f->tid[i]) {
		uuid = FAULTS_TRACK_UUID(t->e, f->tid[i]);
		if (!*described) {
			packet = pf_packet_begin(t->e, 0, t->seq);
			td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
			pbw_varint(w, TRACK_DESCRIPTOR_UUID, uuid);
			pbw_varint(w, TRACK_DESCRIPTOR_PARENT_UUID, THREAD_TRACK_UUID(t->e, f->tid[i]));
			pbw_string(w, TRACK_DESCRIPTOR_NAME, "page faults");
			pbw_end(w, td);
			*described = true;
			r = pf_packet_end(t->e, packet);
			if (r < 0)
				return r;
		}
	}
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, uuid, t->cat_memory, &packet);
	snprintf(t->text, sizeof(t->text), "page faults: %" PRIu64 " (%" PRIu32 " major)", total,
		 f->major[i]);
	pbw_string(w, TRACK_EVENT_NAME, t->text); /* made of its counts: not worth interning */
	annotate_uint(t, A_FAULTS, f->faults[i]);
	annotate_uint(t, A_WRITE, f->write[i]);
	annotate_uint(t, A_EXEC, f->exec[i]);
	annotate_uint(t, A_PROT, f->prot[i]);
	annotate_uint(t, A_MINOR, f->minor[i]);
	annotate_uint(t, A_MAJOR, f->major[i]);
	annotate_uint(t, A_DURATION_NS, f->dur_ns[i]);
	return slice_done(t, packet, te, ts, f->dur_ns[i], uuid);
}

/* A stall episode of a dispatch thread, on the "stall episodes" child track of its thread's
 * (described before its first episode). */
static int write_episode(struct tracks *t, size_t i, uint64_t ts, bool *described)
{
	const struct report_episode *ep = &t->ep[i];
	uint64_t uuid = EPISODES_TRACK_UUID(t->e, ep->tid);
	struct pbw *w = &t->e->w;
	size_t packet, te, td;
	int r;

	if (!*described) {
		packet = pf_packet_begin(t->e, 0, t->seq);
		td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
		pbw_varint(w, TRACK_DESCRIPTOR_UUID, uuid);
		pbw_varint(w, TRACK_DESCRIPTOR_PARENT_UUID, THREAD_TRACK_UUID(t->e, ep->tid));
		pbw_string(w, TRACK_DESCRIPTOR_NAME, "stall episodes");
		pbw_end(w, td);
		*described = true;
		r = pf_packet_end(t->e, packet);
		if (r < 0)
			return r;
	}
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, uuid, t->cat_stall, &packet);
	pbw_string(w, TRACK_EVENT_NAME, ep->name); /* made of its numbers: not worth interning */
	annotate_value(t, A_MADE_OF, intern_value(t, ep->detail));
	annotate_uint(t, A_DURATION_NS, ep->end - ep->begin);
	return slice_done(t, packet, te, ts, ep->end - ep->begin, uuid);
}

/* The holder's function of GilTable row i, "hold_burst (gil.py:56)", into t->text; 0: not read. */
static size_t gil_function_text(struct tracks *t, size_t i)
{
	const Hostprof__GilTable *g = t->e->snap->gil;
	const Hostprof__GilStack *st = g->holder_stack[i] ? g->stacks[g->holder_stack[i] - 1] : NULL;
	const Hostprof__PythonFrame *fr = st && st->n_frames ? g->frames[st->frames[0]] : NULL;
	int n;

	if (!fr)
		return 0;
	n = snprintf(t->text, sizeof(t->text), "%s (%s:%" PRIu32 ")%s", fr->function ? fr->function : "?",
		     fr->file ? fr->file : "?", fr->line, st->when == 1 ? ", read after the wait" : "");
	return n < 0 ? 0 : MIN((size_t)n, sizeof(t->text) - 1);
}

/* A GIL wait on its waiter's track, with a flow to its holder's track. */
static int write_gil(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__GilTable *g = t->e->snap->gil;
	struct pbw *w = &t->e->w;
	size_t packet, te, n;

	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_python, &packet);
	event_name(t, strtab_intern(&t->names, "GIL wait", strlen("GIL wait")));
	annotate_uint(t, A_HOLDER_TID, g->holder_tid[i]);
	n = gil_function_text(t, i);
	if (n)
		annotate_value(t, A_HOLDER_FUNCTION, intern_value(t, t->text));
	annotate_uint(t, A_WAITS, g->waits[i]);
	annotate_uint(t, A_BLOCKED_NS, g->blocked_ns[i]);
	annotate_uint(t, A_DURATION_NS, g->dur_ns[i]);
	if (g->holder_tid[i] && snapview_index(&t->e->view, g->holder_tid[i]) >= 0)
		pbw_fixed64(w, TRACK_EVENT_FLOW_IDS, GIL_FLOW_ID(i));
	return slice_done(t, packet, te, ts, g->dur_ns[i], 0);
}

/* Where a GIL wait ended, on the holder's track: the flow from the waiter's slice lands here. */
static int write_gil_held(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__GilTable *g = t->e->snap->gil;
	struct pbw *w = &t->e->w;
	size_t packet, te, n;

	if (!g->holder_tid[i] || snapview_index(&t->e->view, g->holder_tid[i]) < 0)
		return 0; /* its holder not known: no flow either */
	te = event_begin(t, ts, TYPE_INSTANT, 0, t->cat_python, &packet);
	event_name(t, strtab_intern(&t->names, "held the GIL", strlen("held the GIL")));
	annotate_uint(t, A_WAITER_TID, g->tid[i]);
	n = gil_function_text(t, i);
	if (n)
		annotate_value(t, A_HOLDER_FUNCTION, intern_value(t, t->text));
	pbw_fixed64(w, TRACK_EVENT_TERMINATING_FLOW_IDS, GIL_FLOW_ID(i));
	return event_end(t, packet, te);
}

/* A Python garbage collection on its thread's track: "Python GC (gen 2)", what it collected. */
static int write_pygc(struct tracks *t, size_t i, uint64_t ts)
{
	const Hostprof__PythonGcTable *g = t->e->snap->python_gc;
	size_t packet, te;
	int n;

	n = snprintf(t->text, sizeof(t->text), "Python GC (gen %" PRId32 ")", g->generation[i]);
	te = event_begin(t, ts, TYPE_SLICE_BEGIN, 0, t->cat_python, &packet);
	event_name(t, strtab_intern(&t->names, t->text, n < 0 ? 0 : MIN((size_t)n, sizeof(t->text) - 1)));
	annotate_int(t, A_GENERATION, g->generation[i]);
	annotate_int(t, A_COLLECTED, g->collected[i]);
	annotate_uint(t, A_DURATION_NS, g->dur_ns[i]);
	return slice_done(t, packet, te, ts, g->dur_ns[i], 0);
}

/* ---- Owners and their sequences ------------------------------------------------------------- */

static uint32_t row_tid(const struct tracks *t, unsigned int kind, size_t i)
{
	const Hostprof__Snapshot *s = t->e->snap;

	switch (kind) {
	case K_SYSCALL:
		return s->syscalls->tid[i];
	case K_OFFCPU:
		return s->offcpu->tid[i];
	case K_MIGRATION:
		return s->migrations->tid[i];
	case K_MARKER:
		return s->markers[i]->tid;
	case K_RECLAIM:
		return s->reclaims->tid[i];
	case K_LOCK:
		return s->locks->tid[i];
	case K_EPISODE:
		return t->ep[i].tid;
	case K_GIL:
		return s->gil->tid[i];
	case K_GIL_HELD:
		return s->gil->holder_tid[i]; /* 0 (not known): the process track */
	case K_PYGC:
		return s->python_gc->tid[i];
	default:
		return s->faults->tid[i];
	}
}

static uint32_t row_pid(const struct tracks *t, unsigned int kind, size_t i)
{
	const Hostprof__Snapshot *s = t->e->snap;

	switch (kind) {
	case K_SYSCALL:
		return s->syscalls->pid[i];
	case K_OFFCPU:
		return s->offcpu->pid[i];
	case K_MIGRATION:
		return s->migrations->pid[i];
	case K_MARKER:
		return s->pid;
	case K_RECLAIM:
		return s->reclaims->pid[i];
	case K_LOCK:
		return s->locks->pid[i];
	case K_EPISODE:
		return t->ep[i].pid;
	case K_GIL:
	case K_GIL_HELD:
		return s->gil->pid[i];
	case K_PYGC:
		return s->python_gc->pid[i];
	default:
		return s->faults->pid[i];
	}
}

/* Absolute times of every table; the markers' and the episodes' are their own. */
static int load_times(struct tracks *t)
{
	const Hostprof__Snapshot *s = t->e->snap;
	const struct {
		const uint64_t *delta;
		size_t n;
	} tables[KINDS] = {
		[K_SYSCALL] = { s->syscalls ? s->syscalls->ts_delta : NULL,
				s->syscalls ? s->syscalls->n_ts_delta : 0 },
		[K_OFFCPU] = { s->offcpu ? s->offcpu->ts_delta : NULL,
			       s->offcpu ? s->offcpu->n_ts_delta : 0 },
		[K_MIGRATION] = { s->migrations ? s->migrations->ts_delta : NULL,
				  s->migrations ? s->migrations->n_ts_delta : 0 },
		[K_RECLAIM] = { s->reclaims ? s->reclaims->ts_delta : NULL,
				s->reclaims ? s->reclaims->n_ts_delta : 0 },
		[K_LOCK] = { s->locks ? s->locks->ts_delta : NULL, s->locks ? s->locks->n_ts_delta : 0 },
		[K_FAULT] = { s->faults ? s->faults->ts_delta : NULL, s->faults ? s->faults->n_ts_delta : 0 },
		[K_GIL] = { s->gil ? s->gil->ts_delta : NULL, s->gil ? s->gil->n_ts_delta : 0 },
		[K_PYGC] = { s->python_gc ? s->python_gc->ts_delta : NULL, s->python_gc ? s->python_gc->n_ts_delta : 0 },
	};
	int r;

	for (unsigned int k = 0; k < KINDS; k++) {
		if (k == K_MARKER) {
			t->nrows[k] = s->n_markers;
			t->owned_ts[k] = malloc(MAX(s->n_markers, (size_t)1) * sizeof(uint64_t));
			if (!t->owned_ts[k])
				return -ENOMEM;
			for (size_t i = 0; i < s->n_markers; i++)
				t->owned_ts[k][i] = s->markers[i]->ts;
		} else if (k == K_EPISODE) { /* each thread's in time order */
			t->nrows[k] = t->n_ep;
			t->owned_ts[k] = malloc(MAX(t->n_ep, (size_t)1) * sizeof(uint64_t));
			if (!t->owned_ts[k])
				return -ENOMEM;
			for (size_t i = 0; i < t->n_ep; i++)
				t->owned_ts[k][i] = t->ep[i].begin;
		} else if (k == K_GIL_HELD) { /* where each wait ended: sorted per owner below */
			size_t n = s->gil ? s->gil->n_ts_delta : 0;

			t->nrows[k] = n;
			t->owned_ts[k] = malloc(MAX(n, (size_t)1) * sizeof(uint64_t));
			if (!t->owned_ts[k])
				return -ENOMEM;
			for (size_t i = 0; i < n; i++)
				t->owned_ts[k][i] = t->ts[K_GIL][i] + s->gil->dur_ns[i];
		} else {
			t->nrows[k] = tables[k].n;
			r = hps_abs_times(s->start_ns, tables[k].delta, tables[k].n, &t->owned_ts[k]);
			if (r < 0)
				return r;
		}
		if (t->nrows[k] > UINT32_MAX)
			return -EINVAL;
		t->ts[k] = t->owned_ts[k];
	}
	return 0;
}

/* The rows grouped by owner (the thread's position in the view; the process after them),
 * and within an owner by table, each in its table's order. */
static int group_rows(struct tracks *t)
{
	_cleanup_free_ uint32_t *keys = NULL;
	size_t total = 0, nkeys, pos = 0;

	for (unsigned int k = 0; k < KINDS; k++)
		total += t->nrows[k];
	t->nowners = t->e->view.n_threads + 1;
	nkeys = t->nowners * KINDS;
	keys = malloc(MAX(total, (size_t)1) * sizeof(*keys));
	t->order = malloc(MAX(total, (size_t)1) * sizeof(*t->order));
	t->start = calloc(nkeys + 1, sizeof(*t->start));
	if (!keys || !t->order || !t->start)
		return -ENOMEM;

	for (unsigned int k = 0; k < KINDS; k++)
		for (size_t i = 0; i < t->nrows[k]; i++) {
			uint32_t tid = row_tid(t, k, i);
			ssize_t owner =
				tid ? snapview_index(&t->e->view, tid) : (ssize_t)t->e->view.n_threads;

			if (owner < 0) /* snapview_init() saw every tid */
				return -EINVAL;
			keys[pos] = (uint32_t)((size_t)owner * KINDS + k);
			t->start[keys[pos] + 1]++;
			pos++;
		}
	for (size_t key = 0; key < nkeys; key++)
		t->start[key + 1] += t->start[key];
	{
		_cleanup_free_ size_t *fill = malloc(MAX(nkeys, (size_t)1) * sizeof(*fill));

		if (!fill)
			return -ENOMEM;
		memcpy(fill, t->start, nkeys * sizeof(*fill));
		pos = 0;
		for (unsigned int k = 0; k < KINDS; k++)
			for (size_t i = 0; i < t->nrows[k]; i++)
				t->order[fill[keys[pos++]]++] = (uint32_t)i;
	}
	return 0;
}

/* Marker rows by their time (Marker.ts is absolute: the table is not in time order). */
static int cmp_marker(const void *a, const void *b, void *times)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const uint64_t *ts = times;

	if (ts[x] != ts[y])
		return ts[x] < ts[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The owner's sequence: first its defaults and its track, then its clock. */
static int begin_sequence(struct tracks *t, size_t owner, uint64_t t0, uint32_t pid)
{
	const Hostprof__Snapshot *s = t->e->snap;
	bool process = owner == t->e->view.n_threads;
	const struct snapview_thread *th = process ? NULL : &t->e->view.threads[owner];
	uint64_t uuid = process ? PROCESS_TRACK_UUID(t->e, s->pid) : THREAD_TRACK_UUID(t->e, th->tid);
	struct pbw *w = &t->e->w;
	size_t packet, defaults, ted, td, d, cs, clock;
	int r;

	packet = pf_packet_begin(t->e, 0, t->seq);
	pbw_varint(w, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	defaults = pbw_begin(w, PACKET_TRACE_PACKET_DEFAULTS);
	ted = pbw_begin(w, DEFAULTS_TRACK_EVENT_DEFAULTS);
	pbw_varint(w, TRACK_EVENT_DEFAULTS_TRACK_UUID, uuid);
	pbw_end(w, ted);
	pbw_varint(w, DEFAULTS_TIMESTAMP_CLOCK_ID, PERFETTO_TRACK_CLOCK_ID);
	pbw_end(w, defaults);
	if (t->described[owner])
		goto clock;
	t->described[owner] = true;
	td = pbw_begin(w, PACKET_TRACK_DESCRIPTOR);
	pbw_varint(w, TRACK_DESCRIPTOR_UUID, uuid);
	if (process) {
		const Hostprof__Process *p = snapview_process(&t->e->view, s->pid);

		d = pbw_begin(w, TRACK_DESCRIPTOR_PROCESS);
		pbw_varint(w, PROCESS_DESCRIPTOR_PID, s->pid);
		if (p && p->comm && *p->comm)
			pbw_string(w, PROCESS_DESCRIPTOR_PROCESS_NAME, p->comm);
	} else {
		d = pbw_begin(w, TRACK_DESCRIPTOR_THREAD);
		pbw_varint(w, THREAD_DESCRIPTOR_PID, th->pid ? th->pid : pid);
		pbw_varint(w, THREAD_DESCRIPTOR_TID, th->tid);
		if (*th->comm)
			pbw_string(w, THREAD_DESCRIPTOR_THREAD_NAME, th->comm);
	}
	pbw_end(w, d);
	pbw_end(w, td);
clock:
	r = pf_packet_end(t->e, packet);
	if (r < 0)
		return r;

	packet = pf_packet_begin(t->e, 0, t->seq);
	cs = pbw_begin(w, PACKET_CLOCK_SNAPSHOT);
	clock = pbw_begin(w, CLOCK_SNAPSHOT_CLOCKS);
	pbw_varint(w, CLOCK_CLOCK_ID, BUILTIN_CLOCK_BOOTTIME);
	pbw_varint(w, CLOCK_TIMESTAMP, t0);
	pbw_end(w, clock);
	clock = pbw_begin(w, CLOCK_SNAPSHOT_CLOCKS);
	pbw_varint(w, CLOCK_CLOCK_ID, PERFETTO_TRACK_CLOCK_ID);
	pbw_varint(w, CLOCK_TIMESTAMP, t0);
	pbw_varint(w, CLOCK_IS_INCREMENTAL, 1);
	pbw_end(w, clock);
	pbw_end(w, cs);
	t->last_ts = t0;
	return pf_packet_end(t->e, packet);
}

/* Sequence ids of the owners: small (one byte), around the two fixed ones. */
static uint32_t owner_sequence(uint32_t n)
{
	uint32_t id = 2 + n;

	return id < PERFETTO_SEQUENCE_ID ? id : id + 2;
}

static int write_owner(struct tracks *t, size_t owner, uint32_t seq)
{
	size_t cur[KINDS], end[KINDS];
	bool faults_described = false, episodes_described = false;
	uint64_t t0 = UINT64_MAX;
	uint32_t pid = 0;
	int r;

	for (unsigned int k = 0; k < KINDS; k++) {
		cur[k] = t->start[owner * KINDS + k];
		end[k] = t->start[owner * KINDS + k + 1];
		if (cur[k] == end[k])
			continue;
		if (k == K_MARKER || k == K_GIL_HELD)
			qsort_r_safe(t->order + cur[k], end[k] - cur[k], sizeof(*t->order), cmp_marker,
				     t->owned_ts[k]);
		t0 = MIN(t0, t->ts[k][t->order[cur[k]]]);
		if (!pid)
			pid = row_pid(t, k, t->order[cur[k]]);
	}
	if (t0 == UINT64_MAX)
		return 0;

	t->seq = seq;
	t->nends = 0;
	r = begin_sequence(t, owner, t0, pid);
	while (r >= 0) {
		unsigned int best = KINDS;
		uint64_t best_ts = 0, best_dur = 0;

		for (unsigned int k = 0; k < KINDS; k++) {
			uint64_t ts, dur;

			if (cur[k] == end[k])
				continue;
			ts = t->ts[k][t->order[cur[k]]];
			dur = row_dur(t, k, t->order[cur[k]]);
			if (best == KINDS || ts < best_ts || (ts == best_ts && dur > best_dur)) {
				best = k;
				best_ts = ts;
				best_dur = dur;
			}
		}
		if (t->nends && (best == KINDS || t->ends[0].ts <= best_ts)) {
			struct end x = pop_end(t);

			r = write_end(t, &x);
			continue;
		}
		if (best == KINDS)
			break;

		size_t i = t->order[cur[best]++];

		switch (best) {
		case K_SYSCALL:
			r = write_syscall(t, i, best_ts);
			break;
		case K_OFFCPU:
			r = write_offcpu(t, i, best_ts);
			break;
		case K_MIGRATION:
			r = write_migration(t, i, best_ts);
			break;
		case K_MARKER:
			r = write_marker(t, i, best_ts);
			break;
		case K_RECLAIM:
			r = write_reclaim(t, i, best_ts);
			break;
		case K_LOCK:
			r = write_lock(t, i, best_ts);
			break;
		case K_FAULT:
			r = write_fault(t, i, best_ts, &faults_described);
			break;
		case K_GIL:
			r = write_gil(t, i, best_ts);
			break;
		case K_GIL_HELD:
			r = write_gil_held(t, i, best_ts);
			break;
		case K_PYGC:
			r = write_pygc(t, i, best_ts);
			break;
		default:
			r = write_episode(t, i, best_ts, &episodes_described);
			break;
		}
	}
	return r;
}

static void tracks_free(struct tracks *t)
{
	pbw_free(&t->data);
	strtab_free(&t->names);
	strtab_free(&t->cats);
	strtab_free(&t->values);
	free(t->syscall_name);
	free(t->comm_value);
	free(t->stack_value);
	for (unsigned int k = 0; k < KINDS; k++)
		free(t->owned_ts[k]);
	free(t->order);
	free(t->start);
	free(t->ends);
	free(t->ep);
	free(t->described);
	free(t);
}

static uint64_t intern_category(struct tracks *t, const char *name)
{
	return strtab_intern(&t->cats, name, strlen(name));
}

static int write_owners(struct tracks *t, uint32_t *nseq)
{
	int r = 0;

	for (size_t owner = 0; r >= 0 && owner < t->nowners; owner++) {
		size_t first = t->start[owner * KINDS], last = t->start[(owner + 1) * KINDS];

		if (first == last)
			continue;
		r = write_owner(t, owner, owner_sequence((*nseq)++));
	}
	return r;
}

/* The episodes, grouped by owner as the rows were (theirs only now), each owner's on a
 * sequence of its own. */
static int write_episodes(struct tracks *t, uint32_t *nseq)
{
	int r;

	for (unsigned int k = 0; k < KINDS; k++)
		t->nrows[k] = 0;
	free(t->owned_ts[K_EPISODE]);
	t->owned_ts[K_EPISODE] = malloc(t->n_ep * sizeof(uint64_t));
	t->ts[K_EPISODE] = t->owned_ts[K_EPISODE];
	if (!t->owned_ts[K_EPISODE])
		return -ENOMEM;
	for (size_t i = 0; i < t->n_ep; i++) /* each thread's in time order */
		t->owned_ts[K_EPISODE][i] = t->ep[i].begin;
	t->nrows[K_EPISODE] = t->n_ep;
	free(t->order);
	free(t->start);
	t->order = NULL;
	t->start = NULL;
	r = group_rows(t); /* the same owners (the snapshot's threads): described is theirs */
	if (r < 0)
		return r;
	return write_owners(t, nseq);
}

int pf_write_tracks(struct pf_exporter *e)
{
	const Hostprof__Snapshot *s = e->snap;
	struct tracks *t = calloc(1, sizeof(*t));
	uint32_t nseq = 0;
	int r;

	if (!t)
		return -ENOMEM;
	t->e = e;
	t->data = (struct pbw)PBW_INIT;
	t->syscall_name = calloc(s->n_syscall_names + 1, sizeof(*t->syscall_name));
	t->comm_value = calloc(s->n_strings + 1, sizeof(*t->comm_value));
	t->stack_value = calloc(s->n_stacks + 1, sizeof(*t->stack_value));
	t->cat_syscall = intern_category(t, "syscall");
	t->cat_sched = intern_category(t, "sched");
	t->cat_marker = intern_category(t, "marker");
	t->cat_memory = intern_category(t, "memory");
	t->cat_lock = intern_category(t, "lock");
	t->cat_stall = intern_category(t, "stall");
	t->cat_python = intern_category(t, "python");
	r = 0;
	if (!t->syscall_name || !t->comm_value || !t->stack_value || !t->cat_lock || !t->cat_stall)
		r = -ENOMEM;
	if (r >= 0)
		r = load_times(t); /* no episodes yet */
	if (r >= 0)
		r = group_rows(t);
	if (r >= 0 && !(t->described = calloc(t->nowners, sizeof(*t->described))))
		r = -ENOMEM;
	if (r >= 0)
		r = write_owners(t, &nseq);
	if (r >= 0)
		r = report_episodes(s, &t->ep, &t->n_ep);
	if (r >= 0 && t->n_ep)
		r = write_episodes(t, &nseq);
	tracks_free(t);
	return r;
}
