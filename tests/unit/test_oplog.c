/*
 * test_oplog.c -- the repl layer's clock and oplog (repl/clock.h,
 * repl/oplog.h): Timestamps that only go up; mongod's $v: 2 diffs for many
 * update shapes; the entry of every kind of change (CRUD through the
 * commands, DDL, no-ops), what is never logged; timestamps strictly
 * increasing under concurrent writers with no hole ever visible to a
 * reader; a transaction's applyOps entry and its partialTxn chain; session
 * info of retryable writes; truncation and resize; recovery of the clock and
 * kill -9 (data and oplog agree).
 */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tt.h"
#include "tt_embedded.h"
#include "commands/commands_private.h"
#include "common/mem.h"
#include "repl/clock.h"
#include "repl/oplog.h"
#include "repl/oplog_diff.h"
#include "repl/cluster_params.h"
#include "repl/preimage.h"

/* ---- clock -------------------------------------------------------------- */

static uint32_t fake_wall;

static uint32_t
wall_fn(void *arg)
{
	(void)arg;
	return fake_wall;
}

static void
test_clock(void)
{
	repl_clock_t *clk = repl_clock_new();
	terr_t err = TERR_INIT;
	repl_ts_t a, b;

	fake_wall = 1000;
	repl_clock_set_wall(clk, wall_fn, NULL);
	TT_EQ_INT(repl_clock_now(clk), 0);
	TT_EQ_INT(repl_clock_reserve(clk, 1, &a, &err), 0);
	TT_ASSERT(a == REPL_TS(1000, 1));
	TT_EQ_INT(repl_clock_reserve(clk, 3, &b, &err), 0);
	TT_ASSERT(b == REPL_TS(1000, 2));
	TT_ASSERT(repl_clock_now(clk) == REPL_TS(1000, 4));
	/* the wall clock goes back: the increments go on */
	fake_wall = 900;
	TT_EQ_INT(repl_clock_reserve(clk, 1, &a, &err), 0);
	TT_ASSERT(a == REPL_TS(1000, 5));
	/* a new second starts at increment 1 */
	fake_wall = 1001;
	TT_EQ_INT(repl_clock_reserve(clk, 1, &a, &err), 0);
	TT_ASSERT(a == REPL_TS(1001, 1));
	/* recover never lowers; raises */
	repl_clock_recover(clk, REPL_TS(5, 5));
	TT_ASSERT(repl_clock_now(clk) == REPL_TS(1001, 1));
	repl_clock_recover(clk, REPL_TS(2000, 7));
	TT_EQ_INT(repl_clock_reserve(clk, 1, &a, &err), 0);
	TT_ASSERT(a == REPL_TS(2000, 8));
	/* increments past 2^31-1 move to the next second */
	repl_clock_recover(clk, REPL_TS(3000, 0x7ffffffe));
	TT_EQ_INT(repl_clock_reserve(clk, 2, &a, &err), 0);
	TT_ASSERT(a == REPL_TS(3001, 1));
	/* gossip: forward only, and not too far */
	TT_EQ_INT(repl_clock_advance(clk, REPL_TS(10, 1), &err), 0);
	TT_ASSERT(repl_clock_now(clk) == REPL_TS(3001, 2));
	TT_EQ_INT(repl_clock_advance(clk, REPL_TS(4000, 9), &err), 0);
	TT_ASSERT(repl_clock_now(clk) == REPL_TS(4000, 9));
	fake_wall = 1001;
	TT_ASSERT(repl_clock_advance(clk, REPL_TS(1001 + 365 * 24 * 3600 + 1, 1), &err) != 0);
	TT_EQ_INT(err.code, 262);
	TT_EQ_STR(err.msg, "New clusterTime, 31537002, is too far from this node's wall clock time, 1001.");
	terr_clear(&err);
	TT_ASSERT(repl_clock_now(clk) == REPL_TS(4000, 9));
	TT_ASSERT(repl_clock_reserve(clk, 0, &a, &err) != 0);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	repl_clock_free(clk);
}

/* ---- diffs -------------------------------------------------------------- */

