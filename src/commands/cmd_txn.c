/*
 * cmd_txn.c -- what the dispatcher does for sessions and transactions
 * (mongod's initializeOperationSessionInfo, the session checkout of
 * service_entry_point_common, the transaction command allowlist and error
 * labels), and the commitTransaction / abortTransaction commands.
 *
 * The state machine itself is repl/txn.h; retryable writes' record is
 * repl/retryable.h.  A standalone (engine_options_t.repl_set_name NULL)
 * answers 20 IllegalOperation to every txnNumber, as mongod does.
 */
#include "commands/cmd_repl_reads.h"
#include "commands/cmd_timeseries.h"
#include "commands/commands_private.h"
#include "commands/write.h"
#include "commands/cursor.h"
#include "bson/value.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/failpoint.h"
#include "common/log.h"
#include "repl/oplog.h"
#include "repl/replset.h"
#include "repl/retryable.h"
#include "repl/session.h"
#include "repl/txn.h"

/* ---- which commands may carry a txnNumber -------------------------------- */

enum {
	TXN_ALLOWED = 1 << 0,      /* may run inside a multi-document transaction */
	TXN_RETRYABLE = 1 << 1,    /* a retryable write: txnNumber without autocommit */
	TXN_ENDS = 1 << 2,         /* commitTransaction / abortTransaction */
	TXN_DDL = 1 << 3,          /* creates a collection or an index: only with readConcern local */
};

/* mongod's txnCmdAllowlist (commands.cpp) and its retryable writes. */
static const struct txn_rule {
	const char *name;
	unsigned flags;
} txn_rules[] = {
	{"abortTransaction", TXN_ALLOWED | TXN_ENDS},
	{"aggregate", TXN_ALLOWED},
	{"bulkWrite", TXN_ALLOWED | TXN_RETRYABLE},
	{"commitTransaction", TXN_ALLOWED | TXN_ENDS},
	{"create", TXN_ALLOWED | TXN_DDL},
	{"createIndexes", TXN_ALLOWED | TXN_DDL},
	{"delete", TXN_ALLOWED | TXN_RETRYABLE},
	{"distinct", TXN_ALLOWED},
	{"find", TXN_ALLOWED},
	{"findAndModify", TXN_ALLOWED | TXN_RETRYABLE},
	{"findandmodify", TXN_ALLOWED | TXN_RETRYABLE},
	{"getMore", TXN_ALLOWED},
	{"insert", TXN_ALLOWED | TXN_RETRYABLE},
	{"killCursors", TXN_ALLOWED},
	{"update", TXN_ALLOWED | TXN_RETRYABLE},
};

static unsigned
txn_flags(const char *name)
{
	for (size_t i = 0; i < sizeof(txn_rules) / sizeof(txn_rules[0]); i++)
		if (strcmp(txn_rules[i].name, name) == 0)
			return txn_rules[i].flags;
	return 0;
}

bool
cmd_in_transaction(const cmd_t *c)
{
	return c->txn_kind == REPL_TXN_KIND_MULTI;
}

int
cmd_txn_check_create(cmd_t *c, const char *db, const char *name, terr_t *err)
{
	if (!cmd_in_transaction(c))
		return 0;
	if (strncmp(name, "system.", 7) == 0)
		return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot create system collection %s.%s within a transaction.", db, name);
	if (c->txn_session != NULL && repl_session_txn(c->txn_session)->read_concern_nonlocal)
		return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot create namespace %s.%s in multi-document transaction.", db, name);
	return 0;
}

/* An aggregate's $out / $merge: mongod refuses them in a transaction. */
static int
refuse_writing_stages(cmd_t *c, terr_t *err)
{
	bson_iter_t it, st, k;

	if (!cmd_find_field(c, "pipeline", &it) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &st))
		return 0;
	while (bson_iter_next(&st)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&st) || !bson_iter_recurse(&st, &k) || !bson_iter_next(&k))
			continue;
		if (strcmp(bson_iter_key(&k), "$out") == 0 || strcmp(bson_iter_key(&k), "$merge") == 0)
			return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
			    "%s cannot be used in a transaction", bson_iter_key(&k));
	}
	return 0;
}

/* What may run in a transaction (mongod's CommandHelpers::canUseTransactions). */
static int
check_allowed_in_txn(cmd_t *c, unsigned flags, terr_t *err)
{
	if (strcmp(c->name, "count") == 0)
		return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot run 'count' in a multi-document transaction. Please see "
		    "http://dochub.mongodb.org/core/transaction-count for a recommended alternative.");
	if (!(flags & TXN_ALLOWED))
		return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot run '%s' in a multi-document transaction.", c->name);
	/* bulkWrite always runs on admin: its namespaces are in nsInfo */
	if (!(flags & TXN_ENDS) && strcmp(c->name, "bulkWrite") != 0 &&
	    (strcmp(c->db, "config") == 0 || strcmp(c->db, "admin") == 0 || strcmp(c->db, "local") == 0))
		return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot run command against the '%s' database in a transaction.", c->db);
	if (strcmp(c->name, "aggregate") == 0)
		RET(refuse_writing_stages(c, err));
	return 0;
}

/* readConcern / writeConcern on a transaction's statements; the first
 * statement's level is remembered in t (create and createIndexes need
 * "local", as mongod). */
static int
check_concerns(cmd_t *c, repl_txn_state_t *t, bool start, unsigned flags, terr_t *err)
{
	bson_iter_t it, rc;

	if (cmd_find_field(c, "readConcern", &it)) {
		if (!start)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Only the first command in a transaction may specify a readConcern");
		if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &rc) && bson_iter_find(&rc, "level") &&
		    BSON_ITER_HOLDS_UTF8(&rc)) {
			const char *lv = bson_iter_utf8(&rc, NULL);
			if (strcmp(lv, "local") != 0 && strcmp(lv, "majority") != 0 && strcmp(lv, "snapshot") != 0)
				return terr_set(err, TERR_INVALID_OPTIONS,
				    "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in "
				    "order to run in a transaction");
			t->read_concern_nonlocal = strcmp(lv, "local") != 0;
		}
	}
	if ((flags & TXN_DDL) && t->read_concern_nonlocal)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Cannot run '%s' in a multi-document transaction with a readConcern level other than 'local'.",
		    c->name);
	if (!(flags & TXN_ENDS) && cmd_find_field(c, "writeConcern", &it))
		return terr_set(err, TERR_INVALID_OPTIONS, "Cannot set write concern after starting a transaction.");
	return 0;
}

/* txnNumber as mongod's IDL reads it (a long; int accepted). */
static int
read_txn_number(bson_iter_t *it, int64_t *out, terr_t *err)
{
	if (BSON_ITER_HOLDS_INT64(it))
		*out = bson_iter_int64(it);
	else if (BSON_ITER_HOLDS_INT32(it))
		*out = bson_iter_int32(it);
	else
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'OperationSessionInfo.txnNumber' is the wrong type '%s', expected type 'long'",
		    bv_type_name(bson_iter_type(it)));
	if (*out < 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "Transaction number cannot be negative");
	return 0;
}

