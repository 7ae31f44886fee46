/*
 * test_oplog_apply.c -- a secondary's oplog application (repl/oplog_apply.h)
 * and the member table of a set on Raft (repl/raft_member.h):
 *   - $v: 2 diffs: hand-written cases of mongod's shapes, and a model check:
 *     random documents pre/post, the primary's diff (repl_diff_compute),
 *     applied to pre must give post byte for byte;
 *   - malformed diffs fail (2) rather than write a wrong document;
 *   - repl_member_peers: Raft ids and ports, priorities, the 65535 limit
 *     (93); mongod's priority-takeover delay (repl/member_takeover.h);
 *   - a rollback's oplog side (repl/rollback.h): whether one is needed,
 *     entries removed after the common point, WiredTiger's timestamps
 *     forced back so the set's older entries can be written (before the
 *     reset they are refused), minValid skipping updates of missing
 *     documents;
 *   - a transaction of several entries (partialTxn ... count): nothing of it
 *     is applied or logged until its commit entry, then all of it in one
 *     transaction; a broken chain (a missing link, a wrong count) fails
 *     with 238 and applies nothing; a chain whose commit never comes is
 *     dropped at the next ordinary entry;
 *   - the session row of a batch of retryable inserts: which entries
 *     supersede another's row (repl_oplog_apply_same_session), a deferred
 *     row left out for one entry only, written by the next;
 *   - a run of CRUD entries in one storage transaction
 *     (repl_oplog_apply_run): a read at every ts of the run sees exactly
 *     the entries up to it (documents, oplog, session row), a replay skips
 *     every entry, a failing entry leaves the ones before it applied and
 *     its own error, an insert of an _id already there replaces it; DDL, applyOps and system.views stay out of runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"
#include "repl/oplog_apply.h"
#include "repl/retryable.h"
#include "repl/txn.h"
#include "repl/oplog_diff.h"
#include "repl/member_takeover.h"
#include "repl/raft_member.h"
#include "repl/rollback.h"

static void
apply_json(const char *doc, const char *diff, const char *want)
{
	bson_t *d = tt_json(doc), *df = tt_json(diff), out;
	terr_t err = TERR_INIT;

	TT_EQ_INT(repl_oplog_diff_apply(d, df, &out, &err), 0);
	if (err.code == 0) {
		TT_EQ_JSON(&out, want);
		bson_destroy(&out);
	}
	terr_clear(&err);
	bson_destroy(d);
	bson_destroy(df);
}

static void
test_diff_cases(void)
{
	apply_json("{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"u\": {\"a\": 5}}", "{ \"_id\" : 1, \"a\" : 5, \"b\" : 2 }");
	apply_json("{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"d\": {\"a\": false}, \"i\": {\"c\": 3}}",
	    "{ \"_id\" : 1, \"b\" : 2, \"c\" : 3 }");
	apply_json("{\"_id\": 1, \"s\": {\"x\": 1, \"y\": 2}}", "{\"ss\": {\"u\": {\"y\": 9}, \"i\": {\"z\": 1}}}",
	    "{ \"_id\" : 1, \"s\" : { \"x\" : 1, \"y\" : 9, \"z\" : 1 } }");
	/* arrays: update an index, grow, shrink */
	apply_json("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"sa\": {\"a\": true, \"u1\": 20}}",
	    "{ \"_id\" : 1, \"a\" : [ 1, 20, 3 ] }");
	apply_json("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"sa\": {\"a\": true, \"u4\": 5}}",
	    "{ \"_id\" : 1, \"a\" : [ 1, 2, 3, null, 5 ] }");
	apply_json("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"sa\": {\"a\": true, \"l\": 1}}", "{ \"_id\" : 1, \"a\" : [ 1 ] }");
	apply_json("{\"_id\": 1, \"a\": [{\"x\": 1}, {\"x\": 2}]}", "{\"sa\": {\"a\": true, \"s1\": {\"u\": {\"x\": 7}}}}",
	    "{ \"_id\" : 1, \"a\" : [ { \"x\" : 1 }, { \"x\" : 7 } ] }");
	/* a sub diff of a field the document lacks creates it */
	apply_json("{\"_id\": 1}", "{\"sn\": {\"i\": {\"k\": 1}}}", "{ \"_id\" : 1, \"n\" : { \"k\" : 1 } }");
}

static void
test_diff_malformed(void)
{
	bson_t *d = tt_json("{\"_id\": 1, \"a\": {\"b\": 1}}"), out;
	const char *bad[] = {
		"{\"sa\": 5}",
		"{\"sa\": {\"a\": true, \"s0\": 3}}",
		"{\"sa\": {\"a\": true, \"u99999999\": 1}}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bson_t *df = tt_json(bad[i]);
		terr_t err = TERR_INIT;
		int r = repl_oplog_diff_apply(d, df, &out, &err);
		TT_EQ_INT(r, -1);
		TT_EQ_INT(err.code, 2);
		if (r == 0)
			bson_destroy(&out);
		terr_clear(&err);
		bson_destroy(df);
	}
	bson_destroy(d);
}

/* ---- model check against the primary's diff ------------------------------------------- */

static unsigned rng = 12345;

static unsigned
rnd(unsigned n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

static void gen_value(bson_t *b, const char *key, int depth);

static void
gen_doc(bson_t *b, int depth, bool with_id)
{
	static const char *names[] = {"a", "b", "c", "d", "e", "f"};
	int n = (int)rnd(5);

	if (with_id)
		BSON_APPEND_INT32(b, "_id", 1);
	for (int i = 0; i < n; i++) {
		const char *k = names[rnd(6)];
		if (bson_has_field(b, k))
			continue;
		gen_value(b, k, depth);
	}
}

static void
gen_value(bson_t *b, const char *key, int depth)
{
	bson_t sub;

	switch (depth < 3 ? rnd(5) : rnd(3)) {
	case 0:
		BSON_APPEND_INT32(b, key, (int32_t)rnd(4));
		break;
	case 1:
		BSON_APPEND_UTF8(b, key, rnd(2) ? "x" : "yy");
		break;
	case 2:
		BSON_APPEND_NULL(b, key);
		break;
	case 3:
		BSON_APPEND_DOCUMENT_BEGIN(b, key, &sub);
		gen_doc(&sub, depth + 1, false);
		bson_append_document_end(b, &sub);
		break;
	default: {
		int n = (int)rnd(5);
		BSON_APPEND_ARRAY_BEGIN(b, key, &sub);
		for (int i = 0; i < n; i++) {
			char k[16];
			snprintf(k, sizeof(k), "%d", i);
			gen_value(&sub, k, depth + 1);
		}
		bson_append_array_end(b, &sub);
	}
	}
}

/* post: pre with random changes (some fields kept, some changed, some new) */
static void
mutate(const bson_t *pre, bson_t *post, int depth)
{
	bson_iter_t it;

	bson_init(post);
	if (bson_iter_init(&it, pre)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			unsigned r = rnd(6);
			if (strcmp(k, "_id") == 0 || r < 3) {
				bson_append_iter(post, k, -1, &it);
			} else if (r == 3 && BSON_ITER_HOLDS_DOCUMENT(&it) && depth < 3) {
				bson_t sub, m;
				const uint8_t *d;
				uint32_t l;
				bson_iter_document(&it, &l, &d);
				bson_init_static(&sub, d, l);
				mutate(&sub, &m, depth + 1);
				bson_append_document(post, k, -1, &m);
				bson_destroy(&m);
			} else if (r == 4) {
				gen_value(post, k, depth);
			}
			/* r == 5: removed */
		}
	}
	if (rnd(2))
		gen_value(post, rnd(2) ? "g" : "h", depth);
}

