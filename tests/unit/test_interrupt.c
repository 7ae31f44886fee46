/*
 * test_interrupt.c -- maxTimeMS and killOp (common/opctx.h) through the
 * embedded API: the registry's own corners (nesting, stickiness, no
 * operation at all), then a list of slow operations -- expression loops,
 * stages, sorts, scans, writes -- each run with a small maxTimeMS and
 * sampled for its overshoot (at most 10% + 5 ms past the limit, as issue 21
 * asks), then killOp interrupting the same kinds of loop from another thread
 * (11601), currentOp's shape, and getMore's maxTimeMS rules.
 *
 * A sample is timed on the wall clock, so a scheduler pause on a loaded
 * machine can push one run past the bound: each operation gets three tries.
 * When all three miss the wall-clock bound, the thread's CPU time of the
 * best run must meet it instead: a loaded machine stretches wall time, not
 * the work done, while an operation that does not check its deadline burns
 * seconds of CPU every time.
 */
#include "tt.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/opctx.h"
#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

static int64_t
now_us(void)
{
	return tm_now_us();
}

static void
ok(const char *cmd)
{
	int rc;
	bson_t *r = tt_run_sq(db, "it", cmd, &rc);

	if (rc != 0)
		TT_FAIL_("%s -> %s", cmd, tt_get_str(r, "errmsg"));
	tt_free_reply(r);
}

/* ---- the registry itself ------------------------------------------------- */

static void
test_registry_corners(void)
{
	tm_opctx_t a, b;
	terr_t err = TERR_INIT;
	int found = 0;

	/* no operation: never interrupted */
	TT_ASSERT(tm_opctx_current() == NULL);
	TT_EQ_INT(tm_interrupt_check_now(&err), 0);
	tm_opctx_set_deadline(1);   /* nothing to set */
	TT_EQ_INT(tm_opctx_deadline(), 0);

	tm_opctx_begin(&a, &found);
	TT_ASSERT(tm_opctx_current() == &a);
	TT_ASSERT(a.opid > 0);
	for (int i = 0; i < 1000; i++)
		TT_EQ_INT(tm_interrupt_check(&err), 0);
	/* nested: inherits the deadline, restores the outer one at its end */
	tm_opctx_set_deadline(tm_now_us() + 60 * 1000000LL);
	tm_opctx_begin(&b, NULL);
	TT_ASSERT(b.opid != a.opid);
	TT_EQ_INT(tm_opctx_deadline(), a.deadline_us);
	/* a kill of the outer operation reaches the inner one */
	TT_ASSERT(tm_opctx_kill(a.opid));
	TT_EQ_INT(tm_interrupt_check_now(&err), -1);
	TT_EQ_INT(err.code, TERR_INTERRUPTED);
	TT_EQ_STR(err.msg, "operation was interrupted");
	terr_clear(&err);
	/* sticky: the very next check answers again */
	TT_EQ_INT(tm_interrupt_check(&err), -1);
	TT_EQ_INT(err.code, TERR_INTERRUPTED);
	terr_clear(&err);
	tm_opctx_end(&b);
	TT_ASSERT(tm_opctx_current() == &a);
	TT_ASSERT(!tm_opctx_kill(b.opid));  /* gone from the registry */
	tm_opctx_end(&a);
	TT_ASSERT(tm_opctx_current() == NULL);

	/* a deadline in the past: 50 within TM_INTERRUPT_EVERY checks */
	tm_opctx_begin(&a, NULL);
	tm_opctx_set_deadline(tm_now_us() - 1);
	int i;
	for (i = 0; i < 2 * TM_INTERRUPT_EVERY; i++)
		if (tm_interrupt_check(&err) != 0)
			break;
	TT_ASSERT(i <= TM_INTERRUPT_EVERY);
	TT_EQ_INT(err.code, TERR_MAX_TIME_MS_EXPIRED);
	TT_EQ_STR(err.msg, "operation exceeded time limit");
	terr_clear(&err);
	tm_opctx_end(&a);
}

/* The registry is per thread (a slot each): operations of several threads
 * are all listed, oldest first, a kill from another thread reaches its
 * operation, and a thread's exit leaves nothing behind. */
typedef struct {
	tm_opctx_t op;
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	int *step;               /* 1..n: begun, n + 1: end them */
	int n, me, killed_seen;
} reg_thread_t;

