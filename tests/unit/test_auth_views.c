/*
 * test_auth_views.c -- authorization on what a command reads and writes,
 * through the real dispatcher (engine_run_command with --auth): a user
 * with readWrite on database A only, and pipelines that reach database B
 * at random depths and places ($lookup in both forms and its sub-pipeline,
 * $graphLookup, $unionWith's sub-pipeline, $facet, $out / $merge targets,
 * keys repeated so the parser and the check could disagree).  Every such
 * pipeline is refused (13, mongod's "not authorized on A to execute command
 * { ..." text) when run directly, when explained, when run on a view, when
 * made into a view, a view of a view, or put into a view by collMod; and
 * allowed once readWrite on B is granted.  Also mongod's fixed rules
 * (jstests/auth/views_authz.js): reading a view needs find on the view
 * only, a user who cannot read a view may define it, create of a view needs
 * createCollection (insert is not enough), collMod of a view under auth
 * needs viewOn and pipeline together (72); $listSessions' privileges (the
 * caller's own sessions need none); and the localhost exception.
 *
 * Authentication itself is test_auth.c's subject: here a client is made
 * "logged in" through the auth layer's per-connection state.
 */
#include "tt.h"

#include "auth/auth.h"
#include "auth/auth_private.h"
#include "commands/commands_private.h"

static engine_t *eng;
static char *dir;

static void
open_engine(bool in_memory)
{
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = in_memory;
	o.auth = true;
	if (dir == NULL)
		dir = tt_tmpdir("authviews");
	if (engine_open(dir, &o, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
}

static void
close_engine(bool remove)
{
	engine_close(eng);
	eng = NULL;
	if (remove) {
		tt_rmdir(dir);
		bson_free(dir);
		dir = NULL;
	}
}

static client_t *
new_client(bool local)
{
	client_info_t info = {0};

	info.connection_id = 9;
	info.remote = local ? "127.0.0.1:5000" : "10.1.2.3:5000";
	info.is_local = local;
	return client_new(eng, &info);
}

/* The connection is authenticated as user@db from now on. */
static void
login_as(client_t *cl, const char *user, const char *db)
{
	auth_client_t *ac = auth_client_get(&cl->auth);

	auth_client_logout(ac);
	ac->user = bson_strdup(user);
	ac->db = bson_strdup(db);
	ac->resolved = false;
}

static char last_msg[512];

/* Run one command (JSON) through the dispatcher; the code (0 = ok) and
 * the message in last_msg. */
static int
run(client_t *cl, const char *db, const char *json)
{
	bson_t *cmd = tt_json(json), reply;
	terr_t err = TERR_INIT;
	bson_iter_t it;
	int rc;

	rc = engine_run_command(eng, cl, db, cmd, &reply, &err);
	last_msg[0] = '\0';
	if (bson_iter_init_find(&it, &reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it))
		snprintf(last_msg, sizeof(last_msg), "%s", bson_iter_utf8(&it, NULL));
	bson_destroy(&reply);
	bson_destroy(cmd);
	terr_clear(&err);
	return rc;
}

static bool
msg_starts(const char *prefix)
{
	return strncmp(last_msg, prefix, strlen(prefix)) == 0;
}

/* A: the user's database (readWrite); B: the one it has nothing on. */
static client_t *
setup(client_t **root_out)
{
	client_t *local = new_client(true), *u;

	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"root\", \"pwd\": \"pw\", \"roles\": [\"root\"]}"), 0);
	login_as(local, "root", "admin");
	TT_EQ_INT(run(local, "A", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"x\": 1}, {\"_id\": 2, \"x\": 2}]}"), 0);
	TT_EQ_INT(run(local, "B", "{\"insert\": \"secret\", \"documents\": [{\"_id\": 1, \"x\": 1, \"s\": \"hidden\"}]}"), 0);
	TT_EQ_INT(run(local, "B", "{\"create\": \"vb\", \"viewOn\": \"secret\", \"pipeline\": []}"), 0);
	/* readWrite has no collMod: a role for the views' collMod */
	TT_EQ_INT(run(local, "admin", "{\"createRole\": \"modA\", \"privileges\": [{\"resource\": {\"db\": \"A\", "
	    "\"collection\": \"\"}, \"actions\": [\"collMod\"]}], \"roles\": []}"), 0);
	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"u\", \"pwd\": \"pw\", \"roles\": [{\"role\": \"readWrite\", "
	    "\"db\": \"A\"}, \"modA\"]}"), 0);
	u = new_client(false);
	login_as(u, "u", "admin");
	*root_out = local;
	return u;
}

/* ---- the random pipelines ----------------------------------------------------------------- */

static unsigned rng = 20261201;

static unsigned
rnd(unsigned n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 16) % n;
}

/* A stage that reads only its input. */
static void
filler(bson_string_t *b)
{
	static const char *const f[] = {
		"{\"$match\": {\"x\": {\"$gte\": 0}}}", "{\"$project\": {\"x\": 1, \"j\": 1, \"g\": 1, \"s\": 1}}",
		"{\"$addFields\": {\"y\": {\"$add\": [\"$x\", 1]}}}", "{\"$limit\": 50}", "{\"$sort\": {\"_id\": 1}}",
		"{\"$lookup\": {\"from\": \"c\", \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"mine\"}}",
	};
	bson_string_append(b, f[rnd(sizeof(f) / sizeof(f[0]))]);
}