static void
test_diff_model(void)
{
	int checked = 0;

	for (int i = 0; i < 3000; i++) {
		bson_t pre = BSON_INITIALIZER, post, diff = BSON_INITIALIZER, got;
		terr_t err = TERR_INIT;
		gen_doc(&pre, 0, true);
		mutate(&pre, &post, 0);
		if (repl_diff_compute(&pre, &post, 1 << 20, &diff)) {
			if (repl_oplog_diff_apply(&pre, &diff, &got, &err) != 0) {
				TT_ASSERT(!"a diff of the primary's failed to apply");
			} else {
				if (!bson_equal(&got, &post)) {
					char *a = bson_as_relaxed_extended_json(&pre, NULL), *b = bson_as_relaxed_extended_json(&post, NULL),
					    *c = bson_as_relaxed_extended_json(&diff, NULL), *g = bson_as_relaxed_extended_json(&got, NULL);
					fprintf(stderr, "pre %s\npost %s\ndiff %s\ngot %s\n", a, b, c, g);
					bson_free(a);
					bson_free(b);
					bson_free(c);
					bson_free(g);
					TT_ASSERT(!"applying the diff did not give the new document");
					i = 1 << 30;
				}
				bson_destroy(&got);
				checked++;
			}
		}
		terr_clear(&err);
		bson_destroy(&pre);
		bson_destroy(&post);
		bson_destroy(&diff);
	}
	TT_ASSERT(checked > 1000);
}

static void
test_peers(void)
{
	bson_t *cfg = tt_json("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:30000\"},"
	    " {\"_id\": 5, \"host\": \"db2.example:27017\"}, {\"_id\": 2, \"host\": \"127.0.0.1:30002\"}]}");
	repl_member_peer_t *p = NULL;
	int n = 0, self = -1;
	terr_t err = TERR_INIT;

	TT_EQ_INT(repl_member_peers(cfg, "127.0.0.1:30002", &p, &n, &self, &err), 0);
	TT_EQ_INT(n, 3);
	TT_EQ_INT(self, 2);
	TT_EQ_STR(p[0].raft_addr, "127.0.0.1:31000");
	TT_EQ_STR(p[1].raft_addr, "db2.example:28017");
	TT_EQ_INT(p[1].member_id, 5);
	TT_ASSERT(p[0].priority == 1 && p[2].priority == 1);   /* the default */
	bson_free(p);
	bson_destroy(cfg);
	/* priorities, and mongod's takeover delay: (rank + 1) x electionTimeout,
	 * rank = the members of a higher priority (ties share a rank) */
	cfg = tt_json("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"a:1\", \"priority\": 2},"
	    " {\"_id\": 1, \"host\": \"b:1\", \"priority\": 0.5}, {\"_id\": 2, \"host\": \"c:1\", \"priority\": 3},"
	    " {\"_id\": 3, \"host\": \"d:1\", \"priority\": 2}]}");
	TT_EQ_INT(repl_member_peers(cfg, "b:1", &p, &n, &self, &err), 0);
	TT_ASSERT(p[0].priority == 2 && p[1].priority == 0.5 && p[2].priority == 3);
	TT_EQ_INT(repl_takeover_delay_ms(p, n, 2, 1000), 1000);
	TT_EQ_INT(repl_takeover_delay_ms(p, n, 0, 1000), 2000);
	TT_EQ_INT(repl_takeover_delay_ms(p, n, 3, 1000), 2000);
	TT_EQ_INT(repl_takeover_delay_ms(p, n, 1, 1000), 4000);
	bson_free(p);
	bson_destroy(cfg);
	cfg = tt_json("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:64600\"}]}");
	TT_EQ_INT(repl_member_peers(cfg, NULL, &p, &n, &self, &err), -1);
	TT_EQ_INT(err.code, 93);
	terr_clear(&err);
	bson_destroy(cfg);
}

/* An entry {op, ns, o[, o2], ts: Timestamp(100, inc), t: 1} applied. */
static int
apply_at(repl_oplog_t *op, storage_t *st, storage_session_t *s, const char *opname, const char *ns, const char *o,
         const char *o2, uint32_t inc, terr_t *err)
{
	bson_t e = BSON_INITIALIZER, *ob = tt_json(o), *o2b = o2 != NULL ? tt_json(o2) : NULL;
	bool applied = false;
	int r;

	BSON_APPEND_UTF8(&e, "op", opname);
	BSON_APPEND_UTF8(&e, "ns", ns);
	BSON_APPEND_DOCUMENT(&e, "o", ob);
	if (o2b != NULL)
		BSON_APPEND_DOCUMENT(&e, "o2", o2b);
	BSON_APPEND_TIMESTAMP(&e, "ts", 100, inc);
	BSON_APPEND_INT64(&e, "t", 1);
	BSON_APPEND_INT64(&e, "v", 2);
	BSON_APPEND_DATE_TIME(&e, "wall", 100000);
	r = repl_oplog_apply_entry(op, st, s, &e, NULL, false, &applied, err);
	bson_destroy(&e);
	bson_destroy(ob);
	if (o2b != NULL)
		bson_destroy(o2b);
	return r;
}

static int
count_docs(storage_session_t *s, storage_coll_t *c)
{
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t d;
	int n = 0;

	TT_EQ_INT(storage_scan_open(s, c, false, &cur, NULL), 0);
	while (storage_cursor_next(cur, &rid, &d, NULL, NULL, NULL) == 1)
		n++;
	storage_cursor_close(cur);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return n;
}

