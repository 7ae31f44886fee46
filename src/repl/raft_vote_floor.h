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
 * The floor's index part (the empty-log hazard): a wiped member's log is
 * empty, and Raft's log comparison passes against an empty log -- with
 * voters A (primary), B and C, a write W acknowledged by A and B, B wiped
 * and handed the configuration, A dead before B holds W again: C, which
 * lacks W, stands past the floor, B grants its vote, and C leads without an
 * acknowledged majority write.  So the hand-over also carries the index I
 * of the primary's last Raft log entry, read after the member answered the
 * dry run (so after its wipe), and its term T: every entry the member
 * acknowledged before its wipe is at or below I in the primary's log (an
 * entry committed by an earlier leader is in this leader's log, Raft's
 * leader completeness; one this leader sent the member was appended to its
 * log before) -- a bound the primary's commit index is not: an
 * acknowledgement the member sent just before its wipe may reach the leader
 * and commit W after the hand-over.  The member grants no real vote and
 * stands in no election until its own Raft log's last entry (a restored
 * snapshot's when the log holds none) is at index >= I and of term >= T:
 * such a log came, by Raft's log matching, from a leader of term >= T and
 * holds that leader's prefix through I, every entry the member held before
 * its wipe included (the term test keeps out a log a deposed leader of an
 * older term fills to I with entries the set did not keep) -- or its last
 * entry is of a term > T: the leader of that term holds every committed
 * entry of terms <= T (Raft's leader completeness: its voters remembered,
 * this member's vote was withheld), all before its own entries, so the log
 * holds them too; this keeps the member from waiting for the set's log to
 * grow back to I when the primary's uncommitted tail was lost.  It then
 * drops the index part (stored: 0).  Pre-votes pass here as well: they record
 * nothing, the real vote is the one refused, and refusing them too would
 * change no outcome (a candidate short of a majority of real votes is not
 * elected).  The leader that handed over transfers no leadership to the
 * member while the member's match index is below I.  Cost: while the index
 * part holds, the member counts for no election: a set of three that loses
 * another member before the wiped one caught up elects no primary until one
 * that holds the log returns (the write is not given up).
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

/* The file in Raft's folder that holds the floor: one line, the term
 * floor and the index part in decimal ("6 120"; a file of one number, as
 * written before the index part, is a floor with no index part).
 * member_rejoin.h keeps it when it empties the folder. */
#define REPL_RAFT_VOTE_FLOOR_FILE "tamga-vote-floor"

/* A member's vote floor; {0, 0}: none. */
typedef struct repl_vote_floor {
	/* no real vote and no candidacy in a term <= term */
	uint64_t term;
	/* nor in any term until the member's own Raft log reaches it
	 * (repl_raft_vote_floor_log_held); 0: none, or reached */
	uint64_t index;
} repl_vote_floor_t;

/* The floor for a member handed the configuration by a primary of Raft term
 * `primary_term`: primary_term + 1 (0 stays 0: no floor). */
uint64_t repl_raft_vote_floor_for(uint64_t primary_term);

/* The term of r's last log entry: the last entry's, the snapshot's when
 * the log holds no entry after it, 0 for an empty log. */
raft_term repl_raft_last_term(const struct raft *r);

/* Whether a log whose last entry is (last_index, last_term) holds what the
 * member held before its wipe: f has no index part; or last_index >=
 * f->index with last_term >= the hand-over's term T (f->term - 1); or
 * last_term > T (a leader of a later term sent it: the log holds that
 * leader's prefix through every entry of term <= T it has). */
bool repl_raft_vote_floor_log_held(const repl_vote_floor_t *f, raft_index last_index, raft_term last_term);

/* true when msg is a RequestVote that is not a pre-vote, of a term <=
 * f->term, or of any term while the member's log is short of f->index
 * (log_held: repl_raft_vote_floor_log_held on its log).  Used on the
 * messages received (dropped) and sent (not sent). */
bool repl_raft_vote_floor_blocks(const repl_vote_floor_t *f, bool log_held, const struct raft_message *msg);

/* The floor stored in dir ({0, 0} when none); 0, or -1 with err on a file
 * that exists and cannot be read or parsed (*f then {0, 0}). */
int repl_raft_vote_floor_load(const char *dir, repl_vote_floor_t *f, terr_t *err);

/* Raise the floor stored in dir to f, part by part (the greater term, the
 * greater index; the folder created if missing; written to a temporary
 * file, synced, renamed, the folder synced; nothing written when nothing
 * rises); 0 or -1 with err. */
int repl_raft_vote_floor_raise(const char *dir, const repl_vote_floor_t *f, terr_t *err);

/* The member's log reached the index part: stored as 0, the term floor
 * kept (written as above); 0 or -1 with err. */
int repl_raft_vote_floor_clear_index(const char *dir, terr_t *err);

/* The small files of Raft's folder that hold a line of one or two decimal
 * numbers ("6 120"; the vote floor here, the minValid of raft_min_valid.h).
 * load: *a, *b read (0 when absent: no file is {0, 0}); 0, or -1 with err on
 * a file that exists and cannot be read or parsed.  store: written to a
 * temporary file, synced, renamed, the folder synced (created if missing);
 * remove: unlinked, the folder synced (none is 0). */
int repl_raft_pair_file_load(const char *dir, const char *name, uint64_t *a, uint64_t *b, terr_t *err);
int repl_raft_pair_file_store(const char *dir, const char *name, uint64_t a, uint64_t b, terr_t *err);
int repl_raft_pair_file_remove(const char *dir, const char *name, terr_t *err);

#endif
