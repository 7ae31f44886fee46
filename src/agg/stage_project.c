/*
 * stage_project.c -- $project, $addFields / $set and $unset: reshaping
 * documents with a tree of included, excluded and computed fields.
 *
 * A spec becomes a tree (pnode_t) keyed by field name; dotted names and
 * nested objects both make sub-trees.  Applying it is mongod's two passes:
 * first the inclusions/exclusions (arrays of documents are walked element by
 * element), then the computed fields, which replace a field in place or are
 * appended in spec order; a computed value that is missing drops the field.
 *
 * mongod's documents keep a removed field's slot (Document::remove leaves a
 * missing value in place), so a field an exclusion removes and a later
 * $addFields / $set sets again comes back at the position it had before the
 * exclusion (jstests/aggregation/bugs/exclusion_projection_does_not_affect_
 * field_order.js, SERVER-37791), while excluding a field the document lacks
 * leaves no slot (ProjectionNode::applyProjections removes only the fields it
 * meets).  A computed field whose value is missing ($$REMOVE, a missing path)
 * does leave one, even when the document lacked it: setField of a missing
 * value appends a slot (DocumentStorage::getField), which a later $addFields
 * fills in place.  Here the setting stage reorders its output after the
 * input of each exclusion (and the holes of each $addFields) it reads through
 * the stages that hand mongod's Document on (slots_walk): $match / $limit /
 * $skip / $addFields / exclusions / $unwind / $lookup; $replaceRoot /
 * $replaceWith of a path (the reorder then works inside the promoted
 * document); and the carriers, which hold Documents and hand them on later:
 * an in-memory $sort and the $facet feeding a branch (mongod's sorter and
 * TeeBuffer keep the Documents).  A carrier keeps with each document it
 * holds a skeleton of each exclusion's input (field names; counted in its
 * memory limit, dropped with the document by top-k) and hands it back as
 * the document leaves; a sort that spilled wrote BSON (Document::
 * serializeForSorter skips missing values) and lost them, here too.  A
 * $addFields' holes go the same way (missing Values kept in the Document's
 * storage): a carrier keeps a skeleton of its output with each hole marked
 * undefined, and a promotion takes the document inside.  A classic $group
 * is a carrier too for the document its $first / $last / $top / $bottom
 * of $$ROOT keeps (the accumulator holds the Value, the Document itself,
 * $top's output taken from its {output, sortFields} object), and for each
 * document its $push / $addToSet / $firstN / $lastN / $topN / $bottomN /
 * $maxN / $minN of $$ROOT keeps (each input Value, in the array it
 * outputs: one set of slots per element, handed back by the index of the
 * $unwind of that array, or element by element), reached by a promotion
 * of that field (after the $unwind for an array) or by a $set of a path
 * inside it with no promotion (slots_reorder_at); 9.0 runs a $group
 * classic only when a stage it does not push into SBE comes first
 * (agg_classic_group_input).
 * Otherwise a stage that rebuilds documents ($group, ...) ends the chain.
 *
 * Not here: find's projection ($elemMatch, $slice, positional $) -- query/.
 */
#include "bson/path.h"
#include "bson/slots.h"
#include "agg/agg_private.h"
#include "agg/agg_doc.h"
#include "common/nameidx.h"

#include <string.h>

#include "bson/iter.h"
#include "bson/value.h"
#include "common/mem.h"

typedef enum { PN_INCLUDE, PN_EXCLUDE, PN_EXPR, PN_SUB } pn_kind_t;

typedef struct pnode {
	char *name;
	pn_kind_t kind;
	expr_t *e;                /* PN_EXPR */
	struct pnode *kids;       /* PN_SUB */
	int nkids, cap;
	tm_nameidx_t idx;         /* kids by name (common/nameidx.h): linear parsing */
	bool computed;            /* PN_EXPR, or a PN_SUB with one below */
	uint32_t name_len;        /* strlen(name), set by pnode_index_all */
	/* bit c & 63 set when some kid's name starts with byte c (set by
	 * pnode_index_all): most fields of a document are told apart from the
	 * kids by their first byte, without a lookup */
	uint64_t first;
} pnode_t;

typedef enum { PM_INCLUSION, PM_EXCLUSION, PM_ADD } pmode_t;

typedef struct proj_plan {
	pmode_t mode;
	pnode_t root;
} proj_plan_t;

/* How far a setting stage looks back for slots: the sources it fills
 * (exclusions, $addFields holes), the promotions and $unwind between, the
 * carriers between.  A chain past one of these ends there (the field then
 * lands last): well past what pipelines write (the randomized check's
 * shapes use at most a few of each). */
#define SLOTS_MAX 32
#define SLOT_OPS_MAX 32
#define SLOT_CARRIERS_MAX 16

/* What happened to the Document between an exclusion and the stage using
 * its slots, from the stage up: a $replaceRoot / $replaceWith promoted the
 * document at path (unwind NULL), or the $unwind `unwind` put an element of
 * the array at path in its place (the current one: agg_unwind_current).
 * Paths borrow from the stages' plans. */
typedef struct slot_op {
	const char *path;
	const agg_rt_t *unwind;
} slot_op_t;

typedef struct proj_state {
	bson_t pass1, out;
	bson_t fused;               /* $addFields after an exclusion: out reordered */
	const bson_t *last_in;      /* the input of the last next (valid until the next pull) */
	bson_t fused2;              /* the same, one more exclusion up */
	/* $addFields / $set only: the exclusions ($project / $unset) this stage
	 * reads through $match / $limit / $skip / $addFields / $set, nearest
	 * first, each excluding a field this stage sets (none: nexcl 0) */
	const agg_rt_t *excl_rts[SLOTS_MAX];
	/* for each, how this stage's document came from the exclusion's
	 * input (nearest op first; owned, NULL when excl_nops is 0), and two
	 * buffers to rebuild that input's view through $unwind ops */
	slot_op_t *excl_ops[SLOTS_MAX];
	int excl_nops[SLOTS_MAX];
	bson_t opbuf[2];
	int nexcl;
	/* for each, the classic $group between it and this stage whose array
	 * accumulator of $$ROOT keeps its Documents (NULL: none, or one that
	 * hands its single Document's slots back as it outputs), the $unwind
	 * of that field picking the element (NULL: the array, element by
	 * element), and the node of this stage's tree at the $group's field
	 * when this stage writes inside that field with no promotion between
	 * (NULL: this stage's document is the exclusion's, after excl_ops) */
	const agg_rt_t *excl_grp[SLOTS_MAX], *excl_gunwind[SLOTS_MAX];
	const pnode_t *excl_at[SLOTS_MAX];
	/* $addFields / $set a later one reads (keep_holes): the top-level
	 * fields whose value was missing for the last document (mongod's
	 * setField of a missing value leaves a slot, even for a field the
	 * document lacked), and that document laid out with a null in each
	 * such slot (hole_ref; valid while nholes > 0) */
	bool keep_holes;
	int nholes, holes_cap;
	const pnode_t **holes;
	bson_t hole_ref;
} proj_state_t;

static void
pnode_destroy(pnode_t *n)
{
	int i;

	bson_free(n->name);
	expr_destroy(n->e);
	for (i = 0; i < n->nkids; i++)
		pnode_destroy(&n->kids[i]);
	bson_free(n->kids);
	tm_nameidx_free(&n->idx);
}

static void
proj_free_plan(void *plan)
{
	proj_plan_t *pp = plan;

	pnode_destroy(&pp->root);
	bson_free(pp);
}

static const char *
kid_name(const void *ctx, uint32_t i, size_t *len)
{
	const pnode_t *n = ctx;

	*len = strlen(n->kids[i].name);
	return n->kids[i].name;
}

/* The child called name; indexes the children added since the last call
 * (after pnode_index_all, at run time, the node is only read). */
static pnode_t *
pnode_find(const pnode_t *n, const char *name, size_t len)
{
	int64_t i = tm_nameidx_find((tm_nameidx_t *)&n->idx, (uint32_t)n->nkids, name, len, kid_name, n);

	return i < 0 ? NULL : &n->kids[i];
}

static void
pnode_index_all(pnode_t *n)
{
	(void)pnode_find(n, "", 0);
	n->name_len = n->name != NULL ? (uint32_t)strlen(n->name) : 0;
	n->first = 0;
	for (int i = 0; i < n->nkids; i++) {
		pnode_index_all(&n->kids[i]);
		n->first |= 1ull << ((uint8_t)n->kids[i].name[0] & 63);
	}
}