/* One stage that reads B directly (no nesting below it). */
static void
foreign_leaf(bson_string_t *b)
{
	static const char *const f[] = {
		"{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"localField\": \"x\", "
		    "\"foreignField\": \"x\", \"as\": \"j\"}}",
		"{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"pipeline\": [{\"$match\": {}}], \"as\": \"j\"}}",
		"{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"vb\"}, \"localField\": \"x\", \"foreignField\": \"x\", "
		    "\"as\": \"j\"}}",
		"{\"$graphLookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"startWith\": \"$x\", "
		    "\"connectFromField\": \"x\", \"connectToField\": \"x\", \"as\": \"g\"}}",
		/* a repeated key: whichever value the stage keeps was checked */
		"{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\", \"db\": \"A\"}, \"localField\": \"x\", "
		    "\"foreignField\": \"x\", \"as\": \"j\"}}",
		"{\"$lookup\": {\"from\": {\"db\": \"A\", \"coll\": \"c\", \"db\": \"B\", \"coll\": \"secret\"}, "
		    "\"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"j\"}}",
		"{\"$lookup\": {\"from\": \"c\", \"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"localField\": \"x\", "
		    "\"foreignField\": \"x\", \"as\": \"j\"}}",
		"{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"vb\"}, \"from\": \"c\", \"localField\": \"x\", "
		    "\"foreignField\": \"x\", \"as\": \"j\"}}",
		"{\"$graphLookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"from\": \"c\", \"startWith\": \"$x\", "
		    "\"connectFromField\": \"x\", \"connectToField\": \"x\", \"as\": \"g\"}}",
	};
	bson_string_append(b, f[rnd(sizeof(f) / sizeof(f[0]))]);
}

static void gen_pipeline(bson_string_t *b, int depth, bool in_facet);

/* One stage holding the foreign read depth levels down (no $facet inside
 * a $facet: the parser refuses it, 40600). */
static void
foreign_stage(bson_string_t *b, int depth, bool in_facet)
{
	unsigned kind;

	if (depth == 0) {
		foreign_leaf(b);
		return;
	}
	while ((kind = rnd(4)) == 2 && in_facet)
		;
	switch (kind) {
	case 0:
		bson_string_append(b, "{\"$lookup\": {\"from\": \"c\", \"let\": {\"v\": \"$x\"}, \"pipeline\": ");
		gen_pipeline(b, depth - 1, in_facet);
		bson_string_append(b, ", \"as\": \"j\"}}");
		break;
	case 1:
		bson_string_append(b, "{\"$unionWith\": {\"coll\": \"c\", \"pipeline\": ");
		gen_pipeline(b, depth - 1, in_facet);
		bson_string_append(b, "}}");
		break;
	case 2:
		bson_string_append(b, "{\"$facet\": {\"plain\": [{\"$match\": {}}], \"deep\": ");
		gen_pipeline(b, depth - 1, true);
		bson_string_append(b, "}}");
		break;
	default:
		/* a sub-pipeline of a $lookup that itself reads B at the top */
		bson_string_append(b, "{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"secret\"}, \"pipeline\": ");
		gen_pipeline(b, depth - 1, in_facet);
		bson_string_append(b, ", \"as\": \"j\"}}");
		break;
	}
}

/* A pipeline with fillers around one stage reading B depth levels down. */
static void
gen_pipeline(bson_string_t *b, int depth, bool in_facet)
{
	int before = (int)rnd(3), after = (int)rnd(3);

	bson_string_append(b, "[");
	for (int i = 0; i < before; i++) {
		filler(b);
		bson_string_append(b, ", ");
	}
	foreign_stage(b, depth, in_facet);
	for (int i = 0; i < after; i++) {
		bson_string_append(b, ", ");
		filler(b);
	}
	bson_string_append(b, "]");
}

