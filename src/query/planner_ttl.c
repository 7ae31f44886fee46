/*
 * planner_ttl.c -- the TTL monitor thread and one TTL pass (planner_ttl.h).
 */
#include "query/planner_ttl.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "bson/keystring.h"
#include "bson/path.h"
#include "common/log.h"

static atomic_llong ttl_passes;
static atomic_llong ttl_deleted;

void
ttl_stats_get(ttl_stats_t *out)
{
	out->passes = atomic_load(&ttl_passes);
	out->deleted_documents = atomic_load(&ttl_deleted);
}

struct ttl_monitor {
	storage_t *st;
	const atomic_llong *sleep_secs, *enabled;
	bool woken;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* now_ms - secs seconds, saturated (a clustered or time-series
 * collection's expireAfterSeconds is an int64: nothing expires past the
 * oldest date). */
static int64_t
ttl_cutoff(int64_t now_ms, int64_t secs)
{
	if (secs < 0)
		return now_ms;
	if (secs > INT64_MAX / 1000 || now_ms < INT64_MIN + secs * 1000)
		return INT64_MIN;
	return now_ms - secs * 1000;
}

/* expireAfterSeconds of a single-field index, or -1. */
static int64_t
index_ttl(const storage_index_t *ix, const char **field, bool *desc)
{
	bson_iter_t it;
	int64_t secs;

	if (ix->is_id || ix->spec == NULL || !bson_iter_init_find(&it, ix->spec, "expireAfterSeconds") ||
	    !BSON_ITER_HOLDS_NUMBER(&it))
		return -1;
	secs = bson_iter_as_int64(&it);
	if (secs < 0 || bson_count_keys(ix->key) != 1 || !bson_iter_init(&it, ix->key) || !bson_iter_next(&it) ||
	    !BSON_ITER_HOLDS_NUMBER(&it))
		return -1;
	*field = bson_iter_key(&it);
	*desc = bson_iter_as_double(&it) < 0;
	return secs;
}

typedef struct expiry {
	int64_t cutoff;
	bool expired;
} expiry_t;

static bool
expiry_visit(const bpath_hit_t *hit, void *ctx)
{
	expiry_t *e = ctx;

	if (hit->value.value_type == BSON_TYPE_DATE_TIME && hit->value.value.v_datetime < e->cutoff) {
		e->expired = true;
		return false;
	}
	return true;
}

typedef struct del_arg {
	storage_coll_t *coll;
	recid_t recid;
	const char *field;
	int64_t cutoff;
	bool deleted;
} del_arg_t;

/* Delete one document if it is still expired (it may have changed). */
static int
delete_one(storage_session_t *s, void *arg, terr_t *err)
{
	del_arg_t *d = arg;
	expiry_t e = {d->cutoff, false};
	bson_t doc, copy;
	int rc;

	d->deleted = false;
	rc = storage_doc_get(s, d->coll, d->recid, &doc, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	bson_copy_to(&doc, &copy);
	bpath_walk(&copy, d->field, true, expiry_visit, &e);
	if (e.expired) {
		rc = storage_doc_delete(s, d->coll, d->recid, &copy, err);
		d->deleted = rc == 0;
	} else {
		rc = 0;
	}
	bson_destroy(&copy);
	return rc;
}

/* Delete what ix finds expired: dates in field older than secs before
 * now_ms (ix ordered descending when desc). */
static int
ttl_range(storage_session_t *s, storage_coll_t *coll, const storage_index_t *ix, int64_t secs, const char *field,
          bool desc, int64_t now_ms, int64_t *deleted, terr_t *err)
{
	keystring_t lo, hi;
	bson_value_t v;
	storage_cursor_t *cur = NULL;
	recid_t *ids = NULL;
	size_t n = 0, cap = 0, i;
	int rc, ret = 0;

	if (secs < 0)
		return 0;
	keystring_init(&lo);
	keystring_init(&hi);
	memset(&v, 0, sizeof(v));
	v.value_type = BSON_TYPE_DATE_TIME;
	v.value.v_datetime = INT64_MIN;
	keystring_append_value(desc ? &hi : &lo, &v, desc);
	v.value.v_datetime = ttl_cutoff(now_ms, secs);
	keystring_append_value(desc ? &lo : &hi, &v, desc);
	/* Collect first, delete after: deleting moves the index under a cursor. */
	ret = storage_index_scan_open(s, coll, ix, lo.buf, lo.len, desc ? false : true, hi.buf, hi.len,
	    desc ? true : false, false, &cur, err);
	while (ret == 0) {
		recid_t id;
		bson_t unused;
		const uint8_t *key;
		size_t klen;
		rc = storage_cursor_next(cur, &id, &unused, &key, &klen, err);
		if (rc < 0)
			ret = -1;
		if (rc <= 0)
			break;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			ids = bson_realloc(ids, cap * sizeof(*ids));
		}
		ids[n++] = id;
	}
	if (cur != NULL)
		storage_cursor_close(cur);
	for (i = 0; ret == 0 && i < n; i++) {
		del_arg_t d = {coll, ids[i], field, ttl_cutoff(now_ms, secs), false};
		if (i > 0 && ids[i] == ids[i - 1])
			continue;
		ret = storage_txn_run(s, delete_one, &d, false, err);
		if (ret == 0 && d.deleted) {
			atomic_fetch_add(&ttl_deleted, 1);
			if (deleted != NULL)
				(*deleted)++;
		}
	}
	bson_free(ids);
	keystring_destroy(&lo);
	keystring_destroy(&hi);
	return ret;
}

/* A time-series collection's bucketMaxSpanSeconds (stored normalized in
 * its options), or -1 for any other collection. */
static int64_t
ts_max_span(const storage_coll_t *coll)
{
	bson_iter_t it, ts;

	if (coll->options == NULL || !bson_iter_init_find(&it, coll->options, "timeseries") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &ts) ||
	    !bson_iter_find(&ts, "bucketMaxSpanSeconds") || !BSON_ITER_HOLDS_NUMBER(&ts))
		return -1;
	return bson_iter_as_int64(&ts);
}

