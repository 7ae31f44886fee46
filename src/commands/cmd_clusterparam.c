/*
 * cmd_clusterparam.c -- setClusterParameter and getClusterParameter, as
 * mongod's replica-set/standalone path answers them (its
 * set_cluster_parameter_invocation.cpp and get_cluster_parameter_invocation.cpp).
 * The parameters themselves, their validation and their documents in
 * config.clusterParameters are repl/cluster_params.h's.
 *
 * setClusterParameter: {<name>: <object>} -- refused on a standalone (20
 * "setClusterParameter cannot be run on standalones"), 4 NoSuchKey for a
 * name Tamga does not have, 2 BadValue when the value is not an object or
 * fails the parameter's validation; otherwise the document is replaced (or
 * inserted) in a logged, journalled write stamped with the current cluster
 * time as clusterParameterTime.  Reply {ok: 1}.
 * getClusterParameter: "<name>" | ["<name>", ...] | "*" -- reply
 * {clusterParameters: [{_id, clusterParameterTime, ...}, ...]}; a
 * standalone's values come without clusterParameterTime, as mongod's.
 */
#include "commands/commands_private.h"

#include "bson/value.h"
#include "repl/cluster_params.h"

static const char *const set_known[] = {"setClusterParameter", NULL};
static const char *const get_known[] = {"getClusterParameter", "omitInFTDC", NULL};

CMD_HANDLER(cmd_set_cluster_parameter)
{
	bson_iter_t sub;
	const uint8_t *data;
	uint32_t len;
	bson_t arg, value, doc = BSON_INITIALIZER;
	const char *name;
	storage_session_t *s;
	repl_ts_t now;
	int ret;

	RET(cmd_check_fields(c, set_known, err));
	if (!BSON_ITER_HOLDS_DOCUMENT(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'setClusterParameter.setClusterParameter' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&c->first)));
	if (c->engine->rs == NULL || c->engine->clock == NULL)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "setClusterParameter cannot be run on standalones");
	bson_iter_document(&c->first, &len, &data);
	bson_init_static(&arg, data, len);
	/* the parameter is the argument's first field (an empty one names "") */
	name = bson_iter_init(&sub, &arg) && bson_iter_next(&sub) ? bson_iter_key(&sub) : "";
	if (!repl_cluster_param_known(name))
		return terr_set(err, TERR_NO_SUCH_KEY, "Unknown server parameter: %s", name);
	if (!BSON_ITER_HOLDS_DOCUMENT(&sub))
		return terr_set(err, TERR_BAD_VALUE, "Cluster parameter value must be an object");
	bson_iter_document(&sub, &len, &data);
	bson_init_static(&value, data, len);
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	now = repl_clock_now(c->engine->clock);
	ret = repl_cluster_param_build(name, &value, now, &doc, err);
	if (ret == 0)
		ret = repl_cluster_param_store(c->engine->st, s, &doc, true, err);
	bson_destroy(&doc);
	return ret;
}

/* Append name's value to the reply's array at index *n. */
static int
append_param(cmd_t *c, bson_t *arr, int *n, const char *name, terr_t *err)
{
	bson_t one = BSON_INITIALIZER;
	storage_session_t *s;
	char key[16];
	int ret;

	if ((s = client_session(c->client, err)) == NULL) {
		bson_destroy(&one);
		return -1;
	}
	ret = repl_cluster_param_get(c->engine->st, s, name, c->engine->rs != NULL, &one, err);
	if (ret == 0) {
		snprintf(key, sizeof(key), "%d", (*n)++);
		bson_append_document(arr, key, -1, &one);
	}
	bson_destroy(&one);
	return ret;
}

CMD_HANDLER(cmd_get_cluster_parameter)
{
	bson_t arr;
	bson_iter_t it;
	int n = 0, ret = 0;
	bool omit = false, found = false;

	RET(cmd_check_fields(c, get_known, err));
	RET(cmd_get_bool(c, "omitInFTDC", &omit, &found, err));
	if (BSON_ITER_HOLDS_ARRAY(&c->first)) {
		bson_iter_t e;
		int count = 0;
		bson_iter_recurse(&c->first, &e);
		while (bson_iter_next(&e)) {
			if (!BSON_ITER_HOLDS_UTF8(&e))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'getClusterParameter.getClusterParameter.%s' is the wrong type '%s', expected type "
				    "'string'",
				    bson_iter_key(&e), bv_type_name(bson_iter_type(&e)));
			if (!repl_cluster_param_known(bson_iter_utf8(&e, NULL)))
				return terr_set(err, TERR_NO_SUCH_KEY, "Unknown server parameter: %s", bson_iter_utf8(&e, NULL));
			count++;
		}
		if (count == 0)
			return terr_set(err, TERR_BAD_VALUE,
			    "Must supply at least one cluster server parameter name to getClusterParameter");
	} else if (BSON_ITER_HOLDS_UTF8(&c->first)) {
		const char *name = bson_iter_utf8(&c->first, NULL);
		if (strcmp(name, "*") != 0 && !repl_cluster_param_known(name))
			return terr_set(err, TERR_NO_SUCH_KEY, "Unknown server parameter: %s", name);
	} else {
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'getClusterParameter.getClusterParameter' is the wrong type '%s', expected types "
		    "'[string, array]'",
		    bv_type_name(bson_iter_type(&c->first)));
	}
	bson_append_array_begin(c->reply, "clusterParameters", -1, &arr);
	if (BSON_ITER_HOLDS_ARRAY(&c->first)) {
		bson_iter_recurse(&c->first, &it);
		while (ret == 0 && bson_iter_next(&it))
			ret = append_param(c, &arr, &n, bson_iter_utf8(&it, NULL), err);
	} else if (strcmp(bson_iter_utf8(&c->first, NULL), "*") == 0) {
		for (size_t i = 0; ret == 0 && i < repl_cluster_param_count(); i++)
			ret = append_param(c, &arr, &n, repl_cluster_param_name(i), err);
	} else {
		ret = append_param(c, &arr, &n, bson_iter_utf8(&c->first, NULL), err);
	}
	bson_append_array_end(c->reply, &arr);
	return ret;
}
