/*
 * cmd_repl_reconfig.c -- replSetReconfig (and so mongosh's rs.add,
 * rs.remove, rs.reconfig) for a replica set of several members (issue 24),
 * on canonical/raft's membership changes (repl/raft_reconfig.h).
 *
 * On the primary, in order: mongod's checks (validateConfigForReconfig and
 * the reconfig command's own: 10107 not primary, 93 an invalid
 * configuration, 103 for a version and term not above the current ones,
 * another set name or replicaSetId, a host moved to another _id,
 * buildIndexes or arbiterOnly changed, more than one voting member added or
 * removed (mongod answers every validateConfigForReconfig failure with
 * 103); then, as mongod finds itself in the new configuration, 74 when no
 * member of it is this node -- the primary cannot be removed --, 104
 * NodeNotElectable when this node would not be electable (mongod's
 * checkElectable on a non-force reconfig: a primary cannot make itself
 * priority 0); 109 while another reconfig runs); then every new member is
 * handed the completed configuration (`_tamgaReplSetJoin`, a dry run first:
 * 74 when one does not answer or has data of its own, 103 when it belongs
 * to another set: cmd_repl_member_join_veto); then the Raft
 * changes, one at a time (a removed member leaves Raft's configuration, a
 * new one is added and caught up from the log before it votes, a votes
 * change is a role change); last, the configuration itself travels in the
 * set's log ({_tamgaConfig: cfg}), so every member adopts it in log order
 * (cmd_repl_member_on_config) and the command answers once this node did.
 *
 * A new member needs no data: it starts with an empty Raft log and an
 * empty oplog and applies the set's log from its first entry, or, once the
 * leader's log is compacted, gets the leader's snapshot and copies the data
 * (an initial sync, repl/initial_sync.h), STARTUP2 meanwhile.  A removed
 * member added again keeps its data: it takes the configuration in its
 * REMOVED state (cmd_repl_member.c's readd_self) and catches up as any
 * member coming back; one removed while it could not hear it is told first
 * (tell_removed).  A forced reconfig is cmd_repl_force.c's.  A member
 * moved to another host under its _id (stopped, started on the new
 * host with its data: REMOVED there, its stored configuration naming the
 * old host) is handed the configuration as a removed member added again
 * and changes its Raft address (a removal, then an addition of the same
 * Raft id at the new address).  Once
 * the new configuration
 * is adopted, each removed member is handed it (`_tamgaReplSetRemoved`,
 * best effort: mongod's member learns it from a heartbeat) and goes
 * REMOVED (state 10, repl/replset.h).
 *
 * A set initiated with one member runs without Raft; a reconfig that adds
 * members to it (rs.add(), as mongod's users build a set) moves it onto
 * Raft first (cmd_repl_member_grow, at the end of this file): checks and
 * the quorum check's dry run, then Raft with this node as its only voter,
 * then the reconfig above, which compacts the moved set's log first so
 * the new members copy the data.
 */
#include "commands/cmd_repl_member.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/opctx.h"
#include "repl/member_rejoin.h"
#include "repl/member_rpc.h"
#include "repl/raft_member.h"
#include "repl/raft_reconfig.h"
#include "repl/replset.h"

#define RECONFIG_TIMEOUT_MS 60000

typedef struct row {
	int64_t id;
	char host[256];
	member_opts_t o;
} row_t;

/* The members of cfg; returns their count (at most REPL_MAX_MEMBERS). */
static int
rows_of(const bson_t *cfg, row_t *rows)
{
	bson_iter_t it, m, f;
	int n = 0;

	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return 0;
	while (bson_iter_next(&m) && n < REPL_MAX_MEMBERS) {
		row_t *r = &rows[n];
		memset(r, 0, sizeof(*r));
		if (bson_iter_recurse(&m, &f)) {
			while (bson_iter_next(&f)) {
				if (strcmp(bson_iter_key(&f), "_id") == 0)
					r->id = bson_iter_as_int64(&f);
				else if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
					bson_strncpy(r->host, bson_iter_utf8(&f, NULL), sizeof(r->host));
			}
		}
		member_opts_at(cfg, n, &r->o);
		n++;
	}
	return n;
}

static const row_t *
by_id(const row_t *rows, int n, int64_t id)
{
	for (int i = 0; i < n; i++)
		if (rows[i].id == id)
			return &rows[i];
	return NULL;
}

