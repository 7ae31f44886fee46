/*
 * arena.h -- a region allocator: many small allocations that all die
 * together, freed in one step.
 *
 * A query's plan (bounds, intervals, ranges, rejected plans) and an
 * expression evaluation's results are made of dozens of small pieces with
 * one lifetime; taking each from malloc costs more than the work they hold.
 * An arena hands out 16-byte aligned pieces from blocks it owns; nothing is
 * freed on its own.  An optional first block lives inside the caller's
 * struct (`first`), so a small region costs no allocation at all.
 *
 * Not thread-safe; an arena belongs to one owner.  Pieces must not hold
 * objects needing 128-byte alignment (bson_t, bson_iter_t: common/mem.h).
 */
#ifndef TAMGA_COMMON_ARENA_H
#define TAMGA_COMMON_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include <bson/bson.h>

typedef struct tm_arena_block tm_arena_block_t;

typedef struct tm_arena {
	tm_arena_block_t *blocks;    /* heap blocks, newest first (owned) */
	uint8_t *cur;                /* free space of the current block */
	size_t left;
	uint8_t *first;              /* the caller's block (borrowed; NULL: none) */
	size_t first_size;
} tm_arena_t;

/* Start an empty arena.  first (may be NULL) is a buffer of first_size bytes,
 * 16-byte aligned, that the arena uses before any heap block; it must live
 * as long as the arena. */
void tm_arena_init(tm_arena_t *a, void *first, size_t first_size);

/* n bytes, 16-byte aligned, uninitialised (tm_arena_alloc0: zeroed); never
 * NULL (aborts when memory is out, as bson_malloc).  Owned by the arena. */
void *tm_arena_alloc(tm_arena_t *a, size_t n);
void *tm_arena_alloc0(tm_arena_t *a, size_t n);

/* A copy of n bytes of p (n may be 0: a valid 1-byte piece), and of the
 * string s with its NUL. */
void *tm_arena_memdup(tm_arena_t *a, const void *p, size_t n);
char *tm_arena_strdup(tm_arena_t *a, const char *s);

/* A deep copy of v into out: strings, documents, binary data... live in the
 * arena (out holds no heap memory of its own; never bson_value_destroy it). */
void tm_arena_value_copy(tm_arena_t *a, const bson_value_t *v, bson_value_t *out);

/* Grow the piece p (of old_n bytes, from this arena, or NULL) to n bytes:
 * a new piece holding the old bytes; the old one stays until the arena
 * dies. */
void *tm_arena_realloc(tm_arena_t *a, void *p, size_t old_n, size_t n);

/* Forget every piece but keep memory for the next round: the caller's
 * block, or else one heap block of the usual size; bigger ones are freed. */
void tm_arena_reset(tm_arena_t *a);

/* Free every heap block; the arena is empty (and may be reused). */
void tm_arena_destroy(tm_arena_t *a);

#endif
