/*
 * cmd_index.c -- createIndexes, listIndexes, dropIndexes.
 *
 * Spec validation follows mongod's index_key_validate (codes and messages);
 * conflicts with existing indexes follow the index catalog (85
 * IndexOptionsConflict, 86 IndexKeySpecsConflict, 67 for the 64-index
 * limit).  The build itself (over existing documents, a unique violation
 * leaving nothing behind) is storage_index_create with the keygen of
 * query/keygen.c.  Special index kinds not built yet (2d, 2dsphere,
 * columnstore, compound wildcard) are refused with 238; single-field
 * wildcard indexes ($**, a.$**, wildcardProjection), hashed indexes (one
 * hashed field, never unique: 31303, 16764) and text indexes (normalized by
 * text/'s fixSpec, one per collection: 67, or the catalog's 85 for the same
 * key pattern with other options) exist.
 */
#include "commands/commands_private.h"
#include "commands/clustered.h"
#include "commands/cmd_timeseries.h"

#include <math.h>
#include <string.h>

#include "bson/collation.h"
#include "bson/value.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/match.h"
#include "geo/geo.h"
#include "text/text.h"
#include "common/log.h"

/* cmd_catalog.c */
int cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err);
void cmd_array_source(bson_t *docs_steal, cursor_source_t *src);

#define INDEX_MAX 64

/* Top-level fields an index spec may carry (mongod's allowedFieldNames). */
static const char *const spec_fields[] = {
	"key", "name", "v", "unique", "sparse", "partialFilterExpression", "expireAfterSeconds",
	"hidden", "collation", "background", "ns", "weights", "default_language",
	"language_override", "textIndexVersion", "2dsphereIndexVersion", "bits", "min", "max",
	"bucketSize", "storageEngine", "wildcardProjection", "coarsestIndexedLevel",
	"finestIndexedLevel", "dropDups", "originalSpec", "prepareUnique", "clustered",
	"columnstoreProjection", "columnstoreCompressor", NULL,
};

/* Options that make two specs on the same key different indexes or
 * conflicting ones; the rest (name, v, ns, background, hidden) do not. */
static const char *const equiv_fields[] = {
	"unique", "sparse", "partialFilterExpression", "expireAfterSeconds", "collation",
	"prepareUnique", "weights", "default_language", "language_override", "textIndexVersion", NULL,
};

static bool
in_list(const char *const *list, const char *s)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static int
spec_error(terr_t *err, int code, const char *fmt, const char *field, const bson_t *spec)
{
	char *s = bv_doc_to_mongo_string(spec);

	terr_set(err, code, fmt, field, s);
	bson_free(s);
	return -1;
}

static bool
is_bool_like(const bson_iter_t *it)
{
	return BSON_ITER_HOLDS_BOOL(it) || BSON_ITER_HOLDS_NUMBER(it);
}

/* Index plugins built so far (the others answer 238). */
/* 2dsphere_bucket: a time-series collection's buckets only (createIndexes checks) */
static const char *const built_plugins[] = {"hashed", "text", "2d", "2dsphere", "2dsphere_bucket", NULL};

/* The key pattern rules of validateKeyPattern plus the plugin refusals;
 * *plugin_out: the plugin named (NULL: a plain index). */
static int
key_pattern_check(const bson_t *key, const char **plugin_out, terr_t *err)
{
	bson_iter_t it;
	const char *plugin = NULL;
	int n = 0;

	if (key->len > 2048)
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index key pattern too large.");
	if (bson_empty(key))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index keys cannot be empty.");
	bson_iter_init(&it, key);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it), *p;
		bson_iter_t dup;
		bson_iter_init(&dup, key);
		while (bson_iter_next(&dup) && bson_iter_offset(&dup) < bson_iter_offset(&it))
			if (strcmp(bson_iter_key(&dup), f) == 0) {
				char *s = bv_doc_to_mongo_string(key);
				terr_set(err, TERR_BAD_VALUE,
				    "The field '%s' appears multiple times in the index key pattern %s", f, s);
				bson_free(s);
				return -1;
			}
		n++;
		if (BSON_ITER_HOLDS_NUMBER(&it)) {
			double d = bson_iter_as_double(&it);
			if (BSON_ITER_HOLDS_DECIMAL128(&it)) {
				bson_value_t v = *bson_iter_value(&it);
				d = bv_as_double(&v);
				if (bv_is_nan(&v))
					d = NAN;
			}
			if (isnan(d))
				return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Values in the index key pattern cannot be NaN.");
			if (d == 0.0)
				return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Values in the index key pattern cannot be 0.");
		} else if (BSON_ITER_HOLDS_UTF8(&it)) {
			const char *s = bson_iter_utf8(&it, NULL);
			if (*s == '\0')
				return terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "Values in the index key pattern cannot be empty strings");
			if (plugin != NULL && strcmp(plugin, s) != 0)
				return terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "Can't use more than one index plugin for a single index.");
			plugin = s;
		} else {
			return terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.",
			    bv_type_name(bson_iter_type(&it)));
		}
		if (*f == '\0')
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index keys cannot be an empty field.");
		if (strcmp(f, "$**") == 0 || (strlen(f) > 4 && strcmp(f + strlen(f) - 4, ".$**") == 0)) {
			if (BSON_ITER_HOLDS_UTF8(&it))
				continue;   /* "$**": "text" and friends: the plugin check below */
			if (bson_count_keys(key) != 1)
				return terr_set(err, TERR_NOT_IMPLEMENTED,
				    "compound wildcard indexes are not supported by Tamga yet");
			if (strcmp(f, "$**") != 0 && (strncmp(f, "$**", 3) == 0 || strstr(f, "..") != NULL ||
			    f[0] == '.'))
				return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index keys cannot contain an empty field.");
			continue;
		}
		for (p = f;;) {
			const char *dot = strchr(p, '.');
			size_t len = dot ? (size_t)(dot - p) : strlen(p);
			if (len == 0)
				return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index keys cannot contain an empty field.");
			if (p[0] == '$' && !(p != f && ((len == 3 && (!strncmp(p, "$db", 3) || !strncmp(p, "$id", 3))) ||
			    (len == 4 && !strncmp(p, "$ref", 4)))))
				return terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "Index key contains an illegal field name: field name starts with '$'.");
			if (dot == NULL)
				break;
			p = dot + 1;
		}
	}
	if (n > KEYGEN_MAX_FIELDS)
		return terr_set(err, 13103, "too many compound keys");
	if (plugin != NULL) {
		static const char *const known[] = {"2d", "2dsphere", "text", "hashed", "columnstore",
			"2dsphere_bucket", NULL};
		if (strcmp(plugin, "geoHaystack") == 0)
			return terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "GeoHaystack indexes cannot be created in version 5.0 and above");
		if (!in_list(known, plugin))
			return terr_set(err, TERR_CANNOT_CREATE_INDEX, "Unknown index plugin '%s'", plugin);
		*plugin_out = plugin;
		if (in_list(built_plugins, plugin))
			return 0;
		return terr_set(err, TERR_NOT_IMPLEMENTED, "%s indexes are not supported by Tamga yet", plugin);
	}
	return 0;
}

/*
 * How mongod frames a spec error: validateIndexSpec's errors quote the spec
 * as given, the index catalog's quote it with v: 2 appended, TTL checks
 * quote it after ". Index spec: ", and a few are plain.
 */
typedef enum { WRAP_GIVEN, WRAP_GIVEN_V2, WRAP_TTL, WRAP_PLAIN } wrap_t;

static char *
spec_string(const bson_t *spec, bool add_v)
{
	bson_t copy;
	char *s;

	if (!add_v || bson_has_field(spec, "v"))
		return bv_doc_to_mongo_string(spec);
	bson_copy_to(spec, &copy);
	BSON_APPEND_INT32(&copy, "v", 2);
	s = bv_doc_to_mongo_string(&copy);
	bson_destroy(&copy);
	return s;
}

static int
spec_wrap(terr_t *err, wrap_t how, const bson_t *spec)
{
	char *s;

	if (how == WRAP_PLAIN)
		return -1;
	s = spec_string(spec, how == WRAP_GIVEN_V2);
	if (how == WRAP_TTL) {
		char *msg = bson_strdup_printf(". Index spec: %s", s);
		terr_wrap(err, msg);
		bson_free(msg);
	} else {
		char *msg = bson_strdup_printf("Error in specification %s", s);
		terr_wrap(err, msg);
		bson_free(msg);
	}
	bson_free(s);
	return -1;
}

/* expireAfterSeconds as stored: an int32 (fraction dropped). */
static int
ttl_check(const bson_iter_t *it, int32_t *out, terr_t *err)
{
	bson_value_t v = *bson_iter_value((bson_iter_t *)it);
	double d;

	if (!bv_is_number(&v))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX,
		    "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'",
		    bv_type_name(v.value_type));
	if (bv_is_nan(&v))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "TTL index 'expireAfterSeconds' option must not be NaN");
	d = bv_as_double(&v);
	if (d < 0)
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "TTL index 'expireAfterSeconds' option cannot be less than 0");
	if (d >= 2147483648.0)
		return terr_set(err, TERR_CANNOT_CREATE_INDEX,
		    "TTL index 'expireAfterSeconds' must be within the range of a 32-bit integer");
	*out = (int32_t)d;
	return 0;
}

/* ---- partial filters: the operators an index filter may hold ---------------- */

