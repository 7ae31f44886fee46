/*
 * test_collation.c -- collations (bson/collation.h) and what they change.
 *
 * - the collation document: mongod's codes and messages for every kind of
 *   refusal, the normalized spec (locale defaults from ICU: fr_CA backwards,
 *   th shifted, da upper first), simple as NULL, interning;
 * - a comparison table across strengths, caseLevel, caseFirst,
 *   numericOrdering, alternate and backwards;
 * - randomized: for several collations, memcmp of the KeyString encodings
 *   (keystring_append_value_coll) agrees with ICU's own comparison of the
 *   strings, also inside documents and arrays and for descending keys, and
 *   bv_hash_coll agrees with equality;
 * - the matcher under a collation: equality, ranges, $in, $expr, while
 *   $regex, numbers and field names stay as they are.
 * TAMGA_COLL_SEED=<n> reruns the randomized part with another seed.
 */
#include "tt.h"
#include "bson/collation.h"
#include "bson/keystring.h"
#include "bson/value.h"
#include "query/match.h"

#include <unicode/ucol.h>

static const coll_t *
parse_ok(const char *json)
{
	bson_t *spec = tt_json(json);
	const coll_t *c = NULL;
	terr_t e = TERR_INIT;

	if (coll_parse(spec, "collation", &c, &e) != 0)
		TT_FAIL_("%s: unexpected error %d %s", json, e.code, e.msg);
	terr_clear(&e);
	bson_destroy(spec);
	return c;
}

