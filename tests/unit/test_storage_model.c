/*
 * test_storage_model.c -- random operations against the storage layer,
 * checked against a plain array that says what must be there (WiredTiger's
 * test/model idea): inserts (duplicates must fail with 11000), updates,
 * deletes, rolled-back transactions, lookups by _id, full scans in both
 * directions with save/restore between sessions, index scans over random
 * _id ranges, and reopening the folder.  Seeded, so a failure repeats.
 *
 * Hand-written cases live in test_storage.c.
 */
#include "tt.h"
#include "storage/storage.h"
#include "bson/keystring.h"

#define NIDS 300
#define NOPS 20000

static struct {
	bool present;
	int payload;
} model[NIDS];
static int model_count;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static unsigned
rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void
make_doc(bson_t *d, int id, int payload)
{
	bson_init(d);
	BSON_APPEND_INT32(d, "_id", id);
	BSON_APPEND_INT32(d, "p", payload);
	/* vary the size so data size is exercised */
	for (int i = 0; i < payload % 4; i++)
		BSON_APPEND_UTF8(d, "pad", "xxxxxxxxxxxxxxxxxxxxxxxx");
}

static int
doc_field(const bson_t *doc, const char *f)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, doc, f) ? bson_iter_int32(&it) : -1;
}

static int64_t
model_size(void)
{
	int64_t size = 0;

	for (int i = 0; i < NIDS; i++) {
		if (model[i].present) {
			bson_t d;
			make_doc(&d, i, model[i].payload);
			size += d.len;
			bson_destroy(&d);
		}
	}
	return size;
}

/* Look id up; returns 0 found (doc copied into out), 1 not found. */
static int
lookup(storage_session_t *s, storage_coll_t *c, int id, recid_t *rid, bson_t *out)
{
	bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
	terr_t err = TERR_INIT;
	bson_t view;
	int rc = storage_doc_find_id(s, c, &v, rid, &view, &err);

	if (rc == 0)
		bson_copy_to(&view, out);
	TT_ASSERT(rc == 0 || rc == 1);
	terr_clear(&err);
	return rc;
}

static void
op_insert(storage_session_t *s, storage_coll_t *c, bool commit)
{
	int id = (int)rnd(NIDS), payload = (int)rnd(1000);
	terr_t err = TERR_INIT;
	bson_t d;
	int rc;

	make_doc(&d, id, payload);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	rc = storage_doc_insert(s, c, &d, NULL, &err);
	if (model[id].present) {
		TT_ASSERT(rc != 0);
		TT_EQ_INT(err.code, 11000);
		storage_txn_rollback(s);
	} else {
		TT_EQ_INT(rc, 0);
		if (commit) {
			TT_EQ_INT(storage_txn_commit(s, rnd(10) == 0, &err), 0);
			model[id].present = true;
			model[id].payload = payload;
			model_count++;
		} else {
			storage_txn_rollback(s);
		}
	}
	terr_clear(&err);
	bson_destroy(&d);
}

static void
op_update_or_delete(storage_session_t *s, storage_coll_t *c, bool del, bool commit)
{
	int id = (int)rnd(NIDS), payload = (int)rnd(1000);
	terr_t err = TERR_INIT;
	recid_t rid;
	bson_t old, d;

	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	if (lookup(s, c, id, &rid, &old) != 0) {
		TT_ASSERT(!model[id].present);
		storage_txn_rollback(s);
		return;
	}
	TT_ASSERT(model[id].present);
	TT_EQ_INT(doc_field(&old, "p"), model[id].payload);
	if (del) {
		TT_EQ_INT(storage_doc_delete(s, c, rid, &old, &err), 0);
	} else {
		make_doc(&d, id, payload);
		TT_EQ_INT(storage_doc_update(s, c, rid, &old, &d, &err), 0);
		bson_destroy(&d);
	}
	if (commit) {
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		if (del) {
			model[id].present = false;
			model_count--;
		} else {
			model[id].payload = payload;
		}
	} else {
		storage_txn_rollback(s);
	}
	bson_destroy(&old);
	terr_clear(&err);
}

static void
op_find(storage_session_t *s, storage_coll_t *c)
{
	int id = (int)rnd(NIDS);
	recid_t rid;
	bson_t d;

	if (lookup(s, c, id, &rid, &d) == 0) {
		TT_ASSERT(model[id].present);
		TT_EQ_INT(doc_field(&d, "p"), model[id].payload);
		bson_destroy(&d);
	} else {
		TT_ASSERT(!model[id].present);
	}
}

/* Full scan, saving and restoring on the other session now and then; no
 * writes in between, so it must see exactly the model. */