static void
tree_append(bson_string_t *t, int depth, const char *line)
{
	int i;

	for (i = 0; i < depth; i++)
		bson_string_append(t, "    ");
	bson_string_append(t, line);
	bson_string_append(t, "\n");
}

static char *
value_string(const bson_iter_t *it)
{
	return bv_to_mongo_string(bson_iter_value((bson_iter_t *)it));
}

/* mongod's debug print of one refused leaf {path: {op: v}}. */
static void
leaf_tree(bson_string_t *t, int depth, const char *path, bson_iter_t *op)
{
	const char *k = bson_iter_key(op);
	char *v = value_string(op), *line;

	if (!strcmp(k, "$in") && BSON_ITER_HOLDS_ARRAY(op)) {
		bson_iter_t a;
		bson_string_t *s = bson_string_new("[");
		bson_iter_recurse(op, &a);
		while (bson_iter_next(&a)) {
			char *e = value_string(&a);
			bson_string_append_printf(s, " %s", e);
			bson_free(e);
		}
		bson_string_append(s, "]");
		line = bson_strdup_printf("%s $in %s", path, s->str);
		bson_string_free(s, true);
	} else if (!strcmp(k, "$exists")) {
		line = bson_strdup_printf("%s exists", path);
	} else if (!strcmp(k, "$regex") && BSON_ITER_HOLDS_REGEX(op)) {
		const char *opts, *re = bson_iter_regex(op, &opts);
		line = bson_strdup_printf("%s regex /%s/%s", path, re, opts ? opts : "");
	} else if (!strcmp(k, "$regex") && BSON_ITER_HOLDS_UTF8(op)) {
		line = bson_strdup_printf("%s regex /%s/", path, bson_iter_utf8(op, NULL));
	} else if (!strcmp(k, "$size")) {
		line = bson_strdup_printf("%s $size : %s", path, v);
	} else if (!strcmp(k, "$mod") && BSON_ITER_HOLDS_ARRAY(op)) {
		bson_iter_t a;
		char *d = NULL, *r = NULL;
		bson_iter_recurse(op, &a);
		if (bson_iter_next(&a))
			d = value_string(&a);
		if (bson_iter_next(&a))
			r = value_string(&a);
		line = bson_strdup_printf("%s mod %s %% x == %s", path, d ? d : "", r ? r : "");
		bson_free(d);
		bson_free(r);
	} else {
		line = bson_strdup_printf("%s %s %s", path, k, v);
	}
	tree_append(t, depth, line);
	bson_free(line);
	bson_free(v);
}

static bool partial_node_ok(const bson_t *node, bson_string_t *t);

/* {path: {ops}} for a partial filter; false with the tree of the refused part. */
static bool
partial_ops_ok(const char *path, bson_iter_t *ops, bson_string_t *t)
{
	static const char *const allowed[] = {"$eq", "$gt", "$gte", "$lt", "$lte", "$in", "$type", NULL};

	while (bson_iter_next(ops)) {
		const char *k = bson_iter_key(ops);
		if (in_list(allowed, k) || (!strcmp(k, "$exists") && bson_iter_as_bool(ops)))
			continue;
		if (!strcmp(k, "$not") && BSON_ITER_HOLDS_DOCUMENT(ops)) {
			bson_iter_t sub;
			bool simple;
			bson_iter_recurse(ops, &sub);
			bson_iter_next(&sub);
			/* $ne and $nin normalize to $not of one leaf */
			simple = !strcmp(bson_iter_key(&sub), "$eq") || !strcmp(bson_iter_key(&sub), "$in") ||
			    !strcmp(bson_iter_key(&sub), "$exists");
			tree_append(t, 0, "$not");
			if (!simple)
				tree_append(t, 1, "$and");
			leaf_tree(t, simple ? 1 : 2, path, &sub);
			return false;
		}
		if (!strcmp(k, "$elemMatch")) {
			char *line = bson_strdup_printf("%s $elemMatch (value)", path);
			tree_append(t, 0, line);
			bson_free(line);
			if (BSON_ITER_HOLDS_DOCUMENT(ops)) {
				bson_iter_t sub;
				bson_iter_recurse(ops, &sub);
				while (bson_iter_next(&sub)) {
					char *v = value_string(&sub);
					bson_string_append_printf(t, "     %s %s\n", bson_iter_key(&sub), v);
					bson_free(v);
				}
			}
			return false;
		}
		if (!strncmp(k, "$bits", 5)) {
			char *line = bson_strdup_printf("%s %s: [%s]", path, k, "0");
			tree_append(t, 0, line);
			bson_free(line);
			return false;
		}
		leaf_tree(t, 0, path, ops);
		return false;
	}
	return true;
}

static bool
partial_node_ok(const bson_t *node, bson_string_t *t)
{
	bson_iter_t it, sub;

	bson_iter_init(&it, node);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if ((!strcmp(k, "$and") || !strcmp(k, "$or")) && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_iter_recurse(&it, &sub);
			while (bson_iter_next(&sub)) {
				const uint8_t *d;
				uint32_t l;
				bson_t child;
				if (!BSON_ITER_HOLDS_DOCUMENT(&sub))
					continue;
				bson_iter_document(&sub, &l, &d);
				bson_init_static(&child, d, l);
				if (!partial_node_ok(&child, t))
					return false;
			}
		} else if (!strcmp(k, "$nor") && BSON_ITER_HOLDS_ARRAY(&it)) {
			tree_append(t, 0, "$nor");
			bson_iter_recurse(&it, &sub);
			while (bson_iter_next(&sub)) {
				bson_iter_t leaf, op;
				if (bson_iter_recurse(&sub, &leaf) && bson_iter_next(&leaf) &&
				    BSON_ITER_HOLDS_DOCUMENT(&leaf) && bson_iter_recurse(&leaf, &op) && bson_iter_next(&op))
					leaf_tree(t, 1, bson_iter_key(&leaf), &op);
			}
			return false;
		} else if (k[0] != '$' && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_recurse(&it, &sub);
			if (!partial_ops_ok(k, &sub, t))
				return false;
		} else if (!strcmp(k, "$_internalBucketGeoWithin")) {
			/* a time-series partial filter's translated $geoWithin on a
			 * measurement (mongod allows it in a bucket index's filter) */
			continue;
		} else if (k[0] == '$') {
			char *line = bson_strdup_printf("%s", k);
			tree_append(t, 0, line);
			bson_free(line);
			return false;
		}
	}
	return true;
}

/* Compile a partialFilterExpression and check it holds only what an index
 * filter may (mongod: "Expression not supported in partial index"). */
static int
partial_check(const bson_t *pf, bool *unsupported, terr_t *err)
{
	match_t *m = NULL;
	match_options_t mo = {0};
	bson_t *norm;
	bson_string_t *t;
	int ret = 0;

	*unsupported = false;
	mo.disallow = MATCH_DISALLOW_EXPR | MATCH_DISALLOW_JSON_SCHEMA | MATCH_DISALLOW_TEXT |
	    MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR;
	RET(match_compile(pf, &mo, &m, err));
	norm = match_to_bson(m);
	t = bson_string_new("");
	if (!partial_node_ok(norm, t)) {
		*unsupported = true;
		ret = terr_set(err, TERR_CANNOT_CREATE_INDEX, "Expression not supported in partial index: %s", t->str);
	}
	bson_string_free(t, true);
	bson_destroy(norm);
	match_free(m);
	return ret;
}

/* Whether a spec's key names plugin as a field's value. */
static bool
spec_has_plugin(const bson_t *spec, const char *plugin)
{
	bson_iter_t it, k;

	if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &k))
		return false;
	while (bson_iter_next(&k))
		if (BSON_ITER_HOLDS_UTF8(&k) && strcmp(bson_iter_utf8(&k, NULL), plugin) == 0)
			return true;
	return false;
}

static const char *const id_spec_fields[] = {"key", "name", "v", "collation", "ns", "_id", NULL};

static bool
key_is_wildcard(const bson_t *key)
{
	bson_iter_t it;
	const char *k;
	size_t n;

	if (key == NULL || !bson_iter_init(&it, key) || !bson_iter_next(&it) || BSON_ITER_HOLDS_UTF8(&it))
		return false;
	k = bson_iter_key(&it);
	n = strlen(k);
	return strcmp(k, "$**") == 0 || (n > 4 && strcmp(k + n - 4, ".$**") == 0);
}

/* wildcardProjection: only with {"$**": n}, a non-empty object, all
 * inclusions or all exclusions (_id aside). */
