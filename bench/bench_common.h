/*
 * bench_common.h -- what every benchmark program shares: the clock, a
 * repeatable random sequence, the result lines, the document shapes (as
 * BSON for Tamga and WiredTiger, as JSON text for SQLite and PostgreSQL),
 * and small helpers around the embedded API, raw WiredTiger and libpq.
 *
 * Result lines (bench/run.sh and docs/benchmarks.md rely on them):
 *   bench <case>: tamga <ops/s>, <peer> <ops/s>, ratio <tamga/peer>
 *   bench <case>: tamga not available yet (<reason>), <peer> <ops/s>
 * Nothing here is a timed assertion: numbers are printed, never judged.
 * Header-only on purpose: each benchmark is one .c file plus this.
 */
#ifndef TAMGA_BENCH_COMMON_H
#define TAMGA_BENCH_COMMON_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <bson/bson.h>

#include "common/mem.h" /* tm_alloc0, tm_bson_array_new: bson_t is 128-byte aligned */
#include "tamga/tamga.h"

static int64_t N = 1000000;

static inline double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void
die(const char *what, const char *detail)
{
	fprintf(stderr, "bench: %s: %s\n", what, detail ? detail : "");
	exit(1);
}

/* BENCH_N, default 1M; the size every case derives its counts from. */
static inline void
bench_read_n(const char *prog)
{
	const char *env = getenv("BENCH_N");

	if (env != NULL && atoll(env) > 0)
		N = atoll(env);
	fprintf(stderr, "%s: N = %lld\n", prog, (long long)N);
}

/* xorshift64: each engine restarts the sequence (rnd_reset) so that all of
 * them look up exactly the same keys in the same order. */
typedef struct rng {
	uint64_t s;
} rng_t;

static inline void
rnd_reset(rng_t *r, uint64_t seed)
{
	r->s = seed ? seed : 88172645463325252ULL;
}

static inline int64_t
rnd(rng_t *r, int64_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (int64_t)(r->s % (uint64_t)n);
}

static inline uint64_t
mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline void
report(const char *name, double tamga, const char *peer, double other)
{
	printf("bench %s: tamga %.0f, %s %.0f, ratio %.2f\n", name, tamga, peer, other,
	    other > 0 ? tamga / other : 0);
	fflush(stdout);
}

/* The Tamga side cannot run yet: say why, and still give the peer's number
 * (other < 0: no peer number either). */
static inline void
report_na(const char *name, const char *reason, const char *peer, double other)
{
	if (peer != NULL && other >= 0)
		printf("bench %s: tamga not available yet (%s), %s %.0f\n", name, reason, peer, other);
	else
		printf("bench %s: tamga not available yet (%s)\n", name, reason);
	fflush(stdout);
}

/* A peer could not run (PostgreSQL missing, ...): say so, no number. */
static inline void
report_peer_na(const char *name, double tamga, const char *peer, const char *reason)
{
	printf("bench %s: tamga %.0f, %s not available (%s)\n", name, tamga, peer, reason);
	fflush(stdout);
}

/* ---- the 200-byte document (issues 2, 4, 7, 8) ---------------------------
 * {_id: i, title, customer: {name, city, country}, rating: 1..5, score,
 *  tags: [2 strings], at: date, active: bool}.  country is TR for 2 of 5
 * values of i, rating is spread independently of it, so the filter
 * {rating: {$gte: 3}, "customer.country": "TR"} keeps about 24%. */
static const char *const bench_cities[] = {"Istanbul", "Berlin", "London", "Paris", "Ankara"};
static const char *const bench_countries[] = {"TR", "DE", "GB", "FR", "TR"};
#define BENCH_AT0 1751328000000LL

static inline int32_t
doc_rating(int64_t i)
{
	return (int32_t)(mix64((uint64_t)i) % 5) + 1;
}

static inline double
doc_score(int64_t i)
{
	return (double)(mix64((uint64_t)i * 7 + 3) % 1000) / 10.0;
}

