/*
 * ts_bucket_v2.c -- compressed buckets (ts_compress.h): a v1 bucket's
 * columns sorted by time and encoded as BSONColumns, and back.  The column
 * codec is bsoncolumn.c; the v1 layout and unpacking are ts_bucket.c.
 */
#include "timeseries/ts_compress.h"

#include <stdlib.h>
#include <string.h>

#include "timeseries/bsoncolumn.h"

bool
ts_bucket_is_compressed(const bson_t *bucket)
{
	bson_iter_t it, v;

	if (!bson_iter_init_find(&it, bucket, "control") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &v) || !bson_iter_find(&v, "version") || !BSON_ITER_HOLDS_NUMBER(&v))
		return false;
	int64_t ver = bson_iter_as_int64(&v);
	return ver == 2 || ver == 3;
}

typedef struct tsort {
	int64_t t;
	int idx;
} tsort_t;

static int
tsort_cmp(const void *a, const void *b)
{
	const tsort_t *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The index a column key names (-1: not an index below n). */
static int
key_index(const char *k, int n)
{
	int64_t v = 0;

	if (*k == '\0' || (k[0] == '0' && k[1] != '\0'))
		return -1;
	for (; *k; k++) {
		if (*k < '0' || *k > '9' || v > INT32_MAX)
			return -1;
		v = v * 10 + (*k - '0');
	}
	return v < n ? (int)v : -1;
}

/* Column col reordered: position j holds old measurement perm[j]. */
static int
column_sorted(const bson_iter_t *colit, const int *inv, int n, bson_t *out, terr_t *err)
{
	bson_iter_t c;
	bson_value_t *at = bson_malloc0(sizeof(*at) * ((size_t)n + 1));   /* borrowed from the bucket */
	bool *has = bson_malloc0(sizeof(*has) * ((size_t)n + 1));
	int ret = 0;

	bson_iter_recurse(colit, &c);
	while (bson_iter_next(&c)) {
		int i = key_index(bson_iter_key(&c), n);
		if (i < 0 || has[inv[i]]) {
			ret = terr_set(err, TERR_BAD_VALUE, "bucket column key '%s' is not a measurement index",
			    bson_iter_key(&c));
			break;
		}
		has[inv[i]] = true;
		at[inv[i]] = *bson_iter_value(&c);
	}
	for (int j = 0; ret == 0 && j < n; j++) {
		if (!has[j])
			continue;
		char key[16];
		const char *k;
		size_t kl = bson_uint32_to_string((uint32_t)j, &k, key, sizeof(key));
		bson_append_value(out, k, (int)kl, &at[j]);
	}
	bson_free(at);
	bson_free(has);
	return ret;
}

int
ts_bucket_compress(const ts_options_t *o, const bson_t *bucket, bson_t *out, terr_t *err)
{
	bson_iter_t it, data, tcol;
	tsort_t *ts = NULL;
	int *inv = NULL, n, ret = 0;
	bool found = false, unsorted = false;

	if (!bson_iter_init_find(&it, bucket, "data") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &data) || !bson_iter_find(&data, o->time_field) || !BSON_ITER_HOLDS_DOCUMENT(&data))
		return terr_set(err, TERR_BAD_VALUE, "a bucket without its time column");
	n = ts_bucket_count(o, bucket);
	ts = bson_malloc0(sizeof(*ts) * ((size_t)n + 1));
	inv = bson_malloc0(sizeof(*inv) * ((size_t)n + 1));
	bson_iter_recurse(&data, &tcol);
	for (int k = 0; k < n; k++) {
		if (!bson_iter_next(&tcol) || key_index(bson_iter_key(&tcol), n) != k || !BSON_ITER_HOLDS_DATE_TIME(&tcol)) {
			ret = terr_set(err, TERR_BAD_VALUE, "a bucket's time column is not dates under 0..%d", n - 1);
			goto done;
		}
		ts[k] = (tsort_t){bson_iter_date_time(&tcol), k};
	}
	for (int k = 1; k < n && !unsorted; k++)
		unsorted = ts[k].t < ts[k - 1].t;
	if (unsorted)
		qsort(ts, (size_t)n, sizeof(*ts), tsort_cmp);
	for (int j = 0; j < n; j++)
		inv[ts[j].idx] = j;

	bson_iter_init(&it, bucket);
	while (ret == 0 && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (strcmp(key, "control") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t ctl;
			bson_iter_t c;
			BSON_APPEND_DOCUMENT_BEGIN(out, "control", &ctl);
			BSON_APPEND_INT32(&ctl, "version", 2);
			bson_iter_recurse(&it, &c);
			while (bson_iter_next(&c))
				if (strcmp(bson_iter_key(&c), "version") != 0 && strcmp(bson_iter_key(&c), "count") != 0)
					bson_append_iter(&ctl, NULL, 0, &c);
			BSON_APPEND_INT32(&ctl, "count", n);
			bson_append_document_end(out, &ctl);
			found = true;
		} else if (strcmp(key, "data") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t d;
			bson_iter_t col;
			BSON_APPEND_DOCUMENT_BEGIN(out, "data", &d);
			bson_iter_recurse(&it, &col);
			while (ret == 0 && bson_iter_next(&col)) {
				bson_t sorted = BSON_INITIALIZER;
				uint8_t *bin = NULL;
				uint32_t bl = 0;
				if (!BSON_ITER_HOLDS_DOCUMENT(&col)) {
					ret = terr_set(err, TERR_BAD_VALUE, "bucket column '%s' is not a document", bson_iter_key(&col));
				} else if (!unsorted) {
					/* in time order already: the column as it is */
					const uint8_t *cd;
					uint32_t cl;
					bson_t c;
					bson_iter_document(&col, &cl, &cd);
					if (!bson_init_static(&c, cd, cl))
						ret = terr_set(err, TERR_BAD_VALUE, "bucket column '%s' is not a document",
						    bson_iter_key(&col));
					else if ((ret = bsoncolumn_encode(&c, n, &bin, &bl, err)) == 0)
						bson_append_binary(&d, bson_iter_key(&col), -1, BSON_SUBTYPE_COLUMN, bin, bl);
				} else if ((ret = column_sorted(&col, inv, n, &sorted, err)) == 0 &&
				           (ret = bsoncolumn_encode(&sorted, n, &bin, &bl, err)) == 0) {
					bson_append_binary(&d, bson_iter_key(&col), -1, BSON_SUBTYPE_COLUMN, bin, bl);
				}
				bson_free(bin);
				bson_destroy(&sorted);
			}
			bson_append_document_end(out, &d);
		} else {
			bson_append_iter(out, key, -1, &it);
		}
	}
	if (ret == 0 && !found)
		ret = terr_set(err, TERR_BAD_VALUE, "a bucket without its control document");
done:
	bson_free(ts);
	bson_free(inv);
	return ret;
}

