/*
 * ts_bucket_v2.c -- compressed buckets (ts_compress.h): a v1 bucket's
 * columns sorted by time and encoded as BSONColumns, and back.  The column
 * codec is bsoncolumn.c; the v1 layout and unpacking are ts_bucket.c.
 */
#include "timeseries/ts_compress.h"
#include "timeseries/ts_minmax.h"

#include <stdlib.h>
#include <string.h>

#include "bson/damage.h"
#include "bson/value.h"
#include "common/checked.h"
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

/* ---- compressed from the first measurement ------------------------------------- */

void
ts_colstates_clear(ts_colstates_t *s)
{
	for (int i = 0; i < s->n; i++) {
		bson_free(s->c[i].name);
		bsoncolumn_tail_free(s->c[i].tail);
	}
	bson_free(s->c);
	memset(s, 0, sizeof(*s));
}

size_t
ts_colstates_size(const ts_colstates_t *s)
{
	size_t n = sizeof(*s) + sizeof(*s->c) * (size_t)s->cap;

	for (int i = 0; i < s->n; i++)
		n += strlen(s->c[i].name) + 1 + bsoncolumn_tail_size(s->c[i].tail);
	return n;
}

static const bsoncolumn_tail_t *
colstates_find(const ts_colstates_t *s, const char *name, int hint)
{
	if (s == NULL)
		return NULL;
	if (hint < s->n && strcmp(s->c[hint].name, name) == 0)
		return s->c[hint].tail;
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->c[i].name, name) == 0)
			return s->c[i].tail;
	return NULL;
}

static void
colstates_add(ts_colstates_t *s, const char *name, bsoncolumn_tail_t *t)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->c = bson_realloc(s->c, sizeof(*s->c) * (size_t)s->cap);
	}
	s->c[s->n].name = bson_strdup(name);
	s->c[s->n++].tail = t;
}

/* One column of a bucket being appended to. */
typedef struct ccol {
	const char *name;            /* borrowed: the old bucket's or a measurement's */
	const uint8_t *bin;          /* the old column (NULL: a new one) */
	uint32_t bin_len;
	uint32_t val_off;            /* the old column's value (its length) in the old bucket */
	bsoncolumn_elem_t *el;       /* the new measurements' values */
	bson_value_t min, max;       /* shallow (or into own_*) */
	bool any;
	bson_t *own_min, *own_max;   /* bounds merged from documents/arrays (ts_minmax.h) */
	bsoncolumn_edit_t ed;
	uint32_t new_off;            /* its value in the new bucket */
} ccol_t;

typedef struct cbucket {
	ccol_t *c;
	int n, cap;
	uint32_t control, control_len, data, data_len;
	int count, version;
	bson_iter_t min, max;        /* old's control.min / control.max */
	bsoncolumn_elem_t *el;       /* every column's values: one block */
} cbucket_t;

static int
ccol_add(cbucket_t *b, const char *name)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->c = bson_realloc(b->c, sizeof(*b->c) * (size_t)b->cap);
	}
	memset(&b->c[b->n], 0, sizeof(b->c[b->n]));
	b->c[b->n].name = name;
	return b->n++;
}

static int
ccol_of(const cbucket_t *b, const char *name, int hint)
{
	if (hint >= 0 && hint < b->n && strcmp(b->c[hint].name, name) == 0)
		return hint;
	for (int i = 0; i < b->n; i++)
		if (strcmp(b->c[i].name, name) == 0)
			return i;
	return -1;
}

/* Map old when it is in the layout written here: _id, control {version 2|3,
 * min, max, count}, meta (optional), data of BSONColumns. */