static inline void
make_doc(bson_t *d, int64_t i)
{
	char buf[48];
	bson_t sub;

	bson_init(d);
	BSON_APPEND_INT64(d, "_id", i);
	snprintf(buf, sizeof(buf), "book title %08lld", (long long)i);
	BSON_APPEND_UTF8(d, "title", buf);
	bson_append_document_begin(d, "customer", -1, &sub);
	snprintf(buf, sizeof(buf), "customer number %08lld", (long long)(i % 100000));
	BSON_APPEND_UTF8(&sub, "name", buf);
	BSON_APPEND_UTF8(&sub, "city", bench_cities[i % 5]);
	BSON_APPEND_UTF8(&sub, "country", bench_countries[i % 5]);
	bson_append_document_end(d, &sub);
	BSON_APPEND_INT32(d, "rating", doc_rating(i));
	BSON_APPEND_DOUBLE(d, "score", doc_score(i));
	bson_append_array_begin(d, "tags", -1, &sub);
	BSON_APPEND_UTF8(&sub, "0", "books");
	BSON_APPEND_UTF8(&sub, "1", i % 2 ? "scifi" : "history");
	bson_append_array_end(d, &sub);
	BSON_APPEND_DATE_TIME(d, "at", BENCH_AT0 + i * 1000);
	BSON_APPEND_BOOL(d, "active", i % 3 != 0);
}

/* The same document as JSON text (dates as {"$date": ms}), written straight
 * into buf: the SQL peers are not charged for a BSON-to-JSON conversion that
 * a real client would not do.  Returns the length. */
static inline int
make_json(char *buf, size_t size, int64_t i)
{
	return snprintf(buf, size,
	    "{\"_id\":%lld,\"title\":\"book title %08lld\",\"customer\":{\"name\":\"customer number %08lld\","
	    "\"city\":\"%s\",\"country\":\"%s\"},\"rating\":%d,\"score\":%.1f,\"tags\":[\"books\",\"%s\"],"
	    "\"at\":{\"$date\":%lld},\"active\":%s}",
	    (long long)i, (long long)i, (long long)(i % 100000), bench_cities[i % 5], bench_countries[i % 5],
	    doc_rating(i), doc_score(i), i % 2 ? "scifi" : "history", (long long)(BENCH_AT0 + i * 1000),
	    i % 3 != 0 ? "true" : "false");
}

/* What the filter of issue 4 keeps, computed from the generator. */
static inline bool
doc_matches_filter(int64_t i)
{
	return doc_rating(i) >= 3 && strcmp(bench_countries[i % 5], "TR") == 0;
}

/* ---- WiredTiger configuration shared by every raw-WT floor ----------------
 * The same connection settings Tamga's storage layer uses (src/storage/
 * engine.c): journal on, no sync per commit, 60 s checkpoints. */
#define BENCH_WT_CONFIG(cache)                                                            \
	"create,cache_size=" cache ",log=(enabled=true,archive=true,file_max=16MB,prealloc=false)," \
	"checkpoint=(wait=60),transaction_sync=(enabled=false)"
#define BENCH_WT_TABLE "key_format=q,value_format=u"
/* Tamga's unique _id index table (src/storage/catalog.c): key -> RecordId
 * and the key's type bits (empty for an int64). */
#define BENCH_WT_ID_INDEX "key_format=u,value_format=qu"

/* ---- the embedded API ---------------------------------------------------- */

/* Run a command that must succeed. */
static inline void
tcmd(tamga_t *t, const char *db, const bson_t *cmd, bson_t *reply)
{
	tamga_error_t e;

	if (tamga_run_command(t, db, cmd, reply, &e) != 0) {
		char *json = bson_as_relaxed_extended_json(cmd, NULL);
		fprintf(stderr, "bench: command %s\n", json);
		bson_free(json);
		die("tamga command failed", e.message);
	}
}

/* A write command that must succeed: no writeErrors, n == expect (when
 * expect >= 0).  Returns 0, or -1 with the first write error in why (NULL:
 * die instead). */
