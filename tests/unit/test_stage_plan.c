/*
 * test_stage_plan.c -- the dispatcher's stage plan (src/commands/engine.c;
 * what "plain" means is in commands_private.h).  Every command of the table
 * below runs twice through tamga_run_command: once as the plan decides and
 * once with the plan switched off (every stage runs).  The two runs must be
 * indistinguishable to a client and an operator: the reply's bytes, the
 * change of every counter serverStatus shows under metrics and opcounters,
 * top's counts, and the profiler's entry (its timings aside).  Each row
 * also says whether the plain path must be taken, so the table proves the
 * plan is used where it may be and refused where a stage has work (a
 * maxTimeMS, a concern, a transaction field, the Stable API, a
 * collectionUUID, an active fail point, a replica set).
 */
#include "tt.h"

#include "tt_embedded.h"

#include <string.h>

#include "commands/commands_private.h"

static tamga_t *db;
static char *dir;

/* ---- snapshots of what an operator sees ----------------------------------- */

/* Every numeric leaf under doc (dotted paths from prefix) into out as
 * {path: int64}; with counts_only, only leaves named "count" (top's times
 * are wall clock). */
static void
leaves(const bson_t *doc, const char *prefix, bool counts_only, bson_t *out)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, doc))
		return;
	while (bson_iter_next(&it)) {
		char *path = prefix[0] ? bson_strdup_printf("%s.%s", prefix, bson_iter_key(&it)) :
		    bson_strdup(bson_iter_key(&it));
		if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			const uint8_t *d;
			uint32_t l;
			bson_t sub;
			bson_iter_document(&it, &l, &d);
			if (bson_init_static(&sub, d, l))
				leaves(&sub, path, counts_only, out);
		} else if (BSON_ITER_HOLDS_NUMBER(&it) && (!counts_only || strcmp(bson_iter_key(&it), "count") == 0)) {
			BSON_APPEND_INT64(out, path, bson_iter_as_int64(&it));
		}
		bson_free(path);
	}
}

/* serverStatus' metrics and opcounters, top's counts: flat {path: n}. */
static bson_t *
snapshot(void)
{
	bson_t *out = bson_new();
	bson_iter_t f;
	int rc;
	bson_t *r = tt_run_sq(db, "admin", "{'serverStatus': 1}", &rc);

	TT_EQ_INT(rc, 0);
	for (int i = 0; i < 2; i++) {
		const char *name = i == 0 ? "metrics" : "opcounters";
		if (tt_get(r, name, &f) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
			const uint8_t *d;
			uint32_t l;
			bson_t sub;
			bson_iter_document(&f, &l, &d);
			if (bson_init_static(&sub, d, l))
				leaves(&sub, name, false, out);
		}
	}
	tt_free_reply(r);
	r = tt_run_sq(db, "admin", "{'top': 1}", &rc);
	TT_EQ_INT(rc, 0);
	leaves(r, "", true, out);
	tt_free_reply(r);
	return out;
}

/* after - before for every path of after (a path new in after counts
 * from 0), as {path: delta} without the zero deltas. */
static bson_t *
delta(const bson_t *before, const bson_t *after)
{
	bson_t *out = bson_new();
	bson_iter_t it, b;

	bson_iter_init(&it, after);
	while (bson_iter_next(&it)) {
		int64_t was = bson_iter_init_find(&b, before, bson_iter_key(&it)) ? bson_iter_int64(&b) : 0;
		int64_t d = bson_iter_int64(&it) - was;
		if (d != 0)
			BSON_APPEND_INT64(out, bson_iter_key(&it), d);
	}
	return out;
}

/* The newest system.profile entry of database "sp" without the fields that
 * are timings or times (relaxed JSON; the caller frees it). */