static void *
reg_thread_main(void *arg)
{
	reg_thread_t *r = arg;
	terr_t err = TERR_INIT;

	pthread_mutex_lock(r->mu);
	while (*r->step < r->me)          /* begin in turn: start order = index order */
		pthread_cond_wait(r->cv, r->mu);
	tm_opctx_begin(&r->op, r);
	usleep(2000);
	(*r->step)++;
	pthread_cond_broadcast(r->cv);
	while (*r->step <= r->n)
		pthread_cond_wait(r->cv, r->mu);
	pthread_mutex_unlock(r->mu);
	r->killed_seen = tm_interrupt_check_now(&err) != 0 && err.code == TERR_INTERRUPTED;
	terr_clear(&err);
	tm_opctx_end(&r->op);
	return NULL;
}

typedef struct {
	void *owners[8];
	int n;
} reg_list_t;

static void
reg_collect(const tm_opctx_t *op, void *arg)
{
	reg_list_t *l = arg;

	if (l->n < 8)
		l->owners[l->n] = op->owner;
	l->n++;
}

static void
test_registry_threads(void)
{
	enum { N = 3 };
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	int step = 0;
	reg_thread_t r[N];
	pthread_t th[N];
	reg_list_t l = {0};

	for (int i = 0; i < N; i++) {
		r[i] = (reg_thread_t){.mu = &mu, .cv = &cv, .step = &step, .n = N, .me = i};
		pthread_create(&th[i], NULL, reg_thread_main, &r[i]);
	}
	pthread_mutex_lock(&mu);
	while (step < N)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	tm_opctx_foreach(reg_collect, &l);
	TT_EQ_INT(l.n, N);
	for (int i = 0; i < N && i < l.n; i++)
		TT_ASSERT(l.owners[i] == &r[i]);     /* oldest first */
	TT_ASSERT(tm_opctx_kill(r[1].op.opid));
	pthread_mutex_lock(&mu);
	step = N + 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	TT_EQ_INT(r[0].killed_seen, 0);
	TT_EQ_INT(r[1].killed_seen, 1);
	TT_EQ_INT(r[2].killed_seen, 0);
	l.n = 0;
	tm_opctx_foreach(reg_collect, &l);
	TT_EQ_INT(l.n, 0);
	TT_ASSERT(!tm_opctx_kill(r[0].op.opid));
}

/* ---- overshoot over slow operations ------------------------------------- */

/* 3000 elements, not a constant (constant expressions are folded when
 * parsed, and would cost nothing per document) */
#define BIG_RANGE "{'$range': [0, {'$add': [3000, {'$ifNull': ['$nosuch', 0]}]}]}"

