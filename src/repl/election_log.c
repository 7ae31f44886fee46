/*
 * election_log.c -- mongod's election lines from Raft's state changes (see
 * election_log.h).  Log calls only: it never changes what Raft does.
 */
#include "repl/election_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <raft.h>
#include <string.h>
#include <time.h>

#include <bson/bson.h>

#include "common/log.h"

static const struct {
	int id;
	const char *msg;
} lines[] = {
	{4615652, "Starting an election, since we've seen no PRIMARY in election timeout period"},
	{21437, "Skipping dry run and running for election"},
	{21438, "Conducting a dry run election to see if we could be elected"},
	{21439, "Not running for primary, we have been superseded already during dry run"},
	{21440, "Not running for primary, we received insufficient votes"},
	{21444, "Dry election run succeeded, running for election"},
	{21447, "Not becoming primary, we have been superseded already during election"},
	{21448, "Not becoming primary, we received insufficient votes"},
	{21450, "Election succeeded, assuming primary role"},
};

/* ---- the metrics (process-wide: one member per process) ---- */

static const char *const reason_names[REPL_ELECTION_NREASONS] = {
	[REPL_ELECTION_STEP_UP] = "stepUpCmd",
	[REPL_ELECTION_PRIORITY_TAKEOVER] = "priorityTakeover",
	[REPL_ELECTION_TIMEOUT] = "electionTimeout",
	[REPL_ELECTION_FREEZE_TIMEOUT] = "freezeTimeout",
};
/* lastElectionReason's values (mongod's StartElectionReason) */
static const char *const reason_values[REPL_ELECTION_NREASONS] = {
	[REPL_ELECTION_STEP_UP] = "stepUpRequestSkipDryRun",
	[REPL_ELECTION_PRIORITY_TAKEOVER] = "priorityTakeover",
	[REPL_ELECTION_TIMEOUT] = "electionTimeout",
	[REPL_ELECTION_FREEZE_TIMEOUT] = "singleNodePromptElection",
};

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(repl_heard_max_fn) heard_max;

void
repl_election_set_heard_max(repl_heard_max_fn fn)
{
	atomic_store(&heard_max, fn);
}

bool
repl_election_heard_max(uint64_t *ts, int64_t *t)
{
	repl_heard_max_fn fn = atomic_load(&heard_max);

	return fn != NULL && fn(ts, t);
}

static struct {
	int64_t called[REPL_ELECTION_NREASONS], successful[REPL_ELECTION_NREASONS];
	int64_t stepdowns_higher_term;
	repl_election_candidate_t last;   /* the last vote begun */
	bool last_set, last_won;
	repl_election_vote_t vote;        /* the last vote request answered */
	bool vote_set;
} metrics;

static void
metrics_called(const repl_election_candidate_t *c)
{
	pthread_mutex_lock(&metrics_lock);
	metrics.called[c->reason]++;
	metrics.last = *c;
	metrics.last_set = true;
	metrics.last_won = false;
	pthread_mutex_unlock(&metrics_lock);
}

static void
metrics_won(int64_t term)
{
	pthread_mutex_lock(&metrics_lock);
	if (metrics.last_set && metrics.last.term == term && !metrics.last_won) {
		metrics.successful[metrics.last.reason]++;
		metrics.last_won = true;
	}
	pthread_mutex_unlock(&metrics_lock);
}

void
repl_election_metrics_single(const repl_election_candidate_t *c)
{
	metrics_called(c);
	metrics_won(c->term);
}

static void
called_successful(bson_t *out, const char *key, int64_t called, int64_t successful)
{
	bson_t d;

	BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
	BSON_APPEND_INT64(&d, "called", called);
	BSON_APPEND_INT64(&d, "successful", successful);
	bson_append_document_end(out, &d);
}

/* mongod's catch-up conclusions (ElectionMetrics), in its order: a Raft
 * leader holds every committed entry when elected and drops the others'
 * uncommitted ones instead of fetching them, so no catch-up ever begins
 * or concludes here. */
