/*
 * stage_basic.c -- the simple streaming stages: $match, $limit, $skip,
 * $count, $unwind, $replaceRoot / $replaceWith, $documents, $sample,
 * $redact.
 *
 * Each stage is a row of agg_stages_basic; parse builds a read-only plan,
 * next pulls from the stage before.
 */
#include "agg/agg_private.h"

#include <math.h>
#include <string.h>
#include <sys/random.h>

#include "agg/agg_doc.h"
#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"
#include "expr/decimal.h"
#include "query/sort.h"

/* ---- $match ------------------------------------------------------------- */

/* First member is the filter: pipeline.c reads it to push a leading $match
 * into the find executor. */
typedef struct match_plan {
	bson_t *filter;
	match_t *m;
} match_plan_t;

static void
match_free_plan(void *plan)
{
	match_plan_t *mp = plan;

	bson_destroy(mp->filter);
	match_free(mp->m);
	bson_free(mp);
}

static int
match_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	match_plan_t *mp;
	match_options_t mo = {0};
	bson_t f;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 15959, "the match filter must be an expression in an object");
	agg_value_doc(spec, &f);
	mp = bson_malloc0(sizeof(*mp));
	mp->filter = bson_copy(&f);
	mo.let = pc->let_doc;
	mo.coll = agg_host_collation(pc->host);
	mo.disallow = MATCH_DISALLOW_GEO_NEAR | MATCH_DISALLOW_WHERE;   /* mongod: no $where in $match */
	if (match_compile(&f, &mo, &mp->m, err) != 0) {
		match_free_plan(mp);
		return -1;
	}
	/* $text runs over the collection's text index: first stage only */
	if (pc->p->nstages > 0 && match_has_text(mp->m)) {
		match_free_plan(mp);
		return terr_set(err, 17313, "$match with $text is only allowed as the first pipeline stage");
	}
	agg_pctx_add(pc, &agg_stages_basic[0], mp, agg_explain_doc("$match", spec));
	return 0;
}

bool
agg_first_is_text_match(const agg_pipeline_t *p)
{
	return p->nstages > 0 && strcmp(p->stages[0].def->name, "$match") == 0 && p->stages[0].plan != NULL &&
	    match_has_text(((const match_plan_t *)p->stages[0].plan)->m);
}

/* In a $lookup sub-run the variables change per outer document, and the
 * matcher takes variables as constants: such a run compiles its own. */
typedef struct match_state {
	match_t *own;
	bool ready;
} match_state_t;

static int
match_open(agg_rt_t *rt, terr_t *err)
{
	rt->state = bson_malloc0(sizeof(match_state_t));
	return 0;
}

static int
match_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const match_plan_t *mp = rt->st->plan;
	match_state_t *ms = rt->state;
	const match_t *m;
	int rc;

	if (!ms->ready) {
		ms->ready = true;
		if (rt->x->nvars > 0 && match_can_fail(mp->m)) {
			match_options_t mo = {0};
			bson_t *ld = agg_exec_let_doc(rt->x);
			mo.let = ld;
			mo.coll = agg_host_collation(rt->x->p->host);
			rc = match_compile(mp->filter, &mo, &ms->own, err);
			bson_destroy(ld);
			if (rc != 0)
				return -1;
		}
	}
	m = ms->own != NULL ? ms->own : mp->m;
	for (;;) {
		rc = agg_rt_pull(rt, out, err);
		if (rc <= 0)
			return rc;
		rc = match_exec(m, *out, NULL, err);
		if (rc != 0)
			return rc;
	}
}

static void
match_close(agg_rt_t *rt)
{
	match_state_t *ms = rt->state;

	match_free(ms->own);
	bson_free(ms);
}

/* ---- $limit / $skip ----------------------------------------------------- */

typedef struct count_plan {
	int64_t n;
} count_plan_t;

/*
 * mongod's BSONElement::parseIntegerElementToNonNegativeLong, as $skip and
 * $limit parse their argument: a number (an integral double, or a decimal
 * exactly representable as a 64-bit integer) that is not negative.  The
 * reason is formatted into "invalid argument to <stage> stage: <reason>"
 * with code (5107200 $skip, 5107201 $limit).  -0.0 is 0.
 */
