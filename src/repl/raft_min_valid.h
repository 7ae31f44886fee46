/*
 * raft_min_valid.h -- a member that starts its Raft log without the set's
 * history: STARTUP2 until its applier has applied through the point the
 * primary's log had reached when it handed the member the configuration.
 *
 * A new member (replSetReconfig's hand-over) or a wiped one (the rejoin
 * thread's, member_rejoin.h) starts Raft with no data: the leader sends it
 * the set's log from its first entry (or its snapshot, which initial_sync.h
 * copies), and the applier replays it.  Until the replay has passed every
 * write acknowledged before the hand-over, a read on this member may miss
 * one, so mongod's rule for initial sync holds it in STARTUP2: the member
 * serves no read (13436), says `secondary: false` in hello (drivers do not
 * select it) and is not elected, and goes SECONDARY once its applier has
 * applied through its minValid.  The minValid is (index I, term T): the
 * primary's last Raft log index and term when it handed over (read after the
 * member answered the dry run).  Every write acknowledged by then is at or
 * below I in the primary's log (it was appended before it was sent to any
 * member, so before its acknowledgement).  Reached when the member's Raft
 * has handed the FSM every entry through I, or an entry of term > T (a
 * leader of a later term holds every committed entry of terms <= T before
 * its own: the primary's uncommitted tail past its commit point may have
 * been lost, and the log may not grow back to I soon), and the applier has
 * applied everything queued by then.
 *
 * Stored in Raft's folder (REPL_RAFT_MIN_VALID_FILE: "index term"), synced
 * before Raft starts and removed once reached, so a restart before then
 * stays STARTUP2 (mongod keeps its minValid in local.replset.minvalid).
 */
#ifndef TAMGA_REPL_RAFT_MIN_VALID_H
#define TAMGA_REPL_RAFT_MIN_VALID_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

#define REPL_RAFT_MIN_VALID_FILE "tamga-min-valid"

/* {0, 0}: none (reached, or never given) */
typedef struct repl_min_valid {
	uint64_t index;   /* the primary's last Raft log index at the hand-over */
	uint64_t term;    /* its Raft term then */
} repl_min_valid_t;

/* Whether the Raft entries handed to the FSM reach mv: last_applied (the
 * index of the last entry handed over) >= mv->index, or an entry of a term >
 * mv->term was handed over (later_term_seen).  Always true for no mv. */
bool repl_raft_min_valid_reached(const repl_min_valid_t *mv, uint64_t last_applied, bool later_term_seen);

/* mv stored in dir (nothing for {0, 0}); 0 or -1 with err. */
int repl_raft_min_valid_store(const char *dir, const repl_min_valid_t *mv, terr_t *err);

/* The minValid stored in dir ({0, 0}: none); 0 or -1 with err (*mv {0, 0}). */
int repl_raft_min_valid_load(const char *dir, repl_min_valid_t *mv, terr_t *err);

/* Reached: the file removed; 0 or -1 with err. */
int repl_raft_min_valid_clear(const char *dir, terr_t *err);

#endif
