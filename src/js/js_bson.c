/*
 * js_bson.c -- BSON <-> JavaScript values with mongod's types, the per-thread
 * cache of compiled functions, and one-call invocation (script.h).
 *
 * The mongod classes (NumberLong, ObjectId, ...) are defined by the prelude
 * (js_helpers.c); an instance made here is an object with the class's
 * prototype and its internal value in a hidden property, the same shape the
 * constructors give, so methods and tojson work on both:
 *   NumberLong   __v: BigInt          NumberInt    __v: number
 *   NumberDecimal __v: string         ObjectId     str: hex string
 *   Timestamp    t, i: numbers        BinData      type, __b: base64
 *   DBPointer    ns, id               Code         code[, scope]
 *   DBRef        its fields ($ref, $id, $db, ...) as ordinary properties
 * This file does not define JavaScript behaviour; it only converts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "js/script.h"
#include "common/opctx.h"

#define OOM(err) terr_set((err), 139, "Out of memory")

/* ---- BSON -> JavaScript -------------------------------------------------- */

static js_ref_t push_doc_iter(js_ctx_t *ctx, bson_iter_t *it, bool array, terr_t *err);

static js_ref_t
push_kind_with(js_ctx_t *ctx, int kind, const char *prop, js_ref_t v, terr_t *err)
{
	js_ref_t o = js_push_kind_object(ctx, kind);

	if (o < 0 || v < 0 || js_set_hidden(ctx, o, prop, v) != 0)
		return OOM(err);
	return o;
}

static js_ref_t
push_base64(js_ctx_t *ctx, const uint8_t *data, uint32_t len)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = ((size_t)len + 2) / 3 * 4;
	char *out = bson_malloc(n + 1), *p = out;
	js_ref_t r;

	for (uint32_t i = 0; i < len; i += 3) {
		uint32_t a = data[i], b = i + 1 < len ? data[i + 1] : 0, c = i + 2 < len ? data[i + 2] : 0;
		uint32_t t = (a << 16) | (b << 8) | c;
		*p++ = tbl[(t >> 18) & 63];
		*p++ = tbl[(t >> 12) & 63];
		*p++ = i + 1 < len ? tbl[(t >> 6) & 63] : '=';
		*p++ = i + 2 < len ? tbl[t & 63] : '=';
	}
	*p = '\0';
	r = js_push_string(ctx, out, n);
	bson_free(out);
	return r;
}

/* new RegExp(pattern, flags) through the global constructor, keeping the
 * options JavaScript knows (i m s u; BSON's x and l have no JavaScript
 * counterpart and are dropped, as mongod's reader does). */
static js_ref_t
push_regex(js_ctx_t *ctx, const char *pattern, const char *options, terr_t *err)
{
	char flags[8];
	size_t n = 0;
	js_ref_t g, ctor, args[2], r;

	for (const char *o = options; *o != '\0' && n < sizeof(flags) - 1; o++)
		if (strchr("imsu", *o) != NULL && memchr(flags, *o, n) == NULL)
			flags[n++] = *o;
	flags[n] = '\0';
	g = js_push_global(ctx);
	ctor = js_get(ctx, g, "RegExp");
	args[0] = js_push_string(ctx, pattern, strlen(pattern));
	args[1] = js_push_string(ctx, flags, n);
	if (g < 0 || ctor < 0 || args[0] < 0 || args[1] < 0)
		return OOM(err);
	r = js_call(ctx, ctor, -1, 2, args, err);
	return r;
}