int
ts_bucket_decompress(const bson_t *bucket, bson_t *out, terr_t *err)
{
	return ts_bucket_decompress_some(bucket, out, NULL, NULL, err);
}

int
ts_bucket_decompress_some(const bson_t *bucket, bson_t *out, bool (*keep)(const void *ctx, const char *name),
                          const void *ctx, terr_t *err)
{
	bson_iter_t it;
	int ret = 0;

	bson_iter_init(&it, bucket);
	while (ret == 0 && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (strcmp(key, "control") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t ctl;
			bson_iter_t c;
			BSON_APPEND_DOCUMENT_BEGIN(out, "control", &ctl);
			BSON_APPEND_INT32(&ctl, "version", 1);
			bson_iter_recurse(&it, &c);
			while (bson_iter_next(&c))
				if (strcmp(bson_iter_key(&c), "version") != 0 && strcmp(bson_iter_key(&c), "count") != 0)
					bson_append_iter(&ctl, NULL, 0, &c);
			bson_append_document_end(out, &ctl);
		} else if (strcmp(key, "data") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_t d;
			bson_iter_t col;
			BSON_APPEND_DOCUMENT_BEGIN(out, "data", &d);
			bson_iter_recurse(&it, &col);
			while (ret == 0 && bson_iter_next(&col)) {
				bson_subtype_t st;
				uint32_t bl;
				const uint8_t *bin;
				if (keep != NULL && !keep(ctx, bson_iter_key(&col)))
					continue;
				if (BSON_ITER_HOLDS_BINARY(&col)) {
					bson_iter_binary(&col, &st, &bl, &bin);
					if (st == BSON_SUBTYPE_COLUMN) {
						bson_t c;
						BSON_APPEND_DOCUMENT_BEGIN(&d, bson_iter_key(&col), &c);
						ret = bsoncolumn_decode(bin, bl, &c, NULL, err);
						bson_append_document_end(&d, &c);
						continue;
					}
				}
				bson_append_iter(&d, NULL, 0, &col);
			}
			bson_append_document_end(out, &d);
		} else {
			bson_append_iter(out, key, -1, &it);
		}
	}
	return ret;
}
