/*
 * member_recover.c -- a member of a set on Raft puts its data back on the
 * set's log (see member_recover.h): the rollback of a deposed primary's
 * entries and the initial sync to a restored snapshot, each tried again
 * while no leader answers, with the state the member shows meanwhile.
 */
#include "repl/member_recover.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/log.h"
#include "repl/initial_sync.h"
#include "repl/rollback.h"

static void
log_msg(char sev, int id, const char *msg, const char *detail)
{
	bson_t attr;

	bson_init(&attr);
	if (detail != NULL)
		BSON_APPEND_UTF8(&attr, "detail", detail);
	tlog(sev, "REPL", id, msg, &attr);
	bson_destroy(&attr);
}

/*
 * Before the set's entry `next`: when this member holds entries after
 * `common` (the set's previous entry) that the set's log does not, roll
 * them back (repl/rollback.h), refetching from the leader.  0 when nothing
 * was to undo or the rollback is done (*min_valid set), -1 with err when it
 * cannot be done; waits (ROLLBACK) while no leader answers.
 */
int
repl_recover_rollback(const repl_recover_host_t *h, storage_session_t *s, repl_ts_t common, repl_ts_t next,
                      int64_t next_t, repl_ts_t *min_valid, terr_t *err)
{
	repl_ts_t own = 0;
	char source[256];
	int r;

	if ((r = repl_rollback_needed_t(h->oplog, s, common, next, next_t, &own, err)) <= 0)
		return r;
	log_msg('I', 21606, "Starting rollback: this member holds oplog entries the set did not commit", NULL);
	h->busy(h->arg, REPL_STATE_ROLLBACK);
	{
		/* mongod's rollback id moves once per rollback (replSetGetRBID) */
		int32_t rbid;
		terr_t e2 = TERR_INIT;
		if (repl_rollback_id(h->st, s, true, &rbid, &e2) != 0)
			log_msg('W', 21607, "could not move the rollback id", e2.msg);
	}
	while (h->source(h->arg, source, sizeof(source))) {
		repl_rollback_args_t a = {.st = h->st, .oplog = h->oplog, .s = s, .common = common,
		    .source = source, .dbpath = h->dbpath};
		repl_rollback_stats_t st;
		if (source[0] == '\0') {
			h->nap(h->arg);
			continue;
		}
		if (repl_rollback_run(&a, &st, err) == 0) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_TIMESTAMP(&attr, "commonPoint", repl_ts_secs(common), repl_ts_inc(common));
			BSON_APPEND_INT64(&attr, "entriesRolledBack", st.entries);
			BSON_APPEND_INT64(&attr, "documentsRefetched", st.docs);
			BSON_APPEND_INT64(&attr, "documentsSaved", st.saved);
			BSON_APPEND_UTF8(&attr, "syncSource", source);
			tlog('I', "ROLLBACK", 21612, "Rollback summary", &attr);
			bson_destroy(&attr);
			*min_valid = st.min_valid;
			h->set_last(h->arg, common, true);
			if (h->min_valid != NULL && st.min_valid != 0)
				h->min_valid(h->arg, st.min_valid);
			h->busy(h->arg, 0);
			return 0;
		}
		if (err->code == 127 /* UnrecoverableRollbackError */) {
			/* a command among the entries: copy the data again, from
			 * the common point (repl/initial_sync.h) */
			log_msg('W', 21608, "rollback cannot undo these entries; this member copies the data again", err->msg);
			terr_clear(err);
			h->busy(h->arg, 0);
			return repl_recover_snapshot(h, s, common, -1, true, err);
		}
		if (err->code != TERR_HOST_UNREACHABLE)
			return -1;
		log_msg('W', 21607, "rollback: the sync source did not answer; trying again", err->msg);
		terr_clear(err);
		h->nap(h->arg);
	}
	return terr_set(err, 91 /* ShutdownInProgress */, "rollback interrupted by shutdown");
}

/*
 * A restored Raft snapshot (fsm_restore's marker): the set's log up to the
 * entry (ts, t).  Nothing to do when the local oplog holds that entry;
 * otherwise the member copies from the leader (STARTUP2, as mongod's
 * initial sync; repl/initial_sync.h), trying again while no leader
 * answers.  copy: a full copy whatever the local oplog holds (a rollback
 * that cannot undo its entries).  0, or -1 with err.
 */
#define ISYNC_ATTEMPTS 10

/* metrics.repl.initialSync (member_recover.h), process-wide */
static struct {
	_Atomic int64_t completed, failed_attempts, failures;
} isync_metrics;

/* An attempt that failed with code: counted unless the source did not
 * answer or the member is stopping; last: it was the last attempt. */
