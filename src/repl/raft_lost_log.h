/*
 * raft_lost_log.h -- the leader's view of a follower that lost its Raft log
 * (its data folder wiped, then started again under the same member _id and
 * so the same Raft server id).  canonical/raft 0.15.0 never lowers a
 * follower's match index while it stays leader: the emptied member's
 * answer to the snapshot it is sent reports the snapshot's index, lower
 * than the match index it acknowledged before the wipe, and libraft's
 * replicationUpdate drops an answer that does not raise the match index
 * before it looks at the snapshot state.  The follower's progress stays
 * in SNAPSHOT (every heartbeat it rejects is ignored as stale) until the
 * install-snapshot timeout, 30 s: the member copies the data and then
 * receives nothing, so `w: 3` waits that long (e2e.replset_isync's
 * occasional timeout).  The stale match index also counted entries the
 * member no longer holds for `w: N` (raft_member.c reads it) and for the
 * hand-on target of a leader that may not stay so.
 *
 * Every AppendEntries result a leader receives goes through here before
 * libraft sees it: one that reports a last index below the sender's match
 * index comes from a log shorter than what it acknowledged, and the match
 * index goes back to 0 (nothing is known to be replicated there), so libraft
 * learns the follower's position again from this very answer (a snapshot's
 * answer ends the SNAPSHOT state; a rejection makes it probe or send the
 * snapshot).  Lowering a match index only makes the leader wait longer:
 * libraft's commit index never goes back.  libraft 0.15.0 itself answers
 * below what it acknowledged in one more case: a follower sent a snapshot
 * whose entries it holds in memory answers "have all entries" at once,
 * and its next rejection reports its last *stored* index, which may be
 * lower until they are written (seen after a kill -9 and a restart,
 * e2e.replset_sync).  That answer is left to libraft: the reset is made
 * only while the follower's progress is in SNAPSHOT or its reported log is
 * empty but for the bootstrap configuration entry (index 1) -- a reset of
 * the restarted member's match index had the leader resend its log from
 * the start, and a kill -9 in the middle left two overlapping closed
 * segments libraft then refused to start from (e2e.replset_jepsen, once).
 *
 * Not here: the member's own rejoin (member_rejoin.h), what the member does
 * with the snapshot (member_recover.h).
 */
#ifndef TAMGA_REPL_RAFT_LOST_LOG_H
#define TAMGA_REPL_RAFT_LOST_LOG_H

#include <stdbool.h>

#include <raft.h>

/* Before `r` (a leader, on its loop thread) receives `msg`: true when msg
 * is an AppendEntries result of r's term from a server of its
 * configuration whose reported last index is below the match index r
 * holds for it, while that server's progress is in SNAPSHOT or the last
 * index is at most 1; that match index is then set to 0 and *was (when not
 * NULL) to its value before.  false, and nothing changed, otherwise. */
bool repl_raft_lost_log_reset(struct raft *r, const struct raft_message *msg, raft_index *was);

#endif
