/*
 * test_bson_damage.c -- bson/damage.c: the byte changes between two BSON
 * documents.  Random documents with random edits (values replaced by others
 * of other sizes and types, elements appended, inserted and removed at every
 * depth, keys renamed): applying the damages to the old bytes gives the new
 * document byte for byte; an append to a large document costs a few entries
 * and the appended bytes, not the document; equal documents give none; bad
 * input is refused.
 */
#include "tt.h"

#include <string.h>

#include "bson/damage.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A random scalar of a random type and size under key k. */
static void
append_scalar(bson_t *d, const char *k)
{
	char s[64];

	switch (rnd(5)) {
	case 0:
		BSON_APPEND_INT32(d, k, (int32_t)rnd(1000));
		break;
	case 1:
		BSON_APPEND_DOUBLE(d, k, rnd(1000) / 7.0);
		break;
	case 2: {
		uint32_t n = rnd(40);
		memset(s, 'a' + (int)rnd(26), n);
		s[n] = 0;
		BSON_APPEND_UTF8(d, k, s);
		break;
	}
	case 3:
		BSON_APPEND_DATE_TIME(d, k, (int64_t)rnd(1u << 30));
		break;
	default:
		BSON_APPEND_BOOL(d, k, rnd(2));
	}
}

/* A random document (an array: keys 0, 1, ...) of up to width elements,
 * nested to depth. */
static void
random_doc(bson_t *d, int depth, int width, bool arr)
{
	int n = (int)rnd((uint32_t)width + 1);

	for (int i = 0; i < n; i++) {
		char k[16];
		if (arr)
			bson_snprintf(k, sizeof(k), "%d", i);
		else
			bson_snprintf(k, sizeof(k), "%c%d", 'a' + (int)rnd(4), i);
		if (depth > 0 && rnd(3) == 0) {
			bson_t sub;
			if (rnd(2)) {
				BSON_APPEND_DOCUMENT_BEGIN(d, k, &sub);
				random_doc(&sub, depth - 1, width, false);
				bson_append_document_end(d, &sub);
			} else {
				BSON_APPEND_ARRAY_BEGIN(d, k, &sub);
				random_doc(&sub, depth - 1, width, true);
				bson_append_array_end(d, &sub);
			}
		} else {
			append_scalar(d, k);
		}
	}
}

/* old edited at random into out: every element kept, replaced, dropped or
 * renamed, sub-documents edited the same way, elements inserted between and
 * appended at the end. */
static void
edit_doc(const bson_t *old, bson_t *out, int depth)
{
	bson_iter_t it;
	int i = 0;

	bson_iter_init(&it, old);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		uint32_t r = rnd(10);
		if (r == 0)
			continue;   /* dropped */
		if (r == 1) {
			char nk[16];
			bson_snprintf(nk, sizeof(nk), "z%d", i++);
			append_scalar(out, nk);   /* inserted */
		}
		if ((BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && r < 8) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub, in, dst;
			bool arr = BSON_ITER_HOLDS_ARRAY(&it);
			if (arr)
				bson_iter_array(&it, &len, &data);
			else
				bson_iter_document(&it, &len, &data);
			bson_init_static(&in, data, len);
			if (arr)
				bson_append_array_begin(out, k, -1, &dst);
			else
				bson_append_document_begin(out, k, -1, &dst);
			edit_doc(&in, &dst, depth + 1);
			if (arr)
				bson_append_array_end(out, &dst);
			else
				bson_append_document_end(out, &dst);
			(void)sub;
		} else if (r == 2 || r == 3) {
			append_scalar(out, k);    /* replaced, maybe by another type */
		} else if (r == 4) {
			char nk[16];
			bson_snprintf(nk, sizeof(nk), "r%d", i++);
			bson_append_iter(out, nk, -1, &it);   /* renamed */
		} else {
			bson_append_iter(out, k, -1, &it);
		}
	}
	while (rnd(3) == 0) {
		char nk[16];
		bson_snprintf(nk, sizeof(nk), "n%d", i++);
		if (depth < 3 && rnd(4) == 0) {
			bson_t sub;
			BSON_APPEND_DOCUMENT_BEGIN(out, nk, &sub);
			random_doc(&sub, 1, 3, false);
			bson_append_document_end(out, &sub);
		} else {
			append_scalar(out, nk);
		}
	}
}

