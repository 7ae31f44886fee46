/*
 * slots.c -- laying a document out after an exclusion's input, the removed
 * fields set again in their old slots (see slots.h).
 */
#include "bson/slots.h"

#include <string.h>

static void
doc_view(const bson_iter_t *it, bson_t *sub)
{
	uint32_t len;
	const uint8_t *data;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &len, &data);
	else
		bson_iter_array(it, &len, &data);
	if (!bson_init_static(sub, data, len))
		bson_init(sub);    /* never for an iterator libbson validated */
}

/* Append out's value o under name, laid out after r's when the exclusion
 * has paths below it (k1) and the setting stage did not replace it whole
 * (k2 NULL or with paths below): documents by field, arrays element by
 * element (each element a document of its own in mongod). */
static void
slots_value(bson_t *res, const char *name, int len, const bson_iter_t *o, const bson_iter_t *r, const void *k1,
            const void *k2, const bslots_nodes_t *nodes, const void *ctx)
{
	bool docs = BSON_ITER_HOLDS_DOCUMENT(o) && BSON_ITER_HOLDS_DOCUMENT(r);
	bool arrs = BSON_ITER_HOLDS_ARRAY(o) && BSON_ITER_HOLDS_ARRAY(r);
	bson_t osub, rsub, child;
	bson_iter_t oi, ri;
	bool r_more;

	if (k1 == NULL || !nodes->has_kids(k1) || (k2 != NULL && !nodes->has_kids(k2)) || (!docs && !arrs)) {
		bson_append_iter(res, name, len, o);
		return;
	}
	doc_view(o, &osub);
	doc_view(r, &rsub);
	if (docs) {
		bson_append_document_begin(res, name, len, &child);
		bslots_reorder(&osub, &rsub, k1, k2, nodes, ctx, &child);
		bson_append_document_end(res, &child);
		return;
	}
	bson_append_array_begin(res, name, len, &child);
	bson_iter_init(&oi, &osub);
	bson_iter_init(&ri, &rsub);
	r_more = bson_iter_next(&ri);
	while (bson_iter_next(&oi)) {
		if (r_more)
			slots_value(&child, bson_iter_key(&oi), (int)bson_iter_key_len(&oi), &oi, &ri, k1, k2, nodes, ctx);
		else
			bson_append_iter(&child, bson_iter_key(&oi), (int)bson_iter_key_len(&oi), &oi);
		r_more = r_more && bson_iter_next(&ri);
	}
	bson_append_array_end(res, &child);
}

static bool
at(const bson_iter_t *it, bool more, const char *name, uint32_t len)
{
	return more && bson_iter_key_len(it) == len && memcmp(bson_iter_key(it), name, len) == 0;
}

void
bslots_reorder(const bson_t *out, const bson_t *ref, const void *excl, const void *set,
               const bslots_nodes_t *nodes, const void *ctx, bson_t *res)
{
	bson_iter_t r, o, f;
	bool o_more;

	bson_iter_init(&o, out);
	o_more = bson_iter_next(&o);
	bson_iter_init(&r, ref);
	while (bson_iter_next(&r)) {
		const char *name = bson_iter_key(&r);
		uint32_t len = bson_iter_key_len(&r);
		const void *k1 = excl != NULL ? nodes->child(excl, name, len) : NULL;
		const void *k2 = set != NULL ? nodes->child(set, name, len) : NULL;
		if (k1 != NULL && nodes->is_slot(ctx, k1)) {
			/* removed; set again: among out's appended fields, or
			 * already in its slot (an earlier stage filled it) */
			if (bson_iter_init_find_w_len(&f, out, name, (int)len))
				bson_append_iter(res, name, (int)len, &f);
			if (at(&o, o_more, name, len))
				o_more = bson_iter_next(&o);
			continue;
		}
		/* kept: out's next field, unless $$REMOVE dropped it */
		if (!at(&o, o_more, name, len))
			continue;
		slots_value(res, name, (int)len, &o, &r, k1, k2, nodes, ctx);
		o_more = bson_iter_next(&o);
	}
	/* the appended fields, but those moved into a slot (a slot of ref) */
	for (; o_more; o_more = bson_iter_next(&o)) {
		const char *name = bson_iter_key(&o);
		uint32_t len = bson_iter_key_len(&o);
		const void *k1 = excl != NULL ? nodes->child(excl, name, len) : NULL;
		if (k1 != NULL && nodes->is_slot(ctx, k1) && bson_iter_init_find_w_len(&f, ref, name, (int)len))
			continue;
		bson_append_iter(res, name, (int)len, &o);
	}
}
