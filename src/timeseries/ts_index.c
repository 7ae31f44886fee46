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
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bson/value.h"
#include "common/error.h"
#include "timeseries/ts_index.h"

#define PATH_MAX_LEN 600

/* "<field>: <value>" as mongod prints a BSONElement. */
static void geo_conjunct(const char *field, const bson_value_t *region, bson_t *arr, int *n);

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
	const char *rest = ts_meta_suffix(o, p);

	if (rest == NULL)
		return false;
	*sub = rest[0] == '.' ? rest + 1 : "";
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

/* ---- partialFilterExpression into bucket terms ------------------------------------ */

/* mongod's BucketSpec::pushdownPredicate with IneligiblePredicatePolicy::kError:
 * every predicate must have a bucket form, else 5916301.  Meta predicates are
 * exact (renamed onto "meta"); time and measurement predicates become loose
 * bounds on control.min/max that keep every bucket holding a measurement that
 * matches.  mongod's bounds ($_internalExprGt on control.max...) assume a
 * bucket never mixes types in a field (mongod closes it on a type change);
 * Tamga's buckets may, so the forms below also keep a bucket whose bound is
 * of a type that sorts past the operand's (or an array, or later: an array
 * measurement may match by an element while min/max are whole values), and
 * one whose min is NaN (NaN sorts below every number).  Only the operators a
 * partial filter may hold are used ($or, $and, comparisons, $type, $exists). */

#define TS_PF_ERR 5916301
#define TS_PF_DEPTH 20

/* The $type codes of every BSON type, with its canonical rank. */
static const struct {
	bson_type_t t;
	int code;
} pf_types[] = {
	{BSON_TYPE_MINKEY, -1}, {BSON_TYPE_UNDEFINED, 6}, {BSON_TYPE_NULL, 10}, {BSON_TYPE_DOUBLE, 1},
	{BSON_TYPE_INT32, 16}, {BSON_TYPE_INT64, 18}, {BSON_TYPE_DECIMAL128, 19}, {BSON_TYPE_UTF8, 2},
	{BSON_TYPE_SYMBOL, 14}, {BSON_TYPE_DOCUMENT, 3}, {BSON_TYPE_ARRAY, 4}, {BSON_TYPE_BINARY, 5},
	{BSON_TYPE_OID, 7}, {BSON_TYPE_BOOL, 8}, {BSON_TYPE_DATE_TIME, 9}, {BSON_TYPE_TIMESTAMP, 17},
	{BSON_TYPE_REGEX, 11}, {BSON_TYPE_DBPOINTER, 12}, {BSON_TYPE_CODE, 13}, {BSON_TYPE_CODEWSCOPE, 15},
	{BSON_TYPE_MAXKEY, 127},
};

/* {path: {$type: [the types whose rank r satisfies lo <= r <= hi, or r >=
 * from_array when from_array]}} as one element of arr (key), when any. */
static bool
pf_type_clause(bson_t *arr, int *n, const char *path, int lo, int hi, bool or_array_on)
{
	bson_t one, t, list;
	char key[16];
	int k = 0, array_rank = bv_type_rank(BSON_TYPE_ARRAY);

	for (size_t i = 0; i < sizeof(pf_types) / sizeof(pf_types[0]); i++) {
		int r = bv_type_rank(pf_types[i].t);
		if ((r >= lo && r <= hi) || (or_array_on && r >= array_rank))
			k++;
	}
	if (k == 0)
		return false;
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_document_begin(&one, path, -1, &t);
	bson_append_array_begin(&t, "$type", -1, &list);
	k = 0;
	for (size_t i = 0; i < sizeof(pf_types) / sizeof(pf_types[0]); i++) {
		int r = bv_type_rank(pf_types[i].t);
		if ((r >= lo && r <= hi) || (or_array_on && r >= array_rank)) {
			bson_snprintf(key, sizeof(key), "%d", k++);
			BSON_APPEND_INT32(&list, key, pf_types[i].code);
		}
	}
	bson_append_array_end(&t, &list);
	bson_append_document_end(&one, &t);
	bson_append_document_end(arr, &one);
	return true;
}

