/*
 * nameidx.c -- open addressing (linear probing) over list indexes, FNV-1a
 * hashes, rebuilt at twice the size when half full (nameidx.h).
 */
#include "common/nameidx.h"

#include <string.h>
#include <bson/bson.h>

static uint64_t
hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void
insert(tm_nameidx_t *ix, uint32_t i, tm_nameidx_name_fn name_of, const void *ctx)
{
	size_t len;
	const char *name = name_of(ctx, i, &len);
	uint32_t mask = ix->cap - 1, s = (uint32_t)hash_bytes(name, len) & mask;

	while (ix->slot[s] != 0) {
		size_t l2;
		const char *n2 = name_of(ctx, ix->slot[s] - 1, &l2);
		if (l2 == len && memcmp(n2, name, len) == 0)
			return;     /* a repeat: the first stays the one found */
		s = (s + 1) & mask;
	}
	ix->slot[s] = i + 1;
}

static void
grow(tm_nameidx_t *ix, uint32_t want, tm_nameidx_name_fn name_of, const void *ctx)
{
	uint32_t cap = ix->cap ? ix->cap : 64;

	while (cap < 2 * (uint64_t)want)
		cap *= 2;
	if (cap == ix->cap)
		return;
	bson_free(ix->slot);
	ix->slot = bson_malloc0(sizeof(uint32_t) * cap);
	ix->cap = cap;
	for (uint32_t i = 0; i < ix->count; i++)
		insert(ix, i, name_of, ctx);
}

int64_t
tm_nameidx_find(tm_nameidx_t *ix, uint32_t n, const char *name, size_t len,
                tm_nameidx_name_fn name_of, const void *ctx)
{
	uint32_t mask, s;

	if (n < TM_NAMEIDX_MIN) {
		for (uint32_t i = 0; i < n; i++) {
			size_t l2;
			const char *n2 = name_of(ctx, i, &l2);
			if (l2 == len && memcmp(n2, name, len) == 0)
				return i;
		}
		return -1;
	}
	if (ix->count > n)
		tm_nameidx_reset(ix);
	if (ix->cap < 2 * (uint64_t)n)
		grow(ix, n, name_of, ctx);
	while (ix->count < n)
		insert(ix, ix->count++, name_of, ctx);
	mask = ix->cap - 1;
	s = (uint32_t)hash_bytes(name, len) & mask;
	while (ix->slot[s] != 0) {
		size_t l2;
		const char *n2 = name_of(ctx, ix->slot[s] - 1, &l2);
		if (l2 == len && memcmp(n2, name, len) == 0)
			return ix->slot[s] - 1;
		s = (s + 1) & mask;
	}
	return -1;
}

void
tm_nameidx_reset(tm_nameidx_t *ix)
{
	if (ix->slot != NULL)
		memset(ix->slot, 0, sizeof(uint32_t) * ix->cap);
	ix->count = 0;
}

void
tm_nameidx_free(tm_nameidx_t *ix)
{
	bson_free(ix->slot);
	ix->slot = NULL;
	ix->cap = 0;
	ix->count = 0;
}
