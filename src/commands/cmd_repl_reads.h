/*
 * cmd_repl_reads.h -- read concerns in a replica set of several members
 * (issue 24; cmd_repl_reads.c), on the Raft member's commit point
 * (repl/raft_member.h):
 *   - readConcern "majority": find, aggregate ($out / $merge: their reads),
 *     distinct and count read at the majority commit point -- the ts of the
 *     newest Raft-committed entry this member knows of (on a secondary, the
 *     commit point it learned from the leader), never past what it applied;
 *   - readConcern "linearizable" on the primary: after the read, a no-op
 *     {msg: "linearizable read"} confirmed by a majority, as mongod;
 *   - afterClusterTime / afterOpTime: wait until this member applied the
 *     time (majority: until its commit point reached it).
 * Every call is a no-op (0 / false) for a standalone and a single-member set.
 */
#ifndef TAMGA_COMMANDS_CMD_REPL_READS_H
#define TAMGA_COMMANDS_CMD_REPL_READS_H

#include "commands/commands_private.h"
#include "commands/concern.h"

/*
 * Before the handler (cmd_repl.c's concerns, after the parse and checks):
 * linearizable's checks (9 FailedToParse with afterOpTime, 10107 "cannot
 * satisfy linearizable read concern on non-primary node"), then the wait
 * for afterClusterTime / afterOpTime, bounded by maxTimeMS (50) and
 * shutdown (11600).  *linearizable tells the caller to call
 * cmd_repl_reads_linearize after the handler.  0, or -1 with err.
 */
int cmd_repl_reads_before(cmd_t *c, const concern_read_t *rc, bool *linearizable, terr_t *err);

/*
 * readConcern "majority" of a read command in a set of several members:
 * *at gets the timestamp to read at (the commit point, at most this
 * member's applied point) and true is returned; false when the command
 * reads as before (no such set, another level, a command not listed
 * above).  Errors (true with err set): 134 ReadConcernMajorityNotAvailableYet
 * before this member learned any commit point.
 */
bool cmd_repl_reads_majority_at(cmd_t *c, uint64_t *at, terr_t *err);

/*
 * After a linearizable read that succeeded: write the no-op and wait for
 * its majority commit (maxTimeMS bounds the wait).  Errors: 10107 "No
 * longer primary when waiting for linearizable read concern", 50
 * MaxTimeMSExpired when maxTimeMS passed, 11602 when this
 * member lost the leadership meanwhile.
 */
int cmd_repl_reads_linearize(cmd_t *c, terr_t *err);

/* A majority read's cursor keeps this as its read timestamp: each getMore
 * reads at the commit point of its own time, as mongod's committed
 * snapshot (cmd_repl_reads_majority_now). */
#define CMD_READ_TS_MAJORITY UINT64_MAX
/* The commit point a getMore of such a cursor reads at (0: not a set of
 * several members any more: read the latest). */
uint64_t cmd_repl_reads_majority_now(engine_t *e);

/* hello's lastWrite.majorityOpTime in a set of several members: the
 * commit point; false (nothing set) otherwise. */
bool cmd_repl_reads_majority_optime(engine_t *e, uint32_t *secs, uint32_t *inc);

#endif
