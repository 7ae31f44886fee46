/*
 * engine.c -- the engine (one open data folder), clients, and the command
 * dispatcher every front end calls: engine_run_command.
 *
 * The dispatcher owns the parts that are the same for every command: finding
 * the handler in the command table, the generic fields (maxTimeMS, comment,
 * $db...), counting, and turning a terr_t into mongod's error reply.
 */
#include "commands/commands_private.h"
#include "js/script.h"
#include "auth/auth.h"
#include "commands/cmd_repl.h"
#include "commands/cmd_repl_member.h"
#include "commands/cmd_repl_reads.h"
#include "commands/validation.h"
#include "repl/changestream.h"
#include "repl/replset.h"
#include "query/bucket_column.h"
#include "query/keygen.h"
#include "query/sort.h"
#include "query/planner_ttl.h"
#include "repl/retryable.h"
#include "repl/session.h"
#include "repl/txn.h"
#include "timeseries/bsoncolumn.h"

#include <pthread.h>
#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bson/value.h"
#include "common/checked.h"
#include "common/failpoint.h"
#include "common/log.h"
#include "common/version.h"

int64_t
cmd_now_us(void)
{
	return tm_now_us();
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The oplog's term getter: the set's current term (-1 before any). */
static int64_t
engine_term(void *rs)
{
	int64_t t = repl_set_term(rs);

	return t > 0 ? t : -1;
}

/* The periodic no-op writer writes only on a primary. */
static bool
engine_primary(void *rs)
{
	return repl_set_writable(rs);
}

/* A member of a set of several logs changes only as the primary (the
 * others' entries come from the set's log); a single member always. */
static bool
engine_may_log(void *rs)
{
	return (!repl_set_multi_member(rs) && !repl_set_on_raft(rs)) || repl_set_writable(rs);
}

int
engine_open(const char *path, const engine_options_t *opts, engine_t **out, terr_t *err)
{
	engine_t *e;

	*out = NULL;
	/* compressed bucket columns for query/ (2dsphere_bucket keys, $_internalBucketGeoWithin) */
	bucket_column_set_decoder(bsoncolumn_decode);
	e = bson_malloc0(sizeof(*e));
	if (opts != NULL)
		e->opts = *opts;
	e->opts.repl_set_name = opts != NULL && opts->repl_set_name != NULL ? bson_strdup(opts->repl_set_name) : NULL;
	if (storage_open(path, &e->opts.storage, &e->st, err) != 0) {
		bson_free(e->opts.repl_set_name);
		bson_free(e);
		return -1;
	}
	e->tmp_dir = bson_strdup_printf("%s/_tmp", path);
	if (mkdir(e->tmp_dir, 0700) != 0 && errno != EEXIST) {
		bson_free(e->tmp_dir);
		e->tmp_dir = NULL;	/* no spilling: allowDiskUse sorts then fail with 238 */
	}
	/* secondary-index keys come from the query layer's key generator */
	query_keygen_register(e->st);
	storage_set_write_check(e->st, validation_recheck);
	atomic_init(&e->ttl_monitor_sleep_secs, 60);
	atomic_init(&e->ts_idle_expiry_threshold, 0);
	atomic_init(&e->ts_idle_expiry_max_per_attempt, 3);
	atomic_init(&e->ttl_monitor_enabled, 1);
	atomic_init(&e->ingress_rate_limiter_enabled, 0);
	atomic_init(&e->ingress_rate_per_sec, INT32_MAX);
	atomic_init(&e->ingress_burst_capacity_secs, engine_double_bits(DBL_MAX));
	atomic_init(&e->ingress_max_queue_depth, 0);
	atomic_init(&e->enable_test_commands, e->opts.enable_test_commands ? 1 : 0);
	atomic_init(&e->require_api_version, 0);
	if (ttl_monitor_start(e->st, &e->ttl_monitor_sleep_secs, &e->ttl_monitor_enabled, &e->ttl, err) != 0) {
		bson_free(e->tmp_dir);
		storage_close(e->st);
		bson_free(e);
		return -1;
	}
	/* replica-set mode: the set's state from `local` (cmd_repl.c) */
	if (cmd_repl_open(e, path, err) != 0) {
		ttl_monitor_stop(e->ttl);
		bson_free(e->tmp_dir);
		storage_close(e->st);
		bson_free(e->opts.repl_set_name);
		bson_free(e);
		return -1;
	}
	/* replica-set mode: the clock and the oplog's observer (it logs once
	 * the set is initiated, or at once when the folder has an oplog); the
	 * set's cluster time is the oplog's clock, its term every entry's t */
	atomic_init(&e->txn_ops_per_entry, INT32_MAX);
	if (e->rs != NULL) {
		repl_oplog_options_t oo = {.size_mb = e->opts.oplog_size_mb, .dbpath = path,
		    .in_memory = e->opts.storage.in_memory, .term = engine_term, .term_arg = e->rs,
		    .primary = engine_primary, .may_log = engine_may_log,
		    .txn_ops_per_entry = &e->txn_ops_per_entry};
		e->clock = repl_clock_new();
		if (repl_oplog_open(e->st, e->clock, &oo, &e->oplog, err) != 0) {
			repl_clock_free(e->clock);
			cmd_repl_close(e);
			ttl_monitor_stop(e->ttl);
			bson_free(e->tmp_dir);
			storage_close(e->st);
			bson_free(e->opts.repl_set_name);
			bson_free(e);
			return -1;
		}
		repl_set_attach_oplog(e->rs, e->oplog);
		e->raft_dir = bson_strdup_printf("%s/raft", path);
		e->cs = repl_cs_service_new(e->st, e->oplog);
	}
	e->cursors = cursor_registry_new();
	/* logical sessions; on a replica set their transactions and retryable
	 * writes (the reaper ends transactions past their lifetime) */
	e->sessions = repl_sessions_new(e->st);
	if (e->opts.repl_set_name != NULL) {
		storage_session_t *s = storage_session_pool_get(e->st, NULL);
		terr_t le = TERR_INIT;
		if (s != NULL && repl_retryable_load(e->sessions, s, &le) != 0)
			tlog('W', "REPL", 5000001, le.msg ? le.msg : "could not read config.transactions", NULL);
		terr_clear(&le);
		storage_session_pool_put(e->st, s);
		e->txn_reaper = repl_txn_reaper_start(e->sessions, 300000);   /* logicalSessionRefreshMillis */
	}
	e->start_wall_ms = wall_ms();
	e->start_mono_us = cmd_now_us();
	atomic_init(&e->shutdown, false);
	atomic_init(&e->next_connection_id, 1);
	atomic_init(&e->allow_disk_use_by_default, 1);
	atomic_init(&e->sort_memory_limit, (long long)SORT_DEFAULT_MEMORY_LIMIT);
	atomic_init(&e->group_memory_limit, (long long)SORT_DEFAULT_MEMORY_LIMIT);
	atomic_init(&e->bucket_auto_memory_limit, (long long)SORT_DEFAULT_MEMORY_LIMIT);
	atomic_init(&e->txn_lifetime_limit_seconds, 60);
	atomic_init(&e->max_txn_lock_request_timeout_ms, 5);
	*out = e;
	return 0;
}

void
engine_close(engine_t *e)
{
	if (e == NULL)
		return;
	/* a set of several members: Raft, its applier and feeder first (they
	 * use the oplog, the sessions and storage) */
	cmd_repl_member_stop(e);
	ttl_monitor_stop(e->ttl);
	repl_txn_reaper_stop(e->txn_reaper);
	repl_sessions_free(e->sessions);   /* open transactions are aborted */
	bson_free(e->tmp_dir);
	cursor_registry_free(e->cursors);   /* change streams first: they read the oplog */
	bson_free(e->raft_dir);
	bson_free(e->self_host);
	repl_oplog_close(e->oplog);
	repl_cs_service_free(e->cs);
	cmd_repl_close(e);
	storage_close(e->st);
	repl_clock_free(e->clock);
	bson_free(e->opts.repl_set_name);
	bson_free(e);
}

storage_t *
engine_storage(engine_t *e)
{
	return e->st;
}

struct repl_clock *
engine_clock(engine_t *e)
{
	return e->clock;
}

struct repl_oplog *
engine_oplog(engine_t *e)
{
	return e->oplog;
}

bool
engine_shutdown_requested(engine_t *e)
{
	return atomic_load(&e->shutdown);
}

void
engine_ingress_limits(engine_t *e, engine_ingress_limits_t *out)
{
	out->enabled = atomic_load(&e->ingress_rate_limiter_enabled) != 0;
	out->rate_per_sec = atomic_load(&e->ingress_rate_per_sec);
	out->burst_capacity_secs = engine_bits_double(atomic_load(&e->ingress_burst_capacity_secs));
	out->max_queue_depth = atomic_load(&e->ingress_max_queue_depth);
}

engine_counters_t *
engine_counters(engine_t *e)
{
	return &e->counters;
}

client_t *
client_new(engine_t *e, const client_info_t *info)
{
	client_t *c = bson_malloc0(sizeof(*c));

	client_init(c, e, info);
	return c;
}

void
client_init(client_t *c, engine_t *e, const client_info_t *info)
{
	memset(c, 0, sizeof(*c));
	c->engine = e;
	if (info != NULL) {
		c->connection_id = info->connection_id;
		c->remote = info->remote ? bson_strdup(info->remote) : NULL;
		c->is_local = info->is_local;
	} else {
		c->is_local = true;
	}
	cmd_auth_conn_init(c);
}

void
client_release(client_t *c)
{
	auth_client_forget(c, &c->has_auth);
	cursor_close_connection(c->engine->cursors, c->connection_id);
	if (c->session != NULL)
		storage_session_pool_put(c->engine->st, c->session);
	c->session = NULL;
	bson_free(c->remote);
	c->remote = NULL;
	bson_free(c->auth.x509.subject);
	c->auth.x509.subject = NULL;
	if (c->metadata != NULL)
		bson_destroy(c->metadata);
	c->metadata = NULL;
}

void
client_free(client_t *c)
{
	if (c == NULL)
		return;
	client_release(c);
	bson_free(c);
}

storage_session_t *
client_session(client_t *c, terr_t *err)
{
	if (c->session == NULL)
		c->session = storage_session_pool_get(c->engine->st, err);
	return c->session;
}

void
client_set_peer_x509(client_t *c, const char *subject, bool member)
{
	bson_free(c->auth.x509.subject);
	c->auth.x509.subject = subject != NULL ? bson_strdup(subject) : NULL;
	c->auth.x509.member = subject != NULL && member;
}

int64_t
client_connection_id(const client_t *c)
{
	return c->connection_id;
}

void
client_set_metadata_steal(client_t *c, bson_t *meta)
{
	if (c->metadata != NULL)
		bson_destroy(c->metadata);
	c->metadata = meta;
}

bool
client_take_close_request(client_t *c)
{
	bool r = c->close_requested;

	c->close_requested = false;
	return r;
}

const bson_t *
client_metadata(const client_t *c)
{
	return c->metadata;
}

bool
cmd_check_deadline(const cmd_t *c, terr_t *err)
{
	(void)c;
	return tm_interrupt_check_now(err) != 0;
}

/* maxTimeMS: a non-negative integral number; mongod's messages. */
static int
parse_max_time(cmd_t *c, terr_t *err)
{
	bson_iter_t it;
	int64_t ms;

	if (!cmd_find_field(c, "maxTimeMS", &it))
		return 0;
	if (BSON_ITER_HOLDS_INT32(&it))
		ms = bson_iter_int32(&it);
	else if (BSON_ITER_HOLDS_INT64(&it))
		ms = bson_iter_int64(&it);
	else if (BSON_ITER_HOLDS_DOUBLE(&it)) {
		double d = bson_iter_double(&it);
		if (!tm_double_to_i64(d, &ms) || d != (double)ms)
			return terr_set(err, TERR_BAD_VALUE, "maxTimeMS has non-integral value");
	} else if (BSON_ITER_HOLDS_NULL(&it)) {
		return 0;
	} else {
		return terr_set(err, TERR_BAD_VALUE, "maxTimeMS must be a number");
	}
	if (ms < 0)
		return terr_set(err, TERR_BAD_VALUE, "%lld value for maxTimeMS is out of range [0, 2147483647]",
		    (long long)ms);
	if (ms > INT32_MAX)
		return terr_set(err, TERR_BAD_VALUE, "%lld value for maxTimeMS is out of range [0, 2147483647]",
		    (long long)ms);
	c->max_time_given = true;
	if (ms > 0) {
		c->deadline_us = c->op.start_us + ms * 1000;
		tm_opctx_set_deadline(c->deadline_us);
	}
	return 0;
}

/* Build mongod's error reply from err into reply (already initialised). */
static void
error_reply(bson_t *reply, const terr_t *err)
{
	char buf[32];
	bson_iter_t it;

	bson_reinit(reply);
	BSON_APPEND_DOUBLE(reply, "ok", 0.0);
	BSON_APPEND_UTF8(reply, "errmsg", err->msg ? err->msg : "");
	BSON_APPEND_INT32(reply, "code", err->code);
	BSON_APPEND_UTF8(reply, "codeName", terr_code_name(err->code, buf));
	if (err->extra != NULL && bson_iter_init(&it, err->extra)) {
		while (bson_iter_next(&it))
			bson_append_iter(reply, bson_iter_key(&it), -1, &it);
	}
	if (err->info != NULL)
		BSON_APPEND_DOCUMENT(reply, "errInfo", err->info);
}

/*
 * The command table as a hash (built once): cmd_lookup's answer (exact
 * name first, then alias) without a walk over every row per command.
 */
#define CMD_HASH_SIZE 256       /* power of two, > 2x (names + aliases) */

static struct {
	const char *name;
	const cmd_def_t *def;
} cmd_hash[CMD_HASH_SIZE];
static pthread_once_t cmd_hash_once = PTHREAD_ONCE_INIT;

static uint32_t
name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static void
cmd_hash_add(const char *name)
{
	uint32_t i = name_hash(name) & (CMD_HASH_SIZE - 1);

	while (cmd_hash[i].name != NULL) {
		if (strcmp(cmd_hash[i].name, name) == 0)
			return;
		i = (i + 1) & (CMD_HASH_SIZE - 1);
	}
	cmd_hash[i].name = name;
	cmd_hash[i].def = cmd_lookup(name);   /* the table's own rule decides */
}

static void
cmd_hash_build(void)
{
	int n;
	const cmd_def_t *t = cmd_table(&n);

	if (2 * n >= CMD_HASH_SIZE)
		return;                       /* too many rows: every lookup falls back to cmd_lookup */
	for (int i = 0; i < n; i++) {
		cmd_hash_add(t[i].name);
		if (t[i].alias != NULL)
			cmd_hash_add(t[i].alias);
	}
}

static const cmd_def_t *
cmd_lookup_fast(const char *name)
{
	uint32_t i;

	pthread_once(&cmd_hash_once, cmd_hash_build);
	for (i = name_hash(name) & (CMD_HASH_SIZE - 1); cmd_hash[i].name != NULL;
	    i = (i + 1) & (CMD_HASH_SIZE - 1))
		if (strcmp(cmd_hash[i].name, name) == 0)
			return cmd_hash[i].def;
	return cmd_lookup(name);              /* unknown names (59), or an unhashed table */
}

/* js/'s system.js loader (js_thread_set_stored_loader): each document of
 * the running command's <db>.system.js, read on the command's storage
 * session (mongod reads it with a direct client of the operation). */
static int
stored_js_load(void *arg, js_stored_each_fn each, void *each_arg, terr_t *err)
{
	cmd_t *c = arg;
	storage_coll_t *coll = NULL;
	storage_cursor_t *cur = NULL;
	storage_session_t *s;
	bson_t doc;
	int rc, ret = -1;

	if (storage_coll_get(c->engine->st, c->db, "system.js", &coll, NULL) != 0)
		return 0; /* none: nothing to load */
	if ((s = client_session(c->client, err)) == NULL)
		goto out;
	if (storage_scan_open(s, coll, false, &cur, err) != 0)
		goto out;
	while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		if (each(each_arg, &doc, err) != 0)
			goto out;
	}
	if (rc == 0)
		ret = 0;
out:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_coll_release(coll);
	return ret;
}

