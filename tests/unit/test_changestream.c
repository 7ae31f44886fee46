/*
 * test_changestream.c -- change streams (repl/changestream.h,
 * repl/cs_token.h): resume tokens byte for byte as mongod writes them (a
 * token from mongod's manual decodes and re-encodes to the same hex), their
 * order, malformed tokens; the events of every kind of write through an
 * embedded replica-set engine (shapes, updateDescription with truncated
 * arrays and disambiguated paths, a transaction's events at its commit,
 * drop + invalidate), the three levels, resumeAfter / startAfter /
 * startAtOperationTime, postBatchResumeToken, 286 and 280, the allowlist of
 * stages, the pushed-down $match, mongod's errors for bad specs, events past
 * 16 MB cut by $changeStreamSplitLargeEvent (and resumed from a fragment).
 */
#include "tt.h"
#include "tt_embedded.h"
#include "common/mem.h"
#include "repl/changestream.h"
#include "repl/cs_token.h"
#include "repl/oplog_diff.h"
#include "repl/preimage.h"

/* ---- tokens -------------------------------------------------------------- */

/* A resume token of a mongod 6.0 insert (version 1), from its manual. */
static const char *MONGOD_TOKEN =
    "82635019A0000000012B022C0100296E5A1004AB1154ACACD849A48C61756D70D3B21F463C6F7065726174696F6E5479706500"
    "3C696E736572740046646F63756D656E744B65790046645F69640064635019A078BE67426D7CF4D2000004";

static void
test_token_mongod_bytes(void)
{
	bson_t *doc = BCON_NEW("_data", BCON_UTF8(MONGOD_TOKEN));
	cs_token_t t, e;
	char *hex = NULL, *again;
	terr_t err = TERR_INIT;
	bson_oid_t oid;
	bson_t *eid;
	static const uint8_t uuid[16] = {0xAB, 0x11, 0x54, 0xAC, 0xAC, 0xD8, 0x49, 0xA4, 0x8C, 0x61, 0x75, 0x6D,
		0x70, 0xD3, 0xB2, 0x1F};

	TT_EQ_INT(cs_token_parse(doc, &t, &hex, &err), 0);
	TT_EQ_INT(t.version, 1);
	TT_EQ_INT(t.type, CS_TOKEN_EVENT);
	TT_EQ_INT(t.txn_op_index, 0);
	TT_ASSERT(!t.from_invalidate);
	TT_ASSERT(t.has_uuid && memcmp(t.uuid, uuid, 16) == 0);
	TT_ASSERT(t.has_event_id);
	TT_ASSERT(t.ts == (((repl_ts_t)0x635019A0 << 32) | 1));
	TT_EQ_STR(hex, MONGOD_TOKEN);
	/* the same values encode to mongod's bytes */
	bson_oid_init_from_string(&oid, "635019a078be67426d7cf4d2");
	eid = BCON_NEW("operationType", BCON_UTF8("insert"), "documentKey", "{", "_id", BCON_OID(&oid), "}");
	memset(&e, 0, sizeof(e));
	e.ts = t.ts;
	e.version = 1;
	e.type = CS_TOKEN_EVENT;
	e.has_uuid = true;
	memcpy(e.uuid, uuid, 16);
	e.event_id = eid;
	e.fragment = -1;
	again = cs_token_hex(&e);
	TT_EQ_STR(again, MONGOD_TOKEN);
	bson_free(again);
	bson_free(hex);
	bson_destroy(eid);
	bson_destroy(doc);
}

static void
test_token_order(void)
{
	bson_t *k1 = BCON_NEW("operationType", BCON_UTF8("insert"), "documentKey", "{", "_id", BCON_INT32(1), "}");
	bson_t *k2 = BCON_NEW("operationType", BCON_UTF8("insert"), "documentKey", "{", "_id", BCON_INT32(2), "}");
	cs_token_t a = {.ts = ((repl_ts_t)100 << 32) | 1, .version = 2, .type = CS_TOKEN_EVENT, .event_id = k2,
	                .fragment = -1};
	cs_token_t b = a, c = a, d = a;
	char *ha, *hb, *hc, *hd, *hw, *hw2;

	b.txn_op_index = 1;
	b.event_id = k1;          /* a later txnOpIndex wins over the key */
	c.ts = ((repl_ts_t)100 << 32) | 2;
	d.from_invalidate = true;
	ha = cs_token_hex(&a);
	hb = cs_token_hex(&b);
	hc = cs_token_hex(&c);
	hd = cs_token_hex(&d);
	hw = cs_token_hwm_hex(a.ts);
	hw2 = cs_token_hwm_hex(c.ts);
	TT_ASSERT(strcmp(hw, ha) < 0);      /* a high-water mark at ts precedes the events at ts */
	TT_ASSERT(strcmp(ha, hd) < 0);      /* the invalidate follows its event */
	TT_ASSERT(strcmp(ha, hb) < 0);
	TT_ASSERT(strcmp(hb, hw2) < 0);
	TT_ASSERT(strcmp(hw2, hc) < 0);
	TT_EQ_STR(hw, "8200000064000000012B0429296E1404");
	bson_free(ha);
	bson_free(hb);
	bson_free(hc);
	bson_free(hd);
	bson_free(hw);
	bson_free(hw2);
	bson_destroy(k1);
	bson_destroy(k2);
}

/* _typeBits as mongod writes them: tokens of real mongod events whose
 * documentKey holds doubles (a driver's JavaScript numbers). */
