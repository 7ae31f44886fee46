/*
 * bench_wire.c -- Tamga through tamgad and the MongoDB C driver (libmongoc,
 * a client pool, one thread per connection) against PostgreSQL 15 through
 * libpq (one connection per thread), in one run.  bench/run.sh starts both
 * servers and passes TAMGA_URI, TAMGA_SOCKET, BENCH_PG and BENCH_PG_UNIX.
 * N = $BENCH_N (default 1M).
 *
 * Cases (issue in brackets), each at 1, 8 and 64 connections:
 *   wire_insert_many_<c>  [3] N/4 documents (rounded up to 128 000) of 200
 *                         bytes in batches of 1000, in two halves, the sides
 *                         alternating
 *                         (insertMany / one INSERT ... SELECT FROM
 *                         jsonb_array_elements($1) per batch), docs/s
 *   wire_find_id_<c>      [3] find by _id (random keys), ops/s
 *   wire_find_range_<c>   [3] find of 100 documents by an _id range, ops/s
 * and once, on one connection:
 *   wire_find_id_1_unix   find by _id with both sides over their Unix
 *                         domain socket (TAMGA_SOCKET, BENCH_PG_UNIX), an
 *                         extra comparison: the lines above are TCP
 *                         loopback on both sides (TAMGA_URI, BENCH_PG)
 *   wire_find_100k_docs   [4] find {} returning 100 000 documents (fewer when
 *                         N/4 < 100 000), documents/s, three times
 *   bucket_upsert         [5] the seed's bucket loop: 1000 page views, one
 *                         upsert each {bookId, hour} with $inc {count: 1,
 *                         "byCountry.<c>": 1}; max(4, N/100000) books, the
 *                         sides alternating per book, ops/s.
 *                         PostgreSQL: INSERT ... ON CONFLICT (book_id, hour)
 *                         DO UPDATE SET doc = jsonb_set(...).
 * Reads run in three rounds alternating the sides, best round counted; each
 * side stops at its operation count or $BENCH_SECONDS (default 10, over the
 * three rounds), whichever comes first, so a slow plan cannot stall the run.
 * For the read cases, stderr also gets each side's CPU time per operation in
 * its best round, server and client apart (tamgad's threads from
 * /proc/$TAMGAD_PID, each PostgreSQL backend from /proc, each client
 * thread's own clock): on this 2-core machine the multi-connection cases are CPU-bound,
 * so their ratio follows the sum of the two, and the split says which side
 * of the wire a change of ratio comes from (issue 23).
 * PostgreSQL runs with synchronous_commit=off, as tamgad acknowledges writes
 * without j: true before the journal is synced (group commit).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <dirent.h>
#include <string.h>
#include <time.h>

#include <mongoc/mongoc.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "bench"
#define NA -1.0

static mongoc_client_pool_t *pool, *pool_unix;
static char tamga_why[300], pg_why[300], tamga_unix_why[300], pg_unix_why[300];
static double max_seconds = 10;

/* ---- a round of threads -------------------------------------------------- */

typedef enum { OP_INSERT, OP_FIND_ID, OP_FIND_RANGE } op_t;

typedef struct job {
	op_t op;
	bool pg;                /* else tamgad */
	bool unix_socket;       /* over the Unix domain sockets, else TCP */
	int threads;
	const char *table;      /* collection / table */
	int64_t ops;            /* total operations (insert: documents) */
	int64_t keys;           /* lookups pick _id in [0, keys) */
	int64_t base;           /* inserts write _id [base, base + ops) */
	double deadline;        /* now() value after which threads stop */
	pthread_barrier_t start;
	atomic_llong done;      /* operations (insert: documents) completed */
	atomic_llong client_ns; /* reads: the client threads' CPU time in their loops */
	atomic_llong pg_ns;     /* reads: the PostgreSQL backends' CPU time meanwhile */
} job_t;

/* CPU time per operation of one read round (microseconds; < 0: unknown). */
typedef struct cpu_split {
	double server_us, client_us;
} cpu_split_t;

