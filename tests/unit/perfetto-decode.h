/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading a Perfetto trace of lib/export_perfetto.c back, independently of its encoder:
 * `protoc --decode` against perfetto_subset.proto (the public field numbers) turns it into
 * text, pd_tree_parse() the text into a tree, and the readers below read the tree the way
 * trace_processor reads a trace:
 *   - pd_read_sched(): every ftrace event of every bundle, the full ones and the ones of
 *     compact_sched (its columns walked in step, timestamps accumulated, comms looked up in
 *     the bundle's intern_table), per CPU in time order; a compact switch's prev task and a
 *     compact waking's waker are what the CPU's previous switch (full or compact) put on it,
 *     as trace_processor infers them (FtraceSchedEventTracker::PushSchedSwitchCompact and
 *     PushSchedWakingCompact). A compact event before any switch of its CPU is what that
 *     reader drops: counted in `dropped`.
 *   - pd_read_tracks(): every TrackEvent with its absolute time (the packet's timestamp on
 *     its clock: BOOTTIME, or a sequence's incremental clock from its ClockSnapshot), its
 *     track (its own track_uuid, else the sequence's TracePacketDefaults), its name and
 *     category (inline or interned), and its annotations through pd_annotation().
 * A multi-machine trace (hostprofctl merge): each event also says its packet's machine_id
 * (0 when absent), CPUs are per machine, and pd_read_machines() reads each machine's
 * ClockSnapshot (BOOTTIME and REALTIME) and SystemInfo.
 * Header-only, for the test programs; they exit on out of memory.
 */
#ifndef HOSTPROF_TESTS_PERFETTO_DECODE_H
#define HOSTPROF_TESTS_PERFETTO_DECODE_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define PD_SEQUENCE_CLOCK_MIN 64 /* clock ids 64..127 are a sequence's own */

static inline void *pd_xrealloc(void *p, size_t size)
{
	p = realloc(p, size ? size : 1);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static inline void *pd_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

static inline char *pd_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

/* ---- protoc ---------------------------------------------------------------------------------- */

static inline void pd_shell_quote(char *dst, size_t len, const char *s)
{
	size_t n = 0;

	dst[n++] = '\'';
	for (; *s && n + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(dst + n, "'\\''", 4);
			n += 4;
		} else {
			dst[n++] = *s;
		}
	}
	dst[n++] = '\'';
	dst[n] = '\0';
}

static inline const char *pd_protoc(void)
{
	const char *p = getenv("PROTOC");

	return p && *p ? p : "protoc";
}

static inline bool pd_have_protoc(void)
{
	char q[8192], cmd[8300];
	int status;

	pd_shell_quote(q, sizeof(q), pd_protoc());
	snprintf(cmd, sizeof(cmd), "%s --version >/dev/null 2>&1", q);
	status = system(cmd);
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Runs protoc --decode on the trace file; its text output in a new buffer. */
static inline int pd_run_protoc(const char *proto_dir, const char *path, char **ret_text, size_t *ret_len)
{
	char qdir[8192], qpath[8192], qprotoc[8192], cmd[32768];
	char *text = NULL;
	size_t len = 0, cap = 0, n;
	FILE *p;
	int status;

	pd_shell_quote(qdir, sizeof(qdir), proto_dir);
	pd_shell_quote(qpath, sizeof(qpath), path);
	pd_shell_quote(qprotoc, sizeof(qprotoc), pd_protoc());
	snprintf(cmd, sizeof(cmd),
		 "%s --proto_path=%s --decode=perfetto.protos.Trace perfetto_subset.proto < %s", qprotoc,
		 qdir, qpath);
	p = popen(cmd, "r");
	if (!p) {
		fprintf(stderr, "popen %s: %s\n", cmd, strerror(errno));
		return -1;
	}
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? 2 * cap : 1 << 20;
			text = pd_xrealloc(text, cap + 1);
		}
		n = fread(text + len, 1, cap - len, p);
		if (n == 0)
			break;
		len += n;
	}
	text[len] = '\0';
	status = pclose(p);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "protoc --decode failed (status %d): %s\n", status, cmd);
		free(text);
		return -1;
	}
	*ret_text = text;
	*ret_len = len;
	return 0;
}

