/*
 * record.c -- documents: the record table of a collection (RecordId ->
 * BSON) and the index tables kept in step with it, inside the caller's
 * transaction; and collection sizes for stats.
 *
 * Every document write goes through index_apply(), which knows each
 * index's keys for a document.  Storage generates the _id_ index's keys
 * itself; other indexes need the keygen a higher layer installs
 * (storage_set_keygen).  Without one, a collection whose catalog entry has
 * any other index refuses writes with 238 NotImplemented rather than leave
 * that index stale.
 *
 * Not here: opening scans (cursor.c), catalog changes (catalog.c).
 */
#include "storage/storage_private.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "bson/damage.h"
#include "bson/value.h"
#include "common/opctx.h"

/* ---- index keys ---------------------------------------------------------- */

/* The _id element of doc (it must be the first field). */
static bool
doc_id(const bson_t *doc, bson_iter_t *it)
{
	return bson_iter_init(it, doc) && bson_iter_next(it) && strcmp(bson_iter_key(it), "_id") == 0;
}

/* keyset_t (storage_private.h): the keys one document has in one index. */

static void
keyset_clear(keyset_t *ks)
{
	ks->len = 0;
	ks->n = 0;
}

static void
keyset_free(keyset_t *ks)
{
	bson_free(ks->data);
	bson_free(ks->k);
}

static void
keyset_add(keyset_t *ks, const uint8_t *p, size_t len, const uint8_t *tb, size_t tblen)
{
	if (ks->len + len + tblen > ks->cap) {
		ks->cap = (ks->len + len + tblen) * 2 + 64;
		ks->data = bson_realloc(ks->data, ks->cap);
	}
	if (ks->n == ks->ncap) {
		ks->ncap = ks->ncap ? ks->ncap * 2 : 4;
		ks->k = bson_realloc(ks->k, ks->ncap * sizeof(*ks->k));
	}
	memcpy(ks->data + ks->len, p, len);
	if (tblen > 0)
		memcpy(ks->data + ks->len + len, tb, tblen);
	ks->k[ks->n].off = ks->len;
	ks->k[ks->n].len = len;
	ks->k[ks->n].tblen = tblen;
	ks->n++;
	ks->len += len + tblen;
}

static const uint8_t *
keyset_key(const keyset_t *ks, int i, size_t *len)
{
	*len = ks->k[i].len;
	return ks->data + ks->k[i].off;
}

/* The type bits of key i (stored right after it). */
static const uint8_t *
keyset_tb(const keyset_t *ks, int i, size_t *len)
{
	*len = ks->k[i].tblen;
	return ks->data + ks->k[i].off + ks->k[i].len;
}

static int
bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static int
key_ref_cmp(const void *a, const void *b, void *arg)
{
	const keyset_t *ks = arg;
	const struct key_ref *x = a, *y = b;

	return bytes_cmp(ks->data + x->off, x->len, ks->data + y->off, y->len);
}

/* Sort and drop duplicates (equal keys with other type bits, as 1 and 1.0
 * in one array, keep one of them: the index holds one entry). */
static void
keyset_finish(keyset_t *ks)
{
	int out = 0;

	if (ks->n > 1)
		qsort_r(ks->k, ks->n, sizeof(*ks->k), key_ref_cmp, ks);
	for (int i = 0; i < ks->n; i++)
		if (out == 0 || key_ref_cmp(&ks->k[out - 1], &ks->k[i], ks) != 0)
			ks->k[out++] = ks->k[i];
	ks->n = out;
}

static void
keyset_add_cb(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tblen)
{
	keyset_add(ctx, key, len, tb, tblen);
}

/* Fill out with doc's keys in ix: the _id_ index here, others through the
 * keygen a higher layer installed (238 without one).  scratch and tb are
 * work keystrings; mk (NULL or STORAGE_INDEX_MAX_FIELDS entries) gets the
 * document's multikey paths ORed in. */
static int
index_doc_keys(storage_t *st, const storage_index_t *ix, const bson_t *doc, keystring_t *scratch,
               keystring_t *tb, keyset_t *out, uint32_t *mk, terr_t *err)
{
	bson_iter_t it;
	bson_value_t null_v;

	keyset_clear(out);
	if (!ix->is_id) {
		if (st->keygen == NULL)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "writing to a collection with secondary index %s is not implemented yet", ix->name);
		RET(st->keygen(ix, doc, keyset_add_cb, out, mk, err));
		keyset_finish(out);
		return 0;
	}
	keystring_reset(scratch);
	keystring_reset(tb);
	/* _id is normally the first field: no search */
	if (doc_id(doc, &it) || bson_iter_init_find(&it, doc, "_id")) {
		keystring_append_value_tb_coll(scratch, tb, bson_iter_value(&it), false, ix->collation);
	} else {
		null_v.value_type = BSON_TYPE_NULL;
		keystring_append_value_tb(scratch, tb, &null_v, false);
	}
	keyset_add(out, scratch->buf, scratch->len, tb->buf, tb->len);
	keyset_finish(out);
	return 0;
}

/* Fail before writing anything when an index cannot be maintained. */
static int
indexes_supported(const storage_session_t *s, const storage_coll_t *c, terr_t *err)
{
	if (s->st->keygen != NULL)
		return 0;
	for (int i = 0; i < c->nindexes; i++)
		if (!c->indexes[i].is_id)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "writing to a collection with secondary index %s is not implemented yet",
			    c->indexes[i].name);
	return 0;
}

/* The key pattern's parts decoded from the colliding key (into out, keys
 * "0", "1", ...); false when the key does not decode (special index types). */
static bool
dup_key_parts(const storage_index_t *ix, const uint8_t *key, size_t key_len, bson_t *out)
{
	bool desc[32];
	bson_iter_t pit;
	int n = 0;

	if (key == NULL || !bson_iter_init(&pit, ix->key))
		return false;
	while (bson_iter_next(&pit)) {
		if (n == 32 || !BSON_ITER_HOLDS_NUMBER(&pit))
			return false;
		desc[n++] = bson_iter_as_double(&pit) < 0;
	}
	return n > 0 && keystring_decode_values(key, key_len, n, desc, out);
}

/*
 * The value of one key-pattern field to show in dup key: the document's own
 * value, or, when the document has an array there (a multikey index), the
 * element that collided, i.e. the one equal to the decoded key part (mongod
 * shows { a: 1 } for a: [1, 2], not the array).  part may be NULL.
 */
static const bson_value_t *
dup_key_value(const bson_value_t *v, const bson_value_t *part, bson_iter_t *scratch)
{
	if (part == NULL)
		return v;
	if (v->value_type == BSON_TYPE_ARRAY &&
	    bson_iter_init_from_data(scratch, v->value.v_doc.data, v->value.v_doc.data_len)) {
		while (bson_iter_next(scratch))
			if (bv_compare(bson_iter_value(scratch), part) == 0)
				return bson_iter_value(scratch);
	}
	/* not an array, or a path through an array of documents: the decoded
	 * part is the value that collided */
	return bv_compare(v, part) == 0 ? v : part;
}

/* E11000 with mongod's message and keyPattern/keyValue extra fields; key
 * (may be NULL) is the index key that collided. */
