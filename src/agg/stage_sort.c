/*
 * stage_sort.c -- $sort (with the top-k of a following $limit) on
 * query/sort.h's sorter, and the sort key rules other stages share
 * ($setWindowFields, $densify).
 *
 * Keys are MongoDB's: for each field the values reached along the path with
 * query semantics (arrays traversed); ascending takes the smallest, descending
 * the largest; a missing field sorts as null, an empty array below null.
 * Documents are held in memory up to the host's sort memory limit (100 MB);
 * beyond it, with allowDiskUse (the default), sorted runs are written to
 * the host's spill directory and merged, and without it the stage fails
 * with 292, as a pushed-down sort does.
 */
#include "agg/agg_private.h"

#include <stdlib.h>
#include <string.h>

#include "bson/path.h"
#include "bson/value.h"
#include "common/mem.h"
#include "query/sort.h"

/* ---- sort specs --------------------------------------------------------- */

int
agg_sort_spec_parse(const bson_t *spec, agg_sort_spec_t *out, terr_t *err)
{
	sort_spec_t *ss = NULL;
	size_t i, n;

	memset(out, 0, sizeof(*out));
	if (bson_empty(spec))
		return terr_set(err, 15976, "$sort stage must have at least one sort key");
	/* find's parser: the same keys, directions and errors */
	RET(sort_spec_parse(spec, &ss, err));
	n = sort_spec_nkeys(ss);
	out->keys = bson_malloc0(sizeof(agg_sort_key_t) * (n + 1));
	for (i = 0; i < n; i++) {
		out->keys[i].path = bson_strdup(sort_spec_path(ss, i));
		out->keys[i].dir = sort_spec_direction(ss, i);
	}
	out->nkeys = (int)n;
	sort_spec_free(ss);
	if (n == 0) {
		agg_sort_spec_destroy(out);
		return terr_set(err, 15976, "$sort stage must have at least one sort key");
	}
	return 0;
}

void
agg_sort_spec_destroy(agg_sort_spec_t *s)
{
	int i;

	for (i = 0; i < s->nkeys; i++)
		bson_free(s->keys[i].path);
	bson_free(s->keys);
	memset(s, 0, sizeof(*s));
}

typedef struct key_walk {
	int dir;
	bool have;
	bool saw_empty_array;
	bson_value_t best;
	const coll_t *coll;
} key_walk_t;

static bool
key_visit(const bpath_hit_t *hit, void *ctx)
{
	key_walk_t *kw = ctx;
	bson_value_t v = hit->value;

	if (v.value_type == BSON_TYPE_ARRAY && !hit->leaf_element) {
		/* the whole leaf array: its elements were reported already */
		if (v.value.v_doc.data_len <= 5)
			kw->saw_empty_array = true;
		return true;
	}
	if (v.value_type == BSON_TYPE_EOD)
		v.value_type = BSON_TYPE_NULL;
	if (!kw->have || (kw->dir > 0 ? bv_compare_coll(&v, &kw->best, kw->coll) < 0 :
	                   bv_compare_coll(&v, &kw->best, kw->coll) > 0)) {
		kw->best = v;
		kw->have = true;
	}
	return true;
}

void
agg_sort_key_values(const agg_sort_spec_t *s, const bson_t *doc, bson_value_t *vals)
{
	int i;

	for (i = 0; i < s->nkeys; i++) {
		key_walk_t kw = {.dir = s->keys[i].dir, .coll = s->coll};
		bpath_walk(doc, s->keys[i].path, true, key_visit, &kw);
		if (kw.have)
			vals[i] = kw.best;
		else if (kw.saw_empty_array)
			vals[i].value_type = BSON_TYPE_UNDEFINED;
		else
			vals[i].value_type = BSON_TYPE_NULL;
	}
}

int
agg_sort_compare_values(const agg_sort_spec_t *s, const bson_value_t *a, const bson_value_t *b)
{
	int i, c;

	for (i = 0; i < s->nkeys; i++) {
		c = bv_compare_coll(&a[i], &b[i], s->coll);
		if (c != 0)
			return s->keys[i].dir > 0 ? c : -c;
	}
	return 0;
}

/* ---- $sort -------------------------------------------------------------- */

/* The stage runs the find executor's sorter (query/sort.h): the same keys,
 * order, top-k and memory limit as a $sort pushed down to the source. */
typedef struct sort_plan {
	sort_spec_t *spec;    /* owned, with the pipeline's collation */
	int64_t limit;        /* a following $limit (top-k), 0 = none */
} sort_plan_t;

/* slot_srcs: the exclusions upstream whose removed fields' slots a later
 * $addFields / $set fills (agg_sort_carry_slots).  Each document added
 * carries, as the sorter's aux bytes (counted and dropped with it), one
 * skeleton per exclusion (agg_proj_slot_skeleton; an empty document when
 * it has no slot there), none at all when it has no slot anywhere; views
 * are what the exclusions are handed as it leaves. */
