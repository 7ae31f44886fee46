/*
 * test_update_badinput.c -- no input crashes the update engine: every
 * operator with every kind of argument over documents of every shape,
 * malformed pipelines, absurd paths.  Each call either succeeds or fails
 * with a MongoDB error code and message; sanitizers catch the rest.
 */
#include "test_update_util.h"

static const char *ops[] = {
	"$set", "$unset", "$inc", "$mul", "$min", "$max", "$setOnInsert", "$currentDate", "$bit",
	"$rename", "$push", "$addToSet", "$pop", "$pull", "$pullAll",
};

static const char *args[] = {
	"1", "-1", "0", "2.5", "\"s\"", "\"a\"", "\"b.c\"", "null", "true", "[]", "[1, 2]",
	"{}", "{\"$each\": [1, {\"x\": 1}]}", "{\"$each\": 1}", "{\"$each\": [], \"$slice\": -1, \"$sort\": {\"x\": -1}, \"$position\": 0}",
	"{\"$gt\": 1}", "{\"x\": {\"$gt\": 1}}", "{\"$type\": \"timestamp\"}", "{\"and\": 1}",
	"{\"xor\": {\"$numberLong\": \"5\"}}", "{\"$numberDecimal\": \"1.5\"}",
	"{\"$numberLong\": \"9223372036854775807\"}", "{\"$regex\": \"^a\"}", "{\"$foo\": 1}",
};

static const char *paths[] = {"a", "a.b", "a.0", "a.$", "a.$[]", "a.$[x]", "_id", "a.1.b", "$"};

static const char *docs[] = {
	"{\"_id\": 1}", "{\"_id\": 1, \"a\": 1}", "{\"_id\": 1, \"a\": [1, 2, {\"b\": 3}]}",
	"{\"_id\": 1, \"a\": {\"b\": [1, {\"c\": 1}]}}", "{\"_id\": 1, \"a\": \"s\"}",
	"{\"_id\": 1, \"a\": [[1], []]}", "{\"_id\": [1], \"a\": null}",
	"{\"a\": {\"$numberLong\": \"9223372036854775807\"}}",
};

static void
test_operator_matrix(void)
{
	int runs = 0;

	for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
		for (size_t a = 0; a < sizeof args / sizeof *args; a++)
			for (size_t p = 0; p < sizeof paths / sizeof *paths; p++)
				for (size_t d = 0; d < sizeof docs / sizeof *docs; d++) {
					char *u = bson_strdup_printf("{\"%s\": {\"%s\": %s}}", ops[o], paths[p],
					                             args[a]);
					uresult_t r = tu_apply_ex(docs[d], u, strstr(paths[p], "$[x]") ?
					                          "[{\"x\": {\"$gt\": 0}}]" : NULL, (int)(d % 3) - 1,
					                          d & 1);

					if (r.json == NULL && (r.code == 0 || r.msg[0] == '\0'))
						TT_FAIL_("%s on %s: error without code/message", u, docs[d]);
					bson_free(r.json);
					bson_free(u);
					runs++;
				}
	TT_ASSERT(runs > 1000);
}

static void
test_bad_pipelines(void)
{
	static const char *pipes[] = {
		"[]", "[1]", "[{}]", "[{\"$set\": 1}]", "[{\"$set\": {}}]", "[{\"$set\": {\"$a\": 1}}]",
		"[{\"$set\": {\"a..b\": 1}}]", "[{\"$set\": {\"a\": {\"$nope\": 1}}}]",
		"[{\"$unset\": 5}]", "[{\"$unset\": [1]}]", "[{\"$unset\": []}]",
		"[{\"$project\": {}}]", "[{\"$project\": {\"a\": 0, \"b\": {\"$add\": [1]}}}]",
		"[{\"$replaceRoot\": 1}]", "[{\"$replaceRoot\": {}}]", "[{\"$replaceRoot\": {\"x\": 1}}]",
		"[{\"$replaceWith\": \"$nothing\"}]", "[{\"$replaceWith\": [1]}]",
		"[{\"$match\": {}}]", "[{\"$set\": {\"a\": 1}, \"$unset\": \"b\"}]",
		"[{\"$set\": {\"a\": {\"$divide\": [1, 0]}}}]", "[{\"$set\": {\"a.b\": 1, \"a\": 2}}]",
		"[{\"$project\": {\"a\": 1, \"a.b\": 1}}]", "[{\"$set\": {\"_id\": [1]}}]",
	};

	for (size_t i = 0; i < sizeof pipes / sizeof *pipes; i++) {
		uresult_t r = tu_apply("{\"_id\": 1, \"a\": {\"b\": 1}}", pipes[i]);

		if (r.json == NULL && r.code == 0)
			TT_FAIL_("%s: error without code", pipes[i]);
		bson_free(r.json);
	}
}

static void
test_absurd_paths(void)
{
	bson_string_t *p = bson_string_new(NULL);
	char *u;
	uresult_t r;

	for (int i = 0; i < 5000; i++)
		bson_string_append(p, i ? ".a" : "a");
	u = bson_strdup_printf("{\"$set\": {\"%s\": 1}}", p->str);
	r = tu_apply("{\"_id\": 1}", u);
	TT_ASSERT(r.json == NULL && r.code == 15);
	bson_free(r.json);
	bson_free(u);
	u = bson_strdup_printf("[{\"$set\": {\"%s\": 1}}]", p->str);
	r = tu_apply("{\"_id\": 1}", u);
	TT_ASSERT(r.json == NULL && r.code == 15);
	bson_free(r.json);
	bson_free(u);
	bson_string_free(p, true);
	/* a huge array index pads too much */
	TU_ERR("{\"_id\": 1, \"a\": []}", "{\"$set\": {\"a.2000000\": 1}}", 34,
	       "can't backfill more than 1500000 elements");
	/* nesting limit (built with the BSON API: the JSON parser stops earlier) */
	{
		bson_t *inner = bson_new(), *u2, set, *doc = tt_json("{\"_id\": 1}"), out;
		bson_value_t uv;
		update_t *up = NULL;
		terr_t err = TERR_INIT;
		bool mod;

		bson_append_int32(inner, "x", 1, 1);
		for (int i = 0; i < 185; i++) {
			bson_t *w = bson_new();

			bson_append_document(w, "x", 1, inner);
			bson_destroy(inner);
			inner = w;
		}
		u2 = bson_new();
		bson_append_document_begin(u2, "$set", 4, &set);
		bson_append_document(&set, "a", 1, inner);
		bson_append_document_end(u2, &set);
		uv.value_type = BSON_TYPE_DOCUMENT;
		uv.value.v_doc.data = (uint8_t *)bson_get_data(u2);
		uv.value.v_doc.data_len = u2->len;
		TT_ASSERT(update_compile(&uv, NULL, &up, &err) == 0);
		TT_ASSERT(up != NULL && update_apply(up, doc, NULL, &out, &mod, &err) != 0);
		TT_EQ_INT(err.code, 15);
		TT_EQ_STR(err.msg, "Document exceeds maximum nesting depth of 180");
		terr_clear(&err);
		update_free(up);
		bson_destroy(u2);
		bson_destroy(inner);
		bson_destroy(doc);
	}
}

int
main(void)
{
	TT_RUN(test_operator_matrix);
	TT_RUN(test_bad_pipelines);
	TT_RUN(test_absurd_paths);
	return tt_finish();
}
