/*
 * raft_member.c -- the Raft server of a replica-set member of several
 * machines (see raft_member.h for what and why).  Three threads:
 *   loop     the libuv loop: every raft_* call, the FSM callbacks, a 50 ms
 *            timer that watches the Raft state (leader or not, term, who
 *            was heard from) and two uv_async handles (submit, stop);
 *   applier  applies committed entries (queued by the FSM callback) in log
 *            order, each in one storage transaction with the primary's ts;
 *   feeder   while PRIMARY, reads the local oplog after the last entry it
 *            handed over and queues new entries for raft_apply.
 */
#include "repl/raft_member.h"

#include "auth/auth_member.h"
#include "repl/member_tls.h"
#include "repl/raft_auth.h"
#include "repl/raft_tls.h"
#include "repl/raft_lost_log.h"
#include "repl/raft_segment_fill.h"
#include "repl/raft_send_guard.h"
#include "repl/raft_min_valid.h"
#include "repl/raft_vote_floor.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/failpoint.h"
#include "common/log.h"
#include "common/opctx.h"
#include "repl/oplog_apply.h"
#include "repl/member_recover.h"
#include "repl/member_rejoin.h"
#include "repl/member_takeover.h"
#include "repl/election_log.h"

/* Entries handed to raft_apply at once, at most. */
#define FEED_BATCH 256
/* A Raft snapshot every this many entries (each syncs the journal on the
 * loop thread: every 1024 cut batched majority writes to 0.18 of w: 1, every
 * 8192 gives 0.51), and as many kept behind it for
 * members that lag (one that falls past them gets the snapshot, and then
 * fetches what it lacks from the leader's oplog or copies the data:
 * repl/initial_sync.h). */
#define SNAPSHOT_THRESHOLD 8192
#define SNAPSHOT_TRAILING 8192
/* How long the loop thread waits, at a snapshot, for the applier to catch
 * up with what Raft handed it (else RAFT_BUSY: Raft asks again later). */
#define SNAPSHOT_WAIT_MS 500
/* ... and only when it is at most this many entries behind */
#define SNAPSHOT_WAIT_LAG 1024

/* A queue of BSON entries (copied bytes). */
typedef struct entry_node {
	struct entry_node *next;
	repl_ts_t ts;
	int64_t t;                    /* the entry's term (its `t`), -1: none */
	bool snapshot;                /* a Raft snapshot restored: the set's log up to (ts, t) */
	/* the feeder's: the entry already in a raft_malloc'ed buffer padded to
	 * 8 bytes (raft_apply takes it as it is), so the loop thread copies
	 * nothing (a transaction's chain may be tens of MB); NULL: none */
	void *rbuf;
	uint32_t len;
	uint8_t data[];
} entry_node_t;

typedef struct entry_queue {
	entry_node_t *head, *tail;
	size_t count;
	uint64_t bytes;               /* the entries' lengths (serverStatus' buffer.apply) */
} entry_queue_t;

struct repl_member {
	repl_member_options_t o;
	repl_member_peer_t *peers;
	char *dir;

	/* loop thread */
	pthread_t loop_thread;
	uv_loop_t loop;
	uv_async_t submit_async, stop_async;
	uv_timer_t watch_timer;
	uv_prepare_t wake_prep;       /* on_wake_prep: before each wait of the loop */
	bool wake_pending;            /* m->lock: broadcast m->cond at the end of this turn */
	struct raft_uv_transport transport;
	struct raft_uv_transport tls_transport;    /* TLS relay (raft_tls.h) over transport */
	struct raft_uv_transport auth_transport;   /* transport behind the keyFile handshake (raft_auth.h) */
	bool use_tls, use_auth;
	struct raft_io io;
	/* the I/O's own start and Raft's receive callback, wrapped by the
	 * dropRaftMessagesFrom fail point (fault_recv) */
	int (*io_start)(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv);
	raft_io_recv_cb raft_recv;
	raft_io_tick_cb raft_tick;
	repl_election_log_t elog;     /* loop thread: the election lines' view of Raft */
	/* loop thread: a real vote request read, until libraft answers it
	 * (electionParticipantMetrics, vote_seen/vote_answered) */
	repl_vote_seen_t vote_seen;
	raft_id vote_candidate;       /* 0: none pending */
	char vote_voted_host[256];
	/* the I/O's own send, behind the guard of raft_send_guard.h */
	repl_raft_send_fn io_send;
	repl_election_hooks_t elog_hooks;
	struct raft_fsm fsm;
	struct raft raft;
	struct raft_barrier barrier;
	bool barrier_pending;
	/* replSetStepDown: Raft's leadership transfer */
	struct raft_transfer transfer;
	bool transfer_requested, transfer_pending;
	raft_id hand_on_last;         /* loop thread, m->lock: hand_on_target's last pick */
	raft_id prev_leader;          /* loop thread, m->lock: the last leader this member followed */
	bool leader_seen;             /* loop's view: leader in leader_term */
	uint64_t leader_term;
	int start_rc;                 /* set by the loop thread before `started` */
	char start_msg[256];
	bool started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* the applier's own wake-up: the FSM signals it for each committed
	 * entry without waking every thread that waits on cond (w: "majority"
	 * waiters need the applier's position, which it broadcasts once per
	 * list it took) */
	pthread_cond_t apply_cond;
	entry_queue_t to_apply;       /* committed, for the applier */
	entry_queue_t to_submit;      /* from the feeder, for raft_apply */
	uint64_t enqueued, applied;   /* entries queued to / done by the applier */
	/* ROLLBACK or STARTUP2 while the applier rolls back or copies data
	 * (0: none): what replset is told instead of SECONDARY */
	repl_member_state_t busy_state;
	uint64_t drain_target;        /* PRIMARY once applied reaches it */
	bool draining;
	uint64_t drain_term;
	bool primary;                 /* role told to replset */
	uint64_t term;
	bool stopping, failed;
	bool halted;   /* repl_member_halt ran: threads gone, memory kept */
	repl_ts_t committed_ts, local_last_ts, fed_ts;
	/* the newest entry of the set's log the applier applied (or skipped as
	 * already local): majority reads read at most there, so a deposed
	 * primary's own entries, past the set's, are never read as committed
	 * while its rollback is pending */
	repl_ts_t set_ts;
	int64_t committed_t;          /* the term of the entry at committed_ts */
	/* the previous entry of the set's log done (by the applier, or by the
	 * FSM for a primary's own): the rollback check starts after it */
	repl_ts_t prev_ts;
	bool have_prev;
	int leader_index;             /* row in peers, -1 */
	int64_t last_contact_ms[REPL_MAX_MEMBERS];
	bool reachable[REPL_MAX_MEMBERS];
	/* heard of since this role began (repl_member_view_t.heard) */
	bool heard[REPL_MAX_MEMBERS];
	/* w: N on the leader: the Raft index of the entries it submitted
	 * (a ring of the last SUB_RING) and each peer's match index */
	struct { repl_ts_t ts; uint64_t idx; } sub[4096];
	unsigned sub_next;
	uint64_t match[REPL_MAX_MEMBERS];

	pthread_t applier_thread, feeder_thread;

	/* reconfiguration (raft_reconfig.c): a call the loop thread runs at its
	 * next wake, this member's priority-0 / delayed role */
	void (*loop_fn)(struct raft *r, void *arg);
	void *loop_arg;
	bool loop_running;            /* loop_fn runs now (without m->lock) */
	bool no_lead;                 /* never stays the leader (priority 0) */
	storage_session_t *snap_session;  /* loop thread: fsm_snapshot's journal sync */
	int64_t delay_secs;           /* secondaryDelaySecs: apply that late */
	repl_rejoin_t *rejoin;        /* the primary's hand-over to wiped members */
	unsigned source_tries;        /* host_source's turn */
	repl_takeover_t *takeover;    /* priority takeover (member_takeover.h) */
	raft_id transfer_to;          /* the next transfer's target (0: Raft picks) */
	bool election_hold;           /* loop: Raft's election timeout set out of reach (STARTUP2) */
	bool stranger_logged;         /* loop: from_stranger's line written once */
	bool snapshot_self;           /* loop: Raft's last snapshot was taken here with this member in its
	                               * committed configuration (false: restored -- at a start, or a
	                               * leader's -- so its configuration may lack this member) */
	raft_id followed_id;          /* loop: the leader this member last took entries or a snapshot from */
	raft_term followed_term;      /* loop: ... in this term (0: none) */
	uint64_t lead_term;           /* loop: the term this member last led in */
	int64_t lead_since_ms;        /* loop: when it first saw itself lead lead_term (wall) */
	int64_t frozen_until_ms;      /* replSetFreeze / stepdown period (wall; 0: none) */
	/* a wiped member's vote floor (raft_vote_floor.h; {0, 0}: none): no
	 * vote and no candidacy in a term <= its term, nor before its log
	 * reaches its index; the loop thread's, set before (the index part
	 * dropped by the loop thread once reached: floor_check) */
	repl_vote_floor_t vote_floor;
	uint64_t vote_floor_logged;   /* loop: the last term whose refusal was logged */
	bool vote_floor_short_logged; /* loop: a refusal for the short log was logged */
	/* the leader's: the vote floor of each member its rejoin thread handed
	 * the configuration to (m->lock): no transfer to one whose candidacy
	 * would be of a term <= its floor, or whose match index is below the
	 * index part (it would not stand: the transfer fails) */
	struct { raft_id id; uint64_t floor, index; } peer_floor[REPL_MAX_MEMBERS];
	int npeer_floor;
	/* a member started without the set's history: STARTUP2 until the
	 * applier applied through min_valid (raft_min_valid.h; {0, 0}: none or
	 * reached).  m->lock; the loop thread sets mv_target (the entries queued
	 * once Raft handed the FSM the entries through it) and drops it */
	repl_min_valid_t min_valid;
	bool mv_later_term;           /* fsm_apply: an entry of a term > min_valid.term handed over */
	bool mv_target_set;
	uint64_t mv_target;
	/* after a rollback by refetch: the source's optime at the fetch
	 * (mongod's minValid); RECOVERING until the applier applied an entry at
	 * or past it (the refetched documents are newer than the rest of the
	 * data until then); 0: none (m->lock; in memory only) */
	repl_ts_t rb_min_valid;
};

/* A member copying data (STARTUP2) starts no election (mongod never elects
 * one): its Raft election timeout is this long meanwhile.  It votes while it
 * hears from a leader.  A frozen member (replSetFreeze, a stepdown period)
 * keeps its timeout: libraft 0.15 grants no vote while it remembers a leader,
 * and only its own timeout's expiry forgets a dead one, so a frozen member
 * held this way could leave a set of three without a majority after a
 * failover; it may win a Raft election instead, but hands the leadership on
 * at once and is never PRIMARY (on_watch). */
#define STARTUP2_ELECTION_TIMEOUT_MS 3600000u

static raft_id transfer_pick_locked(repl_member_t *m, bool *none);
static bool floor_log_held(repl_member_t *m);
static void floor_check(repl_member_t *m);

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
log_msg(char sev, int id, const char *msg, const char *detail)
{
	bson_t attr;

	bson_init(&attr);
	if (detail != NULL)
		BSON_APPEND_UTF8(&attr, "detail", detail);
	tlog(sev, "REPL", id, msg, &attr);
	bson_destroy(&attr);
}

/* Wait on m->cond (m->lock held) for at most ms milliseconds: the loops
 * that wait re-check their condition on every wake and every period. */
static void
cond_wait_ms(repl_member_t *m, int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)ms * 1000 * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&m->cond, &m->lock, &until);
}

/* Wake everything that waits on m (under m->lock): cond's waiters and the
 * applier. */
static void
wake(repl_member_t *m)
{
	pthread_cond_broadcast(&m->cond);
	pthread_cond_signal(&m->apply_cond);
}

/* What a member that is not primary and whose applier did not stop shows
 * (m->lock): the applier's ROLLBACK/STARTUP2, else STARTUP2 while short of
 * its minValid (raft_min_valid.h), else RECOVERING while short of a
 * rollback's minValid (mongod's, after a rollback), else SECONDARY. */
static repl_member_state_t
follower_state_locked(const repl_member_t *m)
{
	return m->busy_state != 0 ? m->busy_state : m->min_valid.index != 0 ? REPL_STATE_STARTUP2 :
	    m->rb_min_valid != 0 ? REPL_STATE_RECOVERING : REPL_STATE_SECONDARY;
}

/* Whether the member acquires the set's data (STARTUP2 by either path):
 * never elected, as mongod's STARTUP2 (m->lock). */
static bool
acquiring_locked(const repl_member_t *m)
{
	return m->busy_state == REPL_STATE_STARTUP2 || m->min_valid.index != 0;
}

/* The applier's idle wait (under m->lock). */
static void
apply_wait_ms(repl_member_t *m, int ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)ms * 1000 * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&m->apply_cond, &m->lock, &until);
}

/* ---- queues ----------------------------------------------------------------------------- */

/* The (ts, t) of the BSON entry at data (len bytes): ts 0 when it has none,
 * t -1; *op (when op is not NULL) the first letter of its `op`, 0 when
 * none.  One walk over the entry's top-level fields, stopped once all are
 * found (two bson_iter_init_find walked it twice from the start: 2,800
 * instructions of an insert's entry, three times per entry on a primary). */
static void
entry_optime(const uint8_t *data, uint32_t len, repl_ts_t *ts, int64_t *t, char *op)
{
	bson_t b;
	bson_iter_t it;
	bool have_ts = false, have_t = false, have_op = op == NULL;

	*ts = 0;
	*t = -1;
	if (op != NULL)
		*op = 0;
	if (!bson_init_static(&b, data, len) || !bson_iter_init(&it, &b))
		return;
	while (!(have_ts && have_t && have_op) && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (key[0] == 't' && key[1] == 's' && key[2] == '\0' && !have_ts) {
			have_ts = true;
			if (BSON_ITER_HOLDS_TIMESTAMP(&it)) {
				uint32_t s, i;
				bson_iter_timestamp(&it, &s, &i);
				*ts = REPL_TS(s, i);
			}
		} else if (key[0] == 't' && key[1] == '\0' && !have_t) {
			have_t = true;
			if (BSON_ITER_HOLDS_NUMBER(&it))
				*t = bson_iter_as_int64(&it);
		} else if (key[0] == 'o' && key[1] == 'p' && key[2] == '\0' && !have_op) {
			have_op = true;
			if (BSON_ITER_HOLDS_UTF8(&it))
				*op = bson_iter_utf8(&it, NULL)[0];
		}
	}
	if (*ts == 0)
		*t = -1;   /* as before: a t is read only with a ts */
}

/* A node holding a copy of the entry's len bytes, with the given optime. */
static entry_node_t *
node_with(const uint8_t *data, uint32_t len, repl_ts_t ts, int64_t t)
{
	entry_node_t *n = bson_malloc(sizeof(*n) + len);

	n->next = NULL;
	n->len = len;
	n->snapshot = false;
	n->rbuf = NULL;
	n->ts = ts;
	n->t = t;
	memcpy(n->data, data, len);
	return n;
}

