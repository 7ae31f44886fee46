/*
 * test_capped.c -- capped collections, tailable cursors and the insert
 * notifier.  Storage level: the max and size limits (oldest documents and
 * their _id entries removed in the inserting transaction, undone by its
 * rollback; a document larger than the limit kept alone), the oplog left
 * to repl/, concurrent writers against a tailing reader (a tailer sees
 * every document exactly once and in each writer's order, which holds only
 * if RecordId order is commit order), the limits after concurrent writers,
 * inserts, deletes and growing updates from four threads (no deadlock, the
 * limits and the _id index consistent at the end), CappedPositionLost, and
 * wake-ups and timeouts of storage_coll_wait_insert.  Command level (embedded API):
 * create's capped options as mongod checks and stores them, collMod of the
 * limits, convertToCapped and cloneCollectionAsCapped, the tailable and
 * awaitData rules of find and getMore, $out.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "tt.h"
#include "tt_embedded.h"
#include "storage/storage.h"

static char *dir;

static storage_t *
open_fresh(const char *tag)
{
	storage_options_t o = {.create = true, .cache_size = "64M"};
	terr_t err = TERR_INIT;
	storage_t *st = NULL;

	dir = tt_tmpdir(tag);
	if (storage_open(dir, &o, &st, &err) != 0) {
		fprintf(stderr, "open failed: %s\n", err.msg);
		abort();
	}
	return st;
}

static void
close_and_clean(storage_t *st)
{
	storage_close(st);
	tt_rmdir(dir);
	bson_free(dir);
	dir = NULL;
}

static int64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A capped collection db.name with the given limits (max 0 = none). */
static storage_coll_t *
make_capped(storage_t *st, storage_session_t *s, const char *name, int64_t size, int64_t max)
{
	bson_t opts = BSON_INITIALIZER;
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	BSON_APPEND_BOOL(&opts, "capped", true);
	BSON_APPEND_INT64(&opts, "size", size);
	if (max > 0)
		BSON_APPEND_INT64(&opts, "max", max);
	TT_EQ_INT(storage_coll_create(st, s, "db", name, &opts, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "db", name, &c, &err), 0);
	bson_destroy(&opts);
	return c;
}

typedef struct insert_arg {
	storage_coll_t *c;
	const bson_t *doc;
} insert_arg_t;

static int
insert_fn(storage_session_t *s, void *arg, terr_t *err)
{
	insert_arg_t *a = arg;

	return storage_doc_insert(s, a->c, a->doc, NULL, err);
}

/* Insert {_id: id, w: w} with storage_txn_run, as the write commands do
 * (write conflicts retried). */
static int
insert_run(storage_session_t *s, storage_coll_t *c, int64_t id, int w, terr_t *err)
{
	bson_t doc = BSON_INITIALIZER;
	insert_arg_t a = {.c = c, .doc = &doc};
	int rc;

	BSON_APPEND_INT64(&doc, "_id", id);
	BSON_APPEND_INT32(&doc, "w", w);
	BSON_APPEND_UTF8(&doc, "pad", "pppppppppppppppppppp");
	rc = storage_txn_run(s, insert_fn, &a, false, err);
	bson_destroy(&doc);
	return rc;
}

/* Insert {_id: id, w: w, pad: <padding>} in its own transaction. */
static int
insert_one(storage_session_t *s, storage_coll_t *c, int64_t id, int w, size_t padding, terr_t *err)
{
	bson_t doc = BSON_INITIALIZER;
	int rc;

	BSON_APPEND_INT64(&doc, "_id", id);
	BSON_APPEND_INT32(&doc, "w", w);
	if (padding > 0) {
		char *p = bson_malloc(padding + 1);
		memset(p, 'p', padding);
		p[padding] = '\0';
		BSON_APPEND_UTF8(&doc, "pad", p);
		bson_free(p);
	}
	rc = storage_txn_begin(s, err);
	if (rc == 0)
		rc = storage_doc_insert(s, c, &doc, NULL, err);
	if (rc == 0)
		rc = storage_txn_commit(s, false, err);
	else
		storage_txn_rollback(s);
	bson_destroy(&doc);
	return rc;
}

/* The _ids of c in natural order, as "1,2,3". */
static char *
ids_of(storage_session_t *s, storage_coll_t *c)
{
	bson_string_t *out = bson_string_new("");
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	recid_t rid, last = 0;
	bson_t doc;
	bson_iter_t it;

	TT_EQ_INT(storage_scan_open(s, c, false, &cur, &err), 0);
	while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) == 1) {
		TT_ASSERT(rid > last);
		last = rid;
		if (bson_iter_init_find(&it, &doc, "_id"))
			bson_string_append_printf(out, "%s%lld", out->len ? "," : "", (long long)bson_iter_as_int64(&it));
	}
	storage_cursor_close(cur);
	return bson_string_free(out, false);
}