static int
wildcard_projection_check(const bson_t *spec, bson_iter_t *it, terr_t *err)
{
	bson_iter_t k, p;
	bson_t key;
	int mode = -1;

	if (!bson_iter_init_find(&k, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&k)) {
		return terr_set(err, TERR_BAD_VALUE, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes");
	} else {
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&k, &l, &d);
		bson_init_static(&key, d, l);
	}
	if (!key_is_wildcard(&key))
		return terr_set(err, TERR_BAD_VALUE, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes");
	if (!BSON_ITER_HOLDS_DOCUMENT(it))
		return terr_set(err, TERR_TYPE_MISMATCH, "The field 'wildcardProjection' must be a non-empty object, but got %s",
		    bv_type_name(bson_iter_type(it)));
	if (!bson_has_field(&key, "$**"))
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "The field 'wildcardProjection' is only allowed when 'key' is {\"$**\": ±1} or {\"$**\": \"columnstore\"}");
	bson_iter_recurse(it, &p);
	if (!bson_iter_next(&p))
		return terr_set(err, TERR_FAILED_TO_PARSE, "The 'wildcardProjection' field can't be an empty object");
	do {
		const char *f = bson_iter_key(&p);
		int on;
		if (!BSON_ITER_HOLDS_NUMBER(&p) && !BSON_ITER_HOLDS_BOOL(&p))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "wildcardProjection values other than numbers and booleans are not supported by Tamga yet");
		on = bson_iter_as_bool(&p) ? 1 : 0;
		if (strcmp(f, "_id") == 0)
			continue;
		if (mode >= 0 && on != mode) {
			terr_set(err, on ? 31253 : 31254, on ? "Cannot do inclusion on field %s in exclusion projection" :
			    "Cannot do exclusion on field %s in inclusion projection", f);
			terr_wrap(err, "Failed to parse projection: wildcardProjection");
			return -1;
		}
		mode = on;
	} while (bson_iter_next(&p));
	return 0;
}

/* What the geo access methods refuse (2d_common.cpp, s2_common.cpp):
 * one 2d field and first; levels, versions, bits, min and max. */
static int
geo_spec_check(const bson_t *spec, const bson_t *key, const char *plugin, terr_t *err)
{
	bson_iter_t it;
	int n2d = 0, pos = 0, first2d = -1;

	if (strcmp(plugin, "2dsphere") == 0 || strcmp(plugin, "2dsphere_bucket") == 0) {
		geo_s2_params_t p;
		bson_t copy;
		int rc;
		if (bson_iter_init_find(&it, spec, "2dsphereIndexVersion"))
			return geo_s2_params(spec, &p, err);
		/* a spec without a version is version 3 */
		bson_copy_to(spec, &copy);
		BSON_APPEND_INT32(&copy, "2dsphereIndexVersion", 3);
		rc = geo_s2_params(&copy, &p, err);
		bson_destroy(&copy);
		return rc;
	}
	bson_iter_init(&it, key);
	while (bson_iter_next(&it)) {
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "2d") == 0) {
			if (first2d < 0)
				first2d = pos;
			n2d++;
		}
		pos++;
	}
	if (n2d > 1)
		return terr_set(err, 16800, "can't have 2 geo fields");
	if (first2d != 0)
		return terr_set(err, 16801, "2d has to be first in index");
	{
		geo_2d_params_t p;
		return geo_2d_params(spec, &p, err);
	}
}

/* What the hashed access method refuses (mongod's parseHashParams and
 * HashAccessMethod): more than one hashed field, unique. */
static int
hashed_check(const bson_t *spec, const bson_t *key, terr_t *err)
{
	bson_iter_t it;
	int n = 0;

	bson_iter_init(&it, key);
	while (bson_iter_next(&it)) {
		n += BSON_ITER_HOLDS_UTF8(&it);
		if (strstr(bson_iter_key(&it), "$**") != NULL)
			return terr_set(err, TERR_NOT_IMPLEMENTED, "hashed wildcard indexes are not supported by Tamga yet");
	}
	if (n != 1) {
		char *s = bv_doc_to_mongo_string(key);
		terr_set(err, 31303, "A maximum of one index field is allowed to be hashed but found %d for 'key' %s", n, s);
		bson_free(s);
		return -1;
	}
	if (bson_iter_init_find(&it, spec, "unique") && bson_iter_as_bool(&it))
		return terr_set(err, 16764, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.");
	return 0;
}

/*
 * Validate one requested spec and build the spec to store in *out (v: 2
 * first, then key and name, then the other fields as given, ns dropped,
 * expireAfterSeconds as an int32).  Errors carry mongod's framing.
 */
static int spec_prepare_fixed(const bson_t *spec, bool is_text, bson_t *out, terr_t *err);

static int
spec_prepare(const bson_t *spec, bson_t *out, terr_t *err)
{
	bson_iter_t it;
	bson_t key, fixed;
	int ret;

	/* a text index spec is first normalized as mongod's fixSpec does (key
	 * {_fts: "text", _ftsx: 1}, weights, languages, textIndexVersion) */
	if (bson_iter_init_find(&it, spec, "key") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;
		const char *plugin = NULL;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&key, d, l);
		if (text_key_is_text(&key)) {
			if (key_pattern_check(&key, &plugin, err) != 0) {
				bson_init(out);
				return spec_wrap(err, err->code == TERR_NOT_IMPLEMENTED ? WRAP_PLAIN : WRAP_GIVEN, spec);
			}
			if (text_spec_fix(spec, &fixed, err) != 0) {
				bson_destroy(&fixed);
				bson_init(out);
				return -1;
			}
			ret = spec_prepare_fixed(&fixed, true, out, err);
			bson_destroy(&fixed);
			return ret;
		}
	}
	return spec_prepare_fixed(spec, false, out, err);
}

int
cmd_index_spec_check(const bson_t *spec, terr_t *err)
{
	bson_iter_t it;
	bson_t out;
	int ret;

	if (bson_iter_init_find(&it, spec, "name") && BSON_ITER_HOLDS_UTF8(&it) &&
	    strcmp(bson_iter_utf8(&it, NULL), "_id_") == 0) {
		/* the _id index has its own, shorter list of fields */
		bson_iter_init(&it, spec);
		while (bson_iter_next(&it))
			if (!in_list(id_spec_fields, bson_iter_key(&it)))
				return spec_error(err, 197,
				    "The field '%s' is not valid for an index specification. Specification: %s",
				    bson_iter_key(&it), spec);
		return 0;
	}
	ret = spec_prepare(spec, &out, err);
	bson_destroy(&out);
	return ret;
}

