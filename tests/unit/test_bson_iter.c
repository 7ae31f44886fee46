/*
 * test_bson_iter.c -- the lean iterator (src/bson/iter.h) against libbson's:
 * the same elements, keys, types and values on documents holding every BSON
 * type, and on randomly damaged copies of them: never a read outside the
 * buffer (ASan), never an element libbson would not give, and the same walk
 * for the copies that stay valid; biter_find against a biter_next loop;
 * biter_next_kw's walk and key word against biter_next.
 */
#include "tt.h"

#include "bson/iter.h"

static const char *const docs_json[] = {
	"{\"d\": {\"$numberDouble\": \"1.5\"}, \"s\": \"h\\u00e9llo\", \"o\": {\"a\": 1, \"b\": [1, 2]},"
	" \"a\": [\"x\", {\"y\": null}], \"bin\": {\"$binary\": {\"base64\": \"AQID\", \"subType\": \"00\"}},"
	" \"old\": {\"$binary\": {\"base64\": \"AQIDBA==\", \"subType\": \"02\"}},"
	" \"u\": {\"$undefined\": true}, \"oid\": {\"$oid\": \"6af85e4c5a7edf5858284d0c\"}, \"t\": true,"
	" \"f\": false, \"dt\": {\"$date\": {\"$numberLong\": \"1700000000000\"}}, \"n\": null,"
	" \"re\": {\"$regularExpression\": {\"pattern\": \"^a.c\", \"options\": \"im\"}},"
	" \"dbp\": {\"$dbPointer\": {\"$ref\": \"c\", \"$id\": {\"$oid\": \"6af85e4c5a7edf5858284d0c\"}}},"
	" \"code\": {\"$code\": \"f()\"}, \"sym\": {\"$symbol\": \"sy\"},"
	" \"cws\": {\"$code\": \"g()\", \"$scope\": {\"x\": 1}}, \"i\": {\"$numberInt\": \"-7\"},"
	" \"ts\": {\"$timestamp\": {\"t\": 5, \"i\": 6}}, \"l\": {\"$numberLong\": \"-9000000000\"},"
	" \"dec\": {\"$numberDecimal\": \"1.25E+3\"}, \"min\": {\"$minKey\": 1}, \"max\": {\"$maxKey\": 1},"
	" \"\": \"empty key\"}",
	"{}",
	"{\"only\": [[], {}, [[1]], \"\"]}",
	/* keys around the 8 bytes biter_next_kw reads as one word, the last close to the end */
	"{\"abcdefg\": 1, \"abcdefgh\": 2, \"abcdefghi\": {\"abcdefghijklmnopq\": true}, \"\u00e9\u00e9\u00e9\u00e9\": null, \"z\": null}",
};

/* Two values are the same when they are the same bytes. */
static bool
same_value(const bson_value_t *a, const bson_value_t *b)
{
	bson_t x = BSON_INITIALIZER, y = BSON_INITIALIZER;
	bool eq;

	if (a->value_type != b->value_type)
		return false;
	if (a->value_type == BSON_TYPE_DOCUMENT || a->value_type == BSON_TYPE_ARRAY)
		return a->value.v_doc.data_len == b->value.v_doc.data_len &&
		       memcmp(a->value.v_doc.data, b->value.v_doc.data, a->value.v_doc.data_len) == 0;
	bson_append_value(&x, "v", 1, a);
	bson_append_value(&y, "v", 1, b);
	eq = x.len == y.len && memcmp(bson_get_data(&x), bson_get_data(&y), x.len) == 0;
	bson_destroy(&x);
	bson_destroy(&y);
	return eq;
}

/* Walk data with both iterators, recursing into documents and arrays;
 * returns the number of elements, or -1 at the first difference.  When
 * strict, the walks must end together; otherwise biter may stop first (it
 * also checks a nested document's final NUL where libbson's walk of the
 * parent does not), but never go on where libbson stopped. */
static int
walk_both(const uint8_t *data, uint32_t len, int depth, bool strict)
{
	bson_iter_t li;
	biter_t bi;
	int n = 0;
	bool lok = bson_iter_init_from_data(&li, data, len), bok = biter_init(&bi, data, len);

	if (bok && !lok)
		return -1;
	if (lok != bok)
		return strict ? -1 : n;
	for (;;) {
		bool ln = lok && bson_iter_next(&li), bn = biter_next(&bi);
		bson_value_t bv;
		if (bn && !ln)
			return -1;
		if (ln != bn)
			return strict ? -1 : n;
		if (!ln)
			return n;
		n++;
		if (bson_iter_key_len(&li) != bi.key_len || memcmp(bson_iter_key(&li), bi.key, bi.key_len) != 0 ||
		    bson_iter_type(&li) != bi.type)
			return -1;
		biter_value(&bi, &bv);
		if (!same_value(bson_iter_value(&li), &bv))
			return -1;
		if ((bi.type == BSON_TYPE_DOCUMENT || bi.type == BSON_TYPE_ARRAY) && depth < 50) {
			int sub = walk_both(bv.value.v_doc.data, bv.value.v_doc.data_len, depth + 1, strict);
			if (sub < 0)
				return -1;
			n += sub;
		}
	}
}

