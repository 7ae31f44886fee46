/*
 * nameidx.h -- a hash index over a growing list of names, so that finding
 * a field among n siblings costs O(1) instead of a scan.
 *
 * Projections, update specs and $project / $addFields keep their fields in
 * trees whose nodes list their children in request order; with a scan per
 * lookup, a spec of n fields parses in O(n^2) (40 000 fields took seconds).
 * The index does not own the names: the caller's list does, and the index
 * reads them back through name_of(ctx, i).  It is lazy: lists shorter than
 * TM_NAMEIDX_MIN are scanned (most nodes have a handful of children and
 * never allocate), and names appended since the last lookup are indexed at
 * the next one.  Names are compared as bytes (len given, not
 * NUL-terminated).  Not thread-safe; one owner.
 */
#ifndef TAMGA_COMMON_NAMEIDX_H
#define TAMGA_COMMON_NAMEIDX_H

#include <stddef.h>
#include <stdint.h>

#define TM_NAMEIDX_MIN 16

typedef struct tm_nameidx {
	uint32_t *slot;    /* cap slots: 0 empty, else list index + 1 */
	uint32_t cap;      /* a power of two, 0 = nothing built */
	uint32_t count;    /* names 0..count-1 are indexed */
} tm_nameidx_t;

#define TM_NAMEIDX_INIT {NULL, 0, 0}

/* The i-th name of the caller's list and its length (borrowed). */
typedef const char *(*tm_nameidx_name_fn)(const void *ctx, uint32_t i, size_t *len);

/*
 * The index of name (len bytes) among the list's n names, or -1.  Indexes
 * names count..n-1 first (the list only grows between calls; after it
 * shrinks or reorders, tm_nameidx_reset).  When names repeat, the first is
 * found.  Allocation failure aborts, as bson_malloc.
 */
int64_t tm_nameidx_find(tm_nameidx_t *ix, uint32_t n, const char *name, size_t len,
                        tm_nameidx_name_fn name_of, const void *ctx);

/* Forget everything (the list changed other than by appending). */
void tm_nameidx_reset(tm_nameidx_t *ix);

/* Free the index (the names are the caller's). */
void tm_nameidx_free(tm_nameidx_t *ix);

#endif
