/*
 * stage_unpack.c -- $_internalUnpackBucket: time-series buckets in,
 * measurements out (mongod's internal stage, which it also shows in
 * explain).  The command layer puts it in front of every read of a
 * time-series collection (and a bucket-level $match in front of it, see
 * timeseries/timeseries.h); the bucket format is timeseries/'s.
 */
#include "agg/agg_private.h"

#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "query/match.h"
#include "timeseries/timeseries.h"
#include "timeseries/ts_compress.h"

typedef struct unpack_plan {
	char *time_field, *meta_field;
	char **include;              /* the `include` list (NULL: every field) */
	int n_include;
	/* Set by the lastpoint rewrite (cmd_timeseries.c), which puts this stage
	 * after a bucket-level $sort + $group that kept one bucket per meta and
	 * before the user's $sort {meta, time} + $group of $first/$last: only a
	 * bucket's measurements with its greatest time can be a group's first,
	 * so only they are emitted (ties all kept: the user's $sort orders them).
	 * Not shown in explain (how the stage runs, as a $sort's algorithm). */
	bool lastpoint;
	ts_options_t o;              /* borrows the strings above */
	/* mongod's eventFilter (a $match on measurements moved into the stage)
	 * and wholeBucketFilter (a bucket-level predicate under which every
	 * measurement matches it, so the event filter is not run); NULL: none */
	match_t *event, *whole;
	/* the event filter as a closed interval of times [ev_lo, ev_hi] when it
	 * is only comparisons of the time with dates (the column path checks
	 * the decoded times against it) */
	bool ev_interval;
	int64_t ev_lo, ev_hi;
	/* Set by the command layer (cmd_timeseries.c) when the $group after
	 * this stage can run on the buckets' columns: how its _id reads the
	 * time (-1 not at all, > 0 bins of that width, 0 otherwise).  Not shown
	 * in explain (how the stages run). */
	bool block;
	int64_t block_bin;
	/* mongod's computedMetaProjFields: top-level fields a stage before this
	 * one computed on the bucket (a $geoNear on the metaField's distance or
	 * location, cmd_timeseries.c), copied onto each of its measurements --
	 * over a measurement field of the same name, in its place, else last */
	char **computed;
	int n_computed;
} unpack_plan_t;

typedef struct unpack_state {
	bson_t out;                  /* unused (AGG_DEFINE_OPEN_WITH_OUT) */
	/* the current bucket's measurements, back to back in one buffer (no
	 * allocation per measurement): n of them, the i-th at off[i] */
	uint8_t *buf;
	size_t used, size;
	size_t *off;
	int n, cap, pos;
	bson_t view;                 /* the one returned (valid until the next call) */
	bool lastpoint;
	const match_t *event;        /* the plan's event filter (NULL: none) */
	int64_t best;                /* lastpoint: the greatest time kept so far in this bucket */
	bson_t scratch;
	bool whole;                  /* the current bucket matched the wholeBucketFilter */
	/* the column path (agg_unpack_next_block): the bucket's v1 form when it
	 * was compressed, and the decoded columns */
	bson_t v1;
	int64_t *times;
	bson_value_t *vals;          /* nfields rows of cap values */
	int bcap, bfields;
	/* column iterators (tm_alloc0: bson_iter_t's alignment): each field's
	 * column document, the general walk's positions, one for col_elem */
	bson_iter_t *bcols, *bwalk, *bscratch;
	bson_value_t meta;
	/* computedMetaProjFields (the plan's) and the bucket being unpacked */
	char *const *computed;
	int n_computed;
	const bson_t *bucket;
	bson_t withc;                /* a measurement with the computed fields */
} unpack_state_t;

static void
unpack_free_plan(void *plan)
{
	unpack_plan_t *up = plan;

	bson_free(up->time_field);
	bson_free(up->meta_field);
	for (int i = 0; i < up->n_include; i++)
		bson_free(up->include[i]);
	bson_free(up->include);
	for (int i = 0; i < up->n_computed; i++)
		bson_free(up->computed[i]);
	bson_free(up->computed);
	match_free(up->event);
	match_free(up->whole);
	bson_free(up);
}

/* The event filter as an interval of times: {t: <date or comparisons with
 * dates>} or an $and of such.  False when it is anything else. */
