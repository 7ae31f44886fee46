/*
 * test_validation.c -- collection validation: the errInfo details of query
 * validators (mongod's doc_validation_error_test.cpp cases, run as data from
 * tests/unit/validation_cases/), the size and depth caps, and the policy
 * through the embedded API: create/collMod option errors, levels, actions
 * and their log lines, bypassDocumentValidation, the constraint level.
 */
#include "tt.h"

#include "common/log.h"
#include "common/mem.h"
#include "query/match.h"
#include "query/match_explain.h"
#include "commands/validation.h"
#include "tamga/tamga.h"
#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

static char *
cases_path(const char *file)
{
	const char *src = getenv("TAMGA_SOURCE");
	char *f, *slash, *d;

	if (src && *src)
		return bson_strdup_printf("%s/tests/unit/validation_cases/%s", src, file);
	f = bson_strdup(__FILE__);
	slash = strrchr(f, '/');
	if (slash)
		*slash = '\0';
	d = bson_strdup_printf("%s/validation_cases/%s", slash ? f : ".", file);
	bson_free(f);
	return d;
}

static void rename_type(const bson_t *in, bson_t *out, bool is_array);

static bson_t *
load_file(const char *file)
{
	char *path = cases_path(file);
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;
	bson_t *arr;
	bson_error_t e;

	if (fp == NULL) {
		fprintf(stderr, "cannot open %s\n", path);
		bson_free(path);
		return NULL;
	}
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	buf = bson_malloc((size_t)n + 1);
	if (fread(buf, 1, (size_t)n, fp) != (size_t)n)
		n = 0;
	buf[n] = '\0';
	fclose(fp);
	{
		static const char *const special[] = {"\"$type\":", "\"$regex\":", "\"$options\":", NULL};
		for (int i = 0; special[i] != NULL; i++)
			for (char *t = strstr(buf, special[i]); t != NULL; t = strstr(t, special[i]))
				t[1] = '~';
	}
	/* the file is a JSON array: wrap it so libbson reads it as a document */
	{
		char *wrapped = bson_strdup_printf("{\"cases\": %s}", buf);
		bson_t *raw = bson_new_from_json((const uint8_t *)wrapped, -1, &e);
		arr = NULL;
		if (raw == NULL) {
			fprintf(stderr, "bad JSON in %s: %s\n", path, e.message);
		} else {
			arr = bson_new();
			rename_type(raw, arr, false);
			bson_destroy(raw);
		}
		bson_free(wrapped);
	}
	bson_free(buf);
	bson_free(path);
	return arr;
}

/* libbson's JSON reader takes {"$type": "x"} for legacy binary and
 * {"$regex": ..., "$options": ...} for a regex value: those keys are read as
 * "~type", "~regex", "~options" and renamed after parsing. */
static void
rename_type(const bson_t *in, bson_t *out, bool is_array)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "~type") == 0)
			k = "$type";
		else if (strcmp(k, "~regex") == 0)
			k = "$regex";
		else if (strcmp(k, "~options") == 0)
			k = "$options";
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub, child;
			bool arr = BSON_ITER_HOLDS_ARRAY(&it);
			if (arr)
				bson_iter_array(&it, &len, &data);
			else
				bson_iter_document(&it, &len, &data);
			bson_init_static(&sub, data, len);
			if (arr)
				bson_append_array_begin(out, k, -1, &child);
			else
				bson_append_document_begin(out, k, -1, &child);
			rename_type(&sub, &child, arr);
			if (arr)
				bson_append_array_end(out, &child);
			else
				bson_append_document_end(out, &child);
		} else {
			bson_append_iter(out, k, -1, &it);
		}
	}
	(void)is_array;
}

static bool
sub_doc(const bson_t *parent, const char *key, bson_t *out)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;

	if (!bson_iter_init_find(&it, parent, key) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &len, &data);
	return bson_init_static(out, data, len);
}

/* Every case: compile the query, check the document fails, compare the
 * details field by field and in order. */
