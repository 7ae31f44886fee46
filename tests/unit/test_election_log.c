/*
 * test_election_log.c -- repl/election_log.c: the ELECTION lines mongod
 * writes, from each change of a (hand-set) Raft state: a won election
 * through the pre-vote, a transfer that skips it, dry runs and votes lost
 * (superseded or not), a retry, and nothing when nothing moved; and the
 * election metrics counted from the same changes (serverStatus's
 * electionMetrics, replSetGetStatus's electionCandidateMetrics).
 */
#include "tt.h"

#include <raft.h>

#include "common/log.h"
#include "repl/election_log.h"

static struct raft r;
static repl_election_log_t l;

/* Set Raft's state, observe, and return the ids of the lines written since
 * the last call, comma-separated (and the last line's attr JSON in attr). */
static char *
step(int state, bool pre_vote, uint64_t term, char **attr)
{
	static int seen;
	bson_t arr = BSON_INITIALIZER;
	bson_iter_t it;
	bson_string_t *ids = bson_string_new(NULL);
	int i = 0;

	r.state = (unsigned short)state;
	r.candidate_state.in_pre_vote = pre_vote;
	r.current_term = term;
	repl_election_log_observe(&l, &r, 4000);
	tlog_get("global", &arr);
	*attr = NULL;
	bson_iter_init(&it, &arr);
	while (bson_iter_next(&it)) {
		bson_t *line;
		bson_iter_t f;
		if (i++ < seen)
			continue;
		{
			/* past the timestamp ("+00:00", which libbson's parser does not take) */
			const char *rest = strstr(bson_iter_utf8(&it, NULL), ",\"s\":");
			char *j = bson_strdup_printf("{%s", rest != NULL ? rest + 1 : "}");
			line = tt_json(j);
			bson_free(j);
		}
		if (bson_iter_init_find(&f, line, "c"))
			TT_EQ_STR(bson_iter_utf8(&f, NULL), "ELECTION");
		if (bson_iter_init_find(&f, line, "s"))
			TT_EQ_STR(bson_iter_utf8(&f, NULL), "I");
		if (bson_iter_init_find(&f, line, "id"))
			bson_string_append_printf(ids, "%s%d", ids->len ? "," : "", (int)bson_iter_as_int64(&f));
		bson_free(*attr);
		*attr = NULL;
		if (bson_iter_init_find(&f, line, "attr")) {
			bson_t a;
			const uint8_t *d;
			uint32_t n;
			bson_iter_document(&f, &n, &d);
			bson_init_static(&a, d, n);
			*attr = bson_as_relaxed_extended_json(&a, NULL);
		}
		bson_destroy(line);
	}
	seen = i;
	bson_destroy(&arr);
	return bson_string_free(ids, false);
}

#define STEP(st, pv, term, want_ids, want_attr) do { \
	char *at_, *ids_ = step(st, pv, term, &at_); \
	TT_EQ_STR(ids_, want_ids); \
	if ((want_attr) != NULL) TT_EQ_STR(at_, want_attr); \
	bson_free(ids_); bson_free(at_); } while (0)

static void
test_lines(void)
{
	tlog_open("", false, false);
	STEP(RAFT_FOLLOWER, false, 1, "", NULL);   /* the first view: nothing */
	STEP(RAFT_FOLLOWER, false, 1, "", NULL);
	/* election timeout: the dry run, then the vote, then the win */
	STEP(RAFT_CANDIDATE, true, 1, "4615652,21438", "{ \"currentTerm\" : 1 }");
	STEP(RAFT_CANDIDATE, false, 2, "21444", "{ \"newTerm\" : 2 }");
	STEP(RAFT_LEADER, false, 2, "21450", "{ \"term\" : 2 }");
	STEP(RAFT_LEADER, false, 2, "", NULL);
	/* deposed; a transfer's TimeoutNow skips the dry run */
	STEP(RAFT_FOLLOWER, false, 3, "", NULL);
	STEP(RAFT_CANDIDATE, false, 4, "21437", "{ \"newTerm\" : 4 }");
	/* the vote lost to a higher term */
	STEP(RAFT_FOLLOWER, false, 5, "21447", "{ \"electionTerm\" : 4, \"currentTerm\" : 5 }");
	/* a dry run a leader of the same term ends; one a higher term ends */
	STEP(RAFT_CANDIDATE, true, 5, "4615652,21438", NULL);
	STEP(RAFT_FOLLOWER, false, 5, "21440", NULL);
	STEP(RAFT_CANDIDATE, true, 5, "4615652,21438", NULL);
	STEP(RAFT_FOLLOWER, false, 6, "21439", "{ \"originalTerm\" : 5, \"currentTerm\" : 6 }");
	/* a vote that times out starts a new dry run (Raft's retry) */
	STEP(RAFT_CANDIDATE, true, 6, "4615652,21438", NULL);
	STEP(RAFT_CANDIDATE, false, 7, "21444", NULL);
	STEP(RAFT_CANDIDATE, true, 7, "21448,4615652,21438", "{ \"currentTerm\" : 7 }");
	/* both phases within one call */
	STEP(RAFT_LEADER, false, 8, "21444,21450", "{ \"term\" : 8 }");
	tlog_close();
}

