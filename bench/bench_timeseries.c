/*
 * bench_timeseries.c -- issue 19's targets, embedded: N measurements
 * (1,000 sensors, one reading per second each, 3 numeric fields;
 * N = $BENCH_TS_N, default 10M, scaled down with it) ingested in batches of
 * 1,000 (one second of every sensor per insert command) into
 *   - a time-series collection {timeField: "t", metaField: "sensor"},
 *   - a plain collection (no secondary index while loading),
 *   - the seeds' manual bucket pattern (one document per sensor per hour:
 *     an upsert with $push of the reading and $inc of the count, 1,000
 *     update statements per command),
 * then storageSize (after a clean close and reopen) of the time-series
 * collection against the plain one, and the seed's two queries --
 * "average per sensor per hour over one day" and "last reading per
 * sensor" -- on the time-series collection against the plain collection
 * with its best index ({sensor: 1, t: 1}) -- and a count and max per sensor
 * ({$group: {_id: "$sensor", n: {$sum: 1.0}, hi: {$max: "$temp"}}}, which
 * runs on the buckets' control fields as mongod's rewriteGroupStage).  Answers are checked (group
 * counts) so a wrong answer is never timed as a fast one.
 *
 * Lines: bench <case>: tamga <x/s>, <peer> <y/s>, ratio <x/y> (run.sh).
 * PostgreSQL ($BENCH_PG_UNIX, started by run.sh) runs the two queries too,
 * on a plain table (sensor int, t timestamptz, temp, hum, press float8)
 * holding the same measurements (COPY) with a (sensor, t) B-tree, VACUUM
 * ANALYZE'd: the average as GROUP BY sensor, date_trunc('hour', t), the
 * last reading as DISTINCT ON (sensor) ... ORDER BY sensor, t DESC.
 *
 * BENCH_TS_FLOOR=insert|bucket runs raw WiredTiger's floor of the two
 * ingest shapes instead (ts_floor), for callgrind the same way.
 *
 * BENCH_TS_RANGE=both|noindex|index: a measurement-field range query
 * ({energy: {$lt: ...}}, 0.5% of the measurements) on the time-series
 * collection without and with a user index on the field (range_query).
 *
 * BENCH_TS_QUERY_ONLY=0|1|2|3 (BENCH_TS_QUERY_PLAIN for the plain collection)
 * ingests, then collects only around that query (three runs of it); 3 is a
 * count and max per sensor per hour ($dateTrunc of the time), which runs on
 * the buckets when BENCH_TS_FIXED makes them fixed (hourly span = rounding).
 * BENCH_TS_LATE=random|backlog: late measurements after a restart (bucket
 * reopening, issue 19): 100 sensors, one reading every 10 s for TS_N / 100
 * readings each (hourly buckets that close by time), in order into "late"
 * (time-series) and "latep" (plain); close and reopen (the bucket catalog
 * starts empty); then TS_N / 10 late readings (at +5 s, between two stored
 * ones), in commands of 1,000: "random" -- each command 10 readings of every
 * sensor at random times of the whole range; "backlog" -- each command one
 * sensor's 1,000 consecutive late readings, in time order.  Prints the
 * bucket counts before and after, storageSize against the plain collection
 * (after a clean close), and collStats' reopening counters; callgrind
 * collects around the late time-series ingest only (instructions / late
 * readings = instructions per late measurement).
 *
 * BENCH_TS_INGEST_ONLY=ts|plain ingests into that collection only, with
 * callgrind collecting only around the ingest loop, for instruction counts:
 *   valgrind --tool=callgrind --collect-atstart=no bench_timeseries WORKDIR
 * (total instructions / BENCH_TS_N = instructions per measurement).
 */
#include "bench_pg.h"

#include <sys/stat.h>
#include <valgrind/callgrind.h>

#define SENSORS 1000
#define TS_DB "tsbench"

static int64_t TS_N = 10000000;
/* BENCH_TS_RANGE: each reading also carries "energy", a per-sensor meter
 * (sensor * 10^7 + seconds), the measurement field the range cases query. */
static bool with_energy;
/* BENCH_TS_RANGE_OP=gte: the range is {energy: {$gte: 995 * 10^7}} (the
 * last five sensors) and the index {energy: -1}, whose bucket key leads on
 * control.max.energy: one IXSCAN; default {$lt: 5 * 10^7} on {energy: 1}
 * (an OR of two IXSCANs, the second keeping buckets whose max is not a
 * number, ts_bucket.c). */
static bool range_gte;

static void
reading(bson_t *d, int64_t i, bool with_id)
{
	int64_t sec = i / SENSORS, s = i % SENSORS;

	bson_init(d);
	if (with_id) {
		bson_oid_t oid;
		bson_oid_init(&oid, NULL);
		BSON_APPEND_OID(d, "_id", &oid);
	}
	BSON_APPEND_INT32(d, "sensor", (int32_t)s);
	BSON_APPEND_DATE_TIME(d, "t", BENCH_AT0 + sec * 1000);
	BSON_APPEND_DOUBLE(d, "temp", 15.0 + (double)((i * 7) % 200) / 10.0);
	BSON_APPEND_DOUBLE(d, "hum", 30.0 + (double)((i * 3) % 500) / 10.0);
	BSON_APPEND_DOUBLE(d, "press", 1000.0 + (double)((i * 11) % 300) / 10.0);
	if (with_energy)
		BSON_APPEND_INT64(d, "energy", s * 10000000 + sec);
}

