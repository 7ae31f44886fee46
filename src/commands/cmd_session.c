/*
 * cmd_session.c -- the logical session commands over repl/session.h:
 * startSession, endSessions, refreshSessions, killSessions, killAllSessions,
 * killAllSessionsByPattern, and the session cache's two entry points for the
 * rest of the server (a command's lsid touches its session; the
 * $listLocalSessions stage lists them).
 */
#include "auth/auth.h"
#include "commands/cmd_admin.h"
#include "commands/commands_private.h"

#include <openssl/rand.h>
#include <string.h>

#include "bson/value.h"
#include "repl/session.h"
#include "repl/txn.h"

/* The client's user as "name@db", or NULL. */
static char *
session_user(client_t *cl)
{
	char u[256], d[256];

	if (cl == NULL || !auth_client_user(&cl->auth, u, sizeof(u), d, sizeof(d)))
		return NULL;
	return bson_strdup_printf("%s@%s", u, d);
}

void
cmd_admin_session_touch(client_t *cl, const bson_iter_t *lsid)
{
	const uint8_t *id;
	char *user;
	int64_t now;
	uint64_t gen;

	if (cl == NULL || !repl_lsid_id(lsid, &id))
		return;
	/* the same session again on this connection within a second: its
	 * last use is fresh enough (the timeout is in minutes), no lock taken,
	 * unless a session left the cache since */
	now = repl_now_ms();
	gen = repl_sessions_generation(cl->engine->sessions);
	if (now - cl->lsid_seen_ms < 1000 && cl->lsid_seen_gen == gen && memcmp(cl->lsid_seen, id, 16) == 0)
		return;
	user = session_user(cl);
	/* with access control on, only an authenticated client's sessions count */
	if (user == NULL && engine_auth_enabled(cl->engine)) {
		bson_free(user);
		return;
	}
	repl_sessions_touch(cl->engine->sessions, id, user);
	bson_free(user);
	memcpy(cl->lsid_seen, id, 16);
	cl->lsid_seen_ms = now;
	cl->lsid_seen_gen = gen;
}

/* {user, db} documents of an array into 32-byte uids (at most max). */
static int
users_to_uids(bson_iter_t *arr, uint8_t *uids, int max)
{
	bson_iter_t f;
	int n = 0;

	while (bson_iter_next(arr) && n < max) {
		const char *name = NULL, *db = NULL;
		char *full;
		if (!BSON_ITER_HOLDS_DOCUMENT(arr) || !bson_iter_recurse(arr, &f))
			continue;
		while (bson_iter_next(&f)) {
			if (strcmp(bson_iter_key(&f), "user") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				name = bson_iter_utf8(&f, NULL);
			else if (strcmp(bson_iter_key(&f), "db") == 0 && BSON_ITER_HOLDS_UTF8(&f))
				db = bson_iter_utf8(&f, NULL);
		}
		if (name == NULL || db == NULL)
			continue;
		full = bson_strdup_printf("%s@%s", name, db);
		repl_session_uid(full, uids + 32 * n++);
		bson_free(full);
	}
	return n;
}

#define LIST_USERS_MAX 64

void
cmd_admin_sessions_list(client_t *cl, const bson_t *spec, bson_t *out)
{
	uint8_t uids[32 * LIST_USERS_MAX];
	int nuids = 0;
	bool all = false;
	bson_iter_t it, u;

	if (bson_iter_init_find(&it, spec, "allUsers") && bson_iter_as_bool(&it))
		all = true;
	if (!all && bson_iter_init_find(&it, spec, "users") && BSON_ITER_HOLDS_ARRAY(&it) &&
	    bson_iter_recurse(&it, &u)) {
		nuids = users_to_uids(&u, uids, LIST_USERS_MAX);
	} else if (!all) {
		char *user = session_user(cl);
		repl_session_uid(user, uids);
		nuids = 1;
		bson_free(user);
	}
	repl_sessions_list(cl->engine->sessions, all, uids, nuids, out);
}

void
cmd_admin_sessions_filter(client_t *cl, const bson_t *spec, bson_t *filter)
{
	uint8_t uids[32 * LIST_USERS_MAX];
	int nuids = 0;
	bson_iter_t it, u;
	bson_t in, arr;

	if (bson_iter_init_find(&it, spec, "allUsers") && bson_iter_as_bool(&it))
		return;
	if (bson_iter_init_find(&it, spec, "users") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &u)) {
		nuids = users_to_uids(&u, uids, LIST_USERS_MAX);
	} else {
		char *user = session_user(cl);
		repl_session_uid(user, uids);
		nuids = 1;
		bson_free(user);
	}
	bson_append_document_begin(filter, "_id.uid", -1, &in);
	bson_append_array_begin(&in, "$in", -1, &arr);
	for (int i = 0; i < nuids; i++) {
		char key[16];
		const char *kp;
		bson_uint32_to_string((uint32_t)i, &kp, key, sizeof(key));
		bson_append_binary(&arr, kp, -1, BSON_SUBTYPE_BINARY, uids + 32 * i, 32);
	}
	bson_append_array_end(&in, &arr);
	bson_append_document_end(filter, &in);
}

