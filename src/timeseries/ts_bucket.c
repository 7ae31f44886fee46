/*
 * ts_bucket.c -- time-series options and buckets (timeseries.h): create's
 * timeseries document checked and normalized, the control.version 1 bucket
 * built from measurements and unpacked again, and the bucket-level filter
 * a query on measurements implies.
 *
 * Buckets built here are mongod's uncompressed layout (control.version 1);
 * compressed ones (2 and 3, ts_bucket_v2.c) are counted and unpacked
 * through their v1 form.
 */
#include "timeseries/timeseries.h"
#include "timeseries/ts_minmax.h"
#include "timeseries/ts_compress.h"
#include "timeseries/ts_index.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/damage.h"
#include "bson/value.h"
#include "common/mem.h"

/* ---- options --------------------------------------------------------------- */

static const struct granularity {
	const char *name;
	int64_t max_span, rounding;
} granularities[] = {
	{"seconds", 3600, 60},
	{"minutes", 86400, 3600},
	{"hours", 2592000, 86400},
	{NULL, 0, 0},
};

bool
ts_granularity_spans(const char *name, int64_t *max_span, int64_t *rounding)
{
	for (int i = 0; granularities[i].name != NULL; i++)
		if (strcmp(granularities[i].name, name) == 0) {
			*max_span = granularities[i].max_span;
			*rounding = granularities[i].rounding;
			return true;
		}
	return false;
}

static int
ts_name_check(const char *field, const bson_iter_t *it, const char **out, terr_t *err)
{
	uint32_t len;
	const char *s;

	if (!BSON_ITER_HOLDS_UTF8(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'create.timeseries.%s' is the wrong type '%s', expected type 'string'", field,
		    bv_type_name(bson_iter_type(it)));
	s = bson_iter_utf8(it, &len);
	if (strlen(s) != len)
		return terr_set(err, TERR_BAD_VALUE, "The '%s' field cannot contain embedded null characters", field);
	if (s[0] == '$')
		return terr_set(err, TERR_BAD_VALUE, "The '%s' field cannot start with '$': %s", field, s);
	if (strchr(s, '.') != NULL)
		return terr_set(err, TERR_INVALID_OPTIONS, "The '%s' field cannot contain embedded fields", field);
	*out = s;
	return 0;
}

static int
ts_seconds(const char *field, const bson_iter_t *it, int64_t *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_NUMBER(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'create.timeseries.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'",
		    field, bv_type_name(bson_iter_type(it)));
	*out = bson_iter_as_int64(it);
	if (*out < 1 || *out > TS_MAX_SPAN_LIMIT)
		return terr_set(err, TERR_BAD_VALUE, "BSON field 'create.timeseries.%s' value must be in the range [1, %d]",
		    field, TS_MAX_SPAN_LIMIT);
	return 0;
}

int
ts_options_check(const bson_t *holder, bson_t *out, terr_t *err)
{
	bson_iter_t it, f;
	const char *time = NULL, *meta = NULL, *gran = NULL;
	int64_t span = 0, rounding = 0, gspan, grounding;
	bool has_span = false, has_rounding = false;
	bson_t ts;

	if (!bson_iter_init_find(&it, holder, "timeseries"))
		return 0;
	if (!BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'create.timeseries' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&it)));
	bson_iter_recurse(&it, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "timeField") == 0) {
			RET(ts_name_check("timeField", &f, &time, err));
		} else if (strcmp(k, "metaField") == 0) {
			RET(ts_name_check("metaField", &f, &meta, err));
		} else if (strcmp(k, "granularity") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'create.timeseries.granularity' is the wrong type '%s', expected type 'string'",
				    bv_type_name(bson_iter_type(&f)));
			gran = bson_iter_utf8(&f, NULL);
			if (!ts_granularity_spans(gran, &gspan, &grounding))
				return terr_set(err, TERR_BAD_VALUE,
				    "Enumeration value '%s' for field 'create.timeseries.granularity' is not a valid value.", gran);
		} else if (strcmp(k, "bucketMaxSpanSeconds") == 0) {
			RET(ts_seconds(k, &f, &span, err));
			has_span = true;
		} else if (strcmp(k, "bucketRoundingSeconds") == 0) {
			RET(ts_seconds(k, &f, &rounding, err));
			has_rounding = true;
		} else {
			return terr_set(err, 40415, "BSON field 'create.timeseries.%s' is an unknown field.", k);
		}
	}
	if (time == NULL)
		return terr_set(err, 40414, "BSON field 'create.timeseries.timeField' is missing but a required field");
	if (meta != NULL && strcmp(meta, time) == 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "The 'metaField' cannot be the same as the 'timeField'");
	if (meta != NULL && strcmp(meta, "_id") == 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "The 'metaField' field cannot be \"_id\"");
	if (gran != NULL || (!has_span && !has_rounding)) {
		if (gran == NULL)
			gran = "seconds";
		ts_granularity_spans(gran, &gspan, &grounding);
		if (has_rounding)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Timeseries 'bucketRoundingSeconds' cannot be set with 'granularity'");
		if (has_span && span != gspan)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %lld for the provided granularity",
			    (long long)gspan);
		span = gspan;
		rounding = grounding;
	} else {
		if (!has_span || !has_rounding)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' must both be set");
		if (span != rounding)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'");
	}
	bson_append_document_begin(out, "timeseries", -1, &ts);
	BSON_APPEND_UTF8(&ts, "timeField", time);
	if (meta != NULL)
		BSON_APPEND_UTF8(&ts, "metaField", meta);
	if (gran != NULL) {
		BSON_APPEND_UTF8(&ts, "granularity", gran);
	} else {
		BSON_APPEND_INT32(&ts, "bucketRoundingSeconds", (int32_t)rounding);
	}
	BSON_APPEND_INT32(&ts, "bucketMaxSpanSeconds", (int32_t)span);
	bson_append_document_end(out, &ts);
	return 0;
}

