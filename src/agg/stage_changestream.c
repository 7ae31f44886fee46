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

/* mongod's kBSONObjMaxChangeEventSize: BSONObjMaxInternalSize less 8 KB. */
#define SPLIT_MAX_EVENT (16 * 1024 * 1024 + 16 * 1024 - 8 * 1024)

typedef struct split_state {
	bson_t **q;               /* fragments still to hand on (bson_new'd) */
	int nq, iq;
	bson_t *cur;              /* the fragment handed on last */
} split_state_t;

static int
split_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT || !agg_value_doc(spec, &d) || !bson_empty(&d))
		return terr_set(err, 7182800, "$changeStreamSplitLargeEvent spec should be an empty object");
	agg_pctx_add(pc, &agg_stages_changestream[1], NULL, agg_explain_doc(pc->name, spec));
	return 0;
}

static agg_rt_t *cs_rt(agg_exec_t *x);

static int
split_open(agg_rt_t *rt, terr_t *err)
{
	(void)err;
	rt->state = tm_alloc0(sizeof(split_state_t));
	return 0;
}

static void
split_clear(split_state_t *st)
{
	for (int i = 0; i < st->nq; i++)
		if (st->q[i] != NULL)
			bson_destroy(st->q[i]);
	bson_free(st->q);
	st->q = NULL;
	st->nq = st->iq = 0;
	if (st->cur != NULL)
		bson_destroy(st->cur);
	st->cur = NULL;
}

static void
split_close(agg_rt_t *rt)
{
	if (rt->state != NULL) {
		split_clear(rt->state);
		bson_free(rt->state);
	}
	rt->state = NULL;
}

/* One field of the event: its element's bytes. */
typedef struct split_field {
	const char *key;
	bson_iter_t it;           /* standing on the field */
	size_t size;
} split_field_t;

static int
split_field_cmp(const void *a, const void *b)
{
	const split_field_t *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* {_id: {_data: hex[, _typeBits]}, splitEvent: {fragment, of}}; tb: the
 * event's _typeBits or NULL */
static bson_t *
split_head(const char *hex, const bson_iter_t *tb, int32_t fragment, int32_t of)
{
	bson_t *d = bson_new(), id, se;

	bson_append_document_begin(d, "_id", 3, &id);
	bson_append_utf8(&id, "_data", 5, hex, -1);
	if (tb != NULL)
		bson_append_iter(&id, "_typeBits", 9, tb);
	bson_append_document_end(d, &id);
	bson_append_document_begin(d, "splitEvent", 10, &se);
	bson_append_int32(&se, "fragment", 8, fragment);
	bson_append_int32(&se, "of", 2, of);
	bson_append_document_end(d, &se);
	return d;
}

/*
 * Cut ev into fragments as mongod's splitChangeEvent: every field but _id,
 * smallest first (by size, then name), as many to a fragment as fit under
 * the limit less the token's size, at least one; each fragment with its own
 * token (the event's with fragmentNum) and splitEvent {fragment, of}.  The
 * first skip fragments are not kept.
 */
static int
split_event(const agg_change_stream_ops_t *ops, const bson_t *ev, const char *hex, const bson_iter_t *tb,
            size_t token_size, int skip, split_state_t *st, terr_t *err)
{
	bson_iter_t it;
	split_field_t *f = NULL;
	size_t nf = 0, cap = 0, max = SPLIT_MAX_EVENT - token_size;
	size_t *starts = NULL;
	int nfrag = 0, ret = 0;

	if (!bson_iter_init(&it, ev))
		return terr_set(err, TERR_BAD_VALUE, "malformed change event");
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "_id") == 0)
			continue;
		if (nf == cap) {
			/* bson_iter_t wants 128-byte alignment: tm_alloc0, not realloc */
			split_field_t *g = tm_alloc0((cap ? cap * 2 : 16) * sizeof(*f));
			if (nf > 0)
				memcpy(g, f, nf * sizeof(*f));
			bson_free(f);
			f = g;
			cap = cap ? cap * 2 : 16;
		}
		f[nf].key = bson_iter_key(&it);
		f[nf].it = it;
		f[nf].size = it.next_off - it.off;
		nf++;
	}
	if (nf == 0) {
		ret = terr_set(err, 7182502, "Cannot split an empty event or an event containing solely '_id' field");
		goto done;
	}
	qsort(f, nf, sizeof(*f), split_field_cmp);
	starts = bson_malloc((nf + 1) * sizeof(*starts));
	/* the fragments' bounds: the header (its token, splitEvent and, as
	 * mongod counts its sort key, the token again) then the fields */
	for (size_t i = 0; i < nf;) {
		char *fh = ops->fragment_token(hex, nfrag);
		bson_t *h = split_head(fh != NULL ? fh : hex, tb, nfrag + 1, 0);
		size_t size = h->len + token_size;
		bson_destroy(h);
		bson_free(fh);
		starts[nfrag++] = i;
		do {
			size += f[i].size;
		} while (++i < nf && size + f[i].size <= max);
		if (size > max) {
			ret = terr_set(err, 7182500,
			    "Splitting change event failed: fragment size %zu is greater than maximum allowed fragment size %zu",
			    size, max);
			goto done;
		}
	}
	starts[nfrag] = nf;
	if (skip > 0 && skip >= nfrag) {
		ret = terr_set(err, 280,
		    "Attempted to resume from a split event, but the resumed stream produced a different split. "
		    "Ensure that the pipeline used to resume is the same as the original");
		goto done;
	}
	st->q = bson_malloc0((size_t)nfrag * sizeof(bson_t *));
	for (int k = skip; k < nfrag; k++) {
		char *fh = ops->fragment_token(hex, k);
		bson_t *d = split_head(fh != NULL ? fh : hex, tb, k + 1, nfrag);
		bson_free(fh);
		for (size_t i = starts[k]; i < starts[k + 1]; i++)
			bson_append_iter(d, f[i].key, -1, &f[i].it);
		st->q[st->nq++] = d;
	}
