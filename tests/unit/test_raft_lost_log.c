/*
 * test_raft_lost_log.c -- repl/raft_lost_log.h: a leader that receives an
 * AppendEntries result reporting a last index below the match index it
 * holds for that follower (a member whose data was wiped and that answers
 * the snapshot it was sent) forgets the match index, so libraft 0.15.0
 * learns the follower's position from the answer instead of dropping it
 * and keeping the follower in SNAPSHOT for the 30 s install-snapshot
 * timeout (e2e.replset_isync's stall).  Every other message leaves the
 * progress alone.
 */
#include "tt.h"

#include "repl/raft_lost_log.h"

/* A leader (id 1) of term 4 with a 3-member configuration whose progress
 * says follower 3 acknowledged up to 18309 and sits in SNAPSHOT of 18304. */
static void
fixture(struct raft *r, struct raft_progress p[3])
{
	memset(r, 0, sizeof(*r));
	memset(p, 0, 3 * sizeof(*p));
	r->id = 1;
	r->state = RAFT_LEADER;
	r->current_term = 4;
	raft_configuration_init(&r->configuration);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 1, "127.0.0.1:31001", RAFT_VOTER), 0);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 2, "127.0.0.1:31002", RAFT_VOTER), 0);
	TT_EQ_INT(raft_configuration_add(&r->configuration, 3, "127.0.0.1:31003", RAFT_VOTER), 0);
	p[1].match_index = 18309;
	p[1].next_index = 18310;
	p[2].match_index = 18309;
	p[2].next_index = 1;
	p[2].state = 2;   /* libraft's PROGRESS__SNAPSHOT */
	p[2].snapshot_index = 18304;
	r->leader_state.progress = p;
}

static struct raft_message
result_from(raft_id id, raft_term term, raft_index last, raft_index rejected)
{
	static char addr[] = "127.0.0.1:31003";
	struct raft_message msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = RAFT_IO_APPEND_ENTRIES_RESULT;
	msg.server_id = id;
	msg.server_address = addr;
	msg.append_entries_result.term = term;
	msg.append_entries_result.last_log_index = last;
	msg.append_entries_result.rejected = rejected;
	return msg;
}

static void
test_wiped_follower(void)
{
	struct raft r;
	struct raft_progress p[3];
	struct raft_message msg;
	raft_index was = 0;

	/* the snapshot's answer: its index, below what the member acknowledged */
	fixture(&r, p);
	msg = result_from(3, 4, 18304, 0);
	TT_ASSERT(repl_raft_lost_log_reset(&r, &msg, &was));
	TT_EQ_INT((int64_t)was, 18309);
	TT_EQ_INT((int64_t)p[2].match_index, 0);
	/* what libraft then does with it: the match index rises to the
	 * answer's, which reaches the snapshot's index (progressSnapshotDone) */
	TT_ASSERT(p[2].match_index < msg.append_entries_result.last_log_index);
	TT_ASSERT(msg.append_entries_result.last_log_index >= p[2].snapshot_index);
	/* the others untouched, the SNAPSHOT state and next index are libraft's */
	TT_EQ_INT((int64_t)p[1].match_index, 18309);
	TT_EQ_INT(p[2].state, 2);
	TT_EQ_INT((int64_t)p[2].snapshot_index, 18304);

	/* a rejection from an emptied log (its last index 0) */
	raft_configuration_close(&r.configuration);
	fixture(&r, p);
	p[2].state = 1;   /* PIPELINE */
	msg = result_from(3, 4, 0, 18307);
	TT_ASSERT(repl_raft_lost_log_reset(&r, &msg, NULL));
	TT_EQ_INT((int64_t)p[2].match_index, 0);
	raft_configuration_close(&r.configuration);
}

static void
test_left_alone(void)
{
	struct raft r;
	struct raft_progress p[3];
	struct raft_message msg;
	raft_index was = 77;

	fixture(&r, p);
	/* a follower at or past its match index: an ordinary answer */
	msg = result_from(3, 4, 18309, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	msg = result_from(3, 4, 18400, 18400);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	/* a restarted member answering from entries it has not stored yet
	 * (PROBE or PIPELINE, a few entries below): libraft's to handle */
	p[2].state = 0;
	msg = result_from(3, 4, 18307, 18308);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	p[2].state = 1;
	msg = result_from(3, 4, 18307, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	p[2].state = 2;
	/* another term's answer: libraft ignores it or steps down */
	msg = result_from(3, 3, 10, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	msg = result_from(3, 5, 10, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	/* a server outside the configuration, or this leader itself */
	msg = result_from(9, 4, 10, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	msg = result_from(1, 4, 10, 0);
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	/* another kind of message */
	msg = result_from(3, 4, 10, 0);
	msg.type = RAFT_IO_APPEND_ENTRIES;
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	TT_EQ_INT((int64_t)p[2].match_index, 18309);
	TT_EQ_INT((int64_t)was, 77);
	/* not a leader (the progress array belongs to a leader only) */
	msg = result_from(3, 4, 10, 0);
	r.state = RAFT_FOLLOWER;
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	r.state = RAFT_LEADER;
	r.leader_state.progress = NULL;
	TT_ASSERT(!repl_raft_lost_log_reset(&r, &msg, &was));
	TT_EQ_INT((int64_t)p[2].match_index, 18309);
	raft_configuration_close(&r.configuration);
}

int
main(void)
{
	TT_RUN(test_wiped_follower);
	TT_RUN(test_left_alone);
	return tt_finish();
}