static bool
event_interval(const char *time_field, const bson_t *f, int64_t *lo, int64_t *hi, int depth)
{
	bson_iter_t it;

	if (depth > 4 || !bson_iter_init(&it, f))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_iter_t a;
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a)) {
				bson_t sub;
				if (!BSON_ITER_HOLDS_DOCUMENT(&a) || !agg_value_doc(bson_iter_value(&a), &sub) ||
				    !event_interval(time_field, &sub, lo, hi, depth + 1))
					return false;
			}
			continue;
		}
		if (strcmp(k, time_field) != 0)
			return false;
		if (BSON_ITER_HOLDS_DATE_TIME(&it)) {
			int64_t d = bson_iter_date_time(&it);
			*lo = d > *lo ? d : *lo;
			*hi = d < *hi ? d : *hi;
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return false;
		{
			bson_iter_t ops;
			bool any = false;
			bson_iter_recurse(&it, &ops);
			while (bson_iter_next(&ops)) {
				const char *op = bson_iter_key(&ops);
				int64_t d;
				if (!BSON_ITER_HOLDS_DATE_TIME(&ops))
					return false;
				d = bson_iter_date_time(&ops);
				if (strcmp(op, "$eq") == 0) {
					*lo = d > *lo ? d : *lo;
					*hi = d < *hi ? d : *hi;
				} else if (strcmp(op, "$gte") == 0)
					*lo = d > *lo ? d : *lo;
				else if (strcmp(op, "$gt") == 0) {
					if (d == INT64_MAX)
						*lo = INT64_MAX, *hi = INT64_MIN;
					else
						*lo = d + 1 > *lo ? d + 1 : *lo;
				} else if (strcmp(op, "$lte") == 0)
					*hi = d < *hi ? d : *hi;
				else if (strcmp(op, "$lt") == 0) {
					if (d == INT64_MIN)
						*lo = INT64_MAX, *hi = INT64_MIN;
					else
						*hi = d - 1 < *hi ? d - 1 : *hi;
				} else
					return false;
				any = true;
			}
			if (!any)
				return false;
		}
	}
	return true;
}

