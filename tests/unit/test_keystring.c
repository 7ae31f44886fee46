/*
 * test_keystring.c -- keystring encodings sort exactly like bv_compare.
 *
 * A seeded random generator makes a few thousand values of every BSON type
 * (nested documents and arrays, edge numbers across int32/int64/double/
 * Decimal128, strings with NUL bytes and prefixes); the test sorts them with
 * bv_compare and checks that memcmp over the encodings agrees on every
 * adjacent pair and on many random pairs, ascending and descending, for
 * single and compound keys, and that keys decode back to equal values.
 * TAMGA_KS_SEED=<n> reruns with another seed.
 */
#include "tt.h"
#include "bson/keystring.h"
#include "bson/collation.h"
#include "bson/value.h"

#include <float.h>
#include <math.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;

static uint64_t
rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static int
rndn(int n)
{
	return (int)(rnd() % (uint64_t)n);
}

static void gen_value(bson_t *doc, const char *key, int depth);

static const char *dec_pool[] = {
	"0", "-0", "0E-30", "0E+30", "1", "1.00", "1.0000000000000000000000000000000", "-1", "-1.0",
	"0.1", "-0.1", "0.10", "0.1000000000000000055511151231257827",
	"0.1000000000000000055511151231257828", "1E+6000", "-1E+6000", "1E-6000", "-1E-6000",
	"9.999999999999999999999999999999999E+6144", "-9.999999999999999999999999999999999E+6144",
	"1E-6176", "-1E-6176", "NaN", "-NaN", "Infinity", "-Infinity", "9007199254740993",
	"-9007199254740993", "9007199254740992", "9223372036854775807", "-9223372036854775808",
	"9223372036854775808", "1.7976931348623157E+308", "1.797693134862315708145274237317044E+308",
	"4.9406564584124654E-324", "5E-324", "2.5", "2.50", "-2.5", "3", "1E+2", "100", "123.456",
	"1E+308", "1E+309", "-1E+309", "1E-400", "-1E-400", "12345678901234567890123456789012.34",
	"1.000000000000000000000000000000000E+6144", "-1.0E+6112", "1.00E+6113", "1000E-6176",
};

static const double dbl_pool[] = {
	0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 0.5, 2.5, -2.5, 3.0, 100.0, 123.456, 1e308, -1e308,
	DBL_MAX, -DBL_MAX, DBL_MIN, 4.9406564584124654e-324, -4.9406564584124654e-324,
	9007199254740992.0, 9007199254740994.0, -9007199254740992.0, 9223372036854775808.0,
	-9223372036854775808.0, 9223372036854774784.0, 1.5e300, 1e-300,
};

static const int64_t i64_pool[] = {
	0, 1, -1, 2, 3, 100, -100, 9007199254740991LL, 9007199254740992LL, 9007199254740993LL,
	-9007199254740993LL, -9007199254740992LL, INT64_MAX, INT64_MIN, INT64_MAX - 1,
	INT64_MIN + 1, 9223372036854774784LL, 9223372036854775807LL - 512, 123456789012345678LL,
	-123456789012345678LL, 1LL << 62, -(1LL << 62), (1LL << 53) + 2, 2147483647, -2147483648LL,
};

static void
gen_string(char *buf, size_t *len)
{
	static const char alpha[] = {'a', 'b', '\0', '\x01', '\xff', 'a', 'b', 'z'};
	size_t n = (size_t)rndn(5), i;

	for (i = 0; i < n; i++)
		buf[i] = alpha[rndn((int)sizeof alpha)];
	buf[n] = '\0';
	*len = n;
}

static void
gen_cstring(char *buf)
{
	static const char alpha[] = {'a', 'b', 'z', 'i', 'm', '\x01', '\xc3'};
	int n = rndn(3), i;

	for (i = 0; i < n; i++)
		buf[i] = alpha[rndn((int)sizeof alpha)];
	buf[n] = '\0';
}

static void
gen_doc_body(bson_t *doc, bool array, int depth)
{
	static const char *names[] = {"a", "b", "ab", "", "a\x01"};
	int n = rndn(4), i;
	char ibuf[16];
	const char *k;

	for (i = 0; i < n; i++) {
		if (array)
			bson_uint32_to_string((uint32_t)i, &k, ibuf, sizeof ibuf);
		else
			k = names[rndn(5)];
		gen_value(doc, k, depth + 1);
	}
}

