/*
 * member_takeover.c -- a secondary's priority takeover (member_takeover.h):
 * the schedule mongod keeps, and the request to the primary on a thread of
 * its own.
 */
#include "repl/member_takeover.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "repl/member_rpc.h"

struct repl_takeover {
	pthread_mutex_t lock;
	int64_t at_ms;                /* the scheduled time (0: none) */
	int64_t target_id;            /* the primary it was scheduled against */
	bool running, joinable;       /* the request thread */
	pthread_t thread;
	char host[256];               /* the request: to host, for member_id, term */
	int64_t member_id;
	uint64_t term;
	unsigned seed;
	int64_t asked_ms;             /* a request was sent then, not refused (0: none) */
};

repl_takeover_t *
repl_takeover_new(void)
{
	repl_takeover_t *t = bson_malloc0(sizeof(*t));

	pthread_mutex_init(&t->lock, NULL);
	t->seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)t;
	return t;
}

void
repl_takeover_free(repl_takeover_t *t)
{
	if (t == NULL)
		return;
	if (t->joinable)
		pthread_join(t->thread, NULL);
	pthread_mutex_destroy(&t->lock);
	bson_free(t);
}

int64_t
repl_takeover_delay_ms(const repl_member_peer_t *peers, int npeers, int self, int election_timeout_ms)
{
	int rank = 0;

	for (int i = 0; i < npeers; i++)
		if (peers[i].priority > peers[self].priority)
			rank++;
	return (int64_t)(rank + 1) * election_timeout_ms;
}

/* mongod's _amIFreshEnoughForPriorityTakeover, on timestamps. */
static bool
fresh(repl_ts_t applied, repl_ts_t newest)
{
	uint32_t as = (uint32_t)(applied >> 32), ns = (uint32_t)(newest >> 32);

	if (applied >= newest)
		return true;
	if (as != ns)
		return (uint64_t)as + REPL_TAKEOVER_FRESH_SECS >= ns;
	return (uint64_t)(uint32_t)applied + 1000 >= (uint32_t)newest;
}

static void *
request_main(void *arg)
{
	repl_takeover_t *t = arg;
	bson_t cmd = BSON_INITIALIZER, reply, attr;
	terr_t err = TERR_INIT;
	bool refused = false;

	BSON_APPEND_INT64(&cmd, "_tamgaPriorityTakeover", t->member_id);
	BSON_APPEND_INT64(&cmd, "term", (int64_t)t->term);
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "primary", t->host);
	if (repl_member_rpc(t->host, "admin", &cmd, 2000, &reply, &err) == 0) {
		bson_iter_t it;
		if (bson_iter_init_find(&it, &reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it)) {
			BSON_APPEND_UTF8(&attr, "refused", bson_iter_utf8(&it, NULL));
			refused = true;
		}
		bson_destroy(&reply);
	} else {
		BSON_APPEND_UTF8(&attr, "error", err.msg);
		refused = true;
	}
	tlog('I', "ELECTION", 4615660, "Starting an election for a priority takeover", &attr);
	bson_destroy(&attr);
	bson_destroy(&cmd);
	pthread_mutex_lock(&t->lock);
	t->running = false;
	if (refused)
		t->asked_ms = 0;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

void
repl_takeover_tick(repl_takeover_t *t, const repl_takeover_view_t *v, int64_t now_ms)
{
	const repl_member_peer_t *self, *leader;
	bool want;

	if (t == NULL)
		return;
	pthread_mutex_lock(&t->lock);
	self = v->self_index >= 0 && v->self_index < v->npeers ? &v->peers[v->self_index] : NULL;
	leader = v->leader_index >= 0 && v->leader_index < v->npeers ? &v->peers[v->leader_index] : NULL;
	want = v->follower && v->electable && self != NULL && leader != NULL && leader != self &&
	    self->priority > leader->priority && fresh(v->applied, v->newest);
	if (!want || (t->at_ms != 0 && t->target_id != leader->member_id)) {
		t->at_ms = 0;
	} else if (t->at_ms == 0) {
		int64_t et = v->election_timeout_ms > 0 ? v->election_timeout_ms : 10000;
		/* mongod's randomized offset: up to 0.15 of the election timeout */
		int64_t offset = (int64_t)((double)rand_r(&t->seed) / ((double)RAND_MAX + 1) * 0.15 * (double)et);
		bson_t attr;
		t->at_ms = now_ms + repl_takeover_delay_ms(v->peers, v->npeers, v->self_index, (int)et) + offset;
		t->target_id = leader->member_id;
		bson_init(&attr);
		BSON_APPEND_DATE_TIME(&attr, "when", t->at_ms);
		tlog('I', "ELECTION", 4615601, "Scheduling priority takeover", &attr);
		bson_destroy(&attr);
	} else if (now_ms >= t->at_ms && !t->running) {
		t->at_ms = 0;
		bson_strncpy(t->host, leader->host, sizeof(t->host));
		t->member_id = self->member_id;
		t->term = v->term;
		if (t->joinable)
			pthread_join(t->thread, NULL);   /* ended: running is false */
		t->joinable = false;
		t->running = true;
		t->asked_ms = now_ms;   /* before the request: the primary's transfer may come first */
		if (pthread_create(&t->thread, NULL, request_main, t) == 0)
			t->joinable = true;
		else
			t->running = false;
	}
	pthread_mutex_unlock(&t->lock);
}

bool
repl_takeover_asked_since(repl_takeover_t *t, int64_t since_ms)
{
	bool r;

	if (t == NULL)
		return false;
	pthread_mutex_lock(&t->lock);
	r = t->asked_ms != 0 && t->asked_ms >= since_ms;
	pthread_mutex_unlock(&t->lock);
	return r;
}
