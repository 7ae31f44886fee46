/*
 * initial_sync.c -- a member brought to a point of the set's log from
 * another member's data (see initial_sync.h): a catch-up from the source's
 * oplog, or a full logical copy (every collection with its options, indexes
 * and documents) followed by the source's oplog from the copy's begin point.
 * Everything goes through repl/member_rpc.h (find / getMore / listDatabases
 * / listCollections / listIndexes on the source).
 */
#include "repl/initial_sync.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "common/failpoint.h"
#include "common/log.h"
#include "common/opctx.h"
#include "repl/member_rpc.h"
#include "repl/oplog_apply.h"
#include "repl/rollback.h"

#define RPC_TIMEOUT_MS 30000
#define DOC_BATCH 1000
#define OPLOG_BATCH 1000
/* the source's oplog may lag the target for a while (a new leader still
 * applying what it committed): no progress for this long is an error */
#define NO_PROGRESS_US (30 * 1000 * 1000)

static bool
stopped(const repl_isync_args_t *a)
{
	return a->stopping != NULL && a->stopping(a->stopping_arg);
}

/* Run cmd on the source's db: 0 with *reply (ok: 1), else -1 with err (6:
 * the caller tries again later), the reply's code and message kept in the
 * text. */
static int
run(const repl_isync_args_t *a, const char *db, bson_t *cmd, bson_t *reply, terr_t *err)
{
	bson_t rp;
	bson_iter_t it;

	/* the source may be a leader still draining before it is PRIMARY */
	BSON_APPEND_DOCUMENT_BEGIN(cmd, "$readPreference", &rp);
	BSON_APPEND_UTF8(&rp, "mode", "primaryPreferred");
	bson_append_document_end(cmd, &rp);
	if (repl_member_rpc(a->source, db, cmd, RPC_TIMEOUT_MS, reply, err) != 0)
		return -1;
	if (!bson_iter_init_find(&it, reply, "ok") || bson_iter_as_double(&it) != 1.0) {
		const char *msg = bson_iter_init_find(&it, reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_iter_utf8(&it, NULL) : "";
		int64_t code = bson_iter_init_find(&it, reply, "code") ? bson_iter_as_int64(&it) : 0;
		/* transient: another try, not counted; else a failed attempt */
		terr_set(err, repl_member_rpc_transient(code) ? TERR_HOST_UNREACHABLE : TERR_INTERNAL_ERROR,
		    "initial sync: %s refused %s on %s: %s (%" PRId64 ")", a->source,
		    bson_iter_init(&it, cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "?", db, msg, code);
		bson_destroy(reply);
		return -1;
	}
	return 0;
}

/* A cursor reply's id and batch (firstBatch or nextBatch). */
static bool
cursor_of(const bson_t *reply, int64_t *id, bson_iter_t *batch)
{
	bson_iter_t it, cur;

	if (!bson_iter_init_find(&it, reply, "cursor") || !bson_iter_recurse(&it, &cur))
		return false;
	*id = 0;
	while (bson_iter_next(&cur)) {
		const char *k = bson_iter_key(&cur);
		if (strcmp(k, "id") == 0)
			*id = bson_iter_as_int64(&cur);
		else if ((strcmp(k, "firstBatch") == 0 || strcmp(k, "nextBatch") == 0) && BSON_ITER_HOLDS_ARRAY(&cur))
			bson_iter_recurse(&cur, batch);
	}
	return true;
}

typedef int (*batch_fn)(void *arg, bson_iter_t *batch, terr_t *err);

/* Run a cursor command (cmd is consumed) and hand each batch to fn; getMore
 * on coll until the cursor is exhausted or fn answers 1 (enough: the
 * cursor is killed). */
static int
each_batch(const repl_isync_args_t *a, const char *db, const char *coll, bson_t *cmd, batch_fn fn, void *arg,
           terr_t *err)
{
	bson_t reply;
	int64_t id = 0;
	int ret = 0;

	if (run(a, db, cmd, &reply, err) != 0) {
		bson_destroy(cmd);
		return -1;
	}
	bson_destroy(cmd);
	for (;;) {
		bson_iter_t batch;
		bson_t next;
		int r;
		memset(&batch, 0, sizeof(batch));
		if (!cursor_of(&reply, &id, &batch)) {
			ret = terr_set(err, TERR_HOST_UNREACHABLE, "initial sync: a reply without a cursor from %s", a->source);
			break;
		}
		r = batch.raw != NULL ? fn(arg, &batch, err) : 0;
		bson_destroy(&reply);
		if (r < 0 || r == 1 || id == 0) {
			ret = r < 0 ? -1 : 0;
			break;
		}
		if (stopped(a)) {
			ret = terr_set(err, 91, "initial sync interrupted by shutdown");
			break;
		}
		bson_init(&next);
		BSON_APPEND_INT64(&next, "getMore", id);
		BSON_APPEND_UTF8(&next, "collection", coll);
		BSON_APPEND_INT32(&next, "batchSize", DOC_BATCH);
		if (run(a, db, &next, &reply, err) != 0) {
			bson_destroy(&next);
			return -1;
		}
		bson_destroy(&next);
		id = 0;
	}
	if (id != 0 && ret == 0) {
		bson_t kill = BSON_INITIALIZER, arr, r2;
		terr_t kerr = TERR_INIT;
		BSON_APPEND_UTF8(&kill, "killCursors", coll);
		BSON_APPEND_ARRAY_BEGIN(&kill, "cursors", &arr);
		BSON_APPEND_INT64(&arr, "0", id);
		bson_append_array_end(&kill, &arr);
		if (run(a, db, &kill, &r2, &kerr) == 0)
			bson_destroy(&r2);
		terr_clear(&kerr);
		bson_destroy(&kill);
	}
	return ret;
}

/* ---- the source's oplog ------------------------------------------------------------------------ */

/* The source's entry at ts (ts 0: its newest): 1 with *entry (a copy), 0
 * when it has none, -1 with err. */
static int
source_entry(const repl_isync_args_t *a, repl_ts_t ts, bson_t *entry, terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, sub, reply;
	bson_iter_t batch;
	int64_t id;
	int got = 0;

	BSON_APPEND_UTF8(&cmd, "find", "oplog.rs");
	if (ts != 0) {
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &sub);
		BSON_APPEND_TIMESTAMP(&sub, "ts", repl_ts_secs(ts), repl_ts_inc(ts));
		bson_append_document_end(&cmd, &sub);
	} else {
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "sort", &sub);
		BSON_APPEND_INT32(&sub, "$natural", -1);
		bson_append_document_end(&cmd, &sub);
	}
	BSON_APPEND_INT32(&cmd, "limit", 1);
	BSON_APPEND_BOOL(&cmd, "singleBatch", true);
	if (run(a, "local", &cmd, &reply, err) != 0) {
		bson_destroy(&cmd);
		return -1;
	}
	bson_destroy(&cmd);
	memset(&batch, 0, sizeof(batch));
	if (cursor_of(&reply, &id, &batch) && batch.raw != NULL && bson_iter_next(&batch) &&
	    BSON_ITER_HOLDS_DOCUMENT(&batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_t view;
		bson_iter_document(&batch, &len, &data);
		if (bson_init_static(&view, data, len)) {
			bson_copy_to(&view, entry);
			got = 1;
		}
	}
	bson_destroy(&reply);
	return got;
}

static repl_ts_t
ts_of(const bson_t *e, int64_t *t)
{
	bson_iter_t it;
	uint32_t s = 0, i = 0;

	if (bson_iter_init_find(&it, e, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it))
		bson_iter_timestamp(&it, &s, &i);
	if (t != NULL)
		*t = bson_iter_init_find(&it, e, "t") && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : -1;
	return REPL_TS(s, i);
}

typedef struct fetch_state {
	const repl_isync_args_t *a;
	repl_ts_t from, upto;
	int64_t entries;
} fetch_state_t;

static int
apply_batch(void *arg, bson_iter_t *batch, terr_t *err)
{
	fetch_state_t *f = arg;

	while (bson_iter_next(batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_t e;
		bool applied;
		repl_ts_t ts;
		if (!BSON_ITER_HOLDS_DOCUMENT(batch))
			continue;
		bson_iter_document(batch, &len, &data);
		if (!bson_init_static(&e, data, len))
			continue;
		ts = ts_of(&e, NULL);
		if (ts <= f->from)
			continue;
		if (repl_oplog_apply_entry(f->a->oplog, f->a->st, f->a->s, &e, NULL, false, &applied, err) != 0)
			return -1;
		f->from = ts;
		f->entries++;
		if (ts >= f->upto)
			return 1;   /* far enough: later entries come through Raft */
	}
	return 0;
}

/* Apply the source's entries after f->from until f->upto is reached. */
static int
fetch_oplog(fetch_state_t *f, terr_t *err)
{
	const repl_isync_args_t *a = f->a;
	int64_t last_progress = tm_now_us();

	while (f->from < f->upto) {
		bson_t cmd = BSON_INITIALIZER, filter, gt;
		repl_ts_t before = f->from;
		BSON_APPEND_UTF8(&cmd, "find", "oplog.rs");
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &filter);
		BSON_APPEND_DOCUMENT_BEGIN(&filter, "ts", &gt);
		BSON_APPEND_TIMESTAMP(&gt, "$gt", repl_ts_secs(f->from), repl_ts_inc(f->from));
		bson_append_document_end(&filter, &gt);
		bson_append_document_end(&cmd, &filter);
		BSON_APPEND_INT32(&cmd, "batchSize", OPLOG_BATCH);
		if (each_batch(a, "local", "oplog.rs", &cmd, apply_batch, f, err) != 0)
			return -1;
		if (f->from >= f->upto)
			break;
		if (f->from != before) {
			last_progress = tm_now_us();
		} else {
			struct timespec nap = {0, 100 * 1000 * 1000};
			if (tm_now_us() - last_progress > NO_PROGRESS_US)
				return terr_set(err, TERR_HOST_UNREACHABLE,
				    "initial sync: the oplog of %s did not reach Timestamp(%u, %u)", a->source,
				    repl_ts_secs(f->upto), repl_ts_inc(f->upto));
			nanosleep(&nap, NULL);
		}
		if (stopped(a))
			return terr_set(err, 91, "initial sync interrupted by shutdown");
	}
	return 0;
}

/* ---- the full copy ---------------------------------------------------------------------------- */

typedef struct copy_state {
	const repl_isync_args_t *a;
	const char *db;
	const char *coll;
	repl_isync_stats_t *stats;
	/* listCollections: the names to copy, and whether each is a
	 * time-series collection (its buckets read with rawData) */
	char **names;
	bool *raw;
	int nnames;
} copy_state_t;

static int
insert_batch(void *arg, bson_iter_t *batch, terr_t *err)
{
	copy_state_t *cs = arg;
	storage_session_t *s = cs->a->s;
	storage_coll_t *c = NULL;
	bool was;
	int ret = 0;

	if (storage_coll_get(cs->a->st, cs->db, cs->coll, &c, err) != 0)
		return -1;
	was = storage_thread_set_unobserved(true);
	if (storage_txn_begin(s, err) != 0) {
		storage_thread_set_unobserved(was);
		storage_coll_release(c);
		return -1;
	}
	while (ret == 0 && bson_iter_next(batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_t d;
		if (!BSON_ITER_HOLDS_DOCUMENT(batch))
			continue;
		bson_iter_document(batch, &len, &data);
		if (!bson_init_static(&d, data, len))
			continue;
		ret = storage_doc_insert(s, c, &d, NULL, err);
		if (ret != 0 && err->code == 11000) {
			/* moved while the copy ran: the newer read wins */
			bson_iter_t id;
			recid_t rid;
			bson_t cur, old;
			terr_clear(err);
			ret = -1;
			if (bson_iter_init_find(&id, &d, "_id") &&
			    storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err) == 0) {
				bson_copy_to(&cur, &old);
				ret = storage_doc_update(s, c, rid, &old, &d, err);
				bson_destroy(&old);
			} else if (err->code == 0) {
				/* a unique key of another index moved between batches:
				 * this attempt fails, the next starts over */
				terr_set(err, 11000, "initial sync: a unique key of %s.%s moved while it was copied", cs->db,
				    cs->coll);
			}
		}
		if (ret == 0)
			cs->stats->documents++;
	}
	if (ret == 0)
		ret = storage_txn_commit(s, false, err);
	else
		storage_txn_rollback(s);
	storage_thread_set_unobserved(was);
	storage_coll_release(c);
	return ret;
}

static int
create_indexes(void *arg, bson_iter_t *batch, terr_t *err)
{
	copy_state_t *cs = arg;

	while (bson_iter_next(batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_t spec;
		bson_iter_t n;
		if (!BSON_ITER_HOLDS_DOCUMENT(batch))
			continue;
		bson_iter_document(batch, &len, &data);
		if (!bson_init_static(&spec, data, len))
			continue;
		if (bson_iter_init_find(&n, &spec, "name") && BSON_ITER_HOLDS_UTF8(&n) &&
		    strcmp(bson_iter_utf8(&n, NULL), "_id_") == 0)
			continue;
		if (storage_index_create(cs->a->st, cs->a->s, cs->db, cs->coll, &spec, err) != 0) {
			if (err->code != TERR_INDEX_ALREADY_EXISTS && err->code != 86)
				return -1;
			terr_clear(err);
		}
	}
	return 0;
}

/* listCollections: create each collection, remember its name. */
static int
create_colls(void *arg, bson_iter_t *batch, terr_t *err)
{
	copy_state_t *cs = arg;

	while (bson_iter_next(batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_t info, opts;
		bson_iter_t it;
		const char *name = NULL, *type = "collection";
		bool have_opts = false;
		if (!BSON_ITER_HOLDS_DOCUMENT(batch))
			continue;
		bson_iter_document(batch, &len, &data);
		if (!bson_init_static(&info, data, len))
			continue;
		if (bson_iter_init_find(&it, &info, "name") && BSON_ITER_HOLDS_UTF8(&it))
			name = bson_iter_utf8(&it, NULL);
		if (bson_iter_init_find(&it, &info, "type") && BSON_ITER_HOLDS_UTF8(&it))
			type = bson_iter_utf8(&it, NULL);
		if (name == NULL || strcmp(name, "system.profile") == 0)
			continue;
		/* a view is its system.views document, copied with that
		 * collection; the views are reloaded from it after the copy */
		if (strcmp(type, "view") == 0)
			continue;
		if (strcmp(type, "collection") != 0 && strcmp(type, "timeseries") != 0) {
			bson_t attr = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&attr, "db", cs->db);
			BSON_APPEND_UTF8(&attr, "name", name);
			BSON_APPEND_UTF8(&attr, "type", type);
			tlog('W', "INITSYNC", 5000260, "initial sync does not copy this kind of namespace", &attr);
			bson_destroy(&attr);
			continue;
		}
		if (bson_iter_init_find(&it, &info, "options") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_document(&it, &len, &data);
			have_opts = bson_init_static(&opts, data, len) && !bson_empty(&opts);
		}
		/* under the source's UUID, as mongod's initial sync */
		if (bson_iter_init_find(&it, &info, "info") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &it) &&
		    bson_iter_find(&it, "uuid") && BSON_ITER_HOLDS_BINARY(&it)) {
			bson_subtype_t st;
			uint32_t ulen;
			const uint8_t *u;
			bson_iter_binary(&it, &st, &ulen, &u);
			storage_set_next_uuid(st == BSON_SUBTYPE_UUID && ulen == 16 ? u : NULL);
		}
		if (storage_coll_create(cs->a->st, cs->a->s, cs->db, name, have_opts ? &opts : NULL, err) != 0) {
			if (err->code != TERR_NAMESPACE_EXISTS)
				return -1;
			terr_clear(err);
		}
		cs->names = bson_realloc(cs->names, sizeof(char *) * (size_t)(cs->nnames + 1));
		cs->raw = bson_realloc(cs->raw, sizeof(bool) * (size_t)(cs->nnames + 1));
		cs->raw[cs->nnames] = strcmp(type, "timeseries") == 0;
		cs->names[cs->nnames++] = bson_strdup(name);
		cs->stats->collections++;
	}
	return 0;
}

static int
copy_db(const repl_isync_args_t *a, const char *db, repl_isync_stats_t *stats, terr_t *err)
{
	copy_state_t cs = {.a = a, .db = db, .stats = stats};
	bson_t cmd = BSON_INITIALIZER;
	int ret;

	BSON_APPEND_INT32(&cmd, "listCollections", 1);
	ret = each_batch(a, db, "$cmd.listCollections", &cmd, create_colls, &cs, err);
	for (int i = 0; ret == 0 && i < cs.nnames; i++) {
		cs.coll = cs.names[i];
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "listIndexes", cs.coll);
		if (cs.raw[i])
			BSON_APPEND_BOOL(&cmd, "rawData", true);   /* the bucket indexes, as stored */
		ret = each_batch(a, db, cs.coll, &cmd, create_indexes, &cs, err);
		if (ret == 0) {
			bson_init(&cmd);
			BSON_APPEND_UTF8(&cmd, "find", cs.coll);
			BSON_APPEND_INT32(&cmd, "batchSize", DOC_BATCH);
			if (cs.raw[i])
				BSON_APPEND_BOOL(&cmd, "rawData", true);   /* the buckets */
			ret = each_batch(a, db, cs.coll, &cmd, insert_batch, &cs, err);
		}
	}
	for (int i = 0; i < cs.nnames; i++)
		bson_free(cs.names[i]);
	bson_free(cs.names);
	bson_free(cs.raw);
	/* the views system.views now holds */
	if (ret == 0)
		ret = repl_views_reload(a->st, a->s, db, err);
	return ret;
}