static entry_node_t *
node_new(const uint8_t *data, uint32_t len)
{
	repl_ts_t ts;
	int64_t t;

	entry_optime(data, len, &ts, &t, NULL);
	return node_with(data, len, ts, t);
}

static void
queue_push(entry_queue_t *q, entry_node_t *n)
{
	if (q->tail != NULL)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
	q->count++;
	q->bytes += n->len;
}

static entry_node_t *
queue_take_all(entry_queue_t *q)
{
	entry_node_t *h = q->head;

	q->head = q->tail = NULL;
	q->count = 0;
	q->bytes = 0;
	return h;
}

static void
queue_free(entry_node_t *n)
{
	while (n != NULL) {
		entry_node_t *next = n->next;
		if (n->rbuf != NULL)
			raft_free(n->rbuf);
		bson_free(n);
		n = next;
	}
}

/* ---- peers ------------------------------------------------------------------------------ */

int
repl_member_peers(const bson_t *cfg, const char *self_host, repl_member_peer_t **out, int *n, int *self_index,
                  terr_t *err)
{
	bson_iter_t it, m, f;
	repl_member_peer_t *p = NULL;
	int cnt = 0;

	*out = NULL;
	*n = 0;
	*self_index = -1;
	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "the configuration has no members");
	p = bson_malloc0(sizeof(*p) * REPL_MAX_MEMBERS);
	while (bson_iter_next(&m) && cnt < REPL_MAX_MEMBERS) {
		repl_member_peer_t *r = &p[cnt];
		const char *colon;
		char *end;
		long port;
		if (!bson_iter_recurse(&m, &f))
			continue;
		r->priority = 1;
		r->votes = 1;
		while (bson_iter_next(&f)) {
			if (strcmp(bson_iter_key(&f), "_id") == 0)
				r->member_id = bson_iter_as_int64(&f);
			else if (strcmp(bson_iter_key(&f), "priority") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
				r->priority = bson_iter_as_double(&f);
			else if (strcmp(bson_iter_key(&f), "votes") == 0 && BSON_ITER_HOLDS_NUMBER(&f))
				r->votes = (int)bson_iter_as_int64(&f);
			else if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				bson_strncpy(r->host, bson_iter_utf8(&f, NULL), sizeof(r->host));
		}
		colon = strrchr(r->host, ':');
		port = colon != NULL ? strtol(colon + 1, &end, 10) : 27017;
		if (colon == NULL)
			end = (char *)"";
		if (*end != '\0' || port <= 0 || port > 65535) {
			terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "member host %s has no valid port", r->host);
			bson_free(p);
			return -1;
		}
		if (port + REPL_RAFT_PORT_OFFSET > 65535) {
			terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG,
			    "member %s: its replication port (the port + %d) would be past 65535; use a port up to %d",
			    r->host, REPL_RAFT_PORT_OFFSET, 65535 - REPL_RAFT_PORT_OFFSET);
			bson_free(p);
			return -1;
		}
		snprintf(r->raft_addr, sizeof(r->raft_addr), "%.*s:%ld", colon != NULL ? (int)(colon - r->host) :
		    (int)strlen(r->host), r->host, port + REPL_RAFT_PORT_OFFSET);
		if (self_host != NULL && strcmp(self_host, r->host) == 0)
			*self_index = cnt;
		cnt++;
	}
	*out = p;
	*n = cnt;
	return 0;
}

/* ---- role ----------------------------------------------------------------------------------- */

/* Tell replset (under m->lock). */
static void
role_set_locked(repl_member_t *m, bool primary, uint64_t term)
{
	if (m->primary == primary && m->term == term)
		return;
	m->primary = primary;
	m->term = term;
	if (primary) {
		m->fed_ts = m->local_last_ts;
		/* a one-member set (forced or removed down to one) restarted: its
		 * writes were acknowledged by this member alone, and those the
		 * feeder had not handed to Raft before the stop are only in the
		 * oplog.  The set's log takes them now (no other member can hold
		 * a history of its own), so a member added later gets them too */
		if (m->o.npeers == 1 && m->set_ts != 0 && m->set_ts < m->local_last_ts)
			m->fed_ts = m->set_ts;
	}
	/* a member whose applier stopped stays RECOVERING */
	repl_set_raft_role(m->o.rs, m->failed ? REPL_STATE_RECOVERING : primary ? REPL_STATE_PRIMARY :
	    follower_state_locked(m), (int64_t)term);
	wake(m);
}

/* ---- FSM (loop thread) ----------------------------------------------------------------- */

/* The leader's view of each peer's match index (loop thread, m->lock). */
static void
match_snapshot_locked(repl_member_t *m)
{
	bool changed = false;

	if (raft_state(&m->raft) != RAFT_LEADER || m->raft.leader_state.progress == NULL)
		return;
	for (unsigned k = 0; k < m->raft.configuration.n; k++)
		for (int i = 0; i < m->o.npeers; i++)
			if ((raft_id)(m->peers[i].member_id + 1) == m->raft.configuration.servers[k].id)
				if (m->match[i] != m->raft.leader_state.progress[k].match_index) {
					m->match[i] = m->raft.leader_state.progress[k].match_index;
					changed = true;
				}
	if (changed)
		m->wake_pending = true;   /* w: N waiters, before the loop waits again (on_wake_prep) */
}

/*
 * A primary's own entry committed with nothing before it left to apply
 * (under m->lock, loop thread): done here, as the applier would skip it --
 * only this term's leader writes entries of the term and its feeder read
 * this one from the local oplog -- so a w: "majority" waiter is woken from
 * Raft's commit without a hand-over to the applier thread.  false: queue
 * it for the applier.
 */
static bool
own_done_locked(repl_member_t *m, repl_ts_t ts, int64_t t)
{
	if (!m->primary || m->failed || m->draining || m->busy_state != 0 || m->delay_secs > 0 ||
	    m->applied != m->enqueued || ts == 0 || t != (int64_t)m->term || ts > m->fed_ts)
		return false;
	m->enqueued++;
	m->applied++;
	m->prev_ts = ts;
	m->have_prev = true;
	if (ts > m->local_last_ts)
		m->local_last_ts = ts;
	if (ts > m->set_ts) {
		m->set_ts = ts;
		repl_oplog_pin_oldest(m->o.oplog, m->set_ts < m->committed_ts ? m->set_ts : m->committed_ts);
	}
	return true;
}

/*
 * Raft hands the FSM each committed entry on the loop thread, one call per
 * entry (a hundred for a batched insert).  The waiters on m->cond are woken
 * at the newest entry the feeder handed over, else once per turn of the
 * loop (on_wake_prep, before the loop waits for I/O again: after every
 * callback of the turn that committed entries), not once per entry: a w: "majority" writer woken
 * at each entry of its batch took m->lock from this thread a hundred times
 * to find its own entry not there yet.  A primary's own entries, done here,
 * are neither copied nor handed to the applier, which is signalled only
 * when something is queued for it.
 */
static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	repl_member_t *m = fsm->data;
	const uint8_t *base = buf->base;
	bool queued = false;
	uint32_t len = 0;

	*result = NULL;
	/* the entry is the BSON document at the start of the (padded) buffer,
	 * or a transaction's chain: several documents one after the other
	 * (the padding is zeros: a length of 0 ends the list) */
	if (buf->len >= 5)
		memcpy(&len, base, 4);
	if (len < 5 || len > buf->len)
		len = (uint32_t)buf->len;   /* the applier then refuses it as malformed */
	pthread_mutex_lock(&m->lock);
	for (size_t off = 0;;) {
		uint32_t next = 0;
		repl_ts_t ts;
		int64_t t;
		entry_optime(base + off, len, &ts, &t, NULL);
		if (m->min_valid.index != 0 && t > (int64_t)m->min_valid.term)
			m->mv_later_term = true;   /* a later leader's entry: raft_min_valid.h */
		if (ts > m->committed_ts) {
			m->committed_ts = ts;
			m->committed_t = t;
		}
		if (!own_done_locked(m, ts, t)) {
			queue_push(&m->to_apply, node_with(base + off, len, ts, t));
			m->enqueued++;
			queued = true;
		}
		off += len;
		if (off + 5 > buf->len)
			break;
		memcpy(&next, base + off, 4);
		if (next < 5 || next > buf->len - off)
			break;
		len = next;
	}
	match_snapshot_locked(m);
	/* the waiters when the entries are done here (else the applier's
	 * broadcast after its list wakes them): at once when this is the
	 * newest entry the feeder handed over (the last of a batch: its
	 * writer waits for it), else before the loop waits again */
	if (m->applied == m->enqueued && m->set_ts >= m->fed_ts) {
		m->wake_pending = false;
		pthread_cond_broadcast(&m->cond);
	} else if (m->applied == m->enqueued) {
		m->wake_pending = true;
	}
	if (queued)
		pthread_cond_signal(&m->apply_cond);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* Before each wait of the loop for I/O (libuv's prepare phase: no callback
 * of the loop thread runs between it and the wait, so no wake-up is held
 * back while the loop sleeps): the waiters on m->cond, once, when
 * fsm_apply or match_snapshot_locked moved what they wait for. */
