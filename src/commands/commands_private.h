/*
 * commands_private.h -- what the command files share and nobody else sees:
 * the engine and client structs, the handlers listed in command_table.c, and
 * small helpers for reading command arguments the way mongod's IDL does.
 */
#ifndef TAMGA_COMMANDS_PRIVATE_H
#define TAMGA_COMMANDS_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "auth/auth.h"
#include "commands/commands.h"
#include "commands/cursor.h"
#include "repl/clock.h"
#include "repl/oplog.h"

struct engine {
	storage_t *st;
	engine_options_t opts;
	cursor_registry_t *cursors;
	engine_counters_t counters;
	int64_t start_wall_ms;           /* for uptime / localTime */
	int64_t start_mono_us;
	atomic_bool shutdown;
	atomic_llong next_connection_id;
	struct ttl_monitor *ttl;         /* TTL index monitor thread (query/planner_ttl.h) */
	char *tmp_dir;                   /* <dbpath>/_tmp: sort spill files (unlinked once open) */
	/* Server parameters settable at runtime (setParameter, cmd_admin.c):
	 * allowDiskUseByDefault (true, as mongod since 6.0),
	 * internalQueryMaxBlockingSortMemoryUsageBytes and
	 * internalDocumentSourceGroupMaxMemoryBytes and
	 * internalDocumentSourceBucketAutoMaxMemoryBytes (100 MB each). */
	atomic_llong allow_disk_use_by_default;   /* 0 or 1 (setParameter's rows are atomic_llong) */
	atomic_llong sort_memory_limit;
	atomic_llong group_memory_limit;
	atomic_llong bucket_auto_memory_limit;
	/* Replica-set mode (opts.repl_set_name set): the logical clock and the
	 * oplog (repl/); both NULL for a standalone. */
	repl_clock_t *clock;
	repl_oplog_t *oplog;
	/* change streams' reader over that oplog (repl/changestream.h); NULL
	 * for a standalone */
	struct repl_cs_service *cs;
	/* logical sessions and their transactions (repl/session.h, repl/txn.h) */
	struct repl_sessions *sessions;
	atomic_llong txn_lifetime_limit_seconds;       /* 60 */
	atomic_llong max_txn_lock_request_timeout_ms;  /* 5 */
	atomic_llong txn_ops_per_entry;                /* INT_MAX: maxNumberOfTransactionOperationsInSingleOplogEntry */
	struct repl_txn_reaper *txn_reaper;
	/* replica-set mode (opts.repl_set_name set; cmd_repl.c): the set's
	 * identity and state, NULL on a standalone; the cluster-time keys */
	struct repl_set *rs;
	struct cluster_keys *keys;
	/* a set of several members (cmd_repl_member.c, repl/raft_member.h):
	 * the Raft member (NULL otherwise), its folder (<dbpath>/raft) and
	 * this node's host:port (engine_set_self_host) */
	struct repl_member *member;
	/* members halted when a removed member was added again
	 * (cmd_repl_member.c): kept for readers that still hold them, freed
	 * at shutdown */
	struct repl_member **retired_members;
	size_t nretired_members;
	/* the configuration watch (cmd_repl_force.c): asks the members of this
	 * node's configuration for theirs, adopts a newer one (NULL: none) */
	struct cmd_repl_watch *config_watch;
	/* replSetHeartbeat to the other members (cmd_repl_heartbeat.c; NULL:
	 * not started) */
	struct cmd_repl_hb *heartbeats;
	char *raft_dir;
	char *self_host;
	/* ttlMonitorSleepSecs (60) and ttlMonitorEnabled (1): read by the TTL
	 * monitor before each sleep (query/planner_ttl.h) */
	atomic_llong ttl_monitor_sleep_secs;
	atomic_llong ttl_monitor_enabled;
	/* timeseriesIdleBucketExpiryMemoryUsageThreshold (0: 2.5% of the
	 * machine's memory) and timeseriesIdleBucketExpiryMaxCountPerAttempt
	 * (3): the bucket catalog's memory bound (cmd_timeseries.c) */
	atomic_llong ts_idle_expiry_threshold;
	atomic_llong ts_idle_expiry_max_per_attempt;
	/* the ingress connection establishment rate limiter (server/ reads
	 * them through engine_ingress_limits): enabled (0), rate per second
	 * (INT32_MAX), burst capacity in seconds (a double's bits, DBL_MAX),
	 * queue depth (0) */
	atomic_llong ingress_rate_limiter_enabled;
	atomic_llong ingress_rate_per_sec;
	atomic_llong ingress_burst_capacity_secs;
	atomic_llong ingress_max_queue_depth;
	/* enableTestCommands (startup only; engine_test_commands_enabled) and
	 * requireApiVersion (startup and runtime) */
	atomic_llong enable_test_commands;
	atomic_llong require_api_version;
	/* internalQueryStatsRateLimit (0: $queryStats collects nothing, as
	 * mongod's default; -1: every query; cmd_toolbelt.c) */
	atomic_llong qstats_rate_limit;
	/* logLevel (0; logComponentVerbosity.verbosity is the same value) and
	 * notablescan (0: a query a collection scan answers is refused with
	 * 291 when set) -- startup and runtime (issue 22) */
	atomic_llong log_level;
	atomic_llong notablescan;
};

