/*
 * cmd_repl.c -- the replica-set commands of a single-member set
 * (replSetInitiate, replSetGetStatus, replSetGetConfig, replSetReconfig,
 * replSetStepDown, replSetFreeze, replSetMaintenance), the test command
 * configureFailPoint, and what replica-set mode adds around every command:
 * failCommand, the primary gate, $clusterTime gossip and signing,
 * operationTime, and read / write concern (commands/concern.h).
 *
 * The replica-set state itself (configuration, term, member state, clock)
 * is repl/replset.h; the signing keys repl/cluster_time.h.  Replies follow
 * mongod's shapes field for field.  A standalone (no --replSet) answers
 * these commands as mongod does without replication (76).
 */
#include "commands/cmd_repl.h"
#include "auth/auth.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/failpoint.h"
#include "common/log.h"
#include "commands/cmd_repl_member.h"
#include "commands/cmd_repl_heartbeat.h"
#include "commands/cmd_repl_reads.h"
#include "repl/election_log.h"
#include "repl/member_recover.h"
#include "repl/raft_member.h"
#include "repl/rollback.h"
#include "repl/cluster_time.h"
#include "repl/member_rejoin.h"
#include "repl/replset.h"

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- engine hooks -------------------------------------------------------------------- */

int
cmd_repl_open(engine_t *e, const char *dbpath, terr_t *err)
{
	bool on_raft = false;

	if (e->opts.repl_set_name == NULL)
		return 0;
	/* a folder whose Raft log holds the set's history: a one-member
	 * configuration (forced or removed down to one) waits for its Raft
	 * server (cmd_repl_member_on_self_host) instead of electing itself */
	if (dbpath != NULL && !e->opts.storage.in_memory) {
		char *dir = bson_strdup_printf("%s/raft", dbpath);
		on_raft = repl_rejoin_raft_dir_has_log(dir);
		bson_free(dir);
	}
	RET(repl_set_open_raft(e->st, e->opts.repl_set_name, on_raft, &e->rs, err));
	if (e->opts.auth && cluster_keys_open(e->st, &e->keys, err) != 0) {
		repl_set_close(e->rs);
		e->rs = NULL;
		return -1;
	}
	return 0;
}

void
cmd_repl_close(engine_t *e)
{
	cluster_keys_close(e->keys);
	e->keys = NULL;
	repl_set_close(e->rs);
	e->rs = NULL;
	failpoint_reset_all();
}

void
engine_set_self_host(engine_t *e, const char *host_port)
{
	if (e->rs != NULL) {
		repl_set_set_self(e->rs, host_port);
		bson_free(e->self_host);
		e->self_host = host_port ? bson_strdup(host_port) : NULL;
		/* a set of several members: start this member's Raft server */
		cmd_repl_member_on_self_host(e);
	}
}

void
cmd_repl_ctx_clear(cmd_repl_ctx_t *x)
{
	if (x->fail_wce != NULL)
		bson_destroy(x->fail_wce);
	if (x->fail_labels != NULL)
		bson_destroy(x->fail_labels);
	x->fail_wce = x->fail_labels = NULL;
}

/* ---- shared argument helpers ------------------------------------------------------------ */

static int
need_repl(cmd_t *c, terr_t *err)
{
	if (c->engine->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "not running with --replSet");
	return 0;
}

static int
need_initiated(cmd_t *c, terr_t *err)
{
	RET(need_repl(c, err));
	if (!repl_set_initiated(c->engine->rs))
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "no replset config has been received");
	return 0;
}

static const char *
state_str(repl_member_state_t s)
{
	return s == REPL_STATE_PRIMARY ? "PRIMARY" : s == REPL_STATE_SECONDARY ? "SECONDARY" :
	    s == REPL_STATE_RECOVERING ? "RECOVERING" : s == REPL_STATE_ROLLBACK ? "ROLLBACK" :
	    s == REPL_STATE_REMOVED ? "REMOVED" : "STARTUP";
}

/* ---- replSetInitiate ---------------------------------------------------------------------- */

CMD_HANDLER(cmd_repl_set_initiate)
{
	bson_t cfg, extra;
	bool have = false;
	int r;

	if (c->engine->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "This node was not started with replication enabled.");
	if (BSON_ITER_HOLDS_DOCUMENT(&c->first)) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_document(&c->first, &l, &d);
		have = bson_init_static(&cfg, d, l);
	}
	/* several members: replicated on Raft (cmd_repl_member.c); one member
	 * keeps the path below */
	if (have && cmd_repl_member_config_is_multi(&cfg))
		return cmd_repl_member_initiate(c, &cfg, err);
	bson_init(&extra);
	r = repl_set_initiate(c->engine->rs, have ? &cfg : NULL, &extra, err);
	if (r == 0) {
		bson_iter_t it;
		if (bson_iter_init(&it, &extra))
			while (bson_iter_next(&it))
				bson_append_iter(c->reply, bson_iter_key(&it), -1, &it);
	} else if (err->code == TERR_ALREADY_INITIALIZED) {
		/* mongod's error reply carries `info` beside the error */
		terr_set_extra_steal(err, bson_copy(&extra));
	}
	bson_destroy(&extra);
	/* the set exists: create local.oplog.rs and its "initiating set" no-op
	 * (repl/oplog.h); every change is logged from now on */
	if (r == 0 && c->engine->oplog != NULL)
		r = repl_oplog_create(c->engine->oplog, NULL, NULL, NULL, err);
	if (r == 0) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "setName", repl_set_name(c->engine->rs));
		tlog('I', "REPL", 21356, "replSetInitiate config object parses ok", &attr);
		bson_destroy(&attr);
	}
	return r;
}

/* ---- replSetGetStatus -------------------------------------------------------------------------- */

/*
 * serverStatus().repl as mongod 9.0's ReplicationInfoServerStatus builds
 * it: hello's replica-set fields (isWritablePrimary, not the legacy
 * ismaster), then `rbid` (the rollback id kept in local, left out when it
 * cannot be read, as mongod leaves out an uninitialized one), then
 * `userWriteBlockMode` (mongod's enum: 1 disabled -- Tamga has no
 * setUserWriteBlockMode, so user writes are never blocked).  Not built:
 * `primaryOnlyServices` (mongod's primary-only services, none of which Tamga
 * runs).  With {repl: N != 0} in an initiated set, `replicationProgress`
 * (each member's optimes from heartbeats, cmd_repl_heartbeat.c).
 */
void
cmd_repl_server_status_append(cmd_t *c, bson_t *out)
{
	storage_session_t *s;
	terr_t err = TERR_INIT;
	int32_t rbid;

	cmd_repl_fields_append(c->engine, out, false);
	/* {repl: N} with N a non-zero number: mongod's appendSecondaryInfoData
	 * right after hello's fields (cmd_repl_heartbeat.c) */
	{
		bson_iter_t it;
		if (bson_iter_init_find(&it, c->body, "repl") && BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) != 0)
			cmd_repl_hb_progress_append(c->engine, out);
	}
	if ((s = client_session(c->client, &err)) != NULL &&
	    repl_rollback_id(c->engine->st, s, false, &rbid, &err) == 0)
		BSON_APPEND_INT32(out, "rbid", rbid);
	terr_clear(&err);
	BSON_APPEND_INT32(out, "userWriteBlockMode", 1);
}

static _Atomic int64_t waiters[2];

void
cmd_repl_waiter_add(cmd_repl_waiter_t w, int delta)
{
	atomic_fetch_add(&waiters[w == CMD_REPL_WAITER_OPTIME], delta);
}