static int
ttl_index(storage_session_t *s, storage_coll_t *coll, const storage_index_t *ix, int64_t now_ms,
          int64_t *deleted, terr_t *err)
{
	const char *field = NULL;
	bool desc = false;
	int64_t secs = index_ttl(ix, &field, &desc), span = ts_max_span(coll);

	/* A time-series TTL index is keyed by control.min.<time>, a bucket's
	 * start: mongod's safeExpirationDate moves the cutoff back by
	 * bucketMaxSpanSeconds, so a whole bucket goes only once every
	 * measurement it may hold is past expireAfterSeconds. */
	if (secs >= 0 && span > 0)
		secs = secs > INT64_MAX - span ? INT64_MAX : secs + span;
	return ttl_range(s, coll, ix, secs, field, desc, now_ms, deleted, err);
}

/* A clustered collection with expireAfterSeconds: documents whose _id is a
 * date older than the cutoff go, found through the clustered index itself
 * (mongod's clustered TTL: a bounded scan of the record store). */
static int
ttl_clustered(storage_session_t *s, storage_coll_t *coll, int64_t now_ms, int64_t *deleted, terr_t *err)
{
	if (coll->clustered_ix == NULL || coll->clustered_ttl < 0)
		return 0;
	return ttl_range(s, coll, coll->clustered_ix, coll->clustered_ttl, "_id", false, now_ms, deleted, err);
}

/* A time-series collection with expireAfterSeconds: whole buckets go once
 * their newest measurement (control.max.<timeField>) is past the cutoff,
 * so no measurement is deleted before its time. */
typedef struct ts_ttl_del {
	storage_coll_t *coll;
	recid_t recid;
	char path[512];
	int64_t cutoff;
	bool deleted;
} ts_ttl_del_t;

static bool
bucket_expired(const bson_t *bucket, const char *path, int64_t cutoff)
{
	bson_iter_t it, f;

	return bson_iter_init(&it, bucket) && bson_iter_find_descendant(&it, path, &f) && BSON_ITER_HOLDS_DATE_TIME(&f) &&
	    bson_iter_date_time(&f) < cutoff;
}

static int
ts_delete_one(storage_session_t *s, void *arg, terr_t *err)
{
	ts_ttl_del_t *d = arg;
	bson_t doc, copy;
	int rc;

	d->deleted = false;
	rc = storage_doc_get(s, d->coll, d->recid, &doc, err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	bson_copy_to(&doc, &copy);
	rc = 0;
	if (bucket_expired(&copy, d->path, d->cutoff)) {
		rc = storage_doc_delete(s, d->coll, d->recid, &copy, err);
		d->deleted = rc == 0;
	}
	bson_destroy(&copy);
	return rc;
}

static int
ttl_timeseries(storage_session_t *s, storage_coll_t *coll, int64_t now_ms, int64_t *deleted, terr_t *err)
{
	bson_iter_t it, ts;
	const char *time = NULL;
	int64_t secs;
	storage_cursor_t *cur = NULL;
	recid_t *ids = NULL;
	size_t n = 0, cap = 0;
	int rc, ret = 0;
	ts_ttl_del_t d;

	if (coll->options == NULL || !bson_iter_init_find(&it, coll->options, "timeseries") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &ts) || !bson_iter_find(&ts, "timeField") ||
	    !BSON_ITER_HOLDS_UTF8(&ts))
		return 0;
	time = bson_iter_utf8(&ts, NULL);
	if (!bson_iter_init_find(&it, coll->options, "expireAfterSeconds") || !BSON_ITER_HOLDS_NUMBER(&it))
		return 0;
	secs = bson_iter_as_int64(&it);
	memset(&d, 0, sizeof(d));
	d.coll = coll;
	d.cutoff = ttl_cutoff(now_ms, secs);
	bson_snprintf(d.path, sizeof(d.path), "control.max.%s", time);
	RET(storage_scan_open(s, coll, false, &cur, err));
	for (;;) {
		recid_t id;
		bson_t doc;
		rc = storage_cursor_next(cur, &id, &doc, NULL, NULL, err);
		if (rc < 0)
			ret = -1;
		if (rc <= 0)
			break;
		if (!bucket_expired(&doc, d.path, d.cutoff))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			ids = bson_realloc(ids, cap * sizeof(*ids));
		}
		ids[n++] = id;
	}
	storage_cursor_close(cur);
	for (size_t i = 0; ret == 0 && i < n; i++) {
		d.recid = ids[i];
		ret = storage_txn_run(s, ts_delete_one, &d, false, err);
		if (ret == 0 && d.deleted) {
			atomic_fetch_add(&ttl_deleted, 1);
			if (deleted != NULL)
				(*deleted)++;
		}
	}
	bson_free(ids);
	return ret;
}

