/*
 * retryable.c -- retryable writes' record (see retryable.h): the reply kept
 * per session, the config.transactions rows.
 */
#include "repl/retryable.h"
#include "repl/txn.h"
#include "repl/oplog.h"

#include <string.h>

#include "common/mem.h"
#include "common/opctx.h"

struct repl_retry_record {
	char cmd[32];
	bool has_reply;     /* reply holds the first reply (a time-series insert, kept whole) */
	bool lost;          /* ran before a restart: rebuilt from the oplog */
	uint64_t last_ts;   /* lost: the row's lastWriteOpTime.ts */
	bson_t reply;
	/* the statements executed at this txnNumber, stmtId -> its entry's ts
	 * (mongod's activeTxnCommittedStatements): open addressing, keys + 1
	 * (0: empty slot) */
	int64_t *keys;
	uint64_t *vals;
	size_t cap, n;
	/* the first statements' slots, in the record itself (a retryable
	 * write is mostly one statement: no allocation for its map) */
	int64_t ikeys[8];
	uint64_t ivals[8];
	/* the newest entry written at this txnNumber (the next write's
	 * prevOpTime, config.transactions' lastWriteOpTime) */
	repl_oplog_optime_t last_write;
	bool history_loaded;   /* lost: the chain was read back */
	bool incomplete;       /* ... and an entry of it is gone from the oplog */
};

#define TXN_TABLE_DB "config"
#define TXN_TABLE "transactions"

void
repl_retry_record_free(repl_retry_record_t *r)
{
	if (r == NULL)
		return;
	bson_destroy(&r->reply);
	if (r->keys != r->ikeys) {
		bson_free(r->keys);
		bson_free(r->vals);
	}
	bson_free(r);
}

/* The record of s's txnNumber, created empty when there is none. */
static repl_retry_record_t *
record_of(repl_session_t *s)
{
	repl_txn_state_t *t = repl_session_txn(s);

	if (t->retry == NULL) {
		t->retry = bson_malloc0(sizeof(*t->retry));
		t->retry->keys = t->retry->ikeys;
		t->retry->vals = t->retry->ivals;
		t->retry->cap = sizeof(t->retry->ikeys) / sizeof(t->retry->ikeys[0]);
		bson_init(&t->retry->reply);
		t->retry->last_write = REPL_OPLOG_OPTIME_NULL;
		t->retry->history_loaded = true;
	}
	return t->retry;
}

static size_t
slot_of(int64_t key, size_t cap)
{
	uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

static void
map_put(repl_retry_record_t *r, int32_t stmt, uint64_t ts)
{
	int64_t key = (int64_t)stmt + 1;
	size_t i;

	if ((r->n + 1) * 2 > r->cap) {
		size_t ocap = r->cap, ncap = ocap ? ocap * 2 : 16;
		int64_t *ok = r->keys;
		uint64_t *ov = r->vals;
		r->keys = bson_malloc0(ncap * sizeof(*r->keys));
		r->vals = bson_malloc0(ncap * sizeof(*r->vals));
		r->cap = ncap;
		r->n = 0;
		for (size_t j = 0; j < ocap; j++)
			if (ok[j] != 0)
				map_put(r, (int32_t)(ok[j] - 1), ov[j]);
		if (ok != r->ikeys) {
			bson_free(ok);
			bson_free(ov);
		}
	}
	for (i = slot_of(key, r->cap); r->keys[i] != 0 && r->keys[i] != key; i = (i + 1) & (r->cap - 1))
		;
	if (r->keys[i] == 0)
		r->n++;
	r->keys[i] = key;
	r->vals[i] = ts;
}

static bool
map_get(const repl_retry_record_t *r, int32_t stmt, uint64_t *ts)
{
	int64_t key = (int64_t)stmt + 1;

	if (r->cap == 0)
		return false;
	for (size_t i = slot_of(key, r->cap); r->keys[i] != 0; i = (i + 1) & (r->cap - 1))
		if (r->keys[i] == key) {
			*ts = r->vals[i];
			return true;
		}
	return false;
}

/* findAndModify has two spellings; both are the same command's retries */
static bool
same_command(const char *a, const char *b)
{
	if (strcasecmp(a, "findAndModify") == 0 && strcasecmp(b, "findAndModify") == 0)
		return true;
	return strcmp(a, b) == 0;
}

static int image_read(repl_session_t *s, storage_t *st, storage_session_t *ss, uint64_t ts, bson_t *image,
                      terr_t *err);
static void append_lsid(bson_t *doc, const char *key, repl_session_t *s);

static int
incomplete(repl_session_t *s, terr_t *err)
{
	char desc[160];

	return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
	    "Incomplete history detected for transaction %lld on session %s",
	    (long long)repl_session_txn(s)->txn_number, repl_session_describe(s, desc));
}

static bool
entry_is(const bson_t *e, const char *field, const char *value)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, e, field) && BSON_ITER_HOLDS_UTF8(&it) &&
	    strcmp(bson_iter_utf8(&it, NULL), value) == 0;
}

/* The oldest entry's ts (0: none). */
static uint64_t
oldest_ts(repl_oplog_t *op, storage_session_t *ss)
{
	repl_oplog_cursor_t *cur = NULL;
	bson_t e;
	bson_iter_t it;
	uint64_t ts = 0;
	terr_t err = TERR_INIT;

	if (repl_oplog_scan_open(op, ss, 0, &cur, &err) == 0 && repl_oplog_cursor_next(cur, &e, &err) == 1 &&
	    bson_iter_init_find(&it, &e, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		uint32_t t, i;
		bson_iter_timestamp(&it, &t, &i);
		ts = (uint64_t)t << 32 | i;
	}
	if (cur != NULL)
		repl_oplog_cursor_close(cur);
	terr_clear(&err);
	return ts;
}

/* An entry's opType as a string ("?" when missing). */
static const char *
entry_op(const bson_t *e)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, e, "op") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "?";
}

static bool
body_flag(const bson_t *body, const char *field)
{
	bson_iter_t it;

	return body != NULL && bson_iter_init_find(&it, body, field) && bson_iter_as_bool(&it);
}

/*
 * A retried findAndModify whose statement ran (its entry at ts): the reply
 * rebuilt from the entry as mongod's parseOplogEntryForFindAndModify does,
 * in memory and after a restart alike: the entry's kind checked against
 * the request (validateFindAndModifyRetryability: 40606, 40608, 40609,
 * 40611, 40612, 217 when no image was kept), an update's or a delete's
 * document from config.image_collection (5637601 when there is none,
 * 5637602 when it is another write's), an upsert's from the entry (with
 * `new`).  The value is the stored image, not projected by `fields`: mongod
 * answers a retry so.  1 with *reply, -1 with err.
 */
