/*
 * test_replset.c -- the single-member replica set's corners, below the
 * wire: configuration checks (repl_set_config_check's reasons), the engine
 * in replica-set mode (hello before and after replSetInitiate, the primary
 * gate, $clusterTime / operationTime, the term surviving a reopen,
 * stepdown), readConcern / writeConcern parsing and the standalone and
 * replica-set rules, and the fail point modes (times, skip, alwaysOn, off,
 * activationProbability) with failCommand through the dispatcher.
 */
#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "tt.h"
#include "tt_embedded.h"

#include "commands/commands.h"
#include "commands/concern.h"
#include "common/failpoint.h"
#include "common/opctx.h"
#include <unistd.h>
#include "repl/member_rejoin.h"
#include "repl/replset.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define SELF "127.0.0.1:27999"

/* ---- configuration checks ---------------------------------------------------------- */

static int
check(const char *json, bool initiate, int *code)
{
	bson_t *cfg = tt_json(json);
	terr_t err = TERR_INIT;
	int idx = -1, r = repl_set_config_check(cfg, "rs0", SELF, initiate, &idx, &err);

	*code = err.code;
	if (r != 0 && getenv("TT_VERBOSE"))
		printf("  %s -> %d %s\n", json, err.code, err.msg);
	terr_clear(&err);
	bson_destroy(cfg);
	return r == 0 ? idx : -1;
}

/* The same through repl_set_config_check_stage, keeping the message and
 * whether the fault is the whole set's (mongod's validate). */
static int
check_stage(const char *json, bool initiate, int *code, bool *validate, char *msg, size_t msgsz)
{
	bson_t *cfg = tt_json(json);
	terr_t err = TERR_INIT;
	int idx = -1, r = repl_set_config_check_stage(cfg, "rs0", SELF, initiate, &idx, validate, &err);

	*code = err.code;
	snprintf(msg, msgsz, "%s", err.msg ? err.msg : "");
	terr_clear(&err);
	bson_destroy(cfg);
	return r == 0 ? idx : -1;
}

/* mongod's order: the whole document parsed, then the set name, then
 * validate's faults of the whole set, then (initiate) version 1 and self. */
static void
test_config_check_order(void)
{
	char msg[512];
	int code;
	bool v;

	/* another set name: 9.0's texts, initiate and reconfig */
	TT_EQ_INT(check_stage("{\"_id\": \"other\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true,
	    &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 93);
	TT_ASSERT(!v);
	TT_EQ_STR(msg, "Rejecting initiate with a set name that differs from command line set name, initiate set name: other, command line set name: rs0");
	TT_EQ_INT(check_stage("{\"_id\": \"other\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}",
	    false, &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 93);
	TT_EQ_STR(msg, "Rejecting reconfig where new config set name differs from command line set name, new config set name: other, old config set name: rs0");
	/* the name comes before validate's faults (a duplicate _id, no
	 * member, an empty name) */
	TT_EQ_INT(check_stage("{\"_id\": \"other\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 0, \"host\": \"h:1\"}]}",
	    true, &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 93);
	TT_ASSERT(strstr(msg, "Rejecting initiate") == msg);
	TT_EQ_INT(check_stage("{\"_id\": \"other\", \"members\": []}", true, &code, &v, msg, sizeof(msg)), -1);
	TT_ASSERT(strstr(msg, "Rejecting initiate") == msg);
	TT_EQ_INT(check_stage("{\"_id\": \"\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true, &code, &v, msg,
	    sizeof(msg)), -1);
	TT_ASSERT(strstr(msg, "Rejecting initiate") == msg);
	/* a later member's field fault comes before an earlier duplicate
	 * (the parse ends before validate starts) and before the name */
	TT_EQ_INT(check_stage("{\"_id\": \"other\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 0, \"host\": \"h:1\"}, {\"_id\": 2, \"host\": \"h:2\", \"x\": 1}]}",
	    true, &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 40415);
	TT_ASSERT(!v);
	/* a duplicate alone: validate's, its own text */
	TT_EQ_INT(check_stage("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 0, \"host\": \"h:1\"}]}",
	    true, &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 2);
	TT_ASSERT(v);
	TT_EQ_STR(msg, "Found two member configurations with same _id field, members.0._id == members.1._id == 0");
	/* 51 members, the last one with an unknown field: the parse fault */
	{
		bson_string_t *s = bson_string_new("{\"_id\": \"rs0\", \"members\": [");
		for (int i = 0; i < 51; i++)
			bson_string_append_printf(s, "%s{\"_id\": %d, \"host\": \"h%d:1\"%s}", i ? "," : "", i, i, i == 50 ? ", \"x\": 1" : "");
		bson_string_append(s, "]}");
		TT_EQ_INT(check_stage(s->str, true, &code, &v, msg, sizeof(msg)), -1);
		TT_EQ_INT(code, 40415);
		bson_string_free(s, true);
	}
	/* initiate takes version 1 only (mongod's text, two spaces and all);
	 * a reconfig any version */
	TT_EQ_INT(check_stage("{\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true,
	    &code, &v, msg, sizeof(msg)), -1);
	TT_EQ_INT(code, 93);
	TT_EQ_STR(msg, "Configuration used to initiate a replica set must  have version 1, but found 2");
	TT_EQ_INT(check_stage("{\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", false,
	    &code, &v, msg, sizeof(msg)), 0);
	TT_EQ_STR(repl_state_name(REPL_STATE_SECONDARY), "SECONDARY");
	TT_EQ_STR(repl_state_name(REPL_STATE_ROLLBACK), "ROLLBACK");
}

static void
test_config_check(void)
{
	int code;

	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true, &code), 0);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"version\": 3, \"members\": [{\"_id\": 7, \"host\": \"localhost:27999\", \"priority\": 2, \"tags\": {\"dc\": \"a\"}}]}", false, &code), 0);
	/* reconfig needs a version, initiate does not */
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", false, &code), -1);
	TT_EQ_INT(code, 40414);
	/* another set name */
	TT_EQ_INT(check("{\"_id\": \"other\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 93);
	/* no member is this node */
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"10.1.2.3:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 74);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:1\"}]}", true, &code), -1);
	TT_EQ_INT(code, 74);
	/* shapes */
	TT_EQ_INT(check("{\"_id\": 5, \"members\": []}", true, &code), -1);
	TT_EQ_INT(code, 14);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": []}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\"}", true, &code), -1);
	TT_EQ_INT(code, 40414);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}], \"bogus\": 1}", true, &code), -1);
	TT_EQ_INT(code, 40415);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"x\": 1}]}", true, &code), -1);
	TT_EQ_INT(code, 40415);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 40414);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0}]}", true, &code), -1);
	TT_EQ_INT(code, 40414);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"version\": 0, \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 256, \"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"priority\": 1001}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"votes\": 2}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"votes\": 0, \"priority\": 0}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"hidden\": true}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"tags\": {\"dc\": 1}}]}", true, &code), -1);
	TT_EQ_INT(code, 14);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"protocolVersion\": 0, \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	/* duplicates */
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 0, \"host\": \"h:1\"}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 1, \"host\": \"127.0.0.1:27999\"}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	/* a second member: accepted, the set then runs on Raft (issue 24,
	 * repl/raft_member.h; tests/e2e/replset/raft_set.py) */
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\"}, {\"_id\": 1, \"host\": \"h:1\"}]}", true, &code), 0);
	/* this node not electable */
	TT_EQ_INT(check("{\"_id\": \"rs0\", \"members\": [{\"_id\": 0, \"host\": \"127.0.0.1:27999\", \"arbiterOnly\": true}]}", true, &code), -1);
	TT_EQ_INT(code, 2);
	/* 51 members */
	{
		bson_string_t *s = bson_string_new("{\"_id\": \"rs0\", \"members\": [");
		for (int i = 0; i < 51; i++)
			bson_string_append_printf(s, "%s{\"_id\": %d, \"host\": \"h%d:1\"}", i ? "," : "", i, i);
		bson_string_append(s, "]}");
		TT_EQ_INT(check(s->str, true, &code), -1);
		TT_EQ_INT(code, 2);
		bson_string_free(s, true);
	}
}