static int
unpack_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	unpack_plan_t *up;
	bson_t d, *ex, inner;
	bson_iter_t it;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 5346500, "$_internalUnpackBucket specification must be an object, got: %s",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	up = bson_malloc0(sizeof(*up));
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "timeField") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			up->time_field = bson_strdup(bson_iter_utf8(&it, NULL));
		else if (strcmp(k, "metaField") == 0 && BSON_ITER_HOLDS_UTF8(&it))
			up->meta_field = bson_strdup(bson_iter_utf8(&it, NULL));
		else if (strcmp(k, "bucketMaxSpanSeconds") == 0 && BSON_ITER_HOLDS_NUMBER(&it))
			up->o.max_span = bson_iter_as_int64(&it);
		else if (strcmp(k, "assumeNoMixedSchemaData") == 0)
			up->o.mixed_schema = !bson_iter_as_bool(&it);
		else if (strcmp(k, "$_tamgaLastpoint") == 0)
			up->lastpoint = bson_iter_as_bool(&it);
		else if (strcmp(k, "$_tamgaBlockGroup") == 0 && BSON_ITER_HOLDS_INT64(&it)) {
			up->block = true;
			up->block_bin = bson_iter_int64(&it);
		} else if ((strcmp(k, "eventFilter") == 0 || strcmp(k, "wholeBucketFilter") == 0) &&
		           (up->event == NULL || k[0] != 'e') && (up->whole == NULL || k[0] != 'w')) {
			match_options_t mo = {0};
			bson_t f;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				unpack_free_plan(up);
				return terr_set(err, k[0] == 'e' ? 7026902 : 7026903, "%s field must be an object, got: %s", k,
				    bv_type_name(bson_iter_type(&it)));
			}
			agg_value_doc(bson_iter_value(&it), &f);
			mo.let = pc->let_doc;
			mo.coll = agg_host_collation(pc->host);
			mo.disallow = MATCH_DISALLOW_GEO_NEAR | MATCH_DISALLOW_WHERE;
			if (match_compile(&f, &mo, k[0] == 'e' ? &up->event : &up->whole, err) != 0) {
				unpack_free_plan(up);
				return -1;
			}
			if (k[0] == 'e' && up->time_field != NULL) {
				up->ev_lo = INT64_MIN;
				up->ev_hi = INT64_MAX;
				up->ev_interval = event_interval(up->time_field, &f, &up->ev_lo, &up->ev_hi, 0);
			}
		}
		else if (strcmp(k, "computedMetaProjFields") == 0) {
			/* mongod's checks and codes */
			bson_iter_t a;
			int n = 0;
			if (!BSON_ITER_HOLDS_ARRAY(&it)) {
				unpack_free_plan(up);
				return terr_set(err, 5509900, "computedMetaProjFields field must be an array, got: %s",
				    bv_type_name(bson_iter_type(&it)));
			}
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a)) {
				if (!BSON_ITER_HOLDS_UTF8(&a)) {
					unpack_free_plan(up);
					return terr_set(err, 5509901, "computedMetaProjFields field element must be a string, got: %s",
					    bv_type_name(bson_iter_type(&a)));
				}
				if (strchr(bson_iter_utf8(&a, NULL), '.') != NULL) {
					unpack_free_plan(up);
					return terr_set(err, 5509902,
					    "computedMetaProjFields field element must be a single-element field path");
				}
				n++;
			}
			for (int i = 0; i < up->n_computed; i++)
				bson_free(up->computed[i]);
			bson_free(up->computed);
			up->computed = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
			up->n_computed = 0;
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a))
				up->computed[up->n_computed++] = bson_strdup(bson_iter_utf8(&a, NULL));
		} else if (strcmp(k, "include") == 0 && BSON_ITER_HOLDS_ARRAY(&it) && up->include == NULL) {
			bson_iter_t a;
			int n = 0;
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a))
				n++;
			up->include = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
			bson_iter_recurse(&it, &a);
			while (bson_iter_next(&a))
				if (BSON_ITER_HOLDS_UTF8(&a))
					up->include[up->n_include++] = bson_strdup(bson_iter_utf8(&a, NULL));
		}
	}
	if (up->time_field == NULL) {
		unpack_free_plan(up);
		return terr_set(err, 5346504, "The $_internalUnpackBucket stage requires a timeField parameter");
	}
	up->o.time_field = up->time_field;
	up->o.meta_field = up->meta_field;
	if (up->event != NULL && !up->ev_interval) {
		/* eventFilter came before timeField in the spec: read it again */
		bson_iter_t e;
		bson_t f;
		if (bson_iter_init_find(&e, &d, "eventFilter") && agg_value_doc(bson_iter_value(&e), &f)) {
			up->ev_lo = INT64_MIN;
			up->ev_hi = INT64_MAX;
			up->ev_interval = event_interval(up->time_field, &f, &up->ev_lo, &up->ev_hi, 0);
		}
	}
	up->o.only_latest = up->lastpoint;
	if (up->include != NULL) {
		/* the lastpoint reduction reads the time: it stays */
		if (up->lastpoint && !ts_unpack_wants(&(ts_options_t){.include = (const char *const *)up->include,
		                                                           .n_include = up->n_include},
		                                      up->time_field))
			up->include[up->n_include++] = bson_strdup(up->time_field);
		up->o.include = (const char *const *)up->include;
		up->o.n_include = up->n_include;
	}
	ex = bson_new();
	bson_append_document_begin(ex, "$_internalUnpackBucket", -1, &inner);
	ts_unpack_spec(&up->o, &inner);
	BSON_APPEND_BOOL(&inner, "assumeNoMixedSchemaData", !up->o.mixed_schema);
	if (up->n_computed > 0) {
		bson_t a;
		char key[16];
		bson_append_array_begin(&inner, "computedMetaProjFields", -1, &a);
		for (int i = 0; i < up->n_computed; i++) {
			bson_snprintf(key, sizeof(key), "%d", i);
			BSON_APPEND_UTF8(&a, key, up->computed[i]);
		}
		bson_append_array_end(&inner, &a);
	}
	/* mongod serializes both filters parsed and optimized */
	if (up->whole != NULL) {
		bson_t *w = match_to_bson(up->whole);
		BSON_APPEND_DOCUMENT(&inner, "wholeBucketFilter", w);
		bson_destroy(w);
	}
	if (up->event != NULL) {
		bson_t *e = match_to_bson(up->event);
		BSON_APPEND_DOCUMENT(&inner, "eventFilter", e);
		bson_destroy(e);
	}
	bson_append_document_end(ex, &inner);
	agg_pctx_add(pc, &agg_stages_unpack[0], up, ex);
	return 0;
}

