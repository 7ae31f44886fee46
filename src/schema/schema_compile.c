/*
 * schema_compile.c -- turns a $jsonSchema document into snode_t trees.
 *
 * Every check, its order and its error (code and message) follow mongod's
 * JSON Schema parser, so a malformed validator fails at create/collMod time
 * with the answer a MongoDB client expects.  Patterns are compiled here once
 * (PCRE2, JIT when available).  This file does not evaluate documents.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "schema/schema_private.h"

/* Subschema nesting allowed; deeper validators are refused at compile time
 * (mongod refuses them earlier, through its BSON depth limit). */
#define SCH_MAX_DEPTH 100

enum kw {
	KW_ADDITIONAL_ITEMS, KW_ADDITIONAL_PROPERTIES, KW_ALL_OF, KW_ANY_OF,
	KW_BSON_TYPE, KW_DEPENDENCIES, KW_DESCRIPTION, KW_ENCRYPT,
	KW_ENCRYPT_METADATA, KW_ENUM, KW_EXCLUSIVE_MAXIMUM, KW_EXCLUSIVE_MINIMUM,
	KW_ITEMS, KW_MAX_ITEMS, KW_MAX_LENGTH, KW_MAX_PROPERTIES, KW_MAXIMUM,
	KW_MIN_ITEMS, KW_MIN_LENGTH, KW_MIN_PROPERTIES, KW_MINIMUM,
	KW_MULTIPLE_OF, KW_NOT, KW_ONE_OF, KW_PATTERN, KW_PATTERN_PROPERTIES,
	KW_PROPERTIES, KW_REQUIRED, KW_TITLE, KW_TYPE, KW_UNIQUE_ITEMS, KW_COUNT
};

static const char *const kw_names[KW_COUNT] = {
	"additionalItems", "additionalProperties", "allOf", "anyOf",
	"bsonType", "dependencies", "description", "encrypt",
	"encryptMetadata", "enum", "exclusiveMaximum", "exclusiveMinimum",
	"items", "maxItems", "maxLength", "maxProperties", "maximum",
	"minItems", "minLength", "minProperties", "minimum",
	"multipleOf", "not", "oneOf", "pattern", "patternProperties",
	"properties", "required", "title", "type", "uniqueItems",
};

/* Draft-4 keywords mongod names as unsupported rather than unknown. */
static const char *const unsupported_kws[] = {
	"$ref", "$schema", "default", "definitions", "format", "id", NULL
};

/* bsonType aliases (mongod's type names) and the JSON Schema type names. */
typedef struct {
	const char *name;
	uint32_t mask;
} type_alias_t;

static const type_alias_t bson_aliases[] = {
	{"double", 1u << BSON_TYPE_DOUBLE}, {"string", 1u << BSON_TYPE_UTF8},
	{"object", 1u << BSON_TYPE_DOCUMENT}, {"array", 1u << BSON_TYPE_ARRAY},
	{"binData", 1u << BSON_TYPE_BINARY}, {"undefined", 1u << BSON_TYPE_UNDEFINED},
	{"objectId", 1u << BSON_TYPE_OID}, {"bool", 1u << BSON_TYPE_BOOL},
	{"date", 1u << BSON_TYPE_DATE_TIME}, {"null", 1u << BSON_TYPE_NULL},
	{"regex", 1u << BSON_TYPE_REGEX}, {"dbPointer", 1u << BSON_TYPE_DBPOINTER},
	{"javascript", 1u << BSON_TYPE_CODE}, {"symbol", 1u << BSON_TYPE_SYMBOL},
	{"javascriptWithScope", 1u << BSON_TYPE_CODEWSCOPE},
	{"int", 1u << BSON_TYPE_INT32}, {"timestamp", 1u << BSON_TYPE_TIMESTAMP},
	{"long", 1u << BSON_TYPE_INT64}, {"decimal", 1u << BSON_TYPE_DECIMAL128},
	{"minKey", 1u << SCH_BIT_MINKEY}, {"maxKey", 1u << SCH_BIT_MAXKEY},
	{"number", SCH_NUMBER_MASK}, {NULL, 0}
};

static const type_alias_t json_aliases[] = {
	{"array", 1u << BSON_TYPE_ARRAY}, {"boolean", 1u << BSON_TYPE_BOOL},
	{"null", 1u << BSON_TYPE_NULL}, {"object", 1u << BSON_TYPE_DOCUMENT},
	{"string", 1u << BSON_TYPE_UTF8}, {"number", SCH_NUMBER_MASK}, {NULL, 0}
};

/* mongod's name for a BSON type, as printed in parse errors (bson/value.h
 * has the same names; this table keeps parse errors independent of it). */
static const char *const type_names[0x14] = {
	[BSON_TYPE_EOD] = "missing", [BSON_TYPE_DOUBLE] = "double", [BSON_TYPE_UTF8] = "string",
	[BSON_TYPE_DOCUMENT] = "object", [BSON_TYPE_ARRAY] = "array", [BSON_TYPE_BINARY] = "binData",
	[BSON_TYPE_UNDEFINED] = "undefined", [BSON_TYPE_OID] = "objectId", [BSON_TYPE_BOOL] = "bool",
	[BSON_TYPE_DATE_TIME] = "date", [BSON_TYPE_NULL] = "null", [BSON_TYPE_REGEX] = "regex",
	[BSON_TYPE_DBPOINTER] = "dbPointer", [BSON_TYPE_CODE] = "javascript",
	[BSON_TYPE_SYMBOL] = "symbol", [BSON_TYPE_CODEWSCOPE] = "javascriptWithScope",
	[BSON_TYPE_INT32] = "int", [BSON_TYPE_TIMESTAMP] = "timestamp", [BSON_TYPE_INT64] = "long",
	[BSON_TYPE_DECIMAL128] = "decimal",
};

