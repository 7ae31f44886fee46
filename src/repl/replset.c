/*
 * replset.c -- the single-member replica set's identity and state: the
 * configuration (checked and completed as mongod's ReplSetConfig does,
 * stored in local.system.replset), the term and vote (local.replset.election),
 * the member state and its timed stepdown / freeze, the topology counter,
 * and the cluster clock until repl/clock.h takes over.
 *
 * Contracts are in replset.h.  The stored documents are single-document
 * collections written in their own durable WiredTiger transaction.
 */
#include "repl/replset.h"
#include "repl/clock.h"
#include "repl/election_log.h"
#include "repl/oplog.h"
#include "common/opctx.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opctx.h"

#define CONFIG_COLL "system.replset"
#define ELECTION_COLL "replset.election"

struct repl_set {
	storage_t *st;
	char *name;
	char *self;                   /* host:port of this node, or NULL */
	pthread_mutex_t lock;
	pthread_cond_t changed;       /* topology counter moved */
	bool initiated;
	bson_t *config;               /* completed configuration, or NULL */
	int64_t config_version, config_term;
	int self_index, self_id;
	char self_host[256];
	int64_t term;
	bool on_raft;                 /* this node's Raft server elects, not the single-member path */
	repl_member_state_t state;
	repl_member_state_t logged_state;   /* the state the last 21358 line named */
	int64_t stepdown_until_ms, freeze_until_ms;
	int maintenance;              /* replSetMaintenance calls not yet undone */
	repl_optime_t election_optime;
	int64_t election_wall_ms;
	repl_optime_t last_applied;
	int64_t last_applied_wall_ms;
	uint32_t clock_secs, clock_inc;  /* cluster time (>= last_applied) */
	/* with an oplog (repl_set_attach_oplog): its clock is the cluster
	 * time and its newest entry the last applied optime */
	repl_oplog_t *oplog;
	uint64_t topology_counter;
	int64_t start_wall_ms;
	/* members in the configuration: more than one means the set runs on
	 * Raft (repl/raft_member.h), which decides the state and the term;
	 * this module then never elects itself */
	int nmembers;
};

static bson_oid_t process_id;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void
process_init(void)
{
	bson_oid_init(&process_id, NULL);
}

const bson_oid_t *
repl_set_process_id(void)
{
	pthread_once(&process_once, process_init);
	return &process_id;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* ---- the clock (until repl/clock.h) ------------------------------------------------ */

static void
tick_locked(repl_set_t *rs, uint32_t *secs, uint32_t *inc)
{
	if (rs->oplog != NULL) {
		/* the oplog's clock reserves Timestamps for entries; here we only
		 * read it (reserving one would leave a Timestamp no entry has) */
		repl_ts_t now = repl_clock_now(repl_oplog_clock(rs->oplog));
		*secs = repl_ts_secs(now);
		*inc = repl_ts_inc(now);
		rs->clock_secs = *secs;
		rs->clock_inc = *inc;
		rs->last_applied.secs = *secs;
		rs->last_applied.inc = *inc;
		rs->last_applied.term = rs->term > 0 ? rs->term : -1;
		rs->last_applied_wall_ms = wall_ms();
		return;
	}
	uint32_t now = (uint32_t)(wall_ms() / 1000);

	if (now > rs->clock_secs) {
		rs->clock_secs = now;
		rs->clock_inc = 1;
	} else if (rs->clock_inc == UINT32_MAX) {
		rs->clock_secs++;
		rs->clock_inc = 1;
	} else {
		rs->clock_inc++;
	}
	*secs = rs->clock_secs;
	*inc = rs->clock_inc;
	rs->last_applied.secs = *secs;
	rs->last_applied.inc = *inc;
	rs->last_applied.term = rs->term > 0 ? rs->term : -1;
	rs->last_applied_wall_ms = wall_ms();
}

void
repl_set_attach_oplog(repl_set_t *rs, repl_oplog_t *oplog)
{
	pthread_mutex_lock(&rs->lock);
	rs->oplog = oplog;
	pthread_mutex_unlock(&rs->lock);
}

/* The oplog's newest visible entry as last_applied (read outside the lock:
 * the oplog's writers read the term under it). */
static void
last_applied_from_oplog(repl_set_t *rs)
{
	repl_oplog_optime_t ot;

	if (rs->oplog == NULL)
		return;
	ot = repl_oplog_last_optime(rs->oplog);
	if (ot.ts == 0)
		return;
	pthread_mutex_lock(&rs->lock);
	if (REPL_TS(rs->last_applied.secs, rs->last_applied.inc) != ot.ts) {
		rs->last_applied.secs = repl_ts_secs(ot.ts);
		rs->last_applied.inc = repl_ts_inc(ot.ts);
		rs->last_applied.term = ot.t;
		rs->last_applied_wall_ms = wall_ms();
	}
	pthread_mutex_unlock(&rs->lock);
}

void
repl_set_clock_tick(repl_set_t *rs, uint32_t *secs, uint32_t *inc)
{
	if (rs->oplog != NULL) {
		/* a write's operationTime: the cluster time after it (its entry's
		 * ts or later); last applied is refreshed where it is read
		 * (repl_set_info), not on every write */
		repl_ts_t now = repl_clock_now(repl_oplog_clock(rs->oplog));
		*secs = repl_ts_secs(now);
		*inc = repl_ts_inc(now);
		return;
	}
	pthread_mutex_lock(&rs->lock);
	tick_locked(rs, secs, inc);
	pthread_mutex_unlock(&rs->lock);
}

void
repl_set_clock_now(repl_set_t *rs, uint32_t *secs, uint32_t *inc)
{
	if (rs->oplog != NULL) {
		repl_ts_t now = repl_clock_now(repl_oplog_clock(rs->oplog));
		*secs = repl_ts_secs(now);
		*inc = repl_ts_inc(now);
		return;
	}
	pthread_mutex_lock(&rs->lock);
	*secs = rs->clock_secs;
	*inc = rs->clock_inc;
	pthread_mutex_unlock(&rs->lock);
}

void
repl_set_clock_advance(repl_set_t *rs, uint32_t secs, uint32_t inc)
{
	if (rs->oplog != NULL) {
		/* the drift limit was checked by the caller (repl_clock_advance) */
		(void)repl_clock_advance(repl_oplog_clock(rs->oplog), REPL_TS(secs, inc), NULL);
		return;
	}
	pthread_mutex_lock(&rs->lock);
	if (secs > rs->clock_secs || (secs == rs->clock_secs && inc > rs->clock_inc)) {
		rs->clock_secs = secs;
		rs->clock_inc = inc;
	}
	pthread_mutex_unlock(&rs->lock);
}

/* ---- stored single-document collections ------------------------------------------- */

typedef struct store_op {
	storage_t *st;
	const char *coll;
	const bson_t *doc;     /* put: the document; NULL = get */
	bson_t *out;           /* get: initialised when found */
	bool found;
} store_op_t;

static int
store_fn(storage_session_t *s, void *arg, terr_t *err)
{
	store_op_t *op = arg;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t doc;
	int r, ret = 0;

	op->found = false;
	if (storage_coll_get(op->st, "local", op->coll, &c, err) != 0) {
		terr_clear(err);
		if (op->doc == NULL)
			return 0;
		r = storage_coll_create(op->st, s, "local", op->coll, NULL, err);
		if (r != 0 && err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
		if (storage_coll_get(op->st, "local", op->coll, &c, err) != 0)
			return terr_set(err, TERR_INTERNAL_ERROR, "local.%s vanished", op->coll);
	}
	ERR(storage_scan_open(s, c, false, &cur, err));
	/* put: every document goes (a single-document collection), then the new
	 * one; get: the first */
	while ((r = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		if (op->doc == NULL) {
			bson_copy_to(&doc, op->out);
			op->found = true;
			break;
		} else {
			bson_t old;
			bson_copy_to(&doc, &old);
			ret = storage_doc_delete(s, c, rid, &old, err);
			bson_destroy(&old);
			if (ret != 0)
				goto err;
		}
	}
	if (r < 0)
		ERR(-1);
	storage_cursor_close(cur);
	cur = NULL;
	if (op->doc != NULL)
		ERR(storage_doc_insert(s, c, op->doc, NULL, err));
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_coll_release(c);
	return ret;
}

static int
store_run(storage_t *st, const char *coll, const bson_t *doc, bson_t *out, bool *found, terr_t *err)
{
	storage_session_t *s = storage_session_pool_get(st, err);
	store_op_t op = {st, coll, doc, out, false};
	int r;

	if (s == NULL)
		return -1;
	r = storage_txn_run(s, store_fn, &op, doc != NULL, err);
	storage_session_pool_put(st, s);
	if (r != 0) {
		if (op.found)
			bson_destroy(out);
		return -1;
	}
	if (found != NULL)
		*found = op.found;
	return 0;
}

/* ---- configuration checks ----------------------------------------------------------- */

static const char *
type_name(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_DOUBLE: return "double";
	case BSON_TYPE_UTF8: return "string";
	case BSON_TYPE_DOCUMENT: return "object";
	case BSON_TYPE_ARRAY: return "array";
	case BSON_TYPE_BOOL: return "bool";
	case BSON_TYPE_NULL: return "null";
	case BSON_TYPE_INT32: return "int";
	case BSON_TYPE_INT64: return "long";
	case BSON_TYPE_DECIMAL128: return "decimal";
	case BSON_TYPE_OID: return "objectId";
	case BSON_TYPE_DATE_TIME: return "date";
	case BSON_TYPE_TIMESTAMP: return "timestamp";
	default: return "unknown";
	}
}

static bool
is_number(const bson_iter_t *it)
{
	return BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it) || BSON_ITER_HOLDS_DOUBLE(it) ||
	    BSON_ITER_HOLDS_DECIMAL128(it);
}

/* mongod's safeInt64 / safeNumber reading: a whole number in range. */
static int
whole(const bson_iter_t *it, const char *where, int64_t *out, terr_t *err)
{
	double d;

	if (BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it)) {
		*out = bson_iter_as_int64(it);
		return 0;
	}
	if (BSON_ITER_HOLDS_DOUBLE(it)) {
		d = bson_iter_double(it);
		if (d != d || d < -9.2e18 || d > 9.2e18 || d != (double)(int64_t)d)
			return terr_set(err, TERR_BAD_VALUE, "Expected field \"%s\" to have a value exactly representable as a 64-bit integer, but found %g",
			    where, d);
		*out = (int64_t)d;
		return 0;
	}
	return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s' is the wrong type '%s', expected types '[long, int, decimal, double']",
	    where, type_name(bson_iter_type(it)));
}