static void
test_single_line(void)
{
	bson_t arr = BSON_INITIALIZER;
	bson_iter_t it;
	const char *last = NULL;

	tlog_open("", false, false);
	repl_election_log_line(21450, "term", 3);
	tlog_get("global", &arr);
	bson_iter_init(&it, &arr);
	while (bson_iter_next(&it))
		last = bson_iter_utf8(&it, NULL);
	TT_ASSERT(last != NULL && strstr(last, "\"c\":\"ELECTION\",\"id\":21450,") != NULL &&
	    strstr(last, "\"msg\":\"Election succeeded, assuming primary role\",\"attr\":{\"term\":3}}") != NULL);
	bson_destroy(&arr);
	tlog_close();
}

/* ---- metrics ---- */

static bool hook_takeover, hook_primary, hook_hands_on;

static void
fake_candidate(void *arg, bool skip_dry_run, repl_election_candidate_t *out)
{
	(void)arg;
	out->reason = hook_hands_on ? REPL_ELECTION_NREASONS : !skip_dry_run ? REPL_ELECTION_TIMEOUT :
	    hook_takeover ? REPL_ELECTION_PRIORITY_TAKEOVER : REPL_ELECTION_STEP_UP;
	out->committed_ts = ((uint64_t)100 << 32) | 3;
	out->committed_t = 1;
	out->seen_ts = ((uint64_t)100 << 32) | 5;
	out->seen_t = 1;
	out->priority = 2;
	out->election_timeout_ms = 4000;
}

static bool
fake_was_primary(void *arg)
{
	(void)arg;
	return hook_primary;
}

static void
mstep(repl_election_log_t *ml, struct raft *mr, int state, bool pre_vote, uint64_t term)
{
	mr->state = (unsigned short)state;
	mr->candidate_state.in_pre_vote = pre_vote;
	mr->current_term = term;
	repl_election_log_observe(ml, mr, 4000);
}

/* the electionMetrics document as relaxed JSON */
static char *
metrics_json(void)
{
	bson_t b = BSON_INITIALIZER;
	char *j;

	repl_election_metrics_append(&b);
	j = bson_as_relaxed_extended_json(&b, NULL);
	bson_destroy(&b);
	return j;
}

#define METRICS(su, pt, et, ft, down) do { \
	char *j_ = metrics_json(), *w_ = bson_strdup_printf( \
	    "{ \"stepUpCmd\" : { \"called\" : %d, \"successful\" : %d }, " \
	    "\"priorityTakeover\" : { \"called\" : %d, \"successful\" : %d }, " \
	    "\"catchUpTakeover\" : { \"called\" : 0, \"successful\" : 0 }, " \
	    "\"electionTimeout\" : { \"called\" : %d, \"successful\" : %d }, " \
	    "\"freezeTimeout\" : { \"called\" : %d, \"successful\" : %d }, " \
	    "\"numStepDownsCausedByHigherTerm\" : %d, \"numCatchUps\" : 0, \"numCatchUpsSucceeded\" : 0, " \
	    "\"numCatchUpsAlreadyCaughtUp\" : 0, \"numCatchUpsSkipped\" : 0, \"numCatchUpsTimedOut\" : 0, " \
	    "\"numCatchUpsFailedWithError\" : 0, \"numCatchUpsFailedWithNewTerm\" : 0, " \
	    "\"numCatchUpsFailedWithReplSetAbortPrimaryCatchUpCmd\" : 0, \"averageCatchUpOps\" : 0.0 }", \
	    su / 10, su % 10, pt / 10, pt % 10, et / 10, et % 10, ft / 10, ft % 10, down); \
	TT_EQ_STR(j_, w_); bson_free(j_); bson_free(w_); } while (0)

