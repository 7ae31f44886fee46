/*
 * test_txn.c -- logical sessions, multi-document transactions and retryable
 * writes through the embedded API (tamga_open "replSet=rs0"): the state
 * machine's answers and mongod's codes (20 on a standalone, 72, 225, 251,
 * 256, 263, 50768, 117), reads seeing the transaction's own writes and
 * nobody else's, aborts leaving nothing, a write conflict failing with 112 +
 * TransientTransactionError and ending the transaction, a plain write
 * waiting for a transaction instead of failing, the reaper, kills, and
 * retryable writes applied once, also after a restart.
 */
#include "tt.h"
#include "tt_embedded.h"

#include <pthread.h>
#include <unistd.h>

static tamga_t *db;
static char *dir;

/* two sessions' lsids */
#define LSID_A "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAAQ==', 'subType': '04'}}}"
#define LSID_B "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAAg==', 'subType': '04'}}}"
#define LSID_C "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAAw==', 'subType': '04'}}}"
#define LSID_D "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAABA==', 'subType': '04'}}}"

/* Run a single-quoted command; returns its code (0 ok). */
static int
run_code(const char *dbname, const char *cmd, bson_t **out)
{
	int rc;
	bson_t *r = tt_run_sq(db, dbname, cmd, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	if (out != NULL)
		*out = r;
	else
		tt_free_reply(r);
	return code;
}

static int
code_of(const char *dbname, const char *fmt, ...) BSON_GNUC_PRINTF(2, 3);
static int
code_of(const char *dbname, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int code;

	va_start(ap, fmt);
	cmd = bson_strdupv_printf(fmt, ap);
	va_end(ap);
	code = run_code(dbname, cmd, NULL);
	bson_free(cmd);
	return code;
}

/* The reply's errorLabels[0], or "" */
static bool
has_label(const bson_t *r, const char *label)
{
	const char *l = tt_get_str(r, "errorLabels.0");
	return l != NULL && strcmp(l, label) == 0;
}

static int64_t
count_docs(const char *coll, const char *filter)
{
	char *cmd = bson_strdup_printf("{'aggregate': '%s', 'pipeline': [{'$match': %s}, {'$count': 'n'}], "
	    "'cursor': {}}", coll, filter);
	int rc;
	bson_t *r = tt_run_sq(db, "t", cmd, &rc);
	int64_t n = tt_get(r, "cursor.firstBatch.0.n", &(bson_iter_t){0}) ? tt_get_i64(r, "cursor.firstBatch.0.n") : 0;

	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_free(cmd);
	return n;
}

static void
test_standalone_refuses(void)
{
	char *sdir = tt_tmpdir("txn-standalone");
	tamga_t *sdb = tt_open_new(sdir);
	int rc;
	bson_t *r;

	TT_ASSERT(sdb != NULL);
	r = tt_run_sq(sdb, "t", "{'insert': 'c', 'documents': [{'_id': 1}], 'lsid': " LSID_A ", 'txnNumber': 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 20);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Transaction numbers are only allowed on a replica set member or mongos");
	tt_free_reply(r);
	r = tt_run_sq(sdb, "admin", "{'commitTransaction': 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 20);
	tt_free_reply(r);
	tt_close_rm(sdb, sdir);
}

static void
test_bad_session_options(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'find': 'c', 'txnNumber': 1}"), 72);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'autocommit': false}", LSID_A), 72);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 1, 'autocommit': true}", LSID_A), 72);
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [], 'lsid': %s, 'txnNumber': 1, 'startTransaction': true}",
	    LSID_A), 72);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': -1, 'autocommit': false}", LSID_A), 72);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 'x', 'autocommit': false}", LSID_A), 14);
	/* a txnNumber on a command that is neither: 50768 */
	TT_EQ_INT(run_code("t", "{'ping': 1, 'lsid': " LSID_A ", 'txnNumber': 1}", &r), 50768);
	TT_EQ_STR(tt_get_str(r, "codeName"), "NotARetryableWriteCommand");
	tt_free_reply(r);
	/* commands refused inside a transaction: nothing starts */
	TT_EQ_INT(run_code("t", "{'count': 'c', 'lsid': " LSID_A ", 'txnNumber': 1, 'autocommit': false, "
	    "'startTransaction': true}", &r), 263);
	TT_ASSERT(strstr(tt_get_str(r, "errmsg"), "Cannot run 'count' in a multi-document transaction.") != NULL);
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'listCollections': 1, 'lsid': %s, 'txnNumber': 1, 'autocommit': false, "
	    "'startTransaction': true}", LSID_A), 263);
	TT_EQ_INT(code_of("admin", "{'find': 'c', 'lsid': %s, 'txnNumber': 1, 'autocommit': false, "
	    "'startTransaction': true}", LSID_A), 263);
	TT_EQ_INT(code_of("t", "{'aggregate': 'c', 'pipeline': [{'$out': 'd'}], 'cursor': {}, 'lsid': %s, "
	    "'txnNumber': 1, 'autocommit': false, 'startTransaction': true}", LSID_A), 263);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'readConcern': {'level': 'linearizable'}, 'lsid': %s, 'txnNumber': 1, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 72);
	/* commit outside a transaction */
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1}"), 125);
}

