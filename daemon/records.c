// SPDX-License-Identifier: GPL-2.0-only
/* The record types of bpf/hostprof.h; see records.h. */
#include <errno.h>

#include "records.h"

/* HP_RECORDS names every type from 1 to HP_EV_MAX - 1 once: the switches below refuse
 * a type listed twice, this a type left out. */
#define X_COUNT(type, st, name, frames) +1
_Static_assert(0 HP_RECORDS(X_COUNT) == HP_EV_MAX - 1, "HP_RECORDS must list every HP_EV_* type");
#undef X_COUNT

int record_check(const void *data, size_t size)
{
	const struct hp_hdr *hdr = data;

	if (size < sizeof(*hdr) || hdr->size != size ||
	    size > (hdr->type == HP_EV_RAWSAMPLE || hdr->type == HP_EV_RAWUSTACK ? HP_MAX_RAW_RECORD : HP_MAX_RECORD))
		return -EBADMSG;
	switch (hdr->type) {
#define X_CHECK(type, st, name, frames)                                                         \
	case type: {                                                                            \
		const struct st *e = data;                                                      \
                                                                                                \
		(void)e;                                                                        \
		if (size < sizeof(*e) || size != sizeof(*e) + (size_t)(frames) * sizeof(__u64)) \
			return -EBADMSG;                                                        \
		return 0;                                                                       \
	}
		HP_RECORDS(X_CHECK)
#undef X_CHECK
	}
	return -EBADMSG;
}

const char *record_name(uint32_t type)
{
	switch (type) {
#define X_NAME(type, st, name, frames) \
	case type:                     \
		return #name;
		HP_RECORDS(X_NAME)
#undef X_NAME
	}
	return "unknown";
}