static const char *
type_name(bson_type_t t)
{
	if (t == BSON_TYPE_MINKEY)
		return "minKey";
	if (t == BSON_TYPE_MAXKEY)
		return "maxKey";
	if ((unsigned)t < 0x14 && type_names[t])
		return type_names[t];
	return "unknown";
}

/* Schema-wide compile state. */
typedef struct {
	unsigned flags;
	bool uses_encrypt;
} cctx_t;

static int compile_node(cctx_t *cx, const uint8_t *data, uint32_t len, bool top,
			int depth, snode_t **out, terr_t *err);

static bool
is_number_type(bson_type_t t)
{
	return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE ||
	       t == BSON_TYPE_DECIMAL128;
}

/* "<key>: <value>" the way mongod streams a BSONElement. */
static char *
elem_string(const bson_iter_t *it)
{
	bson_iter_t c = *it;
	char *v = bv_to_mongo_string(bson_iter_value(&c));
	char *s = bson_strdup_printf("%s: %s", bson_iter_key(it), v ? v : "?");
	bson_free(v);
	return s;
}

static int
elem_error(terr_t *err, int code, const char *prefix, const bson_iter_t *it)
{
	char *s = elem_string(it);
	terr_set(err, code, "%s%s", prefix, s);
	bson_free(s);
	return -1;
}

/* mongod's parseIntegerElementToNonNegativeLong. */
static int
parse_nonneg_long(const bson_iter_t *it, int64_t *out, terr_t *err)
{
	bson_type_t t = bson_iter_type(it);
	int64_t n;

	if (!is_number_type(t))
		return elem_error(err, TERR_FAILED_TO_PARSE, "Expected a number in: ", it);
	if (t == BSON_TYPE_DOUBLE || t == BSON_TYPE_DECIMAL128) {
		double d;
		if (t == BSON_TYPE_DOUBLE) {
			d = bson_iter_double(it);
		} else {
			bson_decimal128_t dec;
			bson_iter_decimal128(it, &dec);
			d = bv_decimal_to_double(&dec);
		}
		if (isnan(d))
			return elem_error(err, TERR_FAILED_TO_PARSE,
					  "Expected an integer, but found NaN in: ", it);
		if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
			return elem_error(err, TERR_FAILED_TO_PARSE,
					  "Cannot represent as a 64-bit integer: ", it);
		if (d != (double)(int64_t)d)
			return elem_error(err, TERR_FAILED_TO_PARSE, "Expected an integer: ", it);
		n = (int64_t)d;
	} else {
		n = bson_iter_as_int64(it);
	}
	if (n < 0)
		return elem_error(err, TERR_FAILED_TO_PARSE, "Expected a positive number in: ", it);
	*out = n;
	return 0;
}

/* mongod's JSONSchemaParser::parseTypeSet + MatcherTypeSet::fromStringAliases. */
static int
parse_type_set(const bson_iter_t *kit, const type_alias_t *aliases, uint32_t *mask,
	       terr_t *err)
{
	const char *kw = bson_iter_key(kit);
	bson_type_t t = bson_iter_type(kit);
	const char *names[64];
	uint32_t nnames = 0;
	bson_iter_t it;

	*mask = 0;
	if (t != BSON_TYPE_UTF8 && t != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_TYPE_MISMATCH,
				"$jsonSchema keyword '%s' must be either a string or an array of strings", kw);
	if (t == BSON_TYPE_UTF8) {
		const char *s = bson_iter_utf8(kit, NULL);
		if (strcmp(s, "integer") == 0)
			return terr_set(err, TERR_FAILED_TO_PARSE,
					"$jsonSchema type 'integer' is not currently supported.");
		names[nnames++] = s;
	} else {
		bson_iter_recurse(kit, &it);
		while (bson_iter_next(&it)) {
			const char *s;
			if (bson_iter_type(&it) != BSON_TYPE_UTF8)
				return terr_set(err, TERR_TYPE_MISMATCH,
						"$jsonSchema keyword '%s' array elements must be strings", kw);
			s = bson_iter_utf8(&it, NULL);
			if (strcmp(s, "integer") == 0)
				return terr_set(err, TERR_FAILED_TO_PARSE,
						"$jsonSchema type 'integer' is not currently supported.");
			for (uint32_t i = 0; i < nnames; i++)
				if (strcmp(names[i], s) == 0)
					return terr_set(err, TERR_FAILED_TO_PARSE,
							"$jsonSchema keyword '%s' has duplicate value: %s", kw, s);
			if (nnames == 64)   /* more than every alias: one must be unknown or repeated */
				return terr_set(err, TERR_BAD_VALUE, "Unknown type name alias: %s", s);
			names[nnames++] = s;
		}
	}
	/* mongod walks the aliases in sorted order. */
	for (;;) {
		const char *first = NULL;
		uint32_t fi = 0;
		for (uint32_t i = 0; i < nnames; i++)
			if (names[i] && (!first || strcmp(names[i], first) < 0)) {
				first = names[i];
				fi = i;
			}
		if (!first)
			break;
		names[fi] = NULL;
		const type_alias_t *a = aliases;
		while (a->name && strcmp(a->name, first) != 0)
			a++;
		if (!a->name && strcmp(first, "missing") == 0)
			return terr_set(err, TERR_BAD_VALUE,
					"'missing' is not a legal type name. To query for non-existence of a field, use {$exists:false}.");
		if (!a->name)
			return terr_set(err, TERR_BAD_VALUE, "Unknown type name alias: %s", first);
		*mask |= a->mask;
	}
	if (*mask == 0)
		return terr_set(err, TERR_FAILED_TO_PARSE,
				"$jsonSchema keyword '%s' must name at least one type", kw);
	return 0;
}

