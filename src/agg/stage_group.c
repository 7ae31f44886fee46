/*
 * stage_group.c -- $group and the stages mongod rewrites into it:
 * $sortByCount ($group + $sort) and $bucket ($group on a $switch + $sort).
 *
 * Groups live in a hash table keyed by the _id value with MongoDB's
 * equality (1, 1.0 and NumberLong(1) are one group; the first spelling seen
 * is the one output).  Each group holds one accumulator state per output
 * field (expr/accum.h).  Output follows first-seen order.  Memory is counted
 * (keys + accumulator states): past the limit (100 MB,
 * internalDocumentSourceGroupMaxMemoryBytes) the stage fails with 292
 * without allowDiskUse.  With it, as mongod, the groups held so far are
 * written out as partial states ({k: {"": key}, s: {<i>: state}}) into a
 * sorter ordered by key (query/sort.h, which writes sorted runs to the
 * spill directory and merges them) and the table starts empty again; at the
 * end the sorted partial groups of one key, which come out together and in
 * the order they were written, are merged (accum_merge) and finalized.  A
 * group that spilled outputs in key order, as mongod's.  $bucketAuto sorts
 * its input on the same sorter, so it spills as a $sort does.
 *
 * Asked by a later $addFields / $set (agg_group_carry_slots), the group
 * keeps with the Document an accumulator of $$ROOT holds the slots of an
 * exclusion upstream (stage_project.c's head comment): one set for
 * $first / $last / $top / $bottom, handed back as the group is output; one
 * per kept element for the array accumulators, by arrival ordinal
 * (accum_kept_seq), handed back element by element on demand
 * (agg_group_slot_element).  A spilled group loses them.
 */
#include "agg/agg_private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "expr/accum.h"
#include "query/sort.h"

/* $dateTrunc's reference point (2000-01-01T00:00:00Z): bins of the column path are aligned on it. */
#define TS_TRUNC_ORIGIN_MS 946684800000LL

/* The output fields of $group and $bucketAuto: names[i] computed by accs[i]. */

/* Frees names[0..n) and accs[0..n), then both arrays. */
static void
fields_free(char **names, accum_t **accs, int n)
{
	for (int i = 0; i < n; i++) {
		bson_free(names[i]);
		accum_destroy(accs[i]);
	}
	bson_free(names);
	bson_free(accs);
}

/* Appends each field's final value (from its state st[i]) to out; a missing
 * value is written as null. */
static int
fields_finalize(agg_rt_t *rt, char *const *names, accum_t *const *accs, accum_state_t *const *st, int n,
                bson_t *out, terr_t *err)
{
	bson_value_t v;

	expr_env_reset(rt->env);
	for (int a = 0; a < n; a++) {
		RET(accum_finalize(accs[a], st[a], rt->env, &v, err));
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		bv_append(out, names[a], -1, &v);
	}
	return 0;
}

/* An accumulator's input on the column path: a constant, or a top-level
 * field (the time, the meta or a column) named by path. */
typedef struct group_src {
	const bson_value_t *cv;   /* the constant (borrowed from the accumulator), or NULL */
	const char *path;         /* the field (borrowed from the accumulator) */
} group_src_t;

typedef struct group_plan {
	const coll_t *coll;       /* group keys equal under it are one group */
	expr_t *id;
	char **names;
	accum_t **accs;
	int n;
	/* every accumulator takes its values one by one (accum_add) from a
	 * constant or a top-level field: the group can run on the columns of a
	 * time-series unpack right before it (group_fill_block) */
	bool block;
	group_src_t *src;
} group_plan_t;

/* Accumulators whose state is the same fed value by value (accum_add)
 * as evaluated per document (accum_process). */
static const char *const block_accs[] = {"$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet",
    "$count", "$stdDevPop", "$stdDevSamp", NULL};

static void
group_plan_block(group_plan_t *gp)
{
	gp->src = bson_malloc0(sizeof(group_src_t) * (size_t)(gp->n + 1));
	gp->block = true;
	for (int a = 0; a < gp->n && gp->block; a++) {
		const char *op = accum_op_name(gp->accs[a]);
		const expr_t *arg = accum_argument(gp->accs[a]);
		bool known = false;
		for (int i = 0; block_accs[i] != NULL; i++)
			known |= strcmp(op, block_accs[i]) == 0;
		if (!known || arg == NULL)
			gp->block = false;
		else if (expr_is_constant(arg, &gp->src[a].cv))
			continue;
		else if (!expr_is_field_path(arg, &gp->src[a].path) || strchr(gp->src[a].path, '.') != NULL)
			gp->block = false;
	}
}

static void
group_free_plan(void *plan)
{
	group_plan_t *gp = plan;

	expr_destroy(gp->id);
	fields_free(gp->names, gp->accs, gp->n);
	bson_free(gp->src);
	bson_free(gp);
}

static int
group_build(agg_pctx_t *pc, const bson_value_t *spec, bson_t *explain, terr_t *err)
{
	group_plan_t *gp;
	bson_t d;
	bson_iter_t it, sub;
	bool has_id = false;
	int n, ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT) {
		if (explain)
			bson_destroy(explain);
		return terr_set(err, 15947, "a group's fields must be specified in an object");
	}
	agg_value_doc(spec, &d);
	n = (int)bson_count_keys(&d);
	gp = bson_malloc0(sizeof(*gp));
	gp->coll = agg_host_collation(pc->host);
	gp->names = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
	gp->accs = bson_malloc0(sizeof(accum_t *) * (size_t)(n + 1));
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "_id") == 0) {
			if (has_id) {
				ret = terr_set(err, 16406, "duplicate field name specified in object literal: { _id: ... }");
				goto err;
			}
			ERR(expr_parse(bson_iter_value(&it), pc->scope, &gp->id, err));
			has_id = true;
			continue;
		}
		if (k[0] == '$') {
			ret = terr_set(err, 40236, "The field name '%s' cannot be an operator name", k);
			goto err;
		}
		if (strchr(k, '.') != NULL) {
			ret = terr_set(err, 40235, "The field name '%s' cannot contain '.'", k);
			goto err;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, 40234, "The field '%s' must be an accumulator object", k);
			goto err;
		}
		bson_iter_recurse(&it, &sub);
		if (!bson_iter_next(&sub)) {
			ret = terr_set(err, 40234, "The field '%s' must be an accumulator object", k);
			goto err;
		}
		{
			bson_iter_t more = sub;
			if (bson_iter_next(&more)) {
				ret = terr_set(err, 40238, "The field '%s' must specify one accumulator", k);
				goto err;
			}
		}
		ERR(accum_parse(bson_iter_key(&sub), bson_iter_value(&sub), pc->scope, &gp->accs[gp->n], err));
		gp->names[gp->n] = bson_strdup(k);
		gp->n++;
	}
	if (!has_id) {
		ret = terr_set(err, 15955, "a group specification must include an _id");
		goto err;
	}
	group_plan_block(gp);
	agg_pctx_add(pc, &agg_stages_group[0], gp, explain ? explain : agg_explain_doc("$group", spec));
	return 0;
err:
	if (explain)
		bson_destroy(explain);
	group_free_plan(gp);
	return ret;
}

static int
group_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	return group_build(pc, spec, NULL, err);
}