/* ---- protoc's text as a tree ----------------------------------------------------------------- */

/* A message has children, a field a value (a string without its quotes). */
struct pd_node {
	char *name, *value;
	struct pd_node *child, *last, *next;
};

static inline struct pd_node *pd_node_add(struct pd_node *parent, const char *name, const char *value)
{
	struct pd_node *n = pd_xcalloc(1, sizeof(*n));

	n->name = pd_xstrdup(name);
	if (value) {
		size_t len = strlen(value);

		n->value = pd_xstrdup(value);
		if (len >= 2 && value[0] == '"' && value[len - 1] == '"') {
			memmove(n->value, n->value + 1, len - 2);
			n->value[len - 2] = '\0';
		}
	}
	if (parent->last)
		parent->last->next = n;
	else
		parent->child = n;
	parent->last = n;
	return n;
}

static inline void pd_tree_free(struct pd_node *n)
{
	while (n) {
		struct pd_node *next = n->next;

		pd_tree_free(n->child);
		free(n->name);
		free(n->value);
		free(n);
		n = next;
	}
}

/* NULL when the text does not nest right. */
static inline struct pd_node *pd_tree_parse(const char *text)
{
	struct pd_node *root = pd_xcalloc(1, sizeof(*root)), *stack[32];
	const char *p = text;
	size_t depth = 0;

	root->name = pd_xstrdup("");
	stack[0] = root;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = pd_xcalloc(len + 1, 1), *s = line, *colon;

		memcpy(line, p, len);
		p += len + (eol ? 1 : 0);
		while (*s == ' ')
			s++;
		if (!*s) {
			free(line);
			continue;
		}
		len = strlen(s);
		if (len >= 2 && !strcmp(s + len - 2, " {") && depth + 1 < sizeof(stack) / sizeof(stack[0])) {
			s[len - 2] = '\0';
			stack[depth + 1] = pd_node_add(stack[depth], s, NULL);
			depth++;
		} else if (!strcmp(s, "}") && depth > 0) {
			depth--;
		} else if ((colon = strstr(s, ": "))) {
			*colon = '\0';
			pd_node_add(stack[depth], s, colon + 2);
		} else {
			free(line);
			pd_tree_free(root);
			return NULL;
		}
		free(line);
	}
	if (depth) {
		pd_tree_free(root);
		return NULL;
	}
	return root;
}

static inline const struct pd_node *pd_child(const struct pd_node *n, const char *name)
{
	for (n = n ? n->child : NULL; n; n = n->next)
		if (!strcmp(n->name, name))
			return n;
	return NULL;
}

/* The value at a dotted path of first children ("sched_switch.prev_pid"); NULL if none. */
static inline const char *pd_value(const struct pd_node *n, const char *path)
{
	char buf[128], *part, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (part = strtok_r(buf, ".", &save); part && n; part = strtok_r(NULL, ".", &save))
		n = pd_child(n, part);
	return n ? n->value : NULL;
}

static inline uint64_t pd_u64(const struct pd_node *n, const char *path)
{
	const char *v = pd_value(n, path);

	return v ? strtoull(v, NULL, 0) : UINT64_MAX;
}

static inline int64_t pd_i64(const struct pd_node *n, const char *path)
{
	const char *v = pd_value(n, path);

	return v ? strtoll(v, NULL, 0) : INT64_MIN;
}

static inline bool pd_str_is(const struct pd_node *n, const char *path, const char *want)
{
	const char *v = pd_value(n, path);

	return v && !strcmp(v, want);
}

/* ---- The scheduler events -------------------------------------------------------------------- */

enum { PD_WAKING, PD_IRQ, PD_SWITCH }; /* also their order within one nanosecond of a CPU */

struct pd_sched_ev {
	int kind;
	bool compact;
	uint32_t machine;
	uint32_t cpu;
	uint64_t ts;
	int64_t pid; /* FtraceEvent.pid, or what a reader infers; -1: none */
	size_t order; /* in the file */
	/* sched_switch */
	const char *prev_comm, *next_comm;
	int64_t prev_pid, prev_prio, prev_state, next_pid, next_prio;
	/* sched_waking: comm, pid (the woken), prio (INT64_MIN: none), target_cpu, success */
	const char *comm;
	int64_t woken, prio, target_cpu, success;
	const struct pd_node *node; /* a full event */
};

