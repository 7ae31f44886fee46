/*
 * test_overflow.c -- numbers at the edges of their types in every place a
 * request's number becomes a size, a count, a loop bound or date
 * arithmetic (issue 21, items 1 and 4, and the audit of docs/security.md):
 * INT32/INT64 min and max, +-2^53, NaN, +-inf, -0.0, huge decimals.  Each
 * row is a command and the exact answer mongod gives (its code and
 * message, or the result).  Under ASan+UBSan a row that overflows fails
 * the run even when its answer looks right.
 *
 * OVERFLOW_PRINT=1 prints every answer instead of comparing.
 */
#include "tt.h"

#include "tt_embedded.h"

static tamga_t *db;

#define I64MIN "{'$numberLong': '-9223372036854775808'}"
#define I64MAX "{'$numberLong': '9223372036854775807'}"
#define DMIN "{'$date': {'$numberLong': '-9223372036854775808'}}"
#define DMAX "{'$date': {'$numberLong': '9223372036854775807'}}"

typedef struct ocase {
	const char *cmd;     /* single-quoted JSON, run against database "o" */
	const char *expect;  /* "error <code>: <errmsg>", a firstBatch, or the reply */
} ocase_t;

/* The answer as text: an error, a cursor's firstBatch, or the whole reply
 * without ok.  The caller bson_free()s it. */
static char *
answer(const char *cmd)
{
	int rc;
	bson_t *r = tt_run_sq(db, "o", cmd, &rc);
	char *out;
	bson_iter_t f;

	if (rc != 0 || (tt_get(r, "cursor.firstBatch", &f) && BSON_ITER_HOLDS_ARRAY(&f))) {
		out = tt_batch_text(r, rc, "");
	} else {
		bson_t copy = BSON_INITIALIZER;
		bson_copy_to_excluding_noinit(r, &copy, "ok", NULL);
		out = bson_as_relaxed_extended_json(&copy, NULL);
		bson_destroy(&copy);
	}
	tt_free_reply(r);
	return out;
}

static void
run_cases(const ocase_t *cases, size_t n)
{
	bool print = getenv("OVERFLOW_PRINT") != NULL;

	if (print)
		setvbuf(stdout, NULL, _IONBF, 0);

	for (size_t i = 0; i < n; i++) {
		char *got = answer(cases[i].cmd);
		if (print)
			printf("%s\n  %s %s\n", cases[i].cmd, cases[i].expect[0] ? "=>" : "=?", got);
		else if (strcmp(got, cases[i].expect) != 0)
			TT_FAIL_("%s\n   got: %s\n  want: %s", cases[i].cmd, got, cases[i].expect);
		bson_free(got);
	}
}

#define AGG(p) "{'aggregate': 'c', 'pipeline': " p ", 'cursor': {}}"
#define PROJ(e) AGG("[{'$project': {'_id': 0, 'v': " e "}}]")