/* Commands whose arguments carry secrets: their debug lines name the
 * command only (mongod's snipForLogging hides the same fields). */
static bool
args_secret(const char *name)
{
	static const char *const secret[] = {"saslStart", "saslContinue", "authenticate", "createUser", "updateUser",
		"copydbsaslstart", "getnonce", NULL};

	for (int i = 0; secret[i] != NULL; i++)
		if (strcmp(secret[i], name) == 0)
			return true;
	return false;
}

/* commandArgs of a debug line: the body, or {<name>: "###"}. */
static void
append_command_args(bson_t *attr, const char *name, const bson_t *body)
{
	if (!args_secret(name)) {
		BSON_APPEND_DOCUMENT(attr, "commandArgs", body);
	} else {
		bson_t d;
		BSON_APPEND_DOCUMENT_BEGIN(attr, "commandArgs", &d);
		BSON_APPEND_UTF8(&d, name, "###");
		bson_append_document_end(attr, &d);
	}
}

/* mongod's D2 COMMAND lines before a command runs (21965 "About to run the
 * command"; 21964 when no such command) and its D1 21962 "Assertion while
 * executing command" after one failed: written only at that verbosity. */
static void
log_about_to_run(const client_t *cl, const char *db, const char *name, const bson_t *body, bool found)
{
	bson_t attr;

	if (!tlog_debug_on("COMMAND", 2))
		return;
	bson_init(&attr);
	if (!found) {
		BSON_APPEND_UTF8(&attr, "command", name);
		tlog_debug(2, "COMMAND", 21964, "Command not found in registry", &attr);
	} else {
		BSON_APPEND_UTF8(&attr, "db", db != NULL ? db : "");
		BSON_APPEND_UTF8(&attr, "client", cl != NULL && cl->remote != NULL ? cl->remote : "");
		append_command_args(&attr, name, body);
		tlog_debug(2, "COMMAND", 21965, "About to run the command", &attr);
	}
	bson_destroy(&attr);
}

