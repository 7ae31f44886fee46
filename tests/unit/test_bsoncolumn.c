/*
 * test_bsoncolumn.c -- the BSONColumn format (timeseries/bsoncolumn.c):
 * columns mongod wrote (from mongod's jstests: the binaries and the values
 * those tests say they hold) decode to those values, and our encoding of
 * them is the same bytes where mongod's is unambiguous; malformed binaries
 * are refused; and round trips -- decode(encode(column)) == column, byte
 * for byte -- over edge cases (every BSON type, missing values, runs of
 * one value, scaled doubles, NaN / -0.0 / infinities, deltas that do not
 * fit, ObjectIds of other processes, objects interleaved) and over random
 * columns.
 */
#include "tt.h"

#include <math.h>
#include <stdlib.h>

#include "timeseries/bsoncolumn.h"

static int
b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

static uint32_t
b64(const char *s, uint8_t *out)
{
	uint32_t n = 0, acc = 0;
	int bits = 0;
	for (; *s && *s != '='; s++) {
		acc = acc << 6 | (uint32_t)b64_val(*s);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (uint8_t)(acc >> bits);
		}
	}
	return n;
}

/* decode base64 binary s, expect the column json (and count) */
static void
expect_decode(const char *s, const char *want, int want_count)
{
	uint8_t buf[256];
	uint32_t n = b64(s, buf);
	bson_t out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	int count = -1;

	TT_EQ_INT(bsoncolumn_decode(buf, n, &out, &count, &err), 0);
	TT_EQ_JSON(&out, want);
	TT_EQ_INT(count, want_count);
	terr_clear(&err);
	bson_destroy(&out);
}

/* our encoding of the column json is exactly mongod's bytes s */
static void
expect_encode(const char *json, int n, const char *s)
{
	uint8_t want[256], *got = NULL;
	uint32_t wn = b64(s, want), gn = 0;
	bson_t *col = tt_json(json);
	terr_t err = TERR_INIT;

	TT_EQ_INT(bsoncolumn_encode(col, n, &got, &gn, &err), 0);
	TT_EQ_INT(gn, wn);
	TT_ASSERT(gn == wn && memcmp(got, want, wn) == 0);
	bson_free(got);
	bson_destroy(col);
}

static void
expect_invalid(const uint8_t *d, uint32_t n)
{
	bson_t out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	TT_ASSERT(bsoncolumn_decode(d, n, &out, NULL, &err) != 0);
	TT_EQ_INT(err.code, TERR_BAD_VALUE);
	terr_clear(&err);
	bson_destroy(&out);
}

