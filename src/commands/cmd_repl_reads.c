/*
 * cmd_repl_reads.c -- read concerns on the Raft commit point in a replica
 * set of several members (see cmd_repl_reads.h for the contract).
 *
 * The majority commit point is repl_member_committed_ts: the ts of the
 * newest entry that reached this member's Raft FSM, which Raft hands over
 * only once a majority holds it durably (on a secondary: the commit index
 * the leader told it).  A majority read reads at the smallest of that,
 * the applier's position in the set's log (repl_member_majority_read_ts:
 * a deposed primary's uncommitted entries, still in its data until its
 * rollback, are behind a commit point the new leader moved) and this
 * member's visibility point (what it applied, with no hole), through the
 * snapshot-read path of cmd_txn.c (a storage session at a read timestamp;
 * its getMores read there too).  The oplog keeps history back to that read
 * point (repl/oplog.h's oldest_pin, moved by the applier), so such a read
 * is never refused as too old.
 */
#include "commands/cmd_repl_reads.h"

#include <string.h>
#include <time.h>

#include "commands/cmd_repl.h"
#include "common/opctx.h"
#include "repl/oplog.h"
#include "repl/raft_member.h"
#include "repl/replset.h"

static bool
multi(engine_t *e)
{
	return e->member != NULL && e->rs != NULL && e->oplog != NULL && repl_set_multi_member(e->rs);
}

/* The timestamp a majority read reads at (0: no commit point yet). */
static uint64_t
majority_point(engine_t *e)
{
	repl_ts_t committed = repl_member_majority_read_ts(e->member);
	repl_ts_t vis = repl_oplog_visible(e->oplog);

	return committed < vis ? committed : vis;
}

uint64_t
cmd_repl_reads_majority_now(engine_t *e)
{
	return multi(e) ? majority_point(e) : 0;
}

bool
cmd_repl_reads_majority_optime(engine_t *e, uint32_t *secs, uint32_t *inc)
{
	uint64_t at;

	if (!multi(e))
		return false;
	at = majority_point(e);
	*secs = repl_ts_secs(at);
	*inc = repl_ts_inc(at);
	return true;
}

/* Wait (the oplog's insert notifier, 5 ms at most between looks) until
 * this member's applied point -- or its commit point, for majority --
 * reached target.  On the primary a no-op is written first when nothing
 * it logged is that recent (a cluster time gossiped past its last write):
 * mongod's makeNoopWriteIfNeeded, so the wait ends at once. */
static int
wait_after_loop(cmd_t *c, uint64_t target, bool majority, terr_t *err)
{
	engine_t *e = c->engine;
	bool nudged = false;

	for (;;) {
		storage_coll_t *oc = NULL;
		uint64_t seq = 0, have;
		int64_t until;
		if (storage_coll_get(e->st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &oc, NULL) == 0)
			seq = storage_coll_insert_seq(oc);
		have = majority ? majority_point(e) : repl_oplog_visible(e->oplog);
		if (have >= target) {
			storage_coll_release(oc);
			return 0;
		}
		if (!nudged && repl_set_state(e->rs) == REPL_STATE_PRIMARY && repl_oplog_visible(e->oplog) < target) {
			storage_session_t *s = storage_session_pool_get(e->st, NULL);
			bson_t o = BSON_INITIALIZER;
			terr_t ne = TERR_INIT;
			BSON_APPEND_INT32(&o, "noop write for afterClusterTime read concern", 1);
			if (s != NULL) {
				(void)repl_oplog_noop(e->oplog, s, &o, NULL, &ne);
				storage_session_pool_put(e->st, s);
			}
			terr_clear(&ne);
			bson_destroy(&o);
			nudged = true;
		}
		if (cmd_check_deadline(c, err)) {
			storage_coll_release(oc);
			return -1;
		}
		if (engine_shutdown_requested(e)) {
			storage_coll_release(oc);
			return terr_set(err, 11600 /* InterruptedAtShutdown */, "interrupted at shutdown");
		}
		until = tm_now_us() + 5 * 1000;
		if (c->deadline_us > 0 && c->deadline_us < until)
			until = c->deadline_us;
		if (oc != NULL) {
			storage_coll_wait_insert(oc, seq, until);
		} else {
			struct timespec nap = {0, 2 * 1000 * 1000};
			nanosleep(&nap, NULL);
		}
		storage_coll_release(oc);
	}
}

/* The wait above, counted as mongod's opTime waiters while it lasts
 * (serverStatus().metrics.repl.waiters.opTime). */
static int
wait_after(cmd_t *c, uint64_t target, bool majority, terr_t *err)
{
	int rc;

	cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, 1);
	rc = wait_after_loop(c, target, majority, err);
	cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, -1);
	return rc;
}