static void
test_token_type_bits(void)
{
	static const struct {
		uint32_t t, i;
		const char *uuid, *eid, *data, *tb;
	} cases[] = {
		{0x647A41A6, 1, "2409C0859BCF45ABBE0E0BD72AB40403",
		 "{\"_id\": {\"foo\": 1.0, \"bar\": 2.0}}",
		 "82647A41A6000000012B022C0100296E5A10042409C0859BCF45ABBE0E0BD72AB4040346465F696400461E666F6F002B021E626172002B04000004",
		 "824001"},
		{0x63ED0F8C, 0x62, "63B6F177E0FD4903B80618784767A672", "{\"_id\": 632368455327866.0}",
		 "8263ED0F8C000000622B022C0100296E5A100463B6F177E0FD4903B80618784767A672461E5F69640031047E45824B40F40004",
		 "40"},
		/* int32s only: no _typeBits */
		{0x63ED0F8C, 0x62, "63B6F177E0FD4903B80618784767A672", "{\"_id\": 5}", NULL, NULL},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		bson_t *eid = tt_json(cases[c].eid), out = BSON_INITIALIZER;
		cs_token_t t = {.ts = ((repl_ts_t)cases[c].t << 32) | cases[c].i, .version = 1, .type = CS_TOKEN_EVENT,
		                .has_uuid = true, .event_id = eid, .fragment = -1};
		bson_iter_t it;
		char *hex;

		for (int k = 0; k < 16; k++) {
			unsigned v;
			sscanf(cases[c].uuid + 2 * k, "%2x", &v);
			t.uuid[k] = (uint8_t)v;
		}
		hex = cs_token_append_id(&out, "_id", &t);
		if (cases[c].data != NULL)
			TT_EQ_STR(hex, cases[c].data);
		if (cases[c].tb == NULL) {
			TT_ASSERT(!bson_iter_init_find(&it, &out, "_id._typeBits") &&
			    !(bson_iter_init(&it, &out) && bson_iter_find_descendant(&it, "_id._typeBits", &it)));
		} else {
			bson_iter_t f;
			bson_subtype_t st;
			uint32_t len;
			const uint8_t *d;
			char got[64] = "";
			TT_ASSERT(bson_iter_init(&it, &out) && bson_iter_find_descendant(&it, "_id._typeBits", &f));
			bson_iter_binary(&f, &st, &len, &d);
			TT_EQ_INT(st, BSON_SUBTYPE_BINARY);
			for (uint32_t k = 0; k < len && k < 30; k++)
				snprintf(got + 2 * k, 3, "%02X", d[k]);
			TT_EQ_STR(got, cases[c].tb);
		}
		bson_free(hex);
		bson_destroy(&out);
		bson_destroy(eid);
	}
}

static void
bad_token(const char *json, int code)
{
	bson_t *d = tt_json(json);
	cs_token_t t;
	char *hex = NULL;
	terr_t err = TERR_INIT;

	if (cs_token_parse(d, &t, &hex, &err) != -1 || err.code != code)
		TT_FAIL_("token %s: code %d (%s), want %d", json, err.code, err.msg ? err.msg : "", code);
	terr_clear(&err);
	bson_free(hex);
	bson_destroy(d);
}

static void
test_token_malformed(void)
{
	bad_token("{\"_data\": 1}", 40647);
	bad_token("{}", 40647);
	bad_token("{\"_data\": \"abc\"}", 9);
	bad_token("{\"_data\": \"zz\"}", 9);
	bad_token("{\"_data\": \"\"}", 40649);
	bad_token("{\"_data\": \"826B0F52FB00000005\"}", 50796);
	/* version 3 */
	bad_token("{\"_data\": \"826B0F52FB000000052B0629296E1404\"}", 50795);
	/* a string where the version goes */
	bad_token("{\"_data\": \"826B0F52FB000000053C6100\"}", 50854);
	/* token type 5 */
	bad_token("{\"_data\": \"826B0F52FB000000052B042B0A296E1404\"}", 51057);
	/* an unknown type byte */
	bad_token("{\"_data\": \"07\"}", 50811);
	/* a high-water mark with an eventIdentifier */
	bad_token("{\"_data\": \"826B0F52FB000000052B0429296E14463C61003C62000004\"}", 6189504);
	bad_token("{\"_data\": \"826B0F52FB000000052B0429296E1404\", \"_typeBits\": 1}", 40648);
}

/* ---- events through an engine -------------------------------------------- */

static tamga_t *db;
static char *dir;

static bson_t *
run(const char *dbname, const char *cmd, int *rc)
{
	return tt_run_sq(db, dbname, cmd, rc);
}

/* Open a stream: the cursor id (0 on error, with *code). */
static int64_t
open_stream(const char *dbname, const char *cmd, int *code)
{
	int rc;
	bson_t *r = run(dbname, cmd, &rc);
	int64_t id = rc == 0 ? tt_get_i64(r, "cursor.id") : 0;

	*code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	if (rc == 0 && !bson_has_field(r, "cursor.postBatchResumeToken._data"))
		TT_FAIL_("%s", "first batch without postBatchResumeToken");
	tt_free_reply(r);
	return id;
}

/* getMore: the nextBatch as relaxed JSON of each event with _id, clusterTime
 * and wallTime and collectionUUID replaced by their presence (owned). */
static char *
more(const char *dbname, const char *coll, int64_t id, bson_t *pbrt_out)
{
	char cmd[256];
	int rc;
	bson_t *r, arr;
	bson_iter_t f, it;
	bson_string_t *s = bson_string_new("[");
	bool first = true;

	snprintf(cmd, sizeof(cmd), "{'getMore': {'$numberLong': '%lld'}, 'collection': '%s', 'maxTimeMS': 200}",
	    (long long)id, coll);
	r = run(dbname, cmd, &rc);
	if (rc != 0) {
		bson_string_append_printf(s, "error %d", (int)tt_get_i64(r, "code"));
		tt_free_reply(r);
		return bson_string_free(s, false);
	}
	if (pbrt_out != NULL && tt_get(r, "cursor.postBatchResumeToken", &f) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
		const uint8_t *d;
		uint32_t l;
		bson_t t;
		bson_iter_document(&f, &l, &d);
		bson_init_static(&t, d, l);
		bson_reinit(pbrt_out);
		bson_concat(pbrt_out, &t);
	}
	if (tt_get(r, "cursor.nextBatch", &f) && BSON_ITER_HOLDS_ARRAY(&f)) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_array(&f, &l, &d);
		bson_init_static(&arr, d, l);
		bson_iter_init(&it, &arr);
		while (bson_iter_next(&it)) {
			bson_t ev, out = BSON_INITIALIZER;
			bson_iter_t e;
			char *j;
			bson_iter_document(&it, &l, &d);
			bson_init_static(&ev, d, l);
			bson_iter_init(&e, &ev);
			while (bson_iter_next(&e)) {
				const char *k = bson_iter_key(&e);
				if (strcmp(k, "_id") == 0 || strcmp(k, "clusterTime") == 0 || strcmp(k, "wallTime") == 0 ||
				    strcmp(k, "collectionUUID") == 0 || strcmp(k, "lsid") == 0)
					bson_append_bool(&out, k, -1, true);
				else
					bson_append_iter(&out, k, -1, &e);
			}
			j = bson_as_relaxed_extended_json(&out, NULL);
			bson_string_append_printf(s, "%s%s", first ? "" : ", ", j);
			first = false;
			bson_free(j);
			bson_destroy(&out);
		}
	}
	if (tt_get_i64(r, "cursor.id") == 0)
		bson_string_append(s, first ? "closed" : ", closed");
	bson_string_append(s, "]");
	tt_free_reply(r);
	return bson_string_free(s, false);
}

static void
ok(const char *dbname, const char *cmd)
{
	int rc;
	bson_t *r = run(dbname, cmd, &rc);

	if (rc != 0)
		TT_FAIL_("%s: %s", cmd, tt_get_str(r, "errmsg"));
	tt_free_reply(r);
}

