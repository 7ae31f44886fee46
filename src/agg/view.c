/*
 * view.c -- what reading a view means to a pipeline: follow its viewOn
 * chain (views of views) to the collection at the end and gather the
 * chain's pipelines, innermost first.  Used by the aggregate command (a
 * view as the aggregated namespace) and by $lookup / $graphLookup /
 * $unionWith (a view as the foreign namespace); the definitions come from
 * storage_view_get, with mongod's limits on reading them (20 views on a
 * chain, 16 000 000 bytes of stages).  Also the namespaces a pipeline reads,
 * found by walking its BSON (mongod's involved namespaces): resolved before
 * a query is parsed, and for the collation rules of commands/view.c.  And
 * the root pipeline's table of the views its stages read, so that a query
 * resolves and parses each view once however many stages read it.
 */
#include "agg/agg_private.h"
#include "timeseries/timeseries.h"

#include <string.h>

#include "common/mem.h"

void
agg_view_append_stages(bson_t *out, int *n, const bson_t *pipeline)
{
	bson_iter_t it;
	char key[16];

	if (!bson_iter_init(&it, pipeline))
		return;
	while (bson_iter_next(&it)) {
		bson_snprintf(key, sizeof(key), "%d", (*n)++);
		bson_append_iter(out, key, -1, &it);
	}
}

/* The pipeline array of a definition (a view without one has []). */
static bool
def_pipeline(const bson_t *def, bson_t *out)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;

	if (!bson_iter_init_find(&it, def, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it))
		return false;
	bson_iter_array(&it, &l, &d);
	return bson_init_static(out, d, l);
}

/* The bytes of a pipeline's stages, as mongod counts a resolved view's
 * (the sum of each stage document's size). */
static int64_t
stages_size(const bson_t *pipeline)
{
	bson_iter_t it;
	int64_t n = 0;

	if (bson_iter_init(&it, pipeline))
		while (bson_iter_next(&it))
			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				n += bson_iter_value(&it)->value.v_doc.data_len;
	return n;
}

int
agg_view_resolve(storage_t *st, const char *db, const char *name, char **base, bson_t *pipeline,
                 terr_t *err)
{
	bson_t defs[AGG_VIEW_MAX_DEPTH];
	char *src = bson_strdup(name);
	int depth = 0, n = 0, ret = 0;

	*base = NULL;
	/* mongod's resolveView takes at most 20 steps down the chain, the
	 * last one included: a 20th view fails even when a collection follows */
	while (storage_view_get(st, db, src, &defs[depth]) == 0) {
		bson_iter_t it;
		bson_free(src);
		src = bson_iter_init_find(&it, &defs[depth], "viewOn") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_strdup(bson_iter_utf8(&it, NULL)) : bson_strdup("");
		if (++depth == AGG_VIEW_MAX_DEPTH) {
			ret = terr_set(err, TERR_VIEW_DEPTH_LIMIT_EXCEEDED,
			    "View depth too deep or view cycle detected; maximum depth is %d", AGG_VIEW_MAX_DEPTH);
			break;
		}
	}
	if (ret == 0 && depth > 0) {
		bson_init(pipeline);
		for (int i = depth - 1; i >= 0; i--) {
			bson_t p;
			if (def_pipeline(&defs[i], &p))
				agg_view_append_stages(pipeline, &n, &p);
		}
		if (stages_size(pipeline) > AGG_VIEW_MAX_PIPELINE_BYTES) {
			bson_destroy(pipeline);
			ret = terr_set(err, TERR_VIEW_PIPELINE_MAX_SIZE_EXCEEDED,
			    "View pipeline exceeds maximum size; maximum size is %d", AGG_VIEW_MAX_PIPELINE_BYTES);
		} else {
			*base = src;
			src = NULL;
			ret = 1;
		}
	}
	for (int i = 0; i < depth; i++)
		bson_destroy(&defs[i]);
	bson_free(src);
	return ret;
}

int64_t
agg_view_stages_size(const bson_t *pipeline)
{
	return stages_size(pipeline);
}

/* ---- the views a query reads ---------------------------------------------- */

int
agg_view_check_involved(storage_t *st, const char *db, const bson_t *stages, terr_t *err)
{
	bson_t queue = BSON_INITIALIZER;
	char **seen = NULL;
	int nq = 0, nseen = 0, ret = 0;
	bson_iter_t it;

	/* breadth first, each name once: the names the stages read, then
	 * those the resolved pipelines of the views among them read */
	agg_pipeline_involved(stages, &queue, &nq);
	for (int i = 0; ret == 0 && i < nq; i++) {
		char key[16], *base = NULL;
		const char *name;
		bson_t pipeline;
		bool dup = false;
		int rc;
		bson_snprintf(key, sizeof(key), "%d", i);
		if (!bson_iter_init_find(&it, &queue, key))
			break;
		name = bson_iter_utf8(&it, NULL);
		for (int j = 0; !dup && j < nseen; j++)
			dup = strcmp(seen[j], name) == 0;
		if (dup)
			continue;
		seen = bson_realloc(seen, sizeof(char *) * (size_t)(nseen + 1));
		seen[nseen++] = bson_strdup(name);
		rc = agg_view_resolve(st, db, name, &base, &pipeline, err);
		if (rc < 0) {
			char *why = bson_strdup(err->msg != NULL ? err->msg : "");
			terr_set(err, err->code, "Failed to resolve view '%s.%s :: caused by :: %s", db, name, why);
			bson_free(why);
			ret = -1;
		} else if (rc == 1) {
			/* appending to the queue may move its buffer: name is done with */
			agg_pipeline_involved(&pipeline, &queue, &nq);
			bson_destroy(&pipeline);
			bson_free(base);
		}
	}
	for (int j = 0; j < nseen; j++)
		bson_free(seen[j]);
	bson_free(seen);
	bson_destroy(&queue);
	return ret;
}