/* item 1: $sample's size */
static void
test_sample_size(void)
{
	static const ocase_t cases[] = {
		{AGG("[{'$sample': {'size': {'$numberLong': '2305843009213693952'}}}, {'$count': 'n'}]"), "[ { \"n\" : 3 } ]"},
		{AGG("[{'$sample': {'size': " I64MAX "}}, {'$count': 'n'}]"), "[ { \"n\" : 3 } ]"},
		{AGG("[{'$sample': {'size': 1e300}}, {'$count': 'n'}]"), "[ { \"n\" : 3 } ]"},
		{AGG("[{'$sample': {'size': {'$numberDouble': 'Infinity'}}}, {'$count': 'n'}]"), "[ { \"n\" : 3 } ]"},
		{AGG("[{'$sample': {'size': {'$numberDecimal': '1E+6000'}}}, {'$count': 'n'}]"), "[ { \"n\" : 3 } ]"},
		{AGG("[{'$sample': {'size': 1.5}}, {'$count': 'n'}]"), "[ { \"n\" : 1 } ]"},
		{AGG("[{'$sample': {'size': {'$numberDouble': 'NaN'}}}]"), "error 28747: size argument to $sample must be a positive integer"},
		{AGG("[{'$sample': {'size': 0}}]"), "error 28747: size argument to $sample must be a positive integer"},
		{AGG("[{'$sample': {'size': -1}}]"), "error 28747: size argument to $sample must be a positive integer"},
		{AGG("[{'$sample': {'size': " I64MIN "}}]"), "error 28747: size argument to $sample must be a positive integer"},
		{AGG("[{'$sample': {'size': {'$numberDouble': '-Infinity'}}}]"), "error 28747: size argument to $sample must be a positive integer"},
		{AGG("[{'$sample': {'size': 'x'}}]"), "error 28746: size argument to $sample must be a number"},
	};
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* item 4: counts and dates at the int64 limits */
static void
test_int64_edges(void)
{
	static const ocase_t cases[] = {
		{"{'count': 'c', 'limit': " I64MIN "}", "error 2: limit value for count cannot be min long"},
		{"{'count': 'c', 'limit': {'$numberLong': '-9223372036854775807'}}", "{ \"n\" : 3 }"},
		{"{'count': 'c', 'query': {'a': 1}, 'limit': " I64MIN "}", "error 2: limit value for count cannot be min long"},
		{"{'count': 'c', 'skip': " I64MIN "}", "error 2: skip value is negative in count query"},
		{"{'count': 'c', 'skip': " I64MAX ", 'limit': " I64MAX "}", "{ \"n\" : 0 }"},
		{"{'count': 'c', 'query': {'a': {'$gt': 0}}, 'skip': " I64MAX "}", "{ \"n\" : 0 }"},
		{"{'find': 'c', 'limit': " I64MIN "}", "error 51024: BSON field 'limit' value must be >= 0, actual value '-9223372036854775808'"},
		{"{'find': 'c', 'skip': " I64MAX ", 'limit': " I64MAX "}", "[ ]"},
		{"{'find': 'c', 'batchSize': " I64MAX "}",
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 }, { \"_id\" : 2, \"a\" : 2, \"arr\" : [  ], "
		 "\"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"_id\" : 3, \"a\" : "
		 "5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" } } ]"},
		{"{'find': 'c', 'limit': 1e300}", "error 2: BSON field 'find.limit' value must be a number in range"},
		{AGG("[{'$skip': " I64MAX "}, {'$limit': " I64MAX "}]"), "[ ]"},
		/* mongod 9.0's parseIntegerElementToNonNegativeLong (issue 22) */
		{AGG("[{'$limit': 1e300}, {'$count': 'n'}]"), "error 5107201: invalid argument to $limit stage: Cannot represent as a 64-bit integer: $limit: 1e+300.0"},
		{AGG("[{'$skip': {'$numberDouble': 'NaN'}}, {'$count': 'n'}]"), "error 5107200: invalid argument to $skip stage: Expected an integer, but found NaN in: $skip: nan.0"},
		{AGG("[{'$limit': {'$numberDouble': 'NaN'}}]"), "error 5107201: invalid argument to $limit stage: Expected an integer, but found NaN in: $limit: nan.0"},
		{PROJ("{'$year': " DMIN "}"), "[ { \"v\" : -292275055 }, { \"v\" : -292275055 }, { \"v\" : -292275055 } ]"},
		{PROJ("{'$year': " DMAX "}"), "[ { \"v\" : 292278994 }, { \"v\" : 292278994 }, { \"v\" : 292278994 } ]"},
		{PROJ("{'$year': {'date': " DMAX ", 'timezone': '+14:00'}}"), "[ { \"v\" : 292278994 }, { \"v\" : 292278994 }, { \"v\" : 292278994 } ]"},
		{PROJ("{'$year': {'date': " DMIN ", 'timezone': '-14:00'}}"), "[ { \"v\" : -292275055 }, { \"v\" : -292275055 }, { \"v\" : -292275055 } ]"},
		{PROJ("{'$year': {'date': " DMAX ", 'timezone': 'Pacific/Kiritimati'}}"), "[ { \"v\" : 292278994 }, { \"v\" : 292278994 }, { \"v\" : 292278994 } ]"},
		{PROJ("{'$hour': " DMIN "}"), "[ { \"v\" : 16 }, { \"v\" : 16 }, { \"v\" : 16 } ]"},
		{PROJ("{'$isoWeek': " DMIN "}"), "[ { \"v\" : 19 }, { \"v\" : 19 }, { \"v\" : 19 } ]"},
		{PROJ("{'$isoWeek': " DMAX "}"), "[ { \"v\" : 33 }, { \"v\" : 33 }, { \"v\" : 33 } ]"},
		{PROJ("{'$isoWeekYear': " DMAX "}"), "[ { \"v\" : 292278994 }, { \"v\" : 292278994 }, { \"v\" : 292278994 } ]"},
		{PROJ("{'$week': " DMIN "}"), "[ { \"v\" : 20 }, { \"v\" : 20 }, { \"v\" : 20 } ]"},
		{PROJ("{'$dayOfYear': " DMIN "}"), "[ { \"v\" : 136 }, { \"v\" : 136 }, { \"v\" : 136 } ]"},
		{PROJ("{'$dateToParts': {'date': " DMIN "}}"),
		 "[ { \"v\" : { \"year\" : -292275055, \"month\" : 5, \"day\" : 16, \"hour\" : 16, \"minute\" : 47"
		 ", \"second\" : 4, \"millisecond\" : 192 } }, { \"v\" : { \"year\" : -292275055, \"month\" : 5, "
		 "\"day\" : 16, \"hour\" : 16, \"minute\" : 47, \"second\" : 4, \"millisecond\" : 192 } }, { \"v\" "
		 ": { \"year\" : -292275055, \"month\" : 5, \"day\" : 16, \"hour\" : 16, \"minute\" : 47, \"second"
		 "\" : 4, \"millisecond\" : 192 } } ]"},
		{PROJ("{'$dateToParts': {'date': " DMAX "}}"),
		 "[ { \"v\" : { \"year\" : 292278994, \"month\" : 8, \"day\" : 17, \"hour\" : 7, \"minute\" : 12, "
		 "\"second\" : 55, \"millisecond\" : 807 } }, { \"v\" : { \"year\" : 292278994, \"month\" : 8, \"d"
		 "ay\" : 17, \"hour\" : 7, \"minute\" : 12, \"second\" : 55, \"millisecond\" : 807 } }, { \"v\" : "
		 "{ \"year\" : 292278994, \"month\" : 8, \"day\" : 17, \"hour\" : 7, \"minute\" : 12, \"second\" :"
		 " 55, \"millisecond\" : 807 } } ]"},
		{PROJ("{'$dateToParts': {'date': " DMIN ", 'iso8601': true}}"),
		 "[ { \"v\" : { \"isoWeekYear\" : -292275055, \"isoWeek\" : 19, \"isoDayOfWeek\" : 7, \"hour\" : 1"
		 "6, \"minute\" : 47, \"second\" : 4, \"millisecond\" : 192 } }, { \"v\" : { \"isoWeekYear\" : -29"
		 "2275055, \"isoWeek\" : 19, \"isoDayOfWeek\" : 7, \"hour\" : 16, \"minute\" : 47, \"second\" : 4,"
		 " \"millisecond\" : 192 } }, { \"v\" : { \"isoWeekYear\" : -292275055, \"isoWeek\" : 19, \"isoDay"
		 "OfWeek\" : 7, \"hour\" : 16, \"minute\" : 47, \"second\" : 4, \"millisecond\" : 192 } } ]"},
		{PROJ("{'$dateToString': {'date': " DMIN "}}"),
		 "error 18537: Failed to optimize pipeline :: caused by :: Could not convert date to string: date component was outside the supported range of"
		 " 0-9999: -292275055"},
		{PROJ("{'$dateToString': {'date': " DMAX ", 'format': '%G-%V-%u %j %U'}}"),
		 "[ { \"v\" : \"292278994-33-7 229 33\" }, { \"v\" : \"292278994-33-7 229 33\" }, { \"v\" : \"2922"
		 "78994-33-7 229 33\" } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'millisecond'}}"), "error 5166308: Failed to optimize pipeline :: caused by :: dateDiff overflowed"},
		{PROJ("{'$dateDiff': {'startDate': " DMAX ", 'endDate': " DMIN ", 'unit': 'millisecond'}}"), "error 5166308: Failed to optimize pipeline :: caused by :: dateDiff overflowed"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'second'}}"),
		 "[ { \"v\" : 18446744073709551 }, { \"v\" : 18446744073709551 }, { \"v\" : 18446744073709551 } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'day'}}"), "[ { \"v\" : 213503982335 }, { \"v\" : 213503982335 }, { \"v\" : 213503982335 } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'week'}}"), "[ { \"v\" : 30500568905 }, { \"v\" : 30500568905 }, { \"v\" : 30500568905 } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'month'}}"), "[ { \"v\" : 7014648591 }, { \"v\" : 7014648591 }, { \"v\" : 7014648591 } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'year'}}"), "[ { \"v\" : 584554049 }, { \"v\" : 584554049 }, { \"v\" : 584554049 } ]"},
		{PROJ("{'$dateDiff': {'startDate': " DMIN ", 'endDate': " DMAX ", 'unit': 'quarter', 'timezone': '+14:00'}}"), "[ { \"v\" : 2338216197 }, { \"v\" : 2338216197 }, { \"v\" : 2338216197 } ]"},
		{PROJ("{'$dateTrunc': {'date': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'millisecond', 'binSize': " I64MAX "}}"),
		 "[ { \"v\" : { \"$date\" : \"2000-01-01T00:00:00Z\" } }, { \"v\" : { \"$date\" : \"2000-01-01T00:"
		 "00:00Z\" } }, { \"v\" : { \"$date\" : \"2000-01-01T00:00:00Z\" } } ]"},
		{PROJ("{'$dateTrunc': {'date': " DMIN ", 'unit': 'millisecond', 'binSize': 7}}"), "error 5439000: Failed to optimize pipeline :: caused by :: dateTrunc overflowed"},
		{PROJ("{'$dateTrunc': {'date': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'day', 'binSize': " I64MAX "}}"), "error 5439006: Failed to optimize pipeline :: caused by :: dateTrunc unsupported binSize value"},
		{PROJ("{'$dateTrunc': {'date': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'month', 'binSize': " I64MAX "}}"), "error 5439006: Failed to optimize pipeline :: caused by :: dateTrunc unsupported binSize value"},
		{PROJ("{'$dateTrunc': {'date': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'year', 'binSize': " I64MAX "}}"), "error 5439006: Failed to optimize pipeline :: caused by :: dateTrunc unsupported binSize value"},
		{PROJ("{'$dateTrunc': {'date': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'week', 'binSize': " I64MAX "}}"), "error 5439006: Failed to optimize pipeline :: caused by :: dateTrunc unsupported binSize value"},
		{PROJ("{'$dateTrunc': {'date': " DMAX ", 'unit': 'week', 'binSize': 3, 'timezone': '+14:00'}}"),
		 "[ { \"v\" : { \"$date\" : \"292278994-08-16T10:00:00Z\" } }, { \"v\" : { \"$date\" : \"292278994"
		 "-08-16T10:00:00Z\" } }, { \"v\" : { \"$date\" : \"292278994-08-16T10:00:00Z\" } } ]"},
		{PROJ("{'$dateTrunc': {'date': " DMIN ", 'unit': 'year', 'binSize': 3}}"), "error 5166406: Failed to optimize pipeline :: caused by :: dateAdd overflowed"},
		{PROJ("{'$dateAdd': {'startDate': " DMAX ", 'unit': 'millisecond', 'amount': 1}}"), "error 5166406: Failed to optimize pipeline :: caused by :: $dateAdd overflowed"},
		{PROJ("{'$dateAdd': {'startDate': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'year', 'amount': " I64MAX "}}"), "error 5976500: Failed to optimize pipeline :: caused by :: invalid dateAdd 'amount' parameter value: 9223372036854775807 year"},
		{PROJ("{'$dateAdd': {'startDate': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'month', 'amount': " I64MIN "}}"), "error 5976500: Failed to optimize pipeline :: caused by :: invalid dateAdd 'amount' parameter value: -9223372036854775808 month"},
		{PROJ("{'$dateAdd': {'startDate': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'week', 'amount': " I64MIN "}}"), "error 5976500: Failed to optimize pipeline :: caused by :: invalid dateAdd 'amount' parameter value: -9223372036854775808 week"},
		{PROJ("{'$dateSubtract': {'startDate': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'day', 'amount': " I64MIN "}}"), "error 6045000: Failed to optimize pipeline :: caused by :: invalid $dateSubtract 'amount' parameter value: -9223372036854775808"},
		{PROJ("{'$dateAdd': {'startDate': {'$date': '2020-01-01T00:00:00Z'}, 'unit': 'hour', 'amount': 1e300}}"), "error 5166405: Failed to optimize pipeline :: caused by :: $dateAdd expects integer amount of time units"},
		{PROJ("{'$dateFromParts': {'year': 2020, 'month': " I64MAX "}}"),
		 "error 31034: Failed to optimize pipeline :: caused by :: 'month' must evaluate to a value in the range [-32768, 32767]; value 92233720368547"
		 "75807 is not in range"},
		{PROJ("{'$dateFromParts': {'year': 2020, 'millisecond': " I64MAX "}}"), "error 15: Failed to optimize pipeline :: caused by :: Overflow casting from a lower-precision duration to a higher-precision duration"},
		{PROJ("{'$dateFromParts': {'year': 2020, 'hour': " I64MIN "}}"),
		 "error 31034: Failed to optimize pipeline :: caused by :: 'hour' must evaluate to a value in the range [-32768, 32767]; value -92233720368547"
		 "75808 is not in range"},
		{PROJ("{'$dateFromParts': {'isoWeekYear': 2020, 'isoWeek': " I64MAX "}}"),
		 "error 31034: Failed to optimize pipeline :: caused by :: 'isoWeek' must evaluate to a value in the range [-32768, 32767]; value 922337203685"
		 "4775807 is not in range"},
		{PROJ("{'$dateFromParts': {'year': 2020, 'month': 1e300}}"), "error 40515: Failed to optimize pipeline :: caused by :: 'month' must evaluate to an integer, found double with value 1e+300.0"},
		{PROJ("{'$add': [" DMAX ", 1]}"), "error 15: Failed to optimize pipeline :: caused by :: date overflow"},
		{PROJ("{'$add': [" DMAX ", 1e300]}"), "error 15: Failed to optimize pipeline :: caused by :: date overflow"},
		{PROJ("{'$subtract': [" DMAX ", " DMIN "]}"), "[ { \"v\" : -1 }, { \"v\" : -1 }, { \"v\" : -1 } ]"},
		{PROJ("{'$subtract': [" DMIN ", 1]}"), "error 15: Failed to optimize pipeline :: caused by :: date overflow"},
		{PROJ("{'$subtract': [" DMIN ", 1e300]}"), "error 15: Failed to optimize pipeline :: caused by :: date overflow"},
		{PROJ("{'$toDate': 1e300}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: 1e+300"},
		{PROJ("{'$toDate': {'$numberDecimal': '1E+30'}}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: 1E+30"},
		{PROJ("{'$dateToString': {'date': {'$toDate': -1e18}}}"),
		 "error 18537: Failed to optimize pipeline :: caused by :: Could not convert date to string: date component was outside the supported range of"
		 " 0-9999: -31686769"},
	};
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* the audit: arithmetic and sizes from request numbers */
static void
test_audit_expressions(void)
{
	static const ocase_t cases[] = {
		{PROJ("{'$abs': " I64MIN "}"), "error 28680: Failed to optimize pipeline :: caused by :: can't take $abs of long long min"},
		{PROJ("{'$abs': {'$numberInt': '-2147483648'}}"), "[ { \"v\" : 2147483648 }, { \"v\" : 2147483648 }, { \"v\" : 2147483648 } ]"},
		{PROJ("{'$multiply': [" I64MIN ", -1]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$multiply': [{'$numberInt': '-2147483648'}, -1]}"), "[ { \"v\" : 2147483648 }, { \"v\" : 2147483648 }, { \"v\" : 2147483648 } ]"},
		{PROJ("{'$add': [" I64MAX ", 1]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$subtract': [" I64MIN ", 1]}"),
		 "[ { \"v\" : -9223372036854775808.0 }, { \"v\" : -9223372036854775808.0 }, { \"v\" : -92233720368"
		 "54775808.0 } ]"},
		{PROJ("{'$subtract': [0, " I64MIN "]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$mod': [" I64MIN ", -1]}"), "[ { \"v\" : 0 }, { \"v\" : 0 }, { \"v\" : 0 } ]"},
		{PROJ("{'$mod': [{'$numberInt': '-2147483648'}, -1]}"), "[ { \"v\" : 0 }, { \"v\" : 0 }, { \"v\" : 0 } ]"},
		{PROJ("{'$mod': [" I64MIN ", 0]}"), "error 16610: Failed to optimize pipeline :: caused by :: can't $mod by zero"},
		{PROJ("{'$divide': [" I64MIN ", -1]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$toInt': 1e300}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: 1e+300"},
		{PROJ("{'$toInt': " I64MIN "}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: "},
		{PROJ("{'$toLong': 1e300}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: 1e+300"},
		{PROJ("{'$toLong': {'$numberDouble': '-9.3e18'}}"),
		 "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: -9.3e+18"},
		{PROJ("{'$toLong': {'$numberDecimal': '1E+30'}}"), "error 241: Failed to optimize pipeline :: caused by :: Conversion would overflow target type in $convert with no onError value: 1E+30"},
		{PROJ("{'$toInt': {'$numberDouble': 'NaN'}}"), "error 241: Failed to optimize pipeline :: caused by :: Attempt to convert NaN value to integer type in $convert with no onError value"},
		{PROJ("{'$convert': {'input': 1e300, 'to': 'int', 'onError': 'e'}}"), "[ { \"v\" : \"e\" }, { \"v\" : \"e\" }, { \"v\" : \"e\" } ]"},
		{PROJ("{'$round': [" I64MIN ", -18]}"),
		 "[ { \"v\" : -9000000000000000000 }, { \"v\" : -9000000000000000000 }, { \"v\" : -900000000000000"
		 "0000 } ]"},
		{PROJ("{'$round': [" I64MAX ", -1]}"),
		 "error 51080: Failed to optimize pipeline :: caused by :: invalid conversion from Decimal128 result in $round resulting from arguments: [9223"
		 "372036854775807, -1]"},
		{PROJ("{'$round': [" I64MIN ", -19]}"),
		 "error 51080: Failed to optimize pipeline :: caused by :: invalid conversion from Decimal128 result in $round resulting from arguments: [-922"
		 "3372036854775808, -19]"},
		{PROJ("{'$trunc': [" I64MIN ", -18]}"),
		 "[ { \"v\" : -9000000000000000000 }, { \"v\" : -9000000000000000000 }, { \"v\" : -900000000000000"
		 "0000 } ]"},
		{PROJ("{'$round': [{'$numberInt': '2147483647'}, -1]}"), "[ { \"v\" : 2147483650 }, { \"v\" : 2147483650 }, { \"v\" : 2147483650 } ]"},
		{PROJ("{'$round': [1.5, " I64MIN "]}"),
		 "error 51083: Failed to optimize pipeline :: caused by :: cannot apply $round with precision value -9223372036854775808 value must be in [-20"
		 ", 100]"},
		{PROJ("{'$pow': [" I64MIN ", 2]}"),
		 "[ { \"v\" : 8.5070591730234615866e+37 }, { \"v\" : 8.5070591730234615866e+37 }, { \"v\" : 8.5070"
		 "591730234615866e+37 } ]"},
		{PROJ("{'$pow': [-1, " I64MIN "]}"), "[ { \"v\" : 1 }, { \"v\" : 1 }, { \"v\" : 1 } ]"},
		{PROJ("{'$pow': [2, 63]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$pow': [-2, 63]}"),
		 "[ { \"v\" : -9223372036854775808 }, { \"v\" : -9223372036854775808 }, { \"v\" : -922337203685477"
		 "5808 } ]"},
		{PROJ("{'$bitNot': " I64MIN "}"),
		 "[ { \"v\" : 9223372036854775807 }, { \"v\" : 9223372036854775807 }, { \"v\" : 922337203685477580"
		 "7 } ]"},
		{PROJ("{'$sum': [" I64MAX ", 1]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$avg': [" I64MAX ", " I64MAX "]}"),
		 "[ { \"v\" : 9223372036854775808.0 }, { \"v\" : 9223372036854775808.0 }, { \"v\" : 92233720368547"
		 "75808.0 } ]"},
		{PROJ("{'$range': [0, " I64MAX ", " I64MAX "]}"),
		 "error 34446: Failed to optimize pipeline :: caused by :: $range requires an ending value that can be represented as a 32-bit integer, found "
		 "value: 9223372036854775807"},
		{PROJ("{'$range': [0, 3000000000]}"),
		 "error 34446: Failed to optimize pipeline :: caused by :: $range requires an ending value that can be represented as a 32-bit integer, found "
		 "value: 3000000000"},
		{PROJ("{'$range': [{'$numberInt': '2147483640'}, {'$numberInt': '2147483647'}, 5]}"),
		 "[ { \"v\" : [ 2147483640, 2147483645 ] }, { \"v\" : [ 2147483640, 2147483645 ] }, { \"v\" : [ 21"
		 "47483640, 2147483645 ] } ]"},
		{PROJ("{'$range': [{'$numberInt': '-2147483648'}, {'$numberInt': '2147483647'}, {'$numberInt': '2147483647'}]}"),
		 "[ { \"v\" : [ -2147483648, -1, 2147483646 ] }, { \"v\" : [ -2147483648, -1, 2147483646 ] }, { \""
		 "v\" : [ -2147483648, -1, 2147483646 ] } ]"},
		{PROJ("{'$range': [0, 10, 1e300]}"),
		 "error 34448: Failed to optimize pipeline :: caused by :: $range requires a step value that can be represented as a 32-bit integer, found val"
		 "ue: 1e+300.0"},
		{PROJ("{'$substrBytes': ['abc', " I64MAX ", " I64MAX "]}"), "[ { \"v\" : \"\" }, { \"v\" : \"\" }, { \"v\" : \"\" } ]"},
		{PROJ("{'$substrBytes': ['abc', 1, " I64MIN "]}"), "[ { \"v\" : \"bc\" }, { \"v\" : \"bc\" }, { \"v\" : \"bc\" } ]"},
		{PROJ("{'$substrBytes': ['abc', 1e300, 1]}"), "[ { \"v\" : \"\" }, { \"v\" : \"\" }, { \"v\" : \"\" } ]"},
		{PROJ("{'$substrCP': ['abc', " I64MAX ", " I64MAX "]}"),
		 "error 34451: Failed to optimize pipeline :: caused by :: $substrCP: starting index cannot be represented as a 32-bit integral value: 9223372"
		 "036854775807"},
		{PROJ("{'$substrCP': ['abc', 1, {'$numberInt': '2147483647'}]}"), "[ { \"v\" : \"bc\" }, { \"v\" : \"bc\" }, { \"v\" : \"bc\" } ]"},
		{PROJ("{'$substr': ['abc', -1, " I64MIN "]}"), "error 50752: Failed to optimize pipeline :: caused by :: $substrBytes:  starting index must be non-negative (got: -1)"},
		{PROJ("{'$indexOfBytes': ['abc', 'c', " I64MAX ", " I64MAX "]}"),
		 "error 40096: Failed to optimize pipeline :: caused by :: $indexOfBytesrequires an integral starting index, found a value of type: long, with"
		 " value: 9223372036854775807"},
		{PROJ("{'$indexOfCP': ['abc', 'c', {'$numberInt': '2147483647'}]}"), "[ { \"v\" : -1 }, { \"v\" : -1 }, { \"v\" : -1 } ]"},
		{PROJ("{'$indexOfArray': [[1, 2], 2, " I64MAX ", " I64MIN "]}"),
		 "error 9711600: Failed to optimize pipeline :: caused by :: $indexOfArrayrequires an integral starting index, found a value of type: long, wi"
		 "th value: 9223372036854775807"},
		{PROJ("{'$arrayElemAt': [[1, 2], " I64MIN "]}"),
		 "error 28691: Failed to optimize pipeline :: caused by :: $arrayElemAt's second argument must be representable as a 32-bit integer: -9.22337e"
		 "+18"},
		{PROJ("{'$arrayElemAt': [[1, 2], {'$numberInt': '-2147483648'}]}"), "[ { }, { }, { } ]"},
		{PROJ("{'$arrayElemAt': [[1, 2], 1e300]}"),
		 "error 28691: Failed to optimize pipeline :: caused by :: $arrayElemAt's second argument must be representable as a 32-bit integer: 1e+300"},
		{PROJ("{'$slice': [[1, 2, 3], " I64MIN "]}"),
		 "error 28726: Failed to optimize pipeline :: caused by :: Second argument to $slice can't be represented as a 32-bit integer: -9.22337e+18"},
		{PROJ("{'$slice': [[1, 2, 3], {'$numberInt': '-2147483648'}]}"), "[ { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] } ]"},
		{PROJ("{'$slice': [[1, 2, 3], " I64MAX ", " I64MAX "]}"),
		 "error 28726: Failed to optimize pipeline :: caused by :: Second argument to $slice can't be represented as a 32-bit integer: 9.22337e+18"},
		{PROJ("{'$slice': [[1, 2, 3], " I64MIN ", 1]}"),
		 "error 28726: Failed to optimize pipeline :: caused by :: Second argument to $slice can't be represented as a 32-bit integer: -9.22337e+18"},
		{PROJ("{'$slice': [[1, 2, 3], {'$numberInt': '-2147483648'}, {'$numberInt': '2147483647'}]}"), "[ { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] } ]"},
		{PROJ("{'$firstN': {'input': [1, 2, 3], 'n': " I64MAX "}}"), "[ { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] } ]"},
		{PROJ("{'$lastN': {'input': [1, 2, 3], 'n': " I64MAX "}}"), "[ { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] }, { \"v\" : [ 1, 2, 3 ] } ]"},
		{PROJ("{'$maxN': {'input': [1, 2, 3], 'n': " I64MAX "}}"), "[ { \"v\" : [ 3, 2, 1 ] }, { \"v\" : [ 3, 2, 1 ] }, { \"v\" : [ 3, 2, 1 ] } ]"},
		{PROJ("{'$minN': {'input': [1, 2, 3], 'n': 1e300}}"), "error 5787902: Failed to optimize pipeline :: caused by :: Value for 'n' must be of integral type, but found 1e+300.0"},
		{PROJ("{'$firstN': {'input': [1, 2, 3], 'n': " I64MIN "}}"), "error 5787908: Failed to optimize pipeline :: caused by :: 'n' must be greater than 0, found -9223372036854775808"},
		{PROJ("{'$zip': {'inputs': [[1], [2, 3]], 'useLongestLength': true}}"),
		 "[ { \"v\" : [ [ 1, 2 ], [ null, 3 ] ] }, { \"v\" : [ [ 1, 2 ], [ null, 3 ] ] }, { \"v\" : [ [ 1,"
		 " 2 ], [ null, 3 ] ] } ]"},
		{PROJ("{'$split': ['abc', '']}"), "error 40087: Failed to optimize pipeline :: caused by :: $split requires a non-empty separator"},
		{PROJ("{'$replaceAll': {'input': 'aaa', 'find': '', 'replacement': 'xx'}}"), "[ { \"v\" : \"xxaxxaxxaxx\" }, { \"v\" : \"xxaxxaxxaxx\" }, { \"v\" : \"xxaxxaxxaxx\" } ]"},
		{PROJ("{'$strLenBytes': 'abc'}"), "[ { \"v\" : 3 }, { \"v\" : 3 }, { \"v\" : 3 } ]"},
		{PROJ("{'$concat': ['a', 'b']}"), "[ { \"v\" : \"ab\" }, { \"v\" : \"ab\" }, { \"v\" : \"ab\" } ]"},
		{PROJ("{'$regexFind': {'input': 'abc', 'regex': 'b', 'options': 'zz'}}"), "error 51108: $regexFind invalid flag in regex options: z"},
		{PROJ("{'$trunc': [1.5, " I64MAX "]}"),
		 "error 51083: Failed to optimize pipeline :: caused by :: cannot apply $trunc with precision value 9223372036854775807 value must be in [-20,"
		 " 100]"},
		{PROJ("{'$ltrim': {'input': 'abc', 'chars': ''}}"), "[ { \"v\" : \"abc\" }, { \"v\" : \"abc\" }, { \"v\" : \"abc\" } ]"},
		{PROJ("{'$year': {'date': " DMAX ", 'timezone': '+99:99'}}"), "[ { \"v\" : 292278994 }, { \"v\" : 292278994 }, { \"v\" : 292278994 } ]"},
		{PROJ("{'$year': {'date': " DMAX ", 'timezone': '-9999999999'}}"), "error 40485: Failed to optimize pipeline :: caused by :: unrecognized time zone identifier: \"-9999999999\""},
		{PROJ("{'$toString': " DMIN "}"),
		 "error 18537: Failed to optimize pipeline :: caused by :: Could not convert date to string: date component was outside the supported range of"
		 " 0-9999: -292275055"},
		{PROJ("{'$toString': " DMAX "}"),
		 "error 18537: Failed to optimize pipeline :: caused by :: Could not convert date to string: date component was outside the supported range of"
		 " 0-9999: 292278994"},
		{PROJ("{'$convert': {'input': " DMIN ", 'to': 'long'}}"),
		 "[ { \"v\" : -9223372036854775808 }, { \"v\" : -9223372036854775808 }, { \"v\" : -922337203685477"
		 "5808 } ]"},
		{PROJ("{'$convert': {'input': " DMIN ", 'to': 'double'}}"),
		 "[ { \"v\" : -9223372036854775808.0 }, { \"v\" : -9223372036854775808.0 }, { \"v\" : -92233720368"
		 "54775808.0 } ]"},
		{PROJ("{'$tsSecond': {'$timestamp': {'t': 4294967295, 'i': 1}}}"), "[ { \"v\" : 4294967295 }, { \"v\" : 4294967295 }, { \"v\" : 4294967295 } ]"},
		/* mongod's hash64 of the int64 -2^63 (expr_hash.c, test_hashed.c checks the algorithm) */
		{PROJ("{'$toHashedIndexKey': " I64MIN "}"),
		 "[ { \"v\" : 4532067210535695462 }, { \"v\" : 4532067210535695462 }, { \"v\" : 4532067210535695462 } ]"},
	};
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

static void
test_audit_stages(void)
{
	static const ocase_t cases[] = {
		{AGG("[{'$group': {'_id': null, 'v': {'$firstN': {'input': '$a', 'n': " I64MAX "}}}}]"), "[ { \"_id\" : null, \"v\" : [ 1, 2, 5 ] } ]"},
		{AGG("[{'$group': {'_id': null, 'v': {'$topN': {'output': '$a', 'sortBy': {'a': 1}, 'n': " I64MAX "}}}}]"), "[ { \"_id\" : null, \"v\" : [ 1, 2, 5 ] } ]"},
		{AGG("[{'$group': {'_id': null, 'v': {'$bottomN': {'output': '$a', 'sortBy': {'a': 1}, 'n': 1e300}}}}]"), "error 5787902: Value for 'n' must be of integral type, but found 1e+300.0"},
		{AGG("[{'$group': {'_id': null, 'v': {'$maxN': {'input': '$a', 'n': " I64MIN "}}}}]"), "error 5787908: 'n' must be greater than 0, found -9223372036854775808"},
		{AGG("[{'$group': {'_id': null, 's': {'$sum': " I64MAX "}}}]"), "[ { \"_id\" : null, \"s\" : 27670116110564327424.0 } ]"},
		{AGG("[{'$bucketAuto': {'groupBy': '$a', 'buckets': " I64MAX "}}]"),
		 "error 40242: The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but foun"
		 "d 9223372036854775807."},
		{AGG("[{'$bucketAuto': {'groupBy': '$a', 'buckets': {'$numberInt': '2147483647'}}}]"),
		 "[ { \"_id\" : { \"min\" : 1, \"max\" : 2 }, \"count\" : 1 }, { \"_id\" : { \"min\" : 2, \"max\" "
		 ": 5 }, \"count\" : 1 }, { \"_id\" : { \"min\" : 5, \"max\" : 5 }, \"count\" : 1 } ]"},
		{AGG("[{'$bucketAuto': {'groupBy': '$a', 'buckets': 1e300}}]"),
		 "error 40242: The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but foun"
		 "d 1e+300.0."},
		{AGG("[{'$densify': {'field': 'a', 'range': {'step': 1e-300, 'bounds': [0, 1]}}}, {'$limit': 3}]"),
		 "error 5897900: Executor error during aggregate command on namespace: o.c :: caused by :: Generated 500001 documents in"
		 " $densify, which is over the limit of 500000. Increase the 'internalQueryMaxAllowedDensifyDocs'"
		 " parameter to allow more generated documents"},
		/* -inf + step is -inf: only the cap ends the loop */
		{AGG("[{'$densify': {'field': 'a', 'range': {'step': " I64MAX ", 'bounds': [{'$numberDouble': '-Infinity'}, 0]}}}]"),
		 "error 5897900: Executor error during aggregate command on namespace: o.c :: caused by :: Generated 500001 documents in"
		 " $densify, which is over the limit of 500000. Increase the 'internalQueryMaxAllowedDensifyDocs'"
		 " parameter to allow more generated documents"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$sum': 1, 'window': {'documents': [{'$numberInt': '-2147483648'}, {'$numberInt': '2147483647'}]}}}}}, {'$project': {'v': 1}}]"),
		 "[ { \"_id\" : 1, \"v\" : 3 }, { \"_id\" : 2, \"v\" : 3 }, { \"_id\" : 3, \"v\" : 3 } ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$sum': 1, 'window': {'documents': [2147483648, 'unbounded']}}}}}]"),
		 "error 9: Numeric document-based bounds must be an integer"},
		{AGG("[{'$densify': {'field': 'a', 'range': {'step': " I64MAX ", 'bounds': [" I64MIN ", " I64MAX "]}}}]"),
		 "[ { \"a\" : -9223372036854775808.0 }, { \"a\" : 0 }, { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2,"
		 " 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" }, \"m\" : -92233720368547"
		 "75808 }, { \"_id\" : 2, \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z"
		 "\" }, \"m\" : -2147483648 }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01"
		 "-09T00:00:00Z\" } } ]"},
		{AGG("[{'$densify': {'field': 'd', 'range': {'step': " I64MAX ", 'unit': 'day', 'bounds': 'full'}}}]"),
		 "error 5976500: Executor error during aggregate command on namespace: o.c :: caused by :: invalid dateAdd 'amount' parameter"
		 " value: 9223372036854775807 day"},
		{AGG("[{'$densify': {'field': 'd', 'range': {'step': " I64MAX ", 'unit': 'millisecond', 'bounds': [" DMIN ", " DMAX "]}}}]"),
		 "[ { \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } } }, { \"d\" : { \"$dat"
		 "e\" : \"1970-01-01T00:00:00Z\" } }, { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"a"
		 "bc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 }, { \"_id"
		 "\" : 2, \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -214"
		 "7483648 }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" }"
		 " } ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$sum': 1, 'window': {'documents': [" I64MIN ", " I64MAX "]}}}}}]"), "error 9: Numeric document-based bounds must be an integer"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$sum': 1, 'window': {'documents': [" I64MAX ", " I64MAX "]}}}}}]"), "error 9: Numeric document-based bounds must be an integer"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$sum': 1, 'window': {'range': [" I64MIN ", " I64MAX "]}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : 3 }, { \"_id\" : 2, \"a\" : 2, \"arr"
		 "\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" : 3 }, {"
		 " \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" }, \"v\" : 3 "
		 "} ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'v': {'$sum': 1, 'window': {'range': [" I64MIN ", " I64MAX "], 'unit': 'day'}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : 3 }, { \"_id\" : 2, \"a\" : 2, \"arr"
		 "\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" : 3 }, {"
		 " \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" }, \"v\" : 3 "
		 "} ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$shift': {'output': '$a', 'by': " I64MIN "}}}}}]"), "error 9: '$shift:by' field must be an integer, but found by: long"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$shift': {'output': '$a', 'by': {'$numberInt': '2147483647'}}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : null }, { \"_id\" : 2, \"a\" : 2, \""
		 "arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" : nul"
		 "l }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" }, \"v"
		 "\" : null } ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$expMovingAvg': {'input': '$a', 'N': " I64MAX "}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : 1.0 }, { \"_id\" : 2, \"a\" : 2, \"a"
		 "rr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" : 1.0 "
		 "}, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" }, \"v\" "
		 ": 1.0 } ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'a': 1}, 'output': {'v': {'$firstN': {'input': '$a', 'n': " I64MAX "}, 'window': {'documents': [-1, 1]}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : [ 1, 2 ] }, { \"_id\" : 2, \"a\" : 2"
		 ", \"arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" :"
		 " [ 1, 2, 5 ] }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00"
		 "Z\" }, \"v\" : [ 2, 5 ] } ]"},
		{AGG("[{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'v': {'$derivative': {'input': '$a', 'unit': 'week'}, 'window': {'documents': [-1, 0]}}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"v\" : null }, { \"_id\" : 2, \"a\" : 2, \""
		 "arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"v\" : 6.9"
		 "999999999904503056 }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00"
		 ":00:00Z\" }, \"v\" : 3.0 } ]"},
		{AGG("[{'$fill': {'sortBy': {'a': 1}, 'output': {'b': {'method': 'linear'}}}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808, \"b\" : null }, { \"_id\" : 2, \"a\" : 2, \""
		 "arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648, \"b\" : nul"
		 "l }, { \"_id\" : 3, \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" } } ]"},
		{AGG("[{'$graphLookup': {'from': 'c', 'startWith': '$a', 'connectFromField': 'a', 'connectToField': 'a', 'as': 'g', 'maxDepth': " I64MAX "}}, {'$project': {'g': 0}}]"),
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 }, { \"_id\" : 2, \"a\" : 2, \"arr\" : [  ], "
		 "\"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"_id\" : 3, \"a\" : "
		 "5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" } } ]"},
		{AGG("[{'$graphLookup': {'from': 'c', 'startWith': '$a', 'connectFromField': 'a', 'connectToField': 'a', 'as': 'g', 'maxDepth': 1e300}}]"), "error 40102: maxDepth could not be represented as a long long: 1e+300.0"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': " I64MIN "}}}",
		 "[ { \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:"
		 "00Z\" }, \"m\" : -9223372036854775808 }, { \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"20"
		 "20-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2"
		 "020-01-09T00:00:00Z\" } } ]"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': [" I64MIN ", " I64MAX "]}}}",
		 "[ { \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:"
		 "00Z\" }, \"m\" : -9223372036854775808 }, { \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"20"
		 "20-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2"
		 "020-01-09T00:00:00Z\" } } ]"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': [" I64MAX ", 1]}}}",
		 "[ { \"a\" : 1, \"arr\" : [  ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" }"
		 ", \"m\" : -9223372036854775808 }, { \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-0"
		 "2T00:00:00Z\" }, \"m\" : -2147483648 }, { \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-"
		 "09T00:00:00Z\" } } ]"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': [{'$numberInt': '-2147483648'}, 1]}}}",
		 "[ { \"a\" : 1, \"arr\" : [ 1 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" "
		 "}, \"m\" : -9223372036854775808 }, { \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"2020-01-"
		 "02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01"
		 "-09T00:00:00Z\" } } ]"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': 1e300}}}",
		 "[ { \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:"
		 "00Z\" }, \"m\" : -9223372036854775808 }, { \"a\" : 2, \"arr\" : [  ], \"d\" : { \"$date\" : \"20"
		 "20-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"a\" : 5, \"b\" : 1, \"d\" : { \"$date\" : \"2"
		 "020-01-09T00:00:00Z\" } } ]"},
		/* make fuzz: NaN went through an int cast (safeNumberInt: 0) */
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': {'$numberDouble': 'NaN'}}}, 'limit': 1}",
		 "[ { \"a\" : 1, \"arr\" : [  ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 } ]"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': [0, {'$numberDouble': 'NaN'}]}}}",
		 "error 31259: $slice limit must be positive, got 0"},
		{"{'find': 'c', 'projection': {'_id': 0, 'arr': {'$slice': [{'$numberDouble': 'NaN'}, 2]}}, 'limit': 1}",
		 "[ { \"a\" : 1, \"arr\" : [ 1, 2 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 } ]"},
		{"{'find': 'c', 'filter': {'arr.99999999999': 1}}", "[ ]"},
		{"{'find': 'c', 'filter': {'arr.9223372036854775808': 1}}", "[ ]"},
		{"{'find': 'c', 'filter': {'arr': {'$size': " I64MAX "}}}", "error 2: Failed to parse $size. Cannot represent $size: 9223372036854775807 in an int"},
		{"{'find': 'c', 'filter': {'a': {'$mod': [" I64MIN ", 0]}}}", "[ ]"},
		{"{'find': 'c', 'filter': {'a': {'$mod': [-1, " I64MIN "]}}}", "[ ]"},
		{"{'find': 'c', 'filter': {'m': {'$mod': [-1, 0]}}}",
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 }, { \"_id\" : 2, \"a\" : 2, \"arr\" : [  ], "
		 "\"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648 } ]"},
		{"{'find': 'c', 'filter': {'a': {'$mod': [1e300, 0]}}}",
		 "error 2: malformed mod, divisor value is invalid :: caused by :: Out of bounds coercing to integ"
		 "ral value"},
		{"{'find': 'c', 'filter': {'a': {'$bitsAllSet': " I64MIN "}}}", "error 9: Expected a positive number in: $bitsAllSet: -9223372036854775808"},
		{"{'find': 'c', 'filter': {'a': {'$bitsAllSet': [" I64MAX "]}}}", "error 2: Failed to parse bit position. Cannot represent 0: 9223372036854775807 in an int"},
		{"{'find': 'c', 'filter': {'a': {'$type': " I64MIN "}}}", "error 2: Invalid numerical type code: -9223372036854775808"},
		{"{'find': 'c', 'filter': {'$sampleRate': 1e300}}", "error 2: numeric argument to $sampleRate must be in [0, 1]"},
		{"{'find': 'c', 'filter': {'a': {'$regex': 'a', '$options': 'zzzz'}}}", "[ ]"},
		{"{'find': 'c', 'sort': {'a': " I64MIN "}}", "error 15975: $sort key ordering must be 1 (for ascending) or -1 (for descending)"},
		{"{'find': 'c', 'sort': {'a': -1}, 'limit': " I64MAX ", 'projection': {'a': 1}}", "[ { \"_id\" : 3, \"a\" : 5 }, { \"_id\" : 2, \"a\" : 2 }, { \"_id\" : 1, \"a\" : 1 } ]"},
		{"{'find': 'c', 'sort': {'a': -1}, 'skip': " I64MAX ", 'limit': " I64MAX "}", "[ ]"},
		{"{'find': 'c', 'sort': {'a': -1}, 'skip': 1, 'limit': " I64MAX ", 'projection': {'a': 1}}", "[ { \"_id\" : 2, \"a\" : 2 }, { \"_id\" : 1, \"a\" : 1 } ]"},
		{AGG("[{'$sort': {'a': 1}}, {'$skip': 1}, {'$limit': " I64MAX "}, {'$project': {'a': 1}}]"), "[ { \"_id\" : 2, \"a\" : 2 }, { \"_id\" : 3, \"a\" : 5 } ]"},
		{AGG("[{'$sort': {'a': 1}}, {'$limit': " I64MAX "}, {'$skip': " I64MAX "}]"), "[ ]"},
		{AGG("[{'$sort': {'a': 1}}, {'$skip': " I64MAX "}, {'$limit': " I64MAX "}]"), "[ ]"},
		{AGG("[{'$match': {}}, {'$skip': " I64MAX "}, {'$skip': " I64MAX "}, {'$limit': 1}]"), "[ ]"},
		{AGG("[{'$project': {'a': 1}}, {'$sort': {'a': 1}}, {'$skip': " I64MAX "}, {'$limit': " I64MAX "}]"), "[ ]"},
		{AGG("[{'$project': {'a': 1}}, {'$sort': {'a': -1}}, {'$skip': 2}, {'$limit': " I64MAX "}]"), "[ { \"_id\" : 1, \"a\" : 1 } ]"},
		{AGG("[{'$project': {'a': 1}}, {'$skip': " I64MAX "}, {'$skip': " I64MAX "}]"), "[ ]"},
		{AGG("[{'$project': {'a': 1}}, {'$limit': " I64MAX "}, {'$skip': " I64MAX "}, {'$limit': " I64MAX "}]"), "[ ]"},
		{AGG("[{'$limit': " I64MAX "}, {'$limit': " I64MAX "}, {'$skip': 1}, {'$project': {'a': 1}}]"), "[ { \"_id\" : 2, \"a\" : 2 }, { \"_id\" : 3, \"a\" : 5 } ]"},
		{"{'count': 'c', 'query': {'a': {'$gt': 0}}, 'skip': 1, 'limit': " I64MAX "}", "{ \"n\" : 2 }"},
		{"{'find': 'c', 'maxTimeMS': " I64MAX "}", "error 2: 9223372036854775807 value for maxTimeMS is out of range [0, 2147483647]"},
		{"{'find': 'c', 'maxTimeMS': 1e300}", "error 2: maxTimeMS has non-integral value"},
		{"{'aggregate': 'c', 'pipeline': [], 'cursor': {'batchSize': " I64MIN "}}",
		 "error 51024: BSON field 'batchSize' value must be >= 0, actual value '-9223372036854775808'"},
		{"{'aggregate': 'c', 'pipeline': [], 'cursor': {'batchSize': 1e300}}",
		 "[ { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"s\" : \"abc\", \"d\" : { \"$date\" : \"2020"
		 "-01-01T00:00:00Z\" }, \"m\" : -9223372036854775808 }, { \"_id\" : 2, \"a\" : 2, \"arr\" : [  ], "
		 "\"d\" : { \"$date\" : \"2020-01-02T00:00:00Z\" }, \"m\" : -2147483648 }, { \"_id\" : 3, \"a\" : "
		 "5, \"b\" : 1, \"d\" : { \"$date\" : \"2020-01-09T00:00:00Z\" } } ]"},
		{"{'distinct': 'c', 'key': 'arr.99999999999'}", "{ \"values\" : [  ] }"},
		{"{'getMore': " I64MIN ", 'collection': 'c', 'batchSize': " I64MIN "}",
		 "error 51024: BSON field 'batchSize' value must be >= 0, actual value '-9223372036854775808'"},
		/* window and fill arithmetic on dates at the ends of the range */
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'x': {'$derivative': {'input': '$v', 'unit': 'week'}, 'window': {'documents': [-1, 0]}}}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } }, \"x\" : null }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v"
		 "\" : 3, \"n\" : 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07"
		 ":12:55.807Z\" }, \"x\" : 1.3114509478384661634e-10 }, { \"_id\" : 2, \"d\" : { \"$date\" : \"292"
		 "278994-08-17T07:12:55.807Z\" }, \"v\" : 2, \"n\" : 9223372036854775807, \"w\" : 1, \"x\" : -6.55"
		 "72547391923308169e-11 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'x': {'$integral': {'input': '$v', 'unit': 'millisecond'}, 'window': {'documents': ['unbounded', 'current']}}}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } }, \"x\" : 0.0 }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v\""
		 " : 3, \"n\" : 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07:"
		 "12:55.807Z\" }, \"x\" : 18446744073709551616.0 }, { \"_id\" : 2, \"d\" : { \"$date\" : \"2922789"
		 "94-08-17T07:12:55.807Z\" }, \"v\" : 2, \"n\" : 9223372036854775807, \"w\" : 1, \"x\" : 415051741"
		 "65846491136.0 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'x': {'$sum': '$v', 'window': {'range': [-1, 1], 'unit': 'week'}}}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } }, \"x\" : 1 }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v\" :"
		 " 3, \"n\" : 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07:12"
		 ":55.807Z\" }, \"x\" : 3 }, { \"_id\" : 2, \"d\" : { \"$date\" : \"292278994-08-17T07:12:55.807Z"
		 "\" }, \"v\" : 2, \"n\" : 9223372036854775807, \"w\" : 1, \"x\" : 2 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'x': {'$sum': '$v', 'window': {'range': [" I64MIN ", 0], 'unit': 'millisecond'}}}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } }, \"x\" : 1 }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v\" :"
		 " 3, \"n\" : 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07:12"
		 ":55.807Z\" }, \"x\" : 4 }, { \"_id\" : 2, \"d\" : { \"$date\" : \"292278994-08-17T07:12:55.807Z"
		 "\" }, \"v\" : 2, \"n\" : 9223372036854775807, \"w\" : 1, \"x\" : 5 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'d': 1}, 'output': {'w': {'$linearFill': '$w'}}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } }, \"w\" : null }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v"
		 "\" : 3, \"n\" : 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07"
		 ":12:55.807Z\" } }, { \"_id\" : 2, \"d\" : { \"$date\" : \"292278994-08-17T07:12:55.807Z\" }, \"v"
		 "\" : 2, \"n\" : 9223372036854775807, \"w\" : 1 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$setWindowFields': {'sortBy': {'v': 1}, 'output': {'d2': {'$linearFill': '$d2'}}}}], 'cursor': {}}",
		 "error 6050106: Executor error during aggregate command on namespace: o.e :: caused by :: Value to be filled must be "
		 "numeric for $linearFill, but was date"},
		{"{'aggregate': 'e', 'pipeline': [{'$densify': {'field': 'd', 'range': {'step': 1, 'unit': 'month', 'bounds': 'full'}}}, {'$limit': 2}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"d\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775808\" } }, \"v\" :"
		 " 1, \"n\" : -9223372036854775808, \"d2\" : { \"$date\" : { \"$numberLong\" : \"-9223372036854775"
		 "808\" } } }, { \"_id\" : 3, \"d\" : { \"$date\" : \"1970-01-01T00:00:00Z\" }, \"v\" : 3, \"n\" :"
		 " 1.000000000000000011e+308, \"w\" : 5, \"d2\" : { \"$date\" : \"292278994-08-17T07:12:55.807Z\" "
		 "} } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$densify': {'field': 'd', 'range': {'step': " I64MAX ", 'unit': 'year', 'bounds': 'full'}}}], 'cursor': {}}",
		 "error 5976500: Executor error during aggregate command on namespace: o.e :: caused by :: invalid dateAdd 'amount' pa"
		 "rameter value: 9223372036854775807 year"},
		{"{'aggregate': 'e', 'pipeline': [{'$bucketAuto': {'groupBy': '$n', 'buckets': 2, 'granularity': 'POWERSOF2'}}], 'cursor': {}}", "error 238: $bucketAuto with 'granularity' is not supported by Tamga yet"},
		{"{'aggregate': 'e', 'pipeline': [{'$bucketAuto': {'groupBy': '$n', 'buckets': 2, 'granularity': 'R5'}}], 'cursor': {}}", "error 238: $bucketAuto with 'granularity' is not supported by Tamga yet"},
		{"{'aggregate': 'e', 'pipeline': [{'$bucket': {'groupBy': '$n', 'boundaries': [" I64MIN ", 0, " I64MAX "], 'default': 'x'}}], 'cursor': {}}", "[ { \"_id\" : -9223372036854775808, \"count\" : 1 }, { \"_id\" : \"x\", \"count\" : 2 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$group': {'_id': null, 'a': {'$avg': '$n'}, 's': {'$stdDevPop': '$n'}, 'm': {'$median': {'input': '$n', 'method': 'approximate'}}}}], 'cursor': {}}",
		 "[ { \"_id\" : null, \"a\" : 3.3333333333333332036e+307, \"s\" : { \"$numberDouble\" : \"Infinity"
		 "\" }, \"m\" : 9223372036854775808.0 } ]"},
		{"{'aggregate': 'e', 'pipeline': [{'$project': {'x': {'$dateFromString': {'dateString': '99999999-01-01'}}}}], 'cursor': {}}", "error 241: Failed to optimize pipeline :: caused by :: Error parsing date string '99999999-01-01'"},
		{"{'aggregate': 'e', 'pipeline': [{'$project': {'x': {'$dateFromString': {'dateString': '2020-01-01', 'format': '%Y%Y%Y%Y-%m-%d'}}}}], 'cursor': {}}", "error 241: Failed to optimize pipeline :: caused by :: Error parsing date string '2020-01-01'"},
		{"{'aggregate': 'e', 'pipeline': [{'$sort': {'d': 1}}, {'$project': {'x': {'$subtract': ['$d', {'$literal': " DMIN "}]}}}], 'cursor': {}}",
		 "[ { \"_id\" : 1, \"x\" : 0 }, { \"_id\" : 3, \"x\" : -9223372036854775808 }, { \"_id\" : 2, \"x"
		 "\" : -1 } ]"},
		{"{'killCursors': 'c', 'cursors': [" I64MIN "]}",
		 "{ \"cursorsKilled\" : [  ], \"cursorsNotFound\" : [ -9223372036854775808 ], \"cursorsAlive\" : ["
		 "  ], \"cursorsUnknown\" : [  ] }"},
	};
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