static void
gen_number(bson_t *doc, const char *key)
{
	bson_decimal128_t dec;
	double d;
	int64_t i;

	switch (rndn(9)) {
	case 0:
		bson_append_int32(doc, key, -1, (int32_t)(rndn(7) - 3));
		break;
	case 1:
		bson_append_int32(doc, key, -1, (int32_t)rnd());
		break;
	case 2:
		bson_append_int64(doc, key, -1, i64_pool[rndn((int)(sizeof i64_pool / sizeof i64_pool[0]))]);
		break;
	case 3:
		i = (int64_t)rnd() >> rndn(64);
		bson_append_int64(doc, key, -1, i);
		break;
	case 4:
		d = dbl_pool[rndn((int)(sizeof dbl_pool / sizeof dbl_pool[0]))];
		if (rndn(8) == 0)
			d = rndn(2) ? NAN : (rndn(2) ? INFINITY : -INFINITY);
		bson_append_double(doc, key, -1, d);
		break;
	case 5: {
		uint64_t u = rnd();
		memcpy(&d, &u, 8);
		if (isnan(d))
			d = 0.25;
		bson_append_double(doc, key, -1, d);
		break;
	}
	case 6:
		bson_append_double(doc, key, -1, (double)(rndn(9) - 4) / (rndn(2) ? 1 : 4));
		break;
	case 7:
		bson_decimal128_from_string(dec_pool[rndn((int)(sizeof dec_pool / sizeof dec_pool[0]))], &dec);
		bson_append_decimal128(doc, key, -1, &dec);
		break;
	default: {
		/* random coefficient (sometimes 34 digits) and exponent */
		unsigned __int128 c = ((unsigned __int128)rnd() << 64 | rnd());
		unsigned __int128 lim = 1;
		int digits = 1 + rndn(34), e, k;
		for (k = 0; k < digits; k++)
			lim *= 10;
		c %= lim;
		e = rndn(3) == 0 ? rndn(12287) - 6176 : rndn(60) - 40;
		dec = bv_decimal_make(rndn(2) == 0, (uint64_t)(c >> 64), (uint64_t)c, e);
		bson_append_decimal128(doc, key, -1, &dec);
		break;
	}
	}
}