/* The port of host:port (27017 when absent), 0 when malformed. */
static int
host_port(const char *h, char *host, size_t hlen)
{
	const char *colon = strrchr(h, ':');
	size_t n = colon ? (size_t)(colon - h) : strlen(h);
	long p = 27017;

	if (colon != NULL) {
		char *end;
		p = strtol(colon + 1, &end, 10);
		if (*end != '\0' || colon[1] == '\0' || p <= 0 || p > 65535)
			return 0;
	}
	if (n == 0 || n >= hlen)
		return 0;
	memcpy(host, h, n);
	host[n] = '\0';
	return (int)p;
}

/* Does member host h name this node (self = "addr:port")?  As mongod's
 * isSelf: the same port, and the address is ours or a loopback name. */
static bool
host_is_self(const char *h, const char *self)
{
	char a[256], b[256];
	int pa, pb;

	if (self == NULL)
		return false;
	if (strcmp(h, self) == 0)
		return true;
	pa = host_port(h, a, sizeof(a));
	pb = host_port(self, b, sizeof(b));
	if (pa == 0 || pa != pb)
		return false;
	if (strcmp(a, b) == 0 || strcmp(a, "localhost") == 0 || strcmp(a, "127.0.0.1") == 0 ||
	    strcmp(a, "::1") == 0)
		return true;
	{
		char hn[256];
		if (gethostname(hn, sizeof(hn)) == 0) {
			hn[sizeof(hn) - 1] = '\0';
			if (strcasecmp(a, hn) == 0)
				return true;
		}
	}
	return false;
}

/* Whether member host h names another port than self's ("addr:port"):
 * then it is never this node. */
static bool
other_port(const char *h, const char *self)
{
	char a[256], b[256];
	int pa, pb;

	if (self == NULL)
		return false;
	pa = host_port(h, a, sizeof(a));
	pb = host_port(self, b, sizeof(b));
	return pa != 0 && pb != 0 && pa != pb;
}

static const char *const config_fields[] = {
	"_id", "version", "term", "members", "protocolVersion", "writeConcernMajorityJournalDefault",
	"settings", "configsvr", NULL,
};
static const char *const member_fields[] = {
	"_id", "host", "arbiterOnly", "buildIndexes", "hidden", "priority", "tags", "secondaryDelaySecs",
	"votes", "newlyAdded", NULL,
};
static const char *const settings_fields[] = {
	"chainingAllowed", "heartbeatIntervalMillis", "heartbeatTimeoutSecs", "electionTimeoutMillis",
	"catchUpTimeoutMillis", "catchUpTakeoverDelayMillis", "getLastErrorModes", "getLastErrorDefaults",
	"replicaSetId", NULL,
};

static bool
known(const char *const *list, const char *k)
{
	for (; *list; list++)
		if (strcmp(*list, k) == 0)
			return true;
	return false;
}

/* One member: its fields as mongod's MemberConfig IDL and checks read them. */
static int
check_member(bson_iter_t *m, int idx, int64_t *id, const char **host, bool *electable, bool *voter,
             terr_t *err)
{
	bson_iter_t f;
	double priority = 1;
	int64_t votes = 1;
	bool arbiter = false, have_id = false, hidden = false, build = true;
	char where[96];

	*host = NULL;
	if (!BSON_ITER_HOLDS_DOCUMENT(m))
		return terr_set(err, TERR_TYPE_MISMATCH, "Expected type object for members.%d, found %s", idx,
		    type_name(bson_iter_type(m)));
	bson_iter_recurse(m, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (!known(member_fields, k))
			return terr_set(err, 40415, "BSON field 'MemberConfig.%s' is an unknown field.", k);
		snprintf(where, sizeof(where), "MemberConfig.%s", k);
		if (strcmp(k, "_id") == 0) {
			RET(whole(&f, where, id, err));
			if (*id < 0 || *id > 255)
				return terr_set(err, TERR_BAD_VALUE, "_id field value of %lld is out of range.", (long long)*id);
			have_id = true;
		} else if (strcmp(k, "host") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'MemberConfig.host' is the wrong type '%s', expected type 'string'",
				    type_name(bson_iter_type(&f)));
			*host = bson_iter_utf8(&f, NULL);
		} else if (strcmp(k, "priority") == 0) {
			if (!is_number(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'MemberConfig.priority' is the wrong type '%s', expected types '[long, int, decimal, double']",
				    type_name(bson_iter_type(&f)));
			priority = bson_iter_as_double(&f);
			if (!(priority >= 0 && priority <= 1000))
				return terr_set(err, TERR_BAD_VALUE, "priority field value of %g is out of range", priority);
		} else if (strcmp(k, "votes") == 0) {
			RET(whole(&f, where, &votes, err));
			if (votes != 0 && votes != 1)
				return terr_set(err, TERR_BAD_VALUE, "votes field value is %lld but must be 0 or 1",
				    (long long)votes);
		} else if (strcmp(k, "arbiterOnly") == 0 || strcmp(k, "buildIndexes") == 0 ||
		    strcmp(k, "hidden") == 0 || strcmp(k, "newlyAdded") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'MemberConfig.%s' is the wrong type '%s', expected type 'bool'", k,
				    type_name(bson_iter_type(&f)));
			if (strcmp(k, "arbiterOnly") == 0)
				arbiter = bson_iter_bool(&f);
			else if (strcmp(k, "hidden") == 0)
				hidden = bson_iter_bool(&f);
			else if (strcmp(k, "buildIndexes") == 0)
				build = bson_iter_bool(&f);
		} else if (strcmp(k, "tags") == 0) {
			bson_iter_t t;
			if (!BSON_ITER_HOLDS_DOCUMENT(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'MemberConfig.tags' is the wrong type '%s', expected type 'object'",
				    type_name(bson_iter_type(&f)));
			bson_iter_recurse(&f, &t);
			while (bson_iter_next(&t))
				if (!BSON_ITER_HOLDS_UTF8(&t))
					return terr_set(err, TERR_TYPE_MISMATCH, "tags.%s field has non-string value of type %s",
					    bson_iter_key(&t), type_name(bson_iter_type(&t)));
		} else if (strcmp(k, "secondaryDelaySecs") == 0) {
			int64_t d;
			RET(whole(&f, where, &d, err));
			if (d < 0)
				return terr_set(err, TERR_BAD_VALUE, "secondaryDelaySecs field value of %lld is out of range",
				    (long long)d);
			if (d > 0 && priority != 0)
				return terr_set(err, TERR_BAD_VALUE, "priority must be 0 when secondaryDelaySecs is used");
		}
	}
	if (!have_id)
		return terr_set(err, 40414, "BSON field 'MemberConfig._id' is missing but a required field");
	if (*host == NULL)
		return terr_set(err, 40414, "BSON field 'MemberConfig.host' is missing but a required field");
	{
		char h[256];
		if (host_port(*host, h, sizeof(h)) == 0)
			return terr_set(err, TERR_FAILED_TO_PARSE, "Empty host component parsing HostAndPort from \"%s\"",
			    *host);
	}
	if (arbiter && priority != 1 && priority != 0)
		return terr_set(err, TERR_BAD_VALUE, "priority must be 0 when arbiterOnly=true");
	if (hidden && priority != 0)
		return terr_set(err, TERR_BAD_VALUE, "priority must be 0 when hidden=true");
	if (!build && priority != 0)
		return terr_set(err, TERR_BAD_VALUE, "priority must be 0 when buildIndexes=false");
	*electable = !arbiter && priority > 0 && votes == 1;
	*voter = votes == 1;
	return 0;
}

