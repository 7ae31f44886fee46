/*
 * stage_lookup.c -- the stages that run other pipelines: $lookup (a join,
 * by localField/foreignField, by let + pipeline, or both), $unionWith and
 * $facet.
 *
 * A sub-pipeline is parsed once with the outer scope (so $$vars resolve) and
 * run as a sub-exec: for $lookup once per input document, reading the
 * foreign collection through the find executor with the join condition
 * pushed down; for $facet once per branch over the buffered input.  A
 * foreign namespace that is a view reads through the view's stages, parsed
 * once per query and shared by every stage that reads the view (the join
 * then filters their output; see src/agg/README.md).
 */
#include "agg/agg_private.h"

#include <string.h>

#include "agg/agg_doc.h"
#include "bson/path.h"
#include "bson/value.h"
#include "common/mem.h"
#include "timeseries/timeseries.h"
#include "timeseries/ts_index.h"

/*
 * The user's stages of a $lookup or $unionWith from a view can run on the
 * view's output as a pipeline of their own (the view's stages parsed once,
 * shared by every reader): unless their first stage must stand first in a
 * pipeline, or the two together pass the stage limit; those are parsed
 * after the view's stages as one pipeline, for mongod's errors (40602,
 * 7749501).
 */
static bool
user_stages_stand_alone(const bson_t *view_stages, const bson_t *user)
{
	bson_iter_t it, st;
	const agg_stage_def_t *def;

	if (bson_count_keys(view_stages) + bson_count_keys(user) > AGG_MAX_STAGES)
		return false;
	if (!bson_iter_init(&it, user) || !bson_iter_next(&it))
		return true;
	if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &st) || !bson_iter_next(&st))
		return false;   /* the one-pipeline parse reports it */
	def = agg_stage_lookup(bson_iter_key(&st));
	return def != NULL && !(def->flags & AGG_F_FIRST);
}

/*
 * The user's stages (given) of a $lookup / $unionWith reading the
 * time-series collection ref, led by $geoNear: the same rewrite as the
 * aggregate command's on that collection (ts_geonear_rewrite), so the
 * sub-pipeline answers what the same stages answer at top level (mongod
 * resolves the time-series namespace and optimizes the sub-pipeline as a
 * top-level one).  1 with *combined (initialised; the caller destroys it)
 * the whole pipeline to parse on the buckets: the unpack and the rewritten
 * stages (a measurement key), or the rewrite as it is (a metaField key:
 * its $geoNear runs on the buckets before the unpack).  0 when not
 * rewritten (the caller goes on: a $geoNear after the unpack then answers
 * 40602, or its own parse's error); -1 with mongod's refusals.
 */
