// SPDX-License-Identifier: GPL-2.0-only
/*
 * perfetto-sched PROTO_DIR FILE.pftrace: the scheduler events of a Perfetto trace, one a
 * line, as a reader sees them (the compact_sched ones completed from their CPU's previous
 * switch: tests/unit/perfetto-decode.h), for the end-to-end scripts to count and grep:
 *   switch CPU TS PREV_TID PREV_COMM PREV_STATE PREV_PRIO NEXT_TID NEXT_COMM NEXT_PRIO
 *   waking CPU TS WAKER_TID WOKEN_TID WOKEN_COMM TARGET_CPU
 * by CPU, then time. Names with spaces print them as '_'. Exit 0, or 1 when protoc cannot
 * decode the file or a compact event cannot be read back.
 */
#include <stdio.h>

#include "../unit/perfetto-decode.h"

static void put_name(const char *s)
{
	if (!s || !*s) {
		fputs("?", stdout);
		return;
	}
	for (; *s; s++)
		putchar(*s == ' ' || *s == '\t' || *s == '\n' ? '_' : *s);
}

int main(int argc, char **argv)
{
	struct pd_node *root;
	struct pd_sched sc;
	char *text;
	size_t len;

	if (argc != 3) {
		fprintf(stderr, "usage: perfetto-sched PROTO_DIR FILE.pftrace\n");
		return 2;
	}
	if (pd_run_protoc(argv[1], argv[2], &text, &len) < 0)
		return 1;
	root = pd_tree_parse(text);
	if (!root) {
		fprintf(stderr, "perfetto-sched: protoc output does not nest\n");
		return 1;
	}
	pd_read_sched(root, &sc);
	for (size_t i = 0; i < sc.n; i++) {
		const struct pd_sched_ev *e = &sc.ev[i];

		if (e->kind == PD_SWITCH) {
			printf("switch %u %" PRIu64 " %" PRId64 " ", e->cpu, e->ts, e->prev_pid);
			put_name(e->prev_comm);
			printf(" %" PRId64 " %" PRId64 " %" PRId64 " ", e->prev_state, e->prev_prio, e->next_pid);
			put_name(e->next_comm);
			printf(" %" PRId64 "\n", e->next_prio);
		} else if (e->kind == PD_WAKING) {
			printf("waking %u %" PRIu64 " %" PRId64 " %" PRId64 " ", e->cpu, e->ts, e->pid, e->woken);
			put_name(e->comm);
			printf(" %" PRId64 "\n", e->target_cpu);
		}
	}
	if (sc.bad_columns || sc.dropped) {
		fprintf(stderr, "perfetto-sched: %zu bad compact columns, %zu compact events before a switch\n",
			sc.bad_columns, sc.dropped);
		return 1;
	}
	pd_sched_free(&sc);
	pd_tree_free(root);
	free(text);
	return 0;
}
