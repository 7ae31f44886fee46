/*
 * cmd_catalog.c -- commands that read or change the catalog: create, drop,
 * dropDatabase, renameCollection, listCollections, listDatabases, dbStats,
 * collStats.  Validation options are checked by validation.c; index
 * commands live in cmd_index.c.
 */
#include "commands/commands_private.h"
#include "commands/preimages_opt.h"
#include "schema/schema_rules.h"
#include "commands/cmd_repl_oplog.h"

#include <string.h>
#include <sys/statvfs.h>

#include "bson/collation.h"
#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"
#include "auth/auth.h"
#include "commands/clustered.h"
#include "commands/cmd_timeseries.h"
#include "timeseries/timeseries.h"
#include "commands/validation.h"
#include "expr/decimal.h"
#include "query/match.h"

/* Options `create` accepts and stores; anything else is 40415 unknown. */
static const char *const create_fields[] = {
	"capped", "size", "max", "validator", "validationLevel", "validationAction",
	"collation", "storageEngine", "indexOptionDefaults", "viewOn", "pipeline",
	"timeseries", "clusteredIndex", "expireAfterSeconds", "changeStreamPreAndPostImages",
	"encryptedFields", "autoIndexId", "idIndex", "flags", "temp", "recordIdsReplicated",
	NULL,
};

bool
cmd_is_create_option(const char *field)
{
	for (int i = 0; create_fields[i] != NULL; i++)
		if (strcmp(create_fields[i], field) == 0)
			return true;
	return false;
}

/* Features Tamga does not have yet: refuse clearly instead of ignoring. */
static int
refuse_unsupported_create(cmd_t *c, terr_t *err)
{
	static const char *const unsupported[] = {
		"encryptedFields", NULL,
	};
	bson_iter_t it;
	int i;

	for (i = 0; unsupported[i] != NULL; i++) {
		if (!bson_iter_init_find(&it, c->body, unsupported[i]))
			continue;
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "create option '%s' is not supported by Tamga yet", unsupported[i]);
	}
	return 0;
}

/* create's collation: a document with a locale ({} too is refused, unlike
 * the query commands), kept as mongod's normalized spec; simple is not
 * stored at all. */
static int
create_collation(cmd_t *c, const bson_iter_t *it, bson_t *options, terr_t *err)
{
	const bson_value_t *v = bson_iter_value((bson_iter_t *)it);
	const coll_t *coll;

	if (v->value_type == BSON_TYPE_DOCUMENT && v->value.v_doc.data_len <= 5)
		return terr_set(err, 40414, "BSON field 'create.collation.locale' is missing but a required field");
	RET(coll_parse_value(v, "create.collation", &coll, err));
	if (coll != NULL)
		BSON_APPEND_DOCUMENT(options, "collation", coll_spec(coll));
	return 0;
}

/* A double or decimal as mongod's safeInt64 reads it: truncated toward
 * zero, NaN as 0, out of range as the nearest int64. */
static int64_t
safe_int64(double d)
{
	if (d != d)
		return 0;
	if (d >= 9223372036854775808.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

/* A size or max of create / collMod / convertToCapped: a number read as
 * mongod's safeInt64 (see safe_int64), *found when present; a null is
 * absent. */
int
cmd_capped_number(cmd_t *c, const bson_t *holder, const char *field, int64_t *out, bool *found, terr_t *err)
{
	bson_iter_t it;

	*found = false;
	if (!bson_iter_init_find(&it, holder, field) || BSON_ITER_HOLDS_NULL(&it))
		return 0;
	if (BSON_ITER_HOLDS_DOUBLE(&it)) {
		*out = safe_int64(bson_iter_double(&it));
	} else if (BSON_ITER_HOLDS_DECIMAL128(&it)) {
		bson_decimal128_t d;
		bson_iter_decimal128(&it, &d);
		if (!expr_decimal_to_int64(d, out))
			*out = safe_int64(expr_decimal_to_double(d));
	} else if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it)) {
		*out = bson_iter_as_int64(&it);
	} else {
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.%s' is the wrong type '%s', expected types '[double, int, long, decimal]'",
		    c->name, field, bv_type_name(bson_iter_type(&it)));
	}
	*found = true;
	return 0;
}