static void
test_details_cases(void)
{
	bson_t *file = load_file("mql_details.json");
	bson_iter_t it, arr;
	int ncases = 0;

	TT_ASSERT(file != NULL);
	if (file == NULL)
		return;
	TT_ASSERT(bson_iter_init_find(&it, file, "cases") && bson_iter_recurse(&it, &arr));
	while (bson_iter_next(&arr)) {
		const uint8_t *data;
		uint32_t len;
		bson_t c, query, doc, want, got = BSON_INITIALIZER;
		match_t *m = NULL;
		terr_t e = TERR_INIT;
		bson_iter_t nit;
		const char *name = "?";
		char *gj, *wj;

		bson_iter_document(&arr, &len, &data);
		bson_init_static(&c, data, len);
		if (bson_iter_init_find(&nit, &c, "name"))
			name = bson_iter_utf8(&nit, NULL);
		TT_ASSERT(sub_doc(&c, "query", &query) && sub_doc(&c, "doc", &doc) &&
		          sub_doc(&c, "details", &want));
		if (match_compile(&query, NULL, &m, &e) != 0) {
			TT_FAIL_("%s: compile: %s", name, e.msg);
			terr_clear(&e);
			continue;
		}
		if (match_eval(m, &doc))
			TT_FAIL_("%s: document matches", name);
		TT_ASSERT(match_explain_details(m, &doc, &got));
		gj = bson_as_relaxed_extended_json(&got, NULL);
		wj = bson_as_relaxed_extended_json(&want, NULL);
		if (strcmp(gj, wj) != 0)
			TT_FAIL_("%s:\n  got  %s\n  want %s", name, gj, wj);
		bson_free(gj);
		bson_free(wj);
		bson_destroy(&got);
		match_free(m);
		ncases++;
	}
	TT_ASSERT(ncases >= 60);
	bson_destroy(file);
}

/* Every query of the cases against every document of the cases: whenever
 * the document fails, the errInfo has details (or one of mongod's notes),
 * never a crash. */
static void
test_cross_cases(void)
{
	bson_t *file = load_file("mql_details.json");
	bson_iter_t it, qa, da;
	int failures = 0;

	TT_ASSERT(file != NULL);
	if (file == NULL)
		return;
	bson_iter_init_find(&it, file, "cases");
	bson_iter_recurse(&it, &qa);
	while (bson_iter_next(&qa)) {
		const uint8_t *data;
		uint32_t len;
		bson_t c, query;
		match_t *m = NULL;
		terr_t e = TERR_INIT;

		bson_iter_document(&qa, &len, &data);
		bson_init_static(&c, data, len);
		if (!sub_doc(&c, "query", &query) || match_compile(&query, NULL, &m, &e) != 0) {
			terr_clear(&e);
			continue;
		}
		bson_iter_init_find(&it, file, "cases");
		bson_iter_recurse(&it, &da);
		while (bson_iter_next(&da)) {
			bson_t c2, doc, *info;
			bson_iter_document(&da, &len, &data);
			bson_init_static(&c2, data, len);
			if (!sub_doc(&c2, "doc", &doc) || match_exec(m, &doc, NULL, &e) == 1) {
				terr_clear(&e);
				continue;
			}
			terr_clear(&e);
			info = match_explain_errinfo(m, &doc, NULL);
			TT_ASSERT(bson_has_field(info, "details") || bson_has_field(info, "note"));
			bson_destroy(info);
			failures++;
		}
		match_free(m);
	}
	TT_ASSERT(failures > 1000);
	bson_destroy(file);
}

static bson_t *
errinfo_for(const char *query, const char *doc, const match_explain_opts_t *o)
{
	bson_t *q = tt_json(query), *d = tt_json(doc), *info;
	match_t *m = NULL;
	terr_t e = TERR_INIT;

	if (match_compile(q, NULL, &m, &e) != 0) {
		fprintf(stderr, "compile %s: %s\n", query, e.msg);
		abort();
	}
	info = match_explain_errinfo(m, d, o);
	match_free(m);
	bson_destroy(q);
	bson_destroy(d);
	return info;
}

