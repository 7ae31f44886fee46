/*
 * cmd_repl_force.c -- replSetReconfig {force: true} in a replica set of
 * several members (issue 24), and the configuration watch that keeps the
 * members a forced configuration leaves out from going on with the old
 * one (src/repl/README.md, "Forced reconfig").
 *
 * mongod takes a forced reconfig on any member (a secondary cut off from
 * the majority, typically), checks the configuration as any reconfig but
 * for the one-voter-at-a-time and the primary rules, and raises its
 * version by 10000 + a random number below 100000 (its term: -1), so the
 * members that learn it later take it over theirs.  Here the membership is
 * also Raft's: the member that receives it halts its Raft server, forces
 * the new configuration into its own Raft log (canonical/raft's
 * raft_recover, on the same folder: the configuration becomes the log's
 * newest entry) and starts it again, then stores and adopts the
 * configuration; the other members the configuration names are handed it
 * (`_tamgaReplSetForce`, best effort) and do the same.  A one-voter
 * configuration elects this member at once (Raft's single voter), which
 * commits what its log holds.
 *
 * The configuration watch (a thread per node once it has a configuration
 * of several members) asks the members of its configuration for their
 * `hello` every WATCH_PERIOD_MS; one of the same set answering a higher
 * setVersion is asked for its configuration (replSetGetConfig): when its
 * replicaSetId is this node's and its version higher, it is taken -- a
 * configuration that leaves this node out makes it REMOVED and halts its
 * Raft server (mongod's member learns the same from a heartbeat); a forced
 * one (term -1) that names it is forced into its Raft log as above.  A
 * node that starts runs one round before its Raft server starts.  Raft
 * messages from servers outside a member's Raft configuration are dropped
 * (raft_member.c), so a left-out member that elects a leader of the old
 * configuration never reaches the forced one's log.
 */
#include "commands/cmd_repl_member.h"
#include "commands/cmd_repl_heartbeat.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "repl/member_rpc.h"
#include "repl/raft_member.h"
#include "repl/replset.h"

#define WATCH_PERIOD_MS 2000
#define WATCH_RPC_MS 1000
#define START_RPC_MS 500
#define FORCE_TELL_MS 5000
#define FORCE_PRIMARY_WAIT_MS 15000

struct cmd_repl_watch {
	engine_t *e;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	bool poked;   /* cmd_repl_watch_poke: a round now */
};

/* Guards e->config_watch against a poke from a Raft thread while the watch
 * stops (taken before a watch's own lock, never by the watch thread). */
static pthread_mutex_t watch_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t force_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t
int_of(const bson_t *cfg, const char *k, int64_t dflt)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, cfg, k) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : dflt;
}

static const char *
str_of(const bson_t *cfg, const char *k)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, cfg, k) && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "";
}

