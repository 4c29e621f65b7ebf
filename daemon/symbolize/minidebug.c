// SPDX-License-Identifier: GPL-2.0-only
/*
 * MiniDebugInfo, as Fedora and its kin ship binaries: a section .gnu_debugdata holding an
 * xz-compressed ELF file whose .symtab has the functions .dynsym does not (local and
 * hidden ones), made with `objcopy --only-keep-debug`, stripped to its symbol table, `xz`
 * and `objcopy --add-section .gnu_debugdata=...`. Decompressed with liblzma into memory,
 * bounded: the compressed and decompressed sizes by MINIDEBUG_BYTES_MAX, the decoder's
 * memory by MINIDEBUG_DECODER_MAX, the time by MINIDEBUG_NS (checked between chunks of
 * output). Runs where the file is read: on the worker, or in a snapshot job.
 */
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MINIDEBUG_DECODER_MAX (64u << 20)
#define MINIDEBUG_CHUNK (1u << 20)

/* data[0..n) decompressed; *ret malloc'ed. */
int minidebug_decompress(const void *data, size_t n, uint64_t max_bytes, uint64_t max_ns, void **ret,
			 size_t *ret_len)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint64_t t0 = now_mono_ns();
	_cleanup_free_ uint8_t *out = NULL;
	size_t cap = 0;
	lzma_ret lr;
	int r = 0;

	if (n > max_bytes)
		return -E2BIG;
	if (lzma_stream_decoder(&strm, MINIDEBUG_DECODER_MAX, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = data;
	strm.avail_in = n;
	for (;;) {
		if (!strm.avail_out) {
			size_t ncap = MIN(cap + MINIDEBUG_CHUNK, (size_t)max_bytes);
			uint8_t *p;

			if (ncap == cap) {
				r = -E2BIG;
				break;
			}
			p = realloc(out, ncap);
			if (!p) {
				r = -ENOMEM;
				break;
			}
			out = p;
			strm.next_out = out + cap;
			strm.avail_out = ncap - cap;
			cap = ncap;
		}
		lr = lzma_code(&strm, LZMA_FINISH);
		if (lr == LZMA_STREAM_END)
			break;
		if (lr != LZMA_OK) {
			r = lr == LZMA_MEM_ERROR || lr == LZMA_MEMLIMIT_ERROR ? -E2BIG : -EBADMSG;
			break;
		}
		if (now_mono_ns() - t0 > max_ns) {
			r = -ETIME;
			break;
		}
	}
	if (r == 0) {
		*ret_len = strm.total_out;
		*ret = TAKE_PTR(out);
	}
	lzma_end(&strm);
	return r;
}

int minidebug_read(Elf *bin, void **ret, size_t *ret_len)
{
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr sh;

	scn = elf_find_section_named(bin, ".gnu_debugdata", &sh);
	if (!scn || sh.sh_type == SHT_NOBITS)
		return -ENOENT;
	if (sh.sh_size > MINIDEBUG_BYTES_MAX)
		return -E2BIG;
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf)
		return -EBADMSG;
	return minidebug_decompress(data->d_buf, data->d_size, MINIDEBUG_BYTES_MAX, MINIDEBUG_NS, ret,
				    ret_len);
}
