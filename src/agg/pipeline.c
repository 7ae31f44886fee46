/*
 * pipeline.c -- parsing a pipeline into stages, checking where each stage
 * may stand, explaining it, and running it as a chain of pull iterators.
 *
 * Stages themselves live in the stage_*.c families; this file knows them
 * only through their table rows.  The document source of a top-level run is
 * the find executor (query/plan.h) with a leading $match pushed into it.
 */
#include "agg/agg_private.h"

#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "common/mem.h"
#include "common/version.h"
#include "query/plan.h"
#include "query/sort.h"

/* ---- stage lookup ------------------------------------------------------- */

static const agg_stage_def_t *const *
stage_tables(void)
{
	static const agg_stage_def_t *const tables[] = {
		agg_stages_basic, agg_stages_project, agg_stages_group, agg_stages_sort,
		agg_stages_lookup, agg_stages_write, agg_stages_window, agg_stages_densify,
		/* geo before stats: agg_stages_stats keeps a (now unreached) $geoNear placeholder row */
		agg_stages_geo, agg_stages_changestream, agg_stages_stats, agg_stages_qstats, agg_stages_unpack, NULL,
	};
	return tables;
}

const agg_stage_def_t *
agg_stage_lookup(const char *name)
{
	const agg_stage_def_t *const *t;
	const agg_stage_def_t *d;

	for (t = stage_tables(); *t != NULL; t++)
		for (d = *t; d->name != NULL; d++)
			if (strcmp(d->name, name) == 0)
				return d;
	return NULL;
}

/* ---- helpers ------------------------------------------------------------ */

bson_t *
agg_explain_doc(const char *name, const bson_value_t *spec)
{
	bson_t *b = bson_new();

	bv_append(b, name, -1, spec);
	return b;
}

bool
agg_value_doc(const bson_value_t *v, bson_t *out)
{
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY)
		return false;
	return bson_init_static(out, v->value.v_doc.data, v->value.v_doc.data_len);
}

int
agg_eval(agg_rt_t *rt, const expr_t *e, const bson_t *doc, bool reset, bson_value_t *out,
    terr_t *err)
{
	if (reset) {
		expr_env_reset(rt->env);
		expr_env_set_root(rt->env, doc);
	}
	return expr_eval(e, rt->env, out, err);
}

static int64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- parse -------------------------------------------------------------- */

void
agg_pctx_add(agg_pctx_t *pc, const agg_stage_def_t *def, void *plan, bson_t *explain)
{
	agg_pipeline_t *p = pc->p;

	if (p->nstages == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->stages = bson_realloc(p->stages, sizeof(agg_stage_t) * (size_t)p->cap);
	}
	p->stages[p->nstages].def = def;
	p->stages[p->nstages].plan = plan;
	p->stages[p->nstages].explain = explain;
	p->nstages++;
}

static const char *
stage_name(const agg_stage_t *st)
{
	return st->def->name;
}

/* Position rules, checked on the expanded list of stages (mongod's
 * validateCommon). */
static int
check_positions(agg_pctx_t *pc, terr_t *err)
{
	agg_pipeline_t *p = pc->p;
	int i;

	for (i = 0; i < p->nstages; i++) {
		unsigned f = p->stages[i].def->flags;
		if ((f & AGG_F_FIRST) && i != 0)
			return terr_set(err, 40602, "%s is only valid as the first stage in a pipeline",
			    stage_name(&p->stages[i]));
		if ((f & AGG_F_LAST) && i != p->nstages - 1)
			return terr_set(err, 40601, "%s can only be the final stage in the pipeline",
			    stage_name(&p->stages[i]));
	}
	return 0;
}

static int
parse_stages(agg_pctx_t *pc, const bson_t *stages, terr_t *err)
{
	bson_iter_t it, st;
	const agg_stage_def_t *def;
	int n = 0;

	if (bson_count_keys(stages) > AGG_MAX_STAGES)
		return terr_set(err, 7749501, "Pipeline length must be no longer than %d stages.",
		    AGG_MAX_STAGES);
	bson_iter_init(&it, stages);
	while (bson_iter_next(&it)) {
		bson_t sdoc;
		const char *name;
		n++;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH, "Each element of the 'pipeline' array must be an object");
		agg_value_doc(bson_iter_value(&it), &sdoc);
		if (bson_count_keys(&sdoc) != 1)
			return terr_set(err, 40323,
			    "A pipeline stage specification object must contain exactly one field.");
		bson_iter_init(&st, &sdoc);
		bson_iter_next(&st);
		name = bson_iter_key(&st);
		def = agg_stage_lookup(name);
		if (def == NULL)
			return terr_set(err, 40324, "Unrecognized pipeline stage name: '%s'", name);
		if (pc->in_facet && (def->flags & AGG_F_NOT_IN_FACET))
			return terr_set(err, 40600, "%s is not allowed to be used within a $facet stage", name);
		if (pc->in_lookup && (def->flags & AGG_F_WRITES))
			return terr_set(err, 51047, "%s is not allowed to be used within a $lookup stage", name);
		pc->name = name;
		RET(def->parse(pc, bson_iter_value(&st), err));
	}
	/* $sort + $limit: top-k */
	for (int i = 0; i + 1 < pc->p->nstages; i++)
		if (strcmp(pc->p->stages[i].def->name, "$sort") == 0 &&
		    strcmp(pc->p->stages[i + 1].def->name, "$limit") == 0)
			agg_sort_set_limit(&pc->p->stages[i], *(const int64_t *)pc->p->stages[i + 1].plan);
	if (pc->p->nstages > AGG_MAX_STAGES)
		return terr_set(err, 5054701, "Pipeline length must be no longer than %d stages",
		    AGG_MAX_STAGES);
	return check_positions(pc, err);
}

