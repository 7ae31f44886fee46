/*
 * test_match_random.c -- randomized properties of the matcher: for random
 * documents and random filters, {$nor: [f]} matches exactly the documents f
 * does not, {$and: [f, g]} is the intersection and {$or: [f, g]} the union,
 * and {a: {$not: X}} is the complement of {a: X}.  Seeded, so failures
 * reproduce.
 */
#include "tt.h"
#include "query/match.h"

#include <pthread.h>

static uint64_t rng = 88172645463325252ull;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static const char *fields[] = {"a", "b", "a.b", "a.0", "c"};

static void
append_scalar(bson_t *b, const char *k)
{
	switch (rnd(9)) {
	case 0: BSON_APPEND_INT32(b, k, (int32_t)rnd(4)); break;
	case 1: BSON_APPEND_DOUBLE(b, k, rnd(2) ? 1.0 : 2.5); break;
	case 2: BSON_APPEND_INT64(b, k, (int64_t)rnd(4)); break;
	case 3: {
		const char *s = rnd(2) ? "x" : "y";
		BSON_APPEND_UTF8(b, k, s);
		break;
	}
	case 4: BSON_APPEND_NULL(b, k); break;
	case 5: BSON_APPEND_BOOL(b, k, rnd(2)); break;
	case 6: {
		bson_decimal128_t d;
		bson_decimal128_from_string(rnd(2) ? "1" : "2.50", &d);
		BSON_APPEND_DECIMAL128(b, k, &d);
		break;
	}
	default: BSON_APPEND_INT32(b, k, 1); break;
	}
}

static void append_value(bson_t *b, const char *k, int depth);

static void
append_value(bson_t *b, const char *k, int depth)
{
	uint32_t r = rnd(depth > 1 ? 6 : 10);
	bson_t sub;
	char key[16];

	if (r < 6) {
		append_scalar(b, k);
	} else if (r < 8) {
		uint32_t n = rnd(4);

		bson_append_array_begin(b, k, -1, &sub);
		for (uint32_t i = 0; i < n; i++) {
			snprintf(key, sizeof key, "%u", i);
			append_value(&sub, key, depth + 1);
		}
		bson_append_array_end(b, &sub);
	} else {
		bson_append_document_begin(b, k, -1, &sub);
		if (rnd(3))
			append_value(&sub, "b", depth + 1);
		if (rnd(2))
			append_value(&sub, "0", depth + 1);
		bson_append_document_end(b, &sub);
	}
}

static bson_t *
random_doc(void)
{
	bson_t *d = bson_new();

	BSON_APPEND_INT32(d, "_id", (int32_t)rnd(1000));
	if (rnd(4))
		append_value(d, "a", 0);
	if (rnd(3))
		append_value(d, "b", 0);
	if (rnd(2))
		append_value(d, "c", 0);
	return d;
}

static void
random_leaf_ops(bson_t *ops)
{
	static const char *cmp[] = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"};
	bson_t arr;
	uint32_t r = rnd(9);

	if (r < 4) {
		const char *op = cmp[rnd(6)];

		append_scalar(ops, op);
	} else if (r == 4 || r == 5) {
		const char *op = rnd(2) ? "$in" : "$nin";

		bson_append_array_begin(ops, op, -1, &arr);
		for (uint32_t i = 0, n = rnd(3); i < n; i++) {
			char key[16];
			snprintf(key, sizeof key, "%u", i);
			append_scalar(&arr, key);
		}
		bson_append_array_end(ops, &arr);
	} else if (r == 6) {
		BSON_APPEND_BOOL(ops, "$exists", rnd(2));
	} else if (r == 7) {
		static const char *types[] = {"number", "string", "null", "array", "object", "int", "bool"};
		const char *t = types[rnd(7)];

		BSON_APPEND_UTF8(ops, "$type", t);
	} else {
		BSON_APPEND_INT32(ops, "$size", (int32_t)rnd(3));
	}
}

static void random_filter(bson_t *f, int depth);

static void
random_clause(bson_t *f, int depth)
{
	const char *field = fields[rnd(5)];
	bson_t ops, arr, sub;
	uint32_t r = rnd(depth > 2 ? 3 : 6);

	if (r == 0) {
		append_value(f, field, 1);
	} else if (r <= 2) {
		bson_append_document_begin(f, field, -1, &ops);
		random_leaf_ops(&ops);
		if (rnd(3) == 0)
			random_leaf_ops(&ops);
		bson_append_document_end(f, &ops);
	} else if (r == 3) {
		bson_t inner;

		bson_append_document_begin(f, field, -1, &ops);
		bson_append_document_begin(&ops, "$not", -1, &inner);
		random_leaf_ops(&inner);
		bson_append_document_end(&ops, &inner);
		bson_append_document_end(f, &ops);
	} else {
		static const char *logic[] = {"$and", "$or", "$nor"};

		bson_append_array_begin(f, logic[rnd(3)], -1, &arr);
		for (uint32_t i = 0, n = 1 + rnd(3); i < n; i++) {
			char key[16];
			snprintf(key, sizeof key, "%u", i);
			bson_append_document_begin(&arr, key, -1, &sub);
			random_filter(&sub, depth + 1);
			bson_append_document_end(&arr, &sub);
		}
		bson_append_array_end(f, &arr);
	}
}

