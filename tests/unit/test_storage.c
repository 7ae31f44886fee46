/*
 * test_storage.c -- the storage layer in one process: catalog (create, drop,
 * rename, list, namespace rules), documents (insert, get, find by _id,
 * update, delete, sizes), the duplicate-_id error, scans and index scans
 * with save/restore across sessions, write-conflict retry on two threads,
 * reopening a folder, and updates written as byte changes (WT modify) on
 * plain and clustered tables (committed, rolled back, after a reopen).
 *
 * Crash and multi-process behaviour is in test_storage_durability.c.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdatomic.h>
#include <wiredtiger.h>

#include <wiredtiger.h>

#include "tt.h"
#include "storage/storage.h"
#include "bson/damage.h"
#include "storage/storage_private.h"
#include "bson/keystring.h"

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

/* Insert one JSON document in its own transaction; returns the rc. */
static int
insert_json(storage_session_t *s, storage_coll_t *c, const char *json, recid_t *rid, terr_t *err)
{
	bson_t *doc = tt_json(json);
	int rc = storage_txn_begin(s, err);

	if (rc == 0)
		rc = storage_doc_insert(s, c, doc, rid, err);
	if (rc == 0)
		rc = storage_txn_commit(s, false, err);
	else
		storage_txn_rollback(s);
	bson_destroy(doc);
	return rc;
}

static void
test_open_missing_folder(void)
{
	storage_options_t o = {0};
	terr_t err = TERR_INIT;
	storage_t *st = NULL;
	char *base = tt_tmpdir("missing");
	char *path = bson_strdup_printf("%s/a/b", base);
	char *want = bson_strdup_printf("Data directory %s not found.", path);

	TT_ASSERT(storage_open(path, &o, &st, &err) != 0);
	TT_EQ_INT(err.code, 29);
	TT_EQ_STR(err.msg, want);
	TT_ASSERT(st == NULL);
	terr_clear(&err);
	o.create = true;
	TT_EQ_INT(storage_open(path, &o, &st, &err), 0);
	TT_ASSERT(st != NULL);
	storage_close(st);
	tt_rmdir(base);
	bson_free(want);
	bson_free(path);
	bson_free(base);
}

static void
test_catalog(void)
{
	storage_t *st = open_fresh("catalog");
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL, **colls = NULL;
	char **names = NULL;
	int n = 0;
	bson_t *opts = tt_json("{\"validator\": {\"a\": {\"$type\": \"int\"}}, \"validationLevel\": \"strict\"}");

	TT_EQ_INT(storage_coll_create(st, NULL, "db1", "a", opts, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "db1", "b", NULL, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "db2", "c", NULL, &err), 0);
	TT_ASSERT(storage_coll_create(st, NULL, "db1", "a", NULL, &err) != 0);
	TT_EQ_INT(err.code, 48);
	TT_EQ_STR(err.msg, "Collection db1.a already exists.");
	terr_clear(&err);

	/* namespace rules */
	TT_ASSERT(storage_coll_create(st, NULL, "db1", "a$b", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_EQ_STR(err.msg, "Invalid collection name: a$b");
	TT_ASSERT(storage_coll_create(st, NULL, "bad db", "x", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_EQ_STR(err.msg, "Invalid namespace: bad db.x");
	TT_ASSERT(storage_coll_create(st, NULL, "a.b", "x", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_ASSERT(storage_coll_create(st, NULL, "db1", "", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_ASSERT(storage_coll_create(st, NULL, "", "x", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_ASSERT(storage_coll_create(st, NULL, "db1", "system.foo", NULL, &err) != 0);
	TT_EQ_INT(err.code, 73);
	TT_EQ_STR(err.msg, "Invalid system namespace: db1.system.foo");
	TT_EQ_INT(storage_ns_check("db1", "system.views", &err), 0);
	{
		char longname[300];
		memset(longname, 'x', 260);
		longname[260] = '\0';
		TT_ASSERT(storage_coll_create(st, NULL, "db1", longname, NULL, &err) != 0);
		TT_EQ_INT(err.code, 73);
		TT_ASSERT(strncmp(err.msg, "Fully qualified namespace is too long. Namespace: db1.xxx", 56) == 0);
		TT_ASSERT(strstr(err.msg, " Max: 255") != NULL);
	}
	terr_clear(&err);

	/* get, options, _id index */
	TT_EQ_INT(storage_coll_get(st, "db1", "a", &c, &err), 0);
	TT_EQ_STR(c->ns, "db1.a");
	TT_EQ_STR(c->db, "db1");
	TT_EQ_STR(c->name, "a");
	TT_EQ_JSON(c->options, "{ \"validator\" : { \"a\" : { \"$type\" : \"int\" } }, \"validationLevel\" : \"strict\" }");
	TT_EQ_INT(c->nindexes, 1);
	TT_EQ_STR(c->indexes[0].name, "_id_");
	TT_ASSERT(c->indexes[0].is_id && c->indexes[0].unique);
	TT_EQ_JSON(c->indexes[0].spec, "{ \"v\" : 2, \"key\" : { \"_id\" : 1 }, \"name\" : \"_id_\" }");
	TT_EQ_JSON(c->indexes[0].key, "{ \"_id\" : 1 }");
	TT_ASSERT(strncmp(c->ident, "table:collection-", 17) == 0);
	TT_ASSERT(strncmp(c->indexes[0].ident, "table:index-", 12) == 0);
	TT_EQ_INT(c->uuid[6] >> 4, 4);
	storage_coll_release(c);
	TT_EQ_INT(storage_coll_get(st, "db1", "zz", &c, &err), 26);

	/* set_options publishes a new descriptor; the old one stays intact */
	{
		storage_coll_t *c2 = NULL;
		bson_t *o2 = tt_json("{\"validationLevel\": \"moderate\"}");
		TT_EQ_INT(storage_coll_get(st, "db1", "a", &c, &err), 0);
		TT_EQ_INT(storage_coll_set_options(st, NULL, "db1", "a", o2, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "db1", "a", &c2, &err), 0);
		TT_EQ_JSON(c2->options, "{ \"validationLevel\" : \"moderate\" }");
		TT_EQ_JSON(c->options, "{ \"validator\" : { \"a\" : { \"$type\" : \"int\" } }, \"validationLevel\" : \"strict\" }");
		TT_ASSERT(c2->version > c->version);
		TT_ASSERT(memcmp(c2->uuid, c->uuid, 16) == 0);
		storage_coll_release(c2);
		storage_coll_release(c);
		bson_destroy(o2);
	}

	/* listing */
	TT_EQ_INT(storage_list_dbs(st, &names, &n, &err), 0);
	TT_EQ_INT(n, 2);
	if (n == 2) {
		TT_EQ_STR(names[0], "db1");
		TT_EQ_STR(names[1], "db2");
	}
	storage_free_names(names, n);
	TT_EQ_INT(storage_list_colls(st, "db1", &colls, &n, &err), 0);
	TT_EQ_INT(n, 2);
	if (n == 2) {
		TT_EQ_STR(colls[0]->name, "a");
		TT_EQ_STR(colls[1]->name, "b");
	}
	for (int i = 0; i < n; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);

	/* drop */
	TT_EQ_INT(storage_coll_drop(st, NULL, "db1", "b", &err), 0);
	TT_ASSERT(storage_coll_get(st, "db1", "b", &c, &err) == 26);
	TT_ASSERT(storage_coll_drop(st, NULL, "db1", "b", &err) != 0);
	TT_EQ_INT(err.code, 26);
	terr_clear(&err);

	/* rename */
	TT_ASSERT(storage_coll_rename(st, NULL, "db1", "a", "db2", "c", false, &err) != 0);
	TT_EQ_INT(err.code, 48);
	TT_EQ_STR(err.msg, "target namespace exists");
	TT_ASSERT(storage_coll_rename(st, NULL, "db1", "nope", "db2", "q", false, &err) != 0);
	TT_EQ_INT(err.code, 26);
	TT_EQ_INT(storage_coll_rename(st, NULL, "db1", "a", "db2", "c", true, &err), 0);
	TT_ASSERT(storage_coll_get(st, "db1", "a", &c, &err) == 26);
	TT_EQ_INT(storage_coll_get(st, "db2", "c", &c, &err), 0);
	TT_EQ_JSON(c->options, "{ \"validationLevel\" : \"moderate\" }");
	storage_coll_release(c);
	TT_EQ_INT(storage_list_dbs(st, &names, &n, &err), 0);
	TT_EQ_INT(n, 1);
	storage_free_names(names, n);

	/* db drop */
	TT_EQ_INT(storage_coll_create(st, NULL, "db2", "d", NULL, &err), 0);
	TT_EQ_INT(storage_db_drop(st, NULL, "db2", &err), 0);
	TT_EQ_INT(storage_list_dbs(st, &names, &n, &err), 0);
	TT_EQ_INT(n, 0);
	storage_free_names(names, n);
	TT_EQ_INT(storage_db_drop(st, NULL, "nothing", &err), 0);

	bson_destroy(opts);
	terr_clear(&err);
	close_and_clean(st);
}

static int cache_frees;
static void
count_free(void *p)
{
	cache_frees++;
	bson_free(p);
}

static void
test_cache_slot(void)
{
	storage_t *st = open_fresh("cache");
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	void *a = bson_malloc(8), *b = bson_malloc(8);

	TT_EQ_INT(storage_coll_create(st, NULL, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_ASSERT(storage_coll_cache_set(c, a, count_free) == a);
	TT_ASSERT(storage_coll_cache_set(c, b, count_free) == a);
	bson_free(b);
	storage_coll_release(c);
	TT_EQ_INT(cache_frees, 0);                   /* the catalog still holds it */
	TT_EQ_INT(storage_coll_drop(st, NULL, "d", "c", &err), 0);
	TT_EQ_INT(cache_frees, 1);
	close_and_clean(st);
}

/* The per-thread caches of issue 23 seen from another thread: a worker's
 * catalog lookup cache and session stash must follow a drop and re-create
 * made by another thread (the new descriptor, the stashed session's cursor
 * on the dropped table closed), and closing the storage while the worker
 * still lives must take its stashed session and cached descriptors (LSan
 * reports them otherwise). */
typedef struct {
	storage_t *st;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int step;                 /* 1: worker cached; 2: main re-created; 3: worker checked; 4: closed */
	uint8_t uuid_seen[16];
	int rc;
} cache_thread_t;

static void
cache_wait(cache_thread_t *t, int step)
{
	pthread_mutex_lock(&t->mu);
	while (t->step < step)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
}

static void
cache_set(cache_thread_t *t, int step)
{
	pthread_mutex_lock(&t->mu);
	t->step = step;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

static void *
cache_worker(void *arg)
{
	cache_thread_t *t = arg;
	storage_coll_t *c = NULL;
	storage_session_t *s;
	terr_t err = TERR_INIT;
	bson_t doc;

	/* a lookup (cached) and a read through a session (a cached cursor on
	 * the table), the session then stashed by this thread */
	t->rc |= storage_coll_get(t->st, "d", "c", &c, &err);
	s = storage_session_pool_get(t->st, &err);
	t->rc |= s == NULL;
	if (s != NULL && c != NULL) {
		bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
		recid_t rid;
		int rc = storage_doc_find_id(s, c, &id, &rid, &doc, &err);
		t->rc |= rc != 0;       /* 0: found */
	}
	storage_coll_release(c);
	storage_session_pool_put(t->st, s);
	cache_set(t, 1);
	cache_wait(t, 2);
	c = NULL;
	t->rc |= storage_coll_get(t->st, "d", "c", &c, &err);
	if (c != NULL)
		memcpy(t->uuid_seen, c->uuid, 16);
	storage_coll_release(c);
	s = storage_session_pool_get(t->st, &err);
	storage_session_pool_put(t->st, s);
	cache_set(t, 3);
	cache_wait(t, 4);          /* the storage closes while this thread lives */
	terr_clear(&err);
	return NULL;
}

static void
test_thread_caches(void)
{
	storage_t *st = open_fresh("tcache");
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	storage_session_t *s;
	cache_thread_t t = {.st = st};
	pthread_t th;
	recid_t rid;

	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	TT_EQ_INT(storage_coll_create(st, NULL, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	s = storage_session_pool_get(st, &err);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1}", &rid, &err), 0);
	storage_session_pool_put(st, s);
	storage_coll_release(c);
	pthread_create(&th, NULL, cache_worker, &t);
	cache_wait(&t, 1);
	/* the worker's stashed session holds a cursor on the table: the drop
	 * must close it (else WiredTiger refuses the drop: EBUSY) */
	TT_EQ_INT(storage_coll_drop(st, NULL, "d", "c", &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "d", "c", NULL, &err), 0);
	c = NULL;
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	cache_set(&t, 2);
	cache_wait(&t, 3);
	TT_EQ_INT(t.rc, 0);
	TT_ASSERT(c != NULL && memcmp(t.uuid_seen, c->uuid, 16) == 0);   /* the new collection */
	storage_coll_release(c);
	close_and_clean(st);
	cache_set(&t, 4);
	pthread_join(th, NULL);
	pthread_mutex_destroy(&t.mu);
	pthread_cond_destroy(&t.cv);
	terr_clear(&err);
}

static void
test_documents(void)
{
	storage_t *st = open_fresh("docs");
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	recid_t r1 = 0, r2 = 0, rid = 0;
	bson_t doc;
	bson_value_t idv;
	int64_t count, size, ssize;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);

	/* outside a transaction: refused */
	{
		bson_t *d = tt_json("{\"_id\": 0}");
		TT_ASSERT(storage_doc_insert(s, c, d, NULL, &err) != 0);
		terr_clear(&err);
		bson_destroy(d);
	}
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1, \"x\": \"one\"}", &r1, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": \"two\", \"x\": 2}", &r2, &err), 0);
	TT_ASSERT(r2 > r1);

	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_doc_get(s, c, r1, &doc, &err), 0);
	TT_EQ_JSON(&doc, "{ \"_id\" : 1, \"x\" : \"one\" }");
	TT_EQ_INT(storage_doc_get(s, c, 9999, &doc, &err), 1);
	idv.value_type = BSON_TYPE_DOUBLE;   /* 1.0 finds _id 1 */
	idv.value.v_double = 1.0;
	TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 0);
	TT_EQ_INT(rid, r1);
	idv.value_type = BSON_TYPE_UTF8;
	idv.value.v_utf8.str = "two";
	idv.value.v_utf8.len = 3;
	TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 0);
	TT_EQ_INT(rid, r2);
	TT_EQ_JSON(&doc, "{ \"_id\" : \"two\", \"x\" : 2 }");
	idv.value.v_utf8.str = "three";
	idv.value.v_utf8.len = 5;
	TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 1);
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);

	TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, &ssize, &err), 0);
	TT_EQ_INT(count, 2);
	TT_ASSERT(ssize > 0);
	{
		int64_t ixs[1] = {-1};
		TT_EQ_INT(storage_index_sizes(st, c, ixs, &err), 0);
		TT_ASSERT(ixs[0] > 0);
	}
	{
		bson_t *a = tt_json("{\"_id\": 1, \"x\": \"one\"}"), *b = tt_json("{\"_id\": \"two\", \"x\": 2}");
		TT_EQ_INT(size, a->len + b->len);
		bson_destroy(a);
		bson_destroy(b);
	}

	/* update (same _id), then an update that changes _id moves the index entry */
	{
		bson_t *old = tt_json("{\"_id\": 1, \"x\": \"one\"}");
		bson_t *new1 = tt_json("{\"_id\": 1, \"x\": \"uno\", \"y\": [1, 2, 3]}");
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_update(s, c, r1, old, new1, &err), 0);
		TT_EQ_INT(storage_txn_commit(s, true, &err), 0);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_get(s, c, r1, &doc, &err), 0);
		TT_EQ_JSON(&doc, "{ \"_id\" : 1, \"x\" : \"uno\", \"y\" : [ 1, 2, 3 ] }");
		storage_txn_rollback(s);
		TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, NULL, &err), 0);
		TT_EQ_INT(count, 2);
		bson_destroy(old);

		/* delete */
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_delete(s, c, r1, new1, &err), 0);
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_get(s, c, r1, &doc, &err), 1);
		idv.value_type = BSON_TYPE_INT32;
		idv.value.v_int32 = 1;
		TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 1);
		storage_txn_rollback(s);
		bson_destroy(new1);
	}
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, NULL, &err), 0);
	TT_EQ_INT(count, 1);

	/* rollback leaves nothing behind, counts included */
	{
		bson_t *d = tt_json("{\"_id\": 42}");
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_insert(s, c, d, &rid, &err), 0);
		storage_txn_rollback(s);
		TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
		TT_EQ_INT(count, 1);
		idv.value.v_int32 = 42;
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 1);
		storage_txn_rollback(s);
		/* the _id is free again */
		TT_EQ_INT(insert_json(s, c, "{\"_id\": 42}", NULL, &err), 0);
		bson_destroy(d);
	}

	/* _id must come first */
	{
		bson_t *d = tt_json("{\"a\": 1, \"_id\": 5}");
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_ASSERT(storage_doc_insert(s, c, d, NULL, &err) != 0);
		TT_EQ_INT(err.code, 2);
		storage_txn_rollback(s);
		terr_clear(&err);
		bson_destroy(d);
	}

	/* 16 MiB limit */
	{
		bson_t big = BSON_INITIALIZER;
		size_t n = 16 * 1024 * 1024;
		char *pad = bson_malloc(n + 1);
		char want[128];
		memset(pad, 'p', n);
		pad[n] = '\0';
		BSON_APPEND_INT32(&big, "_id", 7);
		BSON_APPEND_UTF8(&big, "pad", pad);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_ASSERT(storage_doc_insert(s, c, &big, NULL, &err) != 0);
		TT_EQ_INT(err.code, 10334);
		snprintf(want, sizeof(want), "object to insert too large. size in bytes: %u, max size: 16777216", big.len);
		TT_EQ_STR(err.msg, want);
		storage_txn_rollback(s);
		terr_clear(&err);
		bson_free(pad);
		bson_destroy(&big);
	}
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

