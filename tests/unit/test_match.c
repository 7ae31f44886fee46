/*
 * test_match.c -- the matcher: operator families, array/null/missing
 * corners, numeric cross-type comparisons, positional reporting, helpers for
 * upsert/planner, and parse errors with MongoDB's codes and messages.
 * (Randomized properties are in test_match_random.c.)
 */
#include "tt.h"
#include "query/match.h"

/* Copy src into dst renaming "$tYpe" keys to "$type" (libbson's JSON parser
 * reads a literal "$type" key as legacy binary). */
static void
fix_keys(const bson_t *src, bson_t *dst)
{
	bson_iter_t it;

	bson_iter_init(&it, src);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);

		if (strcmp(k, "$tYpe") == 0)
			k = "$type";
		else if (strcmp(k, "$rEgex") == 0)
			k = "$regex";
		else if (strcmp(k, "$oPtions") == 0)
			k = "$options";

		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub, child;

			bson_iter_document(&it, &len, &data);
			if (BSON_ITER_HOLDS_ARRAY(&it))
				bson_iter_array(&it, &len, &data);
			bson_init_static(&sub, data, len);
			if (BSON_ITER_HOLDS_ARRAY(&it))
				bson_append_array_begin(dst, k, -1, &child);
			else
				bson_append_document_begin(dst, k, -1, &child);
			fix_keys(&sub, &child);
			if (BSON_ITER_HOLDS_ARRAY(&it))
				bson_append_array_end(dst, &child);
			else
				bson_append_document_end(dst, &child);
		} else {
			bson_append_value(dst, k, -1, bson_iter_value(&it));
		}
	}
}

/* tt_json plus /pattern/flags regex literals outside strings. */
static bson_t *
jx(const char *in)
{
	size_t n = strlen(in), o = 0;
	char *out = bson_malloc(n * 4 + 64 * (n / 2 + 1));
	bool instr = false;
	bson_t *b;

	for (size_t i = 0; i < n; i++) {
		char ch = in[i];

		if (instr) {
			out[o++] = ch;
			if (ch == '\\' && i + 1 < n)
				out[o++] = in[++i];
			else if (ch == '"')
				instr = false;
			continue;
		}
		if (ch == '"') {
			instr = true;
			out[o++] = ch;
			continue;
		}
		if (ch != '/') {
			out[o++] = ch;
			continue;
		}
		o += (size_t)sprintf(out + o, "{\"$regularExpression\": {\"pattern\": \"");
		for (i++; i < n && in[i] != '/'; i++) {
			if (in[i] == '\\' || in[i] == '"')
				out[o++] = '\\';
			out[o++] = in[i];
		}
		o += (size_t)sprintf(out + o, "\", \"options\": \"");
		while (i + 1 < n && in[i + 1] >= 'a' && in[i + 1] <= 'z')
			out[o++] = in[++i];
		o += (size_t)sprintf(out + o, "\"}}");
	}
	out[o] = '\0';
	b = tt_json(out);
	bson_free(out);
	{
		bson_t *fixed = bson_new();

		fix_keys(b, fixed);
		bson_destroy(b);
		b = fixed;
	}
	return b;
}

/* 1 match, 0 no match, -1 compile error */
static int
mt(const char *filter, const char *doc)
{
	bson_t *f = jx(filter), *d = jx(doc);
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int r;

	if (match_compile(f, NULL, &m, &err) != 0) {
		fprintf(stderr, "  compile failed: %s: %s\n", filter, err.msg);
		r = -1;
	} else {
		r = match_eval(m, d) ? 1 : 0;
	}
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	bson_destroy(d);
	return r;
}

static int last_code;
static char last_msg[512];

static int
compile_err(const char *filter)
{
	bson_t *f = jx(filter);
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int code = 0;

	last_msg[0] = '\0';
	if (match_compile(f, NULL, &m, &err) != 0) {
		code = err.code;
		snprintf(last_msg, sizeof last_msg, "%s", err.msg ? err.msg : "");
	}
	last_code = code;
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	return code;
}

#define YES(f, d) TT_EQ_INT(mt(f, d), 1)
#define NO(f, d) TT_EQ_INT(mt(f, d), 0)

static void
test_equality(void)
{
	YES("{}", "{\"a\": 1}");
	YES("{\"a\": 1}", "{\"a\": 1}");
	NO("{\"a\": 1}", "{\"a\": 2}");
	YES("{\"a\": 1}", "{\"a\": 1.0}");
	YES("{\"a\": 1}", "{\"a\": {\"$numberLong\": \"1\"}}");
	YES("{\"a\": 1}", "{\"a\": {\"$numberDecimal\": \"1.000\"}}");
	NO("{\"a\": 1}", "{\"a\": \"1\"}");
	YES("{\"a\": \"x\"}", "{\"a\": [\"y\", \"x\"]}");
	YES("{\"a\": [1, 2]}", "{\"a\": [1, 2]}");
	NO("{\"a\": [1, 2]}", "{\"a\": [2, 1]}");
	YES("{\"a\": [1, 2]}", "{\"a\": [[1, 2], 3]}");
	YES("{\"a\": {\"b\": 1, \"c\": 2}}", "{\"a\": {\"b\": 1, \"c\": 2}}");
	NO("{\"a\": {\"b\": 1, \"c\": 2}}", "{\"a\": {\"c\": 2, \"b\": 1}}");
	YES("{\"a.b\": 1}", "{\"a\": [{\"b\": 2}, {\"b\": 1}]}");
	YES("{\"a.1\": 5}", "{\"a\": [4, 5]}");
	YES("{\"a.0.b\": 1}", "{\"a\": [{\"b\": 1}]}");
	NO("{\"a\": 1}", "{\"a\": [[1]]}");
	YES("{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"b\": 2}");
	NO("{\"a\": 1, \"b\": 2}", "{\"a\": 1, \"b\": 3}");
	YES("{\"a\": {\"$eq\": {\"$numberDouble\": \"NaN\"}}}", "{\"a\": {\"$numberDouble\": \"NaN\"}}");
	NO("{\"a\": {\"$gt\": {\"$numberDouble\": \"NaN\"}}}", "{\"a\": 5}");
	NO("{\"a\": {\"$lt\": 5}}", "{\"a\": {\"$numberDouble\": \"NaN\"}}");
	/* large int64 vs double exactness */
	NO("{\"a\": {\"$numberLong\": \"9007199254740993\"}}", "{\"a\": 9007199254740992.0}");
	YES("{\"a\": {\"$gt\": 9007199254740992.0}}", "{\"a\": {\"$numberLong\": \"9007199254740993\"}}");
}

