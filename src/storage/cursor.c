/*
 * cursor.c -- collection scans (RecordId order, either direction) and index
 * scans (KeyString order between two bounds), with save/restore so a cursor
 * can stop between getMore batches, hold no WiredTiger resources, and
 * continue later on another session.
 *
 * A saved cursor remembers the last RecordId (scan) or last full index key
 * (index scan) it returned; restore repositions with search_near on the new
 * session, so entries deleted in between are skipped and entries inserted
 * after the position are seen.  A restore after the collection (or the
 * index) was dropped fails with 175 QueryPlanKilled.
 *
 * A collection scan asked for documents only does not read each RecordId
 * (a WiredTiger get_key per document): it reads the one it stands on when
 * it must, before its WiredTiger cursor is saved, closed, or reset by a
 * commit or rollback on its session (storage_cursor_settle).
 *
 * Documents are copied into the cursor's buffer, so a view outlives the
 * next save or commit; storage_cursor_next_view skips that copy for a
 * caller that copies each document at once (a find filling its batch).
 *
 * Not here: filtering, sorting, fetching documents for index entries (the
 * caller uses storage_doc_get).
 */
#include "storage/storage_private.h"

#include "common/mem.h"

#include <errno.h>
#include <string.h>

enum cur_state {
	CUR_START,        /* nothing returned yet */
	CUR_POSITIONED,   /* the WT cursor sits on the last returned entry */
	CUR_REPOSITION,   /* restored: seek to the last returned entry first */
	CUR_EOF,
};

/* A byte buffer that starts in its own inline space (keys and bounds are
 * usually short) and moves to the heap when it outgrows it. */
#define BYTES_INLINE 48
typedef struct bytes {
	uint8_t *data;                 /* small, or owned heap memory */
	size_t len, cap;
	uint8_t small[BYTES_INLINE];
} bytes_t;

struct storage_cursor {
	storage_session_t *s;          /* NULL while saved */
	storage_coll_t *c;             /* referenced */
	const storage_index_t *ix;     /* NULL for collection scans; points into c */
	WT_CURSOR *wc;
	bool backward;
	bool tailable;                 /* storage_cursor_set_tailable */
	bool restored;                 /* repositioning after a restore (not after a commit) */
	enum cur_state state;
	uint64_t epoch;                /* s->txn_epoch when last positioned */
	recid_t last_recid;            /* valid unless key_lazy */
	bool key_lazy;                 /* scan: positioned, RecordId not read yet (s->lazy_key) */
	bytes_t last_key;              /* index scans: the last full key returned */
	bytes_t last_tb;               /* ... and its type bits, once read */
	bool tb_read;
	bytes_t doc;                   /* collection scans: the last document returned */
	bytes_t lo, hi, seek;
	bool has_lo, has_hi, lo_incl, hi_incl;
	/* Forward collection scans: the largest RecordId to return (the op
	 * observer's scan_limit, read at open and each restore: the oplog's
	 * visibility point); INT64_MAX = none. */
	recid_t limit;
	bool any_returned;
};

static void
bytes_init(bytes_t *b)
{
	b->data = b->small;
	b->len = 0;
	b->cap = sizeof(b->small);
}

static void
bytes_grow(bytes_t *b, size_t need)
{
	size_t cap = need * 2;

	if (b->data == b->small) {
		uint8_t *p = bson_malloc(cap);
		memcpy(p, b->small, b->len);
		b->data = p;
	} else {
		b->data = bson_realloc(b->data, cap);
	}
	b->cap = cap;
}

static void
bytes_free(bytes_t *b)
{
	if (b->data != b->small)
		bson_free(b->data);
	bytes_init(b);
}

static void
bytes_set(bytes_t *b, const void *data, size_t len)
{
	if (len > b->cap) {
		b->len = 0;
		bytes_grow(b, len);
	}
	if (len > 0)
		memcpy(b->data, data, len);
	b->len = len;
}

static void
bytes_append(bytes_t *b, const void *data, size_t len)
{
	size_t old = b->len;

	if (old + len > b->cap)
		bytes_grow(b, old + len);
	memcpy(b->data + old, data, len);
	b->len = old + len;
}

