// SPDX-License-Identifier: GPL-2.0-only
/*
 * The perf map parser. Reads one byte at a time (getc_unlocked) into a fixed line buffer,
 * so no line, however long, makes it allocate; entries and names grow by doubling up to
 * their caps. Sorting and the overlap rules run once, after the last line.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "perfmap.h"

enum line_status {
	LINE_EOF,
	LINE_OK,
	LINE_LONG, /* cut at PERFMAP_LINE_MAX; the rest was skipped */
	LINE_NUL, /* held a NUL byte */
};

struct reader {
	FILE *f;
	uint64_t bytes;
	bool capped;
};

/* One line without its '\n' into buf (NUL-terminated); the rest of a long line is skipped. */
static enum line_status read_line(struct reader *r, char *buf, size_t size, size_t *ret_len)
{
	enum line_status st = LINE_OK;
	size_t len = 0;
	bool any = false;
	int c;

	for (;;) {
		if (r->bytes >= PERFMAP_BYTES_MAX) {
			r->capped = true;
			break;
		}
		c = getc_unlocked(r->f);
		if (c == EOF)
			break;
		r->bytes++;
		any = true;
		if (c == '\n')
			break;
		if (c == 0 && st == LINE_OK)
			st = LINE_NUL;
		if (len + 1 < size)
			buf[len++] = c;
		else if (st == LINE_OK)
			st = LINE_LONG;
	}
	buf[len] = 0;
	*ret_len = len;
	return any ? st : LINE_EOF;
}

/* 1 to 16 hex digits, an optional 0x; *p moves past them. */
static bool parse_hex(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (;; s++, digits++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits == 16)
			return false;
		v = v << 4 | d;
	}
	if (!digits)
		return false;
	*p = s;
	*ret = v;
	return true;
}

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* "START SIZE name": the name is the rest of the line, trailing blanks and '\r' dropped. */
static bool parse_line(char *line, size_t len, uint64_t *ret_start, uint64_t *ret_size, const char **ret_name,
		       size_t *ret_name_len)
{
	const char *p = skip_blanks(line);
	uint64_t start, size;

	if (!parse_hex(&p, &start) || (*p != ' ' && *p != '\t'))
		return false;
	p = skip_blanks(p);
	if (!parse_hex(&p, &size) || (*p != ' ' && *p != '\t'))
		return false;
	p = skip_blanks(p);
	while (len > (size_t)(p - line) &&
	       (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		line[--len] = 0;
	if (!*p)
		return false;
	if (size == 0 || size > PERFMAP_SIZE_MAX || start > UINT64_MAX - size)
		return false;
	*ret_start = start;
	*ret_size = size;
	*ret_name = p;
	*ret_name_len = len - (p - line);
	return true;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t max)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	while (n < need)
		n *= 2;
	n = MIN(n, max);
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct perfmap_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sort; on equal starts keep the last line; cut each range at the next one's start. */
static void normalize(struct perfmap *m)
{
	size_t i, out = 0;

	if (!m->n)
		return;
	qsort_safe(m->entries, m->n, sizeof(*m->entries), cmp_entry);
	for (i = 0; i < m->n; i++) {
		if (i + 1 < m->n && m->entries[i + 1].start == m->entries[i].start) {
			m->rejected++;
			continue;
		}
		m->entries[out++] = m->entries[i];
	}
	m->n = out;
	for (i = 0; i + 1 < m->n; i++) {
		struct perfmap_entry *e = &m->entries[i];
		uint64_t next = m->entries[i + 1].start;

		if (e->start + e->size > next)
			e->size = next - e->start;
	}
}

/* Give back what doubling over-allocated; a failed shrink keeps the larger block. */
static void shrink(struct perfmap *m)
{
	void *p;

	if (!m->n) {
		free(m->entries);
		free(m->names);
		m->entries = NULL;
		m->names = NULL;
		m->names_len = 0;
		return;
	}
	p = realloc(m->entries, m->n * sizeof(*m->entries));
	if (p)
		m->entries = p;
	p = realloc(m->names, m->names_len);
	if (p)
		m->names = p;
}

int perfmap_parse(FILE *f, struct perfmap *ret)
{
	struct perfmap m = {};
	struct reader r = { .f = f };
	size_t entries_cap = 0, names_cap = 0;
	_cleanup_free_ char *line = malloc(PERFMAP_LINE_MAX + 1);
	int err = 0;

	if (!line)
		return -ENOMEM;
	flockfile(f);
	for (;;) {
		enum line_status st;
		uint64_t start, size;
		const char *name;
		size_t len, name_len;
		struct perfmap_entry *e;

		st = read_line(&r, line, PERFMAP_LINE_MAX + 1, &len);
		if (st == LINE_EOF)
			break;
		m.lines++;
		if (st == LINE_NUL || !parse_line(line, len, &start, &size, &name, &name_len)) {
			m.rejected++;
			continue;
		}
		if (st == LINE_LONG || name_len > PERFMAP_NAME_MAX) {
			name_len = MIN(name_len, (size_t)PERFMAP_NAME_MAX);
			m.truncated++;
		}
		err = grow((void **)&m.entries, &entries_cap, m.n + 1, sizeof(*m.entries),
			   PERFMAP_ENTRIES_MAX);
		if (!err)
			err = grow((void **)&m.names, &names_cap, m.names_len + name_len + 1, 1,
				   PERFMAP_NAMES_MAX);
		if (err == -E2BIG) {
			err = 0;
			m.capped = 1;
			break;
		}
		if (err)
			break;
		e = &m.entries[m.n++];
		e->start = start;
		e->size = size;
		e->name = m.names_len;
		e->line = m.lines > UINT32_MAX ? UINT32_MAX : m.lines;
		memcpy(m.names + m.names_len, name, name_len);
		m.names_len += name_len;
		m.names[m.names_len++] = 0;
	}
	if (!err && ferror(f))
		err = -EIO;
	funlockfile(f);
	if (err) {
		perfmap_done(&m);
		return err;
	}
	if (r.capped)
		m.capped = 1;
	normalize(&m);
	shrink(&m);
	*ret = m;
	return 0;
}

const struct perfmap_entry *perfmap_find(const struct perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	/* the first entry starting after addr is entries[lo] */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->entries[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (addr - m->entries[lo - 1].start >= m->entries[lo - 1].size)
		return NULL;
	return &m->entries[lo - 1];
}

size_t perfmap_bytes(const struct perfmap *m)
{
	return m->n * sizeof(*m->entries) + m->names_len;
}

void perfmap_done(struct perfmap *m)
{
	free(m->entries);
	free(m->names);
	*m = (struct perfmap){};
}