static void
on_wake_prep(uv_prepare_t *h)
{
	repl_member_t *m = h->data;

	pthread_mutex_lock(&m->lock);
	if (m->wake_pending) {
		m->wake_pending = false;
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * The snapshot is the optime (ts, t) of the newest committed entry: the
 * data itself is in WiredTiger.  Raft calls this right after handing the
 * FSM the entry at the snapshot's index, so the snapshot must say that
 * everything up to it is applied and durable: the loop thread waits (at
 * most SNAPSHOT_WAIT_MS; nothing new is queued meanwhile, the queue is fed
 * on this thread) until the applier has done every queued entry, then
 * syncs the journal.  RAFT_BUSY otherwise: Raft tries again later.
 */
static int
fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[], unsigned *n_bufs)
{
	repl_member_t *m = fsm->data;
	int64_t deadline = tm_now_us() + SNAPSHOT_WAIT_MS * 1000;
	uint64_t snap[2];
	bool ready;

	pthread_mutex_lock(&m->lock);
	/* no wait while the applier rolls back or copies data, or is far
	 * behind: Raft asks again at later entries, and the loop thread must
	 * keep answering heartbeats */
	while (m->applied != m->enqueued && !m->failed && !m->stopping && m->busy_state == 0 &&
	    m->enqueued - m->applied <= SNAPSHOT_WAIT_LAG && tm_now_us() < deadline)
		cond_wait_ms(m, 10);
	ready = m->applied == m->enqueued && !m->failed;
	snap[0] = m->committed_ts;
	snap[1] = (uint64_t)m->committed_t;
	pthread_mutex_unlock(&m->lock);
	/* everything up to the snapshot is committed in WiredTiger (applied,
	 * or the primary's own writes): make it durable before Raft may drop
	 * the log it came from -- a primary's w: "majority" writes do not sync
	 * the journal themselves (the Raft log is their durability) */
	if (!ready)
		return RAFT_BUSY;
	if (m->snap_session == NULL && storage_session_open(m->o.st, &m->snap_session, NULL) != 0)
		return RAFT_BUSY;
	if (storage_journal_sync(m->snap_session, NULL) != 0)
		return RAFT_BUSY;
	*bufs = raft_malloc(sizeof(struct raft_buffer));
	if (*bufs == NULL)
		return RAFT_NOMEM;
	(*bufs)[0].len = sizeof(snap);
	(*bufs)[0].base = raft_malloc(sizeof(snap));
	if ((*bufs)[0].base == NULL) {
		raft_free(*bufs);
		return RAFT_NOMEM;
	}
	memcpy((*bufs)[0].base, snap, sizeof(snap));
	*n_bufs = 1;
	/* libraft stores the committed configuration with it: this member's
	 * own when no change is pending and it names this member */
	m->snapshot_self = false;
	if (m->raft.configuration_uncommitted_index == 0)
		for (unsigned i = 0; i < m->raft.configuration.n; i++)
			if (m->raft.configuration.servers[i].id == m->raft.id)
				m->snapshot_self = true;
	return 0;
}

/*
 * A snapshot restored (this member's own at a restart, or the leader's when
 * this member is behind its kept log or was wiped): queued to the applier
 * as a marker, in log order, which checks that the local oplog holds the
 * snapshot's entry and otherwise brings the member there first
 * (repl/initial_sync.h).  Older snapshots held only the ts (8 bytes).
 */
static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	repl_member_t *m = fsm->data;
	uint64_t snap[2] = {0, (uint64_t)-1};
	entry_node_t *n;

	if (buf->len >= 16)
		memcpy(snap, buf->base, 16);
	else if (buf->len >= 8)
		memcpy(snap, buf->base, 8);
	raft_free(buf->base);
	m->snapshot_self = false;   /* loop thread, as fsm_snapshot */
	n = node_new((const uint8_t *)"", 0);
	n->snapshot = true;
	n->ts = snap[0];
	n->t = (int64_t)snap[1];
	pthread_mutex_lock(&m->lock);
	if (n->ts > m->committed_ts) {
		m->committed_ts = n->ts;
		m->committed_t = n->t;
	}
	queue_push(&m->to_apply, n);
	m->enqueued++;
	wake(m);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* ---- loop callbacks ---------------------------------------------------------------------- */

static void
apply_done(struct raft_apply *req, int status, void *result)
{
	(void)status;
	(void)result;
	bson_free(req);
}

static void
barrier_done(struct raft_barrier *req, int status)
{
	repl_member_t *m = req->data;

	pthread_mutex_lock(&m->lock);
	m->barrier_pending = false;
	if (status == 0 && m->leader_seen) {
		/* every entry before the barrier is queued: PRIMARY once applied */
		m->draining = true;
		m->drain_target = m->enqueued;
		m->drain_term = m->leader_term;
		wake(m);
	}
	pthread_mutex_unlock(&m->lock);
}

/* The transfer ended: when this member is still the leader (no follower
 * caught up in time), it takes writes again. */
static void
transfer_done(struct raft_transfer *req)
{
	repl_member_t *m = req->data;

	pthread_mutex_lock(&m->lock);
	m->transfer_pending = false;
	if (raft_state(&m->raft) == RAFT_LEADER && m->leader_seen && !m->primary && !m->no_lead)
		role_set_locked(m, true, m->leader_term);
	wake(m);
	pthread_mutex_unlock(&m->lock);
}

static void
on_submit(uv_async_t *h)
{
	repl_member_t *m = h->data;
	entry_node_t *list, *n;

	pthread_mutex_lock(&m->lock);
	if (m->loop_fn != NULL && !m->loop_running) {
		/* outside m->lock: the raft_* calls it makes may reach the FSM */
		void (*fn)(struct raft *, void *) = m->loop_fn;
		void *arg = m->loop_arg;
		m->loop_running = true;
		pthread_mutex_unlock(&m->lock);
		fn(&m->raft, arg);
		pthread_mutex_lock(&m->lock);
		m->loop_running = false;
		m->loop_fn = NULL;
		wake(m);
	}
	list = queue_take_all(&m->to_submit);
	if (m->transfer_requested) {
		m->transfer_requested = false;
		if (raft_state(&m->raft) == RAFT_LEADER && !m->transfer_pending) {
			bool none = false;
			raft_id to = m->transfer_to != 0 ? m->transfer_to : transfer_pick_locked(m, &none);
			m->transfer.data = m;
			m->transfer_to = 0;
			/* 0: Raft picks the most up-to-date voting follower; none:
			 * every other voter is floored (Raft's pick would be one
			 * that cannot stand): no transfer, as one that failed */
			if (!none && raft_transfer(&m->raft, &m->transfer, to, transfer_done) == 0)
				m->transfer_pending = true;
			else if (m->leader_seen && !m->primary)
				role_set_locked(m, true, m->leader_term);
		}
		wake(m);
	}
	pthread_mutex_unlock(&m->lock);
	n = list;
	while (n != NULL && raft_state(&m->raft) == RAFT_LEADER) {
		/* up to FEED_BATCH entries per raft_apply (one log entry each) */
		struct raft_buffer bufs[FEED_BATCH];
		repl_ts_t tss[FEED_BATCH];
		struct raft_apply *req;
		unsigned cnt = 0;
		raft_index last;
		int rv;
		for (; n != NULL && cnt < FEED_BATCH; n = n->next) {
			/* padded to 8 bytes: libraft 0.15 decodes a batch of several
			 * entries past its buffer when an entry's size is not a
			 * multiple of 8 (seen under ASan when a member catches up);
			 * the BSON's own length tells the FSM where the entry ends */
			bufs[cnt].len = (n->len + 7u) & ~(size_t)7u;
			if (n->rbuf != NULL) {
				bufs[cnt].base = n->rbuf;   /* made by the feeder */
				n->rbuf = NULL;
			} else {
				bufs[cnt].base = raft_malloc(bufs[cnt].len);
				if (bufs[cnt].base == NULL)
					break;
				memset(bufs[cnt].base, 0, bufs[cnt].len);
				memcpy(bufs[cnt].base, n->data, n->len);
			}
			tss[cnt++] = n->ts;
		}
		if (cnt == 0)
			break;
		req = bson_malloc0(sizeof(*req));
		rv = raft_apply(&m->raft, req, bufs, cnt, apply_done);
		if (rv != 0) {
			for (unsigned k = 0; k < cnt; k++)
				raft_free(bufs[k].base);
			bson_free(req);
			log_msg('W', 5000241, "could not submit oplog entries to Raft", raft_strerror(rv));
			break;   /* never replicated: see "rollback" in raft_member.h */
		}
		/* raft_apply appended them to the leader's log: the last cnt */
		last = raft_last_index(&m->raft);
		pthread_mutex_lock(&m->lock);
		for (unsigned k = 0; k < cnt; k++) {
			m->sub[m->sub_next % 4096].ts = tss[k];
			m->sub[m->sub_next % 4096].idx = last - (cnt - 1 - k);
			m->sub_next++;
		}
		pthread_mutex_unlock(&m->lock);
	}
	queue_free(list);
}

/* Priority takeover (member_takeover.h): the view of this watch tick. */
static void
takeover_tick_locked(repl_member_t *m, int state, raft_id lid, int64_t now)
{
	repl_takeover_view_t v = {0};
	raft_id self;

	if (m->o.self_index < 0 || m->o.self_index >= m->o.npeers)
		return;   /* removed from the configuration */
	self = (raft_id)(m->peers[m->o.self_index].member_id + 1);

	v.follower = state == RAFT_FOLLOWER && lid != 0 && m->leader_index >= 0;
	v.electable = !m->no_lead && m->busy_state == 0 && m->min_valid.index == 0 && m->rb_min_valid == 0 &&
	    m->frozen_until_ms <= now;
	/* a wiped member stands in no election of a term <= its vote floor,
	 * nor before its log holds what it held before the wipe: it asks for
	 * the leadership once the set's term has passed it and its log is
	 * back */
	if (m->raft.current_term + 1 <= m->vote_floor.term || !floor_log_held(m))
		v.electable = false;
	for (unsigned k = 0; k < m->raft.configuration.n; k++)
		if (m->raft.configuration.servers[k].id == self && m->raft.configuration.servers[k].role != RAFT_VOTER)
			v.electable = false;
	v.self_index = m->o.self_index;
	v.leader_index = m->leader_index;
	v.peers = m->peers;
	v.npeers = m->o.npeers;
	v.applied = m->local_last_ts;
	v.newest = m->committed_ts;
	v.term = m->raft.current_term;
	v.election_timeout_ms = m->o.election_timeout_ms;
	repl_takeover_tick(m->takeover, &v, now);
}

/* Whether the member of Raft id `id` was handed the configuration by this
 * leader with a vote floor its candidacy (of this term + 1) would not pass:
 * the term part, or the index part while its match index (this leader's
 * view of its log) is below it (m->lock, loop thread). */
static bool
peer_floored_locked(repl_member_t *m, raft_id id)
{
	for (int i = 0; i < m->npeer_floor; i++) {
		if (m->peer_floor[i].id != id)
			continue;
		if (m->peer_floor[i].floor >= m->raft.current_term + 1)
			return true;
		if (m->peer_floor[i].index == 0)
			return false;
		if (raft_state(&m->raft) != RAFT_LEADER || m->raft.leader_state.progress == NULL)
			return true;
		for (unsigned k = 0; k < m->raft.configuration.n; k++)
			if (m->raft.configuration.servers[k].id == id)
				return m->raft.leader_state.progress[k].match_index < m->peer_floor[i].index;
		return true;
	}
	return false;
}

/* A stepdown's transfer target when none is named (m->lock, loop thread,
 * leader): Raft's own pick (0), unless a member this leader handed the
 * configuration to in its term could be it -- then among the other voters
 * the one holding most of the log, one heard from lately first; when there
 * is none, *none is set (0 would let Raft pick a floored member: its
 * candidacy fails and the transfer with it). */
static raft_id
transfer_pick_locked(repl_member_t *m, bool *none)
{
	raft_id best = 0;
	raft_index best_match = 0;
	bool any = false, best_recent = false;

	*none = false;
	for (unsigned k = 0; k < m->raft.configuration.n; k++)
		any = any || peer_floored_locked(m, m->raft.configuration.servers[k].id);
	if (!any || m->raft.leader_state.progress == NULL)
		return 0;
	for (unsigned k = 0; k < m->raft.configuration.n; k++) {
		const struct raft_server *sv = &m->raft.configuration.servers[k];
		const struct raft_progress *pr = &m->raft.leader_state.progress[k];
		if (sv->id == m->raft.id || sv->role != RAFT_VOTER || peer_floored_locked(m, sv->id))
			continue;
		if (best == 0 || (pr->recent_recv && !best_recent) ||
		    (pr->recent_recv == best_recent && pr->match_index > best_match)) {
			best = sv->id;
			best_match = pr->match_index;
			best_recent = pr->recent_recv;
		}
	}
	*none = best == 0;
	return best;
}

/* The leader that may not stay so (priority 0, STARTUP2, frozen): the voter
 * it heard from within an election timeout that holds most of the log, 0
 * when none (Raft's own pick).  Raft's pick alone may be a dead member whose
 * match index is high: the transfer fails an election timeout later and is
 * tried again, again on it, while the live ones cannot campaign.  Not,
 * while another voter answers, the leader this member followed last nor the
 * one it handed on to last time: two members that may not stay leader (one
 * frozen or stepping down, one copying) each handing on to the other passed
 * the leadership back and forth (e2e.replset_sync's held case, once the
 * copying member's Raft log was current: raft_lost_log.h), and a stepdown
 * whose transfer reached a copying member got it back (262). */
static raft_id
hand_on_target(repl_member_t *m)
{
	raft_id best = 0, fallback = 0, self = m->raft.id;
	raft_index best_match = 0, fallback_match = 0;

	if (m->raft.leader_state.progress == NULL)
		return 0;
	for (unsigned k = 0; k < m->raft.configuration.n; k++) {
		const struct raft_server *sv = &m->raft.configuration.servers[k];
		const struct raft_progress *pr = &m->raft.leader_state.progress[k];
		if (sv->id == self || sv->role != RAFT_VOTER || !pr->recent_recv || peer_floored_locked(m, sv->id))
			continue;
		if (sv->id == m->prev_leader || sv->id == m->hand_on_last) {
			if (fallback == 0 || pr->match_index > fallback_match) {
				fallback = sv->id;
				fallback_match = pr->match_index;
			}
		} else if (best == 0 || pr->match_index > best_match) {
			best = sv->id;
			best_match = pr->match_index;
		}
	}
	/* the member it just followed (or handed on to) only once the others
	 * had an election timeout of this term to answer: a leader just
	 * elected has heard from none of them yet */
	if (best == 0 && wall_ms() - m->lead_since_ms >= m->o.election_timeout_ms)
		best = fallback;
	m->hand_on_last = best;
	return best;
}

static void
forget_silent_leader(repl_member_t *m)
{
	struct raft *r = &m->raft;
	raft_time now = r->io->time(r->io);

	if (r->follower_state.current_leader.id == 0 || now < r->election_timer_start ||
	    now - r->election_timer_start < (raft_time)m->o.election_timeout_ms)
		return;
	/* what libraft's own conversion out of follower does with it */
	raft_free(r->follower_state.current_leader.address);
	r->follower_state.current_leader.address = NULL;
	r->follower_state.current_leader.id = 0;
}

/* The minValid (raft_min_valid.h) reached: once Raft has handed the FSM
 * the entries through it, the entries queued then are the target; once the
 * applier has applied them (no copy or rollback running), the file is
 * removed (a failure keeps it: tried again at the next tick) and the member
 * is SECONDARY -- loop thread. */
static void
min_valid_check(repl_member_t *m)
{
	terr_t err = TERR_INIT;
	repl_min_valid_t mv;
	uint64_t applied;
	bool done;
	bson_t attr;

	pthread_mutex_lock(&m->lock);
	if (m->min_valid.index != 0 && !m->mv_target_set &&
	    repl_raft_min_valid_reached(&m->min_valid, raft_last_applied(&m->raft), m->mv_later_term)) {
		m->mv_target_set = true;
		m->mv_target = m->enqueued;
	}
	done = m->min_valid.index != 0 && m->mv_target_set && m->applied >= m->mv_target && m->busy_state == 0 &&
	    !m->failed;
	mv = m->min_valid;
	applied = m->applied;
	pthread_mutex_unlock(&m->lock);
	if (!done)
		return;
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "minValidIndex", (int64_t)mv.index);
	BSON_APPEND_INT64(&attr, "minValidTerm", (int64_t)mv.term);
	BSON_APPEND_INT64(&attr, "lastApplied", (int64_t)raft_last_applied(&m->raft));
	BSON_APPEND_INT64(&attr, "entriesApplied", (int64_t)applied);
	if (repl_raft_min_valid_clear(m->dir, &err) != 0) {
		BSON_APPEND_UTF8(&attr, "error", err.msg != NULL ? err.msg : "");
		tlog('W', "REPL", 5000320, "could not store that this member applied through its minValid", &attr);
		terr_clear(&err);
		bson_destroy(&attr);
		return;
	}
	pthread_mutex_lock(&m->lock);
	m->min_valid = (repl_min_valid_t){0, 0};
	if (!m->primary && !m->failed)
		repl_set_raft_role(m->o.rs, follower_state_locked(m), (int64_t)m->term);
	wake(m);
	pthread_mutex_unlock(&m->lock);
	tlog('I', "REPL", 5000321, "this member applied the set's log through its minValid: SECONDARY", &attr);
	bson_destroy(&attr);
}

static void
on_watch(uv_timer_t *t)
{
	repl_member_t *m = t->data;
	int state = raft_state(&m->raft);
	uint64_t term = m->raft.current_term;
	raft_id lid = 0;
	const char *laddr = NULL;
	int64_t now = wall_ms();
	bool frozen;

	floor_check(m);
	min_valid_check(m);
	raft_leader(&m->raft, &lid, &laddr);
	pthread_mutex_lock(&m->lock);
	m->leader_index = -1;
	for (int i = 0; i < m->o.npeers; i++) {
		if ((raft_id)(m->peers[i].member_id + 1) == lid)
			m->leader_index = i;
	}
	frozen = m->frozen_until_ms > now;
	if (acquiring_locked(m) != m->election_hold) {
		unsigned et = (unsigned)m->o.election_timeout_ms / 2;
		m->election_hold = !m->election_hold;
		raft_set_election_timeout(&m->raft, m->election_hold ? STARTUP2_ELECTION_TIMEOUT_MS : et < 100 ? 100 : et);
	}
	if (m->election_hold && state == RAFT_FOLLOWER)
		forget_silent_leader(m);
	if (state == RAFT_LEADER) {
		if (m->lead_term != term) {
			m->lead_term = term;
			m->lead_since_ms = now;
			/* a new leadership: only what was heard of within an election
			 * timeout (the previous leader, as a follower) counts as heard;
			 * the others are not reached yet (mongod's UNKNOWN) until they
			 * answer, or down once an election timeout passes without */
			for (int i = 0; i < m->o.npeers; i++)
				m->heard[i] = i == m->o.self_index ||
				    (m->reachable[i] && now - m->last_contact_ms[i] <= m->o.election_timeout_ms);
		}
		match_snapshot_locked(m);
		/* who the leader heard from within an election timeout */
		for (unsigned k = 0; k < m->raft.configuration.n; k++) {
			raft_id id = m->raft.configuration.servers[k].id;
			for (int i = 0; i < m->o.npeers; i++) {
				if ((raft_id)(m->peers[i].member_id + 1) != id)
					continue;
				if (i == m->o.self_index || (m->raft.leader_state.progress != NULL &&
				    m->raft.leader_state.progress[k].recent_recv)) {
					m->reachable[i] = true;
					m->heard[i] = true;
					m->last_contact_ms[i] = now;
				} else if (now - m->last_contact_ms[i] > m->o.election_timeout_ms) {
					m->reachable[i] = false;
					/* silent for an election timeout of this leadership:
					 * down, no longer unknown */
					if (now - m->lead_since_ms > m->o.election_timeout_ms)
						m->heard[i] = true;
				}
			}
		}
		if ((m->no_lead || acquiring_locked(m) || frozen) && !m->transfer_pending) {
			/* priority 0 (or delayed), copying data (elected by a
			 * transfer, or before the copy began) or frozen (a forced
			 * stepdown): hand the leadership on as soon as a voter
			 * answered this term (a leader just elected has heard from
			 * none yet: handing on to libraft's own pick then gives it
			 * straight back to the member that just stepped down);
			 * should it still lead when that ends, it becomes primary
			 * anew */
			raft_id target = hand_on_target(m);
			m->leader_seen = false;
			m->transfer.data = m;
			if (target != 0 && raft_transfer(&m->raft, &m->transfer, target, transfer_done) == 0)
				m->transfer_pending = true;
		} else if (m->no_lead || acquiring_locked(m) || frozen) {
			/* the transfer runs */
		} else if (!m->leader_seen || m->leader_term != term) {
			m->leader_seen = true;
			m->leader_term = term;
			m->draining = false;
			if (!m->barrier_pending) {
				m->barrier.data = m;
				if (raft_barrier(&m->raft, &m->barrier, barrier_done) == 0)
					m->barrier_pending = true;
				else
					m->leader_seen = false;   /* try again at the next tick */
			}
		}
	} else {
		if (lid != 0 && lid != m->raft.id)
			m->prev_leader = lid;
		if (lid != 0) {
			for (int i = 0; i < m->o.npeers; i++) {
				m->reachable[i] = i == m->o.self_index || i == m->leader_index;
				/* a follower hears of its leader only */
				m->heard[i] = m->reachable[i];
				if (m->reachable[i])
					m->last_contact_ms[i] = now;
			}
		}
		m->leader_seen = false;
		m->draining = false;
		if (m->primary || m->term != term)
			role_set_locked(m, false, term);
	}
	takeover_tick_locked(m, state, lid, now);
	pthread_mutex_unlock(&m->lock);
	repl_election_log_observe(&m->elog, &m->raft, m->o.election_timeout_ms);
}

