/*
 * keygen.c -- index keys for one document (see keygen.h for the rules).
 *
 * The walk keeps, for each key-pattern field, the value reached so far and
 * the part of the path still to follow.  Fields first descend through
 * embedded documents; when some stop at an array, that one array (every
 * such field must stop at the same one) is expanded: each element becomes
 * the fields' new value and the walk recurses.  Fields that reached no array
 * keep their value in every key, which gives the cartesian product MongoDB
 * produces for an array and scalars.
 */
#include "query/keygen.h"

#include <pthread.h>
#include <string.h>

#include "bson/collation.h"
#include "bson/iter.h"
#include "bson/keystring.h"
#include "bson/value.h"
#include "expr/hash.h"
#include "text/text.h"
#include <openssl/evp.h>
#include "query/bucket_column.h"
#include "query/match.h"

typedef struct kg_field {
	const char *rest;        /* path still to follow, NULL once at the end */
	const char *name;        /* last component followed (for error messages) */
	uint32_t name_len;
	bson_value_t val;        /* BSON_TYPE_EOD = missing */
	bool desc;
	bool expanded;           /* val is an element of an expanded leaf array */
	int depth;               /* path components followed so far */
} kg_field_t;

typedef struct kg_ctx {
	int n;
	bool sparse;
	storage_key_add_fn add;
	void *add_ctx;
	keystring_t ks;
	keystring_t tb;          /* the key's type bits */
	terr_t *err;
	uint32_t *mk;            /* keygen_multikey_paths: per field, components holding arrays */
	const coll_t *coll;      /* the index's collation: strings become its sort keys */
} kg_ctx_t;

/* Follow f's path through embedded documents until the end, a scalar in the
 * middle (missing), or an array. */
static void
field_descend(kg_field_t *f)
{
	while (f->rest != NULL) {
		const char *dot = strchr(f->rest, '.');
		size_t len = dot ? (size_t)(dot - f->rest) : strlen(f->rest);
		biter_t it;   /* the lean walk: stored documents were validated on the way in */

		if (f->val.value_type == BSON_TYPE_ARRAY) {
			uint32_t pos;
			char key[16];
			/* A positional component selects that element without
			 * expanding the array ("a.0"). */
			if (len == 0 || len > 10 || f->rest[0] < '0' || f->rest[0] > '9' ||
			    (len > 1 && f->rest[0] == '0'))
				return;
			pos = (uint32_t)strtoul(f->rest, NULL, 10);
			bson_snprintf(key, sizeof(key), "%u", pos);
			if (!biter_init_value(&it, &f->val) || !biter_find(&it, key, (uint32_t)strlen(key))) {
				f->val.value_type = BSON_TYPE_EOD;
				f->rest = NULL;
				return;
			}
		} else if (f->val.value_type == BSON_TYPE_DOCUMENT) {
			if (len > UINT32_MAX || !biter_init_value(&it, &f->val) || !biter_find(&it, f->rest, (uint32_t)len)) {
				f->val.value_type = BSON_TYPE_EOD;
				f->rest = NULL;
				return;
			}
		} else {
			f->val.value_type = BSON_TYPE_EOD;
			f->rest = NULL;
			return;
		}
		f->name = f->rest;
		f->name_len = (uint32_t)len;
		biter_value(&it, &f->val);
		f->rest = dot ? dot + 1 : NULL;
		f->depth++;
	}
}

static bool
field_at_array(const kg_field_t *f)
{
	return f->val.value_type == BSON_TYPE_ARRAY && (f->rest != NULL || !f->expanded);
}

static void
emit(kg_ctx_t *g, const kg_field_t *fields)
{
	bson_value_t null_v;
	int i;
	bool any = false;

	null_v.value_type = BSON_TYPE_NULL;
	keystring_reset(&g->ks);
	keystring_reset(&g->tb);
	for (i = 0; i < g->n; i++) {
		const bson_value_t *v = &fields[i].val;
		if (v->value_type == BSON_TYPE_EOD)
			v = &null_v;
		else
			any = true;
		keystring_append_value_tb_coll(&g->ks, &g->tb, v, fields[i].desc, g->coll);
	}
	if (g->sparse && !any)
		return;
	g->add(g->add_ctx, g->ks.buf, g->ks.len, g->tb.buf, g->tb.len);
}

