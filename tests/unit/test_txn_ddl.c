/*
 * test_txn_ddl.c -- catalog changes and capped collections inside
 * multi-document transactions (issue 16), through the embedded API on a
 * replica-set database, checked against mongod's jstests/core/txns
 * (create_collection.js, create_collection_parallel.js, create_indexes.js,
 * create_existing_indexes.js, commands_in_txns_read_concern.js) and its
 * write path's capped refusals:
 *   - create / implicit creation (insert, upsert, findAndModify upsert) /
 *     createIndexes on a new collection inside a transaction: seen by the
 *     transaction only, by everyone at commit, gone after an abort;
 *   - the oplog's applyOps holds the create before the writes;
 *   - what stays refused, with mongod's codes: an existing name (48), new
 *     indexes on an existing or a non-empty collection (263), views,
 *     time-series and system collections (263), readConcern snapshot (72);
 *   - a concurrent creator of the same name wins, the transaction's commit
 *     fails with 112 WriteConflict + TransientTransactionError;
 *   - kill -9 with a committed and an uncommitted creation: the first is
 *     there after recovery, the second is not;
 *   - capped collections: insert/update/findAndModify 263, delete 20.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "tt.h"
#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

#define LSID_A "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAYQ==', 'subType': '04'}}}"
#define LSID_B "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAYg==', 'subType': '04'}}}"

static int64_t txn_a = 0, txn_b = 0;

/* Run a single-quoted command built from fmt; returns its code (0 ok) and
 * the reply in *out when out is not NULL. */
static int
run(bson_t **out, const char *dbname, const char *fmt, ...) BSON_GNUC_PRINTF(3, 4);
static int
run(bson_t **out, const char *dbname, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc, code;
	bson_t *r;

	va_start(ap, fmt);
	cmd = bson_strdupv_printf(fmt, ap);
	va_end(ap);
	r = tt_run_sq(db, dbname, cmd, &rc);
	code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	if (code == 0 && rc != 0)
		code = -1;
	if (out != NULL)
		*out = r;
	else
		tt_free_reply(r);
	bson_free(cmd);
	return code;
}

/* The session fields of transaction A's / B's next statement. */
#define IN_A(start) "'lsid': " LSID_A ", 'txnNumber': %lld, 'autocommit': false%s"
#define IN_B(start) "'lsid': " LSID_B ", 'txnNumber': %lld, 'autocommit': false%s"
#define START ", 'startTransaction': true"

static int
commit(const char *lsid, int64_t n, bson_t **out)
{
	return run(out, "admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': %lld, 'autocommit': false}", lsid,
	    (long long)n);
}

static int
abort_txn(const char *lsid, int64_t n)
{
	return run(NULL, "admin", "{'abortTransaction': 1, 'lsid': %s, 'txnNumber': %lld, 'autocommit': false}", lsid,
	    (long long)n);
}

/* Does listCollections (outside any transaction) name coll in db "t"? */
static bool
listed(const char *coll)
{
	bson_t *r;
	char filter[128];
	bool found;

	snprintf(filter, sizeof(filter), "{'listCollections': 1, 'filter': {'name': '%s'}}", coll);
	TT_EQ_INT(run(&r, "t", "%s", filter), 0);
	found = tt_get(r, "cursor.firstBatch.0.name", &(bson_iter_t){0});
	tt_free_reply(r);
	return found;
}

/* Documents in t.<coll> seen outside any transaction. */
static int64_t
count_outside(const char *coll)
{
	bson_t *r;
	bson_iter_t it;
	int64_t n = 0;

	TT_EQ_INT(run(&r, "t", "{'aggregate': '%s', 'pipeline': [{'$count': 'n'}], 'cursor': {}}", coll), 0);
	if (tt_get(r, "cursor.firstBatch.0.n", &it))
		n = tt_get_i64(r, "cursor.firstBatch.0.n");
	tt_free_reply(r);
	return n;
}

