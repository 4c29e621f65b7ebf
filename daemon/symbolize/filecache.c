// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF files shared by every mapping of the same file, found by build-id or else by device,
 * inode, size and mtime. A file's symbol table (names copied out, libelf released) lives as
 * long as some mapping, current or retired, holds a reference; the last one takes its keys
 * out of the cache.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static struct file_key **cache_slot(struct file_cache *c, const char *key)
{
	uint64_t h = fnv1a(FNV_OFFSET, key, strlen(key));

	return &c->buckets[h & (c->n_buckets - 1)];
}

struct elf_file *cache_get(struct file_cache *c, const char *key)
{
	struct file_key *k;

	if (!c->n_buckets)
		return NULL;
	for (k = *cache_slot(c, key); k; k = k->next)
		if (!strcmp(k->key, key))
			return k->file;
	return NULL;
}

static int cache_grow(struct file_cache *c)
{
	size_t n = c->n_buckets ? c->n_buckets * 2 : 256;
	struct file_key **old = c->buckets, **b;
	size_t old_n = c->n_buckets;

	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	c->buckets = b;
	c->n_buckets = n;
	for (size_t i = 0; i < old_n; i++) {
		struct file_key *k = old[i], *next;

		for (; k; k = next) {
			struct file_key **slot = cache_slot(c, k->key);

			next = k->next;
			k->next = *slot;
			*slot = k;
		}
	}
	free(old);
	return 0;
}

/* Makes key lead to f. */
int cache_put(struct file_cache *c, const char *key, struct elf_file *f)
{
	size_t len = strlen(key);
	struct file_key **keys, **slot;
	_cleanup_free_ struct file_key *k = NULL;
	int r;

	if (c->n_keys >= c->n_buckets) {
		r = cache_grow(c);
		if (r < 0)
			return r;
	}
	k = malloc(sizeof(*k) + len + 1);
	if (!k)
		return -ENOMEM;
	keys = realloc(f->keys, (f->n_keys + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	f->keys = keys;
	memcpy(k->key, key, len + 1);
	k->file = f;
	slot = cache_slot(c, key);
	k->next = *slot;
	*slot = k;
	f->keys[f->n_keys++] = k;
	c->n_keys++;
	TAKE_PTR(k);
	return 0;
}

static void cache_remove_key(struct file_cache *c, struct file_key *k)
{
	struct file_key **p;

	for (p = cache_slot(c, k->key); *p; p = &(*p)->next) {
		if (*p == k) {
			*p = k->next;
			c->n_keys--;
			break;
		}
	}
	free(k);
}

struct elf_file *elf_file_ref(struct elf_file *f)
{
	if (f)
		f->refs++;
	return f;
}

void elf_file_unref(struct file_cache *c, struct elf_file *f)
{
	if (!f || --f->refs)
		return;
	for (size_t i = 0; i < f->n_keys; i++)
		cache_remove_key(c, f->keys[i]);
	if (f->n_keys)
		c->n_files--;
	free(f->keys);
	free(f->syms);
	free(f->max_end);
	free(f->names);
	free(f->segs);
	free(f);
}

int file_new_and_cache(struct symbolizer *s, const char *const *keys, size_t n_keys, struct elf_file *f)
{
	int r = 0;

	for (size_t i = 0; i < n_keys && r == 0; i++)
		if (keys[i])
			r = cache_put(&s->cache, keys[i], f);
	if (f->n_keys)
		s->cache.n_files++;
	return r;
}

int elf_file_get(struct symbolizer *s, const struct debug_search *ds, int fd, struct elf_file **ret)
{
	char ino_key[128], id_key[2 * BUILD_ID_MAX + 3];
	const char *keys[2] = { ino_key, NULL };
	struct elf_file *f;
	Elf *e;
	int r;

	snprintf(ino_key, sizeof(ino_key), "i:%llx:%llu:%lld:%lld.%09ld", (unsigned long long)ds->st.st_dev,
		 (unsigned long long)ds->st.st_ino, (long long)ds->st.st_size,
		 (long long)ds->st.st_mtim.tv_sec, ds->st.st_mtim.tv_nsec);
	f = cache_get(&s->cache, ino_key);
	if (f) {
		*ret = elf_file_ref(f);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->refs = 1;
	r = elf_open(fd, &ds->st, &e);
	if (r < 0) {
		f->err = r;
		e = NULL;
	} else {
		elf_build_id(e, f->build_id);
		if (f->build_id[0]) {
			struct elf_file *shared;

			snprintf(id_key, sizeof(id_key), "b:%s", f->build_id);
			shared = cache_get(&s->cache, id_key);
			if (shared) {
				/* the same build under another inode: another container's copy */
				elf_end(e);
				free(f);
				r = cache_put(&s->cache, ino_key, shared);
				if (r < 0)
					return r;
				*ret = elf_file_ref(shared);
				return 0;
			}
			keys[1] = id_key;
		}
		f->err = elf_load(ds, e, f);
	}
	if (e)
		elf_end(e);
	if (f->err == -ENOMEM) {
		elf_file_unref(&s->cache, f);
		return -ENOMEM;
	}
	if (f->err)
		s->elf_failed++;
	r = file_new_and_cache(s, keys, 2, f);
	if (r < 0) {
		elf_file_unref(&s->cache, f);
		return r;
	}
	*ret = f;
	return 0;
}
