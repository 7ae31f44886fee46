/*
 * member_rejoin.h -- the primary of a set of several members hands the
 * set's configuration to a member that lost it (its data folder wiped, or
 * a new machine on a member's host), as mongod's heartbeats carry the
 * configuration to a member that has none.
 *
 * A thread of the primary looks every REPL_REJOIN_PERIOD_MS at the members
 * Raft has not heard from (repl/raft_member.h's view); to each it sends
 * Tamga's internal `_tamgaReplSetJoin` with the stored configuration, first
 * as a dry run: a member that already holds a configuration answers 23
 * AlreadyInitialized (it is only unreachable at Raft's port: a partition,
 * a pause) and is left alone; one that has none stores it, creates its
 * oplog and starts Raft, and Raft brings it the set's log or, when the
 * leader's log no longer reaches back, its snapshot, from which the member
 * copies the data (repl/initial_sync.h).
 */
#ifndef TAMGA_REPL_MEMBER_REJOIN_H
#define TAMGA_REPL_MEMBER_REJOIN_H

#include "repl/raft_member.h"
#include "repl/replset.h"

#define REPL_REJOIN_PERIOD_MS 2000

typedef struct repl_rejoin repl_rejoin_t;

/* Start the thread (NULL when it could not start: logged). */
repl_rejoin_t *repl_rejoin_start(repl_member_t *m, repl_set_t *rs);
/* Stop and free (NULL is fine); before m stops. */
void repl_rejoin_stop(repl_rejoin_t *r);

#endif