/* ---- hashing with MongoDB's equality ------------------------------------ */

static uint64_t
mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static uint64_t
bytes_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t value_hash(const bson_value_t *v);

uint64_t
agg_value_hash(const bson_value_t *v, const coll_t *coll)
{
	/* under a collation, equal strings differ in bytes: hash the sort keys */
	return coll != NULL ? bv_hash_coll(v, coll) : value_hash(v);
}

static uint64_t
doc_hash(const bson_value_t *v, bool names)
{
	bson_t d;
	bson_iter_t it;
	uint64_t h = v->value_type == BSON_TYPE_ARRAY ? 0xa11a : 0xd0c;

	if (!agg_value_doc(v, &d) || !bson_iter_init(&it, &d))
		return h;
	while (bson_iter_next(&it)) {
		if (names)
			h = bytes_hash(h, bson_iter_key(&it), bson_iter_key_len(&it));
		h = mix(h, value_hash(bson_iter_value(&it)));
	}
	return h;
}

static uint64_t
value_hash(const bson_value_t *v)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)bv_type_rank(v->value_type);

	switch (v->value_type) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128: {
		double d = bv_as_double(v);
		int64_t i;
		if (isnan(d))
			return mix(h, 0x7ff8);
		if (d == 0)
			d = 0;  /* -0 */
		if (bv_as_int64_exact(v, &i))
			return mix(h, (uint64_t)i);
		return bytes_hash(h, &d, sizeof(d));
	}
	case BSON_TYPE_UTF8:
		return bytes_hash(h, v->value.v_utf8.str, v->value.v_utf8.len);
	case BSON_TYPE_SYMBOL:
		return bytes_hash(h, v->value.v_symbol.symbol, v->value.v_symbol.len);
	case BSON_TYPE_DOCUMENT:
		return mix(h, doc_hash(v, true));
	case BSON_TYPE_ARRAY:
		return mix(h, doc_hash(v, false));
	case BSON_TYPE_OID:
		return bytes_hash(h, v->value.v_oid.bytes, 12);
	case BSON_TYPE_BOOL:
		return mix(h, v->value.v_bool);
	case BSON_TYPE_DATE_TIME:
		return mix(h, (uint64_t)v->value.v_datetime);
	case BSON_TYPE_TIMESTAMP:
		return mix(mix(h, v->value.v_timestamp.timestamp), v->value.v_timestamp.increment);
	case BSON_TYPE_BINARY:
		return bytes_hash(h, v->value.v_binary.data, v->value.v_binary.data_len);
	case BSON_TYPE_REGEX:
		return bytes_hash(h, v->value.v_regex.regex, strlen(v->value.v_regex.regex));
	default:
		return h;
	}
}

/* ---- runtime ------------------------------------------------------------ */

/* The slots of one document an array accumulator took (see group_t). */
typedef struct group_pack {
	uint64_t seq;             /* its arrival ordinal in the accumulator (accum_kept_seq) */
	uint8_t *aux;             /* agg_proj_slots_pack's bytes (owned) */
	uint32_t len;
} group_pack_t;

typedef struct group {
	bson_t *key;              /* {"": _id value} (owned) */
	uint64_t hash;
	accum_state_t **st;
	size_t mem;
	/* the slots of the document the carried $first / $last of $$ROOT
	 * holds (agg_proj_slots_pack; owned, NULL: none) */
	uint8_t *aux;
	uint32_t aux_len;
	/* an array accumulator of $$ROOT carried ($push, $topN, ...): the
	 * slots of each document it took, by arrival ordinal (ascending);
	 * those it no longer keeps are pruned now and then */
	group_pack_t *packs;
	uint32_t npacks, packs_cap;
	size_t slot_mem;          /* bytes of aux or packs, counted in mem */
} group_t;

typedef struct group_state {
	group_t *groups;
	int64_t n, cap;
	int64_t *table;           /* open addressing: index + 1, 0 = empty */
	int64_t tsize;
	int64_t mem;
	int64_t i;                /* next group to output */
	bool filled;
	bson_t out;
	/* spilling: partial groups sorted by key, merged at the end */
	sort_spec_t *spill_spec;  /* {k: 1} under the group's collation */
	sorter_t *spill;          /* NULL until the table first passes the limit */
	bson_t *ahead;            /* the next partial group read back (owned) */
	bool merging;
	/* slots carried (agg_group_carry_slots): the exclusions upstream whose
	 * slots the document accumulator slot_acc ($first / $last of $$ROOT)
	 * keeps, packed per group as its document is taken (g->aux) and handed
	 * back (views, static over g->aux) as the group is output */
	const agg_rt_t **slot_srcs;   /* agg_carry_add's list, owned */
	int nslot, slot_cap, slot_acc;
	bool slot_last;           /* slot_acc is a $last: every document replaces it */
	bool slot_top;            /* a $top / $bottom: the document it took (accum_holds_latest) */
	/* slot_acc is an array accumulator: one set of slots per element
	 * (g->packs), handed back element by element (agg_group_slot_element) */
	bool slot_items;
	int64_t cur;              /* the group output last (-1: none, or one merged from a spill) */
	bson_t sk;
	uint8_t *pack;
	size_t pack_cap;
	bson_t *views;
} group_state_t;

AGG_DEFINE_OPEN_WITH_OUT(group_open, group_state_t)

/* The value of a one-field key document ({"": value}); borrowed from it. */
static void
key_value(const bson_t *key, bson_value_t *v)
{
	bson_iter_t it;

	bson_iter_init(&it, key);
	bson_iter_next(&it);
	*v = *bson_iter_value(&it);
}

static void
table_grow(group_state_t *gs)
{
	int64_t i, size = gs->tsize ? gs->tsize * 2 : 64;

	bson_free(gs->table);
	gs->table = bson_malloc0(sizeof(int64_t) * (size_t)size);
	gs->tsize = size;
	for (i = 0; i < gs->n; i++) {
		int64_t j = (int64_t)(gs->groups[i].hash & (uint64_t)(size - 1));
		while (gs->table[j] != 0)
			j = (j + 1) & (size - 1);
		gs->table[j] = i + 1;
	}
}

static group_t *
group_find_or_add(const group_plan_t *gp, group_state_t *gs, const bson_value_t *key)
{
	uint64_t h = agg_value_hash(key, gp->coll);
	int64_t j;
	group_t *g;
	bson_value_t kv;
	int a;

	if (gs->tsize == 0 || (gs->n + 1) * 2 > gs->tsize)
		table_grow(gs);
	j = (int64_t)(h & (uint64_t)(gs->tsize - 1));
	while (gs->table[j] != 0) {
		g = &gs->groups[gs->table[j] - 1];
		if (g->hash == h) {
			key_value(g->key, &kv);
			if (bv_compare_coll(&kv, key, gp->coll) == 0)
				return g;
		}
		j = (j + 1) & (gs->tsize - 1);
	}
	if (gs->n == gs->cap) {
		gs->cap = gs->cap ? gs->cap * 2 : 16;
		gs->groups = bson_realloc(gs->groups, sizeof(group_t) * (size_t)gs->cap);
	}
	g = &gs->groups[gs->n];
	memset(g, 0, sizeof(*g));
	g->key = bson_new();
	bv_append(g->key, "", 0, key);
	g->hash = h;
	g->st = bson_malloc0(sizeof(accum_state_t *) * (size_t)(gp->n + 1));
	for (a = 0; a < gp->n; a++)
		g->st[a] = accum_state_new(gp->accs[a]);
	gs->table[j] = ++gs->n;
	gs->mem += g->key->len + 64;
	return g;
}