/* Drop every local database but `local`, and the local oplog's entries. */
static int
clear_local(const repl_isync_args_t *a, terr_t *err)
{
	char **names = NULL;
	int n = 0, ret = 0;
	int64_t removed = 0;
	bool was;

	RET(storage_list_dbs(a->st, &names, &n, err));
	for (int i = 0; ret == 0 && i < n; i++)
		if (strcmp(names[i], "local") != 0)
			ret = storage_db_drop(a->st, a->s, names[i], err);
	storage_free_names(names, n);
	if (ret != 0)
		return -1;
	was = storage_thread_set_unobserved(true);
	ret = storage_txn_begin(a->s, err);
	if (ret == 0)
		ret = repl_oplog_remove_after(a->oplog, a->s, 0, &removed, err);
	if (ret == 0)
		ret = storage_txn_commit(a->s, true, err);
	else if (storage_txn_active(a->s))
		storage_txn_rollback(a->s);
	storage_thread_set_unobserved(was);
	return ret;
}

typedef struct dbs_state {
	char **names;
	int n;
} dbs_state_t;

static int
full_copy(const repl_isync_args_t *a, repl_isync_stats_t *out, repl_ts_t *begin, terr_t *err)
{
	bson_t first, cmd = BSON_INITIALIZER, reply, last;
	bson_iter_t it, dbs;
	int ret = 0, r;

	/* mongod's fail point: the copy waits here while it is on (tests) */
	while (failpoint_any_active() && !stopped(a)) {
		bson_t fd;
		struct timespec nap = {0, 100 * 1000 * 1000};
		if (!failpoint_fire("initialSyncHangBeforeCopyingDatabases", NULL, NULL, &fd))
			break;
		bson_destroy(&fd);
		nanosleep(&nap, NULL);
	}
	/* the begin point: the source's newest entry before anything is read */
	if ((r = source_entry(a, 0, &first, err)) <= 0)
		return r < 0 ? -1 : terr_set(err, TERR_HOST_UNREACHABLE, "initial sync: %s has an empty oplog", a->source);
	*begin = ts_of(&first, NULL);
	bson_destroy(&first);
	/* the oplog is refilled from the target on (see repl_initial_sync):
	 * timestamps go back before it */
	if (clear_local(a, err) != 0 || (a->target > 1 && repl_oplog_rollback_reset(a->oplog, a->target - 1, err) != 0))
		return -1;
	BSON_APPEND_INT32(&cmd, "listDatabases", 1);
	BSON_APPEND_BOOL(&cmd, "nameOnly", true);
	if (run(a, "admin", &cmd, &reply, err) != 0) {
		bson_destroy(&cmd);
		return -1;
	}
	bson_destroy(&cmd);
	if (bson_iter_init_find(&it, &reply, "databases") && bson_iter_recurse(&it, &dbs)) {
		while (ret == 0 && bson_iter_next(&dbs)) {
			bson_iter_t d;
			const char *name;
			if (!bson_iter_recurse(&dbs, &d) || !bson_iter_find(&d, "name") || !BSON_ITER_HOLDS_UTF8(&d))
				continue;
			name = bson_iter_utf8(&d, NULL);
			if (strcmp(name, "local") == 0)
				continue;
			ret = copy_db(a, name, out, err);
			if (ret == 0 && stopped(a))
				ret = terr_set(err, 91, "initial sync interrupted by shutdown");
		}
	}
	bson_destroy(&reply);
	if (ret != 0)
		return -1;
	/* minValid: the source's newest entry now */
	if ((r = source_entry(a, 0, &last, err)) < 0)
		return -1;
	out->min_valid = r == 1 ? ts_of(&last, NULL) : *begin;
	if (r == 1)
		bson_destroy(&last);
	return 0;
}

