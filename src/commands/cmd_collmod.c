/*
 * cmd_collmod.c -- collMod: changing a collection's validation options,
 * including MongoDB 9.0's move to validationLevel 'constraint' (prepare,
 * then a full scan that refuses the upgrade while any document fails).
 * Index options (hidden, expireAfterSeconds, the unique conversion with
 * prepareUnique / unique / forceNonUnique / dryRun) are cmd_index.c's.
 */
#include "commands/commands_private.h"
#include "commands/preimages_opt.h"

#include <string.h>

#include "bson/value.h"
#include "common/log.h"
#include "commands/cmd_timeseries.h"
#include "commands/validation.h"
#include "query/plan.h"
#include "timeseries/timeseries.h"

static const char *const collmod_fields[] = {
	"validator", "validationLevel", "validationAction", "prepareConstraintValidationLevel",
	"index", "viewOn", "pipeline", "expireAfterSeconds", "changeStreamPreAndPostImages",
	"cappedSize", "cappedMax", "timeseries", "clusteredIndex", "dryRun", "collectionUUID",
	"timeseriesBucketsMayHaveMixedSchemaData", "recordIdsReplicated", NULL,
};

bool
cmd_is_coll_mod_option(const char *field)
{
	for (int i = 0; collmod_fields[i] != NULL; i++)
		if (strcmp(collmod_fields[i], field) == 0)
			return true;
	return false;
}

static const char *
str_field(const bson_t *doc, const char *field)
{
	bson_iter_t it;

	if (doc != NULL && bson_iter_init_find(&it, doc, field) && BSON_ITER_HOLDS_UTF8(&it))
		return bson_iter_utf8(&it, NULL);
	return NULL;
}

/* MongoDB 9.0's checkValidationOptionsCanBeUsed for an existing collection. */
static int
check_transition(const bson_t *old, const char *new_level, const char *new_action,
    bool new_validator, terr_t *err)
{
	const char *old_level = str_field(old, "validationLevel");
	const char *level = new_level ? new_level : (old_level ? old_level : "strict");
	const char *action = new_action ? new_action :
	    (str_field(old, "validationAction") ? str_field(old, "validationAction") : "error");
	bool old_constraint = old_level != NULL && strcmp(old_level, "constraint") == 0;
	bson_iter_t it;
	bool prepared = old != NULL && bson_iter_init_find(&it, (bson_t *)old, "prepareConstraintValidationLevel") &&
	    bson_iter_as_bool(&it);

	if (prepared && new_validator)
		return terr_set(err, TERR_BAD_VALUE,
		    "Validator cannot be changed while prepareConstraintValidationLevel is set. To make validator "
		    "changes, first run: db.runCommand({collMod: \"<collection>\", prepareConstraintValidationLevel: false})");
	if (strcmp(level, "constraint") != 0)
		return 0;
	if (strcmp(action, "warn") == 0)
		return terr_set(err, TERR_BAD_VALUE,
		    "Validation action of 'warn' is not allowed when Validation level is 'constraint'");
	if (old_constraint && new_validator)
		return terr_set(err, TERR_BAD_VALUE,
		    "Validator cannot be changed when Validation level is 'constraint'");
	if (new_level != NULL && !old_constraint) {
		if (old_level == NULL || strcmp(old_level, "strict") != 0)
			return terr_set(err, TERR_BAD_VALUE,
			    "validationLevel can only be changed to 'constraint' from 'strict'");
		if (new_validator)
			return terr_set(err, TERR_BAD_VALUE,
			    "Cannot change the validator in the same collMod that upgrades validationLevel to 'constraint'");
		if (!prepared)
			return terr_set(err, TERR_BAD_VALUE,
			    "Cannot upgrade validationLevel to 'constraint' without first setting "
			    "prepareConstraintValidationLevel to true");
	}
	return 0;
}

/*
 * The upgrade scan: the first document that fails the validator refuses the
 * move to 'constraint' (12370902).  One pass in RecordId order, reading a
 * document at a time: bounded memory, no lock on other collections.
 */
