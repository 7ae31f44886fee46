/*
 * clustered.c -- the command side of clustered collections: create's
 * clusteredIndex option checked as mongod's IDL, checkCreationOptions and
 * validateClusteredIndexSpec do (codes and messages word for word), the
 * option stored in mongod's canonical form ({v: 2, key: {_id: 1}, name,
 * unique: true}), and the clustered index as listIndexes shows it.
 *
 * The layout itself (documents keyed by the _id's KeyString, no separate
 * _id index) is storage's (storage.h, "clustered collections"); the
 * planner's CLUSTERED_IXSCAN is in query/.  Not here: time-series
 * collections (src/timeseries/), TTL deletes (query/planner_ttl.c).
 */
#include "commands/commands_private.h"

#include <string.h>

#include "bson/value.h"
#include "commands/clustered.h"

/* ClusteredIndexSpec's fields (mongod's IDL). */
static const char *const spec_fields[] = {"name", "v", "key", "unique", NULL};

/* The IDL parse of {key, unique, name?, v?}: 40415 unknown field, 40414
 * missing key/unique, 14 wrong types.  Fills the canonical spec. */
static int
parse_spec(const bson_iter_t *elem, bson_t *canon, bool *unique, int32_t *v, bool *key_on_id, terr_t *err)
{
	bson_iter_t it;
	const char *name = NULL;
	bool has_key = false, has_unique = false;
	const uint8_t *kdata = NULL;
	uint32_t klen = 0;

	*v = 2;
	*unique = false;
	*key_on_id = false;
	bson_iter_recurse(elem, &it);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		bool known = false;
		for (int i = 0; spec_fields[i] != NULL; i++)
			known = known || strcmp(spec_fields[i], f) == 0;
		if (!known)
			return terr_set(err, 40415, "BSON field 'create.clusteredIndex.%s' is an unknown field.", f);
		if (strcmp(f, "key") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'create.clusteredIndex.key' is the wrong type '%s', expected type 'object'",
				    bv_type_name(bson_iter_type(&it)));
			bson_iter_document(&it, &klen, &kdata);
			has_key = true;
		} else if (strcmp(f, "unique") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'create.clusteredIndex.unique' is the wrong type '%s', expected type 'bool'",
				    bv_type_name(bson_iter_type(&it)));
			*unique = bson_iter_bool(&it);
			has_unique = true;
		} else if (strcmp(f, "name") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'create.clusteredIndex.name' is the wrong type '%s', expected type 'string'",
				    bv_type_name(bson_iter_type(&it)));
			name = bson_iter_utf8(&it, NULL);
		} else {   /* v */
			if (!BSON_ITER_HOLDS_NUMBER(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'create.clusteredIndex.v' is the wrong type '%s', expected types '[long, int, decimal, double]'",
				    bv_type_name(bson_iter_type(&it)));
			*v = (int32_t)bson_iter_as_int64(&it);
		}
	}
	if (!has_key)
		return terr_set(err, 40414, "BSON field 'create.clusteredIndex.key' is missing but a required field");
	if (!has_unique)
		return terr_set(err, 40414,
		    "BSON field 'create.clusteredIndex.unique' is missing but a required field");
	{
		/* exactly {_id: 1} (any numeric 1, as SimpleBSONObjComparator sees it) */
		bson_t key;
		bson_iter_t kit;
		if (bson_init_static(&key, kdata, klen) && bson_count_keys(&key) == 1 && bson_iter_init(&kit, &key) &&
		    bson_iter_next(&kit) && strcmp(bson_iter_key(&kit), "_id") == 0 && BSON_ITER_HOLDS_NUMBER(&kit) &&
		    bson_iter_as_double(&kit) == 1.0)
			*key_on_id = true;
	}
	{
		bson_t k;
		BSON_APPEND_INT32(canon, "v", *v);
		BSON_APPEND_DOCUMENT_BEGIN(canon, "key", &k);
		BSON_APPEND_INT32(&k, "_id", 1);
		bson_append_document_end(canon, &k);
		BSON_APPEND_UTF8(canon, "name", name != NULL ? name : "_id_");
		BSON_APPEND_BOOL(canon, "unique", *unique);
	}
	return 0;
}

