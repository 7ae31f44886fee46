/*
 * cmd_repl_member.c -- the commands side of a replica set of several
 * members (issue 24; the Raft member itself is repl/raft_member.h):
 *   - replSetInitiate with more than one member: checked as mongod's
 *     (93, 103 for duplicate hosts, 74 when a member does not answer), then
 *     a quorum check and the hand-over of the completed configuration to
 *     every other member (`_tamgaReplSetJoin`, Tamga's internal command:
 *     first {dryRun: true} to all, then for real), then this node;
 *   - starting the member's Raft server once this node's host is known
 *     (engine_set_self_host), stopping it before the oplog closes;
 *   - replSetGetStatus's members, hello's hosts / primary;
 *   - write concern: w: "majority" (and mongod's implicit default, which is
 *     majority in a set of several data-bearing voters) waits for the Raft
 *     commit of the write's oplog entry; w: N > 1 waits until N members
 *     applied it: the primary (which wrote it) and the members whose Raft
 *     log holds it (the leader's match indexes) and whose hello says they
 *     applied it (wait_applied); more than the members: 100.
 * A set initiated with one member runs without Raft and reaches this file
 * only when a reconfig adds members: it moves onto Raft then
 * (cmd_repl_member_start_moved, called by cmd_repl_reconfig.c).
 */
#include "commands/cmd_repl_member.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/auth_member.h"
#include "auth/auth_x509.h"
#include "commands/cmd_repl.h"
#include "commands/cmd_repl_heartbeat.h"
#include "common/log.h"
#include "common/checked.h"
#include "repl/election_log.h"
#include "repl/member_rejoin.h"
#include "repl/raft_vote_floor.h"
#include "repl/member_rpc.h"
#include "repl/raft_leftover.h"
#include "repl/raft_member.h"
#include "repl/replset.h"
#include "repl/retryable.h"

#define JOIN_TIMEOUT_MS 10000

static int
members_of(const bson_t *cfg)
{
	bson_iter_t it, m;
	int n = 0;

	if (bson_iter_init_find(&it, cfg, "members") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &m))
		while (bson_iter_next(&m))
			n++;
	return n;
}

bool
cmd_repl_member_config_rsid(const bson_t *cfg, bson_oid_t *out)
{
	bson_iter_t it, s;

	if (bson_iter_init_find(&it, cfg, "settings") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &s) &&
	    bson_iter_find(&s, "replicaSetId") && BSON_ITER_HOLDS_OID(&s)) {
		bson_oid_copy(bson_iter_oid(&s), out);
		return true;
	}
	return false;
}

static int
election_timeout_of(const bson_t *cfg)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, cfg, "settings") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &it) &&
	    bson_iter_find(&it, "electionTimeoutMillis") && BSON_ITER_HOLDS_NUMBER(&it)) {
		int64_t v = bson_iter_as_int64(&it);
		if (v > 0 && v <= 24 * 3600 * 1000)
			return (int)v;
	}
	return 10000;
}

bool
cmd_repl_member_config_is_multi(const bson_t *cfg)
{
	return cfg != NULL && members_of(cfg) > 1;
}

/* ---- starting the member ------------------------------------------------------------------------ */

/* This member became primary: the sessions' rows its applier wrote while
 * it was a secondary (config.transactions) become known to the session
 * registry, so a retried write answers its first result. */
static void
on_primary(void *arg)
{
	engine_t *e = arg;
	storage_session_t *s = storage_session_pool_get(e->st, NULL);
	terr_t err = TERR_INIT;

	/* what the sessions ran in an earlier term may have been rolled back
	 * since (repl/rollback.h): memory becomes config.transactions' rows */
	if (s != NULL)
		repl_retryable_invalidate(e->sessions);
	if (s != NULL && repl_retryable_load(e->sessions, s, &err) != 0)
		tlog('W', "REPL", 5000251, err.msg ? err.msg : "could not read config.transactions", NULL);
	terr_clear(&err);
	if (s != NULL)
		storage_session_pool_put(e->st, s);
}

/*
 * What the channels between members need: under access control a keyFile
 * or x.509 member authentication (clusterAuthMode sendX509/x509: members
 * send their certificates; mongod refuses --auth with --replSet and
 * neither at startup; here a single-member set may still run so).  TLS
 * between members is the channels' own (repl/member_tls.h).
 */
static int
member_channels_check(engine_t *e, terr_t *err)
{
	if (e->opts.auth && !auth_member_key_present() && !auth_cluster_sends_x509())
		return terr_set(err, TERR_BAD_VALUE, "security.keyFile is required when authorization is enabled with replica sets");
	return 0;
}

/* bootstrap_term > 0: a one-member set moved onto Raft (see
 * cmd_repl_member_start_moved): Raft is bootstrapped whatever the version,
 * its term set to this after the bootstrap. */
static int
member_start(engine_t *e, const bson_t *cfg, bool force_config, uint64_t vote_floor, uint64_t vote_floor_index,
             const uint64_t mv[2], uint64_t bootstrap_term, terr_t *err)
{
	repl_member_peer_t *peers = NULL;
	repl_member_options_t o;
	repl_set_info_t in;
	int n = 0, self = -1, ret;

	if (e->member != NULL)
		return 0;
	RET(member_channels_check(e, err));
	repl_set_info(e->rs, &in);
	RET(repl_member_peers(cfg, in.self_host, &peers, &n, &self, err));
	if (self < 0) {
		bson_free(peers);
		return terr_set(err, TERR_NODE_NOT_FOUND, "this node is not a member of the stored configuration");
	}
	memset(&o, 0, sizeof(o));
	o.dir = e->raft_dir;
	o.st = e->st;
	o.oplog = e->oplog;
	o.rs = e->rs;
	o.peers = peers;
	o.npeers = n;
	o.self_index = self;
	/* the initiated configuration bootstraps Raft (a no-op on a restart:
	 * Raft keeps its own state); a member added later starts with an empty
	 * log the leader fills from its first entry */
	{
		bson_iter_t v;
		o.bootstrap = !bson_iter_init_find(&v, cfg, "version") || bson_iter_as_int64(&v) <= 1;
	}
	if (bootstrap_term > 0) {
		o.bootstrap = true;
		o.bootstrap_term = bootstrap_term;
	}
	o.election_timeout_ms = election_timeout_of(cfg);
	o.on_primary = on_primary;
	o.on_primary_arg = e;
	o.on_config = cmd_repl_member_on_config;
	o.on_config_arg = e;
	o.force_config = force_config;
	o.vote_floor = vote_floor;
	o.vote_floor_index = vote_floor_index;
	if (mv != NULL) {
		o.min_valid_index = mv[0];
		o.min_valid_term = mv[1];
	}
	if (force_config) {
		/* the term jumps as the forced configuration's version does: past
		 * any term the members it leaves out reached by elections of
		 * their own meanwhile (cmd_repl_force.c) */
		bson_oid_t r;
		uint32_t x;
		bson_oid_init(&r, NULL);
		memcpy(&x, r.bytes + 8, sizeof(x));
		o.bootstrap = false;
		o.force_term = (uint64_t)(in.term > 0 ? in.term : 0) + 10000u + x % 100000u;
	}
	cmd_repl_member_self_role(cfg, in.self_host, &o.no_lead, &o.delay_secs);
	ret = repl_member_start(&o, &e->member, err);
	bson_free(peers);
	return ret;
}