static js_ref_t
push_value_iter(js_ctx_t *ctx, bson_iter_t *it, terr_t *err)
{
	char buf[64];
	js_ref_t v, o;

	switch (bson_iter_type(it)) {
	case BSON_TYPE_DOUBLE:
		return js_push_double(ctx, bson_iter_double(it));
	case BSON_TYPE_UTF8: {
		uint32_t len;
		const char *s = bson_iter_utf8(it, &len);
		v = js_push_string(ctx, s, len);
		return v < 0 ? OOM(err) : v;
	}
	case BSON_TYPE_SYMBOL: {
		uint32_t len;
		const char *s = bson_iter_symbol(it, &len);
		v = js_push_string(ctx, s, len);
		return v < 0 ? OOM(err) : v;
	}
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY: {
		bson_iter_t child;
		bool array = bson_iter_type(it) == BSON_TYPE_ARRAY;
		if (!bson_iter_recurse(it, &child))
			return terr_set(err, 139, "invalid BSON");
		return push_doc_iter(ctx, &child, array, err);
	}
	case BSON_TYPE_BINARY: {
		bson_subtype_t st;
		uint32_t len;
		const uint8_t *data;
		bson_iter_binary(it, &st, &len, &data);
		o = js_push_kind_object(ctx, JS_K_BINDATA);
		v = push_base64(ctx, data, len);
		if (o < 0 || v < 0 || js_set_hidden(ctx, o, "__b", v) != 0)
			return OOM(err);
		v = js_push_int32(ctx, (int32_t)st);
		if (v < 0 || js_set_hidden(ctx, o, "type", v) != 0)
			return OOM(err);
		v = js_push_int32(ctx, (int32_t)len);
		if (v < 0 || js_set_hidden(ctx, o, "len", v) != 0)
			return OOM(err);
		return o;
	}
	case BSON_TYPE_UNDEFINED:
		return js_push_undefined(ctx);
	case BSON_TYPE_OID:
		bson_oid_to_string(bson_iter_oid(it), buf);
		return push_kind_with(ctx, JS_K_OBJECT_ID, "str", js_push_string(ctx, buf, 24), err);
	case BSON_TYPE_BOOL:
		return js_push_bool(ctx, bson_iter_bool(it));
	case BSON_TYPE_DATE_TIME:
		return js_push_date(ctx, (double)bson_iter_date_time(it));
	case BSON_TYPE_NULL:
		return js_push_null(ctx);
	case BSON_TYPE_REGEX: {
		const char *opts;
		const char *re = bson_iter_regex(it, &opts);
		return push_regex(ctx, re, opts != NULL ? opts : "", err);
	}
	case BSON_TYPE_DBPOINTER: {
		uint32_t len;
		const char *ns;
		const bson_oid_t *oid;
		bson_iter_dbpointer(it, &len, &ns, &oid);
		o = js_push_kind_object(ctx, JS_K_DBPOINTER);
		v = js_push_string(ctx, ns, len);
		if (o < 0 || v < 0 || js_set_hidden(ctx, o, "ns", v) != 0)
			return OOM(err);
		bson_oid_to_string(oid, buf);
		v = push_kind_with(ctx, JS_K_OBJECT_ID, "str", js_push_string(ctx, buf, 24), err);
		if (v < 0 || js_set_hidden(ctx, o, "id", v) != 0)
			return OOM(err);
		return o;
	}
	case BSON_TYPE_CODE: {
		uint32_t len;
		const char *code = bson_iter_code(it, &len);
		return push_kind_with(ctx, JS_K_CODE, "code", js_push_string(ctx, code, len), err);
	}
	case BSON_TYPE_CODEWSCOPE: {
		uint32_t len, slen;
		const uint8_t *sdata;
		bson_t scope;
		const char *code = bson_iter_codewscope(it, &len, &slen, &sdata);
		o = push_kind_with(ctx, JS_K_CODE, "code", js_push_string(ctx, code, len), err);
		if (o < 0)
			return -1;
		if (!bson_init_static(&scope, sdata, slen))
			return terr_set(err, 139, "invalid BSON");
		v = js_push_bson_doc(ctx, &scope, err);
		if (v < 0 || js_set_hidden(ctx, o, "scope", v) != 0)
			return v < 0 ? -1 : OOM(err);
		return o;
	}
	case BSON_TYPE_INT32:
		return js_push_int32(ctx, bson_iter_int32(it));
	case BSON_TYPE_TIMESTAMP: {
		uint32_t t, i;
		bson_iter_timestamp(it, &t, &i);
		o = js_push_kind_object(ctx, JS_K_TIMESTAMP);
		v = js_push_double(ctx, (double)t);
		if (o < 0 || v < 0 || js_set_hidden(ctx, o, "t", v) != 0)
			return OOM(err);
		v = js_push_double(ctx, (double)i);
		if (v < 0 || js_set_hidden(ctx, o, "i", v) != 0)
			return OOM(err);
		return o;
	}
	case BSON_TYPE_INT64:
		return push_kind_with(ctx, JS_K_NUMBER_LONG, "__v", js_push_bigint(ctx, bson_iter_int64(it)),
		                      err);
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t d;
		char s[BSON_DECIMAL128_STRING];
		bson_iter_decimal128(it, &d);
		bson_decimal128_to_string(&d, s);
		return push_kind_with(ctx, JS_K_NUMBER_DECIMAL, "__v", js_push_string(ctx, s, strlen(s)),
		                      err);
	}
	case BSON_TYPE_MAXKEY:
		o = js_push_kind_object(ctx, JS_K_MAXKEY);
		return o < 0 ? OOM(err) : o;
	case BSON_TYPE_MINKEY:
		o = js_push_kind_object(ctx, JS_K_MINKEY);
		return o < 0 ? OOM(err) : o;
	default:
		return terr_set(err, 139, "unable to convert BSON type %d to JavaScript",
		                (int)bson_iter_type(it));
	}
}

