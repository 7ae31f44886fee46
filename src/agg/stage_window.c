/*
 * stage_window.c -- $setWindowFields (partitions, sortBy, document and range
 * windows) and $fill, which mongod rewrites into $setWindowFields ($locf,
 * $linearFill) plus $addFields ($ifNull).
 *
 * The stage holds its whole input (100 MB limit, as $sort), orders it by
 * partition then sortBy, and computes each output field per partition:
 * accumulators (expr/accum.h) over the document's window -- computed once
 * for a whole-partition window, incrementally for [unbounded, n] windows,
 * directly otherwise -- and the window-only functions $documentNumber,
 * $rank, $denseRank, $shift, $derivative, $integral, $expMovingAvg, $locf and
 * $linearFill.
 */
#include "agg/agg_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agg/agg_doc.h"
#include "bson/value.h"
#include "common/mem.h"
#include "expr/accum.h"

typedef enum {
	WF_ACCUM, WF_DOCNUM, WF_RANK, WF_DENSE_RANK, WF_SHIFT, WF_DERIV, WF_INTEGRAL, WF_EMA,
	WF_LOCF, WF_LINEAR,
} wf_kind_t;

enum { WB_UNBOUNDED, WB_CURRENT, WB_NUMBER };

typedef struct wbound {
	int kind;
	double n;
} wbound_t;

typedef struct wfield {
	char *path;
	wf_kind_t kind;
	accum_t *acc;
	expr_t *input;            /* argument of the window-only functions */
	expr_t *deflt;            /* $shift default */
	int64_t by;               /* $shift */
	double alpha;             /* $expMovingAvg */
	double unit_ms;           /* $derivative/$integral unit, 0 = none */
	bool has_window, range;
	wbound_t lo, hi;
	double range_unit_ms;     /* range window over dates, 0 = numbers */
} wfield_t;

typedef struct window_plan {
	expr_t *partition;        /* NULL: one partition */
	agg_sort_spec_t sort;     /* nkeys 0: no sortBy */
	wfield_t *fields;
	int n;
} window_plan_t;

static void
window_free_plan(void *plan)
{
	window_plan_t *wp = plan;
	int i;

	expr_destroy(wp->partition);
	agg_sort_spec_destroy(&wp->sort);
	for (i = 0; i < wp->n; i++) {
		bson_free(wp->fields[i].path);
		accum_destroy(wp->fields[i].acc);
		expr_destroy(wp->fields[i].input);
		expr_destroy(wp->fields[i].deflt);
	}
	bson_free(wp->fields);
	bson_free(wp);
}

static const struct {
	const char *name;
	double ms;
} time_units[] = {
	{"millisecond", 1}, {"second", 1000}, {"minute", 60000}, {"hour", 3600000},
	{"day", 86400000}, {"week", 604800000}, {NULL, 0},
};

static int
parse_unit(const bson_value_t *v, double *ms, terr_t *err)
{
	int i;

	if (v->value_type != BSON_TYPE_UTF8)
		return terr_set(err, TERR_FAILED_TO_PARSE, "'unit' must be a string");
	for (i = 0; time_units[i].name != NULL; i++)
		if (strcmp(time_units[i].name, v->value.v_utf8.str) == 0) {
			*ms = time_units[i].ms;
			return 0;
		}
	if (strcmp(v->value.v_utf8.str, "month") == 0 || strcmp(v->value.v_utf8.str, "quarter") == 0 ||
	    strcmp(v->value.v_utf8.str, "year") == 0)
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "window units of months, quarters and years are not supported by Tamga yet");
	return terr_set(err, TERR_FAILED_TO_PARSE, "unknown time unit value: %s", v->value.v_utf8.str);
}

static int
parse_bound(const bson_value_t *v, bool documents, wbound_t *b, terr_t *err)
{
	if (v->value_type == BSON_TYPE_UTF8) {
		if (strcmp(v->value.v_utf8.str, "unbounded") == 0)
			b->kind = WB_UNBOUNDED;
		else if (strcmp(v->value.v_utf8.str, "current") == 0)
			b->kind = WB_CURRENT;
		else
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "Window bounds must be 'unbounded', 'current', or a number.");
		return 0;
	}
	if (!bv_is_number(v))
		return terr_set(err, TERR_FAILED_TO_PARSE, documents ?
		    "Numeric document-based bounds must be an integer" :
		    "Range-based bounds expression must be a number");
	b->kind = WB_NUMBER;
	b->n = bv_as_double(v);
	/* mongod keeps document bounds as an int (Value::integral): past the
	 * int32 range they are refused like fractions, so i + n below cannot
	 * overflow nor be a double out of int64's range */
	if (documents && (b->n != floor(b->n) || b->n < INT32_MIN || b->n > INT32_MAX))
		return terr_set(err, TERR_FAILED_TO_PARSE, "Numeric document-based bounds must be an integer");
	return 0;
}

