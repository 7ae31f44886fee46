/*
 * test_auth_badinput.c -- hostile arguments to every authentication, user
 * and role command: each is refused with an error code, nothing crashes,
 * nothing is stored, and no password shows in any reply.  Also random
 * bytes as SCRAM messages.
 */
#include "tt.h"

#include "auth/auth.h"
#include "commands/commands_private.h"

static engine_t *eng;
static char *dir;

static void
open_engine(bool auth)
{
	engine_options_t o;
	terr_t err = TERR_INIT;

	memset(&o, 0, sizeof(o));
	o.storage.create = true;
	o.storage.in_memory = true;
	o.auth = auth;
	dir = tt_tmpdir("authbad");
	if (engine_open(dir, &o, &eng, &err) != 0)
		abort();
}

static void
close_engine(void)
{
	engine_close(eng);
	tt_rmdir(dir);
	bson_free(dir);
}

static int
run(client_t *cl, const char *db, const bson_t *cmd, bson_t *reply)
{
	terr_t err = TERR_INIT;
	cmd_t c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.engine = eng;
	c.client = cl;
	c.db = db;
	c.body = cmd;
	bson_iter_init(&c.first, cmd);
	bson_iter_next(&c.first);
	c.name = bson_iter_key(&c.first);
	if (cmd_auth_check(&c, cmd_lookup(c.name), &err) != 0) {
		bson_init(reply);
		BSON_APPEND_UTF8(reply, "errmsg", err.msg);
		rc = err.code;
		terr_clear(&err);
		return rc;
	}
	rc = engine_run_command(eng, cl, db, cmd, reply, &err);
	terr_clear(&err);
	return rc;
}