void
cmd_repl_member_on_self_host(engine_t *e)
{
	bson_t cfg;
	terr_t err = TERR_INIT;
	bool single;

	if (e->rs == NULL || e->oplog == NULL)
		return;
	/* one member: Raft only when its history is on Raft (a set forced or
	 * removed down to one, restarted: repl_set_open_raft); mongod's
	 * single member elects itself as it starts, Raft's single voter does */
	single = repl_set_member_count(e->rs) == 1;
	if (repl_set_member_count(e->rs) < 1 || (single && !repl_set_on_raft(e->rs)))
		return;
	if (!repl_set_config_copy(e->rs, &cfg)) {
		bson_destroy(&cfg);
		if (single)
			repl_set_set_on_raft(e->rs, false);
		return;
	}
	/* a member that comes back asks the others for their configuration
	 * first: one a forced reconfig left out learns it is REMOVED before
	 * its Raft server of the old configuration starts (cmd_repl_force.c) */
	if (cmd_repl_watch_check_now(e) > 0) {
		bson_destroy(&cfg);
		if (!repl_set_config_copy(e->rs, &cfg) || repl_set_state(e->rs) == REPL_STATE_REMOVED) {
			bson_destroy(&cfg);
			cmd_repl_watch_start(e);
			return;
		}
	}
	cmd_repl_watch_start(e);
	if (repl_set_state(e->rs) == REPL_STATE_REMOVED) {
		/* its stored configuration leaves it out (rs.remove() down to
		 * another member): no Raft server until it is added again */
		bson_destroy(&cfg);
		return;
	}
	if (member_start(e, &cfg, false, 0, 0, NULL, 0, &err) != 0) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
		tlog('E', "REPL", 5000250, "could not start replication between members", &attr);
		bson_destroy(&attr);
		terr_clear(&err);
		/* a one-member set is not left waiting: it elects itself as a
		 * single member (without Raft, as before) */
		if (single)
			repl_set_set_on_raft(e->rs, false);
	}
	bson_destroy(&cfg);
}

/* One Raft server replaced by another at a time (a removed member added
 * again, a forced reconfig, the configuration watch). */
static pthread_mutex_t swap_mu = PTHREAD_MUTEX_INITIALIZER;

/* Under swap_mu: this node's Raft server halted and kept for readers that
 * still hold it (freed at shutdown); e->member NULL. */
static int
retire_locked(engine_t *e, terr_t *err)
{
	repl_member_t *old = e->member;
	size_t cnt, bytes;

	if (old == NULL)
		return 0;
	cnt = e->nretired_members + 1;
	if (tm_size_mul(cnt, sizeof(*e->retired_members), &bytes))
		return terr_set(err, TERR_INTERNAL_ERROR, "too many restarts of replication");
	repl_member_halt(old);
	e->retired_members = bson_realloc(e->retired_members, bytes);
	e->retired_members[e->nretired_members++] = old;
	e->member = NULL;
	return 0;
}

int
cmd_repl_member_retire(engine_t *e, terr_t *err)
{
	int ret;

	pthread_mutex_lock(&swap_mu);
	ret = retire_locked(e, err);
	pthread_mutex_unlock(&swap_mu);
	return ret;
}

/* Before the Raft folder is emptied: the entries only its Raft log holds
 * (the member was killed before applying them) that the set does not hold
 * are saved as rollback files (repl/raft_leftover.h); logged, never an
 * error of the join (as mongod's rollback, files are best effort to a
 * reader: the set's history is what counts). */
static void
save_raft_leftover(engine_t *e, const bson_t *cfg)
{
	repl_raft_leftover_stats_t st;
	terr_t err = TERR_INIT;
	char *dbpath;
	size_t n;
	bson_t attr = BSON_INITIALIZER;

	if (e->raft_dir == NULL || e->oplog == NULL || !repl_rejoin_raft_dir_has_log(e->raft_dir))
		return;
	n = strlen(e->raft_dir);
	if (n < 5 || strcmp(e->raft_dir + n - 5, "/raft") != 0)
		return;
	dbpath = bson_strndup(e->raft_dir, n - 5);
	if (repl_raft_leftover_save(e->raft_dir, dbpath, repl_oplog_last_optime(e->oplog).ts, cfg, e->self_host, &st,
	    &err) != 0) {
		BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
		tlog('W', "ROLLBACK", 5000281, "could not save the Raft log's unapplied entries as rollback files", &attr);
	} else if (st.entries > 0) {
		BSON_APPEND_INT64(&attr, "entries", st.entries);
		BSON_APPEND_INT64(&attr, "undone", st.undone);
		BSON_APPEND_INT64(&attr, "saved", st.saved);
		BSON_APPEND_BOOL(&attr, "setUnknown", st.unknown);
		tlog('I', "ROLLBACK", 5000280, "the Raft log's entries this member never applied, before its Raft folder is "
		    "emptied", &attr);
	}
	bson_destroy(&attr);
	terr_clear(&err);
	bson_free(dbpath);
}

bool
cmd_repl_member_retire_if_removed(engine_t *e)
{
	terr_t err = TERR_INIT;
	bool done = false;

	pthread_mutex_lock(&swap_mu);
	/* under swap_mu: a re-add (readd_self) stores the configuration that
	 * names this node (STARTUP2) before it restarts the server under the
	 * same lock, so a server started for it is never the one halted here */
	if (e->member != NULL && e->rs != NULL && repl_set_state(e->rs) == REPL_STATE_REMOVED) {
		done = retire_locked(e, &err) == 0;
		if (done)
			tlog('I', "REPL", 5000282, "this member is REMOVED: its Raft server is stopped until it is added again",
			    NULL);
	}
	pthread_mutex_unlock(&swap_mu);
	terr_clear(&err);
	return done;
}

int
cmd_repl_member_restart(engine_t *e, const bson_t *cfg, cmd_repl_restart_t how, terr_t *err)
{
	int ret;

	pthread_mutex_lock(&swap_mu);
	ret = retire_locked(e, err);
	if (ret == 0 && how == CMD_REPL_RESTART_EMPTIED)
		save_raft_leftover(e, cfg);
	if (ret == 0 && how == CMD_REPL_RESTART_EMPTIED)
		ret = repl_rejoin_reset_raft_dir(e->raft_dir, err);
	if (ret == 0)
		ret = member_start(e, cfg, how == CMD_REPL_RESTART_FORCED, 0, 0, NULL, 0, err);
	pthread_mutex_unlock(&swap_mu);
	return ret;
}

int
cmd_repl_member_start_moved(engine_t *e, const bson_t *cfg, int64_t term, terr_t *err)
{
	int ret;

	if (e->raft_dir == NULL || e->oplog == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "a replica set of several members needs tamgad with a data folder");
	pthread_mutex_lock(&swap_mu);
	if (e->member != NULL) {
		pthread_mutex_unlock(&swap_mu);
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS, "this node already runs replication between members");
	}
	/* the folder of a node that never ran this set on Raft holds nothing of
	 * the set's: emptied whole (libraft bootstraps only a folder without a
	 * term) */
	ret = repl_rejoin_clear_raft_dir(e->raft_dir, err);
	/* its log will lack the data written before the move: compacted
	 * before a member is added (cmd_repl_reconfig.c) */
	if (ret == 0)
		ret = repl_rejoin_set_compact_pending(e->raft_dir, true, err);
	/* the term after the set's: libraft's single voter with pre-vote on
	 * becomes leader in the term it starts with (no new term), and the
	 * set's primary on Raft must not share a term -- nor an electionId --
	 * with the single member's last election */
	if (ret == 0)
		ret = member_start(e, cfg, false, 0, 0, NULL, (uint64_t)(term > 0 ? term : 0) + 1, err);
	if (ret != 0 && e->member == NULL)
		(void)repl_rejoin_clear_raft_dir(e->raft_dir, NULL);
	pthread_mutex_unlock(&swap_mu);
	if (ret == 0)
		cmd_repl_watch_start(e);
	return ret;
}

void
cmd_repl_member_stop(engine_t *e)
{
	cmd_repl_hb_stop(e);
	cmd_repl_watch_stop(e);
	repl_member_stop(e->member);
	e->member = NULL;
	for (size_t i = 0; i < e->nretired_members; i++)
		repl_member_stop(e->retired_members[i]);
	bson_free(e->retired_members);
	e->retired_members = NULL;
	e->nretired_members = 0;
}

