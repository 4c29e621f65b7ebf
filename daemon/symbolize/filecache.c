// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF files shared by every mapping of the same file, found by build-id or else by device,
 * inode, size and mtime. A file's symbol table (names copied out, libelf released) lives as
 * long as some mapping, current or retired, holds a reference; the last one takes its keys
 * out of the cache.
 *
 * A read phase on the worker must not look into the cache while the loop changes it: it gets
 * known_files, the cache's keys at one moment, sorted and never written again, made anew only
 * when a key was put or removed since (gen).
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
	c->gen++;
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
			c->gen++;
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

struct elf_file *elf_file_new(void)
{
	struct elf_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->refs = 1;
	f->dwarf_fd = -1;
	return f;
}

void elf_file_unref(struct file_cache *c, struct elf_file *f)
{
	if (!f || --f->refs)
		return;
	/* opened as it was read (in no list yet), or by lookups (in c's: only a cached file is resolved) */
	dwarf_close(c ? &c->dwarf : NULL, f);
	dwarf_drop_fd(f->dwarf_fd);
	lines_free(f);
	for (size_t i = 0; i < DEBUG_PACKAGES; i++)
		free(f->debug_package[i]);
	for (size_t i = 0; i < f->n_keys; i++)
		cache_remove_key(c, f->keys[i]);
	if (f->n_keys)
		c->n_files--;
	free(f->keys);
	free(f->syms);
	free(f->max_end);
	free(f->names);
	free(f->segs);
	cfi_free(f->cfi);
	free(f);
}

int cache_put_file(struct file_cache *c, const char *const *keys, size_t n_keys, struct elf_file *f)
{
	int r = 0;

	for (size_t i = 0; i < n_keys && r == 0; i++)
		if (keys[i])
			r = cache_put(c, keys[i], f);
	if (f->n_keys)
		c->n_files++;
	return r;
}

void file_cache_done(struct file_cache *c)
{
	known_files_unref(c->known);
	free(c->buckets);
	free(c->dwarf.learned);
	*c = (struct file_cache){};
}

void file_key_inode(const struct stat *st, char ret[FILE_KEY_MAX])
{
	snprintf(ret, FILE_KEY_MAX, "i:%llx:%llu:%lld:%lld.%09ld", (unsigned long long)st->st_dev,
		 (unsigned long long)st->st_ino, (long long)st->st_size, (long long)st->st_mtim.tv_sec,
		 st->st_mtim.tv_nsec);
}

void file_key_build_id(const char *build_id, char ret[FILE_KEY_MAX])
{
	snprintf(ret, FILE_KEY_MAX, "b:%s", build_id);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One block: the struct, the sorted pointers, the strings. */
static int known_files_new(const struct file_cache *c, struct known_files **ret)
{
	size_t bytes = 0, n = 0;
	struct known_files *k;
	char *strings;

	for (size_t i = 0; i < c->n_buckets; i++)
		for (const struct file_key *fk = c->buckets[i]; fk; fk = fk->next)
			bytes += strlen(fk->key) + 1;
	k = malloc(sizeof(*k) + c->n_keys * sizeof(*k->keys) + bytes);
	if (!k)
		return -ENOMEM;
	*k = (struct known_files){ .refs = 1, .gen = c->gen, .keys = (const char **)(k + 1) };
	strings = (char *)(k->keys + c->n_keys);
	for (size_t i = 0; i < c->n_buckets; i++) {
		for (const struct file_key *fk = c->buckets[i]; fk && n < c->n_keys; fk = fk->next) {
			size_t len = strlen(fk->key) + 1;

			memcpy(strings, fk->key, len);
			k->keys[n++] = strings;
			strings += len;
		}
	}
	k->n = n;
	qsort_safe(k->keys, n, sizeof(*k->keys), cmp_key);
	*ret = k;
	return 0;
}

int known_files_get(struct file_cache *c, struct known_files **ret)
{
	int r;

	if (!c->known || c->known->gen != c->gen) {
		struct known_files *k;

		r = known_files_new(c, &k);
		if (r < 0)
			return r;
		known_files_unref(c->known);
		c->known = k;
	}
	c->known->refs++;
	*ret = c->known;
	return 0;
}

void known_files_unref(struct known_files *k)
{
	if (k && !--k->refs)
		free(k);
}

bool known_files_has(const struct known_files *k, const char *key)
{
	return k && bsearch(&key, k->keys, k->n, sizeof(*k->keys), cmp_key);
}