static void
pf_cmp_clause(bson_t *arr, int *n, const char *path, const char *op, const bson_value_t *v)
{
	bson_t one, c;
	char key[16];

	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_document_begin(&one, path, -1, &c);
	bv_append(&c, op, -1, v);
	bson_append_document_end(&one, &c);
	bson_append_document_end(arr, &one);
}

/* One bound of a measurement comparison, appended to arr as element *n:
 * upper ($gt/$gte: some value reaches past v, so control.max does) or lower
 * ($lt/$lte: control.min does, or an array hides under a later max). */
static void
pf_bound(bson_t *arr, int *n, const char *field, const char *op, const bson_value_t *v)
{
	char minp[PATH_MAX_LEN], maxp[PATH_MAX_LEN], key[16];
	bool upper = op[1] == 'g';
	int r = bv_type_rank(v->value_type), m = 0;
	bson_t one, ors;

	bson_snprintf(minp, sizeof(minp), "control.min.%s", field);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", field);
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_array_begin(&one, "$or", -1, &ors);
	if (upper) {
		pf_cmp_clause(&ors, &m, maxp, op, v);
		/* a NaN operand: only NaN compares equal to it, every other number
		 * sorts above it */
		pf_type_clause(&ors, &m, maxp, bv_is_nan(v) ? r : r + 1, INT32_MAX, true);
	} else {
		pf_cmp_clause(&ors, &m, minp, op, v);
		pf_type_clause(&ors, &m, minp, INT32_MIN, r - 1, false);
		if (bv_is_number(v) && !bv_is_nan(v)) {
			bson_value_t nan = {.value_type = BSON_TYPE_DOUBLE};
			nan.value.v_double = NAN;
			pf_cmp_clause(&ors, &m, minp, "$eq", &nan);
		}
		pf_type_clause(&ors, &m, maxp, INT32_MAX, INT32_MAX, true);
	}
	bson_append_array_end(&one, &ors);
	bson_append_document_end(arr, &one);
}

static int
pf_ineligible(const char *path, const char *op, const bson_value_t *v, const char *why, terr_t *err)
{
	bson_t d = BSON_INITIALIZER, c;
	char *s;
	int ret;

	bson_append_document_begin(&d, path, -1, &c);
	bv_append(&c, op, -1, v);
	bson_append_document_end(&d, &c);
	s = bv_doc_to_mongo_string(&d);
	ret = terr_set(err, TS_PF_ERR,
	    "Error translating non-metadata time-series predicate to operate on buckets: %s: %s", why, s);
	bson_free(s);
	bson_destroy(&d);
	return ret;
}

/* One comparison {path: {op: v}} on the time or a measurement field, as
 * conjunct(s) of arr. */
static int
pf_compare(const ts_options_t *o, bson_t *arr, int *n, const char *path, const char *op, const bson_value_t *v,
           terr_t *err)
{
	bool is_time = strcmp(path, o->time_field) == 0;
	bool eq = strcmp(op, "$eq") == 0;

	if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY)
		return pf_ineligible(path, op, v, "operand can't be an object or array", err);
	if (v->value_type == BSON_TYPE_NULL)
		return pf_ineligible(path, op, v, "can't handle {$eq: null}", err);
	if (eq && v->value_type == BSON_TYPE_REGEX)
		return pf_ineligible(path, "$regex", v, "can't handle this predicate", err);
	if (is_time) {
		char minp[PATH_MAX_LEN], maxp[PATH_MAX_LEN];
		if (v->value_type != BSON_TYPE_DATE_TIME)
			return pf_ineligible(path, op, v,
			    "This predicate will never be true, because the time field always contains a Date", err);
		/* times are dates only, control.min rounded down, control.max exact */
		bson_snprintf(minp, sizeof(minp), "control.min.%s", path);
		bson_snprintf(maxp, sizeof(maxp), "control.max.%s", path);
		if (eq || op[1] == 'l')
			pf_cmp_clause(arr, n, minp, eq ? "$lte" : op, v);
		if (eq || op[1] == 'g')
			pf_cmp_clause(arr, n, maxp, eq ? "$gte" : op, v);
		return 0;
	}
	if (eq || op[1] == 'l')
		pf_bound(arr, n, path, eq ? "$lte" : op, v);
	if (eq || op[1] == 'g')
		pf_bound(arr, n, path, eq ? "$gte" : op, v);
	return 0;
}