static void
test_duplicate_id(void)
{
	storage_t *st = open_fresh("dup");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	int64_t count;

	TT_EQ_INT(storage_coll_create(st, s, "shop", "items", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1, \"a\": 1}", NULL, &err), 0);
	TT_ASSERT(insert_json(s, c, "{\"_id\": 1, \"a\": 2}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: 1 }");
	TT_ASSERT(err.extra != NULL);
	if (err.extra != NULL)
		TT_EQ_JSON(err.extra, "{ \"keyPattern\" : { \"_id\" : 1 }, \"keyValue\" : { \"_id\" : 1 } }");
	terr_clear(&err);
	/* numbers of another type collide too */
	TT_ASSERT(insert_json(s, c, "{\"_id\": 1.0}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: 1.0 }");
	terr_clear(&err);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": \"k\"}", NULL, &err), 0);
	TT_ASSERT(insert_json(s, c, "{\"_id\": \"k\"}", NULL, &err) != 0);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: \"k\" }");
	terr_clear(&err);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": {\"a\": 1, \"b\": \"x\"}}", NULL, &err), 0);
	TT_ASSERT(insert_json(s, c, "{\"_id\": {\"a\": 1, \"b\": \"x\"}}", NULL, &err) != 0);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: shop.items index: _id_ dup key: { _id: { a: 1, b: \"x\" } }");
	terr_clear(&err);
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
	TT_EQ_INT(count, 3);
	storage_coll_release(c);
	storage_session_pool_put(st, s);
	close_and_clean(st);
}

