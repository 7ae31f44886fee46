/*
 * session.h -- logical sessions: the session cache and the session catalog.
 *
 * mongod keeps two structures for sessions and so does this module:
 * - the logical session cache (LogicalSessionCache): every session a client
 *   names (a command's lsid, startSession) with its owner's uid and last use;
 *   endSessions / killSessions drop them, logicalSessionTimeoutMinutes of
 *   disuse expire them (what $listLocalSessions lists, what the reaper
 *   writes to config.system.sessions);
 * - the session catalog (SessionCatalog): the runtime state of a session that
 *   ran a command with a txnNumber: its transaction (repl/txn.h) or retryable
 *   write record (repl/retryable.h).  A command checks the session out for its
 *   whole duration; a second command naming the same session waits until it
 *   is checked in again, so drivers may send a transaction's statements over
 *   different pooled connections and they still run one at a time.
 *
 * One registry per open engine (repl_sessions_new); it is thread-safe.  What it
 * does not do: parse commands (commands/cmd_session.c, cmd_txn.c) or decide
 * what a transaction may run (repl/txn.h).
 */
#ifndef TAMGA_REPL_SESSION_H
#define TAMGA_REPL_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

/* mongod's default logicalSessionTimeoutMinutes (localLogicalSessionTimeoutMinutes). */
#define REPL_SESSION_TIMEOUT_MINUTES 30
/* the most sessions the cache holds (mongod's maxSessions default is 1e6; the
 * cache refuses nothing past it, it just stops recording) */
#define REPL_SESSION_CACHE_MAX 100000

typedef struct repl_sessions repl_sessions_t;
typedef struct repl_session repl_session_t;

/* A new, empty registry for storage st (borrowed; it must outlive the
 * registry).  The caller owns it until repl_sessions_free, which aborts every
 * open transaction and gives their storage sessions back to st's pool.  No
 * session may be checked out then. */
repl_sessions_t *repl_sessions_new(storage_t *st);
void repl_sessions_free(repl_sessions_t *ss);
storage_t *repl_sessions_storage(repl_sessions_t *ss);

/* The 16-byte UUID of an lsid document {id: UUID} (a view into the document),
 * or false when lsid is not one. */
bool repl_lsid_id(const bson_iter_t *lsid, const uint8_t **id);

/* mongod's uid of a user "name@db" (NULL: nobody): SHA-256 of the name, of ""
 * without one (32 bytes written). */
void repl_session_uid(const char *user, uint8_t uid[32]);

/* Bumped whenever a session leaves the cache (ended, killed, expired): a
 * caller that skips touching a session it touched a moment ago must touch it
 * again once this moved. */
uint64_t repl_sessions_generation(repl_sessions_t *ss);

/* Record that session id was used now by user ("name@db" or NULL; copied). */
void repl_sessions_touch(repl_sessions_t *ss, const uint8_t *id, const char *user);

/* endSessions / killSessions: the session leaves the cache; its open
 * transaction (if any) is aborted now when the session is not checked out,
 * else by the command holding it when it checks the session in.  Its
 * retryable-write history stays (as on mongod, config.transactions keeps it). */
void repl_sessions_end(repl_sessions_t *ss, const uint8_t *id);
/* killAllSessions / killAllSessionsByPattern: every session whose uid is one
 * of uids (nuids of 32 bytes each), all of them when uids is NULL, is killed as
 * repl_sessions_end does.  Returns how many were. */
int repl_sessions_kill_matching(repl_sessions_t *ss, const uint8_t *uids, int nuids);

/* Append to out (an array being built) one {_id: {id, uid}, lastUse, user?}
 * per cached session whose uid is among uids (nuids of 32 bytes), of every
 * session when all.  Expired sessions are dropped first. */
void repl_sessions_list(repl_sessions_t *ss, bool all, const uint8_t *uids, int nuids, bson_t *out);
/* Sessions in the cache now (after expiry). */
int repl_sessions_count(repl_sessions_t *ss);

/*
 * The logical session cache's refresh (mongod's LogicalSessionCache::refresh,
 * every logicalSessionRefreshMillis and on refreshLogicalSessionCacheNow):
 * config.system.sessions is created when missing with its TTL index
 * {lastUse: 1} named "lsidTTLIndex" (expireAfterSeconds =
 * REPL_SESSION_TIMEOUT_MINUTES * 60, so the TTL monitor removes what nobody
 * used for the timeout), every cached session's row {_id: {id, uid},
 * lastUse[, user: {name}]} is written, and the rows of the sessions ended
 * since the last refresh are removed.  s is a storage session with no
 * transaction open.  Returns 0 or -1 with err (the next refresh tries again).
 */
int repl_sessions_refresh(repl_sessions_t *ss, storage_session_t *s, terr_t *err);

/*
 * Check session id out of the catalog for one command (creating its entry).
 * Waits while another command holds it, until deadline_us (monotonic, 0 = no
 * limit): then 50 MaxTimeMSExpired "operation exceeded time limit".  On
 * success *out is the session, owned by the caller until repl_session_checkin.
 */
int repl_session_checkout(repl_sessions_t *ss, const uint8_t *id, int64_t deadline_us,
                          repl_session_t **out, terr_t *err);
void repl_session_checkin(repl_session_t *s);

/* The session's id (16 bytes) and its printed form as mongod shows an lsid
 * in messages: "{ id: UUID(\"...\"), uid: BinData(0, ...) }" (into buf). */
const uint8_t *repl_session_id(const repl_session_t *s);
/* The session's full logical session id as mongod's LogicalSessionId
 * serializes it, {id: UUID, uid: BinData(0, 32 bytes)}: uid is the
 * SHA-256 of its user's "name@db" (the user who last named it,
 * repl_sessions_touch), of "" without one.  What the oplog entries of its
 * retryable writes and transactions carry as `lsid`, and the _id of its
 * config.transactions row.  repl_session_lsid initializes out (the caller
 * destroys it); repl_session_append_lsid appends it to doc under key. */
void repl_session_lsid(const repl_session_t *s, bson_t *out);
void repl_session_append_lsid(bson_t *doc, const char *key, const repl_session_t *s);
/* The uid above (32 bytes copied). */
void repl_session_owner_uid(const repl_session_t *s, uint8_t uid[32]);
/* A session no client has named since it entered the registry (one read
 * back from its config.transactions row at step-up) takes the row's uid;
 * a session a client named keeps its user's.  uid: 32 bytes. */
void repl_session_adopt_uid(repl_session_t *s, const uint8_t uid[32]);
/* The registry s belongs to. */
repl_sessions_t *repl_session_registry(repl_session_t *s);
const char *repl_session_describe(const repl_session_t *s, char buf[160]);

/* The transaction / retryable-write state of a checked-out session
 * (repl/txn.c); the catalog only keeps it. */
struct repl_txn_state;
struct repl_txn_state *repl_session_txn(repl_session_t *s);

/* Visit every catalog entry that is not checked out, under the catalog's lock
 * (the transaction reaper): fn may change the entry's transaction state but
 * must not call back into the registry. */
typedef void (*repl_session_visit_fn)(repl_session_t *s, void *arg);
void repl_sessions_visit_idle(repl_sessions_t *ss, repl_session_visit_fn fn, void *arg);

/* Wall clock in milliseconds (lastUse, expiry). */
int64_t repl_now_ms(void);
/* Deadlines use tm_now_us (common/opctx.h), the one monotonic clock. */

#endif