/* ---- initiate and join ------------------------------------------------------------------------------- */

/* The checks every member runs on a configuration of several: mongod's
 * (repl_set_config_check), this build's limits, the Raft ports.  initiating:
 * this node runs replSetInitiate, and must be electable under cfg (mongod's
 * validateConfigForInitiate, findSelfInConfigIfElectable); a member handed
 * the configuration (a join: mongod's validateConfigForHeartbeatReconfig,
 * findSelfInConfig) need only find itself in it, so priority 0, hidden,
 * delayed and non-voting members are taken at initiate as by mongod. */
static int
check_multi(engine_t *e, const bson_t *cfg, bool initiating, terr_t *err)
{
	repl_member_peer_t *peers = NULL;
	repl_set_info_t in;
	int idx, n, self;

	repl_set_info(e->rs, &in);
	RET(member_channels_check(e, err));
	if (e->oplog == NULL || e->raft_dir == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "a replica set of several members needs tamgad with a data folder");
	{
		char self_host[300];
		/* the node's own host:port, as engine_set_self_host gave it */
		self_host[0] = '\0';
		if (e->self_host != NULL)
			bson_strncpy(self_host, e->self_host, sizeof(self_host));
		if (repl_set_config_check(cfg, repl_set_name(e->rs), self_host[0] ? self_host : NULL, initiating, &idx,
		    err) != 0) {
			/* mongod's replSetInitiate answers every parse and
			 * validateConfigForInitiate reason as 93, this node missing
			 * or not electable too; a member handed the configuration
			 * keeps 74 for not finding itself (the initiator reports it) */
			if (initiating || (err->code != TERR_NODE_NOT_FOUND &&
			    err->code != TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE))
				err->code = TERR_INVALID_REPLICA_SET_CONFIG;
			return -1;
		}
	}
	RET(repl_member_peers(cfg, NULL, &peers, &n, &self, err));
	bson_free(peers);
	return 0;
}

int
cmd_repl_member_join(const char *host, const bson_t *cfg, bool dry_run, uint64_t mv_index, uint64_t mv_term,
                     terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	int ret = 0;

	BSON_APPEND_DOCUMENT(&cmd, "_tamgaReplSetJoin", cfg);
	BSON_APPEND_BOOL(&cmd, "dryRun", dry_run);
	if (mv_index > 0) {
		BSON_APPEND_INT64(&cmd, "minValidIndex", (int64_t)mv_index);
		BSON_APPEND_INT64(&cmd, "minValidTerm", (int64_t)mv_term);
	}
	if (repl_member_rpc(host, "admin", &cmd, JOIN_TIMEOUT_MS, &reply, err) != 0) {
		bson_destroy(&cmd);
		return -1;
	}
	bson_destroy(&cmd);
	if (!bson_iter_init_find(&it, &reply, "ok") || bson_iter_as_double(&it) != 1.0) {
		const char *msg = bson_iter_init_find(&it, &reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_iter_utf8(&it, NULL) : "refused";
		int code = bson_iter_init_find(&it, &reply, "code") ? (int)bson_iter_as_int64(&it) : 0;
		ret = terr_set(err, code != 0 ? code : TERR_NODE_NOT_FOUND, "%s", msg);
	}
	bson_destroy(&reply);
	return ret;
}

bool
cmd_repl_member_join_veto(const char *host, const terr_t *je, int64_t version, terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	terr_t he = TERR_INIT;
	int64_t theirs = -1;

	if (je->code == 108 /* InconsistentReplicaSetNames */) {
		terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE, "Our set name did not match that of %s", host);
		return true;
	}
	if (je->code != TERR_ALREADY_INITIALIZED)
		return false;
	/* the member's own configuration version, as its heartbeat says it */
	BSON_APPEND_INT32(&cmd, "hello", 1);
	if (repl_member_rpc(host, "admin", &cmd, JOIN_TIMEOUT_MS, &reply, &he) == 0) {
		if (bson_iter_init_find(&it, &reply, "setVersion") && BSON_ITER_HOLDS_NUMBER(&it))
			theirs = bson_iter_as_int64(&it);
		bson_destroy(&reply);
	}
	terr_clear(&he);
	bson_destroy(&cmd);
	if (theirs < version)
		return false;
	terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
	    "Our config version of %lld is no larger than the version on %s, which is %lld", (long long)version, host,
	    (long long)theirs);
	return true;
}

/* This node joins the set of cfg (a completed configuration); vote_floor,
 * vote_floor_index, mv (min_valid_index, min_valid_term): see
 * repl_member_options_t (0: none). */
static int
join_self(engine_t *e, const bson_t *cfg, uint64_t vote_floor, uint64_t vote_floor_index, const uint64_t mv[2],
          terr_t *err)
{
	RET(repl_set_store_config(e->rs, cfg, err));
	RET(repl_oplog_create(e->oplog, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, err));
	cmd_repl_watch_start(e);
	return member_start(e, cfg, false, vote_floor, vote_floor_index, mv, 0, err);
}

int
cmd_repl_member_initiate(cmd_t *c, const bson_t *cfg, terr_t *err)
{
	engine_t *e = c->engine;
	bson_t *full;
	repl_member_peer_t *peers = NULL;
	repl_set_info_t in;
	int n = 0, self = -1, ret = 0;

	if (repl_set_initiated(e->rs))
		return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
	RET(check_multi(e, cfg, true, err));
	full = repl_set_config_completed(cfg);
	repl_set_info(e->rs, &in);
	if (repl_member_peers(full, e->self_host, &peers, &n, &self, err) != 0) {
		bson_destroy(full);
		return -1;
	}
	/* mongod's quorum check: every member must answer before anything is
	 * stored anywhere */
	for (int pass = 0; pass < 2 && ret == 0; pass++) {
		for (int i = 0; i < n && ret == 0; i++) {
			terr_t je = TERR_INIT;
			if (i == self)
				continue;
			if (cmd_repl_member_join(peers[i].host, full, pass == 0, 0, 0, &je) != 0 &&
			    cmd_repl_member_join_veto(peers[i].host, &je, 1, err)) {
				terr_clear(&je);
				ret = -1;
			} else if (terr_is_set(&je)) {
				ret = terr_set(err, TERR_NODE_NOT_FOUND,
				    "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %s failed with %s",
				    peers[i].host, je.msg ? je.msg : "no answer");
				terr_clear(&je);
			}
		}
	}
	if (ret == 0)
		ret = join_self(e, full, 0, 0, NULL, err);
	bson_free(peers);
	bson_destroy(full);
	return ret;
}

/*
 * A REMOVED member named again by a newer configuration of its own set (the
 * same name and replicaSetId): rs.add() of a member that was removed, its
 * data still there (mongod's removed member takes the configuration from a
 * heartbeat and goes on as SECONDARY from its data).  The member keeps its
 * data, its oplog and its Raft log: the configuration is stored (REMOVED
 * ends), its Raft server started when it is not running (a removed member
 * restarted never started it) or given the new peers; the leader then adds
 * it to Raft (raft_add, raft_assign), which sends it the log from where its
 * own ends, or the leader's snapshot once the log is compacted.  Its
 * applier does the rest as for any member coming back: entries already in
 * the oplog skipped, a divergent tail rolled back, a snapshot past its
 * oplog caught up from the leader's oplog or copied (initial_sync.h).
 * Anything else: 103.  dry: the checks only.
 */