static int
parse_window(wfield_t *f, const bson_value_t *v, const agg_sort_spec_t *sort, terr_t *err)
{
	bson_t d, arr;
	bson_iter_t it, ai;
	const bson_value_t *docs = NULL, *range = NULL, *unit = NULL;
	bson_value_t docs_v, range_v, unit_v;   /* iterator values are overwritten by the next step */
	double lo, hi;

	if (v->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "'window' field must be an object");
	agg_value_doc(v, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "documents") == 0)
			docs = (docs_v = *bson_iter_value(&it), &docs_v);
		else if (strcmp(k, "range") == 0)
			range = (range_v = *bson_iter_value(&it), &range_v);
		else if (strcmp(k, "unit") == 0)
			unit = (unit_v = *bson_iter_value(&it), &unit_v);
		else
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field");
	}
	if (docs && range)
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "Window bounds can specify either 'documents' or 'unit', not both.");
	if (unit && !range)
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "Window bounds can only specify 'unit' with range-based bounds.");
	if (!docs && !range)
		return 0;
	v = docs ? docs : range;
	if (v->value_type != BSON_TYPE_ARRAY || !agg_value_doc(v, &arr) || bson_count_keys(&arr) != 2) {
		char *s = bv_to_mongo_string(v);
		terr_set(err, TERR_FAILED_TO_PARSE, "Window bounds must be a 2-element array: %s: %s",
		    docs ? "documents" : "range", s);
		bson_free(s);
		return -1;
	}
	bson_iter_init(&ai, &arr);
	bson_iter_next(&ai);
	RET(parse_bound(bson_iter_value(&ai), docs != NULL, &f->lo, err));
	bson_iter_next(&ai);
	RET(parse_bound(bson_iter_value(&ai), docs != NULL, &f->hi, err));
	lo = f->lo.kind == WB_CURRENT ? 0 : f->lo.n;
	hi = f->hi.kind == WB_CURRENT ? 0 : f->hi.n;
	if (f->lo.kind != WB_UNBOUNDED && f->hi.kind != WB_UNBOUNDED && lo > hi)
		return terr_set(err, 5339900, "Lower bound must not exceed upper bound: [%g, %g]", lo, hi);
	f->has_window = true;
	f->range = range != NULL;
	if (docs) {
		if ((f->lo.kind != WB_UNBOUNDED || f->hi.kind != WB_UNBOUNDED) && sort->nkeys == 0)
			return terr_set(err, 5339901, "Document-based bounds require a sortBy");
		return 0;
	}
	if (unit)
		RET(parse_unit(unit, &f->range_unit_ms, err));
	if (sort->nkeys != 1)
		return terr_set(err, 5339902, "Range-based bounds require sortBy a single field");
	if (sort->keys[0].dir != 1)
		return terr_set(err, 8947401, "Range-based bounds require an ascending sortBy");
	return 0;
}

/* Named arguments of the window-only functions. */
static int
named_args(const char *fn, const bson_value_t *arg, const char *const *names, bson_value_t *store,
    const bson_value_t **vals, terr_t *err)
{
	bson_t d;
	bson_iter_t it;
	int i;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "%s must have exactly one argument that is an object",
		    fn);
	agg_value_doc(arg, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		for (i = 0; names[i] != NULL; i++)
			if (strcmp(names[i], bson_iter_key(&it)) == 0)
				break;
		if (names[i] == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE, "%s got unexpected argument: %s", fn,
			    bson_iter_key(&it));
		store[i] = *bson_iter_value(&it);
		vals[i] = &store[i];
	}
	return 0;
}

static int
parse_function(agg_pctx_t *pc, wfield_t *f, const char *fn, const bson_value_t *arg,
    const agg_sort_spec_t *sort, terr_t *err)
{
	if (strcmp(fn, "$documentNumber") == 0 || strcmp(fn, "$rank") == 0 || strcmp(fn, "$denseRank") == 0) {
		bson_t d;
		f->kind = fn[1] == 'd' && fn[2] == 'o' ? WF_DOCNUM : fn[1] == 'r' ? WF_RANK : WF_DENSE_RANK;
		if (arg->value_type != BSON_TYPE_DOCUMENT || !agg_value_doc(arg, &d) || !bson_empty(&d))
			return terr_set(err, 5371603, "%s must be specified with '{}' as the value", fn);
		if (sort->nkeys != 1)
			return terr_set(err, 5371602,
			    "%s must be specified with a top level sortBy expression with exactly one element", fn);
		if (f->has_window)
			return terr_set(err, 5371601, "Rank style window functions take no other arguments");
		return 0;
	}
	if (strcmp(fn, "$shift") == 0) {
		static const char *const names[] = {"output", "by", "default", NULL};
		const bson_value_t *v[3] = {NULL, NULL, NULL};
		bson_value_t store[3];
		int64_t by;
		f->kind = WF_SHIFT;
		RET(named_args(fn, arg, names, store, v, err));
		if (v[0] == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE, "$shift requires an 'output' expression.");
		if (v[1] == NULL || !bv_is_number(v[1]) || !bv_as_int64_exact(v[1], &by) || by < INT32_MIN ||
		    by > INT32_MAX)
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "'$shift:by' field must be an integer, but found by: %s",
			    v[1] ? bv_type_name(v[1]->value_type) : "missing");
		f->by = by;
		if (sort->nkeys == 0)
			return terr_set(err, 5788100, "'$shift' requires a sortBy");
		if (f->has_window)
			return terr_set(err, TERR_FAILED_TO_PARSE, "$shift does not accept a 'window' field");
		RET(expr_parse(v[0], pc->scope, &f->input, err));
		if (v[2] != NULL) {
			RET(expr_parse(v[2], pc->scope, &f->deflt, err));
			if (!expr_is_constant(f->deflt, NULL))
				return terr_set(err, TERR_FAILED_TO_PARSE,
				    "'$shift:default' expression must yield a constant value.");
		}
		return 0;
	}
	if (strcmp(fn, "$derivative") == 0 || strcmp(fn, "$integral") == 0) {
		static const char *const names[] = {"input", "unit", NULL};
		const bson_value_t *v[2] = {NULL, NULL};
		bson_value_t store[2];
		f->kind = fn[1] == 'd' ? WF_DERIV : WF_INTEGRAL;
		RET(named_args(fn, arg, names, store, v, err));
		if (v[0] == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE, "%s requires an 'input' expression", fn);
		if (v[1] != NULL)
			RET(parse_unit(v[1], &f->unit_ms, err));
		if (sort->nkeys != 1)
			return terr_set(err, 5339902, "%s requires a sortBy with a single field", fn);
		if (f->kind == WF_DERIV && !f->has_window)
			return terr_set(err, 5490701, "$derivative requires explicit window bounds");
		return expr_parse(v[0], pc->scope, &f->input, err);
	}
	if (strcmp(fn, "$expMovingAvg") == 0) {
		static const char *const names[] = {"input", "N", "alpha", NULL};
		const bson_value_t *v[3] = {NULL, NULL, NULL};
		bson_value_t store[3];
		f->kind = WF_EMA;
		RET(named_args(fn, arg, names, store, v, err));
		if (v[0] == NULL || (v[1] == NULL) == (v[2] == NULL))
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "$expMovingAvg must have exactly one of 'N' or 'alpha' and an 'input'");
		if (v[1] != NULL) {
			int64_t n;
			if (!bv_is_number(v[1]) || !bv_as_int64_exact(v[1], &n) || n <= 0)
				return terr_set(err, 5433602, "'N' field must be an integer, but found type %s",
				    bv_type_name(v[1]->value_type));
			f->alpha = 2.0 / ((double)n + 1.0);
		} else {
			if (!bv_is_number(v[2]) || bv_as_double(v[2]) <= 0 || bv_as_double(v[2]) >= 1)
				return terr_set(err, 5433603, "'alpha' must be between 0 and 1 (exclusive), found alpha: %s",
				    bv_type_name(v[2]->value_type));
			f->alpha = bv_as_double(v[2]);
		}
		if (sort->nkeys == 0)
			return terr_set(err, 5433601, "$expMovingAvg requires an explicit 'sortBy'");
		if (f->has_window)
			return terr_set(err, 5433600, "$expMovingAvg does not accept a 'window' field");
		return expr_parse(v[0], pc->scope, &f->input, err);
	}
	if (strcmp(fn, "$locf") == 0 || strcmp(fn, "$linearFill") == 0) {
		f->kind = fn[2] == 'o' ? WF_LOCF : WF_LINEAR;
		if (f->has_window)
			return terr_set(err, TERR_FAILED_TO_PARSE, "%s does not accept a 'window' field", fn);
		if (f->kind == WF_LINEAR && sort->nkeys != 1)
			return terr_set(err, 605001, "$linearFill requires a single sortBy");
		return expr_parse(arg, pc->scope, &f->input, err);
	}
	if (!accum_is_known(fn))
		return terr_set(err, TERR_FAILED_TO_PARSE, "Unrecognized window function, %s", fn);
	f->kind = WF_ACCUM;
	return accum_parse(fn, arg, pc->scope, &f->acc, err);
}

