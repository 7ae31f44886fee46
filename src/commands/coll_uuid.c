/*
 * coll_uuid.c -- commands that name their collection by UUID, and the
 * collectionUUID option, as mongod handles both before a command runs.
 *
 * find, count, distinct and listIndexes take a collection UUID in place of
 * its name (mongod's IDL type namespacestring_or_uuid): the command is
 * rewritten with the name the UUID resolves to, so the handlers only ever
 * see names.  Any command with a string collection name and a
 * collectionUUID field fails with 361 CollectionUUIDMismatch when the
 * collection of that name does not have that UUID, with mongod's extra
 * reply fields (db, collectionUUID, expectedCollection, actualCollection).
 * What it does not do: resolve UUIDs for other commands (mongod refuses
 * them too).
 */
#include "commands/commands_private.h"

#include <string.h>

#include "bson/value.h"

static const char *const uuid_commands[] = {"find", "count", "distinct", "listIndexes", NULL};

/* The name of db's collection with uuid into buf, or false. */
static bool
name_of_uuid(engine_t *e, const char *db, const uint8_t *uuid, char *buf, size_t len)
{
	storage_coll_t **colls = NULL;
	int n = 0;
	bool found = false;

	if (storage_list_colls(e->st, db, &colls, &n, NULL) != 0)
		return false;
	for (int i = 0; i < n; i++) {
		if (!found && memcmp(colls[i]->uuid, uuid, 16) == 0 && strlen(colls[i]->name) < len) {
			strcpy(buf, colls[i]->name);
			found = true;
		}
		storage_coll_release(colls[i]);
	}
	bson_free(colls);
	return found;
}

static void
uuid_string(const uint8_t *u, char out[37])
{
	static const char hx[] = "0123456789abcdef";
	int j = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hx[u[i] >> 4];
		out[j++] = hx[u[i] & 15];
	}
	out[j] = '\0';
}

int
cmd_uuid_resolve(engine_t *e, const char *db, const bson_t *body, bson_t *out, bool *rewritten,
                 terr_t *err)
{
	bson_iter_t it;
	const uint8_t *u;
	uint32_t len;
	bson_subtype_t sub;
	char name[256], us[37];
	bool known = false;

	*rewritten = false;
	if (!bson_iter_init(&it, body) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_BINARY(&it))
		return 0;
	for (const char *const *k = uuid_commands; *k; k++)
		if (strcmp(*k, bson_iter_key(&it)) == 0)
			known = true;
	if (!known)
		return 0;
	bson_iter_binary(&it, &sub, &len, &u);
	if (sub != BSON_SUBTYPE_UUID || len != 16)
		return 0;
	if (!name_of_uuid(e, db, u, name, sizeof name)) {
		uuid_string(u, us);
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "UUID %s specified in %s command not found in %s.",
		    us, bson_iter_key(&it), db);
	}
	bson_init(out);
	BSON_APPEND_UTF8(out, bson_iter_key(&it), name);
	while (bson_iter_next(&it))
		bson_append_iter(out, bson_iter_key(&it), -1, &it);
	*rewritten = true;
	return 0;
}

int
cmd_collection_uuid_check(cmd_t *c, terr_t *err)
{
	bson_iter_t it;
	const uint8_t *u;
	uint32_t len;
	bson_subtype_t sub;
	storage_coll_t *coll = NULL;
	char actual[256];
	bool match;
	bson_t *extra;

	if (!cmd_find_field(c, "collectionUUID", &it))
		return 0;
	if (!BSON_ITER_HOLDS_BINARY(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.collectionUUID' is the wrong type '%s', expected type 'binData'", c->name,
		    bv_type_name(bson_iter_type(&it)));
	bson_iter_binary(&it, &sub, &len, &u);
	if (sub != BSON_SUBTYPE_UUID || len != 16)
		return terr_set(err, TERR_BAD_VALUE, "uuid must be a 16-byte binary field with UUID (4) subtype");
	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return 0;
	match = storage_coll_get(c->engine->st, c->db, bson_iter_utf8(&c->first, NULL), &coll, NULL) == 0 &&
	    memcmp(coll->uuid, u, 16) == 0;
	storage_coll_release(coll);
	if (match)
		return 0;
	extra = bson_new();
	BSON_APPEND_UTF8(extra, "db", c->db);
	BSON_APPEND_BINARY(extra, "collectionUUID", BSON_SUBTYPE_UUID, u, 16);
	BSON_APPEND_UTF8(extra, "expectedCollection", bson_iter_utf8(&c->first, NULL));
	if (name_of_uuid(c->engine, c->db, u, actual, sizeof actual))
		BSON_APPEND_UTF8(extra, "actualCollection", actual);
	else
		BSON_APPEND_NULL(extra, "actualCollection");
	terr_set(err, 361, "Collection UUID does not match that specified");
	terr_set_extra_steal(err, extra);
	return -1;
}