static cpu_split_t last_cpu;

/* The CPU time of process pid so far, every thread's (the first field of
 * /proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU), or -1.  A thread
 * that ends between two readings takes its time with it: tamgad's
 * connection threads and the backends live as long as their connections. */
static int64_t
proc_cpu_ns(long pid)
{
	char path[300];
	unsigned long long ns;
	int64_t sum = 0;
	int nread = 0;
	struct dirent *e;
	DIR *d;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/task/%.32s/schedstat", pid, e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;                /* the thread ended meanwhile */
		if (fscanf(f, "%llu", &ns) == 1) {
			sum += (int64_t)ns;
			nread++;
		}
		fclose(f);
	}
	closedir(d);
	return nread > 0 ? sum : -1;            /* no schedstat: a kernel without it */
}

static int64_t
thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct worker {
	job_t *job;
	int index;
} worker_t;

static void
tamga_thread(job_t *j, int index)
{
	mongoc_client_pool_t *p = j->unix_socket ? pool_unix : pool;
	mongoc_client_t *client = mongoc_client_pool_pop(p);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, DB, j->table);
	int64_t per = j->ops / j->threads, from = j->base + per * index, i, k, n;
	bson_error_t err;
	rng_t rg;

	rnd_reset(&rg, 1000 + (uint64_t)index);
	pthread_barrier_wait(&j->start);
	if (j->op == OP_INSERT) {
		bson_t *docs = tm_bson_array_new(1000);
		const bson_t *ptrs[1000];
		for (i = from; i < from + per; i += 1000) {
			n = from + per - i < 1000 ? from + per - i : 1000;
			for (k = 0; k < n; k++) {
				make_doc(&docs[k], i + k);
				ptrs[k] = &docs[k];
			}
			if (!mongoc_collection_insert_many(coll, ptrs, (size_t)n, NULL, NULL, &err))
				die("tamgad insertMany", err.message);
			for (k = 0; k < n; k++)
				bson_destroy(&docs[k]);
			atomic_fetch_add(&j->done, n);
		}
		bson_free(docs);
	} else {
		int64_t cpu0 = thread_cpu_ns();
		for (i = 0; i < per && now() < j->deadline; i++) {
			int64_t key = rnd(&rg, j->op == OP_FIND_ID ? j->keys : j->keys - 100), got = 0;
			bson_t *filter, *opts;
			const bson_t *doc;
			mongoc_cursor_t *cur;
			if (j->op == OP_FIND_ID) {
				filter = BCON_NEW("_id", BCON_INT64(key));
				opts = BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
			} else {
				filter = BCON_NEW("_id", "{", "$gte", BCON_INT64(key), "$lt", BCON_INT64(key + 100), "}");
				opts = NULL;
			}
			cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
			while (mongoc_cursor_next(cur, &doc))
				got++;
			if (mongoc_cursor_error(cur, &err))
				die("tamgad find", err.message);
			if (got != (j->op == OP_FIND_ID ? 1 : 100))
				die("tamgad find", "wrong number of documents");
			mongoc_cursor_destroy(cur);
			bson_destroy(filter);
			if (opts != NULL)
				bson_destroy(opts);
			atomic_fetch_add(&j->done, 1);
		}
		atomic_fetch_add(&j->client_ns, thread_cpu_ns() - cpu0);
	}
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(p, client);
}