static void
test_create_commit_and_abort(void)
{
	bson_t *r;

	/* explicit create, then writes and reads inside */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'create': 'c1', " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'c1', 'documents': [{'_id': 1, 'a': 1}], " IN_A() "}", (long long)txn_a, ""),
	    0);
	TT_EQ_INT(run(&r, "t", "{'find': 'c1', 'filter': {}, " IN_A() "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.a"), 1);
	tt_free_reply(r);
	/* nobody else sees it yet */
	TT_ASSERT(!listed("c1"));
	TT_EQ_INT(count_outside("c1"), 0);
	TT_ASSERT(!listed("c1"));   /* the read above did not create it either */
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 0);
	TT_ASSERT(listed("c1"));
	TT_EQ_INT(count_outside("c1"), 1);

	/* the oplog: one applyOps, the create first, then the insert */
	TT_EQ_INT(run(&r, "local", "{'find': 'oplog.rs', 'filter': {'o.applyOps.0.o.create': 'c1'}}"), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.0.op"), "c");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.0.ns"), "t.$cmd");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.1.op"), "i");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.1.ns"), "t.c1");
	tt_free_reply(r);

	/* an aborted creation leaves nothing, and the name is free again */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'insert': 'c2', 'documents': [{'_id': 1}], " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'create': 'c3', " IN_A() "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(abort_txn(LSID_A, txn_a), 0);
	TT_ASSERT(!listed("c2"));
	TT_ASSERT(!listed("c3"));
	TT_EQ_INT(run(NULL, "t", "{'insert': 'c2', 'documents': [{'_id': 7}]}"), 0);
	TT_EQ_INT(count_outside("c2"), 1);

	/* upsert and findAndModify upsert create implicitly too */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'update': 'c4', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'a': 1}}, 'upsert': true}], "
	    IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(&r, "t", "{'findAndModify': 'c5', 'query': {'_id': 2}, 'update': {'$set': {'b': 1}}, 'upsert': true, "
	    "'new': true, " IN_A() "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(tt_get_i64(r, "value.b"), 1);
	tt_free_reply(r);
	TT_ASSERT(!listed("c4"));
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 0);
	TT_EQ_INT(count_outside("c4"), 1);
	TT_EQ_INT(count_outside("c5"), 1);

	/* a failed statement aborts the transaction: its creations go too */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'insert': 'c6', 'documents': [{'_id': 1}], " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'c6', 'documents': [{'_id': 1}], " IN_A() "}", (long long)txn_a, ""), 11000);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 251);
	TT_ASSERT(!listed("c6"));
}

static void
test_create_refusals(void)
{
	bson_t *r;

	/* an existing name: 48, and the transaction is over */
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'create': 'c1', " IN_A() "}", (long long)txn_a, START), 48);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Collection t.c1 already exists.");
	tt_free_reply(r);
	TT_EQ_INT(abort_txn(LSID_A, txn_a), 251);
	/* twice in one transaction */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'create': 'd1', " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'create': 'd1', " IN_A() "}", (long long)txn_a, ""), 48);
	TT_ASSERT(!listed("d1"));
	/* views, time-series, system collections */
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'create': 'v1', 'viewOn': 'c1', 'pipeline': [], " IN_A() "}", (long long)txn_a, START),
	    263);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Cannot create a view in a multi-document transaction.");
	tt_free_reply(r);
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'create': 'ts1', 'timeseries': {'timeField': 't'}, " IN_A() "}", (long long)txn_a,
	    START), 263);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Cannot create a time-series collection in a multi-document transaction.");
	tt_free_reply(r);
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'insert': 'system.js', 'documents': [{'_id': 'f', 'value': 1}], " IN_A() "}",
	    (long long)txn_a, START), 263);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Cannot create system collection t.system.js within a transaction.");
	tt_free_reply(r);
	/* readConcern snapshot: no create, no createIndexes (72), no implicit creation (263) */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'create': 'd2', 'readConcern': {'level': 'snapshot'}, " IN_A() "}", (long long)txn_a,
	    START), 72);
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'find': 'c1', 'readConcern': {'level': 'snapshot'}, " IN_A() "}", (long long)txn_a,
	    START), 0);
	TT_EQ_INT(run(NULL, "t", "{'createIndexes': 'd2', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}], " IN_A() "}",
	    (long long)txn_a, ""), 72);
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'find': 'c1', 'readConcern': {'level': 'snapshot'}, " IN_A() "}", (long long)txn_a,
	    START), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'd2', 'documents': [{}], " IN_A() "}", (long long)txn_a, ""), 263);
	TT_ASSERT(!listed("d2"));
	/* drop stays refused */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'drop': 'c1', " IN_A() "}", (long long)txn_a, START), 263);
	TT_ASSERT(listed("c1"));
}