/*
 * The dropRaftMessagesFrom fail point (test commands only; the
 * fault-injection test tests/e2e/replset/jepsen_set.py): every Raft message
 * that arrives from a member its data names (`{hosts: ["host:port", ...]}`,
 * the members' wire-protocol hosts) is dropped as the network would drop it.
 * Each side naming the other is a partition between them; one side alone a
 * one-way one.  Messages go out on the sender's own connection, so the
 * sender's Raft address in the message is the one the peer declared.  With
 * `stripEntries: true` the messages are not dropped but an AppendEntries
 * arrives without its entries (a snapshot is dropped; member commands pass):
 * the member answers its leader as a follower that cannot store, so the
 * leader keeps its quorum, but it holds none of the leader's new entries
 * (tests/e2e/replset/raft_wiped_log.py).
 */
static bool
host_is_raft_addr(const char *host, const char *raft_addr)
{
	const char *hc = strrchr(host, ':'), *rc = strrchr(raft_addr, ':');
	char *end;
	long hp, rp;

	if (hc == NULL || rc == NULL || hc - host != rc - raft_addr || strncmp(host, raft_addr, (size_t)(hc - host)) != 0)
		return false;
	hp = strtol(hc + 1, &end, 10);
	if (*end != '\0')
		return false;
	rp = strtol(rc + 1, &end, 10);
	return *end == '\0' && hp + REPL_RAFT_PORT_OFFSET == rp;
}

static bool
drop_matches(const bson_t *data, void *arg)
{
	const struct raft_message *msg = arg;
	const char *addr = msg->server_address;
	bson_iter_t it, h;

	if (addr == NULL || !bson_iter_init_find(&it, data, "hosts") || !BSON_ITER_HOLDS_ARRAY(&it))
		return false;
	if (bson_iter_init_find(&h, data, "stripEntries") && bson_iter_as_bool(&h) &&
	    !(msg->type == RAFT_IO_APPEND_ENTRIES && msg->append_entries.n_entries > 0) &&
	    msg->type != RAFT_IO_INSTALL_SNAPSHOT)
		return false;
	bson_iter_recurse(&it, &h);
	while (bson_iter_next(&h))
		if (BSON_ITER_HOLDS_UTF8(&h) && host_is_raft_addr(bson_iter_utf8(&h, NULL), addr))
			return true;
	return false;
}

/* A dropped message's payload is Raft's to free once received: the entries'
 * batches (one buffer may hold several entries) or the snapshot's. */
static void
drop_message(struct raft_message *msg)
{
	if (msg->type == RAFT_IO_APPEND_ENTRIES) {
		struct raft_entry *e = msg->append_entries.entries;
		void *batch = NULL;
		for (unsigned i = 0; i < msg->append_entries.n_entries; i++)
			if (e[i].batch != batch) {
				batch = e[i].batch;
				raft_free(batch);
			}
		if (e != NULL)
			raft_free(e);
	} else if (msg->type == RAFT_IO_INSTALL_SNAPSHOT) {
		raft_configuration_close(&msg->install_snapshot.conf);
		raft_free(msg->install_snapshot.data.base);
	}
}

/* The term of a leader's message (AppendEntries, InstallSnapshot); 0 for
 * any other. */
static raft_term
leader_msg_term(const struct raft_message *msg)
{
	if (msg->type == RAFT_IO_APPEND_ENTRIES)
		return msg->append_entries.term;
	if (msg->type == RAFT_IO_INSTALL_SNAPSHOT)
		return msg->install_snapshot.term;
	return 0;
}

/*
 * A message from a server outside this member's Raft configuration (one it
 * has: a new or emptied member has none yet and takes its first leader's).
 * Such a sender is a member the set removed, or one a forced reconfig left
 * out that came back with the old configuration: its AppendEntries of a
 * higher term would make this member truncate its log to the old history
 * (or stop Raft on a committed entry), its votes would disrupt elections.
 * Dropped: this member never takes entries of two histories.
 * But the leader this member took entries or a snapshot from in its term stays
 * its leader for that term, whatever configuration those brought: a
 * snapshot carries the configuration committed when it was taken, which
 * may predate the leader's joining (a set grown from one member, its first
 * member since removed; a forced member's snapshot taken by the member it
 * forced out), and a log replayed from its start passes through such
 * configurations too.  Refusing that leader's next message would leave the
 * member behind for good (the leader's raft_assign of it failing with
 * RAFT_NOCONNECTION) and let it elect itself the single voter of the
 * snapshot's configuration.  One leader per term: a removed member coming
 * back in a later term is still a stranger.
 */
static bool
from_stranger(const repl_member_t *m, const struct raft_message *msg)
{
	const struct raft *r = &m->raft;
	raft_term t = leader_msg_term(msg);

	if (r->configuration.n == 0)
		return false;
	if (t != 0 && m->followed_term == t && m->followed_id == msg->server_id)
		return false;
	for (unsigned i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == msg->server_id)
			return false;
	return true;
}

static void vote_seen(repl_member_t *m, const struct raft_request_vote *rv);
static void vote_floor_record(repl_member_t *m, const struct raft_message *msg);

/* Whether this member's Raft log holds what it held before its wipe (the
 * vote floor's index part: raft_vote_floor.h); loop thread. */
static bool
floor_log_held(repl_member_t *m)
{
	return m->vote_floor.index == 0 ||
	    repl_raft_vote_floor_log_held(&m->vote_floor, raft_last_index(&m->raft), repl_raft_last_term(&m->raft));
}

/* The index part reached: dropped, in the file first (a failure to write
 * keeps it, tried again at the next watch tick) -- loop thread. */
static void
floor_check(repl_member_t *m)
{
	terr_t err = TERR_INIT;
	bson_t attr;

	if (m->vote_floor.index == 0 || !floor_log_held(m))
		return;
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "voteFloorIndex", (int64_t)m->vote_floor.index);
	BSON_APPEND_INT64(&attr, "lastIndex", (int64_t)raft_last_index(&m->raft));
	BSON_APPEND_INT64(&attr, "lastTerm", (int64_t)repl_raft_last_term(&m->raft));
	if (repl_raft_vote_floor_clear_index(m->dir, &err) != 0) {
		BSON_APPEND_UTF8(&attr, "error", err.msg != NULL ? err.msg : "");
		tlog('W', "ELECTION", 5000294, "could not store that this member's log holds what it held before its "
		    "data was wiped", &attr);
		terr_clear(&err);
	} else {
		m->vote_floor.index = 0;
		tlog('I', "ELECTION", 5000293, "this member's Raft log holds what it held before its data was wiped: it "
		    "votes again", &attr);
	}
	bson_destroy(&attr);
}

/* A vote request the wiped member's vote floor refuses (received:
 * dropped; sent as a candidate: not sent), logged once per term and once
 * for the short log (loop thread): a term at or below the floor, or a log
 * short of the index part (raft_vote_floor.h). */
static void
vote_floor_log(repl_member_t *m, uint64_t term, const char *addr, bool own)
{
	bool by_term = term <= m->vote_floor.term;
	bson_t attr;

	if (by_term ? m->vote_floor_logged == term : m->vote_floor_short_logged)
		return;
	if (by_term)
		m->vote_floor_logged = term;
	else
		m->vote_floor_short_logged = true;
	bson_init(&attr);
	BSON_APPEND_INT64(&attr, "term", (int64_t)term);
	BSON_APPEND_INT64(&attr, "voteFloor", (int64_t)m->vote_floor.term);
	if (!by_term) {
		BSON_APPEND_INT64(&attr, "voteFloorIndex", (int64_t)m->vote_floor.index);
		BSON_APPEND_INT64(&attr, "lastIndex", (int64_t)raft_last_index(&m->raft));
	}
	if (addr != NULL)
		BSON_APPEND_UTF8(&attr, own ? "to" : "candidate", addr);
	if (by_term)
		tlog('I', "ELECTION", own ? 5000291 : 5000290, own ?
		    "not standing in an election of a term this member may have voted in before its data was wiped" :
		    "refused a vote in a term this member may have voted in before its data was wiped", &attr);
	else
		tlog('I', "ELECTION", own ? 5000298 : 5000297, own ?
		    "not standing in an election before this member's log holds what it held before its data was wiped" :
		    "refused a vote before this member's log holds what it held before its data was wiped", &attr);
	bson_destroy(&attr);
}

/* A follower that answers from a log shorter than it acknowledged (its data
 * wiped): the leader learns its position again (raft_lost_log.h). */
static void
lost_log_check(repl_member_t *m, const struct raft_message *msg)
{
	raft_index was = 0;
	bson_t attr;

	if (!repl_raft_lost_log_reset(&m->raft, msg, &was))
		return;
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "raftAddress", msg->server_address != NULL ? msg->server_address : "");
	BSON_APPEND_INT64(&attr, "lastIndex", (int64_t)msg->append_entries_result.last_log_index);
	BSON_APPEND_INT64(&attr, "acknowledgedIndex", (int64_t)was);
	tlog('I', "REPL", 5000277, "a member answers from a shorter Raft log than it acknowledged (its data "
	    "wiped, or entries it acknowledged not stored yet): the leader learns its position again", &attr);
	bson_destroy(&attr);
}

static void
fault_recv(struct raft_io *io, struct raft_message *msg)
{
	repl_member_t *m = ((struct raft *)io->data)->data;
	bson_t data;

	if (from_stranger(m, msg)) {
		if (!m->stranger_logged) {
			m->stranger_logged = true;
			log_msg('W', 5000270, "dropped Raft messages from a server outside this member's configuration",
			    msg->server_address);
		}
		drop_message(msg);
		return;
	}
	if (failpoint_any_active() &&
	    failpoint_fire("dropRaftMessagesFrom", drop_matches, (void *)msg, &data)) {
		bson_iter_t it;
		bool strip = msg->type == RAFT_IO_APPEND_ENTRIES && bson_iter_init_find(&it, &data, "stripEntries") &&
		    bson_iter_as_bool(&it);
		bson_destroy(&data);
		drop_message(msg);
		if (!strip)
			return;
		msg->append_entries.entries = NULL;
		msg->append_entries.n_entries = 0;
	}
	if (msg->type == RAFT_IO_REQUEST_VOTE &&
	    repl_raft_vote_floor_blocks(&m->vote_floor, floor_log_held(m), msg)) {
		vote_floor_log(m, msg->request_vote.term, msg->server_address, false);
		vote_floor_record(m, msg);
		return;   /* no payload to free */
	}
	if (msg->type == RAFT_IO_TIMEOUT_NOW &&
	    (m->raft.current_term + 1 <= m->vote_floor.term || !floor_log_held(m))) {
		/* a leadership transfer to a member its floor keeps from
		 * standing: as lost on the network.  Taken, its candidacy
		 * raised its term to one its floor refuses (no RequestVote
		 * sent, 5000291) and that term, in its answers, deposed the
		 * leader for nothing; ignored, the transfer expires and the
		 * leader picks again (transfer_pick_locked) */
		vote_floor_log(m, m->raft.current_term + 1, msg->server_address, true);
		return;   /* no payload to free */
	}
	if (msg->type == RAFT_IO_REQUEST_VOTE)
		m->vote_candidate = 0;
	if (msg->type == RAFT_IO_REQUEST_VOTE && !msg->request_vote.pre_vote)
		vote_seen(m, &msg->request_vote);
	lost_log_check(m, msg);
	if (leader_msg_term(msg) != 0) {
		m->followed_id = msg->server_id;
		m->followed_term = leader_msg_term(msg);
	}
	m->raft_recv(io, msg);
	/* a message of a higher term deposed this leader: no longer PRIMARY
	 * at once, not at the next watch tick -- meanwhile its writers took
	 * the timestamps the new leader's entries carry, and its applier,
	 * rolling back under a PRIMARY state, let more of them in (entries of
	 * two histories at one ts: e2e.replset_deposed_wait's divergence) */
	if (raft_state(&m->raft) != RAFT_LEADER) {
		pthread_mutex_lock(&m->lock);
		if (m->primary) {
			m->leader_seen = false;
			m->draining = false;
			role_set_locked(m, false, m->raft.current_term);
		}
		pthread_mutex_unlock(&m->lock);
	}
	repl_election_log_observe(&m->elog, &m->raft, m->o.election_timeout_ms);
}

/* The election observer's hooks (election_log.h), on the loop thread. */
static void
hook_candidate(void *arg, bool skip_dry_run, repl_election_candidate_t *out)
{
	repl_member_t *m = arg;
	repl_set_info_t in;
	int64_t now = wall_ms();

	pthread_mutex_lock(&m->lock);
	out->reason = m->no_lead || m->busy_state != 0 || m->min_valid.index != 0 || m->frozen_until_ms > now ?
	    REPL_ELECTION_NREASONS :
	    !skip_dry_run ? REPL_ELECTION_TIMEOUT :
	    repl_takeover_asked_since(m->takeover, now - 2 * m->o.election_timeout_ms) ?
	    REPL_ELECTION_PRIORITY_TAKEOVER : REPL_ELECTION_STEP_UP;
	out->committed_ts = m->committed_ts;
	out->committed_t = m->committed_t;
	out->priority = m->o.self_index >= 0 && m->o.self_index < m->o.npeers ? m->peers[m->o.self_index].priority : 0;
	out->election_timeout_ms = m->o.election_timeout_ms;
	pthread_mutex_unlock(&m->lock);
	repl_set_info(m->o.rs, &in);
	out->seen_ts = REPL_TS(in.last_applied.secs, in.last_applied.inc);
	out->seen_t = in.last_applied.term;
}

static bool
hook_was_primary(void *arg)
{
	repl_member_t *m = arg;
	bool p;

	pthread_mutex_lock(&m->lock);
	p = m->primary;
	pthread_mutex_unlock(&m->lock);
	return p;
}

/* Raft's tick (where its elections start), then the election lines */
static void
observed_tick(struct raft_io *io)
{
	repl_member_t *m = ((struct raft *)io->data)->data;

	m->raft_tick(io);
	repl_election_log_observe(&m->elog, &m->raft, m->o.election_timeout_ms);
}