static int
rebuild(repl_session_t *s, repl_oplog_t *op, storage_session_t *ss, const bson_t *body, uint64_t ts,
        bson_t *reply, terr_t *err)
{
	bson_t e, img, leo, ins;
	bson_iter_t it, id;
	const char *opname, *image = NULL;
	bool remove = body_flag(body, "remove"), want_new = body_flag(body, "new");
	char desc[160];
	int rc, ret = -1;

	if (op == NULL || ss == NULL)
		return incomplete(s, err);
	if ((rc = repl_oplog_find(op, ss, ts, &e, err)) < 0)
		return -1;
	if (rc == 1)
		return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
		    "oplog no longer contains the complete write history of this transaction, log with ts "
		    "Timestamp(%u, %u) cannot be found", (uint32_t)(ts >> 32), (uint32_t)ts);
	opname = entry_op(&e);
	if (bson_iter_init_find(&it, &e, "needsRetryImage") && BSON_ITER_HOLDS_UTF8(&it))
		image = bson_iter_utf8(&it, NULL);
	bson_init(reply);
	if (strcmp(opname, "d") == 0 || strcmp(opname, "u") == 0) {
		bool del = opname[0] == 'd';
		int code = del && !remove ? 40606 : !del && remove ? 40609 : 0;
		if (code == 0 && !del && want_new && image != NULL && strcmp(image, "preImage") == 0)
			code = 40611;
		if (code == 0 && !del && !want_new && image != NULL && strcmp(image, "postImage") == 0)
			code = 40612;
		if (code != 0) {
			terr_set(err, code, "findAndModify retry request is not compatible with previous write in the "
			    "transaction of type: %s, oplogTs: Timestamp(%u, %u)", opname, (uint32_t)(ts >> 32), (uint32_t)ts);
			goto out;
		}
		if (image == NULL) {
			terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY, "Retrying a findAndModify operation with "
			    "session id %s and txn number %lld after it has been executed but the %s is no longer available",
			    repl_session_describe(s, desc), (long long)repl_session_txn(s)->txn_number,
			    del || !want_new ? "preImage" : "postImage");
			goto out;
		}
		if ((rc = image_read(s, repl_sessions_storage(repl_session_registry(s)), ss, ts, &img, err)) < 0)
			goto out;
		if (rc != 1) {
			terr_set(err, rc == 0 ? 5637601 : 5637602, "image collection no longer contains the complete "
			    "write history of this transaction, record with sessionId: %s cannot be found",
			    repl_session_describe(s, desc));
			goto out;
		}
		bson_append_document_begin(reply, "lastErrorObject", -1, &leo);
		BSON_APPEND_INT32(&leo, "n", 1);
		if (!del)
			BSON_APPEND_BOOL(&leo, "updatedExisting", true);
		bson_append_document_end(reply, &leo);
		BSON_APPEND_DOCUMENT(reply, "value", &img);
		bson_destroy(&img);
		ret = 1;
	} else if (strcmp(opname, "i") == 0 && bson_iter_init_find(&it, &e, "o") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t len;
		if (!body_flag(body, "upsert")) {
			terr_set(err, 40608, "findAndModify retry request is not compatible with previous write in the "
			    "transaction of type: i, oplogTs: Timestamp(%u, %u)", (uint32_t)(ts >> 32), (uint32_t)ts);
			goto out;
		}
		bson_iter_document(&it, &len, &d);
		if (!bson_init_static(&ins, d, len)) {
			terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY, "the upsert's oplog entry is malformed");
			goto out;
		}
		bson_append_document_begin(reply, "lastErrorObject", -1, &leo);
		BSON_APPEND_INT32(&leo, "n", 1);
		BSON_APPEND_BOOL(&leo, "updatedExisting", false);
		if (bson_iter_init_find(&id, &ins, "_id"))
			bson_append_iter(&leo, "upserted", -1, &id);
		bson_append_document_end(reply, &leo);
		if (want_new)
			BSON_APPEND_DOCUMENT(reply, "value", &ins);
		else
			BSON_APPEND_NULL(reply, "value");
		ret = 1;
	} else {
		terr_set(err, 40609, "findAndModify retry request is not compatible with previous write in the "
		    "transaction of type: %s, oplogTs: Timestamp(%u, %u)", opname, (uint32_t)(ts >> 32), (uint32_t)ts);
	}
out:
	if (ret != 1)
		bson_destroy(reply);
	bson_destroy(&e);
	return ret;
}

/* An entry's timestamp field (0: none). */
static uint64_t
entry_ts(const bson_t *e, const char *field, const char *sub)
{
	bson_iter_t it, d;
	uint32_t t, i;

	if (!bson_iter_init_find(&it, e, field))
		return 0;
	if (sub != NULL) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &d) || !bson_iter_find(&d, sub))
			return 0;
		it = d;
	}
	if (!BSON_ITER_HOLDS_TIMESTAMP(&it))
		return 0;
	bson_iter_timestamp(&it, &t, &i);
	return (uint64_t)t << 32 | i;
}

/*
 * A record that ran before a restart: read its statements back from the
 * oplog (mongod's fetchActiveTransactionHistory): from the entry the
 * config.transactions row names, back through prevOpTime while the entries
 * are this txnNumber's, each stmtId with its entry's ts.  An entry the
 * chain names that truncation removed marks the history incomplete: a
 * statement not found then answers 217.
 */
static int
load_history(repl_session_t *s, repl_retry_record_t *r, repl_oplog_t *op, storage_session_t *ss, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	uint64_t ts, oldest = 0;

	if (!r->lost || r->history_loaded)
		return 0;
	if (op == NULL || ss == NULL) {
		r->incomplete = true;
		r->history_loaded = true;
		return 0;
	}
	for (ts = r->last_ts; ts != 0;) {
		bson_t e;
		bson_iter_t it;
		int rc;

		if (tm_interrupt_check_now(err) != 0)
			return -1;   /* read again by the next retry */
		if ((rc = repl_oplog_find(op, ss, ts, &e, err)) < 0)
			return -1;
		if (rc == 1) {
			/* gone (truncated), or never written: a row's time stands in
			 * for a write that logged nothing */
			if (oldest == 0)
				oldest = oldest_ts(op, ss);
			if (ts < oldest)
				r->incomplete = true;
			break;
		}
		if (!bson_iter_init_find(&it, &e, "txnNumber") || bson_iter_as_int64(&it) != t->txn_number) {
			bson_destroy(&e);
			break;
		}
		if (bson_iter_init_find(&it, &e, "stmtId") && (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it)) &&
		    bson_iter_as_int64(&it) >= 0 && bson_iter_as_int64(&it) <= INT32_MAX) {
			uint64_t known;
			int32_t stmt = (int32_t)bson_iter_as_int64(&it);
			if (!map_get(r, stmt, &known))
				map_put(r, stmt, ts);
		}
		ts = entry_ts(&e, "prevOpTime", "ts");
		bson_destroy(&e);
	}
	r->history_loaded = true;
	return 0;
}