static int
ts_geonear_combined(const agg_view_ref_t *ref, const bson_t *given, bson_t *combined, terr_t *err)
{
	ts_options_t o;
	bson_t rw;
	int rc, n = 0;

	if (!ts_options_get(ref->ts_options, &o))
		return 0;
	rc = ts_geonear_rewrite(&o, given, &rw, err);
	if (rc > 0) {
		bson_init(combined);
		if (rc == 1) {
			/* the maxDistance bound ($geoWithin on the key, the rewrite's
			 * leading $match) also bounds the buckets, before the unpack,
			 * as the aggregate command's read pipeline does */
			bson_iter_t it, st;
			bson_t f, gf = BSON_INITIALIZER;
			if (bson_iter_init(&it, &rw) && bson_iter_next(&it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
			    bson_iter_recurse(&it, &st) && bson_iter_next(&st) && strcmp(bson_iter_key(&st), "$match") == 0 &&
			    BSON_ITER_HOLDS_DOCUMENT(&st)) {
				agg_value_doc(bson_iter_value(&st), &f);
				if (ts_bucket_geo_filter(&o, &f, &gf)) {
					bson_t stage;
					bson_append_document_begin(combined, "0", 1, &stage);
					BSON_APPEND_DOCUMENT(&stage, "$match", &gf);
					bson_append_document_end(combined, &stage);
					n = 1;
				}
			}
			bson_destroy(&gf);
			agg_view_append_stages(combined, &n, &ref->stages);
		}
		agg_view_append_stages(combined, &n, &rw);
	}
	bson_destroy(&rw);
	return rc > 0 ? 1 : rc;
}

/*
 * A foreign namespace *coll that is a view: *coll becomes the collection
 * under it, and what the stage reads goes through the view's stages:
 * *view_pipe (borrowed from the root pipeline, parsed once per query) with
 * the user's stages on its output, or, when given (the user's stages; NULL:
 * always apart) cannot stand alone, *combined (initialised, *has_combined
 * set; destroy it): the view's stages then given, to parse as one.  A view
 * without stages reads as its collection: neither is set.  0 (also when
 * *coll is no view), -1 with err.
 */
static int
foreign_view(agg_pctx_t *pc, const char *db, char **coll, const bson_t *given, agg_pipeline_t **view_pipe,
             bson_t *combined, bool *has_combined, terr_t *err)
{
	agg_view_ref_t *ref;
	int n = 0;

	*view_pipe = NULL;
	if (has_combined != NULL)
		*has_combined = false;
	if (pc->host == NULL || *coll == NULL || pc->host->views_unresolved)
		return 0;
	RET(agg_view_ref(pc, db, *coll, &ref, err));
	if (ref->base == NULL)
		return 0;
	bson_free(*coll);
	*coll = bson_strdup(ref->base);
	if (bson_empty(&ref->stages))
		return 0;
	if (given != NULL && ref->ts_options != NULL) {
		int rc = ts_geonear_combined(ref, given, combined, err);
		if (rc != 0) {
			*has_combined = rc > 0;
			return rc > 0 ? 0 : -1;
		}
	}
	if (given == NULL || user_stages_stand_alone(&ref->stages, given))
		return agg_view_ref_pipe(pc, ref, view_pipe, err);
	bson_init(combined);
	agg_view_append_stages(combined, &n, &ref->stages);
	agg_view_append_stages(combined, &n, given);
	*has_combined = true;
	return 0;
}

/* What the user's stages of a $lookup or $unionWith from a view read: the
 * view's output that passes the join, either the hash join's matches
 * (docs[ids]) or a run of the view's stages (src) filtered by the join (m;
 * NULL: everything passes). */
typedef struct join_feed {
	agg_exec_t *src;
	const match_t *m;
	bson_t *const *docs;
	const int64_t *ids;
	int64_t n, i;
} join_feed_t;

static int
join_feed_next(void *ctx, const bson_t **doc, terr_t *err)
{
	join_feed_t *f = ctx;
	int rc;

	if (f->src == NULL) {
		if (f->i >= f->n)
			return 0;
		*doc = f->docs[f->ids[f->i++]];
		return 1;
	}
	for (;;) {
		if ((rc = agg_exec_pull(f->src, doc, err)) != 1)
			return rc;
		if (f->m == NULL)
			return 1;
		if ((rc = match_exec(f->m, *doc, NULL, err)) != 0)
			return rc;   /* 1: passes; -1: error */
	}
}

/* ---- $lookup ------------------------------------------------------------ */

typedef struct lookup_plan {
	char *db, *from;          /* from NULL: the pipeline starts with $documents */
	char *from_name;          /* from as given (a view's name; errors show it) */
	char *local, *foreign;    /* both or neither */
	char *as;
	agg_pipeline_t *pipe;     /* may have 0 stages */
	/* from a view: the view's stages, run over the collection under it;
	 * the join (if any) filters their output and pipe runs on what passes
	 * (mongod's resolved pipeline: view stages, the join's $match, the
	 * user's stages).  Borrowed from the root pipeline (one parse per view
	 * and query); NULL otherwise. */
	const agg_pipeline_t *view_pipe;
	int *let_ids;
	char **let_names;
	expr_t **let_exprs;
	int nlet;
} lookup_plan_t;

static void
lookup_free_plan(void *plan)
{
	lookup_plan_t *lp = plan;
	int i;

	bson_free(lp->db);
	bson_free(lp->from);
	bson_free(lp->from_name);
	bson_free(lp->local);
	bson_free(lp->foreign);
	bson_free(lp->as);
	agg_pipeline_free(lp->pipe);
	for (i = 0; i < lp->nlet; i++) {
		expr_destroy(lp->let_exprs[i]);
		bson_free(lp->let_names[i]);
	}
	bson_free(lp->let_ids);
	bson_free(lp->let_names);
	bson_free(lp->let_exprs);
	bson_free(lp);
}

static int
lookup_string(const char *name, const bson_value_t *v, char **out, terr_t *err)
{
	if (v->value_type != BSON_TYPE_UTF8) {
		char *s = bv_to_mongo_string(v);
		terr_set(err, TERR_FAILED_TO_PARSE, "$lookup argument '%s' must be a string, found %s: %s: %s",
		    name, name, s, bv_type_name(v->value_type));
		bson_free(s);
		return -1;
	}
	bson_free(*out);
	*out = bson_strdup(v->value.v_utf8.str);
	return 0;
}

static int
lookup_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	lookup_plan_t *lp;
	bson_t d, pipe, let, view_stages;
	bson_iter_t it;
	bool has_pipe = false, has_let = false, has_view = false;
	int ret = 0, i;
	static const bson_t empty_pipe = BSON_INITIALIZER;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "the $lookup specification must be an Object");
	lp = bson_malloc0(sizeof(*lp));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		if (strcmp(k, "from") == 0) {
			if (v->value_type == BSON_TYPE_DOCUMENT) {
				bson_t f;
				bson_iter_t fi;
				agg_value_doc(v, &f);
				/* a repeated `from` replaces the one before it */
				bson_free(lp->db);
				bson_free(lp->from);
				lp->db = lp->from = NULL;
				if (bson_iter_init_find(&fi, &f, "db") && BSON_ITER_HOLDS_UTF8(&fi))
					lp->db = bson_strdup(bson_iter_utf8(&fi, NULL));
				if (bson_iter_init_find(&fi, &f, "coll") && BSON_ITER_HOLDS_UTF8(&fi))
					lp->from = bson_strdup(bson_iter_utf8(&fi, NULL));
				if (lp->db == NULL || lp->from == NULL) {
					ret = terr_set(err, TERR_FAILED_TO_PARSE,
					    "$lookup 'from' field must specify both 'db' and 'coll'");
					goto err;
				}
			} else {
				if (v->value_type != BSON_TYPE_UTF8) {
					ret = terr_set(err, TERR_FAILED_TO_PARSE,
					    "$lookup 'from' field must be a string or an object, but found %s",
					    bv_type_name(v->value_type));
					goto err;
				}
				ERR(lookup_string("from", v, &lp->from, err));
				/* a name alone is in this database, whatever came before */
				bson_free(lp->db);
				lp->db = NULL;
			}
		} else if (strcmp(k, "localField") == 0) {
			ERR(lookup_string(k, v, &lp->local, err));
		} else if (strcmp(k, "foreignField") == 0) {
			ERR(lookup_string(k, v, &lp->foreign, err));
		} else if (strcmp(k, "as") == 0) {
			ERR(lookup_string(k, v, &lp->as, err));
		} else if (strcmp(k, "pipeline") == 0) {
			if (v->value_type != BSON_TYPE_ARRAY) {
				ret = terr_set(err, TERR_FAILED_TO_PARSE,
				    "'pipeline' option must be specified as an array");
				goto err;
			}
			agg_value_doc(v, &pipe);
			has_pipe = true;
		} else if (strcmp(k, "let") == 0) {
			if (v->value_type != BSON_TYPE_DOCUMENT) {
				char *str = bv_to_mongo_string(v);
				ret = terr_set(err, TERR_FAILED_TO_PARSE,
				    "$lookup argument 'let: %s' must be an object, is type %s", str,
				    bv_type_name(v->value_type));
				bson_free(str);
				goto err;
			}
			agg_value_doc(v, &let);
			has_let = true;
		} else {
			ret = terr_set(err, TERR_FAILED_TO_PARSE, "unknown argument to $lookup: %s", k);
			goto err;
		}
	}
	if (lp->as == NULL) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "must specify 'as' field for a $lookup");
		goto err;
	}
	if (has_pipe && (lp->local == NULL) != (lp->foreign == NULL)) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "$lookup requires both or neither of 'localField' and 'foreignField' to be specified");
		goto err;
	}
	if (!has_pipe && (lp->local == NULL || lp->foreign == NULL)) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified");
		goto err;
	}
	if (has_let && !has_pipe) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "$lookup with a 'let' argument must also specify 'pipeline'");
		goto err;
	}
	if (lp->db == NULL)
		lp->db = bson_strdup(pc->host != NULL ? pc->host->db : "test");
	lp->from_name = lp->from != NULL ? bson_strdup(lp->from) : NULL;
	/* from a view: its stages run first on the collection under it, as a
	 * pipeline of their own whose output the join filters and the user's
	 * pipeline (parsed below) reads */
	{
		agg_pipeline_t *vp;
		ERR(foreign_view(pc, lp->db, &lp->from, lp->local != NULL ? NULL : has_pipe ? &pipe : &empty_pipe,
		    &vp, &view_stages, &has_view, err));
		lp->view_pipe = vp;
	}
	/* let: parsed in the outer scope, defined for the inner one */
	expr_scope_push(pc->scope);
	if (has_let) {
		int n = (int)bson_count_keys(&let);
		lp->let_ids = bson_malloc0(sizeof(int) * (size_t)(n + 1));
		lp->let_names = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
		lp->let_exprs = bson_malloc0(sizeof(expr_t *) * (size_t)(n + 1));
		bson_iter_init(&it, &let);
		while (bson_iter_next(&it)) {
			if (expr_parse(bson_iter_value(&it), pc->scope, &lp->let_exprs[lp->nlet], err) != 0) {
				expr_scope_pop(pc->scope);
				ret = -1;
				goto err;
			}
			lp->let_names[lp->nlet] = bson_strdup(bson_iter_key(&it));
			lp->nlet++;
		}
		for (i = 0; i < lp->nlet; i++)
			if (expr_scope_define(pc->scope, lp->let_names[i], &lp->let_ids[i], err) != 0) {
				expr_scope_pop(pc->scope);
				ret = -1;
				goto err;
			}
	}
	{
		/* $match in the sub-pipeline compiles against these names (values
		 * come per document; see stage_basic.c) */
		const bson_t *outer = pc->let_doc;
		bson_t *ld = outer != NULL ? bson_copy(outer) : bson_new();
		for (i = 0; i < lp->nlet; i++)
			BSON_APPEND_NULL(ld, lp->let_names[i]);
		pc->let_doc = ld;
		pc->sub_coll = lp->from;
		ret = agg_pipeline_parse_sub(pc, has_view ? &view_stages : has_pipe ? &pipe : &empty_pipe, false, true,
		    &lp->pipe, err);
		pc->sub_coll = NULL;
		pc->let_doc = outer;
		bson_destroy(ld);
	}
	expr_scope_pop(pc->scope);
	if (ret != 0)
		goto err;
	if (lp->from == NULL &&
	    (lp->pipe->nstages == 0 || strcmp(lp->pipe->stages[0].def->name, "$documents") != 0)) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "must specify 'from' field for a $lookup");
		goto err;
	}
	agg_pctx_add(pc, &agg_stages_lookup[0], lp, agg_explain_doc("$lookup", spec));
	lp = NULL;