int
cmd_capped_range(const char *size_name, bool has_size, int64_t size, const char *max_name, bool has_max,
                 int64_t max, terr_t *err)
{
	if (has_size && size < 1)
		return terr_set(err, TERR_BAD_VALUE, "BSON field '%s' value must be >= 1, actual value '%lld'",
		    size_name, (long long)size);
	if (has_size && size > CMD_CAPPED_MAX_SIZE)
		return terr_set(err, TERR_BAD_VALUE, "BSON field '%s' value must be <= %lld, actual value '%lld'",
		    size_name, (long long)CMD_CAPPED_MAX_SIZE, (long long)size);
	if (has_max && max >= ((int64_t)1 << 31))
		return terr_set(err, TERR_BAD_VALUE,
		    "BSON field '%s' value must be < 2147483648, actual value '%lld'", max_name, (long long)max);
	return 0;
}

/* The stored capped size.  mongod used to round it up to a multiple of
 * 256 (and cap at no less than 4096 bytes); since SERVER-67036
 * (featureFlagCappedCollectionsRelaxedSize, on in 9.0) it keeps the size
 * as given: so does this. */
int64_t
cmd_capped_size(int64_t size)
{
	return size;
}

/* mongod's capped max: none (<= 0) is stored as 2^31 - 1. */
int64_t
cmd_capped_adjust_max(int64_t max)
{
	return max <= 0 ? 0x7fffffff : max;
}

static void
append_capped_number(bson_t *out, const char *field, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(out, field, (int32_t)v);
	else
		BSON_APPEND_INT64(out, field, v);
}

void
cmd_capped_options_append(bson_t *out, int64_t size, bool has_max, int64_t max)
{
	BSON_APPEND_BOOL(out, "capped", true);
	append_capped_number(out, "size", size);
	if (has_max)
		append_capped_number(out, "max", max);
}

/*
 * create's capped, size and max, checked as mongod's create command and IDL
 * do; for a capped collection appends {capped: true, size[,
 * max]} to options (mongod stores them first).
 */
static int
create_capped(cmd_t *c, bson_t *options, terr_t *err)
{
	bson_iter_t it;
	int64_t size = 0, max = 0;
	bool has_size, has_max, capped;

	capped = bson_iter_init_find(&it, c->body, "capped") && bson_iter_as_bool(&it);
	RET(cmd_capped_number(c, c->body, "size", &size, &has_size, err));
	RET(cmd_capped_number(c, c->body, "max", &max, &has_max, err));
	RET(cmd_capped_range("size", has_size, size, "max", has_max, max, err));
	if (capped && !has_size)
		return terr_set(err, TERR_INVALID_OPTIONS, "the 'size' field is required when 'capped' is true");
	if (!capped && (has_size || has_max))
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "the 'capped' field needs to be true when either the 'size' or 'max' fields are present");
	if (capped)
		cmd_capped_options_append(options, cmd_capped_size(size), has_max, cmd_capped_adjust_max(max));
	return 0;
}