/* The ways a pipeline can reach the engine; expect is 13 or 0. */
static void
check_reads(client_t *u, const char *pipe, int i, int expect)
{
	char *cmd;
	int rc;

#define TRY(db, ...) do { \
		cmd = bson_strdup_printf(__VA_ARGS__); \
		rc = run(u, db, cmd); \
		if (rc != expect) \
			fprintf(stderr, "  (%d, wanted %d) %s\n    %s\n", rc, expect, cmd, last_msg); \
		TT_EQ_INT(rc, expect); \
		bson_free(cmd); \
	} while (0)

	TRY("A", "{\"aggregate\": \"c\", \"pipeline\": %s, \"cursor\": {}}", pipe);
	if (expect == 13)
		TT_ASSERT(msg_starts("not authorized on A to execute command { aggregate: \"c\", pipeline: [ "));
	TRY("A", "{\"explain\": {\"aggregate\": \"c\", \"pipeline\": %s, \"cursor\": {}}}", pipe);
	/* a repeated pipeline field: the second one is checked too */
	TRY("A", "{\"aggregate\": \"c\", \"pipeline\": [], \"pipeline\": %s, \"cursor\": {}}", pipe);
	/* a view made of it, a view of a (clean) view made of it, a view
	 * changed into it */
	TRY("A", "{\"create\": \"v%d\", \"viewOn\": \"c\", \"pipeline\": %s}", i, pipe);
	TT_EQ_INT(run(u, "A", cmd = bson_strdup_printf("{\"create\": \"w%d\", \"viewOn\": \"c\", \"pipeline\": []}", i)),
	    0);
	bson_free(cmd);
	TRY("A", "{\"create\": \"x%d\", \"viewOn\": \"w%d\", \"pipeline\": %s}", i, i, pipe);
	TRY("A", "{\"collMod\": \"w%d\", \"viewOn\": \"c\", \"pipeline\": %s}", i, pipe);
	/* read through a (clean) view */
	TRY("A", "{\"aggregate\": \"w%d\", \"pipeline\": %s, \"cursor\": {}}", i, pipe);
	/* and a view of that view */
	TT_EQ_INT(run(u, "A", cmd = bson_strdup_printf("{\"create\": \"ww%d\", \"viewOn\": \"w%d\", \"pipeline\": []}",
	    i, i)), 0);
	bson_free(cmd);
	TRY("A", "{\"aggregate\": \"ww%d\", \"pipeline\": %s, \"cursor\": {}}", i, pipe);
	/* clean up what this round made */
	run(u, "A", cmd = bson_strdup_printf("{\"drop\": \"ww%d\"}", i));
	bson_free(cmd);
	run(u, "A", cmd = bson_strdup_printf("{\"drop\": \"x%d\"}", i));
	bson_free(cmd);
	run(u, "A", cmd = bson_strdup_printf("{\"drop\": \"v%d\"}", i));
	bson_free(cmd);
	run(u, "A", cmd = bson_strdup_printf("{\"drop\": \"w%d\"}", i));
	bson_free(cmd);
#undef TRY
}

/* $out / $merge into B, last stage of a pipeline that may read B too. */
static void
check_writes(client_t *u, int expect)
{
	static const char *const w[] = {
		"{\"$out\": {\"db\": \"B\", \"coll\": \"dst\"}}",
		"{\"$merge\": {\"into\": {\"db\": \"B\", \"coll\": \"dst\"}}}",
		"{\"$merge\": {\"into\": \"mine\", \"into\": {\"db\": \"B\", \"coll\": \"dst\"}}}",
		/* the parser keeps the last target whole: a bare name after
		 * {db: "B", ...} is in A, and every one was checked */
		"{\"$merge\": {\"into\": {\"db\": \"B\", \"coll\": \"dst\"}, \"into\": {\"coll\": \"mine\"}}}",
		"{\"$out\": {\"db\": \"A\", \"coll\": \"mine\", \"db\": \"B\"}}",
	};

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		char *cmd = bson_strdup_printf("{\"aggregate\": \"c\", \"pipeline\": [{\"$match\": {}}, %s], \"cursor\": {}}",
		    w[i]);
		int rc = run(u, "A", cmd);
		if (rc != expect)
			fprintf(stderr, "  (%d, wanted %d) %s\n    %s\n", rc, expect, cmd, last_msg);
		TT_EQ_INT(rc, expect);
		bson_free(cmd);
	}
}

static void
test_random_foreign_namespaces(void)
{
	client_t *root, *u;
	char *pipes[40];
	int n = (int)(sizeof(pipes) / sizeof(pipes[0]));

	open_engine(true);
	u = setup(&root);
	for (int i = 0; i < n; i++) {
		bson_string_t *b = bson_string_new(NULL);
		gen_pipeline(b, (int)rnd(5), false);
		pipes[i] = bson_string_free(b, false);
	}
	/* refused every time, however deep and wherever it is */
	for (int i = 0; i < n; i++)
		check_reads(u, pipes[i], i, 13);
	check_writes(u, 13);
	/* the same pipeline on A alone is fine (the refusal is B's) */
	TT_EQ_INT(run(u, "A", "{\"aggregate\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": \"c\", \"pipeline\": "
	    "[{\"$unionWith\": {\"coll\": \"c\", \"pipeline\": [{\"$facet\": {\"a\": [{\"$lookup\": {\"from\": "
	    "{\"db\": \"A\", \"coll\": \"c\"}, \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"k\"}}]}}]}}], "
	    "\"as\": \"j\"}}], \"cursor\": {}}"), 0);
	/* granted: every one runs */
	TT_EQ_INT(run(root, "admin", "{\"grantRolesToUser\": \"u\", \"roles\": [{\"role\": \"readWrite\", \"db\": \"B\"}]}"), 0);
	for (int i = 0; i < n; i++)
		check_reads(u, pipes[i], i, 0);
	check_writes(u, 0);
	for (int i = 0; i < n; i++)
		bson_free(pipes[i]);
	client_free(u);
	client_free(root);
	close_engine(true);
}

