/*
 * validation.c -- validationLevel / validationAction around a compiled
 * validator, and the errInfo of a failed write.
 *
 * The validator is compiled once per catalog version and cached on the
 * collection descriptor.  A write checks the new document; on failure the
 * errInfo comes from query/match_explain (every validator form, $jsonSchema
 * included), the action decides between refusing (121), logging and
 * letting the write through (warn, log id 20294) or both (errorAndLog, log
 * id 7488700), as mongod's CollectionImpl::checkValidationAndParseResult.
 *
 * Not here: collMod's level transitions and the upgrade scan
 * (cmd_collmod.c), the bypassDocumentValidation privilege (the dispatcher).
 */
#include "commands/validation.h"
#include "commands/commands_private.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bson/collation.h"
#include "bson/value.h"
#include "common/log.h"
#include "common/mem.h"
#include "query/match.h"
#include "query/match_explain.h"
#include "schema/schema.h"
#include "schema/schema_rules.h"
#include "timeseries/timeseries.h"
#include "timeseries/ts_schema.h"

#define TERR_QUERY_FEATURE_NOT_ALLOWED 224

typedef enum { LEVEL_OFF, LEVEL_MODERATE, LEVEL_STRICT, LEVEL_CONSTRAINT } level_t;
typedef enum { ACTION_ERROR, ACTION_WARN, ACTION_ERROR_AND_LOG } action_t;

static const char *const level_names[] = {"off", "moderate", "strict", "constraint"};
static const char *const action_names[] = {"error", "warn", "errorAndLog"};

/* What the cache slot of a collection descriptor holds. */
typedef struct validator {
	bool has_validator;
	level_t level;
	action_t action;
	bool prepared;           /* prepareConstraintValidationLevel is set */
	bool has_expr;           /* $expr using $$NOW: recompiled per write */
	bson_t *filter;          /* owned copy of the validator (for $expr recompiles) */
	match_t *match;          /* the whole validator */
	const coll_t *coll;      /* the collection's default collation: the validator's too */
	schema_counters_t *counters;   /* the collection's violation counters (schema_rules.h; lazy) */
} validator_t;

static void
validator_clear(validator_t *v)
{
	match_free(v->match);
	v->match = NULL;
	if (v->filter != NULL)
		bson_destroy(v->filter);
	v->filter = NULL;
}

static void
validator_free(void *p)
{
	validator_t *v = p;

	if (v == NULL)
		return;
	validator_clear(v);
	bson_free(v);
}

