/*
 * stage_densify.c -- $densify: fill gaps in a numeric or date sequence,
 * per partition, with new documents holding only the partition fields and
 * the sequence field.
 *
 * The stage orders its input by the partition fields then the field (as
 * mongod's rewrite into $sort + $_internalDensify does), then walks each
 * partition emitting the existing documents and the missing grid values
 * min + k * step ("full": over every partition's range, "partition": each
 * its own, [lo, hi): explicit, upper bound excluded).  Documents without a
 * value in the field pass through unchanged.
 */
#include "agg/agg_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agg/agg_doc.h"
#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"

enum { DB_FULL, DB_PARTITION, DB_EXPLICIT };

typedef struct densify_plan {
	char *field;
	char **parts;
	int nparts;
	double step;
	int unit;                 /* index into units; -1 = numbers */
	int bounds;
	bson_value_t lo, hi;      /* DB_EXPLICIT (numbers or dates) */
	agg_sort_spec_t sort;     /* partition fields, then field */
} densify_plan_t;

static const struct {
	const char *name;
	int64_t ms;               /* 0: calendar months (months per step) */
	int months;
} units[] = {
	{"millisecond", 1, 0}, {"second", 1000, 0}, {"minute", 60000, 0}, {"hour", 3600000, 0},
	{"day", 86400000, 0}, {"week", 604800000, 0}, {"month", 0, 1}, {"quarter", 0, 3},
	{"year", 0, 12}, {NULL, 0, 0},
};

static void
densify_free_plan(void *plan)
{
	densify_plan_t *dp = plan;
	int i;

	bson_free(dp->field);
	for (i = 0; i < dp->nparts; i++)
		bson_free(dp->parts[i]);
	bson_free(dp->parts);
	agg_sort_spec_destroy(&dp->sort);
	bson_free(dp);
}