err:
	if (lp != NULL)
		lookup_free_plan(lp);
	if (has_view)
		bson_destroy(&view_stages);
	return ret;
}

/* Hash join for localField/foreignField without a pipeline when no index
 * leads with foreignField: the foreign collection is read once into a
 * table from each value at foreignField (query semantics: array elements,
 * whole arrays, null for missing) to the documents holding it.  Results
 * keep the foreign collection's order, as the per-document scan would. */
typedef struct hj_key {
	uint64_t hash;
	bson_value_t key;         /* borrowed from a foreign document (or null) */
	int64_t *docs;            /* ascending, no repeats */
	int64_t n, cap;
} hj_key_t;

typedef struct hash_join {
	bson_t **docs;
	int64_t ndocs, capdocs;
	hj_key_t *keys;
	int64_t nkeys, capkeys;
	int64_t *table;           /* open addressing: key index + 1 */
	int64_t tsize;
	const coll_t *coll;       /* the pipeline's collation: keys equal under it join */
} hash_join_t;

typedef struct lookup_state {
	storage_coll_t *foreign;
	bool opened;
	bool hj_tried;
	hash_join_t *hj;          /* NULL: per-document queries */
	bson_t out;
	bson_t in;                /* the input document, copied when a query
	                           * runs (it may read the input's collection) */
	agg_slot_filler_t *filler;    /* `as` fills a removed field's slot, or NULL */
} lookup_state_t;

static void
hj_free(hash_join_t *hj)
{
	int64_t i;

	if (hj == NULL)
		return;
	for (i = 0; i < hj->ndocs; i++)
		bson_destroy(hj->docs[i]);
	for (i = 0; i < hj->nkeys; i++)
		bson_free(hj->keys[i].docs);
	bson_free(hj->docs);
	bson_free(hj->keys);
	bson_free(hj->table);
	bson_free(hj);
}

static hj_key_t *
hj_find(const hash_join_t *hj, const bson_value_t *v, uint64_t h)
{
	int64_t j;

	if (hj->tsize == 0)
		return NULL;
	for (j = (int64_t)(h & (uint64_t)(hj->tsize - 1)); hj->table[j] != 0; j = (j + 1) & (hj->tsize - 1)) {
		hj_key_t *k = &hj->keys[hj->table[j] - 1];
		if (k->hash == h && bv_equal_coll(&k->key, v, hj->coll))
			return k;
	}
	return NULL;
}

static void
hj_rehash(hash_join_t *hj)
{
	int64_t i, size = hj->tsize ? hj->tsize * 2 : 1024;

	bson_free(hj->table);
	hj->table = bson_malloc0(sizeof(int64_t) * (size_t)size);
	hj->tsize = size;
	for (i = 0; i < hj->nkeys; i++) {
		int64_t j = (int64_t)(hj->keys[i].hash & (uint64_t)(size - 1));
		while (hj->table[j] != 0)
			j = (j + 1) & (size - 1);
		hj->table[j] = i + 1;
	}
}

static void
hj_add(hash_join_t *hj, const bson_value_t *v, int64_t doc)
{
	uint64_t h = agg_value_hash(v, hj->coll);
	hj_key_t *k = hj_find(hj, v, h);

	if (k == NULL) {
		if ((hj->nkeys + 1) * 2 > hj->tsize)
			hj_rehash(hj);
		if (hj->nkeys == hj->capkeys) {
			hj->capkeys = hj->capkeys ? hj->capkeys * 2 : 256;
			hj->keys = bson_realloc(hj->keys, sizeof(hj_key_t) * (size_t)hj->capkeys);
		}
		k = &hj->keys[hj->nkeys];
		memset(k, 0, sizeof(*k));
		k->hash = h;
		k->key = *v;
		{
			int64_t j = (int64_t)(h & (uint64_t)(hj->tsize - 1));
			while (hj->table[j] != 0)
				j = (j + 1) & (hj->tsize - 1);
			hj->table[j] = ++hj->nkeys;
		}
	}
	if (k->n > 0 && k->docs[k->n - 1] == doc)
		return;
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 4;
		k->docs = bson_realloc(k->docs, sizeof(int64_t) * (size_t)k->cap);
	}
	k->docs[k->n++] = doc;
}

typedef struct hj_walk {
	hash_join_t *hj;
	int64_t doc;
} hj_walk_t;

static bool
hj_visit(const bpath_hit_t *hit, void *ctx)
{
	hj_walk_t *w = ctx;
	bson_value_t v = hit->value;

	if (v.value_type == BSON_TYPE_EOD)
		v.value_type = BSON_TYPE_NULL;
	hj_add(w->hj, &v, w->doc);
	return true;
}

/* Read the foreign collection into a hash join; NULL when it does not
 * apply or does not fit (the caller then queries per document). */