/* Compile a pattern the way mongod's regex matcher does (no flags, UTF). */
static int
compile_regex(const char *src, uint32_t len, pcre2_code **out, terr_t *err)
{
	int ecode;
	PCRE2_SIZE eoff;
	pcre2_code *re;

	if (memchr(src, '\0', len) != NULL)
		return terr_set(err, TERR_BAD_VALUE,
				"Regular expression cannot contain an embedded null byte");
	re = pcre2_compile((PCRE2_SPTR)src, len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
			   &ecode, &eoff, NULL);
	if (re == NULL) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(ecode, msg, sizeof msg);
		return terr_set(err, 51091, "Regular expression is invalid: %s", (char *)msg);
	}
	(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	*out = re;
	return 0;
}

static int
compile_sub(cctx_t *cx, const bson_iter_t *it, bool top, int depth, snode_t **out, terr_t *err)
{
	uint32_t len;
	const uint8_t *data;

	bson_iter_document(it, &len, &data);
	return compile_node(cx, data, len, top, depth + 1, out, err);
}

/* allOf / anyOf / oneOf. */
static int
compile_logical(cctx_t *cx, const bson_iter_t *kit, bool top, int depth, snode_t ***out,
		uint32_t *nout, terr_t *err)
{
	const char *kw = bson_iter_key(kit);
	bson_iter_t it;
	uint32_t n = 0, cap = 0;
	snode_t **v = NULL;

	if (bson_iter_type(kit) != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword '%s' must be an array", kw);
	bson_iter_recurse(kit, &it);
	if (!bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "$jsonSchema keyword '%s' must be a non-empty array", kw);
	do {
		if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) {
			terr_set(err, TERR_TYPE_MISMATCH,
				 "$jsonSchema keyword '%s' must be an array of objects, but found an element of type %s",
				 kw, type_name(bson_iter_type(&it)));
			goto err;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 4;
			v = bson_realloc(v, cap * sizeof *v);
		}
		v[n] = NULL;
		if (compile_sub(cx, &it, top, depth, &v[n], err) != 0)
			goto err;
		n++;
	} while (bson_iter_next(&it));
	*out = v;
	*nout = n;
	return 0;
err:
	for (uint32_t i = 0; i < n; i++)
		sch_node_free(v[i]);
	bson_free(v);
	return -1;
}

/* Open-addressing set of value hashes used to find duplicates at compile time. */
typedef struct {
	uint64_t *h;
	uint32_t *idx;
	bson_value_t *vals;
	uint32_t cap;
} vset_t;

static bool
vset_insert(vset_t *s, const bson_value_t *v, uint32_t i)
{
	uint64_t h = sch_val_hash(v);
	uint32_t mask = s->cap - 1, p = (uint32_t)h & mask;

	while (s->idx[p] != UINT32_MAX) {
		if (s->h[p] == h && sch_val_equal(&s->vals[s->idx[p]], v))
			return false;
		p = (p + 1) & mask;
	}
	s->h[p] = h;
	s->idx[p] = i;
	s->vals[i] = *v;
	return true;
}

static int
compile_enum(snode_t *n, const bson_iter_t *kit, bool top, terr_t *err)
{
	bson_iter_t it;
	uint32_t count = 0, i = 0;
	vset_t set = {0};
	bool has_obj = false;
	int ret = -1;

	if (bson_iter_type(kit) != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_TYPE_MISMATCH,
				"$jsonSchema keyword 'enum' must be an array, but found an element of type %s",
				type_name(bson_iter_type(kit)));
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it))
		count++;
	if (count == 0)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$jsonSchema keyword 'enum' cannot be an empty array");
	set.cap = 16;
	while (set.cap < count * 2)
		set.cap *= 2;
	set.h = bson_malloc(set.cap * sizeof *set.h);
	set.idx = bson_malloc(set.cap * sizeof *set.idx);
	memset(set.idx, 0xff, set.cap * sizeof *set.idx);
	set.vals = bson_malloc(count * sizeof *set.vals);
	n->enum_arr = bson_new();
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		const bson_value_t *v = bson_iter_value(&it);
		if (!vset_insert(&set, v, i)) {
			terr_set(err, TERR_FAILED_TO_PARSE,
				 "$jsonSchema keyword 'enum' array cannot contain duplicate values.");
			goto err;
		}
		if (v->value_type == BSON_TYPE_DOCUMENT)
			has_obj = true;
		i++;
	}
	/* Re-key into our own copy so values stay valid after the caller's
	 * schema document is gone. */
	bson_iter_recurse(kit, &it);
	i = 0;
	while (bson_iter_next(&it)) {
		char buf[16];
		const char *key;
		size_t kl = bson_uint32_to_string(i++, &key, buf, sizeof buf);
		bson_append_value(n->enum_arr, key, (int)kl, bson_iter_value(&it));
	}
	n->nenum = count;
	n->enum_always_false = top && !has_obj;
	ret = 0;
err:
	bson_free(set.h);
	bson_free(set.idx);
	bson_free(set.vals);
	return ret;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* mongod turns each required / dependency name into a field path, which
 * refuses embedded NUL bytes (code 9867600; message wording is ours). */
static int
check_path_name(const char *s, uint32_t len, terr_t *err)
{
	if (memchr(s, '\0', len) != NULL)
		return terr_set(err, 9867600, "Field path cannot contain an embedded null byte");
	return 0;
}

