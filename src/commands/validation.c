/*
 * validation.c -- validationLevel / validationAction around a compiled
 * validator, and the errInfo of a failed write.
 */
#include "commands/validation.h"

#include <string.h>

#include "bson/value.h"
#include "common/log.h"
#include "query/match.h"
#include "schema/schema.h"

typedef enum { LEVEL_OFF, LEVEL_MODERATE, LEVEL_STRICT, LEVEL_CONSTRAINT } level_t;
typedef enum { ACTION_ERROR, ACTION_WARN, ACTION_ERROR_AND_LOG } action_t;

static const char *const level_names[] = {"off", "moderate", "strict", "constraint"};
static const char *const action_names[] = {"error", "warn", "errorAndLog"};

/* What the cache slot of a collection descriptor holds. */
typedef struct validator {
	bool has_validator;
	level_t level;
	action_t action;
	match_t *match;          /* the whole validator */
	schema_t *schema;        /* set when the validator is exactly {$jsonSchema: S} */
} validator_t;

static void
validator_free(void *p)
{
	validator_t *v = p;

	if (v == NULL)
		return;
	match_free(v->match);
	schema_free(v->schema);
	bson_free(v);
}

static int
parse_enum(const bson_t *opts, const char *field, const char *const *names, int n, int *out,
    terr_t *err)
{
	bson_iter_t it;
	int i;

	if (!bson_iter_init_find(&it, opts, field))
		return 0;
	if (!BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s' is the wrong type '%s', expected type 'string'", field,
		    bv_type_name(bson_iter_type(&it)));
	for (i = 0; i < n; i++) {
		if (strcmp(bson_iter_utf8(&it, NULL), names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return terr_set(err, TERR_BAD_VALUE, "Enumeration value '%s' for field '%s' is not a valid value.",
	    bson_iter_utf8(&it, NULL), field);
}

/* Compile the validator part of options into v. */
static int
compile(const bson_t *options, validator_t *v, terr_t *err)
{
	bson_iter_t it, sub;
	bson_t validator;
	const uint8_t *data;
	uint32_t len;
	match_options_t mo = {0};
	int level = LEVEL_STRICT, action = ACTION_ERROR;

	memset(v, 0, sizeof(*v));
	v->level = LEVEL_STRICT;
	if (options == NULL)
		return 0;
	RET(parse_enum(options, "validationLevel", level_names, 4, &level, err));
	RET(parse_enum(options, "validationAction", action_names, 3, &action, err));
	v->level = (level_t)level;
	v->action = (action_t)action;
	if (v->level == LEVEL_CONSTRAINT && v->action == ACTION_WARN)
		return terr_set(err, TERR_BAD_VALUE,
		    "Validation action of 'warn' is not allowed when Validation level is 'constraint'");
	if (!bson_iter_init_find(&it, options, "validator"))
		return 0;
	if (!BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'validator' is the wrong type '%s', expected type 'object'",
		    bv_type_name(bson_iter_type(&it)));
	bson_iter_document(&it, &len, &data);
	bson_init_static(&validator, data, len);
	if (bson_empty(&validator))
		return 0;
	mo.disallow = MATCH_DISALLOW_TEXT | MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR;
	if (match_compile(&validator, &mo, &v->match, err) != 0)
		return -1;
	v->has_validator = true;
	if (bson_count_keys(&validator) == 1 && bson_iter_init_find(&sub, &validator, "$jsonSchema") &&
	    BSON_ITER_HOLDS_DOCUMENT(&sub)) {
		bson_t s;
		bson_iter_document(&sub, &len, &data);
		bson_init_static(&s, data, len);
		if (schema_compile(&s, &v->schema, err) != 0) {
			match_free(v->match);
			v->match = NULL;
			return -1;
		}
	}
	return 0;
}

int
validation_check_options(const bson_t *options, bool creating, terr_t *err)
{
	validator_t v;
	int rc = compile(options, &v, err);

	match_free(v.match);
	schema_free(v.schema);
	return rc;
}

static validator_t *
get_validator(storage_coll_t *coll, terr_t *err)
{
	validator_t *v = coll->cache, *won;

	if (v != NULL)
		return v;
	v = bson_malloc0(sizeof(*v));
	if (compile(coll->options, v, err) != 0) {
		bson_free(v);
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
	validator_t *v = get_validator(coll, NULL);

	return v != NULL && v->level == LEVEL_CONSTRAINT;
}

/* errInfo: {failingDocumentId, details}. */
static bson_t *
build_errinfo(const validator_t *v, const bson_t *doc)
{
	bson_t *info = bson_new();
	bson_t details;
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, "_id"))
		bson_append_iter(info, "failingDocumentId", -1, &it);
	if (v->schema != NULL) {
		bson_append_document_begin(info, "details", -1, &details);
		schema_explain(v->schema, doc, &details);
		bson_append_document_end(info, &details);
	}
	return info;
}

static void
log_failure(storage_coll_t *coll, const bson_t *doc, const bson_t *info)
{
	bson_t attr = BSON_INITIALIZER;

	BSON_APPEND_UTF8(&attr, "namespace", coll->ns);
	BSON_APPEND_DOCUMENT(&attr, "document", doc);
	BSON_APPEND_DOCUMENT(&attr, "errInfo", info);
	tlog('W', "STORAGE", 20294, "Document would fail validation", &attr);
	bson_destroy(&attr);
}

int
validation_check_write(storage_coll_t *coll, const bson_t *new_doc, const bson_t *old_doc,
                       bool bypass, validation_result_t *result, terr_t *err)
{
	validator_t *v;
	bson_t *info;
	int rc;

	*result = VALIDATION_OK;
	if ((v = get_validator(coll, err)) == NULL)
		return -1;
	if (!v->has_validator || v->level == LEVEL_OFF)
		return 0;
	if (bypass && v->level != LEVEL_CONSTRAINT)
		return 0;
	rc = match_exec(v->match, new_doc, NULL, err);
	if (rc < 0)
		return -1;
	if (rc == 1)
		return 0;
	if (v->level == LEVEL_MODERATE && old_doc != NULL) {
		/* moderate: updates to documents that already fail are not checked */
		rc = match_exec(v->match, old_doc, NULL, err);
		if (rc < 0)
			return -1;
		if (rc == 0)
			return 0;
	}
	info = build_errinfo(v, new_doc);
	if (v->action == ACTION_WARN) {
		log_failure(coll, new_doc, info);
		bson_destroy(info);
		*result = VALIDATION_WARNED;
		return 0;
	}
	if (v->action == ACTION_ERROR_AND_LOG)
		log_failure(coll, new_doc, info);
	terr_set(err, TERR_DOCUMENT_VALIDATION_FAILURE, "Document failed validation");
	terr_set_info_steal(err, info);
	return -1;
}
