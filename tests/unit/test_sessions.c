/*
 * test_sessions.c -- the logical session cache behind startSession,
 * endSessions, refreshSessions and $listLocalSessions, through the embedded
 * API: thousands of sessions recorded, half of them ended in an order that
 * moves entries around the cache's hash index, every lookup afterwards
 * still finding exactly the live ones.
 */
#include "tt.h"
#include "tt_embedded.h"

#define NSESS 3000

static tamga_t *db;
static uint8_t ids[NSESS][16];

/* The number of sessions $listLocalSessions shows, and whether id is one. */
static int
listed(const uint8_t *id, bool *found)
{
	int rc, n = 0;
	bson_t *r = tt_run_json(db, "admin",
	    "{\"aggregate\": 1, \"pipeline\": [{\"$listLocalSessions\": {\"allUsers\": true}}],"
	    " \"cursor\": {\"batchSize\": 100000}}", &rc);
	bson_iter_t it, b, d;

	*found = false;
	TT_EQ_INT(rc, 0);
	if (tt_get(r, "cursor.firstBatch", &it) && bson_iter_recurse(&it, &b)) {
		while (bson_iter_next(&b)) {
			bson_subtype_t st;
			uint32_t len;
			const uint8_t *got;
			n++;
			if (bson_iter_recurse(&b, &d) && bson_iter_find_descendant(&d, "_id.id", &it)) {
				bson_iter_binary(&it, &st, &len, &got);
				if (id != NULL && len == 16 && memcmp(got, id, 16) == 0)
					*found = true;
			}
		}
	}
	tt_free_reply(r);
	return n;
}

/* {endSessions|refreshSessions: [{id: UUID}]} for ids[i]. */
static void
one_session_cmd(const char *name, int i)
{
	bson_t cmd = BSON_INITIALIZER, arr, doc;
	bson_t *r;
	int rc;

	bson_append_array_begin(&cmd, name, -1, &arr);
	bson_append_document_begin(&arr, "0", 1, &doc);
	bson_append_binary(&doc, "id", 2, BSON_SUBTYPE_UUID, ids[i], 16);
	bson_append_document_end(&arr, &doc);
	bson_append_array_end(&cmd, &arr);
	r = tt_run_bson(db, "admin", &cmd, &rc);
	TT_EQ_INT(rc, 0);
	tt_free_reply(r);
	bson_destroy(&cmd);
}

static void
test_many_sessions(void)
{
	int rc, i, before;
	bool found;

	before = listed(NULL, &found);
	for (i = 0; i < NSESS; i++) {
		bson_t *r = tt_run_json(db, "admin", "{\"startSession\": 1}", &rc);
		bson_iter_t it;
		bson_subtype_t st;
		uint32_t len;
		const uint8_t *id;
		TT_EQ_INT(rc, 0);
		TT_ASSERT(tt_get(r, "id.id", &it) && BSON_ITER_HOLDS_BINARY(&it));
		bson_iter_binary(&it, &st, &len, &id);
		TT_EQ_INT(len, 16);
		memcpy(ids[i], id, 16);
		tt_free_reply(r);
	}
	TT_EQ_INT(listed(ids[NSESS - 1], &found), before + NSESS);
	TT_ASSERT(found);

	/* end every other one, from both ends towards the middle */
	for (i = 0; i < NSESS / 2; i += 2) {
		one_session_cmd("endSessions", i);
		one_session_cmd("endSessions", NSESS - 1 - i);
	}
	/* ending one twice, or refreshing one that ended, changes nothing
	 * (refresh records it again, as mongod's refreshSessions does) */
	one_session_cmd("endSessions", 0);
	TT_EQ_INT(listed(ids[0], &found), before + NSESS / 2);
	TT_ASSERT(!found);
	TT_EQ_INT(listed(ids[1], &found), before + NSESS / 2);
	TT_ASSERT(found);
	one_session_cmd("refreshSessions", 0);
	TT_EQ_INT(listed(ids[0], &found), before + NSESS / 2 + 1);
	TT_ASSERT(found);
	/* every live session is still found by its id: refreshing it adds nothing */
	for (i = 0; i < NSESS; i++)
		one_session_cmd("refreshSessions", i);
	TT_EQ_INT(listed(NULL, &found), before + NSESS);
	for (i = 0; i < NSESS; i++)
		one_session_cmd("endSessions", i);
	TT_EQ_INT(listed(NULL, &found), before);
}

int
main(void)
{
	char *dir = tt_tmpdir("sessions");

	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_many_sessions);
	tt_close_rm(db, dir);
	return tt_finish();
}