/* r is a member the old configuration (orow) does not have under its _id,
 * or has at another host (moved). */
static bool
is_new_or_moved(const row_t *orow, int on, const row_t *r)
{
	const row_t *o = by_id(orow, on, r->id);

	return o == NULL || strcmp(o->host, r->host) != 0;
}

static int64_t
int_field(const bson_t *cfg, const char *k, int64_t dflt)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, cfg, k) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : dflt;
}

static const char *
str_field(const bson_t *cfg, const char *k)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, cfg, k) && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "";
}

void
cmd_repl_member_self_role(const bson_t *cfg, const char *self_host, bool *no_lead, int64_t *delay_secs)
{
	row_t rows[REPL_MAX_MEMBERS];
	int n = rows_of(cfg, rows);

	*no_lead = false;
	*delay_secs = 0;
	for (int i = 0; i < n; i++) {
		if (self_host == NULL || strcmp(rows[i].host, self_host) != 0)
			continue;
		/* mongod never elects a member with priority 0 (hidden and
		 * delayed members must have it) */
		*no_lead = rows[i].o.priority == 0 || rows[i].o.votes == 0 || rows[i].o.arbiter;
		*delay_secs = rows[i].o.delay_secs;
	}
}

/* ---- adopting a configuration from the set's log -------------------------------------------------- */

void
cmd_repl_member_on_config(void *arg, const bson_t *entry)
{
	engine_t *e = arg;
	bson_iter_t it;
	bson_t cfg;
	const uint8_t *d;
	uint32_t l;
	repl_member_peer_t *peers = NULL;
	repl_set_info_t in;
	terr_t err = TERR_INIT;
	int n = 0, self = -1;
	bool no_lead;
	int64_t delay;

	if (!bson_iter_init_find(&it, entry, REPL_MEMBER_CONFIG_KEY) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return;
	bson_iter_document(&it, &l, &d);
	if (!bson_init_static(&cfg, d, l))
		return;
	repl_set_info(e->rs, &in);
	/* the log replays older configurations to a member that catches up */
	if (int_field(&cfg, "version", 0) < in.config_version)
		return;
	if (repl_set_config_replace(e->rs, &cfg, &err) != 0 ||
	    repl_member_peers(&cfg, in.self_host, &peers, &n, &self, &err) != 0) {
		tlog('E', "REPL", 5000260, err.msg ? err.msg : "could not adopt a new replica set configuration", NULL);
		terr_clear(&err);
		bson_free(peers);
		return;
	}
	cmd_repl_member_self_role(&cfg, in.self_host, &no_lead, &delay);
	if (self < 0) {
		/* removed from the set: REMOVED (repl_set_config_replace); its
		 * Raft server is stopped by the configuration watch (this is one
		 * of the server's own threads, which cannot join itself) */
		tlog('W', "REPL", 5000261, "this member is not in the new replica set configuration", NULL);
		cmd_repl_watch_poke(e);
	} else if (e->member != NULL) {
		repl_member_reconfigure(e->member, peers, n, self, no_lead, delay);
	}
	{
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "version", int_field(&cfg, "version", 0));
		BSON_APPEND_INT32(&attr, "members", n);
		tlog('I', "REPL", 5000262, "new replica set configuration", &attr);
		bson_destroy(&attr);
	}
	bson_free(peers);
}

/* ---- replSetReconfig -------------------------------------------------------------------------------------- */

static pthread_mutex_t reconfig_mu = PTHREAD_MUTEX_INITIALIZER;