static int
dup_key_error(const storage_coll_t *c, const storage_index_t *ix, const bson_t *doc,
              const uint8_t *key, size_t key_len, terr_t *err)
{
	bson_t *extra = bson_new(), kv = BSON_INITIALIZER, kp, parts = BSON_INITIALIZER;
	bson_string_t *msg = bson_string_new(NULL);
	bson_iter_t pit, vit, found, partit, elem;
	bool first = true, have_parts;

	/* a collated key holds sort keys, not the strings: show the document's values */
	have_parts = ix->collation == NULL && dup_key_parts(ix, key, key_len, &parts) &&
	    bson_iter_init(&partit, &parts);
	bson_string_append_printf(msg, "E11000 duplicate key error collection: %s index: %s dup key: { ",
	    c->ns, ix->name);
	if (bson_iter_init(&pit, ix->key)) {
		while (bson_iter_next(&pit)) {
			const char *field = bson_iter_key(&pit);
			bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
			const bson_value_t *v = &null_v, *part = NULL;
			char *rendered;

			if (have_parts && bson_iter_next(&partit))
				part = bson_iter_value(&partit);
			if (bson_iter_init(&vit, doc) && bson_iter_find_descendant(&vit, field, &found))
				v = bson_iter_value(&found);
			v = dup_key_value(v, part, &elem);
			rendered = bv_to_mongo_string(v);
			bson_string_append_printf(msg, "%s%s: %s", first ? "" : ", ", field, rendered);
			bson_free(rendered);
			bv_append(&kv, field, -1, v);
			first = false;
		}
	}
	bson_string_append(msg, first ? "}" : " }");
	terr_set(err, TERR_DUPLICATE_KEY, "%s", msg->str);
	bson_string_free(msg, true);
	bson_init_static(&kp, bson_get_data(ix->key), ix->key->len);
	BSON_APPEND_DOCUMENT(extra, "keyPattern", &kp);
	BSON_APPEND_DOCUMENT(extra, "keyValue", &kv);
	bson_destroy(&kv);
	bson_destroy(&parts);
	terr_set_extra_steal(err, extra);
	return -1;
}


/* ---- clustered values and damages ------------------------------------------ */

int
storage_clustered_value(WT_CURSOR *cur, const storage_index_t *ix, int64_t *rid, WT_ITEM *doc)
{
	int ret;

	if (!ix->clustered_u)
		return cur->get_value(cur, rid, doc);
	if ((ret = cur->get_value(cur, doc)) != 0)
		return ret;
	/* a one-`u` value's bytes are the same through a raw cursor */
	return storage_clustered_raw(ix, doc, rid, doc);
}

/* The same from a raw cursor's value bytes: a one-`u` entry is the 8-byte
 * RecordId (little-endian) then the document; an older `qu` one the packed
 * RecordId (a WiredTiger vint) then the document, unprefixed as a struct's
 * last `u`.  EINVAL when the bytes are too short or the vint is corrupt. */
int
storage_clustered_raw(const storage_index_t *ix, const WT_ITEM *raw, int64_t *rid, WT_ITEM *doc)
{
	size_t n;

	if (ix->clustered_u) {
		const uint8_t *p = raw->data;
		uint64_t r = 0;

		if (raw->size < STORAGE_CLUSTERED_PREFIX)
			return EINVAL;
		for (int i = STORAGE_CLUSTERED_PREFIX - 1; i >= 0; i--)
			r = r << 8 | p[i];
		*rid = (int64_t)r;
		n = STORAGE_CLUSTERED_PREFIX;
	} else if ((n = storage_vint_unpack(raw->data, raw->size, rid)) == 0) {
		return EINVAL;
	}
	doc->data = (const uint8_t *)raw->data + n;
	doc->size = raw->size - n;
	return 0;
}

/* Set cur's value to a one-`u` clustered entry: recid, then doc (built in
 * the session's scratch, valid until the next write). */
static void
clustered_value_set(storage_session_t *s, WT_CURSOR *cur, recid_t recid, const bson_t *doc)
{
	size_t need = STORAGE_CLUSTERED_PREFIX + (size_t)doc->len;
	uint64_t r = (uint64_t)recid;
	WT_ITEM v;

	if (s->cbuf_cap < need) {
		s->cbuf_cap = need + need / 2;
		bson_free(s->cbuf);
		s->cbuf = bson_malloc(s->cbuf_cap);
	}
	for (int i = 0; i < STORAGE_CLUSTERED_PREFIX; i++, r >>= 8)
		s->cbuf[i] = (uint8_t)r;
	memcpy(s->cbuf + STORAGE_CLUSTERED_PREFIX, bson_get_data(doc), doc->len);
	v.data = s->cbuf;
	v.size = need;
	cur->set_value(cur, &v);
}

/* Whether the damages dm (old document -> doc) are worth a modify: some
 * change, not too many entries, and well under the document's bytes. */
static bool
damages_pay(const bdamages_t *dm, const bson_t *doc)
{
	return dm != NULL && dm->n > 0 && dm->n <= STORAGE_MODIFY_MAX_ENTRIES && bdamages_bytes(dm) < doc->len / 2;
}

/* Apply dm to the record at cur's key (set by the caller) with
 * WT_CURSOR::modify: entries at the damages' offsets plus base (the bytes
 * before the document in the value), their bytes taken from doc.  Inside the
 * caller's explicit snapshot transaction, as WiredTiger requires. */
static int
doc_modify(storage_session_t *s, WT_CURSOR *cur, size_t base, const bson_t *doc, const bdamages_t *dm)
{
	WT_MODIFY stackm[32], *m = dm->n <= 32 ? stackm : bson_malloc(sizeof(*m) * (size_t)dm->n);
	const uint8_t *data = bson_get_data(doc);
	int wret;

	(void)s;
	for (int i = 0; i < dm->n; i++) {
		m[i].data.data = data + dm->d[i].offset;
		m[i].data.size = dm->d[i].new_len;
		m[i].offset = base + dm->d[i].offset;
		m[i].size = dm->d[i].old_len;
	}
	wret = cur->modify(cur, m, dm->n);
	if (m != stackm)
		bson_free(m);
	return wret;
}

typedef enum { IX_ADD, IX_REMOVE, IX_RETYPE } ix_op_t;

static bool same_id(const bson_t *a, const bson_t *b);

/*
 * Before adding key -> recid to a key+RecordId table that must stay
 * unique (storage_index_dup_check: prepareUnique, or a unique index
 * converted in place): 11000 when another document has the key.  Like
 * mongod's timestamp-safe unique insert, the bare key is inserted and
 * removed again in this transaction, so two writers adding the same key
 * at once meet a write conflict (retried) instead of both passing the
 * check in their snapshots.  cur is a raw cursor on ix's table.
 */
static int
dup_check(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix, WT_CURSOR *cur,
          const uint8_t *key, size_t key_len, recid_t recid, const bson_t *doc, terr_t *err)
{
	WT_ITEM k, v, fk;
	int exact, wret;

	(void)s;
	k.data = key;
	k.size = key_len;
	cur->set_key(cur, &k);
	wret = cur->search_near(cur, &exact);
	if (wret == 0 && exact < 0)
		wret = cur->next(cur);
	while (wret == 0) {
		if ((wret = cur->get_key(cur, &fk)) != 0)
			break;
		if (fk.size < key_len || memcmp(fk.data, key, key_len) != 0)
			break;
		/* the same key value: the rest is an entry's RecordId */
		if (fk.size == key_len + 8 && keystring_read_recid(fk.data, fk.size) != (int64_t)recid) {
			cur->reset(cur);
			return dup_key_error(c, ix, doc, key, key_len, err);
		}
		wret = cur->next(cur);
	}
	if (wret != 0 && wret != WT_NOTFOUND)
		return storage_wt_err(wret, "unique check", err);
	v.data = "";
	v.size = 0;
	cur->set_key(cur, &k);
	cur->set_value(cur, &v);
	wret = cur->insert(cur);
	if (wret == 0) {
		cur->set_key(cur, &k);
		wret = cur->remove(cur);
	}
	cur->reset(cur);
	return wret == 0 ? 0 : storage_wt_err(wret, "unique check", err);
}

/* Add, remove, or rewrite the type bits of (IX_RETYPE: same key, values of
 * other types, as 1 -> 1.0) the entry key -> recid in ix. */