static void
test_metrics(void)
{
	static struct raft mr;
	static repl_election_log_t ml;
	static const repl_election_hooks_t hooks = {NULL, fake_candidate, fake_was_primary};
	struct raft_server servers[3] = {{1, "a", RAFT_VOTER}, {2, "b", RAFT_VOTER}, {3, "c", RAFT_VOTER}};
	repl_election_candidate_t single = {0};
	bson_t b = BSON_INITIALIZER;
	char *j;

	tlog_open("", false, false);
	ml.hooks = &hooks;
	mr.configuration.servers = servers;
	mr.configuration.n = 3;
	/* counters are pairs: called * 10 + successful */
	METRICS(0, 0, 0, 0, 0);
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 1);
	/* a dry run is not an election called; its vote is */
	mstep(&ml, &mr, RAFT_CANDIDATE, true, 1);
	METRICS(0, 0, 0, 0, 0);
	mstep(&ml, &mr, RAFT_CANDIDATE, false, 2);
	METRICS(0, 0, 10, 0, 0);
	TT_ASSERT(!repl_election_candidate_append(&b, "m", 2));   /* not won yet */
	mstep(&ml, &mr, RAFT_LEADER, false, 2);
	METRICS(0, 0, 11, 0, 0);
	TT_ASSERT(repl_election_candidate_append(&b, "m", 2));
	TT_ASSERT(!repl_election_candidate_append(&b, "n", 3));
	j = bson_as_relaxed_extended_json(&b, NULL);
	TT_ASSERT(strstr(j, "\"lastElectionReason\" : \"electionTimeout\"") != NULL);
	TT_ASSERT(strstr(j, "\"electionTerm\" : 2, \"lastCommittedOpTimeAtElection\" : "
	    "{ \"ts\" : { \"$timestamp\" : { \"t\" : 100, \"i\" : 3 } }, \"t\" : 1 }") != NULL);
	TT_ASSERT(strstr(j, "\"numVotesNeeded\" : 2, \"priorityAtElection\" : 2.0, \"electionTimeoutMillis\" : 4000 }") != NULL);
	bson_free(j);
	bson_destroy(&b);
	bson_init(&b);
	/* a primary deposed by a higher term */
	hook_primary = true;
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 3);
	METRICS(0, 0, 11, 0, 1);
	/* a takeover it asked for, won; then it hands over (not primary) */
	hook_takeover = true;
	mstep(&ml, &mr, RAFT_CANDIDATE, false, 4);
	mstep(&ml, &mr, RAFT_LEADER, false, 4);
	METRICS(0, 11, 11, 0, 1);
	hook_primary = false;
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 5);
	METRICS(0, 11, 11, 0, 1);
	/* a stepdown's transfer to it, lost */
	hook_takeover = false;
	mstep(&ml, &mr, RAFT_CANDIDATE, false, 6);
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 7);
	METRICS(10, 11, 11, 0, 1);
	TT_ASSERT(!repl_election_candidate_append(&b, "m", 6));
	TT_ASSERT(!repl_election_candidate_append(&b, "m", 4));   /* a later election began */
	/* a leader that loses its quorum (same term): no higher term */
	mstep(&ml, &mr, RAFT_CANDIDATE, true, 7);
	mstep(&ml, &mr, RAFT_LEADER, false, 8);
	hook_primary = true;
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 8);
	METRICS(10, 11, 22, 0, 1);
	/* a frozen (or priority 0) member Raft elects: not counted */
	hook_hands_on = true;
	mstep(&ml, &mr, RAFT_CANDIDATE, true, 8);
	mstep(&ml, &mr, RAFT_CANDIDATE, false, 9);
	mstep(&ml, &mr, RAFT_LEADER, false, 9);
	METRICS(10, 11, 22, 0, 1);
	TT_ASSERT(!repl_election_candidate_append(&b, "m", 9));
	hook_hands_on = false;
	mstep(&ml, &mr, RAFT_FOLLOWER, false, 9);
	/* the single member's prompt election after a freeze */
	single.reason = REPL_ELECTION_FREEZE_TIMEOUT;
	single.term = 10;
	single.votes_needed = 1;
	repl_election_metrics_single(&single);
	METRICS(10, 11, 22, 11, 1);
	TT_ASSERT(repl_election_candidate_append(&b, "m", 10));
	j = bson_as_relaxed_extended_json(&b, NULL);
	TT_ASSERT(strstr(j, "\"lastElectionReason\" : \"singleNodePromptElection\"") != NULL);
	bson_free(j);
	bson_destroy(&b);
	tlog_close();
}