static void
test_secondary_index_refused(void)
{
	storage_t *st = open_fresh("ix");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	bson_t *spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");

	TT_EQ_INT(storage_coll_create(st, s, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_index_create(st, s, "d", "c", spec, &err), 0);
	TT_ASSERT(storage_index_create(st, s, "d", "c", spec, &err) != 0);
	TT_EQ_INT(err.code, 68);
	terr_clear(&err);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_EQ_INT(c->nindexes, 2);
	TT_EQ_STR(c->indexes[1].name, "a_1");
	TT_ASSERT(!c->indexes[1].unique && !c->indexes[1].is_id);
	TT_ASSERT(insert_json(s, c, "{\"_id\": 1, \"a\": 1}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 238);
	terr_clear(&err);
	storage_coll_release(c);
	TT_ASSERT(storage_index_drop(st, s, "d", "c", "_id_", &err) != 0);
	terr_clear(&err);
	TT_EQ_INT(storage_index_drop(st, s, "d", "c", "a_1", &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_EQ_INT(c->nindexes, 1);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1, \"a\": 1}", NULL, &err), 0);
	TT_ASSERT(storage_index_create(st, s, "d", "c", spec, &err) != 0);
	TT_EQ_INT(err.code, 238);       /* not empty: no index build yet */
	terr_clear(&err);
	storage_coll_release(c);
	bson_destroy(spec);
	storage_session_pool_put(st, s);
	close_and_clean(st);
}

/* A stand-in for the query layer's key generation: the first field of
 * the key pattern, top level only; each element of an array is a key. */
static int
test_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, uint32_t *mk,
            terr_t *err)
{
	bson_iter_t pat, it, arr;
	keystring_t ks;
	bool desc;

	(void)mk;
	if (!bson_iter_init(&pat, idx->key) || !bson_iter_next(&pat))
		return terr_set(err, TERR_BAD_VALUE, "empty key pattern");
	desc = bson_iter_as_int64(&pat) < 0;
	keystring_init(&ks);
	if (!bson_iter_init_find(&it, doc, bson_iter_key(&pat))) {
		bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
		keystring_append_value(&ks, &null_v, desc);
		add(ctx, ks.buf, ks.len, NULL, 0);
	} else if (BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr)) {
		while (bson_iter_next(&arr)) {
			keystring_reset(&ks);
			keystring_append_value(&ks, bson_iter_value(&arr), desc);
			add(ctx, ks.buf, ks.len, NULL, 0);
		}
	} else {
		keystring_append_value(&ks, bson_iter_value(&it), desc);
		add(ctx, ks.buf, ks.len, NULL, 0);
	}
	keystring_destroy(&ks);
	return 0;
}

/* _ids an index scan of idx over [lo, hi] (ints, both inclusive) returns,
 * in scan order, written to out; returns how many. */
static int
ix_scan_ids(storage_session_t *s, storage_coll_t *c, int ix, int lo, int hi, bool backward, int *out, int max)
{
	keystring_t klo, khi;
	bson_value_t v = {.value_type = BSON_TYPE_INT32};
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	recid_t rid;
	const uint8_t *key;
	size_t key_len;
	int n = 0;

	keystring_init(&klo);
	keystring_init(&khi);
	v.value.v_int32 = lo;
	keystring_append_value(&klo, &v, false);
	v.value.v_int32 = hi;
	keystring_append_value(&khi, &v, false);
	TT_EQ_INT(storage_index_scan_open(s, c, &c->indexes[ix], klo.buf, klo.len, true, khi.buf, khi.len,
	    true, backward, &cur, &err), 0);
	while (cur != NULL && storage_cursor_next(cur, &rid, NULL, &key, &key_len, &err) == 1) {
		bson_t doc;
		bson_iter_t it;
		if (n < max && storage_doc_get(s, c, rid, &doc, &err) == 0 && bson_iter_init_find(&it, &doc, "_id"))
			out[n] = bson_iter_int32(&it);
		n++;
	}
	storage_cursor_close(cur);
	keystring_destroy(&klo);
	keystring_destroy(&khi);
	return n;
}

static void
test_secondary_indexes_with_keygen(void)
{
	storage_t *st = open_fresh("keygen");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	bson_t *a_spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");
	bson_t *u_spec = tt_json("{\"v\": 2, \"key\": {\"u\": 1}, \"name\": \"u_1\", \"unique\": true}");
	int ids[16];
	recid_t r1 = 0, r2 = 0;

	storage_set_keygen(st, test_keygen);
	TT_EQ_INT(storage_coll_create(st, s, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_index_create(st, s, "d", "c", a_spec, &err), 0);
	TT_EQ_INT(storage_index_create(st, s, "d", "c", u_spec, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_ASSERT(c->nindexes == 3 && !c->indexes[1].unique && c->indexes[2].unique);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1, \"a\": 5, \"u\": 1}", &r1, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 2, \"a\": 5, \"u\": 2}", &r2, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 3, \"a\": [1, 7, 7], \"u\": 3}", NULL, &err), 0);
	TT_ASSERT(!c->indexes[1].multikey);     /* the old descriptor does not change */
	storage_coll_release(c);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_ASSERT(c->indexes[1].multikey);
	TT_ASSERT(!c->indexes[2].multikey);

	/* unique secondary index */
	TT_ASSERT(insert_json(s, c, "{\"_id\": 4, \"u\": 1}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: d.c index: u_1 dup key: { u: 1 }");
	if (err.extra != NULL)
		TT_EQ_JSON(err.extra, "{ \"keyPattern\" : { \"u\" : 1 }, \"keyValue\" : { \"u\" : 1 } }");
	terr_clear(&err);
	/* a unique multikey index names the element that collided, not the array */
	TT_ASSERT(insert_json(s, c, "{\"_id\": 5, \"u\": [9, 2, 8]}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: d.c index: u_1 dup key: { u: 2 }");
	if (err.extra != NULL)
		TT_EQ_JSON(err.extra, "{ \"keyPattern\" : { \"u\" : 1 }, \"keyValue\" : { \"u\" : 2 } }");
	terr_clear(&err);

	/* an index's spec changes in place (collMod): same table, no rebuild */
	{
		bson_t *hidden = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\", \"hidden\": true}");
		bson_t *rekey = tt_json("{\"v\": 2, \"key\": {\"a\": -1}, \"name\": \"a_1\"}");
		storage_coll_t *c2 = NULL;
		bson_iter_t it;
		TT_EQ_INT(storage_index_set_spec(st, s, "d", "c", "a_1", hidden, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "d", "c", &c2, &err), 0);
		TT_EQ_STR(c2->indexes[1].ident, c->indexes[1].ident);
		TT_ASSERT(c2->indexes[1].multikey);
		TT_ASSERT(bson_iter_init_find(&it, c2->indexes[1].spec, "hidden") && bson_iter_as_bool(&it));
		storage_coll_release(c2);
		TT_ASSERT(storage_index_set_spec(st, s, "d", "c", "a_1", rekey, &err) != 0);
		TT_EQ_INT(err.code, TERR_BAD_VALUE);
		terr_clear(&err);
		TT_ASSERT(storage_index_set_spec(st, s, "d", "c", "nope", hidden, &err) != 0);
		TT_EQ_INT(err.code, TERR_INDEX_NOT_FOUND);
		terr_clear(&err);
		bson_destroy(hidden);
		bson_destroy(rekey);
	}

	/* non-unique: equal keys in RecordId order; the multikey doc once per key */
	TT_EQ_INT(ix_scan_ids(s, c, 1, 5, 5, false, ids, 16), 2);
	TT_ASSERT(ids[0] == 1 && ids[1] == 2);
	TT_EQ_INT(ix_scan_ids(s, c, 1, 5, 5, true, ids, 16), 2);
	TT_ASSERT(ids[0] == 2 && ids[1] == 1);
	TT_EQ_INT(ix_scan_ids(s, c, 1, 0, 100, false, ids, 16), 4);
	TT_ASSERT(ids[0] == 3 && ids[1] == 1 && ids[2] == 2 && ids[3] == 3);
	TT_EQ_INT(ix_scan_ids(s, c, 1, 6, 7, false, ids, 16), 1);

	/* exclusive bounds skip every entry equal to the bound */
	{
		keystring_t k5;
		bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 5};
		storage_cursor_t *cur = NULL;
		recid_t rid;
		int n = 0;
		keystring_init(&k5);
		keystring_append_value(&k5, &v, false);
		TT_EQ_INT(storage_index_scan_open(s, c, &c->indexes[1], k5.buf, k5.len, false, NULL, 0, false,
		    false, &cur, &err), 0);
		while (storage_cursor_next(cur, &rid, NULL, NULL, NULL, &err) == 1)
			n++;
		TT_EQ_INT(n, 1);                /* 7 only */
		storage_cursor_close(cur);
		TT_EQ_INT(storage_index_scan_open(s, c, &c->indexes[1], NULL, 0, false, k5.buf, k5.len, false,
		    true, &cur, &err), 0);
		n = 0;
		while (storage_cursor_next(cur, &rid, NULL, NULL, NULL, &err) == 1)
			n++;
		TT_EQ_INT(n, 1);                /* 1 only */
		storage_cursor_close(cur);
		keystring_destroy(&k5);
	}

	/* update moves entries; delete removes them */
	{
		bson_t *old = tt_json("{\"_id\": 1, \"a\": 5, \"u\": 1}");
		bson_t *new_doc = tt_json("{\"_id\": 1, \"a\": 6, \"u\": 1}");
		bson_t *old2 = tt_json("{\"_id\": 2, \"a\": 5, \"u\": 2}");
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_update(s, c, r1, old, new_doc, &err), 0);
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		TT_EQ_INT(ix_scan_ids(s, c, 1, 5, 5, false, ids, 16), 1);
		TT_EQ_INT(ids[0], 2);
		TT_EQ_INT(ix_scan_ids(s, c, 1, 6, 6, false, ids, 16), 1);
		TT_EQ_INT(ids[0], 1);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_delete(s, c, r2, old2, &err), 0);
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		TT_EQ_INT(ix_scan_ids(s, c, 1, 5, 5, false, ids, 16), 0);
		TT_EQ_INT(ix_scan_ids(s, c, 2, 2, 2, false, ids, 16), 0);
		/* u: 2 is free again */
		TT_EQ_INT(insert_json(s, c, "{\"_id\": 5, \"u\": 2}", NULL, &err), 0);
		bson_destroy(old);
		bson_destroy(new_doc);
		bson_destroy(old2);
	}
	storage_coll_release(c);
	storage_session_pool_put(st, s);

	/* multikey survives a reopen */
	{
		storage_options_t o = {0};
		storage_close(st);
		TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
		TT_ASSERT(c->indexes[1].multikey);
		storage_coll_release(c);
	}
	bson_destroy(a_spec);
	bson_destroy(u_spec);
	close_and_clean(st);
}

/* prepareUnique and a unique index converted in place (collMod): the table
 * keeps its key+RecordId layout, writes check duplicates, two transactions
 * adding the same key meet a write conflict (not both pass), and the
 * layout flag survives a reopen. */