int
repl_retryable_stmt_executed(repl_session_t *s, repl_oplog_t *op, storage_session_t *ss, int32_t stmt,
                             uint64_t *ts, terr_t *err)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;

	if (r == NULL)
		return 0;
	RET(load_history(s, r, op, ss, err));
	if (map_get(r, stmt, ts))
		return 1;
	if (r->incomplete)
		return incomplete(s, err);
	return 0;
}

int
repl_retryable_update_result(repl_oplog_t *op, storage_session_t *ss, uint64_t ts, int64_t *n, int64_t *nmod,
                             bson_value_t *upserted, bool *has_upserted, terr_t *err)
{
	bson_t e;
	bson_iter_t it;
	int rc;

	*has_upserted = false;
	if (op == NULL || ss == NULL)
		return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
		    "oplog no longer contains the complete write history of this transaction");
	if ((rc = repl_oplog_find(op, ss, ts, &e, err)) < 0)
		return -1;
	if (rc == 1)
		return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
		    "oplog no longer contains the complete write history of this transaction, log with ts "
		    "Timestamp(%u, %u) cannot be found", (uint32_t)(ts >> 32), (uint32_t)ts);
	rc = 0;
	if (entry_is(&e, "op", "i")) {
		/* an upsert is logged as an insert */
		bson_iter_t d;
		*n = 1;
		*nmod = 0;
		if (bson_iter_init_find(&it, &e, "o") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &d) &&
		    bson_iter_find(&d, "_id")) {
			bson_value_copy(bson_iter_value(&d), upserted);
			*has_upserted = true;
		}
	} else if (entry_is(&e, "op", "u")) {
		*n = 1;
		*nmod = 1;
	} else {
		bson_iter_t o;
		const char *opname = bson_iter_init_find(&o, &e, "op") && BSON_ITER_HOLDS_UTF8(&o) ?
		    bson_iter_utf8(&o, NULL) : "?";
		rc = terr_set(err, 40638,
		    "update retry request is not compatible with previous write in the transaction of type: %s, "
		    "oplogTs: Timestamp(%u, %u)", opname, (uint32_t)(ts >> 32), (uint32_t)ts);
	}
	bson_destroy(&e);
	return rc;
}

void
repl_retryable_note_stmts(repl_session_t *s, const repl_oplog_stmt_t *stmts, int n, repl_oplog_optime_t last)
{
	repl_retry_record_t *r;

	if (n == 0 && last.ts == 0)
		return;
	r = record_of(s);
	for (int i = 0; i < n; i++)
		map_put(r, stmts[i].stmt, stmts[i].ts);
	if (last.ts != 0)
		r->last_write = last;
}

bool
repl_retryable_any_executed(repl_session_t *s)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;

	return r != NULL && (r->n > 0 || r->has_reply || (r->lost && r->last_ts != 0));
}

repl_oplog_optime_t
repl_retryable_last_write(repl_session_t *s)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;

	return r != NULL ? r->last_write : REPL_OPLOG_OPTIME_NULL;
}

bool
repl_retryable_has_kept_reply(repl_session_t *s, const char *cmd)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;

	return r != NULL && r->has_reply && same_command(r->cmd, cmd);
}

void
repl_retryable_keep_reply(repl_session_t *s, const char *cmd, const bson_t *reply)
{
	repl_retry_record_t *r = record_of(s);

	bson_strncpy(r->cmd, cmd, sizeof(r->cmd));
	bson_reinit(&r->reply);
	bson_concat(&r->reply, reply);
	r->has_reply = true;
}

int
repl_retryable_replay(repl_session_t *s, repl_oplog_t *op, storage_session_t *ss, const char *cmd,
                      const bson_t *body, int nstatements, bson_t *reply, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	repl_retry_record_t *r = t->retry;
	bson_iter_t it;
	int32_t stmt = 0;
	uint64_t ts;
	int ex;

	(void)nstatements;
	if (r == NULL)
		return 0;
	if (strcasecmp(cmd, "findAndModify") != 0) {
		/* insert, update, delete, bulkWrite: each statement is looked up
		 * as it comes (repl_retryable_stmt_executed), but a write kept
		 * whole (a time-series insert) answers its first reply */
		if (r->has_reply && same_command(r->cmd, cmd)) {
			bson_copy_to(&r->reply, reply);
			atomic_fetch_add(&stats->retried_commands, 1);
			return 1;
		}
		RET(load_history(s, r, op, ss, err));
		return 0;
	}
	/* findAndModify: mongod's checkStatementExecuted on its stmtId, then
	 * the reply from the entry, with retriedStmtId */
	if (body != NULL && bson_iter_init_find(&it, body, "stmtId") && BSON_ITER_HOLDS_INT32(&it))
		stmt = bson_iter_int32(&it);
	if (r->has_reply && same_command(r->cmd, cmd)) {
		/* kept whole (a time-series findAndModify: its entries are the
		 * buckets', not the measurement's): its first reply */
		bson_copy_to(&r->reply, reply);
		BSON_APPEND_INT32(reply, "retriedStmtId", stmt);
		atomic_fetch_add(&stats->retried_commands, 1);
		atomic_fetch_add(&stats->retried_statements, 1);
		return 1;
	}
	if ((ex = repl_retryable_stmt_executed(s, op, ss, stmt, &ts, err)) <= 0)
		return ex;
	if (rebuild(s, op, ss, body, ts, reply, err) != 1)
		return -1;
	BSON_APPEND_INT32(reply, "retriedStmtId", stmt);
	atomic_fetch_add(&stats->retried_commands, 1);
	atomic_fetch_add(&stats->retried_statements, 1);
	return 1;
}

/* The session's lsid {id, uid} under key: the _id of its rows here, the
 * same lsid its oplog entries carry (repl/session.h), so a follower that
 * keys its row by the entry's lsid writes the same row. */
static void
append_lsid(bson_t *doc, const char *key, repl_session_t *s)
{
	repl_session_append_lsid(doc, key, s);
}

struct row_write {
	storage_t *st;
	repl_session_t *s;
	int64_t txn_number;
	uint64_t ts;
	int64_t term;
	const char *state;
	storage_coll_t *coll;   /* config.transactions when the caller holds it, else NULL */
};

/* The session's {_id: lsid} (built once, kept in its state). */
static const bson_t *
row_key(repl_session_t *s)
{
	bson_t id;
	repl_txn_state_t *t = repl_session_txn(s);
	uint8_t uid[32];

	/* built again when another user named the session since */
	repl_session_owner_uid(s, uid);
	if (t->row_key != NULL && memcmp(t->row_key_uid, uid, 32) != 0) {
		bson_destroy(t->row_key);
		t->row_key = NULL;
	}
	if (t->row_key == NULL) {
		t->row_key = bson_new();
		bson_append_document_begin(t->row_key, "_id", 3, &id);
		bson_append_binary(&id, "id", 2, BSON_SUBTYPE_UUID, repl_session_id(s), 16);
		bson_append_binary(&id, "uid", 3, BSON_SUBTYPE_BINARY, uid, 32);
		bson_append_document_end(t->row_key, &id);
		memcpy(t->row_key_uid, uid, 32);
	}
	return t->row_key;
}