static const char *const catch_up_counters[] = {
	"numCatchUps", "numCatchUpsSucceeded", "numCatchUpsAlreadyCaughtUp", "numCatchUpsSkipped",
	"numCatchUpsTimedOut", "numCatchUpsFailedWithError", "numCatchUpsFailedWithNewTerm",
	"numCatchUpsFailedWithReplSetAbortPrimaryCatchUpCmd",
};

void
repl_election_metrics_append(bson_t *out)
{
	pthread_mutex_lock(&metrics_lock);
	called_successful(out, reason_names[REPL_ELECTION_STEP_UP], metrics.called[REPL_ELECTION_STEP_UP],
	    metrics.successful[REPL_ELECTION_STEP_UP]);
	called_successful(out, reason_names[REPL_ELECTION_PRIORITY_TAKEOVER],
	    metrics.called[REPL_ELECTION_PRIORITY_TAKEOVER], metrics.successful[REPL_ELECTION_PRIORITY_TAKEOVER]);
	called_successful(out, "catchUpTakeover", 0, 0);
	called_successful(out, reason_names[REPL_ELECTION_TIMEOUT], metrics.called[REPL_ELECTION_TIMEOUT],
	    metrics.successful[REPL_ELECTION_TIMEOUT]);
	called_successful(out, reason_names[REPL_ELECTION_FREEZE_TIMEOUT], metrics.called[REPL_ELECTION_FREEZE_TIMEOUT],
	    metrics.successful[REPL_ELECTION_FREEZE_TIMEOUT]);
	BSON_APPEND_INT64(out, "numStepDownsCausedByHigherTerm", metrics.stepdowns_higher_term);
	pthread_mutex_unlock(&metrics_lock);
	for (size_t i = 0; i < sizeof(catch_up_counters) / sizeof(catch_up_counters[0]); i++)
		BSON_APPEND_INT64(out, catch_up_counters[i], 0);
	BSON_APPEND_DOUBLE(out, "averageCatchUpOps", 0.0);
}

static void
optime_append(bson_t *b, const char *key, uint64_t ts, int64_t t)
{
	bson_t d;

	BSON_APPEND_DOCUMENT_BEGIN(b, key, &d);
	BSON_APPEND_TIMESTAMP(&d, "ts", (uint32_t)(ts >> 32), (uint32_t)ts);
	BSON_APPEND_INT64(&d, "t", t);
	bson_append_document_end(b, &d);
}

void
repl_election_vote_reason(const repl_vote_seen_t *s, bool granted, char *buf, size_t n)
{
	/* libraft's checks, in its order: a known leader, the term, a vote
	 * already given in the request's term, the log's position */
	bool same_term = s->req_term == s->my_term;

	if (granted)
		snprintf(buf, n, "%s", "");
	else if (s->knows_leader && !s->disrupt_leader)
		snprintf(buf, n, "this member knows a primary in term (%llu) and the candidate did not ask to depose it",
		    (unsigned long long)s->my_term);
	else if (s->req_term < s->my_term)
		snprintf(buf, n, "candidate's term (%llu) is lower than mine (%llu)", (unsigned long long)s->req_term,
		    (unsigned long long)s->my_term);
	else if (same_term && s->voted_for != 0)
		snprintf(buf, n, "already voted for another candidate (%s) this term (%llu)",
		    s->voted_for_host != NULL ? s->voted_for_host : "?", (unsigned long long)s->req_term);
	else
		snprintf(buf, n,
		    "candidate's data is staler than mine. candidate's last Raft log entry: %llu (term %llu), my "
		    "last Raft log entry: %llu",
		    (unsigned long long)s->req_last_index, (unsigned long long)s->req_last_term,
		    (unsigned long long)s->my_last_index);
}