static void
test_errinfo_shape(void)
{
	bson_t *info = errinfo_for("{\"a\": {\"$eq\": 2}}", "{\"a\": 1, \"_id\": 10}", NULL);

	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 10, \"details\" : { \"operatorName\" : \"$eq\", "
	           "\"specifiedAs\" : { \"a\" : { \"$eq\" : 2 } }, \"reason\" : \"comparison failed\", "
	           "\"consideredValue\" : 1 } }");
	bson_destroy(info);

	/* $jsonSchema inside $and, and under $nor ("schema matched") */
	info = errinfo_for("{\"$nor\": [{\"$jsonSchema\": {\"required\": [\"a\"]}}]}",
	                   "{\"_id\": 1, \"a\": 1}", NULL);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"details\" : { \"operatorName\" : \"$nor\", "
	           "\"clausesSatisfied\" : [ { \"index\" : 0, \"details\" : { \"operatorName\" : "
	           "\"$jsonSchema\", \"reason\" : \"schema matched\" } } ] } }");
	bson_destroy(info);
	info = errinfo_for("{\"$and\": [{\"b\": 1}, {\"$jsonSchema\": {\"required\": [\"a\"]}}]}",
	                   "{\"_id\": 1, \"b\": 1}", NULL);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"details\" : { \"operatorName\" : \"$and\", "
	           "\"clausesNotSatisfied\" : [ { \"index\" : 1, \"details\" : { \"operatorName\" : "
	           "\"$jsonSchema\", \"schemaRulesNotSatisfied\" : [ { \"operatorName\" : \"required\", "
	           "\"specifiedAs\" : { \"required\" : [ \"a\" ] }, \"missingProperties\" : [ \"a\" ] } ] } "
	           "} ] } }");
	bson_destroy(info);

	/* nodes mongod leaves unannotated make the generator fail politely */
	info = errinfo_for("{\"$alwaysFalse\": 1}", "{\"_id\": 1}", NULL);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"note\" : \"failed to generate document "
	           "validation error\", \"details\" : { \"code\" : 4994600, \"codeName\" : "
	           "\"Location4994600\", \"errmsg\" : \"Cannot generate validation error details: no "
	           "annotation found for expression { $alwaysFalse: 1 }\" } }");
	bson_destroy(info);
}

static void
test_considered_values_cap(void)
{
	bson_t *info;
	char *json, *j;
	int i;

	json = bson_strdup("{\"_id\": 1, \"a\": [0");
	for (i = 1; i < 1000; i++) {
		char *n = bson_strdup_printf("%s, %d", json, i);
		bson_free(json);
		json = n;
	}
	{
		char *n = bson_strdup_printf("%s]}", json);
		bson_free(json);
		json = n;
	}
	info = errinfo_for("{\"a\": {\"$lt\": 0}}", json, NULL);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"details\" : { \"operatorName\" : \"$lt\", "
	           "\"specifiedAs\" : { \"a\" : { \"$lt\" : 0 } }, \"reason\" : \"comparison failed\", "
	           "\"consideredValues\" : [ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 ], "
	           "\"consideredValuesTruncated\" : true } }");
	bson_destroy(info);
	bson_free(json);

	/* exactly the limit: not truncated */
	info = errinfo_for("{\"a\": {\"$lt\": 0}}",
	                   "{\"_id\": 1, \"a\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}", NULL);
	j = bson_as_relaxed_extended_json(info, NULL);
	TT_ASSERT(strstr(j, "Truncated") == NULL);
	bson_free(j);
	bson_destroy(info);
}

