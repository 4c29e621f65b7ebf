// SPDX-License-Identifier: GPL-2.0-only
/* offsets-table MINOR: daemon/python/offsets.c's row for 3.MINOR in offsets-probe's format. */
#include <stdio.h>
#include <stdlib.h>

#include "python/internal.h"

#define P(f) printf(#f " %lld\n", (long long)o->f)

int main(int argc, char **argv)
{
	const struct py_offsets *o = py_offsets_for(argc > 1 ? atoi(argv[1]) : 0);

	if (!o) {
		fprintf(stderr, "offsets-table: no row for 3.%s\n", argc > 1 ? argv[1] : "?");
		return 1;
	}
	P(runtime_size);
	P(rt_interp_head);
	P(rt_gil);
	P(is_gil_ptr);
	P(is_next);
	P(is_threads_head);
	P(is_id);
	P(gil_holder);
	P(gil_locked);
	P(gil_switch_number);
	P(gil_cond);
	P(gil_mutex);
	P(gil_switch_cond);
	P(gil_switch_mutex);
	P(gil_size);
	P(ts_next);
	P(ts_interp);
	P(ts_frame);
	P(ts_cframe_frame);
	P(ts_thread_id);
	P(ts_native_tid);
	P(fr_back);
	P(fr_code);
	P(fr_instr);
	P(fr_owner);
	P(fr_is_entry);
	P(owner_cstack);
	P(owner_generator);
	P(co_filename);
	P(co_name);
	P(co_firstlineno);
	P(co_linetable);
	P(co_qualname);
	P(co_code_adaptive);
	P(co_firsttraceable);
	P(var_size);
	P(ob_type);
	P(bytes_size);
	P(bytes_sval);
	P(str_length);
	P(str_state);
	P(str_ascii_size);
	P(str_compact_size);
	printf("str_data_any %lld\n", (long long)o->str_compact_size); /* data.any follows the compact head */
	return 0;
}
