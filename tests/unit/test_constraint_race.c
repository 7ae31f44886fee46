/*
 * test_constraint_race.c -- collMod's upgrade to validationLevel 'constraint'
 * is one step with its scan.  While it runs, a writer keeps inserting
 * documents that break the validator (accepted with a warning at 'strict' /
 * 'warn' before the upgrade).  Whatever the interleaving, the collMod either
 * refuses (it saw one: 12370902) or succeeds with no violating document in
 * the collection: a writer validated before the upgrade is checked again.
 */
#include "tt.h"

#include <pthread.h>
#include <stdatomic.h>

#include "tt_embedded.h"

static tamga_t *db;
static atomic_bool stop;

static void *
writer(void *arg)
{
	int i = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		char json[128];
		int rc;
		snprintf(json, sizeof(json), "{\"insert\": \"c\", \"documents\": [{\"a\": \"bad %d\"}]}", i++);
		tt_free_reply(tt_run_json(db, "race", json, &rc));
	}
	return NULL;
}

static int64_t
count_invalid(void)
{
	int rc;
	bson_t *r = tt_run_json(db, "race", "{\"count\": \"c\", \"query\": {\"a\": {\"$not\": {\"$type\": \"int\"}}}}",
	    &rc);
	int64_t n = tt_get_i64(r, "n");

	tt_free_reply(r);
	return n;
}

/* A fresh collection: 2000 valid documents, strict / warn, prepared. */
static void
setup(void)
{
	char key[16];
	int rc;

	tt_free_reply(tt_run_json(db, "race", "{\"drop\": \"c\"}", &rc));
	tt_free_reply(tt_run_json(db, "race", "{\"create\": \"c\", \"validator\": {\"a\": {\"$type\": \"int\"}}, "
	    "\"validationLevel\": \"strict\", \"validationAction\": \"warn\"}", &rc));
	TT_EQ_INT(rc, 0);
	for (int i = 0; i < 2000; i += 500) {
		bson_t *cmd = bson_new(), arr;
		BSON_APPEND_UTF8(cmd, "insert", "c");
		BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
		for (int j = 0; j < 500; j++) {
			bson_t d;
			snprintf(key, sizeof(key), "%d", j);
			BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &d);
			BSON_APPEND_INT32(&d, "a", i + j);
			bson_append_document_end(&arr, &d);
		}
		bson_append_array_end(cmd, &arr);
		tt_free_reply(tt_run_bson(db, "race", cmd, &rc));
		bson_destroy(cmd);
	}
	tt_free_reply(tt_run_json(db, "race", "{\"collMod\": \"c\", \"prepareConstraintValidationLevel\": true}", &rc));
	TT_EQ_INT(rc, 0);
}

static void
test_upgrade_races_writer(void)
{
	int round, upgraded = 0, refused = 0;

	for (round = 0; round < 12; round++) {
		pthread_t th;
		bson_t *r;
		int rc;

		setup();
		atomic_store(&stop, false);
		pthread_create(&th, NULL, writer, NULL);
		r = tt_run_json(db, "race", "{\"collMod\": \"c\", \"validationLevel\": \"constraint\", "
		    "\"validationAction\": \"error\"}", &rc);
		if (rc == 0) {
			upgraded++;
		} else {
			TT_EQ_INT(tt_get_i64(r, "code"), 12370902);
			refused++;
		}
		tt_free_reply(r);
		atomic_store(&stop, true);
		pthread_join(th, NULL);
		if (rc == 0)
			TT_EQ_INT(count_invalid(), 0);
	}
	printf("# %d upgrades, %d refusals\n", upgraded, refused);
	TT_EQ_INT(upgraded + refused, 12);
}

int
main(void)
{
	char *dir = tt_tmpdir("constraint_race");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_upgrade_races_writer);
	tt_close_rm(db, dir);
	return tt_finish();
}