bool
ts_options_get(const bson_t *options, ts_options_t *o)
{
	bson_iter_t it, f;

	memset(o, 0, sizeof(*o));
	if (options == NULL || !bson_iter_init_find(&it, options, "timeseries") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	{
		bson_iter_t fb;
		o->field_bounds = bson_iter_init_find(&fb, options, TS_OPT_BOUNDS) && BSON_ITER_HOLDS_NUMBER(&fb) &&
		    bson_iter_as_int64(&fb) == 2;
	}
	if (ts_options_mixed_schema(options)) {
		o->mixed_schema = true;
		o->field_bounds = false;   /* the readers' conservative path */
	}
	bson_iter_recurse(&it, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "timeField") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			o->time_field = bson_iter_utf8(&f, NULL);
		else if (strcmp(k, "metaField") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			o->meta_field = bson_iter_utf8(&f, NULL);
		else if (strcmp(k, "granularity") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			o->granularity = bson_iter_utf8(&f, NULL);
		else if (strcmp(k, "bucketMaxSpanSeconds") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
			o->max_span = bson_iter_as_int64(&f);
		else if (strcmp(k, "bucketRoundingSeconds") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
			o->rounding = bson_iter_as_int64(&f);
	}
	if (o->granularity != NULL) {
		int64_t span;
		ts_granularity_spans(o->granularity, &span, &o->rounding);
		if (o->max_span <= 0)
			o->max_span = span;
	}
	if (o->max_span <= 0)
		o->max_span = 3600;
	if (o->rounding <= 0)
		o->rounding = o->max_span;
	return o->time_field != NULL;
}

bool
ts_options_mixed_schema(const bson_t *options)
{
	bson_iter_t it, cs;

	if (options == NULL)
		return false;
	if (bson_iter_init_find(&it, options, TS_OPT_MIXED))
		return bson_iter_as_bool(&it);
	return bson_iter_init(&it, options) &&
	    bson_iter_find_descendant(&it, "storageEngine.wiredTiger.configString", &cs) &&
	    BSON_ITER_HOLDS_UTF8(&cs) && strstr(bson_iter_utf8(&cs, NULL), TS_OPT_MIXED "=true") != NULL;
}

void
ts_options_copy_public(const bson_t *a, bson_t *out)
{
	bson_iter_t it;

	if (a != NULL && bson_iter_init(&it, a))
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), TS_OPT_BOUNDS) != 0 && strcmp(bson_iter_key(&it), TS_OPT_MIXED) != 0)
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
}

bool
ts_options_equal_public(const bson_t *a, const bson_t *b)
{
	bson_t x = BSON_INITIALIZER, y = BSON_INITIALIZER;
	bool eq;

	ts_options_copy_public(a, &x);
	ts_options_copy_public(b, &y);
	eq = bson_equal(&x, &y);
	bson_destroy(&x);
	bson_destroy(&y);
	return eq;
}

/* ---- buckets ------------------------------------------------------------------ */

/* One column being built: a field name, its values (vals[c]) and bounds. */
typedef struct column {
	const char *name;
	bson_value_t min, max;       /* shallow: point into the measurements (or own_*) */
	bool any;
	bson_t *own_min, *own_max;   /* bounds merged from documents/arrays (ts_minmax.h) */
} column_t;

static int
column_of(const column_t *cols, int ncols, const char *f)
{
	for (int c = ncols - 1; c >= 0; c--)
		if (strcmp(cols[c].name, f) == 0)
			return c;
	return -1;
}

/* The columns of a bucket being written, grown as fields appear. */
typedef struct colset {
	column_t *cols;
	int n, cap;
} colset_t;

static void
colset_add(colset_t *cs, const char *name)
{
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? cs->cap * 2 : 16;
		cs->cols = bson_realloc(cs->cols, sizeof(*cs->cols) * (size_t)cs->cap);
	}
	memset(&cs->cols[cs->n], 0, sizeof(cs->cols[cs->n]));
	cs->cols[cs->n++].name = name;
}

/* A column for each field of the measurements not yet in cs (the meta field
 * excepted), in the order the fields first appear. */
static void
colset_add_fields(colset_t *cs, const ts_options_t *o, const bson_t *const *ms, int n)
{
	for (int i = 0; i < n; i++) {
		bson_iter_t it;
		int c = -1;
		if (!bson_iter_init(&it, ms[i]))
			continue;
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			if (c + 1 < cs->n && strcmp(cs->cols[c + 1].name, f) == 0) {
				c++;   /* the usual case: the field order of the one before */
				continue;
			}
			if (o->meta_field != NULL && strcmp(f, o->meta_field) == 0)
				continue;
			if ((c = column_of(cs->cols, cs->n, f)) < 0) {
				colset_add(cs, f);
				c = cs->n - 1;
			}
		}
	}
}

/* Append measurement i's values to vals[c] under key first + i and widen
 * the columns' bounds. */
static void
colset_fill(colset_t *cs, bson_t *vals, const bson_t *const *ms, int n, int first)
{
	char buf[16];
	const char *key;

	for (int i = 0; i < n; i++) {
		bson_iter_t it;
		int c = -1;
		/* no printf per key: libbson's table-backed conversion */
		bson_uint32_to_string((uint32_t)(first + i), &key, buf, sizeof(buf));
		if (!bson_iter_init(&it, ms[i]))
			continue;
		while (bson_iter_next(&it)) {
			const bson_value_t *v = bson_iter_value(&it);
			const char *f = bson_iter_key(&it);
			column_t *col;
			/* measurements mostly share a field order: try the column
			 * after the last one first */
			if (c + 1 < cs->n && c >= -1 && strcmp(cs->cols[c + 1].name, f) == 0)
				c = c + 1;
			else
				c = column_of(cs->cols, cs->n, f);
			if (c < 0)
				continue;
			col = &cs->cols[c];
			bv_append(&vals[c], key, -1, v);
			/* field by field, as mongod's MinMax (ts_minmax.h) */
			ts_minmax_widen2(&col->min, &col->max, &col->any, &col->own_min, &col->own_max, v);
		}
	}
}

static void control_write(const colset_t *cs, const char *time_field, int64_t start_ms, bson_t *out);

/* Free the columns and their merged bounds. */
static void
colset_release(colset_t *cs)
{
	for (int c = 0; c < cs->n; c++) {
		if (cs->cols[c].own_min != NULL)
			bson_destroy(cs->cols[c].own_min);
		if (cs->cols[c].own_max != NULL)
			bson_destroy(cs->cols[c].own_max);
	}
	bson_free(cs->cols);
	cs->cols = NULL;
	cs->n = cs->cap = 0;
}

/* control (version 1, min, max: the time field's minimum replaced by
 * start_ms when time_field is given), then meta (when given) and data; frees
 * vals and the columns. */
static void
colset_write(colset_t *cs, bson_t *vals, const char *time_field, int64_t start_ms, const bson_value_t *meta,
             bson_t *out)
{
	bson_t data;

	control_write(cs, time_field, start_ms, out);
	if (meta != NULL)
		bv_append(out, "meta", -1, meta);
	bson_append_document_begin(out, "data", -1, &data);
	for (int c = 0; c < cs->n; c++) {
		BSON_APPEND_DOCUMENT(&data, cs->cols[c].name, &vals[c]);
		bson_destroy(&vals[c]);
	}
	bson_append_document_end(out, &data);
	bson_free(vals);
	colset_release(cs);
}

/* control: version 1, min and max of the columns (the time field's minimum
 * replaced by start_ms when time_field is given). */
static void
control_write(const colset_t *cs, const char *time_field, int64_t start_ms, bson_t *out)
{
	bson_t control, min, max;

	bson_append_document_begin(out, "control", -1, &control);
	BSON_APPEND_INT32(&control, "version", 1);
	bson_append_document_begin(&control, "min", -1, &min);
	for (int c = 0; c < cs->n; c++) {
		if (time_field != NULL && strcmp(cs->cols[c].name, time_field) == 0)
			BSON_APPEND_DATE_TIME(&min, cs->cols[c].name, start_ms);
		else if (cs->cols[c].any)
			bv_append(&min, cs->cols[c].name, -1, &cs->cols[c].min);
	}
	bson_append_document_end(&control, &min);
	bson_append_document_begin(&control, "max", -1, &max);
	for (int c = 0; c < cs->n; c++)
		if (cs->cols[c].any)
			bv_append(&max, cs->cols[c].name, -1, &cs->cols[c].max);
	bson_append_document_end(&control, &max);
	bson_append_document_end(out, &control);
}

static bson_t *
colset_vals_new(const colset_t *cs)
{
	bson_t *vals = tm_bson_array_new((size_t)(cs->n + 1));

	for (int c = 0; c < cs->n; c++)
		bson_init(&vals[c]);
	return vals;
}