static int
scan_for_violations(cmd_t *c, storage_coll_t *coll, const bson_t *validator, terr_t *err)
{
	bson_t nor = BSON_INITIALIZER, arr;
	plan_request_t req;
	plan_exec_t *x = NULL;
	storage_session_t *s;
	match_t *m = NULL;
	bson_t doc;
	int rc, ret = -1;

	bson_append_array_begin(&nor, "$nor", -1, &arr);
	bson_append_document(&arr, "0", 1, validator);
	bson_append_array_end(&nor, &arr);
	ERR(match_compile(&nor, NULL, &m, err));
	memset(&req, 0, sizeof(req));
	req.coll = coll;
	req.match = m;
	req.borrow = true;
	ERR(plan_exec_new(&req, &x, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	rc = plan_exec_next(x, s, &doc, err);
	if (rc < 0)
		goto err;
	if (rc == 1) {
		bson_iter_t it;
		char *id = NULL, *v = bv_doc_to_mongo_string(validator);
		if (bson_iter_init_find(&it, &doc, "_id"))
			id = bv_to_mongo_string(bson_iter_value(&it));
		if (strlen(v) >= 10 * 1024) {
			bson_free(v);
			v = bson_strdup("<your collection's validator>");
		}
		terr_set(err, 12370902,
		    "Cannot upgrade validationLevel to 'constraint': the collection contains documents that do "
		    "not satisfy the validator.%s%s Run db.%s.find({\"$nor\": [%s]}) to find non-compliant documents.",
		    id ? " First offending document _id: " : "", id ? id : "", coll->name, v);
		bson_free(id);
		bson_free(v);
		goto err;
	}
	ret = 0;
err:
	plan_exec_free(x);
	match_free(m);
	bson_destroy(&nor);
	return ret;
}

typedef struct scan_arg {
	cmd_t *c;
	storage_coll_t *coll;
	bson_t validator;   /* a static view into coll->options */
} scan_arg_t;

/* storage_coll_set_options_checked's check: no document violates. */
static int
scan_check(void *arg, terr_t *err)
{
	scan_arg_t *sa = arg;

	return scan_for_violations(sa->c, sa->coll, &sa->validator, err);
}

/* collMod's collection-level expireAfterSeconds (clustered and time-series
 * collections): a non-negative number of seconds or "off" (mongod's IDL
 * and validateExpireAfterSeconds). */
static int
collmod_ttl(cmd_t *c, bool *has, bool *off, int64_t *secs, terr_t *err)
{
	bson_iter_t it;

	*has = bson_iter_init_find(&it, c->body, "expireAfterSeconds");
	if (!*has)
		return 0;
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		if (strcmp(bson_iter_utf8(&it, NULL), "off") != 0)
			return terr_set(err, TERR_INVALID_OPTIONS,
			    "Invalid value for 'expireAfterSeconds'. Must be 'off' or a number.");
		*off = true;
		return 0;
	}
	if (!BSON_ITER_HOLDS_NUMBER(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'collMod.expireAfterSeconds' is the wrong type '%s', expected types '[string, long]'",
		    bv_type_name(bson_iter_type(&it)));
	*secs = bson_iter_as_int64(&it);
	if (*secs < 0)
		return terr_set(err, TERR_INVALID_OPTIONS, "TTL index 'expireAfterSeconds' option cannot be less than 0");
	return 0;
}

/* collMod {timeseries: {granularity}}: only coarser (mongod's transitions
 * seconds -> minutes -> hours), bucketMaxSpanSeconds following it; out
 * gets the new timeseries document. */
static int
collmod_timeseries(cmd_t *c, const storage_coll_t *coll, bson_t *out, terr_t *err)
{
	static const char *const order[] = {"seconds", "minutes", "hours", NULL};
	ts_options_t o;
	bson_iter_t it, f;
	const char *gran = NULL;
	int from = -1, to = -1;
	int64_t span, rounding;

	if (!ts_options_get(coll->options, &o))
		return terr_set(err, TERR_INVALID_OPTIONS, "option only supported on a time-series collection: timeseries");
	bson_iter_init_find(&it, c->body, "timeseries");
	if (!BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'collMod.timeseries' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&it)));
	bson_iter_recurse(&it, &f);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "granularity") == 0 && BSON_ITER_HOLDS_UTF8(&f))
			gran = bson_iter_utf8(&f, NULL);
		else if (strcmp(k, "bucketMaxSpanSeconds") == 0 || strcmp(k, "bucketRoundingSeconds") == 0)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "collMod of timeseries.%s is not supported by Tamga yet", k);
		else
			return terr_set(err, 40415, "BSON field 'collMod.timeseries.%s' is an unknown field.", k);
	}
	if (gran == NULL || !ts_granularity_spans(gran, &span, &rounding))
		return terr_set(err, TERR_BAD_VALUE,
		    "Enumeration value '%s' for field 'collMod.timeseries.granularity' is not a valid value.",
		    gran ? gran : "");
	for (int i = 0; order[i] != NULL; i++) {
		if (o.granularity != NULL && strcmp(order[i], o.granularity) == 0)
			from = i;
		if (strcmp(order[i], gran) == 0)
			to = i;
	}
	if (from < 0 || to < from)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or "
		    "'minutes' to 'hours'.");
	BSON_APPEND_UTF8(out, "timeField", o.time_field);
	if (o.meta_field != NULL)
		BSON_APPEND_UTF8(out, "metaField", o.meta_field);
	BSON_APPEND_UTF8(out, "granularity", gran);
	BSON_APPEND_INT32(out, "bucketMaxSpanSeconds", (int32_t)span);
	return 0;
}

