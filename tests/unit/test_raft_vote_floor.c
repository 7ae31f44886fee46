/*
 * test_raft_vote_floor.c -- repl/raft_vote_floor.h: a member whose data
 * folder was wiped comes back under its old Raft server id with no memory
 * of its votes.  The reproduction runs canonical/raft 0.15 itself (a real
 * `struct raft` over an in-memory raft_io that keeps term and vote as the
 * disk would): before the wipe the member votes for server 1 in term 5 and
 * refuses server 2 in the same term; after the wipe (a fresh Raft state
 * bootstrapped from the configuration the primary hands it, as
 * member_rejoin.h does) libraft grants server 2 a vote in term 5 -- a
 * second vote in one term, so server 1 and server 2 could both lead term 5.
 * With the vote floor the primary's term gives (5 -> 6), Tamga's receive
 * path (raft_member.c's fault_recv, the same call) drops that request and
 * the one of term 6 before libraft sees them, lets pre-votes through, and
 * the member votes normally in term 7.
 *
 * The index part (the empty-log hazard): before the wipe the member's log
 * holds W at index 9 and libraft refuses a candidate whose log stops at 8;
 * after the wipe its log is the bootstrap entry alone and libraft grants
 * that candidate a vote in a term past the floor -- C leads without W.  With
 * the index part (the primary's last index 9) the request is dropped until
 * the member's log (or a restored snapshot) reaches index 9 with a last
 * term >= the hand-over's, or holds an entry of a later term; a log a
 * deposed leader of an older term filled past 9 does not count.  Also the floor's file: raised part by part, the
 * index part cleared, the one-number form of the first floors read, kept
 * when a removed member's Raft folder is emptied.
 *
 * The minValid of raft_min_valid.h (a member started without the set's
 * history, STARTUP2 until its applier passed it): reached at the index or at
 * an entry of a later term, never before; its file stored, read, removed,
 * nothing written for none, a damaged file an error, and dropped with the
 * rest of a removed member's emptied folder (its data stays).
 */
#include "tt.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repl/member_rejoin.h"
#include "repl/raft_min_valid.h"
#include "repl/raft_vote_floor.h"

/* ---- an in-memory raft_io: what canonical/raft reads and writes ---------------------------------- */

typedef struct stub {
	raft_term term;
	raft_id vote;
	struct raft_buffer conf;      /* the bootstrap entry's configuration, encoded */
	bool have_entry;
	/* after the bootstrap entry (index 1): entries 2 .. 1 + nmore of term
	 * more_term (the set's log as it reached the member) */
	unsigned nmore;
	raft_term more_term;
	/* instead of any entry: a snapshot at (snap_index, snap_term) */
	raft_index snap_index;
	raft_term snap_term;
	raft_io_recv_cb recv;
	int nsent;
	struct raft_message last;     /* the last message libraft sent */
} stub_t;

static int
io_init(struct raft_io *io, raft_id id, const char *address)
{
	(void)io;
	(void)id;
	(void)address;
	return 0;
}

static void
io_close(struct raft_io *io, raft_io_close_cb cb)
{
	if (cb != NULL)
		cb(io);
}

static int
io_load(struct raft_io *io, raft_term *term, raft_id *voted_for, struct raft_snapshot **snapshot,
        raft_index *start_index, struct raft_entry *entries[], size_t *n_entries)
{
	stub_t *s = io->impl;

	*term = s->term;
	*voted_for = s->vote;
	*snapshot = NULL;
	*start_index = 1;
	*entries = NULL;
	*n_entries = 0;
	if (s->snap_index > 0) {
		struct raft_snapshot *sn = raft_malloc(sizeof(*sn));
		memset(sn, 0, sizeof(*sn));
		sn->index = s->snap_index;
		sn->term = s->snap_term;
		raft_configuration_init(&sn->configuration);
		raft_configuration_add(&sn->configuration, 1, "127.0.0.1:31001", RAFT_VOTER);
		raft_configuration_add(&sn->configuration, 2, "127.0.0.1:31002", RAFT_VOTER);
		raft_configuration_add(&sn->configuration, 3, "127.0.0.1:31003", RAFT_VOTER);
		sn->configuration_index = 1;
		sn->bufs = raft_malloc(sizeof(*sn->bufs));
		sn->bufs[0].len = 8;
		sn->bufs[0].base = raft_calloc(1, 8);
		sn->n_bufs = 1;
		*snapshot = sn;
		*start_index = s->snap_index + 1;
		return 0;
	}
	if (s->have_entry) {
		struct raft_entry *e = raft_calloc(1 + s->nmore, sizeof(*e));
		e[0].term = 1;
		e[0].type = RAFT_CHANGE;
		e[0].buf.len = s->conf.len;
		e[0].buf.base = raft_malloc(s->conf.len);
		memcpy(e[0].buf.base, s->conf.base, s->conf.len);
		e[0].batch = e[0].buf.base;
		for (unsigned i = 1; i <= s->nmore; i++) {
			e[i].term = s->more_term;
			e[i].type = RAFT_BARRIER;
			e[i].buf.len = 8;
			e[i].buf.base = raft_calloc(1, 8);
			e[i].batch = e[i].buf.base;
		}
		*entries = e;
		*n_entries = 1 + s->nmore;
	}
	return 0;
}