static void
test_mongod_vectors(void)
{
	uint8_t buf[256];
	uint32_t n;

	/* jstests' compressed buckets (count 1 or 2) and their control.min/max */
	expect_decode("BwBk3UrposROddEVEoUA", "{ \"0\" : { \"$oid\" : \"64dd4ae9a2c44e75d1151285\" } }", 1);
	expect_decode("CQAVoWwAigEAAAA=", "{ \"0\" : { \"$date\" : \"2023-08-16T22:17:13.749Z\" } }", 1);
	expect_decode("CQDoAwAAAAAAAAA=", "{ \"0\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } }", 1);
	expect_decode("AQAAAAAAAADwPwA=", "{ \"0\" : 1.0 }", 1);
	expect_decode("AgAEAAAAZm9vAAA=", "{ \"0\" : \"foo\" }", 1);
	expect_decode("BwBo8k+1PcGdpIplQTUA", "{ \"0\" : { \"$oid\" : \"68f24fb53dc19da48a654135\" } }", 1);
	expect_decode("CQBHVKF2lQEAAAA=", "{ \"0\" : { \"$date\" : \"2025-03-08T16:40:39.239Z\" } }", 1);
	expect_decode("AgALAAAAcHJlVXBncmFkZQAA", "{ \"0\" : \"preUpgrade\" }", 1);
	/* two measurements: ObjectIds min ...50 and max ...51, one time twice */
	expect_decode("BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA",
	    "{ \"0\" : { \"$oid\" : \"65a6eba7e6d2e848e08c3750\" }, \"1\" : { \"$oid\" : \"65a6eba7e6d2e848e08c3751\" } }", 2);
	expect_decode("CQAYhggUjQEAAIAOAAAAAAAAAAA=",
	    "{ \"0\" : { \"$date\" : \"2024-01-16T20:48:39.448Z\" }, \"1\" : { \"$date\" : \"2024-01-16T20:48:39.448Z\" } }", 2);
	/* the change-stream test's binary diff appends one delta word: count 2 */
	expect_decode("CQDoAwAAAAAAAIAOAAAAAAAAAAA=",
	    "{ \"0\" : { \"$date\" : \"1970-01-01T00:00:01Z\" }, \"1\" : { \"$date\" : \"1970-01-01T00:00:01Z\" } }", 2);
	/* a column validate() accepts */
	{
		bson_t out = BSON_INITIALIZER;
		terr_t err = TERR_INIT;
		n = b64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA=", buf);
		TT_EQ_INT(bsoncolumn_decode(buf, n, &out, NULL, &err), 0);
		bson_destroy(&out);
	}

	/* mongod's BSONColumnTest.DoubleIncreaseScaleFromLiteral (1.0, 1.1: the literal, then control
	 * 0xA0 -- scale 10^1 -- and one word of zigzag(11 - 10)) and DoubleLiteralAndScaleAfterSkip
	 * (the same after a missing value: 0x80 and a word of one skip first) */
	for (int skip_first = 0; skip_first < 2; skip_first++) {
		uint8_t want[64], *got = NULL;
		uint32_t wn = 0, gn = 0;
		double one = 1.0;
		uint64_t w;
		terr_t err = TERR_INIT;
		bson_t *col = tt_json(skip_first ? "{\"1\": 1.0, \"2\": 1.1}" : "{\"0\": 1.0, \"1\": 1.1}");
		if (skip_first) {
			want[wn++] = 0x80;
			w = ~(uint64_t)0 << 4 | 14;
			for (int b = 0; b < 8; b++)
				want[wn++] = (uint8_t)(w >> (8 * b));
		}
		want[wn++] = 0x01;
		want[wn++] = 0;
		memcpy(want + wn, &one, 8);
		wn += 8;
		want[wn++] = 0xA0;
		w = 14 | (uint64_t)2 << 4;
		for (int b = 0; b < 8; b++)
			want[wn++] = (uint8_t)(w >> (8 * b));
		want[wn++] = 0;
		TT_EQ_INT(bsoncolumn_encode(col, 2 + skip_first, &got, &gn, &err), 0);
		TT_EQ_INT(gn, wn);
		TT_ASSERT(gn == wn && memcmp(got, want, wn) == 0);
		bson_free(got);
		bson_destroy(col);
	}

	/* validate()'s column: 2.0 then 999 repeats (scale 10^0: RLE 960, 30, 8, 1), byte for byte */
	{
		bson_t c;
		char k[16];
		bson_init(&c);
		for (int i = 0; i < 1000; i++) {
			bson_snprintf(k, sizeof(k), "%d", i);
			BSON_APPEND_DOUBLE(&c, k, 2.0);
		}
		n = b64("AQAAAAAAAAAAQJN/AAAAAAAAAAIAAAAAAAAABwAAAAAAAAAOAAAAAAAAAAA=", buf);
		{
			uint8_t *got = NULL;
			uint32_t gn = 0;
			terr_t err = TERR_INIT;
			bson_t out = BSON_INITIALIZER;
			TT_EQ_INT(bsoncolumn_encode(&c, 1000, &got, &gn, &err), 0);
			TT_EQ_INT(gn, n);
			TT_ASSERT(gn == n && memcmp(got, buf, n) == 0);
			TT_EQ_INT(bsoncolumn_decode(buf, n, &out, NULL, &err), 0);
			TT_ASSERT(bson_equal(&out, &c));
			bson_free(got);
			bson_destroy(&out);
		}
		bson_destroy(&c);
	}

	/* our encoder writes the same bytes for these */
	expect_encode("{\"0\": {\"$date\": 1000}}", 1, "CQDoAwAAAAAAAAA=");
	expect_encode("{\"0\": {\"$date\": 1000}, \"1\": {\"$date\": 1000}}", 2, "CQDoAwAAAAAAAIAOAAAAAAAAAAA=");
	expect_encode("{\"0\": 1.0}", 1, "AQAAAAAAAADwPwA=");
	expect_encode("{\"0\": \"preUpgrade\"}", 1, "AgALAAAAcHJlVXBncmFkZQAA");
	expect_encode("{\"0\": {\"$oid\": \"65a6eba7e6d2e848e08c3750\"}, \"1\": {\"$oid\": \"65a6eba7e6d2e848e08c3751\"}}", 2,
	    "BwBlpuun5tLoSOCMN1CALgAAAAAAAAAA");

	/* mongod's BSONColumnTest.Interleaved: objects {x:1,y:2} {x:1,y:3} {x:1,y:3} (missing) {y:4}
	 * {x:1,y:3} are 0xF1, the first object as reference, x's stream (control 0x80, one word of six
	 * 10-bit slots: 0 0 0 skip skip 0), y's (0 +1 0 skip +1 -1), EOO, EOO -- our encoder writes
	 * exactly that, and reads it back */
	{
		static const char *json = "{\"0\": {\"x\": 1, \"y\": 2}, \"1\": {\"x\": 1, \"y\": 3}, \"2\": {\"x\": 1, \"y\": 3}, "
		                          "\"4\": {\"y\": 4}, \"5\": {\"x\": 1, \"y\": 3}}";
		const uint64_t xs[6] = {0, 0, 0, 1023, 1023, 0}, ys[6] = {0, 2, 0, 1023, 2, 1};
		uint8_t want[128];
		uint32_t wn = 0;
		bson_t *col = tt_json(json), *ref = tt_json("{\"x\": 1, \"y\": 2}"), out = BSON_INITIALIZER;
		uint8_t *got = NULL;
		uint32_t gn = 0;
		terr_t err = TERR_INIT;
		want[wn++] = 0xF1;
		memcpy(want + wn, bson_get_data(ref), ref->len);
		wn += ref->len;
		for (int st = 0; st < 2; st++) {
			uint64_t w = 9;   /* selector 9: six values of 10 bits */
			for (int j = 0; j < 6; j++)
				w |= (st == 0 ? xs[j] : ys[j]) << (4 + 10 * j);
			want[wn++] = 0x80;
			for (int b = 0; b < 8; b++)
				want[wn++] = (uint8_t)(w >> (8 * b));
		}
		want[wn++] = 0;
		want[wn++] = 0;
		TT_EQ_INT(bsoncolumn_encode(col, 6, &got, &gn, &err), 0);
		TT_EQ_INT(gn, wn);
		TT_ASSERT(gn == wn && memcmp(got, want, wn) == 0);
		TT_EQ_INT(bsoncolumn_decode(want, wn, &out, NULL, &err), 0);
		TT_ASSERT(bson_equal(&out, col));
		bson_free(got);
		bson_destroy(&out);
		bson_destroy(col);
		bson_destroy(ref);
	}

	/* refused: RLE that expands past the limits (16M elements of missing values; 64 MiB of values) */
	for (int which = 0; which < 2; which++) {
		size_t blocks = which == 0 ? 600 : 250, len = 0;
		uint8_t *b = bson_malloc(7 + blocks * 129 + 1);
		bson_t out = BSON_INITIALIZER;
		terr_t err = TERR_INIT;
		if (which == 1) {
			/* an int32 literal, then deltas of 0 */
			b[len++] = 0x10;
			b[len++] = 0;
			memset(b + len, 0, 4);
			len += 4;
		}
		for (size_t k = 0; k < blocks; k++) {
			b[len++] = 0x8F;
			for (int w = 0; w < 16; w++) {
				/* which 0: a word of 60 missing values first, then RLE of them */
				uint64_t word = (which == 0 && k == 0 && w == 0) ? (~(uint64_t)0 << 4 | 1) : 0xFF;
				for (int i = 0; i < 8; i++)
					b[len++] = (uint8_t)(word >> (8 * i));
			}
		}
		b[len++] = 0;
		TT_ASSERT(bsoncolumn_decode(b, (uint32_t)len, &out, NULL, &err) != 0);
		TT_ASSERT(err.msg != NULL && strstr(err.msg, which == 0 ? "elements" : "bytes") != NULL);
		terr_clear(&err);
		bson_destroy(&out);
		bson_free(b);
	}

	/* refused: random bytes (validate's corrupt column), a literal without the final EOO */
	n = b64("O2FkZmdqYWtsamhnJ2xhamhkZzthaCdmZGphZ2hkYQ==", buf);
	expect_invalid(buf, n);
	n = b64("AgAEAAAAZm9vAA==", buf);
	expect_invalid(buf, n);
	{
		/* empty; a control block past the end; a zero selector; bytes after the EOO */
		static const uint8_t a[] = {0x80, 0x0E, 0, 0};
		static const uint8_t b[] = {0x10, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0};
		static const uint8_t c[] = {0x10, 0, 1, 0, 0, 0, 0, 0};
		static const uint8_t d[] = {0x10, 0, 1, 0, 0, 0, 0xA0, 0x0E, 0, 0, 0, 0, 0, 0, 0, 0};
		static const uint8_t e[] = {0xF1, 5, 0, 0, 0, 0, 0};
		expect_invalid(a, 0);
		expect_invalid(a, sizeof(a));
		expect_invalid(b, sizeof(b));
		expect_invalid(c, sizeof(c));
		expect_invalid(d, sizeof(d));   /* a scaled control after an int32 */
		expect_invalid(e, sizeof(e));   /* interleaved with an empty reference */
	}
}