static void
test_rollback_oplog(void)
{
	char *dir = tt_tmpdir("oplog-rollback");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	terr_t err = TERR_INIT;
	repl_ts_t own = 0;
	int64_t removed = 0;
	char o[64];

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	TT_EQ_INT(apply_at(op, st, s, "c", "shop.$cmd", "{\"create\": \"items\"}", NULL, 1, &err), 0);
	for (uint32_t k = 2; k <= 10; k++) {
		snprintf(o, sizeof(o), "{\"_id\": %u, \"v\": 0}", k);
		TT_EQ_INT(apply_at(op, st, s, "i", "shop.items", o, NULL, k, &err), 0);
	}
	TT_ASSERT(repl_oplog_wait_visible(op, REPL_TS(100, 10), 2000));
	usleep(400 * 1000);   /* the oplog thread moves stable to (100, 10) */
	/* the set's entry (100, 4) is here; (100, 11) is not, and local
	 * entries follow the common point (100, 5) */
	TT_EQ_INT(repl_rollback_needed(op, s, REPL_TS(100, 3), REPL_TS(100, 4), &own, &err), 0);
	TT_EQ_INT(repl_rollback_needed(op, s, REPL_TS(100, 5), REPL_TS(100, 11), &own, &err), 1);
	TT_ASSERT(own == REPL_TS(100, 6));
	TT_EQ_INT(repl_rollback_needed(op, s, REPL_TS(100, 10), REPL_TS(100, 11), &own, &err), 0);
	/* the set's entry at (100, 4) of the local entry's term (1) is here;
	 * of another term (a forced reconfig's other history) it is not, and
	 * the local entries after the common point are this member's own */
	TT_EQ_INT(repl_rollback_needed_t(op, s, REPL_TS(100, 3), REPL_TS(100, 4), 1, &own, &err), 0);
	TT_EQ_INT(repl_rollback_needed_t(op, s, REPL_TS(100, 3), REPL_TS(100, 4), -1, &own, &err), 0);
	TT_EQ_INT(repl_rollback_needed_t(op, s, REPL_TS(100, 3), REPL_TS(100, 4), 10007, &own, &err), 1);
	TT_ASSERT(own == REPL_TS(100, 4));
	/* cut after (100, 5), undo the inserts 6..10 */
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);
	{
		bool was = storage_thread_set_unobserved(true);
		TT_EQ_INT(storage_txn_begin(s, NULL), 0);
		TT_EQ_INT(repl_oplog_remove_after(op, s, REPL_TS(100, 5), &removed, &err), 0);
		for (int k = 6; k <= 10; k++) {
			bson_t id = BSON_INITIALIZER, d, old;
			bson_iter_t it;
			recid_t rid;
			BSON_APPEND_INT32(&id, "_id", k);
			bson_iter_init_find(&it, &id, "_id");
			TT_EQ_INT(storage_doc_find_id(s, c, bson_iter_value(&it), &rid, &d, NULL), 0);
			bson_copy_to(&d, &old);
			TT_EQ_INT(storage_doc_delete(s, c, rid, &old, NULL), 0);
			bson_destroy(&old);
			bson_destroy(&id);
		}
		TT_EQ_INT(storage_txn_commit(s, true, NULL), 0);
		storage_thread_set_unobserved(was);
	}
	TT_EQ_INT(removed, 5);
	TT_EQ_INT(count_docs(s, c), 4);
	/* before the reset: an entry older than the stable point is refused */
	TT_EQ_INT(apply_at(op, st, s, "i", "shop.items", "{\"_id\": 70}", NULL, 7, &err), -1);
	terr_clear(&err);
	TT_EQ_INT(repl_oplog_rollback_reset(op, REPL_TS(100, 5), &err), 0);
	TT_ASSERT(repl_oplog_visible(op) == REPL_TS(100, 5));
	TT_ASSERT(repl_oplog_last_optime(op).ts == REPL_TS(100, 5));
	/* the set's branch: (100, 6) and (100, 7) */
	TT_EQ_INT(apply_at(op, st, s, "i", "shop.items", "{\"_id\": 60}", NULL, 6, &err), 0);
	TT_EQ_INT(apply_at(op, st, s, "i", "shop.items", "{\"_id\": 70}", NULL, 7, &err), 0);
	TT_ASSERT(repl_oplog_wait_visible(op, REPL_TS(100, 7), 2000));
	TT_ASSERT(repl_oplog_last_optime(op).ts == REPL_TS(100, 7));
	TT_EQ_INT(count_docs(s, c), 6);
	/* an update of a missing document: an error, unless under minValid */
	TT_EQ_INT(apply_at(op, st, s, "u", "shop.items", "{\"$v\": 2, \"diff\": {\"u\": {\"v\": 1}}}",
	    "{\"_id\": 8}", 8, &err), -1);
	TT_EQ_INT(err.code, 47);
	terr_clear(&err);
	repl_oplog_apply_set_min_valid(REPL_TS(100, 8));
	TT_EQ_INT(apply_at(op, st, s, "u", "shop.items", "{\"$v\": 2, \"diff\": {\"u\": {\"v\": 1}}}",
	    "{\"_id\": 8}", 8, &err), 0);
	TT_EQ_INT(apply_at(op, st, s, "u", "shop.items", "{\"$v\": 2, \"diff\": {\"u\": {\"v\": 1}}}",
	    "{\"_id\": 9}", 9, &err), -1);
	terr_clear(&err);
	repl_oplog_apply_set_min_valid(0);
	storage_coll_release(c);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* A transaction's entry {lsid, txnNumber: 1, op: 'c', ns: admin.$cmd,
 * o: {applyOps: [inserts of ids], partialTxn | count}, ts: (100, inc), t: 1,
 * prevOpTime: (100, prev) or null} applied. */