/* mongod's fixed rules around views (jstests/auth/views_authz.js). */
static void
test_view_rules(void)
{
	client_t *root, *u, *r;

	open_engine(true);
	u = setup(&root);
	/* a view an administrator made over B: readable with find on the view
	 * alone, as on mongod (its definition was checked against its maker) */
	TT_EQ_INT(run(root, "A", "{\"create\": \"joined\", \"viewOn\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": "
	    "{\"db\": \"B\", \"coll\": \"secret\"}, \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"j\"}}]}"), 0);
	TT_EQ_INT(run(u, "A", "{\"find\": \"joined\"}"), 0);
	TT_EQ_INT(run(u, "A", "{\"count\": \"joined\"}"), 0);
	TT_EQ_INT(run(u, "A", "{\"distinct\": \"joined\", \"key\": \"x\"}"), 0);
	TT_EQ_INT(run(u, "A", "{\"aggregate\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": \"joined\", "
	    "\"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"k\"}}], \"cursor\": {}}"), 0);
	/* ... and a view of it: nothing the user cannot already read */
	TT_EQ_INT(run(u, "A", "{\"create\": \"derived\", \"viewOn\": \"joined\", \"pipeline\": [{\"$match\": {}}]}"), 0);
	/* B itself stays closed */
	TT_EQ_INT(run(u, "B", "{\"find\": \"secret\"}"), 13);
	TT_EQ_INT(run(u, "A", "{\"create\": \"direct\", \"viewOn\": \"c\", \"pipeline\": [{\"$unionWith\": \"c\"}, "
	    "{\"$lookup\": {\"from\": {\"db\": \"B\", \"coll\": \"vb\"}, \"pipeline\": [], \"as\": \"j\"}}]}"), 13);
	TT_ASSERT(msg_starts("not authorized on A to execute command { create: \"direct\", viewOn: \"c\", pipeline: [ "));

	/* collMod of a view under auth: viewOn and pipeline together */
	TT_EQ_INT(run(u, "A", "{\"create\": \"plain\", \"viewOn\": \"c\", \"pipeline\": []}"), 0);
	TT_EQ_INT(run(u, "A", "{\"collMod\": \"plain\", \"pipeline\": []}"), 72);
	TT_EQ_STR(last_msg, "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled");
	TT_EQ_INT(run(u, "A", "{\"collMod\": \"plain\", \"viewOn\": \"c\"}"), 72);
	TT_EQ_INT(run(u, "A", "{\"collMod\": \"plain\", \"viewOn\": \"c\", \"pipeline\": [{\"$match\": {\"x\": 1}}]}"), 0);

	/* create of a view needs createCollection; insert is enough for a
	 * collection; a user that may not read the view may still define it */
	TT_EQ_INT(run(root, "admin", "{\"createRole\": \"ins\", \"privileges\": [{\"resource\": {\"db\": \"A\", "
	    "\"collection\": \"v1\"}, \"actions\": [\"insert\", \"find\"]}, {\"resource\": {\"db\": \"A\", \"collection\": "
	    "\"blind\"}, \"actions\": [\"createCollection\"]}, {\"resource\": {\"db\": \"A\", \"collection\": \"c\"}, "
	    "\"actions\": [\"find\"]}], \"roles\": []}"), 0);
	TT_EQ_INT(run(root, "admin", "{\"createUser\": \"r\", \"pwd\": \"pw\", \"roles\": [\"ins\"]}"), 0);
	r = new_client(false);
	login_as(r, "r", "admin");
	TT_EQ_INT(run(r, "A", "{\"create\": \"v1\", \"viewOn\": \"c\", \"pipeline\": []}"), 13);
	TT_EQ_INT(run(r, "A", "{\"create\": \"v1\"}"), 0);
	/* capped needs convertToCapped as well (r has createCollection on blind) */
	TT_EQ_INT(run(r, "A", "{\"create\": \"blind\", \"capped\": true, \"size\": 4096}"), 13);
	TT_EQ_INT(run(r, "A", "{\"create\": \"blind\", \"viewOn\": \"c\", \"pipeline\": [{\"$lookup\": {\"from\": "
	    "{\"db\": \"B\", \"coll\": \"secret\"}, \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"j\"}}]}"), 0);
	TT_EQ_INT(run(r, "A", "{\"find\": \"blind\"}"), 13);
	client_free(r);
	client_free(u);
	client_free(root);
	close_engine(true);
}

/* ---- the walk itself on hostile input ------------------------------------------------ */

static const char *const hostile_keys[] = {"from", "db", "coll", "pipeline", "into", "as", "x", "$lookup"};
static const char *const hostile_stages[] = {
	"$lookup", "$graphLookup", "$unionWith", "$facet", "$out", "$merge", "$match", "$collStats",
	"$indexStats", "$currentOp", "$listSessions",
};

static void hostile_value(bson_t *parent, const char *key, int depth);
/* Values left for the document being made (keeps it small however deep). */
static int hostile_budget;

static void
hostile_pipeline(bson_t *parent, const char *key, int depth)
{
	bson_t arr, st;
	char k[16];
	int n = (int)rnd(4);

	if (hostile_budget <= 0)
		n = 0;
	bson_append_array_begin(parent, key, -1, &arr);
	for (int i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%d", i);
		bson_append_document_begin(&arr, k, -1, &st);
		/* now and then more than one stage name in a stage document */
		for (int j = 0; j < 1 + (rnd(8) == 0); j++)
			hostile_value(&st, hostile_stages[rnd(sizeof(hostile_stages) / sizeof(hostile_stages[0]))], depth + 1);
		bson_append_document_end(&arr, &st);
	}
	bson_append_array_end(parent, &arr);
}