static int
io_start(struct raft_io *io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv)
{
	(void)msecs;
	(void)tick;
	((stub_t *)io->impl)->recv = recv;
	return 0;
}

static int
io_bootstrap(struct raft_io *io, const struct raft_configuration *conf)
{
	stub_t *s = io->impl;

	if (s->term != 0)
		return RAFT_CANTBOOTSTRAP;
	if (raft_configuration_encode(conf, &s->conf) != 0)
		return RAFT_NOMEM;
	s->term = 1;
	s->have_entry = true;
	return 0;
}

static int
io_recover(struct raft_io *io, const struct raft_configuration *conf)
{
	(void)io;
	(void)conf;
	return RAFT_IOERR;
}

static int
io_set_term(struct raft_io *io, raft_term term)
{
	stub_t *s = io->impl;

	s->term = term;
	s->vote = 0;
	return 0;
}

static int
io_set_vote(struct raft_io *io, raft_id id)
{
	((stub_t *)io->impl)->vote = id;
	return 0;
}

static int
io_send(struct raft_io *io, struct raft_io_send *req, const struct raft_message *msg, raft_io_send_cb cb)
{
	stub_t *s = io->impl;

	s->nsent++;
	s->last = *msg;
	if (cb != NULL)
		cb(req, 0);
	return 0;
}

static int
io_append(struct raft_io *io, struct raft_io_append *req, const struct raft_entry entries[], unsigned n,
          raft_io_append_cb cb)
{
	(void)io;
	(void)req;
	(void)entries;
	(void)n;
	(void)cb;
	return RAFT_IOERR;
}

static int
io_truncate(struct raft_io *io, raft_index index)
{
	(void)io;
	(void)index;
	return 0;
}

static int
io_snapshot_put(struct raft_io *io, unsigned trailing, struct raft_io_snapshot_put *req,
                const struct raft_snapshot *snapshot, raft_io_snapshot_put_cb cb)
{
	(void)io;
	(void)trailing;
	(void)req;
	(void)snapshot;
	(void)cb;
	return RAFT_IOERR;
}

static int
io_snapshot_get(struct raft_io *io, struct raft_io_snapshot_get *req, raft_io_snapshot_get_cb cb)
{
	(void)io;
	(void)req;
	(void)cb;
	return RAFT_IOERR;
}

static raft_time
io_time(struct raft_io *io)
{
	(void)io;
	return 1000;
}

static int
io_random(struct raft_io *io, int min, int max)
{
	(void)io;
	(void)max;
	return min;
}

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	(void)fsm;
	(void)buf;
	*result = NULL;
	return 0;
}

static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	(void)fsm;
	raft_free(buf->base);
	return 0;
}

/* A member (Raft id 3) of the set {1, 2, 3} over stub s. */
typedef struct node {
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft raft;
	stub_t *s;
} node_t;