static void
test_diffs(void)
{
	static const struct {
		const char *pre, *post, *diff;   /* diff NULL: the whole document is logged */
	} cases[] = {
		{"{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"_id\": 1, \"a\": 1, \"b\": 3}", "{ \"u\" : { \"b\" : 3 } }"},
		{"{\"_id\": 1, \"a\": 1}", "{\"_id\": 1, \"a\": 1, \"b\": 2}", "{ \"i\" : { \"b\" : 2 } }"},
		{"{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"_id\": 1, \"a\": 1}", "{ \"d\" : { \"b\" : false } }"},
		{"{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3, \"k\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"a\": 5, \"c\": 3, \"k\": \"a long field to keep the diff smaller\", \"d\": 4}",
		 "{ \"d\" : { \"b\" : false }, \"u\" : { \"a\" : 5 }, \"i\" : { \"d\" : 4 } }"},
		/* unchanged */
		{"{\"_id\": 1, \"a\": [1, {\"b\": 2}]}", "{\"_id\": 1, \"a\": [1, {\"b\": 2}]}", "{ }"},
		/* a type change is an update */
		{"{\"_id\": 1, \"a\": 1, \"z\": \"keep\"}", "{\"_id\": 1, \"a\": \"x\", \"z\": \"keep\"}",
		 "{ \"u\" : { \"a\" : \"x\" } }"},
		/* nested documents: a sub diff when smaller than the new value */
		{"{\"_id\": 1, \"a\": {\"x\": 1, \"y\": 2, \"z\": \"some long text\"}}",
		 "{\"_id\": 1, \"a\": {\"x\": 1, \"y\": 3, \"z\": \"some long text\"}}",
		 "{ \"sa\" : { \"u\" : { \"y\" : 3 } } }"},
		{"{\"_id\": 1, \"a\": {\"b\": {\"c\": 1, \"d\": \"long enough text\"}}, \"k\": 0}",
		 "{\"_id\": 1, \"a\": {\"b\": {\"c\": 1, \"d\": \"long enough text\", \"e\": true}}, \"k\": 0}",
		 "{ \"sa\" : { \"sb\" : { \"i\" : { \"e\" : true } } } }"},
		/* ... and the new value when not */
		{"{\"_id\": 1, \"a\": {\"x\": 1}, \"k\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"a\": {\"y\": 2}, \"k\": \"a long field to keep the diff smaller\"}",
		 "{ \"u\" : { \"a\" : { \"y\" : 2 } } }"},
		/* arrays: appended ($push), shrunk ($pop: 1), one element set */
		{"{\"_id\": 1, \"arr\": [1, 2, 3], \"k\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"arr\": [1, 2, 3, 4], \"k\": \"a long field to keep the diff smaller\"}",
		 "{ \"sarr\" : { \"a\" : true, \"u3\" : 4 } }"},
		{"{\"_id\": 1, \"arr\": [1, 2, 3], \"k\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"arr\": [1, 2], \"k\": \"a long field to keep the diff smaller\"}",
		 "{ \"sarr\" : { \"a\" : true, \"l\" : 2 } }"},
		{"{\"_id\": 1, \"arr\": [\"aaaa\", \"bbbb\", \"cccc\"], \"k\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"arr\": [\"aaaa\", \"XX\", \"cccc\"], \"k\": \"a long field to keep the diff smaller\"}",
		 "{ \"sarr\" : { \"a\" : true, \"u1\" : \"XX\" } }"},
		/* a document inside an array: s<index> */
		{"{\"_id\": 1, \"arr\": [{\"q\": 1, \"name\": \"first item\"}, {\"q\": 2, \"name\": \"second item\"}], \"k\": 1}",
		 "{\"_id\": 1, \"arr\": [{\"q\": 1, \"name\": \"first item\"}, {\"q\": 7, \"name\": \"second item\"}], \"k\": 1}",
		 "{ \"sarr\" : { \"a\" : true, \"s1\" : { \"u\" : { \"q\" : 7 } } } }"},
		/* moved fields: re-inserted in their new order */
		{"{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": \"a long field to keep the diff smaller\"}",
		 "{\"_id\": 1, \"b\": 2, \"a\": 1, \"c\": \"a long field to keep the diff smaller\"}",
		 "{ \"i\" : { \"a\" : 1, \"c\" : \"a long field to keep the diff smaller\" } }"},
		{"{\"_id\": 1, \"c\": \"a long field to keep the diff smaller\", \"a\": 1, \"b\": 2}",
		 "{\"_id\": 1, \"c\": \"a long field to keep the diff smaller\", \"b\": 2, \"a\": 1}",
		 "{ \"i\" : { \"a\" : 1 } }"},
		/* everything different: larger than the new document, so whole */
		{"{\"_id\": 1, \"a\": 1}", "{\"_id\": 1, \"b\": 2}", NULL},
		/* a new field between old ones: it and every later one inserted */
		{"{\"_id\": 1, \"a\": 1, \"c\": 3}", "{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3}",
		 "{ \"i\" : { \"b\" : 2, \"c\" : 3 } }"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bson_t *pre = tt_json(cases[i].pre), *post = tt_json(cases[i].post);
		bson_t d = BSON_INITIALIZER;
		bool ok = repl_diff_compute(pre, post, 0, &d);
		char *j = bson_as_relaxed_extended_json(&d, NULL);

		if (cases[i].diff == NULL) {
			if (ok)
				fprintf(stderr, "case %zu: expected whole document, got %s\n", i, j);
			TT_ASSERT(!ok);
		} else {
			if (!ok || strcmp(j, cases[i].diff) != 0)
				fprintf(stderr, "case %zu: %s\n", i, j);
			TT_ASSERT(ok);
			TT_EQ_STR(j, cases[i].diff);
		}
		bson_free(j);
		bson_destroy(&d);
		bson_destroy(pre);
		bson_destroy(post);
	}
}

/* Operator updates: the diff follows the update's paths as mongod's update
 * driver logs them, whatever the sizes. */
static void
test_diffs_update(void)
{
	static const struct {
		const char *update, *pre, *post, *diff;
	} cases[] = {
		/* a numeric field name: a sub diff even though larger than the value */
		{"{\"$set\": {\"a.1\": 2}}", "{\"_id\": 1, \"a\": {\"1\": 1}}", "{\"_id\": 1, \"a\": {\"1\": 2}}",
		 "{ \"sa\" : { \"u\" : { \"1\" : 2 } } }"},
		{"{\"$set\": {\"a.0.1\": 2}}", "{\"_id\": 1, \"a\": [{\"1\": 1}]}", "{\"_id\": 1, \"a\": [{\"1\": 2}]}",
		 "{ \"sa\" : { \"a\" : true, \"s0\" : { \"u\" : { \"1\" : 2 } } } }"},
		/* the path's end is logged whole */
		{"{\"$set\": {\"a\": {\"x\": 1, \"y\": 3, \"z\": \"some long text\"}}}",
		 "{\"_id\": 1, \"a\": {\"x\": 1, \"y\": 2, \"z\": \"some long text\"}}",
		 "{\"_id\": 1, \"a\": {\"x\": 1, \"y\": 3, \"z\": \"some long text\"}}",
		 "{ \"u\" : { \"a\" : { \"x\" : 1, \"y\" : 3, \"z\" : \"some long text\" } } }"},
		/* $push appends: u<index>; onto an empty array: the whole array */
		{"{\"$push\": {\"arr\": 3}}", "{\"_id\": 1, \"arr\": [1, 2]}", "{\"_id\": 1, \"arr\": [1, 2, 3]}",
		 "{ \"sarr\" : { \"a\" : true, \"u2\" : 3 } }"},
		{"{\"$push\": {\"arr\": 3}}", "{\"_id\": 1, \"arr\": []}", "{\"_id\": 1, \"arr\": [3]}",
		 "{ \"u\" : { \"arr\" : [ 3 ] } }"},
		{"{\"$push\": {\"arr\": {\"$each\": [0], \"$sort\": 1}}}", "{\"_id\": 1, \"arr\": [1, 2]}",
		 "{\"_id\": 1, \"arr\": [0, 1, 2]}", "{ \"u\" : { \"arr\" : [ 0, 1, 2 ] } }"},
		{"{\"$addToSet\": {\"arr\": 9}}", "{\"_id\": 1, \"arr\": [1]}", "{\"_id\": 1, \"arr\": [1, 9]}",
		 "{ \"sarr\" : { \"a\" : true, \"u1\" : 9 } }"},
		/* $pop rewrites the array */
		{"{\"$pop\": {\"arr\": 1}}", "{\"_id\": 1, \"arr\": [1, 2, 3]}", "{\"_id\": 1, \"arr\": [1, 2]}",
		 "{ \"u\" : { \"arr\" : [ 1, 2 ] } }"},
		/* an index past the end: that index only */
		{"{\"$set\": {\"a.4\": 1}}", "{\"_id\": 1, \"a\": [0, 0]}", "{\"_id\": 1, \"a\": [0, 0, null, null, 1]}",
		 "{ \"sa\" : { \"a\" : true, \"u4\" : 1 } }"},
		/* created below an existing document: inserted from the first new part */
		{"{\"$set\": {\"x.y.z\": 1}}", "{\"_id\": 1, \"x\": {}}", "{\"_id\": 1, \"x\": {\"y\": {\"z\": 1}}}",
		 "{ \"sx\" : { \"i\" : { \"y\" : { \"z\" : 1 } } } }"},
		{"{\"$unset\": {\"a.b\": 1}}", "{\"_id\": 1, \"a\": {\"b\": 1, \"c\": 2}}", "{\"_id\": 1, \"a\": {\"c\": 2}}",
		 "{ \"sa\" : { \"d\" : { \"b\" : false } } }"},
		{"{\"$rename\": {\"a\": \"b\"}}", "{\"_id\": 1, \"a\": 1, \"c\": 2}", "{\"_id\": 1, \"c\": 2, \"b\": 1}",
		 "{ \"d\" : { \"a\" : false }, \"i\" : { \"b\" : 1 } }"},
		/* $[] and arrayFilters' identifiers match every index */
		{"{\"$inc\": {\"a.$[].q\": 1}}", "{\"_id\": 1, \"a\": [{\"q\": 1}, {\"q\": 2}]}",
		 "{\"_id\": 1, \"a\": [{\"q\": 2}, {\"q\": 3}]}",
		 "{ \"sa\" : { \"a\" : true, \"s0\" : { \"u\" : { \"q\" : 2 } }, \"s1\" : { \"u\" : { \"q\" : 3 } } } }"},
		/* a pipeline update: mongod's diff calculator, by size */
		{"[{\"$set\": {\"a\": {\"1\": 2}}}]", "{\"_id\": 1, \"a\": {\"1\": 1}}", "{\"_id\": 1, \"a\": {\"1\": 2}}",
		 "{ \"u\" : { \"a\" : { \"1\" : 2 } } }"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bson_t *spec = tt_json(cases[i].update[0] == '[' ? "{}" : cases[i].update);
		bson_t *pre = tt_json(cases[i].pre), *post = tt_json(cases[i].post);
		bson_t d = BSON_INITIALIZER;
		bson_value_t uv;
		update_t *u = NULL;
		terr_t err = TERR_INIT;
		char *j;

		if (cases[i].update[0] == '[') {
			bson_t *wrap;
			char *w = bson_strdup_printf("{\"p\": %s}", cases[i].update);
			bson_iter_t it;
			wrap = tt_json(w);
			bson_free(w);
			bson_iter_init_find(&it, wrap, "p");
			bson_value_copy(bson_iter_value(&it), &uv);
			bson_destroy(wrap);
		} else {
			uv.value_type = BSON_TYPE_DOCUMENT;
			uv.value.v_doc.data = (uint8_t *)bson_get_data(spec);
			uv.value.v_doc.data_len = spec->len;
		}
		TT_ASSERT(update_compile(&uv, NULL, &u, &err) == 0);
		repl_diff_compute_update(pre, post, u, &d);
		j = bson_as_relaxed_extended_json(&d, NULL);
		if (strcmp(j, cases[i].diff) != 0)
			fprintf(stderr, "case %zu: %s\n", i, j);
		TT_EQ_STR(j, cases[i].diff);
		bson_free(j);
		if (cases[i].update[0] == '[')
			bson_value_destroy(&uv);
		update_free(u);
		bson_destroy(&d);
		bson_destroy(spec);
		bson_destroy(pre);
		bson_destroy(post);
	}
}

/* ---- an engine in replica-set mode --------------------------------------- */

typedef struct rs {
	char *dir;
	engine_t *e;
	client_t *cl;
} rs_t;

static bool
rs_open(rs_t *r, const char *dir, double size_mb, bool initiate)
{
	engine_options_t o = {0};
	terr_t err = TERR_INIT;

	o.storage.create = true;
	o.repl_set_name = "rs0";
	o.oplog_size_mb = size_mb;
	r->dir = bson_strdup(dir);
	if (engine_open(dir, &o, &r->e, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		terr_clear(&err);
		return false;
	}
	r->cl = client_new(r->e, NULL);
	engine_set_self_host(r->e, "127.0.0.1:27017");
	if (initiate) {
		/* replSetInitiate (replset) creates the oplog (repl_oplog_create) */
		bson_t *cmd = tt_json("{\"replSetInitiate\": {}}"), *reply = tm_bson_array_new(1);
		int rc = engine_run_command(r->e, r->cl, "admin", cmd, reply, NULL);
		if (rc != 0) {
			char *j = bson_as_relaxed_extended_json(reply, NULL);
			fprintf(stderr, "replSetInitiate: %s\n", j);
			bson_free(j);
		}
		bson_destroy(cmd);
		tt_free_reply(reply);
		if (rc != 0)
			return false;
	}
	return true;
}

static void
rs_close(rs_t *r, bool remove)
{
	client_free(r->cl);
	engine_close(r->e);
	if (remove)
		tt_rmdir(r->dir);
	bson_free(r->dir);
}

/* Run a command (single-quoted JSON); returns the reply (tt_free_reply). */
static bson_t *
rs_cmd(rs_t *r, const char *db, const char *sq, int *rc)
{
	char *json = bson_strdup(sq);
	bson_t *cmd, *reply = tm_bson_array_new(1);

	for (char *p = json; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	cmd = tt_json(json);
	*rc = engine_run_command(r->e, r->cl, db, cmd, reply, NULL);
	if (*rc != 0) {
		char *j = bson_as_relaxed_extended_json(reply, NULL);
		fprintf(stderr, "command %s failed: %s\n", json, j);
		bson_free(j);
	}
	bson_destroy(cmd);
	bson_free(json);
	return reply;
}

static void
rs_ok(rs_t *r, const char *db, const char *sq)
{
	int rc;
	bson_t *rep = rs_cmd(r, db, sq, &rc);

	TT_EQ_INT(rc, 0);
	tt_free_reply(rep);
}

/* The oplog's entries after `after` (as relaxed JSON, without the fields
 * that change from run to run: ts, t, v, wall, ui, lsid's and
 * indexBuildUUID's bytes) one per line. */
static char *
oplog_text(rs_t *r, repl_ts_t after, int *n)
{
	storage_session_t *s = client_session(r->cl, NULL);
	repl_oplog_cursor_t *cur = NULL;
	bson_string_t *out = bson_string_new("");
	bson_t e;
	terr_t err = TERR_INIT;

	*n = 0;
	TT_EQ_INT(repl_oplog_scan_open(engine_oplog(r->e), s, after, &cur, &err), 0);
	while (cur != NULL && repl_oplog_cursor_next(cur, &e, &err) == 1) {
		bson_t clean = BSON_INITIALIZER;
		bson_iter_t it;
		char *j;

		bson_iter_init(&it, &e);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "ts") == 0 || strcmp(k, "t") == 0 || strcmp(k, "wall") == 0 ||
			    strcmp(k, "ui") == 0)
				continue;
			if (strcmp(k, "v") == 0) {
				TT_ASSERT(BSON_ITER_HOLDS_INT64(&it) && bson_iter_int64(&it) == 2);
				continue;
			}
			bson_append_value(&clean, k, -1, bson_iter_value(&it));
		}
		j = bson_as_relaxed_extended_json(&clean, NULL);
		bson_string_append_printf(out, "%s\n", j);
		bson_free(j);
		bson_destroy(&clean);
		(*n)++;
	}
	repl_oplog_cursor_close(cur);
	terr_clear(&err);
	return bson_string_free(out, false);
}

static repl_ts_t
last_ts(rs_t *r)
{
	return repl_oplog_last_optime(engine_oplog(r->e)).ts;
}

static void
expect_entries(rs_t *r, repl_ts_t after, const char *want)
{
	int n;
	char *got = oplog_text(r, after, &n);

	if (strcmp(got, want) != 0)
		fprintf(stderr, "--- got:\n%s--- want:\n%s", got, want);
	TT_EQ_STR(got, want);
	bson_free(got);
}

static void
test_standalone_and_uninitiated(void)
{
	char *dir = tt_tmpdir("oplog-std");
	engine_options_t o = {0};
	engine_t *e = NULL;
	terr_t err = TERR_INIT;
	rs_t r;
	storage_coll_t *c = NULL;

	/* a standalone has no clock, no oplog */
	o.storage.create = true;
	TT_EQ_INT(engine_open(dir, &o, &e, &err), 0);
	TT_ASSERT(engine_oplog(e) == NULL && engine_clock(e) == NULL);
	engine_close(e);
	/* --replSet before initiation: writes are refused (replset), no oplog
	 * exists; a write straight to storage is not logged */
	TT_ASSERT(rs_open(&r, dir, 0, false));
	{
		int rc;
		bson_t *rep = rs_cmd(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 1}]}", &rc);
		TT_EQ_INT(rc, 10107);
		tt_free_reply(rep);
	}
	{
		storage_t *st = engine_storage(r.e);
		storage_session_t *s = client_session(r.cl, NULL);
		bson_t *d = tt_json("{\"_id\": 1}");
		TT_EQ_INT(storage_coll_create(st, s, "shop", "items", NULL, NULL), 0);
		TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(storage_doc_insert(s, c, d, NULL, NULL), 0);
		TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
		storage_coll_release(c);
		c = NULL;
		bson_destroy(d);
	}
	TT_ASSERT(!repl_oplog_exists(engine_oplog(r.e)));
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "local", "oplog.rs", &c, NULL), TERR_NAMESPACE_NOT_FOUND);
	/* the default size: at least 990 MB */
	TT_ASSERT(repl_oplog_max_bytes(engine_oplog(r.e)) >= 990LL * 1024 * 1024);
	rs_close(&r, true);
	bson_free(dir);
}