static js_ref_t
push_doc_iter(js_ctx_t *ctx, bson_iter_t *it, bool array, terr_t *err)
{
	bson_iter_t peek = *it;
	bool dbref = !array && bson_iter_next(&peek) && strcmp(bson_iter_key(&peek), "$ref") == 0;
	js_ref_t o = array ? js_push_array(ctx, 0)
	                   : dbref ? js_push_kind_object(ctx, JS_K_DBREF) : js_push_object(ctx);
	uint32_t i = 0;

	if (o < 0)
		return OOM(err);
	while (bson_iter_next(it)) {
		int mark = js_top(ctx);
		js_ref_t v = push_value_iter(ctx, it, err);
		if (v < 0)
			return -1;
		if (array ? js_set_index(ctx, o, i++, v) != 0
		          : js_set(ctx, o, bson_iter_key(it), bson_iter_key_len(it), v) != 0)
			return OOM(err);
		js_pop_to(ctx, mark);
	}
	return o;
}

js_ref_t
js_push_bson_doc(js_ctx_t *ctx, const bson_t *doc, terr_t *err)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, doc))
		return terr_set(err, 139, "invalid BSON");
	return push_doc_iter(ctx, &it, false, err);
}

js_ref_t
js_push_bson_array(js_ctx_t *ctx, const bson_t *arr, terr_t *err)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, arr))
		return terr_set(err, 139, "invalid BSON");
	return push_doc_iter(ctx, &it, true, err);
}

js_ref_t
js_push_bson_value(js_ctx_t *ctx, const bson_value_t *v, terr_t *err)
{
	bson_t holder = BSON_INITIALIZER;
	bson_iter_t it;
	js_ref_t r;

	if (v->value_type == BSON_TYPE_EOD) {
		bson_destroy(&holder);
		return js_push_undefined(ctx);
	}
	bson_append_value(&holder, "v", 1, v);
	bson_iter_init_find(&it, &holder, "v");
	r = push_value_iter(ctx, &it, err);
	bson_destroy(&holder);
	return r;
}

/* ---- JavaScript -> BSON -------------------------------------------------- */

static int append_value(js_ctx_t *ctx, bson_t *out, const char *key, size_t keylen, js_ref_t v,
                        int depth, terr_t *err);

static int
js_exception(js_ctx_t *ctx, terr_t *err)
{
	/* a getter or valueOf threw: surface it through a harmless call */
	js_ref_t g = js_push_global(ctx), f = js_get(ctx, g, "__tm_rethrow");
	if (f >= 0 && js_call(ctx, f, -1, 0, NULL, err) < 0)
		return -1;
	return terr_set(err, 139, "JavaScript exception during conversion to BSON");
}

static int
get_hidden_string(js_ctx_t *ctx, js_ref_t o, const char *name, char **s, size_t *len, terr_t *err)
{
	js_ref_t v = js_get(ctx, o, name);

	if (v < 0)
		return js_exception(ctx, err);
	if (js_type(ctx, v) != JS_T_STRING)
		return terr_set(err, TERR_BAD_VALUE, "invalid %s value", name);
	if (js_to_string(ctx, v, s, len) != 0)
		return OOM(err);
	return 0;
}

static int
get_number(js_ctx_t *ctx, js_ref_t o, const char *name, double *d, terr_t *err)
{
	js_ref_t v = js_get(ctx, o, name);

	if (v < 0 || js_to_number(ctx, v, d) != 0)
		return js_exception(ctx, err);
	return 0;
}

static int
b64_val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Decode base64 (mongod's BinData takes padded standard base64). */
static int
b64_decode(const char *s, size_t len, uint8_t **out, uint32_t *outlen)
{
	uint8_t *buf = bson_malloc(len / 4 * 3 + 3);
	uint32_t n = 0, acc = 0;
	int bits = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i], v;
		if (c == '=')
			break;
		if ((v = b64_val(c)) < 0) {
			bson_free(buf);
			return -1;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (uint8_t)(acc >> bits);
		}
	}
	*out = buf;
	*outlen = n;
	return 0;
}