CMD_HANDLER(cmd_create)
{
	const char *name;
	bson_t options = BSON_INITIALIZER, clustered_spec = BSON_INITIALIZER;
	storage_session_t *s;
	storage_coll_t *existing = NULL;
	bson_iter_t it;
	bool first = true, clustered = false, is_ts = false;
	int ret = -1;

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, create_fields, err));
	ERR(cmd_ts_check_create(c, &options, &is_ts, err));
	if (!is_ts)
		ERR(cmd_clustered_check_create(c, engine_test_commands_enabled(c->engine), &clustered_spec, &clustered,
		    err));
	if (bson_has_field(c->body, "viewOn") || bson_has_field(c->body, "pipeline")) {
		/* a view takes viewOn, pipeline and collation only */
		bson_iter_init(&it, c->body);
		bson_iter_next(&it);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (cmd_is_create_option(k) && strcmp(k, "viewOn") != 0 && strcmp(k, "pipeline") != 0 &&
			    strcmp(k, "collation") != 0 && bson_has_field(c->body, "viewOn"))
				return terr_set(err, TERR_INVALID_OPTIONS, "option not supported on a view: %s", k);
		}
		ERR(refuse_unsupported_create(c, err));
		if (cmd_in_transaction(c))
			return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
			    "Cannot create a view in a multi-document transaction.");
		return view_create(c, name, err);
	}
	if (cmd_in_transaction(c) && bson_has_field(c->body, "timeseries")) {
		ret = terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot create a time-series collection in a multi-document transaction.");
		goto err;
	}
	ERR(refuse_unsupported_create(c, err));
	if (!is_ts)
		ERR(create_capped(c, &options, err));
	/* The stored options are the request minus the command name and the
	 * generic fields, in the order given, as listCollections shows them
	 * (the capped ones first, as create_capped wrote them). */
	bson_iter_init(&it, c->body);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bool known = false;
		int i;
		if (first) {
			first = false;
			continue;
		}
		for (i = 0; create_fields[i] != NULL; i++)
			if (strcmp(create_fields[i], k) == 0)
				known = true;
		if (strcmp(k, "capped") == 0 || strcmp(k, "size") == 0 || strcmp(k, "max") == 0)
			continue;
		if (is_ts && strcmp(k, "timeseries") == 0)
			continue;   /* cmd_ts_check_create stored its normalized form */
		if (is_ts && strcmp(k, "expireAfterSeconds") == 0) {
			BSON_APPEND_INT64(&options, k, bson_iter_as_int64(&it));
			continue;
		}
		if (known && strcmp(k, "collation") == 0)
			ERR(create_collation(c, &it, &options, err));
		else if (known && strcmp(k, "clusteredIndex") == 0 && clustered)
			BSON_APPEND_DOCUMENT(&options, k, &clustered_spec);   /* mongod's canonical form */
		else if (known && strcmp(k, "clusteredIndex") == 0)
			continue;   /* {clusteredIndex: false} */
		else if (known && strcmp(k, "expireAfterSeconds") == 0 && clustered)
			BSON_APPEND_INT64(&options, k, bson_iter_as_int64(&it));
		else if (known && strcmp(k, "changeStreamPreAndPostImages") == 0) {
			bool on = false;
			ERR(cmd_preimages_option(c, &it, "create", &on, err));
			bson_t pd;
			bson_append_document_begin(&options, k, -1, &pd);
			BSON_APPEND_BOOL(&pd, "enabled", on);
			bson_append_document_end(&options, &pd);
		} else if (known)
			bson_append_iter(&options, k, -1, &it);
	}
	ERR(validation_check_options(&options, true, err));
	ERR(validation_check_namespace(c->db, name, NULL, &options, err));
	if (is_ts)
		BSON_APPEND_INT32(&options, TS_OPT_BOUNDS, 2);   /* field-by-field bounds (timeseries.h) */
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	if (cmd_in_transaction(c)) {
		/* seen by this transaction only until it commits; an existing
		 * name is an error here even with the same options, as mongod */
		ERR(cmd_txn_check_create(c, c->db, name, err));
		ret = storage_coll_create_in_txn(c->engine->st, s, c->db, name, &options, err);
		goto err;
	}
	ret = storage_coll_create(c->engine->st, s, c->db, name, &options, err);
	if (ret == 0 && is_ts)
		ret = cmd_ts_after_create(c, name, err);
	if (ret != 0 && err->code == TERR_NAMESPACE_EXISTS &&
	    storage_coll_get(c->engine->st, c->db, name, &existing, NULL) == 0) {
		/* Creating what already exists with the same options succeeds. */
		if (existing->options != NULL && ts_options_equal_public(existing->options, &options)) {
			terr_clear(err);
			ret = 0;
		} else {
			bson_t shown = BSON_INITIALIZER;
			char *o;
			ts_options_copy_public(existing->options ? existing->options : &options, &shown);
			o = bv_doc_to_mongo_string(&shown);
			terr_set(err, TERR_NAMESPACE_EXISTS,
			    "namespace %s already exists, but with different options: %s", existing->ns, o);
			bson_free(o);
			bson_destroy(&shown);
		}
		storage_coll_release(existing);
	}
err:
	bson_destroy(&options);
	bson_destroy(&clustered_spec);
	return ret;
}