static int
parse_output(agg_pctx_t *pc, window_plan_t *wp, const bson_t *output, terr_t *err)
{
	bson_iter_t it, sub;
	int n = (int)bson_count_keys(output), i;

	wp->fields = bson_malloc0(sizeof(wfield_t) * (size_t)(n + 1));
	bson_iter_init(&it, output);
	while (bson_iter_next(&it)) {
		wfield_t *f = &wp->fields[wp->n];
		const char *fn = NULL;
		bson_value_t fnarg, win;
		bool has_win = false;
		const char *k = bson_iter_key(&it);
		f->path = bson_strdup(k);
		wp->n++;
		if (k[0] == '$' || k[0] == '\0')
			return terr_set(err, 16410, "FieldPath field names may not start with '$'.");
		for (i = 0; i < wp->n - 1; i++) {
			size_t a = strlen(wp->fields[i].path), b = strlen(k);
			size_t m = a < b ? a : b;
			if (strncmp(wp->fields[i].path, k, m) == 0 && (a == b || (a > b ? wp->fields[i].path[m] : k[m]) == '.'))
				return terr_set(err, 6307900,
				    "$setWindowFields 'output' specification contains two conflicting paths");
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_FAILED_TO_PARSE,
			    "The field '%s' must be an object", k);
		bson_iter_recurse(&it, &sub);
		while (bson_iter_next(&sub)) {
			if (strcmp(bson_iter_key(&sub), "window") == 0) {
				win = *bson_iter_value(&sub);
				has_win = true;
			} else if (bson_iter_key(&sub)[0] == '$' && fn == NULL) {
				fn = bson_iter_key(&sub);
				fnarg = *bson_iter_value(&sub);
			} else if (bson_iter_key(&sub)[0] == '$') {
				return terr_set(err, TERR_FAILED_TO_PARSE,
				    "Expected a single window function, found extra: %s", bson_iter_key(&sub));
			} else {
				return terr_set(err, TERR_FAILED_TO_PARSE,
				    "Window function found an unknown argument: %s", bson_iter_key(&sub));
			}
		}
		if (fn == NULL)
			return terr_set(err, TERR_FAILED_TO_PARSE, "Expected a $-prefixed window function");
		if (has_win)
			RET(parse_window(f, &win, &wp->sort, err));
		RET(parse_function(pc, f, fn, &fnarg, &wp->sort, err));
	}
	return 0;
}

static int
window_build(agg_pctx_t *pc, const bson_value_t *partition, const bson_t *sort, const bson_t *output,
    bson_t *explain, terr_t *err)
{
	window_plan_t *wp = bson_malloc0(sizeof(*wp));
	int ret = 0;

	if (partition != NULL)
		ERR(expr_parse(partition, pc->scope, &wp->partition, err));
	if (sort != NULL)
		ERR(agg_sort_spec_parse(sort, &wp->sort, err));
	wp->sort.coll = agg_host_collation(pc->host);
	ERR(parse_output(pc, wp, output, err));
	agg_pctx_add(pc, &agg_stages_window[0], wp, explain);
	return 0;
err:
	if (explain)
		bson_destroy(explain);
	window_free_plan(wp);
	return ret;
}