/* Byte order, shorter first on a common prefix: WiredTiger's order for u keys. */
static int
key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* Read the RecordId a lazy scan stands on.  Should WiredTiger fail to give
 * it, key_lazy stays set and the next repositioning fails with an error
 * instead of guessing a place. */
static void
settle(storage_cursor_t *cur)
{
	int64_t rid;

	if (cur->s != NULL && cur->s->lazy_key == cur)
		cur->s->lazy_key = NULL;
	if (!cur->key_lazy)
		return;
	if (cur->state != CUR_POSITIONED) {
		cur->key_lazy = false;
		return;
	}
	if (cur->wc != NULL && cur->wc->get_key(cur->wc, &rid) == 0) {
		cur->last_recid = rid;
		cur->key_lazy = false;
	}
}

void
storage_cursor_settle(storage_session_t *s)
{
	if (s->lazy_key != NULL)
		settle(s->lazy_key);
}

static int
cursor_attach(storage_cursor_t *cur, storage_session_t *s, terr_t *err)
{
	const char *uri = cur->ix != NULL ? cur->ix->ident : cur->c->ident;
	int ret;

	/* read before the scan reads anything: every record <= the limit has
	 * committed by then, so whatever snapshot the scan reads in sees them */
	cur->limit = INT64_MAX;
	if (cur->ix == NULL && !cur->backward && s->st->obs.scan_limit != NULL)
		cur->limit = s->st->obs.scan_limit(s->st->obs.arg, cur->c);
	/* the session's spare scan cursor, when it is on this table and no
	 * table was dropped since it was put aside */
	if (s->spare_scan != NULL) {
		if (s->cur_epoch != atomic_load_explicit(&s->st->cursor_epoch, memory_order_acquire)) {
			storage_session_cursors_close(s);
		} else if (strcmp(s->spare_scan->uri, uri) == 0) {
			cur->wc = s->spare_scan;
			s->spare_scan = NULL;
			cur->s = s;
			return 0;
		}
	}
	ret = s->ws->open_cursor(s->ws, uri, NULL, NULL, &cur->wc);

	if (ret == ENOENT)
		return terr_set(err, STORAGE_CODE_QUERY_PLAN_KILLED, "collection dropped");
	if (ret != 0)
		return storage_wt_err(ret, "open cursor", err);
	cur->s = s;
	return 0;
}

static storage_cursor_t *
cursor_new(storage_coll_t *c, const storage_index_t *ix, bool backward)
{
	storage_cursor_t *cur = tm_malloc0(sizeof(*cur));

	storage_coll_ref(c);
	cur->c = c;
	cur->ix = ix;
	cur->backward = backward;
	cur->state = CUR_START;
	bytes_init(&cur->last_key);
	bytes_init(&cur->last_tb);
	bytes_init(&cur->doc);
	bytes_init(&cur->lo);
	bytes_init(&cur->hi);
	bytes_init(&cur->seek);
	return cur;
}

int
storage_scan_open(storage_session_t *s, storage_coll_t *c, bool backward,
                  storage_cursor_t **out, terr_t *err)
{
	/* a clustered collection's documents are its clustered table, in _id order */
	storage_cursor_t *cur = cursor_new(c, c->clustered_ix, backward);

	*out = NULL;
	if (cursor_attach(cur, s, err) != 0) {
		storage_cursor_close(cur);
		return -1;
	}
	*out = cur;
	return 0;
}

void
storage_cursor_seek_after(storage_cursor_t *cur, recid_t recid)
{
	if (cur->ix != NULL)
		return;
	if (cur->key_lazy) {
		cur->key_lazy = false;
		if (cur->s != NULL && cur->s->lazy_key == cur)
			cur->s->lazy_key = NULL;
	}
	cur->last_recid = recid;
	cur->state = CUR_REPOSITION;
	cur->any_returned = true;    /* a stop at the scan limit comes back here */
}

void
storage_cursor_seek_after_key(storage_cursor_t *cur, const uint8_t *key, size_t key_len)
{
	if (cur->ix == NULL || !cur->ix->clustered)
		return;
	bytes_set(&cur->last_key, key, key_len);
	cur->state = CUR_REPOSITION;
}

