/*
 * member_rpc.h -- one command sent to another member over the MongoDB wire
 * protocol (OP_MSG over TCP, with TLS when the member connects out with
 * TLS: member_tls.h), for what members tell each other outside
 * Raft: the initiating node's quorum check and configuration hand-over
 * (commands/cmd_repl.c's `_tamgaReplSetJoin`), rollback's refetch,
 * initial sync, the rejoin, w: N's hello.  Blocking, bounded by a timeout.
 * With a keyFile (auth/auth_member.h) every connection first authenticates
 * as `__system@local` (SCRAM-SHA-256 with the key, as mongod's internal
 * authentication) and checks the peer's proof that it holds the key too.
 * The TLS handshake comes first (the peer's certificate and host name
 * checked), then the keyFile authentication, then the command.
 *
 * Also the members' channel state both channels share (this file and
 * raft_auth.c, raft_tls.c): each peer's last authentication (or TLS) failure (rs.status()'s lastHeartbeatMessage).
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

/* The same, and *rtt_us (when not NULL, on success) gets the command's own
 * round trip on the connection once it is open and authenticated. */
int repl_member_rpc_timed(const char *host, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                          int64_t *rtt_us, terr_t *err);

/*
 * A kept connection to one member (what mongod's heartbeats use: its
 * pooled connections), opened and authenticated as repl_member_rpc's on
 * the first call and after a failure.  repl_member_conn_call: one command
 * on it, as repl_member_rpc_timed (*rtt_us the command's round trip, the
 * connect and handshake not counted); a failed call closes it (the next
 * one reconnects).  One thread at a time per connection; _free closes
 * and frees (NULL is fine), _reset closes only.
 */
typedef struct repl_member_conn repl_member_conn_t;
repl_member_conn_t *repl_member_conn_new(const char *host);
int repl_member_conn_call(repl_member_conn_t *k, const char *db, const bson_t *cmd, int timeout_ms, bson_t *reply,
                          int64_t *rtt_us, terr_t *err);
void repl_member_conn_reset(repl_member_conn_t *k);
void repl_member_conn_free(repl_member_conn_t *k);

/*
 * Note how authenticating with host ("name:port", its wire-protocol
 * address) went: reason NULL clears a failure (it authenticated), else
 * the failure is kept with the time (the reason is logged once per run of
 * failures, not kept).  Thread-safe.
 */
void repl_member_auth_note(const char *host, const char *reason);
/* Whether the last authentication with host failed (and nothing has
 * succeeded since). */
bool repl_member_auth_failed(const char *host);
/* The same for a TLS handshake that failed (reason: OpenSSL's, shown as
 * is by rs.status(); NULL clears). */
void repl_member_tls_note(const char *host, const char *reason);
/* The failure rs.status() shows for host ("Authentication failed." or the
 * TLS reason) into buf; false when its channels are fine. */
bool repl_member_failure_message(const char *host, char *buf, size_t len);

/* Whether a member's refusal (its reply's code) may go away by itself or
 * with another leader: mongod's NotPrimary, shutdown and network
 * categories (another try later), as opposed to one that will not change. */
bool repl_member_rpc_transient(int64_t code);

#endif
