/*
 * txn.c -- the transaction state machine of a session (see txn.h): mongod's
 * beginOrContinue, commit and abort on a storage session the transaction
 * owns, and the reaper that ends transactions past
 * transactionLifetimeLimitSeconds.
 */
#include "repl/txn.h"
#include "repl/retryable.h"
#include "repl/oplog.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opctx.h"
#include "common/mem.h"

static const char *
phase_word(repl_txn_phase_t p)
{
	return p == REPL_TXN_RETRYABLE ? "retryable write" : "transaction";
}

/* End an IN_PROGRESS transaction: roll back (commit is separate), give the
 * storage session back and count it. */
static void
txn_end_rollback(repl_session_t *s, storage_t *st)
{
	repl_txn_state_t *t = repl_session_txn(s);

	if (t->phase != REPL_TXN_IN_PROGRESS)
		return;
	if (t->ss != NULL) {
		storage_txn_rollback(t->ss);
		if (t->oplog_attached)
			repl_oplog_session_clear(t->ss);
		t->oplog_attached = false;
		storage_session_pool_put(st, t->ss);
		t->ss = NULL;
	}
	t->phase = REPL_TXN_ABORTED;
}

static repl_txn_stats_t *
txn_stats_of(repl_session_t *s)
{
	return repl_txn_stats(repl_session_registry(s));
}

void
repl_txn_abort_quietly(repl_session_t *s, storage_t *st)
{
	repl_txn_state_t *t = repl_session_txn(s);

	if (t->phase == REPL_TXN_IN_PROGRESS) {
		repl_txn_stats_t *stats = txn_stats_of(s);
		txn_end_rollback(s, st);
		atomic_fetch_add(&stats->total_aborted, 1);
		atomic_fetch_sub(&stats->current_open, 1);
	}
}

int
repl_txn_begin_or_continue(repl_session_t *s, storage_t *st, int64_t txn_number, bool autocommit,
                           bool start, const char *cmd, int64_t lifetime_s, repl_txn_kind_t *kind,
                           terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = txn_stats_of(s);
	char desc[160];

	if (txn_number < t->txn_number) {
		if (!autocommit)
			return terr_set(err, TERR_TRANSACTION_TOO_OLD,
			    "Retryable write with txnNumber %lld is prohibited on session %s because a newer %s "
			    "with txnNumber %lld has already started on this session.",
			    (long long)txn_number, repl_session_describe(s, desc), phase_word(t->phase),
			    (long long)t->txn_number);
		return terr_set(err, TERR_TRANSACTION_TOO_OLD,
		    "Cannot start transaction with { txnNumber: %lld, txnRetryCounter: 0 } on session %s because a "
		    "newer %s with txnNumberAndRetryCounter { txnNumber: %lld, txnRetryCounter: 0 } has already "
		    "started on this session.",
		    (long long)txn_number, repl_session_describe(s, desc), phase_word(t->phase),
		    (long long)t->txn_number);
	}
	if (!autocommit) {
		/* a retryable write */
		if (txn_number > t->txn_number) {
			repl_txn_abort_quietly(s, st);
			t->txn_number = txn_number;
			t->phase = REPL_TXN_RETRYABLE;
			repl_retry_record_free(t->retry);
			t->retry = NULL;
		} else if (t->phase != REPL_TXN_RETRYABLE) {
			return terr_set(err, TERR_INCOMPLETE_TRANSACTION_HISTORY,
			    "Cannot retry a retryable write that has been converted into a transaction");
		}
		*kind = REPL_TXN_KIND_RETRYABLE;
		return 0;
	}
	if (!start) {
		if (txn_number != t->txn_number || t->phase == REPL_TXN_RETRYABLE || t->phase == REPL_TXN_NONE)
			return terr_set(err, TERR_NO_SUCH_TRANSACTION,
			    "Given transaction number %lld does not match any in-progress transactions. The active "
			    "transaction number is %lld", (long long)txn_number, (long long)t->txn_number);
		if (t->phase == REPL_TXN_ABORTED)
			return terr_set(err, TERR_NO_SUCH_TRANSACTION,
			    "Transaction with { txnNumber: %lld } has been aborted.", (long long)txn_number);
		if (t->phase == REPL_TXN_COMMITTED && strcmp(cmd, "commitTransaction") != 0)
			return terr_set(err, TERR_TRANSACTION_COMMITTED,
			    "Transaction with { txnNumber: %lld } has been committed.", (long long)txn_number);
		*kind = REPL_TXN_KIND_MULTI;
		return 0;
	}
	if (txn_number == t->txn_number)
		return terr_set(err, TERR_CONFLICTING_OPERATION_IN_PROGRESS,
		    "Only servers in a sharded cluster can start a new transaction at the active transaction number");
	/* a newer transaction: whatever ran before on the session ends */
	repl_txn_abort_quietly(s, st);
	repl_retry_record_free(t->retry);
	t->retry = NULL;
	t->txn_number = txn_number;
	t->phase = REPL_TXN_ABORTED;   /* until the storage transaction exists */
	t->read_concern_set = false;
	t->nstatements = 0;
	if ((t->ss = storage_session_pool_get(st, err)) == NULL)
		return -1;
	if (storage_txn_begin(t->ss, err) != 0) {
		storage_session_pool_put(st, t->ss);
		t->ss = NULL;
		return -1;
	}
	t->phase = REPL_TXN_IN_PROGRESS;
	t->start_ms = repl_now_ms();
	t->expire_ms = t->start_ms + lifetime_s * 1000;
	atomic_fetch_add(&stats->total_started, 1);
	atomic_fetch_add(&stats->current_open, 1);
	*kind = REPL_TXN_KIND_MULTI;
	return 0;
}