static void
hostile_value(bson_t *parent, const char *key, int depth)
{
	bson_t doc;

	switch (depth > 90 || --hostile_budget <= 0 ? rnd(3) : rnd(7)) {
	case 0:
		bson_append_utf8(parent, key, -1, rnd(2) ? "c" : "", -1);
		break;
	case 1:
		bson_append_int64(parent, key, -1, (int64_t)rnd(3) - 1);
		break;
	case 2:
		bson_append_null(parent, key, -1);
		break;
	case 3:
	case 4:
		hostile_pipeline(parent, key, depth + 1);
		break;
	default: {
		int n = (int)rnd(6);
		bson_append_document_begin(parent, key, -1, &doc);
		for (int i = 0; i < n; i++)
			hostile_value(&doc, hostile_keys[rnd(sizeof(hostile_keys) / sizeof(hostile_keys[0]))], depth + 1);
		bson_append_document_end(parent, &doc);
		break;
	}
	}
}

/* pipeline: [{$unionWith: {coll: "c", pipeline: [... levels deep ...]}}] */
static void
nest_union_with(bson_t *parent, int levels)
{
	bson_t arr, st, arg;

	BSON_APPEND_ARRAY_BEGIN(parent, "pipeline", &arr);
	if (levels > 0) {
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &st);
		BSON_APPEND_DOCUMENT_BEGIN(&st, "$unionWith", &arg);
		BSON_APPEND_UTF8(&arg, "coll", "c");
		nest_union_with(&arg, levels - 1);
		bson_append_document_end(&st, &arg);
		bson_append_document_end(&arr, &st);
	}
	bson_append_array_end(parent, &arr);
}

/* Random documents of the shapes the walk looks for, of any type, nested
 * up to 100 deep: no crash, no sanitizer report, every entry well formed;
 * past its bounds (nesting, repeated keys, the number of namespaces) the
 * list is refused, and a refused list is never allowed. */
static void
test_walk_hostile(void)
{
	auth_privset_t all;
	auth_actions_t acts;

	auth_privset_init(&all);
	memset(&acts, 0, sizeof(acts));
	for (int a = 0; a < auth_action_count(); a++)
		auth_actions_add(&acts, a);
	auth_privset_add(&all, AUTH_RES_ANY, NULL, NULL, &acts);
	for (int i = 0; i < 2000; i++) {
		bson_t body = BSON_INITIALIZER;
		auth_nslist_t l;

		BSON_APPEND_UTF8(&body, "aggregate", "c");
		hostile_budget = 300;
		hostile_pipeline(&body, "pipeline", 0);
		if (rnd(4) == 0)
			hostile_pipeline(&body, "pipeline", 0);
		auth_nslist_init(&l);
		auth_aggregate_namespaces(&l, "A", &body);
		for (int j = 0; j < l.n; j++)
			TT_ASSERT(l.v[j].kind == AUTH_RES_CLUSTER || (l.v[j].db != NULL && l.v[j].coll != NULL));
		TT_ASSERT(l.refused || auth_nslist_allowed(&l, &all));
		auth_nslist_destroy(&l);
		/* the same as a view definition */
		auth_nslist_init(&l);
		auth_view_namespaces(&l, "A", &body);
		auth_nslist_destroy(&l);
		bson_destroy(&body);
	}
	/* nesting past the walk's bound (64 pipelines): refused */
	{
		bson_t body = BSON_INITIALIZER;
		auth_nslist_t l;

		BSON_APPEND_UTF8(&body, "aggregate", "c");
		nest_union_with(&body, 70);
		auth_nslist_init(&l);
		auth_aggregate_namespaces(&l, "A", &body);
		TT_ASSERT(l.refused);
		TT_ASSERT(!auth_nslist_allowed(&l, &all));
		auth_nslist_destroy(&l);
		bson_destroy(&body);
		/* within the bound it is walked to the bottom */
		bson_init(&body);
		BSON_APPEND_UTF8(&body, "aggregate", "c");
		nest_union_with(&body, 60);
		auth_nslist_init(&l);
		auth_aggregate_namespaces(&l, "A", &body);
		TT_ASSERT(!l.refused);
		TT_EQ_INT(l.n, 61);
		auth_nslist_destroy(&l);
		bson_destroy(&body);
	}
	/* a key repeated past the bound */
	{
		bson_t body = BSON_INITIALIZER, arr, st, lk, from;
		auth_nslist_t l;

		BSON_APPEND_UTF8(&body, "aggregate", "c");
		BSON_APPEND_ARRAY_BEGIN(&body, "pipeline", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &st);
		BSON_APPEND_DOCUMENT_BEGIN(&st, "$lookup", &lk);
		BSON_APPEND_DOCUMENT_BEGIN(&lk, "from", &from);
		for (int d = 0; d < 17; d++)
			BSON_APPEND_UTF8(&from, "db", d == 16 ? "B" : "A");
		BSON_APPEND_UTF8(&from, "coll", "x");
		bson_append_document_end(&lk, &from);
		bson_append_document_end(&st, &lk);
		bson_append_document_end(&arr, &st);
		bson_append_array_end(&body, &arr);
		auth_nslist_init(&l);
		auth_aggregate_namespaces(&l, "A", &body);
		TT_ASSERT(l.refused);
		auth_nslist_destroy(&l);
		bson_destroy(&body);
	}
	/* more namespaces than the bound */
	{
		bson_t body = BSON_INITIALIZER, arr, st;
		auth_nslist_t l;
		char k[16];

		BSON_APPEND_UTF8(&body, "aggregate", "c");
		BSON_APPEND_ARRAY_BEGIN(&body, "pipeline", &arr);
		for (int d = 0; d < 100001; d++) {
			snprintf(k, sizeof(k), "%d", d);
			BSON_APPEND_DOCUMENT_BEGIN(&arr, k, &st);
			BSON_APPEND_UTF8(&st, "$unionWith", "c");
			bson_append_document_end(&arr, &st);
		}
		bson_append_array_end(&body, &arr);
		auth_nslist_init(&l);
		auth_aggregate_namespaces(&l, "A", &body);
		TT_ASSERT(l.refused);
		auth_nslist_destroy(&l);
		bson_destroy(&body);
	}
	auth_privset_destroy(&all);
}

