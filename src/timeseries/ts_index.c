/*
 * ts_index.c -- a time-series collection's secondary indexes translated
 * between the user's terms and the buckets' (ts_index.h): createIndexes'
 * specs into bucket index specs with mongod 9.0's rules and refusals,
 * listIndexes' view back, and the measurement fields the bucket filter may
 * bound through an index.  The facts are mongod's
 * timeseries_index_schema_conversion_functions.cpp (the key mapping) and
 * timeseries_commands_conversion_helper.cpp (the spec options: unique,
 * sparse, partialFilterExpression, TTL, originalSpec).
 */
#include <string.h>

#include "bson/value.h"
#include "timeseries/ts_index.h"

#define PATH_MAX_LEN 600

/* "<field>: <value>" as mongod prints a BSONElement. */
static char *
elem_string(const bson_iter_t *it)
{
	char *v = bv_to_mongo_string(bson_iter_value((bson_iter_t *)it));
	char *s = bson_strdup_printf("%s: %s", bson_iter_key(it), v);
	bson_free(v);
	return s;
}

static int
bad_key(const bson_t *key, const bson_iter_t *it, const char *what, terr_t *err)
{
	char *ks = bv_doc_to_mongo_string(key), *es = elem_string(it);
	int ret = terr_set(err, TERR_BAD_VALUE, "Invalid index spec for time-series collection: %s. %s: %s", ks, what,
	    es);
	bson_free(ks);
	bson_free(es);
	return ret;
}

/* Whether p is the metaField or one of its subfields; *sub the part after
 * "<meta>." ("" for the metaField itself). */
static bool
meta_sub(const ts_options_t *o, const char *p, const char **sub)
{
	size_t ml;

	if (o->meta_field == NULL)
		return false;
	ml = strlen(o->meta_field);
	if (strncmp(p, o->meta_field, ml) != 0 || (p[ml] != '\0' && p[ml] != '.'))
		return false;
	*sub = p[ml] == '.' ? p + ml + 1 : "";
	return true;
}

int
ts_index_key_to_buckets(const ts_options_t *o, const bson_t *key, bson_t *out, bool *measurement, terr_t *err)
{
	bson_iter_t it;
	char a[PATH_MAX_LEN], b[PATH_MAX_LEN];

	if (measurement != NULL)
		*measurement = false;
	if (bson_empty(key))
		return terr_set(err, TERR_BAD_VALUE, "Empty object is not a valid index spec");
	bson_iter_init(&it, key);
	bson_iter_next(&it);
	if (strcmp(bson_iter_key(&it), "$hint") == 0 || strcmp(bson_iter_key(&it), "$natural") == 0) {
		char *ks = bv_doc_to_mongo_string(key);
		int ret = terr_set(err, TERR_BAD_VALUE,
		    "Invalid index spec (perhaps it's a valid hint, that was incorrectly passed to "
		    "createBucketsSpecFromTimeseriesSpec): %s", ks);
		bson_free(ks);
		return ret;
	}
	bson_iter_init(&it, key);
	while (bson_iter_next(&it)) {
		const char *p = bson_iter_key(&it), *sub;
		const bson_value_t *v = bson_iter_value(&it);
		bool desc;
		if (strlen(p) > PATH_MAX_LEN - 20)
			return terr_set(err, TERR_BAD_VALUE, "index key path too long");
		if (strcmp(p, o->time_field) == 0) {
			if (!bv_is_number(v))
				return bad_key(key, &it,
				    "Indexes on the time field must be ascending or descending (numbers only)", err);
			desc = bson_iter_as_double(&it) < 0;
			bson_snprintf(a, sizeof(a), "control.%s.%s", desc ? "max" : "min", p);
			bson_snprintf(b, sizeof(b), "control.%s.%s", desc ? "min" : "max", p);
			bv_append(out, a, -1, v);
			bv_append(out, b, -1, v);
			continue;
		}
		if (meta_sub(o, p, &sub)) {
			bson_snprintf(a, sizeof(a), "meta%s%s", *sub ? "." : "", sub);
			bv_append(out, a, -1, v);
			continue;
		}
		if (measurement != NULL)
			*measurement = true;
		if (v->value_type == BSON_TYPE_UTF8 && strcmp(v->value.v_utf8.str, "2dsphere") == 0) {
			bson_snprintf(a, sizeof(a), "data.%s", p);
			BSON_APPEND_UTF8(out, a, "2dsphere_bucket");
			continue;
		}
		if (!bv_is_number(v))
			return bad_key(key, &it,
			    "Indexes on measurement fields must be ascending or descending (numbers only), or '2dsphere'",
			    err);
		desc = bson_iter_as_double(&it) < 0;
		bson_snprintf(a, sizeof(a), "control.%s.%s", desc ? "max" : "min", p);
		bson_snprintf(b, sizeof(b), "control.%s.%s", desc ? "min" : "max", p);
		bv_append(out, a, -1, v);
		bv_append(out, b, -1, v);
	}
	return 0;
}