static int
apply_txn(repl_oplog_t *op, storage_t *st, storage_session_t *s, const int *ids, int nids, bool partial,
          int64_t count, uint32_t inc, uint32_t prev, bool *applied, terr_t *err)
{
	static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	bson_t e = BSON_INITIALIZER, lsid, o, arr, pt;
	char key[16];
	int r;

	BSON_APPEND_DOCUMENT_BEGIN(&e, "lsid", &lsid);
	bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_document_end(&e, &lsid);
	BSON_APPEND_INT64(&e, "txnNumber", 1);
	BSON_APPEND_UTF8(&e, "op", "c");
	BSON_APPEND_UTF8(&e, "ns", "admin.$cmd");
	BSON_APPEND_DOCUMENT_BEGIN(&e, "o", &o);
	BSON_APPEND_ARRAY_BEGIN(&o, "applyOps", &arr);
	for (int i = 0; i < nids; i++) {
		bson_t one, d;
		snprintf(key, sizeof(key), "%d", i);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &one);
		BSON_APPEND_UTF8(&one, "op", "i");
		BSON_APPEND_UTF8(&one, "ns", "shop.items");
		BSON_APPEND_DOCUMENT_BEGIN(&one, "o", &d);
		BSON_APPEND_INT32(&d, "_id", ids[i]);
		bson_append_document_end(&one, &d);
		bson_append_document_end(&arr, &one);
	}
	bson_append_array_end(&o, &arr);
	if (partial)
		BSON_APPEND_BOOL(&o, "partialTxn", true);
	else if (count >= 0)
		BSON_APPEND_INT64(&o, "count", count);
	bson_append_document_end(&e, &o);
	BSON_APPEND_TIMESTAMP(&e, "ts", 100, inc);
	BSON_APPEND_INT64(&e, "t", 1);
	BSON_APPEND_INT64(&e, "v", 2);
	BSON_APPEND_DATE_TIME(&e, "wall", 100000);
	BSON_APPEND_DOCUMENT_BEGIN(&e, "prevOpTime", &pt);
	BSON_APPEND_TIMESTAMP(&pt, "ts", prev ? 100 : 0, prev);
	BSON_APPEND_INT64(&pt, "t", prev ? 1 : -1);
	bson_append_document_end(&e, &pt);
	r = repl_oplog_apply_entry(op, st, s, &e, NULL, false, applied, err);
	bson_destroy(&e);
	return r;
}

/* Whether the oplog holds an entry at (100, inc). */
static bool
logged(repl_oplog_t *op, storage_session_t *s, uint32_t inc)
{
	bson_t found;
	int r = repl_oplog_find(op, s, REPL_TS(100, inc), &found, NULL);

	if (r == 0)
		bson_destroy(&found);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return r == 0;
}

static void
test_txn_chain(void)
{
	char *dir = tt_tmpdir("oplog-chain");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	terr_t err = TERR_INIT;
	bool applied = true;
	static const int a[] = {1, 2}, b[] = {3}, cc[] = {4, 5}, d[] = {6}, f[] = {7};

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	TT_EQ_INT(apply_at(op, st, s, "c", "shop.$cmd", "{\"create\": \"items\"}", NULL, 1, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);

	/* two partial entries: held, nothing applied nor logged */
	TT_EQ_INT(apply_txn(op, st, s, a, 2, true, -1, 2, 0, &applied, &err), 0);
	TT_ASSERT(!applied);
	TT_EQ_INT(apply_txn(op, st, s, b, 1, true, -1, 3, 2, &applied, &err), 0);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 2);
	TT_EQ_INT(count_docs(s, c), 0);
	TT_ASSERT(!logged(op, s, 2) && !logged(op, s, 3));
	/* the commit entry: all of it, every entry logged */
	TT_EQ_INT(apply_txn(op, st, s, cc, 2, false, 5, 4, 3, &applied, &err), 0);
	TT_ASSERT(applied);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 0);
	TT_EQ_INT(count_docs(s, c), 5);
	TT_ASSERT(logged(op, s, 2) && logged(op, s, 3) && logged(op, s, 4));
	/* replayed (a restart): every entry is here, skipped */
	TT_EQ_INT(apply_txn(op, st, s, a, 2, true, -1, 2, 0, &applied, &err), 0);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 0);
	TT_EQ_INT(apply_txn(op, st, s, cc, 2, false, 5, 4, 3, &applied, &err), 0);
	TT_ASSERT(!applied);
	TT_EQ_INT(count_docs(s, c), 5);

	/* a commit whose link is missing (prevOpTime (100, 6), held (100, 5)) */
	TT_EQ_INT(apply_txn(op, st, s, d, 1, true, -1, 5, 4, &applied, &err), 0);
	TT_EQ_INT(apply_txn(op, st, s, f, 1, false, 2, 7, 6, &applied, &err), -1);
	TT_EQ_INT(err.code, 238);
	terr_clear(&err);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 0);
	TT_EQ_INT(count_docs(s, c), 5);
	TT_ASSERT(!logged(op, s, 5) && !logged(op, s, 7));
	/* a wrong count */
	TT_EQ_INT(apply_txn(op, st, s, d, 1, true, -1, 8, 0, &applied, &err), 0);
	TT_EQ_INT(apply_txn(op, st, s, f, 1, false, 3, 9, 8, &applied, &err), -1);
	TT_EQ_INT(err.code, 238);
	terr_clear(&err);
	TT_EQ_INT(count_docs(s, c), 5);
	/* a commit with nothing held */
	TT_EQ_INT(apply_txn(op, st, s, f, 1, false, 1, 10, 9, &applied, &err), -1);
	terr_clear(&err);
	/* a chain whose commit never comes: dropped at the next entry */
	TT_EQ_INT(apply_txn(op, st, s, d, 1, true, -1, 11, 0, &applied, &err), 0);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 1);
	TT_EQ_INT(apply_at(op, st, s, "i", "shop.items", "{\"_id\": 70}", NULL, 12, &err), 0);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 0);
	TT_EQ_INT(count_docs(s, c), 6);
	TT_ASSERT(!logged(op, s, 11) && logged(op, s, 12));
	/* a new chain after a held one that never committed starts over */
	TT_EQ_INT(apply_txn(op, st, s, d, 1, true, -1, 13, 0, &applied, &err), 0);
	TT_EQ_INT(apply_txn(op, st, s, f, 1, true, -1, 14, 0, &applied, &err), 0);
	TT_EQ_INT(repl_oplog_apply_chain_held(), 1);
	TT_EQ_INT(apply_txn(op, st, s, cc, 0, false, 1, 15, 14, &applied, &err), 0);
	TT_EQ_INT(count_docs(s, c), 7);   /* 7, not 6 */
	repl_oplog_apply_chain_reset();
	storage_coll_release(c);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* A retryable write's CRUD entry {lsid: {id: uuid[0] = who}, txnNumber:
 * num, op, ns: shop.items, o: {_id: id}, ts: (100, inc), t: 1, wall}. */