/* The names listDatabases answers with on connection cl. */
static void
list_names(client_t *cl, const char *json, char *out, size_t len)
{
	bson_t *cmd = tt_json(json), reply;
	terr_t err = TERR_INIT;
	bson_iter_t it, el, f;

	out[0] = '\0';
	TT_EQ_INT(engine_run_command(eng, cl, "admin", cmd, &reply, &err), 0);
	terr_clear(&err);
	if (bson_iter_init_find(&it, &reply, "databases") && bson_iter_recurse(&it, &el))
		while (bson_iter_next(&el))
			if (bson_iter_recurse(&el, &f) && bson_iter_find(&f, "name"))
				snprintf(out + strlen(out), len - strlen(out), "%s ", bson_iter_utf8(&f, NULL));
	bson_destroy(&reply);
	bson_destroy(cmd);
}

/* listDatabases and authorizedDatabases as mongod: without the action a
 * user sees the databases it holds privileges on; authorizedDatabases:
 * false asks for all and needs the action (13 otherwise); true filters
 * even a user who has it. */
static void
test_list_databases(void)
{
	client_t *root, *u, *l;
	char names[256];

	open_engine(true);
	u = setup(&root);
	list_names(u, "{\"listDatabases\": 1}", names, sizeof(names));
	TT_EQ_STR(names, "A ");
	list_names(u, "{\"listDatabases\": 1, \"authorizedDatabases\": true}", names, sizeof(names));
	TT_EQ_STR(names, "A ");
	TT_EQ_INT(run(u, "admin", "{\"listDatabases\": 1, \"authorizedDatabases\": false}"), 13);
	TT_EQ_STR(last_msg, "Insufficient permissions to list all databases");
	list_names(root, "{\"listDatabases\": 1, \"authorizedDatabases\": false}", names, sizeof(names));
	TT_ASSERT(strstr(names, "A ") != NULL && strstr(names, "B ") != NULL && strstr(names, "admin ") != NULL);
	TT_EQ_INT(run(root, "admin", "{\"createRole\": \"lister\", \"privileges\": [{\"resource\": {\"cluster\": true}, "
	    "\"actions\": [\"listDatabases\"]}], \"roles\": []}"), 0);
	TT_EQ_INT(run(root, "admin", "{\"createUser\": \"l\", \"pwd\": \"pw\", \"roles\": [\"lister\", {\"role\": \"read\", "
	    "\"db\": \"B\"}]}"), 0);
	l = new_client(false);
	login_as(l, "l", "admin");
	list_names(l, "{\"listDatabases\": 1}", names, sizeof(names));
	TT_ASSERT(strstr(names, "A ") != NULL && strstr(names, "B ") != NULL);
	list_names(l, "{\"listDatabases\": 1, \"authorizedDatabases\": true}", names, sizeof(names));
	TT_EQ_STR(names, "B ");
	client_free(l);
	client_free(u);
	client_free(root);
	close_engine(true);
}

/* Flags repeated with different values: the check takes the one that
 * needs more (bypassDocumentValidation, upsert, remove) or refuses the
 * relaxation unless every occurrence asks for it (authorizedCollections). */