/* The command's let: each variable's expression evaluated once. */
static int
parse_let(agg_pipeline_t *p, const bson_t *let, terr_t *err)
{
	bson_iter_t it;
	expr_env_t *env = NULL;
	expr_t *e = NULL;
	int n = (int)bson_count_keys(let), ret = 0, id;
	bson_value_t v;

	p->var_ids = bson_malloc0(sizeof(int) * (size_t)(n + 1));
	p->var_names = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
	p->let_doc = bson_new();
	p->var_vals = bson_malloc0(sizeof(bson_value_t) * (size_t)(n + 1));
	env = expr_env_new();
	bson_iter_init(&it, let);
	while (bson_iter_next(&it)) {
		ERR(expr_parse(bson_iter_value(&it), p->scope, &e, err));
		ERR(expr_eval(e, env, &v, err));
		ERR(expr_scope_define(p->scope, bson_iter_key(&it), &id, err));
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		p->var_ids[p->nvars] = id;
		p->var_names[p->nvars] = bson_strdup(bson_iter_key(&it));
		bson_value_copy(&v, &p->var_vals[p->nvars]);
		bv_append(p->let_doc, bson_iter_key(&it), -1, &v);
		p->nvars++;
		ERR(expr_env_set_var(env, id, &v, err));
		expr_destroy(e);
		e = NULL;
	}
err:
	expr_destroy(e);
	expr_env_destroy(env);
	return ret;
}

/* A $project spec that means the same as a find projection: fields
 * included by path (1/true), _id possibly excluded, no expressions, no
 * sub-documents, no exclusions of other fields. */
static bool
plain_inclusion(const bson_t *spec)
{
	bson_iter_t it;
	bool any = false;

	if (!bson_iter_init(&it, spec))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strchr(k, '$') != NULL || !(BSON_ITER_HOLDS_NUMBER(&it) || BSON_ITER_HOLDS_BOOL(&it)))
			return false;
		if (strcmp(k, "_id") == 0)
			continue;
		if (!bson_iter_as_bool(&it))
			return false;
		any = true;
	}
	return any;
}

/* Is the first stage not pushed down yet the stage name, with a document
 * spec (its explain form, viewed in *spec)? */
static bool
next_stage_spec(const agg_pipeline_t *p, const char *name, bson_t *spec)
{
	bson_iter_t it;

	if (p->first_stage >= p->nstages || strcmp(p->stages[p->first_stage].def->name, name) != 0 ||
	    p->stages[p->first_stage].explain == NULL ||
	    !bson_iter_init_find(&it, p->stages[p->first_stage].explain, name) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	agg_value_doc(bson_iter_value(&it), spec);
	return true;
}

/* The k of a $group spec {_id: "$k", <field>: {$first: <expr>}, ...} when
 * the sort is exactly {k: 1}; NULL otherwise (caller frees). */
static char *
group_first_key(const bson_t *sort, const bson_t *group)
{
	bson_iter_t it, acc, s;
	const char *k;

	if (!bson_iter_init_find(&it, group, "_id") || !BSON_ITER_HOLDS_UTF8(&it))
		return NULL;
	k = bson_iter_utf8(&it, NULL);
	if (k[0] != '$' || k[1] == '$' || k[1] == '\0')
		return NULL;
	k++;
	if (bson_count_keys(sort) != 1 || !bson_iter_init_find(&s, sort, k) || !BSON_ITER_HOLDS_NUMBER(&s) ||
	    bson_iter_as_int64(&s) != 1)
		return NULL;
	bson_iter_init(&it, group);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "_id") == 0)
			continue;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &acc) || !bson_iter_next(&acc) ||
		    strcmp(bson_iter_key(&acc), "$first") != 0 || bson_iter_next(&acc))
			return NULL;
	}
	return bson_strdup(k);
}

/*
 * plan_exec_new for the pipeline's source: with source_distinct, first as
 * a DISTINCT_SCAN on it without the sort (the index's order is the sort's);
 * when the planner does not make that plan, the request as it is.  coll
 * and match of req are stolen as plan_exec_new steals them.
 */
static int
source_plan_new(const agg_pipeline_t *p, plan_request_t *req, plan_exec_t **pe, terr_t *err)
{
	if (p->source_distinct != NULL && req->coll != NULL) {
		plan_request_t d = *req;
		plan_exec_t *x = NULL;
		terr_t e = TERR_INIT;

		d.sort = NULL;
		d.distinct_key = p->source_distinct;
		d.borrow = true;
		if (plan_exec_new(&d, &x, &e) == 0) {
			const plan_stats_t *st = plan_exec_stats(x);

			if (st != NULL && st->stage != NULL && strcmp(st->stage, "DISTINCT_SCAN") == 0) {
				/* the exec borrowed them: hand over the request's own */
				plan_exec_free(x);
				d.borrow = false;
				return plan_exec_new(&d, pe, err);
			}
			plan_exec_free(x);
		}
		terr_clear(&e);
	}
	return plan_exec_new(req, pe, err);
}

static void
pipeline_setup_source(agg_pipeline_t *p)
{
	bson_t spec;

	/* A leading $match runs inside the find executor (and can use its
	 * access paths); later stages run on top of it. */
	if (p->host == NULL || p->host->coll == NULL || p->facet || agg_pipeline_change_stream(p))
		return;
	if (p->nstages > 0 && strcmp(p->stages[0].def->name, "$match") == 0) {
		const bson_t *filter = *(bson_t *const *)p->stages[0].plan;
		p->source_filter = bson_copy(filter);
		p->first_stage = 1;
	}
	/* $geoNear is a near query (agg/stage_geo.c): its filter is the
	 * source's, the stage itself stays to write the distances */
	if (p->nstages > 0 && strcmp(p->stages[0].def->name, "$geoNear") == 0) {
		p->source_filter = bson_copy(*(bson_t *const *)p->stages[0].plan);
		return;
	}
	/* then a $sort (and the $limit after it): the find executor sorts
	 * with the same keys and limits, top-k */
	if (next_stage_spec(p, "$sort", &spec)) {
		p->source_sort = bson_copy(&spec);
		p->first_stage++;
	}
	/* then a $skip and/or a $limit, in that order */
	if (p->first_stage < p->nstages && strcmp(p->stages[p->first_stage].def->name, "$skip") == 0) {
		p->source_skip = *(const int64_t *)p->stages[p->first_stage].plan;
		p->first_stage++;
	}
	if (p->first_stage < p->nstages && strcmp(p->stages[p->first_stage].def->name, "$limit") == 0) {
		p->source_limit = *(const int64_t *)p->stages[p->first_stage].plan;
		p->first_stage++;
	}
	/* then a plain inclusion $project: the find projection (which a
	 * covered plan can answer from index keys) */
	if (next_stage_spec(p, "$project", &spec) && plain_inclusion(&spec)) {
		p->source_project = bson_copy(&spec);
		p->first_stage++;
	}
	/* $sort {k: 1} + $group {_id: "$k", f: {$first: ...}, ...}: a
	 * DISTINCT_SCAN may hand the $group the first document of each k */
	if (p->source_sort != NULL && p->source_skip == 0 && p->source_limit == 0 && p->source_project == NULL &&
	    next_stage_spec(p, "$group", &spec))
		p->source_distinct = group_first_key(p->source_sort, &spec);
}