static int
compile_required(snode_t *n, const bson_iter_t *kit, terr_t *err)
{
	bson_iter_t it;
	uint32_t cap = 0;

	if (bson_iter_type(kit) != BSON_TYPE_ARRAY)
		return terr_set(err, TERR_TYPE_MISMATCH,
				"$jsonSchema keyword 'required' must be an array, but found an element of type %s",
				type_name(bson_iter_type(kit)));
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		const char *s;
		if (bson_iter_type(&it) != BSON_TYPE_UTF8)
			return terr_set(err, TERR_TYPE_MISMATCH,
					"$jsonSchema keyword 'required' must be an array of strings, but found an element of type: %s",
					type_name(bson_iter_type(&it)));
		{
			uint32_t sl;
			s = bson_iter_utf8(&it, &sl);
			RET(check_path_name(s, sl, err));
		}
		for (uint32_t i = 0; i < n->nrequired; i++)
			if (strcmp(n->required[i], s) == 0)
				return terr_set(err, TERR_FAILED_TO_PARSE,
						"$jsonSchema keyword 'required' array cannot contain duplicate values");
		if (n->nrequired == cap) {
			cap = cap ? cap * 2 : 8;
			n->required = bson_realloc(n->required, cap * sizeof *n->required);
		}
		n->required[n->nrequired++] = bson_strdup(s);
	}
	if (n->nrequired == 0)
		return terr_set(err, TERR_FAILED_TO_PARSE, "$jsonSchema keyword 'required' cannot be an empty array");
	qsort(n->required, n->nrequired, sizeof *n->required, cmp_str);
	return 0;
}

static int
compile_properties(cctx_t *cx, snode_t *n, const bson_iter_t *kit, int depth, terr_t *err)
{
	bson_iter_t it;
	uint32_t count = 0;

	if (bson_iter_type(kit) != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'properties' must be an object");
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it))
		count++;
	n->props = bson_malloc0((count ? count : 1) * sizeof *n->props);
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		sch_prop_t *p = &n->props[n->nprops];
		if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT)
			return terr_set(err, TERR_TYPE_MISMATCH,
					"Nested schema for $jsonSchema property '%s' must be an object",
					bson_iter_key(&it));
		p->name = bson_strdup(bson_iter_key(&it));
		p->len = bson_iter_key_len(&it);
		p->dotted = memchr(p->name, '.', p->len) != NULL;
		n->nprops++;
		if (compile_sub(cx, &it, false, depth, &p->schema, err) != 0)
			return -1;
	}
	return 0;
}

static int
compile_pattern_properties(cctx_t *cx, snode_t *n, const bson_iter_t *kit, int depth, terr_t *err)
{
	bson_iter_t it;
	uint32_t count = 0;

	if (bson_iter_type(kit) != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
				"$jsonSchema keyword 'patternProperties' must be an object");
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it))
		count++;
	n->pats = bson_malloc0((count ? count : 1) * sizeof *n->pats);
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		sch_pat_t *p = &n->pats[n->npats];
		if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT)
			return terr_set(err, TERR_TYPE_MISMATCH,
					"$jsonSchema keyword 'patternProperties' has property '%s' which is not an object",
					bson_iter_key(&it));
		p->src = bson_strdup(bson_iter_key(&it));
		n->npats++;
		if (compile_sub(cx, &it, false, depth, &p->schema, err) != 0)
			return -1;
		if (compile_regex(p->src, bson_iter_key_len(&it), &p->re, err) != 0)
			return -1;
	}
	return 0;
}

static int
compile_dependencies(cctx_t *cx, snode_t *n, const bson_iter_t *kit, bool top, int depth,
		     terr_t *err)
{
	bson_iter_t it;
	uint32_t count = 0;

	if (bson_iter_type(kit) != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'dependencies' must be an object");
	n->has_deps = true;
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it))
		count++;
	n->deps = bson_malloc0((count ? count : 1) * sizeof *n->deps);
	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		bson_type_t t = bson_iter_type(&it);
		sch_dep_t *d;

		if (t != BSON_TYPE_DOCUMENT && t != BSON_TYPE_ARRAY) {
			if (t == BSON_TYPE_UTF8 &&
			    (strcmp(key, "title") == 0 || strcmp(key, "description") == 0))
				continue;
			return terr_set(err, TERR_TYPE_MISMATCH,
					"property '%s' in $jsonSchema keyword 'dependencies' must be either an object or an array",
					key);
		}
		d = &n->deps[n->ndeps++];
		d->name = bson_strdup(key);
		if (t == BSON_TYPE_DOCUMENT) {
			if (compile_sub(cx, &it, top, depth, &d->schema, err) != 0)
				return -1;
		} else {
			bson_iter_t a;
			uint32_t na = 0;
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a))
				na++;
			if (na == 0)
				return terr_set(err, TERR_FAILED_TO_PARSE,
						"property '%s' in $jsonSchema keyword 'dependencies' cannot be an empty array",
						key);
			d->props = bson_malloc0(na * sizeof *d->props);
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a)) {
				const char *s;
				if (bson_iter_type(&a) != BSON_TYPE_UTF8)
					return terr_set(err, TERR_TYPE_MISMATCH,
							"array '%s' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: %s",
							key, type_name(bson_iter_type(&a)));
				{
					uint32_t sl;
					s = bson_iter_utf8(&a, &sl);
					RET(check_path_name(s, sl, err));
				}
				for (uint32_t i = 0; i < d->nprops; i++)
					if (strcmp(d->props[i], s) == 0)
						return terr_set(err, TERR_FAILED_TO_PARSE,
								"array '%s' in $jsonSchema keyword 'dependencies' contains duplicate element: %s",
								key, s);
				d->props[d->nprops++] = bson_strdup(s);
			}
		}
	}
	return 0;
}

/* Fields of the encrypt / encryptMetadata objects (mongod parses them with
 * its IDL, which names the offending field). */