static void
test_prepare_unique_and_conversion(void)
{
	storage_t *st = open_fresh("prepuniq");
	storage_session_t *s = storage_session_pool_get(st, NULL), *s2 = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	bson_t *spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");
	bson_t *prep = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\", \"prepareUnique\": true}");
	bson_t *uniq = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true}");
	bson_t *d1 = tt_json("{\"_id\": 10, \"a\": 7}"), *d2 = tt_json("{\"_id\": 11, \"a\": 7}");
	int ids[16];
	recid_t r2 = 0;

	storage_set_keygen(st, test_keygen);
	TT_EQ_INT(storage_coll_create(st, s, "d", "p", NULL, &err), 0);
	TT_EQ_INT(storage_index_create(st, s, "d", "p", spec, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "p", &c, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1, \"a\": 5}", NULL, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 2, \"a\": 5}", &r2, &err), 0);
	storage_coll_release(c);
	TT_EQ_INT(storage_index_set_spec(st, s, "d", "p", "a_1", prep, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "p", &c, &err), 0);
	TT_ASSERT(c->indexes[1].prepare_unique && !c->indexes[1].unique && storage_index_dup_check(&c->indexes[1]));
	TT_ASSERT(insert_json(s, c, "{\"_id\": 3, \"a\": 5}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: d.p index: a_1 dup key: { a: 5 }");
	terr_clear(&err);
	/* two open transactions adding a:7: the second one conflicts */
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_txn_begin(s2, &err), 0);
	TT_EQ_INT(storage_doc_insert(s, c, d1, NULL, &err), 0);
	TT_ASSERT(storage_doc_insert(s2, c, d2, NULL, &err) != 0);
	TT_ASSERT(storage_is_write_conflict(&err));
	terr_clear(&err);
	storage_txn_rollback(s2);
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	TT_ASSERT(insert_json(s2, c, "{\"_id\": 11, \"a\": 7}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	terr_clear(&err);
	TT_EQ_INT(ix_scan_ids(s, c, 1, 0, 100, false, ids, 16), 3);
	TT_ASSERT(ids[0] == 1 && ids[1] == 2 && ids[2] == 10);
	storage_coll_release(c);
	/* converted: unique on the same table (a key-only table cannot) */
	TT_EQ_INT(storage_coll_get(st, "d", "p", &c, &err), 0);
	{
		bson_t *old = tt_json("{\"_id\": 2, \"a\": 5}");
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_delete(s, c, r2, old, &err), 0);
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		bson_destroy(old);
	}
	storage_coll_release(c);
	TT_EQ_INT(storage_index_set_spec(st, s, "d", "p", "a_1", uniq, &err), 0);
	{
		storage_options_t o = {0};
		storage_session_pool_put(st, s);
		storage_session_pool_put(st, s2);
		storage_close(st);
		TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
		storage_set_keygen(st, test_keygen);
		s = storage_session_pool_get(st, NULL);
	}
	TT_EQ_INT(storage_coll_get(st, "d", "p", &c, &err), 0);
	TT_ASSERT(c->indexes[1].unique && c->indexes[1].unique_rid && !storage_index_key_only(&c->indexes[1]));
	TT_ASSERT(insert_json(s, c, "{\"_id\": 4, \"a\": 7}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	terr_clear(&err);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 4, \"a\": 8}", NULL, &err), 0);
	TT_EQ_INT(ix_scan_ids(s, c, 1, 5, 8, false, ids, 16), 3);
	TT_ASSERT(ids[0] == 1 && ids[1] == 10 && ids[2] == 4);
	storage_coll_release(c);
	/* back (forceNonUnique): duplicates again, the flag gone */
	TT_EQ_INT(storage_index_set_spec(st, s, "d", "p", "a_1", spec, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "p", &c, &err), 0);
	TT_ASSERT(!c->indexes[1].unique && !c->indexes[1].unique_rid && !storage_index_dup_check(&c->indexes[1]));
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 5, \"a\": 8}", NULL, &err), 0);
	storage_coll_release(c);
	/* a unique index created so keeps its layout: unique cannot change */
	{
		bson_t *u = tt_json("{\"v\": 2, \"key\": {\"u\": 1}, \"name\": \"u_1\", \"unique\": true}");
		bson_t *nu = tt_json("{\"v\": 2, \"key\": {\"u\": 1}, \"name\": \"u_1\"}");
		TT_EQ_INT(storage_coll_create(st, s, "d", "q", NULL, &err), 0);
		TT_EQ_INT(storage_index_create(st, s, "d", "q", u, &err), 0);
		TT_ASSERT(storage_index_set_spec(st, s, "d", "q", "u_1", nu, &err) != 0);
		TT_EQ_INT(err.code, TERR_BAD_VALUE);
		terr_clear(&err);
		bson_destroy(u);
		bson_destroy(nu);
	}
	/* ... unless it moves to a new table (forceNonUnique): 2500 entries,
	 * past one copy transaction, then a reopen */
	{
		bson_t *u = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\", \"unique\": true}");
		bson_t *nu = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");
		storage_options_t o = {0};
		char json[64];
		int n;
		TT_EQ_INT(storage_coll_create(st, s, "d", "r", NULL, &err), 0);
		TT_EQ_INT(storage_index_create(st, s, "d", "r", u, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "d", "r", &c, &err), 0);
		for (int i = 0; i < 2500; i++) {
			snprintf(json, sizeof(json), "{\"_id\": %d, \"a\": %d}", i, 2499 - i);
			TT_EQ_INT(insert_json(s, c, json, NULL, &err), 0);
		}
		storage_coll_release(c);
		TT_EQ_INT(storage_index_set_spec_relayout(st, s, "d", "r", "a_1", nu, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "d", "r", &c, &err), 0);
		TT_ASSERT(!c->indexes[1].unique && !storage_index_key_only(&c->indexes[1]));
		TT_EQ_INT(insert_json(s, c, "{\"_id\": 5000, \"a\": 7}", NULL, &err), 0);
		storage_coll_release(c);
		TT_ASSERT(storage_index_set_spec_relayout(st, s, "d", "r", "a_1", nu, &err) != 0);
		TT_EQ_INT(err.code, TERR_BAD_VALUE);
		terr_clear(&err);
		storage_session_pool_put(st, s);
		storage_close(st);
		TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
		storage_set_keygen(st, test_keygen);
		s = storage_session_pool_get(st, NULL);
		TT_EQ_INT(storage_coll_get(st, "d", "r", &c, &err), 0);
		n = ix_scan_ids(s, c, 1, 0, 3000, false, ids, 16);
		TT_EQ_INT(n, 2501);
		TT_ASSERT(ids[0] == 2499 && ids[1] == 2498);
		TT_EQ_INT(ix_scan_ids(s, c, 1, 7, 7, false, ids, 16), 2);
		TT_ASSERT(ids[0] == 2492 && ids[1] == 5000);
		storage_coll_release(c);
		bson_destroy(u);
		bson_destroy(nu);
	}
	storage_session_pool_put(st, s);
	bson_destroy(spec);
	bson_destroy(prep);
	bson_destroy(uniq);
	bson_destroy(d1);
	bson_destroy(d2);
	close_and_clean(st);
}

/* Entries of index ix of the current descriptor (full scan). */
static int
ix_count(storage_t *st, storage_session_t *s, const char *ixname)
{
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	recid_t rid;
	int n = 0, ix = -1;

	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	for (int i = 0; c != NULL && i < c->nindexes; i++)
		if (strcmp(c->indexes[i].name, ixname) == 0)
			ix = i;
	TT_ASSERT(ix >= 0);
	if (ix >= 0 && storage_index_scan_open(s, c, &c->indexes[ix], NULL, 0, false, NULL, 0, false, false,
	        &cur, &err) == 0) {
		while (storage_cursor_next(cur, &rid, NULL, NULL, NULL, &err) == 1)
			n++;
		storage_cursor_close(cur);
	}
	storage_coll_release(c);
	return n;
}

typedef struct builder_race {
	storage_t *st;
	atomic_int stop;
	atomic_int inserted;     /* committed inserts, read by the test while it runs */
	int stale_nindexes;      /* the inserter's descriptor's index count */
} builder_race_t;

/* Wait until r has committed at least n inserts; false after 60 s (a hung
 * writer, not a slow scheduler: the test must not depend on how soon a
 * thread gets a core on a loaded machine). */
static bool
race_wait_inserted(builder_race_t *r, int n)
{
	for (int ms = 0; ms < 60000; ms++) {
		if (atomic_load(&r->inserted) >= n)
			return true;
		usleep(1000);
	}
	return false;
}

static void *
race_inserter(void *p)
{
	builder_race_t *r = p;
	storage_session_t *s = storage_session_pool_get(r->st, NULL);
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	/* one descriptor for the whole run: it goes stale when the index
	 * appears, and writes must still maintain the new index */
	TT_EQ_INT(storage_coll_get(r->st, "d", "c", &c, &err), 0);
	for (int i = 100000; !atomic_load(&r->stop); i++) {
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_INT32(&d, "a", i);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		if (storage_doc_insert(s, c, &d, NULL, &err) == 0 && storage_txn_commit(s, false, &err) == 0) {
			atomic_fetch_add(&r->inserted, 1);
		} else {
			fprintf(stderr, "inserter: %s\n", err.msg);
			storage_txn_rollback(s);
			terr_clear(&err);
		}
		bson_destroy(&d);
	}
	r->stale_nindexes = c->nindexes;
	storage_coll_release(c);
	storage_session_pool_put(r->st, s);
	return NULL;
}

static void
test_index_builds(void)
{
	storage_t *st = open_fresh("build");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL, *cc = NULL;
	bson_t *a_spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");
	bson_t *b_spec = tt_json("{\"v\": 2, \"key\": {\"b\": 1}, \"name\": \"b_1\", \"unique\": true}");
	bson_t *t_spec = tt_json("{\"v\": 2, \"key\": {\"t\": -1}, \"name\": \"t_-1\"}");
	builder_race_t r = {.st = st};
	pthread_t t;
	int64_t count;
	int built;

	storage_set_keygen(st, test_keygen);
	TT_EQ_INT(storage_coll_create(st, s, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	for (int i = 0; i < 2500; i++) {
		char json[96];
		snprintf(json, sizeof(json), "{\"_id\": %d, \"a\": %d, \"b\": %d, \"t\": [%d, %d]}", i, i, i % 10, i, -i);
		TT_EQ_INT(insert_json(s, c, json, NULL, &err), 0);
	}

	/* over existing documents, more than one batch; multikey noticed */
	TT_EQ_INT(storage_index_create(st, s, "d", "c", t_spec, &err), 0);
	TT_EQ_INT(ix_count(st, s, "t_-1"), 2 * 2500 - 1);  /* 0 and -0 are one key */
	TT_EQ_INT(storage_coll_get(st, "d", "c", &cc, &err), 0);
	TT_ASSERT(cc->nindexes == 2 && cc->indexes[1].multikey);
	storage_coll_release(cc);

	/* a unique index the data violates is refused and leaves nothing */
	TT_ASSERT(storage_index_create(st, s, "d", "c", b_spec, &err) != 0);
	TT_EQ_INT(err.code, 11000);
	TT_EQ_STR(err.msg, "E11000 duplicate key error collection: d.c index: b_1 dup key: { b: 0 }");
	terr_clear(&err);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &cc, &err), 0);
	TT_EQ_INT(cc->nindexes, 2);
	storage_coll_release(cc);

	/* built while another thread inserts through a stale descriptor: the
	 * inserter has written (so holds its descriptor from before the index)
	 * when the build starts, and writes again through that descriptor after
	 * the index is published, however late the scheduler runs it */
	pthread_create(&t, NULL, race_inserter, &r);
	TT_ASSERT(race_wait_inserted(&r, 1));
	TT_EQ_INT(storage_index_create(st, s, "d", "c", a_spec, &err), 0);
	built = atomic_load(&r.inserted);
	TT_ASSERT(race_wait_inserted(&r, built + 20));
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	TT_EQ_INT(r.stale_nindexes, 2);
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
	TT_EQ_INT(count, 2500 + atomic_load(&r.inserted));
	TT_EQ_INT(ix_count(st, s, "a_1"), count);

	/* drop: writers with the old descriptor stop maintaining it */
	TT_EQ_INT(storage_index_drop(st, s, "d", "c", "a_1", &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": -5, \"a\": 1}", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &cc, &err), 0);
	TT_EQ_INT(cc->nindexes, 2);
	storage_coll_release(cc);

	storage_coll_release(c);
	storage_session_pool_put(st, s);
	bson_destroy(a_spec);
	bson_destroy(b_spec);
	bson_destroy(t_spec);
	close_and_clean(st);
}

/* An index build over many documents in its own thread. */
typedef struct long_build {
	storage_t *st;
	atomic_int started, done;
	int rc, code;
} long_build_t;

static void *
long_builder(void *p)
{
	long_build_t *b = p;
	storage_session_t *s = storage_session_pool_get(b->st, NULL);
	bson_t *spec = tt_json("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}");
	terr_t err = TERR_INIT;

	atomic_store(&b->started, 1);
	b->rc = storage_index_create(b->st, s, "d", "big", spec, &err);
	b->code = err.code;
	terr_clear(&err);
	atomic_store(&b->done, 1);
	bson_destroy(spec);
	storage_session_pool_put(b->st, s);
	return NULL;
}

static void
fill_big(storage_t *st, storage_session_t *s, int n)
{
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	TT_EQ_INT(storage_coll_create(st, s, "d", "big", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "big", &c, &err), 0);
	for (int i = 0; i < n; i += 1000) {
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		for (int j = i; j < i + 1000 && j < n; j++) {
			bson_t d = BSON_INITIALIZER;
			BSON_APPEND_INT32(&d, "_id", j);
			BSON_APPEND_INT32(&d, "a", (j * 7919) % n);
			TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, &err), 0);
			bson_destroy(&d);
		}
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	}
	storage_coll_release(c);
}

/*
 * A gate in the keygen, to hold an index build in the middle of its scan for
 * as long as a test needs (the keygen has no context argument: one gate per
 * process, used by one test at a time).  While armed, each key generated
 * counts and waits for the gate to open; the wait gives up (for good) after
 * 60 s so a test whose other side hangs fails instead of hanging.
 */
