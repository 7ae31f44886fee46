/*
 * bench_repl.c -- what replica-set mode costs, and multi-document
 * transactions against PostgreSQL's, through tamgad and the MongoDB C driver
 * (libmongoc) in one run.  bench/run.sh starts a standalone tamgad
 * (TAMGA_URI), a `--replSet rs0` tamgad (TAMGA_RS_URI; this program initiates
 * it when it is not yet) and PostgreSQL 15 (BENCH_PG).  N = $BENCH_N.
 *
 * Cases (issue 16's targets):
 *   repl_insert_single     single-document inserts (insertOne, the driver's
 *                          defaults: retryable writes on the replica set) on
 *                          one connection, replica set vs standalone, docs/s
 *   repl_inc_by_id         updateOne({_id}, {$inc}) of random documents of a
 *                          preloaded collection, replica set vs standalone
 *   txn_insert10_<c>       at 1, 8 and 64 connections: one transaction of 10
 *                          inserts (startTransaction, 10 insertOne,
 *                          commitTransaction) on the replica set, against
 *                          BEGIN; 10 INSERTs; COMMIT through libpq (prepared,
 *                          synchronous_commit=off as tamgad's default
 *                          acknowledgement without j: true), transactions/s
 * Each side runs three rounds alternating with the other, the best round
 * counting, and stops at its operation count or $BENCH_SECONDS (default 10
 * over the three rounds).  Nothing is asserted: numbers are printed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "benchrepl"
#define NA -1.0
#define ROUNDS 3

typedef enum { SIDE_STANDALONE, SIDE_RS, SIDE_PG } side_t;
typedef enum { OP_INSERT1, OP_INC, OP_TXN10 } op_t;

static mongoc_client_pool_t *pool_sa, *pool_rs;
static char sa_why[300], rs_why[300], pg_why[300];
static double max_seconds = 10;
static atomic_llong next_id; /* inserts write fresh _ids on every side */

typedef struct job {
	op_t op;
	side_t side;
	int threads;
	int64_t ops;              /* per thread */
	int64_t keys;             /* OP_INC picks _id in [0, keys) */
	double deadline;
	pthread_barrier_t start;
	atomic_llong done;
} job_t;

typedef struct worker {
	job_t *job;
	int index;
} worker_t;

/* ---- the two tamgads --------------------------------------------------- */

static void
mongo_thread(job_t *j, int index)
{
	mongoc_client_pool_t *p = j->side == SIDE_RS ? pool_rs : pool_sa;
	mongoc_client_t *client = mongoc_client_pool_pop(p);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, DB, j->op == OP_INC ? "inc" : "ins");
	bson_error_t err;
	rng_t rg;
	int64_t i, k;

	rnd_reset(&rg, 77 + (uint64_t)index);
	pthread_barrier_wait(&j->start);
	for (i = 0; i < j->ops && now() < j->deadline; i++) {
		if (j->op == OP_INSERT1) {
			bson_t doc;
			make_doc(&doc, atomic_fetch_add(&next_id, 1));
			if (!mongoc_collection_insert_one(coll, &doc, NULL, NULL, &err))
				die("tamgad insertOne", err.message);
			bson_destroy(&doc);
		} else if (j->op == OP_INC) {
			bson_t *q = BCON_NEW("_id", BCON_INT64(rnd(&rg, j->keys)));
			bson_t *u = BCON_NEW("$inc", "{", "rating", BCON_INT32(1), "}");
			bson_t reply;
			if (!mongoc_collection_update_one(coll, q, u, NULL, &reply, &err))
				die("tamgad $inc", err.message);
			bson_destroy(&reply);
			bson_destroy(q);
			bson_destroy(u);
		} else {
			mongoc_client_session_t *cs = mongoc_client_start_session(client, NULL, &err);
			bson_t opts = BSON_INITIALIZER;
			if (cs == NULL)
				die("tamgad startSession", err.message);
			if (!mongoc_client_session_append(cs, &opts, &err))
				die("tamgad session", err.message);
			if (!mongoc_client_session_start_transaction(cs, NULL, &err))
				die("tamgad startTransaction", err.message);
			for (k = 0; k < 10; k++) {
				bson_t doc;
				make_doc(&doc, atomic_fetch_add(&next_id, 1));
				if (!mongoc_collection_insert_one(coll, &doc, &opts, NULL, &err))
					die("tamgad insert in a transaction", err.message);
				bson_destroy(&doc);
			}
			if (!mongoc_client_session_commit_transaction(cs, NULL, &err))
				die("tamgad commitTransaction", err.message);
			bson_destroy(&opts);
			mongoc_client_session_destroy(cs);
		}
		atomic_fetch_add(&j->done, 1);
	}
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(p, client);
}