static void
gen_value(bson_t *doc, const char *key, int depth)
{
	char s[16], s2[16];
	size_t n;
	bson_t child;
	bson_oid_t oid;
	uint8_t bin[4];
	/* weights: numbers and strings often, the one-value types rarely */
	static const int8_t pick[] = {0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 7, 7, 7, 8, 9, 10, 10,
		11, 11, 12, 13, 13, 14, 14, 15, 15, 16, 17, 18, 18, 18, 19, 19, 19};
	int t = pick[rndn(depth >= 3 ? 30 : (int)sizeof pick)];

	switch (t) {
	case 0:
		bson_append_minkey(doc, key, -1);
		break;
	case 1:
		bson_append_maxkey(doc, key, -1);
		break;
	case 2:
		bson_append_null(doc, key, -1);
		break;
	case 3:
		bson_append_undefined(doc, key, -1);
		break;
	case 4:
	case 5:
	case 6:
		gen_number(doc, key);
		break;
	case 7:
		gen_string(s, &n);
		bson_append_utf8(doc, key, -1, s, (int)n);
		break;
	case 8:
		gen_string(s, &n);
		bson_append_symbol(doc, key, -1, s, (int)n);
		break;
	case 9: {
		bson_value_t cv; /* code may hold NUL bytes: append through bv_append */
		gen_string(s, &n);
		cv.value_type = BSON_TYPE_CODE;
		cv.value.v_code.code = s;
		cv.value.v_code.code_len = (uint32_t)n;
		bv_append(doc, key, -1, &cv);
		break;
	}
	case 10:
		n = (size_t)rndn(3);
		bin[0] = (uint8_t)rndn(3);
		bin[1] = (uint8_t)(rndn(2) ? 0xff : 0);
		bin[2] = 7;
		bson_append_binary(doc, key, -1, (bson_subtype_t)(rndn(3) == 0 ? 0x80 : rndn(3)), bin, (uint32_t)n);
		break;
	case 11:
		memset(&oid, 0, sizeof oid);
		oid.bytes[rndn(12)] = (uint8_t)rndn(3) * 0x7f;
		bson_append_oid(doc, key, -1, &oid);
		break;
	case 12:
		bson_append_bool(doc, key, -1, rndn(2) == 0);
		break;
	case 13:
		bson_append_date_time(doc, key, -1, rndn(4) == 0 ? (rndn(2) ? INT64_MIN : INT64_MAX) : (int64_t)(rndn(7) - 3));
		break;
	case 14:
		bson_append_timestamp(doc, key, -1, rndn(3) == 0 ? 0x80000000u + (uint32_t)rndn(2) : (uint32_t)rndn(3),
		                      rndn(3) == 0 ? 0xFFFFFFFFu : (uint32_t)rndn(3));
		break;
	case 15:
		gen_cstring(s);
		gen_cstring(s2);
		bson_append_regex(doc, key, -1, s, s2);
		break;
	case 16:
		memset(&oid, 0, sizeof oid);
		oid.bytes[11] = (uint8_t)rndn(2);
		gen_cstring(s);
		bson_append_dbpointer(doc, key, -1, s, &oid);
		break;
	case 17: {
		bson_t scope = BSON_INITIALIZER;
		gen_cstring(s);
		if (depth < 3)
			gen_doc_body(&scope, false, depth);
		bson_append_code_with_scope(doc, key, -1, s, &scope);
		bson_destroy(&scope);
		break;
	}
	case 18:
		bson_append_document_begin(doc, key, -1, &child);
		gen_doc_body(&child, false, depth);
		bson_append_document_end(doc, &child);
		break;
	default:
		bson_append_array_begin(doc, key, -1, &child);
		gen_doc_body(&child, true, depth);
		bson_append_array_end(doc, &child);
		break;
	}
}

#define NVALS 5000

typedef struct item {
	bson_t *doc;          /* {v: value} */
	bson_value_t v;       /* borrowed from doc */
	keystring_t asc, desc;
} item_t;

static item_t items[NVALS];

static int
sgn(int x)
{
	return x < 0 ? -1 : (x > 0 ? 1 : 0);
}

static int
key_cmp(const keystring_t *a, const keystring_t *b)
{
	size_t m = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->buf, b->buf, m);

	if (c != 0)
		return sgn(c);
	return a->len == b->len ? 0 : (a->len < b->len ? -1 : 1);
}

static int
item_cmp(const void *x, const void *y)
{
	const item_t *a = x, *b = y;
	return bv_compare(&a->v, &b->v);
}

static void
show_pair(const item_t *a, const item_t *b, int want, int got, const char *what)
{
	char *sa = bv_doc_to_mongo_string(a->doc), *sb = bv_doc_to_mongo_string(b->doc);
	TT_FAIL_("%s: %s vs %s: bv_compare %d, keys %d", what, sa, sb, want, got);
	bson_free(sa);
	bson_free(sb);
}

static void
make_items(void)
{
	int i;
	bson_iter_t it;

	for (i = 0; i < NVALS; i++) {
		items[i].doc = bson_new();
		gen_value(items[i].doc, "v", 0);
		bson_iter_init_find(&it, items[i].doc, "v");
		items[i].v = *bson_iter_value(&it);
	}
	qsort(items, NVALS, sizeof items[0], item_cmp);
	/* values now point into docs that did not move (bson_new heap) */
	for (i = 0; i < NVALS; i++) {
		keystring_init(&items[i].asc);
		keystring_init(&items[i].desc);
		keystring_append_value(&items[i].asc, &items[i].v, false);
		keystring_append_value(&items[i].desc, &items[i].v, true);
	}
}

static void
free_items(void)
{
	int i;

	for (i = 0; i < NVALS; i++) {
		keystring_destroy(&items[i].asc);
		keystring_destroy(&items[i].desc);
		bson_destroy(items[i].doc);
	}
}