/* ---- round trips -------------------------------------------------------------------- */

static int rt_bytes_in, rt_bytes_out;

static void
round_trip(const bson_t *col, int n)
{
	uint8_t *d = NULL;
	uint32_t l = 0;
	bson_t out = BSON_INITIALIZER;
	terr_t err = TERR_INIT;
	int count = -1;

	TT_EQ_INT(bsoncolumn_encode(col, n, &d, &l, &err), 0);
	TT_EQ_INT(bsoncolumn_decode(d, l, &out, &count, &err), 0);
	TT_EQ_INT(count, n);
	if (!(out.len == col->len && memcmp(bson_get_data(&out), bson_get_data(col), col->len) == 0)) {
		char *a = bson_as_canonical_extended_json(col, NULL), *b = bson_as_canonical_extended_json(&out, NULL);
		TT_FAIL_("round trip of %d: in %.600s\nout %.600s", n, a, b);
		bson_free(a);
		bson_free(b);
	}
	rt_bytes_in += (int)col->len;
	rt_bytes_out += (int)l;
	terr_clear(&err);
	bson_free(d);
	bson_destroy(&out);
}

static uint32_t append_check(const bson_t *c, int n, int state_mode, int max_step);

/* A round trip, and the same column built by appends (one at a time, then
 * in steps of up to 3 with the state sometimes lost): every type, every
 * edge below goes through bsoncolumn_append too. */