/* How many of this member's newest entries are looked up on the source for
 * a common point, at most, and how many per find. */
#define COMMON_SCAN 10000
#define COMMON_BATCH 200

/*
 * The newest local entry the source holds with the same term (*common; 0
 * when none of the newest COMMON_SCAN is there).  0, or -1 with err.
 */
static int
common_point(const repl_isync_args_t *a, repl_ts_t *common, terr_t *err)
{
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	repl_ts_t *ts = NULL;
	int64_t *tt = NULL;
	recid_t rid;
	bson_t d;
	int n = 0, ret = 0;

	*common = 0;
	if (storage_coll_get(a->st, REPL_OPLOG_DB, REPL_OPLOG_COLL, &c, err) != 0)
		return -1;
	ts = bson_malloc(sizeof(*ts) * COMMON_SCAN);
	tt = bson_malloc(sizeof(*tt) * COMMON_SCAN);
	if (storage_scan_open(a->s, c, true, &cur, err) == 0) {
		while (n < COMMON_SCAN && storage_cursor_next(cur, &rid, &d, NULL, NULL, NULL) == 1)
			ts[n] = ts_of(&d, &tt[n]), n++;
		storage_cursor_close(cur);
	} else {
		ret = -1;
	}
	if (storage_txn_active(a->s))
		storage_txn_rollback(a->s);
	storage_coll_release(c);
	/* newest first, a batch of timestamps per find */
	for (int i = 0; ret == 0 && i < n && *common == 0; i += COMMON_BATCH) {
		bson_t cmd = BSON_INITIALIZER, filter, in, arr, proj, reply;
		bson_iter_t batch;
		int64_t id;
		char key[16];
		int k;
		BSON_APPEND_UTF8(&cmd, "find", "oplog.rs");
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &filter);
		BSON_APPEND_DOCUMENT_BEGIN(&filter, "ts", &in);
		BSON_APPEND_ARRAY_BEGIN(&in, "$in", &arr);
		for (k = 0; k < COMMON_BATCH && i + k < n; k++) {
			snprintf(key, sizeof(key), "%d", k);
			BSON_APPEND_TIMESTAMP(&arr, key, repl_ts_secs(ts[i + k]), repl_ts_inc(ts[i + k]));
		}
		bson_append_array_end(&in, &arr);
		bson_append_document_end(&filter, &in);
		bson_append_document_end(&cmd, &filter);
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "projection", &proj);
		BSON_APPEND_INT32(&proj, "ts", 1);
		BSON_APPEND_INT32(&proj, "t", 1);
		bson_append_document_end(&cmd, &proj);
		BSON_APPEND_INT32(&cmd, "batchSize", COMMON_BATCH);
		BSON_APPEND_BOOL(&cmd, "singleBatch", true);
		if (run(a, "local", &cmd, &reply, err) != 0) {
			bson_destroy(&cmd);
			ret = -1;
			break;
		}
		bson_destroy(&cmd);
		memset(&batch, 0, sizeof(batch));
		if (cursor_of(&reply, &id, &batch) && batch.raw != NULL) {
			while (bson_iter_next(&batch)) {
				uint32_t len;
				const uint8_t *data;
				bson_t e;
				int64_t t;
				repl_ts_t x;
				if (!BSON_ITER_HOLDS_DOCUMENT(&batch))
					continue;
				bson_iter_document(&batch, &len, &data);
				if (!bson_init_static(&e, data, len))
					continue;
				x = ts_of(&e, &t);
				for (k = i; k < i + COMMON_BATCH && k < n; k++)
					if (ts[k] == x && tt[k] == t && x > *common)
						*common = x;
			}
		}
		bson_destroy(&reply);
	}
	bson_free(ts);
	bson_free(tt);
	return ret;
}