static void
check_pair(const item_t *a, const item_t *b, int *fails)
{
	int want = sgn(bv_compare(&a->v, &b->v));
	int ga = key_cmp(&a->asc, &b->asc), gd = key_cmp(&a->desc, &b->desc);

	if (ga != want && (*fails)++ < 10)
		show_pair(a, b, want, ga, "ascending");
	if (gd != -want && (*fails)++ < 10)
		show_pair(a, b, -want, gd, "descending");
}

static void
test_random_order(void)
{
	int i, fails = 0, dups = 0;

	for (i = 0; i + 1 < NVALS; i++) {
		check_pair(&items[i], &items[i + 1], &fails);
		if (bv_compare(&items[i].v, &items[i + 1].v) == 0) {
			dups++;
			if (bv_hash(&items[i].v) != bv_hash(&items[i + 1].v) && fails++ < 10)
				show_pair(&items[i], &items[i + 1], 0, 1, "bv_hash of equal values");
		}
	}
	for (i = 0; i < 30000; i++)
		check_pair(&items[rndn(NVALS)], &items[rndn(NVALS)], &fails);
	TT_EQ_INT(fails, 0);
	TT_ASSERT(dups > 100); /* the generator makes plenty of equal values */
	fprintf(stderr, "  %d values, %d equal neighbours\n", NVALS, dups);
}

static void
test_random_compound(void)
{
	int i, fails = 0;
	keystring_t ka, kb;

	keystring_init(&ka);
	keystring_init(&kb);
	for (i = 0; i < 20000; i++) {
		const item_t *a1 = &items[rndn(NVALS)], *a2 = &items[rndn(NVALS)];
		const item_t *b1 = rndn(4) ? a1 : &items[rndn(NVALS)], *b2 = &items[rndn(NVALS)];
		bool d1 = rndn(2), d2 = rndn(2);
		int c1 = sgn(bv_compare(&a1->v, &b1->v)), c2 = sgn(bv_compare(&a2->v, &b2->v));
		int want = c1 != 0 ? (d1 ? -c1 : c1) : (d2 ? -c2 : c2), got;

		keystring_reset(&ka);
		keystring_reset(&kb);
		keystring_append_value(&ka, &a1->v, d1);
		keystring_append_value(&ka, &a2->v, d2);
		keystring_append_recid(&ka, 7);
		keystring_append_value(&kb, &b1->v, d1);
		keystring_append_value(&kb, &b2->v, d2);
		keystring_append_recid(&kb, 7);
		got = key_cmp(&ka, &kb);
		if (got != want && fails++ < 10)
			show_pair(a1, b1, want, got, "compound");
	}
	TT_EQ_INT(fails, 0);
	keystring_destroy(&ka);
	keystring_destroy(&kb);
}

static void
test_decode_roundtrip(void)
{
	int i, fails = 0;
	keystring_t k2;

	keystring_init(&k2);
	for (i = 0; i < NVALS; i++) {
		bool desc = (i % 2) == 1;
		const keystring_t *k = desc ? &items[i].desc : &items[i].asc;
		bson_t out = BSON_INITIALIZER;
		bson_iter_t it;
		bool ok = keystring_decode_values(k->buf, k->len, 1, &desc, &out);

		if (ok && bson_iter_init_find(&it, &out, "0")) {
			keystring_reset(&k2);
			keystring_append_value(&k2, bson_iter_value(&it), desc);
			if (bv_compare(bson_iter_value(&it), &items[i].v) != 0 || key_cmp(&k2, k) != 0) {
				char *a = bv_doc_to_mongo_string(items[i].doc), *b = bv_doc_to_mongo_string(&out);
				if (fails++ < 10)
					TT_FAIL_("decode %s -> %s", a, b);
				bson_free(a);
				bson_free(b);
			}
		} else if (fails++ < 10) {
			char *a = bv_doc_to_mongo_string(items[i].doc);
			TT_FAIL_("cannot decode %s", a);
			bson_free(a);
		}
		bson_destroy(&out);
	}
	TT_EQ_INT(fails, 0);
	keystring_destroy(&k2);
}

/* With type bits, decoding gives back the exact bytes: types, decimal
 * exponents, -0.0, symbols, for single and compound keys. */