/* mongod's checks of old -> new (see the file's comment). */
static int
check_reconfig(engine_t *e, const bson_t *old, const bson_t *cfg, int64_t term, terr_t *err)
{
	row_t orow[REPL_MAX_MEMBERS], nrow[REPL_MAX_MEMBERS];
	int on = rows_of(old, orow), nn = rows_of(cfg, nrow), self = -1, vdiff = 0;
	int64_t version = int_field(cfg, "version", 0), over = int_field(old, "version", 1);
	int64_t oterm = int_field(old, "term", 1);
	repl_set_info_t in;
	bson_oid_t a, b;
	char vt[96];

	repl_set_info(e->rs, &in);
	snprintf(vt, sizeof(vt), "{version: %lld, term: %lld}", (long long)version, (long long)term);
	{
		int idx = -1;
		bool validate;
		if (repl_set_config_check_stage(cfg, repl_set_name(e->rs), in.self_host, false, &idx, &validate,
		    err) != 0) {
			/* this node missing: answered below, after the checks of
			 * old against new (mongod finds itself in the new
			 * configuration once validateConfigForReconfig passed);
			 * the whole set's faults are 103 as mongod's, a field's 93 */
			if (err->code == TERR_NODE_NOT_FOUND)
				terr_clear(err);
			else if (validate)
				err->code = TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE;
			else if (err->code != TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE)
				err->code = TERR_INVALID_REPLICA_SET_CONFIG;
			if (err->code != 0)
				return -1;
		}
	}
	for (int i = 0; i < nn; i++)
		if (strcmp(nrow[i].host, in.self_host) == 0)
			self = i;
	/* version and term, as mongod's ConfigVersionAndTerm; mongod's new
	 * primary writes its term into the configuration at each election, so
	 * the current configuration's term is the set's term */
	oterm = term;
	if (version <= over)
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New replica set configuration version and term must be greater than old, but %s is not greater than {version: %lld, term: %lld} for replica set %s",
		    vt, (long long)over, (long long)oterm, repl_set_name(e->rs));
	if (strcmp(str_field(old, "_id"), str_field(cfg, "_id")) != 0)
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New and old configurations differ in replica set name; old was %s, and new is %s",
		    str_field(old, "_id"), str_field(cfg, "_id"));
	if (cmd_repl_member_config_rsid(cfg, &b) && cmd_repl_member_config_rsid(old, &a) && !bson_oid_equal(&a, &b)) {
		char sa[25], sb[25];
		bson_oid_to_string(&a, sa);
		bson_oid_to_string(&b, sb);
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New and old configurations differ in replica set ID; old was %s, and new is %s", sa, sb);
	}
	for (int i = 0; i < nn; i++) {
		for (int j = 0; j < on; j++) {
			bool ids = nrow[i].id == orow[j].id, hosts = strcmp(nrow[i].host, orow[j].host) == 0;
			if (!ids && !hosts)
				continue;
			if (hosts && !ids)
				return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
				    "New and old configurations both have members with host of %s but in the new configuration the _id field is MemberId(%lld) and in the old configuration it is MemberId(%lld) for replica set %s",
				    orow[j].host, (long long)nrow[i].id, (long long)orow[j].id, repl_set_name(e->rs));
			if (!hosts) {
				/* a member moved to another host under its _id (mongod
				 * takes it): its Raft address changes with it (a removal
				 * and an addition in Raft, below); it may not be this node */
				if (strcmp(orow[j].host, in.self_host) == 0)
					return terr_set(err, TERR_NODE_NOT_FOUND,
					    "No host described in new configuration with %s for replica set %s maps to this node", vt,
					    repl_set_name(e->rs));
				continue;
			}
			if (nrow[i].o.build_indexes != orow[j].o.build_indexes)
				return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
				    "New and old configurations differ in the setting of the buildIndexes field for member %s; to make this change, remove then re-add the member",
				    orow[j].host);
			if (nrow[i].o.arbiter != orow[j].o.arbiter)
				return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
				    "New and old configurations differ in the setting of the arbiterOnly field for member %s; to make this change, remove then re-add the member",
				    orow[j].host);
		}
	}
	/* at most one voting member in or out (the symmetric difference of the
	 * voters' _ids) */
	for (int i = 0; i < nn; i++) {
		const row_t *o = by_id(orow, on, nrow[i].id);
		if (nrow[i].o.votes > 0 && (o == NULL || o->o.votes == 0))
			vdiff++;
	}
	for (int j = 0; j < on; j++) {
		const row_t *n = by_id(nrow, nn, orow[j].id);
		if (orow[j].o.votes > 0 && (n == NULL || n->o.votes == 0))
			vdiff++;
	}
	/* 103: mongod answers every validateConfigForReconfig failure so */
	if (vdiff > 1)
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "Non force replica set reconfig can only add or remove at most 1 voting member.");
	for (int i = 0; i < nn; i++)
		if (nrow[i].o.arbiter)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "arbiters are not supported in a replica set of several members (every member bears data)");
	if (self < 0)
		return terr_set(err, TERR_NODE_NOT_FOUND,
		    "No host described in new configuration with %s for replica set %s maps to this node", vt,
		    repl_set_name(e->rs));
	/* mongod's checkElectable on a non-force reconfig (104 as it is; a
	 * primary may not make itself priority 0: it steps down first) */
	if (nrow[self].o.priority <= 0 || nrow[self].o.votes == 0 || nrow[self].o.arbiter || nrow[self].o.hidden)
		return terr_set(err, TERR_NODE_NOT_ELECTABLE,
		    "This node, %s, with _id MemberId(%lld) is not electable under the new configuration with %s for replica set %s",
		    nrow[self].host, (long long)nrow[self].id, vt, repl_set_name(e->rs));
	return 0;
}