static int
unpack_open(agg_rt_t *rt, terr_t *err)
{
	unpack_state_t *us = tm_alloc0(sizeof(*us));

	bson_init(&us->out);
	bson_init(&us->scratch);
	bson_init(&us->v1);
	us->lastpoint = ((const unpack_plan_t *)rt->st->plan)->lastpoint;
	us->event = ((const unpack_plan_t *)rt->st->plan)->event;
	us->computed = ((const unpack_plan_t *)rt->st->plan)->computed;
	us->n_computed = ((const unpack_plan_t *)rt->st->plan)->n_computed;
	bson_init(&us->withc);
	rt->state = us;
	return 0;
}

/* m with the bucket's computed fields (us->computed) set, into us->withc:
 * a field of m of the same name replaced in place, the others appended in
 * the list's order (a field the bucket lacks is left as m has it). */
static const bson_t *
with_computed(unpack_state_t *us, const bson_t *m)
{
	bson_iter_t it, b;
	bool *done = NULL, stack[16];

	bson_reinit(&us->withc);
	done = us->n_computed <= 16 ? stack : bson_malloc0(sizeof(bool) * (size_t)us->n_computed);
	memset(done, 0, sizeof(bool) * (size_t)us->n_computed);
	bson_iter_init(&it, m);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int i;
		for (i = 0; i < us->n_computed; i++)
			if (strcmp(k, us->computed[i]) == 0)
				break;
		if (i < us->n_computed && bson_iter_init_find(&b, us->bucket, k)) {
			bson_append_iter(&us->withc, k, -1, &b);
			done[i] = true;
		} else
			bson_append_iter(&us->withc, k, -1, &it);
	}
	for (int i = 0; i < us->n_computed; i++)
		if (!done[i] && bson_iter_init_find(&b, us->bucket, us->computed[i]))
			bson_append_iter(&us->withc, us->computed[i], -1, &b);
	if (done != stack)
		bson_free(done);
	return &us->withc;
}

static int
collect(void *ctx, const bson_t *m, terr_t *err)
{
	unpack_state_t *us = ctx;

	if (us->n_computed > 0 && us->bucket != NULL)
		m = with_computed(us, m);

	if (us->event != NULL && !us->whole) {
		int rc = match_exec(us->event, m, NULL, err);
		if (rc < 0)
			return -1;
		if (rc == 0)
			return 0;
	}

	if (us->lastpoint) {
		/* the time is the measurement's first field (ts_bucket_unpack) */
		bson_iter_t ti;
		int64_t tm;
		if (!bson_iter_init(&ti, m) || !bson_iter_next(&ti) || !BSON_ITER_HOLDS_DATE_TIME(&ti))
			return 0;
		tm = bson_iter_date_time(&ti);
		if (us->n > 0 && tm < us->best)
			return 0;
		if (us->n > 0 && tm > us->best)
			us->n = 0, us->used = 0;
		us->best = tm;
	}
	if (us->n == us->cap) {
		int ncap = us->cap ? us->cap * 2 : 256;
		us->off = bson_realloc(us->off, sizeof(*us->off) * (size_t)ncap);
		us->cap = ncap;
	}
	if (us->used + m->len > us->size) {
		size_t nsize = us->size ? us->size : 65536;
		while (nsize < us->used + m->len)
			nsize *= 2;
		us->buf = bson_realloc(us->buf, nsize);
		us->size = nsize;
	}
	memcpy(us->buf + us->used, bson_get_data(m), m->len);
	us->off[us->n++] = us->used;
	us->used += m->len;
	return 0;
}

static void
drop_bucket(unpack_state_t *us)
{
	us->n = us->pos = 0;
	us->used = 0;
}

