/*
 * test_log_json.c -- the log line encoder (common/log_json.c, common/log.c)
 * against the spellings of mongod's logv2 (ExtendedRelaxedV200Generator):
 * UUIDs as $uuid, other BinData with an unpadded hex subtype, fmt-style
 * doubles, dates with milliseconds, DBPointer as $ref/$id, and
 * str::escapeForJSON's escapes; and a whole line through tlog/tlog_get.
 */
#include "tt.h"

#include <math.h>

#include "common/log.h"
#include "common/log_json.h"

static char *
enc(const bson_t *b)
{
	bson_string_t *s = bson_string_new(NULL);

	tlog_json_doc(s, b, false);
	return bson_string_free(s, false);
}

#define EXPECT_DOC(b, want) do { char *g_ = enc(b); TT_EQ_STR(g_, want); bson_free(g_); } while (0)

static void
test_binary(void)
{
	static const uint8_t u[16] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0,
	                              0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
	bson_t b = BSON_INITIALIZER;

	bson_append_binary(&b, "u", 1, BSON_SUBTYPE_UUID, u, 16);
	bson_append_binary(&b, "old", 3, BSON_SUBTYPE_UUID_DEPRECATED, u, 16);
	bson_append_binary(&b, "short", 5, BSON_SUBTYPE_UUID, u, 3);   /* not 16 bytes: $binary */
	bson_append_binary(&b, "g", 1, BSON_SUBTYPE_BINARY, u, 5);
	bson_append_binary(&b, "user", 4, BSON_SUBTYPE_USER, u, 1);
	bson_append_binary(&b, "e", 1, BSON_SUBTYPE_BINARY, u, 0);
	EXPECT_DOC(&b, "{\"u\":{\"$uuid\":\"12345678-9abc-def0-0123-456789abcdef\"},"
	               "\"old\":{\"$binary\":{\"base64\":\"EjRWeJq83vABI0VniavN7w==\",\"subType\":\"3\"}},"
	               "\"short\":{\"$binary\":{\"base64\":\"EjRW\",\"subType\":\"4\"}},"
	               "\"g\":{\"$binary\":{\"base64\":\"EjRWeJo=\",\"subType\":\"0\"}},"
	               "\"user\":{\"$binary\":{\"base64\":\"Eg==\",\"subType\":\"80\"}},"
	               "\"e\":{\"$binary\":{\"base64\":\"\",\"subType\":\"0\"}}}");
	bson_destroy(&b);

	/* inside a nested document and an array, as an lsid in a command */
	bson_t *n = tt_json("{\"command\": {\"lsid\": {\"id\": {\"$binary\": {\"base64\": "
	                    "\"AAAAAAAAQACAAAAAAAAAAQ==\", \"subType\": \"04\"}}}, \"a\": [1, "
	                    "{\"$binary\": {\"base64\": \"AAAAAAAAQACAAAAAAAAAAQ==\", \"subType\": \"04\"}}]}}");
	EXPECT_DOC(n, "{\"command\":{\"lsid\":{\"id\":{\"$uuid\":\"00000000-0000-4000-8000-000000000001\"}},"
	              "\"a\":[1,{\"$uuid\":\"00000000-0000-4000-8000-000000000001\"}]}}");
	bson_destroy(n);
}