/* {energy: {$lt: 5 * 10^7}} on coll (the meters of sensors 0-4: 0.5% of
 * the measurements), drained through $count; best of three in seconds, -1
 * for a wrong count. */
static double
range_query(tamga_t *t, const char *coll, const char *hint)
{
	double best = -1;
	int64_t expect = 5 * (TS_N / SENSORS);

	for (int round = 0; round < 3; round++) {
		bson_t *cmd = BCON_NEW("aggregate", BCON_UTF8(coll), "pipeline", "[",
		    "{", "$match", "{", "energy", "{", range_gte ? "$gte" : "$lt",
		    BCON_INT64(range_gte ? (int64_t)(SENSORS - 5) * 10000000 : 50000000), "}", "}", "}",
		    "{", "$count", "n", "}", "]", "cursor", "{", "}");
		bson_t reply;
		bson_iter_t it;
		int64_t n = -1;
		double t0 = now();
		if (hint != NULL)
			BSON_APPEND_UTF8(cmd, "hint", hint);
		tcmd(t, TS_DB, cmd, &reply);
		if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch.0.n", &it))
			n = bson_iter_as_int64(&it);
		bson_destroy(&reply);
		bson_destroy(cmd);
		if (n != expect) {
			fprintf(stderr, "bench_timeseries: range on %s counted %lld, not %lld\n", coll, (long long)n,
			    (long long)expect);
			return -1;
		}
		if (best < 0 || now() - t0 < best)
			best = now() - t0;
	}
	return best;
}

/*
 * The raw WiredTiger floor of the two ingest shapes (BENCH_TS_FLOOR, under
 * callgrind like BENCH_TS_INGEST_ONLY): "insert" writes each measurement as
 * a ~95-byte row plus an _id index entry (a plain collection's two
 * inserts); "bucket" does what appending one measurement to each of 1,000
 * open buckets per transaction takes at least: read the bucket (its value
 * rebuilt from the chain of modifies), a WT_CURSOR::modify of 14 entries
 * (length prefixes, control's max, each of 5 columns' re-encoded tail:
 * ~100 bytes, the value growing by 10) and the bucket index's entry
 * replaced (remove + insert); a bucket is replaced by a new key after
 * 1,000 appends.  Commit per 1,000 measurements, journal on, no sync.
 */
#include <wiredtiger.h>

static void
floor_check(int rc, const char *what)
{
	if (rc != 0)
		die(what, wiredtiger_strerror(rc));
}

static void
ts_floor(const char *dir, const char *which)
{
	WT_CONNECTION *conn;
	WT_SESSION *s;
	WT_CURSOR *rec, *ix;
	uint8_t buf[256], *val = bson_malloc(16384);
	int64_t n = TS_N;

	floor_check(wiredtiger_open(dir, NULL, BENCH_WT_CONFIG("1G"), &conn), "wt open");
	floor_check(conn->open_session(conn, NULL, "isolation=snapshot", &s), "session");
	floor_check(s->create(s, "table:rec", BENCH_WT_TABLE), "create");
	floor_check(s->create(s, "table:ix", "key_format=u,value_format=u"), "create");
	floor_check(s->open_cursor(s, "table:rec", NULL, NULL, &rec), "cursor");
	floor_check(s->open_cursor(s, "table:ix", NULL, NULL, &ix), "cursor");
	memset(buf, 'x', sizeof(buf));
	memset(val, 'v', 16384);
	CALLGRIND_TOGGLE_COLLECT;
	for (int64_t i = 0; i < n; i += SENSORS) {
		floor_check(s->begin_transaction(s, NULL), "begin");
		for (int64_t k = 0; k < SENSORS; k++) {
			int64_t m = i + k, sec = m / SENSORS, gen = sec / 1000, app = sec % 1000;
			WT_ITEM it = {.data = buf, .size = 24};
			if (strcmp(which, "insert") == 0) {
				WT_ITEM v = {.data = val, .size = 95};
				memcpy(buf, &m, 8);
				rec->set_key(rec, m + 1);
				rec->set_value(rec, &v);
				floor_check(rec->insert(rec), "insert");
				ix->set_key(ix, &it);
				it.size = 12;
				ix->set_value(ix, &it);
				floor_check(ix->insert(ix), "insert ix");
				continue;
			}
			int64_t key = gen * SENSORS + k + 1;
			memcpy(buf, &key, 8);
			memcpy(buf + 8, &app, 8);
			if (app == 0) {
				WT_ITEM v = {.data = val, .size = 300};
				rec->set_key(rec, key);
				rec->set_value(rec, &v);
				floor_check(rec->insert(rec), "insert bucket");
			} else {
				WT_MODIFY mod[14];
				WT_ITEM cur;
				size_t size;
				rec->set_key(rec, key);
				floor_check(rec->search(rec), "search");
				floor_check(rec->get_value(rec, &cur), "get");
				size = cur.size;
				/* 4 fixed-size changes near the front, then 5 columns: length and tail */
				for (int e = 0; e < 4; e++)
					mod[e] = (WT_MODIFY){.data = {.data = val, .size = 4}, .offset = (size_t)(e * 40), .size = 4};
				for (int c = 0; c < 5; c++) {
					size_t at = 200 + (size - 220) * (size_t)(c + 1) / 6;
					mod[4 + 2 * c] = (WT_MODIFY){.data = {.data = val, .size = 4}, .offset = at - 16, .size = 4};
					mod[5 + 2 * c] = (WT_MODIFY){.data = {.data = val, .size = 10}, .offset = at, .size = 8};
				}
				floor_check(rec->modify(rec, mod, 14), "modify");
				/* the bucket index entry: old key out, new key in */
				app--;
				memcpy(buf + 8, &app, 8);
				ix->set_key(ix, &it);
				floor_check(ix->remove(ix), "remove ix");
				app++;
				memcpy(buf + 8, &app, 8);
			}
			ix->set_key(ix, &it);
			it.size = 8;
			ix->set_value(ix, &it);
			floor_check(ix->insert(ix), "insert ix");
		}
		floor_check(s->commit_transaction(s, NULL), "commit");
	}
	CALLGRIND_TOGGLE_COLLECT;
	printf("floor %s: %lld measurements\n", which, (long long)n);
	conn->close(conn, NULL);
	bson_free(val);
}