static int
read_bool_field(bson_iter_t *it, const char *field, bool *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_BOOL(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'OperationSessionInfo.%s' is the wrong type '%s', expected type 'bool'", field,
		    bv_type_name(bson_iter_type(it)));
	*out = bson_iter_bool(it);
	return 0;
}

/* mongod's onPrimaryTransactionalWrite fail point, for a retryable write
 * about to run: failBeforeCommitExceptionCode fails it before anything is
 * applied; closeConnection is for after it ran (retryable_fail_point_after). */
static int
retryable_fail_point_before(cmd_t *c, terr_t *err)
{
	bson_t data;
	bson_iter_t it;
	bool close = true;     /* mongod: closeConnection unless it says false */
	int ret = 0;

	if (!failpoint_any_active() || !failpoint_fire("onPrimaryTransactionalWrite", NULL, NULL, &data))
		return 0;
	if (bson_iter_init_find(&it, &data, "closeConnection"))
		close = bson_iter_as_bool(&it);
	if (bson_iter_init_find(&it, &data, "failBeforeCommitExceptionCode") && BSON_ITER_HOLDS_NUMBER(&it)) {
		ret = terr_set(err, (int)bson_iter_as_int64(&it), "Failing write for test");
		if (close)
			c->client->close_requested = true;
	} else if (close) {
		c->txn_close_after = true;
	}
	bson_destroy(&data);
	return ret;
}

/* The command's lsid document (a view into the body). */
static bool
lsid_doc(cmd_t *c, bson_t *out)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t len;

	if (!cmd_find_field(c, "lsid", &it) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &len, &d);
	return bson_init_static(out, d, len);
}

/* How many statements a retryable write has (documents, updates, deletes,
 * a bulkWrite's ops; findAndModify one). */
static int
statement_count(cmd_t *c)
{
	static const char *const arrays[] = {"documents", "updates", "deletes", "ops", NULL};
	bson_iter_t it;

	if (c->txn_stmt_ids != NULL)
		return c->txn_nstmts;   /* counted once (stmt_ids_init) */
	if (strcasecmp(c->name, "findAndModify") == 0)
		return 1;
	for (int i = 0; arrays[i] != NULL; i++)
		if (cmd_find_field(c, arrays[i], &it) && BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_t a;
			const uint8_t *d;
			uint32_t len;
			bson_iter_array(&it, &len, &d);
			return bson_init_static(&a, d, len) ? (int)bson_count_keys(&a) : 0;
		}
	return 0;
}

/* Each statement's stmtId, as mongod's getStmtIdForWriteAt: stmtIds[i]
 * when given (as many as statements, InvalidLength otherwise; not with
 * stmtId, InvalidOptions), else stmtId (default 0) + i. */
static int
stmt_ids_init(cmd_t *c, int n, terr_t *err)
{
	bson_iter_t ids, one, it;
	bool has_ids = cmd_find_field(c, "stmtIds", &ids), has_one = cmd_find_field(c, "stmtId", &one);
	int32_t base = 0;
	int k = 0;

	if (has_ids && has_one)
		return terr_set(err, TERR_INVALID_OPTIONS, "May not specify both stmtId and stmtIds in %s command",
		    strcmp(c->name, "bulkWrite") == 0 ? "bulkWrite" : "write");
	if (has_one) {
		if (!BSON_ITER_HOLDS_INT32(&one))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.stmtId' is the wrong type '%s', expected type 'int'", c->name,
			    bv_type_name(bson_iter_type(&one)));
		base = bson_iter_int32(&one);
	}
	if (has_ids && (!BSON_ITER_HOLDS_ARRAY(&ids) || !bson_iter_recurse(&ids, &it)))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.stmtIds' is the wrong type '%s', expected type 'array'", c->name,
		    bv_type_name(bson_iter_type(&ids)));
	c->txn_stmt_ids = bson_malloc0(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
	c->txn_nstmts = n;
	if (!has_ids) {
		for (int i = 0; i < n; i++)
			c->txn_stmt_ids[i] = (int32_t)((int64_t)base + i > INT32_MAX ? INT32_MAX : base + i);
		return 0;
	}
	while (bson_iter_next(&it)) {
		if (!BSON_ITER_HOLDS_INT32(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.stmtIds.%d' is the wrong type '%s', expected type 'int'", c->name, k,
			    bv_type_name(bson_iter_type(&it)));
		if (k < n)
			c->txn_stmt_ids[k] = bson_iter_int32(&it);
		k++;
	}
	if (k != n)
		return terr_set(err, 16 /* InvalidLength */,
		    "Number of statement ids must match the number of batch entries. Got %d statement ids but %d "
		    "operations.", k, n);
	return 0;
}

/* A batch's storage transaction commits: mongod's onPrimaryTransactionalWrite
 * fail point acts here (after each write, before its commit), then the
 * session's config.transactions row joins the transaction. */
static int
retryable_commit_hook(void *arg, storage_session_t *ss, repl_oplog_optime_t last, terr_t *err)
{
	cmd_t *c = arg;
	bson_t data;
	bson_iter_t it;

	if (failpoint_any_active() && failpoint_fire("onPrimaryTransactionalWrite", NULL, NULL, &data)) {
		bool close = !bson_iter_init_find(&it, &data, "closeConnection") || bson_iter_as_bool(&it);
		int code = 0;
		if (bson_iter_init_find(&it, &data, "failBeforeCommitExceptionCode") && BSON_ITER_HOLDS_NUMBER(&it))
			code = (int)bson_iter_as_int64(&it);
		bson_destroy(&data);
		if (close)
			c->txn_close_after = true;
		if (code != 0)
			return terr_set(err, code, "Failing write for test");
	}
	return repl_retryable_row_in_txn(c->txn_session, c->engine->st, ss, last, err);
}

/* A retryable write about to run: its oplog entries carry the session info
 * (lsid, txnNumber, stmtId; the first links to the txnNumber's last entry);
 * a batch's storage transactions each write the session's
 * config.transactions row (the commit hook). */
static int
retryable_oplog_begin(cmd_t *c, int64_t txn_number, terr_t *err)
{
	storage_session_t *ss;
	bson_t lsid;
	int n, rc;

	if (c->engine->oplog == NULL || !repl_oplog_exists(c->engine->oplog) || !lsid_doc(c, &lsid))
		return 0;
	if ((ss = client_session(c->client, err)) == NULL)
		return -1;
	n = statement_count(c);
	if (c->txn_stmt_ids == NULL)
		RET(stmt_ids_init(c, n, err));
	if (n != 1)
		RET(repl_retryable_prepare(c->engine->st, ss, err));
	/* the entries carry the whole lsid {id, uid}, as mongod's: a member
	 * keys the session's config.transactions row by it */
	repl_session_lsid(c->txn_session, &lsid);
	rc = repl_oplog_session_set(c->engine->oplog, ss, &lsid, txn_number, repl_retryable_last_write(c->txn_session),
	    err);
	bson_destroy(&lsid);
	RET(rc);
	if (n == 1)
		repl_oplog_session_set_stmt(ss, c->txn_stmt_ids[0]);
	else
		repl_oplog_session_set_commit_hook(ss, retryable_commit_hook, c);
	c->txn_oplog_session = true;
	return 0;
}

/* cmd_catalog.c */
int cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err);
void cmd_array_source(bson_t *docs_steal, cursor_source_t *src);