static char *
last_profile(void)
{
	static const char *const volatile_fields[] = {"ts", "millis", "cpuNanos", "durationMillis",
	    "planningTimeMicros", "workingMillis", "locks", "storage", NULL};
	int rc;
	bson_t *r = tt_run_sq(db, "sp", "{'find': 'system.profile', 'sort': {'$natural': -1}, 'limit': 1}", &rc);
	bson_iter_t f, it;
	bson_t kept = BSON_INITIALIZER;
	char *s;

	TT_EQ_INT(rc, 0);
	if (tt_get(r, "cursor.firstBatch.0", &f) && BSON_ITER_HOLDS_DOCUMENT(&f) && bson_iter_recurse(&f, &it)) {
		while (bson_iter_next(&it)) {
			bool skip = false;
			for (int i = 0; volatile_fields[i] != NULL; i++)
				skip |= strcmp(bson_iter_key(&it), volatile_fields[i]) == 0;
			if (!skip)
				bson_append_iter(&kept, bson_iter_key(&it), -1, &it);
		}
	}
	s = bson_as_relaxed_extended_json(&kept, NULL);
	bson_destroy(&kept);
	tt_free_reply(r);
	return s;
}

/* ---- one run ------------------------------------------------------------- */

typedef struct {
	bson_t *reply;
	int rc;
	long long plain;       /* commands that took the plain path: 0 or 1 */
	bson_t *counters;      /* delta() over the command and its profile read */
	char *profile;
} run_t;

static void
run_one(const char *dbname, const char *cmd, bool plan_on, run_t *out)
{
	bson_t *before = snapshot(), *after;
	long long taken;

	engine_stage_plan_enable(plan_on);
	taken = engine_stage_plan_taken();
	out->reply = tt_run_sq(db, dbname, cmd, &out->rc);
	out->plain = engine_stage_plan_taken() - taken;
	engine_stage_plan_enable(true);
	out->profile = last_profile();
	after = snapshot();
	out->counters = delta(before, after);
	bson_destroy(before);
	bson_destroy(after);
}

static void
run_free(run_t *r)
{
	tt_free_reply(r->reply);
	bson_destroy(r->counters);
	bson_free(r->profile);
}

/* cmd through both paths: equal in everything; the plan's run took the
 * plain path exactly when want_plain. */
static void
both(const char *dbname, const char *cmd, bool want_plain)
{
	run_t a, b;

	run_one(dbname, cmd, true, &a);
	run_one(dbname, cmd, false, &b);
	if (a.plain != (want_plain ? 1 : 0))
		TT_FAIL_("%s: plain path taken %lld times, want %d", cmd, a.plain, want_plain ? 1 : 0);
	TT_EQ_INT(b.plain, 0);
	TT_EQ_INT(a.rc, b.rc);
	if (a.reply->len != b.reply->len || memcmp(bson_get_data(a.reply), bson_get_data(b.reply), a.reply->len) != 0) {
		char *x = bson_as_relaxed_extended_json(a.reply, NULL), *y = bson_as_relaxed_extended_json(b.reply, NULL);
		TT_FAIL_("%s: replies differ\n  plan:    %s\n  general: %s", cmd, x, y);
		bson_free(x);
		bson_free(y);
	}
	if (a.counters->len != b.counters->len ||
	    memcmp(bson_get_data(a.counters), bson_get_data(b.counters), a.counters->len) != 0) {
		char *x = bson_as_relaxed_extended_json(a.counters, NULL), *y = bson_as_relaxed_extended_json(b.counters, NULL);
		TT_FAIL_("%s: counters moved differently\n  plan:    %s\n  general: %s", cmd, x, y);
		bson_free(x);
		bson_free(y);
	}
	if (strcmp(a.profile, b.profile) != 0)
		TT_FAIL_("%s: profile entries differ\n  plan:    %s\n  general: %s", cmd, a.profile, b.profile);
	run_free(&a);
	run_free(&b);
}

/* ---- the table ------------------------------------------------------------ */