/* Does a document (at any depth) hold {$meta: "textScore"} (or, with
 * key "$text", a $text key)? */
static bool
doc_has(const bson_t *d, const char *key, int depth)
{
	bson_iter_t it;

	if (depth > 100 || !bson_iter_init(&it, d))
		return false;
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), key) == 0 &&
		    (strcmp(key, "$text") == 0 ||
		     (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "textScore") == 0)))
			return true;
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub;
			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				bson_iter_document(&it, &len, &data);
			else
				bson_iter_array(&it, &len, &data);
			if (bson_init_static(&sub, data, len) && doc_has(&sub, key, depth + 1))
				return true;
		}
	}
	return false;
}

/* Whether a $project stage's explain form {$project: spec} only excludes
 * fields (so it keeps the others, "$textScore" among them). */
static bool
project_excludes(const bson_t *ex)
{
	bson_iter_t it, f;

	if (ex == NULL || !bson_iter_init_find(&it, ex, "$project") || !bson_iter_recurse(&it, &f))
		return false;
	while (bson_iter_next(&f)) {
		if (strcmp(bson_iter_key(&f), "_id") == 0 && !BSON_ITER_HOLDS_DOCUMENT(&f))
			continue;
		if (BSON_ITER_HOLDS_DOCUMENT(&f) || BSON_ITER_HOLDS_UTF8(&f) || bson_iter_as_bool(&f))
			return false;
	}
	return true;
}

/* The text score reaches the find executor (a pushed-down $sort) but no
 * stage after it: a later stage reading {$meta: "textScore"} behind a
 * $text $match is refused rather than left without its value. */
static int
text_score_check(agg_pipeline_t *p, terr_t *err)
{
	/* stages that pass documents through whole or read them; the score
	 * field must not reach written collections or nested results */
	static const char *const plain[] = {"$project", "$addFields", "$set", "$unset", "$match", "$sort",
		"$limit", "$skip", "$group", "$count", "$replaceRoot", "$replaceWith", NULL};
	bool uses = false;
	int i, k;

	if (p->source_filter == NULL || !doc_has(p->source_filter, "$text", 0))
		return 0;
	for (i = p->first_stage; i < p->nstages; i++)
		if (p->stages[i].explain != NULL && doc_has(p->stages[i].explain, "$meta", 0))
			uses = true;
	if (!uses)
		return 0;
	for (i = p->first_stage; i < p->nstages; i++) {
		for (k = 0; plain[k] != NULL && strcmp(plain[k], p->stages[i].def->name) != 0; k++)
			;
		if (plain[k] == NULL)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "{$meta: \"textScore\"} in a pipeline with %s is not supported by Tamga yet", p->stages[i].def->name);
	}
	/* the score rides in a field: a stage that rebuilds documents drops it,
	 * where mongod's metadata would go on ($project) or be gone */
	{
		bool carried = true;
		for (i = p->first_stage; i < p->nstages; i++) {
			const char *name = p->stages[i].def->name;
			const bson_t *ex = p->stages[i].explain;
			if (!carried && ex != NULL && doc_has(ex, "$meta", 0))
				return terr_set(err, TERR_NOT_IMPLEMENTED,
				    "{$meta: \"textScore\"} after a %s is not supported by Tamga yet", p->stages[i - 1].def->name);
			if (!strcmp(name, "$group") || !strcmp(name, "$count") || !strcmp(name, "$replaceRoot") ||
			    !strcmp(name, "$replaceWith") || (!strcmp(name, "$project") && !project_excludes(ex)))
				carried = false;
		}
	}
	p->source_text_score = true;
	return 0;
}

int
agg_pipeline_parse(const bson_t *stages, const bson_t *let, const agg_host_t *host,
    agg_pipeline_t **out, terr_t *err)
{
	agg_pipeline_t *p = bson_malloc0(sizeof(*p));
	agg_pctx_t pc;
	int ret = 0;

	*out = NULL;
	p->host = host;
	p->scope = expr_scope_new();
	expr_scope_set_collation(p->scope, agg_host_collation(host));
	p->owns_scope = true;
	if (let != NULL)
		ERR(parse_let(p, let, err));
	memset(&pc, 0, sizeof(pc));
	pc.p = p;
	pc.root = p;
	pc.host = host;
	pc.scope = p->scope;
	pc.let_doc = p->let_doc;
	{
		/* what mongod's optimize() evaluates fails with its context */
		const char *fc = expr_fold_context_set("Failed to optimize pipeline");

		ret = parse_stages(&pc, stages, err);
		expr_fold_context_set(fc);
		if (ret != 0)
			goto err;
	}
	ERR(agg_change_stream_check(p, err));
	/* parsed as written (its errors are mongod's); then again as mongod's
	 * optimizer rewrites it (optimize.c), when it does */
	{
		bson_t opt;
		agg_pipeline_t *p2 = NULL;
		terr_t e2 = TERR_INIT;

		if (agg_pipeline_optimize(stages, &opt)) {
			int rc = agg_pipeline_parse_as_is(&opt, let, host, &p2, &e2);

			terr_clear(&e2);
			bson_destroy(&opt);
			if (rc == 0) {
				agg_pipeline_free(p);
				*out = p2;
				return 0;
			}
		}
	}
	pipeline_setup_source(p);
	ERR(text_score_check(p, err));
	*out = p;
	return 0;
err:
	agg_pipeline_free(p);
	return ret;
}