static int sync_unobserved(const repl_isync_args_t *a, repl_isync_stats_t *out, terr_t *err);

int
repl_initial_sync(const repl_isync_args_t *a, repl_isync_stats_t *out, terr_t *err)
{
	/* a secondary logs nothing of its own: every change here, catalog ones
	 * included, is the source's */
	bool was = storage_thread_set_unobserved(true);
	int ret = sync_unobserved(a, out, err);

	storage_thread_set_unobserved(was);
	return ret;
}

static int
sync_unobserved(const repl_isync_args_t *a, repl_isync_stats_t *out, terr_t *err)
{
	repl_oplog_optime_t local = repl_oplog_last_optime(a->oplog);
	fetch_state_t f = {.a = a};
	bool catch_up = false;

	memset(out, 0, sizeof(*out));
	if (!a->copy && local.ts != 0 && local.ts < a->target) {
		bson_t e;
		int64_t t;
		int r = source_entry(a, local.ts, &e, err);
		if (r < 0)
			return -1;
		if (r == 1) {
			ts_of(&e, &t);
			catch_up = t == local.t;
			bson_destroy(&e);
		}
	}
	if (!catch_up && !a->copy && a->dbpath != NULL && local.ts != 0) {
		/* another branch of history (a deposed primary's own entries):
		 * roll back to the common point, then catch up from there */
		repl_ts_t common = 0;
		if (common_point(a, &common, err) != 0)
			return -1;
		if (common != 0 && common < a->target) {
			repl_rollback_args_t ra = {.st = a->st, .oplog = a->oplog, .s = a->s, .common = common,
			    .source = a->source, .dbpath = a->dbpath};
			repl_rollback_stats_t rs;
			if (repl_rollback_run(&ra, &rs, err) == 0) {
				bson_t attr = BSON_INITIALIZER;
				BSON_APPEND_TIMESTAMP(&attr, "commonPoint", repl_ts_secs(common), repl_ts_inc(common));
				BSON_APPEND_INT64(&attr, "entriesRolledBack", rs.entries);
				BSON_APPEND_INT64(&attr, "documentsRefetched", rs.docs);
				BSON_APPEND_INT64(&attr, "documentsSaved", rs.saved);
				BSON_APPEND_UTF8(&attr, "syncSource", a->source);
				tlog('I', "ROLLBACK", 21612, "Rollback summary", &attr);
				bson_destroy(&attr);
				repl_oplog_apply_set_min_valid(rs.min_valid);
				local.ts = common;
				catch_up = true;
			} else if (err->code == 127) {
				terr_clear(err);   /* commands among them: the copy below */
			} else {
				return -1;
			}
		}
	}
	if (!catch_up) {
		/* why a copy: no local entry, one past the target, or one the
		 * source does not hold (another branch of history) */
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_TIMESTAMP(&attr, "localLast", repl_ts_secs(local.ts), repl_ts_inc(local.ts));
		BSON_APPEND_INT64(&attr, "localLastTerm", local.t);
		BSON_APPEND_TIMESTAMP(&attr, "target", repl_ts_secs(a->target), repl_ts_inc(a->target));
		BSON_APPEND_BOOL(&attr, "forced", a->copy);
		tlog('I', "INITSYNC", 21164, "Initial sync copies the data: no catch-up from the source's oplog is possible",
		    &attr);
		bson_destroy(&attr);
	}
	if (catch_up) {
		f.from = local.ts;
		f.upto = a->target;
	} else {
		repl_ts_t begin = 0;
		out->copied = true;
		if (full_copy(a, out, &begin, err) != 0)
			return -1;
		/* from the target itself, not from the copy's begin point: the set's
		 * entries after the target come next through Raft and must find
		 * the local oplog holding them (else they would look like another
		 * branch of history); those the copy already holds are applied
		 * again, idempotently, under minValid */
		f.from = a->target > 0 ? a->target - 1 : 0;
		f.upto = out->min_valid > a->target ? out->min_valid : a->target;
		(void)begin;
		repl_oplog_apply_set_min_valid(out->min_valid);
	}
	if (fetch_oplog(&f, err) != 0)
		return -1;
	out->entries = f.entries;
	out->reached = repl_oplog_last_optime(a->oplog).ts;
	if (out->reached < f.from)
		out->reached = f.from;
	return 0;
}