static const char *const hostile[] = {
	"{\"createUser\": 5, \"pwd\": \"secretpw\", \"roles\": []}",
	"{\"createUser\": \"\", \"pwd\": \"secretpw\", \"roles\": []}",
	"{\"createUser\": \"a\", \"pwd\": 5, \"roles\": []}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": \"readWrite\"}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [{\"role\": 5}]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [{}]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [{\"role\": \"read\"}]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [{\"role\": \"\", \"db\": \"x\"}]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [null]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"customData\": 5}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"mechanisms\": \"SCRAM-SHA-1\"}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"mechanisms\": []}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"mechanisms\": [5]}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"digestPassword\": false}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"digestPassword\": \"no\"}",
	"{\"createUser\": \"a\", \"pwd\": \"secret\\u0007pw\", \"roles\": []}",
	"{\"createUser\": \"a\", \"pwd\": \"secretpw\", \"roles\": [], \"authenticationRestrictions\": []}",
	"{\"updateUser\": \"nobody\", \"pwd\": \"secretpw\"}",
	"{\"updateUser\": 1, \"pwd\": \"secretpw\"}",
	"{\"updateUser\": \"nobody\", \"roles\": 5}",
	"{\"updateUser\": \"nobody\", \"mechanisms\": [\"SCRAM-SHA-1\"]}",
	"{\"dropUser\": 5}",
	"{\"dropUser\": \"nobody\"}",
	"{\"dropUser\": \"nobody\", \"extra\": 1}",
	"{\"dropAllUsersFromDatabase\": 1, \"extra\": 1}",
	"{\"usersInfo\": true}",
	"{\"usersInfo\": null}",
	"{\"usersInfo\": {\"user\": 5}}",
	"{\"usersInfo\": {\"user\": \"a\"}}",
	"{\"usersInfo\": [1, 2]}",
	"{\"usersInfo\": 1, \"filter\": {}}",
	"{\"usersInfo\": 1, \"showCredentials\": \"yes\"}",
	"{\"grantRolesToUser\": \"nobody\"}",
	"{\"grantRolesToUser\": \"nobody\", \"roles\": 5}",
	"{\"grantRolesToUser\": \"nobody\", \"roles\": [\"read\"]}",
	"{\"grantRolesToUser\": \"nobody\", \"roles\": [\"nosuchrole\"]}",
	"{\"revokeRolesFromUser\": \"nobody\", \"roles\": [\"read\"]}",
	"{\"createRole\": \"r\", \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": 5, \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [5], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": 5, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {}, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\"}, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"cluster\": true, \"db\": \"d\"}, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"anyResource\": true, \"collection\": \"\"}, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\", \"collection\": \"\"}, \"actions\": [5]}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\", \"collection\": \"\"}, \"actions\": \"find\"}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\", \"collection\": \"\"}}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\", \"collection\": \"\"}, \"actions\": [], \"x\": 1}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [{\"resource\": {\"db\": \"d\", \"collection\": \"\", \"x\": 1}, \"actions\": []}], \"roles\": []}",
	"{\"createRole\": \"r\", \"privileges\": [], \"roles\": [\"nosuchrole\"]}",
	"{\"createRole\": \"r@x\", \"privileges\": [], \"roles\": []}",
	"{\"createRole\": \"root\", \"privileges\": [], \"roles\": []}",
	"{\"updateRole\": \"nobody\", \"roles\": []}",
	"{\"updateRole\": \"nobody\"}",
	"{\"updateRole\": \"read\", \"roles\": []}",
	"{\"dropRole\": \"nobody\"}",
	"{\"dropRole\": 5}",
	"{\"grantPrivilegesToRole\": \"nobody\", \"privileges\": []}",
	"{\"grantPrivilegesToRole\": \"nobody\"}",
	"{\"revokePrivilegesFromRole\": \"nobody\", \"privileges\": []}",
	"{\"grantRolesToRole\": \"nobody\", \"roles\": [\"read\"]}",
	"{\"revokeRolesFromRole\": \"nobody\", \"roles\": [\"read\"]}",
	"{\"rolesInfo\": {\"role\": 5}}",
	"{\"rolesInfo\": [5]}",
	"{\"rolesInfo\": true}",
	"{\"rolesInfo\": 1, \"showPrivileges\": \"asUserFragment\"}",
	"{\"saslStart\": 1}",
	"{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\"}",
	"{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"payload\": \"@@@@\"}",
	"{\"saslStart\": 1, \"mechanism\": \"SCRAM-SHA-256\", \"payload\": \"\"}",
	"{\"saslStart\": 1, \"mechanism\": \"\", \"payload\": \"\"}",
	"{\"saslStart\": 1, \"mechanism\": \"MONGODB-X509\", \"payload\": \"\"}",
	"{\"saslContinue\": 1, \"payload\": \"\"}",
	"{\"saslContinue\": 1, \"conversationId\": \"x\", \"payload\": \"\"}",
	"{\"saslContinue\": 1, \"conversationId\": 1}",
	"{\"authenticate\": 1}",
	"{\"authenticate\": 1, \"mechanism\": \"MONGODB-X509\"}",
	NULL,
};

static void
test_hostile_commands(void)
{
	client_t *cl;
	bson_t reply;
	int i;

	open_engine(false);
	cl = client_new(eng, NULL);
	for (i = 0; hostile[i] != NULL; i++) {
		bson_t *cmd = tt_json(hostile[i]);
		int rc = run(cl, "d", cmd, &reply);
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		if (rc == 0)
			fprintf(stderr, "accepted: %s -> %s\n", hostile[i], j);
		TT_ASSERT(rc != 0);
		TT_ASSERT(strstr(j, "secretpw") == NULL);
		bson_free(j);
		bson_destroy(&reply);
		bson_destroy(cmd);
	}
	/* nothing was stored */
	{
		bson_t *cmd = tt_json("{\"usersInfo\": {\"forAllDBs\": true}}");
		TT_EQ_INT(run(cl, "d", cmd, &reply), 0);
		TT_EQ_JSON(&reply, "{ \"users\" : [  ], \"ok\" : 1.0 }");
		bson_destroy(&reply);
		bson_destroy(cmd);
		cmd = tt_json("{\"rolesInfo\": 1}");
		TT_EQ_INT(run(cl, "d", cmd, &reply), 0);
		TT_EQ_JSON(&reply, "{ \"roles\" : [  ], \"ok\" : 1.0 }");
		bson_destroy(&reply);
		bson_destroy(cmd);
	}
	auth_client_forget(cl, &cl->has_auth);
	client_free(cl);
	close_engine();
}