static int
readd_self(engine_t *e, const bson_t *cfg, bool dry, terr_t *err)
{
	bson_t cur;
	bson_oid_t a, b;
	bson_iter_t it;
	repl_set_info_t in;
	int64_t version;
	bool same_id;

	if (!repl_set_config_copy(e->rs, &cur)) {
		bson_destroy(&cur);
		return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
	}
	repl_set_info(e->rs, &in);
	same_id = cmd_repl_member_config_rsid(cfg, &a) && cmd_repl_member_config_rsid(&cur, &b) && bson_oid_equal(&a, &b);
	bson_destroy(&cur);
	version = bson_iter_init_find(&it, cfg, "version") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
	if (!same_id || version <= in.config_version)
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "this removed member belongs to another configuration of set %s (replicaSetId or version)",
		    repl_set_name(e->rs));
	if (members_of(cfg) < 2)
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "a join needs a configuration of several members");
	RET(check_multi(e, cfg, false, err));   /* it names this node (74 otherwise) */
	if (dry)
		return 0;
	RET(repl_set_config_replace(e->rs, cfg, err));
	/* its Raft server runs under its old Raft id and log: halted (kept for
	 * readers that hold it) and started again with its folder emptied */
	RET(cmd_repl_member_restart(e, cfg, CMD_REPL_RESTART_EMPTIED, err));
	{
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "version", version);
		tlog('I', "REPL", 5000263, "this removed member was added to the set again", &attr);
		bson_destroy(&attr);
	}
	return 0;
}

/*
 * This node already holds cfg (borrowed): the same replicaSetId and version,
 * and cfg names it.  The hand-over of a reconfig retried after its Raft
 * change failed (the new member was handed the configuration, the primary
 * kept its old one): the retry's rs.add() builds the same configuration, and
 * mongod takes an rs.add() of a member its configuration lacks, so the
 * member answers the join as done rather than "already initialized" (the
 * primary's quorum check would make that 103).
 */
static bool
holds_config(engine_t *e, const bson_t *cfg)
{
	bson_t cur;
	bson_oid_t a, b;
	bson_iter_t it;
	repl_set_info_t in;
	terr_t err = TERR_INIT;
	bool same;

	if (!repl_set_config_copy(e->rs, &cur)) {
		bson_destroy(&cur);
		return false;
	}
	repl_set_info(e->rs, &in);
	same = cmd_repl_member_config_rsid(cfg, &a) && cmd_repl_member_config_rsid(&cur, &b) && bson_oid_equal(&a, &b) &&
	    bson_iter_init_find(&it, cfg, "version") && BSON_ITER_HOLDS_NUMBER(&it) &&
	    bson_iter_as_int64(&it) == in.config_version;
	bson_destroy(&cur);
	if (same && check_multi(e, cfg, false, &err) != 0)
		same = false;
	terr_clear(&err);
	return same;
}

CMD_HANDLER(cmd_tamga_repl_set_join)
{
	static const char *const fields[] = {"dryRun", "term", "raftIndex", "minValidIndex", "minValidTerm", NULL};
	engine_t *e = c->engine;
	bson_t cfg;
	bson_iter_t it;
	bool dry = false, found, rejoin = false, have_index = false, have_mvi = false, have_mvt = false;
	int64_t term = 0, raft_index = 0, mv_index = 0, mv_term = 0;
	uint64_t mv[2];
	const uint8_t *d;
	uint32_t l;

	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_bool(c, "dryRun", &dry, &found, err));
	/* term: the primary's rejoin thread hands the configuration to a member
	 * the set already holds as a voter, whose vote memory went with its
	 * data (repl/member_rejoin.h, repl/raft_vote_floor.h) */
	RET(cmd_get_int64(c, "term", &term, &rejoin, err));
	if (rejoin && term < 1)
		return terr_set(err, TERR_BAD_VALUE, "term must be positive");
	/* raftIndex: the primary's last Raft log index once this node answered
	 * the dry run; it votes only once its own log reaches it */
	RET(cmd_get_int64(c, "raftIndex", &raft_index, &have_index, err));
	if (have_index && (!rejoin || raft_index < 0))
		return terr_set(err, TERR_BAD_VALUE, "raftIndex must be non-negative and come with a term");
	/* minValidIndex, minValidTerm: a new member's minValid (a reconfig's
	 * hand-over; a rejoin's is raftIndex and term): repl/raft_min_valid.h */
	RET(cmd_get_int64(c, "minValidIndex", &mv_index, &have_mvi, err));
	RET(cmd_get_int64(c, "minValidTerm", &mv_term, &have_mvt, err));
	if (have_mvi != have_mvt || mv_index < 0 || mv_term < 0 || (have_mvi && rejoin))
		return terr_set(err, TERR_BAD_VALUE,
		    "minValidIndex and minValidTerm must be non-negative, come together and not with a term");
	if (e->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "This node was not started with replication enabled.");
	if (!BSON_ITER_HOLDS_DOCUMENT(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '_tamgaReplSetJoin' is the wrong type, expected type 'object'");
	bson_iter_document(&c->first, &l, &d);
	if (!bson_init_static(&cfg, d, l))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON");
	/* another set's member: mongod's heartbeat answers
	 * InconsistentReplicaSetNames before anything else */
	if (bson_iter_init_find(&it, &cfg, "_id") && BSON_ITER_HOLDS_UTF8(&it) &&
	    strcmp(bson_iter_utf8(&it, NULL), repl_set_name(e->rs)) != 0)
		return terr_set(err, 108 /* InconsistentReplicaSetNames */,
		    "Our set name of %s does not match name %s reported by remote node", repl_set_name(e->rs),
		    bson_iter_utf8(&it, NULL));
	if (repl_set_initiated(e->rs) && repl_set_state(e->rs) == REPL_STATE_REMOVED)
		return readd_self(e, &cfg, dry, err);
	/* holds it already: a retried join succeeds -- but the rejoin
	 * thread's dry run (term) asks whether this node lost its
	 * configuration with its data; one that holds it (restarted, not
	 * wiped) answers 23, else the primary noted a vote floor for a member
	 * that was never wiped and no stepdown could hand over to it */
	if (repl_set_initiated(e->rs) && holds_config(e, &cfg)) {
		if (dry && rejoin)
			return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
		return 0;
	}
	if (repl_set_initiated(e->rs))
		return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
	if (members_of(&cfg) < 2)
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "a join needs a configuration of several members");
	RET(check_multi(e, &cfg, false, err));
	{
		/* added by a reconfig: no initial sync yet, so only a member with
		 * no data of its own may join (it applies the set's whole log) */
		bson_iter_t v;
		char **names = NULL;
		int nn = 0;
		bool data = false;
		if (bson_iter_init_find(&v, &cfg, "version") && bson_iter_as_int64(&v) > 1 &&
		    storage_list_dbs(e->st, &names, &nn, NULL) == 0) {
			for (int i = 0; i < nn; i++)
				data = data || (strcmp(names[i], "local") != 0 && strcmp(names[i], "admin") != 0 &&
				    strcmp(names[i], "config") != 0);
			storage_free_names(names, nn);
		}
		if (data)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "this node has data of its own; a member added to a set must start with an empty data folder (initial sync is not built yet)");
	}
	if (dry)
		return 0;
	/* the minValid: the hand-over's point in the primary's log */
	mv[0] = rejoin ? (uint64_t)raft_index : (uint64_t)mv_index;
	mv[1] = rejoin ? (uint64_t)term : (uint64_t)mv_term;
	return join_self(e, &cfg, rejoin ? repl_raft_vote_floor_for((uint64_t)term) : 0, (uint64_t)raft_index, mv, err);
}

/*
 * {_tamgaReplSetRemoved: cfg}: the primary tells a member it removed (mongod's
 * removed member learns it from a heartbeat) the configuration that no
 * longer names it.  Taken when it is of this node's set (name and
 * replicaSetId), newer than this node's and does not name this node: stored,
 * and the node is REMOVED (repl_set_config_replace).  Anything else: 103.
 */