/* The default name of a key pattern (mongod's shell and drivers:
 * <field>_<value> joined by "_"). */
static void
default_name(const bson_t *key, bson_string_t *name)
{
	bson_iter_t it;
	bool first = true;

	bson_iter_init(&it, key);
	while (bson_iter_next(&it)) {
		const bson_value_t *v = bson_iter_value(&it);
		bson_string_append_printf(name, "%s%s_", first ? "" : "_", bson_iter_key(&it));
		if (v->value_type == BSON_TYPE_UTF8)
			bson_string_append(name, v->value.v_utf8.str);
		else if (v->value_type == BSON_TYPE_DOUBLE && v->value.v_double != (double)(int64_t)v->value.v_double)
			bson_string_append_printf(name, "%g", v->value.v_double);
		else
			bson_string_append_printf(name, "%lld", (long long)bson_iter_as_int64(&it));
		first = false;
	}
}

/* Whether every top-level conjunct of a partialFilterExpression is on the
 * metaField (then its bucket form is exact: a bucket's measurements share
 * their meta); the translation into out. */
static bool
partial_meta_only(const ts_options_t *o, const bson_t *pf, bson_t *out)
{
	bson_iter_t it;
	char path[PATH_MAX_LEN];

	bson_iter_init(&it, pf);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it), *sub;
		if (strcmp(k, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_iter_t arr;
			bson_t a, one;
			bson_append_array_begin(out, "$and", -1, &a);
			bson_iter_recurse(&it, &arr);
			while (bson_iter_next(&arr)) {
				const uint8_t *d;
				uint32_t l;
				bson_t sub_doc;
				if (!BSON_ITER_HOLDS_DOCUMENT(&arr))
					return false;
				bson_iter_document(&arr, &l, &d);
				if (!bson_init_static(&sub_doc, d, l))
					return false;
				bson_append_document_begin(&a, bson_iter_key(&arr), -1, &one);
				if (!partial_meta_only(o, &sub_doc, &one))
					return false;
				bson_append_document_end(&a, &one);
			}
			bson_append_array_end(out, &a);
			continue;
		}
		if (k[0] == '$' || !meta_sub(o, k, &sub) || strlen(sub) > PATH_MAX_LEN - 10)
			return false;
		bson_snprintf(path, sizeof(path), "meta%s%s", *sub ? "." : "", sub);
		bson_append_iter(out, path, -1, &it);
	}
	return true;
}

