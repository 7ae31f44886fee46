/*
 * oplog_diff.c -- $v: 2 update diffs (oplog_diff.h): a document diff is
 * gathered in four lists (deletes, updates, inserts, sub diffs) and written
 * in mongod's section order; arrays compare index by index.
 */
#include "repl/oplog_diff.h"

#include <stdio.h>
#include <string.h>

#include "common/mem.h"

#define DIFF_MAX_DEPTH 200

static bool doc_diff(const bson_t *pre, const bson_t *post, bson_t *out, int depth);
static void array_diff(const bson_t *pre, const bson_t *post, bson_t *out, int depth);

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

/*
 * Diff of two values under the same name.  Appends to *upd (as name: post
 * value) or to *sub (as prefix+name: sub diff); nothing when equal.
 */
static void
value_diff(const bson_iter_t *pre, const bson_iter_t *post, const char *key, bson_t *upd, bool *has_upd,
           bson_t *sub, bool *has_sub, const char *sub_prefix, int depth)
{
	bson_t a, b, d;
	bool both_doc = BSON_ITER_HOLDS_DOCUMENT(pre) && BSON_ITER_HOLDS_DOCUMENT(post);
	bool both_arr = BSON_ITER_HOLDS_ARRAY(pre) && BSON_ITER_HOLDS_ARRAY(post);

	if (elem_equal(pre, post))
		return;
	if ((both_doc || both_arr) && depth < DIFF_MAX_DEPTH && iter_sub(pre, &a) && iter_sub(post, &b)) {
		bson_init(&d);
		bool ok = true;
		if (both_doc)
			ok = doc_diff(&a, &b, &d, depth + 1);
		else
			array_diff(&a, &b, &d, depth + 1);
		if (ok && d.len < value_size(post)) {
			char name[32 + 1];
			const char *k = key;
			char *heap = NULL;
			size_t kl = strlen(key) + strlen(sub_prefix) + 1;
			if (kl <= sizeof(name)) {
				snprintf(name, sizeof(name), "%s%s", sub_prefix, key);
				k = name;
			} else {
				heap = bson_strdup_printf("%s%s", sub_prefix, key);
				k = heap;
			}
			bson_append_document(sub, k, -1, &d);
			*has_sub = true;
			bson_free(heap);
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
doc_diff(const bson_t *pre, const bson_t *post, bson_t *out, int depth)
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
			value_diff(&pi, &qi, bson_iter_key(&qi), &upd, &has_upd, &sub, &has_sub, "s", depth);
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
array_diff(const bson_t *pre, const bson_t *post, bson_t *out, int depth)
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
			value_diff(&pi, &qi, key, &u, &hu, &s, &hs, "s", depth);
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
		} else {
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
	if (!doc_diff(pre, post, out, 0))
		return false;
	return (size_t)out->len <= (size_t)post->len + padding;
}