static void
test_typed_roundtrip(void)
{
	int i, fails = 0;
	keystring_t k, tb;

	keystring_init(&k);
	keystring_init(&tb);
	for (i = 0; i < NVALS; i++) {
		const item_t *a = &items[i], *b = &items[rndn(NVALS)];
		bool desc[2] = {rndn(2) == 0, rndn(2) == 0};
		bson_t want = BSON_INITIALIZER, got = BSON_INITIALIZER, cut = BSON_INITIALIZER;

		keystring_reset(&k);
		keystring_reset(&tb);
		keystring_append_value_tb(&k, &tb, &a->v, desc[0]);
		keystring_append_value_tb(&k, &tb, &b->v, desc[1]);
		keystring_append_recid(&k, i);
		bv_append(&want, "0", 1, &a->v);
		bv_append(&want, "1", 1, &b->v);
		if (!keystring_decode_values_tb(k.buf, k.len - 8, tb.buf, tb.len, 2, desc, &got) ||
		    got.len != want.len || memcmp(bson_get_data(&got), bson_get_data(&want), want.len) != 0) {
			if (fails++ < 10) {
				char *x = bv_doc_to_mongo_string(&want), *y = bv_doc_to_mongo_string(&got);
				TT_FAIL_("typed decode %s -> %s", x, y);
				bson_free(x);
				bson_free(y);
			}
		}
		/* type bits that are cut short are refused */
		if (tb.len > 0 && keystring_decode_values_tb(k.buf, k.len - 8, tb.buf, tb.len - 1, 2, desc, &cut) &&
		    fails++ < 10)
			TT_FAIL_("%s", "truncated type bits accepted");
		bson_destroy(&want);
		bson_destroy(&got);
		bson_destroy(&cut);
	}
	TT_EQ_INT(fails, 0);
	/* the key itself is the same with or without type bits */
	keystring_reset(&k);
	keystring_reset(&tb);
	keystring_append_value_tb(&k, &tb, &items[0].v, false);
	TT_EQ_INT(key_cmp(&k, &items[0].asc), 0);
	keystring_destroy(&k);
	keystring_destroy(&tb);
}

static void
enc(keystring_t *ks, const char *json, bool desc)
{
	bson_t *d = tt_json(json);
	bson_iter_t it;

	keystring_reset(ks);
	bson_iter_init_find(&it, d, "v");
	keystring_append_value(ks, bson_iter_value(&it), desc);
	bson_destroy(d);
}

static bool
same_key(const char *ja, const char *jb)
{
	keystring_t a, b;
	bool same;

	keystring_init(&a);
	keystring_init(&b);
	enc(&a, ja, false);
	enc(&b, jb, false);
	same = key_cmp(&a, &b) == 0;
	keystring_destroy(&a);
	keystring_destroy(&b);
	return same;
}

static void
test_equal_numbers_identical(void)
{
	TT_ASSERT(same_key("{\"v\": 1}", "{\"v\": {\"$numberLong\": \"1\"}}"));
	TT_ASSERT(same_key("{\"v\": 1}", "{\"v\": 1.0}"));
	TT_ASSERT(same_key("{\"v\": 1}", "{\"v\": {\"$numberDecimal\": \"1.00\"}}"));
	TT_ASSERT(same_key("{\"v\": -0.0}", "{\"v\": {\"$numberDecimal\": \"-0E+5\"}}"));
	TT_ASSERT(same_key("{\"v\": {\"$numberDouble\": \"NaN\"}}", "{\"v\": {\"$numberDecimal\": \"-NaN\"}}"));
	TT_ASSERT(same_key("{\"v\": {\"$numberLong\": \"9007199254740993\"}}",
	                   "{\"v\": {\"$numberDecimal\": \"9007199254740993.000\"}}"));
	TT_ASSERT(!same_key("{\"v\": {\"$numberLong\": \"9007199254740993\"}}",
	                    "{\"v\": {\"$numberDouble\": \"9007199254740992\"}}"));
	TT_ASSERT(same_key("{\"v\": {\"$numberDecimal\": \"0.5\"}}", "{\"v\": 0.5}"));
	TT_ASSERT(!same_key("{\"v\": {\"$numberDecimal\": \"0.1\"}}", "{\"v\": 0.1}"));
	TT_ASSERT(same_key("{\"v\": \"abc\"}", "{\"v\": {\"$symbol\": \"abc\"}}"));
	TT_ASSERT(same_key("{\"v\": {\"a\": 1, \"b\": [2]}}", "{\"v\": {\"a\": 1.0, \"b\": [{\"$numberLong\": \"2\"}]}}"));
}