/* pnode_find at run time (after pnode_index_all): the first-byte filter,
 * then a scan of a few kids, or the index. */
static const pnode_t *
pnode_lookup(const pnode_t *n, const char *name, uint32_t len)
{
	if (len == 0 || !(n->first & (1ull << ((uint8_t)name[0] & 63))))
		return NULL;
	if (n->nkids <= 8) {
		for (int i = 0; i < n->nkids; i++)
			if (n->kids[i].name_len == len && memcmp(n->kids[i].name, name, len) == 0)
				return &n->kids[i];
		return NULL;
	}
	return pnode_find(n, name, len);
}

static pnode_t *
pnode_add(pnode_t *n, const char *name, size_t len)
{
	pnode_t *k;

	if (n->nkids == n->cap) {
		n->cap = n->cap ? n->cap * 2 : 4;
		n->kids = bson_realloc(n->kids, sizeof(pnode_t) * (size_t)n->cap);
	}
	k = &n->kids[n->nkids++];
	memset(k, 0, sizeof(*k));
	k->name = bson_strndup(name, len);
	k->kind = PN_SUB;
	return k;
}

/* Parse context: the stage name for messages, the mode once decided. */
typedef struct pparse {
	const char *stage;        /* "$project", "$addFields", "$set", "$unset" */
	pmode_t mode;
	bool decided;
	expr_scope_t *scope;
	terr_t *err;
} pparse_t;

static int
perr(pparse_t *pp, int code, const char *fmt, const char *a, const char *b)
{
	char *m = bson_strdup_printf(fmt, a, b);

	terr_set(pp->err, code, "Invalid %s :: caused by :: %s", pp->stage, m);
	bson_free(m);
	return -1;
}

/* Place a leaf (kind, e stolen) at dotted path under root. */
static int
place(pparse_t *pp, pnode_t *root, const char *path, pn_kind_t kind, expr_t *e)
{
	pnode_t *n = root, *k;
	const char *p = path, *dot;

	for (;;) {
		size_t len;
		dot = strchr(p, '.');
		len = dot ? (size_t)(dot - p) : strlen(p);
		if (len == 0) {
			expr_destroy(e);
			return perr(pp, 40352, "FieldPath cannot be constructed with empty string%s%s", "", "");
		}
		if (len == 1 && p[0] == '$' && dot == NULL && pp->mode != PM_ADD) {
			expr_destroy(e);
			return perr(pp, 31324, "Cannot use positional projection in aggregation projection%s%s", "", "");
		}
		if (p[0] == '$' && !bpath_is_dbref_field(p, len)) {
			expr_destroy(e);
			return perr(pp, 16410,
			    "FieldPath field names may not start with '$'. Consider using $getField or $setField.%s%s",
			    "", "");
		}
		k = pnode_find(n, p, len);
		if (dot == NULL) {
			if (k != NULL) {
				expr_destroy(e);
				return perr(pp, 31250, "Path collision at %s%s", path, "");
			}
			k = pnode_add(n, p, len);
			k->kind = kind;
			k->e = e;
			return 0;
		}
		if (k == NULL) {
			k = pnode_add(n, p, len);
		} else if (k->kind != PN_SUB) {
			char *pre = bson_strndup(path, (size_t)(dot - path));
			int r = perr(pp, 31249, "Path collision at %s remaining portion %s", pre, dot + 1);
			bson_free(pre);
			expr_destroy(e);
			return r;
		}
		n = k;
		p = dot + 1;
	}
}

static bool
is_expression_object(const bson_value_t *v)
{
	bson_t d;
	bson_iter_t it;

	if (v->value_type != BSON_TYPE_DOCUMENT || !agg_value_doc(v, &d))
		return false;
	return bson_iter_init(&it, &d) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$';
}

static int parse_fields(pparse_t *pp, pnode_t *root, const bson_t *spec, const char *prefix);

static int
decide(pparse_t *pp, pmode_t m, const char *path, bool is_id)
{
	if (pp->mode == PM_ADD)
		return 0;
	if (is_id)
		return 0;  /* _id: 0 or 1 fits both modes */
	if (!pp->decided) {
		pp->decided = true;
		pp->mode = m;
		return 0;
	}
	if (pp->mode == m)
		return 0;
	if (pp->mode == PM_INCLUSION)
		return perr(pp, 31254, "Cannot do exclusion on field %s in inclusion projection%s", path, "");
	return perr(pp, 31253, "Cannot do inclusion on field %s in exclusion projection%s", path, "");
}

static int
parse_one(pparse_t *pp, pnode_t *root, const char *path, const bson_value_t *v)
{
	expr_t *e = NULL;
	bool is_id = strcmp(path, "_id") == 0;

	if (pp->mode != PM_ADD && (v->value_type == BSON_TYPE_BOOL || bv_is_number(v))) {
		bool inc = v->value_type == BSON_TYPE_BOOL ? v->value.v_bool : bv_as_double(v) != 0 || bv_is_nan(v);
		RET(decide(pp, inc ? PM_INCLUSION : PM_EXCLUSION, path, is_id));
		return place(pp, root, path, inc ? PN_INCLUDE : PN_EXCLUDE, NULL);
	}
	if (v->value_type == BSON_TYPE_DOCUMENT && !is_expression_object(v)) {
		bson_t d;
		agg_value_doc(v, &d);
		if (bson_empty(&d)) {
			if (pp->mode == PM_ADD)
				goto expression;
			return perr(pp, 51270,
			    "An empty sub-projection is not a valid value. Found empty object at path%s%s", "", "");
		}
		return parse_fields(pp, root, &d, path);
	}
expression:
	if (pp->mode == PM_EXCLUSION && pp->decided)
		return perr(pp, 31252,
		    "Cannot use expression other than $meta in exclusion projection%s%s", "", "");
	RET(decide(pp, PM_INCLUSION, path, false));
	if (expr_parse(v, pp->scope, &e, pp->err) != 0)
		return -1;
	return place(pp, root, path, PN_EXPR, e);
}

static int
parse_fields(pparse_t *pp, pnode_t *root, const bson_t *spec, const char *prefix)
{
	bson_iter_t it;

	bson_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		RET(tm_interrupt_check(pp->err));
		char *path = prefix ? bson_strdup_printf("%s.%s", prefix, bson_iter_key(&it))
		                    : bson_strdup(bson_iter_key(&it));
		int r = parse_one(pp, root, path, bson_iter_value(&it));
		bson_free(path);
		if (r != 0)
			return -1;
	}
	return 0;
}

static bool
mark_computed(pnode_t *n)
{
	int i;

	n->computed = n->kind == PN_EXPR;
	for (i = 0; i < n->nkids; i++)
		if (mark_computed(&n->kids[i]))
			n->computed = true;
	return n->computed;
}

/* ---- pass 1: inclusion / exclusion -------------------------------------- */

static void include_doc(const pnode_t *n, const bson_t *in, bson_t *out);
static void exclude_doc(const pnode_t *n, const bson_t *in, bson_t *out);

static void
walk_array(const pnode_t *n, const bson_t *arr, bson_t *out, bool inclusion)
{
	bson_iter_t it;
	char key[16];
	const char *k;
	uint32_t i = 0;

	bson_iter_init(&it, arr);
	while (bson_iter_next(&it)) {
		bson_t sub, child;
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			bool is_arr = BSON_ITER_HOLDS_ARRAY(&it);
			agg_value_doc(bson_iter_value(&it), &sub);
			bson_uint32_to_string(i++, &k, key, sizeof(key));
			if (is_arr) {
				bson_append_array_begin(out, k, -1, &child);
				walk_array(n, &sub, &child, inclusion);
				bson_append_array_end(out, &child);
			} else {
				bson_append_document_begin(out, k, -1, &child);
				if (inclusion)
					include_doc(n, &sub, &child);
				else
					exclude_doc(n, &sub, &child);
				bson_append_document_end(out, &child);
			}
		} else if (!inclusion) {
			bson_uint32_to_string(i++, &k, key, sizeof(key));
			bson_append_iter(out, k, -1, &it);
		}
	}
}