/* ---- PostgreSQL ---------------------------------------------------------- */

static void
pg_thread(job_t *j, int index)
{
	char why[300], idbuf[32], json[600];
	const char *params[2] = {idbuf, json};
	PGconn *c = pg_connect(why, sizeof(why));
	PGresult *r;
	int64_t i, k, id;

	(void)index;
	if (c == NULL)
		die("postgresql connect", why);
	r = pg_check(c, PQprepare(c, "ins", "INSERT INTO txn10 (id, doc) VALUES ($1, $2::jsonb)", 2, NULL),
	    "postgresql prepare");
	PQclear(r);
	pthread_barrier_wait(&j->start);
	for (i = 0; i < j->ops && now() < j->deadline; i++) {
		PQclear(pg_check(c, PQexec(c, "BEGIN"), "postgresql BEGIN"));
		for (k = 0; k < 10; k++) {
			id = atomic_fetch_add(&next_id, 1);
			snprintf(idbuf, sizeof(idbuf), "%lld", (long long)id);
			make_json(json, sizeof(json), id);
			PQclear(pg_check(c, PQexecPrepared(c, "ins", 2, params, NULL, NULL, 0), "postgresql INSERT"));
		}
		PQclear(pg_check(c, PQexec(c, "COMMIT"), "postgresql COMMIT"));
		atomic_fetch_add(&j->done, 1);
	}
	PQfinish(c);
}

static void *
worker_main(void *arg)
{
	worker_t *w = arg;

	if (w->job->side == SIDE_PG)
		pg_thread(w->job, w->index);
	else
		mongo_thread(w->job, w->index);
	return NULL;
}

/* One round of one side: operations per second. */
static double
run_round(op_t op, side_t side, int threads, int64_t ops, int64_t keys, double seconds)
{
	job_t *j = tm_alloc0(sizeof(*j));
	pthread_t tid[64];
	worker_t w[64];
	double t0, rate;
	int i;

	j->op = op;
	j->side = side;
	j->threads = threads;
	j->ops = ops / threads > 0 ? ops / threads : 1;
	j->keys = keys;
	atomic_init(&j->done, 0);
	pthread_barrier_init(&j->start, NULL, (unsigned)threads + 1);
	j->deadline = now() + 3600;
	for (i = 0; i < threads; i++) {
		w[i].job = j;
		w[i].index = i;
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0)
			die("pthread_create", "");
	}
	pthread_barrier_wait(&j->start);
	t0 = now();
	j->deadline = t0 + seconds;
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	rate = (double)atomic_load(&j->done) / (now() - t0);
	pthread_barrier_destroy(&j->start);
	bson_free(j);
	return rate;
}

/* ROUNDS rounds alternating sides a and b (a first in odd rounds); the best
 * round of each. */
static void
best_of(op_t op, side_t a, bool have_a, side_t b, bool have_b, int threads, int64_t ops, int64_t keys,
        double *ra, double *rb)
{
	int r, s;
	double x;

	for (r = 0; r < ROUNDS; r++)
		for (s = 0; s < 2; s++) {
			bool first = (s + r) % 2 == 0;
			side_t side = first ? a : b;
			if (!(first ? have_a : have_b))
				continue;
			x = run_round(op, side, threads, ops / ROUNDS, keys, max_seconds / ROUNDS);
			if (first && x > *ra)
				*ra = x;
			if (!first && x > *rb)
				*rb = x;
		}
}

/* ---- setup --------------------------------------------------------------- */