/* ---- concern parsing and rules ---------------------------------------------------------- */

static int
rc_parse(const char *json, concern_read_t *rc)
{
	bson_t *d = tt_json(json);
	bson_iter_t it;
	terr_t err = TERR_INIT;
	int code;

	TT_ASSERT(bson_iter_init_find(&it, d, "readConcern"));
	code = concern_read_parse(&it, rc, &err) == 0 ? 0 : err.code;
	terr_clear(&err);
	bson_destroy(d);
	return code;
}

static int
wc_parse(const char *json, concern_write_t *wc)
{
	bson_t *d = tt_json(json);
	bson_iter_t it;
	terr_t err = TERR_INIT;
	int code;

	TT_ASSERT(bson_iter_init_find(&it, d, "writeConcern"));
	code = concern_write_parse(&it, wc, &err) == 0 ? 0 : err.code;
	terr_clear(&err);
	bson_destroy(d);
	return code;
}

static void
test_concern_parse(void)
{
	concern_read_t rc;
	concern_write_t wc;
	concern_node_t standalone = {0}, set = {.repl_set = true, .initiated = true, .primary = true, .data_members = 1};
	terr_t err = TERR_INIT;

	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"local\"}}", &rc), 0);
	TT_EQ_INT(rc.level, RC_LOCAL);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"available\"}}", &rc), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"majority\"}}", &rc), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"linearizable\"}}", &rc), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"snapshot\"}}", &rc), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {}}", &rc), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"unknown\"}}", &rc), 2);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": 1}}", &rc), 14);
	TT_EQ_INT(rc_parse("{\"readConcern\": \"local\"}", &rc), 14);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"levle\": \"local\"}}", &rc), 40415);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"afterClusterTime\": 5}}", &rc), 14);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"available\", \"afterClusterTime\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}}}", &rc), 72);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"local\", \"atClusterTime\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}}}", &rc), 72);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"snapshot\", \"atClusterTime\": {\"$timestamp\": {\"t\": 0, \"i\": 0}}}}", &rc), 72);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"afterClusterTime\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}, \"afterOpTime\": {\"ts\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}, \"t\": 1}}}", &rc), 72);

	/* the standalone rules */
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"snapshot\"}}", &rc), 0);
	TT_EQ_INT(concern_read_validate(&rc, &standalone, &err), -1);
	TT_EQ_INT(err.code, 123);
	terr_clear(&err);
	TT_EQ_INT(concern_read_validate(&rc, &set, &err), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"linearizable\"}}", &rc), 0);
	TT_EQ_INT(concern_read_validate(&rc, &standalone, &err), -1);
	TT_EQ_INT(err.code, 123);
	terr_clear(&err);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"level\": \"majority\"}}", &rc), 0);
	TT_EQ_INT(concern_read_validate(&rc, &standalone, &err), 0);
	TT_EQ_INT(rc_parse("{\"readConcern\": {\"afterClusterTime\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}}}", &rc), 0);
	TT_EQ_INT(concern_read_validate(&rc, &standalone, &err), -1);
	TT_EQ_INT(err.code, 20);
	terr_clear(&err);

	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": 1}}", &wc), 0);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {}}", &wc), 0);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": \"majority\", \"wtimeout\": 100}}", &wc), 0);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": 51}}", &wc), 9);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": -1}}", &wc), 9);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": true}}", &wc), 9);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"j\": \"yes\"}}", &wc), 14);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"wtimeout\": \"x\"}}", &wc), 14);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"j\": true, \"fsync\": true}}", &wc), 9);
	TT_EQ_INT(wc_parse("{\"writeConcern\": 1}", &wc), 14);

	/* w: 50 on a standalone: BadValue before anything runs; in a set: the
	 * write happens and writeConcernError 100 follows */
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": 50}}", &wc), 0);
	TT_EQ_INT(concern_write_validate(&wc, &standalone, &err), -1);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	TT_EQ_INT(concern_write_validate(&wc, &set, &err), 0);
	TT_EQ_INT(concern_write_satisfiable(&wc, &set, &err), -1);
	TT_EQ_INT(err.code, 100);
	TT_EQ_STR(err.msg, "Not enough data-bearing nodes");
	terr_clear(&err);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": 1}}", &wc), 0);
	TT_EQ_INT(concern_write_satisfiable(&wc, &set, &err), 0);
	TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": \"dc2\"}}", &wc), 0);
	TT_EQ_INT(concern_write_validate(&wc, &standalone, &err), -1);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	TT_EQ_INT(concern_write_satisfiable(&wc, &set, &err), -1);
	TT_EQ_INT(err.code, 79);
	terr_clear(&err);
	{
		bson_t *cfg = tt_json("{\"members\": [{\"_id\": 0, \"tags\": {\"dc\": \"a\"}}], \"settings\": {\"getLastErrorModes\": {\"dc2\": {\"dc\": 2}, \"dc1\": {\"dc\": 1}}}}");
		set.config = cfg;
		TT_EQ_INT(concern_write_satisfiable(&wc, &set, &err), -1);
		TT_EQ_INT(err.code, 100);
		terr_clear(&err);
		TT_EQ_INT(wc_parse("{\"writeConcern\": {\"w\": \"dc1\"}}", &wc), 0);
		TT_EQ_INT(concern_write_satisfiable(&wc, &set, &err), 0);
		set.config = NULL;
		bson_destroy(cfg);
	}
	{
		concern_node_t mem = {.ephemeral = true};
		TT_EQ_INT(wc_parse("{\"writeConcern\": {\"j\": true}}", &wc), 0);
		TT_EQ_INT(concern_write_validate(&wc, &mem, &err), -1);
		TT_EQ_INT(err.code, 2);
		terr_clear(&err);
	}
}

