/*
 * raft_member.h -- a member of a replica set of several machines, on
 * canonical/raft (libraft, libuv I/O backend).
 *
 * What it does: runs one Raft server for this member (its id is the
 * member's `_id` + 1 -- Raft ids must be > 0 --, its address the member's
 * host with the port + REPL_RAFT_PORT_OFFSET) on a libuv loop in a thread of
 * its own; every Raft call happens on that thread (other threads hand work
 * over with uv_async).  Raft does what it is good at: electing a leader and
 * keeping a majority-committed log.  The log carries oplog entries, one
 * BSON entry per Raft command entry: there is one log, the primary's oplog.
 *   - Leader: a feeder thread reads the entries the primary wrote to its
 *     own local.oplog.rs (after their local commit, up to the visibility
 *     point, in ts order) and submits them with raft_apply.  The leader
 *     becomes PRIMARY only once every entry of earlier terms is applied
 *     locally (a raft_barrier, then the applier's queue drained).
 *   - Every member: committed entries reach the FSM in log order; they are
 *     queued to an applier thread that applies each one not already in the
 *     local oplog (looked up by ts: idempotent, also across restarts, when
 *     Raft replays its log) with repl/oplog_apply.h, with the primary's ts.
 *   - The majority commit point (w: "majority") is the ts of the last
 *     committed entry that reached the FSM.
 * The role (PRIMARY / SECONDARY, term) is told to repl/replset.h.
 *
 *   - Snapshots compact the Raft log: each is the optime of the last
 *     committed entry, given once the applier has done everything before it
 *     and the journal is synced.  A restored snapshot the local oplog does
 *     not hold (a member behind the kept log, or wiped) is reached through
 *     repl/initial_sync.h before the entries after it are applied.
 *   - A deposed primary's entries that Raft never committed are rolled back
 *     (repl/rollback.h) when the set's next entry is not where they are.
 *   - The primary hands the configuration to a member that lost it
 *     (repl/member_rejoin.h).
 *
 * What it does not do: reconfiguration.
 *
 * Threads: start/stop from one thread; the getters from any thread.
 */
#ifndef TAMGA_REPL_RAFT_MEMBER_H
#define TAMGA_REPL_RAFT_MEMBER_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"
#include "repl/oplog.h"
#include "repl/replset.h"

/* A member's Raft port is its host port + this offset: canonical/raft's
 * libuv transport listens on a socket of its own with its own framing, so
 * it cannot share the wire-protocol port without a transport of ours. */
#define REPL_RAFT_PORT_OFFSET 1000

typedef struct repl_member repl_member_t;

typedef struct repl_member_peer {
	int64_t member_id;            /* the configuration's members[i]._id */
	char host[256];               /* members[i].host */
	char raft_addr[280];          /* host with the port + REPL_RAFT_PORT_OFFSET */
	double priority;              /* members[i].priority (default 1): priority takeover */
	int votes;                    /* members[i].votes (default 1): a Raft voter, else a standby */
} repl_member_peer_t;

/*
 * The peers of a (checked) configuration: *out (bson_free it) gets one row
 * per member in the configuration's order, *n their count, *self_index the
 * row of self_host (-1 when none).  Errors: 93 InvalidReplicaSetConfig when
 * a member's port + REPL_RAFT_PORT_OFFSET is past 65535.
 */
int repl_member_peers(const bson_t *cfg, const char *self_host, repl_member_peer_t **out, int *n, int *self_index,
                      terr_t *err);

