/*
 * validation.h -- a collection's validation policy: the validator (a query
 * expression, usually {$jsonSchema: ...}), validationLevel (off, moderate,
 * strict, constraint) and validationAction (error, warn, errorAndLog), applied
 * to every document a write is about to store.
 *
 * The compiled validator is cached on the collection descriptor
 * (storage_coll_cache_set), so a schema is compiled once per catalog version,
 * not per document.
 */
#ifndef TAMGA_COMMANDS_VALIDATION_H
#define TAMGA_COMMANDS_VALIDATION_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

/* Check the validation fields of a create/collMod options document:
 * validator must be an object that compiles as a validator (no $where,
 * $text, $near...), validationLevel and validationAction must be known
 * values, 'warn' is refused at 'constraint', and a $jsonSchema using
 * encrypt/encryptMetadata is refused (224) at level moderate or with action
 * warn/errorAndLog.  Errors with mongod's codes and messages: creating
 * names the command in them ('create.validationLevel' or
 * 'collMod.validationLevel'); for collMod (creating false) a validator that
 * does not parse is reported as "Parsing of collection validator failed ::
 * caused by :: <why>", as mongod's collMod does. */
int validation_check_options(const bson_t *options, bool creating, terr_t *err);

/* mongod's CollectionImpl::_checkValidatorCanBeUsed, for create and
 * collMod when options carry a non-empty validator: refused with 72
 * InvalidOptions on system collections ("Document validators not allowed on
 * system collection <ns> with UUID <uuid>") and in the admin, local and
 * config databases except config.settings ("Document validators are not
 * allowed on collection <ns> with UUID <uuid> in the <db> internal
 * database").  uuid is the collection's, or NULL before it exists (a fresh
 * random one is then named, as mongod names the one it was creating).
 * Returns 0 or -1 with err set. */
int validation_check_namespace(const char *db, const char *coll, const uint8_t *uuid,
                               const bson_t *options, terr_t *err);

/* What a write does with a document that fails. */
typedef enum {
	VALIDATION_OK = 0,      /* passes, or validation does not apply */
	VALIDATION_WARNED,      /* fails, action warn: logged, write proceeds */
} validation_result_t;

/*
 * Check new_doc (about to be stored in coll).  old_doc is the stored version
 * for updates/replacements (NULL for inserts): at level moderate an update of
 * a document that already failed is not checked.  bypass is the command's
 * bypassDocumentValidation (the caller has checked the privilege).
 * Returns 0 (with *result) or -1 with err set:
 *  - 121 DocumentValidationFailure "Document failed validation" with errInfo
 *    {failingDocumentId, details} (query/match_explain.h) for action error
 *    and errorAndLog; errorAndLog also logs W STORAGE 7488700 "Document
 *    failed validation" {namespace, document, errInfo};
 *  - action warn: returns 0 with *result VALIDATION_WARNED after logging
 *    W STORAGE 20294 "Document would fail validation" {namespace, document,
 *    errInfo} (readable through getLog);
 *  - 2 BadValue when bypass is set on a collection with a validator at level
 *    constraint ("bypassDocumentValidation is not permitted with
 *    'constraint' validationLevel") or while prepareConstraintValidationLevel
 *    is set, as mongod refuses it per document.
 *  - 408 CannotInsertTimeseriesBucketsWithMixedSchema for a bucket (coll a
 *    time-series collection: a raw write) mixing types at a path
 *    (ts_bucket_mixed_schema) unless the collection allows it (TS_OPT_MIXED).
 * A validator whose evaluation fails ($expr errors) counts as failing; a
 * validator with $expr sees $$NOW as the time of the write.
 */
int validation_check_write(storage_coll_t *coll, const bson_t *new_doc, const bson_t *old_doc,
                           bool bypass, validation_result_t *result, terr_t *err);

/*
 * storage's second check (storage_set_write_check) for a write whose
 * collection options changed after it was validated: at level 'constraint'
 * the document is validated again with the current options (as
 * validation_check_write without bypass, which 'constraint' refuses
 * anyway); at other levels the write keeps its first answer, ordered before
 * the change.  Installed by the engine.
 */
int validation_recheck(storage_coll_t *current, const bson_t *new_doc, const bson_t *old_doc, terr_t *err);

/* The collection's level is 'constraint' (bypassDocumentValidation refused). */
bool validation_is_constraint(storage_coll_t *coll);

#endif