/*
 * A member being added answered the join with 23: it holds a configuration
 * of this set older than the new one (cmd_repl_member_join_veto let it
 * pass).  It was removed while it could not hear it (down, cut off: the
 * hand-over of `_tamgaReplSetRemoved` is best effort) and still believes
 * itself a member.  When this primary's Raft configuration names neither
 * its new _id nor its Raft address (and no change is pending), its Raft
 * log counts for nothing in the set: it is handed the current
 * configuration, which leaves it out, and goes REMOVED (mongod's member
 * learns the same from a heartbeat).  true when it did.
 */
static bool
tell_removed(engine_t *e, const bson_t *cur, int64_t id, const char *host, const char *raft_addr,
             int64_t deadline_us)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	terr_t re = TERR_INIT;
	bool ok = false;

	if (e->member == NULL || repl_member_raft_config_has(e->member, id, raft_addr, deadline_us) != 0) {
		bson_destroy(&cmd);
		return false;
	}
	BSON_APPEND_DOCUMENT(&cmd, "_tamgaReplSetRemoved", cur);
	if (repl_member_rpc(host, "admin", &cmd, 5000, &reply, &re) == 0) {
		ok = bson_iter_init_find(&it, &reply, "ok") && bson_iter_as_double(&it) == 1.0;
		bson_destroy(&reply);
	}
	terr_clear(&re);
	bson_destroy(&cmd);
	if (ok) {
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_UTF8(&attr, "member", host);
		tlog('I', "REPL", 5000264, "a member removed while it could not hear it was told, before it is added again",
		    &attr);
		bson_destroy(&attr);
	}
	return ok;
}

/* A reconfig's configurations: the stored one (old, its rows orow), the new
 * one completed (full, version; its rows nrow and Raft peers), the term they
 * were checked at.  Owned by the reconfig: plan_free. */
typedef struct plan {
	bson_t old;
	bson_t *full;
	row_t orow[REPL_MAX_MEMBERS], nrow[REPL_MAX_MEMBERS];
	repl_member_peer_t *peers;
	int on, nn, np, pself;
	int64_t term, version;
} plan_t;

#define PLAN_INIT {.old = BSON_INITIALIZER, .pself = -1}

/* The stored configuration and cfg checked as mongod checks a safe
 * reconfig (check_reconfig), cfg completed and read into rows and peers.
 * 0, or -1 with err (p keeps what it took: plan_free). */
static int
plan_prepare(engine_t *e, const bson_t *cfg, plan_t *p, terr_t *err)
{
	bson_destroy(&p->old);
	repl_set_config_copy(e->rs, &p->old);
	p->term = repl_set_term(e->rs);
	RET(check_reconfig(e, &p->old, cfg, p->term, err));
	p->version = int_field(cfg, "version", 0);
	p->full = repl_set_config_completed_for(cfg, p->version, p->term, &p->old);
	p->on = rows_of(&p->old, p->orow);
	p->nn = rows_of(p->full, p->nrow);
	return repl_member_peers(p->full, NULL, &p->peers, &p->np, &p->pself, err);
}

static void
plan_free(plan_t *p)
{
	bson_free(p->peers);
	if (p->full != NULL)
		bson_destroy(p->full);
	bson_destroy(&p->old);
}

/*
 * The configuration full (version) handed to each member of nrow that orow
 * does not have (or has at another host): a dry run to all, then, with
 * passes 2, for real.  0 when all of them took it; -1 with err: mongod's
 * quorum-check vetoes (103, cmd_repl_member_join_veto), else 74 with its
 * quorum message.  A member removed while it could not hear it (23) is
 * told first when this node runs Raft (tell_removed).
 */