static void
test_create_indexes(void)
{
	bson_t *r;

	/* on a collection createIndexes creates, then used by the transaction */
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'createIndexes': 'i1', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}], " IN_A() "}",
	    (long long)txn_a, START), 0);
	TT_EQ_INT(tt_get_i64(r, "numIndexesBefore"), 1);
	TT_EQ_INT(tt_get_i64(r, "numIndexesAfter"), 2);
	{ bson_iter_t bi; TT_ASSERT(tt_get(r, "createdCollectionAutomatically", &bi) && bson_iter_as_bool(&bi)); }
	tt_free_reply(r);
	/* an index that exists already is fine */
	TT_EQ_INT(run(NULL, "t", "{'createIndexes': 'i1', 'indexes': [{'key': {'_id': 1}, 'name': '_id_'}], " IN_A() "}",
	    (long long)txn_a, ""), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'i1', 'documents': [{'_id': 1, 'a': [1, 2, 3]}, {'_id': 2, 'a': 5}], " IN_A()
	    "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(run(&r, "t", "{'find': 'i1', 'filter': {'a': 2}, 'hint': 'a_1', " IN_A() "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 1);
	tt_free_reply(r);
	/* not once it has documents */
	TT_EQ_INT(run(&r, "t", "{'createIndexes': 'i1', 'indexes': [{'key': {'b': 1}, 'name': 'b_1'}], " IN_A() "}",
	    (long long)txn_a, ""), 263);
	TT_EQ_STR(tt_get_str(r, "errmsg"),
	    "Cannot create new indexes on non-empty collection t.i1 in a multi-document transaction.");
	tt_free_reply(r);
	TT_ASSERT(!listed("i1"));   /* that failure aborted the transaction */

	/* explicit create, then an index, then commit: the index is there, and maintained */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'create': 'i2', " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'createIndexes': 'i2', 'indexes': [{'key': {'a': 1}, 'name': 'a_1', 'unique': true}], "
	    IN_A() "}", (long long)txn_a, ""), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'i2', 'documents': [{'_id': 1, 'a': 1}], " IN_A() "}", (long long)txn_a, ""),
	    0);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 0);
	TT_EQ_INT(run(&r, "t", "{'listIndexes': 'i2'}"), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "a_1");
	tt_free_reply(r);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'i2', 'documents': [{'_id': 2, 'a': 1}]}"), 0);   /* a write error */
	TT_EQ_INT(count_outside("i2"), 1);
	/* the oplog's applyOps: create, createIndexes, insert */
	TT_EQ_INT(run(&r, "local", "{'find': 'oplog.rs', 'filter': {'o.applyOps.0.o.create': 'i2'}}"), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.1.o.createIndexes"), "i2");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.1.o.name"), "a_1");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.2.op"), "i");
	tt_free_reply(r);

	/* new indexes on an existing collection: 263; existing ones: fine */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'createIndexes': 'i2', 'indexes': [{'key': {'a': 1}, 'name': 'a_1', 'unique': true}], "
	    IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(&r, "t", "{'createIndexes': 'i2', 'indexes': [{'key': {'z': 1}, 'name': 'z_1'}], " IN_A() "}",
	    (long long)txn_a, ""), 263);
	TT_EQ_STR(tt_get_str(r, "errmsg"),
	    "Cannot create new indexes on existing collection t.i2 in a multi-document transaction.");
	tt_free_reply(r);
	TT_EQ_INT(abort_txn(LSID_A, txn_a), 251);
}