static int
append_kind(js_ctx_t *ctx, bson_t *out, const char *key, size_t keylen, js_ref_t v, int kind,
            int depth, terr_t *err)
{
	char *s = NULL;
	size_t len = 0;
	double d, d2;
	int rc = 0;

	switch (kind) {
	case JS_K_NUMBER_LONG: {
		js_ref_t b = js_get(ctx, v, "__v");
		int64_t i64;
		if (b < 0)
			return js_exception(ctx, err);
		if (js_bigint_value(ctx, b, &i64) != 0)
			return terr_set(err, TERR_BAD_VALUE, "NumberLong without a value");
		bson_append_int64(out, key, (int)keylen, i64);
		return 0;
	}
	case JS_K_NUMBER_INT:
		if (get_number(ctx, v, "__v", &d, err) != 0)
			return -1;
		bson_append_int32(out, key, (int)keylen,
		                  isfinite(d) && d >= INT32_MIN && d <= INT32_MAX ? (int32_t)d : 0);
		return 0;
	case JS_K_NUMBER_DECIMAL: {
		bson_decimal128_t dec;
		if (get_hidden_string(ctx, v, "__v", &s, &len, err) != 0)
			return -1;
		if (!bson_decimal128_from_string(s, &dec))
			rc = terr_set(err, TERR_BAD_VALUE, "Input is not a valid Decimal128 value.");
		else
			bson_append_decimal128(out, key, (int)keylen, &dec);
		free(s);
		return rc;
	}
	case JS_K_OBJECT_ID: {
		bson_oid_t oid;
		if (get_hidden_string(ctx, v, "str", &s, &len, err) != 0)
			return -1;
		if (len != 24 || !bson_oid_is_valid(s, len))
			rc = terr_set(err, TERR_BAD_VALUE, "Unable to write ObjectId value.");
		else {
			bson_oid_init_from_string(&oid, s);
			bson_append_oid(out, key, (int)keylen, &oid);
		}
		free(s);
		return rc;
	}
	case JS_K_TIMESTAMP:
		if (get_number(ctx, v, "t", &d, err) != 0 || get_number(ctx, v, "i", &d2, err) != 0)
			return -1;
		if (!(d >= 0 && d <= UINT32_MAX) || !(d2 >= 0 && d2 <= UINT32_MAX))
			return terr_set(err, TERR_BAD_VALUE,
			                "Timestamp time must be a number between 0 and 4294967295");
		bson_append_timestamp(out, key, (int)keylen, (uint32_t)d, (uint32_t)d2);
		return 0;
	case JS_K_BINDATA: {
		uint8_t *data;
		uint32_t n;
		if (get_number(ctx, v, "type", &d, err) != 0)
			return -1;
		if (!(d >= 0 && d <= 255))
			return terr_set(err, 6123400, "BinData sub type must be between 0 and 255");
		if (get_hidden_string(ctx, v, "__b", &s, &len, err) != 0)
			return -1;
		if (b64_decode(s, len, &data, &n) != 0)
			rc = terr_set(err, TERR_BAD_VALUE, "Unable to write BinData value.");
		else {
			bson_append_binary(out, key, (int)keylen, (bson_subtype_t)(int)d, data, n);
			bson_free(data);
		}
		free(s);
		return rc;
	}
	case JS_K_DBPOINTER: {
		js_ref_t id = js_get(ctx, v, "id");
		char *hex = NULL;
		size_t hl;
		bson_oid_t oid;
		if (get_hidden_string(ctx, v, "ns", &s, &len, err) != 0)
			return -1;
		if (id < 0 || js_proto_kind(ctx, id) != JS_K_OBJECT_ID ||
		    get_hidden_string(ctx, id, "str", &hex, &hl, err) != 0 || hl != 24 ||
		    !bson_oid_is_valid(hex, hl)) {
			free(s);
			free(hex);
			return terr_set(err, TERR_BAD_VALUE, "DBPointer id must be an ObjectId");
		}
		bson_oid_init_from_string(&oid, hex);
		bson_append_dbpointer(out, key, (int)keylen, s, &oid);
		free(s);
		free(hex);
		return 0;
	}
	case JS_K_MINKEY:
		bson_append_minkey(out, key, (int)keylen);
		return 0;
	case JS_K_MAXKEY:
		bson_append_maxkey(out, key, (int)keylen);
		return 0;
	case JS_K_CODE: {
		js_ref_t scope;
		if (get_hidden_string(ctx, v, "code", &s, &len, err) != 0)
			return -1;
		scope = js_get(ctx, v, "scope");
		if (scope >= 0 && js_type(ctx, scope) == JS_T_OBJECT) {
			bson_t sc = BSON_INITIALIZER;
			if (js_object_to_bson(ctx, scope, &sc, err) != 0)
				rc = -1;
			else
				bson_append_code_with_scope(out, key, (int)keylen, s, &sc);
			bson_destroy(&sc);
		} else
			bson_append_code(out, key, (int)keylen, s);
		free(s);
		return rc;
	}
	default: /* DBRef: an ordinary document */
		break;
	}
	return -2;
}