void
ts_bucket_build(const ts_options_t *o, const bson_oid_t *id, int64_t start_ms, const bson_value_t *meta,
                const bson_t *const *ms, int n, bson_t *out)
{
	colset_t cs = {0};
	bson_t *vals;

	colset_add_fields(&cs, o, ms, n);
	vals = colset_vals_new(&cs);
	colset_fill(&cs, vals, ms, n, 0);
	BSON_APPEND_OID(out, "_id", id);
	colset_write(&cs, vals, o->time_field, start_ms,
	    o->meta_field != NULL && meta != NULL && meta->value_type != BSON_TYPE_EOD ? meta : NULL, out);
}

/* The columns' bounds as old's control.min/max have them. */
static void
colset_old_bounds(colset_t *cs, const bson_t *old)
{
	bson_iter_t sub;

	for (int pass = 0; pass < 2; pass++) {
		bson_iter_t ct, b;
		if (!bson_iter_init(&ct, old) || !bson_iter_find_descendant(&ct, pass ? "control.max" : "control.min", &b) ||
		    !BSON_ITER_HOLDS_DOCUMENT(&b) || !bson_iter_recurse(&b, &sub))
			continue;
		while (bson_iter_next(&sub)) {
			int c = column_of(cs->cols, cs->n, bson_iter_key(&sub));
			if (c < 0)
				continue;
			if (pass)
				cs->cols[c].max = *bson_iter_value(&sub);
			else
				cs->cols[c].min = *bson_iter_value(&sub);
			cs->cols[c].any = true;
		}
	}
}

void
ts_bucket_append(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n, bson_t *out)
{
	colset_t cs = {0};
	bson_t *vals;
	bson_iter_t it, data;
	const bson_value_t *meta = NULL;

	/* the old columns first (their order stays), then new fields */
	if (bson_iter_init_find(&it, old, "data") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &data))
		while (bson_iter_next(&data))
			colset_add(&cs, bson_iter_key(&data));
	colset_add_fields(&cs, o, ms, n);
	vals = colset_vals_new(&cs);
	/* the old values as they are (each column's bytes copied whole: a
	 * per-value copy made appending one measurement cost the whole bucket
	 * in appends), and the old bounds */
	if (bson_iter_init_find(&it, old, "data") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &data))
		for (int c = 0; bson_iter_next(&data) && c < cs.n; c++) {
			const uint8_t *cd;
			uint32_t cl;
			bson_t col;
			if (!BSON_ITER_HOLDS_DOCUMENT(&data))
				continue;
			bson_iter_document(&data, &cl, &cd);
			if (bson_init_static(&col, cd, cl))
				bson_concat(&vals[c], &col);
		}
	colset_old_bounds(&cs, old);
	colset_fill(&cs, vals, ms, n, ts_bucket_count(o, old));
	/* the same document shape as ts_bucket_build; the time minimum stays the
	 * bucket's start (a later measurement cannot be earlier: routing) */
	if (bson_iter_init_find(&it, old, "_id"))
		bson_append_iter(out, "_id", -1, &it);
	if (bson_iter_init_find(&it, old, "meta"))
		meta = bson_iter_value(&it);
	colset_write(&cs, vals, NULL, 0, meta, out);
}

/* Where the parts of a bucket in this file's layout are (byte offsets in
 * the bucket): the control and data values, and each column's value. */
typedef struct bucket_map {
	uint32_t control, control_len, data, data_len;
	uint32_t *col, *col_len;   /* per old column (data's order) */
	int ncols;
	bool has_meta;
} bucket_map_t;

/* Map old when it is in the layout ts_bucket_build/append write: _id,
 * control {version: 1, min: {...}, max: {...}}, meta (optional), data of
 * documents; false otherwise.  cs gets the old columns' names. */
static bool
bucket_map(const bson_t *old, colset_t *cs, bucket_map_t *m)
{
	static const char *const order[] = {"_id", "control", "meta", "data"};
	bson_iter_t it, d;
	int k = 0;

	memset(m, 0, sizeof(*m));
	if (!bson_iter_init(&it, old))
		return false;
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		while (k < 4 && strcmp(key, order[k]) != 0)
			k++;
		if (k == 4 || (k != 2 && k != 0 && !BSON_ITER_HOLDS_DOCUMENT(&it)))
			return false;
		if (k == 1) {
			bson_iter_t c;
			static const char *const cks[] = {"version", "min", "max"};
			int ck = 0;
			m->control = it.d1;
			m->control_len = it.next_off - it.d1;
			if (!bson_iter_recurse(&it, &c))
				return false;
			while (bson_iter_next(&c))
				if (ck == 3 || strcmp(bson_iter_key(&c), cks[ck++]) != 0 ||
				    (ck == 1 ? !BSON_ITER_HOLDS_INT32(&c) || bson_iter_int32(&c) != 1 : !BSON_ITER_HOLDS_DOCUMENT(&c)))
					return false;
			if (ck != 3)
				return false;
		} else if (k == 2) {
			m->has_meta = true;
		} else if (k == 3) {
			m->data = it.d1;
			m->data_len = it.next_off - it.d1;
		}
		k++;
	}
	if (m->data == 0 || m->control == 0 || !bson_iter_init_find(&it, old, "data") || !bson_iter_recurse(&it, &d))
		return false;
	while (bson_iter_next(&d)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&d) || column_of(cs->cols, cs->n, bson_iter_key(&d)) >= 0)
			return false;
		colset_add(cs, bson_iter_key(&d));
		m->col = bson_realloc(m->col, sizeof(*m->col) * (size_t)cs->n);
		m->col_len = bson_realloc(m->col_len, sizeof(*m->col_len) * (size_t)cs->n);
		m->col[cs->n - 1] = m->data + d.d1;
		m->col_len[cs->n - 1] = d.next_off - d.d1;
	}
	m->ncols = cs->n;
	return true;
}