/* ---- fail point modes ---------------------------------------------------------------------- */

static int
configure(const char *name, const char *mode_json, const char *data_json, int64_t *count)
{
	bson_t *m = tt_json(mode_json), *d = data_json ? tt_json(data_json) : NULL;
	bson_iter_t it;
	terr_t err = TERR_INIT;
	int code;

	TT_ASSERT(bson_iter_init_find(&it, m, "mode"));
	code = failpoint_configure(name, &it, d, count, &err) == 0 ? 0 : err.code;
	terr_clear(&err);
	bson_destroy(m);
	if (d)
		bson_destroy(d);
	return code;
}

static int
fires(const char *name, int tries)
{
	int n = 0;
	for (int i = 0; i < tries; i++) {
		bson_t data;
		if (failpoint_fire(name, NULL, NULL, &data)) {
			n++;
			bson_destroy(&data);
		}
	}
	return n;
}

static void
test_failpoint_modes(void)
{
	int64_t count;

	TT_ASSERT(!failpoint_any_active());
	TT_EQ_INT(configure("noSuchFailPoint", "{\"mode\": \"alwaysOn\"}", NULL, &count), 266);
	TT_EQ_INT(configure("failCommand", "{\"mode\": \"sometimes\"}", NULL, &count), 2);
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"times\": -1}}", NULL, &count), 2);
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"activationProbability\": 2}}", NULL, &count), 2);
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"bogus\": 1}}", NULL, &count), 2);
	TT_EQ_INT(configure("failCommand", "{\"mode\": 5}", NULL, &count), 14);
	TT_ASSERT(!failpoint_any_active());

	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"times\": 3}}", "{\"errorCode\": 2}", &count), 0);
	TT_ASSERT(failpoint_any_active());
	TT_EQ_INT(fires("failCommand", 10), 3);
	TT_ASSERT(!failpoint_any_active());
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"skip\": 2}}", NULL, &count), 0);
	TT_EQ_INT(count, 3);   /* fired three times before */
	TT_EQ_INT(fires("failCommand", 5), 3);
	TT_EQ_INT(configure("failCommand", "{\"mode\": \"alwaysOn\"}", "{\"x\": 1}", &count), 0);
	TT_EQ_INT(fires("failCommand", 4), 4);
	{
		bson_t data;
		TT_ASSERT(failpoint_fire("failCommand", NULL, NULL, &data));
		TT_EQ_JSON(&data, "{ \"x\" : 1 }");
		bson_destroy(&data);
	}
	TT_EQ_INT(configure("failCommand", "{\"mode\": \"off\"}", NULL, &count), 0);
	TT_EQ_INT(fires("failCommand", 4), 0);
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"activationProbability\": 0}}", NULL, &count), 0);
	TT_EQ_INT(fires("failCommand", 50), 0);
	TT_EQ_INT(configure("failCommand", "{\"mode\": {\"activationProbability\": 1}}", NULL, &count), 0);
	TT_EQ_INT(fires("failCommand", 50), 50);
	failpoint_reset_all();
	TT_ASSERT(!failpoint_any_active());
}

/* ---- the engine in replica-set mode ------------------------------------------------------------- */