static int
gen(kg_ctx_t *g, kg_field_t *fields)
{
	kg_field_t next[KEYGEN_MAX_FIELDS];
	const uint8_t *arr = NULL;
	uint32_t arr_len = 0;
	int i, first = -1;
	bson_iter_t it;

	for (i = 0; i < g->n; i++) {
		field_descend(&fields[i]);
		if (!field_at_array(&fields[i]))
			continue;
		if (arr == NULL) {
			arr = fields[i].val.value.v_doc.data;
			arr_len = fields[i].val.value.v_doc.data_len;
			first = i;
		} else if (fields[i].val.value.v_doc.data != arr) {
			return terr_set(g->err, 171, "cannot index parallel arrays [%.*s] [%.*s]",
			    (int)fields[i].name_len, fields[i].name, (int)fields[first].name_len,
			    fields[first].name);
		}
	}
	if (arr == NULL) {
		emit(g, fields);
		return 0;
	}
	if (!bson_iter_init_from_data(&it, arr, arr_len))
		return terr_set(g->err, TERR_INVALID_BSON, "invalid BSON array in document");
	if (g->mk != NULL) {
		/* the array is the value of the last component followed */
		for (i = 0; i < g->n; i++)
			if (field_at_array(&fields[i]) && fields[i].val.value.v_doc.data == arr &&
			    fields[i].depth >= 1 && fields[i].depth <= 32)
				g->mk[i] |= 1u << (fields[i].depth - 1);
	}
	if (arr_len <= 5) {
		/* []: undefined at the end of a path, null (missing) inside one. */
		memcpy(next, fields, sizeof(kg_field_t) * g->n);
		for (i = 0; i < g->n; i++) {
			if (!field_at_array(&fields[i]) || fields[i].val.value.v_doc.data != arr)
				continue;
			next[i].val.value_type = next[i].rest == NULL ? BSON_TYPE_UNDEFINED : BSON_TYPE_EOD;
			next[i].rest = NULL;
			next[i].expanded = true;
		}
		return gen(g, next);
	}
	while (bson_iter_next(&it)) {
		const bson_value_t *elem = bson_iter_value(&it);
		memcpy(next, fields, sizeof(kg_field_t) * g->n);
		for (i = 0; i < g->n; i++) {
			if (!field_at_array(&fields[i]) || fields[i].val.value.v_doc.data != arr)
				continue;
			next[i].val = *elem;
			if (next[i].rest == NULL) {
				next[i].expanded = true;
			} else if (elem->value_type != BSON_TYPE_DOCUMENT) {
				next[i].val.value_type = BSON_TYPE_EOD;
				next[i].rest = NULL;
			}
		}
		if (gen(g, next) != 0)
			return -1;
	}
	return 0;
}

/*
 * Compiled partial filters, shared by every write: keyed by the filter's
 * bytes, never freed (a process sees few distinct partial filters, and a
 * match_t stays valid for evaluations running while others are added).
 */
typedef struct pf_entry {
	struct pf_entry *next;
	uint8_t *bytes;
	uint32_t len;
	const coll_t *coll;
	match_t *m;
} pf_entry_t;

static pf_entry_t *pf_cache;
static pthread_mutex_t pf_mu = PTHREAD_MUTEX_INITIALIZER;

static const match_t *
pf_lookup(const uint8_t *data, uint32_t len, const coll_t *coll, terr_t *err)
{
	pf_entry_t *e;
	bson_t filter;
	match_t *m = NULL;

	pthread_mutex_lock(&pf_mu);
	for (e = pf_cache; e != NULL; e = e->next)
		if (e->len == len && e->coll == coll && memcmp(e->bytes, data, len) == 0)
			break;
	pthread_mutex_unlock(&pf_mu);
	if (e != NULL)
		return e->m;
	if (!bson_init_static(&filter, data, len)) {
		terr_set(err, TERR_INVALID_BSON, "invalid partialFilterExpression");
		return NULL;
	}
	{
		/* the partial filter compares strings by the index's collation */
		match_options_t mo = {0};
		mo.coll = coll;
		if (match_compile(&filter, &mo, &m, err) != 0)
			return NULL;
	}
	e = bson_malloc0(sizeof(*e));
	e->coll = coll;
	e->bytes = bson_malloc(len);
	memcpy(e->bytes, data, len);
	e->len = len;
	e->m = m;
	pthread_mutex_lock(&pf_mu);
	e->next = pf_cache;
	pf_cache = e;
	pthread_mutex_unlock(&pf_mu);
	return m;
}