/* A RequestVote that is not a pre-vote arrived (loop thread): what this
 * member is before libraft decides on it, kept until the answer leaves. */
static void
vote_seen(repl_member_t *m, const struct raft_request_vote *rv)
{
	const struct raft *r = &m->raft;
	repl_vote_seen_t *s = &m->vote_seen;

	memset(s, 0, sizeof(*s));
	s->req_term = rv->term;
	s->req_last_index = rv->last_log_index;
	s->req_last_term = rv->last_log_term;
	s->disrupt_leader = rv->disrupt_leader;
	s->my_term = r->current_term;
	s->voted_for = r->voted_for;
	s->knows_leader = r->state == RAFT_LEADER ||
	    (r->state == RAFT_FOLLOWER && r->follower_state.current_leader.id != 0);
	s->my_last_index = raft_last_index(&m->raft);
	m->vote_voted_host[0] = '\0';
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->o.npeers; i++)
		if ((raft_id)(m->peers[i].member_id + 1) == s->voted_for)
			snprintf(m->vote_voted_host, sizeof(m->vote_voted_host), "%s", m->peers[i].host);
	pthread_mutex_unlock(&m->lock);
	s->voted_for_host = m->vote_voted_host[0] != '\0' ? m->vote_voted_host : NULL;
	m->vote_candidate = rv->candidate_id;
}

/* A real vote this member answered (loop thread), recorded as mongod's
 * electionParticipantMetrics (mongod records every vote that is not a dry
 * run, granted or not): v's granted, term, candidate_id and reason set. */
static void
vote_record(repl_member_t *m, repl_election_vote_t *v_)
{
	repl_election_vote_t v = *v_;
	repl_set_info_t in;
	repl_ts_t applied;

	v.date_ms = wall_ms();
	repl_set_info(m->o.rs, &in);
	applied = REPL_TS(in.last_applied.secs, in.last_applied.inc);
	v.applied_ts = applied;
	v.applied_t = in.last_applied.term;
	pthread_mutex_lock(&m->lock);
	/* the newest optime it knows some member applied: its own, or the
	 * commit point (the primary applied every entry it committed) */
	v.max_ts = m->committed_ts > applied ? m->committed_ts : applied;
	v.max_t = m->committed_ts > applied ? m->committed_t : in.last_applied.term;
	/* and what the other members' heartbeats said they applied (mongod
	 * takes the newest of its MemberData) */
	{
		uint64_t hts;
		int64_t ht;
		if (repl_election_heard_max(&hts, &ht) && hts > v.max_ts) {
			v.max_ts = hts;
			v.max_t = ht;
		}
	}
	v.priority = m->o.self_index >= 0 && m->o.self_index < m->o.npeers ? m->peers[m->o.self_index].priority : 0;
	pthread_mutex_unlock(&m->lock);
	repl_election_vote_record(&v);
}

/* libraft answers the pending vote request (loop thread). */
static void
vote_answered(repl_member_t *m, const struct raft_message *msg)
{
	repl_election_vote_t v = {0};

	if (m->vote_candidate == 0 || msg->server_id != m->vote_candidate ||
	    msg->request_vote_result.pre_vote == raft_tribool_true)
		return;
	m->vote_candidate = 0;
	v.granted = msg->request_vote_result.vote_granted;
	v.term = (int64_t)m->vote_seen.req_term;
	v.candidate_id = (int32_t)(msg->server_id - 1);
	repl_election_vote_reason(&m->vote_seen, v.granted, v.reason, sizeof(v.reason));
	vote_record(m, &v);
}

/* A real vote request the vote floor refused (fault_recv, loop thread):
 * not granted, with the floor's reason. */
static void
vote_floor_record(repl_member_t *m, const struct raft_message *msg)
{
	repl_election_vote_t v = {0};

	v.granted = false;
	v.term = (int64_t)msg->request_vote.term;
	v.candidate_id = (int32_t)(msg->server_id - 1);
	if (msg->request_vote.term <= m->vote_floor.term)
		snprintf(v.reason, sizeof(v.reason),
		    "this member's data was wiped and it may have voted in term (%llu) before: it votes only past term "
		    "(%llu)", (unsigned long long)msg->request_vote.term, (unsigned long long)m->vote_floor.term);
	else
		snprintf(v.reason, sizeof(v.reason),
		    "this member's data was wiped and its Raft log (last entry %llu) does not yet hold what it held "
		    "before: it votes once its log reaches entry %llu", (unsigned long long)raft_last_index(&m->raft),
		    (unsigned long long)m->vote_floor.index);
	vote_record(m, &v);
}

static int
fault_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
	repl_member_t *m = ((struct raft *)io->data)->data;

	m->raft_recv = recv;
	m->raft_tick = tick;
	return m->io_start(io, msecs, observed_tick, fault_recv);
}

static int
guarded_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg, raft_io_send_cb cb)
{
	repl_member_t *m = ((struct raft *)io->data)->data;

	if (repl_raft_send_address(io->data, msg) == NULL) {
		static const char *const names[] = {"unavailable", "follower", "candidate", "leader"};
		const struct raft *r = io->data;
		char detail[96];
		snprintf(detail, sizeof(detail), "Raft state %s, term %llu", r->state < 4 ? names[r->state] : "?",
		    (unsigned long long)r->current_term);
		log_msg('I', 5000269, "dropped a Raft AppendEntries result built from a stale state", detail);
	}
	if (msg->type == RAFT_IO_REQUEST_VOTE_RESULT)
		vote_answered(m, msg);
	if (msg->type == RAFT_IO_REQUEST_VOTE &&
	    repl_raft_vote_floor_blocks(&m->vote_floor, floor_log_held(m), msg)) {
		/* as lost on the network: the candidacy of that term fails */
		vote_floor_log(m, msg->request_vote.term, msg->server_address, true);
		return RAFT_NOCONNECTION;
	}
	return repl_raft_send_checked(io, req, msg, cb, m->io_send);
}

static void
on_closed(struct raft *r)
{
	repl_member_t *m = r->data;

	raft_uv_close(&m->io);
	raft_uv_tcp_close(&m->transport);
	if (m->use_auth)
		repl_raft_auth_close(&m->auth_transport);
	if (m->use_tls)
		repl_raft_tls_close(&m->tls_transport);
	uv_close((uv_handle_t *)&m->submit_async, NULL);
	uv_close((uv_handle_t *)&m->stop_async, NULL);
	uv_close((uv_handle_t *)&m->watch_timer, NULL);
	uv_close((uv_handle_t *)&m->wake_prep, NULL);
}

static void
on_stop(uv_async_t *h)
{
	repl_member_t *m = h->data;

	uv_timer_stop(&m->watch_timer);
	raft_close(&m->raft, on_closed);
}