static engine_t *
open_engine_auth(const char *dir, const char *set, bool test_commands, bool auth)
{
	engine_options_t eo;
	engine_t *e = NULL;
	terr_t err = TERR_INIT;

	memset(&eo, 0, sizeof(eo));
	eo.auth = auth;
	eo.repl_set_name = (char *)set;
	eo.enable_test_commands = test_commands;
	if (engine_open(dir, &eo, &e, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
	engine_set_self_host(e, SELF);
	return e;
}

static engine_t *
open_engine(const char *dir, const char *set, bool test_commands)
{
	return open_engine_auth(dir, set, test_commands, false);
}

static bson_t *
run(engine_t *e, const char *db, const char *json, int *rc)
{
	client_t *cl = client_new(e, NULL);
	bson_t *cmd = tt_json(json), *out = bson_new(), reply;

	*rc = engine_run_command(e, cl, db, cmd, &reply, NULL);
	bson_copy_to_excluding_noinit(&reply, out, "", NULL);
	bson_destroy(&reply);
	bson_destroy(cmd);
	client_free(cl);
	return out;
}

static void
test_engine_set(void)
{
	char *dir = tt_tmpdir("replset");
	engine_t *e = open_engine(dir, "rs0", true);
	bson_t *r;
	bson_iter_t it;
	int rc;
	int64_t fired0;
	uint32_t t1, i1, t2, i2;

	/* before initiation: a ghost member */
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "isreplicaset", &it) && bson_iter_as_bool(&it));
	TT_ASSERT(tt_get(r, "isWritablePrimary", &it) && !bson_iter_as_bool(&it));
	TT_ASSERT(!tt_get(r, "setName", &it));
	TT_ASSERT(!tt_get(r, "$clusterTime", &it));
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}]}", &rc);
	TT_EQ_INT(rc, 10107);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "not primary");
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\"}", &rc);
	TT_EQ_INT(rc, 13435);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"$readPreference\": {\"mode\": \"secondaryPreferred\"}}", &rc);
	TT_EQ_INT(rc, 13436);
	/* as mongod's NotPrimaryError replies: the topologyVersion the refusal
	 * saw, so a driver that heard of a newer one (the set initiated
	 * meanwhile) ignores it as stale instead of dropping the server */
	TT_EQ_INT(tt_get_i64(r, "topologyVersion.counter"), 0);
	TT_ASSERT(tt_get(r, "topologyVersion.processId", &it) && BSON_ITER_HOLDS_OID(&it));
	bson_destroy(r);
	r = run(e, "local", "{\"insert\": \"scratch\", \"documents\": [{\"_id\": 1}]}", &rc);
	TT_EQ_INT(rc, 0);    /* local is always writable */
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(rc, 94);
	bson_destroy(r);

	/* initiate with the default configuration */
	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "me"), SELF);
	TT_ASSERT(tt_get(r, "info2", &it));
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 23);
	TT_ASSERT(tt_get(r, "info", &it));
	bson_destroy(r);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "setName"), "rs0");
	TT_EQ_STR(tt_get_str(r, "me"), SELF);
	TT_EQ_STR(tt_get_str(r, "primary"), SELF);
	TT_EQ_INT(tt_get_i64(r, "setVersion"), 1);
	TT_ASSERT(tt_get(r, "isWritablePrimary", &it) && bson_iter_as_bool(&it));
	TT_ASSERT(tt_get(r, "secondary", &it) && !bson_iter_as_bool(&it));
	TT_ASSERT(tt_get(r, "hosts.0", &it) && strcmp(bson_iter_utf8(&it, NULL), SELF) == 0);
	TT_ASSERT(tt_get(r, "electionId", &it) && BSON_ITER_HOLDS_OID(&it));
	{
		char hex[25];
		bson_oid_to_string(bson_iter_oid(&it), hex);
		TT_EQ_STR(hex, "7fffffff0000000000000001");
	}
	TT_ASSERT(tt_get(r, "lastWrite.opTime.ts", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	TT_ASSERT(tt_get(r, "lastWrite.majorityWriteDate", &it) && BSON_ITER_HOLDS_DATE_TIME(&it));
	TT_EQ_INT(tt_get_i64(r, "topologyVersion.counter"), 1);
	TT_ASSERT(tt_get(r, "$clusterTime.signature.keyId", &it) && bson_iter_as_int64(&it) == 0);
	TT_ASSERT(tt_get(r, "operationTime", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	bson_destroy(r);

	/* a write's operationTime moves forward; a read reports the last one */
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "operationTime", &it));
	bson_iter_timestamp(&it, &t1, &i1);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "operationTime", &it));
	bson_iter_timestamp(&it, &t2, &i2);
	TT_ASSERT(t1 == t2 && i1 == i2);
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 2}]}", &rc);
	TT_ASSERT(tt_get(r, "operationTime", &it));
	bson_iter_timestamp(&it, &t2, &i2);
	TT_ASSERT(t2 > t1 || (t2 == t1 && i2 > i1));
	bson_destroy(r);
	/* concerns in a set: w above the members is a writeConcernError after
	 * the write; an unknown level, snapshot fine; a future afterClusterTime */
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 3}], \"writeConcern\": {\"w\": 5}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "writeConcernError.code"), 100);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"level\": \"unknown\"}}", &rc);
	TT_EQ_INT(rc, 2);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"level\": \"snapshot\"}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "test", "{\"listCollections\": 1, \"readConcern\": {\"level\": \"snapshot\"}}", &rc);
	TT_EQ_INT(rc, 72);   /* not a snapshot read outside a transaction */
	bson_destroy(r);
	r = run(e, "test", "{\"distinct\": \"c\", \"key\": \"_id\", \"readConcern\": {\"level\": \"snapshot\"}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"afterClusterTime\": {\"$timestamp\": {\"t\": 4000000000, \"i\": 1}}}}", &rc);
	TT_EQ_INT(rc, 72);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"afterClusterTime\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	/* afterOpTime past what was applied waits, here until maxTimeMS */
	r = run(e, "test", "{\"find\": \"c\", \"maxTimeMS\": 100, \"readConcern\": {\"afterOpTime\": {\"ts\": {\"$timestamp\": {\"t\": 4000000000, \"i\": 1}}, \"t\": 1}}}", &rc);
	TT_EQ_INT(rc, 50);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"afterOpTime\": {\"ts\": {\"$timestamp\": {\"t\": 1, \"i\": 1}}, \"t\": 1}}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	/* a gossiped time more than maxAcceptableLogicalClockDriftSecs (365
	 * days) ahead is refused (262, mongod's rate limiter); one within it
	 * advances the clock (no auth: unsigned is fine) */
	r = run(e, "test", "{\"ping\": 1, \"$clusterTime\": {\"clusterTime\": {\"$timestamp\": {\"t\": 4000000000, \"i\": 7}}, \"signature\": {\"hash\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\", \"subType\": \"00\"}}, \"keyId\": 0}}}", &rc);
	TT_EQ_INT(rc, 262);
	bson_destroy(r);
	{
		uint32_t ahead = (uint32_t)time(NULL) + 3600;
		char *cmd = bson_strdup_printf("{\"ping\": 1, \"$clusterTime\": {\"clusterTime\": {\"$timestamp\": {\"t\": %u, \"i\": 7}}, \"signature\": {\"hash\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\", \"subType\": \"00\"}}, \"keyId\": 0}}}", ahead);
		r = run(e, "test", cmd, &rc);
		bson_free(cmd);
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "$clusterTime.clusterTime", &it));
		bson_iter_timestamp(&it, &t2, &i2);
		TT_EQ_INT(t2, ahead);
		TT_EQ_INT(i2, 7);
		bson_destroy(r);
	}

	/* reconfig: version must grow; force jumps */
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 1, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\"}]}}", &rc);
	TT_EQ_INT(rc, 103);
	bson_destroy(r);
	/* the whole set's faults are 103 at a reconfig (mongod's
	 * validateConfigForReconfig), a member's field 93 (its parse) */
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\"}, {\"_id\": 1, \"host\": \"" SELF "\"}]}}", &rc);
	TT_EQ_INT(rc, 103);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\", \"votes\": 0, \"priority\": 0}]}}", &rc);
	TT_EQ_INT(rc, 103);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\", \"priority\": 1001}]}}", &rc);
	TT_EQ_INT(rc, 93);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 2, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\", \"tags\": {\"dc\": \"east\"}}]}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetConfig\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "config.version"), 2);
	TT_EQ_STR(tt_get_str(r, "config.members.0.tags.dc"), "east");
	TT_ASSERT(tt_get(r, "config.settings.replicaSetId", &it) && BSON_ITER_HOLDS_OID(&it));
	bson_destroy(r);
	/* a set initiated with one member (it runs without Raft) moves onto
	 * Raft to take a second one, but only once the new member answered the
	 * quorum check: one that does not is mongod's 74 with its message, and
	 * nothing changed (no Raft folder written, still the single primary);
	 * a forced reconfig does not move it: 238, the configuration kept */
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 3, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\"}, {\"_id\": 1, \"host\": \"127.0.0.1:1\"}]}}", &rc);
	TT_EQ_INT(rc, 74);
	TT_ASSERT(strstr(tt_get_str(r, "errmsg"), "Quorum check failed because not all proposed set members responded affirmatively: 127.0.0.1:1 failed with") != NULL);
	bson_destroy(r);
	{
		char *raft = bson_strdup_printf("%s/raft", dir);
		TT_ASSERT(!repl_rejoin_raft_dir_has_log(raft));
		bson_free(raft);
	}
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_ASSERT(tt_get(r, "isWritablePrimary", &it) && bson_iter_as_bool(&it));
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetReconfig\": {\"_id\": \"rs0\", \"version\": 3, \"members\": [{\"_id\": 0, \"host\": \"" SELF "\"}, {\"_id\": 1, \"host\": \"127.0.0.1:1\"}]}, \"force\": true}", &rc);
	TT_EQ_INT(rc, 238);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetConfig\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "config.version"), 2);
	TT_ASSERT(!tt_get(r, "config.members.1", &it));
	bson_destroy(r);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "topologyVersion.counter"), 2);
	bson_destroy(r);

	r = run(e, "admin", "{\"serverStatus\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "repl.setName"), "rs0");
	TT_EQ_STR(tt_get_str(r, "repl.primary"), SELF);
	TT_ASSERT(tt_get(r, "repl.isWritablePrimary", &it) && bson_iter_as_bool(&it));
	bson_destroy(r);
	/* replSetGetStatus */
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "set"), "rs0");
	TT_EQ_INT(tt_get_i64(r, "myState"), 1);
	TT_EQ_INT(tt_get_i64(r, "term"), 1);
	TT_EQ_STR(tt_get_str(r, "members.0.stateStr"), "PRIMARY");
	TT_EQ_STR(tt_get_str(r, "members.0.name"), SELF);
	TT_ASSERT(tt_get(r, "members.0.self", &it) && bson_iter_as_bool(&it));
	TT_ASSERT(tt_get(r, "members.0.electionTime", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	bson_destroy(r);

	/* stepdown: refused without force (no secondary), steps down with it */
	r = run(e, "admin", "{\"replSetStepDown\": 5, \"secondaryCatchUpPeriodSecs\": 0}", &rc);
	TT_EQ_INT(rc, 262);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetStepDown\": 5, \"secondaryCatchUpPeriodSecs\": 10}", &rc);
	TT_EQ_INT(rc, 2);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetFreeze\": 10}", &rc);
	TT_EQ_INT(rc, 95);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetMaintenance\": true}", &rc);
	TT_EQ_INT(rc, 95);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetStepDown\": 1, \"force\": true}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9}]}", &rc);
	TT_EQ_INT(rc, 10107);
	bson_destroy(r);
	r = run(e, "test", "{\"aggregate\": \"c\", \"pipeline\": [{\"$match\": {}}, {\"$out\": \"d\"}], \"cursor\": {}, \"$readPreference\": {\"mode\": \"secondary\"}}", &rc);
	TT_EQ_INT(rc, 10107);   /* $out writes */
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\"}", &rc);
	TT_EQ_INT(rc, 13435);   /* a secondary without secondaryOk */
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"$readPreference\": {\"mode\": \"secondaryPreferred\"}}", &rc);
	TT_EQ_INT(rc, 0);       /* a secondary serves secondaryOk reads */
	bson_destroy(r);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_ASSERT(tt_get(r, "secondary", &it) && bson_iter_as_bool(&it));
	TT_ASSERT(!tt_get(r, "primary", &it));
	bson_destroy(r);
	/* maintenance on the stepped-down member: RECOVERING, counted */
	r = run(e, "admin", "{\"replSetMaintenance\": false}", &rc);
	TT_EQ_INT(rc, 96);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetMaintenance\": true}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "myState"), 3);
	TT_EQ_STR(tt_get_str(r, "members.0.stateStr"), "RECOVERING");
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"$readPreference\": {\"mode\": \"secondaryPreferred\"}}", &rc);
	TT_EQ_INT(rc, 13436);   /* a RECOVERING member serves no reads */
	bson_destroy(r);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_ASSERT(tt_get(r, "secondary", &it) && !bson_iter_as_bool(&it));
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetMaintenance\": false}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	{
		/* after the stepdown period it elects itself again, next term */
		struct timespec ts = {1, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9}]}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "term"), 2);
	bson_destroy(r);

	/* failCommand through the dispatcher */
	r = run(e, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, \"data\": {\"failCommands\": [\"find\"], \"errorCode\": 91, \"errorLabels\": [\"RetryableWriteError\"]}}", &rc);
	TT_EQ_INT(rc, 0);
	fired0 = tt_get_i64(r, "count");   /* process-wide, as mongod's timesEntered */
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 10}]}", &rc);
	TT_EQ_INT(rc, 0);    /* not listed */
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\"}", &rc);
	TT_EQ_INT(rc, 91);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Failing command via 'failCommand' failpoint");
	TT_EQ_STR(tt_get_str(r, "errorLabels.0"), "RetryableWriteError");
	TT_ASSERT(tt_get(r, "$clusterTime", &it));
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\"}", &rc);
	TT_EQ_INT(rc, 0);    /* times: 1 is spent */
	bson_destroy(r);
	r = run(e, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": \"alwaysOn\", \"data\": {\"failCommands\": [\"insert\"], \"writeConcernError\": {\"code\": 91, \"errmsg\": \"Replication is being shut down\"}}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 11}]}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 1);
	TT_EQ_INT(tt_get_i64(r, "writeConcernError.code"), 91);
	bson_destroy(r);
	r = run(e, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": \"off\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "count"), fired0 + 2);
	bson_destroy(r);
	engine_close(e);

	/* reopen: the same initiated set, the next term */
	e = open_engine(dir, "rs0", false);
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "term"), 3);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetConfig\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "config.version"), 2);
	bson_destroy(r);
	r = run(e, "test", "{\"count\": \"c\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "n"), 6);
	bson_destroy(r);
	/* no test commands without enableTestCommands */
	r = run(e, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": \"off\"}", &rc);
	TT_EQ_INT(rc, 59);
	bson_destroy(r);
	engine_close(e);

	/* another set name: the stored configuration is not ours */
	e = open_engine(dir, "other", false);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_ASSERT(tt_get(r, "isreplicaset", &it));
	bson_destroy(r);
	engine_close(e);
	tt_rmdir(dir);
	bson_free(dir);
}