/* refreshLogicalSessionCacheNow (a test command): write the cache to
 * config.system.sessions now. */
CMD_HANDLER(cmd_refresh_logical_session_cache_now)
{
	storage_session_t *s = client_session(c->client, err);

	if (s == NULL)
		return -1;
	return repl_sessions_refresh(c->engine->sessions, s, err);
}

static int
array_arg(cmd_t *c, terr_t *err)
{
	if (!BSON_ITER_HOLDS_ARRAY(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.%s' is the wrong type '%s', expected type 'array'",
		    c->name, c->name, bv_type_name(bson_iter_type(&c->first)));
	return 0;
}

/* endSessions / killSessions forget the sessions (and abort their
 * transactions); refreshSessions marks them used. */
CMD_HANDLER(cmd_end_sessions)
{
	bson_iter_t it;
	bool refresh = strcmp(c->name, "refreshSessions") == 0;
	char *user;

	RET(array_arg(c, err));
	if (!bson_iter_recurse(&c->first, &it))
		return 0;
	user = refresh ? session_user(c->client) : NULL;
	while (bson_iter_next(&it)) {
		const uint8_t *id;
		if (!repl_lsid_id(&it, &id))
			continue;
		if (refresh)
			repl_sessions_touch(c->engine->sessions, id, user);
		else
			repl_sessions_end(c->engine->sessions, id);
	}
	bson_free(user);
	return 0;
}

/* killAllSessions: [{user, db}...], every session when empty. */
CMD_HANDLER(cmd_kill_all_sessions)
{
	uint8_t uids[32 * LIST_USERS_MAX];
	bson_iter_t it;
	int n;

	RET(array_arg(c, err));
	if (!bson_iter_recurse(&c->first, &it))
		return 0;
	{
		bson_iter_t chk;
		if (bson_iter_recurse(&c->first, &chk) && !bson_iter_next(&chk)) {
			repl_sessions_kill_matching(c->engine->sessions, NULL, 0);
			return 0;
		}
	}
	n = users_to_uids(&it, uids, LIST_USERS_MAX);
	if (n > 0)
		repl_sessions_kill_matching(c->engine->sessions, uids, n);
	return 0;
}

/* killAllSessionsByPattern: [{lsid: {id}}, {uid: BinData}, {users: [...]}...],
 * every session when empty. */
CMD_HANDLER(cmd_kill_all_sessions_by_pattern)
{
	bson_iter_t it, f;
	bool any = false;

	RET(array_arg(c, err));
	if (!bson_iter_recurse(&c->first, &it))
		return 0;
	while (bson_iter_next(&it)) {
		any = true;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'KillAllSessionsByPatternCmd.killAllSessionsByPattern' is the wrong type '%s', "
			    "expected type 'object'", bv_type_name(bson_iter_type(&it)));
		if (!bson_iter_recurse(&it, &f))
			continue;
		while (bson_iter_next(&f)) {
			const char *k = bson_iter_key(&f);
			if (strcmp(k, "lsid") == 0) {
				const uint8_t *id;
				if (repl_lsid_id(&f, &id))
					repl_sessions_end(c->engine->sessions, id);
			} else if (strcmp(k, "uid") == 0 && BSON_ITER_HOLDS_BINARY(&f)) {
				bson_subtype_t st;
				uint32_t len;
				const uint8_t *uid;
				bson_iter_binary(&f, &st, &len, &uid);
				if (len == 32)
					repl_sessions_kill_matching(c->engine->sessions, uid, 1);
			} else if (strcmp(k, "users") == 0 && BSON_ITER_HOLDS_ARRAY(&f)) {
				uint8_t uids[32 * LIST_USERS_MAX];
				bson_iter_t u;
				int n;
				bson_iter_recurse(&f, &u);
				n = users_to_uids(&u, uids, LIST_USERS_MAX);
				if (n > 0)
					repl_sessions_kill_matching(c->engine->sessions, uids, n);
			} else if (strcmp(k, "roles") != 0) {
				return terr_set(err, 40415,
				    "BSON field 'KillAllSessionsByPattern.%s' is an unknown field.", k);
			}
		}
	}
	if (!any)
		repl_sessions_kill_matching(c->engine->sessions, NULL, 0);
	return 0;
}

CMD_HANDLER(cmd_start_session)
{
	bson_t id;
	uint8_t uuid[16];
	char *user;

	if (RAND_bytes(uuid, sizeof(uuid)) != 1)
		return terr_set(err, TERR_INTERNAL_ERROR, "could not generate a session id");
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	user = session_user(c->client);
	repl_sessions_touch(c->engine->sessions, uuid, user);
	bson_free(user);
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "id", &id);
	bson_append_binary(&id, "id", -1, BSON_SUBTYPE_UUID, uuid, 16);
	bson_append_document_end(c->reply, &id);
	BSON_APPEND_INT32(c->reply, "timeoutMinutes", REPL_SESSION_TIMEOUT_MINUTES);
	return 0;
}