bool
ts_bucket_append_damages(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n, bson_t *out,
                         bdamages_t *dm)
{
	colset_t cs = {0};
	bucket_map_t m;
	bson_t *vals, data;
	bson_iter_t it;
	const uint8_t *ob = bson_get_data(old);
	uint32_t delta = 0, newcols = 0, nc, ncl;
	bool ok = true;

	bdamages_reset(dm);
	if (!bucket_map(old, &cs, &m)) {
		/* another layout (a rawData write): rewrite and compare */
		bson_free(cs.cols);
		bson_free(m.col);
		bson_free(m.col_len);
		ts_bucket_append(o, old, ms, n, out);
		return bdamages_compute(ob, old->len, bson_get_data(out), out->len, dm);
	}
	colset_add_fields(&cs, o, ms, n);
	vals = colset_vals_new(&cs);
	colset_old_bounds(&cs, old);
	colset_fill(&cs, vals, ms, n, ts_bucket_count(o, old));
	/* the bucket as ts_bucket_append writes it: old columns' bytes with the
	 * new elements after them, new columns last */
	if (bson_iter_init_find(&it, old, "_id"))
		bson_append_iter(out, "_id", -1, &it);
	/* control's value starts after its element header (type byte,
	 * "control" and its nul) where out's nul is now */
	nc = out->len - 1 + 1 + 8;
	control_write(&cs, NULL, 0, out);
	ncl = out->len - 1 - nc;
	if (m.has_meta && bson_iter_init_find(&it, old, "meta"))
		bson_append_iter(out, "meta", -1, &it);
	bson_append_document_begin(out, "data", -1, &data);
	for (int c = 0; c < cs.n; c++) {
		bson_t col;
		bson_append_document_begin(&data, cs.cols[c].name, -1, &col);
		if (c < m.ncols)
			bv_append_raw(&col, ob + m.col[c] + 4, m.col_len[c] - 5);
		bv_append_raw(&col, bson_get_data(&vals[c]) + 4, vals[c].len - 5);
		bson_append_document_end(&data, &col);
		bson_destroy(&vals[c]);
	}
	bson_append_document_end(out, &data);
	bson_free(vals);
	/* the damages, in ascending order: the bucket's length, control's
	 * changes, data's length, each old column's length and new elements,
	 * the new columns before data's nul */
	if (out->len != old->len)
		bdamages_add(dm, 0, 0, 4, 4);
	if (nc != m.control) {
		ok = false;
	} else if (ncl != m.control_len || memcmp(ob + m.control, bson_get_data(out) + nc, ncl) != 0) {
		ok = bdamages_diff_at(ob, m.control, bson_get_data(out), nc, dm);
		delta = ncl - m.control_len;   /* modulo 2^32: offsets wrap back */
	}
	if (ok && out->len != old->len)
		bdamages_add(dm, m.data, m.data + delta, 4, 4);
	for (int c = 0; ok && c < cs.n; c++) {
		uint32_t added = 0;
		if (c >= m.ncols) {
			/* the new columns: between the last old column and data's
			 * nul, which is out's last byte but one (data is last) */
			newcols = out->len - 1 - (m.data + m.data_len + delta);
			break;
		}
		/* the column's new elements: the column grew by them */
		{
			const uint8_t *nb = bson_get_data(out) + (uint32_t)(m.col[c] + delta);   /* delta wraps in 32 bits */
			uint32_t nl = (uint32_t)nb[0] | (uint32_t)nb[1] << 8 | (uint32_t)nb[2] << 16 | (uint32_t)nb[3] << 24;
			added = nl - m.col_len[c];
		}
		if (added > 0) {
			bdamages_add(dm, m.col[c], m.col[c] + delta, 4, 4);
			bdamages_add(dm, m.col[c] + m.col_len[c] - 1, m.col[c] + delta + m.col_len[c] - 1, 0, added);
			delta += added;
		}
	}
	if (ok && newcols > 0) {
		uint32_t at = m.data + m.data_len - 1;
		bdamages_add(dm, at, at + delta, 0, newcols);
		delta += newcols;
	}
	if (ok && out->len != old->len + delta)
		ok = false;
	colset_release(&cs);
	bson_free(m.col);
	bson_free(m.col_len);
	if (!ok) {   /* not where this code expected: compare instead */
		return bdamages_compute(ob, old->len, bson_get_data(out), out->len, dm);
	}
	return true;
}

/* The time column of a bucket. */
static bool
time_column(const ts_options_t *o, const bson_t *bucket, bson_iter_t *col)
{
	bson_iter_t it, d;

	return bson_iter_init_find(&it, bucket, "data") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &d) &&
	    bson_iter_find(&d, o->time_field) && BSON_ITER_HOLDS_DOCUMENT(&d) && bson_iter_recurse(&d, col);
}

/*
 * The count a time column of len bytes has when it holds dates under keys
 * "0", "1", ... (as buckets are written): each element is 10 bytes (type,
 * key's NUL, 8 of date) plus its key's digits, and a document has 5 bytes
 * of its own.  -1 when no count gives len (then the caller walks it).
 */
static int
time_column_count(uint32_t len)
{
	int64_t rest = (int64_t)len - 5, n = 0;

	for (int64_t digits = 1, lo = 0, hi = 10; rest > 0 && digits <= 10; digits++, lo = hi, hi *= 10) {
		int64_t per = 10 + digits, k = rest / per;
		if (k > hi - lo)
			k = hi - lo;
		n += k;
		rest -= k * per;
		if (k < hi - lo)
			break;
	}
	return rest == 0 && n <= INT32_MAX ? (int)n : -1;
}

int
ts_bucket_count(const ts_options_t *o, const bson_t *bucket)
{
	bson_iter_t col, it, d;
	int n = 0;

	if (ts_bucket_is_compressed(bucket)) {
		/* control.count, else the decompressed time column's */
		bson_t v1 = BSON_INITIALIZER;
		terr_t e = TERR_INIT;
		if (bson_iter_init(&it, bucket) && bson_iter_find_descendant(&it, "control.count", &d) &&
		    BSON_ITER_HOLDS_NUMBER(&d) && bson_iter_as_int64(&d) >= 0 && bson_iter_as_int64(&d) <= INT32_MAX)
			return (int)bson_iter_as_int64(&d);
		n = ts_bucket_decompress(bucket, &v1, &e) == 0 ? ts_bucket_count(o, &v1) : 0;
		terr_clear(&e);
		bson_destroy(&v1);
		return n;
	}
	/* the column's length says its count (no walk of every value) when
	 * its elements are dates under keys 0..n-1, and the last one confirms */
	if (bson_iter_init_find(&it, bucket, "data") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &d) &&
	    bson_iter_find(&d, o->time_field) && BSON_ITER_HOLDS_DOCUMENT(&d)) {
		const uint8_t *cd;
		uint32_t cl;
		bson_iter_document(&d, &cl, &cd);
		n = time_column_count(cl);
		if (n == 0)
			return 0;
		if (n > 0) {
			/* the last element starts at cl - 1 - 10 - digits(n - 1): its key must be n - 1 */
			char key[16];
			int kl = bson_snprintf(key, sizeof(key), "%d", n - 1);
			uint32_t at = cl - 1 - 10 - (uint32_t)kl;
			if (cd[at] == BSON_TYPE_DATE_TIME && memcmp(cd + at + 1, key, (size_t)kl + 1) == 0)
				return n;
		}
	}
	n = 0;
	if (!time_column(o, bucket, &col))
		return 0;
	while (bson_iter_next(&col))
		n++;
	return n;
}

const char *
ts_meta_suffix(const ts_options_t *o, const char *path)
{
	size_t ml;

	if (o->meta_field == NULL)
		return NULL;
	ml = strlen(o->meta_field);
	if (strncmp(path, o->meta_field, ml) != 0 || (path[ml] != '\0' && path[ml] != '.'))
		return NULL;
	return path + ml;
}

bool
ts_unpack_wants(const ts_options_t *o, const char *name)
{
	if (o->include == NULL)
		return true;
	for (int i = 0; i < o->n_include; i++)
		if (strcmp(o->include[i], name) == 0)
			return true;
	return false;
}

/* A compressed bucket's columns worth decoding: the included ones and the
 * time column (it drives the walk). */
static bool
unpack_keep_column(const void *ctx, const char *name)
{
	const ts_options_t *o = ctx;

	return strcmp(name, o->time_field) == 0 || ts_unpack_wants(o, name);
}

