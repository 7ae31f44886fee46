/*
 * repl_client_insns.c -- the client's share of issue 16's targets: the
 * instructions libmongoc spends per insert_one / per 10-insert transaction
 * and libpq per `BEGIN; 10 INSERT; COMMIT`, the same operations bench_repl
 * times (its documents, its prepared INSERT).  Run under
 *   valgrind --tool=callgrind --collect-atstart=no repl_client_insns MODE URI N
 * (the measured loop of N operations sits between two
 * CALLGRIND_TOGGLE_COLLECTs, after a warm-up): callgrind's total / N is the
 * client's cost per operation.  MODE: `insert` (insert_one, the driver's
 * defaults), `txn` (startTransaction, 10 insert_one, commitTransaction) with
 * a mongodb:// URI; `pg` with a libpq connection string (creates table
 * txn10, as bench_repl).  docs/benchmarks.md, "Session 9", has the numbers
 * and what they mean.  Nothing is asserted; a failed operation exits.
 */
#include <unistd.h>

#include <libpq-fe.h>
#include <mongoc/mongoc.h>
#include <valgrind/callgrind.h>

#include "bench_common.h"

static void
mongo_run(const char *mode, const char *uri, int n, int64_t id)
{
	mongoc_client_t *client;
	mongoc_collection_t *coll;
	bson_error_t err;

	mongoc_init();
	if ((client = mongoc_client_new(uri)) == NULL)
		die("mongoc_client_new", uri);
	coll = mongoc_client_get_collection(client, "benchrepl", "clientinsns");
	for (int pass = 0; pass < 2; pass++) {
		int ops = pass ? n : 50;
		if (pass == 1)
			CALLGRIND_TOGGLE_COLLECT;
		for (int i = 0; i < ops; i++) {
			if (strcmp(mode, "insert") == 0) {
				bson_t doc;
				make_doc(&doc, id++);
				if (!mongoc_collection_insert_one(coll, &doc, NULL, NULL, &err))
					die("insert_one", err.message);
				bson_destroy(&doc);
				continue;
			}
			mongoc_client_session_t *cs = mongoc_client_start_session(client, NULL, &err);
			bson_t opts = BSON_INITIALIZER;
			if (cs == NULL || !mongoc_client_session_append(cs, &opts, &err) ||
			    !mongoc_client_session_start_transaction(cs, NULL, &err))
				die("startTransaction", err.message);
			for (int k = 0; k < 10; k++) {
				bson_t doc;
				make_doc(&doc, id++);
				if (!mongoc_collection_insert_one(coll, &doc, &opts, NULL, &err))
					die("insert_one in a transaction", err.message);
				bson_destroy(&doc);
			}
			if (!mongoc_client_session_commit_transaction(cs, NULL, &err))
				die("commitTransaction", err.message);
			bson_destroy(&opts);
			mongoc_client_session_destroy(cs);
		}
		if (pass == 1)
			CALLGRIND_TOGGLE_COLLECT;
	}
	mongoc_collection_destroy(coll);
	mongoc_client_destroy(client);
	mongoc_cleanup();
}

static void
pg_run(const char *conninfo, int n, int64_t id)
{
	PGconn *c = PQconnectdb(conninfo);
	char idbuf[32], json[600];
	const char *params[2] = {idbuf, json};

	if (PQstatus(c) != CONNECTION_OK)
		die("postgresql connect", PQerrorMessage(c));
	PQclear(PQexec(c, "CREATE TABLE IF NOT EXISTS txn10 (id bigint PRIMARY KEY, doc jsonb NOT NULL)"));
	PQclear(PQprepare(c, "ins", "INSERT INTO txn10 (id, doc) VALUES ($1, $2::jsonb)", 2, NULL));
	for (int pass = 0; pass < 2; pass++) {
		int ops = pass ? n : 50;
		if (pass == 1)
			CALLGRIND_TOGGLE_COLLECT;
		for (int i = 0; i < ops; i++) {
			PQclear(PQexec(c, "BEGIN"));
			for (int k = 0; k < 10; k++) {
				PGresult *r;
				snprintf(idbuf, sizeof(idbuf), "%lld", (long long)id);
				make_json(json, sizeof(json), id++);
				r = PQexecPrepared(c, "ins", 2, params, NULL, NULL, 0);
				if (PQresultStatus(r) != PGRES_COMMAND_OK)
					die("postgresql INSERT", PQerrorMessage(c));
				PQclear(r);
			}
			PQclear(PQexec(c, "COMMIT"));
		}
		if (pass == 1)
			CALLGRIND_TOGGLE_COLLECT;
	}
	PQfinish(c);
}

int
main(int argc, char **argv)
{
	int64_t id = (int64_t)getpid() * 100000000LL;   /* fresh _ids on every run */
	int n;

	if (argc < 4 || (n = atoi(argv[3])) <= 0)
		die("usage", "repl_client_insns insert|txn|pg URI N");
	if (strcmp(argv[1], "pg") == 0)
		pg_run(argv[2], n, id);
	else if (strcmp(argv[1], "insert") == 0 || strcmp(argv[1], "txn") == 0)
		mongo_run(argv[1], argv[2], n, id);
	else
		die("unknown mode", argv[1]);
	printf("ops %d %s\n", n, strcmp(argv[1], "insert") == 0 ? "inserts" : "transactions");
	return 0;
}