int
agg_pipeline_parse_as_is(const bson_t *stages, const bson_t *let, const agg_host_t *host,
    agg_pipeline_t **out, terr_t *err)
{
	agg_pipeline_t *p = bson_malloc0(sizeof(*p));
	agg_pctx_t pc;
	int ret = 0;

	*out = NULL;
	p->host = host;
	p->scope = expr_scope_new();
	expr_scope_set_collation(p->scope, agg_host_collation(host));
	p->owns_scope = true;
	if (let != NULL)
		ERR(parse_let(p, let, err));
	memset(&pc, 0, sizeof(pc));
	pc.p = p;
	pc.root = p;
	pc.host = host;
	pc.scope = p->scope;
	pc.let_doc = p->let_doc;
	{
		/* what mongod's optimize() evaluates fails with its context */
		const char *fc = expr_fold_context_set("Failed to optimize pipeline");

		ret = parse_stages(&pc, stages, err);
		expr_fold_context_set(fc);
		if (ret != 0)
			goto err;
	}
	ERR(agg_change_stream_check(p, err));
	pipeline_setup_source(p);
	ERR(text_score_check(p, err));
	*out = p;
	return 0;
err:
	agg_pipeline_free(p);
	return ret;
}

int
agg_pipeline_parse_sub(agg_pctx_t *pc, const bson_t *stages, bool in_facet, bool in_lookup,
    agg_pipeline_t **out, terr_t *err)
{
	agg_pipeline_t *p = bson_malloc0(sizeof(*p));
	agg_pctx_t sub;
	int ret = 0;

	*out = NULL;
	p->host = pc->host;
	p->scope = pc->scope;
	p->facet = in_facet;
	p->sub = !in_facet;
	memset(&sub, 0, sizeof(sub));
	sub.p = p;
	sub.host = pc->host;
	sub.scope = pc->scope;
	sub.depth = pc->depth + (in_lookup ? 1 : 0);   /* $facet branches share their parent's level */
	sub.root = pc->root;
	sub.let_doc = pc->let_doc;
	/* what it reads: a $lookup's / $unionWith's collection, a $facet
	 * branch its parent's */
	sub.coll = in_lookup ? pc->sub_coll : pc->coll;
	/* a $lookup / $unionWith pipeline is parsed afresh, as mongod's: a
	 * $facet in it is allowed even when the $lookup sits in a $facet */
	sub.in_facet = in_facet || (pc->in_facet && !in_lookup);
	sub.in_lookup = in_lookup || pc->in_lookup;
	if (sub.depth > AGG_MAX_SUB_DEPTH) {
		ret = agg_sub_depth_exceeded(err);
		goto err;
	}
	ERR(parse_stages(&sub, stages, err));
	if (p->nest + (in_lookup ? 1 : 0) > pc->p->nest)
		pc->p->nest = p->nest + (in_lookup ? 1 : 0);
	*out = p;
	return 0;
err:
	agg_pipeline_free(p);
	return ret;
}

int
agg_sub_depth_exceeded(terr_t *err)
{
	return terr_set(err, TERR_MAX_SUB_PIPELINE_DEPTH_EXCEEDED,
	    "Maximum number of nested sub-pipelines exceeded. Limit is %d", AGG_MAX_SUB_DEPTH);
}

void
agg_pipeline_free(agg_pipeline_t *p)
{
	int i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nstages; i++) {
		if (p->stages[i].def->free_plan != NULL && p->stages[i].plan != NULL)
			p->stages[i].def->free_plan(p->stages[i].plan);
		if (p->stages[i].explain != NULL)
			bson_destroy(p->stages[i].explain);
	}
	bson_free(p->stages);
	agg_view_refs_free(p);   /* after the stages: they borrow its pipelines */
	for (i = 0; i < p->nvars; i++) {
		bson_value_destroy(&p->var_vals[i]);
		bson_free(p->var_names[i]);
	}
	bson_free(p->var_names);
	if (p->let_doc != NULL)
		bson_destroy(p->let_doc);
	bson_free(p->var_vals);
	bson_free(p->var_ids);
	if (p->source_filter != NULL)
		bson_destroy(p->source_filter);
	if (p->source_sort != NULL)
		bson_destroy(p->source_sort);
	bson_free(p->source_distinct);
	if (p->source_project != NULL)
		bson_destroy(p->source_project);
	if (p->owns_scope)
		expr_scope_destroy(p->scope);
	bson_free(p);
}

bool
agg_pipeline_writes(const agg_pipeline_t *p)
{
	return p->nstages > 0 && (p->stages[p->nstages - 1].def->flags & AGG_F_WRITES);
}

bool
agg_pipeline_collectionless(const agg_pipeline_t *p)
{
	return p->nstages > 0 && (p->stages[0].def->flags & AGG_F_NO_COLL);
}

const char *
agg_pipeline_first_stage(const agg_pipeline_t *p)
{
	return p->nstages > 0 ? p->stages[0].def->name : NULL;
}

/* ---- explain ------------------------------------------------------------ */

/* The host's index filter for the source's shape (its pushed-down $match,
 * $sort and projection) into req->has_index_filter / index_filter. */
