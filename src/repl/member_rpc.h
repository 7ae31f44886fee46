/*
 * member_rpc.h -- one command sent to another member over the MongoDB wire
 * protocol (OP_MSG, plain TCP), for what members tell each other outside
 * Raft: the initiating node's quorum check and configuration hand-over
 * (commands/cmd_repl.c's `_tamgaReplSetJoin`).  Blocking, bounded by a
 * timeout; no TLS, no authentication (a set under --auth / --keyFile is
 * refused at initiation until member authentication is built).
 */
#ifndef TAMGA_REPL_MEMBER_RPC_H
#define TAMGA_REPL_MEMBER_RPC_H

#include <bson/bson.h>

#include "common/error.h"

/*
 * Send cmd (with `$db` added) to host ("name:port") and read the reply
 * into *reply (initialised here on success; the caller destroys it).
 * 0 when a reply came (whatever its ok), -1 with err: 6 HostUnreachable
 * (connect, send, receive, or timeout_ms passed), 2 for a malformed reply.
 */
int repl_member_rpc(const char *host, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                    terr_t *err);

/* Whether a member's refusal (its reply's code) may go away by itself or
 * with another leader: mongod's NotPrimary, shutdown and network
 * categories (another try later), as opposed to one that will not change. */
bool repl_member_rpc_transient(int64_t code);

#endif