static void
test_size_truncation(void)
{
	match_explain_opts_t o = {1024, 10};
	bson_t *info;
	char *q, *tmp;
	int i;

	/* a 2 KB $in: specifiedAs is left out, truncated: true */
	q = bson_strdup("{\"a\": {\"$in\": [1");
	for (i = 2; i < 400; i++) {
		tmp = bson_strdup_printf("%s, %d", q, i);
		bson_free(q);
		q = tmp;
	}
	tmp = bson_strdup_printf("%s]}}", q);
	bson_free(q);
	q = tmp;
	info = errinfo_for(q, "{\"_id\": 1, \"a\": 0}", &o);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"truncated\" : true, \"details\" : { "
	           "\"operatorName\" : \"$in\", \"reason\" : \"no matching value found in array\" } }");
	bson_destroy(info);
	bson_free(q);

	/* a 13 MiB value: the default cap leaves out the considered value */
	{
		size_t big = 13u * 1024 * 1024;
		char *str = bson_malloc(big + 1);
		bson_t *doc = bson_new(), *qq = tt_json("{\"a\": {\"$type\": \"int\"}}");
		match_t *m = NULL;
		terr_t e = TERR_INIT;

		memset(str, 'x', big);
		str[big] = '\0';
		BSON_APPEND_INT32(doc, "_id", 7);
		bson_append_utf8(doc, "a", 1, str, (int)big);
		TT_EQ_INT(match_compile(qq, NULL, &m, &e), 0);
		info = match_explain_errinfo(m, doc, NULL);
		TT_EQ_JSON(info, "{ \"failingDocumentId\" : 7, \"truncated\" : true, \"details\" : { "
		           "\"operatorName\" : \"$type\", \"reason\" : \"type did not match\", "
		           "\"consideredType\" : \"string\" } }");
		bson_destroy(info);
		match_free(m);
		bson_destroy(qq);
		bson_destroy(doc);
		bson_free(str);
	}

	/* a thousand failing clauses do not fit even truncated */
	q = bson_strdup("{\"$and\": [{\"a\": 1}");
	for (i = 2; i < 1000; i++) {
		tmp = bson_strdup_printf("%s, {\"a\": %d}", q, i);
		bson_free(q);
		q = tmp;
	}
	tmp = bson_strdup_printf("%s]}", q);
	bson_free(q);
	q = tmp;
	info = errinfo_for(q, "{\"_id\": 1, \"a\": 0}", &o);
	TT_EQ_JSON(info, "{ \"failingDocumentId\" : 1, \"note\" : \"detailed error was too large\" }");
	bson_destroy(info);
	bson_free(q);
}

/* nested $or: each level adds three levels to the error; past 190 mongod
 * gives up with a short reason */
static void
test_depth_cap(void)
{
	int depth;

	for (depth = 62; depth <= 65; depth++) {
		bson_t *q = bson_new(), *d = tt_json("{\"_id\": 1, \"b\": 1}"), *info;
		match_t *m = NULL;
		terr_t e = TERR_INIT;
		bson_iter_t it;
		int i;

		BSON_APPEND_INT32(q, "a", 0);
		for (i = 1; i < depth; i++) {
			bson_t *n = bson_new(), arr, c;
			bson_append_array_begin(n, "$or", -1, &arr);
			bson_append_document(&arr, "0", -1, q);
			bson_append_document_begin(&arr, "1", -1, &c);
			BSON_APPEND_INT32(&c, "a", i);
			bson_append_document_end(&arr, &c);
			bson_append_array_end(n, &arr);
			bson_destroy(q);
			q = n;
		}
		if (match_compile(q, NULL, &m, &e) != 0) {
			TT_FAIL_("depth %d: %s", depth, e.msg);
			terr_clear(&e);
			bson_destroy(q);
			bson_destroy(d);
			continue;
		}
		info = match_explain_errinfo(m, d, NULL);
		if (depth >= 64)
			TT_ASSERT(bson_iter_init_find(&it, info, "reason") &&
			          strcmp(bson_iter_utf8(&it, NULL), "generated error was too deeply nested") == 0);
		else
			TT_ASSERT(bson_iter_init_find(&it, info, "details") && !bson_has_field(info, "truncated"));
		bson_destroy(info);
		match_free(m);
		bson_destroy(q);
		bson_destroy(d);
	}
}