/* The reply a write kept whole keeps (in memory and in
 * config.tamga_retry_replies): c->reply, with a bulkWrite's cursor holding
 * every op's result (id 0) rather than its first batch, so a retry answers
 * them all whatever became of the first cursor. */
static void
kept_reply_build(cmd_t *c, bson_t *out)
{
	bson_iter_t it, ci;

	bson_init(out);
	if (c->txn_kept_results == NULL) {
		bson_concat(out, c->reply);
		return;
	}
	bson_iter_init(&it, c->reply);
	while (bson_iter_next(&it)) {
		bson_t cur;
		if (strcmp(bson_iter_key(&it), "cursor") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
			continue;
		}
		bson_append_document_begin(out, "cursor", -1, &cur);
		BSON_APPEND_INT64(&cur, "id", 0);
		if (bson_iter_recurse(&it, &ci) && bson_iter_find(&ci, "ns"))
			bson_append_iter(&cur, "ns", -1, &ci);
		BSON_APPEND_ARRAY(&cur, "firstBatch", c->txn_kept_results);
		bson_append_document_end(out, &cur);
	}
}

/* A kept bulkWrite reply answered again: its results become a new cursor
 * under this request's cursor options (mongod builds the retry's cursor
 * afresh too); other replies are copied as they are. */
static int
kept_reply_answer(cmd_t *c, const bson_t *kept, terr_t *err)
{
	bson_iter_t it, ci;
	const uint8_t *d;
	uint32_t len;
	bson_t results, *batch;
	cursor_opts_t copts;
	cursor_source_t src;
	char owner_buf[256];

	if (strcasecmp(c->name, "bulkWrite") != 0 || !bson_iter_init_find(&it, kept, "cursor") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &ci) || !bson_iter_find(&ci, "firstBatch") ||
	    !BSON_ITER_HOLDS_ARRAY(&ci)) {
		bson_concat(c->reply, kept);
		return 0;
	}
	RET(cmd_cursor_options(c, &copts, err));
	bson_iter_array(&ci, &len, &d);
	if (!bson_init_static(&results, d, len))
		return terr_set(err, TERR_INTERNAL_ERROR, "a kept bulkWrite reply is corrupt");
	batch = bson_copy(&results);
	cmd_array_source(batch, &src);
	copts.owner = cmd_cursor_owner(c, owner_buf);
	RET(cursor_first_batch(c->engine->cursors, NULL, "admin.$cmd.bulkWrite", &src, &copts, c->reply, err));
	bson_iter_init(&it, kept);
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), "cursor") != 0)
			bson_append_iter(c->reply, bson_iter_key(&it), -1, &it);
	return 0;
}

/* A retryable findAndModify on a time-series collection's measurements is
 * kept whole (its oplog entries are the buckets', which cannot give the
 * measurement back as parseOplogEntryForFindAndModify would): answered from
 * the kept reply by repl_retryable_replay.  When that reply was lost (a
 * restart) but the statement ran, 238 rather than a reply rebuilt from a
 * bucket's entry.  0: go on, -1 with err. */
static int
ts_fam_retry_check(cmd_t *c, repl_session_t *s, storage_session_t *ss, terr_t *err)
{
	const char *name;
	storage_coll_t *coll = NULL;
	bson_iter_t it;
	int32_t stmt = 0;
	uint64_t ts;
	bool is_ts;
	int ex;
	terr_t e = TERR_INIT;

	if (strcasecmp(c->name, "findAndModify") != 0 || repl_retryable_has_kept_reply(s, c->name))
		return 0;
	if (cmd_collection_arg(c, &name, &e) != 0) {
		terr_clear(&e);   /* the handler reports it */
		return 0;
	}
	storage_coll_get(c->engine->st, c->db, name, &coll, NULL);
	is_ts = cmd_ts_is(coll) && !cmd_ts_raw(c);
	if (coll != NULL)
		storage_coll_release(coll);
	if (!is_ts)
		return 0;
	if (bson_iter_init_find(&it, c->body, "stmtId") && BSON_ITER_HOLDS_INT32(&it))
		stmt = bson_iter_int32(&it);
	if ((ex = repl_retryable_stmt_executed(s, c->engine->oplog, ss, stmt, &ts, err)) <= 0)
		return ex;
	{
		/* its kept reply is gone: as mongod when config.image_collection
		 * no longer holds the image */
		char desc[160];
		return terr_set(err, 5637601, "image collection no longer contains the complete write history of this "
		    "transaction, record with sessionId: %s cannot be found", repl_session_describe(s, desc));
	}
}

int
cmd_retry_stmt(cmd_t *c, storage_session_t *s, int index, uint64_t *ts, terr_t *err)
{
	int32_t stmt;
	int r;

	if (!c->txn_oplog_session || c->txn_stmt_ids == NULL || index < 0 || index >= c->txn_nstmts)
		return 0;
	stmt = c->txn_stmt_ids[index];
	if ((r = repl_retryable_stmt_executed(c->txn_session, c->engine->oplog, s, stmt, ts, err)) != 1) {
		if (r == 0)
			repl_oplog_session_set_stmt(s, stmt);
		return r;
	}
	atomic_fetch_add(&repl_txn_stats(c->engine->sessions)->retried_statements, 1);
	if (c->txn_retried == NULL) {
		c->txn_retried = bson_new();
		atomic_fetch_add(&repl_txn_stats(c->engine->sessions)->retried_commands, 1);
	}
	{
		char key[16];
		const char *k;
		bson_uint32_to_string((uint32_t)c->txn_nretried++, &k, key, sizeof(key));
		bson_append_int32(c->txn_retried, k, -1, stmt);
	}
	return 1;
}

int
cmd_retry_whole(cmd_t *c, storage_session_t *s, terr_t *err)
{
	char desc[160];

	int found = 0;

	if (!c->txn_oplog_session || c->txn_stmt_ids == NULL)
		return 0;
	for (int i = 0; i < c->txn_nstmts; i++) {
		uint64_t ts;
		int r = repl_retryable_stmt_executed(c->txn_session, c->engine->oplog, s, c->txn_stmt_ids[i], &ts, err);
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		found++;
	}
	if (found > 0 && found == c->txn_nstmts) {
		/* every statement ran (a single one, or a retry in memory): each
		 * answers n: 1 */
		for (int i = 0; i < c->txn_nstmts; i++) {
			uint64_t ts;
			(void)cmd_retry_stmt(c, s, i, &ts, err);
		}
		return 1;
	}
	if (repl_retryable_any_executed(c->txn_session))
		return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
		    "Incomplete history detected for transaction %lld on session %s",
		    (long long)repl_session_txn(c->txn_session)->txn_number, repl_session_describe(c->txn_session, desc));
	repl_oplog_session_set_stmt(s, c->txn_stmt_ids[0]);
	c->txn_keep_reply = true;
	return 0;
}

