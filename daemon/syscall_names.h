/* SPDX-License-Identifier: GPL-2.0-only */
/* Syscall names of the arch hostprofd was built for, by number (NULL: no syscall). */
#ifndef HOSTPROF_SYSCALL_NAMES_H
#define HOSTPROF_SYSCALL_NAMES_H

extern const char *const syscall_names[];
extern const unsigned int syscall_names_len;

#endif