static void
test_null_missing(void)
{
	YES("{\"a\": null}", "{}");
	YES("{\"a\": null}", "{\"a\": null}");
	NO("{\"a\": null}", "{\"a\": {\"$undefined\": true}}");
	YES("{\"a\": null}", "{\"a\": [1, null]}");
	NO("{\"a\": null}", "{\"a\": [1, 2]}");
	NO("{\"a\": null}", "{\"a\": 0}");
	/* null2.js */
	NO("{\"a.b\": null}", "{\"a\": [{\"b\": 5}]}");
	YES("{\"a.b\": null}", "{\"a\": [{}]}");
	NO("{\"a.b\": null}", "{\"a\": []}");
	YES("{\"a.b\": null}", "{\"a\": [{}, {\"b\": 5}]}");
	NO("{\"a.b\": null}", "{\"a\": [5, {\"b\": 5}]}");
	YES("{\"a.b\": {\"$in\": [null]}}", "{\"a\": [{}, {\"b\": 5}]}");
	YES("{\"a.b\": null}", "{\"a\": 5}");
	YES("{\"a\": {\"$gte\": null}}", "{}");
	NO("{\"a\": {\"$gt\": null}}", "{}");
	YES("{\"a\": {\"$ne\": null}}", "{\"a\": 1}");
	NO("{\"a\": {\"$ne\": null}}", "{}");
	YES("{\"a\": {\"$exists\": false}}", "{}");
	NO("{\"a\": {\"$exists\": false}}", "{\"a\": null}");
	YES("{\"a\": {\"$exists\": true}}", "{\"a\": null}");
	YES("{\"a.b\": {\"$exists\": false}}", "{\"a\": [1]}");
	NO("{\"a.b\": {\"$exists\": true}}", "{\"a\": [1]}");
	YES("{\"a\": {\"$exists\": 1}}", "{\"a\": 0}");
	YES("{\"a\": {\"$exists\": 0}}", "{\"b\": 0}");
}

static void
test_ranges(void)
{
	YES("{\"a\": {\"$gt\": 1}}", "{\"a\": 2}");
	NO("{\"a\": {\"$gt\": 1}}", "{\"a\": \"2\"}");
	NO("{\"a\": {\"$lt\": \"b\"}}", "{\"a\": 1}");
	YES("{\"a\": {\"$lt\": \"b\"}}", "{\"a\": \"a\"}");
	YES("{\"a\": {\"$gt\": 1, \"$lt\": 3}}", "{\"a\": [0, 5]}");   /* different elements */
	NO("{\"a\": {\"$elemMatch\": {\"$gt\": 1, \"$lt\": 3}}}", "{\"a\": [0, 5]}");
	YES("{\"a\": {\"$lte\": {\"$maxKey\": 1}}}", "{\"a\": \"x\"}");
	YES("{\"a\": {\"$gt\": {\"$minKey\": 1}}}", "{\"a\": {}}");
	NO("{\"a\": {\"$eq\": {\"$maxKey\": 1}}}", "{\"a\": 5}");
	NO("{\"a\": {\"$gt\": {\"$date\": \"2020-01-01T00:00:00Z\"}}}",
	   "{\"a\": {\"$timestamp\": {\"t\": 1700000000, \"i\": 1}}}");
	YES("{\"a\": {\"$gt\": {\"$date\": \"2020-01-01T00:00:00Z\"}}}",
	    "{\"a\": {\"$date\": \"2021-01-01T00:00:00Z\"}}");
	YES("{\"a\": {\"$gte\": [1, 2]}}", "{\"a\": [1, 3]}");
	YES("{\"a\": {\"$gt\": {\"$numberDecimal\": \"1.5\"}}}", "{\"a\": 2}");
	NO("{\"a\": {\"$gt\": {\"$numberDecimal\": \"2.5\"}}}", "{\"a\": {\"$numberLong\": \"2\"}}");
	YES("{\"a\": {\"$ne\": 1}}", "{\"a\": [2, 3]}");
	NO("{\"a\": {\"$ne\": 1}}", "{\"a\": [2, 1]}");
}