static void
source_index_filter(const agg_pipeline_t *p, plan_request_t *req)
{
	const bson_t *f = p->source_filter != NULL && !bson_empty(p->source_filter) ? p->source_filter : NULL;

	if (p->host != NULL && p->host->index_filter != NULL && req->coll != NULL &&
	    p->host->index_filter(p->host->ctx, req->coll, f, p->source_sort, p->source_project, &req->index_filter))
		req->has_index_filter = true;
	/* a time-series read: its partial indexes as the measurements' filter
	 * decides (only for the collection it reads, not a $lookup's) */
	if (p->host != NULL && p->host->partial_ok != NULL && req->coll != NULL &&
	    memcmp(req->coll->uuid, p->host->partial_uuid, 16) == 0 &&
	    p->host->partial_ok(req->coll, p->host->partial_query, p->host->partial_same_collation, &req->partial_ok))
		req->has_partial_ok = true;
}

/* Under an index filter an index hint is ignored (as mongod), a
 * {$natural: d} hint kept. */
static const bson_value_t *
index_filter_hint(const bson_value_t *hint)
{
	bson_iter_t it;
	bson_t h;

	if (hint == NULL || hint->value_type != BSON_TYPE_DOCUMENT ||
	    !bson_init_static(&h, hint->value.v_doc.data, hint->value.v_doc.data_len))
		return NULL;
	return bson_iter_init_find(&it, &h, "$natural") ? hint : NULL;
}

/* {namespace, parsedQuery, winningPlan, rejectedPlans} of the source: the
 * find executor's own plan for the pushed-down filter, sort and limit. */
static void
explain_query_planner(const agg_pipeline_t *p, bson_t *qp)
{
	bson_t wp, rej, empty = BSON_INITIALIZER;
	plan_request_t req;
	plan_exec_t *pe = NULL;
	match_options_t mo = {0};
	terr_t e = TERR_INIT;
	char ns[512];

	snprintf(ns, sizeof(ns), "%s.%s", p->host->db, p->host->coll);
	memset(&req, 0, sizeof(req));
	storage_coll_get(p->host->st, p->host->db, p->host->coll, &req.coll, NULL);
	mo.let = p->let_doc;
	mo.coll = agg_host_collation(p->host);
	req.collation = mo.coll;
	if (p->source_filter != NULL && !bson_empty(p->source_filter) &&
	    match_compile(p->source_filter, &mo, &req.match, &e) != 0)
		terr_clear(&e);
	/* the fields mongod's find layer shows, as find's explain has them
	 * (parsedQuery in its canonical form) */
	BSON_APPEND_UTF8(qp, "namespace", ns);
	{
		bson_t *parsed = req.match != NULL ? match_to_bson(req.match) : NULL;

		BSON_APPEND_DOCUMENT(qp, "parsedQuery", parsed != NULL ? parsed : &empty);
		if (parsed != NULL)
			bson_destroy(parsed);
	}
	source_index_filter(p, &req);
	BSON_APPEND_BOOL(qp, "indexFilterSet", req.has_index_filter);
	BSON_APPEND_BOOL(qp, "maxIndexedOrSolutionsReached", false);
	BSON_APPEND_BOOL(qp, "maxIndexedAndSolutionsReached", false);
	BSON_APPEND_BOOL(qp, "maxScansToExplodeReached", false);
	BSON_APPEND_BOOL(qp, "prunedSimilarIndexes", false);
	req.sort = p->source_sort;
	req.skip = p->source_skip;
	req.limit = p->source_limit;
	req.projection = p->source_project;
	req.allow_disk_use = p->host->allow_disk_use;
	req.spill_dir = p->host->spill_dir;
	req.sort_memory_limit = p->host->sort_memory_limit;
	req.hint = req.has_index_filter ? index_filter_hint(p->host->hint) : p->host->hint;
	bson_append_document_begin(qp, "winningPlan", -1, &wp);
	BSON_APPEND_BOOL(&wp, "isCached", false);
	if (source_plan_new(p, &req, &pe, &e) == 0) {
		/* the plan a run would use: the trial runs among the planner's
		 * candidates (mongod's multi-planner), on a session of the pool in
		 * a snapshot of its own; without one, the planner's first */
		storage_session_t *s = p->host->st != NULL ? storage_session_pool_get(p->host->st, &e) : NULL;
		if (s != NULL && storage_txn_begin(s, &e) == 0) {
			if (plan_exec_choose(pe, s, &e) != 0)
				terr_clear(&e);
			storage_txn_rollback(s);
		}
		terr_clear(&e);
		if (s != NULL)
			storage_session_pool_put(p->host->st, s);
		plan_exec_explain_append(pe, false, &wp);
	} else {
		BSON_APPEND_UTF8(&wp, "stage", "COLLSCAN");
		terr_clear(&e);
	}
	bson_append_document_end(qp, &wp);
	/* the planner's other candidates */
	bson_append_array_begin(qp, "rejectedPlans", -1, &rej);
	if (pe != NULL)
		plan_exec_rejected_append(pe, &rej);
	bson_append_array_end(qp, &rej);
	plan_exec_free(pe);
}

/* executionStats of the source after a run (mongod's find-style block). */
static void
explain_source_stats(const agg_exec_t *x, int64_t time_ms, bson_t *out)
{
	bson_t es, stages;
	const plan_stats_t *st = x->plan != NULL ? plan_exec_stats(x->plan) : NULL;

	bson_append_document_begin(out, "executionStats", -1, &es);
	BSON_APPEND_BOOL(&es, "executionSuccess", true);
	BSON_APPEND_INT64(&es, "nReturned", st ? st->returned : 0);
	BSON_APPEND_INT64(&es, "executionTimeMillis", time_ms);
	BSON_APPEND_INT64(&es, "totalKeysExamined", st ? st->keys_examined : 0);
	BSON_APPEND_INT64(&es, "totalDocsExamined", st ? st->docs_examined : 0);
	bson_append_document_begin(&es, "executionStages", -1, &stages);
	if (x->plan != NULL)
		plan_exec_explain_append(x->plan, true, &stages);
	else
		BSON_APPEND_UTF8(&stages, "stage", "EOF");
	bson_append_document_end(&es, &stages);
	bson_append_document_end(out, &es);
}