/*
 * serverStatus().metrics.repl: the counters of mongod's that Tamga counts
 * as mongod does, in mongod's (name) order -- apply.attemptsToBecomeSecondary
 * (entries into SECONDARY from STARTUP/STARTUP2/RECOVERING/ROLLBACK),
 * apply.batchSize (every entry of the applier's rounds), apply.batches {num,
 * totalMillis} and apply.ops (a secondary's applier: entries applied, rounds
 * that applied some; 0 on a member that only ever was primary or alone, as on
 * mongod), buffer.apply {count, sizeBytes} (the applier's queue now),
 * initialSync {completed, failedAttempts, failures} (repl/member_recover.h),
 * reconfig's automatic reconfigs (never: 0), stateTransition
 * {lastStateTransition, totalOperationsKilled, totalOperationsRunning}
 * (repl/replset.h), waiters {opTime, replication} (now waiting).  Left out
 * (no counterpart on Raft, or a value Tamga does not have; src/repl/README.md
 * lists each): buffer.apply's maxCount/maxSizeBytes (the queue has no bound),
 * buffer.write, executor, heartBeat, network, stateTransition's
 * totalOperationsKilledByIntentRegistry, syncSource, timestamps, waiters'
 * replCoordMutex fields, write.
 */
void
cmd_repl_metrics_append(engine_t *e, bson_t *out)
{
	repl_member_apply_metrics_t a;
	repl_state_metrics_t sm;
	bson_t apply, batches;

	repl_member_apply_metrics(&a);
	repl_set_state_metrics(&sm);
	BSON_APPEND_DOCUMENT_BEGIN(out, "apply", &apply);
	BSON_APPEND_INT64(&apply, "attemptsToBecomeSecondary", (int64_t)sm.attempts_to_become_secondary);
	BSON_APPEND_INT64(&apply, "batchSize", (int64_t)a.batch_size);
	BSON_APPEND_DOCUMENT_BEGIN(&apply, "batches", &batches);
	BSON_APPEND_INT64(&batches, "num", (int64_t)a.batches);
	BSON_APPEND_INT64(&batches, "totalMillis", (int64_t)a.batches_total_ms);
	bson_append_document_end(&apply, &batches);
	BSON_APPEND_INT64(&apply, "ops", (int64_t)a.ops);
	bson_append_document_end(out, &apply);
	{
		uint64_t count, bytes;
		bson_t d, ap;
		repl_member_apply_buffer(e->member, &count, &bytes);
		BSON_APPEND_DOCUMENT_BEGIN(out, "buffer", &d);
		BSON_APPEND_DOCUMENT_BEGIN(&d, "apply", &ap);
		BSON_APPEND_INT64(&ap, "count", (int64_t)count);
		BSON_APPEND_INT64(&ap, "sizeBytes", (int64_t)bytes);
		bson_append_document_end(&d, &ap);
		bson_append_document_end(out, &d);
	}
	{
		repl_isync_metrics_t is;
		bson_t d;
		repl_recover_isync_metrics(&is);
		BSON_APPEND_DOCUMENT_BEGIN(out, "initialSync", &d);
		BSON_APPEND_INT64(&d, "completed", is.completed);
		BSON_APPEND_INT64(&d, "failedAttempts", is.failed_attempts);
		BSON_APPEND_INT64(&d, "failures", is.failures);
		bson_append_document_end(out, &d);
	}
	/* mongod's automatic reconfig that drops a new member's `newlyAdded`
	 * flag: Tamga never sets the flag (a new member does not vote until
	 * Raft's promotion), so it never runs */
	{
		bson_t d;
		BSON_APPEND_DOCUMENT_BEGIN(out, "reconfig", &d);
		BSON_APPEND_INT64(&d, "numAutoReconfigsForRemovalOfNewlyAddedFields", 0);
		bson_append_document_end(out, &d);
	}
	{
		bson_t d;
		BSON_APPEND_DOCUMENT_BEGIN(out, "stateTransition", &d);
		BSON_APPEND_UTF8(&d, "lastStateTransition", sm.last_transition);
		BSON_APPEND_INT64(&d, "totalOperationsKilled", sm.operations_killed);
		BSON_APPEND_INT64(&d, "totalOperationsRunning", sm.operations_running);
		bson_append_document_end(out, &d);
	}
	{
		bson_t d;
		BSON_APPEND_DOCUMENT_BEGIN(out, "waiters", &d);
		BSON_APPEND_INT64(&d, "opTime", atomic_load(&waiters[1]));
		BSON_APPEND_INT64(&d, "replication", atomic_load(&waiters[0]));
		bson_append_document_end(out, &d);
	}
}

/* {replSetGetRBID: 1} -> {rbid: N}: the rollback id (repl/rollback.h). */
CMD_HANDLER(cmd_repl_set_get_rbid)
{
	storage_session_t *s;
	int32_t rbid;

	RET(need_initiated(c, err));
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	RET(repl_rollback_id(c->engine->st, s, false, &rbid, err));
	BSON_APPEND_INT32(c->reply, "rbid", rbid);
	return 0;
}