static void
test_entries(void)
{
	char *dir = tt_tmpdir("oplog-entries");
	rs_t r;
	repl_ts_t mark;
	int rc;
	bson_t *rep;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	expect_entries(&r, 0, "{ \"op\" : \"n\", \"ns\" : \"\", \"o\" : { \"msg\" : \"initiating set\" } }\n"
	    "{ \"op\" : \"n\", \"ns\" : \"\", \"o\" : { \"msg\" : \"new primary\" } }\n");
	/* the first before any election (t: -1), the second in term 1 */
	{
		storage_session_t *s = client_session(r.cl, NULL);
		repl_oplog_cursor_t *cur = NULL;
		bson_t e;
		TT_EQ_INT(repl_oplog_scan_open(engine_oplog(r.e), s, 0, &cur, NULL), 0);
		TT_EQ_INT(repl_oplog_cursor_next(cur, &e, NULL), 1);
		TT_EQ_INT(tt_get_i64(&e, "t"), -1);
		TT_EQ_INT(repl_oplog_cursor_next(cur, &e, NULL), 1);
		TT_EQ_INT(tt_get_i64(&e, "t"), 1);
		repl_oplog_cursor_close(cur);
	}
	/* listCollections shows mongod's options for the oplog */
	rep = rs_cmd(&r, "local", "{'listCollections': 1, 'filter': {'name': 'oplog.rs'}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get_i64(rep, "cursor.firstBatch.0.options.size") == repl_oplog_max_bytes(engine_oplog(r.e)));
	{
		bson_iter_t f;
		TT_ASSERT(tt_get(rep, "cursor.firstBatch.0.options.capped", &f) && bson_iter_as_bool(&f));
		TT_ASSERT(tt_get(rep, "cursor.firstBatch.0.options.autoIndexId", &f) && !bson_iter_as_bool(&f));
	}
	tt_free_reply(rep);

	mark = last_ts(&r);
	rs_ok(&r, "shop", "{'create': 'items'}");
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 1, 'a': 1, 'tags': ['x']}, {'_id': 2}]}");
	rs_ok(&r, "shop", "{'update': 'items', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'a': 2, 'n.m': 1}, "
	    "'$push': {'tags': 'yy'}}}]}");
	rs_ok(&r, "shop", "{'update': 'items', 'updates': [{'q': {'_id': 1}, 'u': {'$unset': {'n': 1}}}]}");
	rs_ok(&r, "shop", "{'update': 'items', 'updates': [{'q': {'_id': 2}, 'u': {'b': 'replaced'}}]}");
	/* a no-op update writes no entry */
	rs_ok(&r, "shop", "{'update': 'items', 'updates': [{'q': {'_id': 2}, 'u': {'$set': {'b': 'replaced'}}}]}");
	rs_ok(&r, "shop", "{'delete': 'items', 'deletes': [{'q': {'_id': 2}, 'limit': 1}]}");
	expect_entries(&r, mark,
	    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"create\" : \"items\", \"idIndex\" : "
	    "{ \"v\" : 2, \"key\" : { \"_id\" : 1 }, \"name\" : \"_id_\" } } }\n"
	    "{ \"op\" : \"i\", \"ns\" : \"shop.items\", \"o\" : { \"_id\" : 1, \"a\" : 1, \"tags\" : [ \"x\" ] }, "
	    "\"o2\" : { \"_id\" : 1 } }\n"
	    "{ \"op\" : \"i\", \"ns\" : \"shop.items\", \"o\" : { \"_id\" : 2 }, \"o2\" : { \"_id\" : 2 } }\n"
	    "{ \"op\" : \"u\", \"ns\" : \"shop.items\", \"o\" : { \"$v\" : 2, \"diff\" : { \"u\" : { \"a\" : 2 }, "
	    "\"i\" : { \"n\" : { \"m\" : 1 } }, \"stags\" : { \"a\" : true, \"u1\" : \"yy\" } } }, \"o2\" : { \"_id\" : 1 } }\n"
	    "{ \"op\" : \"u\", \"ns\" : \"shop.items\", \"o\" : { \"$v\" : 2, \"diff\" : { \"d\" : { \"n\" : false } } }, "
	    "\"o2\" : { \"_id\" : 1 } }\n"
	    "{ \"op\" : \"u\", \"ns\" : \"shop.items\", \"o\" : { \"_id\" : 2, \"b\" : \"replaced\" }, "
	    "\"o2\" : { \"_id\" : 2 } }\n"
	    "{ \"op\" : \"d\", \"ns\" : \"shop.items\", \"o\" : { \"_id\" : 2 } }\n");

	/* DDL */
	mark = last_ts(&r);
	rs_ok(&r, "shop", "{'createIndexes': 'items', 'indexes': [{'key': {'a': 1}, 'name': 'a_1'}]}");
	rs_ok(&r, "shop", "{'create': 'empty'}");
	rs_ok(&r, "shop", "{'createIndexes': 'empty', 'indexes': [{'key': {'b': -1}, 'name': 'b_-1'}]}");
	rs_ok(&r, "shop", "{'dropIndexes': 'items', 'index': 'a_1'}");
	rs_ok(&r, "shop", "{'collMod': 'items', 'validator': {'a': {'$gte': 0}}}");
	rs_ok(&r, "admin", "{'renameCollection': 'shop.empty', 'to': 'shop.full'}");
	rs_ok(&r, "shop", "{'drop': 'full'}");
	{
		int n;
		char *got = oplog_text(&r, mark, &n), *p;
		/* the build's UUID is random: blank its bytes */
		for (p = strstr(got, "\"base64\" : \""); p != NULL; p = strstr(p, "\"base64\" : \"")) {
			p += 12;
			while (*p != '"')
				*p++ = 'x';
		}
		TT_EQ_STR(got,
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"startIndexBuild\" : \"items\", \"indexBuildUUID\" : "
		    "{ \"$binary\" : { \"base64\" : \"xxxxxxxxxxxxxxxxxxxxxxxx\", \"subType\" : \"04\" } }, \"indexes\" : "
		    "[ { \"v\" : 2, \"key\" : { \"a\" : 1 }, \"name\" : \"a_1\" } ] } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"commitIndexBuild\" : \"items\", \"indexBuildUUID\" : "
		    "{ \"$binary\" : { \"base64\" : \"xxxxxxxxxxxxxxxxxxxxxxxx\", \"subType\" : \"04\" } }, \"indexes\" : "
		    "[ { \"v\" : 2, \"key\" : { \"a\" : 1 }, \"name\" : \"a_1\" } ] } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"create\" : \"empty\", \"idIndex\" : "
		    "{ \"v\" : 2, \"key\" : { \"_id\" : 1 }, \"name\" : \"_id_\" } } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"createIndexes\" : \"empty\", \"v\" : 2, "
		    "\"key\" : { \"b\" : -1 }, \"name\" : \"b_-1\" } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"dropIndexes\" : \"items\", \"index\" : \"a_1\" }, "
		    "\"o2\" : { \"v\" : 2, \"key\" : { \"a\" : 1 }, \"name\" : \"a_1\" } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"collMod\" : \"items\", \"validator\" : "
		    "{ \"a\" : { \"$gte\" : 0 } }, \"validationLevel\" : \"strict\", \"validationAction\" : \"error\" }, "
		    "\"o2\" : { \"collectionOptions_old\" : {  } } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"renameCollection\" : \"shop.empty\", "
		    "\"to\" : \"shop.full\", \"stayTemp\" : false } }\n"
		    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"drop\" : \"full\" }, \"o2\" : { \"numRecords\" : 0 } }\n");
		TT_EQ_INT(n, 8);
		bson_free(got);
	}
	/* collMod of an index: {collMod, index: {name, hidden}} and the old value */
	mark = last_ts(&r);
	rs_ok(&r, "shop", "{'createIndexes': 'items', 'indexes': [{'key': {'c': 1}, 'name': 'c_1'}]}");
	mark = last_ts(&r);
	rs_ok(&r, "shop", "{'collMod': 'items', 'index': {'name': 'c_1', 'hidden': true}}");
	expect_entries(&r, mark,
	    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"collMod\" : \"items\", \"index\" : "
	    "{ \"name\" : \"c_1\", \"hidden\" : true } }, \"o2\" : { \"indexOptions_old\" : { \"hidden\" : false } } }\n");
	/* dropDatabase: a drop per collection, then dropDatabase; local is
	 * never logged */
	mark = last_ts(&r);
	rs_ok(&r, "local", "{'insert': 'scratch', 'documents': [{'_id': 1}]}");
	rs_ok(&r, "shop", "{'dropDatabase': 1}");
	expect_entries(&r, mark,
	    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"drop\" : \"items\" }, \"o2\" : { \"numRecords\" : 1 } }\n"
	    "{ \"op\" : \"c\", \"ns\" : \"shop.$cmd\", \"o\" : { \"dropDatabase\" : 1 } }\n");
	rs_close(&r, true);
	bson_free(dir);
}


/* ---- concurrency: strictly increasing, no hole visible ------------------- */

#define W_THREADS 4
#define W_DOCS 150

typedef struct wctx {
	rs_t *r;
	int id;
	storage_coll_t *c, *hot;
} wctx_t;

typedef struct ins_arg {
	storage_coll_t *c, *hot;
	int64_t n;
} ins_arg_t;

