// SPDX-License-Identifier: GPL-2.0-only
/* On-CPU samples whose user stack is unwound as they are drained; see rawsample.h. */
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "rawsample.h"
#include "symbolize.h"

_Static_assert(HP_RAW_REGS == UNWIND_REGS, "hp_rawsample's registers are the unwinder's, by DWARF number");

static void regs_of(const struct hp_rawsample *raw, struct unwind_regs *regs)
{
	memcpy(regs->r, raw->regs, sizeof(regs->r));
	regs->valid = raw->regs_valid & ((1ull << UNWIND_REGS) - 1);
}

const struct hp_hdr *rawsample_unwind(struct symbolizer *sym, const struct hp_rawsample *raw,
				      union rawsample_out *out)
{
	const __u64 *fp = raw->frames + raw->kstack_len;
	const void *stack = raw->frames + raw->kstack_len + raw->ustack_len;
	size_t k = MIN((size_t)raw->kstack_len, HP_MAX_STACK), u = 0;
	struct hp_sample *e = &out->sample;
	struct unwind_result res = { .fp_kept = true };
	struct unwind_regs regs = {};
	uint64_t flags = raw->stack_flags;

	if (sym)
		symbolizer_count_copy(sym, raw->hdr.size);
	e->hdr = raw->hdr;
	e->hdr.type = HP_EV_SAMPLE;
	e->tid = raw->tid;
	e->pid = raw->pid;
	memcpy(e->frames, raw->frames, k * sizeof(__u64));
	regs_of(raw, &regs);
	if (sym)
		u = symbolizer_sample_stack(sym, raw->pid, &regs, stack, raw->stack_len, (const uint64_t *)fp,
					    raw->ustack_len, (uint64_t *)(e->frames + k), HP_MAX_STACK, &res);
	if (res.fp_kept) {
		u = MIN((size_t)raw->ustack_len, HP_MAX_STACK);
		memcpy(e->frames + k, fp, u * sizeof(__u64));
	} else {
		/* the frame-pointer walk's truncation and failure are not this stack's */
		flags &= ~(uint64_t)(HP_STACK_UTRUNC | HP_STACK_UFAIL);
		if (unwind_cut(res.stop))
			flags |= HP_STACK_UTRUNC;
		if (!u)
			flags |= HP_STACK_UFAIL;
	}
	e->kstack_len = k;
	e->ustack_len = u;
	e->stack_flags = flags;
	e->hdr.size = sizeof(*e) + (k + u) * sizeof(__u64);
	return &e->hdr;
}

/* the latest copy of each place of a thread's (HP_EV_RAWUSTACK.place): a thread has up to
 * 4 (USTACK_PLACES in the BPF programs) */
#define USTACK_SLOTS 2048 /* ~1.1 MiB */
#define USTACK_HELD 64    /* copies held for a second unwind, ~17 KiB each */
#define USTACK_TIME_TRIES 3 /* unwinds of a held copy that run out of time, at most */

struct ustack_slot {
	uint32_t tid;
	uint32_t place;
	uint64_t pc;
	struct unwind_result res;
	uint64_t frames[HP_MAX_STACK];
	/* the copy itself, while its unwind stopped at a mapping not read yet or ran out of
	 * time (a process's first, on a slow machine: libdw caches nothing yet): the thread
	 * may block from that place for long, its walk reused, no new copy made */
	struct hp_rawsample *held;
	uint32_t timeouts; /* the held copy's unwinds that ran out of time: at USTACK_TIME_TRIES it goes */
};

struct rawustacks {
	struct ustack_slot slots[USTACK_SLOTS];
	size_t n_held;
};

struct rawustacks *rawustacks_new(void)
{
	return calloc(1, sizeof(struct rawustacks));
}

static void slot_release(struct rawustacks *u, struct ustack_slot *slot)
{
	if (slot->held) {
		free(slot->held);
		slot->held = NULL;
		u->n_held--;
	}
}

static struct ustack_slot *slot_of(struct rawustacks *u, uint32_t tid, uint32_t place)
{
	return &u->slots[(tid * 4 + place) % USTACK_SLOTS];
}

void rawustacks_free(struct rawustacks *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < USTACK_SLOTS; i++)
		slot_release(u, &u->slots[i]);
	free(u);
}

