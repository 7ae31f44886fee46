/*
 * mem.h -- allocation helpers libbson does not give us reliably.
 *
 * Debian's libbson declares bson_t 128-byte aligned, and its
 * bson_aligned_alloc falls back to plain malloc on some builds; UBSan then
 * flags every member access.  tm_bson_array_new returns n zeroed, properly
 * aligned bson_t slots; free them with bson_free (after bson_destroy of each
 * initialised one).
 */
#ifndef TAMGA_COMMON_MEM_H
#define TAMGA_COMMON_MEM_H

#include <stdlib.h>
#include <string.h>
#include <bson/bson.h>

/* size zeroed bytes aligned for any struct that holds a bson_t or
 * bson_iter_t (both 128-byte aligned); free with bson_free. */
static inline void *
tm_alloc0(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 128, size ? size : 1) != 0)
		abort();
	memset(p, 0, size ? size : 1);
	return p;
}

/* bson_malloc0 for hot paths: glibc's calloc never takes a block from the
 * per-thread cache (tcache), so a small zeroed allocation costs several
 * times a malloc + memset.  Same contract as bson_malloc0: NULL for 0
 * bytes, aborts when memory is out, freed with bson_free. */
static inline void *
tm_malloc0(size_t size)
{
	void *p;

	if (size == 0)
		return NULL;
	p = bson_malloc(size);
	memset(p, 0, size);
	return p;
}

static inline bson_t *
tm_bson_array_new(size_t n)
{
	void *p = NULL;
	size_t size = sizeof(bson_t) * (n ? n : 1);

	if (posix_memalign(&p, BSON_ALIGNOF(bson_t), size) != 0)
		abort();
	memset(p, 0, size);
	return p;
}

#endif