static int
index_entry(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix,
            const uint8_t *key, size_t key_len, const uint8_t *tb, size_t tb_len, recid_t recid,
            ix_op_t op, const bson_t *doc, terr_t *err)
{
	WT_CURSOR *cur = NULL;
	WT_ITEM k, v;
	int ret = 0, wret;
	bool add = op == IX_ADD;

	v.data = tb_len > 0 ? tb : (const void *)"";
	v.size = ix->typebits ? tb_len : 0;
	/* raw cursors but on a clustered table: keys and type bits are `u`
	 * columns (their bytes), a unique entry's `qu` value the packed
	 * RecordId then the type bits, packed here (WiredTiger's format-string
	 * packer was ~650 instructions per unique entry) */
	if (ix->clustered)
		ERR(storage_session_cursor(s, ix->ident, &cur, err));
	else
		ERR(storage_session_cursor_raw(s, ix->ident, &cur, err));
	if (storage_index_key_only(ix)) {
		k.data = key;
		k.size = key_len;
		cur->set_key(cur, &k);
		if (op == IX_REMOVE) {
			wret = cur->remove(cur);
		} else if (ix->clustered && !add && ix->clustered_u && s->dmg != NULL) {
			/* the document's changed bytes only (past the RecordId) */
			wret = doc_modify(s, cur, STORAGE_CLUSTERED_PREFIX, doc, s->dmg);
		} else if (ix->clustered) {
			/* the clustered table holds the document itself */
			if (ix->clustered_u) {
				clustered_value_set(s, cur, recid, doc);
			} else {
				v.data = bson_get_data(doc);
				v.size = doc->len;
				cur->set_value(cur, (int64_t)recid, &v);
			}
			wret = add ? cur->insert(cur) : cur->update(cur);
		} else {
			size_t n;
			if (s->kbuf_cap < STORAGE_VINT_MAX + v.size) {
				s->kbuf_cap = (STORAGE_VINT_MAX + v.size) * 2;
				s->kbuf = bson_realloc(s->kbuf, s->kbuf_cap);
			}
			n = storage_vint_pack(s->kbuf, (int64_t)recid);
			if (v.size > 0)
				memcpy(s->kbuf + n, v.data, v.size);
			v.data = s->kbuf;
			v.size = n + v.size;
			cur->set_value(cur, &v);
			wret = add ? cur->insert(cur) : cur->update(cur);
		}
	} else {
		/* Non-unique: the key ends with the RecordId, the value is empty. */
		if (add && storage_index_dup_check(ix))
			ERR(dup_check(s, c, ix, cur, key, key_len, recid, doc, err));
		keystring_reset(&s->ks2);
		keystring_append_recid(&s->ks2, recid);
		if (s->kbuf_cap < key_len + s->ks2.len) {
			s->kbuf_cap = (key_len + s->ks2.len) * 2;
			s->kbuf = bson_realloc(s->kbuf, s->kbuf_cap);
		}
		memcpy(s->kbuf, key, key_len);
		memcpy(s->kbuf + key_len, s->ks2.buf, s->ks2.len);
		k.data = s->kbuf;
		k.size = key_len + s->ks2.len;
		cur->set_key(cur, &k);
		if (op == IX_REMOVE) {
			wret = cur->remove(cur);
		} else {
			cur->set_value(cur, &v);
			wret = add ? cur->insert(cur) : cur->update(cur);
		}
	}
	if (wret == WT_DUPLICATE_KEY) {
		ret = dup_key_error(c, ix, doc, key, key_len, err);
		goto err;
	}
	if (wret == WT_NOTFOUND && !add) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "index %s of %s has no entry for a stored document",
		    ix->name, c->ns);
		goto err;
	}
	if (wret != 0) {
		ret = storage_wt_err(wret, "write index", err);
		goto err;
	}
	/* a successful insert leaves the cursor unpositioned (WiredTiger
	 * releases its page before returning): no reset (~100 instructions
	 * per entry) */
	if (add)
		cur = NULL;
err:
	storage_session_cursor_done(cur);
	return ret;
}

/*
 * Keep every index of c in step with one document change: old_doc's keys
 * removed (old_doc NULL for an insert), new_doc's keys added (new_doc NULL
 * for a delete); unchanged keys are left alone.
 */
static int
index_apply(storage_session_t *s, const storage_coll_t *c, recid_t recid,
            const bson_t *old_doc, const bson_t *new_doc, terr_t *err)
{
	keyset_t *oldk = &s->oldk, *newk = &s->newk;   /* session scratch: no allocation per write */
	int ret = 0;

	for (int i = 0; i < c->nindexes; i++) {
		const storage_index_t *ix = &c->indexes[i];
		int a = 0, b = 0;

		uint32_t mk[STORAGE_INDEX_MAX_FIELDS];
		bool mk_any = false;

		if (old_doc != NULL && new_doc != NULL && ix->is_id && !ix->clustered) {
			/* an update that keeps _id byte for byte (every update but a
			 * replacement of _id's type): its key is the same, nothing to
			 * compute or change */
			bson_iter_t ia, ib;
			if (doc_id(old_doc, &ia) && doc_id(new_doc, &ib) && ia.next_off - ia.off == ib.next_off - ib.off &&
			    memcmp(ia.raw + ia.off, ib.raw + ib.off, ia.next_off - ia.off) == 0)
				continue;
		}
		if (old_doc != NULL && new_doc != NULL && ix->clustered && same_id(old_doc, new_doc)) {
			/* the clustered entry keeps its key: rewrite (or modify)
			 * the document under it, no key sets to build and merge */
			bson_iter_t it;
			keystring_reset(&s->ks);
			if (doc_id(new_doc, &it)) {
				keystring_append_value_coll(&s->ks, bson_iter_value(&it), false, ix->collation);
				ERR(index_entry(s, c, ix, s->ks.buf, s->ks.len, NULL, 0, recid, IX_RETYPE, new_doc, err));
				continue;
			}
		}
		if (old_doc == NULL && ix->is_id) {
			/* an insert's _id_ entry: one key, nothing to merge */
			bson_iter_t it;
			keystring_reset(&s->ks);
			keystring_reset(&s->tb);
			if (doc_id(new_doc, &it)) {
				keystring_append_value_tb_coll(&s->ks, &s->tb, bson_iter_value(&it), false, ix->collation);
				ERR(index_entry(s, c, ix, s->ks.buf, s->ks.len, s->tb.buf, s->tb.len, recid, IX_ADD,
				    new_doc, err));
				continue;
			}
		}
		keyset_clear(oldk);
		keyset_clear(newk);
		if (old_doc != NULL)
			ERR(index_doc_keys(s->st, ix, old_doc, &s->ks, &s->tb, oldk, NULL, err));
		if (new_doc != NULL) {
			memset(mk, 0, sizeof(mk));
			ERR(index_doc_keys(s->st, ix, new_doc, &s->ks, &s->tb, newk, ix->is_id ? NULL : mk, err));
			for (int f = 0; f < STORAGE_INDEX_MAX_FIELDS && !ix->is_id; f++)
				if (mk[f] & ~(ix->mkpaths_known ? ix->mkpaths[f] : ~0u))
					mk_any = true;
		}
		if ((newk->n > 1 && !ix->multikey) || mk_any)
			ERR(storage_index_mark_multikey(s->st, c->db, c->name, c->ident, ix->name, mk, err));
		/* Both sets are sorted: one merge removes what only the old
		 * document has and adds what only the new one has. */
		while (a < oldk->n || b < newk->n) {
			size_t alen = 0, blen = 0;
			const uint8_t *ka = a < oldk->n ? keyset_key(oldk, a, &alen) : NULL;
			const uint8_t *kb = b < newk->n ? keyset_key(newk, b, &blen) : NULL;
			int cmp = ka == NULL ? 1 : kb == NULL ? -1 : bytes_cmp(ka, alen, kb, blen);

			size_t ta = 0, tbl = 0;
			const uint8_t *tba = ka != NULL ? keyset_tb(oldk, a, &ta) : NULL;
			const uint8_t *tbb = kb != NULL ? keyset_tb(newk, b, &tbl) : NULL;

			if (cmp < 0)
				ERR(index_entry(s, c, ix, ka, alen, tba, ta, recid, IX_REMOVE, old_doc, err));
			else if (cmp > 0)
				ERR(index_entry(s, c, ix, kb, blen, tbb, tbl, recid, IX_ADD, new_doc, err));
			else if (ix->clustered || (ix->typebits && (ta != tbl || memcmp(tba, tbb, ta) != 0)))
				ERR(index_entry(s, c, ix, kb, blen, tbb, tbl, recid, IX_RETYPE, new_doc, err));
			a += cmp <= 0;
			b += cmp >= 0;
		}
	}
err:
	return ret;
}