static void
pg_thread(job_t *j, int index)
{
	char why[300], sql[300], p1[32], p2[32];
	PGconn *c = pg_connect_env(j->unix_socket ? "BENCH_PG_UNIX" : "BENCH_PG", why, sizeof(why));
	int64_t per = j->ops / j->threads, from = j->base + per * index, i, k, n;
	PGresult *r;
	rng_t rg;

	if (c == NULL)
		die("postgresql connect", why);
	rnd_reset(&rg, 1000 + (uint64_t)index);
	if (j->op == OP_INSERT)
		snprintf(sql, sizeof(sql), "INSERT INTO %s (id, doc) SELECT (j->>'_id')::bigint, j "
		    "FROM jsonb_array_elements($1::jsonb) j", j->table);
	else if (j->op == OP_FIND_ID)
		snprintf(sql, sizeof(sql), "SELECT doc FROM %s WHERE id = $1", j->table);
	else
		snprintf(sql, sizeof(sql), "SELECT doc FROM %s WHERE id >= $1 AND id < $2 ORDER BY id", j->table);
	r = pg_check(c, PQprepare(c, "q", sql, 0, NULL), "postgresql prepare");
	PQclear(r);
	pthread_barrier_wait(&j->start);
	if (j->op == OP_INSERT) {
		size_t cap = 1000 * 600 + 16, used;
		char *json = malloc(cap);
		for (i = from; i < from + per; i += 1000) {
			const char *params[1];
			n = from + per - i < 1000 ? from + per - i : 1000;
			used = 0;
			json[used++] = '[';
			for (k = 0; k < n; k++) {
				if (k > 0)
					json[used++] = ',';
				used += (size_t)make_json(json + used, cap - used, i + k);
			}
			json[used++] = ']';
			json[used] = '\0';
			params[0] = json;
			r = pg_check(c, PQexecPrepared(c, "q", 1, params, NULL, NULL, 0), "postgresql insert");
			PQclear(r);
			atomic_fetch_add(&j->done, n);
		}
		free(json);
	} else {
		long backend = PQbackendPID(c);
		int64_t cpu0 = thread_cpu_ns(), t0 = proc_cpu_ns(backend), t1;
		for (i = 0; i < per && now() < j->deadline; i++) {
			int64_t key = rnd(&rg, j->op == OP_FIND_ID ? j->keys : j->keys - 100);
			const char *params[2] = {p1, p2};
			snprintf(p1, sizeof(p1), "%lld", (long long)key);
			snprintf(p2, sizeof(p2), "%lld", (long long)key + 100);
			r = pg_check(c, PQexecPrepared(c, "q", j->op == OP_FIND_ID ? 1 : 2, params, NULL, NULL, 0),
			    "postgresql find");
			if (PQntuples(r) != (j->op == OP_FIND_ID ? 1 : 100))
				die("postgresql find", "wrong number of rows");
			for (k = 0; k < PQntuples(r); k++)
				(void)PQgetvalue(r, (int)k, 0);
			PQclear(r);
			atomic_fetch_add(&j->done, 1);
		}
		atomic_fetch_add(&j->client_ns, thread_cpu_ns() - cpu0);
		t1 = proc_cpu_ns(backend);
		atomic_fetch_add(&j->pg_ns, t0 < 0 || t1 < 0 ? INT64_MIN / 128 : t1 - t0);
	}
	PQfinish(c);
}

static void *
worker_main(void *arg)
{
	worker_t *w = arg;

	if (w->job->pg)
		pg_thread(w->job, w->index);
	else
		tamga_thread(w->job, w->index);
	return NULL;
}