CMD_HANDLER(cmd_drop)
{
	const char *name;
	storage_session_t *s;
	storage_coll_t *coll = NULL;
	char ns[512];
	int nindexes, ret = -1;

	ERR(cmd_collection_arg(c, &name, err));
	cmd_ns(ns, sizeof(ns), c->db, name);
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		if (view_drop(c, name, err) == 0) {
			BSON_APPEND_UTF8(c->reply, "ns", ns);
			return 0;
		}
		/* Dropping a missing collection succeeds (MongoDB 7.0+). */
		terr_clear(err);
		return 0;
	}
	nindexes = coll->nindexes;
	cmd_ts_forget(coll);   /* its open buckets (a new one would get a new UUID anyway) */
	storage_coll_release(coll);
	ERR(cmd_repl_oplog_guard(c->engine, c->db, name, NULL, NULL, err));   /* the live oplog stays */
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ret = storage_coll_drop(c->engine->st, s, c->db, name, err);
	if (ret != 0 && err->code == TERR_NAMESPACE_NOT_FOUND) {
		terr_clear(err);
		return 0;
	}
	if (ret == 0 && strcmp(name, "system.views") == 0)
		view_drop_all(c);   /* the definitions went with it, as on mongod */
	if (ret == 0) {
		BSON_APPEND_INT32(c->reply, "nIndexesWas", nindexes);
		BSON_APPEND_UTF8(c->reply, "ns", ns);
	}
err:
	return ret;
}

CMD_HANDLER(cmd_drop_database)
{
	storage_session_t *s;

	RET(cmd_repl_oplog_guard(c->engine, c->db, NULL, NULL, NULL, err));   /* `local` stays while replicating */
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	RET(storage_db_drop(c->engine->st, s, c->db, err));
	BSON_APPEND_UTF8(c->reply, "dropped", c->db);
	return 0;
}

/* Split "db.coll" at the first dot. */
static int
split_ns(const char *field, const char *ns, char *db, size_t dblen, const char **coll, terr_t *err)
{
	const char *dot = strchr(ns, '.');

	if (dot == NULL || dot == ns || dot[1] == '\0' || (size_t)(dot - ns) >= dblen)
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid %s namespace: %s", field, ns);
	memcpy(db, ns, (size_t)(dot - ns));
	db[dot - ns] = '\0';
	*coll = dot + 1;
	return 0;
}

CMD_HANDLER(cmd_rename_collection)
{
	static const char *const fields[] = {"to", "dropTarget", "stayTemp", "collectionUUID", NULL};
	char from_db[256], to_db[256];
	const char *from_coll, *to_ns, *to_coll;
	bool drop_target = false, found;
	storage_session_t *s;

	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'renameCollection.renameCollection' is the wrong type '%s', expected type 'string'",
		    bv_type_name(bson_iter_type(&c->first)));
	RET(cmd_check_fields(c, fields, err));
	RET(split_ns("source", bson_iter_utf8(&c->first, NULL), from_db, sizeof(from_db), &from_coll, err));
	RET(cmd_get_string(c, "to", &to_ns, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field 'renameCollection.to' is missing but a required field");
	RET(split_ns("target", to_ns, to_db, sizeof(to_db), &to_coll, err));
	RET(cmd_get_bool(c, "dropTarget", &drop_target, &found, err));
	if (strcmp(from_coll, "system.views") == 0 || strcmp(to_coll, "system.views") == 0)
		return terr_set(err, TERR_ILLEGAL_OPERATION,
		    "renaming system.views collection or renaming to system.views is not allowed");
	if (view_exists(c, from_db, from_coll))
		return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "cannot rename view: %s.%s", from_db, from_coll);
	RET(cmd_repl_oplog_guard(c->engine, from_db, from_coll, to_db, to_coll, err));   /* the live oplog stays */
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	return storage_coll_rename(c->engine->st, s, from_db, from_coll, to_db, to_coll, drop_target, err);
}