CMD_HANDLER(cmd_coll_mod)
{
	const char *name, *new_level = NULL, *new_action = NULL;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	bson_t opts = BSON_INITIALIZER, validator;
	bson_iter_t it;
	bool has_validator, found, prepare = false, has_prepare = false, upgrading = false;
	bool has_capped_size, has_capped_max, has_preimages = false, preimages = false;
	int64_t capped_size = 0, capped_max = 0;
	int ret = -1;
	bool has_ttl = false, ttl_off = false;
	int64_t ttl_secs = 0;
	bson_t ts_new = BSON_INITIALIZER;
	bool has_ts = false, has_mixed = false, mixed = false, set_mixed = false;
	static const char *const unsupported[] = {"clusteredIndex", NULL};
	static const char *const view_only[] = {"viewOn", "pipeline", NULL};
	/* what mongod's parseCollModRequest counts as a modification besides
	 * the index's own (prepareUnique and dryRun combine with none) */
	static const char *const modifications[] = {
		"cappedSize", "cappedMax", "validator", "validationLevel", "validationAction",
		"changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries", TS_OPT_MIXED, NULL};
	int i, other_mods = 0;
	bool dry_run = false, has_dry_run = false;

	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, collmod_fields, err));
	if (view_exists(c, c->db, name)) {
		ret = view_coll_mod(c, name, c->reply, err);
		goto err;
	}
	for (i = 0; view_only[i] != NULL; i++)
		if (bson_has_field(c->body, view_only[i])) {
			ret = terr_set(err, TERR_INVALID_OPTIONS, "option only supported on a view: %s", view_only[i]);
			goto err;
		}
	for (i = 0; modifications[i] != NULL; i++)
		if (bson_has_field(c->body, modifications[i]))
			other_mods++;
	ERR(cmd_get_bool(c, "dryRun", &dry_run, &has_dry_run, err));
	if (dry_run) {
		/* only a unique conversion's check: nothing changes */
		if (!bson_iter_init_find(&it, c->body, "index")) {
			ret = terr_set(err, TERR_INVALID_OPTIONS, "dry run mode requires an valid index modification.");
			goto err;
		}
		ret = cmd_index_coll_mod(c, name, &it, other_mods, CMD_COLLMOD_INDEX_DRY_RUN, c->reply, err);
		goto err;
	}
	for (i = 0; unsupported[i] != NULL; i++) {
		if (bson_has_field(c->body, unsupported[i])) {
			ret = terr_set(err, TERR_NOT_IMPLEMENTED, "collMod option '%s' is not supported by Tamga yet",
			    unsupported[i]);
			goto err;
		}
	}
	ERR(collmod_ttl(c, &has_ttl, &ttl_off, &ttl_secs, err));
	ERR(cmd_capped_number(c, c->body, "cappedSize", &capped_size, &has_capped_size, err));
	ERR(cmd_capped_number(c, c->body, "cappedMax", &capped_max, &has_capped_max, err));
	ERR(cmd_capped_range("cappedSize", has_capped_size, capped_size, "cappedMax", has_capped_max, capped_max,
	    err));
	ERR(cmd_get_doc(c, "validator", &validator, &has_validator, err));
	ERR(cmd_get_string(c, "validationLevel", &new_level, &found, err));
	ERR(cmd_get_string(c, "validationAction", &new_action, &found, err));
	ERR(cmd_get_bool(c, "prepareConstraintValidationLevel", &prepare, &has_prepare, err));
	ERR(cmd_get_bool(c, TS_OPT_MIXED, &mixed, &has_mixed, err));
	if (bson_iter_init_find(&it, c->body, "changeStreamPreAndPostImages")) {
		ERR(cmd_preimages_option(c, &it, "collMod", &preimages, err));
		has_preimages = true;
	}
	if (storage_coll_get(c->engine->st, c->db, name, &coll, NULL) != 0) {
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns does not exist: %s.%s", c->db, name);
		goto err;
	}
	if (has_ttl && coll->clustered_ix == NULL && !bson_has_field(coll->options, "timeseries")) {
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "'expireAfterSeconds' option is only supported on collections clustered by _id");
		goto err;
	}
	if (bson_has_field(c->body, "timeseries")) {
		ERR(collmod_timeseries(c, coll, &ts_new, err));
		has_ts = true;
	}
	if (has_mixed) {
		/* mongod's catalog flag: only on a time-series collection, and
		 * never cleared once set (its buckets may mix types by then) */
		if (!cmd_ts_is(coll)) {
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "option only supported on a time-series collection: " TS_OPT_MIXED);
			goto err;
		}
		if (!mixed && ts_options_mixed_schema(coll->options)) {
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "Cannot set timeseriesBucketsMayHaveMixedSchemaData to false once it is true");
			goto err;
		}
		set_mixed = mixed && !ts_options_mixed_schema(coll->options);
	}
	if ((has_capped_size || has_capped_max) && !coll->capped) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "Collection must be capped.");
		goto err;
	}

	/* the new options: the old ones with the given fields replaced */
	if (coll->options != NULL && bson_iter_init(&it, coll->options)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (has_capped_size && strcmp(k, "size") == 0) {
				/* mongod keeps the limits where create put them */
				int64_t v = cmd_capped_size(capped_size);
				if (v <= INT32_MAX)
					BSON_APPEND_INT32(&opts, "size", (int32_t)v);
				else
					BSON_APPEND_INT64(&opts, "size", v);
				continue;
			}
			if (has_capped_max && strcmp(k, "max") == 0) {
				BSON_APPEND_INT32(&opts, "max", (int32_t)cmd_capped_adjust_max(capped_max));
				continue;
			}
			if (has_ttl && strcmp(k, "expireAfterSeconds") == 0)
				continue;
			if (has_ts && strcmp(k, "timeseries") == 0) {
				BSON_APPEND_DOCUMENT(&opts, k, &ts_new);
				continue;
			}
			if ((has_validator && strcmp(k, "validator") == 0) ||
			    (new_level && strcmp(k, "validationLevel") == 0) ||
			    (new_action && strcmp(k, "validationAction") == 0) ||
			    strcmp(k, "prepareConstraintValidationLevel") == 0 ||
			    (has_preimages && strcmp(k, "changeStreamPreAndPostImages") == 0))
				continue;
			bson_append_iter(&opts, k, -1, &it);
		}
	}
	if (has_capped_max && !bson_has_field(coll->options, "max"))
		BSON_APPEND_INT32(&opts, "max", (int32_t)cmd_capped_adjust_max(capped_max));
	if (has_ttl && !ttl_off)
		BSON_APPEND_INT64(&opts, "expireAfterSeconds", ttl_secs);
	if (set_mixed)   /* the oplog entry: {collMod, timeseriesBucketsMayHaveMixedSchemaData: true} */
		BSON_APPEND_BOOL(&opts, TS_OPT_MIXED, true);
	if (has_validator)
		BSON_APPEND_DOCUMENT(&opts, "validator", &validator);
	if (has_preimages) {
		bson_t pd;
		bson_append_document_begin(&opts, "changeStreamPreAndPostImages", -1, &pd);
		BSON_APPEND_BOOL(&pd, "enabled", preimages);
		bson_append_document_end(&opts, &pd);
	}
	/* setting a validator makes the level and action explicit, as mongod's
	 * setValidator does */
	if (new_level)
		BSON_APPEND_UTF8(&opts, "validationLevel", new_level);
	else if (has_validator && str_field(coll->options, "validationLevel") == NULL)
		BSON_APPEND_UTF8(&opts, "validationLevel", "strict");
	if (new_action)
		BSON_APPEND_UTF8(&opts, "validationAction", new_action);
	else if (has_validator && str_field(coll->options, "validationAction") == NULL)
		BSON_APPEND_UTF8(&opts, "validationAction", "error");
	if (check_transition(coll->options, new_level, new_action, has_validator, err) != 0) {
		terr_wrap(err, "Failed to set validation options");
		ret = -1;
		goto err;
	}
	ERR(validation_check_options(&opts, false, err));
	if (has_validator)
		ERR(validation_check_namespace(c->db, name, coll->uuid, &opts, err));
	if (has_prepare && prepare) {
		const char *cur = str_field(coll->options, "validationLevel");
		if (cur != NULL && strcmp(cur, "constraint") == 0)
			tlog('W', "STORAGE", 12371301,
			    "prepareConstraintValidationLevel is being ignored because the collection is already at 'constraint' validationLevel",
			    NULL);
	}
	{
		const char *old_level = str_field(coll->options, "validationLevel");
		upgrading = new_level != NULL && strcmp(new_level, "constraint") == 0 &&
		    !(old_level != NULL && strcmp(old_level, "constraint") == 0);
	}
	/* the prepare flag stays until the upgrade succeeds or it is cleared */
	if (!upgrading && !(new_level && strcmp(new_level, "constraint") == 0)) {
		bool keep = false;
		if (has_prepare)
			keep = prepare;
		else if (coll->options != NULL && bson_iter_init_find(&it, coll->options,
		    "prepareConstraintValidationLevel"))
			keep = bson_iter_as_bool(&it);
		if (keep) {
			const char *cur = new_level ? new_level : str_field(coll->options, "validationLevel");
			if (cur == NULL || strcmp(cur, "constraint") != 0)
				BSON_APPEND_BOOL(&opts, "prepareConstraintValidationLevel", true);
		}
	}
	/* the index part's checks before anything changes (mongod parses the
	 * whole request first) */
	if (other_mods > 0 && bson_iter_init_find(&it, c->body, "index"))
		ERR(cmd_index_coll_mod(c, name, &it, other_mods, CMD_COLLMOD_INDEX_CHECK, NULL, err));
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	if (upgrading && coll->options != NULL && bson_iter_init_find(&it, coll->options, "validator") &&
	    BSON_ITER_HOLDS_DOCUMENT(&it)) {
		/* the scan and the new level as one step: writers wait meanwhile,
		 * and those validated before it check again (validation_recheck) */
		const uint8_t *data;
		uint32_t len;
		scan_arg_t sa;
		sa.c = c;
		sa.coll = coll;
		bson_iter_document(&it, &len, &data);
		bson_init_static(&sa.validator, data, len);
		ERR(storage_coll_set_options_checked(c->engine->st, s, c->db, name, &opts, scan_check, &sa, err));
	} else if (has_validator || new_level || new_action || has_prepare || has_capped_size || has_capped_max ||
	           has_ttl || has_ts || has_preimages || set_mixed) {
		/* only validation options change the stored options document */
		ERR(storage_coll_set_options(c->engine->st, s, c->db, name, &opts, err));
	} else if (c->engine->oplog != NULL && !bson_has_field(c->body, "index")) {
		/* a collMod naming no option is still logged on a replica set, as
		 * mongod logs it ({collMod: <name>}: change streams' modify event) */
		ERR(storage_coll_set_options(c->engine->st, s, c->db, name, &opts, err));
	}
	if (bson_iter_init_find(&it, c->body, "index"))
		ERR(cmd_index_coll_mod(c, name, &it, other_mods, CMD_COLLMOD_INDEX_APPLY, c->reply, err));
	ret = 0;
err:
	if (coll != NULL)
		storage_coll_release(coll);
	bson_destroy(&opts);
	bson_destroy(&ts_new);
	return ret;
}