int
ts_index_spec_to_buckets(const ts_options_t *o, const bson_t *spec, bson_t *out, terr_t *err)
{
	bson_iter_t it;
	bson_t key = BSON_INITIALIZER, user_key;
	bool measurement = false, original = false, ttl = false, partial_meta = false, has_key = false;
	int ret = 0;

	bson_iter_init(&it, spec);
	while (ret == 0 && bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if (strcmp(f, "key") == 0) {
			const uint8_t *d;
			uint32_t l;
			bson_iter_t k;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH, "The field 'key' must be an object, but got %s",
				    bv_type_name(bson_iter_type(&it)));
				break;
			}
			bson_iter_document(&it, &l, &d);
			bson_init_static(&user_key, d, l);
			has_key = true;
			bson_iter_init(&k, &user_key);
			while (bson_iter_next(&k))
				if (BSON_ITER_HOLDS_UTF8(&k) && strcmp(bson_iter_utf8(&k, NULL), "text") == 0)
					ret = terr_set(err, TERR_INVALID_OPTIONS,
					    "Text indexes are not supported on time-series collections");
			if (ret != 0)
				break;
			if (ts_index_key_to_buckets(o, &user_key, &key, &measurement, err) != 0) {
				char *msg = bson_strdup(err->msg);
				ret = terr_set(err, TERR_CANNOT_CREATE_INDEX, "BadValue: %s", msg);
				bson_free(msg);
				break;
			}
			original = original || measurement;
		} else if (strcmp(f, "partialFilterExpression") == 0) {
			const uint8_t *d;
			uint32_t l;
			bson_t pf, tr;
			original = true;
			if (bson_has_field(spec, "collation")) {
				ret = terr_set(err, TERR_INDEX_OPTIONS_CONFLICT,
				    "On a time-series collection, partialFilterExpression and collation arguments are "
				    "incompatible");
				break;
			}
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				continue;   /* the bucket spec's own check answers its type error */
			bson_iter_document(&it, &l, &d);
			bson_init_static(&pf, d, l);
			bson_append_document_begin(out, "partialFilterExpression", -1, &tr);
			partial_meta = partial_meta_only(o, &pf, &tr);
			bson_append_document_end(out, &tr);
			if (!partial_meta)
				ret = terr_set(err, TERR_NOT_IMPLEMENTED,
				    "a partialFilterExpression on time-series measurement or time fields is not supported by "
				    "Tamga yet (only on the metaField)");
		} else if (strcmp(f, "sparse") == 0) {
			bson_iter_t k;
			if (bson_iter_init_find(&k, spec, "key") && BSON_ITER_HOLDS_DOCUMENT(&k) && bson_iter_recurse(&k, &k))
				while (ret == 0 && bson_iter_next(&k)) {
					const char *p = bson_iter_key(&k), *sub;
					if (strcmp(p, o->time_field) != 0 && !meta_sub(o, p, &sub))
						ret = terr_set(err, TERR_INVALID_OPTIONS,
						    "Sparse indexes are not supported on time-series measurements");
				}
			bson_append_iter(out, f, -1, &it);
		} else if (strcmp(f, "expireAfterSeconds") == 0) {
			ttl = true;
		} else if (strcmp(f, "unique") == 0) {
			if (bson_iter_as_bool(&it)) {
				ret = terr_set(err, TERR_INVALID_OPTIONS,
				    "Unique indexes are not supported on time-series collections");
				break;
			}
			bson_append_iter(out, f, -1, &it);
		} else if (strcmp(f, "originalSpec") == 0) {
			continue;   /* ours to write */
		} else {
			bson_append_iter(out, f, -1, &it);
		}
	}
	if (ret == 0 && !has_key)
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "The 'key' field is a required property of an index specification");
	if (ret == 0 && ttl) {
		if (!partial_meta)
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "TTL indexes on time-series collections require a partialFilterExpression on the metaField");
		else if (bson_count_keys(&user_key) != 1) {
			char *ks = bv_doc_to_mongo_string(&user_key);
			ret = terr_set(err, TERR_CANNOT_CREATE_INDEX,
			    "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", ks);
			bson_free(ks);
		} else if (!bson_has_field(&user_key, o->time_field))
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "TTL indexes on non-time fields are not supported on time-series collections");
		else
			ret = terr_set(err, TERR_NOT_IMPLEMENTED,
			    "TTL indexes on time-series collections are not supported by Tamga yet (use the collection's "
			    "expireAfterSeconds)");
	}
	if (ret == 0) {
		bson_iter_t k;
		bson_iter_init(&k, &key);
		while (bson_iter_next(&k))
			if (BSON_ITER_HOLDS_UTF8(&k) && strcmp(bson_iter_utf8(&k, NULL), "2dsphere_bucket") == 0)
				ret = terr_set(err, TERR_NOT_IMPLEMENTED,
				    "2dsphere indexes on time-series measurements ('2dsphere_bucket') are not supported by "
				    "Tamga yet");
	}
	if (ret == 0) {
		bson_string_t *name = NULL;
		if (!bson_has_field(spec, "name")) {
			name = bson_string_new(NULL);
			default_name(&user_key, name);
			BSON_APPEND_UTF8(out, "name", name->str);
		}
		BSON_APPEND_DOCUMENT(out, "key", &key);
		if (original) {
			bson_t os;
			bson_append_document_begin(out, "originalSpec", -1, &os);
			bson_iter_init(&it, spec);
			while (bson_iter_next(&it))
				if (strcmp(bson_iter_key(&it), "originalSpec") != 0)
					bson_append_iter(&os, bson_iter_key(&it), -1, &it);
			if (name != NULL)
				BSON_APPEND_UTF8(&os, "name", name->str);
			bson_append_document_end(out, &os);
		}
		if (name != NULL)
			bson_string_free(name, true);
	}
	bson_destroy(&key);
	return ret;
}

/* control.min.<f> / control.max.<f>: *is_max, *f. */
static bool
control_path(const char *p, bool *is_max, const char **f)
{
	if (strncmp(p, "control.min.", 12) == 0)
		*is_max = false;
	else if (strncmp(p, "control.max.", 12) == 0)
		*is_max = true;
	else
		return false;
	*f = p + 12;
	return **f != '\0';
}

/* mongod's createTimeseriesIndexSpecFromBucketsIndexSpec: false when the
 * key does not map back. */
