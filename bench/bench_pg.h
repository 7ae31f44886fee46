/*
 * bench_pg.h -- the PostgreSQL peer through libpq: connect to the server
 * bench/run.sh started (conninfo in $BENCH_PG: TCP on 127.0.0.1, as tamgad
 * is reached; $BENCH_PG_UNIX: the same server over its Unix socket), run
 * statements that must succeed, and bulk-load the 200-byte documents as
 * jsonb with COPY.
 *
 * When the variable is unset or the server does not answer, pg_connect
 * returns NULL with the reason, and the PostgreSQL lines say "not
 * available".
 */
#ifndef TAMGA_BENCH_PG_H
#define TAMGA_BENCH_PG_H

#include <libpq-fe.h>

#include "bench_common.h"

/* A new connection with the conninfo in the environment variable env, or
 * NULL with the reason in why. */
static inline PGconn *
pg_connect_env(const char *env, char *why, size_t why_size)
{
	const char *info = getenv(env);
	PGconn *c;

	if (info == NULL || info[0] == '\0') {
		snprintf(why, why_size, "%s not set: PostgreSQL was not started", env);
		return NULL;
	}
	c = PQconnectdb(info);
	if (PQstatus(c) != CONNECTION_OK) {
		snprintf(why, why_size, "%s", PQerrorMessage(c));
		why[strcspn(why, "\n")] = '\0';
		PQfinish(c);
		return NULL;
	}
	PQclear(PQexec(c, "SET client_min_messages = warning"));
	return c;
}

/* A new connection to $BENCH_PG, or NULL with the reason in why. */
static inline PGconn *
pg_connect(char *why, size_t why_size)
{
	return pg_connect_env("BENCH_PG", why, why_size);
}

/* Run sql (no parameters); dies unless it succeeded. */
static inline void
pg_exec(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench: postgresql: %s\n", sql);
		die("postgresql", PQresultErrorMessage(r));
	}
	PQclear(r);
}

/* Check a result; dies unless it is ok.  Returns r. */
static inline PGresult *
pg_check(PGconn *c, PGresult *r, const char *what)
{
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		die(what, PQresultErrorMessage(r));
	return r;
}

/* (Re)create table (id bigint primary key, doc jsonb) and COPY documents
 * [0, n) of make_json into it, then VACUUM ANALYZE and CHECKPOINT.  Returns
 * documents/s of the load (COPY only). */
static inline double
pg_load_docs(PGconn *c, const char *table, int64_t n)
{
	char sql[256], line[600];
	char *buf = malloc(1 << 20);
	size_t used = 0;
	double t0;
	PGresult *r;
	int64_t i;
	int len;

	snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s; CREATE TABLE %s (id bigint PRIMARY KEY, doc jsonb NOT NULL)",
	    table, table);
	pg_exec(c, sql);
	t0 = now();
	snprintf(sql, sizeof(sql), "COPY %s (id, doc) FROM STDIN", table);
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COPY_IN)
		die("postgresql copy", PQresultErrorMessage(r));
	PQclear(r);
	for (i = 0; i < n; i++) {
		/* text COPY format: the JSON has no tab, newline or backslash */
		len = snprintf(line, sizeof(line), "%lld\t", (long long)i);
		len += make_json(line + len, sizeof(line) - (size_t)len - 1, i);
		line[len++] = '\n';
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
	r = PQgetResult(c);
	pg_check(c, r, "postgresql copy");
	PQclear(r);
	while ((r = PQgetResult(c)) != NULL)
		PQclear(r);
	t0 = (double)n / (now() - t0);
	snprintf(sql, sizeof(sql), "VACUUM ANALYZE %s", table);
	pg_exec(c, sql);
	pg_exec(c, "CHECKPOINT"); /* the next case does not pay for this load's dirty pages */
	free(buf);
	return t0;
}

#endif