static int
densify_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	densify_plan_t *dp;
	bson_t d, range, parts;
	bson_iter_t it;
	const char *field = NULL;
	bool has_range = false, has_parts = false;
	int ret = 0, i;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_FAILED_TO_PARSE, "the $densify stage specification must be an object, found %s",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "field") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
			field = bson_iter_utf8(&it, NULL);
		} else if (strcmp(k, "range") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			agg_value_doc(bson_iter_value(&it), &range);
			has_range = true;
		} else if (strcmp(k, "partitionByFields") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			agg_value_doc(bson_iter_value(&it), &parts);
			has_parts = true;
		} else if (strcmp(k, "field") == 0 || strcmp(k, "range") == 0 || strcmp(k, "partitionByFields") == 0) {
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '$densify.%s' is the wrong type '%s', expected type '%s'", k,
			    bv_type_name(bson_iter_type(&it)),
			    k[0] == 'f' ? "string" : k[0] == 'r' ? "object" : "array");
		} else {
			return terr_set(err, 40415, "BSON field '$densify.%s' is an unknown field.", k);
		}
	}
	if (field == NULL)
		return terr_set(err, 40414, "BSON field '$densify.field' is missing but a required field");
	if (!has_range)
		return terr_set(err, 40414, "BSON field '$densify.range' is missing but a required field");
	if (field[0] == '$' || field[0] == '\0')
		return terr_set(err, 16410, "FieldPath field names may not start with '$'.");
	dp = bson_malloc0(sizeof(*dp));
	dp->field = bson_strdup(field);
	dp->unit = -1;
	if (has_parts) {
		dp->parts = bson_malloc0(sizeof(char *) * (bson_count_keys(&parts) + 1));
		bson_iter_init(&it, &parts);
		while (bson_iter_next(&it)) {
			if (!BSON_ITER_HOLDS_UTF8(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '$densify.partitionByFields' must be an array of strings");
				goto err;
			}
			if (strcmp(bson_iter_utf8(&it, NULL), field) == 0) {
				ret = terr_set(err, 8993000,
				    "$densify 'field' cannot be the same as one of the fields in 'partitionByFields'");
				goto err;
			}
			dp->parts[dp->nparts++] = bson_strdup(bson_iter_utf8(&it, NULL));
		}
	}
	{
		bool has_step = false, has_bounds = false;
		bson_iter_init(&it, &range);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			const bson_value_t *v = bson_iter_value(&it);
			if (strcmp(k, "step") == 0) {
				if (!bv_is_number(v) || !(bv_as_double(v) > 0)) {
					ret = terr_set(err, 5733401,
					    "the step parameter in a range statement must be a strictly positive numeric value");
					goto err;
				}
				dp->step = bv_as_double(v);
				has_step = true;
			} else if (strcmp(k, "unit") == 0 && v->value_type == BSON_TYPE_UTF8) {
				for (i = 0; units[i].name != NULL; i++)
					if (strcmp(units[i].name, v->value.v_utf8.str) == 0)
						dp->unit = i;
				if (dp->unit < 0) {
					ret = terr_set(err, TERR_FAILED_TO_PARSE, "unknown time unit value: %s",
					    v->value.v_utf8.str);
					goto err;
				}
			} else if (strcmp(k, "bounds") == 0) {
				has_bounds = true;
				if (v->value_type == BSON_TYPE_UTF8 && strcmp(v->value.v_utf8.str, "full") == 0) {
					dp->bounds = DB_FULL;
				} else if (v->value_type == BSON_TYPE_UTF8 &&
				    strcmp(v->value.v_utf8.str, "partition") == 0) {
					dp->bounds = DB_PARTITION;
				} else if (v->value_type == BSON_TYPE_ARRAY) {
					bson_t arr;
					bson_iter_t ai;
					agg_value_doc(v, &arr);
					if (bson_count_keys(&arr) != 2) {
						ret = terr_set(err, 5733403,
						    "a bounding array in a range statement must have exactly two elements");
						goto err;
					}
					bson_iter_init(&ai, &arr);
					bson_iter_next(&ai);
					dp->lo = *bson_iter_value(&ai);
					bson_iter_next(&ai);
					dp->hi = *bson_iter_value(&ai);
					if (!((bv_is_number(&dp->lo) && bv_is_number(&dp->hi)) ||
					        (dp->lo.value_type == BSON_TYPE_DATE_TIME &&
					            dp->hi.value_type == BSON_TYPE_DATE_TIME)) ||
					    bv_compare(&dp->lo, &dp->hi) > 0) {
						ret = terr_set(err, 5733402,
						    "a bounding array must be an ascending array of either two dates or two numbers");
						goto err;
					}
					/* plain scalars: keep by value */
					dp->bounds = DB_EXPLICIT;
				} else {
					ret = terr_set(err, 5946802,
					    "the bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates");
					goto err;
				}
			} else {
				ret = terr_set(err, 40415, "BSON field '$densify.range.%s' is an unknown field.", k);
				goto err;
			}
		}
		if (!has_step || !has_bounds) {
			ret = terr_set(err, 40414, "BSON field '$densify.range.%s' is missing but a required field",
			    has_step ? "bounds" : "step");
			goto err;
		}
	}
	if (dp->bounds == DB_EXPLICIT && ((dp->lo.value_type == BSON_TYPE_DATE_TIME) != (dp->unit >= 0))) {
		ret = terr_set(err, 5733409,
		    dp->unit >= 0 ? "numeric bounds may not have unit parameter" : "date bounds must have a unit");
		goto err;
	}
	if (dp->unit >= 0 && dp->step != floor(dp->step)) {
		ret = terr_set(err, 5733409, "a step with a unit must be a whole number");
		goto err;
	}
	if (dp->bounds == DB_PARTITION && dp->nparts == 0) {
		ret = terr_set(err, 5733408, "one may not specify the bounds 'partition' without partitionByFields");
		goto err;
	}
	{
		bson_t s = BSON_INITIALIZER;
		for (i = 0; i < dp->nparts; i++)
			BSON_APPEND_INT32(&s, dp->parts[i], 1);
		BSON_APPEND_INT32(&s, dp->field, 1);
		ret = agg_sort_spec_parse(&s, &dp->sort, err);
		dp->sort.coll = agg_host_collation(pc->host);
		bson_destroy(&s);
		if (ret != 0)
			goto err;
	}
	agg_pctx_add(pc, &agg_stages_densify[0], dp, agg_explain_doc("$densify", spec));
	return 0;
err:
	densify_free_plan(dp);
	return ret;
}

/* ---- runtime ------------------------------------------------------------ */

typedef struct dentry {
	bson_t *doc;
	bson_value_t *keys;       /* partition values..., field value (borrowed from doc) */
	int64_t seq;
} dentry_t;

typedef struct densify_state {
	dentry_t *e;
	int64_t n, cap;
	bson_t **out;
	int64_t nout, capout, i;
	bool filled;
} densify_state_t;

static __thread const densify_plan_t *tls_dp;

static int
dentry_cmp(const void *pa, const void *pb)
{
	const dentry_t *a = pa, *b = pb;
	int c = agg_sort_compare_values(&tls_dp->sort, a->keys, b->keys);

	return c != 0 ? c : (a->seq < b->seq ? -1 : a->seq > b->seq);
}

static int
densify_open(agg_rt_t *rt, terr_t *err)
{
	rt->state = bson_malloc0(sizeof(densify_state_t));
	return 0;
}