static void
test_engine_standalone(void)
{
	char *dir = tt_tmpdir("standalone");
	engine_t *e = open_engine(dir, NULL, false);
	bson_t *r;
	bson_iter_t it;
	int rc;

	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!tt_get(r, "setName", &it));
	TT_ASSERT(!tt_get(r, "$clusterTime", &it));
	TT_ASSERT(tt_get(r, "isWritablePrimary", &it) && bson_iter_as_bool(&it));
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}], \"writeConcern\": {\"w\": 50}}", &rc);
	TT_EQ_INT(rc, 2);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "cannot use 'w' > 1 when a host is not replicated");
	bson_destroy(r);
	r = run(e, "test", "{\"count\": \"c\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "n"), 0);   /* nothing applied */
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}], \"writeConcern\": {\"w\": \"majority\", \"j\": true}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"level\": \"unknown\"}}", &rc);
	TT_EQ_INT(rc, 2);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Enumeration value 'unknown' for field 'readConcern.level' is not a valid value.");
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"level\": \"snapshot\"}}", &rc);
	TT_EQ_INT(rc, 123);
	bson_destroy(r);
	r = run(e, "test", "{\"find\": \"c\", \"readConcern\": {\"level\": \"majority\"}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 76);
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetGetStatus\": 1}", &rc);
	TT_EQ_INT(rc, 76);
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 2}], \"txnNumber\": 1}", &rc);
	TT_EQ_INT(rc, 20);   /* a standalone refuses transactions exactly as before */
	bson_destroy(r);
	engine_close(e);
	tt_rmdir(dir);
	bson_free(dir);
}

