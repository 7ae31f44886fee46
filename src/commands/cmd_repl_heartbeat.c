/*
 * cmd_repl_heartbeat.c -- mongod's replSetHeartbeat between the members of
 * a set of several (issue 24), for what operators see, never for
 * elections: Raft (repl/raft_member.h) stays the only source of
 * leadership, terms and the commit point.
 *
 * A Raft follower hears from its leader only, so without this a
 * secondary's rs.status() knew nothing of the other secondaries.  As
 * mongod's members do, each member here sends `replSetHeartbeat` to every
 * other member every `settings.heartbeatIntervalMillis` (a thread per
 * peer, over a kept connection of the members' wire-protocol client
 * repl/member_rpc.h: keyFile, x.509 and TLS as every member-to-member
 * call) and keeps per member what
 * the answer said (state, applied and durable optimes with their wall
 * times, term, sync source, configVersion/configTerm, electionTime), when
 * it last heard (lastHeartbeat), when that member's own heartbeat last
 * reached this one (lastHeartbeatRecv), the round trip (pingMs, mongod's
 * moving average) and the failure text of a member that did not answer
 * within `settings.heartbeatTimeoutSecs` (down: health 0).
 *
 * The command's handler answers from this member's real state, with
 * mongod's argument parsing (ReplSetHeartbeatArgsV1) and refusals
 * (TopologyCoordinator::prepareHeartbeatResponseV1), and the reply in
 * mongod's field names (ReplSetHeartbeatResponse: `v`/`t` for the
 * configuration's version and term, `syncingTo`, `electionTime` as a Date
 * holding the Timestamp's 64 bits, `config` when the sender's is older).
 *
 * rs.status() (cmd_repl_member.c) and serverStatus({repl: 1})'s
 * `replicationProgress` read the table through cmd_repl_hb_member_append
 * and cmd_repl_hb_progress_append.
 */
#include "commands/cmd_repl_heartbeat.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "commands/cmd_repl_member.h"
#include "common/log.h"
#include "common/opctx.h"
#include "repl/election_log.h"
#include "repl/member_rpc.h"
#include "repl/raft_member.h"
#include "repl/replset.h"

/* What this member knows of another from heartbeats (mongod's MemberData
 * and PingStats for one member). */
typedef struct hb_member {
	char host[256];
	int64_t member_id;
	bool answered;                /* a heartbeat to it finished (up or down) */
	bool up;                      /* ... and the last one succeeded */
	int state;                    /* its state (8 DOWN when down) */
	repl_optime_t applied, durable;
	int64_t applied_wall_ms, durable_wall_ms;
	int64_t term, config_version, config_term;
	char sync_source[256];
	bool has_election;
	uint32_t election_secs, election_inc;
	int64_t last_hb_ms;           /* when the last heartbeat to it finished (lastHeartbeat) */
	int64_t last_hb_recv_ms;      /* when its last heartbeat reached this member (lastHeartbeatRecv) */
	int64_t up_since_ms;          /* 0: down or unknown */
	int64_t ping_ms;              /* -1: no round trip yet */
	char msg[300];                /* lastHeartbeatMessage of a failed heartbeat */
	bool auth_issue;
	/* mongod's MemberData lastApplied/lastDurable: advanced (never moved
	 * back) by heartbeat answers and by the member's replSetUpdatePosition,
	 * kept when it goes down; wall times in applied/durable_wall_ms */
	repl_optime_t last_applied, last_durable;
} hb_member_t;

typedef struct hb_peer {
	struct cmd_repl_hb *hb;
	char host[256];
	pthread_t thread;
	bool started, done;
} hb_peer_t;

struct cmd_repl_hb {
	engine_t *e;
	pthread_t manager;
	pthread_t reporter;           /* replSetUpdatePosition to the sync source */
	bool reporter_started;
	pthread_cond_t cond;          /* with hb_mu: stop and the periods */
	bool stopping;
	hb_peer_t peers[REPL_MAX_MEMBERS];
};

/* Every table and heartbeat state of this file (one process, any engine). */
static pthread_mutex_t hb_mu = PTHREAD_MUTEX_INITIALIZER;
static hb_member_t table[REPL_MAX_MEMBERS];
static int ntable;

#define HB_DEFAULT_INTERVAL_MS 2000
#define HB_DEFAULT_TIMEOUT_S 10
/* One attempt's longest wait, so a stop never waits a whole heartbeat
 * timeout for a paused peer; attempts go on until the timeout passes. */
#define HB_ATTEMPT_MS 2000
/* mongod's kMaxHeartbeatRetries: a heartbeat that failed quickly is tried
 * again twice within its timeout before the member is down. */
#define HB_MAX_RETRIES 2

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under hb_mu: the row of host (created when create), or NULL. */
static hb_member_t *
row_of(const char *host, bool create)
{
	for (int i = 0; i < ntable; i++)
		if (strcmp(table[i].host, host) == 0)
			return &table[i];
	if (!create || ntable >= REPL_MAX_MEMBERS)
		return NULL;
	memset(&table[ntable], 0, sizeof(table[0]));
	bson_strncpy(table[ntable].host, host, sizeof(table[0].host));
	table[ntable].ping_ms = -1;
	table[ntable].member_id = -1;
	table[ntable].state = 6;
	table[ntable].last_applied = table[ntable].last_durable = (repl_optime_t){0, 0, -1};
	return &table[ntable++];
}

/* settings.<key> of cfg as an integer, or def. */
static int64_t
setting_of(const bson_t *cfg, const char *key, int64_t def)
{
	bson_iter_t it, s;

	if (bson_iter_init_find(&it, cfg, "settings") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &s) &&
	    bson_iter_find(&s, key) && BSON_ITER_HOLDS_NUMBER(&s)) {
		int64_t v = bson_iter_as_int64(&s);
		if (v > 0)
			return v;
	}
	return def;
}

int64_t
cmd_repl_hb_interval_ms(const bson_t *cfg)
{
	return setting_of(cfg, "heartbeatIntervalMillis", HB_DEFAULT_INTERVAL_MS);
}

/* The member of cfg with host (its _id in *id), or with _id id when host
 * is NULL (its host copied to host_out); false when none. */