/* Does doc pass idx's partialFilterExpression (1), not (0), error (-1)? */
static int
partial_pass(const storage_index_t *idx, const bson_t *doc, terr_t *err)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;
	const match_t *m;

	if (!idx->partial || idx->spec == NULL || !bson_iter_init_find(&it, idx->spec, "partialFilterExpression") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it))
		return 1;
	bson_iter_document(&it, &len, &data);
	if ((m = pf_lookup(data, len, idx->collation, err)) == NULL)
		return -1;
	return match_exec(m, doc, NULL, err);
}

/* ---- wildcard ------------------------------------------------------------- */

/* Is prefix a whole-component prefix of path (or equal)? */
static bool
path_prefix(const char *prefix, size_t plen, const char *path)
{
	return strncmp(prefix, path, plen) == 0 && (path[plen] == '\0' || path[plen] == '.');
}

/* What kind of keys an index pattern makes, from one lean walk of the
 * pattern (every write asks, for every index): a wildcard pattern's first
 * field is "$**" or ends in ".$**"; a text pattern has an "_fts" field
 * (checked before "hashed", as keygen_run did); a hashed one a "hashed"
 * value; a geo one (keygen_geo.c) a "2dsphere", "2dsphere_bucket" or "2d" value. */
typedef enum { KK_BTREE, KK_WILDCARD, KK_HASHED, KK_TEXT, KK_GEO } key_kind_t;

static key_kind_t
key_kind(const storage_index_t *idx)
{
	biter_t it;
	bool first = true, hashed = false, geo = false;

	if (idx->key == NULL || !biter_init(&it, bson_get_data(idx->key), idx->key->len))
		return KK_BTREE;
	while (biter_next(&it)) {
		if (first && (strcmp(it.key, "$**") == 0 ||
		    (it.key_len > 4 && strcmp(it.key + it.key_len - 4, ".$**") == 0)))
			return KK_WILDCARD;
		first = false;
		if (it.key_len == 4 && memcmp(it.key, "_fts", 4) == 0)
			return KK_TEXT;
		if (it.type == BSON_TYPE_UTF8 && it.val_len == 4 + 7 && memcmp(it.val + 4, "hashed", 7) == 0)
			hashed = true;
		/* keygen_geo_kind's "2dsphere" and "2d" (checked after hashed, as
		 * keygen_run did) */
		if (it.type == BSON_TYPE_UTF8 && ((it.val_len == 4 + 9 && memcmp(it.val + 4, "2dsphere", 9) == 0) ||
		    (it.val_len == 4 + 3 && memcmp(it.val + 4, "2d", 3) == 0) ||
		    (it.val_len == 4 + 16 && memcmp(it.val + 4, "2dsphere_bucket", 16) == 0)))
			geo = true;
	}
	return hashed ? KK_HASHED : geo ? KK_GEO : KK_BTREE;
}

bool
keygen_is_wildcard(const storage_index_t *idx)
{
	return key_kind(idx) == KK_WILDCARD;
}

/* Whether a path at any depth may hold indexed values: inside the subtree
 * and not excluded by the projection.  leaf: path is a complete value path
 * (inclusion projections then need a prefix of it listed). */
static bool
wildcard_scope(const storage_index_t *idx, const char *path, bool leaf)
{
	bson_iter_t it, pj;
	const char *k;
	size_t n;
	bool inclusion = false, any = false, included = false, id_listed = false, id_in = false;

	bson_iter_init(&it, idx->key);
	bson_iter_next(&it);
	k = bson_iter_key(&it);
	n = strlen(k);
	if (strcmp(k, "$**") != 0) {
		/* "a.b.$**": the subtree a.b */
		if (!path_prefix(k, n - 4, path) && !(!leaf && path_prefix(path, strlen(path), k)))
			return false;
		return true;
	}
	if (idx->spec != NULL && bson_iter_init_find(&pj, idx->spec, "wildcardProjection") &&
	    BSON_ITER_HOLDS_DOCUMENT(&pj) && bson_iter_recurse(&pj, &it)) {
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			bool on = bson_iter_as_bool(&it);
			if (strcmp(f, "_id") == 0) {
				id_listed = true;
				id_in = on;
				if (path_prefix("_id", 3, path))
					included = on;
				continue;
			}
			any = true;
			inclusion = on;
			if (path_prefix(f, strlen(f), path) || (!leaf && on && path_prefix(path, strlen(path), f)))
				included = on ? true : included;
			if (!on && path_prefix(f, strlen(f), path))
				return false;
		}
	}
	if (path_prefix("_id", 3, path))
		return id_listed && id_in;
	if (any && inclusion)
		return included;
	return true;
}

