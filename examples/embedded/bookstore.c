/*
 * bookstore.c -- Tamga embedded in a C program: open a data folder, create
 * a collection with a $jsonSchema validator, insert, query, update, and
 * read a validation error's errInfo.  No server, nothing else to run.
 *
 *   cc bookstore.c $(pkg-config --cflags --libs tamga) -o bookstore
 *   ./bookstore ./bookstore-data
 */
#include <stdio.h>
#include <stdlib.h>

#include <tamga/tamga.h>

/* Run a command written as (relaxed) Extended JSON and print the reply. */
static int
run(tamga_t *db, const char *dbname, const char *json)
{
	bson_error_t perr;
	bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &perr);
	bson_t reply;
	tamga_error_t err;
	char *out;
	int rc;

	if (cmd == NULL) {
		fprintf(stderr, "bad JSON: %s\n", perr.message);
		return -1;
	}
	rc = tamga_run_command(db, dbname, cmd, &reply, &err);
	out = bson_as_relaxed_extended_json(&reply, NULL);
	printf("> %s\n< %s\n", json, out);
	bson_free(out);
	bson_destroy(&reply);
	bson_destroy(cmd);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "./bookstore-data";
	tamga_t *db;
	tamga_error_t err;

	if (tamga_open(path, "create", &db, &err) != 0) {
		fprintf(stderr, "tamga_open(%s): %s (code %d)\n", path, err.message, err.code);
		return 1;
	}
	run(db, "bookstore", "{\"drop\": \"reviews\"}");
	run(db, "bookstore",
	    "{\"create\": \"reviews\", \"validator\": {\"$jsonSchema\": {\"bsonType\": \"object\","
	    " \"required\": [\"bookId\", \"rating\"], \"properties\": {\"bookId\": {\"bsonType\": \"int\"},"
	    " \"rating\": {\"bsonType\": \"int\", \"minimum\": 1, \"maximum\": 5}}}}}");
	run(db, "bookstore",
	    "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 1, \"bookId\": 26, \"rating\": 5},"
	    " {\"_id\": 2, \"bookId\": 26, \"rating\": 4}, {\"_id\": 3, \"bookId\": 27, \"rating\": 3}]}");
	/* rating 6 fails validation: the reply carries MongoDB's errInfo */
	run(db, "bookstore", "{\"insert\": \"reviews\", \"documents\": [{\"_id\": 4, \"bookId\": 26, \"rating\": 6}]}");
	run(db, "bookstore", "{\"find\": \"reviews\", \"filter\": {\"bookId\": 26}, \"sort\": {\"rating\": -1}}");
	run(db, "bookstore",
	    "{\"update\": \"reviews\", \"updates\": [{\"q\": {\"_id\": 3}, \"u\": {\"$inc\": {\"rating\": 1}}}]}");
	run(db, "bookstore", "{\"count\": \"reviews\", \"query\": {\"rating\": {\"$gte\": 4}}}");
	tamga_close(db);
	return 0;
}
