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
#include "timeseries/timeseries.h"

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
	int64_t best;                /* lastpoint: the greatest time kept so far in this bucket */
	bson_t scratch;
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
	bson_free(up);
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
		else if (strcmp(k, "$_tamgaLastpoint") == 0)
			up->lastpoint = bson_iter_as_bool(&it);
		else if (strcmp(k, "include") == 0 && BSON_ITER_HOLDS_ARRAY(&it) && up->include == NULL) {
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
	BSON_APPEND_BOOL(&inner, "assumeNoMixedSchemaData", true);
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
	us->lastpoint = ((const unpack_plan_t *)rt->st->plan)->lastpoint;
	rt->state = us;
	return 0;
}

static int
collect(void *ctx, const bson_t *m, terr_t *err)
{
	unpack_state_t *us = ctx;

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
		if (ts_bucket_unpack(&up->o, bucket, &us->scratch, collect, us, err) != 0)
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
	bson_destroy(&us->out);
	bson_free(us);
	rt->state = NULL;
}

const agg_stage_def_t agg_stages_unpack[] = {
	{"$_internalUnpackBucket", unpack_parse, unpack_open, unpack_next, unpack_close, unpack_free_plan, 0},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0},
};