static int
window_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, sort, output;
	bson_iter_t it;
	const bson_value_t *partition = NULL;
	bson_value_t pv;
	bool has_sort = false, has_output = false;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "the $setWindowFields stage specification must be an object, found %s",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "partitionBy") == 0) {
			pv = *bson_iter_value(&it);
			partition = &pv;
		} else if (strcmp(k, "sortBy") == 0 || strcmp(k, "output") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '$setWindowFields.%s' is the wrong type '%s', expected type 'object'",
				    k, bv_type_name(bson_iter_type(&it)));
			agg_value_doc(bson_iter_value(&it), k[0] == 's' ? &sort : &output);
			if (k[0] == 's')
				has_sort = true;
			else
				has_output = true;
		} else {
			return terr_set(err, 40415, "BSON field '$setWindowFields.%s' is an unknown field.", k);
		}
	}
	if (!has_output)
		return terr_set(err, 40414, "BSON field '$setWindowFields.output' is missing but a required field");
	return window_build(pc, partition, has_sort ? &sort : NULL, &output,
	    agg_explain_doc("$setWindowFields", spec), err);
}

/* ---- runtime ------------------------------------------------------------ */

typedef struct wentry {
	bson_t *doc;              /* owned copy of the input */
	bson_value_t pk;          /* partition key (owned: bson_value_copy) */
	bson_value_t *keys;       /* sort key values (borrowed from doc), in window_state_t.keyblock */
	int64_t seq;
} wentry_t;

typedef struct window_state {
	wentry_t *e;
	int64_t n, cap, i;
	bson_value_t *keyblock;   /* every entry's sort keys, nkeys per entry */
	bson_t **out;             /* computed output documents (NULL: the input unchanged) */
	bool filled;
} window_state_t;

static int
window_open(agg_rt_t *rt, terr_t *err)
{
	rt->state = bson_malloc0(sizeof(window_state_t));
	return 0;
}

static __thread const window_plan_t *tls_wp;
/* set by wentry_cmp when the operation's deadline passed or it was killed
 * during the sort: the remaining comparisons answer "equal" at once so qsort
 * ends quickly, and the caller reports the interruption (its order is then
 * discarded) */
static __thread bool tls_sort_stopped;

static void
pkey_value(const wentry_t *e, bson_value_t *v)
{
	*v = e->pk;
}

static int
wentry_cmp(const void *pa, const void *pb)
{
	const wentry_t *a = pa, *b = pb;
	bson_value_t x, y;
	int c;

	if (tls_sort_stopped)
		return 0;
	{
		terr_t e = TERR_INIT;

		if (tm_interrupt_check(&e) != 0) {
			terr_clear(&e);
			tls_sort_stopped = true;
			return 0;
		}
	}
	pkey_value(a, &x);
	pkey_value(b, &y);
	c = bv_compare(&x, &y);
	if (c == 0 && tls_wp->sort.nkeys > 0)
		c = agg_sort_compare_values(&tls_wp->sort, a->keys, b->keys);
	if (c == 0)
		c = a->seq < b->seq ? -1 : a->seq > b->seq;
	return c;
}

/* The sortBy value of entry e as a number for range windows, derivatives,
 * integrals, linear fill; dates as ms (divided by unit when given). */
static int
sort_number(const wentry_t *e, double unit_ms, bool want_date, double *out, terr_t *err)
{
	const bson_value_t *v = &e->keys[0];

	if (v->value_type == BSON_TYPE_DATE_TIME) {
		if (!want_date && unit_ms == 0)
			return terr_set(err, 5429414,
			    "Invalid range: Expected the sortBy field to be a number, but it was date");
		*out = (double)v->value.v_datetime / (unit_ms > 0 ? unit_ms : 1);
		return 0;
	}
	if (bv_is_number(v)) {
		if (want_date)
			return terr_set(err, 5429513,
			    "Invalid range: Expected the sortBy field to be a date, but it was %s",
			    bv_type_name(v->value_type));
		*out = bv_as_double(v);
		return 0;
	}
	return terr_set(err, 5429414, "Invalid range: Expected the sortBy field to be a number, but it was %s",
	    bv_type_name(v->value_type));
}

/* Window [*a, *b] (inclusive, clamped to [ps, pe)) of entry i; *a > *b = empty. */
static int
window_of(const wfield_t *f, window_state_t *ws, int64_t ps, int64_t pe, int64_t i, int64_t *a,
    int64_t *b, terr_t *err)
{
	if (!f->has_window) {
		*a = ps;
		*b = pe - 1;
		return 0;
	}
	if (!f->range) {
		*a = f->lo.kind == WB_UNBOUNDED ? ps : i + (f->lo.kind == WB_CURRENT ? 0 : (int64_t)f->lo.n);
		*b = f->hi.kind == WB_UNBOUNDED ? pe - 1 : i + (f->hi.kind == WB_CURRENT ? 0 : (int64_t)f->hi.n);
		if (*a < ps)
			*a = ps;
		if (*b > pe - 1)
			*b = pe - 1;
		return 0;
	}
	{
		bool dates = f->range_unit_ms > 0;
		double v, lo, hi, x;
		int64_t j;
		RET(sort_number(&ws->e[i], dates ? f->range_unit_ms : 0, dates, &v, err));
		lo = f->lo.kind == WB_UNBOUNDED ? -INFINITY : v + (f->lo.kind == WB_CURRENT ? 0 : f->lo.n);
		hi = f->hi.kind == WB_UNBOUNDED ? INFINITY : v + (f->hi.kind == WB_CURRENT ? 0 : f->hi.n);
		*a = pe;
		*b = ps - 1;
		for (j = ps; j < pe; j++) {
			RET(sort_number(&ws->e[j], dates ? f->range_unit_ms : 0, dates, &x, err));
			if (x >= lo && x <= hi) {
				if (*a == pe)
					*a = j;
				*b = j;
			}
		}
		if (*a == pe)
			*b = *a - 1;
		return 0;
	}
}

static int
eval_on(agg_rt_t *rt, const expr_t *e, const bson_t *doc, bson_value_t *out, terr_t *err)
{
	return agg_eval(rt, e, doc, true, out, err);
}