static int
hand_over(engine_t *e, const bson_t *old, const row_t *orow, int on, const row_t *nrow, int nn,
          const repl_member_peer_t *peers, const bson_t *full, int64_t version, int passes, int64_t deadline,
          terr_t *err)
{
	int ret = 0;

	for (int pass = 0; pass < passes && ret == 0; pass++) {
		for (int i = 0; i < nn && ret == 0; i++) {
			terr_t je = TERR_INIT;
			uint64_t lt = 0, li = 0;
			if (!is_new_or_moved(orow, on, &nrow[i]))
				continue;
			/* the real hand-over carries this primary's last Raft log
			 * point, read after the dry run: the new member's minValid
			 * (repl/raft_min_valid.h); none when it cannot be read */
			if (pass == 1 && (e->member == NULL ||
			    repl_member_lead_point(e->member, &lt, &li, tm_now_us() + 2000000) != 0))
				lt = li = 0;
			if (cmd_repl_member_join(nrow[i].host, full, pass == 0, li, lt, &je) != 0 &&
			    cmd_repl_member_join_veto(nrow[i].host, &je, version, err)) {
				terr_clear(&je);
				ret = -1;
			} else if (terr_is_set(&je) && pass == 0 && je.code == TERR_ALREADY_INITIALIZED &&
			    tell_removed(e, old, nrow[i].id, nrow[i].host, peers[i].raft_addr, deadline)) {
				/* a member removed while it could not hear it: REMOVED now,
				 * it takes the join as a removed member added again */
				terr_clear(&je);
				if (cmd_repl_member_join(nrow[i].host, full, true, 0, 0, &je) != 0)
					ret = terr_set(err, TERR_NODE_NOT_FOUND,
					    "Quorum check failed because not all proposed set members responded affirmatively: %s failed with %s",
					    nrow[i].host, je.msg ? je.msg : "no answer");
				terr_clear(&je);
			} else if (terr_is_set(&je)) {
				ret = terr_set(err, TERR_NODE_NOT_FOUND,
				    "Quorum check failed because not all proposed set members responded affirmatively: %s failed with %s",
				    nrow[i].host, je.msg ? je.msg : "no answer");
				terr_clear(&je);
			}
		}
	}
	return ret;
}

/* Whether the n changes add a member to Raft. */
static bool
has_add(const repl_member_change_t *ch, int n)
{
	for (int i = 0; i < n; i++)
		if (ch[i].op == REPL_CHANGE_ADD)
			return true;
	return false;
}