/*
 * The checks in mongod's order: the whole document parsed (a field's fault,
 * 93), then the set name against the command line's, then ReplSetConfig's
 * validate (a fault of the whole set, *validate), then the initiate-only
 * version and finding this node.  A whole-set fault seen while the members
 * are read waits in `later` until the parse and the name passed.
 */
static int
config_check(const bson_t *cfg, const char *set_name, const char *self_host, bool initiate, int *self_index,
             bool *validate, terr_t *later, terr_t *err)
{
	bson_iter_t it, m;
	const char *id = NULL;
	bool have_version = false, have_members = false;
	int64_t version = 1, ids[REPL_MAX_MEMBERS + 1];
	const char *hosts[REPL_MAX_MEMBERS + 1];
	int n = 0, voters = 0, electable = 0, self = -1, self_electable = 0;

	*self_index = -1;
	*validate = false;
	if (!bson_iter_init(&it, cfg))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON");
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (!known(config_fields, k))
			return terr_set(err, 40415, "BSON field 'ReplSetConfig.%s' is an unknown field.", k);
		if (strcmp(k, "_id") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'ReplSetConfig._id' is the wrong type '%s', expected type 'string'",
				    type_name(bson_iter_type(&it)));
			id = bson_iter_utf8(&it, NULL);
		} else if (strcmp(k, "version") == 0) {
			RET(whole(&it, "ReplSetConfig.version", &version, err));
			have_version = true;
		} else if (strcmp(k, "term") == 0) {
			int64_t t;
			RET(whole(&it, "ReplSetConfig.term", &t, err));
		} else if (strcmp(k, "protocolVersion") == 0) {
			int64_t pv;
			RET(whole(&it, "ReplSetConfig.protocolVersion", &pv, err));
			if (pv != 1)
				return terr_set(err, TERR_BAD_VALUE,
				    "protocolVersion field value of %lld is not 1; other protocol versions are not supported",
				    (long long)pv);
		} else if (strcmp(k, "writeConcernMajorityJournalDefault") == 0 || strcmp(k, "configsvr") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'ReplSetConfig.%s' is the wrong type '%s', expected type 'bool'", k,
				    type_name(bson_iter_type(&it)));
			if (strcmp(k, "configsvr") == 0 && bson_iter_bool(&it))
				return terr_set(err, TERR_BAD_VALUE,
				    "Nodes being used for config servers must be started with the --configsvr flag");
		} else if (strcmp(k, "settings") == 0) {
			bson_iter_t s;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'ReplSetConfig.settings' is the wrong type '%s', expected type 'object'",
				    type_name(bson_iter_type(&it)));
			bson_iter_recurse(&it, &s);
			while (bson_iter_next(&s)) {
				if (!known(settings_fields, bson_iter_key(&s)))
					return terr_set(err, 40415, "BSON field 'ReplSetConfigSettings.%s' is an unknown field.",
					    bson_iter_key(&s));
				if (strcmp(bson_iter_key(&s), "getLastErrorModes") == 0 && !BSON_ITER_HOLDS_DOCUMENT(&s))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'ReplSetConfigSettings.getLastErrorModes' is the wrong type '%s', expected type 'object'",
					    type_name(bson_iter_type(&s)));
			}
		} else if (strcmp(k, "members") == 0) {
			if (!BSON_ITER_HOLDS_ARRAY(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'ReplSetConfig.members' is the wrong type '%s', expected type 'array'",
				    type_name(bson_iter_type(&it)));
			have_members = true;
			bson_iter_recurse(&it, &m);
			while (bson_iter_next(&m)) {
				bool el = false, vo = false;
				if (n >= REPL_MAX_MEMBERS) {
					if (later->code == 0)
						terr_set(later, TERR_BAD_VALUE,
						    "Replica set configuration contains more than %d members, but must have at most %d",
						    REPL_MAX_MEMBERS, REPL_MAX_MEMBERS);
					/* the members past the limit are still parsed (into
					 * the spare slot): their field faults come first */
					RET(check_member(&m, n, &ids[n], &hosts[n], &el, &vo, err));
					continue;
				}
				RET(check_member(&m, n, &ids[n], &hosts[n], &el, &vo, err));
				for (int j = 0; j < n && later->code == 0; j++) {
					if (ids[j] == ids[n])
						terr_set(later, TERR_BAD_VALUE,
						    "Found two member configurations with same _id field, members.%d._id == members.%d._id == %lld",
						    j, n, (long long)ids[n]);
					else if (strcmp(hosts[j], hosts[n]) == 0)
						terr_set(later, TERR_BAD_VALUE,
						    "Found two member configurations with same host field, members.%d.host == members.%d.host == %s",
						    j, n, hosts[n]);
				}
				voters += vo;
				electable += el;
				if (host_is_self(hosts[n], self_host) && self < 0) {
					self = n;
					self_electable = el;
				}
				n++;
			}
		}
	}
	if (id == NULL)
		return terr_set(err, 40414, "BSON field 'ReplSetConfig._id' is missing but a required field");
	if (!have_version && !initiate)
		return terr_set(err, 40414, "BSON field 'ReplSetConfig.version' is missing but a required field");
	if (version <= 0 || version > INT32_MAX)
		return terr_set(err, TERR_BAD_VALUE, "version field value of %lld is out of range", (long long)version);
	if (!have_members)
		return terr_set(err, 40414, "BSON field 'ReplSetConfig.members' is missing but a required field");
	/* mongod's replSetInitiate / replSetReconfig compare the set name
	 * right after the parse (93 both) */
	if (set_name != NULL && strcmp(id, set_name) != 0) {
		if (initiate)
			return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG,
			    "Rejecting initiate with a set name that differs from command line set name, initiate set name: %s, command line set name: %s",
			    id, set_name);
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG,
		    "Rejecting reconfig where new config set name differs from command line set name, new config set name: %s, old config set name: %s",
		    id, set_name);
	}
	*validate = true;
	if (id[0] == '\0')
		return terr_set(err, TERR_BAD_VALUE, "Replica set configuration must have non-empty _id field");
	if (n == 0)
		return terr_set(err, TERR_BAD_VALUE, "Replica set configuration must contain at least one member");
	if (later->code != 0)
		return terr_move(err, later), -1;
	if (voters > REPL_MAX_VOTING_MEMBERS)
		return terr_set(err, TERR_BAD_VALUE,
		    "Replica set configuration contains %d voting members, but must be at least 1 and no more than %d",
		    voters, REPL_MAX_VOTING_MEMBERS);
	if (voters == 0)
		return terr_set(err, TERR_BAD_VALUE,
		    "Replica set configuration contains 0 voting members, but must be at least 1 and no more than %d",
		    REPL_MAX_VOTING_MEMBERS);
	if (electable == 0)
		return terr_set(err, TERR_BAD_VALUE,
		    "Replica set configuration must contain at least one non-arbiter member with priority > 0");
	*validate = false;
	/* validateConfigForInitiate: mongod's own text (its two spaces too),
	 * answered as 93 by replSetInitiate */
	if (initiate && version != 1)
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG,
		    "Configuration used to initiate a replica set must  have version 1, but found %lld", (long long)version);
	if (self < 0)
		return terr_set(err, TERR_NODE_NOT_FOUND,
		    "No host described in new configuration with {version: %lld, term: 0} for replica set %s maps to this node",
		    (long long)version, id);
	if (initiate && !self_electable)
		return terr_set(err, TERR_NODE_NOT_ELECTABLE,
		    "This node, %s, with _id MemberId(%lld) is not electable under the new configuration with {version: %lld, term: 0} for replica set %s",
		    hosts[self], (long long)ids[self], (long long)version, id);
	/* several members: replicated on Raft (repl/raft_member.h) */
	*self_index = self;
	return 0;
}