static bool
member_find(const bson_t *cfg, const char *host, int64_t *id, char *host_out, size_t len)
{
	bson_iter_t it, m, f;

	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return false;
	while (bson_iter_next(&m)) {
		const char *h = NULL;
		int64_t mid = -1;
		if (!BSON_ITER_HOLDS_DOCUMENT(&m) || !bson_iter_recurse(&m, &f))
			continue;
		while (bson_iter_next(&f)) {
			if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				h = bson_iter_utf8(&f, NULL);
			else if (strcmp(bson_iter_key(&f), "_id") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
				mid = bson_iter_as_int64(&f);
		}
		if (h == NULL)
			continue;
		if (host != NULL ? strcmp(h, host) == 0 : mid == *id) {
			if (host != NULL)
				*id = mid;
			if (host_out != NULL)
				bson_strncpy(host_out, h, len);
			return true;
		}
	}
	return false;
}

/* This member's sync source (its Raft leader while it is not primary) and
 * the primary's member _id (-1 when none is known). */
static void
self_topology(engine_t *e, const bson_t *cfg, const repl_set_info_t *in, char *sync, size_t len, int64_t *primary_id)
{
	repl_member_view_t rows[REPL_MAX_MEMBERS];
	int leader = -1, n;

	sync[0] = '\0';
	*primary_id = -1;
	if (e->member == NULL)
		return;
	n = repl_member_view(e->member, rows, REPL_MAX_MEMBERS, &leader);
	if (leader < 0 || leader >= n)
		return;
	*primary_id = rows[leader].member_id;
	if (in->state != REPL_STATE_PRIMARY && !rows[leader].self) {
		int64_t id = rows[leader].member_id;
		if (!member_find(cfg, NULL, &id, sync, len))
			sync[0] = '\0';
	}
}

/* ---- the command ------------------------------------------------------------------------------------- */

/* mongod's bsonExtractIntegerField(WithDefault): *out, or def when absent
 * (required: 4 NoSuchKey then). */
static int
int_field(const bson_t *cmd, const char *key, bool required, int64_t def, int64_t *out, terr_t *err)
{
	bson_iter_t it;
	double d;

	if (!bson_iter_init_find(&it, cmd, key)) {
		if (required)
			return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"%s\"", key);
		*out = def;
		return 0;
	}
	if (!BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "Expected field \"%s\" to have numeric type, but found %s", key,
		    bv_type_name(bson_iter_type(&it)));
	if (BSON_ITER_HOLDS_DOUBLE(&it)) {
		d = bson_iter_double(&it);
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || (double)(int64_t)d != d)
			return terr_set(err, TERR_BAD_VALUE, "Expected field \"%s\" to have a value exactly representable as "
			    "a 64-bit integer, but found %s: %g", key, key, d);
	}
	*out = bson_iter_as_int64(&it);
	return 0;
}

/* mongod's bsonExtractStringField: required. */
static int
str_field(const bson_t *cmd, const char *key, const char **out, terr_t *err)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, cmd, key))
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"%s\"", key);
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "\"%s\" had the wrong type. Expected string, found %s", key,
		    bv_type_name(bson_iter_type(&it)));
	*out = bson_iter_utf8(&it, NULL);
	return 0;
}

/* HostAndPort::initialize's refusals for a non-empty "host[:port]" (9.0's
 * texts: the string unquoted; a port that is no number: NumberParser's
 * FailedToParse). */
static int
host_check(const char *s, terr_t *err)
{
	const char *colon = strrchr(s, ':');

	if (s[0] == ':' || colon == s)
		return terr_set(err, TERR_FAILED_TO_PARSE, "Empty host component parsing HostAndPort from %s", s);
	if (colon != NULL) {
		char *end = NULL;
		long long p;
		if (colon[1] == '\0' || colon[1] == '-' || colon[1] == '+' || colon[1] == ' ')
			return terr_set(err, TERR_FAILED_TO_PARSE, "Did not consume whole number.");
		p = strtoll(colon + 1, &end, 10);
		if (end == NULL || *end != '\0')
			return terr_set(err, TERR_FAILED_TO_PARSE, "Did not consume whole number.");
		if (p <= 0 || p > 65535)
			return terr_set(err, TERR_FAILED_TO_PARSE, "Port number %lld out of range parsing HostAndPort from %s", p, s);
	}
	return 0;
}

typedef struct hb_args {
	const char *set, *from;
	int64_t config_version, config_term, from_id, term, primary_id;
} hb_args_t;

/* ReplSetHeartbeatArgsV1::initialize, in its order. */
static int
parse_args(const bson_t *cmd, hb_args_t *a, terr_t *err)
{
	bson_iter_t it;
	int64_t hbv;

	if (bson_iter_init_find(&it, cmd, "checkEmpty") && !BSON_ITER_HOLDS_BOOL(&it) && !BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "Expected boolean or number type for field \"checkEmpty\", found %s",
		    bv_type_name(bson_iter_type(&it)));
	RET(int_field(cmd, "configVersion", true, 0, &a->config_version, err));
	RET(int_field(cmd, "configTerm", false, -1, &a->config_term, err));
	if (bson_iter_init_find(&it, cmd, "hbv")) {
		RET(int_field(cmd, "hbv", true, 0, &hbv, err));
		if (hbv != 1)
			return terr_set(err, 40666, "Found invalid value for field hbv: %lld", (long long)hbv);
	}
	RET(int_field(cmd, "fromId", false, -1, &a->from_id, err));
	RET(str_field(cmd, "from", &a->from, err));
	if (a->from[0] != '\0')
		RET(host_check(a->from, err));
	RET(int_field(cmd, "primaryId", false, -1, &a->primary_id, err));
	RET(int_field(cmd, "term", true, 0, &a->term, err));
	RET(str_field(cmd, "replSetHeartbeat", &a->set, err));
	return 0;
}

/* *cur = *o when o is newer (mongod's OpTime order: term, then ts). */
static bool
advance_optime(repl_optime_t *cur, const repl_optime_t *o)
{
	if (o->term > cur->term ||
	    (o->term == cur->term && REPL_TS(o->secs, o->inc) > REPL_TS(cur->secs, cur->inc))) {
		*cur = *o;
		return true;
	}
	return false;
}

/* A null optime as mongod prints it: {ts: Timestamp(0, 0), t: -1}. */
static const repl_optime_t null_optime = {0, 0, -1};

/* What this member calls durable.  A primary: the newest entry of its
 * oplog a journal sync made durable (mongod's lastDurable, from the
 * JournalListener token its journal flusher takes before each round;
 * repl_oplog_durable_optime), so up to one ~100 ms round behind its last
 * write, never the commit point.  Any other member: every entry it applied
 * was in its Raft log on disk first (Raft appends before it commits), so
 * its applied optime. */
void
cmd_repl_hb_durable(engine_t *e, const repl_set_info_t *in, repl_optime_t *out, int64_t *wall)
{
	*out = in->last_applied;
	*wall = in->last_applied_wall_ms;
	if (in->state == REPL_STATE_PRIMARY && e->oplog != NULL) {
		repl_oplog_optime_t d = repl_oplog_durable_optime(e->oplog);
		/* in was read first: a sync since may name a newer entry */
		if (d.ts < REPL_TS(in->last_applied.secs, in->last_applied.inc)) {
			out->secs = repl_ts_secs(d.ts);
			out->inc = repl_ts_inc(d.ts);
			out->term = d.ts == 0 ? -1 : d.t;
			*wall = (int64_t)out->secs * 1000;
		}
	}
}

/* (version, term) ordering of mongod's ConfigVersionAndTerm: terms first
 * unless either is uninitialized (-1). */
static int
cfg_cmp(int64_t v1, int64_t t1, int64_t v2, int64_t t2)
{
	if (t1 != -1 && t2 != -1 && t1 != t2)
		return t1 < t2 ? -1 : 1;
	return v1 < v2 ? -1 : v1 > v2 ? 1 : 0;
}