/* --auth: $clusterTime is signed with a key from admin.system.keys; a
 * gossiped time ahead of the clock must carry a valid signature. */
static void
test_cluster_time_signed(void)
{
	char *dir = tt_tmpdir("rskeys");
	engine_t *e = open_engine_auth(dir, "rs0", false, true);
	bson_t *r;
	bson_iter_t it;
	int rc;
	int64_t key_id;
	uint32_t s, i;
	const uint8_t *hash;
	uint32_t hlen;
	bson_subtype_t st;
	uint8_t good[20];
	char *json;

	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	key_id = tt_get_i64(r, "$clusterTime.signature.keyId");
	TT_ASSERT(key_id != 0);
	TT_ASSERT(tt_get(r, "$clusterTime.signature.hash", &it) && BSON_ITER_HOLDS_BINARY(&it));
	bson_iter_binary(&it, &st, &hlen, &hash);
	TT_EQ_INT(hlen, 20);
	memcpy(good, hash, 20);
	TT_ASSERT(tt_get(r, "$clusterTime.clusterTime", &it));
	bson_iter_timestamp(&it, &s, &i);
	bson_destroy(r);
	/* the same time gossiped back with its signature: fine (not ahead) */
	/* a time ahead with a wrong hash: 204; with an unknown key: 211;
	 * with the dummy signature: 210 */
	{
		static const char *const cases[][2] = {
			{"\"keyId\": %lld, \"hash\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAE=\", \"subType\": \"00\"}}", "204"},
			{"\"keyId\": 12345, \"hash\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAE=\", \"subType\": \"00\"}}", "211"},
			{"\"keyId\": 0, \"hash\": {\"$binary\": {\"base64\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\", \"subType\": \"00\"}}", "210"},
		};
		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			char sig[512];
			snprintf(sig, sizeof(sig), cases[k][0], (long long)key_id);
			json = bson_strdup_printf("{\"ping\": 1, \"$clusterTime\": {\"clusterTime\": {\"$timestamp\": {\"t\": %u, \"i\": 1}}, \"signature\": {%s}}}",
			    s + 1000, sig);
			r = run(e, "admin", json, &rc);
			TT_EQ_INT(rc, atoi(cases[k][1]));
			bson_destroy(r);
			bson_free(json);
		}
	}
	engine_close(e);
	/* the keys are mongod's documents (read without --auth) */
	e = open_engine_auth(dir, "rs0", false, false);
	r = run(e, "admin", "{\"find\": \"system.keys\"}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "cursor.firstBatch.0.purpose"), "HMAC");
	TT_ASSERT(tt_get(r, "cursor.firstBatch.0.expiresAt", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	TT_ASSERT(tt_get(r, "cursor.firstBatch.1._id", &it) && BSON_ITER_HOLDS_INT64(&it));
	{
		/* the signature hello carried is HMAC-SHA1(key, the time as 8
		 * little-endian bytes), as mongod's TimeProofService */
		bool checked = false;
		for (int k = 0; k < 2; k++) {
			char path[64];
			const uint8_t *key;
			uint32_t klen;
			uint8_t msg[8], mac[20];
			unsigned int mlen = 20;
			uint64_t v = ((uint64_t)s << 32) | i;
			snprintf(path, sizeof(path), "cursor.firstBatch.%d._id", k);
			if (tt_get_i64(r, path) != key_id)
				continue;
			snprintf(path, sizeof(path), "cursor.firstBatch.%d.key", k);
			TT_ASSERT(tt_get(r, path, &it) && BSON_ITER_HOLDS_BINARY(&it));
			bson_iter_binary(&it, &st, &klen, &key);
			for (int b = 0; b < 8; b++)
				msg[b] = (uint8_t)(v >> (8 * b));
			HMAC(EVP_sha1(), key, (int)klen, msg, 8, mac, &mlen);
			TT_ASSERT(memcmp(mac, good, 20) == 0);
			checked = true;
		}
		TT_ASSERT(checked);
	}
	bson_destroy(r);
	engine_close(e);
	/* a restart signs with the same key */
	e = open_engine_auth(dir, "rs0", false, true);
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "$clusterTime.signature.keyId"), key_id);
	bson_destroy(r);
	engine_close(e);
	tt_rmdir(dir);
	bson_free(dir);
}

/* A one-member set whose folder holds a Raft log (it ran as a member of
 * several, then was forced or removed down to one): it waits for its Raft
 * server instead of electing itself as the folder opens; a Raft server that
 * cannot start on that log leaves it to the single-member election. */