/* The reasons a vote answer gets, in libraft's order of checks, and the
 * section rs.status shows once a vote was answered (not before). */
static void
test_vote_reason(void)
{
	repl_vote_seen_t s = {.req_term = 5, .req_last_index = 40, .req_last_term = 4, .my_term = 5,
	    .my_last_index = 42};
	repl_election_vote_t v = {.granted = true, .term = 5, .date_ms = 1000, .candidate_id = 2,
	    .applied_ts = ((uint64_t)100 << 32) | 3, .applied_t = 4, .max_ts = ((uint64_t)100 << 32) | 7, .max_t = 4,
	    .priority = 1};
	char buf[320];
	bson_t b = BSON_INITIALIZER;
	char *j;

	repl_election_vote_reason(&s, true, buf, sizeof(buf));
	TT_EQ_STR(buf, "");
	/* granted wins over any pre-state: libraft decided */
	s.voted_for = 3;
	s.voted_for_host = "h3:27017";
	repl_election_vote_reason(&s, false, buf, sizeof(buf));
	TT_EQ_STR(buf, "already voted for another candidate (h3:27017) this term (5)");
	/* a request of a newer term: the earlier vote does not count */
	s.req_term = 6;
	repl_election_vote_reason(&s, false, buf, sizeof(buf));
	TT_EQ_STR(buf, "candidate's data is staler than mine. candidate's last Raft log entry: 40 (term 4), my last "
	    "Raft log entry: 42");
	s.req_term = 4;
	repl_election_vote_reason(&s, false, buf, sizeof(buf));
	TT_EQ_STR(buf, "candidate's term (4) is lower than mine (5)");
	/* a leader known, not asked to depose it: libraft's stickiness */
	s.req_term = 5;
	s.knows_leader = true;
	repl_election_vote_reason(&s, false, buf, sizeof(buf));
	TT_EQ_STR(buf, "this member knows a primary in term (5) and the candidate did not ask to depose it");
	s.disrupt_leader = true;
	repl_election_vote_reason(&s, false, buf, sizeof(buf));
	TT_EQ_STR(buf, "already voted for another candidate (h3:27017) this term (5)");
	/* a short buffer is cut, NUL-terminated */
	repl_election_vote_reason(&s, false, buf, 8);
	TT_EQ_STR(buf, "already");

	TT_ASSERT(!repl_election_participant_append(&b, "epm"));   /* never voted: absent, as mongod */
	repl_election_vote_record(&v);
	TT_ASSERT(repl_election_participant_append(&b, "epm"));
	j = bson_as_canonical_extended_json(&b, NULL);
	TT_EQ_STR(j, "{ \"epm\" : { \"votedForCandidate\" : true, \"electionTerm\" : { \"$numberLong\" : \"5\" }, "
	    "\"lastVoteDate\" : { \"$date\" : { \"$numberLong\" : \"1000\" } }, "
	    "\"electionCandidateMemberId\" : { \"$numberInt\" : \"2\" }, \"voteReason\" : \"\", "
	    "\"lastWrittenOpTimeAtElection\" : { \"ts\" : { \"$timestamp\" : { \"t\" : 100, \"i\" : 3 } }, "
	    "\"t\" : { \"$numberLong\" : \"4\" } }, "
	    "\"maxWrittenOpTimeInSet\" : { \"ts\" : { \"$timestamp\" : { \"t\" : 100, \"i\" : 7 } }, "
	    "\"t\" : { \"$numberLong\" : \"4\" } }, "
	    "\"lastAppliedOpTimeAtElection\" : { \"ts\" : { \"$timestamp\" : { \"t\" : 100, \"i\" : 3 } }, "
	    "\"t\" : { \"$numberLong\" : \"4\" } }, "
	    "\"maxAppliedOpTimeInSet\" : { \"ts\" : { \"$timestamp\" : { \"t\" : 100, \"i\" : 7 } }, "
	    "\"t\" : { \"$numberLong\" : \"4\" } }, "
	    "\"priorityAtElection\" : { \"$numberDouble\" : \"1.0\" } } }");
	bson_free(j);
	bson_destroy(&b);
}

int
main(void)
{
	TT_RUN(test_lines);
	TT_RUN(test_single_line);
	TT_RUN(test_metrics);
	TT_RUN(test_vote_reason);
	return tt_finish();
}