static void
test_concurrent_creators(void)
{
	bson_t *r;

	/* outside create of the same name wins; the commit fails with 112 */
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p1', 'documents': [{'_id': 1}], " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'create': 'p1'}"), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p1', 'documents': [{'_id': 2}, {'_id': 3}]}"), 0);
	TT_EQ_INT(commit(LSID_A, txn_a, &r), 112);
	TT_EQ_STR(tt_get_str(r, "errorLabels.0"), "TransientTransactionError");
	tt_free_reply(r);
	TT_EQ_INT(count_outside("p1"), 2);

	/* two transactions: the first to commit wins */
	txn_a++;
	txn_b++;
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p2', 'documents': [{'_id': 'b'}], " IN_B() "}", (long long)txn_b, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'create': 'p2', " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p2', 'documents': [{'_id': 'a1'}, {'_id': 'a2'}], " IN_A() "}",
	    (long long)txn_a, ""), 0);
	TT_EQ_INT(commit(LSID_B, txn_b, NULL), 0);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 112);
	TT_EQ_INT(count_outside("p2"), 1);

	/* distinct names: both commit */
	txn_a++;
	txn_b++;
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p3', 'documents': [{}], " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'p4', 'documents': [{}], " IN_B() "}", (long long)txn_b, START), 0);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 0);
	TT_EQ_INT(commit(LSID_B, txn_b, NULL), 0);
	TT_EQ_INT(count_outside("p3") + count_outside("p4"), 2);
}

static void
test_capped_refused(void)
{
	bson_t *r;

	TT_EQ_INT(run(NULL, "t", "{'create': 'cap', 'capped': true, 'size': 100000}"), 0);
	TT_EQ_INT(run(NULL, "t", "{'insert': 'cap', 'documents': [{'_id': 1, 'a': 1}]}"), 0);
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'insert': 'cap', 'documents': [{'_id': 2}], " IN_A() "}", (long long)txn_a, START), 263);
	TT_EQ_STR(tt_get_str(r, "errmsg"),
	    "Collection 't.cap' is a capped collection. Writes in transactions are not allowed on capped collections.");
	tt_free_reply(r);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 251);
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'update': 'cap', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'a': 2}}}], " IN_A() "}",
	    (long long)txn_a, START), 263);
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'findAndModify': 'cap', 'query': {'_id': 1}, 'update': {'$set': {'a': 2}}, " IN_A() "}",
	    (long long)txn_a, START), 263);
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'delete': 'cap', 'deletes': [{'q': {'_id': 1}, 'limit': 1}], " IN_A() "}",
	    (long long)txn_a, START), 20);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Cannot remove from a capped collection in a multi-document transaction: t.cap");
	tt_free_reply(r);
	txn_a++;
	TT_EQ_INT(run(NULL, "t", "{'findAndModify': 'cap', 'query': {'_id': 1}, 'remove': true, " IN_A() "}",
	    (long long)txn_a, START), 263);
	/* reads are fine, and nothing changed */
	txn_a++;
	TT_EQ_INT(run(&r, "t", "{'find': 'cap', " IN_A() "}", (long long)txn_a, START), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.a"), 1);
	tt_free_reply(r);
	TT_EQ_INT(commit(LSID_A, txn_a, NULL), 0);
	/* outside a transaction the writes go on */
	TT_EQ_INT(run(NULL, "t", "{'delete': 'cap', 'deletes': [{'q': {'_id': 1}, 'limit': 1}]}"), 0);
}

