/*
 * oplog_diff.c -- $v: 2 update diffs (oplog_diff.h): a document diff is
 * gathered in four lists (deletes, updates, inserts, sub diffs) and written
 * in mongod's section order; arrays compare index by index.
 */
#include "repl/oplog_diff.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"
#include "update/update.h"

#define DIFF_MAX_DEPTH 200

/* One path of an operator update, split at its dots; append: a $push or
 * $addToSet whose values mongod logs as array entries when they land after
 * the old elements. */
typedef struct guide {
	char **comp;
	size_t n;
	bool append;
} guide_t;

/* The paths to follow and where the walk is: path[0..depth-1] names the
 * container being diffed (borrowed keys of the documents). */
typedef struct dctx {
	guide_t *g;
	size_t ng, cap;
	const char *path[DIFF_MAX_DEPTH + 1];
} dctx_t;

typedef enum { CLS_NONE, CLS_PREFIX, CLS_SET, CLS_APPEND } cls_t;

static bool doc_diff(dctx_t *g, const bson_t *pre, const bson_t *post, bson_t *out, int depth);
static void array_diff(dctx_t *g, const bson_t *pre, const bson_t *post, bson_t *out, int depth);

/* "$" and "$[...]" stand for any array index. */
static bool
comp_match(const char *c, const char *name)
{
	if (c[0] == '$' && (c[1] == '\0' || c[1] == '['))
		return true;
	return strcmp(c, name) == 0;
}

/* How the path path[0..depth-1].key stands to the update's paths: one of
 * them (set or append), a parent of one, or neither. */
static cls_t
classify(const dctx_t *g, int depth, const char *key)
{
	cls_t best = CLS_NONE;

	if (g == NULL)
		return CLS_NONE;
	for (size_t i = 0; i < g->ng; i++) {
		const guide_t *gd = &g->g[i];
		bool ok = gd->n >= (size_t)depth + 1;
		for (int c = 0; ok && c < depth; c++)
			ok = comp_match(gd->comp[c], g->path[c]);
		if (!ok || !comp_match(gd->comp[depth], key))
			continue;
		if (gd->n == (size_t)depth + 1)
			return gd->append ? CLS_APPEND : CLS_SET;
		best = CLS_PREFIX;
	}
	return best;
}

/* The bytes of the element iter stands on (type, key, value). */
static const uint8_t *
elem_bytes(const bson_iter_t *it, size_t *len)
{
	*len = it->next_off - it->off;
	return it->raw + it->off;
}

static bool
elem_equal(const bson_iter_t *a, const bson_iter_t *b)
{
	size_t la, lb;
	const uint8_t *pa = elem_bytes(a, &la), *pb = elem_bytes(b, &lb);

	return la == lb && memcmp(pa, pb, la) == 0;
}

static bool
iter_sub(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *data;
	uint32_t len;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &len, &data);
	else
		bson_iter_array(it, &len, &data);
	return bson_init_static(out, data, len);
}

/* The value size of the element (what an update of it would cost). */
static size_t
value_size(const bson_iter_t *it)
{
	size_t len;

	elem_bytes(it, &len);
	return len;
}

/* Appends prefix+key: d to out. */
static void
append_prefixed(bson_t *out, const char *prefix, const char *key, const bson_t *d)
{
	char name[32 + 1];
	char *heap = NULL;
	const char *k = name;

	if (strlen(key) + strlen(prefix) + 1 <= sizeof(name))
		snprintf(name, sizeof(name), "%s%s", prefix, key);
	else
		k = heap = bson_strdup_printf("%s%s", prefix, key);
	bson_append_document(out, k, -1, d);
	bson_free(heap);
}

/*
 * A $push/$addToSet that appended to a non-empty array: mongod logs the new
 * elements as u<index> of an array diff (kArrayAppendUpdate).  False (d
 * untouched) when post does not start with pre's elements.
 */
static bool
append_diff(const bson_t *pre, const bson_t *post, bson_t *d)
{
	bson_iter_t pi, qi;
	bool pmore, qmore;
	uint32_t i = 0;
	char k2[20];

	bson_iter_init(&pi, pre);
	bson_iter_init(&qi, post);
	pmore = bson_iter_next(&pi);
	qmore = bson_iter_next(&qi);
	if (!pmore)
		return false;
	for (; pmore; pmore = bson_iter_next(&pi), qmore = bson_iter_next(&qi), i++)
		if (!qmore || !elem_equal(&pi, &qi))
			return false;
	if (!qmore)
		return false;
	bson_append_bool(d, "a", 1, true);
	for (; qmore; qmore = bson_iter_next(&qi), i++) {
		snprintf(k2, sizeof(k2), "u%u", i);
		bson_append_value(d, k2, -1, bson_iter_value(&qi));
	}
	return true;
}