/* ---- documents ------------------------------------------------------------ */

static int record_read(storage_session_t *s, const storage_coll_t *c, recid_t recid, bson_t *doc, terr_t *err);

/*
 * Start a write to c inside the open transaction: hold the table's gate
 * (index sets cannot change until the transaction ends) and pick the
 * descriptor whose indexes to maintain: c, or the current one when an index
 * was created or dropped since c was published.  *ixc is c or a new
 * reference the caller releases.
 */
static int
write_begin(storage_session_t *s, storage_coll_t *c, storage_coll_t **ixc, terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);

	*ixc = c;
	RET(storage_txn_gate(s, rt, err));
	if (atomic_load(&rt->capped))
		RET(storage_txn_capped_lock(s, rt, err));
	if (((coll_impl_t *)c->impl)->ixgen != atomic_load(&rt->ixgen)) {
		*ixc = storage_coll_by_ident(s->st, c->ident);
		if (*ixc == NULL) {
			*ixc = c;
			return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "collection dropped");
		}
	}
	return indexes_supported(s, *ixc, err);
}

/* After write_begin: a descriptor published before the collection's options
 * last changed validated doc with options that are gone; check it again
 * with the current ones (storage_set_write_check). */
static int
write_recheck(storage_session_t *s, storage_coll_t *c, const bson_t *new_doc, const bson_t *old_doc,
              terr_t *err)
{
	storage_coll_t *now;
	int ret;

	if (((coll_impl_t *)c->impl)->optgen == atomic_load(&storage_coll_rt(c)->optgen) ||
	    s->st->write_check == NULL)
		return 0;
	if ((now = storage_coll_by_ident(s->st, c->ident)) == NULL)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "collection dropped");
	ret = s->st->write_check(now, new_doc, old_doc, err);
	storage_coll_release(now);
	return ret;
}

static void
write_end(storage_coll_t *c, storage_coll_t *ixc)
{
	if (ixc != c)
		storage_coll_release(ixc);
}

/* The size limit a capped table enforces (INT64_MAX: none). */
static int64_t
capped_size_limit(coll_rt_t *rt)
{
	int64_t size = atomic_load(&rt->cap_size);

	return size > 0 ? size : INT64_MAX;
}

/*
 * After an insert into a capped table (its capped lock held, so no other
 * transaction changes its count or size until this one ends): delete the
 * oldest documents, index entries included, while the table is past either
 * limit, never the document just inserted (keep).
 */
static int
capped_trim(storage_session_t *s, storage_coll_t *c, storage_coll_t *ixc, recid_t keep, terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);
	int64_t max = atomic_load(&rt->cap_max), limit = capped_size_limit(rt);
	int64_t dcount, dsize, count, size;
	WT_CURSOR *cur = NULL;
	int ret = 0, wret;

	storage_txn_pending(s, rt, &dcount, &dsize);
	count = atomic_load(&rt->count) + dcount;
	size = atomic_load(&rt->data_size) + dsize;
	while ((max > 0 && count > max) || size > limit) {
		int64_t rid;
		WT_ITEM v;
		bson_t *old;

		ERR(storage_session_cursor(s, c->ident, &cur, err));
		/* the oldest document this transaction still sees */
		if ((wret = cur->next(cur)) != 0 || (wret = cur->get_key(cur, &rid)) != 0 ||
		    (wret = cur->get_value(cur, &v)) != 0) {
			ret = wret == WT_NOTFOUND ? 0 : storage_wt_err(wret, "capped delete", err);
			goto err;
		}
		if (rid == keep)
			break;
		old = bson_new_from_data(v.data, v.size);
		storage_session_cursor_done(cur);
		cur = NULL;
		if (old == NULL) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt record %" PRId64 " in %s", rid, c->ns);
			goto err;
		}
		ret = index_apply(s, ixc, rid, old, NULL, err);
		if (ret == 0) {
			ret = storage_session_cursor(s, c->ident, &cur, err);
			if (ret == 0) {
				cur->set_key(cur, rid);
				if ((wret = cur->remove(cur)) != 0)
					ret = storage_wt_err(wret, "capped delete", err);
				storage_session_cursor_done(cur);
				cur = NULL;
			}
		}
		if (ret == 0)
			ret = storage_txn_delta(s, rt, -1, -(int64_t)old->len, err);
		count--;
		size -= old->len;
		bson_destroy(old);
		if (ret != 0)
			goto err;
	}
err:
	storage_session_cursor_done(cur);
	return ret;
}

static bool
has_id_index(const storage_coll_t *c)
{
	for (int i = 0; i < c->nindexes; i++)
		if (c->indexes[i].is_id)
			return true;
	return false;
}

/* A clustered collection: doc's key in the clustered table (its _id's
 * KeyString under the collection's collation), in s->ks. */
static void
clustered_key(storage_session_t *s, const storage_coll_t *c, const bson_t *doc)
{
	bson_iter_t it;
	bson_value_t null_v = {.value_type = BSON_TYPE_NULL};

	keystring_reset(&s->ks);
	if (doc_id(doc, &it) || bson_iter_init_find(&it, doc, "_id"))
		keystring_append_value_coll(&s->ks, bson_iter_value(&it), false, c->clustered_ix->collation);
	else
		keystring_append_value_coll(&s->ks, &null_v, false, NULL);
}

/* Whether a and b hold byte-identical _id values (then their clustered
 * keys are equal, whatever the collation). */
static bool
same_id(const bson_t *a, const bson_t *b)
{
	bson_iter_t ia, ib;
	uint32_t la, lb;

	if (!bson_iter_init_find(&ia, a, "_id") || !bson_iter_init_find(&ib, b, "_id") ||
	    bson_iter_type(&ia) != bson_iter_type(&ib))
		return false;
	/* the value's bytes: from its first data byte to the next element */
	la = ia.next_off - ia.d1;
	lb = ib.next_off - ib.d1;
	return la == lb && memcmp(ia.raw + ia.d1, ib.raw + ib.d1, la) == 0;
}

/* Insert doc at RecordId at (0: the next one of the collection's counter). */
static int
doc_insert(storage_session_t *s, storage_coll_t *c, const bson_t *doc, recid_t at, recid_t *recid,
           terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);
	storage_coll_t *ixc = c;
	WT_CURSOR *cur = NULL;
	WT_ITEM k, v;
	uint8_t kb[STORAGE_VINT_MAX];
	bson_iter_t it;
	recid_t id;
	int ret = 0, wret;

	RET(storage_require_txn(s, err));
	/* a record at a chosen RecordId (an oplog entry) may be as large as
	 * mongod's BSONObjMaxInternalSize, so the entry of a 16 MB document fits */
	if (doc->len > STORAGE_MAX_BSON + (at != 0 ? STORAGE_INTERNAL_SLACK : 0))
		return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		    "object to insert too large. size in bytes: %u, max size: %d", doc->len, STORAGE_MAX_BSON);
	if (!doc_id(doc, &it) && (at == 0 || has_id_index(c)))
		return terr_set(err, TERR_BAD_VALUE, "document to insert must have _id as its first field");
	ERR(write_begin(s, c, &ixc, err));
	ERR(write_recheck(s, c, doc, NULL, err));
	if (at != 0) {
		long long seen = atomic_load(&rt->next_recid);
		id = at;
		while (seen < at && !atomic_compare_exchange_weak(&rt->next_recid, &seen, (long long)at))
			;
	} else {
		id = atomic_fetch_add(&rt->next_recid, 1) + 1;
	}
	ERR(index_apply(s, ixc, id, NULL, doc, err));
	ERR(storage_session_cursor_raw(s, c->ident, &cur, err));   /* key packed here */
	if (c->clustered_ix != NULL) {
		/* the record table of a clustered collection maps the RecordId
		 * to the document's key in the clustered table */
		clustered_key(s, c, doc);
		v.data = s->ks.buf;
		v.size = s->ks.len;
	} else {
		v.data = bson_get_data(doc);
		v.size = doc->len;
	}
	k.data = kb;
	k.size = storage_vint_pack(kb, (int64_t)id);
	cur->set_key(cur, &k);
	cur->set_value(cur, &v);
	if ((wret = cur->insert(cur)) != 0) {
		ret = wret == WT_DUPLICATE_KEY
		    ? terr_set(err, TERR_BAD_VALUE, "RecordId %" PRId64 " already exists in %s", (int64_t)id, c->ns)
		    : storage_wt_err(wret, "insert record", err);
		goto err;
	}
	cur = NULL;   /* unpositioned after a successful insert: no reset (index_entry) */
	ERR(storage_txn_delta(s, rt, 1, doc->len, err));
	storage_txn_inserted(s, rt);
	if (atomic_load(&rt->capped)) {
		storage_session_cursor_done(cur);
		cur = NULL;
		ERR(capped_trim(s, c, ixc, id, err));
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_INSERT, .db = c->db, .coll = c, .recid = id, .doc = doc};
		ERR(storage_observe(s, &op, err));
	}
	if (recid != NULL)
		*recid = id;
