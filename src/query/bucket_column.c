/*
 * bucket_column.c -- one measurement field's values in a time-series bucket
 * (bucket_column.h), from an uncompressed column or through the time-series
 * layer's BSONColumn decoder.
 */
#include "query/bucket_column.h"

#include <stdatomic.h>
#include <string.h>

#include "bson/path.h"

static _Atomic(bucket_column_decode_fn) decoder;

void
bucket_column_set_decoder(bucket_column_decode_fn fn)
{
	atomic_store(&decoder, fn);
}

typedef struct walk {
	bucket_value_fn fn;
	void *ctx;
	bool stopped;
} walk_t;

static bool
sub_visit(const bpath_hit_t *h, void *ctx)
{
	walk_t *w = ctx;

	if (h->value.value_type == BSON_TYPE_EOD)
		return true;
	if (!w->fn(w->ctx, &h->value)) {
		w->stopped = true;
		return false;
	}
	return true;
}

/* Each element of a column object: the value, or what rest reaches in it. */
static void
walk_column(const uint8_t *data, uint32_t len, const bpath_t *rest, walk_t *w)
{
	bson_iter_t it;

	if (!bson_iter_init_from_data(&it, data, len))
		return;
	while (!w->stopped && bson_iter_next(&it)) {
		const bson_value_t *v = bson_iter_value(&it);
		if (rest == NULL) {
			if (!w->fn(w->ctx, v))
				w->stopped = true;
		} else if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY) {
			bpath_walk_data(v->value.v_doc.data, v->value.v_doc.data_len, rest, false, sub_visit, w);
		}
	}
}

int
bucket_column_walk(const bson_t *bucket, const char *field, bucket_value_fn fn, void *ctx, terr_t *err)
{
	bson_iter_t it, col;
	const char *dot = strchr(field, '.');
	size_t clen = dot != NULL ? (size_t)(dot - field) : strlen(field);
	walk_t w = {fn, ctx, false};
	bpath_t rest;
	bool has_rest = dot != NULL && dot[1] != '\0';
	int ret = 0;

	if (!bson_iter_init_find(&it, bucket, "data") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &col))
		return 0;
	bool found = false;
	while (!found && bson_iter_next(&col))
		found = strlen(bson_iter_key(&col)) == clen && memcmp(bson_iter_key(&col), field, clen) == 0;
	if (!found)
		return 0;
	if (has_rest)
		bpath_init(&rest, dot + 1);
	if (BSON_ITER_HOLDS_DOCUMENT(&col)) {
		const bson_value_t *v = bson_iter_value(&col);
		walk_column(v->value.v_doc.data, v->value.v_doc.data_len, has_rest ? &rest : NULL, &w);
	} else if (BSON_ITER_HOLDS_BINARY(&col)) {
		bson_subtype_t st;
		uint32_t len;
		const uint8_t *data;
		bucket_column_decode_fn dec = atomic_load(&decoder);
		bson_t out = BSON_INITIALIZER;
		int count = 0;
		bson_iter_binary(&col, &st, &len, &data);
		if (st != 7) {
			/* not a column: no measurement values */
		} else if (dec == NULL) {
			ret = terr_set(err, TERR_NOT_IMPLEMENTED, "no BSONColumn decoder for a compressed bucket");
		} else if (dec(data, len, &out, &count, err) != 0) {
			ret = -1;
		} else {
			walk_column(bson_get_data(&out), out.len, has_rest ? &rest : NULL, &w);
		}
		bson_destroy(&out);
	}
	if (has_rest)
		bpath_destroy(&rest);
	return ret;
}