static int
spec_prepare_fixed(const bson_t *spec, bool is_text, bson_t *out, terr_t *err)
{
	bson_iter_t it;
	bson_t key, pf;
	const char *name = NULL, *plugin = NULL;
	bool has_key = false, has_partial = false, sparse = false, has_ttl = false, unsupported;
	int32_t ttl = 0;
	wrap_t how = WRAP_GIVEN;
	const coll_t *collation = NULL;

	bson_init(out);
	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if (!in_list(spec_fields, f)) {
			spec_error(err, 197, "The field '%s' is not valid for an index specification. Specification: %s",
			    f, spec);
			goto err;
		}
		if (strcmp(f, "key") == 0) {
			const uint8_t *d;
			uint32_t l;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH, "The field 'key' must be an object, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			bson_iter_document(&it, &l, &d);
			bson_init_static(&key, d, l);
			if (key_pattern_check(&key, &plugin, err) != 0) {
				if (err->code == TERR_NOT_IMPLEMENTED)
					how = WRAP_PLAIN;
				goto err;
			}
			has_key = true;
		} else if (strcmp(f, "name") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH, "The field 'name' must be a string, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			name = bson_iter_utf8(&it, NULL);
		} else if (strcmp(f, "hidden") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH, "The field 'name' must be a bool, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
		} else if (strcmp(f, "v") == 0) {
			double v;
			if (!BSON_ITER_HOLDS_NUMBER(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH, "The field 'v' must be a number, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			v = bson_iter_as_double(&it);
			if (v != 1 && v != 2) {
				char *s = bv_doc_to_mongo_string(spec);
				terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "Invalid index specification %s; cannot create an index with v=%d", s, (int)v);
				bson_free(s);
				goto err;
			}
		} else if (strcmp(f, "partialFilterExpression") == 0) {
			const uint8_t *d;
			uint32_t l;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH,
				    "The field 'partialFilterExpression' must be an object, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			bson_iter_document(&it, &l, &d);
			bson_init_static(&pf, d, l);
			has_partial = true;
		} else if (strcmp(f, "collation") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				terr_set(err, TERR_TYPE_MISMATCH, "The field 'collation' must be an object, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			if (coll_parse_value(bson_iter_value(&it), "collation", &collation, err) != 0) {
				how = WRAP_PLAIN;
				goto err;
			}
		} else if (!strcmp(f, "unique") || !strcmp(f, "sparse") || !strcmp(f, "background") ||
		           !strcmp(f, "dropDups") || !strcmp(f, "prepareUnique") || !strcmp(f, "clustered")) {
			if (!is_bool_like(&it)) {
				char *s = bv_to_mongo_string(bson_iter_value(&it));
				terr_set(err, TERR_TYPE_MISMATCH, "The field '%s has value %s: %s, which is not convertible to bool",
				    f, f, s);
				bson_free(s);
				goto err;
			}
			if (!strcmp(f, "sparse"))
				sparse = bson_iter_as_bool(&it);
			if (!strcmp(f, "clustered")) {
				terr_set(err, TERR_NOT_IMPLEMENTED, "clustered indexes are not supported by Tamga yet");
				how = WRAP_PLAIN;
				goto err;
			}
		} else if (strcmp(f, "expireAfterSeconds") == 0) {
			has_ttl = true;
		} else if (!strcmp(f, "wildcardProjection")) {
			if (wildcard_projection_check(spec, &it, err) != 0)
				goto err;
		} else if ((!strcmp(f, "weights") && !is_text) || !strcmp(f, "columnstoreProjection")) {
			terr_set(err, TERR_NOT_IMPLEMENTED, "the index option '%s' is not supported by Tamga yet", f);
			how = WRAP_PLAIN;
			goto err;
		}
	}
	if (!has_key) {
		terr_set(err, TERR_FAILED_TO_PARSE, "The 'key' field is a required property of an index specification");
		goto err;
	}
	if (name == NULL) {
		terr_set(err, TERR_FAILED_TO_PARSE, "The 'name' field is a required property of an index specification");
		goto err;
	}
	{
		/* mongod's validateIndexSpec: a unique index needs no preparing */
		bson_iter_t ui, pi;
		if (bson_iter_init_find(&ui, spec, "unique") && bson_iter_as_bool(&ui) &&
		    bson_iter_init_find(&pi, spec, "prepareUnique") && bson_iter_as_bool(&pi)) {
			char *s = bv_doc_to_mongo_string(spec);
			terr_set(err, TERR_CANNOT_CREATE_INDEX, "Invalid index specification %s; cannot create an index with "
			    "the 'unique' option and the 'prepareUnique' option", s);
			bson_free(s);
			goto err;
		}
	}
	if (has_partial) {
		if (partial_check(&pf, &unsupported, err) != 0) {
			how = unsupported ? WRAP_GIVEN_V2 : WRAP_GIVEN;
			goto err;
		}
	}
	how = WRAP_PLAIN;
	if (strcmp(name, "*") == 0) {
		terr_set(err, TERR_BAD_VALUE, "The index name '*' is not valid.");
		goto err;
	}
	/* {_id: "hashed"} is an ordinary secondary index (hashed sharding on _id) */
	if (bson_count_keys(&key) == 1 && bson_iter_init_find(&it, &key, "_id") &&
	    !(BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "hashed") == 0)) {
		if (!BSON_ITER_HOLDS_NUMBER(&it) || bson_iter_as_double(&it) != 1) {
			char *s = bv_doc_to_mongo_string(&key);
			terr_set(err, TERR_BAD_VALUE, "The field 'key' for an _id index must be {_id: 1}, but got %s", s);
			bson_free(s);
			goto err;
		}
		bson_iter_init(&it, spec);
		while (bson_iter_next(&it))
			if (!in_list(id_spec_fields, bson_iter_key(&it))) {
				char *s = spec_string(spec, true);
				if (!strcmp(bson_iter_key(&it), "hidden"))
					terr_set(err, TERR_BAD_VALUE, "can't hide _id index");
				else
					terr_set(err, 197, "The field '%s' is not valid for an _id index specification. Specification: %s",
					    bson_iter_key(&it), s);
				bson_free(s);
				goto err;
			}
	}
	how = WRAP_GIVEN_V2;
	if (*name == '\0') {
		terr_set(err, TERR_CANNOT_CREATE_INDEX, "index name cannot be empty");
		goto err;
	}
	if (key_is_wildcard(&key)) {
		static const char *const opts[] = {"sparse", "unique", NULL};
		int k;
		for (k = 0; opts[k] != NULL; k++)
			if (bson_iter_init_find(&it, spec, opts[k]) && bson_iter_as_bool(&it)) {
				terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index type 'wildcard' does not support the '%s' option",
				    opts[k]);
				goto err;
			}
		if (has_ttl) {
			terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "cannot make a TTL index :: caused by :: Index type 'wildcard' does not support the 'expireAfterSeconds' option");
			goto err;
		}
	}
	if (is_text && collation != NULL) {
		char *cs = bv_doc_to_mongo_string(coll_spec(collation));
		terr_set(err, TERR_CANNOT_CREATE_INDEX, "Index type 'text' does not support collation: %s", cs);
		bson_free(cs);
		how = WRAP_PLAIN;
		goto err;
	}
	if (plugin != NULL && strcmp(plugin, "hashed") == 0 && hashed_check(spec, &key, err) != 0) {
		how = WRAP_PLAIN;
		goto err;
	}
	if (plugin != NULL && (strcmp(plugin, "2dsphere") == 0 || strcmp(plugin, "2d") == 0 ||
	                       strcmp(plugin, "2dsphere_bucket") == 0) &&
	    geo_spec_check(spec, &key, plugin, err) != 0) {
		how = WRAP_PLAIN;
		goto err;
	}
	if (has_partial && sparse) {
		terr_set(err, TERR_CANNOT_CREATE_INDEX, "cannot mix \"partialFilterExpression\" and \"sparse\" options");
		goto err;
	}
	if (has_ttl) {
		how = WRAP_TTL;
		bson_iter_init_find(&it, spec, "expireAfterSeconds");
		if (ttl_check(&it, &ttl, err) != 0)
			goto err;
		how = WRAP_PLAIN;
		if (bson_count_keys(&key) != 1) {
			char *s = bv_doc_to_mongo_string(spec);
			terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", s);
			bson_free(s);
			goto err;
		}
	}
	BSON_APPEND_INT32(out, "v", 2);
	BSON_APPEND_DOCUMENT(out, "key", &key);
	BSON_APPEND_UTF8(out, "name", name);
	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if (!strcmp(f, "v") || !strcmp(f, "key") || !strcmp(f, "name") || !strcmp(f, "ns") ||
		    !strcmp(f, "collation") || (!strcmp(f, "hidden") && !bson_iter_as_bool(&it)))
			continue;
		if (!strcmp(f, "expireAfterSeconds")) {
			BSON_APPEND_INT32(out, f, ttl);
			continue;
		}
		bson_append_iter(out, f, -1, &it);
	}
	/* S2AccessMethod::fixSpec (and S2BucketAccessMethod's): a 2dsphere index without a version is version 3 */
	if (plugin != NULL && (strcmp(plugin, "2dsphere") == 0 || strcmp(plugin, "2dsphere_bucket") == 0) &&
	    !bson_has_field(spec, "2dsphereIndexVersion"))
		BSON_APPEND_INT32(out, "2dsphereIndexVersion", 3);
	/* kept normalized, last, as mongod lists it; simple is not kept */
	if (collation != NULL)
		BSON_APPEND_DOCUMENT(out, "collation", coll_spec(collation));
	return 0;
err:
	bson_destroy(out);
	bson_init(out);
	return spec_wrap(err, how, spec);
}

static bool
opt_equal(const bson_t *a, const bson_t *b, const char *f)
{
	bson_iter_t ia, ib;
	bool ha = bson_iter_init_find(&ia, a, f), hb = bson_iter_init_find(&ib, b, f);

	if (!strcmp(f, "unique") || !strcmp(f, "sparse") || !strcmp(f, "prepareUnique"))
		return (ha && bson_iter_as_bool(&ia)) == (hb && bson_iter_as_bool(&ib));
	if (ha != hb)
		return false;
	if (!ha)
		return true;
	return bv_compare(bson_iter_value(&ia), bson_iter_value(&ib)) == 0;
}

static bool
spec_equivalent(const bson_t *a, const bson_t *b)
{
	const char *const *f;

	for (f = equiv_fields; *f != NULL; f++)
		if (!opt_equal(a, b, *f))
			return false;
	return true;
}

static bool
spec_key(const bson_t *spec, bson_t *key)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;

	if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &l, &d);
	return bson_init_static(key, d, l);
}

/* Key patterns equal field by field with numerically equal directions. */
static bool
key_equal(const bson_t *a, const bson_t *b)
{
	bson_iter_t ia, ib;

	if (!bson_iter_init(&ia, a) || !bson_iter_init(&ib, b))
		return false;
	for (;;) {
		bool na = bson_iter_next(&ia), nb = bson_iter_next(&ib);
		if (na != nb)
			return false;
		if (!na)
			return true;
		if (strcmp(bson_iter_key(&ia), bson_iter_key(&ib)) != 0 ||
		    bv_compare(bson_iter_value(&ia), bson_iter_value(&ib)) != 0)
			return false;
	}
}

static int
conflict(terr_t *err, int code, const char *what, const bson_t *req, const bson_t *have)
{
	char *r = bv_doc_to_mongo_string(req), *h = bv_doc_to_mongo_string(have);

	terr_set(err, code, "%s Requested index: %s, existing index: %s", what, r, h);
	bson_free(r);
	bson_free(h);
	return -1;
}

/*
 * Compare a prepared spec with the collection's indexes: 0 when it must be
 * built, 1 when an identical index exists, -1 with 85/86 on a conflict.
 */
static int
spec_against(const storage_coll_t *coll, const bson_t *spec, terr_t *err)
{
	bson_t key;
	bson_iter_t it;
	const char *name;
	int i;

	spec_key(spec, &key);
	bson_iter_init_find(&it, spec, "name");
	name = bson_iter_utf8(&it, NULL);
	for (i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bool same_key = key_equal(ix->key, &key);
		if (ix->is_id && same_key)
			return 1;   /* the _id index under any name already exists */
		if (strcmp(ix->name, name) == 0) {
			if (!same_key)
				return conflict(err, TERR_INDEX_KEY_SPECS_CONFLICT,
				    "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation.",
				    spec, ix->spec);
			if (!spec_equivalent(ix->spec, spec))
				return conflict(err, TERR_INDEX_OPTIONS_CONFLICT,
				    "An equivalent index already exists with the same name but different options.",
				    spec, ix->spec);
			return 1;
		}
		if (same_key) {
			bson_iter_t a, b;
			bool pa = bson_iter_init_find(&a, ix->spec, "partialFilterExpression");
			bool pb = bson_iter_init_find(&b, spec, "partialFilterExpression");
			/* Same key with a different partial filter is another index. */
			if (pa != pb || (pa && bv_compare(bson_iter_value(&a), bson_iter_value(&b)) != 0))
				continue;
			/* mongod's IndexCatalogImpl::_doesSpecConflictWithExisting
			 * logs the index found before answering either conflict */
			if (tlog_debug_on("INDEX", 2)) {
				bson_t attr;

				bson_init(&attr);
				BSON_APPEND_UTF8(&attr, "name", ix->name);
				BSON_APPEND_DOCUMENT(&attr, "spec", ix->spec);
				tlog_debug(2, "INDEX", 20353, "Index already exists with a different name", &attr);
				bson_destroy(&attr);
			}
			if (spec_equivalent(ix->spec, spec))
				return terr_set(err, TERR_INDEX_OPTIONS_CONFLICT,
				    "Index already exists with a different name: %s", ix->name);
			return conflict(err, TERR_INDEX_OPTIONS_CONFLICT,
			    "An equivalent index already exists with a different name and options.", spec, ix->spec);
		}
	}
	/* then, as the index catalog does, one text index per collection (one
	 * with the same key pattern was answered above) */
	if (text_key_is_text(&key))
		for (i = 0; i < coll->nindexes; i++)
			if (text_key_is_text(coll->indexes[i].key))
				return terr_set(err, TERR_CANNOT_CREATE_INDEX,
				    "only one text index per collection allowed, found existing text index \"%s\"",
				    coll->indexes[i].name);
	return 0;
}