CMD_HANDLER(cmd_repl_set_get_status)
{
	repl_set_info_t in;
	bson_t op, arr, m;
	int64_t now = wall_ms(), dur_wall;
	repl_optime_t dur;

	RET(need_initiated(c, err));
	repl_set_info(c->engine->rs, &in);
	if (in.state == REPL_STATE_REMOVED) {
		/* mongod's answer on a member its configuration does not name:
		 * 93, with the member's own state beside the error */
		bson_t *extra = bson_new();
		BSON_APPEND_INT32(extra, "state", (int32_t)in.state);
		BSON_APPEND_UTF8(extra, "stateStr", state_str(in.state));
		repl_optime_append(extra, "optime", &in.last_applied);
		BSON_APPEND_DATE_TIME(extra, "optimeDate", (int64_t)in.last_applied.secs * 1000);
		BSON_APPEND_UTF8(extra, "lastHeartbeatMessage", "");
		BSON_APPEND_UTF8(extra, "syncSourceHost", "");
		BSON_APPEND_INT32(extra, "syncSourceId", -1);
		BSON_APPEND_UTF8(extra, "infoMessage", "");
		terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "Our replica set config is invalid or we are not a member of it");
		terr_set_extra_steal(err, extra);
		return -1;
	}
	if (cmd_repl_member_status(c->engine, c->reply))
		return 0;   /* a set of several members */
	BSON_APPEND_UTF8(c->reply, "set", repl_set_name(c->engine->rs));
	BSON_APPEND_DATE_TIME(c->reply, "date", now);
	BSON_APPEND_INT32(c->reply, "myState", (int32_t)in.state);
	BSON_APPEND_INT64(c->reply, "term", in.term);
	BSON_APPEND_UTF8(c->reply, "syncSourceHost", "");
	BSON_APPEND_INT32(c->reply, "syncSourceId", -1);
	BSON_APPEND_INT64(c->reply, "heartbeatIntervalMillis", 2000);
	BSON_APPEND_INT32(c->reply, "majorityVoteCount", 1);
	BSON_APPEND_INT32(c->reply, "writeMajorityCount", 1);
	BSON_APPEND_INT32(c->reply, "votingMembersCount", 1);
	BSON_APPEND_INT32(c->reply, "writableVotingMembersCount", 1);
	/* one member: everything applied is majority-committed; durable is
	 * what the journal holds (cmd_repl_heartbeat.h) */
	cmd_repl_hb_durable(c->engine, &in, &dur, &dur_wall);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "optimes", &op);
	repl_optime_append(&op, "lastCommittedOpTime", &in.last_applied);
	BSON_APPEND_DATE_TIME(&op, "lastCommittedWallTime", in.last_applied_wall_ms);
	repl_optime_append(&op, "readConcernMajorityOpTime", &in.last_applied);
	repl_optime_append(&op, "appliedOpTime", &in.last_applied);
	repl_optime_append(&op, "durableOpTime", &dur);
	repl_optime_append(&op, "writtenOpTime", &in.last_applied);
	BSON_APPEND_DATE_TIME(&op, "lastAppliedWallTime", in.last_applied_wall_ms);
	BSON_APPEND_DATE_TIME(&op, "lastDurableWallTime", dur_wall);
	BSON_APPEND_DATE_TIME(&op, "lastWrittenWallTime", in.last_applied_wall_ms);
	bson_append_document_end(c->reply, &op);
	BSON_APPEND_TIMESTAMP(c->reply, "lastStableRecoveryTimestamp", in.last_applied.secs, in.last_applied.inc);
	/* the election that made it primary (election_log.h) */
	if (in.state == REPL_STATE_PRIMARY)
		repl_election_candidate_append(c->reply, "electionCandidateMetrics", in.term);
	/* a vote this process answered while the set had more members */
	repl_election_participant_append(c->reply, "electionParticipantMetrics");
	BSON_APPEND_ARRAY_BEGIN(c->reply, "members", &arr);
	BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &m);
	BSON_APPEND_INT32(&m, "_id", in.self_id);
	BSON_APPEND_UTF8(&m, "name", in.self_host);
	BSON_APPEND_DOUBLE(&m, "health", 1.0);
	BSON_APPEND_INT32(&m, "state", (int32_t)in.state);
	BSON_APPEND_UTF8(&m, "stateStr", state_str(in.state));
	BSON_APPEND_INT64(&m, "uptime", (now - in.start_wall_ms) / 1000);
	repl_optime_append(&m, "optime", &in.last_applied);
	BSON_APPEND_DATE_TIME(&m, "optimeDate", (int64_t)in.last_applied.secs * 1000);
	repl_optime_append(&m, "optimeWritten", &in.last_applied);
	BSON_APPEND_DATE_TIME(&m, "optimeWrittenDate", (int64_t)in.last_applied.secs * 1000);
	BSON_APPEND_DATE_TIME(&m, "lastAppliedWallTime", in.last_applied_wall_ms);
	BSON_APPEND_DATE_TIME(&m, "lastDurableWallTime", dur_wall);
	BSON_APPEND_DATE_TIME(&m, "lastWrittenWallTime", in.last_applied_wall_ms);
	BSON_APPEND_UTF8(&m, "syncSourceHost", "");
	BSON_APPEND_INT32(&m, "syncSourceId", -1);
	BSON_APPEND_UTF8(&m, "infoMessage", "");
	if (in.state == REPL_STATE_PRIMARY) {
		BSON_APPEND_TIMESTAMP(&m, "electionTime", in.election_optime.secs, in.election_optime.inc);
		BSON_APPEND_DATE_TIME(&m, "electionDate", (int64_t)in.election_optime.secs * 1000);
	}
	BSON_APPEND_INT64(&m, "configVersion", in.config_version);
	BSON_APPEND_INT64(&m, "configTerm", in.config_term);
	BSON_APPEND_BOOL(&m, "self", true);
	BSON_APPEND_UTF8(&m, "lastHeartbeatMessage", "");
	bson_append_document_end(&arr, &m);
	bson_append_array_end(c->reply, &arr);
	return 0;
}

/* ---- replSetGetConfig ---------------------------------------------------------------------------- */

CMD_HANDLER(cmd_repl_set_get_config)
{
	static const char *const fields[] = {"commitmentStatus", "includeNewlyAdded", NULL};
	bson_t cfg;
	bool found, commitment = false;

	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_bool(c, "commitmentStatus", &commitment, &found, err));
	RET(need_initiated(c, err));
	repl_set_config_copy(c->engine->rs, &cfg);
	BSON_APPEND_DOCUMENT(c->reply, "config", &cfg);
	bson_destroy(&cfg);
	if (commitment)
		BSON_APPEND_BOOL(c->reply, "commitmentStatus", true);
	return 0;
}

/* ---- replSetReconfig --------------------------------------------------------------------------------- */

CMD_HANDLER(cmd_repl_set_reconfig)
{
	static const char *const fields[] = {"force", "maxTimeMS", NULL};
	bson_t cfg;
	bool force = false, found;
	const uint8_t *d;
	uint32_t l;

	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_bool(c, "force", &force, &found, err));
	RET(need_repl(c, err));
	if (!BSON_ITER_HOLDS_DOCUMENT(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'replSetReconfig' is the wrong type '%s', expected type 'object'",
		    BSON_ITER_HOLDS_UTF8(&c->first) ? "string" : "number");
	bson_iter_document(&c->first, &l, &d);
	if (!bson_init_static(&cfg, d, l))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON");
	/* a set of several members, or one a reconfig brought down to one
	 * whose Raft server runs: on Raft (cmd_repl_reconfig.c) */
	if (c->engine->member != NULL)
		return cmd_repl_member_reconfig(c, &cfg, force, err);
	/* a set initiated with one member (no Raft) that takes members: moved
	 * onto Raft, then as above (cmd_repl_reconfig.c, cmd_repl_member_grow) */
	if (!force && cmd_repl_member_config_is_multi(&cfg) && repl_set_initiated(c->engine->rs) &&
	    !repl_set_multi_member(c->engine->rs) && repl_set_state(c->engine->rs) == REPL_STATE_PRIMARY)
		return cmd_repl_member_grow(c, &cfg, err);
	return repl_set_reconfig(c->engine->rs, &cfg, force, err);
}

/* ---- replSetStepDown / replSetFreeze / replSetMaintenance ------------------------------------------------ */

