/*
 * member_takeover.h -- mongod's priority takeover on a set of several
 * members: a secondary whose priority is higher than the primary's, that
 * may be elected and is fresh, asks the primary for the leadership after
 * mongod's delay; the primary hands it over with Raft's leadership transfer
 * (repl_member_transfer_to), so no election of our own is invented.
 *
 * mongod (topology_coordinator.cpp, repl_set_config.cpp): a secondary that
 * sees through heartbeats a primary of lower priority schedules a takeover
 * (rank + 1) * electionTimeoutMillis + a random offset (up to 0.15 of the
 * election timeout) later, where rank is the number of members with a
 * priority higher than its own, so the highest goes first; when the time
 * comes it stands only if it is still electable (a voter, SECONDARY, not
 * frozen: replSetFreeze or a replSetStepDown period) and fresh: its last applied optime within
 * priorityTakeoverFreshnessWindowSeconds (2) of the newest it knows, or
 * within 1,000 increments in the same second.  Here the newest known optime
 * is the commit point the leader told this member.
 *
 * The loop thread of the member calls repl_takeover_tick every watch
 * period with a view of the set; the request itself (Tamga's internal
 * `_tamgaPriorityTakeover {memberId, term}` to the primary) runs on a thread
 * of its own, one at a time, so the loop never blocks on the network.
 */
#ifndef TAMGA_REPL_MEMBER_TAKEOVER_H
#define TAMGA_REPL_MEMBER_TAKEOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "repl/clock.h"
#include "repl/raft_member.h"

/* mongod's priorityTakeoverFreshnessWindowSeconds default */
#define REPL_TAKEOVER_FRESH_SECS 2

typedef struct repl_takeover repl_takeover_t;

/* What the member's loop sees at one tick (peers borrowed for the call). */
typedef struct repl_takeover_view {
	bool follower;                /* Raft follower with a known leader */
	bool electable;               /* a voter, not busy (ROLLBACK / STARTUP2), not frozen, may lead */
	int self_index, leader_index; /* rows of peers */
	const repl_member_peer_t *peers;
	int npeers;
	repl_ts_t applied, newest;    /* this member's applied ts, the commit point it knows */
	uint64_t term;
	int election_timeout_ms;
} repl_takeover_view_t;

/* Owned by the member (repl_takeover_free). */
repl_takeover_t *repl_takeover_new(void);
/* Join the request thread (if one runs) and free; NULL is fine. */
void repl_takeover_free(repl_takeover_t *t);
/* One tick: schedule, cancel or send the request (now_ms: wall clock). */
void repl_takeover_tick(repl_takeover_t *t, const repl_takeover_view_t *v, int64_t now_ms);
/* The delay mongod schedules for the member at row self (without the
 * random offset): (rank + 1) * election_timeout_ms. */
/* Whether this member sent the primary a takeover request at or after
 * since_ms that was not refused (the Raft election that follows is a
 * priority takeover's: election_log.h). */
bool repl_takeover_asked_since(repl_takeover_t *t, int64_t since_ms);

int64_t repl_takeover_delay_ms(const repl_member_peer_t *peers, int npeers, int self, int election_timeout_ms);

#endif