static bool
cbucket_map(const bson_t *old, cbucket_t *b)
{
	static const char *const order[] = {"_id", "control", "meta", "data"};
	bson_iter_t it, d;
	int k = 0;

	if (!bson_iter_init(&it, old))
		return false;
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		while (k < 4 && strcmp(key, order[k]) != 0)
			k++;
		if (k == 4 || ((k == 1 || k == 3) && !BSON_ITER_HOLDS_DOCUMENT(&it)))
			return false;
		if (k == 1) {
			bson_iter_t c;
			static const char *const cks[] = {"version", "min", "max", "count"};
			int ck = 0;
			b->control = it.d1;
			b->control_len = it.next_off - it.d1;
			if (!bson_iter_recurse(&it, &c))
				return false;
			while (bson_iter_next(&c)) {
				if (ck == 4 || strcmp(bson_iter_key(&c), cks[ck]) != 0)
					return false;
				if (ck == 0 || ck == 3) {
					if (!BSON_ITER_HOLDS_INT32(&c))
						return false;
					if (ck == 0)
						b->version = bson_iter_int32(&c);
					else
						b->count = bson_iter_int32(&c);
				} else if (!BSON_ITER_HOLDS_DOCUMENT(&c)) {
					return false;
				} else if (ck == 1) {
					b->min = c;
				} else {
					b->max = c;
				}
				ck++;
			}
			if (ck != 4 || (b->version != 2 && b->version != 3) || b->count < 0)
				return false;
		} else if (k == 3) {
			b->data = it.d1;
			b->data_len = it.next_off - it.d1;
			if (!bson_iter_recurse(&it, &d))
				return false;
			while (bson_iter_next(&d)) {
				bson_subtype_t st;
				uint32_t bl;
				const uint8_t *bin;
				if (!BSON_ITER_HOLDS_BINARY(&d) || ccol_of(b, bson_iter_key(&d), -1) >= 0)
					return false;
				bson_iter_binary(&d, &st, &bl, &bin);
				if (st != BSON_SUBTYPE_COLUMN)
					return false;
				int c = ccol_add(b, bson_iter_key(&d));
				b->c[c].bin = bin;
				b->c[c].bin_len = bl;
				b->c[c].val_off = b->data + d.d1;
			}
		}
		k++;
	}
	return b->control != 0 && b->data != 0;
}

static void
cbucket_free(cbucket_t *b)
{
	for (int i = 0; i < b->n; i++) {
		bson_free(b->c[i].ed.bytes);
		if (b->c[i].own_min != NULL)
			bson_destroy(b->c[i].own_min);
		if (b->c[i].own_max != NULL)
			bson_destroy(b->c[i].own_max);
	}
	bson_free(b->el);
	bson_free(b->c);
	memset(b, 0, sizeof(*b));
}

/* The old bounds (control.min / control.max) of b's columns. */
static void
cbucket_old_bounds(cbucket_t *b)
{
	for (int pass = 0; pass < 2; pass++) {
		bson_iter_t ct;
		if (!bson_iter_recurse(pass ? &b->max : &b->min, &ct))
			continue;
		for (int h = 0; bson_iter_next(&ct); h++) {
			int c = ccol_of(b, bson_iter_key(&ct), h);
			if (c < 0)
				continue;
			if (pass)
				b->c[c].max = *bson_iter_value(&ct);
			else
				b->c[c].min = *bson_iter_value(&ct);
			b->c[c].any = true;
		}
	}
}

/*
 * The bucket old (NULL: a new one, of id / start_ms / meta) with ms
 * appended, compressed, into out; dm (old only) its damages; next the
 * columns' states.  1: old is not in this file's layout (nothing done).
 */