/* The row {_id: lsid (key's field), txnNum, lastWriteOpTime: {ts, t},
 * lastWriteDate[, state]} written as bytes into b (ROW_MAX bytes; it is
 * written on every retryable write and commit): its length, 0 when it
 * does not fit (then built with libbson by the caller). */
#define ROW_MAX 512
static size_t
row_build(uint8_t *b, const bson_t *key, int64_t txn_number, uint64_t ts, int64_t term, int64_t date,
          const char *state)
{
	size_t klen = key->len - 5, slen = state != NULL ? strlen(state) : 0;
	size_t need = 4 + klen + (1 + 7 + 8) + (1 + 16 + 4 + (1 + 3 + 8) + (1 + 2 + 8) + 1) + (1 + 14 + 8) +
	    (state != NULL ? 1 + 6 + 4 + slen + 1 : 0) + 1;
	uint8_t *p = b;
	uint32_t u;
	uint64_t v;
	size_t sub;

	if (need > ROW_MAX)
		return 0;
#define RB_PUT(src, n) (memcpy(p, (src), (n)), p += (n))
#define RB_U32(x) (u = BSON_UINT32_TO_LE(x), RB_PUT(&u, 4))
#define RB_U64(x) (v = BSON_UINT64_TO_LE(x), RB_PUT(&v, 8))
	p += 4;
	RB_PUT(bson_get_data(key) + 4, klen);   /* the _id element */
	*p++ = BSON_TYPE_INT64;
	RB_PUT("txnNum", 7);
	RB_U64((uint64_t)txn_number);
	*p++ = BSON_TYPE_DOCUMENT;
	RB_PUT("lastWriteOpTime", 16);
	sub = (size_t)(p - b);
	p += 4;
	*p++ = BSON_TYPE_TIMESTAMP;   /* increment, then seconds: ts's low and high words */
	RB_PUT("ts", 3);
	RB_U64(ts);
	*p++ = BSON_TYPE_INT64;
	RB_PUT("t", 2);
	RB_U64((uint64_t)term);
	*p++ = 0;
	u = BSON_UINT32_TO_LE((uint32_t)((size_t)(p - b) - sub));
	memcpy(b + sub, &u, 4);
	*p++ = BSON_TYPE_DATE_TIME;
	RB_PUT("lastWriteDate", 14);
	RB_U64((uint64_t)date);
	if (state != NULL) {
		*p++ = BSON_TYPE_UTF8;
		RB_PUT("state", 6);
		RB_U32((uint32_t)slen + 1);
		RB_PUT(state, slen + 1);
	}
	*p++ = 0;
	u = BSON_UINT32_TO_LE((uint32_t)(p - b));
	memcpy(b, &u, 4);
#undef RB_PUT
#undef RB_U32
#undef RB_U64
	return (size_t)(p - b);
}

/* Remember where and what the session's row now is (recid 0: forget). */
static void
row_remember(repl_txn_state_t *t, const storage_coll_t *c, recid_t recid, const bson_t *doc)
{
	t->row_recid = (int64_t)recid;
	if (recid == 0)
		return;
	memcpy(t->row_uuid, c->uuid, 16);
	if (doc->len > t->row_last_cap) {
		t->row_last_cap = doc->len;
		t->row_last = bson_realloc(t->row_last, t->row_last_cap);
	}
	memcpy(t->row_last, bson_get_data(doc), doc->len);
	t->row_last_len = doc->len;
}

/*
 * Write the session's row in ss's open transaction.  Where the session
 * last wrote it (the same table by UUID, the same RecordId: RecordIds are
 * never reused in a table and a row's _id never changes, so that record is
 * this session's row or gone) it is overwritten in one write; else the
 * _id index finds it; a new row is inserted.
 */