int
cmd_repl_member_reconfig(cmd_t *c, const bson_t *cfg, bool force, terr_t *err)
{
	engine_t *e = c->engine;
	bson_t entry = BSON_INITIALIZER;
	plan_t p = PLAN_INIT;
	repl_member_change_t ch[REPL_MAX_MEMBERS * 2];
	int nch = 0, ret = 0;
	int64_t deadline = tm_now_us() + (int64_t)RECONFIG_TIMEOUT_MS * 1000;

	/* mongod lets a forced reconfig through on any member (cmd_repl_force.c) */
	if (force)
		return cmd_repl_member_force_reconfig(c, cfg, err);
	if (repl_set_state(e->rs) != REPL_STATE_PRIMARY)
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY,
		    "Safe reconfig is only allowed on a writable PRIMARY. Current state is %s",
		    repl_state_name(repl_set_state(e->rs)));
	if (pthread_mutex_trylock(&reconfig_mu) != 0)
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
	if (c->deadline_us > 0 && c->deadline_us < deadline)
		deadline = c->deadline_us;
	if (plan_prepare(e, cfg, &p, err) != 0) {
		ret = -1;
		goto done;
	}
	/* new members first get the configuration (all of them answer, or
	 * nothing changes) */
	if (hand_over(e, &p.old, p.orow, p.on, p.nrow, p.nn, p.peers, p.full, p.version, 2, deadline, err) != 0) {
		ret = -1;
		goto done;
	}
	/* Raft's changes: removals, then role changes, then additions */
	for (int j = 0; j < p.on; j++) {
		const row_t *n = by_id(p.nrow, p.nn, p.orow[j].id);
		/* removed, or moved to another host (added again below) */
		if (n == NULL || strcmp(n->host, p.orow[j].host) != 0)
			ch[nch++] = (repl_member_change_t){.op = REPL_CHANGE_REMOVE, .member_id = p.orow[j].id};
	}
	for (int i = 0; i < p.nn; i++) {
		const row_t *o = by_id(p.orow, p.on, p.nrow[i].id);
		if (o != NULL && strcmp(o->host, p.nrow[i].host) == 0 && (o->o.votes > 0) != (p.nrow[i].o.votes > 0))
			ch[nch++] = (repl_member_change_t){.op = REPL_CHANGE_ASSIGN, .member_id = p.nrow[i].id,
			    .voter = p.nrow[i].o.votes > 0};
	}
	for (int i = 0; i < p.nn; i++) {
		if (!is_new_or_moved(p.orow, p.on, &p.nrow[i]))
			continue;
		ch[nch] = (repl_member_change_t){.op = REPL_CHANGE_ADD, .member_id = p.nrow[i].id, .voter = p.nrow[i].o.votes > 0};
		bson_strncpy(ch[nch].raft_addr, p.peers[i].raft_addr, sizeof(ch[nch].raft_addr));
		nch++;
	}
	/* a set of one member moved onto Raft (cmd_repl_member_grow) that takes
	 * its first new members: its Raft log must start at a snapshot, else a
	 * new member would replay the log from its first entry and miss the
	 * data written before the move (raft_member.h, repl_member_compact).
	 * The Raft folder's mark says so, across a restart too, until done */
	if (p.on == 1 && p.nn > 1 && e->raft_dir != NULL && repl_rejoin_compact_pending(e->raft_dir)) {
		if (repl_member_compact(e->member, false, deadline, err) != 0) {
			ret = -1;
			goto done;
		}
		if (repl_rejoin_set_compact_pending(e->raft_dir, false, err) != 0) {
			ret = -1;
			goto done;
		}
	} else if (has_add(ch, nch) && repl_member_compact(e->member, true, deadline, err) != 0) {
		/* any other set taking members: a snapshot whose configuration
		 * lacks this leader is replaced first, so a member added never
		 * holds a configuration without its leader (one that restarted
		 * there would drop that leader's messages, or elect itself the
		 * snapshot's single voter) */
		ret = -1;
		goto done;
	}
	if (repl_member_change_apply(e->member, ch, nch, deadline, err) != 0) {
		ret = -1;
		goto done;
	}
	/* the configuration itself, in the set's log; this node answers once
	 * it adopted it */
	BSON_APPEND_DOCUMENT(&entry, REPL_MEMBER_CONFIG_KEY, p.full);
	if (repl_member_submit_config(e->member, &entry) != 0) {
		ret = terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary: the new configuration was not replicated");
		goto done;
	}
	for (;;) {
		repl_set_info_t in;
		struct timespec nap = {0, 5 * 1000 * 1000};
		repl_set_info(e->rs, &in);
		if (in.config_version >= p.version)
			break;
		if (tm_now_us() >= deadline) {
			ret = terr_set(err, TERR_NODE_NOT_FOUND, "the new configuration was not committed in time");
			break;
		}
		nanosleep(&nap, NULL);
	}
	/* each removed member learns it (mongod's learns it from a heartbeat):
	 * it goes REMOVED; one that does not answer stays as it was */
	for (int j = 0; ret == 0 && j < p.on; j++) {
		bson_t cmd = BSON_INITIALIZER, reply;
		terr_t re = TERR_INIT;
		if (by_id(p.nrow, p.nn, p.orow[j].id) != NULL)
			continue;
		BSON_APPEND_DOCUMENT(&cmd, "_tamgaReplSetRemoved", p.full);
		if (repl_member_rpc(p.orow[j].host, "admin", &cmd, 5000, &reply, &re) == 0)
			bson_destroy(&reply);
		terr_clear(&re);
		bson_destroy(&cmd);
	}
done:
	plan_free(&p);
	bson_destroy(&entry);
	pthread_mutex_unlock(&reconfig_mu);
	return ret;
}

/* ---- a set initiated with one member grows ------------------------------------------------------- */

/* How long the move waits for Raft's single voter to become PRIMARY. */
#define GROW_ELECT_MS 30000