static void
emit(densify_state_t *ds, bson_t *doc)
{
	if (ds->nout == ds->capout) {
		ds->capout = ds->capout ? ds->capout * 2 : 64;
		ds->out = bson_realloc(ds->out, sizeof(bson_t *) * (size_t)ds->capout);
	}
	ds->out[ds->nout++] = doc;
}

/* The value of a grid point as a number (dates: ms). */
static double
as_num(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_DATE_TIME ? (double)v->value.v_datetime : bv_as_double(v);
}

/* Next grid point after g (dates step by calendar months when the unit is). */
static double
grid_next(const densify_plan_t *dp, double g)
{
	if (dp->unit < 0)
		return g + dp->step;
	if (units[dp->unit].ms > 0)
		return g + dp->step * (double)units[dp->unit].ms;
	{
		/* months past +-3.6e9 leave the date range (+-2.9e8 years): the
		 * grid ends there; within it, years and months fit tm's ints */
		double months = dp->step * units[dp->unit].months;
		if (!(fabs(months) < 3.6e9) || !(fabs(g) < 9.2e18))
			return months < 0 ? -INFINITY : INFINITY;
		time_t t = (time_t)floor(g / 1000);
		double frac = g - (double)t * 1000;
		struct tm tm;
		if (gmtime_r(&t, &tm) == NULL)
			return INFINITY;
		tm.tm_year += (int)(months / 12);
		tm.tm_mon += (int)fmod(months, 12);
		return (double)timegm(&tm) * 1000 + frac;
	}
}

static bson_t *
new_doc(const densify_plan_t *dp, const dentry_t *model, double g, bool date)
{
	bson_t *d = bson_new(), *tmp;
	bson_value_t v;
	int i;

	for (i = 0; i < dp->nparts; i++) {
		if (model->keys[i].value_type == BSON_TYPE_NULL)
			continue;  /* missing partition field stays missing */
		tmp = bson_new();
		agg_doc_set_path(d, dp->parts[i], &model->keys[i], tmp);
		bson_destroy(d);
		d = tmp;
	}
	if (date) {
		/* (a date grid point is a double: 2^63 is where DMAX rounds to) */
		v.value_type = BSON_TYPE_DATE_TIME;
		v.value.v_datetime = tm_double_to_i64_sat(g);
	} else if (g == floor(g) && fabs(g) < 2147483647.0) {
		v.value_type = BSON_TYPE_INT32;
		v.value.v_int32 = (int32_t)g;
	} else {
		v.value_type = BSON_TYPE_DOUBLE;
		v.value.v_double = g;
	}
	tmp = bson_new();
	agg_doc_set_path(d, dp->field, &v, tmp);
	bson_destroy(d);
	return tmp;
}

/* mongod's internalQueryMaxAllowedDensifyDocs (default 500000): the
 * documents one $densify may generate, the cap on a loop whose length a
 * request's step and bounds decide (a step of 1e-300, a bound of -inf). */
#define DENSIFY_MAX_DOCS 500000

static int
densify_too_many(long long generated, terr_t *err)
{
	return tm_count_cap(generated, 0, DENSIFY_MAX_DOCS, err, 5897900, "Generated %lld documents in $densify, "
	                    "which is over the limit of %d. Increase the 'internalQueryMaxAllowedDensifyDocs' "
	                    "parameter to allow more generated documents", generated, DENSIFY_MAX_DOCS);
}