int
cmd_retry_keep_whole(cmd_t *c, storage_session_t *s, const char *what, terr_t *err)
{
	if (!c->txn_oplog_session || c->txn_stmt_ids == NULL)
		return 0;
	for (int i = 0; i < c->txn_nstmts; i++) {
		uint64_t ts;
		int r = repl_retryable_stmt_executed(c->txn_session, c->engine->oplog, s, c->txn_stmt_ids[i], &ts, err);
		if (r < 0)
			return -1;
		if (r == 1) {
			/* some of it ran, and its kept reply is gone (a failure part-way,
			 * or a crash before the reply was written): what ran cannot be
			 * told from the buckets' entries, so nothing runs again */
			char desc[160];
			(void)what;
			return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
			    "Incomplete history detected for transaction %lld on session %s",
			    (long long)repl_session_txn(c->txn_session)->txn_number,
			    repl_session_describe(c->txn_session, desc));
		}
	}
	c->txn_keep_reply = true;
	return 0;
}

int
cmd_retry_update_result(cmd_t *c, storage_session_t *s, uint64_t ts, int64_t *n, int64_t *nmod,
                        bson_value_t *upserted, bool *has_upserted, terr_t *err)
{
	return repl_retryable_update_result(c->engine->oplog, s, ts, n, nmod, upserted, has_upserted, err);
}

/* ---- snapshot reads outside transactions -------------------------------- */

/* readConcern {level: "snapshot"[, atClusterTime]} on a command outside a
 * transaction: find, aggregate and distinct read at one timestamp (the
 * given one, else the oplog's visibility point) on a storage session of
 * their own; every other command refuses it, as mongod does. */
static int
snapshot_read_enter(cmd_t *c, terr_t *err)
{
	bson_iter_t it, rc;
	bool snapshot = false;
	uint64_t at = 0;
	storage_session_t *ss;
	int ret;

	if (!cmd_find_field(c, "readConcern", &it) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &rc))
		return 0;
	/* a set of several members: readConcern majority reads at the commit
	 * point the same way (cmd_repl_reads.c) */
	if (cmd_repl_reads_majority_at(c, &at, err)) {
		if (terr_is_set(err))
			return -1;
		if ((ss = storage_session_pool_get(c->engine->st, err)) == NULL)
			return -1;
		if (storage_txn_begin_at(ss, at, err) != 0) {
			storage_session_pool_put(c->engine->st, ss);
			if (err->code == TERR_INTERNAL_ERROR) {
				/* the commit point is older than the history kept (a
				 * restart, before the pin moved): not yet available */
				terr_clear(err);
				return terr_set(err, 134 /* ReadConcernMajorityNotAvailableYet */,
				    "Read concern majority reads are currently not possible.");
			}
			return -1;
		}
		c->txn_saved_session = c->client->session;
		c->client->session = ss;
		c->txn_snapshot_ts = at;
		c->rc_majority_read = true;
		return 0;
	}
	while (bson_iter_next(&rc)) {
		if (strcmp(bson_iter_key(&rc), "level") == 0 && BSON_ITER_HOLDS_UTF8(&rc))
			snapshot = strcmp(bson_iter_utf8(&rc, NULL), "snapshot") == 0;
		else if (strcmp(bson_iter_key(&rc), "atClusterTime") == 0 && BSON_ITER_HOLDS_TIMESTAMP(&rc)) {
			uint32_t t, i;
			bson_iter_timestamp(&rc, &t, &i);
			at = (uint64_t)t << 32 | i;
		}
	}
	if (!snapshot || c->engine->opts.repl_set_name == NULL)
		return 0;   /* a standalone's answer is the replica-set layer's (concerns) */
	/* a snapshot session's getMore (drivers send its readConcern again):
	 * the cursor reads at its own atClusterTime (cmd_get_more) */
	if (strcmp(c->name, "getMore") == 0)
		return 0;
	if (strcmp(c->name, "find") != 0 && strcmp(c->name, "aggregate") != 0 && strcmp(c->name, "distinct") != 0)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Command %s does not support { readConcern: { level: \"snapshot\" } } outside a multi-document transaction",
		    c->name);
	if (c->engine->oplog == NULL || !repl_oplog_exists(c->engine->oplog))
		return terr_set(err, 246 /* SnapshotUnavailable */, "Unable to read from a snapshot: the replica set is not initiated");
	repl_oplog_note_snapshot_read(c->engine->oplog);   /* history is kept while such reads come */
	if (at == 0)
		at = repl_oplog_visible(c->engine->oplog);
	if ((ss = storage_session_pool_get(c->engine->st, err)) == NULL)
		return -1;
	if ((ret = storage_txn_begin_at(ss, at, err)) != 0) {
		storage_session_pool_put(c->engine->st, ss);
		/* storage fails it with WiredTiger's InternalError (1) when read_ts
		 * is older than the oldest timestamp it keeps */
		if (ret != 0 && err->code == TERR_INTERNAL_ERROR) {
			terr_clear(err);
			return terr_set(err, TERR_SNAPSHOT_TOO_OLD,
			    "Read timestamp Timestamp(%u, %u) is older than the oldest available timestamp.",
			    (uint32_t)(at >> 32), (uint32_t)at);
		}
		return -1;
	}
	c->txn_saved_session = c->client->session;
	c->client->session = ss;
	c->txn_snapshot_ts = at;
	return 0;
}

/* The snapshot read is over: its storage session goes back, and the reply
 * names the timestamp it read at (cursor.atClusterTime; distinct's at the
 * top), so a snapshot session's next reads use the same one. */
static void
snapshot_read_leave(cmd_t *c)
{
	storage_session_t *ss = c->client->session;
	bson_t out = BSON_INITIALIZER;
	bson_iter_t it;
	bool done = false;

	c->client->session = c->txn_saved_session;
	c->txn_saved_session = NULL;
	storage_txn_rollback(ss);
	storage_session_pool_put(c->engine->st, ss);
	if (c->rc_majority_read) {
		/* a majority read: mongod's reply names no atClusterTime */
		c->rc_majority_read = false;
		c->txn_snapshot_ts = 0;
		return;
	}
	if (bson_iter_init(&it, c->reply)) {
		while (bson_iter_next(&it)) {
			if (strcmp(bson_iter_key(&it), "cursor") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
				bson_t cur;
				bson_iter_t f;
				bson_append_document_begin(&out, "cursor", 6, &cur);
				bson_iter_recurse(&it, &f);
				while (bson_iter_next(&f))
					bson_append_iter(&cur, bson_iter_key(&f), -1, &f);
				bson_append_timestamp(&cur, "atClusterTime", -1, (uint32_t)(c->txn_snapshot_ts >> 32),
				    (uint32_t)c->txn_snapshot_ts);
				bson_append_document_end(&out, &cur);
				done = true;
			} else {
				bson_append_iter(&out, bson_iter_key(&it), -1, &it);
			}
		}
	}
	if (!done)
		bson_append_timestamp(&out, "atClusterTime", -1, (uint32_t)(c->txn_snapshot_ts >> 32),
		    (uint32_t)c->txn_snapshot_ts);
	bson_reinit(c->reply);
	bson_concat(c->reply, &out);
	bson_destroy(&out);
	c->txn_snapshot_ts = 0;
}

