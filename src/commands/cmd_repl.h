/*
 * cmd_repl.h -- what the dispatcher (engine.c) and hello (cmd_admin.c) ask
 * of the replica-set commands module (cmd_repl.c): opening the replica-set
 * state with the engine, the checks every command goes through before it
 * runs (failCommand, the primary / secondary gate, gossiped $clusterTime,
 * read and write concern) and what every reply gets after it ran
 * (writeConcernError, $clusterTime, operationTime).
 */
#ifndef TAMGA_COMMANDS_CMD_REPL_H
#define TAMGA_COMMANDS_CMD_REPL_H

#include "commands/commands_private.h"
#include "commands/concern.h"

/* engine_open / engine_close: the replica-set state when
 * opts.repl_set_name is set (e->rs), the cluster-time keys when auth is on.
 * Returns 0 or -1 with err (the stored state cannot be read). */
int cmd_repl_open(engine_t *e, const char *dbpath, terr_t *err);
void cmd_repl_close(engine_t *e);

/* What before hands to after for one command (on the dispatcher's stack;
 * cmd_repl_ctx_clear frees it). */
typedef struct cmd_repl_ctx {
	concern_write_t wc;
	bson_t *fail_wce;          /* failCommand's writeConcernError (bson_new), or NULL */
	bson_t *fail_labels;       /* failCommand's errorLabels array (bson_new), or NULL */
	bool tick_done;
	uint32_t op_secs, op_inc;  /* operationTime */
	bool tv_set;               /* the gate refused: its topologyVersion counter */
	uint64_t tv_counter;
	bool linearizable;         /* readConcern linearizable in a set of several members:
	                            * cmd_repl_reads_linearize after the handler */
	int64_t start_term;        /* the set's term when the command passed the gate (0: no set):
	                            * a write's wait refuses a newer term's entries */
} cmd_repl_ctx_t;
void cmd_repl_ctx_clear(cmd_repl_ctx_t *x);

/*
 * Before the handler (after the auth check): failCommand (error, closed
 * connection, block), the gate of a set member that is not primary (10107
 * "not primary" for writes, 13435 / 13436 for reads, as mongod), gossiped
 * $clusterTime (validated when auth is on), readConcern / writeConcern
 * parsing and checks, afterClusterTime.  0 to run the handler, -1 with err.
 * x must come zeroed (the dispatcher's is, from before its first check).
 */
int cmd_repl_before(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, terr_t *err);

/* After a handler that succeeded, before `ok`: writeConcernError
 * (failCommand's, or an unsatisfiable write concern in a set) and
 * failCommand's errorLabels. */
void cmd_repl_after(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, int rc, bson_t *reply);
/* Last, after `ok` (success or error reply; def may be NULL): in replica-set
 * mode once initiated, $clusterTime (signed when auth is on) and
 * operationTime (the write's optime, else the last applied one). */
void cmd_repl_times(cmd_t *c, const cmd_def_t *def, cmd_repl_ctx_t *x, int rc, bson_t *reply);

/* hello's replica-set fields (replica-set mode only): topologyVersion, hosts,
 * setName, setVersion, isWritablePrimary / ismaster, secondary, primary, me,
 * electionId, lastWrite; before initiation isreplicaset and info as mongod. */
void cmd_repl_hello_append(cmd_t *c, bool legacy);
/* The same fields into out (serverStatus's `repl` section). */
void cmd_repl_fields_append(engine_t *e, bson_t *out, bool legacy);
/* serverStatus().repl of a set member into out (an open document): hello's
 * set fields, rbid, userWriteBlockMode, as mongod 9.0 (cmd_repl.c). */
void cmd_repl_server_status_append(cmd_t *c, bson_t *out);
/* serverStatus().metrics.repl into out (an open document): the applier's
 * counters of this process, e's applier queue, state transitions, waiters
 * (cmd_repl.c lists what is left out). */
void cmd_repl_metrics_append(engine_t *e, bson_t *out);

/* serverStatus().metrics.repl.waiters: operations waiting now for their
 * write concern (or a linearizable read's majority: `replication`) or for
 * this member to reach an optime (afterClusterTime / afterOpTime:
 * `opTime`), as mongod's two waiter lists.  delta +1 before the wait, -1
 * after it, whatever ended it. */
typedef enum cmd_repl_waiter {
	CMD_REPL_WAITER_REPLICATION = 0,
	CMD_REPL_WAITER_OPTIME = 1,
} cmd_repl_waiter_t;
void cmd_repl_waiter_add(cmd_repl_waiter_t w, int delta);
/* Whether command name (as sent) takes readConcern level (a concern_level_t)
 * outside a transaction, as mongod's supportsReadConcern answers it; local
 * and snapshot (checked on their own) are always true here (cmd_repl.c). */
bool cmd_repl_rc_level_supported(const char *name, int level);
/* The topology counter hello reports (0 on a standalone). */
uint64_t cmd_repl_topology_counter(engine_t *e);
/* Awaitable hello in replica-set mode: wait until the topology counter moves
 * off `counter` or wait_ms passes (shutdown cuts it short). */
void cmd_repl_topology_wait(engine_t *e, uint64_t counter, int64_t wait_ms);

#endif