bool
storage_cursor_cluster_key(const storage_cursor_t *cur, const uint8_t **key, size_t *key_len)
{
	if (cur == NULL || cur->ix == NULL || !cur->ix->clustered || cur->state != CUR_POSITIONED)
		return false;
	*key = cur->last_key.data;
	*key_len = cur->last_key.len;
	return true;
}

int
storage_index_scan_open(storage_session_t *s, storage_coll_t *c, const storage_index_t *idx,
                        const uint8_t *lo, size_t lo_len, bool lo_incl,
                        const uint8_t *hi, size_t hi_len, bool hi_incl,
                        bool backward, storage_cursor_t **out, terr_t *err)
{
	storage_cursor_t *cur;
	bool ours = false;

	*out = NULL;
	for (int i = 0; i < c->nindexes; i++)
		ours = ours || idx == &c->indexes[i];
	if (!ours)
		return terr_set(err, TERR_INTERNAL_ERROR, "index does not belong to collection %s", c->ns);
	cur = cursor_new(c, idx, backward);
	if (lo != NULL) {
		cur->has_lo = true;
		cur->lo_incl = lo_incl;
		bytes_set(&cur->lo, lo, lo_len);
	}
	if (hi != NULL) {
		cur->has_hi = true;
		cur->hi_incl = hi_incl;
		bytes_set(&cur->hi, hi, hi_len);
	}
	if (cursor_attach(cur, s, err) != 0) {
		storage_cursor_close(cur);
		return -1;
	}
	*out = cur;
	return 0;
}

static int
wc_move(storage_cursor_t *cur)
{
	return cur->backward ? cur->wc->prev(cur->wc) : cur->wc->next(cur->wc);
}

/* Seek to key (set with set_key by the caller) so the cursor sits on the
 * first entry at or after it in scan direction; strict skips an exact hit. */
static int
wc_seek(storage_cursor_t *cur, bool strict)
{
	int exact = 0, ret;

	if ((ret = cur->wc->search_near(cur->wc, &exact)) != 0)
		return ret;
	if (cur->backward ? (exact > 0 || (strict && exact == 0)) : (exact < 0 || (strict && exact == 0)))
		return wc_move(cur);
	return 0;
}

/* The value part of an index key (without the RecordId of non-unique keys). */
static size_t
key_value_len(const storage_cursor_t *cur, size_t len)
{
	return storage_index_key_only(cur->ix) || len < 8 ? len : len - 8;
}

/* Position an index scan at its first entry. */
static int
index_start(storage_cursor_t *cur)
{
	static const uint8_t ff[9] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	WT_ITEM k;
	bool has = cur->backward ? cur->has_hi : cur->has_lo;
	bool incl = cur->backward ? cur->hi_incl : cur->lo_incl;
	const bytes_t *bound = cur->backward ? &cur->hi : &cur->lo;

	if (!has)
		return wc_move(cur);
	bytes_set(&cur->seek, bound->data, bound->len);
	/* Non-unique keys carry a RecordId after the value: to pass every
	 * entry equal to the bound, seek past bound + the largest suffix. */
	if (!storage_index_key_only(cur->ix) && (cur->backward ? incl : !incl))
		bytes_append(&cur->seek, ff, sizeof(ff));
	k.data = cur->seek.data;
	k.size = cur->seek.len;
	cur->wc->set_key(cur->wc, &k);
	return wc_seek(cur, false);
}

/* -1 before the scan's start bound, 1 past its end bound, 0 inside. */
static int
index_bounds(const storage_cursor_t *cur, const uint8_t *key, size_t len)
{
	size_t vlen = key_value_len(cur, len);
	int c;

	if (cur->has_lo) {
		c = key_cmp(key, vlen, cur->lo.data, cur->lo.len);
		if (c < 0 || (c == 0 && !cur->lo_incl))
			return cur->backward ? 1 : -1;
	}
	if (cur->has_hi) {
		c = key_cmp(key, vlen, cur->hi.data, cur->hi.len);
		if (c > 0 || (c == 0 && !cur->hi_incl))
			return cur->backward ? -1 : 1;
	}
	return 0;
}

/* A stored document's bytes as a view in *doc: cur->doc's copy, or with
 * borrow the WiredTiger memory itself (storage_cursor_next_view). */