static int
compressed_write(const ts_options_t *o, const bson_t *old, const bson_oid_t *id, int64_t start_ms,
                 const bson_value_t *meta, const bson_t *const *ms, int n, const ts_colstates_t *prev, bson_t *out,
                 bdamages_t *dm, ts_colstates_t *next, terr_t *err)
{
	cbucket_t b = {0};
	bson_t ctl, min, max, data;
	bson_iter_t it;
	int ret = 0, tc, total;
	bool unsorted = false;
	int64_t tmax = INT64_MIN;
	uint8_t *scratch = NULL;
	size_t scratch_cap = 0;
	uint32_t nc, ncl, data_off, delta = 0;

	if (old != NULL && !cbucket_map(old, &b)) {
		cbucket_free(&b);
		return 1;
	}
	/* the columns: the old ones, then new fields as they first appear */
	for (int i = 0; i < n; i++) {
		int c = -1;
		if (!bson_iter_init(&it, ms[i]))
			continue;
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			if (o->meta_field != NULL && strcmp(f, o->meta_field) == 0)
				continue;
			if ((c = ccol_of(&b, f, c + 1)) < 0)
				c = ccol_add(&b, f);
		}
	}
	b.el = bson_malloc0(sizeof(*b.el) * ((size_t)n + 1) * (size_t)(b.n + 1));
	for (int c = 0; c < b.n; c++)
		b.c[c].el = b.el + (size_t)c * ((size_t)n + 1);
	if (old != NULL)
		cbucket_old_bounds(&b);
	/* v2 promises measurements in time order; 3 says they are not */
	tc = ccol_of(&b, o->time_field, -1);
	if (tc >= 0 && b.c[tc].any && b.c[tc].max.value_type == BSON_TYPE_DATE_TIME)
		tmax = b.c[tc].max.value.v_datetime;
	for (int i = 0; i < n; i++) {
		int c = -1;
		if (!bson_iter_init(&it, ms[i]))
			continue;
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			const bson_value_t *v;
			ccol_t *col;
			if ((c = ccol_of(&b, f, c + 1)) < 0)
				continue;   /* the meta field */
			col = &b.c[c];
			if (col->el[i].type != 0)
				continue;   /* a repeated field name: the first one */
			v = bson_iter_value(&it);
			col->el[i].type = (uint8_t)bson_iter_type(&it);
			col->el[i].v = it.raw + it.d1;
			col->el[i].vlen = it.next_off - it.d1;
			/* field by field, as mongod's MinMax (ts_minmax.h) */
			ts_minmax_widen2(&col->min, &col->max, &col->any, &col->own_min, &col->own_max, v);
		}
	}
	for (int i = 0; tc >= 0 && i < n; i++) {
		int64_t t;
		if (b.c[tc].el[i].type != BSON_TYPE_DATE_TIME)
			continue;
		memcpy(&t, b.c[tc].el[i].v, 8);
		t = (int64_t)BSON_UINT64_FROM_LE((uint64_t)t);
		if (t < tmax)
			unsorted = true;
		else
			tmax = t;
	}
	/* every column continued */
	for (int c = 0; c < b.n; c++) {
		bsoncolumn_tail_t *t = NULL;
		if (bsoncolumn_append(b.c[c].bin, b.c[c].bin_len, b.count, colstates_find(prev, b.c[c].name, c), b.c[c].el, n,
		        &b.c[c].ed, &t, err) != 0) {
			ret = -1;
			goto done;
		}
		colstates_add(next, b.c[c].name, t);
	}
	if (tm_i32_add(b.count, n, &total)) {
		ret = terr_set(err, TERR_BAD_VALUE, "too many measurements in a bucket");
		goto done;
	}

	/* the bucket */
	if (old != NULL && bson_iter_init_find(&it, old, "_id"))
		bson_append_iter(out, "_id", -1, &it);
	else
		BSON_APPEND_OID(out, "_id", id);
	nc = out->len - 1 + 1 + 8;   /* control's value: after its type byte and "control\0" */
	BSON_APPEND_DOCUMENT_BEGIN(out, "control", &ctl);
	BSON_APPEND_INT32(&ctl, "version", unsorted || b.version == 3 ? 3 : 2);
	BSON_APPEND_DOCUMENT_BEGIN(&ctl, "min", &min);
	for (int c = 0; c < b.n; c++) {
		if (old == NULL && c == tc)
			BSON_APPEND_DATE_TIME(&min, b.c[c].name, start_ms);
		else if (b.c[c].any)
			bv_append(&min, b.c[c].name, -1, &b.c[c].min);
	}
	bson_append_document_end(&ctl, &min);
	BSON_APPEND_DOCUMENT_BEGIN(&ctl, "max", &max);
	for (int c = 0; c < b.n; c++)
		if (b.c[c].any)
			bv_append(&max, b.c[c].name, -1, &b.c[c].max);
	bson_append_document_end(&ctl, &max);
	BSON_APPEND_INT32(&ctl, "count", total);
	bson_append_document_end(out, &ctl);
	ncl = out->len - 1 - nc;
	if (old != NULL) {
		if (bson_iter_init_find(&it, old, "meta"))
			bson_append_iter(out, "meta", -1, &it);
	} else if (o->meta_field != NULL && meta != NULL && meta->value_type != BSON_TYPE_EOD) {
		bv_append(out, "meta", -1, meta);
	}
	data_off = out->len - 1 + 1 + 5;
	BSON_APPEND_DOCUMENT_BEGIN(out, "data", &data);
	for (int c = 0; c < b.n; c++) {
		ccol_t *col = &b.c[c];
		size_t len = (size_t)col->ed.keep + col->ed.len;
		if (len > scratch_cap) {
			scratch_cap = len * 2;
			bson_free(scratch);
			scratch = bson_malloc(scratch_cap);
		}
		if (col->ed.keep > 0)
			memcpy(scratch, col->bin, col->ed.keep);
		if (col->ed.patch_at >= 0)
			scratch[col->ed.patch_at] = col->ed.patch;
		memcpy(scratch + col->ed.keep, col->ed.bytes, col->ed.len);
		col->new_off = data_off + data.len - 1 + 1 + (uint32_t)strlen(col->name) + 1;
		bson_append_binary(&data, col->name, -1, BSON_SUBTYPE_COLUMN, scratch, (uint32_t)len);
	}
	bson_append_document_end(out, &data);
	if (old == NULL)
		goto done;

	/* the damages, in ascending order */
	{
		const uint8_t *ob = bson_get_data(old), *nb = bson_get_data(out);
		bool ok = nc == b.control;
		bdamages_reset(dm);
		if (out->len != old->len)
			bdamages_add(dm, 0, 0, 4, 4);
		if (ok && (ncl != b.control_len || memcmp(ob + b.control, nb + nc, ncl) != 0)) {
			ok = bdamages_diff_at(ob, b.control, nb, nc, dm);
			delta = ncl - b.control_len;   /* modulo 2^32: offsets wrap back */
		}
		ok = ok && data_off == b.data + delta;
		if (ok && out->len != old->len)
			bdamages_add(dm, b.data, b.data + delta, 4, 4);
		for (int c = 0; ok && c < b.n; c++) {
			ccol_t *col = &b.c[c];
			uint32_t at, grown;
			if (col->bin == NULL) {
				/* the new columns: before data's nul (data is last) */
				uint32_t end = b.data + b.data_len - 1;
				bdamages_add(dm, end, end + delta, 0, out->len - 1 - 1 - (end + delta));
				delta = out->len - old->len;
				break;
			}
			ok = col->new_off == col->val_off + delta;
			grown = col->ed.keep + col->ed.len - col->bin_len;
			if (!ok)
				break;
			if (grown != 0)
				bdamages_add(dm, col->val_off, col->val_off + delta, 4, 4);
			at = col->val_off + 5;
			if (col->ed.patch_at >= 0 && col->bin[col->ed.patch_at] != col->ed.patch)
				bdamages_add(dm, at + (uint32_t)col->ed.patch_at, at + (uint32_t)col->ed.patch_at + delta, 1, 1);
			bdamages_add(dm, at + col->ed.keep, at + col->ed.keep + delta, col->bin_len - col->ed.keep, col->ed.len);
			delta += grown;
		}
		if (!ok || out->len != old->len + delta) {
			if (!bdamages_compute(ob, old->len, nb, out->len, dm))
				ret = terr_set(err, TERR_BAD_VALUE, "a bucket whose changes could not be computed");
		}
	}