static void
rt_json(const char *json, int n)
{
	bson_t *c = tt_json(json);
	round_trip(c, n);
	append_check(c, n, 0, 1);
	append_check(c, n, 1, 3);
	bson_destroy(c);
}

static void
key_of(int i, char *k)
{
	bson_snprintf(k, 16, "%d", i);
}

static void
test_edges(void)
{
	char k[16];
	bson_t c;

	rt_json("{}", 0);
	rt_json("{}", 5);   /* all missing */
	rt_json("{\"0\": null, \"1\": null, \"3\": {\"$minKey\": 1}, \"4\": {\"$maxKey\": 1}, \"5\": {\"$maxKey\": 1}, "
	        "\"6\": {\"$undefined\": true}, \"7\": {\"$regularExpression\": {\"pattern\": \"a.b\", \"options\": \"i\"}}, "
	        "\"8\": {\"$regularExpression\": {\"pattern\": \"a.b\", \"options\": \"i\"}}, \"9\": {\"$symbol\": \"s\"}, "
	        "\"10\": {\"$dbPointer\": {\"$ref\": \"c\", \"$id\": {\"$oid\": \"65a6eba7e6d2e848e08c3750\"}}}, "
	        "\"11\": {\"$code\": \"x\"}, \"12\": {\"$code\": \"y\"}, \"13\": true, \"14\": false, \"15\": false}", 17);
	rt_json("{\"0\": {\"$numberDecimal\": \"1.5\"}, \"1\": {\"$numberDecimal\": \"2.5\"}, "
	        "\"2\": {\"$numberDecimal\": \"-1E+6000\"}, \"3\": {\"$numberDecimal\": \"NaN\"}}", 4);
	rt_json("{\"0\": {\"$binary\": {\"base64\": \"AAEC\", \"subType\": \"00\"}}, "
	        "\"1\": {\"$binary\": {\"base64\": \"AAED\", \"subType\": \"00\"}}, "
	        "\"2\": {\"$binary\": {\"base64\": \"AAED\", \"subType\": \"05\"}}, "
	        "\"3\": {\"$binary\": {\"base64\": \"AAEDBA==\", \"subType\": \"05\"}}, "
	        "\"4\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\", \"subType\": \"00\"}}}", 5);
	rt_json("{\"0\": \"\", \"1\": \"a\", \"2\": \"ab\", \"3\": \"abcdefghijklmnop\", \"4\": \"abcdefghijklmnopq\", "
	        "\"5\": \"abcdefghijklmnopq\", \"6\": \"\\u0000x\", \"7\": \"x\\u0000\", \"8\": \"x\"}", 9);
	rt_json("{\"0\": {\"$timestamp\": {\"t\": 5, \"i\": 1}}, \"1\": {\"$timestamp\": {\"t\": 5, \"i\": 2}}, "
	        "\"2\": {\"$timestamp\": {\"t\": 6, \"i\": 1}}, \"4\": {\"$timestamp\": {\"t\": 4294967295, \"i\": 4294967295}}}", 5);
	rt_json("{\"0\": {\"$oid\": \"65a6eba7e6d2e848e08c3750\"}, \"1\": {\"$oid\": \"65a6eba7e6d2e848e08c3751\"}, "
	        "\"2\": {\"$oid\": \"65a6eba7aaaaaaaaaa8c3752\"}, \"3\": {\"$oid\": \"ffffffffaaaaaaaaaaffffff\"}}", 4);
	/* huge deltas: int64 and date extremes, int32 extremes */
	rt_json("{\"0\": {\"$numberLong\": \"-9223372036854775808\"}, \"1\": {\"$numberLong\": \"9223372036854775807\"}, "
	        "\"2\": {\"$numberLong\": \"0\"}, \"3\": {\"$numberLong\": \"-1\"}, \"4\": {\"$numberLong\": \"1152921504606846976\"}}", 5);
	rt_json("{\"0\": {\"$date\": {\"$numberLong\": \"-9223372036854775808\"}}, "
	        "\"1\": {\"$date\": {\"$numberLong\": \"9223372036854775807\"}}, \"2\": {\"$date\": 0}}", 3);
	rt_json("{\"0\": -2147483648, \"1\": 2147483647, \"2\": -2147483648, \"3\": 0}", 4);
	/* doubles: scales, NaN, -0.0, infinities, subnormals, mixed with ints */
	rt_json("{\"0\": 20.1, \"1\": 20.2, \"2\": 20.25, \"3\": 1e300, \"4\": -0.0, \"5\": 0.0, \"6\": {\"$numberDouble\": \"NaN\"}, "
	        "\"7\": {\"$numberDouble\": \"NaN\"}, \"8\": {\"$numberDouble\": \"Infinity\"}, \"9\": {\"$numberDouble\": \"-Infinity\"}, "
	        "\"10\": 5e-324, \"11\": 3, \"12\": 3.0, \"13\": 0.1, \"14\": 0.12345678, \"15\": 0.123456789, \"16\": 9007199254740993.0}", 17);
	/* objects: interleaved, fields missing, nested, arrays, empty ones, shape changes */
	rt_json("{\"0\": {\"a\": 1, \"b\": {\"c\": 2.5, \"d\": [1, 2]}}, \"1\": {\"a\": 2, \"b\": {\"c\": 2.6, \"d\": [1, 3]}}, "
	        "\"3\": {\"b\": {\"d\": [1]}}, \"4\": {\"a\": 3}, \"5\": {\"a\": \"x\", \"b\": {\"c\": 1}}, \"6\": {\"z\": 1}, "
	        "\"7\": {}, \"8\": {}, \"9\": {\"e\": {}, \"f\": 1}, \"10\": {\"e\": {}, \"f\": 2}, \"11\": {\"f\": 3}, "
	        "\"12\": [1, 2], \"13\": [1, 2], \"14\": 7, \"15\": {\"a\": {\"b\": {\"c\": {}}}}}", 17);
	/* a missing object between objects whose reference holds an empty sub-object; strings
	 * after one too long for an integer (deltas from 0), and an empty one after it */
	rt_json("{\"0\": {\"e\": {}, \"f\": 1}, \"2\": {\"e\": {}, \"f\": 2}, \"4\": {\"a\": {\"b\": []}, \"c\": 1}, "
	        "\"6\": {\"a\": {\"b\": []}, \"c\": 2}}", 7);
	rt_json("{\"0\": \"abcdefghijklmnopqrstuvwxyz\", \"1\": \"ab\", \"2\": \"ac\", \"3\": \"abcdefghijklmnopqrstuvwxyz\", "
	        "\"4\": \"\", \"5\": \"\", \"6\": \"z\"}", 7);

	/* long runs: RLE of values, of missing values, of deltas */
	bson_init(&c);
	for (int i = 0; i < 5000; i++) {
		key_of(i, k);
		if (i < 2000)
			BSON_APPEND_DOUBLE(&c, k, 21.5);
		else if (i >= 2500 && i < 4500)
			BSON_APPEND_DATE_TIME(&c, k, 1700000000000 + (int64_t)i * 1000);
	}
	round_trip(&c, 5000);
	bson_destroy(&c);
}