static bool
command_ok(mongoc_client_t *client, const char *db, bson_t *cmd, bson_t *reply, bson_error_t *err)
{
	bool ok = mongoc_client_command_simple(client, db, cmd, NULL, reply, err);
	bson_destroy(cmd);
	return ok;
}

/* The replica-set tamgad: initiate it when hello shows no set yet, then wait
 * until it is writable (30 s at most). */
static bool
rs_initiate(const char *uri, char *why, size_t why_size)
{
	char full[600];
	mongoc_client_t *client;
	bson_error_t err;
	bson_t reply;
	bson_iter_t it;
	int tries;
	bool ok = false;

	snprintf(full, sizeof(full), "%s/?directConnection=true&serverSelectionTimeoutMS=5000", uri);
	if ((client = mongoc_client_new(full)) == NULL) {
		snprintf(why, why_size, "bad URI %s", full);
		return false;
	}
	for (tries = 0; tries < 300; tries++) {
		if (!command_ok(client, "admin", BCON_NEW("hello", BCON_INT32(1)), &reply, &err)) {
			snprintf(why, why_size, "hello failed: %s", err.message);
			break;
		}
		if (bson_iter_init_find(&it, &reply, "isWritablePrimary") && bson_iter_as_bool(&it)) {
			bson_destroy(&reply);
			ok = true;
			break;
		}
		if (!bson_iter_init_find(&it, &reply, "setName")) {
			bson_t r2;
			if (!command_ok(client, "admin", BCON_NEW("replSetInitiate", "{", "}"), &r2, &err) &&
			    err.code != 23 /* AlreadyInitialized */) {
				snprintf(why, why_size, "replSetInitiate failed: %s", err.message);
				bson_destroy(&r2);
				bson_destroy(&reply);
				break;
			}
			bson_destroy(&r2);
		}
		bson_destroy(&reply);
		usleep(100000);
	}
	if (!ok && why[0] == '\0')
		snprintf(why, why_size, "the replica set did not become writable");
	mongoc_client_destroy(client);
	return ok;
}

static mongoc_client_pool_t *
pool_up(const char *env, bool rs, char *why, size_t why_size)
{
	const char *uri = getenv(env);
	char full[600];
	mongoc_uri_t *u;
	mongoc_client_pool_t *p;
	mongoc_client_t *client;
	bson_error_t err;
	bson_t reply;

	if (uri == NULL || uri[0] == '\0') {
		snprintf(why, why_size, "%s not set: tamgad was not started", env);
		return NULL;
	}
	if (rs && !rs_initiate(uri, why, why_size))
		return NULL;
	snprintf(full, sizeof(full), "%s/?serverSelectionTimeoutMS=5000&maxPoolSize=100%s", uri,
	    rs ? "&replicaSet=rs0" : "");
	if ((u = mongoc_uri_new_with_error(full, &err)) == NULL) {
		snprintf(why, why_size, "bad URI %s: %s", full, err.message);
		return NULL;
	}
	p = mongoc_client_pool_new(u);
	mongoc_uri_destroy(u);
	mongoc_client_pool_set_error_api(p, MONGOC_ERROR_API_VERSION_2);
	client = mongoc_client_pool_pop(p);
	if (!command_ok(client, DB, BCON_NEW("dropDatabase", BCON_INT32(1)), &reply, &err)) {
		snprintf(why, why_size, "dropDatabase failed: %s", err.message);
		bson_destroy(&reply);
		mongoc_client_pool_push(p, client);
		mongoc_client_pool_destroy(p);
		return NULL;
	}
	bson_destroy(&reply);
	mongoc_client_pool_push(p, client);
	return p;
}

/* keys documents _id [0, keys) into DB.inc, in batches of 1000. */
static void
load_inc(mongoc_client_pool_t *p, int64_t keys)
{
	mongoc_client_t *client = mongoc_client_pool_pop(p);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, DB, "inc");
	bson_t *docs = tm_bson_array_new(1000);
	const bson_t *ptrs[1000];
	bson_error_t err;
	int64_t i, k, n;

	for (i = 0; i < keys; i += 1000) {
		n = keys - i < 1000 ? keys - i : 1000;
		for (k = 0; k < n; k++) {
			make_doc(&docs[k], i + k);
			ptrs[k] = &docs[k];
		}
		if (!mongoc_collection_insert_many(coll, ptrs, (size_t)n, NULL, NULL, &err))
			die("tamgad load", err.message);
		for (k = 0; k < n; k++)
			bson_destroy(&docs[k]);
	}
	bson_free(docs);
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(p, client);
}