static void
test_recid_and_sentinels(void)
{
	keystring_t k, lo, hi;
	static const int64_t ids[] = {0, 1, -1, INT64_MAX, INT64_MIN, 123456789};
	size_t i;

	keystring_init(&k);
	keystring_init(&lo);
	keystring_init(&hi);
	for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		keystring_reset(&k);
		enc(&k, "{\"v\": \"x\"}", false);
		keystring_append_recid(&k, ids[i]);
		TT_EQ_INT(keystring_read_recid(k.buf, k.len), ids[i]);
	}
	/* recids order as signed integers */
	{
		keystring_t a, b;
		keystring_init(&a);
		keystring_init(&b);
		keystring_append_recid(&a, -5);
		keystring_append_recid(&b, 3);
		TT_EQ_INT(key_cmp(&a, &b), -1);
		keystring_destroy(&a);
		keystring_destroy(&b);
	}
	/* prefix + min < prefix + any value (either direction) < prefix + max */
	for (i = 0; i < NVALS; i += 7) {
		int d;
		for (d = 0; d < 2; d++) {
			keystring_reset(&k);
			keystring_reset(&lo);
			keystring_reset(&hi);
			enc(&k, "{\"v\": 5}", false);
			enc(&lo, "{\"v\": 5}", false);
			enc(&hi, "{\"v\": 5}", false);
			keystring_append_value(&k, &items[i].v, d == 1);
			keystring_append_recid(&k, 1);
			keystring_append_min(&lo);
			keystring_append_max(&hi);
			TT_ASSERT(key_cmp(&lo, &k) < 0);
			TT_ASSERT(key_cmp(&k, &hi) < 0);
		}
	}
	keystring_destroy(&k);
	keystring_destroy(&lo);
	keystring_destroy(&hi);
}

static void
test_decode_compound_and_malformed(void)
{
	bson_t *src = tt_json("{\"v\": [\"ab\", {\"x\": [1, null]}, 2.5]}");
	bson_iter_t it, arr;
	keystring_t k;
	bool desc[3] = {false, true, false};
	bson_t out = BSON_INITIALIZER;
	int i = 0;
	size_t cut;

	keystring_init(&k);
	bson_iter_init_find(&it, src, "v");
	bson_iter_recurse(&it, &arr);
	while (bson_iter_next(&arr))
		keystring_append_value(&k, bson_iter_value(&arr), desc[i++]);
	TT_ASSERT(keystring_decode_values(k.buf, k.len, 3, desc, &out));
	TT_EQ_JSON(&out, "{ \"0\" : \"ab\", \"1\" : { \"x\" : [ 1.0, null ] }, \"2\" : 2.5 }");
	/* every truncation is rejected, never crashes */
	for (cut = 0; cut < k.len; cut++) {
		bson_t o = BSON_INITIALIZER;
		TT_ASSERT(!keystring_decode_values(k.buf, cut, 3, desc, &o));
		bson_destroy(&o);
	}
	/* garbage bytes: must not crash */
	for (i = 0; i < 2000; i++) {
		uint8_t junk[24];
		bson_t o = BSON_INITIALIZER;
		size_t j, len = (size_t)rndn(24);
		for (j = 0; j < len; j++)
			junk[j] = (uint8_t)(rndn(3) == 0 ? rndn(256) : "\x1e\x28\x32\x3c\x00\xff\x01"[rndn(7)]);
		(void)keystring_decode_values(junk, len, 2, desc, &o);
		bson_destroy(&o);
	}
	bson_destroy(&out);
	bson_destroy(src);
	keystring_destroy(&k);
}