static bool
key_from_buckets(const ts_options_t *o, const bson_t *bkey, bson_t *out)
{
	bson_iter_t it;
	char path[PATH_MAX_LEN];

	bson_iter_init(&it, bkey);
	while (bson_iter_next(&it)) {
		const char *p = bson_iter_key(&it), *f, *g;
		bool mx, mx2;
		if (control_path(p, &mx, &f) && strcmp(f, o->time_field) == 0) {
			if (!mx) {
				if (!BSON_ITER_HOLDS_NUMBER(&it))
					return false;
				bson_append_iter(out, o->time_field, -1, &it);
			}
			continue;
		}
		if (o->meta_field != NULL && strcmp(p, "meta") == 0) {
			bson_append_iter(out, o->meta_field, -1, &it);
			continue;
		}
		if (o->meta_field != NULL && strncmp(p, "meta.", 5) == 0 && strlen(p) < PATH_MAX_LEN - 200) {
			bson_snprintf(path, sizeof(path), "%s.%s", o->meta_field, p + 5);
			bson_append_iter(out, path, -1, &it);
			continue;
		}
		if (strncmp(p, "data.", 5) == 0 && BSON_ITER_HOLDS_UTF8(&it) &&
		    strcmp(bson_iter_utf8(&it, NULL), "2dsphere_bucket") == 0) {
			BSON_APPEND_UTF8(out, p + 5, "2dsphere");
			continue;
		}
		if (!control_path(p, &mx, &f) || !BSON_ITER_HOLDS_NUMBER(&it)) {
			return false;
		} else {
			double d1 = bson_iter_as_double(&it), d2;
			if (!bson_iter_next(&it) || !control_path(bson_iter_key(&it), &mx2, &g) || !BSON_ITER_HOLDS_NUMBER(&it))
				return false;
			d2 = bson_iter_as_double(&it);
			if (d1 != d2 || strcmp(f, g) != 0 || (d1 >= 0 ? (mx || !mx2) : (!mx || mx2)))
				return false;
			bson_append_iter(out, f, -1, &it);
		}
	}
	return true;
}

bool
ts_index_spec_from_buckets(const ts_options_t *o, const bson_t *bucket_spec, bson_t *out)
{
	bson_iter_t it, k;
	bson_t ukey = BSON_INITIALIZER;

	if (bson_iter_init_find(&it, bucket_spec, "originalSpec") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_t v, ov;
		bool has_v = false;
		/* listIndexes shows the index version first, as mongod's
		 * validated original spec has it */
		bson_iter_recurse(&it, &ov);
		while (bson_iter_next(&ov))
			has_v = has_v || strcmp(bson_iter_key(&ov), "v") == 0;
		if (!has_v && bson_iter_init_find(&v, bucket_spec, "v"))
			bson_append_iter(out, "v", 1, &v);
		bson_iter_recurse(&it, &k);
		while (bson_iter_next(&k))
			bson_append_iter(out, bson_iter_key(&k), -1, &k);
		return true;
	}
	if (!bson_iter_init_find(&it, bucket_spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	{
		const uint8_t *d;
		uint32_t l;
		bson_t bkey;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&bkey, d, l);
		if (!key_from_buckets(o, &bkey, &ukey)) {
			bson_destroy(&ukey);
			return false;
		}
	}
	bson_iter_init(&it, bucket_spec);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "key") == 0)
			BSON_APPEND_DOCUMENT(out, "key", &ukey);
		else
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
	}
	bson_destroy(&ukey);
	return true;
}

void
ts_ix_fields_add(ts_ix_fields_t *fs, const ts_options_t *o, const bson_t *bucket_key, const bool *field_multikey)
{
	bson_iter_t it;
	int pos = 0;

	bson_iter_init(&it, bucket_key);
	for (; bson_iter_next(&it); pos++) {
		const char *f;
		bool mx, arr = field_multikey == NULL || field_multikey[pos];
		int i;
		if (!control_path(bson_iter_key(&it), &mx, &f) || strcmp(f, o->time_field) == 0 || strchr(f, '.') != NULL ||
		    strlen(f) >= sizeof(fs->f[0].name))
			continue;
		for (i = 0; i < fs->n; i++)
			if (strcmp(fs->f[i].name, f) == 0)
				break;
		if (i == fs->n) {
			if (fs->n == TS_IX_FIELDS_MAX)
				continue;
			memset(&fs->f[i], 0, sizeof(fs->f[i]));
			bson_strncpy(fs->f[i].name, f, sizeof(fs->f[i].name));
			fs->n++;
		}
		if (mx) {
			fs->f[i].max_array = fs->f[i].has_max ? fs->f[i].max_array || arr : arr;
			fs->f[i].has_max = true;
		} else {
			fs->f[i].min_array = fs->f[i].has_min ? fs->f[i].min_array || arr : arr;
			fs->f[i].has_min = true;
		}
	}
}
