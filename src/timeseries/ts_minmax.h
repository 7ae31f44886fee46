/*
 * ts_minmax.h -- a bucket's control.min / control.max, field by field as
 * mongod's timeseries::bucket_catalog::MinMax keeps them:
 *  - scalars of one canonical type: the BSON comparison's min / max;
 *  - values of different canonical types: the whole value of the lower
 *    (min) / higher (max) type (numbers < strings < objects < arrays < ...);
 *  - two objects: field by field, recursively (control.max.b of {c: 1, d: 5}
 *    and {c: 3} is {c: 3, d: 5}, a document no measurement holds); a field
 *    one of them lacks keeps the other's bound; new fields are placed where
 *    mongod's lock-step walk puts them;
 *  - two arrays: position by position (a longer array's extra positions keep
 *    their values).
 * So for a path p under a field whose min and max are both objects, every
 * measurement's value at p lies between control.min.p and control.max.p
 * (the bucket filter's subfield bounds rely on it, ts_bucket.c).  Strings
 * compare by the simple collation (as Tamga's whole-value bounds did).
 */
#ifndef TAMGA_TIMESERIES_TS_MINMAX_H
#define TAMGA_TIMESERIES_TS_MINMAX_H

#include <stdbool.h>
#include <bson/bson.h>

#include "bson/value.h"

/*
 * Widen *bound (the min when dir < 0, the max when dir > 0; unset when
 * *any is false) by v.  *bound is shallow: it points into v's or the
 * bound's storage; a bound merged from two documents or arrays is built in
 * *own (a bson_t the caller frees with bson_destroy once the bound is no
 * longer used; the previous *own is freed here when replaced).  Scalars of
 * one canonical type cost one comparison, no allocation.
 */
void ts_minmax_widen(bson_value_t *bound, bool *any, bson_t **own, const bson_value_t *v, int dir);

/* ts_minmax_widen for a column's min and max at once (*any shared: both
 * are set together), the scalar case inline (ingest's per-value cost: two
 * comparisons, as whole-value bounds had). */
static inline void
ts_minmax_widen2(bson_value_t *min, bson_value_t *max, bool *any, bson_t **own_min, bson_t **own_max,
                 const bson_value_t *v)
{
	bool t = true;

	if (!*any) {
		*min = *max = *v;
		*any = true;
		return;
	}
	if (v->value_type != BSON_TYPE_DOCUMENT && v->value_type != BSON_TYPE_ARRAY &&
	    min->value_type != BSON_TYPE_DOCUMENT && min->value_type != BSON_TYPE_ARRAY &&
	    max->value_type != BSON_TYPE_DOCUMENT && max->value_type != BSON_TYPE_ARRAY) {
		if (bv_compare(v, min) < 0)
			*min = *v;
		if (bv_compare(v, max) > 0)
			*max = *v;
		return;
	}
	ts_minmax_widen(min, &t, own_min, v, -1);
	ts_minmax_widen(max, &t, own_max, v, 1);
}

/*
 * The control.min (dir < 0) or control.max (dir > 0) document of the n
 * measurements ms (every top-level field but skip), appended to out.
 * For tests and for callers without column bookkeeping.
 */
void ts_minmax_doc(const bson_t *const *ms, int n, const char *skip, int dir, bson_t *out);

#endif