bool
keygen_wildcard_covers(const storage_index_t *idx, const char *path)
{
	return keygen_is_wildcard(idx) && wildcard_scope(idx, path, true);
}

typedef struct wc_ctx {
	const storage_index_t *idx;
	storage_key_add_fn add;
	void *add_ctx;
	keystring_t ks, tb;
	char path[2048];
	int depth;
} wc_ctx_t;

static void
wc_emit(wc_ctx_t *w, const bson_value_t *v)
{
	bson_value_t p;

	if (!wildcard_scope(w->idx, w->path, true))
		return;
	p.value_type = BSON_TYPE_UTF8;
	p.value.v_utf8.str = w->path;
	p.value.v_utf8.len = (uint32_t)strlen(w->path);
	keystring_reset(&w->ks);
	keystring_reset(&w->tb);
	keystring_append_value_tb(&w->ks, &w->tb, &p, false);   /* field paths never collate */
	keystring_append_value_tb_coll(&w->ks, &w->tb, v, false, w->idx->collation);
	w->add(w->add_ctx, w->ks.buf, w->ks.len, w->tb.buf, w->tb.len);
}

static void wc_value(wc_ctx_t *w, const bson_value_t *v, bool in_array);

static void
wc_doc(wc_ctx_t *w, const uint8_t *data, uint32_t len)
{
	bson_iter_t it;
	size_t plen = strlen(w->path);

	if (!bson_iter_init_from_data(&it, data, len))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		size_t klen = strlen(k);
		if (plen + klen + 2 >= sizeof(w->path))
			continue;
		if (plen > 0)
			w->path[plen] = '.';
		memcpy(w->path + plen + (plen > 0), k, klen + 1);
		if (wildcard_scope(w->idx, w->path, false))
			wc_value(w, bson_iter_value(&it), false);
		w->path[plen] = '\0';
	}
}

static void
wc_value(wc_ctx_t *w, const bson_value_t *v, bool in_array)
{
	if (w->depth > 200)
		return;
	w->depth++;
	if (v->value_type == BSON_TYPE_DOCUMENT && v->value.v_doc.data_len > 5) {
		wc_doc(w, v->value.v_doc.data, v->value.v_doc.data_len);
	} else if (v->value_type == BSON_TYPE_ARRAY && !in_array) {
		bson_iter_t it;
		if (v->value.v_doc.data_len <= 5) {
			bson_value_t u;
			u.value_type = BSON_TYPE_UNDEFINED;
			wc_emit(w, &u);
		} else if (bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len)) {
			while (bson_iter_next(&it))
				wc_value(w, bson_iter_value(&it), true);
		}
	} else {
		/* scalars, empty documents, and arrays nested in arrays */
		wc_emit(w, v);
	}
	w->depth--;
}

static int
wildcard_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx)
{
	wc_ctx_t *w = bson_malloc0(sizeof(*w));

	w->idx = idx;
	w->add = add;
	w->add_ctx = ctx;
	keystring_init(&w->ks);
	keystring_init(&w->tb);
	wc_doc(w, bson_get_data(doc), doc->len);
	keystring_destroy(&w->ks);
	keystring_destroy(&w->tb);
	bson_free(w);
	return 0;
}


/* ---- hashed --------------------------------------------------------------- */

bool
keygen_is_hashed(const storage_index_t *idx)
{
	return key_kind(idx) == KK_HASHED;
}

/* The value at path in doc as mongod's extractElementAtOrArrayAlongDottedPath
 * sees it: descending documents, stopping at the first array (16766 for a
 * hashed index, naming the path up to it), EOD when missing. */