done:
	bson_free(starts);
	bson_free(f);
	return ret;
}

static int
split_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	split_state_t *st = rt->state;
	agg_rt_t *src = cs_rt(rt->x);
	const agg_change_stream_ops_t *ops = src != NULL ? ((const cs_plan_t *)src->st->plan)->ops : NULL;

	for (;;) {
		const bson_t *ev;
		bson_iter_t it, d;
		const char *hex = NULL;
		int32_t frag = -1;
		int r;

		if (st->iq < st->nq) {
			if (st->cur != NULL)
				bson_destroy(st->cur);
			st->cur = st->q[st->iq];
			st->q[st->iq++] = NULL;
			*out = st->cur;
			return 1;
		}
		split_clear(st);
		r = agg_rt_pull(rt, &ev, err);
		if (r != 1)
			return r;
		if (bson_iter_init_find(&it, ev, "_id") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &d) &&
		    bson_iter_find(&d, "_data") && BSON_ITER_HOLDS_UTF8(&d))
			hex = bson_iter_utf8(&d, NULL);
		if (ops != NULL && hex != NULL)
			frag = ops->resume_fragment(src->state, hex);
		if (frag >= 0 && ev->len <= SPLIT_MAX_EVENT)
			return terr_set(err, 280,
			    "Attempted to resume from a split event fragment, but the event in the resumed stream was not large enough to be split");
		if (ev->len <= SPLIT_MAX_EVENT) {
			*out = ev;
			return 1;
		}
		if (ops == NULL || hex == NULL)
			return terr_set(err, 280,
			    "Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. "
			    "Modifying the _id field of an event makes it impossible to resume the stream from that point. "
			    "Only transformations that retain the unmodified _id field are allowed.");
		{
			uint32_t idlen;
			const uint8_t *iddata;
			bson_iter_t tb;
			bool has_tb;
			bson_iter_document(&it, &idlen, &iddata);
			/* the fragments keep the event's _typeBits (the fragment number,
			 * an int, adds only zero bits) */
			has_tb = bson_iter_recurse(&it, &tb) && bson_iter_find(&tb, "_typeBits") && BSON_ITER_HOLDS_BINARY(&tb);
			RET(split_event(ops, ev, hex, has_tb ? &tb : NULL, idlen, frag >= 0 ? frag + 1 : 0, st, err));
		}
	}
}

const agg_stage_def_t agg_stages_changestream[] = {
	{"$changeStream", cs_parse, cs_open, cs_next, cs_close, cs_free_plan,
	    AGG_F_FIRST | AGG_F_NOT_IN_FACET | AGG_F_NOT_IN_LOOKUP, cs_save, cs_restore},
	{"$changeStreamSplitLargeEvent", split_parse, split_open, split_next, split_close, NULL, 0},
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
		if (p->stages[i].def == &agg_stages_changestream[1] && i != p->nstages - 1)
			return terr_set(err, 7182802, "$changeStreamSplitLargeEvent must be the last stage in the pipeline");
		for (int j = 0; allowed[j] != NULL && !ok; j++)
			ok = strcmp(allowed[j], name) == 0;
		if (!ok)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "%s is not permitted in a $changeStream pipeline",
			    name);
	}
	if (cs && ((const cs_plan_t *)p->stages[0].plan)->ops->resumes_split != NULL &&
	    ((const cs_plan_t *)p->stages[0].plan)->ops->resumes_split(((const cs_plan_t *)p->stages[0].plan)->plan) &&
	    p->stages[p->nstages - 1].def != &agg_stages_changestream[1])
		return terr_set(err, 280,
		    "To resume from a split event, the $changeStream pipeline must include a $changeStreamSplitLargeEvent stage");
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