static inline int
twrite(tamga_t *t, const char *db, const bson_t *cmd, int64_t expect, char *why, size_t why_size)
{
	bson_t reply;
	bson_iter_t it, we;
	int64_t n = -1;
	int ret = 0;
	char msg[400];

	tcmd(t, db, cmd, &reply);
	if (bson_iter_init_find(&it, &reply, "n") && BSON_ITER_HOLDS_NUMBER(&it))
		n = bson_iter_as_int64(&it);
	if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "writeErrors.0.errmsg", &we) &&
	    BSON_ITER_HOLDS_UTF8(&we)) {
		bson_iter_t code;
		int c = bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "writeErrors.0.code", &code) ?
		    (int)bson_iter_as_int64(&code) : 0;
		snprintf(msg, sizeof(msg), "write error code %d, %s", c, bson_iter_utf8(&we, NULL));
		ret = -1;
	} else if (expect >= 0 && n != expect) {
		snprintf(msg, sizeof(msg), "wrote %lld documents, not %lld", (long long)n, (long long)expect);
		ret = -1;
	}
	bson_destroy(&reply);
	if (ret != 0) {
		if (why == NULL)
			die("tamga write", msg);
		snprintf(why, why_size, "%s", msg);
	}
	return ret;
}

/* Same, throwing the reply away. */
static inline void
tcmd0(tamga_t *t, const char *db, const bson_t *cmd)
{
	bson_t reply;

	tcmd(t, db, cmd, &reply);
	bson_destroy(&reply);
}

/* Run a command that may not be built yet: 0 when it worked, else the error
 * code (59 CommandNotFound, 238 NotImplemented, ...) with
 * "<command name>: code <n>, <message>" in why. */
static inline int
ttry(tamga_t *t, const char *db, const bson_t *cmd, char *why, size_t why_size)
{
	tamga_error_t e;
	bson_iter_t it;
	bson_t reply;
	int rc = tamga_run_command(t, db, cmd, &reply, &e);

	bson_destroy(&reply);
	if (rc == 0)
		return 0;
	snprintf(why, why_size, "%s: code %d, %s", bson_iter_init(&it, cmd) && bson_iter_next(&it) ?
	    bson_iter_key(&it) : "command", e.code, e.message);
	return e.code ? e.code : -1;
}

/* The documents in a batch built by a floor, counted as tdrain counts a
 * Tamga reply's (bson_iter_next over the array): a client reads what it
 * got, so both sides pay the same per-document read of the batch. */
static inline int64_t
batch_count(const bson_t *batch)
{
	bson_iter_t it;
	int64_t n = 0;

	if (bson_iter_init(&it, batch))
		while (bson_iter_next(&it))
			n++;
	return n;
}

/* Count the documents of a cursor reply ({cursor: {firstBatch|nextBatch, id}})
 * and follow it with getMore (batchSize) until it is exhausted.  Destroys
 * *reply.  Returns the number of documents seen. */
static inline int64_t
tdrain(tamga_t *t, const char *db, const char *coll, bson_t *reply, int32_t batch_size)
{
	int64_t seen = 0, id;
	bson_iter_t it, cur, b;
	bson_t cmd;

	for (;;) {
		id = 0;
		if (bson_iter_init_find(&it, reply, "cursor") && bson_iter_recurse(&it, &cur)) {
			while (bson_iter_next(&cur)) {
				if (strcmp(bson_iter_key(&cur), "id") == 0)
					id = bson_iter_as_int64(&cur);
				else if (BSON_ITER_HOLDS_ARRAY(&cur) && bson_iter_recurse(&cur, &b))
					while (bson_iter_next(&b))
						seen++;
			}
		}
		bson_destroy(reply);
		if (id == 0)
			return seen;
		bson_init(&cmd);
		BSON_APPEND_INT64(&cmd, "getMore", id);
		BSON_APPEND_UTF8(&cmd, "collection", coll);
		BSON_APPEND_INT32(&cmd, "batchSize", batch_size);
		tcmd(t, db, &cmd, reply);
		bson_destroy(&cmd);
	}
}

#endif
