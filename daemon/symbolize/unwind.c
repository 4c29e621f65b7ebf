// SPDX-License-Identifier: GPL-2.0-only
/*
 * User stacks unwound from the CFI of the code they run (what `perf --call-graph dwarf`
 * does): the registers and a copy of the top of the stack, taken at one instant, and each
 * frame's caller found from the rules of the file's .eh_frame (cfi.c), evaluated here with
 * libdw's frame state (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register). Every
 * read is of the copy; nothing of the process is touched, no file is opened.
 *
 * Bounded: at most the frames asked for, at most UNWIND_EXPR_STEPS operations per
 * expression, the stack pointer never moving down; where no CFI covers a pc the frame
 * pointer is followed, if it points into the copy above the stack pointer. Why an unwind
 * stopped is counted (enum unwind_stop). The walk itself, frame after frame through the
 * process's mappings, is symbolizer_unwind() in symbolize.c; here is one step, which
 * touches nothing but the CFI and the copy (what fuzz-cfi drives).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define UNWIND_EXPR_STEPS 256 /* operations evaluated per expression */
#define UNWIND_EXPR_DEPTH 32  /* values on its stack */

static const char *const stop_names[UNWIND_STOP_MAX] = {
	[UNWIND_END] = "complete",
	[UNWIND_DEPTH] = "depth",
	[UNWIND_STACK_END] = "stack_copy",
	[UNWIND_NO_MAPPING] = "no_mapping",
	[UNWIND_NO_CFI] = "no_cfi",
	[UNWIND_BAD_CFI] = "bad_cfi",
	[UNWIND_LOOP] = "loop",
	[UNWIND_NO_REGS] = "no_regs",
	[UNWIND_TIME] = "time",
};

const char *unwind_stop_name(enum unwind_stop why)
{
	return (unsigned)why < UNWIND_STOP_MAX ? stop_names[why] : "unknown";
}

static int mem_read(const struct unwind_mem *m, uint64_t addr, size_t size, uint64_t *ret)
{
	uint64_t v = 0;

	if (size > sizeof(v) || addr < m->base || addr - m->base > m->len || m->len - (addr - m->base) < size)
		return -ERANGE;
	memcpy(&v, m->data + (addr - m->base), size); /* the machine's byte order: little-endian */
	*ret = v;
	return 0;
}

int unwind_reg_get(const struct unwind_regs *r, uint64_t regno, uint64_t *ret)
{
	if (regno >= UNWIND_REGS || !(r->valid & (1ull << regno)))
		return -ENODATA;
	*ret = r->r[regno];
	return 0;
}

static int op_index(const Dwarf_Op *ops, size_t n, uint64_t offset, size_t *ret)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].offset == offset) {
			*ret = i;
			return 0;
		}
	return -EBADMSG;
}

/*
 * Evaluates ops[0..n) over regs (cfa pushed by DW_OP_call_frame_cfa) into *ret; *ret_value
 * is true when it ends in DW_OP_stack_value (a value, else an address). -ERANGE: a read
 * outside the copy; -ENODATA: a register not known; -EBADMSG: an expression it cannot
 * evaluate.
 */