static int
unpack_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const unpack_plan_t *up = rt->st->plan;
	unpack_state_t *us = rt->state;
	const bson_t *bucket;
	int rc;

	while (us->pos >= us->n) {
		drop_bucket(us);
		if ((rc = agg_rt_pull(rt, &bucket, err)) <= 0)
			return rc;
		if (up->event != NULL) {
			if (up->whole == NULL)
				us->whole = false;
			else if ((rc = match_exec(up->whole, bucket, NULL, err)) < 0)
				return -1;
			else
				us->whole = rc == 1;
		}
		us->bucket = bucket;
		rc = ts_bucket_unpack(&up->o, bucket, &us->scratch, collect, us, err);
		us->bucket = NULL;
		if (rc != 0)
			return -1;
	}
	{
		size_t at = us->off[us->pos++];
		uint32_t len;
		memcpy(&len, us->buf + at, 4);
		len = BSON_UINT32_FROM_LE(len);
		if (!bson_init_static(&us->view, us->buf + at, len))
			return terr_set(err, 2, "$_internalUnpackBucket: a malformed measurement");
	}
	*out = &us->view;
	return 1;
}

static void
unpack_close(agg_rt_t *rt)
{
	unpack_state_t *us = rt->state;

	if (us == NULL)
		return;
	drop_bucket(us);
	bson_free(us->buf);
	bson_free(us->off);
	bson_destroy(&us->scratch);
	bson_destroy(&us->withc);
	bson_destroy(&us->v1);
	bson_free(us->times);
	bson_free(us->vals);
	bson_free(us->bcols);
	bson_free(us->bwalk);
	bson_free(us->bscratch);
	bson_destroy(&us->out);
	bson_free(us);
	rt->state = NULL;
}

/* ---- the column path of a $group right after this stage ------------------------ */

bool
agg_unpack_block_ok(const agg_rt_t *rt, int64_t *bin, const char **time_field, const char **meta_field)
{
	const unpack_plan_t *up;

	if (rt == NULL || rt->st->def != &agg_stages_unpack[0])
		return false;
	up = rt->st->plan;
	if (!up->block || up->lastpoint || up->n_computed > 0 || (up->event != NULL && !up->ev_interval))
		return false;
	*bin = up->block_bin;
	*time_field = up->time_field;
	*meta_field = up->meta_field;
	return true;
}

static bool
block_keep_column(const void *ctx, const char *name)
{
	const char *const *fields = ctx;

	for (int i = 0; fields[i] != NULL; i++)
		if (strcmp(fields[i], name) == 0)
			return true;
	return false;
}

/*
 * One element of a v1 column (a document whose keys are measurement
 * indexes) at *off of data[0..len): its index (-1 when the key is not a
 * plain decimal number) and value, *off moved past it.  Fixed-size scalars
 * are read in place (no bson_iter per element: the column path's hot
 * loop); other types through a bson_iter at the element (sc).  False at a
 * malformed element.
 */
static bool
col_elem(const uint8_t *data, uint32_t len, uint32_t *off, int64_t *idx, bson_value_t *v, bson_iter_t *sc)
{
	uint32_t at = *off, klen = 0, room;
	const uint8_t *key;
	uint8_t type;
	int64_t k = 0;
	bool digits = true;

	if (at + 2 > len)
		return false;
	type = data[at];
	key = data + at + 1;
	room = len - at - 1;
	/* the key: its digits read while its end is found (keys are short) */
	while (klen < room && key[klen] != 0) {
		uint8_t c = key[klen];
		if (c >= '0' && c <= '9' && klen < 9)
			k = k * 10 + (c - '0');
		else
			digits = false;
		klen++;
	}
	if (klen == room)
		return false;
	if (!digits || klen == 0 || (klen > 1 && key[0] == '0'))
		k = -1;
	*idx = k;
	at += 2 + klen;   /* the value */
	switch (type) {
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DATE_TIME:
	case BSON_TYPE_INT64: {
		uint64_t u;
		if (at + 8 > len)
			return false;
		memcpy(&u, data + at, 8);
		u = BSON_UINT64_FROM_LE(u);
		v->value_type = (bson_type_t)type;
		if (type == BSON_TYPE_DOUBLE)
			memcpy(&v->value.v_double, &u, 8);
		else if (type == BSON_TYPE_DATE_TIME)
			v->value.v_datetime = (int64_t)u;
		else
			v->value.v_int64 = (int64_t)u;
		*off = at + 8;
		return true;
	}
	case BSON_TYPE_INT32: {
		uint32_t u;
		if (at + 4 > len)
			return false;
		memcpy(&u, data + at, 4);
		v->value_type = BSON_TYPE_INT32;
		v->value.v_int32 = (int32_t)BSON_UINT32_FROM_LE(u);
		*off = at + 4;
		return true;
	}
	case BSON_TYPE_NULL:
		v->value_type = BSON_TYPE_NULL;
		*off = at;
		return true;
	default:
		if (!bson_iter_init_from_data_at_offset(sc, data, len, *off, klen))
			return false;
		*v = *bson_iter_value(sc);
		*off = bson_iter_next(sc) ? sc->off : len - 1;
		return true;
	}
}