static int
nonneg_long_arg(const char *stage, int code, const bson_value_t *spec, int64_t *n, terr_t *err)
{
	char *shown = bv_to_mongo_string(spec);
	const char *why = NULL;
	int ret = 0;

	if (!bv_is_number(spec)) {
		why = "Expected a number in: ";
	} else if (spec->value_type == BSON_TYPE_DOUBLE) {
		double d = spec->value.v_double;

		if (isnan(d))
			why = "Expected an integer, but found NaN in: ";
		else if (d >= 9223372036854775808.0 || d < -9223372036854775808.0)
			why = "Cannot represent as a 64-bit integer: ";
		else if (d != (double)(int64_t)d)
			why = "Expected an integer: ";
		else
			*n = (int64_t)d;
	} else if (spec->value_type == BSON_TYPE_DECIMAL128) {
		if (!expr_decimal_is_integral(spec->value.v_decimal128) ||
		    !expr_decimal_to_int64(spec->value.v_decimal128, n))
			why = "Cannot represent as a 64-bit integer: ";
	} else if (!bv_as_int64_exact(spec, n)) {
		why = "Cannot represent as a 64-bit integer: ";
	}
	if (why == NULL && *n < 0)
		why = "Expected a non-negative number in: ";
	if (why != NULL)
		ret = terr_set(err, code, "invalid argument to %s stage: %s%s: %s", stage, why, stage, shown);
	bson_free(shown);
	return ret;
}

static int
limit_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	count_plan_t *cp;
	int64_t n = 0;

	RET(nonneg_long_arg("$limit", 5107201, spec, &n, err));
	if (n == 0)
		return terr_set(err, 15958, "the limit must be positive");
	cp = bson_malloc0(sizeof(*cp));
	cp->n = n;
	{
		bson_value_t v = {.value_type = BSON_TYPE_INT64, .value.v_int64 = n};
		agg_pctx_add(pc, &agg_stages_basic[1], cp, agg_explain_doc("$limit", &v));
	}
	return 0;
}

static int
counter_open(agg_rt_t *rt, terr_t *err)
{
	rt->state = bson_malloc0(sizeof(int64_t));
	return 0;
}

static void
counter_close(agg_rt_t *rt)
{
	bson_free(rt->state);
}

static int
limit_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const count_plan_t *cp = rt->st->plan;
	int64_t *seen = rt->state;
	int rc;

	if (*seen >= cp->n)
		return 0;
	rc = agg_rt_pull(rt, out, err);
	if (rc == 1)
		(*seen)++;
	return rc;
}

static int
skip_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	count_plan_t *cp;
	int64_t n = 0;

	RET(nonneg_long_arg("$skip", 5107200, spec, &n, err));
	cp = bson_malloc0(sizeof(*cp));
	cp->n = n;
	{
		bson_value_t v = {.value_type = BSON_TYPE_INT64, .value.v_int64 = n};
		agg_pctx_add(pc, &agg_stages_basic[2], cp, agg_explain_doc("$skip", &v));
	}
	return 0;
}

static int
skip_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const count_plan_t *cp = rt->st->plan;
	int64_t *skipped = rt->state;
	int rc;

	for (;;) {
		rc = agg_rt_pull(rt, out, err);
		if (rc != 1)
			return rc;
		if (*skipped >= cp->n)
			return 1;
		(*skipped)++;
	}
}

/* ---- $count ------------------------------------------------------------- */

typedef struct cnt_plan {
	char *field;
} cnt_plan_t;

typedef struct cnt_state {
	bool done;
	bson_t out;
} cnt_state_t;

static void
cnt_free_plan(void *plan)
{
	cnt_plan_t *cp = plan;

	bson_free(cp->field);
	bson_free(cp);
}

static int
cnt_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	cnt_plan_t *cp;
	const char *s;
	bson_t *ex;

	if (spec->value_type != BSON_TYPE_UTF8)
		return terr_set(err, 40156, "the count field must be a non-empty string");
	s = spec->value.v_utf8.str;
	if (spec->value.v_utf8.len == 0)
		return terr_set(err, 40157, "the count field must be a non-empty string");
	if (s[0] == '$')
		return terr_set(err, 40158, "the count field cannot be a $-prefixed path");
	if (strlen(s) != spec->value.v_utf8.len)
		return terr_set(err, 40159, "the count field cannot contain a null byte");
	if (strchr(s, '.') != NULL)
		return terr_set(err, 40160, "the count field cannot contain '.'");
	cp = bson_malloc0(sizeof(*cp));
	cp->field = bson_strdup(s);
	/* explain as mongod: $group + $project */
	ex = BCON_NEW("$group", "{", "_id", BCON_NULL, s, "{", "$sum", BCON_INT32(1), "}", "}");
	agg_pctx_add(pc, &agg_stages_basic[3], cp, ex);
	return 0;
}