err:
	storage_session_cursor_done(cur);
	write_end(c, ixc);
	return storage_txn_fail(s, ret);
}

int
storage_doc_insert(storage_session_t *s, storage_coll_t *c, const bson_t *doc,
                   recid_t *recid, terr_t *err)
{
	return doc_insert(s, c, doc, 0, recid, err);
}

int
storage_doc_insert_at(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *doc,
                      terr_t *err)
{
	if (recid <= 0)
		return storage_txn_fail(s, terr_set(err, TERR_BAD_VALUE, "RecordId %" PRId64 " is not positive",
		    (int64_t)recid));
	return doc_insert(s, c, doc, recid, NULL, err);
}

/* storage_doc_update, the document written through WT_CURSOR::modify with
 * dm (old_doc -> new_doc) when dm is given and pays off. */
static int
doc_update(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *old_doc,
           const bson_t *new_doc, const bdamages_t *dm, terr_t *err)
{
	storage_coll_t *ixc = c;
	WT_CURSOR *cur = NULL;
	WT_ITEM v;
	bson_iter_t it;
	int ret = 0, wret;

	RET(storage_require_txn(s, err));
	if (new_doc->len > STORAGE_MAX_BSON)
		return terr_set(err, STORAGE_CODE_UPDATE_TOO_LARGE,
		    "Resulting document after update is larger than %d", STORAGE_MAX_BSON);
	if (!doc_id(new_doc, &it))
		return terr_set(err, TERR_BAD_VALUE, "document must have _id as its first field");
	ERR(write_begin(s, c, &ixc, err));
	ERR(write_recheck(s, c, new_doc, old_doc, err));
	if (!damages_pay(dm, new_doc))
		dm = NULL;
	s->dmg = dm;   /* the clustered table's write (index_apply) */
	ret = index_apply(s, ixc, recid, old_doc, new_doc, err);
	s->dmg = NULL;
	if (ret != 0)
		goto err;
	if (c->clustered_ix != NULL && same_id(old_doc, new_doc))
		goto written;   /* the record map holds the clustered key, unchanged */
	ERR(storage_session_cursor(s, c->ident, &cur, err));
	cur->set_key(cur, (int64_t)recid);
	if (c->clustered_ix != NULL) {
		clustered_key(s, c, new_doc);
		v.data = s->ks.buf;
		v.size = s->ks.len;
		cur->set_value(cur, &v);
		wret = cur->update(cur);
	} else if (dm != NULL) {
		wret = doc_modify(s, cur, 0, new_doc, dm);
	} else {
		v.data = bson_get_data(new_doc);
		v.size = new_doc->len;
		cur->set_value(cur, &v);
		wret = cur->update(cur);
	}
	if (wret != 0) {
		ret = wret == WT_NOTFOUND
		    ? terr_set(err, TERR_INTERNAL_ERROR, "update of a missing record in %s", c->ns)
		    : storage_wt_err(wret, "update record", err);
		goto err;
	}
	storage_session_cursor_done(cur);
	cur = NULL;
written:
	ERR(storage_txn_delta(s, storage_coll_rt(c), 0, (int64_t)new_doc->len - (int64_t)old_doc->len, err));
	{
		storage_op_t op = {.kind = STORAGE_OP_UPDATE, .db = c->db, .coll = c, .recid = recid,
		    .doc = new_doc, .old_doc = old_doc};
		ERR(storage_observe(s, &op, err));
	}
err:
	storage_session_cursor_done(cur);
	write_end(c, ixc);
	return storage_txn_fail(s, ret);
}

int
storage_doc_update(storage_session_t *s, storage_coll_t *c, recid_t recid,
                   const bson_t *old_doc, const bson_t *new_doc, terr_t *err)
{
	return doc_update(s, c, recid, old_doc, new_doc, NULL, err);
}

int
storage_doc_update_damages(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *old_doc,
                           const bson_t *new_doc, const bdamages_t *dm, terr_t *err)
{
	return doc_update(s, c, recid, old_doc, new_doc, dm, err);
}

int
storage_doc_update_existing(storage_session_t *s, storage_coll_t *c, recid_t recid, const bson_t *old_hint,
                            const bson_t *new_doc, terr_t *err)
{
	storage_coll_t *ixc = c;
	WT_CURSOR *cur = NULL;
	WT_ITEM v;
	bson_iter_t it;
	int ret = 0, wret;

	RET(storage_require_txn(s, err));
	if (new_doc->len > STORAGE_MAX_BSON || !doc_id(new_doc, &it) || c->clustered_ix != NULL ||
	    !same_id(old_hint, new_doc))
		return 2;
	ERR(write_begin(s, c, &ixc, err));
	if (ixc->nindexes != 1 || !ixc->indexes[0].is_id) {
		ret = 2;   /* other indexes would need the true old document */
		goto err;
	}
	ERR(write_recheck(s, c, new_doc, old_hint, err));
	ERR(storage_session_cursor(s, c->ident, &cur, err));
	v.data = bson_get_data(new_doc);
	v.size = new_doc->len;
	cur->set_key(cur, (int64_t)recid);
	cur->set_value(cur, &v);
	if ((wret = cur->update(cur)) != 0) {
		/* not there (overwrite=false): nothing written, the transaction
		 * stays good */
		ret = wret == WT_NOTFOUND ? 1 : storage_wt_err(wret, "update record", err);
		goto err;
	}
	storage_session_cursor_done(cur);
	cur = NULL;
	ERR(storage_txn_delta(s, storage_coll_rt(c), 0, (int64_t)new_doc->len - (int64_t)old_hint->len, err));
	{
		storage_op_t op = {.kind = STORAGE_OP_UPDATE, .db = c->db, .coll = c, .recid = recid,
		    .doc = new_doc, .old_doc = old_hint};
		ERR(storage_observe(s, &op, err));
	}
err:
	storage_session_cursor_done(cur);
	write_end(c, ixc);
	return ret < 0 ? storage_txn_fail(s, ret) : ret;
}

int
storage_doc_delete(storage_session_t *s, storage_coll_t *c, recid_t recid,
                   const bson_t *old_doc, terr_t *err)
{
	storage_coll_t *ixc = c;
	WT_CURSOR *cur = NULL;
	WT_ITEM k;
	uint8_t kb[STORAGE_VINT_MAX];
	int ret = 0, wret;

	RET(storage_require_txn(s, err));
	ERR(write_begin(s, c, &ixc, err));
	ERR(index_apply(s, ixc, recid, old_doc, NULL, err));
	ERR(storage_session_cursor_raw(s, c->ident, &cur, err));
	k.data = kb;
	k.size = storage_vint_pack(kb, (int64_t)recid);
	cur->set_key(cur, &k);
	if ((wret = cur->remove(cur)) != 0) {
		ret = wret == WT_NOTFOUND
		    ? terr_set(err, TERR_INTERNAL_ERROR, "delete of a missing record in %s", c->ns)
		    : storage_wt_err(wret, "delete record", err);
		goto err;
	}
	storage_session_cursor_done(cur);
	cur = NULL;
	ERR(storage_txn_delta(s, storage_coll_rt(c), -1, -(int64_t)old_doc->len, err));
	{
		storage_op_t op = {.kind = STORAGE_OP_DELETE, .db = c->db, .coll = c, .recid = recid,
		    .old_doc = old_doc};
		ERR(storage_observe(s, &op, err));
	}
err:
	storage_session_cursor_done(cur);
	write_end(c, ixc);
	return storage_txn_fail(s, ret);
}