struct pd_sched {
	struct pd_sched_ev *ev;
	size_t n, cap;
	size_t bundles, max_bundle; /* events in the largest bundle */
	size_t compact_switches, compact_wakings, full_switches, full_wakings;
	size_t disorder; /* a CPU's full events, or its compact columns, going back in time */
	size_t bad_columns; /* compact columns of unequal length, comm indexes out of range */
	size_t dropped; /* compact events before any switch of their CPU */
};

static inline struct pd_sched_ev *pd_sched_add(struct pd_sched *s, int kind, uint32_t cpu, uint64_t ts)
{
	struct pd_sched_ev *e;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->ev = pd_xrealloc(s->ev, s->cap * sizeof(*s->ev));
	}
	e = &s->ev[s->n];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->cpu = cpu;
	e->ts = ts;
	e->pid = -1;
	e->prio = INT64_MIN;
	e->order = s->n++;
	return e;
}

/* The values of one packed column, in order. */
static inline size_t pd_column(const struct pd_node *cs, const char *name, const char ***ret)
{
	size_t n = 0, cap = 0;
	const char **v = NULL;

	for (const struct pd_node *c = cs->child; c; c = c->next) {
		if (strcmp(c->name, name))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = pd_xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = c->value;
	}
	*ret = v;
	return n;
}

#define PD_MAX_CPUS 64
#define PD_MAX_MACHINES 16 /* machine ids 0..15; larger ones read as 15 */

static inline uint32_t pd_machine_of(const struct pd_node *pk)
{
	uint64_t m = pd_u64(pk, "machine_id");

	return m == UINT64_MAX ? 0 : m < PD_MAX_MACHINES ? (uint32_t)m : PD_MAX_MACHINES - 1;
}

static inline void pd_read_compact(struct pd_sched *s, const struct pd_node *cs, uint32_t cpu,
				   uint64_t *last_sw, uint64_t *last_wk)
{
	const char **intern, **ts, **a, **b, **c, **d;
	size_t ni = pd_column(cs, "intern_table", &intern), n, k;
	uint64_t acc;

	/* switches: timestamp, prev_state, next_pid, next_prio, next_comm_index */
	n = pd_column(cs, "switch_timestamp", &ts);
	if ((pd_column(cs, "switch_prev_state", &a) != n) + (pd_column(cs, "switch_next_pid", &b) != n) +
	    (pd_column(cs, "switch_next_prio", &c) != n) + (pd_column(cs, "switch_next_comm_index", &d) != n))
		s->bad_columns++;
	else
		for (k = 0, acc = 0; k < n; k++) {
			uint64_t idx = strtoull(d[k], NULL, 0);
			struct pd_sched_ev *e;

			acc += strtoull(ts[k], NULL, 0);
			if (idx >= ni) {
				s->bad_columns++;
				continue;
			}
			s->disorder += acc < *last_sw;
			*last_sw = acc;
			e = pd_sched_add(s, PD_SWITCH, cpu, acc);
			e->compact = true;
			e->prev_state = strtoll(a[k], NULL, 0);
			e->next_pid = strtoll(b[k], NULL, 0);
			e->next_prio = strtoll(c[k], NULL, 0);
			e->next_comm = intern[idx];
			s->compact_switches++;
		}
	free(ts), free(a), free(b), free(c), free(d);

	/* wakings: timestamp, pid, target_cpu, prio, comm_index */
	n = pd_column(cs, "waking_timestamp", &ts);
	if ((pd_column(cs, "waking_pid", &a) != n) + (pd_column(cs, "waking_target_cpu", &b) != n) +
	    (pd_column(cs, "waking_prio", &c) != n) + (pd_column(cs, "waking_comm_index", &d) != n))
		s->bad_columns++;
	else
		for (k = 0, acc = 0; k < n; k++) {
			uint64_t idx = strtoull(d[k], NULL, 0);
			struct pd_sched_ev *e;

			acc += strtoull(ts[k], NULL, 0);
			if (idx >= ni) {
				s->bad_columns++;
				continue;
			}
			s->disorder += acc < *last_wk;
			*last_wk = acc;
			e = pd_sched_add(s, PD_WAKING, cpu, acc);
			e->compact = true;
			e->woken = strtoll(a[k], NULL, 0);
			e->target_cpu = strtoll(b[k], NULL, 0);
			e->prio = strtoll(c[k], NULL, 0);
			e->comm = intern[idx];
			e->success = 1;
			s->compact_wakings++;
		}
	free(ts), free(a), free(b), free(c), free(d);
	free(intern);
}