CMD_HANDLER(cmd_repl_set_heartbeat)
{
	engine_t *e = c->engine;
	hb_args_t a;
	repl_set_info_t in;
	bson_t cfg;
	bool have_cfg;
	int64_t self_id = -1, primary_id = -1;
	bool self_in;
	char sync[256];

	if (e->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "not running using replication");
	RET(parse_args(c->body, &a, err));
	if (strcmp(a.set, repl_set_name(e->rs)) != 0)
		return terr_set(err, 108 /* InconsistentReplicaSetNames */,
		    "Our set name of %s does not match name %s reported by remote node", repl_set_name(e->rs), a.set);
	repl_set_info(e->rs, &in);
	have_cfg = repl_set_initiated(e->rs) && repl_set_config_copy(e->rs, &cfg);
	if (!have_cfg)
		bson_init(&cfg);
	self_in = have_cfg && member_find(&cfg, in.self_host, &self_id, NULL, 0);
	if (!self_in && in.state == REPL_STATE_REMOVED) {
		bson_destroy(&cfg);
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "Our replica set configuration is invalid or does not include us");
	}
	if (self_in && a.from_id == self_id) {
		bson_destroy(&cfg);
		return terr_set(err, TERR_BAD_VALUE, "Received heartbeat from member with the same member ID as ourself: %lld",
		    (long long)a.from_id);
	}
	if (in.state == REPL_STATE_PRIMARY) {
		/* mongod's Date_t::fromMillisSinceEpoch(electionTime.asLL()) */
		BSON_APPEND_DATE_TIME(c->reply, "electionTime",
		    (int64_t)(((uint64_t)in.election_optime.secs << 32) | in.election_optime.inc));
	}
	/* the sender's configuration is older: it gets this one, as mongod's */
	if (have_cfg && cfg_cmp(in.config_version, in.config_term, a.config_version, a.config_term) > 0)
		BSON_APPEND_DOCUMENT(c->reply, "config", &cfg);
	BSON_APPEND_INT32(c->reply, "state", (int32_t)in.state);
	BSON_APPEND_INT64(c->reply, "v", have_cfg ? in.config_version : -2);
	BSON_APPEND_INT64(c->reply, "t", have_cfg ? in.config_term : -1);
	BSON_APPEND_UTF8(c->reply, "set", repl_set_name(e->rs));
	self_topology(e, &cfg, &in, sync, sizeof(sync), &primary_id);
	if (sync[0] != '\0')
		BSON_APPEND_UTF8(c->reply, "syncingTo", sync);
	BSON_APPEND_INT64(c->reply, "term", in.term);
	if (primary_id >= 0)
		BSON_APPEND_INT64(c->reply, "primaryId", primary_id);
	{
		/* STARTUP2 (initial sync): null optimes, as mongod's, so an
		 * unfinished copy reports no progress */
		repl_optime_t dur = null_optime, app = null_optime;
		int64_t dwall = 0, awall = 0;
		if (in.state != REPL_STATE_STARTUP2 && have_cfg) {
			cmd_repl_hb_durable(e, &in, &dur, &dwall);
			app = in.last_applied;
			awall = in.last_applied_wall_ms;
		}
		repl_optime_append(c->reply, "durableOpTime", &dur);
		BSON_APPEND_DATE_TIME(c->reply, "durableWallTime", dwall);
		repl_optime_append(c->reply, "opTime", &app);
		BSON_APPEND_DATE_TIME(c->reply, "wallTime", awall);
	}
	/* the sender's heartbeat reached this member (lastHeartbeatRecv), when
	 * it is a member of the same configuration version */
	if (have_cfg && a.from_id != -1 && a.config_version == in.config_version) {
		char host[256];
		int64_t id = a.from_id;
		if (member_find(&cfg, NULL, &id, host, sizeof(host))) {
			hb_member_t *r;
			pthread_mutex_lock(&hb_mu);
			if ((r = row_of(host, true)) != NULL) {
				r->last_hb_recv_ms = wall_ms();
				r->member_id = id;
			}
			pthread_mutex_unlock(&hb_mu);
		}
	}
	bson_destroy(&cfg);
	return 0;
}

/* ---- replSetUpdatePosition --------------------------------------------------------------------------- */

/* mongod's bsonExtractOpTimeField: key an object {ts: Timestamp, t: number}
 * (4 NoSuchKey when absent, 14 TypeMismatch for another type). */
static int
optime_field(const bson_t *d, const char *key, repl_optime_t *o, terr_t *err)
{
	bson_iter_t it, f;
	bool have_ts = false, have_t = false;

	if (!bson_iter_init_find(&it, d, key))
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"%s\"", key);
	if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &f))
		return terr_set(err, TERR_TYPE_MISMATCH, "\"%s\" had the wrong type. Expected object, found %s", key,
		    bv_type_name(bson_iter_type(&it)));
	*o = null_optime;
	while (bson_iter_next(&f)) {
		if (strcmp(bson_iter_key(&f), "ts") == 0) {
			if (!BSON_ITER_HOLDS_TIMESTAMP(&f))
				return terr_set(err, TERR_TYPE_MISMATCH, "\"ts\" had the wrong type. Expected timestamp, found %s",
				    bv_type_name(bson_iter_type(&f)));
			bson_iter_timestamp(&f, &o->secs, &o->inc);
			have_ts = true;
		} else if (strcmp(bson_iter_key(&f), "t") == 0) {
			if (!BSON_ITER_HOLDS_NUMBER(&f))
				return terr_set(err, TERR_TYPE_MISMATCH, "Expected field \"t\" to have numeric type, but found %s",
				    bv_type_name(bson_iter_type(&f)));
			o->term = bson_iter_as_int64(&f);
			have_t = true;
		}
	}
	if (!have_ts)
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"ts\"");
	if (!have_t)
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"t\"");
	return 0;
}

/* mongod's bsonExtractTypedField(..., Date). */
static int
date_field(const bson_t *d, const char *key, int64_t *out, terr_t *err)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, d, key))
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"%s\"", key);
	if (!BSON_ITER_HOLDS_DATE_TIME(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "\"%s\" had the wrong type. Expected date, found %s", key,
		    bv_type_name(bson_iter_type(&it)));
	*out = bson_iter_date_time(&it);
	return 0;
}

typedef struct pos_update {
	repl_optime_t applied, durable;
	int64_t applied_wall, durable_wall, cfgver, member_id;
} pos_update_t;

/* UpdatePositionArgs::initialize for one entry of `optimes`, in its order
 * (writtenOpTime/writtenWallTime optional: the applied ones when absent). */
static int
parse_update(const bson_t *d, pos_update_t *u, terr_t *err)
{
	repl_optime_t written;
	int64_t wwall;
	bson_iter_t it;

	RET(optime_field(d, "appliedOpTime", &u->applied, err));
	RET(date_field(d, "appliedWallTime", &u->applied_wall, err));
	if (bson_iter_init_find(&it, d, "writtenOpTime"))
		RET(optime_field(d, "writtenOpTime", &written, err));
	if (bson_iter_init_find(&it, d, "writtenWallTime"))
		RET(date_field(d, "writtenWallTime", &wwall, err));
	RET(optime_field(d, "durableOpTime", &u->durable, err));
	RET(date_field(d, "durableWallTime", &u->durable_wall, err));
	RET(int_field(d, "cfgver", false, -1, &u->cfgver, err));
	RET(int_field(d, "memberId", false, -1, &u->member_id, err));
	return 0;
}

