/*
 * member_rejoin.h -- the primary of a set of several members hands the
 * set's configuration to a member that lost it (its data folder wiped, or
 * a new machine on a member's host), as mongod's heartbeats carry the
 * configuration to a member that has none.
 *
 * A thread of the primary looks every REPL_REJOIN_PERIOD_MS at the members
 * Raft has not heard from (repl/raft_member.h's view); to each it sends
 * Tamga's internal `_tamgaReplSetJoin` with the stored configuration, its
 * own Raft term and, once the member answered the dry run, its Raft log's
 * last index (the member lost its vote memory and its log with its data: it
 * votes only past that term and once its log reaches that index,
 * repl/raft_vote_floor.h), first as a dry run: a member that already holds
 * a configuration answers 23
 * AlreadyInitialized (it is only unreachable at Raft's port: a partition,
 * a pause) and is left alone; one that has none stores it, creates its
 * oplog and starts Raft, and Raft brings it the set's log or, when the
 * leader's log no longer reaches back, its snapshot, from which the member
 * copies the data (repl/initial_sync.h).
 */
#ifndef TAMGA_REPL_MEMBER_REJOIN_H
#define TAMGA_REPL_MEMBER_REJOIN_H

#include <stdbool.h>

#include "common/error.h"
#include "repl/raft_member.h"
#include "repl/replset.h"

#define REPL_REJOIN_PERIOD_MS 2000

typedef struct repl_rejoin repl_rejoin_t;

/* Start the thread (NULL when it could not start: logged). */
repl_rejoin_t *repl_rejoin_start(repl_member_t *m, repl_set_t *rs);
/* Stop and free (NULL is fine); before m stops. */
void repl_rejoin_stop(repl_rejoin_t *r);

/*
 * A removed member added again (commands/cmd_repl_member.c) starts Raft
 * anew under the _id the new configuration gives it (its Raft id is the
 * _id + 1, and mongosh's rs.add() picks a new _id): its Raft folder is
 * emptied first, but for canonical/raft's metadata files (`metadata1`,
 * `metadata2`: the term and the vote) and the vote floor of a wiped member
 * (raft_vote_floor.h), so the member never votes twice in a term it voted
 * in.  Its data and oplog stay; the leader sends it the
 * set's log from its first entry, or its snapshot (the applier skips what
 * the oplog holds).  true when the file named name is kept.
 */
bool repl_rejoin_raft_file_kept(const char *name);
/* Remove every file of dir but those kept (above); 0, or -1 with err. */
int repl_rejoin_reset_raft_dir(const char *dir, terr_t *err);
/*
 * A one-member set moved onto Raft (its log starts at the move, without
 * the data written before it) marks its Raft folder until the log was
 * compacted to a snapshot before a member is added: a file the folder
 * keeps (repl_rejoin_raft_file_kept; it is no Raft log).  pending true
 * creates it (the folder too), false removes it; 0, or -1 with err.
 */
#define REPL_REJOIN_COMPACT_FILE "tamga-compact-first"
int repl_rejoin_set_compact_pending(const char *dir, bool pending, terr_t *err);
bool repl_rejoin_compact_pending(const char *dir);
/* Remove every file of dir, the kept ones too (a one-member set moved onto
 * Raft: nothing in the folder is of its set); 0, or -1 with err (may be
 * NULL). */
int repl_rejoin_clear_raft_dir(const char *dir, terr_t *err);
/* Whether dir holds a Raft log or snapshot (a file other than the kept
 * metadata): the node ran on Raft and its set's history is there. */
bool repl_rejoin_raft_dir_has_log(const char *dir);

#endif