static inline void pd_read_event(struct pd_sched *s, const struct pd_node *ev, uint32_t cpu, uint64_t *last)
{
	uint64_t ts = pd_u64(ev, "timestamp");
	const struct pd_node *sw = pd_child(ev, "sched_switch"), *wk = pd_child(ev, "sched_waking");
	struct pd_sched_ev *e = pd_sched_add(s, sw ? PD_SWITCH : wk ? PD_WAKING : PD_IRQ, cpu, ts);

	s->disorder += ts < *last;
	*last = ts;
	e->node = ev;
	e->pid = pd_value(ev, "pid") ? pd_i64(ev, "pid") : -1;
	if (sw) {
		e->prev_comm = pd_value(sw, "prev_comm");
		e->prev_pid = pd_i64(sw, "prev_pid");
		e->prev_prio = pd_i64(sw, "prev_prio");
		e->prev_state = pd_i64(sw, "prev_state");
		e->next_comm = pd_value(sw, "next_comm");
		e->next_pid = pd_i64(sw, "next_pid");
		e->next_prio = pd_i64(sw, "next_prio");
		if (!e->prev_comm)
			e->prev_comm = "";
		if (!e->next_comm)
			e->next_comm = "";
		s->full_switches++;
	} else if (wk) {
		e->comm = pd_value(wk, "comm") ? pd_value(wk, "comm") : "";
		e->woken = pd_i64(wk, "pid");
		e->prio = pd_i64(wk, "prio");
		e->target_cpu = pd_i64(wk, "target_cpu");
		e->success = pd_i64(wk, "success");
		s->full_wakings++;
	}
}