static void
node_start(node_t *n, stub_t *s, bool bootstrap)
{
	struct raft_configuration conf;

	memset(n, 0, sizeof(*n));
	n->s = s;
	n->io.version = 1;
	n->io.impl = s;
	n->io.init = io_init;
	n->io.close = io_close;
	n->io.load = io_load;
	n->io.start = io_start;
	n->io.bootstrap = io_bootstrap;
	n->io.recover = io_recover;
	n->io.set_term = io_set_term;
	n->io.set_vote = io_set_vote;
	n->io.send = io_send;
	n->io.append = io_append;
	n->io.truncate = io_truncate;
	n->io.snapshot_put = io_snapshot_put;
	n->io.snapshot_get = io_snapshot_get;
	n->io.time = io_time;
	n->io.random = io_random;
	n->fsm.version = 1;
	n->fsm.apply = fsm_apply;
	n->fsm.restore = fsm_restore;
	TT_EQ_INT(raft_init(&n->raft, &n->io, &n->fsm, 3, "127.0.0.1:31003"), 0);
	if (bootstrap) {
		/* what the member does with the configuration the primary hands
		 * it (raft_member.c's loop_main) */
		raft_configuration_init(&conf);
		TT_EQ_INT(raft_configuration_add(&conf, 1, "127.0.0.1:31001", RAFT_VOTER), 0);
		TT_EQ_INT(raft_configuration_add(&conf, 2, "127.0.0.1:31002", RAFT_VOTER), 0);
		TT_EQ_INT(raft_configuration_add(&conf, 3, "127.0.0.1:31003", RAFT_VOTER), 0);
		TT_EQ_INT(raft_bootstrap(&n->raft, &conf), 0);
		raft_configuration_close(&conf);
	}
	TT_EQ_INT(raft_start(&n->raft), 0);
	TT_EQ_INT(raft_state(&n->raft), RAFT_FOLLOWER);
}

static void
node_close(node_t *n)
{
	raft_close(&n->raft, NULL);
}

static void
stub_free(stub_t *s)
{
	raft_free(s->conf.base);
	s->conf.base = NULL;
}

/* A vote request of candidate `from` in `term`, its log's last entry
 * (last_index, last_term), received through the floor f (NULL: none) as
 * fault_recv applies it (the index part judged on n's own log): true when
 * it reached libraft. */
static bool
deliver_log(node_t *n, const repl_vote_floor_t *f, raft_id from, raft_term term, bool pre_vote, raft_index last_index,
            raft_term last_term)
{
	static const repl_vote_floor_t none = {0, 0};
	static char addr[2][32] = {"127.0.0.1:31001", "127.0.0.1:31002"};
	struct raft_message msg;

	memset(&msg, 0, sizeof(msg));
	msg.type = RAFT_IO_REQUEST_VOTE;
	msg.server_id = from;
	msg.server_address = addr[from == 1 ? 0 : 1];
	msg.request_vote.term = term;
	msg.request_vote.candidate_id = from;
	msg.request_vote.last_log_index = last_index;
	msg.request_vote.last_log_term = last_term;
	msg.request_vote.pre_vote = pre_vote;
	if (f == NULL)
		f = &none;
	if (repl_raft_vote_floor_blocks(f, repl_raft_vote_floor_log_held(f, raft_last_index(&n->raft),
	    repl_raft_last_term(&n->raft)), &msg))
		return false;
	n->s->recv(&n->io, &msg);
	return true;
}

/* The same for a candidate whose log is the bootstrap entry, under a term
 * floor alone (0: none). */
static bool
deliver(node_t *n, uint64_t floor, raft_id from, raft_term term, bool pre_vote)
{
	repl_vote_floor_t f = {floor, 0};

	return deliver_log(n, &f, from, term, pre_vote, 1, 1);
}

/* libraft's answer to the last request: 1 granted, 0 refused, -1 none */
static int
answer(node_t *n, int before)
{
	if (n->s->nsent == before || n->s->last.type != RAFT_IO_REQUEST_VOTE_RESULT)
		return -1;
	return n->s->last.request_vote_result.vote_granted ? 1 : 0;
}