CMD_HANDLER(cmd_tamga_repl_set_removed)
{
	engine_t *e = c->engine;
	bson_t cfg, cur;
	bson_iter_t it, a, b;
	const uint8_t *d;
	uint32_t l;
	repl_set_info_t in;
	int64_t version;
	bool same_id;
	static const char *const fields[] = {NULL};

	RET(cmd_check_fields(c, fields, err));
	if (e->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "This node was not started with replication enabled.");
	if (!BSON_ITER_HOLDS_DOCUMENT(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '_tamgaReplSetRemoved' is the wrong type, expected type 'object'");
	bson_iter_document(&c->first, &l, &d);
	if (!bson_init_static(&cfg, d, l))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON");
	if (!repl_set_config_copy(e->rs, &cur))
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "no replset config has been received");
	repl_set_info(e->rs, &in);
	version = bson_iter_init_find(&it, &cfg, "version") ? bson_iter_as_int64(&it) : 0;
	same_id = bson_iter_init_find(&a, &cfg, "settings") && bson_iter_recurse(&a, &a) &&
	    bson_iter_find(&a, "replicaSetId") && BSON_ITER_HOLDS_OID(&a) &&
	    bson_iter_init_find(&b, &cur, "settings") && bson_iter_recurse(&b, &b) &&
	    bson_iter_find(&b, "replicaSetId") && BSON_ITER_HOLDS_OID(&b) &&
	    bson_oid_equal(bson_iter_oid(&a), bson_iter_oid(&b));
	bson_destroy(&cur);
	if (!bson_iter_init_find(&it, &cfg, "_id") || !BSON_ITER_HOLDS_UTF8(&it) ||
	    strcmp(bson_iter_utf8(&it, NULL), repl_set_name(e->rs)) != 0 || !same_id || version <= in.config_version)
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "not a newer configuration of this node's replica set");
	if (bson_iter_init_find(&it, &cfg, "members") && bson_iter_recurse(&it, &a))
		while (bson_iter_next(&a))
			if (bson_iter_recurse(&a, &b) && bson_iter_find(&b, "host") && BSON_ITER_HOLDS_UTF8(&b) &&
			    strcmp(bson_iter_utf8(&b, NULL), in.self_host) == 0)
				return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
				    "the configuration names this node");
	RET(repl_set_config_replace(e->rs, &cfg, err));
	/* REMOVED: its Raft server of the old configuration stops (no
	 * election of its own, no message to the set's members) */
	cmd_repl_member_retire_if_removed(e);
	return 0;
}

/* ---- replSetStepDown ------------------------------------------------------------------------------------ */

static int64_t
now_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
cmd_repl_member_step_down(cmd_t *c, int64_t secs, int64_t catch_up_secs, bool force, terr_t *err)
{
	engine_t *e = c->engine;
	int64_t deadline = tm_now_us() + (catch_up_secs > 0 || force ? catch_up_secs : 10) * 1000000;

	if (e->member == NULL)
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary so can't step down");
	if (c->deadline_us > 0 && c->deadline_us < deadline)
		deadline = c->deadline_us;
	/* mongod: no election of this member (nor priority takeover) for the
	 * stepdown period: a freeze */
	return repl_member_step_down(e->member, deadline, now_wall_ms() + secs * 1000, force, err);
}

int
cmd_repl_member_freeze(cmd_t *c, int64_t secs, terr_t *err)
{
	if (c->engine->member == NULL)
		return terr_set(err, TERR_NOT_SECONDARY, "Cannot freeze node when primary or running for election, state: Running-Election");
	return repl_member_freeze(c->engine->member, secs, err);
}

/* ---- priority takeover ------------------------------------------------------------------------------------ */

/* {_tamgaPriorityTakeover: memberId, term}: a secondary of higher priority
 * asks this primary for the leadership (repl/member_takeover.h). */