static void
test_namespace_check(void)
{
	bson_t *v = tt_json("{\"validator\": {\"a\": {\"$exists\": true}}}");
	bson_t *empty = tt_json("{\"validator\": {}}");
	uint8_t uuid[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x81, 0x23, 0x45, 0x67,
	                    0x89, 0xab, 0xcd, 0xef};
	terr_t e = TERR_INIT;

	TT_EQ_INT(validation_check_namespace("shop", "items", NULL, v, &e), 0);
	TT_EQ_INT(validation_check_namespace("config", "settings", NULL, v, &e), 0);
	TT_EQ_INT(validation_check_namespace("admin", "x", NULL, empty, &e), 0);
	TT_EQ_INT(validation_check_namespace("admin", "x", uuid, v, &e), -1);
	TT_EQ_INT(e.code, 72);
	TT_EQ_STR(e.msg, "Document validators are not allowed on collection admin.x with UUID "
	          "12345678-9abc-4def-8123-456789abcdef in the admin internal database");
	terr_clear(&e);
	TT_EQ_INT(validation_check_namespace("shop", "system.js", uuid, v, &e), -1);
	TT_EQ_STR(e.msg, "Document validators not allowed on system collection shop.system.js with UUID "
	          "12345678-9abc-4def-8123-456789abcdef");
	terr_clear(&e);
	TT_EQ_INT(validation_check_namespace("local", "x", NULL, v, &e), -1);
	TT_ASSERT(strstr(e.msg, "in the local internal database") != NULL);
	terr_clear(&e);
	bson_destroy(v);
	bson_destroy(empty);
}

/* ---- the policy through the embedded API ---------------------------------- */

static bson_t *
run(const char *dbname, const char *json, int *rc)
{
	return tt_run_json(db, dbname, json, rc);
}

#define EXPECT_ERR(cmd, code, msg) do { int rc_; bson_t *r_ = run("val", cmd, &rc_); \
	TT_EQ_INT(tt_get_i64(r_, "code"), code); TT_EQ_STR(tt_get_str(r_, "errmsg"), msg); tt_free_reply(r_); } while (0)
#define EXPECT_OK(cmd) do { int rc_; bson_t *r_ = run("val", cmd, &rc_); \
	if (tt_get_i64(r_, "ok") != 1) { char *j_ = bson_as_relaxed_extended_json(r_, NULL); \
		TT_FAIL_("%s -> %s", cmd, j_); bson_free(j_); } tt_free_reply(r_); } while (0)

static void
test_bad_options(void)
{
	EXPECT_ERR("{\"create\": \"b1\", \"validator\": 7}", 14,
	           "BSON field 'create.validator' is the wrong type 'int', expected type 'object'");
	EXPECT_ERR("{\"create\": \"b1\", \"validationLevel\": \"bogus\"}", 2,
	           "Enumeration value 'bogus' for field 'create.validationLevel' is not a valid value.");
	EXPECT_ERR("{\"create\": \"b1\", \"validationAction\": 1}", 14,
	           "BSON field 'create.validationAction' is the wrong type 'int', expected type 'string'");
	EXPECT_ERR("{\"create\": \"b1\", \"validator\": {\"a\": 1}, \"validationLevel\": \"constraint\", "
	           "\"validationAction\": \"warn\"}", 2,
	           "Validation action of 'warn' is not allowed when Validation level is 'constraint'");
	EXPECT_ERR("{\"create\": \"b1\", \"validator\": {\"$where\": \"this.a\"}}", 2,
	           "$where is not allowed in this context");
	EXPECT_ERR("{\"create\": \"b1\", \"validator\": {\"$text\": {\"$search\": \"x\"}}}", 2,
	           "$text is not allowed in this context");
	EXPECT_ERR("{\"create\": \"b1\", \"validator\": {\"$jsonSchema\": {\"properties\": {\"_id\": "
	           "{\"encrypt\": {}}}}}, \"validationAction\": \"warn\"}", 224,
	           "Encryption-related validator keywords are not allowed in this context");
	EXPECT_OK("{\"create\": \"b1\", \"validator\": {\"a\": {\"$exists\": true}}}");
	EXPECT_ERR("{\"collMod\": \"b1\", \"validator\": {\"$where\": \"this.a\"}}", 2,
	           "Parsing of collection validator failed :: caused by :: $where is not allowed in this context");
	EXPECT_ERR("{\"collMod\": \"b1\", \"validator\": {\"$jsonSchema\": {\"invalid\": 1}}}", 9,
	           "Parsing of collection validator failed :: caused by :: Unknown $jsonSchema keyword: invalid");
	{
		/* a schema 200 levels deep is refused when it is set, not when written */
		bson_t *schema = bson_new(), *cmd = bson_new(), *reply = tm_bson_array_new(1), v, p;
		tamga_error_t te;
		int i;

		for (i = 0; i < 200; i++) {
			bson_t *n = bson_new();
			bson_append_document_begin(n, "properties", -1, &p);
			bson_append_document(&p, "a", -1, schema);
			bson_append_document_end(n, &p);
			bson_destroy(schema);
			schema = n;
		}
		BSON_APPEND_UTF8(cmd, "collMod", "b1");
		bson_append_document_begin(cmd, "validator", -1, &v);
		bson_append_document(&v, "$jsonSchema", -1, schema);
		bson_append_document_end(cmd, &v);
		tamga_run_command(db, "val", cmd, reply, &te);
		TT_EQ_INT(tt_get_i64(reply, "ok"), 0);
		TT_ASSERT(tt_get_i64(reply, "code") != 0);
		TT_ASSERT(strncmp(tt_get_str(reply, "errmsg"), "Parsing of collection validator failed", 38) == 0);
		tt_free_reply(reply);
		bson_destroy(cmd);
		bson_destroy(schema);
	}
}