/* ---- random columns --------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
rnd_value(bson_t *c, const char *k, int kind, int i, int64_t *walk)
{
	switch (kind) {
	case 0:
		BSON_APPEND_DOUBLE(c, k, (double)(int64_t)(rnd() % 2000) / (rnd() % 2 ? 10.0 : 100.0));
		break;
	case 1: {
		uint64_t u = rnd();
		double d;
		memcpy(&d, &u, 8);
		BSON_APPEND_DOUBLE(c, k, rnd() % 4 ? 15.0 + (double)(i % 7) / 10.0 : d);
		break;
	}
	case 2:
		*walk += (int64_t)(rnd() % 5) - 2;
		BSON_APPEND_INT32(c, k, (int32_t)*walk);
		break;
	case 3:
		*walk = (int64_t)((uint64_t)*walk + (rnd() % 8 == 0 ? rnd() : rnd() % 3));
		BSON_APPEND_INT64(c, k, *walk);
		break;
	case 4:
		*walk += 1000 + (rnd() % 10 == 0 ? (int64_t)(rnd() % 100000) : 0);
		BSON_APPEND_DATE_TIME(c, k, *walk);
		break;
	case 5: {
		bson_oid_t o;
		bson_oid_init(&o, NULL);
		if (rnd() % 5 == 0)
			o.bytes[5] ^= 1;
		BSON_APPEND_OID(c, k, &o);
		break;
	}
	case 6: {
		char s[40];
		int len = (int)(rnd() % 20);
		for (int j = 0; j < len; j++)
			s[j] = (char)('a' + rnd() % 3);
		s[len] = 0;
		BSON_APPEND_UTF8(c, k, s);
		break;
	}
	case 7:
		BSON_APPEND_BOOL(c, k, rnd() % 2);
		break;
	case 8: {
		bson_t sub;
		BSON_APPEND_DOCUMENT_BEGIN(c, k, &sub);
		if (rnd() % 4)
			BSON_APPEND_INT32(&sub, "x", (int32_t)(rnd() % 10));
		if (rnd() % 4)
			BSON_APPEND_DOUBLE(&sub, "y", (double)(rnd() % 100) / 10.0);
		if (rnd() % 8 == 0)
			BSON_APPEND_UTF8(&sub, "z", "q");
		if (rnd() % 6 == 0) {
			/* nested: a sub-document (sometimes empty), an array (sometimes empty) */
			bson_t n2, a2;
			BSON_APPEND_DOCUMENT_BEGIN(&sub, "n", &n2);
			if (rnd() % 3)
				BSON_APPEND_INT64(&n2, "k", (int64_t)(rnd() % 5));
			bson_append_document_end(&sub, &n2);
			BSON_APPEND_ARRAY_BEGIN(&sub, "a", &a2);
			for (int j = 0; j < (int)(rnd() % 3); j++) {
				char ak[4];
				bson_snprintf(ak, sizeof(ak), "%d", j);
				BSON_APPEND_INT32(&a2, ak, (int32_t)(rnd() % 4));
			}
			bson_append_array_end(&sub, &a2);
		}
		bson_append_document_end(c, &sub);
		break;
	}
	case 9: {
		bson_decimal128_t d = {.high = 0x3040000000000000ULL, .low = rnd() % 1000};
		BSON_APPEND_DECIMAL128(c, k, &d);
		break;
	}
	default: {
		uint8_t b[20];
		int len = (int)(rnd() % 18);
		for (int j = 0; j < len; j++)
			b[j] = (uint8_t)rnd();
		bson_append_binary(c, k, -1, rnd() % 3 ? BSON_SUBTYPE_BINARY : BSON_SUBTYPE_USER, b, (uint32_t)len);
		break;
	}
	}
}