static void
test_second_vote_after_wipe(void)
{
	stub_t before_wipe, wiped;
	node_t n;
	int sent;

	/* before the wipe: term 4, the configuration in its log */
	memset(&before_wipe, 0, sizeof(before_wipe));
	node_start(&n, &before_wipe, true);
	node_close(&n);
	before_wipe.term = 4;
	node_start(&n, &before_wipe, false);
	sent = before_wipe.nsent;
	TT_ASSERT(deliver(&n, 0, 1, 5, false));
	TT_EQ_INT(answer(&n, sent), 1);                 /* votes for 1 in term 5 */
	TT_EQ_INT((int64_t)before_wipe.term, 5);
	TT_EQ_INT((int64_t)before_wipe.vote, 1);
	sent = before_wipe.nsent;
	TT_ASSERT(deliver(&n, 0, 2, 5, false));
	TT_EQ_INT(answer(&n, sent), 0);                 /* one vote per term */
	node_close(&n);

	/* the disk replaced: the member starts again from the configuration the
	 * primary (leader of term 5, elected with the vote above) hands it */
	memset(&wiped, 0, sizeof(wiped));
	node_start(&n, &wiped, true);
	TT_EQ_INT((int64_t)wiped.term, 1);
	sent = wiped.nsent;
	TT_ASSERT(deliver(&n, 0, 2, 5, false));
	/* libraft 0.15 grants it: the second vote of this member in term 5 */
	TT_EQ_INT(answer(&n, sent), 1);
	TT_EQ_INT((int64_t)wiped.term, 5);
	TT_EQ_INT((int64_t)wiped.vote, 2);
	node_close(&n);
	stub_free(&before_wipe);
	stub_free(&wiped);
}

static void
test_floor_refuses_it(void)
{
	stub_t wiped;
	node_t n;
	uint64_t floor = repl_raft_vote_floor_for(5);   /* the primary's term at the hand-over */
	int sent;

	TT_EQ_INT((int64_t)floor, 6);
	memset(&wiped, 0, sizeof(wiped));
	node_start(&n, &wiped, true);
	sent = wiped.nsent;
	TT_ASSERT(!deliver(&n, floor, 2, 5, false));    /* the term it voted in */
	TT_ASSERT(!deliver(&n, floor, 2, 6, false));    /* an election running at the hand-over */
	TT_EQ_INT(wiped.nsent, sent);
	TT_EQ_INT((int64_t)wiped.term, 1);              /* not adopted either */
	TT_EQ_INT((int64_t)wiped.vote, 0);
	/* a pre-vote records nothing: it passes, so candidates reach term 7 */
	TT_ASSERT(deliver(&n, floor, 2, 6, true));
	TT_EQ_INT(answer(&n, sent), 1);
	TT_EQ_INT((int64_t)wiped.term, 1);
	/* past the floor it votes as any member */
	sent = wiped.nsent;
	TT_ASSERT(deliver(&n, floor, 2, 7, false));
	TT_EQ_INT(answer(&n, sent), 1);
	TT_EQ_INT((int64_t)wiped.term, 7);
	TT_EQ_INT((int64_t)wiped.vote, 2);
	sent = wiped.nsent;
	TT_ASSERT(deliver(&n, floor, 1, 7, false));
	TT_EQ_INT(answer(&n, sent), 0);
	node_close(&n);
	stub_free(&wiped);
}

/* The empty-log hazard on libraft itself: voters 1 (primary), 2 and 3 (this
 * node); W at index 9 reached 1 and 3 (acknowledged), never 2, whose log
 * stops at 8. */
static void
test_empty_log_hazard(void)
{
	stub_t before_wipe, wiped;
	node_t n;
	int sent;

	/* before the wipe: the log through W (index 9, term 5) */
	memset(&before_wipe, 0, sizeof(before_wipe));
	node_start(&n, &before_wipe, true);
	node_close(&n);
	before_wipe.term = 5;
	before_wipe.nmore = 8;
	before_wipe.more_term = 5;
	node_start(&n, &before_wipe, false);
	TT_EQ_INT((int64_t)raft_last_index(&n.raft), 9);
	TT_EQ_INT((int64_t)repl_raft_last_term(&n.raft), 5);
	sent = before_wipe.nsent;
	TT_ASSERT(deliver_log(&n, NULL, 2, 7, false, 8, 5));
	TT_EQ_INT(answer(&n, sent), 0);                 /* Raft's log comparison: 2 lacks W */
	node_close(&n);

	/* wiped, handed the configuration by 1 (term 5, last index 9) */
	memset(&wiped, 0, sizeof(wiped));
	node_start(&n, &wiped, true);
	TT_EQ_INT((int64_t)raft_last_index(&n.raft), 1);
	sent = wiped.nsent;
	TT_ASSERT(deliver_log(&n, NULL, 2, 7, false, 8, 5));
	/* libraft 0.15 grants it against the empty log: 2 leads without W */
	TT_EQ_INT(answer(&n, sent), 1);
	node_close(&n);
	stub_free(&wiped);

	/* the same with the floor's index part: refused, the term not adopted */
	{
		repl_vote_floor_t f = {repl_raft_vote_floor_for(5), 9};
		memset(&wiped, 0, sizeof(wiped));
		node_start(&n, &wiped, true);
		sent = wiped.nsent;
		TT_ASSERT(!deliver_log(&n, &f, 2, 7, false, 8, 5));
		TT_ASSERT(!deliver_log(&n, &f, 2, 12, false, 8, 5));
		TT_ASSERT(!deliver_log(&n, &f, 1, 12, false, 9, 5));   /* even the one holding W */
		TT_EQ_INT(wiped.nsent, sent);
		TT_EQ_INT((int64_t)wiped.term, 1);
		TT_EQ_INT((int64_t)wiped.vote, 0);
		TT_ASSERT(deliver_log(&n, &f, 2, 7, true, 8, 5));      /* a pre-vote records nothing */
		TT_EQ_INT((int64_t)wiped.term, 1);
		node_close(&n);
	}
	stub_free(&before_wipe);
	stub_free(&wiped);
}