static int
ins_fn(storage_session_t *s, void *p, terr_t *err)
{
	ins_arg_t *a = p;
	bson_t doc = BSON_INITIALIZER, hot = BSON_INITIALIZER, old;
	bson_value_t id;
	recid_t rid;
	int ret;

	BSON_APPEND_INT64(&doc, "_id", a->n);
	ret = storage_doc_insert(s, a->c, &doc, NULL, err);
	/* every fourth write also bumps one hot document: write conflicts,
	 * rolled-back stamps (gaps in ts), retries */
	if (ret == 0 && a->n % 4 == 0) {
		id.value_type = BSON_TYPE_INT32;
		id.value.v_int32 = 0;
		ret = storage_doc_find_id(s, a->hot, &id, &rid, &old, err);
		if (ret == 0) {
			bson_iter_t it;
			int64_t v = bson_iter_init_find(&it, &old, "v") ? bson_iter_as_int64(&it) : 0;
			bson_t oldc;
			bson_copy_to(&old, &oldc);
			BSON_APPEND_INT32(&hot, "_id", 0);
			BSON_APPEND_INT64(&hot, "v", v + 1);
			ret = storage_doc_update(s, a->hot, rid, &oldc, &hot, err);
			bson_destroy(&oldc);
		} else if (ret == 1) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "hot document missing");
		}
	}
	bson_destroy(&doc);
	bson_destroy(&hot);
	return ret;
}

/* set by the reader before its first scan: the writers wait for it, so the
 * reader always scans while they write (a reader scheduled only after the
 * writers ended made no scan at all: a CI failure of `log.nscans > 0`) */
static atomic_bool reader_started;

static void *
writer_main(void *p)
{
	wctx_t *w = p;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;

	if (storage_session_open(engine_storage(w->r->e), &s, &err) != 0)
		return NULL;
	/* bounded: 60 s */
	for (int k = 0; k < 60000 && !atomic_load(&reader_started); k++)
		usleep(1000);
	for (int i = 0; i < W_DOCS; i++) {
		ins_arg_t a = {w->c, w->hot, (int64_t)w->id * 100000 + i + 1};
		if (storage_txn_run(s, ins_fn, &a, false, &err) != 0) {
			fprintf(stderr, "writer: %s\n", err.msg);
			terr_clear(&err);
		}
	}
	storage_session_close(s);
	return NULL;
}

typedef struct scan_log {
	repl_ts_t *ts;
	int n, cap;
	int *ends;             /* ts[ends[k-1]..ends[k]) is scan k */
	int nscans, scap;
	bool disorder;
} scan_log_t;

static atomic_bool writers_done;

static void *
reader_main(void *p)
{
	void **args = p;
	rs_t *r = args[0];
	scan_log_t *log = args[1];
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;

	if (storage_session_open(engine_storage(r->e), &s, &err) != 0) {
		atomic_store(&reader_started, true);
		return NULL;
	}
	atomic_store(&reader_started, true);
	while ((log->nscans == 0 || !atomic_load(&writers_done)) && log->nscans < 2000) {
		repl_oplog_cursor_t *cur = NULL;
		bson_t e;
		repl_ts_t prev = 0;
		if (repl_oplog_scan_open(engine_oplog(r->e), s, 0, &cur, &err) != 0)
			break;
		while (repl_oplog_cursor_next(cur, &e, &err) == 1) {
			bson_iter_t it;
			uint32_t t, i;
			if (!bson_iter_init_find(&it, &e, "ts"))
				continue;
			bson_iter_timestamp(&it, &t, &i);
			if (REPL_TS(t, i) <= prev)
				log->disorder = true;
			prev = REPL_TS(t, i);
			if (log->n == log->cap) {
				log->cap = log->cap ? log->cap * 2 : 4096;
				log->ts = bson_realloc(log->ts, sizeof(*log->ts) * (size_t)log->cap);
			}
			log->ts[log->n++] = prev;
		}
		repl_oplog_cursor_close(cur);
		if (log->nscans == log->scap) {
			log->scap = log->scap ? log->scap * 2 : 256;
			log->ends = bson_realloc(log->ends, sizeof(int) * (size_t)log->scap);
		}
		log->ends[log->nscans++] = log->n;
	}
	terr_clear(&err);
	storage_session_close(s);
	return NULL;
}

static void
test_concurrent_writers(void)
{
	char *dir = tt_tmpdir("oplog-conc");
	rs_t r;
	wctx_t w[W_THREADS];
	pthread_t th[W_THREADS], rd;
	scan_log_t log = {0};
	void *rargs[2] = {&r, &log};
	storage_coll_t *c = NULL, *hot = NULL;
	repl_ts_t *all = NULL;
	int nall = 0, n, k, from = 0, bad = 0;
	char *text;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	rs_ok(&r, "shop", "{'insert': 'hot', 'documents': [{'_id': 0, 'v': 0}]}");
	rs_ok(&r, "shop", "{'create': 'items'}");
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "items", &c, NULL), 0);
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "hot", &hot, NULL), 0);
	atomic_store(&writers_done, false);
	atomic_store(&reader_started, false);
	pthread_create(&rd, NULL, reader_main, rargs);
	for (int i = 0; i < W_THREADS; i++) {
		w[i] = (wctx_t){&r, i, c, hot};
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	for (int i = 0; i < W_THREADS; i++)
		pthread_join(th[i], NULL);
	atomic_store(&writers_done, true);
	pthread_join(rd, NULL);

	/* every committed entry, in ts order */
	{
		storage_session_t *s = client_session(r.cl, NULL);
		repl_oplog_cursor_t *cur = NULL;
		bson_t e;
		TT_EQ_INT(repl_oplog_scan_open(engine_oplog(r.e), s, 0, &cur, NULL), 0);
		while (repl_oplog_cursor_next(cur, &e, NULL) == 1) {
			bson_iter_t it;
			uint32_t t, i;
			TT_ASSERT(bson_iter_init_find(&it, &e, "ts"));
			bson_iter_timestamp(&it, &t, &i);
			all = bson_realloc(all, sizeof(*all) * (size_t)(nall + 1));
			all[nall++] = REPL_TS(t, i);
		}
		repl_oplog_cursor_close(cur);
	}
	for (int i = 1; i < nall; i++)
		TT_ASSERT(all[i] > all[i - 1]);
	TT_ASSERT(!log.disorder);
	TT_ASSERT(log.nscans > 0);
	/* no hole: each scan saw exactly a prefix of the final oplog */
	for (k = 0; k < log.nscans; from = log.ends[k], k++) {
		for (int j = from; j < log.ends[k]; j++)
			if (j - from >= nall || log.ts[j] != all[j - from])
				bad++;
	}
	TT_EQ_INT(bad, 0);
	/* one 'i' entry per document, one 'u' per hot update */
	text = oplog_text(&r, 0, &n);
	{
		int ins = 0, upd = 0;
		for (char *p = strstr(text, "\"ns\" : \"shop.items\""); p != NULL; p = strstr(p + 1, "\"ns\" : \"shop.items\""))
			ins++;
		for (char *p = strstr(text, "\"op\" : \"u\""); p != NULL; p = strstr(p + 1, "\"op\" : \"u\""))
			upd++;
		TT_EQ_INT(ins, W_THREADS * W_DOCS);
		TT_EQ_INT(upd, W_THREADS * (W_DOCS / 4));   /* _id n % 4 == 0 bumps it */
	}
	bson_free(text);
	{
		int64_t count = 0, size = 0, ss = 0;
		TT_EQ_INT(storage_coll_stats(engine_storage(r.e), client_session(r.cl, NULL), c, &count, &size, &ss,
		    NULL), 0);
		TT_EQ_INT(count, W_THREADS * W_DOCS);
	}
	storage_coll_release(c);
	storage_coll_release(hot);
	bson_free(all);
	bson_free(log.ts);
	bson_free(log.ends);
	rs_close(&r, true);
	bson_free(dir);
}

/* An entry stamped before others but committed after them: readers stop
 * before it (find included) until it commits. */
static void
test_no_hole_visible(void)
{
	char *dir = tt_tmpdir("oplog-hole");
	rs_t r;
	storage_session_t *a = NULL, *b = NULL;
	storage_coll_t *c = NULL;
	bson_t *d1 = tt_json("{\"_id\": 1}"), *d2 = tt_json("{\"_id\": 2}");
	repl_ts_t before, vis;
	char *out;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	rs_ok(&r, "shop", "{'create': 'items'}");
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "items", &c, NULL), 0);
	TT_EQ_INT(storage_session_open(engine_storage(r.e), &a, NULL), 0);
	TT_EQ_INT(storage_session_open(engine_storage(r.e), &b, NULL), 0);
	before = last_ts(&r);
	TT_EQ_INT(storage_txn_begin(a, NULL), 0);
	TT_EQ_INT(storage_doc_insert(a, c, d1, NULL, NULL), 0);     /* stamped first */
	TT_EQ_INT(storage_txn_begin(b, NULL), 0);
	TT_EQ_INT(storage_doc_insert(b, c, d2, NULL, NULL), 0);
	TT_EQ_INT(storage_txn_commit(b, false, NULL), 0);          /* committed first */
	vis = repl_oplog_visible(engine_oplog(r.e));
	TT_ASSERT(vis >= before && vis < storage_txn_first_timestamp(a));
	{
		int rc;
		bson_t *rep = rs_cmd(&r, "local", "{'find': 'oplog.rs', 'filter': {'ns': 'shop.items'}, "
		    "'projection': {'_id': 0, 'o': 1}}", &rc);
		out = tt_batch_text(rep, rc, "none");
		TT_EQ_STR(out, "[ ]");
		bson_free(out);
		tt_free_reply(rep);
		TT_EQ_INT(storage_txn_commit(a, false, NULL), 0);
		rep = rs_cmd(&r, "local", "{'find': 'oplog.rs', 'filter': {'ns': 'shop.items'}, "
		    "'projection': {'_id': 0, 'o': 1}}", &rc);
		out = tt_batch_text(rep, rc, "none");
		TT_EQ_STR(out, "[ { \"o\" : { \"_id\" : 1 } }, { \"o\" : { \"_id\" : 2 } } ]");
		bson_free(out);
		tt_free_reply(rep);
		/* $natural: -1 and count work on it as on any collection */
		rep = rs_cmd(&r, "local", "{'find': 'oplog.rs', 'sort': {'$natural': -1}, 'limit': 1, "
		    "'projection': {'_id': 0, 'o': 1}}", &rc);
		out = tt_batch_text(rep, rc, "none");
		TT_EQ_STR(out, "[ { \"o\" : { \"_id\" : 2 } } ]");
		bson_free(out);
		tt_free_reply(rep);
		rep = rs_cmd(&r, "local", "{'count': 'oplog.rs', 'query': {'op': 'i'}}", &rc);
		TT_EQ_INT(tt_get_i64(rep, "n"), 2);
		tt_free_reply(rep);
	}
	storage_session_close(a);
	storage_session_close(b);
	storage_coll_release(c);
	bson_destroy(d1);
	bson_destroy(d2);
	rs_close(&r, true);
	bson_free(dir);
}

/* A commit wakes the oplog's insert waiters only after the visibility point
 * moved past it: a woken waiter (the Raft feeder, a change stream) that
 * reads the point at once must see the entry (before, it could read the
 * point cached from before the commit and go back to sleep). */