static void
test_max_limit(void)
{
	storage_t *st = open_fresh("capped_max");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	bson_value_t id = {.value_type = BSON_TYPE_INT64};
	bson_t doc;
	int64_t count, size;
	char *ids;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "m", 1 << 20, 3);
	TT_ASSERT(c->capped && c->capped_max == 3 && c->capped_size == 1 << 20);
	for (int i = 1; i <= 10; i++)
		TT_EQ_INT(insert_one(s, c, i, 0, 0, &err), 0);
	ids = ids_of(s, c);
	TT_EQ_STR(ids, "8,9,10");
	bson_free(ids);
	storage_coll_stats(st, s, c, &count, &size, NULL, &err);
	TT_EQ_INT(count, 3);
	/* the removed documents' _id entries went with them */
	id.value.v_int64 = 7;
	TT_EQ_INT(storage_doc_find_id(s, c, &id, NULL, &doc, &err), 1);
	id.value.v_int64 = 8;
	TT_EQ_INT(storage_doc_find_id(s, c, &id, NULL, &doc, &err), 0);
	/* a rolled-back insert puts back what it capped */
	{
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT64(&d, "_id", 11);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, &err), 0);
		storage_txn_rollback(s);
		bson_destroy(&d);
	}
	ids = ids_of(s, c);
	TT_EQ_STR(ids, "8,9,10");
	bson_free(ids);
	/* a duplicate _id fails and caps nothing */
	TT_EQ_INT(insert_one(s, c, 9, 0, 0, &err), -1);
	TT_EQ_INT(err.code, 11000);
	terr_clear(&err);
	ids = ids_of(s, c);
	TT_EQ_STR(ids, "8,9,10");
	bson_free(ids);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* local.oplog.rs is capped for readers, truncated by repl/ only */
static void
test_oplog_exempt(void)
{
	storage_t *st = open_fresh("capped_oplog");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c = NULL;
	bson_t opts = BSON_INITIALIZER;
	char *ids;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	BSON_APPEND_BOOL(&opts, "capped", true);
	BSON_APPEND_INT32(&opts, "size", 4096);
	BSON_APPEND_INT32(&opts, "max", 2);
	TT_EQ_INT(storage_coll_create(st, s, "local", "oplog.rs", &opts, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "local", "oplog.rs", &c, &err), 0);
	TT_ASSERT(c->capped);
	for (int i = 1; i <= 5; i++)
		TT_EQ_INT(insert_one(s, c, i, 0, 0, &err), 0);
	ids = ids_of(s, c);
	TT_EQ_STR(ids, "1,2,3,4,5");
	bson_free(ids);
	bson_destroy(&opts);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

static void
test_size_limit(void)
{
	storage_t *st = open_fresh("capped_size");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	int64_t count, size;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	/* no 4096-byte minimum any more (mongod 7.0+): 3000 bytes is 3000 */
	c = make_capped(st, s, "sz", 3000, 0);
	for (int i = 0; i < 40; i++) {
		TT_EQ_INT(insert_one(s, c, i, 0, 300, &err), 0);
		storage_coll_stats(st, s, c, &count, &size, NULL, &err);
		TT_ASSERT(size <= 3000);
	}
	TT_ASSERT(count >= 7 && count <= 9);
	{
		char *ids = ids_of(s, c);
		TT_ASSERT(strstr(ids, ",39") != NULL && strncmp(ids, "0,", 2) != 0);
		bson_free(ids);
	}
	/* a document over the limit is kept, alone (mongod's capped_large_docs) */
	TT_EQ_INT(insert_one(s, c, 100, 0, 5000, &err), 0);
	{
		char *ids = ids_of(s, c);
		TT_EQ_STR(ids, "100");
		bson_free(ids);
	}
	TT_EQ_INT(insert_one(s, c, 101, 0, 10, &err), 0);
	{
		char *ids = ids_of(s, c);
		TT_EQ_STR(ids, "101");
		bson_free(ids);
	}
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* ---- concurrent writers and a tailer ------------------------------------- */

#define WRITERS 4
#define PER_WRITER 150

typedef struct writer_arg {
	storage_t *st;
	storage_coll_t *c;
	int w;
	int failures;
} writer_arg_t;

static void *
writer_main(void *arg)
{
	writer_arg_t *a = arg;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;

	if (storage_session_open(a->st, &s, &err) != 0) {
		a->failures++;
		return NULL;
	}
	for (int i = 0; i < PER_WRITER; i++) {
		if (insert_run(s, a->c, (int64_t)a->w * 100000 + i, a->w, &err) != 0) {
			a->failures++;
			terr_clear(&err);
		}
	}
	storage_session_close(s);
	return NULL;
}

typedef struct tail_arg {
	storage_t *st;
	storage_coll_t *c;
	atomic_bool stop;
	int seen;
	int errors;
	int order_errors;
} tail_arg_t;

/* Tail the collection the way a getMore loop does (save between batches,
 * restore on a new look), checking each writer's documents arrive once and
 * in order. */
static void *
tailer_main(void *arg)
{
	tail_arg_t *a = arg;
	storage_session_t *s = NULL;
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	int64_t next_seq[WRITERS] = {0};
	bool last_round = false;

	if (storage_session_open(a->st, &s, &err) != 0 || storage_scan_open(s, a->c, false, &cur, &err) != 0) {
		a->errors++;
		return NULL;
	}
	storage_cursor_set_tailable(cur);
	for (;;) {
		bson_t doc;
		bson_iter_t it;
		int rc;
		uint64_t seen = storage_coll_insert_seq(a->c);

		while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err)) == 1) {
			int64_t id;
			int w;
			if (!bson_iter_init_find(&it, &doc, "_id"))
				continue;
			id = bson_iter_as_int64(&it);
			w = (int)(id / 100000);
			if (w < 0 || w >= WRITERS || id % 100000 != next_seq[w])
				a->order_errors++;
			else
				next_seq[w]++;
			a->seen++;
		}
		if (rc < 0) {
			a->errors++;
			break;
		}
		if (last_round)
			break;
		if (atomic_load(&a->stop))
			last_round = true;   /* one more look after the writers are done */
		storage_cursor_save(cur, &err);
		storage_coll_wait_insert(a->c, seen, mono_us() + 20000);
		if (storage_cursor_restore(cur, s, &err) != 0) {
			a->errors++;
			break;
		}
	}
	storage_cursor_close(cur);
	storage_session_close(s);
	return NULL;
}