/* Run one case on one side; returns operations (documents) per second. */
static double
run_job_on(op_t op, bool pg, bool unix_socket, int threads, const char *table, int64_t ops, int64_t keys,
           int64_t base)
{
	job_t *j = tm_alloc0(sizeof(*j));
	pthread_t tid[64];
	worker_t w[64];
	double t0, rate, ops_done;
	const char *tpid = getenv("TAMGAD_PID");
	int64_t server0 = -1, server1;
	int i;

	j->op = op;
	j->pg = pg;
	j->unix_socket = unix_socket;
	j->threads = threads;
	j->table = table;
	j->ops = ops;
	j->keys = keys;
	j->base = base;
	atomic_init(&j->done, 0);
	atomic_init(&j->client_ns, 0);
	atomic_init(&j->pg_ns, 0);
	pthread_barrier_init(&j->start, NULL, (unsigned)threads + 1);
	for (i = 0; i < threads; i++) {
		w[i].job = j;
		w[i].index = i;
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0)
			die("pthread_create", "");
	}
	/* connections are open and statements prepared before the clock starts */
	j->deadline = now() + 3600;
	if (!pg && tpid != NULL)
		server0 = proc_cpu_ns(atol(tpid));
	pthread_barrier_wait(&j->start);
	t0 = now();
	j->deadline = op == OP_INSERT ? t0 + 3600 : t0 + max_seconds;
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	rate = (double)atomic_load(&j->done) / (now() - t0);
	ops_done = (double)atomic_load(&j->done);
	server1 = !pg && server0 >= 0 ? proc_cpu_ns(atol(tpid)) : -1;
	last_cpu.client_us = ops_done > 0 ? (double)atomic_load(&j->client_ns) / 1e3 / ops_done : -1;
	if (pg)
		last_cpu.server_us = ops_done > 0 && atomic_load(&j->pg_ns) >= 0
		    ? (double)atomic_load(&j->pg_ns) / 1e3 / ops_done : -1;
	else
		last_cpu.server_us = ops_done > 0 && server1 >= 0 ? (double)(server1 - server0) / 1e3 / ops_done : -1;
	if (op == OP_INSERT) /* callers sum the seconds of the halves */
		rate = now() - t0;
	pthread_barrier_destroy(&j->start);
	bson_free(j);
	return rate;
}

/* run_job_on over TCP (the target lines). */
static double
run_job(op_t op, bool pg, int threads, const char *table, int64_t ops, int64_t keys, int64_t base)
{
	return run_job_on(op, pg, false, threads, table, ops, keys, base);
}

/* Reads: ROUNDS rounds alternating the two sides (Tamga first in odd
 * rounds, PostgreSQL first in even ones), each with a third of the
 * operations and of the time cap; the best round of each side counts, so a
 * burst of load from elsewhere on the machine hurts neither side alone. */
#define ROUNDS 3
static void
best_of_rounds(const char *name, op_t op, bool unix_socket, int c, int64_t ops, int64_t keys, bool have_t,
               bool have_p, double *t, double *p)
{
	double saved = max_seconds, x;
	cpu_split_t tc = {-1, -1}, pc = {-1, -1};
	int64_t per = ops / ROUNDS / c * c;
	int r, side;

	if (per < c)
		per = c;
	max_seconds = saved / ROUNDS;
	for (r = 0; r < ROUNDS; r++)
		for (side = 0; side < 2; side++) {
			bool pg = (side + r) % 2 == 1;
			if (pg && have_p && (x = run_job_on(op, true, unix_socket, c, "ins1", per, keys, 0)) > *p) {
				*p = x;
				pc = last_cpu;
			}
			if (!pg && have_t && (x = run_job_on(op, false, unix_socket, c, "ins1", per, keys, 0)) > *t) {
				*t = x;
				tc = last_cpu;
			}
		}
	max_seconds = saved;
	if (tc.client_us >= 0 || pc.client_us >= 0)
		fprintf(stderr, "bench_wire: %s CPU per op (best rounds): tamga server %.1f us + client %.1f us, "
		    "postgresql server %.1f us + client %.1f us (-1: not measured)\n", name,
		    tc.server_us, tc.client_us, pc.server_us, pc.client_us);
}

/* ---- setup --------------------------------------------------------------- */

/* A client pool on uri, answering ping; NULL with the reason in why. */
static mongoc_client_pool_t *
pool_up(const char *uri, char *why, size_t why_size)
{
	char full[600];
	mongoc_uri_t *u;
	mongoc_client_pool_t *p;
	mongoc_client_t *client;
	bson_error_t err;
	bson_t *ping;
	bool ok;

	snprintf(full, sizeof(full), "%s/?serverSelectionTimeoutMS=5000&maxPoolSize=100", uri);
	if ((u = mongoc_uri_new_with_error(full, &err)) == NULL) {
		snprintf(why, why_size, "bad URI %s: %s", full, err.message);
		return NULL;
	}
	p = mongoc_client_pool_new(u);
	mongoc_uri_destroy(u);
	mongoc_client_pool_set_error_api(p, MONGOC_ERROR_API_VERSION_2);
	client = mongoc_client_pool_pop(p);
	ping = BCON_NEW("ping", BCON_INT32(1));
	ok = mongoc_client_command_simple(client, "admin", ping, NULL, NULL, &err);
	bson_destroy(ping);
	mongoc_client_pool_push(p, client);
	if (!ok) {
		snprintf(why, why_size, "tamgad does not answer ping: %s", err.message);
		mongoc_client_pool_destroy(p);
		return NULL;
	}
	return p;
}