int
repl_set_config_check_stage(const bson_t *cfg, const char *set_name, const char *self_host, bool initiate,
                            int *self_index, bool *validate, terr_t *err)
{
	terr_t later = {0};
	int ret = config_check(cfg, set_name, self_host, initiate, self_index, validate, &later, err);

	terr_clear(&later);
	return ret;
}

int
repl_set_config_check(const bson_t *cfg, const char *set_name, const char *self_host, bool initiate,
                      int *self_index, terr_t *err)
{
	bool validate;

	return repl_set_config_check_stage(cfg, set_name, self_host, initiate, self_index, &validate, err);
}

/* ---- completing and storing a configuration ------------------------------------------ */

static void
append_member(bson_t *out, const char *key, bson_iter_t *m)
{
	bson_iter_t f;
	bson_t d, tags;
	int64_t id = 0, delay = 0;
	const char *host = "";
	bool arbiter = false, build = true, hidden = false, have_tags = false;
	double priority = 1;
	int64_t votes = 1;
	const uint8_t *tdata = NULL;
	uint32_t tlen = 0;

	bson_iter_recurse(m, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "_id") == 0)
			id = bson_iter_as_int64(&f);
		else if (strcmp(k, "host") == 0)
			host = bson_iter_utf8(&f, NULL);
		else if (strcmp(k, "arbiterOnly") == 0)
			arbiter = bson_iter_bool(&f);
		else if (strcmp(k, "buildIndexes") == 0)
			build = bson_iter_bool(&f);
		else if (strcmp(k, "hidden") == 0)
			hidden = bson_iter_bool(&f);
		else if (strcmp(k, "priority") == 0)
			priority = bson_iter_as_double(&f);
		else if (strcmp(k, "votes") == 0)
			votes = bson_iter_as_int64(&f);
		else if (strcmp(k, "secondaryDelaySecs") == 0)
			delay = bson_iter_as_int64(&f);
		else if (strcmp(k, "tags") == 0) {
			bson_iter_document(&f, &tlen, &tdata);
			have_tags = true;
		}
	}
	bson_append_document_begin(out, key, -1, &d);
	BSON_APPEND_INT32(&d, "_id", (int32_t)id);
	BSON_APPEND_UTF8(&d, "host", host);
	BSON_APPEND_BOOL(&d, "arbiterOnly", arbiter);
	BSON_APPEND_BOOL(&d, "buildIndexes", build);
	BSON_APPEND_BOOL(&d, "hidden", hidden);
	if (priority == (double)(int64_t)priority)
		BSON_APPEND_INT32(&d, "priority", (int32_t)priority);
	else
		BSON_APPEND_DOUBLE(&d, "priority", priority);
	if (have_tags && bson_init_static(&tags, tdata, tlen))
		BSON_APPEND_DOCUMENT(&d, "tags", &tags);
	else {
		bson_init(&tags);
		BSON_APPEND_DOCUMENT(&d, "tags", &tags);
		bson_destroy(&tags);
	}
	BSON_APPEND_INT64(&d, "secondaryDelaySecs", delay);
	BSON_APPEND_INT32(&d, "votes", (int32_t)votes);
	bson_append_document_end(out, &d);
}

/* mongod's completed configuration: every member field, every setting, the
 * replicaSetId (kept from old when given, else new), version and term. */
static bson_t *
config_complete(const bson_t *cfg, int64_t version, int64_t term, const bson_t *old)
{
	bson_t *out = bson_new(), arr, set, sub;
	bson_iter_t it, m, s;
	bson_oid_t rsid;
	bool have_rsid = false, wcmj = true;
	const char *name = "";

	if (old != NULL && bson_iter_init_find(&it, old, "settings") && bson_iter_recurse(&it, &s) &&
	    bson_iter_find(&s, "replicaSetId") && BSON_ITER_HOLDS_OID(&s)) {
		bson_oid_copy(bson_iter_oid(&s), &rsid);
		have_rsid = true;
	}
	if (bson_iter_init_find(&it, cfg, "_id"))
		name = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, cfg, "writeConcernMajorityJournalDefault"))
		wcmj = bson_iter_bool(&it);
	BSON_APPEND_UTF8(out, "_id", name);
	BSON_APPEND_INT32(out, "version", (int32_t)version);
	BSON_APPEND_INT32(out, "term", (int32_t)term);
	BSON_APPEND_ARRAY_BEGIN(out, "members", &arr);
	if (bson_iter_init_find(&it, cfg, "members") && bson_iter_recurse(&it, &m)) {
		int i = 0;
		while (bson_iter_next(&m)) {
			char key[16];
			snprintf(key, sizeof(key), "%d", i++);
			append_member(&arr, key, &m);
		}
	}
	bson_append_array_end(out, &arr);
	BSON_APPEND_INT64(out, "protocolVersion", 1);
	BSON_APPEND_BOOL(out, "writeConcernMajorityJournalDefault", wcmj);
	{
		/* the user's settings over mongod's defaults */
		struct { const char *k; int64_t v; bool is_bool; } defs[] = {
			{"chainingAllowed", 1, true}, {"heartbeatIntervalMillis", 2000, false},
			{"heartbeatTimeoutSecs", 10, false}, {"electionTimeoutMillis", 10000, false},
			{"catchUpTimeoutMillis", -1, false}, {"catchUpTakeoverDelayMillis", 30000, false},
		};
		bool have_s = bson_iter_init_find(&it, cfg, "settings") && BSON_ITER_HOLDS_DOCUMENT(&it);
		BSON_APPEND_DOCUMENT_BEGIN(out, "settings", &set);
		for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
			bson_iter_t v;
			if (have_s && bson_iter_recurse(&it, &v) && bson_iter_find(&v, defs[i].k)) {
				bson_append_iter(&set, defs[i].k, -1, &v);
				continue;
			}
			if (defs[i].is_bool)
				BSON_APPEND_BOOL(&set, defs[i].k, defs[i].v != 0);
			else
				BSON_APPEND_INT32(&set, defs[i].k, (int32_t)defs[i].v);
		}
		{
			bson_iter_t v;
			if (have_s && bson_iter_recurse(&it, &v) && bson_iter_find(&v, "getLastErrorModes"))
				bson_append_iter(&set, "getLastErrorModes", -1, &v);
			else {
				BSON_APPEND_DOCUMENT_BEGIN(&set, "getLastErrorModes", &sub);
				bson_append_document_end(&set, &sub);
			}
		}
		BSON_APPEND_DOCUMENT_BEGIN(&set, "getLastErrorDefaults", &sub);
		BSON_APPEND_INT32(&sub, "w", 1);
		BSON_APPEND_INT32(&sub, "wtimeout", 0);
		bson_append_document_end(&set, &sub);
		if (!have_rsid) {
			bson_iter_t v;
			if (have_s && bson_iter_recurse(&it, &v) && bson_iter_find(&v, "replicaSetId") &&
			    BSON_ITER_HOLDS_OID(&v))
				bson_oid_copy(bson_iter_oid(&v), &rsid);
			else
				bson_oid_init(&rsid, NULL);
		}
		BSON_APPEND_OID(&set, "replicaSetId", &rsid);
		bson_append_document_end(out, &set);
	}
	return out;
}