typedef struct wake_arg {
	repl_oplog_t *op;
	storage_coll_t *oc;
	_Atomic int ready, stale, woken;
	atomic_ullong want;
	_Atomic bool stop;
} wake_arg_t;

static void *
wake_waiter(void *p)
{
	wake_arg_t *w = p;

	while (!atomic_load(&w->stop)) {
		uint64_t seq = storage_coll_insert_seq(w->oc);
		(void)repl_oplog_visible(w->op);   /* caches the point at this generation */
		atomic_store(&w->ready, 1);
		if (storage_coll_wait_insert(w->oc, seq, tm_now_us() + 200 * 1000) && !atomic_load(&w->stop)) {
			repl_ts_t vis = repl_oplog_visible(w->op);
			atomic_fetch_add(&w->woken, 1);
			if (vis < atomic_load(&w->want))
				atomic_fetch_add(&w->stale, 1);
		}
	}
	return NULL;
}

static void
test_woken_sees_commit(void)
{
	char *dir = tt_tmpdir("oplog-wake");
	rs_t r;
	wake_arg_t w;
	pthread_t th;
	storage_coll_t *c = NULL;
	storage_session_t *s = NULL;

	memset(&w, 0, sizeof(w));
	TT_ASSERT(rs_open(&r, dir, 0, true));
	rs_ok(&r, "shop", "{'create': 'w'}");
	w.op = engine_oplog(r.e);
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "w", &c, NULL), 0);
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), REPL_OPLOG_DB, REPL_OPLOG_COLL, &w.oc, NULL), 0);
	TT_EQ_INT(storage_session_open(engine_storage(r.e), &s, NULL), 0);
	pthread_create(&th, NULL, wake_waiter, &w);
	for (int i = 0; i < 300; i++) {
		bson_t d = BSON_INITIALIZER;
		repl_ts_t ts;
		while (!atomic_load(&w.ready))
			sched_yield();
		atomic_store(&w.ready, 0);
		BSON_APPEND_INT32(&d, "_id", i);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, NULL), 0);
		ts = storage_txn_first_timestamp(s);
		atomic_store(&w.want, ts);
		TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
		bson_destroy(&d);
	}
	atomic_store(&w.stop, true);
	pthread_join(th, NULL);
	TT_ASSERT(atomic_load(&w.woken) > 0);
	TT_EQ_INT(atomic_load(&w.stale), 0);
	storage_session_close(s);
	storage_coll_release(c);
	storage_coll_release(w.oc);
	rs_close(&r, true);
	bson_free(dir);
}

/* ---- transactions and retryable writes ------------------------------------ */

static bson_t *
last_entry(rs_t *r)
{
	storage_session_t *s = client_session(r->cl, NULL);
	bson_t *e = tm_bson_array_new(1);
	repl_oplog_optime_t ot = repl_oplog_last_optime(engine_oplog(r->e));

	TT_EQ_INT(repl_oplog_find(engine_oplog(r->e), s, ot.ts, e, NULL), 0);
	return e;
}

/* How many documents of c a transaction reading at read_ts sees. */
static int
count_at(rs_t *r, storage_coll_t *c, repl_ts_t read_ts)
{
	storage_session_t *s = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	int n = 0;

	TT_EQ_INT(storage_session_open(engine_storage(r->e), &s, NULL), 0);
	TT_EQ_INT(storage_txn_begin_at(s, read_ts, NULL), 0);
	TT_EQ_INT(storage_scan_open(s, c, false, &cur, NULL), 0);
	while (storage_cursor_next(cur, NULL, &doc, NULL, NULL, NULL) == 1)
		n++;
	storage_cursor_close(cur);
	storage_txn_rollback(s);
	storage_session_close(s);
	return n;
}

static void
test_transaction_applyops(void)
{
	char *dir = tt_tmpdir("oplog-txn");
	rs_t r;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	bson_t *lsid = tt_json("{\"id\": {\"$binary\": {\"base64\": \"AAAAAAAAQACAAAAAAAAAAQ==\", \"subType\": \"04\"}}}");
	repl_oplog_t *op;
	bson_t *e;
	bson_iter_t it;
	uint32_t t, i;
	repl_ts_t ts;
	terr_t err = TERR_INIT;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	op = engine_oplog(r.e);
	rs_ok(&r, "shop", "{'create': 'items'}");
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "items", &c, NULL), 0);
	TT_EQ_INT(storage_session_open(engine_storage(r.e), &s, NULL), 0);
	/* collect mode needs a transaction and session info */
	TT_ASSERT(repl_oplog_txn_collect(op, s, &err) != 0);
	TT_EQ_INT(err.code, 20);
	terr_clear(&err);
	TT_EQ_INT(repl_oplog_session_set(op, s, lsid, 5, REPL_OPLOG_OPTIME_NULL, NULL), 0);
	TT_EQ_INT(storage_txn_begin(s, NULL), 0);
	TT_EQ_INT(repl_oplog_txn_collect(op, s, NULL), 0);
	for (int k = 1; k <= 3; k++) {
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT32(&d, "_id", k);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, NULL), 0);
		bson_destroy(&d);
	}
	TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
	e = last_entry(&r);
	{
		bson_t clean = BSON_INITIALIZER;
		char *j;
		bson_iter_init(&it, e);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "wall") != 0 && strcmp(bson_iter_key(&it), "ts") != 0)
				bson_append_value(&clean, bson_iter_key(&it), -1, bson_iter_value(&it));
		j = bson_as_relaxed_extended_json(&clean, NULL);
		/* ui inside applyOps: blank it */
		for (char *p = strstr(j, "\"base64\" : \""); p != NULL; p = strstr(p, "\"base64\" : \"")) {
			p += 12;
			if (strncmp(p, "AAAA", 4) == 0)
				continue;
			while (*p != '"')
				*p++ = 'x';
		}
		TT_EQ_STR(j, "{ \"lsid\" : { \"id\" : { \"$binary\" : { \"base64\" : \"AAAAAAAAQACAAAAAAAAAAQ==\", \"subType\" : \"04\" } } }, "
		    "\"txnNumber\" : 5, \"op\" : \"c\", \"ns\" : \"admin.$cmd\", \"o\" : { \"applyOps\" : [ "
		    "{ \"op\" : \"i\", \"ns\" : \"shop.items\", \"ui\" : { \"$binary\" : { \"base64\" : \"xxxxxxxxxxxxxxxxxxxxxxxx\", \"subType\" : \"04\" } }, \"o\" : { \"_id\" : 1 }, \"o2\" : { \"_id\" : 1 } }, "
		    "{ \"op\" : \"i\", \"ns\" : \"shop.items\", \"ui\" : { \"$binary\" : { \"base64\" : \"xxxxxxxxxxxxxxxxxxxxxxxx\", \"subType\" : \"04\" } }, \"o\" : { \"_id\" : 2 }, \"o2\" : { \"_id\" : 2 } }, "
		    "{ \"op\" : \"i\", \"ns\" : \"shop.items\", \"ui\" : { \"$binary\" : { \"base64\" : \"xxxxxxxxxxxxxxxxxxxxxxxx\", \"subType\" : \"04\" } }, \"o\" : { \"_id\" : 3 }, \"o2\" : { \"_id\" : 3 } } ] }, "
		    "\"t\" : 1, \"v\" : 2, \"prevOpTime\" : { \"ts\" : { \"$timestamp\" : { \"t\" : 0, \"i\" : 0 } }, \"t\" : -1 } }");
		bson_free(j);
		bson_destroy(&clean);
	}
	TT_ASSERT(bson_iter_init_find(&it, e, "ts"));
	bson_iter_timestamp(&it, &t, &i);
	ts = REPL_TS(t, i);
	tt_free_reply(e);
	/* every write of the transaction commits at the entry's ts */
	TT_EQ_INT(count_at(&r, c, ts - 1), 0);
	TT_EQ_INT(count_at(&r, c, ts), 3);
	TT_ASSERT(repl_oplog_session_last(s).ts == ts);

	/* past 16 MB: a chain; partialTxn entries, then one with count */
	{
		size_t big = 4u * 1024 * 1024;
		char *fill = bson_malloc(big + 1);
		repl_oplog_optime_t before = repl_oplog_session_last(s);
		memset(fill, 'z', big);
		fill[big] = '\0';
		TT_EQ_INT(repl_oplog_session_set(op, s, lsid, 6, before, NULL), 0);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(repl_oplog_txn_collect(op, s, NULL), 0);
		for (int k = 10; k < 15; k++) {
			bson_t d = BSON_INITIALIZER;
			BSON_APPEND_INT32(&d, "_id", k);
			BSON_APPEND_UTF8(&d, "fill", fill);
			TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, NULL), 0);
			bson_destroy(&d);
		}
		TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
		bson_free(fill);
		e = last_entry(&r);
		TT_EQ_INT(tt_get_i64(e, "txnNumber"), 6);
		TT_EQ_INT(tt_get_i64(e, "o.count"), 5);
		TT_ASSERT(tt_get(e, "o.applyOps.1", &it) && !tt_get(e, "o.applyOps.2", &it));
		TT_ASSERT(!tt_get(e, "o.partialTxn", &it));
		/* its prevOpTime is the first entry of the chain */
		{
			bson_t *first = tm_bson_array_new(1);
			TT_ASSERT(tt_get(e, "prevOpTime.ts", &it));
			bson_iter_timestamp(&it, &t, &i);
			TT_EQ_INT(repl_oplog_find(op, s, REPL_TS(t, i), first, NULL), 0);
			TT_ASSERT(tt_get(first, "o.partialTxn", &it) && bson_iter_as_bool(&it));
			TT_ASSERT(tt_get(first, "o.applyOps.2", &it) && !tt_get(first, "o.applyOps.3", &it));
			TT_ASSERT(tt_get(first, "prevOpTime.ts", &it));
			bson_iter_timestamp(&it, &t, &i);
			TT_ASSERT(REPL_TS(t, i) == before.ts);
			tt_free_reply(first);
		}
		tt_free_reply(e);
	}
	/* rolled back: nothing logged */
	{
		repl_ts_t mark = last_ts(&r);
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT32(&d, "_id", 99);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(repl_oplog_txn_collect(op, s, NULL), 0);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, NULL), 0);
		storage_txn_rollback(s);
		bson_destroy(&d);
		TT_ASSERT(last_ts(&r) == mark);
	}
	repl_oplog_session_clear(s);
	storage_session_close(s);
	storage_coll_release(c);
	bson_destroy(lsid);
	rs_close(&r, true);
	bson_free(dir);
}

typedef struct retry_arg {
	storage_coll_t *c;
} retry_arg_t;

static int
retry_fn(storage_session_t *s, void *p, terr_t *err)
{
	retry_arg_t *a = p;

	for (int k = 0; k < 2; k++) {
		bson_t d = BSON_INITIALIZER;
		int ret;
		BSON_APPEND_INT32(&d, "_id", 100 + k);
		repl_oplog_session_set_stmt(s, k);
		ret = storage_doc_insert(s, a->c, &d, NULL, err);
		bson_destroy(&d);
		if (ret != 0)
			return ret;
	}
	return 0;
}

