/*
 * raft_reconfig.c -- canonical/raft membership changes for a replica-set
 * member (see raft_reconfig.h).  Each step is one raft_* call made on the
 * loop thread through repl_member_on_loop; its callback (also on the loop
 * thread) reports the outcome to the waiting caller through a step record.
 * A caller that gives up (deadline) leaves the record to the callback, which
 * frees it.
 */
#include "repl/raft_reconfig.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <raft.h>

#include "common/opctx.h"

typedef struct step {
	struct raft_change req;       /* first: the callback gets it back */
	int kind;                     /* 0 add, 1 assign, 2 remove */
	raft_id id;
	const char *addr;
	int role;
	int start_rc;                 /* what the raft_* call returned */
	char start_msg[200];
	bool done, abandoned;
	int status;
} step_t;

static pthread_mutex_t step_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t step_cond = PTHREAD_COND_INITIALIZER;

static void
step_cb(struct raft_change *req, int status)
{
	step_t *s = (step_t *)req;

	pthread_mutex_lock(&step_mu);
	s->status = status;
	s->done = true;
	if (s->abandoned) {
		pthread_mutex_unlock(&step_mu);
		bson_free(s);
		return;
	}
	pthread_cond_broadcast(&step_cond);
	pthread_mutex_unlock(&step_mu);
}

/* On the loop thread. */
static void
step_run(struct raft *r, void *arg)
{
	step_t *s = arg;
	int rv;

	const struct raft_server *have = NULL;

	for (unsigned i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == s->id)
			have = &r->configuration.servers[i];
	/* done already (an rs.add() retried after its raft_assign failed: the
	 * member was added to Raft, its role not assigned): nothing to change */
	if (have != NULL && r->state == RAFT_LEADER && r->configuration_uncommitted_index == 0 &&
	    ((s->kind == 0 && strcmp(have->address, s->addr) == 0) || (s->kind == 1 && have->role == s->role))) {
		pthread_mutex_lock(&step_mu);
		s->done = true;
		pthread_cond_broadcast(&step_cond);
		pthread_mutex_unlock(&step_mu);
		return;
	}
	if (s->kind == 0)
		rv = raft_add(r, &s->req, s->id, s->addr, step_cb);
	else if (s->kind == 1)
		rv = raft_assign(r, &s->req, s->id, s->role, step_cb);
	else
		rv = raft_remove(r, &s->req, s->id, step_cb);
	pthread_mutex_lock(&step_mu);
	s->start_rc = rv;
	if (rv != 0) {
		bson_strncpy(s->start_msg, raft_errmsg(r), sizeof(s->start_msg));
		s->done = true;   /* no callback comes */
	}
	pthread_cond_broadcast(&step_cond);
	pthread_mutex_unlock(&step_mu);
}

static int
step_do(repl_member_t *m, int kind, raft_id id, const char *addr, int role, int64_t deadline_us, terr_t *err)
{
	step_t *s = bson_malloc0(sizeof(*s));
	int rc = 0;

	s->kind = kind;
	s->id = id;
	s->addr = addr;
	s->role = role;
	if (repl_member_on_loop(m, step_run, s, deadline_us) != 0) {
		bson_free(s);
		return terr_set(err, TERR_NODE_NOT_FOUND, "the replication loop did not take the configuration change in time");
	}
	pthread_mutex_lock(&step_mu);
	while (!s->done && tm_now_us() < deadline_us) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 50 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&step_cond, &step_mu, &until);
	}
	if (!s->done) {
		s->abandoned = true;   /* step_cb frees it */
		pthread_mutex_unlock(&step_mu);
		return terr_set(err, TERR_NODE_NOT_FOUND,
		    "the configuration change was not committed in time (a new member may still be catching up)");
	}
	if (s->start_rc == RAFT_NOTLEADER || s->status == RAFT_NOTLEADER || s->status == RAFT_LEADERSHIPLOST)
		rc = terr_set(err, TERR_NOT_WRITABLE_PRIMARY, "not primary: the configuration change was not made");
	else if (s->start_rc != 0)
		rc = terr_set(err, TERR_INVALID_REPLICA_SET_CONFIG, "the replication layer refused the change: %s",
		    s->start_msg);
	else if (s->status != 0)
		rc = terr_set(err, TERR_NODE_NOT_FOUND, "the configuration change failed: %s", raft_strerror(s->status));
	pthread_mutex_unlock(&step_mu);
	bson_free(s);
	return rc;
}

int
repl_member_change_apply(repl_member_t *m, const repl_member_change_t *ch, int n, int64_t deadline_us, terr_t *err)
{
	for (int i = 0; i < n; i++) {
		raft_id id = (raft_id)(ch[i].member_id + 1);
		int role = ch[i].voter ? RAFT_VOTER : RAFT_STANDBY;
		switch (ch[i].op) {
		case REPL_CHANGE_ADD:
			if (step_do(m, 0, id, ch[i].raft_addr, 0, deadline_us, err) != 0)
				return -1;
			if (step_do(m, 1, id, NULL, role, deadline_us, err) != 0)
				return -1;
			break;
		case REPL_CHANGE_ASSIGN:
			if (step_do(m, 1, id, NULL, role, deadline_us, err) != 0)
				return -1;
			break;
		case REPL_CHANGE_REMOVE:
			if (step_do(m, 2, id, NULL, 0, deadline_us, err) != 0)
				return -1;
			break;
		}
	}
	return 0;
}

/* On the loop thread: the log's first index (raft_log.offset + 1). */
static void
first_index_run(struct raft *r, void *arg)
{
	uint64_t *out = arg;

	*out = (uint64_t)r->log.offset + 1;
}

uint64_t
repl_member_log_first_index(repl_member_t *m, int64_t deadline_us)
{
	uint64_t first = 0;

	if (repl_member_on_loop(m, first_index_run, &first, deadline_us) != 0)
		return 0;
	return first;
}

struct config_has {
	raft_id id;
	const char *address;
	int has;
};

/* On the loop thread: whether the Raft configuration names the id or the
 * address. */
static void
config_has_run(struct raft *r, void *arg)
{
	struct config_has *q = arg;

	/* a change still uncommitted may yet be lost: the member counts as
	 * named until the configuration is committed */
	q->has = r->configuration_uncommitted_index != 0;
	for (unsigned k = 0; k < r->configuration.n; k++)
		if (r->configuration.servers[k].id == q->id ||
		    (r->configuration.servers[k].address != NULL &&
		     strcmp(r->configuration.servers[k].address, q->address) == 0))
			q->has = 1;
}

int
repl_member_raft_config_has(repl_member_t *m, int64_t member_id, const char *raft_addr, int64_t deadline_us)
{
	struct config_has q = {.id = (raft_id)(member_id + 1), .address = raft_addr, .has = -1};

	if (member_id < 0 || raft_addr == NULL || repl_member_on_loop(m, config_has_run, &q, deadline_us) != 0)
		return -1;
	return q.has;
}