static int pf_node(const ts_options_t *o, const bson_t *node, bson_t *arr, int *n, bool *metric, int depth,
                   terr_t *err);

/* k conjuncts (conj "0".."k-1") as one document under key of list: {} when
 * none (always true), the conjunct itself when one, else {$and: conj}. */
static void
pf_append_conj(bson_t *list, const char *key, const bson_t *conj, int k)
{
	bson_t br;

	bson_append_document_begin(list, key, -1, &br);
	if (k == 1) {
		bson_iter_t it, one;
		bson_iter_init(&it, conj);
		bson_iter_next(&it);
		bson_iter_recurse(&it, &one);
		while (bson_iter_next(&one))
			bson_append_iter(&br, bson_iter_key(&one), -1, &one);
	} else if (k > 1) {
		BSON_APPEND_ARRAY(&br, "$and", conj);
	}
	bson_append_document_end(list, &br);
}

/* {$and|$or: [nodes]} as one conjunct of arr. */
static int
pf_logical(const ts_options_t *o, const char *op, bson_iter_t *it, bson_t *arr, int *n, bool *metric, int depth,
           terr_t *err)
{
	bson_iter_t a;
	bson_t one, list;
	char key[16];
	int m = 0;

	if (!BSON_ITER_HOLDS_ARRAY(it) || !bson_iter_recurse(it, &a))
		return terr_set(err, TERR_BAD_VALUE, "%s must be an array", op);
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_array_begin(&one, op, -1, &list);
	while (bson_iter_next(&a)) {
		const uint8_t *d;
		uint32_t l;
		bson_t sub, conj = BSON_INITIALIZER;
		int k = 0;
		if (!BSON_ITER_HOLDS_DOCUMENT(&a)) {
			bson_destroy(&conj);
			return terr_set(err, TERR_BAD_VALUE, "%s argument's entries must be objects", op);
		}
		bson_iter_document(&a, &l, &d);
		if (!bson_init_static(&sub, d, l) || pf_node(o, &sub, &conj, &k, metric, depth + 1, err) != 0) {
			bson_destroy(&conj);
			return -1;
		}
		bson_snprintf(key, sizeof(key), "%d", m++);
		pf_append_conj(&list, key, &conj, k);
		bson_destroy(&conj);
	}
	bson_append_array_end(&one, &list);
	bson_append_document_end(arr, &one);
	return 0;
}