static int
hashed_field_value(const bson_t *doc, const char *path, bson_value_t *out, terr_t *err)
{
	bson_value_t cur;
	const char *p = path;

	cur.value_type = BSON_TYPE_DOCUMENT;
	cur.value.v_doc.data = (uint8_t *)bson_get_data(doc);
	cur.value.v_doc.data_len = doc->len;
	while (p != NULL) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		bson_iter_t it;
		if (cur.value_type != BSON_TYPE_DOCUMENT ||
		    !bson_iter_init_from_data(&it, cur.value.v_doc.data, cur.value.v_doc.data_len) ||
		    !bson_iter_find_w_len(&it, p, (int)len)) {
			out->value_type = BSON_TYPE_EOD;
			return 0;
		}
		cur = *bson_iter_value(&it);
		if (cur.value_type == BSON_TYPE_ARRAY)
			return terr_set(err, 16766,
			    "Error: hashed indexes do not currently support array values. Found array at path: %.*s",
			    (int)(p + len - path), path);
		p = dot ? dot + 1 : NULL;
	}
	*out = cur;
	return 0;
}

int64_t
keygen_hash_value(const bson_value_t *v, const coll_t *coll)
{
	uint8_t stack[256], *buf = stack;
	size_t n;
	bson_value_t k;
	int64_t h;

	if (coll == NULL || (v->value_type != BSON_TYPE_UTF8 && v->value_type != BSON_TYPE_SYMBOL))
		return expr_hash64(v);
	/* a collated index hashes the string's comparison key */
	n = coll_sort_key(coll, v->value.v_utf8.str, v->value.v_utf8.len, stack, sizeof(stack));
	if (n > sizeof(stack)) {
		buf = bson_malloc(n);
		n = coll_sort_key(coll, v->value.v_utf8.str, v->value.v_utf8.len, buf, n);
	}
	k.value_type = BSON_TYPE_UTF8;
	k.value.v_utf8.str = (char *)buf;
	k.value.v_utf8.len = (uint32_t)n;
	h = expr_hash64(&k);
	if (buf != stack)
		bson_free(buf);
	return h;
}

/* One key: each field's value (the hashed one as its int64 hash), no
 * array anywhere on any field's path (mongod's getHashKeys). */
static int
hashed_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, terr_t *err)
{
	keystring_t ks, tb;
	bson_iter_t it;
	bool any = false;
	int ret = 0;

	if (!bson_iter_init(&it, idx->key))
		return terr_set(err, TERR_INVALID_BSON, "invalid index key pattern");
	keystring_init(&ks);
	keystring_init(&tb);
	while (bson_iter_next(&it)) {
		bson_value_t v, null_v = {.value_type = BSON_TYPE_NULL};
		if ((ret = hashed_field_value(doc, bson_iter_key(&it), &v, err)) != 0)
			goto done;
		if (v.value_type == BSON_TYPE_EOD)
			v = null_v;
		else
			any = true;
		if (BSON_ITER_HOLDS_UTF8(&it)) {
			bson_value_t h;
			h.value_type = BSON_TYPE_INT64;
			h.value.v_int64 = keygen_hash_value(&v, idx->collation);
			keystring_append_value_tb(&ks, &tb, &h, false);
		} else {
			keystring_append_value_tb_coll(&ks, &tb, &v, bson_iter_as_double(&it) < 0, idx->collation);
		}
	}
	if (!idx->sparse || any)
		add(ctx, ks.buf, ks.len, tb.buf, tb.len);
done:
	keystring_destroy(&ks);
	keystring_destroy(&tb);
	return ret;
}

/* ---- text ----------------------------------------------------------------- */

bool
keygen_is_text(const storage_index_t *idx)
{
	return key_kind(idx) == KK_TEXT;
}