static int
check_encrypt_fields(const bson_iter_t *kit, bool is_metadata, uint32_t *type_mask, terr_t *err)
{
	const char *kw = bson_iter_key(kit);
	bson_iter_t it;

	bson_iter_recurse(kit, &it);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		bson_type_t t = bson_iter_type(&it);
		if (strcmp(f, "algorithm") == 0) {
			const char *s;
			if (t != BSON_TYPE_UTF8)
				return terr_set(err, TERR_TYPE_MISMATCH,
						"BSON field '%s.algorithm' is the wrong type '%s', expected type 'string'",
						kw, type_name(t));
			s = bson_iter_utf8(&it, NULL);
			if (strcmp(s, "AEAD_AES_256_CBC_HMAC_SHA_512-Deterministic") != 0 &&
			    strcmp(s, "AEAD_AES_256_CBC_HMAC_SHA_512-Random") != 0)
				return terr_set(err, TERR_BAD_VALUE,
						"Enumeration value '%s' for field '%s.algorithm' is not a valid value.",
						s, kw);
		} else if (strcmp(f, "keyId") == 0) {
			if (t != BSON_TYPE_UTF8 && t != BSON_TYPE_ARRAY)
				return terr_set(err, TERR_TYPE_MISMATCH,
						"BSON field '%s.keyId' is the wrong type '%s', expected types '[string, array]'",
						kw, type_name(t));
			if (t == BSON_TYPE_ARRAY) {
				bson_iter_t a;
				bson_iter_recurse(&it, &a);
				while (bson_iter_next(&a)) {
					bson_subtype_t st;
					uint32_t bl;
					const uint8_t *bd;
					if (bson_iter_type(&a) != BSON_TYPE_BINARY)
						return terr_set(err, TERR_TYPE_MISMATCH,
								"BSON field '%s.keyId' contains an element that is not a UUID",
								kw);
					bson_iter_binary(&a, &st, &bl, &bd);
					if (st != BSON_SUBTYPE_UUID)
						return terr_set(err, TERR_TYPE_MISMATCH,
								"BSON field '%s.keyId' contains an element that is not a UUID",
								kw);
				}
			}
		} else if (!is_metadata && strcmp(f, "bsonType") == 0) {
			if (parse_type_set(&it, bson_aliases, type_mask, err) != 0)
				return -1;
		} else {
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", kw, f);
		}
	}
	return 0;
}

static int
compile_encryption(cctx_t *cx, snode_t *n, const bson_iter_t *enc, const bson_iter_t *meta,
		   terr_t *err)
{
	if (!enc && !meta)
		return 0;
	if (cx->flags & SCHEMA_DENY_ENCRYPT)
		return terr_set(err, 224, "Encryption-related validator keywords are not allowed in this context");
	cx->uses_encrypt = true;
	if (enc && meta)
		return terr_set(err, TERR_FAILED_TO_PARSE,
				"Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'");
	if (meta) {
		bson_iter_t c = *meta;
		if (bson_iter_type(meta) != BSON_TYPE_DOCUMENT)
			return terr_set(err, TERR_TYPE_MISMATCH,
					"$jsonSchema keyword 'encryptMetadata' must be an object ");
		bson_iter_recurse(meta, &c);
		if (!bson_iter_next(&c))
			return terr_set(err, TERR_FAILED_TO_PARSE,
					"$jsonSchema keyword 'encryptMetadata' cannot be an empty object ");
		return check_encrypt_fields(meta, true, NULL, err);
	}
	if (bson_iter_type(enc) != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'encrypt' must be an object ");
	if (check_encrypt_fields(enc, false, &n->encrypt_type_mask, err) != 0)
		return -1;
	n->encrypt = true;
	return 0;
}

static int
compile_items(cctx_t *cx, snode_t *n, const bson_iter_t *kit, int depth, terr_t *err)
{
	bson_type_t t = bson_iter_type(kit);

	if (t == BSON_TYPE_ARRAY) {
		bson_iter_t it;
		uint32_t count = 0;
		bson_iter_recurse(kit, &it);
		while (bson_iter_next(&it))
			count++;
		n->items_kind = SCH_ITEMS_ARRAY;
		n->items_arr = bson_malloc0((count ? count : 1) * sizeof *n->items_arr);
		bson_iter_recurse(kit, &it);
		while (bson_iter_next(&it)) {
			if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT)
				return terr_set(err, TERR_TYPE_MISMATCH,
						"$jsonSchema keyword 'items' requires that each element of the array is an object, but found a %s",
						type_name(bson_iter_type(&it)));
			if (compile_sub(cx, &it, false, depth, &n->items_arr[n->nitems], err) != 0)
				return -1;
			n->nitems++;
		}
		return 0;
	}
	if (t == BSON_TYPE_DOCUMENT) {
		n->items_kind = SCH_ITEMS_SCHEMA;
		return compile_sub(cx, kit, false, depth, &n->items, err);
	}
	return terr_set(err, TERR_TYPE_MISMATCH,
			"$jsonSchema keyword 'items' must be an array or an object, not %s", type_name(t));
}

static bool
numeric_copy(const bson_iter_t *it, bson_value_t *out)
{
	bson_iter_t c = *it;
	*out = *bson_iter_value(&c);
	return true;
}