AGG_DEFINE_OPEN_WITH_OUT(cnt_open, cnt_state_t)

static int
cnt_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const cnt_plan_t *cp = rt->st->plan;
	cnt_state_t *cs = rt->state;
	const bson_t *d;
	int64_t n = 0;
	int rc;

	if (cs->done)
		return 0;
	cs->done = true;
	while ((rc = agg_rt_pull(rt, &d, err)) == 1)
		n++;
	if (rc < 0)
		return -1;
	if (n == 0)
		return 0;
	bson_reinit(&cs->out);
	if (n <= INT32_MAX)
		BSON_APPEND_INT32(&cs->out, cp->field, (int32_t)n);
	else
		BSON_APPEND_INT64(&cs->out, cp->field, n);
	*out = &cs->out;
	return 1;
}

static void
cnt_close(agg_rt_t *rt)
{
	cnt_state_t *cs = rt->state;

	bson_destroy(&cs->out);
	bson_free(cs);
}

/* ---- $replaceRoot / $replaceWith ---------------------------------------- */

typedef struct rr_plan {
	expr_t *e;
} rr_plan_t;

static void
rr_free_plan(void *plan)
{
	rr_plan_t *rp = plan;

	expr_destroy(rp->e);
	bson_free(rp);
}

static int
rr_add(agg_pctx_t *pc, const bson_value_t *expr_spec, const bson_value_t *spec, terr_t *err)
{
	rr_plan_t *rp = bson_malloc0(sizeof(*rp));

	if (expr_parse(expr_spec, pc->scope, &rp->e, err) != 0) {
		bson_free(rp);
		return -1;
	}
	{
		/* explain: always the $replaceRoot form */
		bson_t *ex = bson_new(), inner;
		bson_append_document_begin(ex, "$replaceRoot", -1, &inner);
		bv_append(&inner, "newRoot", -1, expr_spec);
		bson_append_document_end(ex, &inner);
		agg_pctx_add(pc, &agg_stages_basic[4], rp, ex);
	}
	return 0;
}

static int
rr_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;
	bson_iter_t it;
	bool found = false;
	bson_value_t nr;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40228, "expected an object as specification for $replaceRoot stage, got %s",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "newRoot") == 0) {
			nr = *bson_iter_value(&it);
			found = true;
		} else {
			return terr_set(err, 40415, "BSON field '$replaceRoot.%s' is an unknown field.",
			    bson_iter_key(&it));
		}
	}
	if (!found)
		return terr_set(err, 40414, "BSON field '$replaceRoot.newRoot' is missing but a required field");
	return rr_add(pc, &nr, spec, err);
}

static int
rw_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	return rr_add(pc, spec, spec, err);
}

typedef struct rr_state {
	bson_t out;
} rr_state_t;


AGG_DEFINE_OPEN_WITH_OUT(rr_open, rr_state_t)

bool
agg_replace_root_path(const agg_rt_t *rt, const char **path)
{
	const rr_plan_t *rp = rt->st->plan;

	return rt->st->def->open == rr_open && expr_is_root_path(rp->e, path);
}

static int
rr_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const rr_plan_t *rp = rt->st->plan;
	rr_state_t *rs = rt->state;
	const bson_t *in;
	bson_value_t v;
	int rc;

	rc = agg_rt_pull(rt, &in, err);
	if (rc != 1)
		return rc;
	RET(agg_eval(rt, rp->e, in, true, &v, err));
	if (v.value_type != BSON_TYPE_DOCUMENT) {
		char *vs = v.value_type == BSON_TYPE_EOD ? bson_strdup("MISSING") : bv_to_mongo_string(&v);
		char *ds = bv_doc_to_mongo_string(in);
		terr_set(err, 40228,
		    "'replacement document' must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s",
		    vs, bv_type_name(v.value_type), ds);
		bson_free(vs);
		bson_free(ds);
		return -1;
	}
	{
		bson_t d;
		agg_value_doc(&v, &d);
		bson_reinit(&rs->out);
		bson_concat(&rs->out, &d);
	}
	*out = &rs->out;
	return 1;
}

static void
rr_close(agg_rt_t *rt)
{
	rr_state_t *rs = rt->state;

	bson_destroy(&rs->out);
	bson_free(rs);
}

/* ---- $unwind ------------------------------------------------------------ */

typedef struct unwind_plan {
	char *path;           /* without the '$' */
	char *index_field;    /* includeArrayIndex or NULL */
	bool preserve;
} unwind_plan_t;