static void
include_doc(const pnode_t *n, const bson_t *in, bson_t *out)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const pnode_t *k = pnode_find(n, bson_iter_key(&it), bson_iter_key_len(&it));
		bson_t sub, child;
		if (k == NULL)
			continue;
		if (k->kind == PN_INCLUDE) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
		} else if (k->kind == PN_SUB) {
			if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
				agg_value_doc(bson_iter_value(&it), &sub);
				bson_append_document_begin(out, bson_iter_key(&it), -1, &child);
				include_doc(k, &sub, &child);
				bson_append_document_end(out, &child);
			} else if (BSON_ITER_HOLDS_ARRAY(&it)) {
				agg_value_doc(bson_iter_value(&it), &sub);
				bson_append_array_begin(out, bson_iter_key(&it), -1, &child);
				walk_array(k, &sub, &child, true);
				bson_append_array_end(out, &child);
			}
		}
	}
}

static void
exclude_doc(const pnode_t *n, const bson_t *in, bson_t *out)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const pnode_t *k = pnode_find(n, bson_iter_key(&it), bson_iter_key_len(&it));
		bson_t sub, child;
		if (k == NULL || k->kind == PN_EXPR || k->kind == PN_INCLUDE) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
		} else if (k->kind == PN_SUB && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			agg_value_doc(bson_iter_value(&it), &sub);
			bson_append_document_begin(out, bson_iter_key(&it), -1, &child);
			exclude_doc(k, &sub, &child);
			bson_append_document_end(out, &child);
		} else if (k->kind == PN_SUB && BSON_ITER_HOLDS_ARRAY(&it)) {
			agg_value_doc(bson_iter_value(&it), &sub);
			bson_append_array_begin(out, bson_iter_key(&it), -1, &child);
			walk_array(k, &sub, &child, false);
			bson_append_array_end(out, &child);
		} else if (k->kind == PN_SUB) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
		}
		/* PN_EXCLUDE: dropped */
	}
}

/* ---- pass 2: computed fields -------------------------------------------- */

static int apply_exprs(agg_rt_t *rt, const pnode_t *n, const bson_t *cur, bson_t *out, proj_state_t *hs,
                       terr_t *err);

/* The value of a computed sub-tree applied to v (may be missing): documents
 * get the fields, arrays each element, anything else becomes a new document. */
static int
exprs_to_value(agg_rt_t *rt, const pnode_t *n, const bson_value_t *v, bson_t *out, const char *key,
    proj_state_t *hs, terr_t *err)
{
	bson_t sub, child;

	if (v != NULL && v->value_type == BSON_TYPE_ARRAY) {
		bson_iter_t it;
		char kb[16];
		const char *k;
		uint32_t i = 0;
		agg_value_doc(v, &sub);
		bson_append_array_begin(out, key, -1, &child);
		bson_iter_init(&it, &sub);
		while (bson_iter_next(&it)) {
			bson_uint32_to_string(i++, &k, kb, sizeof(kb));
			if (exprs_to_value(rt, n, bson_iter_value(&it), &child, k, hs, err) != 0) {
				bson_append_array_end(out, &child);
				return -1;
			}
		}
		bson_append_array_end(out, &child);
		return 0;
	}
	bson_append_document_begin(out, key, -1, &child);
	if (v != NULL && v->value_type == BSON_TYPE_DOCUMENT) {
		agg_value_doc(v, &sub);
		if (apply_exprs(rt, n, &sub, &child, hs, err) != 0) {
			bson_append_document_end(out, &child);
			return -1;
		}
	} else if (apply_exprs(rt, n, NULL, &child, hs, err) != 0) {
		bson_append_document_end(out, &child);
		return -1;
	}
	bson_append_document_end(out, &child);
	return 0;
}

static void hole_note(proj_state_t *hs, const pnode_t *k);

/* A computed field whose value is missing: dropped, or (hs: the stage keeps
 * its holes for a later $addFields) a null placeholder in its slot, noted in
 * hs->holes. */
static void
put_missing(const pnode_t *k, bson_t *out, proj_state_t *hs)
{
	if (hs == NULL || !hs->keep_holes)
		return;
	bson_append_null(out, k->name, (int)k->name_len);
	hole_note(hs, k);
}

/* Note plan node k among hs's holes (once). */
static void
hole_note(proj_state_t *hs, const pnode_t *k)
{
	for (int i = 0; i < hs->nholes; i++)
		if (hs->holes[i] == k)
			return;
	if (hs->nholes == hs->holes_cap) {
		hs->holes_cap = hs->holes_cap == 0 ? 8 : hs->holes_cap * 2;
		hs->holes = bson_realloc(hs->holes, sizeof(*hs->holes) * (size_t)hs->holes_cap);
	}
	hs->holes[hs->nholes++] = k;
}

/* The fields of cur a spec leaves alone are copied as raw bytes, one copy
 * per run of them (bv_append_raw), not one append each: for a $set of a
 * field or two, that is one copy of the document.  hs: the stage's state
 * (where its holes are kept). */
static int
apply_exprs(agg_rt_t *rt, const pnode_t *n, const bson_t *cur, bson_t *out, proj_state_t *hs, terr_t *err)
{
	bool done_stack[64], *done = done_stack;
	int i, ret = 0;
	bson_value_t v;

	if (n->nkids > 64)
		done = bson_malloc0(sizeof(bool) * (size_t)n->nkids);
	else if (n->nkids > 0)
		memset(done_stack, 0, sizeof(bool) * (size_t)n->nkids);
	if (cur != NULL) {
		biter_t it;
		const uint8_t *data = bson_get_data(cur);
		uint32_t run_start = 0, run_end = 0;
		biter_init(&it, data, cur->len);
		while (biter_next(&it)) {
			const pnode_t *k = pnode_lookup(n, it.key, it.key_len);
			if (k == NULL || !k->computed) {
				if (run_end == 0)
					run_start = it.off;
				run_end = it.next;
				continue;
			}
			if (run_end != 0) {
				bv_append_raw(out, data + run_start, run_end - run_start);
				run_end = 0;
			}
			done[k - n->kids] = true;
			if (k->kind == PN_EXPR) {
				ERR(expr_eval(k->e, rt->env, &v, err));
				if (v.value_type != BSON_TYPE_EOD)
					bv_append(out, k->name, (int)k->name_len, &v);
				else
					put_missing(k, out, hs);
			} else {
				bson_value_t cv;
				biter_value(&it, &cv);
				ERR(exprs_to_value(rt, k, &cv, out, k->name, hs, err));
			}
		}
		if (run_end != 0)
			bv_append_raw(out, data + run_start, run_end - run_start);
	}
	for (i = 0; i < n->nkids; i++) {
		const pnode_t *k = &n->kids[i];
		if (done[i])
			continue;
		if (!k->computed)
			continue;
		if (k->kind == PN_EXPR) {
			ERR(expr_eval(k->e, rt->env, &v, err));
			if (v.value_type != BSON_TYPE_EOD)
				bv_append(out, k->name, (int)k->name_len, &v);
			else
				put_missing(k, out, hs);
		} else {
			ERR(exprs_to_value(rt, k, NULL, out, k->name, hs, err));
		}
	}
err:
	if (done != done_stack)
		bson_free(done);
	return ret;
}

/* ---- stages ------------------------------------------------------------- */

static int
proj_build(agg_pctx_t *pc, const char *stage, pmode_t mode, const bson_t *spec, int row,
    const bson_value_t *explain_spec, terr_t *err)
{
	proj_plan_t *plan = bson_malloc0(sizeof(*plan));
	pparse_t pp = {.stage = stage, .mode = mode, .decided = mode == PM_ADD, .scope = pc->scope, .err = err};

	plan->root.kind = PN_SUB;
	plan->root.name = bson_strdup("");
	if (parse_fields(&pp, &plan->root, spec, NULL) != 0) {
		proj_free_plan(plan);
		return -1;
	}
	if (!pp.decided) {
		/* only _id: {_id: 1} includes, {_id: 0} excludes */
		const pnode_t *id = pnode_find(&plan->root, "_id", 3);
		pp.mode = id != NULL && id->kind == PN_INCLUDE ? PM_INCLUSION : PM_EXCLUSION;
	}
	plan->mode = pp.mode;
	/* inclusion keeps _id unless told otherwise */
	if (plan->mode == PM_INCLUSION && pnode_find(&plan->root, "_id", 3) == NULL) {
		pnode_t *k = pnode_add(&plan->root, "_id", 3);
		k->kind = PN_INCLUDE;
		/* _id first among the fields */
		if (plan->root.nkids > 1) {
			pnode_t tmp = *k;
			memmove(&plan->root.kids[1], &plan->root.kids[0],
			    sizeof(pnode_t) * (size_t)(plan->root.nkids - 1));
			plan->root.kids[0] = tmp;
			tm_nameidx_reset(&plan->root.idx);
		}
	}
	mark_computed(&plan->root);
	pnode_index_all(&plan->root);
	agg_pctx_add(pc, &agg_stages_project[row], plan, agg_explain_doc(stage, explain_spec));
	return 0;
}