static struct {
	atomic_int armed, open, keys;
} build_gate;

/* Monotonic milliseconds: the gate's bounds are wall time, not a count of
 * sleeps (a 1 ms sleep takes far longer on a loaded machine). */
static int64_t
gate_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
gated_keygen(const storage_index_t *idx, const bson_t *doc, storage_key_add_fn add, void *ctx, uint32_t *mk,
             terr_t *err)
{
	if (atomic_load(&build_gate.armed)) {
		atomic_fetch_add(&build_gate.keys, 1);
		int64_t until = gate_now_ms() + 60000;
		while (!atomic_load(&build_gate.open) && gate_now_ms() < until)
			usleep(1000);
		atomic_store(&build_gate.open, 1);      /* given up: for good */
	}
	return test_keygen(idx, doc, add, ctx, mk, err);
}

/* Arm the gate closed; then wait (at most 60 s) until a build holds in it. */
static void
build_gate_arm(void)
{
	atomic_store(&build_gate.keys, 0);
	atomic_store(&build_gate.open, 0);
	atomic_store(&build_gate.armed, 1);
}

static bool
build_gate_wait_held(void)
{
	int64_t until = gate_now_ms() + 60000;

	while (gate_now_ms() < until) {
		if (atomic_load(&build_gate.keys) > 0)
			return true;
		usleep(1000);
	}
	return false;
}

static void
build_gate_release(void)
{
	atomic_store(&build_gate.open, 1);
	atomic_store(&build_gate.armed, 0);
}

/*
 * A build over existing documents does not hold the DDL lock while it scans:
 * collections are created meanwhile (before, every create waited for the
 * whole build).  And a drop during the build abandons it with 276, leaving
 * no index.  The build is held in its scan by the keygen's gate until the
 * creates (or the drop) returned, so nothing depends on how long the scan
 * takes or when a thread gets a core; a create that waited for the build
 * would return only when the gate gives up (60 s), after the build.
 */
static void
test_index_build_leaves_ddl(void)
{
	storage_t *st = open_fresh("buildddl");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	long_build_t b = {.st = st};
	pthread_t t;
	int during = 0, i;
	char name[32];

	storage_set_keygen(st, gated_keygen);
	fill_big(st, s, 3000);
	build_gate_arm();
	pthread_create(&t, NULL, long_builder, &b);
	TT_ASSERT(build_gate_wait_held());
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "other%d", i);
		TT_EQ_INT(storage_coll_create(st, s, "d", name, NULL, &err), 0);
		if (!atomic_load(&b.done))
			during++;
	}
	build_gate_release();
	pthread_join(t, NULL);
	TT_EQ_INT(b.rc, 0);
	TT_EQ_INT(during, 3);

	/* a drop while the build scans: the build gives up with 276 */
	TT_EQ_INT(storage_coll_drop(st, s, "d", "big", &err), 0);
	fill_big(st, s, 3000);
	memset(&b, 0, sizeof(b));
	b.st = st;
	build_gate_arm();
	pthread_create(&t, NULL, long_builder, &b);
	TT_ASSERT(build_gate_wait_held());
	TT_EQ_INT(storage_coll_drop(st, s, "d", "big", &err), 0);
	TT_ASSERT(!atomic_load(&b.done));
	build_gate_release();
	pthread_join(t, NULL);
	TT_ASSERT(b.rc != 0);
	TT_EQ_INT(b.code, 276);
	{
		storage_coll_t *gone = NULL;
		TT_ASSERT(storage_coll_get(st, "d", "big", &gone, NULL) != 0);
	}
	storage_set_keygen(st, test_keygen);
	storage_session_pool_put(st, s);
	close_and_clean(st);
}

/* Insert _id 1..n (ints) with field i. */
static void
fill(storage_session_t *s, storage_coll_t *c, int n)
{
	terr_t err = TERR_INIT;

	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	for (int i = 1; i <= n; i++) {
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_INT32(&d, "i", i);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, &err), 0);
		bson_destroy(&d);
	}
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
}

static int
doc_i(const bson_t *doc)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, doc, "i") ? bson_iter_int32(&it) : -1;
}

static void
delete_ids(storage_session_t *s, storage_coll_t *c, int from, int to)
{
	terr_t err = TERR_INIT;

	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	for (int i = from; i <= to; i++) {
		bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = i};
		recid_t rid;
		bson_t doc, copy;
		TT_EQ_INT(storage_doc_find_id(s, c, &v, &rid, &doc, &err), 0);
		bson_copy_to(&doc, &copy);
		TT_EQ_INT(storage_doc_delete(s, c, rid, &copy, &err), 0);
		bson_destroy(&copy);
	}
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
}

static void
test_scans_save_restore(void)
{
	storage_t *st = open_fresh("scan");
	storage_session_t *s1 = NULL, *s2 = NULL;
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t doc;
	int n, last;

	TT_EQ_INT(storage_session_open(st, &s1, &err), 0);
	TT_EQ_INT(storage_session_open(st, &s2, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s1, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	fill(s1, c, 100);

	/* forward, whole */
	TT_EQ_INT(storage_scan_open(s1, c, false, &cur, &err), 0);
	n = 0;
	last = 0;
	while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) == 1) {
		TT_ASSERT(doc_i(&doc) == last + 1);
		last = doc_i(&doc);
		n++;
	}
	TT_EQ_INT(n, 100);
	TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 0);
	storage_cursor_close(cur);

	/* backward */
	TT_EQ_INT(storage_scan_open(s1, c, true, &cur, &err), 0);
	n = 0;
	last = 101;
	while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) == 1) {
		TT_ASSERT(doc_i(&doc) == last - 1);
		last = doc_i(&doc);
		n++;
	}
	TT_EQ_INT(n, 100);
	storage_cursor_close(cur);

	/* forward: 10, save, another session deletes 10..20 and 50, restore on
	 * that other session: continues at 21, skips 50 */
	TT_EQ_INT(storage_scan_open(s1, c, false, &cur, &err), 0);
	for (int i = 0; i < 10; i++)
		TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(doc_i(&doc), 10);
	TT_EQ_INT(storage_cursor_save(cur, &err), 0);
	TT_EQ_INT(doc_i(&doc), 10);      /* the view outlives save */
	delete_ids(s2, c, 10, 20);
	delete_ids(s2, c, 50, 50);
	TT_EQ_INT(storage_cursor_restore(cur, s2, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(doc_i(&doc), 21);
	n = 1;
	while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) == 1) {
		TT_ASSERT(doc_i(&doc) != 50);
		n++;
		if (n % 7 == 0) {      /* save/restore mid-way, alternating sessions */
			TT_EQ_INT(storage_cursor_save(cur, &err), 0);
			TT_EQ_INT(storage_cursor_restore(cur, n % 2 ? s1 : s2, &err), 0);
		}
	}
	TT_EQ_INT(n, 79);               /* 21..100 minus 50 */
	storage_cursor_close(cur);

	/* backward with save/restore and a delete of the next one */
	TT_EQ_INT(storage_scan_open(s1, c, true, &cur, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(doc_i(&doc), 100);
	TT_EQ_INT(storage_cursor_save(cur, &err), 0);
	delete_ids(s2, c, 99, 99);
	TT_EQ_INT(storage_cursor_restore(cur, s2, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(doc_i(&doc), 98);
	storage_cursor_close(cur);

	/* index scans on _id_: [30, 40) forward, (30, 40] backward */
	{
		keystring_t lo, hi;
		bson_value_t v = {.value_type = BSON_TYPE_INT32};
		const uint8_t *key;
		size_t key_len;

		keystring_init(&lo);
		keystring_init(&hi);
		v.value.v_int32 = 30;
		keystring_append_value(&lo, &v, false);
		v.value.v_int32 = 40;
		keystring_append_value(&hi, &v, false);
		TT_EQ_INT(storage_index_scan_open(s1, c, &c->indexes[0], lo.buf, lo.len, true, hi.buf, hi.len,
		    false, false, &cur, &err), 0);
		n = 0;
		while (storage_cursor_next(cur, &rid, NULL, &key, &key_len, &err) == 1) {
			TT_EQ_INT(storage_doc_get(s1, c, rid, &doc, &err), 0);
			TT_EQ_INT(doc_i(&doc), 30 + n);
			n++;
			if (n == 3) {
				TT_EQ_INT(storage_cursor_save(cur, &err), 0);
				delete_ids(s2, c, 33, 34);
				TT_EQ_INT(storage_cursor_restore(cur, s2, &err), 0);
				n += 2;
			}
		}
		TT_EQ_INT(n, 10);
		storage_cursor_close(cur);

		TT_EQ_INT(storage_index_scan_open(s1, c, &c->indexes[0], lo.buf, lo.len, false, hi.buf, hi.len,
		    true, true, &cur, &err), 0);
		n = 0;
		last = 41;
		while (storage_cursor_next(cur, &rid, NULL, &key, &key_len, &err) == 1) {
			TT_EQ_INT(storage_doc_get(s1, c, rid, &doc, &err), 0);
			TT_ASSERT(doc_i(&doc) < last && doc_i(&doc) > 30);
			last = doc_i(&doc);
			n++;
		}
		TT_EQ_INT(n, 8);                /* 31..40 minus 33, 34 */
		TT_EQ_INT(last, 31);
		storage_cursor_close(cur);

		/* unbounded index scan sees everything in _id order */
		TT_EQ_INT(storage_index_scan_open(s1, c, &c->indexes[0], NULL, 0, false, NULL, 0, false,
		    false, &cur, &err), 0);
		n = 0;
		while (storage_cursor_next(cur, &rid, NULL, &key, &key_len, &err) == 1)
			n++;
		TT_EQ_INT(n, 100 - 11 - 1 - 1 - 2);
		storage_cursor_close(cur);
		keystring_destroy(&lo);
		keystring_destroy(&hi);
	}

	/* a scan keeps its place across commits on its own session (WiredTiger
	 * resets a session's cursors at commit/rollback) */
	{
		storage_coll_t *other = NULL;
		TT_EQ_INT(storage_coll_create(st, s1, "d", "other", NULL, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "d", "other", &other, &err), 0);
		TT_EQ_INT(storage_scan_open(s1, c, false, &cur, &err), 0);
		n = 0;
		last = 0;
		while (storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) == 1) {
			char json[64];
			TT_ASSERT(doc_i(&doc) > last);
			last = doc_i(&doc);
			snprintf(json, sizeof(json), "{\"_id\": %d}", last);
			TT_EQ_INT(insert_json(s1, other, json, NULL, &err), 0);
			if (++n > 200)
				break;
		}
		TT_EQ_INT(n, 100 - 11 - 1 - 1 - 2);
		storage_cursor_close(cur);
		storage_coll_release(other);
	}

	/* without recid (the scan reads each RecordId only when it must): two
	 * scans of the same collection on one session, both saved, restored on
	 * the other session and kept across commits there, in both directions */
	{
		storage_coll_t *other = NULL;
		storage_cursor_t *cur2 = NULL;
		int n2 = 0, last2 = 1000;
		TT_EQ_INT(storage_coll_get(st, "d", "other", &other, &err), 0);
		TT_EQ_INT(storage_scan_open(s1, c, false, &cur, &err), 0);
		TT_EQ_INT(storage_scan_open(s1, c, true, &cur2, &err), 0);
		n = 0;
		last = 0;
		for (int round = 0; round < 200; round++) {
			int rc1 = storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err);
			char json[64];
			TT_ASSERT(rc1 >= 0);
			if (rc1 == 1) {
				TT_ASSERT(doc_i(&doc) > last);
				last = doc_i(&doc);
				n++;
			}
			rc1 = storage_cursor_next(cur2, NULL, &doc, NULL, NULL, &err);
			TT_ASSERT(rc1 >= 0);
			if (rc1 == 1) {
				TT_ASSERT(doc_i(&doc) < last2);
				last2 = doc_i(&doc);
				n2++;
			}
			if (round % 5 == 1) {   /* a commit on the scans' session */
				snprintf(json, sizeof(json), "{\"_id\": %d}", 1000 + round);
				TT_EQ_INT(insert_json(round <= 17 ? s1 : s2, other, json, NULL, &err), 0);
			}
			if (round == 17) {      /* both saved, continued on s2 */
				TT_EQ_INT(storage_cursor_save(cur, &err), 0);
				TT_EQ_INT(storage_cursor_save(cur2, &err), 0);
				TT_EQ_INT(storage_cursor_restore(cur, s2, &err), 0);
				TT_EQ_INT(storage_cursor_restore(cur2, s2, &err), 0);
			}
			if (round > 17 && round % 5 == 3) {
				snprintf(json, sizeof(json), "{\"_id\": %d}", 2000 + round);
				TT_EQ_INT(insert_json(s2, other, json, NULL, &err), 0);
			}
		}
		TT_EQ_INT(n, 100 - 11 - 1 - 1 - 2);
		TT_EQ_INT(n2, 100 - 11 - 1 - 1 - 2);
		TT_EQ_INT(last, 100);
		TT_EQ_INT(last2, 1);
		storage_cursor_close(cur);
		storage_cursor_close(cur2);
		storage_coll_release(other);
	}

	/* a saved cursor on a dropped collection cannot come back */
	TT_EQ_INT(storage_scan_open(s1, c, false, &cur, &err), 0);
	TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
	TT_EQ_INT(storage_cursor_save(cur, &err), 0);
	TT_EQ_INT(storage_coll_drop(st, s2, "d", "c", &err), 0);
	TT_ASSERT(storage_cursor_restore(cur, s2, &err) != 0);
	TT_EQ_INT(err.code, 175);
	terr_clear(&err);
	storage_cursor_close(cur);

	storage_coll_release(c);
	storage_session_close(s1);
	storage_session_close(s2);
	close_and_clean(st);
}

/* Two threads: each inserts its own documents and increments one shared
 * counter document; every increment conflicts with the other thread's
 * sometimes, and storage_txn_run retries. */
typedef struct worker {
	storage_t *st;
	int base, n, failures;
} worker_t;

typedef struct incr_arg {
	storage_coll_t *c;
	int id;
} incr_arg_t;

static int
incr_fn(storage_session_t *s, void *arg, terr_t *err)
{
	incr_arg_t *a = arg;
	bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 0};
	bson_t doc, old, new_doc = BSON_INITIALIZER, mine = BSON_INITIALIZER;
	bson_iter_t it;
	recid_t rid;
	int rc;

	if ((rc = storage_doc_find_id(s, a->c, &v, &rid, &doc, err)) != 0)
		return rc < 0 ? rc : terr_set(err, TERR_INTERNAL_ERROR, "counter missing");
	bson_copy_to(&doc, &old);
	bson_iter_init_find(&it, &old, "n");
	BSON_APPEND_INT32(&new_doc, "_id", 0);
	BSON_APPEND_INT32(&new_doc, "n", bson_iter_int32(&it) + 1);
	rc = storage_doc_update(s, a->c, rid, &old, &new_doc, err);
	if (rc == 0) {
		BSON_APPEND_INT32(&mine, "_id", a->id);
		rc = storage_doc_insert(s, a->c, &mine, NULL, err);
	}
	bson_destroy(&old);
	bson_destroy(&new_doc);
	bson_destroy(&mine);
	return rc;
}