static bool
coll_capped(const storage_coll_t *c)
{
	bson_iter_t it;

	return c->options != NULL && bson_iter_init_find(&it, c->options, "capped") && bson_iter_as_bool(&it);
}

int
ttl_pass(storage_t *st, int64_t now_ms, int64_t *deleted, terr_t *err)
{
	storage_session_t *s = NULL;
	char **dbs = NULL;
	int ndbs = 0, i, j, k, ret = 0;

	if (storage_list_dbs(st, &dbs, &ndbs, err) != 0)
		return -1;
	if ((s = storage_session_pool_get(st, err)) == NULL) {
		storage_free_names(dbs, ndbs);
		return -1;
	}
	for (i = 0; ret == 0 && i < ndbs; i++) {
		storage_coll_t **colls = NULL;
		int nc = 0;
		if (storage_list_colls(st, dbs[i], &colls, &nc, err) != 0) {
			ret = -1;
			break;
		}
		for (j = 0; j < nc; j++) {
			for (k = 0; ret == 0 && !coll_capped(colls[j]) && k < colls[j]->nindexes; k++)
				ret = ttl_index(s, colls[j], &colls[j]->indexes[k], now_ms, deleted, err);
			if (ret == 0)
				ret = ttl_clustered(s, colls[j], now_ms, deleted, err);
			if (ret == 0)
				ret = ttl_timeseries(s, colls[j], now_ms, deleted, err);
			storage_coll_release(colls[j]);
		}
		bson_free(colls);
	}
	storage_session_pool_put(st, s);
	storage_free_names(dbs, ndbs);
	atomic_fetch_add(&ttl_passes, 1);
	return ret;
}

static void *
ttl_thread(void *arg)
{
	ttl_monitor_t *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		struct timespec until;
		long long secs = m->sleep_secs != NULL ? atomic_load(m->sleep_secs) : 60;
		if (secs <= 0)
			secs = 60;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)secs;
		m->woken = false;
		while (!m->stop && !m->woken && pthread_cond_timedwait(&m->cv, &m->mu, &until) != ETIMEDOUT)
			;
		if (m->stop)
			break;
		if (m->woken)
			continue;    /* a new period: sleep again with it */
		if (m->enabled != NULL && atomic_load(m->enabled) == 0)
			continue;
		pthread_mutex_unlock(&m->mu);
		{
			terr_t err = TERR_INIT;
			if (ttl_pass(m->st, wall_ms(), NULL, &err) != 0) {
				bson_t attr = BSON_INITIALIZER;
				BSON_APPEND_UTF8(&attr, "error", err.msg ? err.msg : "");
				tlog('W', "INDEX", 22537, "Error during TTL job", &attr);
				bson_destroy(&attr);
			}
			terr_clear(&err);
		}
		pthread_mutex_lock(&m->mu);
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

int
ttl_monitor_start(storage_t *st, const atomic_llong *sleep_secs, const atomic_llong *enabled,
                  ttl_monitor_t **out, terr_t *err)
{
	ttl_monitor_t *m = bson_malloc0(sizeof(*m));

	*out = NULL;
	m->st = st;
	m->sleep_secs = sleep_secs;
	m->enabled = enabled;
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, NULL);
	if (pthread_create(&m->thread, NULL, ttl_thread, m) != 0) {
		pthread_mutex_destroy(&m->mu);
		pthread_cond_destroy(&m->cv);
		bson_free(m);
		return terr_set(err, TERR_INTERNAL_ERROR, "could not start the TTL monitor thread");
	}
	*out = m;
	return 0;
}

void
ttl_monitor_wake(ttl_monitor_t *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->woken = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

void
ttl_monitor_stop(ttl_monitor_t *m)
{
	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->thread, NULL);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	bson_free(m);
}