static bool
tamga_up(void)
{
	const char *uri = getenv("TAMGA_URI");

	if (uri == NULL || uri[0] == '\0') {
		snprintf(tamga_why, sizeof(tamga_why), "tamgad was not started");
		return false;
	}
	pool = pool_up(uri, tamga_why, sizeof(tamga_why));
	return pool != NULL;
}

/* The pool through tamgad's Unix domain socket ($TAMGA_SOCKET, a path):
 * mongodb://%2Fpath%2Fto%2Fmongodb-<port>.sock. */
static bool
tamga_unix_up(void)
{
	const char *path = getenv("TAMGA_SOCKET");
	char uri[512];
	size_t n = 0;

	if (path == NULL || path[0] == '\0') {
		snprintf(tamga_unix_why, sizeof(tamga_unix_why), "TAMGA_SOCKET not set");
		return false;
	}
	n = (size_t)snprintf(uri, sizeof(uri), "mongodb://");
	for (; *path && n + 4 < sizeof(uri); path++)
		n += (size_t)(*path == '/' ? snprintf(uri + n, sizeof(uri) - n, "%%2F") :
		    snprintf(uri + n, sizeof(uri) - n, "%c", *path));
	pool_unix = pool_up(uri, tamga_unix_why, sizeof(tamga_unix_why));
	return pool_unix != NULL;
}

static void
tamga_drop(const char *name)
{
	mongoc_client_t *client = mongoc_client_pool_pop(pool);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, DB, name);

	mongoc_collection_drop(coll, NULL); /* NamespaceNotFound is fine */
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(pool, client);
}

static void
pg_recreate(PGconn *c, const char *name)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s; CREATE TABLE %s (id bigint PRIMARY KEY, doc jsonb NOT NULL)",
	    name, name);
	pg_exec(c, sql);
}

/* PostgreSQL's numbers, kept for bench_node.js (the Node-driver variant
 * compares against the same libpq runs). */
static FILE *pg_out;

static void
print_case_why(const char *name, bool have_t, double t, const char *t_why, bool have_p, double p,
               const char *p_why)
{
	if (have_p && pg_out != NULL) {
		fprintf(pg_out, "%s %.0f\n", name, p);
		fflush(pg_out);
	}
	if (have_t && have_p)
		report(name, t, "postgresql", p);
	else if (have_t)
		report_peer_na(name, t, "postgresql", p_why);
	else
		report_na(name, t_why, have_p ? "postgresql" : NULL, have_p ? p : NA);
}

static void
print_case(const char *name, bool have_t, double t, bool have_p, double p)
{
	print_case_why(name, have_t, t, tamga_why, have_p, p, pg_why);
}

/* ---- one big find (issue 4) ----------------------------------------------- */

/* find {} with limit n on coll, 3 times; documents/s. */
static double
big_find_tamga(const char *coll_name, int64_t n)
{
	mongoc_client_t *client = mongoc_client_pool_pop(pool);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, DB, coll_name);
	bson_t empty = BSON_INITIALIZER, *opts = BCON_NEW("limit", BCON_INT64(n));
	const bson_t *doc;
	bson_error_t err;
	double t0 = now();
	int64_t got;
	int r;

	for (r = 0; r < 3; r++) {
		mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &empty, opts, NULL);
		for (got = 0; mongoc_cursor_next(cur, &doc); got++)
			;
		if (mongoc_cursor_error(cur, &err))
			die("tamgad find", err.message);
		if (got != n)
			die("tamgad find", "wrong number of documents");
		mongoc_cursor_destroy(cur);
	}
	t0 = 3.0 * (double)n / (now() - t0);
	bson_destroy(opts);
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(pool, client);
	return t0;
}