static void
crud_entry(bson_t *e, const char *opname, uint8_t who, int64_t num, int id, uint32_t inc)
{
	uint8_t uuid[16] = {0};
	bson_t lsid, o;

	uuid[0] = who;
	bson_init(e);
	BSON_APPEND_DOCUMENT_BEGIN(e, "lsid", &lsid);
	bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_document_end(e, &lsid);
	BSON_APPEND_INT64(e, "txnNumber", num);
	BSON_APPEND_UTF8(e, "op", opname);
	BSON_APPEND_UTF8(e, "ns", "shop.items");
	BSON_APPEND_DOCUMENT_BEGIN(e, "o", &o);
	BSON_APPEND_INT32(&o, "_id", id);
	bson_append_document_end(e, &o);
	BSON_APPEND_TIMESTAMP(e, "ts", 100, inc);
	BSON_APPEND_INT64(e, "t", 1);
	BSON_APPEND_INT64(e, "v", 2);
	BSON_APPEND_DATE_TIME(e, "wall", 100000);
}

/* The inc of config.transactions' row of session who's lastWriteOpTime.ts,
 * 0: no row. */
static uint32_t
row_inc_of(storage_t *st, storage_session_t *s, const uint8_t *uuid)
{
	storage_coll_t *c = NULL;
	bson_t key = BSON_INITIALIZER, lsid, doc;
	bson_iter_t it, sub;
	recid_t rid;
	uint32_t secs = 0, inc = 0;

	BSON_APPEND_DOCUMENT_BEGIN(&key, "_id", &lsid);
	bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_document_end(&key, &lsid);
	bson_iter_init_find(&it, &key, "_id");
	if (storage_coll_get(st, "config", "transactions", &c, NULL) == 0 && storage_txn_begin(s, NULL) == 0) {
		if (storage_doc_find_id(s, c, bson_iter_value(&it), &rid, &doc, NULL) == 0 &&
		    bson_iter_init_find(&sub, &doc, "lastWriteOpTime") && BSON_ITER_HOLDS_DOCUMENT(&sub) &&
		    bson_iter_recurse(&sub, &it) && bson_iter_find(&it, "ts"))
			bson_iter_timestamp(&it, &secs, &inc);
		storage_txn_rollback(s);
	}
	storage_coll_release(c);
	bson_destroy(&key);
	return inc;
}

static uint32_t
row_inc(storage_t *st, storage_session_t *s, uint8_t who)
{
	uint8_t uuid[16] = {0};

	uuid[0] = who;
	return row_inc_of(st, s, uuid);
}

static void
test_session_defer(void)
{
	char *dir = tt_tmpdir("oplog-session");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	terr_t err = TERR_INIT;
	bool applied = false;
	bson_t a, b, other_num, other_lsid, upd, noop, bare;
	static const int ids[] = {90};

	crud_entry(&a, "i", 1, 5, 1, 2);
	crud_entry(&b, "i", 1, 5, 2, 3);
	crud_entry(&other_num, "i", 1, 6, 3, 4);
	crud_entry(&other_lsid, "i", 2, 5, 4, 5);
	crud_entry(&upd, "d", 1, 5, 9, 6);
	crud_entry(&noop, "n", 1, 5, 9, 7);
	bson_init(&bare);
	BSON_APPEND_UTF8(&bare, "op", "i");
	/* which entries supersede a's row */
	TT_ASSERT(repl_oplog_apply_same_session(&a, &b));
	TT_ASSERT(repl_oplog_apply_same_session(&a, &upd));   /* any CRUD op of the same write */
	TT_ASSERT(!repl_oplog_apply_same_session(&a, &other_num));
	TT_ASSERT(!repl_oplog_apply_same_session(&a, &other_lsid));
	TT_ASSERT(!repl_oplog_apply_same_session(&a, &noop));
	TT_ASSERT(!repl_oplog_apply_same_session(&noop, &a));
	TT_ASSERT(!repl_oplog_apply_same_session(&a, &bare));
	TT_ASSERT(!repl_oplog_apply_same_session(&bare, &bare));

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	TT_EQ_INT(apply_at(op, st, s, "c", "shop.$cmd", "{\"create\": \"items\"}", NULL, 1, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);

	/* deferred: the document and its oplog entry, no row */
	repl_oplog_apply_defer_session_row();
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &a, NULL, false, &applied, &err), 0);
	TT_ASSERT(applied);
	TT_EQ_INT(count_docs(s, c), 1);
	TT_ASSERT(logged(op, s, 2));
	TT_EQ_INT(row_inc(st, s, 1), 0);
	/* the next entry writes the row (once only: no defer left) */
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &b, NULL, false, &applied, &err), 0);
	TT_EQ_INT(count_docs(s, c), 2);
	TT_EQ_INT(row_inc(st, s, 1), 3);
	/* a deferral consumed by an entry already here leaves none behind */
	repl_oplog_apply_defer_session_row();
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &a, NULL, false, &applied, &err), 0);
	TT_ASSERT(!applied);
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &other_num, NULL, false, &applied, &err), 0);
	TT_EQ_INT(row_inc(st, s, 1), 4);
	/* a transaction's entry (applyOps) writes its row whatever was asked */
	repl_oplog_apply_defer_session_row();
	TT_EQ_INT(apply_txn(op, st, s, ids, 1, false, -1, 8, 0, &applied, &err), 0);
	TT_ASSERT(applied);
	{
		static const uint8_t txn_uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
		TT_EQ_INT(row_inc_of(st, s, txn_uuid), 8);
	}
	TT_EQ_INT(row_inc(st, s, 1), 4);
	storage_coll_release(c);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
	bson_destroy(&a);
	bson_destroy(&b);
	bson_destroy(&other_num);
	bson_destroy(&other_lsid);
	bson_destroy(&upd);
	bson_destroy(&noop);
	bson_destroy(&bare);
}

/* A plain CRUD entry {op, ns: shop.items, o[, o2], ts: (100, inc), t: 1,
 * v, wall} into e (initialised here). */
static void
plain_entry(bson_t *e, const char *opname, const char *o, const char *o2, uint32_t inc)
{
	bson_t *ob = tt_json(o), *o2b = o2 != NULL ? tt_json(o2) : NULL;

	bson_init(e);
	BSON_APPEND_UTF8(e, "op", opname);
	BSON_APPEND_UTF8(e, "ns", opname[0] == 'n' ? "" : "shop.items");
	BSON_APPEND_DOCUMENT(e, "o", ob);
	if (o2b != NULL)
		BSON_APPEND_DOCUMENT(e, "o2", o2b);
	BSON_APPEND_TIMESTAMP(e, "ts", 100, inc);
	BSON_APPEND_INT64(e, "t", 1);
	BSON_APPEND_INT64(e, "v", 2);
	BSON_APPEND_DATE_TIME(e, "wall", 100000);
	bson_destroy(ob);
	if (o2b != NULL)
		bson_destroy(o2b);
}