static int
parse_enum(const bson_t *opts, const char *cmd, const char *field, const char *const *names,
           int n, int *out, terr_t *err)
{
	bson_iter_t it;
	int i;

	if (!bson_iter_init_find(&it, opts, field))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", cmd, field,
		    bv_type_name(bson_iter_type(&it)));
	for (i = 0; i < n; i++) {
		if (strcmp(bson_iter_utf8(&it, NULL), names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return terr_set(err, TERR_BAD_VALUE,
	    "Enumeration value '%s' for field '%s.%s' is not a valid value.",
	    bson_iter_utf8(&it, NULL), cmd, field);
}

static int
compile_match(const bson_t *validator, const coll_t *coll, match_t **out, terr_t *err)
{
	match_options_t mo = {0};

	mo.coll = coll;
	mo.disallow = MATCH_DISALLOW_TEXT | MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR |
	              MATCH_DISALLOW_FUNCTION;
	return match_compile(validator, &mo, out, err);
}

/* Compile the validation part of options into v (zeroed first).  creating
 * picks the command name of messages and whether parse errors carry
 * collMod's "Parsing of collection validator failed" context; stored is set
 * for a collection's saved options (the level/action rules that only
 * create/collMod enforce are not checked again). */
static int
compile(const bson_t *options, bool creating, bool stored, validator_t *v, terr_t *err)
{
	const char *cmd = creating ? "create" : "collMod";
	bson_iter_t it;
	bson_t validator;
	const uint8_t *data;
	uint32_t len;
	int level = LEVEL_STRICT, action = ACTION_ERROR;

	memset(v, 0, sizeof(*v));
	v->level = LEVEL_STRICT;
	if (options == NULL)
		return 0;
	RET(parse_enum(options, cmd, "validationLevel", level_names, 4, &level, err));
	RET(parse_enum(options, cmd, "validationAction", action_names, 3, &action, err));
	v->level = (level_t)level;
	v->action = (action_t)action;
	v->prepared = bson_iter_init_find(&it, options, "prepareConstraintValidationLevel") &&
	    bson_iter_as_bool(&it);
	if (!stored && v->level == LEVEL_CONSTRAINT && v->action == ACTION_WARN)
		return terr_set(err, TERR_BAD_VALUE,
		    "Validation action of 'warn' is not allowed when Validation level is 'constraint'");
	if (!bson_iter_init_find(&it, options, "validator"))
		return 0;
	if (!BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.validator' is the wrong type '%s', expected type 'object'", cmd,
		    bv_type_name(bson_iter_type(&it)));
	bson_iter_document(&it, &len, &data);
	if (!bson_init_static(&validator, data, len))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON in validator");
	if (bson_empty(&validator))
		return 0;
	if (bson_iter_init_find(&it, options, "collation")) {
		/* stored normalized by create; a bad one fails create before this */
		terr_t e = TERR_INIT;
		if (coll_parse_value(bson_iter_value(&it), "collation", &v->coll, &e) != 0)
			v->coll = NULL;
		terr_clear(&e);
	}
	if (compile_match(&validator, v->coll, &v->match, err) != 0)
		goto fail;
	/* mongod keeps encryption keywords out of logs and moderate checks */
	if ((v->level == LEVEL_MODERATE || v->action != ACTION_ERROR) &&
	    match_uses_encrypt(v->match)) {
		terr_set(err, TERR_QUERY_FEATURE_NOT_ALLOWED,
		    "Encryption-related validator keywords are not allowed in this context");
		goto fail;
	}
	v->has_validator = true;
	/* only $$NOW changes between writes: other $expr validators stay cached */
	v->has_expr = match_can_fail(v->match) &&
	    memmem(bson_get_data(&validator), validator.len, "$$NOW", 5) != NULL;
	v->filter = bson_copy(&validator);
	return 0;
fail:
	if (!creating)
		terr_wrap(err, "Parsing of collection validator failed");
	validator_clear(v);
	return -1;
}

int
validation_check_options(const bson_t *options, bool creating, terr_t *err)
{
	validator_t *v = tm_alloc0(sizeof(*v));
	int rc = compile(options, creating, false, v, err);

	validator_free(v);
	return rc;
}

int
validation_check_namespace(const char *db, const char *coll, const uint8_t *uuid,
                           const bson_t *options, terr_t *err)
{
	bson_iter_t it;
	uint8_t fresh[16];
	char u[40];
	bool internal = strcmp(db, "admin") == 0 || strcmp(db, "local") == 0 ||
	    (strcmp(db, "config") == 0 && strcmp(coll, "settings") != 0);

	if (options == NULL || !bson_iter_init_find(&it, options, "validator") ||
	    !BSON_ITER_HOLDS_DOCUMENT(&it)) {
		return 0;
	} else {
		const uint8_t *data;
		uint32_t len;
		bson_iter_document(&it, &len, &data);
		if (len <= 5)
			return 0;
	}
	if (!internal && strncmp(coll, "system.", 7) != 0)
		return 0;
	if (uuid == NULL) {
		FILE *f = fopen("/dev/urandom", "rb");
		if (f == NULL || fread(fresh, 1, sizeof fresh, f) != sizeof fresh)
			memset(fresh, 0x5a, sizeof fresh);
		if (f != NULL)
			fclose(f);
		fresh[6] = (uint8_t)((fresh[6] & 0x0f) | 0x40);
		fresh[8] = (uint8_t)((fresh[8] & 0x3f) | 0x80);
		uuid = fresh;
	}
	snprintf(u, sizeof u, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9],
	    uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15]);
	if (strncmp(coll, "system.", 7) == 0)
		return terr_set(err, TERR_INVALID_OPTIONS,
		    "Document validators not allowed on system collection %s.%s with UUID %s", db, coll, u);
	return terr_set(err, TERR_INVALID_OPTIONS,
	    "Document validators are not allowed on collection %s.%s with UUID %s in the %s internal "
	    "database", db, coll, u, db);
}

static validator_t *
get_validator(storage_coll_t *coll, terr_t *err)
{
	validator_t *v = coll->cache, *won;

	if (v != NULL)
		return v;
	v = tm_alloc0(sizeof(*v));
	if (compile(coll->options, false, true, v, err) != 0) {
		validator_free(v);
		return NULL;
	}
	won = storage_coll_cache_set(coll, v, validator_free);
	if (won != v)
		validator_free(v);
	return won;
}

bool
validation_is_constraint(storage_coll_t *coll)
{
	terr_t e = TERR_INIT;
	validator_t *v = get_validator(coll, &e);

	terr_clear(&e);
	return v != NULL && v->level == LEVEL_CONSTRAINT;
}