static void
random_filter(bson_t *f, int depth)
{
	for (uint32_t i = 0, n = 1 + rnd(2); i < n; i++)
		random_clause(f, depth);
}

static match_t *
compile(const bson_t *f)
{
	match_t *m = NULL;
	terr_t err = TERR_INIT;

	if (match_compile(f, NULL, &m, &err) != 0) {
		char *j = bson_as_relaxed_extended_json(f, NULL);
		fprintf(stderr, "compile failed: %s: %s\n", j, err.msg);
		bson_free(j);
	}
	terr_clear(&err);
	return m;
}

static bson_t *
wrap2(const char *op, const bson_t *f, const bson_t *g)
{
	bson_t *w = bson_new(), arr;

	bson_append_array_begin(w, op, -1, &arr);
	BSON_APPEND_DOCUMENT(&arr, "0", f);
	if (g != NULL)
		BSON_APPEND_DOCUMENT(&arr, "1", g);
	bson_append_array_end(w, &arr);
	return w;
}

#define NDOCS 150
#define NFILTERS 1500

static void
test_random_properties(void)
{
	bson_t *docs[NDOCS];
	int bad = 0;

	for (int i = 0; i < NDOCS; i++)
		docs[i] = random_doc();
	for (int k = 0; k < NFILTERS && bad < 5; k++) {
		bson_t *f = bson_new(), *g = bson_new();
		bson_t *nor, *and, *or;
		match_t *mf, *mg, *mnor, *mand, *mor;

		random_filter(f, 0);
		random_filter(g, 0);
		nor = wrap2("$nor", f, NULL);
		and = wrap2("$and", f, g);
		or = wrap2("$or", f, g);
		mf = compile(f);
		mg = compile(g);
		mnor = compile(nor);
		mand = compile(and);
		mor = compile(or);
		TT_ASSERT(mf && mg && mnor && mand && mor);
		for (int i = 0; mf && mg && mnor && mand && mor && i < NDOCS; i++) {
			bool a = match_eval(mf, docs[i]), b = match_eval(mg, docs[i]);
			bool ok = match_eval(mnor, docs[i]) == !a && match_eval(mand, docs[i]) == (a && b) &&
			          match_eval(mor, docs[i]) == (a || b);

			if (!ok) {
				char *jf = bson_as_relaxed_extended_json(f, NULL);
				char *jd = bson_as_relaxed_extended_json(docs[i], NULL);
				TT_FAIL_("property broken for filter %s doc %s", jf, jd);
				bson_free(jf);
				bson_free(jd);
				bad++;
				break;
			}
		}
		match_free(mf);
		match_free(mg);
		match_free(mnor);
		match_free(mand);
		match_free(mor);
		bson_destroy(f);
		bson_destroy(g);
		bson_destroy(nor);
		bson_destroy(and);
		bson_destroy(or);
	}
	for (int i = 0; i < NDOCS; i++)
		bson_destroy(docs[i]);
}

/* Equality with a number agrees across numeric types: {a: 1}, {a: 1.0},
 * {a: NumberLong(1)}, {a: Decimal("1")} select the same documents. */
static void
test_random_numeric_equivalence(void)
{
	bson_t *docs[NDOCS];
	match_t *m[4];
	bson_t *f[4];
	bson_decimal128_t d;

	for (int i = 0; i < NDOCS; i++)
		docs[i] = random_doc();
	bson_decimal128_from_string("1.0", &d);
	for (int k = 0; k < 4; k++)
		f[k] = bson_new();
	BSON_APPEND_INT32(f[0], "a", 1);
	BSON_APPEND_DOUBLE(f[1], "a", 1.0);
	BSON_APPEND_INT64(f[2], "a", 1);
	BSON_APPEND_DECIMAL128(f[3], "a", &d);
	for (int k = 0; k < 4; k++)
		m[k] = compile(f[k]);
	for (int i = 0; i < NDOCS; i++) {
		bool r0 = match_eval(m[0], docs[i]);

		for (int k = 1; k < 4; k++)
			TT_ASSERT(match_eval(m[k], docs[i]) == r0);
	}
	for (int k = 0; k < 4; k++) {
		match_free(m[k]);
		bson_destroy(f[k]);
	}
	for (int i = 0; i < NDOCS; i++)
		bson_destroy(docs[i]);
}

/* Random operator names with random argument types: compilation either
 * fails with a code or succeeds, and evaluation never crashes. */