int
cmd_txn_enter(cmd_t *c, const cmd_def_t *def, terr_t *err)
{
	bson_iter_t it_txn, it_auto, it_start, it_lsid;
	bool has_txn, has_auto, has_start, has_lsid, autocommit = true, start = false;
	unsigned flags;
	int64_t txn_number = 0;
	const uint8_t *id;
	repl_txn_kind_t kind;
	repl_session_t *s;

	(void)def;
	has_txn = cmd_find_field(c, "txnNumber", &it_txn);
	if (c->engine->opts.repl_set_name == NULL) {
		/* a standalone mongod: no transactions and no retryable writes,
		 * refused before anything runs (drivers and frameworks test for
		 * this code and message to fall back) */
		if (has_txn)
			return terr_set(err, TERR_ILLEGAL_OPERATION, "%s", CMD_NO_TRANSACTIONS_MSG);
		return 0;
	}
	has_auto = cmd_find_field(c, "autocommit", &it_auto);
	has_start = cmd_find_field(c, "startTransaction", &it_start);
	has_lsid = cmd_find_field(c, "lsid", &it_lsid);
	if (has_auto) {
		RET(read_bool_field(&it_auto, "autocommit", &autocommit, err));
		c->txn_autocommit = !autocommit;
	}
	if (has_start)
		RET(read_bool_field(&it_start, "startTransaction", &start, err));
	if (!has_lsid) {
		if (has_txn)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Transaction number requires a session ID to also be specified");
	} else if (!repl_lsid_id(&it_lsid, &id)) {
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'OperationSessionInfo.lsid' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&it_lsid)));
	}
	if (!has_txn) {
		if (has_auto)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "'autocommit' field requires a transaction number to also be specified");
		if (has_start)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "'startTransaction' field requires 'autocommit' field to also be specified");
		return snapshot_read_enter(c, err);
	}
	RET(read_txn_number(&it_txn, &txn_number, err));
	c->txn_retryable_write = !has_auto;
	if (has_auto && autocommit)
		return terr_set(err, TERR_INVALID_OPTIONS, "Specifying autocommit=true is not allowed.");
	if (!has_auto && has_start)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "'startTransaction' field requires 'autocommit' field to also be specified");
	if (has_start && !start)
		return terr_set(err, TERR_INVALID_OPTIONS, "Specifying startTransaction=false is not allowed.");
	flags = txn_flags(c->name);
	if (has_auto) {
		RET(check_allowed_in_txn(c, flags, err));
	} else if (!(flags & TXN_RETRYABLE)) {
		return terr_set(err, 50768,
		    "txnNumber may only be provided for multi-document transactions and retryable write commands. "
		    "autocommit:false was not provided, and %s is not a retryable write command.", c->name);
	}
	RET(repl_session_checkout(c->engine->sessions, id, c->deadline_us, &s, err));
	c->txn_session = s;
	if (repl_txn_begin_or_continue(s, c->engine->st, txn_number, has_auto, start, c->name,
	    atomic_load(&c->engine->txn_lifetime_limit_seconds), &kind, err) != 0)
		return -1;
	c->txn_kind = (int)kind;
	/* checked once the transaction is known, as mongod's unstash does: a
	 * failure ends the transaction (cmd_txn_leave) */
	if (kind == REPL_TXN_KIND_MULTI) {
		if (start)
			repl_session_txn(s)->read_concern_nonlocal = false;
		RET(check_concerns(c, repl_session_txn(s), start, flags, err));
	}
	if (kind == REPL_TXN_KIND_RETRYABLE) {
		bson_t prev;
		RET(snapshot_read_enter(c, err));   /* refuses it: writes take no snapshot readConcern */
		storage_session_t *ss = client_session(c->client, err);
		/* a reply kept whole before a restart comes back from
		 * config.tamga_retry_replies first */
		int r = ss == NULL ? -1 : repl_retryable_load_kept_reply(s, c->engine->st, ss, c->name, err);
		if (r >= 0)
			r = ts_fam_retry_check(c, s, ss, err);
		if (r == 0)
			r = repl_retryable_replay(s, c->engine->oplog, ss, c->name, c->body, 0, &prev, err);
		if (r < 0)
			return r;
		if (r == 0) {
			int n = statement_count(c);
			uint64_t ts;
			RET(stmt_ids_init(c, n, err));
			/* a single statement's fail point acts before it runs (a
			 * batch's in each of its storage transactions' commits), and
			 * not on a retry of what already ran (as mongod's) */
			if (n == 1) {
				int ex = repl_retryable_stmt_executed(s, c->engine->oplog, ss, c->txn_stmt_ids[0], &ts, err);
				if (ex < 0)
					return -1;
				if (ex == 0)
					RET(retryable_fail_point_before(c, err));
			}
			return retryable_oplog_begin(c, txn_number, err);
		}
		r = kept_reply_answer(c, &prev, err);
		bson_destroy(&prev);
		if (r != 0)
			return -1;
		c->txn_replayed = true;
		return 1;
	}
	/* the first statement: the transaction logs as one applyOps at commit,
	 * and its writes wait for a table's lock at most
	 * maxTransactionLockRequestTimeoutMillis (mongod's; -1 for ever) */
	if (start && repl_txn_storage(s) != NULL)
		storage_session_set_lock_timeout(repl_txn_storage(s),
		    atomic_load(&c->engine->max_txn_lock_request_timeout_ms));
	if (start) {
		bson_t lsid;
		if (lsid_doc(c, &lsid)) {
			int rc;
			repl_session_lsid(s, &lsid);   /* {id, uid}, as mongod's entries carry it */
			rc = repl_txn_attach_oplog(s, c->engine->oplog, &lsid, err);
			bson_destroy(&lsid);
			if (rc != 0)
				return -1;
		}
	}
	/* a statement of the transaction: it runs on the transaction's storage
	 * session, whichever connection sent it */
	if (!(flags & TXN_ENDS)) {
		storage_session_t *ts = repl_txn_storage(s);
		if (ts == NULL)
			return terr_set(err, TERR_NO_SUCH_TRANSACTION,
			    "Transaction with { txnNumber: %lld } has been aborted.", (long long)txn_number);
		c->txn_saved_session = c->client->session;
		c->client->session = ts;
		c->txn_swapped = true;
		/* the collections the transaction created are seen by its statements only */
		storage_session_bind_thread(ts);
		atomic_fetch_add(&repl_txn_stats(c->engine->sessions)->current_active, 1);
	}
	return 0;
}

/* mongod's ErrorCategory::RetriableError. */
static bool
is_retriable_code(int code)
{
	static const int codes[] = {6 /* HostUnreachable */, 7 /* HostNotFound */, 89 /* NetworkTimeout */,
	    91 /* ShutdownInProgress */, 189 /* PrimarySteppedDown */, 262 /* ExceededTimeLimit */,
	    9001 /* SocketException */, 10107 /* NotWritablePrimary */, 11600 /* InterruptedAtShutdown */,
	    11602 /* InterruptedDueToReplStateChange */, 13435 /* NotPrimaryNoSecondaryOk */,
	    13436 /* NotPrimaryOrSecondary */};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i] == code)
			return true;
	return false;
}