int
ts_bucket_unpack(const ts_options_t *o, const bson_t *bucket, bson_t *scratch, ts_measurement_fn fn, void *ctx,
                 terr_t *err)
{
	bson_iter_t it, data, tcol, meta;
	bson_iter_t *cols;
	bool *live;
	int ncols = 0, rc = 0, total = 0;
	bool has_meta, want_time;
	int64_t latest = 0;
	const char **names;          /* each column's field name (NULL: the time column) */

	if (ts_bucket_is_compressed(bucket)) {
		/* a compressed bucket unpacks as its v1 form */
		bson_t v1 = BSON_INITIALIZER;
		rc = o->include != NULL ? ts_bucket_decompress_some(bucket, &v1, unpack_keep_column, o, err)
		                        : ts_bucket_decompress(bucket, &v1, err);
		if (rc == 0)
			rc = ts_bucket_unpack(o, &v1, scratch, fn, ctx, err);
		bson_destroy(&v1);
		return rc;
	}
	if (!bson_iter_init_find(&it, bucket, "data") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !time_column(o, bucket, &tcol))
		return 0;
	bson_iter_recurse(&it, &data);
	while (bson_iter_next(&data))
		total++;
	cols = tm_alloc0(sizeof(*cols) * (size_t)(total + 1));
	live = bson_malloc0(sizeof(*live) * (size_t)(total + 1));
	names = bson_malloc0(sizeof(*names) * (size_t)(total + 1));
	bson_iter_recurse(&it, &data);
	while (bson_iter_next(&data) && ncols < total) {
		/* the time column is emitted from tcol (first), not here */
		if (!BSON_ITER_HOLDS_DOCUMENT(&data) || !ts_unpack_wants(o, bson_iter_key(&data)))
			continue;
		names[ncols] = strcmp(bson_iter_key(&data), o->time_field) == 0 ? NULL : bson_iter_key(&data);
		bson_iter_recurse(&data, &cols[ncols]);
		live[ncols] = bson_iter_next(&cols[ncols]);
		ncols++;
	}
	has_meta = o->meta_field != NULL && ts_unpack_wants(o, o->meta_field) && bson_iter_init_find(&meta, bucket, "meta");
	want_time = ts_unpack_wants(o, o->time_field);
	if (o->only_latest) {
		/* the greatest time first: only its measurements are built */
		bson_iter_t tc = tcol;
		bool any = false;
		while (bson_iter_next(&tc))
			if (BSON_ITER_HOLDS_DATE_TIME(&tc) && (!any || bson_iter_date_time(&tc) > latest)) {
				latest = bson_iter_date_time(&tc);
				any = true;
			}
	}
	/* columns are sparse: each holds the indexes of the measurements that
	 * have the field, in order; walk them side by side with the time
	 * column, which every measurement has */
	while (bson_iter_next(&tcol)) {
		const char *idx = bson_iter_key(&tcol);
		int c = 0;

		if (o->only_latest && (!BSON_ITER_HOLDS_DATE_TIME(&tcol) || bson_iter_date_time(&tcol) != latest)) {
			/* not built: its column entries are stepped over */
			for (c = 0; c < ncols; c++)
				if (live[c] && strcmp(bson_iter_key(&cols[c]), idx) == 0)
					live[c] = bson_iter_next(&cols[c]);
			continue;
		}

		/* mongod's order: the time, the meta, then the other fields in
		 * column order */
		bson_reinit(scratch);
		if (want_time)
			bson_append_iter(scratch, o->time_field, -1, &tcol);
		if (has_meta)
			bson_append_iter(scratch, o->meta_field, -1, &meta);
		for (c = 0; c < ncols; c++)
			if (live[c] && strcmp(bson_iter_key(&cols[c]), idx) == 0) {
				if (names[c] != NULL)
					bson_append_iter(scratch, names[c], -1, &cols[c]);
				live[c] = bson_iter_next(&cols[c]);
			}
		if ((rc = fn(ctx, scratch, err)) != 0)
			break;
	}
	bson_free(cols);
	bson_free(live);
	bson_free(names);
	return rc;
}

/* ---- the bucket filter -------------------------------------------------------- */

bool
ts_meta_bucket_path(const ts_options_t *o, const char *path, char *buf, size_t size)
{
	const char *rest = ts_meta_suffix(o, path);

	if (rest == NULL)
		return false;
	bson_snprintf(buf, size, "meta%s", rest);
	return strlen(rest) + 5 <= size;
}

/* The bucket _id bounds of a time range (mongod's loose predicate on the
 * _id: a bucket's _id carries its start in seconds, and its measurements
 * lie in [start, start + bucketMaxSpanSeconds)): appended to out as
 * {_id: {$gte: <lo>, $lte: <hi>}} for the sides known (lo_ms / hi_ms of the
 * measurements; INT64_MIN / INT64_MAX: none) that an ObjectId's 32-bit
 * seconds can hold, which lets the scan of the clustered buckets start and
 * stop by _id. */
static void
id_bounds(const ts_options_t *o, int64_t lo_ms, int64_t hi_ms, bson_t *out)
{
	bson_t b;
	bson_oid_t oid;
	bool lo = false, hi = false;
	int64_t lo_s = 0, hi_s = 0;

	if (lo_ms != INT64_MIN && lo_ms > INT64_MIN / 2) {
		int64_t start = lo_ms - o->max_span * 1000;   /* the earliest start of a bucket holding lo_ms */
		lo_s = start >= 0 ? start / 1000 : -1;
		lo = lo_s >= 0 && lo_s <= (int64_t)UINT32_MAX;
	}
	if (hi_ms != INT64_MAX && hi_ms >= 0) {
		hi_s = hi_ms / 1000;
		hi = hi_s <= (int64_t)UINT32_MAX;
	}
	if (!lo && !hi)
		return;
	BSON_APPEND_DOCUMENT_BEGIN(out, "_id", &b);
	if (lo) {
		memset(&oid, 0, sizeof(oid));
		for (int k = 0; k < 4; k++)
			oid.bytes[k] = (uint8_t)((uint64_t)lo_s >> (24 - 8 * k));
		BSON_APPEND_OID(&b, "$gte", &oid);
	}
	if (hi) {
		memset(&oid, 0xff, sizeof(oid));
		for (int k = 0; k < 4; k++)
			oid.bytes[k] = (uint8_t)((uint64_t)hi_s >> (24 - 8 * k));
		BSON_APPEND_OID(&b, "$lte", &oid);
	}
	bson_append_document_end(out, &b);
}

/* {time: <pred>} with date operands: bounds on control.min/max.time, and
 * on the bucket _id. */
static bool
time_bounds(const ts_options_t *o, const bson_iter_t *pred, bson_t *out)
{
	char minp[512], maxp[512];
	bson_iter_t ops;
	bool any = false;
	int64_t lo_ms = INT64_MIN, hi_ms = INT64_MAX;

	bson_snprintf(minp, sizeof(minp), "control.min.%s", o->time_field);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", o->time_field);
	if (BSON_ITER_HOLDS_DATE_TIME(pred)) {
		bson_t a, b;
		BSON_APPEND_DOCUMENT_BEGIN(out, minp, &a);
		BSON_APPEND_DATE_TIME(&a, "$lte", bson_iter_date_time(pred));
		bson_append_document_end(out, &a);
		BSON_APPEND_DOCUMENT_BEGIN(out, maxp, &b);
		BSON_APPEND_DATE_TIME(&b, "$gte", bson_iter_date_time(pred));
		bson_append_document_end(out, &b);
		id_bounds(o, bson_iter_date_time(pred), bson_iter_date_time(pred), out);
		return true;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(pred) || !bson_iter_recurse(pred, &ops))
		return false;
	while (bson_iter_next(&ops)) {
		const char *op = bson_iter_key(&ops);
		const char *path = NULL;
		int64_t d;
		bson_t b;
		if (!BSON_ITER_HOLDS_DATE_TIME(&ops))
			continue;
		d = bson_iter_date_time(&ops);
		if (strcmp(op, "$gt") == 0 || strcmp(op, "$gte") == 0) {
			path = maxp;
			lo_ms = d > lo_ms ? d : lo_ms;
		} else if (strcmp(op, "$lt") == 0 || strcmp(op, "$lte") == 0) {
			path = minp;
			hi_ms = d < hi_ms ? d : hi_ms;
		} else if (strcmp(op, "$eq") == 0) {
			bson_t a;
			BSON_APPEND_DOCUMENT_BEGIN(out, minp, &a);
			BSON_APPEND_DATE_TIME(&a, "$lte", d);
			bson_append_document_end(out, &a);
			path = maxp;
			op = "$gte";
			lo_ms = d > lo_ms ? d : lo_ms;
			hi_ms = d < hi_ms ? d : hi_ms;
		}
		if (path == NULL)
			continue;
		BSON_APPEND_DOCUMENT_BEGIN(out, path, &b);
		BSON_APPEND_DATE_TIME(&b, op, d);
		bson_append_document_end(out, &b);
		any = true;
	}
	if (any)
		id_bounds(o, lo_ms, hi_ms, out);
	return any;
}