static void
uuid_string(const uint8_t *u, char out[37])
{
	bson_snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
	    u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* mongod's framing of a failed build: "Index build failed: <build UUID>:
 * Collection <ns> ( <collection UUID> ) :: caused by :: E11000 ...". */
static void
build_error_wrap(terr_t *err, const char *ns, const uint8_t *coll_uuid)
{
	uint8_t build[16];
	char b[37], cu[37], *prefix;
	int i;
	bson_oid_t oid;

	bson_oid_init(&oid, NULL);
	for (i = 0; i < 16; i++)
		build[i] = (uint8_t)(oid.bytes[i % 12] ^ (uint8_t)(rand() & 0xff));
	build[6] = (uint8_t)((build[6] & 0x0f) | 0x40);
	build[8] = (uint8_t)((build[8] & 0x3f) | 0x80);
	uuid_string(build, b);
	uuid_string(coll_uuid, cu);
	prefix = bson_strdup_printf("Index build failed: %s: Collection %s ( %s )", b, ns, cu);
	terr_wrap(err, prefix);
	bson_free(prefix);
}

static const char *const create_fields[] = {
	"indexes", "commitQuorum", "writeConcern", "ignoreUnknownIndexOptions", "isTimeseriesNamespace",
	"collectionUUID", "returnOnStart", "rawData", NULL,
};

/* createIndexes' `clustered` option (mongod: only true, only on the
 * cluster key of an existing clustered collection, where it changes
 * nothing): out gets spec without it. */
static int
clustered_spec_check(cmd_t *c, const char *name, const bson_t *spec, bson_t *out, terr_t *err)
{
	storage_coll_t *cc = NULL;
	bson_iter_t it;
	bson_t key;
	bool on_key;
	int ret = 0;

	bson_iter_init_find(&it, spec, "clustered");
	if (!bson_iter_as_bool(&it))
		return terr_set(err, 6492800, "Cannot create index with option 'clustered' set to false");
	storage_coll_get(c->engine->st, c->db, name, &cc, NULL);
	spec_key(spec, &key);
	on_key = cc != NULL && cc->clustered_ix != NULL && key_equal(cc->clustered_ix->key, &key);
	if (!on_key) {
		char *j = bv_doc_to_mongo_string(spec);
		ret = terr_set(err, 6243700,
		    "Cannot create index with option 'clustered' unless it is the cluster key of a clustered collection: %s", j);
		bson_free(j);
	} else {
		/* the cluster key's own spec: unique and expireAfterSeconds are
		 * the clustered collection's, not an _id index's options */
		bson_iter_init(&it, spec);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "clustered") != 0 && strcmp(bson_iter_key(&it), "unique") != 0 &&
			    strcmp(bson_iter_key(&it), "expireAfterSeconds") != 0)
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
	}
	storage_coll_release(cc);
	return ret;
}

CMD_HANDLER(cmd_create_indexes)
{
	const char *name;
	bson_t arr, *specs = NULL;
	bson_iter_t it;
	bool found, created = false;
	storage_coll_t *coll = NULL, *ts_coll = NULL;
	int nspecs = 0, i, j, before, ret = -1, nnew = 0;
	bool is_ts = false;
	char ns[512];

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, create_fields, err));
	ERR(cmd_get_array(c, "indexes", &arr, &found, err));
	if (!found) {
		ret = terr_set(err, 40414, "BSON field 'createIndexes.indexes' is missing but a required field");
		goto err;
	}
	nspecs = (int)bson_count_keys(&arr);
	if (nspecs == 0) {
		ret = terr_set(err, TERR_BAD_VALUE, "Must specify at least one index to create");
		goto err;
	}
	cmd_ns(ns, sizeof(ns), c->db, name);
	ERR(storage_ns_check(c->db, name, err));
	specs = tm_bson_array_new((size_t)nspecs);
	for (i = 0; i < nspecs; i++)
		bson_init(&specs[i]);
	storage_coll_get(c->engine->st, c->db, name, &ts_coll, NULL);
	is_ts = cmd_ts_is(ts_coll);
	if (!cmd_ts_is(ts_coll) || cmd_ts_raw(c)) {
		storage_coll_release(ts_coll);
		ts_coll = NULL;
	}
	bson_iter_init(&it, &arr);
	for (i = 0; bson_iter_next(&it); i++) {
		const uint8_t *d;
		uint32_t l;
		bson_t spec;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'createIndexes.indexes.%d' is the wrong type '%s', expected type 'object'", i,
			    bv_type_name(bson_iter_type(&it)));
			goto err;
		}
		bson_iter_document(&it, &l, &d);
		bson_init_static(&spec, d, l);
		bson_destroy(&specs[i]);
		if (ts_coll != NULL) {
			/* measurement terms to bucket terms */
			bson_t tr = BSON_INITIALIZER;
			bson_init(&specs[i]);
			ret = cmd_ts_index_translate(ts_coll, &spec, &tr, err);
			bson_destroy(&specs[i]);
			if (ret == 0)
				ret = spec_prepare(&tr, &specs[i], err);
			else
				bson_init(&specs[i]);
			bson_destroy(&tr);
			if (ret != 0)
				goto err;
			ret = -1;   /* what the paths below expect until the end */
			continue;
		}
		if (bson_has_field(&spec, "clustered")) {
			/* only the cluster key of a clustered collection, and then a no-op */
			bson_t stripped = BSON_INITIALIZER;
			bson_iter_t ci;
			bson_init(&specs[i]);
			ret = clustered_spec_check(c, name, &spec, &stripped, err);
			bson_destroy(&specs[i]);
			if (ret == 0)
				ret = spec_prepare(&stripped, &specs[i], err);
			else
				bson_init(&specs[i]);
			bson_destroy(&stripped);
			(void)ci;
			if (ret != 0)
				goto err;
			ret = -1;
			continue;
		}
		if (!is_ts && spec_has_plugin(&spec, "2dsphere_bucket")) {
			/* the index of a time-series collection's measurements, on its buckets */
			ret = terr_set(err, TERR_NOT_IMPLEMENTED,
			    "2dsphere_bucket indexes are built on time-series collections only (their buckets) by Tamga");
			goto err;
		}
		ERR(spec_prepare(&spec, &specs[i], err));
	}
	/* Two requested specs may not conflict with each other either. */
	for (i = 0; i < nspecs; i++)
		for (j = 0; j < i; j++) {
			bson_iter_t a, b;
			bson_iter_init_find(&a, &specs[i], "name");
			bson_iter_init_find(&b, &specs[j], "name");
			if (strcmp(bson_iter_utf8(&a, NULL), bson_iter_utf8(&b, NULL)) == 0) {
				ret = conflict(err, TERR_INDEX_KEY_SPECS_CONFLICT,
				    "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation.",
				    &specs[i], &specs[j]);
				goto err;
			}
		}
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		terr_t e2 = TERR_INIT;
		if (view_refuse(c, c->db, name, err) != 0) {
			ret = -1;
			goto err;
		}
		if (cmd_in_transaction(c)) {
			/* seen by this transaction only, published by its commit */
			storage_session_t *ts = client_session(c->client, err);
			if (ts == NULL || cmd_txn_check_create(c, c->db, name, err) != 0 ||
			    storage_coll_create_in_txn(c->engine->st, ts, c->db, name, NULL, err) != 0) {
				ret = -1;
				goto err;
			}
		} else if (storage_coll_create(c->engine->st, NULL, c->db, name, NULL, &e2) != 0 &&
		    e2.code != TERR_NAMESPACE_EXISTS) {
			terr_move(err, &e2);
			goto err;
		}
		terr_clear(&e2);
		created = true;
		if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
			ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns does not exist: %s", ns);
			goto err;
		}
	}
	if (coll->collation != NULL) {
		/* a spec without a collation takes the collection's default; an
		 * explicit {locale: "simple"} stays simple */
		bson_iter_init(&it, &arr);
		for (i = 0; bson_iter_next(&it) && i < nspecs; i++) {
			const uint8_t *d;
			uint32_t l;
			bson_t given;
			bson_iter_document(&it, &l, &d);
			bson_init_static(&given, d, l);
			if (!bson_has_field(&given, "collation") && !bson_has_field(&specs[i], "collation"))
				BSON_APPEND_DOCUMENT(&specs[i], "collation", coll_spec(coll->collation));
		}
	}
	before = coll->nindexes;
	for (i = 0; i < nspecs; i++) {
		int rc = spec_against(coll, &specs[i], err);
		if (rc < 0)
			goto err;
		if (rc == 1) {
			bson_destroy(&specs[i]);
			bson_init(&specs[i]);
			continue;
		}
		nnew++;
	}
	if (before + nnew > INDEX_MAX) {
		for (i = 0; i < nspecs; i++)
			if (!bson_empty(&specs[i]))
				break;
		{
			bson_t key;
			char *k;
			spec_key(&specs[i], &key);
			k = bv_doc_to_mongo_string(&key);
			ret = terr_set(err, TERR_CANNOT_CREATE_INDEX, "add index fails, too many indexes for %s key:%s", ns, k);
			bson_free(k);
		}
		goto err;
	}
	/* a measurement index on a collection whose buckets may mix types:
	 * mongod refuses it when one does (67) */
	if (is_ts && nnew > 0)
		ERR(cmd_ts_mixed_schema_check(c->engine->st, coll, specs, nspecs, ns, err));
	if (cmd_in_transaction(c) && nnew > 0) {
		/* only on a collection this transaction created, while it is
		 * empty (mongod's runCreateIndexesOnNewCollection); a failure
		 * aborts the transaction, so nothing needs undoing */
		storage_session_t *ts = client_session(c->client, err);
		ret = ts == NULL ? -1 : 0;
		for (i = 0; i < nspecs && ret == 0; i++)
			if (!bson_empty(&specs[i]))
				ret = storage_index_create_in_txn(c->engine->st, ts, c->db, name, &specs[i], err);
		if (ret != 0)
			goto err;
	} else for (i = 0; i < nspecs; i++) {
		if (bson_empty(&specs[i]))
			continue;
		if (storage_index_create(c->engine->st, NULL, c->db, name, &specs[i], err) != 0 &&
		    (err->code == TERR_INDEX_ALREADY_EXISTS || err->code == TERR_INDEX_OPTIONS_CONFLICT ||
		     err->code == TERR_INDEX_KEY_SPECS_CONFLICT)) {
			/* another createIndexes built it meanwhile (the catalog lock
			 * made this one wait for that build, mongod's 20450): the
			 * same index is success, as mongod answers both */
			storage_coll_t *now = NULL;
			terr_t e2 = TERR_INIT;
			int rc = -1;

			if (storage_coll_get(c->engine->st, c->db, name, &now, NULL) == 0) {
				rc = spec_against(now, &specs[i], &e2);
				storage_coll_release(now);
			}
			if (rc == 1) {
				bson_t attr = BSON_INITIALIZER;

				BSON_APPEND_UTF8(&attr, "namespace", ns);
				tlog('I', "INDEX", 20450, "Waited for an index build in progress: the same index now exists", &attr);
				bson_destroy(&attr);
				terr_clear(err);
				terr_clear(&e2);
				bson_destroy(&specs[i]);
				bson_init(&specs[i]);
				nnew--;
				continue;
			}
			if (rc < 0 && terr_is_set(&e2)) {
				terr_clear(err);
				terr_move(err, &e2);
			}
			terr_clear(&e2);
		}
		if (terr_is_set(err)) {
			/* Undo the ones this command built: all or nothing. */
			for (j = 0; j < i; j++) {
				bson_iter_t n2;
				if (bson_empty(&specs[j]) || !bson_iter_init_find(&n2, &specs[j], "name"))
					continue;
				storage_index_drop(c->engine->st, NULL, c->db, name, bson_iter_utf8(&n2, NULL), NULL);
			}
			if (err->code == TERR_DUPLICATE_KEY)
				build_error_wrap(err, ns, coll->uuid);
			goto err;
		}
	}
	BSON_APPEND_INT32(c->reply, "numIndexesBefore", before);
	BSON_APPEND_INT32(c->reply, "numIndexesAfter", before + nnew);
	if (nnew == 0)
		BSON_APPEND_UTF8(c->reply, "note", "all indexes already exist");
	else
		BSON_APPEND_BOOL(c->reply, "createdCollectionAutomatically", created);
	ret = 0;