static void
group_destroy(const group_plan_t *gp, group_t *g)
{
	for (int a = 0; a < gp->n; a++)
		accum_state_destroy(g->st[a]);
	bson_free(g->st);
	bson_destroy(g->key);
	bson_free(g->aux);
	for (uint32_t i = 0; i < g->npacks; i++)
		bson_free(g->packs[i].aux);
	bson_free(g->packs);
}

/* Write every group held as a partial group into the sorter (created on the
 * first spill) and empty the table. */
static int
group_spill(const group_plan_t *gp, group_state_t *gs, const agg_host_t *h, uint64_t limit, terr_t *err)
{
	bson_t doc, states;
	int ret = 0;

	if (gs->spill == NULL) {
		bson_t *spec = BCON_NEW("k", BCON_INT32(1));
		ret = sort_spec_parse(spec, &gs->spill_spec, err);
		bson_destroy(spec);
		if (ret != 0)
			return -1;
		sort_spec_set_collation(gs->spill_spec, gp->coll);
		gs->spill = sorter_new(gs->spill_spec, 0, true, limit);
		sorter_set_spill_dir(gs->spill, h->spill_dir);
	}
	for (int64_t i = 0; i < gs->n; i++) {
		group_t *g = &gs->groups[i];
		char k[16];

		if (ret == 0) {
			bson_init(&doc);
			/* the key wrapped in a document: compared whole, arrays too */
			BSON_APPEND_DOCUMENT(&doc, "k", g->key);
			bson_append_document_begin(&doc, "s", 1, &states);
			for (int a = 0; a < gp->n; a++) {
				snprintf(k, sizeof k, "%d", a);
				accum_state_save(gp->accs[a], g->st[a], &states, k);
			}
			bson_append_document_end(&doc, &states);
			ret = sorter_add(gs->spill, &doc, err);
			bson_destroy(&doc);
		}
		group_destroy(gp, g);
	}
	gs->n = 0;
	gs->mem = 0;
	if (gs->table != NULL)
		memset(gs->table, 0, sizeof(int64_t) * (size_t)gs->tsize);
	return ret;
}

/* Read the next partial group back into gs->ahead (NULL at the end). */
static int
group_read_ahead(group_state_t *gs, terr_t *err)
{
	const bson_t *d;
	int rc;

	if (gs->ahead != NULL) {
		bson_destroy(gs->ahead);
		gs->ahead = NULL;
	}
	if ((rc = sorter_next_ex(gs->spill, &d, err)) < 0)
		return -1;
	if (rc == 1)
		gs->ahead = bson_copy(d);
	return 0;
}

/* The key document ({"": key}) of a partial group, borrowed from it. */
static bool
partial_key(const bson_t *d, bson_value_t *key)
{
	bson_iter_t it;
	bson_t kd;
	const uint8_t *data;
	uint32_t len;

	if (!bson_iter_init_find(&it, d, "k") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &len, &data);
	if (!bson_init_static(&kd, data, len) || !bson_iter_init(&it, &kd) || !bson_iter_next(&it))
		return false;
	*key = *bson_iter_value(&it);
	return true;
}

/* Fold the states of the partial group d into st (NULL entries: load). */
static int
partial_merge(const group_plan_t *gp, const bson_t *d, accum_state_t **st, terr_t *err)
{
	bson_iter_t it, si;
	int a = 0;

	if (!bson_iter_init_find(&it, d, "s") || !bson_iter_recurse(&it, &si))
		return terr_set(err, TERR_INTERNAL_ERROR, "$group spill file holds a damaged group");
	while (bson_iter_next(&si) && a < gp->n) {
		accum_state_t *from = NULL;
		RET(accum_state_load(gp->accs[a], bson_iter_value(&si), &from, err));
		if (st[a] == NULL) {
			st[a] = from;
		} else {
			int rc = accum_merge(gp->accs[a], st[a], from, err);
			accum_state_destroy(from);
			if (rc != 0)
				return -1;
		}
		a++;
	}
	if (a != gp->n)
		return terr_set(err, TERR_INTERNAL_ERROR, "$group spill file holds a damaged group");
	return 0;
}

/* The next group of a spilled $group: every partial group of the next key
 * merged, in the order they were written. */
static int
group_next_merged(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	accum_state_t **st = NULL;
	bson_t *first = NULL;
	bson_value_t key, next;
	int ret = -1;

	if (gs->ahead == NULL)
		RET(group_read_ahead(gs, err));
	if (gs->ahead == NULL)
		return 0;
	first = gs->ahead;        /* keeps the key's first spelling */
	gs->ahead = NULL;
	if (!partial_key(first, &key)) {
		terr_set(err, TERR_INTERNAL_ERROR, "$group spill file holds a damaged group");
		goto out;
	}
	st = bson_malloc0(sizeof(accum_state_t *) * (size_t)(gp->n + 1));
	if (partial_merge(gp, first, st, err) != 0)
		goto out;
	for (;;) {
		if (group_read_ahead(gs, err) != 0)
			goto out;
		if (gs->ahead == NULL || !partial_key(gs->ahead, &next) ||
		    bv_compare_coll(&key, &next, gp->coll) != 0)
			break;
		if (partial_merge(gp, gs->ahead, st, err) != 0)
			goto out;
		if (tm_interrupt_check(err) != 0)
			goto out;
	}
	bson_reinit(&gs->out);
	bv_append(&gs->out, "_id", 3, &key);
	if (fields_finalize(rt, gp->names, gp->accs, st, gp->n, &gs->out, err) != 0)
		goto out;
	gs->cur = -1;
	if (gs->nslot > 0)           /* spilled as BSON: no slot, as mongod's serialised groups */
		agg_proj_slots_unpack(gs->slot_srcs, gs->nslot, NULL, 0, gs->views);
	*out = &gs->out;
	ret = 1;
out:
	for (int a = 0; st != NULL && a < gp->n; a++)
		accum_state_destroy(st[a]);
	bson_free(st);
	if (first != NULL)
		bson_destroy(first);
	return ret;
}

/* Count group g's memory again after values were added to it; past the
 * limit, fail (292) or spill (with allowDiskUse): then *spilled is set and
 * every group pointer is stale. */
static int
group_charge(agg_rt_t *rt, group_t *g, uint64_t limit, bool *spilled, terr_t *err)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	const agg_host_t *h = rt->x->p->host;
	size_t mem = 0;

	for (int a = 0; a < gp->n; a++)
		mem += accum_state_mem(g->st[a]);
	mem += g->slot_mem;
	gs->mem += (int64_t)mem - (int64_t)g->mem;
	g->mem = mem;
	if ((uint64_t)gs->mem > limit) {
		if (h == NULL || !h->allow_disk_use)
			return terr_set(err, TERR_QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED,
			    "Exceeded memory limit for $group, but didn't allow external sort. Pass allowDiskUse:true to opt in.");
		if (h->spill_dir == NULL)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "$group exceeded its memory limit of %llu bytes, and no directory to spill to was configured.",
			    (unsigned long long)limit);
		RET(group_spill(gp, gs, h, limit, err));
		*spilled = true;
	}
	return 0;
}

