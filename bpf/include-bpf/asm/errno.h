/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * BPF-only: what <linux/errno.h> (which libbpf's usdt.bpf.h includes) wants of the
 * architecture's <asm/errno.h>, which the BPF target does not have: the codes
 * usdt.bpf.h returns, as every Linux architecture numbers them.
 */
#ifndef HOSTPROF_BPF_ASM_ERRNO_H
#define HOSTPROF_BPF_ASM_ERRNO_H

#define ENOENT 2
#define ESRCH 3
#define EINVAL 22

#endif