static inline int
doc_view(storage_cursor_t *cur, const WT_ITEM *v, bool borrow, bson_t *doc, terr_t *err)
{
	const uint8_t *p = v->data;

	if (!borrow) {
		bytes_set(&cur->doc, v->data, v->size);
		p = cur->doc.data;
	}
	if (doc != NULL && !bson_init_static(doc, p, v->size))
		return terr_set(err, TERR_INTERNAL_ERROR, "corrupt record in %s", cur->c->ns);
	return 1;
}

/* storage_cursor_next, and with borrow storage_cursor_next_view's general
 * case (every state but a positioned plain scan).  Inlined into both, so
 * storage_cursor_next costs no extra call. */
static inline __attribute__((always_inline)) int
cursor_next(storage_cursor_t *cur, recid_t *recid, bson_t *doc, const uint8_t **key, size_t *key_len,
            bool borrow, terr_t *err)
{
	WT_CURSOR *wc = cur->wc;
	WT_ITEM k, v;
	recid_t tail_rid;
	int ret = 0;

	if (cur->state == CUR_EOF)
		return 0;
	if (cur->s == NULL || wc == NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "storage cursor used while saved");
	/* A commit or rollback on the session resets its WiredTiger cursors:
	 * find our place again instead of starting over (the commit settled
	 * our RecordId first). */
	if (cur->state == CUR_POSITIONED && cur->epoch != cur->s->txn_epoch)
		cur->state = CUR_REPOSITION;
	if (cur->state == CUR_REPOSITION && cur->key_lazy)
		return terr_set(err, TERR_INTERNAL_ERROR, "scan lost its position");
	cur->epoch = cur->s->txn_epoch;

	if (cur->tailable)
		recid = recid != NULL ? recid : &tail_rid;   /* its place must survive the end */
	switch (cur->state) {
	case CUR_START:
		ret = cur->ix != NULL ? index_start(cur) : wc_move(cur);
		break;
	case CUR_REPOSITION:
		if (cur->ix != NULL) {
			k.data = cur->last_key.data;
			k.size = cur->last_key.len;
			wc->set_key(wc, &k);
			ret = wc_seek(cur, true);
		} else if ((cur->restored || cur->tailable) && cur->c->capped) {
			/* mongod: a capped scan must not skip what capping removed
			 * under it; it dies instead */
			wc->set_key(wc, (int64_t)cur->last_recid);
			ret = wc->search(wc);
			if (ret == WT_NOTFOUND) {
				cur->state = CUR_EOF;
				return terr_set(err, STORAGE_CODE_CAPPED_POSITION_LOST,
				    "CollectionScan died due to position in capped collection being deleted. "
				    "Last seen record id: RecordId(%" PRId64 ")", (int64_t)cur->last_recid);
			}
			if (ret == 0)
				ret = wc_move(cur);
		} else {
			wc->set_key(wc, (int64_t)cur->last_recid);
			ret = wc_seek(cur, true);
		}
		cur->restored = false;
		break;
	default:
		ret = wc_move(cur);
		break;
	}
	for (;;) {
		if (ret == WT_NOTFOUND) {
			/* a tailable scan waits after its last document (or at the
			 * start) for the next call */
			if (cur->tailable)
				cur->state = cur->state == CUR_START ? CUR_START : CUR_REPOSITION;
			else
				cur->state = CUR_EOF;
			if (cur->tailable && cur->state == CUR_START)
				cur->wc->reset(cur->wc);
			return 0;
		}
		if (ret != 0)
			return storage_wt_err(ret, "scan", err);
		cur->state = CUR_POSITIONED;
		if (cur->ix == NULL) {
			int64_t rid = 0;
			if (cur->limit != INT64_MAX) {
				if ((ret = wc->get_key(wc, &rid)) != 0)
					return storage_wt_err(ret, "scan", err);
				if (rid > cur->limit) {
					/* not visible yet: stop here, and after a
					 * restore (a new limit) go on from the last
					 * record returned */
					cur->state = cur->any_returned ? CUR_REPOSITION : CUR_START;
					wc->reset(wc);
					return 0;
				}
				cur->any_returned = true;
				if (recid == NULL) {
					cur->last_recid = rid;
					if (cur->key_lazy) {
						cur->key_lazy = false;
						if (cur->s->lazy_key == cur)
							cur->s->lazy_key = NULL;
					}
				}
			}
			if (recid != NULL) {
				if ((ret = wc->get_key(wc, &rid)) != 0)
					return storage_wt_err(ret, "scan", err);
				cur->last_recid = rid;
				*recid = rid;
				if (cur->key_lazy) {
					cur->key_lazy = false;
					if (cur->s->lazy_key == cur)
						cur->s->lazy_key = NULL;
				}
			} else if (!cur->key_lazy && cur->limit == INT64_MAX) {
				/* one lazy scan per session: the previous one settles */
				if (cur->s->lazy_key != NULL)
					settle(cur->s->lazy_key);
				cur->key_lazy = true;
				cur->s->lazy_key = cur;
			}
			if ((ret = wc->get_value(wc, &v)) != 0)
				return storage_wt_err(ret, "scan", err);
			return doc_view(cur, &v, borrow, doc, err);
		}
		if ((ret = wc->get_key(wc, &k)) != 0)
			return storage_wt_err(ret, "index scan", err);
		int where = index_bounds(cur, k.data, k.size);
		if (where < 0) {
			ret = wc_move(cur);
			continue;
		}
		if (where > 0) {
			cur->state = CUR_EOF;
			return 0;
		}
		bytes_set(&cur->last_key, k.data, k.size);
		cur->tb_read = false;
		if (cur->ix->clustered) {
			int64_t rid;
			if ((ret = storage_clustered_value(wc, cur->ix, &rid, &v)) != 0)
				return storage_wt_err(ret, "clustered scan", err);
			cur->last_recid = rid;
			if (doc_view(cur, &v, borrow, doc, err) < 0)
				return -1;
		} else if (storage_index_key_only(cur->ix)) {
			int64_t rid;
			if (cur->ix->typebits)
				ret = wc->get_value(wc, &rid, &v);
			else
				ret = wc->get_value(wc, &rid);
			if (ret != 0)
				return storage_wt_err(ret, "index scan", err);
			cur->last_recid = rid;
			if (cur->ix->typebits) {
				bytes_set(&cur->last_tb, v.data, v.size);
				cur->tb_read = true;
			}
		} else {
			cur->last_recid = k.size >= 8 ? keystring_read_recid(k.data, k.size) : 0;
		}
		if (recid != NULL)
			*recid = cur->last_recid;
		if (key != NULL)
			*key = cur->last_key.data;
		if (key_len != NULL)
			*key_len = cur->last_key.len;
		return 1;
	}
}