static void
op_scan(storage_session_t *s1, storage_session_t *s2, storage_coll_t *c)
{
	bool backward = rnd(2);
	bool seen[NIDS] = {0};
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	recid_t rid, prev = backward ? INT64_MAX : 0;
	bson_t doc;
	int n = 0, rc;

	TT_EQ_INT(storage_scan_open(s1, c, backward, &cur, &err), 0);
	while ((rc = storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err)) == 1) {
		int id = doc_field(&doc, "_id");
		TT_ASSERT(backward ? rid < prev : rid > prev);
		prev = rid;
		TT_ASSERT(id >= 0 && id < NIDS && model[id].present && !seen[id]);
		if (id >= 0 && id < NIDS) {
			seen[id] = true;
			TT_EQ_INT(doc_field(&doc, "p"), model[id].payload);
		}
		n++;
		if (rnd(20) == 0) {
			TT_EQ_INT(storage_cursor_save(cur, &err), 0);
			TT_EQ_INT(storage_cursor_restore(cur, rnd(2) ? s1 : s2, &err), 0);
		}
	}
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(n, model_count);
	storage_cursor_close(cur);
}

/* Index scan over a random _id range with random inclusivity. */
static void
op_index_scan(storage_session_t *s, storage_coll_t *c)
{
	int lo = (int)rnd(NIDS), hi = (int)rnd(NIDS);
	bool lo_incl = rnd(2), hi_incl = rnd(2), backward = rnd(2);
	bool use_lo = rnd(4) != 0, use_hi = rnd(4) != 0;
	keystring_t klo, khi;
	bson_value_t v = {.value_type = BSON_TYPE_INT32};
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	recid_t rid;
	const uint8_t *key;
	size_t key_len;
	int expect = 0, n = 0, last = backward ? NIDS : -1, rc;

	keystring_init(&klo);
	keystring_init(&khi);
	v.value.v_int32 = lo;
	keystring_append_value(&klo, &v, false);
	v.value.v_int32 = hi;
	keystring_append_value(&khi, &v, false);
	for (int i = 0; i < NIDS; i++) {
		if (!model[i].present)
			continue;
		if (use_lo && (i < lo || (i == lo && !lo_incl)))
			continue;
		if (use_hi && (i > hi || (i == hi && !hi_incl)))
			continue;
		expect++;
	}
	TT_EQ_INT(storage_index_scan_open(s, c, &c->indexes[0], use_lo ? klo.buf : NULL, klo.len, lo_incl,
	    use_hi ? khi.buf : NULL, khi.len, hi_incl, backward, &cur, &err), 0);
	while ((rc = storage_cursor_next(cur, &rid, NULL, &key, &key_len, &err)) == 1) {
		bson_t doc;
		int id;
		TT_EQ_INT(storage_doc_get(s, c, rid, &doc, &err), 0);
		id = doc_field(&doc, "_id");
		TT_ASSERT(backward ? id < last : id > last);
		last = id;
		n++;
	}
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(n, expect);
	storage_cursor_close(cur);
	keystring_destroy(&klo);
	keystring_destroy(&khi);
}

static void
check_stats(storage_t *st, storage_session_t *s, storage_coll_t *c)
{
	terr_t err = TERR_INIT;
	int64_t count, size;

	TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, NULL, &err), 0);
	TT_EQ_INT(count, model_count);
	TT_EQ_INT(size, model_size());
}

static void
test_random_model(void)
{
	char *dir = tt_tmpdir("model");
	storage_options_t o = {.create = true, .cache_size = "32M"};
	storage_t *st = NULL;
	storage_session_t *s1 = NULL, *s2 = NULL;
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "m", "c", NULL, &err), 0);
	for (int round = 0; round < 4; round++) {
		TT_EQ_INT(storage_session_open(st, &s1, &err), 0);
		TT_EQ_INT(storage_session_open(st, &s2, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "m", "c", &c, &err), 0);
		check_stats(st, s1, c);
		for (int i = 0; i < NOPS / 4; i++) {
			storage_session_t *s = rnd(2) ? s1 : s2;
			unsigned op = rnd(100);
			if (op < 40)
				op_insert(s, c, rnd(8) != 0);
			else if (op < 55)
				op_update_or_delete(s, c, false, rnd(8) != 0);
			else if (op < 70)
				op_update_or_delete(s, c, true, rnd(8) != 0);
			else if (op < 95)
				op_find(s, c);
			else if (op < 98)
				op_index_scan(s, c);
			else
				op_scan(s, s == s1 ? s2 : s1, c);
			if (tt_cur_failed)
				break;
		}
		check_stats(st, s1, c);
		op_scan(s1, s2, c);
		storage_coll_release(c);
		storage_session_close(s1);
		storage_session_close(s2);
		if (tt_cur_failed)
			break;
		/* reopen: everything must still match */
		storage_close(st);
		TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	}
	storage_close(st);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	TT_RUN(test_random_model);
	return tt_finish();
}
