/*
 * member_rejoin.c -- the primary gives the set's configuration to members
 * that have none (see member_rejoin.h).
 */
#include "repl/member_rejoin.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opctx.h"
#include "repl/member_rpc.h"
#include "repl/raft_vote_floor.h"

#define DRY_TIMEOUT_MS 2000
#define JOIN_TIMEOUT_MS 10000

struct repl_rejoin {
	repl_member_t *m;
	repl_set_t *rs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
};

/* The host of member _id id in cfg (NULL: none). */
static const char *
host_of(const bson_t *cfg, int64_t id)
{
	bson_iter_t it, m, f;

	if (!bson_iter_init_find(&it, cfg, "members") || !bson_iter_recurse(&it, &m))
		return NULL;
	while (bson_iter_next(&m)) {
		int64_t mid = -1;
		const char *host = NULL;
		if (!bson_iter_recurse(&m, &f))
			continue;
		while (bson_iter_next(&f)) {
			if (strcmp(bson_iter_key(&f), "_id") == 0)
				mid = bson_iter_as_int64(&f);
			else if (strcmp(bson_iter_key(&f), "host") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				host = bson_iter_utf8(&f, NULL);
		}
		if (mid == id)
			return host;
	}
	return NULL;
}

/* {_tamgaReplSetJoin: cfg, dryRun, term[, raftIndex]}: 0 when the member
 * took it.  term (this primary's) tells the member it is one the set's Raft
 * configuration already holds as a voter, whose vote memory went with its
 * data: it votes only past it, and only once its Raft log reaches
 * raftIndex (this primary's last Raft log index after the member answered
 * the dry run; 0: not sent) -- raft_vote_floor.h. */
static int
join(const char *host, const bson_t *cfg, bool dry, int64_t term, uint64_t index, int timeout_ms)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	terr_t err = TERR_INIT;
	int ret = -1;

	BSON_APPEND_DOCUMENT(&cmd, "_tamgaReplSetJoin", cfg);
	BSON_APPEND_BOOL(&cmd, "dryRun", dry);
	BSON_APPEND_INT64(&cmd, "term", term);
	if (index > 0)
		BSON_APPEND_INT64(&cmd, "raftIndex", (int64_t)index);
	if (repl_member_rpc(host, "admin", &cmd, timeout_ms, &reply, &err) == 0) {
		if (bson_iter_init_find(&it, &reply, "ok") && bson_iter_as_double(&it) == 1.0)
			ret = 0;
		bson_destroy(&reply);
	}
	terr_clear(&err);
	bson_destroy(&cmd);
	return ret;
}

static void
look(repl_rejoin_t *r)
{
	repl_member_view_t rows[REPL_MAX_MEMBERS];
	repl_set_info_t in;
	int n, leader;
	bson_t cfg;

	if (repl_set_state(r->rs) != REPL_STATE_PRIMARY)
		return;
	repl_set_info(r->rs, &in);
	if (in.term < 1)
		return;
	n = repl_member_view(r->m, rows, REPL_MAX_MEMBERS, &leader);
	if (!repl_set_config_copy(r->rs, &cfg)) {
		bson_destroy(&cfg);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *host;
		uint64_t term, index;
		if (rows[i].self || rows[i].reachable || (host = host_of(&cfg, rows[i].member_id)) == NULL)
			continue;
		if (join(host, &cfg, true, in.term, 0, DRY_TIMEOUT_MS) != 0)
			continue;   /* down, or it has a configuration (23) */
		/* read now, after the member answered the dry run without a
		 * configuration (so after its wipe): every entry it acknowledged
		 * before is in this log at or below index (raft_vote_floor.h) */
		if (repl_member_lead_point(r->m, &term, &index, tm_now_us() + (int64_t)DRY_TIMEOUT_MS * 1000) != 0 ||
		    term < 1)
			continue;   /* no longer the leader */
		/* noted first: the member may take it and the answer be lost */
		repl_member_note_vote_floor(r->m, rows[i].member_id, repl_raft_vote_floor_for(term), index);
		if (join(host, &cfg, false, (int64_t)term, index, JOIN_TIMEOUT_MS) == 0) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "member", host);
			BSON_APPEND_INT64(&attr, "term", (int64_t)term);
			BSON_APPEND_INT64(&attr, "raftIndex", (int64_t)index);
			tlog('I', "REPL", 5000323, "gave the set's configuration to a member that had none", &attr);
			bson_destroy(&attr);
		}
	}
	bson_destroy(&cfg);
}