/*
 * The column path: the input is a time-series unpack stage handing whole
 * buckets as columns (agg_unpack_next_block).  Each measurement's key is
 * the _id evaluated on a document of its time and meta only -- once per
 * bucket when the _id does not read the time, once per time bin when it
 * reads it only through $dateTrunc bins (bin > 0) -- and each accumulator
 * is fed its value straight from the column (accum_add), as
 * accum_process would have evaluated it on the built measurement.
 */
static int
group_fill_block(agg_rt_t *rt, int64_t bin, const char *tf, const char *mf, uint64_t limit, terr_t *err)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	const char *fields[TS_BLOCK_MAX_FIELDS + 1];
	int nfields = 0, *col = bson_malloc0(sizeof(int) * (size_t)(gp->n + 1));
	bson_t tiny = BSON_INITIALIZER;
	agg_ts_block_t b;
	int rc, ret = -1;

	/* each accumulator's column: -1 constant, -2 the time, -3 the meta */
	for (int a = 0; a < gp->n; a++) {
		const char *p = gp->src[a].path;
		int f;
		if (gp->src[a].cv != NULL)
			col[a] = -1;
		else if (strcmp(p, tf) == 0)
			col[a] = -2;
		else if (mf != NULL && strcmp(p, mf) == 0)
			col[a] = -3;
		else {
			for (f = 0; f < nfields && strcmp(fields[f], p) != 0; f++)
				;
			if (f == nfields)
				fields[nfields++] = p;
			col[a] = f;
		}
	}
	fields[nfields] = NULL;
	while ((rc = agg_unpack_next_block(rt->input, fields, nfields, &b, err)) == 1) {
		group_t *g = NULL;
		int64_t cur = 0;
		bool spilled = false;
		for (int i = 0; i < b.n; i++) {
			int64_t t = b.times[i];
			int64_t k = bin > 0 ? (t - TS_TRUNC_ORIGIN_MS) / bin - ((t - TS_TRUNC_ORIGIN_MS) % bin < 0) : t;
			if (g == NULL || (bin >= 0 && k != cur)) {
				bson_value_t key;
				if (g != NULL && group_charge(rt, g, limit, &spilled, err) != 0)
					goto out;
				bson_reinit(&tiny);
				BSON_APPEND_DATE_TIME(&tiny, tf, t);
				if (b.meta != NULL)
					bv_append(&tiny, mf, -1, b.meta);
				if (agg_eval(rt, gp->id, &tiny, true, &key, err) != 0)
					goto out;
				if (key.value_type == BSON_TYPE_EOD || key.value_type == BSON_TYPE_UNDEFINED)
					key.value_type = BSON_TYPE_NULL;
				g = group_find_or_add(gp, gs, &key);
				cur = k;
			}
			for (int a = 0; a < gp->n; a++) {
				bson_value_t tv;
				const bson_value_t *v;
				if (col[a] >= 0)
					v = &b.vals[(size_t)col[a] * (size_t)b.stride + (size_t)i];
				else if (col[a] == -1)
					v = gp->src[a].cv;
				else if (col[a] == -2) {
					tv.value_type = BSON_TYPE_DATE_TIME;
					tv.value.v_datetime = t;
					v = &tv;
				} else if (b.meta != NULL)
					v = b.meta;
				else {
					tv.value_type = BSON_TYPE_EOD;
					v = &tv;
				}
				if (accum_add(gp->accs[a], g->st[a], v, err) != 0)
					goto out;
			}
		}
		if (g != NULL && group_charge(rt, g, limit, &spilled, err) != 0)
			goto out;
		if (tm_interrupt_check(err) != 0)
			goto out;
	}
	ret = rc < 0 ? -1 : 0;
out:
	bson_destroy(&tiny);
	bson_free(col);
	return ret;
}

/* g's carried document accumulator took the current document: keep its
 * slots (agg_proj_slots_pack) with g in place of the ones held. */
static void
group_take_slots(group_state_t *gs, group_t *g)
{
	size_t len = agg_proj_slots_pack(gs->slot_srcs, gs->nslot, &gs->sk, &gs->pack, &gs->pack_cap);

	bson_free(g->aux);
	g->aux = NULL;
	g->aux_len = 0;
	if (len > 0) {
		g->aux = bson_malloc(len);
		memcpy(g->aux, gs->pack, len);
		g->aux_len = (uint32_t)len;
	}
	g->slot_mem = g->aux_len;
}

static int
seq_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Drop the packs of the documents g's carried array accumulator acc no
 * longer keeps ($lastN, $topN, ... evict): packs are in arrival order. */
static void
group_prune_packs(const accum_t *acc, group_t *g, const accum_state_t *st)
{
	int64_t n = accum_kept_count(acc, st);
	uint64_t *kept = bson_malloc(sizeof(uint64_t) * (size_t)(n + 1));
	uint32_t w = 0;
	int64_t k = 0;

	for (int64_t j = 0; j < n; j++)
		kept[j] = (uint64_t)accum_kept_seq(acc, st, j);
	qsort(kept, (size_t)n, sizeof(uint64_t), seq_cmp);
	g->slot_mem = 0;
	for (uint32_t i = 0; i < g->npacks; i++) {
		while (k < n && kept[k] < g->packs[i].seq)
			k++;
		if (k < n && kept[k] == g->packs[i].seq) {
			g->packs[w++] = g->packs[i];
			g->slot_mem += g->packs[i].len + sizeof(group_pack_t);
		} else {
			bson_free(g->packs[i].aux);
		}
	}
	g->npacks = w;
	bson_free(kept);
}

/* g's carried array accumulator took the current document (its latest
 * fold, ordinal accum_folded - 1): keep its slots with that ordinal. */
static void
group_take_element_slots(const group_plan_t *gp, group_state_t *gs, group_t *g)
{
	const accum_t *acc = gp->accs[gs->slot_acc];
	const accum_state_t *st = g->st[gs->slot_acc];
	size_t len;

	if (!accum_kept_latest(acc, st))
		return;
	len = agg_proj_slots_pack(gs->slot_srcs, gs->nslot, &gs->sk, &gs->pack, &gs->pack_cap);
	if (len == 0)
		return;               /* no slot: the element answers without (agg_group_slot_element) */
	if ((int64_t)g->npacks > 2 * accum_kept_count(acc, st) + 16)
		group_prune_packs(acc, g, st);
	if (g->npacks == g->packs_cap) {
		g->packs_cap = g->packs_cap ? g->packs_cap * 2 : 4;
		g->packs = bson_realloc(g->packs, sizeof(group_pack_t) * g->packs_cap);
	}
	group_pack_t *pk = &g->packs[g->npacks++];
	pk->seq = accum_folded(st) - 1;
	pk->aux = bson_malloc(len);
	memcpy(pk->aux, gs->pack, len);
	pk->len = (uint32_t)len;
	g->slot_mem += len + sizeof(group_pack_t);
}

