/*
 * bench_geo.c -- geospatial queries over N = $BENCH_N (default 1M) points
 * (issue 18's targets), through the embedded API, next to PostgreSQL +
 * PostGIS (geography points, GiST index) on the same points:
 *
 *   geo_near_top10      the 10 shops nearest a random point: Tamga
 *                       find({loc: {$near: {$geometry: p}}}).limit(10) on
 *                       a 2dsphere index; PostGIS SELECT id ... ORDER BY
 *                       geog <-> p LIMIT 10 (KNN over GiST).
 *   geo_within_1pct     the points inside a random 0.1 x 0.1 degree
 *                       square, ~1% of them: $geoWithin {$geometry:
 *                       Polygon}; PostGIS ST_Intersects(geog, square)
 *                       (GiST), every id fetched.
 *   geo_dwithin_2km     the points within 2 km of a random point:
 *                       $geoWithin {$centerSphere}; PostGIS ST_DWithin(geog,
 *                       p, 2000, false) (GiST; on the sphere, as mongod).
 *
 * Points are uniform in [13, 14] x [52, 53] (a Berlin-sized square, one
 * degree a side).  Queries/s over BENCH_SECONDS (default 10) per side, the
 * same query points in the same order, results counted on both sides.
 */
#include <libpq-fe.h>

#include "bench_common.h"
#include "bench_pg.h"

#define DB "bench"

static void
point_of(int64_t i, double *x, double *y)
{
	rng_t r;

	rnd_reset(&r, mix64((uint64_t)i + 11));
	*x = 13.0 + (double)rnd(&r, 100000000) / 1e8;
	*y = 52.0 + (double)rnd(&r, 100000000) / 1e8;
}

static void
load_tamga(tamga_t *t)
{
	int64_t i, j;
	char key[16];

	{
		bson_t *c = BCON_NEW("createIndexes", "shops", "indexes", "[", "{", "key", "{", "loc", "2dsphere", "}",
		    "name", "loc_2dsphere", "}", "]");
		tcmd0(t, DB, c);
		bson_destroy(c);
	}
	for (i = 0; i < N; i += 1000) {
		bson_t cmd, docs, d, loc, co;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "insert", "shops");
		bson_append_array_begin(&cmd, "documents", -1, &docs);
		for (j = i; j < i + 1000 && j < N; j++) {
			double x, y;
			point_of(j, &x, &y);
			snprintf(key, sizeof(key), "%d", (int)(j - i));
			bson_append_document_begin(&docs, key, -1, &d);
			BSON_APPEND_INT64(&d, "_id", j);
			BSON_APPEND_DOCUMENT_BEGIN(&d, "loc", &loc);
			BSON_APPEND_UTF8(&loc, "type", "Point");
			BSON_APPEND_ARRAY_BEGIN(&loc, "coordinates", &co);
			BSON_APPEND_DOUBLE(&co, "0", x);
			BSON_APPEND_DOUBLE(&co, "1", y);
			bson_append_array_end(&loc, &co);
			bson_append_document_end(&d, &loc);
			bson_append_document_end(&docs, &d);
		}
		bson_append_array_end(&cmd, &docs);
		twrite(t, DB, &cmd, (j - i), NULL, 0);
		bson_destroy(&cmd);
	}
}

static void
load_pg(PGconn *c)
{
	char line[200];
	PGresult *r;
	int64_t i;

	pg_exec(c, "CREATE EXTENSION IF NOT EXISTS postgis");
	pg_exec(c, "DROP TABLE IF EXISTS shops; CREATE TABLE shops (id bigint PRIMARY KEY, x float8 NOT NULL, "
	    "y float8 NOT NULL)");
	r = PQexec(c, "COPY shops (id, x, y) FROM STDIN");
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("postgresql copy", PQresultErrorMessage(r));
	PQclear(r);
	for (i = 0; i < N; i++) {
		double x, y;
		int len;
		point_of(i, &x, &y);
		len = snprintf(line, sizeof(line), "%lld\t%.17g\t%.17g\n", (long long)i, x, y);
		if (PQputCopyData(c, line, len) != 1)
			die("postgresql copy", PQerrorMessage(c));
	}
	if (PQputCopyEnd(c, NULL) != 1)
		die("postgresql copy end", PQerrorMessage(c));
	while ((r = PQgetResult(c)) != NULL) {
		pg_check(c, r, "postgresql copy");
		PQclear(r);
	}
	pg_exec(c, "ALTER TABLE shops ADD COLUMN geog geography(Point, 4326)");
	pg_exec(c, "UPDATE shops SET geog = ST_SetSRID(ST_MakePoint(x, y), 4326)::geography");
	pg_exec(c, "CREATE INDEX shops_geog ON shops USING gist (geog)");
	pg_exec(c, "VACUUM ANALYZE shops");
	pg_exec(c, "CHECKPOINT");
}

static double
seconds(void)
{
	const char *s = getenv("BENCH_SECONDS");
	return s != NULL && atof(s) > 0 ? atof(s) : 10;
}

/* The k-th query point (inside the square, away from its edges). */
static void
query_point(int64_t k, double *x, double *y)
{
	rng_t r;

	rnd_reset(&r, mix64((uint64_t)k + 991));
	*x = 13.1 + (double)rnd(&r, 800000) / 1e6;
	*y = 52.1 + (double)rnd(&r, 800000) / 1e6;
}

typedef enum { Q_NEAR, Q_WITHIN, Q_DWITHIN } qkind_t;

