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
	ts_options_t o;              /* borrows the two strings above */
} unpack_plan_t;

typedef struct unpack_state {
	bson_t out;                  /* unused (AGG_DEFINE_OPEN_WITH_OUT) */
	bson_t *ms;                  /* the current bucket's measurements (tm_bson_array_new) */
	int n, cap, pos;
	bson_t scratch;
} unpack_state_t;

static void
unpack_free_plan(void *plan)
{
	unpack_plan_t *up = plan;

	bson_free(up->time_field);
	bson_free(up->meta_field);
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
	}
	if (up->time_field == NULL) {
		unpack_free_plan(up);
		return terr_set(err, 5346504, "The $_internalUnpackBucket stage requires a timeField parameter");
	}
	up->o.time_field = up->time_field;
	up->o.meta_field = up->meta_field;
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
	rt->state = us;
	return 0;
}

static int
collect(void *ctx, const bson_t *m, terr_t *err)
{
	unpack_state_t *us = ctx;

	if (us->n == us->cap) {
		int ncap = us->cap ? us->cap * 2 : 64;
		bson_t *grown = tm_bson_array_new((size_t)ncap);
		for (int i = 0; i < us->n; i++) {
			bson_copy_to(&us->ms[i], &grown[i]);
			bson_destroy(&us->ms[i]);
		}
		bson_free(us->ms);
		us->ms = grown;
		us->cap = ncap;
	}
	bson_copy_to(m, &us->ms[us->n++]);
	return 0;
}

static void
drop_bucket(unpack_state_t *us)
{
	for (int i = 0; i < us->n; i++)
		bson_destroy(&us->ms[i]);
	us->n = us->pos = 0;
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
	*out = &us->ms[us->pos++];
	return 1;
}

static void
unpack_close(agg_rt_t *rt)
{
	unpack_state_t *us = rt->state;

	if (us == NULL)
		return;
	drop_bucket(us);
	bson_free(us->ms);
	bson_destroy(&us->scratch);
	bson_destroy(&us->out);
	bson_free(us);
	rt->state = NULL;
}

const agg_stage_def_t agg_stages_unpack[] = {
	{"$_internalUnpackBucket", unpack_parse, unpack_open, unpack_next, unpack_close, unpack_free_plan, 0},
	{NULL, NULL, NULL, NULL, NULL, NULL, 0},
};