static void
expect_more(const char *dbname, const char *coll, int64_t id, const char *want)
{
	char *got = more(dbname, coll, id, NULL);

	if (strcmp(got, want) != 0)
		TT_FAIL_("events\n  got  %s\n  want %s", got, want);
	bson_free(got);
}

static void
test_crud_events(void)
{
	int code;
	int64_t id;

	ok("cs", "{'create': 'c'}");
	id = open_stream("cs", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", &code);
	TT_ASSERT(id != 0);
	expect_more("cs", "c", id, "[]");
	ok("cs", "{'insert': 'c', 'documents': [{'_id': 1, 'a': 1, 'arr': [1, 2, 3], 'o': {'1': 0}}]}");
	ok("cs", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'b': 2, 'o.1': 5}, '$unset': {'a': 1}, '$pop': {'arr': 1}}}]}");
	/* a pipeline update is diffed by size: the shrunk array is a truncation */
	ok("cs", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': [{'$set': {'arr': {'$slice': ['$arr', 1]}}}]}]}");
	ok("cs", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'x': 1}}]}");
	ok("cs", "{'delete': 'c', 'deletes': [{'q': {'_id': 1}, 'limit': 1}]}");
	expect_more("cs", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"insert\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"fullDocument\" : { \"_id\" : 1, \"a\" : 1, \"arr\" : [ 1, 2, 3 ], \"o\" : { \"1\" : 0 } }, "
	    "\"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" }, \"documentKey\" : { \"_id\" : 1 } }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" }, \"documentKey\" : { \"_id\" : 1 }, "
	    "\"updateDescription\" : { \"updatedFields\" : { \"arr\" : [ 1, 2 ], \"b\" : 2, \"o.1\" : 5 }, "
	    "\"removedFields\" : [ \"a\" ], \"truncatedArrays\" : [  ] } }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" }, \"documentKey\" : { \"_id\" : 1 }, "
	    "\"updateDescription\" : { \"updatedFields\" : {  }, \"removedFields\" : [  ], "
	    "\"truncatedArrays\" : [ { \"field\" : \"arr\", \"newSize\" : 1 } ] } }, "
	    "{ \"_id\" : true, \"operationType\" : \"replace\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"fullDocument\" : { \"_id\" : 1, \"x\" : 1 }, \"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" }, "
	    "\"documentKey\" : { \"_id\" : 1 } }, "
	    "{ \"_id\" : true, \"operationType\" : \"delete\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" }, \"documentKey\" : { \"_id\" : 1 } }]");
	/* a drop ends a collection's stream: drop, invalidate, cursor closed */
	ok("cs", "{'drop': 'c'}");
	expect_more("cs", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"drop\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"ns\" : { \"db\" : \"cs\", \"coll\" : \"c\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"invalidate\", \"clusterTime\" : true, \"wallTime\" : true }, closed]");
}

static void
test_expanded_and_levels(void)
{
	int code;
	int64_t dbid, cl, cid;

	dbid = open_stream("cs2", "{'aggregate': 1, 'pipeline': [{'$changeStream': {'showExpandedEvents': true}}, "
	    "{'$project': {'operationType': 1, 'ns': 1, 'operationDescription': 1, 'nsType': 1, 'updateDescription': 1}}], 'cursor': {}}", &code);
	TT_ASSERT(dbid != 0);
	cl = open_stream("admin", "{'aggregate': 1, 'pipeline': [{'$changeStream': {'allChangesForCluster': true}}, "
	    "{'$match': {'operationType': 'insert'}}, {'$project': {'ns': 1}}], 'cursor': {}}", &code);
	TT_ASSERT(cl != 0);
	ok("cs2", "{'create': 'd'}");
	ok("cs2", "{'createIndexes': 'd', 'indexes': [{'key': {'k': 1}, 'name': 'k_1'}]}");
	ok("cs2", "{'insert': 'd', 'documents': [{'_id': 1, 'a': {'0': [1, 2, 3, 4, 5, 6, 7, 8]}}]}");
	ok("cs2", "{'update': 'd', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'a.0.1': 7}}}]}");
	ok("cs3", "{'insert': 'e', 'documents': [{'_id': 2}]}");
	ok("cs2", "{'dropIndexes': 'd', 'index': 'k_1'}");
	ok("admin", "{'renameCollection': 'cs2.d', 'to': 'cs2.f'}");
	ok("cs2", "{'dropDatabase': 1}");
	expect_more("cs2", "$cmd.aggregate", dbid,
	    "[{ \"_id\" : true, \"operationType\" : \"create\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" }, "
	    "\"operationDescription\" : { \"idIndex\" : { \"v\" : 2, \"key\" : { \"_id\" : 1 }, \"name\" : \"_id_\" } }, \"nsType\" : \"collection\" }, "
	    "{ \"_id\" : true, \"operationType\" : \"createIndexes\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" }, "
	    "\"operationDescription\" : { \"indexes\" : [ { \"v\" : 2, \"key\" : { \"k\" : 1 }, \"name\" : \"k_1\" } ] } }, "
	    "{ \"_id\" : true, \"operationType\" : \"insert\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" }, "
	    "\"updateDescription\" : { \"updatedFields\" : { \"a.0.1\" : 7 }, \"removedFields\" : [  ], \"truncatedArrays\" : [  ], "
	    "\"disambiguatedPaths\" : { \"a.0.1\" : [ \"a\", \"0\", 1 ] } } }, "
	    "{ \"_id\" : true, \"operationType\" : \"dropIndexes\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" }, "
	    "\"operationDescription\" : { \"indexes\" : [ { \"v\" : 2, \"key\" : { \"k\" : 1 }, \"name\" : \"k_1\" } ] } }, "
	    "{ \"_id\" : true, \"operationType\" : \"rename\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" }, "
	    "\"operationDescription\" : { \"to\" : { \"db\" : \"cs2\", \"coll\" : \"f\" } } }, "
	    "{ \"_id\" : true, \"operationType\" : \"drop\", \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"f\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"dropDatabase\", \"ns\" : { \"db\" : \"cs2\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"invalidate\" }, closed]");
	/* the cluster: every database's inserts (a $match on operationType is
	 * applied while reading) */
	expect_more("admin", "$cmd.aggregate", cl,
	    "[{ \"_id\" : true, \"ns\" : { \"db\" : \"cs2\", \"coll\" : \"d\" } }, "
	    "{ \"_id\" : true, \"ns\" : { \"db\" : \"cs3\", \"coll\" : \"e\" } }]");
	/* a collection stream sees its collection only */
	cid = open_stream("cs3", "{'aggregate': 'e', 'pipeline': [{'$changeStream': {}}, {'$project': {'documentKey': 1}}], 'cursor': {}}", &code);
	ok("cs3", "{'insert': 'other', 'documents': [{'_id': 3}]}");
	ok("cs3", "{'insert': 'e', 'documents': [{'_id': 4}]}");
	expect_more("cs3", "e", cid, "[{ \"_id\" : true, \"documentKey\" : { \"_id\" : 4 } }]");
}