static void
test_commit_visibility(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 0, 'v': 0}]}"), 0);
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 1, 'v': 1}], 'lsid': %s, 'txnNumber': 5, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("t", "{'update': 'c', 'updates': [{'q': {'_id': 0}, 'u': {'$set': {'v': 10}}}], 'lsid': %s, "
	    "'txnNumber': 5, 'autocommit': false}", LSID_A), 0);
	/* the transaction sees its own writes */
	TT_EQ_INT(run_code("t", "{'find': 'c', 'filter': {'_id': 0}, 'lsid': " LSID_A ", 'txnNumber': 5, "
	    "'autocommit': false}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.v"), 10);
	tt_free_reply(r);
	/* nobody else does */
	TT_EQ_INT(count_docs("c", "{}"), 1);
	TT_EQ_INT(count_docs("c", "{'v': 10}"), 0);
	/* an older number, a second start at the same one */
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 4, 'autocommit': false}", LSID_A), 225);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 5, 'autocommit': false, "
	    "'startTransaction': true}", LSID_A), 117);
	/* a later statement may not name a readConcern or a writeConcern */
	TT_EQ_INT(code_of("t", "{'find': 'c', 'readConcern': {'level': 'snapshot'}, 'lsid': %s, 'txnNumber': 6, "
	    "'autocommit': false, 'startTransaction': true}", LSID_C), 0);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'readConcern': {'level': 'snapshot'}, 'lsid': %s, 'txnNumber': 6, "
	    "'autocommit': false}", LSID_C), 72);
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': 6, 'autocommit': false}", LSID_C),
	    251);
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'writeConcern': {'w': 1, 'j': true}, 'lsid': %s, "
	    "'txnNumber': 5, 'autocommit': false}", LSID_A), 0);
	TT_EQ_INT(count_docs("c", "{}"), 2);
	TT_EQ_INT(count_docs("c", "{'v': 10}"), 1);
	/* the oplog has the transaction as one applyOps entry with its session
	 * info, and config.transactions its commit */
	TT_EQ_INT(run_code("local", "{'find': 'oplog.rs', 'filter': {'o.applyOps': {'$exists': true}, 'txnNumber': 5}}",
	    &r), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.ns"), "admin.$cmd");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.0.op"), "i");
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.o.applyOps.1.op"), "u");
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.0.o.applyOps.2", &(bson_iter_t){0}));
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.lsid.id", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(run_code("config", "{'find': 'transactions', 'filter': {'txnNum': 5}}", &r), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.state"), "committed");
	tt_free_reply(r);
	/* a retried commit answers the first outcome; nothing else may run */
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': 5, 'autocommit': false}", LSID_A),
	    0);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 5, 'autocommit': false}", LSID_A), 256);
	TT_EQ_INT(code_of("admin", "{'abortTransaction': 1, 'lsid': %s, 'txnNumber': 5, 'autocommit': false}", LSID_A),
	    256);
	/* a transaction that never started */
	TT_EQ_INT(run_code("admin", "{'commitTransaction': 1, 'lsid': " LSID_A ", 'txnNumber': 9, 'autocommit': false}",
	    &r), 251);
	TT_ASSERT(has_label(r, "TransientTransactionError"));
	tt_free_reply(r);
}

static void
test_abort_leaves_nothing(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 2}, {'_id': 3}], 'lsid': %s, 'txnNumber': 10, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("t", "{'delete': 'c', 'deletes': [{'q': {'_id': 0}, 'limit': 1}], 'lsid': %s, "
	    "'txnNumber': 10, 'autocommit': false}", LSID_A), 0);
	TT_EQ_INT(code_of("admin", "{'abortTransaction': 1, 'lsid': %s, 'txnNumber': 10, 'autocommit': false}", LSID_A),
	    0);
	TT_EQ_INT(count_docs("c", "{}"), 2);
	TT_EQ_INT(count_docs("c", "{'_id': 0}"), 1);
	TT_EQ_INT(run_code("admin", "{'commitTransaction': 1, 'lsid': " LSID_A ", 'txnNumber': 10, 'autocommit': false}",
	    &r), 251);
	TT_ASSERT(strstr(tt_get_str(r, "errmsg"), "has been aborted") != NULL);
	tt_free_reply(r);
	TT_EQ_INT(code_of("admin", "{'abortTransaction': 1, 'lsid': %s, 'txnNumber': 10, 'autocommit': false}", LSID_A),
	    251);

	/* a statement that fails ends the transaction: its earlier writes go too */
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 4}], 'lsid': %s, 'txnNumber': 11, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(run_code("t", "{'insert': 'c', 'documents': [{'_id': 1}], 'lsid': " LSID_A ", 'txnNumber': 11, "
	    "'autocommit': false}", &r), 11000);
	TT_ASSERT(tt_get(r, "keyValue._id", &(bson_iter_t){0}));
	TT_ASSERT(!tt_get(r, "errorLabels", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 11, 'autocommit': false}", LSID_A), 251);
	TT_EQ_INT(count_docs("c", "{'_id': 4}"), 0);
	/* a collection created inside goes with the abort (a newer txnNumber
	 * aborts 12; test_txn_ddl has the rest) */
	TT_EQ_INT(code_of("t", "{'insert': 'newcoll', 'documents': [{'_id': 1}], 'lsid': %s, 'txnNumber': 12, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("t", "{'create': 'newcoll', 'lsid': %s, 'txnNumber': 13, 'autocommit': false, "
	    "'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("admin", "{'abortTransaction': 1, 'lsid': %s, 'txnNumber': 13, 'autocommit': false}", LSID_A), 0);
	TT_EQ_INT(count_docs("newcoll", "{}"), 0);
	TT_EQ_INT(code_of("t", "{'create': 'newcoll'}"), 0);
}

static void
test_write_conflict(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'v': 1}}}], 'lsid': %s, "
	    "'txnNumber': 20, 'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(run_code("t", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'v': 100}}}], 'lsid': "
	    LSID_B ", 'txnNumber': 1, 'autocommit': false, 'startTransaction': true}", &r), 112);
	TT_ASSERT(has_label(r, "TransientTransactionError"));
	TT_EQ_STR(tt_get_str(r, "codeName"), "WriteConflict");
	tt_free_reply(r);
	/* B's transaction is over */
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': 1, 'autocommit': false}", LSID_B),
	    251);
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': 20, 'autocommit': false}", LSID_A),
	    0);
	TT_EQ_INT(count_docs("c", "{'_id': 1, 'v': 2}"), 1);
}