/*
 * The column path's decoding of a v1 bucket whose time column holds dates
 * under keys 0, 1, ... (as buckets are written): times into us->times and
 * field f's values into row f of us->vals (EOD where missing).  Returns the
 * count, or -1 when the bucket is not of that form (the caller walks it
 * the general way).
 */
static int
block_decode_fast(unpack_state_t *us, const bson_iter_t *tcol_doc, const bson_iter_t *cols_doc, int nfields)
{
	const uint8_t *td;
	uint32_t tl, off = 4;
	int n = 0;
	bson_value_t v;
	int64_t idx;

	if (us->bscratch == NULL)
		us->bscratch = tm_alloc0(sizeof(bson_iter_t));
	bson_iter_document(tcol_doc, &tl, &td);
	while (off < tl && td[off] != 0) {
		if (!col_elem(td, tl, &off, &idx, &v, us->bscratch) || idx != n || v.value_type != BSON_TYPE_DATE_TIME)
			return -1;
		if (n == us->bcap) {
			us->bcap = us->bcap ? us->bcap * 2 : 1024;
			us->times = bson_realloc(us->times, sizeof(int64_t) * (size_t)us->bcap);
			us->bfields = 0;   /* vals sized again below */
		}
		us->times[n++] = v.value.v_datetime;
	}
	if (nfields > us->bfields) {
		us->vals = bson_realloc(us->vals, sizeof(bson_value_t) * (size_t)us->bcap * (size_t)nfields);
		us->bfields = nfields;
	}
	for (int f = 0; f < nfields; f++) {
		bson_value_t *row = &us->vals[(size_t)f * (size_t)us->bcap];
		int64_t last = -1;
		for (int i = 0; i < n; i++)
			row[i].value_type = BSON_TYPE_EOD;
		if (cols_doc[f].raw == NULL)
			continue;   /* no such column */
		bson_iter_document(&cols_doc[f], &tl, &td);
		off = 4;
		while (off < tl && td[off] != 0) {
			if (!col_elem(td, tl, &off, &idx, &v, us->bscratch) || idx <= last || idx >= n)
				return -1;
			row[idx] = v;
			last = idx;
		}
	}
	return n;
}