static hash_join_t *
hj_build(agg_rt_t *rt, const lookup_plan_t *lp, storage_coll_t *coll, terr_t *err, int *rc)
{
	hash_join_t *hj;
	agg_exec_t *sub = NULL;
	const bson_t *d;
	int64_t bytes = 0;
	int i, r;

	*rc = 0;
	if (coll == NULL)
		return NULL;
	for (i = 0; lp->view_pipe == NULL && i < coll->nindexes; i++) {
		bson_iter_t it;
		if (coll->indexes[i].key != NULL && bson_iter_init(&it, coll->indexes[i].key) &&
		    bson_iter_next(&it) && strcmp(bson_iter_key(&it), lp->foreign) == 0)
			return NULL;   /* the planner answers each lookup through the index */
	}
	hj = bson_malloc0(sizeof(*hj));
	hj->coll = agg_host_collation(rt->x->p->host);
	/* from a view: its output is what the join reads */
	if ((r = agg_exec_new_sub(lp->view_pipe != NULL ? lp->view_pipe : lp->pipe, rt->x, &sub, err)) == 0)
		r = agg_exec_open_source(sub, coll, NULL, err);
	while (r == 0 && (r = agg_exec_pull(sub, &d, err)) == 1) {
		hj_walk_t w;
		if (hj->ndocs == hj->capdocs) {
			hj->capdocs = hj->capdocs ? hj->capdocs * 2 : 256;
			hj->docs = bson_realloc(hj->docs, sizeof(bson_t *) * (size_t)hj->capdocs);
		}
		hj->docs[hj->ndocs] = bson_copy(d);
		w.hj = hj;
		w.doc = hj->ndocs++;
		bpath_walk(hj->docs[w.doc], lp->foreign, true, hj_visit, &w);
		bytes += d->len + 64;
		if (bytes > AGG_MEMORY_LIMIT) {
			agg_exec_free(sub);
			hj_free(hj);
			return NULL;
		}
		r = 0;
	}
	agg_exec_free(sub);
	if (r < 0) {
		*rc = -1;
		hj_free(hj);
		return NULL;
	}
	return hj;
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
lookup_open(agg_rt_t *rt, terr_t *err)
{
	lookup_state_t *ls = tm_alloc0(sizeof(*ls));

	bson_init(&ls->out);
	bson_init(&ls->in);
	rt->state = ls;
	ls->filler = agg_slot_filler_new(rt, ((const lookup_plan_t *)rt->st->plan)->as);
	return 0;
}

typedef struct vals {
	bson_t arr;
	uint32_t n;
} vals_t;

static bool
collect_visit(const bpath_hit_t *hit, void *ctx)
{
	vals_t *v = ctx;
	char key[16];
	const char *k;

	if (hit->value.value_type == BSON_TYPE_EOD)
		return true;
	if (hit->value.value_type == BSON_TYPE_ARRAY && !hit->leaf_element)
		return true;
	bson_uint32_to_string(v->n++, &k, key, sizeof(key));
	bv_append(&v->arr, k, -1, &hit->value);
	return true;
}

/* {foreign: {$in: [values of local in doc]}} (null when there are none) */
static void
join_filter(const lookup_plan_t *lp, const bson_t *doc, bson_t *filter)
{
	vals_t v;
	bson_t cond;

	bson_init(&v.arr);
	v.n = 0;
	bpath_walk(doc, lp->local, true, collect_visit, &v);
	if (v.n == 0)
		BSON_APPEND_NULL(&v.arr, "0");
	bson_append_document_begin(filter, lp->foreign, -1, &cond);
	if (v.n == 1) {
		/* one value: an equality, which the find executor can answer
		 * with a point lookup when the foreign field is _id */
		bson_iter_t it;
		bson_iter_init(&it, &v.arr);
		bson_iter_next(&it);
		if (BSON_ITER_HOLDS_REGEX(&it))
			bson_append_array(&cond, "$in", 3, &v.arr);
		else
			bson_append_iter(&cond, "$eq", 3, &it);
	} else {
		bson_append_array(&cond, "$in", 3, &v.arr);
	}
	bson_append_document_end(filter, &cond);
	bson_destroy(&v.arr);
}

/* The documents of the table doc's local values match: 1 with *ids (owned,
 * bson_free; ascending, no repeats; the foreign order) and *n, or 0 when a
 * value cannot be hashed (a regex matches by pattern) and the caller must
 * query. */
static int
hj_probe(const lookup_plan_t *lp, const hash_join_t *hj, const bson_t *doc, int64_t **ids_out, int64_t *n_out)
{
	vals_t v;
	bson_iter_t it;
	int64_t *ids = NULL, n = 0, cap = 0, i, kept = 0;

	bson_init(&v.arr);
	v.n = 0;
	bpath_walk(doc, lp->local, true, collect_visit, &v);
	if (v.n == 0)
		BSON_APPEND_NULL(&v.arr, "0");
	bson_iter_init(&it, &v.arr);
	while (bson_iter_next(&it)) {
		const bson_value_t *lv = bson_iter_value(&it);
		const hj_key_t *hk;
		if (lv->value_type == BSON_TYPE_REGEX) {
			bson_free(ids);
			bson_destroy(&v.arr);
			return 0;
		}
		if ((hk = hj_find(hj, lv, agg_value_hash(lv, hj->coll))) == NULL)
			continue;
		if (n + hk->n > cap) {
			cap = (n + hk->n) * 2;
			ids = bson_realloc(ids, sizeof(int64_t) * (size_t)cap);
		}
		memcpy(ids + n, hk->docs, sizeof(int64_t) * (size_t)hk->n);
		n += hk->n;
	}
	if (n > 1 && v.n > 1)
		qsort(ids, (size_t)n, sizeof(int64_t), i64_cmp);
	for (i = 0; i < n; i++)
		if (i == 0 || ids[i] != ids[i - 1])
			ids[kept++] = ids[i];
	bson_destroy(&v.arr);
	*ids_out = ids;
	*n_out = kept;
	return 1;
}

/* mongod's 4568 past internalLookupStageIntermediateDocumentMaxSizeBytes
 * (the output document itself may pass 16 MB inside the pipeline: a $unwind
 * or $project after it can bring it back; agg_exec_next refuses it only if
 * it is a result). */
static int
lookup_too_large(const lookup_plan_t *lp, terr_t *err)
{
	return terr_set(err, 4568, "Total size of documents in %s matching pipeline's $lookup stage exceeds %d bytes",
	    lp->from_name ? lp->from_name : "$documents", AGG_LOOKUP_MAX_BYTES);
}

static int
lookup_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const lookup_plan_t *lp = rt->st->plan;
	lookup_state_t *ls = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *in, *d;
	agg_exec_t *sub = NULL, *view_sub = NULL;
	match_t *join = NULL;
	join_feed_t feed;
	bson_t filter = BSON_INITIALIZER, results = BSON_INITIALIZER;
	bson_value_t av;
	int64_t *ids = NULL, nids = 0, j;
	uint32_t n = 0;
	size_t bytes = 0;
	int rc, ret = 0, i;
	bool answered = false;

	rc = agg_rt_pull(rt, &in, err);
	if (rc != 1) {
		ret = rc;
		goto err;
	}
	/* localField/foreignField with a pipeline: mongod runs the join's
	 * $match first, then the user's stages (resolvedPipelineHelper), so a
	 * stage that must stand first fails when a document is joined */
	if (lp->local != NULL && lp->pipe->nstages > 0 && (lp->pipe->stages[0].def->flags & AGG_F_FIRST) &&
	    strcmp(lp->pipe->stages[0].def->name, "$documents") != 0) {
		ret = terr_set(err, 40602, "%s is only valid as the first stage in a pipeline",
		    lp->pipe->stages[0].def->name);
		goto err;
	}
	if (!ls->opened) {
		ls->opened = true;
		if (lp->from != NULL && h != NULL)
			storage_coll_get(h->st, lp->db, lp->from, &ls->foreign, NULL);
	}
	if (!ls->hj_tried && lp->local != NULL && lp->from != NULL &&
	    (lp->view_pipe != NULL || lp->pipe->nstages == 0)) {
		int brc;
		ls->hj_tried = true;
		/* building the table reads the foreign collection, maybe the input's */
		bson_reinit(&ls->in);
		bson_concat(&ls->in, in);
		in = &ls->in;
		ls->hj = hj_build(rt, lp, ls->foreign, err, &brc);
		if (brc != 0) {
			ret = -1;
			goto err;
		}
	}
	if (ls->hj != NULL)
		answered = hj_probe(lp, ls->hj, in, &ids, &nids) == 1;
	if (answered && lp->view_pipe == NULL) {
		/* the table's documents are the result */
		for (j = 0; j < nids; j++) {
			char key[16];
			const char *k;
			bson_uint32_to_string(n++, &k, key, sizeof(key));
			bson_append_document(&results, k, -1, ls->hj->docs[ids[j]]);
		}
		goto done;
	}
	if (in != &ls->in) {
		bson_reinit(&ls->in);
		bson_concat(&ls->in, in);
		in = &ls->in;
	}
	ERR(agg_exec_new_sub(lp->pipe, rt->x, &sub, err));
	for (i = 0; i < lp->nlet; i++) {
		bson_value_t v;
		ERR(agg_eval(rt, lp->let_exprs[i], in, i == 0, &v, err));
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		ERR(agg_exec_set_var(sub, lp->let_ids[i], lp->let_names[i], &v, err));
	}
	if (lp->local != NULL)
		join_filter(lp, in, &filter);
	if (lp->view_pipe != NULL) {
		/* from a view: the user's stages read the view's output (that
		 * passes the join) */
		memset(&feed, 0, sizeof(feed));
		if (answered) {
			feed.docs = ls->hj->docs;
			feed.ids = ids;
			feed.n = nids;
		} else {
			match_options_t mo = {.coll = agg_host_collation(h)};
			if (lp->local != NULL)
				ERR(match_compile(&filter, &mo, &join, err));
			ERR(agg_exec_new_sub(lp->view_pipe, rt->x, &view_sub, err));
			ERR(agg_exec_open_source(view_sub, ls->foreign, NULL, err));
			feed.src = view_sub;
			feed.m = join;
		}
		sub->feed = join_feed_next;
		sub->feed_ctx = &feed;
	} else if (lp->from != NULL) {
		ERR(agg_exec_open_source(sub, ls->foreign, &filter, err));
	}
	while ((rc = agg_exec_pull(sub, &d, err)) == 1) {
		char key[16];
		const char *k;
		bytes += d->len;
		if (bytes > AGG_LOOKUP_MAX_BYTES) {
			ret = lookup_too_large(lp, err);
			goto err;
		}
		bson_uint32_to_string(n++, &k, key, sizeof(key));
		bson_append_document(&results, k, -1, d);
	}
	if (rc < 0) {
		ret = -1;
		goto err;
	}
done:
	if (results.len > AGG_LOOKUP_MAX_BYTES) {
		ret = lookup_too_large(lp, err);
		goto err;
	}
	av.value_type = BSON_TYPE_ARRAY;
	av.value.v_doc.data = (uint8_t *)bson_get_data(&results);
	av.value.v_doc.data_len = results.len;
	bson_reinit(&ls->out);
	agg_doc_set_path(in, lp->as, &av, &ls->out);
	*out = ls->filler != NULL ? agg_slot_filler_apply(ls->filler, &ls->out) : &ls->out;
	ret = 1;
err:
	agg_exec_free(sub);
	agg_exec_free(view_sub);
	match_free(join);
	bson_free(ids);
	bson_destroy(&filter);
	bson_destroy(&results);
	return ret;
}

