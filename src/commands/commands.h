/*
 * commands.h -- the command layer: request BSON in, reply BSON out.
 *
 * Both front ends go through here and nowhere else: the embedded API
 * (tamga_run_command) and the wire protocol server (tamgad).  That is what
 * keeps them from ever disagreeing.
 *
 * An engine_t is one open data folder plus what lives beside it: the cursor
 * registry, counters for serverStatus, the start time.  A client_t is one
 * caller: a server connection, or a temporary one per embedded call.  It
 * carries the authenticated user, connection metadata and a storage session.
 */
#ifndef TAMGA_COMMANDS_COMMANDS_H
#define TAMGA_COMMANDS_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "common/opctx.h"
#include "storage/storage.h"

typedef struct engine engine_t;
typedef struct client client_t;
typedef struct cursor_registry cursor_registry_t;

typedef struct engine_options {
	storage_options_t storage;
	bool auth;                  /* --auth: every command checks privileges */
	/* --replSet / replication.replSetName: the replica set this node belongs
	 * to (borrowed for the engine's life, copied by engine_open); NULL = a
	 * standalone, exactly as before replica-set mode existed */
	char *repl_set_name;
	/* --setParameter enableTestCommands=1: configureFailPoint and the other
	 * test-only commands exist (else 59 CommandNotFound, as mongod) */
	bool enable_test_commands;
	/* --oplogSize / replication.oplogSizeMB (MB); 0 = mongod's default rule */
	double oplog_size_mb;
} engine_options_t;

/* Open the data folder.  *out is owned by the caller until engine_close. */
int engine_open(const char *path, const engine_options_t *opts, engine_t **out, terr_t *err);
void engine_close(engine_t *e);
storage_t *engine_storage(engine_t *e);
/* Replica-set mode only (NULL for a standalone): the engine's logical clock
 * and oplog (repl/clock.h, repl/oplog.h), borrowed for the engine's life. */
struct repl_clock *engine_clock(engine_t *e);
struct repl_oplog *engine_oplog(engine_t *e);

/* The host:port other members and drivers reach this node at (the bind
 * address and the port the server listens on): a replica set's default
 * member host (replSetInitiate without a config) and what a member whose host
 * names this node is recognised by.  Copied; a no-op on a standalone. */
void engine_set_self_host(engine_t *e, const char *host_port);

/* The ingress connection establishment rate limiter's parameters, as
 * setParameter left them (the server reads them for each new connection). */
typedef struct engine_ingress_limits {
	bool enabled;
	int64_t rate_per_sec;          /* >= 1 */
	double burst_capacity_secs;    /* >= 1 */
	int64_t max_queue_depth;       /* >= 0 */
} engine_ingress_limits_t;
void engine_ingress_limits(engine_t *e, engine_ingress_limits_t *out);

/* Set by the server when `shutdown` arrives; the server polls it. */
bool engine_shutdown_requested(engine_t *e);

/* Counters for serverStatus; the server bumps the network ones. */
typedef struct engine_counters {
	int64_t insert, query, update, delete_, getmore, command;
	int64_t connections_current, connections_total;
	int64_t bytes_in, bytes_out, requests;
	/* connections refused by the establishment rate limiter, and waiting
	 * in its queue now */
	int64_t ingress_rejected, ingress_queued;
} engine_counters_t;
engine_counters_t *engine_counters(engine_t *e);

/*
 * A caller.  The server creates one per connection (client_new with the
 * remote address); the embedded API one per call.  The client takes a
 * storage session from the engine's pool lazily and returns it on free.
 */
typedef struct client_info {
	int64_t connection_id;     /* 0 for embedded */
	const char *remote;        /* "127.0.0.1:53124" or NULL */
	bool is_local;             /* loopback: the localhost exception applies */
} client_info_t;

client_t *client_new(engine_t *e, const client_info_t *info);
void client_free(client_t *c);
/* The session for this client's commands (taken from the pool on first use). */
storage_session_t *client_session(client_t *c, terr_t *err);
int64_t client_connection_id(const client_t *c);
/* The connection's verified TLS client certificate (server/tls.h): its
 * subject (copied; NULL: none) and whether it is a member certificate.
 * Called once after the handshake, before the first command. */
void client_set_peer_x509(client_t *c, const char *subject, bool member);
/* True (once) when the last command asked for the connection to close
 * without a reply (failCommand's closeConnection): the server closes it. */
bool client_take_close_request(client_t *c);
/* The client's `hello.client` metadata, kept for currentOp/logs (steals). */
void client_set_metadata_steal(client_t *c, bson_t *meta);
const bson_t *client_metadata(const client_t *c);

/*
 * tamgad's start (commands/server_dbs.c): admin.system.version's
 * featureCompatibilityVersion document (kept when present) and a new
 * local.startup_log document (cmd_line, may be NULL, as its cmdLine), as a
 * mongod server holds them.  Returns 0 or -1 with err.
 */
int engine_server_dbs_init(engine_t *e, const bson_t *cmd_line, terr_t *err);

/*
 * Run one command.  cmd is the command document as the driver sent it, with
 * OP_MSG kind-1 sequences already folded in as arrays; dbname is `$db`.
 * reply must be uninitialised: this call bson_init()s it and fills it with
 * either the command's reply plus ok: 1, or {ok: 0, errmsg, code, codeName
 * [, errInfo]}.  Returns 0 for ok: 1, the error code otherwise (err filled
 * when not NULL).
 */
