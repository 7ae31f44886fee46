/*
 * test_schema.c -- $jsonSchema: compile errors, matching and mongod's errInfo
 * details, run from the data files in tests/unit/schema_cases/ (see its
 * README), plus bad-input and no-allocation checks written in C.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tt.h"
#include "schema/schema.h"

static char *
cases_dir(void)
{
	const char *src = getenv("TAMGA_SOURCE");
	if (src && *src)
		return bson_strdup_printf("%s/tests/unit/schema_cases", src);
	/* run by hand from the build folder: fall back to this file's folder */
	char *f = bson_strdup(__FILE__), *slash = strrchr(f, '/');
	char *d;
	if (slash)
		*slash = '\0';
	d = bson_strdup_printf("%s/schema_cases", slash ? f : ".");
	bson_free(f);
	return d;
}

static bson_t *
load_json_file(const char *path)
{
	bson_error_t e;
	bson_json_reader_t *r = bson_json_reader_new_from_file(path, &e);
	bson_t *b = bson_new();
	int rc;

	if (r == NULL) {
		fprintf(stderr, "cannot open %s: %s\n", path, e.message);
		bson_destroy(b);
		return NULL;
	}
	rc = bson_json_reader_read(r, b, &e);
	bson_json_reader_destroy(r);
	if (rc != 1) {
		fprintf(stderr, "bad JSON in %s: %s\n", path, rc < 0 ? e.message : "empty");
		bson_destroy(b);
		return NULL;
	}
	return b;
}

static bool
sub_doc(const bson_iter_t *parent, const char *key, bson_t *out)
{
	bson_iter_t it;
	uint32_t len;
	const uint8_t *data;

	if (!bson_iter_recurse(parent, &it) || !bson_iter_find(&it, key) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &len, &data);
	return bson_init_static(out, data, len);
}

static int case_pass, case_fail;