static uint64_t
rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t
fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* MurmurHash3_x64_128 (seed 0) of data, as 16 bytes in memory order. */
static void
murmur3_128(const uint8_t *data, size_t len, uint8_t out[16])
{
	const uint64_t c1 = 0x87c37b91114253d5ull, c2 = 0x4cf5ad432745937full;
	size_t nblocks = len / 16, i;
	uint64_t h1 = 0, h2 = 0, k1, k2;
	const uint8_t *tail = data + nblocks * 16;

	for (i = 0; i < nblocks; i++) {
		memcpy(&k1, data + i * 16, 8);
		memcpy(&k2, data + i * 16 + 8, 8);
		k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
		h1 = rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
		k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2;
		h2 = rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
	}
	k1 = k2 = 0;
	switch (len & 15) {
	case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
	case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
	case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
	case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
	case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
	case 10: k2 ^= (uint64_t)tail[9] << 8; /* fall through */
	case 9: k2 ^= (uint64_t)tail[8];
		k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2; /* fall through */
	case 8: k1 ^= (uint64_t)tail[7] << 56; /* fall through */
	case 7: k1 ^= (uint64_t)tail[6] << 48; /* fall through */
	case 6: k1 ^= (uint64_t)tail[5] << 40; /* fall through */
	case 5: k1 ^= (uint64_t)tail[4] << 32; /* fall through */
	case 4: k1 ^= (uint64_t)tail[3] << 24; /* fall through */
	case 3: k1 ^= (uint64_t)tail[2] << 16; /* fall through */
	case 2: k1 ^= (uint64_t)tail[1] << 8; /* fall through */
	case 1: k1 ^= (uint64_t)tail[0];
		k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
		break;
	default:
		break;
	}
	h1 ^= (uint64_t)len;
	h2 ^= (uint64_t)len;
	h1 += h2;
	h2 += h1;
	h1 = fmix64(h1);
	h2 = fmix64(h2);
	h1 += h2;
	h2 += h1;
	memcpy(out, &h1, 8);
	memcpy(out + 8, &h2, 8);
}

const char *
keygen_text_term(const char *term, size_t len, int version, char buf[KEYGEN_TEXT_TERM_MAX + 1], size_t *out_len)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	*out_len = len;
	if (version == 2) {
		if (len <= 32)
			return term;
		murmur3_128((const uint8_t *)term, len, md);
		memcpy(buf, term, 32);
		for (unsigned int j = 0; j < 16; j++)
			snprintf(buf + 32 + 2 * j, 3, "%02x", md[j]);
		*out_len = 64;
		return buf;
	}
	if (len <= 224)
		return term;
	EVP_Digest(term, len, md, &mdlen, EVP_md5(), NULL);
	memcpy(buf, term, 224);
	for (unsigned int j = 0; j < 16; j++)
		snprintf(buf + 224 + 2 * j, 3, "%02x", md[j]);
	*out_len = 256;
	return buf;
}

/* A prefix or suffix field of a text index: no array anywhere on its path
 * (201 CannotBuildIndexKeys, mongod's extractNonFTSKeyElement). */
static int
text_extra_value(const bson_t *doc, const char *path, bson_value_t *out, terr_t *err)
{
	bson_value_t cur;
	const char *p = path;

	cur.value_type = BSON_TYPE_DOCUMENT;
	cur.value.v_doc.data = (uint8_t *)bson_get_data(doc);
	cur.value.v_doc.data_len = doc->len;
	out->value_type = BSON_TYPE_NULL;
	while (p != NULL) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		bson_iter_t it;
		if (cur.value_type != BSON_TYPE_DOCUMENT ||
		    !bson_iter_init_from_data(&it, cur.value.v_doc.data, cur.value.v_doc.data_len) ||
		    !bson_iter_find_w_len(&it, p, (int)len))
			return 0;
		cur = *bson_iter_value(&it);
		if (cur.value_type == BSON_TYPE_ARRAY) {
			char *s = bv_doc_to_mongo_string(doc);
			terr_set(err, 201, "Field '%s' of text index contains an array in document: %s", path, s);
			bson_free(s);
			return -1;
		}
		p = dot ? dot + 1 : NULL;
	}
	*out = cur;
	return 0;
}

typedef struct text_kg {
	const storage_index_t *idx;
	storage_key_add_fn add;
	void *ctx;
	keystring_t ks, tb;
	const bson_value_t *before, *after;
	const bool *before_desc, *after_desc;
	int nbefore, nafter;
	int version;             /* textIndexVersion */
} text_kg_t;

/* Key of one term: prefix values, the term (version 3: past 224 bytes, its
 * first 224 and the hex MD5 of the whole), its score, suffix values. */
