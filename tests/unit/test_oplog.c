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
#include <pthread.h>
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
	TT_EQ_STR(err.msg, "New cluster time, 31537002, is too far from this node's wall clock time, 1001.");
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
	if (initiate && repl_oplog_create(engine_oplog(r->e), NULL, NULL, NULL, &err) != 0) {
		fprintf(stderr, "repl_oplog_create: %s\n", err.msg);
		terr_clear(&err);
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
	/* --replSet before initiation: nothing is logged, no oplog exists */
	TT_ASSERT(rs_open(&r, dir, 0, false));
	rs_ok(&r, "shop", "{'insert': 'items', 'documents': [{'_id': 1}]}");
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
	expect_entries(&r, 0, "{ \"op\" : \"n\", \"ns\" : \"\", \"o\" : { \"msg\" : \"initiating set\" } }\n");
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

int
main(void)
{
	TT_RUN(test_clock);
	TT_RUN(test_diffs);
	TT_RUN(test_standalone_and_uninitiated);
	TT_RUN(test_entries);
	return tt_finish();
}