static void
test_retryable_session_info(void)
{
	char *dir = tt_tmpdir("oplog-retry");
	rs_t r;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	bson_t *lsid = tt_json("{\"id\": {\"$binary\": {\"base64\": \"AAAAAAAAQACAAAAAAAAAAg==\", \"subType\": \"04\"}}}");
	repl_oplog_t *op;
	retry_arg_t a;
	repl_oplog_optime_t last;
	bson_t *e = tm_bson_array_new(1);
	bson_iter_t it;
	uint32_t t, i;
	repl_ts_t first_stmt;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	op = engine_oplog(r.e);
	rs_ok(&r, "shop", "{'create': 'items'}");
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "items", &c, NULL), 0);
	TT_EQ_INT(storage_session_open(engine_storage(r.e), &s, NULL), 0);
	TT_EQ_INT(repl_oplog_session_set(op, s, lsid, 7, REPL_OPLOG_OPTIME_NULL, NULL), 0);
	TT_ASSERT(repl_oplog_session_last(s).ts == 0 && repl_oplog_session_last(s).t == -1);
	a.c = c;
	TT_EQ_INT(storage_txn_run(s, retry_fn, &a, false, NULL), 0);
	last = repl_oplog_session_last(s);
	TT_EQ_INT(repl_oplog_find(op, s, last.ts, e, NULL), 0);
	TT_EQ_INT(tt_get_i64(e, "txnNumber"), 7);
	TT_EQ_INT(tt_get_i64(e, "stmtId"), 1);
	TT_EQ_STR(tt_get_str(e, "op"), "i");
	TT_ASSERT(tt_get(e, "lsid.id", &it));
	/* the chain: the second statement's prevOpTime is the first's */
	TT_ASSERT(tt_get(e, "prevOpTime.ts", &it));
	bson_iter_timestamp(&it, &t, &i);
	first_stmt = REPL_TS(t, i);
	tt_free_reply(e);
	e = tm_bson_array_new(1);
	TT_EQ_INT(repl_oplog_find(op, s, REPL_TS(t, i), e, NULL), 0);
	TT_EQ_INT(tt_get_i64(e, "stmtId"), 0);
	TT_ASSERT(tt_get(e, "prevOpTime.ts", &it));
	bson_iter_timestamp(&it, &t, &i);
	TT_ASSERT(t == 0 && i == 0);
	TT_EQ_INT(tt_get_i64(e, "prevOpTime.t"), -1);
	tt_free_reply(e);
	/* a scan from a ts starts right after it */
	{
		repl_oplog_cursor_t *cur = NULL;
		bson_t ent;
		TT_EQ_INT(repl_oplog_scan_open(op, s, first_stmt, &cur, NULL), 0);
		TT_EQ_INT(repl_oplog_cursor_next(cur, &ent, NULL), 1);
		TT_EQ_INT(tt_get_i64(&ent, "stmtId"), 1);
		TT_EQ_INT(repl_oplog_cursor_next(cur, &ent, NULL), 0);
		repl_oplog_cursor_close(cur);
	}
	/* unknown ts */
	e = tm_bson_array_new(1);
	TT_EQ_INT(repl_oplog_find(op, s, REPL_TS(1, 1), e, NULL), 1);
	bson_free(e);
	/* cleared: plain entries again */
	repl_oplog_session_clear(s);
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 500}]}");
	e = last_entry(&r);
	TT_ASSERT(!tt_get(e, "lsid", &it) && !tt_get(e, "stmtId", &it) && !tt_get(e, "prevOpTime", &it));
	tt_free_reply(e);
	storage_session_close(s);
	storage_coll_release(c);
	bson_destroy(lsid);
	rs_close(&r, true);
	bson_free(dir);
}

/* ---- size ----------------------------------------------------------------- */

static void
test_truncate_and_resize(void)
{
	char *dir = tt_tmpdir("oplog-trunc");
	rs_t r;
	repl_oplog_t *op;
	storage_coll_t *oc = NULL;
	int64_t removed = -1, count = 0, size = 0, ss = 0;
	repl_oplog_optime_t newest;
	terr_t err = TERR_INIT;
	repl_oplog_cursor_t *cur = NULL;
	bson_t e;
	int rc;
	bson_t *rep;

	TT_ASSERT(rs_open(&r, dir, 0.02, true));   /* ~20 KB */
	op = engine_oplog(r.e);
	TT_EQ_INT(repl_oplog_max_bytes(op), (int64_t)(0.02 * 1024 * 1024));
	rs_ok(&r, "shop", "{'create': 'items'}");
	/* a reader standing on the oldest entry */
	TT_EQ_INT(repl_oplog_scan_open(op, client_session(r.cl, NULL), 0, &cur, NULL), 0);
	TT_EQ_INT(repl_oplog_cursor_next(cur, &e, NULL), 1);
	TT_EQ_INT(repl_oplog_cursor_save(cur, NULL), 0);
	for (int k = 0; k < 200; k++) {
		char *cmd = bson_strdup_printf("{'insert': 'items', 'documents': [{'_id': %d, 's': "
		    "'....................................................................................'}]}", k);
		rs_ok(&r, "shop", cmd);
		bson_free(cmd);
	}
	newest = repl_oplog_last_optime(op);
	/* minRetentionHours keeps everything younger */
	TT_EQ_INT(repl_oplog_resize(op, NAN, 1, NULL), 0);
	TT_EQ_INT(repl_oplog_truncate(op, &removed, NULL), 0);
	TT_EQ_INT(removed, 0);
	TT_EQ_INT(repl_oplog_resize(op, NAN, 0, NULL), 0);
	TT_EQ_INT(repl_oplog_truncate(op, &removed, NULL), 0);
	TT_ASSERT(removed > 100);
	TT_EQ_INT(storage_coll_get(engine_storage(r.e), "local", "oplog.rs", &oc, NULL), 0);
	TT_EQ_INT(storage_coll_stats(engine_storage(r.e), client_session(r.cl, NULL), oc, &count, &size, &ss, NULL), 0);
	TT_ASSERT(size <= repl_oplog_max_bytes(op));
	TT_ASSERT(count > 10);
	storage_coll_release(oc);
	/* the newest stays */
	TT_ASSERT(repl_oplog_last_optime(op).ts == newest.ts);
	/* the reader's position is gone */
	TT_ASSERT(repl_oplog_cursor_restore(cur, client_session(r.cl, NULL), &err) != 0);
	TT_EQ_INT(err.code, 136);
	TT_ASSERT(strncmp(err.msg, "CollectionScan died due to position in capped collection being deleted. "
	    "Last seen record id: RecordId(", 101) == 0);
	terr_clear(&err);
	repl_oplog_cursor_close(cur);
	/* replSetResizeOplog: IDL doubles with validators */
	rep = rs_cmd(&r, "admin", "{'replSetResizeOplog': 1, 'size': 1000}", &rc);
	TT_EQ_INT(rc, 14);
	TT_EQ_STR(tt_get_str(rep, "errmsg"),
	    "BSON field 'replSetResizeOplog.size' is the wrong type 'int', expected type 'double'");
	tt_free_reply(rep);
	rep = rs_cmd(&r, "admin", "{'replSetResizeOplog': 1, 'size': 2e9}", &rc);
	TT_EQ_INT(rc, 2);
	TT_EQ_STR(tt_get_str(rep, "errmsg"),
	    "BSON field 'replSetResizeOplog.size' value must be <= 1073741824, actual value '2e+09'");
	tt_free_reply(rep);
	rep = rs_cmd(&r, "admin", "{'replSetResizeOplog': 1}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(rep);
	/* resize: mongod's bounds; the size is kept in the catalog options */
	TT_ASSERT(repl_oplog_resize(op, 989, -1, &err) != 0);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	TT_EQ_INT(repl_oplog_resize(op, 990, -1, NULL), 0);
	TT_EQ_INT(repl_oplog_max_bytes(op), 990LL * 1024 * 1024);
	rep = rs_cmd(&r, "local", "{'listCollections': 1, 'filter': {'name': 'oplog.rs'}}", &rc);
	TT_EQ_INT(tt_get_i64(rep, "cursor.firstBatch.0.options.size"), 990LL * 1024 * 1024);
	tt_free_reply(rep);
	/* still logging after the descriptor changed */
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 'after'}]}");
	rep = last_entry(&r);
	TT_EQ_STR(tt_get_str(rep, "o._id"), "after");
	tt_free_reply(rep);
	rs_close(&r, false);
	/* the resized size survives a restart, whatever --oplogSize says */
	TT_ASSERT(rs_open(&r, dir, 0.02, false));
	TT_EQ_INT(repl_oplog_max_bytes(engine_oplog(r.e)), 990LL * 1024 * 1024);
	rs_close(&r, true);
	bson_free(dir);
}

/* ---- recovery ------------------------------------------------------------- */

static void
test_restart_resumes_clock(void)
{
	char *dir = tt_tmpdir("oplog-restart");
	rs_t r;
	repl_oplog_optime_t before;
	bson_t *e;
	bson_iter_t it;
	uint32_t t, i;

	TT_ASSERT(rs_open(&r, dir, 0, true));
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 1}, {'_id': 2}]}");
	before = last_ts(&r) ? repl_oplog_last_optime(engine_oplog(r.e)) : REPL_OPLOG_OPTIME_NULL;
	rs_close(&r, false);
	TT_ASSERT(rs_open(&r, dir, 0, false));
	TT_ASSERT(repl_oplog_exists(engine_oplog(r.e)));
	TT_ASSERT(repl_clock_now(engine_clock(r.e)) >= before.ts);
	TT_ASSERT(repl_oplog_visible(engine_oplog(r.e)) >= before.ts);
	TT_ASSERT(repl_oplog_last_optime(engine_oplog(r.e)).ts == before.ts);
	/* initiating again creates nothing */
	{
		bool created = true;
		TT_EQ_INT(repl_oplog_create(engine_oplog(r.e), NULL, &created, NULL, NULL), 0);
		TT_ASSERT(!created);
	}
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 3}]}");
	e = last_entry(&r);
	TT_ASSERT(tt_get(e, "ts", &it));
	bson_iter_timestamp(&it, &t, &i);
	TT_ASSERT(REPL_TS(t, i) > before.ts);
	TT_EQ_INT(tt_get_i64(e, "o._id"), 3);
	tt_free_reply(e);
	rs_close(&r, true);
	bson_free(dir);
}

/* kill -9 in the middle of a stream of writes (CRUD and DDL): after
 * recovery every document has its insert entry and every insert entry
 * its document, and the clock resumes above the last entry. */