/* mongod's isTransientTransactionError. */
static bool
is_transient_txn_error(int code, bool has_wce, bool commit_or_abort)
{
	bool t = code == TERR_WRITE_CONFLICT || code == TERR_LOCK_TIMEOUT || code == 267 /* PreparedTransactionInProgress */ ||
	    code == TERR_SNAPSHOT_TOO_OLD || code == 246 /* SnapshotUnavailable */;

	if (commit_or_abort)
		return t || (code == TERR_NO_SUCH_TRANSACTION && !has_wce);
	return t || is_retriable_code(code) || code == TERR_NO_SUCH_TRANSACTION;
}

/* The labels mongod's getErrorLabels gives a reply: code is the command's
 * error (0: none), wce_code its writeConcernError's (0: none). */
static void
labels_for(const cmd_t *c, int code, int wce_code, const char **labels, int *n)
{
	bool commit = strcmp(c->name, "commitTransaction") == 0;
	bool ends = commit || strcmp(c->name, "abortTransaction") == 0;

	*n = 0;
	if (c->txn_autocommit && code != 0 && is_transient_txn_error(code, wce_code != 0, ends))
		labels[(*n)++] = "TransientTransactionError";
	if ((c->txn_retryable_write || ends) && (is_retriable_code(code) || is_retriable_code(wce_code)))
		labels[(*n)++] = "RetryableWriteError";
	if (commit && c->txn_autocommit) {
		bool unknown = is_retriable_code(code) || code == TERR_MAX_TIME_MS_EXPIRED ||
		    is_retriable_code(wce_code) || wce_code == TERR_MAX_TIME_MS_EXPIRED ||
		    (wce_code != 0 && wce_code != 100 /* UnsatisfiableWriteConcern */ &&
		     wce_code != 79 /* UnknownReplWriteConcern */);
		if (unknown)
			labels[(*n)++] = "UnknownTransactionCommitResult";
	}
}

static bool
has_labels(const bson_t *doc)
{
	bson_iter_t it;

	return doc != NULL && bson_iter_init_find(&it, doc, "errorLabels");
}

/* The error's errorLabels (kept when a fail point set them already). */
static void
add_error_labels(cmd_t *c, terr_t *err)
{
	const char *labels[3];
	int n;
	bson_t *extra, arr;
	bson_iter_t it;

	if (has_labels(err->extra))
		return;
	labels_for(c, err->code, 0, labels, &n);
	if (n == 0)
		return;
	extra = bson_new();
	if (err->extra != NULL && bson_iter_init(&it, err->extra)) {
		while (bson_iter_next(&it))
			bson_append_iter(extra, bson_iter_key(&it), -1, &it);
	}
	bson_append_array_begin(extra, "errorLabels", -1, &arr);
	for (int i = 0; i < n; i++) {
		char key[4];
		bson_snprintf(key, sizeof(key), "%d", i);
		BSON_APPEND_UTF8(&arr, key, labels[i]);
	}
	bson_append_array_end(extra, &arr);
	terr_set_extra_steal(err, extra);
}

void
cmd_txn_peek(cmd_t *c)
{
	bson_iter_t it;
	bool has_txn;

	if (c->engine->opts.repl_set_name == NULL)
		return;
	has_txn = cmd_find_field(c, "txnNumber", &it);
	if (cmd_find_field(c, "autocommit", &it))
		c->txn_autocommit = BSON_ITER_HOLDS_BOOL(&it) && !bson_iter_bool(&it);
	else
		c->txn_retryable_write = has_txn;
}

void
cmd_txn_error_labels(cmd_t *c, terr_t *err)
{
	add_error_labels(c, err);
}

void
cmd_txn_reply_labels(cmd_t *c, bson_t *reply)
{
	const char *labels[3];
	bson_iter_t it, w;
	int n, wce = 0;
	bson_t arr;

	/* the first letter before strcmp: this runs after every command */
	if (!c->txn_autocommit && !c->txn_retryable_write &&
	    !(c->name[0] == 'c' && strcmp(c->name, "commitTransaction") == 0) &&
	    !(c->name[0] == 'a' && strcmp(c->name, "abortTransaction") == 0))
		return;
	/* one pass for errorLabels and writeConcernError's first occurrence
	 * (every retryable write's reply comes here) */
	if (!bson_iter_init(&w, reply))
		return;
	while (bson_iter_next(&w)) {
		const char *k = bson_iter_key(&w);
		if (strcmp(k, "errorLabels") == 0)
			return;
		if (!wce && strcmp(k, "writeConcernError") == 0) {
			it = w;
			wce = 1;
		}
	}
	if (!wce || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &w) || !bson_iter_find(&w, "code"))
		return;
	wce = (int)bson_iter_as_int64(&w);
	labels_for(c, 0, wce, labels, &n);
	if (n == 0)
		return;
	bson_append_array_begin(reply, "errorLabels", -1, &arr);
	for (int i = 0; i < n; i++) {
		char key[4];
		bson_snprintf(key, sizeof(key), "%d", i);
		BSON_APPEND_UTF8(&arr, key, labels[i]);
	}
	bson_append_array_end(reply, &arr);
}

/* A statement's first write error as the command's error (mongod stops a
 * transaction's write at its first error and fails the command with it). */
static int
write_error_to_command_error(cmd_t *c, terr_t *err)
{
	bson_iter_t it, we, f;
	int code = TERR_INTERNAL_ERROR;
	const char *msg = "write error";
	bson_t *extra = NULL;
	bson_t info;
	bool has_info = false;

	if (!bson_iter_init_find(&it, c->reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
	    !bson_iter_recurse(&it, &we) || !bson_iter_next(&we) || !bson_iter_recurse(&we, &f))
		return 0;
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "code") == 0 && BSON_ITER_HOLDS_INT32(&f)) {
			code = bson_iter_int32(&f);
		} else if (strcmp(k, "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
			msg = bson_iter_utf8(&f, NULL);
		} else if (strcmp(k, "errInfo") == 0 && BSON_ITER_HOLDS_DOCUMENT(&f)) {
			const uint8_t *d;
			uint32_t len;
			bson_iter_document(&f, &len, &d);
			has_info = bson_init_static(&info, d, len);
		} else if (strcmp(k, "index") != 0) {
			if (extra == NULL)
				extra = bson_new();
			bson_append_iter(extra, k, -1, &f);
		}
	}
	terr_set(err, code, "%s", msg);
	if (has_info)
		terr_set_info_steal(err, bson_copy(&info));
	if (extra != NULL)
		terr_set_extra_steal(err, extra);
	return -1;
}