int
agg_view_ref(agg_pctx_t *pc, const char *db, const char *name, agg_view_ref_t **ref, terr_t *err)
{
	agg_pipeline_t *root = pc->root;
	agg_view_ref_t *r;
	int rc;

	for (int i = 0; i < root->nviews; i++) {
		r = root->views[i];
		if (strcmp(r->db, db) == 0 && strcmp(r->name, name) == 0) {
			*ref = r;
			return 0;
		}
	}
	r = tm_alloc0(sizeof(*r));   /* holds a bson_t: aligned */
	rc = agg_view_resolve(pc->host->st, db, name, &r->base, &r->stages, err);
	if (rc < 0) {
		bson_free(r);
		return -1;
	}
	if (rc == 0) {
		/* a time-series collection read by $lookup / $unionWith /
		 * $graphLookup: its measurements, like a view on its buckets */
		storage_coll_t *tc = NULL;
		ts_options_t o;
		if (storage_coll_get(pc->host->st, db, name, &tc, NULL) == 0 && ts_options_get(tc->options, &o)) {
			bson_t st, spec;
			bson_init(&r->stages);
			bson_append_document_begin(&r->stages, "0", 1, &st);
			bson_append_document_begin(&st, "$_internalUnpackBucket", -1, &spec);
			ts_unpack_spec(&o, &spec);
			bson_append_document_end(&st, &spec);
			bson_append_document_end(&r->stages, &st);
			r->base = bson_strdup(name);
			r->ts_options = bson_copy(tc->options);
		}
		storage_coll_release(tc);
	}
	r->db = bson_strdup(db);
	r->name = bson_strdup(name);
	root->views = bson_realloc(root->views, sizeof(*root->views) * (size_t)(root->nviews + 1));
	root->views[root->nviews++] = r;
	*ref = r;
	return 0;
}

int
agg_view_ref_pipe(agg_pctx_t *pc, agg_view_ref_t *ref, agg_pipeline_t **pipe, terr_t *err)
{
	int ret;

	*pipe = NULL;
	if (ref->pipe == NULL) {
		/* a view that reads itself through its joins (only a hand-written
		 * system.views can hold one) nests until mongod's limit stops it */
		if (ref->parsing)
			return agg_sub_depth_exceeded(err);
		ref->parsing = true;
		ret = agg_pipeline_parse_sub(pc, &ref->stages, false, true, &ref->pipe, err);
		ref->parsing = false;
		RET(ret);
	} else {
		/* the same stages read from here: as deep as parsing them here
		 * would have gone */
		if (pc->depth + 1 + ref->pipe->nest > AGG_MAX_SUB_DEPTH)
			return agg_sub_depth_exceeded(err);
		if (ref->pipe->nest + 1 > pc->p->nest)
			pc->p->nest = ref->pipe->nest + 1;
	}
	*pipe = ref->pipe;
	return 0;
}

void
agg_view_refs_free(agg_pipeline_t *p)
{
	for (int i = 0; i < p->nviews; i++) {
		agg_view_ref_t *r = p->views[i];
		agg_pipeline_free(r->pipe);
		if (r->base != NULL)
			bson_destroy(&r->stages);
		if (r->ts_options != NULL)
			bson_destroy(r->ts_options);
		bson_free(r->base);
		bson_free(r->db);
		bson_free(r->name);
		bson_free(r);
	}
	bson_free(p->views);
	p->views = NULL;
	p->nviews = 0;
}

/* The namespace a stage's from/coll names (a string), when it is one. */
static void
involved_name(const bson_value_t *v, bson_t *names, int *n)
{
	char key[16];

	if (v->value_type != BSON_TYPE_UTF8)
		return;
	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_utf8(names, key, -1, v->value.v_utf8.str, (int)v->value.v_utf8.len);
}

void
agg_pipeline_involved(const bson_t *stages, bson_t *names, int *n)
{
	bson_iter_t it, st, arg;

	if (!bson_iter_init(&it, stages))
		return;
	while (bson_iter_next(&it)) {
		const char *name;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) || !bson_iter_next(&st))
			continue;
		name = bson_iter_key(&st);
		if (strcmp(name, "$unionWith") == 0 && BSON_ITER_HOLDS_UTF8(&st)) {
			involved_name(bson_iter_value(&st), names, n);
			continue;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&st))
			continue;
		if (strcmp(name, "$lookup") == 0 || strcmp(name, "$graphLookup") == 0 ||
		    strcmp(name, "$unionWith") == 0) {
			const char *field = name[1] == 'u' ? "coll" : "from";
			bson_t sub;
			if (bson_iter_recurse(&st, &arg) && bson_iter_find(&arg, field))
				involved_name(bson_iter_value(&arg), names, n);
			if (name[1] != 'g' && bson_iter_recurse(&st, &arg) && bson_iter_find(&arg, "pipeline") &&
			    BSON_ITER_HOLDS_ARRAY(&arg) && agg_value_doc(bson_iter_value(&arg), &sub))
				agg_pipeline_involved(&sub, names, n);
		} else if (strcmp(name, "$facet") == 0 && bson_iter_recurse(&st, &arg)) {
			while (bson_iter_next(&arg)) {
				bson_t sub;
				if (BSON_ITER_HOLDS_ARRAY(&arg) && agg_value_doc(bson_iter_value(&arg), &sub))
					agg_pipeline_involved(&sub, names, n);
			}
		}
	}
}