storage_session_t *
repl_txn_storage(repl_session_t *s)
{
	repl_txn_state_t *t = repl_session_txn(s);

	return t->phase == REPL_TXN_IN_PROGRESS ? t->ss : NULL;
}

int
repl_txn_commit(repl_session_t *s, storage_t *st, bool sync, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);
	repl_txn_stats_t *stats = txn_stats_of(s);
	int rc;

	if (t->phase == REPL_TXN_COMMITTED)
		return 0;      /* a retried commit: the first outcome */
	if (t->phase != REPL_TXN_IN_PROGRESS)
		return terr_set(err, TERR_NO_SUCH_TRANSACTION,
		    "Transaction with { txnNumber: %lld } has been aborted.", (long long)t->txn_number);
	rc = storage_txn_commit(t->ss, sync, err);
	if (t->oplog_attached) {
		repl_oplog_optime_t ot = repl_oplog_session_last(t->ss);
		if (rc == 0) {
			t->last_ts = ot.ts;
			t->last_term = ot.t;
		}
		repl_oplog_session_clear(t->ss);
		t->oplog_attached = false;
	}
	storage_session_pool_put(st, t->ss);
	t->ss = NULL;
	atomic_fetch_sub(&stats->current_open, 1);
	if (rc != 0) {
		t->phase = REPL_TXN_ABORTED;
		atomic_fetch_add(&stats->total_aborted, 1);
		return -1;
	}
	t->phase = REPL_TXN_COMMITTED;
	atomic_fetch_add(&stats->total_committed, 1);
	return 0;
}

int
repl_txn_attach_oplog(repl_session_t *s, struct repl_oplog *op, const bson_t *lsid, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);

	if (op == NULL || !repl_oplog_exists(op) || t->phase != REPL_TXN_IN_PROGRESS || t->oplog_attached)
		return 0;
	RET(repl_oplog_session_set(op, t->ss, lsid, t->txn_number, REPL_OPLOG_OPTIME_NULL, err));
	if (repl_oplog_txn_collect(op, t->ss, err) != 0) {
		repl_oplog_session_clear(t->ss);
		return -1;
	}
	/* a commit that logs entries writes the session's row with them */
	t->row_at_commit = false;
	repl_oplog_session_set_commit_hook(t->ss, repl_retryable_commit_row_hook, s);
	t->oplog_attached = true;
	return 0;
}

