/*
 * mongoc_e2e.c -- libmongoc (the C driver) against tamgad: handshake with
 * compression, CRUD, a cursor over several getMore batches, error replies.
 * Takes the URI from argv[1] or TAMGA_URI; prints "N passed, N failed".
 */
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed, cur_failed;

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); cur_failed++; } } while (0)
#define RUN(fn, cl) do { cur_failed = 0; fn(cl); if (cur_failed) { failed++; printf("not ok - %s\n", #fn); } \
	else { passed++; printf("ok - %s\n", #fn); } } while (0)

static void
test_hello(mongoc_client_t *cl)
{
	bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
	bson_t reply;
	bson_error_t e;
	bson_iter_t it;

	CHECK(mongoc_client_command_simple(cl, "admin", cmd, NULL, &reply, &e));
	CHECK(bson_iter_init_find(&it, &reply, "isWritablePrimary") && bson_iter_as_bool(&it));
	CHECK(bson_iter_init_find(&it, &reply, "maxWireVersion") && bson_iter_as_int64(&it) >= 25);
	bson_destroy(&reply);
	bson_destroy(cmd);
}

static void
test_crud_cursor(mongoc_client_t *cl)
{
	mongoc_collection_t *coll = mongoc_client_get_collection(cl, "e2e_c", "items");
	bson_t *docs[500];
	bson_error_t e;
	const bson_t *doc;
	mongoc_cursor_t *cur;
	bson_t *filter, *opts;
	int i, n = 0;
	int64_t count;

	mongoc_collection_drop(coll, NULL);
	for (i = 0; i < 500; i++)
		docs[i] = BCON_NEW("_id", BCON_INT32(i), "n", BCON_INT32(i * 2));
	CHECK(mongoc_collection_insert_many(coll, (const bson_t **)docs, 500, NULL, NULL, &e));
	if (e.code)
		fprintf(stderr, "  insert_many: %s\n", e.message);
	for (i = 0; i < 500; i++)
		bson_destroy(docs[i]);
	filter = bson_new();
	/* the count command (count_documents runs an aggregation) */
	count = mongoc_collection_estimated_document_count(coll, NULL, NULL, NULL, &e);
	CHECK(count == 500);
	opts = BCON_NEW("batchSize", BCON_INT32(37), "sort", "{", "_id", BCON_INT32(1), "}");
	cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
	while (mongoc_cursor_next(cur, &doc)) {
		bson_iter_t it;
		CHECK(bson_iter_init_find(&it, doc, "_id") && bson_iter_int32(&it) == n);
		n++;
	}
	CHECK(!mongoc_cursor_error(cur, &e));
	CHECK(n == 500);
	mongoc_cursor_destroy(cur);
	bson_destroy(opts);
	bson_destroy(filter);
	{
		bson_t *sel = BCON_NEW("_id", "{", "$gte", BCON_INT32(250), "}");
		bson_t reply;
		bson_iter_t it;
		CHECK(mongoc_collection_delete_many(coll, sel, NULL, &reply, &e));
		CHECK(bson_iter_init_find(&it, &reply, "deletedCount") && bson_iter_as_int64(&it) == 250);
		bson_destroy(&reply);
		bson_destroy(sel);
	}
	mongoc_collection_drop(coll, NULL);
	mongoc_collection_destroy(coll);
}

static void
test_errors(mongoc_client_t *cl)
{
	mongoc_collection_t *coll = mongoc_client_get_collection(cl, "e2e_c", "dups");
	bson_t *d = BCON_NEW("_id", BCON_UTF8("k"));
	bson_t *cmd = BCON_NEW("noSuchCommand", BCON_INT32(1));
	bson_error_t e;

	mongoc_collection_drop(coll, NULL);
	CHECK(mongoc_collection_insert_one(coll, d, NULL, NULL, &e));
	CHECK(!mongoc_collection_insert_one(coll, d, NULL, NULL, &e));
	CHECK(e.code == 11000);
	CHECK(!mongoc_client_command_simple(cl, "e2e_c", cmd, NULL, NULL, &e));
	CHECK(e.code == 59);
	mongoc_collection_drop(coll, NULL);
	bson_destroy(cmd);
	bson_destroy(d);
	mongoc_collection_destroy(coll);
}

int
main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : getenv("TAMGA_URI");
	static const char *const comps[] = {"", "zlib", "zstd", "snappy"};
	size_t i;

	if (base == NULL)
		base = "mongodb://127.0.0.1:27017";
	mongoc_init();
	for (i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		char uri[512];
		mongoc_client_t *cl;
		snprintf(uri, sizeof(uri), "%s/?serverSelectionTimeoutMS=10000%s%s", base,
		    comps[i][0] ? "&compressors=" : "", comps[i]);
		cl = mongoc_client_new(uri);
		if (cl == NULL) {
			printf("not ok - client for %s\n", uri);
			failed++;
			continue;
		}
		printf("# %s\n", uri);
		RUN(test_hello, cl);
		RUN(test_crud_cursor, cl);
		RUN(test_errors, cl);
		mongoc_client_destroy(cl);
	}
	mongoc_cleanup();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