/* One insert command of measurements first, first + step, ... (n of them). */
static void
insert_run(tamga_t *t, const char *coll, int64_t first, int64_t step, int n)
{
	bson_t cmd, docs, d;
	char key[16];

	bson_init(&cmd);
	BSON_APPEND_UTF8(&cmd, "insert", coll);
	bson_append_array_begin(&cmd, "documents", -1, &docs);
	for (int j = 0; j < n; j++) {
		snprintf(key, sizeof(key), "%d", j);
		reading(&d, first + step * j, false);
		bson_append_document(&docs, key, -1, &d);
		bson_destroy(&d);
	}
	bson_append_array_end(&cmd, &docs);
	twrite(t, TS_DB, &cmd, -1, NULL, 0);
	bson_destroy(&cmd);
}

/*
 * Insert measurements [0, TS_N) into coll in commands of (at most) 1000;
 * seconds.  by_sensor false: each command is one second of every sensor
 * (1,000 buckets touched, one measurement each); true: each command is up
 * to 1,000 consecutive seconds of one sensor (one bucket touched) -- the
 * same measurements in another order.
 */
static double
ingest_order(tamga_t *t, const char *coll, bool by_sensor)
{
	double t0 = now();
	int64_t secs = TS_N / SENSORS;

	if (!by_sensor) {
		for (int64_t i = 0; i < TS_N; i += SENSORS)
			insert_run(t, coll, i, 1, SENSORS);
		return now() - t0;
	}
	for (int64_t sec0 = 0; sec0 < secs; sec0 += 1000)
		for (int64_t sensor = 0; sensor < SENSORS; sensor++)
			insert_run(t, coll, sec0 * SENSORS + sensor, SENSORS,
			    (int)(secs - sec0 < 1000 ? secs - sec0 : 1000));
	return now() - t0;
}

/*
 * The same N measurements as TS_N / 10,000 sensors of 10,000 seconds each
 * (the 10M run has 10,000 seconds per sensor: about nine of every
 * ten buckets fill their 1,000 measurements and close), one sensor's 1,000
 * seconds per command, into coll: the storage of closed (compressed)
 * buckets at any N.
 */
static void
ingest_long(tamga_t *t, const char *coll)
{
	int64_t sensors = TS_N / 10000 > 0 ? TS_N / 10000 : 1, secs = TS_N / sensors;

	for (int64_t s = 0; s < sensors; s++)
		for (int64_t sec0 = 0; sec0 < secs; sec0 += 1000) {
			bson_t cmd, docs, d;
			char key[16];
			bson_init(&cmd);
			BSON_APPEND_UTF8(&cmd, "insert", coll);
			bson_append_array_begin(&cmd, "documents", -1, &docs);
			for (int64_t j = 0; j < 1000 && sec0 + j < secs; j++) {
				int64_t i = (sec0 + j) * SENSORS + s;   /* reading()'s values for this sensor and second */
				snprintf(key, sizeof(key), "%d", (int)j);
				reading(&d, i, false);
				bson_append_document(&docs, key, -1, &d);
				bson_destroy(&d);
			}
			bson_append_array_end(&cmd, &docs);
			twrite(t, TS_DB, &cmd, -1, NULL, 0);
			bson_destroy(&cmd);
		}
}

static double
ingest(tamga_t *t, const char *coll)
{
	return ingest_order(t, coll, false);
}

