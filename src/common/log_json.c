/*
 * log_json.c -- log attributes as mongod's logv2 writes them: compact relaxed
 * extended JSON with mongod's spellings ($uuid for UUIDs, unpadded binary
 * subtypes, fmt-style doubles, dates always with milliseconds).  See
 * log_json.h for the contract; one pass over the BSON, no libbson JSON.
 */
#include "common/log_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char hex_lower[] = "0123456789abcdef";

void
tlog_json_str(bson_string_t *s, const char *v, size_t len)
{
	const unsigned char *p = (const unsigned char *)v, *end = p + len;

	bson_string_append_c(s, '"');
	while (p < end) {
		unsigned char c = *p;
		size_t n;
		uint32_t cp;

		if (c < 0x80) {
			static const char short_esc[][3] = {['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n",
			                                     ['\f'] = "\\f", ['\r'] = "\\r"};
			if (c == '"' || c == '\\') {
				char e[3] = {'\\', (char)c, 0};
				bson_string_append(s, e);
			} else if (c < sizeof short_esc / sizeof short_esc[0] && short_esc[c][0] != 0) {
				bson_string_append(s, short_esc[c]);
			} else if (c < 0x20 || c == 0x7f) {
				char e[7] = {'\\', 'u', '0', '0', hex_lower[c >> 4], hex_lower[c & 15], 0};
				bson_string_append(s, e);
			} else {
				bson_string_append_c(s, (char)c);
			}
			p++;
			continue;
		}
		/* a multi-byte sequence: its length from the lead byte, checked */
		n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
		if (n == 0 || n > (size_t)(end - p)) {
			bson_string_append(s, "\\ufffd");
			p++;
			continue;
		}
		cp = c & (0x7f >> n);
		for (size_t i = 1; i < n; i++) {
			if ((p[i] & 0xc0) != 0x80) {
				n = 0;
				break;
			}
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if (n == 0 || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff)) {
			bson_string_append(s, "\\ufffd");
			p++;
			continue;
		}
		if (n == 2 && cp < 0xa0) {   /* a C1 control character */
			char e[7] = {'\\', 'u', '0', '0', hex_lower[cp >> 4], hex_lower[cp & 15], 0};
			bson_string_append(s, e);
		} else {
			char raw[5] = {0};
			memcpy(raw, p, n);
			bson_string_append(s, raw);
		}
		p += n;
	}
	bson_string_append_c(s, '"');
}

static void
append_base64(bson_string_t *s, const uint8_t *d, uint32_t len)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char q[5] = {0};

	for (uint32_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < len ? (uint32_t)d[i + 1] << 8 : 0) |
		             (i + 2 < len ? d[i + 2] : 0);
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		q[3] = i + 2 < len ? b64[v & 63] : '=';
		bson_string_append(s, q);
	}
}

static void
append_binary(bson_string_t *s, bson_subtype_t st, const uint8_t *d, uint32_t len)
{
	if (st == BSON_SUBTYPE_UUID && len == 16) {
		char u[37];
		size_t o = 0;
		for (int i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10)
				u[o++] = '-';
			u[o++] = hex_lower[d[i] >> 4];
			u[o++] = hex_lower[d[i] & 15];
		}
		u[o] = '\0';
		bson_string_append_printf(s, "{\"$uuid\":\"%s\"}", u);
		return;
	}
	bson_string_append(s, "{\"$binary\":{\"base64\":\"");
	append_base64(s, d, len);
	bson_string_append_printf(s, "\",\"subType\":\"%x\"}}", (unsigned)st);
}

/* fmt's "{}" of a finite double: the shortest digits that read back the
 * same value, fixed notation when the decimal exponent is in [-4, 16),
 * else d[.ddd]e+XX. */
static void
append_double(bson_string_t *s, double v)
{
	char sci[40], digits[24], out[64];
	int exp10 = 0, nd = 0, o = 0;

	if (isnan(v) || isinf(v)) {
		bson_string_append(s, isnan(v) ? "{\"$numberDouble\":\"NaN\"}"
		                   : v > 0  ? "{\"$numberDouble\":\"Infinity\"}"
		                            : "{\"$numberDouble\":\"-Infinity\"}");
		return;
	}
	if (signbit(v)) {
		bson_string_append_c(s, '-');
		v = -v;
	}
	if (v == 0) {
		bson_string_append_c(s, '0');
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(sci, sizeof sci, "%.*e", p - 1, v);
		if (strtod(sci, NULL) == v)
			break;
	}
	for (const char *c = sci; *c != '\0' && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9')
			digits[nd++] = *c;
	exp10 = atoi(strchr(sci, 'e') + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (exp10 < -4 || exp10 >= 16) {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, (size_t)nd - 1);
			o += nd - 1;
		}
		o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
	} else if (exp10 < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = -1; i > exp10; i--)
			out[o++] = '0';
		memcpy(out + o, digits, (size_t)nd);
		o += nd;
	} else {
		for (int i = 0; i <= exp10 || i < nd; i++) {
			if (i == exp10 + 1)
				out[o++] = '.';
			out[o++] = i < nd ? digits[i] : '0';
		}
	}
	out[o] = '\0';
	bson_string_append(s, out);
}

/* mongod's Date_t::isFormattable: from the epoch to the end of year 9999 */
#define LOG_DATE_MAX INT64_C(253402300799999)

static void
append_date(bson_string_t *s, int64_t ms)
{
	char buf[32];
	struct tm tm;
	time_t secs;

	if (ms < 0 || ms > LOG_DATE_MAX) {
		bson_string_append_printf(s, "{\"$date\":{\"$numberLong\":\"%" PRId64 "\"}}", ms);
		return;
	}
	secs = (time_t)(ms / 1000);
	gmtime_r(&secs, &tm);
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
	bson_string_append_printf(s, "{\"$date\":\"%s.%03dZ\"}", buf, (int)(ms % 1000));
}