static void
test_long_keys_grow(void)
{
	keystring_t k;
	char big[1000];
	bson_value_t v;
	bson_t out = BSON_INITIALIZER;
	bson_iter_t it;

	memset(big, 'q', sizeof big);
	big[10] = '\0';
	v.value_type = BSON_TYPE_UTF8;
	v.value.v_utf8.str = big;
	v.value.v_utf8.len = sizeof big;
	keystring_init(&k);
	keystring_append_value(&k, &v, true);
	TT_EQ_INT(k.len, 1 + sizeof big + 1 + 2);
	TT_ASSERT(keystring_decode_values(k.buf, k.len, 1, (bool[]){true}, &out));
	TT_ASSERT(bson_iter_init_find(&it, &out, "0") && bv_compare(bson_iter_value(&it), &v) == 0);
	bson_destroy(&out);
	keystring_destroy(&k);
}

/* Mutated BSON bytes: rendering, comparison, encoding and hashing must not
 * crash or read out of bounds (ASan) whatever bson_init_static lets through. */
static void
test_mutated_input_no_crash(void)
{
	int i, j;
	int64_t checksum = 0;

	for (i = 0; i < 20000; i++) {
		const item_t *src = &items[rndn(NVALS)];
		uint32_t len = src->doc->len;
		uint8_t *buf = bson_malloc(len);
		bson_t doc;
		bson_iter_t it;
		keystring_t k;

		memcpy(buf, bson_get_data(src->doc), len);
		for (j = 0; j < 1 + rndn(4); j++) {
			uint32_t at = 4 + (uint32_t)rndn((int)len - 4);
			buf[at] = rndn(2) ? (uint8_t)rnd() : (uint8_t)(buf[at] ^ (1u << rndn(8)));
		}
		if (bson_init_static(&doc, buf, len)) {
			char *s = bv_doc_to_mongo_string(&doc);
			checksum += (int64_t)strlen(s);
			bson_free(s);
			checksum += bv_compare_docs(&doc, src->doc);
			keystring_init(&k);
			if (bson_iter_init(&it, &doc)) {
				while (bson_iter_next(&it)) {
					const bson_value_t *v = bson_iter_value(&it);
					keystring_append_value(&k, v, rndn(2) == 0);
					checksum += (int64_t)(bv_hash(v) & 1);
					checksum += bv_compare(v, &src->v);
				}
			}
			keystring_destroy(&k);
		}
		bson_free(buf);
	}
	TT_ASSERT(checksum != -1); /* keep the work observable */
}

/* keystring_encode_point: for every value it covers, the bytes of the
 * generic encoder; for the rest (a collated or NUL-holding string, an int64
 * past 2^53, other types, a short buffer) 0, so the caller encodes
 * generically.  A non-simple collation must never take the binary path. */
static size_t
generic_key(const bson_value_t *v, const coll_t *coll, uint8_t *out)
{
	keystring_t ks;
	size_t n;

	keystring_init(&ks);
	keystring_append_value_coll(&ks, v, false, coll);
	n = ks.len;
	memcpy(out, ks.buf, n);
	keystring_destroy(&ks);
	return n;
}

static void
check_point_same(const bson_value_t *v)
{
	uint8_t fast[64], gen[512];
	size_t fn = keystring_encode_point(fast, sizeof fast, v, NULL), gn = generic_key(v, NULL, gen);

	if (fn == 0 || fn != gn || memcmp(fast, gen, gn) != 0)
		TT_FAIL_("type %d: fast %zu bytes, generic %zu", (int)v->value_type, fn, gn);
}