/*
 * {f: <numeric comparison>} on a top-level measurement field: a bucket can
 * only be left out when its control.min.f and control.max.f are both
 * numbers (then every value of the column is a number: BSON order puts
 * every other type outside them) and the bound rules out [min, max].
 * Appends {$or: [bound on min/max, min not a number, max not a number, max an
 * array]} (match operators look into arrays: a max of [5, 3] passes $type
 * "number" and would drop the bucket).
 */
/* {path: {$not: {op: v}}} into out. */
static void
append_not(bson_t *out, const char *path, const char *op, const bson_value_t *v)
{
	bson_t a, b;

	bson_append_document_begin(out, path, -1, &a);
	bson_append_document_begin(&a, "$not", -1, &b);
	bv_append(&b, op, -1, v);
	bson_append_document_end(&a, &b);
	bson_append_document_end(out, &a);
}

/*
 * The index-friendly bound of {f: {op: v}} (v a number) when an index over
 * the buckets shows control.min.f and control.max.f never held an array
 * (fs): BSON order alone then decides.  A bucket holds a number above v or
 * an array (whose elements the query looks into) only when control.max.f is
 * above v in BSON order: a number above it, or a non-number (arrays sort
 * after numbers): {control.max.f: {$not: {$lte: v}}}, which an index scans
 * as [MinKey, -inf) and (v, MaxKey].  Below v: control.min.f not a number
 * at or above v, or -- an array hidden between a number min and a max of a
 * later type -- control.max.f not a number.
 */
static bool
measurement_bounds_ix(const char *minp, const char *maxp, const char *op, const bson_value_t *v, bson_t *out)
{
	bool gt = strcmp(op, "$gt") == 0, gte = strcmp(op, "$gte") == 0;
	bool lt = strcmp(op, "$lt") == 0, lte = strcmp(op, "$lte") == 0;
	bson_value_t inf = {.value_type = BSON_TYPE_DOUBLE};
	bson_t arr, one;

	inf.value.v_double = INFINITY;
	if (gt || gte) {
		append_not(out, maxp, gt ? "$lte" : "$lt", v);
		return true;
	}
	if (!lt && !lte)
		return false;
	bson_append_array_begin(out, "$or", -1, &arr);
	bson_append_document_begin(&arr, "0", 1, &one);
	append_not(&one, minp, lt ? "$gte" : "$gt", v);
	bson_append_document_end(&arr, &one);
	bson_append_document_begin(&arr, "1", 1, &one);
	{
		bson_t c;
		bson_append_document_begin(&one, minp, -1, &c);
		bv_append(&c, lt ? "$gte" : "$gt", -1, v);
		bson_append_document_end(&one, &c);
	}
	append_not(&one, maxp, "$lte", &inf);
	bson_append_document_end(&arr, &one);
	bson_append_array_end(out, &arr);
	return true;
}

static bool
measurement_bounds_path(const char *field, const bson_iter_t *pred, const ts_ix_fields_t *fs, bson_t *out)
{
	char minp[512], maxp[512];
	bson_iter_t ops;
	bool any = false;

	if (strlen(field) > 400 || !BSON_ITER_HOLDS_DOCUMENT(pred) || !bson_iter_recurse(pred, &ops))
		return false;
	bson_snprintf(minp, sizeof(minp), "control.min.%s", field);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", field);
	while (bson_iter_next(&ops)) {
		const char *op = bson_iter_key(&ops);
		const char *path;
		const bson_value_t *v = bson_iter_value(&ops);
		bson_t arr, a, b, c, cmp, nt, t;
		if (!bv_is_number(v) || bv_is_nan(v))
			continue;
		for (int i = 0; fs != NULL && i < fs->n; i++)
			if (strcmp(fs->f[i].name, field) == 0 && fs->f[i].has_min && fs->f[i].has_max &&
			    !fs->f[i].min_array && !fs->f[i].max_array && measurement_bounds_ix(minp, maxp, op, v, out))
				return true;
		if (strcmp(op, "$gt") == 0 || strcmp(op, "$gte") == 0)
			path = maxp;
		else if (strcmp(op, "$lt") == 0 || strcmp(op, "$lte") == 0)
			path = minp;
		else
			continue;
		bson_append_array_begin(out, "$or", -1, &arr);
		bson_append_document_begin(&arr, "0", 1, &a);
		bson_append_document_begin(&a, path, -1, &cmp);
		bv_append(&cmp, op, -1, v);
		bson_append_document_end(&a, &cmp);
		bson_append_document_end(&arr, &a);
		bson_append_document_begin(&arr, "1", 1, &b);
		bson_append_document_begin(&b, minp, -1, &nt);
		bson_append_document_begin(&nt, "$not", -1, &t);
		BSON_APPEND_UTF8(&t, "$type", "number");
		bson_append_document_end(&nt, &t);
		bson_append_document_end(&b, &nt);
		bson_append_document_end(&arr, &b);
		bson_append_document_begin(&arr, "2", 1, &c);
		bson_append_document_begin(&c, maxp, -1, &nt);
		bson_append_document_begin(&nt, "$not", -1, &t);
		BSON_APPEND_UTF8(&t, "$type", "number");
		bson_append_document_end(&nt, &t);
		bson_append_document_end(&c, &nt);
		bson_append_document_end(&arr, &c);
		/* an array max: $type and the bound above look at its elements
		 * (a max of [5, 3] "is" a number), so the bucket stays */
		bson_append_document_begin(&arr, "3", 1, &c);
		bson_append_document_begin(&c, maxp, -1, &t);
		BSON_APPEND_UTF8(&t, "$type", "array");
		bson_append_document_end(&c, &t);
		bson_append_document_end(&arr, &c);
		/* a NaN min: NaN sorts below every number, so a column {NaN, 2}
		 * has min NaN, a number that is not below 5 */
		bson_append_document_begin(&arr, "4", 1, &c);
		BSON_APPEND_DOUBLE(&c, minp, NAN);
		bson_append_document_end(&arr, &c);
		bson_append_array_end(out, &arr);
		any = true;
		break;   /* one bound per predicate document is enough */
	}
	return any;
}

