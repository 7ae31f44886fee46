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
 * values.  Errors with mongod's codes and messages. */
int validation_check_options(const bson_t *options, bool creating, terr_t *err);

/* What a write does with a document that fails. */
typedef enum {
	VALIDATION_OK = 0,      /* passes, or validation does not apply */
	VALIDATION_WARNED,      /* fails, action warn: logged, write proceeds */
} validation_result_t;

/*
 * Check new_doc (about to be stored in coll).  old_doc is the stored version
 * for updates/replacements (NULL for inserts): at level moderate an update of
 * a document that already failed is not checked.  bypass is the command's
 * bypassDocumentValidation (the caller has checked the privilege); at level
 * constraint bypass is refused by the caller before any write.
 * Returns 0 (with *result) or -1 with err = 121 DocumentValidationFailure
 * "Document failed validation" and errInfo {failingDocumentId, details}.
 */
int validation_check_write(storage_coll_t *coll, const bson_t *new_doc, const bson_t *old_doc,
                           bool bypass, validation_result_t *result, terr_t *err);

/* The collection's level is 'constraint' (bypassDocumentValidation refused). */
bool validation_is_constraint(storage_coll_t *coll);

#endif