/*
 * The dispatcher's stage plan (engine.c, engine_run_command): decided once
 * per command, after the argument index is built.  A command is "plain"
 * when the engine is a standalone (no replica set: no gate, no gossip, no
 * $clusterTime / operationTime), no fail point is active, and its body
 * names none of the fields the skipped stages read (maxTimeMS, apiVersion,
 * apiStrict, apiDeprecationErrors, collectionUUID, txnNumber, autocommit,
 * startTransaction, readConcern, writeConcern -- by the index's presence
 * bits, then by name where a bit is shared: $db's is autocommit's).  A
 * plain command skips the Stable API, collectionUUID, maxTimeMS, concern,
 * transaction and replica-set stages, each of which would have returned
 * without effect; everything a client or operator sees (reply, metrics,
 * top, opcounters, currentOp, profiler, slow-query log, $queryStats, auth)
 * runs as on the general path.
 *
 * For tests (tests/unit/test_stage_plan.c): engine_stage_plan_enable(false)
 * makes every command take the general path (process-wide; default on);
 * engine_stage_plan_taken() counts the commands that took the plain one.
 */
void engine_stage_plan_enable(bool on);
long long engine_stage_plan_taken(void);

/* A double held in an atomic_llong row (its bits) and back. */
static inline long long
engine_double_bits(double d)
{
	long long v;

	memcpy(&v, &d, sizeof(v));
	return v;
}