static void slot_unwind(struct ustack_slot *slot, struct symbolizer *sym, const struct hp_rawsample *raw)
{
	const void *stack = raw->frames + raw->kstack_len + raw->ustack_len;
	struct unwind_regs regs;

	slot->tid = 0;
	regs_of(raw, &regs);
	if (symbolizer_unwind(sym, raw->pid, &regs, stack, raw->stack_len, slot->frames, HP_MAX_STACK, &slot->res) < 0 ||
	    !slot->res.n)
		return;
	slot->pc = slot->frames[0]; /* the pc: where the frame-pointer walk begins too */
	slot->tid = raw->tid;
	slot->place = raw->place;
}

/* Whether the slot's copy is worth another unwind: its mapping may be read by then, or the
 * next unwind faster (a bounded number of times: CFI made to be slow stays slow). */
static bool slot_retry(const struct ustack_slot *slot)
{
	return slot->res.stop == UNWIND_NO_MAPPING ||
	       (slot->res.stop == UNWIND_TIME && slot->timeouts < USTACK_TIME_TRIES);
}

void rawustack_note(struct rawustacks *u, struct symbolizer *sym, const struct hp_rawsample *raw)
{
	struct ustack_slot *slot = slot_of(u, raw->tid, raw->place);

	slot_release(u, slot);
	slot->tid = 0;
	slot->timeouts = 0;
	if (!sym)
		return;
	symbolizer_count_copy(sym, raw->hdr.size);
	slot_unwind(slot, sym, raw);
	if (slot->tid && slot_retry(slot) && u->n_held < USTACK_HELD) {
		slot->held = malloc(raw->hdr.size);
		if (slot->held) {
			memcpy(slot->held, raw, raw->hdr.size);
			slot->timeouts = slot->res.stop == UNWIND_TIME;
			u->n_held++;
		}
	}
}

const struct hp_hdr *rawustack_apply(struct rawustacks *u, struct symbolizer *sym, const struct hp_hdr *rec,
				     union rawustack_out *out)
{
	struct ustack_slot *slot;
	size_t base, k = 0, n;
	const __u64 *fp;
	uint32_t tid, place, flags;
	uint16_t nfp;
	bool mine;

	if (rec->type == HP_EV_OFFCPU) {
		const struct hp_offcpu *e = (const void *)rec;

		tid = e->tid, place = e->place, k = e->kstack_len, nfp = e->ustack_len, flags = e->stack_flags;
		fp = e->frames + k;
		base = sizeof(*e);
	} else if (rec->type == HP_EV_USTACK) {
		const struct hp_ustack *e = (const void *)rec;

		tid = e->tid, place = e->place, nfp = e->ustack_len, flags = e->stack_flags, fp = e->frames;
		base = sizeof(*e);
	} else
		return rec;
	if (!nfp || !sym)
		return rec;
	slot = slot_of(u, tid, place);
	mine = slot->tid == tid && slot->place == place && slot->pc == fp[0];
	/* its mappings may be known now, its CFI's lookups faster */
	if (mine && slot->held) {
		slot_unwind(slot, sym, slot->held);
		slot->timeouts += slot->res.stop == UNWIND_TIME;
		if (!slot_retry(slot))
			slot_release(u, slot);
	}
	if (!mine || !slot->tid || symbolizer_keep_fp(sym, &slot->res, nfp)) {
		symbolizer_count_offcpu(sym, false);
		return rec;
	}
	n = MIN(slot->res.n, (size_t)HP_MAX_STACK);
	memcpy(out->words, rec, base + k * sizeof(__u64));
	memcpy((uint8_t *)out->words + base + k * sizeof(__u64), slot->frames, n * sizeof(__u64));
	flags &= ~(uint32_t)(HP_STACK_UTRUNC | HP_STACK_UFAIL);
	if (unwind_cut(slot->res.stop))
		flags |= HP_STACK_UTRUNC;
	if (rec->type == HP_EV_OFFCPU) {
		struct hp_offcpu *e = (void *)out->words;

		e->ustack_len = n;
		e->stack_flags = flags;
	} else {
		struct hp_ustack *e = (void *)out->words;

		e->ustack_len = n;
		e->stack_flags = flags;
	}
	out->hdr.size = base + (k + n) * sizeof(__u64);
	symbolizer_count_offcpu(sym, true);
	return &out->hdr;
}