/* {control.<side>.<prefix>: <cond>} as element key of arr */
static void
append_prefix_cond(bson_t *arr, int *k, const char *side, const char *field, size_t plen, const char *type, bool neg)
{
	char key[16], path[512];
	bson_t one, c, t;

	bson_snprintf(key, sizeof(key), "%d", (*k)++);
	bson_snprintf(path, sizeof(path), "control.%s.%.*s", side, (int)plen, field);
	bson_append_document_begin(arr, key, -1, &one);
	bson_append_document_begin(&one, path, -1, &c);
	if (neg) {
		bson_append_document_begin(&c, "$not", -1, &t);
		BSON_APPEND_UTF8(&t, "$type", type);
		bson_append_document_end(&c, &t);
	} else {
		BSON_APPEND_UTF8(&c, "$type", type);
	}
	bson_append_document_end(&one, &c);
	bson_append_document_end(arr, &one);
}

/*
 * A measurement field's numeric range as bucket bounds.  A top-level field:
 * measurement_bounds_path, sound for whole-value and field-by-field bounds
 * alike.  A subfield f.a (only when every bucket's bounds are field by
 * field, o->field_bounds): a bucket can be left out when control.min.f and
 * control.max.f are both plain objects -- then every measurement's f is an
 * object (field-by-field bounds order values of other types whole, by
 * type) and control.min/max.f.a bound every f.a -- and the bound on
 * control.min/max.f.a rules it out; so the bound is OR-ed with "a prefix of
 * the path is not a plain object in control.min or control.max" ($type
 * "object" alone would look into an array's elements).  mongod relies on
 * the same bounds (and on its no-mixed-schema flag).
 */
static bool
measurement_bounds(const ts_options_t *o, const char *field, const bson_iter_t *pred, const ts_ix_fields_t *fs,
                   bson_t *out)
{
	bson_t inner = BSON_INITIALIZER, arr;
	int k = 0;

	if (strchr(field, '.') == NULL)
		return measurement_bounds_path(field, pred, fs, out);
	if (!o->field_bounds || strlen(field) > 400 || field[0] == '.' || field[strlen(field) - 1] == '.' ||
	    !measurement_bounds_path(field, pred, NULL, &inner)) {
		bson_destroy(&inner);
		return false;
	}
	bson_append_array_begin(out, "$or", -1, &arr);
	BSON_APPEND_DOCUMENT(&arr, "0", &inner);
	k = 1;
	for (const char *d = strchr(field, '.'); d != NULL; d = strchr(d + 1, '.')) {
		size_t plen = (size_t)(d - field);
		for (int side = 0; side < 2; side++) {
			append_prefix_cond(&arr, &k, side ? "max" : "min", field, plen, "object", true);
			append_prefix_cond(&arr, &k, side ? "max" : "min", field, plen, "array", false);
		}
	}
	bson_append_array_end(out, &arr);
	bson_destroy(&inner);
	return true;
}

static bool
filter_conjuncts(const ts_options_t *o, const bson_t *filter, const ts_ix_fields_t *fs, bson_t *out, int *n,
                 int depth)
{
	bson_iter_t it;
	bool any = false;

	if (depth > 20 || !bson_iter_init(&it, filter))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		char mp[512];
		if (strcmp(k, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_iter_t arr;
			bson_iter_recurse(&it, &arr);
			while (bson_iter_next(&arr)) {
				const uint8_t *d;
				uint32_t l;
				bson_t sub;
				if (!BSON_ITER_HOLDS_DOCUMENT(&arr))
					continue;
				bson_iter_document(&arr, &l, &d);
				if (bson_init_static(&sub, d, l))
					any = filter_conjuncts(o, &sub, fs, out, n, depth + 1) || any;
			}
		} else if (k[0] == '$') {
			continue;
		} else if (ts_meta_bucket_path(o, k, mp, sizeof(mp))) {
			/* every measurement of a bucket shares its meta: exact */
			bson_t one;
			char key[16];
			bson_snprintf(key, sizeof(key), "%d", (*n)++);
			bson_append_document_begin(out, key, -1, &one);
			bson_append_iter(&one, mp, -1, &it);
			bson_append_document_end(out, &one);
			any = true;
		} else if (strcmp(k, o->time_field) == 0) {
			bson_t one;
			char key[16];
			bson_snprintf(key, sizeof(key), "%d", *n);
			bson_append_document_begin(out, key, -1, &one);
			if (time_bounds(o, &it, &one)) {
				(*n)++;
				any = true;
			}
			bson_append_document_end(out, &one);
		} else {
			/* a measurement field: numeric bounds, where sound */
			bson_t one;
			char key[16];
			bson_snprintf(key, sizeof(key), "%d", *n);
			bson_append_document_begin(out, key, -1, &one);
			if (measurement_bounds(o, k, &it, fs, &one)) {
				(*n)++;
				any = true;
			}
			bson_append_document_end(out, &one);
		}
	}
	return any;
}

bool
ts_bucket_filter(const ts_options_t *o, const bson_t *filter, bson_t *out)
{
	return ts_bucket_filter_ix(o, filter, NULL, out);
}

bool
ts_bucket_filter_ix(const ts_options_t *o, const bson_t *filter, const ts_ix_fields_t *fs, bson_t *out)
{
	bson_t arr = BSON_INITIALIZER;
	int n = 0;
	bool any = filter != NULL && filter_conjuncts(o, filter, fs, &arr, &n, 0) && n > 0;

	if (any) {
		/* drop an empty time entry left by a predicate without dates */
		bson_t clean = BSON_INITIALIZER;
		bson_iter_t it;
		int m = 0;
		bson_iter_init(&it, &arr);
		while (bson_iter_next(&it)) {
			char key[16];
			if (bson_iter_value(&it)->value.v_doc.data_len <= 5)
				continue;
			bson_snprintf(key, sizeof(key), "%d", m++);
			bson_append_iter(&clean, key, -1, &it);
		}
		if (m > 0)
			BSON_APPEND_ARRAY(out, "$and", &clean);
		any = m > 0;
		bson_destroy(&clean);
	}
	bson_destroy(&arr);
	return any;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
ts_unpack_spec(const ts_options_t *o, bson_t *out)
{
	bson_t ex = BSON_INITIALIZER;

	if (o->include != NULL) {
		/* as mongod serializes it: its field set (a sorted set, without
		 * the metaField), then the metaField when it is included */
		char k[16];
		const char **names = bson_malloc0(sizeof(char *) * (size_t)(o->n_include + 1));
		int n = 0;
		bool meta = false;
		for (int i = 0; i < o->n_include; i++) {
			if (o->meta_field != NULL && strcmp(o->include[i], o->meta_field) == 0)
				meta = true;
			else
				names[n++] = o->include[i];
		}
		qsort(names, (size_t)n, sizeof(*names), name_cmp);
		if (meta)
			names[n++] = o->meta_field;
		for (int i = 0; i < n; i++) {
			bson_snprintf(k, sizeof(k), "%d", i);
			BSON_APPEND_UTF8(&ex, k, names[i]);
		}
		bson_free(names);
	}
	bson_append_array(out, o->include != NULL ? "include" : "exclude", -1, &ex);
	BSON_APPEND_UTF8(out, "timeField", o->time_field);
	if (o->meta_field != NULL)
		BSON_APPEND_UTF8(out, "metaField", o->meta_field);
	BSON_APPEND_INT32(out, "bucketMaxSpanSeconds", (int32_t)o->max_span);
	bson_destroy(&ex);
}

/* ---- the event filter and the whole-bucket filter ------------------------------ */

/* Operators an event filter does not take here (they need the whole
 * pipeline's context: variables, text or geo indexes, JavaScript); a $match
 * holding one stays a stage after the unpack. */
static const char *const event_refused[] = {"$expr", "$where", "$text", "$near", "$nearSphere", "$geoNear", NULL};

static bool
event_refuses(const bson_iter_t *it, int depth)
{
	bson_iter_t c;

	if (depth > 100)
		return true;
	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it))
		return false;
	bson_iter_recurse(it, &c);
	while (bson_iter_next(&c)) {
		for (int i = 0; event_refused[i] != NULL; i++)
			if (strcmp(bson_iter_key(&c), event_refused[i]) == 0)
				return true;
		if (event_refuses(&c, depth + 1))
			return true;
	}
	return false;
}