/* The line without whitespace outside strings (log attrs may be spaced). */
static char *
compact(const char *s)
{
	char *out = bson_malloc(strlen(s) + 1), *o = out;
	bool in_str = false;

	for (; *s; s++) {
		if (*s == '"' && (s == out || s[-1] != '\\'))
			in_str = !in_str;
		if (!in_str && (*s == ' ' || *s == '\n'))
			continue;
		*o++ = *s;
	}
	*o = '\0';
	return out;
}

/* A 100 000-value enum: accepted, compiled once, and a failing insert gets
 * its errInfo (specifiedAs included: it fits under 12 MiB). */
static void
test_huge_enum(void)
{
	bson_t *cmd = bson_new(), *reply = tm_bson_array_new(1), v, s, p, a, e, arr;
	tamga_error_t te;
	char key[16];
	const char *k;
	int i, rc;
	bson_t *r;

	BSON_APPEND_UTF8(cmd, "create", "enums");
	bson_append_document_begin(cmd, "validator", -1, &v);
	bson_append_document_begin(&v, "$jsonSchema", -1, &s);
	bson_append_document_begin(&s, "properties", -1, &p);
	bson_append_document_begin(&p, "a", -1, &a);
	bson_append_array_begin(&a, "enum", -1, &arr);
	for (i = 0; i < 100000; i++) {
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
		bson_append_int32(&arr, k, -1, i * 2);
	}
	bson_append_array_end(&a, &arr);
	bson_append_document_end(&p, &a);
	bson_append_document_end(&s, &p);
	bson_append_document_end(&v, &s);
	bson_append_document_end(cmd, &v);
	(void)e;
	tamga_run_command(db, "val", cmd, reply, &te);
	TT_EQ_INT(tt_get_i64(reply, "ok"), 1);
	tt_free_reply(reply);
	bson_destroy(cmd);
	for (i = 0; i < 200; i++) {
		char *ins = bson_strdup_printf("{\"insert\": \"enums\", \"documents\": [{\"a\": %d}]}", i * 2);
		r = run("val", ins, &rc);
		TT_EQ_INT(tt_get_i64(r, "n"), 1);
		tt_free_reply(r);
		bson_free(ins);
	}
	r = run("val", "{\"insert\": \"enums\", \"documents\": [{\"_id\": 1, \"a\": 3}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.schemaRulesNotSatisfied.0.propertiesNotSatisfied.0.details.0.reason"),
	          "value was not found in enum");
	tt_free_reply(r);
}