CMD_HANDLER(cmd_tamga_priority_takeover)
{
	static const char *const fields[] = {"term", NULL};
	engine_t *e = c->engine;
	bson_iter_t it;

	RET(cmd_check_fields(c, fields, err));
	if (e->member == NULL || e->rs == NULL || !repl_set_multi_member(e->rs))
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	if (!BSON_ITER_HOLDS_NUMBER(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '_tamgaPriorityTakeover' is the wrong type, expected a number");
	if (!cmd_find_field(c, "term", &it) || !BSON_ITER_HOLDS_NUMBER(&it) || bson_iter_as_int64(&it) < 0)
		return terr_set(err, TERR_BAD_VALUE, "_tamgaPriorityTakeover needs a term");
	return repl_member_transfer_to(e->member, bson_iter_as_int64(&c->first), (uint64_t)bson_iter_as_int64(&it), err);
}

/* ---- status, hello -------------------------------------------------------------------------------------- */

static const char *
state_str(repl_member_state_t s)
{
	return s == REPL_STATE_PRIMARY ? "PRIMARY" : s == REPL_STATE_SECONDARY ? "SECONDARY" :
	    s == REPL_STATE_RECOVERING ? "RECOVERING" : s == REPL_STATE_ROLLBACK ? "ROLLBACK" : s == REPL_STATE_STARTUP2 ? "STARTUP2" :
	    s == REPL_STATE_REMOVED ? "REMOVED" : "STARTUP";
}

/* members[i].host of cfg, or NULL. */
static const char *
host_at(const bson_t *cfg, int i, int64_t *id)
{
	bson_iter_t it, m, f;
	int k = 0;

	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return NULL;
	while (bson_iter_next(&m)) {
		const char *h = NULL;
		if (k++ != i)
			continue;
		if (!bson_iter_recurse(&m, &f))
			return NULL;
		while (bson_iter_next(&f)) {
			if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				h = bson_iter_utf8(&f, NULL);
			else if (strcmp(bson_iter_key(&f), "_id") == 0 && id != NULL)
				*id = bson_iter_as_int64(&f);
		}
		return h;
	}
	return NULL;
}

void
member_opts_at(const bson_t *cfg, int i, member_opts_t *mo)
{
	bson_iter_t it, m, f;
	int k = 0;

	memset(mo, 0, sizeof(*mo));
	mo->priority = 1;
	mo->votes = 1;
	mo->build_indexes = true;
	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return;
	while (bson_iter_next(&m)) {
		if (k++ != i)
			continue;
		if (!bson_iter_recurse(&m, &f))
			return;
		while (bson_iter_next(&f)) {
			const char *key = bson_iter_key(&f);
			if (strcmp(key, "priority") == 0)
				mo->priority = bson_iter_as_double(&f);
			else if (strcmp(key, "votes") == 0)
				mo->votes = (int)bson_iter_as_int64(&f);
			else if (strcmp(key, "hidden") == 0)
				mo->hidden = bson_iter_as_bool(&f);
			else if (strcmp(key, "arbiterOnly") == 0)
				mo->arbiter = bson_iter_as_bool(&f);
			else if (strcmp(key, "buildIndexes") == 0)
				mo->build_indexes = bson_iter_as_bool(&f);
			else if (strcmp(key, "secondaryDelaySecs") == 0)
				mo->delay_secs = bson_iter_as_int64(&f);
			else if (strcmp(key, "tags") == 0 && BSON_ITER_HOLDS_DOCUMENT(&f)) {
				uint32_t len;
				const uint8_t *data;
				bson_iter_document(&f, &len, &data);
				mo->has_tags = bson_init_static(&mo->tags, data, len) && !bson_empty(&mo->tags);
			}
		}
		return;
	}
}

void
cmd_repl_member_hello_self(engine_t *e, bson_t *out)
{
	bson_t cfg;
	repl_set_info_t in;
	int n;

	if (e->member == NULL || repl_set_member_count(e->rs) <= 1)
		return;
	repl_set_info(e->rs, &in);
	repl_set_config_copy(e->rs, &cfg);
	n = members_of(&cfg);
	for (int i = 0; i < n; i++) {
		member_opts_t mo;
		const char *h = host_at(&cfg, i, NULL);
		if (h == NULL || strcmp(h, in.self_host) != 0)
			continue;
		member_opts_at(&cfg, i, &mo);
		if (mo.priority == 0)
			BSON_APPEND_BOOL(out, "passive", true);
		if (mo.hidden)
			BSON_APPEND_BOOL(out, "hidden", true);
		if (!mo.build_indexes)
			BSON_APPEND_BOOL(out, "buildIndexes", false);
		if (mo.delay_secs > 0)
			BSON_APPEND_INT64(out, "secondaryDelaySecs", mo.delay_secs);
		if (mo.has_tags)
			BSON_APPEND_DOCUMENT(out, "tags", &mo.tags);
		break;
	}
	bson_destroy(&cfg);
}

bool
cmd_repl_member_hello(engine_t *e, bson_t *out, const char **primary_host, bson_t *cfg_out)
{
	repl_member_view_t rows[REPL_MAX_MEMBERS];
	int leader = -1, n;
	bson_t hosts;

	*primary_host = NULL;
	if (e->member == NULL || repl_set_member_count(e->rs) <= 1)
		return false;
	repl_set_config_copy(e->rs, cfg_out);
	n = members_of(cfg_out);
	/* mongod's fillHelloForReplSet: hidden and delayed members are not
	 * listed; priority 0 ones are `passives` */
	for (int pass = 0; pass < 2; pass++) {
		int k = 0;
		bool any = false;
		for (int i = 0; i < n; i++) {
			member_opts_t mo;
			char key[16];
			const char *h = host_at(cfg_out, i, NULL);
			member_opts_at(cfg_out, i, &mo);
			if (h == NULL || mo.hidden || mo.delay_secs > 0 || (mo.priority == 0) != (pass == 1))
				continue;
			if (!any)
				bson_append_array_begin(out, pass == 0 ? "hosts" : "passives", -1, &hosts);
			any = true;
			snprintf(key, sizeof(key), "%d", k++);
			BSON_APPEND_UTF8(&hosts, key, h);
		}
		if (any)
			bson_append_array_end(out, &hosts);
		else if (pass == 0) {
			bson_append_array_begin(out, "hosts", -1, &hosts);
			bson_append_array_end(out, &hosts);
		}
	}
	repl_member_view(e->member, rows, REPL_MAX_MEMBERS, &leader);
	if (leader >= 0)
		*primary_host = host_at(cfg_out, leader, NULL);
	return true;
}

bool
cmd_repl_member_status(engine_t *e, bson_t *reply)
{
	repl_member_view_t rows[REPL_MAX_MEMBERS];
	repl_set_info_t in;
	bson_t cfg, op, arr;
	int leader = -1, n, nv, maj;
	int64_t now;
	repl_ts_t committed;
	const char *leader_host;
	struct timespec ts;

	if (e->member == NULL || repl_set_member_count(e->rs) <= 1)
		return false;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	repl_set_info(e->rs, &in);
	repl_set_config_copy(e->rs, &cfg);
	n = repl_member_view(e->member, rows, REPL_MAX_MEMBERS, &leader);
	nv = n;
	maj = nv / 2 + 1;
	committed = repl_member_committed_ts(e->member);
	leader_host = leader >= 0 ? host_at(&cfg, leader, NULL) : NULL;
	BSON_APPEND_UTF8(reply, "set", repl_set_name(e->rs));
	BSON_APPEND_DATE_TIME(reply, "date", now);
	BSON_APPEND_INT32(reply, "myState", (int32_t)in.state);
	BSON_APPEND_INT64(reply, "term", in.term);
	/* a secondary's entries come from the leader's Raft log */
	BSON_APPEND_UTF8(reply, "syncSourceHost",
	    in.state != REPL_STATE_PRIMARY && leader_host != NULL ? leader_host : "");
	BSON_APPEND_INT32(reply, "syncSourceId",
	    in.state != REPL_STATE_PRIMARY && leader >= 0 ? (int32_t)rows[leader].member_id : -1);
	BSON_APPEND_INT64(reply, "heartbeatIntervalMillis", cmd_repl_hb_interval_ms(&cfg));
	BSON_APPEND_INT32(reply, "majorityVoteCount", maj);
	BSON_APPEND_INT32(reply, "writeMajorityCount", maj);
	BSON_APPEND_INT32(reply, "votingMembersCount", nv);
	BSON_APPEND_INT32(reply, "writableVotingMembersCount", nv);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "optimes", &op);
	{
		repl_optime_t co = {repl_ts_secs(committed), repl_ts_inc(committed), in.term};
		repl_optime_append(&op, "lastCommittedOpTime", &co);
	}
	BSON_APPEND_DATE_TIME(&op, "lastCommittedWallTime", (int64_t)repl_ts_secs(committed) * 1000);
	repl_optime_append(&op, "appliedOpTime", &in.last_applied);
	{
		/* mongod's durableOpTime (cmd_repl_heartbeat.h) */
		repl_optime_t d;
		int64_t dwall;
		cmd_repl_hb_durable(e, &in, &d, &dwall);
		repl_optime_append(&op, "durableOpTime", &d);
		BSON_APPEND_DATE_TIME(&op, "lastAppliedWallTime", in.last_applied_wall_ms);
		BSON_APPEND_DATE_TIME(&op, "lastDurableWallTime", dwall);
	}
	bson_append_document_end(reply, &op);
	/* the election that made it primary (election_log.h) */
	if (in.state == REPL_STATE_PRIMARY)
		repl_election_candidate_append(reply, "electionCandidateMetrics", in.term);
	/* the last vote request this member answered (mongod: once it voted) */
	repl_election_participant_append(reply, "electionParticipantMetrics");
	BSON_APPEND_ARRAY_BEGIN(reply, "members", &arr);
	for (int i = 0; i < n; i++) {
		bson_t m;
		char k[16];
		int64_t id = rows[i].member_id;
		const char *h = host_at(&cfg, i, &id);
		repl_member_state_t st;
		bool unknown;
		snprintf(k, sizeof(k), "%d", i);
		if (rows[i].self)
			st = in.state;
		else if (rows[i].leader)
			st = REPL_STATE_PRIMARY;
		else
			st = REPL_STATE_SECONDARY;
		BSON_APPEND_DOCUMENT_BEGIN(&arr, k, &m);
		BSON_APPEND_INT32(&m, "_id", (int32_t)id);
		BSON_APPEND_UTF8(&m, "name", h != NULL ? h : "");
		/* another member: what its heartbeats said (cmd_repl_heartbeat.c),
		 * Raft's view where it is fresher or no heartbeat finished yet */
		if (!rows[i].self && h != NULL) {
			char why[200];
			bool failed = !rows[i].reachable && repl_member_failure_message(h, why, sizeof(why));
			bool raft_down = !rows[i].reachable && (rows[i].heard || failed);
			if (cmd_repl_hb_member_append(e, &m, h, &cfg, raft_down, failed ? why : "", rows[i].last_contact_ms,
			        now)) {
				bson_append_document_end(&arr, &m);
				continue;
			}
		}
		/* mongod's MemberData: health -1 and state UNKNOWN (6) for a
		 * member not reached yet, 0 and "(not reachable/healthy)" (state
		 * DOWN, 8) once a contact failed -- a refused handshake is a
		 * failure at once (its lastHeartbeatMessage below) */
		{
			char why[200];
			bool failed = !rows[i].reachable && h != NULL && repl_member_failure_message(h, why, sizeof(why));
			unknown = !rows[i].reachable && !rows[i].heard && !failed;
		}
		BSON_APPEND_DOUBLE(&m, "health", rows[i].reachable ? 1.0 : unknown ? -1.0 : 0.0);
		if (unknown) {
			BSON_APPEND_INT32(&m, "state", 6);
			BSON_APPEND_UTF8(&m, "stateStr", "UNKNOWN");
		} else if (!rows[i].reachable) {
			BSON_APPEND_INT32(&m, "state", 8);
			BSON_APPEND_UTF8(&m, "stateStr", "(not reachable/healthy)");
		} else {
			BSON_APPEND_INT32(&m, "state", (int32_t)st);
			BSON_APPEND_UTF8(&m, "stateStr", state_str(st));
		}
		if (rows[i].self) {
			BSON_APPEND_INT64(&m, "uptime", (now - in.start_wall_ms) / 1000);
			repl_optime_append(&m, "optime", &in.last_applied);
			BSON_APPEND_DATE_TIME(&m, "optimeDate", (int64_t)in.last_applied.secs * 1000);
			{
				/* as the single-member reply (cmd_repl.c): written is
				 * applied here; durable as heartbeats answer it */
				repl_optime_t d;
				int64_t dwall;
				repl_optime_append(&m, "optimeWritten", &in.last_applied);
				BSON_APPEND_DATE_TIME(&m, "optimeWrittenDate", (int64_t)in.last_applied.secs * 1000);
				cmd_repl_hb_durable(e, &in, &d, &dwall);
				BSON_APPEND_DATE_TIME(&m, "lastAppliedWallTime", in.last_applied_wall_ms);
				BSON_APPEND_DATE_TIME(&m, "lastDurableWallTime", dwall);
				BSON_APPEND_DATE_TIME(&m, "lastWrittenWallTime", in.last_applied_wall_ms);
			}
			BSON_APPEND_UTF8(&m, "syncSourceHost",
			    in.state != REPL_STATE_PRIMARY && leader_host != NULL ? leader_host : "");
			BSON_APPEND_INT32(&m, "syncSourceId",
			    in.state != REPL_STATE_PRIMARY && leader >= 0 ? (int32_t)rows[leader].member_id : -1);
			BSON_APPEND_UTF8(&m, "infoMessage", "");
			if (in.state == REPL_STATE_PRIMARY) {
				BSON_APPEND_TIMESTAMP(&m, "electionTime", in.election_optime.secs, in.election_optime.inc);
				BSON_APPEND_DATE_TIME(&m, "electionDate", in.election_wall_ms);
			}
			BSON_APPEND_BOOL(&m, "self", true);
			BSON_APPEND_UTF8(&m, "lastHeartbeatMessage", "");
		} else {
			/* no heartbeat finished yet, or Raft is fresher: what Raft
			 * says of the other, when it last heard of it */
			if (rows[i].last_contact_ms > 0) {
				BSON_APPEND_DATE_TIME(&m, "lastHeartbeat", rows[i].last_contact_ms);
				BSON_APPEND_DATE_TIME(&m, "lastHeartbeatRecv", rows[i].last_contact_ms);
			}
			BSON_APPEND_UTF8(&m, "syncSourceHost", rows[i].leader || unknown ? "" : (leader_host != NULL ? leader_host : ""));
			/* a member whose Raft or wire-protocol connections fail the
			 * keyFile handshake ("Authentication failed.") or TLS (its
			 * certificate refused: OpenSSL's reason): mongod's heartbeat
			 * error */
			{
				char why[200];
				BSON_APPEND_UTF8(&m, "lastHeartbeatMessage",
				    !rows[i].reachable && h != NULL && repl_member_failure_message(h, why, sizeof(why)) ?
				    why : "");
			}
		}
		BSON_APPEND_INT64(&m, "configVersion", in.config_version);
		BSON_APPEND_INT64(&m, "configTerm", in.config_term);
		bson_append_document_end(&arr, &m);
	}
	bson_append_array_end(reply, &arr);
	bson_destroy(&cfg);
	return true;
}

bool
cmd_repl_member_interrupted(cmd_t *c, const bson_t *reply, terr_t *err)
{
	engine_t *e = c->engine;
	bson_iter_t it, we, f;

	if (e->rs == NULL || e->member == NULL || !repl_set_multi_member(e->rs) || repl_set_writable(e->rs))
		return false;
	if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &we))
		return false;
	while (bson_iter_next(&we)) {
		if (bson_iter_recurse(&we, &f) && bson_iter_find(&f, "code") &&
		    bson_iter_as_int64(&f) == TERR_NOT_WRITABLE_PRIMARY) {
			terr_set(err, 11602, "operation was interrupted because a replication state change happened");
			return true;
		}
	}
	return false;
}

