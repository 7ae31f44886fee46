/*
 * member_recover.h -- what a member of a set on Raft (repl/raft_member.h)
 * does when its data is not where the set's log says: the two paths of its
 * applier thread, kept apart from the Raft member itself.
 *   - repl_recover_rollback: before the set's next entry, when this member
 *     holds entries after the set's previous one that the set never
 *     committed (a deposed primary's): ROLLBACK, repl/rollback.h; entries
 *     that cannot be undone (commands) make it copy the data again.
 *   - repl_recover_snapshot: a restored Raft snapshot whose entry the local
 *     oplog does not hold: STARTUP2, repl/initial_sync.h.
 * Both take their source from the host (the leader, or in turn another
 * member: one that is itself copying refuses), try again every ~500 ms
 * while none answers (HostUnreachable), and log mongod's summaries.
 */
#ifndef TAMGA_REPL_MEMBER_RECOVER_H
#define TAMGA_REPL_MEMBER_RECOVER_H

#include <stdbool.h>
#include <stddef.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/oplog.h"
#include "repl/replset.h"

/* What the member gives (arg is passed back to each call). */
typedef struct repl_recover_host {
	void *arg;
	storage_t *st;
	repl_oplog_t *oplog;
	const char *dbpath;           /* rollback files under <dbpath>/rollback */
	/* a source's "host:port" into buf: the leader, and at other calls the
	 * other members in turn (empty: none known); false when stopping */
	bool (*source)(void *arg, char *buf, size_t size);
	void (*nap)(void *arg);       /* wait before trying again (~500 ms) */
	/* ROLLBACK or STARTUP2 while working; 0 when done (SECONDARY) */
	void (*busy)(void *arg, repl_member_state_t st);
	bool (*stopping)(void *arg);
	/* the newest local entry is now ts (force: even when older) */
	void (*set_last)(void *arg, repl_ts_t ts, bool force);
	/* optional: a rollback by refetch is done and the member is short of
	 * this minValid (mongod's RECOVERING until it applied past it); called
	 * before busy(arg, 0) */
	void (*min_valid)(void *arg, repl_ts_t ts);
} repl_recover_host_t;

/*
 * Before the set's entry `next`, `common` being the set's previous one:
 * roll back this member's entries after common when the set's log does not
 * have them (see above); next_t: the term of the set's entry at next (-1:
 * not known), a local entry of another term at next is not the set's.  0 when there was nothing to undo or it is done
 * (*min_valid: the leader's optime at the refetch, for
 * repl_oplog_apply_set_min_valid; 0 when none), -1 with err.
 */
int repl_recover_rollback(const repl_recover_host_t *h, storage_session_t *s, repl_ts_t common, repl_ts_t next,
                          int64_t next_t,
                          repl_ts_t *min_valid, terr_t *err);

/*
 * The set's log up to the entry (ts, t) (t < 0: any term): nothing when the
 * local oplog holds it or begins after it (truncated, or refilled by a copy
 * from a later point), else a catch-up or a copy from the leader.  copy: a
 * full copy whatever the local oplog holds.  0, or -1 with err.
 */
int repl_recover_snapshot(const repl_recover_host_t *h, storage_session_t *s, repl_ts_t ts, int64_t t, bool copy,
                          terr_t *err);

/*
 * The ts of the oldest local oplog entry (0: none).  A set entry older than
 * it is covered by the data already (the oplog only loses its oldest
 * entries, to truncation or to a copy that made the data newer): the
 * applier skips such entries when Raft replays them.
 */
repl_ts_t repl_recover_oplog_floor(repl_oplog_t *op, storage_session_t *s);

/*
 * mongod's serverStatus().metrics.repl.initialSync, counted by
 * repl_recover_snapshot for this process: completed (copies or catch-ups
 * from the leader that reached the set's point), failedAttempts (attempts
 * that failed, not counting a source that did not answer, which is not an
 * attempt here), failures (initial syncs given up after the last attempt).
 */
typedef struct repl_isync_metrics {
	int64_t completed, failed_attempts, failures;
} repl_isync_metrics_t;
void repl_recover_isync_metrics(repl_isync_metrics_t *out);

#endif
