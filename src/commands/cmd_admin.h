/*
 * cmd_admin.h -- what the handshake and admin commands (cmd_admin.c) need
 * from the process hosting them, and the one engine service the server
 * drives on a timer.
 *
 * The handlers themselves are rows of the command table; this header is for
 * tamgad (tools/) and the wire server (server/), which tell the command
 * layer about the process: its command line, its connection limit.  An
 * embedded caller never sets any of it and gets sensible defaults
 * (no argv, unlimited connections).
 */
#ifndef TAMGA_COMMANDS_CMD_ADMIN_H
#define TAMGA_COMMANDS_CMD_ADMIN_H

#include <stdint.h>
#include <bson/bson.h>

#include "commands/commands.h"

typedef struct cmd_admin_process {
	int argc;
	const char *const *argv;     /* the process's arguments, for getCmdLineOpts */
	const bson_t *parsed;        /* mongod-style parsed options ({net: {...}, storage: {...}}) */
	int64_t max_conns;           /* for serverStatus.connections.available; 0 = unlimited */
} cmd_admin_process_t;

/* Record the process description (deep-copied; call once at startup, before
 * connections are served; calling again replaces it). */
void cmd_admin_set_process(const cmd_admin_process_t *p);
/* Free what cmd_admin_set_process copied (at exit; optional). */
void cmd_admin_clear_process(void);

/*
 * --setParameter name=value (and the YAML file's setParameter: map): params
 * is {name: "<value as text>"}, applied in order to the engine's held
 * parameters (the getParameter / setParameter table) as mongod's
 * setFromString reads them.  Errors, each 2 BadValue with mongod's text:
 * "Illegal --setParameter parameter: "<name>"", "Cannot use --setParameter
 * to set "<name>" at startup", "Bad value for parameter "<name>": ...";
 * 238 for a parameter Tamga reports but holds fixed.  Call once after
 * engine_open, before serving.
 */
int cmd_admin_startup_parameters(engine_t *e, const bson_t *params, terr_t *err);

/* Reap the engine's cursors idle for longer than timeout_ms; returns how
 * many were closed.  The server calls this every few seconds. */
int cmd_admin_reap_cursors(engine_t *e, int64_t timeout_ms);

/* Ask the engine to stop (what the shutdown command does); the server
 * polls engine_shutdown_requested(). */
void cmd_admin_request_shutdown(engine_t *e);

/*
 * The logical session cache (mongod's LogicalSessionCache, local part):
 * every session a client names (a command's lsid, startSession) with its
 * owner and last use; endSessions/killSessions drop them, 30 minutes of
 * disuse expire them.  It is process-wide, as on mongod.
 *
 * touch records a command's lsid for the client's authenticated user; the
 * wire server calls it for each command it dispatches that carries one.
 * lsid is an iterator on the command's top-level `lsid` element (the wire
 * parser notes where it is, so the command is not searched again); one
 * that is not {id: UUID} is ignored here (the command's own checks see it).
 */
void cmd_admin_session_touch(client_t *cl, const bson_iter_t *lsid);

/*
 * $listLocalSessions: append to out (an array being built, initialised by
 * the caller) one {_id: {id, uid}, lastUse, user?} per cached session of
 * the requested users: spec {} is the client's own user, {allUsers: true}
 * everyone, {users: [{user, db}...]} those.  spec was checked by the stage.
 */
void cmd_admin_sessions_list(client_t *cl, const bson_t *spec, bson_t *out);

#endif