/* Feed one document of the window to the accumulator state st. */
static int
window_accum_add(agg_rt_t *rt, const wfield_t *f, accum_state_t *st, const bson_t *doc, terr_t *err)
{
	expr_env_reset(rt->env);
	expr_env_set_root(rt->env, doc);
	return accum_process(f->acc, st, rt->env, err);
}

/* Append st's current result to vals under key (missing reads as null). */
static int
window_accum_append(agg_rt_t *rt, const wfield_t *f, accum_state_t *st, bson_t *vals, const char *key, terr_t *err)
{
	bson_value_t v;

	expr_env_reset(rt->env);
	RET(accum_finalize(f->acc, st, rt->env, &v, err));
	if (v.value_type == BSON_TYPE_EOD)
		v.value_type = BSON_TYPE_NULL;
	bv_append(vals, key, -1, &v);
	return 0;
}

/* Accumulate entries [a, b] into a fresh state and append the result. */
static int
accum_window(agg_rt_t *rt, const wfield_t *f, window_state_t *ws, int64_t a, int64_t b, bson_t *vals,
    const char *key, terr_t *err)
{
	accum_state_t *st = accum_state_new(f->acc);
	int64_t j;
	int ret = 0;

	for (j = a; j <= b; j++) {
		ERR(tm_interrupt_check(err));
		ERR(window_accum_add(rt, f, st, ws->e[j].doc, err));
	}
	ERR(window_accum_append(rt, f, st, vals, key, err));
err:
	accum_state_destroy(st);
	return ret;
}

/* [unbounded, n] windows: one state, documents added as the window grows. */
static int
accum_running(agg_rt_t *rt, const wfield_t *f, window_state_t *ws, int64_t ps, int64_t pe, bson_t *vals,
    terr_t *err)
{
	accum_state_t *st = accum_state_new(f->acc);
	int64_t added = ps, i, a, b;
	char key[24];
	const char *k;
	int ret = 0;

	for (i = ps; i < pe; i++) {
		ERR(window_of(f, ws, ps, pe, i, &a, &b, err));
		while (added <= b) {
			ERR(window_accum_add(rt, f, st, ws->e[added].doc, err));
			added++;
		}
		bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
		ERR(window_accum_append(rt, f, st, vals, k, err));
		ERR(tm_interrupt_check(err));
	}
err:
	accum_state_destroy(st);
	return ret;
}

/* $linearFill: nulls between two numbers interpolated along sortBy. */
static int
linear_fill(agg_rt_t *rt, const wfield_t *f, window_state_t *ws, int64_t ps, int64_t pe, bson_t *vals,
    terr_t *err)
{
	double *xs = bson_malloc0(sizeof(double) * (size_t)(pe - ps + 1));
	double *ys = bson_malloc0(sizeof(double) * (size_t)(pe - ps + 1));
	bool *have = bson_malloc0(sizeof(bool) * (size_t)(pe - ps + 1));
	bson_value_t v, nullv = {.value_type = BSON_TYPE_NULL};
	char key[24];
	const char *k;
	int64_t i;
	int ret = 0;

	for (i = ps; i < pe; i++) {
		bool dates = ws->e[i].keys[0].value_type == BSON_TYPE_DATE_TIME;
		ERR(sort_number(&ws->e[i], 0, dates, &xs[i - ps], err));
		ERR(eval_on(rt, f->input, ws->e[i].doc, &v, err));
		if (bv_is_number(&v)) {
			ys[i - ps] = bv_as_double(&v);
			have[i - ps] = true;
		} else if (v.value_type != BSON_TYPE_EOD && v.value_type != BSON_TYPE_NULL) {
			ret = terr_set(err, 6050106, "Value to be filled must be numeric for $linearFill, but was %s",
			    bv_type_name(v.value_type));
			goto err;
		}
	}
	for (i = ps; i < pe; i++) {
		int64_t l, r;
		bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
		if (have[i - ps]) {
			ERR(eval_on(rt, f->input, ws->e[i].doc, &v, err));
			bv_append(vals, k, -1, &v);
			continue;
		}
		for (l = i - 1; l >= ps && !have[l - ps]; l--)
			;
		for (r = i + 1; r < pe && !have[r - ps]; r++)
			;
		if (l < ps || r >= pe || xs[r - ps] == xs[l - ps]) {
			bv_append(vals, k, -1, &nullv);
			continue;
		}
		v.value_type = BSON_TYPE_DOUBLE;
		v.value.v_double = ys[l - ps] + (ys[r - ps] - ys[l - ps]) * (xs[i - ps] - xs[l - ps]) /
		    (xs[r - ps] - xs[l - ps]);
		bv_append(vals, k, -1, &v);
	}
err:
	bson_free(xs);
	bson_free(ys);
	bson_free(have);
	return ret;
}

/* Values of field f for the partition [ps, pe) into vals (array keyed by
 * the entry index relative to ps). */