static int
project_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 15969, "$project specification must be an object");
	agg_value_doc(spec, &d);
	if (bson_empty(&d))
		return terr_set(err, 51272,
		    "Invalid $project :: caused by :: projection specification must have at least one field");
	return proj_build(pc, "$project", PM_INCLUSION, &d, 0, spec, err);
}

static int
addfields_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d;

	if (spec->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40272, "%s specification stage must be an object, got %s", pc->name,
		    bv_type_name(spec->value_type));
	agg_value_doc(spec, &d);
	return proj_build(pc, pc->name, PM_ADD, &d, strcmp(pc->name, "$set") == 0 ? 2 : 1, spec, err);
}

static int
unset_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	bson_t d = BSON_INITIALIZER, arr;
	bson_iter_t it;
	int ret;

	if (spec->value_type == BSON_TYPE_UTF8) {
		BSON_APPEND_INT32(&d, spec->value.v_utf8.str, 0);
	} else if (spec->value_type == BSON_TYPE_ARRAY) {
		agg_value_doc(spec, &arr);
		bson_iter_init(&it, &arr);
		while (bson_iter_next(&it)) {
			if (!BSON_ITER_HOLDS_UTF8(&it)) {
				bson_destroy(&d);
				return terr_set(err, 31120,
				    "$unset specification must be a string or an array containing only string values");
			}
			BSON_APPEND_INT32(&d, bson_iter_utf8(&it, NULL), 0);
		}
	} else {
		return terr_set(err, 31002, "$unset specification must be a string or an array");
	}
	if (bson_empty(&d)) {
		bson_destroy(&d);
		return terr_set(err, 31119, "$unset specification must be a string or an array with at least one field");
	}
	ret = proj_build(pc, "$unset", PM_EXCLUSION, &d, 3, spec, err);
	bson_destroy(&d);
	return ret;
}

/* ---- slots of excluded fields (see the head comment) --------------------- */

/* Is plan node k one of the holes (missing computed values) hs noted for
 * the last document? */
static bool
is_hole(const proj_state_t *hs, const pnode_t *k)
{
	for (int i = 0; hs != NULL && k != NULL && i < hs->nholes; i++)
		if (hs->holes[i] == k)
			return true;
	return false;
}

static void holes_drop(const bson_t *in, const pnode_t *n, const proj_state_t *hs, bson_t *out);

/* it's value under k (a computed sub-tree) without hs's placeholders:
 * documents by field, arrays element by element. */
static void
holes_drop_value(bson_t *out, const bson_iter_t *it, const pnode_t *k, const proj_state_t *hs)
{
	bson_t sub, child;
	bson_iter_t ai;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it)) {
		bson_append_iter(out, NULL, 0, it);
		return;
	}
	agg_value_doc(bson_iter_value((bson_iter_t *)it), &sub);
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_append_document_begin(out, bson_iter_key(it), (int)bson_iter_key_len(it), &child);
		holes_drop(&sub, k, hs, &child);
		bson_append_document_end(out, &child);
		return;
	}
	bson_append_array_begin(out, bson_iter_key(it), (int)bson_iter_key_len(it), &child);
	bson_iter_init(&ai, &sub);
	while (bson_iter_next(&ai))
		holes_drop_value(&child, &ai, k, hs);
	bson_append_array_end(out, &child);
}

/* Copy in to out without the null placeholders of hs's holes (n: the plan
 * node at this level). */
static void
holes_drop(const bson_t *in, const pnode_t *n, const proj_state_t *hs, bson_t *out)
{
	bson_iter_t it;

	bson_iter_init(&it, in);
	while (bson_iter_next(&it)) {
		const pnode_t *k = pnode_lookup(n, bson_iter_key(&it), bson_iter_key_len(&it));
		if (k != NULL && k->kind == PN_EXPR && BSON_ITER_HOLDS_NULL(&it) && is_hole(hs, k))
			continue;
		if (k == NULL || k->kind != PN_SUB)
			bson_append_iter(out, NULL, 0, &it);
		else
			holes_drop_value(out, &it, k, hs);
	}
}

/* Does some field set by `add` have a slot `excl` removes (excluded, or an
 * exclusion below it that `add` also writes below)? */
static bool
slots_meet(const pnode_t *excl, const pnode_t *add)
{
	for (int i = 0; i < add->nkids; i++) {
		const pnode_t *k = pnode_lookup(excl, add->kids[i].name, add->kids[i].name_len);
		if (k == NULL)
			continue;
		if (k->kind == PN_EXCLUDE)
			return true;
		if (k->kind == PN_SUB && add->kids[i].kind == PN_SUB && slots_meet(k, &add->kids[i]))
			return true;
	}
	return false;
}

/* bson/slots.h's view of this file's trees: an exclusion's (or a
 * $addFields' whose holes, in ctx, are its slots) and a setting stage's. */
static const void *
slot_child(const void *node, const char *name, uint32_t len)
{
	return pnode_lookup(node, name, len);
}

static bool
slot_has_kids(const void *node)
{
	return ((const pnode_t *)node)->kind == PN_SUB;
}

static bool
slot_is_slot(const void *ctx, const void *node)
{
	return ((const pnode_t *)node)->kind == PN_EXCLUDE || is_hole(ctx, node);
}

static const bslots_nodes_t slot_nodes = {slot_child, slot_has_kids, slot_is_slot};

/* res: out laid out after ref (bslots_reorder), the slots being the fields
 * excl excludes or, for a $addFields source (excl its plan, ref its
 * hole_ref), the holes hs noted. */
static void
slots_reorder(const bson_t *out, const bson_t *ref, const pnode_t *excl, const pnode_t *add, const proj_state_t *hs,
              bson_t *res)
{
	bslots_reorder(out, ref, excl, add, &slot_nodes, hs, res);
}

static bool slots_skeleton(const bson_t *ref, const pnode_t *excl, const proj_state_t *hs, bson_t *out);

/* it's value under k (a sub-tree of the exclusion, or of the $addFields
 * whose holes hs notes) as a skeleton under name: documents by field,
 * arrays element by element (as bslots_reorder walks them), anything else
 * null. */
static bool
skeleton_value(bson_t *out, const char *name, int len, const bson_iter_t *it, const pnode_t *k,
               const proj_state_t *hs)
{
	bson_t sub, child;
	bson_iter_t ai;
	bool slot = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it)) {
		bson_append_null(out, name, len);
		return false;
	}
	agg_value_doc(bson_iter_value((bson_iter_t *)it), &sub);
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_append_document_begin(out, name, len, &child);
		slot = slots_skeleton(&sub, k, hs, &child);
		bson_append_document_end(out, &child);
		return slot;
	}
	bson_append_array_begin(out, name, len, &child);
	bson_iter_init(&ai, &sub);
	while (bson_iter_next(&ai))
		slot |= skeleton_value(&child, bson_iter_key(&ai), (int)bson_iter_key_len(&ai), &ai, k, hs);
	bson_append_array_end(out, &child);
	return slot;
}

/* Append to out ref's fields in order, each value null except below a
 * sub-tree of the exclusion node excl: all slots_reorder reads of an
 * exclusion's input, a few bytes per field.  Returns whether ref holds a
 * field excl removes (a slot).  With hs (excl a $addFields' plan, ref its
 * hole_ref): a hole's placeholder becomes undefined instead (holes_collect
 * reads them back), and the slots are the holes. */