static int
append_object(js_ctx_t *ctx, bson_t *out, js_ref_t v, int depth, terr_t *err)
{
	int mark = js_top(ctx);
	js_ref_t keys = js_keys(ctx, v);
	uint32_t n = 0;

	if (keys < 0 || js_array_length(ctx, keys, &n) != 0)
		return js_exception(ctx, err);
	for (uint32_t i = 0; i < n; i++) {
		int m2 = js_top(ctx);
		js_ref_t k = js_get_index(ctx, keys, i), val;
		char *name = NULL;
		size_t len = 0;
		if (k < 0 || js_to_string(ctx, k, &name, &len) != 0) {
			js_pop_to(ctx, mark);
			return js_exception(ctx, err);
		}
		if (memchr(name, '\0', len) != NULL || strlen(name) != len) {
			free(name);
			js_pop_to(ctx, mark);
			return terr_set(err, 16985,
			                "JavaScript property (name) contains a null char which is not allowed in BSON. ");
		}
		val = js_get(ctx, v, name);
		if (val < 0) {
			free(name);
			js_pop_to(ctx, mark);
			return js_exception(ctx, err);
		}
		/* functions on ordinary objects are skipped? no: mongod writes Code */
		if (append_value(ctx, out, name, len, val, depth + 1, err) != 0) {
			free(name);
			js_pop_to(ctx, mark);
			return -1;
		}
		free(name);
		js_pop_to(ctx, m2);
	}
	js_pop_to(ctx, mark);
	return 0;
}

static int
append_value(js_ctx_t *ctx, bson_t *out, const char *key, size_t keylen, js_ref_t v, int depth,
             terr_t *err)
{
	double d;
	char *s = NULL;
	size_t len = 0;
	int rc = 0, kind;

	if (depth >= JS_MAX_WRITE_DEPTH)
		return terr_set(err, 17279,
		                "Exceeded depth limit of %d when converting js object to BSON. Do you have a cycle?",
		                JS_MAX_WRITE_DEPTH);
	switch (js_type(ctx, v)) {
	case JS_T_UNDEFINED:
		bson_append_undefined(out, key, (int)keylen);
		return 0;
	case JS_T_NULL:
		bson_append_null(out, key, (int)keylen);
		return 0;
	case JS_T_BOOL:
		bson_append_bool(out, key, (int)keylen, js_truthy(ctx, v));
		return 0;
	case JS_T_INT32:
	case JS_T_DOUBLE:
		if (js_to_number(ctx, v, &d) != 0)
			return js_exception(ctx, err);
		bson_append_double(out, key, (int)keylen, d);
		return 0;
	case JS_T_STRING:
		if (js_to_string(ctx, v, &s, &len) != 0)
			return OOM(err);
		bson_append_utf8(out, key, (int)keylen, s, (int)len);
		free(s);
		return 0;
	case JS_T_FUNCTION:
		if (js_to_string(ctx, v, &s, &len) != 0)
			return js_exception(ctx, err);
		bson_append_code(out, key, (int)keylen, s);
		free(s);
		return 0;
	case JS_T_DATE:
		if (js_to_number(ctx, v, &d) != 0)
			return js_exception(ctx, err);
		/* an invalid date (NaN) is written as mongod writes it: the
		 * smallest date */
		bson_append_date_time(out, key, (int)keylen,
		                      isnan(d) ? INT64_MIN : (int64_t)d);
		return 0;
	case JS_T_REGEXP: {
		int mark = js_top(ctx);
		js_ref_t src = js_get(ctx, v, "source"), fl = js_get(ctx, v, "flags");
		char *f = NULL, opts[8];
		size_t flen = 0, n = 0;
		if (src < 0 || fl < 0 || js_to_string(ctx, src, &s, &len) != 0 ||
		    js_to_string(ctx, fl, &f, &flen) != 0) {
			free(s);
			js_pop_to(ctx, mark);
			return js_exception(ctx, err);
		}
		/* BSON options are sorted; keep those BSON knows */
		for (const char *o = "ilmsux"; *o != '\0'; o++)
			if (memchr(f, *o, flen) != NULL)
				opts[n++] = *o;
		opts[n] = '\0';
		bson_append_regex(out, key, (int)keylen, s, opts);
		free(s);
		free(f);
		js_pop_to(ctx, mark);
		return 0;
	}
	case JS_T_ARRAY: {
		bson_t child;
		uint32_t n = 0;
		int mark = js_top(ctx);
		if (js_array_length(ctx, v, &n) != 0)
			return js_exception(ctx, err);
		bson_append_array_begin(out, key, (int)keylen, &child);
		for (uint32_t i = 0; i < n && rc == 0; i++) {
			char ibuf[16];
			const char *ik;
			size_t il = bson_uint32_to_string(i, &ik, ibuf, sizeof(ibuf));
			js_ref_t e = js_get_index(ctx, v, i);
			if (e < 0)
				rc = js_exception(ctx, err);
			else
				rc = append_value(ctx, &child, ik, il, e, depth + 1, err);
			js_pop_to(ctx, mark);
		}
		bson_append_array_end(out, &child);
		return rc;
	}
	case JS_T_OBJECT: {
		bson_t child;
		int mark = js_top(ctx);
		kind = js_proto_kind(ctx, v);
		if (kind >= 0) {
			rc = append_kind(ctx, out, key, keylen, v, kind, depth, err);
			js_pop_to(ctx, mark);
			if (rc != -2)
				return rc;
		}
		bson_append_document_begin(out, key, (int)keylen, &child);
		rc = append_object(ctx, &child, v, depth, err);
		bson_append_document_end(out, &child);
		return rc;
	}
	default:
		return terr_set(err, 16662, "unable to convert JavaScript property to mongo element %.*s",
		                (int)keylen, key);
	}
}