/* kill -9 after one committed (j: true) creation and during an uncommitted one */
static void
test_kill9(void)
{
	char *kdir = tt_tmpdir("txn-ddl-kill9");
	int fds[2];
	pid_t pid;
	char c;
	tamga_t *kdb;
	int rc, status;
	bson_t *r;

	TT_ASSERT(pipe(fds) == 0);
	pid = fork();
	TT_ASSERT(pid >= 0);
	if (pid == 0) {
		tamga_t *cdb = tt_open_replset(kdir, "create,replSet=rs0");
		bson_t *cr;
		int crc;
		if (cdb == NULL)
			_exit(2);
		cr = tt_run_sq(cdb, "t", "{'create': 'kept', 'lsid': " LSID_A ", 'txnNumber': 1, 'autocommit': false, "
		    "'startTransaction': true}", &crc);
		tt_free_reply(cr);
		cr = tt_run_sq(cdb, "t", "{'insert': 'kept', 'documents': [{'_id': 1}], 'lsid': " LSID_A ", "
		    "'txnNumber': 1, 'autocommit': false}", &crc);
		tt_free_reply(cr);
		cr = tt_run_sq(cdb, "admin", "{'commitTransaction': 1, 'writeConcern': {'j': true}, 'lsid': " LSID_A ", "
		    "'txnNumber': 1, 'autocommit': false}", &crc);
		tt_free_reply(cr);
		if (crc != 0)
			_exit(3);
		cr = tt_run_sq(cdb, "t", "{'insert': 'lost', 'documents': [{'_id': 1}], 'lsid': " LSID_B ", "
		    "'txnNumber': 1, 'autocommit': false, 'startTransaction': true}", &crc);
		tt_free_reply(cr);
		/* a later j: true commit flushes the journal past the uncommitted one */
		cr = tt_run_sq(cdb, "t", "{'insert': 'other', 'documents': [{'_id': 1}], 'writeConcern': {'j': true}}", &crc);
		tt_free_reply(cr);
		if (write(fds[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(fds[1]);
	TT_ASSERT(read(fds[0], &c, 1) == 1);
	close(fds[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	kdb = tt_open_replset(kdir, "replSet=rs0");
	TT_ASSERT(kdb != NULL);
	r = tt_run_sq(kdb, "t", "{'listCollections': 1, 'filter': {'name': 'kept'}}", &rc);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.name"), "kept");
	tt_free_reply(r);
	r = tt_run_sq(kdb, "t", "{'find': 'kept'}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 1);
	tt_free_reply(r);
	r = tt_run_sq(kdb, "t", "{'listCollections': 1, 'filter': {'name': 'lost'}}", &rc);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.0.name", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* the name is free, and empty */
	r = tt_run_sq(kdb, "t", "{'insert': 'lost', 'documents': [{'_id': 2}]}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = tt_run_sq(kdb, "t", "{'find': 'lost'}", &rc);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0._id"), 2);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.1._id", &(bson_iter_t){0}));
	tt_free_reply(r);
	tt_close_rm(kdb, kdir);
}

/* a clean close with a transaction that created a collection open: gone at reopen */
static void
test_close_open_txn(void)
{
	char *cdir = tt_tmpdir("txn-ddl-close");
	tamga_t *cdb = tt_open_replset(cdir, "create,replSet=rs0");
	bson_t *r;
	int rc;

	TT_ASSERT(cdb != NULL);
	r = tt_run_sq(cdb, "t", "{'insert': 'open', 'documents': [{'_id': 1}], 'lsid': " LSID_A ", 'txnNumber': 1, "
	    "'autocommit': false, 'startTransaction': true}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	tamga_close(cdb);
	cdb = tt_open_replset(cdir, "replSet=rs0");
	TT_ASSERT(cdb != NULL);
	r = tt_run_sq(cdb, "t", "{'listCollections': 1}", &rc);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.0.name", &(bson_iter_t){0}));
	tt_free_reply(r);
	tt_close_rm(cdb, cdir);
}

int
main(void)
{
	dir = tt_tmpdir("txn-ddl");
	db = tt_open_replset(dir, "create,replSet=rs0");
	TT_ASSERT(db != NULL);
	TT_RUN(test_create_commit_and_abort);
	TT_RUN(test_create_refusals);
	TT_RUN(test_create_indexes);
	TT_RUN(test_concurrent_creators);
	TT_RUN(test_capped_refused);
	tt_close_rm(db, dir);
	TT_RUN(test_kill9);
	TT_RUN(test_close_open_txn);
	return tt_finish();
}