int
agg_unpack_next_block(agg_rt_t *rt, const char *const *fields, int nfields, agg_ts_block_t *b, terr_t *err)
{
	const unpack_plan_t *up = rt->st->plan;
	unpack_state_t *us = rt->state;
	const bson_t *bucket;
	bson_iter_t it, data, tcol, col;
	int rc, n = 0;
	bool whole = true;

	if ((rc = agg_rt_pull(rt, &bucket, err)) <= 0)
		return rc;
	if (up->event != NULL) {
		if (up->whole == NULL)
			whole = false;
		else if ((rc = match_exec(up->whole, bucket, NULL, err)) < 0)
			return -1;
		else
			whole = rc == 1;
	}
	memset(b, 0, sizeof(*b));
	b->meta = NULL;
	if (up->meta_field != NULL && bson_iter_init_find(&it, bucket, "meta")) {
		us->meta = *bson_iter_value(&it);
		b->meta = &us->meta;
	}
	if (ts_bucket_is_compressed(bucket)) {
		/* only the time column and the fields read are decoded */
		const char *keep[TS_BLOCK_MAX_FIELDS + 2];
		int k = 0;
		keep[k++] = up->time_field;
		for (int f = 0; f < nfields && f < TS_BLOCK_MAX_FIELDS; f++)
			keep[k++] = fields[f];
		keep[k] = NULL;
		bson_reinit(&us->v1);
		if (ts_bucket_decompress_some(bucket, &us->v1, block_keep_column, keep, err) != 0)
			return -1;
		bucket = &us->v1;
	}
	b->bucket = bucket;
	if (!bson_iter_init_find(&it, bucket, "data") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &data) ||
	    !bson_iter_find(&data, up->time_field) || !BSON_ITER_HOLDS_DOCUMENT(&data) || !bson_iter_recurse(&data, &tcol))
		return 1;   /* not a bucket: no measurements (as ts_bucket_unpack) */
	{
		/* the fast decode of a bucket as written, else the general walk */
		bson_iter_t *cd;
		int fast;
		if (us->bcols == NULL)
			us->bcols = tm_alloc0(sizeof(bson_iter_t) * (TS_BLOCK_MAX_FIELDS + 1));
		cd = us->bcols;
		for (int f = 0; f < nfields; f++) {
			cd[f].raw = NULL;
			if (!(bson_iter_init_find(&it, bucket, "data") && bson_iter_recurse(&it, &col) &&
			      bson_iter_find(&col, fields[f]) && BSON_ITER_HOLDS_DOCUMENT(&col)))
				continue;
			cd[f] = col;
		}
		bson_iter_init_find(&it, bucket, "data");
		bson_iter_recurse(&it, &data);
		bson_iter_find(&data, up->time_field);
		fast = block_decode_fast(us, &data, cd, nfields);
		if (fast >= 0) {
			/* the event filter's interval: kept measurements moved down */
			for (int i = 0; i < fast; i++) {
				int64_t t = us->times[i];
				if (!(whole || up->event == NULL || (t >= up->ev_lo && t <= up->ev_hi)))
					continue;
				if (n != i) {
					us->times[n] = t;
					for (int f = 0; f < nfields; f++)
						us->vals[(size_t)f * (size_t)us->bcap + (size_t)n] =
						    us->vals[(size_t)f * (size_t)us->bcap + (size_t)i];
				}
				n++;
			}
		} else {
			/* the general walk: columns side by side with the time column,
			 * matched by key */
			bson_iter_t c = tcol, *cols;
			bool live[TS_BLOCK_MAX_FIELDS];
			int total = 0;
			while (bson_iter_next(&c))
				total++;
			if (total > us->bcap || nfields > us->bfields) {
				int cap = total > us->bcap ? total : us->bcap;
				us->times = bson_realloc(us->times, sizeof(int64_t) * (size_t)(cap + 1));
				us->vals = bson_realloc(us->vals, sizeof(bson_value_t) * (size_t)(cap + 1) * (size_t)(nfields + 1));
				us->bcap = cap;
				us->bfields = nfields;
			}
			if (us->bwalk == NULL)
				us->bwalk = tm_alloc0(sizeof(bson_iter_t) * TS_BLOCK_MAX_FIELDS);
			cols = us->bwalk;
			for (int f = 0; f < nfields; f++) {
				live[f] = false;
				if (cd[f].raw != NULL && bson_iter_recurse(&cd[f], &cols[f]))
					live[f] = bson_iter_next(&cols[f]);
			}
			while (bson_iter_next(&tcol)) {
				const char *idx = bson_iter_key(&tcol);
				int64_t t;
				bool keep;
				if (!BSON_ITER_HOLDS_DATE_TIME(&tcol))
					return terr_set(err, 2,
					    "$_internalUnpackBucket: a bucket's %s column holds a value that is not a date",
					    up->time_field);
				t = bson_iter_date_time(&tcol);
				keep = whole || up->event == NULL || (t >= up->ev_lo && t <= up->ev_hi);
				for (int f = 0; f < nfields; f++) {
					bson_value_t *v = &us->vals[(size_t)f * (size_t)us->bcap + (size_t)n];
					if (live[f] && strcmp(bson_iter_key(&cols[f]), idx) == 0) {
						if (keep)
							*v = *bson_iter_value(&cols[f]);
						live[f] = bson_iter_next(&cols[f]);
					} else if (keep)
						v->value_type = BSON_TYPE_EOD;
				}
				if (keep)
					us->times[n++] = t;
			}
		}
	}
	rt->nreturned += n;         /* the measurements it would have returned, as explain counts them */
	b->n = n;
	b->times = us->times;
	b->vals = us->vals;
	b->stride = us->bcap;
	b->whole = whole;
	return 1;
}

const agg_stage_def_t agg_stages_unpack[] = {
	{"$_internalUnpackBucket", unpack_parse, unpack_open, unpack_next, unpack_close, unpack_free_plan, 0},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0},
};