static void
test_in(void)
{
	YES("{\"a\": {\"$in\": [1, 2]}}", "{\"a\": 2.0}");
	NO("{\"a\": {\"$in\": []}}", "{\"a\": 2}");
	YES("{\"a\": {\"$in\": [5, /^x/]}}", "{\"a\": \"xyz\"}");
	YES("{\"a\": {\"$in\": [[1, 2]]}}", "{\"a\": [1, 2]}");
	YES("{\"a\": {\"$in\": [null]}}", "{}");
	NO("{\"a\": {\"$in\": [null]}}", "{\"a\": {\"$undefined\": true}}");
	YES("{\"a\": {\"$in\": [\"b\", 3, {\"x\": 1}]}}", "{\"a\": [{\"x\": 1}]}");
	YES("{\"a\": {\"$nin\": [1, 2]}}", "{\"a\": 3}");
	NO("{\"a\": {\"$nin\": [1, 2]}}", "{\"a\": [3, 1]}");
	YES("{\"a\": {\"$nin\": [1]}}", "{}");
	NO("{\"a\": {\"$nin\": [null]}}", "{}");
}

static void
test_logical(void)
{
	YES("{\"$or\": [{\"a\": 1}, {\"b\": 1}]}", "{\"b\": 1}");
	NO("{\"$or\": [{\"a\": 1}, {\"b\": 1}]}", "{\"c\": 1}");
	YES("{\"$and\": [{\"a\": 1}, {\"b\": 1}]}", "{\"a\": 1, \"b\": 1}");
	NO("{\"$and\": [{\"a\": 1}, {\"b\": 1}]}", "{\"a\": 1}");
	YES("{\"$nor\": [{\"a\": 1}, {\"b\": 1}]}", "{\"c\": 1}");
	NO("{\"$nor\": [{\"a\": 1}]}", "{\"a\": 1}");
	YES("{\"a\": {\"$not\": {\"$gt\": 5}}}", "{\"a\": 3}");
	YES("{\"a\": {\"$not\": {\"$gt\": 5}}}", "{}");
	NO("{\"a\": {\"$not\": {\"$gt\": 5}}}", "{\"a\": [3, 7]}");
	YES("{\"a\": {\"$not\": /^x/}}", "{\"a\": \"yx\"}");
	NO("{\"a\": {\"$not\": {\"$rEgex\": \"^x\"}}}", "{\"a\": \"xy\"}");
	YES("{\"$comment\": \"hi\", \"a\": 1}", "{\"a\": 1}");
	YES("{\"$alwaysTrue\": 1}", "{}");
	YES("{\"$sampleRate\": 1}", "{}");
	NO("{\"$sampleRate\": 0}", "{}");
	YES("{\"a\": {\"$ref\": \"c\", \"$id\": 1}}", "{\"a\": {\"$ref\": \"c\", \"$id\": 1}}");
	NO("{\"$alwaysFalse\": 1}", "{}");
}

static void
test_type_mod_size(void)
{
	YES("{\"a\": {\"$tYpe\": \"string\"}}", "{\"a\": \"x\"}");
	YES("{\"a\": {\"$tYpe\": 2}}", "{\"a\": [1, \"x\"]}");
	YES("{\"a\": {\"$tYpe\": \"number\"}}", "{\"a\": {\"$numberDecimal\": \"1\"}}");
	YES("{\"a\": {\"$tYpe\": \"array\"}}", "{\"a\": []}");
	YES("{\"a\": {\"$tYpe\": [\"bool\", \"null\"]}}", "{\"a\": null}");
	NO("{\"a\": {\"$tYpe\": \"null\"}}", "{}");
	YES("{\"a\": {\"$tYpe\": \"minKey\"}}", "{\"a\": {\"$minKey\": 1}}");
	YES("{\"a\": {\"$tYpe\": -1}}", "{\"a\": {\"$minKey\": 1}}");
	YES("{\"a\": {\"$tYpe\": \"long\"}}", "{\"a\": {\"$numberLong\": \"5\"}}");
	NO("{\"a\": {\"$tYpe\": \"int\"}}", "{\"a\": {\"$numberLong\": \"5\"}}");
	YES("{\"a\": {\"$mod\": [4, 1]}}", "{\"a\": 9}");
	YES("{\"a\": {\"$mod\": [4, 1]}}", "{\"a\": 9.9}");
	NO("{\"a\": {\"$mod\": [4, 1]}}", "{\"a\": \"9\"}");
	YES("{\"a\": {\"$mod\": [-4, -1]}}", "{\"a\": -9}");
	YES("{\"a\": {\"$mod\": [-1, 0]}}", "{\"a\": {\"$numberLong\": \"-9223372036854775808\"}}");
	/* mod_special_values.js */
	NO("{\"a\": {\"$mod\": [1, 0]}}", "{\"a\": -1e19}");
	NO("{\"a\": {\"$mod\": [1, 0]}}", "{\"a\": {\"$numberDecimal\": \"1e19\"}}");
	NO("{\"a\": {\"$mod\": [1, 0]}}", "{\"a\": {\"$numberDouble\": \"Infinity\"}}");
	NO("{\"a\": {\"$mod\": [1, 0]}}", "{\"a\": {\"$numberDecimal\": \"NaN\"}}");
	YES("{\"a\": {\"$mod\": [10, 4]}}", "{\"a\": {\"$numberDecimal\": \"14.50001\"}}");
	NO("{\"a\": {\"$mod\": [10, 4]}}", "{\"a\": 15.01}");
	YES("{\"a\": {\"$size\": 2}}", "{\"a\": [1, [2, 3]]}");
	NO("{\"a\": {\"$size\": 1}}", "{\"a\": [1, [2, 3]]}");
	YES("{\"a\": {\"$size\": 0}}", "{\"a\": []}");
	NO("{\"a\": {\"$size\": 0}}", "{}");
	YES("{\"a.b\": {\"$size\": 2}}", "{\"a\": [{\"b\": [1, 2]}]}");
	YES("{\"a\": {\"$size\": 2.0}}", "{\"a\": [1, 2]}");
}