static void
text_key(void *ctx, const char *term, size_t len, double score)
{
	text_kg_t *k = ctx;
	bson_value_t t, sc;
	char buf[KEYGEN_TEXT_TERM_MAX + 1];
	int i;

	keystring_reset(&k->ks);
	keystring_reset(&k->tb);
	for (i = 0; i < k->nbefore; i++)
		keystring_append_value_tb(&k->ks, &k->tb, &k->before[i], k->before_desc[i]);
	t.value_type = BSON_TYPE_UTF8;
	t.value.v_utf8.str = (char *)keygen_text_term(term, len, k->version, buf, &len);
	t.value.v_utf8.len = (uint32_t)len;
	keystring_append_value_tb(&k->ks, &k->tb, &t, false);
	sc.value_type = BSON_TYPE_DOUBLE;
	sc.value.v_double = score;
	keystring_append_value_tb(&k->ks, &k->tb, &sc, false);
	for (i = 0; i < k->nafter; i++)
		keystring_append_value_tb(&k->ks, &k->tb, &k->after[i], k->after_desc[i]);
	k->add(k->ctx, k->ks.buf, k->ks.len, k->tb.buf, k->tb.len);
}

static int
text_keys(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, terr_t *err)
{
	bson_value_t before[KEYGEN_MAX_FIELDS], after[KEYGEN_MAX_FIELDS];
	bool bdesc[KEYGEN_MAX_FIELDS], adesc[KEYGEN_MAX_FIELDS];
	text_kg_t k;
	const text_spec_t *spec;
	bson_iter_t it;
	bool passed = false;
	int nb = 0, na = 0, ret;

	if (idx->spec == NULL || (spec = text_spec_get(idx->spec, err)) == NULL)
		return -1;
	bson_iter_init(&it, idx->key);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		if (!strcmp(f, "_fts") || !strcmp(f, "_ftsx")) {
			passed = true;
			continue;
		}
		if ((passed ? na : nb) >= KEYGEN_MAX_FIELDS)
			return terr_set(err, 13103, "too many compound keys");
		if (passed) {
			adesc[na] = bson_iter_as_double(&it) < 0;
			RET(text_extra_value(doc, f, &after[na++], err));
		} else {
			bdesc[nb] = bson_iter_as_double(&it) < 0;
			RET(text_extra_value(doc, f, &before[nb++], err));
		}
	}
	memset(&k, 0, sizeof(k));
	k.idx = idx;
	k.add = add;
	k.ctx = ctx;
	k.before = before;
	k.after = after;
	k.before_desc = bdesc;
	k.after_desc = adesc;
	k.nbefore = nb;
	k.nafter = na;
	k.version = text_spec_version(spec);
	keystring_init(&k.ks);
	keystring_init(&k.tb);
	ret = text_score_document(spec, doc, text_key, &k, err);
	keystring_destroy(&k.ks);
	keystring_destroy(&k.tb);
	return ret;
}

static int keygen_run(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
                      uint32_t *mk, terr_t *err);

/*
 * An index over a time-series collection's buckets (idx->ts_time_field set):
 * mongod's ExpressionKeysPrivate::validateDocumentCommon.  Every numeric
 * key-pattern field control.min.<f> / control.max.<f> other than the
 * timeField names a measurement field f, checked once: when the bucket's
 * control.min/max may hide an array at f (bucket_field_array_decision), a
 * Yes, or a Maybe whose column does hold one, refuses the bucket with 5930501
 * -- an index build over it, or the write of it.
 */
static int
bucket_validate(const storage_index_t *idx, const bson_t *doc, terr_t *err)
{
	const char *checked[KEYGEN_MAX_FIELDS];
	int nchecked = 0;
	bson_iter_t it;

	if (!bson_iter_init(&it, idx->key))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it), *f;
		bool seen = false, found = false;
		bucket_array_t d;
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			continue;
		if (strncmp(k, "control.min.", 12) == 0 || strncmp(k, "control.max.", 12) == 0)
			f = k + 12;
		else
			continue;
		if (*f == '\0' || strcmp(f, idx->ts_time_field) == 0)
			continue;   /* time values are dates, never arrays */
		for (int i = 0; i < nchecked && !seen; i++)
			seen = strcmp(checked[i], f) == 0;
		if (seen)
			continue;
		if (nchecked < KEYGEN_MAX_FIELDS)
			checked[nchecked++] = f;
		d = bucket_field_array_decision(doc, f);
		if (d == BUCKET_ARRAY_NO)
			continue;
		if (d == BUCKET_ARRAY_MAYBE && bucket_column_has_array(doc, f, &found, err) != 0)
			return -1;
		if (d == BUCKET_ARRAY_YES || found)
			return terr_set(err, 5930501, "Indexed measurement field contains an array value");
	}
	return 0;
}