/* The listCollections entry of one collection, as mongod shows it. */
static void
append_coll_info(bson_t *out, const storage_coll_t *coll, bool name_only)
{
	bson_t opts, info, id;
	bson_iter_t it;

	BSON_APPEND_UTF8(out, "name", coll->name);
	BSON_APPEND_UTF8(out, "type", cmd_ts_is(coll) ? "timeseries" : "collection");
	if (name_only)
		return;
	bson_append_document_begin(out, "options", -1, &opts);
	if (coll->options != NULL && bson_iter_init(&it, coll->options))
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), TS_OPT_BOUNDS) != 0 &&   /* Tamga's own (timeseries.h) */
			    strcmp(bson_iter_key(&it), TS_OPT_MIXED) != 0)
				bson_append_iter(&opts, bson_iter_key(&it), -1, &it);
	if (coll->options != NULL && bson_iter_init_find(&it, coll->options, TS_OPT_MIXED) &&
	    bson_iter_as_bool(&it) && !bson_has_field(coll->options, "storageEngine")) {
		/* collMod's flag where mongod 8.0+ keeps it (timeseries.h TS_OPT_MIXED) */
		bson_t se, wt;
		bson_append_document_begin(&opts, "storageEngine", -1, &se);
		bson_append_document_begin(&se, "wiredTiger", -1, &wt);
		BSON_APPEND_UTF8(&wt, "configString", TS_MIXED_CONFIG_STRING);
		bson_append_document_end(&se, &wt);
		bson_append_document_end(&opts, &se);
	}
	bson_append_document_end(out, &opts);
	bson_append_document_begin(out, "info", -1, &info);
	BSON_APPEND_BOOL(&info, "readOnly", false);
	bson_append_binary(&info, "uuid", -1, BSON_SUBTYPE_UUID, coll->uuid, 16);
	bson_append_document_end(out, &info);
	if (coll->clustered_ix != NULL)
		return;   /* mongod shows options.clusteredIndex (or timeseries) and no idIndex */
	bson_append_document_begin(out, "idIndex", -1, &id);
	BSON_APPEND_INT32(&id, "v", 2);
	{
		bson_t key;
		bson_append_document_begin(&id, "key", -1, &key);
		BSON_APPEND_INT32(&key, "_id", 1);
		bson_append_document_end(&id, &key);
	}
	BSON_APPEND_UTF8(&id, "name", "_id_");
	if (coll->collation != NULL)
		BSON_APPEND_DOCUMENT(&id, "collation", coll_spec(coll->collation));
	bson_append_document_end(out, &id);
}

/* A cursor source over an array of documents built in memory. */
typedef struct array_src {
	bson_t *docs;      /* owned: {"0": {...}, "1": {...}} */
	bson_iter_t it;
} array_src_t;

static int
array_src_next(void *state, storage_session_t *s, bson_t *doc, terr_t *err)
{
	array_src_t *a = state;
	const uint8_t *data;
	uint32_t len;

	if (!bson_iter_next(&a->it))
		return 0;
	bson_iter_document(&a->it, &len, &data);
	bson_init_static(doc, data, len);
	return 1;
}

static void
array_src_free(void *state)
{
	array_src_t *a = state;

	bson_destroy(a->docs);
	bson_free(a);
}

void
cmd_array_source(bson_t *docs_steal, cursor_source_t *src)
{
	array_src_t *a = tm_alloc0(sizeof(*a));

	a->docs = docs_steal;
	bson_iter_init(&a->it, a->docs);
	memset(src, 0, sizeof(*src));
	src->state = a;
	src->next = array_src_next;
	src->free = array_src_free;
}

int
cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err)
{
	bson_t cur;
	bool found;
	bson_iter_t it;

	memset(o, 0, sizeof(*o));
	o->batch_size = -1;
	o->connection_id = c->client->connection_id;
	RET(cmd_get_doc(c, "cursor", &cur, &found, err));
	if (found && bson_iter_init_find(&it, &cur, "batchSize")) {
		bson_value_t v = *bson_iter_value(&it);
		int64_t bs;
		if (!bv_is_number(&v))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field '%s.cursor.batchSize' is the wrong type '%s', expected types '[long, int, decimal, double]'",
			    c->name, bv_type_name(v.value_type));
		bs = bv_as_int64_exact(&v, &bs) ? bs : tm_double_to_i64_sat(bv_as_double(&v));
		if (bs < 0)
			return terr_set(err, 51024,
			    "BSON field 'batchSize' value must be >= 0, actual value '%lld'", (long long)bs);
		o->batch_size = bs;
	}
	return 0;
}