static int expr_eval(const Dwarf_Op *ops, size_t n, const struct unwind_regs *regs, uint64_t cfa,
		     const struct unwind_mem *mem, uint64_t *ret, bool *ret_value)
{
	uint64_t st[UNWIND_EXPR_DEPTH], a, b;
	size_t sp = 0, i = 0, steps = 0;
	int r;

	*ret_value = false;
#define PUSH(v)                                  \
	do {                                     \
		uint64_t v_ = (v);               \
		if (sp >= UNWIND_EXPR_DEPTH)     \
			return -EBADMSG;         \
		st[sp] = v_;                     \
		sp++;                            \
	} while (0)
#define NEED(k)                       \
	do {                          \
		if (sp < (k))         \
			return -EBADMSG; \
	} while (0)
	while (i < n) {
		const Dwarf_Op *op = &ops[i];
		uint8_t atom = op->atom;

		if (++steps > UNWIND_EXPR_STEPS)
			return -EBADMSG;
		i++;
		if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
			PUSH(atom - DW_OP_lit0);
			continue;
		}
		if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			r = unwind_reg_get(regs, atom - DW_OP_breg0, &a);
			if (r < 0)
				return r;
			PUSH(a + op->number);
			continue;
		}
		if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
			r = unwind_reg_get(regs, atom - DW_OP_reg0, &a);
			if (r < 0)
				return r;
			PUSH(a);
			*ret_value = true; /* the register itself holds it */
			continue;
		}
		switch (atom) {
		case DW_OP_regx:
			r = unwind_reg_get(regs, op->number, &a);
			if (r < 0)
				return r;
			PUSH(a);
			*ret_value = true;
			break;
		case DW_OP_bregx:
			r = unwind_reg_get(regs, op->number, &a);
			if (r < 0)
				return r;
			PUSH(a + op->number2);
			break;
		case DW_OP_addr:
		case DW_OP_const1u:
		case DW_OP_const1s:
		case DW_OP_const2u:
		case DW_OP_const2s:
		case DW_OP_const4u:
		case DW_OP_const4s:
		case DW_OP_const8u:
		case DW_OP_const8s:
		case DW_OP_constu:
		case DW_OP_consts:
			PUSH(op->number);
			break;
		case DW_OP_call_frame_cfa:
			PUSH(cfa);
			break;
		case DW_OP_dup:
			NEED(1);
			PUSH(st[sp - 1]);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_over:
			NEED(2);
			PUSH(st[sp - 2]);
			break;
		case DW_OP_pick:
			NEED(op->number + 1);
			PUSH(st[sp - 1 - op->number]);
			break;
		case DW_OP_swap:
			NEED(2);
			a = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = a;
			break;
		case DW_OP_rot:
			NEED(3);
			a = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = st[sp - 3];
			st[sp - 3] = a;
			break;
		case DW_OP_deref:
		case DW_OP_deref_size:
			NEED(1);
			b = atom == DW_OP_deref ? 8 : op->number;
			if (b < 1 || b > 8)
				return -EBADMSG;
			r = mem_read(mem, st[sp - 1], b, &a);
			if (r < 0)
				return r;
			st[sp - 1] = a;
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			st[sp - 1] += op->number;
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_abs:
			NEED(1);
			if ((int64_t)st[sp - 1] < 0)
				st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_plus:
		case DW_OP_minus:
		case DW_OP_mul:
		case DW_OP_and:
		case DW_OP_or:
		case DW_OP_xor:
		case DW_OP_shl:
		case DW_OP_shr:
		case DW_OP_shra:
		case DW_OP_div:
		case DW_OP_mod:
		case DW_OP_lt:
		case DW_OP_le:
		case DW_OP_gt:
		case DW_OP_ge:
		case DW_OP_eq:
		case DW_OP_ne:
			NEED(2);
			b = st[--sp];
			a = st[sp - 1];
			switch (atom) {
			case DW_OP_plus: a += b; break;
			case DW_OP_minus: a -= b; break;
			case DW_OP_mul: a *= b; break;
			case DW_OP_and: a &= b; break;
			case DW_OP_or: a |= b; break;
			case DW_OP_xor: a ^= b; break;
			case DW_OP_shl: a = b >= 64 ? 0 : a << b; break;
			case DW_OP_shr: a = b >= 64 ? 0 : a >> b; break;
			case DW_OP_shra: a = (uint64_t)((int64_t)a >> (b >= 64 ? 63 : b)); break;
			case DW_OP_div:
				if (!b || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
					return -EBADMSG;
				a = (uint64_t)((int64_t)a / (int64_t)b);
				break;
			case DW_OP_mod:
				if (!b)
					return -EBADMSG;
				a %= b;
				break;
			case DW_OP_lt: a = (int64_t)a < (int64_t)b; break;
			case DW_OP_le: a = (int64_t)a <= (int64_t)b; break;
			case DW_OP_gt: a = (int64_t)a > (int64_t)b; break;
			case DW_OP_ge: a = (int64_t)a >= (int64_t)b; break;
			case DW_OP_eq: a = a == b; break;
			case DW_OP_ne: a = a != b; break;
			}
			st[sp - 1] = a;
			break;
		case DW_OP_skip:
		case DW_OP_bra:
			/* the target: the offset after this 3-byte op, plus the signed 2-byte operand */
			if (atom == DW_OP_bra) {
				NEED(1);
				if (!st[--sp])
					break;
			}
			r = op_index(ops, n, op->offset + 3 + (int16_t)op->number, &i);
			if (r < 0)
				return r;
			break;
		case DW_OP_nop:
			break;
		case DW_OP_stack_value:
			NEED(1);
			*ret = st[sp - 1];
			*ret_value = true;
			return 0;
		default:
			return -EBADMSG;
		}
	}