/* ---- write concern --------------------------------------------------------------------------------------- */

static void
wce(bson_t *reply, int code, const char *name, const char *msg, bool wtimeout)
{
	bson_t w, info;

	BSON_APPEND_DOCUMENT_BEGIN(reply, "writeConcernError", &w);
	BSON_APPEND_INT32(&w, "code", code);
	BSON_APPEND_UTF8(&w, "codeName", name);
	BSON_APPEND_UTF8(&w, "errmsg", msg);
	if (wtimeout) {
		BSON_APPEND_DOCUMENT_BEGIN(&w, "errInfo", &info);
		BSON_APPEND_BOOL(&info, "wtimeout", true);
		bson_append_document_end(&w, &info);
	}
	bson_append_document_end(reply, &w);
}

/* The ts of the newest entry host applied (its hello's lastWrite.opTime;
 * 0 when it does not answer within 1 s). */
static repl_ts_t
peer_applied(const char *host)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	terr_t err = TERR_INIT;
	repl_ts_t ts = 0;

	BSON_APPEND_INT32(&cmd, "hello", 1);
	if (repl_member_rpc(host, "admin", &cmd, 1000, &reply, &err) == 0) {
		if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "lastWrite.opTime.ts", &it) &&
		    BSON_ITER_HOLDS_TIMESTAMP(&it)) {
			uint32_t s, i;
			bson_iter_timestamp(&it, &s, &i);
			ts = REPL_TS(s, i);
		}
		bson_destroy(&reply);
	}
	terr_clear(&err);
	bson_destroy(&cmd);
	return ts;
}

/*
 * w: N counts members that applied the write's entry, as mongod's
 * replSetUpdatePosition reports do: this member (it wrote it) and each
 * other member whose hello says it applied target, asked again every 2 ms
 * (Raft's match index already says who holds the entry, so the wait is
 * for their appliers).  0 once n applied; 1 past deadline_us (0: none); 2
 * when this member stopped being primary.
 */
static int
wait_applied(engine_t *e, repl_ts_t target, int n, int64_t deadline_us)
{
	bson_t cfg;
	int total, have;
	bool done[REPL_MAX_MEMBERS] = {false};
	repl_set_info_t in;
	int rc = 1;

	repl_set_config_copy(e->rs, &cfg);
	repl_set_info(e->rs, &in);
	total = members_of(&cfg);
	for (;;) {
		struct timespec nap = {0, 2 * 1000 * 1000};
		have = 1;
		for (int i = 0; i < total && i < REPL_MAX_MEMBERS; i++) {
			const char *h = host_at(&cfg, i, NULL);
			if (h == NULL || strcmp(h, in.self_host) == 0)
				continue;
			if (!done[i] && have < n)
				done[i] = peer_applied(h) >= target;
			if (done[i])
				have++;
		}
		if (have >= n) {
			rc = 0;
			break;
		}
		if (repl_set_state(e->rs) != REPL_STATE_PRIMARY) {
			rc = 2;
			break;
		}
		if ((deadline_us > 0 && tm_now_us() >= deadline_us) || engine_shutdown_requested(e))
			break;
		nanosleep(&nap, NULL);
	}
	bson_destroy(&cfg);
	return rc;
}

/* members[i].tags[key] of cfg when it is a string, or NULL. */
static const char *
tag_at(const bson_t *cfg, int i, const char *key)
{
	bson_iter_t it, m, t;
	char idx[16];

	snprintf(idx, sizeof(idx), "%d", i);
	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m) || !bson_iter_find(&m, idx) ||
	    !BSON_ITER_HOLDS_DOCUMENT(&m) || !bson_iter_recurse(&m, &t) || !bson_iter_find(&t, "tags") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&t) || !bson_iter_recurse(&t, &it) || !bson_iter_find(&it, key) ||
	    !BSON_ITER_HOLDS_UTF8(&it))
		return NULL;
	return bson_iter_utf8(&it, NULL);
}