static inline int pd_cmp_sched(const void *x, const void *y)
{
	const struct pd_sched_ev *a = x, *b = y;

	if (a->machine != b->machine)
		return a->machine < b->machine ? -1 : 1;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Every ftrace event of the trace, by CPU and time, with what a reader infers filled in. */
static inline void pd_read_sched(const struct pd_node *root, struct pd_sched *s)
{
	/* by machine * PD_MAX_CPUS + cpu */
	static uint64_t last_full[PD_MAX_MACHINES * PD_MAX_CPUS], last_sw[PD_MAX_MACHINES * PD_MAX_CPUS],
		last_wk[PD_MAX_MACHINES * PD_MAX_CPUS];
	static struct {
		bool seen;
		int64_t pid, prio;
		const char *comm;
	} chain[PD_MAX_MACHINES * PD_MAX_CPUS];

	memset(last_full, 0, sizeof(last_full));
	memset(last_sw, 0, sizeof(last_sw));
	memset(last_wk, 0, sizeof(last_wk));
	memset(chain, 0, sizeof(chain));

	memset(s, 0, sizeof(*s));
	for (const struct pd_node *pk = root->child; pk; pk = pk->next) {
		const struct pd_node *b = pd_child(pk, "ftrace_events");
		uint64_t cpu64;
		uint32_t cpu, machine;
		size_t before = s->n, key;

		if (!b)
			continue;
		s->bundles++;
		cpu64 = pd_u64(b, "cpu");
		cpu = cpu64 < PD_MAX_CPUS ? (uint32_t)cpu64 : PD_MAX_CPUS - 1;
		machine = pd_machine_of(pk);
		key = (size_t)machine * PD_MAX_CPUS + cpu;
		for (const struct pd_node *c = b->child; c; c = c->next) {
			if (!strcmp(c->name, "event"))
				pd_read_event(s, c, cpu, &last_full[key]);
			else if (!strcmp(c->name, "compact_sched"))
				pd_read_compact(s, c, cpu, &last_sw[key], &last_wk[key]);
		}
		for (size_t k = before; k < s->n; k++)
			s->ev[k].machine = machine;
		if (s->n - before > s->max_bundle)
			s->max_bundle = s->n - before;
	}
	if (s->n > 1)
		qsort(s->ev, s->n, sizeof(*s->ev), pd_cmp_sched);

	/* what trace_processor takes a CPU to run: the next task of its latest switch */
	for (size_t i = 0; i < s->n; i++) {
		struct pd_sched_ev *e = &s->ev[i];
		__typeof__(chain[0]) *c = &chain[(size_t)e->machine * PD_MAX_CPUS + e->cpu];

		if (e->kind == PD_SWITCH) {
			if (e->compact) {
				if (!c->seen) {
					s->dropped++;
				} else {
					e->prev_pid = c->pid;
					e->prev_prio = c->prio;
					e->prev_comm = c->comm;
					e->pid = c->pid;
				}
			}
			c->seen = true;
			c->pid = e->next_pid;
			c->prio = e->next_prio;
			c->comm = e->next_comm;
		} else if (e->kind == PD_WAKING && e->compact) {
			if (!c->seen)
				s->dropped++;
			else
				e->pid = c->pid;
		}
	}
}

static inline void pd_sched_free(struct pd_sched *s)
{
	free(s->ev);
	s->ev = NULL;
	s->n = s->cap = 0;
}

/* ---- Track events ------------------------------------------------------------------------------ */

struct pd_entry {
	uint64_t iid;
	const char *s;
};

struct pd_table {
	struct pd_entry *e;
	size_t n, cap;
};

/* What a sequence's incremental state holds. */
struct pd_seq {
	uint64_t id;
	bool cleared;
	uint64_t default_uuid, default_clock;
	bool clock_known;
	uint64_t clock_last, clock_offset; /* its incremental clock: the last value; BOOTTIME - it */
	struct pd_table names, cats, anames, values;
};

struct pd_tev {
	uint32_t machine;
	uint64_t ts, uuid;
	size_t order, seq; /* file order; position in pd_tracks.seqs */
	const char *type, *name, *category;
	const struct pd_node *te, *packet;
};

struct pd_tracks {
	struct pd_seq *seqs;
	size_t nseqs;
	struct pd_tev *ev;
	size_t n, cap;
	size_t redefined; /* an iid given two strings on one sequence */
	size_t unresolved; /* an iid not interned before its use, a clock without its snapshot */
	size_t before_cleared; /* interned data or events on a sequence before its state was cleared */
};

static inline const char *pd_lookup(const struct pd_table *t, uint64_t iid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].iid == iid)
			return t->e[i].s;
	return NULL;
}

static inline void pd_intern(struct pd_tracks *tr, struct pd_table *t, const struct pd_node *entry,
			     const char *field)
{
	uint64_t iid = pd_u64(entry, "iid");
	const char *s = pd_value(entry, field), *old = pd_lookup(t, iid);

	if (!s)
		s = "";
	if (old) {
		tr->redefined += strcmp(old, s) != 0;
		return;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->e = pd_xrealloc(t->e, t->cap * sizeof(*t->e));
	}
	t->e[t->n++] = (struct pd_entry){ .iid = iid, .s = s };
}

static inline size_t pd_seq_of(struct pd_tracks *tr, uint64_t id)
{
	for (size_t i = 0; i < tr->nseqs; i++)
		if (tr->seqs[i].id == id)
			return i;
	tr->seqs = pd_xrealloc(tr->seqs, (tr->nseqs + 1) * sizeof(*tr->seqs));
	memset(&tr->seqs[tr->nseqs], 0, sizeof(tr->seqs[0]));
	tr->seqs[tr->nseqs].id = id;
	return tr->nseqs++;
}

/* A name or category of a TrackEvent: inline, else interned. */
static inline const char *pd_name_of(struct pd_tracks *tr, const struct pd_table *t, const struct pd_node *te,
				     const char *inline_field, const char *iid_field)
{
	const char *v = pd_value(te, inline_field), *iid = pd_value(te, iid_field);

	if (v || !iid)
		return v;
	v = pd_lookup(t, strtoull(iid, NULL, 0));
	tr->unresolved += !v;
	return v;
}