/* The tight (whole-bucket) form of one event conjunct {k: v}, appended to
 * tight as {"<n>": {...}} entries: only the time field compared with dates
 * (mongod's createTightComparisonPredicate: never on other fields, whose
 * values may be missing in some measurements).  False: none. */
static bool
event_tight(const ts_options_t *o, const char *k, const bson_iter_t *v, bson_t *tight, int *n)
{
	char minp[512], maxp[512], key[16];
	bson_iter_t ops;
	bson_t one, cmp;

	if (strcmp(k, o->time_field) != 0)
		return false;
	bson_snprintf(minp, sizeof(minp), "control.min.%s", o->time_field);
	bson_snprintf(maxp, sizeof(maxp), "control.max.%s", o->time_field);
	if (BSON_ITER_HOLDS_DATE_TIME(v)) {
		/* every event equals it when the bucket's min and max both do */
		const char *paths[2] = {minp, maxp};
		for (int i = 0; i < 2; i++) {
			bson_snprintf(key, sizeof(key), "%d", (*n)++);
			bson_append_document_begin(tight, key, -1, &one);
			bson_append_document_begin(&one, paths[i], -1, &cmp);
			BSON_APPEND_DATE_TIME(&cmp, "$eq", bson_iter_date_time(v));
			bson_append_document_end(&one, &cmp);
			bson_append_document_end(tight, &one);
		}
		return true;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(v) || !bson_iter_recurse(v, &ops))
		return false;
	{
		/* every operator a comparison with a date, or no tight form */
		bson_iter_t chk = ops;
		bool any = false;
		while (bson_iter_next(&chk)) {
			const char *op = bson_iter_key(&chk);
			if (!BSON_ITER_HOLDS_DATE_TIME(&chk) ||
			    (strcmp(op, "$eq") != 0 && strcmp(op, "$gt") != 0 && strcmp(op, "$gte") != 0 &&
			     strcmp(op, "$lt") != 0 && strcmp(op, "$lte") != 0))
				return false;
			any = true;
		}
		if (!any)
			return false;
	}
	while (bson_iter_next(&ops)) {
		const char *op = bson_iter_key(&ops);
		int64_t d = bson_iter_date_time(&ops);
		if (strcmp(op, "$eq") == 0) {
			const char *paths[2] = {minp, maxp};
			for (int i = 0; i < 2; i++) {
				bson_snprintf(key, sizeof(key), "%d", (*n)++);
				bson_append_document_begin(tight, key, -1, &one);
				bson_append_document_begin(&one, paths[i], -1, &cmp);
				BSON_APPEND_DATE_TIME(&cmp, "$eq", d);
				bson_append_document_end(&one, &cmp);
				bson_append_document_end(tight, &one);
			}
			continue;
		}
		/* $gt/$gte hold for every event when they hold for the bucket's
		 * min (control.min of the time is rounded down: lower still);
		 * $lt/$lte when they hold for its max */
		bson_snprintf(key, sizeof(key), "%d", (*n)++);
		bson_append_document_begin(tight, key, -1, &one);
		bson_append_document_begin(&one, op[1] == 'l' ? maxp : minp, -1, &cmp);
		BSON_APPEND_DATE_TIME(&cmp, op, d);
		bson_append_document_end(&one, &cmp);
		bson_append_document_end(tight, &one);
	}
	return true;
}

/* Walk filter's conjuncts (top-level fields and $and members, nested):
 * the ones on the metaField are left to the bucket filter, the others
 * appended to ev as {"<n>": {k: v}} and their tight forms to tight
 * (*tight_ok false once one has none). */
static void
event_conjuncts(const ts_options_t *o, const bson_t *filter, bson_t *ev, int *nev, bson_t *tight, int *nt,
                bool *tight_ok, int depth)
{
	bson_iter_t it;
	char mp[512], key[16];

	if (!bson_iter_init(&it, filter))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bson_t one;
		if (strcmp(k, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it) && depth < 20) {
			bson_iter_t arr;
			bool docs = true;
			bson_iter_recurse(&it, &arr);
			while (bson_iter_next(&arr))
				docs &= BSON_ITER_HOLDS_DOCUMENT(&arr);
			if (docs) {
				bson_iter_recurse(&it, &arr);
				while (bson_iter_next(&arr)) {
					const uint8_t *d;
					uint32_t l;
					bson_t sub;
					bson_iter_document(&arr, &l, &d);
					if (bson_init_static(&sub, d, l))
						event_conjuncts(o, &sub, ev, nev, tight, nt, tight_ok, depth + 1);
				}
				continue;
			}
		}
		if (k[0] != '$' && ts_meta_bucket_path(o, k, mp, sizeof(mp)))
			continue;   /* decided exactly by the bucket filter's meta predicate */
		bson_snprintf(key, sizeof(key), "%d", (*nev)++);
		bson_append_document_begin(ev, key, -1, &one);
		bson_append_iter(&one, k, -1, &it);
		bson_append_document_end(ev, &one);
		if (*tight_ok && (k[0] == '$' || !event_tight(o, k, &it, tight, nt)))
			*tight_ok = false;
	}
}

bool
ts_event_split(const ts_options_t *o, const bson_t *filter, bson_t *event, bson_t *whole)
{
	bson_iter_t it;
	bson_t ev = BSON_INITIALIZER, tight = BSON_INITIALIZER;
	int nev = 0, nt = 0;
	bool tight_ok = true;

	if (!bson_iter_init(&it, filter))
		return false;
	{
		/* the filter as a value, to look for refused operators anywhere */
		bson_iter_t top;
		while (bson_iter_next(&it)) {
			for (int i = 0; event_refused[i] != NULL; i++)
				if (strcmp(bson_iter_key(&it), event_refused[i]) == 0)
					return false;
			top = it;
			if (event_refuses(&top, 0))
				return false;
		}
	}
	event_conjuncts(o, filter, &ev, &nev, &tight, &nt, &tight_ok, 0);
	if (nev == 1) {
		bson_iter_t one, in;
		bson_iter_init(&one, &ev);
		bson_iter_next(&one);
		bson_iter_recurse(&one, &in);
		while (bson_iter_next(&in))
			bson_append_iter(event, NULL, 0, &in);
	} else if (nev > 1)
		BSON_APPEND_ARRAY(event, "$and", &ev);
	if (nev > 0 && tight_ok && nt > 0) {
		if (nt == 1) {
			bson_iter_t one, in;
			bson_iter_init(&one, &tight);
			bson_iter_next(&one);
			bson_iter_recurse(&one, &in);
			while (bson_iter_next(&in))
				bson_append_iter(whole, NULL, 0, &in);
		} else
			BSON_APPEND_ARRAY(whole, "$and", &tight);
	}
	bson_destroy(&ev);
	bson_destroy(&tight);
	return true;
}
