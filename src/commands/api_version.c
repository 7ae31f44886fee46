/*
 * api_version.c -- the Stable API parameters every command may carry
 * (apiVersion, apiStrict, apiDeprecationErrors), checked as mongod checks
 * them before a command runs: apiVersion must be "1" (322 APIVersionError),
 * apiStrict / apiDeprecationErrors need an apiVersion (4886600), and with
 * apiStrict: true only API Version 1's commands run (323 APIStrictError) and
 * an aggregate may not use the stages mongod marks kNeverInVersion1.
 *
 * The lists are mongod's: the commands whose definition names API Version 1
 * (abortTransaction ... update), and the stages outside it.  What this file
 * does not do: deprecation checks (API Version 1 has none), or the
 * expression operators outside API Version 1 (none that Tamga implements
 * is checked yet).
 */
#include "commands/commands_private.h"

#include <string.h>

#include "bson/value.h"

/* Commands in API Version 1 (mongod's Command::apiVersions() == {"1"}),
 * by their canonical names. */
static const char *const api_v1_commands[] = {
	"abortTransaction", "aggregate", "authenticate", "bulkWrite", "collMod", "commitTransaction",
	"count", "create", "createIndexes", "delete", "drop", "dropDatabase", "dropIndexes",
	"endSessions", "explain", "find", "findAndModify", "getMore", "hello", "insert", "killCursors",
	"listCollections", "listDatabases", "listIndexes", "ping", "refreshSessions", "saslContinue",
	"saslStart", "update", NULL,
};

/* Aggregation stages mongod registers as never in API Version 1. */
static const char *const api_not_v1_stages[] = {
	"$collStats", "$currentOp", "$indexStats", "$listLocalSessions", "$listSessions",
	"$planCacheStats", "$queryStats", "$listCatalog", "$listCachedAndActiveUsers",
	"$shardedDataDistribution", "$search", "$searchMeta", "$vectorSearch", "$listSearchIndexes",
	"$listClusterCatalog", NULL,
};

static bool
listed(const char *const *list, const char *name)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

/* The stages of an aggregate's pipeline (and of explain's aggregate). */
static int
check_stages(const bson_t *cmd, terr_t *err)
{
	bson_iter_t it, st, k;

	if (!bson_iter_init_find(&it, cmd, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it))
		return 0;
	bson_iter_recurse(&it, &st);
	while (bson_iter_next(&st)) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&st))
			continue;
		bson_iter_recurse(&st, &k);
		if (bson_iter_next(&k) && listed(api_not_v1_stages, bson_iter_key(&k)))
			return terr_set(err, 323,
			    "%s is not allowed with 'apiStrict: true' in API Version 1", bson_iter_key(&k));
	}
	return 0;
}

int
cmd_api_check(cmd_t *c, const cmd_def_t *def, terr_t *err)
{
	bson_iter_t v, s, d;
	const cmd_args_t *ix = c->args.body == c->body && c->args.len == c->body->len ? &c->args : cmd_args_index(c);
	bool has_v, has_s, has_d;

	/* none of the three names' bits in the body's index (most commands):
	 * each lookup below would answer "absent" */
	if (ix->n >= 0 && !(ix->present & (cmd_args_key_bit("apiVersion", 10) | cmd_args_key_bit("apiStrict", 9) |
	    cmd_args_key_bit("apiDeprecationErrors", 20))))
		return 0;
	has_v = cmd_find_field(c, "apiVersion", &v);
	has_s = cmd_find_field(c, "apiStrict", &s);
	has_d = cmd_find_field(c, "apiDeprecationErrors", &d);

	if (has_v) {
		if (!BSON_ITER_HOLDS_UTF8(&v))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'apiVersion' is the wrong type '%s', expected type 'string'",
			    bv_type_name(bson_iter_type(&v)));
		if (strcmp(bson_iter_utf8(&v, NULL), "1") != 0)
			return terr_set(err, 322, "API version must be \"1\"");
	}
	if (has_s && !BSON_ITER_HOLDS_BOOL(&s))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'apiStrict' is the wrong type '%s', expected type 'bool'",
		    bv_type_name(bson_iter_type(&s)));
	if (has_d && !BSON_ITER_HOLDS_BOOL(&d))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'apiDeprecationErrors' is the wrong type '%s', expected type 'bool'",
		    bv_type_name(bson_iter_type(&d)));
	if (has_s && !has_v)
		return terr_set(err, 4886600, "Provided apiStrict without passing apiVersion");
	if (has_d && !has_v)
		return terr_set(err, 4886600, "Provided apiDeprecationErrors without passing apiVersion");
	if (!has_s || !bson_iter_bool(&s))
		return 0;
	if (!listed(api_v1_commands, def->name))
		return terr_set(err, 323,
		    "Provided apiStrict:true, but the command %s is not in API Version 1. Information on "
		    "supported commands and migrations in API Version 1 can be found at "
		    "https://dochub.mongodb.org/core/manual-versioned-api.",
		    def->name);
	if (strcmp(def->name, "aggregate") == 0)
		return check_stages(c->body, err);
	return 0;
}