static int
compute_field(agg_rt_t *rt, const wfield_t *f, window_state_t *ws, int64_t ps, int64_t pe, bson_t *vals,
    terr_t *err)
{
	char key[24];
	const char *k;
	int64_t i, a, b;
	bson_value_t v, nullv = {.value_type = BSON_TYPE_NULL};

	switch (f->kind) {
	case WF_ACCUM: {
		bool whole = !f->has_window || (f->lo.kind == WB_UNBOUNDED && f->hi.kind == WB_UNBOUNDED);
		bool running = f->has_window && !f->range && f->lo.kind == WB_UNBOUNDED;
		if (whole) {
			bson_t one = BSON_INITIALIZER;
			bson_iter_t it;
			RET(accum_window(rt, f, ws, ps, pe - 1, &one, "v", err));
			bson_iter_init(&it, &one);
			bson_iter_next(&it);
			for (i = ps; i < pe; i++) {
				bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
				bv_append(vals, k, -1, bson_iter_value(&it));
			}
			bson_destroy(&one);
			return 0;
		}
		if (running)
			return accum_running(rt, f, ws, ps, pe, vals, err);
		for (i = ps; i < pe; i++) {
			RET(window_of(f, ws, ps, pe, i, &a, &b, err));
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			RET(accum_window(rt, f, ws, a, b, vals, k, err));
			if (tm_interrupt_check(err) != 0)
				return -1;
		}
		return 0;
	}
	case WF_DOCNUM:
	case WF_RANK:
	case WF_DENSE_RANK: {
		int64_t rank = 0, dense = 0;
		for (i = ps; i < pe; i++) {
			bool tie = i > ps && bv_compare(&ws->e[i].keys[0], &ws->e[i - 1].keys[0]) == 0;
			if (!tie) {
				rank = i - ps + 1;
				dense++;
			}
			v.value_type = BSON_TYPE_INT64;
			v.value.v_int64 = f->kind == WF_DOCNUM ? i - ps + 1 : f->kind == WF_RANK ? rank : dense;
			if (v.value.v_int64 <= INT32_MAX) {
				v.value_type = BSON_TYPE_INT32;
				v.value.v_int32 = (int32_t)v.value.v_int64;
			}
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			bv_append(vals, k, -1, &v);
		}
		return 0;
	}
	case WF_SHIFT:
		for (i = ps; i < pe; i++) {
			int64_t j = i + f->by;
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			if (j >= ps && j < pe) {
				RET(eval_on(rt, f->input, ws->e[j].doc, &v, err));
			} else if (f->deflt != NULL) {
				RET(eval_on(rt, f->deflt, ws->e[i].doc, &v, err));
			} else {
				v = nullv;
			}
			if (v.value_type == BSON_TYPE_EOD)
				v = nullv;
			bv_append(vals, k, -1, &v);
		}
		return 0;
	case WF_DERIV:
	case WF_INTEGRAL:
		for (i = ps; i < pe; i++) {
			double x0, x1, y0, y1, sum = 0;
			bool ok = true, dates = ws->e[i].keys[0].value_type == BSON_TYPE_DATE_TIME;
			int64_t j;
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			RET(window_of(f, ws, ps, pe, i, &a, &b, err));
			if (dates && f->unit_ms == 0)
				return terr_set(err, 5624900,
				    "%s with sortBy field of type date requires a 'unit'",
				    f->kind == WF_DERIV ? "$derivative" : "$integral");
			if (f->kind == WF_DERIV) {
				if (b - a < 1) {
					bv_append(vals, k, -1, &nullv);
					continue;
				}
				RET(sort_number(&ws->e[a], f->unit_ms, dates, &x0, err));
				RET(sort_number(&ws->e[b], f->unit_ms, dates, &x1, err));
				RET(eval_on(rt, f->input, ws->e[a].doc, &v, err));
				ok = bv_is_number(&v);
				y0 = ok ? bv_as_double(&v) : 0;
				RET(eval_on(rt, f->input, ws->e[b].doc, &v, err));
				ok = ok && bv_is_number(&v);
				y1 = ok ? bv_as_double(&v) : 0;
				if (!ok || x1 == x0) {
					bv_append(vals, k, -1, &nullv);
					continue;
				}
				v.value_type = BSON_TYPE_DOUBLE;
				v.value.v_double = (y1 - y0) / (x1 - x0);
				bv_append(vals, k, -1, &v);
				continue;
			}
			for (j = a; j < b; j++) {
				RET(sort_number(&ws->e[j], f->unit_ms, dates, &x0, err));
				RET(sort_number(&ws->e[j + 1], f->unit_ms, dates, &x1, err));
				RET(eval_on(rt, f->input, ws->e[j].doc, &v, err));
				if (!bv_is_number(&v))
					continue;
				y0 = bv_as_double(&v);
				RET(eval_on(rt, f->input, ws->e[j + 1].doc, &v, err));
				if (!bv_is_number(&v))
					continue;
				y1 = bv_as_double(&v);
				sum += (x1 - x0) * (y0 + y1) / 2;
			}
			if (a > b) {
				bv_append(vals, k, -1, &nullv);
				continue;
			}
			v.value_type = BSON_TYPE_DOUBLE;
			v.value.v_double = sum;
			bv_append(vals, k, -1, &v);
		}
		return 0;
	case WF_EMA: {
		bool have = false;
		double ema = 0;
		for (i = ps; i < pe; i++) {
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			RET(eval_on(rt, f->input, ws->e[i].doc, &v, err));
			if (bv_is_number(&v)) {
				double x = bv_as_double(&v);
				ema = have ? f->alpha * x + (1 - f->alpha) * ema : x;
				have = true;
			}
			if (!have) {
				bv_append(vals, k, -1, &nullv);
				continue;
			}
			v.value_type = BSON_TYPE_DOUBLE;
			v.value.v_double = ema;
			bv_append(vals, k, -1, &v);
		}
		return 0;
	}
	case WF_LOCF: {
		bson_t last = BSON_INITIALIZER;
		for (i = ps; i < pe; i++) {
			bson_uint32_to_string((uint32_t)(i - ps), &k, key, sizeof(key));
			if (eval_on(rt, f->input, ws->e[i].doc, &v, err) != 0) {
				bson_destroy(&last);
				return -1;
			}
			if (v.value_type != BSON_TYPE_EOD && v.value_type != BSON_TYPE_NULL) {
				bson_reinit(&last);
				bv_append(&last, "", 0, &v);
				bv_append(vals, k, -1, &v);
			} else if (!bson_empty(&last)) {
				bson_iter_t it;
				bson_iter_init(&it, &last);
				bson_iter_next(&it);
				bv_append(vals, k, -1, bson_iter_value(&it));
			} else {
				bv_append(vals, k, -1, &nullv);
			}
		}
		bson_destroy(&last);
		return 0;
	}
	case WF_LINEAR:
		return linear_fill(rt, f, ws, ps, pe, vals, err);
	}
	return 0;
}