static bool
slots_skeleton(const bson_t *ref, const pnode_t *excl, const proj_state_t *hs, bson_t *out)
{
	bson_iter_t it;
	bool slot = false;

	bson_iter_init(&it, ref);
	while (bson_iter_next(&it)) {
		const char *name = bson_iter_key(&it);
		uint32_t len = bson_iter_key_len(&it);
		const pnode_t *k = pnode_lookup(excl, name, len);
		if (k != NULL && hs == NULL && k->kind == PN_EXCLUDE)
			slot = true;
		/* a placeholder: null in the stage's own hole_ref, undefined in
		 * one a carrier handed back */
		if (k != NULL && hs != NULL && k->kind == PN_EXPR &&
		    (BSON_ITER_HOLDS_NULL(&it) || BSON_ITER_HOLDS_UNDEFINED(&it)) && is_hole(hs, k)) {
			bson_append_undefined(out, name, (int)len);
			slot = true;
		} else if (k == NULL || k->kind != PN_SUB) {
			bson_append_null(out, name, (int)len);
		} else {
			slot |= skeleton_value(out, name, (int)len, &it, k, hs);
		}
	}
	return slot;
}

static void holes_collect(const bson_t *sk, const pnode_t *n, proj_state_t *hs);

/* holes_collect below it's value under k: documents by field, arrays
 * element by element. */
static void
holes_collect_value(const bson_iter_t *it, const pnode_t *k, proj_state_t *hs)
{
	bson_t sub;
	bson_iter_t ai;

	if (!BSON_ITER_HOLDS_DOCUMENT(it) && !BSON_ITER_HOLDS_ARRAY(it))
		return;
	agg_value_doc(bson_iter_value((bson_iter_t *)it), &sub);
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		holes_collect(&sub, k, hs);
		return;
	}
	bson_iter_init(&ai, &sub);
	while (bson_iter_next(&ai))
		holes_collect_value(&ai, k, hs);
}

/* Note in hs the holes a skeleton (slots_skeleton with hs) marks below
 * plan node n. */
static void
holes_collect(const bson_t *sk, const pnode_t *n, proj_state_t *hs)
{
	bson_iter_t it;

	bson_iter_init(&it, sk);
	while (bson_iter_next(&it)) {
		const pnode_t *k = pnode_lookup(n, bson_iter_key(&it), bson_iter_key_len(&it));
		if (k == NULL)
			continue;
		if (k->kind == PN_EXPR && BSON_ITER_HOLDS_UNDEFINED(&it))
			hole_note(hs, k);
		else if (k->kind == PN_SUB)
			holes_collect_value(&it, k, hs);
	}
}

bool
agg_proj_slot_skeleton(const agg_rt_t *excl, bson_t *out)
{
	const proj_state_t *es = excl->state;
	const proj_plan_t *ep = excl->st->plan;

	if (ep->mode == PM_ADD)
		return es->nholes > 0 && slots_skeleton(&es->hole_ref, &ep->root, es, out);
	return es->last_in != NULL && slots_skeleton(es->last_in, &ep->root, NULL, out);
}

void
agg_proj_slot_set(const agg_rt_t *excl, const bson_t *ref)
{
	proj_state_t *es = excl->state;
	const proj_plan_t *ep = excl->st->plan;

	if (ep->mode != PM_ADD) {
		es->last_in = ref;
		return;
	}
	/* a $addFields' holes, from the skeleton a carrier kept (NULL: none) */
	es->nholes = 0;
	if (ref == NULL)
		return;
	holes_collect(ref, &ep->root, es);
	if (es->nholes > 0) {
		bson_reinit(&es->hole_ref);
		bson_concat(&es->hole_ref, ref);
	}
}

/* The node of exclusion tree n at dotted path (NULL: n itself), or NULL
 * when the exclusion has no sub-tree there. */
static const pnode_t *
slots_node_at(const pnode_t *n, const char *path)
{
	while (path != NULL && n != NULL) {
		const char *dot = strchr(path, '.');
		size_t len = dot != NULL ? (size_t)(dot - path) : strlen(path);
		n = pnode_lookup(n, path, (uint32_t)len);
		if (n != NULL && n->kind != PN_SUB)
			n = NULL;
		path = dot != NULL ? dot + 1 : NULL;
	}
	return n;
}

/* The document at dotted path in ref (path NULL: ref) as *sub (static over
 * ref's bytes); false when the path does not lead to a document. */
static bool
slots_doc_at(const bson_t *ref, const char *path, bson_t *sub)
{
	const bson_t *cur = ref;

	while (path != NULL) {
		const char *dot = strchr(path, '.');
		size_t len = dot != NULL ? (size_t)(dot - path) : strlen(path);
		bson_iter_t it;
		const uint8_t *data;
		uint32_t dlen;
		if (!bson_iter_init_find_w_len(&it, cur, path, (int)len) || !BSON_ITER_HOLDS_DOCUMENT(&it))
			return false;
		bson_iter_document(&it, &dlen, &data);
		if (!bson_init_static(sub, data, dlen))
			return false;
		cur = sub;
		path = dot != NULL ? dot + 1 : NULL;
	}
	if (cur == ref && !bson_init_static(sub, bson_get_data(ref), ref->len))
		return false;
	return true;
}

/* Does `add` set a field `src` (a $addFields) computes, which may be
 * missing and leave a slot? */
static bool
holes_meet(const pnode_t *src, const pnode_t *add)
{
	for (int i = 0; i < add->nkids; i++) {
		const pnode_t *k = pnode_lookup(src, add->kids[i].name, add->kids[i].name_len);
		if (k == NULL)
			continue;
		if (k->kind == PN_EXPR)
			return true;
		if (k->kind == PN_SUB && add->kids[i].kind == PN_SUB && holes_meet(k, &add->kids[i]))
			return true;
	}
	return false;
}

static int proj_open(agg_rt_t *rt, terr_t *err);

/* A stage that holds the Documents it reads and hands them on later, slots
 * included: an in-memory $sort, or the $facet feeding a branch.  Asked to
 * carry an exclusion's slots; false when it cannot. */
static bool
carrier_carry(const agg_rt_t *c, const char *path, const agg_rt_t *excl)
{
	if (path != NULL)
		return agg_group_carry_slots(c, excl, path);
	return agg_is_sort_stage(c) ? agg_sort_carry_slots(c, excl) : agg_facet_carry_slots(c, excl);
}

bool
agg_classic_group_input(const agg_rt_t *group_rt, const agg_rt_t *excl)
{
	if (group_rt->x != NULL && group_rt->x->feeder != NULL)
		return true;           /* a $facet branch: DocumentSources only */
	if (excl->st->def->open == proj_open && ((const proj_plan_t *)excl->st->plan)->mode == PM_ADD)
		return true;           /* a $addFields is never in 9.0's pushed-down prefix */
	for (const agg_rt_t *in = excl->input; in != NULL; in = in->input) {
		const char *name = in->st->def->name;
		if (strcmp(name, "$match") != 0 && strcmp(name, "$limit") != 0 && strcmp(name, "$skip") != 0 &&
		    !agg_is_sort_stage(in))
			return true;
	}
	return false;
}

/* Walk up from the stage before rt (or, for a candidates walk, from `from`
 * itself) through the stages that hand mongod's Document on with its slots:
 * $match / $limit / $skip; $unwind and $lookup, which set a field in (a copy
 * of) the same Document (DocumentSourceUnwind's _output, DocumentSourceLookUp's
 * MutableDocument of its input; DocumentStorage::clone copies the removed
 * fields too; here both emit from one input at a time, so the source's last
 * input is still the current document's); other $addFields / $set and
 * exclusions; $replaceRoot / $replaceWith of "$path" or $$ROOT (the Document
 * found there, with the slots inside it; mongod's ReplaceRootTransformation
 * builds on newRoot's Document); and the carriers, an in-memory $sort and a
 * branch's $facet, which keep the Documents (each exclusion met past one
 * must be carried by it).
 *
 * from: the first stage to look at (NULL: the source of x's pipeline).
 * With ps (a stage setting the fields of plan): into ps->excl_rts, nearest first,
 * the exclusions whose removed slots it may fill and the $addFields / $set
 * whose missing values' slots it may fill (those keep their holes from now
 * on).  Without (a $facet's open, from its input): into cands[0..max) the
 * exclusions a stage after `from` may fill (any with a sub-tree where the
 * document then lies); returns how many. */