/* TopologyCoordinator::setLastOptime for one parsed update: 13436 when this
 * member is REMOVED, 74 NodeNotFound for a negative or unknown memberId,
 * 93 with this member's configVersion in the reply for another version;
 * this member's own _id is ignored (no one tells it its position). */
static int
apply_update(cmd_t *c, const bson_t *cfg, const repl_set_info_t *in, bool self_in, int64_t self_id,
             const pos_update_t *u, terr_t *err)
{
	char host[256];
	int64_t id = u->member_id;
	hb_member_t *r;

	if (!self_in)
		return terr_set(err, TERR_NOT_PRIMARY_OR_SECONDARY,
		    "Received replSetUpdatePosition command but we are in state REMOVED");
	if (u->member_id < 0)
		return terr_set(err, TERR_NODE_NOT_FOUND, "Received replSetUpdatePosition for node with memberId %lld which "
		    "is negative and therefore invalid", (long long)u->member_id);
	if (u->member_id == self_id)
		return 0;
	if (u->cfgver != in->config_version) {
		bson_t *extra = bson_new();
		BSON_APPEND_INT64(extra, "configVersion", in->config_version);
		terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "Received replSetUpdatePosition for node with memberId %lld "
		    "whose config version of %lld doesn't match our config version of %lld", (long long)u->member_id,
		    (long long)u->cfgver, (long long)in->config_version);
		terr_set_extra_steal(err, extra);
		return -1;
	}
	if (!member_find(cfg, NULL, &id, host, sizeof(host)))
		return terr_set(err, TERR_NODE_NOT_FOUND, "Received replSetUpdatePosition for node with memberId %lld which "
		    "doesn't exist in our config", (long long)u->member_id);
	(void)c;
	pthread_mutex_lock(&hb_mu);
	if ((r = row_of(host, true)) != NULL) {
		r->member_id = u->member_id;
		/* MemberData::advanceLastAppliedOpTimeAndWallTime: never back */
		if (advance_optime(&r->last_applied, &u->applied) && u->applied_wall > r->applied_wall_ms)
			r->applied_wall_ms = u->applied_wall;
		if (advance_optime(&r->last_durable, &u->durable) && u->durable_wall > r->durable_wall_ms)
			r->durable_wall_ms = u->durable_wall;
	}
	pthread_mutex_unlock(&hb_mu);
	return 0;
}

CMD_HANDLER(cmd_repl_set_update_position)
{
	engine_t *e = c->engine;
	repl_set_info_t in;
	bson_iter_t it, arr;
	bson_t cfg;
	int64_t self_id = -1;
	bool self_in;
	int rc = 0;

	if (e->rs == NULL)
		return terr_set(err, TERR_NO_REPLICATION_ENABLED, "not running with --replSet");
	/* checkReplEnabledForCommand: a member not initiated yet */
	if (!repl_set_initiated(e->rs))
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "no replset config has been received");
	/* 3.0-series handshakes: accepted and ignored, as mongod's */
	if (bson_iter_init_find(&it, c->body, "handshake"))
		return 0;
	if (!bson_iter_init_find(&it, c->body, "optimes"))
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"optimes\"");
	if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr))
		return terr_set(err, TERR_TYPE_MISMATCH, "\"optimes\" had the wrong type. Expected array, found %s",
		    bv_type_name(bson_iter_type(&it)));
	/* every entry parsed before any is applied (UpdatePositionArgs) */
	{
		bson_iter_t chk = arr;
		while (bson_iter_next(&chk)) {
			bson_t d;
			pos_update_t u;
			const uint8_t *data;
			uint32_t len;
			if (!BSON_ITER_HOLDS_DOCUMENT(&chk))
				return terr_set(err, TERR_TYPE_MISMATCH, "Expected an object in \"optimes\", found %s",
				    bv_type_name(bson_iter_type(&chk)));
			bson_iter_document(&chk, &len, &data);
			if (!bson_init_static(&d, data, len))
				return terr_set(err, TERR_BAD_VALUE, "malformed entry in \"optimes\"");
			RET(parse_update(&d, &u, err));
		}
	}
	repl_set_info(e->rs, &in);
	if (!repl_set_config_copy(e->rs, &cfg)) {
		bson_destroy(&cfg);
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "no replset config has been received");
	}
	self_in = in.state != REPL_STATE_REMOVED && member_find(&cfg, in.self_host, &self_id, NULL, 0);
	while (rc == 0 && bson_iter_next(&arr)) {
		bson_t d;
		pos_update_t u;
		const uint8_t *data;
		uint32_t len;
		bson_iter_document(&arr, &len, &data);
		if (!bson_init_static(&d, data, len) || parse_update(&d, &u, err) != 0)
			rc = -1;
		else
			rc = apply_update(c, &cfg, &in, self_in, self_id, &u, err);
	}
	bson_destroy(&cfg);
	return rc;
}

/* ---- sending ------------------------------------------------------------------------------------------ */

static bool
optime_of(const bson_t *reply, const char *key, repl_optime_t *o)
{
	bson_iter_t it, d;

	if (!bson_iter_init_find(&it, reply, key) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &d))
		return false;
	*o = null_optime;
	while (bson_iter_next(&d)) {
		if (strcmp(bson_iter_key(&d), "ts") == 0 && BSON_ITER_HOLDS_TIMESTAMP(&d))
			bson_iter_timestamp(&d, &o->secs, &o->inc);
		else if (strcmp(bson_iter_key(&d), "t") == 0 && BSON_ITER_HOLDS_NUMBER(&d))
			o->term = bson_iter_as_int64(&d);
	}
	return true;
}

static int64_t
i64_of(const bson_t *b, const char *key, int64_t def)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, b, key) && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : def;
}

static int64_t
date_of(const bson_t *b, const char *key)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, b, key) && BSON_ITER_HOLDS_DATE_TIME(&it) ? bson_iter_date_time(&it) : 0;
}