static int
row_write_txn(storage_session_t *ss, void *arg, terr_t *err)
{
	struct row_write *w = arg;
	repl_txn_state_t *t = repl_session_txn(w->s);
	storage_coll_t *c = NULL;
	const bson_t *key = row_key(w->s);
	bson_t doc, old;
	bson_iter_t it;
	recid_t recid = 0;
	int64_t now = repl_now_ms();
	uint8_t rowbuf[ROW_MAX];
	int rc, ret = 0;

	if (w->coll != NULL) {
		c = w->coll;
		storage_coll_ref(c);
	} else if (storage_coll_get(w->st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "config.transactions does not exist");
	{
		uint64_t ts = w->ts != 0 ? w->ts : ((uint64_t)(uint32_t)(now / 1000) << 32 | (uint32_t)(now % 1000 + 1));
		int64_t term = w->ts != 0 ? w->term : 1;
		size_t n = row_build(rowbuf, key, w->txn_number, ts, term, now, w->state);
		bson_t optime;
		if (n == 0 || !bson_init_static(&doc, rowbuf, n)) {
			/* a long lsid: libbson */
			bson_init(&doc);
			bson_concat(&doc, key);
			BSON_APPEND_INT64(&doc, "txnNum", w->txn_number);
			bson_append_document_begin(&doc, "lastWriteOpTime", -1, &optime);
			bson_append_timestamp(&optime, "ts", 2, (uint32_t)(ts >> 32), (uint32_t)ts);
			BSON_APPEND_INT64(&optime, "t", term);
			bson_append_document_end(&doc, &optime);
			bson_append_date_time(&doc, "lastWriteDate", -1, now);
			if (w->state != NULL)
				BSON_APPEND_UTF8(&doc, "state", w->state);
		}
	}
	rc = 1;
	if (t->row_recid > 0 && memcmp(t->row_uuid, c->uuid, 16) == 0 &&
	    bson_init_static(&old, t->row_last, t->row_last_len)) {
		recid = (recid_t)t->row_recid;
		if ((rc = storage_doc_update_existing(ss, c, recid, &old, &doc, err)) < 0)
			ret = -1;
		else if (rc == 0)
			goto done;
	}
	if (ret == 0) {
		bson_iter_init(&it, key);
		bson_iter_next(&it);
		if ((rc = storage_doc_find_id(ss, c, bson_iter_value(&it), &recid, &old, err)) < 0)
			ret = -1;
	}
	if (ret == 0 && rc == 0)
		ret = storage_doc_update(ss, c, recid, &old, &doc, err);
	else if (ret == 0)
		ret = storage_doc_insert(ss, c, &doc, &recid, err);
done:
	row_remember(t, c, ret == 0 ? recid : 0, &doc);
	storage_coll_release(c);
	bson_destroy(&doc);
	return ret;
}

int
repl_retryable_record(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                      const bson_t *reply, bool sync, uint64_t ts, int64_t term, const char *state,
                      terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	struct row_write w = {st, s, t->txn_number, ts, term, state, NULL};
	storage_coll_t *c = NULL;
	bool was;
	int rc;

	if (storage_coll_get(st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0) {
		terr_t e = TERR_INIT;
		if (storage_coll_create(st, ss, TXN_TABLE_DB, TXN_TABLE, NULL, &e) != 0 &&
		    e.code != TERR_NAMESPACE_EXISTS) {
			terr_move(err, &e);
			return -1;
		}
		terr_clear(&e);
	} else {
		storage_coll_release(c);
	}
	atomic_fetch_add(&stats->transactions_collection_writes, 1);
	/* bookkeeping, not a replicated write (mongod derives it from the oplog) */
	was = storage_session_set_unobserved(ss, true);
	rc = storage_txn_run(ss, row_write_txn, &w, sync, err);
	storage_session_set_unobserved(ss, was);
	return rc;
}

#define IMAGE_TABLE "image_collection"

/* Create config.<name> when missing (its own catalog transaction). */
static int
ensure_table(storage_t *st, storage_session_t *ss, const char *name, terr_t *err)
{
	storage_coll_t *c = NULL;
	terr_t e = TERR_INIT;

	if (storage_coll_get(st, TXN_TABLE_DB, name, &c, NULL) == 0) {
		storage_coll_release(c);
		return 0;
	}
	if (storage_coll_create(st, ss, TXN_TABLE_DB, name, NULL, &e) != 0 && e.code != TERR_NAMESPACE_EXISTS) {
		terr_move(err, &e);
		return -1;
	}
	terr_clear(&e);
	return 0;
}

/* Insert doc, or replace the document with its _id, in config.<name>. */
static int
upsert_by_id(storage_t *st, storage_session_t *ss, const char *name, const bson_t *doc, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_iter_t it;
	bson_t old;
	recid_t recid;
	int rc, ret;

	if (storage_coll_get(st, TXN_TABLE_DB, name, &c, NULL) != 0)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "config.%s does not exist", name);
	bson_iter_init_find(&it, doc, "_id");
	rc = storage_doc_find_id(ss, c, bson_iter_value(&it), &recid, &old, err);
	if (rc < 0)
		ret = -1;
	else if (rc == 0)
		ret = storage_doc_update(ss, c, recid, &old, doc, err);
	else
		ret = storage_doc_insert(ss, c, doc, NULL, err);
	storage_coll_release(c);
	return ret;
}

int
repl_retryable_image_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, uint64_t ts,
                            const char *kind, const bson_t *image, terr_t *err)
{
	bson_t doc = BSON_INITIALIZER;
	bool was;
	int rc;

	RET(ensure_table(st, ss, IMAGE_TABLE, err));
	append_lsid(&doc, "_id", s);
	BSON_APPEND_INT64(&doc, "txnNum", repl_session_txn(s)->txn_number);
	bson_append_timestamp(&doc, "ts", 2, (uint32_t)(ts >> 32), (uint32_t)ts);
	BSON_APPEND_UTF8(&doc, "imageKind", kind);
	BSON_APPEND_DOCUMENT(&doc, "image", image);
	BSON_APPEND_BOOL(&doc, "invalidated", false);
	/* unreplicated, as mongod's */
	was = storage_session_set_unobserved(ss, true);
	rc = upsert_by_id(st, ss, IMAGE_TABLE, &doc, err);
	storage_session_set_unobserved(ss, was);
	bson_destroy(&doc);
	return rc;
}

/* Tamga's own table of replies kept whole (see retryable.h): one document
 * per session, {_id: lsid, txnNum, cmd, reply}. */
#define REPLY_TABLE REPL_RETRYABLE_REPLY_TABLE

/* The o of the no-op entry that carries a kept reply to the followers, and
 * the o2 field holding the row. */
#define REPLY_NOTE_MSG "tamga retryable write reply"
#define REPLY_NOTE_FIELD "tamgaRetryReply"

/*
 * A kept reply's row past REPLY_SPLIT_BYTES (a bulkWrite's results past 16 MB
 * cannot be one row, nor one oplog entry) is kept in chunks: the results of
 * its cursor.firstBatch go REPLY_CHUNK_BYTES at a time into rows {_id: {<the
 * lsid's fields>, chunk: i}, txnNum, cmd, reply: {firstBatch: [...]}} (i from
 * 1), each with its own no-op note, and the session's own row {_id: lsid,
 * txnNum, cmd, reply: <the reply with the first chunk's results>, chunks: n}
 * last, so a member holding that row holds the chunks before it.  A reader
 * puts the results back together (reply_chunks_read); a chunk missing or of
 * another txnNum leaves the reply lost (217 as for a reply never written).
 * Rows of an older txnNumber's chunks past the newer one's n are left, their
 * txnNum tells them apart.
 */
#define REPLY_SPLIT_BYTES (8 * 1024 * 1024)
#define REPLY_CHUNK_BYTES (4 * 1024 * 1024)

/* key gets {_id: lsid} (chunk < 0: the session's own row) or {_id: {<the
 * lsid's fields>, chunk}}. */
static void
row_id(repl_session_t *s, int32_t chunk, bson_t *key)
{
	bson_t tmp = BSON_INITIALIZER, id;
	bson_iter_t it, f;

	if (chunk < 0) {
		append_lsid(key, "_id", s);
		return;
	}
	append_lsid(&tmp, "_id", s);
	bson_append_document_begin(key, "_id", 3, &id);
	if (bson_iter_init_find(&it, &tmp, "_id") && bson_iter_recurse(&it, &f))
		while (bson_iter_next(&f))
			bson_append_iter(&id, bson_iter_key(&f), -1, &f);
	BSON_APPEND_INT32(&id, "chunk", chunk);
	bson_append_document_end(key, &id);
	bson_destroy(&tmp);
}

/* One row of config.tamga_retry_replies written (unobserved) and, when op
 * logs, carried to the followers by its no-op note, inside ss's open
 * transaction. */
static int
reply_row_put(storage_t *st, repl_oplog_t *op, storage_session_t *ss, const bson_t *doc, terr_t *err)
{
	bool was;
	int rc;

	/* this member's copy, written unobserved as config.transactions' row
	 * (the followers derive theirs from the no-op below) */
	was = storage_session_set_unobserved(ss, true);
	rc = upsert_by_id(st, ss, REPLY_TABLE, doc, err);
	storage_session_set_unobserved(ss, was);
	if (rc == 0 && op != NULL && repl_oplog_exists(op)) {
		/* the followers' copy: a no-op entry in the same transaction, so
		 * it commits and enters the set's log with the write (a retry on
		 * a new primary after a failover answers this reply) */
		bson_t o = BSON_INITIALIZER, o2 = BSON_INITIALIZER;
		BSON_APPEND_UTF8(&o, "msg", REPLY_NOTE_MSG);
		BSON_APPEND_DOCUMENT(&o2, REPLY_NOTE_FIELD, doc);
		rc = repl_oplog_noop_note(op, ss, &o, &o2, NULL, err);
		bson_destroy(&o);
		bson_destroy(&o2);
	}
	return rc;
}