static void
test_resume(void)
{
	int code, rc;
	int64_t id, id2;
	bson_t pbrt = BSON_INITIALIZER;
	char *got, cmd[1024], tok1[512];
	bson_t *r;

	ok("rs", "{'create': 'c'}");
	id = open_stream("rs", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", &code);
	ok("rs", "{'insert': 'c', 'documents': [{'_id': 1}]}");
	got = more("rs", "c", id, &pbrt);
	bson_free(got);
	snprintf(tok1, sizeof(tok1), "%s", tt_get_str(&pbrt, "_data"));
	TT_ASSERT(strlen(tok1) > 20);
	ok("rs", "{'insert': 'c', 'documents': [{'_id': 2}, {'_id': 3}]}");
	/* an empty batch still carries a token, and it does not go back */
	got = more("rs", "c", id, &pbrt);
	bson_free(got);
	TT_ASSERT(strcmp(tt_get_str(&pbrt, "_data"), tok1) > 0);
	got = more("rs", "c", id, &pbrt);
	TT_EQ_STR(got, "[]");
	bson_free(got);
	/* resumeAfter the first insert: the two after it */
	snprintf(cmd, sizeof(cmd), "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '%s'}}}, "
	    "{'$project': {'documentKey': 1}}], 'cursor': {'batchSize': 1}}", tok1);
	r = run("rs", cmd, &rc);
	TT_EQ_INT(rc, 0);
	{
		/* batchSize 1: the first batch holds the next event already */
		char *t = tt_batch_text(r, rc, "none");
		TT_ASSERT(strstr(t, "\"documentKey\" : { \"_id\" : 2 }") != NULL);
		bson_free(t);
	}
	id2 = tt_get_i64(r, "cursor.id");
	tt_free_reply(r);
	got = more("rs", "c", id2, &pbrt);
	TT_ASSERT(strstr(got, "\"_id\" : 3") != NULL);
	bson_free(got);
	/* startAfter works the same */
	snprintf(cmd, sizeof(cmd), "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'startAfter': {'_data': '%s'}}}, "
	    "{'$project': {'documentKey': 1, '_id': 0}}], 'cursor': {'batchSize': 0}}", tok1);
	r = run("rs", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'startAfter': {'_data': '%s'}}}, "
	    "{'$project': {'documentKey': 1}}], 'cursor': {}}", tok1);
	r = run("rs", cmd, &rc);
	{
		char *t = tt_batch_text(r, rc, "none");
		TT_ASSERT(strstr(t, "\"_id\" : 1 }") == NULL && strstr(t, "\"_id\" : 2") != NULL &&
		    strstr(t, "\"_id\" : 3") != NULL);
		bson_free(t);
	}
	tt_free_reply(r);
	/* the token of another collection's stream: 280 once an event shows */
	ok("rs", "{'create': 'other'}");
	snprintf(cmd, sizeof(cmd), "{'aggregate': 'other', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '%s'}}}], 'cursor': {}}",
	    tok1);
	id2 = open_stream("rs", cmd, &code);
	ok("rs", "{'insert': 'other', 'documents': [{'_id': 9}]}");
	got = more("rs", "other", id2, NULL);
	TT_EQ_STR(got, "[error 280");
	bson_free(got);
	/* a point the oplog no longer holds: 286 */
	id2 = open_stream("rs", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'startAtOperationTime': {'$timestamp': {'t': 1, 'i': 1}}}}], 'cursor': {}}",
	    &code);
	TT_EQ_INT(code, 286);
	bson_destroy(&pbrt);
}

static void
test_transaction_events(void)
{
	int code, rc;
	int64_t id;
	bson_t *r;
	char *got;

	ok("tx", "{'create': 'c'}");
	id = open_stream("tx", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}, {'$project': {'documentKey': 1, 'txnNumber': 1}}], 'cursor': {}}", &code);
	r = run("tx", "{'insert': 'c', 'documents': [{'_id': 1}], 'lsid': {'id': {'$binary': {'base64': 'AAAAAAAAAAAAAAAAAAAAAA==', 'subType': '04'}}}, "
	    "'txnNumber': {'$numberLong': '1'}, 'startTransaction': true, 'autocommit': false}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	r = run("tx", "{'insert': 'c', 'documents': [{'_id': 2}], 'lsid': {'id': {'$binary': {'base64': 'AAAAAAAAAAAAAAAAAAAAAA==', 'subType': '04'}}}, "
	    "'txnNumber': {'$numberLong': '1'}, 'autocommit': false}", &rc);
	tt_free_reply(r);
	/* nothing before the commit */
	got = more("tx", "c", id, NULL);
	TT_EQ_STR(got, "[]");
	bson_free(got);
	r = run("admin", "{'commitTransaction': 1, 'lsid': {'id': {'$binary': {'base64': 'AAAAAAAAAAAAAAAAAAAAAA==', 'subType': '04'}}}, "
	    "'txnNumber': {'$numberLong': '1'}, 'autocommit': false}", &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	expect_more("tx", "c", id,
	    "[{ \"_id\" : true, \"documentKey\" : { \"_id\" : 1 }, \"txnNumber\" : 1 }, "
	    "{ \"_id\" : true, \"documentKey\" : { \"_id\" : 2 }, \"txnNumber\" : 1 }]");
}

static void
expect_code(const char *dbname, const char *cmd, int code)
{
	int rc;
	bson_t *r = run(dbname, cmd, &rc);

	if (rc == 0 || tt_get_i64(r, "code") != code)
		TT_FAIL_("%s: code %lld (%s), want %d", cmd, (long long)tt_get_i64(r, "code"), tt_get_str(r, "errmsg"),
		    code);
	tt_free_reply(r);
}

static void
test_bad_input(void)
{
	ok("bad", "{'create': 'c'}");
	ok("bad", "{'create': 'v', 'viewOn': 'c', 'pipeline': []}");
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'nope': 1}}], 'cursor': {}}", 40415);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': 1}], 'cursor': {}}", 50808);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'fullDocument': 'x'}}], 'cursor': {}}", 2);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'fullDocument': 1}}], 'cursor': {}}", 14);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '826B0F52FB000000052B0429296E1404'}, "
	    "'startAfter': {'_data': '826B0F52FB000000052B0429296E1404'}}}], 'cursor': {}}", 50865);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': 'xyz'}}}], 'cursor': {}}", 9);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '826B0F52FB000000052B0429296E1404'}, "
	    "'startAtOperationTime': {'$timestamp': {'t': 1, 'i': 1}}}}], 'cursor': {}}", 40674);
	expect_code("bad", "{'aggregate': 'system.js', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", 73);
	expect_code("admin", "{'aggregate': 1, 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", 73);
	expect_code("local", "{'aggregate': 1, 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", 73);
	expect_code("bad", "{'aggregate': 1, 'pipeline': [{'$changeStream': {'allChangesForCluster': true}}], 'cursor': {}}", 72);
	expect_code("bad", "{'aggregate': 'v', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", 166);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}, {'$group': {'_id': 1}}], 'cursor': {}}", 20);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}, {'$lookup': {'from': 'c', 'as': 'x', 'pipeline': []}}], 'cursor': {}}", 20);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$match': {}}, {'$changeStream': {}}], 'cursor': {}}", 40602);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$facet': {'a': [{'$changeStream': {}}]}}], 'cursor': {}}", 40600);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStreamSplitLargeEvent': {}}], 'cursor': {}}", 20);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$lookup': {'from': 'c', 'as': 'x', 'pipeline': [{'$changeStream': {}}]}}], 'cursor': {}}", 51047);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$unionWith': {'coll': 'c', 'pipeline': [{'$changeStream': {}}]}}], 'cursor': {}}", 51047);
	expect_code("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': "
	    "'826B0F52FB000000052B022C0100296F04'}}}], 'cursor': {}}", 260);
	/* allowed stages parse */
	ok("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}, {'$match': {'x': 1}}, {'$project': {'x': 1}}, "
	    "{'$addFields': {'y': 1}}, {'$set': {'z': 1}}, {'$unset': 'z'}, {'$replaceRoot': {'newRoot': '$$ROOT'}}, "
	    "{'$replaceWith': '$$ROOT'}, {'$redact': '$$KEEP'}, {'$changeStreamSplitLargeEvent': {}}], 'cursor': {}}");
	/* removing the token makes the stream fail with 280 at the event */
	{
		int code;
		int64_t id = open_stream("bad", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}, {'$project': {'_id': 0}}], 'cursor': {}}", &code);
		char *got;
		ok("bad", "{'insert': 'c', 'documents': [{'_id': 1}]}");
		got = more("bad", "c", id, NULL);
		TT_EQ_STR(got, "[error 280");
		bson_free(got);
	}
}