/* Under hb_mu: a good answer (mongod's MemberData::setUpValues). */
static void
note_up(hb_member_t *r, const bson_t *reply, int64_t now, int64_t rtt_ms)
{
	bson_iter_t it;
	repl_optime_t o;

	if (!r->up || r->up_since_ms == 0)
		r->up_since_ms = now;
	r->answered = r->up = true;
	r->auth_issue = false;
	r->msg[0] = '\0';
	r->last_hb_ms = now;
	/* mongod's PingStats: the first round trip, then 4/5 of the average
	 * and 1/5 of the new one */
	r->ping_ms = r->ping_ms < 0 ? rtt_ms : (r->ping_ms * 4 + rtt_ms) / 5;
	r->state = (int)i64_of(reply, "state", 6);
	r->term = i64_of(reply, "term", -1);
	r->config_version = i64_of(reply, "v", -1);
	r->config_term = i64_of(reply, "t", -1);
	/* rs.status() shows the last answer's optimes (MemberData's
	 * heartbeat optimes: a rollback can move them back) */
	r->applied = optime_of(reply, "opTime", &o) ? o : null_optime;
	r->durable = optime_of(reply, "durableOpTime", &o) ? o : null_optime;
	advance_optime(&r->last_applied, &r->applied);
	advance_optime(&r->last_durable, &r->durable);
	if (date_of(reply, "wallTime") > r->applied_wall_ms)
		r->applied_wall_ms = date_of(reply, "wallTime");
	if (date_of(reply, "durableWallTime") > r->durable_wall_ms)
		r->durable_wall_ms = date_of(reply, "durableWallTime");
	r->sync_source[0] = '\0';
	if (bson_iter_init_find(&it, reply, "syncingTo") && BSON_ITER_HOLDS_UTF8(&it))
		bson_strncpy(r->sync_source, bson_iter_utf8(&it, NULL), sizeof(r->sync_source));
	r->has_election = false;
	if (bson_iter_init_find(&it, reply, "electionTime") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
		uint64_t v = (uint64_t)bson_iter_date_time(&it);
		r->has_election = true;
		r->election_secs = (uint32_t)(v >> 32);
		r->election_inc = (uint32_t)v;
	}
}

/* Under hb_mu: no answer within the timeout, or a refusal that will not
 * change (mongod's MemberData::setDownValues: the state DOWN, the last
 * answer's optimes and sync source forgotten) -- or, auth, the member's
 * handshake or command refused this member's credentials (setAuthIssue:
 * health 0 too, but state UNKNOWN, no message, `authenticated: false`). */
static void
note_down(hb_member_t *r, int64_t now, const char *msg, bool auth)
{
	r->answered = true;
	r->up = false;
	r->up_since_ms = 0;
	r->last_hb_ms = now;
	r->state = auth ? 6 : 8;
	r->auth_issue = auth;
	if (auth)
		msg = "";
	/* the last answer's optimes go; its wall times and configuration
	 * version stay (MemberData keeps _lastAppliedWallTime, _configVersion) */
	r->applied = r->durable = null_optime;
	r->sync_source[0] = '\0';
	r->has_election = false;
	bson_strncpy(r->msg, msg, sizeof(r->msg));
}

/* A member's reply carries its $clusterTime: this member's clock moves to
 * it, as mongod's replication executor runs VectorClockMetadataHook on
 * every reply (heartbeats included) and its oplog fetcher on each batch --
 * so a secondary knows the primary's cluster time before it applied it,
 * and an afterClusterTime read up to it waits there instead of answering
 * 72.  The member channel is authenticated (keyFile / x.509, or none
 * without auth), so no signature check: mongod's internal gossip. */
static void
gossip_in(engine_t *e, const bson_t *reply)
{
	bson_iter_t it, ct;
	uint32_t secs, inc;

	if (!bson_iter_init_find(&it, reply, "$clusterTime") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &ct) || !bson_iter_find(&ct, "clusterTime") || !BSON_ITER_HOLDS_TIMESTAMP(&ct))
		return;
	bson_iter_timestamp(&ct, &secs, &inc);
	/* mongod's rate limiter (maxAcceptableLogicalClockDriftSecs) first */
	if (e->clock != NULL && repl_clock_advance(e->clock, REPL_TS(secs, inc), NULL) != 0)
		return;
	repl_set_clock_advance(e->rs, secs, inc);
}

/* Under hb_mu: wait ms or until stopping. */
static void
wait_locked(struct cmd_repl_hb *hb, int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	if (!hb->stopping)
		pthread_cond_timedwait(&hb->cond, &hb_mu, &ts);
}

/* wait_locked taking hb_mu itself. */
static void
hb_nap(struct cmd_repl_hb *hb, int64_t ms)
{
	pthread_mutex_lock(&hb_mu);
	wait_locked(hb, ms);
	pthread_mutex_unlock(&hb_mu);
}

/* Whether cmd_repl_hb_stop asked the threads to end. */
static bool
hb_stopping(struct cmd_repl_hb *hb)
{
	bool stop;

	pthread_mutex_lock(&hb_mu);
	stop = hb->stopping;
	pthread_mutex_unlock(&hb_mu);
	return stop;
}

/* One heartbeat to host under cfg (mongod's prepareHeartbeatRequestV1,
 * then processHeartbeatResponse): tried again while it fails quickly,
 * within the heartbeat timeout; the outcome noted in the table. */