static void
test_random(void)
{
	char k[16];

	for (int round = 0; round < 400; round++) {
		bson_t c;
		int n = (int)(rnd() % 1100), kind = (int)(rnd() % 11), miss = (int)(rnd() % 4);
		int64_t walk = (int64_t)rnd() % 1000000;
		bson_init(&c);
		for (int i = 0; i < n; i++) {
			if (miss > 0 && rnd() % (unsigned)(miss * 3) == 0)
				continue;
			key_of(i, k);
			rnd_value(&c, k, rnd() % 50 == 0 ? (int)(rnd() % 11) : kind, i, &walk);
		}
		round_trip(&c, n);
		bson_destroy(&c);
	}
}

/* Mutated columns (bytes flipped, cut short, bytes inserted) decode or
 * are refused, never read out of bounds (ASan) or loop. */
static void
test_mutations(void)
{
	char k[16];
	int refused = 0, total = 0;

	for (int round = 0; round < 300; round++) {
		bson_t c;
		int n = 1 + (int)(rnd() % 300), kind = (int)(rnd() % 11);
		int64_t walk = 0;
		uint8_t *d = NULL;
		uint32_t l = 0;
		terr_t err = TERR_INIT;
		bson_init(&c);
		for (int i = 0; i < n; i++) {
			if (rnd() % 5 == 0)
				continue;
			key_of(i, k);
			rnd_value(&c, k, kind, i, &walk);
		}
		TT_EQ_INT(bsoncolumn_encode(&c, n, &d, &l, &err), 0);
		for (int m = 0; m < 20; m++) {
			uint8_t *x = bson_malloc(l + 8);
			uint32_t xl = l;
			bson_t out = BSON_INITIALIZER;
			memcpy(x, d, l);
			switch (rnd() % 3) {
			case 0:
				for (int f = 0; f < 1 + (int)(rnd() % 3); f++)
					x[rnd() % l] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 1:
				xl = (uint32_t)(rnd() % l);
				break;
			default: {
				uint32_t at = (uint32_t)(rnd() % l);
				memmove(x + at + 1, x + at, l - at);
				x[at] = (uint8_t)rnd();
				xl = l + 1;
			}
			}
			/* an exact-size buffer, so ASan sees any read past it */
			uint8_t *y = bson_malloc(xl ? xl : 1);
			memcpy(y, x, xl);
			if (bsoncolumn_decode(y, xl, &out, NULL, &err) != 0)
				refused++;
			total++;
			terr_clear(&err);
			bson_destroy(&out);
			bson_free(y);
			bson_free(x);
		}
		bson_free(d);
		bson_destroy(&c);
	}
	TT_ASSERT(refused > total / 4);
	printf("mutations: %d of %d refused\n", refused, total);
}