/* The seed's manual buckets: {sensor, hour} upserts with $push/$inc. */
static double
ingest_manual(tamga_t *t)
{
	double t0 = now();

	for (int64_t i = 0; i < TS_N; i += SENSORS) {
		bson_t cmd, ups, u, q, op, set, push, inc, r, mn, mx;
		char key[16];
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "update", "manual");
		bson_append_array_begin(&cmd, "updates", -1, &ups);
		for (int j = 0; j < SENSORS && i + j < TS_N; j++) {
			int64_t k = i + j, sec = k / SENSORS;
			double temp = 15.0 + (double)((k * 7) % 200) / 10.0;
			snprintf(key, sizeof(key), "%d", j);
			bson_append_document_begin(&ups, key, -1, &u);
			bson_append_document_begin(&u, "q", -1, &q);
			BSON_APPEND_INT32(&q, "sensor", (int32_t)(k % SENSORS));
			BSON_APPEND_DATE_TIME(&q, "hour", BENCH_AT0 + (sec / 3600) * 3600000);
			bson_append_document_end(&u, &q);
			bson_append_document_begin(&u, "u", -1, &op);
			bson_append_document_begin(&op, "$push", -1, &push);
			bson_append_document_begin(&push, "readings", -1, &r);
			BSON_APPEND_DATE_TIME(&r, "t", BENCH_AT0 + sec * 1000);
			BSON_APPEND_DOUBLE(&r, "temp", temp);
			BSON_APPEND_DOUBLE(&r, "hum", 30.0 + (double)((k * 3) % 500) / 10.0);
			BSON_APPEND_DOUBLE(&r, "press", 1000.0 + (double)((k * 11) % 300) / 10.0);
			bson_append_document_end(&push, &r);
			bson_append_document_end(&op, &push);
			bson_append_document_begin(&op, "$inc", -1, &inc);
			BSON_APPEND_INT32(&inc, "count", 1);
			BSON_APPEND_DOUBLE(&inc, "sumTemp", temp);
			bson_append_document_end(&op, &inc);
			bson_append_document_begin(&op, "$min", -1, &mn);
			BSON_APPEND_DOUBLE(&mn, "minTemp", temp);
			bson_append_document_end(&op, &mn);
			bson_append_document_begin(&op, "$max", -1, &mx);
			BSON_APPEND_DOUBLE(&mx, "maxTemp", temp);
			bson_append_document_end(&op, &mx);
			(void)set;
			bson_append_document_end(&u, &op);
			BSON_APPEND_BOOL(&u, "upsert", true);
			bson_append_document_end(&ups, &u);
		}
		bson_append_array_end(&cmd, &ups);
		twrite(t, TS_DB, &cmd, -1, NULL, 0);
		bson_destroy(&cmd);
	}
	return now() - t0;
}

static int64_t
storage_size(tamga_t *t, const char *coll)
{
	bson_t *cmd = BCON_NEW("collStats", BCON_UTF8(coll)), reply;
	bson_iter_t it;
	int64_t v = -1;

	tcmd(t, TS_DB, cmd, &reply);
	if (bson_iter_init_find(&it, &reply, "storageSize") && BSON_ITER_HOLDS_NUMBER(&it))
		v = bson_iter_as_int64(&it);
	bson_destroy(&reply);
	bson_destroy(cmd);
	return v;
}

/* BENCH_TS_LATE: see the header.  Reading k of sensor s: t = k * 10 s (+5 s
 * when late), meta s. */
#define LATE_SENSORS 100

static void
late_reading(bson_t *d, int64_t s, int64_t k, bool late, int64_t i)
{
	bson_init(d);
	BSON_APPEND_INT32(d, "sensor", (int32_t)s);
	BSON_APPEND_DATE_TIME(d, "t", BENCH_AT0 + k * 10000 + (late ? 5000 : 0));
	BSON_APPEND_DOUBLE(d, "temp", 15.0 + (double)((i * 7) % 200) / 10.0);
	BSON_APPEND_DOUBLE(d, "hum", 30.0 + (double)((i * 3) % 500) / 10.0);
	BSON_APPEND_DOUBLE(d, "press", 1000.0 + (double)((i * 11) % 300) / 10.0);
}

static int64_t
late_count(tamga_t *t, const char *coll, bool raw)
{
	bson_t *cmd = BCON_NEW("count", BCON_UTF8(coll), "rawData", BCON_BOOL(raw)), reply;
	bson_iter_t it;
	int64_t v = -1;

	tcmd(t, TS_DB, cmd, &reply);
	if (bson_iter_init_find(&it, &reply, "n") && BSON_ITER_HOLDS_NUMBER(&it))
		v = bson_iter_as_int64(&it);
	bson_destroy(&reply);
	bson_destroy(cmd);
	return v;
}