static void
test_single_on_raft(void)
{
	char *dir = tt_tmpdir("replset-raft1");
	engine_t *e = open_engine(dir, "rs0", false);
	engine_options_t eo;
	terr_t err = TERR_INIT;
	char path[4096];
	bson_t *r;
	bson_iter_t it;
	FILE *f;
	int rc;

	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	engine_close(e);
	snprintf(path, sizeof(path), "%s/raft", dir);
	TT_ASSERT(mkdir(path, 0700) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/raft/open-1", dir);
	f = fopen(path, "w");
	TT_ASSERT(f != NULL);
	fputs("not a Raft segment", f);
	fclose(f);

	memset(&eo, 0, sizeof(eo));
	eo.repl_set_name = "rs0";
	e = NULL;
	TT_EQ_INT(engine_open(dir, &eo, &e, &err), 0);
	/* before its host is known (its Raft server not started): no
	 * single-member election, writes refused */
	r = run(e, "admin", "{\"hello\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "isWritablePrimary", &it) && !bson_iter_as_bool(&it));
	bson_destroy(r);
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}]}", &rc);
	TT_EQ_INT(rc, 10107);
	bson_destroy(r);
	/* its Raft server starts (libraft drops an open segment it cannot
	 * read) and its single voter elects it, or, when it cannot start, the
	 * single member elects itself: PRIMARY either way, soon */
	engine_set_self_host(e, SELF);
	for (int i = 0;; i++) {
		bool primary;
		struct timespec nap = {0, 20 * 1000 * 1000};
		r = run(e, "admin", "{\"hello\": 1}", &rc);
		TT_EQ_INT(rc, 0);
		primary = tt_get(r, "isWritablePrimary", &it) && bson_iter_as_bool(&it);
		bson_destroy(r);
		if (primary)
			break;
		TT_ASSERT(i < 500);
		if (i >= 500)
			break;
		nanosleep(&nap, NULL);
	}
	r = run(e, "test", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1}]}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	engine_close(e);
	tt_rmdir(dir);
	bson_free(dir);
}


/* replSetHeartbeat's arguments and refusals, as mongod's
 * ReplSetHeartbeatArgsV1::initialize and prepareHeartbeatResponseV1
 * (src/commands/cmd_repl_heartbeat.c). */
static int
hb_code(engine_t *e, const char *json, char *msg, size_t len)
{
	int rc;
	bson_t *r = run(e, "admin", json, &rc);

	if (msg != NULL)
		bson_strncpy(msg, rc != 0 && tt_get_str(r, "errmsg") != NULL ? tt_get_str(r, "errmsg") : "", len);
	bson_destroy(r);
	return rc;
}

#define HB_OK "\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"hbv\": 1, \"from\": \"h:1\", \"fromId\": 5, \"term\": 1"

static void
test_heartbeat_args(void)
{
	char *dir = tt_tmpdir("rshb"), *sdir = tt_tmpdir("rshbs");
	engine_t *e = open_engine(dir, "rs0", false), *s = open_engine(sdir, NULL, false);
	char msg[300];
	bson_t *r;
	bson_iter_t it;
	int rc;

	/* a standalone: 76 */
	TT_EQ_INT(hb_code(s, "{" HB_OK "}", msg, sizeof(msg)), 76);
	TT_EQ_STR(msg, "not running using replication");
	/* not initiated yet: answered, configuration version -2, STARTUP */
	r = run(e, "admin", "{" HB_OK "}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "v"), -2);
	TT_EQ_INT(tt_get_i64(r, "state"), 0);
	TT_EQ_STR(tt_get_str(r, "set"), "rs0");
	bson_destroy(r);
	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	{
		int64_t deadline = tm_now_us() + 20 * 1000000;
		do {
			r = run(e, "admin", "{\"hello\": 1}", &rc);
			bool prim = tt_get(r, "isWritablePrimary", &it) && bson_iter_as_bool(&it);
			bson_destroy(r);
			if (prim)
				break;
			usleep(20000);
		} while (tm_now_us() < deadline);
	}
	/* the answer: mongod's field names, the sender's older configuration
	 * handed over */
	r = run(e, "admin", "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 0, \"hbv\": 1, \"from\": \"\", \"term\": 0}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "state"), 1);
	TT_EQ_INT(tt_get_i64(r, "v"), 1);
	TT_ASSERT(tt_get(r, "t", &it));
	TT_EQ_STR(tt_get_str(r, "set"), "rs0");
	TT_ASSERT(tt_get(r, "electionTime", &it) && BSON_ITER_HOLDS_DATE_TIME(&it));
	TT_ASSERT(tt_get(r, "config", &it) && BSON_ITER_HOLDS_DOCUMENT(&it));
	TT_ASSERT(tt_get(r, "opTime.ts", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	TT_ASSERT(tt_get(r, "durableOpTime.ts", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	TT_ASSERT(tt_get(r, "wallTime", &it) && BSON_ITER_HOLDS_DATE_TIME(&it));
	TT_ASSERT(tt_get(r, "durableWallTime", &it) && BSON_ITER_HOLDS_DATE_TIME(&it));
	TT_ASSERT(!tt_get(r, "syncingTo", &it));
	bson_destroy(r);
	r = run(e, "admin", "{" HB_OK ", \"configTerm\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(!tt_get(r, "config", &it));   /* not older: no configuration */
	bson_destroy(r);

	/* argument errors, in mongod's order */
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"hbv\": 1, \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"configVersion\"");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": \"1\", \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "Expected field \"configVersion\" to have numeric type, but found string");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1.5, \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 2);
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"hbv\": 2, \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 40666);
	TT_EQ_STR(msg, "Found invalid value for field hbv: 2");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"checkEmpty\": \"x\", \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 14);
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"term\": 1}", msg, sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"from\"");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"from\": 7, \"term\": 1}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "\"from\" had the wrong type. Expected string, found int");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"from\": \"h:99999\", \"term\": 1}", msg, sizeof(msg)), 9);
	TT_EQ_STR(msg, "Port number 99999 out of range parsing HostAndPort from h:99999");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"from\": \"\"}", msg, sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"term\"");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": 1, \"configVersion\": 1, \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "\"replSetHeartbeat\" had the wrong type. Expected string, found int");
	/* the set's checks */
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs1\", \"configVersion\": 1, \"from\": \"\", \"term\": 1}", msg, sizeof(msg)), 108);
	TT_EQ_STR(msg, "Our set name of rs0 does not match name rs1 reported by remote node");
	TT_EQ_INT(hb_code(e, "{\"replSetHeartbeat\": \"rs0\", \"configVersion\": 1, \"from\": \"h:1\", \"fromId\": 0, \"term\": 1}", msg, sizeof(msg)), 2);
	TT_EQ_STR(msg, "Received heartbeat from member with the same member ID as ourself: 0");
	/* serverStatus({repl: 1}): replicationProgress, this member's entry */
	r = run(e, "admin", "{\"serverStatus\": 1, \"repl\": 1}", &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "repl.replicationProgress.0.host"), SELF);
	TT_EQ_INT(tt_get_i64(r, "repl.replicationProgress.0.memberId"), 0);
	TT_ASSERT(tt_get(r, "repl.replicationProgress.0.lastAppliedOpTime.ts", &it));
	TT_ASSERT(!tt_get(r, "repl.replicationProgress.1", &it));
	bson_destroy(r);
	r = run(e, "admin", "{\"serverStatus\": 1}", &rc);
	TT_ASSERT(!tt_get(r, "repl.replicationProgress", &it));
	bson_destroy(r);
	engine_close(e);
	engine_close(s);
	tt_rmdir(dir);
	tt_rmdir(sdir);
	bson_free(dir);
	bson_free(sdir);
}