err:
	if (specs != NULL) {
		for (i = 0; i < nspecs; i++)
			bson_destroy(&specs[i]);
		bson_free(specs);
	}
	storage_coll_release(coll);
	storage_coll_release(ts_coll);
	return ret;
}

CMD_HANDLER(cmd_list_indexes)
{
	static const char *const fields[] = {"cursor", "includeBuildUUIDs", "includeIndexBuildInfo", "rawData", NULL};
	const char *name;
	storage_coll_t *coll = NULL;
	cursor_source_t src = {0};
	cursor_opts_t copts;
	bson_t *docs;
	char ns[512], key[16];
	const char *k;
	int i, ret = -1, hidden_n = 0;

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_cursor_options(c, &copts, err));
	cmd_ns(ns, sizeof(ns), c->db, name);
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		if (view_refuse(c, c->db, name, err) != 0)
			goto err;
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns does not exist: %s", ns);
		goto err;
	}
	docs = bson_new();
	for (i = 0; i < coll->nindexes; i++) {
		bson_uint32_to_string((uint32_t)(i - hidden_n), &k, key, sizeof(key));
		if (cmd_ts_is(coll) && !cmd_ts_raw(c)) {
			/* a time-series collection's indexes in measurement terms */
			bson_t one = BSON_INITIALIZER;
			if (cmd_ts_index_spec(coll, &coll->indexes[i], &one))
				bson_append_document(docs, k, -1, &one);
			else
				hidden_n++;
			bson_destroy(&one);
			continue;
		}
		if (coll->indexes[i].clustered) {
			bson_t one;
			bson_append_document_begin(docs, k, -1, &one);
			cmd_clustered_index_spec(coll, &coll->indexes[i], &one);
			bson_append_document_end(docs, &one);
			continue;
		}
		bson_append_document(docs, k, -1, coll->indexes[i].spec);
	}
	cmd_array_source(docs, &src);
	cmd_ns(ns, sizeof(ns), c->db, "$cmd.listIndexes.");
	strncat(ns, name, sizeof(ns) - strlen(ns) - 1);
	{
		char owner_buf[256];
		copts.owner = cmd_cursor_owner(c, owner_buf);
		ret = cursor_first_batch(c->engine->cursors, NULL, ns, &src, &copts, c->reply, err);
	}
err:
	storage_coll_release(coll);
	return ret;
}

/* The index of coll named by an element of dropIndexes' `index`. */
static int
drop_target(const storage_coll_t *coll, bool ts, bson_iter_t *it, const char **out, terr_t *err)
{
	int i;

	if (BSON_ITER_HOLDS_UTF8(it)) {
		const char *n = bson_iter_utf8(it, NULL);
		for (i = 0; i < coll->nindexes; i++)
			if (coll->indexes[i].clustered && strcmp(coll->indexes[i].name, n) == 0)
				return terr_set(err, 5979800, "It is illegal to drop the clusteredIndex");
		if (strcmp(n, "_id_") == 0)
			return terr_set(err, TERR_INVALID_OPTIONS, "cannot drop _id index");
		for (i = 0; i < coll->nindexes; i++)
			if (strcmp(coll->indexes[i].name, n) == 0) {
				*out = coll->indexes[i].name;
				return 0;
			}
		return terr_set(err, TERR_INDEX_NOT_FOUND, "index not found with name [%s]", n);
	}
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		const uint8_t *d;
		uint32_t l;
		bson_t key;
		const char *found = NULL;
		int nfound = 0;
		char *s;
		bson_t tr = BSON_INITIALIZER;
		const bson_t *kp = &key;
		bool refused = false;
		bson_iter_document(it, &l, &d);
		bson_init_static(&key, d, l);
		if (ts) {
			/* a time-series key pattern names its bucket index */
			if (cmd_ts_index_key(coll, &key, &tr, err) != 0) {
				char *msg = bson_strdup(err->msg);
				terr_set(err, TERR_INDEX_NOT_FOUND, "BadValue: %s", msg);
				bson_free(msg);
				bson_destroy(&tr);
				return -1;
			}
			kp = &tr;
		}
		for (i = 0; i < coll->nindexes && !refused; i++)
			if (key_equal(coll->indexes[i].key, kp)) {
				if (coll->indexes[i].clustered) {
					terr_set(err, 5979800, "It is illegal to drop the clusteredIndex");
					refused = true;
				} else if (coll->indexes[i].is_id) {
					terr_set(err, TERR_INVALID_OPTIONS, "cannot drop _id index");
					refused = true;
				}
				found = coll->indexes[i].name;
				nfound++;
			}
		if (refused) {
			bson_destroy(&tr);
			return -1;
		}
		if (nfound == 1) {
			*out = found;
			bson_destroy(&tr);
			return 0;
		}
		s = bv_doc_to_mongo_string(kp);
		if (nfound == 0)
			terr_set(err, TERR_INDEX_NOT_FOUND, "can't find index with key: %s", s);
		else
			terr_set(err, TERR_BAD_VALUE,
			    "%d indexes found for key: %s, identify by name instead. Conflicting indexes: ...", nfound, s);
		bson_free(s);
		bson_destroy(&tr);
		return -1;
	}
	return terr_set(err, TERR_TYPE_MISMATCH,
	    "BSON field 'dropIndexes.index' is the wrong type '%s', expected types '[string, object, array]'",
	    bv_type_name(bson_iter_type(it)));
}