int
js_append_bson(js_ctx_t *ctx, bson_t *out, const char *key, size_t keylen, js_ref_t v,
               terr_t *err)
{
	return append_value(ctx, out, key, keylen, v, 0, err);
}

int
js_object_to_bson(js_ctx_t *ctx, js_ref_t v, bson_t *out, terr_t *err)
{
	js_type_t t = js_type(ctx, v);

	if (t != JS_T_OBJECT && t != JS_T_ARRAY)
		return terr_set(err, 139, "value is not an object");
	return append_object(ctx, out, v, 0, err);
}

/* ---- compiled functions -------------------------------------------------- */

/* A thread's cache: source -> index in the context's script-unreachable array (js_push_cache),
 * valid for one global generation. */
#define FN_CACHE 32
static __thread struct fn_entry {
	uint64_t gen;
	uint64_t hash;
	char *src;
	size_t len;
	uint32_t index;
} fn_cache[FN_CACHE];
static __thread uint32_t fn_next;

static uint64_t
fnv1a(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

js_ref_t
js_function_get(js_ctx_t *ctx, const char *src, size_t len, terr_t *err)
{
	uint64_t gen = js_global_generation(ctx), h = fnv1a(src, len);
	int mark = js_top(ctx);
	js_ref_t g, arr, mk, s, f;
	uint32_t n;
	struct fn_entry *e;

	for (int i = 0; i < FN_CACHE; i++) {
		e = &fn_cache[i];
		if (e->gen == gen && e->hash == h && e->len == len && memcmp(e->src, src, len) == 0) {
			arr = js_push_cache(ctx);
			f = arr >= 0 ? js_get_index(ctx, arr, e->index) : -1;
			if (f >= 0 && js_type(ctx, f) == JS_T_FUNCTION)
				return f;   /* the slots below it go with the caller's mark */
			js_pop_to(ctx, mark);
		}
	}
	g = js_push_global(ctx);
	mk = js_get(ctx, g, "__tm_makefn");
	arr = js_push_cache(ctx);
	s = js_push_string(ctx, src, len);
	if (mk < 0 || arr < 0 || s < 0)
		return OOM(err);
	f = js_call(ctx, mk, -1, 1, &s, err);
	if (f < 0)
		return -1;
	if (js_type(ctx, f) != JS_T_FUNCTION)
		return terr_set(err, 139, "The user-defined function failed to parse in the javascript engine");
	if (js_array_length(ctx, arr, &n) != 0 || js_set_index(ctx, arr, n, f) != 0)
		return OOM(err);
	e = &fn_cache[fn_next++ % FN_CACHE];
	bson_free(e->src);
	e->src = bson_malloc(len + 1);
	memcpy(e->src, src, len);
	e->src[len] = '\0';
	e->len = len;
	e->hash = h;
	e->gen = gen;
	e->index = n;
	return f;
}

int
js_invoke(js_ctx_t *ctx, js_ref_t fn, const bson_t *this_doc, const bson_t *args, bson_t *result,
          terr_t *err)
{
	int mark = js_top(ctx), rc;
	js_ref_t self = -1;

	if (this_doc != NULL && (self = js_push_bson_doc(ctx, this_doc, err)) < 0) {
		bson_init(result);
		js_pop_to(ctx, mark);
		return -1;
	}
	rc = js_invoke_this(ctx, fn, self, args, result, err);
	js_pop_to(ctx, mark);
	return rc;
}

int
js_invoke_this(js_ctx_t *ctx, js_ref_t fn, js_ref_t self, const bson_t *args, bson_t *result,
               terr_t *err)
{
	int mark = js_top(ctx), rc = -1, argc = 0;
	js_ref_t argv[32], *av = argv, r;
	bson_iter_t it;

	bson_init(result);
	if (args != NULL) {
		uint32_t n = bson_count_keys(args);
		if (n > 32)
			av = bson_malloc(sizeof(js_ref_t) * n);
		bson_iter_init(&it, args);
		while (bson_iter_next(&it)) {
			const bson_value_t *v = bson_iter_value(&it);
			if ((av[argc] = js_push_bson_value(ctx, v, err)) < 0)
				goto out;
			argc++;
		}
	}
	r = js_call(ctx, fn, self, argc, av, err);
	if (r < 0)
		goto out;
	rc = js_append_bson(ctx, result, "r", 1, r, err);
	/* a script's value is a BSON value: mongod's 16 MB user limit */
	if (rc == 0 && result->len > 16 * 1024 * 1024 + 16 * 1024)
		rc = terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		              "BSONObj size: %u (0x%X) is invalid. Size must be between 0 and 16793600(16MB)",
		              result->len, result->len);
out:
	if (av != argv)
		bson_free(av);
	js_pop_to(ctx, mark);
	return rc;
}