typedef struct repl_member_options {
	const char *dir;              /* Raft's folder (created if missing) */
	storage_t *st;
	repl_oplog_t *oplog;
	repl_set_t *rs;               /* told the role */
	const repl_member_peer_t *peers;
	int npeers, self_index;
	bool bootstrap;               /* first start of the set: bootstrap Raft with the peers */
	int election_timeout_ms;      /* settings.electionTimeoutMillis */
	/* called (applier thread, no lock held) each time this member became
	 * PRIMARY, after its new-primary no-op: the commands layer reloads
	 * what secondaries kept of sessions (config.transactions) */
	void (*on_primary)(void *arg);
	void *on_primary_arg;
	/* called (applier thread, no lock held) with each configuration entry
	 * {REPL_MEMBER_CONFIG_KEY: cfg} the set's log delivers, in log order
	 * (repl_member_submit_config): the commands layer stores and adopts it */
	void (*on_config)(void *arg, const bson_t *entry);
	void *on_config_arg;
	bool no_lead;                 /* priority 0: never stays the leader */
	int64_t delay_secs;           /* secondaryDelaySecs */
	/* a forced reconfig (replSetReconfig {force: true}): before Raft starts,
	 * the peers (voters: votes > 0, the others standbys) are forced into
	 * Raft's log as its newest configuration (raft_recover on the kept
	 * folder); Raft then starts from it.  Never with bootstrap. */
	bool force_config;
	/* with force_config: Raft's term is set to this first (> 0), past any
	 * term the members the forced configuration leaves out can have used,
	 * so no entry of its history shares a (ts, t) with theirs */
	uint64_t force_term;
	/* a wiped member handed the configuration by a primary (member_rejoin.h):
	 * repl_raft_vote_floor_for(the primary's term), stored in dir before Raft
	 * starts; no vote and no candidacy in a term <= it (raft_vote_floor.h).
	 * 0: none given (a floor stored earlier still holds) */
	uint64_t vote_floor;
	/* with bootstrap: a one-member set that ran without Raft moves onto it
	 * (commands/cmd_repl_reconfig.c, rs.add() on a set initiated with one
	 * member): Raft's term is set to this (> 1) right after the bootstrap,
	 * before Raft starts -- the set's term + 1: libraft's single voter with
	 * pre-vote leads in the term it starts with --, so every optime `t` on
	 * Raft is above those the set wrote without it.  0: none.  A folder already
	 * bootstrapped (a restart) keeps its own term. */
	uint64_t bootstrap_term;
	/* with vote_floor: the primary's last Raft log index at the hand-over,
	 * stored with it: no vote and no candidacy either until this member's
	 * own log reaches it (raft_vote_floor.h's index part); 0: none */
	uint64_t vote_floor_index;
	/* a member that starts Raft without the set's history (new, or wiped):
	 * the primary's last Raft log index and term at the hand-over, stored in
	 * dir before Raft starts; STARTUP2 until the applier has applied through
	 * it (raft_min_valid.h).  0: none given (one stored earlier still holds) */
	uint64_t min_valid_index, min_valid_term;
} repl_member_options_t;

/* The key of a configuration entry in the set's log: {_tamgaConfig: cfg}
 * (no ts: it is no oplog entry, and never reaches an oplog). */
#define REPL_MEMBER_CONFIG_KEY "_tamgaConfig"

/* Start the member (its loop thread, applier and feeder).  0 with *out, or
 * -1 with err (the Raft error's text).  Options are copied. */
int repl_member_start(const repl_member_options_t *o, repl_member_t **out, terr_t *err);
/* Stop and free (NULL is fine). */
void repl_member_stop(repl_member_t *m);
/* The leader's rejoin thread handed the configuration to member member_id
 * with this vote floor and index part (raft_vote_floor.h): a stepdown's or
 * a hand-on's leadership transfer of this leader does not pick it while its
 * candidacy would not pass the floor (a term <= floor, or its match index
 * below index). */
void repl_member_note_vote_floor(repl_member_t *m, int64_t member_id, uint64_t floor, uint64_t index);
/* This member's Raft term and the index of its log's last entry, read on
 * its loop thread (so after anything the caller saw happen): 0 when it is
 * the Raft leader and PRIMARY, -1 otherwise (or the loop did not answer by
 * deadline_us, tm_now_us()'s clock).  The hand-over's vote floor
 * (member_rejoin.h). */
int repl_member_lead_point(repl_member_t *m, uint64_t *term, uint64_t *last_index, int64_t deadline_us);
/* Stop m's threads and its Raft server (its files closed) but keep m
 * allocated: a reader that took the pointer before it was replaced still
 * gets m's last values and its waits return at once; repl_member_stop
 * frees it later (and does nothing else for a halted member). */