CMD_HANDLER(cmd_drop_indexes)
{
	static const char *const fields[] = {"index", "writeConcern", "collectionUUID", "rawData", NULL};
	const char *name, **names = NULL;
	storage_coll_t *coll = NULL;
	bson_iter_t it, sub;
	int n = 0, i, ret = -1, was;
	bool star = false;
	char ns[512];

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fields, err));
	cmd_ns(ns, sizeof(ns), c->db, name);
	if (!bson_iter_init_find(&it, c->body, "index")) {
		ret = terr_set(err, 40414, "BSON field 'dropIndexes.index' is missing but a required field");
		goto err;
	}
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		if (view_refuse(c, c->db, name, err) != 0)
			goto err;
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found %s", ns);
		goto err;
	}
	was = coll->nindexes;
	names = bson_malloc0(sizeof(char *) * (size_t)(coll->nindexes + 1));
	if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "*") == 0) {
		star = true;
		for (i = 0; i < coll->nindexes; i++)
			if (!coll->indexes[i].is_id)
				names[n++] = coll->indexes[i].name;
	} else if (BSON_ITER_HOLDS_ARRAY(&it)) {
		bson_iter_recurse(&it, &sub);
		while (bson_iter_next(&sub)) {
			const char *t;
			if (!BSON_ITER_HOLDS_UTF8(&sub)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "dropIndexes %s (%s) failed to drop multiple indexes: Expected index name to be a string",
				    ns, "");
				goto err;
			}
			ERR(drop_target(coll, cmd_ts_is(coll) && !cmd_ts_raw(c), &sub, &t, err));
			if (n < coll->nindexes)
				names[n++] = t;
		}
	} else {
		const char *t;
		ERR(drop_target(coll, cmd_ts_is(coll) && !cmd_ts_raw(c), &it, &t, err));
		names[n++] = t;
	}
	for (i = 0; i < n; i++)
		ERR(storage_index_drop(c->engine->st, NULL, c->db, name, names[i], err));
	BSON_APPEND_INT32(c->reply, "nIndexesWas", was);
	if (star)
		BSON_APPEND_UTF8(c->reply, "msg", "non-_id indexes dropped for collection");
	ret = 0;
err:
	bson_free(names);
	storage_coll_release(coll);
	return ret;
}

/* ---- collMod's `index` option ---------------------------------------------- */

static const char *const collmod_index_fields[] = {
	"name", "keyPattern", "hidden", "expireAfterSeconds", "unique", "prepareUnique",
	"forceNonUnique", NULL,
};

/* mongod returns at most this many bytes of violating _ids (half of a
 * user document), then says there were too many. */
#define CONVERT_VIOLATIONS_MAX (16 * 1024 * 1024 / 2)

/* error_codes.yml: CannotConvertIndexToUnique */
#define TERR_CANNOT_CONVERT_INDEX_TO_UNIQUE 359

/*
 * The unique conversion's check, as mongod's scanIndexForDuplicates: one
 * pass over ix's entries (key+RecordId, so equal keys are neighbours), each
 * run of equal keys a group of documents.  0 when there is none; otherwise
 * 359 CannotConvertIndexToUnique with `violations: [{ids: [...]}, ...]` (the
 * documents' _ids, up to 8 MB) as a top-level field of the error reply.
 */
static int
convert_unique_check(storage_session_t *s, storage_coll_t *coll, const storage_index_t *ix, terr_t *err)
{
	storage_cursor_t *cur = NULL;
	recid_t *rids = NULL, rid;
	size_t nrid = 0, caprid = 0, *grp = NULL, ngrp = 0, capgrp = 0;
	uint8_t *prev = NULL;
	size_t prev_len = 0, prev_cap = 0;
	recid_t prev_rid = 0;
	bool have_prev = false, in_run = false, too_many = false;
	const uint8_t *key;
	size_t klen;
	int rc, ret = 0;

	ERR(storage_txn_begin(s, err));
	ERR(storage_index_scan_open(s, coll, ix, NULL, 0, false, NULL, 0, false, false, &cur, err));
	for (;;) {
		size_t vlen;
		if ((rc = storage_cursor_next(cur, &rid, NULL, &key, &klen, err)) < 0) {
			ret = -1;
			goto err;
		}
		if (rc == 0)
			break;
		ERR(tm_interrupt_check(err));
		vlen = klen >= 8 ? klen - 8 : klen;       /* without the RecordId */
		if (have_prev && vlen == prev_len && memcmp(key, prev, vlen) == 0) {
			if (!in_run) {
				if (ngrp == capgrp) {
					capgrp = capgrp ? capgrp * 2 : 8;
					grp = bson_realloc(grp, capgrp * sizeof(*grp));
				}
				grp[ngrp++] = nrid;
				if (nrid == caprid) {
					caprid = caprid ? caprid * 2 : 16;
					rids = bson_realloc(rids, caprid * sizeof(*rids));
				}
				rids[nrid++] = prev_rid;
				in_run = true;
			}
			if (nrid == caprid) {
				caprid = caprid * 2;
				rids = bson_realloc(rids, caprid * sizeof(*rids));
			}
			rids[nrid++] = rid;
			/* an _id takes at least 7 bytes: stop well before 16 MB of them */
			if (nrid > CONVERT_VIOLATIONS_MAX / 7)
				break;
		} else {
			in_run = false;
		}
		if (vlen > prev_cap) {
			prev_cap = vlen * 2;
			prev = bson_realloc(prev, prev_cap);
		}
		memcpy(prev, key, vlen);
		prev_len = vlen;
		prev_rid = rid;
		have_prev = true;
	}
	storage_cursor_close(cur);
	cur = NULL;
	if (ngrp > 0) {
		bson_t *extra = bson_new(), arr, one, ids;
		size_t bytes = 0, g, r, nout = 0;
		char k1[16], k2[16];
		bool stop = false;
		bson_append_array_begin(extra, "violations", -1, &arr);
		for (g = 0; g < ngrp && !stop; g++) {
			size_t end = g + 1 < ngrp ? grp[g + 1] : nrid, nid = 0;
			bson_snprintf(k1, sizeof(k1), "%zu", g);
			bson_append_document_begin(&arr, k1, -1, &one);
			bson_append_array_begin(&one, "ids", -1, &ids);
			for (r = grp[g]; r < end; r++) {
				bson_t doc;
				bson_iter_t it;
				ERR(tm_interrupt_check(err));
				if (storage_doc_get(s, coll, rids[r], &doc, err) != 0 || !bson_iter_init_find(&it, &doc, "_id"))
					continue;
				bytes += it.next_off - it.off;
				if (bytes > CONVERT_VIOLATIONS_MAX && (nout > 0 || nid > 0)) {
					stop = too_many = true;
					break;
				}
				bson_snprintf(k2, sizeof(k2), "%zu", nid++);
				bson_append_value(&ids, k2, -1, bson_iter_value(&it));
			}
			bson_append_array_end(&one, &ids);
			bson_append_document_end(&arr, &one);
			nout++;
		}
		bson_append_array_end(extra, &arr);
		if (too_many || nrid > CONVERT_VIOLATIONS_MAX / 7)
			terr_set(err, TERR_CANNOT_CONVERT_INDEX_TO_UNIQUE,
			    "Cannot convert the index to unique. Too many conflicting documents were detected. "
			    "Please resolve them and rerun collMod.");
		else
			terr_set(err, TERR_CANNOT_CONVERT_INDEX_TO_UNIQUE,
			    "Cannot convert the index to unique. Please resolve conflicting documents before running "
			    "collMod again.");
		terr_set_extra_steal(err, extra);
		ret = -1;
	}
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_txn_rollback(s);
	bson_free(rids);
	bson_free(grp);
	bson_free(prev);
	return ret;
}

static int
collmod_index_bool(const bson_iter_t *it, const char *f, bool *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_BOOL(it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'collMod.index.%s' is the wrong type '%s', expected type 'bool'",
		    f, bv_type_name(bson_iter_type(it)));
	*out = bson_iter_bool(it);
	return 0;
}

/*
 * collMod {index: {name | keyPattern, hidden, expireAfterSeconds, unique,
 * prepareUnique, forceNonUnique}} as mongod's parseCollModRequest and
 * processCollModIndexRequest: checks, then the index's spec replaced in
 * place (storage_index_set_spec: its table stays).  A unique conversion
 * needs prepareUnique first and scans the index for duplicates (359 with
 * the violations).  other_mods counts the collection-level modifications
 * of the same collMod (prepareUnique and dryRun combine with none).
 * mode: CMD_COLLMOD_INDEX_APPLY; _DRY_RUN only checks a unique conversion
 * (the scan included); _CHECK makes every check but the scan and changes
 * nothing (before the collection's own options change).  Appends what changed to reply
 * as mongod does (expireAfterSeconds_old/_new, hidden_old/_new, unique_new,
 * prepareUnique_old/_new, forceNonUnique_new).  Called by cmd_collmod.c.
 */