static int
group_fill(agg_rt_t *rt, terr_t *err)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *d;
	bson_value_t key;
	uint64_t limit = h != NULL && h->group_memory_limit > 0 ? h->group_memory_limit :
	                                                         (uint64_t)AGG_MEMORY_LIMIT;
	int rc, a;
	int64_t bin;
	const char *tf, *mf;

	if (gp->block && agg_unpack_block_ok(rt->input, &bin, &tf, &mf)) {
		int nf = 0;
		for (a = 0; a < gp->n; a++)
			nf += gp->src[a].cv == NULL;
		if (nf <= TS_BLOCK_MAX_FIELDS) {
			RET(group_fill_block(rt, bin, tf, mf, limit, err));
			goto done;
		}
	}
	while ((rc = agg_rt_pull(rt, &d, err)) == 1) {
		group_t *g;
		bool spilled = false;
		RET(agg_eval(rt, gp->id, d, true, &key, err));
		if (key.value_type == BSON_TYPE_EOD || key.value_type == BSON_TYPE_UNDEFINED)
			key.value_type = BSON_TYPE_NULL;
		int64_t had = gs->n;
		g = group_find_or_add(gp, gs, &key);
		for (a = 0; a < gp->n; a++)
			RET(accum_process(gp->accs[a], g->st[a], rt->env, err));
		if (gs->nslot > 0 && gs->slot_items)
			group_take_element_slots(gp, gs, g);
		else if (gs->nslot > 0 && (gs->slot_last || gs->n > had ||
		                       (gs->slot_top && accum_holds_latest(gp->accs[gs->slot_acc], g->st[gs->slot_acc]))))
			group_take_slots(gs, g);
		RET(group_charge(rt, g, limit, &spilled, err));
		if (tm_interrupt_check(err) != 0)
			return -1;
	}
	if (rc < 0)
		return -1;
done:
	if (gs->spill != NULL) {
		/* what is still in memory joins the sorted partial groups */
		if (gs->n > 0)
			RET(group_spill(gp, gs, h, limit, err));
		RET(sorter_finish_ex(gs->spill, err));
		gs->merging = true;
	}
	return 0;
}

static int
group_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	group_t *g;
	bson_value_t v;

	if (!gs->filled) {
		gs->filled = true;
		RET(group_fill(rt, err));
	}
	if (gs->merging)
		return group_next_merged(rt, out, err);
	if (gs->i >= gs->n)
		return 0;
	g = &gs->groups[gs->i++];
	bson_reinit(&gs->out);
	key_value(g->key, &v);
	bv_append(&gs->out, "_id", 3, &v);
	RET(fields_finalize(rt, gp->names, gp->accs, g->st, gp->n, &gs->out, err));
	gs->cur = gs->i - 1;
	/* an array accumulator's slots go back element by element, on demand
	 * (agg_group_slot_element): none until then */
	if (gs->nslot > 0)
		agg_proj_slots_unpack(gs->slot_srcs, gs->nslot, gs->slot_items ? NULL : g->aux,
		                      gs->slot_items ? 0 : g->aux_len, gs->views);
	*out = &gs->out;
	return 1;
}

bool
agg_is_group_stage(const agg_rt_t *rt)
{
	return rt->st->def == &agg_stages_group[0];
}

/* The accumulators that keep the Values they are fed (mongod's hold the
 * Document itself, slots included): 1 one of them, 2 an array. */
static const struct {
	const char *name;
	int kind;
} root_accs[] = {
	{"$first", 1}, {"$last", 1}, {"$top", 1}, {"$bottom", 1},
	{"$push", 2}, {"$addToSet", 2}, {"$firstN", 2}, {"$lastN", 2}, {"$topN", 2}, {"$bottomN", 2},
	{"$maxN", 2}, {"$minN", 2},
	{NULL, 0},
};

/* The accumulator of output field name (len bytes) keeping $$ROOT's
 * Document, or -1; *kind: 1 one Document ($first $last $top $bottom), 2
 * an array of them (the accumulators accum_kept_count counts). */
static int
group_root_acc(const group_plan_t *gp, const char *name, size_t len, int *kind)
{
	const char *rp;
	int a;

	for (a = 0; a < gp->n && (strlen(gp->names[a]) != len || memcmp(gp->names[a], name, len) != 0); a++)
		;
	if (a == gp->n || accum_argument(gp->accs[a]) == NULL ||
	    !expr_is_root_path(accum_argument(gp->accs[a]), &rp) || rp != NULL)
		return -1;
	const char *op = accum_op_name(gp->accs[a]);
	for (int i = 0; root_accs[i].name != NULL; i++)
		if (strcmp(op, root_accs[i].name) == 0) {
			*kind = root_accs[i].kind;
			return a;
		}
	return -1;
}

int
agg_group_root_field(const agg_rt_t *group_rt, const char *name, size_t len)
{
	int kind = 0;

	if (!agg_is_group_stage(group_rt) || group_root_acc(group_rt->st->plan, name, len, &kind) < 0)
		return 0;
	return kind;
}

bool
agg_group_carry_slots(const agg_rt_t *group_rt, const agg_rt_t *excl, const char *path)
{
	const group_plan_t *gp = group_rt->st->plan;
	group_state_t *gs = group_rt->state;
	int a, kind = 0;

	if (group_rt->st->def != &agg_stages_group[0] || path == NULL || gs == NULL || gs->filled)
		return false;
	/* path: the promotion's, "d" or deeper ("d.s"): its first field */
	a = group_root_acc(gp, path, strcspn(path, "."), &kind);
	if (a < 0)
		return false;
	const char *op = accum_op_name(gp->accs[a]);
	if (gs->nslot > 0 && gs->slot_acc != a)
		return false;
	for (int j = 0; j < gs->nslot; j++)
		if (gs->slot_srcs[j] == excl)
			return true;
	if (!agg_classic_group_input(group_rt, excl))
		return false;
	if (gs->nslot == 0)
		bson_init(&gs->sk);
	if (!agg_carry_add(&gs->slot_srcs, &gs->views, &gs->nslot, &gs->slot_cap, excl))
		return false;       /* full: never when nslot is 0 */
	gs->slot_acc = a;
	gs->slot_items = kind == 2;
	gs->slot_last = strcmp(op, "$last") == 0;
	gs->slot_top = strcmp(op, "$top") == 0 || strcmp(op, "$bottom") == 0;
	gs->cur = -1;
	return true;
}

int64_t
agg_group_current(const agg_rt_t *group_rt)
{
	const group_state_t *gs = group_rt->state;

	return gs != NULL && gs->nslot > 0 ? gs->cur : -1;
}

void
agg_group_set_current(const agg_rt_t *group_rt, int64_t i)
{
	group_state_t *gs = group_rt->state;

	if (gs != NULL && gs->nslot > 0)
		gs->cur = i >= 0 && i < gs->n && !gs->merging ? i : -1;
}