/*
 * Appending (bsoncolumn_append): column c of n elements is built by appends
 * of random sizes, each edit applied to the stored bytes as a writer would
 * (the kept prefix, the patched control byte, the new bytes), and after every
 * append the stored column decodes to c's prefix.  state_mode 0: each append
 * gets the state the one before left; 1: sometimes none (the column is
 * decoded and written again); 2: sometimes a stale one (the stored bytes
 * changed behind it: it must not be trusted).  Returns the stored size.
 */
static uint32_t
append_check(const bson_t *c, int n, int state_mode, int max_step)
{
	bsoncolumn_elem_t *all = bson_malloc0(sizeof(*all) * ((size_t)n + 1));
	bson_iter_t it;
	uint8_t *stored = NULL;
	uint32_t slen = 0;
	bsoncolumn_tail_t *st = NULL, *stale = NULL;
	int have = 0;

	bson_iter_init(&it, c);
	while (bson_iter_next(&it)) {
		int k = atoi(bson_iter_key(&it));
		all[k].type = (uint8_t)bson_iter_type(&it);
		all[k].v = it.raw + it.d1;
		all[k].vlen = it.next_off - it.d1;
	}
	while (have < n || (n == 0 && stored == NULL)) {
		int step = 1 + (int)(rnd() % (unsigned)max_step);
		bsoncolumn_edit_t ed;
		bsoncolumn_tail_t *nx = NULL;
		const bsoncolumn_tail_t *use = st;
		terr_t err = TERR_INIT;
		if (step > n - have)
			step = n - have;
		if (state_mode == 1 && rnd() % 7 == 0)
			use = NULL;
		if (state_mode == 2 && stale != NULL && rnd() % 5 == 0)
			use = stale;
		if (bsoncolumn_append(stored, slen, have, use, all + have, step, &ed, &nx, &err) != 0) {
			TT_FAIL_("append of %d at %d: %s", step, have, err.msg ? err.msg : "");
			terr_clear(&err);
			break;
		}
		TT_ASSERT(ed.keep <= slen && (ed.patch_at < 0 || (uint32_t)ed.patch_at < ed.keep));
		{
			uint8_t *nb = bson_malloc((size_t)ed.keep + ed.len);
			if (ed.keep > 0)
				memcpy(nb, stored, ed.keep);
			if (ed.patch_at >= 0)
				nb[ed.patch_at] = ed.patch;
			memcpy(nb + ed.keep, ed.bytes, ed.len);
			bson_free(stored);
			stored = nb;
			slen = ed.keep + ed.len;
		}
		bson_free(ed.bytes);
		have += step;
		if (state_mode == 2) {
			bsoncolumn_tail_free(stale);
			stale = st;
		} else {
			bsoncolumn_tail_free(st);
		}
		st = nx;
		{
			/* an exact-size copy: ASan sees any read past it */
			uint8_t *y = bson_malloc(slen);
			bson_t out = BSON_INITIALIZER, want = BSON_INITIALIZER;
			bson_iter_t w;
			int count = -1;
			memcpy(y, stored, slen);
			bson_iter_init(&w, c);
			while (bson_iter_next(&w) && atoi(bson_iter_key(&w)) < have)
				bson_append_iter(&want, NULL, 0, &w);
			TT_EQ_INT(bsoncolumn_decode(y, slen, &out, &count, &err), 0);
			TT_EQ_INT(count, have);
			if (!(out.len == want.len && memcmp(bson_get_data(&out), bson_get_data(&want), want.len) == 0)) {
				char *a = bson_as_canonical_extended_json(&want, NULL), *b = bson_as_canonical_extended_json(&out, NULL);
				TT_FAIL_("append of %d to %d: want %.400s\ngot %.400s", step, have - step, a, b);
				bson_free(a);
				bson_free(b);
				have = n;
			}
			terr_clear(&err);
			bson_destroy(&out);
			bson_destroy(&want);
			bson_free(y);
		}
		if (n == 0)
			break;
	}
	bsoncolumn_tail_free(st);
	bsoncolumn_tail_free(stale);
	bson_free(stored);
	bson_free(all);
	return slen;
}