static int
slots_walk(const proj_plan_t *plan, proj_state_t *ps, const agg_rt_t *from, const agg_exec_t *x,
           const agg_rt_t **cands, int max)
{
	const agg_rt_t *in, *carriers[SLOT_CARRIERS_MAX];
	const char *carrier_paths[SLOT_CARRIERS_MAX];  /* a $group's: the field of its document accumulator */
	int ncarriers = 0, n = 0, nops = 0;
	slot_op_t ops[SLOT_OPS_MAX];   /* how rt's document came from the input of `in` */
	const char *rp;
	int64_t idx;
	/* see proj_state_t's excl_grp: set by the first $group met that keeps
	 * an array of Documents, or that this stage writes inside */
	const agg_rt_t *grp = NULL, *gunwind = NULL;
	const pnode_t *at = NULL;
	/* the carriers a stage upstream asks, from the nearest the source
	 * down to this index: past grp (which hands each element's slots back
	 * from its own packs, agg_group_slot_element) the carriers after it
	 * keep only the group and the element, not what grp already keeps */
	int ask_lo = 0;
	/* the projections passed since the last promotion or $group: one that
	 * replaced or removed a $group's field whole ends the chain there
	 * (past SLOTS_MAX of them, any does); the same for $lookup's `as` */
	const proj_plan_t *passed[SLOTS_MAX];
	int npassed = 0;
	/* the same for the $lookup stages' `as` paths */
	const char *as[SLOTS_MAX];
	int nas = 0;

	if (ps != NULL)
		ps->nexcl = 0;
	if (ps != NULL && plan->mode != PM_ADD)
		return 0;
	for (in = from; n < (ps != NULL ? SLOTS_MAX : max); in = in->input) {
		if (in == NULL) {
			/* a $facet branch: on into the pipeline feeding the $facet */
			if (x == NULL || x->feeder == NULL || ncarriers == (int)(sizeof(carriers) / sizeof(carriers[0])))
				break;
			carrier_paths[ncarriers] = NULL;
			carriers[ncarriers++] = x->feeder;
			in = x->feeder;
			x = in->x;
			continue;
		}
		const char *name = in->st->def->name;
		if (strcmp(name, "$match") == 0 || strcmp(name, "$limit") == 0 || strcmp(name, "$skip") == 0)
			continue;
		if (strcmp(name, "$lookup") == 0) {
			/* its `as` sets a field: a $group's field set whole (below) */
			if (nas < SLOTS_MAX)
				as[nas] = agg_lookup_as(in);
			nas++;
			continue;
		}
		/* the element $unwind puts in place is the Value of the array's
		 * element, a Document with its own slots */
		if (agg_unwind_current(in, &rp, &idx)) {
			/* past a carrier, the $unwind's current element is that of the
			 * document the carrier took last: each carrier keeps it with
			 * its documents too and sets it back as it hands them on */
			bool carried = nops < SLOT_OPS_MAX;
			/* nearest the source first: one that refuses leaves the
			 * carriers after it unasked (they would keep a stale document) */
			for (int i = ncarriers - 1; i >= ask_lo && carried; i--)
				carried = carrier_carry(carriers[i], carrier_paths[i], in);
			if (!carried)
				break;
			if (ps == NULL && n < max)
				cands[n++] = in;
			ops[nops++] = (slot_op_t){rp, in};
			continue;
		}
		if (agg_is_sort_stage(in)) {
			if (ncarriers == (int)(sizeof(carriers) / sizeof(carriers[0])))
				break;
			carrier_paths[ncarriers] = NULL;
			carriers[ncarriers++] = in;
			continue;
		}
		/* a classic $group keeps the Documents its accumulators of $$ROOT
		 * took (AccumulatorFirst and AccumulatorTopBottomN hold the Value;
		 * AccumulatorPush and AccumulatorN each input Value, in the array
		 * the group outputs): the document promoted from that field (from
		 * an $unwind's element of it), or the field itself this stage
		 * writes inside, is the group's input one */
		if (agg_is_group_stage(in)) {
			/* past one whose Documents are chosen as this stage runs
			 * (grp, at), the chain ends */
			if (ncarriers == (int)(sizeof(carriers) / sizeof(carriers[0])) || grp != NULL || at != NULL)
				break;
			const agg_rt_t *uw = NULL;
			const char *field = NULL, *cpath;
			int kind = 0;
			if (nops > 0 && ops[nops - 1].unwind != NULL &&
			    agg_group_root_field(in, ops[nops - 1].path, strlen(ops[nops - 1].path)) == 2) {
				uw = ops[nops - 1].unwind;
				field = ops[nops - 1].path;
				nops--;
			}
			if (nops > 0 && ops[nops - 1].unwind == NULL && ops[nops - 1].path != NULL) {
				/* a promotion of the field, or of a path inside it */
				const char *pp = ops[nops - 1].path;
				size_t flen = strcspn(pp, ".");
				kind = agg_group_root_field(in, pp, flen);
				if (kind == 0 || (kind == 2) != (uw != NULL) ||
				    (uw != NULL && (strlen(field) != flen || memcmp(field, pp, flen) != 0)))
					break;
				/* a deeper promotion ("$d.s") takes the document at the
				 * rest of the path inside the group's input one */
				const char *dot = strchr(pp, '.');
				cpath = pp;
				if (dot != NULL)
					ops[nops - 1].path = dot + 1;
				else
					nops--;
			} else if (nops == 0 && ps != NULL) {
				/* no promotion: this stage sets a path inside the field
				 * (MutableDocument of the kept Document: its slots) */
				const pnode_t *k = NULL;
				if (uw != NULL) {
					k = pnode_lookup(&plan->root, field, (uint32_t)strlen(field));
					kind = 2;
				} else {
					for (int j = 0; j < plan->root.nkids && k == NULL; j++)
						if (plan->root.kids[j].kind == PN_SUB &&
						    (kind = agg_group_root_field(in, plan->root.kids[j].name,
						                                 plan->root.kids[j].name_len)) != 0)
							k = &plan->root.kids[j];
				}
				if (k == NULL || k->kind != PN_SUB)
					break;
				at = k;
				cpath = k->name;
			} else {
				break;
			}
			/* a stage between that replaced the field whole holds other
			 * Values (or the same in another order) */
			size_t clen = strcspn(cpath, ".");
			bool replaced = npassed > SLOTS_MAX || nas > SLOTS_MAX;   /* too many to tell */
			for (int j = 0; j < npassed && j < SLOTS_MAX && !replaced; j++) {
				const pnode_t *k = pnode_lookup(&passed[j]->root, cpath, (uint32_t)clen);
				replaced = k != NULL && k->kind != PN_SUB;
			}
			for (int j = 0; j < nas && j < SLOTS_MAX && !replaced; j++)
				replaced = as[j] == NULL || (strcspn(as[j], ".") == clen && memcmp(as[j], cpath, clen) == 0);
			if (replaced)
				break;
			/* one set of slots per element, chosen as this stage runs
			 * (a $facet's candidates never go through it) */
			if (kind == 2) {
				if (ps == NULL)
					break;
				/* an in-memory $sort between keeps, with each document,
				 * the group it came from (nearest the source first) */
				bool carried = true;
				for (int i = ncarriers - 1; i >= 0 && carried; i--)
					carried = carrier_paths[i] == NULL && agg_is_sort_stage(carriers[i]) &&
					          agg_sort_carry_slots(carriers[i], in);
				if (!carried)
					break;
				grp = in;
				gunwind = uw;
				ask_lo = ncarriers;
			}
			carrier_paths[ncarriers] = cpath;
			carriers[ncarriers++] = in;
			npassed = nas = 0;
			continue;
		}
		if (agg_replace_root_path(in, &rp)) {
			if (rp != NULL) {
				if (nops == SLOT_OPS_MAX)
					break;
				ops[nops++] = (slot_op_t){rp, NULL};
				npassed = nas = 0;
			}
			continue;
		}
		if (in->st->def->open != proj_open)
			break;
		const proj_plan_t *ip = in->st->plan;
		if (ip->mode == PM_INCLUSION)
			break;
		if (npassed < SLOTS_MAX)
			passed[npassed] = ip;
		npassed++;
		/* an exclusion's removed fields, or a $addFields' holes (its
		 * missing computed values), followed the same way: into the
		 * document a promotion took, across the carriers */
		bool add = ip->mode == PM_ADD;
		const pnode_t *en = &ip->root;
		for (int i = nops - 1; i >= 0 && en != NULL; i--)
			if (ops[i].unwind == NULL)
				en = slots_node_at(en, ops[i].path);
		const pnode_t *setn = ps == NULL ? NULL : at != NULL ? at : &plan->root;
		if (en != NULL && (ps == NULL ? !add || en->computed
		                              : add ? holes_meet(en, setn) : slots_meet(en, setn))) {
			bool carried = true;
			/* nearest the source first: one that refuses leaves the
			 * carriers after it unasked (they would keep a stale document) */
			for (int i = ncarriers - 1; i >= ask_lo && carried; i--)
				carried = carrier_carry(carriers[i], carrier_paths[i], in);
			if (!carried)
				break;
			if (add)
				((proj_state_t *)in->state)->keep_holes = true;
			if (ps != NULL) {
				ps->excl_nops[ps->nexcl] = nops;
				ps->excl_ops[ps->nexcl] = nops > 0 ? bson_malloc(sizeof(slot_op_t) * (size_t)nops) : NULL;
				if (nops > 0)
					memcpy(ps->excl_ops[ps->nexcl], ops, sizeof(slot_op_t) * (size_t)nops);
				ps->excl_grp[ps->nexcl] = grp;
				ps->excl_gunwind[ps->nexcl] = gunwind;
				ps->excl_at[ps->nexcl] = at;
				ps->excl_rts[ps->nexcl++] = in;
			} else {
				cands[n] = in;
			}
			n++;
		}
	}
	return n;
}