void
repl_election_vote_record(const repl_election_vote_t *v)
{
	pthread_mutex_lock(&metrics_lock);
	metrics.vote = *v;
	metrics.vote_set = true;
	pthread_mutex_unlock(&metrics_lock);
}

bool
repl_election_participant_append(bson_t *out, const char *key)
{
	repl_election_vote_t v;
	bson_t d;

	pthread_mutex_lock(&metrics_lock);
	if (!metrics.vote_set) {
		pthread_mutex_unlock(&metrics_lock);
		return false;
	}
	v = metrics.vote;
	pthread_mutex_unlock(&metrics_lock);
	/* ElectionParticipantMetrics' fields in mongod's order; a member
	 * writes and applies an entry at once here, so the written optimes
	 * are the applied ones.  newTermStartDate/newTermAppliedDate stay
	 * absent: no "new primary" entry is written at later elections */
	BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
	BSON_APPEND_BOOL(&d, "votedForCandidate", v.granted);
	BSON_APPEND_INT64(&d, "electionTerm", v.term);
	BSON_APPEND_DATE_TIME(&d, "lastVoteDate", v.date_ms);
	BSON_APPEND_INT32(&d, "electionCandidateMemberId", v.candidate_id);
	BSON_APPEND_UTF8(&d, "voteReason", v.reason);
	optime_append(&d, "lastWrittenOpTimeAtElection", v.applied_ts, v.applied_t);
	optime_append(&d, "maxWrittenOpTimeInSet", v.max_ts, v.max_t);
	optime_append(&d, "lastAppliedOpTimeAtElection", v.applied_ts, v.applied_t);
	optime_append(&d, "maxAppliedOpTimeInSet", v.max_ts, v.max_t);
	BSON_APPEND_DOUBLE(&d, "priorityAtElection", v.priority);
	bson_append_document_end(out, &d);
	return true;
}

bool
repl_election_candidate_append(bson_t *out, const char *key, int64_t term)
{
	repl_election_candidate_t c;
	bson_t d;

	pthread_mutex_lock(&metrics_lock);
	if (!metrics.last_set || !metrics.last_won || metrics.last.term != term) {
		pthread_mutex_unlock(&metrics_lock);
		return false;
	}
	c = metrics.last;
	pthread_mutex_unlock(&metrics_lock);
	BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
	BSON_APPEND_UTF8(&d, "lastElectionReason", reason_values[c.reason]);
	BSON_APPEND_DATE_TIME(&d, "lastElectionDate", c.date_ms);
	BSON_APPEND_INT64(&d, "electionTerm", c.term);
	optime_append(&d, "lastCommittedOpTimeAtElection", c.committed_ts, c.committed_t);
	optime_append(&d, "lastSeenWrittenOpTimeAtElection", c.seen_ts, c.seen_t);
	optime_append(&d, "lastSeenOpTimeAtElection", c.seen_ts, c.seen_t);
	BSON_APPEND_INT32(&d, "numVotesNeeded", c.votes_needed);
	BSON_APPEND_DOUBLE(&d, "priorityAtElection", c.priority);
	BSON_APPEND_INT64(&d, "electionTimeoutMillis", c.election_timeout_ms);
	bson_append_document_end(out, &d);
	return true;
}

/* A vote begins in r's current term: the candidate's view, counted. */
static void
vote_begins(repl_election_log_t *l, const struct raft *r, bool skip_dry_run)
{
	repl_election_candidate_t c = {0};
	struct timespec ts;
	unsigned voters = 0;

	if (l->hooks == NULL || l->hooks->candidate == NULL)
		return;
	l->hooks->candidate(l->hooks->arg, skip_dry_run, &c);
	if (c.reason == REPL_ELECTION_NREASONS)
		return;   /* a member that hands any leadership on: not counted */
	clock_gettime(CLOCK_REALTIME, &ts);
	c.date_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	c.term = (int64_t)r->current_term;
	for (unsigned k = 0; k < r->configuration.n; k++)
		if (r->configuration.servers[k].role == RAFT_VOTER)
			voters++;
	c.votes_needed = (int32_t)(voters / 2 + 1);
	if ((int)c.reason < 0 || c.reason >= REPL_ELECTION_NREASONS)
		c.reason = REPL_ELECTION_TIMEOUT;
	l->reason = c.reason;
	metrics_called(&c);
}

