/*
 * raft_vote_floor.h -- the vote memory a member lost with its data folder.
 *
 * Raft's safety rests on each voter remembering (term, votedFor) across
 * restarts: canonical/raft keeps them in `<dbpath>/raft/metadata1|2`.  A
 * member whose data folder was wiped (a disk replaced) and that comes back
 * under the same host comes back under the same `_id`, so the same Raft
 * server id (raft_member.h), with no such memory: the primary hands it the
 * configuration (member_rejoin.h) and it starts Raft at term 1, having voted
 * for nobody.  libraft 0.15 then grants a real RequestVote of any term >= its
 * own from any candidate as soon as it knows no leader (its log, the
 * bootstrap entry or a snapshot being copied, is never ahead of a
 * candidate's): a second vote in a term in which it may have voted before
 * the wipe, and two leaders in one term when the first leader of that term
 * was elected with its lost vote (tests/unit/test_raft_vote_floor.c shows
 * libraft granting it).  mongod has the same hole: a resynced member finds
 * no `local.replset.election` document and votes in any term once it has a
 * configuration (STARTUP2 included).
 *
 * The floor: the primary that hands a wiped member the configuration sends
 * its Raft term T with it; the member grants no vote and stands in no
 * election in any term <= T + 1 (the floor) -- T covers every term the
 * primary's majority reached, + 1 an election that was already running
 * at the hand-over (a candidate of T + 1 that the member may have voted for
 * just before the wipe).  The floor is stored in the Raft folder
 * (REPL_RAFT_VOTE_FLOOR_FILE, synced before Raft starts) so a restart
 * within the window keeps it; once the member's own term passes the floor
 * it no longer matters.  A real RequestVote of a term <= floor that arrives
 * is dropped before libraft sees it (its term is not adopted either), and
 * one this member sends as a candidate is not sent (its election of that
 * term fails, its next one is past the floor).  Pre-votes pass both ways:
 * they record nothing, and refusing them would keep every candidate at the
 * floor's term for good.
 * The leader that handed over notes the floor (repl_member_note_vote_floor
 * in raft_member.h): its stepdowns and hand-ons transfer the leadership to
 * another voter while the wiped member's candidacy would not pass it, and
 * the wiped member seeks no priority takeover meanwhile.
 *
 * Not a proof: a vote given before the wipe in a term > T + 1 would need a
 * candidate that ran two elections past the term of a primary that still
 * held its majority (a one-way partition); Raft's own answer -- the wiped
 * member rejoins under a new server id and votes only once caught up
 * (raft_add, raft_assign) -- would change the member's Raft id mapping of
 * every member, and is not built.
 */
#ifndef TAMGA_REPL_RAFT_VOTE_FLOOR_H
#define TAMGA_REPL_RAFT_VOTE_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

#include "common/error.h"

/* The file in Raft's folder that holds the floor (decimal, one line).
 * member_rejoin.h keeps it when it empties the folder. */
#define REPL_RAFT_VOTE_FLOOR_FILE "tamga-vote-floor"

/* The floor for a member handed the configuration by a primary of Raft term
 * `primary_term`: primary_term + 1 (0 stays 0: no floor). */
uint64_t repl_raft_vote_floor_for(uint64_t primary_term);

/* true when msg is a RequestVote that is not a pre-vote, of a term <= floor
 * (floor 0: never).  Used on the messages received (dropped) and sent (not
 * sent). */
bool repl_raft_vote_floor_blocks(uint64_t floor, const struct raft_message *msg);

/* The floor stored in dir (0 when none, or unreadable: logged by the caller
 * from err); 0 or -1 with err on a file that exists and cannot be read or
 * parsed. */
int repl_raft_vote_floor_load(const char *dir, uint64_t *floor, terr_t *err);

/* Store floor in dir when it is above the stored one (the folder created if
 * missing; written to a temporary file, synced, renamed, the folder synced);
 * 0 or -1 with err. */
int repl_raft_vote_floor_raise(const char *dir, uint64_t floor, terr_t *err);

#endif