/* Does cfg name host (a member's host)? */
static bool
names_host(const bson_t *cfg, const char *host)
{
	bson_iter_t it, m, f;

	if (host == NULL || !bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return false;
	while (bson_iter_next(&m))
		if (bson_iter_recurse(&m, &f) && bson_iter_find(&f, "host") && BSON_ITER_HOLDS_UTF8(&f) &&
		    strcmp(bson_iter_utf8(&f, NULL), host) == 0)
			return true;
	return false;
}

/* The same set: name and replicaSetId. */
static bool
same_set(const bson_t *a, const bson_t *b)
{
	bson_oid_t x, y;

	return strcmp(str_of(a, "_id"), str_of(b, "_id")) == 0 && cmd_repl_member_config_rsid(a, &x) &&
	    cmd_repl_member_config_rsid(b, &y) && bson_oid_equal(&x, &y);
}

static void
log_cfg(char sev, int id, const char *msg, const bson_t *cfg, const char *from)
{
	bson_t attr = BSON_INITIALIZER;

	if (from != NULL)
		BSON_APPEND_UTF8(&attr, "from", from);
	BSON_APPEND_INT64(&attr, "version", int_of(cfg, "version", 0));
	BSON_APPEND_DOCUMENT(&attr, "config", cfg);
	tlog(sev, "REPL", id, msg, &attr);
	bson_destroy(&attr);
}

/* The _id (-1 when absent) and host ("" when absent) of the member document
 * at *member, a configuration's members[i]; false when it is no document.
 * host points into the configuration. */
static bool
member_id_host(const bson_iter_t *member, int64_t *id, const char **host)
{
	bson_iter_t f;

	*id = -1;
	*host = "";
	if (!bson_iter_recurse(member, &f))
		return false;
	while (bson_iter_next(&f)) {
		if (strcmp(bson_iter_key(&f), "_id") == 0)
			*id = bson_iter_as_int64(&f);
		else if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			*host = bson_iter_utf8(&f, NULL);
	}
	return true;
}

/*
 * This node takes the forced configuration full (completed, naming it):
 * its Raft server restarted with full's members forced into its log, the
 * configuration stored and adopted.  A configuration of one voter is
 * adopted once Raft made this node PRIMARY (before, the single-member
 * path of replset would elect it while its Raft server does not run yet,
 * and writes taken then would never reach the set's log).
 */
static int
force_local(engine_t *e, const bson_t *full, terr_t *err)
{
	int voters = 0;
	member_opts_t mo;
	bson_iter_t it, m;
	int n = 0;

	if (bson_iter_init_find(&it, full, "members") && bson_iter_recurse(&it, &m))
		while (bson_iter_next(&m)) {
			member_opts_at(full, n++, &mo);
			voters += mo.votes > 0;
		}
	if (cmd_repl_member_restart(e, full, CMD_REPL_RESTART_FORCED, err) != 0)
		return -1;
	if (voters == 1 && n == 1) {
		int64_t until = tm_now_us() + (int64_t)FORCE_PRIMARY_WAIT_MS * 1000;
		while (repl_set_state(e->rs) != REPL_STATE_PRIMARY && tm_now_us() < until) {
			struct timespec nap = {0, 20 * 1000 * 1000};
			nanosleep(&nap, NULL);
		}
	}
	if (repl_set_config_replace(e->rs, full, err) != 0)
		return -1;
	if (e->member != NULL) {
		repl_member_peer_t *peers = NULL;
		int np = 0, self = -1;
		bool no_lead;
		int64_t delay;
		repl_set_info_t in;
		repl_set_info(e->rs, &in);
		if (repl_member_peers(full, in.self_host, &peers, &np, &self, err) != 0)
			return -1;
		cmd_repl_member_self_role(full, in.self_host, &no_lead, &delay);
		if (self >= 0)
			repl_member_reconfigure(e->member, peers, np, self, no_lead, delay);
		bson_free(peers);
	}
	log_cfg('I', 5000272, "forced replica set configuration in use", full, NULL);
	return 0;
}

int
cmd_repl_member_force_reconfig(cmd_t *c, const bson_t *cfg, terr_t *err)
{
	engine_t *e = c->engine;
	bson_t old;
	bson_t *full = NULL;
	repl_set_info_t in;
	int64_t version, over;
	int idx = -1, ret = -1;
	bool validate = false;
	char vt[96];

	{
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_DOCUMENT(&attr, "newConfig", cfg);
		tlog('I', "REPL", 21352, "replSetReconfig admin command received from client", &attr);
		bson_destroy(&attr);
	}
	if (!repl_set_initiated(e->rs))
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "Node not yet initialized; use the replSetInitiate command");
	if (pthread_mutex_trylock(&force_mu) != 0)
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
	repl_set_config_copy(e->rs, &old);
	repl_set_info(e->rs, &in);
	over = int_of(&old, "version", 1);
	/* mongod: the given version raised by 10000 + [0, 100000) */
	{
		uint32_t r;
		bson_oid_t o;
		bson_oid_init(&o, NULL);
		memcpy(&r, o.bytes + 8, sizeof(r));
		version = int_of(cfg, "version", 0) + 10000 + (int64_t)(r % 100000u);
	}
	snprintf(vt, sizeof(vt), "{version: %lld, term: -1}", (long long)version);
	if (repl_set_config_check_stage(cfg, repl_set_name(e->rs), in.self_host, false, &idx, &validate, err) != 0) {
		/* a field's fault and another set name 93, the whole set's 103
		 * (mongod's validateConfigForReconfig, force or not) */
		if (validate) {
			err->code = TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE;
		} else if (err->code == TERR_NODE_NOT_FOUND) {
			terr_clear(err);
			terr_set(err, TERR_NODE_NOT_FOUND,
			    "No host described in new configuration with %s for replica set %s maps to this node", vt,
			    repl_set_name(e->rs));
		} else if (err->code != TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE && err->code != TERR_NOT_IMPLEMENTED) {
			err->code = TERR_INVALID_REPLICA_SET_CONFIG;
		}
		goto out;
	}
	if (!names_host(cfg, in.self_host)) {
		terr_set(err, TERR_NODE_NOT_FOUND,
		    "No host described in new configuration with %s for replica set %s maps to this node", vt,
		    repl_set_name(e->rs));
		goto out;
	}
	if (strcmp(str_of(&old, "_id"), str_of(cfg, "_id")) != 0) {
		terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New and old configurations differ in replica set name; old was %s, and new is %s", str_of(&old, "_id"),
		    str_of(cfg, "_id"));
		goto out;
	}
	{
		bson_oid_t a, b;
		if (cmd_repl_member_config_rsid(cfg, &b) && cmd_repl_member_config_rsid(&old, &a) && !bson_oid_equal(&a, &b)) {
			char sa[25], sb[25];
			bson_oid_to_string(&a, sa);
			bson_oid_to_string(&b, sb);
			terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
			    "New and old configurations differ in replica set ID; old was %s, and new is %s", sa, sb);
			goto out;
		}
	}
	if (version <= over) {
		terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New replica set configuration version and term must be greater than old, but %s is not greater than {version: %lld, term: %lld} for replica set %s",
		    vt, (long long)over, (long long)int_of(&old, "term", -1), repl_set_name(e->rs));
		goto out;
	}
	/* the rules of any reconfig but the voters' and the primary's
	 * (mongod's validateConfigForReconfig with force) */
	{
		bson_iter_t it, m, o, of;
		int n = 0;
		if (bson_iter_init_find(&it, cfg, "members") && bson_iter_recurse(&it, &m)) {
			while (bson_iter_next(&m)) {
				int64_t id;
				const char *host;
				member_opts_t mo;
				if (!member_id_host(&m, &id, &host))
					continue;
				member_opts_at(cfg, n++, &mo);
				if (mo.arbiter) {
					terr_set(err, TERR_NOT_IMPLEMENTED,
					    "arbiters are not supported in a replica set of several members (every member bears data)");
					goto out;
				}
				if (!bson_iter_init_find(&o, &old, "members") || !bson_iter_recurse(&o, &of))
					continue;
				while (bson_iter_next(&of)) {
					int64_t oid;
					const char *ohost;
					if (!member_id_host(&of, &oid, &ohost))
						continue;
					if (strcmp(ohost, host) == 0 && oid != id) {
						terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
						    "New and old configurations both have members with host of %s but in the new configuration the _id field is MemberId(%lld) and in the old configuration it is MemberId(%lld) for replica set %s",
						    host, (long long)id, (long long)oid, repl_set_name(e->rs));
						goto out;
					}
				}
			}
		}
	}
	full = repl_set_config_completed_for(cfg, version, -1, &old);
	if (force_local(e, full, err) != 0)
		goto out;
	/* the other members it names take it too (best effort: one that does
	 * not answer learns it from the configuration watch) */
	{
		bson_iter_t it, m, f;
		if (bson_iter_init_find(&it, full, "members") && bson_iter_recurse(&it, &m))
			while (bson_iter_next(&m)) {
				bson_t cmd = BSON_INITIALIZER, reply;
				terr_t re = TERR_INIT;
				const char *host;
				if (!bson_iter_recurse(&m, &f) || !bson_iter_find(&f, "host") || !BSON_ITER_HOLDS_UTF8(&f))
					continue;
				host = bson_iter_utf8(&f, NULL);
				if (strcmp(host, in.self_host) == 0)
					continue;
				BSON_APPEND_DOCUMENT(&cmd, "_tamgaReplSetForce", full);
				if (repl_member_rpc(host, "admin", &cmd, FORCE_TELL_MS, &reply, &re) == 0)
					bson_destroy(&reply);
				terr_clear(&re);
				bson_destroy(&cmd);
			}
	}
	ret = 0;