/* Read the facts rs keeps from a completed configuration (under the lock). */
static void
config_adopt_locked(repl_set_t *rs, bson_t *cfg)
{
	bson_iter_t it, m, f;
	int n = 0;

	if (rs->config != NULL)
		bson_destroy(rs->config);
	rs->config = cfg;
	rs->config_version = bson_iter_init_find(&it, cfg, "version") ? bson_iter_as_int64(&it) : 1;
	rs->config_term = bson_iter_init_find(&it, cfg, "term") ? bson_iter_as_int64(&it) : 0;
	bool found = false;

	rs->self_index = 0;
	rs->self_id = 0;
	rs->self_host[0] = '\0';
	/* this node's member: the one whose host is this node (the first
	 * while this node's host:port is not known yet) */
	if (bson_iter_init_find(&it, cfg, "members") && bson_iter_recurse(&it, &m)) {
		int idx = 0;
		while (bson_iter_next(&m)) {
			int64_t id = 0;
			const char *host = "";
			if (!bson_iter_recurse(&m, &f))
				continue;
			while (bson_iter_next(&f)) {
				if (strcmp(bson_iter_key(&f), "_id") == 0)
					id = bson_iter_as_int64(&f);
				else if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
					host = bson_iter_utf8(&f, NULL);
			}
			if ((idx == 0 && !found) || (!found && host_is_self(host, rs->self))) {
				found = idx > 0 || host_is_self(host, rs->self);
				rs->self_index = idx;
				rs->self_id = (int)id;
				bson_strncpy(rs->self_host, host, sizeof(rs->self_host));
			}
			idx++;
		}
		n = idx;
	}
	/* read without the lock by repl_set_multi_member (every logged write) */
	__atomic_store_n(&rs->nmembers, n, __ATOMIC_RELEASE);
	/* none of the members is this node (its host known): mongod's REMOVED
	 * -- a set of several, or one a forced reconfig or rs.remove() brought
	 * down to a member that is not this one (another port: never this
	 * node; the same port under a name isSelf does not know is taken for
	 * this node, as a single member's); named again (re-added): back to
	 * STARTUP2 until Raft says */
	if (n > 0 && rs->self != NULL && !found &&
	    !(n == 1 && rs->config_term != -1 && !other_port(rs->self_host, rs->self)))
		rs->state = REPL_STATE_REMOVED;
	else if (rs->state == REPL_STATE_REMOVED)
		rs->state = REPL_STATE_STARTUP2;
	/* mongod's _setCurrentRSConfig lines */
	{
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_DOCUMENT(&attr, "config", cfg);
		tlog('I', "REPL", 21392, "New replica set config in use", &attr);
		bson_reinit(&attr);
		if (rs->state != REPL_STATE_REMOVED && n > 0) {
			BSON_APPEND_UTF8(&attr, "hostAndPort", rs->self_host);
			tlog('I', "REPL", 21393, "Found self in config", &attr);
		}
		bson_destroy(&attr);
	}
}

static int
store_election(repl_set_t *rs, int64_t term, terr_t *err)
{
	bson_t doc;
	bson_oid_t oid;
	int r;

	/* mongod's LastVote document: {_id, term, candidateIndex} */
	bson_init(&doc);
	bson_oid_init(&oid, NULL);
	BSON_APPEND_OID(&doc, "_id", &oid);
	BSON_APPEND_INT64(&doc, "term", term);
	BSON_APPEND_INT64(&doc, "candidateIndex", rs->self_index);
	r = store_run(rs->st, ELECTION_COLL, &doc, NULL, NULL, err);
	bson_destroy(&doc);
	return r;
}

const char *
repl_state_name(repl_member_state_t s)
{
	switch (s) {
	case REPL_STATE_STARTUP: return "STARTUP";
	case REPL_STATE_PRIMARY: return "PRIMARY";
	case REPL_STATE_SECONDARY: return "SECONDARY";
	case REPL_STATE_RECOVERING: return "RECOVERING";
	case REPL_STATE_STARTUP2: return "STARTUP2";
	case REPL_STATE_ROLLBACK: return "ROLLBACK";
	case REPL_STATE_REMOVED: return "REMOVED";
	}
	return "UNKNOWN";
}

/* serverStatus().metrics.repl.stateTransition and
 * apply.attemptsToBecomeSecondary: the process's, as mongod's metrics
 * (members come and go, the values stay). */
static struct {
	_Atomic(const char *) last;      /* "stepUp", "stepDown", "rollback"; "" before any */
	_Atomic int64_t killed, running;
	_Atomic uint64_t attempts_secondary;
} state_metrics = {.last = ""};

static void
count_op(const tm_opctx_t *op, void *arg)
{
	const tm_opctx_t *self = tm_opctx_current();
	if (op != self)
		(*(int64_t *)arg)++;
}

/* The change old -> new, as mongod's updateAndLogStateTransitionMetrics
 * counts a step up, a step down and a rollback: the operations running at
 * that moment but the one making the change (a replSetStepDown's own);
 * Tamga kills none at a transition (a write that was running fails at its
 * next write with 11602, a read goes on), so `killed` is 0.  Entering
 * SECONDARY from STARTUP, STARTUP2, RECOVERING or ROLLBACK is one of
 * mongod's attempts to become secondary (one that succeeded: Tamga makes
 * no attempt that fails). */
static void
state_metrics_locked(repl_member_state_t old, repl_member_state_t now)
{
	const char *what = NULL;

	if (now == REPL_STATE_PRIMARY && old != REPL_STATE_PRIMARY)
		what = "stepUp";
	else if (old == REPL_STATE_PRIMARY && now != REPL_STATE_PRIMARY)
		what = "stepDown";
	else if (now == REPL_STATE_ROLLBACK)
		what = "rollback";
	if (what != NULL) {
		int64_t running = 0;
		tm_opctx_foreach(count_op, &running);
		atomic_store(&state_metrics.last, what);
		atomic_store(&state_metrics.killed, 0);
		atomic_store(&state_metrics.running, running);
	}
	if (now == REPL_STATE_SECONDARY && (old == REPL_STATE_STARTUP || old == REPL_STATE_STARTUP2 ||
	    old == REPL_STATE_RECOVERING || old == REPL_STATE_ROLLBACK))
		atomic_fetch_add(&state_metrics.attempts_secondary, 1);
}

void
repl_set_state_metrics(repl_state_metrics_t *out)
{
	out->last_transition = atomic_load(&state_metrics.last);
	out->operations_killed = atomic_load(&state_metrics.killed);
	out->operations_running = atomic_load(&state_metrics.running);
	out->attempts_to_become_secondary = atomic_load(&state_metrics.attempts_secondary);
}

/* mongod's 21358 on every change of this member's state (under the lock:
 * the lines come in the order of the changes) */
static void
state_log_locked(repl_set_t *rs)
{
	bson_t attr;

	if (rs->state == rs->logged_state)
		return;
	state_metrics_locked(rs->logged_state, rs->state);
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "newState", repl_state_name(rs->state));
	BSON_APPEND_UTF8(&attr, "oldState", repl_state_name(rs->logged_state));
	tlog('I', "REPL", 21358, "Replica set state transition", &attr);
	bson_destroy(&attr);
	rs->logged_state = rs->state;
}

static void
bump_locked(repl_set_t *rs)
{
	state_log_locked(rs);
	rs->topology_counter++;
	pthread_cond_broadcast(&rs->changed);
}

/* The single member's election metrics (election_log.h), under the lock:
 * its priority and the set's electionTimeoutMillis from the configuration,
 * the last applied optime as both committed and seen (one member). */
static void
election_metrics_locked(repl_set_t *rs, repl_election_reason_t reason)
{
	repl_election_candidate_t c = {0};
	struct timespec ts;
	bson_iter_t it, d;
	char key[32];

	c.reason = reason;
	clock_gettime(CLOCK_REALTIME, &ts);
	c.date_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	c.term = rs->term;
	c.committed_ts = c.seen_ts = REPL_TS(rs->last_applied.secs, rs->last_applied.inc);
	c.committed_t = c.seen_t = rs->last_applied.term;
	c.votes_needed = 1;
	c.priority = 1;
	c.election_timeout_ms = 10000;
	snprintf(key, sizeof(key), "members.%d.priority", rs->self_index);
	if (rs->config != NULL && bson_iter_init(&it, rs->config) && bson_iter_find_descendant(&it, key, &d) &&
	    BSON_ITER_HOLDS_NUMBER(&d))
		c.priority = bson_iter_as_double(&d);
	if (rs->config != NULL && bson_iter_init(&it, rs->config) &&
	    bson_iter_find_descendant(&it, "settings.electionTimeoutMillis", &d) && BSON_ITER_HOLDS_NUMBER(&d))
		c.election_timeout_ms = bson_iter_as_int64(&d);
	repl_election_metrics_single(&c);
}