static void *
worker_main(void *p)
{
	worker_t *w = p;
	storage_session_t *s = storage_session_pool_get(w->st, NULL);
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	if (s == NULL || storage_coll_get(w->st, "d", "c", &c, &err) != 0) {
		w->failures++;
		return NULL;
	}
	for (int i = 0; i < w->n; i++) {
		incr_arg_t a = {c, w->base + i};
		if (storage_txn_run(s, incr_fn, &a, false, &err) != 0) {
			fprintf(stderr, "worker: %s\n", err.msg);
			terr_clear(&err);
			w->failures++;
		}
	}
	storage_coll_release(c);
	storage_session_pool_put(w->st, s);
	return NULL;
}

static void
test_concurrent_writers(void)
{
	storage_t *st = open_fresh("conc");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	worker_t w[2] = {{st, 1000, 300, 0}, {st, 2000, 300, 0}};
	pthread_t t[2];
	bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 0};
	recid_t rid;
	bson_t doc;
	bson_iter_t it;
	int64_t count;

	TT_EQ_INT(storage_coll_create(st, s, "d", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "c", &c, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 0, \"n\": 0}", NULL, &err), 0);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	TT_EQ_INT(w[0].failures + w[1].failures, 0);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_doc_find_id(s, c, &v, &rid, &doc, &err), 0);
	TT_ASSERT(bson_iter_init_find(&it, &doc, "n"));
	TT_EQ_INT(bson_iter_int32(&it), 600);
	storage_txn_rollback(s);
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
	TT_EQ_INT(count, 601);
	storage_coll_release(c);
	storage_session_pool_put(st, s);
	close_and_clean(st);
}

/* Catalog changes racing with writers: one thread creates and drops a
 * collection over and over, the other writes to it whenever it exists.
 * Nothing may crash or leak; writes either land or fail cleanly. */
typedef struct ddl_race {
	storage_t *st;
	atomic_int stop;
	atomic_int writes;
	int refusals, unexpected;
} ddl_race_t;

static void *
race_writer(void *p)
{
	ddl_race_t *r = p;
	storage_session_t *s = storage_session_pool_get(r->st, NULL);
	terr_t err = TERR_INIT;
	int i = 0;

	while (!atomic_load(&r->stop)) {
		storage_coll_t *c = NULL;
		bson_t d = BSON_INITIALIZER;
		if (storage_coll_get(r->st, "race", "x", &c, NULL) != 0) {
			sched_yield();
			continue;
		}
		BSON_APPEND_INT32(&d, "_id", i++);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		if (storage_doc_insert(s, c, &d, NULL, &err) == 0 && storage_txn_commit(s, false, &err) == 0) {
			atomic_fetch_add(&r->writes, 1);
		} else {
			storage_txn_rollback(s);
			if (err.code == 26 || err.code == 112)
				r->refusals++;
			else {
				fprintf(stderr, "race: %d %s\n", err.code, err.msg);
				r->unexpected++;
			}
			terr_clear(&err);
		}
		bson_destroy(&d);
		storage_coll_release(c);
	}
	storage_session_pool_put(r->st, s);
	return NULL;
}

static void
test_ddl_races_writers(void)
{
	storage_t *st = open_fresh("race");
	ddl_race_t r = {.st = st};
	terr_t err = TERR_INIT;
	pthread_t t;
	char **names;
	int n;

	pthread_create(&t, NULL, race_writer, &r);
	/* 40 windows, more while the writer has not landed a write (a loaded
	 * machine may starve it through the first ones) */
	for (int i = 0; i < 40 || (atomic_load(&r.writes) == 0 && i < 2000); i++) {
		TT_EQ_INT(storage_coll_create(st, NULL, "race", "x", NULL, &err), 0);
		usleep(2000);
		TT_EQ_INT(storage_coll_drop(st, NULL, "race", "x", &err), 0);
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	TT_EQ_INT(r.unexpected, 0);
	TT_ASSERT(atomic_load(&r.writes) > 0);
	TT_EQ_INT(storage_list_dbs(st, &names, &n, &err), 0);
	TT_EQ_INT(n, 0);
	storage_free_names(names, n);
	close_and_clean(st);
}

/* Is the table of c still in WiredTiger?  (A scan of a stale descriptor
 * opens on it, or fails with 175 once it is dropped.) */
static bool
table_exists(storage_session_t *s, storage_coll_t *c)
{
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;

	if (storage_scan_open(s, c, false, &cur, &err) != 0) {
		TT_EQ_INT(err.code, 175);
		terr_clear(&err);
		return false;
	}
	storage_cursor_close(cur);
	return true;
}

/* Insert one JSON document inside the open transaction of s. */
static int
insert_in_txn(storage_session_t *s, storage_coll_t *c, const char *json, terr_t *err)
{
	bson_t *doc = tt_json(json);
	int rc = storage_doc_insert(s, c, doc, NULL, err);

	bson_destroy(doc);
	return rc;
}

/* A drop while another session's transaction has written the collection
 * and then closed its cached cursors (the cursor epoch moved under it, here
 * because of another drop).  WiredTiger refuses a drop only while a cursor
 * is open on the table: it would drop this one and free the transaction's
 * uncommitted updates, which the commit then writes to (a heap corruption
 * that showed as glibc aborts, about one run in ten, in
 * test_ddl_races_writers; valgrind shows it here without the fix: an
 * invalid write in __wt_txn_rollback to an update the drop freed).  The
 * tables must outlive the transaction, new
 * writes through the old descriptor must fail, and the drop must happen
 * once the transaction is over. */
static void
test_drop_waits_for_writer(void)
{
	storage_t *st = open_fresh("dropw");
	storage_session_t *s = storage_session_pool_get(st, NULL);
	storage_session_t *probe = storage_session_pool_get(st, NULL);
	terr_t err = TERR_INIT;
	storage_coll_t *a = NULL, *b = NULL;
	int polls = 0;

	TT_EQ_INT(storage_coll_create(st, NULL, "dw", "a", NULL, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "dw", "b", NULL, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "dw", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "dw", "a", &a, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "dw", "b", &b, &err), 0);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(insert_in_txn(s, a, "{\"_id\": 1, \"x\": \"uncommitted\"}", &err), 0);
	TT_EQ_INT(storage_coll_drop(st, NULL, "dw", "c", &err), 0);
	/* s sees the epoch move: it closes every cached cursor, a's too */
	TT_EQ_INT(insert_in_txn(s, b, "{\"_id\": 1}", &err), 0);
	TT_EQ_INT(storage_coll_drop(st, NULL, "dw", "a", &err), 0);
	TT_ASSERT(table_exists(probe, a));
	/* a rollback marks each of its updates aborted: they must still be
	 * there (a commit without timestamps does not touch them) */
	storage_txn_rollback(s);
	/* the old descriptor no longer takes writes */
	TT_ASSERT(insert_json(s, a, "{\"_id\": 2}", NULL, &err) != 0);
	TT_EQ_INT(err.code, 26);
	terr_clear(&err);
	/* the drop, queued, is retried by the flusher every second */
	while (table_exists(probe, a) && polls++ < 50)
		usleep(100000);
	TT_ASSERT(polls <= 50);
	TT_ASSERT(!table_exists(probe, a));
	storage_coll_release(a);
	storage_coll_release(b);
	storage_session_pool_put(st, probe);
	storage_session_pool_put(st, s);
	close_and_clean(st);
}

static void
test_reopen(void)
{
	storage_t *st = open_fresh("reopen");
	storage_options_t o = {0};
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	uint8_t uuid[16];
	recid_t rid, rid2;
	int64_t count, size, count2, size2;
	bson_t doc;
	bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 7};
	bson_t *opts = tt_json("{\"validationAction\": \"warn\"}");

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "keep", "me", opts, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "keep", "gone", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "keep", "me", &c, &err), 0);
	memcpy(uuid, c->uuid, 16);
	fill(s, c, 50);
	delete_ids(s, c, 1, 5);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": \"last\"}", &rid, &err), 0);
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, NULL, &err), 0);
	storage_coll_release(c);
	TT_EQ_INT(storage_coll_drop(st, s, "keep", "gone", &err), 0);
	storage_session_close(s);
	storage_close(st);

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "keep", "me", &c, &err), 0);
	{
		storage_coll_t *g = NULL;
		TT_ASSERT(storage_coll_get(st, "keep", "gone", &g, &err) == 26);
	}
	TT_ASSERT(memcmp(uuid, c->uuid, 16) == 0);
	TT_EQ_JSON(c->options, "{ \"validationAction\" : \"warn\" }");
	TT_EQ_INT(storage_coll_stats(st, s, c, &count2, &size2, NULL, &err), 0);
	TT_EQ_INT(count2, count);
	TT_EQ_INT(size2, size);
	TT_EQ_INT(count2, 46);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_doc_find_id(s, c, &v, &rid2, &doc, &err), 0);
	TT_EQ_INT(doc_i(&doc), 7);
	storage_txn_rollback(s);
	/* RecordIds are not reused */
	TT_EQ_INT(insert_json(s, c, "{\"_id\": \"after\"}", &rid2, &err), 0);
	TT_ASSERT(rid2 > rid);
	/* new idents do not collide with the old ones */
	TT_EQ_INT(storage_coll_create(st, s, "keep", "new", NULL, &err), 0);
	{
		storage_coll_t *n2 = NULL;
		TT_EQ_INT(storage_coll_get(st, "keep", "new", &n2, &err), 0);
		TT_ASSERT(strcmp(n2->ident, c->ident) != 0);
		TT_ASSERT(strcmp(n2->indexes[0].ident, c->indexes[0].ident) != 0);
		storage_coll_release(n2);
	}
	storage_coll_release(c);
	storage_session_close(s);
	bson_destroy(opts);
	close_and_clean(st);
}