int
query_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx,
             uint32_t *mkpaths, terr_t *err)
{
	return keygen_run(idx, doc, add, ctx, mkpaths, err);
}

static void
no_key(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen)
{
	(void)ctx;
	(void)key;
	(void)len;
	(void)tb;
	(void)tblen;
}

int
keygen_multikey_paths(const storage_index_t *idx, const bson_t *doc, uint32_t *masks, terr_t *err)
{
	int n = (int)bson_count_keys(idx->key);

	if (n > KEYGEN_MAX_FIELDS)
		n = KEYGEN_MAX_FIELDS;
	memset(masks, 0, sizeof(uint32_t) * (size_t)n);
	if (keygen_is_wildcard(idx) || keygen_is_text(idx) || keygen_geo_kind(idx, NULL))
		return 0;
	if (keygen_run(idx, doc, no_key, NULL, masks, err) != 0)
		return -1;
	return n;
}

void
keygen_multikey_paths_append(const bson_t *key_pattern, const uint32_t *masks, bson_t *out)
{
	bson_iter_t it;
	int i = 0;

	if (!bson_iter_init(&it, key_pattern))
		return;
	while (bson_iter_next(&it) && i < KEYGEN_MAX_FIELDS) {
		const char *path = bson_iter_key(&it);
		bson_t arr;
		int k, nput = 0;
		bson_append_array_begin(out, path, -1, &arr);
		for (k = 0; k < 32; k++) {
			const char *c = path;
			int comp = 0;
			char key[16];
			const char *kk;
			if (!(masks[i] & (1u << k)))
				continue;
			/* the prefix of path ending at component k */
			while (comp < k + 1 && c != NULL) {
				c = strchr(c, '.');
				comp++;
				if (comp < k + 1 && c != NULL)
					c++;
			}
			bson_uint32_to_string((uint32_t)nput++, &kk, key, sizeof(key));
			bson_append_utf8(&arr, kk, -1, path, c != NULL ? (int)(c - path) : -1);
		}
		bson_append_array_end(out, &arr);
		i++;
	}
}

static int
keygen_run(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, uint32_t *mk,
           terr_t *err)
{
	kg_field_t fields[KEYGEN_MAX_FIELDS];
	kg_ctx_t g;
	bson_iter_t it;
	int ret = 0, rc;

	memset(&g, 0, sizeof(g));
	g.mk = mk;
	g.add = add;
	g.add_ctx = ctx;
	g.err = err;
	g.sparse = idx->sparse;
	g.coll = idx->collation;
	key_kind_t kind;

	if ((rc = partial_pass(idx, doc, err)) <= 0)
		return rc;
	kind = idx->plain_btree ? KK_BTREE : key_kind(idx);
	if (idx->ts_time_field != NULL && kind != KK_WILDCARD && kind != KK_TEXT &&
	    bucket_validate(idx, doc, err) != 0)
		return -1;
	switch (kind) {
	case KK_WILDCARD:
		return wildcard_keys(idx, doc, add, ctx);
	case KK_HASHED:
		return hashed_keys(idx, doc, add, ctx, err);   /* never multikey */
	case KK_TEXT:
		return text_keys(idx, doc, add, ctx, err);
	case KK_GEO:   /* keygen_geo_kind */
		return keygen_geo_keys(idx, doc, add, ctx, err);
	default:
		break;
	}
	if (!bson_iter_init(&it, idx->key))
		return terr_set(err, TERR_INVALID_BSON, "invalid index key pattern");
	while (bson_iter_next(&it)) {
		kg_field_t *f;
		if (g.n == KEYGEN_MAX_FIELDS || BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "index %s: this kind of index is not supported by Tamga yet", idx->name);
		f = &fields[g.n++];
		memset(f, 0, sizeof(*f));
		f->rest = bson_iter_key(&it);
		f->desc = bson_iter_as_double(&it) < 0;
		f->val.value_type = BSON_TYPE_DOCUMENT;
		f->val.value.v_doc.data = (uint8_t *)bson_get_data(doc);
		f->val.value.v_doc.data_len = doc->len;
	}
	keystring_init(&g.ks);
	keystring_init(&g.tb);
	ret = gen(&g, fields);
	keystring_destroy(&g.ks);
	keystring_destroy(&g.tb);
	return ret;
}

void
query_keygen_register(storage_t *st)
{
	storage_set_keygen(st, query_keygen);
}
