/*
 * test_election_log.c -- repl/election_log.c: the ELECTION lines mongod
 * writes, from each change of a (hand-set) Raft state: a won election
 * through the pre-vote, a transfer that skips it, dry runs and votes lost
 * (superseded or not), a retry, and nothing when nothing moved.
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

int
main(void)
{
	TT_RUN(test_lines);
	TT_RUN(test_single_line);
	return tt_finish();
}