void
repl_txn_last_optime(repl_session_t *s, uint64_t *ts, int64_t *term)
{
	repl_txn_state_t *t = repl_session_txn(s);

	*ts = t->last_ts;
	*term = t->last_term;
}

int
repl_txn_abort(repl_session_t *s, storage_t *st, terr_t *err)
{
	repl_txn_state_t *t = repl_session_txn(s);

	if (t->phase == REPL_TXN_COMMITTED)
		return terr_set(err, TERR_TRANSACTION_COMMITTED,
		    "Transaction with { txnNumber: %lld } has been committed.", (long long)t->txn_number);
	if (t->phase != REPL_TXN_IN_PROGRESS)
		return terr_set(err, TERR_NO_SUCH_TRANSACTION,
		    "Transaction with { txnNumber: %lld } has been aborted.", (long long)t->txn_number);
	repl_txn_abort_quietly(s, st);
	return 0;
}

/* ---- the reaper ----------------------------------------------------------- */

struct reap_pass {
	storage_t *st;
	int64_t now;
	int n;
};

static void
reap_one(repl_session_t *s, void *arg)
{
	struct reap_pass *p = arg;
	repl_txn_state_t *t = repl_session_txn(s);
	bson_t attr;

	if (t->phase != REPL_TXN_IN_PROGRESS || p->now < t->expire_ms)
		return;
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "txnNumber", t->txn_number);
	tlog('I', "TXN", 20707,
	    "Aborting transaction because it has been running for longer than 'transactionLifetimeLimitSeconds'",
	    &attr);
	bson_destroy(&attr);
	repl_txn_abort_quietly(s, p->st);
	p->n++;
}

int
repl_txn_reap(repl_sessions_t *ss, int64_t now_ms)
{
	struct reap_pass p = {repl_sessions_storage(ss), now_ms, 0};

	repl_sessions_visit_idle(ss, reap_one, &p);
	return p.n;
}

struct repl_txn_reaper {
	repl_sessions_t *ss;
	int64_t refresh_ms;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static void *
reaper_main(void *arg)
{
	repl_txn_reaper_t *r = arg;
	int64_t next_refresh = tm_now_us() / 1000 + r->refresh_ms;

	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->mu);
		repl_txn_reap(r->ss, repl_now_ms());
		if (r->refresh_ms > 0 && tm_now_us() / 1000 >= next_refresh) {
			storage_t *st = repl_sessions_storage(r->ss);
			terr_t e = TERR_INIT;
			storage_session_t *s = storage_session_pool_get(st, &e);
			if (s == NULL || repl_sessions_refresh(r->ss, s, &e) != 0)
				tlog('W', "CONTROL", 20714, e.msg ? e.msg : "Failed to refresh session cache", NULL);
			storage_session_pool_put(st, s);
			terr_clear(&e);
			next_refresh = tm_now_us() / 1000 + r->refresh_ms;
		}
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

repl_txn_reaper_t *
repl_txn_reaper_start(repl_sessions_t *ss, int64_t refresh_ms)
{
	repl_txn_reaper_t *r = tm_alloc0(sizeof(*r));

	r->ss = ss;
	r->refresh_ms = refresh_ms;
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	if (pthread_create(&r->th, NULL, reaper_main, r) != 0) {
		pthread_mutex_destroy(&r->mu);
		pthread_cond_destroy(&r->cv);
		bson_free(r);
		return NULL;
	}
	return r;
}

void
repl_txn_reaper_stop(repl_txn_reaper_t *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	bson_free(r);
}
