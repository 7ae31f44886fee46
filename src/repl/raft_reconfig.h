/*
 * raft_reconfig.h -- membership changes of a replica set of several members
 * on canonical/raft's own (raft_add, raft_assign, raft_remove), run on the
 * member's loop thread (repl_member_on_loop) one at a time, each waited for
 * until Raft committed it.  What the changes are and whether they are
 * allowed is the commands layer's business (commands/cmd_repl_reconfig.c:
 * mongod's rules); this file only carries them out.
 *
 * Raft roles: a member with votes: 1 is a RAFT_VOTER, one with votes: 0 a
 * RAFT_STANDBY (it gets the log, never counts for a quorum nor votes).
 * raft_add makes a new server a spare; raft_assign then makes it a voter
 * (Raft first catches its log up, in rounds) or a standby.
 */
#ifndef TAMGA_REPL_RAFT_RECONFIG_H
#define TAMGA_REPL_RAFT_RECONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "repl/raft_member.h"

typedef enum repl_change_op {
	REPL_CHANGE_ADD,              /* raft_add, then raft_assign to the role */
	REPL_CHANGE_ASSIGN,           /* raft_assign to the role */
	REPL_CHANGE_REMOVE,           /* raft_remove */
} repl_change_op_t;

typedef struct repl_member_change {
	repl_change_op_t op;
	int64_t member_id;            /* the configuration's _id (Raft id = _id + 1) */
	char raft_addr[280];          /* ADD: the member's Raft address */
	bool voter;                   /* ADD / ASSIGN: voter, else standby */
} repl_member_change_t;

/*
 * Carry the n changes out in order on the leader m.  0 once each one is
 * committed; -1 with err: 10107 when m is not (or no longer) the leader,
 * 74 NodeNotFound when a new member's log could not be caught up by
 * deadline_us, 93 for a change Raft refused (its message).  A change that
 * timed out may still complete later (Raft keeps it going).  A change Raft's
 * configuration already holds (an ADD of the id at the same address, an
 * ASSIGN of the role it has: a reconfig retried after its raft_assign
 * failed) is done without a Raft entry.
 */
int repl_member_change_apply(repl_member_t *m, const repl_member_change_t *ch, int n, int64_t deadline_us,
                             terr_t *err);

/* Whether m's Raft configuration names the member of this _id (its Raft id
 * is the _id + 1) or this Raft address (whatever _id it ran under): 1 or 0
 * (1 too while a configuration change is not yet committed); -1 when the
 * loop did not answer by deadline_us.  A member outside it owes the set
 * nothing from its Raft log: it may start that log anew. */
int repl_member_raft_config_has(repl_member_t *m, int64_t member_id, const char *raft_addr, int64_t deadline_us);
/* The index of the first entry m's Raft log still holds (1 while nothing
 * was compacted away): a member added with no data catches up from the
 * log only while it is 1.  0 when the loop did not answer by deadline_us. */
uint64_t repl_member_log_first_index(repl_member_t *m, int64_t deadline_us);

#endif