static int
compile_node(cctx_t *cx, const uint8_t *data, uint32_t len, bool top, int depth,
	     snode_t **out, terr_t *err)
{
	struct { bson_iter_t it; } kws[KW_COUNT];
	bool have[KW_COUNT] = {0};
	bson_iter_t it;
	snode_t *n;
	int ret = -1;

	*out = NULL;
	if (depth > SCH_MAX_DEPTH)
		return terr_set(err, TERR_BAD_VALUE,
				"$jsonSchema is nested too deeply: more than %d levels of subschemas",
				SCH_MAX_DEPTH);
	n = bson_malloc0(sizeof *n);
	n->raw = bson_new_from_data(data, len);
	if (n->raw == NULL) {
		bson_free(n);
		return terr_set(err, TERR_INVALID_BSON, "$jsonSchema is not valid BSON");
	}
	n->top = top;
	n->min_len = n->max_len = n->min_items = n->max_items = -1;
	n->min_props = n->max_props = -1;

	bson_iter_init(&it, n->raw);
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		int k;
		for (k = 0; k < KW_COUNT; k++)
			if (strcmp(kw_names[k], key) == 0)
				break;
		if (k == KW_COUNT) {
			for (int u = 0; unsupported_kws[u]; u++)
				if (strcmp(unsupported_kws[u], key) == 0) {
					terr_set(err, TERR_FAILED_TO_PARSE,
						 "$jsonSchema keyword '%s' is not currently supported", key);
					goto err;
				}
			terr_set(err, TERR_FAILED_TO_PARSE, "Unknown $jsonSchema keyword: %s", key);
			goto err;
		}
		if (have[k]) {
			terr_set(err, TERR_FAILED_TO_PARSE, "Duplicate $jsonSchema keyword: %s", key);
			goto err;
		}
		have[k] = true;
		kws[k].it = it;
	}

	/* Metadata. */
	if (have[KW_DESCRIPTION]) {
		if (bson_iter_type(&kws[KW_DESCRIPTION].it) != BSON_TYPE_UTF8) {
			terr_set(err, TERR_TYPE_MISMATCH,
				 "$jsonSchema keyword 'description' must be of type string");
			goto err;
		}
		n->description = bson_strdup(bson_iter_utf8(&kws[KW_DESCRIPTION].it, NULL));
	}
	if (have[KW_TITLE]) {
		if (bson_iter_type(&kws[KW_TITLE].it) != BSON_TYPE_UTF8) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'title' must be of type string");
			goto err;
		}
		n->title = bson_strdup(bson_iter_utf8(&kws[KW_TITLE].it, NULL));
	}

	/* Types. */
	if (have[KW_TYPE] && have[KW_BSON_TYPE]) {
		terr_set(err, TERR_FAILED_TO_PARSE,
			 "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
		goto err;
	}
	if ((have[KW_TYPE] || have[KW_BSON_TYPE]) && have[KW_ENCRYPT]) {
		terr_set(err, TERR_FAILED_TO_PARSE,
			 "$jsonSchema keyword 'encrypt' cannot be used in conjunction with '%s', 'encrypt' implies type 'bsonType::BinData'",
			 have[KW_TYPE] ? "type" : "bsonType");
		goto err;
	}
	if (have[KW_TYPE] || have[KW_BSON_TYPE]) {
		n->has_type = true;
		n->type_is_json = have[KW_TYPE];
		if (parse_type_set(have[KW_TYPE] ? &kws[KW_TYPE].it : &kws[KW_BSON_TYPE].it,
				   have[KW_TYPE] ? json_aliases : bson_aliases, &n->type_mask, err) != 0)
			goto err;
	} else if (have[KW_ENCRYPT]) {
		/* encrypt implies binData; it reports through its own keyword */
		n->type_mask = 1u << BSON_TYPE_BINARY;
	}
	if (n->has_type || have[KW_ENCRYPT]) {
		uint32_t m = n->type_mask;
		bool single = m == SCH_NUMBER_MASK || (m & (m - 1)) == 0;
		if (single) {
			n->off_string = !(m & (1u << BSON_TYPE_UTF8));
			n->off_number = !(m & SCH_NUMBER_MASK);
			n->off_array = !(m & (1u << BSON_TYPE_ARRAY));
			n->off_object = !(m & (1u << BSON_TYPE_DOCUMENT));
		}
	}

	/* Scalar keywords. */
	if (have[KW_PATTERN]) {
		uint32_t pl;
		const char *ps;
		if (bson_iter_type(&kws[KW_PATTERN].it) != BSON_TYPE_UTF8) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'pattern' must be a string");
			goto err;
		}
		ps = bson_iter_utf8(&kws[KW_PATTERN].it, &pl);
		if (compile_regex(ps, pl, &n->pattern, err) != 0)
			goto err;
	}
	if (have[KW_MAX_LENGTH] && parse_nonneg_long(&kws[KW_MAX_LENGTH].it, &n->max_len, err) != 0)
		goto err;
	if (have[KW_MIN_LENGTH] && parse_nonneg_long(&kws[KW_MIN_LENGTH].it, &n->min_len, err) != 0)
		goto err;
	if (have[KW_MULTIPLE_OF]) {
		bson_value_t v;
		if (!is_number_type(bson_iter_type(&kws[KW_MULTIPLE_OF].it))) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'multipleOf' must be a number");
			goto err;
		}
		numeric_copy(&kws[KW_MULTIPLE_OF].it, &v);
		sch_dec_from_value(&v, &n->multiple_of);
		if (n->multiple_of.kind != 2 &&
		    (n->multiple_of.neg || (n->multiple_of.kind == 0 && n->multiple_of.mant == 0))) {
			terr_set(err, TERR_FAILED_TO_PARSE,
				 "$jsonSchema keyword 'multipleOf' must have a positive value");
			goto err;
		}
		n->has_multiple_of = true;
	}
	if (have[KW_MAXIMUM]) {
		if (have[KW_EXCLUSIVE_MAXIMUM]) {
			if (bson_iter_type(&kws[KW_EXCLUSIVE_MAXIMUM].it) != BSON_TYPE_BOOL) {
				terr_set(err, TERR_TYPE_MISMATCH,
					 "$jsonSchema keyword 'exclusiveMaximum' must be a boolean");
				goto err;
			}
			n->excl_max = bson_iter_bool(&kws[KW_EXCLUSIVE_MAXIMUM].it);
		}
		if (!is_number_type(bson_iter_type(&kws[KW_MAXIMUM].it))) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'maximum' must be a number");
			goto err;
		}
		numeric_copy(&kws[KW_MAXIMUM].it, &n->maximum);
		n->has_max = true;
	} else if (have[KW_EXCLUSIVE_MAXIMUM]) {
		terr_set(err, TERR_FAILED_TO_PARSE,
			 "$jsonSchema keyword 'maximum' must be a present if exclusiveMaximum is present");
		goto err;
	}
	if (have[KW_MINIMUM]) {
		if (have[KW_EXCLUSIVE_MINIMUM]) {
			if (bson_iter_type(&kws[KW_EXCLUSIVE_MINIMUM].it) != BSON_TYPE_BOOL) {
				terr_set(err, TERR_TYPE_MISMATCH,
					 "$jsonSchema keyword 'exclusiveMinimum' must be a boolean");
				goto err;
			}
			n->excl_min = bson_iter_bool(&kws[KW_EXCLUSIVE_MINIMUM].it);
		}
		if (!is_number_type(bson_iter_type(&kws[KW_MINIMUM].it))) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'minimum' must be a number");
			goto err;
		}
		numeric_copy(&kws[KW_MINIMUM].it, &n->minimum);
		n->has_min = true;
	} else if (have[KW_EXCLUSIVE_MINIMUM]) {
		terr_set(err, TERR_FAILED_TO_PARSE,
			 "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present");
		goto err;
	}

	/* Array keywords. */
	if (have[KW_MIN_ITEMS] && parse_nonneg_long(&kws[KW_MIN_ITEMS].it, &n->min_items, err) != 0)
		goto err;
	if (have[KW_MAX_ITEMS] && parse_nonneg_long(&kws[KW_MAX_ITEMS].it, &n->max_items, err) != 0)
		goto err;
	if (have[KW_UNIQUE_ITEMS]) {
		if (bson_iter_type(&kws[KW_UNIQUE_ITEMS].it) != BSON_TYPE_BOOL) {
			terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema keyword 'uniqueItems' must be a boolean");
			goto err;
		}
		n->unique_items = bson_iter_bool(&kws[KW_UNIQUE_ITEMS].it);
	}
	if (have[KW_ITEMS] && compile_items(cx, n, &kws[KW_ITEMS].it, depth, err) != 0)
		goto err;
	if (have[KW_ADDITIONAL_ITEMS]) {
		bson_type_t t = bson_iter_type(&kws[KW_ADDITIONAL_ITEMS].it);
		if (t == BSON_TYPE_BOOL) {
			n->addl_items_kind = bson_iter_bool(&kws[KW_ADDITIONAL_ITEMS].it) ? SCH_ADDL_TRUE
										 : SCH_ADDL_FALSE;
		} else if (t == BSON_TYPE_DOCUMENT) {
			n->addl_items_kind = SCH_ADDL_SCHEMA;
			if (compile_sub(cx, &kws[KW_ADDITIONAL_ITEMS].it, false, depth, &n->addl_items, err) != 0)
				goto err;
		} else {
			terr_set(err, TERR_TYPE_MISMATCH,
				 "$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a %s",
				 type_name(t));
			goto err;
		}
		/* additionalItems only means something after an items array */
		if (n->items_kind != SCH_ITEMS_ARRAY)
			n->addl_items_kind = SCH_ADDL_NONE;
	}

	/* Encryption. */
	if (compile_encryption(cx, n, have[KW_ENCRYPT] ? &kws[KW_ENCRYPT].it : NULL,
			       have[KW_ENCRYPT_METADATA] ? &kws[KW_ENCRYPT_METADATA].it : NULL, err) != 0)
		goto err;

	/* Object keywords. */
	if (have[KW_REQUIRED] && compile_required(n, &kws[KW_REQUIRED].it, err) != 0)
		goto err;
	if (have[KW_PROPERTIES] && compile_properties(cx, n, &kws[KW_PROPERTIES].it, depth, err) != 0)
		goto err;
	if (have[KW_PATTERN_PROPERTIES] || have[KW_ADDITIONAL_PROPERTIES]) {
		n->has_allowed = true;
		if (have[KW_PATTERN_PROPERTIES] &&
		    compile_pattern_properties(cx, n, &kws[KW_PATTERN_PROPERTIES].it, depth, err) != 0)
			goto err;
		if (have[KW_ADDITIONAL_PROPERTIES]) {
			bson_type_t t = bson_iter_type(&kws[KW_ADDITIONAL_PROPERTIES].it);
			if (t == BSON_TYPE_BOOL) {
				n->addl_props_kind = bson_iter_bool(&kws[KW_ADDITIONAL_PROPERTIES].it)
							     ? SCH_ADDL_TRUE : SCH_ADDL_FALSE;
			} else if (t == BSON_TYPE_DOCUMENT) {
				n->addl_props_kind = SCH_ADDL_SCHEMA;
				if (compile_sub(cx, &kws[KW_ADDITIONAL_PROPERTIES].it, false, depth,
						&n->addl_props, err) != 0)
					goto err;
			} else {
				terr_set(err, TERR_TYPE_MISMATCH,
					 "$jsonSchema keyword 'additionalProperties' must be an object or a boolean");
				goto err;
			}
		}
	}
	if (have[KW_MIN_PROPERTIES] &&
	    parse_nonneg_long(&kws[KW_MIN_PROPERTIES].it, &n->min_props, err) != 0)
		goto err;
	if (have[KW_MAX_PROPERTIES] &&
	    parse_nonneg_long(&kws[KW_MAX_PROPERTIES].it, &n->max_props, err) != 0)
		goto err;
	if (have[KW_DEPENDENCIES] &&
	    compile_dependencies(cx, n, &kws[KW_DEPENDENCIES].it, top, depth, err) != 0)
		goto err;

	/* Logical keywords. */
	if (have[KW_ALL_OF] &&
	    compile_logical(cx, &kws[KW_ALL_OF].it, top, depth, &n->all_of, &n->nall_of, err) != 0)
		goto err;
	if (have[KW_ANY_OF] &&
	    compile_logical(cx, &kws[KW_ANY_OF].it, top, depth, &n->any_of, &n->nany_of, err) != 0)
		goto err;
	if (have[KW_ONE_OF] &&
	    compile_logical(cx, &kws[KW_ONE_OF].it, top, depth, &n->one_of, &n->none_of, err) != 0)
		goto err;
	if (have[KW_NOT]) {
		if (bson_iter_type(&kws[KW_NOT].it) != BSON_TYPE_DOCUMENT) {
			terr_set(err, TERR_TYPE_MISMATCH,
				 "$jsonSchema keyword 'not' must be an object, but found an element of type %s",
				 type_name(bson_iter_type(&kws[KW_NOT].it)));
			goto err;
		}
		if (compile_sub(cx, &kws[KW_NOT].it, top, depth, &n->not_, err) != 0)
			goto err;
	}
	if (have[KW_ENUM] && compile_enum(n, &kws[KW_ENUM].it, top, err) != 0)
		goto err;

	/* Required names that are also properties are ticked off while the
	 * matcher walks the fields; the rest are looked up. */
	for (uint32_t i = 0; i < n->nprops; i++)
		n->props[i].req_bit = -1;
	if (n->nrequired)
		n->req_extra = bson_malloc(n->nrequired * sizeof *n->req_extra);
	for (uint32_t r = 0, bit = 0; r < n->nrequired; r++) {
		uint32_t i;
		for (i = 0; i < n->nprops; i++)
			if (strcmp(n->props[i].name, n->required[r]) == 0 &&
			    strlen(n->required[r]) == n->props[i].len)
				break;
		if (i < n->nprops && bit < 64 && n->props[i].req_bit < 0 && !n->props[i].dotted) {
			n->props[i].req_bit = (int)bit;
			n->req_mask |= 1ull << bit;
			bit++;
		} else {
			n->req_extra[n->nreq_extra++] = n->required[r];
		}
	}

	if (top && n->has_type && !(n->type_mask & (1u << BSON_TYPE_DOCUMENT)))
		n->always_false = true;
	sch_node_finish(n);
	*out = n;
	return 0;