static int
secs_arg(const bson_iter_t *it, const char *what, int64_t def, int64_t *out, terr_t *err)
{
	if (BSON_ITER_HOLDS_BOOL(it) || BSON_ITER_HOLDS_NULL(it)) {
		*out = def;
		return 0;
	}
	if (!BSON_ITER_HOLDS_NUMBER(it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s' is the wrong type, expected a number", what);
	*out = bson_iter_as_int64(it);
	if (BSON_ITER_HOLDS_DOUBLE(it)) {
		double v = bson_iter_double(it);
		if (!(v > -1e12 && v < 1e12))
			return terr_set(err, TERR_BAD_VALUE, "%s out of range", what);
	}
	return 0;
}

CMD_HANDLER(cmd_repl_set_step_down)
{
	static const char *const fields[] = {"secondaryCatchUpPeriodSecs", "force", NULL};
	int64_t secs = 60, catch_up = 10;
	bool force = false, found, catch_given = false;
	bson_iter_t it;

	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_bool(c, "force", &force, &found, err));
	RET(need_initiated(c, err));
	RET(secs_arg(&c->first, "replSetStepDown", 60, &secs, err));
	if (cmd_find_field(c, "secondaryCatchUpPeriodSecs", &it)) {
		RET(secs_arg(&it, "secondaryCatchUpPeriodSecs", 10, &catch_up, err));
		catch_given = true;
	}
	if (!catch_given && force)
		catch_up = 0;   /* mongod's default with force */
	if (!catch_given && catch_up > secs)
		catch_up = secs;
	if (secs <= 0)
		return terr_set(err, TERR_BAD_VALUE, "stepdown period must be a positive integer");
	if (catch_up < 0)
		return terr_set(err, TERR_BAD_VALUE, "secondaryCatchUpPeriodSecs must be a non-negative integer");
	if (catch_up > secs)
		return terr_set(err, TERR_BAD_VALUE, "stepdown period must be longer than secondaryCatchUpPeriodSecs");
	/* a set of several members: Raft's leadership transfer */
	if (repl_set_multi_member(c->engine->rs))
		return cmd_repl_member_step_down(c, secs, catch_up, force, err);
	return repl_set_step_down(c->engine->rs, secs, catch_up, force, c->deadline_us, err);
}

CMD_HANDLER(cmd_repl_set_freeze)
{
	int64_t secs;

	RET(need_initiated(c, err));
	RET(secs_arg(&c->first, "replSetFreeze", 0, &secs, err));
	if (secs < 0)
		return terr_set(err, TERR_BAD_VALUE, "replSetFreeze's argument must be a non-negative number of seconds");
	if (repl_set_multi_member(c->engine->rs))
		RET(cmd_repl_member_freeze(c, secs, err));
	else
		RET(repl_set_freeze(c->engine->rs, secs, err));
	/* mongod's reply fields */
	if (secs == 0)
		BSON_APPEND_UTF8(c->reply, "info", "unfreezing");
	else if (secs == 1)
		BSON_APPEND_UTF8(c->reply, "warning", "you really want to freeze for only 1 second?");
	return 0;
}

CMD_HANDLER(cmd_repl_set_maintenance)
{
	if (c->engine->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "can only set maintenance mode on replica set members");
	if (!BSON_ITER_HOLDS_BOOL(&c->first) && !BSON_ITER_HOLDS_NUMBER(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'replSetMaintenance' is the wrong type, expected type 'bool'");
	return repl_set_maintenance(c->engine->rs, bson_iter_as_bool(&c->first), err);
}

/* ---- configureFailPoint -------------------------------------------------------------------------------------- */

CMD_HANDLER(cmd_configure_fail_point)
{
	static const char *const fields[] = {"mode", "data", NULL};
	bson_iter_t mode;
	bson_t data;
	bool found;
	int64_t count;

	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'configureFailPoint' is the wrong type, expected type 'string'");
	RET(cmd_check_fields(c, fields, err));
	if (!cmd_find_field(c, "mode", &mode))
		return terr_set(err, TERR_BAD_VALUE, "When setting a failpoint, you must supply a 'mode'");
	RET(cmd_get_doc(c, "data", &data, &found, err));
	RET(failpoint_configure(bson_iter_utf8(&c->first, NULL), &mode, found ? &data : NULL, &count, err));
	BSON_APPEND_INT64(c->reply, "count", count);
	{
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "failPoint", bson_iter_utf8(&c->first, NULL));
		tlog('W', "CONTROL", 23829, "Set failpoint", &attr);
		bson_destroy(&attr);
	}
	return 0;
}

/* ---- hello ------------------------------------------------------------------------------------------------------- */

uint64_t
cmd_repl_topology_counter(engine_t *e)
{
	repl_set_info_t in;

	if (e->rs == NULL)
		return 0;
	repl_set_info(e->rs, &in);
	return in.topology_counter;
}

void
cmd_repl_topology_wait(engine_t *e, uint64_t counter, int64_t wait_ms)
{
	int64_t deadline = cmd_now_us() + wait_ms * 1000;

	repl_set_topology_wait(e->rs, counter, deadline, &e->shutdown);
}

void
cmd_repl_hello_append(cmd_t *c, bool legacy)
{
	cmd_repl_fields_append(c->engine, c->reply, legacy);
}

void
cmd_repl_fields_append(engine_t *e, bson_t *out, bool legacy)
{
	repl_set_info_t in;
	bson_t tv, hosts, lw;
	const char *name = repl_set_name(e->rs);

	repl_set_info(e->rs, &in);
	BSON_APPEND_DOCUMENT_BEGIN(out, "topologyVersion", &tv);
	BSON_APPEND_OID(&tv, "processId", repl_set_process_id());
	BSON_APPEND_INT64(&tv, "counter", (int64_t)in.topology_counter);
	bson_append_document_end(out, &tv);
	if (!repl_set_initiated(e->rs) || repl_set_state(e->rs) == REPL_STATE_REMOVED) {
		/* mongod before a configuration, or removed from it: a "ghost"
		 * member (mongod's markAsNoConfig) */
		BSON_APPEND_BOOL(out, legacy ? "ismaster" : "isWritablePrimary", false);
		BSON_APPEND_BOOL(out, "secondary", false);
		BSON_APPEND_UTF8(out, "info", "Does not have a valid replica set config");
		BSON_APPEND_BOOL(out, "isreplicaset", true);
		return;
	}
	{
		/* a set of several members: every host, and the leader as primary */
		bson_t mcfg;
		const char *prim = NULL;
		bool multi = cmd_repl_member_hello(e, out, &prim, &mcfg);
		if (!multi) {
			BSON_APPEND_ARRAY_BEGIN(out, "hosts", &hosts);
			BSON_APPEND_UTF8(&hosts, "0", in.self_host);
			bson_append_array_end(out, &hosts);
		}
		BSON_APPEND_UTF8(out, "setName", name);
		BSON_APPEND_INT32(out, "setVersion", (int32_t)in.config_version);
		BSON_APPEND_BOOL(out, legacy ? "ismaster" : "isWritablePrimary", in.state == REPL_STATE_PRIMARY);
		BSON_APPEND_BOOL(out, "secondary", in.state == REPL_STATE_SECONDARY);
		if (in.state == REPL_STATE_PRIMARY)
			BSON_APPEND_UTF8(out, "primary", in.self_host);
		else if (prim != NULL)
			BSON_APPEND_UTF8(out, "primary", prim);
		if (multi) {
			cmd_repl_member_hello_self(e, out);
			bson_destroy(&mcfg);
		}
	}
	BSON_APPEND_UTF8(out, "me", in.self_host);
	if (in.state == REPL_STATE_PRIMARY)
		BSON_APPEND_OID(out, "electionId", &in.election_id);
	BSON_APPEND_DOCUMENT_BEGIN(out, "lastWrite", &lw);
	repl_optime_append(&lw, "opTime", &in.last_applied);
	BSON_APPEND_DATE_TIME(&lw, "lastWriteDate", (int64_t)in.last_applied.secs * 1000);
	{
		/* a set of several members: the majority commit point */
		repl_optime_t maj = in.last_applied;
		if (cmd_repl_reads_majority_optime(e, &maj.secs, &maj.inc) && maj.secs == 0)
			maj.term = -1;
		repl_optime_append(&lw, "majorityOpTime", &maj);
		BSON_APPEND_DATE_TIME(&lw, "majorityWriteDate", (int64_t)maj.secs * 1000);
	}
	bson_append_document_end(out, &lw);
}

/* ---- failCommand ----------------------------------------------------------------------------------------------------- */

typedef struct fail_match {
	cmd_t *c;
	const cmd_def_t *def;
} fail_match_t;

/* mongod's shouldActivateFailCommandFailPoint: never configureFailPoint
 * itself; the command among failCommands; appName and namespace when given. */
static bool
fail_command_matches(const bson_t *data, void *arg)
{
	fail_match_t *m = arg;
	bson_iter_t it, a;
	bool listed = false;

	if (strcmp(m->def->name, "configureFailPoint") == 0)
		return false;
	if (bson_iter_init_find(&it, data, "failCommands") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &a)) {
		while (bson_iter_next(&a)) {
			const char *n;
			if (!BSON_ITER_HOLDS_UTF8(&a))
				continue;
			n = bson_iter_utf8(&a, NULL);
			if (strcmp(n, m->c->name) == 0 || strcmp(n, m->def->name) == 0 ||
			    (m->def->alias != NULL && strcmp(n, m->def->alias) == 0))
				listed = true;
		}
	}
	if (!listed)
		return false;
	if (bson_iter_init_find(&it, data, "appName") && BSON_ITER_HOLDS_UTF8(&it)) {
		const bson_t *meta = client_metadata(m->c->client);
		bson_iter_t mi;
		if (meta == NULL || !bson_iter_init(&mi, meta) || !bson_iter_find_descendant(&mi, "application.name", &a) ||
		    !BSON_ITER_HOLDS_UTF8(&a) || strcmp(bson_iter_utf8(&a, NULL), bson_iter_utf8(&it, NULL)) != 0)
			return false;
	}
	if (bson_iter_init_find(&it, data, "namespace") && BSON_ITER_HOLDS_UTF8(&it)) {
		char ns[512];
		if (!BSON_ITER_HOLDS_UTF8(&m->c->first))
			return false;
		cmd_ns(ns, sizeof(ns), m->c->db, bson_iter_utf8(&m->c->first, NULL));
		if (strcmp(ns, bson_iter_utf8(&it, NULL)) != 0)
			return false;
	}
	return true;
}

static bson_t *
copy_sub(const bson_t *data, const char *key, bool array)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;
	bson_t view;

	if (!bson_iter_init_find(&it, data, key) || (array ? !BSON_ITER_HOLDS_ARRAY(&it) : !BSON_ITER_HOLDS_DOCUMENT(&it)))
		return NULL;
	if (array)
		bson_iter_array(&it, &l, &d);
	else
		bson_iter_document(&it, &l, &d);
	if (!bson_init_static(&view, d, l))
		return NULL;
	return bson_copy(&view);
}