static void
test_kill9_agree(void)
{
	char *dir = tt_tmpdir("oplog-kill9");
	int ready[2];
	pid_t pid;
	char c;
	int status;
	rs_t r;

	TT_ASSERT(pipe(ready) == 0);
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		if (!rs_open(&r, dir, 0, true))
			_exit(2);
		c = 'R';
		for (int k = 0; ; k++) {
			char *cmd = bson_strdup_printf("{'insert': 'items', 'documents': [{'_id': %d}, {'_id': %d}]}",
			    2 * k, 2 * k + 1);
			bson_t *rep;
			int rc;
			rep = rs_cmd(&r, "shop", cmd, &rc);
			tt_free_reply(rep);
			bson_free(cmd);
			if (k % 50 == 0) {
				rep = rs_cmd(&r, "shop", "{'update': 'items', 'updates': [{'q': {}, 'u': {'$inc': {'n': 1}}, "
				    "'multi': true}]}", &rc);
				tt_free_reply(rep);
			}
			if (k == 100 && write(ready[1], &c, 1) != 1)
				_exit(3);
		}
	}
	close(ready[1]);
	TT_ASSERT(read(ready[0], &c, 1) == 1 && c == 'R');
	usleep(300 * 1000);
	kill(pid, SIGKILL);
	TT_ASSERT(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	close(ready[0]);

	TT_ASSERT(rs_open(&r, dir, 0, false));
	{
		storage_session_t *s = client_session(r.cl, NULL);
		storage_coll_t *items = NULL;
		storage_cursor_t *cur = NULL;
		repl_oplog_cursor_t *oc = NULL;
		bson_t doc;
		int64_t ndocs = 0, nent = 0, missing = 0, max_id = -1;
		repl_ts_t last = 0;

		TT_EQ_INT(storage_coll_get(engine_storage(r.e), "shop", "items", &items, NULL), 0);
		/* every insert entry has its document */
		TT_EQ_INT(repl_oplog_scan_open(engine_oplog(r.e), s, 0, &oc, NULL), 0);
		while (repl_oplog_cursor_next(oc, &doc, NULL) == 1) {
			bson_iter_t it;
			uint32_t t, i;
			TT_ASSERT(bson_iter_init_find(&it, &doc, "ts"));
			bson_iter_timestamp(&it, &t, &i);
			last = REPL_TS(t, i);
			if (strcmp(tt_get_str(&doc, "op"), "i") == 0 && strcmp(tt_get_str(&doc, "ns"), "shop.items") == 0) {
				bson_value_t id;
				bson_t found;
				recid_t rid;
				bson_t copy;
				bson_copy_to(&doc, &copy);
				nent++;
				id.value_type = BSON_TYPE_INT32;
				id.value.v_int32 = (int32_t)tt_get_i64(&copy, "o._id");
				if (storage_doc_find_id(s, items, &id, &rid, &found, NULL) != 0)
					missing++;
				bson_destroy(&copy);
			}
		}
		repl_oplog_cursor_close(oc);
		/* every document has its entry: ids are dense 0..n-1 in insert order */
		TT_EQ_INT(storage_scan_open(s, items, false, &cur, NULL), 0);
		while (storage_cursor_next(cur, NULL, &doc, NULL, NULL, NULL) == 1) {
			int64_t id = tt_get_i64(&doc, "_id");
			ndocs++;
			if (id > max_id)
				max_id = id;
		}
		storage_cursor_close(cur);
		TT_ASSERT(ndocs > 200);
		TT_EQ_INT(missing, 0);
		TT_EQ_INT(nent, ndocs);
		TT_EQ_INT(max_id, ndocs - 1);
		TT_ASSERT(repl_clock_now(engine_clock(r.e)) >= last);
		rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': -1}]}");
		TT_ASSERT(repl_oplog_last_optime(engine_oplog(r.e)).ts > last);
		storage_coll_release(items);
	}
	rs_close(&r, true);
	bson_free(dir);
}

/* The periodic no-op writer: an idle oplog gets {msg: "periodic noop"}
 * entries, a busy one none (straight on storage, no engine). */
static int
count_noops(repl_oplog_t *op, storage_session_t *s)
{
	repl_oplog_cursor_t *cur = NULL;
	bson_t e;
	int n = 0;

	TT_EQ_INT(repl_oplog_scan_open(op, s, 0, &cur, NULL), 0);
	while (repl_oplog_cursor_next(cur, &e, NULL) == 1)
		if (strcmp(tt_get_str(&e, "o.msg"), "periodic noop") == 0)
			n++;
	repl_oplog_cursor_close(cur);
	return n;
}

static void
test_periodic_noop(void)
{
	char *dir = tt_tmpdir("oplog-noop");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1, .noop_interval_secs = 1};
	int idle;

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, NULL, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	usleep(2600 * 1000);
	idle = count_noops(op, s);
	TT_ASSERT(idle >= 1 && idle <= 3);
	TT_EQ_INT(storage_coll_create(st, s, "shop", "items", NULL, NULL), 0);
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);
	for (int k = 0; k < 15; k++) {
		bson_t d = BSON_INITIALIZER;
		BSON_APPEND_INT32(&d, "_id", k);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(storage_doc_insert(s, c, &d, NULL, NULL), 0);
		TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
		bson_destroy(&d);
		usleep(150 * 1000);
	}
	/* at most the one a check right before the first write could have made */
	TT_ASSERT(count_noops(op, s) <= idle + 1);
	storage_coll_release(c);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* tt_json of single-quoted JSON (no quotes inside strings). */
static bson_t *
sq_json(const char *sq)
{
	char *j = bson_strdup(sq);
	bson_t *b;

	for (char *p = j; *p; p++)
		if (*p == '\'')
			*p = '"';
	b = tt_json(j);
	bson_free(j);
	return b;
}

/* changeStreamOptions' validation as mongod's (BadValue messages), the
 * stored document, the default, and the value read back. */
static void
test_cluster_params(void)
{
	static const struct {
		const char *json;
		int code;
		const char *msg;
	} cases[] = {
		{"{'preAndPostImages': {'expireAfterSeconds': 'off'}}", 0, NULL},
		{"{'preAndPostImages': {'expireAfterSeconds': 1}}", 0, NULL},
		{"{'preAndPostImages': {'expireAfterSeconds': {'$numberLong': '9223372036854775807'}}}", 0, NULL},
		{"{'preAndPostImages': {'expireAfterSeconds': 2.5}}", 0, NULL},
		{"{'preAndPostImages': {'expireAfterSeconds': {'$numberDecimal': '7'}}}", 0, NULL},
		{"{'preAndPostImages': {'expireAfterSeconds': 0.5}}", 2, "Numeric value of 'expireAfterSeconds' should be positive"},
		{"{'preAndPostImages': {'expireAfterSeconds': {'$numberDouble': 'NaN'}}}", 2,
		    "Numeric value of 'expireAfterSeconds' should be positive"},
		{"{'preAndPostImages': {'expireAfterSeconds': -5}}", 2, "Numeric value of 'expireAfterSeconds' should be positive"},
		{"{'preAndPostImages': {'expireAfterSeconds': 'Off'}}", 2, "Non-numeric value of 'expireAfterSeconds' should be 'off'"},
		{"{'preAndPostImages': {'expireAfterSeconds': null}}", 2,
		    "Failed parsing new changeStreamOptions valueBSON field 'changeStreamOptions.preAndPostImages."
		    "expireAfterSeconds' is the wrong type 'null', expected types '[string, long, int, decimal, double]'"},
		{"{'preAndPostImages': {'expireAfterSeconds': 1, 'x': 1}}", 2,
		    "Failed parsing new changeStreamOptions valueBSON field 'changeStreamOptions.preAndPostImages.x' is an "
		    "unknown field."},
		{"{'preAndPostImages': 1}", 2,
		    "Failed parsing new changeStreamOptions valueBSON field 'changeStreamOptions.expireAfterSeconds' is missing "
		    "but a required field"},
		{"{}", 2,
		    "Failed parsing new changeStreamOptions valueBSON field 'changeStreamOptions.preAndPostImages' is missing "
		    "but a required field"},
	};
	char *dir = tt_tmpdir("cluster-params");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	bson_t out, got;
	char *j;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bson_t *v = sq_json(cases[i].json);
		terr_t err = TERR_INIT;
		bson_init(&out);
		TT_EQ_INT(repl_cluster_param_build("changeStreamOptions", v, REPL_TS(5, 1), &out, &err), cases[i].code ? -1 : 0);
		TT_EQ_INT(err.code, cases[i].code);
		if (cases[i].msg != NULL)
			TT_EQ_STR(err.msg, cases[i].msg);
		terr_clear(&err);
		bson_destroy(&out);
		bson_destroy(v);
	}
	{
		bson_t *v = sq_json("{}");
		terr_t err = TERR_INIT;
		bson_init(&out);
		TT_EQ_INT(repl_cluster_param_build("nope", v, 0, &out, &err), -1);
		TT_EQ_INT(err.code, 4);
		TT_EQ_STR(err.msg, "Unknown server parameter: nope");
		terr_clear(&err);
		bson_destroy(&out);
		bson_destroy(v);
	}
	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, NULL, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	/* never set: the default */
	bson_init(&got);
	TT_EQ_INT(repl_cluster_param_get(st, s, "changeStreamOptions", true, &got, NULL), 0);
	j = bson_as_relaxed_extended_json(&got, NULL);
	TT_EQ_STR(j, "{ \"_id\" : \"changeStreamOptions\", \"clusterParameterTime\" : { \"$timestamp\" : { \"t\" : 0, \"i\" : 0 } }, "
	    "\"preAndPostImages\" : { \"expireAfterSeconds\" : \"off\" } }");
	bson_free(j);
	bson_destroy(&got);
	TT_EQ_INT(repl_cluster_param_preimage_expire_secs(st, s), 0);
	/* stored as given (an int32), read back as mongod shows it (a long) */
	{
		bson_t *v = sq_json("{'preAndPostImages': {'expireAfterSeconds': 30}}");
		bson_init(&out);
		TT_EQ_INT(repl_cluster_param_build("changeStreamOptions", v, REPL_TS(7, 2), &out, NULL), 0);
		TT_EQ_INT(repl_cluster_param_store(st, s, &out, false, NULL), 0);
		bson_destroy(&out);
		bson_destroy(v);
	}
	bson_init(&got);
	TT_EQ_INT(repl_cluster_param_get(st, s, "changeStreamOptions", false, &got, NULL), 0);
	j = bson_as_canonical_extended_json(&got, NULL);
	TT_EQ_STR(j, "{ \"_id\" : \"changeStreamOptions\", \"preAndPostImages\" : { \"expireAfterSeconds\" : "
	    "{ \"$numberLong\" : \"30\" } } }");
	bson_free(j);
	bson_destroy(&got);
	TT_EQ_INT(repl_cluster_param_preimage_expire_secs(st, s), 30);
	/* a second set replaces the document (one document, two oplog entries) */
	{
		bson_t *v = sq_json("{'preAndPostImages': {'expireAfterSeconds': 'off'}}");
		bson_init(&out);
		TT_EQ_INT(repl_cluster_param_build("changeStreamOptions", v, REPL_TS(8, 1), &out, NULL), 0);
		TT_EQ_INT(repl_cluster_param_store(st, s, &out, false, NULL), 0);
		bson_destroy(&out);
		bson_destroy(v);
	}
	TT_EQ_INT(repl_cluster_param_preimage_expire_secs(st, s), 0);
	{
		storage_coll_t *c = NULL;
		int64_t n = -1;
		TT_EQ_INT(storage_coll_get(st, "config", "clusterParameters", &c, NULL), 0);
		TT_EQ_INT(storage_coll_stats(st, s, c, &n, NULL, NULL, NULL), 0);
		TT_EQ_INT(n, 1);
		storage_coll_release(c);
	}
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