int
cmd_txn_leave(cmd_t *c, int rc, terr_t *err)
{
	repl_session_t *s = c->txn_session;
	storage_t *st = c->engine->st;

	/* a command outside any session, transaction, retryable write or
	 * snapshot read (most): every step below would be skipped */
	if (cmd_txn_idle(c)) {
		if (rc != 0 || terr_is_set(err))
			add_error_labels(c, err);
		return rc;
	}
	if (c->txn_snapshot_ts != 0)
		snapshot_read_leave(c);
	if (c->txn_swapped) {
		storage_session_bind_thread(NULL);
		c->client->session = c->txn_saved_session;
		c->txn_swapped = false;
		atomic_fetch_sub(&repl_txn_stats(c->engine->sessions)->current_active, 1);
	}
	if (c->txn_kind == REPL_TXN_KIND_MULTI && txn_flags(c->name) & TXN_ENDS) {
		/* commit / abort did their own work */
	} else if (c->txn_kind == REPL_TXN_KIND_MULTI) {
		if (rc == 0 && !terr_is_set(err) && write_error_to_command_error(c, err) != 0)
			rc = -1;
		if (rc != 0 || terr_is_set(err))
			repl_txn_abort_quietly(s, st);   /* as mongod: a failed statement ends the transaction */
		else
			repl_session_txn(s)->nstatements++;
	} else if (c->txn_kind == REPL_TXN_KIND_RETRYABLE && c->txn_replayed) {
		/* the first execution's row stands (rewriting it would lose its
		 * lastWriteOpTime, which a retry after a restart reads) */
	} else if (c->txn_kind == REPL_TXN_KIND_RETRYABLE) {
		/* what committed is noted, whatever became of the command: the
		 * single statement's row committed with it (run_retryable_in_txn),
		 * each storage transaction of a batch wrote its own (the hook) */
		terr_t e = TERR_INIT;
		storage_session_t *ss = client_session(c->client, &e);
		if (ss != NULL && c->txn_oplog_session) {
			const repl_oplog_stmt_t *st;
			int n = repl_oplog_session_stmts(ss, &st);
			repl_retryable_note_stmts(s, st, n, repl_oplog_session_last(ss));
		}
		terr_clear(&e);
		if (rc == 0 && !terr_is_set(err)) {
			if (c->txn_keep_reply) {
				bson_t kept;
				kept_reply_build(c, &kept);
				repl_retryable_keep_reply(s, c->name, &kept);
				/* a batch's storage transactions are committed: its reply
				 * goes in one of its own (a single statement's went with
				 * its write, run_retryable_in_txn) */
				if (!c->txn_row_written && ss != NULL && c->txn_oplog_session &&
				    repl_retryable_reply_write(s, st, c->engine->oplog, ss, c->name, &kept, &e) != 0) {
					bson_t *attr = BCON_NEW("error", BCON_UTF8(e.msg ? e.msg : ""));
					tlog('W', "COMMAND", 0, "Keeping a retryable write's reply failed", attr);
					bson_destroy(attr);
					terr_clear(&e);
				}
				bson_destroy(&kept);
			}
			if (c->txn_retried != NULL)
				BSON_APPEND_ARRAY(c->reply, "retriedStmtIds", c->txn_retried);
		}
		/* onPrimaryTransactionalWrite's closeConnection: the write stands,
		 * the client never hears of it and retries */
		if (c->txn_close_after && (rc == 0 || !c->txn_row_written))
			c->client->close_requested = true;
	}
	if (c->txn_oplog_session) {
		/* its storage session goes back clean */
		terr_t e = TERR_INIT;
		storage_session_t *ss = client_session(c->client, &e);
		if (ss != NULL)
			repl_oplog_session_clear(ss);
		terr_clear(&e);
		c->txn_oplog_session = false;
	}
	if (c->txn_retried != NULL) {
		bson_destroy(c->txn_retried);
		c->txn_retried = NULL;
	}
	bson_free(c->txn_stmt_ids);
	c->txn_stmt_ids = NULL;
	if (c->txn_image != NULL) {
		bson_destroy(c->txn_image);
		c->txn_image = NULL;
	}
	if (c->txn_kept_results != NULL) {
		bson_destroy(c->txn_kept_results);
		c->txn_kept_results = NULL;
	}
	if (s != NULL)
		repl_session_checkin(s);
	c->txn_session = NULL;
	if (rc != 0 || terr_is_set(err))
		add_error_labels(c, err);
	return rc;
}

/* ---- running the handler -------------------------------------------------- */

/* The code of the reply's first write error (0: none): writeErrors[0], or
 * a bulkWrite's first failed op (nErrors > 0; its items in the cursor's
 * first batch, else 8 UnknownError stands for one beyond it). */
static int
first_write_error(const bson_t *reply)
{
	bson_iter_t it, we, f, n_errors, cursor, write_errors;
	bool has_n = false, has_cursor = false, has_we = false;

	/* one pass over the reply for the three fields (each its first
	 * occurrence, as bson_iter_init_find): a retryable write's reply is
	 * scanned on every write */
	if (!bson_iter_init(&it, reply))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!has_n && strcmp(k, "nErrors") == 0) {
			n_errors = it;
			has_n = true;
		} else if (!has_cursor && strcmp(k, "cursor") == 0) {
			cursor = it;
			has_cursor = true;
		} else if (!has_we && strcmp(k, "writeErrors") == 0) {
			write_errors = it;
			has_we = true;
		}
	}
	if (has_n && BSON_ITER_HOLDS_NUMBER(&n_errors) && bson_iter_as_int64(&n_errors) > 0) {
		if (has_cursor && BSON_ITER_HOLDS_DOCUMENT(&cursor) &&
		    bson_iter_recurse(&cursor, &we) && bson_iter_find(&we, "firstBatch") && BSON_ITER_HOLDS_ARRAY(&we) &&
		    bson_iter_recurse(&we, &it))
			while (bson_iter_next(&it))
				if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &f) && bson_iter_find(&f, "code") &&
				    bson_iter_as_int64(&f) != 0)
					return (int)bson_iter_as_int64(&f);
		return 8;
	}
	if (!has_we || !BSON_ITER_HOLDS_ARRAY(&write_errors) ||
	    !bson_iter_recurse(&write_errors, &we) || !bson_iter_next(&we) || !bson_iter_recurse(&we, &it) ||
	    !bson_iter_find(&it, "code"))
		return 0;
	return (int)bson_iter_as_int64(&it);
}

/* A single-statement retryable write: the statement and the session's
 * config.transactions row in one storage transaction (mongod writes them in
 * one WriteUnitOfWork), committed once; a write conflict reruns the whole
 * command on a fresh snapshot, as storage_txn_run would have.  A statement
 * that fails leaves nothing (the reply is its error; nothing is recorded, a
 * retry runs it again, as on mongod). */