static void
line(int id, const bson_t *attr)
{
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (lines[i].id == id) {
			tlog('I', "ELECTION", id, lines[i].msg, attr);
			return;
		}
}

void
repl_election_log_line(int id, const char *attr_name, int64_t value)
{
	bson_t attr;

	bson_init(&attr);
	if (attr_name != NULL)
		bson_append_int64(&attr, attr_name, -1, value);
	line(id, &attr);
	bson_destroy(&attr);
}

/* a line with two terms */
static void
line2(int id, const char *a, uint64_t av, const char *b, uint64_t bv)
{
	bson_t attr;

	bson_init(&attr);
	bson_append_int64(&attr, a, -1, (int64_t)av);
	bson_append_int64(&attr, b, -1, (int64_t)bv);
	line(id, &attr);
	bson_destroy(&attr);
}

void
repl_election_log_observe(repl_election_log_t *l, const struct raft *r, int64_t election_timeout_ms)
{
	int st = r->state;
	bool pv = st == RAFT_CANDIDATE && r->candidate_state.in_pre_vote;
	uint64_t term = r->current_term;

	if (l->seen && st == l->state && pv == l->pre_vote && term == l->term)
		return;   /* the usual case: nothing moved */
	if (l->seen) {
		bool was_cand = l->state == RAFT_CANDIDATE;
		if (l->state == RAFT_LEADER && st != RAFT_LEADER && term > l->term && l->hooks != NULL &&
		    l->hooks->was_primary != NULL && l->hooks->was_primary(l->hooks->arg)) {
			pthread_mutex_lock(&metrics_lock);
			metrics.stepdowns_higher_term++;
			pthread_mutex_unlock(&metrics_lock);
		}
		if (was_cand && !l->pre_vote && (st != RAFT_CANDIDATE || pv) && st != RAFT_LEADER) {
			/* the vote ended without a win (a retry starts a new dry run) */
			if (term != l->term)
				line2(21447, "electionTerm", l->term, "currentTerm", term);
			else
				line(21448, NULL);
		} else if (was_cand && l->pre_vote && st != RAFT_CANDIDATE && st != RAFT_LEADER) {
			if (term != l->term)
				line2(21439, "originalTerm", l->term, "currentTerm", term);
			else
				line(21440, NULL);
		}
		if (st == RAFT_CANDIDATE && pv && !(was_cand && l->pre_vote)) {
			repl_election_log_line(4615652, "electionTimeoutPeriodMillis", election_timeout_ms);
			repl_election_log_line(21438, "currentTerm", (int64_t)term);
		} else if (st == RAFT_CANDIDATE && !pv && !was_cand) {
			repl_election_log_line(21437, "newTerm", (int64_t)term);
			vote_begins(l, r, true);
		} else if (st == RAFT_CANDIDATE && !pv && l->pre_vote) {
			repl_election_log_line(21444, "newTerm", (int64_t)term);
			vote_begins(l, r, false);
		} else if (st == RAFT_LEADER && l->state != RAFT_LEADER) {
			if (was_cand && l->pre_vote) {   /* both phases within one call */
				repl_election_log_line(21444, "newTerm", (int64_t)term);
				vote_begins(l, r, false);
			} else if (!was_cand) {
				/* a one-voter Raft configuration wins within the
				 * call: its election timeout ran out */
				vote_begins(l, r, false);
			}
			repl_election_log_line(21450, "term", (int64_t)term);
			if (l->hooks != NULL)
				metrics_won((int64_t)term);
		}
	}
	l->seen = true;
	l->state = st;
	l->pre_vote = pv;
	l->term = term;
}
