/*
 * stage_querystats.c -- $queryStats: the rows of the query stats store
 * (src/toolbelt/tb_qstats.c), which the command layer hands in through
 * agg_host_t.query_stats while the pipeline is parsed.  The stage itself
 * only checks where it runs (the admin database, {aggregate: 1}, first)
 * and iterates that array.
 */
#include "agg/agg_private.h"

#include <string.h>

#include "bson/value.h"
#include "common/mem.h"

typedef struct qs_state {
	bson_iter_t it;
	bson_t cur;
} qs_state_t;

static int
qstats_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, *docs;

	if (pc->host == NULL || pc->host->db == NULL || strcmp(pc->host->db, "admin") != 0 || pc->host->coll != NULL)
		return terr_set(err, TERR_INVALID_NAMESPACE,
		    "$queryStats must be run against the 'admin' database with {aggregate: 1}");
	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$queryStats' is the wrong type '%s', expected type 'object'",
		    bv_type_name(spec->value_type));
	if (pc->host->query_stats == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "The $queryStats stage is not supported here");
	agg_value_doc(spec, &d);
	docs = bson_new();
	if (pc->host->query_stats(pc->host->ctx, &d, docs, err) != 0) {
		bson_destroy(docs);
		return -1;
	}
	agg_pctx_add(pc, &agg_stages_qstats[0], docs, agg_explain_doc("$queryStats", spec));
	return 0;
}

static int
qstats_open(agg_rt_t *rt, terr_t *err)
{
	qs_state_t *qs = tm_alloc0(sizeof(*qs));

	(void)err;
	bson_iter_init(&qs->it, rt->st->plan);
	rt->state = qs;
	return 0;
}

static int
qstats_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	qs_state_t *qs = rt->state;
	const uint8_t *data;
	uint32_t len;

	(void)err;
	if (!bson_iter_next(&qs->it) || !BSON_ITER_HOLDS_DOCUMENT(&qs->it))
		return 0;
	bson_iter_document(&qs->it, &len, &data);
	bson_init_static(&qs->cur, data, len);
	*out = &qs->cur;
	return 1;
}

static void
qstats_close(agg_rt_t *rt)
{
	bson_free(rt->state);
	rt->state = NULL;
}

static void
qstats_free(void *plan)
{
	if (plan != NULL)
		bson_destroy(plan);
}

const agg_stage_def_t agg_stages_qstats[] = {
	{"$queryStats", qstats_parse, qstats_open, qstats_next, qstats_close, qstats_free,
	    AGG_F_FIRST | AGG_F_NO_COLL | AGG_F_NOT_IN_FACET | AGG_F_NOT_IN_LOOKUP},
	{NULL},
};