static void
test_raw_update_description(void)
{
	int code;
	int64_t id;

	ok("raw", "{'insert': 'c', 'documents': [{'_id': 1, 'n': 0}]}");
	id = open_stream("raw", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'showRawUpdateDescription': true}}, "
	    "{'$project': {'rawUpdateDescription': 1, 'updateDescription': 1}}], 'cursor': {}}", &code);
	ok("raw", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'n': 1}}}]}");
	expect_more("raw", "c", id,
	    "[{ \"_id\" : true, \"rawUpdateDescription\" : { \"$v\" : 2, \"diff\" : { \"u\" : { \"n\" : 1 } } } }]");
}

static void
test_modify_event(void)
{
	int code;
	int64_t id;

	ok("mod", "{'create': 'c'}");
	id = open_stream("mod", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'showExpandedEvents': true}}, "
	    "{'$project': {'operationType': 1, 'operationDescription': 1, 'stateBeforeChange': 1}}], 'cursor': {}}", &code);
	ok("mod", "{'collMod': 'c'}");
	ok("mod", "{'collMod': 'c', 'validator': {'a': {'$exists': true}}}");
	expect_more("mod", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"modify\", \"operationDescription\" : {  }, "
	    "\"stateBeforeChange\" : { \"collectionOptions\" : {  } } }, "
	    "{ \"_id\" : true, \"operationType\" : \"modify\", \"operationDescription\" : { \"validator\" : { \"a\" : { \"$exists\" : true } }, "
	    "\"validationLevel\" : \"strict\", \"validationAction\" : \"error\" }, \"stateBeforeChange\" : { \"collectionOptions\" : {  } } }]");
}

static void
test_update_lookup(void)
{
	int code;
	int64_t id;

	ok("ul", "{'insert': 'c', 'documents': [{'_id': 1, 'n': 0}]}");
	id = open_stream("ul", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'fullDocument': 'updateLookup', "
	    "'fullDocumentBeforeChange': 'whenAvailable'}}, {'$project': {'operationType': 1, 'fullDocument': 1, 'fullDocumentBeforeChange': 1}}], 'cursor': {}}", &code);
	ok("ul", "{'update': 'ul', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}]}");
	ok("ul", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}]}");
	ok("ul", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}]}");
	ok("ul", "{'delete': 'c', 'deletes': [{'q': {'_id': 1}, 'limit': 0}]}");
	/* updateLookup reads the document as it is when the event is read */
	expect_more("ul", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"update\", \"fullDocument\" : null, \"fullDocumentBeforeChange\" : null }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"fullDocument\" : null, \"fullDocumentBeforeChange\" : null }, "
	    "{ \"_id\" : true, \"operationType\" : \"delete\", \"fullDocumentBeforeChange\" : null }]");
	ok("ul", "{'insert': 'c', 'documents': [{'_id': 2, 'n': 0}]}");
	ok("ul", "{'update': 'c', 'updates': [{'q': {'_id': 2}, 'u': {'$inc': {'n': 5}}}]}");
	expect_more("ul", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"insert\", \"fullDocument\" : { \"_id\" : 2, \"n\" : 0 } }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"fullDocument\" : { \"_id\" : 2, \"n\" : 5 }, \"fullDocumentBeforeChange\" : null }]");
}