/* The collection a transaction inserts into exists before the clock starts
 * (creating it inside the first transaction is a different case). */
static void
create_coll(mongoc_client_pool_t *p, const char *name)
{
	mongoc_client_t *client = mongoc_client_pool_pop(p);
	bson_error_t err;
	bson_t reply;

	if (!command_ok(client, DB, BCON_NEW("create", BCON_UTF8(name)), &reply, &err) && err.code != 48)
		die("tamgad create", err.message);
	bson_destroy(&reply);
	mongoc_client_pool_push(p, client);
}

static void
print_pair(const char *name, bool have_t, double t, const char *t_why, const char *peer, bool have_p, double p,
           const char *p_why)
{
	if (have_t && have_p)
		report(name, t, peer, p);
	else if (have_t)
		report_peer_na(name, t, peer, p_why);
	else
		report_na(name, t_why, have_p ? peer : NULL, have_p ? p : NA);
}

int
main(int argc, char **argv)
{
	static const int conns[] = {1, 8, 64};
	const char *env = getenv("BENCH_SECONDS");
	bool have_sa, have_rs, have_pg;
	int64_t singles, incs, keys, txns;
	PGconn *pc;
	size_t k;

	(void)argc;
	(void)argv;
	bench_read_n("bench_repl");
	if (env != NULL && atof(env) > 0)
		max_seconds = atof(env);
	singles = N / 20 > 3000 ? N / 20 : 3000;
	incs = singles;
	keys = N / 20 > 10000 ? N / 20 : 10000;
	txns = N / 100 > 1000 ? N / 100 : 1000;
	atomic_init(&next_id, 1000000000LL);
	mongoc_init();
	pool_sa = pool_up("TAMGA_URI", false, sa_why, sizeof(sa_why));
	have_sa = pool_sa != NULL;
	pool_rs = pool_up("TAMGA_RS_URI", true, rs_why, sizeof(rs_why));
	have_rs = pool_rs != NULL;
	pc = pg_connect(pg_why, sizeof(pg_why));
	have_pg = pc != NULL;
	if (have_pg)
		pg_exec(pc, "DROP TABLE IF EXISTS txn10; CREATE TABLE txn10 (id bigint PRIMARY KEY, doc jsonb NOT NULL)");

	{
		double rs = NA, sa = NA;
		best_of(OP_INSERT1, SIDE_RS, have_rs, SIDE_STANDALONE, have_sa, 1, singles, 0, &rs, &sa);
		print_pair("repl_insert_single", have_rs, rs, rs_why, "standalone", have_sa, sa, sa_why);
	}
	{
		double rs = NA, sa = NA;
		if (have_rs)
			load_inc(pool_rs, keys);
		if (have_sa)
			load_inc(pool_sa, keys);
		best_of(OP_INC, SIDE_RS, have_rs, SIDE_STANDALONE, have_sa, 1, incs, keys, &rs, &sa);
		print_pair("repl_inc_by_id", have_rs, rs, rs_why, "standalone", have_sa, sa, sa_why);
	}
	if (have_rs)
		create_coll(pool_rs, "ins");
	for (k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
		char name[64];
		double t = NA, p = NA;
		snprintf(name, sizeof(name), "txn_insert10_%d", conns[k]);
		best_of(OP_TXN10, SIDE_RS, have_rs, SIDE_PG, have_pg, conns[k], txns, 0, &t, &p);
		print_pair(name, have_rs, t, rs_why, "postgresql", have_pg, p, pg_why);
	}
	if (have_pg) {
		pg_exec(pc, "DROP TABLE IF EXISTS txn10");
		PQfinish(pc);
	}
	if (pool_sa != NULL)
		mongoc_client_pool_destroy(pool_sa);
	if (pool_rs != NULL)
		mongoc_client_pool_destroy(pool_rs);
	mongoc_cleanup();
	return 0;
}