/* Walk with biter alone (recursing), touching every value. */
static int
walk_lean(const uint8_t *data, uint32_t len, int depth)
{
	biter_t bi;
	int n = 0;

	biter_init(&bi, data, len);
	while (biter_next(&bi)) {
		bson_value_t v;
		n++;
		biter_value(&bi, &v);
		if ((v.value_type == BSON_TYPE_DOCUMENT || v.value_type == BSON_TYPE_ARRAY) && depth < 50)
			n += walk_lean(v.value.v_doc.data, v.value.v_doc.data_len, depth + 1);
	}
	return n;
}

/* biter_find agrees with a biter_next loop: for each key of the walk, the
 * first element of that name, and nothing for a name that is not there.
 * Returns false on a disagreement. */
static bool
find_agrees(const uint8_t *data, uint32_t len)
{
	biter_t bi, f, g;

	biter_init(&bi, data, len);
	while (biter_next(&bi)) {
		bool found_f, found_g = false;

		biter_init(&f, data, len);
		found_f = biter_find(&f, bi.key, bi.key_len);
		biter_init(&g, data, len);
		while (biter_next(&g))
			if (g.key_len == bi.key_len && memcmp(g.key, bi.key, bi.key_len) == 0) {
				found_g = true;
				break;
			}
		if (found_f != found_g || (found_f && (f.off != g.off || f.type != g.type ||
		                                        f.val_len != g.val_len)))
			return false;
	}
	biter_init(&f, data, len);
	return !biter_find(&f, "no such key", 11) && !biter_next(&f);
}

/* biter_next_kw walks as biter_next does, and its word is the key's first
 * min(key_len, 8) bytes in a zeroed word. */
static bool
kw_agrees(const uint8_t *data, uint32_t len)
{
	biter_t a, b;
	uint64_t kw;

	biter_init(&a, data, len);
	biter_init(&b, data, len);
	for (;;) {
		bool ra = biter_next(&a), rb = biter_next_kw(&b, &kw);
		uint64_t want = 0;
		if (ra != rb)
			return false;
		if (!ra)
			return a.next == b.next;
		if (a.type != b.type || a.key != b.key || a.key_len != b.key_len || a.val != b.val ||
		    a.val_len != b.val_len || a.next != b.next)
			return false;
		memcpy(&want, a.key, a.key_len < 8 ? a.key_len : 8);
		if (kw != want)
			return false;
	}
}

static void
test_every_type(void)
{
	for (size_t i = 0; i < sizeof(docs_json) / sizeof(docs_json[0]); i++) {
		bson_error_t e;
		bson_t *d = bson_new_from_json((const uint8_t *)docs_json[i], -1, &e);
		TT_ASSERT(d != NULL);
		if (d == NULL)
			continue;
		TT_ASSERT(walk_both(bson_get_data(d), d->len, 0, true) >= 0);
		TT_ASSERT(find_agrees(bson_get_data(d), d->len));
		TT_ASSERT(kw_agrees(bson_get_data(d), d->len));
		bson_destroy(d);
	}
	{
		biter_t it;
		bson_value_t v = {.value_type = BSON_TYPE_INT32};
		TT_ASSERT(!biter_init_value(&it, &v));
		TT_ASSERT(!biter_next(&it));
		TT_ASSERT(!biter_init(&it, (const uint8_t *)"\x05\x00\x00\x00\x01", 5));
		TT_ASSERT(!biter_next(&it));
	}
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Damaged copies: bytes flipped, lengths bent, the end cut.  The copy sits
 * in a buffer of exactly its size, so ASan sees any read past it. */
static void
test_damaged(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int agreed = 0;

	for (size_t i = 0; i < sizeof(docs_json) / sizeof(docs_json[0]); i++) {
		bson_error_t e;
		bson_t *d = bson_new_from_json((const uint8_t *)docs_json[i], -1, &e);
		uint32_t len = d->len;

		for (int round = 0; round < 20000; round++) {
			uint32_t n = len;
			uint8_t *b;
			int k = (int)(rnd(&seed) % 4) + 1;
			if (rnd(&seed) % 5 == 0 && len > 5)
				n = 5 + (uint32_t)(rnd(&seed) % (len - 5));
			b = malloc(n);
			memcpy(b, bson_get_data(d), n);
			if (n != len) {   /* keep the outer frame, cut inside */
				uint32_t le = BSON_UINT32_TO_LE(n);
				memcpy(b, &le, 4);
				b[n - 1] = 0;
			}
			while (k-- > 0 && n > 5) {
				uint32_t at = 4 + (uint32_t)(rnd(&seed) % (n - 5));
				b[at] = (uint8_t)(rnd(&seed) % 3 == 0 ? 0xff : rnd(&seed));
			}
			(void)walk_lean(b, n, 0);
			TT_ASSERT(find_agrees(b, n));
			TT_ASSERT(kw_agrees(b, n));
			{
				bson_t view;
				size_t off;
				int got = walk_both(b, n, 0, false);
				TT_ASSERT(got >= 0);
				if (got >= 0 && bson_init_static(&view, b, n) &&
				    bson_validate(&view, BSON_VALIDATE_NONE, &off) && walk_both(b, n, 0, true) >= 0)
					agreed++;
			}
			free(b);
		}
		bson_destroy(d);
	}
	/* some damaged copies stay valid BSON (a changed value byte) */
	TT_ASSERT(agreed > 100);
}

int
main(void)
{
	TT_RUN(test_every_type);
	TT_RUN(test_damaged);
	return tt_finish();
}
