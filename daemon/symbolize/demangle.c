// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ (Itanium ABI, "_Z...") and Rust (legacy "_ZN...17h<hash>E" and v0 "_R...") names
 * demangled with libiberty, the demangler binutils and GCC use (libstdc++'s
 * abi::__cxa_demangle is the same code): its callback interface streams the name into our
 * own buffer, so the output is bounded and nothing is allocated for it, and its options are
 * ours (no DMGL_TYPES: "i" stays "i" rather than becoming "int"). libiberty bounds its own
 * recursion (DEMANGLE_RECURSION_LIMIT); its work space is on the stack, proportional to the
 * input, which DEMANGLE_IN_MAX bounds.
 *
 * A name longer than DEMANGLE_OUT_MAX once demangled is demangled again without its
 * parameters ("at::native::add_kernel"), and cut ("...") if that is still too long. The
 * results are kept in the symbolizer's demangled table, for as long as the symbolizer.
 */
#include <string.h>

#include <libiberty/demangle.h>
#undef ARRAY_SIZE /* libiberty.h's, as macro.h has it */

#include "internal.h"

struct out {
	char *buf;
	size_t cap, len; /* cap includes the NUL */
	bool cut;
};

static void put(const char *s, size_t n, void *opaque)
{
	struct out *o = opaque;
	size_t room = o->cap - 1 - o->len;

	if (n > room) {
		n = room;
		o->cut = true;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static bool run(const char *name, int options, struct out *o)
{
	bool ok;

	o->len = 0;
	o->cut = false;
	/* Rust first: a legacy Rust name is a valid C++ name too, with the hash as a namespace */
	ok = (name[1] == 'R' || name[1] == 'Z') && rust_demangle_callback(name, options, put, o);
	if (!ok) {
		o->len = 0;
		o->cut = false;
		ok = name[1] == 'Z' && cplus_demangle_v3_callback(name, options, put, o);
	}
	o->buf[o->len] = 0;
	return ok && o->len > 0;
}

int demangle(const char *name, char *buf, size_t cap)
{
	struct out o = { .buf = buf, .cap = cap };
	size_t n = strnlen(name, DEMANGLE_IN_MAX + 1);

	if (cap < 16 || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R') || n > DEMANGLE_IN_MAX)
		return 0;
	if (!run(name, DMGL_PARAMS | DMGL_ANSI, &o))
		return 0;
	if (o.cut && !run(name, DMGL_ANSI, &o))
		return 0;
	if (o.cut) {
		size_t end = o.len - MIN(o.len, (size_t)3);

		/* not inside a UTF-8 sequence (Rust identifiers may hold any) */
		while (end > 0 && ((unsigned char)buf[end] & 0xc0) == 0x80)
			end--;
		memcpy(buf + end, "...", 4);
	}
	return 1;
}

const char *demangle_cached(struct name_table *t, const char *name)
{
	char buf[DEMANGLE_OUT_MAX + 1];
	const char *d;
	size_t n;

	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	n = strlen(name);
	d = name_table_get(t, name, n);
	if (d)
		return d[0] ? d : NULL;
	/* "" stored: not a mangled name after all, don't try again */
	if (!demangle(name, buf, sizeof(buf)))
		buf[0] = 0;
	d = name_table_put(t, name, n, buf, strlen(buf));
	return d && d[0] ? d : NULL;
}