/* The single member wins the election of the next term (under the lock):
 * the election's no-op optime is the next tick.  reason: electionTimeout
 * (initiate, open) or freezeTimeout (a stepdown or freeze period ended). */
static void
elect_locked(repl_set_t *rs, repl_election_reason_t reason)
{
	uint32_t s, i;
	terr_t err = TERR_INIT;

	/* mongod's election lines (a single voter: the dry run and the vote
	 * are its own) */
	repl_election_log_line(21438, "currentTerm", rs->term);
	rs->term++;
	repl_election_log_line(21444, "newTerm", rs->term);
	if (store_election(rs, rs->term, &err) != 0) {
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
		tlog('W', "ELECTION", 21445, "Failed to store LastVote document when voting for myself", &attr);
		bson_destroy(&attr);
		terr_clear(&err);
	}
	election_metrics_locked(rs, reason);
	repl_election_log_line(21450, "term", rs->term);
	rs->state = REPL_STATE_PRIMARY;
	rs->stepdown_until_ms = 0;
	rs->freeze_until_ms = 0;
	tick_locked(rs, &s, &i);
	rs->election_optime = rs->last_applied;
	rs->election_wall_ms = rs->last_applied_wall_ms;
	bump_locked(rs);
	{
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_INT64(&attr, "term", rs->term);
		tlog('I', "REPL", 21331, "Transition to primary complete; database writes are now permitted", &attr);
		bson_destroy(&attr);
	}
}

/* A stepdown or freeze that ran out ends in a new election (under the lock). */
static void
refresh_locked(repl_set_t *rs)
{
	int64_t now;

	if (!rs->initiated || rs->state == REPL_STATE_PRIMARY || rs->state == REPL_STATE_REMOVED || rs->nmembers > 1 ||
	    rs->on_raft)
		return;
	now = wall_ms();
	if (rs->stepdown_until_ms > now || rs->freeze_until_ms > now || rs->maintenance > 0)
		return;
	elect_locked(rs, REPL_ELECTION_FREEZE_TIMEOUT);
}

/* ---- open / close ------------------------------------------------------------------------ */

int
repl_set_open(storage_t *st, const char *name, repl_set_t **out, terr_t *err)
{
	return repl_set_open_raft(st, name, false, out, err);
}

int
repl_set_open_raft(storage_t *st, const char *name, bool on_raft, repl_set_t **out, terr_t *err)
{
	repl_set_t *rs = bson_malloc0(sizeof(*rs));
	bson_t cfg, vote;
	bool found = false, have_vote = false;
	bson_iter_t it;

	*out = NULL;
	rs->st = st;
	rs->name = bson_strdup(name);
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->changed, NULL);
	rs->state = REPL_STATE_STARTUP;
	rs->start_wall_ms = wall_ms();
	rs->last_applied.term = -1;
	rs->election_optime.term = -1;
	if (store_run(st, CONFIG_COLL, NULL, &cfg, &found, err) != 0)
		goto fail;
	if (store_run(st, ELECTION_COLL, NULL, &vote, &have_vote, err) != 0) {
		if (found)
			bson_destroy(&cfg);
		goto fail;
	}
	if (have_vote) {
		if (bson_iter_init_find(&it, &vote, "term"))
			rs->term = bson_iter_as_int64(&it);
		bson_destroy(&vote);
	}
	if (found) {
		const char *stored = bson_iter_init_find(&it, &cfg, "_id") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_iter_utf8(&it, NULL) : "";
		if (strcmp(stored, name) != 0) {
			bson_t attr;
			bson_init(&attr);
			BSON_APPEND_UTF8(&attr, "localConfigSetName", stored);
			BSON_APPEND_UTF8(&attr, "commandLineSetName", name);
			tlog('W', "REPL", 21406,
			    "Local replica set configuration document set name differs from command line set name; waiting for reconfig or remote heartbeat",
			    &attr);
			bson_destroy(&attr);
			bson_destroy(&cfg);
		} else {
			rs->initiated = true;
			config_adopt_locked(rs, bson_copy(&cfg));
			bson_destroy(&cfg);
			/* several members, or one whose history is on Raft (a set
			 * forced or removed down to one): Raft elects
			 * (repl_set_raft_role) once the node's Raft server starts */
			if (rs->nmembers > 1 || on_raft) {
				rs->on_raft = on_raft;
				rs->state = REPL_STATE_STARTUP2;
			} else {
				elect_locked(rs, REPL_ELECTION_TIMEOUT);
			}
		}
	}
	state_log_locked(rs);
	*out = rs;
	return 0;
fail:
	pthread_mutex_destroy(&rs->lock);
	pthread_cond_destroy(&rs->changed);
	bson_free(rs->name);
	bson_free(rs);
	return -1;
}

void
repl_set_close(repl_set_t *rs)
{
	if (rs == NULL)
		return;
	if (rs->config != NULL)
		bson_destroy(rs->config);
	pthread_mutex_destroy(&rs->lock);
	pthread_cond_destroy(&rs->changed);
	bson_free(rs->name);
	bson_free(rs->self);
	bson_free(rs);
}

void
repl_set_set_self(repl_set_t *rs, const char *host_port)
{
	pthread_mutex_lock(&rs->lock);
	bson_free(rs->self);
	rs->self = host_port ? bson_strdup(host_port) : NULL;
	if (rs->config != NULL && (rs->nmembers > 1 || rs->on_raft)) {
		/* find this node's member again, now that its host is known (a
		 * one-member set on Raft: it may be another node's, this one
		 * removed by rs.remove()) */
		bson_t *cfg = bson_copy(rs->config);
		config_adopt_locked(rs, cfg);
	}
	pthread_mutex_unlock(&rs->lock);
}

const char *
repl_set_name(const repl_set_t *rs)
{
	return rs->name;
}

bool
repl_set_initiated(repl_set_t *rs)
{
	bool r;

	pthread_mutex_lock(&rs->lock);
	r = rs->initiated;
	pthread_mutex_unlock(&rs->lock);
	return r;
}

repl_member_state_t
repl_set_state(repl_set_t *rs)
{
	repl_member_state_t s;

	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	s = rs->state;
	pthread_mutex_unlock(&rs->lock);
	return s;
}

uint64_t
repl_set_topology_counter(repl_set_t *rs)
{
	uint64_t n;

	pthread_mutex_lock(&rs->lock);
	n = rs->topology_counter;
	pthread_mutex_unlock(&rs->lock);
	return n;
}

bool
repl_set_writable(repl_set_t *rs)
{
	return repl_set_state(rs) == REPL_STATE_PRIMARY;
}

int64_t
repl_set_term(repl_set_t *rs)
{
	int64_t t;

	pthread_mutex_lock(&rs->lock);
	t = rs->term;
	pthread_mutex_unlock(&rs->lock);
	return t;
}

/* ---- initiate / reconfig ----------------------------------------------------------------- */

int
repl_set_initiate(repl_set_t *rs, const bson_t *cfg, bson_t *reply_extra, terr_t *err)
{
	bson_t def, *full;
	char *self;
	int idx, ret = -1;

	pthread_mutex_lock(&rs->lock);
	if (rs->initiated) {
		pthread_mutex_unlock(&rs->lock);
		if (reply_extra != NULL)
			BSON_APPEND_UTF8(reply_extra, "info", "try querying local.system.replset to see current configuration");
		return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
	}
	self = rs->self ? bson_strdup(rs->self) : bson_strdup("127.0.0.1:27017");
	pthread_mutex_unlock(&rs->lock);
	bson_init(&def);
	if (cfg == NULL || bson_empty(cfg)) {
		bson_t arr, m;
		BSON_APPEND_UTF8(&def, "_id", rs->name);
		BSON_APPEND_INT32(&def, "version", 1);
		BSON_APPEND_ARRAY_BEGIN(&def, "members", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &m);
		BSON_APPEND_INT32(&m, "_id", 0);
		BSON_APPEND_UTF8(&m, "host", self);
		bson_append_document_end(&arr, &m);
		bson_append_array_end(&def, &arr);
		cfg = &def;
		if (reply_extra != NULL) {
			BSON_APPEND_UTF8(reply_extra, "info2", "no configuration specified. Using a default configuration for the set");
			BSON_APPEND_UTF8(reply_extra, "me", self);
		}
	}
	if (repl_set_config_check(cfg, rs->name, self, true, &idx, err) != 0) {
		/* mongod answers every reason as 93 but a second member's (ours) */
		if (err->code != TERR_NOT_IMPLEMENTED)
			err->code = TERR_INVALID_REPLICA_SET_CONFIG;
		goto out;
	}
	{
		bson_iter_t it;
		int64_t version = 1;
		if (bson_iter_init_find(&it, cfg, "version"))
			version = bson_iter_as_int64(&it);
		full = config_complete(cfg, version, 1, NULL);
	}
	if (store_run(rs->st, CONFIG_COLL, full, NULL, NULL, err) != 0) {
		bson_destroy(full);
		goto out;
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->initiated) {
		/* another initiate won meanwhile */
		pthread_mutex_unlock(&rs->lock);
		bson_destroy(full);
		terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
		goto out;
	}
	rs->initiated = true;
	rs->term = 0;
	config_adopt_locked(rs, full);
	if (rs->nmembers > 1) {
		rs->state = REPL_STATE_STARTUP2;   /* Raft elects (repl_set_raft_role) */
		bump_locked(rs);
	} else {
		elect_locked(rs, REPL_ELECTION_TIMEOUT);
	}
	pthread_mutex_unlock(&rs->lock);
	ret = 0;
out:
	bson_destroy(&def);
	bson_free(self);
	return ret;
}