int
agg_proj_slot_candidates(const agg_rt_t *from, const agg_rt_t **out, int max)
{
	return from != NULL ? slots_walk(NULL, NULL, from, from->x, out, max) : 0;
}

bool
agg_carry_add(const agg_rt_t ***srcs, bson_t **views, int *n, int *cap, const agg_rt_t *src)
{
	if (*n == AGG_CARRY_MAX)
		return false;
	if (*n == *cap) {
		*cap = *cap == 0 ? 4 : *cap * 2 > AGG_CARRY_MAX ? AGG_CARRY_MAX : *cap * 2;
		*srcs = bson_realloc((void *)*srcs, sizeof(**srcs) * (size_t)*cap);
		bson_t *v = tm_bson_array_new((size_t)*cap);    /* bson_t's alignment */
		if (*n > 0)
			memcpy(v, *views, sizeof(*v) * (size_t)*n);
		bson_free(*views);
		*views = v;
	}
	(*srcs)[(*n)++] = src;
	return true;
}

size_t
agg_proj_slots_pack(const agg_rt_t *const *srcs, int n, bson_t *scratch, uint8_t **buf, size_t *cap)
{
	size_t len = 0;
	bool any = false;

	for (int j = 0; j < n; j++) {
		const char *up;
		int64_t idx;
		bson_reinit(scratch);
		if (agg_unwind_current(srcs[j], &up, &idx))
			BSON_APPEND_INT64(scratch, "i", idx);      /* its current element */
		else if (agg_is_group_stage(srcs[j])) {
			/* the group its document is: that group's kept documents */
			idx = agg_group_current(srcs[j]);
			BSON_APPEND_INT64(scratch, "g", idx);
			any |= idx >= 0;
		} else if (agg_proj_slot_skeleton(srcs[j], scratch))
			any = true;
		else
			bson_reinit(scratch);
		if (len + scratch->len > *cap) {
			*cap = (len + scratch->len) * 2;
			*buf = bson_realloc(*buf, *cap);
		}
		memcpy(*buf + len, bson_get_data(scratch), scratch->len);
		len += scratch->len;
	}
	return any ? len : 0;
}

void
agg_proj_slots_unpack(const agg_rt_t *const *srcs, int n, const uint8_t *aux, uint32_t len, bson_t *views)
{
	uint32_t off = 0;

	for (int j = 0; j < n; j++) {
		const bson_t *ref = NULL;
		const char *up;
		int64_t idx;
		uint32_t l;
		bson_iter_t it;
		if (aux != NULL && len - off >= 5) {
			memcpy(&l, aux + off, 4);
			l = BSON_UINT32_FROM_LE(l);
			if (l > len - off)
				l = len - off;
			else if (l > 5 && bson_init_static(&views[j], aux + off, l))
				ref = &views[j];
			off += l;
		}
		if (agg_unwind_current(srcs[j], &up, &idx))
			agg_unwind_set_current(srcs[j], ref != NULL && bson_iter_init_find(&it, ref, "i") &&
			                                        BSON_ITER_HOLDS_INT64(&it) ? bson_iter_int64(&it) : -1);
		else if (agg_is_group_stage(srcs[j]))
			agg_group_set_current(srcs[j], ref != NULL && bson_iter_init_find(&it, ref, "g") &&
			                                       BSON_ITER_HOLDS_INT64(&it) ? bson_iter_int64(&it) : -1);
		else
			agg_proj_slot_set(srcs[j], ref);
	}
}

/* The exclusion i's input seen as the current document: its ops applied
 * from the exclusion on -- a promotion takes the document at its path (and
 * the exclusion's sub-tree there), an $unwind puts the current element in
 * place of the array at its path (rebuilt in ps->opbuf, only when the
 * exclusion has a sub-tree there).  *sub: a static view; false when the
 * path no longer leads to a document (no slot). */
static bool
slots_follow(proj_state_t *ps, int i, const bson_t *ref, const pnode_t **node, bson_t *sub)
{
	const slot_op_t *ops = ps->excl_ops[i];
	int buf = 0;
	bson_t cur;

	if (!bson_init_static(sub, bson_get_data(ref), ref->len))
		return false;
	for (int k = ps->excl_nops[i] - 1; k >= 0; k--) {
		const char *rp;
		int64_t idx;
		bson_value_t v;
		if (ops[k].unwind == NULL) {
			*node = slots_node_at(*node, ops[k].path);
			cur = *sub;
			if (*node == NULL || !slots_doc_at(&cur, ops[k].path, sub))
				return false;
			continue;
		}
		if (slots_node_at(*node, ops[k].path) == NULL)
			continue;       /* nothing removed below the unwound path */
		if (!agg_unwind_current(ops[k].unwind, &rp, &idx) || idx < 0 ||
		    !agg_doc_get_path(sub, ops[k].path, &v) || v.value_type != BSON_TYPE_ARRAY)
			continue;
		bson_t arr;
		bson_iter_t it;
		char key[24];
		const char *ks;
		agg_value_doc(&v, &arr);
		bson_uint32_to_string((uint32_t)idx, &ks, key, sizeof(key));
		if (idx > UINT32_MAX || !bson_iter_init_find(&it, &arr, ks))
			continue;
		bson_t *dst = &ps->opbuf[buf];
		bson_reinit(dst);
		agg_doc_set_path(sub, ops[k].path, bson_iter_value(&it), dst);
		buf ^= 1;
		if (!bson_init_static(sub, bson_get_data(dst), dst->len))
			return false;
	}
	return true;
}

/* The exclusion i's input (or the $addFields' output with its holes) seen
 * as this stage's document, or as the document inside the $group's field
 * it writes in (excl_at): *sub (static), *en the exclusion's tree there,
 * *hs the $addFields' state (NULL: an exclusion).  False: no slot. */
static bool
slots_view(proj_state_t *ps, int i, const pnode_t **en, const proj_state_t **hs, bson_t *sub)
{
	const proj_state_t *es = ps->excl_rts[i]->state;
	const proj_plan_t *ep = ps->excl_rts[i]->st->plan;

	if (ep->mode == PM_ADD ? es->nholes == 0 : es->last_in == NULL)
		return false;       /* no slot in this document */
	const bson_t *ref = ep->mode == PM_ADD ? &es->hole_ref : es->last_in;
	*hs = ep->mode == PM_ADD ? es : NULL;
	*en = &ep->root;
	if (ps->excl_nops[i] == 0)
		return bson_init_static(sub, bson_get_data(ref), ref->len);
	/* the document promoted or unwound from it: its slots, inside */
	return slots_follow(ps, i, ref, en, sub);
}

/* res: out with the value of the field at (the $group's field this stage
 * writes inside) laid out after exclusion i's view -- a document after the
 * one view, or (elements) an array element by element, each after the
 * view of the document the group's accumulator took for it. */