static int
window_fill(agg_rt_t *rt, terr_t *err)
{
	const window_plan_t *wp = rt->st->plan;
	window_state_t *ws = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *d;
	int64_t bytes = 0, ps, pe, i;
	int rc, f;
	bson_value_t pk;

	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		wentry_t *e;
		if (ws->n == ws->cap) {
			ws->cap = ws->cap ? ws->cap * 2 : 64;
			ws->e = bson_realloc(ws->e, sizeof(wentry_t) * (size_t)ws->cap);
		}
		RET(tm_interrupt_check(err));
		e = &ws->e[ws->n];
		memset(e, 0, sizeof(*e));
		e->doc = bson_copy(d);
		e->seq = ws->n++;
		e->pk.value_type = BSON_TYPE_NULL;
		if (wp->partition != NULL) {
			RET(agg_eval(rt, wp->partition, e->doc, true, &pk, err));
			if (pk.value_type == BSON_TYPE_ARRAY)
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "An expression used to partition cannot evaluate to value of type array");
			if (pk.value_type == BSON_TYPE_EOD)
				pk.value_type = BSON_TYPE_NULL;
		} else {
			pk.value_type = BSON_TYPE_NULL;
		}
		bson_value_copy(&pk, &e->pk);
		bytes += d->len + 96;
		if (bytes > AGG_MEMORY_LIMIT) {
			if (h != NULL && h->allow_disk_use)
				return terr_set(err, TERR_NOT_IMPLEMENTED,
				    "$setWindowFields needs more than 100 MB and spilling to disk is not supported by Tamga yet");
			return terr_set(err, 5414201,
			    "Exceeded memory limit in DocumentSourceSetWindowFields, used %lld bytes but max allowed is %lld bytes",
			    (long long)bytes, (long long)AGG_MEMORY_LIMIT);
		}
	}
	if (rc < 0)
		return -1;
	/* the sort keys of every entry in one block (a few allocations per
	 * document less: a partition of many small documents was mostly
	 * malloc and free, and its cleanup after a maxTimeMS ran long) */
	if (wp->sort.nkeys > 0 && ws->n > 0) {
		ws->keyblock = bson_malloc(sizeof(bson_value_t) * (size_t)wp->sort.nkeys * (size_t)ws->n);
		for (i = 0; i < ws->n; i++) {
			RET(tm_interrupt_check(err));
			ws->e[i].keys = &ws->keyblock[(size_t)i * (size_t)wp->sort.nkeys];
			agg_sort_key_values(&wp->sort, ws->e[i].doc, ws->e[i].keys);
		}
	}
	tls_wp = wp;
	tls_sort_stopped = false;
	if (ws->n > 1)
		qsort(ws->e, (size_t)ws->n, sizeof(wentry_t), wentry_cmp);
	if (tls_sort_stopped) {
		tls_sort_stopped = false;
		RET(tm_interrupt_check_now(err));
	}
	ws->out = bson_malloc0(sizeof(bson_t *) * (size_t)(ws->n + 1));
	for (ps = 0; ps < ws->n; ps = pe) {
		bson_value_t a, b;
		pkey_value(&ws->e[ps], &a);
		for (pe = ps + 1; pe < ws->n; pe++) {
			pkey_value(&ws->e[pe], &b);
			if (bv_compare(&a, &b) != 0)
				break;
		}
		for (f = 0; f < wp->n; f++) {
			bson_t vals = BSON_INITIALIZER;
			bson_iter_t it;
			if (compute_field(rt, &wp->fields[f], ws, ps, pe, &vals, err) != 0) {
				bson_destroy(&vals);
				return -1;
			}
			bson_iter_init(&it, &vals);
			for (i = ps; i < pe && bson_iter_next(&it); i++) {
				if (tm_interrupt_check(err) != 0) {
					bson_destroy(&vals);
					return -1;
				}
				bson_t *nd = bson_new();
				agg_doc_set_path(ws->out[i] != NULL ? ws->out[i] : ws->e[i].doc, wp->fields[f].path,
				    bson_iter_value(&it), nd);
				if (ws->out[i] != NULL)
					bson_destroy(ws->out[i]);
				ws->out[i] = nd;
			}
			bson_destroy(&vals);
		}
	}
	return 0;
}

static int
window_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	window_state_t *ws = rt->state;

	if (!ws->filled) {
		ws->filled = true;
		RET(window_fill(rt, err));
	}
	if (ws->out == NULL || ws->i >= ws->n)
		return 0;
	*out = ws->out[ws->i] != NULL ? ws->out[ws->i] : ws->e[ws->i].doc;
	ws->i++;
	return 1;
}

static void
window_close(agg_rt_t *rt)
{
	window_state_t *ws = rt->state;
	int64_t i;

	for (i = 0; i < ws->n; i++) {
		bson_destroy(ws->e[i].doc);
		bson_value_destroy(&ws->e[i].pk);
		if (ws->out != NULL && ws->out[i] != NULL)
			bson_destroy(ws->out[i]);
	}
	bson_free(ws->e);
	bson_free(ws->keyblock);
	bson_free(ws->out);
	bson_free(ws);
}

/* ---- $fill --------------------------------------------------------------- */

/* Another field after the one m is on. */
static bool
fill_more(const bson_iter_t *m)
{
	bson_iter_t next = *m;

	return bson_iter_next(&next);
}