static void
lookup_close(agg_rt_t *rt)
{
	lookup_state_t *ls = rt->state;

	storage_coll_release(ls->foreign);
	agg_slot_filler_free(ls->filler);
	hj_free(ls->hj);
	bson_destroy(&ls->out);
	bson_destroy(&ls->in);
	bson_free(ls);
}

/* ---- $unionWith ---------------------------------------------------------- */

typedef struct union_plan {
	char *coll;
	agg_pipeline_t *pipe;
	/* from a view: its stages, whose output pipe reads (borrowed from the
	 * root pipeline); NULL otherwise */
	const agg_pipeline_t *view_pipe;
} union_plan_t;

static void
union_free_plan(void *plan)
{
	union_plan_t *up = plan;

	bson_free(up->coll);
	agg_pipeline_free(up->pipe);
	bson_free(up);
}

static int
union_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	union_plan_t *up = bson_malloc0(sizeof(*up));
	static const bson_t empty_pipe = BSON_INITIALIZER;
	bson_t pipe, view_stages;
	bool has_pipe = false, has_view = false;
	int ret = 0;

	if (spec->value_type == BSON_TYPE_UTF8) {
		up->coll = bson_strdup(spec->value.v_utf8.str);
	} else if (spec->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;
		agg_value_doc(spec, &d);
		bson_iter_init(&it, &d);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "coll") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
				up->coll = bson_strdup(bson_iter_utf8(&it, NULL));
			} else if (strcmp(k, "pipeline") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
				agg_value_doc(bson_iter_value(&it), &pipe);
				has_pipe = true;
			} else if (strcmp(k, "coll") == 0 || strcmp(k, "pipeline") == 0) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '$unionWith.%s' is the wrong type '%s', expected type '%s'", k,
				    bv_type_name(bson_iter_type(&it)), k[0] == 'c' ? "string" : "array");
				goto err;
			} else {
				ret = terr_set(err, 40415, "BSON field '$unionWith.%s' is an unknown field.", k);
				goto err;
			}
		}
	} else {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "the $unionWith stage specification must be an object or string, but found %s",
		    bv_type_name(spec->value_type));
		goto err;
	}
	/* a view: its stages first, on the collection under it */
	{
		agg_pipeline_t *vp;
		ERR(foreign_view(pc, pc->host != NULL ? pc->host->db : "test", &up->coll,
		    has_pipe ? &pipe : &empty_pipe, &vp, &view_stages, &has_view, err));
		up->view_pipe = vp;
	}
	pc->sub_coll = up->coll;
	ret = agg_pipeline_parse_sub(pc, has_view ? &view_stages : has_pipe ? &pipe : &empty_pipe, false, true,
	    &up->pipe, err);
	pc->sub_coll = NULL;
	if (ret != 0)
		goto err;
	if (up->coll == NULL &&
	    (up->pipe->nstages == 0 || strcmp(up->pipe->stages[0].def->name, "$documents") != 0)) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "$unionWith stage without explicit collection must have a pipeline with $documents as first stage");
		goto err;
	}
	agg_pctx_add(pc, &agg_stages_lookup[1], up, agg_explain_doc("$unionWith", spec));
	up = NULL;
err:
	if (up != NULL)
		union_free_plan(up);
	if (has_view)
		bson_destroy(&view_stages);
	return ret;
}

typedef struct union_state {
	bool input_done;
	agg_exec_t *sub;
	agg_exec_t *view_sub;     /* from a view: its stages, feeding sub */
	join_feed_t feed;
} union_state_t;

static int
union_open(agg_rt_t *rt, terr_t *err)
{
	rt->state = bson_malloc0(sizeof(union_state_t));
	return 0;
}

static int
union_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const union_plan_t *up = rt->st->plan;
	union_state_t *us = rt->state;
	const agg_host_t *h = rt->x->p->host;
	int rc;

	if (!us->input_done) {
		rc = agg_rt_pull(rt, out, err);
		if (rc != 0)
			return rc;
		us->input_done = true;
		RET(agg_exec_new_sub(up->pipe, rt->x, &us->sub, err));
		if (up->view_pipe != NULL)
			RET(agg_exec_new_sub(up->view_pipe, rt->x, &us->view_sub, err));
		if (up->coll != NULL && h != NULL) {
			storage_coll_t *c = NULL;
			storage_coll_get(h->st, h->db, up->coll, &c, NULL);
			rc = agg_exec_open_source(us->view_sub != NULL ? us->view_sub : us->sub, c, NULL, err);
			storage_coll_release(c);
			if (rc != 0)
				return -1;
		}
		if (us->view_sub != NULL) {
			us->feed.src = us->view_sub;
			us->sub->feed = join_feed_next;
			us->sub->feed_ctx = &us->feed;
		}
	}
	us->sub->s = rt->x->s;
	if (us->view_sub != NULL)
		us->view_sub->s = rt->x->s;
	return agg_exec_pull(us->sub, out, err);
}

static int
union_save(agg_rt_t *rt, terr_t *err)
{
	union_state_t *us = rt->state;

	if (us->view_sub != NULL)
		RET(agg_exec_save(us->view_sub, err));
	return us->sub != NULL ? agg_exec_save(us->sub, err) : 0;
}

static int
union_restore(agg_rt_t *rt, storage_session_t *s, terr_t *err)
{
	union_state_t *us = rt->state;

	if (us->view_sub != NULL)
		RET(agg_exec_restore(us->view_sub, s, err));
	return us->sub != NULL ? agg_exec_restore(us->sub, s, err) : 0;
}

static void
union_close(agg_rt_t *rt)
{
	union_state_t *us = rt->state;

	agg_exec_free(us->sub);
	agg_exec_free(us->view_sub);
	bson_free(us);
}

/* ---- $facet -------------------------------------------------------------- */

typedef struct facet_plan {
	char **names;
	agg_pipeline_t **pipes;
	int n;
} facet_plan_t;

static void
facet_free_plan(void *plan)
{
	facet_plan_t *fp = plan;
	int i;

	for (i = 0; i < fp->n; i++) {
		bson_free(fp->names[i]);
		agg_pipeline_free(fp->pipes[i]);
	}
	bson_free(fp->names);
	bson_free(fp->pipes);
	bson_free(fp);
}