CMD_HANDLER(cmd_list_collections)
{
	static const char *const fields[] = {"filter", "nameOnly", "authorizedCollections", "cursor", "rawData", NULL};
	storage_coll_t **colls = NULL;
	bson_t filter, *docs;
	match_t *m = NULL;
	bool name_only = false, found_filter, found;
	int n = 0, i, nout = 0, ret = -1;
	cursor_source_t src = {0};
	cursor_opts_t copts;
	char ns[300], key[16];
	const char *k;

	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_get_bool(c, "nameOnly", &name_only, &found, err));
	ERR(cmd_get_doc(c, "filter", &filter, &found_filter, err));
	ERR(cmd_cursor_options(c, &copts, err));
	if (found_filter)
		ERR(match_compile(&filter, NULL, &m, err));
	ERR(storage_list_colls(c->engine->st, c->db, &colls, &n, err));
	docs = bson_new();
	for (i = 0; i < n; i++) {
		bson_t entry = BSON_INITIALIZER;
		append_coll_info(&entry, colls[i], false);
		if (m == NULL || match_eval(m, &entry)) {
			bson_uint32_to_string((uint32_t)nout++, &k, key, sizeof(key));
			if (name_only) {
				bson_t small = BSON_INITIALIZER;
				append_coll_info(&small, colls[i], true);
				bson_append_document(docs, k, -1, &small);
				bson_destroy(&small);
			} else {
				bson_append_document(docs, k, -1, &entry);
			}
		}
		bson_destroy(&entry);
	}
	{
		/* views: {name, type: "view", options: {viewOn, pipeline[, collation]}, info: {readOnly: true}} */
		bson_t views = BSON_INITIALIZER;
		bson_iter_t vi;
		storage_list_views(c->engine->st, c->db, &views);
		bson_iter_init(&vi, &views);
		while (bson_iter_next(&vi)) {
			bson_t entry = BSON_INITIALIZER, info;
			BSON_APPEND_UTF8(&entry, "name", bson_iter_key(&vi));
			BSON_APPEND_UTF8(&entry, "type", "view");
			bson_append_iter(&entry, "options", -1, &vi);
			BSON_APPEND_DOCUMENT_BEGIN(&entry, "info", &info);
			BSON_APPEND_BOOL(&info, "readOnly", true);
			bson_append_document_end(&entry, &info);
			if (m == NULL || match_eval(m, &entry)) {
				bson_t small = BSON_INITIALIZER;
				BSON_APPEND_UTF8(&small, "name", bson_iter_key(&vi));
				BSON_APPEND_UTF8(&small, "type", "view");
				bson_uint32_to_string((uint32_t)nout++, &k, key, sizeof(key));
				bson_append_document(docs, k, -1, name_only ? &small : &entry);
				bson_destroy(&small);
			}
			bson_destroy(&entry);
		}
		bson_destroy(&views);
	}
	cmd_array_source(docs, &src);
	cmd_ns(ns, sizeof(ns), c->db, "$cmd.listCollections");
	{
		char owner_buf[256];
		copts.owner = cmd_cursor_owner(c, owner_buf);
		ret = cursor_first_batch(c->engine->cursors, NULL, ns, &src, &copts, c->reply, err);
	}
err:
	for (i = 0; i < n; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);
	match_free(m);
	return ret;
}

/* Sizes of a database: sum over its collections. */
static int
db_sizes(cmd_t *c, const char *db, int64_t *colls_out, int64_t *objects, int64_t *data,
    int64_t *storage, int64_t *indexes, terr_t *err)
{
	storage_coll_t **colls = NULL;
	storage_session_t *s;
	int n = 0, i, ret = 0;

	*objects = *data = *storage = *indexes = 0;
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	RET(storage_list_colls(c->engine->st, db, &colls, &n, err));
	for (i = 0; i < n; i++) {
		int64_t cnt = 0, ds = 0, ss = 0;
		if (ret == 0)
			ret = storage_coll_stats(c->engine->st, s, colls[i], &cnt, &ds, &ss, err);
		*objects += cnt;
		*data += ds;
		*storage += ss;
		*indexes += colls[i]->nindexes;
		storage_coll_release(colls[i]);
	}
	bson_free(colls);
	*colls_out = n;
	return ret;
}