static inline void pd_read_tracks(const struct pd_node *root, struct pd_tracks *tr)
{
	size_t order = 0;

	memset(tr, 0, sizeof(*tr));
	for (const struct pd_node *pk = root->child; pk; pk = pk->next, order++) {
		size_t qi = pd_seq_of(tr, pd_u64(pk, "trusted_packet_sequence_id"));
		struct pd_seq *q = &tr->seqs[qi];
		const struct pd_node *data = pd_child(pk, "interned_data"), *defaults, *cs, *te;
		uint64_t flags = pd_u64(pk, "sequence_flags");

		if (flags != UINT64_MAX && (flags & 1)) {
			struct pd_seq fresh = { .id = q->id, .cleared = true };

			free(q->names.e), free(q->cats.e), free(q->anames.e), free(q->values.e);
			*q = fresh;
		}
		if ((defaults = pd_child(pk, "trace_packet_defaults"))) {
			q->default_uuid = pd_u64(defaults, "track_event_defaults.track_uuid");
			q->default_clock = pd_u64(defaults, "timestamp_clock_id");
			if (q->default_uuid == UINT64_MAX)
				q->default_uuid = 0;
			if (q->default_clock == UINT64_MAX)
				q->default_clock = 0;
		}
		if (data) {
			tr->before_cleared += !q->cleared;
			for (const struct pd_node *e = data->child; e; e = e->next) {
				if (!strcmp(e->name, "event_names"))
					pd_intern(tr, &q->names, e, "name");
				else if (!strcmp(e->name, "event_categories"))
					pd_intern(tr, &q->cats, e, "name");
				else if (!strcmp(e->name, "debug_annotation_names"))
					pd_intern(tr, &q->anames, e, "name");
				else if (!strcmp(e->name, "debug_annotation_string_values"))
					pd_intern(tr, &q->values, e, "str");
			}
		}
		if ((cs = pd_child(pk, "clock_snapshot"))) {
			uint64_t boot = UINT64_MAX, own = UINT64_MAX;

			for (const struct pd_node *c = cs->child; c; c = c->next) {
				if (strcmp(c->name, "clocks"))
					continue;
				if (pd_u64(c, "clock_id") == 6)
					boot = pd_u64(c, "timestamp");
				else if (pd_u64(c, "clock_id") >= PD_SEQUENCE_CLOCK_MIN &&
					 pd_str_is(c, "is_incremental", "true"))
					own = pd_u64(c, "timestamp");
			}
			if (own != UINT64_MAX && boot != UINT64_MAX) {
				q->clock_known = true;
				q->clock_last = own;
				q->clock_offset = boot - own;
			}
		}
		if (!(te = pd_child(pk, "track_event")))
			continue;

		struct pd_tev *ev;
		uint64_t ts = pd_u64(pk, "timestamp"), clock = pd_u64(pk, "timestamp_clock_id");

		if (clock == UINT64_MAX)
			clock = q->default_clock ? q->default_clock : 6;
		if (clock >= PD_SEQUENCE_CLOCK_MIN) {
			if (!q->clock_known || ts == UINT64_MAX) {
				tr->unresolved++;
				continue;
			}
			q->clock_last += ts;
			ts = q->clock_last + q->clock_offset;
		}
		if (tr->n == tr->cap) {
			tr->cap = tr->cap ? 2 * tr->cap : 256;
			tr->ev = pd_xrealloc(tr->ev, tr->cap * sizeof(*tr->ev));
		}
		ev = &tr->ev[tr->n++];
		*ev = (struct pd_tev){
			.machine = pd_machine_of(pk), .ts = ts, .order = order, .seq = (size_t)(q - tr->seqs), .te = te,
			.packet = pk
		};
		ev->uuid = pd_value(te, "track_uuid") ? pd_u64(te, "track_uuid") : q->default_uuid;
		ev->type = pd_value(te, "type");
		ev->name = pd_name_of(tr, &q->names, te, "name", "name_iid");
		ev->category = pd_name_of(tr, &q->cats, te, "categories", "category_iids");
		tr->before_cleared += q->id > 1 && !q->cleared &&
				      (pd_value(te, "name_iid") || pd_value(te, "category_iids"));
	}
}