void
agg_group_slot_element(const agg_rt_t *group_rt, int64_t j)
{
	const group_plan_t *gp = group_rt->st->plan;
	group_state_t *gs = group_rt->state;
	const uint8_t *aux = NULL;
	uint32_t len = 0;

	if (gs == NULL || gs->nslot == 0 || !gs->slot_items)
		return;
	if (gs->cur >= 0 && gs->cur < gs->n && j >= 0) {
		const group_t *g = &gs->groups[gs->cur];
		int64_t seq = accum_kept_seq(gp->accs[gs->slot_acc], g->st[gs->slot_acc], j);
		uint32_t lo = 0, hi = g->npacks;
		while (seq >= 0 && lo < hi) {       /* packs are in arrival order */
			uint32_t mid = lo + (hi - lo) / 2;
			if (g->packs[mid].seq < (uint64_t)seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (seq >= 0 && lo < g->npacks && g->packs[lo].seq == (uint64_t)seq) {
			aux = g->packs[lo].aux;
			len = g->packs[lo].len;
		}
	}
	agg_proj_slots_unpack(gs->slot_srcs, gs->nslot, aux, len, gs->views);
}

static void
group_close(agg_rt_t *rt)
{
	const group_plan_t *gp = rt->st->plan;
	group_state_t *gs = rt->state;
	int64_t i;

	for (i = 0; i < gs->n; i++)
		group_destroy(gp, &gs->groups[i]);
	bson_free(gs->groups);
	bson_free(gs->table);
	bson_destroy(&gs->out);
	if (gs->ahead != NULL)
		bson_destroy(gs->ahead);
	sorter_free(gs->spill);
	sort_spec_free(gs->spill_spec);
	if (gs->nslot > 0)
		bson_destroy(&gs->sk);
	bson_free((void *)gs->slot_srcs);
	bson_free(gs->views);
	bson_free(gs->pack);
	bson_free(gs);
}

/* ---- $sortByCount -------------------------------------------------------- */

static int
add_sort(agg_pctx_t *pc, const bson_t *sort, terr_t *err)
{
	bson_value_t v;

	v.value_type = BSON_TYPE_DOCUMENT;
	v.value.v_doc.data = (uint8_t *)bson_get_data(sort);
	v.value.v_doc.data_len = sort->len;
	return agg_stage_lookup("$sort")->parse(pc, &v, err);
}

static int
sbc_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t *g = bson_new(), inner, sum, sort = BSON_INITIALIZER;
	bson_value_t gv;
	int ret;

	if (spec->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;
		agg_value_doc(spec, &d);
		if (!bson_iter_init(&it, &d) || !bson_iter_next(&it) || bson_iter_key(&it)[0] != '$') {
			bson_destroy(g);
			return terr_set(err, 40149,
			    "the sortByCount field must be specified as a string or as an object with an expression");
		}
	} else if (spec->value_type != BSON_TYPE_UTF8 || spec->value.v_utf8.str[0] != '$') {
		bson_destroy(g);
		return terr_set(err, 40147,
		    "the sortByCount field must be defined as a $-prefixed path or an expression");
	}
	bson_append_document_begin(g, "", 0, &inner);
	bv_append(&inner, "_id", 3, spec);
	bson_append_document_begin(&inner, "count", -1, &sum);
	BSON_APPEND_INT32(&sum, "$sum", 1);
	bson_append_document_end(&inner, &sum);
	bson_append_document_end(g, &inner);
	{
		bson_iter_t it;
		bson_iter_init(&it, g);
		bson_iter_next(&it);
		gv = *bson_iter_value(&it);
	}
	{
		bson_t *ex = bson_new();
		bv_append(ex, "$group", -1, &gv);
		ret = group_build(pc, &gv, ex, err);
	}
	bson_destroy(g);
	if (ret != 0)
		return ret;
	BSON_APPEND_INT32(&sort, "count", -1);
	ret = add_sort(pc, &sort, err);
	bson_destroy(&sort);
	return ret;
}

/* The groupBy of $bucket and $bucketAuto: a $-prefixed path or an
 * expression object; otherwise `code` with `fmt` given the value as mongod
 * prints it. */
static int
check_group_by(const bson_value_t *v, int code, const char *fmt, terr_t *err)
{
	char *s;

	if ((v->value_type == BSON_TYPE_UTF8 && v->value.v_utf8.str[0] == '$') || v->value_type == BSON_TYPE_DOCUMENT)
		return 0;
	s = bv_to_mongo_string(v);
	terr_set(err, code, fmt, s);
	bson_free(s);
	return -1;
}

/* ---- $bucket ------------------------------------------------------------- */

static int
bucket_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d, bounds, output, *g = NULL, inner, branches, sort = BSON_INITIALIZER;
	bson_iter_t it, bi;
	bson_value_t groupby, deflt, prev, gv;
	bool has_group = false, has_bounds = false, has_default = false, has_output = false;
	int nb = 0, ret = 0;
	char key[16];
	const char *k;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40201, "Argument to $bucket stage must be an object, but found type: %s.",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		if (strcmp(f, "groupBy") == 0) {
			RET(check_group_by(v, 40202,
			    "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.",
			    err));
			groupby = *v;
			has_group = true;
		} else if (strcmp(f, "boundaries") == 0) {
			if (v->value_type != BSON_TYPE_ARRAY)
				return terr_set(err, 40200,
				    "The $bucket 'boundaries' field must be an array, but found type: %s.",
				    bv_type_name(v->value_type));
			agg_value_doc(v, &bounds);
			has_bounds = true;
		} else if (strcmp(f, "default") == 0) {
			deflt = *v;
			has_default = true;
		} else if (strcmp(f, "output") == 0) {
			if (v->value_type != BSON_TYPE_DOCUMENT)
				return terr_set(err, 40196,
				    "The $bucket 'output' field must be an object, but found type: %s.",
				    bv_type_name(v->value_type));
			agg_value_doc(v, &output);
			has_output = true;
		} else {
			return terr_set(err, 40197, "Unrecognized option to $bucket: %s.", f);
		}
	}
	if (!has_group || !has_bounds)
		return terr_set(err, 40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.");
	nb = (int)bson_count_keys(&bounds);
	if (nb < 2)
		return terr_set(err, 40192,
		    "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", nb);
	/* constant, same canonical type, strictly ascending (by the collation,
	 * as the $switch below compares) */
	bson_iter_init(&bi, &bounds);
	for (int i = 0; bson_iter_next(&bi); i++) {
		const bson_value_t *b = bson_iter_value(&bi);
		if (i > 0) {
			if (bv_type_rank(b->value_type) != bv_type_rank(prev.value_type))
				return terr_set(err, 40193,
				    "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.",
				    bv_type_name(prev.value_type), bv_type_name(b->value_type));
			if (bv_compare_coll(&prev, b, agg_host_collation(pc->host)) >= 0) {
				char *a = bv_to_mongo_string(&prev), *c = bv_to_mongo_string(b);
				terr_set(err, 40194,
				    "The 'boundaries' option to $bucket must be sorted in ascending order, but elements %d and %d are not in ascending order (%s is not less than %s).",
				    i - 1, i, a, c);
				bson_free(a);
				bson_free(c);
				return -1;
			}
		}
		prev = *b;
	}
	if (has_default) {
		bson_value_t lo, hi;
		bson_iter_init(&bi, &bounds);
		bson_iter_next(&bi);
		lo = *bson_iter_value(&bi);
		hi = prev;
		if (bv_type_rank(deflt.value_type) == bv_type_rank(lo.value_type) &&
		    bv_compare_coll(&deflt, &lo, agg_host_collation(pc->host)) >= 0 &&
		    bv_compare_coll(&deflt, &hi, agg_host_collation(pc->host)) < 0)
			return terr_set(err, 40199,
			    "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.");
	}
	/* {$group: {_id: {$switch: {branches: [{case: {$and: [{$gte: [g, b_i]}, {$lt: [g, b_i+1]}]}, then: b_i}...], default}}, <output>}} */
	g = bson_new();
	bson_append_document_begin(g, "", 0, &inner);
	{
		bson_t idd, swd;
		bson_append_document_begin(&inner, "_id", 3, &idd);
		bson_append_document_begin(&idd, "$switch", -1, &swd);
		bson_append_array_begin(&swd, "branches", -1, &branches);
		bson_iter_init(&bi, &bounds);
		bson_iter_next(&bi);
		prev = *bson_iter_value(&bi);
		for (int i = 0; bson_iter_next(&bi); i++) {
			bson_t br, cs, and, c1, c2, a1, a2;
			const bson_value_t *b = bson_iter_value(&bi);
			bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
			bson_append_document_begin(&branches, k, -1, &br);
			bson_append_document_begin(&br, "case", -1, &cs);
			bson_append_array_begin(&cs, "$and", -1, &and);
			bson_append_document_begin(&and, "0", 1, &c1);
			bson_append_array_begin(&c1, "$gte", -1, &a1);
			bv_append(&a1, "0", 1, &groupby);
			bv_append(&a1, "1", 1, &prev);
			bson_append_array_end(&c1, &a1);
			bson_append_document_end(&and, &c1);
			bson_append_document_begin(&and, "1", 1, &c2);
			bson_append_array_begin(&c2, "$lt", -1, &a2);
			bv_append(&a2, "0", 1, &groupby);
			bv_append(&a2, "1", 1, b);
			bson_append_array_end(&c2, &a2);
			bson_append_document_end(&and, &c2);
			bson_append_array_end(&cs, &and);
			bson_append_document_end(&br, &cs);
			{
				bson_t lit;
				bson_append_document_begin(&br, "then", -1, &lit);
				bv_append(&lit, "$literal", -1, &prev);
				bson_append_document_end(&br, &lit);
			}
			bson_append_document_end(&branches, &br);
			prev = *b;
		}
		bson_append_array_end(&swd, &branches);
		if (has_default) {
			bson_t lit;
			bson_append_document_begin(&swd, "default", -1, &lit);
			bv_append(&lit, "$literal", -1, &deflt);
			bson_append_document_end(&swd, &lit);
		}
		bson_append_document_end(&idd, &swd);
		bson_append_document_end(&inner, &idd);
	}
	if (has_output) {
		bson_iter_init(&it, &output);
		while (bson_iter_next(&it))
			bson_append_iter(&inner, bson_iter_key(&it), -1, &it);
	} else {
		bson_t cnt;
		bson_append_document_begin(&inner, "count", -1, &cnt);
		BSON_APPEND_INT32(&cnt, "$sum", 1);
		bson_append_document_end(&inner, &cnt);
	}
	bson_append_document_end(g, &inner);
	bson_iter_init(&it, g);
	bson_iter_next(&it);
	gv = *bson_iter_value(&it);
	{
		bson_t *ex = bson_new();
		bv_append(ex, "$group", -1, &gv);
		ret = group_build(pc, &gv, ex, err);
	}
	bson_destroy(g);
	if (ret != 0)
		return ret;
	BSON_APPEND_INT32(&sort, "_id", 1);
	ret = add_sort(pc, &sort, err);
	bson_destroy(&sort);
	return ret;
}

