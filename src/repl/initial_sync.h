/*
 * initial_sync.h -- bring a member of a set of several machines (issue 24) to
 * a point of the set's log it does not hold locally: after Raft installed
 * the leader's snapshot on it (it was wiped, new, or fell behind the log the
 * leader keeps), or after a restart whose own snapshot is ahead of its
 * durable oplog.  The Raft snapshot is only the optime (ts, t) of its last
 * entry (the data is in WiredTiger), so the data comes from another member
 * (the source: the Raft leader) over the wire protocol, without stopping it:
 *
 *   - catch-up: when the source's oplog still holds this member's newest
 *     entry (same ts and term), the entries after it are fetched
 *     (find + getMore on local.oplog.rs) and applied in order, as the
 *     applier applies Raft's (repl/oplog_apply.h); when it does not (a
 *     deposed primary's own entries), the newest of this member's last
 *     COMMON_SCAN entries that the source holds is the common point: the
 *     entries after it are rolled back (repl/rollback.h, files saved) and
 *     the catch-up goes on from there;
 *   - otherwise a full copy, as mongod's logical initial sync: the source's
 *     newest oplog entry is noted (the begin point), every local database
 *     but `local` and the local oplog are dropped, every collection of every
 *     database of the source is created with its options and indexes and its
 *     documents copied (find + getMore, batches written in one transaction
 *     each, unobserved), then the source's oplog from the begin point is
 *     applied up to its newest entry at the end of the copy (minValid: until
 *     then an update of a missing document is skipped, the copy being newer
 *     than the entry) and at least to the target.
 * The entries are written to the local oplog with their own ts, so the
 * member then goes on with Raft's entries after the target (those it already
 * fetched are skipped as present).
 *
 * Not copied: views (the catalog's view definitions), time-series
 * collections: logged, skipped.
 */
#ifndef TAMGA_REPL_INITIAL_SYNC_H
#define TAMGA_REPL_INITIAL_SYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/oplog.h"

typedef struct repl_isync_args {
	storage_t *st;
	repl_oplog_t *oplog;
	storage_session_t *s;         /* no transaction open */
	const char *source;           /* "host:port" */
	repl_ts_t target;             /* the set's log up to this entry (its ts) */
	bool copy;                    /* a full copy even when a catch-up would do */
	/* rollback files go under it when this member's newest entries are
	 * another branch of history (NULL: copy instead) */
	const char *dbpath;
	/* polled between batches: true stops the sync (91 ShutdownInProgress) */
	bool (*stopping)(void *arg);
	void *stopping_arg;
} repl_isync_args_t;

typedef struct repl_isync_stats {
	bool copied;                  /* a full copy (else a catch-up) */
	int64_t collections, documents, entries;
	repl_ts_t min_valid;          /* the source's newest entry at the copy's end */
	repl_ts_t reached;            /* the newest local entry afterwards */
} repl_isync_stats_t;

/*
 * Bring this member to a->target (see above).  0 with *out, or -1 with
 * err: 6 HostUnreachable when the source did not answer or refused with a
 * transient code (repl_member_rpc_transient: try again later, with the
 * leader of then), 1 for another refusal, storage's errors, 91 when
 * stopped.
 * A failed full copy leaves the member's data partial: the caller tries
 * again (the copy starts by dropping everything).
 */
int repl_initial_sync(const repl_isync_args_t *a, repl_isync_stats_t *out, terr_t *err);

#endif