static void
test_regex(void)
{
	YES("{\"a\": /^ab/}", "{\"a\": \"abc\"}");
	NO("{\"a\": /^ab/}", "{\"a\": \"Abc\"}");
	YES("{\"a\": /^ab/i}", "{\"a\": \"Abc\"}");
	YES("{\"a\": {\"$rEgex\": \"^ab\", \"$oPtions\": \"i\"}}", "{\"a\": \"ABc\"}");
	YES("{\"a\": {\"$oPtions\": \"i\", \"$rEgex\": \"^ab\"}}", "{\"a\": \"ABc\"}");
	YES("{\"a\": {\"$rEgex\": \"^b\", \"$oPtions\": \"m\"}}", "{\"a\": \"a\\nb\"}");
	NO("{\"a\": {\"$rEgex\": \"^b\"}}", "{\"a\": \"a\\nb\"}");
	YES("{\"a\": {\"$rEgex\": \"a.b\", \"$oPtions\": \"s\"}}", "{\"a\": \"a\\nb\"}");
	YES("{\"a\": {\"$rEgex\": \"a b # c\", \"$oPtions\": \"x\"}}", "{\"a\": \"ab\"}");
	YES("{\"a\": /é/}", "{\"a\": \"café\"}");
	YES("{\"a\": /^.$/}", "{\"a\": \"é\"}");
	YES("{\"a\": /x/}", "{\"a\": [\"a\", \"bxb\"]}");
	NO("{\"a\": /1/}", "{\"a\": 1}");
	YES("{\"a\": {\"$rEgex\": {\"$regularExpression\": {\"pattern\": \"^a\", \"options\": \"i\"}}}}",
	    "{\"a\": \"A\"}");
	YES("{\"a\": {\"$eq\": /x/}}", "{\"a\": /x/}");
	NO("{\"a\": {\"$eq\": /x/}}", "{\"a\": \"x\"}");
	/* pathological pattern ends */
	NO("{\"a\": /^(a+)+$/}", "{\"a\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\"}");
}

static void
test_arrays_ops(void)
{
	YES("{\"a\": {\"$all\": [1, 2]}}", "{\"a\": [2, 3, 1]}");
	NO("{\"a\": {\"$all\": [1, 2]}}", "{\"a\": [2, 3]}");
	NO("{\"a\": {\"$all\": []}}", "{\"a\": [2, 3]}");
	YES("{\"a\": {\"$all\": [[1, 2]]}}", "{\"a\": [1, 2]}");
	YES("{\"a\": {\"$all\": [/^x/]}}", "{\"a\": [\"xa\"]}");
	YES("{\"a\": {\"$all\": [{\"$elemMatch\": {\"b\": 1}}, {\"$elemMatch\": {\"c\": 2}}]}}",
	    "{\"a\": [{\"b\": 1}, {\"c\": 2}]}");
	YES("{\"a\": {\"$elemMatch\": {\"b\": 1, \"c\": 2}}}", "{\"a\": [{\"b\": 1, \"c\": 2}]}");
	NO("{\"a\": {\"$elemMatch\": {\"b\": 1, \"c\": 2}}}", "{\"a\": [{\"b\": 1}, {\"c\": 2}]}");
	NO("{\"a\": {\"$elemMatch\": {\"b\": 1}}}", "{\"a\": {\"b\": 1}}");
	YES("{\"a\": {\"$elemMatch\": {\"$elemMatch\": {\"$gt\": 2}}}}", "{\"a\": [[1], [3]]}");
	YES("{\"a\": {\"$elemMatch\": {\"$not\": {\"$gt\": 2}}}}", "{\"a\": [5, 1]}");
	YES("{\"a\": {\"$elemMatch\": {\"$or\": [{\"b\": 1}, {\"c\": 1}]}}}", "{\"a\": [{\"c\": 1}]}");
	YES("{\"a\": {\"$elemMatch\": {\"0\": 1}}}", "{\"a\": [[1, 2]]}");
	YES("{\"a.b\": {\"$elemMatch\": {\"$eq\": 2}}}", "{\"a\": [{\"b\": [1, 2]}]}");
}

static void
test_bits(void)
{
	YES("{\"a\": {\"$bitsAllSet\": 5}}", "{\"a\": 13}");
	NO("{\"a\": {\"$bitsAllSet\": 5}}", "{\"a\": 12}");
	YES("{\"a\": {\"$bitsAnySet\": [1, 3]}}", "{\"a\": 8}");
	YES("{\"a\": {\"$bitsAllClear\": [0, 1]}}", "{\"a\": 4}");
	YES("{\"a\": {\"$bitsAnyClear\": [0, 2]}}", "{\"a\": 1}");
	YES("{\"a\": {\"$bitsAllSet\": [63, 100]}}", "{\"a\": -1}");
	NO("{\"a\": {\"$bitsAllSet\": [1]}}", "{\"a\": 2.5}");
	YES("{\"a\": {\"$bitsAllSet\": {\"$binary\": {\"base64\": \"AQ==\", \"subType\": \"00\"}}}}",
	    "{\"a\": 1}");
	YES("{\"a\": {\"$bitsAnySet\": [9]}}",
	    "{\"a\": {\"$binary\": {\"base64\": \"AAI=\", \"subType\": \"00\"}}}");
	NO("{\"a\": {\"$bitsAllSet\": [0]}}", "{\"a\": \"x\"}");
	/* bittest.js: decimals, NaN, non-integral and infinite values never match */
	NO("{\"a\": {\"$bitsAllSet\": 0}}", "{\"a\": {\"$numberDecimal\": \"9007199254740992\"}}");
	NO("{\"a\": {\"$bitsAllClear\": 0}}", "{\"a\": 1.1}");
	NO("{\"a\": {\"$bitsAllClear\": 0}}", "{\"a\": {\"$numberDouble\": \"-Infinity\"}}");
	YES("{\"a\": {\"$bitsAllSet\": 54}}", "{\"a\": [1.1, 54]}");
	YES("{\"a\": {\"$bitsAllSet\": 74, \"$bitsAllClear\": 53}}", "{\"a\": -54}");
	/* huge positions: sign extension for numbers, zero past BinData */
	YES("{\"a\": {\"$bitsAllSet\": [2147483647, 0]}}", "{\"a\": -1}");
	NO("{\"a\": {\"$bitsAllSet\": [2147483647]}}", "{\"a\": 1}");
	YES("{\"a\": {\"$bitsAnyClear\": [2147483647]}}", "{\"a\": 1}");
	YES("{\"a\": {\"$bitsAllClear\": [100000]}}",
	    "{\"a\": {\"$binary\": {\"base64\": \"/w==\", \"subType\": \"00\"}}}");
}