/* The damages old -> new, applied to old, give new byte for byte. */
static void
check_pair(const bson_t *old, const bson_t *new_doc)
{
	bdamages_t dm = {0};
	uint8_t *got;
	uint32_t len = 0;

	TT_ASSERT(bdamages_compute(bson_get_data(old), old->len, bson_get_data(new_doc), new_doc->len, &dm));
	got = bdamages_apply(bson_get_data(old), old->len, bson_get_data(new_doc), new_doc->len, &dm, &len);
	TT_ASSERT(got != NULL);
	if (got != NULL) {
		TT_EQ_INT(len, new_doc->len);
		TT_ASSERT(len == new_doc->len && memcmp(got, bson_get_data(new_doc), len) == 0);
	}
	/* entries ascending, never overlapping */
	for (int i = 1; i < dm.n; i++)
		TT_ASSERT(dm.d[i].offset >= dm.d[i - 1].offset + dm.d[i - 1].new_len);
	bson_free(got);
	bdamages_destroy(&dm);
}

static void
test_random_edits(void)
{
	for (int round = 0; round < 3000; round++) {
		bson_t old = BSON_INITIALIZER, new_doc = BSON_INITIALIZER;
		random_doc(&old, 3, 6, false);
		edit_doc(&old, &new_doc, 0);
		check_pair(&old, &new_doc);
		check_pair(&new_doc, &old);
		check_pair(&old, &old);
		bson_destroy(&old);
		bson_destroy(&new_doc);
	}
}

static void
test_equal_and_bad(void)
{
	bson_t *a = tt_json("{\"x\": 1, \"y\": {\"z\": [1, 2, 3]}}");
	bdamages_t dm = {0};
	uint8_t junk[8] = {8, 0, 0, 0, 0x10, 'q', 0, 0};   /* a truncated int32 */

	TT_ASSERT(bdamages_compute(bson_get_data(a), a->len, bson_get_data(a), a->len, &dm));
	TT_EQ_INT(dm.n, 0);
	/* a length prefix that disagrees with the buffer, a truncated element */
	TT_ASSERT(!bdamages_compute(bson_get_data(a), a->len - 1, bson_get_data(a), a->len, &dm));
	TT_ASSERT(!bdamages_compute(junk, sizeof(junk), bson_get_data(a), a->len, &dm));
	bdamages_destroy(&dm);
	bson_destroy(a);
}

/* One element appended to the 3rd of 5 large arrays inside a document, a
 * value changed in place before them: a handful of entries (the changed
 * value, the length prefixes of the documents around the append, the
 * element), and only those bytes. */
static void
test_append_is_small(void)
{
	bson_t old = BSON_INITIALIZER, new_doc = BSON_INITIALIZER, data, col;
	bdamages_t dm = {0};

	for (int pass = 0; pass < 2; pass++) {
		bson_t *d = pass ? &new_doc : &old;
		BSON_APPEND_INT64(d, "max", pass ? 1001 : 1000);
		BSON_APPEND_DOCUMENT_BEGIN(d, "data", &data);
		for (int c = 0; c < 5; c++) {
			char k[8];
			bson_snprintf(k, sizeof(k), "c%d", c);
			BSON_APPEND_DOCUMENT_BEGIN(&data, k, &col);
			for (int i = 0; i < 1000 + (pass && c == 2); i++) {
				char key[16];
				bson_snprintf(key, sizeof(key), "%d", i);
				BSON_APPEND_INT64(&col, key, i * 3);
			}
			bson_append_document_end(&data, &col);
		}
		bson_append_document_end(d, &data);
	}
	check_pair(&old, &new_doc);
	TT_ASSERT(bdamages_compute(bson_get_data(&old), old.len, bson_get_data(&new_doc), new_doc.len, &dm));
	TT_ASSERT(dm.n >= 2 && dm.n <= 5);
	TT_ASSERT(bdamages_bytes(&dm) < 64);
	bdamages_destroy(&dm);
	bson_destroy(&old);
	bson_destroy(&new_doc);
}

int
main(void)
{
	TT_RUN(test_random_edits);
	TT_RUN(test_equal_and_bad);
	TT_RUN(test_append_is_small);
	return tt_finish();
}