static void
test_in_memory(void)
{
	storage_options_t o = {.in_memory = true, .create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	storage_coll_t *c = NULL;
	char *d = tt_tmpdir("inmem");
	int64_t count;

	TT_EQ_INT(storage_open(d, &o, &st, &err), 0);
	if (st == NULL) {
		fprintf(stderr, "%s\n", err.msg);
		return;
	}
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "m", "c", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "m", "c", &c, &err), 0);
	TT_EQ_INT(insert_json(s, c, "{\"_id\": 1}", NULL, &err), 0);
	TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
	TT_EQ_INT(count, 1);
	storage_coll_release(c);
	storage_session_close(s);
	storage_close(st);
	tt_rmdir(d);
	bson_free(d);
}

/* storage_session_set_lock_timeout (maxTransactionLockRequestTimeoutMillis):
 * a write waiting for a gate a validated collMod holds fails with 24 after
 * its timeout instead of waiting the collMod out; without one it waits. */
struct gate_holder {
	atomic_int state;   /* 1: the check runs (gate held); 2: let it finish */
};

static int
hold_gate(void *arg, terr_t *err)
{
	struct gate_holder *h = arg;

	(void)err;
	atomic_store(&h->state, 1);
	while (atomic_load(&h->state) != 2)
		usleep(1000);
	return 0;
}

static void *
run_collmod(void *arg)
{
	void **a = arg;
	terr_t err = TERR_INIT;
	bson_t *opts = tt_json("{\"validationLevel\": \"moderate\"}");

	storage_coll_set_options_checked(a[0], NULL, "t", "lk", opts, hold_gate, a[1], &err);
	bson_destroy(opts);
	return NULL;
}

static void
test_lock_timeout(void)
{
	storage_t *st = open_fresh("lock-timeout");
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	struct gate_holder h = {0};
	void *args[2] = {st, &h};
	terr_t err = TERR_INIT;
	pthread_t th;
	bson_t *doc = tt_json("{\"_id\": 1}");
	int64_t t0, t1;
	struct timespec ts;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "t", "lk", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "t", "lk", &c, &err), 0);
	pthread_create(&th, NULL, run_collmod, args);
	while (atomic_load(&h.state) != 1)
		usleep(1000);
	storage_session_set_lock_timeout(s, 20);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	TT_ASSERT(storage_doc_insert(s, c, doc, NULL, &err) != 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t1 = ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	TT_EQ_INT(err.code, 24);
	TT_ASSERT(t1 - t0 >= 15 && t1 - t0 < 2000);
	storage_txn_rollback(s);
	terr_clear(&err);
	/* no bound: the write waits until the collMod is done, then goes in */
	storage_session_set_lock_timeout(s, -1);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	atomic_store(&h.state, 2);
	TT_EQ_INT(storage_doc_insert(s, c, doc, NULL, &err), 0);
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	pthread_join(th, NULL);
	bson_destroy(doc);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

/* The document a growing "bucket" has after k appends: a counter that
 * changes size, a column per field growing by one element. */
static void
damage_doc(int id, int k, bson_t *out)
{
	bson_t data, col;

	bson_init(out);
	BSON_APPEND_INT32(out, "_id", id);
	if (k % 3 == 0)
		BSON_APPEND_INT32(out, "n", k);
	else
		BSON_APPEND_UTF8(out, "n", k % 3 == 1 ? "one" : "twotwotwo");
	BSON_APPEND_DOCUMENT_BEGIN(out, "data", &data);
	for (int f = 0; f < 3; f++) {
		char fk[4] = {(char)('a' + f), 0};
		BSON_APPEND_DOCUMENT_BEGIN(&data, fk, &col);
		for (int i = 0; i <= k; i++) {
			char key[16];
			bson_snprintf(key, sizeof(key), "%d", i);
			BSON_APPEND_INT64(&col, key, (int64_t)i * (f + 1));
		}
		bson_append_document_end(&data, &col);
	}
	bson_append_document_end(out, &data);
}

/* The stored document of id (found by _id and by RecordId) is want. */
static void
damage_check(storage_session_t *s, storage_coll_t *c, int id, recid_t rid, const bson_t *want)
{
	terr_t err = TERR_INIT;
	bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
	recid_t got_rid = 0;
	bson_t doc;

	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_doc_find_id(s, c, &v, &got_rid, &doc, &err), 0);
	TT_EQ_INT(got_rid, rid);
	TT_ASSERT(doc.len == want->len && memcmp(bson_get_data(&doc), bson_get_data(want), doc.len) == 0);
	TT_EQ_INT(storage_doc_get(s, c, rid, &doc, &err), 0);
	TT_ASSERT(doc.len == want->len && memcmp(bson_get_data(&doc), bson_get_data(want), doc.len) == 0);
	storage_txn_rollback(s);
}

static void
test_update_damages(void)
{
	storage_t *st = open_fresh("damages");
	storage_options_t o = {0};
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	bson_t *copts = tt_json("{\"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}");
	const char *names[2] = {"plain", "clustered"};
	recid_t rids[2][3];
	int ks[2][3];
	bdamages_t dm = {0};

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "d", "plain", NULL, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "d", "clustered", copts, &err), 0);
	for (int w = 0; w < 2; w++) {
		storage_coll_t *c = NULL;
		TT_EQ_INT(storage_coll_get(st, "d", names[w], &c, &err), 0);
		TT_ASSERT(w == 0 ? c->clustered_ix == NULL : c->clustered_ix != NULL && c->clustered_ix->clustered_u);
		for (int id = 0; id < 3; id++) {
			bson_t d;
			damage_doc(id, 0, &d);
			ks[w][id] = 0;
			TT_EQ_INT(storage_txn_begin(s, &err), 0);
			TT_EQ_INT(storage_doc_insert(s, c, &d, &rids[w][id], &err), 0);
			TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
			bson_destroy(&d);
		}
		/* each step appends to one document: committed, or rolled back
		 * (every 7th), several in one transaction (every 5th) */
		for (int step = 0; step < 300; step++) {
			int id = step % 3, reps = step % 5 == 0 ? 3 : 1;
			bool rollback = step % 7 == 0;
			int k0 = ks[w][id];
			TT_EQ_INT(storage_txn_begin(s, &err), 0);
			for (int r = 0; r < reps; r++) {
				bson_t old, nd;
				damage_doc(id, ks[w][id], &old);
				damage_doc(id, ks[w][id] + 1, &nd);
				TT_ASSERT(bdamages_compute(bson_get_data(&old), old.len, bson_get_data(&nd), nd.len, &dm));
				TT_EQ_INT(storage_doc_update_damages(s, c, rids[w][id], &old, &nd, &dm, &err), 0);
				ks[w][id]++;
				bson_destroy(&old);
				bson_destroy(&nd);
			}
			if (rollback) {
				storage_txn_rollback(s);
				ks[w][id] = k0;
			} else {
				TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
			}
			{
				bson_t want;
				damage_doc(id, ks[w][id], &want);
				damage_check(s, c, id, rids[w][id], &want);
				bson_destroy(&want);
			}
		}
		storage_coll_release(c);
	}
	storage_session_close(s);
	storage_close(st);
	/* reopened (the journal replays the modifies): the same documents */
	st = NULL;
	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	for (int w = 0; w < 2; w++) {
		storage_coll_t *c = NULL;
		int64_t count, size, ssize, want_size = 0;
		TT_EQ_INT(storage_coll_get(st, "d", names[w], &c, &err), 0);
		for (int id = 0; id < 3; id++) {
			bson_t want;
			damage_doc(id, ks[w][id], &want);
			damage_check(s, c, id, rids[w][id], &want);
			want_size += want.len;
			bson_destroy(&want);
		}
		TT_EQ_INT(storage_coll_stats(st, s, c, &count, &size, &ssize, &err), 0);
		TT_EQ_INT(count, 3);
		TT_EQ_INT(size, want_size);
		storage_coll_release(c);
	}
	bdamages_destroy(&dm);
	bson_destroy(copts);
	storage_session_close(s);
	close_and_clean(st);
}

/* A clustered collection whose table has the older layout (value `qu`:
 * RecordId, document; the catalog row without clusteredValue), made by
 * rewriting a new one with WiredTiger directly: its documents are read by
 * _id, by RecordId and by scans, updates (damages given or not) rewrite
 * them whole, and the count after an unclean-looking open agrees. */