int
storage_doc_delete_upto(storage_session_t *s, storage_coll_t *c, recid_t upto, int64_t max_records,
                        int64_t *removed, int64_t *bytes, terr_t *err)
{
	storage_coll_t *ixc = c;
	WT_CURSOR *cur = NULL;
	int64_t n = 0, nbytes = 0;
	int ret = 0, wret;

	if (removed != NULL)
		*removed = 0;
	if (bytes != NULL)
		*bytes = 0;
	RET(storage_require_txn(s, err));
	ERR(write_begin(s, c, &ixc, err));
	/* a cursor of its own: index_apply uses the session's cached ones */
	if ((wret = s->ws->open_cursor(s->ws, c->ident, NULL, NULL, &cur)) != 0) {
		ret = storage_wt_err(wret, "open cursor", err);
		goto err;
	}
	while ((max_records == 0 || n < max_records) && (wret = cur->next(cur)) == 0) {
		int64_t key;
		WT_ITEM v;
		bson_t old;

		if ((wret = cur->get_key(cur, &key)) != 0 || (wret = cur->get_value(cur, &v)) != 0)
			break;
		if (key > upto)
			break;
		if (!bson_init_static(&old, v.data, v.size)) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt record %" PRId64 " in %s", key, c->ns);
			goto err;
		}
		ERR(index_apply(s, ixc, key, &old, NULL, err));
		nbytes += v.size;
		if ((wret = cur->remove(cur)) != 0)
			break;
		n++;
	}
	if (wret != 0 && wret != WT_NOTFOUND) {
		ret = storage_wt_err(wret, "delete records", err);
		goto err;
	}
	ERR(storage_txn_delta(s, storage_coll_rt(c), -n, -nbytes, err));
	if (removed != NULL)
		*removed = n;
	if (bytes != NULL)
		*bytes = nbytes;
err:
	if (cur != NULL)
		cur->close(cur);
	write_end(c, ixc);
	return storage_txn_fail(s, ret);
}

#define BUILD_BATCH 1000
/* Key bytes a sorted build keeps in memory (split between its parts); a
 * larger build inserts entry by entry instead. */
#define BUILD_SORT_LIMIT ((size_t)512 << 20)
/* Collections at least this large are scanned by two threads (two halves
 * of the RecordId range, each generating and sorting its keys). */
#define BUILD_PARALLEL_MIN 4096

/* One index entry of a sorted build: the WiredTiger key (a non-unique
 * index's ends with the RecordId) then the type bits, at data[off]. */
typedef struct build_ent {
	size_t off;
	uint32_t klen, tblen;
	recid_t recid;
} build_ent_t;

typedef struct build {
	uint8_t *data;
	size_t len, cap, limit;
	build_ent_t *e;
	size_t n, ncap;
} build_t;

static int
build_ent_cmp(const void *a, const void *b, void *arg)
{
	const build_t *bd = arg;
	const build_ent_t *x = a, *y = b;

	return bytes_cmp(bd->data + x->off, x->klen, bd->data + y->off, y->klen);
}

/* Append one entry; false when the build outgrew its limit. */
static bool
build_add(build_t *bd, const uint8_t *key, size_t klen, const uint8_t *rid, size_t rlen, const uint8_t *tb,
          size_t tblen, recid_t recid)
{
	size_t need = klen + rlen + tblen;

	if (bd->len + need > bd->limit)
		return false;
	if (bd->len + need > bd->cap) {
		bd->cap = (bd->len + need) * 2 + (1 << 16);
		if (bd->cap > bd->limit)
			bd->cap = bd->limit;
		bd->data = bson_realloc(bd->data, bd->cap);
	}
	if (bd->n == bd->ncap) {
		bd->ncap = bd->ncap ? bd->ncap * 2 : 4096;
		bd->e = bson_realloc(bd->e, bd->ncap * sizeof(*bd->e));
	}
	memcpy(bd->data + bd->len, key, klen);
	if (rlen > 0)
		memcpy(bd->data + bd->len + klen, rid, rlen);
	if (tblen > 0)
		memcpy(bd->data + bd->len + klen + rlen, tb, tblen);
	bd->e[bd->n].off = bd->len;
	bd->e[bd->n].klen = (uint32_t)(klen + rlen);
	bd->e[bd->n].tblen = (uint32_t)tblen;
	bd->e[bd->n].recid = recid;
	bd->n++;
	bd->len += need;
	return true;
}

/* The old way, for builds too large to sort in memory: insert each
 * document's entries, committing every BUILD_BATCH documents. */
static int
build_incremental(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix, bool *multikey,
                  uint32_t *masks, terr_t *err)
{
	storage_cursor_t *cur = NULL;
	keyset_t keys = {0};
	recid_t rid;
	bson_t doc;
	int ret = 0, rc, n = 0;

	ERR(storage_scan_open(s, (storage_coll_t *)c, false, &cur, err));
	ERR(storage_txn_begin(s, err));
	while ((rc = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		ERR(tm_interrupt_check(err));
		ERR(index_doc_keys(s->st, ix, &doc, &s->ks, &s->tb, &keys, masks, err));
		if (keys.n > 1)
			*multikey = true;
		for (int i = 0; i < keys.n; i++) {
			size_t len, tblen;
			const uint8_t *k = keyset_key(&keys, i, &len);
			const uint8_t *tb = keyset_tb(&keys, i, &tblen);
			ERR(index_entry(s, c, ix, k, len, tb, tblen, rid, IX_ADD, &doc, err));
		}
		if (++n % BUILD_BATCH == 0) {
			ERR(storage_txn_commit(s, false, err));
			ERR(storage_txn_begin(s, err));
		}
	}
	if (rc < 0) {
		ret = -1;
		goto err;
	}
	ERR(storage_txn_commit(s, false, err));
err:
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	storage_cursor_close(cur);
	keyset_free(&keys);
	return ret;
}

/* One part of a sorted build: the documents with RecordIds in (from, to],
 * their keys generated and sorted, on a session of its own. */
typedef struct build_part {
	storage_session_t *s;
	const storage_coll_t *c;
	const storage_index_t *ix;
	recid_t from, to;
	build_t bd;
	uint32_t masks[STORAGE_INDEX_MAX_FIELDS];
	bool multikey, fits;
	int rc;
	terr_t err;
	tm_opctx_t *op;          /* the operation building (maxTimeMS / killOp) */
} build_part_t;

static void *
build_part_run(void *arg)
{
	build_part_t *bp = arg;
	tm_opctx_t *outer;
	storage_session_t *s = bp->s;
	terr_t *err = &bp->err;
	WT_CURSOR *wc = NULL, *idc = NULL;
	keyset_t keys = {0};
	WT_ITEM v;
	bson_t doc;
	int ret = 0, wret, exact;

	bp->fits = true;
	outer = tm_opctx_current();
	tm_opctx_adopt(bp->op);
	ERR(storage_txn_begin(s, err));
	if ((wret = s->ws->open_cursor(s->ws, bp->c->ident, NULL, NULL, &wc)) != 0) {
		ret = storage_wt_err(wret, "scan for an index build", err);
		goto err;
	}
	wc->set_key(wc, (int64_t)bp->from + 1);
	wret = wc->search_near(wc, &exact);
	if (wret == 0 && exact < 0)
		wret = wc->next(wc);
	for (; wret == 0 && bp->fits; wret = wc->next(wc)) {
		int64_t rid;
		if ((wret = wc->get_key(wc, &rid)) != 0 || (wret = wc->get_value(wc, &v)) != 0)
			break;
		if (rid > bp->to)
			break;
		ERR(tm_interrupt_check(err));
		if (bp->c->clustered_ix != NULL) {
			/* the record table holds the key: the document is in
			 * the clustered table */
			int64_t crid;
			if (idc == NULL && (wret = s->ws->open_cursor(s->ws, bp->c->clustered_ix->ident, NULL, NULL,
			    &idc)) != 0)
				break;
			idc->set_key(idc, &v);
			if ((wret = idc->search(idc)) != 0 || (wret = storage_clustered_value(idc, bp->c->clustered_ix, &crid, &v)) != 0) {
				ret = storage_wt_err(wret == WT_NOTFOUND ? EINVAL : wret, "clustered record for an index build",
				    err);
				goto err;
			}
		}
		if (!bson_init_static(&doc, v.data, v.size)) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt record %" PRId64 " in %s", rid, bp->c->ns);
			goto err;
		}
		ERR(index_doc_keys(s->st, bp->ix, &doc, &s->ks, &s->tb, &keys, bp->masks, err));
		if (keys.n > 1)
			bp->multikey = true;
		keystring_reset(&s->ks2);
		if (!storage_index_key_only(bp->ix))
			keystring_append_recid(&s->ks2, rid);
		for (int i = 0; i < keys.n && bp->fits; i++) {
			size_t len, tblen;
			const uint8_t *k = keyset_key(&keys, i, &len);
			const uint8_t *tb = keyset_tb(&keys, i, &tblen);
			bp->fits = build_add(&bp->bd, k, len, s->ks2.buf, s->ks2.len, tb, tblen, rid);
		}
	}
	if (wret != 0 && wret != WT_NOTFOUND) {
		ret = storage_wt_err(wret, "scan for an index build", err);
		goto err;
	}
	if (bp->fits && bp->bd.n > 1)
		qsort_r(bp->bd.e, bp->bd.n, sizeof(*bp->bd.e), build_ent_cmp, &bp->bd);
err:
	if (wc != NULL)
		wc->close(wc);
	if (idc != NULL)
		idc->close(idc);
	if (storage_txn_active(s))
		storage_txn_rollback(s);    /* read only */
	keyset_free(&keys);
	bp->rc = ret;
	tm_opctx_adopt(outer);     /* the owner's thread keeps its operation */
	return NULL;
}

