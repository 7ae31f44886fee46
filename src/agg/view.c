/*
 * view.c -- what reading a view means to a pipeline: follow its viewOn
 * chain (views of views) to the collection at the end and gather the
 * chain's pipelines, innermost first.  Used by the aggregate command (a
 * view as the aggregated namespace) and by $lookup / $unionWith (a view as
 * the foreign namespace); the definitions come from storage_view_get.
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
			    "View depth too deep or view cycle detected. Maximum depth is %d", AGG_VIEW_MAX_DEPTH);
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