void repl_member_halt(repl_member_t *m);

/* serverStatus().metrics.repl.apply of this process (every member it ran):
 * entries a secondary's applier applied (not those it skipped as already in
 * its oplog), the applier's rounds that applied some, and their time. */
typedef struct repl_member_apply_metrics {
	uint64_t ops, batches, batches_total_ms;
	uint64_t batch_size;   /* the entries of those rounds, skipped ones too (mongod's batchSize) */
} repl_member_apply_metrics_t;
void repl_member_apply_metrics(repl_member_apply_metrics_t *out);
/* serverStatus().metrics.repl.buffer.apply of member m (NULL: 0, 0): the
 * committed entries queued for its applier and not yet taken, and their
 * bytes (mongod's count and sizeBytes; the queue has no bound, so there is
 * no maxCount / maxSizeBytes to report). */
void repl_member_apply_buffer(repl_member_t *m, uint64_t *count, uint64_t *bytes);

/* The ts of the newest majority-committed entry (0: none yet). */
repl_ts_t repl_member_committed_ts(repl_member_t *m);
/* Where a majority read reads: the commit point, but not past the newest
 * entry of the set's log the applier applied or skipped (a deposed
 * primary's uncommitted entries stay in its data until its rollback; the
 * set's later entries can put the commit point past them meanwhile). */
repl_ts_t repl_member_majority_read_ts(repl_member_t *m);
/* The newest entry written locally (or applied) by now (0: none). */
repl_ts_t repl_member_local_last_ts(repl_member_t *m);
/* Wait until the newest entry written or applied locally is no longer
 * `seen` (an applier round published entries), m stops, or deadline_us
 * (tm_now_us's clock) passes; returns that newest entry's ts.  What a
 * secondary's position reporter waits on (commands/cmd_repl_heartbeat.c's
 * replSetUpdatePosition), woken by the applier's own broadcast. */
repl_ts_t repl_member_wait_local_moved(repl_member_t *m, repl_ts_t seen, int64_t deadline_us);
/*
 * Wait until the entry (ts, t) -- this member's own, written as primary in
 * term t -- is majority-committed: 0; 1 when the deadline (tm_now_us's
 * clock; 0 = none) passed; 2 when this member stopped being the leader
 * meanwhile or the set committed an entry of a later term (the entry may or
 * may not be in the set's log: a new leader's entries can pass its ts while
 * it is being rolled back).  Committed means an entry of term t at or past
 * ts reached the FSM: only term t's leader wrote such entries, after this
 * one, so Raft's log holds this one before it -- and the applier passed ts
 * (repl_member_majority_read_ts reaches it, as mongod's wait for the
 * committed snapshot).
 */
int repl_member_wait_committed(repl_member_t *m, repl_ts_t ts, int64_t t, int64_t deadline_us);

/*
 * w: N: wait until n members hold the entry with ts `ts`: this member (the
 * primary, which wrote and applied it) and the others whose Raft log holds
 * it durably (the leader's match index; they apply it in order next).
 * Returns as repl_member_wait_committed.
 */
int repl_member_wait_count(repl_member_t *m, repl_ts_t ts, int n, int64_t deadline_us);

/*
 * Compact the set's log now (the primary of a one-member set moved onto
 * Raft, before its first member is added): no-op oplog entries are
 * written and committed until Raft took a snapshot (its threshold lowered to
 * one entry meanwhile, SNAPSHOT_THRESHOLD again after), so a member added
 * from then on cannot replay the log from its first entry -- which lacks
 * the data written before the move -- and gets the snapshot and copies the
 * data instead (initial_sync.h).  The snapshot covers at least one oplog
 * entry of Raft's own (its ts is in this member's oplog).  Nothing is
 * written when Raft holds a snapshot already whose configuration names this
 * member (libraft sends it to any member whose log starts empty); one whose
 * configuration lacks it (taken when another member led, or before this
 * one joined: the moved set's snapshot once its founding member is gone)
 * is replaced by a new one, so a member added gets the leader's committed
 * configuration with the data.  stale_only: only that replacement, nothing
 * when Raft holds no snapshot (the log replays from its start).  0; -1
 * with err: 10107 when this member is not primary, 262 ExceededTimeLimit
 * when no snapshot was taken by deadline_us (the log is left as it is).
 */
