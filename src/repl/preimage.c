/*
 * preimage.c -- config.system.preimages (see preimage.h): recording a
 * write's pre-image in its transaction, finding it by {nsUUID, ts,
 * applyOpsIndex}, expiring those the oplog no longer covers, and applying a
 * $v: 2 diff to a pre-image to get the post-image.
 */
#include "repl/preimage.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/mem.h"

bool
repl_preimage_enabled(const storage_coll_t *c)
{
	bson_iter_t it, e;

	return c != NULL && c->options != NULL && bson_iter_init_find(&it, c->options, "changeStreamPreAndPostImages") &&
	    BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &e) && bson_iter_find(&e, "enabled") &&
	    BSON_ITER_HOLDS_BOOL(&e) && bson_iter_bool(&e);
}

int
repl_preimage_ensure(storage_t *st, storage_session_t *s, terr_t *err)
{
	storage_coll_t *c = NULL;

	if (storage_coll_get(st, REPL_PREIMAGES_DB, REPL_PREIMAGES_COLL, &c, NULL) == 0 && c != NULL) {
		storage_coll_release(c);
		return 0;
	}
	if (storage_coll_create(st, s, REPL_PREIMAGES_DB, REPL_PREIMAGES_COLL, NULL, err) != 0) {
		if (err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
	}
	return 0;
}

static void
append_id(bson_t *out, const uint8_t uuid[16], repl_ts_t ts, int64_t index)
{
	bson_t id;

	bson_append_document_begin(out, "_id", 3, &id);
	bson_append_binary(&id, "nsUUID", -1, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_timestamp(&id, "ts", 2, repl_ts_secs(ts), repl_ts_inc(ts));
	bson_append_int64(&id, "applyOpsIndex", -1, index);
	bson_append_document_end(out, &id);
}

int
repl_preimage_write(storage_t *st, storage_session_t *s, const storage_coll_t *c, repl_ts_t ts, const bson_t *pre,
                    terr_t *err)
{
	return repl_preimage_write_at(st, s, c->uuid, ts, 0, pre, err);
}

int
repl_preimage_write_at(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, int64_t index,
                       const bson_t *pre, terr_t *err)
{
	storage_coll_t *pc = NULL;
	struct timespec now;
	bson_t doc = BSON_INITIALIZER;
	bool was;
	int ret;

	if (storage_coll_get(st, REPL_PREIMAGES_DB, REPL_PREIMAGES_COLL, &pc, NULL) != 0 || pc == NULL)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	append_id(&doc, uuid, ts, index);
	bson_append_date_time(&doc, "operationTime", -1, (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	bson_append_document(&doc, "preImage", -1, pre);
	was = storage_session_set_unobserved(s, true);
	ret = storage_doc_insert(s, pc, &doc, NULL, err);
	storage_session_set_unobserved(s, was);
	bson_destroy(&doc);
	storage_coll_release(pc);
	return ret;
}

int
repl_preimage_find(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, bson_t *out,
                   terr_t *err)
{
	return repl_preimage_find_at(st, s, uuid, ts, 0, out, err);
}

int
repl_preimage_find_at(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, int64_t index,
                      bson_t *out, terr_t *err)
{
	storage_coll_t *pc = NULL;
	bson_t key = BSON_INITIALIZER, doc;
	bson_iter_t it;
	recid_t rid;
	int rc = 1;

	if (storage_coll_get(st, REPL_PREIMAGES_DB, REPL_PREIMAGES_COLL, &pc, NULL) != 0 || pc == NULL)
		return 1;
	append_id(&key, uuid, ts, index);
	if (bson_iter_init_find(&it, &key, "_id"))
		rc = storage_doc_find_id(s, pc, bson_iter_value(&it), &rid, &doc, err);
	if (rc == 0) {
		bson_iter_t p;
		const uint8_t *d;
		uint32_t l;
		if (bson_iter_init_find(&p, &doc, "preImage") && BSON_ITER_HOLDS_DOCUMENT(&p)) {
			bson_t v;
			bson_iter_document(&p, &l, &d);
			bson_init_static(&v, d, l);
			bson_copy_to(&v, out);
		} else {
			rc = 1;
		}
	}
	bson_destroy(&key);
	storage_coll_release(pc);
	return rc;
}

int
repl_preimage_expire(storage_t *st, storage_session_t *s, repl_ts_t oldest, int64_t before_ms, int64_t limit,
                     int64_t *removed, terr_t *err)
{
	storage_coll_t *pc = NULL;
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t doc;
	int64_t n = 0;
	int ret = 0, r = 0;
	bool was;

	if (removed != NULL)
		*removed = 0;
	if (storage_coll_get(st, REPL_PREIMAGES_DB, REPL_PREIMAGES_COLL, &pc, NULL) != 0 || pc == NULL)
		return 0;
	was = storage_session_set_unobserved(s, true);
	ERR(storage_txn_begin(s, err));
	ERR(storage_scan_open(s, pc, false, &cur, err));
	/* written in ts (and operationTime) order: stop at the first one
	 * neither the oplog's end nor the time limit takes */
	while ((limit <= 0 || n < limit) && (r = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		bson_iter_t it, id;
		uint32_t t, i;
		bson_t copy;
		bool gone;
		if (!bson_iter_init_find(&it, &doc, "_id") || !bson_iter_recurse(&it, &id) || !bson_iter_find(&id, "ts") ||
		    !BSON_ITER_HOLDS_TIMESTAMP(&id))
			continue;
		bson_iter_timestamp(&id, &t, &i);
		gone = (((repl_ts_t)t << 32) | i) < oldest;
		if (!gone && before_ms > 0 && bson_iter_init_find(&it, &doc, "operationTime") &&
		    BSON_ITER_HOLDS_DATE_TIME(&it))
			gone = bson_iter_date_time(&it) <= before_ms;
		if (!gone)
			break;
		bson_copy_to(&doc, &copy);
		ret = storage_doc_delete(s, pc, rid, &copy, err);
		bson_destroy(&copy);
		if (ret != 0)
			break;
		n++;
	}
	if (r < 0)
		ret = -1;
	storage_cursor_close(cur);
	cur = NULL;
	if (ret != 0) {
		storage_txn_rollback(s);
		goto err;
	}
	ERR(storage_txn_commit(s, false, err));
	if (removed != NULL)
		*removed = n;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	if (ret != 0 && storage_txn_active(s))
		storage_txn_rollback(s);
	storage_session_set_unobserved(s, was);
	storage_coll_release(pc);
	return ret;
}

/* ---- $v: 2 diffs ------------------------------------------------------------ */

static bool apply_doc(const bson_t *pre, const bson_t *diff, bson_t *out, int depth);
static bool apply_array(const bson_t *pre, const bson_t *diff, bson_t *out, int depth);

static bool
sub(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *d;
	uint32_t l;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &l, &d);
	else if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &l, &d);
	else
		return false;
	return bson_init_static(out, d, l);
}

/* The section of a document diff for field k ("i", "u", "d") holding name. */
static bool
in_section(const bson_t *diff, const char *sec, const char *name, bson_iter_t *val)
{
	bson_iter_t it, s;

	return bson_iter_init_find(&it, diff, sec) && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &s) &&
	    bson_iter_find(&s, name) && (*val = s, true);
}

/* Apply a sub-diff to the value it names, appending the result as key. */
static bool
apply_sub(bson_t *out, const char *key, const bson_iter_t *pre_val, const bson_t *sd, int depth)
{
	bson_iter_t a;
	bson_t pre, child;
	bool array = bson_iter_init_find(&a, sd, "a") && BSON_ITER_HOLDS_BOOL(&a) && bson_iter_bool(&a);
	bool ok;

	if (!sub(pre_val, &pre))
		return false;
	if (array) {
		bson_append_array_begin(out, key, -1, &child);
		ok = apply_array(&pre, sd, &child, depth + 1);
		bson_append_array_end(out, &child);
	} else {
		bson_append_document_begin(out, key, -1, &child);
		ok = apply_doc(&pre, sd, &child, depth + 1);
		bson_append_document_end(out, &child);
	}
	return ok;
}

static bool
apply_doc(const bson_t *pre, const bson_t *diff, bson_t *out, int depth)
{
	bson_iter_t it, v, s;
	char skey[1024];

	if (depth > 100 || !bson_iter_init(&it, pre))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (in_section(diff, "d", k, &v))
			continue;
		if (in_section(diff, "u", k, &v)) {
			bson_append_value(out, k, -1, bson_iter_value(&v));
			continue;
		}
		snprintf(skey, sizeof(skey), "s%s", k);
		if (bson_iter_init_find(&s, diff, skey) && BSON_ITER_HOLDS_DOCUMENT(&s)) {
			bson_t sd;
			sub(&s, &sd);
			if (!apply_sub(out, k, &it, &sd, depth))
				return false;
			continue;
		}
		bson_append_value(out, k, -1, bson_iter_value(&it));
	}
	/* new fields: inserts, then updates of fields the document lacked */
	for (int pass = 0; pass < 2; pass++) {
		if (bson_iter_init_find(&it, diff, pass == 0 ? "u" : "i") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
		    bson_iter_recurse(&it, &s)) {
			while (bson_iter_next(&s)) {
				bson_iter_t e;
				if (pass == 0 && bson_iter_init_find(&e, pre, bson_iter_key(&s)))
					continue;
				bson_append_value(out, bson_iter_key(&s), -1, bson_iter_value(&s));
			}
		}
	}
	return true;
}

static bool
apply_array(const bson_t *pre, const bson_t *diff, bson_t *out, int depth)
{
	bson_iter_t it, l;
	int64_t len = -1, n = 0, max = -1;
	char k[32], key[24];

	if (depth > 100)
		return false;
	if (bson_iter_init_find(&l, diff, "l") && BSON_ITER_HOLDS_NUMBER(&l))
		len = bson_iter_as_int64(&l);
	/* the largest index the diff names (an append past the end) */
	if (bson_iter_init(&it, diff))
		while (bson_iter_next(&it)) {
			const char *dk = bson_iter_key(&it);
			if ((dk[0] == 'u' || dk[0] == 's') && dk[1] >= '0' && dk[1] <= '9') {
				int64_t i = strtoll(dk + 1, NULL, 10);
				if (i > max)
					max = i;
			}
		}
	bson_iter_init(&it, pre);
	for (n = 0;; n++) {
		bool have = bson_iter_next(&it);
		bson_iter_t v;
		if (len >= 0 && n >= len)
			break;
		if (!have && n > max)
			break;
		snprintf(key, sizeof(key), "%lld", (long long)n);
		snprintf(k, sizeof(k), "u%lld", (long long)n);
		if (bson_iter_init_find(&v, diff, k)) {
			bson_append_value(out, key, -1, bson_iter_value(&v));
			continue;
		}
		snprintf(k, sizeof(k), "s%lld", (long long)n);
		if (have && bson_iter_init_find(&v, diff, k) && BSON_ITER_HOLDS_DOCUMENT(&v)) {
			bson_t sd;
			sub(&v, &sd);
			if (!apply_sub(out, key, &it, &sd, depth))
				return false;
			continue;
		}
		if (have)
			bson_append_value(out, key, -1, bson_iter_value(&it));
		else
			bson_append_null(out, key, -1);
	}
	return true;
}

bool
repl_diff_apply(const bson_t *pre, const bson_t *diff, bson_t *out)
{
	return apply_doc(pre, diff, out, 0);
}
