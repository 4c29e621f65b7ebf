/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Bytes a watched process or a client chose (thread names, JIT symbols, globs) made safe
 * for a line of text: control bytes (newline, escape, ...) and DEL become \xNN, so they
 * can neither forge a log line nor drive a terminal. Everything else stays as it is
 * (UTF-8 included). The JSON and binary formats keep the bytes.
 */
#ifndef HOSTPROF_ESCAPE_H
#define HOSTPROF_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* in, escaped, into out (always NUL-terminated; cut short at a whole escape if out is too
 * small). Returns out. */
char *escape_control(const char *in, char *out, size_t out_size);
bool has_control(const char *s);

/* Room escape_control needs for n input bytes, NUL included. */
#define ESCAPE_SIZE(n) (4 * (n) + 1)

#endif