/* ---- $bucketAuto ----------------------------------------------------------- */

typedef struct bauto_plan {
	expr_t *group_by;
	int64_t buckets;
	char **names;
	accum_t **accs;
	int n;
	const coll_t *coll;       /* values sort, and are equal, by it */
} bauto_plan_t;

static void
bauto_free_plan(void *plan)
{
	bauto_plan_t *bp = plan;

	expr_destroy(bp->group_by);
	fields_free(bp->names, bp->accs, bp->n);
	bson_free(bp);
}

static int
bauto_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bauto_plan_t *bp;
	bson_t d, output;
	bson_iter_t it, sub;
	const bson_value_t *gb = NULL, *nb = NULL;
	bson_value_t gbv, nbv;    /* iterator values are overwritten by the next step */
	bool has_output = false;
	int ret = 0;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40240, "The argument to $bucketAuto must be an object, but found type: %s.",
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		if (strcmp(k, "groupBy") == 0) {
			RET(check_group_by(v, 40239,
			    "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s.",
			    err));
			gbv = *v;
			gb = &gbv;
		} else if (strcmp(k, "buckets") == 0) {
			int64_t n;
			if (!bv_is_number(v))
				return terr_set(err, 40241,
				    "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s.",
				    bv_type_name(v->value_type));
			if (!bv_as_int64_exact(v, &n) || n > INT32_MAX) {
				char *str = bv_to_mongo_string(v);
				terr_set(err, 40242,
				    "The $bucketAuto 'buckets' field must be representable as a 32-bit integer, but found %s.",
				    str);
				bson_free(str);
				return -1;
			}
			if (n <= 0)
				return terr_set(err, 40243,
				    "The $bucketAuto 'buckets' field must be greater than 0, but found: %lld.",
				    (long long)n);
			nbv = *v;
			nb = &nbv;
		} else if (strcmp(k, "output") == 0) {
			if (v->value_type != BSON_TYPE_DOCUMENT)
				return terr_set(err, 40244,
				    "The $bucketAuto 'output' field must be an object, but found type: %s.",
				    bv_type_name(v->value_type));
			agg_value_doc(v, &output);
			has_output = true;
		} else if (strcmp(k, "granularity") == 0) {
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "$bucketAuto with 'granularity' is not supported by Tamga yet");
		} else {
			return terr_set(err, 40245, "Unrecognized option to $bucketAuto: %s.", k);
		}
	}
	if (gb == NULL || nb == NULL)
		return terr_set(err, 40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
	bp = bson_malloc0(sizeof(*bp));
	bv_as_int64_exact(nb, &bp->buckets);
	ERR(expr_parse(gb, pc->scope, &bp->group_by, err));
	if (has_output) {
		int n = (int)bson_count_keys(&output);
		bp->names = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
		bp->accs = bson_malloc0(sizeof(accum_t *) * (size_t)(n + 1));
		bson_iter_init(&it, &output);
		while (bson_iter_next(&it)) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &sub) || !bson_iter_next(&sub)) {
				ret = terr_set(err, 40234, "The field '%s' must be an accumulator object",
				    bson_iter_key(&it));
				goto err;
			}
			ERR(accum_parse(bson_iter_key(&sub), bson_iter_value(&sub), pc->scope, &bp->accs[bp->n], err));
			bp->names[bp->n++] = bson_strdup(bson_iter_key(&it));
		}
	} else {
		bson_value_t one = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
		bp->names = bson_malloc0(sizeof(char *) * 2);
		bp->accs = bson_malloc0(sizeof(accum_t *) * 2);
		ERR(accum_parse("$sum", &one, pc->scope, &bp->accs[0], err));
		bp->names[bp->n++] = bson_strdup("count");
	}
	bp->coll = agg_host_collation(pc->host);
	agg_pctx_add(pc, &agg_stages_group[3], bp, agg_explain_doc("$bucketAuto", spec));
	return 0;