out:
	if (full != NULL)
		bson_destroy(full);
	bson_destroy(&old);
	pthread_mutex_unlock(&force_mu);
	return ret;
}

/*
 * {_tamgaReplSetForce: cfg}: cfg (completed, term -1) was forced on another
 * member and names this one.  Taken when it is of this node's set, newer
 * than its configuration and names it; anything else 103.
 */
CMD_HANDLER(cmd_tamga_repl_set_force)
{
	static const char *const fields[] = {NULL};
	engine_t *e = c->engine;
	bson_t cfg, cur;
	const uint8_t *d;
	uint32_t l;
	repl_set_info_t in;
	int ret;

	RET(cmd_check_fields(c, fields, err));
	if (e->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "This node was not started with replication enabled.");
	if (!BSON_ITER_HOLDS_DOCUMENT(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '_tamgaReplSetForce' is the wrong type, expected type 'object'");
	bson_iter_document(&c->first, &l, &d);
	if (!bson_init_static(&cfg, d, l))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON");
	if (!repl_set_config_copy(e->rs, &cur)) {
		bson_destroy(&cur);
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "no replset config has been received");
	}
	repl_set_info(e->rs, &in);
	if (!same_set(&cfg, &cur) || int_of(&cfg, "version", 0) <= in.config_version || !names_host(&cfg, in.self_host)) {
		bson_destroy(&cur);
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "not a newer forced configuration of this node's replica set that names it");
	}
	bson_destroy(&cur);
	if (pthread_mutex_trylock(&force_mu) != 0)
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
	ret = force_local(e, &cfg, err);
	pthread_mutex_unlock(&force_mu);
	return ret;
}