/*
 * Diff of two values under the same name.  Appends to *upd (as name: post
 * value) or to *sub (as prefix+name: sub diff); nothing when equal.  On an
 * update's path (g) the diff descends to the path's end whatever the size
 * and logs the end whole, as mongod's update driver does; elsewhere a sub
 * diff is used when smaller than the new value (mongod's diff calculator).
 */
static void
value_diff(dctx_t *g, const bson_iter_t *pre, const bson_iter_t *post, const char *key, bson_t *upd,
           bool *has_upd, bson_t *sub, bool *has_sub, const char *sub_prefix, int depth)
{
	bson_t a, b, d;
	bool both_doc = BSON_ITER_HOLDS_DOCUMENT(pre) && BSON_ITER_HOLDS_DOCUMENT(post);
	bool both_arr = BSON_ITER_HOLDS_ARRAY(pre) && BSON_ITER_HOLDS_ARRAY(post);
	cls_t cls;

	if (elem_equal(pre, post))
		return;
	cls = classify(g, depth, key);
	if (cls == CLS_APPEND && both_arr && iter_sub(pre, &a) && iter_sub(post, &b)) {
		bson_init(&d);
		if (append_diff(&a, &b, &d)) {
			append_prefixed(sub, sub_prefix, key, &d);
			*has_sub = true;
			bson_destroy(&d);
			return;
		}
		bson_destroy(&d);
	}
	if (cls != CLS_SET && cls != CLS_APPEND && (both_doc || both_arr) && depth < DIFF_MAX_DEPTH &&
	    iter_sub(pre, &a) && iter_sub(post, &b)) {
		dctx_t *sg = cls == CLS_PREFIX ? g : NULL;
		bool ok = true;

		if (sg != NULL)
			sg->path[depth] = key;
		bson_init(&d);
		if (both_doc)
			ok = doc_diff(sg, &a, &b, &d, depth + 1);
		else
			array_diff(sg, &a, &b, &d, depth + 1);
		if (ok && (sg != NULL || d.len < value_size(post))) {
			append_prefixed(sub, sub_prefix, key, &d);
			*has_sub = true;
			bson_destroy(&d);
			return;
		}
		bson_destroy(&d);
	}
	bson_append_value(upd, key, -1, bson_iter_value((bson_iter_t *)post));
	*has_upd = true;
}

static bool
name_in(const char *name, const bson_t *doc)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, doc, name);
}

static bool
doc_diff(dctx_t *g, const bson_t *pre, const bson_t *post, bson_t *out, int depth)
{
	bson_iter_t pi, qi;
	bson_t del, upd, ins, sub, moved;
	bool has_del = false, has_upd = false, has_ins = false, has_sub = false;
	bool pmore, qmore;

	bson_init(&del);
	bson_init(&upd);
	bson_init(&ins);
	bson_init(&sub);
	bson_init(&moved);   /* pre fields met out of order (deleted unless post has them later) */
	bson_iter_init(&pi, pre);
	bson_iter_init(&qi, post);
	pmore = bson_iter_next(&pi);
	qmore = bson_iter_next(&qi);
	while (pmore && qmore) {
		if (strcmp(bson_iter_key(&pi), bson_iter_key(&qi)) == 0) {
			value_diff(g, &pi, &qi, bson_iter_key(&qi), &upd, &has_upd, &sub, &has_sub, "s", depth);
			pmore = bson_iter_next(&pi);
			qmore = bson_iter_next(&qi);
		} else {
			bson_append_bool(&moved, bson_iter_key(&pi), -1, false);
			pmore = bson_iter_next(&pi);
		}
	}
	for (; pmore; pmore = bson_iter_next(&pi))
		bson_append_bool(&moved, bson_iter_key(&pi), -1, false);
	/* the rest of post is inserted (appended in order) */
	bson_t rest;
	bson_init(&rest);
	for (; qmore; qmore = bson_iter_next(&qi)) {
		bson_append_value(&ins, bson_iter_key(&qi), -1, bson_iter_value(&qi));
		bson_append_bool(&rest, bson_iter_key(&qi), -1, true);
		has_ins = true;
	}
	/* old fields the new document does not have again are deleted */
	bson_iter_t mi;
	bson_iter_init(&mi, &moved);
	while (bson_iter_next(&mi)) {
		if (!name_in(bson_iter_key(&mi), &rest)) {
			bson_append_bool(&del, bson_iter_key(&mi), -1, false);
			has_del = true;
		}
	}
	if (has_del)
		bson_append_document(out, "d", 1, &del);
	if (has_upd)
		bson_append_document(out, "u", 1, &upd);
	if (has_ins)
		bson_append_document(out, "i", 1, &ins);
	if (has_sub)
		bson_concat(out, &sub);
	bson_destroy(&del);
	bson_destroy(&upd);
	bson_destroy(&ins);
	bson_destroy(&sub);
	bson_destroy(&moved);
	bson_destroy(&rest);
	return true;
}