/* One filter document's conjuncts into arr (elements "0".."n-1"). */
static int
pf_node(const ts_options_t *o, const bson_t *node, bson_t *arr, int *n, bool *metric, int depth, terr_t *err)
{
	bson_iter_t it;

	if (depth > TS_PF_DEPTH)
		return terr_set(err, TERR_BAD_VALUE, "partialFilterExpression nested too deeply");
	bson_iter_init(&it, node);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it), *sub;
		const bson_value_t *v = bson_iter_value(&it);
		bson_iter_t ops;
		char key[16];

		if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0) {
			RET(pf_logical(o, k, &it, arr, n, metric, depth, err));
			continue;
		}
		if (k[0] == '$')
			return pf_ineligible(k, "$", v, "can't handle this predicate", err);
		if (strlen(k) > PATH_MAX_LEN - 20)
			return terr_set(err, TERR_BAD_VALUE, "partialFilterExpression path too long");
		if (meta_sub(o, k, &sub)) {
			/* exact: a bucket's measurements share their meta */
			char path[PATH_MAX_LEN];
			bson_t one;
			bson_snprintf(path, sizeof(path), "meta%s%s", *sub ? "." : "", sub);
			bson_snprintf(key, sizeof(key), "%d", (*n)++);
			bson_append_document_begin(arr, key, -1, &one);
			bson_append_iter(&one, path, -1, &it);
			bson_append_document_end(arr, &one);
			continue;
		}
		*metric = true;
		/* {f: v} (v not an operator document) is {f: {$eq: v}} */
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &ops) || !bson_iter_next(&ops) ||
		    bson_iter_key(&ops)[0] != '$') {
			RET(pf_compare(o, arr, n, k, "$eq", v, err));
			continue;
		}
		bson_iter_recurse(&it, &ops);
		while (bson_iter_next(&ops)) {
			const char *op = bson_iter_key(&ops);
			const bson_value_t *ov = bson_iter_value(&ops);
			if (strcmp(op, "$eq") == 0 || strcmp(op, "$gt") == 0 || strcmp(op, "$gte") == 0 ||
			    strcmp(op, "$lt") == 0 || strcmp(op, "$lte") == 0) {
				RET(pf_compare(o, arr, n, k, op, ov, err));
			} else if (strcmp(op, "$in") == 0 && BSON_ITER_HOLDS_ARRAY(&ops)) {
				/* {$in: [X, Y]} is {$or: [{f: X}, {f: Y}]} */
				bson_iter_t e;
				bson_t one, list;
				int m = 0;
				bson_iter_recurse(&ops, &e);
				while (bson_iter_next(&e)) {
					if (BSON_ITER_HOLDS_REGEX(&e))
						return pf_ineligible(k, op, ov,
						    "can't handle $regex predicate (inside $in predicate)", err);
					if (BSON_ITER_HOLDS_NULL(&e))
						return pf_ineligible(k, op, ov,
						    "can't handle {$eq: null} predicate (inside $in predicate)", err);
				}
				bson_snprintf(key, sizeof(key), "%d", (*n)++);
				bson_append_document_begin(arr, key, -1, &one);
				bson_append_array_begin(&one, "$or", -1, &list);
				bson_iter_recurse(&ops, &e);
				while (bson_iter_next(&e)) {
					bson_t conj = BSON_INITIALIZER;
					int c = 0;
					if (pf_compare(o, &conj, &c, k, "$eq", bson_iter_value(&e), err) != 0) {
						bson_destroy(&conj);
						return -1;
					}
					bson_snprintf(key, sizeof(key), "%d", m++);
					pf_append_conj(&list, key, &conj, c);
					bson_destroy(&conj);
				}
				bson_append_array_end(&one, &list);
				bson_append_document_end(arr, &one);
			} else if (strcmp(op, "$exists") == 0 && bson_iter_as_bool(&ops)) {
				/* a field a measurement holds is in its bucket's min and max */
				char minp[PATH_MAX_LEN], maxp[PATH_MAX_LEN];
				bson_value_t t = {.value_type = BSON_TYPE_BOOL};
				t.value.v_bool = true;
				bson_snprintf(minp, sizeof(minp), "control.min.%s", k);
				bson_snprintf(maxp, sizeof(maxp), "control.max.%s", k);
				pf_cmp_clause(arr, n, minp, "$exists", &t);
				pf_cmp_clause(arr, n, maxp, "$exists", &t);
			} else if ((strcmp(op, "$geoWithin") == 0 || strcmp(op, "$within") == 0 ||
			            strcmp(op, "$geoIntersects") == 0) && BSON_ITER_HOLDS_DOCUMENT(&ops)) {
				/* mongod's createPredicate for a GEO expression (within or
				 * intersects): {$_internalBucketGeoWithin: {withinRegion:
				 * <the operand>, field}}, which keeps every bucket some
				 * measurement of which meets the region (query/match.c);
				 * the region itself is checked when the bucket filter is
				 * compiled */
				geo_conjunct(k, ov, arr, n);
			} else {
				return pf_ineligible(k, op, ov, "can't handle this predicate", err);
			}
		}
	}
	return 0;
}