/* ---- the configuration watch ------------------------------------------------------------------------- */

/* The host's configuration when it is newer than this node's (version)
 * and of its set; false otherwise.  out is initialized either way. */
static bool
newer_from(const char *host, const bson_t *mine, int64_t version, int timeout_ms, bson_t *out)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	terr_t re = TERR_INIT;
	bool newer = false;

	bson_init(out);
	BSON_APPEND_INT32(&cmd, "hello", 1);
	if (repl_member_rpc(host, "admin", &cmd, timeout_ms, &reply, &re) == 0) {
		newer = strcmp(str_of(&reply, "setName"), str_of(mine, "_id")) == 0 &&
		    int_of(&reply, "setVersion", 0) > version;
		bson_destroy(&reply);
	}
	terr_clear(&re);
	bson_destroy(&cmd);
	if (!newer)
		return false;
	newer = false;
	bson_init(&cmd);
	BSON_APPEND_INT32(&cmd, "replSetGetConfig", 1);
	if (repl_member_rpc(host, "admin", &cmd, timeout_ms, &reply, &re) == 0) {
		if (bson_iter_init_find(&it, &reply, "config") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			const uint8_t *d;
			uint32_t l;
			bson_t c;
			bson_iter_document(&it, &l, &d);
			if (bson_init_static(&c, d, l) && same_set(&c, mine) && int_of(&c, "version", 0) > version) {
				bson_destroy(out);
				bson_copy_to(&c, out);
				newer = true;
			}
		}
		bson_destroy(&reply);
	}
	terr_clear(&re);
	bson_destroy(&cmd);
	return newer;
}

/* One round (see the file's comment): 1 when a newer configuration was
 * taken. */