static int
fail_command(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, terr_t *err)
{
	fail_match_t m = {c, def};
	bson_t data;
	bson_iter_t it;
	int ret = 0;

	if (!failpoint_fire("failCommand", fail_command_matches, &m, &data))
		return 0;
	if (bson_iter_init_find(&it, &data, "closeConnection") && bson_iter_as_bool(&it)) {
		c->client->close_requested = true;
		terr_set(err, TERR_HOST_UNREACHABLE, "Failing command via 'failCommand' failpoint: closing the connection");
		ret = -1;
		goto out;
	}
	if (bson_iter_init_find(&it, &data, "blockConnection") && bson_iter_as_bool(&it)) {
		int64_t ms = bson_iter_init_find(&it, &data, "blockTimeMS") && BSON_ITER_HOLDS_NUMBER(&it) ?
		    bson_iter_as_int64(&it) : 0;
		int64_t until = cmd_now_us() + (ms > 0 && ms < 3600000 ? ms : 0) * 1000;
		while (cmd_now_us() < until && !engine_shutdown_requested(c->engine)) {
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	x->fail_labels = copy_sub(&data, "errorLabels", true);
	if (bson_iter_init_find(&it, &data, "errorCode") && BSON_ITER_HOLDS_NUMBER(&it)) {
		terr_set(err, (int)bson_iter_as_int64(&it), "Failing command via 'failCommand' failpoint");
		if (x->fail_labels != NULL) {
			bson_t *extra = bson_new();
			BSON_APPEND_ARRAY(extra, "errorLabels", x->fail_labels);
			terr_set_extra_steal(err, extra);
		}
		ret = -1;
		goto out;
	}
	x->fail_wce = copy_sub(&data, "writeConcernError", false);
out:
	bson_destroy(&data);
	return ret;
}

/* ---- the gate of a member that is not primary ----------------------------------------------------------------------------- */

/* Commands that read user data (mongod's secondaryAllowed kOptIn): they
 * need a primary unless the read preference allows a secondary. */
static const char *const read_commands[] = {
	"find", "aggregate", "count", "distinct", "listCollections", "listIndexes", "collStats", "dbStats",
	"dataSize", "explain", "mapReduce", NULL,
};

/* What supports readConcern snapshot outside a transaction. */
static const char *const snapshot_commands[] = {"find", "aggregate", "distinct", "getMore", "explain", NULL};

static bool
listed(const char *const *list, const char *name)
{
	for (; *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

/*
 * mongod's supportsReadConcern for the levels other than local and snapshot
 * (snapshot has its own list above), outside a transaction.  mongod's
 * Command default refuses every level but local (72 "read concern not
 * supported"); the commands that override it, one row each: the reads
 * that take every level, mapReduce (local and available only, 9.0's
 * MapReduceCommandBase), and getMore and explain, which Tamga leaves to
 * the command they continue or explain.  A command not listed refuses
 * available, majority and linearizable: listCollections, listIndexes,
 * dbHash (local and snapshot), collStats, the writes (local and snapshot,
 * snapshot inside a transaction only), and every other command.
 */
static const struct {
	const char *name;
	bool available, majority, linearizable;
} rc_support[] = {
	{"aggregate", true, true, true},
	{"count", true, true, true},
	{"distinct", true, true, true},
	{"explain", true, true, true},
	{"find", true, true, true},
	{"getMore", true, true, true},
	{"mapReduce", true, false, false},
	{"mapreduce", true, false, false},
};

bool
cmd_repl_rc_level_supported(const char *name, int level)
{
	if (level != RC_AVAILABLE && level != RC_MAJORITY && level != RC_LINEARIZABLE)
		return true;
	for (size_t i = 0; i < sizeof(rc_support) / sizeof(rc_support[0]); i++)
		if (strcmp(rc_support[i].name, name) == 0)
			return level == RC_AVAILABLE ? rc_support[i].available :
			    level == RC_MAJORITY ? rc_support[i].majority : rc_support[i].linearizable;
	return false;
}

/* Every read a secondary serves passes here: the mode is looked for by key
 * length first (bson_iter_find measures and compares every key). */
static bool
secondary_ok(cmd_t *c)
{
	bson_iter_t it, rp;

	if (!cmd_find_field(c, "$readPreference", &it) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &rp))
		return false;
	while (bson_iter_next(&rp))
		if (bson_iter_key_len(&rp) == 4 && memcmp(bson_iter_key(&rp), "mode", 4) == 0) {
			uint32_t len;
			const char *mode;
			if (!BSON_ITER_HOLDS_UTF8(&rp))
				return false;
			mode = bson_iter_utf8(&rp, &len);
			return !(len == 7 && memcmp(mode, "primary", 7) == 0);
		}
	return false;
}

/* The writing stage ("$out" or "$merge") an aggregate ends in, or NULL. */
static const char *
writing_stage(cmd_t *c, const cmd_def_t *def)
{
	bson_iter_t it, st, last, k;
	bool have = false;

	if (def == NULL || strcmp(def->name, "aggregate") != 0 || !cmd_find_field(c, "pipeline", &it) ||
	    !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &st))
		return NULL;
	while (bson_iter_next(&st)) {
		last = st;
		have = true;
	}
	if (!have || !BSON_ITER_HOLDS_DOCUMENT(&last) || !bson_iter_recurse(&last, &k) || !bson_iter_next(&k))
		return NULL;
	if (strcmp(bson_iter_key(&k), "$out") == 0)
		return "$out";
	return strcmp(bson_iter_key(&k), "$merge") == 0 ? "$merge" : NULL;
}

/* An aggregate ending in $out or $merge writes: a primary's job. */
static bool
writes_out(cmd_t *c, const cmd_def_t *def)
{
	return writing_stage(c, def) != NULL;
}

static int
gate(cmd_t *c, const cmd_def_t *def, terr_t *err)
{
	repl_member_state_t st = repl_set_state(c->engine->rs);

	if (st == REPL_STATE_PRIMARY || strcmp(c->db, "local") == 0)
		return 0;
	if ((def->flags & CMDF_WRITE) || writes_out(c, def))
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	if (listed(read_commands, def->name)) {
		if (!secondary_ok(c))
			return terr_set(err, TERR_NOT_PRIMARY_NO_SECONDARY_OK, "not primary and secondaryOk=false");
		if (st != REPL_STATE_SECONDARY)
			return terr_set(err, TERR_NOT_PRIMARY_OR_SECONDARY, "node is not in primary or recovering state");
	}
	return 0;
}

/* ---- $clusterTime gossip ----------------------------------------------------------------------------------------------------- */

static int
gossip(cmd_t *c, terr_t *err)
{
	bson_iter_t it, ct, f;
	uint32_t secs = 0, inc = 0, now_s, now_i;
	bool have_time = false;

	if (!cmd_find_field(c, "$clusterTime", &it))
		return 0;
	if (!BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "\"$clusterTime\" had the wrong type. Expected object, found %s",
		    BSON_ITER_HOLDS_UTF8(&it) ? "string" : "another type");
	bson_iter_recurse(&it, &ct);
	f = ct;
	if (bson_iter_find(&f, "clusterTime")) {
		if (!BSON_ITER_HOLDS_TIMESTAMP(&f))
			return terr_set(err, TERR_TYPE_MISMATCH, "\"clusterTime\" had the wrong type. Expected timestamp");
		bson_iter_timestamp(&f, &secs, &inc);
		have_time = true;
	}
	if (!have_time)
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"clusterTime\"");
	repl_set_clock_now(c->engine->rs, &now_s, &now_i);
	if (secs < now_s || (secs == now_s && inc <= now_i))
		return 0;   /* not ahead: nothing to validate (mongod's shortcut) */
	if (c->engine->keys != NULL) {
		bson_iter_t sig, h, k;
		const uint8_t *hash = NULL;
		uint32_t hlen = 0;
		int64_t key_id = 0;
		f = ct;
		if (!bson_iter_find(&f, "signature") || !BSON_ITER_HOLDS_DOCUMENT(&f) || !bson_iter_recurse(&f, &sig))
			return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"signature\"");
		h = sig;
		if (!bson_iter_find(&h, "hash") || !BSON_ITER_HOLDS_BINARY(&h))
			return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"hash\"");
		{
			bson_subtype_t st;
			bson_iter_binary(&h, &st, &hlen, &hash);
		}
		k = sig;
		if (!bson_iter_find(&k, "keyId") || !BSON_ITER_HOLDS_NUMBER(&k))
			return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"keyId\"");
		key_id = bson_iter_as_int64(&k);
		if (key_id == 0)
			/* a dummy signature: only a client allowed to advance the
			 * clock may send one; nobody here is */
			return terr_set(err, TERR_CANNOT_VERIFY_AND_SIGN_LOGICAL_TIME,
			    "Cannot accept logicalTime: { ts: Timestamp(%u, %u) }. May not be a part of a sharded cluster", secs, inc);
		RET(cluster_keys_verify(c->engine->keys, secs, inc, key_id, hash, hlen, err));
	}
	if (c->engine->clock != NULL)
		RET(repl_clock_advance(c->engine->clock, REPL_TS(secs, inc), err));
	repl_set_clock_advance(c->engine->rs, secs, inc);
	return 0;
}