static void *
loop_main(void *arg)
{
	repl_member_t *m = arg;
	struct raft_configuration conf;
	int rv;
	unsigned et = (unsigned)m->o.election_timeout_ms / 2;

	tlog_set_ctx("ReplCoord-0");   /* the election lines' context, as mongod's */
	rv = uv_loop_init(&m->loop);
	if (rv != 0) {
		snprintf(m->start_msg, sizeof(m->start_msg), "uv_loop_init: %s", uv_strerror(rv));
		goto fail_noloop;
	}
	uv_async_init(&m->loop, &m->submit_async, on_submit);
	uv_async_init(&m->loop, &m->stop_async, on_stop);
	uv_timer_init(&m->loop, &m->watch_timer);
	uv_prepare_init(&m->loop, &m->wake_prep);
	m->submit_async.data = m->stop_async.data = m->watch_timer.data = m->wake_prep.data = m;
	uv_prepare_start(&m->wake_prep, on_wake_prep);
	rv = raft_uv_tcp_init(&m->transport, &m->loop);
	/* libraft -> keyFile handshake -> TLS relay -> TCP, each layer when
	 * configured: with TLS no Raft byte after libraft's preamble crosses in
	 * clear, with a keyFile none crosses an unauthenticated connection */
	{
		struct raft_uv_transport *top = &m->transport;
		m->use_tls = rv == 0 && repl_member_tls_mode() != REPL_MEMBER_TLS_OFF;
		if (m->use_tls && (rv = repl_raft_tls_init(&m->tls_transport, top, &m->loop)) != 0)
			m->use_tls = false;
		if (m->use_tls)
			top = &m->tls_transport;
		m->use_auth = rv == 0 && auth_member_key_present();
		if (m->use_auth && (rv = repl_raft_auth_init(&m->auth_transport, top, &m->loop)) != 0)
			m->use_auth = false;
		if (m->use_auth)
			top = &m->auth_transport;
		if (rv == 0)
			rv = raft_uv_init(&m->io, &m->loop, m->dir, top);
	}
	if (rv != 0) {
		snprintf(m->start_msg, sizeof(m->start_msg), "raft I/O: %s", raft_strerror(rv));
		goto fail;
	}
	m->fsm.version = 1;
	m->fsm.data = m;
	m->fsm.apply = fsm_apply;
	m->fsm.snapshot = fsm_snapshot;
	m->fsm.restore = fsm_restore;
	rv = raft_init(&m->raft, &m->io, &m->fsm, (raft_id)(m->peers[m->o.self_index].member_id + 1),
	    m->peers[m->o.self_index].raft_addr);
	if (rv != 0) {
		snprintf(m->start_msg, sizeof(m->start_msg), "raft_init: %s", raft_errmsg(&m->raft));
		raft_uv_close(&m->io);
		goto fail;
	}
	m->raft.data = m;
	m->io_start = m->io.start;
	m->io.start = fault_start;
	m->io_send = m->io.send;
	m->io.send = guarded_send;
	if (m->o.force_config) {
		/* raft_recover: the configuration appended to the kept log as
		 * its newest entry (libraft writes it as a closed segment) */
		raft_configuration_init(&conf);
		if (m->o.force_term > 0)
			rv = m->io.set_term(&m->io, m->o.force_term);
		for (int i = 0; i < m->o.npeers && rv == 0; i++)
			rv = raft_configuration_add(&conf, (raft_id)(m->peers[i].member_id + 1), m->peers[i].raft_addr,
			    m->peers[i].votes > 0 ? RAFT_VOTER : RAFT_STANDBY);
		if (rv == 0)
			rv = raft_recover(&m->raft, &conf);
		raft_configuration_close(&conf);
		if (rv != 0) {
			snprintf(m->start_msg, sizeof(m->start_msg), "raft_recover: %s", raft_errmsg(&m->raft));
			goto fail_raft;
		}
		log_msg('I', 5000271, "forced a new configuration into the Raft log", m->peers[m->o.self_index].raft_addr);
	} else if (m->o.bootstrap) {
		raft_configuration_init(&conf);
		for (int i = 0; i < m->o.npeers && rv == 0; i++)
			rv = raft_configuration_add(&conf, (raft_id)(m->peers[i].member_id + 1), m->peers[i].raft_addr,
			    RAFT_VOTER);
		if (rv == 0)
			rv = raft_bootstrap(&m->raft, &conf);
		raft_configuration_close(&conf);
		/* a one-member set moved onto Raft: the term goes on from the
		 * set's (its first election then passes it; libraft's bootstrap
		 * writes term 1 and refuses a folder whose term is not 0, so the
		 * term is set after it) */
		if (rv == 0 && m->o.bootstrap_term > 1)
			rv = m->io.set_term(&m->io, m->o.bootstrap_term);
		if (rv == RAFT_CANTBOOTSTRAP)
			rv = 0;   /* already bootstrapped: a restart */
		if (rv != 0) {
			snprintf(m->start_msg, sizeof(m->start_msg), "raft_bootstrap: %s", raft_strerror(rv));
			goto fail_raft;
		}
	}
	/* mongod's electionTimeoutMillis is the longest a set waits for a dead
	 * primary: Raft draws each timeout in [T, 2T], so T is half of it */
	raft_set_election_timeout(&m->raft, et < 100 ? 100 : et);
	raft_set_heartbeat_timeout(&m->raft, et / 10 < 20 ? 20 : et / 10 > 200 ? 200 : et / 10);
	raft_set_snapshot_threshold(&m->raft, SNAPSHOT_THRESHOLD);
	raft_set_snapshot_trailing(&m->raft, SNAPSHOT_TRAILING);
	raft_set_pre_vote(&m->raft, true);
	rv = raft_start(&m->raft);
	if (rv != 0) {
		snprintf(m->start_msg, sizeof(m->start_msg), "raft_start: %s", raft_errmsg(&m->raft));
		goto fail_raft;
	}
	uv_timer_start(&m->watch_timer, on_watch, 50, 50);
	pthread_mutex_lock(&m->lock);
	m->start_rc = 0;
	m->started = true;
	wake(m);
	pthread_mutex_unlock(&m->lock);
	uv_run(&m->loop, UV_RUN_DEFAULT);
	uv_loop_close(&m->loop);
	return NULL;
fail_raft:
	raft_close(&m->raft, on_closed);
	uv_run(&m->loop, UV_RUN_DEFAULT);
	goto done;
fail:
	if (m->use_auth)
		repl_raft_auth_close(&m->auth_transport);
	if (m->use_tls)
		repl_raft_tls_close(&m->tls_transport);
	m->use_auth = m->use_tls = false;
	uv_close((uv_handle_t *)&m->submit_async, NULL);
	uv_close((uv_handle_t *)&m->stop_async, NULL);
	uv_close((uv_handle_t *)&m->watch_timer, NULL);
	uv_close((uv_handle_t *)&m->wake_prep, NULL);
	uv_run(&m->loop, UV_RUN_DEFAULT);
done:
	uv_loop_close(&m->loop);
fail_noloop:
	pthread_mutex_lock(&m->lock);
	m->start_rc = -1;
	m->started = true;
	wake(m);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- applier ------------------------------------------------------------------------------- */

/* What repl/member_recover.h needs of the member (arg: the member). */
static bool
host_source(void *arg, char *source, size_t size)
{
	repl_member_t *m = arg;
	bool stop;

	unsigned k;
	int pick = -1;

	pthread_mutex_lock(&m->lock);
	stop = m->stopping;
	source[0] = '\0';
	/* the leader first, then in turn every other member: the leader may
	 * itself be copying data (STARTUP2) and refuse, a secondary will do */
	k = m->source_tries++;
	if (k % 2 == 0 && m->leader_index >= 0 && m->leader_index != m->o.self_index)
		pick = m->leader_index;
	else if (m->o.npeers > 1) {
		pick = (int)((k / 2) % (unsigned)m->o.npeers);
		if (pick == m->o.self_index)
			pick = (pick + 1) % m->o.npeers;
	}
	if (pick >= 0)
		bson_strncpy(source, m->peers[pick].host, size);
	pthread_mutex_unlock(&m->lock);
	return !stop;
}

static void
host_nap(void *arg)
{
	repl_member_t *m = arg;

	pthread_mutex_lock(&m->lock);
	cond_wait_ms(m, 500);
	pthread_mutex_unlock(&m->lock);
}

static void
host_busy(void *arg, repl_member_state_t st)
{
	repl_member_t *m = arg;

	pthread_mutex_lock(&m->lock);
	m->busy_state = st;
	if (!m->primary && !m->failed)
		repl_set_raft_role(m->o.rs, follower_state_locked(m), (int64_t)m->term);
	pthread_mutex_unlock(&m->lock);
}

/* A rollback's minValid: RECOVERING from the end of ROLLBACK (the
 * busy(0) that follows shows it) until the applier passes it. */
static void
host_min_valid(void *arg, repl_ts_t ts)
{
	repl_member_t *m = arg;

	pthread_mutex_lock(&m->lock);
	m->rb_min_valid = ts;
	pthread_mutex_unlock(&m->lock);
}

static bool
host_stopping(void *arg)
{
	repl_member_t *m = arg;
	bool stop;

	pthread_mutex_lock(&m->lock);
	stop = m->stopping;
	pthread_mutex_unlock(&m->lock);
	return stop;
}

static void
host_set_last(void *arg, repl_ts_t ts, bool force)
{
	repl_member_t *m = arg;

	pthread_mutex_lock(&m->lock);
	if (force || ts > m->local_last_ts)
		m->local_last_ts = ts;
	pthread_mutex_unlock(&m->lock);
}

/* The process's applier counters (serverStatus().metrics.repl.apply):
 * members come and go (a re-added member starts a new one), the counts
 * stay, as mongod's. */
static struct {
	_Atomic uint64_t ops, batches, batch_us, batch_size;
} apply_metrics;

/* A run of entries applied in one storage transaction
 * (repl_oplog_apply_run): at most this many entries, and past the first at
 * most this many bytes (a transaction's writes stay in WiredTiger's cache
 * until its commit). */
#define APPLY_RUN_MAX 256
#define APPLY_RUN_BYTES (16u << 20)

/* An entry of the set's log applied (or skipped as here already): the
 * member's positions move past it.  m->lock held. */
static void
applied_locked(repl_member_t *m, const entry_node_t *n)
{
	if (n->ts != 0) {
		m->prev_ts = n->ts;
		m->have_prev = true;
	}
	m->applied++;
	if (n->ts > m->local_last_ts)
		m->local_last_ts = n->ts;
	if (m->rb_min_valid != 0 && n->ts >= m->rb_min_valid) {
		m->rb_min_valid = 0;   /* a rollback's minValid passed: SECONDARY */
		if (!m->primary && !m->failed)
			repl_set_raft_role(m->o.rs, follower_state_locked(m), (int64_t)m->term);
	}
	if (n->ts > m->set_ts) {
		m->set_ts = n->ts;
		/* readConcern majority reads there (at most) */
		repl_oplog_pin_oldest(m->o.oplog, m->set_ts < m->committed_ts ? m->set_ts : m->committed_ts);
	}
	/* waiters are woken once the list is done, or every 64 entries of a
	 * long one */
	if (m->applied % 64 == 0)
		wake(m);
}

/* The applier could not apply an entry: no later entry may be applied past
 * the hole, so the member stops applying and stays RECOVERING.  Entered
 * with m->lock held; returns with it released and err cleared. */
static void
applier_stop_locked(repl_member_t *m, terr_t *err)
{
	m->failed = true;
	pthread_mutex_unlock(&m->lock);
	log_msg('E', 5000243, "could not apply a replicated oplog entry; this member stops applying", err->msg);
	repl_set_raft_role(m->o.rs, REPL_STATE_RECOVERING, (int64_t)m->term);
	terr_clear(err);
}

/* The rsSyncApplyStop fail point is on (test-only). */
static bool
apply_stopped(void)
{
	bson_t d;

	if (!failpoint_any_active() || !failpoint_fire("rsSyncApplyStop", NULL, NULL, &d))
		return false;
	bson_destroy(&d);
	return true;
}

static void *
applier_main(void *arg)
{
	repl_member_t *m = arg;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;
	int64_t batch_start_us = 0;
	uint64_t batch_ops = 0;
	int64_t round_size = 0;
	char dbpath[4096];
	size_t dl;
	repl_recover_host_t host = {.arg = m, .st = m->o.st, .oplog = m->o.oplog, .dbpath = dbpath,
	    .source = host_source, .nap = host_nap, .busy = host_busy, .stopping = host_stopping,
	    .set_last = host_set_last, .min_valid = host_min_valid};

	repl_ts_t floor_ts;
	bson_t *run = bson_malloc(sizeof(*run) * APPLY_RUN_MAX);
	bool *run_applied = bson_malloc(sizeof(*run_applied) * APPLY_RUN_MAX);

	bson_strncpy(dbpath, m->dir, sizeof(dbpath));   /* <dbpath>/raft: rollback files go in <dbpath> */
	dl = strlen(dbpath);
	if (dl > 5 && strcmp(dbpath + dl - 5, "/raft") == 0)
		dbpath[dl - 5] = '\0';

	if (storage_session_open(m->o.st, &s, &err) != 0) {
		log_msg('E', 5000242, "the applier could not open a storage session", err.msg);
		terr_clear(&err);
		bson_free(run);
		bson_free(run_applied);
		return NULL;
	}
	floor_ts = repl_recover_oplog_floor(m->o.oplog, s);
	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		entry_node_t *list, *n;
		if (m->draining && m->applied >= m->drain_target && !m->failed) {
			m->draining = false;
			if (m->leader_seen && m->leader_term == m->drain_term) {
				bson_t msg = BSON_INITIALIZER;
				uint64_t dterm = m->drain_term;
				/* the sessions' rows first: a retried write that reaches
				 * the new primary must find its first execution */
				if (m->o.on_primary != NULL) {
					pthread_mutex_unlock(&m->lock);
					m->o.on_primary(m->o.on_primary_arg);
					pthread_mutex_lock(&m->lock);
					if (!m->leader_seen || m->leader_term != dterm)
						continue;
				}
				role_set_locked(m, true, dterm);
				pthread_mutex_unlock(&m->lock);
				/* mongod's "new primary" no-op: the term's first entry,
				 * replicated as any other */
				BSON_APPEND_UTF8(&msg, "msg", "new primary");
				if (repl_oplog_noop(m->o.oplog, s, &msg, NULL, &err) != 0) {
					log_msg('W', 5000246, "could not write the new primary's no-op", err.msg);
					terr_clear(&err);
				}
				bson_destroy(&msg);
				pthread_mutex_lock(&m->lock);
				continue;
			}
		}
		/* mongod's rsSyncApplyStop (test-only): a secondary's applier
		 * waits while it is on (a member held short of its minValid) */
		if (m->to_apply.head == NULL || m->failed ||
		    (!m->primary && apply_stopped())) {
			apply_wait_ms(m, 50);
			continue;
		}
		round_size = (int64_t)m->to_apply.count;
		list = queue_take_all(&m->to_apply);
		if (!m->primary && tlog_debug_on("REPL", 2)) {
			/* mongod's OplogApplierImpl line for each batch a secondary applies */
			bson_t attr = BSON_INITIALIZER;
			int64_t size = 0;
			for (n = list; n != NULL; n = n->next)
				size++;
			BSON_APPEND_INT64(&attr, "size", size);
			tlog_debug(2, "REPL", 21230, "Oplog application batch size", &attr);
			bson_destroy(&attr);
		}
		pthread_mutex_unlock(&m->lock);
		batch_start_us = tm_now_us();
		batch_ops = 0;
		for (n = list; n != NULL; n = n->next) {
			bson_t e;
			bool applied = false, check, own, grouping;
			repl_ts_t prev_ts, local_newest = 0;
			int rc = -1;
			if (n->ts == 0 && bson_init_static(&e, n->data, n->len) && bson_has_field(&e, REPL_MEMBER_CONFIG_KEY)) {
				/* a configuration the primary replicated (raft_reconfig.c) */
				if (m->o.on_config != NULL)
					m->o.on_config(m->o.on_config_arg, &e);
				pthread_mutex_lock(&m->lock);
				m->applied++;
				wake(m);
				pthread_mutex_unlock(&m->lock);
				continue;
			}
			/* secondaryDelaySecs: an entry is applied that long after its
			 * primary wrote it (its ts's seconds) -- from SECONDARY on: the
			 * catch-up to a minValid (STARTUP2) is not delayed, as mongod's
			 * initial sync takes its batches without the steady-state
			 * batcher's secondaryDelaySecs bound (else a delayed member added
			 * by a reconfig stayed STARTUP2, refusing reads, for the delay) */
			pthread_mutex_lock(&m->lock);
			while (m->delay_secs > 0 && m->min_valid.index == 0 && !m->stopping && !m->draining &&
			    (int64_t)repl_ts_secs(n->ts) + m->delay_secs > wall_ms() / 1000)
				cond_wait_ms(m, 200);
			if (m->stopping) {
				pthread_mutex_unlock(&m->lock);
				break;
			}
			pthread_mutex_unlock(&m->lock);
			/* the check for a deposed primary's own entries costs a scan:
			 * only when this member wrote past the set's last entry.  An
			 * entry of this primary's own term that its feeder read from
			 * the local oplog is here by construction (only this term's
			 * leader writes entries of the term, and nothing is rolled back
			 * while it is primary): no lookup at all -- two oplog lookups
			 * per entry on the path of every w: "majority" write before */
			pthread_mutex_lock(&m->lock);
			check = m->have_prev && m->local_last_ts > m->prev_ts;
			prev_ts = m->prev_ts;
			own = m->primary && !n->snapshot && n->ts != 0 && n->t == (int64_t)m->term && n->ts <= m->fed_ts;
			/* a secondary applies runs of CRUD entries in one transaction
			 * (below); a primary's entries are its own, a delayed member
			 * waits entry by entry */
			grouping = !m->primary && m->delay_secs == 0;
			pthread_mutex_unlock(&m->lock);
			/* the member's position may lag its oplog (a deposed primary's
			 * write the feeder has not read yet): the oplog's own newest
			 * visible entry (in memory) says too -- asked once per entry
			 * applied alone or per run, not per entry of a run (its
			 * all_committed query was 13% of the applier's instructions) */
			if (!check && !own && !n->snapshot && n->ts != 0) {
				local_newest = repl_oplog_last_optime(m->o.oplog).ts;
				if (prev_ts != 0 && local_newest > prev_ts)
					check = true;
			}
			if (!own && !check && grouping && !n->snapshot && n->ts != 0 && n->ts >= floor_ts &&
			    bson_init_static(&run[0], n->data, n->len) && repl_oplog_apply_groupable(&run[0])) {
				/* the run: this entry and the groupable ones after it */
				entry_node_t *k, *last = n;
				size_t bytes = n->len;
				bool defer_last = false;
				int cnt = 1, done = 0;
				bson_t next;
				for (k = n->next; k != NULL && cnt < APPLY_RUN_MAX && !k->snapshot && k->ts > last->ts &&
				    bytes + k->len <= APPLY_RUN_BYTES && bson_init_static(&run[cnt], k->data, k->len) &&
				    repl_oplog_apply_groupable(&run[cnt]); k = k->next) {
					bytes += k->len;
					last = k;
					cnt++;
				}
				/* the entry after the run, of the same retryable write,
				 * writes the session row the run's last would */
				if (last->next != NULL && !last->next->snapshot && last->next->ts != 0 &&
				    bson_init_static(&next, last->next->data, last->next->len) &&
				    repl_oplog_apply_same_session(&run[cnt - 1], &next))
					defer_last = true;
				rc = repl_oplog_apply_run(m->o.oplog, m->o.st, s, run, cnt, local_newest, defer_last,
				    run_applied, &done, &err);
				/* published only now: nothing of the run was visible or
				 * durable before its commit */
				pthread_mutex_lock(&m->lock);
				for (int i = 0; i < done; i++, n = n->next) {
					applied_locked(m, n);
					if (run_applied[i])
						batch_ops++;
					last = n;
				}
				if (rc == 0) {
					n = last;   /* the loop moves on past the run */
					pthread_mutex_unlock(&m->lock);
					continue;
				}
				/* n: the entry that failed */
				applier_stop_locked(m, &err);
				break;
			}
			if (own) {
				rc = 0;
			} else if (n->snapshot) {
				rc = repl_recover_snapshot(&host, s, n->ts, n->t, false, &err);
				floor_ts = repl_recover_oplog_floor(m->o.oplog, s);
			} else if (n->ts != 0 && n->ts < floor_ts) {
				rc = 0;   /* older than the local oplog: in the data already */
			} else {
				if (check) {
					repl_ts_t min_valid = 0;
					if ((rc = repl_recover_rollback(&host, s, prev_ts, n->ts, n->t, &min_valid, &err)) == 0 &&
					    min_valid != 0)
						repl_oplog_apply_set_min_valid(min_valid);   /* RECOVERING: host_min_valid */
					floor_ts = repl_recover_oplog_floor(m->o.oplog, s);
				}
				if (bson_init_static(&e, n->data, n->len) && (!check || rc == 0)) {
					/* the next entry of this round, of the same retryable
					 * write (a batch of inserts), writes the session row
					 * this one would: one row update per batch, not one
					 * per document (oplog_apply.h) */
					bson_t next;
					if (n->next != NULL && !n->next->snapshot && n->next->ts != 0 &&
					    bson_init_static(&next, n->next->data, n->next->len) &&
					    repl_oplog_apply_same_session(&e, &next))
						repl_oplog_apply_defer_session_row();
					rc = repl_oplog_apply_entry(m->o.oplog, m->o.st, s, &e, NULL, false, &applied, &err);
				}
			}
			pthread_mutex_lock(&m->lock);
			if (rc != 0) {
				applier_stop_locked(m, &err);
				break;
			}
			applied_locked(m, n);
			if (applied)
				batch_ops++;
			pthread_mutex_unlock(&m->lock);
		}
		queue_free(list);
		if (batch_ops > 0) {
			/* mongod's repl.apply.batches / repl.apply.ops: rounds of the
			 * applier that applied entries, and the entries applied */
			atomic_fetch_add(&apply_metrics.batches, 1);
			atomic_fetch_add(&apply_metrics.batch_us, (uint64_t)(tm_now_us() - batch_start_us));
			atomic_fetch_add(&apply_metrics.ops, batch_ops);
			/* mongod's repl.apply.batchSize: every entry of the batch
			 * handed to the applier (those it then skips too) */
			atomic_fetch_add(&apply_metrics.batch_size, (uint64_t)round_size);
		}
		pthread_mutex_lock(&m->lock);
		wake(m);
	}
	pthread_mutex_unlock(&m->lock);
	repl_oplog_apply_chain_reset();
	storage_session_close(s);
	bson_free(run);
	bson_free(run_applied);
	return NULL;
}

void
repl_member_apply_metrics(repl_member_apply_metrics_t *out)
{
	out->ops = atomic_load(&apply_metrics.ops);
	out->batches = atomic_load(&apply_metrics.batches);
	out->batches_total_ms = atomic_load(&apply_metrics.batch_us) / 1000;
	out->batch_size = atomic_load(&apply_metrics.batch_size);
}

void
repl_member_apply_buffer(repl_member_t *m, uint64_t *count, uint64_t *bytes)
{
	*count = *bytes = 0;
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->lock);
	*count = m->to_apply.count;
	*bytes = m->to_apply.bytes;
	pthread_mutex_unlock(&m->lock);
}