static void
test_numbers(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {1.0, "1"}, {-2.0, "-2"}, {0.5, "0.5"}, {0.1, "0.1"}, {1.0 / 3, "0.3333333333333333"},
	    {100.0, "100"}, {123.456, "123.456"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
	    {1e15, "1000000000000000"}, {1e16, "1e+16"}, {1.5e300, "1.5e+300"}, {-0.0, "-0"},
	    {0.0, "0"}, {2.5e-7, "2.5e-07"}, {9007199254740993.0, "9007199254740992"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bson_t b = BSON_INITIALIZER;
		char want[80];
		bson_append_double(&b, "d", 1, cases[i].v);
		snprintf(want, sizeof want, "{\"d\":%s}", cases[i].want);
		EXPECT_DOC(&b, want);
		bson_destroy(&b);
	}

	bson_t b = BSON_INITIALIZER;
	bson_append_double(&b, "n", 1, NAN);
	bson_append_double(&b, "i", 1, INFINITY);
	bson_append_double(&b, "m", 1, -INFINITY);
	bson_append_int32(&b, "a", 1, -7);
	bson_append_int64(&b, "l", 1, INT64_MAX);
	bson_decimal128_t d;
	bson_decimal128_from_string("1.2980", &d);
	bson_append_decimal128(&b, "dec", 3, &d);
	EXPECT_DOC(&b, "{\"n\":{\"$numberDouble\":\"NaN\"},\"i\":{\"$numberDouble\":\"Infinity\"},"
	               "\"m\":{\"$numberDouble\":\"-Infinity\"},\"a\":-7,\"l\":9223372036854775807,"
	               "\"dec\":{\"$numberDecimal\":\"1.2980\"}}");
	bson_destroy(&b);
}

static void
test_other_types(void)
{
	bson_t b = BSON_INITIALIZER, sub;
	bson_oid_t oid;

	bson_oid_init_from_string(&oid, "5f0c1b2a3d4e5f6a7b8c9d0e");
	bson_append_date_time(&b, "d0", 2, 0);
	bson_append_date_time(&b, "d", 1, INT64_C(1596240000123));
	bson_append_date_time(&b, "neg", 3, -1);
	bson_append_date_time(&b, "far", 3, INT64_C(253402300800000));
	bson_append_oid(&b, "o", 1, &oid);
	bson_append_timestamp(&b, "ts", 2, 5, 7);
	bson_append_regex(&b, "re", 2, "a\"b", "i");
	bson_append_bool(&b, "t", 1, true);
	bson_append_null(&b, "z", 1);
	bson_append_undefined(&b, "u", 1);
	bson_append_minkey(&b, "mn", 2);
	bson_append_maxkey(&b, "mx", 2);
	bson_append_dbpointer(&b, "p", 1, "db.c", &oid);
	bson_append_code(&b, "c", 1, "f()");
	bson_append_symbol(&b, "s", 1, "sym", 3);
	bson_init(&sub);
	bson_append_int32(&sub, "x", 1, 1);
	bson_append_code_with_scope(&b, "cs", 2, "g()", &sub);
	bson_destroy(&sub);
	bson_append_document_begin(&b, "e", 1, &sub);
	bson_append_document_end(&b, &sub);
	bson_append_array_begin(&b, "ea", 2, &sub);
	bson_append_array_end(&b, &sub);
	EXPECT_DOC(&b, "{\"d0\":{\"$date\":\"1970-01-01T00:00:00.000Z\"},"
	               "\"d\":{\"$date\":\"2020-08-01T00:00:00.123Z\"},"
	               "\"neg\":{\"$date\":{\"$numberLong\":\"-1\"}},"
	               "\"far\":{\"$date\":{\"$numberLong\":\"253402300800000\"}},"
	               "\"o\":{\"$oid\":\"5f0c1b2a3d4e5f6a7b8c9d0e\"},"
	               "\"ts\":{\"$timestamp\":{\"t\":5,\"i\":7}},"
	               "\"re\":{\"$regularExpression\":{\"pattern\":\"a\\\"b\",\"options\":\"i\"}},"
	               "\"t\":true,\"z\":null,\"u\":{\"$undefined\":true},"
	               "\"mn\":{\"$minKey\":1},\"mx\":{\"$maxKey\":1},"
	               "\"p\":{\"$ref\":\"db.c\",\"$id\":\"5f0c1b2a3d4e5f6a7b8c9d0e\"},"
	               "\"c\":{\"$code\":\"f()\"},\"s\":{\"$symbol\":\"sym\"},"
	               "\"cs\":{\"$code\":\"g()\",\"$scope\":{\"x\":1}},\"e\":{},\"ea\":[]}");
	bson_destroy(&b);
}

static void
test_strings(void)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want;
	} cases[] = {
	    {"plain", 5, "\"plain\""},
	    {"q\"b\\s/", 6, "\"q\\\"b\\\\s/\""},
	    {"\b\t\n\f\r", 5, "\"\\b\\t\\n\\f\\r\""},
	    {"\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\""},
	    {"a\0b", 3, "\"a\\u0000b\""},
	    {"\xc2\x85", 2, "\"\\u0085\""},                 /* C1 control NEL */
	    {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
	    {"\xff", 1, "\"\\ufffd\""},
	    {"\xc3(", 2, "\"\\ufffd(\""},                   /* a broken sequence */
	    {"\xe0\x80\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""}, /* overlong */
	    {"\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""}, /* a surrogate */
	    {"\xe2\x82", 2, "\"\\ufffd\\ufffd\""},          /* truncated at the end */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		bson_string_t *s = bson_string_new(NULL);
		tlog_json_str(s, cases[i].in, cases[i].len);
		char *g = bson_string_free(s, false);
		TT_EQ_STR(g, cases[i].want);
		bson_free(g);
	}
}

/* A whole line through tlog: getLog's copy carries the $uuid attr. */
static void
test_line(void)
{
	static const uint8_t u[16] = {0xaa, 0xbb, 0xcc, 0xdd, 0, 1, 0x40, 2, 0x80, 3, 4, 5, 6, 7, 8, 9};
	bson_t attr = BSON_INITIALIZER, arr = BSON_INITIALIZER;
	bson_iter_t it;
	const char *line = NULL;

	tlog_open("", false, false);
	tlog_set_ctx("conn7");
	bson_append_binary(&attr, "collection_uuid", -1, BSON_SUBTYPE_UUID, u, 16);
	bson_append_utf8(&attr, "ns", -1, "a.b", -1);
	tlog('I', "STORAGE", 12345, "a \"quoted\" message", &attr);
	tlog_get("global", &arr);
	TT_ASSERT(bson_iter_init(&it, &arr));
	while (bson_iter_next(&it))
		line = bson_iter_utf8(&it, NULL);
	TT_ASSERT(line != NULL);
	if (line != NULL) {
		const char *tail = strstr(line, ",\"s\":");
		TT_ASSERT(strncmp(line, "{\"t\":{\"$date\":\"", 15) == 0);
		TT_EQ_STR(tail, ",\"s\":\"I\",\"c\":\"STORAGE\",\"id\":12345,\"ctx\":\"conn7\",\"msg\":\"a \\\"quoted\\\" "
		                "message\",\"attr\":{\"collection_uuid\":{\"$uuid\":\"aabbccdd-0001-4002-8003-040506070809\"},"
		                "\"ns\":\"a.b\"}}");
	}
	bson_destroy(&attr);
	bson_destroy(&arr);
	tlog_close();
}

int
main(void)
{
	TT_RUN(test_binary);
	TT_RUN(test_numbers);
	TT_RUN(test_other_types);
	TT_RUN(test_strings);
	TT_RUN(test_line);
	return tt_finish();
}
