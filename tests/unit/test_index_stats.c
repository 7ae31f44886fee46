/*
 * test_index_stats.c -- $indexStats' accesses.ops belong to one index of
 * one data folder: two folders open in one process have indexes stored in
 * tables of the same name ("table:index-<n>"), and using one must not count
 * for the other.  Also: counts from many threads at once are all kept.
 */
#include "tt.h"

#include <pthread.h>

#include "tt_embedded.h"

static int64_t
ops_of(tamga_t *db)
{
	int rc;
	bson_t *r = tt_run_json(db, "s", "{\"aggregate\": \"c\", \"pipeline\": [{\"$indexStats\": {}}, "
	    "{\"$match\": {\"name\": \"a_1\"}}], \"cursor\": {}}", &rc);
	int64_t n = rc == 0 ? tt_get_i64(r, "cursor.firstBatch.0.accesses.ops") : -1;

	tt_free_reply(r);
	return n;
}

static void
setup(tamga_t *db)
{
	int rc;

	tt_free_reply(tt_run_json(db, "s", "{\"insert\": \"c\", \"documents\": [{\"_id\": 1, \"a\": 1}]}", &rc));
	TT_EQ_INT(rc, 0);
	tt_free_reply(tt_run_json(db, "s", "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"a\": 1}, "
	    "\"name\": \"a_1\"}]}", &rc));
	TT_EQ_INT(rc, 0);
}

static tamga_t *shared_db;

static void *
reader(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++) {
		int rc;
		tt_free_reply(tt_run_json(shared_db, "s", "{\"find\": \"c\", \"filter\": {\"a\": 1}}", &rc));
	}
	return NULL;
}

static void
test_two_folders_and_threads(void)
{
	char *d1 = tt_tmpdir("ixstats1"), *d2 = tt_tmpdir("ixstats2");
	tamga_t *one = tt_open_new(d1), *two = tt_open_new(d2);
	pthread_t th[4];
	int rc;

	TT_ASSERT(one != NULL && two != NULL);
	setup(one);
	setup(two);
	TT_EQ_INT(ops_of(one), 0);
	for (int i = 0; i < 3; i++)
		tt_free_reply(tt_run_json(one, "s", "{\"find\": \"c\", \"filter\": {\"a\": 1}}", &rc));
	TT_EQ_INT(ops_of(one), 3);
	TT_EQ_INT(ops_of(two), 0);
	shared_db = two;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	TT_EQ_INT(ops_of(two), 800);
	TT_EQ_INT(ops_of(one), 3);
	tt_close_rm(one, d1);
	tt_close_rm(two, d2);
}

int
main(void)
{
	TT_RUN(test_two_folders_and_threads);
	return tt_finish();
}