static void
log_failure(storage_coll_t *coll, int id, const char *msg, const bson_t *doc, const bson_t *info)
{
	bson_t attr = BSON_INITIALIZER;

	BSON_APPEND_UTF8(&attr, "namespace", coll->ns);
	BSON_APPEND_DOCUMENT(&attr, "document", doc);
	BSON_APPEND_DOCUMENT(&attr, "errInfo", info);
	tlog('W', "STORAGE", id, msg, &attr);
	bson_destroy(&attr);
}

/* 1 passes, 0 fails (an evaluation error counts as failing, as in mongod). */
static int
passes(const validator_t *v, const bson_t *doc, match_t **fresh)
{
	terr_t e = TERR_INIT;
	const match_t *m = v->match;
	int rc;

	if (v->has_expr && *fresh == NULL) {
		/* $$NOW is the time of this write, not of the cached compile */
		if (compile_match(v->filter, v->coll, fresh, &e) != 0)
			*fresh = NULL;
		terr_clear(&e);
	}
	if (*fresh != NULL)
		m = *fresh;
	rc = match_exec(m, doc, NULL, &e);
	terr_clear(&e);
	return rc == 1;
}

int
validation_recheck(storage_coll_t *current, const bson_t *new_doc, const bson_t *old_doc, terr_t *err)
{
	validation_result_t vr;

	if (!validation_is_constraint(current))
		return 0;
	return validation_check_write(current, new_doc, old_doc, false, &vr, err);
}

int
validation_check_write(storage_coll_t *coll, const bson_t *new_doc, const bson_t *old_doc,
                       bool bypass, validation_result_t *result, terr_t *err)
{
	validator_t *v;
	match_t *fresh = NULL;
	bson_t *info;

	*result = VALIDATION_OK;
	/* a bucket written raw into a time-series collection (every write of
	 * a user path reaches here; the routed ones do not): one mixing types
	 * only where the collection allows it, as mongod's
	 * doesTimeseriesBucketsDocContainMixedSchemaData check, whatever
	 * bypassDocumentValidation says */
	if (coll->timeseries && ts_bucket_mixed_schema(new_doc) && !ts_options_mixed_schema(coll->options))
		return terr_set(err, TERR_TS_MIXED_SCHEMA,
		    "Cannot write time-series bucket containing mixed schema data, please run collMod with "
		    "timeseriesBucketsMayHaveMixedSchemaData and retry your insert");
	/* system.views holds view definitions: only ones mongod can read */
	if (view_is_system_views(coll->name))
		RET(view_check_definition_doc(coll->db, new_doc, err));
	if ((v = get_validator(coll, err)) == NULL)
		return -1;
	if (!v->has_validator || v->level == LEVEL_OFF)
		return 0;
	if (bypass) {
		if (v->level == LEVEL_CONSTRAINT)
			return terr_set(err, TERR_BAD_VALUE,
			    "bypassDocumentValidation is not permitted with 'constraint' validationLevel");
		if (v->prepared)
			return terr_set(err, TERR_BAD_VALUE,
			    "bypassDocumentValidation is not permitted while prepareConstraintValidationLevel "
			    "is set. To allow it again, first run: db.runCommand({collMod: \"<collection>\", "
			    "prepareConstraintValidationLevel: false})");
		return 0;
	}
	/* the violation counters (schema_rules.h): one pointer per descriptor */
	schema_counters_t *sc = __atomic_load_n(&v->counters, __ATOMIC_ACQUIRE);
	if (sc == NULL) {
		sc = schema_counters_get(coll->uuid, coll->ns);
		__atomic_store_n(&v->counters, sc, __ATOMIC_RELEASE);
	}
	if (passes(v, new_doc, &fresh)) {
		match_free(fresh);
		schema_counters_passed(sc);
		return 0;
	}
	/* moderate: updates to documents that already fail are not checked */
	if (v->level == LEVEL_MODERATE && old_doc != NULL && !passes(v, old_doc, &fresh)) {
		match_free(fresh);
		return 0;
	}
	info = match_explain_errinfo(fresh != NULL ? fresh : v->match, new_doc, NULL);
	match_free(fresh);
	schema_counters_failed(sc, info, v->action == ACTION_WARN && v->level != LEVEL_CONSTRAINT);
	/* warn is escalated to error at constraint, as mongod does */
	if (v->action == ACTION_WARN && v->level != LEVEL_CONSTRAINT) {
		log_failure(coll, 20294, "Document would fail validation", new_doc, info);
		bson_destroy(info);
		*result = VALIDATION_WARNED;
		return 0;
	}
	if (v->action == ACTION_ERROR_AND_LOG)
		log_failure(coll, 7488700, "Document failed validation", new_doc, info);
	terr_set(err, TERR_DOCUMENT_VALIDATION_FAILURE, "Document failed validation");
	terr_set_info_steal(err, info);
	return -1;
}