/* The single-member path's primary taken back when Raft could not start or
 * elect: its server halted, its folder emptied, the single member elected
 * again (nothing was written on Raft's behalf that the set needs). */
static void
grow_undo(engine_t *e)
{
	terr_t err = TERR_INIT;

	if (cmd_repl_member_retire(e, &err) != 0)
		terr_clear(&err);
	if (e->raft_dir != NULL && repl_rejoin_clear_raft_dir(e->raft_dir, &err) != 0) {
		tlog('W', "REPL", 5000312, err.msg ? err.msg : "could not empty the Raft folder", NULL);
		terr_clear(&err);
	}
	repl_set_move_back(e->rs);
	tlog('W', "REPL", 5000313, "the set stays a single member without Raft: Raft did not start or elect", NULL);
}

int
cmd_repl_member_grow(cmd_t *c, const bson_t *cfg, terr_t *err)
{
	engine_t *e = c->engine;
	plan_t p = PLAN_INIT;
	int ret = 0;
	int64_t deadline = tm_now_us() + (int64_t)RECONFIG_TIMEOUT_MS * 1000;

	if (pthread_mutex_trylock(&reconfig_mu) != 0)
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
	if (c->deadline_us > 0 && c->deadline_us < deadline)
		deadline = c->deadline_us;
	if (e->member != NULL) {
		ret = terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
		goto done;
	}
	if (e->oplog == NULL || e->raft_dir == NULL) {
		ret = terr_set(err, TERR_NOT_IMPLEMENTED, "a replica set of several members needs tamgad with a data folder");
		goto done;
	}
	if (plan_prepare(e, cfg, &p, err) != 0) {
		ret = -1;
		goto done;
	}
	/* mongod's quorum check before anything changes: every new member
	 * answers the dry run of the hand-over (74 when one does not, or holds
	 * data of its own; 103 when it is of another set) -- the set stays as
	 * it was, without Raft */
	if (hand_over(e, &p.old, p.orow, p.on, p.nrow, p.nn, p.peers, p.full, p.version, 1, deadline, err) != 0) {
		ret = -1;
		goto done;
	}
	/* the move: the single member stops taking writes, Raft starts with it
	 * as its only voter (its term above the set's) and elects it */
	if (repl_set_move_to_raft(e->rs, err) != 0) {
		ret = -1;
		goto done;
	}
	{
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "term", p.term);
		BSON_APPEND_INT32(&attr, "newMembers", p.nn - p.on);
		tlog('I', "REPL", 5000311, "moving a set of one member onto Raft before members are added", &attr);
		bson_destroy(&attr);
	}
	if (cmd_repl_member_start_moved(e, &p.old, p.term, err) != 0) {
		char *msg = bson_strdup(err->msg != NULL ? err->msg : "");
		repl_set_move_back(e->rs);
		/* e.g. Raft's port (this member's port + 1000) taken */
		ret = terr_set(err, err->code != 0 ? err->code : TERR_INTERNAL_ERROR,
		    "the set could not be moved onto Raft and stays a single member without it (Raft listens on this "
		    "member's port + %d): %s", REPL_RAFT_PORT_OFFSET, msg);
		bson_free(msg);
		goto done;
	}
	{
		int64_t until = tm_now_us() + (int64_t)GROW_ELECT_MS * 1000;
		if (until > deadline)
			until = deadline;
		while (repl_set_state(e->rs) != REPL_STATE_PRIMARY && tm_now_us() < until) {
			struct timespec nap = {0, 10 * 1000 * 1000};
			nanosleep(&nap, NULL);
		}
		if (repl_set_state(e->rs) != REPL_STATE_PRIMARY) {
			grow_undo(e);
			ret = terr_set(err, TERR_EXCEEDED_TIME_LIMIT,
			    "the set could not be moved onto Raft: its single member was not elected in time");
			goto done;
		}
	}
done:
	plan_free(&p);
	pthread_mutex_unlock(&reconfig_mu);
	if (ret != 0)
		return ret;
	/* the set is an ordinary one-voter Raft set now: the reconfig runs as
	 * in any set of several (the hand-over, Raft's changes with the log
	 * compacted first, the configuration through the log).  Should it fail
	 * from here (a new member gone meanwhile), the set stays a working
	 * one-voter Raft set, primary, its configuration unchanged. */
	return cmd_repl_member_reconfig(c, cfg, false, err);
}