static int
run_retryable_in_txn(cmd_t *c, const cmd_def_t *def, storage_session_t *ss, terr_t *err)
{
	bool sync = write_concern_sync(c);
	unsigned seed = (unsigned)(uintptr_t)c ^ (unsigned)repl_now_ms();
	int rc;

	for (int attempt = 0;; attempt++) {
		int code;
		if ((rc = storage_txn_begin(ss, err)) != 0)
			return rc;
		rc = def->handler(c, err);
		code = rc != 0 || terr_is_set(err) ? err->code : first_write_error(c->reply);
		if (code == 0) {
			uint64_t ts = storage_txn_first_timestamp(ss);
			/* the term alone: repl_set_info also refreshes the last
			 * applied optime (a WiredTiger query), not needed here */
			int64_t term = c->engine->rs != NULL ? repl_set_term(c->engine->rs) : 1;
			if (ts == 0 && c->txn_oplog_session) {
				/* it logged nothing (a retry answered from the history, an
				 * update that changed nothing): the row keeps pointing at
				 * the txnNumber's last entry */
				repl_oplog_optime_t lw = repl_retryable_last_write(c->txn_session);
				ts = lw.ts;
				if (lw.ts != 0)
					term = lw.t;
			}
			if (c->txn_image != NULL && ts != 0 &&
			    repl_retryable_image_in_txn(c->txn_session, c->engine->st, ss, ts, c->txn_image_kind, c->txn_image,
			    err) != 0) {
				storage_txn_rollback(ss);
				return -1;
			}
			if (c->txn_keep_reply && c->txn_oplog_session) {
				/* kept whole: the reply commits with the write */
				bson_t kept;
				int kr;
				kept_reply_build(c, &kept);
				kr = repl_retryable_reply_in_txn(c->txn_session, c->engine->st, c->engine->oplog, ss, c->name, &kept,
				    err);
				bson_destroy(&kept);
				if (kr != 0) {
					storage_txn_rollback(ss);
					return -1;
				}
			}
			if (repl_retryable_record_in_txn(c->txn_session, c->engine->st, ss, c->name, c->reply, ts, term,
			    err) != 0) {
				storage_txn_rollback(ss);
				repl_retryable_forget(c->txn_session);
				return -1;
			}
			if ((rc = storage_txn_commit(ss, sync, err)) == 0)
				return 0;
			repl_retryable_forget(c->txn_session);
			code = err->code;
		} else {
			storage_txn_rollback(ss);
		}
		if (code != TERR_WRITE_CONFLICT || attempt >= 1000 || cmd_check_deadline(c, err))
			return rc;
		/* conflict: the command runs again from the start */
		terr_clear(err);
		bson_reinit(c->reply);
		if (c->txn_oplog_session) {
			bson_t lsid;
			if (lsid_doc(c, &lsid)) {
				repl_session_lsid(c->txn_session, &lsid);   /* {id, uid}, as the first attempt's */
				repl_oplog_session_set(c->engine->oplog, ss, &lsid, repl_session_txn(c->txn_session)->txn_number,
				    repl_retryable_last_write(c->txn_session), NULL);
				bson_destroy(&lsid);
			}
			repl_oplog_session_set_stmt(ss, c->txn_stmt_ids != NULL ? c->txn_stmt_ids[0] : 0);
		}
		usleep((useconds_t)(attempt < 3 ? 0 : 100 + rand_r(&seed) % 2000));
	}
}

int
cmd_txn_run_handler(cmd_t *c, const cmd_def_t *def, terr_t *err)
{
	storage_session_t *ss;

	if (c->txn_kind != REPL_TXN_KIND_RETRYABLE || statement_count(c) != 1)
		return def->handler(c, err);
	if ((ss = client_session(c->client, err)) == NULL)
		return -1;
	c->txn_row_written = true;
	return run_retryable_in_txn(c, def, ss, err);
}

/* ---- commitTransaction / abortTransaction -------------------------------- */

static int
end_transaction_check(cmd_t *c, terr_t *err)
{
	if (c->engine->opts.repl_set_name == NULL)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "%s", CMD_NO_TRANSACTIONS_MSG);
	if (c->txn_session == NULL || c->txn_kind != REPL_TXN_KIND_MULTI)
		return terr_set(err, 125 /* CommandFailed */, "%s must be run within a transaction", c->name);
	return 0;
}

/* mongod's TXN D3 lines as commitTransaction (20507) and abortTransaction
 * (20508) start: the transaction's number and the session's id, written
 * only at TXN verbosity 3. */
static void
log_txn_received(const cmd_t *c, int id, const char *msg)
{
	bson_t attr, d;

	if (!tlog_debug_on("TXN", 3))
		return;
	bson_init(&attr);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "txnNumberAndRetryCounter", &d);
	BSON_APPEND_INT64(&d, "txnNumber", repl_session_txn(c->txn_session)->txn_number);
	bson_append_document_end(&attr, &d);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "sessionId", &d);
	bson_append_binary(&d, "id", 2, BSON_SUBTYPE_UUID, repl_session_id(c->txn_session), 16);
	bson_append_document_end(&attr, &d);
	tlog_debug(3, "TXN", id, msg, &attr);
	bson_destroy(&attr);
}

CMD_HANDLER(cmd_commit_transaction)
{
	repl_txn_state_t *t;
	bool already;
	uint64_t ts;
	int64_t term;
	storage_session_t *ss;

	RET(end_transaction_check(c, err));
	log_txn_received(c, 20507, "Received commitTransaction");
	t = repl_session_txn(c->txn_session);
	already = t->phase == REPL_TXN_COMMITTED;
	RET(repl_txn_commit(c->txn_session, c->engine->st, write_concern_sync(c), err));
	if (already)
		return 0;
	/* config.transactions: the session's row records the commit, as mongod;
	 * a commit that logged entries wrote it in its own storage transaction */
	if (t->row_at_commit)
		return 0;
	repl_txn_last_optime(c->txn_session, &ts, &term);
	if ((ss = client_session(c->client, err)) == NULL)
		return -1;
	return repl_retryable_record(c->txn_session, c->engine->st, ss, c->name, NULL, write_concern_sync(c), ts, term,
	    "committed", err);
}

CMD_HANDLER(cmd_abort_transaction)
{
	RET(end_transaction_check(c, err));
	log_txn_received(c, 20508, "Received abortTransaction");
	return repl_txn_abort(c->txn_session, c->engine->st, err);
}

void
cmd_txn_server_status(cmd_t *c, bson_t *reply)
{
	repl_txn_stats_t *t = repl_txn_stats(c->engine->sessions);
	long long open = atomic_load(&t->current_open), active = atomic_load(&t->current_active);
	bson_t sub;

	BSON_APPEND_DOCUMENT_BEGIN(reply, "transactions", &sub);
	BSON_APPEND_INT64(&sub, "retriedCommandsCount", atomic_load(&t->retried_commands));
	BSON_APPEND_INT64(&sub, "retriedStatementsCount", atomic_load(&t->retried_statements));
	BSON_APPEND_INT64(&sub, "transactionsCollectionWriteCount", atomic_load(&t->transactions_collection_writes));
	BSON_APPEND_INT64(&sub, "currentActive", active);
	BSON_APPEND_INT64(&sub, "currentInactive", open - active > 0 ? open - active : 0);
	BSON_APPEND_INT64(&sub, "currentOpen", open);
	BSON_APPEND_INT64(&sub, "totalAborted", atomic_load(&t->total_aborted));
	BSON_APPEND_INT64(&sub, "totalCommitted", atomic_load(&t->total_committed));
	BSON_APPEND_INT64(&sub, "totalStarted", atomic_load(&t->total_started));
	BSON_APPEND_INT64(&sub, "totalPrepared", 0);
	BSON_APPEND_INT64(&sub, "totalPreparedThenCommitted", 0);
	BSON_APPEND_INT64(&sub, "totalPreparedThenAborted", 0);
	BSON_APPEND_INT64(&sub, "currentPrepared", 0);
	bson_append_document_end(reply, &sub);
}