#undef PUSH
#undef NEED
	if (!sp)
		return -EBADMSG;
	*ret = st[sp - 1];
	return 0;
}

static enum unwind_stop stop_of(int r)
{
	return r == -ERANGE ? UNWIND_STACK_END : r == -ENODATA ? UNWIND_NO_REGS : UNWIND_BAD_CFI;
}

enum unwind_stop unwind_step_cfi(struct cfi *cfi, uint64_t vaddr, const struct unwind_mem *mem, struct unwind_regs *regs,
				 bool *ret_signal)
{
	struct unwind_regs out = {};
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Frame *frame = NULL;
	enum unwind_stop why = UNWIND_BAD_CFI;
	uint64_t cfa, v;
	bool value;
	size_t nops;
	int ra, r, own;

	*ret_signal = false;
	own = cfi_frame(cfi, vaddr, &frame);
	if (own < 0)
		return UNWIND_NO_CFI;
	ra = dwarf_frame_info(frame, NULL, NULL, ret_signal);
	if (ra < 0 || ra >= UNWIND_REGS || dwarf_frame_cfa(frame, &ops, &nops) < 0 || !nops)
		goto out;
	r = expr_eval(ops, nops, regs, 0, mem, &cfa, &value);
	if (r < 0) {
		why = stop_of(r);
		goto out;
	}
	for (int reg = 0; reg < UNWIND_ARCH_REGS; reg++) {
		if (reg == UNWIND_PC && reg != ra)
			continue; /* the caller's pc is its return address: set below */
		if (dwarf_frame_register(frame, reg, ops_mem, &ops, &nops) < 0) {
			if (reg == ra)
				goto out;
			continue; /* not known in the caller */
		}
		if (!nops) {
			if (ops) /* undefined: call-clobbered */
				continue;
			/* same value: this frame did not change it (the stack pointer: the CFA) */
			if (reg == UNWIND_SP) {
				out.r[reg] = cfa;
				out.valid |= 1ull << reg;
			} else if (!unwind_reg_get(regs, reg, &v)) {
				out.r[reg] = v;
				out.valid |= 1ull << reg;
			}
			continue;
		}
		r = expr_eval(ops, nops, regs, cfa, mem, &v, &value);
		if (r == 0 && !value)
			r = mem_read(mem, v, sizeof(v), &v);
		if (r < 0) {
			if (reg == ra || reg == UNWIND_SP) {
				why = stop_of(r);
				goto out;
			}
			continue; /* a register the caller may not need */
		}
		out.r[reg] = v;
		out.valid |= 1ull << reg;
	}
	if (!(out.valid & (1ull << UNWIND_SP))) { /* the CFA is the caller's stack pointer */
		out.r[UNWIND_SP] = cfa;
		out.valid |= 1ull << UNWIND_SP;
	}
	if (!(out.valid & (1ull << ra))) {
		why = UNWIND_END; /* the return address is undefined: the outermost frame */
		goto out;
	}
	out.r[UNWIND_PC] = out.r[ra];
	out.valid |= 1ull << UNWIND_PC;
	*regs = out;
	why = UNWIND_DEPTH; /* a step made: the caller decides whether to go on */
out:
	if (own > 0)
		free(frame);
	return why;
}

/* No CFI for pc: its frame pointer, if it points into the copy above the stack pointer. */
enum unwind_stop unwind_step_fp(const struct unwind_mem *mem, struct unwind_regs *regs)
{
	uint64_t fp, sp, pc, caller_fp;

	if (unwind_reg_get(regs, UNWIND_FP, &fp) < 0 || unwind_reg_get(regs, UNWIND_SP, &sp) < 0 || fp < sp)
		return UNWIND_NO_CFI;
	if (mem_read(mem, fp, 8, &caller_fp) < 0 || mem_read(mem, fp + 8, 8, &pc) < 0)
		return UNWIND_NO_CFI;
	*regs = (struct unwind_regs){};
	regs->r[UNWIND_FP] = caller_fp;
	regs->r[UNWIND_SP] = fp + 16;
	regs->r[UNWIND_PC] = pc;
	regs->valid = 1ull << UNWIND_FP | 1ull << UNWIND_SP | 1ull << UNWIND_PC;
	return UNWIND_DEPTH;
}