/* ---- concerns ------------------------------------------------------------------------------------------------------------------ */

static void
node_of(engine_t *e, concern_node_t *n, bson_t *cfg)
{
	memset(n, 0, sizeof(*n));
	n->ephemeral = e->opts.storage.in_memory;
	if (e->rs == NULL)
		return;
	n->repl_set = true;
	n->initiated = repl_set_config_copy(e->rs, cfg);
	n->config = n->initiated ? cfg : NULL;
	n->primary = repl_set_state(e->rs) == REPL_STATE_PRIMARY;
	/* a set of several members (cmd_repl_member.c): every member bears data */
	n->data_members = repl_set_member_count(e->rs) > 1 ? repl_set_member_count(e->rs) : 1;
}

/*
 * The read concern as mongod's 72 refusal prints it (ReadConcernArgs::
 * toString: the parsed arguments re-serialized in its IDL order -- level,
 * afterOpTime, afterClusterTime, atClusterTime -- then `provenance:
 * "clientSupplied"`, in BSONObj::toString's form, Timestamps as
 * `Timestamp(s, i)`), into buf.  raw: the command's readConcern element
 * (for afterOpTime's term, which concern_read_t does not keep).
 */
static void
rc_describe(const concern_read_t *rc, const bson_iter_t *raw, char *buf, size_t n)
{
	static const char *const levels[] = {
		[RC_LOCAL] = "local", [RC_AVAILABLE] = "available", [RC_MAJORITY] = "majority",
		[RC_LINEARIZABLE] = "linearizable", [RC_SNAPSHOT] = "snapshot",
	};
	bson_string_t *s = bson_string_new("{ readConcern: { ");
	bson_iter_t it, t;
	const char *sep = "";

	if (rc->level != RC_NONE && (size_t)rc->level < sizeof(levels) / sizeof(levels[0])) {
		bson_string_append_printf(s, "level: \"%s\"", levels[rc->level]);
		sep = ", ";
	}
	if (rc->has_after_op_time) {
		int64_t term = 0;
		if (raw != NULL && BSON_ITER_HOLDS_DOCUMENT(raw) && bson_iter_recurse(raw, &it) &&
		    bson_iter_find_descendant(&it, "afterOpTime.t", &t) && BSON_ITER_HOLDS_NUMBER(&t))
			term = bson_iter_as_int64(&t);
		bson_string_append_printf(s, "%safterOpTime: { ts: Timestamp(%u, %u), t: %lld }", sep, rc->after_secs,
		    rc->after_inc, (long long)term);
		sep = ", ";
	} else if (rc->has_after_cluster_time) {
		bson_string_append_printf(s, "%safterClusterTime: Timestamp(%u, %u)", sep, rc->after_secs, rc->after_inc);
		sep = ", ";
	}
	if (rc->has_at_cluster_time) {
		bson_string_append_printf(s, "%satClusterTime: Timestamp(%u, %u)", sep, rc->at_secs, rc->at_inc);
		sep = ", ";
	}
	bson_string_append_printf(s, "%sprovenance: \"clientSupplied\" } }", sep);
	bson_strncpy(buf, s->str, n);
	bson_string_free(s, true);
}