int
storage_cursor_next(storage_cursor_t *cur, recid_t *recid, bson_t *doc,
                    const uint8_t **key, size_t *key_len, terr_t *err)
{
	return cursor_next(cur, recid, doc, key, key_len, false, err);
}

/* storage_cursor_next_view's general case, out of line: its bson_t needs a
 * 128-byte aligned frame the steady state does without. */
static __attribute__((noinline)) int
next_view_slow(storage_cursor_t *cur, const uint8_t **data, uint32_t *len, terr_t *err)
{
	bson_t doc;
	int ret;

	if ((ret = cursor_next(cur, NULL, &doc, NULL, NULL, true, err)) != 1)
		return ret;
	*data = bson_get_data(&doc);
	*len = doc.len;
	return 1;
}

int
storage_cursor_next_view(storage_cursor_t *cur, const uint8_t **data, uint32_t *len, terr_t *err)
{
	WT_CURSOR *wc = cur->wc;
	WT_ITEM v;
	int ret;

	/* The steady state of a plain scan (positioned, its RecordId left
	 * unread, no visibility limit, not tailable, no commit since): one
	 * move and one get_value, none of cursor_next's repositioning. */
	if (cur->state == CUR_POSITIONED && cur->key_lazy && cur->ix == NULL && !cur->tailable &&
	    cur->limit == INT64_MAX && wc != NULL && cur->s != NULL && cur->epoch == cur->s->txn_epoch) {
		ret = wc_move(cur);
		if (ret == 0 && (ret = wc->get_value(wc, &v)) == 0) {
			uint32_t n = (uint32_t)v.size;
			const uint8_t *p = v.data;
			/* bson_init_static's own check: the length word is the size */
			if (v.size < 5 || v.size > INT32_MAX ||
			    ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24) != n)
				return terr_set(err, TERR_INTERNAL_ERROR, "corrupt record in %s", cur->c->ns);
			*data = p;
			*len = n;
			return 1;
		}
		if (ret == WT_NOTFOUND) {
			cur->state = CUR_EOF;
			return 0;
		}
		return storage_wt_err(ret, "scan", err);
	}
	return next_view_slow(cur, data, len, err);
}

