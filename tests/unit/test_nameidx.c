/*
 * test_nameidx.c -- the lazy name index of common/nameidx.h: short lists
 * scanned without allocating, long ones hashed, names appended between
 * lookups indexed at the next one, repeats found at their first position,
 * names compared as bytes (embedded NULs, prefixes), reset after the list
 * changed, and a random model check against a plain scan.
 */
#include "tt.h"

#include <stdlib.h>
#include <string.h>

#include "common/nameidx.h"

typedef struct list {
	char **names;
	size_t *lens;
	uint32_t n;
} list_t;

static const char *
name_of(const void *ctx, uint32_t i, size_t *len)
{
	const list_t *l = ctx;

	*len = l->lens[i];
	return l->names[i];
}

static void
push(list_t *l, const char *s, size_t len)
{
	l->names = realloc(l->names, sizeof(char *) * (l->n + 1));
	l->lens = realloc(l->lens, sizeof(size_t) * (l->n + 1));
	l->names[l->n] = malloc(len + 1);
	memcpy(l->names[l->n], s, len);
	l->names[l->n][len] = '\0';
	l->lens[l->n] = len;
	l->n++;
}

static void
list_free(list_t *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		free(l->names[i]);
	free(l->names);
	free(l->lens);
	memset(l, 0, sizeof(*l));
}

static int64_t
scan(const list_t *l, const char *s, size_t len)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->lens[i] == len && memcmp(l->names[i], s, len) == 0)
			return i;
	return -1;
}

static void
test_short_lists_do_not_allocate(void)
{
	tm_nameidx_t ix = TM_NAMEIDX_INIT;
	list_t l = {0};

	push(&l, "a", 1);
	push(&l, "b", 1);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "b", 1, name_of, &l), 1);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "c", 1, name_of, &l), -1);
	TT_ASSERT(ix.slot == NULL);
	tm_nameidx_free(&ix);
	list_free(&l);
}

static void
test_growth_repeats_and_bytes(void)
{
	tm_nameidx_t ix = TM_NAMEIDX_INIT;
	list_t l = {0};
	char buf[32];

	for (int i = 0; i < 1000; i++) {
		int n = snprintf(buf, sizeof(buf), "f%d", i);
		push(&l, buf, (size_t)n);
		/* every name findable right after its append */
		TT_EQ_INT(tm_nameidx_find(&ix, l.n, buf, (size_t)n, name_of, &l), i);
	}
	TT_ASSERT(ix.slot != NULL);
	TT_ASSERT(ix.cap >= 2000);
	/* a repeat: the first stays the one found */
	push(&l, "f7", 2);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "f7", 2, name_of, &l), 7);
	/* bytes, not C strings: a prefix and an embedded NUL are other names */
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "f", 1, name_of, &l), -1);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "f7\0x", 4, name_of, &l), -1);
	push(&l, "f7\0x", 4);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "f7\0x", 4, name_of, &l), 1001);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "", 0, name_of, &l), -1);
	/* the list shrank: a lookup over fewer names than indexed starts over */
	TT_EQ_INT(tm_nameidx_find(&ix, 500, "f700", 4, name_of, &l), -1);
	TT_EQ_INT(tm_nameidx_find(&ix, 500, "f499", 4, name_of, &l), 499);
	tm_nameidx_free(&ix);
	TT_ASSERT(ix.slot == NULL && ix.cap == 0 && ix.count == 0);
	list_free(&l);
}

static void
test_reset_after_reorder(void)
{
	tm_nameidx_t ix = TM_NAMEIDX_INIT;
	list_t l = {0};
	char buf[32];

	for (int i = 0; i < 100; i++) {
		int n = snprintf(buf, sizeof(buf), "k%d", i);
		push(&l, buf, (size_t)n);
	}
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "k0", 2, name_of, &l), 0);
	/* swap two names, reset, find them at their new places */
	{
		char *t = l.names[0];
		size_t tl = l.lens[0];
		l.names[0] = l.names[99];
		l.lens[0] = l.lens[99];
		l.names[99] = t;
		l.lens[99] = tl;
	}
	tm_nameidx_reset(&ix);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "k0", 2, name_of, &l), 99);
	TT_EQ_INT(tm_nameidx_find(&ix, l.n, "k99", 3, name_of, &l), 0);
	tm_nameidx_free(&ix);
	list_free(&l);
}

static void
test_random_model(void)
{
	tm_nameidx_t ix = TM_NAMEIDX_INIT;
	list_t l = {0};
	unsigned seed = 21;
	char buf[8];

	for (int step = 0; step < 20000; step++) {
		int len = 1 + (int)(rand_r(&seed) % 3);
		for (int k = 0; k < len; k++)
			buf[k] = (char)('a' + rand_r(&seed) % 6);
		if (rand_r(&seed) % 3 == 0)
			push(&l, buf, (size_t)len);
		if (tm_nameidx_find(&ix, l.n, buf, (size_t)len, name_of, &l) != scan(&l, buf, (size_t)len)) {
			TT_FAIL_("step %d: %.*s", step, len, buf);
			break;
		}
	}
	tm_nameidx_free(&ix);
	list_free(&l);
}

int
main(void)
{
	TT_RUN(test_short_lists_do_not_allocate);
	TT_RUN(test_growth_repeats_and_bytes);
	TT_RUN(test_reset_after_reorder);
	TT_RUN(test_random_model);
	return tt_finish();
}