static void
explain_common(const agg_pipeline_t *p, const agg_exec_t *x, int64_t time_ms, bson_t *out)
{
	bson_t stages, cur, c, qp;
	char key[16];
	const char *k;
	int i, n = 0;
	bool source = p->host != NULL && p->host->coll != NULL && !agg_pipeline_collectionless(p) &&
	    !agg_pipeline_change_stream(p);

	BSON_APPEND_UTF8(out, "explainVersion", "1");
	if (source && p->first_stage == p->nstages) {
		/* everything ran in the find layer: mongod explains it as a query */
		bson_append_document_begin(out, "queryPlanner", -1, &qp);
		explain_query_planner(p, &qp);
		bson_append_document_end(out, &qp);
		if (x != NULL)
			explain_source_stats(x, time_ms, out);
		return;
	}
	bson_append_array_begin(out, "stages", -1, &stages);
	if (source) {
		bson_uint32_to_string((uint32_t)n++, &k, key, sizeof(key));
		bson_append_document_begin(&stages, k, -1, &cur);
		bson_append_document_begin(&cur, "$cursor", -1, &c);
		bson_append_document_begin(&c, "queryPlanner", -1, &qp);
		explain_query_planner(p, &qp);
		bson_append_document_end(&c, &qp);
		if (x != NULL)
			explain_source_stats(x, time_ms, &c);
		bson_append_document_end(&cur, &c);
		if (x != NULL) {
			const plan_stats_t *st = x->plan != NULL ? plan_exec_stats(x->plan) : NULL;
			BSON_APPEND_INT64(&cur, "nReturned", st ? st->returned : 0);
			BSON_APPEND_INT64(&cur, "executionTimeMillisEstimate", time_ms);
		}
		bson_append_document_end(&stages, &cur);
	}
	for (i = p->first_stage; i < p->nstages; i++) {
		bson_t d;
		bson_uint32_to_string((uint32_t)n++, &k, key, sizeof(key));
		bson_append_document_begin(&stages, k, -1, &d);
		if (p->stages[i].explain != NULL) {
			bson_concat(&d, p->stages[i].explain);
		} else {
			bson_t e = BSON_INITIALIZER;
			bson_append_document(&d, p->stages[i].def->name, -1, &e);
		}
		if (x != NULL) {
			BSON_APPEND_INT64(&d, "nReturned", x->rts[i - p->first_stage].nreturned);
			BSON_APPEND_INT64(&d, "executionTimeMillisEstimate", time_ms);
		}
		bson_append_document_end(&stages, &d);
	}
	bson_append_array_end(out, &stages);
}

void
agg_pipeline_explain(const agg_pipeline_t *p, bson_t *out)
{
	explain_common(p, NULL, 0, out);
}

static int exec_next(agg_exec_t *x, storage_session_t *s, bson_t *doc, bool results, terr_t *err);

int
agg_exec_explain_run(agg_exec_t *x, storage_session_t *s, bson_t *out, terr_t *err)
{
	bson_t d;
	int64_t t0 = mono_us();
	int rc;

	while ((rc = exec_next(x, s, &d, false, err)) == 1)
		;
	if (rc < 0)
		return -1;
	explain_common(x->p, x, (mono_us() - t0) / 1000, out);
	return 0;
}

/* ---- run ---------------------------------------------------------------- */