/* The index part reached: by the set's log (its last entry of the
 * hand-over's term or later), or by a restored snapshot; not by a log of an
 * older term filled past the index. */
static void
test_index_part_reached(void)
{
	repl_vote_floor_t f = {repl_raft_vote_floor_for(5), 9};
	stub_t s;
	node_t n;
	int sent;

	/* the set's log came back through W: Raft's own comparison decides */
	memset(&s, 0, sizeof(s));
	node_start(&n, &s, true);
	node_close(&n);
	s.term = 5;
	s.nmore = 10;
	s.more_term = 5;
	node_start(&n, &s, false);
	TT_ASSERT(repl_raft_vote_floor_log_held(&f, raft_last_index(&n.raft), repl_raft_last_term(&n.raft)));
	sent = s.nsent;
	TT_ASSERT(deliver_log(&n, &f, 2, 7, false, 8, 5));
	TT_EQ_INT(answer(&n, sent), 0);                 /* 2 lacks W: libraft refuses */
	sent = s.nsent;
	TT_ASSERT(deliver_log(&n, &f, 1, 8, false, 11, 5));
	TT_EQ_INT(answer(&n, sent), 1);
	TT_EQ_INT((int64_t)s.vote, 1);
	node_close(&n);
	stub_free(&s);

	/* a deposed leader of term 4 filled the log past 9: not the set's */
	memset(&s, 0, sizeof(s));
	node_start(&n, &s, true);
	node_close(&n);
	s.term = 4;
	s.nmore = 12;
	s.more_term = 4;
	node_start(&n, &s, false);
	TT_EQ_INT((int64_t)repl_raft_last_term(&n.raft), 4);
	TT_ASSERT(!deliver_log(&n, &f, 2, 7, false, 8, 5));
	node_close(&n);
	stub_free(&s);

	/* a leader of term 6 (elected without this member) whose log lost the
	 * primary's uncommitted tail: its entry of term 6 follows every entry
	 * of term <= 5 it kept, each committed one among them */
	memset(&s, 0, sizeof(s));
	node_start(&n, &s, true);
	node_close(&n);
	s.term = 6;
	s.nmore = 2;
	s.more_term = 6;
	node_start(&n, &s, false);
	sent = s.nsent;
	TT_ASSERT(deliver_log(&n, &f, 2, 7, false, 3, 6));
	TT_EQ_INT(answer(&n, sent), 1);
	node_close(&n);
	stub_free(&s);

	/* a snapshot restored at index 20 of term 5 (no entry after it) */
	memset(&s, 0, sizeof(s));
	s.term = 5;
	s.snap_index = 20;
	s.snap_term = 5;
	node_start(&n, &s, false);
	TT_EQ_INT((int64_t)raft_last_index(&n.raft), 20);
	TT_EQ_INT((int64_t)repl_raft_last_term(&n.raft), 5);
	sent = s.nsent;
	TT_ASSERT(deliver_log(&n, &f, 1, 7, false, 21, 5));
	TT_EQ_INT(answer(&n, sent), 1);
	node_close(&n);
	stub_free(&s);
}