typedef struct unwind_state {
	bson_t out;
	const bson_t *in;     /* the document being unwound (view from input) */
	bson_t arr;           /* view of its array */
	bson_iter_t it;
	int64_t idx;
	bool active;
	int64_t emitted;      /* index of the element the last output holds, or -1 */
	agg_slot_filler_t *filler;    /* includeArrayIndex fills a removed field's slot, or NULL */
} unwind_state_t;

static void
unwind_free_plan(void *plan)
{
	unwind_plan_t *up = plan;

	bson_free(up->path);
	bson_free(up->index_field);
	bson_free(up);
}

static int
unwind_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	unwind_plan_t *up;
	const char *path = NULL, *idx = NULL;
	bool preserve = false;

	if (spec->value_type == BSON_TYPE_UTF8) {
		path = spec->value.v_utf8.str;
	} else if (spec->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;
		agg_value_doc(spec, &d);
		bson_iter_init(&it, &d);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "path") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&it))
					return terr_set(err, 28808,
					    "expected a string as the path for $unwind stage, got %s",
					    bv_type_name(bson_iter_type(&it)));
				path = bson_iter_utf8(&it, NULL);
			} else if (strcmp(k, "includeArrayIndex") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&it) || bson_iter_utf8(&it, NULL)[0] == '\0')
					return terr_set(err, 28810,
					    "expected a non-empty string for the includeArrayIndex  option to $unwind stage, got %s",
					    bv_type_name(bson_iter_type(&it)));
				idx = bson_iter_utf8(&it, NULL);
				if (idx[0] == '$')
					return terr_set(err, 28822,
					    "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s",
					    idx);
			} else if (strcmp(k, "preserveNullAndEmptyArrays") == 0) {
				if (!BSON_ITER_HOLDS_BOOL(&it))
					return terr_set(err, 28809,
					    "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s",
					    bv_type_name(bson_iter_type(&it)));
				preserve = bson_iter_bool(&it);
			} else {
				return terr_set(err, 28811, "unrecognized option to $unwind stage: %s", k);
			}
		}
		if (path == NULL)
			return terr_set(err, 28812, "no path specified to $unwind stage");
	} else {
		return terr_set(err, 15981,
		    "expected either a string or an object as specification for $unwind stage, got %s",
		    bv_type_name(spec->value_type));
	}
	if (path[0] != '$')
		return terr_set(err, 28818,
		    "path option to $unwind stage should be prefixed with a '$': %s", path);
	if (path[1] == '\0' || path[1] == '$')
		return terr_set(err, 40352, "FieldPath cannot be constructed with empty string");
	up = bson_malloc0(sizeof(*up));
	up->path = bson_strdup(path + 1);
	up->index_field = idx ? bson_strdup(idx) : NULL;
	up->preserve = preserve;
	{
		bson_t *ex = bson_new(), inner;
		bson_append_document_begin(ex, "$unwind", -1, &inner);
		BSON_APPEND_UTF8(&inner, "path", path);
		if (idx)
			BSON_APPEND_UTF8(&inner, "includeArrayIndex", idx);
		if (preserve)
			BSON_APPEND_BOOL(&inner, "preserveNullAndEmptyArrays", true);
		bson_append_document_end(ex, &inner);
		agg_pctx_add(pc, &agg_stages_basic[6], up, ex);
	}
	return 0;
}

static int
unwind_open(agg_rt_t *rt, terr_t *err)
{
	const unwind_plan_t *up = rt->st->plan;
	unwind_state_t *us = tm_alloc0(sizeof(*us));

	bson_init(&us->out);
	us->emitted = -1;
	rt->state = us;
	if (up->index_field != NULL)
		us->filler = agg_slot_filler_new(rt, up->index_field);
	return 0;
}

/* out = in with path set to v (NULL = removed) and the index field. */
static void
unwind_emit(const unwind_plan_t *up, unwind_state_t *us, const bson_t *in, const bson_value_t *v,
    bool remove, const bson_value_t *index)
{
	bson_reinit(&us->out);
	if (up->index_field == NULL) {
		agg_doc_set_path(in, up->path, remove ? NULL : v, &us->out);
		return;
	}
	{
		bson_t tmp = BSON_INITIALIZER;
		agg_doc_set_path(in, up->path, remove ? NULL : v, &tmp);
		agg_doc_set_path(&tmp, up->index_field, index, &us->out);
		bson_destroy(&tmp);
	}
}

static int unwind_next_doc(agg_rt_t *rt, const bson_t **out, terr_t *err);