static int
facet_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	facet_plan_t *fp;
	bson_t d;
	bson_iter_t it;
	int n, ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 15947, "a facet's fields must be specified in an object");
	agg_value_doc(spec, &d);
	n = (int)bson_count_keys(&d);
	if (n == 0)
		return terr_set(err, 40169, "the $facet specification must be a non-empty object");
	fp = bson_malloc0(sizeof(*fp));
	fp->names = bson_malloc0(sizeof(char *) * (size_t)n);
	fp->pipes = bson_malloc0(sizeof(agg_pipeline_t *) * (size_t)n);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bson_t arr;
		if (k[0] == '\0' || k[0] == '$' || strchr(k, '.') != NULL) {
			ret = terr_set(err, 40352, "FieldPath field names may not start with '$'.");
			goto err;
		}
		if (!BSON_ITER_HOLDS_ARRAY(&it)) {
			ret = terr_set(err, 40170, "arguments to $facet must be arrays, %s is type %s", k,
			    bv_type_name(bson_iter_type(&it)));
			goto err;
		}
		agg_value_doc(bson_iter_value(&it), &arr);
		fp->names[fp->n] = bson_strdup(k);
		ERR(agg_pipeline_parse_sub(pc, &arr, true, false, &fp->pipes[fp->n], err));
		fp->n++;
	}
	agg_pctx_add(pc, &agg_stages_lookup[2], fp, agg_explain_doc("$facet", spec));
	return 0;
err:
	for (int i = fp->n; i < n; i++)
		bson_free(fp->names[i]);
	facet_free_plan(fp);
	return ret;
}

#define FACET_SLOT_SRCS 32     /* as agg_proj_slot_candidates may answer */

/* docs: the input, buffered.  slot_srcs: the exclusions upstream whose
 * removed fields' slots a $addFields / $set in a branch may fill (mongod's
 * TeeBuffer hands each branch the same Documents, slots included): with
 * each document, their skeletons (aux[i], aux_len[i]; agg_proj_slots_pack,
 * counted in the memory limit with it), handed back as the branch reads it
 * (views). */
typedef struct facet_state {
	bool done;
	bson_t **docs;
	int64_t n, cap;
	bson_t out;
	const agg_rt_t *slot_srcs[FACET_SLOT_SRCS];
	int nslot;
	uint8_t **aux;
	uint32_t *aux_len;
	bson_t sk;
	uint8_t *pack;
	size_t pack_cap;
	bson_t views[FACET_SLOT_SRCS];
} facet_state_t;

typedef struct facet_feed {
	facet_state_t *fs;
	int64_t i;
} facet_feed_t;

static int
facet_feed_next(void *ctx, const bson_t **doc, terr_t *err)
{
	facet_feed_t *f = ctx;
	facet_state_t *fs = f->fs;

	if (f->i >= fs->n)
		return 0;
	if (fs->nslot > 0)
		agg_proj_slots_unpack(fs->slot_srcs, fs->nslot, fs->aux[f->i], fs->aux_len[f->i], fs->views);
	*doc = fs->docs[f->i++];
	return 1;
}

static int
facet_open(agg_rt_t *rt, terr_t *err)
{
	const facet_plan_t *fp = rt->st->plan;
	facet_state_t *fs = tm_alloc0(sizeof(*fs));
	bool sets = false;

	bson_init(&fs->out);
	bson_init(&fs->sk);
	rt->state = fs;
	/* slots only matter to a branch that sets fields ($lookup's as and
	 * $unwind's includeArrayIndex fill slots too) */
	for (int i = 0; i < fp->n && !sets; i++)
		for (int k = 0; k < fp->pipes[i]->nstages && !sets; k++) {
			const char *name = fp->pipes[i]->stages[k].def->name;
			sets = strcmp(name, "$addFields") == 0 || strcmp(name, "$set") == 0 ||
			       strcmp(name, "$lookup") == 0 || strcmp(name, "$unwind") == 0;
		}
	if (sets)
		fs->nslot = agg_proj_slot_candidates(rt->input, fs->slot_srcs, FACET_SLOT_SRCS);
	return 0;
}

bool
agg_facet_carry_slots(const agg_rt_t *facet_rt, const agg_rt_t *excl)
{
	const facet_state_t *fs = facet_rt->state;

	for (int j = 0; j < fs->nslot; j++)
		if (fs->slot_srcs[j] == excl)
			return true;
	return false;
}

static int
facet_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const facet_plan_t *fp = rt->st->plan;
	facet_state_t *fs = rt->state;
	const bson_t *d;
	int64_t bytes = 0;
	int rc, i;

	if (fs->done)
		return 0;
	fs->done = true;
	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		if (fs->n == fs->cap) {
			fs->cap = fs->cap ? fs->cap * 2 : 64;
			fs->docs = bson_realloc(fs->docs, sizeof(bson_t *) * (size_t)fs->cap);
			if (fs->nslot > 0) {
				fs->aux = bson_realloc(fs->aux, sizeof(uint8_t *) * (size_t)fs->cap);
				fs->aux_len = bson_realloc(fs->aux_len, sizeof(uint32_t) * (size_t)fs->cap);
			}
		}
		if (fs->nslot > 0) {
			size_t len = agg_proj_slots_pack(fs->slot_srcs, fs->nslot, &fs->sk, &fs->pack, &fs->pack_cap);
			fs->aux[fs->n] = len > 0 ? bson_malloc(len) : NULL;
			if (len > 0)
				memcpy(fs->aux[fs->n], fs->pack, len);
			fs->aux_len[fs->n] = (uint32_t)len;
			bytes += (int64_t)len;
		}
		fs->docs[fs->n++] = bson_copy(d);
		bytes += d->len;
		if (bytes > AGG_MEMORY_LIMIT)
			return terr_set(err, TERR_QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED,
			    "$facet exceeded the memory limit of %lld bytes", (long long)AGG_MEMORY_LIMIT);
	}
	if (rc < 0)
		return -1;
	bson_reinit(&fs->out);
	for (i = 0; i < fp->n; i++) {
		agg_exec_t *sub = NULL;
		facet_feed_t feed = {fs, 0};
		bson_t arr;
		uint32_t k = 0;
		size_t total = 0;
		RET(agg_exec_new_branch(fp->pipes[i], rt->x, rt, &sub, err));
		sub->feed = facet_feed_next;
		sub->feed_ctx = &feed;
		bson_append_array_begin(&fs->out, fp->names[i], -1, &arr);
		while ((rc = agg_exec_pull(sub, &d, err)) == 1) {
			char key[16];
			const char *ks;
			total += d->len;
			if (total > 16 * 1024 * 1024) {
				rc = terr_set(err, 4031700,
				    "document constructed by $facet is %zu bytes, which exceeds the limit of 16777216 bytes",
				    total);
				break;
			}
			bson_uint32_to_string(k++, &ks, key, sizeof(key));
			bson_append_document(&arr, ks, -1, d);
		}
		bson_append_array_end(&fs->out, &arr);
		agg_exec_free(sub);
		if (rc < 0)
			return -1;
	}
	*out = &fs->out;
	return 1;
}

static void
facet_close(agg_rt_t *rt)
{
	facet_state_t *fs = rt->state;
	int64_t i;

	for (i = 0; i < fs->n; i++) {
		bson_destroy(fs->docs[i]);
		if (fs->nslot > 0)
			bson_free(fs->aux[i]);
	}
	bson_free(fs->docs);
	bson_free(fs->aux);
	bson_free(fs->aux_len);
	bson_free(fs->pack);
	bson_destroy(&fs->sk);
	bson_destroy(&fs->out);
	bson_free(fs);
}

/* ---- $graphLookup ---------------------------------------------------------- */