static void
test_repeated_flags(void)
{
	client_t *root, *u, *f;

	open_engine(true);
	u = setup(&root);
	TT_EQ_INT(run(u, "A", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9}], \"bypassDocumentValidation\": true}"), 13);
	TT_EQ_INT(run(u, "A", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9}], \"bypassDocumentValidation\": false, "
	    "\"bypassDocumentValidation\": true}"), 13);
	TT_EQ_INT(run(u, "A", "{\"aggregate\": \"c\", \"pipeline\": [{\"$out\": \"o\"}], \"cursor\": {}, "
	    "\"bypassDocumentValidation\": false, \"bypassDocumentValidation\": true}"), 13);
	TT_EQ_INT(run(u, "A", "{\"insert\": \"c\", \"documents\": [{\"_id\": 9}], \"bypassDocumentValidation\": false}"), 0);
	TT_EQ_INT(run(root, "admin", "{\"createRole\": \"upd\", \"privileges\": [{\"resource\": {\"db\": \"A\", "
	    "\"collection\": \"c\"}, \"actions\": [\"find\", \"update\"]}], \"roles\": []}"), 0);
	TT_EQ_INT(run(root, "admin", "{\"createUser\": \"f\", \"pwd\": \"pw\", \"roles\": [\"upd\"]}"), 0);
	f = new_client(false);
	login_as(f, "f", "admin");
	TT_EQ_INT(run(f, "A", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 9}, \"update\": {\"$set\": {\"y\": 1}}}"), 0);
	TT_EQ_INT(run(f, "A", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 9}, \"remove\": true}"), 13);
	TT_EQ_INT(run(f, "A", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 9}, \"remove\": false, \"remove\": true}"), 13);
	TT_EQ_INT(run(f, "A", "{\"findAndModify\": \"c\", \"query\": {\"_id\": 9}, \"update\": {\"$set\": {\"y\": 2}}, "
	    "\"upsert\": false, \"upsert\": true}"), 13);
	TT_EQ_INT(run(f, "A", "{\"update\": \"c\", \"updates\": [{\"q\": {\"_id\": 7}, \"u\": {\"$set\": {\"y\": 1}}, "
	    "\"upsert\": false, \"upsert\": true}]}"), 13);
	/* listCollections without the action: only authorizedCollections and
	 * nameOnly both true, every time they appear */
	TT_EQ_INT(run(f, "A", "{\"listCollections\": 1, \"authorizedCollections\": true, \"nameOnly\": true}"), 0);
	TT_EQ_INT(run(f, "A", "{\"listCollections\": 1, \"authorizedCollections\": false, \"authorizedCollections\": true, "
	    "\"nameOnly\": true}"), 13);
	TT_EQ_INT(run(f, "A", "{\"listCollections\": 1, \"authorizedCollections\": true, \"nameOnly\": true, "
	    "\"nameOnly\": false}"), 13);
	/* a collectionless aggregate reaches B as well as any other */
	TT_EQ_INT(run(u, "A", "{\"aggregate\": 1, \"pipeline\": [{\"$documents\": [{\"x\": 1}]}, {\"$lookup\": {\"from\": "
	    "{\"db\": \"B\", \"coll\": \"secret\"}, \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"j\"}}], "
	    "\"cursor\": {}}"), 13);
	TT_EQ_INT(run(u, "A", "{\"aggregate\": 1, \"pipeline\": [{\"$documents\": [{\"x\": 1}]}, {\"$lookup\": {\"from\": "
	    "\"c\", \"localField\": \"x\", \"foreignField\": \"x\", \"as\": \"j\"}}], \"cursor\": {}}"), 0);
	client_free(f);
	client_free(u);
	client_free(root);
	close_engine(true);
}

/* $listSessions / $listLocalSessions (mongod's listSessionsRequiredPrivileges):
 * the caller's own sessions need nothing, not even find on
 * config.system.sessions; allUsers or another user's name needs listSessions
 * on the cluster, whichever occurrence of a repeated field says so; a spec
 * the stage refuses answers the stage's error. */
static void
test_list_sessions(void)
{
	client_t *root, *u;
	static const char *const own[] = {
		"{}", "{\"allUsers\": false}", "{\"users\": [{\"user\": \"u\", \"db\": \"admin\"}]}",
		"{\"users\": [{\"db\": \"admin\", \"user\": \"u\"}, {\"user\": \"u\", \"db\": \"admin\"}]}",
	};
	static const char *const others[] = {
		"{\"allUsers\": true}", "{\"allUsers\": false, \"allUsers\": true}",
		"{\"users\": [{\"user\": \"root\", \"db\": \"admin\"}]}",
		"{\"users\": [{\"user\": \"u\", \"db\": \"A\"}]}",
		"{\"users\": [{\"user\": \"u\", \"db\": \"admin\"}, {\"user\": \"root\", \"db\": \"admin\"}]}",
		"{\"users\": [{\"user\": \"u\", \"db\": \"admin\"}], \"users\": [{\"user\": \"x\", \"db\": \"admin\"}]}",
		"{\"users\": [{\"user\": \"u\", \"user\": \"root\", \"db\": \"admin\"}]}",
	};
	char cmd[512];

	open_engine(true);
	u = setup(&root);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		snprintf(cmd, sizeof(cmd), "{\"aggregate\": \"system.sessions\", \"pipeline\": [{\"$listSessions\": %s}], "
		    "\"cursor\": {}}", own[i]);
		TT_EQ_INT(run(u, "config", cmd), 0);
		snprintf(cmd, sizeof(cmd), "{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": %s}], "
		    "\"cursor\": {}}", own[i]);
		TT_EQ_INT(run(u, "admin", cmd), 0);
	}
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		snprintf(cmd, sizeof(cmd), "{\"aggregate\": \"system.sessions\", \"pipeline\": [{\"$listSessions\": %s}], "
		    "\"cursor\": {}}", others[i]);
		TT_EQ_INT(run(u, "config", cmd), 13);
		TT_EQ_INT(run(root, "config", cmd), 0);
		snprintf(cmd, sizeof(cmd), "{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": %s}], "
		    "\"cursor\": {}}", others[i]);
		TT_EQ_INT(run(u, "admin", cmd), 13);
		TT_EQ_INT(run(root, "admin", cmd), 0);
	}
	/* the stage's own errors come first, as mongod's lite parse */
	TT_EQ_INT(run(u, "config", "{\"aggregate\": \"system.sessions\", \"pipeline\": [{\"$listSessions\": "
	    "{\"allUsers\": 1}}], \"cursor\": {}}"), 14);
	TT_EQ_INT(run(u, "config", "{\"aggregate\": \"system.sessions\", \"pipeline\": [{\"$listSessions\": "
	    "{\"users\": [{\"user\": \"root\"}]}}], \"cursor\": {}}"), 40414);
	/* reading the collection itself still needs find on it */
	TT_EQ_INT(run(u, "config", "{\"aggregate\": \"system.sessions\", \"pipeline\": [{\"$match\": {}}], "
	    "\"cursor\": {}}"), 13);
	client_free(u);
	client_free(root);
	close_engine(true);
}

