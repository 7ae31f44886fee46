/*
 * args.c -- reading command arguments with mongod's IDL errors.
 */
#include "commands/commands_private.h"

#include <string.h>

#include "bson/value.h"

/* Fields any command may carry; the dispatcher or transport handles them. */
static const char *const generic_fields[] = {
	"$db", "lsid", "$clusterTime", "$readPreference", "readConcern", "writeConcern",
	"comment", "maxTimeMS", "txnNumber", "autocommit", "startTransaction",
	"apiVersion", "apiStrict", "apiDeprecationErrors", "$audit", "$client",
	"$configServerState", "$gleStats", "$oplogQueryData", "$queryOptions",
	"$replData", "databaseVersion", "shardVersion", "mayBypassWriteBlocking",
	"$configTime", "$topologyTime", "clientOperationKey", "readOnly", NULL,
};

static bool
in_list(const char *const *list, const char *k)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, k) == 0)
			return true;
	return false;
}

int
cmd_check_fields(cmd_t *c, const char *const *known, terr_t *err)
{
	bson_iter_t it;
	bool first = true;

	if (!bson_iter_init(&it, c->body))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (first) {
			first = false;
			continue;
		}
		if (in_list(generic_fields, k) || (known && in_list(known, k)))
			continue;
		return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", c->name, k);
	}
	return 0;
}

void
cmd_ns(char *buf, size_t len, const char *db, const char *coll)
{
	snprintf(buf, len, "%s.%s", db, coll);
}

int
cmd_collection_arg(cmd_t *c, const char **name, terr_t *err)
{
	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_INVALID_NAMESPACE, "collection name has invalid type %s",
		    bv_type_name(bson_iter_type(&c->first)));
	*name = bson_iter_utf8(&c->first, NULL);
	if ((*name)[0] == '\0')
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace specified '%s.'", c->db);
	return 0;
}

static int
wrong_type(cmd_t *c, const char *field, bson_type_t got, const char *want, terr_t *err)
{
	return terr_set(err, TERR_TYPE_MISMATCH,
	    "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
	    c->name, field, bv_type_name(got), want);
}

int
cmd_get_bool(cmd_t *c, const char *field, bool *out, bool *found, terr_t *err)
{
	bson_iter_t it;

	*found = false;
	if (!bson_iter_init_find(&it, c->body, field))
		return 0;
	*found = true;
	switch (bson_iter_type(&it)) {
	case BSON_TYPE_BOOL:
		*out = bson_iter_bool(&it);
		return 0;
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
		/* IDL "safeBool": numbers are accepted as truthiness. */
		*out = bson_iter_as_bool(&it);
		return 0;
	case BSON_TYPE_NULL:
	case BSON_TYPE_UNDEFINED:
		*found = false;
		return 0;
	default:
		return wrong_type(c, field, bson_iter_type(&it), "bool", err);
	}
}

int
cmd_get_int64(cmd_t *c, const char *field, int64_t *out, bool *found, terr_t *err)
{
	bson_iter_t it;
	bson_value_t v;

	*found = false;
	if (!bson_iter_init_find(&it, c->body, field))
		return 0;
	if (BSON_ITER_HOLDS_NULL(&it))
		return 0;
	*found = true;
	v = *bson_iter_value(&it);
	if (!bv_is_number(&v))
		return wrong_type(c, field, v.value_type, "long", err);
	if (!bv_as_int64_exact(&v, out)) {
		if (v.value_type == BSON_TYPE_DOUBLE) {
			/* mongod truncates a double batchSize/limit toward zero */
			double d = v.value.v_double;
			if (d != d || d > 9.2e18 || d < -9.2e18)
				return terr_set(err, TERR_BAD_VALUE, "BSON field '%s.%s' value must be a number in range", c->name, field);
			*out = (int64_t)d;
			return 0;
		}
		return terr_set(err, TERR_BAD_VALUE, "BSON field '%s.%s' value must be an integer", c->name, field);
	}
	return 0;
}

static int
get_sub(cmd_t *c, const char *field, bson_type_t want_type, const char *want, bson_t *out,
    bool *found, terr_t *err)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;

	*found = false;
	if (!bson_iter_init_find(&it, c->body, field))
		return 0;
	if (bson_iter_type(&it) != want_type)
		return wrong_type(c, field, bson_iter_type(&it), want, err);
	*found = true;
	if (want_type == BSON_TYPE_ARRAY)
		bson_iter_array(&it, &len, &data);
	else
		bson_iter_document(&it, &len, &data);
	if (!bson_init_static(out, data, len))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON in field '%s'", field);
	return 0;
}

int
cmd_get_doc(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err)
{
	return get_sub(c, field, BSON_TYPE_DOCUMENT, "object", out_view, found, err);
}

int
cmd_get_array(cmd_t *c, const char *field, bson_t *out_view, bool *found, terr_t *err)
{
	return get_sub(c, field, BSON_TYPE_ARRAY, "array", out_view, found, err);
}

int
cmd_get_string(cmd_t *c, const char *field, const char **out, bool *found, terr_t *err)
{
	bson_iter_t it;

	*found = false;
	if (!bson_iter_init_find(&it, c->body, field))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return wrong_type(c, field, bson_iter_type(&it), "string", err);
	*found = true;
	*out = bson_iter_utf8(&it, NULL);
	return 0;
}