static int
watch_round(engine_t *e, int timeout_ms)
{
	bson_t mine, newer;
	bson_iter_t it, m, f;
	repl_set_info_t in;
	bool found = false;
	char from[256] = "";

	if (e->rs == NULL || !repl_set_initiated(e->rs))
		return 0;
	if (!repl_set_config_copy(e->rs, &mine)) {
		bson_destroy(&mine);
		return 0;
	}
	if (repl_set_state(e->rs) == REPL_STATE_REMOVED) {
		/* REMOVED through the set's log (cmd_repl_member_on_config runs on
		 * the Raft server's thread, and pokes this one): its server stops */
		cmd_repl_member_retire_if_removed(e);
		bson_destroy(&mine);
		return 0;   /* a newer configuration adds it back (_tamgaReplSetJoin) */
	}
	repl_set_info(e->rs, &in);
	bson_init(&newer);
	if (bson_iter_init_find(&it, &mine, "members") && bson_iter_recurse(&it, &m))
		while (!found && bson_iter_next(&m)) {
			const char *host;
			if (!bson_iter_recurse(&m, &f) || !bson_iter_find(&f, "host") || !BSON_ITER_HOLDS_UTF8(&f))
				continue;
			host = bson_iter_utf8(&f, NULL);
			if (strcmp(host, in.self_host) == 0)
				continue;
			bson_destroy(&newer);
			found = newer_from(host, &mine, in.config_version, timeout_ms, &newer);
			if (found)
				bson_strncpy(from, host, sizeof(from));
		}
	bson_destroy(&mine);
	if (!found) {
		bson_destroy(&newer);
		return 0;
	}
	{
		terr_t err = TERR_INIT;
		pthread_mutex_lock(&force_mu);
		/* taken meanwhile (the set's log, a force)? */
		repl_set_info(e->rs, &in);
		if (int_of(&newer, "version", 0) <= in.config_version) {
			pthread_mutex_unlock(&force_mu);
			bson_destroy(&newer);
			return 0;
		}
		if (!names_host(&newer, in.self_host)) {
			/* left out: REMOVED, its Raft server of the old configuration
			 * halted (no election, no message to the new one's members) */
			log_cfg('W', 5000273, "a newer configuration of this set leaves this member out: REMOVED", &newer, from);
			if (repl_set_config_replace(e->rs, &newer, &err) == 0)
				cmd_repl_member_retire(e, &err);
		} else if (int_of(&newer, "term", 0) == -1) {
			log_cfg('I', 5000274, "taking a newer forced configuration of this set", &newer, from);
			force_local(e, &newer, &err);
		} else {
			/* a configuration the set's log holds: this member gets it
			 * from there once it catches up; stored now so it is not
			 * asked again */
			log_cfg('I', 5000275, "taking a newer configuration of this set", &newer, from);
			repl_set_config_replace(e->rs, &newer, &err);
		}
		pthread_mutex_unlock(&force_mu);
		if (terr_is_set(&err)) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
			tlog('E', "REPL", 5000276, "could not take a newer configuration of this set", &attr);
			bson_destroy(&attr);
			terr_clear(&err);
		}
	}
	bson_destroy(&newer);
	return 1;
}

static void *
watch_main(void *arg)
{
	struct cmd_repl_watch *w = arg;

	tlog_set_ctx("ReplConfigWatch");
	pthread_mutex_lock(&w->lock);
	while (!w->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += WATCH_PERIOD_MS / 1000;
		if (!w->poked)
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (w->stopping)
			break;
		w->poked = false;
		pthread_mutex_unlock(&w->lock);
		watch_round(w->e, WATCH_RPC_MS);
		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void
cmd_repl_watch_start(engine_t *e)
{
	struct cmd_repl_watch *w;

	pthread_mutex_lock(&watch_mu);
	if (e->config_watch != NULL || e->rs == NULL) {
		pthread_mutex_unlock(&watch_mu);
		return;
	}
	w = bson_malloc0(sizeof(*w));
	w->e = e;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		bson_free(w);
		pthread_mutex_unlock(&watch_mu);
		return;
	}
	e->config_watch = w;
	pthread_mutex_unlock(&watch_mu);
	/* the members' heartbeats run alongside (cmd_repl_heartbeat.c) */
	cmd_repl_hb_start(e);
}

void
cmd_repl_watch_poke(engine_t *e)
{
	struct cmd_repl_watch *w;

	pthread_mutex_lock(&watch_mu);
	w = e->config_watch;
	if (w != NULL) {
		pthread_mutex_lock(&w->lock);
		w->poked = true;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	pthread_mutex_unlock(&watch_mu);
}

void
cmd_repl_watch_stop(engine_t *e)
{
	struct cmd_repl_watch *w;

	pthread_mutex_lock(&watch_mu);
	w = e->config_watch;
	e->config_watch = NULL;
	pthread_mutex_unlock(&watch_mu);
	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	bson_free(w);
}

int
cmd_repl_watch_check_now(engine_t *e)
{
	return watch_round(e, START_RPC_MS);
}