typedef struct graph_plan {
	char *db, *from, *as, *connect_from, *connect_to, *depth_field;
	expr_t *start;
	bson_t *restrict_filter;  /* restrictSearchWithMatch or NULL */
	int64_t max_depth;        /* -1 = none */
	/* what each search reads: no stages (the collection, the search's
	 * filter pushed into the find executor), or a view's stages (the
	 * filter then applies to their output, as mongod's trailing $match;
	 * borrowed from the root pipeline) */
	const agg_pipeline_t *reader;
	agg_pipeline_t *own_reader;   /* reader when it has no stages (owned) */
	bool from_view;
} graph_plan_t;

static void
graph_free_plan(void *plan)
{
	graph_plan_t *gp = plan;

	bson_free(gp->db);
	bson_free(gp->from);
	bson_free(gp->as);
	bson_free(gp->connect_from);
	bson_free(gp->connect_to);
	bson_free(gp->depth_field);
	expr_destroy(gp->start);
	if (gp->restrict_filter != NULL)
		bson_destroy(gp->restrict_filter);
	agg_pipeline_free(gp->own_reader);
	bson_free(gp);
}

static int
graph_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	graph_plan_t *gp;
	bson_t d;
	bson_iter_t it;
	int ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "the $graphLookup stage specification must be an object, but found %s",
		    bv_type_name(spec->value_type));
	gp = bson_malloc0(sizeof(*gp));
	gp->max_depth = -1;
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		char **dst = NULL;
		if (strcmp(k, "startWith") == 0) {
			expr_destroy(gp->start);
			gp->start = NULL;
			ERR(expr_parse(v, pc->scope, &gp->start, err));
			continue;
		}
		if (strcmp(k, "maxDepth") == 0) {
			int64_t n;
			if (!bv_is_number(v)) {
				ret = terr_set(err, 40100, "maxDepth must be numeric, found type: %s",
				    bv_type_name(v->value_type));
				goto err;
			}
			if (!bv_as_int64_exact(v, &n)) {
				char *str = bv_to_mongo_string(v);
				ret = terr_set(err, 40102, "maxDepth could not be represented as a long long: %s", str);
				bson_free(str);
				goto err;
			}
			if (n < 0) {
				ret = terr_set(err, 40101, "maxDepth requires a nonnegative argument, found: %lld",
				    (long long)n);
				goto err;
			}
			gp->max_depth = n;
			continue;
		}
		if (strcmp(k, "restrictSearchWithMatch") == 0) {
			bson_t f;
			match_t *m = NULL;
			if (v->value_type != BSON_TYPE_DOCUMENT) {
				ret = terr_set(err, 40185, "restrictSearchWithMatch must be an object, found %s",
				    bv_type_name(v->value_type));
				goto err;
			}
			agg_value_doc(v, &f);
			/* checked now, compiled per query with the join condition;
			 * its $expr sees the variables defined above the stage (the
			 * command's let, an enclosing $lookup's let), as mongod's
			 * (jstests/aggregation/sources/graphLookup/filter.js) */
			match_options_t mo = {.let = pc->let_doc};
			ERR(match_compile(&f, &mo, &m, err));
			match_free(m);
			gp->restrict_filter = bson_copy(&f);
			continue;
		}
		if (strcmp(k, "from") == 0 && v->value_type == BSON_TYPE_DOCUMENT) {
			bson_t f;
			bson_iter_t fi;
			agg_value_doc(v, &f);
			/* a repeated `from` replaces the one before it */
			bson_free(gp->db);
			bson_free(gp->from);
			gp->db = gp->from = NULL;
			if (bson_iter_init_find(&fi, &f, "db") && BSON_ITER_HOLDS_UTF8(&fi))
				gp->db = bson_strdup(bson_iter_utf8(&fi, NULL));
			if (bson_iter_init_find(&fi, &f, "coll") && BSON_ITER_HOLDS_UTF8(&fi))
				gp->from = bson_strdup(bson_iter_utf8(&fi, NULL));
			continue;
		}
		if (strcmp(k, "from") == 0) {
			/* a name alone is in this database, whatever came before */
			bson_free(gp->db);
			gp->db = NULL;
			dst = &gp->from;
		} else if (strcmp(k, "as") == 0)
			dst = &gp->as;
		else if (strcmp(k, "connectFromField") == 0)
			dst = &gp->connect_from;
		else if (strcmp(k, "connectToField") == 0)
			dst = &gp->connect_to;
		else if (strcmp(k, "depthField") == 0)
			dst = &gp->depth_field;
		else {
			ret = terr_set(err, 40104, "Unknown argument to $graphLookup: %s", k);
			goto err;
		}
		if (v->value_type != BSON_TYPE_UTF8) {
			ret = terr_set(err, 40103, "expected string as argument for %s, found: %s", k,
			    bv_type_name(v->value_type));
			goto err;
		}
		bson_free(*dst);
		*dst = bson_strdup(v->value.v_utf8.str);
	}
	if (gp->from == NULL || gp->as == NULL || gp->start == NULL || gp->connect_from == NULL ||
	    gp->connect_to == NULL) {
		ret = terr_set(err, 40105,
		    "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.");
		goto err;
	}
	if (gp->db == NULL)
		gp->db = bson_strdup(pc->host != NULL ? pc->host->db : "test");
	{
		static const bson_t none = BSON_INITIALIZER;
		agg_pipeline_t *vp;
		ERR(foreign_view(pc, gp->db, &gp->from, NULL, &vp, NULL, NULL, err));
		if (vp != NULL) {
			gp->from_view = true;
			gp->reader = vp;
		} else {
			ERR(agg_pipeline_parse_sub(pc, &none, false, true, &gp->own_reader, err));
			gp->reader = gp->own_reader;
		}
	}
	agg_pctx_add(pc, &agg_stages_lookup[3], gp, agg_explain_doc("$graphLookup", spec));
	return 0;
err:
	graph_free_plan(gp);
	return ret;
}

typedef struct graph_state {
	storage_coll_t *foreign;
	bool opened;
	bson_t out;
	bson_t in;                /* the input document, copied: the searches may
	                           * read its collection and move the cursor it
	                           * points into */
} graph_state_t;

static int
graph_open(agg_rt_t *rt, terr_t *err)
{
	graph_state_t *gs = tm_alloc0(sizeof(*gs));

	bson_init(&gs->out);
	bson_init(&gs->in);
	rt->state = gs;
	return 0;
}

/* Append v to the frontier array (arrays contribute their elements) unless
 * it was queried already (queried holds the values asked for so far); equal
 * means equal under the pipeline's collation, as mongod's value sets. */
static void
frontier_add(const bson_value_t *v, bson_t *frontier, uint32_t *n, bson_t *queried, const coll_t *coll)
{
	char key[16];
	const char *k;
	bson_iter_t it;

	if (v->value_type == BSON_TYPE_ARRAY) {
		bson_t arr;
		agg_value_doc(v, &arr);
		bson_iter_init(&it, &arr);
		while (bson_iter_next(&it))
			if (bson_iter_value(&it)->value_type != BSON_TYPE_ARRAY)
				frontier_add(bson_iter_value(&it), frontier, n, queried, coll);
		return;
	}
	bson_iter_init(&it, queried);
	while (bson_iter_next(&it))
		if (bv_equal_coll(bson_iter_value(&it), v, coll))
			return;
	bson_uint32_to_string(*n, &k, key, sizeof(key));
	bv_append(frontier, k, -1, v);
	bv_append(queried, k, -1, v);
	(*n)++;
}

/*
 * The filter of one search, as mongod builds it: {connectTo: {$in:
 * frontier}}, with restrictSearchWithMatch in an $and; when the frontier
 * holds null or undefined (which $in also matches on missing fields and on
 * each other) the field must exist, and must not be of the other type.
 */