typedef struct sort_state {
	sorter_t *sorter;
	bool filled;
	const agg_rt_t **slot_srcs;   /* agg_carry_add's list, owned */
	int nslot, slot_cap;
	bson_t sk;
	uint8_t *aux;
	size_t aux_len, aux_cap;
	bson_t *views;
} sort_state_t;

static void
sort_free_plan(void *plan)
{
	sort_plan_t *sp = plan;

	sort_spec_free(sp->spec);
	bson_free(sp);
}

static int
sort_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	sort_plan_t *sp;
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 15973, "the $sort key specification must be an object");
	agg_value_doc(spec, &d);
	if (bson_empty(&d))
		return terr_set(err, 15976, "$sort stage must have at least one sort key");
	sp = bson_malloc0(sizeof(*sp));
	/* {$meta: "textScore"} after a leading $text $match: pushed down
	 * right after it (the find executor sorts by the score), later it
	 * sorts by the "$textScore" field the source then carries; without
	 * a $text, 40218 */
	if (sort_spec_parse_meta(&d, pc->depth == 0 && agg_first_is_text_match(pc->p), &sp->spec, err) != 0) {
		bson_free(sp);
		return -1;
	}
	if (sort_spec_nkeys(sp->spec) == 0) {     /* {$natural: 1} alone */
		sort_free_plan(sp);
		return terr_set(err, 15976, "$sort stage must have at least one sort key");
	}
	sort_spec_set_collation(sp->spec, agg_host_collation(pc->host));
	agg_pctx_add(pc, &agg_stages_sort[0], sp, agg_explain_doc("$sort", spec));
	return 0;
}

static int
sort_open(agg_rt_t *rt, terr_t *err)
{
	const sort_plan_t *sp = rt->st->plan;
	const agg_host_t *h = rt->x->p->host;
	sort_state_t *ss = tm_alloc0(sizeof(sort_state_t));     /* holds a bson_t */

	ss->sorter = sorter_new(sp->spec, sp->limit, h != NULL && h->allow_disk_use,
	                        h != NULL && h->sort_memory_limit > 0 ? h->sort_memory_limit :
	                                                               (uint64_t)AGG_MEMORY_LIMIT);
	if (h != NULL && h->spill_dir != NULL)
		sorter_set_spill_dir(ss->sorter, h->spill_dir);
	rt->state = ss;
	return 0;
}

static int
sort_fill(agg_rt_t *rt, terr_t *err)
{
	sort_state_t *ss = rt->state;
	const bson_t *d;
	int rc;

	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		if (ss->nslot > 0) {
			ss->aux_len = agg_proj_slots_pack(ss->slot_srcs, ss->nslot, &ss->sk, &ss->aux, &ss->aux_cap);
			RET(sorter_add_aux(ss->sorter, d, ss->aux, (uint32_t)ss->aux_len, err));
		} else {
			RET(sorter_add(ss->sorter, d, err));
		}
		if (tm_interrupt_check(err) != 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	return sorter_finish_ex(ss->sorter, err);
}

static int
sort_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	sort_state_t *ss = rt->state;

	if (!ss->filled) {
		ss->filled = true;
		RET(sort_fill(rt, err));
	}
	int rc = sorter_next_ex(ss->sorter, out, err);
	if (rc == 1 && ss->nslot > 0) {
		/* none when the document came back from a spilled run */
		uint32_t len;
		const uint8_t *aux = sorter_last_aux(ss->sorter, &len);
		agg_proj_slots_unpack(ss->slot_srcs, ss->nslot, aux, len, ss->views);
	}
	return rc;
}

bool
agg_sort_carry_slots(const agg_rt_t *sort_rt, const agg_rt_t *excl)
{
	sort_state_t *ss = sort_rt->state;

	for (int j = 0; j < ss->nslot; j++)
		if (ss->slot_srcs[j] == excl)
			return true;
	if (ss->filled)
		return false;
	if (ss->nslot == 0)
		bson_init(&ss->sk);
	return agg_carry_add(&ss->slot_srcs, &ss->views, &ss->nslot, &ss->slot_cap, excl);
}

bool
agg_is_sort_stage(const agg_rt_t *rt)
{
	return rt->st->def == &agg_stages_sort[0];
}

static void
sort_close(agg_rt_t *rt)
{
	sort_state_t *ss = rt->state;

	sorter_free(ss->sorter);
	if (ss->nslot > 0)
		bson_destroy(&ss->sk);
	bson_free((void *)ss->slot_srcs);
	bson_free(ss->views);
	bson_free(ss->aux);
	bson_free(ss);
}

/* A $limit right after a $sort bounds what the sort keeps (top-k). */
void
agg_sort_set_limit(agg_stage_t *st, int64_t limit)
{
	sort_plan_t *sp = st->plan;

	if (sp->limit == 0 || limit < sp->limit)
		sp->limit = limit;
}

const agg_stage_def_t agg_stages_sort[] = {
	{"$sort", sort_parse, sort_open, sort_next, sort_close, sort_free_plan, 0},
	{NULL},
};
