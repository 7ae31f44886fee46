/*
 * embedded.c -- the public embedded API (include/tamga/tamga.h) over the
 * command layer: tamga_open, tamga_run_command, tamga_close.
 *
 * Each call gets a short-lived client (on its stack) whose storage session
 * comes from the engine's pool, so one tamga_t is safe to share between
 * threads.
 */
#include "tamga/tamga.h"

#include <string.h>

#include "commands/commands_private.h"
#include "common/version.h"

struct tamga {
	engine_t *engine;
	char *cache_size;
	char *repl_set_name;        /* replSet=NAME: a single-member replica set */
};

static void
copy_error(tamga_error_t *out, const terr_t *err)
{
	if (out == NULL)
		return;
	out->code = err->code;
	bson_strncpy(out->message, err->msg ? err->msg : "", sizeof(out->message));
}

/* "create,cache_size=512M,in_memory" */
static int
parse_options(const char *options, tamga_t *t, engine_options_t *eo, terr_t *err)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (options == NULL || options[0] == '\0')
		return 0;
	copy = bson_strdup(options);
	for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (strcmp(tok, "create") == 0) {
			eo->storage.create = true;
		} else if (strcmp(tok, "in_memory") == 0) {
			eo->storage.in_memory = true;
		} else if (strncmp(tok, "cache_size=", 11) == 0 && tok[11] != '\0') {
			bson_free(t->cache_size);
			t->cache_size = bson_strdup(tok + 11);
			eo->storage.cache_size = t->cache_size;
		} else if (strcmp(tok, "enableTestCommands") == 0) {
			eo->enable_test_commands = true;   /* tamgad's --setParameter enableTestCommands=1 */
		} else if (strncmp(tok, "replSet=", 8) == 0 && tok[8] != '\0') {
			/* a single-member replica set: transactions, retryable writes */
			bson_free(t->repl_set_name);
			t->repl_set_name = bson_strdup(tok + 8);
			eo->repl_set_name = t->repl_set_name;
		} else if (tok[0] != '\0') {
			ret = terr_set(err, TERR_BAD_VALUE, "unknown tamga_open option: '%s'", tok);
			break;
		}
	}
	bson_free(copy);
	return ret;
}

int
tamga_open(const char *path, const char *options, tamga_t **db, tamga_error_t *errp)
{
	terr_t err = TERR_INIT;
	engine_options_t eo;
	tamga_t *t;

	if (errp != NULL)
		memset(errp, 0, sizeof(*errp));
	*db = NULL;
	if (path == NULL || path[0] == '\0') {
		terr_set(&err, TERR_BAD_VALUE, "tamga_open: a data folder path is required");
		goto fail;
	}
	t = bson_malloc0(sizeof(*t));
	memset(&eo, 0, sizeof(eo));
	if (parse_options(options, t, &eo, &err) != 0 || engine_open(path, &eo, &t->engine, &err) != 0) {
		bson_free(t->cache_size);
		bson_free(t->repl_set_name);
		bson_free(t);
		goto fail;
	}
	*db = t;
	return 0;
fail:
	copy_error(errp, &err);
	terr_clear(&err);
	return -1;
}

int
tamga_run_command(tamga_t *db, const char *dbname, const bson_t *command,
                  bson_t *reply, tamga_error_t *errp)
{
	terr_t err = TERR_INIT;
	client_t cl;
	int rc;

	/* no error: code 0, an empty message (clearing all 508 bytes was ~70
	 * instructions a command) */
	if (errp != NULL) {
		errp->code = 0;
		errp->message[0] = '\0';
	}
	if (db == NULL || command == NULL) {
		bson_init(reply);
		terr_set(&err, TERR_BAD_VALUE, "tamga_run_command: no database handle or command");
		BSON_APPEND_DOUBLE(reply, "ok", 0.0);
		BSON_APPEND_UTF8(reply, "errmsg", err.msg);
		BSON_APPEND_INT32(reply, "code", err.code);
		BSON_APPEND_UTF8(reply, "codeName", "BadValue");
		copy_error(errp, &err);
		terr_clear(&err);
		return -1;
	}
	client_init(&cl, db->engine, NULL);   /* on the stack: one call's client */
	rc = engine_run_command(db->engine, &cl, dbname, command, reply, &err);
	client_release(&cl);
	if (rc != 0)
		copy_error(errp, &err);
	terr_clear(&err);
	return rc == 0 ? 0 : -1;
}

void
tamga_close(tamga_t *db)
{
	if (db == NULL)
		return;
	engine_close(db->engine);
	bson_free(db->cache_size);
	bson_free(db->repl_set_name);
	bson_free(db);
}

const char *
tamga_mongodb_version(void)
{
	return TAMGA_MONGODB_VERSION;
}

const char *
tamga_version(void)
{
	return TAMGA_VERSION;
}