static int
concerns(cmd_t *c, cmd_repl_ctx_t *x, terr_t *err)
{
	bson_iter_t it;
	concern_read_t rc;
	concern_node_t node;
	bson_t cfg;
	int ret = 0;

	/* neither concern named (most commands): nothing to parse or check,
	 * and no zeroing of rc (x->wc comes zeroed: not present) */
	if (!cmd_find_field(c, "writeConcern", &it) && !cmd_find_field(c, "readConcern", &it))
		return 0;
	memset(&rc, 0, sizeof(rc));
	if (cmd_find_field(c, "writeConcern", &it))
		RET(concern_write_parse(&it, &x->wc, err));
	if (cmd_find_field(c, "readConcern", &it))
		RET(concern_read_parse(&it, &rc, err));
	if (!x->wc.present && !rc.present)
		return 0;
	bson_init(&cfg);
	node_of(c->engine, &node, &cfg);
	ERR(concern_write_validate(&x->wc, &node, err));
	/* the pipeline's own supportsReadConcern comes first, as mongod asks
	 * the command before it checks the level against the node */
	if (rc.present && rc.level == RC_LINEARIZABLE) {
		const char *stage = writing_stage(c, cmd_lookup(c->name));

		if (stage != NULL) {
			ret = terr_set(err, TERR_INVALID_OPTIONS, "%s cannot be used with a 'linearizable' read concern level",
			    stage);
			goto err;
		}
	}
	ERR(concern_read_validate(&rc, &node, err));
	/* outside a transaction, snapshot reads are find, aggregate (no
	 * $out / $merge) and distinct only, as mongod's supportsReadConcern */
	if (node.repl_set && rc.level == RC_SNAPSHOT && !cmd_find_field(c, "autocommit", &it) &&
	    !(listed(snapshot_commands, c->name) && !writes_out(c, cmd_lookup(c->name)))) {
		char d[512];
		rc_describe(&rc, cmd_find_field(c, "readConcern", &it) ? &it : NULL, d, sizeof(d));
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "Command %s does not support %s :: caused by :: read concern not supported", c->name, d);
		goto err;
	}
	/* the other levels: mongod's per-command supportsReadConcern (above) */
	if (node.repl_set && rc.present && !cmd_find_field(c, "autocommit", &it) &&
	    !cmd_repl_rc_level_supported(c->name, rc.level)) {
		char d[512];
		rc_describe(&rc, cmd_find_field(c, "readConcern", &it) ? &it : NULL, d, sizeof(d));
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "Command %s does not support %s :: caused by :: read concern not supported", c->name, d);
		goto err;
	}
	if (node.repl_set && (rc.has_after_cluster_time || rc.has_at_cluster_time || rc.has_after_op_time)) {
		uint32_t s, i, ts = rc.has_at_cluster_time ? rc.at_secs : rc.after_secs,
		    ti = rc.has_at_cluster_time ? rc.at_inc : rc.after_inc;
		repl_set_clock_now(c->engine->rs, &s, &i);
		if (!rc.has_after_op_time && (ts > s || (ts == s && ti > i))) {
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "readConcern %s value must not be greater than the current clusterTime. Requested clusterTime: Timestamp(%u, %u); current clusterTime: Timestamp(%u, %u)",
			    rc.has_at_cluster_time ? "atClusterTime" : "afterClusterTime", ts, ti, s, i);
			goto err;
		}
		/* afterOpTime (mongod's internal, deprecated form): wait until this
		 * node has applied it -- maxTimeMS or shutdown end the wait */
		bool waiting = rc.has_after_op_time && (ts > s || (ts == s && ti > i));
		if (waiting)
			cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, 1);
		while (waiting && (ts > s || (ts == s && ti > i))) {
			struct timespec nap = {0, 10 * 1000 * 1000};
			if (cmd_check_deadline(c, err)) {
				ret = -1;
				cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, -1);
				goto err;
			}
			if (engine_shutdown_requested(c->engine)) {
				ret = terr_set(err, 11600 /* InterruptedAtShutdown */, "interrupted at shutdown");
				cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, -1);
				goto err;
			}
			nanosleep(&nap, NULL);
			repl_set_clock_now(c->engine->rs, &s, &i);
		}
		if (waiting)
			cmd_repl_waiter_add(CMD_REPL_WAITER_OPTIME, -1);
		/* otherwise a single member has applied everything up to its
		 * cluster time: nothing to wait for */
	}
	/* a set of several members: linearizable's checks, the wait for
	 * afterClusterTime on what this member applied (cmd_repl_reads.c) */
	ERR(cmd_repl_reads_before(c, &rc, &x->linearizable, err));
err:
	bson_destroy(&cfg);
	return ret;
}

/* ---- before / after --------------------------------------------------------------------------------------------------------------- */

int
cmd_repl_before(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, terr_t *err)
{
	/* x comes zeroed (the dispatcher clears it before anything can fail) */
	if (failpoint_any_active())
		RET(fail_command(c, def, x, err));
	if (c->engine->rs != NULL) {
		/* read before the state: a refusal names the topology it saw, so
		 * a driver that already heard of a newer one (replSetInitiate
		 * between the two) ignores it as stale */
		uint64_t tv = repl_set_topology_counter(c->engine->rs);
		RET(gossip(c, err));
		if (gate(c, def, err) != 0) {
			x->tv_set = true;
			x->tv_counter = tv;
			return -1;
		}
		x->start_term = repl_set_term(c->engine->rs);
	}
	return concerns(c, x, err);
}

/* The reply's {$clusterTime: {clusterTime, signature: {hash, keyId}},
 * operationTime} written as bytes and added in one bson_concat: they go on
 * every reply, and each libbson append that grows the reply costs several
 * hundred instructions. */
static void
append_cluster_time(cmd_t *c, bson_t *reply, uint32_t secs, uint32_t inc, uint32_t op_s, uint32_t op_i)
{
	bson_t both;
	uint8_t hash[20], buf[160];
	int64_t key_id = 0;
	size_t n = 4, ct_at, sig_at;
	uint32_t u;
	uint64_t k;

	memset(hash, 0, sizeof(hash));
	if (c->engine->keys != NULL) {
		terr_t e = TERR_INIT;
		/* only a primary makes keys: a secondary signs with the ones the
		 * set's log brought (keyId 0 until it has one) */
		bool mine = c->engine->rs == NULL || !repl_set_multi_member(c->engine->rs) ||
		    repl_set_writable(c->engine->rs);
		if ((mine ? cluster_keys_sign(c->engine->keys, secs, inc, &key_id, hash, &e) :
		    cluster_keys_sign_existing(c->engine->keys, secs, inc, &key_id, hash, &e)) != 0) {
			memset(hash, 0, sizeof(hash));
			key_id = 0;
		}
		terr_clear(&e);
	}
	k = BSON_UINT64_TO_LE((uint64_t)key_id);
#define CT_PUT(p, len) (memcpy(buf + n, (p), (len)), n += (len))
#define CT_U32(v) (u = BSON_UINT32_TO_LE(v), CT_PUT(&u, 4))
#define CT_LEN(at) (u = BSON_UINT32_TO_LE((uint32_t)(n - (at))), memcpy(buf + (at), &u, 4))
	buf[n++] = BSON_TYPE_DOCUMENT;
	CT_PUT("$clusterTime", 13);
	ct_at = n;
	n += 4;
	buf[n++] = BSON_TYPE_TIMESTAMP;
	CT_PUT("clusterTime", 12);
	CT_U32(inc);
	CT_U32(secs);
	buf[n++] = BSON_TYPE_DOCUMENT;
	CT_PUT("signature", 10);
	sig_at = n;
	n += 4;
	buf[n++] = BSON_TYPE_BINARY;
	CT_PUT("hash", 5);
	CT_U32((uint32_t)sizeof(hash));
	buf[n++] = BSON_SUBTYPE_BINARY;
	CT_PUT(hash, sizeof(hash));
	buf[n++] = BSON_TYPE_INT64;
	CT_PUT("keyId", 6);
	CT_PUT(&k, 8);
	buf[n++] = 0;
	CT_LEN(sig_at);
	buf[n++] = 0;
	CT_LEN(ct_at);
	buf[n++] = BSON_TYPE_TIMESTAMP;
	CT_PUT("operationTime", 14);
	CT_U32(op_i);
	CT_U32(op_s);
	buf[n++] = 0;
	CT_LEN(0);
#undef CT_PUT
#undef CT_U32
#undef CT_LEN
	if (bson_init_static(&both, buf, n))
		bson_concat(reply, &both);
}

/* The write concern as mongod's WriteConcernOptions::toBSON prints it after
 * extractWriteConcern: {w, j | fsync, wtimeout (int32), provenance}; the
 * client's (w as it was given, 1 when absent) or the implicit default's
 * {w: "majority", wtimeout: 0} (provenance NULL: none, as the default is
 * logged before its provenance is set). */