int engine_run_command(engine_t *e, client_t *cl, const char *dbname, const bson_t *cmd,
                       bson_t *reply, terr_t *err);

/* ---- for command implementations --------------------------------------- */

/* Everything a handler needs for one command. */
/* The command's top-level fields, indexed on the first argument lookup
 * (commands/args.c) so that a handler's dozen lookups do not walk the
 * command a dozen times.  Private to args.c; valid for `body` only. */
#define CMD_ARGS_MAX 32
typedef struct cmd_args {
	const bson_t *body;        /* the body indexed (NULL: not yet) */
	const uint8_t *data;       /* its bytes and length when indexed */
	uint32_t len;
	int n;                     /* -1: more than CMD_ARGS_MAX fields: search with libbson */
	uint64_t present;          /* a bit per field (args.c: key_bit): absent fields cost one test */
	struct {
		const char *key;       /* points into data */
		uint32_t keylen;
		uint32_t off;
	} f[CMD_ARGS_MAX];
} cmd_args_t;

typedef struct cmd {
	engine_t *engine;
	client_t *client;
	const char *db;            /* target database ($db) */
	const bson_t *body;        /* the whole command document */
	const char *name;          /* the command name as sent (first key) */
	bson_iter_t first;         /* iterator on the first element (the command's argument) */
	int64_t deadline_us;       /* absolute monotonic deadline from maxTimeMS, 0 = none */
	tm_opctx_t op;             /* this command's operation (currentOp / killOp / the
	                            * interrupt check): begun and ended by the dispatcher */
	bool max_time_given;       /* the request named a non-null maxTimeMS */
	int64_t end_us;            /* the clock cmd_toolbelt_after read (0: not yet): the metrics reuse it */
	bson_t *reply;             /* handler appends its fields; ok is added by the dispatcher */
	cmd_args_t args;           /* args.c's field index; body must not change while in use */
	/* the session this command checked out (a txnNumber on a replica set:
	 * cmd_txn.c), what its txnNumber means (repl_txn_kind_t, 0 = none), and
	 * the client's own storage session while the transaction's stands in */
	struct repl_session *txn_session;
	int txn_kind;
	bool txn_autocommit;       /* autocommit: false was given (labels apply) */
	bool txn_swapped;
	bool txn_close_after;      /* onPrimaryTransactionalWrite closeConnection */
	bool txn_oplog_session;    /* the client's storage session carries the write's session info */
	bool txn_retryable_write;
	bool txn_row_written;      /* the write and its config.transactions row committed together */
	bool txn_replayed;         /* a retried write answered from its first reply: nothing to record */
	/* a retryable findAndModify's image (the document before or after it,
	 * unprojected; owned) and its kind, for config.image_collection */
	bson_t *txn_image;
	const char *txn_image_kind;
	uint64_t txn_snapshot_ts;  /* a snapshot read outside a transaction reads at it (0: none) */
	bool rc_majority_read;     /* ... because of readConcern majority (no atClusterTime in the reply) */
	struct storage_session *txn_saved_session;
	/* a retryable write: each statement's stmtId (bson_malloc'd, mongod's
	 * getStmtIdForWriteAt), and the retriedStmtIds of its reply (bson_new'd,
	 * NULL until a statement is answered from the session's history) */
	int32_t *txn_stmt_ids;
	int txn_nstmts;
	bson_t *txn_retried;
	int txn_nretried;
	bool txn_keep_reply;       /* kept whole: its statements are not tracked one by one */
	/* a bulkWrite kept whole: every op's result (its cursor may give only
	 * the first batch), owned; cmd_txn.c keeps them with the reply */
	bson_t *txn_kept_results;
} cmd_t;

typedef int (*cmd_handler_fn)(cmd_t *c, terr_t *err);

enum {
	CMDF_NONE = 0,
	CMDF_ADMIN_ONLY = 1 << 0,     /* must run against the admin database */
	CMDF_NO_AUTH = 1 << 1,        /* allowed before authentication (hello, saslStart, ...) */
	CMDF_WRITE = 1 << 2,          /* counts as a write for opcounters */
	CMDF_MAXTIME = 1 << 3,        /* honours maxTimeMS */
	CMDF_TEST = 1 << 4,           /* a test command: absent (59) without enableTestCommands */
};

/* One row of the command table (commands/command_table.c). */
typedef struct cmd_def {
	const char *name;
	const char *alias;          /* e.g. "isMaster" for "hello", or NULL */
	cmd_handler_fn handler;
	unsigned flags;
	const char *help;
} cmd_def_t;

/* The table and a lookup (case-sensitive, then the lowercase alias rule
 * mongod applies to a few legacy names). */
const cmd_def_t *cmd_lookup(const char *name);
const cmd_def_t *cmd_table(int *n);

/* True once the command must stop: its deadline has passed (50
 * MaxTimeMSExpired "operation exceeded time limit") or killOp marked it
 * (11601 "operation was interrupted"); err set.  Reads the clock now
 * (tm_interrupt_check_now); loops use tm_interrupt_check. */
bool cmd_check_deadline(const cmd_t *c, terr_t *err);

/* Monotonic clock in microseconds. */
int64_t cmd_now_us(void);

#endif