static const char *any_ops[] = {
	"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$type", "$mod",
	"$regex", "$options", "$size", "$all", "$elemMatch", "$not", "$bitsAllSet",
	"$bitsAnySet", "$bitsAllClear", "$bitsAnyClear", "$and", "$or", "$nor", "$comment",
	"$alwaysTrue", "$alwaysFalse", "$foo", "$where", "$text", "$near", "$jsonSchema", "$expr",
};

static void
append_junk(bson_t *b, const char *k, int depth)
{
	bson_t sub;
	uint32_t r = rnd(depth > 3 ? 8 : 12);
	const char *op = any_ops[rnd(sizeof any_ops / sizeof any_ops[0])];

	switch (r) {
	case 0: BSON_APPEND_INT32(b, k, (int32_t)rnd(5) - 2); break;
	case 1: BSON_APPEND_DOUBLE(b, k, rnd(2) ? 0.5 : -1e300); break;
	case 2: BSON_APPEND_UTF8(b, k, rnd(2) ? "(" : "^a"); break;
	case 3: BSON_APPEND_NULL(b, k); break;
	case 4: BSON_APPEND_REGEX(b, k, "a+", rnd(2) ? "i" : "z"); break;
	case 5: BSON_APPEND_BOOL(b, k, rnd(2)); break;
	case 6: BSON_APPEND_UNDEFINED(b, k); break;
	case 7: BSON_APPEND_INT64(b, k, INT64_MIN); break;
	case 8:
	case 9:
		bson_append_array_begin(b, k, -1, &sub);
		for (uint32_t i = 0, n = rnd(3); i < n; i++) {
			char key[16];
			snprintf(key, sizeof key, "%u", i);
			append_junk(&sub, key, depth + 1);
		}
		bson_append_array_end(b, &sub);
		break;
	default:
		bson_append_document_begin(b, k, -1, &sub);
		for (uint32_t i = 0, n = rnd(3); i < n; i++)
			append_junk(&sub, rnd(3) ? op : "a", depth + 1);
		bson_append_document_end(b, &sub);
		break;
	}
}

static void
test_random_bad_input(void)
{
	bson_t *docs[20];
	int compiled = 0;

	for (int i = 0; i < 20; i++)
		docs[i] = random_doc();
	for (int k = 0; k < 3000; k++) {
		bson_t *f = bson_new();
		match_t *m = NULL;
		terr_t err = TERR_INIT;

		for (uint32_t i = 0, n = 1 + rnd(2); i < n; i++) {
			const char *op = any_ops[rnd(sizeof any_ops / sizeof any_ops[0])];
			append_junk(f, rnd(2) ? op : "a", 0);
		}
		if (match_compile(f, NULL, &m, &err) == 0) {
			compiled++;
			for (int i = 0; i < 20; i++)
				(void)match_exec(m, docs[i], NULL, &err), terr_clear(&err);
		} else {
			TT_ASSERT(err.code != 0 && err.msg != NULL);
		}
		match_free(m);
		terr_clear(&err);
		bson_destroy(f);
	}
	TT_ASSERT(compiled > 0);
	for (int i = 0; i < 20; i++)
		bson_destroy(docs[i]);
}

/* One compiled filter, several threads: answers agree and nothing races
 * (run under the sanitizers; regex match data is per thread). */
typedef struct {
	const match_t *m;
	const bson_t *yes, *no;
	int bad;
} thr_t;

static void *
thr_run(void *arg)
{
	thr_t *t = arg;

	for (int i = 0; i < 2000; i++)
		if (!match_eval(t->m, t->yes) || match_eval(t->m, t->no))
			t->bad++;
	return NULL;
}

static void
test_threads(void)
{
	bson_t *f = BCON_NEW("a", BCON_REGEX("^x+y", "i"), "b", "{", "$in", "[", BCON_INT32(1),
	                     BCON_INT32(2), "]", "}", "$expr", "{", "$gt", "[", "$b", BCON_INT32(1), "]",
	                     "}");
	bson_t *yes = BCON_NEW("a", "XXy", "b", BCON_INT32(2));
	bson_t *no = BCON_NEW("a", "xz", "b", BCON_INT32(2));
	match_t *m = compile(f);
	pthread_t th[4];
	thr_t t[4];

	for (int i = 0; i < 4; i++) {
		t[i] = (thr_t){m, yes, no, 0};
		pthread_create(&th[i], NULL, thr_run, &t[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		TT_EQ_INT(t[i].bad, 0);
	}
	match_free(m);
	bson_destroy(f);
	bson_destroy(yes);
	bson_destroy(no);
}

int
main(void)
{
	TT_RUN(test_threads);
	TT_RUN(test_random_bad_input);
	TT_RUN(test_random_properties);
	TT_RUN(test_random_numeric_equivalence);
	return tt_finish();
}