/* replSetUpdatePosition's arguments and refusals, as mongod's
 * UpdatePositionArgs::initialize and TopologyCoordinator::setLastOptime
 * (src/commands/cmd_repl_heartbeat.c), on a one-member set (member 0). */
#define UP_OT "{\"ts\": {\"$timestamp\": {\"t\": 5, \"i\": 1}}, \"t\": 1}"
#define UP_WALL "{\"$date\": 5000}"
#define UP_ENTRY(extra) "{\"appliedOpTime\": " UP_OT ", \"appliedWallTime\": " UP_WALL ", \"durableOpTime\": " UP_OT \
	", \"durableWallTime\": " UP_WALL extra "}"

static void
test_update_position_args(void)
{
	char *dir = tt_tmpdir("rsup"), *sdir = tt_tmpdir("rsups");
	engine_t *e = open_engine(dir, "rs0", false), *s = open_engine(sdir, NULL, false);
	char msg[300];
	bson_t *r;
	bson_iter_t it;
	int rc;

	TT_EQ_INT(hb_code(s, "{\"replSetUpdatePosition\": 1, \"optimes\": []}", msg, sizeof(msg)), 76);
	TT_EQ_STR(msg, "not running with --replSet");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": []}", msg, sizeof(msg)), 94);
	TT_EQ_STR(msg, "no replset config has been received");
	r = run(e, "admin", "{\"replSetInitiate\": {}}", &rc);
	TT_EQ_INT(rc, 0);
	bson_destroy(r);
	/* the arguments, in mongod's order */
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1}", msg, sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"optimes\"");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": 1}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "\"optimes\" had the wrong type. Expected array, found int");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [{\"durableOpTime\": " UP_OT "}]}", msg,
	    sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"appliedOpTime\"");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [{\"appliedOpTime\": 3}]}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "\"appliedOpTime\" had the wrong type. Expected object, found int");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [{\"appliedOpTime\": " UP_OT "}]}", msg,
	    sizeof(msg)), 4);
	TT_EQ_STR(msg, "Missing expected field \"appliedWallTime\"");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [{\"appliedOpTime\": " UP_OT ", \"appliedWallTime\": "
	    UP_WALL ", \"durableOpTime\": " UP_OT ", \"durableWallTime\": \"x\"}]}", msg, sizeof(msg)), 14);
	TT_EQ_STR(msg, "\"durableWallTime\" had the wrong type. Expected date, found string");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [" UP_ENTRY(", \"cfgver\": \"1\", \"memberId\": 0")
	    "]}", msg, sizeof(msg)), 14);
	/* the member checks: no memberId (-1), an unknown one, another
	 * configuration version (its own in the reply) */
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [" UP_ENTRY(", \"cfgver\": 1") "]}", msg,
	    sizeof(msg)), 74);
	TT_EQ_STR(msg, "Received replSetUpdatePosition for node with memberId -1 which is negative and therefore invalid");
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [" UP_ENTRY(", \"cfgver\": 1, \"memberId\": 5")
	    "]}", msg, sizeof(msg)), 74);
	TT_EQ_STR(msg, "Received replSetUpdatePosition for node with memberId 5 which doesn't exist in our config");
	r = run(e, "admin", "{\"replSetUpdatePosition\": 1, \"optimes\": [" UP_ENTRY(", \"cfgver\": 7, \"memberId\": 5")
	    "]}", &rc);
	TT_EQ_INT(rc, 93);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "Received replSetUpdatePosition for node with memberId 5 whose config version "
	    "of 7 doesn't match our config version of 1");
	TT_EQ_INT(tt_get_i64(r, "configVersion"), 1);
	bson_destroy(r);
	/* this member's own position is never taken from another; a
	 * handshake is accepted and ignored */
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"optimes\": [" UP_ENTRY(", \"cfgver\": 1, \"memberId\": 0")
	    "]}", msg, sizeof(msg)), 0);
	TT_EQ_INT(hb_code(e, "{\"replSetUpdatePosition\": 1, \"handshake\": {}}", msg, sizeof(msg)), 0);
	r = run(e, "admin", "{\"serverStatus\": 1, \"repl\": 1}", &rc);
	TT_ASSERT(tt_get(r, "repl.replicationProgress.0.lastAppliedOpTime.ts", &it) && BSON_ITER_HOLDS_TIMESTAMP(&it));
	{
		uint32_t t, i;
		bson_iter_timestamp(&it, &t, &i);
		TT_ASSERT(t != 5);   /* its own, not the request's */
	}
	bson_destroy(r);
	engine_close(e);
	engine_close(s);
	tt_rmdir(dir);
	tt_rmdir(sdir);
	bson_free(dir);
	bson_free(sdir);
}

int
main(void)
{
	TT_RUN(test_config_check);
	TT_RUN(test_config_check_order);
	TT_RUN(test_concern_parse);
	TT_RUN(test_failpoint_modes);
	TT_RUN(test_engine_set);
	TT_RUN(test_engine_standalone);
	TT_RUN(test_cluster_time_signed);
	TT_RUN(test_single_on_raft);
	TT_RUN(test_heartbeat_args);
	TT_RUN(test_update_position_args);
	return tt_finish();
}