static int
exec_build(const agg_pipeline_t *p, agg_exec_t *x, terr_t *err)
{
	int i, j;

	x->p = p;
	x->nrts = p->nstages - p->first_stage;
	x->rts = bson_malloc0(sizeof(agg_rt_t) * (size_t)(x->nrts + 1));
	bson_init(&x->result);
	for (i = 0; i < x->nrts; i++) {
		agg_rt_t *rt = &x->rts[i];
		rt->st = &p->stages[p->first_stage + i];
		rt->input = i > 0 ? &x->rts[i - 1] : NULL;
		rt->x = x;
		rt->env = expr_env_new();
		expr_env_set_now(rt->env, x->now_ms);
		for (j = 0; j < p->nvars; j++)
			RET(expr_env_set_var(rt->env, p->var_ids[j], &p->var_vals[j], err));
	}
	for (i = 0; i < x->nrts; i++)
		if (x->rts[i].st->def->open != NULL)
			RET(x->rts[i].st->def->open(&x->rts[i], err));
	return 0;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Steals the reference on coll (NULL = no such collection: no documents). */
static int
exec_open_source(agg_exec_t *x, storage_coll_t *coll, const bson_t *filter, terr_t *err)
{
	plan_request_t req;
	plan_exec_t *pe = NULL;
	match_options_t mo = {0};
	bson_t let = BSON_INITIALIZER;
	int ret = 0;

	memset(&req, 0, sizeof(req));
	req.coll = coll;
	req.collation = agg_host_collation(x->p->host);
	mo.coll = req.collation;
	if (filter != NULL && !bson_empty(filter)) {
		bson_t *ld = x->nvars > 0 ? agg_exec_let_doc(x) : NULL;
		mo.let = ld != NULL ? ld : x->p->let_doc;
		ret = match_compile(filter, &mo, &req.match, err);
		if (ld != NULL)
			bson_destroy(ld);
		if (ret != 0)
			goto err;
	}
	if (x->top) {
		req.sort = x->p->source_sort;
		req.skip = x->p->source_skip;
		req.limit = x->p->source_limit;
		req.projection = x->p->source_project;
		if (x->p->host != NULL) {
			req.allow_disk_use = x->p->host->allow_disk_use;
			req.spill_dir = x->p->host->spill_dir;
			req.sort_memory_limit = x->p->host->sort_memory_limit;
		}
		req.hint = x->p->host != NULL ? x->p->host->hint : NULL;
		source_index_filter(x->p, &req);
		if (req.has_index_filter)
			req.hint = index_filter_hint(req.hint);
		req.keep_text_score = x->p->source_text_score;
		if (x->p->host != NULL && x->p->host->has_resume_after) {
			req.has_resume_after = true;
			req.resume_after = x->p->host->resume_after;
			req.resume_key = x->p->host->resume_key;
			req.resume_key_len = x->p->host->resume_key_len;
		}
	}
	ret = x->top ? source_plan_new(x->p, &req, &pe, err) : plan_exec_new(&req, &pe, err);
	req.coll = NULL;
	req.match = NULL;
	if (ret != 0)
		goto err;
	if (x->top && x->p->host != NULL && x->p->host->notablescan && coll != NULL) {
		const plan_stats_t *st = plan_exec_stats(pe);

		if (plan_exec_index_name(pe) == NULL && st != NULL && st->stage != NULL &&
		    strcmp(st->stage, "COLLSCAN") == 0) {
			plan_exec_free(pe);
			ret = terr_set(err, 291, "error processing query: ns=%s.%s planner returned error :: caused by :: "
			    "No indexed plans available, and running with 'notablescan'", x->p->host->db,
			    x->p->host->coll);
			goto err;
		}
	}
	if (x->top && x->p->host != NULL && x->p->host->want_recid)
		plan_exec_want_recid(pe);
	x->plan = pe;
err:
	bson_destroy(&let);
	if (req.coll != NULL)
		storage_coll_release(req.coll);
	match_free(req.match);
	return ret;
}

bool
agg_exec_last_recid(const agg_exec_t *x, int64_t *out)
{
	recid_t r;

	if (x->plan == NULL || !plan_exec_last_recid(x->plan, &r))
		return false;
	*out = r;
	return true;
}

bool
agg_exec_last_cluster_key(const agg_exec_t *x, const uint8_t **key, size_t *len)
{
	return x->plan != NULL && plan_exec_last_cluster_key(x->plan, key, len);
}

int
agg_exec_new(const agg_pipeline_t *p, agg_exec_t **out, terr_t *err)
{
	agg_exec_t *x = tm_alloc0(sizeof(*x));
	storage_coll_t *coll = NULL;
	int ret = 0;

	*out = NULL;
	x->now_ms = wall_ms();
	x->top = true;
	x->error_context = "PlanExecutor error during aggregation";
	ERR(exec_build(p, x, err));
	if (p->host != NULL && p->host->coll != NULL && !agg_pipeline_collectionless(p) &&
	    !agg_pipeline_change_stream(p)) {
		storage_coll_get(p->host->st, p->host->db, p->host->coll, &coll, NULL);
		ERR(exec_open_source(x, coll, p->source_filter, err));
	} else {
		x->source_done = true;
	}
	*out = x;
	return 0;
err:
	agg_exec_free(x);
	return ret;
}

/* Remember v as variable id of x (owned copy) and set it in every stage. */
int
agg_exec_set_var(agg_exec_t *x, int id, const char *name, const bson_value_t *v, terr_t *err)
{
	int i;

	for (i = 0; i < x->nvars && x->var_ids[i] != id; i++)
		;
	if (i == x->nvars) {
		x->var_ids = bson_realloc(x->var_ids, sizeof(int) * (size_t)(x->nvars + 1));
		x->var_names = bson_realloc(x->var_names, sizeof(char *) * (size_t)(x->nvars + 1));
		x->var_vals = bson_realloc(x->var_vals, sizeof(bson_value_t) * (size_t)(x->nvars + 1));
		x->var_ids[i] = id;
		x->var_names[i] = bson_strdup(name);
		x->nvars++;
	} else {
		bson_value_destroy(&x->var_vals[i]);
	}
	bson_value_copy(v, &x->var_vals[i]);
	for (i = 0; i < x->nrts; i++)
		RET(expr_env_set_var(x->rts[i].env, id, v, err));
	return 0;
}

int
agg_exec_new_sub(const agg_pipeline_t *p, agg_exec_t *parent, agg_exec_t **out, terr_t *err)
{
	return agg_exec_new_branch(p, parent, NULL, out, err);
}

int
agg_exec_new_branch(const agg_pipeline_t *p, agg_exec_t *parent, const agg_rt_t *feeder, agg_exec_t **out,
                    terr_t *err)
{
	agg_exec_t *x = tm_alloc0(sizeof(*x));
	int ret = 0, j;

	*out = NULL;
	x->feeder = feeder;
	x->now_ms = parent->now_ms;
	x->s = parent->s;
	ERR(exec_build(p, x, err));
	/* the variables the parent knows: command let, outer $lookup let */
	for (j = 0; j < parent->p->nvars; j++)
		ERR(agg_exec_set_var(x, parent->p->var_ids[j], parent->p->var_names[j],
		    &parent->p->var_vals[j], err));
	for (j = 0; j < parent->nvars; j++)
		ERR(agg_exec_set_var(x, parent->var_ids[j], parent->var_names[j], &parent->var_vals[j],
		    err));
	*out = x;
	return 0;
err:
	agg_exec_free(x);
	return ret;
}

int
agg_exec_open_source(agg_exec_t *x, storage_coll_t *coll, const bson_t *filter, terr_t *err)
{
	if (coll != NULL)
		storage_coll_ref(coll);
	if (x->plan != NULL) {
		plan_exec_free(x->plan);
		x->plan = NULL;
	}
	x->source_done = false;
	x->done = false;
	/* a sub-pipeline led by $geoNear reads the collection through the near
	 * plan, as the top-level one does (agg/stage_geo.c: the stage takes
	 * each document's distance from that plan): its filter is the source's
	 * when the reader has none of its own */
	if (!x->top && (filter == NULL || bson_empty(filter)) && x->p->nstages > 0 &&
	    strcmp(x->p->stages[0].def->name, "$geoNear") == 0)
		filter = *(bson_t *const *)x->p->stages[0].plan;
	/* a time-series sub-pipeline's bucket-level $match before the unpack
	 * (stage_lookup.c's $geoNear rewrite) reads the buckets through the
	 * planner (a 2dsphere_bucket index); the stage still runs after it */
	else if (!x->top && (filter == NULL || bson_empty(filter)) && x->p->nstages > 1 &&
	         strcmp(x->p->stages[0].def->name, "$match") == 0 &&
	         strcmp(x->p->stages[1].def->name, "$_internalUnpackBucket") == 0)
		filter = *(bson_t *const *)x->p->stages[0].plan;
	return exec_open_source(x, coll, filter, err);
}

bson_t *
agg_exec_let_doc(const agg_exec_t *x)
{
	bson_t *b = bson_new();
	int i;

	for (i = 0; i < x->nvars; i++)
		bv_append(b, x->var_names[i], -1, &x->var_vals[i]);
	return b;
}

/* The document source: the collection, a feed, or nothing. */
static int
source_next(agg_exec_t *x, const bson_t **doc, terr_t *err)
{
	int rc;

	if (x->feed != NULL)
		return x->feed(x->feed_ctx, doc, err);
	if (x->plan == NULL || x->source_done)
		return 0;
	rc = plan_exec_next(x->plan, x->s, &x->result, err);
	if (rc == 1)
		*doc = &x->result;
	else if (rc == 0)
		x->source_done = true;
	return rc;
}

int
agg_rt_pull(agg_rt_t *rt, const bson_t **doc, terr_t *err)
{
	int rc;

	if (rt->input == NULL)
		return source_next(rt->x, doc, err);
	rc = rt->input->st->def->next(rt->input, doc, err);
	if (rc == 1)
		rt->input->nreturned++;
	return rc;
}

int
agg_exec_pull(agg_exec_t *x, const bson_t **doc, terr_t *err)
{
	int rc;

	if (x->done)
		return 0;
	if (x->nrts == 0)
		rc = source_next(x, doc, err);
	else {
		rc = x->rts[x->nrts - 1].st->def->next(&x->rts[x->nrts - 1], doc, err);
		if (rc == 1)
			x->rts[x->nrts - 1].nreturned++;
	}
	/* a change stream has no end: the next batch reads on */
	if (rc == 0 && !agg_pipeline_change_stream(x->p))
		x->done = true;
	return rc;
}

/* The next result of a top-level run; results is false when they are
 * discarded (explain's run), which lets them be of any size, as mongod's. */
static int
exec_next(agg_exec_t *x, storage_session_t *s, bson_t *doc, bool results, terr_t *err)
{
	const bson_t *d = NULL;
	int rc;

	x->s = s;
	rc = agg_exec_pull(x, &d, err);
	if (rc == 1 && results && d->len > TAMGA_MAX_BSON_INTERNAL_SIZE) {
		/* a document may grow past 16 MB inside the pipeline ($lookup),
		 * not leave it so: mongod's BSONObj check */
		bson_iter_t it;
		char *first = NULL;
		if (bson_iter_init(&it, d) && bson_iter_next(&it)) {
			char *v = bv_to_mongo_string(bson_iter_value(&it));
			first = bson_strdup_printf("%s: %s", bson_iter_key(&it), v);
			bson_free(v);
		}
		terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		    "BSONObj size: %u (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: %s", d->len,
		    d->len, TAMGA_MAX_BSON_INTERNAL_SIZE, first != NULL ? first : "EOO");
		bson_free(first);
		rc = -1;
	}
	if (rc == 1 && x->top && x->p->source_text_score) {
		/* the score field stays inside the pipeline */
		bson_iter_t it;
		if (x->stripped_init)
			bson_reinit(&x->stripped);
		else
			bson_init(&x->stripped);
		x->stripped_init = true;
		bson_iter_init(&it, d);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), SORT_TEXT_SCORE_FIELD) != 0)
				bson_append_iter(&x->stripped, NULL, 0, &it);
		d = &x->stripped;
	}
	if (rc == 1) {
		bson_init_static(doc, bson_get_data(d), d->len);
		return 1;
	}
	if (rc < 0 && x->top && x->error_context != NULL && err != NULL && err->msg != NULL)
		terr_wrap(err, x->error_context);
	return rc;
}

