/*
 * agg_doc.c -- small document-building helpers the stages share: setting or
 * removing the value at a dotted path while copying a document, and reading
 * a dotted path the way stages ($unwind, $group keys) read it.
 *
 * Not here: projections ($project/$addFields have their own tree walker in
 * stage_project.c) and expression field paths (expr_path_eval).
 */
#include "agg/agg_doc.h"

#include <string.h>

#include "bson/value.h"

/* Copy `in` into out with path[0..] set to v (NULL = removed).  Components
 * that are missing or not documents become documents. */
static void
set_path_rec(const bson_t *in, const char *path, const bson_value_t *v, bson_t *out)
{
	const char *dot = strchr(path, '.');
	size_t len = dot ? (size_t)(dot - path) : strlen(path);
	bson_iter_t it;
	bool done = false;

	if (in != NULL && bson_iter_init(&it, in)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strlen(k) == len && memcmp(k, path, len) == 0 && !done) {
				done = true;
				if (dot == NULL) {
					if (v != NULL)
						bv_append(out, k, -1, v);
				} else {
					bson_t child, sub;
					bool has = false;
					if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
						const uint8_t *d;
						uint32_t l;
						bson_iter_document(&it, &l, &d);
						has = bson_init_static(&sub, d, l);
					}
					bson_append_document_begin(out, k, -1, &child);
					set_path_rec(has ? &sub : NULL, dot + 1, v, &child);
					bson_append_document_end(out, &child);
				}
				continue;
			}
			bson_append_iter(out, k, -1, &it);
		}
	}
	if (!done && v != NULL) {
		if (dot == NULL) {
			bv_append(out, path, (int)len, v);
		} else {
			bson_t child;
			bson_append_document_begin(out, path, (int)len, &child);
			set_path_rec(NULL, dot + 1, v, &child);
			bson_append_document_end(out, &child);
		}
	}
}

void
agg_doc_set_path(const bson_t *in, const char *path, const bson_value_t *v, bson_t *out)
{
	set_path_rec(in, path, v, out);
}

bool
agg_doc_get_path(const bson_t *doc, const char *path, bson_value_t *out)
{
	const char *dot;
	bson_iter_t it;
	bson_t cur;
	const uint8_t *d;
	uint32_t l;

	bson_init_static(&cur, bson_get_data(doc), doc->len);
	for (;;) {
		size_t len;
		bool found = false;
		dot = strchr(path, '.');
		len = dot ? (size_t)(dot - path) : strlen(path);
		if (!bson_iter_init(&it, &cur))
			return false;
		while (bson_iter_next(&it)) {
			if (bson_iter_key_len(&it) == len && memcmp(bson_iter_key(&it), path, len) == 0) {
				found = true;
				break;
			}
		}
		if (!found)
			return false;
		if (dot == NULL) {
			*out = *bson_iter_value(&it);
			return true;
		}
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return false;
		bson_iter_document(&it, &l, &d);
		bson_init_static(&cur, d, l);
		path = dot + 1;
	}
}
