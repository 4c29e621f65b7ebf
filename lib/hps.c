// SPDX-License-Identifier: GPL-2.0-only
/* Reading and writing .hps snapshot files; see hps.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hps.h"
#include "macro.h"

int hps_pack(const Hostprof__Snapshot *snap, uint8_t **ret_data, size_t *ret_len)
{
	size_t n = protobuf_c_message_get_packed_size(&snap->base);
	uint8_t *p;

	p = malloc(HPS_MAGIC_LEN + n);
	if (!p)
		return -ENOMEM;
	memcpy(p, HPS_MAGIC, HPS_MAGIC_LEN);
	protobuf_c_message_pack(&snap->base, p + HPS_MAGIC_LEN);
	*ret_data = p;
	*ret_len = HPS_MAGIC_LEN + n;
	return 0;
}

int hps_unpack(const uint8_t *data, size_t len, Hostprof__Snapshot **ret_snap)
{
	Hostprof__Snapshot *s;
	const Hostprof__SchedSwitchTable *t;

	if (len < HPS_MAGIC_LEN || memcmp(data, HPS_MAGIC, HPS_MAGIC_LEN))
		return -EBADMSG;
	s = hostprof__snapshot__unpack(NULL, len - HPS_MAGIC_LEN, data + HPS_MAGIC_LEN);
	if (!s)
		return -EBADMSG;
	/* The columns of a table must line up; the exporters rely on it. */
	t = s->switches;
	if (t) {
		size_t n = t->n_ts_delta;

		if (t->n_cpu != n || t->n_prev_tid != n || t->n_prev_pid != n || t->n_prev_comm != n ||
		    t->n_prev_prio != n || t->n_prev_state != n || t->n_next_tid != n ||
		    t->n_next_pid != n || t->n_next_comm != n || t->n_next_prio != n) {
			hostprof__snapshot__free_unpacked(s, NULL);
			return -EBADMSG;
		}
		for (size_t i = 0; i < n; i++)
			if (t->prev_comm[i] >= s->n_strings || t->next_comm[i] >= s->n_strings) {
				hostprof__snapshot__free_unpacked(s, NULL);
				return -EBADMSG;
			}
	}
	*ret_snap = s;
	return 0;
}

int hps_read_file(const char *path, Hostprof__Snapshot **ret_snap)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *data = NULL;
	struct stat st;
	size_t off = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	if (fstat(fd, &st) < 0)
		return negative_errno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > HPS_MAX_FILE)
		return -EFBIG;
	data = malloc(st.st_size ? st.st_size : 1);
	if (!data)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, data + off, st.st_size - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negative_errno();
		}
		if (n == 0)
			break;
		off += n;
	}
	return hps_unpack(data, off, ret_snap);
}

void hps_free(Hostprof__Snapshot *snap)
{
	if (snap)
		hostprof__snapshot__free_unpacked(snap, NULL);
}

int hps_switch_times(const Hostprof__Snapshot *snap, uint64_t **ret_ts)
{
	const Hostprof__SchedSwitchTable *t = snap->switches;
	size_t n = t ? t->n_ts_delta : 0;
	uint64_t *ts, cur = snap->start_ns;

	ts = malloc(MAX(n, (size_t)1) * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cur += t->ts_delta[i];
		ts[i] = cur;
	}
	*ret_ts = ts;
	return 0;
}