static void
log_assertion(const char *db, const char *name, const bson_t *body, const terr_t *er)
{
	bson_t attr;
	char buf[32], *error;

	if (!tlog_debug_on("COMMAND", 1))
		return;
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "command", name);
	BSON_APPEND_UTF8(&attr, "db", db != NULL ? db : "");
	append_command_args(&attr, name, body);
	error = bson_strdup_printf("%s: %s", terr_code_name(er->code, buf), er->msg != NULL ? er->msg : "");
	BSON_APPEND_UTF8(&attr, "error", error);
	bson_free(error);
	tlog_debug(1, "COMMAND", 21962, "Assertion while executing command", &attr);
	bson_destroy(&attr);
}

/* The stage plan (commands_private.h says what "plain" means and what it
 * skips).  The fields whose presence makes a command take every stage: the
 * ones the Stable API, collectionUUID, maxTimeMS, concern and (on a
 * standalone) transaction stages read.  lsid, $db, $readPreference,
 * $clusterTime and comment are not among them: on a standalone no skipped
 * stage reads them (the session's lastUse is tamgad's, before dispatch). */
#define STAGE_PLAN_FIELDS(X) \
	X("maxTimeMS") X("apiVersion") X("apiStrict") X("apiDeprecationErrors") X("collectionUUID") \
	X("txnNumber") X("autocommit") X("startTransaction") X("readConcern") X("writeConcern")