static void append_value(bson_string_t *s, const bson_iter_t *it);

static void
append_iter_doc(bson_string_t *s, const uint8_t *data, uint32_t len, bool is_array)
{
	bson_t sub;

	if (bson_init_static(&sub, data, len))
		tlog_json_doc(s, &sub, is_array);
	else
		bson_string_append(s, is_array ? "[]" : "{}");
}

static void
append_value(bson_string_t *s, const bson_iter_t *it)
{
	uint32_t len = 0;
	const uint8_t *data = NULL;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_DOUBLE:
		append_double(s, bson_iter_double(it));
		break;
	case BSON_TYPE_UTF8: {
		const char *v = bson_iter_utf8(it, &len);
		tlog_json_str(s, v, len);
		break;
	}
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY: {
		bool arr = bson_iter_type(it) == BSON_TYPE_ARRAY;
		if (arr)
			bson_iter_array(it, &len, &data);
		else
			bson_iter_document(it, &len, &data);
		append_iter_doc(s, data, len, arr);
		break;
	}
	case BSON_TYPE_BINARY: {
		bson_subtype_t st;
		bson_iter_binary(it, &st, &len, &data);
		append_binary(s, st, data, len);
		break;
	}
	case BSON_TYPE_UNDEFINED:
		bson_string_append(s, "{\"$undefined\":true}");
		break;
	case BSON_TYPE_OID: {
		char h[25];
		bson_oid_to_string(bson_iter_oid(it), h);
		bson_string_append_printf(s, "{\"$oid\":\"%s\"}", h);
		break;
	}
	case BSON_TYPE_BOOL:
		bson_string_append(s, bson_iter_bool(it) ? "true" : "false");
		break;
	case BSON_TYPE_DATE_TIME:
		append_date(s, bson_iter_date_time(it));
		break;
	case BSON_TYPE_NULL:
		bson_string_append(s, "null");
		break;
	case BSON_TYPE_REGEX: {
		const char *opts = NULL;
		const char *pat = bson_iter_regex(it, &opts);
		bson_string_append(s, "{\"$regularExpression\":{\"pattern\":");
		tlog_json_str(s, pat, strlen(pat));
		bson_string_append(s, ",\"options\":");
		tlog_json_str(s, opts, strlen(opts));
		bson_string_append(s, "}}");
		break;
	}
	case BSON_TYPE_DBPOINTER: {
		const char *coll = NULL;
		const bson_oid_t *oid = NULL;
		char h[25];
		bson_iter_dbpointer(it, &len, &coll, &oid);
		bson_oid_to_string(oid, h);
		bson_string_append(s, "{\"$ref\":");
		tlog_json_str(s, coll, len);
		bson_string_append_printf(s, ",\"$id\":\"%s\"}", h);
		break;
	}
	case BSON_TYPE_CODE: {
		const char *code = bson_iter_code(it, &len);
		bson_string_append(s, "{\"$code\":");
		tlog_json_str(s, code, len);
		bson_string_append_c(s, '}');
		break;
	}
	case BSON_TYPE_SYMBOL: {
		const char *sym = bson_iter_symbol(it, &len);
		bson_string_append(s, "{\"$symbol\":");
		tlog_json_str(s, sym, len);
		bson_string_append_c(s, '}');
		break;
	}
	case BSON_TYPE_CODEWSCOPE: {
		uint32_t slen = 0;
		const uint8_t *scope = NULL;
		const char *code = bson_iter_codewscope(it, &len, &slen, &scope);
		bson_string_append(s, "{\"$code\":");
		tlog_json_str(s, code, len);
		bson_string_append(s, ",\"$scope\":");
		append_iter_doc(s, scope, slen, false);
		bson_string_append_c(s, '}');
		break;
	}
	case BSON_TYPE_INT32:
		bson_string_append_printf(s, "%" PRId32, bson_iter_int32(it));
		break;
	case BSON_TYPE_TIMESTAMP: {
		uint32_t t = 0, i = 0;
		bson_iter_timestamp(it, &t, &i);
		bson_string_append_printf(s, "{\"$timestamp\":{\"t\":%" PRIu32 ",\"i\":%" PRIu32 "}}", t, i);
		break;
	}
	case BSON_TYPE_INT64:
		bson_string_append_printf(s, "%" PRId64, bson_iter_int64(it));
		break;
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t d;
		char str[BSON_DECIMAL128_STRING];
		bson_iter_decimal128(it, &d);
		bson_decimal128_to_string(&d, str);
		bson_string_append_printf(s, "{\"$numberDecimal\":\"%s\"}", str);
		break;
	}
	case BSON_TYPE_MINKEY:
		bson_string_append(s, "{\"$minKey\":1}");
		break;
	case BSON_TYPE_MAXKEY:
		bson_string_append(s, "{\"$maxKey\":1}");
		break;
	default:
		bson_string_append(s, "null");
		break;
	}
}

void
tlog_json_doc(bson_string_t *s, const bson_t *doc, bool is_array)
{
	bson_iter_t it;
	bool first = true;

	bson_string_append_c(s, is_array ? '[' : '{');
	if (bson_iter_init(&it, doc)) {
		while (bson_iter_next(&it)) {
			if (!first)
				bson_string_append_c(s, ',');
			first = false;
			if (!is_array) {
				tlog_json_str(s, bson_iter_key(&it), bson_iter_key_len(&it));
				bson_string_append_c(s, ':');
			}
			append_value(s, &it);
		}
	}
	bson_string_append_c(s, is_array ? ']' : '}');
}