static void
test_parse_errors(void)
{
	static const struct {
		const char *spec;
		int code;
		const char *msg;
	} cases[] = {
		{"{\"strength\": 2}", 40414, "BSON field 'collation.locale' is missing but a required field"},
		{"{\"locale\": null}", 40414, "BSON field 'collation.locale' is missing but a required field"},
		{"{\"locale\": 5}", 14, "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'"},
		{"{\"locale\": \"en\", \"strength\": \"x\"}", 14,
		 "BSON field 'collation.strength' is the wrong type 'string', expected types '[double, decimal, long, int]'"},
		{"{\"locale\": \"en\", \"strength\": true}", 14,
		 "BSON field 'collation.strength' is the wrong type 'bool', expected types '[double, decimal, long, int]'"},
		{"{\"locale\": \"en\", \"strength\": 6}", 2, "BSON field 'strength' value must be <= 5, actual value '6'"},
		{"{\"locale\": \"en\", \"strength\": -1}", 2, "BSON field 'strength' value must be >= 0, actual value '-1'"},
		{"{\"locale\": \"en\", \"strength\": 0}", 2,
		 "Enumeration value '0' for field 'collation.strength' is not a valid value."},
		{"{\"locale\": \"en\", \"caseLevel\": 1}", 14,
		 "BSON field 'collation.caseLevel' is the wrong type 'int', expected type 'bool'"},
		{"{\"locale\": \"en\", \"caseFirst\": \"sideways\"}", 2,
		 "Enumeration value 'sideways' for field 'collation.caseFirst' is not a valid value."},
		{"{\"locale\": \"en\", \"alternate\": \"nope\"}", 2,
		 "Enumeration value 'nope' for field 'collation.alternate' is not a valid value."},
		{"{\"locale\": \"en\", \"maxVariable\": \"nope\"}", 2,
		 "Enumeration value 'nope' for field 'collation.maxVariable' is not a valid value."},
		{"{\"locale\": \"en\", \"numericOrdering\": \"x\"}", 14,
		 "BSON field 'collation.numericOrdering' is the wrong type 'string', expected type 'bool'"},
		{"{\"locale\": \"en\", \"backwards\": \"x\"}", 14,
		 "Field 'backwards' should be a boolean value, but found: string"},
		{"{\"locale\": \"en\", \"bogus\": 1}", 40415, "BSON field 'collation.bogus' is an unknown field."},
		{"{\"locale\": \"simple\", \"strength\": 2}", 9,
		 "If locale=simple, no other fields should be present in: { locale: \"simple\", strength: 2 }"},
		{"{\"locale\": \"\"}", 2, "Field 'locale' cannot be the empty string in: { locale: \"\" }"},
		{"{\"locale\": \"xx\"}", 2, "Field 'locale' is invalid in: { locale: \"xx\" }"},
		{"{\"locale\": \"en_us\"}", 2, "Field 'locale' is invalid in: { locale: \"en_us\" }. Did you mean 'en_US'?"},
		{"{\"locale\": \"fr\", \"strength\": 1, \"backwards\": true}", 2,
		 "'backwards' is invalid with 'strength' of 1 in: { locale: \"fr\", caseLevel: false, caseFirst: \"off\", "
		 "strength: 1, numericOrdering: false, alternate: \"non-ignorable\", maxVariable: \"punct\", "
		 "normalization: false, backwards: true, version: \"57.1\" }"},
		{"{\"locale\": \"en\", \"strength\": 2, \"caseFirst\": \"upper\"}", 2,
		 "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: { locale: \"en\", "
		 "caseLevel: false, caseFirst: \"upper\", strength: 2, numericOrdering: false, alternate: "
		 "\"non-ignorable\", maxVariable: \"punct\", normalization: false, backwards: false, version: \"57.1\" }"},
		{"{\"locale\": \"en\", \"version\": \"1.0\"}", 161,
		 "Requested collation version 1.0 but the only available collator version was 57.1. Requested "
		 "collation spec: { locale: \"en\", version: \"1.0\" }"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bson_t *spec = tt_json(cases[i].spec);
		const coll_t *c = (const coll_t *)1;
		terr_t e = TERR_INIT;

		if (coll_parse(spec, "collation", &c, &e) == 0) {
			TT_FAIL_("%s: accepted", cases[i].spec);
		} else {
			TT_EQ_INT(e.code, cases[i].code);
			TT_EQ_STR(e.msg, cases[i].msg);
		}
		terr_clear(&e);
		bson_destroy(spec);
	}
	{
		/* the command's own type check, and another path in messages */
		bson_value_t v = {.value_type = BSON_TYPE_INT32};
		bson_t *spec = tt_json("{\"locale\": \"en\", \"zzz\": 1}");
		const coll_t *c;
		terr_t e = TERR_INIT;

		TT_EQ_INT(coll_parse_value(&v, "find.collation", &c, &e), -1);
		TT_EQ_STR(e.msg, "BSON field 'find.collation' is the wrong type 'int', expected type 'object'");
		terr_clear(&e);
		TT_EQ_INT(coll_parse(spec, "create.collation", &c, &e), -1);
		TT_EQ_STR(e.msg, "BSON field 'create.collation.zzz' is an unknown field.");
		terr_clear(&e);
		bson_destroy(spec);
	}
}

static void
test_normalized_spec(void)
{
	const coll_t *en = parse_ok("{\"locale\": \"en\"}");
	bson_t out = BSON_INITIALIZER;

	TT_ASSERT(en != NULL);
	if (en == NULL)
		return;
	TT_EQ_JSON(coll_spec(en),
	           "{ \"locale\" : \"en\", \"caseLevel\" : false, \"caseFirst\" : \"off\", \"strength\" : 3, "
	           "\"numericOrdering\" : false, \"alternate\" : \"non-ignorable\", \"maxVariable\" : \"punct\", "
	           "\"normalization\" : false, \"backwards\" : false, \"version\" : \"57.1\" }");
	/* the same normalized spec is the same collation */
	TT_ASSERT(parse_ok("{\"locale\": \"en\", \"strength\": 3, \"version\": \"57.1\"}") == en);
	TT_ASSERT(parse_ok("{\"locale\": \"en\", \"strength\": 3.7}") == en);   /* truncated */
	TT_ASSERT(parse_ok("{\"locale\": \"en\", \"strength\": 2}") != en);
	TT_EQ_STR(coll_locale(en), "en");
	/* simple is NULL */
	TT_ASSERT(parse_ok("{\"locale\": \"simple\"}") == NULL);
	TT_ASSERT(parse_ok("{}") == NULL);
	coll_append_spec(&out, "c", NULL);
	TT_EQ_JSON(&out, "{ \"c\" : { \"locale\" : \"simple\" } }");
	bson_destroy(&out);
	/* defaults come from the locale */
	TT_EQ_JSON(coll_spec(parse_ok("{\"locale\": \"fr_CA\"}")),
	           "{ \"locale\" : \"fr_CA\", \"caseLevel\" : false, \"caseFirst\" : \"off\", \"strength\" : 3, "
	           "\"numericOrdering\" : false, \"alternate\" : \"non-ignorable\", \"maxVariable\" : \"punct\", "
	           "\"normalization\" : false, \"backwards\" : true, \"version\" : \"57.1\" }");
	TT_EQ_JSON(coll_spec(parse_ok("{\"locale\": \"th\"}")),
	           "{ \"locale\" : \"th\", \"caseLevel\" : false, \"caseFirst\" : \"off\", \"strength\" : 3, "
	           "\"numericOrdering\" : false, \"alternate\" : \"shifted\", \"maxVariable\" : \"punct\", "
	           "\"normalization\" : true, \"backwards\" : false, \"version\" : \"57.1\" }");
	TT_EQ_JSON(coll_spec(parse_ok("{\"locale\": \"da\"}")),
	           "{ \"locale\" : \"da\", \"caseLevel\" : false, \"caseFirst\" : \"upper\", \"strength\" : 3, "
	           "\"numericOrdering\" : false, \"alternate\" : \"non-ignorable\", \"maxVariable\" : \"punct\", "
	           "\"normalization\" : false, \"backwards\" : false, \"version\" : \"57.1\" }");
	TT_EQ_JSON(coll_spec(parse_ok("{\"locale\": \"de@collation=phonebook\", \"numericOrdering\": true, "
	                              "\"alternate\": \"shifted\", \"maxVariable\": \"space\", \"caseLevel\": true, "
	                              "\"strength\": 1, \"normalization\": true}")),
	           "{ \"locale\" : \"de@collation=phonebook\", \"caseLevel\" : true, \"caseFirst\" : \"off\", "
	           "\"strength\" : 1, \"numericOrdering\" : true, \"alternate\" : \"shifted\", \"maxVariable\" : "
	           "\"space\", \"normalization\" : true, \"backwards\" : false, \"version\" : \"57.1\" }");
}

static int
sign(int c)
{
	return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

/* KeyString order of two strings under c. */
static int
ks_order(const coll_t *c, const char *a, const char *b, bool desc)
{
	keystring_t ka, kb;
	bson_value_t va = {.value_type = BSON_TYPE_UTF8}, vb = {.value_type = BSON_TYPE_UTF8};
	size_t n;
	int r;

	va.value.v_utf8.str = (char *)a;
	va.value.v_utf8.len = (uint32_t)strlen(a);
	vb.value.v_utf8.str = (char *)b;
	vb.value.v_utf8.len = (uint32_t)strlen(b);
	keystring_init(&ka);
	keystring_init(&kb);
	keystring_append_value_coll(&ka, &va, desc, c);
	keystring_append_value_coll(&kb, &vb, desc, c);
	n = ka.len < kb.len ? ka.len : kb.len;
	r = memcmp(ka.buf, kb.buf, n);
	if (r == 0)
		r = ka.len < kb.len ? -1 : ka.len > kb.len;
	keystring_destroy(&ka);
	keystring_destroy(&kb);
	return sign(r);
}

static void
test_comparison_table(void)
{
	static const struct {
		const char *spec;
		const char *a, *b;
		int want;   /* sign of a vs b */
	} cases[] = {
		{"{\"locale\": \"en\", \"strength\": 1}", "a", "A", 0},
		{"{\"locale\": \"en\", \"strength\": 1}", "a", "\xc3\xa1", 0},            /* a, á */
		{"{\"locale\": \"en\", \"strength\": 1}", "a", "b", -1},
		{"{\"locale\": \"en\", \"strength\": 2}", "a", "A", 0},
		{"{\"locale\": \"en\", \"strength\": 2}", "a", "\xc3\xa1", -1},
		{"{\"locale\": \"en\", \"strength\": 3}", "a", "A", -1},
		{"{\"locale\": \"en\", \"strength\": 3, \"caseFirst\": \"upper\"}", "a", "A", 1},
		{"{\"locale\": \"en\", \"strength\": 3, \"caseFirst\": \"lower\"}", "a", "A", -1},
		{"{\"locale\": \"en\", \"strength\": 1, \"caseLevel\": true}", "a", "A", -1},
		{"{\"locale\": \"en\", \"strength\": 1, \"caseLevel\": true}", "a", "\xc3\xa1", 0},
		{"{\"locale\": \"en\"}", "10", "9", -1},
		{"{\"locale\": \"en\", \"numericOrdering\": true}", "10", "9", 1},
		{"{\"locale\": \"en\", \"numericOrdering\": true}", "a10", "a9", 1},
		{"{\"locale\": \"en\", \"numericOrdering\": true}", "007", "7", 0},
		{"{\"locale\": \"en\"}", "a b", "ab", -1},
		{"{\"locale\": \"en\", \"alternate\": \"shifted\", \"strength\": 3}", "a b", "ab", 0},
		{"{\"locale\": \"en\", \"alternate\": \"shifted\", \"strength\": 4}", "a b", "ab", -1},
		{"{\"locale\": \"en\", \"alternate\": \"shifted\"}", "a-b", "ab", 0},
		{"{\"locale\": \"en\", \"alternate\": \"shifted\", \"maxVariable\": \"space\"}", "a-b", "ab", -1},
		{"{\"locale\": \"en\", \"alternate\": \"shifted\", \"maxVariable\": \"space\"}", "a b", "ab", 0},
		/* French accents: the last difference decides with backwards */
		{"{\"locale\": \"fr\"}", "cot\xc3\xa9", "c\xc3\xb4te", -1},                 /* coté, côte */
		{"{\"locale\": \"fr\", \"backwards\": true}", "cot\xc3\xa9", "c\xc3\xb4te", 1},
		{"{\"locale\": \"fr_CA\"}", "cot\xc3\xa9", "c\xc3\xb4te", 1},
		/* tailorings: Swedish puts ä after z, German does not */
		{"{\"locale\": \"sv\"}", "\xc3\xa4", "z", 1},
		{"{\"locale\": \"de\"}", "\xc3\xa4", "z", -1},
		{"{\"locale\": \"en\", \"strength\": 5}", "a", "a", 0},
		{"{\"locale\": \"en\", \"strength\": 2}", "", "a", -1},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const coll_t *c = parse_ok(cases[i].spec);
		int got = sign(coll_compare(c, cases[i].a, strlen(cases[i].a), cases[i].b, strlen(cases[i].b)));

		if (got != cases[i].want)
			TT_FAIL_("%s: \"%s\" vs \"%s\": got %d, want %d", cases[i].spec, cases[i].a, cases[i].b, got,
			         cases[i].want);
		if (ks_order(c, cases[i].a, cases[i].b, false) != cases[i].want ||
		    ks_order(c, cases[i].a, cases[i].b, true) != -cases[i].want)
			TT_FAIL_("%s: keystring order of \"%s\" vs \"%s\"", cases[i].spec, cases[i].a, cases[i].b);
	}
	/* the simple collation is bytes */
	TT_EQ_INT(sign(coll_compare(NULL, "a", 1, "B", 1)), 1);
}

/* ---- randomized: KeyString vs ICU --------------------------------------- */

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const char *const pieces[] = {
	"a", "A", "b", "B", "z", "Z", "e", "\xc3\xa9", "\xc3\x89", "\xc3\xa8", "o", "\xc3\xb4", "\xc3\xb6",
	"\xc3\xa4", "\xc3\x9f", "ss", "0", "1", "2", "9", "10", " ", "-", "_", ".", "\xe2\x80\x94",
	"\xd0\xb6", "\xd0\x96", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xce\xb1", "\xce\x91", "\xff", "\x01",
};

static void
rand_string(char *buf, size_t cap)
{
	size_t n = rnd() % 7, len = 0, i;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
		size_t l = strlen(p);
		if (len + l + 1 >= cap)
			break;
		memcpy(buf + len, p, l + 1);
		len += l;
	}
}

/* {s: <a>, t: [<b>, 1]}: strings inside documents and arrays. */
static void
nested_value(bson_t *holder, const char *a, const char *b, bson_value_t *out)
{
	bson_t d, arr;

	bson_init(holder);
	BSON_APPEND_DOCUMENT_BEGIN(holder, "v", &d);
	BSON_APPEND_UTF8(&d, "s", a);
	BSON_APPEND_ARRAY_BEGIN(&d, "t", &arr);
	BSON_APPEND_UTF8(&arr, "0", b);
	BSON_APPEND_INT32(&arr, "1", 1);
	bson_append_array_end(&d, &arr);
	bson_append_document_end(holder, &d);
	{
		bson_iter_t it;
		bson_iter_init_find(&it, holder, "v");
		*out = *bson_iter_value(&it);
	}
}

static int
ks_value_order(const coll_t *c, const bson_value_t *a, const bson_value_t *b)
{
	keystring_t ka, kb;
	size_t n;
	int r;

	keystring_init(&ka);
	keystring_init(&kb);
	keystring_append_value_coll(&ka, a, false, c);
	keystring_append_value_coll(&kb, b, false, c);
	n = ka.len < kb.len ? ka.len : kb.len;
	r = memcmp(ka.buf, kb.buf, n);
	if (r == 0)
		r = ka.len < kb.len ? -1 : ka.len > kb.len;
	keystring_destroy(&ka);
	keystring_destroy(&kb);
	return sign(r);
}

static void
test_keystring_matches_icu(void)
{
	static const char *const specs[] = {
		"{\"locale\": \"en\"}",
		"{\"locale\": \"en\", \"strength\": 1}",
		"{\"locale\": \"en\", \"strength\": 2}",
		"{\"locale\": \"en\", \"strength\": 4, \"alternate\": \"shifted\"}",
		"{\"locale\": \"en\", \"strength\": 5}",
		"{\"locale\": \"en\", \"caseFirst\": \"upper\"}",
		"{\"locale\": \"en\", \"strength\": 1, \"caseLevel\": true}",
		"{\"locale\": \"en\", \"numericOrdering\": true}",
		"{\"locale\": \"fr_CA\"}",
		"{\"locale\": \"sv\"}",
		"{\"locale\": \"de@collation=phonebook\", \"strength\": 2}",
		"{\"locale\": \"zh\"}",
	};
	const char *seed = getenv("TAMGA_COLL_SEED");
	size_t s;
	int i, bad = 0;

	if (seed != NULL)
		rng = strtoull(seed, NULL, 10) | 1;
	for (s = 0; s < sizeof specs / sizeof specs[0]; s++) {
		const coll_t *c = parse_ok(specs[s]);
		bson_t *sp = tt_json(specs[s]);
		bson_iter_t it;
		UErrorCode st = U_ZERO_ERROR;
		UCollator *u;

		/* an independent ICU collator set up from the normalized spec */
		bson_iter_init_find(&it, coll_spec(c), "locale");
		u = ucol_open(bson_iter_utf8(&it, NULL), &st);
		bson_iter_init_find(&it, coll_spec(c), "strength");
		ucol_setAttribute(u, UCOL_STRENGTH,
		                  (UColAttributeValue[]){0, UCOL_PRIMARY, UCOL_SECONDARY, UCOL_TERTIARY,
		                                         UCOL_QUATERNARY, UCOL_IDENTICAL}[bson_iter_int32(&it)], &st);
		bson_iter_init_find(&it, coll_spec(c), "caseLevel");
		ucol_setAttribute(u, UCOL_CASE_LEVEL, bson_iter_bool(&it) ? UCOL_ON : UCOL_OFF, &st);
		bson_iter_init_find(&it, coll_spec(c), "numericOrdering");
		ucol_setAttribute(u, UCOL_NUMERIC_COLLATION, bson_iter_bool(&it) ? UCOL_ON : UCOL_OFF, &st);
		bson_iter_init_find(&it, coll_spec(c), "backwards");
		ucol_setAttribute(u, UCOL_FRENCH_COLLATION, bson_iter_bool(&it) ? UCOL_ON : UCOL_OFF, &st);
		bson_iter_init_find(&it, coll_spec(c), "alternate");
		ucol_setAttribute(u, UCOL_ALTERNATE_HANDLING,
		                  strcmp(bson_iter_utf8(&it, NULL), "shifted") == 0 ? UCOL_SHIFTED : UCOL_NON_IGNORABLE,
		                  &st);
		bson_iter_init_find(&it, coll_spec(c), "caseFirst");
		ucol_setAttribute(u, UCOL_CASE_FIRST,
		                  strcmp(bson_iter_utf8(&it, NULL), "upper") == 0 ? UCOL_UPPER_FIRST :
		                  strcmp(bson_iter_utf8(&it, NULL), "lower") == 0 ? UCOL_LOWER_FIRST : UCOL_OFF, &st);
		TT_ASSERT(U_SUCCESS(st));
		for (i = 0; i < 3000; i++) {
			char a[64], b[64], a2[64], b2[64];
			int want, got;
			bson_t ha, hb;
			bson_value_t va, vb;

			rand_string(a, sizeof a);
			rand_string(b, sizeof b);
			if (i % 7 == 0)
				strcpy(b, a);   /* some equal pairs */
			want = sign(ucol_strcollUTF8(u, a, -1, b, -1, &st));
			got = ks_order(c, a, b, false);
			if (got != want || ks_order(c, a, b, true) != -want ||
			    sign(coll_compare(c, a, strlen(a), b, strlen(b))) != want) {
				if (bad++ < 5)
					TT_FAIL_("%s: \"%s\" vs \"%s\": icu %d, keystring %d", specs[s], a, b, want, got);
			}
			/* nested: the first difference decides, outer string first */
			rand_string(a2, sizeof a2);
			rand_string(b2, sizeof b2);
			nested_value(&ha, a, a2, &va);
			nested_value(&hb, b, b2, &vb);
			want = sign(ucol_strcollUTF8(u, a, -1, b, -1, &st));
			if (want == 0)
				want = sign(ucol_strcollUTF8(u, a2, -1, b2, -1, &st));
			if (sign(bv_compare_coll(&va, &vb, c)) != want || ks_value_order(c, &va, &vb) != want) {
				if (bad++ < 5)
					TT_FAIL_("%s: nested: icu %d, bv_compare_coll %d, keystring %d", specs[s], want,
					         bv_compare_coll(&va, &vb, c), ks_value_order(c, &va, &vb));
			}
			if (want == 0 && bv_hash_coll(&va, c) != bv_hash_coll(&vb, c)) {
				if (bad++ < 5)
					TT_FAIL_("%s: equal values hash differently", specs[s]);
			}
			bson_destroy(&ha);
			bson_destroy(&hb);
		}
		ucol_close(u);
		bson_destroy(sp);
	}
}

static void
test_other_types_unchanged(void)
{
	const coll_t *c = parse_ok("{\"locale\": \"en\", \"strength\": 1}");
	bson_t *d = tt_json("{\"i\": 1, \"d\": 1.0, \"s\": \"1\", \"o\": {\"A\": 1}, \"p\": {\"a\": 1}, "
	                    "\"sym\": {\"$symbol\": \"A\"}, \"str\": \"a\", \"code\": {\"$code\": \"A\"}, "
	                    "\"code2\": {\"$code\": \"a\"}}");
	bson_iter_t a, b;

#define V(it, k) (bson_iter_init_find(&(it), d, k), bson_iter_value(&(it)))
	TT_EQ_INT(bv_compare_coll(V(a, "i"), V(b, "d"), c), 0);
	TT_EQ_INT(sign(bv_compare_coll(V(a, "i"), V(b, "s"), c)), -1);     /* numbers before strings */
	TT_ASSERT(bv_compare_coll(V(a, "o"), V(b, "p"), c) != 0);           /* field names never collate */
	TT_EQ_INT(bv_compare_coll(V(a, "sym"), V(b, "str"), c), 0);         /* symbols do */
	TT_ASSERT(bv_compare_coll(V(a, "code"), V(b, "code2"), c) != 0);    /* code does not */
#undef V
	bson_destroy(d);
}

static int
matches(const char *filter, const char *doc, const coll_t *c)
{
	bson_t *f = tt_json(filter), *d = tt_json(doc);
	match_options_t mo = {0};
	match_t *m = NULL;
	terr_t e = TERR_INIT;
	int r = -1;

	mo.coll = c;
	if (match_compile(f, &mo, &m, &e) == 0)
		r = match_exec(m, d, NULL, &e);
	else
		TT_FAIL_("%s: %s", filter, e.msg);
	match_free(m);
	terr_clear(&e);
	bson_destroy(f);
	bson_destroy(d);
	return r;
}

static void
test_match_under_collation(void)
{
	const coll_t *c = parse_ok("{\"locale\": \"en\", \"strength\": 2}");

	TT_EQ_INT(matches("{\"x\": \"A\"}", "{\"x\": \"a\"}", c), 1);
	TT_EQ_INT(matches("{\"x\": \"A\"}", "{\"x\": \"a\"}", NULL), 0);
	TT_EQ_INT(matches("{\"x\": {\"$gte\": \"B\", \"$lt\": \"C\"}}", "{\"x\": \"b\"}", c), 1);
	TT_EQ_INT(matches("{\"x\": {\"$gte\": \"B\", \"$lt\": \"C\"}}", "{\"x\": \"b\"}", NULL), 0);
	TT_EQ_INT(matches("{\"x\": {\"$in\": [\"Q\", \"Z\", \"B\"]}}", "{\"x\": [\"q\"]}", c), 1);
	TT_EQ_INT(matches("{\"x\": {\"$ne\": \"A\"}}", "{\"x\": \"a\"}", c), 0);
	TT_EQ_INT(matches("{\"x\": {\"$elemMatch\": {\"$eq\": \"A\"}}}", "{\"x\": [\"b\", \"a\"]}", c), 1);
	TT_EQ_INT(matches("{\"x\": {\"a\": \"B\"}}", "{\"x\": {\"a\": \"b\"}}", c), 1);
	TT_EQ_INT(matches("{\"$expr\": {\"$eq\": [\"$x\", \"A\"]}}", "{\"x\": \"a\"}", c), 1);
	TT_EQ_INT(matches("{\"$expr\": {\"$in\": [\"A\", \"$x\"]}}", "{\"x\": [\"a\"]}", c), 1);
	/* constant folding sees the collation too */
	TT_EQ_INT(matches("{\"$expr\": {\"$eq\": [\"a\", \"A\"]}}", "{}", c), 1);
	TT_EQ_INT(matches("{\"$expr\": {\"$eq\": [\"a\", \"A\"]}}", "{}", NULL), 0);
	/* not affected: regex, numbers, field names, accents at strength 2 */
	TT_EQ_INT(matches("{\"x\": {\"$regex\": \"^A\"}}", "{\"x\": \"a\"}", c), 0);
	TT_EQ_INT(matches("{\"x\": 1}", "{\"x\": 1.0}", c), 1);
	TT_EQ_INT(matches("{\"X\": \"a\"}", "{\"x\": \"a\"}", c), 0);
	TT_EQ_INT(matches("{\"x\": \"a\"}", "{\"x\": \"\xc3\xa1\"}", c), 0);
}

int
main(void)
{
	TT_RUN(test_parse_errors);
	TT_RUN(test_normalized_spec);
	TT_RUN(test_comparison_table);
	TT_RUN(test_keystring_matches_icu);
	TT_RUN(test_other_types_unchanged);
	TT_RUN(test_match_under_collation);
	return tt_finish();
}