/* system.js as last read on this thread (js_scope_enter_for) */
static __thread bson_t *stored_docs;
static __thread bool stored_valid;
static __thread uint64_t stored_gen;    /* the global generation they were set on */

static void
fn_cache_free(void)
{
	if (stored_docs != NULL) {
		bson_destroy(stored_docs);
		stored_docs = NULL;
	}
	stored_valid = false;
	stored_gen = 0;
	for (int i = 0; i < FN_CACHE; i++) {
		bson_free(fn_cache[i].src);
		memset(&fn_cache[i], 0, sizeof(fn_cache[i]));
	}
}

static __thread char thread_scope[512];
/* js_thread_set_scope_conn keeps its two parts and the key is formatted
 * only when a script runs: every command sets the scope, few run scripts */
static __thread char thread_db[256];
static __thread int64_t thread_conn;
static __thread bool thread_lazy;

void
js_thread_set_scope(const char *db, const char *user)
{
	thread_lazy = false;
	snprintf(thread_scope, sizeof(thread_scope), "%s%c%s", db != NULL ? db : "", 1,
	         user != NULL ? user : "");
}

void
js_thread_set_scope_conn(const char *db, int64_t conn_id)
{
	size_t n = db != NULL ? strnlen(db, sizeof(thread_db) - 1) : 0;

	memcpy(thread_db, db != NULL ? db : "", n);
	thread_db[n] = '\0';
	thread_conn = conn_id;
	thread_lazy = true;
}

/* the thread's scope key, formatted on first use after js_thread_set_scope_conn */
static const char *
thread_scope_key(void)
{
	if (thread_lazy) {
		snprintf(thread_scope, sizeof(thread_scope), "%s%c%lld", thread_db, 1, (long long)thread_conn);
		thread_lazy = false;
	}
	return thread_scope;
}

int
js_scope_enter(const char *scope_key, js_ctx_t **out, terr_t *err)
{
	js_ctx_t *ctx;

	if (scope_key == NULL)
		scope_key = thread_scope_key();
	js_set_global_init(js_helpers_install);
	js_set_release_hook(fn_cache_free);
	if (js_ctx_get(&ctx, err) != 0)
		return -1;
	if (js_ctx_use_global(ctx, scope_key != NULL ? scope_key : "", err) != 0)
		return -1;
	*out = ctx;
	return 0;
}

/* ---- system.js ------------------------------------------------------------ */

static __thread js_stored_loader_fn stored_loader;
static __thread void *stored_loader_arg;
static __thread int32_t mode_op;        /* the operation whose script kind is known */
static __thread int mode_kind;          /* 1: without system.js, 2: with */
static __thread int32_t stored_op;      /* the operation stored_docs was read for */
static __thread char stored_key[sizeof(thread_scope) + 24]; /* its global's scope key */

void
js_thread_set_stored_loader(js_stored_loader_fn fn, void *loader_arg)
{
	stored_loader = fn;
	stored_loader_arg = loader_arg;
}