static void
heartbeat_once(struct cmd_repl_hb *hb, repl_member_conn_t *conn, const char *host, const bson_t *cfg)
{
	engine_t *e = hb->e;
	repl_set_info_t in;
	bson_t cmd = BSON_INITIALIZER;
	int64_t self_id = -1, primary_id = -1, timeout_ms, start = tm_now_us(), member_id = -1;
	char sync[256], msg[300] = "";
	int failures = 0;
	bool ok = false, auth = false, stop = false;
	bson_t reply;
	int64_t rtt_us = 0;

	repl_set_info(e->rs, &in);
	member_find(cfg, in.self_host, &self_id, NULL, 0);
	member_find(cfg, host, &member_id, NULL, 0);
	self_topology(e, cfg, &in, sync, sizeof(sync), &primary_id);
	timeout_ms = setting_of(cfg, "heartbeatTimeoutSecs", HB_DEFAULT_TIMEOUT_S) * 1000;
	BSON_APPEND_UTF8(&cmd, "replSetHeartbeat", repl_set_name(e->rs));
	BSON_APPEND_INT64(&cmd, "configVersion", in.config_version);
	BSON_APPEND_INT64(&cmd, "configTerm", in.config_term);
	BSON_APPEND_INT64(&cmd, "hbv", 1);
	BSON_APPEND_UTF8(&cmd, "from", in.self_host);
	BSON_APPEND_INT64(&cmd, "fromId", self_id);
	BSON_APPEND_INT64(&cmd, "term", in.term);
	if (primary_id >= 0)
		BSON_APPEND_INT64(&cmd, "primaryId", primary_id);
	for (;;) {
		int64_t left = timeout_ms - (tm_now_us() - start) / 1000;
		terr_t err = TERR_INIT;
		int64_t slice = left < HB_ATTEMPT_MS ? left : HB_ATTEMPT_MS, t0 = tm_now_us();
		if (left <= 0)
			break;
		if (repl_member_conn_call(conn, "admin", &cmd, (int)slice, &reply, &rtt_us, &err) == 0) {
			bson_iter_t it;
			bool good = bson_iter_init_find(&it, &reply, "ok") && bson_iter_as_double(&it) == 1.0;
			if (good) {
				terr_clear(&err);
				gossip_in(e, &reply);
				ok = true;
				break;
			}
			{
				int64_t code = i64_of(&reply, "code", 0);
				const char *m = bson_iter_init_find(&it, &reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ?
				    bson_iter_utf8(&it, NULL) : "";
				bson_strncpy(msg, m, sizeof(msg));
				bson_destroy(&reply);
				/* mongod: an unauthorized heartbeat marks an auth
				 * issue; another set's member is down at once */
				if (code == 13 || code == 18) {
					auth = true;
					stop = true;
				} else if (code == 108)
					stop = true;
			}
		} else {
			char why[200];
			if (repl_member_failure_message(host, why, sizeof(why))) {
				bson_strncpy(msg, why, sizeof(msg));
				auth = strcmp(why, "Authentication failed.") == 0;
				stop = true;
			} else if (tm_now_us() - t0 >= slice * 1000 - 1000) {
				/* no answer within this attempt: a timeout if the whole
				 * period is gone (mongod's text for an exceeded
				 * deadline); another attempt otherwise */
				char iso[40];
				time_t dl = (time_t)((wall_ms() - (tm_now_us() - start) / 1000 + timeout_ms) / 1000);
				struct tm tmv;
				gmtime_r(&dl, &tmv);
				strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S", &tmv);
				snprintf(msg, sizeof(msg), "Request timed out, deadline was %s.000+00:00, op was RemoteCommand -- "
				    "target:[%s] db:admin cmd:{ replSetHeartbeat: \"%s\" }", iso, host, repl_set_name(e->rs));
				failures--;   /* a slice is no failed attempt */
			} else if (err.code == TERR_HOST_UNREACHABLE && strstr(err.msg ? err.msg : "", "Connection refused") != NULL)
				snprintf(msg, sizeof(msg), "Error connecting to %s :: caused by :: Connection refused", host);
			else
				bson_strncpy(msg, err.msg ? err.msg : "heartbeat failed", sizeof(msg));
		}
		terr_clear(&err);
		if (stop || ++failures > HB_MAX_RETRIES)
			break;
		if (hb_stopping(hb))
			break;
	}
	pthread_mutex_lock(&hb_mu);
	if (!hb->stopping) {
		hb_member_t *r = row_of(host, true);
		if (r != NULL) {
			r->member_id = member_id;
			if (ok)
				note_up(r, &reply, wall_ms(), rtt_us / 1000);
			else
				note_down(r, wall_ms(), msg, auth);
		}
	}
	pthread_mutex_unlock(&hb_mu);
	if (ok)
		bson_destroy(&reply);
	bson_destroy(&cmd);
}

/* Whether this node should heartbeat host now: an initiated set of
 * several, this node in it and not REMOVED, host another member. */
static bool
peer_wanted(engine_t *e, const char *host, bson_t *cfg)
{
	repl_set_info_t in;
	int64_t id = -1;

	bson_init(cfg);
	if (e->rs == NULL || !repl_set_initiated(e->rs) || repl_set_member_count(e->rs) <= 1 ||
	    repl_set_state(e->rs) == REPL_STATE_REMOVED)
		return false;
	repl_set_info(e->rs, &in);
	bson_destroy(cfg);
	if (!repl_set_config_copy(e->rs, cfg))
		return false;
	return strcmp(host, in.self_host) != 0 && member_find(cfg, host, &id, NULL, 0);
}

static void *
peer_main(void *arg)
{
	hb_peer_t *p = arg;
	struct cmd_repl_hb *hb = p->hb;
	/* one kept, authenticated connection per peer, as mongod's pool */
	repl_member_conn_t *conn = repl_member_conn_new(p->host);

	tlog_set_ctx("ReplHeartbeat");
	for (;;) {
		bson_t cfg;
		int64_t interval;
		if (hb_stopping(hb))
			break;
		if (!peer_wanted(hb->e, p->host, &cfg)) {
			bson_destroy(&cfg);
			break;
		}
		heartbeat_once(hb, conn, p->host, &cfg);
		interval = cmd_repl_hb_interval_ms(&cfg);
		bson_destroy(&cfg);
		hb_nap(hb, interval);
	}
	repl_member_conn_free(conn);
	pthread_mutex_lock(&hb_mu);
	p->done = true;
	pthread_mutex_unlock(&hb_mu);
	return NULL;
}

/*
 * The position reporter (mongod's Reporter): while this member is a
 * secondary (or RECOVERING), each time its applier published entries it
 * sends replSetUpdatePosition {optimes: [its applied and durable optimes
 * with their wall times, memberId, cfgver]} to its sync source (the
 * primary), so the primary's member data moves within milliseconds
 * instead of a heartbeat interval.  One request in flight on a kept
 * connection; what moved meanwhile goes in the next one (coalesced: one
 * request per applier round at most, whatever the entries per round).
 */
#define REPORT_IDLE_MS 250
/* The shortest time between two reports: under a steady load of single
 * writes (an applier round per write) a report per round would cost both
 * members a command per write (+30-40 us CPU per insert measured on each);
 * after a report the next one waits this long and carries the newest
 * position, so the primary's view stays within ~10 ms plus a round trip.
 * A write after an idle spell is reported at once. */
#define REPORT_MIN_GAP_US 10000
static void *
reporter_main(void *arg)
{
	struct cmd_repl_hb *hb = arg;
	engine_t *e = hb->e;
	repl_member_conn_t *conn = NULL;
	char target[256] = "";
	repl_ts_t sent = 0;
	bool sent_ok = false;
	int64_t next_us = 0;   /* no report before (REPORT_MIN_GAP_US after the last) */

	tlog_set_ctx("ReplReporter");
	for (;;) {
		repl_member_t *m = e->member;
		repl_set_info_t in;
		repl_ts_t now_ts;
		bson_t cfg, cmd = BSON_INITIALIZER, arr, d, reply;
		char sync[256];
		int64_t self_id = -1, primary_id = -1, dwall = 0;
		repl_optime_t dur;
		terr_t err = TERR_INIT;
		bool good = false;

		if (hb_stopping(hb))
			break;
		if (m == NULL || e->rs == NULL || !repl_set_initiated(e->rs)) {
			hb_nap(hb, REPORT_IDLE_MS);
			continue;
		}
		/* the applier's broadcast wakes this; at most REPORT_IDLE_MS to
		 * notice a stop or a new sync source */
		now_ts = sent_ok ? repl_member_wait_local_moved(m, sent, tm_now_us() + REPORT_IDLE_MS * 1000) :
		    repl_member_local_last_ts(m);
		if (sent_ok && now_ts != sent && tm_now_us() < next_us) {
			/* too soon after the last report: wait, then send the
			 * newest position (what moved meanwhile coalesces) */
			int64_t left = next_us - tm_now_us();
			if (left > 0) {
				struct timespec nap = {0, (long)left * 1000};
				nanosleep(&nap, NULL);
			}
			now_ts = repl_member_local_last_ts(m);
		}
		repl_set_info(e->rs, &in);
		if (in.state != REPL_STATE_SECONDARY && in.state != REPL_STATE_RECOVERING) {
			sent_ok = false;
			hb_nap(hb, REPORT_IDLE_MS);
			continue;
		}
		bson_init(&cfg);
		if (repl_set_member_count(e->rs) > 1) {
			bson_destroy(&cfg);
			if (!repl_set_config_copy(e->rs, &cfg))
				bson_init(&cfg);
		}
		self_topology(e, &cfg, &in, sync, sizeof(sync), &primary_id);
		if (sync[0] == '\0' || !member_find(&cfg, in.self_host, &self_id, NULL, 0)) {
			bson_destroy(&cfg);
			sent_ok = false;
			hb_nap(hb, REPORT_IDLE_MS);
			continue;
		}
		bson_destroy(&cfg);
		if (strcmp(sync, target) != 0) {
			repl_member_conn_free(conn);
			conn = repl_member_conn_new(sync);
			bson_strncpy(target, sync, sizeof(target));
			sent_ok = false;
		}
		if (sent_ok && now_ts == sent)
			continue;   /* nothing moved within the idle wait */
		cmd_repl_hb_durable(e, &in, &dur, &dwall);
		BSON_APPEND_INT32(&cmd, "replSetUpdatePosition", 1);
		BSON_APPEND_ARRAY_BEGIN(&cmd, "optimes", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &d);
		repl_optime_append(&d, "durableOpTime", &dur);
		BSON_APPEND_DATE_TIME(&d, "durableWallTime", dwall);
		repl_optime_append(&d, "appliedOpTime", &in.last_applied);
		BSON_APPEND_DATE_TIME(&d, "appliedWallTime", in.last_applied_wall_ms);
		BSON_APPEND_INT64(&d, "memberId", self_id);
		BSON_APPEND_INT64(&d, "cfgver", in.config_version);
		bson_append_document_end(&arr, &d);
		bson_append_array_end(&cmd, &arr);
		if (repl_member_conn_call(conn, "admin", &cmd, HB_ATTEMPT_MS, &reply, NULL, &err) == 0) {
			bson_iter_t it;
			good = bson_iter_init_find(&it, &reply, "ok") && bson_iter_as_double(&it) == 1.0;
			bson_destroy(&reply);
		}
		terr_clear(&err);
		bson_destroy(&cmd);
		sent_ok = good;
		sent = now_ts;
		next_us = tm_now_us() + REPORT_MIN_GAP_US;
		if (!good) {
			/* a refusal (another configuration version: the heartbeats
			 * bring the new one) or no answer: try again a little later */
			hb_nap(hb, REPORT_IDLE_MS);
		}
	}
	repl_member_conn_free(conn);
	return NULL;
}

/* The manager: a thread per other member of the configuration, started
 * as members appear, joined once their member left it. */
static void *
manager_main(void *arg)
{
	struct cmd_repl_hb *hb = arg;

	tlog_set_ctx("ReplHeartbeat");
	pthread_mutex_lock(&hb_mu);
	while (!hb->stopping) {
		bson_t cfg;
		bson_iter_t it, m, f;
		repl_set_info_t in;
		engine_t *e = hb->e;

		/* join the threads whose member left */
		for (int i = 0; i < REPL_MAX_MEMBERS; i++)
			if (hb->peers[i].started && hb->peers[i].done) {
				pthread_t t = hb->peers[i].thread;
				hb->peers[i].started = false;
				pthread_mutex_unlock(&hb_mu);
				pthread_join(t, NULL);
				pthread_mutex_lock(&hb_mu);
			}
		pthread_mutex_unlock(&hb_mu);
		bson_init(&cfg);
		if (e->rs != NULL && repl_set_initiated(e->rs) && repl_set_member_count(e->rs) > 1 &&
		    repl_set_state(e->rs) != REPL_STATE_REMOVED) {
			bson_destroy(&cfg);
			repl_set_config_copy(e->rs, &cfg);
		}
		repl_set_info(e->rs, &in);
		pthread_mutex_lock(&hb_mu);
		if (!hb->stopping && bson_iter_init_find(&it, &cfg, "members") && bson_iter_recurse(&it, &m))
			while (bson_iter_next(&m)) {
				const char *h;
				int free_slot = -1;
				bool have = false;
				if (!bson_iter_recurse(&m, &f) || !bson_iter_find(&f, "host") || !BSON_ITER_HOLDS_UTF8(&f))
					continue;
				h = bson_iter_utf8(&f, NULL);
				if (strcmp(h, in.self_host) == 0)
					continue;
				for (int i = 0; i < REPL_MAX_MEMBERS; i++) {
					if (hb->peers[i].started && !hb->peers[i].done && strcmp(hb->peers[i].host, h) == 0)
						have = true;
					if (!hb->peers[i].started && free_slot < 0)
						free_slot = i;
				}
				if (have || free_slot < 0)
					continue;
				{
					hb_peer_t *p = &hb->peers[free_slot];
					bson_strncpy(p->host, h, sizeof(p->host));
					p->hb = hb;
					p->done = false;
					p->started = pthread_create(&p->thread, NULL, peer_main, p) == 0;
				}
			}
		bson_destroy(&cfg);
		wait_locked(hb, 500);
	}
	pthread_mutex_unlock(&hb_mu);
	return NULL;
}

static bool heard_max(uint64_t *ts, int64_t *t);

void
cmd_repl_hb_start(engine_t *e)
{
	struct cmd_repl_hb *hb;

	pthread_mutex_lock(&hb_mu);
	if (e->heartbeats != NULL || e->rs == NULL) {
		pthread_mutex_unlock(&hb_mu);
		return;
	}
	hb = bson_malloc0(sizeof(*hb));
	hb->e = e;
	pthread_cond_init(&hb->cond, NULL);
	if (pthread_create(&hb->manager, NULL, manager_main, hb) != 0) {
		pthread_cond_destroy(&hb->cond);
		bson_free(hb);
		pthread_mutex_unlock(&hb_mu);
		return;
	}
	hb->reporter_started = pthread_create(&hb->reporter, NULL, reporter_main, hb) == 0;
	e->heartbeats = hb;
	pthread_mutex_unlock(&hb_mu);
	repl_election_set_heard_max(heard_max);
}

void
cmd_repl_hb_stop(engine_t *e)
{
	struct cmd_repl_hb *hb;

	pthread_mutex_lock(&hb_mu);
	hb = e->heartbeats;
	e->heartbeats = NULL;
	if (hb != NULL) {
		hb->stopping = true;
		pthread_cond_broadcast(&hb->cond);
	}
	pthread_mutex_unlock(&hb_mu);
	if (hb == NULL)
		return;
	pthread_join(hb->manager, NULL);
	if (hb->reporter_started)
		pthread_join(hb->reporter, NULL);
	for (int i = 0; i < REPL_MAX_MEMBERS; i++)
		if (hb->peers[i].started)
			pthread_join(hb->peers[i].thread, NULL);
	pthread_cond_destroy(&hb->cond);
	bson_free(hb);
	repl_election_set_heard_max(NULL);
	pthread_mutex_lock(&hb_mu);
	ntable = 0;
	pthread_mutex_unlock(&hb_mu);
}

/* maxAppliedOpTimeInSet's other source (repl/election_log.h): the newest
 * applied optime a member that is up answered. */
static bool
heard_max(uint64_t *ts, int64_t *t)
{
	bool any = false;

	pthread_mutex_lock(&hb_mu);
	for (int i = 0; i < ntable; i++) {
		uint64_t v = REPL_TS(table[i].applied.secs, table[i].applied.inc);
		if (table[i].answered && table[i].up && (!any || v > *ts)) {
			*ts = v;
			*t = table[i].applied.term;
			any = true;
		}
	}
	pthread_mutex_unlock(&hb_mu);
	return any;
}

/* ---- what status shows ----------------------------------------------------------------------------------- */

static const char *
state_name(int s)
{
	static const char *const names[] = {"STARTUP", "PRIMARY", "SECONDARY", "RECOVERING", "STARTUP", "STARTUP2",
	                                    "UNKNOWN", "ARBITER", "DOWN", "ROLLBACK", "REMOVED"};

	return s >= 0 && s < (int)(sizeof(names) / sizeof(names[0])) ? names[s] : "UNKNOWN";
}

bool
cmd_repl_hb_member_append(engine_t *e, bson_t *m, const char *host, const bson_t *cfg, bool raft_down,
                          const char *raft_msg, int64_t raft_contact_ms, int64_t now)
{
	hb_member_t r;
	bool have = false;
	int64_t sync_id = -1;

	(void)e;
	pthread_mutex_lock(&hb_mu);
	{
		hb_member_t *p = row_of(host, false);
		if (p != NULL && p->answered) {
			r = *p;
			have = true;
		}
	}
	pthread_mutex_unlock(&hb_mu);
	if (!have)
		return false;
	/* the leader's Raft traffic reaches every member several times per
	 * heartbeat: where it is fresher it wins (a member Raft lost is down
	 * even if its last heartbeat answered; one Raft heard from after a
	 * failed heartbeat is left to Raft's view) */
	if (!r.up && !raft_down && raft_contact_ms > r.last_hb_ms)
		return false;
	if (r.up && raft_down) {
		r.up = false;
		r.up_since_ms = 0;
		r.state = 8;
		r.applied = r.durable = null_optime;
		r.sync_source[0] = '\0';
		r.has_election = false;
		bson_strncpy(r.msg, raft_msg != NULL ? raft_msg : "", sizeof(r.msg));
	}
	/* mongod's prepareStatusResponse for a member other than self */
	BSON_APPEND_DOUBLE(m, "health", r.up ? 1.0 : 0.0);
	BSON_APPEND_INT32(m, "state", r.state);
	BSON_APPEND_UTF8(m, "stateStr", r.up ? state_name(r.state) : "(not reachable/healthy)");
	BSON_APPEND_INT64(m, "uptime", r.up && r.up_since_ms > 0 ? (now - r.up_since_ms) / 1000 : 0);
	repl_optime_append(m, "optime", &r.applied);
	repl_optime_append(m, "optimeDurable", &r.durable);
	BSON_APPEND_DATE_TIME(m, "optimeDate", (int64_t)r.applied.secs * 1000);
	BSON_APPEND_DATE_TIME(m, "optimeDurableDate", (int64_t)r.durable.secs * 1000);
	BSON_APPEND_DATE_TIME(m, "lastAppliedWallTime", r.applied_wall_ms);
	BSON_APPEND_DATE_TIME(m, "lastDurableWallTime", r.durable_wall_ms);
	BSON_APPEND_DATE_TIME(m, "lastHeartbeat", r.last_hb_ms);
	BSON_APPEND_DATE_TIME(m, "lastHeartbeatRecv", r.last_hb_recv_ms);
	/* mongod's UninitializedPing (-1) until a round trip */
	BSON_APPEND_INT64(m, "pingMs", r.ping_ms);
	BSON_APPEND_UTF8(m, "lastHeartbeatMessage", r.msg);
	if (r.auth_issue)
		BSON_APPEND_BOOL(m, "authenticated", false);
	if (r.sync_source[0] != '\0' && r.state != REPL_STATE_PRIMARY) {
		BSON_APPEND_UTF8(m, "syncSourceHost", r.sync_source);
		if (!member_find(cfg, r.sync_source, &sync_id, NULL, 0))
			sync_id = -1;
		BSON_APPEND_INT32(m, "syncSourceId", (int32_t)sync_id);
	} else {
		BSON_APPEND_UTF8(m, "syncSourceHost", "");
		BSON_APPEND_INT32(m, "syncSourceId", -1);
	}
	BSON_APPEND_UTF8(m, "infoMessage", "");
	if (r.up && r.state == REPL_STATE_PRIMARY && r.has_election) {
		BSON_APPEND_TIMESTAMP(m, "electionTime", r.election_secs, r.election_inc);
		BSON_APPEND_DATE_TIME(m, "electionDate", (int64_t)r.election_secs * 1000);
	}
	BSON_APPEND_INT64(m, "configVersion", r.config_version);
	BSON_APPEND_INT64(m, "configTerm", r.config_term);
	return true;
}

void
cmd_repl_hb_progress_append(engine_t *e, bson_t *out)
{
	bson_t cfg, arr;
	bson_iter_t it, m, f;
	repl_set_info_t in;
	int k = 0;

	if (e->rs == NULL || !repl_set_initiated(e->rs))
		return;
	repl_set_info(e->rs, &in);
	if (!repl_set_config_copy(e->rs, &cfg)) {
		bson_destroy(&cfg);
		return;
	}
	/* mongod's TopologyCoordinator::fillMemberData: one entry per member
	 * of the configuration, self included: its durable optime, applied
	 * optime, and the two as its last heartbeat said them */
	BSON_APPEND_ARRAY_BEGIN(out, "replicationProgress", &arr);
	if (bson_iter_init_find(&it, &cfg, "members") && bson_iter_recurse(&it, &m))
		while (bson_iter_next(&m)) {
			const char *h = NULL;
			int64_t id = -1;
			char key[16];
			bson_t d;
			repl_optime_t app = null_optime, dur = null_optime, hb_app = null_optime, hb_dur = null_optime;
			if (!bson_iter_recurse(&m, &f))
				continue;
			while (bson_iter_next(&f)) {
				if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
					h = bson_iter_utf8(&f, NULL);
				else if (strcmp(bson_iter_key(&f), "_id") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
					id = bson_iter_as_int64(&f);
			}
			if (h == NULL)
				continue;
			if (strcmp(h, in.self_host) == 0) {
				int64_t w;
				app = in.last_applied;
				cmd_repl_hb_durable(e, &in, &dur, &w);
			} else {
				pthread_mutex_lock(&hb_mu);
				{
					hb_member_t *p = row_of(h, false);
					/* MemberData's lastApplied/lastDurable (heartbeats and
					 * replSetUpdatePosition), then the last heartbeat's */
					if (p != NULL) {
						app = p->last_applied;
						dur = p->last_durable;
					}
					if (p != NULL && p->answered && p->up) {
						hb_app = p->applied;
						hb_dur = p->durable;
					}
				}
				pthread_mutex_unlock(&hb_mu);
			}
			snprintf(key, sizeof(key), "%d", k++);
			BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &d);
			BSON_APPEND_UTF8(&d, "host", h);
			repl_optime_append(&d, "optime", &dur);
			repl_optime_append(&d, "lastAppliedOpTime", &app);
			repl_optime_append(&d, "heartbeatAppliedOpTime", &hb_app);
			repl_optime_append(&d, "heartbeatDurableOpTime", &hb_dur);
			BSON_APPEND_INT64(&d, "memberId", id);
			bson_append_document_end(&arr, &d);
		}
	bson_append_array_end(out, &arr);
	bson_destroy(&cfg);
}