static void
test_point_fast_path(void)
{
	bson_value_t v;
	uint8_t buf[64];
	char s[40];
	const coll_t *ci = NULL;
	bson_t *spec = BCON_NEW("locale", "en", "strength", BCON_INT32(2));
	terr_t e = TERR_INIT;

	for (size_t i = 0; i < sizeof i64_pool / sizeof i64_pool[0]; i++) {
		int64_t x = i64_pool[i];

		v.value_type = BSON_TYPE_INT64;
		v.value.v_int64 = x;
		if (x >= -(1LL << 53) && x <= (1LL << 53))
			check_point_same(&v);
		else
			TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
		if (x >= INT32_MIN && x <= INT32_MAX) {
			v.value_type = BSON_TYPE_INT32;
			v.value.v_int32 = (int32_t)x;
			check_point_same(&v);
		}
	}
	for (int i = 0; i < 2000; i++) {
		v.value_type = BSON_TYPE_INT64;
		v.value.v_int64 = (int64_t)(rnd() >> (11 + rndn(50))) * (rndn(2) ? 1 : -1);
		check_point_same(&v);
		v.value_type = BSON_TYPE_INT32;
		v.value.v_int32 = (int32_t)rnd();
		check_point_same(&v);
	}
	v.value_type = BSON_TYPE_DOUBLE;
	for (size_t i = 0; i < sizeof dbl_pool / sizeof dbl_pool[0]; i++) {
		v.value.v_double = dbl_pool[i];
		check_point_same(&v);
	}
	v.value.v_double = NAN;
	check_point_same(&v);
	v.value.v_double = INFINITY;
	check_point_same(&v);
	v.value_type = BSON_TYPE_OID;
	for (int i = 0; i < 100; i++) {
		for (int j = 0; j < 12; j++)
			v.value.v_oid.bytes[j] = (uint8_t)rnd();
		check_point_same(&v);
	}
	v.value_type = BSON_TYPE_UTF8;
	for (int i = 0; i < 200; i++) {
		size_t n = (size_t)rndn(30);

		for (size_t j = 0; j < n; j++)
			s[j] = (char)(1 + rndn(255));
		s[n] = '\0';
		v.value.v_utf8.str = s;
		v.value.v_utf8.len = (uint32_t)n;
		check_point_same(&v);
	}
	/* refusals */
	v.value.v_utf8.str = "a\0b";
	v.value.v_utf8.len = 3;
	TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
	v.value.v_utf8.str = "abc";
	TT_EQ_INT(keystring_encode_point(buf, 5, &v, NULL), 0);   /* 6 bytes needed */
	TT_EQ_INT(keystring_encode_point(buf, 6, &v, NULL), 6);
	TT_ASSERT(coll_parse(spec, "collation", &ci, &e) == 0 && ci != NULL);
	if (ci != NULL) {
		uint8_t gen[512];

		TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, ci), 0);
		/* the generic key under the collation differs from the binary one */
		TT_ASSERT(generic_key(&v, ci, gen) != 6 || memcmp(gen, buf, 6) != 0);
		/* numbers and ObjectIds have no collation: still covered */
		v.value_type = BSON_TYPE_INT32;
		v.value.v_int32 = 7;
		TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, ci), 10);
	}
	v.value_type = BSON_TYPE_INT64;
	v.value.v_int64 = 5;
	TT_EQ_INT(keystring_encode_point(buf, 9, &v, NULL), 0);
	v.value_type = BSON_TYPE_OID;
	TT_EQ_INT(keystring_encode_point(buf, 12, &v, NULL), 0);
	v.value_type = BSON_TYPE_BOOL;
	v.value.v_bool = true;
	TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
	v.value_type = BSON_TYPE_NULL;
	TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
	v.value_type = BSON_TYPE_DATE_TIME;
	v.value.v_datetime = 0;
	TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
	v.value_type = BSON_TYPE_SYMBOL;
	v.value.v_symbol.symbol = "abc";
	v.value.v_symbol.len = 3;
	TT_EQ_INT(keystring_encode_point(buf, sizeof buf, &v, NULL), 0);
	terr_clear(&e);
	bson_destroy(spec);
}

int
main(void)
{
	const char *seed = getenv("TAMGA_KS_SEED");

	if (seed != NULL && *seed)
	{
		/* splitmix64 so that small seeds give unrelated streams */
		uint64_t z = strtoull(seed, NULL, 10) + 0x9E3779B97F4A7C15ULL;
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
		z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
		rng_state = (z ^ (z >> 31)) | 1;
	}
	make_items();
	TT_RUN(test_random_order);
	TT_RUN(test_random_compound);
	TT_RUN(test_decode_roundtrip);
	TT_RUN(test_typed_roundtrip);
	TT_RUN(test_equal_numbers_identical);
	TT_RUN(test_recid_and_sentinels);
	TT_RUN(test_decode_compound_and_malformed);
	TT_RUN(test_long_keys_grow);
	TT_RUN(test_mutated_input_no_crash);
	TT_RUN(test_point_fast_path);
	free_items();
	return tt_finish();
}