/* Order of entry a of part pa and entry b of part pb. */
static int
part_cmp(const build_part_t *pa, const build_ent_t *a, const build_part_t *pb, const build_ent_t *b)
{
	return bytes_cmp(pa->bd.data + a->off, a->klen, pb->bd.data + b->off, b->klen);
}

/*
 * Write the parts' sorted entries, merged, into the new, empty table: a
 * bulk cursor (pages written directly, the table checkpointed when it
 * closes), or, should WiredTiger refuse one, ordinary inserts in key order.
 * A unique index fails with 11000 on two equal neighbours (from different
 * documents) before anything is written past them.
 */
static int
build_load(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix, build_part_t *parts,
           int nparts, terr_t *err)
{
	WT_CURSOR *bc = NULL;
	WT_ITEM k, v;
	size_t pos[2] = {0, 0}, done = 0;
	const build_part_t *prev_p = NULL;
	const build_ent_t *prev = NULL;
	int ret = 0, wret;
	bool bulk;

	wret = s->ws->open_cursor(s->ws, ix->ident, NULL, "bulk", &bc);
	bulk = wret == 0;
	if (!bulk && (wret = s->ws->open_cursor(s->ws, ix->ident, NULL, NULL, &bc)) != 0)
		return storage_wt_err(wret, "open index for a build", err);
	if (!bulk)
		ERR(storage_txn_begin(s, err));
	for (;;) {
		const build_part_t *bp = NULL;
		const build_ent_t *e = NULL;
		int p;
		for (p = 0; p < nparts; p++) {
			const build_ent_t *cand;
			if (pos[p] >= parts[p].bd.n)
				continue;
			cand = &parts[p].bd.e[pos[p]];
			if (e == NULL || part_cmp(&parts[p], cand, bp, e) < 0) {
				bp = &parts[p];
				e = cand;
			}
		}
		if (e == NULL)
			break;
		ERR(tm_interrupt_check(err));
		pos[bp - parts]++;
		if (ix->unique && prev != NULL && prev->recid != e->recid && part_cmp(prev_p, prev, bp, e) == 0) {
			bson_t doc;
			int rc = record_read(s, c, e->recid, &doc, err);
			if (rc == 0)
				ret = dup_key_error(c, ix, &doc, bp->bd.data + e->off, e->klen, err);
			else
				ret = rc < 0 ? -1 : terr_set(err, TERR_DUPLICATE_KEY,
				    "E11000 duplicate key error collection: %s index: %s", c->ns, ix->name);
			goto err;
		}
		prev = e;
		prev_p = bp;
		k.data = bp->bd.data + e->off;
		k.size = e->klen;
		v.data = bp->bd.data + e->off + e->klen;
		v.size = e->tblen;
		bc->set_key(bc, &k);
		if (storage_index_key_only(ix))
			bc->set_value(bc, (int64_t)e->recid, &v);
		else
			bc->set_value(bc, &v);
		if ((wret = bc->insert(bc)) != 0) {
			ret = storage_wt_err(wret, "build index", err);
			goto err;
		}
		if (!bulk && ++done % BUILD_BATCH == 0) {
			ERR(storage_txn_commit(s, false, err));
			ERR(storage_txn_begin(s, err));
		}
	}
	if (!bulk)
		ERR(storage_txn_commit(s, false, err));
	wret = bc->close(bc);
	bc = NULL;
	if (wret != 0)
		ret = storage_wt_err(wret, "build index", err);
err:
	if (bc != NULL)
		bc->close(bc);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return ret;
}

/*
 * A build over existing documents, as mongod's bulk builder: every key
 * generated in one pass over the records (two threads, each on half of the
 * RecordId range, for larger collections), each part sorted, then the
 * parts merged into the table in key order.  Builds with more key bytes
 * than BUILD_SORT_LIMIT, or over an old-format table, insert as they scan.
 */
int
storage_index_build(storage_session_t *s, const storage_coll_t *c, const storage_index_t *ix,
                    bool *multikey, uint32_t *masks, terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);
	build_part_t parts[2];
	pthread_t th;
	bool threaded = false, fits = true;
	int ret = 0, nparts, p;
	recid_t last = (recid_t)atomic_load(&rt->next_recid);

	*multikey = false;
	if (!ix->typebits)
		return build_incremental(s, c, ix, multikey, masks, err);
	nparts = atomic_load(&rt->count) >= BUILD_PARALLEL_MIN ? 2 : 1;
	memset(parts, 0, sizeof(parts));
	for (p = 0; p < nparts; p++) {
		parts[p].c = c;
		parts[p].ix = ix;
		parts[p].bd.limit = BUILD_SORT_LIMIT / (size_t)nparts;
		parts[p].from = p == 0 ? INT64_MIN + 1 : last / 2;
		parts[p].to = p == nparts - 1 ? INT64_MAX : last / 2;
		parts[p].s = s;
		parts[p].op = tm_opctx_current();
	}
	if (nparts == 2) {
		if (storage_session_open(s->st, &parts[1].s, err) != 0)
			return -1;
		threaded = pthread_create(&th, NULL, build_part_run, &parts[1]) == 0;
		if (!threaded)
			build_part_run(&parts[1]);
	}
	build_part_run(&parts[0]);
	if (threaded)
		pthread_join(th, NULL);
	for (p = 0; p < nparts && ret == 0; p++) {
		if (parts[p].rc != 0) {
			ret = -1;
			if (err != NULL)
				terr_move(err, &parts[p].err);
		}
		fits = fits && parts[p].fits;
		*multikey = *multikey || parts[p].multikey;
		for (int f = 0; f < STORAGE_INDEX_MAX_FIELDS; f++)
			masks[f] |= parts[p].masks[f];
	}
	if (ret != 0)
		goto err;
	if (!fits) {
		/* too large to sort here: one by one */
		*multikey = false;
		memset(masks, 0, sizeof(uint32_t) * STORAGE_INDEX_MAX_FIELDS);
		ERR(build_incremental(s, c, ix, multikey, masks, err));
	} else {
		ERR(build_load(s, c, ix, parts, nparts, err));
	}
	for (int f = 0; f < STORAGE_INDEX_MAX_FIELDS; f++)
		if (masks[f] != 0)
			*multikey = true;