static void
test_append(void)
{
	char k[16];
	uint64_t inc_total = 0, whole_total = 0;

	/* every element kind, missing values, runs, mixed types; one at a time and in batches */
	for (int round = 0; round < 300; round++) {
		bson_t c;
		int n = (int)(rnd() % 400), kind = (int)(rnd() % 11), miss = (int)(rnd() % 4);
		int64_t walk = (int64_t)rnd() % 1000000;
		bson_init(&c);
		for (int i = 0; i < n; i++) {
			if (miss > 0 && rnd() % (unsigned)(miss * 3) == 0)
				continue;
			key_of(i, k);
			if (round % 3 == 0 && i % 50 >= 20)   /* runs of one value (RLE) */
				BSON_APPEND_INT32(&c, k, 7);
			else
				rnd_value(&c, k, rnd() % 30 == 0 ? (int)(rnd() % 11) : kind, i, &walk);
		}
		append_check(&c, n, round % 3, round % 4 == 0 ? 40 : 3);
		bson_destroy(&c);
	}
	/* the bench's shape: one measurement per append, 1,000 per bucket;
	 * stored sizes near a whole encoding */
	for (int kind = 0; kind < 5; kind++) {
		bson_t c;
		int64_t walk = 1000;
		uint8_t *d = NULL;
		uint32_t l = 0, inc;
		terr_t err = TERR_INIT;
		bson_init(&c);
		for (int i = 0; i < 1000; i++) {
			key_of(i, k);
			if (kind == 4) {
				walk += 1000;
				BSON_APPEND_DATE_TIME(&c, k, walk);
			} else if (kind == 3) {
				BSON_APPEND_DOUBLE(&c, k, 15.0 + (double)((i * 7) % 200) / 10.0);
			} else {
				rnd_value(&c, k, kind, i, &walk);
			}
		}
		inc = append_check(&c, 1000, 0, 1);
		TT_EQ_INT(bsoncolumn_encode(&c, 1000, &d, &l, &err), 0);
		inc_total += inc;
		whole_total += l;
		printf("append kind %d: 1,000 one-by-one appends %u bytes, one encoding %u\n", kind, inc, l);
		TT_ASSERT(inc <= l + l / 3 + 64);
		bson_free(d);
		bson_destroy(&c);
	}
	/* after a skip, across types, a literal after deltas, and a new column's leading missing values */
	{
		bson_t *c = tt_json("{\"3\": 1, \"4\": 2, \"6\": 2.5, \"7\": \"s\", \"8\": {\"$date\": \"2024-01-01T00:00:00Z\"}, "
		    "\"9\": {\"a\": 1}, \"10\": {\"a\": 2}, \"12\": [1], \"13\": null, \"14\": true, \"15\": 3}");
		for (int step = 1; step <= 4; step++)
			append_check(c, 17, 0, step);
		bson_destroy(c);
	}
	/* refused: CodeWScope, and bytes that are not a column */
	{
		bsoncolumn_elem_t e = {BSON_TYPE_CODEWSCOPE, (const uint8_t *)"", 0};
		bsoncolumn_edit_t ed;
		bsoncolumn_tail_t *nx = NULL;
		terr_t err = TERR_INIT;
		uint8_t junk[3] = {0x80, 1, 0};
		TT_ASSERT(bsoncolumn_append(NULL, 0, 0, NULL, &e, 1, &ed, &nx, &err) != 0);
		TT_EQ_INT(err.code, TERR_BAD_VALUE);
		terr_clear(&err);
		e.type = BSON_TYPE_NULL;
		TT_ASSERT(bsoncolumn_append(junk, 3, 1, NULL, &e, 1, &ed, &nx, &err) != 0);
		TT_ASSERT(nx == NULL && ed.bytes == NULL);
		terr_clear(&err);
	}
	printf("append: %llu bytes appended one by one, %llu encoded whole\n", (unsigned long long)inc_total,
	    (unsigned long long)whole_total);
}

int
main(void)
{
	TT_RUN(test_mongod_vectors);
	TT_RUN(test_edges);
	TT_RUN(test_random);
	TT_RUN(test_mutations);
	TT_RUN(test_append);
	printf("round trips: %d bytes of columns encoded in %d\n", rt_bytes_in, rt_bytes_out);
	return tt_finish();
}