#define STAGE_PLAN_BIT(name) | cmd_args_key_bit(name, sizeof(name) - 1)
/* folded to one constant by the compiler (literal names, known lengths) */
static inline uint64_t
stage_plan_mask(void)
{
	return 0 STAGE_PLAN_FIELDS(STAGE_PLAN_BIT);
}
#undef STAGE_PLAN_BIT

static atomic_bool stage_plan_off;
static atomic_llong stage_plan_count;

void
engine_stage_plan_enable(bool on)
{
	atomic_store(&stage_plan_off, !on);
}

long long
engine_stage_plan_taken(void)
{
	return atomic_load(&stage_plan_count);
}

/* Whether c may skip the stages above: decided once, before the first of
 * them.  The server state it reads (standalone, fail points) is what those
 * stages would have read at the same point. */
static inline bool
stage_plan_plain(engine_t *e, cmd_t *c)
{
	const cmd_args_t *ix;
	uint64_t hit;

	if (e->rs != NULL || e->opts.repl_set_name != NULL ||
	    atomic_load_explicit(&stage_plan_off, memory_order_relaxed) || failpoint_any_active())
		return false;
	ix = cmd_args_index(c);
	if (ix->n < 0)
		return false;
	if ((hit = ix->present & stage_plan_mask()) != 0) {
		/* a bit is shared by several names ($db's with autocommit's,
		 * cursor's with maxTimeMS'): look the names of the bits set up */
		bson_iter_t it;
#define STAGE_PLAN_NAMED(name) \
		if ((hit & cmd_args_key_bit(name, sizeof(name) - 1)) && \
		    cmd_find_field_indexed(c, name, sizeof(name) - 1, &it)) \
			return false;
		STAGE_PLAN_FIELDS(STAGE_PLAN_NAMED)
#undef STAGE_PLAN_NAMED
	}
	atomic_fetch_add_explicit(&stage_plan_count, 1, memory_order_relaxed);
	return true;
}