/* reply with its cursor.firstBatch replaced by the array batch, into out
 * (initialised by the caller); the other fields as they are, in order. */
static void
reply_with_batch(const bson_t *reply, const bson_t *batch, bson_t *out)
{
	bson_iter_t it, ci;
	bson_t cur;

	bson_iter_init(&it, reply);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "cursor") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
		    !bson_iter_recurse(&it, &ci)) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
			continue;
		}
		bson_append_document_begin(out, "cursor", 6, &cur);
		while (bson_iter_next(&ci))
			if (strcmp(bson_iter_key(&ci), "firstBatch") == 0)
				BSON_APPEND_ARRAY(&cur, "firstBatch", batch);
			else
				bson_append_iter(&cur, bson_iter_key(&ci), -1, &ci);
		bson_append_document_end(out, &cur);
	}
}

/* The {_id, txnNum, cmd, reply[, chunks]} row of chunk (-1: the session's
 * own row) into doc (initialised by the caller). */
static void
reply_row_build(repl_session_t *s, int32_t chunk, const char *cmd, const bson_t *reply, int32_t nchunks, bson_t *doc)
{
	row_id(s, chunk, doc);
	BSON_APPEND_INT64(doc, "txnNum", repl_session_txn(s)->txn_number);
	BSON_APPEND_UTF8(doc, "cmd", cmd);
	BSON_APPEND_DOCUMENT(doc, "reply", reply);
	if (nchunks > 0)
		BSON_APPEND_INT32(doc, "chunks", nchunks);
}

/* The kept reply's cursor.firstBatch results past REPLY_SPLIT_BYTES, split
 * (REPLY_CHUNK_BYTES of results a row; one result alone may pass it): the
 * chunk rows 1..n written, then the session's row. */
static int
reply_put_chunks(repl_session_t *s, storage_t *st, repl_oplog_t *op, storage_session_t *ss, const char *cmd,
                 const bson_t *reply, const bson_value_t *results, terr_t *err)
{
	bson_t all, cur = BSON_INITIALIZER, first = BSON_INITIALIZER;
	bson_iter_t it;
	int32_t nchunks = 0, n = 0;
	int rc = 0;

	if (!bson_init_static(&all, results->value.v_doc.data, results->value.v_doc.data_len))
		return terr_set(err, TERR_INTERNAL_ERROR, "a kept reply's results are corrupt");
	bson_iter_init(&it, &all);
	for (bool more = bson_iter_next(&it); rc == 0; more = bson_iter_next(&it)) {
		const bson_value_t *v = more ? bson_iter_value(&it) : NULL;
		uint32_t vlen = v != NULL && v->value_type == BSON_TYPE_DOCUMENT ? v->value.v_doc.data_len : 16;
		/* the chunk is full (or the results end): chunk 0 is the session
		 * row's, the others are written now */
		if (!more || (n > 0 && (size_t)cur.len + vlen > REPLY_CHUNK_BYTES)) {
			if (nchunks == 0) {
				bson_concat(&first, &cur);
			} else {
				bson_t body = BSON_INITIALIZER, doc = BSON_INITIALIZER;
				BSON_APPEND_ARRAY(&body, "firstBatch", &cur);
				reply_row_build(s, nchunks, cmd, &body, 0, &doc);
				rc = reply_row_put(st, op, ss, &doc, err);
				bson_destroy(&doc);
				bson_destroy(&body);
			}
			nchunks++;
			bson_reinit(&cur);
			n = 0;
			if (!more)
				break;
		}
		{
			char key[16];
			const char *k;
			bson_uint32_to_string((uint32_t)n++, &k, key, sizeof(key));
			bson_append_iter(&cur, k, -1, &it);
		}
	}
	if (rc == 0) {
		bson_t head = BSON_INITIALIZER, doc = BSON_INITIALIZER;
		reply_with_batch(reply, &first, &head);
		reply_row_build(s, -1, cmd, &head, nchunks - 1, &doc);
		rc = reply_row_put(st, op, ss, &doc, err);
		bson_destroy(&doc);
		bson_destroy(&head);
	}
	bson_destroy(&cur);
	bson_destroy(&first);
	return rc;
}

int
repl_retryable_reply_in_txn(repl_session_t *s, storage_t *st, repl_oplog_t *op, storage_session_t *ss,
                            const char *cmd, const bson_t *reply, terr_t *err)
{
	bson_t doc = BSON_INITIALIZER;
	bson_iter_t it, ci;
	int rc;

	RET(ensure_table(st, ss, REPLY_TABLE, err));
	if (reply->len > REPLY_SPLIT_BYTES && bson_iter_init_find(&it, reply, "cursor") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &ci) && bson_iter_find(&ci, "firstBatch") && BSON_ITER_HOLDS_ARRAY(&ci))
		return reply_put_chunks(s, st, op, ss, cmd, reply, bson_iter_value(&ci), err);
	reply_row_build(s, -1, cmd, reply, 0, &doc);
	rc = reply_row_put(st, op, ss, &doc, err);
	bson_destroy(&doc);
	return rc;
}

bool
repl_retryable_reply_of_entry(const bson_t *entry, bson_t *row)
{
	bson_iter_t it, f;
	const uint8_t *d;
	uint32_t len;

	if (!bson_iter_init_find(&it, entry, "op") || !BSON_ITER_HOLDS_UTF8(&it) ||
	    strcmp(bson_iter_utf8(&it, NULL), "n") != 0)
		return false;
	if (!bson_iter_init_find(&it, entry, "o") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &f) ||
	    !bson_iter_find(&f, "msg") || !BSON_ITER_HOLDS_UTF8(&f) ||
	    strcmp(bson_iter_utf8(&f, NULL), REPLY_NOTE_MSG) != 0)
		return false;
	if (!bson_iter_init_find(&it, entry, "o2") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &f) ||
	    !bson_iter_find(&f, REPLY_NOTE_FIELD) || !BSON_ITER_HOLDS_DOCUMENT(&f))
		return false;
	bson_iter_document(&f, &len, &d);
	if (!bson_init_static(row, d, len))
		return false;
	/* the row's shape: {_id: lsid document, txnNum, cmd, reply} */
	return bson_iter_init_find(&f, row, "_id") && BSON_ITER_HOLDS_DOCUMENT(&f) &&
	       bson_iter_init_find(&f, row, "txnNum") && BSON_ITER_HOLDS_INT64(&f) &&
	       bson_iter_init_find(&f, row, "cmd") && BSON_ITER_HOLDS_UTF8(&f) &&
	       bson_iter_init_find(&f, row, "reply") && BSON_ITER_HOLDS_DOCUMENT(&f);
}

int
repl_retryable_reply_table(storage_t *st, storage_session_t *ss, terr_t *err)
{
	return ensure_table(st, ss, REPLY_TABLE, err);
}

