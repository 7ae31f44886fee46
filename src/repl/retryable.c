/*
 * retryable.c -- retryable writes' record (see retryable.h): the reply kept
 * per session, the config.transactions rows.
 */
#include "repl/retryable.h"
#include "repl/txn.h"

#include <string.h>

#include "common/mem.h"

struct repl_retry_record {
	char cmd[32];
	bool lost;          /* ran before a restart: the reply is gone */
	bson_t reply;
};

#define TXN_TABLE_DB "config"
#define TXN_TABLE "transactions"

void
repl_retry_record_free(repl_retry_record_t *r)
{
	if (r == NULL)
		return;
	bson_destroy(&r->reply);
	bson_free(r);
}

/* findAndModify has two spellings; both are the same command's retries */
static bool
same_command(const char *a, const char *b)
{
	if (strcasecmp(a, "findAndModify") == 0 && strcasecmp(b, "findAndModify") == 0)
		return true;
	return strcmp(a, b) == 0;
}

int
repl_retryable_replay(repl_session_t *s, const char *cmd, bson_t *reply, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	char desc[160];

	if (t->retry == NULL)
		return 0;
	if (t->retry->lost)
		return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
		    "Incomplete history detected for transaction %lld on session %s",
		    (long long)t->txn_number, repl_session_describe(s, desc));
	if (!same_command(t->retry->cmd, cmd))
		return 0;
	bson_copy_to(&t->retry->reply, reply);
	atomic_fetch_add(&stats->retried_commands, 1);
	return 1;
}

static void
append_lsid(bson_t *doc, const char *key, repl_session_t *s)
{
	bson_t id;
	uint8_t uid[32];

	bson_append_document_begin(doc, key, -1, &id);
	bson_append_binary(&id, "id", 2, BSON_SUBTYPE_UUID, repl_session_id(s), 16);
	repl_session_uid(NULL, uid);
	bson_append_binary(&id, "uid", 3, BSON_SUBTYPE_BINARY, uid, 32);
	bson_append_document_end(doc, &id);
}

struct row_write {
	storage_t *st;
	repl_session_t *s;
	int64_t txn_number;
	uint64_t ts;
	int64_t term;
	const char *state;
};

static int
row_write_txn(storage_session_t *ss, void *arg, terr_t *err)
{
	struct row_write *w = arg;
	storage_coll_t *c = NULL;
	bson_t doc = BSON_INITIALIZER, old, lsid = BSON_INITIALIZER, optime;
	bson_iter_t it;
	bson_value_t idv;
	recid_t recid;
	int64_t now = repl_now_ms();
	int rc, ret = 0;

	if (storage_coll_get(w->st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0) {
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "config.transactions does not exist");
		goto err;
	}
	append_lsid(&lsid, "_id", w->s);
	bson_iter_init_find(&it, &lsid, "_id");
	bson_value_copy(bson_iter_value(&it), &idv);
	append_lsid(&doc, "_id", w->s);
	BSON_APPEND_INT64(&doc, "txnNum", w->txn_number);
	bson_append_document_begin(&doc, "lastWriteOpTime", -1, &optime);
	if (w->ts != 0)
		bson_append_timestamp(&optime, "ts", 2, (uint32_t)(w->ts >> 32), (uint32_t)w->ts);
	else
		bson_append_timestamp(&optime, "ts", 2, (uint32_t)(now / 1000), (uint32_t)(now % 1000) + 1);
	BSON_APPEND_INT64(&optime, "t", w->ts != 0 ? w->term : 1);
	bson_append_document_end(&doc, &optime);
	bson_append_date_time(&doc, "lastWriteDate", -1, now);
	if (w->state != NULL)
		BSON_APPEND_UTF8(&doc, "state", w->state);
	rc = storage_doc_find_id(ss, c, &idv, &recid, &old, err);
	if (rc < 0)
		ret = -1;
	else if (rc == 0)
		ret = storage_doc_update(ss, c, recid, &old, &doc, err);
	else
		ret = storage_doc_insert(ss, c, &doc, NULL, err);
	bson_value_destroy(&idv);
err:
	storage_coll_release(c);
	bson_destroy(&doc);
	bson_destroy(&lsid);
	return ret;
}

int
repl_retryable_record(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                      const bson_t *reply, bool sync, uint64_t ts, int64_t term, const char *state,
                      terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	struct row_write w = {st, s, t->txn_number, ts, term, state};
	storage_coll_t *c = NULL;
	bool was;
	int rc;

	if (reply != NULL) {
		repl_retry_record_free(t->retry);
		t->retry = tm_alloc0(sizeof(*t->retry));
		bson_strncpy(t->retry->cmd, cmd, sizeof(t->retry->cmd));
		bson_copy_to(reply, &t->retry->reply);
	}
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

int
repl_retryable_record_in_txn(repl_session_t *s, storage_t *st, storage_session_t *ss, const char *cmd,
                             const bson_t *reply, uint64_t ts, int64_t term, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = repl_txn_stats(repl_session_registry(s));
	struct row_write w = {st, s, t->txn_number, ts, term, NULL};
	storage_coll_t *c = NULL;
	bool was;
	int rc;

	/* the table exists before the transaction writes to it (catalog
	 * changes are not transactional) */
	if (storage_coll_get(st, TXN_TABLE_DB, TXN_TABLE, &c, NULL) != 0) {
		terr_t e = TERR_INIT;
		if (storage_coll_create(st, ss, TXN_TABLE_DB, TXN_TABLE, NULL, &e) != 0 && e.code != TERR_NAMESPACE_EXISTS) {
			terr_move(err, &e);
			return -1;
		}
		terr_clear(&e);
	} else {
		storage_coll_release(c);
	}
	was = storage_session_set_unobserved(ss, true);
	rc = row_write_txn(ss, &w, err);
	storage_session_set_unobserved(ss, was);
	if (rc != 0)
		return -1;   /* the caller rolls back */
	repl_retry_record_free(t->retry);
	t->retry = tm_alloc0(sizeof(*t->retry));
	bson_strncpy(t->retry->cmd, cmd, sizeof(t->retry->cmd));
	bson_copy_to(reply, &t->retry->reply);
	atomic_fetch_add(&stats->transactions_collection_writes, 1);
	return 0;
}

void
repl_retryable_forget(repl_session_t *s)
{
	repl_txn_state_t *t = repl_session_txn(s);

	repl_retry_record_free(t->retry);
	t->retry = NULL;
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
					t->retry = tm_alloc0(sizeof(*t->retry));
					t->retry->lost = true;
					bson_init(&t->retry->reply);
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