int
cmd_clustered_check_create(cmd_t *c, bool test_commands, bson_t *canon, bool *clustered, terr_t *err)
{
	bson_iter_t it, e;
	bool unique, on_id, has_expire;
	int32_t v;

	*clustered = false;
	has_expire = bson_iter_init_find(&e, c->body, "expireAfterSeconds");
	if (!bson_iter_init_find(&it, c->body, "clusteredIndex")) {
		if (has_expire && !bson_has_field(c->body, "timeseries"))
			return terr_set(err, TERR_INVALID_OPTIONS, "'expireAfterSeconds' requires clustering to be enabled");
		return 0;
	}
	if (!BSON_ITER_HOLDS_BOOL(&it) && !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, 5979702, "'clusteredIndex' has to be a boolean or object.");
	if (BSON_ITER_HOLDS_BOOL(&it)) {
		if (!bson_iter_bool(&it)) {
			if (has_expire && !bson_has_field(c->body, "timeseries"))
				return terr_set(err, TERR_INVALID_OPTIONS,
				    "'expireAfterSeconds' requires clustering to be enabled");
			return 0;   /* {clusteredIndex: false}: an ordinary collection */
		}
		if (bson_has_field(c->body, "timeseries"))
			return 0;   /* a time-series collection is clustered anyway */
		return terr_set(err, 5979703,
		    "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for specific "
		    "internal collections and vice versa");
	}
	if (bson_has_field(c->body, "viewOn"))
		return terr_set(err, 6026500, "The 'clusteredIndex' option is not supported with views");
	RET(parse_spec(&it, canon, &unique, &v, &on_id, err));
	/* checkCreationOptions */
	if (bson_iter_init_find(&it, c->body, "size") && !BSON_ITER_HOLDS_NULL(&it))
		return terr_set(err, 6049200,
		    "'size' field for capped collections is not allowed on clustered collections. Did you mean "
		    "'capped: true' with 'expireAfterSeconds'?");
	if (bson_iter_init_find(&it, c->body, "max") && !BSON_ITER_HOLDS_NULL(&it))
		return terr_set(err, 6049204,
		    "'max' field for capped collections is not allowed on clustered collections. Did you mean "
		    "'capped: true' with 'expireAfterSeconds'?");
	if (bson_iter_init_find(&it, c->body, "capped") && bson_iter_as_bool(&it)) {
		if (!test_commands)
			return terr_set(err, 6127800,
			    "Clustered capped collection only available with 'enableTestCommands' server parameter");
		if (!has_expire)
			return terr_set(err, 6049201, "A capped clustered collection requires the 'expireAfterSeconds' field");
		return terr_set(err, TERR_NOT_IMPLEMENTED, "capped clustered collections are not supported by Tamga yet");
	}
	/* createCollection's checks */
	if (bson_iter_init_find(&it, c->body, "idIndex") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
	    bson_iter_value(&it)->value.v_doc.data_len > 5)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "The 'clusteredIndex' option is not supported with the 'idIndex' option");
	if (bson_iter_init_find(&it, c->body, "autoIndexId") && !bson_iter_as_bool(&it))
		return terr_set(err, 6026501, "The 'clusteredIndex' option does not support {autoIndexId: false}");
	/* validateClusteredIndexSpec */
	if (!unique)
		return terr_set(err, 5979700, "The clusteredIndex option requires unique: true to be specified");
	if (!on_id)
		return terr_set(err, 197,
		    "The clusteredIndex option is only supported for key: {_id: 1}");
	if (has_expire) {
		int64_t secs;
		if (!BSON_ITER_HOLDS_NUMBER(&e))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'create.expireAfterSeconds' is the wrong type '%s', expected type 'long'",
			    bv_type_name(bson_iter_type(&e)));
		secs = bson_iter_as_int64(&e);
		if (secs < 0)
			return terr_set(err, TERR_INVALID_OPTIONS, "TTL index 'expireAfterSeconds' option cannot be less than 0");
	}
	if (v != 2) {
		char *spec = bv_doc_to_mongo_string(canon);
		terr_set(err, 5979704, "Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%d",
		    spec, (int)v);
		bson_free(spec);
		return -1;
	}
	*clustered = true;
	return 0;
}

void
cmd_clustered_index_spec(const storage_coll_t *coll, const storage_index_t *ix, bson_t *out)
{
	bson_iter_t it;

	if (bson_iter_init(&it, ix->spec))
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "clustered") != 0)
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
	if (coll->clustered_ttl >= 0)
		BSON_APPEND_INT64(out, "expireAfterSeconds", coll->clustered_ttl);
	BSON_APPEND_BOOL(out, "clustered", true);
}