void
agg_unwind_set_current(const agg_rt_t *rt, int64_t index)
{
	unwind_state_t *us = rt->state;

	us->emitted = index;
}

bool
agg_unwind_current(const agg_rt_t *rt, const char **path, int64_t *index)
{
	const unwind_plan_t *up = rt->st->plan;
	const unwind_state_t *us = rt->state;

	if (rt->st->def->open != unwind_open)
		return false;
	*path = up->path;
	*index = us != NULL ? us->emitted : -1;
	return true;
}

static int
unwind_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	unwind_state_t *us = rt->state;
	int rc = unwind_next_doc(rt, out, err);

	if (rc == 1 && us->filler != NULL)
		*out = agg_slot_filler_apply(us->filler, *out);
	return rc;
}

static int
unwind_next_doc(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const unwind_plan_t *up = rt->st->plan;
	unwind_state_t *us = rt->state;
	bson_value_t v, nullv = {.value_type = BSON_TYPE_NULL};
	int rc;

	us->emitted = -1;
	for (;;) {
		if (us->active) {
			if (bson_iter_next(&us->it)) {
				bson_value_t ix = {.value_type = BSON_TYPE_INT64, .value.v_int64 = us->idx++};
				us->emitted = ix.value.v_int64;
				unwind_emit(up, us, us->in, bson_iter_value(&us->it), false, &ix);
				*out = &us->out;
				return 1;
			}
			us->active = false;
		}
		rc = agg_rt_pull(rt, &us->in, err);
		if (rc != 1)
			return rc;
		if (!agg_doc_get_path(us->in, up->path, &v))
			v.value_type = BSON_TYPE_EOD;
		if (v.value_type == BSON_TYPE_ARRAY) {
			agg_value_doc(&v, &us->arr);
			if (bson_empty(&us->arr)) {
				if (!up->preserve)
					continue;
				unwind_emit(up, us, us->in, NULL, true, &nullv);
				*out = &us->out;
				return 1;
			}
			bson_iter_init(&us->it, &us->arr);
			us->idx = 0;
			us->active = true;
			continue;
		}
		if (v.value_type == BSON_TYPE_EOD || v.value_type == BSON_TYPE_NULL ||
		    v.value_type == BSON_TYPE_UNDEFINED) {
			if (!up->preserve)
				continue;
			if (up->index_field == NULL) {
				*out = us->in;
				return 1;
			}
			bson_reinit(&us->out);
			agg_doc_set_path(us->in, up->index_field, &nullv, &us->out);
			*out = &us->out;
			return 1;
		}
		/* a scalar unwinds to itself */
		if (up->index_field == NULL) {
			*out = us->in;
			return 1;
		}
		bson_reinit(&us->out);
		agg_doc_set_path(us->in, up->index_field, &nullv, &us->out);
		*out = &us->out;
		return 1;
	}
}

static void
unwind_close(agg_rt_t *rt)
{
	unwind_state_t *us = rt->state;

	bson_destroy(&us->out);
	agg_slot_filler_free(us->filler);
	bson_free(us);
}

/* ---- $documents --------------------------------------------------------- */

typedef struct docs_state {
	bool evaluated;
	bson_value_t arr;     /* owned copy of the evaluated array */
	bson_t view;
	bson_iter_t it;
	bson_t out;
} docs_state_t;

static int
docs_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	rr_plan_t *rp = bson_malloc0(sizeof(*rp));

	if (expr_parse(spec, pc->scope, &rp->e, err) != 0) {
		bson_free(rp);
		return -1;
	}
	agg_pctx_add(pc, &agg_stages_basic[7], rp, agg_explain_doc("$documents", spec));
	return 0;
}

AGG_DEFINE_OPEN_WITH_OUT(docs_open, docs_state_t)

static int
docs_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const rr_plan_t *rp = rt->st->plan;
	docs_state_t *ds = rt->state;

	if (!ds->evaluated) {
		bson_value_t v;
		ds->evaluated = true;
		RET(agg_eval(rt, rp->e, NULL, true, &v, err));
		if (v.value_type != BSON_TYPE_ARRAY)
			return terr_set(err, 5858203, "an array is expected");
		bson_value_copy(&v, &ds->arr);
		agg_value_doc(&ds->arr, &ds->view);
		bson_iter_init(&ds->it, &ds->view);
	}
	if (ds->arr.value_type != BSON_TYPE_ARRAY || !bson_iter_next(&ds->it))
		return 0;
	if (!BSON_ITER_HOLDS_DOCUMENT(&ds->it)) {
		char *vs = bv_to_mongo_string(bson_iter_value(&ds->it));
		terr_set(err, 40228,
		    "'replacement document' must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: {}",
		    vs, bv_type_name(bson_iter_type(&ds->it)));
		bson_free(vs);
		return -1;
	}
	{
		bson_t d;
		agg_value_doc(bson_iter_value(&ds->it), &d);
		bson_reinit(&ds->out);
		bson_concat(&ds->out, &d);
	}
	*out = &ds->out;
	return 1;
}