int
cmd_index_coll_mod(cmd_t *c, const char *coll_name, const bson_iter_t *index_opt, int other_mods, int mode,
                   bson_t *reply, terr_t *err)
{
	bool dry_run = mode == CMD_COLLMOD_INDEX_DRY_RUN;
	bson_iter_t it, o;
	const char *name = NULL;
	bson_t key, newspec = BSON_INITIALIZER;
	bool has_key = false, has_hidden = false, hidden = false, has_ttl = false, old_hidden, changed = false;
	bool has_unique = false, unique = false, has_prep = false, prep = false, has_force = false, force = false;
	bool do_unique = false, do_prep = false, do_force = false, old_prep;
	int64_t ttl = 0, old_ttl = -1;
	int nmods = other_mods;
	storage_coll_t *coll = NULL;
	const storage_index_t *ix = NULL;
	char ns[512];
	int i, ret = -1;

	cmd_ns(ns, sizeof(ns), c->db, coll_name);
	o = *index_opt;
	if (!BSON_ITER_HOLDS_DOCUMENT(&o)) {
		ret = terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'collMod.index' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&o)));
		goto err;
	}
	bson_iter_recurse(&o, &it);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if (!in_list(collmod_index_fields, f)) {
			ret = terr_set(err, 40415, "BSON field 'collMod.index.%s' is an unknown field.", f);
			goto err;
		}
		if (!strcmp(f, "name")) {
			if (!BSON_ITER_HOLDS_UTF8(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'collMod.index.name' is the wrong type '%s', expected type 'string'",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			name = bson_iter_utf8(&it, NULL);
		} else if (!strcmp(f, "keyPattern")) {
			const uint8_t *d;
			uint32_t l;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'collMod.index.keyPattern' is the wrong type '%s', expected type 'object'",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			bson_iter_document(&it, &l, &d);
			bson_init_static(&key, d, l);
			has_key = true;
		} else if (!strcmp(f, "hidden")) {
			ERR(collmod_index_bool(&it, f, &hidden, err));
			has_hidden = true;
		} else if (!strcmp(f, "unique")) {
			ERR(collmod_index_bool(&it, f, &unique, err));
			has_unique = true;
		} else if (!strcmp(f, "prepareUnique")) {
			ERR(collmod_index_bool(&it, f, &prep, err));
			has_prep = true;
		} else if (!strcmp(f, "forceNonUnique")) {
			ERR(collmod_index_bool(&it, f, &force, err));
			has_force = true;
		} else if (!strcmp(f, "expireAfterSeconds")) {
			bson_value_t v = *bson_iter_value(&it);
			double d;
			if (!bv_is_number(&v)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'collMod.index.expireAfterSeconds' is the wrong type '%s', expected types '[long, int, decimal, double]'",
				    bv_type_name(v.value_type));
				goto err;
			}
			d = bv_is_nan(&v) ? 0 : bv_as_double(&v);
			if (d < 0) {
				ret = terr_set(err, TERR_INVALID_OPTIONS, "TTL index 'expireAfterSeconds' option cannot be less than 0");
				goto err;
			}
			ttl = d >= 2147483647.0 ? INT32_MAX : (int64_t)d;
			has_ttl = true;
		}
	}
	if (dry_run && !(has_unique && unique)) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "dry run mode requires an index modification with unique: true.");
		goto err;
	}
	if (name != NULL && has_key) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "Cannot specify both key pattern and name.");
		goto err;
	}
	if (name == NULL && !has_key) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "Must specify either index name or key pattern.");
		goto err;
	}
	if (!has_hidden && !has_ttl && !has_unique && !has_prep && !has_force) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "no expireAfterSeconds, hidden, unique, or prepareUnique field");
		goto err;
	}
	if (has_unique && has_force) {
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "collMod does not support 'unique' and 'forceNonUnique' options at the same time");
		goto err;
	}
	if (storage_coll_get(c->engine->st, c->db, coll_name, &coll, NULL) != 0) {
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns does not exist: %s", ns);
		goto err;
	}
	for (i = 0; i < coll->nindexes && ix == NULL; i++)
		if (name != NULL ? strcmp(coll->indexes[i].name, name) == 0 : key_equal(coll->indexes[i].key, &key))
			ix = &coll->indexes[i];
	if (ix == NULL) {
		char *k = has_key ? bv_doc_to_mongo_string(&key) : NULL;
		ret = terr_set(err, TERR_INDEX_NOT_FOUND, "cannot find index %s for ns %s", name ? name : k, ns);
		bson_free(k);
		goto err;
	}
	if (has_ttl) {
		nmods++;
		if (ix->is_id) {
			ret = terr_set(err, TERR_INVALID_OPTIONS, "the _id field does not support TTL indexes");
			goto err;
		}
		if (bson_count_keys(ix->key) != 1) {
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "TTL indexes are single-field indexes, compound indexes do not support TTL");
			goto err;
		}
	}
	if (has_unique) {
		nmods++;
		if (!unique) {
			ret = terr_set(err, TERR_BAD_VALUE, "Cannot make index non-unique");
			goto err;
		}
		if (!ix->unique) {
			if (!ix->prepare_unique) {
				ret = terr_set(err, TERR_INVALID_OPTIONS,
				    "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.");
				goto err;
			}
			do_unique = true;
		}
	}
	if (has_hidden) {
		nmods++;
		if (ix->is_id) {
			ret = terr_set(err, TERR_BAD_VALUE, "can't hide _id index");
			goto err;
		}
	}
	if (has_prep) {
		nmods++;
		do_prep = prep != ix->prepare_unique && !ix->unique;
	}
	if (has_force) {
		nmods++;
		if (!force) {
			ret = terr_set(err, TERR_BAD_VALUE, "'forceNonUnique: false' is not supported");
			goto err;
		}
		do_force = ix->unique;
		if (do_force && ix->is_id) {
			/* what mongod makes of it is not looked up: not guessed */
			ret = terr_set(err, TERR_NOT_IMPLEMENTED,
			    "collMod forceNonUnique on the _id index is not supported by Tamga");
			goto err;
		}
	}
	if (do_prep && nmods > 1) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "prepareUnique cannot be combined with any other modification.");
		goto err;
	}
	if (dry_run && nmods > 1) {
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "unique: true cannot be combined with any other modification in dry run mode.");
		goto err;
	}
	if (mode == CMD_COLLMOD_INDEX_CHECK) {
		ret = 0;
		goto err;
	}
	if (do_unique || dry_run) {
		storage_session_t *s = client_session(c->client, err);
		if (s == NULL)
			goto err;
		if (!ix->unique)
			ERR(convert_unique_check(s, coll, ix, err));
		if (dry_run) {
			ret = 0;
			goto err;
		}
	}
	old_hidden = bson_iter_init_find(&it, ix->spec, "hidden") && bson_iter_as_bool(&it);
	old_prep = ix->prepare_unique;
	if (bson_iter_init_find(&it, ix->spec, "expireAfterSeconds"))
		old_ttl = bson_iter_as_int64(&it);
	/* the new spec: same fields, the changed ones replaced */
	bson_iter_init(&it, ix->spec);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if ((has_hidden && !strcmp(f, "hidden")) || (has_ttl && !strcmp(f, "expireAfterSeconds")) ||
		    ((do_prep || do_unique) && !strcmp(f, "prepareUnique")) ||
		    ((do_unique || do_force) && !strcmp(f, "unique")))
			continue;
		bson_append_iter(&newspec, f, -1, &it);
	}
	if (has_ttl)
		BSON_APPEND_INT32(&newspec, "expireAfterSeconds", (int32_t)ttl);
	if (has_hidden && hidden)
		BSON_APPEND_BOOL(&newspec, "hidden", true);
	if (do_unique)
		BSON_APPEND_BOOL(&newspec, "unique", true);
	if (do_prep && prep)
		BSON_APPEND_BOOL(&newspec, "prepareUnique", true);
	if (has_ttl && ttl != old_ttl) {
		if (old_ttl >= 0)
			BSON_APPEND_INT64(reply, "expireAfterSeconds_old", old_ttl);
		BSON_APPEND_INT64(reply, "expireAfterSeconds_new", ttl);
		changed = true;
	}
	if (has_hidden && hidden != old_hidden) {
		BSON_APPEND_BOOL(reply, "hidden_old", old_hidden);
		BSON_APPEND_BOOL(reply, "hidden_new", hidden);
		changed = true;
	}
	if (do_unique) {
		BSON_APPEND_BOOL(reply, "unique_new", true);
		changed = true;
	}
	if (do_prep) {
		BSON_APPEND_BOOL(reply, "prepareUnique_old", old_prep);
		BSON_APPEND_BOOL(reply, "prepareUnique_new", prep);
		changed = true;
	}
	if (do_force) {
		BSON_APPEND_BOOL(reply, "forceNonUnique_new", true);
		changed = true;
	}
	if (changed && do_force && storage_index_key_only(ix)) {
		/* created unique: its table holds one entry per key (the RecordId
		 * in the value); duplicates need the key+RecordId layout, so its
		 * entries move into a new table (listIndexes keeps its order) */
		storage_session_t *s = client_session(c->client, err);
		if (s == NULL)
			goto err;
		ret = storage_index_set_spec_relayout(c->engine->st, s, c->db, coll_name, ix->name, &newspec, err);
		if (ret != 0)
			goto err;
	} else if (changed) {
		/* in place: no rebuild, and listIndexes keeps its order */
		ret = storage_index_set_spec(c->engine->st, NULL, c->db, coll_name, ix->name, &newspec, err);
		if (ret != 0)
			goto err;
	}
	ret = 0;
err:
	bson_destroy(&newspec);
	storage_coll_release(coll);
	return ret;
}