int
repl_set_reconfig(repl_set_t *rs, const bson_t *cfg, bool force, terr_t *err)
{
	bson_iter_t it, s;
	bson_t *full;
	int64_t version, cur_version, term;
	char *self;
	int idx;
	bool validate;

	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	if (!rs->initiated) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_YET_INITIALIZED, "Node not yet initialized; use the replSetInitiate command");
	}
	if (!force && rs->state != REPL_STATE_PRIMARY) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "Safe reconfig is only allowed on a writable PRIMARY. Current state is %s",
		    repl_state_name(rs->state));
	}
	if (rs->nmembers > 1) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "replSetReconfig of a set of several members is not supported yet");
	}
	cur_version = rs->config_version;
	term = rs->term;
	self = bson_strdup(rs->self_host[0] ? rs->self_host : (rs->self ? rs->self : ""));
	pthread_mutex_unlock(&rs->lock);
	if (repl_set_config_check_stage(cfg, rs->name, self, false, &idx, &validate, err) != 0) {
		bson_free(self);
		/* the whole set's faults 103 (mongod's validateConfigForReconfig),
		 * a field's 93 */
		if (validate)
			err->code = TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE;
		else if (err->code != TERR_NOT_IMPLEMENTED && err->code != TERR_NODE_NOT_FOUND)
			err->code = TERR_INVALID_REPLICA_SET_CONFIG;
		return -1;
	}
	bson_free(self);
	version = bson_iter_init_find(&it, cfg, "version") ? bson_iter_as_int64(&it) : 0;
	pthread_mutex_lock(&rs->lock);
	/* the replicaSetId may not change */
	if (bson_iter_init_find(&it, cfg, "settings") && bson_iter_recurse(&it, &s) &&
	    bson_iter_find(&s, "replicaSetId") && BSON_ITER_HOLDS_OID(&s)) {
		bson_iter_t o, os;
		if (bson_iter_init_find(&o, rs->config, "settings") && bson_iter_recurse(&o, &os) &&
		    bson_iter_find(&os, "replicaSetId") && !bson_oid_equal(bson_iter_oid(&os), bson_iter_oid(&s))) {
			pthread_mutex_unlock(&rs->lock);
			return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
			    "New and old configurations differ in replica set ID; old was %s, and new is %s", "(old)", "(new)");
		}
	}
	if (force) {
		/* mongod: a forced reconfig's version jumps by a random 100000s */
		version = cur_version + 10000 + (int64_t)(bson_get_monotonic_time() % 90000);
	} else if (version <= cur_version) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE,
		    "New replica set configuration version must be greater than old, but %lld is not greater than %lld for replica set %s",
		    (long long)version, (long long)cur_version, rs->name);
	}
	/* a set initiated with one member runs without Raft: a safe reconfig
	 * that adds members moves it onto Raft first (commands/
	 * cmd_repl_reconfig.c, cmd_repl_member_grow) and never comes here; a
	 * forced one would store a configuration of several members with no
	 * copy of the data on the others and no Raft to run it (after a
	 * restart: no primary), so it is refused whole */
	if (bson_iter_init_find(&it, cfg, "members") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &s) &&
	    bson_iter_next(&s) && bson_iter_next(&s)) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "a forced reconfig cannot add members to a replica set running with a single member; add them "
		    "with a reconfig without force (rs.add())");
	}
	full = config_complete(cfg, version, force ? -1 : term, rs->config);
	pthread_mutex_unlock(&rs->lock);
	if (store_run(rs->st, CONFIG_COLL, full, NULL, NULL, err) != 0) {
		bson_destroy(full);
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	config_adopt_locked(rs, full);
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

void
repl_optime_append(bson_t *b, const char *key, const repl_optime_t *o)
{
	bson_t d;

	bson_append_document_begin(b, key, -1, &d);
	BSON_APPEND_TIMESTAMP(&d, "ts", o->secs, o->inc);
	BSON_APPEND_INT64(&d, "t", o->term);
	bson_append_document_end(b, &d);
}

bool
repl_set_config_copy(repl_set_t *rs, bson_t *out)
{
	bool r;

	pthread_mutex_lock(&rs->lock);
	r = rs->config != NULL && rs->initiated;
	if (r)
		bson_copy_to(rs->config, out);
	else
		bson_init(out);
	pthread_mutex_unlock(&rs->lock);
	return r;
}

/* ---- facts, topology waits ----------------------------------------------------------------- */

void
repl_set_info(repl_set_t *rs, repl_set_info_t *out)
{
	uint8_t *b;

	memset(out, 0, sizeof(*out));
	last_applied_from_oplog(rs);
	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	out->state = rs->state;
	out->term = rs->term;
	out->config_version = rs->config_version;
	out->config_term = rs->config_term;
	out->self_id = rs->self_id;
	bson_strncpy(out->self_host, rs->self_host, sizeof(out->self_host));
	/* OID::fromTerm: 7fffffff, then the term big-endian in the last 8 bytes */
	b = out->election_id.bytes;
	b[0] = 0x7f; b[1] = 0xff; b[2] = 0xff; b[3] = 0xff;
	for (int i = 0; i < 8; i++)
		b[4 + i] = (uint8_t)((uint64_t)rs->term >> (56 - 8 * i));
	out->election_optime = rs->election_optime;
	out->election_wall_ms = rs->election_wall_ms;
	out->last_applied = rs->last_applied;
	out->last_applied_wall_ms = rs->last_applied_wall_ms;
	out->topology_counter = rs->topology_counter;
	out->start_wall_ms = rs->start_wall_ms;
	out->freeze_until_ms = rs->freeze_until_ms;
	out->stepdown_until_ms = rs->stepdown_until_ms;
	pthread_mutex_unlock(&rs->lock);
}

bool
repl_set_topology_wait(repl_set_t *rs, uint64_t counter, int64_t deadline_us, const _Atomic bool *stop)
{
	bool changed;

	pthread_mutex_lock(&rs->lock);
	for (;;) {
		int64_t now = tm_now_us(), until;
		struct timespec ts;

		refresh_locked(rs);
		changed = rs->topology_counter != counter;
		if (changed || now >= deadline_us || (stop != NULL && atomic_load(stop)))
			break;
		/* a stepdown's end is a change too: wake at 50 ms steps */
		until = now + 50000 < deadline_us ? now + 50000 : deadline_us;
		clock_gettime(CLOCK_REALTIME, &ts);
		{
			int64_t ns = ts.tv_nsec + (until - now) * 1000;
			ts.tv_sec += ns / 1000000000;
			ts.tv_nsec = ns % 1000000000;
		}
		pthread_cond_timedwait(&rs->changed, &rs->lock, &ts);
	}
	pthread_mutex_unlock(&rs->lock);
	return changed;
}

/* ---- stepdown, freeze ------------------------------------------------------------------------ */

static void
format_date(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int
repl_set_step_down(repl_set_t *rs, int64_t secs, int64_t catch_up_secs, bool force, int64_t deadline_us,
                   terr_t *err)
{
	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	if (!rs->initiated || rs->state != REPL_STATE_PRIMARY) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary so can't step down");
	}
	if (rs->nmembers > 1) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "replSetStepDown in a set of several members is not supported yet");
	}
	pthread_mutex_unlock(&rs->lock);
	if (!force) {
		/* no secondary can ever catch up: wait the catch-up period, as
		 * mongod, then refuse */
		int64_t until = tm_now_us() + catch_up_secs * 1000000;
		char date[96];
		if (deadline_us != 0 && deadline_us < until)
			until = deadline_us;
		while (tm_now_us() < until) {
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		format_date(wall_ms(), date, sizeof(date));
		return terr_set(err, TERR_EXCEEDED_TIME_LIMIT,
		    "No electable secondaries caught up as of %s. Please use the replSetStepDown command with the argument {force: true} to force node to step down.",
		    date);
	}
	pthread_mutex_lock(&rs->lock);
	rs->state = REPL_STATE_SECONDARY;
	rs->stepdown_until_ms = wall_ms() + secs * 1000;
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

int
repl_set_maintenance(repl_set_t *rs, bool on, terr_t *err)
{
	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	if (rs->state == REPL_STATE_PRIMARY) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_SECONDARY, "primaries can't modify maintenance mode");
	}
	if (on) {
		rs->maintenance++;
	} else if (rs->maintenance > 0) {
		rs->maintenance--;
	} else {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, 96, "already out of maintenance mode");
	}
	if (rs->initiated) {
		repl_member_state_t was = rs->state;
		rs->state = rs->maintenance > 0 ? REPL_STATE_RECOVERING : REPL_STATE_SECONDARY;
		if (rs->state != was)
			bump_locked(rs);
		/* leaving maintenance after the stepdown ran out: elect now */
		refresh_locked(rs);
	}
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