static void
docs_close(agg_rt_t *rt)
{
	docs_state_t *ds = rt->state;

	if (ds->evaluated && ds->arr.value_type == BSON_TYPE_ARRAY)
		bson_value_destroy(&ds->arr);
	bson_destroy(&ds->out);
	bson_free(ds);
}

/* ---- $sample ------------------------------------------------------------ */

/* mongod's design: each document gets a random key and goes into a top-k
 * sort on it (k = size), so $sample holds at most size documents, and past
 * the sort memory limit spills like $sort (or fails with 292 without disk
 * use) -- nothing is ever sized from the size, which may be 2^63 - 1. */
typedef struct sample_state {
	sort_spec_t *spec;        /* {r: 1} */
	sorter_t *sorter;         /* {r: <random in [0, 1)>, d: <document>} */
	bool filled;
	bson_t out;               /* the current document: d of the sorter's entry */
} sample_state_t;

/* A number's value as mongod's safeNumberLong gives it. */
static int64_t
sample_size_of(const bson_value_t *v)
{
	int64_t n;

	if (bv_as_int64_exact(v, &n))
		return n;
	return tm_double_to_i64_sat(bv_as_double(v));
}

static int
sample_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	count_plan_t *cp;
	bson_t d;
	bson_iter_t it;
	bool found = false;
	int64_t n = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 28745, "the $sample stage specification must be an object");
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "size") == 0) {
			if (!bv_is_number(bson_iter_value(&it)))
				return terr_set(err, 28746, "size argument to $sample must be a number");
			/* mongod: safeNumberLong (NaN 0, saturating), then > 0 */
			n = sample_size_of(bson_iter_value(&it));
			found = true;
		} else {
			return terr_set(err, 28748, "unrecognized option to $sample: %s", bson_iter_key(&it));
		}
	}
	if (!found)
		return terr_set(err, 28749, "$sample stage must specify a size");
	RET(tm_count_cap(n, 1, INT64_MAX, err, 28747, "size argument to $sample must be a positive integer"));
	cp = bson_malloc0(sizeof(*cp));
	cp->n = n;
	agg_pctx_add(pc, &agg_stages_basic[8], cp, agg_explain_doc("$sample", spec));
	return 0;
}

AGG_DEFINE_OPEN_WITH_OUT(sample_open, sample_state_t)

static uint64_t
rand64(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)random() << 32 ^ (uint64_t)random();
	return r;
}

static int
sample_fill(agg_rt_t *rt, terr_t *err)
{
	const count_plan_t *cp = rt->st->plan;
	sample_state_t *ss = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *d;
	bson_t *spec, w;
	int rc, ret;

	spec = BCON_NEW("r", BCON_INT32(1));
	ret = sort_spec_parse(spec, &ss->spec, err);
	bson_destroy(spec);
	if (ret != 0)
		return -1;
	ss->sorter = sorter_new(ss->spec, cp->n, h != NULL && h->allow_disk_use,
	                        h != NULL && h->sort_memory_limit > 0 ? h->sort_memory_limit :
	                                                               (uint64_t)AGG_MEMORY_LIMIT);
	if (h != NULL && h->spill_dir != NULL)
		sorter_set_spill_dir(ss->sorter, h->spill_dir);
	bson_init(&w);        /* one buffer for every wrapper: the sorter copies it */
	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		bson_reinit(&w);
		BSON_APPEND_DOUBLE(&w, "r", (double)(rand64() >> 11) * 0x1p-53);
		BSON_APPEND_DOCUMENT(&w, "d", d);
		ret = sorter_add(ss->sorter, &w, err);
		if (ret == 0 && tm_interrupt_check(err) != 0)
			ret = -1;
		if (ret != 0)
			break;
	}
	bson_destroy(&w);
	if (ret != 0 || rc < 0)
		return -1;
	return sorter_finish_ex(ss->sorter, err);
}