int
ts_index_partial_to_buckets(const ts_options_t *o, const bson_t *pf, bson_t *out, bool *metric, terr_t *err)
{
	bson_t arr = BSON_INITIALIZER;
	int n = 0, ret;

	*metric = false;
	ret = pf_node(o, pf, &arr, &n, metric, 0, err);
	if (ret == 0 && n == 1) {
		/* one conjunct: its own fields */
		bson_iter_t it, one;
		bson_iter_init(&it, &arr);
		bson_iter_next(&it);
		bson_iter_recurse(&it, &one);
		while (bson_iter_next(&one))
			bson_append_iter(out, bson_iter_key(&one), -1, &one);
	} else if (ret == 0 && n > 1) {
		BSON_APPEND_ARRAY(out, "$and", &arr);
	}
	bson_destroy(&arr);
	return ret;
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
			bool metric;
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
			ret = ts_index_partial_to_buckets(o, &pf, &tr, &metric, err);
			bson_append_document_end(out, &tr);
			partial_meta = ret == 0 && !metric;
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
			/* kept in its place; the key becomes control.min.<time> below */
			ttl = true;
			bson_append_iter(out, f, -1, &it);
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
		} else if (!bson_has_field(&user_key, o->time_field)) {
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "TTL indexes on non-time fields are not supported on time-series collections");
		} else {
			/* mongod's convertToTTLTimeField: {control.min.<time>: <the user's value>}; the TTL
			 * monitor deletes whole buckets through it (query/planner_ttl.c) */
			bson_iter_t k;
			char p[PATH_MAX_LEN];
			bson_iter_init(&k, &user_key);
			bson_iter_next(&k);
			bson_snprintf(p, sizeof(p), "control.min.%s", o->time_field);
			bson_reinit(&key);
			bson_append_iter(&key, p, -1, &k);
		}
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
		/* what collMod changes on the bucket index (a TTL's
		 * expireAfterSeconds, hidden) shows its current value */
		bson_iter_recurse(&it, &k);
		while (bson_iter_next(&k)) {
			const char *f = bson_iter_key(&k);
			bson_iter_t cur;
			if ((strcmp(f, "expireAfterSeconds") == 0 || strcmp(f, "hidden") == 0) &&
			    bson_iter_init_find(&cur, bucket_spec, f))
				bson_append_iter(out, f, -1, &cur);
			else if (strcmp(f, "hidden") != 0)
				bson_append_iter(out, f, -1, &k);
		}
		if (!bson_has_field(out, "hidden") && bson_iter_init_find(&v, bucket_spec, "hidden") &&
		    bson_iter_as_bool(&v))
			bson_append_iter(out, "hidden", -1, &v);
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

/* ---- indexes that read measurements ------------------------------------------------ */

/* Whether a bucket-level path is the time bound, the meta (or under it) or
 * the bucket _id: what mongod's doesBucketsIndexIncludeMeasurement lets an
 * index name without reading a measurement. */
static bool
non_measurement_path(const ts_options_t *o, const char *p, bool allow_id)
{
	char minp[PATH_MAX_LEN], maxp[PATH_MAX_LEN];

	bson_snprintf(minp, sizeof(minp), "control.min.%s", o->time_field);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", o->time_field);
	if (strcmp(p, minp) == 0 || strcmp(p, maxp) == 0)
		return true;
	if (o->meta_field != NULL && (strcmp(p, "meta") == 0 || strncmp(p, "meta.", 5) == 0))
		return true;
	return allow_id && strcmp(p, "_id") == 0;
}