static int
pos_of(const char *filter, const char *doc)
{
	bson_t *f = jx(filter), *d = jx(doc);
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int pos = -2;

	if (match_compile(f, NULL, &m, &err) == 0 && !match_eval_pos(m, d, &pos))
		pos = -3;
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	bson_destroy(d);
	return pos;
}

static void
test_positional(void)
{
	TT_EQ_INT(pos_of("{\"a\": 3}", "{\"a\": [1, 2, 3]}"), 2);
	TT_EQ_INT(pos_of("{\"a.b\": 3}", "{\"a\": [{\"b\": 1}, {\"b\": 3}]}"), 1);
	TT_EQ_INT(pos_of("{\"a\": {\"$elemMatch\": {\"b\": 2}}}", "{\"a\": [{\"b\": 1}, {\"b\": 2}]}"), 1);
	TT_EQ_INT(pos_of("{\"x\": 1}", "{\"x\": 1}"), -1);
	TT_EQ_INT(pos_of("{\"a\": [1, 2]}", "{\"a\": [1, 2]}"), -1);
	TT_EQ_INT(pos_of("{\"a.b\": 2}", "{\"a\": [{\"b\": [0]}, {\"b\": [1, 2]}]}"), 1);
}

typedef struct {
	char buf[256];
} eqs_t;

static bool
collect_eq(const char *path, const bson_value_t *v, void *ctx)
{
	eqs_t *e = ctx;
	size_t n = strlen(e->buf);

	snprintf(e->buf + n, sizeof e->buf - n, "%s%s", n ? "," : "", path);
	return true;
}

static void
test_helpers(void)
{
	bson_t *f = tt_json("{\"a\": 1, \"b\": {\"$eq\": 2}, \"$and\": [{\"c\": 3}, {\"d\": {\"$gt\": 1}}],"
	                    " \"e\": {\"$in\": [5]}, \"$or\": [{\"f\": 1}, {\"g\": 1}]}");
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	eqs_t e = {{0}};
	const bson_value_t *id;

	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	match_equalities(m, collect_eq, &e);
	TT_EQ_STR(e.buf, "a,b,c,e");
	TT_ASSERT(!match_is_id_point(m, &id));
	TT_ASSERT(!match_is_trivially_true(m));
	match_free(m);
	bson_destroy(f);
	f = tt_json("{\"_id\": 7}");
	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	TT_ASSERT(match_is_id_point(m, &id) && id->value.v_int32 == 7);
	match_free(m);
	bson_destroy(f);
	f = tt_json("{\"_id\": {\"$in\": [1, 2]}}");
	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	TT_ASSERT(!match_is_id_point(m, &id));
	match_free(m);
	bson_destroy(f);
	f = tt_json("{\"$comment\": \"x\"}");
	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	TT_ASSERT(match_is_trivially_true(m));
	match_free(m);
	bson_destroy(f);
}

#define ERRC(f, code, msg) do { TT_EQ_INT(compile_err(f), code); \
	if ((msg) != NULL) TT_EQ_STR(last_msg, (const char *)(msg)); } while (0)

