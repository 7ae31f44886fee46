/*
 * test_arena.c -- common/arena.h: alignment, the caller's first block, big
 * pieces beside the current block, growth by copy, reset and destroy, and
 * deep value copies that outlive their source.  Runs under ASan: a piece
 * written past its size or read after destroy fails the run.
 */
#include "tt.h"

#include <stdalign.h>
#include <stdint.h>

#include "common/arena.h"

static void
test_first_block_then_heap(void)
{
	alignas(16) uint8_t first[256];
	tm_arena_t a;
	uint8_t *p[64];
	int i, inside = 0;

	tm_arena_init(&a, first, sizeof(first));
	for (i = 0; i < 64; i++) {
		p[i] = tm_arena_alloc(&a, (size_t)i + 1);
		TT_EQ_INT((uintptr_t)p[i] % 16, 0);
		memset(p[i], i, (size_t)i + 1);
		if (p[i] >= first && p[i] < first + sizeof(first))
			inside++;
	}
	/* the first pieces came from the caller's block, the rest from the heap */
	TT_ASSERT(inside > 0 && inside < 64);
	TT_ASSERT(p[0] == first);
	for (i = 0; i < 64; i++)
		for (int k = 0; k <= i; k++)
			if (p[i][k] != (uint8_t)i)
				TT_FAIL_("piece %d byte %d overwritten", i, k);
	tm_arena_destroy(&a);
	/* reusable after destroy: back to the caller's block */
	TT_ASSERT(tm_arena_alloc(&a, 8) == (void *)first);
	tm_arena_destroy(&a);
}

static void
test_big_piece_keeps_current_block(void)
{
	tm_arena_t a;
	uint8_t *small1, *big, *small2;

	tm_arena_init(&a, NULL, 0);
	small1 = tm_arena_alloc(&a, 32);
	big = tm_arena_alloc(&a, 100000);
	memset(big, 0xab, 100000);
	small2 = tm_arena_alloc(&a, 32);
	/* the small pieces share a block: the big one did not end it */
	TT_EQ_INT(small2 - small1, 32);
	TT_EQ_INT(big[99999], 0xab);
	tm_arena_destroy(&a);
}

static void
test_zeroed_dup_realloc(void)
{
	tm_arena_t a;
	uint8_t *z;
	char *s, *g;
	int i;

	tm_arena_init(&a, NULL, 0);
	z = tm_arena_alloc0(&a, 100);
	for (i = 0; i < 100; i++)
		TT_EQ_INT(z[i], 0);
	s = tm_arena_strdup(&a, "bounds");
	TT_EQ_STR(s, "bounds");
	TT_ASSERT(tm_arena_memdup(&a, NULL, 0) != NULL);
	g = tm_arena_realloc(&a, NULL, 0, 4);
	memcpy(g, "abcd", 4);
	g = tm_arena_realloc(&a, g, 4, 9000);
	TT_ASSERT(memcmp(g, "abcd", 4) == 0);
	g[8999] = 'x';
	TT_ASSERT(tm_arena_realloc(&a, g, 9000, 10) == g);
	tm_arena_destroy(&a);
}

static void
test_reset_keeps_one_block(void)
{
	tm_arena_t a;
	void *p, *q;
	int i;

	tm_arena_init(&a, NULL, 0);
	p = tm_arena_alloc(&a, 64);
	for (i = 0; i < 1000; i++)
		tm_arena_alloc(&a, 64);
	tm_arena_alloc(&a, 50000);
	tm_arena_reset(&a);
	q = tm_arena_alloc(&a, 64);
	TT_ASSERT(q != NULL);
	(void)p;
	tm_arena_reset(&a);
	tm_arena_reset(&a);
	tm_arena_destroy(&a);
}

static void
test_value_copy_outlives_source(void)
{
	tm_arena_t a;
	bson_t *src = BCON_NEW("s", BCON_UTF8("title"), "d", "{", "k", BCON_INT32(1), "}",
	    "r", BCON_REGEX("^a", "i"), "b", BCON_BIN(BSON_SUBTYPE_BINARY, (const uint8_t *)"xyz", 3));
	bson_value_t out[4];
	bson_iter_t it;
	int n = 0;

	tm_arena_init(&a, NULL, 0);
	bson_iter_init(&it, src);
	while (bson_iter_next(&it) && n < 4)
		tm_arena_value_copy(&a, bson_iter_value(&it), &out[n++]);
	bson_destroy(src);   /* the copies own nothing of src */
	TT_EQ_INT(n, 4);
	TT_EQ_STR(out[0].value.v_utf8.str, "title");
	TT_EQ_INT(out[0].value.v_utf8.len, 5);
	{
		bson_t d;
		TT_ASSERT(bson_init_static(&d, out[1].value.v_doc.data, out[1].value.v_doc.data_len));
		TT_EQ_JSON(&d, "{ \"k\" : 1 }");
	}
	TT_EQ_STR(out[2].value.v_regex.regex, "^a");
	TT_EQ_STR(out[2].value.v_regex.options, "i");
	TT_ASSERT(out[3].value.v_binary.data_len == 3 && memcmp(out[3].value.v_binary.data, "xyz", 3) == 0);
	tm_arena_destroy(&a);
}

int
main(void)
{
	TT_RUN(test_first_block_then_heap);
	TT_RUN(test_big_piece_keeps_current_block);
	TT_RUN(test_zeroed_dup_realloc);
	TT_RUN(test_reset_keeps_one_block);
	TT_RUN(test_value_copy_outlives_source);
	return tt_finish();
}