struct bg_update {
	int code;
};

static void *
bg_inc(void *arg)
{
	struct bg_update *b = arg;

	b->code = code_of("t", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'v': 1000}}}]}");
	return NULL;
}

/* A plain write against a document a transaction changed waits for it
 * (retried inside), and is applied after the commit: no lost update. */
static void
test_plain_write_waits(void)
{
	pthread_t th;
	struct bg_update b = {-1};

	TT_EQ_INT(code_of("t", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'v': 1}}}], 'lsid': %s, "
	    "'txnNumber': 30, 'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	pthread_create(&th, NULL, bg_inc, &b);
	usleep(200000);
	TT_EQ_INT(b.code, -1);   /* still waiting */
	TT_EQ_INT(code_of("admin", "{'commitTransaction': 1, 'lsid': %s, 'txnNumber': 30, 'autocommit': false}", LSID_A),
	    0);
	pthread_join(th, NULL);
	TT_EQ_INT(b.code, 0);
	TT_EQ_INT(count_docs("c", "{'_id': 1, 'v': 1003}"), 1);
}

static void
test_kill_and_reap(void)
{
	bson_t *r;

	/* killSessions aborts the session's transaction */
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 50}], 'lsid': %s, 'txnNumber': 40, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("admin", "{'killSessions': [%s]}", LSID_A), 0);
	TT_EQ_INT(count_docs("c", "{'_id': 50}"), 0);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 40, 'autocommit': false}", LSID_A), 251);
	/* killAllSessions: [] kills every one */
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 51}], 'lsid': %s, 'txnNumber': 41, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(code_of("admin", "{'killAllSessions': []}"), 0);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 41, 'autocommit': false}", LSID_A), 251);
	/* the reaper: transactionLifetimeLimitSeconds */
	TT_EQ_INT(code_of("admin", "{'setParameter': 1, 'transactionLifetimeLimitSeconds': 0}"), 2);
	TT_EQ_INT(code_of("admin", "{'setParameter': 1, 'transactionLifetimeLimitSeconds': 1}"), 0);
	TT_EQ_INT(code_of("t", "{'insert': 'c', 'documents': [{'_id': 52}], 'lsid': %s, 'txnNumber': 42, "
	    "'autocommit': false, 'startTransaction': true}", LSID_A), 0);
	TT_EQ_INT(run_code("admin", "{'serverStatus': 1}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "transactions.currentOpen"), 1);
	TT_EQ_INT(tt_get_i64(r, "transactions.currentActive"), 0);
	TT_ASSERT(tt_get_i64(r, "transactions.totalCommitted") >= 3);
	tt_free_reply(r);
	usleep(2600000);
	TT_EQ_INT(code_of("t", "{'find': 'c', 'lsid': %s, 'txnNumber': 42, 'autocommit': false}", LSID_A), 251);
	TT_EQ_INT(count_docs("c", "{'_id': 52}"), 0);
	TT_EQ_INT(run_code("admin", "{'serverStatus': 1}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "transactions.currentOpen"), 0);
	tt_free_reply(r);
	TT_EQ_INT(code_of("admin", "{'setParameter': 1, 'transactionLifetimeLimitSeconds': 60}"), 0);
}

static void
test_retryable_writes(void)
{
	bson_t *r;

	TT_EQ_INT(run_code("t", "{'insert': 'r', 'documents': [{'_id': 1}, {'_id': 2}], 'lsid': " LSID_B ", "
	    "'txnNumber': 7}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	tt_free_reply(r);
	/* the retry answers the first reply, applies nothing */
	TT_EQ_INT(run_code("t", "{'insert': 'r', 'documents': [{'_id': 1}, {'_id': 2}], 'lsid': " LSID_B ", "
	    "'txnNumber': 7}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	TT_ASSERT(!tt_get(r, "writeErrors", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'update': 'r', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}], 'lsid': %s, "
	    "'txnNumber': 8}", LSID_B), 0);
	TT_EQ_INT(code_of("t", "{'update': 'r', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}], 'lsid': %s, "
	    "'txnNumber': 8}", LSID_B), 0);
	TT_EQ_INT(count_docs("r", "{'_id': 1, 'n': 1}"), 1);
	/* one oplog entry for it (the retry logged nothing), with its session info */
	TT_EQ_INT(run_code("local", "{'find': 'oplog.rs', 'filter': {'ns': 't.r', 'op': 'u', 'txnNumber': 8}}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.stmtId"), 0);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.1", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(run_code("config", "{'find': 'transactions', 'filter': {'txnNum': 8}}", &r), 0);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.lastWriteOpTime.ts", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'insert': 'r', 'documents': [{'_id': 3}], 'lsid': %s, 'txnNumber': 7}", LSID_B), 225);
	/* a transaction's number cannot be retried as a retryable write */
	TT_EQ_INT(code_of("t", "{'find': 'r', 'lsid': %s, 'txnNumber': 9, 'autocommit': false, "
	    "'startTransaction': true}", LSID_B), 0);
	TT_EQ_INT(code_of("t", "{'insert': 'r', 'documents': [{'_id': 3}], 'lsid': %s, 'txnNumber': 9}", LSID_B), 217);
	TT_EQ_INT(code_of("t", "{'findAndModify': 'r', 'query': {'_id': 2}, 'update': {'$inc': {'n': 5}}, 'lsid': %s, "
	    "'txnNumber': 10}", LSID_B), 0);
	TT_EQ_INT(run_code("t", "{'findAndModify': 'r', 'query': {'_id': 2}, 'update': {'$inc': {'n': 5}}, 'lsid': "
	    LSID_B ", 'txnNumber': 10}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "lastErrorObject.n"), 1);
	tt_free_reply(r);
	TT_EQ_INT(count_docs("r", "{'_id': 2, 'n': 5}"), 1);
	TT_EQ_INT(run_code("config", "{'find': 'transactions', 'filter': {'_id.id': {'$binary': {'base64': "
	    "'AAAAAAAAQACAAAAAAAAAAg==', 'subType': '04'}}}}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.txnNum"), 10);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.lastWriteDate", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(run_code("admin", "{'serverStatus': 1}", &r), 0);
	TT_ASSERT(tt_get_i64(r, "transactions.retriedCommandsCount") >= 3);
	tt_free_reply(r);

	/* after a restart the session still knows its number: the same one is
	 * not applied again (217), an older one is too old, a newer one runs */
	tamga_close(db);
	{
		TT_ASSERT((db = tt_open_replset(dir, "replSet=rs0,enableTestCommands")) != NULL);
	}
	/* findAndModify: rebuilt from its entry (needsRetryImage) and
	 * config.image_collection, as mongod 5.1+ */
	TT_EQ_INT(run_code("t", "{'findAndModify': 'r', 'query': {'_id': 2}, 'update': {'$inc': {'n': 5}}, 'lsid': "
	    LSID_B ", 'txnNumber': 10}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "lastErrorObject.n"), 1);
	{ bson_iter_t ue; TT_ASSERT(tt_get(r, "lastErrorObject.updatedExisting", &ue) && bson_iter_as_bool(&ue)); }
	TT_EQ_INT(tt_get_i64(r, "value._id"), 2);
	TT_ASSERT(!tt_get(r, "value.n", &(bson_iter_t){0}));   /* the pre-image (new: false) */
	tt_free_reply(r);
	TT_EQ_INT(count_docs("r", "{'_id': 2, 'n': 5}"), 1);
	TT_EQ_INT(run_code("config", "{'find': 'image_collection', 'filter': {'txnNum': 10}}", &r), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.imageKind"), "preImage");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.image._id"), 2);
	tt_free_reply(r);
	TT_EQ_INT(run_code("local", "{'find': 'oplog.rs', 'filter': {'txnNumber': 10, 'op': 'u'}}", &r), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.needsRetryImage"), "preImage");
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'insert': 'r', 'documents': [{'_id': 3}], 'lsid': %s, 'txnNumber': 8}", LSID_B), 225);
	TT_EQ_INT(code_of("t", "{'insert': 'r', 'documents': [{'_id': 3}], 'lsid': %s, 'txnNumber': 11}", LSID_B), 0);
	TT_EQ_INT(count_docs("r", "{}"), 3);

	/* single-statement writes retried after a restart: the reply rebuilt
	 * from the oplog entry (mongod's), nothing applied twice; a write that
	 * changed nothing left no entry and runs again */
	TT_EQ_INT(code_of("t", "{'update': 'r', 'updates': [{'q': {'_id': 9}, 'u': {'$set': {'u': 1}}, 'upsert': true}], "
	    "'lsid': %s, 'txnNumber': 12}", LSID_C), 0);
	TT_EQ_INT(code_of("t", "{'update': 'r', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}], 'lsid': %s, "
	    "'txnNumber': 13}", LSID_B), 0);
	tamga_close(db);
	TT_ASSERT((db = tt_open_replset(dir, "replSet=rs0,enableTestCommands")) != NULL);
	TT_EQ_INT(run_code("t", "{'insert': 'r', 'documents': [{'_id': 3}], 'lsid': " LSID_B ", 'txnNumber': 13}", &r),
	    0);   /* statement 0 ran: an insert retry answers n: 1, as mongod, and inserts nothing */
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	tt_free_reply(r);
	TT_EQ_INT(count_docs("r", "{'_id': 3}"), 1);
	TT_EQ_INT(run_code("t", "{'update': 'r', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}], 'lsid': " LSID_B
	    ", 'txnNumber': 13}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	TT_EQ_INT(count_docs("r", "{'_id': 1, 'n': 2}"), 1);
	TT_EQ_INT(run_code("t", "{'update': 'r', 'updates': [{'q': {'_id': 9}, 'u': {'$set': {'u': 1}}, 'upsert': true}], "
	    "'lsid': " LSID_C ", 'txnNumber': 12}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "upserted.0._id"), 9);
	tt_free_reply(r);
	TT_EQ_INT(count_docs("r", "{'_id': 9}"), 1);
}

/* Retryable batches per stmtId (mongod's checkStatementExecuted): a retry
 * answers the statements the session executed and runs the others, in
 * memory and after a restart (the history read back from the oplog chain
 * the config.transactions row starts); each storage transaction of a batch
 * writes the row with it. */
static void
test_retryable_batches(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'insert': 'b', 'documents': [{'_id': 2}]}"), 0);
	/* stmtIds 5, 6, 7: the second fails (duplicate _id) */
	TT_EQ_INT(run_code("t", "{'insert': 'b', 'ordered': false, 'documents': [{'_id': 1}, {'_id': 2}, {'_id': 3}], "
	    "'stmtIds': [5, 6, 7], 'lsid': " LSID_D ", 'txnNumber': 20}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 2);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.index"), 1);
	TT_ASSERT(!tt_get(r, "retriedStmtIds", &(bson_iter_t){0}));
	tt_free_reply(r);
	/* each entry carries its stmtId; the row points at the newest */
	TT_EQ_INT(run_code("local", "{'find': 'oplog.rs', 'filter': {'ns': 't.b', 'txnNumber': 20}, 'sort': {'$natural': 1}}",
	    &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.stmtId"), 5);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.stmtId"), 7);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.2", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'delete': 'b', 'deletes': [{'q': {'_id': 2}, 'limit': 1}]}"), 0);
	/* in memory: 5 and 7 answered (n: 1 each), 6 runs now */
	TT_EQ_INT(run_code("t", "{'insert': 'b', 'ordered': false, 'documents': [{'_id': 1}, {'_id': 2}, {'_id': 3}], "
	    "'stmtIds': [5, 6, 7], 'lsid': " LSID_D ", 'txnNumber': 20}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 3);
	TT_ASSERT(!tt_get(r, "writeErrors", &(bson_iter_t){0}));
	TT_EQ_INT(tt_get_i64(r, "retriedStmtIds.0"), 5);
	TT_EQ_INT(tt_get_i64(r, "retriedStmtIds.1"), 7);
	tt_free_reply(r);
	TT_EQ_INT(count_docs("b", "{}"), 3);
	/* an update batch and its partial retry after a restart */
	TT_EQ_INT(run_code("t", "{'update': 'b', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}, "
	    "{'q': {'_id': 9}, 'u': {'$set': {'u': 1}}, 'upsert': true}], 'lsid': " LSID_D ", 'txnNumber': 21}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	tt_free_reply(r);
	tamga_close(db);
	TT_ASSERT((db = tt_open_replset(dir, "replSet=rs0,enableTestCommands")) != NULL);
	/* a third statement the first run did not have: it runs; the first two
	 * are rebuilt from their entries */
	TT_EQ_INT(run_code("t", "{'update': 'b', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}, "
	    "{'q': {'_id': 9}, 'u': {'$set': {'u': 1}}, 'upsert': true}, {'q': {'_id': 3}, 'u': {'$set': {'t': 1}}}], "
	    "'lsid': " LSID_D ", 'txnNumber': 21}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 3);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 2);
	TT_EQ_INT(tt_get_i64(r, "upserted.0.index"), 1);
	TT_EQ_INT(tt_get_i64(r, "upserted.0._id"), 9);
	TT_EQ_INT(tt_get_i64(r, "retriedStmtIds.1"), 1);
	TT_ASSERT(!tt_get(r, "retriedStmtIds.2", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(count_docs("b", "{'_id': 1, 'n': 1}"), 1);
	TT_EQ_INT(count_docs("b", "{'t': 1}"), 1);
	/* the third statement's entry links to the second's (one chain per
	 * txnNumber, across commands and restarts) */
	TT_EQ_INT(run_code("local", "{'find': 'oplog.rs', 'filter': {'ns': 't.b', 'txnNumber': 21}, 'sort': {'$natural': 1}}", &r), 0);
	{
		bson_iter_t a, b;
		uint32_t t1, i1, t2, i2;
		TT_ASSERT(tt_get(r, "cursor.firstBatch.1.ts", &a) && tt_get(r, "cursor.firstBatch.2.prevOpTime.ts", &b));
		bson_iter_timestamp(&a, &t1, &i1);
		bson_iter_timestamp(&b, &t2, &i2);
		TT_ASSERT(t1 == t2 && i1 == i2);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.2.stmtId"), 2);
	}
	tt_free_reply(r);
	/* multi / limit 0 are refused in retryable writes (72 write errors),
	 * stmtId with stmtIds (72), a stmtIds of the wrong length (16) */
	TT_EQ_INT(run_code("t", "{'update': 'b', 'updates': [{'q': {}, 'u': {'$set': {'m': 1}}, 'multi': true}], "
	    "'lsid': " LSID_D ", 'txnNumber': 22}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 72);
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'insert': 'b', 'documents': [{}], 'stmtId': 1, 'stmtIds': [1], 'lsid': %s, "
	    "'txnNumber': 23}", LSID_D), 72);
	TT_EQ_INT(code_of("t", "{'insert': 'b', 'documents': [{}, {}], 'stmtIds': [1], 'lsid': %s, 'txnNumber': 24}",
	    LSID_D), 16);
}

/* The admin bulkWrite retried per statement, as mongod's bulkWrite: the ops
 * that ran are answered from their entries (insert and delete n: 1, an
 * update's n / nModified / upserted parsed from its entry) and listed in
 * retriedStmtIds, the others run; in memory and after a restart (the
 * history read back from the oplog chain).  findAndModify retried answers
 * as mongod's: rebuilt from its entry and image, the image unprojected by
 * `fields`, with retriedStmtId. */
#define LSID_E "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAABQ==', 'subType': '04'}}}"
#define BW_CMD(extra) "{'bulkWrite': 1, 'nsInfo': [{'ns': 't.bw'}], 'ordered': false, 'ops': [" \
	"{'insert': 0, 'document': {'_id': 1, 'n': 0}}, {'insert': 0, 'document': {'_id': 2}}, " \
	"{'update': 0, 'filter': {'_id': 1}, 'updateMods': {'$inc': {'n': 1}}}, " \
	"{'update': 0, 'filter': {'_id': 5}, 'updateMods': {'$set': {'u': 1}}, 'upsert': true}, " \
	"{'delete': 0, 'filter': {'_id': 3}}" extra "], 'lsid': " LSID_E ", 'txnNumber': 30}"

static void
test_retryable_bulkwrite(void)
{
	bson_t *r;

	TT_EQ_INT(code_of("t", "{'insert': 'bw', 'documents': [{'_id': 2}, {'_id': 3}]}"), 0);
	/* op 1 fails (duplicate _id), the others run */
	TT_EQ_INT(run_code("admin", BW_CMD(""), &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 1);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 1);
	TT_EQ_INT(tt_get_i64(r, "nUpserted"), 1);
	TT_EQ_INT(tt_get_i64(r, "nDeleted"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.code"), 11000);
	TT_ASSERT(!tt_get(r, "retriedStmtIds", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'delete': 'bw', 'deletes': [{'q': {'_id': 2}, 'limit': 1}]}"), 0);
	/* in memory: 0, 2, 3, 4 answered, 1 runs now */
	TT_EQ_INT(run_code("admin", BW_CMD(""), &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 0);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 2);
	TT_EQ_INT(tt_get_i64(r, "nMatched"), 1);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	TT_EQ_INT(tt_get_i64(r, "nUpserted"), 1);
	TT_EQ_INT(tt_get_i64(r, "nDeleted"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.3.upserted._id"), 5);
	TT_EQ_INT(tt_get_i64(r, "retriedStmtIds.3"), 4);
	TT_ASSERT(!tt_get(r, "retriedStmtIds.4", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(count_docs("bw", "{}"), 3);
	TT_EQ_INT(count_docs("bw", "{'_id': 1, 'n': 1}"), 1);
	/* findAndModify with fields: the retry answers the image unprojected */
	TT_EQ_INT(run_code("t", "{'findAndModify': 'bw', 'query': {'_id': 1}, 'update': {'$inc': {'n': 10}}, "
	    "'new': true, 'fields': {'n': 0}, 'lsid': " LSID_E ", 'txnNumber': 31}", &r), 0);
	TT_ASSERT(!tt_get(r, "value.n", &(bson_iter_t){0}));
	TT_ASSERT(!tt_get(r, "retriedStmtId", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(run_code("t", "{'findAndModify': 'bw', 'query': {'_id': 1}, 'update': {'$inc': {'n': 10}}, "
	    "'new': true, 'fields': {'n': 0}, 'lsid': " LSID_E ", 'txnNumber': 31}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "value.n"), 11);
	TT_EQ_INT(tt_get_i64(r, "retriedStmtId"), 0);
	tt_free_reply(r);
	/* a retry that does not fit the entry: mongod's 40611 (a post-image
	 * asked, a pre-image kept -- here the reverse: 40612) */
	TT_EQ_INT(code_of("t", "{'findAndModify': 'bw', 'query': {'_id': 1}, 'update': {'$inc': {'n': 10}}, "
	    "'lsid': %s, 'txnNumber': 31}", LSID_E), 40612);
	TT_EQ_INT(code_of("t", "{'findAndModify': 'bw', 'query': {'_id': 1}, 'remove': true, "
	    "'lsid': %s, 'txnNumber': 31}", LSID_E), 40609);
	/* a single op that fails answers its item's error (its storage
	 * transaction rolled back, the command ok), as any write error */
	TT_EQ_INT(run_code("admin", "{'bulkWrite': 1, 'nsInfo': [{'ns': 't.bw'}], 'ops': [{'insert': 0, "
	    "'document': {'_id': 1}}], 'lsid': " LSID_E ", 'txnNumber': 32}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 1);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.code"), 11000);
	tt_free_reply(r);
	/* a multi op is refused in a retryable bulkWrite (72) */
	TT_EQ_INT(run_code("admin", "{'bulkWrite': 1, 'nsInfo': [{'ns': 't.bw'}], 'ops': [{'update': 0, 'filter': {}, "
	    "'updateMods': {'$set': {'m': 1}}, 'multi': true}], 'lsid': " LSID_E ", 'txnNumber': 33}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.code"), 72);
	tt_free_reply(r);
	/* back at 30 is too old; a new bulkWrite at 34 then a restart */
	TT_EQ_INT(code_of("admin", "%s", BW_CMD("")), 225);
	TT_EQ_INT(run_code("admin", "{'bulkWrite': 1, 'nsInfo': [{'ns': 't.bw'}], 'ops': ["
	    "{'insert': 0, 'document': {'_id': 7}}, {'update': 0, 'filter': {'_id': 7}, 'updateMods': {'$inc': {'k': 1}}}, "
	    "{'delete': 0, 'filter': {'_id': 5}}], 'lsid': " LSID_E ", 'txnNumber': 34}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 0);
	tt_free_reply(r);
	tamga_close(db);
	TT_ASSERT((db = tt_open_replset(dir, "replSet=rs0,enableTestCommands")) != NULL);
	/* after the restart: the three ops from the oplog chain, a fourth runs */
	TT_EQ_INT(run_code("admin", "{'bulkWrite': 1, 'nsInfo': [{'ns': 't.bw'}], 'ops': ["
	    "{'insert': 0, 'document': {'_id': 7}}, {'update': 0, 'filter': {'_id': 7}, 'updateMods': {'$inc': {'k': 1}}}, "
	    "{'delete': 0, 'filter': {'_id': 5}}, {'insert': 0, 'document': {'_id': 8}}], "
	    "'lsid': " LSID_E ", 'txnNumber': 34}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "nErrors"), 0);
	TT_EQ_INT(tt_get_i64(r, "nInserted"), 2);
	TT_EQ_INT(tt_get_i64(r, "nMatched"), 1);
	TT_EQ_INT(tt_get_i64(r, "nModified"), 1);
	TT_EQ_INT(tt_get_i64(r, "nDeleted"), 1);
	TT_EQ_INT(tt_get_i64(r, "retriedStmtIds.2"), 2);
	TT_ASSERT(!tt_get(r, "retriedStmtIds.3", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(count_docs("bw", "{'_id': 7, 'k': 1}"), 1);
	TT_EQ_INT(count_docs("bw", "{'_id': 8}"), 1);
	TT_EQ_INT(count_docs("bw", "{'_id': 5}"), 0);
}

/* readConcern snapshot outside a transaction: a read at a cluster time sees
 * exactly the writes before it; too old a time is 239; writes refuse it */
static void
test_snapshot_reads(void)
{
	bson_t *r;
	bson_iter_t it;
	uint32_t t, i;
	char cmd[512];

	TT_EQ_INT(code_of("t", "{'insert': 's', 'documents': [{'_id': 1, 'x': 1}]}"), 0);
	TT_EQ_INT(run_code("t", "{'find': 's', 'readConcern': {'level': 'snapshot'}}", &r), 0);
	TT_ASSERT(tt_get(r, "cursor.atClusterTime", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	bson_iter_timestamp(&it, &t, &i);
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'update': 's', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'x': 2}}}]}"), 0);
	TT_EQ_INT(code_of("t", "{'insert': 's', 'documents': [{'_id': 2, 'x': 1}]}"), 0);
	snprintf(cmd, sizeof(cmd), "{'find': 's', 'readConcern': {'level': 'snapshot', 'atClusterTime': "
	    "{'$timestamp': {'t': %u, 'i': %u}}}}", t, i);
	TT_EQ_INT(run_code("t", cmd, &r), 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.x"), 1);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.1", &it));
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{'distinct': 's', 'key': 'x', 'readConcern': {'level': 'snapshot', 'atClusterTime': "
	    "{'$timestamp': {'t': %u, 'i': %u}}}}", t, i);
	TT_EQ_INT(run_code("t", cmd, &r), 0);
	TT_ASSERT(tt_get(r, "atClusterTime", &it));
	TT_ASSERT(!tt_get(r, "values.1", &it));
	tt_free_reply(r);
	TT_EQ_INT(run_code("t", "{'find': 's', 'readConcern': {'level': 'snapshot'}}", &r), 0);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.1", &it));
	tt_free_reply(r);
	/* a snapshot cursor's getMore reads at its atClusterTime too, not the
	 * latest data: documents changed and added after the first batch are
	 * seen as they were */
	{
		int64_t cid;
		char gm[200];
		TT_EQ_INT(code_of("t", "{'insert': 's', 'documents': [{'_id': 10, 'x': 10}, {'_id': 11, 'x': 11}, "
		    "{'_id': 12, 'x': 12}]}"), 0);
		TT_EQ_INT(run_code("t", "{'find': 's', 'filter': {'_id': {'$gte': 10}}, 'sort': {'_id': 1}, 'batchSize': 1, "
		    "'readConcern': {'level': 'snapshot'}}", &r), 0);
		TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.0.x"), 10);
		cid = tt_get_i64(r, "cursor.id");
		tt_free_reply(r);
		TT_ASSERT(cid != 0);
		TT_EQ_INT(code_of("t", "{'update': 's', 'updates': [{'q': {'_id': 11}, 'u': {'$set': {'x': 99}}}]}"), 0);
		TT_EQ_INT(code_of("t", "{'delete': 's', 'deletes': [{'q': {'_id': 12}, 'limit': 1}]}"), 0);
		TT_EQ_INT(code_of("t", "{'insert': 's', 'documents': [{'_id': 13, 'x': 13}]}"), 0);
		snprintf(gm, sizeof(gm), "{'getMore': {'$numberLong': '%lld'}, 'collection': 's', "
		    "'readConcern': {'level': 'snapshot'}}", (long long)cid);   /* as a snapshot session sends it */
		TT_EQ_INT(run_code("t", gm, &r), 0);
		TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.0.x"), 11);
		TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.1.x"), 12);
		TT_ASSERT(!tt_get(r, "cursor.nextBatch.2", &it));
		tt_free_reply(r);
	}
	/* long before the oldest kept history */
	TT_EQ_INT(code_of("t", "{'find': 's', 'readConcern': {'level': 'snapshot', 'atClusterTime': "
	    "{'$timestamp': {'t': 1, 'i': 1}}}}"), 239);
	TT_EQ_INT(code_of("t", "{'insert': 's', 'documents': [{'_id': 3}], 'readConcern': {'level': 'snapshot'}}"), 72);
	TT_EQ_INT(code_of("t", "{'listCollections': 1, 'readConcern': {'level': 'snapshot'}}"), 72);
}

/* Single-statement retryable writes run with their config.transactions row
 * in one storage transaction: a failed statement records nothing (its retry
 * runs again and may succeed), concurrent ones on one hot document all
 * apply once, conflicts never surface. */
struct retry_worker {
	int who, code;
};

static void *
retry_inc(void *arg)
{
	struct retry_worker *w = arg;

	for (int i = 1; i <= 40 && w->code == 0; i++) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "{'update': 'hot', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}], "
		    "'lsid': {'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAA%cA==', 'subType': '04'}}}, 'txnNumber': %d}",
		    'K' + w->who, i);
		w->code = run_code("t", cmd, NULL);
		/* its retry changes nothing */
		if (w->code == 0 && i % 10 == 0)
			w->code = run_code("t", cmd, NULL);
	}
	return NULL;
}

static void
test_retryable_single_statement(void)
{
	bson_t *r;
	pthread_t th[4];
	struct retry_worker w[4];

	TT_EQ_INT(code_of("t", "{'insert': 'hot', 'documents': [{'_id': 1, 'n': 0}]}"), 0);
	/* a duplicate: 11000 in writeErrors, nothing recorded: the retry runs again */
	TT_EQ_INT(run_code("t", "{'insert': 'hot', 'documents': [{'_id': 1}], 'lsid': " LSID_C ", 'txnNumber': 100}", &r),
	    0);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 11000);
	tt_free_reply(r);
	TT_EQ_INT(code_of("t", "{'delete': 'hot', 'deletes': [{'q': {'_id': 1}, 'limit': 1}]}"), 0);
	TT_EQ_INT(run_code("t", "{'insert': 'hot', 'documents': [{'_id': 1, 'n': 0}], 'lsid': " LSID_C ", "
	    "'txnNumber': 100}", &r), 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_ASSERT(!tt_get(r, "writeErrors", &(bson_iter_t){0}));
	tt_free_reply(r);
	for (int i = 0; i < 4; i++) {
		w[i].who = i;
		w[i].code = 0;
		pthread_create(&th[i], NULL, retry_inc, &w[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		TT_EQ_INT(w[i].code, 0);
	}
	TT_EQ_INT(count_docs("hot", "{'_id': 1, 'n': 160}"), 1);
}

static void
test_sessions_commands(void)
{
	bson_t *r;

	TT_EQ_INT(run_code("admin", "{'aggregate': 1, 'pipeline': [{'$listLocalSessions': {'allUsers': true}}], "
	    "'cursor': {}}", &r), 0);
	tt_free_reply(r);
	TT_EQ_INT(code_of("admin", "{'killAllSessionsByPattern': [{'lsid': %s}]}", LSID_A), 0);
	TT_EQ_INT(code_of("admin", "{'killAllSessionsByPattern': [{'bogus': 1}]}"), 40415);
	TT_EQ_INT(code_of("admin", "{'killAllSessionsByPattern': []}"), 0);
	TT_EQ_INT(code_of("admin", "{'killAllSessions': 1}"), 14);

	/* config.system.sessions: written by the cache's refresh, with its TTL
	 * index; $listSessions reads it */
	TT_EQ_INT(code_of("admin", "{'refreshSessions': [%s]}", LSID_C), 0);
	TT_EQ_INT(code_of("admin", "{'refreshLogicalSessionCacheNow': 1}"), 0);
	TT_EQ_INT(run_code("config", "{'listIndexes': 'system.sessions'}", &r), 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.1.name"), "lsidTTLIndex");
	TT_EQ_INT(tt_get_i64(r, "cursor.firstBatch.1.expireAfterSeconds"), 1800);
	tt_free_reply(r);
	TT_EQ_INT(run_code("config", "{'aggregate': 'system.sessions', 'pipeline': [{'$listSessions': {}}, "
	    "{'$match': {'_id.id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAAw==', 'subType': '04'}}}}], "
	    "'cursor': {}}", &r), 0);
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.lastUse", &(bson_iter_t){0}));
	tt_free_reply(r);
	TT_EQ_INT(code_of("config", "{'aggregate': 'system.sessions', 'pipeline': [{'$listSessions': "
	    "{'allUsers': true, 'users': [{'user': 'a', 'db': 'b'}]}}], 'cursor': {}}"), 12);
	TT_EQ_INT(code_of("t", "{'aggregate': 'c', 'pipeline': [{'$listSessions': {}}], 'cursor': {}}"), 73);
	/* an ended session's row goes at the next refresh */
	TT_EQ_INT(code_of("admin", "{'endSessions': [%s]}", LSID_C), 0);
	TT_EQ_INT(code_of("admin", "{'refreshLogicalSessionCacheNow': 1}"), 0);
	TT_EQ_INT(run_code("config", "{'aggregate': 'system.sessions', 'pipeline': [{'$listSessions': {'allUsers': true}}, "
	    "{'$match': {'_id.id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAAw==', 'subType': '04'}}}}], "
	    "'cursor': {}}", &r), 0);
	TT_ASSERT(!tt_get(r, "cursor.firstBatch.0", &(bson_iter_t){0}));
	tt_free_reply(r);
}

int
main(void)
{
	dir = tt_tmpdir("txn");
	if ((db = tt_open_replset(dir, "create,replSet=rs0,enableTestCommands")) == NULL)
		return 1;
	TT_RUN(test_standalone_refuses);
	TT_RUN(test_bad_session_options);
	TT_RUN(test_commit_visibility);
	TT_RUN(test_abort_leaves_nothing);
	TT_RUN(test_write_conflict);
	TT_RUN(test_plain_write_waits);
	TT_RUN(test_kill_and_reap);
	TT_RUN(test_retryable_writes);
	TT_RUN(test_snapshot_reads);
	TT_RUN(test_retryable_single_statement);
	TT_RUN(test_retryable_batches);
	TT_RUN(test_retryable_bulkwrite);
	TT_RUN(test_sessions_commands);
	tt_close_rm(db, dir);
	return tt_finish();
}