static void
late_run(tamga_t *t, const char *coll, bool late, const char *shape, int64_t per, int64_t nlate)
{
	uint64_t rng = 19;

	if (!late) {
		for (int64_t k0 = 0; k0 < per; k0 += 10) {
			bson_t cmd, docs, d;
			char key[16];
			int j = 0;
			bson_init(&cmd);
			BSON_APPEND_UTF8(&cmd, "insert", coll);
			bson_append_array_begin(&cmd, "documents", -1, &docs);
			for (int64_t k = k0; k < k0 + 10 && k < per; k++)
				for (int64_t s = 0; s < LATE_SENSORS; s++, j++) {
					snprintf(key, sizeof(key), "%d", j);
					late_reading(&d, s, k, false, k * LATE_SENSORS + s);
					bson_append_document(&docs, key, -1, &d);
					bson_destroy(&d);
				}
			bson_append_array_end(&cmd, &docs);
			twrite(t, TS_DB, &cmd, -1, NULL, 0);
			bson_destroy(&cmd);
		}
		return;
	}
	for (int64_t done = 0, c = 0; done < nlate; c++) {
		bson_t cmd, docs, d;
		char key[16];
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", coll);
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (int j = 0; j < 1000 && done < nlate; j++, done++) {
			int64_t s, k;
			if (strcmp(shape, "backlog") == 0) {
				/* one sensor's consecutive readings, from a point of its range */
				s = c % LATE_SENSORS;
				k = ((c / LATE_SENSORS) * 1000 + j) % per;
			} else {
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				s = j % LATE_SENSORS;
				k = (int64_t)((rng >> 33) % (uint64_t)per);
			}
			snprintf(key, sizeof(key), "%d", j);
			late_reading(&d, s, k, true, done);
			bson_append_document(&docs, key, -1, &d);
			bson_destroy(&d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, TS_DB, &cmd, -1, NULL, 0);
		bson_destroy(&cmd);
	}
}

static void
late_counters(tamga_t *t)
{
	bson_t *cmd = BCON_NEW("collStats", BCON_UTF8("late")), reply;
	bson_iter_t it, ts;
	static const char *const names[] = {"numBucketsReopened", "numBucketsQueried", "numBucketQueriesFailed",
	    "numBucketsFetched", "numBucketsArchivedDueToTimeBackward", "numBucketsClosedDueToTimeForward",
	    "numBucketInserts", "numBucketUpdates"};

	tcmd(t, TS_DB, cmd, &reply);
	printf("late counters:");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (bson_iter_init_find(&it, &reply, "timeseries") && bson_iter_recurse(&it, &ts) &&
		    bson_iter_find(&ts, names[i]))
			printf(" %s %lld", names[i], (long long)bson_iter_as_int64(&ts));
	printf("\n");
	bson_destroy(&reply);
	bson_destroy(cmd);
}

static void
late_bench(tamga_t **t, const char *path, const char *shape)
{
	int64_t per = TS_N / LATE_SENSORS, nlate = TS_N / 10, b0, b1;
	tamga_error_t e;
	double s;
	bson_t *c = BCON_NEW("create", "late", "timeseries", "{", "timeField", "t", "metaField", "sensor", "}");

	tcmd0(*t, TS_DB, c);
	bson_destroy(c);
	late_run(*t, "late", false, shape, per, 0);
	late_run(*t, "latep", false, shape, per, 0);
	b0 = late_count(*t, "late", true);
	tamga_close(*t);
	if (tamga_open(path, "cache_size=1G", t, &e) != 0)
		die("tamga_open", e.message);
	s = now();
	CALLGRIND_TOGGLE_COLLECT;
	late_run(*t, "late", true, shape, per, nlate);
	CALLGRIND_TOGGLE_COLLECT;
	s = now() - s;
	late_run(*t, "latep", true, shape, per, nlate);
	b1 = late_count(*t, "late", true);
	printf("late %s: %lld in-order + %lld late measurements (%lld sensors), late ingest %.3f s (%.0f/s)\n", shape,
	    (long long)(per * LATE_SENSORS), (long long)nlate, (long long)LATE_SENSORS, s, (double)nlate / s);
	printf("late %s: buckets %lld before the late ones, %lld after (+%lld); measurements ts %lld plain %lld\n", shape,
	    (long long)b0, (long long)b1, (long long)(b1 - b0), (long long)late_count(*t, "late", false),
	    (long long)late_count(*t, "latep", false));
	late_counters(*t);
	tamga_close(*t);
	if (tamga_open(path, "cache_size=1G", t, &e) != 0)
		die("tamga_open", e.message);
	{
		int64_t a = storage_size(*t, "late"), p = storage_size(*t, "latep");
		printf("late %s: storageSize ts %lld, plain %lld, ratio %.3f\n", shape, (long long)a, (long long)p,
		    p > 0 ? (double)a / (double)p : 0.0);
	}
}

/* Run an aggregate, drain it, check the group count; returns the best of
 * three runs in seconds (-1: a wrong answer). */
static double
query(tamga_t *t, const char *coll, int which, int64_t expect)
{
	double best = -1;

	for (int round = 0; round < 3; round++) {
		bson_t *cmd;
		bson_t reply;
		double t0 = now();
		int64_t n;
		if (which == 0)
			cmd = BCON_NEW("aggregate", BCON_UTF8(coll), "pipeline", "[",
			    "{", "$match", "{", "t", "{", "$gte", BCON_DATE_TIME(BENCH_AT0), "$lt", BCON_DATE_TIME(BENCH_AT0 + 86400000), "}", "}", "}",
			    "{", "$group", "{", "_id", "{", "s", "$sensor", "h", "{", "$dateTrunc", "{", "date", "$t", "unit", "hour", "}", "}", "}",
			    "avg", "{", "$avg", "$temp", "}", "}", "}", "]", "cursor", "{", "batchSize", BCON_INT32(1000000), "}");
		else if (which == 3)   /* a count and a max per sensor per hour: on fixed buckets, on the buckets */
			cmd = BCON_NEW("aggregate", BCON_UTF8(coll), "pipeline", "[",
			    "{", "$group", "{", "_id", "{", "s", "$sensor", "h", "{", "$dateTrunc", "{", "date", "$t", "unit", "hour", "}", "}", "}",
			    "n", "{", "$sum", BCON_INT32(1), "}", "hi", "{", "$max", "$temp", "}", "}", "}",
			    "]", "cursor", "{", "batchSize", BCON_INT32(1000000), "}");
		else if (which == 2)   /* mongod's $group on the buckets: a count and a max per sensor */
			cmd = BCON_NEW("aggregate", BCON_UTF8(coll), "pipeline", "[",
			    "{", "$group", "{", "_id", "$sensor", "n", "{", "$sum", BCON_DOUBLE(1.0), "}", "hi", "{", "$max", "$temp", "}", "}", "}",
			    "]", "cursor", "{", "batchSize", BCON_INT32(1000000), "}");
		else
			cmd = BCON_NEW("aggregate", BCON_UTF8(coll), "pipeline", "[",
			    "{", "$sort", "{", "sensor", BCON_INT32(1), "t", BCON_INT32(-1), "}", "}",
			    "{", "$group", "{", "_id", "$sensor", "t", "{", "$first", "$t", "}", "temp", "{", "$first", "$temp", "}", "}", "}",
			    "]", "cursor", "{", "batchSize", BCON_INT32(1000000), "}");
		tcmd(t, TS_DB, cmd, &reply);
		n = tdrain(t, TS_DB, coll, &reply, 1000000);
		bson_destroy(cmd);
		if (n != expect) {
			fprintf(stderr, "bench_timeseries: %s query %d gave %lld groups, not %lld\n", coll, which, (long long)n,
			    (long long)expect);
			return -1;
		}

		if (best < 0 || now() - t0 < best)
			best = now() - t0;
	}
	return best;
}

/* The PostgreSQL peer: the same measurements in a plain table with a
 * (sensor, t) B-tree.  NULL (why set) when no server answers. */
static PGconn *
pg_setup(char *why, size_t why_size)
{
	PGconn *c = pg_connect_env("BENCH_PG_UNIX", why, why_size);
	char *buf;
	size_t used = 0;
	PGresult *r;

	if (c == NULL)
		return NULL;
	pg_exec(c, "DROP TABLE IF EXISTS ts_pg");
	pg_exec(c, "CREATE TABLE ts_pg (sensor int NOT NULL, t timestamptz NOT NULL, temp float8, hum float8, press float8)");
	r = PQexec(c, "COPY ts_pg FROM STDIN");
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("postgresql copy", PQresultErrorMessage(r));
	PQclear(r);
	buf = malloc(1 << 20);
	for (int64_t i = 0; i < TS_N; i++) {
		char line[200], iso[40];
		int64_t sec = i / SENSORS, s = i % SENSORS;
		time_t tt = (time_t)(BENCH_AT0 / 1000 + sec);   /* the measurement's instant, in UTC */
		struct tm tmv;
		int len;
		gmtime_r(&tt, &tmv);
		strftime(iso, sizeof(iso), "%Y-%m-%d %H:%M:%S+00", &tmv);
		len = snprintf(line, sizeof(line), "%lld\t%s\t%.1f\t%.1f\t%.1f\n", (long long)s, iso,
		    15.0 + (double)((i * 7) % 200) / 10.0, 30.0 + (double)((i * 3) % 500) / 10.0,
		    1000.0 + (double)((i * 11) % 300) / 10.0);
		if (used + (size_t)len > (1 << 20)) {
			if (PQputCopyData(c, buf, (int)used) != 1)
				die("postgresql copy", PQerrorMessage(c));
			used = 0;
		}
		memcpy(buf + used, line, (size_t)len);
		used += (size_t)len;
	}
	if (used > 0 && PQputCopyData(c, buf, (int)used) != 1)
		die("postgresql copy", PQerrorMessage(c));
	if (PQputCopyEnd(c, NULL) != 1)
		die("postgresql copy end", PQerrorMessage(c));
	while ((r = PQgetResult(c)) != NULL) {
		pg_check(c, r, "postgresql copy");
		PQclear(r);
	}
	free(buf);
	pg_exec(c, "CREATE INDEX ts_pg_sensor_t ON ts_pg (sensor, t)");
	pg_exec(c, "VACUUM ANALYZE ts_pg");
	pg_exec(c, "CHECKPOINT");
	return c;
}

/* The query on PostgreSQL, best of three in seconds (-1: a wrong row count). */
static double
pg_query(PGconn *c, int which, int64_t expect)
{
	char sql[512];
	double best = -1;

	if (which == 0)
		snprintf(sql, sizeof(sql),
		    "SELECT sensor, date_trunc('hour', t) AS h, avg(temp) FROM ts_pg WHERE t >= to_timestamp(%lld) "
		    "AND t < to_timestamp(%lld) GROUP BY 1, 2", (long long)(BENCH_AT0 / 1000),
		    (long long)(BENCH_AT0 / 1000 + 86400));
	else if (which == 2)
		snprintf(sql, sizeof(sql), "SELECT sensor, count(*)::float8, max(temp) FROM ts_pg GROUP BY 1");
	else
		snprintf(sql, sizeof(sql), "SELECT DISTINCT ON (sensor) sensor, t, temp FROM ts_pg ORDER BY sensor, t DESC");
	for (int round = 0; round < 3; round++) {
		double t0 = now();
		PGresult *r = pg_check(c, PQexec(c, sql), "postgresql query");
		int64_t n = PQntuples(r);
		PQclear(r);
		if (n != expect) {
			fprintf(stderr, "bench_timeseries: postgresql query %d gave %lld rows, not %lld\n", which, (long long)n,
			    (long long)expect);
			return -1;
		}
		if (best < 0 || now() - t0 < best)
			best = now() - t0;
	}
	return best;
}

int
main(int argc, char **argv)
{
	char path[4096];
	tamga_t *t;
	tamga_error_t e;
	double ts_s, plain_s, manual_s;
	int64_t hours, ts_size, plain_size, manual_size;
	PGconn *pgc;
	char pg_why[300];

	if (argc < 2)
		die("usage", "bench_timeseries WORKDIR");
	if (getenv("BENCH_TS_N") != NULL && atoll(getenv("BENCH_TS_N")) >= SENSORS)
		TS_N = atoll(getenv("BENCH_TS_N")) / SENSORS * SENSORS;
	snprintf(path, sizeof(path), "%s/tamga-ts", argv[1]);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	{
		/* BENCH_TS_FIXED: fixed hourly buckets (bucketMaxSpanSeconds ==
		 * bucketRoundingSeconds == 3600), where mongod groups by $dateTrunc of
		 * the time on the buckets (query 3) */
		bson_t *c = getenv("BENCH_TS_FIXED") != NULL
		    ? BCON_NEW("create", "ts", "timeseries", "{", "timeField", "t", "metaField", "sensor",
		               "bucketMaxSpanSeconds", BCON_INT32(3600), "bucketRoundingSeconds", BCON_INT32(3600), "}")
		    : BCON_NEW("create", "ts", "timeseries", "{", "timeField", "t", "metaField", "sensor", "}");
		tcmd0(t, TS_DB, c);
		bson_destroy(c);
	}
	fprintf(stderr, "bench_timeseries: N=%lld measurements\n", (long long)TS_N);
	if (getenv("BENCH_TS_FLOOR") != NULL) {
		snprintf(path, sizeof(path), "%s/wt-floor", argv[1]);
		mkdir(path, 0755);
		ts_floor(path, getenv("BENCH_TS_FLOOR"));
		tamga_close(t);
		return 0;
	}
	if (getenv("BENCH_TS_LATE") != NULL) {
		late_bench(&t, path, getenv("BENCH_TS_LATE"));
		tamga_close(t);
		return 0;
	}
	if (getenv("BENCH_TS_INGEST_ONLY") != NULL) {
		const char *which = getenv("BENCH_TS_INGEST_ONLY");
		bool by_sensor = getenv("BENCH_TS_BY_SENSOR") != NULL;
		double s;
		CALLGRIND_TOGGLE_COLLECT;
		s = ingest_order(t, strcmp(which, "plain") == 0 ? "plain" : "ts", by_sensor);
		CALLGRIND_TOGGLE_COLLECT;
		printf("ingest %s: %lld measurements in %.3f s, %.0f/s\n", which, (long long)TS_N, s, (double)TS_N / s);
		tamga_close(t);
		return 0;
	}
	if (getenv("BENCH_TS_RANGE") != NULL) {
		/* a measurement-field range on the time-series collection, without
		 * and with a user index on that field ({energy: 1}: the bucket index
		 * {control.min.energy: 1, control.max.energy: 1}); BENCH_TS_RANGE=
		 * noindex|index has callgrind collect around that one only */
		const char *which = getenv("BENCH_TS_RANGE");
		double a = -1, b = -1;
		with_energy = true;
		range_gte = getenv("BENCH_TS_RANGE_OP") != NULL && strcmp(getenv("BENCH_TS_RANGE_OP"), "gte") == 0;
		ingest(t, "ts");
		if (strcmp(which, "index") != 0) {
			if (strcmp(which, "noindex") == 0)
				CALLGRIND_TOGGLE_COLLECT;
			a = range_query(t, "ts", NULL);
			if (strcmp(which, "noindex") == 0)
				CALLGRIND_TOGGLE_COLLECT;
		}
		{
			bson_t *c = BCON_NEW("createIndexes", "ts", "indexes", "[", "{", "key", "{", "energy",
			    BCON_INT32(range_gte ? -1 : 1), "}", "name", "energy", "}", "]");
			tcmd0(t, TS_DB, c);
			bson_destroy(c);
		}
		if (strcmp(which, "noindex") != 0) {
			if (strcmp(which, "index") == 0)
				CALLGRIND_TOGGLE_COLLECT;
			b = range_query(t, "ts", NULL);
			if (strcmp(which, "index") == 0)
				CALLGRIND_TOGGLE_COLLECT;
		}
		if (a > 0 && b > 0)
			printf("bench ts_measurement_range%s: tamga %.2f ms with {energy: %d}, %.2f ms without, speedup %.1f\n",
			    range_gte ? "_gte" : "", b * 1000, range_gte ? -1 : 1, a * 1000, a / b);
		else
			printf("range %s: %.2f ms (3 runs)\n", which, (a > 0 ? a : b) * 1000);
		tamga_close(t);
		return 0;
	}
	if (getenv("BENCH_TS_QUERY_ONLY") != NULL) {
		/* instructions of one query (0: average per sensor per hour, 1: last
		 * reading per sensor) on "ts" or, with BENCH_TS_QUERY_PLAIN, on the
		 * plain collection with its {sensor: 1, t: 1} index; callgrind
		 * collects only around the query */
		int which = atoi(getenv("BENCH_TS_QUERY_ONLY"));
		bool plain = getenv("BENCH_TS_QUERY_PLAIN") != NULL;
		int64_t h = (TS_N / SENSORS + 3599) / 3600;
		double s;
		ingest(t, plain ? "plain" : "ts");
		if (plain) {
			bson_t *c = BCON_NEW("createIndexes", "plain", "indexes", "[", "{", "key", "{", "sensor", BCON_INT32(1), "t",
			    BCON_INT32(1), "}", "name", "sensor_1_t_1", "}", "]");
			tcmd0(t, TS_DB, c);
			bson_destroy(c);
		}
		CALLGRIND_TOGGLE_COLLECT;
		s = query(t, plain ? "plain" : "ts", which,
		          which == 0 ? (h > 24 ? 24 : h) * SENSORS : which == 3 ? h * SENSORS : SENSORS);
		CALLGRIND_TOGGLE_COLLECT;
		printf("query %d on %s: best of 3 %.1f ms\n", which, plain ? "plain" : "ts", s * 1000);
		tamga_close(t);
		return 0;
	}
	/* alternate the order so no engine gets the machine's quiet moment */
	plain_s = ingest(t, "plain");
	ts_s = ingest(t, "ts");
	manual_s = ingest_manual(t);
	report("ts_ingest", (double)TS_N / ts_s, "plain", (double)TS_N / plain_s);
	report("ts_ingest", (double)TS_N / ts_s, "manual_buckets", (double)TS_N / manual_s);
	{
		/* the same measurements, each command one sensor's 1,000 seconds */
		bson_t *c = BCON_NEW("create", "ts_s", "timeseries", "{", "timeField", "t", "metaField", "sensor", "}");
		double a, p;
		tcmd0(t, TS_DB, c);
		bson_destroy(c);
		p = ingest_order(t, "plain_s", true);
		a = ingest_order(t, "ts_s", true);
		report("ts_ingest_sensor_batches", (double)TS_N / a, "plain", (double)TS_N / p);
	}
	{
		/* buckets that close: the storage of compressed buckets */
		bson_t *c = BCON_NEW("create", "ts_c", "timeseries", "{", "timeField", "t", "metaField", "sensor", "}");
		tcmd0(t, TS_DB, c);
		bson_destroy(c);
		ingest_long(t, "plain_c");
		ingest_long(t, "ts_c");
	}
	{
		bson_t *c = BCON_NEW("createIndexes", "plain", "indexes", "[", "{", "key", "{", "sensor", BCON_INT32(1), "t",
		    BCON_INT32(1), "}", "name", "sensor_1_t_1", "}", "]");
		tcmd0(t, TS_DB, c);
		bson_destroy(c);
	}
	tamga_close(t);
	if (tamga_open(path, "cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	ts_size = storage_size(t, "ts");
	plain_size = storage_size(t, "plain");
	manual_size = storage_size(t, "manual");
	printf("bench ts_storage_size: tamga %lld bytes, plain %lld bytes, ratio %.2f (manual buckets %lld bytes)\n",
	    (long long)ts_size, (long long)plain_size, plain_size > 0 ? (double)ts_size / (double)plain_size : 0.0,
	    (long long)manual_size);
	{
		int64_t a = storage_size(t, "ts_c"), p = storage_size(t, "plain_c");
		printf("bench ts_storage_size_closed: tamga %lld bytes, plain %lld bytes, ratio %.2f (%lld sensors x %lld s)\n",
		    (long long)a, (long long)p, p > 0 ? (double)a / (double)p : 0.0,
		    (long long)(TS_N / 10000 > 0 ? TS_N / 10000 : 1), (long long)(TS_N / (TS_N / 10000 > 0 ? TS_N / 10000 : 1)));
	}
	pgc = pg_setup(pg_why, sizeof(pg_why));
	hours = (TS_N / SENSORS + 3599) / 3600;
	if (hours > 24)
		hours = 24;
	for (int which = 0; which < 3; which++) {
		const char *name = which == 0 ? "ts_avg_per_sensor_hour" : which == 1 ? "ts_last_per_sensor" : "ts_count_max_per_sensor";
		int64_t expect = which == 0 ? hours * SENSORS : SENSORS;
		double a = query(t, "ts", which, expect), b = query(t, "plain", which, expect);
		if (a < 0 || b < 0)
			printf("bench %s: tamga not available yet (wrong answer)\n", name);
		else
			printf("bench %s: tamga %.1f ms, plain (index {sensor: 1, t: 1}) %.1f ms, speedup %.2f\n", name,
			    a * 1000, b * 1000, b / a);
		if (pgc == NULL)
			printf("bench %s: postgresql not available (%s)\n", name, pg_why);
		else {
			double p = pg_query(pgc, which, expect);
			if (a < 0 || p < 0)
				printf("bench %s: postgresql not available (wrong answer)\n", name);
			else
				printf("bench %s: tamga %.1f ms, postgresql (btree (sensor, t)) %.1f ms, speedup %.2f\n", name,
				    a * 1000, p * 1000, p / a);
		}
	}
	if (pgc != NULL)
		PQfinish(pgc);
	tamga_close(t);
	return 0;
}
