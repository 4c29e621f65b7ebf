/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Prometheus text exposition format (version 0.0.4), as node_exporter's textfile
 * collector reads it: `# HELP` and `# TYPE` once per family, then one line per sample,
 * `name{label="value",...} value`. Label values come from what a watched process chose
 * (its name, its environment, its cgroup): each is cut to PROM_VALUE_MAX bytes at a whole
 * UTF-8 character, invalid UTF-8 and control bytes other than a newline become '?', and
 * backslash, double quote and newline are escaped (\\, \", \n) as the format requires.
 * A value can therefore neither end its line nor its quotes, nor make the file invalid.
 */
#ifndef HOSTPROF_PROMTEXT_H
#define HOSTPROF_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "framing.h"

#define PROM_VALUE_MAX 128 /* bytes of a label value kept, before escaping */
/* Room prom_escape_value() needs for any input, NUL included: every kept byte may double. */
#define PROM_ESCAPED_SIZE (2 * PROM_VALUE_MAX + 1)

struct prom_label {
	const char *name; /* [a-zA-Z_][a-zA-Z0-9_]*: hostprof's own, never escaped */
	const char *value;
};

/* in, at most PROM_VALUE_MAX bytes of it, escaped into out (PROM_ESCAPED_SIZE bytes). Returns out. */
char *prom_escape_value(const char *in, char out[PROM_ESCAPED_SIZE]);

/* "# HELP name help\n# TYPE name type\n"; type: counter, gauge, histogram. */
int prom_family(struct hp_buf *out, const char *name, const char *type, const char *help);
/* One sample line; value already formatted ("12", "0.250000000", "+Inf"). Labels with a
 * NULL value are left out; those with "" are written (the format reads them as absent). */
int prom_sample(struct hp_buf *out, const char *name, const struct prom_label *labels, size_t n,
		const char *value);
/* Nanoseconds as seconds, exactly: "1.234567890". buf: 32 bytes. */
char *prom_seconds(uint64_t ns, char buf[32]);
char *prom_uint(uint64_t v, char buf[32]);

#endif