static void
setup(void)
{
	int rc;
	bson_t *r;

	r = tt_run_sq(db, "sp", "{'insert': 'c', 'documents': [{'_id': 1, 'a': 1, 's': 'x'}, {'_id': 2, 'a': 2}, "
	    "{'_id': 'k', 'a': 3}, {'_id': {'$oid': '65a1b2c3d4e5f60718293a4b'}, 'a': 4}, {'_id': 2.5, 'a': 5}]}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = tt_run_sq(db, "sp", "{'profile': 2}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
}

/* The point reads and their neighbours: all plain on a standalone. */
static void
test_plain_shapes(void)
{
	static const char *const rows[] = {
		"{'find': 'c', 'filter': {'_id': 1}}",
		"{'find': 'c', 'filter': {'_id': 'k'}}",
		"{'find': 'c', 'filter': {'_id': {'$oid': '65a1b2c3d4e5f60718293a4b'}}}",
		"{'find': 'c', 'filter': {'_id': 2.5}}",
		"{'find': 'c', 'filter': {'_id': 99}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'limit': 1, 'singleBatch': true}",
		"{'find': 'c', 'filter': {'_id': 1}, 'projection': {'a': 1}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'projection': {'_id': 0, 's': 1}, 'limit': 1}",
		"{'find': 'c', 'filter': {'_id': 1}, 'batchSize': 2}",
		"{'find': 'c', 'filter': {'_id': 1}, 'comment': 'hello'}",
		"{'find': 'c', 'filter': {'_id': 1}, '$db': 'sp', 'lsid': {'id': {'$binary': "
		    "{'base64': 'AAAAAAAAAAAAAAAAAAAAAA==', 'subType': '04'}}}}",
		"{'find': 'c', 'filter': {'_id': {'$gt': 1}}, 'sort': {'_id': 1}}",
		"{'find': 'c', 'filter': {'a': {'$gte': 2}}, 'sort': {'a': -1}, 'limit': 2}",
		"{'find': 'c', 'filter': {'$where': 'this.a == 2'}}",
		"{'find': 'nothere', 'filter': {'_id': 1}}",
		"{'count': 'c', 'query': {'_id': 1}}",
		"{'aggregate': 'c', 'pipeline': [{'$match': {'_id': 2}}], 'cursor': {}}",
		"{'distinct': 'c', 'key': 'a'}",
		"{'insert': 'c', 'documents': [{'b': 1}]}",
		"{'update': 'c', 'updates': [{'q': {'_id': 2}, 'u': {'$inc': {'n': 1}}}]}",
		"{'delete': 'c', 'deletes': [{'q': {'_id': 'absent'}, 'limit': 1}]}",
		"{'findAndModify': 'c', 'query': {'_id': 1}, 'update': {'$set': {'n': 7}}, 'new': true}",
		"{'find': 'c', 'filter': {'_id': 1}, 'skip': 0, 'tailable': false}",
		"{'update': 'c', 'updates': [{'q': {'_id': 2}, 'u': {'$inc': {'m': 1}}, 'multi': true}]}",
		/* errors on the plain path: the same codes, messages, counters */
		"{'find': 'c', 'filter': {'_id': 1}, 'bogus': 1}",
		"{'find': 'c', 'filter': {'$foo': 1}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'limit': -1.5}",
		"{'find': 1, 'filter': {'_id': 1}}",
		"{'insert': 'c', 'documents': [{'_id': 1}]}",
		"{'commitTransaction': 1}",
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		both(strncmp(rows[i], "{'commit", 8) == 0 ? "admin" : "sp", rows[i], true);
}

/* A stage has work: the general path, whatever the plan's switch. */
static void
test_general_shapes(void)
{
	static const char *const rows[] = {
		"{'find': 'c', 'filter': {'_id': 1}, 'maxTimeMS': 1000}",
		"{'find': 'c', 'filter': {'_id': 1}, '$db': 'sp', 'autocommit': true}",
		"{'find': 'c', 'filter': {'_id': 1}, 'maxTimeMS': -1}",
		"{'find': 'c', 'filter': {'_id': 1}, 'readConcern': {'level': 'local'}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'readConcern': {'level': 'majority'}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'apiVersion': '1'}",
		"{'find': 'c', 'filter': {'_id': 1}, 'apiVersion': '2'}",
		"{'find': 'c', 'filter': {'_id': 1}, 'apiStrict': true}",
		"{'find': 'c', 'filter': {'_id': 1}, 'apiDeprecationErrors': 1}",
		"{'find': 'c', 'filter': {'_id': 1}, 'collectionUUID': {'$binary': "
		    "{'base64': 'AAAAAAAAAAAAAAAAAAAAAA==', 'subType': '04'}}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'txnNumber': {'$numberLong': '1'}}",
		"{'find': 'c', 'filter': {'_id': 1}, 'autocommit': false}",
		"{'find': 'c', 'filter': {'_id': 1}, 'startTransaction': true}",
		"{'insert': 'c', 'documents': [{'b': 2}], 'writeConcern': {'w': 1}}",
		"{'insert': 'c', 'documents': [{'b': 2}], 'writeConcern': {'w': 'majority', 'j': 'x'}}",
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		both("sp", rows[i], false);
	/* bodies the argument index does not take: empty (refused before any
	 * stage), more fields than it holds (CMD_ARGS_MAX: libbson's walk) */
	both("sp", "{}", false);
	{
		bson_string_t *big = bson_string_new("{'find': 'c', 'filter': {'_id': 1}");
		for (int i = 0; i < CMD_ARGS_MAX; i++)
			bson_string_append_printf(big, ", 'f%d': %d", i, i);
		bson_string_append(big, "}");
		both("sp", big->str, false);
		bson_string_free(big, true);
	}
}

/* An active fail point (any: failpoint_any_active) sends every command
 * through the general path, the one it names fails the same on both. */
static void
test_fail_point(void)
{
	int rc;
	bson_t *r = tt_run_sq(db, "admin", "{'configureFailPoint': 'failCommand', 'mode': 'alwaysOn', "
	    "'data': {'failCommands': ['distinct'], 'errorCode': 2}}", &rc);

	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	both("sp", "{'find': 'c', 'filter': {'_id': 1}}", false);
	both("sp", "{'distinct': 'c', 'key': 'a'}", false);
	r = tt_run_sq(db, "admin", "{'configureFailPoint': 'failCommand', 'mode': 'off'}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	both("sp", "{'find': 'c', 'filter': {'_id': 1}}", true);
}

/* A replica set's member: never plain (the gate, $clusterTime and
 * operationTime are its stages); the reply carries them. */
static void
test_replica_set(void)
{
	char *rdir = tt_tmpdir("stage_plan_rs");
	tamga_t *rs = tt_open_replset(rdir, "create,replSet=sp0");
	long long taken;
	bson_t *r;
	int rc;

	TT_ASSERT(rs != NULL);
	if (rs == NULL)
		return;
	r = tt_run_sq(rs, "sp", "{'insert': 'c', 'documents': [{'_id': 1}]}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	taken = engine_stage_plan_taken();
	r = tt_run_sq(rs, "sp", "{'find': 'c', 'filter': {'_id': 1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(engine_stage_plan_taken() - taken, 0);
	TT_ASSERT(tt_get_i64(r, "cursor.firstBatch.0._id") == 1);
	{
		bson_iter_t f;
		TT_ASSERT(tt_get(r, "operationTime", &f));
		TT_ASSERT(tt_get(r, "$clusterTime.clusterTime", &f));
	}
	tt_free_reply(r);
	tt_close_rm(rs, rdir);
}

int
main(void)
{
	tamga_error_t e;

	dir = tt_tmpdir("stage_plan");
	if (tamga_open(dir, "create,enableTestCommands", &db, &e) != 0) {
		fprintf(stderr, "tamga_open: %d %s\n", e.code, e.message);
		return 1;
	}
	TT_RUN(setup);
	TT_RUN(test_plain_shapes);
	TT_RUN(test_general_shapes);
	TT_RUN(test_fail_point);
	TT_RUN(test_replica_set);
	tt_close_rm(db, dir);
	return tt_finish();
}