static void
test_concurrent_tail(void)
{
	storage_t *st = open_fresh("capped_tail");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	pthread_t wt[WRITERS], tt;
	writer_arg_t wa[WRITERS];
	tail_arg_t ta;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "tail", (int64_t)1 << 30, 0);
	memset(&ta, 0, sizeof(ta));
	ta.st = st;
	ta.c = c;
	pthread_create(&tt, NULL, tailer_main, &ta);
	for (int w = 0; w < WRITERS; w++) {
		wa[w] = (writer_arg_t){.st = st, .c = c, .w = w};
		pthread_create(&wt[w], NULL, writer_main, &wa[w]);
	}
	for (int w = 0; w < WRITERS; w++) {
		pthread_join(wt[w], NULL);
		TT_EQ_INT(wa[w].failures, 0);
	}
	atomic_store(&ta.stop, true);
	pthread_join(tt, NULL);
	TT_EQ_INT(ta.errors, 0);
	TT_EQ_INT(ta.order_errors, 0);
	TT_EQ_INT(ta.seen, WRITERS * PER_WRITER);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

static void
test_concurrent_limits(void)
{
	storage_t *st = open_fresh("capped_conc");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	pthread_t wt[WRITERS];
	writer_arg_t wa[WRITERS];
	int64_t count, size;
	char *ids;
	int n = 0;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "lim", 8192, 25);
	for (int w = 0; w < WRITERS; w++) {
		wa[w] = (writer_arg_t){.st = st, .c = c, .w = w};
		pthread_create(&wt[w], NULL, writer_main, &wa[w]);
	}
	for (int w = 0; w < WRITERS; w++) {
		pthread_join(wt[w], NULL);
		TT_EQ_INT(wa[w].failures, 0);
	}
	storage_coll_stats(st, s, c, &count, &size, NULL, &err);
	TT_ASSERT(count <= 25);
	TT_ASSERT(size <= 8192);
	ids = ids_of(s, c);   /* checks RecordIds ascend */
	for (char *p = ids; *p; p++)
		n += *p == ',';
	TT_EQ_INT(n + 1, count);
	/* the newest document survives, and the _id index has exactly the
	 * documents kept */
	{
		storage_cursor_t *cur = NULL;
		const storage_index_t *ix = &c->indexes[0];
		int64_t keys = 0;
		recid_t rid;
		const uint8_t *k;
		size_t klen;
		TT_EQ_INT(storage_index_scan_open(s, c, ix, NULL, 0, true, NULL, 0, true, false, &cur, &err), 0);
		while (storage_cursor_next(cur, &rid, NULL, &k, &klen, &err) == 1)
			keys++;
		storage_cursor_close(cur);
		TT_EQ_INT(keys, count);
	}
	bson_free(ids);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* ---- mixed concurrent writers ------------------------------------------------ */

typedef struct mixed_op {
	storage_coll_t *c;
	int64_t id;
	int kind;            /* 0 insert, 1 delete, 2 update (grows the document) */
} mixed_op_t;