/* What a reader at (100, inc) sees: the number of documents, document 1's
 * x (-1: missing, 0: no x), whether the oplog holds (100, at). */
static void
read_at(storage_t *st, storage_session_t *s, repl_oplog_t *op, uint32_t inc, int *count, int *x1, uint32_t at,
        bool *has)
{
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	recid_t rid;
	bson_t d, found;
	bson_iter_t it;

	*count = 0;
	*x1 = -1;
	TT_EQ_INT(storage_coll_get(st, "shop", "items", &c, NULL), 0);
	TT_EQ_INT(storage_txn_begin_at(s, REPL_TS(100, inc), NULL), 0);
	TT_EQ_INT(storage_scan_open(s, c, false, &cur, NULL), 0);
	while (storage_cursor_next(cur, &rid, &d, NULL, NULL, NULL) == 1) {
		(*count)++;
		if (bson_iter_init_find(&it, &d, "_id") && bson_iter_as_int64(&it) == 1)
			*x1 = bson_iter_init_find(&it, &d, "x") ? (int)bson_iter_as_int64(&it) : 0;
	}
	storage_cursor_close(cur);
	*has = repl_oplog_find(op, s, REPL_TS(100, at), &found, NULL) == 0;
	if (*has)
		bson_destroy(&found);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	storage_coll_release(c);
}

static void
test_apply_run(void)
{
	char *dir = tt_tmpdir("oplog-run");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	terr_t err = TERR_INIT;
	bson_t run[8], bad[3], ddl, txn, views;
	bool applied[8], has;
	int done = -1, count, x1;
	/* what a reader at (100, inc) must see, inc 1..9: documents, x of _id 1,
	 * and the session row's lastWriteOpTime inc */
	static const int want_count[] = {0, 0, 1, 2, 2, 1, 1, 2, 3, 3};
	static const int want_x1[] = {-1, -1, 0, 0, 5, 5, 5, 5, 5, 7};
	static const uint32_t want_row[] = {0, 0, 0, 0, 0, 0, 0, 0, 8, 8};

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	repl_oplog_pin_oldest(op, REPL_TS(100, 1));   /* reads at every ts of the run below */
	TT_EQ_INT(apply_at(op, st, s, "c", "shop.$cmd", "{\"create\": \"items\"}", NULL, 1, &err), 0);

	/* which entries may be in a run */
	plain_entry(&ddl, "c", "{\"create\": \"other\"}", NULL, 50);
	plain_entry(&views, "i", "{\"_id\": \"shop.v\", \"viewOn\": \"items\", \"pipeline\": []}", NULL, 51);
	bson_destroy(&views);
	bson_init(&views);
	BSON_APPEND_UTF8(&views, "op", "i");
	BSON_APPEND_UTF8(&views, "ns", "shop.system.views");
	plain_entry(&txn, "c", "{\"applyOps\": []}", NULL, 52);
	TT_ASSERT(!repl_oplog_apply_groupable(&ddl));
	TT_ASSERT(!repl_oplog_apply_groupable(&txn));
	TT_ASSERT(!repl_oplog_apply_groupable(&views));

	/* one run: insert 1, insert 2, replace 1 (x 5), delete 2, a no-op,
	 * two inserts of one retryable write (the first's session row left to
	 * the second), an update of 1 (x 7) */
	plain_entry(&run[0], "i", "{\"_id\": 1}", "{\"_id\": 1}", 2);
	plain_entry(&run[1], "i", "{\"_id\": 2}", "{\"_id\": 2}", 3);
	plain_entry(&run[2], "u", "{\"_id\": 1, \"x\": 5}", "{\"_id\": 1}", 4);
	plain_entry(&run[3], "d", "{\"_id\": 2}", NULL, 5);
	plain_entry(&run[4], "n", "{\"msg\": \"periodic noop\"}", NULL, 6);
	crud_entry(&run[5], "i", 1, 9, 3, 7);
	crud_entry(&run[6], "i", 1, 9, 4, 8);
	plain_entry(&run[7], "u", "{\"$v\": 2, \"diff\": {\"u\": {\"x\": 7}}}", "{\"_id\": 1}", 9);
	for (int i = 0; i < 8; i++)
		TT_ASSERT(repl_oplog_apply_groupable(&run[i]));
	TT_EQ_INT(repl_oplog_apply_run(op, st, s, run, 8, REPL_TS(100, 1), false, applied, &done, &err), 0);
	TT_EQ_INT(done, 8);
	for (int i = 0; i < 8; i++)
		TT_ASSERT(applied[i]);
	TT_ASSERT(!storage_txn_active(s));
	TT_ASSERT(repl_oplog_visible(op) >= REPL_TS(100, 9));
	TT_EQ_INT((int)(repl_oplog_last_optime(op).ts - REPL_TS(100, 0)), 9);
	/* every ts of the run read: exactly the entries up to it, each write
	 * with its own entry's ts, the oplog entry with it */
	for (uint32_t inc = 1; inc <= 9; inc++) {
		read_at(st, s, op, inc, &count, &x1, inc, &has);
		TT_EQ_INT(count, want_count[inc]);
		TT_EQ_INT(x1, want_x1[inc]);
		TT_ASSERT(has);
		if (inc < 9) {
			read_at(st, s, op, inc, &count, &x1, inc + 1, &has);
			TT_ASSERT(!has);   /* the next entry is not there yet */
		}
	}
	{
		/* the session row: none before the write's last entry, then at it */
		for (uint32_t inc = 7; inc <= 9; inc++) {
			storage_coll_t *c = NULL;
			bson_t key = BSON_INITIALIZER, lsid, doc;
			bson_iter_t it, sub;
			recid_t rid;
			uint8_t uuid[16] = {1};
			uint32_t secs = 0, got = 0;
			BSON_APPEND_DOCUMENT_BEGIN(&key, "_id", &lsid);
			bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
			bson_append_document_end(&key, &lsid);
			bson_iter_init_find(&it, &key, "_id");
			TT_EQ_INT(storage_coll_get(st, "config", "transactions", &c, NULL), 0);
			TT_EQ_INT(storage_txn_begin_at(s, REPL_TS(100, inc), NULL), 0);
			if (storage_doc_find_id(s, c, bson_iter_value(&it), &rid, &doc, NULL) == 0 &&
			    bson_iter_init_find(&sub, &doc, "lastWriteOpTime") && bson_iter_recurse(&sub, &it) &&
			    bson_iter_find(&it, "ts"))
				bson_iter_timestamp(&it, &secs, &got);
			storage_txn_rollback(s);
			storage_coll_release(c);
			bson_destroy(&key);
			TT_EQ_INT((int)got, (int)want_row[inc]);
		}
	}
	/* replayed (a restart: the set's log again): every entry is here */
	TT_EQ_INT(repl_oplog_apply_run(op, st, s, run, 8, REPL_TS(100, 9), false, applied, &done, &err), 0);
	TT_EQ_INT(done, 8);
	for (int i = 0; i < 8; i++)
		TT_ASSERT(!applied[i]);
	read_at(st, s, op, 9, &count, &x1, 9, &has);
	TT_EQ_INT(count, 3);
	TT_EQ_INT(x1, 7);

	/* a run whose second entry fails (an update of a missing document):
	 * the first is applied alone, the error is the second's, the third is
	 * not applied */
	plain_entry(&bad[0], "i", "{\"_id\": 10}", "{\"_id\": 10}", 20);
	plain_entry(&bad[1], "u", "{\"_id\": 11, \"x\": 1}", "{\"_id\": 11}", 21);
	plain_entry(&bad[2], "i", "{\"_id\": 12}", "{\"_id\": 12}", 22);
	TT_EQ_INT(repl_oplog_apply_run(op, st, s, bad, 3, REPL_TS(100, 9), false, applied, &done, &err), -1);
	TT_EQ_INT(err.code, 47);
	terr_clear(&err);
	TT_EQ_INT(done, 1);
	TT_ASSERT(applied[0]);
	TT_ASSERT(logged(op, s, 20) && !logged(op, s, 21) && !logged(op, s, 22));
	read_at(st, s, op, 22, &count, &x1, 22, &has);
	TT_EQ_INT(count, 4);

	/* an insert of an _id the data already holds (a copy ahead of the
	 * oplog): the run falls back to one entry at a time, which replaces it */
	for (int i = 0; i < 3; i++)
		bson_destroy(&bad[i]);
	plain_entry(&bad[0], "i", "{\"_id\": 31}", "{\"_id\": 31}", 30);
	plain_entry(&bad[1], "i", "{\"_id\": 1, \"x\": 9}", "{\"_id\": 1}", 31);
	plain_entry(&bad[2], "i", "{\"_id\": 32}", "{\"_id\": 32}", 32);
	TT_EQ_INT(repl_oplog_apply_run(op, st, s, bad, 3, REPL_TS(100, 20), false, applied, &done, &err), 0);
	TT_EQ_INT(done, 3);
	TT_ASSERT(applied[0] && applied[1] && applied[2]);
	read_at(st, s, op, 32, &count, &x1, 31, &has);
	TT_EQ_INT(count, 6);
	TT_EQ_INT(x1, 9);
	TT_ASSERT(has);
	read_at(st, s, op, 30, &count, &x1, 30, &has);
	TT_EQ_INT(count, 5);
	TT_EQ_INT(x1, 7);

	for (int i = 0; i < 8; i++)
		bson_destroy(&run[i]);
	for (int i = 0; i < 3; i++)
		bson_destroy(&bad[i]);
	bson_destroy(&ddl);
	bson_destroy(&txn);
	bson_destroy(&views);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
}