static void
test_blocks(void)
{
	struct raft_message msg;
	repl_vote_floor_t f6 = {6, 0}, f5 = {5, 0}, f0 = {0, 0}, fi = {6, 9};

	memset(&msg, 0, sizeof(msg));
	msg.type = RAFT_IO_REQUEST_VOTE;
	msg.request_vote.term = 6;
	TT_ASSERT(repl_raft_vote_floor_blocks(&f6, true, &msg));
	TT_ASSERT(!repl_raft_vote_floor_blocks(&f5, true, &msg));
	TT_ASSERT(!repl_raft_vote_floor_blocks(&f0, true, &msg));
	msg.request_vote.term = 7;
	TT_ASSERT(repl_raft_vote_floor_blocks(&fi, false, &msg));    /* past the term, the log short */
	TT_ASSERT(!repl_raft_vote_floor_blocks(&fi, true, &msg));
	msg.request_vote.pre_vote = true;
	TT_ASSERT(!repl_raft_vote_floor_blocks(&fi, false, &msg));
	msg.request_vote.term = 6;
	TT_ASSERT(!repl_raft_vote_floor_blocks(&f6, true, &msg));
	msg.request_vote.pre_vote = false;
	msg.type = RAFT_IO_REQUEST_VOTE_RESULT;
	TT_ASSERT(!repl_raft_vote_floor_blocks(&fi, false, &msg));
	msg.type = RAFT_IO_APPEND_ENTRIES;
	TT_ASSERT(!repl_raft_vote_floor_blocks(&fi, false, &msg));
	TT_EQ_INT((int64_t)repl_raft_vote_floor_for(0), 0);
	TT_EQ_INT((int64_t)repl_raft_vote_floor_for(41), 42);
	/* the index part: index and the hand-over's term (floor - 1) */
	TT_ASSERT(repl_raft_vote_floor_log_held(&f6, 1, 1));          /* no index part */
	TT_ASSERT(!repl_raft_vote_floor_log_held(&fi, 8, 5));
	TT_ASSERT(repl_raft_vote_floor_log_held(&fi, 9, 5));
	TT_ASSERT(repl_raft_vote_floor_log_held(&fi, 30, 9));
	TT_ASSERT(!repl_raft_vote_floor_log_held(&fi, 30, 4));        /* an older leader's log */
	TT_ASSERT(repl_raft_vote_floor_log_held(&fi, 3, 6));          /* a later leader's entry */
}

static void
test_file(void)
{
	char dir[4096], path[4200];
	const char *tmp = getenv("TMPDIR");
	terr_t err = TERR_INIT;
	repl_vote_floor_t fl = {99, 99};
	FILE *fp;

	snprintf(dir, sizeof(dir), "%s/vote_floor_XXXXXX", tmp != NULL ? tmp : "/tmp");
	TT_ASSERT(mkdtemp(dir) != NULL);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 0);
	TT_EQ_INT((int64_t)fl.index, 0);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){6, 0}, &err), 0);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 6);
	TT_EQ_INT((int64_t)fl.index, 0);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){4, 0}, &err), 0);   /* never lowered */
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 6);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){0, 0}, &err), 0);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){12, 40}, &err), 0);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 12);
	TT_EQ_INT((int64_t)fl.index, 40);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){11, 30}, &err), 0);   /* part by part */
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 12);
	TT_EQ_INT((int64_t)fl.index, 40);
	/* the log reached it: the index part cleared, the term floor kept */
	TT_EQ_INT(repl_raft_vote_floor_clear_index(dir, &err), 0);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 12);
	TT_EQ_INT((int64_t)fl.index, 0);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){12, 40}, &err), 0);
	/* the form written before the index part: one number */
	snprintf(path, sizeof(path), "%s/%s", dir, REPL_RAFT_VOTE_FLOOR_FILE);
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fputs("12\n", fp);
	fclose(fp);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 12);
	TT_EQ_INT((int64_t)fl.index, 0);
	TT_EQ_INT(repl_raft_vote_floor_raise(dir, &(repl_vote_floor_t){12, 40}, &err), 0);
	/* a removed member's folder emptied: the floor stays with the vote */
	snprintf(path, sizeof(path), "%s/metadata1", dir);
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/0000000000000001-0000000000000009", dir);
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fclose(fp);
	TT_ASSERT(repl_rejoin_raft_dir_has_log(dir));
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	TT_ASSERT(!repl_rejoin_raft_dir_has_log(dir));
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), 0);
	TT_EQ_INT((int64_t)fl.term, 12);
	TT_EQ_INT((int64_t)fl.index, 40);
	/* a damaged file is an error, not a floor of 0 */
	snprintf(path, sizeof(path), "%s/%s", dir, REPL_RAFT_VOTE_FLOOR_FILE);
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fputs("x7\n", fp);
	fclose(fp);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), -1);
	terr_clear(&err);
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fputs("7 x\n", fp);
	fclose(fp);
	TT_EQ_INT(repl_raft_vote_floor_load(dir, &fl, &err), -1);
	terr_clear(&err);
	unlink(path);
	snprintf(path, sizeof(path), "%s/metadata1", dir);
	unlink(path);
	TT_EQ_INT(rmdir(dir), 0);
}

