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
 *
 * The same observations count mongod's ElectionMetrics (serverStatus's
 * `electionMetrics`) and keep the last election this process ran as a
 * candidate (replSetGetStatus's `electionCandidateMetrics`), process-wide:
 *   an election is `called` when its vote begins (after a dry run that
 *     succeeded, or at once without one), as mongod counts at its vote
 *     requester's start, and `successful` when it ends in leadership;
 *   the reason: a vote after a dry run is Raft's election timeout
 *     (`electionTimeout`); one without a dry run comes from a leadership
 *     transfer, which the member's hook names: `priorityTakeover` when this
 *     member had asked the primary for one, else `stepUpCmd` (the transfer
 *     of replSetStepDown, as mongod's election handoff runs the target's
 *     step-up); the single-member set's own elections are `electionTimeout`
 *     (initiate, restart) or `freezeTimeout` (a stepdown or freeze period
 *     that ran out: mongod's single-node prompt election);
 *   `numStepDownsCausedByHigherTerm`: a Raft leader that was PRIMARY (taking
 *     writes: not one handing its leadership on after replSetStepDown) and
 *     became a follower in a higher term within one call into libraft.
 */
#ifndef TAMGA_REPL_ELECTION_LOG_H
#define TAMGA_REPL_ELECTION_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

struct raft;

typedef enum repl_election_reason {
	REPL_ELECTION_STEP_UP,            /* stepUpCmd */
	REPL_ELECTION_PRIORITY_TAKEOVER,  /* priorityTakeover */
	REPL_ELECTION_TIMEOUT,            /* electionTimeout */
	REPL_ELECTION_FREEZE_TIMEOUT,     /* freezeTimeout */
	REPL_ELECTION_NREASONS
} repl_election_reason_t;

/* What a candidate knew when its vote began (electionCandidateMetrics). */
typedef struct repl_election_candidate {
	repl_election_reason_t reason;
	int64_t date_ms;                  /* wall clock */
	int64_t term;                     /* the election's term */
	uint64_t committed_ts;            /* lastCommittedOpTimeAtElection */
	int64_t committed_t;
	uint64_t seen_ts;                 /* lastSeenOpTimeAtElection (the last applied) */
	int64_t seen_t;
	int32_t votes_needed;
	double priority;
	int64_t election_timeout_ms;
} repl_election_candidate_t;

/* The member's answers to the observer (raft_member.c), called on the
 * observer's thread without its locks held.  candidate(): a vote begins
 * (skip_dry_run: no pre-vote came first): fill reason (from skip_dry_run;
 * REPL_ELECTION_NREASONS: not counted, for a member that would hand any
 * leadership on -- priority 0, frozen, copying data -- where mongod never
 * stands for election), the optimes, priority and election timeout (the
 * observer fills date, term, votes_needed).  was_primary(): whether the member took writes as
 * PRIMARY when Raft deposed it. */
typedef struct repl_election_hooks {
	void *arg;
	void (*candidate)(void *arg, bool skip_dry_run, repl_election_candidate_t *out);
	bool (*was_primary)(void *arg);
} repl_election_hooks_t;

typedef struct repl_election_log {
	const repl_election_hooks_t *hooks;   /* NULL: log lines only */
	bool seen;         /* a first state was recorded */
	int state;         /* RAFT_FOLLOWER / RAFT_CANDIDATE / RAFT_LEADER ... */
	bool pre_vote;     /* a candidate in its pre-vote (dry run) */
	uint64_t term;
	repl_election_reason_t reason;    /* of the vote in `term` */
} repl_election_log_t;

/* Compare r's state with the one l recorded, log the change, record the
 * new one.  election_timeout_ms: the set's electionTimeoutMillis. */
void repl_election_log_observe(repl_election_log_t *l, const struct raft *r, int64_t election_timeout_ms);

/* One ELECTION line with a single NumberLong attribute (the id picks the
 * message from the table above: 21437, 21438, 21444, 21450).  For the
 * single-member set's own election (replset.c). */
void repl_election_log_line(int id, const char *attr_name, int64_t value);

/* The single-member set's election (replset.c): called and won at once. */
void repl_election_metrics_single(const repl_election_candidate_t *c);

/* Append serverStatus's electionMetrics fields to out (a document being
 * built) in mongod's order: the reason counters, each {called,
 * successful} (catchUpTakeover always 0: a Raft leader never catches up,
 * so no member takes over from one that does), numStepDownsCausedByHigherTerm,
 * then the catch-up conclusions (numCatchUps...: 0, no catch-up phase runs)
 * and averageCatchUpOps (0.0, mongod's value while numCatchUps is 0). */
void repl_election_metrics_append(bson_t *out);

/*
 * A real (not pre-vote) RequestVote this member answered, as mongod's
 * ElectionParticipantMetrics keeps it (replSetGetStatus's
 * `electionParticipantMetrics`; mongod sets them for every vote request
 * that is not a dry run, granted or not).  raft_member.c reads the request
 * as it arrives and the answer as libraft sends it.
 */
typedef struct repl_election_vote {
	bool granted;                     /* votedForCandidate */
	int64_t term;                     /* electionTerm: the candidate's term */
	int64_t date_ms;                  /* lastVoteDate, wall clock */
	int32_t candidate_id;             /* electionCandidateMemberId: its _id */
	char reason[320];                 /* voteReason: "" when granted */
	uint64_t applied_ts;              /* this member's last applied optime */
	int64_t applied_t;
	uint64_t max_ts;                  /* the newest optime it knew applied in the set */
	int64_t max_t;
	double priority;                  /* priorityAtElection */
} repl_election_vote_t;

/* What this member was when a vote request arrived, before libraft
 * handled it: the facts libraft decides on. */
typedef struct repl_vote_seen {
	uint64_t req_term, req_last_index, req_last_term;
	uint64_t my_term;                 /* current term before the request */
	uint64_t voted_for;               /* Raft id voted for in my_term, 0: none */
	const char *voted_for_host;       /* its host, NULL: unknown */
	bool knows_leader;                /* a leader (or itself) in my_term */
	bool disrupt_leader;              /* the request asks to depose it */
	uint64_t my_last_index;
} repl_vote_seen_t;

/* mongod's voteReason for an answer libraft gave (processReplSetRequestVotes'
 * reasons, in libraft's order of checks): "" when granted; "candidate's
 * term (T) is lower than mine (M)"; "already voted for another candidate
 * (host) this term (T)"; else "candidate's data is staler than mine" with
 * Raft's log positions in place of mongod's optimes (a Raft candidate sends
 * no optime), or, for libraft's leader stickiness (no mongod counterpart),
 * the leader it knows.  Writes at most n bytes to buf, NUL-terminated. */
void repl_election_vote_reason(const repl_vote_seen_t *s, bool granted, char *buf, size_t n);

/* Keep v as the last vote answered (process-wide, thread-safe). */
void repl_election_vote_record(const repl_election_vote_t *v);
/* Where maxAppliedOpTimeInSet also looks: the newest applied optime
 * another member's heartbeat reported (the commands layer's heartbeats,
 * commands/cmd_repl_heartbeat.c, register fn; NULL unregisters).  fn
 * answers false when it knows none; it must not block (it runs on the
 * Raft server's thread).  repl_election_heard_max calls it. */
typedef bool (*repl_heard_max_fn)(uint64_t *ts, int64_t *t);
void repl_election_set_heard_max(repl_heard_max_fn fn);
bool repl_election_heard_max(uint64_t *ts, int64_t *t);

/* Append {key: electionParticipantMetrics} to out when this process has
 * answered a vote request (mongod shows the section only then); false
 * (nothing appended) otherwise. */
bool repl_election_participant_append(bson_t *out, const char *key);

/* Append {key: electionCandidateMetrics} to out when the last election this
 * process won was in `term` (the caller's current term, while it is
 * PRIMARY: mongod shows them while candidate or primary only); false (and
 * nothing appended) otherwise. */
bool repl_election_candidate_append(bson_t *out, const char *key, int64_t term);

#endif