/* A name with a NUL byte inside cannot come from JSON; build it. */
static void
test_nul_in_names(void)
{
	client_t *cl;
	bson_t cmd, roles, reply;

	open_engine(false);
	cl = client_new(eng, NULL);
	bson_init(&cmd);
	bson_append_utf8(&cmd, "createUser", -1, "a\0b", 3);
	BSON_APPEND_UTF8(&cmd, "pwd", "secretpw");
	BSON_APPEND_ARRAY_BEGIN(&cmd, "roles", &roles);
	bson_append_array_end(&cmd, &roles);
	TT_EQ_INT(run(cl, "d", &cmd, &reply), 2);
	bson_destroy(&reply);
	bson_destroy(&cmd);
	auth_client_forget(cl, &cl->has_auth);
	client_free(cl);
	close_engine();
}

/* Under auth, an unauthorized createUser's message hides the password. */
static void
test_unauthorized_message_hides_password(void)
{
	client_info_t info = {0};
	client_t *cl;
	bson_t *cmd, reply;
	bson_iter_t it;

	open_engine(true);
	info.is_local = false;
	cl = client_new(eng, &info);
	/* nobody exists and the client is remote: no localhost exception */
	cmd = tt_json("{\"createUser\": \"x\", \"pwd\": \"secretpw\", \"roles\": [], \"$db\": \"admin\"}");
	TT_EQ_INT(run(cl, "admin", cmd, &reply), 13);
	bson_destroy(&reply);
	bson_destroy(cmd);
	info.is_local = true;
	auth_client_forget(cl, &cl->has_auth);
	client_free(cl);
	cl = client_new(eng, &info);
	cmd = tt_json("{\"createUser\": \"x\", \"pwd\": \"secretpw\", \"roles\": [], \"$db\": \"other\"}");
	TT_EQ_INT(run(cl, "other", cmd, &reply), 13);
	TT_ASSERT(bson_iter_init_find(&it, &reply, "errmsg"));
	TT_EQ_STR(bson_iter_utf8(&it, NULL), "not authorized on other to execute command "
	    "{ createUser: \"x\", pwd: \"xxx\", roles: [], $db: \"other\" }");
	bson_destroy(&reply);
	bson_destroy(cmd);
	auth_client_forget(cl, &cl->has_auth);
	client_free(cl);
	close_engine();
}

/* Random bytes through both steps of a conversation. */
static int
lookup_none(void *ctx, const char *user, bson_t *creds)
{
	return -1;
}

static void
test_random_scram_messages(void)
{
	unsigned seed = 12345;
	int i, j;

	for (i = 0; i < 2000; i++) {
		auth_scram_t *s = auth_scram_new(i % 2 ? AUTH_SCRAM_SHA1 : AUTH_SCRAM_SHA256, i % 3 == 0);
		terr_t err = TERR_INIT;
		uint8_t buf[64];
		char *out = NULL;
		size_t ol, n;
		bool done;
		for (j = 0; j < 3; j++) {
			static const char alphabet[] = "nyp=,ar0123456789abcXYZ+/\x01\xff";
			n = (size_t)(rand_r(&seed) % sizeof(buf));
			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
			if (j == 0 && i % 4 == 0 && n > 8)
				memcpy(buf, "n,,n=u,r=", 9);
			if (auth_scram_step(s, buf, n, lookup_none, NULL, &out, &ol, &done, &err) != 0) {
				terr_clear(&err);
				break;
			}
			TT_ASSERT(!auth_scram_succeeded(s));
			bson_free(out);
			out = NULL;
		}
		auth_scram_free(s);
	}
}

int
main(void)
{
	TT_RUN(test_hostile_commands);
	TT_RUN(test_nul_in_names);
	TT_RUN(test_unauthorized_message_hides_password);
	TT_RUN(test_random_scram_messages);
	return tt_finish();
}