err:
	for (p = 0; p < nparts; p++) {
		bson_free(parts[p].bd.data);
		bson_free(parts[p].bd.e);
		terr_clear(&parts[p].err);
		if (parts[p].s != s)
			storage_session_close(parts[p].s);
	}
	return ret;
}

/* Read the record recid into the session buffer; 0, 1 not found, -1.
 * Raw cursors: the RecordId packed here, values taken as their bytes (a
 * clustered entry's `qu`: the RecordId, then the document). */
static int
record_read(storage_session_t *s, const storage_coll_t *c, recid_t recid, bson_t *doc, terr_t *err)
{
	WT_CURSOR *cur = NULL;
	WT_ITEM k, v;
	uint8_t kb[STORAGE_VINT_MAX];
	uint8_t *buf;
	int ret = 0, wret;

	ERR(storage_session_cursor_raw(s, c->ident, &cur, err));
	k.data = kb;
	k.size = storage_vint_pack(kb, (int64_t)recid);
	cur->set_key(cur, &k);
	wret = cur->search(cur);
	if (wret == WT_NOTFOUND) {
		ret = 1;
		goto err;
	}
	if (wret != 0 || (wret = cur->get_value(cur, &v)) != 0) {
		ret = storage_wt_err(wret, "read record", err);
		goto err;
	}
	if (c->clustered_ix != NULL) {
		/* the map gave the key: the document is in the clustered table */
		int64_t rid;
		if (s->kbuf_cap < v.size) {
			s->kbuf_cap = v.size * 2;
			s->kbuf = bson_realloc(s->kbuf, s->kbuf_cap);
		}
		memcpy(s->kbuf, v.data, v.size);
		k.data = s->kbuf;
		k.size = v.size;
		storage_session_cursor_done(cur);
		cur = NULL;
		ERR(storage_session_cursor_raw(s, c->clustered_ix->ident, &cur, err));
		cur->set_key(cur, &k);
		if ((wret = cur->search(cur)) == WT_NOTFOUND) {
			ret = 1;
			goto err;
		}
		if (wret != 0 || (wret = cur->get_value(cur, &v)) != 0) {
			ret = storage_wt_err(wret, "read clustered record", err);
			goto err;
		}
		if (storage_clustered_raw(c->clustered_ix, &v, &rid, &v) != 0) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt clustered record %" PRId64 " in %s", recid,
			    c->ns);
			goto err;
		}
	}
	buf = storage_session_buf(s, v.size);
	memcpy(buf, v.data, v.size);
	if (!bson_init_static(doc, buf, v.size)) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt record %" PRId64 " in %s", recid, c->ns);
		goto err;
	}
err:
	storage_session_cursor_done(cur);
	return ret;
}

int
storage_doc_get(storage_session_t *s, storage_coll_t *c, recid_t recid, bson_t *doc, terr_t *err)
{
	return record_read(s, c, recid, doc, err);
}

int
storage_doc_find_id(storage_session_t *s, storage_coll_t *c, const bson_value_t *id,
                    recid_t *recid, bson_t *doc, terr_t *err)
{
	const storage_index_t *ix = NULL;

	for (int i = 0; i < c->nindexes && ix == NULL; i++)
		if (c->indexes[i].is_id)
			ix = &c->indexes[i];
	uint8_t kb[64];
	size_t kl;

	if (ix == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "collection %s has no _id index", c->ns);
	/* the common _id types (int, ObjectId, a string under the simple
	 * collation) straight into a stack buffer; the rest as any key */
	if ((kl = keystring_encode_point(kb, sizeof kb, id, ix->collation)) != 0)
		return storage_doc_find_key(s, c, kb, kl, recid, doc, err);
	keystring_reset(&s->ks);
	keystring_append_value_coll(&s->ks, id, false, ix->collation);
	return storage_doc_find_key(s, c, s->ks.buf, s->ks.len, recid, doc, err);
}

int
storage_doc_find_key(storage_session_t *s, storage_coll_t *c, const uint8_t *key, size_t key_len,
                     recid_t *recid, bson_t *doc, terr_t *err)
{
	const storage_index_t *ix = NULL;
	WT_CURSOR *cur = NULL;
	WT_ITEM k, v;
	int64_t rid = 0;
	size_t n = 0;
	int ret = 0, wret;

	for (int i = 0; i < c->nindexes && ix == NULL; i++)
		if (c->indexes[i].is_id)
			ix = &c->indexes[i];
	if (ix == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "collection %s has no _id index", c->ns);
	/* raw: the key is the KeyString's bytes; the value's packed RecordId
	 * is read here (then the type bits, or a clustered entry's document) */
	ERR(storage_session_cursor_raw(s, ix->ident, &cur, err));
	k.data = key;
	k.size = key_len;
	cur->set_key(cur, &k);
	wret = cur->search(cur);
	if (wret == WT_NOTFOUND) {
		ret = 1;
		goto err;
	}
	if (wret == 0 && (wret = cur->get_value(cur, &v)) == 0 && !ix->clustered &&
	    (n = storage_vint_unpack(v.data, v.size, &rid)) == 0) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt _id index entry in %s", c->ns);
		goto err;
	}
	if (wret != 0) {
		ret = storage_wt_err(wret, ix->clustered ? "read clustered record" : "read _id index", err);
		goto err;
	}
	if (ix->clustered) {
		/* one lookup: the clustered table holds the document */
		WT_ITEM d;
		uint8_t *buf;

		if (storage_clustered_raw(ix, &v, &rid, &d) != 0) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt clustered record in %s", c->ns);
			goto err;
		}
		buf = storage_session_buf(s, d.size);
		memcpy(buf, d.data, d.size);
		if (!bson_init_static(doc, buf, d.size)) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt record %" PRId64 " in %s", rid, c->ns);
			goto err;
		}
		if (recid != NULL)
			*recid = rid;
		goto err;
	}
	storage_session_cursor_done(cur);
	cur = NULL;
	ret = record_read(s, c, rid, doc, err);
	if (ret == 0 && recid != NULL)
		*recid = rid;
err:
	storage_session_cursor_done(cur);
	return ret;
}

/* ---- stats ----------------------------------------------------------------- */

/* Bytes of the file behind a table ident ("table:x" -> <path>/x.wt). */
static int64_t
ident_file_size(storage_t *st, const char *ident)
{
	const char *name = strchr(ident, ':');
	char *file;
	struct stat sb;
	int64_t size = 0;

	if (st->in_memory)
		return 0;
	file = bson_strdup_printf("%s/%s.wt", st->path, name ? name + 1 : ident);
	if (stat(file, &sb) == 0)
		size = (int64_t)sb.st_size;
	bson_free(file);
	return size;
}

int
storage_index_sizes(storage_t *st, storage_coll_t *c, int64_t *sizes, terr_t *err)
{
	for (int i = 0; i < c->nindexes; i++)
		sizes[i] = ident_file_size(st, c->indexes[i].ident);
	return 0;
}

int
storage_coll_stats(storage_t *st, storage_session_t *s, storage_coll_t *c,
                   int64_t *count, int64_t *data_size, int64_t *storage_size, terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);

	if (count != NULL)
		*count = atomic_load(&rt->count);
	if (data_size != NULL)
		*data_size = atomic_load(&rt->data_size);
	if (storage_size != NULL)
		*storage_size = st->in_memory ? atomic_load(&rt->data_size)
		    : ident_file_size(st, c->ident) +
		      (c->clustered_ix != NULL ? ident_file_size(st, c->clustered_ix->ident) : 0);
	return 0;
}