static int
densify_fill(agg_rt_t *rt, terr_t *err)
{
	const densify_plan_t *dp = rt->st->plan;
	densify_state_t *ds = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *d;
	int64_t bytes = 0, ps, pe, i, generated = 0;
	int rc, nk = dp->nparts + 1;
	bool have_global = false, date = dp->unit >= 0;
	double gmin = 0, gmax = 0;

	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		dentry_t *e;
		const bson_value_t *fv;
		if (ds->n == ds->cap) {
			ds->cap = ds->cap ? ds->cap * 2 : 64;
			ds->e = bson_realloc(ds->e, sizeof(dentry_t) * (size_t)ds->cap);
		}
		RET(tm_interrupt_check(err));
		e = &ds->e[ds->n];
		e->doc = bson_copy(d);
		e->seq = ds->n++;
		e->keys = bson_malloc(sizeof(bson_value_t) * (size_t)nk);
		agg_sort_key_values(&dp->sort, e->doc, e->keys);
		fv = &e->keys[dp->nparts];
		if (fv->value_type != BSON_TYPE_NULL && fv->value_type != BSON_TYPE_UNDEFINED) {
			if (date ? fv->value_type != BSON_TYPE_DATE_TIME : !bv_is_number(fv))
				return terr_set(err, date ? 6053600 : 5733201, date ?
				    "Densify expected a date value in field '%s' because a unit was given" :
				    "Densify field type must be numeric, found %s", dp->field);
			if (!have_global || as_num(fv) < gmin)
				gmin = as_num(fv);
			if (!have_global || as_num(fv) > gmax)
				gmax = as_num(fv);
			have_global = true;
		}
		bytes += d->len + 64;
		if (bytes > AGG_MEMORY_LIMIT)
			return terr_set(err, h != NULL && h->allow_disk_use ? TERR_NOT_IMPLEMENTED :
			    TERR_QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED,
			    "$densify exceeded the memory limit of %lld bytes", (long long)AGG_MEMORY_LIMIT);
	}
	if (rc < 0)
		return -1;
	tls_dp = dp;
	/* mongod adds a date step with dateAdd, which refuses an amount that
	 * cannot fit the date range (isDateAddAmountValid: 2^64 ms) */
	if (ds->n > 0 && dp->unit > 0 &&
	    !(fabs(dp->step) * (units[dp->unit].ms ? (double)units[dp->unit].ms :
	                        units[dp->unit].months * 2629746000.0) < 18446744073709551616.0))
		return terr_set(err, 5976500, "invalid dateAdd 'amount' parameter value: %lld %s",
		                (long long)tm_double_to_i64_sat(dp->step), units[dp->unit].name);
	if (ds->n > 1)
		qsort(ds->e, (size_t)ds->n, sizeof(dentry_t), dentry_cmp);
	for (ps = 0; ps < ds->n; ps = pe) {
		double lo, hi, g;
		bool have = false, hi_incl = true;
		int k;
		for (pe = ps + 1; pe < ds->n; pe++) {
			for (k = 0; k < dp->nparts; k++)
				if (bv_compare_coll(&ds->e[pe].keys[k], &ds->e[ps].keys[k], dp->sort.coll) != 0)
					break;
			if (k < dp->nparts)
				break;
		}
		/* the partition's range */
		lo = hi = 0;
		for (i = ps; i < pe; i++) {
			const bson_value_t *fv = &ds->e[i].keys[dp->nparts];
			if (fv->value_type == BSON_TYPE_NULL || fv->value_type == BSON_TYPE_UNDEFINED)
				continue;
			if (!have || as_num(fv) < lo)
				lo = as_num(fv);
			if (!have || as_num(fv) > hi)
				hi = as_num(fv);
			have = true;
		}
		if (dp->bounds == DB_FULL) {
			lo = gmin;
			hi = gmax;
			have = have_global;
		} else if (dp->bounds == DB_EXPLICIT) {
			lo = as_num(&dp->lo);
			hi = as_num(&dp->hi);
			hi_incl = false;
			have = true;
		}
		g = lo;
		for (i = ps; i < pe; i++) {
			const bson_value_t *fv = &ds->e[i].keys[dp->nparts];
			if (fv->value_type != BSON_TYPE_NULL && fv->value_type != BSON_TYPE_UNDEFINED && have) {
				double x = as_num(fv);
				while (g < x && (hi_incl ? g <= hi : g < hi)) {
					emit(ds, new_doc(dp, &ds->e[i], g, date));
					g = grid_next(dp, g);
					if (++generated > DENSIFY_MAX_DOCS)
						return densify_too_many(generated, err);
					RET(tm_interrupt_check(err));
				}
				if (g == x)
					g = grid_next(dp, g);
			}
			emit(ds, ds->e[i].doc);
			ds->e[i].doc = NULL;
			RET(tm_interrupt_check(err));
		}
		while (have && (hi_incl ? g <= hi : g < hi)) {
			emit(ds, new_doc(dp, &ds->e[pe - 1], g, date));
			g = grid_next(dp, g);
			if (++generated > DENSIFY_MAX_DOCS)
				return densify_too_many(generated, err);
			RET(tm_interrupt_check(err));
		}
		if (tm_interrupt_check(err) != 0)
			return -1;
	}
	return 0;
}

static int
densify_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	densify_state_t *ds = rt->state;

	if (!ds->filled) {
		ds->filled = true;
		RET(densify_fill(rt, err));
	}
	if (ds->i >= ds->nout)
		return 0;
	*out = ds->out[ds->i++];
	return 1;
}

static void
densify_close(agg_rt_t *rt)
{
	densify_state_t *ds = rt->state;
	int64_t i;

	for (i = 0; i < ds->n; i++) {
		if (ds->e[i].doc != NULL)
			bson_destroy(ds->e[i].doc);
		bson_free(ds->e[i].keys);
	}
	for (i = 0; i < ds->nout; i++)
		bson_destroy(ds->out[i]);
	bson_free(ds->e);
	bson_free(ds->out);
	bson_free(ds);
}

const agg_stage_def_t agg_stages_densify[] = {
	{"$densify", densify_parse, densify_open, densify_next, densify_close, densify_free_plan, 0},
	{NULL},
};