static void
array_diff(dctx_t *g, const bson_t *pre, const bson_t *post, bson_t *out, int depth)
{
	bson_iter_t pi, qi;
	bson_t ent;
	bool pmore, qmore;
	uint32_t i = 0;
	char key[16];

	bson_init(&ent);
	bson_iter_init(&pi, pre);
	bson_iter_init(&qi, post);
	pmore = bson_iter_next(&pi);
	qmore = bson_iter_next(&qi);
	/* entries go into one document in index order, each as u<i> or s<i> */
	while (qmore) {
		snprintf(key, sizeof(key), "%u", i);
		if (pmore) {
			bson_t u, s;
			bool hu = false, hs = false;
			bson_init(&u);
			bson_init(&s);
			value_diff(g, &pi, &qi, key, &u, &hu, &s, &hs, "s", depth);
			if (hu) {
				char k2[20];
				bson_iter_t ui;
				snprintf(k2, sizeof(k2), "u%u", i);
				bson_iter_init(&ui, &u);
				bson_iter_next(&ui);
				bson_append_value(&ent, k2, -1, bson_iter_value(&ui));
			}
			if (hs)
				bson_concat(&ent, &s);
			bson_destroy(&u);
			bson_destroy(&s);
			pmore = bson_iter_next(&pi);
		} else if (g == NULL || !BSON_ITER_HOLDS_NULL(&qi) || classify(g, depth, key) != CLS_NONE) {
			/* an update's index past the end: mongod logs that index
			 * only, the nulls before it come from the applier */
			char k2[20];
			snprintf(k2, sizeof(k2), "u%u", i);
			bson_append_value(&ent, k2, -1, bson_iter_value(&qi));
		}
		qmore = bson_iter_next(&qi);
		i++;
	}
	/* the old array was longer: resize to the new length */
	bson_append_bool(out, "a", 1, true);
	if (pmore)
		bson_append_int32(out, "l", 1, (int32_t)i);
	bson_concat(out, &ent);
	bson_destroy(&ent);
}

bool
repl_diff_compute(const bson_t *pre, const bson_t *post, size_t padding, bson_t *out)
{
	if (!doc_diff(NULL, pre, post, out, 0))
		return false;
	return (size_t)out->len <= (size_t)post->len + padding;
}

static void
guide_add(const char *path, const char *opname, const bson_value_t *arg, void *vctx)
{
	dctx_t *g = vctx;
	guide_t *gd;
	char *copy, *p, *dot;
	size_t n = 1;

	if (g->ng == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 8;
		g->g = bson_realloc(g->g, g->cap * sizeof(*g->g));
	}
	gd = &g->g[g->ng++];
	for (p = (char *)path; *p; p++)
		n += *p == '.';
	/* one block: the component pointers, then the path's copy */
	gd->comp = bson_malloc(n * sizeof(char *) + strlen(path) + 1);
	copy = (char *)(gd->comp + n);
	strcpy(copy, path);
	gd->n = 0;
	for (p = copy; (dot = strchr(p, '.')) != NULL; p = dot + 1) {
		*dot = '\0';
		gd->comp[gd->n++] = p;
	}
	gd->comp[gd->n++] = p;
	gd->append = false;
	if (strcmp(opname, "$addToSet") == 0) {
		gd->append = true;
	} else if (strcmp(opname, "$push") == 0) {
		/* $sort or $slice rewrite the array (kNormalUpdate); $position
		 * past the end still appends, which append_diff sees */
		bson_iter_t it;
		gd->append = true;
		if (arg != NULL && arg->value_type == BSON_TYPE_DOCUMENT &&
		    bson_iter_init_from_data(&it, arg->value.v_doc.data, arg->value.v_doc.data_len))
			while (bson_iter_next(&it))
				if (strcmp(bson_iter_key(&it), "$sort") == 0 || strcmp(bson_iter_key(&it), "$slice") == 0)
					gd->append = false;
	}
}

void
repl_diff_compute_update(const bson_t *pre, const bson_t *post, const update_t *u, bson_t *out)
{
	dctx_t *g = bson_malloc0(sizeof(*g));

	if (!update_for_each_path(u, guide_add, g)) {
		bson_free(g);
		doc_diff(NULL, pre, post, out, 0);
		return;
	}
	doc_diff(g, pre, post, out, 0);
	for (size_t i = 0; i < g->ng; i++)
		bson_free(g->g[i].comp);
	bson_free(g->g);
	bson_free(g);
}