int
repl_set_freeze(repl_set_t *rs, int64_t secs, terr_t *err)
{
	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	if (!rs->initiated || rs->state == REPL_STATE_PRIMARY) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_SECONDARY, "Cannot freeze node when primary or running for election, state: %s",
		    rs->initiated ? "Primary" : "Running-Election");
	}
	if (secs == 0) {
		/* mongod's one _stepDownUntil: unfreezing ends a stepdown too */
		rs->freeze_until_ms = 0;
		rs->stepdown_until_ms = 0;
		refresh_locked(rs);
	} else if (wall_ms() + secs * 1000 > rs->freeze_until_ms) {
		rs->freeze_until_ms = wall_ms() + secs * 1000;
	}
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

/* ---- a set of several members (repl/raft_member.h) ------------------------------------ */

int
repl_set_member_count(repl_set_t *rs)
{
	int n;

	pthread_mutex_lock(&rs->lock);
	n = rs->initiated ? rs->nmembers : 0;
	pthread_mutex_unlock(&rs->lock);
	return n;
}

int
repl_set_store_config(repl_set_t *rs, const bson_t *cfg, terr_t *err)
{
	bson_t *full;
	bson_iter_t it;
	int64_t version = 1;

	if (bson_iter_init_find(&it, cfg, "version"))
		version = bson_iter_as_int64(&it);
	full = config_complete(cfg, version, 1, NULL);
	if (store_run(rs->st, CONFIG_COLL, full, NULL, NULL, err) != 0) {
		bson_destroy(full);
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->initiated) {
		pthread_mutex_unlock(&rs->lock);
		bson_destroy(full);
		return terr_set(err, TERR_ALREADY_INITIALIZED, "already initialized");
	}
	rs->initiated = true;
	rs->term = 0;
	config_adopt_locked(rs, full);
	rs->state = REPL_STATE_STARTUP2;
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

void
repl_set_raft_role(repl_set_t *rs, repl_member_state_t state, int64_t term)
{
	bool was_primary;

	last_applied_from_oplog(rs);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == state && rs->term == term) {
		pthread_mutex_unlock(&rs->lock);
		return;
	}
	if (rs->state == REPL_STATE_REMOVED)
		state = REPL_STATE_REMOVED;   /* Raft of the old configuration: no role here */
	was_primary = rs->state == REPL_STATE_PRIMARY;
	if (term > rs->term) {
		terr_t err = TERR_INIT;
		rs->term = term;
		if (store_election(rs, term, &err) != 0)
			terr_clear(&err);
	}
	rs->state = state;
	/* Raft says this member is not primary: the single-member path never
	 * elects it meanwhile (refresh_locked), in a set of one member too (a
	 * set moved onto Raft whose leader lost the new member it was adding:
	 * Raft elects it again, or the set's new configuration does) */
	if (state != REPL_STATE_PRIMARY)
		rs->on_raft = true;
	if (state == REPL_STATE_PRIMARY) {
		/* a one-member set restarted on Raft is elected: from here on as
		 * one a forced reconfig brought to one member while it ran */
		rs->on_raft = false;
		rs->election_optime = rs->last_applied;
		rs->election_wall_ms = wall_ms();
	}
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	{
		/* 21358 came from bump_locked */
		bson_t attr;
		bson_init(&attr);
		BSON_APPEND_INT64(&attr, "term", term);
		if (state == REPL_STATE_PRIMARY && !was_primary)
			tlog('I', "REPL", 21331, "Transition to primary complete; database writes are now permitted", &attr);
		bson_destroy(&attr);
	}
}

bson_t *
repl_set_config_completed(const bson_t *cfg)
{
	bson_iter_t it;
	int64_t version = 1;

	if (bson_iter_init_find(&it, cfg, "version"))
		version = bson_iter_as_int64(&it);
	return config_complete(cfg, version, 1, NULL);
}

void
repl_set_set_on_raft(repl_set_t *rs, bool on_raft)
{
	pthread_mutex_lock(&rs->lock);
	rs->on_raft = on_raft;
	/* no Raft server after all: a single member elects itself as on open */
	if (!on_raft && rs->initiated && rs->nmembers == 1 && rs->state == REPL_STATE_STARTUP2)
		elect_locked(rs, REPL_ELECTION_TIMEOUT);
	pthread_mutex_unlock(&rs->lock);
}

int
repl_set_move_to_raft(repl_set_t *rs, terr_t *err)
{
	pthread_mutex_lock(&rs->lock);
	refresh_locked(rs);
	if (!rs->initiated || rs->state != REPL_STATE_PRIMARY) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY,
		    "Safe reconfig is only allowed on a writable PRIMARY. Current state is %s", repl_state_name(rs->state));
	}
	if (rs->nmembers != 1 || rs->on_raft) {
		pthread_mutex_unlock(&rs->lock);
		return terr_set(err, TERR_CONFIGURATION_IN_PROGRESS,
		    "Cannot run replSetReconfig because the node is currently updating its configuration");
	}
	/* as at a start on Raft: no writes, Raft elects (repl_set_raft_role) */
	rs->on_raft = true;
	rs->state = REPL_STATE_STARTUP2;
	rs->stepdown_until_ms = 0;
	rs->freeze_until_ms = 0;
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

void
repl_set_move_back(repl_set_t *rs)
{
	pthread_mutex_lock(&rs->lock);
	rs->on_raft = false;
	if (rs->initiated && rs->nmembers == 1 && rs->state != REPL_STATE_PRIMARY && rs->state != REPL_STATE_REMOVED)
		elect_locked(rs, REPL_ELECTION_TIMEOUT);
	pthread_mutex_unlock(&rs->lock);
}

bool
repl_set_on_raft(repl_set_t *rs)
{
	bool r;

	pthread_mutex_lock(&rs->lock);
	r = rs->on_raft;
	pthread_mutex_unlock(&rs->lock);
	return r;
}

bool
repl_set_multi_member(repl_set_t *rs)
{
	return __atomic_load_n(&rs->nmembers, __ATOMIC_ACQUIRE) > 1;
}

/* ---- reconfiguration of a set of several members (commands/cmd_repl_reconfig.c) ---- */

bson_t *
repl_set_config_completed_for(const bson_t *cfg, int64_t version, int64_t term, const bson_t *old)
{
	return config_complete(cfg, version, term, old);
}

int
repl_set_config_replace(repl_set_t *rs, const bson_t *full, terr_t *err)
{
	bson_t *copy = bson_copy(full);

	if (store_run(rs->st, CONFIG_COLL, copy, NULL, NULL, err) != 0) {
		bson_destroy(copy);
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	config_adopt_locked(rs, copy);
	bump_locked(rs);
	pthread_mutex_unlock(&rs->lock);
	return 0;
}