/* A diff computed from pre to post, applied to pre, gives post back. */
static void
test_diff_round_trip(void)
{
	static const char *const pairs[][2] = {
		{"{\"_id\": 1, \"a\": 1}", "{\"_id\": 1, \"a\": 2}"},
		{"{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"_id\": 1, \"b\": 2}"},
		{"{\"_id\": 1}", "{\"_id\": 1, \"n\": {\"x\": [1, 2]}}"},
		{"{\"_id\": 1, \"o\": {\"p\": {\"q\": 1, \"r\": \"long string value here\"}, \"s\": 3}}",
		 "{\"_id\": 1, \"o\": {\"p\": {\"q\": 2, \"r\": \"long string value here\"}, \"s\": 3}}"},
		{"{\"_id\": 1, \"arr\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}", "{\"_id\": 1, \"arr\": [1, 2, 30, 4, 5, 6, 7, 8, 9, 10]}"},
		{"{\"_id\": 1, \"arr\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}", "{\"_id\": 1, \"arr\": [1, 2, 3, 4, 5, 6, 7, 8]}"},
		{"{\"_id\": 1, \"arr\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}", "{\"_id\": 1, \"arr\": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}"},
		{"{\"_id\": 1, \"arr\": [{\"k\": 1, \"v\": \"aaaaaaaaaaaa\"}, {\"k\": 2, \"v\": \"bbbbbbbbbbbbbb\"}]}",
		 "{\"_id\": 1, \"arr\": [{\"k\": 1, \"v\": \"aaaaaaaaaaaa\"}, {\"k\": 3, \"v\": \"bbbbbbbbbbbbbb\"}]}"},
		{"{\"_id\": 1, \"a\": 1, \"b\": 2, \"c\": 3}", "{\"_id\": 1, \"c\": 4, \"d\": 5}"},
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		bson_t *pre = tt_json(pairs[i][0]), *post = tt_json(pairs[i][1]);
		bson_t diff = BSON_INITIALIZER, out = BSON_INITIALIZER;
		if (!repl_diff_compute(pre, post, SIZE_MAX / 2, &diff)) {
			TT_FAIL_("no diff for %s", pairs[i][0]);
		} else if (!repl_diff_apply(pre, &diff, &out) || !bson_equal(&out, post)) {
			char *a = bson_as_relaxed_extended_json(&out, NULL), *d = bson_as_relaxed_extended_json(&diff, NULL);
			TT_FAIL_("pair %zu: diff %s gave %s, want %s", i, d, a, pairs[i][1]);
			bson_free(a);
			bson_free(d);
		}
		bson_destroy(&diff);
		bson_destroy(&out);
		bson_destroy(pre);
		bson_destroy(post);
	}
}