static int
sample_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	sample_state_t *ss = rt->state;
	const bson_t *e;
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;
	int rc;

	if (!ss->filled) {
		ss->filled = true;
		RET(sample_fill(rt, err));
	}
	if ((rc = sorter_next_ex(ss->sorter, &e, err)) <= 0)
		return rc;
	/* borrowed from the sorter's entry until the next call, as a stage's
	 * output may be */
	if (!bson_iter_init_find(&it, e, "d") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_INTERNAL_ERROR, "$sample lost a document");
	bson_iter_document(&it, &len, &data);
	bson_destroy(&ss->out);
	if (!bson_init_static(&ss->out, data, len))
		return terr_set(err, TERR_INTERNAL_ERROR, "$sample lost a document");
	*out = &ss->out;
	return 1;
}

static void
sample_close(agg_rt_t *rt)
{
	sample_state_t *ss = rt->state;

	if (ss->sorter != NULL)
		sorter_free(ss->sorter);
	if (ss->spec != NULL)
		sort_spec_free(ss->spec);
	bson_destroy(&ss->out);
	bson_free(ss);
}

static void
plain_free(void *plan)
{
	bson_free(plan);
}

/* ---- $redact ------------------------------------------------------------ */

/* $$KEEP, $$PRUNE and $$DESCEND are mongod variables whose values are the
 * strings "keep", "prune" and "descend"; the expression language does not
 * know them, so the spec is rewritten with those constants. */
static void
redact_rewrite(const bson_t *in, bson_t *out, bool array)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (BSON_ITER_HOLDS_UTF8(&it)) {
			const char *v = bson_iter_utf8(&it, NULL);
			const char *c = strcmp(v, "$$KEEP") == 0 ? "keep" : strcmp(v, "$$PRUNE") == 0 ? "prune" :
			    strcmp(v, "$$DESCEND") == 0 ? "descend" : NULL;
			if (c != NULL) {
				bson_t lit;
				bson_append_document_begin(out, k, -1, &lit);
				BSON_APPEND_UTF8(&lit, "$literal", c);
				bson_append_document_end(out, &lit);
				continue;
			}
		}
		if ((BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && strcmp(k, "$literal") != 0) {
			bson_t sub, child;
			bool arr = BSON_ITER_HOLDS_ARRAY(&it);
			agg_value_doc(bson_iter_value(&it), &sub);
			if (arr)
				bson_append_array_begin(out, k, -1, &child);
			else
				bson_append_document_begin(out, k, -1, &child);
			redact_rewrite(&sub, &child, arr);
			if (arr)
				bson_append_array_end(out, &child);
			else
				bson_append_document_end(out, &child);
			continue;
		}
		bson_append_iter(out, k, -1, &it);
	}
	(void)array;
}

static int
redact_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	rr_plan_t *rp = bson_malloc0(sizeof(*rp));
	bson_t holder = BSON_INITIALIZER, tmp = BSON_INITIALIZER;
	bson_iter_t it;
	int ret;

	bv_append(&tmp, "e", 1, spec);
	redact_rewrite(&tmp, &holder, false);
	bson_iter_init(&it, &holder);
	bson_iter_next(&it);
	ret = expr_parse(bson_iter_value(&it), pc->scope, &rp->e, err);
	bson_destroy(&holder);
	bson_destroy(&tmp);
	if (ret != 0) {
		bson_free(rp);
		return -1;
	}
	agg_pctx_add(pc, &agg_stages_basic[9], rp, agg_explain_doc("$redact", spec));
	return 0;
}

/* 1 keep, 0 prune, 2 descend */
static int
redact_decide(agg_rt_t *rt, const bson_t *cur, int *what, terr_t *err)
{
	const rr_plan_t *rp = rt->st->plan;
	bson_value_t v;

	expr_env_set_current(rt->env, cur);
	RET(expr_eval(rp->e, rt->env, &v, err));
	if (v.value_type == BSON_TYPE_UTF8) {
		if (strcmp(v.value.v_utf8.str, "keep") == 0) {
			*what = 1;
			return 0;
		}
		if (strcmp(v.value.v_utf8.str, "prune") == 0) {
			*what = 0;
			return 0;
		}
		if (strcmp(v.value.v_utf8.str, "descend") == 0) {
			*what = 2;
			return 0;
		}
	}
	{
		char *str = v.value_type == BSON_TYPE_EOD ? bson_strdup("MISSING") : bv_to_mongo_string(&v);
		terr_set(err, 17053,
		    "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s",
		    str);
		bson_free(str);
	}
	return -1;
}