int
engine_run_command(engine_t *e, client_t *cl, const char *dbname, const bson_t *body,
                   bson_t *reply, terr_t *err)
{
	terr_t local = TERR_INIT;
	terr_t *er = err ? err : &local;
	const cmd_def_t *def = NULL;
	cmd_repl_ctx_t rx;
	cmd_t c;
	bson_t uuid_body;
	bool uuid_rewritten = false;
	int64_t start_us = 0;
	bool op_begun = false;
	bool plain;
	int rc;

	bson_init(reply);
	terr_clear(er);
	memset(&rx, 0, sizeof(rx));
	/* zero all but the operation (tm_opctx_begin sets it whole before any
	 * reader) and the argument index's entries (read only below its n):
	 * 1 152 bytes were ~150 instructions a command */
	_Static_assert(offsetof(cmd_t, op) < offsetof(cmd_t, max_time_given) &&
	    offsetof(cmd_t, max_time_given) < offsetof(cmd_t, args) &&
	    offsetof(cmd_t, args) < offsetof(cmd_t, txn_session) && offsetof(cmd_args_t, f) + sizeof(c.args.f) ==
	    sizeof(cmd_args_t), "cmd_t's layout as the zeroing below expects");
	memset(&c, 0, offsetof(cmd_t, op));
	memset((char *)&c + offsetof(cmd_t, max_time_given), 0,
	    offsetof(cmd_t, args) + offsetof(cmd_args_t, f) - offsetof(cmd_t, max_time_given));
	memset((char *)&c + offsetof(cmd_t, txn_session), 0, sizeof(c) - offsetof(cmd_t, txn_session));
	c.engine = e;
	c.client = cl;
	c.db = dbname;
	c.body = body;
	c.reply = reply;

	/* the first element from the argument index (built here once; the
	 * stage plan and the handler read it too): one libbson step with the
	 * key's length known, not an init and a walk; a body the index could
	 * not take is walked by libbson as before */
	{
		const cmd_args_t *ix = cmd_args_index(&c);
		if (ix->n > 0 ? !bson_iter_init_from_data_at_offset(&c.first, ix->data, ix->len, ix->f[0].off,
		    ix->f[0].keylen) : ix->n == 0 || !bson_iter_init(&c.first, body) || !bson_iter_next(&c.first)) {
			terr_set(er, TERR_FAILED_TO_PARSE, "Failed to parse: command document is empty");
			goto fail;
		}
	}
	/* a collection named by its UUID (coll_uuid.c): the handler sees the
	 * name (only a BinData first value can be one) */
	if (BSON_ITER_HOLDS_BINARY(&c.first) &&
	    cmd_uuid_resolve(e, dbname, body, &uuid_body, &uuid_rewritten, er) != 0)
		goto fail;
	if (uuid_rewritten) {
		c.body = &uuid_body;
		bson_iter_init(&c.first, c.body);
		bson_iter_next(&c.first);
	}
	c.name = bson_iter_key(&c.first);
	def = cmd_lookup_fast(c.name);
	/* test commands exist only with --setParameter enableTestCommands=1 */
	if (def != NULL && (def->flags & CMDF_TEST) && !engine_test_commands_enabled(e))
		def = NULL;
	log_about_to_run(cl, dbname, c.name, c.body, def != NULL);
	if (def == NULL) {
		cmd_metrics_record(NULL, NULL, NULL, NULL, 0, true);
		terr_set(er, TERR_COMMAND_NOT_FOUND, "no such command: '%s'", c.name);
		goto fail;
	}
	start_us = tm_now_us();
	if (dbname == NULL || dbname[0] == '\0') {
		terr_set(er, TERR_INVALID_NAMESPACE, "Invalid database name: ''");
		goto fail;
	}
	if ((def->flags & CMDF_ADMIN_ONLY) && strcmp(dbname, "admin") != 0) {
		terr_set(er, TERR_UNAUTHORIZED, "%s may only be run against the admin database.", c.name);
		goto fail;
	}
	/* from here on the command is an operation: currentOp lists it, killOp
	 * and its maxTimeMS interrupt it (common/opctx.h) */
	tm_opctx_begin_at(&c.op, &c, start_us);
	op_begun = true;
	/* the stage plan: which of the stages below this command can need
	 * (commands_private.h); a plain command skips the rest */
	plain = stage_plan_plain(e, &c);
	if (!plain && parse_max_time(&c, er) != 0)
		goto fail;
	/* requireApiVersion: every command of a connection names apiVersion
	 * (the embedded API is an internal client, as mongod's direct ones) */
	if (atomic_load(&e->require_api_version) != 0 && cl != NULL && cl->connection_id > 0) {
		bson_iter_t av;
		if (!cmd_find_field(&c, "apiVersion", &av)) {
			terr_set(er, 498870,
			    "The apiVersion parameter is required, please configure your MongoClient's API version");
			goto fail;
		}
	}
	/* the Stable API parameters (api_version.c), collectionUUID */
	if (!plain && (cmd_api_check(&c, def, er) != 0 || cmd_collection_uuid_check(&c, er) != 0))
		goto fail;
	if (cmd_auth_check(&c, def, er) != 0)
		goto fail;
	{
		/* the scripts this command runs see this database's and this
		 * connection's JavaScript globals only (js/script.h) */
		js_thread_set_scope_conn(dbname, cl != NULL ? (int64_t)cl->connection_id : 0);
		js_thread_set_stored_loader(stored_js_load, &c);
	}
	/* replica set and test commands (cmd_repl.c): failCommand, the
	 * primary gate, $clusterTime, read / write concern -- before the
	 * transaction checks, as mongod answers "not primary" first */
	if (!plain) {
		cmd_txn_peek(&c);   /* what the error labels need of lsid / txnNumber / autocommit */
		if (cmd_repl_before(&c, def, &rx, er) != 0) {
			cmd_txn_error_labels(&c, er);
			goto fail;
		}
	}
	__atomic_fetch_add(&e->counters.command, 1, __ATOMIC_RELAXED);

	/* sessions and transactions (cmd_txn.c): the session is checked out
	 * around the handler, which runs on the transaction's storage session;
	 * a standalone refuses every txnNumber with 20 as mongod does.  A
	 * plain command has no txnNumber on a standalone: cmd_txn_enter would
	 * return 0 and cmd_txn_run_handler call the handler; cmd_txn_leave runs
	 * when it has something to do (an error's labels, a handler's kept
	 * reply or image) */
	if (plain) {
		rc = def->handler(&c, er);
		if (rc != 0 || terr_is_set(er) || !cmd_txn_idle(&c))
			rc = cmd_txn_leave(&c, rc, er);
	} else {
		rc = cmd_txn_enter(&c, def, er);
		if (rc == 0)
			rc = cmd_txn_run_handler(&c, def, er);
		else if (rc == 1)
			rc = 0;                  /* a retried write: its first reply */
		rc = cmd_txn_leave(&c, rc, er);
	}
	/* the slow query log, the profiler, $queryStats (cmd_toolbelt.c) */
	cmd_toolbelt_after(&c, rc, er);
	/* what follows must complete whatever happened to the command (a
	 * reload of the views after a partial write): outside the operation,
	 * so neither its deadline nor a killOp can cut it short */
	tm_opctx_end(&c.op);
	op_begun = false;
	/* a direct write to system.views (any of its statements may have been
	 * applied, even when the command failed): the views are what it holds
	 * now, as mongod reloads its view catalog */
	if ((def->flags & CMDF_WRITE) &&
	    (strcmp(c.name, "insert") == 0 || strcmp(c.name, "update") == 0 || strcmp(c.name, "delete") == 0 ||
	    strcmp(c.name, "findAndModify") == 0 || strcmp(c.name, "findandmodify") == 0) &&
	    BSON_ITER_HOLDS_UTF8(&c.first) && view_is_system_views(bson_iter_utf8(&c.first, NULL)))
		view_reload(&c, c.db);
	/* a set of several members: a write this member stopped taking in the
	 * middle (it stepped down) fails whole with 11602, which drivers retry
	 * on the new primary, rather than as a write error they do not */
	if (rc == 0 && !terr_is_set(er) && (def->flags & CMDF_WRITE) && cmd_repl_member_interrupted(&c, reply, er))
		rc = -1;
	/* readConcern linearizable: a no-op confirmed by a majority after the
	 * read (cmd_repl_reads.c) */
	if (rc == 0 && !terr_is_set(er) && rx.linearizable && cmd_repl_reads_linearize(&c, er) != 0)
		rc = -1;
	/* an error set but not returned is still an error: never report ok: 1
	 * with a failure inside */
	if (rc != 0 || terr_is_set(er)) {
		if (!terr_is_set(er))
			terr_set(er, TERR_INTERNAL_ERROR, "command %s failed without a reason", c.name);
		goto fail;
	}
	/* a plain command: no replica set, no fail point's writeConcernError
	 * or labels (cmd_repl_after would add nothing), and no transaction
	 * state for labels unless the command is commitTransaction /
	 * abortTransaction (cmd_txn_reply_labels' own first test) */
	if (!plain)
		cmd_repl_after(&c, def, &rx, 0, reply);
	if (!plain || c.txn_autocommit || c.txn_retryable_write || c.name[0] == 'c' || c.name[0] == 'a')
		cmd_txn_reply_labels(&c, reply);
	{
		/* ok: 1.0 as one raw element (libbson's appender is ~300 instructions) */
		static const uint8_t ok_elem[] = {BSON_TYPE_DOUBLE, 'o', 'k', 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
		if (!bv_append_raw(reply, ok_elem, sizeof ok_elem))
			BSON_APPEND_DOUBLE(reply, "ok", 1.0);
	}
	if (!plain) {
		/* operationTime / $clusterTime: a replica set's only */
		cmd_repl_times(&c, def, &rx, 0, reply);
		cmd_repl_ctx_clear(&rx);
	}
	/* a direct write to the user or role collections changes privileges:
	 * drop what the auth layer has cached */
	if ((def->flags & CMDF_WRITE) && strcmp(dbname, "admin") == 0 && BSON_ITER_HOLDS_UTF8(&c.first) &&
	    (strcmp(bson_iter_utf8(&c.first, NULL), "system.users") == 0 ||
	     strcmp(bson_iter_utf8(&c.first, NULL), "system.roles") == 0))
		auth_invalidate_cache();
	if (op_begun)
		tm_opctx_end(&c.op);
	js_thread_set_stored_loader(NULL, NULL);
	/* the command's time as the profiler saw it (one clock read fewer) */
	cmd_metrics_record(def, &c.first, c.db, c.body, (c.end_us != 0 ? c.end_us : tm_now_us()) - start_us, false);
	if (uuid_rewritten)
		bson_destroy(&uuid_body);
	terr_clear(&local);
	return 0;

fail:
	if (op_begun)
		tm_opctx_end(&c.op);
	js_thread_set_stored_loader(NULL, NULL);
	if (def != NULL && c.name != NULL)
		log_assertion(dbname, c.name, c.body, er);
	error_reply(reply, er);
	cmd_repl_times(&c, def, &rx, er->code, reply);
	cmd_repl_ctx_clear(&rx);
	rc = er->code;
	if (def != NULL && start_us != 0)
		cmd_metrics_record(def, &c.first, c.db, c.body, tm_now_us() - start_us, true);
	if (uuid_rewritten)
		bson_destroy(&uuid_body);
	terr_clear(&local);
	return rc;
}