CMD_HANDLER(cmd_list_databases)
{
	static const char *const fields[] = {"filter", "nameOnly", "authorizedDatabases", NULL};
	bool authorized = false, only_authorized = false;
	char **names = NULL;
	int n = 0, i, nout = 0, ret = -1;
	bool name_only = false, found, found_filter;
	bson_t filter, arr = BSON_INITIALIZER;
	match_t *m = NULL;
	int64_t total = 0;
	char key[16];
	const char *k;

	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_get_bool(c, "nameOnly", &name_only, &found, err));
	ERR(cmd_get_bool(c, "authorizedDatabases", &authorized, &found, err));
	ERR(auth_list_databases_filter(&c->client->auth, found ? &authorized : NULL, &only_authorized, err));
	ERR(cmd_get_doc(c, "filter", &filter, &found_filter, err));
	if (found_filter)
		ERR(match_compile(&filter, NULL, &m, err));
	ERR(storage_list_dbs(c->engine->st, &names, &n, err));
	for (i = 0; i < n; i++) {
		bson_t entry = BSON_INITIALIZER;
		int64_t ncoll, objects, data, stor, nidx;
		ret = db_sizes(c, names[i], &ncoll, &objects, &data, &stor, &nidx, err);
		if (ret != 0) {
			bson_destroy(&entry);
			goto err;
		}
		if (only_authorized && !auth_db_visible(&c->client->auth, names[i])) {
			bson_destroy(&entry);
			continue;
		}
		BSON_APPEND_UTF8(&entry, "name", names[i]);
		if (!name_only) {
			BSON_APPEND_INT64(&entry, "sizeOnDisk", stor);
			BSON_APPEND_BOOL(&entry, "empty", objects == 0);
		}
		if (m == NULL || match_eval(m, &entry)) {
			bson_uint32_to_string((uint32_t)nout++, &k, key, sizeof(key));
			bson_append_document(&arr, k, -1, &entry);
			total += stor;
		}
		bson_destroy(&entry);
	}
	bson_append_array(c->reply, "databases", -1, &arr);
	if (!name_only) {
		BSON_APPEND_INT64(c->reply, "totalSize", total);
		BSON_APPEND_INT64(c->reply, "totalSizeMb", total / (1024 * 1024));
	}
	ret = 0;
err:
	storage_free_names(names, n);
	bson_destroy(&arr);
	match_free(m);
	return ret;
}

static double
scale_arg(cmd_t *c, terr_t *err, bool *bad)
{
	bson_iter_t it;
	double scale = 1;

	*bad = false;
	if (bson_iter_init_find(&it, c->body, "scale")) {
		bson_value_t v = *bson_iter_value(&it);
		if (!bv_is_number(&v)) {
			*bad = true;
			terr_set(err, TERR_TYPE_MISMATCH, "scale has to be a number");
			return 0;
		}
		scale = bv_as_double(&v);
		if (scale < 1) {
			*bad = true;
			terr_set(err, TERR_BAD_VALUE, "scale has to be > 0");
			return 0;
		}
		scale = (double)(int64_t)scale;
	}
	return scale;
}

CMD_HANDLER(cmd_db_stats)
{
	int64_t ncoll, objects, data, stor, nidx;
	struct statvfs fs;
	bool bad;
	double scale = scale_arg(c, err, &bad);

	if (bad)
		return -1;
	RET(db_sizes(c, c->db, &ncoll, &objects, &data, &stor, &nidx, err));
	BSON_APPEND_UTF8(c->reply, "db", c->db);
	BSON_APPEND_INT64(c->reply, "collections", ncoll);
	{
		bson_t views = BSON_INITIALIZER;
		storage_list_views(c->engine->st, c->db, &views);
		BSON_APPEND_INT32(c->reply, "views", (int32_t)bson_count_keys(&views));
		bson_destroy(&views);
	}
	BSON_APPEND_INT64(c->reply, "objects", objects);
	BSON_APPEND_DOUBLE(c->reply, "avgObjSize", objects ? (double)data / (double)objects : 0);
	BSON_APPEND_DOUBLE(c->reply, "dataSize", (double)data / scale);
	BSON_APPEND_DOUBLE(c->reply, "storageSize", (double)stor / scale);
	BSON_APPEND_INT64(c->reply, "indexes", nidx);
	BSON_APPEND_DOUBLE(c->reply, "totalSize", (double)stor / scale);
	BSON_APPEND_DOUBLE(c->reply, "scaleFactor", scale);
	if (statvfs(".", &fs) == 0) {
		BSON_APPEND_DOUBLE(c->reply, "fsUsedSize",
		    (double)((fs.f_blocks - fs.f_bfree) * fs.f_frsize) / scale);
		BSON_APPEND_DOUBLE(c->reply, "fsTotalSize", (double)(fs.f_blocks * fs.f_frsize) / scale);
	}
	return 0;
}