static int
mixed_fn(storage_session_t *s, void *arg, terr_t *err)
{
	mixed_op_t *op = arg;
	bson_value_t id = {.value_type = BSON_TYPE_INT64};
	recid_t rid;
	bson_t doc, *old, nd = BSON_INITIALIZER;
	int rc;

	if (op->kind == 0) {
		BSON_APPEND_INT64(&nd, "_id", op->id);
		BSON_APPEND_UTF8(&nd, "pad", "0123456789");
		rc = storage_doc_insert(s, op->c, &nd, NULL, err);
		bson_destroy(&nd);
		return rc;
	}
	id.value.v_int64 = op->id;
	rc = storage_doc_find_id(s, op->c, &id, &rid, &doc, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	old = bson_copy(&doc);
	if (op->kind == 1) {
		rc = storage_doc_delete(s, op->c, rid, old, err);
	} else {
		bson_copy_to_excluding_noinit(old, &nd, "grown", NULL);
		BSON_APPEND_UTF8(&nd, "grown", "gggggggggggggggggggggggggggggggggggggggg");
		rc = storage_doc_update(s, op->c, rid, old, &nd, err);
	}
	bson_destroy(&nd);
	bson_destroy(old);
	return rc;
}

typedef struct mixed_arg {
	storage_t *st;
	storage_coll_t *c;
	int w;
	int failures;
} mixed_arg_t;

static void *
mixed_main(void *arg)
{
	mixed_arg_t *a = arg;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	unsigned seed = (unsigned)a->w * 7919u + 1;
	int64_t next = 0;

	if (storage_session_open(a->st, &s, &err) != 0) {
		a->failures++;
		return NULL;
	}
	for (int i = 0; i < 300; i++) {
		mixed_op_t op = {.c = a->c};
		int r = rand_r(&seed) % 10;
		op.kind = r < 6 ? 0 : r < 8 ? 1 : 2;
		op.id = op.kind == 0 || next == 0 ? (int64_t)a->w * 100000 + next++ :
		    (int64_t)a->w * 100000 + rand_r(&seed) % next;
		if (op.kind != 0 && next == 0)
			op.kind = 0;
		if (storage_txn_run(s, mixed_fn, &op, false, &err) != 0) {
			a->failures++;
			terr_clear(&err);
		}
	}
	storage_session_close(s);
	return NULL;
}

/* Inserts, deletes and growing updates from four threads on one capped
 * collection: no deadlock, no error, and at the end the limits hold, the
 * _id index has exactly the documents kept, natural order ascends. */
static void
test_concurrent_mixed(void)
{
	storage_t *st = open_fresh("capped_mixed");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	pthread_t th[WRITERS];
	mixed_arg_t ma[WRITERS];
	int64_t count, size, keys = 0;
	storage_cursor_t *cur = NULL;
	recid_t rid;
	const uint8_t *k;
	size_t klen;
	char *ids;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "mixed", 3000, 40);
	for (int w = 0; w < WRITERS; w++) {
		ma[w] = (mixed_arg_t){.st = st, .c = c, .w = w};
		pthread_create(&th[w], NULL, mixed_main, &ma[w]);
	}
	for (int w = 0; w < WRITERS; w++) {
		pthread_join(th[w], NULL);
		TT_EQ_INT(ma[w].failures, 0);
	}
	/* one more insert applies the limits to what updates grew */
	TT_EQ_INT(insert_one(s, c, 999999, 0, 0, &err), 0);
	storage_coll_stats(st, s, c, &count, &size, NULL, &err);
	TT_ASSERT(count <= 40);
	TT_ASSERT(size <= 3000);
	ids = ids_of(s, c);
	bson_free(ids);
	TT_EQ_INT(storage_index_scan_open(s, c, &c->indexes[0], NULL, 0, true, NULL, 0, true, false, &cur, &err), 0);
	while (storage_cursor_next(cur, &rid, NULL, &k, &klen, &err) == 1)
		keys++;
	storage_cursor_close(cur);
	TT_EQ_INT(keys, count);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

static void
test_position_lost(void)
{
	storage_t *st = open_fresh("capped_lost");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	storage_cursor_t *cur = NULL;
	bson_t doc;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "lost", 1 << 20, 3);
	for (int i = 0; i < 3; i++)
		TT_EQ_INT(insert_one(s, c, i, 0, 0, &err), 0);
	/* a plain scan too: a capped scan never skips what capping removed */
	TT_EQ_INT(storage_scan_open(s, c, false, &cur, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(storage_cursor_save(cur, &err), 0);
	for (int i = 3; i < 6; i++)
		TT_EQ_INT(insert_one(s, c, i, 0, 0, &err), 0);
	TT_EQ_INT(storage_cursor_restore(cur, s, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), -1);
	TT_EQ_INT(err.code, STORAGE_CODE_CAPPED_POSITION_LOST);
	TT_ASSERT(strstr(err.msg, "CollectionScan died due to position in capped collection being deleted") != NULL);
	terr_clear(&err);
	storage_cursor_close(cur);
	/* a tailable scan at its end that still has its place goes on */
	TT_EQ_INT(storage_scan_open(s, c, false, &cur, &err), 0);
	storage_cursor_set_tailable(cur);
	for (int i = 0; i < 3; i++)
		TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 0);
	TT_EQ_INT(storage_cursor_save(cur, &err), 0);
	TT_EQ_INT(insert_one(s, c, 6, 0, 0, &err), 0);
	TT_EQ_INT(storage_cursor_restore(cur, s, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 1);
	{
		bson_iter_t it;
		TT_ASSERT(bson_iter_init_find(&it, &doc, "_id") && bson_iter_as_int64(&it) == 6);
	}
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 0);
	/* ... until capping overtakes it */
	for (int i = 7; i < 11; i++)
		TT_EQ_INT(insert_one(s, c, i, 0, 0, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), -1);
	TT_EQ_INT(err.code, STORAGE_CODE_CAPPED_POSITION_LOST);
	terr_clear(&err);
	storage_cursor_close(cur);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* ---- the insert notifier --------------------------------------------------- */

typedef struct waiter {
	storage_coll_t *c;
	uint64_t seen;
	int64_t deadline_us;
	int rc;
	int64_t woke_us;
} waiter_t;

static void *
waiter_main(void *arg)
{
	waiter_t *w = arg;

	w->rc = storage_coll_wait_insert(w->c, w->seen, w->deadline_us);
	w->woke_us = mono_us();
	return NULL;
}

static void
test_notifier(void)
{
	storage_t *st = open_fresh("capped_notify");
	terr_t err = TERR_INIT;
	storage_session_t *s;
	storage_coll_t *c;
	pthread_t th;
	waiter_t w;
	int64_t t0;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	c = make_capped(st, s, "n", 1 << 20, 0);
	/* no insert: returns 0 at the deadline */
	t0 = mono_us();
	TT_EQ_INT(storage_coll_wait_insert(c, storage_coll_insert_seq(c), t0 + 100000), 0);
	TT_ASSERT(mono_us() - t0 >= 95000);
	/* an insert already committed: at once */
	w.seen = storage_coll_insert_seq(c);
	TT_EQ_INT(insert_one(s, c, 1, 0, 0, &err), 0);
	TT_EQ_INT(storage_coll_wait_insert(c, w.seen, 0), 1);
	/* a waiter is woken by the commit, long before its deadline */
	w.c = c;
	w.seen = storage_coll_insert_seq(c);
	t0 = mono_us();
	w.deadline_us = t0 + 10000000;
	pthread_create(&th, NULL, waiter_main, &w);
	usleep(100000);
	TT_EQ_INT(insert_one(s, c, 2, 0, 0, &err), 0);
	pthread_join(th, NULL);
	TT_EQ_INT(w.rc, 1);
	TT_ASSERT(w.woke_us - t0 >= 90000);
	TT_ASSERT(w.woke_us - t0 < 5000000);
	/* a rolled-back insert wakes nobody */
	w.seen = storage_coll_insert_seq(c);
	{
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT64(&d, "_id", 3);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, &err), 0);
		storage_txn_rollback(s);
		bson_destroy(&d);
	}
	TT_EQ_INT(storage_coll_wait_insert(c, w.seen, mono_us() + 50000), 0);
	/* storage_coll_wake (a drop) wakes a waiter too */
	w.seen = storage_coll_insert_seq(c);
	t0 = mono_us();
	w.deadline_us = t0 + 10000000;
	pthread_create(&th, NULL, waiter_main, &w);
	usleep(50000);
	storage_coll_wake(c);
	pthread_join(th, NULL);
	TT_EQ_INT(w.rc, 1);
	TT_ASSERT(w.woke_us - t0 < 5000000);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* ---- commands ------------------------------------------------------------- */

static tamga_t *db;

static void
ok(const char *cmd)
{
	int rc;
	bson_t *r = tt_run_sq(db, "t", cmd, &rc);

	if (rc != 0)
		TT_FAIL_("%s -> %d %s", cmd, (int)tt_get_i64(r, "code"), tt_get_str(r, "errmsg"));
	tt_free_reply(r);
}

static void
fails(const char *cmd, int code, const char *msg)
{
	int rc;
	bson_t *r = tt_run_sq(db, "t", cmd, &rc);

	if (rc == 0 || tt_get_i64(r, "code") != code || (msg != NULL && strcmp(tt_get_str(r, "errmsg"), msg) != 0))
		TT_FAIL_("%s -> rc %d code %d '%s', want %d '%s'", cmd, rc, (int)tt_get_i64(r, "code"),
		    tt_get_str(r, "errmsg"), code, msg ? msg : "");
	tt_free_reply(r);
}

/* The options listCollections shows for name, as JSON. */
static char *
options_of(const char *name)
{
	char cmd[200];
	char *out;
	int rc;
	bson_t *r;
	bson_iter_t f;

	snprintf(cmd, sizeof(cmd), "{'listCollections': 1, 'filter': {'name': '%s'}}", name);
	r = tt_run_sq(db, "t", cmd, &rc);
	if (rc == 0 && tt_get(r, "cursor.firstBatch.0.options", &f) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
		const uint8_t *d;
		uint32_t l;
		bson_t o;
		bson_iter_document(&f, &l, &d);
		bson_init_static(&o, d, l);
		out = bson_as_relaxed_extended_json(&o, NULL);
	} else {
		out = bson_strdup("none");
	}
	tt_free_reply(r);
	return out;
}

static void
expect_options(const char *name, const char *want)
{
	char *o = options_of(name);

	TT_EQ_STR(o, want);
	bson_free(o);
}

static void
test_create_options(void)
{
	ok("{'create': 'a', 'capped': true, 'size': 4096, 'max': 5}");
	expect_options("a", "{ \"capped\" : true, \"size\" : 4096, \"max\" : 5 }");
	/* kept as given: no rounding to 256 since mongod's relaxed capped sizes */
	ok("{'create': 'b', 'size': 1000, 'capped': true}");
	expect_options("b", "{ \"capped\" : true, \"size\" : 1000 }");
	/* the same again is fine, other options are not */
	ok("{'create': 'a', 'capped': true, 'size': 4096, 'max': 5}");
	fails("{'create': 'a', 'capped': true, 'size': 8192}", 48, NULL);
	fails("{'create': 'x', 'capped': true}", 72, "the 'size' field is required when 'capped' is true");
	fails("{'create': 'x', 'max': 3}", 72,
	    "the 'capped' field needs to be true when either the 'size' or 'max' fields are present");
	/* mongod 8.2's answers: BadValue, the range before the capped rules */
	fails("{'create': 'x', 'capped': true, 'size': 0}", 2, "BSON field 'size' value must be >= 1, actual value '0'");
	fails("{'create': 'x', 'size': 0}", 2, "BSON field 'size' value must be >= 1, actual value '0'");
	fails("{'create': 'x', 'capped': true, 'size': 0.5}", 2, "BSON field 'size' value must be >= 1, actual value '0'");
	fails("{'create': 'x', 'capped': true, 'size': 1.0e300}", 2,
	    "BSON field 'size' value must be <= 1125899906842624, actual value '9223372036854775807'");
	fails("{'create': 'x', 'capped': true, 'size': 4096, 'max': 2147483648}", 2,
	    "BSON field 'max' value must be < 2147483648, actual value '2147483648'");
	fails("{'create': 'x', 'capped': true, 'max': 2147483648}", 2,
	    "BSON field 'max' value must be < 2147483648, actual value '2147483648'");
	fails("{'create': 'x', 'capped': true, 'size': 'big'}", 14,
	    "BSON field 'create.size' is the wrong type 'string', expected types '[double, int, long, decimal]'");
	/* doubles are truncated, max <= 0 is none (2^31 - 1), a null is absent */
	ok("{'create': 'd1', 'capped': 1, 'size': 1000.7, 'max': 3.7}");
	expect_options("d1", "{ \"capped\" : true, \"size\" : 1000, \"max\" : 3 }");
	ok("{'create': 'd2', 'capped': true, 'size': 1000, 'max': -5}");
	expect_options("d2", "{ \"capped\" : true, \"size\" : 1000, \"max\" : 2147483647 }");
	ok("{'create': 'd2', 'capped': true, 'size': 1000.9, 'max': -7}");
	ok("{'create': 'd3', 'capped': true, 'size': 10, 'max': null}");
	expect_options("d3", "{ \"capped\" : true, \"size\" : 10 }");
	ok("{'create': 'd4', 'capped': true, 'size': {'$numberLong': '1125899906842624'}}");
	expect_options("d4", "{ \"capped\" : true, \"size\" : 1125899906842624 }");
	ok("{'create': 'd5', 'capped': true, 'size': {'$numberDecimal': '2048.9'}}");
	expect_options("d5", "{ \"capped\" : true, \"size\" : 2048 }");
	ok("{'create': 'x', 'capped': false}");
	expect_options("x", "{ }");
	/* collStats */
	{
		int rc;
		bson_t *r = tt_run_sq(db, "t", "{'collStats': 'a'}", &rc);
		TT_EQ_INT(rc, 0);
		TT_EQ_INT(tt_get_i64(r, "max"), 5);
		TT_EQ_INT(tt_get_i64(r, "maxSize"), 4096);
		tt_free_reply(r);
		r = tt_run_sq(db, "t", "{'collStats': 'x'}", &rc);
		TT_ASSERT(tt_get_i64(r, "max") == -999);
		tt_free_reply(r);
	}
}

static void
test_coll_mod(void)
{
	ok("{'create': 'cm', 'capped': true, 'size': 4096}");
	ok("{'collMod': 'cm', 'cappedMax': 2, 'cappedSize': 10000}");
	expect_options("cm", "{ \"capped\" : true, \"size\" : 10000, \"max\" : 2 }");
	ok("{'insert': 'cm', 'documents': [{'_id': 1}, {'_id': 2}, {'_id': 3}]}");
	{
		char *b = tt_batch_sq(db, "t", "{'find': 'cm'}");
		TT_EQ_STR(b, "[ { \"_id\" : 2 }, { \"_id\" : 3 } ]");
		bson_free(b);
	}
	/* one insert command past the limit: capped within its own batch */
	ok("{'create': 'batch', 'capped': true, 'size': 4096, 'max': 3}");
	ok("{'insert': 'batch', 'documents': [{'_id': 1}, {'_id': 2}, {'_id': 3}, {'_id': 4}, {'_id': 5}, {'_id': 6}]}");
	{
		char *b = tt_batch_sq(db, "t", "{'find': 'batch'}");
		TT_EQ_STR(b, "[ { \"_id\" : 4 }, { \"_id\" : 5 }, { \"_id\" : 6 } ]");
		bson_free(b);
		b = tt_batch_sq(db, "t", "{'find': 'batch', 'filter': {'_id': 2}}");
		TT_EQ_STR(b, "[ ]");
		bson_free(b);
	}
	/* a rename keeps it capped */
	{
		int rc;
		bson_t *r = tt_run_sq(db, "admin", "{'renameCollection': 't.batch', 'to': 't.batch2'}", &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
	}
	expect_options("batch2", "{ \"capped\" : true, \"size\" : 4096, \"max\" : 3 }");
	ok("{'insert': 'batch2', 'documents': [{'_id': 7}]}");
	{
		char *b = tt_batch_sq(db, "t", "{'find': 'batch2'}");
		TT_EQ_STR(b, "[ { \"_id\" : 5 }, { \"_id\" : 6 }, { \"_id\" : 7 } ]");
		bson_free(b);
	}
	ok("{'collMod': 'cm', 'cappedMax': 0}");
	expect_options("cm", "{ \"capped\" : true, \"size\" : 10000, \"max\" : 2147483647 }");
	ok("{'create': 'plain'}");
	fails("{'collMod': 'plain', 'cappedSize': 4096}", 72, "Collection must be capped.");
	fails("{'collMod': 'plain', 'cappedMax': 5}", 72, "Collection must be capped.");
	fails("{'collMod': 'plain', 'cappedSize': 0}", 2, "BSON field 'cappedSize' value must be >= 1, actual value '0'");
	fails("{'collMod': 'cm', 'cappedSize': 0}", 2, "BSON field 'cappedSize' value must be >= 1, actual value '0'");
	fails("{'collMod': 'cm', 'cappedMax': 2147483648}", 2,
	    "BSON field 'cappedMax' value must be < 2147483648, actual value '2147483648'");
	fails("{'collMod': 'cm', 'cappedSize': 'x'}", 14,
	    "BSON field 'collMod.cappedSize' is the wrong type 'string', expected types '[double, int, long, decimal]'");
	ok("{'collMod': 'cm', 'cappedSize': 7000.9}");
	ok("{'collMod': 'cm', 'cappedSize': null}");
	expect_options("cm", "{ \"capped\" : true, \"size\" : 7000, \"max\" : 2147483647 }");
}

static void
test_convert_clone(void)
{
	ok("{'insert': 'src', 'documents': [{'_id': 1, 'a': 1}, {'_id': 2}, {'_id': 3}]}");
	ok("{'createIndexes': 'src', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}");
	ok("{'cloneCollectionAsCapped': 'src', 'toCollection': 'dst', 'size': 5000}");
	expect_options("dst", "{ \"capped\" : true, \"size\" : 5000 }");
	{
		char *b = tt_batch_sq(db, "t", "{'find': 'dst'}");
		TT_EQ_STR(b, "[ { \"_id\" : 1, \"a\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 3 } ]");
		bson_free(b);
		b = tt_batch_sq(db, "t", "{'listIndexes': 'dst'}");
		TT_ASSERT(strstr(b, "a_1") == NULL);
		bson_free(b);
	}
	fails("{'cloneCollectionAsCapped': 'src', 'toCollection': 'dst', 'size': 5000}", 48,
	    "cloneCollectionAsCapped failed - destination collection t.dst already exists. source collection: t.src");
	fails("{'cloneCollectionAsCapped': 'nope', 'toCollection': 'd2', 'size': 5000}", 26,
	    "source collection t.nope does not exist");
	fails("{'cloneCollectionAsCapped': 'src', 'toCollection': 'd2'}", 40414, NULL);
	fails("{'cloneCollectionAsCapped': 'src', 'size': 4096}", 40414, NULL);
	/* convertToCapped: the documents, the new options, only _id_ */
	ok("{'convertToCapped': 'src', 'size': 4096}");
	expect_options("src", "{ \"capped\" : true, \"size\" : 4096 }");
	{
		char *b = tt_batch_sq(db, "t", "{'find': 'src'}");
		TT_EQ_STR(b, "[ { \"_id\" : 1, \"a\" : 1 }, { \"_id\" : 2 }, { \"_id\" : 3 } ]");
		bson_free(b);
		b = tt_batch_sq(db, "t", "{'listIndexes': 'src'}");
		TT_ASSERT(strstr(b, "a_1") == NULL);
		bson_free(b);
		b = tt_batch_sq(db, "t", "{'listCollections': 1, 'filter': {'name': {'$regex': 'convertToCapped'}}}");
		TT_EQ_STR(b, "[ ]");
		bson_free(b);
	}
	fails("{'convertToCapped': 'nope', 'size': 4096}", 26, "source collection t.nope does not exist");
	{
		int rc;
		bson_t *r = tt_run_sq(db, "nodb", "{'convertToCapped': 'x', 'size': 4096}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), 26);
		TT_EQ_STR(tt_get_str(r, "errmsg"), "database nodb not found");
		tt_free_reply(r);
	}
	ok("{'create': 'vw', 'viewOn': 'src', 'pipeline': []}");
	fails("{'convertToCapped': 'vw', 'size': 4096}", 166, "cloneCollectionAsCapped not supported for views: t.vw");
	fails("{'cloneCollectionAsCapped': 'vw', 'toCollection': 'vw2', 'size': 4096}", 166,
	    "cloneCollectionAsCapped not supported for views: t.vw");
	fails("{'convertToCapped': 'src'}", 40414, "BSON field 'convertToCapped.size' is missing but a required field");
	/* converting keeps only what fits */
	ok("{'insert': 'many', 'documents': [{'_id': 1}, {'_id': 2}, {'_id': 3}, {'_id': 4}]}");
	ok("{'create': 'cap3', 'capped': true, 'size': 4096, 'max': 2}");
	ok("{'cloneCollectionAsCapped': 'cap3', 'toCollection': 'cap3b', 'size': 4096}");
	expect_options("cap3b", "{ \"capped\" : true, \"size\" : 4096, \"max\" : 2 }");
}

static void
test_tailable_rules(void)
{
	int rc;
	bson_t *r;
	int64_t id;
	bson_t cmd;

	ok("{'create': 'tc', 'capped': true, 'size': 100000}");
	ok("{'create': 'tp'}");
	fails("{'find': 'tp', 'tailable': true}", 2,
	    "error processing query: ns=t.tp planner returned error :: caused by :: tailable cursor requested on non capped collection");
	fails("{'find': 'tc', 'awaitData': true}", 9, "Cannot set 'awaitData' without also setting 'tailable'");
	fails("{'find': 'tc', 'tailable': true, 'sort': {'_id': 1}}", 2,
	    "cannot use tailable option with a sort other than {$natural: 1}");
	fails("{'find': 'tc', 'tailable': true, 'sort': {'$natural': -1}}", 2, NULL);
	fails("{'find': 'tc', 'tailable': true, 'singleBatch': true}", 2,
	    "cannot use tailable option with the 'singleBatch' option");
	fails("{'aggregate': 'tp', 'pipeline': [{'$out': 'tc'}], 'cursor': {}}", 17152,
	    "Executor error during aggregate command on namespace: t.tp :: caused by :: namespace 't.tc' is capped so it can't be used for $out");
	/* an empty capped collection: no cursor (mongod's SERVER-13955) */
	r = tt_run_sq(db, "t", "{'find': 'tc', 'tailable': true, 'batchSize': 0}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	tt_free_reply(r);
	/* with a document, the cursor stays open at the end */
	ok("{'insert': 'tc', 'documents': [{'_id': 0}]}");
	r = tt_run_sq(db, "t", "{'find': 'tc', 'tailable': true, 'sort': {'$natural': 1}}", &rc);
	TT_EQ_INT(rc, 0);
	id = tt_get_i64(r, "cursor.id");
	TT_ASSERT(id != 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 0);
	tt_free_reply(r);
	ok("{'insert': 'tc', 'documents': [{'_id': 1}, {'_id': 2}]}");
	bson_init(&cmd);
	BSON_APPEND_INT64(&cmd, "getMore", id);
	BSON_APPEND_UTF8(&cmd, "collection", "tc");
	r = tt_run_bson(db, "t", &cmd, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.1._id"), 2);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), id);
	tt_free_reply(r);
	/* maxTimeMS on a tailable cursor without awaitData */
	BSON_APPEND_INT32(&cmd, "maxTimeMS", 10);
	r = tt_run_bson(db, "t", &cmd, &rc);
	TT_ASSERT(rc != 0);
	TT_EQ_INT(tt_get_i64(r, "code"), 2);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "cannot set maxTimeMS on getMore command for a non-awaitData cursor");
	tt_free_reply(r);
	bson_destroy(&cmd);
	/* awaitData: an empty getMore waits maxTimeMS, then answers an empty batch */
	r = tt_run_sq(db, "t", "{'find': 'tc', 'tailable': true, 'awaitData': true}", &rc);
	TT_EQ_INT(rc, 0);
	id = tt_get_i64(r, "cursor.id");
	tt_free_reply(r);
	bson_init(&cmd);
	BSON_APPEND_INT64(&cmd, "getMore", id);
	BSON_APPEND_UTF8(&cmd, "collection", "tc");
	BSON_APPEND_INT32(&cmd, "maxTimeMS", 150);
	{
		int64_t t0 = mono_us();
		r = tt_run_bson(db, "t", &cmd, &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(mono_us() - t0 >= 140000);
		TT_ASSERT(tt_get(r, "cursor.nextBatch", &(bson_iter_t){0}));
		TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.0._id"), -999);
		TT_EQ_INT(tt_get_i64(r, "cursor.id"), id);
		tt_free_reply(r);
	}
	bson_destroy(&cmd);
	/* without maxTimeMS an awaitData getMore waits mongod's 1 second */
	bson_init(&cmd);
	BSON_APPEND_INT64(&cmd, "getMore", id);
	BSON_APPEND_UTF8(&cmd, "collection", "tc");
	{
		int64_t t0 = mono_us();
		r = tt_run_bson(db, "t", &cmd, &rc);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(mono_us() - t0 >= 950000);
		TT_ASSERT(mono_us() - t0 < 5000000);
		TT_EQ_INT(tt_get_i64(r, "cursor.id"), id);
		tt_free_reply(r);
	}
	bson_destroy(&cmd);
	/* a limit ends a tailable cursor, the end of the data does not */
	r = tt_run_sq(db, "t", "{'find': 'tc', 'tailable': true, 'limit': 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 0);
	tt_free_reply(r);
	/* explain plans a tailable find as it runs: a collection scan */
	ok("{'createIndexes': 'tc', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}");
	r = tt_run_sq(db, "t", "{'explain': {'find': 'tc', 'filter': {'a': 1}, 'tailable': true}, 'verbosity': 'queryPlanner'}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "queryPlanner.winningPlan.stage"), "COLLSCAN");
	tt_free_reply(r);
	fails("{'explain': {'find': 'tp', 'tailable': true}}", 2, NULL);
	/* a missing collection: no documents, no cursor (mongod's EOF plan) */
	r = tt_run_sq(db, "t", "{'find': 'none', 'tailable': true}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.id"), 0);
	tt_free_reply(r);
	/* deletes and updates that grow a document are allowed (mongod 5.0+) */
	ok("{'update': 'tc', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'big': 'xxxxxxxxxxxxxxxxxxxxxxxxxx'}}}]}");
	ok("{'delete': 'tc', 'deletes': [{'q': {'_id': 2}, 'limit': 1}]}");
}

static void
test_commands(void)
{
	char *d = tt_tmpdir("capped_cmds");

	db = tt_open_new(d);
	TT_ASSERT(db != NULL);
	if (db == NULL)
		return;
	test_create_options();
	test_coll_mod();
	test_convert_clone();
	test_tailable_rules();
	tt_close_rm(db, d);
	db = NULL;
}

int
main(void)
{
	TT_RUN(test_max_limit);
	TT_RUN(test_size_limit);
	TT_RUN(test_oplog_exempt);
	TT_RUN(test_concurrent_tail);
	TT_RUN(test_concurrent_limits);
	TT_RUN(test_concurrent_mixed);
	TT_RUN(test_position_lost);
	TT_RUN(test_notifier);
	TT_RUN(test_commands);
	return tt_finish();
}