int
repl_retryable_reply_apply(storage_t *st, storage_session_t *ss, const bson_t *row, terr_t *err)
{
	bool was = storage_session_set_unobserved(ss, true);
	int rc = upsert_by_id(st, ss, REPLY_TABLE, row, err);

	storage_session_set_unobserved(ss, was);
	return rc;
}

struct reply_write {
	repl_session_t *s;
	storage_t *st;
	repl_oplog_t *op;
	const char *cmd;
	const bson_t *reply;
};

static int
reply_write_txn(storage_session_t *ss, void *arg, terr_t *err)
{
	struct reply_write *w = arg;

	return repl_retryable_reply_in_txn(w->s, w->st, w->op, ss, w->cmd, w->reply, err);
}

int
repl_retryable_reply_write(repl_session_t *s, storage_t *st, repl_oplog_t *op, storage_session_t *ss,
                           const char *cmd, const bson_t *reply, terr_t *err)
{
	struct reply_write w = {s, st, op, cmd, reply};

	RET(ensure_table(st, ss, REPLY_TABLE, err));
	return storage_txn_run(ss, reply_write_txn, &w, true, err);
}

/* This session's row of the config table `table` when its txnNum is the
 * session's current txnNumber: 1 with a copy in *row (the caller destroys
 * it), 0 when there is none (or another txnNumber's), -1 on a storage error. */
static int
session_row_read_chunk(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *table, int32_t chunk,
                       bson_t *row, terr_t *err);

static int
session_row_read(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *table, bson_t *row,
                 terr_t *err)
{
	return session_row_read_chunk(s, st, ss, table, -1, row, err);
}

/* session_row_read of the row row_id names (chunk < 0: the session's own). */
static int
session_row_read_chunk(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *table, int32_t chunk,
                       bson_t *row, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_t key = BSON_INITIALIZER, doc;
	bson_iter_t it, f;
	recid_t recid;
	int rc, ret = 0;

	if (storage_coll_get(st, TXN_TABLE_DB, table, &c, NULL) != 0)
		return 0;
	row_id(s, chunk, &key);
	bson_iter_init_find(&it, &key, "_id");
	if ((rc = storage_txn_begin(ss, err)) == 0) {
		rc = storage_doc_find_id(ss, c, bson_iter_value(&it), &recid, &doc, err);
		if (rc < 0) {
			ret = -1;
		} else if (rc == 0 && bson_iter_init_find(&f, &doc, "txnNum") &&
		           bson_iter_as_int64(&f) == repl_session_txn(s)->txn_number) {
			bson_copy_to(&doc, row);
			ret = 1;
		}
		storage_txn_rollback(ss);
	} else {
		ret = -1;
	}
	bson_destroy(&key);
	storage_coll_release(c);
	return ret;
}

/* The embedded document `field` of row as a view into row: true when it is one. */
static bool
row_subdoc(const bson_t *row, const char *field, bson_t *view)
{
	bson_iter_t f;
	const uint8_t *d;
	uint32_t len;

	if (!bson_iter_init_find(&f, row, field) || !BSON_ITER_HOLDS_DOCUMENT(&f))
		return false;
	bson_iter_document(&f, &len, &d);
	return bson_init_static(view, d, len);
}

/* A kept reply written in chunks (reply_put_chunks) put back together: head
 * (the session row's reply, its cursor.firstBatch the first chunk's
 * results) and chunk rows 1..nchunks into whole (initialised by the
 * caller): 1; 0 when a chunk is missing or another txnNumber's (the reply
 * is lost); -1 on a storage error. */
static int
reply_chunks_read(repl_session_t *s, storage_t *st, storage_session_t *ss, const bson_t *head, int32_t nchunks,
                  bson_t *whole, terr_t *err)
{
	bson_t all = BSON_INITIALIZER;
	bson_iter_t it, ci;
	uint32_t n = 0;
	int ret = 1;

	for (int32_t i = 0; ret == 1 && i <= nchunks; i++) {
		bson_t row, body;
		const bson_t *from = head;
		if (i > 0) {
			if ((ret = session_row_read_chunk(s, st, ss, REPLY_TABLE, i, &row, err)) != 1)
				break;
			if (!row_subdoc(&row, "reply", &body)) {
				bson_destroy(&row);
				ret = 0;
				break;
			}
			from = &body;
		}
		/* the head's results are under cursor, a chunk's at its top */
		if (i == 0 ? (bson_iter_init_find(&it, from, "cursor") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
		              bson_iter_recurse(&it, &ci) && bson_iter_find(&ci, "firstBatch")) :
		             bson_iter_init_find(&ci, from, "firstBatch")) {
			bson_iter_t e;
			if (BSON_ITER_HOLDS_ARRAY(&ci) && bson_iter_recurse(&ci, &e)) {
				while (bson_iter_next(&e)) {
					char key[16];
					const char *k;
					bson_uint32_to_string(n++, &k, key, sizeof(key));
					bson_append_iter(&all, k, -1, &e);
				}
			} else {
				ret = 0;
			}
		} else {
			ret = 0;
		}
		if (i > 0)
			bson_destroy(&row);
	}
	if (ret == 1)
		reply_with_batch(head, &all, whole);
	bson_destroy(&all);
	return ret;
}

int
repl_retryable_load_kept_reply(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                               terr_t *err)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;
	bson_t row, view;
	bson_iter_t f;
	int ret;

	if (r == NULL || !r->lost || r->has_reply)
		return 0;
	if ((ret = session_row_read(s, st, ss, REPLY_TABLE, &row, err)) <= 0)
		return ret;
	ret = 0;
	if (bson_iter_init_find(&f, &row, "cmd") && BSON_ITER_HOLDS_UTF8(&f) &&
	    same_command(bson_iter_utf8(&f, NULL), cmd) && row_subdoc(&row, "reply", &view)) {
		bson_t whole = BSON_INITIALIZER;
		int32_t nchunks = bson_iter_init_find(&f, &row, "chunks") && BSON_ITER_HOLDS_INT32(&f) ?
		    bson_iter_int32(&f) : 0;
		ret = nchunks > 0 ? reply_chunks_read(s, st, ss, &view, nchunks, &whole, err) : 1;
		if (ret == 1) {
			bson_strncpy(r->cmd, cmd, sizeof(r->cmd));
			bson_reinit(&r->reply);
			bson_concat(&r->reply, nchunks > 0 ? &whole : &view);
			r->has_reply = true;
		}
		bson_destroy(&whole);
	}
	bson_destroy(&row);
	return ret;
}

/* The image config.image_collection keeps for s's txnNumber at ts, copied
 * into *image: 1, or 0 when there is none (or another write's). */