static double
big_find_pg(PGconn *c, const char *table, int64_t n)
{
	char sql[128];
	PGresult *res;
	double t0 = now();
	int64_t k;
	int r;

	snprintf(sql, sizeof(sql), "SELECT doc FROM %s LIMIT %lld", table, (long long)n);
	for (r = 0; r < 3; r++) {
		res = pg_check(c, PQexec(c, sql), "postgresql find");
		if (PQntuples(res) != n)
			die("postgresql find", "wrong number of rows");
		for (k = 0; k < n; k++)
			(void)PQgetvalue(res, (int)k, 0);
		PQclear(res);
	}
	return 3.0 * (double)n / (now() - t0);
}

/* ---- the bucket pattern (issue 5) ---------------------------------------- */

#define HOUR_MS 3600000LL
#define BUCKET_START 1782810000000LL /* 2026-06-30T09:00:00Z */

/* One book's loop through tamgad; returns the seconds taken. */
static double
bucket_tamga_book(mongoc_collection_t *coll, int64_t b)
{
	static const char *const by[] = {"byCountry.TR", "byCountry.GB", "byCountry.DE"};
	bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
	bson_error_t err;
	double t0 = now();
	int64_t i;

	for (i = 0; i < 1000; i++) {
		int64_t at = BUCKET_START + i * 11 * 1000, hour = at / HOUR_MS * HOUR_MS;
		bson_t *q = BCON_NEW("bookId", BCON_INT32((int32_t)(26 + b)), "hour", BCON_DATE_TIME(hour));
		bson_t *u = BCON_NEW("$inc", "{", "count", BCON_INT32(1), by[i % 3], BCON_INT32(1), "}");
		if (!mongoc_collection_update_one(coll, q, u, opts, NULL, &err))
			die("tamgad bucket upsert", err.message);
		bson_destroy(q);
		bson_destroy(u);
	}
	t0 = now() - t0;
	bson_destroy(opts);
	return t0;
}

static void
bucket_tamga_check(mongoc_collection_t *coll, int64_t books)
{
	bson_t empty = BSON_INITIALIZER;
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &empty, NULL, NULL);
	const bson_t *doc;
	bson_iter_t it;
	int64_t views = 0, count;

	for (count = 0; mongoc_cursor_next(cur, &doc); count++)
		if (bson_iter_init_find(&it, doc, "count") && BSON_ITER_HOLDS_NUMBER(&it))
			views += bson_iter_as_int64(&it);
	mongoc_cursor_destroy(cur);
	if (count != books * 4 || views != books * 1000)
		die("tamgad bucket upsert", "expected 4 documents and 1000 views per book");
}

static void
bucket_pg_setup(PGconn *c)
{
	static const Oid types[3] = {23 /* int4 */, 1184 /* timestamptz */, 25 /* text */};
	PGresult *r;

	pg_exec(c, "DROP TABLE IF EXISTS book_views; CREATE TABLE book_views (book_id int, hour timestamptz, "
	    "doc jsonb NOT NULL, PRIMARY KEY (book_id, hour))");
	r = pg_check(c, PQprepare(c, "upsert",
	    "INSERT INTO book_views (book_id, hour, doc) VALUES ($1, $2, jsonb_build_object('bookId', $1, "
	    "'hour', $2, 'count', 1, 'byCountry', jsonb_build_object($3, 1))) "
	    "ON CONFLICT (book_id, hour) DO UPDATE SET doc = jsonb_set(jsonb_set(book_views.doc, '{count}', "
	    "to_jsonb((book_views.doc->>'count')::int + 1)), array['byCountry', $3], "
	    "to_jsonb(coalesce((book_views.doc->'byCountry'->>$3)::int, 0) + 1))", 3, types), "postgresql prepare");
	PQclear(r);
}

