/*
 * stage_changestream.c -- $changeStream and $changeStreamSplitLargeEvent.
 *
 * agg/ cannot read the oplog (repl/ sits above it), so $changeStream is a
 * shell around the callbacks of agg_change_stream_ops_t (pipeline.h) that
 * the aggregate command hands in through agg_host_t: parse keeps the
 * callee's plan, the run pulls events from the callee's reader.  Without
 * callbacks (a standalone) it answers mongod's 40573.  What may follow it
 * (mongod's allowlist) and the $match handed to the reader are checked
 * here, once the whole pipeline is parsed (agg_change_stream_check).
 */
#include "agg/agg_private.h"

#include <string.h>

#include "common/mem.h"

typedef struct cs_plan {
	const agg_change_stream_ops_t *ops;
	void *ctx;
	void *plan;
} cs_plan_t;

static int
cs_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	cs_plan_t *cp;
	void *plan = NULL;

	if (pc->in_lookup)
		return terr_set(err, 51047, "%s is not allowed to be used within a $lookup stage", pc->name);
	if (pc->host == NULL || pc->host->change_stream == NULL)
		return terr_set(err, 40573, "The $changeStream stage is only supported on replica sets");
	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 50808, "$changeStream stage expects a document as argument");
	RET(pc->host->change_stream->parse(pc->host->change_stream_ctx, pc->host, spec, &plan, err));
	cp = bson_malloc0(sizeof(*cp));
	cp->ops = pc->host->change_stream;
	cp->ctx = pc->host->change_stream_ctx;
	cp->plan = plan;
	agg_pctx_add(pc, &agg_stages_changestream[0], cp, agg_explain_doc("$changeStream", spec));
	return 0;
}

static void
cs_free_plan(void *p)
{
	cs_plan_t *cp = p;

	if (cp == NULL)
		return;
	cp->ops->free_plan(cp->plan);
	bson_free(cp);
}

static int
cs_open(agg_rt_t *rt, terr_t *err)
{
	const cs_plan_t *cp = rt->st->plan;

	return cp->ops->open(cp->ctx, cp->plan, &rt->state, err);
}

static int
cs_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const cs_plan_t *cp = rt->st->plan;

	return cp->ops->next(rt->state, rt->x->s, out, err);
}

static void
cs_close(agg_rt_t *rt)
{
	const cs_plan_t *cp = rt->st->plan;

	if (rt->state != NULL)
		cp->ops->close(rt->state);
	rt->state = NULL;
}

static int
cs_save(agg_rt_t *rt, terr_t *err)
{
	const cs_plan_t *cp = rt->st->plan;

	return rt->state != NULL ? cp->ops->save(rt->state, err) : 0;
}

static int
cs_restore(agg_rt_t *rt, storage_session_t *s, terr_t *err)
{
	const cs_plan_t *cp = rt->st->plan;

	return rt->state != NULL ? cp->ops->restore(rt->state, s, err) : 0;
}

/* ---- $changeStreamSplitLargeEvent ------------------------------------------ */

static int
split_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT || !agg_value_doc(spec, &d) || !bson_empty(&d))
		return terr_set(err, 7182800, "$changeStreamSplitLargeEvent spec must be an empty document");
	agg_pctx_add(pc, &agg_stages_changestream[1], NULL, agg_explain_doc(pc->name, spec));
	return 0;
}

/* Events reach this stage whole; one past 16 MB would need fragments,
 * which this build does not cut (see README): it fails instead. */
static int
split_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	int r = agg_rt_pull(rt, out, err);

	if (r == 1 && (*out)->len > 16 * 1024 * 1024)
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "$changeStreamSplitLargeEvent: splitting an event of %u bytes into fragments is not supported",
		    (*out)->len);
	return r;
}

const agg_stage_def_t agg_stages_changestream[] = {
	{"$changeStream", cs_parse, cs_open, cs_next, cs_close, cs_free_plan,
	    AGG_F_FIRST | AGG_F_NOT_IN_FACET | AGG_F_NOT_IN_LOOKUP, cs_save, cs_restore},
	{"$changeStreamSplitLargeEvent", split_parse, NULL, split_next, NULL, NULL, AGG_F_LAST},
	{NULL},
};

/* mongod's stages allowed in a change stream (isAllowedInChangeStream). */
static const char *const allowed[] = {
	"$match", "$project", "$addFields", "$set", "$unset", "$replaceRoot", "$replaceWith", "$redact",
	"$changeStreamSplitLargeEvent", NULL,
};

int
agg_change_stream_check(agg_pipeline_t *p, terr_t *err)
{
	bool cs = p->nstages > 0 && p->stages[0].def == &agg_stages_changestream[0];

	for (int i = 0; i < p->nstages; i++) {
		const char *name = p->stages[i].def->name;
		bool ok = false;
		if (!cs) {
			if (p->stages[i].def == &agg_stages_changestream[1])
				return terr_set(err, TERR_ILLEGAL_OPERATION,
				    "$changeStreamSplitLargeEvent can only be used in a $changeStream pipeline.");
			continue;
		}
		if (i == 0)
			continue;
		for (int j = 0; allowed[j] != NULL && !ok; j++)
			ok = strcmp(allowed[j], name) == 0;
		if (!ok)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "%s is not permitted in a $changeStream pipeline",
			    name);
	}
	if (cs && p->nstages > 1 && strcmp(p->stages[1].def->name, "$match") == 0) {
		const cs_plan_t *cp = p->stages[0].plan;
		const bson_t *filter = *(bson_t *const *)p->stages[1].plan;
		if (cp->ops->push_match != NULL)
			cp->ops->push_match(cp->plan, filter);
	}
	return 0;
}

bool
agg_pipeline_change_stream(const agg_pipeline_t *p)
{
	return p->nstages > 0 && p->stages[0].def == &agg_stages_changestream[0];
}

static agg_rt_t *
cs_rt(agg_exec_t *x)
{
	if (x == NULL || x->nrts == 0 || x->rts[0].st->def != &agg_stages_changestream[0] || x->rts[0].state == NULL)
		return NULL;
	return &x->rts[0];
}

void
agg_exec_batch_end(agg_exec_t *x, const bson_value_t *last, bool ended, bson_t *cursor)
{
	agg_rt_t *rt = cs_rt(x);

	if (rt != NULL)
		((const cs_plan_t *)rt->st->plan)->ops->batch_end(rt->state, last, ended, cursor);
}

bool
agg_exec_finished(agg_exec_t *x)
{
	agg_rt_t *rt = cs_rt(x);

	return rt != NULL && ((const cs_plan_t *)rt->st->plan)->ops->finished(rt->state);
}
