/*
 * view.c -- what reading a view means to a pipeline: follow its viewOn
 * chain (views of views) to the collection at the end and gather the
 * chain's pipelines, innermost first.  Used by the aggregate command (a
 * view as the aggregated namespace) and by $lookup / $graphLookup /
 * $unionWith (a view as the foreign namespace); the definitions come from
 * storage_view_get.  Also the namespaces a pipeline reads, found by walking
 * its BSON (mongod's involved namespaces), for the collation rules of
 * commands/view.c.
 */
#include "agg/agg_private.h"

#include <string.h>

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

int
agg_view_resolve(storage_t *st, const char *db, const char *name, char **base, bson_t *pipeline,
                 terr_t *err)
{
	bson_t defs[AGG_VIEW_MAX_DEPTH + 1];
	char *src = bson_strdup(name);
	int depth = 0, n = 0, ret = 0;

	*base = NULL;
	while (storage_view_get(st, db, src, &defs[depth]) == 0) {
		bson_iter_t it;
		if (++depth > AGG_VIEW_MAX_DEPTH) {
			ret = terr_set(err, TERR_VIEW_DEPTH_LIMIT_EXCEEDED,
			    "View depth too deep or view cycle detected; maximum depth is %d", AGG_VIEW_MAX_DEPTH);
			break;
		}
		bson_free(src);
		src = bson_iter_init_find(&it, &defs[depth - 1], "viewOn") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_strdup(bson_iter_utf8(&it, NULL)) : bson_strdup("");
	}
	if (ret == 0 && depth > 0) {
		bson_init(pipeline);
		for (int i = depth - 1; i >= 0; i--) {
			bson_t p;
			if (def_pipeline(&defs[i], &p))
				agg_view_append_stages(pipeline, &n, &p);
		}
		*base = src;
		src = NULL;
		ret = 1;
	}
	for (int i = 0; i < depth; i++)
		bson_destroy(&defs[i]);
	bson_free(src);
	return ret;
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