static bson_t *
tamga_query(qkind_t q, double x, double y)
{
	switch (q) {
	case Q_NEAR:
		return BCON_NEW("find", "shops", "filter", "{", "loc", "{", "$near", "{", "$geometry", "{", "type", "Point",
		    "coordinates", "[", BCON_DOUBLE(x), BCON_DOUBLE(y), "]", "}", "}", "}", "}", "limit", BCON_INT32(10));
	case Q_WITHIN:
		return BCON_NEW("find", "shops", "filter", "{", "loc", "{", "$geoWithin", "{", "$geometry", "{", "type",
		    "Polygon", "coordinates", "[", "[", "[", BCON_DOUBLE(x), BCON_DOUBLE(y), "]", "[", BCON_DOUBLE(x + 0.1),
		    BCON_DOUBLE(y), "]", "[", BCON_DOUBLE(x + 0.1), BCON_DOUBLE(y + 0.1), "]", "[", BCON_DOUBLE(x),
		    BCON_DOUBLE(y + 0.1), "]", "[", BCON_DOUBLE(x), BCON_DOUBLE(y), "]", "]", "]", "}", "}", "}", "}",
		    "projection", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(100000));
	default:
		return BCON_NEW("find", "shops", "filter", "{", "loc", "{", "$geoWithin", "{", "$centerSphere", "[", "[",
		    BCON_DOUBLE(x), BCON_DOUBLE(y), "]", BCON_DOUBLE(2000.0 / 6378100.0), "]", "}", "}", "}",
		    "projection", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(100000));
	}
}

static int64_t nqueries[2][3];

static double
run_tamga(tamga_t *t, qkind_t q, double limit, int64_t *results)
{
	double t0 = now();
	int64_t k = 0;

	*results = 0;
	while (now() - t0 < limit) {
		double x, y;
		bson_t *c, reply;
		query_point(k++, &x, &y);
		c = tamga_query(q, x, y);
		tcmd(t, DB, c, &reply);
		*results += tdrain(t, DB, "shops", &reply, 100000);
		bson_destroy(c);
	}
	nqueries[0][q] = k;
	return (double)k / (now() - t0);
}

static double
run_pg(PGconn *c, qkind_t q, double limit, int64_t *results)
{
	static const char *const sql[] = {
		"SELECT id FROM shops ORDER BY geog <-> ST_SetSRID(ST_MakePoint($1::float8, $2::float8), 4326)::geography LIMIT 10",
		"SELECT id FROM shops WHERE ST_Intersects(geog, ST_MakeEnvelope($1::float8, $2::float8, $1::float8 + 0.1, $2::float8 + 0.1, 4326)::geography)",
		"SELECT id FROM shops WHERE ST_DWithin(geog, ST_SetSRID(ST_MakePoint($1::float8, $2::float8), 4326)::geography, 2000, false)",
	};
	double t0 = now();
	int64_t k = 0;
	char name[8];
	PGresult *r;

	snprintf(name, sizeof(name), "q%d", (int)q);
	r = PQprepare(c, name, sql[q], 2, NULL);
	pg_check(c, r, "postgresql prepare");
	PQclear(r);
	*results = 0;
	while (now() - t0 < limit) {
		double x, y;
		char sx[32], sy[32];
		const char *params[2] = {sx, sy};
		query_point(k++, &x, &y);
		snprintf(sx, sizeof(sx), "%.17g", x);
		snprintf(sy, sizeof(sy), "%.17g", y);
		r = PQexecPrepared(c, name, 2, params, NULL, NULL, 0);
		pg_check(c, r, "postgresql query");
		*results += PQntuples(r);
		PQclear(r);
	}
	nqueries[1][q] = k;
	return (double)k / (now() - t0);
}

int
main(int argc, char **argv)
{
	static const char *const names[] = {"geo_near_top10", "geo_within_1pct", "geo_dwithin_2km"};
	char path[4096], why[600];
	tamga_t *t;
	tamga_error_t e;
	PGconn *pc;
	double lim = seconds(), tq[3], pq[3];
	int64_t tr[3], pr[3];
	int q;

	if (argc < 2)
		die("usage", "bench_geo WORKDIR");
	bench_read_n("bench_geo");
	snprintf(path, sizeof(path), "%s/tamga-geo", argv[1]);
	if (tamga_open(path, "create,cache_size=1G", &t, &e) != 0)
		die("tamga_open", e.message);
	load_tamga(t);
	for (q = 0; q < 3; q++)
		tq[q] = run_tamga(t, (qkind_t)q, lim, &tr[q]);
	tamga_close(t);
	if ((pc = pg_connect(why, sizeof(why))) != NULL) {
		load_pg(pc);
		for (q = 0; q < 3; q++) {
			pq[q] = run_pg(pc, (qkind_t)q, lim, &pr[q]);
			report(names[q], tq[q], "postgis_gist", pq[q]);
			/* the same query points in the same order: equal counts over the common prefix */
			fprintf(stderr, "bench_geo: %s: %.1f results per query on tamga (%lld queries), %.1f on postgis (%lld)\n",
			    names[q], (double)tr[q] / (double)(nqueries[0][q] ? nqueries[0][q] : 1), (long long)nqueries[0][q],
			    (double)pr[q] / (double)(nqueries[1][q] ? nqueries[1][q] : 1), (long long)nqueries[1][q]);
		}
		PQfinish(pc);
	} else {
		for (q = 0; q < 3; q++)
			printf("bench %s: tamga %.0f, postgis not available (%s)\n", names[q], tq[q], why);
	}
	return 0;
}