/* With --auth and no user yet: a loopback client may create the first
 * user (and run what needs no authentication); listDatabases answers, as
 * mongod's, with only the databases the (empty) privileges show: none;
 * everything else is refused with 13.  A remote client gets nothing. */
static void
test_localhost_exception(void)
{
	client_t *local, *remote;
	terr_t err = TERR_INIT;
	engine_options_t o;
	bson_t *cmd, reply;
	bson_iter_t it, el;

	/* a database with data, written before auth was turned on */
	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	dir = tt_tmpdir("authviews");
	TT_EQ_INT(engine_open(dir, &o, &eng, &err), 0);
	local = new_client(true);
	TT_EQ_INT(run(local, "shop", "{\"insert\": \"orders\", \"documents\": [{\"_id\": 1}]}"), 0);
	client_free(local);
	close_engine(false);
	open_engine(false);
	local = new_client(true);
	remote = new_client(false);

	cmd = tt_json("{\"listDatabases\": 1}");
	TT_EQ_INT(engine_run_command(eng, local, "admin", cmd, &reply, &err), 0);
	terr_clear(&err);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "databases") && bson_iter_recurse(&it, &el));
	TT_ASSERT(!bson_iter_next(&el));
	bson_destroy(&reply);
	bson_destroy(cmd);
	TT_EQ_INT(run(local, "admin", "{\"listDatabases\": 1, \"authorizedDatabases\": false}"), 13);
	TT_EQ_STR(last_msg, "Insufficient permissions to list all databases");
	TT_EQ_INT(run(remote, "admin", "{\"listDatabases\": 1}"), 13);
	TT_EQ_STR(last_msg, "Command listDatabases requires authentication");
	TT_EQ_INT(run(local, "admin", "{\"ping\": 1}"), 0);
	TT_EQ_INT(run(local, "admin", "{\"hello\": 1}"), 0);
	TT_EQ_INT(run(local, "admin", "{\"buildInfo\": 1}"), 0);
	TT_EQ_INT(run(local, "admin", "{\"connectionStatus\": 1}"), 0);
	{
		static const char *const refused[][2] = {
			{"shop", "{\"find\": \"orders\"}"},
			{"shop", "{\"insert\": \"orders\", \"documents\": [{\"_id\": 2}]}"},
			{"shop", "{\"listCollections\": 1}"},
			{"shop", "{\"dbStats\": 1}"},
			{"shop", "{\"aggregate\": \"orders\", \"pipeline\": [], \"cursor\": {}}"},
			{"admin", "{\"serverStatus\": 1}"},
			{"admin", "{\"usersInfo\": 1}"},
			{"admin", "{\"getParameter\": \"*\"}"},
			{"shop", "{\"createUser\": \"x\", \"pwd\": \"p\", \"roles\": []}"},
			{"admin", "{\"createUser\": \"x\", \"pwd\": \"p\", \"roles\": [{\"role\": \"read\", \"db\": \"shop\"}]}"},
		};
		for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			char want[128];
			TT_EQ_INT(run(local, refused[i][0], refused[i][1]), 13);
			snprintf(want, sizeof(want), "not authorized on %s to execute command { ", refused[i][0]);
			TT_ASSERT(msg_starts(want));
		}
	}
	TT_EQ_INT(run(local, "admin", "{\"createUser\": \"root\", \"pwd\": \"pw\", \"roles\": [\"root\"]}"), 0);
	/* the exception ends with the first user */
	TT_EQ_INT(run(local, "admin", "{\"listDatabases\": 1}"), 13);
	TT_EQ_STR(last_msg, "Command listDatabases requires authentication");
	client_free(local);
	client_free(remote);
	close_engine(true);
}

int
main(void)
{
	TT_RUN(test_random_foreign_namespaces);
	TT_RUN(test_walk_hostile);
	TT_RUN(test_view_rules);
	TT_RUN(test_repeated_flags);
	TT_RUN(test_list_sessions);
	TT_RUN(test_list_databases);
	TT_RUN(test_localhost_exception);
	return tt_finish();
}
