/*
 * raft_lost_log.c -- a leader forgets what a follower that lost its log had
 * acknowledged (see raft_lost_log.h).
 */
#include "repl/raft_lost_log.h"

#include <stddef.h>

/* libraft 0.15's progress states (src/progress.h, not in raft.h) */
#define PROGRESS_SNAPSHOT 2

bool
repl_raft_lost_log_reset(struct raft *r, const struct raft_message *msg, raft_index *was)
{
	const struct raft_append_entries_result *res;
	struct raft_progress *p = NULL;

	if (msg->type != RAFT_IO_APPEND_ENTRIES_RESULT || r->state != RAFT_LEADER || r->leader_state.progress == NULL)
		return false;
	res = &msg->append_entries_result;
	/* an answer of another term is one libraft ignores or steps down on */
	if (res->term != r->current_term || msg->server_id == r->id)
		return false;
	for (unsigned i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == msg->server_id)
			p = &r->leader_state.progress[i];
	if (p == NULL || res->last_log_index >= p->match_index)
		return false;
	/* only where libraft would stall: an answer to the snapshot it sends,
	 * or a log emptied down to the bootstrap configuration entry; a member
	 * answering from entries it has not stored yet (after a restart) keeps
	 * its match index -- resetting it there made the leader rewrite the
	 * member's log from its start, and a kill -9 during that rewrite left
	 * two overlapping closed segments libraft refuses to start from
	 * (e2e.replset_jepsen, once) */
	if (p->state != PROGRESS_SNAPSHOT && res->last_log_index > 1)
		return false;
	if (was != NULL)
		*was = p->match_index;
	p->match_index = 0;
	return true;
}