static inline double
engine_bits_double(long long v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

/*
 * True when the server was started with enableTestCommands (--setParameter
 * enableTestCommands=1, or setParameter: in the YAML file).  Startup only,
 * as mongod: setParameter at runtime answers 20.  What test-only commands
 * (configureFailPoint, ...) check before they run; without it they answer
 * 59 CommandNotFound as mongod's unregistered test commands do.
 */
static inline bool
engine_test_commands_enabled(engine_t *e)
{
	return atomic_load(&e->enable_test_commands) != 0;
}

struct client {
	engine_t *engine;
	storage_session_t *session;      /* from the pool, returned by client_free */
	int64_t connection_id;
	char *remote;
	bool is_local;
	bson_t *metadata;
	/* the lsid this client last recorded in the session cache, when, and the
	 * cache's generation then (cmd_admin_session_touch skips the cache's lock
	 * when the same session comes back within a second) */
	uint8_t lsid_seen[16];
	int64_t lsid_seen_ms;
	uint64_t lsid_seen_gen;
	bool has_auth;                   /* the auth layer keeps state for it (auth_client_get) */
	bool close_requested;            /* failCommand closeConnection: the server closes instead of replying */
	auth_conn_t auth;                /* the client as auth/ sees it (cmd_auth_conn_init) */
};

/* A client in memory the caller owns (the embedded API's, on its stack):
 * client_init as client_new does; client_release gives back what it holds
 * (session, auth state) as client_free does, without freeing c itself. */
void client_init(client_t *c, engine_t *e, const client_info_t *info);
void client_release(client_t *c);

/* ---- auth/ seen from the command layer (cmd_auth.c) ----------------------- */

/* Auth on for this engine (engine_options_t.auth). */
bool engine_auth_enabled(const engine_t *e);
/* Fill c->auth from c (its engine, storage, session, loopback flag); from
 * client_init. */
void cmd_auth_conn_init(client_t *c);
/* The dispatcher's privilege check before def's handler runs: 0 when auth
 * is off, def is NULL (the dispatcher answers 59) or has CMDF_NO_AUTH;
 * otherwise auth_check_command's answer for the command. */
int cmd_auth_check(cmd_t *c, const cmd_def_t *def, terr_t *err);
/* hello/isMaster: when the hello document has saslSupportedMechs
 * ("db.user") append saslSupportedMechs: [...] (the default pair for a user
 * that does not exist, so the reply never tells); when it has
 * speculativeAuthenticate ({saslStart: 1, mechanism, payload, db}) run the
 * first SASL step and append speculativeAuthenticate: {conversationId,
 * done, payload} -- on any failure nothing is appended, as mongod.  Never
 * fails the hello. */
void cmd_hello_auth_append(cmd_t *c, bson_t *reply);

/* ---- $currentOp, counters (cmd_currentop.c, cmd_metrics.c) ---------------- */
/* The running operations' currentOp documents appended to arr (an array
 * being built): every user's when all_users, else the caller's own. */
void cmd_current_op_docs(cmd_t *c, bool all_users, bson_t *arr);
/* After each command (engine_run_command): count it for
 * serverStatus.metrics.commands (def NULL: "<UNKNOWN>") and, for a
 * command on a collection, for top and latencyStats.  first, when not
 * NULL, is an iterator on body's first element (the dispatcher's: the
 * body is not walked again). */
void cmd_metrics_record(const cmd_def_t *def, const bson_iter_t *first, const char *db, const bson_t *body,
                        int64_t elapsed_us, bool failed);
/* metrics.commands' fields ({<name>: {failed, total}}) appended to out. */
void cmd_metrics_commands_append(bson_t *out);
/* top's totals: {note, <ns>: {total, readLock, ...: {time, count}}}. */
void cmd_metrics_top_append(bson_t *totals);
/* $collStats latencyStats of ns: reads, writes, commands, transactions. */
void cmd_metrics_latency_append(const char *ns, bool histograms, bson_t *out);

/* ---- index filters (cmd_plancache.c) ------------------------------------- */
/* When an index filter is set for the shape of (query, sort, proj; NULL =
 * none) on coll (a collection of c->db; NULL: false): true with *allowed
 * the positions in coll->indexes of the listed indexes it has (bit i:
 * coll->indexes[i]; 0 when none is left: a collection scan), for
 * plan_request_t.index_filter.  False (*allowed 0) otherwise. */
bool cmd_plan_filter_mask(cmd_t *c, const storage_coll_t *coll, const bson_t *query, const bson_t *sort,
                          const bson_t *proj, uint64_t *allowed);

/* The hint a plan under an index filter keeps: NULL for an index hint
 * (mongod ignores it), hint itself for {$natural: d}. */
const bson_value_t *cmd_plan_filter_keep_hint(const bson_value_t *hint);

/* ---- the Stable API parameters (api_version.c) ---------------------------- */
/* apiVersion / apiStrict / apiDeprecationErrors of c, checked as mongod does
 * before def runs: 0, or -1 with 322 APIVersionError (apiVersion not "1"),
 * 4886600 (apiStrict or apiDeprecationErrors without apiVersion), 323
 * APIStrictError (apiStrict: true and def, or one of an aggregate's stages,
 * outside API Version 1), 14 for a wrong type. */
int cmd_api_check(cmd_t *c, const cmd_def_t *def, terr_t *err);

/* ---- collections by UUID, collectionUUID (coll_uuid.c) -------------------- */
/* find / count / distinct / listIndexes whose first element is a UUID: *out
 * (initialised; the caller destroys it) is body with the collection's name
 * in its place and *rewritten true.  26 NamespaceNotFound when no collection
 * of db has the UUID; 0 with *rewritten false for every other command. */
int cmd_uuid_resolve(engine_t *e, const char *db, const bson_t *body, bson_t *out, bool *rewritten,
                     terr_t *err);
/* A collectionUUID field that does not name c's collection: -1 with 361
 * CollectionUUIDMismatch and mongod's extra reply fields; 0 otherwise. */
int cmd_collection_uuid_check(cmd_t *c, terr_t *err);

/* ---- argument helpers (mongod IDL messages) ------------------------------ */

/* The collection name of a command whose first element is the collection
 * ({find: "c"}).  Errors as mongod: "collection name has invalid type <t>"
 * (code 2), "Invalid namespace specified '<db>.'" (73). */
int cmd_collection_arg(cmd_t *c, const char **name, terr_t *err);

/* bson_iter_init_find(it, c->body, field) through the command's field index
 * (built on the first lookup, kept in c->args): true with *it on the field.
 * Inline: a field the command does not carry (most of the dispatcher's
 * ~10 lookups) costs the field's length -- a constant for a literal -- and
 * one bit test; the rest is cmd_find_field_indexed (args.c). */
const cmd_args_t *cmd_args_index(cmd_t *c);
bool cmd_find_field_indexed(cmd_t *c, const char *field, size_t flen, bson_iter_t *it);

/* A field name's bit in cmd_args_t.present (several names share a bit). */
static inline uint64_t
cmd_args_key_bit(const char *key, size_t len)
{
	return 1ULL << ((len * 7 + (unsigned char)key[0] + (unsigned char)key[len - 1]) & 63);
}

static inline bool
cmd_find_field(cmd_t *c, const char *field, bson_iter_t *it)
{
	size_t flen = strlen(field);
	const cmd_args_t *ix = c->args.body == c->body && c->args.len == c->body->len ? &c->args : cmd_args_index(c);

	if (ix->n >= 0 && flen > 0 && !(ix->present & cmd_args_key_bit(field, flen)))
		return false;
	return cmd_find_field_indexed(c, field, flen, it);
}

/* Type check for an optional field: returns 0 with *found false when absent,
 * code 14 TypeMismatch "BSON field '<cmd>.<field>' is the wrong type '<t>',
 * expected type '<want>'" when present with another type. */
int cmd_get_bool(cmd_t *c, const char *field, bool *out, bool *found, terr_t *err);
/* allowDiskUse as mongod reads it: the command's own value (cmd_get_bool's
 * types and errors) when it names one, else the server parameter
 * allowDiskUseByDefault (true unless setParameter turned it off). */
int cmd_get_allow_disk_use(cmd_t *c, bool *out, terr_t *err);
/* The memory a blocking sort may use before it spills or fails
 * (internalQueryMaxBlockingSortMemoryUsageBytes; 0 means none at all). */
uint64_t cmd_sort_memory_limit(const cmd_t *c);
int cmd_get_int64(cmd_t *c, const char *field, int64_t *out, bool *found, terr_t *err);
int cmd_get_doc(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err);
int cmd_get_array(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err);
int cmd_get_string(cmd_t *c, const char *field, const char **out, bool *found, terr_t *err);

/* Reject fields the command does not know: "BSON field '<cmd>.<f>' is an
 * unknown field." code 40415.  known is NULL-terminated; the generic fields
 * every command accepts ($db, lsid, $clusterTime, comment, ...) are always
 * allowed. */
int cmd_check_fields(cmd_t *c, const char *const *known, terr_t *err);
/* k is one of those generic fields. */
bool cmd_is_generic_field(const char *k);
/* True when every field of c's body after the first is one of `allowed`
 * (NULL-terminated; each at most once: found[i] its value, a view into the
 * body, and present[i] set)
 * or a generic field (the dispatcher's).  A request of such a shape reads
 * no other argument, so a handler may answer it by a shorter path (find's
 * express path).  False for any other shape (or a malformed body); the
 * handler's general path then reports whatever is wrong with it. */
bool cmd_args_only(cmd_t *c, const char *const *allowed, bson_value_t *found, bool *present);

/* The client's authenticated identity, "user@db", for cursor ownership; NULL
 * when nobody is authenticated.  Written into buf (256 bytes). */
const char *cmd_cursor_owner(cmd_t *c, char buf[256]);

/* ns "db.coll" into buf. */
void cmd_ns(char *buf, size_t len, const char *db, const char *coll);

/* collMod's {index: {...}} option (cmd_index.c): hidden / expireAfterSeconds /
 * unique / prepareUnique / forceNonUnique; its contract is at the definition. */
/* Check a stored index spec as createIndexes checks a new one (the _id
 * index against its own field list): 0, or -1 with err carrying mongod's
 * code and message (197 for an unknown field, ...).  Nothing is kept. */
int cmd_index_spec_check(const bson_t *spec, terr_t *err);

enum { CMD_COLLMOD_INDEX_APPLY = 0, CMD_COLLMOD_INDEX_DRY_RUN = 1, CMD_COLLMOD_INDEX_CHECK = 2 };
int cmd_index_coll_mod(cmd_t *c, const char *coll_name, const bson_iter_t *index_opt, int other_mods, int mode,
                       bson_t *reply, terr_t *err);

/* ---- sessions and transactions (cmd_txn.c) ------------------------------ */
/* Before the handler: read lsid / txnNumber / autocommit / startTransaction
 * as mongod does, check the session out and begin or continue its
 * transaction, so the handler runs on the transaction's storage session.
 * Returns 0 to run the handler, 1 when c->reply already holds the answer (a
 * retried retryable write), -1 with err.  cmd_txn_leave must follow in every
 * case: it gives the session back, aborts a transaction whose statement
 * failed, turns a statement's write error into the command's error and adds
 * mongod's errorLabels; it returns the command's final rc. */
int cmd_txn_enter(cmd_t *c, const cmd_def_t *def, terr_t *err);
int cmd_txn_leave(cmd_t *c, int rc, terr_t *err);
/* True when c holds no session, transaction, retryable-write, snapshot-read
 * or kept-reply state: cmd_txn_leave of a successful command would do
 * nothing (the dispatcher's stage plan skips the call then). */
static inline bool
cmd_txn_idle(const cmd_t *c)
{
	return c->txn_session == NULL && c->txn_kind == 0 && c->txn_snapshot_ts == 0 && !c->txn_swapped &&
	    !c->txn_oplog_session && c->txn_retried == NULL && c->txn_stmt_ids == NULL && c->txn_image == NULL &&
	    c->txn_kept_results == NULL;
}
/* The handler, as the command's session state wants it run: a
 * single-statement retryable write runs with its config.transactions row in
 * one storage transaction (retried whole on a write conflict); everything
 * else is def->handler. */
int cmd_txn_run_handler(cmd_t *c, const cmd_def_t *def, terr_t *err);
/* Before the replica set's checks: note what the error labels of the
 * command depend on (autocommit: false, a retryable write's txnNumber), and
 * add them to an error those checks answer (cmd_txn_leave does it for the
 * rest). */
void cmd_txn_peek(cmd_t *c);
void cmd_txn_error_labels(cmd_t *c, terr_t *err);
/* A successful reply's errorLabels for its writeConcernError (mongod's
 * getErrorLabels: RetryableWriteError, UnknownTransactionCommitResult), once
 * the replica-set layer added it; call before `ok` is appended. */
void cmd_txn_reply_labels(cmd_t *c, bson_t *reply);
/* A retryable write's statement `index` (its position in documents /
 * updates / deletes), before it runs: 1 when the session executed its
 * stmtId already (*ts: its oplog entry's ts; the stmtId joins the reply's
 * retriedStmtIds: answer it from there, do not run it), 0 to run it (its
 * oplog entries carry its stmtId from now on), -1 with 217
 * IncompleteTransactionHistory (a command error, as mongod's).  0 at once
 * when c is not a retryable write. */
int cmd_retry_stmt(cmd_t *c, storage_session_t *s, int index, uint64_t *ts, terr_t *err);
/* A retryable write whose statements cannot be told apart in the oplog (a
 * time-series insert: one bucket write holds several measurements): 1 when
 * every statement is found executed (answer n: 1 each; they are in
 * retriedStmtIds), 0 to run it (its reply is then kept whole for its retries, its entries carry
 * the first stmtId), -1 with 217 IncompleteTransactionHistory when the
 * session already executed something at this txnNumber that left no whole
 * reply (after a restart): never applied twice.  0 when c is not a
 * retryable write. */
int cmd_retry_whole(cmd_t *c, storage_session_t *s, terr_t *err);
/* A retryable write with time-series statements whose oplog entries are
 * the buckets' (a bulkWrite's updates and deletes cannot be answered from
 * them): kept whole (its reply kept for the txnNumber: a retry answers it,
 * repl_retryable_replay).  0 when none of its statements ran (it runs now;
 * also outside retryable writes), -1 with 238 when some did but no reply
 * was kept (a restart, or a failure part-way: their results cannot be
 * rebuilt), or with err reading the history.  what: the command's name. */
int cmd_retry_keep_whole(cmd_t *c, storage_session_t *s, const char *what, terr_t *err);
/* The same write's update statement found executed at ts: its n,
 * nModified and upserted _id (copied into *upserted, *has_upserted) rebuilt
 * from the entry, as mongod's parseOplogEntryForUpdate. */
int cmd_retry_update_result(cmd_t *c, storage_session_t *s, uint64_t ts, int64_t *n, int64_t *nmod,
                            bson_value_t *upserted, bool *has_upserted, terr_t *err);
/* True while c runs inside a multi-document transaction. */
bool cmd_in_transaction(const cmd_t *c);
/* Inside a multi-document transaction, may it create db.name?  mongod's
 * rules: 263 "Cannot create system collection <ns> within a transaction."
 * for system.* names, and 263 "Cannot create namespace <ns> in
 * multi-document transaction." when the transaction's readConcern is not
 * "local".  0 outside a transaction. */
int cmd_txn_check_create(cmd_t *c, const char *db, const char *name, terr_t *err);
/* serverStatus.transactions. */
void cmd_txn_server_status(cmd_t *c, bson_t *reply);

/* What a standalone mongod answers (code 20) to a command with a txnNumber,
 * and what commitTransaction / abortTransaction answer here. */
#define CMD_NO_TRANSACTIONS_MSG "Transaction numbers are only allowed on a replica set member or mongos"

/* ---- views (view.c) ------------------------------------------------------ */
/* A view resolved to what reading it means: the collection at the end of
 * its viewOn chain and the pipelines of the chain, innermost first. */
typedef struct view {
	char *base;        /* owned; NULL when not a view */
	bson_t pipeline;   /* array, valid when base is set */
	const struct coll *collation;   /* the view's default (interned), NULL: simple */
} view_t;
/* 1 with *v filled (view_free it) when name is a view of c->db, 0 when it is
 * not, -1 with 165 ViewDepthLimitExceeded (agg_view_resolve). */
int view_resolve(cmd_t *c, const char *name, view_t *v, terr_t *err);
void view_free(view_t *v);
/* Every view the stages read (agg_pipeline_involved: $lookup, $graphLookup,
 * $unionWith, nested pipelines) must have coll as its default collation, as
 * mongod's collatorCompatibleWithPipeline: 0, or -1 with 167
 * OptionNotSupportedOnView "Cannot override a view's default
 * collation<db>.<view>" (mongod's message, without a space). */
int view_check_involved(cmd_t *c, const bson_t *stages, const struct coll *coll, terr_t *err);
bool view_exists(cmd_t *c, const char *db, const char *name);
/* 0 unless db.name is a view: then 166 CommandNotSupportedOnView
 * "Namespace <ns> is a view, not a collection" (writes, indexes, stats). */
int view_refuse(cmd_t *c, const char *db, const char *name, terr_t *err);
/* find / count / distinct (kind) command cmd on view view_name as the
 * aggregate mongod converts it to; agg is initialised on success (destroy
 * it).  find options aggregation lacks: 168 InvalidPipelineOperator. */
int view_read_as_aggregate(const char *kind, const bson_t *cmd, const char *view_name, bson_t *agg,
                           terr_t *err);
/* Run c (a find, count or distinct on view view_name) and append its reply
 * (cursor, n, values) to c->reply. */
int view_read(cmd_t *c, const char *kind, const char *view_name, terr_t *err);
/* create with viewOn (other create options were refused by the caller);
 * collMod of a view (viewOn / pipeline). */
int view_create(cmd_t *c, const char *name, terr_t *err);
/* Drop view name of c->db and its system.views document (26 "ns not found"
 * when it is no view). */
int view_drop(cmd_t *c, const char *name, terr_t *err);
/* Drop every view of c->db (system.views itself was dropped). */
void view_drop_all(cmd_t *c);
/*
 * Direct writes to system.views (insert, update, delete, findAndModify,
 * bulkWrite; $out and $merge refuse every system collection with mongod's
 * 17385 / 31319), as mongod takes them from a user allowed to write there:
 * each document written must be a definition mongod's catalog can read
 * (view_check_definition_doc, from validation_check_write), and after the
 * command the database's views are what system.views holds (view_reload).
 */
bool view_is_system_views(const char *name);
/* mongod's shape of a system.views document of db: only _id, viewOn,
 * pipeline, collation; _id "<db>.<name>" with a valid name; viewOn a valid
 * collection name; pipeline an array; collation an object.  0, or -1 with
 * 182 InvalidViewDefinition "found invalid view definition _id: <_id> while
 * reading '<db>.system.views'" (mongod's message when it reloads; mongod
 * takes the write and then refuses every use of the database's views until
 * the document is removed: Tamga refuses the write instead). */
int view_check_definition_doc(const char *db, const bson_t *doc, terr_t *err);
/* Make db's views those its system.views holds: created, changed or
 * dropped in the catalog (a name already taken by a collection is left
 * out).  Errors are logged, not returned: the write that called it stands. */
void view_reload(cmd_t *c, const char *db);

/* explain's serverInfo {host, port, version, gitVersion} and
 * serverParameters (the limits mongod shows: internalLookupStage...,
 * internalQueryFacet..., ...) appended to reply (cmd_explain.c). */
void cmd_explain_append_server(bson_t *reply);
int view_coll_mod(cmd_t *c, const char *name, bson_t *reply, terr_t *err);
/* Option names create / collMod know (cmd_catalog.c, cmd_collmod.c). */
bool cmd_is_create_option(const char *field);

/* Capped collections (cmd_catalog.c, cmd_capped.c). */
#define CMD_CAPPED_MAX_SIZE ((int64_t)1 << 50)   /* 1 PB, mongod's limit on size */
/* holder's numeric field (create's and convertToCapped's size and max):
 * *found and *out when present; 14 TypeMismatch "BSON field
 * '<cmd>.<field>' is the wrong type ..." otherwise; a null is absent. */
int cmd_capped_number(cmd_t *c, const bson_t *holder, const char *field, int64_t *out, bool *found,
                      terr_t *err);
/* The IDL's bounds of create's size/max and collMod's cappedSize/cappedMax
 * (size in [1, 1 PB], max < 2^31), checked for the ones given: 2 BadValue
 * "BSON field '<name>' value must be >= 1, actual value '<v>'", "... <=
 * 1125899906842624 ...", "... < 2147483648 ...". */
int cmd_capped_range(const char *size_name, bool has_size, int64_t size, const char *max_name, bool has_max,
                     int64_t max, terr_t *err);
/* mongod's stored size (as given, since its relaxed capped sizes) and max
 * (<= 0: 2^31 - 1). */
int64_t cmd_capped_size(int64_t size);
int64_t cmd_capped_adjust_max(int64_t max);
/* Append {capped: true, size[, max]} as mongod stores them. */
void cmd_capped_options_append(bson_t *out, int64_t size, bool has_max, int64_t max);
bool cmd_is_coll_mod_option(const char *field);

/* ---- the schema toolbelt's hooks (cmd_toolbelt.c, src/toolbelt/) -------- */
/* After a command's handler, inside its operation: the slow query log, the
 * profiler (system.profile) and $queryStats, each only when wanted (a few
 * atomic loads otherwise).  rc / err are the command's outcome. */
void cmd_toolbelt_after(cmd_t *c, int rc, const terr_t *err);

/*
 * postBatchResumeToken of a resumable scan (find's, aggregate's): the
 * tokens of the last two results ({$recordId: NumberLong}, or BinData of
 * the clustered key on a clustered collection, as mongod's RecordId), the
 * last of which may wait as the cursor's pending document.  Zeroed memory
 * is an empty one; cmd_resume_tok_free releases it.
 */
typedef struct cmd_resume_tok {
	bson_t *last, *prev;    /* NULL: none yet */
} cmd_resume_tok_t;
/* The next result's RecordId: rid, or the clustered key (key != NULL). */
void cmd_resume_tok_push(cmd_resume_tok_t *t, int64_t rid, const uint8_t *key, size_t key_len);
/* Append postBatchResumeToken (the previous token when the last result is
 * pending; {$recordId: null} before any) to cursor. */
void cmd_resume_tok_append(const cmd_resume_tok_t *t, bool pending, bson_t *cursor);
void cmd_resume_tok_free(cmd_resume_tok_t *t);

/*
 * Where a resumable collection scan (find's or aggregate's
 * $_resumeAfter / $_startAt, one of them non-NULL) starts, as mongod's
 * validateResumeInput and CollectionScan decide (cmd_crud.c): the token's
 * shape (2), $initialSyncId (8132701), the RecordId's type against the
 * collection's (7738600), a null or vanished RecordId (211, wrapped
 * "<context><ns> :: caused by :: ...").  Sets *has_after / *after: the
 * RecordId to scan past, or on a clustered collection *after_key /
 * *after_key_len: the clustered key (a view into resume_after's BinData);
 * $_startAt on a clustered collection answers 238.  coll may be NULL (no
 * collection: nothing to check past the token).
 */
int cmd_resume_input_check(cmd_t *c, const storage_coll_t *coll, const char *ns, const char *context,
                           const bson_t *resume_after, const bson_t *start_at, bool *has_after, recid_t *after,
                           const uint8_t **after_key, size_t *after_key_len, terr_t *err);
/* serverStatus' validation (violation counters) and queryStats sections. */
void cmd_toolbelt_server_status(cmd_t *c);
/* agg_host_t.query_stats: $queryStats' spec checked, the rows appended. */
int cmd_toolbelt_query_stats(void *ctx, const bson_t *spec, bson_t *out, terr_t *err);

/* ---- handlers (one family per file) ------------------------------------- */
#define CMD_HANDLER(fn) int fn(cmd_t *c, terr_t *err)

#endif