/* Any field a (bucket-level) filter names that is not one of those. */
static bool
filter_reads_measurement(const ts_options_t *o, const bson_t *f, int depth)
{
	bson_iter_t it;

	if (depth > 40 || !bson_iter_init(&it, f))
		return true;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0 || strcmp(k, "$nor") == 0) {
			bson_iter_t a;
			if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &a))
				return true;
			while (bson_iter_next(&a)) {
				const uint8_t *d;
				uint32_t l;
				bson_t sub;
				if (!BSON_ITER_HOLDS_DOCUMENT(&a))
					return true;
				bson_iter_document(&a, &l, &d);
				if (!bson_init_static(&sub, d, l) || filter_reads_measurement(o, &sub, depth + 1))
					return true;
			}
			continue;
		}
		if (k[0] == '$' || !non_measurement_path(o, k, true))
			return true;
	}
	return false;
}

bool
ts_index_includes_measurement(const ts_options_t *o, const bson_t *bucket_spec)
{
	bson_iter_t it, k;

	if (bson_iter_init_find(&it, bucket_spec, "key") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &k))
		while (bson_iter_next(&k))
			if (!non_measurement_path(o, bson_iter_key(&k), false))
				return true;
	if (bson_iter_init_find(&it, bucket_spec, "partialFilterExpression") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;
		bson_t pf;
		bson_iter_document(&it, &l, &d);
		return !bson_init_static(&pf, d, l) || filter_reads_measurement(o, &pf, 0);
	}
	return false;
}

/* ---- measurement geo predicates on buckets ------------------------------------------ */

/* One {f: {$geoWithin|$within|$geoIntersects: region}} conjunct on a
 * measurement field as {$_internalBucketGeoWithin: {withinRegion: region,
 * field: f}}, element *n of arr. */
static void
geo_conjunct(const char *field, const bson_value_t *region, bson_t *arr, int *n)
{
	bson_t one, g;
	char key[16];

	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_document_begin(&one, "$_internalBucketGeoWithin", -1, &g);
	bv_append(&g, "withinRegion", -1, region);
	BSON_APPEND_UTF8(&g, "field", field);
	bson_append_document_end(&one, &g);
	bson_append_document_end(arr, &one);
}

static void
geo_conjuncts(const ts_options_t *o, const bson_t *filter, bson_t *arr, int *n, int depth)
{
	bson_iter_t it, ops;

	if (depth > TS_PF_DEPTH || !bson_iter_init(&it, filter))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it), *sub;
		if (strcmp(k, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_iter_t a;
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a)) {
				const uint8_t *d;
				uint32_t l;
				bson_t sd;
				if (!BSON_ITER_HOLDS_DOCUMENT(&a))
					continue;
				bson_iter_document(&a, &l, &d);
				if (bson_init_static(&sd, d, l))
					geo_conjuncts(o, &sd, arr, n, depth + 1);
			}
			continue;
		}
		if (k[0] == '$' || strcmp(k, o->time_field) == 0 || meta_sub(o, k, &sub) ||
		    strlen(k) > PATH_MAX_LEN - 20 || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &ops))
			continue;
		while (bson_iter_next(&ops)) {
			const char *op = bson_iter_key(&ops);
			if ((strcmp(op, "$geoWithin") == 0 || strcmp(op, "$within") == 0 ||
			     strcmp(op, "$geoIntersects") == 0) && BSON_ITER_HOLDS_DOCUMENT(&ops))
				geo_conjunct(k, bson_iter_value(&ops), arr, n);
		}
	}
}

bool
ts_bucket_geo_filter(const ts_options_t *o, const bson_t *filter, bson_t *out)
{
	bson_t arr = BSON_INITIALIZER;
	int n = 0;

	if (filter != NULL)
		geo_conjuncts(o, filter, &arr, &n, 0);
	if (n > 0)
		BSON_APPEND_ARRAY(out, "$and", &arr);
	bson_destroy(&arr);
	return n > 0;
}
