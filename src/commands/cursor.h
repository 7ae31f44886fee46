/*
 * cursor.h -- the cursor registry and batch building shared by find,
 * aggregate, listCollections, listIndexes and getMore.
 *
 * A cursor is a source of documents (a producer with next/save/restore/free
 * callbacks) plus its identity: id, namespace, owner, last use.  The registry
 * is engine-wide, because drivers send a getMore on whichever pooled
 * connection is free.  Idle cursors are reaped after 10 minutes unless
 * noCursorTimeout.  Between batches a cursor holds no storage resources
 * (save/restore), so it pins no WiredTiger snapshot.
 */
#ifndef TAMGA_COMMANDS_CURSOR_H
#define TAMGA_COMMANDS_CURSOR_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/doc_sink.h"
#include "common/error.h"
#include "storage/storage.h"

typedef struct cursor_registry cursor_registry_t;

/* The producer behind a cursor.  next returns 1 with a document in *doc (a
 * view valid until the next call), 0 at the end, -1 with err.  save releases
 * storage resources; restore re-acquires them on the given session. free
 * releases everything (after save or at any time). */
typedef struct cursor_source {
	void *state;
	int (*next)(void *state, storage_session_t *s, bson_t *doc, terr_t *err);
	int (*save)(void *state, terr_t *err);
	int (*restore)(void *state, storage_session_t *s, terr_t *err);
	void (*free)(void *state);
	/* Optional (change streams): batch_end appends fields to the batch's
	 * cursor document before id and ns (postBatchResumeToken); ended: the
	 * source returned 0 in this batch; pending: a document read for it did
	 * not fit and waits for the next.  finished: a tailable source ended
	 * for good (the cursor then closes at its end). */
	void (*batch_end)(void *state, bool ended, bool pending, bson_t *cursor);
	bool (*finished)(void *state);
	/* Optional, the fast lane of a batch (a find's plan): the documents
	 * next would give, handed to sink->take one after another in one call
	 * (common/doc_sink.h: each lent only during take, which copies it into
	 * the batch) until take answers DOC_SINK_FULL or DOC_SINK_FAILED
	 * (returned as they are), the source ends (0), or it fails (-1 with
	 * err).  Used instead of next when set and batch_end is not. */
	int (*next_batch)(void *state, storage_session_t *s, doc_sink_t *sink, terr_t *err);
} cursor_source_t;

cursor_registry_t *cursor_registry_new(void);
void cursor_registry_free(cursor_registry_t *r);

/*
 * Fill `firstBatch` (or nextBatch) from src and finish the reply's cursor
 * sub-document: {cursor: {firstBatch|nextBatch: [...], id, ns}}.
 *   batch_size: -1 = the default (101 for a first batch), 0 = an empty
 *               first batch, n = up to n; always capped at 16 MiB.  For
 *               getMore, <= 0 means no count limit.
 *   single_batch: close after this batch.
 *   limit: total documents the cursor may return (0 = none), counted across
 *          batches.
 * When src is not exhausted and not single_batch, the cursor is registered
 * (taking ownership of src) and its id written; otherwise src is freed and
 * the id is 0.  On error src is freed and err set.
 */
/*
 * The whole first batch of a read that returns at most one document and
 * keeps no cursor (find's express path): {cursor: {firstBatch: [doc], id:
 * 0, ns}} appended to reply (doc NULL: an empty batch), and the batch noted
 * for the operation's readers, as cursor_first_batch does.  doc is copied.
 */
void cursor_reply_one(bson_t *reply, const char *ns, const bson_t *doc);

typedef struct cursor_opts {
	int64_t batch_size;
	bool single_batch;
	int64_t limit;
	bool no_timeout;
	/* tailable: reaching the end of src does not close the cursor (a
	 * tailable cursor on a capped collection: src must be a tailable plan,
	 * see plan_request_t.tailable); await_data: a getMore that finds
	 * nothing new waits for an insert into coll (below).  coll: the
	 * collection read, for the insert notifier; a reference is taken when
	 * the cursor is registered.  Required with await_data.  (find keeps no
	 * tailable cursor on an empty collection, as mongod: it passes
	 * single_batch then.) */
	bool tailable;
	bool await_data;
	storage_coll_t *coll;
	int64_t connection_id;
	const char *owner;     /* authenticated user name or NULL */
	/* A snapshot read's timestamp (readConcern snapshot outside a
	 * transaction, 0 = none): its getMores read at it too
	 * (cursor_read_ts). */
	uint64_t read_ts;
} cursor_opts_t;