/* ---- feeder -------------------------------------------------------------------------------- */

/* What an oplog entry is to a transaction's chain (repl/oplog.h): one of
 * its partialTxn entries, its commit entry (applyOps with `count`), or
 * neither. */
enum { CHAIN_NONE, CHAIN_PARTIAL, CHAIN_COMMIT };

static int
chain_role(const bson_t *e)
{
	bson_iter_t it, o;

	if (!bson_iter_init_find(&it, e, "o") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &o) ||
	    !bson_iter_next(&o) || strcmp(bson_iter_key(&o), "applyOps") != 0)
		return CHAIN_NONE;
	while (bson_iter_next(&o)) {
		if (strcmp(bson_iter_key(&o), "partialTxn") == 0 && bson_iter_as_bool(&o))
			return CHAIN_PARTIAL;
		if (strcmp(bson_iter_key(&o), "count") == 0)
			return CHAIN_COMMIT;
	}
	return CHAIN_NONE;
}

/* A chain's entries gathered by the feeder: their BSON documents one after
 * the other, as the single Raft entry carries them (fsm_apply splits them
 * again). */
typedef struct chain_buf {
	uint8_t *data;
	size_t len, cap;
	repl_ts_t ts;                 /* the newest entry's */
	int64_t t;
} chain_buf_t;

static void
chain_add(chain_buf_t *c, const bson_t *e)
{
	bson_iter_t it;

	if (c->len + e->len > c->cap) {
		c->cap = (c->len + e->len) * 2;
		c->data = bson_realloc(c->data, c->cap);
	}
	memcpy(c->data + c->len, bson_get_data(e), e->len);
	c->len += e->len;
	if (bson_iter_init_find(&it, e, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		uint32_t secs, inc;
		bson_iter_timestamp(&it, &secs, &inc);
		c->ts = REPL_TS(secs, inc);
	}
	c->t = bson_iter_init_find(&it, e, "t") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
}

static void
chain_free(chain_buf_t *c)
{
	bson_free(c->data);
	*c = (chain_buf_t){0};
}

/* The raft_apply buffer of a node the feeder made, built off the loop
 * thread (zero padding to 8 bytes: see on_submit).  Left NULL when out of
 * memory: on_submit builds it then. */
static void
node_rbuf(entry_node_t *n)
{
	size_t len = (n->len + 7u) & ~(size_t)7u;

	if ((n->rbuf = raft_malloc(len)) == NULL)
		return;
	memcpy(n->rbuf, n->data, n->len);
	memset((uint8_t *)n->rbuf + n->len, 0, len - n->len);
}

/* The node of the gathered chain (its ts the newest entry's); c is emptied. */
static entry_node_t *
chain_node(chain_buf_t *c)
{
	entry_node_t *n = node_new(c->data, (uint32_t)c->len);

	n->ts = c->ts;
	n->t = c->t;
	chain_free(c);
	return n;
}

static void *
feeder_main(void *arg)
{
	repl_member_t *m = arg;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;

	if (storage_session_open(m->o.st, &s, &err) != 0) {
		log_msg('E', 5000244, "the feeder could not open a storage session", err.msg);
		terr_clear(&err);
		return NULL;
	}
	for (;;) {
		repl_ts_t after;
		bool primary;
		int got = 0;
		uint64_t seq = 0;
		storage_coll_t *oc = NULL;
		/* the oplog's insert notifier wakes the feeder on a commit (no
		 * polling while the primary is idle) */
		if (storage_coll_get(m->o.st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &oc, NULL) == 0)
			seq = storage_coll_insert_seq(oc);
		pthread_mutex_lock(&m->lock);
		if (m->stopping) {
			pthread_mutex_unlock(&m->lock);
			storage_coll_release(oc);
			break;
		}
		primary = m->primary;
		after = m->fed_ts;
		pthread_mutex_unlock(&m->lock);
		if (primary) {
			repl_oplog_cursor_t *cur = NULL;
			if (repl_oplog_scan_open(m->o.oplog, s, after, &cur, &err) == 0) {
				bson_t e;
				entry_queue_t q = {0};
				chain_buf_t chain = {0};
				/* a transaction's chain is one Raft entry (never cut by
				 * FEED_BATCH): the set's log holds all of it or none */
				while ((got < FEED_BATCH || chain.len > 0) && repl_oplog_cursor_next(cur, &e, &err) == 1) {
					repl_ts_t ets;
					int64_t et;
					char eop;
					int role;
					entry_node_t *n;
					/* one walk for ts, t and op; only a command may be a
					 * transaction's applyOps */
					entry_optime(bson_get_data(&e), e.len, &ets, &et, &eop);
					role = eop == 'c' ? chain_role(&e) : CHAIN_NONE;
					if (role == CHAIN_PARTIAL || (chain.len > 0 && role == CHAIN_COMMIT)) {
						chain_add(&chain, &e);
						if (role == CHAIN_PARTIAL)
							continue;
						n = chain_node(&chain);
					} else {
						if (chain.len > 0) {
							/* a chain without its commit entry (never written
							 * so: the primary commits a chain at once) */
							log_msg('W', 5000247, "a transaction's partial oplog entries without their commit entry",
							    "they are replicated as they are; secondaries never apply them");
							n = chain_node(&chain);
							queue_push(&q, n);
							got++;
						}
						n = node_with(bson_get_data(&e), e.len, ets, et);
					}
					after = n->ts;
					node_rbuf(n);
					queue_push(&q, n);
					got++;
				}
				/* a chain not visible to its end yet: read again later */
				chain_free(&chain);
				repl_oplog_cursor_close(cur);
				if (storage_txn_active(s))
					storage_txn_rollback(s);
				pthread_mutex_lock(&m->lock);
				if (m->primary && m->fed_ts < after) {
					for (entry_node_t *n = queue_take_all(&q), *next; n != NULL; n = next) {
						next = n->next;
						n->next = NULL;
						queue_push(&m->to_submit, n);
					}
					m->fed_ts = after;
					if (after > m->local_last_ts)
						m->local_last_ts = after;
				}
				pthread_mutex_unlock(&m->lock);
				queue_free(queue_take_all(&q));
				if (got > 0)
					uv_async_send(&m->submit_async);
			}
			terr_clear(&err);
		}
		if (got == 0 && primary && oc != NULL) {
			storage_coll_wait_insert(oc, seq, tm_now_us() + 50 * 1000);
		} else if (got == 0) {
			struct timespec nap = {0, 20 * 1000 * 1000};
			nanosleep(&nap, NULL);
		}
		storage_coll_release(oc);
	}
	storage_session_close(s);
	return NULL;
}

/* ---- start / stop ----------------------------------------------------------------------------- */

int
repl_member_start(const repl_member_options_t *o, repl_member_t **out, terr_t *err)
{
	repl_member_t *m = bson_malloc0(sizeof(*m));
	repl_oplog_optime_t last;

	*out = NULL;
	m->o = *o;
	m->no_lead = o->no_lead;
	m->delay_secs = o->delay_secs;
	m->peers = bson_malloc0(sizeof(*m->peers) * (size_t)o->npeers);
	memcpy(m->peers, o->peers, sizeof(*m->peers) * (size_t)o->npeers);
	m->o.peers = m->peers;
	if (m->o.election_timeout_ms <= 0)
		m->o.election_timeout_ms = 10000;
	m->dir = bson_strdup(o->dir);
	m->o.dir = m->dir;
	m->elog_hooks.arg = m;
	m->elog_hooks.candidate = hook_candidate;
	m->elog_hooks.was_primary = hook_was_primary;
	m->elog.hooks = &m->elog_hooks;
	m->leader_index = -1;
	if (mkdir(m->dir, 0700) != 0 && errno != EEXIST) {
		terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", m->dir, strerror(errno));
		bson_free(m->peers);
		bson_free(m->dir);
		bson_free(m);
		return -1;
	}
	/* a wiped member handed the configuration: its vote floor stored before
	 * Raft runs; any member: the stored one (a restart within the window) */
	if (repl_raft_vote_floor_raise(m->dir, &(repl_vote_floor_t){o->vote_floor, o->vote_floor_index}, err) != 0 ||
	    repl_raft_vote_floor_load(m->dir, &m->vote_floor, err) != 0) {
		bson_free(m->peers);
		bson_free(m->dir);
		bson_free(m);
		return -1;
	}
	if (m->vote_floor.term > 0 || m->vote_floor.index > 0) {
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "voteFloor", (int64_t)m->vote_floor.term);
		BSON_APPEND_INT64(&attr, "voteFloorIndex", (int64_t)m->vote_floor.index);
		tlog('I', "ELECTION", 5000292, "this member lost its vote memory with its data: it votes and stands only in "
		    "terms past its vote floor, once its Raft log reaches the index part", &attr);
		bson_destroy(&attr);
	}
	/* a member started without the set's history: its minValid stored
	 * before Raft runs; any member: the stored one (a restart before it
	 * was reached stays STARTUP2) */
	if (repl_raft_min_valid_store(m->dir, &(repl_min_valid_t){o->min_valid_index, o->min_valid_term}, err) != 0 ||
	    repl_raft_min_valid_load(m->dir, &m->min_valid, err) != 0) {
		bson_free(m->peers);
		bson_free(m->dir);
		bson_free(m);
		return -1;
	}
	if (m->min_valid.index != 0) {
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "minValidIndex", (int64_t)m->min_valid.index);
		BSON_APPEND_INT64(&attr, "minValidTerm", (int64_t)m->min_valid.term);
		tlog('I', "REPL", 5000322, "this member starts without the set's history: STARTUP2 until it applied "
		    "the set's log through its minValid", &attr);
		bson_destroy(&attr);
	}
	/* libraft's segments written over zeros, not fallocated space: each
	 * append then overwrites written blocks (raft_segment_fill.h) */
	if (repl_raft_segment_fill_register(m->dir) != 0)
		log_msg('W', 5000296, "the Raft folder's segments are not zero-filled", "appends take the slow path");
	last = repl_oplog_last_optime(o->oplog);
	m->local_last_ts = last.ts;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	pthread_cond_init(&m->apply_cond, NULL);
	m->takeover = repl_takeover_new();
	pthread_create(&m->loop_thread, NULL, loop_main, m);
	pthread_mutex_lock(&m->lock);
	while (!m->started)
		pthread_cond_wait(&m->cond, &m->lock);
	pthread_mutex_unlock(&m->lock);
	if (m->start_rc != 0) {
		pthread_join(m->loop_thread, NULL);
		terr_set(err, TERR_INTERNAL_ERROR, "could not start replication: %s", m->start_msg);
		repl_takeover_free(m->takeover);
		pthread_mutex_destroy(&m->lock);
		pthread_cond_destroy(&m->cond);
		pthread_cond_destroy(&m->apply_cond);
		bson_free(m->peers);
		bson_free(m->dir);
		bson_free(m);
		return -1;
	}
	pthread_create(&m->applier_thread, NULL, applier_main, m);
	pthread_create(&m->feeder_thread, NULL, feeder_main, m);
	m->rejoin = repl_rejoin_start(m, m->o.rs);
	log_msg('I', 5000245, "replication started on Raft", m->peers[m->o.self_index].raft_addr);
	*out = m;
	return 0;
}

void
repl_member_note_vote_floor(repl_member_t *m, int64_t member_id, uint64_t floor, uint64_t index)
{
	raft_id id = (raft_id)(member_id + 1);
	int i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->npeer_floor && m->peer_floor[i].id != id; i++)
		;
	if (i < REPL_MAX_MEMBERS) {
		m->peer_floor[i].id = id;
		if (i == m->npeer_floor || floor > m->peer_floor[i].floor)
			m->peer_floor[i].floor = floor;
		if (i == m->npeer_floor || index > m->peer_floor[i].index)
			m->peer_floor[i].index = index;
		if (i == m->npeer_floor)
			m->npeer_floor++;
	}
	pthread_mutex_unlock(&m->lock);
}

typedef struct lead_point {
	repl_member_t *m;
	uint64_t term, last_index;
	bool leads;
} lead_point_t;

static void
lead_point_read(struct raft *r, void *arg)
{
	lead_point_t *p = arg;

	p->leads = raft_state(r) == RAFT_LEADER;
	p->term = r->current_term;
	p->last_index = raft_last_index(r);
	pthread_mutex_lock(&p->m->lock);
	p->leads = p->leads && p->m->primary;
	pthread_mutex_unlock(&p->m->lock);
}

int
repl_member_lead_point(repl_member_t *m, uint64_t *term, uint64_t *last_index, int64_t deadline_us)
{
	lead_point_t p = {m, 0, 0, false};

	if (m == NULL || repl_member_on_loop(m, lead_point_read, &p, deadline_us) != 0 || !p.leads)
		return -1;
	*term = p.term;
	*last_index = p.last_index;
	return 0;
}

void
repl_member_halt(repl_member_t *m)
{
	if (m == NULL || m->halted)
		return;
	m->halted = true;
	repl_rejoin_stop(m->rejoin);
	m->rejoin = NULL;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	wake(m);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->feeder_thread, NULL);
	pthread_join(m->applier_thread, NULL);
	uv_async_send(&m->stop_async);
	pthread_join(m->loop_thread, NULL);
	if (m->snap_session != NULL)
		storage_session_close(m->snap_session);
	m->snap_session = NULL;
	repl_oplog_pin_oldest(m->o.oplog, 0);
	queue_free(queue_take_all(&m->to_apply));
	queue_free(queue_take_all(&m->to_submit));
}

void
repl_member_stop(repl_member_t *m)
{
	if (m == NULL)
		return;
	repl_member_halt(m);
	repl_takeover_free(m->takeover);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	pthread_cond_destroy(&m->apply_cond);
	bson_free(m->peers);
	bson_free(m->dir);
	bson_free(m);
}

/* ---- getters ----------------------------------------------------------------------------------- */

repl_ts_t
repl_member_committed_ts(repl_member_t *m)
{
	repl_ts_t t;

	pthread_mutex_lock(&m->lock);
	t = m->committed_ts;
	pthread_mutex_unlock(&m->lock);
	return t;
}

repl_ts_t
repl_member_majority_read_ts(repl_member_t *m)
{
	repl_ts_t t;

	pthread_mutex_lock(&m->lock);
	t = m->committed_ts < m->set_ts ? m->committed_ts : m->set_ts;
	pthread_mutex_unlock(&m->lock);
	return t;
}

repl_ts_t
repl_member_local_last_ts(repl_member_t *m)
{
	repl_ts_t t;

	pthread_mutex_lock(&m->lock);
	t = m->local_last_ts;
	pthread_mutex_unlock(&m->lock);
	return t;
}

repl_ts_t
repl_member_wait_local_moved(repl_member_t *m, repl_ts_t seen, int64_t deadline_us)
{
	repl_ts_t t;

	pthread_mutex_lock(&m->lock);
	/* the applier broadcasts m->cond after each round (wake) */
	while (m->local_last_ts == seen && !m->stopping && tm_now_us() < deadline_us) {
		int64_t left_ms = (deadline_us - tm_now_us()) / 1000;
		cond_wait_ms(m, left_ms < 1 ? 1 : left_ms > 500 ? 500 : (int)left_ms);
	}
	t = m->local_last_ts;
	pthread_mutex_unlock(&m->lock);
	return t;
}