err:
	bauto_free_plan(bp);
	return ret;
}

/* Input documents are sorted by their groupBy value on query/sort.h's
 * sorter as {k: {"": value}, d: document} (the value wrapped: compared
 * whole, arrays too; ties keep arrival order), so past the memory limit
 * (internalDocumentSourceBucketAutoMaxMemoryBytes) they spill to disk like
 * a $sort; buckets are then cut from the sorted stream with one document of
 * lookahead. */
typedef struct bauto_state {
	sort_spec_t *spec;        /* {k: 1} under the pipeline's collation */
	sorter_t *sorter;
	bson_t *ahead;            /* the next sorted document (owned), NULL at the end */
	int64_t n;                /* documents sorted */
	int64_t pos;              /* documents put in buckets so far */
	int64_t made;             /* buckets output so far */
	bool filled;
	bson_t out;
} bauto_state_t;

AGG_DEFINE_OPEN_WITH_OUT(bauto_open, bauto_state_t)

static int bauto_read_ahead(bauto_state_t *bs, terr_t *err);

static int
bauto_fill(agg_rt_t *rt, terr_t *err)
{
	const bauto_plan_t *bp = rt->st->plan;
	bauto_state_t *bs = rt->state;
	const agg_host_t *h = rt->x->p->host;
	const bson_t *d;
	bson_value_t v;
	bson_t *spec, w, k;
	int rc = 0, ret = 0;

	spec = BCON_NEW("k", BCON_INT32(1));
	ret = sort_spec_parse(spec, &bs->spec, err);
	bson_destroy(spec);
	if (ret != 0)
		return -1;
	sort_spec_set_collation(bs->spec, bp->coll);
	bs->sorter = sorter_new(bs->spec, 0, h != NULL && h->allow_disk_use,
	                        h != NULL && h->bucket_auto_memory_limit > 0 ? h->bucket_auto_memory_limit :
	                                                                      (uint64_t)AGG_MEMORY_LIMIT);
	if (h != NULL && h->spill_dir != NULL)
		sorter_set_spill_dir(bs->sorter, h->spill_dir);
	bson_init(&w);        /* one buffer for every wrapper: the sorter copies it */
	while (ret == 0 && (rc = agg_rt_pull(rt, &d, err)) == 1) {
		ret = agg_eval(rt, bp->group_by, d, true, &v, err);
		if (ret != 0)
			break;
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		bson_reinit(&w);
		bson_append_document_begin(&w, "k", 1, &k);
		bv_append(&k, "", 0, &v);
		bson_append_document_end(&w, &k);
		BSON_APPEND_DOCUMENT(&w, "d", d);
		ret = sorter_add(bs->sorter, &w, err);
		bs->n++;
	}
	bson_destroy(&w);
	if (ret != 0 || rc < 0)
		return -1;
	RET(sorter_finish_ex(bs->sorter, err));
	return bauto_read_ahead(bs, err);
}

static int
bauto_read_ahead(bauto_state_t *bs, terr_t *err)
{
	const bson_t *d;
	int rc;

	if (bs->ahead != NULL) {
		bson_destroy(bs->ahead);
		bs->ahead = NULL;
	}
	if ((rc = sorter_next_ex(bs->sorter, &d, err)) < 0)
		return -1;
	if (rc == 1)
		bs->ahead = bson_copy(d);
	return 0;
}

/* The groupBy value and the document of a sorted entry, borrowed from it. */
static void
bauto_entry(const bson_t *e, bson_value_t *key, bson_t *doc)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;

	key->value_type = BSON_TYPE_NULL;
	if (partial_key(e, key) && bson_iter_init_find(&it, e, "d") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_document(&it, &len, &data);
		if (bson_init_static(doc, data, len))
			return;
	}
	bson_init(doc);
}

static int
bauto_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const bauto_plan_t *bp = rt->st->plan;
	bauto_state_t *bs = rt->state;
	int64_t size, taken = 0;
	bson_value_t lo, last, v;
	accum_state_t **st;
	bson_t id, doc;
	bool last_bucket;
	int a, ret = -1;

	if (!bs->filled) {
		bs->filled = true;
		RET(bauto_fill(rt, err));
	}
	if (bs->ahead == NULL)
		return 0;
	/* mongod: round(n / buckets) per bucket, never splitting equal values */
	size = (int64_t)((double)bs->n / (double)bp->buckets + 0.5);
	if (size < 1)
		size = 1;
	last_bucket = bs->made == bp->buckets - 1;
	memset(&lo, 0, sizeof lo);
	memset(&last, 0, sizeof last);
	st = bson_malloc0(sizeof(accum_state_t *) * (size_t)(bp->n + 1));
	for (a = 0; a < bp->n; a++)
		st[a] = accum_state_new(bp->accs[a]);
	while (bs->ahead != NULL) {
		bauto_entry(bs->ahead, &v, &doc);
		if (taken >= size && !last_bucket && bv_compare_coll(&v, &last, bp->coll) != 0)
			break;
		if (taken == 0)
			bson_value_copy(&v, &lo);
		bson_value_destroy(&last);
		bson_value_copy(&v, &last);
		expr_env_reset(rt->env);
		expr_env_set_root(rt->env, &doc);
		for (a = 0; a < bp->n; a++)
			ERR(accum_process(bp->accs[a], st[a], rt->env, err));
		taken++;
		ERR(bauto_read_ahead(bs, err));
	}
	bson_reinit(&bs->out);
	bson_append_document_begin(&bs->out, "_id", 3, &id);
	bv_append(&id, "min", 3, &lo);
	/* the next bucket's first value, else this one's last */
	if (bs->ahead != NULL) {
		bauto_entry(bs->ahead, &v, &doc);
		bv_append(&id, "max", 3, &v);
	} else {
		bv_append(&id, "max", 3, &last);
	}
	bson_append_document_end(&bs->out, &id);
	ERR(fields_finalize(rt, bp->names, bp->accs, st, bp->n, &bs->out, err));
	bs->pos += taken;
	bs->made++;
	*out = &bs->out;
	ret = 1;
err:
	for (a = 0; a < bp->n; a++)
		accum_state_destroy(st[a]);
	bson_free(st);
	bson_value_destroy(&lo);
	bson_value_destroy(&last);
	return ret;
}

static void
bauto_close(agg_rt_t *rt)
{
	bauto_state_t *bs = rt->state;

	if (bs->ahead != NULL)
		bson_destroy(bs->ahead);
	sorter_free(bs->sorter);
	sort_spec_free(bs->spec);
	bson_destroy(&bs->out);
	bson_free(bs);
}

const agg_stage_def_t agg_stages_group[] = {
	{"$group", group_parse, group_open, group_next, group_close, group_free_plan, 0},
	{"$sortByCount", sbc_parse, NULL, NULL, NULL, NULL, 0},
	{"$bucket", bucket_parse, NULL, NULL, NULL, NULL, 0},
	{"$bucketAuto", bauto_parse, bauto_open, bauto_next, bauto_close, bauto_free_plan, 0},
	{NULL},
};