/* One book's loop on PostgreSQL; returns the seconds taken. */
static double
bucket_pg_book(PGconn *c, int64_t b)
{
	static const char *const by[] = {"TR", "GB", "DE"};
	char p1[16], p2[64];
	const char *params[3] = {p1, p2, NULL};
	PGresult *r;
	double t0 = now();
	int64_t i;

	for (i = 0; i < 1000; i++) {
		int64_t at = BUCKET_START + i * 11 * 1000, hour = at / HOUR_MS * HOUR_MS;
		time_t secs = (time_t)(hour / 1000);
		struct tm tm;
		gmtime_r(&secs, &tm);
		snprintf(p1, sizeof(p1), "%d", (int)(26 + b));
		strftime(p2, sizeof(p2), "%Y-%m-%d %H:%M:%S+00", &tm);
		params[2] = by[i % 3];
		r = pg_check(c, PQexecPrepared(c, "upsert", 3, params, NULL, NULL, 0), "postgresql upsert");
		PQclear(r);
	}
	return now() - t0;
}

static void
bucket_pg_check(PGconn *c, int64_t books)
{
	PGresult *r = pg_check(c, PQexec(c, "SELECT count(*), sum((doc->>'count')::int) FROM book_views"),
	    "postgresql count");

	if (atoll(PQgetvalue(r, 0, 0)) != books * 4 || atoll(PQgetvalue(r, 0, 1)) != books * 1000)
		die("postgresql bucket upsert", "wrong documents");
	PQclear(r);
}

/* The seed's loop once per book, the two sides alternating per book, each
 * side's time summed. */
static void
bucket_case(PGconn *pc, int64_t books, bool have_t, bool have_p, double *t, double *p)
{
	mongoc_client_t *client = NULL;
	mongoc_collection_t *coll = NULL;
	double st = 0, sp = 0;
	int64_t b;

	if (have_t) {
		client = mongoc_client_pool_pop(pool);
		coll = mongoc_client_get_collection(client, DB, "book_views");
		mongoc_collection_drop(coll, NULL);
	}
	if (have_p) {
		pg_exec(pc, "CHECKPOINT"); /* start without the earlier cases' dirty pages */
		bucket_pg_setup(pc);
	}
	for (b = 0; b < books; b++) {
		double xt = 0, xp = 0;
		if (b % 2 == 0 && have_t)
			xt = bucket_tamga_book(coll, b);
		if (have_p)
			xp = bucket_pg_book(pc, b);
		if (b % 2 == 1 && have_t)
			xt = bucket_tamga_book(coll, b);
		fprintf(stderr, "bench_wire: bucket book %lld: tamga %.0f ms, postgresql %.0f ms\n", (long long)b,
		    xt * 1000, xp * 1000);
		st += xt;
		sp += xp;
	}
	if (have_t) {
		bucket_tamga_check(coll, books);
		*t = (double)(books * 1000) / st;
		mongoc_collection_destroy(coll);
		mongoc_client_pool_push(pool, client);
	}
	if (have_p) {
		bucket_pg_check(pc, books);
		*p = (double)(books * 1000) / sp;
	}
}