/* A log line from getLog: the newest one with this id, or NULL. */
static char *
last_log_with(int id)
{
	bson_t arr = BSON_INITIALIZER;
	bson_iter_t it;
	char needle[32];
	char *found = NULL;

	tlog_get("global", &arr);
	snprintf(needle, sizeof needle, "\"id\":%d,", id);
	bson_iter_init(&it, &arr);
	while (bson_iter_next(&it))
		if (BSON_ITER_HOLDS_UTF8(&it) && strstr(bson_iter_utf8(&it, NULL), needle) != NULL) {
			bson_free(found);
			found = compact(bson_iter_utf8(&it, NULL));
		}
	bson_destroy(&arr);
	return found;
}

static void
test_actions(void)
{
	int rc;
	bson_t *r;
	char *line;

	EXPECT_OK("{\"create\": \"act\", \"validator\": {\"x\": {\"$type\": \"string\"}}, "
	          "\"validationAction\": \"warn\"}");
	r = run("val", "{\"insert\": \"act\", \"documents\": [{\"_id\": 1, \"x\": 1}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	line = last_log_with(20294);
	TT_ASSERT(line != NULL);
	if (line != NULL) {
		if (getenv("SHOWLOG"))
			fprintf(stderr, "%s\n", line);
		TT_ASSERT(strstr(line, "\"s\":\"W\"") != NULL);
		TT_ASSERT(strstr(line, "\"c\":\"STORAGE\"") != NULL);
		TT_ASSERT(strstr(line, "\"msg\":\"Document would fail validation\"") != NULL);
		TT_ASSERT(strstr(line, "\"namespace\":\"val.act\"") != NULL);
		TT_ASSERT(strstr(line, "\"document\":{\"_id\":1,\"x\":1}") != NULL);
		TT_ASSERT(strstr(line, "\"errInfo\":{\"failingDocumentId\":1,\"details\":{\"operatorName\":\"$type\"") != NULL);
	}
	bson_free(line);

	EXPECT_OK("{\"collMod\": \"act\", \"validationAction\": \"errorAndLog\"}");
	r = run("val", "{\"insert\": \"act\", \"documents\": [{\"_id\": 2, \"x\": 2}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.operatorName"), "$type");
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.reason"), "type did not match");
	tt_free_reply(r);
	line = last_log_with(7488700);
	TT_ASSERT(line != NULL && strstr(line, "\"msg\":\"Document failed validation\"") != NULL &&
	          strstr(line, "\"_id\":2") != NULL);
	bson_free(line);

	/* error: findOneAndUpdate's errInfo.details is an object for a query validator */
	EXPECT_OK("{\"collMod\": \"act\", \"validationAction\": \"error\"}");
	r = run("val", "{\"findAndModify\": \"act\", \"query\": {\"_id\": 1}, "
	        "\"update\": {\"$set\": {\"x\": 3}}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 121);
	TT_EQ_STR(tt_get_str(r, "errInfo.details.operatorName"), "$type");
	TT_EQ_STR(tt_get_str(r, "errInfo.details.consideredType"), "int");
	tt_free_reply(r);
}

static void
test_levels_and_bypass(void)
{
	int rc;
	bson_t *r;

	EXPECT_OK("{\"create\": \"lv\"}");
	EXPECT_OK("{\"insert\": \"lv\", \"documents\": [{\"_id\": 1, \"r\": \"5\"}, {\"_id\": 2, \"r\": 5}]}");
	EXPECT_OK("{\"collMod\": \"lv\", \"validator\": {\"r\": {\"$type\": \"int\"}}, "
	          "\"validationLevel\": \"moderate\"}");
	r = run("val", "{\"update\": \"lv\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"b\": 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	r = run("val", "{\"update\": \"lv\", \"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$set\": {\"r\": \"x\"}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	tt_free_reply(r);
	EXPECT_OK("{\"collMod\": \"lv\", \"validationLevel\": \"strict\"}");
	r = run("val", "{\"update\": \"lv\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"b\": 2}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	          "Plan executor error during update :: caused by :: Document failed validation");
	tt_free_reply(r);
	/* bypass works at strict, is refused while prepared and at constraint */
	r = run("val", "{\"insert\": \"lv\", \"documents\": [{\"_id\": 3, \"r\": \"bad\"}], "
	        "\"bypassDocumentValidation\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	EXPECT_OK("{\"collMod\": \"lv\", \"prepareConstraintValidationLevel\": true}");
	r = run("val", "{\"insert\": \"lv\", \"documents\": [{\"_id\": 4, \"r\": 1}], "
	        "\"bypassDocumentValidation\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 2);
	TT_ASSERT(strstr(tt_get_str(r, "writeErrors.0.errmsg"), "prepareConstraintValidationLevel") != NULL);
	tt_free_reply(r);
	EXPECT_OK("{\"delete\": \"lv\", \"deletes\": [{\"q\": {\"r\": {\"$type\": \"string\"}}, \"limit\": 0}]}");
	EXPECT_OK("{\"collMod\": \"lv\", \"validationLevel\": \"constraint\"}");
	r = run("val", "{\"insert\": \"lv\", \"documents\": [{\"_id\": 5, \"r\": 1}], "
	        "\"bypassDocumentValidation\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 2);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"),
	          "bypassDocumentValidation is not permitted with 'constraint' validationLevel");
	tt_free_reply(r);
	/* created directly at constraint */
	EXPECT_OK("{\"create\": \"lv2\", \"validator\": {\"a\": {\"$exists\": true}}, "
	          "\"validationLevel\": \"constraint\", \"validationAction\": \"errorAndLog\"}");
	r = run("val", "{\"insert\": \"lv2\", \"documents\": [{\"b\": 1}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	tt_free_reply(r);
}

/* every write path checks: pipeline updates, replacements, upserts,
 * findAndModify upserts, unordered batches */
static void
test_write_paths(void)
{
	int rc;
	bson_t *r;

	EXPECT_OK("{\"create\": \"wp\", \"validator\": {\"a\": {\"$type\": \"int\"}}}");
	EXPECT_OK("{\"insert\": \"wp\", \"documents\": [{\"_id\": 1, \"a\": 1}]}");
	r = run("val", "{\"update\": \"wp\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": [{\"$set\": {\"a\": \"x\"}}]}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	tt_free_reply(r);
	r = run("val", "{\"update\": \"wp\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"a\": \"x\"}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	tt_free_reply(r);
	r = run("val", "{\"update\": \"wp\", \"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$set\": {\"a\": \"x\"}}, \"upsert\": true}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 121);
	TT_EQ_STR(tt_get_str(r, "writeErrors.0.errInfo.details.operatorName"), "$type");
	tt_free_reply(r);
	r = run("val", "{\"findAndModify\": \"wp\", \"query\": {\"_id\": 3}, \"update\": {\"$set\": {\"a\": \"x\"}}, \"upsert\": true}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 121);
	tt_free_reply(r);
	r = run("val", "{\"insert\": \"wp\", \"documents\": [{\"_id\": 4, \"a\": \"x\"}, {\"_id\": 5, \"a\": 5}, {\"_id\": 6, \"a\": \"y\"}], \"ordered\": false}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.1.index"), 2);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.1.errInfo.failingDocumentId"), 6);
	tt_free_reply(r);
	r = run("val", "{\"count\": \"wp\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
}

int
main(void)
{
	TT_RUN(test_details_cases);
	TT_RUN(test_errinfo_shape);
	TT_RUN(test_cross_cases);
	TT_RUN(test_considered_values_cap);
	TT_RUN(test_size_truncation);
	TT_RUN(test_depth_cap);
	TT_RUN(test_namespace_check);

	dir = tt_tmpdir("validation");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_bad_options);
	TT_RUN(test_actions);
	TT_RUN(test_huge_enum);
	TT_RUN(test_levels_and_bypass);
	TT_RUN(test_write_paths);
	tt_close_rm(db, dir);
	return tt_finish();
}