static void
run_case(const char *file, bson_iter_t *c)
{
	bson_t schema, doc, want;
	bson_iter_t it;
	const char *name = "?";
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	bool ok = true;
	char *j1 = NULL, *j2 = NULL;

	if (bson_iter_recurse(c, &it) && bson_iter_find(&it, "name"))
		name = bson_iter_utf8(&it, NULL);
	if (!sub_doc(c, "schema", &schema)) {
		fprintf(stderr, "FAIL %s/%s: case has no schema\n", file, name);
		case_fail++;
		return;
	}
	/* Expected compile error? */
	if (bson_iter_recurse(c, &it) && bson_iter_find(&it, "code")) {
		int code = bson_iter_as_int64(&it);
		const char *msg = NULL;
		if (bson_iter_recurse(c, &it) && bson_iter_find(&it, "errmsg"))
			msg = bson_iter_utf8(&it, NULL);
		unsigned flags = 0;
		if (bson_iter_recurse(c, &it) && bson_iter_find(&it, "deny_encrypt") && bson_iter_as_bool(&it))
			flags |= SCHEMA_DENY_ENCRYPT;
		if (schema_compile_flags(&schema, flags, &s, &err) == 0) {
			fprintf(stderr, "FAIL %s/%s: compiled, expected code %d\n", file, name, code);
			ok = false;
		} else if (err.code != code || (msg && strcmp(msg, err.msg) != 0)) {
			fprintf(stderr, "FAIL %s/%s:\n  got  %d %s\n  want %d %s\n", file, name,
				err.code, err.msg, code, msg ? msg : "(any)");
			ok = false;
		}
		goto done;
	}
	if (schema_compile(&schema, &s, &err) != 0) {
		fprintf(stderr, "FAIL %s/%s: compile error %d %s\n", file, name, err.code, err.msg);
		ok = false;
		goto done;
	}
	if (!sub_doc(c, "doc", &doc)) {
		fprintf(stderr, "FAIL %s/%s: case has no doc\n", file, name);
		ok = false;
		goto done;
	}
	if (bson_iter_recurse(c, &it) && bson_iter_find(&it, "valid")) {
		bool want_valid = bson_iter_as_bool(&it);
		bson_t d = BSON_INITIALIZER;
		bool got = schema_matches(s, &doc);
		if (got != want_valid || schema_explain(s, &doc, &d) != got) {
			fprintf(stderr, "FAIL %s/%s: valid=%d, want %d\n", file, name, got, want_valid);
			ok = false;
		}
		bson_destroy(&d);
		goto done;
	}
	if (!sub_doc(c, "details", &want)) {
		fprintf(stderr, "FAIL %s/%s: case has neither valid nor details\n", file, name);
		ok = false;
		goto done;
	}
	{
		bson_t got = BSON_INITIALIZER;
		if (schema_matches(s, &doc)) {
			fprintf(stderr, "FAIL %s/%s: document passed, expected a failure\n", file, name);
			ok = false;
		} else if (schema_explain(s, &doc, &got)) {
			fprintf(stderr, "FAIL %s/%s: explain says the document passes\n", file, name);
			ok = false;
		} else if (!bson_equal(&got, &want)) {
			j1 = bson_as_canonical_extended_json(&got, NULL);
			j2 = bson_as_canonical_extended_json(&want, NULL);
			fprintf(stderr, "FAIL %s/%s:\n  got  %s\n  want %s\n", file, name, j1, j2);
			ok = false;
		}
		bson_destroy(&got);
	}
done:
	if (ok)
		case_pass++;
	else
		case_fail++;
	bson_free(j1);
	bson_free(j2);
	schema_free(s);
	terr_clear(&err);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
test_case_files(void)
{
	char *dir = cases_dir();
	DIR *d = opendir(dir);
	struct dirent *de;
	char *names[256];
	int nn = 0;

	TT_ASSERT(d != NULL);
	if (d == NULL) {
		bson_free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL && nn < 256) {
		size_t l = strlen(de->d_name);
		if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
			names[nn++] = bson_strdup(de->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof *names, cmp_names);
	for (int i = 0; i < nn; i++) {
		char *path = bson_strdup_printf("%s/%s", dir, names[i]);
		bson_t *b = load_json_file(path);
		bson_iter_t it, c;
		int before_fail = case_fail, before_pass = case_pass;

		TT_ASSERT(b != NULL);
		if (b && bson_iter_init_find(&it, b, "cases") && bson_iter_recurse(&it, &c)) {
			while (bson_iter_next(&c))
				run_case(names[i], &c);
		}
		fprintf(stderr, "%s: %d passed, %d failed\n", names[i], case_pass - before_pass,
			case_fail - before_fail);
		if (b)
			bson_destroy(b);
		bson_free(path);
		bson_free(names[i]);
	}
	TT_ASSERT(nn > 0);
	TT_EQ_INT(case_fail, 0);
	fprintf(stderr, "schema cases: %d passed, %d failed\n", case_pass, case_fail);
	bson_free(dir);
}

/* {properties: {a: {properties: {a: ... leaf}}}} nested `levels` times. */
static bson_t *
nested_schema(int levels, const char *leaf_json)
{
	bson_t *cur = tt_json(leaf_json);
	for (int i = 0; i < levels; i++) {
		bson_t *next = bson_new(), props;
		bson_append_document_begin(next, "properties", -1, &props);
		bson_append_document(&props, "a", -1, cur);
		bson_append_document_end(next, &props);
		bson_destroy(cur);
		cur = next;
	}
	return cur;
}

/* A schema nested 200 levels deep fails to compile, clearly. */
static void
test_deep_schema(void)
{
	bson_t *b = nested_schema(200, "{}");
	schema_t *s = NULL;
	terr_t err = TERR_INIT;

	TT_ASSERT(schema_compile(b, &s, &err) != 0);
	TT_ASSERT(s == NULL);
	TT_EQ_INT(err.code, TERR_BAD_VALUE);
	TT_ASSERT(err.msg && strstr(err.msg, "nested too deeply") != NULL);
	terr_clear(&err);
	bson_destroy(b);

	/* enum values and documents nested far deeper than anything storable:
	 * compile and match without running out of stack */
	{
		bson_t *deep = nested_schema(3000, "{}");    /* {properties: {a: ...}} x 3000 */
		bson_t *sch = bson_new(), arr, props, x;
		bson_t *doc = bson_new();
		bson_append_array_begin(sch, "enum", -1, &arr);
		bson_append_document(&arr, "0", -1, deep);
		bson_append_document(&arr, "1", -1, deep);
		bson_append_array_end(sch, &arr);
		TT_ASSERT(schema_compile(sch, &s, &err) != 0);
		TT_EQ_INT(err.code, TERR_FAILED_TO_PARSE);
		terr_clear(&err);
		bson_reinit(sch);
		bson_append_document_begin(sch, "properties", -1, &props);
		bson_append_document_begin(&props, "x", -1, &x);
		bson_append_bool(&x, "uniqueItems", -1, true);
		bson_append_document_end(&props, &x);
		bson_append_document_end(sch, &props);
		TT_ASSERT(schema_compile(sch, &s, &err) == 0);
		bson_append_array_begin(doc, "x", -1, &arr);
		bson_append_document(&arr, "0", -1, deep);
		bson_append_document(&arr, "1", -1, deep);
		bson_append_array_end(doc, &arr);
		TT_ASSERT(!schema_matches(s, doc));
		schema_free(s);
		/* a deep value where a number belongs: the message prints it */
		bson_reinit(sch);
		bson_append_document(sch, "minLength", -1, deep);
		TT_ASSERT(schema_compile(sch, &s, &err) != 0);
		TT_EQ_INT(err.code, TERR_FAILED_TO_PARSE);
		terr_clear(&err);
		bson_destroy(doc);
		bson_destroy(sch);
		bson_destroy(deep);
	}

	/* 60 levels is fine */
	b = nested_schema(60, "{\"bsonType\": \"int\"}");
	TT_ASSERT(schema_compile(b, &s, &err) == 0);
	{
		bson_t *doc = tt_json("{\"a\": {\"a\": \"x\"}}");
		TT_ASSERT(schema_matches(s, doc));
		bson_destroy(doc);
	}
	schema_free(s);
	bson_destroy(b);
}

/* A huge enum compiles (duplicates found in linear time) and matches. */
static void
test_huge_enum(void)
{
	bson_t schema = BSON_INITIALIZER, props, x, arr;
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	char key[16];
	const char *k;

	bson_append_document_begin(&schema, "properties", -1, &props);
	bson_append_document_begin(&props, "x", -1, &x);
	bson_append_array_begin(&x, "enum", -1, &arr);
	for (uint32_t i = 0; i < 200000; i++) {
		bson_uint32_to_string(i, &k, key, sizeof key);
		bson_append_int32(&arr, k, -1, (int32_t)i);
	}
	bson_append_array_end(&x, &arr);
	bson_append_document_end(&props, &x);
	bson_append_document_end(&schema, &props);
	TT_ASSERT(schema_compile(&schema, &s, &err) == 0);
	{
		bson_t *ok = tt_json("{\"x\": 199999.0}"), *bad = tt_json("{\"x\": 200000}");
		TT_ASSERT(schema_matches(s, ok));
		TT_ASSERT(!schema_matches(s, bad));
		bson_destroy(ok);
		bson_destroy(bad);
	}
	schema_free(s);
	bson_destroy(&schema);

	/* the same enum with one duplicate at the end */
	bson_init(&schema);
	bson_append_array_begin(&schema, "enum", -1, &arr);
	for (uint32_t i = 0; i < 100001; i++) {
		bson_uint32_to_string(i, &k, key, sizeof key);
		bson_append_double(&arr, k, -1, i == 100000 ? 5.0 : (double)i);
	}
	bson_append_array_end(&schema, &arr);
	TT_ASSERT(schema_compile(&schema, &s, &err) != 0);
	TT_EQ_INT(err.code, TERR_FAILED_TO_PARSE);
	TT_EQ_STR(err.msg, "$jsonSchema keyword 'enum' array cannot contain duplicate values.");
	terr_clear(&err);
	bson_destroy(&schema);
}

/* The seed's reviewSchema: the exact 9.0.8 output printed in the seed. */
static const char *review_schema =
	"{\"bsonType\": \"object\", \"required\": [\"bookId\", \"customer\", \"rating\", \"reviewedAt\"],"
	" \"properties\": {\"bookId\": {\"bsonType\": \"int\"},"
	" \"customer\": {\"bsonType\": \"object\", \"required\": [\"customerId\", \"name\"],"
	"   \"properties\": {\"customerId\": {\"bsonType\": \"int\"}, \"name\": {\"bsonType\": \"string\", \"minLength\": 1}}},"
	" \"rating\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5},"
	" \"body\": {\"bsonType\": \"string\", \"maxLength\": 1000},"
	" \"reviewedAt\": {\"bsonType\": \"date\"},"
	" \"helpfulCount\": {\"bsonType\": \"int\", \"minimum\": 0},"
	" \"helpfulVoters\": {\"bsonType\": \"array\", \"items\": {\"bsonType\": \"int\"}}}}";

static void
test_seed_rating(void)
{
	bson_t *sch = tt_json(review_schema);
	bson_t *doc = tt_json("{\"_id\": 1, \"bookId\": 26, \"customer\": {\"customerId\": 38, \"name\": \"Margaret Hamilton\"},"
			      " \"rating\": 6, \"reviewedAt\": {\"$date\": \"2026-06-30T10:00:00Z\"}}");
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	bson_t details = BSON_INITIALIZER;
	bson_iter_t it;

	TT_ASSERT(schema_compile(sch, &s, &err) == 0);
	TT_ASSERT(!schema_matches(s, doc));
	TT_ASSERT(!schema_explain(s, doc, &details));
	TT_ASSERT(bson_iter_init_find(&it, &details, "schemaRulesNotSatisfied"));
	{
		bson_t rules;
		uint32_t len;
		const uint8_t *data;
		bson_iter_array(&it, &len, &data);
		bson_init_static(&rules, data, len);
		TT_EQ_JSON(&rules, "{ \"0\" : { \"operatorName\" : \"properties\", \"propertiesNotSatisfied\" : "
			   "[ { \"propertyName\" : \"rating\", \"details\" : [ { \"operatorName\" : \"maximum\", "
			   "\"specifiedAs\" : { \"maximum\" : 5 }, \"reason\" : \"comparison failed\", "
			   "\"consideredValue\" : 6 } ] } ] } }");
	}
	/* the legacy review whose rating is the string "5": only the type is reported */
	bson_destroy(doc);
	bson_reinit(&details);
	doc = tt_json("{\"_id\": 2, \"bookId\": 26, \"customer\": {\"customerId\": 39, \"name\": \"Grace Hopper\"},"
		      " \"rating\": \"5\", \"body\": \"A classic (strict).\", \"reviewedAt\": {\"$date\": \"2019-03-01T10:00:00Z\"}}");
	TT_ASSERT(!schema_explain(s, doc, &details));
	TT_EQ_JSON(&details, "{ \"operatorName\" : \"$jsonSchema\", \"schemaRulesNotSatisfied\" : [ { \"operatorName\" : "
		   "\"properties\", \"propertiesNotSatisfied\" : [ { \"propertyName\" : \"rating\", \"details\" : [ { "
		   "\"operatorName\" : \"bsonType\", \"specifiedAs\" : { \"bsonType\" : \"int\" }, \"reason\" : "
		   "\"type did not match\", \"consideredValue\" : \"5\", \"consideredType\" : \"string\" } ] } ] } ] }");
	schema_free(s);
	bson_destroy(&details);
	bson_destroy(doc);
	bson_destroy(sch);
}

/* ---- allocation counting through libbson's allocator ---- */
static int alloc_count;
static void *count_malloc(size_t n) { alloc_count++; return malloc(n); }
static void *count_calloc(size_t n, size_t m) { alloc_count++; return calloc(n, m); }
static void *count_realloc(void *p, size_t n) { alloc_count++; return realloc(p, n); }
static void count_free(void *p) { free(p); }

/* Matching a passing document allocates nothing. */
static void
test_no_allocation(void)
{
	bson_t *sch = tt_json(review_schema);
	bson_t *doc = tt_json("{\"_id\": 1, \"bookId\": 26, \"customer\": {\"customerId\": 38, \"name\": \"Ada\"},"
			      " \"rating\": 5, \"body\": \"Good.\", \"reviewedAt\": {\"$date\": \"2026-06-30T10:00:00Z\"},"
			      " \"helpfulVoters\": [1, 2, 3]}");
	bson_t *sch2 = tt_json("{\"properties\": {\"s\": {\"pattern\": \"^a+b$\", \"enum\": [\"ab\", \"aab\"]},"
			       " \"t\": {\"uniqueItems\": true, \"items\": {\"multipleOf\": 0.5}}},"
			       " \"patternProperties\": {\"^x\": {\"type\": \"number\"}}, \"additionalProperties\": false,"
			       " \"dependencies\": {\"s\": [\"t\"]}, \"anyOf\": [{\"required\": [\"s\"]}, {\"required\": [\"t\"]}]}");
	bson_t *doc2 = tt_json("{\"s\": \"aab\", \"t\": [0.5, 1, 1.5], \"x1\": 3}");
	schema_t *s = NULL, *s2 = NULL;
	terr_t err = TERR_INIT;
	bson_mem_vtable_t vt = {.malloc = count_malloc, .calloc = count_calloc, .realloc = count_realloc, .free = count_free};
	bool ok = true;

	TT_ASSERT(schema_compile(sch, &s, &err) == 0);
	TT_ASSERT(schema_compile(sch2, &s2, &err) == 0);
	TT_ASSERT(schema_matches(s, doc));      /* warm-up: per-thread regex data */
	TT_ASSERT(schema_matches(s2, doc2));
	alloc_count = 0;
	bson_mem_set_vtable(&vt);
	for (int i = 0; i < 100; i++)
		ok = ok && schema_matches(s, doc) && schema_matches(s2, doc2);
	bson_mem_restore_vtable();
	TT_ASSERT(ok);
	TT_EQ_INT(alloc_count, 0);
	schema_free(s);
	schema_free(s2);
	bson_destroy(sch);
	bson_destroy(sch2);
	bson_destroy(doc);
	bson_destroy(doc2);
}

/* The pieces the command layer builds validators' errInfo from. */
static void
test_explain_variants(void)
{
	bson_t *sch = tt_json("{\"required\": [\"a\"], \"properties\": {\"a\": {}, \"b\": {\"bsonType\": \"int\", \"maximum\": 5}},"
			      " \"additionalProperties\": false, \"title\": \"T\"}");
	bson_t *bad = tt_json("{\"b\": 7, \"c\": 1}");
	bson_t *good = tt_json("{\"a\": 1, \"b\": 1}");
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	bson_t out = BSON_INITIALIZER;

	TT_ASSERT(schema_compile(sch, &s, &err) == 0);
	TT_EQ_STR(schema_title(s), "T");
	TT_ASSERT(!schema_uses_encrypt(s));

	/* nested in a larger validator */
	TT_ASSERT(!schema_explain_append(s, bad, &out, "details"));
	TT_EQ_JSON(&out, "{ \"details\" : { \"operatorName\" : \"$jsonSchema\", \"title\" : \"T\", "
		   "\"schemaRulesNotSatisfied\" : [ { \"operatorName\" : \"properties\", \"propertiesNotSatisfied\" : "
		   "[ { \"propertyName\" : \"b\", \"details\" : [ { \"operatorName\" : \"maximum\", \"specifiedAs\" : "
		   "{ \"maximum\" : 5 }, \"reason\" : \"comparison failed\", \"consideredValue\" : 7 } ] } ] }, "
		   "{ \"operatorName\" : \"additionalProperties\", \"specifiedAs\" : { \"additionalProperties\" : false }, "
		   "\"additionalProperties\" : [ \"c\" ] }, { \"operatorName\" : \"required\", \"specifiedAs\" : "
		   "{ \"required\" : [ \"a\" ] }, \"missingProperties\" : [ \"a\" ] } ] } }");
	bson_reinit(&out);
	TT_ASSERT(schema_explain_append(s, good, &out, "details"));
	TT_EQ_INT(out.len, 5);

	/* truncated: no specifiedAs nor considered values, except where mongod keeps them */
	TT_ASSERT(!schema_explain_flags(s, bad, SCHEMA_EXPLAIN_TRUNCATE, &out));
	TT_EQ_JSON(&out, "{ \"operatorName\" : \"$jsonSchema\", \"title\" : \"T\", "
		   "\"schemaRulesNotSatisfied\" : [ { \"operatorName\" : \"properties\", \"propertiesNotSatisfied\" : "
		   "[ { \"propertyName\" : \"b\", \"details\" : [ { \"operatorName\" : \"maximum\", "
		   "\"reason\" : \"comparison failed\" } ] } ] }, "
		   "{ \"operatorName\" : \"additionalProperties\", \"specifiedAs\" : { \"additionalProperties\" : false }, "
		   "\"additionalProperties\" : [ \"c\" ] }, { \"operatorName\" : \"required\", "
		   "\"missingProperties\" : [ \"a\" ] } ] }");
	bson_reinit(&out);

	/* under $nor / $not: the document matched the schema */
	TT_ASSERT(schema_explain_inverted_append(s, good, &out, "details"));
	TT_EQ_JSON(&out, "{ \"details\" : { \"operatorName\" : \"$jsonSchema\", \"reason\" : \"schema matched\" } }");
	bson_reinit(&out);
	TT_ASSERT(!schema_explain_inverted_append(s, bad, &out, "details"));
	TT_EQ_INT(out.len, 5);

	schema_free(s);
	bson_destroy(&out);
	bson_destroy(sch);
	bson_destroy(bad);
	bson_destroy(good);

	/* encryption keywords: accepted by default, refused with the flag */
	sch = tt_json("{\"properties\": {\"ssn\": {\"encrypt\": {\"bsonType\": \"string\", "
		      "\"algorithm\": \"AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic\"}}}}");
	TT_ASSERT(schema_compile_flags(sch, SCHEMA_DENY_ENCRYPT, &s, &err) != 0);
	TT_EQ_INT(err.code, 224);
	terr_clear(&err);
	TT_ASSERT(schema_compile(sch, &s, &err) == 0);
	TT_ASSERT(schema_uses_encrypt(s));
	schema_free(s);
	bson_destroy(sch);
	sch = tt_json("{\"properties\": {\"ssn\": {\"encrypt\": {\"bogus\": 1}}}}");
	TT_ASSERT(schema_compile(sch, &s, &err) != 0);
	TT_EQ_INT(err.code, 40415);
	TT_EQ_STR(err.msg, "BSON field 'encrypt.bogus' is an unknown field.");
	terr_clear(&err);
	bson_destroy(sch);
}

/* One compiled schema shared by threads (regex match data is per thread). */
typedef struct {
	const schema_t *s;
	const bson_t *ok, *bad;
	int wrong;
} thr_arg_t;

static void *
thr_main(void *p)
{
	thr_arg_t *a = p;
	for (int i = 0; i < 2000; i++)
		if (!schema_matches(a->s, a->ok) || schema_matches(a->s, a->bad))
			a->wrong++;
	return NULL;
}

static void
test_threads(void)
{
	bson_t *sch = tt_json("{\"properties\": {\"a\": {\"pattern\": \"^[a-z]+[0-9]{2}$\"}}}");
	bson_t *ok = tt_json("{\"a\": \"abc12\"}"), *bad = tt_json("{\"a\": \"abc1\"}");
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	pthread_t t[4];
	thr_arg_t args[4];

	TT_ASSERT(schema_compile(sch, &s, &err) == 0);
	for (int i = 0; i < 4; i++) {
		args[i] = (thr_arg_t){s, ok, bad, 0};
		pthread_create(&t[i], NULL, thr_main, &args[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		TT_EQ_INT(args[i].wrong, 0);
	}
	schema_free(s);
	bson_destroy(sch);
	bson_destroy(ok);
	bson_destroy(bad);
}

/* ---- random schemas and documents: no crash, explain agrees with matches ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static const char *const rnd_names[] = {"a", "b", "c", "_id", "a.b", "x1", "S"};

static void
rnd_value(bson_t *b, const char *key, int depth)
{
	switch (rnd(depth > 2 ? 6 : 8)) {
	case 0: bson_append_int32(b, key, -1, (int32_t)rnd(10) - 3); break;
	case 1: bson_append_double(b, key, -1, (double)rnd(100) / 8.0 - 2); break;
	case 2: bson_append_utf8(b, key, -1, rnd(2) ? "ab" : "Slow", -1); break;
	case 3: bson_append_bool(b, key, -1, rnd(2)); break;
	case 4: bson_append_null(b, key, -1); break;
	case 5: bson_append_int64(b, key, -1, (int64_t)rnd(5)); break;
	case 6: {
		bson_t a;
		char k[16];
		uint32_t n = rnd(4);
		bson_append_array_begin(b, key, -1, &a);
		for (uint32_t i = 0; i < n; i++) {
			snprintf(k, sizeof k, "%u", i);
			rnd_value(&a, k, depth + 1);
		}
		bson_append_array_end(b, &a);
		break;
	}
	default: {
		bson_t d;
		uint32_t n = rnd(4);
		bson_append_document_begin(b, key, -1, &d);
		for (uint32_t i = 0; i < n; i++)
			rnd_value(&d, rnd_names[rnd(7)], depth + 1);
		bson_append_document_end(b, &d);
	}
	}
}

static void rnd_schema(bson_t *b, int depth);

static void
rnd_schema_field(bson_t *b, const char *key, int depth)
{
	bson_t sub;
	bson_append_document_begin(b, key, -1, &sub);
	rnd_schema(&sub, depth + 1);
	bson_append_document_end(b, &sub);
}

static void
rnd_schema(bson_t *b, int depth)
{
	static const char *const types[] = {"int", "string", "object", "array", "number", "double", "bool", "null", "long"};
	uint32_t nkw = rnd(4);

	for (uint32_t i = 0; i < nkw; i++) {
		bson_t sub, a;
		switch (rnd(depth > 2 ? 12 : 20)) {
		case 0: bson_append_utf8(b, "bsonType", -1, types[rnd(9)], -1); break;
		case 1: bson_append_int32(b, "minimum", -1, (int32_t)rnd(6) - 1); break;
		case 2: bson_append_double(b, "maximum", -1, (double)rnd(8) / 2); break;
		case 3: bson_append_int32(b, "minLength", -1, (int32_t)rnd(4)); break;
		case 4: bson_append_utf8(b, "pattern", -1, rnd(2) ? "^S" : "b$", -1); break;
		case 5: bson_append_double(b, "multipleOf", -1, rnd(2) ? 0.5 : 2); break;
		case 6: bson_append_int32(b, "maxItems", -1, (int32_t)rnd(3)); break;
		case 7: bson_append_bool(b, "uniqueItems", -1, true); break;
		case 8:
			bson_append_array_begin(b, "required", -1, &a);
			bson_append_utf8(&a, "0", -1, rnd_names[rnd(7)], -1);
			bson_append_array_end(b, &a);
			break;
		case 9: bson_append_int32(b, "minProperties", -1, (int32_t)rnd(3)); break;
		case 10:
			bson_append_array_begin(b, "enum", -1, &a);
			rnd_value(&a, "0", 1);
			bson_append_array_end(b, &a);
			break;
		case 11: bson_append_bool(b, "additionalProperties", -1, rnd(2)); break;
		case 12:
			bson_append_document_begin(b, "properties", -1, &sub);
			rnd_schema_field(&sub, rnd_names[rnd(7)], depth);
			bson_append_document_end(b, &sub);
			break;
		case 13: rnd_schema_field(b, "items", depth); break;
		case 14: rnd_schema_field(b, "not", depth); break;
		case 15:
		case 16: {
			const char *kw = rnd(3) == 0 ? "allOf" : rnd(2) ? "anyOf" : "oneOf";
			bson_append_array_begin(b, kw, -1, &a);
			rnd_schema_field(&a, "0", depth);
			rnd_schema_field(&a, "1", depth);
			bson_append_array_end(b, &a);
			break;
		}
		case 17:
			bson_append_document_begin(b, "patternProperties", -1, &sub);
			rnd_schema_field(&sub, rnd(2) ? "^a" : "S", depth);
			bson_append_document_end(b, &sub);
			break;
		case 18:
			bson_append_document_begin(b, "dependencies", -1, &sub);
			if (rnd(2)) {
				rnd_schema_field(&sub, rnd_names[rnd(7)], depth);
			} else {
				bson_append_array_begin(&sub, rnd_names[rnd(7)], -1, &a);
				bson_append_utf8(&a, "0", -1, rnd_names[rnd(7)], -1);
				bson_append_array_end(&sub, &a);
			}
			bson_append_document_end(b, &sub);
			break;
		default:
			bson_append_array_begin(b, "items", -1, &a);
			rnd_schema_field(&a, "0", depth);
			bson_append_array_end(b, &a);
			bson_append_bool(b, "additionalItems", -1, rnd(2));
			break;
		}
	}
}

static void
test_random(void)
{
	int compiled = 0, failing = 0, disagree = 0, empty = 0;

	for (int i = 0; i < 3000; i++) {
		bson_t sch = BSON_INITIALIZER, doc = BSON_INITIALIZER, det = BSON_INITIALIZER;
		schema_t *s = NULL;
		terr_t err = TERR_INIT;
		uint32_t nf = rnd(5);

		rnd_schema(&sch, 0);
		for (uint32_t f = 0; f < nf; f++)
			rnd_value(&doc, rnd_names[rnd(7)], 0);
		if (schema_compile(&sch, &s, &err) == 0) {
			bool m = schema_matches(s, &doc);
			compiled++;
			if (schema_explain(s, &doc, &det) != m)
				disagree++;
			if (!m) {
				bson_iter_t it;
				failing++;
				if (!bson_iter_init_find(&it, &det, "operatorName"))
					empty++;
			}
			schema_free(s);
		}
		terr_clear(&err);
		bson_destroy(&sch);
		bson_destroy(&doc);
		bson_destroy(&det);
	}
	fprintf(stderr, "random: %d compiled, %d failing documents explained\n", compiled, failing);
	TT_ASSERT(compiled > 1000);
	TT_ASSERT(failing > 100);
	TT_EQ_INT(disagree, 0);
	TT_EQ_INT(empty, 0);
}

/* ---- the raw-element fast path (schema_match.c's el_match, the property
 * hash, integer bounds): every keyword family on passing and failing
 * documents, with the answer written down, and schema_matches_data,
 * schema_explain and schema_matches agreeing on it ---- */
typedef struct {
	const char *schema, *doc;
	bool pass;
} fast_case_t;

static const fast_case_t fast_cases[] = {
	/* integer bounds: ints, longs, exclusive, edges of int64 */
	{"{\"properties\": {\"r\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5}}}", "{\"r\": 5}", true},
	{"{\"properties\": {\"r\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5}}}", "{\"r\": 6}", false},
	{"{\"properties\": {\"r\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5}}}", "{\"r\": 0}", false},
	{"{\"properties\": {\"r\": {\"minimum\": 1, \"exclusiveMinimum\": true}}}", "{\"r\": 1}", false},
	{"{\"properties\": {\"r\": {\"minimum\": 1, \"exclusiveMinimum\": true}}}", "{\"r\": {\"$numberLong\": \"2\"}}", true},
	{"{\"properties\": {\"r\": {\"maximum\": {\"$numberLong\": \"9223372036854775807\"}, \"exclusiveMaximum\": true}}}",
	    "{\"r\": {\"$numberLong\": \"9223372036854775807\"}}", false},
	{"{\"properties\": {\"r\": {\"minimum\": {\"$numberLong\": \"-9223372036854775808\"}, \"exclusiveMinimum\": true}}}",
	    "{\"r\": {\"$numberLong\": \"-9223372036854775808\"}}", false},
	{"{\"properties\": {\"r\": {\"minimum\": {\"$numberLong\": \"-9223372036854775808\"}}}}",
	    "{\"r\": {\"$numberLong\": \"-9223372036854775808\"}}", true},
	/* double bounds and double values take the general comparison */
	{"{\"properties\": {\"r\": {\"maximum\": 1.5}}}", "{\"r\": 1}", true},
	{"{\"properties\": {\"r\": {\"maximum\": 1.5}}}", "{\"r\": 2}", false},
	{"{\"properties\": {\"r\": {\"maximum\": 2}}}", "{\"r\": 2.5}", false},
	{"{\"properties\": {\"r\": {\"maximum\": 2}}}", "{\"r\": {\"$numberDouble\": \"NaN\"}}", false},
	{"{\"properties\": {\"r\": {\"minimum\": 2}}}", "{\"r\": {\"$numberDecimal\": \"1.99\"}}", false},
	{"{\"properties\": {\"r\": {\"minimum\": 2}}}", "{\"r\": {\"$numberDecimal\": \"2.00\"}}", true},
	{"{\"properties\": {\"r\": {\"multipleOf\": 0.01}}}", "{\"r\": 19.99}", true},
	{"{\"properties\": {\"r\": {\"multipleOf\": 3}}}", "{\"r\": 10}", false},
	/* restrictions ignore other types; a single type switches them off */
	{"{\"properties\": {\"r\": {\"minimum\": 3}}}", "{\"r\": \"1\"}", true},
	{"{\"properties\": {\"r\": {\"bsonType\": \"int\"}}}", "{\"r\": \"1\"}", false},
	{"{\"properties\": {\"r\": {\"bsonType\": [\"int\", \"string\"], \"minLength\": 2}}}", "{\"r\": \"1\"}", false},
	/* strings */
	{"{\"properties\": {\"s\": {\"minLength\": 2, \"maxLength\": 3}}}", "{\"s\": \"\\u00e9\\u00e9\\u00e9\"}", true},
	{"{\"properties\": {\"s\": {\"maxLength\": 2}}}", "{\"s\": \"abc\"}", false},
	{"{\"properties\": {\"s\": {\"minLength\": 1}}}", "{\"s\": \"\"}", false},
	{"{\"properties\": {\"s\": {\"pattern\": \"^a+$\"}}}", "{\"s\": \"aab\"}", false},
	{"{\"properties\": {\"s\": {\"pattern\": \"^a+$\"}}}", "{\"s\": \"aa\"}", true},
	/* arrays: items, counts, unique, tuples */
	{"{\"properties\": {\"t\": {\"items\": {\"bsonType\": \"string\"}}}}", "{\"t\": [\"a\", \"b\"]}", true},
	{"{\"properties\": {\"t\": {\"items\": {\"bsonType\": \"string\"}}}}", "{\"t\": [\"a\", 1]}", false},
	{"{\"properties\": {\"t\": {\"minItems\": 2}}}", "{\"t\": [1]}", false},
	{"{\"properties\": {\"t\": {\"uniqueItems\": true}}}", "{\"t\": [1, 1.0]}", false},
	{"{\"properties\": {\"t\": {\"items\": [{\"bsonType\": \"int\"}], \"additionalItems\": false}}}", "{\"t\": [1, 2]}", false},
	{"{\"properties\": {\"t\": {\"items\": [{\"bsonType\": \"int\"}], \"additionalItems\": false}}}", "{\"t\": [1]}", true},
	{"{\"properties\": {\"t\": {\"items\": {\"items\": {\"maximum\": 1}}}}}", "{\"t\": [[0], [2]]}", false},
	/* objects: nested required, properties by hash, keys of 0, 8 and 9 bytes, keys at the document's end */
	{"{\"required\": [\"c\"], \"properties\": {\"c\": {\"required\": [\"n\"], \"properties\": {\"n\": {\"bsonType\": \"string\"}}}}}",
	    "{\"c\": {\"n\": \"x\"}}", true},
	{"{\"required\": [\"c\"], \"properties\": {\"c\": {\"required\": [\"n\"], \"properties\": {\"n\": {\"bsonType\": \"string\"}}}}}",
	    "{\"c\": {\"m\": \"x\"}}", false},
	{"{\"required\": [\"c\"], \"properties\": {\"c\": {\"required\": [\"n\"]}}}", "{\"x\": 1}", false},
	{"{\"properties\": {\"customer\": {\"bsonType\": \"int\"}, \"customers\": {\"bsonType\": \"int\"}, \"\": {\"bsonType\": \"int\"}}}",
	    "{\"customer\": 1, \"customers\": 2, \"\": 3}", true},
	{"{\"properties\": {\"customer\": {\"bsonType\": \"int\"}, \"customers\": {\"bsonType\": \"int\"}}}",
	    "{\"customers\": \"x\"}", false},
	{"{\"properties\": {\"customer\": {\"bsonType\": \"int\"}}}", "{\"customeR\": \"x\", \"customer\": 1}", true},
	{"{\"properties\": {\"\": {\"bsonType\": \"int\"}}}", "{\"\": \"x\"}", false},
	{"{\"properties\": {\"a\": {\"bsonType\": \"int\"}}}", "{\"a\": null}", false},
	{"{\"properties\": {\"a\": {\"bsonType\": \"null\"}}}", "{\"a\": null}", true},
	{"{\"properties\": {\"a.b\": {\"bsonType\": \"int\"}}}", "{\"a\": {\"b\": \"x\"}}", false},
	{"{\"properties\": {\"a.b\": {\"bsonType\": \"int\"}, \"a\": {\"bsonType\": \"object\"}}}", "{\"a\": {\"b\": 1}}", true},
	{"{\"required\": [\"a.b\"]}", "{\"a\": {\"c\": 1}}", false},
	{"{\"minProperties\": 2, \"maxProperties\": 2}", "{\"a\": 1, \"b\": 2}", true},
	{"{\"maxProperties\": 1}", "{\"a\": 1, \"b\": 2}", false},
	{"{\"additionalProperties\": false, \"properties\": {\"a\": {}}}", "{\"a\": 1, \"b\": 2}", false},
	{"{\"patternProperties\": {\"^x\": {\"bsonType\": \"int\"}}}", "{\"xa\": \"s\"}", false},
	/* the slow keywords still decide inside the fast walk */
	{"{\"properties\": {\"e\": {\"enum\": [1, \"a\"]}}}", "{\"e\": 1.0}", true},
	{"{\"properties\": {\"e\": {\"enum\": [1, \"a\"]}}}", "{\"e\": \"b\"}", false},
	{"{\"properties\": {\"e\": {\"anyOf\": [{\"bsonType\": \"int\"}, {\"bsonType\": \"string\"}]}}}", "{\"e\": true}", false},
	{"{\"properties\": {\"e\": {\"not\": {\"bsonType\": \"int\"}}}}", "{\"e\": 1}", false},
	{"{\"properties\": {\"e\": {\"oneOf\": [{\"minimum\": 1}, {\"maximum\": 5}]}}}", "{\"e\": 3}", false},
	{"{\"properties\": {\"e\": {\"dependencies\": {\"a\": [\"b\"]}}}}", "{\"e\": {\"a\": 1}}", false},
	{"{\"properties\": {\"e\": {\"dependencies\": {\"a\": [\"b\"]}}}}", "{\"e\": {\"a\": 1, \"b\": 1}}", true},
	{"{\"properties\": {\"e\": {\"allOf\": [{\"bsonType\": \"object\"}, {\"required\": [\"z\"]}]}}}", "{\"e\": {}}", false},
	/* the key word from the walk (biter_next_kw): names sharing their first 8 bytes, 7 to 17 bytes long */
	{"{\"properties\": {\"abcdefg\": {\"bsonType\": \"int\"}, \"abcdefgh\": {\"bsonType\": \"string\"}, "
	    "\"abcdefghi\": {\"bsonType\": \"bool\"}, \"abcdefghijklmnop\": {\"bsonType\": \"double\"}, "
	    "\"abcdefghijklmnopq\": {\"bsonType\": \"null\"}}}",
	    "{\"abcdefg\": 1, \"abcdefgh\": \"s\", \"abcdefghi\": true, \"abcdefghijklmnop\": 1.5, \"abcdefghijklmnopq\": null}", true},
	{"{\"properties\": {\"abcdefg\": {\"bsonType\": \"int\"}, \"abcdefgh\": {\"bsonType\": \"string\"}}}",
	    "{\"abcdefgh\": 1}", false},
	{"{\"properties\": {\"abcdefgh\": {\"bsonType\": \"string\"}, \"abcdefghi\": {\"bsonType\": \"bool\"}}}",
	    "{\"abcdefghi\": \"s\"}", false},
	{"{\"properties\": {\"abcdefghijklmnop\": {\"bsonType\": \"double\"}, \"abcdefghijklmnoq\": {\"bsonType\": \"int\"}}}",
	    "{\"abcdefghijklmnoq\": 1.5}", false},
	{"{\"properties\": {\"abcdefghijklmnop\": {\"bsonType\": \"double\"}}}", "{\"abcdefghijklmnoq\": \"x\"}", true},
	{"{\"properties\": {\"abcdefghijklmnopq\": {\"bsonType\": \"null\"}}}", "{\"abcdefghijklmnopq\": 0}", false},
	/* keys ending less than 8 bytes before the document's end, keys with high and low bytes */
	{"{\"properties\": {\"ab\": {\"bsonType\": \"int\"}}}", "{\"ab\": null}", false},
	{"{\"properties\": {\"a\": {\"bsonType\": \"bool\"}}}", "{\"a\": 1}", false},
	{"{\"properties\": {\"a\": {\"bsonType\": \"int\"}}}", "{\"x\": 1, \"a\": true}", false},
	{"{\"properties\": {\"\\u00e9t\\u00e9\": {\"bsonType\": \"int\"}}}", "{\"\\u00e9t\\u00e9\": \"x\"}", false},
	{"{\"properties\": {\"\\u0001\\u0001\\u0001a\": {\"bsonType\": \"int\"}}}", "{\"\\u0001\\u0001\\u0001a\": \"x\"}", false},
	{"{\"properties\": {\"\\u0001\\u0001\\u0001a\": {\"bsonType\": \"int\"}}}", "{\"\\u0001\\u0001\\u0001\": \"x\"}", true},
	/* type-only nodes (leaf), every type's bit (minKey/maxKey by table) */
	{"{\"properties\": {\"d\": {\"bsonType\": \"date\"}}}", "{\"d\": \"x\"}", false},
	{"{\"properties\": {\"d\": {\"bsonType\": \"date\"}}}", "{\"d\": {\"$date\": 0}}", true},
	{"{\"properties\": {\"m\": {\"bsonType\": \"minKey\"}}}", "{\"m\": {\"$minKey\": 1}}", true},
	{"{\"properties\": {\"m\": {\"bsonType\": \"minKey\"}}}", "{\"m\": {\"$maxKey\": 1}}", false},
	{"{\"properties\": {\"m\": {\"bsonType\": \"maxKey\"}}}", "{\"m\": {\"$maxKey\": 1}}", true},
	{"{\"properties\": {\"m\": {}}}", "{\"m\": {\"$minKey\": 1}}", true},
	{"{\"properties\": {\"m\": {\"bsonType\": \"decimal\"}}}", "{\"m\": {\"$numberDecimal\": \"1\"}}", true},
	/* required ticked off during the walk, beside other properties; a nested node with counts only */
	{"{\"required\": [\"a\", \"b\"], \"properties\": {\"a\": {}, \"b\": {}, \"c\": {}}}", "{\"a\": 1, \"c\": 1}", false},
	{"{\"required\": [\"a\", \"b\"], \"properties\": {\"a\": {}, \"b\": {}, \"c\": {}}}", "{\"c\": 1, \"b\": 1, \"a\": 1}", true},
	{"{\"properties\": {\"c\": {\"maxProperties\": 1}}}", "{\"c\": {\"a\": 1, \"b\": 2}}", false},
	{"{\"properties\": {\"c\": {\"minProperties\": 2}}}", "{\"c\": {\"a\": 1, \"b\": 2}}", true},
};

/* The same schema with 40 more (empty) properties: more than the property
 * hash holds, so the node takes the linear search -- the general path the
 * hashed one must agree with, errInfo included (empty properties never
 * fail, so they add nothing to it).  NULL when the schema has no top-level
 * properties. */
static bson_t *
with_many_props(const bson_t *sch)
{
	bson_iter_t it, pi;
	bson_t *out = bson_new(), props;
	bool any = false;
	char k[16];

	bson_iter_init(&it, sch);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "properties") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_append_iter(out, NULL, 0, &it);
			continue;
		}
		any = true;
		bson_append_document_begin(out, "properties", -1, &props);
		bson_iter_recurse(&it, &pi);
		while (bson_iter_next(&pi))
			bson_append_iter(&props, NULL, 0, &pi);
		for (int i = 0; i < 40; i++) {
			bson_t e = BSON_INITIALIZER;
			snprintf(k, sizeof k, "zz%d", i);
			bson_append_document(&props, k, -1, &e);
		}
		bson_append_document_end(out, &props);
	}
	if (!any) {
		bson_destroy(out);
		return NULL;
	}
	return out;
}

/* A node with more plain properties than the hash holds: the linear search. */
static void
fast_many_props(void)
{
	bson_t sch = BSON_INITIALIZER, props, p, ok = BSON_INITIALIZER, bad = BSON_INITIALIZER;
	schema_t *s = NULL;
	terr_t err = TERR_INIT;
	char k[16];

	bson_append_document_begin(&sch, "properties", -1, &props);
	for (int i = 0; i < 40; i++) {
		snprintf(k, sizeof k, "f%d", i);
		bson_append_document_begin(&props, k, -1, &p);
		BSON_APPEND_UTF8(&p, "bsonType", "int");
		bson_append_document_end(&props, &p);
		bson_append_int32(&ok, k, -1, i);
		if (i == 39)
			bson_append_utf8(&bad, k, -1, "x", 1);
		else
			bson_append_int32(&bad, k, -1, i);
	}
	bson_append_document_end(&sch, &props);
	TT_ASSERT(schema_compile(&sch, &s, &err) == 0);
	TT_ASSERT(schema_matches(s, &ok));
	TT_ASSERT(!schema_matches(s, &bad));
	schema_free(s);
	bson_destroy(&sch);
	bson_destroy(&ok);
	bson_destroy(&bad);
}

static void
test_fast_paths(void)
{
	for (size_t i = 0; i < sizeof(fast_cases) / sizeof(fast_cases[0]); i++) {
		const fast_case_t *c = &fast_cases[i];
		bson_error_t e;
		bson_t *sch = bson_new_from_json((const uint8_t *)c->schema, -1, &e);
		bson_t *doc = bson_new_from_json((const uint8_t *)c->doc, -1, &e);
		bson_t det = BSON_INITIALIZER;
		schema_t *s = NULL;
		terr_t err = TERR_INIT;

		TT_ASSERT(sch != NULL && doc != NULL);
		if (sch == NULL || doc == NULL)
			continue;
		TT_ASSERT(schema_compile(sch, &s, &err) == 0);
		if (s != NULL) {
			bool m = schema_matches(s, doc);
			if (m != c->pass)
				fprintf(stderr, "fast case %zu: %s on %s: %s, expected %s\n", i, c->schema, c->doc,
				    m ? "passes" : "fails", c->pass ? "pass" : "fail");
			TT_ASSERT(m == c->pass);
			TT_ASSERT(schema_matches_data(s, bson_get_data(doc), doc->len) == c->pass);
			TT_ASSERT(schema_explain(s, doc, &det) == c->pass);
			TT_ASSERT(c->pass == bson_empty(&det));
			schema_free(s);
		}
		{
			bson_t *lin = with_many_props(sch), det2 = BSON_INITIALIZER;
			schema_t *ls = NULL;
			if (lin != NULL && schema_compile(lin, &ls, &err) == 0) {
				TT_ASSERT(schema_matches(ls, doc) == c->pass);
				TT_ASSERT(schema_matches_data(ls, bson_get_data(doc), doc->len) == c->pass);
				TT_ASSERT(schema_explain(ls, doc, &det2) == c->pass);
				if (!bson_equal(&det, &det2)) {
					char *a = bson_as_canonical_extended_json(&det, NULL);
					char *b = bson_as_canonical_extended_json(&det2, NULL);
					fprintf(stderr, "fast case %zu: errInfo %s, linear %s\n", i, a, b);
					bson_free(a);
					bson_free(b);
				}
				TT_ASSERT(bson_equal(&det, &det2));
				schema_free(ls);
			}
			if (lin != NULL)
				bson_destroy(lin);
			bson_destroy(&det2);
		}
		terr_clear(&err);
		bson_destroy(&det);
		bson_destroy(sch);
		bson_destroy(doc);
	}
	/* a buffer that is no document fails whatever the schema */
	{
		bson_t *sch = bson_new();
		schema_t *s = NULL;
		terr_t err = TERR_INIT;
		static const uint8_t bad_len[] = {9, 0, 0, 0, 0};
		static const uint8_t no_nul[] = {5, 0, 0, 0, 1};
		TT_ASSERT(schema_compile(sch, &s, &err) == 0);
		TT_ASSERT(!schema_matches_data(s, bad_len, sizeof bad_len));
		TT_ASSERT(!schema_matches_data(s, no_nul, sizeof no_nul));
		TT_ASSERT(!schema_matches_data(s, NULL, 0));
		schema_free(s);
		bson_destroy(sch);
	}
	fast_many_props();
}

int
main(void)
{
	TT_RUN(test_case_files);
	TT_RUN(test_seed_rating);
	TT_RUN(test_deep_schema);
	TT_RUN(test_huge_enum);
	TT_RUN(test_no_allocation);
	TT_RUN(test_explain_variants);
	TT_RUN(test_threads);
	TT_RUN(test_random);
	TT_RUN(test_fast_paths);
	return tt_finish();
}