int
agg_exec_next(agg_exec_t *x, storage_session_t *s, bson_t *doc, terr_t *err)
{
	return exec_next(x, s, doc, true, err);
}

void
agg_exec_set_error_context(agg_exec_t *x, const char *context)
{
	x->error_context = context;
}

int
agg_exec_save(agg_exec_t *x, terr_t *err)
{
	int i;

	for (i = 0; i < x->nrts; i++)
		if (x->rts[i].st->def->save != NULL && x->rts[i].state != NULL)
			RET(x->rts[i].st->def->save(&x->rts[i], err));
	if (x->plan != NULL)
		return plan_exec_save(x->plan, err);
	return 0;
}

int
agg_exec_restore(agg_exec_t *x, storage_session_t *s, terr_t *err)
{
	int i;

	x->s = s;
	for (i = 0; i < x->nrts; i++)
		if (x->rts[i].st->def->restore != NULL && x->rts[i].state != NULL)
			RET(x->rts[i].st->def->restore(&x->rts[i], s, err));
	if (x->plan != NULL)
		return plan_exec_restore(x->plan, s, err);
	return 0;
}

void
agg_exec_free(agg_exec_t *x)
{
	int i;

	if (x == NULL)
		return;
	for (i = x->nrts - 1; i >= 0; i--) {
		if (x->rts[i].st->def->close != NULL && x->rts[i].state != NULL)
			x->rts[i].st->def->close(&x->rts[i]);
		expr_env_destroy(x->rts[i].env);
	}
	bson_free(x->rts);
	if (x->plan != NULL)
		plan_exec_free(x->plan);
	for (i = 0; i < x->nvars; i++) {
		bson_value_destroy(&x->var_vals[i]);
		bson_free(x->var_names[i]);
	}
	bson_free(x->var_names);
	bson_free(x->var_ids);
	bson_free(x->var_vals);
	if (x->stripped_init)
		bson_destroy(&x->stripped);
	bson_free(x);
}