static int
fill_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, output, sort, methods = BSON_INITIALIZER, values = BSON_INITIALIZER, pfields;
	bson_iter_t it, oi;
	const bson_value_t *partition = NULL;
	bson_value_t pv;
	bson_t *pdoc = NULL;
	bool has_sort = false, has_output = false, has_pfields = false, linear = false;
	int ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "the $fill stage specification must be an object, found %s",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "partitionBy") == 0) {
			pv = *bson_iter_value(&it);
			partition = &pv;
		} else if (strcmp(k, "partitionByFields") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			agg_value_doc(bson_iter_value(&it), &pfields);
			has_pfields = true;
		} else if (strcmp(k, "sortBy") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			agg_value_doc(bson_iter_value(&it), &sort);
			has_sort = true;
		} else if (strcmp(k, "output") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			agg_value_doc(bson_iter_value(&it), &output);
			has_output = true;
		} else if (strcmp(k, "partitionBy") == 0 || strcmp(k, "partitionByFields") == 0 ||
		    strcmp(k, "sortBy") == 0 || strcmp(k, "output") == 0) {
			return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '$fill.%s' is the wrong type '%s'", k,
			    bv_type_name(bson_iter_type(&it)));
		} else {
			return terr_set(err, 40415, "BSON field '$fill.%s' is an unknown field.", k);
		}
	}
	if (!has_output)
		return terr_set(err, 40414, "BSON field '$fill.output' is missing but a required field");
	if (partition != NULL && has_pfields)
		return terr_set(err, 6050204, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'");
	/* output: {f: {value: e}} -> $addFields {$ifNull}; {f: {method}} -> window */
	bson_iter_init(&oi, &output);
	while (bson_iter_next(&oi)) {
		const char *f = bson_iter_key(&oi);
		bson_iter_t m;
		if (!BSON_ITER_HOLDS_DOCUMENT(&oi)) {
			ret = terr_set(err, TERR_FAILED_TO_PARSE, "Each fill output specification must be an object");
			goto err;
		}
		bson_iter_recurse(&oi, &m);
		if (!bson_iter_next(&m) || fill_more(&m)) {
			ret = terr_set(err, 6050201, "Exactly one of 'value' or 'method' must be specified in a $fill output");
			goto err;
		}
		if (strcmp(bson_iter_key(&m), "value") == 0) {
			bson_t e, arr;
			char *fp = bson_strdup_printf("$%s", f);
			bson_append_document_begin(&values, f, -1, &e);
			bson_append_array_begin(&e, "$ifNull", -1, &arr);
			BSON_APPEND_UTF8(&arr, "0", fp);
			bson_append_iter(&arr, "1", 1, &m);
			bson_append_array_end(&e, &arr);
			bson_append_document_end(&values, &e);
			bson_free(fp);
		} else if (strcmp(bson_iter_key(&m), "method") == 0 && BSON_ITER_HOLDS_UTF8(&m) &&
		    (strcmp(bson_iter_utf8(&m, NULL), "locf") == 0 || strcmp(bson_iter_utf8(&m, NULL), "linear") == 0)) {
			bson_t e;
			char *fp = bson_strdup_printf("$%s", f);
			bool lin = strcmp(bson_iter_utf8(&m, NULL), "linear") == 0;
			linear = linear || lin;
			bson_append_document_begin(&methods, f, -1, &e);
			BSON_APPEND_UTF8(&e, lin ? "$linearFill" : "$locf", fp);
			bson_append_document_end(&methods, &e);
			bson_free(fp);
		} else if (strcmp(bson_iter_key(&m), "method") == 0) {
			ret = terr_set(err, 6050202, "Method must be either locf or linear");
			goto err;
		} else {
			ret = terr_set(err, 40415, "BSON field '$fill.output.%s.%s' is an unknown field.", f,
			    bson_iter_key(&m));
			goto err;
		}
	}
	if (linear && !has_sort) {
		ret = terr_set(err, 6050203, "sortBy required if any output field specifies a 'linear' fill method");
		goto err;
	}
	if (has_pfields) {
		bson_iter_t pi;
		pdoc = bson_new();
		bson_t inner;
		bson_append_document_begin(pdoc, "", 0, &inner);
		bson_iter_init(&pi, &pfields);
		while (bson_iter_next(&pi)) {
			char *fp;
			if (!BSON_ITER_HOLDS_UTF8(&pi)) {
				bson_append_document_end(pdoc, &inner);
				ret = terr_set(err, TERR_TYPE_MISMATCH, "partitionByFields must be an array of strings");
				goto err;
			}
			fp = bson_strdup_printf("$%s", bson_iter_utf8(&pi, NULL));
			BSON_APPEND_UTF8(&inner, bson_iter_utf8(&pi, NULL), fp);
			bson_free(fp);
		}
		bson_append_document_end(pdoc, &inner);
		bson_iter_init(&pi, pdoc);
		bson_iter_next(&pi);
		pv = *bson_iter_value(&pi);
		partition = &pv;
	}
	if (!bson_empty(&methods))
		ERR(window_build(pc, partition, has_sort ? &sort : NULL, &methods,
		    agg_explain_doc("$setWindowFields", spec), err));
	else if (has_sort) {
		bson_value_t sv = {.value_type = BSON_TYPE_DOCUMENT};
		sv.value.v_doc.data = (uint8_t *)bson_get_data(&sort);
		sv.value.v_doc.data_len = sort.len;
		ERR(agg_stage_lookup("$sort")->parse(pc, &sv, err));
	}
	if (!bson_empty(&values)) {
		bson_value_t av = {.value_type = BSON_TYPE_DOCUMENT};
		const char *saved = pc->name;
		av.value.v_doc.data = (uint8_t *)bson_get_data(&values);
		av.value.v_doc.data_len = values.len;
		pc->name = "$addFields";
		ret = agg_stage_lookup("$addFields")->parse(pc, &av, err);
		pc->name = saved;
		if (ret != 0)
			goto err;
	}
err:
	if (pdoc != NULL)
		bson_destroy(pdoc);
	bson_destroy(&methods);
	bson_destroy(&values);
	return ret;
}

const agg_stage_def_t agg_stages_window[] = {
	{"$setWindowFields", window_parse, window_open, window_next, window_close, window_free_plan, 0},
	{"$fill", fill_parse, NULL, NULL, NULL, NULL, 0},
	{NULL},
};