err:
	sch_node_free(n);
	return ret;
}

void
sch_node_free(snode_t *n)
{
	if (n == NULL)
		return;
	bson_destroy(n->raw);
	bson_free(n->title);
	bson_free(n->description);
	if (n->pattern)
		pcre2_code_free(n->pattern);
	sch_node_free(n->items);
	for (uint32_t i = 0; i < n->nitems; i++)
		sch_node_free(n->items_arr[i]);
	bson_free(n->items_arr);
	sch_node_free(n->addl_items);
	for (uint32_t i = 0; i < n->nprops; i++) {
		bson_free(n->props[i].name);
		sch_node_free(n->props[i].schema);
	}
	bson_free(n->props);
	for (uint32_t i = 0; i < n->nrequired; i++)
		bson_free(n->required[i]);
	bson_free(n->required);
	bson_free(n->req_extra);
	for (uint32_t i = 0; i < n->npats; i++) {
		bson_free(n->pats[i].src);
		if (n->pats[i].re)
			pcre2_code_free(n->pats[i].re);
		sch_node_free(n->pats[i].schema);
	}
	bson_free(n->pats);
	sch_node_free(n->addl_props);
	for (uint32_t i = 0; i < n->ndeps; i++) {
		bson_free(n->deps[i].name);
		sch_node_free(n->deps[i].schema);
		for (uint32_t j = 0; j < n->deps[i].nprops; j++)
			bson_free(n->deps[i].props[j]);
		bson_free(n->deps[i].props);
	}
	bson_free(n->deps);
	for (uint32_t i = 0; i < n->nall_of; i++)
		sch_node_free(n->all_of[i]);
	bson_free(n->all_of);
	for (uint32_t i = 0; i < n->nany_of; i++)
		sch_node_free(n->any_of[i]);
	bson_free(n->any_of);
	for (uint32_t i = 0; i < n->none_of; i++)
		sch_node_free(n->one_of[i]);
	bson_free(n->one_of);
	sch_node_free(n->not_);
	if (n->enum_arr)
		bson_destroy(n->enum_arr);
	bson_free(n);
}

int
schema_compile_flags(const bson_t *json_schema, unsigned flags, schema_t **out, terr_t *err)
{
	cctx_t cx = {flags, false};
	schema_t *s;

	*out = NULL;
	if (json_schema == NULL)
		return terr_set(err, TERR_TYPE_MISMATCH, "$jsonSchema must be an object");
	s = bson_malloc0(sizeof *s);
	if (compile_node(&cx, bson_get_data(json_schema), json_schema->len, true, 0, &s->root,
			 err) != 0) {
		bson_free(s);
		return -1;
	}
	s->uses_encrypt = cx.uses_encrypt;
	*out = s;
	return 0;
}

int
schema_compile(const bson_t *json_schema, schema_t **out, terr_t *err)
{
	return schema_compile_flags(json_schema, 0, out, err);
}

void
schema_free(schema_t *s)
{
	if (s == NULL)
		return;
	sch_node_free(s->root);
	bson_free(s);
}

const char *
schema_title(const schema_t *s)
{
	return s ? s->root->title : NULL;
}

bool
schema_uses_encrypt(const schema_t *s)
{
	return s && s->uses_encrypt;
}