/* one document of system.js, checked as Scope::loadStored checks it */
static int
stored_collect(void *arg, const bson_t *doc, terr_t *err)
{
	bson_t *arr = arg;
	bson_iter_t id, v;
	char key[16];
	const char *kp;

	if (!bson_iter_init_find(&id, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&id)) {
		char *s = bson_as_relaxed_extended_json(doc, NULL);
		terr_set(err, 10209, "name has to be a string: %s", s != NULL ? s : "");
		bson_free(s);
		return -1;
	}
	if (!bson_iter_init_find(&v, doc, "value"))
		return terr_set(err, 10210, "value has to be set");
	if (BSON_ITER_HOLDS_CODEWSCOPE(&v))
		return terr_set(err, 4546000,
		                "BSON type 'CodeWithScope' not supported in system.js scripts. As an alternative use "
		                "'Code'. Script _id value: '%s'",
		                bson_iter_utf8(&id, NULL));
	bson_uint32_to_string(bson_count_keys(arr), &kp, key, sizeof key);
	return bson_append_document(arr, kp, -1, doc) ? 0 : terr_set(err, 10334, "system.js is too large");
}

/* set the entries of stored_docs on ctx's current global */
static int
stored_install(js_ctx_t *ctx, terr_t *err)
{
	int mark = js_top(ctx), rc = 0;
	bson_iter_t it;
	js_ref_t g = js_push_global(ctx);

	if (g < 0)
		return OOM(err);
	bson_iter_init(&it, stored_docs);
	while (rc == 0 && bson_iter_next(&it)) {
		bson_t doc;
		bson_iter_t id, v;
		uint32_t len;
		const uint8_t *data;
		js_ref_t val;

		bson_iter_document(&it, &len, &data);
		bson_init_static(&doc, data, len);
		if (!bson_iter_init_find(&id, &doc, "_id") || !bson_iter_init_find(&v, &doc, "value"))
			continue;
		if (BSON_ITER_HOLDS_CODE(&v)) {
			uint32_t clen;
			const char *code = bson_iter_code(&v, &clen);
			val = js_function_get(ctx, code, clen, err);
		} else {
			val = js_push_bson_value(ctx, bson_iter_value(&v), err);
		}
		uint32_t nlen;
		const char *name = bson_iter_utf8(&id, &nlen);
		if (val < 0 || js_set(ctx, g, name, nlen, val) != 0)
			rc = terr_is_set(err) ? -1 : OOM(err);
	}
	js_pop_to(ctx, mark);
	return rc;
}

int
js_scope_enter_for(bool stored, js_ctx_t **out, terr_t *err)
{
	tm_opctx_t *op = tm_opctx_current();
	int32_t opid = op != NULL ? op->opid : 0;
	int kind = stored ? 2 : 1;
	js_ctx_t *ctx;

	if (opid != 0) {
		if (mode_op != opid) {
			mode_op = opid;
			mode_kind = kind;
		} else if (mode_kind != kind) {
			return terr_set(err, 4649200,
			                "A single operation cannot use both JavaScript aggregation expressions and $where.");
		}
	}
	if (!stored)
		return js_scope_enter(NULL, out, err);
	/* read system.js once per operation */
	if (!stored_valid || opid == 0 || stored_op != opid) {
		bson_t *docs = bson_new();
		stored_valid = false;
		if (stored_loader != NULL && stored_loader(stored_loader_arg, stored_collect, docs, err) != 0) {
			bson_destroy(docs);
			return -1;
		}
		if (stored_docs != NULL)
			bson_destroy(stored_docs);
		stored_docs = docs;
		/* FNV-1a of the entries: the global is kept per content */
		uint64_t h = 1469598103934665603ULL;
		const uint8_t *p = bson_get_data(docs);
		for (uint32_t i = 0; i < docs->len; i++)
			h = (h ^ p[i]) * 1099511628211ULL;
		/* the thread's scope (set per command) and the content */
		snprintf(stored_key, sizeof stored_key, "%s%c%016llx", thread_scope_key(), 2, (unsigned long long)h);
		stored_op = opid;
		stored_valid = true;
	}
	if (js_scope_enter(stored_key, &ctx, err) != 0)
		return -1;
	if (stored_docs == NULL) /* the context was released: read again next time */
		stored_valid = false;
	else if (js_global_generation(ctx) != stored_gen) {
		if (stored_install(ctx, err) != 0) {
			stored_gen = 0;
			return -1;
		}
		stored_gen = js_global_generation(ctx);
	}
	*out = ctx;
	return 0;
}