int
storage_cursor_typebits(storage_cursor_t *cur, const uint8_t **tb, size_t *tb_len, terr_t *err)
{
	WT_ITEM v;
	int ret;

	*tb = NULL;
	*tb_len = 0;
	if (cur->ix == NULL || !cur->ix->typebits)
		return 0;
	if (!cur->tb_read) {
		/* non-unique entries: read the value only when asked (covered plans) */
		if (cur->state != CUR_POSITIONED || cur->wc == NULL || cur->s == NULL ||
		    cur->epoch != cur->s->txn_epoch)
			return terr_set(err, TERR_INTERNAL_ERROR, "index cursor not positioned");
		if ((ret = cur->wc->get_value(cur->wc, &v)) != 0)
			return storage_wt_err(ret, "index scan", err);
		bytes_set(&cur->last_tb, v.data, v.size);
		cur->tb_read = true;
	}
	*tb = cur->last_tb.data;
	*tb_len = cur->last_tb.len;
	return 0;
}

/* Give the WiredTiger cursor back: reset, as the session's spare scan
 * cursor when that place is free (and no drop moved the epoch), else
 * closed. */
static void
wc_release(storage_cursor_t *cur)
{
	storage_session_t *s = cur->s;

	if (cur->wc == NULL)
		return;
	if (s != NULL && s->spare_scan == NULL &&
	    s->cur_epoch == atomic_load_explicit(&s->st->cursor_epoch, memory_order_acquire) &&
	    cur->wc->reset(cur->wc) == 0)
		s->spare_scan = cur->wc;
	else
		cur->wc->close(cur->wc);
	cur->wc = NULL;
}

int
storage_cursor_save(storage_cursor_t *cur, terr_t *err)
{
	settle(cur);
	wc_release(cur);
	cur->s = NULL;
	if (cur->state == CUR_POSITIONED)
		cur->state = CUR_REPOSITION;
	return 0;
}

int
storage_cursor_restore(storage_cursor_t *cur, storage_session_t *s, terr_t *err)
{
	storage_coll_t *now = NULL;
	bool same;

	if (cur->wc != NULL)
		return terr_set(err, TERR_INTERNAL_ERROR, "storage cursor restored twice");
	/* The collection (or index) may have been dropped, or dropped and
	 * created again, while we were saved. */
	if (storage_coll_get(s->st, cur->c->db, cur->c->name, &now, NULL) != 0) {
		same = false;   /* dropped or renamed: mongod kills the cursor too */
	} else {
		same = strcmp(now->ident, cur->c->ident) == 0;
		if (same && cur->ix != NULL) {
			same = false;
			for (int i = 0; i < now->nindexes; i++)
				same = same || strcmp(now->indexes[i].ident, cur->ix->ident) == 0;
			storage_coll_release(now);
			if (!same)
				return terr_set(err, STORAGE_CODE_QUERY_PLAN_KILLED, "index '%s' dropped",
				    cur->ix->name);
		} else {
			storage_coll_release(now);
		}
	}
	if (!same)
		return terr_set(err, STORAGE_CODE_QUERY_PLAN_KILLED, "collection dropped");
	cur->restored = cur->state == CUR_REPOSITION;
	return cursor_attach(cur, s, err);
}

void
storage_cursor_set_tailable(storage_cursor_t *cur)
{
	if (cur->ix == NULL && !cur->backward)
		cur->tailable = true;
}

void
storage_cursor_close(storage_cursor_t *cur)
{
	if (cur == NULL)
		return;
	if (cur->s != NULL && cur->s->lazy_key == cur)
		cur->s->lazy_key = NULL;
	wc_release(cur);
	storage_coll_release(cur->c);
	bytes_free(&cur->last_key);
	bytes_free(&cur->last_tb);
	bytes_free(&cur->doc);
	bytes_free(&cur->lo);
	bytes_free(&cur->hi);
	bytes_free(&cur->seek);
	bson_free(cur);
}