/* Slow without a limit (seconds to minutes); %d is where maxTimeMS goes. */
static const struct {
	const char *what;
	const char *cmd;
} slow_ops[] = {
	{"$reduce + $concatArrays",
	 "{'aggregate': 'one', 'pipeline': [{'$project': {'r': {'$size': {'$reduce': {'input': {'$range': [0, 100000]},"
	 " 'initialValue': [], 'in': {'$concatArrays': ['$$value', ['$$this']]}}}}}}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$map over $map",
	 "{'aggregate': 'one', 'pipeline': [{'$project': {'r': {'$map': {'input': {'$range': [0, 100000]}, 'in':"
	 " {'$size': {'$map': {'input': " BIG_RANGE ", 'in': {'$add': ['$$this', 1]}}}}}}}}], 'cursor': {},"
	 " 'maxTimeMS': %d}"},
	{"$filter",
	 "{'aggregate': 'one', 'pipeline': [{'$project': {'r': {'$map': {'input': {'$range': [0, 100000]}, 'in':"
	 " {'$size': {'$filter': {'input': " BIG_RANGE ", 'cond': {'$gt': ['$$this', 5]}}}}}}}}], 'cursor': {},"
	 " 'maxTimeMS': %d}"},
	{"$sortArray / $setUnion",
	 "{'aggregate': 'one', 'pipeline': [{'$project': {'r': {'$map': {'input': {'$range': [0, 100000]}, 'in':"
	 " {'$size': {'$setUnion': [{'$sortArray': {'input': " BIG_RANGE ", 'sortBy': -1}}]}}}}}}], 'cursor': {},"
	 " 'maxTimeMS': %d}"},
	{"$densify",
	 "{'aggregate': 'ends', 'pipeline': [{'$densify': {'field': 'x', 'range': {'step': 1, 'bounds': 'full'}}},"
	 " {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$group",
	 "{'aggregate': 'c', 'pipeline': [{'$group': {'_id': '$_id', 's': {'$sum': {'$size': " BIG_RANGE "}}}}],"
	 " 'cursor': {}, 'maxTimeMS': %d}"},
	{"$sort of an $unwind",
	 "{'aggregate': 'one', 'pipeline': [{'$project': {'a': {'$range': [0, 1000000]}}}, {'$unwind': '$a'},"
	 " {'$project': {'b': {'$size': {'$range': [0, 30]}}, 'a': 1}}, {'$sort': {'a': -1}}], 'cursor': {},"
	 " 'maxTimeMS': %d}"},
	{"$setWindowFields",
	 "{'aggregate': 'c', 'pipeline': [{'$setWindowFields': {'sortBy': {'_id': 1}, 'output': {'p': {'$sum': '$_id',"
	 " 'window': {'documents': [-2000, 'current']}}}}}, {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$lookup",
	 "{'aggregate': 'c', 'pipeline': [{'$lookup': {'from': 'c', 'pipeline': [{'$match': {'$expr': {'$gt': [{'$size':"
	 " {'$range': [0, 300]}}, 0]}}}], 'as': 'j'}}, {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$facet",
	 "{'aggregate': 'c', 'pipeline': [{'$facet': {'a': [{'$group': {'_id': '$_id', 's': {'$sum': {'$size': " BIG_RANGE
	 "}}}}]}}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$unionWith",
	 "{'aggregate': 'one', 'pipeline': [{'$unionWith': {'coll': 'c', 'pipeline': [{'$project': {'s': {'$size': "
	 BIG_RANGE "}}}]}}, {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$bucketAuto",
	 "{'aggregate': 'c', 'pipeline': [{'$bucketAuto': {'groupBy': {'$size': " BIG_RANGE "}, 'buckets': 3}}],"
	 " 'cursor': {}, 'maxTimeMS': %d}"},
	{"$graphLookup",
	 "{'aggregate': 'c', 'pipeline': [{'$graphLookup': {'from': 'c', 'startWith': '$k', 'connectFromField': 'k',"
	 " 'connectToField': '_id', 'as': 'g'}}, {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$fill",
	 "{'aggregate': 'c', 'pipeline': [{'$set': {'v': {'$cond': [{'$eq': [{'$mod': ['$_id', 2]}, 0]}, null,"
	 " {'$size': " BIG_RANGE "}]}}}, {'$fill': {'sortBy': {'_id': 1}, 'output': {'v': {'method': 'linear'}}}},"
	 " {'$count': 'n'}], 'cursor': {}, 'maxTimeMS': %d}"},
	{"$out",
	 "{'aggregate': 'c', 'pipeline': [{'$project': {'s': {'$size': " BIG_RANGE "}}}, {'$out': 'outc'}],"
	 " 'cursor': {}, 'maxTimeMS': %d}"},
	{"$merge",
	 "{'aggregate': 'c', 'pipeline': [{'$project': {'s': {'$size': " BIG_RANGE "}}}, {'$merge': {'into': 'mergec'}}],"
	 " 'cursor': {}, 'maxTimeMS': %d}"},
	{"find with $expr (collection scan)",
	 "{'find': 'c', 'filter': {'$expr': {'$lt': [{'$size': " BIG_RANGE "}, 0]}}, 'maxTimeMS': %d}"},
	{"count with $expr",
	 "{'count': 'c', 'query': {'$expr': {'$lt': [{'$size': " BIG_RANGE "}, 0]}}, 'maxTimeMS': %d}"},
	{"distinct with $expr",
	 "{'distinct': 'c', 'key': 'k', 'query': {'$expr': {'$lt': [{'$size': " BIG_RANGE "}, 0]}}, 'maxTimeMS': %d}"},
	{"update many (pipeline update)",
	 "{'update': 'c', 'updates': [{'q': {}, 'u': [{'$set': {'s': {'$size': " BIG_RANGE "}}}], 'multi': true}],"
	 " 'maxTimeMS': %d}"},
	{"delete scan",
	 "{'delete': 'c', 'deletes': [{'q': {'$expr': {'$lt': [{'$size': " BIG_RANGE "}, 0]}}, 'limit': 0}],"
	 " 'maxTimeMS': %d}"},
};