static void
test_clustered_old_layout(void)
{
	storage_t *st = open_fresh("oldlayout");
	storage_options_t o = {0};
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	bson_t *copts = tt_json("{\"clusteredIndex\": {\"key\": {\"_id\": 1}, \"unique\": true}}");
	storage_coll_t *c = NULL;
	recid_t rids[20];
	char *ident;
	WT_CONNECTION *conn = NULL;
	WT_SESSION *ws = NULL;
	WT_CURSOR *cur = NULL;
	bdamages_t dm = {0};
	int64_t keys_rid[20];
	uint8_t keys[20][64], docs[20][256];
	size_t klen[20], dlen[20];
	int n = 0;

	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "d", "old", copts, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "old", &c, &err), 0);
	for (int i = 0; i < 20; i++) {
		char *j = bson_strdup_printf("{\"_id\": %d, \"v\": \"value %d\"}", i, i);
		TT_EQ_INT(insert_json(s, c, j, &rids[i], &err), 0);
		bson_free(j);
	}
	ident = bson_strdup(c->clustered_ix->ident);
	storage_coll_release(c);
	storage_session_close(s);
	storage_close(st);

	/* the table rewritten as (q: RecordId, u: document), the row's flag gone */
	TT_EQ_INT(wiredtiger_open(dir, NULL, "log=(enabled=true)", &conn), 0);
	TT_EQ_INT(conn->open_session(conn, NULL, NULL, &ws), 0);
	TT_EQ_INT(ws->open_cursor(ws, ident, NULL, NULL, &cur), 0);
	while (cur->next(cur) == 0 && n < 20) {
		WT_ITEM k, v;
		cur->get_key(cur, &k);
		cur->get_value(cur, &v);
		TT_ASSERT(k.size <= sizeof(keys[0]) && v.size - 8 <= sizeof(docs[0]));
		memcpy(keys[n], k.data, k.size);
		klen[n] = k.size;
		keys_rid[n] = 0;
		for (int b = 7; b >= 0; b--)
			keys_rid[n] = keys_rid[n] << 8 | ((const uint8_t *)v.data)[b];
		memcpy(docs[n], (const uint8_t *)v.data + 8, v.size - 8);
		dlen[n] = v.size - 8;
		n++;
	}
	TT_EQ_INT(n, 20);
	cur->close(cur);
	TT_EQ_INT(ws->drop(ws, ident, NULL), 0);
	TT_EQ_INT(ws->create(ws, ident, "key_format=u,value_format=qu"), 0);
	TT_EQ_INT(ws->open_cursor(ws, ident, NULL, NULL, &cur), 0);
	for (int i = 0; i < n; i++) {
		WT_ITEM k = {.data = keys[i], .size = klen[i]}, v = {.data = docs[i], .size = dlen[i]};
		cur->set_key(cur, &k);
		cur->set_value(cur, keys_rid[i], &v);
		TT_EQ_INT(cur->insert(cur), 0);
	}
	cur->close(cur);
	TT_EQ_INT(ws->open_cursor(ws, "table:_catalog", NULL, NULL, &cur), 0);
	cur->set_key(cur, "d.old");
	TT_EQ_INT(cur->search(cur), 0);
	{
		WT_ITEM v;
		bson_t row, out = BSON_INITIALIZER;
		bson_iter_t it;
		cur->get_value(cur, &v);
		TT_ASSERT(bson_init_static(&row, v.data, v.size));
		bson_iter_init(&it, &row);
		while (bson_iter_next(&it)) {
			if (strcmp(bson_iter_key(&it), "indexes") == 0) {
				bson_iter_t ixs, f;
				bson_t arr, ix;
				bson_iter_recurse(&it, &ixs);
				BSON_APPEND_ARRAY_BEGIN(&out, "indexes", &arr);
				while (bson_iter_next(&ixs)) {
					bson_append_document_begin(&arr, bson_iter_key(&ixs), -1, &ix);
					bson_iter_recurse(&ixs, &f);
					while (bson_iter_next(&f))
						if (strcmp(bson_iter_key(&f), "clusteredValue") != 0)
							bson_append_iter(&ix, NULL, 0, &f);
					bson_append_document_end(&arr, &ix);
				}
				bson_append_array_end(&out, &arr);
			} else {
				bson_append_iter(&out, NULL, 0, &it);
			}
		}
		v.data = bson_get_data(&out);
		v.size = out.len;
		cur->set_value(cur, &v);
		TT_EQ_INT(cur->update(cur), 0);
		bson_destroy(&out);
	}
	cur->close(cur);
	conn->close(conn, NULL);

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "old", &c, &err), 0);
	TT_ASSERT(c->clustered_ix != NULL && !c->clustered_ix->clustered_u);
	for (int i = 0; i < 20; i++) {
		bson_t doc;
		bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = i};
		recid_t rid = 0;
		char *want = bson_strdup_printf("{ \"_id\" : %d, \"v\" : \"value %d\" }", i, i);
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_find_id(s, c, &v, &rid, &doc, &err), 0);
		TT_EQ_INT(rid, rids[i]);
		TT_EQ_JSON(&doc, want);
		TT_EQ_INT(storage_doc_get(s, c, rids[i], &doc, &err), 0);
		TT_EQ_JSON(&doc, want);
		/* an update with damages on the old layout: written whole */
		{
			bson_t old_copy, *nd = tt_json("{\"_id\": 0, \"v\": \"value 0\", \"w\": 1}");
			bson_copy_to(&doc, &old_copy);
			if (i == 0) {
				TT_ASSERT(bdamages_compute(bson_get_data(&old_copy), old_copy.len, bson_get_data(nd), nd->len,
				    &dm));
				TT_EQ_INT(storage_doc_update_damages(s, c, rids[0], &old_copy, nd, &dm, &err), 0);
			}
			bson_destroy(&old_copy);
			bson_destroy(nd);
		}
		TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
		bson_free(want);
	}
	{
		storage_cursor_t *sc = NULL;
		bson_t doc;
		recid_t rid;
		int seen = 0;
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_scan_open(s, c, false, &sc, &err), 0);
		while (storage_cursor_next(sc, &rid, &doc, NULL, NULL, &err) == 1) {
			if (seen == 0)
				TT_EQ_JSON(&doc, "{ \"_id\" : 0, \"v\" : \"value 0\", \"w\" : 1 }");
			TT_EQ_INT(rid, rids[seen]);
			seen++;
		}
		storage_cursor_close(sc);
		storage_txn_rollback(s);
		TT_EQ_INT(seen, 20);
	}
	storage_coll_release(c);
	bdamages_destroy(&dm);
	bson_destroy(copts);
	bson_free(ident);
	storage_session_close(s);
	close_and_clean(st);
}

/* Point reads pack RecordIds themselves (raw cursors, storage_vint_*):
 * the bytes must be WiredTiger's own packing of a `q`, at every width, and
 * documents stored at RecordIds of each width must be found by _id, by
 * RecordId and by a scan (which reads keys through WiredTiger's unpacker). */
static void
test_recid_packing(void)
{
	static const int64_t vals[] = {0, 1, 63, 64, 65, 8255, 8256, 8257, 8258, 65535, 65536, 1LL << 24,
		(1LL << 32) + 5, (1LL << 40) + 7, (1LL << 56) - 1, 1LL << 56, INT64_MAX - 1, INT64_MAX, -1, -63,
		-64, -65, -8255, -8256, -8257, -8258, -(1LL << 24), -(1LL << 40) - 3, INT64_MIN + 1, INT64_MIN};
	static const int64_t rids[] = {1, 63, 64, 8255, 8256, 8257, 70000, 1LL << 24, (1LL << 32) + 5,
		(1LL << 40) + 7, (1LL << 56) + 9, INT64_MAX - 1};
	const size_t nv = sizeof(vals) / sizeof(vals[0]), nr = sizeof(rids) / sizeof(rids[0]);
	storage_t *st;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	terr_t err = TERR_INIT;
	bson_t doc;
	size_t i;

	for (i = 0; i < nv; i++) {
		uint8_t mine[STORAGE_VINT_MAX], theirs[16];
		size_t n = storage_vint_pack(mine, vals[i]), tn = 0;
		int64_t back = 0;

		TT_EQ_INT(wiredtiger_struct_size(NULL, &tn, "q", vals[i]), 0);
		TT_EQ_INT(wiredtiger_struct_pack(NULL, theirs, sizeof(theirs), "q", vals[i]), 0);
		TT_EQ_INT(n, tn);
		TT_ASSERT(memcmp(mine, theirs, n) == 0);
		TT_EQ_INT(storage_vint_unpack(mine, n, &back), n);
		TT_ASSERT(back == vals[i]);
		TT_EQ_INT(storage_vint_unpack(mine, n - 1, &back), 0);   /* truncated */
	}

	st = open_fresh("recids");
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_create(st, s, "d", "r", NULL, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "d", "r", &c, &err), 0);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	for (i = 0; i < nr; i++) {
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT64(&d, "_id", (int64_t)i);
		BSON_APPEND_INT64(&d, "rid", rids[i]);
		TT_EQ_INT(storage_doc_insert_at(s, c, rids[i], &d, &err), 0);
		bson_destroy(&d);
	}
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	for (i = 0; i < nr; i++) {
		bson_value_t idv = {.value_type = BSON_TYPE_INT64, .value.v_int64 = (int64_t)i};
		bson_iter_t it;
		recid_t rid = 0;

		TT_EQ_INT(storage_doc_find_id(s, c, &idv, &rid, &doc, &err), 0);
		TT_ASSERT(rid == rids[i]);
		TT_ASSERT(bson_iter_init_find(&it, &doc, "rid") && bson_iter_int64(&it) == rids[i]);
		TT_EQ_INT(storage_doc_get(s, c, rids[i], &doc, &err), 0);
		TT_ASSERT(bson_iter_init_find(&it, &doc, "_id") && bson_iter_int64(&it) == (int64_t)i);
		if (i + 1 == nr || rids[i + 1] != rids[i] + 1)
			TT_EQ_INT(storage_doc_get(s, c, rids[i] + 1, &doc, &err), 1);
	}
	TT_EQ_INT(storage_scan_open(s, c, false, &cur, &err), 0);
	for (i = 0; i < nr; i++) {
		recid_t rid = 0;
		TT_EQ_INT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err), 1);
		TT_ASSERT(rid == rids[i]);
	}
	TT_EQ_INT(storage_cursor_next(cur, NULL, &doc, NULL, NULL, &err), 0);
	storage_cursor_close(cur);
	storage_coll_release(c);
	storage_session_close(s);
	close_and_clean(st);
}

int
main(void)
{
	TT_RUN(test_open_missing_folder);
	TT_RUN(test_catalog);
	TT_RUN(test_cache_slot);
	TT_RUN(test_thread_caches);
	TT_RUN(test_documents);
	TT_RUN(test_recid_packing);
	TT_RUN(test_duplicate_id);
	TT_RUN(test_secondary_index_refused);
	TT_RUN(test_scans_save_restore);
	TT_RUN(test_secondary_indexes_with_keygen);
	TT_RUN(test_prepare_unique_and_conversion);
	TT_RUN(test_index_builds);
	TT_RUN(test_index_build_leaves_ddl);
	TT_RUN(test_concurrent_writers);
	TT_RUN(test_ddl_races_writers);
	TT_RUN(test_drop_waits_for_writer);
	TT_RUN(test_reopen);
	TT_RUN(test_update_damages);
	TT_RUN(test_clustered_old_layout);
	TT_RUN(test_in_memory);
	TT_RUN(test_lock_timeout);
	return tt_finish();
}