static void
test_errors(void)
{
	ERRC("{\"a\": {\"$foo\": 1}}", 2, "unknown operator: $foo");
	ERRC("{\"$foo\": 1}", 2, "unknown top level operator: $foo. If you have a field name that "
	     "starts with a '$' symbol, consider using $getField or $setField.");
	ERRC("{\"a\": {\"$gt\": 1, \"b\": 1}}", 2, "unknown operator: b");
	ERRC("{\"a\": {\"$in\": 1}}", 2, "$in needs an array");
	ERRC("{\"a\": {\"$nin\": 1}}", 2, "$nin needs an array");
	ERRC("{\"a\": {\"$in\": [{\"$gt\": 1}]}}", 2, "cannot nest $ under $in");
	ERRC("{\"a\": {\"$size\": -1}}", 2,
	     "Failed to parse $size. Expected a positive number in: $size: -1");
	ERRC("{\"a\": {\"$size\": 1.5}}", 2, "Failed to parse $size. Expected an integer: $size: 1.5");
	ERRC("{\"a\": {\"$size\": \"x\"}}", 2,
	     "Failed to parse $size. Expected a number in: $size: \"x\"");
	ERRC("{\"$not\": {\"a\": 1}}", 2, "unknown top level operator: $not. If you are trying to "
	     "negate an entire expression, use $nor.");
	ERRC("{\"a\": {\"$where\": 1}}", 2, "$where cannot be applied to a field");
	ERRC("{\"a\": {\"$tYpe\": \"missing\"}}", 2, "'missing' is not a legal type name. To query "
	     "for non-existence of a field, use {$exists:false}.");
	ERRC("{\"a\": {\"$tYpe\": 0}}", 2, "Invalid numerical type code: 0. Instead use {$exists:false}.");
	ERRC("{\"a\": {\"$tYpe\": 1.5}}", 2, "Invalid numerical type code: 1.5");
	ERRC("{\"a\": {\"$mod\": [{\"$numberDouble\": \"NaN\"}, 1]}}", 2,
	     "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to "
	     "integral type");
	ERRC("{\"a\": {\"$mod\": [1e19, 1]}}", 2,
	     "malformed mod, divisor value is invalid :: caused by :: Out of bounds coercing to "
	     "integral value");
	ERRC("{\"$and\": []}", 2, "$and/$or/$nor must be a nonempty array");
	ERRC("{\"$or\": 1}", 2, "$or must be an array");
	ERRC("{\"$or\": [1]}", 2, "$or/$and/$nor entries need to be full objects");
	ERRC("{\"a\": {\"$rEgex\": \"(\"}}", 51091, NULL);
	TT_ASSERT(strncmp(last_msg, "Regular expression is invalid: ", 31) == 0);
	ERRC("{\"a\": {\"$rEgex\": \"a\", \"$oPtions\": \"q\"}}", 51108, " invalid flag in regex options: q");
	ERRC("{\"a\": {\"$oPtions\": \"i\"}}", 2, "$options needs a $regex");
	ERRC("{\"a\": {\"$rEgex\": 5}}", 2, "$regex has to be a string");
	ERRC("{\"a\": {\"$gt\": /x/}}", 2, "Can't have RegEx as arg to predicate over field 'a'.");
	ERRC("{\"a\": {\"$ne\": /x/}}", 2, "Can't have regex as arg to $ne.");
	ERRC("{\"a\": {\"$mod\": 1}}", 2, "malformed mod, needs to be an array");
	ERRC("{\"a\": {\"$mod\": [1]}}", 2, "malformed mod, not enough elements");
	ERRC("{\"a\": {\"$mod\": [0, 1]}}", 2, "divisor cannot be 0");
	ERRC("{\"a\": {\"$mod\": [1, 2, 3]}}", 2, "malformed mod, too many elements");
	ERRC("{\"a\": {\"$tYpe\": \"foo\"}}", 2, "Unknown type name alias: foo");
	ERRC("{\"a\": {\"$tYpe\": 100}}", 2, "Invalid numerical type code: 100");
	ERRC("{\"a\": {\"$tYpe\": []}}", 9, "$type must match at least one type");
	ERRC("{\"a\": {\"$tYpe\": {}}}", 14, "type must be represented as a number or a string");
	ERRC("{\"a\": {\"$all\": 1}}", 2, "$all needs an array");
	ERRC("{\"a\": {\"$all\": [{\"$gt\": 1}]}}", 2, "no $ expressions in $all");
	ERRC("{\"a\": {\"$all\": [{\"$elemMatch\": {\"b\": 1}}, 1]}}", 2,
	     "$all/$elemMatch has to be consistent");
	ERRC("{\"a\": {\"$elemMatch\": 1}}", 2, "$elemMatch needs an Object");
	ERRC("{\"a\": {\"$not\": 1}}", 2, "$not needs a regex or a document");
	ERRC("{\"a\": {\"$not\": {}}}", 2, "$not cannot be empty");
	ERRC("{\"a\": {\"$bitsAllSet\": -1}}", 9, "Expected a positive number in: $bitsAllSet: -1");
	ERRC("{\"a\": {\"$bitsAllSet\": [-1]}}", 2,
	     "Failed to parse bit position. Expected a positive number in: 0: -1");
	ERRC("{\"a\": {\"$all\": [{\"$foo\": 1}]}}", 0, NULL);
	ERRC("{\"a\": {\"$bitsAllSet\": \"x\"}}", 2, NULL);
	ERRC("{\"$alwaysTrue\": 2}", 9, "$alwaysTrue must be an integer value of 1");
	ERRC("{\"$where\": \"1\"}", 238, NULL);
	ERRC("{\"$sampleRate\": 2}", 2, "numeric argument to $sampleRate must be in [0, 1]");
	ERRC("{\"$sampleRate\": \"x\"}", 2, "argument to $sampleRate must be a numeric type");
	ERRC("{\"$text\": {\"$search\": \"x\"}}", 0, NULL);
	ERRC("{\"$text\": \"x\"}", 2, "$text expects an object");
	ERRC("{\"$text\": {\"$search\": \"x\", \"$caseSensitive\": 1}}", 14, "$caseSensitive requires a boolean value");
	ERRC("{\"a\": {\"$near\": [0, 0]}}", 0, NULL);
	ERRC("{\"a\": {\"$geoWithin\": {}}}", 2, NULL);
	ERRC("{\"a\": {\"$geoWithin\": {\"$box\": [[0, 0]]}}}", 2, "Point must be an array or object");
	ERRC("{\"a\": {\"$geoIntersects\": {\"$geometry\": {\"type\": \"Point\", \"coordinates\": [0, 91]}}}}", 2,
	     "longitude/latitude is out of bounds, lng: 0 lat: 91");
	ERRC("{\"a\": {\"$geoWithin\": {\"$center\": [[0, 0], -1]}}}", 2, "radius must be a non-negative number");
	ERRC("{\"a\": {\"$elemMatch\": {\"$expr\": {\"$eq\": [1, 1]}}}}", 2,
	     "$expr can only be applied to the top-level document");
	ERRC("{\"$jsonSchema\": 1}", 14, "$jsonSchema must be an object");
	ERRC("{\"a\": {\"$undefined\": true}}", 2, "cannot compare to undefined");
}