static void
wc_to_bson(const bson_t *given, const char *provenance, bson_t *out)
{
	bson_iter_t it;
	bool has_w = false, j_set = false, j = false, fsync = false;
	int64_t wtimeout = 0;

	if (given != NULL && bson_iter_init(&it, given))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "w") == 0) {
				has_w = true;
				if (BSON_ITER_HOLDS_UTF8(&it) || BSON_ITER_HOLDS_DOCUMENT(&it)) {
					bson_append_iter(out, "w", 1, &it);
				} else {
					int64_t n = bson_iter_as_int64(&it);
					if (n >= INT32_MIN && n <= INT32_MAX)
						BSON_APPEND_INT32(out, "w", (int32_t)n);
					else
						BSON_APPEND_INT64(out, "w", n);
				}
			} else if (strcmp(k, "j") == 0) {
				j_set = true;
				j = bson_iter_as_bool(&it);
			} else if (strcmp(k, "fsync") == 0) {
				fsync = bson_iter_as_bool(&it);
			} else if (strcmp(k, "wtimeout") == 0 && BSON_ITER_HOLDS_NUMBER(&it)) {
				wtimeout = bson_iter_as_int64(&it);
			}
		}
	if (given == NULL)
		BSON_APPEND_UTF8(out, "w", "majority");
	else if (!has_w)
		BSON_APPEND_INT32(out, "w", 1);
	if (fsync)
		BSON_APPEND_BOOL(out, "fsync", true);
	else if (j_set)
		BSON_APPEND_BOOL(out, "j", j);
	BSON_APPEND_INT32(out, "wtimeout", (int32_t)(wtimeout > INT32_MAX ? INT32_MAX : wtimeout < INT32_MIN ? INT32_MIN : wtimeout));
	if (provenance != NULL)
		BSON_APPEND_UTF8(out, "provenance", provenance);
}

/* With REPL verbosity 2, what mongod logs around a write command's wait for
 * its write concern (a statement inside a transaction waits for none):
 * D2 22548 "Applying default writeConcern on {cmdObj_firstElementFieldName}
 * of {wcDefault}" when the client gave none, then D2 22549 "Waiting for
 * write concern. OpTime: {replOpTime}, write concern: {writeConcern}" with
 * the oplog's last optime {ts, t}. */
static void
log_wc_wait(cmd_t *c)
{
	bson_iter_t it, sub;
	bson_t given, attr, doc;
	bool supplied = false;
	repl_oplog_optime_t last = REPL_OPLOG_OPTIME_NULL;

	if (cmd_find_field(c, "autocommit", &it) && strcmp(c->name, "commitTransaction") != 0 &&
	    strcmp(c->name, "abortTransaction") != 0)
		return;
	if (cmd_find_field(c, "writeConcern", &it) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_recurse(&it, &sub) && bson_iter_next(&sub)) {
		uint32_t len;
		const uint8_t *data;
		bson_iter_document(&it, &len, &data);
		supplied = bson_init_static(&given, data, len);
	}
	if (!supplied) {
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "cmdObj_firstElementFieldName", c->name);
		BSON_APPEND_DOCUMENT_BEGIN(&attr, "wcDefault", &doc);
		wc_to_bson(NULL, NULL, &doc);
		bson_append_document_end(&attr, &doc);
		tlog_debug(2, "REPL", 22548, "Applying default writeConcern on {cmdObj_firstElementFieldName} of {wcDefault}",
		    &attr);
		bson_destroy(&attr);
	}
	if (c->engine->oplog != NULL)
		last = repl_oplog_last_optime(c->engine->oplog);
	bson_init(&attr);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "replOpTime", &doc);
	BSON_APPEND_TIMESTAMP(&doc, "ts", (uint32_t)(last.ts >> 32), (uint32_t)last.ts);
	BSON_APPEND_INT64(&doc, "t", last.t);
	bson_append_document_end(&attr, &doc);
	BSON_APPEND_DOCUMENT_BEGIN(&attr, "writeConcern", &doc);
	if (supplied)
		wc_to_bson(&given, "clientSupplied", &doc);
	else
		wc_to_bson(NULL, "implicitDefault", &doc);
	bson_append_document_end(&attr, &doc);
	tlog_debug(2, "REPL", 22549, "Waiting for write concern. OpTime: {replOpTime}, write concern: {writeConcern}",
	    &attr);
	bson_destroy(&attr);
}

void
cmd_repl_after(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, int rc, bson_t *reply)
{
	repl_set_t *rs = c->engine->rs;

	if (rc == 0 && rs != NULL && def != NULL && (def->flags & CMDF_WRITE) && tlog_debug_on("REPL", 2))
		log_wc_wait(c);

	if (rc == 0 && x->fail_wce != NULL) {
		BSON_APPEND_DOCUMENT(reply, "writeConcernError", x->fail_wce);
	} else if (rc == 0 && rs != NULL && def != NULL && (def->flags & CMDF_WRITE) &&
	    cmd_repl_member_wait_write(c, &x->wc, x->start_term, reply)) {
		/* a set of several members: the wait for the Raft commit failed */
	} else if (rc == 0 && rs != NULL && x->wc.present && def != NULL && (def->flags & CMDF_WRITE)) {
		concern_node_t node;
		bson_t cfg;
		terr_t e = TERR_INIT;
		bson_init(&cfg);
		node_of(c->engine, &node, &cfg);
		if (concern_write_satisfiable(&x->wc, &node, &e) != 0) {
			bson_t w;
			char buf[32];
			BSON_APPEND_DOCUMENT_BEGIN(reply, "writeConcernError", &w);
			BSON_APPEND_INT32(&w, "code", e.code);
			BSON_APPEND_UTF8(&w, "codeName", terr_code_name(e.code, buf));
			BSON_APPEND_UTF8(&w, "errmsg", e.msg ? e.msg : "");
			bson_append_document_end(reply, &w);
		}
		terr_clear(&e);
		bson_destroy(&cfg);
	}
	if (rc == 0 && x->fail_labels != NULL && !bson_has_field(reply, "errorLabels"))
		BSON_APPEND_ARRAY(reply, "errorLabels", x->fail_labels);
}

void
cmd_repl_times(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, int rc, bson_t *reply)
{
	repl_set_t *rs = c->engine->rs;
	uint32_t op_s = 0, op_i = 0, ct_s, ct_i;

	/* mongod appends topologyVersion to the errors of its NotPrimaryError
	 * category always, and to those of its ShutdownError category only
	 * while it shuts down (quiesce mode; appendErrorLabelsAndTopologyVersion):
	 * SDAM compares it with what the driver knows.  A ShutdownError that is
	 * not a shutdown (failCommand's errorCode 91) carries none, so the driver
	 * does not take it for a fresh topology and drop a healthy server */
	bool not_primary = rc == TERR_NOT_WRITABLE_PRIMARY || rc == TERR_NOT_PRIMARY_NO_SECONDARY_OK ||
	    rc == TERR_NOT_PRIMARY_OR_SECONDARY || rc == 189 /* PrimarySteppedDown */ ||
	    rc == 11602 /* InterruptedDueToReplStateChange */;
	bool shutdown = (rc == 91 /* ShutdownInProgress */ || rc == 11600 /* InterruptedAtShutdown */) &&
	    engine_shutdown_requested(c->engine);
	if (rs != NULL && (not_primary || shutdown) && !bson_has_field(reply, "topologyVersion")) {
		bson_t tv;
		BSON_APPEND_DOCUMENT_BEGIN(reply, "topologyVersion", &tv);
		BSON_APPEND_OID(&tv, "processId", repl_set_process_id());
		BSON_APPEND_INT64(&tv, "counter", (int64_t)(x != NULL && x->tv_set ? x->tv_counter :
		    repl_set_topology_counter(rs)));
		bson_append_document_end(reply, &tv);
	}
	if (rs == NULL || !repl_set_initiated(rs))
		return;
	/* the write's optime (until the oplog assigns it, the dispatcher ticks
	 * the clock for every write command that succeeded); reads: the last
	 * applied optime */
	if (rc == 0 && def != NULL && (def->flags & CMDF_WRITE) && strcmp(c->db, "local") != 0) {
		repl_set_clock_tick(rs, &op_s, &op_i);
	} else {
		repl_set_info_t in;
		repl_set_info(rs, &in);
		op_s = in.last_applied.secs;
		op_i = in.last_applied.inc;
	}
	repl_set_clock_now(rs, &ct_s, &ct_i);
	append_cluster_time(c, reply, ct_s, ct_i, op_s, op_i);
}