static int redact_doc(agg_rt_t *rt, const bson_t *in, bson_t *out, bool *keep, int depth, terr_t *err);

static int
redact_array(agg_rt_t *rt, const bson_t *in, bson_t *out, int depth, terr_t *err)
{
	bson_iter_t it;
	uint32_t i = 0;
	char key[16];
	const char *k;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		bson_t sub, child;
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t tmp = BSON_INITIALIZER;
			bool keep;
			agg_value_doc(bson_iter_value(&it), &sub);
			if (redact_doc(rt, &sub, &tmp, &keep, depth + 1, err) != 0) {
				bson_destroy(&tmp);
				return -1;
			}
			if (keep) {
				bson_uint32_to_string(i++, &k, key, sizeof(key));
				bson_append_document(out, k, -1, &tmp);
			}
			bson_destroy(&tmp);
		} else if (BSON_ITER_HOLDS_ARRAY(&it)) {
			agg_value_doc(bson_iter_value(&it), &sub);
			bson_uint32_to_string(i++, &k, key, sizeof(key));
			bson_append_array_begin(out, k, -1, &child);
			if (redact_array(rt, &sub, &child, depth + 1, err) != 0) {
				bson_append_array_end(out, &child);
				return -1;
			}
			bson_append_array_end(out, &child);
		} else {
			bson_uint32_to_string(i++, &k, key, sizeof(key));
			bson_append_iter(out, k, -1, &it);
		}
	}
	return 0;
}

static int
redact_doc(agg_rt_t *rt, const bson_t *in, bson_t *out, bool *keep, int depth, terr_t *err)
{
	bson_iter_t it;
	int what;

	*keep = false;
	if (depth > 200)
		return terr_set(err, TERR_OVERFLOW, "$redact: document nesting too deep");
	RET(redact_decide(rt, in, &what, err));
	if (what == 0)
		return 0;
	*keep = true;
	if (what == 1) {
		bson_concat(out, in);
		return 0;
	}
	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		bson_t sub, child;
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t tmp = BSON_INITIALIZER;
			bool k;
			agg_value_doc(bson_iter_value(&it), &sub);
			if (redact_doc(rt, &sub, &tmp, &k, depth + 1, err) != 0) {
				bson_destroy(&tmp);
				return -1;
			}
			if (k)
				bson_append_document(out, bson_iter_key(&it), -1, &tmp);
			bson_destroy(&tmp);
		} else if (BSON_ITER_HOLDS_ARRAY(&it)) {
			agg_value_doc(bson_iter_value(&it), &sub);
			bson_append_array_begin(out, bson_iter_key(&it), -1, &child);
			if (redact_array(rt, &sub, &child, depth + 1, err) != 0) {
				bson_append_array_end(out, &child);
				return -1;
			}
			bson_append_array_end(out, &child);
		} else {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
		}
	}
	return 0;
}

static int
redact_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	rr_state_t *rs = rt->state;
	const bson_t *in;
	bool keep;
	int rc;

	for (;;) {
		rc = agg_rt_pull(rt, &in, err);
		if (rc != 1)
			return rc;
		expr_env_reset(rt->env);
		expr_env_set_root(rt->env, in);
		bson_reinit(&rs->out);
		RET(redact_doc(rt, in, &rs->out, &keep, 0, err));
		if (keep) {
			*out = &rs->out;
			return 1;
		}
	}
}

/* The order of rows matters: parse functions refer to their own row. */
const agg_stage_def_t agg_stages_basic[] = {
	{"$match", match_parse, match_open, match_next, match_close, match_free_plan, 0},
	{"$limit", limit_parse, counter_open, limit_next, counter_close, plain_free, 0},
	{"$skip", skip_parse, counter_open, skip_next, counter_close, plain_free, 0},
	{"$count", cnt_parse, cnt_open, cnt_next, cnt_close, cnt_free_plan, 0},
	{"$replaceRoot", rr_parse, rr_open, rr_next, rr_close, rr_free_plan, 0},
	{"$replaceWith", rw_parse, rr_open, rr_next, rr_close, rr_free_plan, 0},
	{"$unwind", unwind_parse, unwind_open, unwind_next, unwind_close, unwind_free_plan, 0},
	{"$documents", docs_parse, docs_open, docs_next, docs_close, rr_free_plan,
	    AGG_F_FIRST | AGG_F_NO_COLL},
	{"$sample", sample_parse, sample_open, sample_next, sample_close, plain_free, 0},
	{"$redact", redact_parse, rr_open, redact_next, rr_close, rr_free_plan, 0},
	{NULL},
};