/* {op: [{op: [ ... {a: 1} ... ]}]} nested depth times, or {a: {$elemMatch:
 * ... {$gt: 1}}} when op is NULL. */
static void
nest(bson_t *dst, const char *op, int depth)
{
	bson_t arr, doc;

	if (depth == 0) {
		if (op != NULL)
			BSON_APPEND_INT32(dst, "a", 1);
		else
			BSON_APPEND_INT32(dst, "$gt", 1);
		return;
	}
	if (op == NULL) {
		bson_append_document_begin(dst, "$elemMatch", -1, &doc);
		nest(&doc, op, depth - 1);
		bson_append_document_end(dst, &doc);
		return;
	}
	bson_append_array_begin(dst, op, -1, &arr);
	bson_append_document_begin(&arr, "0", -1, &doc);
	nest(&doc, op, depth - 1);
	bson_append_document_end(&arr, &doc);
	bson_append_array_end(dst, &arr);
}

static int
depth_code(const char *op, int depth)
{
	bson_t *f = bson_new(), sub;
	match_t *m = NULL;
	terr_t err = TERR_INIT;
	int code = 0;

	if (op != NULL) {
		nest(f, op, depth);
	} else {
		bson_append_document_begin(f, "a", -1, &sub);
		nest(&sub, NULL, depth);
		bson_append_document_end(f, &sub);
	}
	if (match_compile(f, NULL, &m, &err) != 0) {
		code = err.code;
		if (strstr(err.msg, "exceeded maximum query tree depth of 100") == NULL)
			code = -1;
	}
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	return code;
}

static void
test_depth(void)
{
	TT_EQ_INT(depth_code("$and", 200), 2);
	TT_EQ_INT(depth_code("$or", 101), 2);
	TT_EQ_INT(depth_code("$nor", 99), 0);
	TT_EQ_INT(depth_code(NULL, 200), 2);
	TT_EQ_INT(depth_code(NULL, 50), 0);
	TT_EQ_INT(depth_code("$and", 1000), 2);
}

/* null_query_semantics.js (without the undefined cases, which MongoDB 8.0
 * changed): which documents each query selects. */
static const char *null_docs[][2] = {
	{"a_empty_subobject", "{\"a\": {}}"},
	{"a_null", "{\"a\": null}"},
	{"a_number", "{\"a\": 4}"},
	{"a_subobject_b_not_null", "{\"a\": {\"b\": \"hi\"}}"},
	{"a_subobject_b_null", "{\"a\": {\"b\": null}}"},
	{"no_a", "{}"},
	{"a_double_array", "{\"a\": [[]]}"},
	{"a_empty_array", "{\"a\": []}"},
	{"a_object_array_no_b_nulls", "{\"a\": [{\"b\": 1}, {\"b\": 3}, {\"b\": \"string\"}]}"},
	{"a_object_array_some_b_nulls", "{\"a\": [{\"b\": null}, {\"b\": 3}, {\"b\": null}]}"},
	{"a_object_array_some_b_missing", "{\"a\": [{\"b\": 3}, {}]}"},
	{"a_value_array_all_nulls", "{\"a\": [null, null]}"},
	{"a_value_array_no_nulls", "{\"a\": [1, \"string\", 4]}"},
	{"a_value_array_with_null", "{\"a\": [1, \"string\", null, 4]}"},
};

static const char *
selected(const char *filter)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof null_docs / sizeof null_docs[0]; i++)
		if (mt(filter, null_docs[i][1]) == 1)
			n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? "," : "", null_docs[i][0]);
	return buf;
}

static void
test_null_query_semantics(void)
{
	TT_EQ_STR(selected("{\"a\": {\"$eq\": null}}"),
	          "a_null,no_a,a_value_array_all_nulls,a_value_array_with_null");
	TT_EQ_STR(selected("{\"a\": {\"$ne\": null}}"),
	          "a_empty_subobject,a_number,a_subobject_b_not_null,a_subobject_b_null,a_double_array,"
	          "a_empty_array,a_object_array_no_b_nulls,a_object_array_some_b_nulls,"
	          "a_object_array_some_b_missing,a_value_array_no_nulls");
	TT_EQ_STR(selected("{\"a\": {\"$not\": {\"$gte\": null}}}"),
	          "a_empty_subobject,a_number,a_subobject_b_not_null,a_subobject_b_null,a_double_array,"
	          "a_empty_array,a_object_array_no_b_nulls,a_object_array_some_b_nulls,"
	          "a_object_array_some_b_missing,a_value_array_no_nulls");
	TT_EQ_STR(selected("{\"a\": {\"$elemMatch\": {\"$eq\": null}}}"),
	          "a_value_array_all_nulls,a_value_array_with_null");
	TT_EQ_STR(selected("{\"a\": {\"$elemMatch\": {\"$ne\": null}}}"),
	          "a_double_array,a_object_array_no_b_nulls,a_object_array_some_b_nulls,"
	          "a_object_array_some_b_missing,a_value_array_no_nulls,a_value_array_with_null");
	TT_EQ_STR(selected("{\"a.b\": {\"$eq\": null}}"),
	          "a_empty_subobject,a_null,a_number,a_subobject_b_null,no_a,"
	          "a_object_array_some_b_nulls,a_object_array_some_b_missing");
	TT_EQ_STR(selected("{\"a.b\": {\"$ne\": null}}"),
	          "a_subobject_b_not_null,a_double_array,a_empty_array,a_object_array_no_b_nulls,"
	          "a_value_array_all_nulls,a_value_array_no_nulls,a_value_array_with_null");
	TT_EQ_STR(selected("{\"a.b\": {\"$nin\": [null, /^str.*/]}}"),
	          "a_subobject_b_not_null,a_double_array,a_empty_array,a_value_array_all_nulls,"
	          "a_value_array_no_nulls,a_value_array_with_null");
	TT_EQ_STR(selected("{\"a.b\": {\"$elemMatch\": {\"$eq\": null}}}"), "");
	TT_EQ_STR(selected("{\"a\": {\"$elemMatch\": {\"b\": {\"$eq\": null}}}}"),
	          "a_double_array,a_object_array_some_b_nulls,a_object_array_some_b_missing");
	TT_EQ_STR(selected("{\"a\": {\"$elemMatch\": {\"b\": {\"$ne\": null}}}}"),
	          "a_object_array_no_b_nulls,a_object_array_some_b_nulls,a_object_array_some_b_missing");
	TT_EQ_STR(selected("{\"a.b\": {\"$exists\": false}}"),
	          "a_empty_subobject,a_null,a_number,no_a,a_double_array,a_empty_array,"
	          "a_value_array_all_nulls,a_value_array_no_nulls,a_value_array_with_null");
}