int repl_member_compact(repl_member_t *m, bool stale_only, int64_t deadline_us, terr_t *err);

/*
 * replSetStepDown: stop taking writes at once and hand the leadership to
 * the most up-to-date follower (raft_transfer).  On success the member is
 * frozen until until_ms (wall; mongod sets its stepdown period as a freeze,
 * repl_member_freeze): no election, no priority takeover, and a leadership
 * that reaches it is handed on.  0 once another member leads; 10107 when not
 * primary; 262 ExceededTimeLimit with mongod's message when no follower took
 * over by deadline_us (the member then takes writes again) -- unless force:
 * then it is frozen and SECONDARY at once and goes on handing the leadership
 * on while frozen (no primary meanwhile when nobody can take it), as
 * mongod's forced stepdown without a caught-up secondary.
 */
int repl_member_step_down(repl_member_t *m, int64_t deadline_us, int64_t until_ms, bool force, terr_t *err);
/* replSetFreeze {replSetFreeze: secs}: secs > 0 keeps this member from
 * standing for election (Raft's election timeout out of reach, as in
 * STARTUP2; a leadership that reaches it handed on; no priority takeover)
 * until secs from now or a later end already set; 0 unfreezes (and ends a
 * stepdown period).  10 NotSecondary with mongod's message when this member
 * is primary (or the Raft leader about to become it). */
int repl_member_freeze(repl_member_t *m, int64_t secs, terr_t *err);
/* The primary hands the leadership to member_id (a priority takeover it
 * asked for, member_takeover.h) with Raft's leadership transfer: it stops
 * taking writes at once and takes them again if the transfer fails.  0 when
 * the transfer started; errors: 10107 not primary, 11602 term is not this
 * primary's, 2 when member_id is not a member whose priority is higher
 * than this member's. */
int repl_member_transfer_to(repl_member_t *m, int64_t member_id, uint64_t term, terr_t *err);

/* What replSetGetStatus shows of each member. */
typedef struct repl_member_view {
	int64_t member_id;
	bool self, leader, reachable;
	/* reachable false and heard false: this member has not heard of it
	 * since its role began (a leader just elected, within an election
	 * timeout; a follower, of any member but its leader) -- mongod's
	 * member not yet reached, shown UNKNOWN (state 6, health -1) */
	bool heard;
	int64_t last_contact_ms;      /* wall time the leader last heard of it (0: unknown) */
} repl_member_view_t;
/* Fill up to max rows (the peers' order); returns the count.  *leader_index
 * gets the leader's row (-1: none known). */
int repl_member_view(repl_member_t *m, repl_member_view_t *rows, int max, int *leader_index);

/* ---- reconfiguration (raft_reconfig.h builds on these) ---- */

struct raft;
/*
 * Run fn(raft, arg) once on the loop thread (every raft_* call belongs
 * there) and return once it ran: 0, or -1 when it did not run by
 * deadline_us (tm_now_us's clock) or the member stops.  fn must not block;
 * the raft_* calls it makes report through their own callbacks.  One call
 * at a time: a second waits for the first to run.
 */
int repl_member_on_loop(repl_member_t *m, void (*fn)(struct raft *r, void *arg), void *arg, int64_t deadline_us);
/* The set's members changed (a configuration entry applied): the peers'
 * rows, this member's row, whether it may lead (priority > 0, not
 * delayed: else it hands the leadership on whenever Raft elects it) and
 * its apply delay. */
void repl_member_reconfigure(repl_member_t *m, const repl_member_peer_t *peers, int n, int self_index, bool no_lead,
                             int64_t delay_secs);
/* The primary appends entry ({REPL_MEMBER_CONFIG_KEY: cfg}) to the set's
 * log; every member's on_config sees it once committed.  -1 when this
 * member is not primary. */
int repl_member_submit_config(repl_member_t *m, const bson_t *entry);

#endif
