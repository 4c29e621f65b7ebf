// SPDX-License-Identifier: GPL-2.0-only
/*
 * From an instruction offset to its line, in the three formats CPython has had:
 *
 *   3.8, 3.9  co_lnotab (Objects/lnotab_notes.txt of those versions): (address increment,
 *             line increment) byte pairs, the line increment signed; the line of address A
 *             is co_firstlineno plus the line increments of the pairs up to the last one
 *             whose address is <= A. Addresses are bytes.
 *   3.10      co_linetable (PEP 626): (range length, line delta) byte pairs, each one range
 *             of addresses [start, start + length) in bytes; a line delta of -128 means the
 *             range has no line (and leaves the running line as it was); zero-length ranges
 *             only carry line deltas too large for one byte.
 *   3.11+     co_linetable location entries (InternalDocs/locations.md): a first byte with
 *             bit 7 set, a 4-bit code and the entry's length in code units minus 1, then the
 *             code's bytes. Codes 0-9 and 10-12 keep the line or add (code - 10); 13 and 14
 *             add a signed varint; 15 has no location. Varints come in 6-bit chunks, least
 *             significant first, bit 6 set on every chunk but the last; signed ones carry the
 *             sign in bit 0.
 *
 * Tables come from a process that may lie: every walk stops at the table's end, a varint
 * runs at most 5 chunks, and a table that does not parse gives line 0 (not known).
 */
#include "internal.h"

static uint32_t line_lnotab(const uint8_t *p, size_t len, uint32_t first_line, int64_t addrq)
{
	int64_t line = first_line, addr = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += p[i];
		if (addr > addrq)
			break;
		line += (int8_t)p[i + 1];
	}
	return line > 0 && line <= UINT32_MAX ? line : 0;
}

static uint32_t line_310(const uint8_t *p, size_t len, uint32_t first_line, int64_t addrq)
{
	int64_t computed = first_line, line = -1, end = 0;
	size_t i = 0;

	while (end <= addrq) {
		int8_t delta;

		if (i + 1 >= len)
			return 0; /* past the table: no line */
		end += p[i];
		delta = (int8_t)p[i + 1];
		i += 2;
		if (delta == -128) {
			line = -1;
		} else {
			computed += delta;
			line = computed;
		}
	}
	return line > 0 && line <= UINT32_MAX ? line : 0;
}

/* A varint of the 3.11 table at *i; false past the end, at the next entry, or too long. */
static bool varint(const uint8_t *p, size_t len, size_t *i, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift <= 24; shift += 6) {
		uint8_t b;

		if (*i >= len || (p[*i] & 0x80))
			return false;
		b = p[(*i)++];
		v |= (uint64_t)(b & 63) << shift;
		if (!(b & 64)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

static bool svarint(const uint8_t *p, size_t len, size_t *i, int64_t *ret)
{
	uint64_t u;

	if (!varint(p, len, i, &u))
		return false;
	*ret = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

static uint32_t line_311(const uint8_t *p, size_t len, uint32_t first_line, int64_t unitq)
{
	int64_t computed = first_line, addr = 0;
	size_t i = 0;

	while (i < len) {
		uint8_t b = p[i++];
		unsigned code = (b >> 3) & 15, length = (b & 7) + 1;
		int64_t line = computed, delta;
		uint64_t skip;

		if (!(b & 0x80))
			return 0;
		switch (code) {
		case 15: /* no location */
			line = -1;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			if (!svarint(p, len, &i, &delta) || !varint(p, len, &i, &skip) ||
			    !varint(p, len, &i, &skip) || !varint(p, len, &i, &skip))
				return 0;
			computed += delta;
			line = computed;
			break;
		case 13: /* no column: line delta */
			if (!svarint(p, len, &i, &delta))
				return 0;
			computed += delta;
			line = computed;
			break;
		case 10:
		case 11:
		case 12: /* one line: delta code - 10, start and end column bytes */
			if (i + 2 > len)
				return 0;
			i += 2;
			computed += code - 10;
			line = computed;
			break;
		default: /* 0-9, short: the same line, one column byte */
			if (i + 1 > len)
				return 0;
			i += 1;
			break;
		}
		if (unitq >= addr && unitq < addr + length)
			return line > 0 && line <= UINT32_MAX ? line : 0;
		addr += length;
	}
	return 0;
}

uint32_t py_line_for(enum py_lines_kind kind, const uint8_t *table, size_t len, uint32_t first_line,
		     int64_t lasti)
{
	if (lasti < 0)
		return first_line; /* nothing run yet: the function's first line, as CPython says */
	switch (kind) {
	case PY_LINES_LNOTAB:
		return line_lnotab(table, len, first_line, lasti);
	case PY_LINES_310:
		return line_310(table, len, first_line, lasti * 2);
	case PY_LINES_311:
		return line_311(table, len, first_line, lasti);
	}
	return 0;
}