int
cmd_repl_reads_before(cmd_t *c, const concern_read_t *rc, bool *linearizable, terr_t *err)
{
	engine_t *e = c->engine;

	*linearizable = false;
	if (!multi(e) || !rc->present)
		return 0;
	if (rc->level == RC_LINEARIZABLE) {
		/* mongod's waitForReadConcernImpl, in its order */
		if (rc->has_after_op_time)
			return terr_set(err, TERR_FAILED_TO_PARSE, "afterOpTime not compatible with linearizable read concern");
		if (repl_set_state(e->rs) != REPL_STATE_PRIMARY)
			return terr_set(err, TERR_NOT_WRITABLE_PRIMARY,
			    "cannot satisfy linearizable read concern on non-primary node");
		*linearizable = true;
	}
	if (rc->has_after_cluster_time || rc->has_after_op_time)
		return wait_after(c, REPL_TS(rc->after_secs, rc->after_inc), rc->level == RC_MAJORITY, err);
	return 0;
}

/* The commands a majority read covers (mongod reads every command at the
 * committed snapshot; these are the ones that read collections' data). */
static const char *const majority_commands[] = {"find", "aggregate", "distinct", "count", NULL};

bool
cmd_repl_reads_majority_at(cmd_t *c, uint64_t *at, terr_t *err)
{
	engine_t *e = c->engine;
	bson_iter_t it, rc;
	bool majority = false, listed = false;

	*at = 0;
	if (!multi(e) || !cmd_find_field(c, "readConcern", &it) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &rc))
		return false;
	while (bson_iter_next(&rc))
		if (strcmp(bson_iter_key(&rc), "level") == 0 && BSON_ITER_HOLDS_UTF8(&rc))
			majority = strcmp(bson_iter_utf8(&rc, NULL), "majority") == 0;
	for (int i = 0; majority_commands[i] != NULL; i++)
		listed = listed || strcmp(c->name, majority_commands[i]) == 0;
	if (!majority || !listed)
		return false;
	/* an aggregate with $out / $merge reads there too; it writes on a
	 * session of its own (agg_host_t.write_session) */
	*at = majority_point(e);
	if (*at == 0)
		terr_set(err, 134 /* ReadConcernMajorityNotAvailableYet */,
		    "Read concern majority reads are currently not possible.");
	return true;
}

static int linearize_wait(cmd_t *c, repl_oplog_optime_t at, terr_t *err);

int
cmd_repl_reads_linearize(cmd_t *c, terr_t *err)
{
	engine_t *e = c->engine;
	storage_session_t *s;
	bson_t o = BSON_INITIALIZER;
	repl_oplog_optime_t at = {0, 0};
	int rc;

	if (!multi(e))
		return 0;
	if (repl_set_state(e->rs) != REPL_STATE_PRIMARY)
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "No longer primary when waiting for linearizable read concern");
	if ((s = storage_session_pool_get(e->st, err)) == NULL)
		return -1;
	BSON_APPEND_UTF8(&o, "msg", "linearizable read");
	rc = repl_oplog_noop(e->oplog, s, &o, &at, err);
	storage_session_pool_put(e->st, s);
	bson_destroy(&o);
	if (rc != 0) {
		if (err->code == TERR_NOT_WRITABLE_PRIMARY) {
			terr_clear(err);
			return terr_set(err, TERR_NOT_WRITABLE_PRIMARY,
			    "No longer primary when waiting for linearizable read concern");
		}
		return -1;
	}
	/* mongod's awaitReplication for the no-op: one of its replication
	 * waiters meanwhile */
	cmd_repl_waiter_add(CMD_REPL_WAITER_REPLICATION, 1);
	rc = linearize_wait(c, at, err);
	cmd_repl_waiter_add(CMD_REPL_WAITER_REPLICATION, -1);
	return rc;
}

static int
linearize_wait(cmd_t *c, repl_oplog_optime_t at, terr_t *err)
{
	engine_t *e = c->engine;

	for (;;) {
		int64_t step = tm_now_us() + 100 * 1000;
		int64_t until = c->deadline_us > 0 && c->deadline_us < step ? c->deadline_us : step;
		int r = repl_member_wait_committed(e->member, at.ts, at.t, until);
		if (r == 0)
			return 0;
		if (r == 2)
			return terr_set(err, 11602 /* InterruptedDueToReplStateChange */,
			    "operation was interrupted because a replication state change happened");
		/* mongod waits with no write-concern timeout of its own (147
		 * LinearizableReadConcernError would answer one): the operation's
		 * deadline ends the wait */
		if (c->deadline_us > 0 && tm_now_us() >= c->deadline_us)
			return terr_set(err, TERR_MAX_TIME_MS_EXPIRED, "operation exceeded time limit");
		if (engine_shutdown_requested(e))
			return terr_set(err, 11600 /* InterruptedAtShutdown */, "interrupted at shutdown");
	}
}