/* The value of TrackEvent debug annotation `name` (uint, int or string), or NULL. */
static inline const char *pd_annotation(const struct pd_tracks *tr, const struct pd_tev *ev, const char *name)
{
	const struct pd_seq *q = &tr->seqs[ev->seq];

	for (const struct pd_node *a = ev->te->child; a; a = a->next) {
		const char *n, *v;

		if (strcmp(a->name, "debug_annotations"))
			continue;
		n = pd_value(a, "name");
		if (!n && pd_value(a, "name_iid"))
			n = pd_lookup(&q->anames, pd_u64(a, "name_iid"));
		if (!n || strcmp(n, name))
			continue;
		if ((v = pd_value(a, "string_value_iid")))
			return pd_lookup(&q->values, strtoull(v, NULL, 0));
		for (const struct pd_node *c = a->child; c; c = c->next)
			if (strcmp(c->name, "name") && strcmp(c->name, "name_iid"))
				return c->value;
	}
	return NULL;
}

static inline void pd_tracks_free(struct pd_tracks *tr)
{
	for (size_t i = 0; i < tr->nseqs; i++) {
		free(tr->seqs[i].names.e);
		free(tr->seqs[i].cats.e);
		free(tr->seqs[i].anames.e);
		free(tr->seqs[i].values.e);
	}
	free(tr->seqs);
	free(tr->ev);
	memset(tr, 0, sizeof(*tr));
}

/* ---- Machines ------------------------------------------------------------------------------------ */

/* What a trace says of one machine: its ClockSnapshot on a sequence below the track ones
 * (the header's), its SystemInfo, and the sequences its packets use. */
struct pd_machine {
	bool seen;
	size_t packets, clock_snapshots, system_infos;
	uint64_t boottime, realtime; /* of its first header ClockSnapshot; UINT64_MAX: none */
	const char *sysname, *release;
	uint64_t seq_min, seq_max;
};

/* By machine id (0..PD_MAX_MACHINES-1). *ret_shared_seqs: sequence ids that packets of two
 * machines use. */
static inline void pd_read_machines(const struct pd_node *root, struct pd_machine *m, size_t *ret_shared_seqs)
{
	struct {
		uint64_t id;
		uint32_t machine;
	} *seen = NULL;
	size_t nseen = 0, shared = 0;

	for (size_t i = 0; i < PD_MAX_MACHINES; i++)
		m[i] = (struct pd_machine){ .boottime = UINT64_MAX, .realtime = UINT64_MAX, .seq_min = UINT64_MAX };
	for (const struct pd_node *pk = root->child; pk; pk = pk->next) {
		struct pd_machine *x = &m[pd_machine_of(pk)];
		uint64_t seq = pd_u64(pk, "trusted_packet_sequence_id");
		const struct pd_node *cs = pd_child(pk, "clock_snapshot"), *si = pd_child(pk, "system_info");
		size_t k;

		x->seen = true;
		x->packets++;
		if (seq != UINT64_MAX) {
			x->seq_min = seq < x->seq_min ? seq : x->seq_min;
			x->seq_max = seq > x->seq_max ? seq : x->seq_max;
			for (k = 0; k < nseen && seen[k].id != seq; k++)
				;
			if (k == nseen) {
				seen = pd_xrealloc(seen, (nseen + 1) * sizeof(*seen));
				seen[nseen].id = seq;
				seen[nseen++].machine = pd_machine_of(pk);
			} else if (seen[k].machine != pd_machine_of(pk) && seen[k].machine != UINT32_MAX) {
				shared++;
				seen[k].machine = UINT32_MAX; /* counted once */
			}
		}
		if (cs && pd_value(cs, "primary_trace_clock")) { /* the header's, not a track sequence's */
			uint64_t boot = UINT64_MAX, real = UINT64_MAX;

			for (const struct pd_node *c = cs->child; c; c = c->next) {
				if (strcmp(c->name, "clocks"))
					continue;
				if (pd_u64(c, "clock_id") == 6)
					boot = pd_u64(c, "timestamp");
				else if (pd_u64(c, "clock_id") == 1)
					real = pd_u64(c, "timestamp");
			}
			if (!x->clock_snapshots++) {
				x->boottime = boot;
				x->realtime = real;
			}
		}
		if (si) {
			if (!x->system_infos++) {
				x->sysname = pd_value(si, "utsname.sysname");
				x->release = pd_value(si, "utsname.release");
			}
		}
	}
	free(seen);
	*ret_shared_seqs = shared;
}

#endif
