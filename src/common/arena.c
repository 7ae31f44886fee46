/*
 * arena.c -- the region allocator of arena.h.
 */
#include "common/arena.h"

#include <stdalign.h>
#include <stdbool.h>
#include <string.h>
#include <bson/bson.h>

struct tm_arena_block {
	tm_arena_block_t *next;
	size_t cap;
	alignas(16) uint8_t data[];
};

#define ARENA_BLOCK 8192
#define ALIGN16(n) (((n) + 15) & ~(size_t)15)

void
tm_arena_init(tm_arena_t *a, void *first, size_t first_size)
{
	a->blocks = NULL;
	a->first = first;
	a->first_size = first != NULL ? first_size & ~(size_t)15 : 0;
	a->cur = a->first;
	a->left = a->first_size;
}

void *
tm_arena_alloc(tm_arena_t *a, size_t n)
{
	tm_arena_block_t *b;
	void *p;

	n = n ? ALIGN16(n) : 16;
	if (n <= a->left) {
		p = a->cur;
		a->cur += n;
		a->left -= n;
		return p;
	}
	if (n > ARENA_BLOCK / 2) {
		/* a big piece gets a block of its own; the current one goes on */
		b = bson_malloc(sizeof(*b) + n);
		b->cap = n;
		if (a->blocks != NULL) {
			b->next = a->blocks->next;
			a->blocks->next = b;
		} else {
			b->next = NULL;
			a->blocks = b;
		}
		return b->data;
	}
	b = bson_malloc(sizeof(*b) + ARENA_BLOCK);
	b->cap = ARENA_BLOCK;
	b->next = a->blocks;
	a->blocks = b;
	a->cur = b->data + n;
	a->left = ARENA_BLOCK - n;
	return b->data;
}

void *
tm_arena_alloc0(tm_arena_t *a, size_t n)
{
	void *p = tm_arena_alloc(a, n);

	memset(p, 0, n);
	return p;
}

void *
tm_arena_memdup(tm_arena_t *a, const void *p, size_t n)
{
	void *q = tm_arena_alloc(a, n);

	if (n)
		memcpy(q, p, n);
	return q;
}

char *
tm_arena_strdup(tm_arena_t *a, const char *s)
{
	return tm_arena_memdup(a, s, strlen(s) + 1);
}

static void *
copy_bytes(tm_arena_t *a, const void *src, size_t n, bool nul)
{
	uint8_t *p = tm_arena_alloc(a, n + (nul ? 1 : 0));

	if (n)
		memcpy(p, src, n);
	if (nul)
		p[n] = 0;
	return p;
}

void
tm_arena_value_copy(tm_arena_t *a, const bson_value_t *v, bson_value_t *out)
{
	*out = *v;
	switch (v->value_type) {
	case BSON_TYPE_UTF8:
		out->value.v_utf8.str = copy_bytes(a, v->value.v_utf8.str, v->value.v_utf8.len, true);
		break;
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY:
		out->value.v_doc.data = copy_bytes(a, v->value.v_doc.data, v->value.v_doc.data_len, false);
		break;
	case BSON_TYPE_BINARY:
		out->value.v_binary.data = copy_bytes(a, v->value.v_binary.data, v->value.v_binary.data_len, false);
		break;
	case BSON_TYPE_REGEX:
		out->value.v_regex.regex = copy_bytes(a, v->value.v_regex.regex, strlen(v->value.v_regex.regex), true);
		out->value.v_regex.options = copy_bytes(a, v->value.v_regex.options, strlen(v->value.v_regex.options),
		    true);
		break;
	case BSON_TYPE_CODE:
		out->value.v_code.code = copy_bytes(a, v->value.v_code.code, v->value.v_code.code_len, true);
		break;
	case BSON_TYPE_SYMBOL:
		out->value.v_symbol.symbol = copy_bytes(a, v->value.v_symbol.symbol, v->value.v_symbol.len, true);
		break;
	case BSON_TYPE_DBPOINTER:
		out->value.v_dbpointer.collection = copy_bytes(a, v->value.v_dbpointer.collection,
		    v->value.v_dbpointer.collection_len, true);
		break;
	case BSON_TYPE_CODEWSCOPE:
		out->value.v_codewscope.code = copy_bytes(a, v->value.v_codewscope.code, v->value.v_codewscope.code_len,
		    true);
		out->value.v_codewscope.scope_data = copy_bytes(a, v->value.v_codewscope.scope_data,
		    v->value.v_codewscope.scope_len, false);
		break;
	default:
		break;
	}
}

void *
tm_arena_realloc(tm_arena_t *a, void *p, size_t old_n, size_t n)
{
	void *q;

	if (n <= old_n)
		return p;
	q = tm_arena_alloc(a, n);
	if (p != NULL && old_n)
		memcpy(q, p, old_n);
	return q;
}

void
tm_arena_reset(tm_arena_t *a)
{
	tm_arena_block_t *b = a->blocks, *keep = NULL, *next;

	for (; b != NULL; b = next) {
		next = b->next;
		if (keep == NULL && a->first == NULL && b->cap == ARENA_BLOCK)
			keep = b;
		else
			bson_free(b);
	}
	a->blocks = keep;
	if (keep != NULL) {
		keep->next = NULL;
		a->cur = keep->data;
		a->left = keep->cap;
	} else {
		a->cur = a->first;
		a->left = a->first_size;
	}
}

void
tm_arena_destroy(tm_arena_t *a)
{
	tm_arena_block_t *b = a->blocks, *next;

	for (; b != NULL; b = next) {
		next = b->next;
		bson_free(b);
	}
	a->blocks = NULL;
	a->cur = a->first;
	a->left = a->first_size;
}