int cursor_first_batch(cursor_registry_t *r, storage_session_t *s, const char *ns,
                       cursor_source_t *src, const cursor_opts_t *opts,
                       bson_t *reply, terr_t *err);

/* getMore: continue cursor id on namespace ns.
 *   deadline_us: the request's maxTimeMS deadline (0 = none); has_max_time:
 *   maxTimeMS was given.  For an awaitData cursor maxTimeMS is not a time
 *   limit but how long a getMore that finds nothing new waits for an insert
 *   into the collection (storage_coll_wait_insert: woken by the commit, no
 *   polling; 1 second when absent, as mongod); after that it answers an
 *   empty batch and the cursor stays open.  maxTimeMS on any other cursor
 *   is 2 BadValue "cannot set maxTimeMS on getMore command for a
 *   non-awaitData cursor" (the cursor stays).  A tailable cursor stays
 *   open at the end of the data, and dies with 136 CappedPositionLost
 *   when capping deleted its position.
 * Errors: 43 CursorNotFound
 * "cursor id <id> not found", 13 Unauthorized when ns does not match
 * ("Requested getMore on namespace '<ns>', but cursor belongs to a different
 * namespace <ns2>"), 13 "cursor id <id> was not created by the authenticated
 * user" when owner (the caller's "user@db", NULL without auth) differs from
 * the one recorded when the cursor was made.  The operation's deadline
 * (common/opctx.h) is, for a cursor that is not awaitData, the cursor's
 * leftover time: the originating command's maxTimeMS less what its batches
 * used. */
int cursor_get_more(cursor_registry_t *r, storage_session_t *s, int64_t id, const char *ns,
                    const char *owner, int64_t batch_size, int64_t deadline_us, bool has_max_time,
                    bson_t *reply, terr_t *err);

/* A change stream's error gets mongod's label: ResumableChangeStreamError
 * for the errors a driver resumes after (retriable, network, retargeting,
 * RetryChangeStream, FailedToSatisfyReadPreference), NonResumableChangeStreamError
 * for 280 ChangeStreamFatalError; labels already there stay.  getMore on a
 * change stream's cursor (a source with batch_end) calls it; so does the
 * aggregate that opens one.  The fail point failGetMoreAfterCursorCheckout
 * makes a getMore fail with its data.errorCode after it took the cursor. */
void cursor_change_stream_labels(terr_t *err);
/* The read timestamp cursor id was opened at (cursor_opts_t.read_ts), 0
 * when none or no such cursor.  getMore begins its storage transaction at
 * it, so a snapshot read's later batches see the same data as its first. */
uint64_t cursor_read_ts(cursor_registry_t *r, int64_t id);

/* A connection closed: the change streams it opened that no getMore is
 * using are freed (their reader and oplog cursor; a driver resumes after
 * 43 CursorNotFound).  Other cursors stay until killCursors or the idle
 * timeout, as on mongod. */
void cursor_close_connection(cursor_registry_t *r, int64_t connection_id);

/* killCursors: appends cursorsKilled/NotFound/Alive/Unknown arrays.  A
 * cursor in use by a getMore is alive, except an awaitData cursor: it is
 * killed (listed so), its waiting getMore fails with 237 CursorKilled
 * "operation was interrupted" and frees it. */
void cursor_kill(cursor_registry_t *r, const char *ns, const int64_t *ids, int n, bson_t *reply);

/* Shutdown: every awaitData getMore waiting for inserts, now or later,
 * ends with 11600 InterruptedAtShutdown "interrupted at shutdown" instead of
 * waiting out its maxTimeMS (the server waits for its connections). */
void cursor_registry_shutdown(cursor_registry_t *r);

/* Reap cursors idle longer than timeout_ms (called periodically). */
int cursor_reap(cursor_registry_t *r, int64_t timeout_ms);
int cursor_count(cursor_registry_t *r);

#endif