#define UPD(u) "{'update': 'u', 'updates': [{'q': {'_id': 1}, 'u': " u "}]}"

static void
test_audit_updates(void)
{
	static const ocase_t cases[] = {
		{UPD("{'$push': {'arr': {'$each': [9], '$slice': " I64MIN "}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$push': {'arr': {'$each': [9], '$slice': " I64MAX "}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$push': {'arr': {'$each': [9], '$slice': 1e300}}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 2, \"errmsg\" : "
		 "\"The value for $slice must be an integer value but was given type: double\" } ] }"},
		{UPD("{'$push': {'arr': {'$each': [9], '$position': " I64MIN "}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$push': {'arr': {'$each': [9], '$position': " I64MAX "}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$push': {'arr': {'$each': [9], '$position': {'$numberInt': '-2147483648'}}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$pop': {'arr': " I64MIN "}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 9, \"errmsg\" : "
		 "\"$pop expects 1 or -1, found: -9223372036854775808\" } ] }"},
		{UPD("{'$pop': {'arr': 1e300}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 9, \"errmsg\" : "
		 "\"Expected an integer: arr: 1e+300.0\" } ] }"},
		{UPD("{'$set': {'arr.99999999': 1}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 34, \"errmsg\" :"
		 " \"Plan executor error during update :: caused by :: can't backfill more than 1500000 elements\" } ] }"},
		{UPD("{'$set': {'arr.9223372036854775807': 1}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 28, \"errmsg\" :"
		 " \"Plan executor error during update :: caused by :: Cannot create field '9223372036854775807' in element {arr: [ 9, 9, 1, 2, 3, 9, 9, 9 ]}\" } ] "
		 "}"},
		{UPD("{'$set': {'x.2147483648': 1}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$inc': {'n': " I64MAX "}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 2, \"errmsg\" : "
		 "\"Plan executor error during update :: caused by :: Failed to apply $inc operations to current value ((NumberInt)1) for document {_id: 1}\" } ] }"},
		{UPD("{'$inc': {'n': " I64MAX "}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 2, \"errmsg\" : "
		 "\"Plan executor error during update :: caused by :: Failed to apply $inc operations to current value ((NumberInt)1) for document {_id: 1}\" } ] }"},
		{UPD("{'$inc': {'i': {'$numberInt': '2147483647'}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$inc': {'i': {'$numberInt': '2147483647'}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$mul': {'m': " I64MIN "}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 2, \"errmsg\" : "
		 "\"Plan executor error during update :: caused by :: Failed to apply $mul operations to current value ((NumberInt)2) for document {_id: 1}\" } ] }"},
		{UPD("{'$mul': {'m': " I64MIN "}}"),
		 "{ \"n\" : 0, \"nModified\" : 0, \"writeErrors\" : [ { \"index\" : 0, \"code\" : 2, \"errmsg\" : "
		 "\"Plan executor error during update :: caused by :: Failed to apply $mul operations to current value ((NumberInt)2) for document {_id: 1}\" } ] }"},
		{UPD("{'$mul': {'m': -1}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$bit': {'b': {'and': " I64MIN "}}}"), "{ \"n\" : 1, \"nModified\" : 0 }"},
		{UPD("{'$bit': {'b': {'xor': " I64MAX "}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{UPD("{'$currentDate': {'t': {'$type': 'timestamp'}}}"), "{ \"n\" : 1, \"nModified\" : 1 }"},
		{"{'find': 'u', 'projection': {'_id': 0, 't': 0}}",
		 "[ { \"arr\" : [ 9, 9, 1, 2, 3, 9, 9, 9 ], \"n\" : 1, \"i\" : 4294967295, \"m\" : -2, \"b\" : -1,"
		 " \"x\" : { \"2147483648\" : 1 } } ]"},
		{"{'findAndModify': 'u', 'query': {'_id': 1}, 'update': {'$push': {'arr': {'$each': [], '$slice': " I64MIN "}}}, 'fields': {'_id': 1}}",
		 "{ \"lastErrorObject\" : { \"n\" : 1, \"updatedExisting\" : true }, \"value\" : { \"_id\" : 1 } }"},
		{"{'delete': 'u', 'deletes': [{'q': {}, 'limit': " I64MIN "}]}", "error 9: The limit field in delete objects must be 0 or 1. Got -9223372036854775808"},
		{"{'insert': 'u', 'documents': [{'_id': 2}], 'maxTimeMS': " I64MIN "}", "error 2: -9223372036854775808 value for maxTimeMS is out of range [0, 2147483647]"},
		{"{'createIndexes': 'u', 'indexes': [{'key': {'a': " I64MIN "}, 'name': 'a'}]}",
		 "{ \"numIndexesBefore\" : 1, \"numIndexesAfter\" : 2, \"createdCollectionAutomatically\" : false "
		 "}"},
		{"{'createIndexes': 'u', 'indexes': [{'key': {'t': 1}, 'name': 't', 'expireAfterSeconds': " I64MAX "}]}",
		 "error 67: . Index spec: { key: { t: 1 }, name: \"t\", expireAfterSeconds: 9223372036854775807 } "
		 ":: caused by :: TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"},
		{"{'createIndexes': 'u', 'indexes': [{'key': {'t': 1}, 'name': 't', 'expireAfterSeconds': 1e300}]}",
		 "error 67: . Index spec: { key: { t: 1 }, name: \"t\", expireAfterSeconds: 1e+300.0 } :: caused b"
		 "y :: TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer"},
		{"{'createIndexes': 'u', 'indexes': [{'key': {'g': '2d'}, 'name': 'g', 'bits': " I64MAX "}]}", "error 72: bits for hash must be > 0 and <= 32, but -1 bits were specified"},
		{"{'collMod': 'u', 'index': {'name': 't', 'expireAfterSeconds': " I64MIN "}}", "error 72: TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"{'create': 'capped', 'capped': true, 'size': " I64MAX ", 'max': " I64MIN "}", "error 2: BSON field 'size' value must be <= 1125899906842624, actual value '9223372036854775807'"},
		{"{'create': 'capped2', 'capped': true, 'size': 1e300}", "error 2: BSON field 'size' value must be <= 1125899906842624, actual value '9223372036854775807'"},
		{"{'create': 'capped3', 'capped': true, 'size': " I64MIN "}", "error 2: BSON field 'size' value must be >= 1, actual value '-9223372036854775808'"},
	};
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
}

/* $sample holds at most size documents on the sort's sorter: past the sort
 * memory limit it spills with allowDiskUse and fails with 292 without, as
 * mongod's (its $sample is a top-k sort on a random key). */
static void
test_sample_memory(void)
{
	char *t, cmd[320];
	int rc;
	bson_t *r;
	bool seen[60] = {false};

	for (int i = 0; i < 60; i++) {
		snprintf(cmd, sizeof(cmd), "{'insert': 's', 'documents': [{'_id': %d, 'pad': '%0200d'}]}", i, i);
		t = answer(cmd);
		TT_ASSERT(strstr(t, "error") == NULL);
		bson_free(t);
	}
	r = tt_run_sq(db, "admin", "{'setParameter': 1, 'internalQueryMaxBlockingSortMemoryUsageBytes': 4096}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	t = answer("{'aggregate': 's', 'pipeline': [{'$sample': {'size': 50}}], 'allowDiskUse': false, 'cursor': {}}");
	TT_EQ_STR(t, "error 292: Executor error during aggregate command on namespace: o.s :: caused by :: Sort exceeded memory limit of 4096 "
	          "bytes, but did not opt in to external sorting.");
	bson_free(t);
	/* spilled: 50 distinct documents of the 60, every one may come out */
	for (int round = 0; round < 12; round++) {
		int n = 0;
		bson_iter_t it, f;
		r = tt_run_sq(db, "o", "{'aggregate': 's', 'pipeline': [{'$sample': {'size': 50}}, {'$project': {'pad': 0}}],"
		              " 'allowDiskUse': true, 'cursor': {'batchSize': 100}}", &rc);
		TT_EQ_INT(rc, 0);
		if (tt_get(r, "cursor.firstBatch", &f) && bson_iter_recurse(&f, &it)) {
			bool dup[60] = {false};
			while (bson_iter_next(&it)) {
				bson_iter_t id;
				if (bson_iter_recurse(&it, &id) && bson_iter_find(&id, "_id")) {
					int v = bson_iter_int32(&id);
					TT_ASSERT(v >= 0 && v < 60 && !dup[v]);
					if (v >= 0 && v < 60)
						dup[v] = seen[v] = true;
				}
				n++;
			}
		}
		TT_EQ_INT(n, 50);
		tt_free_reply(r);
	}
	for (int i = 0; i < 60; i++)
		TT_ASSERT(seen[i]);   /* a document left out 12 times: p = 60 * (1/6)^12 < 3e-8 */
	r = tt_run_sq(db, "admin", "{'setParameter': 1, 'internalQueryMaxBlockingSortMemoryUsageBytes': 104857600}", &rc);
	tt_free_reply(r);
}

static void
setup(void)
{
	static const char *const cmds[] = {
		"{'insert': 'c', 'documents': [{'_id': 1, 'a': 1, 'arr': [1, 2, 3], 's': 'abc', 'd': {'$date': '2020-01-01T00:00:00Z'}, 'm': " I64MIN "},"
		" {'_id': 2, 'a': 2, 'arr': [], 'd': {'$date': '2020-01-02T00:00:00Z'}, 'm': {'$numberInt': '-2147483648'}},"
		" {'_id': 3, 'a': 5, 'b': 1, 'd': {'$date': '2020-01-09T00:00:00Z'}}]}",
		"{'insert': 'e', 'documents': [{'_id': 1, 'd': " DMIN ", 'v': 1, 'n': " I64MIN ", 'd2': " DMIN "},"
		" {'_id': 2, 'd': " DMAX ", 'v': 2, 'n': " I64MAX ", 'w': 1}, {'_id': 3, 'd': {'$date': '1970-01-01T00:00:00Z'}, 'v': 3,"
		" 'n': 1e308, 'w': 5, 'd2': " DMAX "}]}",
		"{'insert': 'u', 'documents': [{'_id': 1, 'arr': [1, 2, 3], 'n': 1, 'i': {'$numberInt': '1'}, 'm': 2, 'b': " I64MIN "}]}",
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *t = answer(cmds[i]);
		TT_ASSERT(strstr(t, "error") == NULL);
		bson_free(t);
	}
}

int
main(void)
{
	char *dir = tt_tmpdir("overflow");

	db = tt_open_new(dir);
	if (db == NULL)
		return 1;
	TT_RUN(setup);
	TT_RUN(test_sample_size);
	TT_RUN(test_sample_memory);
	TT_RUN(test_int64_edges);
	TT_RUN(test_audit_expressions);
	TT_RUN(test_audit_stages);
	TT_RUN(test_audit_updates);
	tt_close_rm(db, dir);
	return tt_finish();
}