static int
image_read(repl_session_t *s, storage_t *st, storage_session_t *ss, uint64_t ts, bson_t *image, terr_t *err)
{
	bson_t row, view;
	bson_iter_t f;
	uint32_t t, i;
	int ret;

	if ((ret = session_row_read(s, st, ss, IMAGE_TABLE, &row, err)) <= 0)
		return ret;
	ret = 0;
	if (bson_iter_init_find(&f, &row, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&f)) {
		bson_iter_timestamp(&f, &t, &i);
		if (((uint64_t)t << 32 | i) == ts && row_subdoc(&row, "image", &view)) {
			bson_copy_to(&view, image);
			ret = 1;
		}
	}
	bson_destroy(&row);
	return ret;
}

int
repl_retryable_record_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                             const bson_t *reply, uint64_t ts, int64_t term, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	struct row_write w = {st, s, t->txn_number, ts, term, NULL, NULL};
	storage_coll_t *c = NULL;
	bool was;
	int rc;

	/* the table exists before the transaction writes to it (catalog
	 * changes are not transactional); the handle found is the one the row
	 * is written through */
	if (storage_coll_get(st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0) {
		terr_t e = TERR_INIT;
		c = NULL;
		if (storage_coll_create(st, ss, TXN_TABLE_DB, TXN_TABLE, NULL, &e) != 0 && e.code != TERR_NAMESPACE_EXISTS) {
			terr_move(err, &e);
			return -1;
		}
		terr_clear(&e);
	}
	w.coll = c;
	was = storage_session_set_unobserved(ss, true);
	rc = row_write_txn(ss, &w, err);
	storage_session_set_unobserved(ss, was);
	if (c != NULL)
		storage_coll_release(c);
	if (rc != 0)
		return -1;   /* the caller rolls back */
	atomic_fetch_add(&stats->transactions_collection_writes, 1);
	return 0;
}

int
repl_retryable_prepare(storage_t *st, storage_session_t *ss, terr_t *err)
{
	return ensure_table(st, ss, TXN_TABLE, err);
}

int
repl_retryable_row_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, repl_oplog_optime_t last,
                          terr_t *err)
{
	struct row_write w = {st, s, repl_session_txn(s)->txn_number, last.ts, last.t, NULL, NULL};
	bool was;
	int rc;

	was = storage_session_set_unobserved(ss, true);
	rc = row_write_txn(ss, &w, err);
	storage_session_set_unobserved(ss, was);
	if (rc == 0)
		atomic_fetch_add(&repl_txn_stats(repl_session_registry(s))->transactions_collection_writes, 1);
	return rc;
}

int
repl_retryable_commit_row_hook(void *arg, storage_session_t *ss, repl_oplog_optime_t last, terr_t *err)
{
	repl_session_t *s = arg;
	repl_txn_state_t *t = repl_session_txn(s);
	storage_t *st = repl_sessions_storage(repl_session_registry(s));
	struct row_write w = {st, s, t->txn_number, last.ts, last.t, "committed", NULL};
	bool was;
	int rc;

	storage_coll_t *c = NULL;

	/* catalog changes are not transactional: when the table does not
	 * exist yet, the commit command writes the row after the commit (in
	 * its own transaction, creating the table) */
	if (storage_coll_get(st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0)
		return 0;
	storage_coll_release(c);
	was = storage_session_set_unobserved(ss, true);
	rc = row_write_txn(ss, &w, err);
	storage_session_set_unobserved(ss, was);
	if (rc == 0) {
		t->row_at_commit = true;
		atomic_fetch_add(&repl_txn_stats(repl_session_registry(s))->transactions_collection_writes, 1);
	}
	return rc;
}

void
repl_retryable_forget(repl_session_t *s)
{
	repl_retry_record_t *r = repl_session_txn(s)->retry;

	/* only the reply the rolled-back attempt kept: the statements it
	 * executed were never noted (they are noted after commit) */
	if (r != NULL && r->has_reply) {
		r->has_reply = false;
		bson_reinit(&r->reply);
	}
}

static void
invalidate_one(repl_session_t *s, void *arg)
{
	repl_txn_state_t *t = repl_session_txn(s);

	(void)arg;
	if (t->phase != REPL_TXN_RETRYABLE && t->phase != REPL_TXN_COMMITTED)
		return;
	repl_retry_record_free(t->retry);
	t->retry = NULL;
	t->txn_number = -1;
	t->phase = REPL_TXN_NONE;
}

void
repl_retryable_invalidate(repl_sessions_t *ss)
{
	repl_sessions_visit_idle(ss, invalidate_one, NULL);
}

int
repl_retryable_load(repl_sessions_t *ss, storage_session_t *s, terr_t *err)
{
	storage_t *st = repl_sessions_storage(ss);
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	int rc, ret = 0;

	if (storage_coll_get(st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0)
		return 0;
	ERR(storage_scan_open(s, c, false, &cur, err));
	while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		bson_iter_t it;
		const uint8_t *id;
		repl_session_t *sess;
		int64_t num;

		if (!bson_iter_init_find(&it, &doc, "_id") || !repl_lsid_id(&it, &id) ||
		    !bson_iter_init_find(&it, &doc, "txnNum") || !BSON_ITER_HOLDS_INT64(&it))
			continue;
		num = bson_iter_int64(&it);
		if (repl_session_checkout(ss, id, 0, &sess, NULL) != 0)
			continue;
		{
			/* the row's uid: the user whose writes it records */
			bson_iter_t idd;
			bson_subtype_t st;
			uint32_t ulen;
			const uint8_t *uid;
			if (bson_iter_init_find(&it, &doc, "_id") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
			    bson_iter_recurse(&it, &idd) && bson_iter_find(&idd, "uid") && BSON_ITER_HOLDS_BINARY(&idd)) {
				bson_iter_binary(&idd, &st, &ulen, &uid);
				if (ulen == 32)
					repl_session_adopt_uid(sess, uid);
			}
		}
		{
			repl_txn_state_t *t = repl_session_txn(sess);
			bool committed = bson_iter_init_find(&it, &doc, "state") && BSON_ITER_HOLDS_UTF8(&it) &&
			    strcmp(bson_iter_utf8(&it, NULL), "committed") == 0;
			if (num > t->txn_number) {
				t->txn_number = num;
				repl_retry_record_free(t->retry);
				t->retry = NULL;
				/* a committed transaction answers a retried commit ok */
				t->phase = committed ? REPL_TXN_COMMITTED : REPL_TXN_RETRYABLE;
				if (!committed) {
					bson_iter_t ot;
					repl_retry_record_t *r = record_of(sess);
					r->lost = true;
					r->history_loaded = false;
					r->last_ts = entry_ts(&doc, "lastWriteOpTime", "ts");
					if (bson_iter_init_find(&it, &doc, "lastWriteOpTime") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
					    bson_iter_recurse(&it, &ot) && bson_iter_find(&ot, "t"))
						r->last_write = (repl_oplog_optime_t){r->last_ts, bson_iter_as_int64(&ot)};
				}
			}
		}
		repl_session_checkin(sess);
	}
	if (rc < 0)
		ret = -1;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_coll_release(c);
	return ret;
}