static void *
rejoin_main(void *arg)
{
	repl_rejoin_t *r = arg;

	tlog_set_ctx("ReplRejoin");
	pthread_mutex_lock(&r->lock);
	while (!r->stopping) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += REPL_REJOIN_PERIOD_MS / 1000;
		until.tv_nsec += (long)(REPL_REJOIN_PERIOD_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cond, &r->lock, &until);
		if (r->stopping)
			break;
		pthread_mutex_unlock(&r->lock);
		look(r);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

repl_rejoin_t *
repl_rejoin_start(repl_member_t *m, repl_set_t *rs)
{
	repl_rejoin_t *r = bson_malloc0(sizeof(*r));

	r->m = m;
	r->rs = rs;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	if (pthread_create(&r->thread, NULL, rejoin_main, r) != 0) {
		tlog('W', "REPL", 5000324, "could not start the thread that hands the configuration to members", NULL);
		pthread_mutex_destroy(&r->lock);
		pthread_cond_destroy(&r->cond);
		bson_free(r);
		return NULL;
	}
	return r;
}

void
repl_rejoin_stop(repl_rejoin_t *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	bson_free(r);
}

/* ---- a removed member added again ---------------------------------------------------------------- */

bool
repl_rejoin_raft_file_kept(const char *name)
{
	return strcmp(name, "metadata1") == 0 || strcmp(name, "metadata2") == 0 ||
	    strcmp(name, REPL_RAFT_VOTE_FLOOR_FILE) == 0 || strcmp(name, REPL_RAFT_VOTE_FLOOR_FILE ".tmp") == 0 ||
	    strcmp(name, REPL_REJOIN_COMPACT_FILE) == 0;
}

int
repl_rejoin_set_compact_pending(const char *dir, bool pending, terr_t *err)
{
	/* the vote floor's small-file writer: written whole and synced,
	 * renamed into place, the folder synced */
	if (!pending)
		return repl_raft_pair_file_remove(dir, REPL_REJOIN_COMPACT_FILE, err);
	return repl_raft_pair_file_store(dir, REPL_REJOIN_COMPACT_FILE, 1, 0, err);
}

bool
repl_rejoin_compact_pending(const char *dir)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s/%s", dir, REPL_REJOIN_COMPACT_FILE) >= (int)sizeof(path))
		return false;
	return access(path, F_OK) == 0;
}

static int
empty_dir(const char *dir, bool keep, terr_t *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = 0;

	if (d == NULL)
		return errno == ENOENT ? 0 : terr_set(err, TERR_INTERNAL_ERROR, "cannot open %s: %s", dir, strerror(errno));
	while (ret == 0 && (de = readdir(d)) != NULL) {
		char path[4096];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    (keep && repl_rejoin_raft_file_kept(de->d_name)))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			ret = terr_set(err, TERR_INTERNAL_ERROR, "path too long in %s", dir);
		else if (unlink(path) != 0 && errno != ENOENT)
			ret = terr_set(err, TERR_INTERNAL_ERROR, "cannot remove %s: %s", path, strerror(errno));
	}
	closedir(d);
	return ret;
}

int
repl_rejoin_reset_raft_dir(const char *dir, terr_t *err)
{
	return empty_dir(dir, true, err);
}

int
repl_rejoin_clear_raft_dir(const char *dir, terr_t *err)
{
	return empty_dir(dir, false, err);
}

bool
repl_rejoin_raft_dir_has_log(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	if (d == NULL)
		return false;
	while (!found && (de = readdir(d)) != NULL)
		found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    !repl_rejoin_raft_file_kept(de->d_name);
	closedir(d);
	return found;
}