static void
test_pre_and_post_images(void)
{
	int code;
	int64_t id, id2;

	ok("pi", "{'create': 'c', 'changeStreamPreAndPostImages': {'enabled': true}}");
	ok("pi", "{'create': 'off'}");
	expect_code("pi", "{'collMod': 'off', 'changeStreamPreAndPostImages': {'enabled': 1}}", 14);
	expect_code("pi", "{'collMod': 'off', 'changeStreamPreAndPostImages': {}}", 40414);
	expect_code("pi", "{'collMod': 'off', 'changeStreamPreAndPostImages': {'enabled': true, 'x': 1}}", 40415);
	ok("pi", "{'insert': 'c', 'documents': [{'_id': 1, 'n': 1, 'keep': 'k'}]}");
	ok("pi", "{'insert': 'off', 'documents': [{'_id': 1, 'n': 1}]}");
	id = open_stream("pi", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'fullDocument': 'required', "
	    "'fullDocumentBeforeChange': 'required'}}, {'$project': {'operationType': 1, 'fullDocument': 1, 'fullDocumentBeforeChange': 1}}], 'cursor': {}}", &code);
	ok("pi", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}]}");
	ok("pi", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'x': 1}}]}");
	ok("pi", "{'delete': 'c', 'deletes': [{'q': {'_id': 1}, 'limit': 1}]}");
	/* point-in-time images, whatever happened to the document since */
	expect_more("pi", "c", id,
	    "[{ \"_id\" : true, \"operationType\" : \"update\", \"fullDocument\" : { \"_id\" : 1, \"n\" : 2, \"keep\" : \"k\" }, "
	    "\"fullDocumentBeforeChange\" : { \"_id\" : 1, \"n\" : 1, \"keep\" : \"k\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"replace\", \"fullDocument\" : { \"_id\" : 1, \"x\" : 1 }, "
	    "\"fullDocumentBeforeChange\" : { \"_id\" : 1, \"n\" : 2, \"keep\" : \"k\" } }, "
	    "{ \"_id\" : true, \"operationType\" : \"delete\", \"fullDocumentBeforeChange\" : { \"_id\" : 1, \"x\" : 1 } }]");
	/* a collection without the option: none, so required fails with 47 */
	id2 = open_stream("pi", "{'aggregate': 'off', 'pipeline': [{'$changeStream': {'fullDocumentBeforeChange': 'required'}}], 'cursor': {}}", &code);
	ok("pi", "{'update': 'off', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'n': 1}}}]}");
	{
		char *got = more("pi", "off", id2, NULL);
		TT_EQ_STR(got, "[error 47");
		bson_free(got);
	}
	/* the option is listed, and can be turned off */
	{
		int rc;
		bson_t *r = run("pi", "{'listCollections': 1, 'filter': {'name': 'c'}}", &rc);
		char *t = tt_batch_text(r, rc, "none");
		TT_ASSERT(strstr(t, "\"changeStreamPreAndPostImages\" : { \"enabled\" : true }") != NULL);
		bson_free(t);
		tt_free_reply(r);
	}
	/* writes in a transaction: images by their applyOps entry and index */
	{
		int rc;
		bson_t *r;
		const char *ls = "'lsid': {'id': {'$binary': {'base64': 'AQEBAQEBAQEBAQEBAQEBAQ==', 'subType': '04'}}}, "
		    "'txnNumber': {'$numberLong': '1'}, 'autocommit': false";
		char *c;
		ok("pi", "{'insert': 'c', 'documents': [{'_id': 7, 'n': 1}, {'_id': 8, 'n': 1}]}");
		id = open_stream("pi", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'fullDocument': 'required', "
		    "'fullDocumentBeforeChange': 'required'}}, {'$project': {'operationType': 1, 'fullDocument': 1, "
		    "'fullDocumentBeforeChange': 1}}], 'cursor': {}}", &code);
		c = bson_strdup_printf("{'update': 'c', 'updates': [{'q': {'_id': 7}, 'u': {'$inc': {'n': 5}}}], 'startTransaction': true, %s}", ls);
		r = run("pi", c, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
		bson_free(c);
		c = bson_strdup_printf("{'insert': 'c', 'documents': [{'_id': 9}], %s}", ls);
		r = run("pi", c, &rc);
		tt_free_reply(r);
		bson_free(c);
		c = bson_strdup_printf("{'delete': 'c', 'deletes': [{'q': {'_id': 8}, 'limit': 1}], %s}", ls);
		r = run("pi", c, &rc);
		tt_free_reply(r);
		bson_free(c);
		c = bson_strdup_printf("{'commitTransaction': 1, %s}", ls);
		r = run("admin", c, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
		bson_free(c);
		expect_more("pi", "c", id,
		    "[{ \"_id\" : true, \"operationType\" : \"update\", \"fullDocument\" : { \"_id\" : 7, \"n\" : 6 }, "
		    "\"fullDocumentBeforeChange\" : { \"_id\" : 7, \"n\" : 1 } }, "
		    "{ \"_id\" : true, \"operationType\" : \"insert\", \"fullDocument\" : { \"_id\" : 9 } }, "
		    "{ \"_id\" : true, \"operationType\" : \"delete\", \"fullDocumentBeforeChange\" : { \"_id\" : 8, \"n\" : 1 } }]");
		/* config.system.preimages holds them as mongod does */
		r = run("config", "{'find': 'system.preimages', 'filter': {'_id.applyOpsIndex': {'$numberLong': '2'}}, "
		    "'projection': {'_id': 0, 'preImage': 1}}", &rc);
		c = tt_batch_text(r, rc, "none");
		TT_EQ_STR(c, "[ { \"preImage\" : { \"_id\" : 8, \"n\" : 1 } } ]");
		bson_free(c);
		tt_free_reply(r);
	}
	ok("pi", "{'collMod': 'c', 'changeStreamPreAndPostImages': {'enabled': false}}");
}

/* ---- $changeStreamSplitLargeEvent ----------------------------------------- */

/* Run a command built as BSON (big strings do not go through JSON). */
static bson_t *
run_bson(const char *dbname, const bson_t *cmd, int *rc)
{
	bson_t *reply = tm_bson_array_new(1);
	tamga_error_t e;

	*rc = tamga_run_command(db, dbname, cmd, reply, &e);
	return reply;
}

/* getMore on id: the batch's events as "fragment/of:<size ok>" (or
 * "whole"), "|"-separated, with each event's token in toks[] (owned). */
static char *
split_more(int64_t id, char **toks, int *ntok, int *code)
{
	char *cmd = bson_strdup_printf("{'getMore': %lld, 'collection': 'big'}", (long long)id);
	int rc;
	bson_t *r = run("sp", cmd, &rc);
	bson_string_t *s = bson_string_new("");
	bson_iter_t it, ev, f;

	bson_free(cmd);
	*code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	*ntok = 0;
	if (rc == 0 && bson_iter_init(&it, r) && bson_iter_find_descendant(&it, "cursor.nextBatch", &f) &&
	    bson_iter_recurse(&f, &ev)) {
		while (bson_iter_next(&ev)) {
			bson_t d;
			const uint8_t *data;
			uint32_t len;
			bson_iter_t x;
			bson_iter_document(&ev, &len, &data);
			bson_init_static(&d, data, len);
			if (bson_iter_init(&x, &d) && bson_iter_find_descendant(&x, "splitEvent.fragment", &f)) {
				bson_iter_t o;
				bson_iter_init(&o, &d);
				bson_iter_find_descendant(&o, "splitEvent.of", &o);
				bson_string_append_printf(s, "%s%d/%d:%s", s->len ? "|" : "", bson_iter_int32(&f),
				    bson_iter_int32(&o), len <= 16 * 1024 * 1024 ? "ok" : "big");
			} else {
				bson_string_append_printf(s, "%swhole", s->len ? "|" : "");
			}
			if (bson_iter_init(&x, &d) && bson_iter_find_descendant(&x, "_id._data", &f) && *ntok < 8)
				toks[(*ntok)++] = bson_strdup(bson_iter_utf8(&f, NULL));
		}
	}
	tt_free_reply(r);
	return bson_string_free(s, false);
}

static void
test_split_large_event(void)
{
	size_t big = 9 * 1024 * 1024;
	char *a = bson_malloc(big + 1), *b = bson_malloc(big + 1);
	bson_t *cmd, docs, d, ups, u, q, set;
	int code, rc, ntok;
	int64_t split, whole;
	char *toks[8], *got, *resume;
	bson_t *r;

	memset(a, 'a', big);
	a[big] = '\0';
	memset(b, 'b', big);
	b[big] = '\0';
	ok("sp", "{'create': 'big', 'changeStreamPreAndPostImages': {'enabled': true}}");
	cmd = bson_new();
	BSON_APPEND_UTF8(cmd, "insert", "big");
	bson_append_array_begin(cmd, "documents", -1, &docs);
	bson_append_document_begin(&docs, "0", -1, &d);
	BSON_APPEND_INT32(&d, "_id", 1);
	BSON_APPEND_UTF8(&d, "s", a);
	bson_append_document_end(&docs, &d);
	bson_append_array_end(cmd, &docs);
	r = run_bson("sp", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_destroy(cmd);

	/* the stage's spec and place, and the stream that needs it */
	expect_code("sp", "{'aggregate': 'big', 'pipeline': [{'$changeStream': {}}, {'$changeStreamSplitLargeEvent': {'a': 1}}], 'cursor': {}}", 7182800);
	expect_code("sp", "{'aggregate': 'big', 'pipeline': [{'$changeStream': {}}, {'$changeStreamSplitLargeEvent': {}}, "
	    "{'$match': {}}], 'cursor': {}}", 7182802);
	split = open_stream("sp", "{'aggregate': 'big', 'pipeline': [{'$changeStream': {'fullDocument': 'required', "
	    "'fullDocumentBeforeChange': 'required'}}, {'$changeStreamSplitLargeEvent': {}}], 'cursor': {}}", &code);
	TT_ASSERT(split != 0);
	whole = open_stream("sp", "{'aggregate': 'big', 'pipeline': [{'$changeStream': {'fullDocument': 'required', "
	    "'fullDocumentBeforeChange': 'required'}}], 'cursor': {}}", &code);
	TT_ASSERT(whole != 0);

	/* an update whose event holds the old document, the new one and the
	 * new value: about 27 MB */
	cmd = bson_new();
	BSON_APPEND_UTF8(cmd, "update", "big");
	bson_append_array_begin(cmd, "updates", -1, &ups);
	bson_append_document_begin(&ups, "0", -1, &u);
	bson_append_document_begin(&u, "q", -1, &q);
	BSON_APPEND_INT32(&q, "_id", 1);
	bson_append_document_end(&u, &q);
	bson_append_document_begin(&u, "u", -1, &q);
	bson_append_document_begin(&q, "$set", -1, &set);
	BSON_APPEND_UTF8(&set, "s", b);
	bson_append_document_end(&q, &set);
	bson_append_document_end(&u, &q);
	bson_append_document_end(&ups, &u);
	bson_append_array_end(cmd, &ups);
	r = run_bson("sp", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_destroy(cmd);

	/* fragments, smallest fields first, each under 16 MB, one per batch */
	got = split_more(split, toks, &ntok, &code);
	TT_EQ_STR(got, "1/3:ok");
	resume = ntok > 0 ? bson_strdup(toks[0]) : NULL;
	for (int i = 0; i < ntok; i++)
		bson_free(toks[i]);
	bson_free(got);
	{
		char *prev = resume != NULL ? bson_strdup(resume) : NULL;
		for (int k = 2; k <= 3; k++) {
			char want[16];
			got = split_more(split, toks, &ntok, &code);
			snprintf(want, sizeof(want), "%d/3:ok", k);
			TT_EQ_STR(got, want);
			/* fragment tokens sort in order */
			if (ntok > 0 && prev != NULL)
				TT_ASSERT(strcmp(prev, toks[0]) < 0);
			bson_free(prev);
			prev = ntok > 0 ? bson_strdup(toks[0]) : NULL;
			for (int i = 0; i < ntok; i++)
				bson_free(toks[i]);
			bson_free(got);
		}
		bson_free(prev);
	}
	/* without the stage the event is too large: mongod's 10334 */
	got = split_more(whole, toks, &ntok, &code);
	TT_EQ_INT(code, 10334);
	bson_free(got);

	/* resuming after fragment 1 gives fragments 2 and 3; without the
	 * stage, 280 */
	if (resume != NULL) {
		char *c = bson_strdup_printf("{'aggregate': 'big', 'pipeline': [{'$changeStream': {'fullDocument': 'required', "
		    "'fullDocumentBeforeChange': 'required', 'resumeAfter': {'_data': '%s'}}}, {'$changeStreamSplitLargeEvent': {}}], "
		    "'cursor': {'batchSize': 0}}", resume);
		int64_t again = open_stream("sp", c, &code);
		TT_ASSERT(again != 0);
		got = split_more(again, toks, &ntok, &code);
		TT_EQ_STR(got, "2/3:ok");
		for (int i = 0; i < ntok; i++)
			bson_free(toks[i]);
		bson_free(got);
		bson_free(c);
		c = bson_strdup_printf("{'aggregate': 'big', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '%s'}}}], "
		    "'cursor': {}}", resume);
		expect_code("sp", c, 280);
		bson_free(c);
		/* the same fragment with a pipeline that does not split the event */
		c = bson_strdup_printf("{'aggregate': 'big', 'pipeline': [{'$changeStream': {'resumeAfter': {'_data': '%s'}}}, "
		    "{'$changeStreamSplitLargeEvent': {}}], 'cursor': {'batchSize': 0}}", resume);
		again = open_stream("sp", c, &code);
		TT_EQ_INT(code, 0);
		got = split_more(again, toks, &ntok, &code);
		TT_EQ_INT(code, 280);
		for (int i = 0; i < ntok; i++)
			bson_free(toks[i]);
		bson_free(got);
		bson_free(c);
	}
	bson_free(resume);
	bson_free(a);
	bson_free(b);
}

static void
test_standalone(void)
{
	char *d2 = tt_tmpdir("cs-standalone");
	tamga_t *sdb = tt_open_new(d2);
	int rc;
	bson_t *r = tt_run_sq(sdb, "t", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", &rc);

	TT_EQ_INT(tt_get_i64(r, "code"), 40573);
	tt_free_reply(r);
	tt_close_rm(sdb, d2);
}

/* Streams whose options agree share the event one of them built
 * (changestream.c's cache); streams whose options differ get their own:
 * showExpandedEvents adds collectionUUID, showRawUpdateDescription has
 * rawUpdateDescription -- whichever stream reads first. */
static void
test_shared_events(void)
{
	int code;
	int64_t a, b, x, raw;
	char *ga, *gb, *gx, *graw;

	ok("sh", "{'create': 'c'}");
	x = open_stream("sh", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'showExpandedEvents': true}}], 'cursor': {}}", &code);
	a = open_stream("sh", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", &code);
	raw = open_stream("sh", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {'showRawUpdateDescription': true}}], 'cursor': {}}", &code);
	b = open_stream("sh", "{'aggregate': 'c', 'pipeline': [{'$changeStream': {}}], 'cursor': {}}", &code);
	TT_ASSERT(a != 0 && b != 0 && x != 0 && raw != 0);
	ok("sh", "{'insert': 'c', 'documents': [{'_id': 1, 'n': 1}]}");
	ok("sh", "{'update': 'c', 'updates': [{'q': {'_id': 1}, 'u': {'$set': {'n': 2}}}]}");
	/* the expanded stream reads first: the plain ones must not get its event */
	gx = more("sh", "c", x, NULL);
	ga = more("sh", "c", a, NULL);
	graw = more("sh", "c", raw, NULL);
	gb = more("sh", "c", b, NULL);
	TT_EQ_STR(ga, gb);
	TT_EQ_STR(ga,
	    "[{ \"_id\" : true, \"operationType\" : \"insert\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"fullDocument\" : { \"_id\" : 1, \"n\" : 1 }, \"ns\" : { \"db\" : \"sh\", \"coll\" : \"c\" }, "
	    "\"documentKey\" : { \"_id\" : 1 } }, "
	    "{ \"_id\" : true, \"operationType\" : \"update\", \"clusterTime\" : true, \"wallTime\" : true, "
	    "\"ns\" : { \"db\" : \"sh\", \"coll\" : \"c\" }, \"documentKey\" : { \"_id\" : 1 }, "
	    "\"updateDescription\" : { \"updatedFields\" : { \"n\" : 2 }, \"removedFields\" : [  ], "
	    "\"truncatedArrays\" : [  ] } }]");
	TT_ASSERT(strstr(gx, "\"collectionUUID\" : true") != NULL);
	TT_ASSERT(strstr(ga, "collectionUUID") == NULL);
	TT_ASSERT(strstr(graw, "rawUpdateDescription") != NULL && strstr(graw, "\"updateDescription\"") == NULL);
	bson_free(ga);
	bson_free(gb);
	bson_free(gx);
	bson_free(graw);
	ok("sh", "{'dropDatabase': 1}");
}

int
main(void)
{
	TT_RUN(test_token_mongod_bytes);
	TT_RUN(test_token_order);
	TT_RUN(test_token_type_bits);
	TT_RUN(test_token_malformed);
	TT_RUN(test_standalone);
	TT_RUN(test_diff_round_trip);
	dir = tt_tmpdir("changestream");
	db = tt_open_replset(dir, "replSet=rs0");
	if (db == NULL)
		return 1;
	TT_RUN(test_crud_events);
	TT_RUN(test_expanded_and_levels);
	TT_RUN(test_resume);
	TT_RUN(test_transaction_events);
	TT_RUN(test_bad_input);
	TT_RUN(test_update_lookup);
	TT_RUN(test_raw_update_description);
	TT_RUN(test_modify_event);
	TT_RUN(test_pre_and_post_images);
	TT_RUN(test_split_large_event);
	TT_RUN(test_shared_events);
	tt_close_rm(db, dir);
	return tt_finish();
}