CMD_HANDLER(cmd_coll_stats)
{
	const char *name;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	int64_t cnt = 0, data = 0, stor = 0;
	bool bad;
	double scale = scale_arg(c, err, &bad);
	int ret = -1;

	if (bad)
		return -1;
	RET(cmd_collection_arg(c, &name, err));
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		RET(view_refuse(c, c->db, name, err));
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "Collection [%s.%s] not found.", c->db, name);
	}
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ERR(storage_coll_stats(c->engine->st, s, coll, &cnt, &data, &stor, err));
	BSON_APPEND_UTF8(c->reply, "ns", coll->ns);
	BSON_APPEND_DOUBLE(c->reply, "size", (double)data / scale);
	BSON_APPEND_INT64(c->reply, "count", cnt);
	if (cnt > 0)
		BSON_APPEND_INT64(c->reply, "avgObjSize", data / cnt);
	BSON_APPEND_DOUBLE(c->reply, "storageSize", (double)stor / scale);
	BSON_APPEND_INT64(c->reply, "freeStorageSize", 0);
	BSON_APPEND_BOOL(c->reply, "capped", coll->capped);
	if (coll->capped) {
		if (coll->capped_max <= INT32_MAX)
			BSON_APPEND_INT32(c->reply, "max", (int32_t)coll->capped_max);
		else
			BSON_APPEND_INT64(c->reply, "max", coll->capped_max);
		BSON_APPEND_DOUBLE(c->reply, "maxSize", (double)coll->capped_size / scale);
	}
	/* the storage engine's section, as tools read it: the record table's
	 * URI and type (WiredTiger's own statistics are not copied in) */
	{
		bson_t wt, md;
		char uri[300];

		BSON_APPEND_DOCUMENT_BEGIN(c->reply, "wiredTiger", &wt);
		BSON_APPEND_DOCUMENT_BEGIN(&wt, "metadata", &md);
		BSON_APPEND_INT32(&md, "formatVersion", 1);
		bson_append_document_end(&wt, &md);
		BSON_APPEND_UTF8(&wt, "type", "file");
		snprintf(uri, sizeof uri, "statistics:%s", coll->ident);
		BSON_APPEND_UTF8(&wt, "uri", uri);
		bson_append_document_end(c->reply, &wt);
	}
	if (cmd_ts_is(coll))
		cmd_ts_stats_append(coll, cnt, c->reply);   /* count is the buckets' */
	BSON_APPEND_INT32(c->reply, "nindexes", coll->nindexes);
	BSON_APPEND_DOUBLE(c->reply, "totalSize", (double)stor / scale);
	BSON_APPEND_DOUBLE(c->reply, "scaleFactor", scale);
	{
		/* Tamga: the violation counters of the writes validated here
		 * (schema/schema_rules.h), when the collection has a validator or
		 * had one */
		schema_counters_t *vc = schema_counters_find(coll->uuid);
		bson_iter_t vi;
		if (vc != NULL || (coll->options != NULL && bson_iter_init_find(&vi, coll->options, "validator"))) {
			bson_t v;
			BSON_APPEND_DOCUMENT_BEGIN(c->reply, "validation", &v);
			schema_counters_append(vc, &v);
			bson_append_document_end(c->reply, &v);
		}
	}
	ret = 0;
err:
	storage_coll_release(coll);
	return ret;
}