static void
test_to_bson(void)
{
	static const char *cases[][2] = {
		{"{\"a\": 1}", "{ \"a\" : { \"$eq\" : 1 } }"},
		{"{\"a\": 1, \"b\": {\"$gt\": 2}}",
		 "{ \"$and\" : [ { \"a\" : { \"$eq\" : 1 } }, { \"b\" : { \"$gt\" : 2 } } ] }"},
		{"{\"a\": {\"$ne\": 1}}", "{ \"a\" : { \"$not\" : { \"$eq\" : 1 } } }"},
		{"{\"a\": {\"$in\": [3, 1]}}", "{ \"a\" : { \"$in\" : [ 1, 3 ] } }"},
		{"{\"$or\": [{\"a\": 1}, {\"b\": {\"$exists\": true}}]}",
		 "{ \"$or\" : [ { \"a\" : { \"$eq\" : 1 } }, { \"b\" : { \"$exists\" : true } } ] }"},
		{"{}", "{ }"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bson_t *f = jx(cases[i][0]), *out;
		match_t *m = NULL;
		terr_t err = TERR_INIT;

		TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
		out = match_to_bson(m);
		TT_EQ_JSON(out, cases[i][1]);
		bson_destroy(out);
		match_free(m);
		bson_destroy(f);
	}
}

/* The filter without the top-level conjuncts an index scan answers:
 * evaluation and explain's residual filter. */
static void
test_skip_conjuncts(void)
{
	bson_t *f = jx("{\"a\": 1, \"b\": {\"$gt\": 2}, \"c\": \"x\"}");
	bson_t *doc = jx("{\"a\": 2, \"b\": 3, \"c\": \"x\"}");
	bson_t *one, *none;
	match_t *m = NULL;
	terr_t err = TERR_INIT;

	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	TT_EQ_INT(match_exec_skip(m, 0, doc, &err), 0);         /* a fails */
	TT_EQ_INT(match_exec_skip(m, 1, doc, &err), 1);         /* a answered elsewhere */
	TT_EQ_INT(match_exec_skip(m, 1 | 4, doc, &err), 1);
	one = match_to_bson_skip(m, 1 | 4);
	TT_EQ_JSON(one, "{ \"b\" : { \"$gt\" : 2 } }");
	bson_destroy(one);
	one = match_to_bson_skip(m, 2);
	TT_EQ_JSON(one, "{ \"$and\" : [ { \"a\" : { \"$eq\" : 1 } }, { \"c\" : { \"$eq\" : \"x\" } } ] }");
	bson_destroy(one);
	none = match_to_bson_skip(m, 7);
	TT_ASSERT(none == NULL);
	match_free(m);
	bson_destroy(f);
	/* a root that is not an $and is conjunct 0 */
	f = jx("{\"a\": 2}");
	TT_ASSERT(match_compile(f, NULL, &m, &err) == 0);
	bson_destroy(doc);
	doc = jx("{\"a\": 9}");
	TT_EQ_INT(match_exec_skip(m, 1, doc, &err), 1);
	TT_EQ_INT(match_exec_skip(m, 0, doc, &err), 0);
	TT_EQ_INT(match_exec_skip(m, 2, doc, &err), 0);
	TT_ASSERT(match_to_bson_skip(m, 1) == NULL);
	one = match_to_bson_skip(m, 2);
	TT_EQ_JSON(one, "{ \"a\" : { \"$eq\" : 2 } }");
	bson_destroy(one);
	match_free(m);
	bson_destroy(f);
	bson_destroy(doc);
}

int
main(void)
{
	TT_RUN(test_to_bson);
	TT_RUN(test_skip_conjuncts);
	TT_RUN(test_null_query_semantics);
	TT_RUN(test_equality);
	TT_RUN(test_null_missing);
	TT_RUN(test_ranges);
	TT_RUN(test_in);
	TT_RUN(test_logical);
	TT_RUN(test_type_mod_size);
	TT_RUN(test_regex);
	TT_RUN(test_arrays_ops);
	TT_RUN(test_bits);
	TT_RUN(test_positional);
	TT_RUN(test_helpers);
	TT_RUN(test_errors);
	TT_RUN(test_depth);
	return tt_finish();
}
