/*
 * bench_rs_reads.c -- the read half of issue 24's "reads from secondaries"
 * target: THREADS threads (one pooled libmongoc client each, so one
 * connection per thread and member) look documents up by _id (random keys
 * in [0, KEYS)) for SECONDS seconds through a replica-set URI whose
 * readPreference chooses the members (primary / secondaryPreferred).
 * bench/bench_raft.py starts the three-member set, loads the documents,
 * runs this program once per read preference and reads each member's CPU
 * from /proc around the run.  The client is C so that, on a machine of two
 * cores, as little CPU as possible goes to the client side.
 *
 * usage: bench_rs_reads URI SECONDS THREADS KEYS
 * prints one line: "reads <ops> seconds <s> client_cpu <s>"
 * Every lookup must find its document (else the program fails): a read
 * answered from a member that lacks the data must not count.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include <mongoc/mongoc.h>

#include "bench_common.h"

#define MAX_THREADS 256

static mongoc_client_pool_t *pool;
static double seconds;
static int64_t keys;
static pthread_barrier_t ready, start;
static atomic_llong done;
static double deadline;

/* One lookup by a random _id; the program fails unless it finds one document. */
static void
lookup(mongoc_collection_t *coll, const bson_t *opts, rng_t *rg)
{
	bson_t *filter = BCON_NEW("_id", BCON_INT64(rnd(rg, keys)));
	const bson_t *doc;
	mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
	bson_error_t err;
	int got = 0;

	while (mongoc_cursor_next(cur, &doc))
		got++;
	if (mongoc_cursor_error(cur, &err))
		die("find", err.message);
	if (got != 1)
		die("find", "the document is missing");
	mongoc_cursor_destroy(cur);
	bson_destroy(filter);
}

static void *
reader(void *arg)
{
	int index = (int)(intptr_t)arg;
	mongoc_client_t *client = mongoc_client_pool_pop(pool);
	mongoc_collection_t *coll = mongoc_client_get_collection(client, "bench", "reads");
	bson_t *opts = BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
	long long n = 0;
	rng_t rg;
	int i;

	rnd_reset(&rg, 7000 + (uint64_t)index);
	/* warm-up before the clock: connections to the members the read
	 * preference picks are opened (and handshaken) here */
	for (i = 0; i < 16; i++)
		lookup(coll, opts, &rg);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&start);
	while (now() < deadline) {
		lookup(coll, opts, &rg);
		n++;
	}
	atomic_fetch_add(&done, n);
	bson_destroy(opts);
	mongoc_collection_destroy(coll);
	mongoc_client_pool_push(pool, client);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t tid[MAX_THREADS];
	mongoc_uri_t *u;
	bson_error_t err;
	struct rusage ru0, ru1;
	double t0, t1, cpu;
	int threads, i;

	if (argc != 5)
		die("usage", "bench_rs_reads URI SECONDS THREADS KEYS");
	seconds = atof(argv[2]);
	threads = atoi(argv[3]);
	keys = atoll(argv[4]);
	if (seconds <= 0 || threads < 1 || threads > MAX_THREADS || keys < 1)
		die("usage", "SECONDS > 0, 1 <= THREADS <= 256, KEYS >= 1");
	mongoc_init();
	if ((u = mongoc_uri_new_with_error(argv[1], &err)) == NULL)
		die("URI", err.message);
	pool = mongoc_client_pool_new(u);
	mongoc_uri_destroy(u);
	mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
	mongoc_client_pool_max_size(pool, (uint32_t)threads + 4);
	pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (i = 0; i < threads; i++)
		if (pthread_create(&tid[i], NULL, reader, (void *)(intptr_t)i) != 0)
			die("pthread_create", "");
	/* every thread warmed up and waits: the clock starts (the start
	 * barrier orders the deadline's store before the threads read it) */
	pthread_barrier_wait(&ready);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now();
	deadline = t0 + seconds;
	pthread_barrier_wait(&start);
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	t1 = now();
	getrusage(RUSAGE_SELF, &ru1);
	cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) + (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
	    (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
	    (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
	printf("reads %lld seconds %.3f client_cpu %.3f\n", (long long)atomic_load(&done), t1 - t0, cpu);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&start);
	mongoc_client_pool_destroy(pool);
	mongoc_cleanup();
	return 0;
}