/* Does the set of members done[] (self included) meet mode {tag: n, ...}:
 * for each tag, n distinct values among their tags (mongod's
 * ReplSetTagPattern)? */
static bool
mode_met(const bson_t *cfg, int total, const bool *done, const bson_t *mode)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, mode))
		return false;
	while (bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it), *vals[REPL_MAX_MEMBERS];
		int64_t need = BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 1;
		int nv = 0;
		for (int i = 0; i < total && i < REPL_MAX_MEMBERS; i++) {
			const char *v = done[i] ? tag_at(cfg, i, key) : NULL;
			bool seen = false;
			for (int k = 0; v != NULL && k < nv; k++)
				seen = seen || strcmp(vals[k], v) == 0;
			if (v != NULL && !seen)
				vals[nv++] = v;
		}
		if (nv < need)
			return false;
	}
	return true;
}

/*
 * w: "<mode>" of settings.getLastErrorModes: wait until the members that
 * applied target (this one, which wrote it, and each other whose hello
 * says so, asked every 2 ms) meet the mode.  Codes as wait_applied; a mode
 * that is not in the configuration was refused before the write (79).
 */
static int
wait_mode(engine_t *e, repl_ts_t target, const char *name, int64_t deadline_us)
{
	bson_t cfg, mode;
	bson_iter_t it, s, modes;
	bool done[REPL_MAX_MEMBERS] = {false};
	repl_set_info_t in;
	int total, rc = 1;
	const uint8_t *d;
	uint32_t l;

	repl_set_config_copy(e->rs, &cfg);
	repl_set_info(e->rs, &in);
	total = members_of(&cfg);
	if (!bson_iter_init_find(&it, &cfg, "settings") || !bson_iter_recurse(&it, &s) ||
	    !bson_iter_find(&s, "getLastErrorModes") || !bson_iter_recurse(&s, &modes) ||
	    !bson_iter_find(&modes, name) || !BSON_ITER_HOLDS_DOCUMENT(&modes)) {
		bson_destroy(&cfg);
		return 0;   /* gone with a reconfig meanwhile: nothing to wait for */
	}
	bson_iter_document(&modes, &l, &d);
	bson_init_static(&mode, d, l);
	for (int i = 0; i < total && i < REPL_MAX_MEMBERS; i++) {
		const char *h = host_at(&cfg, i, NULL);
		done[i] = h != NULL && strcmp(h, in.self_host) == 0;
	}
	for (;;) {
		struct timespec nap = {0, 2 * 1000 * 1000};
		if (mode_met(&cfg, total, done, &mode)) {
			rc = 0;
			break;
		}
		for (int i = 0; i < total && i < REPL_MAX_MEMBERS; i++) {
			const char *h = host_at(&cfg, i, NULL);
			if (h != NULL && !done[i])
				done[i] = peer_applied(h) >= target;
		}
		if (mode_met(&cfg, total, done, &mode)) {
			rc = 0;
			break;
		}
		if (repl_set_state(e->rs) != REPL_STATE_PRIMARY) {
			rc = 2;
			break;
		}
		if ((deadline_us > 0 && tm_now_us() >= deadline_us) || engine_shutdown_requested(e))
			break;
		nanosleep(&nap, NULL);
	}
	bson_destroy(&cfg);
	return rc;
}

static bool wait_write_loop(engine_t *e, const concern_write_t *wc, bool tagged, bool count, repl_ts_t target,
                            int64_t t, int64_t deadline, bson_t *reply);

bool
cmd_repl_member_wait_write(cmd_t *c, const concern_write_t *wc, int64_t start_term, bson_t *reply)
{
	engine_t *e = c->engine;
	repl_oplog_optime_t last;
	repl_ts_t target;
	int64_t deadline = 0;
	int n = repl_set_member_count(e->rs);
	bool failed;

	if (e->member == NULL || n <= 1 || strcmp(c->db, "local") == 0)
		return false;
	/* w: 0 / 1 ask for nothing more; absent: mongod's implicit default,
	 * majority */
	if (wc->present && wc->has_w && wc->w_mode[0] == '\0' && !wc->w_tags && wc->w_num <= 1)
		return false;
	/* inside a transaction only its commit or abort waits (mongod refuses
	 * a writeConcern on the other statements) */
	{
		bson_iter_t it;
		if (cmd_find_field(c, "autocommit", &it) && strcmp(c->name, "commitTransaction") != 0 &&
		    strcmp(c->name, "abortTransaction") != 0)
			return false;
	}
	if (wc->present && wc->has_w && wc->w_mode[0] == '\0' && !wc->w_tags && wc->w_num > n)
		return false;   /* unsatisfiable: cmd_repl_after answers 100 */
	if (wc->present && wc->w_tags)
		return false;   /* tag modes: cmd_repl_after's checks */
	bool count = wc->present && wc->has_w && wc->w_mode[0] == '\0' && wc->w_num > 1;
	/* a getLastErrorModes mode: its tags, not a majority */
	bool tagged = wc->present && wc->w_mode[0] != '\0' && strcmp(wc->w_mode, "majority") != 0;
	/* this write's entry is at or below the clock; once everything up to
	 * the clock is visible, the newest visible entry is at or past it */
	repl_oplog_wait_visible(e->oplog, repl_clock_now(e->clock), 1000);
	last = repl_oplog_last_optime(e->oplog);
	target = last.ts;
	/* the newest entry is of a term after the one this command wrote in:
	 * the member stepped down meanwhile (and was elected again), so its
	 * write may have been rolled back, and the newer term's commit says
	 * nothing of it (mongod interrupts the operation at the stepdown) */
	if (start_term > 0 && last.t > start_term) {
		wce(reply, 11602, "InterruptedDueToReplStateChange",
		    "operation was interrupted because a replication state change happened", false);
		return true;
	}
	if (wc->present && wc->wtimeout > 0)
		deadline = tm_now_us() + wc->wtimeout * 1000;
	/* one of mongod's replication waiters while it waits
	 * (serverStatus().metrics.repl.waiters.replication) */
	cmd_repl_waiter_add(CMD_REPL_WAITER_REPLICATION, 1);
	failed = wait_write_loop(e, wc, tagged, count, target, last.t, deadline, reply);
	cmd_repl_waiter_add(CMD_REPL_WAITER_REPLICATION, -1);
	return failed;
}

/* The wait of cmd_repl_member_wait_write: true with a writeConcernError
 * in reply when it failed. */
static bool
wait_write_loop(engine_t *e, const concern_write_t *wc, bool tagged, bool count, repl_ts_t target, int64_t t,
                int64_t deadline, bson_t *reply)
{
	for (;;) {
		int64_t step = tm_now_us() + 100 * 1000;
		int64_t until = deadline > 0 && deadline < step ? deadline : step;
		int r = tagged ? wait_mode(e, target, wc->w_mode, deadline) :
		    count ? repl_member_wait_count(e->member, target, (int)wc->w_num, until) :
		    repl_member_wait_committed(e->member, target, t, until);
		if (r == 0 && count)
			r = wait_applied(e, target, (int)wc->w_num, deadline);
		if (r == 0)
			return false;
		if (r == 2) {
			wce(reply, 11602, "InterruptedDueToReplStateChange",
			    "operation was interrupted because a replication state change happened", false);
			return true;
		}
		if (deadline > 0 && tm_now_us() >= deadline) {
			wce(reply, 64, "WriteConcernFailed", "waiting for replication timed out", true);
			return true;
		}
		if (engine_shutdown_requested(e)) {
			wce(reply, 11600, "InterruptedAtShutdown", "interrupted at shutdown", false);
			return true;
		}
	}
}
