/*
 * election_log.h -- mongod's election log lines (component ELECTION, level
 * 0), written from what Tamga's Raft does: a pre-vote is mongod's dry run,
 * Raft's vote its real election.
 *
 * repl_election_log_observe() is called on the Raft loop thread after every
 * call into libraft that may change its state (a tick, a received message,
 * the watch timer) and writes, for each change it sees:
 *   follower -> candidate in pre-vote: 4615652 "Starting an election, since
 *     we've seen no PRIMARY in election timeout period"
 *     {electionTimeoutPeriodMillis} and 21438 "Conducting a dry run election
 *     to see if we could be elected" {currentTerm};
 *   follower -> candidate without pre-vote (a leadership transfer's
 *     TimeoutNow: replSetStepDown, priority takeover): 21437 "Skipping dry
 *     run and running for election" {newTerm};
 *   pre-vote -> vote: 21444 "Dry election run succeeded, running for
 *     election" {newTerm};
 *   candidate -> leader: 21450 "Election succeeded, assuming primary role"
 *     {term};
 *   candidate -> follower: in the dry run 21439 "Not running for primary, we
 *     have been superseded already during dry run" {originalTerm,
 *     currentTerm} when the term moved, else 21440 "Not running for primary,
 *     we received insufficient votes"; in the vote 21447 "Not becoming
 *     primary, we have been superseded already during election"
 *     {electionTerm, currentTerm} when the term moved, else 21448 "Not
 *     becoming primary, we received insufficient votes".
 * A candidate whose vote timed out (Raft's own retry) writes 21448 and then
 * the new dry run's two lines.  The priority takeover's own line is
 * member_takeover.c's (4615660).
 */
#ifndef TAMGA_REPL_ELECTION_LOG_H
#define TAMGA_REPL_ELECTION_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct raft;

typedef struct repl_election_log {
	bool seen;         /* a first state was recorded */
	int state;         /* RAFT_FOLLOWER / RAFT_CANDIDATE / RAFT_LEADER ... */
	bool pre_vote;     /* a candidate in its pre-vote (dry run) */
	uint64_t term;
} repl_election_log_t;

/* Compare r's state with the one l recorded, log the change, record the
 * new one.  election_timeout_ms: the set's electionTimeoutMillis. */
void repl_election_log_observe(repl_election_log_t *l, const struct raft *r, int64_t election_timeout_ms);

/* One ELECTION line with a single NumberLong attribute (the id picks the
 * message from the table above: 21437, 21438, 21444, 21450).  For the
 * single-member set's own election (replset.c). */
void repl_election_log_line(int id, const char *attr_name, int64_t value);

#endif