static void
graph_filter(const graph_plan_t *gp, const bson_t *frontier, bson_t *filter)
{
	bson_t join = BSON_INITIALIZER, and, cond, ty;
	bson_iter_t it;
	bool has_null = false, has_undef = false;

	bson_iter_init(&it, frontier);
	while (bson_iter_next(&it)) {
		has_null |= BSON_ITER_HOLDS_NULL(&it);
		has_undef |= BSON_ITER_HOLDS_UNDEFINED(&it);
	}
	bson_append_document_begin(&join, gp->connect_to, -1, &cond);
	bson_append_array(&cond, "$in", 3, frontier);
	if (has_null || has_undef)
		BSON_APPEND_BOOL(&cond, "$exists", true);
	if (has_null != has_undef) {
		bson_append_document_begin(&cond, "$not", 4, &ty);
		BSON_APPEND_UTF8(&ty, "$type", has_null ? "undefined" : "null");
		bson_append_document_end(&cond, &ty);
	}
	bson_append_document_end(&join, &cond);
	if (gp->restrict_filter == NULL) {
		bson_concat(filter, &join);
	} else {
		bson_append_array_begin(filter, "$and", 4, &and);
		bson_append_document(&and, "0", 1, &join);
		bson_append_document(&and, "1", 1, gp->restrict_filter);
		bson_append_array_end(filter, &and);
	}
	bson_destroy(&join);
}

static int
graph_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const graph_plan_t *gp = rt->st->plan;
	graph_state_t *gs = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const coll_t *coll = agg_host_collation(h);
	const bson_t *in;
	bson_t frontier = BSON_INITIALIZER, queried = BSON_INITIALIZER, seen_ids = BSON_INITIALIZER;
	bson_t results = BSON_INITIALIZER;
	bson_value_t sv;
	uint32_t nf = 0, nres = 0, nids = 0;
	int64_t depth = 0;
	size_t bytes = 0;
	int rc, ret = 0;

	rc = agg_rt_pull(rt, &in, err);
	if (rc != 1) {
		ret = rc;
		goto err;
	}
	bson_reinit(&gs->in);
	bson_concat(&gs->in, in);
	in = &gs->in;
	if (!gs->opened) {
		gs->opened = true;
		if (h != NULL)
			storage_coll_get(h->st, gp->db, gp->from, &gs->foreign, NULL);
	}
	ERR(agg_eval(rt, gp->start, in, true, &sv, err));
	if (sv.value_type == BSON_TYPE_EOD)
		sv.value_type = BSON_TYPE_NULL;
	frontier_add(&sv, &frontier, &nf, &queried, coll);
	while (nf > 0 && (gp->max_depth < 0 || depth <= gp->max_depth)) {
		bson_t filter = BSON_INITIALIZER, next = BSON_INITIALIZER;
		agg_exec_t *sub = NULL;
		match_t *m = NULL;
		const bson_t *d;
		uint32_t nn = 0;
		graph_filter(gp, &frontier, &filter);
		/* a sub-run over the foreign collection: the search's filter
		 * pushed into the find executor, or applied to a view's output */
		rc = agg_exec_new_sub(gp->reader, rt->x, &sub, err);
		if (rc == 0 && gp->from_view) {
			bson_t *ld = rt->x->nvars > 0 ? agg_exec_let_doc(rt->x) : NULL;
			match_options_t mo = {.coll = coll, .let = ld != NULL ? ld : rt->x->p->let_doc};
			rc = match_compile(&filter, &mo, &m, err);
			if (ld != NULL)
				bson_destroy(ld);
		}
		if (rc == 0)
			rc = agg_exec_open_source(sub, gs->foreign, gp->from_view ? NULL : &filter, err);
		/* every document the search finds (rc stays 0 until the end, 1
		 * would stop the loop after the first) */
		while (rc == 0) {
			bson_iter_t idit, fit;
			bool dup = false;
			if ((rc = agg_exec_pull(sub, &d, err)) != 1)
				break;
			rc = 0;
			if (m != NULL && (rc = match_exec(m, d, NULL, err)) != 1) {
				if (rc < 0)
					break;
				rc = 0;
				continue;
			}
			rc = 0;
			if (bson_iter_init_find(&idit, d, "_id")) {
				bson_iter_t si;
				bson_iter_init(&si, &seen_ids);
				while (!dup && bson_iter_next(&si))
					dup = bv_equal_coll(bson_iter_value(&si), bson_iter_value(&idit), coll);
				if (!dup) {
					char key[16];
					const char *k;
					bson_uint32_to_string(nids++, &k, key, sizeof(key));
					bv_append(&seen_ids, k, -1, bson_iter_value(&idit));
				}
			}
			if (dup)
				continue;
			{
				char key[16];
				const char *k;
				bson_uint32_to_string(nres++, &k, key, sizeof(key));
				if (gp->depth_field != NULL) {
					bson_t withd = BSON_INITIALIZER;
					bson_value_t dv = {.value_type = BSON_TYPE_INT64, .value.v_int64 = depth};
					agg_doc_set_path(d, gp->depth_field, &dv, &withd);
					bson_append_document(&results, k, -1, &withd);
					bytes += withd.len;
					bson_destroy(&withd);
				} else {
					bson_append_document(&results, k, -1, d);
					bytes += d->len;
				}
			}
			if (bytes > (size_t)AGG_MEMORY_LIMIT) {
				rc = terr_set(err, 5558704,
				    "$graphLookup reached the maximum memory consumption: %lld bytes",
				    (long long)AGG_MEMORY_LIMIT);
				break;
			}
			if (bson_iter_init(&fit, d) && bson_iter_find_descendant(&fit, gp->connect_from, &fit))
				frontier_add(bson_iter_value(&fit), &next, &nn, &queried, coll);
		}
		agg_exec_free(sub);
		match_free(m);
		bson_destroy(&filter);
		bson_destroy(&frontier);
		frontier = next;
		nf = nn;
		depth++;
		if (rc < 0) {
			ret = -1;
			goto err;
		}
	}
	{
		bson_value_t av = {.value_type = BSON_TYPE_ARRAY};
		av.value.v_doc.data = (uint8_t *)bson_get_data(&results);
		av.value.v_doc.data_len = results.len;
		bson_reinit(&gs->out);
		agg_doc_set_path(in, gp->as, &av, &gs->out);
	}
	*out = &gs->out;
	ret = 1;
err:
	bson_destroy(&frontier);
	bson_destroy(&queried);
	bson_destroy(&seen_ids);
	bson_destroy(&results);
	return ret;
}

static void
graph_close(agg_rt_t *rt)
{
	graph_state_t *gs = rt->state;

	storage_coll_release(gs->foreign);
	bson_destroy(&gs->out);
	bson_destroy(&gs->in);
	bson_free(gs);
}

const char *
agg_lookup_as(const agg_rt_t *rt)
{
	return strcmp(rt->st->def->name, "$lookup") == 0 ? ((const lookup_plan_t *)rt->st->plan)->as : NULL;
}

const agg_stage_def_t agg_stages_lookup[] = {
	{"$lookup", lookup_parse, lookup_open, lookup_next, lookup_close, lookup_free_plan, 0},
	{"$unionWith", union_parse, union_open, union_next, union_close, union_free_plan, 0,
	    union_save, union_restore},
	{"$facet", facet_parse, facet_open, facet_next, facet_close, facet_free_plan,
	    AGG_F_NOT_IN_FACET},
	{"$graphLookup", graph_parse, graph_open, graph_next, graph_close, graph_free_plan, 0},
	{NULL},
};