int
repl_member_wait_committed(repl_member_t *m, repl_ts_t ts, int64_t t, int64_t deadline_us)
{
	int rc = 0;
	uint64_t term;

	pthread_mutex_lock(&m->lock);
	term = m->term;
	/* by ts alone a deposed primary would take a new leader's entries,
	 * whose ts pass its own uncommitted one, for its commit (found by
	 * tests/e2e/replset/jepsen_set.py): the term must be the entry's */
	/* and, as mongod's wait for the committed snapshot, until the applier
	 * passed it: a majority read after the write sees it */
	while (!(m->committed_t == t && m->committed_ts >= ts && m->set_ts >= ts)) {
		if (m->committed_t > t || !m->primary || m->term != term || m->stopping) {
			rc = 2;
			break;
		}
		if (deadline_us > 0 && tm_now_us() >= deadline_us) {
			rc = 1;
			break;
		}
		cond_wait_ms(m, 20);
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int
repl_member_view(repl_member_t *m, repl_member_view_t *rows, int max, int *leader_index)
{
	int n = 0;

	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < m->o.npeers && n < max; i++, n++) {
		rows[n].member_id = m->peers[i].member_id;
		rows[n].self = i == m->o.self_index;
		rows[n].leader = i == m->leader_index;
		rows[n].reachable = m->reachable[i] || rows[n].self;
		rows[n].heard = m->heard[i] || rows[n].reachable;
		rows[n].last_contact_ms = m->last_contact_ms[i];
	}
	*leader_index = m->leader_index;
	pthread_mutex_unlock(&m->lock);
	return n;
}

int
repl_member_wait_count(repl_member_t *m, repl_ts_t ts, int n, int64_t deadline_us)
{
	int rc = 0;
	uint64_t term;

	pthread_mutex_lock(&m->lock);
	term = m->term;
	for (;;) {
		uint64_t idx = 0;
		unsigned first = m->sub_next > 4096 ? m->sub_next - 4096 : 0;
		if (!m->primary || m->term != term || m->stopping) {
			rc = 2;
			break;
		}
		/* the first entry submitted at or after ts; a ts older than the
		 * ring is majority-committed or it would still be in it */
		for (unsigned k = first; k < m->sub_next; k++) {
			if (m->sub[k % 4096].ts >= ts) {
				idx = m->sub[k % 4096].idx;
				break;
			}
		}
		if (idx != 0) {
			int have = 1;   /* this member applied it: it wrote it */
			for (int i = 0; i < m->o.npeers; i++)
				if (i != m->o.self_index && m->match[i] >= idx)
					have++;
			if (have >= n)
				break;
		}
		if (deadline_us > 0 && tm_now_us() >= deadline_us) {
			rc = 1;
			break;
		}
		cond_wait_ms(m, 20);
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int
repl_member_step_down(repl_member_t *m, int64_t deadline_us, int64_t until_ms, bool force, terr_t *err)
{
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	if (!m->primary) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary so can't step down");
	}
	/* no more writes from now on; the loop thread starts the transfer */
	role_set_locked(m, false, m->term);
	m->transfer_requested = true;
	if (force) {
		/* frozen from now: a failed transfer does not give the writes
		 * back (transfer_done needs leader_seen), the loop hands the
		 * leadership on again at every tick while the period lasts */
		m->leader_seen = false;
		if (until_ms > m->frozen_until_ms)
			m->frozen_until_ms = until_ms;
	}
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->submit_async);
	pthread_mutex_lock(&m->lock);
	for (;;) {
		if (m->leader_index >= 0 && m->leader_index != m->o.self_index)
			break;   /* another member leads */
		if (!m->transfer_requested && !m->transfer_pending && m->primary) {
			/* the transfer ended with this member still leading (its
			 * target did not catch up or stand within an election
			 * timeout: a loaded machine, a member just wiped that the
			 * leader's loop is feeding): tried again while the catch-up
			 * period lasts, as mongod waits that long for an electable
			 * secondary to catch up; writes refused again meanwhile */
			if (m->stopping || tm_now_us() + (int64_t)m->o.election_timeout_ms * 1000 > deadline_us) {
				rc = -1;
				break;
			}
			cond_wait_ms(m, 100);   /* no transfer possible (none): not a spin */
			if (!m->primary || m->transfer_requested || m->transfer_pending || m->stopping)
				continue;
			role_set_locked(m, false, m->term);
			m->transfer_requested = true;
			pthread_mutex_unlock(&m->lock);
			uv_async_send(&m->submit_async);
			pthread_mutex_lock(&m->lock);
			continue;
		}
		if (m->stopping || tm_now_us() >= deadline_us) {
			rc = -1;
			break;
		}
		cond_wait_ms(m, 20);
	}
	if (rc != 0 && force && !m->stopping) {
		/* forced: SECONDARY already, frozen; the loop hands the
		 * leadership on while the period lasts (on_watch) */
		rc = 0;
	}
	if (rc == 0 && until_ms > m->frozen_until_ms)
		m->frozen_until_ms = until_ms;
	pthread_mutex_unlock(&m->lock);
	if (rc != 0) {
		struct timespec ts;
		struct tm tm;
		char date[64];
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
		return terr_set(err, TERR_EXCEEDED_TIME_LIMIT,
		    "No electable secondaries caught up as of %s.%03ldZ. Please use the replSetStepDown command with the argument {force: true} to force node to step down.",
		    date, ts.tv_nsec / 1000000);
	}
	return 0;
}

int
repl_member_freeze(repl_member_t *m, int64_t secs, terr_t *err)
{
	pthread_mutex_lock(&m->lock);
	if (m->primary || (m->leader_index >= 0 && m->leader_index == m->o.self_index)) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, TERR_NOT_SECONDARY,
		    "Cannot freeze node when primary or running for election, state: Primary");
	}
	if (secs == 0) {
		m->frozen_until_ms = 0;
		tlog('I', "REPL", 21818, "Unfreezing", NULL);
	} else {
		int64_t until = wall_ms() + secs * 1000;
		if (until > m->frozen_until_ms)
			m->frozen_until_ms = until;
		tlog('I', "REPL", 21819, "Freezing", NULL);
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int
repl_member_transfer_to(repl_member_t *m, int64_t member_id, uint64_t term, terr_t *err)
{
	int to = -1;

	pthread_mutex_lock(&m->lock);
	if (!m->primary || m->o.self_index < 0 || m->o.self_index >= m->o.npeers) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	}
	if (term != m->term) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, 11602, "priority takeover asked in term %llu; this primary's term is %llu",
		    (unsigned long long)term, (unsigned long long)m->term);
	}
	for (int i = 0; i < m->o.npeers; i++)
		if (m->peers[i].member_id == member_id && i != m->o.self_index &&
		    m->peers[i].priority > m->peers[m->o.self_index].priority)
			to = i;
	if (to < 0) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, TERR_BAD_VALUE, "member %lld has no higher priority than this primary", (long long)member_id);
	}
	/* as a stepdown: no more writes; the loop thread starts the transfer */
	role_set_locked(m, false, m->term);
	m->transfer_to = (raft_id)(member_id + 1);
	m->transfer_requested = true;
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->submit_async);
	return 0;
}

/* ---- reconfiguration (raft_reconfig.c) --------------------------------------------------------------- */

int
repl_member_on_loop(repl_member_t *m, void (*fn)(struct raft *r, void *arg), void *arg, int64_t deadline_us)
{
	int rc = 0;

	pthread_mutex_lock(&m->lock);
	while (m->loop_fn != NULL && !m->stopping && tm_now_us() < deadline_us)
		cond_wait_ms(m, 20);
	if (m->loop_fn != NULL || m->stopping) {
		pthread_mutex_unlock(&m->lock);
		return -1;
	}
	m->loop_fn = fn;
	m->loop_arg = arg;
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->submit_async);
	pthread_mutex_lock(&m->lock);
	while (m->loop_fn == fn && m->loop_arg == arg &&
	    (m->loop_running || (!m->stopping && tm_now_us() < deadline_us)))
		cond_wait_ms(m, 20);
	if (m->loop_fn == fn && m->loop_arg == arg) {
		m->loop_fn = NULL;   /* never run (it is not running: checked above) */
		rc = -1;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

void
repl_member_reconfigure(repl_member_t *m, const repl_member_peer_t *peers, int n, int self_index, bool no_lead,
                        int64_t delay_secs)
{
	repl_member_peer_t *np = bson_malloc0(sizeof(*np) * (size_t)(n > 0 ? n : 1));
	int64_t contact[REPL_MAX_MEMBERS] = {0};
	bool reach[REPL_MAX_MEMBERS] = {false};
	uint64_t match[REPL_MAX_MEMBERS] = {0};

	memcpy(np, peers, sizeof(*np) * (size_t)n);
	pthread_mutex_lock(&m->lock);
	/* what was known of each member follows it to its new row */
	for (int i = 0; i < n && i < REPL_MAX_MEMBERS; i++)
		for (int j = 0; j < m->o.npeers && j < REPL_MAX_MEMBERS; j++)
			if (m->peers[j].member_id == np[i].member_id) {
				contact[i] = m->last_contact_ms[j];
				reach[i] = m->reachable[j];
				match[i] = m->match[j];
			}
	memcpy(m->last_contact_ms, contact, sizeof(contact));
	memcpy(m->reachable, reach, sizeof(reach));
	memcpy(m->match, match, sizeof(match));
	bson_free(m->peers);
	m->peers = np;
	m->o.peers = np;
	m->o.npeers = n;
	if (self_index >= 0)
		m->o.self_index = self_index;
	m->no_lead = no_lead;
	m->delay_secs = delay_secs;
	m->leader_index = -1;   /* the next watch tick finds it again */
	if (no_lead && m->primary) {
		/* demoted: stop taking writes and hand the leadership on */
		role_set_locked(m, false, m->term);
		m->transfer_requested = true;
	}
	wake(m);
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->submit_async);
}

int
repl_member_submit_config(repl_member_t *m, const bson_t *entry)
{
	entry_node_t *n;

	pthread_mutex_lock(&m->lock);
	if (!m->primary) {
		pthread_mutex_unlock(&m->lock);
		return -1;
	}
	n = node_new(bson_get_data(entry), entry->len);
	queue_push(&m->to_submit, n);
	pthread_mutex_unlock(&m->lock);
	uv_async_send(&m->submit_async);
	return 0;
}

/* ---- compaction of a set just moved onto Raft (raft_member.h) ------------------------------------- */

typedef struct compact_arg {
	unsigned threshold;           /* in: the snapshot threshold to set (0: leave it) */
	raft_index snapshot_index;    /* out: the index of Raft's last snapshot (0: none) */
	bool names_self;              /* out: that snapshot's configuration names this member */
} compact_arg_t;

/* Loop thread: the threshold set, the last snapshot's index and whether its
 * configuration surely names this member (snapshot_self) read. */
static void
compact_on_loop(struct raft *r, void *arg)
{
	compact_arg_t *a = arg;

	if (a->threshold > 0)
		raft_set_snapshot_threshold(r, a->threshold);
	a->snapshot_index = r->log.snapshot.last_index;
	a->names_self = ((repl_member_t *)r->data)->snapshot_self;
}

/* One no-op entry written as primary and waited for until committed:
 * 0, or -1 with err. */
static int
compact_noop(repl_member_t *m, storage_session_t *s, int64_t deadline_us, terr_t *err)
{
	bson_t msg = BSON_INITIALIZER;
	repl_oplog_optime_t at = REPL_OPLOG_OPTIME_NULL;
	int rc;

	BSON_APPEND_UTF8(&msg, "msg", "compacting the set's log before its first member is added");
	rc = repl_oplog_noop(m->o.oplog, s, &msg, &at, err);
	bson_destroy(&msg);
	if (rc != 0)
		return -1;
	rc = repl_member_wait_committed(m, at.ts, at.t, deadline_us);
	if (rc == 1)
		return terr_set(err, TERR_EXCEEDED_TIME_LIMIT, "the set's log was not compacted in time");
	if (rc != 0)
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary: stepped down while compacting the set's log");
	return 0;
}

int
repl_member_compact(repl_member_t *m, bool stale_only, int64_t deadline_us, terr_t *err)
{
	storage_session_t *s = NULL;
	compact_arg_t a = {0, 0, false};
	raft_index before;
	int ret = 0;

	pthread_mutex_lock(&m->lock);
	if (!m->primary) {
		pthread_mutex_unlock(&m->lock);
		return terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary");
	}
	pthread_mutex_unlock(&m->lock);
	/* a snapshot already taken will do when its configuration names this
	 * leader: a new member's first AppendEntries (from index 1) becomes the
	 * snapshot whenever one exists */
	if (repl_member_on_loop(m, compact_on_loop, &a, deadline_us) != 0)
		return terr_set(err, TERR_EXCEEDED_TIME_LIMIT, "the set's log was not compacted in time");
	if ((a.snapshot_index > 0 && a.names_self) || (stale_only && a.snapshot_index == 0))
		return 0;
	before = a.snapshot_index;
	RET(storage_session_open(m->o.st, &s, err));
	/* the snapshot's optime must be an oplog entry the set's log carries:
	 * one committed before the threshold drops */
	ret = compact_noop(m, s, deadline_us, err);
	if (ret == 0) {
		a.threshold = 1;
		if (repl_member_on_loop(m, compact_on_loop, &a, deadline_us) != 0)
			ret = terr_set(err, TERR_EXCEEDED_TIME_LIMIT, "the set's log was not compacted in time");
	}
	/* Raft takes the snapshot as it applies the next entry (again at the
	 * next one when the applier was not ready: RAFT_BUSY) */
	while (ret == 0 && a.snapshot_index <= before) {
		int64_t until = tm_now_us() + 200 * 1000;
		ret = compact_noop(m, s, deadline_us, err);
		while (ret == 0 && a.snapshot_index <= before && tm_now_us() < until) {
			struct timespec nap = {0, 10 * 1000 * 1000};
			a.threshold = 0;
			if (repl_member_on_loop(m, compact_on_loop, &a, deadline_us) != 0 ||
			    (deadline_us > 0 && tm_now_us() >= deadline_us))
				ret = terr_set(err, TERR_EXCEEDED_TIME_LIMIT, "the set's log was not compacted in time");
			else if (a.snapshot_index <= before)
				nanosleep(&nap, NULL);
		}
	}
	/* the usual threshold again, whatever happened (a loop that stopped
	 * meanwhile takes its own at the next start) */
	{
		compact_arg_t back = {SNAPSHOT_THRESHOLD, 0, false};
		(void)repl_member_on_loop(m, compact_on_loop, &back, tm_now_us() + 5 * 1000 * 1000);
	}
	storage_session_close(s);
	if (ret == 0) {
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "snapshotIndex", (int64_t)a.snapshot_index);
		tlog('I', "REPL", 5000310, "the set's log starts at a snapshot: a member added copies the data", &attr);
		bson_destroy(&attr);
	}
	return ret;
}