int
main(int argc, char **argv)
{
	static const int conns[] = {1, 8, 64};
	const char *env = getenv("BENCH_SECONDS");
	PGconn *pc;
	bool have_t, have_p;
	int64_t docs, finds, ranges, books;
	char name[64], table[32];
	size_t k;

	bench_read_n("bench_wire");
	if (argc > 1) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/wire_pg.txt", argv[1]);
		pg_out = fopen(path, "w");
	}
	if (env != NULL && atof(env) > 0)
		max_seconds = atof(env);
	/* whole batches of 1000 for every thread count in each half */
	docs = (N / 4 + 127999) / 128000 * 128000;
	finds = N / 10 > 1000 ? N / 10 : 1000;
	ranges = N / 100 > 640 ? N / 100 : 640;
	books = N / 100000 > 4 ? N / 100000 : 4;
	mongoc_init();
	have_t = tamga_up();
	pc = pg_connect(pg_why, sizeof(pg_why));
	have_p = pc != NULL;
	if (!have_t && !have_p) {
		fprintf(stderr, "bench_wire: neither tamgad (%s) nor postgresql (%s)\n", tamga_why, pg_why);
		return 0;
	}

	for (k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
		double t = NA, p = NA;
		int c = conns[k];
		snprintf(table, sizeof(table), "ins%d", c);
		snprintf(name, sizeof(name), "wire_insert_many_%d", c);
		/* two halves, the sides alternating: Tamga, PostgreSQL, PostgreSQL, Tamga */
		if (have_t)
			tamga_drop(table);
		if (have_p)
			pg_recreate(pc, table);
		{
			double st = 0, sp = 0;
			int half;
			for (half = 0; half < 2; half++) {
				if (half == 0 && have_t)
					st += run_job(OP_INSERT, false, c, table, docs / 2, 0, 0);
				if (have_p)
					sp += run_job(OP_INSERT, true, c, table, docs / 2, 0, half * (docs / 2));
				if (half == 1 && have_t)
					st += run_job(OP_INSERT, false, c, table, docs / 2, 0, docs / 2);
			}
			if (have_t)
				t = (double)docs / st;
			if (have_p)
				p = (double)docs / sp;
		}
		if (have_p) {
			char sql[64];
			snprintf(sql, sizeof(sql), "VACUUM ANALYZE %s", table);
			pg_exec(pc, sql);
			pg_exec(pc, "CHECKPOINT");
		}
		print_case(name, have_t, t, have_p, p);
	}
	for (k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
		int c = conns[k];
		double t = NA, p = NA;
		snprintf(name, sizeof(name), "wire_find_id_%d", c);
		best_of_rounds(name, OP_FIND_ID, false, c, finds, docs, have_t, have_p, &t, &p);
		print_case(name, have_t, t, have_p, p);
	}
	{
		/* both sides over their Unix domain socket, one connection */
		double t = NA, p = NA;
		bool have_tu = have_t && tamga_unix_up(), have_pu = false;
		PGconn *pu;
		if (!have_t)
			snprintf(tamga_unix_why, sizeof(tamga_unix_why), "%s", tamga_why);
		if (have_p && (pu = pg_connect_env("BENCH_PG_UNIX", pg_unix_why, sizeof(pg_unix_why))) != NULL) {
			have_pu = true;
			PQfinish(pu);
		} else if (!have_p) {
			snprintf(pg_unix_why, sizeof(pg_unix_why), "%s", pg_why);
		}
		best_of_rounds("wire_find_id_1_unix", OP_FIND_ID, true, 1, finds, docs, have_tu, have_pu, &t, &p);
		print_case_why("wire_find_id_1_unix", have_tu, t, tamga_unix_why, have_pu, p, pg_unix_why);
	}
	for (k = 0; k < sizeof(conns) / sizeof(conns[0]); k++) {
		int c = conns[k];
		double t = NA, p = NA;
		snprintf(name, sizeof(name), "wire_find_range_%d", c);
		best_of_rounds(name, OP_FIND_RANGE, false, c, ranges, docs, have_t, have_p, &t, &p);
		print_case(name, have_t, t, have_p, p);
	}
	{
		int64_t n = docs < 100000 ? docs : 100000;
		double t = have_t ? big_find_tamga("ins1", n) : NA;
		double p = have_p ? big_find_pg(pc, "ins1", n) : NA;
		print_case("wire_find_100k_docs", have_t, t, have_p, p);
	}
	{
		double t = NA, p = NA;
		bucket_case(pc, books, have_t, have_p, &t, &p);
		print_case("bucket_upsert", have_t, t, have_p, p);
	}
	if (have_p) {
		pg_exec(pc, "DROP TABLE IF EXISTS ins1, ins8, ins64, book_views");
		PQfinish(pc);
	}
	if (pg_out != NULL)
		fclose(pg_out);
	if (pool != NULL)
		mongoc_client_pool_destroy(pool);
	if (pool_unix != NULL)
		mongoc_client_pool_destroy(pool_unix);
	mongoc_cleanup();
	return 0;
}