static int64_t
count_preimages(storage_t *st, storage_session_t *s)
{
	storage_coll_t *c = NULL;
	int64_t n = -1;

	if (storage_coll_get(st, "config", "system.preimages", &c, NULL) != 0 || c == NULL)
		return -1;
	storage_coll_stats(st, s, c, &n, NULL, NULL, NULL);
	storage_coll_release(c);
	return n;
}

/* Pre-image expiry: by the oldest oplog entry, by operationTime, bounded
 * per call. */
static void
test_preimage_expiry(void)
{
	char *dir = tt_tmpdir("preimage-expiry");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	static const uint8_t uuid[16] = {1, 2, 3};
	struct timespec now;
	int64_t removed = -1, now_ms;
	bson_t *pre = sq_json("{'_id': 1, 'a': 'x'}");

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, NULL, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	TT_EQ_INT(repl_preimage_ensure(st, s, NULL), 0);
	TT_EQ_INT(storage_txn_begin(s, NULL), 0);
	for (int k = 0; k < 2500; k++)
		TT_EQ_INT(repl_preimage_write_at(st, s, uuid, REPL_TS(100 + k, 1), 0, pre, NULL), 0);
	TT_EQ_INT(storage_txn_commit(s, false, NULL), 0);
	clock_gettime(CLOCK_REALTIME, &now);
	now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	/* by the oplog's end: ts below 110 */
	TT_EQ_INT(repl_preimage_expire(st, s, REPL_TS(110, 0), 0, 0, &removed, NULL), 0);
	TT_EQ_INT(removed, 10);
	/* by time: none written a minute ago */
	TT_EQ_INT(repl_preimage_expire(st, s, 0, now_ms - 60000, 1000, &removed, NULL), 0);
	TT_EQ_INT(removed, 0);
	TT_EQ_INT(count_preimages(st, s), 2490);
	/* all older than a second from now, 1000 at a time */
	TT_EQ_INT(repl_preimage_expire(st, s, 0, now_ms + 1000, 1000, &removed, NULL), 0);
	TT_EQ_INT(removed, 1000);
	TT_EQ_INT(repl_preimage_expire(st, s, 0, now_ms + 1000, 1000, &removed, NULL), 0);
	TT_EQ_INT(removed, 1000);
	TT_EQ_INT(repl_preimage_expire(st, s, 0, now_ms + 1000, 1000, &removed, NULL), 0);
	TT_EQ_INT(removed, 490);
	TT_EQ_INT(count_preimages(st, s), 0);
	bson_destroy(pre);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* The storage journal listener: token before each sync, durable after it
 * with that token; none once removed, none without a journal. */
typedef struct jl_probe {
	int tokens, durables;
	uint64_t next, last_durable;
} jl_probe_t;

static void
jl_token(void *arg, storage_journal_token_t *t)
{
	jl_probe_t *p = arg;
	p->tokens++;
	t->word[0] = ++p->next;
	t->word[1] = t->word[2] = 0;
}

static void
jl_durable(void *arg, const storage_journal_token_t *t)
{
	jl_probe_t *p = arg;
	p->durables++;
	p->last_durable = t->word[0];
}

static void
test_journal_listener(void)
{
	char *dir = tt_tmpdir("journal-listener");
	storage_options_t so = {.create = true}, mem = {.create = true, .in_memory = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	jl_probe_t p = {0};
	storage_journal_listener_t l = {jl_token, jl_durable, &p};
	int tokens;

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	TT_ASSERT(storage_set_journal_listener(st, &l));
	TT_EQ_INT(storage_journal_sync(s, NULL), 0);
	/* the flusher's rounds may come between: each told in pairs, the
	 * durable one the token taken before it */
	TT_ASSERT(p.tokens >= 1 && p.durables == p.tokens && p.last_durable == p.next);
	usleep(350 * 1000);
	TT_ASSERT(p.tokens >= 3 && p.durables == p.tokens);   /* idle rounds are told too */
	TT_ASSERT(storage_set_journal_listener(st, NULL));
	tokens = p.tokens;
	TT_EQ_INT(storage_journal_sync(s, NULL), 0);
	usleep(250 * 1000);
	TT_EQ_INT(p.tokens, tokens);
	storage_session_close(s);
	storage_close(st);
	tt_rmdir(dir);
	TT_EQ_INT(storage_open(dir, &mem, &st, NULL), 0);
	TT_ASSERT(!storage_set_journal_listener(st, &l));
	storage_close(st);
	tt_rmdir(dir);
	bson_free(dir);
}

/* repl_oplog_durable_optime (a primary's durableOpTime): behind the last
 * entry until a journal sync covers it, the last one after
 * storage_journal_sync, the recovered one after a reopen, capped at a
 * rollback's common point. */
static void
test_durable_optime(void)
{
	char *dir = tt_tmpdir("oplog-durable");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	repl_oplog_optime_t at, first = REPL_OPLOG_OPTIME_NULL, d;
	int lagged = 0;
	int64_t removed = 0;
	bson_t *o = sq_json("{'msg': 'durable?'}");

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_durable_optime(op).ts, 0);
	TT_EQ_INT(repl_oplog_create(op, NULL, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	/* 20 writes in a row, far faster than the flusher's 100 ms rounds:
	 * the durable optime is behind right after most of them, never ahead */
	for (int k = 0; k < 20; k++) {
		TT_EQ_INT(repl_oplog_noop(op, s, o, &at, NULL), 0);
		if (k == 0)
			first = at;
		d = repl_oplog_durable_optime(op);
		TT_ASSERT(d.ts <= repl_oplog_last_optime(op).ts);
		lagged += d.ts < at.ts;
	}
	TT_ASSERT(lagged >= 10);
	TT_EQ_INT(storage_journal_sync(s, NULL), 0);
	d = repl_oplog_durable_optime(op);
	TT_ASSERT(d.ts == at.ts && d.t == at.t);
	/* the flusher alone catches up within a few rounds */
	TT_EQ_INT(repl_oplog_noop(op, s, o, &at, NULL), 0);
	for (int k = 0; k < 50 && repl_oplog_durable_optime(op).ts < at.ts; k++)
		usleep(20 * 1000);
	TT_EQ_INT(repl_oplog_durable_optime(op).ts, at.ts);
	/* a rollback's reset: not past the common point */
	storage_session_set_unobserved(s, true);
	TT_EQ_INT(storage_txn_begin(s, NULL), 0);
	TT_EQ_INT(repl_oplog_remove_after(op, s, first.ts, &removed, NULL), 0);
	TT_EQ_INT(storage_txn_commit(s, true, NULL), 0);
	storage_session_set_unobserved(s, false);
	TT_ASSERT(removed >= 20);
	TT_EQ_INT(repl_oplog_rollback_reset(op, first.ts, NULL), 0);
	TT_EQ_INT(repl_oplog_durable_optime(op).ts, first.ts);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	/* reopened: what recovery found is durable */
	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_durable_optime(op).ts, repl_oplog_last_optime(op).ts);
	TT_ASSERT(repl_oplog_durable_optime(op).ts >= first.ts);
	repl_oplog_close(op);
	storage_close(st);
	bson_destroy(o);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* repl_oplog_txn_split: by bytes, by count, an oversized operation alone */
static void
test_txn_split(void)
{
	int64_t lens[8] = {10, 10, 10, 10, 10, 10, 10, 10};
	int ends[8];

	TT_EQ_INT(repl_oplog_txn_split(lens, 0, 100, 0, ends), 0);
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 100, 0, ends), 1);
	TT_EQ_INT(ends[0], 8);
	/* 30 bytes an entry: 3, 3, 2 */
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 30, 0, ends), 3);
	TT_ASSERT(ends[0] == 3 && ends[1] == 6 && ends[2] == 8);
	/* 29 bytes: 2 each */
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 29, 0, ends), 4);
	TT_ASSERT(ends[0] == 2 && ends[3] == 8);
	/* maxNumberOfTransactionOperationsInSingleOplogEntry 1 and 3 */
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 1000, 1, ends), 8);
	for (int i = 0; i < 8; i++)
		TT_EQ_INT(ends[i], i + 1);
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 1000, 3, ends), 3);
	TT_ASSERT(ends[0] == 3 && ends[1] == 6 && ends[2] == 8);
	/* both: the tighter one cuts */
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 25, 3, ends), 4);
	/* an operation larger than the limit: an entry of its own */
	lens[3] = 500;
	TT_EQ_INT(repl_oplog_txn_split(lens, 8, 100, 0, ends), 3);
	TT_ASSERT(ends[0] == 3 && ends[1] == 4 && ends[2] == 8);
	/* the real limit: 40 operations of 1 MB in entries under 16 MB */
	{
		int64_t mb[40];
		int e40[40];
		for (int i = 0; i < 40; i++)
			mb[i] = 1024 * 1024;
		TT_EQ_INT(repl_oplog_txn_split(mb, 40, REPL_OPLOG_TXN_ENTRY_MAX, INT32_MAX, e40), 3);
		TT_ASSERT(e40[0] == 15 && e40[1] == 30 && e40[2] == 40);
	}
}

int
main(void)
{
	TT_RUN(test_clock);
	TT_RUN(test_diffs);
	TT_RUN(test_diffs_update);
	TT_RUN(test_standalone_and_uninitiated);
	TT_RUN(test_entries);
	TT_RUN(test_concurrent_writers);
	TT_RUN(test_no_hole_visible);
	TT_RUN(test_woken_sees_commit);
	TT_RUN(test_transaction_applyops);
	TT_RUN(test_retryable_session_info);
	TT_RUN(test_truncate_and_resize);
	TT_RUN(test_restart_resumes_clock);
	TT_RUN(test_kill9_agree);
	TT_RUN(test_periodic_noop);
	TT_RUN(test_journal_listener);
	TT_RUN(test_durable_optime);
	TT_RUN(test_cluster_params);
	TT_RUN(test_preimage_expiry);
	TT_RUN(test_txn_split);
	return tt_finish();
}