static void
slots_reorder_at(proj_state_t *ps, int i, const bson_t *out, const pnode_t *at, bool elements, bson_t *res)
{
	bson_iter_t it, ei;
	bson_t osub, sub, child, arr;
	const pnode_t *en;
	const proj_state_t *hs;

	bson_iter_init(&it, out);
	while (bson_iter_next(&it)) {
		if (bson_iter_key_len(&it) != at->name_len || memcmp(bson_iter_key(&it), at->name, at->name_len) != 0 ||
		    !(elements ? BSON_ITER_HOLDS_ARRAY(&it) : BSON_ITER_HOLDS_DOCUMENT(&it))) {
			bson_append_iter(res, NULL, 0, &it);
			continue;
		}
		agg_value_doc(bson_iter_value(&it), &osub);
		if (!elements) {
			if (!slots_view(ps, i, &en, &hs, &sub)) {
				bson_append_iter(res, NULL, 0, &it);
				continue;
			}
			bson_append_document_begin(res, at->name, (int)at->name_len, &child);
			slots_reorder(&osub, &sub, en, at, hs, &child);
			bson_append_document_end(res, &child);
			continue;
		}
		bson_append_array_begin(res, at->name, (int)at->name_len, &arr);
		bson_iter_init(&ei, &osub);
		for (int64_t j = 0; bson_iter_next(&ei); j++) {
			bson_t el;
			agg_group_slot_element(ps->excl_grp[i], j);
			if (!BSON_ITER_HOLDS_DOCUMENT(&ei) || !slots_view(ps, i, &en, &hs, &sub)) {
				bson_append_iter(&arr, NULL, 0, &ei);
				continue;
			}
			agg_value_doc(bson_iter_value(&ei), &el);
			bson_append_document_begin(&arr, bson_iter_key(&ei), (int)bson_iter_key_len(&ei), &child);
			slots_reorder(&el, &sub, en, at, hs, &child);
			bson_append_document_end(&arr, &child);
		}
		bson_append_array_end(res, &arr);
	}
}

/* Lay *out (the setting stage's result for the current document) out after
 * the input of each exclusion (or the holes of each $addFields) in ps, nearest
 * first: the result of one is laid out after the next one's input.  *out
 * may become ps->fused or ps->fused2. */
static void
slots_apply(const proj_plan_t *plan, proj_state_t *ps, const bson_t **out)
{
	for (int i = 0; i < ps->nexcl; i++) {
		bson_t *dst = *out == &ps->fused ? &ps->fused2 : &ps->fused;
		const pnode_t *en;
		const proj_state_t *hs;
		bson_t sub;
		/* an $unwind of a $group's array of kept Documents: the slots
		 * of the one its current element is */
		if (ps->excl_gunwind[i] != NULL) {
			const char *rp;
			int64_t idx;
			if (!agg_unwind_current(ps->excl_gunwind[i], &rp, &idx))
				idx = -1;
			agg_group_slot_element(ps->excl_grp[i], idx);
		}
		if (ps->excl_at[i] != NULL) {
			bson_reinit(dst);
			slots_reorder_at(ps, i, *out, ps->excl_at[i],
			                 ps->excl_grp[i] != NULL && ps->excl_gunwind[i] == NULL, dst);
			*out = dst;
			continue;
		}
		if (!slots_view(ps, i, &en, &hs, &sub))
			continue;
		bson_reinit(dst);
		slots_reorder(*out, &sub, en, &plan->root, hs, dst);
		*out = dst;
	}
}

/* ---- slots filled by other stages ($lookup's as, $unwind's
 * includeArrayIndex), which set a field on their input's Document as
 * setField does (see agg_private.h) ---- */
struct agg_slot_filler {
	proj_plan_t plan;       /* PM_ADD: the one path set, a PN_EXPR leaf */
	proj_state_t ps;
};

agg_slot_filler_t *
agg_slot_filler_new(const agg_rt_t *rt, const char *path)
{
	agg_slot_filler_t *f;
	pnode_t *n;

	if (rt->input == NULL && rt->x->feeder == NULL)
		return NULL;
	f = tm_alloc0(sizeof(*f));
	f->plan.mode = PM_ADD;
	n = &f->plan.root;
	for (const char *p = path; p != NULL;) {
		const char *dot = strchr(p, '.');
		size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		n = pnode_add(n, p, len);
		p = dot != NULL ? dot + 1 : NULL;
	}
	n->kind = PN_EXPR;
	pnode_index_all(&f->plan.root);
	bson_init(&f->ps.fused);
	bson_init(&f->ps.fused2);
	bson_init(&f->ps.opbuf[0]);
	bson_init(&f->ps.opbuf[1]);
	if (slots_walk(&f->plan, &f->ps, rt->input, rt->x, NULL, 0) == 0) {
		agg_slot_filler_free(f);
		return NULL;
	}
	return f;
}

const bson_t *
agg_slot_filler_apply(agg_slot_filler_t *f, const bson_t *out)
{
	slots_apply(&f->plan, &f->ps, &out);
	return out;
}

void
agg_slot_filler_free(agg_slot_filler_t *f)
{
	if (f == NULL)
		return;
	pnode_destroy(&f->plan.root);
	bson_destroy(&f->ps.fused);
	bson_destroy(&f->ps.fused2);
	for (int i = 0; i < f->ps.nexcl; i++)
		bson_free(f->ps.excl_ops[i]);
	bson_destroy(&f->ps.opbuf[0]);
	bson_destroy(&f->ps.opbuf[1]);
	bson_free(f);
}

static int
proj_open(agg_rt_t *rt, terr_t *err)
{
	proj_state_t *ps = tm_alloc0(sizeof(*ps));

	bson_init(&ps->pass1);
	bson_init(&ps->out);
	bson_init(&ps->fused);
	bson_init(&ps->fused2);
	bson_init(&ps->hole_ref);
	bson_init(&ps->opbuf[0]);
	bson_init(&ps->opbuf[1]);
	rt->state = ps;
	(void)slots_walk(rt->st->plan, ps, rt->input, rt->x, NULL, 0);
	return 0;
}

static int
proj_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const proj_plan_t *plan = rt->st->plan;
	proj_state_t *ps = rt->state;
	const bson_t *in, *cur;
	int rc;

	rc = agg_rt_pull(rt, &in, err);
	if (rc != 1)
		return rc;
	ps->last_in = in;
	bson_reinit(&ps->pass1);
	switch (plan->mode) {
	case PM_INCLUSION:
		include_doc(&plan->root, in, &ps->pass1);
		cur = &ps->pass1;
		break;
	case PM_EXCLUSION:
		exclude_doc(&plan->root, in, &ps->pass1);
		cur = &ps->pass1;
		break;
	default:
		cur = in;
		break;
	}
	if (!plan->root.computed) {
		*out = cur;
		return 1;
	}
	expr_env_reset(rt->env);
	expr_env_set_root(rt->env, in);
	bson_reinit(&ps->out);
	ps->nholes = 0;
	RET(apply_exprs(rt, &plan->root, cur, &ps->out, ps, err));
	*out = &ps->out;
	if (ps->nexcl > 0)
		slots_apply(plan, ps, out);
	/* this stage's own holes: kept laid out for a later stage, dropped
	 * from what it hands on */
	if (ps->nholes > 0) {
		bson_t *dst = *out == &ps->fused ? &ps->fused2 : &ps->fused;
		bson_reinit(&ps->hole_ref);
		bson_concat(&ps->hole_ref, *out);
		bson_reinit(dst);
		holes_drop(&ps->hole_ref, &plan->root, ps, dst);
		*out = dst;
	}
	return 1;
}

static void
proj_close(agg_rt_t *rt)
{
	proj_state_t *ps = rt->state;

	bson_destroy(&ps->pass1);
	bson_destroy(&ps->out);
	bson_destroy(&ps->fused);
	bson_destroy(&ps->fused2);
	bson_destroy(&ps->hole_ref);
	bson_free(ps->holes);
	for (int i = 0; i < ps->nexcl; i++)
		bson_free(ps->excl_ops[i]);
	bson_destroy(&ps->opbuf[0]);
	bson_destroy(&ps->opbuf[1]);
	bson_free(ps);
}

const agg_stage_def_t agg_stages_project[] = {
	{"$project", project_parse, proj_open, proj_next, proj_close, proj_free_plan, 0},
	{"$addFields", addfields_parse, proj_open, proj_next, proj_close, proj_free_plan, 0},
	{"$set", addfields_parse, proj_open, proj_next, proj_close, proj_free_plan, 0},
	{"$unset", unset_parse, proj_open, proj_next, proj_close, proj_free_plan, 0},
	{NULL},
};
