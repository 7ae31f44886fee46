/*
 * test_lookup_limits.c -- the sizes $lookup lives with, through the
 * embedded API: what one $lookup gathers for one document may reach
 * mongod's internalLookupStageIntermediateDocumentMaxSizeBytes (100 MiB,
 * as explain's serverParameters says; 4568 past it), the document it makes
 * may pass 16 MB inside the pipeline (a $unwind or $project after it brings
 * it back), and a result past 16 MB + 16 KB is refused as mongod's BSONObj
 * check refuses it (10334).
 */
#include "tt.h"

#include <string.h>

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

static bson_t *
run(const char *cmd, int *rc)
{
	return tt_run_sq(db, "ll", cmd, rc);
}

static void
ok(const char *cmd)
{
	int rc;
	bson_t *r = run(cmd, &rc);

	if (rc != 0)
		TT_FAIL_("%s -> %s", cmd, tt_get_str(r, "errmsg"));
	tt_free_reply(r);
}

static char *
batch(const char *cmd)
{
	return tt_batch_sq(db, "ll", cmd);
}

#define BATCH_EQ(cmd, want) do { char *got_ = batch(cmd); TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)

/* n documents {_id: i, s: <1 000 000 bytes>} into coll. */
static void
insert_big(const char *coll, int n)
{
	size_t len = 1000000;
	char *s = bson_malloc(len + 1);

	memset(s, 'x', len);
	s[len] = '\0';
	for (int i = 0; i < n; i++) {
		bson_t *cmd = bson_new(), docs, d;
		bson_t *r;
		int rc;
		BSON_APPEND_UTF8(cmd, "insert", coll);
		bson_append_array_begin(cmd, "documents", -1, &docs);
		bson_append_document_begin(&docs, "0", -1, &d);
		BSON_APPEND_INT32(&d, "_id", i);
		BSON_APPEND_UTF8(&d, "s", s);
		bson_append_document_end(&docs, &d);
		bson_append_array_end(cmd, &docs);
		r = tt_run_bson(db, "ll", cmd, &rc);
		TT_EQ_INT(rc, 0);
		tt_free_reply(r);
		bson_destroy(cmd);
	}
	bson_free(s);
}

static void
test_past_16mb_inside(void)
{
	ok("{'insert': 'local', 'documents': [{'_id': 1}]}");
	insert_big("big", 20);   /* 20 MB */
	/* the joined document holds 20 MB: fine while a later stage shrinks it */
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [], 'as': 'all'}},"
	         " {'$project': {'n': {'$size': '$all'}}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"n\" : 20 } ]");
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'localField': '_id',"
	         " 'foreignField': 'nothing', 'as': 'all'}}, {'$unwind': '$all'}, {'$group': {'_id': null,"
	         " 'n': {'$sum': 1}, 'len': {'$sum': {'$strLenBytes': '$all.s'}}}}], 'cursor': {}}",
	    "[ ]");
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [], 'as': 'all'}},"
	         " {'$unwind': '$all'}, {'$group': {'_id': null, 'n': {'$sum': 1},"
	         " 'len': {'$sum': {'$strLenBytes': '$all.s'}}}}], 'cursor': {}}",
	    "[ { \"_id\" : null, \"n\" : 20, \"len\" : 20000000 } ]");
	/* as a result it is refused */
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [], 'as': 'all'}}],"
	         " 'cursor': {}}",
	    "error 10334: Executor error during aggregate command on namespace: ll.local :: caused by :: BSONObj size: 20000534 (0x1312F16) "
	    "is invalid. Size must be between 0 and 16793600(16MB) First element: _id: 1");
}

static void
test_past_100mib(void)
{
	int rc;
	bson_t *r;

	/* 20 documents of 1 MB, 6 times each: 120 MB for one document */
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [{'$set': {'k': [1, 2, 3, 4, 5, 6]}},"
	         " {'$unwind': '$k'}], 'as': 'all'}}, {'$project': {'n': {'$size': '$all'}}}], 'cursor': {}}",
	    "error 4568: Executor error during aggregate command on namespace: ll.local :: caused by :: Total size of documents in big "
	    "matching pipeline's $lookup stage exceeds 104857600 bytes");
	/* 5 times each: 100 MB, within the limit */
	BATCH_EQ("{'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [{'$set': {'k': [1, 2, 3, 4, 5]}},"
	         " {'$unwind': '$k'}], 'as': 'all'}}, {'$project': {'n': {'$size': '$all'}}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"n\" : 100 } ]");
	/* the limit explain reports */
	r = run("{'explain': {'aggregate': 'local', 'pipeline': [{'$lookup': {'from': 'big', 'pipeline': [], 'as': 'a'}}],"
	        " 'cursor': {}}}", &rc);
	if (rc != 0)
		TT_FAIL_("explain -> %s", tt_get_str(r, "errmsg"));
	TT_EQ_INT(tt_get_i64(r, "serverParameters.internalLookupStageIntermediateDocumentMaxSizeBytes"), 104857600);
	{
		/* mongod's order of an aggregate's explain */
		bson_iter_t it;
		char keys[256] = "";
		bson_iter_init(&it, r);
		while (bson_iter_next(&it)) {
			bson_strncpy(keys + strlen(keys), bson_iter_key(&it), sizeof(keys) - strlen(keys));
			bson_strncpy(keys + strlen(keys), " ", sizeof(keys) - strlen(keys));
		}
		TT_EQ_STR(keys, "explainVersion stages serverInfo serverParameters command ok ");
	}
	tt_free_reply(r);
}

int
main(void)
{
	dir = tt_tmpdir("lookup_limits");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_past_16mb_inside);
	TT_RUN(test_past_100mib);
	tt_close_rm(db, dir);
	return tt_finish();
}