/* A retryable write's reply kept whole reaches a follower as a no-op entry
 * (repl/retryable.h): repl_oplog_noop_note writes it without the session
 * info of its storage session, and applying it writes the row of
 * config.tamga_retry_replies in the entry's transaction; a no-op of another
 * shape writes nothing. */
static void
test_kept_reply(void)
{
	char *dir = tt_tmpdir("oplog-kept");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	repl_clock_t *clk = repl_clock_new();
	repl_oplog_t *op = NULL;
	repl_oplog_options_t oo = {.size_mb = 1};
	repl_oplog_optime_t at = REPL_OPLOG_OPTIME_NULL;
	terr_t err = TERR_INIT;
	bool applied = false;
	uint8_t uuid[16] = {7};
	bson_t lsid = BSON_INITIALIZER, row = BSON_INITIALIZER, reply = BSON_INITIALIZER, o = BSON_INITIALIZER;
	bson_t o2 = BSON_INITIALIZER, entry, view, got, bad;
	bson_iter_t it;
	recid_t rid;

	bson_append_binary(&lsid, "id", 2, BSON_SUBTYPE_UUID, uuid, 16);
	BSON_APPEND_INT32(&reply, "n", 3);
	BSON_APPEND_DOCUMENT(&row, "_id", &lsid);
	BSON_APPEND_INT64(&row, "txnNum", 4);
	BSON_APPEND_UTF8(&row, "cmd", "insert");
	BSON_APPEND_DOCUMENT(&row, "reply", &reply);
	BSON_APPEND_UTF8(&o, "msg", "tamga retryable write reply");
	BSON_APPEND_DOCUMENT(&o2, "tamgaRetryReply", &row);

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(repl_oplog_open(st, clk, &oo, &op, NULL), 0);
	TT_EQ_INT(repl_oplog_create(op, REPL_OPLOG_CREATE_EMPTY, NULL, NULL, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &s, NULL), 0);
	/* outside a transaction: refused */
	TT_ASSERT(repl_oplog_noop_note(op, s, &o, &o2, NULL, &err) != 0);
	terr_clear(&err);
	/* the writer's side: no lsid/txnNumber although s carries them */
	TT_EQ_INT(repl_oplog_session_set(op, s, &lsid, 4, REPL_OPLOG_OPTIME_NULL, &err), 0);
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(repl_oplog_noop_note(op, s, &o, &o2, &at, &err), 0);
	TT_EQ_INT(storage_txn_commit(s, false, &err), 0);
	repl_oplog_session_clear(s);
	TT_ASSERT(at.ts != 0);
	TT_EQ_INT(repl_oplog_find(op, s, at.ts, &entry, &err), 0);
	TT_ASSERT(!bson_has_field(&entry, "lsid") && !bson_has_field(&entry, "txnNumber") &&
	          !bson_has_field(&entry, "stmtId") && !bson_has_field(&entry, "prevOpTime"));
	TT_ASSERT(repl_retryable_reply_of_entry(&entry, &view));
	TT_ASSERT(bson_equal(&view, &row));
	/* a rollback past that entry refetches the session's row of
	 * config.tamga_retry_replies from the sync source (none there: the row
	 * is deleted), as config.transactions' row of a write with session
	 * info: the note carries no lsid of its own, the row's _id is it */
	{
		bson_t plan, want = BSON_INITIALIZER, w0;
		BSON_APPEND_DOCUMENT_BEGIN(&want, "0", &w0);
		BSON_APPEND_UTF8(&w0, "ns", "config.tamga_retry_replies");
		BSON_APPEND_DOCUMENT(&w0, "_id", &lsid);
		BSON_APPEND_BOOL(&w0, "save", false);
		bson_append_document_end(&want, &w0);
		TT_EQ_INT(repl_rollback_plan(op, s, at.ts - 1, &plan, &err), 0);
		TT_ASSERT(bson_equal(&plan, &want));
		bson_destroy(&plan);
		/* not past it: nothing */
		TT_EQ_INT(repl_rollback_plan(op, s, at.ts, &plan, &err), 0);
		TT_EQ_INT(bson_count_keys(&plan), 0);
		bson_destroy(&plan);
		bson_destroy(&want);
	}
	/* the follower's side: a fresh member applies it (another ts) */
	bson_destroy(&entry);
	bson_init(&entry);
	BSON_APPEND_UTF8(&entry, "op", "n");
	BSON_APPEND_UTF8(&entry, "ns", "");
	BSON_APPEND_DOCUMENT(&entry, "o", &o);
	BSON_APPEND_DOCUMENT(&entry, "o2", &o2);
	BSON_APPEND_TIMESTAMP(&entry, "ts", 200, 1);
	BSON_APPEND_INT64(&entry, "t", 1);
	BSON_APPEND_INT64(&entry, "v", 2);
	BSON_APPEND_DATE_TIME(&entry, "wall", 100000);
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &entry, NULL, false, &applied, &err), 0);
	TT_ASSERT(applied);
	TT_EQ_INT(storage_coll_get(st, "config", "tamga_retry_replies", &c, NULL), 0);
	bson_iter_init_find(&it, &row, "_id");
	TT_EQ_INT(storage_txn_begin(s, &err), 0);
	TT_EQ_INT(storage_doc_find_id(s, c, bson_iter_value(&it), &rid, &got, &err), 0);
	TT_ASSERT(bson_equal(&got, &row));
	storage_txn_rollback(s);
	TT_EQ_INT(count_docs(s, c), 1);
	/* applied again (a replay): already here, nothing written */
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &entry, NULL, false, &applied, &err), 0);
	TT_ASSERT(!applied);
	/* a no-op without the row's shape is a plain no-op */
	bson_init(&bad);
	BSON_APPEND_UTF8(&bad, "op", "n");
	BSON_APPEND_UTF8(&bad, "ns", "");
	BSON_APPEND_DOCUMENT(&bad, "o", &o);
	BSON_APPEND_TIMESTAMP(&bad, "ts", 200, 2);
	BSON_APPEND_INT64(&bad, "t", 1);
	TT_ASSERT(!repl_retryable_reply_of_entry(&bad, &view));
	TT_EQ_INT(repl_oplog_apply_entry(op, st, s, &bad, NULL, false, &applied, &err), 0);
	TT_ASSERT(applied);
	TT_EQ_INT(count_docs(s, c), 1);
	storage_coll_release(c);
	storage_session_close(s);
	repl_oplog_close(op);
	storage_close(st);
	repl_clock_free(clk);
	tt_rmdir(dir);
	bson_free(dir);
	bson_destroy(&entry);
	bson_destroy(&bad);
	bson_destroy(&lsid);
	bson_destroy(&row);
	bson_destroy(&reply);
	bson_destroy(&o);
	bson_destroy(&o2);
}