done:
	bson_free(scratch);
	cbucket_free(&b);
	return ret;
}

int
ts_bucket_build_compressed(const ts_options_t *o, const bson_oid_t *id, int64_t start_ms, const bson_value_t *meta,
                           const bson_t *const *ms, int n, bson_t *out, ts_colstates_t *next, terr_t *err)
{
	return compressed_write(o, NULL, id, start_ms, meta, ms, n, NULL, out, NULL, next, err);
}

int
ts_bucket_append_compressed(const ts_options_t *o, const bson_t *old, const bson_t *const *ms, int n,
                            const ts_colstates_t *prev, bson_t *out, bdamages_t *dm, ts_colstates_t *next,
                            terr_t *err)
{
	bson_t v1 = BSON_INITIALIZER, app = BSON_INITIALIZER;
	int ret = compressed_write(o, old, NULL, 0, NULL, ms, n, prev, out, dm, next, err);

	if (ret != 1)
		return ret;
	/* another layout (a raw write): through the v1 form */
	if ((ret = ts_bucket_decompress(old, &v1, err)) == 0) {
		ts_bucket_append(o, &v1, ms, n, &app);
		if ((ret = ts_bucket_compress(o, &app, out, err)) == 0 &&
		    !bdamages_compute(bson_get_data(old), old->len, bson_get_data(out), out->len, dm))
			ret = terr_set(err, TERR_BAD_VALUE, "a bucket whose changes could not be computed");
	}
	bson_destroy(&v1);
	bson_destroy(&app);
	return ret;
}
