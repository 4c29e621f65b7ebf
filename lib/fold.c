// SPDX-License-Identifier: GPL-2.0-only
/* Folded stacks and stack counts of a snapshot, for the folded, SVG and pprof exporters; see fold.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "macro.h"
#include "snapview.h"

static int cmp_stack_count(const void *a, const void *b)
{
	const struct stack_count *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ustack != y->ustack)
		return x->ustack < y->ustack ? -1 : 1;
	if (x->kstack != y->kstack)
		return x->kstack < y->kstack ? -1 : 1;
	return 0;
}

int snapshot_stack_counts(const Hostprof__Snapshot *snap, bool offcpu, struct stack_count **ret,
			  size_t *ret_n)
{
	const Hostprof__OffCpuTable *off = snap->offcpu;
	const Hostprof__SampleTable *smp = snap->samples;
	struct stack_count *c;
	size_t n = 0, nc = 0;

	if (offcpu && off)
		n = off->n_ts_delta;
	else if (!offcpu && smp)
		n = smp->n_ts_delta;
	c = calloc(MAX(n, (size_t)1), sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		c[i] = offcpu ? (struct stack_count){ off->tid[i], off->ustack[i], off->kstack[i],
						      off->dur_ns[i] } :
				(struct stack_count){ smp->tid[i], smp->ustack[i], smp->kstack[i], 1 };
	qsort_safe(c, n, sizeof(*c), cmp_stack_count);
	for (size_t i = 0; i < n; i++) {
		if (nc && !cmp_stack_count(&c[nc - 1], &c[i]))
			c[nc - 1].value += c[i].value;
		else
			c[nc++] = c[i];
	}
	*ret = c;
	*ret_n = nc;
	return 0;
}

static int cmp_folded_stack(const void *a, const void *b)
{
	const struct folded_stack *x = a, *y = b;

	return strcmp(x->frames, y->frames);
}

/* A frame name as folded stacks allow it: no ';' (the separator), no control characters. */
static void put_folded_name(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p == ';' || *p < 0x20 || *p == 0x7f ? '_' : *p, f);
}

/* Appends the frames of stack idx1 (index + 1), outermost first; a frame's inlined functions after it. */
static void put_folded_stack(FILE *f, const Hostprof__Snapshot *snap, const struct frame_names *fn,
			     uint32_t idx1, bool kernel)
{
	const Hostprof__Stack *st;

	if (!idx1)
		return;
	st = snap->stacks[idx1 - 1];
	for (size_t j = st->n_frames; j-- > 0;) {
		const Hostprof__Frame *fr = snap->frames[st->frames[j]];

		fputc(';', f);
		put_folded_name(f, fn->name[st->frames[j]]);
		if (kernel)
			fputs("_[k]", f);
		for (size_t k = fr->n_inlined; k-- > 0;) {
			fputc(';', f);
			put_folded_name(f, snapview_inlined_name(fr->inlined[k]));
			fputs(kernel ? "_[k]" : "_[i]", f);
		}
	}
}

static char *render_folded(const Hostprof__Snapshot *snap, const struct frame_names *fn,
			   const struct snapview *v, const struct stack_count *k)
{
	const char *comm = snapview_comm(v, k->tid);
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	if (comm[0])
		put_folded_name(f, comm);
	else
		fprintf(f, "[tid %" PRIu32 "]", k->tid);
	put_folded_stack(f, snap, fn, k->ustack, false);
	put_folded_stack(f, snap, fn, k->kstack, true);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

void folded_free(struct folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->stacks[i].frames);
	free(f->stacks);
	*f = (struct folded){};
}

int snapshot_fold(const Hostprof__Snapshot *snap, bool offcpu, struct folded *ret)
{
	_cleanup_free_ struct stack_count *keys = NULL;
	struct frame_names fn = {};
	struct snapview v = {};
	struct folded out = {};
	size_t nk;
	int r;

	r = snapshot_stack_counts(snap, offcpu, &keys, &nk);
	if (r < 0)
		return r;
	r = frame_names_init(snap, &fn);
	if (r < 0)
		return r;
	r = snapview_init(snap, &v);
	if (r < 0)
		goto out;
	out.stacks = calloc(MAX(nk, (size_t)1), sizeof(*out.stacks));
	if (!out.stacks) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nk; i++) {
		out.stacks[i].frames = render_folded(snap, &fn, &v, &keys[i]);
		if (!out.stacks[i].frames) {
			r = -ENOMEM;
			goto out;
		}
		out.stacks[i].count = keys[i].value;
		out.n++;
	}
	/* different keys can render the same (threads of one name, frames of one function) */
	qsort_safe(out.stacks, out.n, sizeof(*out.stacks), cmp_folded_stack);
	nk = out.n;
	out.n = 0;
	for (size_t i = 0; i < nk; i++) {
		if (out.n && !strcmp(out.stacks[out.n - 1].frames, out.stacks[i].frames)) {
			out.stacks[out.n - 1].count += out.stacks[i].count;
			free(out.stacks[i].frames);
		} else {
			out.stacks[out.n++] = out.stacks[i];
		}
	}
	/* off-CPU: nanoseconds to microseconds, once the stacks are merged */
	nk = out.n;
	out.n = 0;
	for (size_t i = 0; i < nk; i++) {
		if (offcpu)
			out.stacks[i].count /= NSEC_PER_USEC;
		if (!out.stacks[i].count) {
			free(out.stacks[i].frames);
			continue;
		}
		out.total += out.stacks[i].count;
		out.stacks[out.n++] = out.stacks[i];
	}
	*ret = out;
	out = (struct folded){};
	r = 0;
out:
	folded_free(&out);
	snapview_free(&v);
	frame_names_free(&fn);
	return r;
}