static void
setup_data(void)
{
	bson_t *cmd = bson_new(), docs;
	bson_t *r;
	int rc;

	BSON_APPEND_UTF8(cmd, "insert", "c");
	bson_append_array_begin(cmd, "documents", -1, &docs);
	for (int i = 0; i < 20000; i++) {
		char k[16];
		const char *key;
		bson_t d;
		bson_uint32_to_string((uint32_t)i, &key, k, sizeof(k));
		bson_append_document_begin(&docs, key, -1, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_INT32(&d, "k", i % 100);
		bson_append_document_end(&docs, &d);
	}
	bson_append_array_end(cmd, &docs);
	r = tt_run_bson(db, "it", cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_destroy(cmd);
	ok("{'insert': 'one', 'documents': [{'_id': 1}]}");
	ok("{'insert': 'ends', 'documents': [{'x': 0}, {'x': 400000}]}");
}

static int64_t
thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One run of cmd with maxTimeMS ms: its elapsed microseconds (wall), its
 * CPU microseconds in *cpu, and its code. */
static int64_t
timed_run(const char *fmt, int ms, int64_t *cpu, int *code)
{
	char cmd[2048];
	int64_t t0, c0;
	bson_t *r;
	int rc;

	snprintf(cmd, sizeof(cmd), fmt, ms);
	t0 = now_us();
	c0 = thread_cpu_us();
	r = tt_run_sq(db, "it", cmd, &rc);
	*cpu = thread_cpu_us() - c0;
	t0 = now_us() - t0;
	*code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	tt_free_reply(r);
	return t0;
}

static void
test_overshoot(void)
{
	const int ms = 60;
	const int64_t bound_us = ms * 1000 + ms * 100 + 5000;   /* 10% + 5 ms */

	for (size_t i = 0; i < sizeof(slow_ops) / sizeof(slow_ops[0]); i++) {
		int64_t best = INT64_MAX, best_cpu = INT64_MAX;
		int code = 0;
		for (int attempt = 0; attempt < 3; attempt++) {
			int64_t cpu, us = timed_run(slow_ops[i].cmd, ms, &cpu, &code);
			if (code != TERR_MAX_TIME_MS_EXPIRED)
				break;
			if (us < best)
				best = us;
			if (cpu < best_cpu)
				best_cpu = cpu;
			if (best <= bound_us)
				break;
		}
		if (code != TERR_MAX_TIME_MS_EXPIRED)
			TT_FAIL_("%s: code %d, want 50", slow_ops[i].what, code);
		else if (best > bound_us && best_cpu > bound_us)
			TT_FAIL_("%s: %lld us (%lld us of CPU) with maxTimeMS %d (bound %lld us)", slow_ops[i].what,
			    (long long)best, (long long)best_cpu, ms, (long long)bound_us);
		else
			printf("  %-34s %6.1f ms wall, %6.1f ms CPU (maxTimeMS %d)\n", slow_ops[i].what, best / 1000.0,
			    best_cpu / 1000.0, ms);
	}
}

/* ---- killOp --------------------------------------------------------------- */

typedef struct victim {
	const char *cmd;
	int code;
	int64_t done_us;
} victim_t;

static void *
victim_main(void *arg)
{
	victim_t *v = arg;
	int rc;
	bson_t *r = tt_run_sq(db, "it", v->cmd, &rc);

	v->code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	v->done_us = now_us();
	tt_free_reply(r);
	return NULL;
}

/* The opid of the running operation whose command has comment tag, or 0;
 * ns is what its currentOp entry must say. */
static int64_t
find_op(const char *tag, const char *ns, const char *opkind)
{
	char cmd[256];
	int rc;
	bson_t *r;
	int64_t id = 0;

	snprintf(cmd, sizeof(cmd), "{'currentOp': 1, 'command.comment': '%s'}", tag);
	r = tt_run_sq(db, "admin", cmd, &rc);
	if (rc == 0) {
		id = tt_get_i64(r, "inprog.0.opid");
		if (id == -999)
			id = 0;
		if (id != 0) {
			TT_EQ_STR(tt_get_str(r, "inprog.0.type"), "op");
			TT_EQ_STR(tt_get_str(r, "inprog.0.ns"), ns);
			TT_EQ_STR(tt_get_str(r, "inprog.0.op"), opkind);
			TT_EQ_STR(tt_get_str(r, "inprog.0.command.comment"), tag);
			TT_ASSERT(tt_get_i64(r, "inprog.0.microsecs_running") >= 0);
			TT_ASSERT(tt_get_i64(r, "inprog.1.opid") == -999);
		}
	}
	tt_free_reply(r);
	return id;
}

/* Run cmd in a thread, find it in currentOp by its comment, kill it: it
 * must end with 11601, promptly. */
static void
kill_one(const char *what, const char *cmd, const char *tag, const char *ns, const char *opkind)
{
	victim_t v = {cmd, -1, 0};
	pthread_t th;
	int64_t id = 0, t_kill;
	char kill[128];
	int rc;
	bson_t *r;

	pthread_create(&th, NULL, victim_main, &v);
	for (int i = 0; i < 5000 && id == 0; i++) {
		id = find_op(tag, ns, opkind);
		if (id == 0)
			usleep(1000);
	}
	if (id <= 0)
		TT_FAIL_("%s: not found in currentOp", what);
	snprintf(kill, sizeof(kill), "{'killOp': 1, 'op': %lld}", (long long)id);
	t_kill = now_us();
	r = tt_run_sq(db, "admin", kill, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	pthread_join(th, NULL);
	if (v.code != TERR_INTERRUPTED)
		TT_FAIL_("%s: code %d after killOp, want 11601", what, v.code);
	if (v.done_us - t_kill >= 2000 * 1000)
		TT_FAIL_("%s: %lld us after killOp", what, (long long)(v.done_us - t_kill));
}

/* killOp reaches every loop of the overshoot list (run without a limit) */
static void
test_kill_each_loop(void)
{
	static const struct {
		const char *cmd, *op;
	} kinds[] = {
		{"aggregate", "command"}, {"find", "query"}, {"count", "command"}, {"distinct", "command"},
		{"update", "update"}, {"delete", "remove"},
	};

	for (size_t i = 0; i < sizeof(slow_ops) / sizeof(slow_ops[0]); i++) {
		char cmd[2048], tag[32], ns[64];
		const char *opkind = "command";
		size_t len;
		bson_t *parsed;
		bson_iter_t it;

		snprintf(cmd, sizeof(cmd), slow_ops[i].cmd, 0);     /* maxTimeMS 0: no limit */
		snprintf(tag, sizeof(tag), "kill-%zu", i);
		len = strlen(cmd);
		snprintf(cmd + len - 1, sizeof(cmd) - len + 1, ", 'comment': '%s'}", tag);
		/* its namespace and currentOp kind, from the command itself */
		{
			char *json = bson_strdup(cmd);
			for (char *p = json; *p; p++)
				if (*p == '\'')
					*p = '"';
			parsed = tt_json(json);
			bson_free(json);
		}
		bson_iter_init(&it, parsed);
		bson_iter_next(&it);
		snprintf(ns, sizeof(ns), "it.%s", bson_iter_utf8(&it, NULL));
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (strcmp(kinds[k].cmd, bson_iter_key(&it)) == 0)
				opkind = kinds[k].op;
		bson_destroy(parsed);
		kill_one(slow_ops[i].what, cmd, tag, ns, opkind);
	}
}

static void
test_kill_op(void)
{
	static const char *const kinds[] = {
		"{'aggregate': 'one', 'pipeline': [{'$project': {'r': {'$size': {'$reduce': {'input': {'$range': [0, 100000]},"
		" 'initialValue': [], 'in': {'$concatArrays': ['$$value', ['$$this']]}}}}}}], 'cursor': {}, 'comment': '%s'}",
		"{'aggregate': 'one', 'pipeline': [{'$project': {'a': {'$range': [0, 1000000]}}}, {'$unwind': '$a'},"
		" {'$project': {'b': {'$size': {'$range': [0, 30]}}, 'a': 1}}, {'$sort': {'a': -1}}], 'cursor': {},"
		" 'comment': '%s'}",
	};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char tag[32], cmd[1024];
		snprintf(tag, sizeof(tag), "victim-%zu", k);
		snprintf(cmd, sizeof(cmd), kinds[k], tag);
		kill_one(tag, cmd, tag, "it.one", "command");
	}

	/* mongod's argument errors; an unknown opid is still "attempting" */
	{
		int rc;
		bson_t *r = tt_run_sq(db, "admin", "{'killOp': 1}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), TERR_NO_SUCH_KEY);
		tt_free_reply(r);
		r = tt_run_sq(db, "admin", "{'killOp': 1, 'op': 'x'}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), TERR_TYPE_MISMATCH);
		tt_free_reply(r);
		r = tt_run_sq(db, "admin", "{'killOp': 1, 'op': 1.5}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), TERR_BAD_VALUE);
		tt_free_reply(r);
		r = tt_run_sq(db, "admin", "{'killOp': 1, 'op': {'$numberLong': '4294967296'}}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), 26823);
		TT_EQ_STR(tt_get_str(r, "errmsg"), "invalid op : 4294967296. Op ID cannot be represented with 32 bits");
		tt_free_reply(r);
		r = tt_run_sq(db, "admin", "{'killOp': 1, 'op': 2147483000}", &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
		r = tt_run_sq(db, "it", "{'killOp': 1, 'op': 1}", &rc);
		TT_EQ_INT(tt_get_i64(r, "code"), TERR_UNAUTHORIZED);
		tt_free_reply(r);
	}
}

/* currentOp lists itself; its filter is a match expression */
static void
test_current_op_self(void)
{
	int rc;
	bson_t *r = tt_run_sq(db, "admin", "{'currentOp': 1, 'command.currentOp': {'$exists': true}}", &rc);

	TT_EQ_INT(rc, 0);
	TT_EQ_STR(tt_get_str(r, "inprog.0.ns"), "admin.$cmd");
	TT_EQ_STR(tt_get_str(r, "inprog.0.desc"), "embedded");
	TT_ASSERT(tt_get(r, "inprog.0.active", &(bson_iter_t){0}));
	TT_ASSERT(tt_get_i64(r, "inprog.1.opid") == -999);
	tt_free_reply(r);
	r = tt_run_sq(db, "admin", "{'currentOp': 1, 'op': 'no such op'}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get_i64(r, "inprog.0.opid") == -999);
	tt_free_reply(r);
	r = tt_run_sq(db, "admin", "{'currentOp': 1, 'op': {'$bad': 1}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), TERR_BAD_VALUE);
	tt_free_reply(r);
}

/* getMore: the find's maxTimeMS is the cursor's whole budget; a getMore of
 * its own may not name one (no cursor here is awaitData) */
static void
test_get_more(void)
{
	int rc;
	bson_t *r = tt_run_sq(db, "it", "{'find': 'c', 'batchSize': 2, 'maxTimeMS': 100000}", &rc);
	int64_t id = tt_get_i64(r, "cursor.id");
	char cmd[256];

	TT_EQ_INT(rc, 0);
	TT_ASSERT(id != 0);
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{'getMore': {'$numberLong': '%lld'}, 'collection': 'c', 'maxTimeMS': 10}",
	    (long long)id);
	r = tt_run_sq(db, "it", cmd, &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), TERR_BAD_VALUE);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "cannot set maxTimeMS on getMore command for a non-awaitData cursor");
	tt_free_reply(r);
	/* the cursor survives the refusal */
	snprintf(cmd, sizeof(cmd), "{'getMore': {'$numberLong': '%lld'}, 'collection': 'c', 'batchSize': 2}",
	    (long long)id);
	r = tt_run_sq(db, "it", cmd, &rc);
	TT_EQ_INT(rc, 0);
	TT_EQ_INT(tt_get_i64(r, "cursor.nextBatch.0._id"), 2);
	tt_free_reply(r);

	/* a filter that is slow per document: the first batch fits in the
	 * budget, the getMore that goes on scanning runs out of it */
	r = tt_run_sq(db, "it", "{'find': 'c', 'filter': {'$expr': {'$gte': [{'$size': " BIG_RANGE "}, 0]}},"
	    " 'batchSize': 1, 'maxTimeMS': 100}", &rc);
	TT_EQ_INT(rc, 0);
	id = tt_get_i64(r, "cursor.id");
	tt_free_reply(r);
	snprintf(cmd, sizeof(cmd), "{'getMore': {'$numberLong': '%lld'}, 'collection': 'c'}", (long long)id);
	r = tt_run_sq(db, "it", cmd, &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), TERR_MAX_TIME_MS_EXPIRED);
	tt_free_reply(r);
}

int
main(void)
{
	dir = tt_tmpdir("interrupt");
	db = tt_open_new(dir);
	if (db == NULL)
		return 1;
	setup_data();
	TT_RUN(test_registry_corners);
	TT_RUN(test_registry_threads);
	TT_RUN(test_current_op_self);
	TT_RUN(test_get_more);
	TT_RUN(test_overshoot);
	TT_RUN(test_kill_op);
	TT_RUN(test_kill_each_loop);
	tt_close_rm(db, dir);
	return tt_finish();
}