static void
isync_attempt_failed(int code, bool last)
{
	if (code == 91 || code == TERR_HOST_UNREACHABLE)
		return;
	atomic_fetch_add(&isync_metrics.failed_attempts, 1);
	if (last)
		atomic_fetch_add(&isync_metrics.failures, 1);
}

void
repl_recover_isync_metrics(repl_isync_metrics_t *out)
{
	out->completed = atomic_load(&isync_metrics.completed);
	out->failed_attempts = atomic_load(&isync_metrics.failed_attempts);
	out->failures = atomic_load(&isync_metrics.failures);
}

int
repl_recover_snapshot(const repl_recover_host_t *h, storage_session_t *s, repl_ts_t ts, int64_t t, bool copy,
                      terr_t *err)
{
	char source[256];
	bson_t e;
	int r, attempts = 0;

	if (ts == 0 && !copy)
		return 0;
	r = copy ? 1 : repl_oplog_find(h->oplog, s, ts, &e, err);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	if (r < 0)
		return -1;
	if (r == 0) {
		bson_iter_t it;
		bool same = t < 0 || (bson_iter_init_find(&it, &e, "t") && bson_iter_as_int64(&it) == t);
		bson_destroy(&e);
		if (same)
			return 0;
	} else if (!copy) {
		/* an oplog that begins after the point (truncated, or refilled by
		 * a copy from a later point): the data is past it already */
		repl_oplog_cursor_t *cur = NULL;
		bson_t first;
		repl_ts_t first_ts = 0;
		if (repl_oplog_scan_open(h->oplog, s, 0, &cur, err) != 0)
			return -1;
		if (repl_oplog_cursor_next(cur, &first, NULL) == 1) {
			bson_iter_t it;
			uint32_t secs, inc;
			if (bson_iter_init_find(&it, &first, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
				bson_iter_timestamp(&it, &secs, &inc);
				first_ts = REPL_TS(secs, inc);
			}
		}
		repl_oplog_cursor_close(cur);
		if (storage_txn_active(s))
			storage_txn_rollback(s);
		if (first_ts > ts)
			return 0;
	}
	log_msg('I', 21173, "Starting initial sync: this member does not hold the set's snapshot point", NULL);
	h->busy(h->arg, REPL_STATE_STARTUP2);
	while (h->source(h->arg, source, sizeof(source))) {
		repl_isync_args_t a = {.st = h->st, .oplog = h->oplog, .s = s, .source = source, .target = ts,
		    .copy = copy, .dbpath = h->dbpath, .stopping = h->stopping, .stopping_arg = h->arg};
		repl_isync_stats_t st;
		if (source[0] == '\0') {
			h->nap(h->arg);
			continue;
		}
		if (repl_initial_sync(&a, &st, err) == 0) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "method", st.copied ? "logical copy" : "oplog catch-up");
			BSON_APPEND_INT64(&attr, "collections", st.collections);
			BSON_APPEND_INT64(&attr, "documents", st.documents);
			BSON_APPEND_INT64(&attr, "oplogEntries", st.entries);
			BSON_APPEND_UTF8(&attr, "syncSource", source);
			tlog('I', "INITSYNC", 21192, "Initial sync done", &attr);
			bson_destroy(&attr);
			h->set_last(h->arg, st.reached, st.copied);
			h->busy(h->arg, 0);
			atomic_fetch_add(&isync_metrics.completed, 1);
			return 0;
		}
		/* mongod tries an initial sync 10 times (numInitialSyncAttempts);
		 * a source that does not answer does not count */
		isync_attempt_failed(err->code, attempts + 1 >= ISYNC_ATTEMPTS);
		if (err->code == 91 || (err->code != TERR_HOST_UNREACHABLE && ++attempts >= ISYNC_ATTEMPTS))
			return -1;
		log_msg('W', 21200, "initial sync attempt failed; trying again", err->msg);
		terr_clear(err);
		h->nap(h->arg);
	}
	return terr_set(err, 91 /* ShutdownInProgress */, "initial sync interrupted by shutdown");
}


repl_ts_t
repl_recover_oplog_floor(repl_oplog_t *op, storage_session_t *s)
{
	repl_oplog_cursor_t *cur = NULL;
	bson_t first;
	repl_ts_t ts = 0;

	if (repl_oplog_scan_open(op, s, 0, &cur, NULL) != 0)
		return 0;
	if (repl_oplog_cursor_next(cur, &first, NULL) == 1) {
		bson_iter_t it;
		uint32_t secs, inc;
		if (bson_iter_init_find(&it, &first, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
			bson_iter_timestamp(&it, &secs, &inc);
			ts = REPL_TS(secs, inc);
		}
	}
	repl_oplog_cursor_close(cur);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return ts;
}
