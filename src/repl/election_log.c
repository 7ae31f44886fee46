/*
 * election_log.c -- mongod's election lines from Raft's state changes (see
 * election_log.h).  Log calls only: it never changes what Raft does.
 */
#include "repl/election_log.h"

#include <raft.h>
#include <string.h>

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
		} else if (st == RAFT_CANDIDATE && !pv && l->pre_vote) {
			repl_election_log_line(21444, "newTerm", (int64_t)term);
		} else if (st == RAFT_LEADER && l->state != RAFT_LEADER) {
			if (was_cand && l->pre_vote)   /* both phases within one call */
				repl_election_log_line(21444, "newTerm", (int64_t)term);
			repl_election_log_line(21450, "term", (int64_t)term);
		}
	}
	l->seen = true;
	l->state = st;
	l->pre_vote = pv;
	l->term = term;
}