static void
test_min_valid(void)
{
	char dir[4096], path[4200];
	const char *tmp = getenv("TMPDIR");
	terr_t err = TERR_INIT;
	repl_min_valid_t mv = {99, 99}, none = {0, 0}, at = {120, 4};
	FILE *fp;

	/* the rule: the entries handed to the FSM reach index 120, or one of a
	 * term past 4 was handed over (the primary's uncommitted tail lost) */
	TT_ASSERT(repl_raft_min_valid_reached(&none, 0, false));
	TT_ASSERT(!repl_raft_min_valid_reached(&at, 0, false));
	TT_ASSERT(!repl_raft_min_valid_reached(&at, 1, false));
	TT_ASSERT(!repl_raft_min_valid_reached(&at, 119, false));
	TT_ASSERT(repl_raft_min_valid_reached(&at, 120, false));
	TT_ASSERT(repl_raft_min_valid_reached(&at, 500, false));
	TT_ASSERT(repl_raft_min_valid_reached(&at, 90, true));
	/* the file */
	snprintf(dir, sizeof(dir), "%s/min_valid_XXXXXX", tmp != NULL ? tmp : "/tmp");
	TT_ASSERT(mkdtemp(dir) != NULL);
	TT_EQ_INT(repl_raft_min_valid_load(dir, &mv, &err), 0);
	TT_EQ_INT((int64_t)mv.index, 0);
	TT_EQ_INT((int64_t)mv.term, 0);
	TT_EQ_INT(repl_raft_min_valid_store(dir, &none, &err), 0);   /* nothing written */
	snprintf(path, sizeof(path), "%s/%s", dir, REPL_RAFT_MIN_VALID_FILE);
	TT_ASSERT(access(path, F_OK) != 0);
	TT_EQ_INT(repl_raft_min_valid_store(dir, &at, &err), 0);
	TT_EQ_INT(repl_raft_min_valid_load(dir, &mv, &err), 0);
	TT_EQ_INT((int64_t)mv.index, 120);
	TT_EQ_INT((int64_t)mv.term, 4);
	TT_EQ_INT(repl_raft_min_valid_clear(dir, &err), 0);
	TT_ASSERT(access(path, F_OK) != 0);
	TT_EQ_INT(repl_raft_min_valid_clear(dir, &err), 0);          /* none: 0 */
	TT_EQ_INT(repl_raft_min_valid_load(dir, &mv, &err), 0);
	TT_EQ_INT((int64_t)mv.index, 0);
	/* damaged: an error, not "reached" */
	fp = fopen(path, "w");
	TT_ASSERT(fp != NULL);
	fputs("120 four\n", fp);
	fclose(fp);
	TT_EQ_INT(repl_raft_min_valid_load(dir, &mv, &err), -1);
	TT_EQ_INT((int64_t)mv.index, 0);
	terr_clear(&err);
	/* a removed member's emptied folder drops it (it keeps its data) */
	TT_EQ_INT(repl_raft_min_valid_store(dir, &at, &err), 0);
	TT_EQ_INT(repl_rejoin_reset_raft_dir(dir, &err), 0);
	TT_ASSERT(access(path, F_OK) != 0);
	TT_EQ_INT(rmdir(dir), 0);
}

int
main(void)
{
	TT_RUN(test_second_vote_after_wipe);
	TT_RUN(test_floor_refuses_it);
	TT_RUN(test_empty_log_hazard);
	TT_RUN(test_index_part_reached);
	TT_RUN(test_blocks);
	TT_RUN(test_file);
	TT_RUN(test_min_valid);
	return tt_finish();
}