/* A member becoming primary forgets what its sessions ran in an earlier
 * term (repl_retryable_invalidate, then repl_retryable_load from
 * config.transactions): a write rolled back since is run again by its
 * retry instead of being answered as executed. */
static void
test_retry_invalidate(void)
{
	char *dir = tt_tmpdir("retry-inval");
	storage_options_t so = {.create = true};
	storage_t *st = NULL;
	storage_session_t *ss = NULL;
	repl_sessions_t *reg;
	repl_session_t *s = NULL;
	repl_txn_kind_t kind;
	repl_oplog_stmt_t stmt = {0, REPL_TS(100, 1)};
	uint8_t id[16] = {9, 8, 7};
	terr_t err = TERR_INIT;
	uint64_t ts;

	TT_EQ_INT(storage_open(dir, &so, &st, NULL), 0);
	TT_EQ_INT(storage_session_open(st, &ss, NULL), 0);
	reg = repl_sessions_new(st);
	TT_EQ_INT(repl_session_checkout(reg, id, 0, &s, &err), 0);
	TT_EQ_INT(repl_txn_begin_or_continue(s, st, 5, false, false, "insert", 60, &kind, &err), 0);
	TT_EQ_INT(kind, REPL_TXN_KIND_RETRYABLE);
	repl_retryable_note_stmts(s, &stmt, 1, (repl_oplog_optime_t){REPL_TS(100, 1), 1});
	TT_ASSERT(repl_retryable_any_executed(s));
	repl_session_checkin(s);
	/* a checked-out session is left alone */
	TT_EQ_INT(repl_session_checkout(reg, id, 0, &s, &err), 0);
	repl_retryable_invalidate(reg);
	TT_ASSERT(repl_retryable_any_executed(s));
	repl_session_checkin(s);
	/* idle: forgotten, and no config.transactions row brings it back */
	repl_retryable_invalidate(reg);
	TT_EQ_INT(repl_retryable_load(reg, ss, &err), 0);
	TT_EQ_INT(repl_session_checkout(reg, id, 0, &s, &err), 0);
	TT_EQ_INT(repl_session_txn(s)->txn_number, -1);
	TT_EQ_INT(repl_txn_begin_or_continue(s, st, 5, false, false, "insert", 60, &kind, &err), 0);
	TT_EQ_INT(kind, REPL_TXN_KIND_RETRYABLE);
	TT_ASSERT(!repl_retryable_any_executed(s));
	TT_EQ_INT(repl_retryable_stmt_executed(s, NULL, ss, 0, &ts, &err), 0);
	repl_session_checkin(s);
	repl_sessions_free(reg);
	storage_session_close(ss);
	storage_close(st);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	TT_RUN(test_diff_cases);
	TT_RUN(test_diff_malformed);
	TT_RUN(test_diff_model);
	TT_RUN(test_peers);
	TT_RUN(test_rollback_oplog);
	TT_RUN(test_txn_chain);
	TT_RUN(test_session_defer);
	TT_RUN(test_apply_run);
	TT_RUN(test_kept_reply);
	TT_RUN(test_retry_invalidate);
	return tt_finish();
}
