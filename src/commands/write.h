/*
 * write.h -- what every write command shares: finding or implicitly creating
 * the target collection, preparing a document for storage (_id first,
 * ObjectId generated, _id type rules, size and depth limits), write concern,
 * and mongod's writeErrors entries.
 */
#ifndef TAMGA_COMMANDS_WRITE_H
#define TAMGA_COMMANDS_WRITE_H

#include <stdbool.h>
#include <bson/bson.h>

#include "commands/commands_private.h"

/* The collection a write goes to; created (with no options) when missing.
 * Returns a reference to release. */
int write_get_or_create_coll(cmd_t *c, const char *name, storage_coll_t **out, terr_t *err);

/* Copy doc into out (initialised by the caller) with _id as its first field,
 * generating an ObjectId when absent, and checking the rules of a stored
 * document: _id not an array/regex/undefined (53 InvalidIdField), nesting
 * depth, 16 MiB (10334). */
int write_prepare_doc(const bson_t *doc, bson_t *out, terr_t *err);

/* Check the same rules for a document produced by an update/replacement
 * (its _id is already first when it came from a stored document). */
int write_check_stored_doc(const bson_t *doc, terr_t *err);

/* writeConcern: {j: true} or {w: "majority"|n, j} -> sync the journal on commit. */
bool write_concern_sync(const cmd_t *c);

/* ordered (default true), bypassDocumentValidation (default false). */
int write_common_flags(cmd_t *c, bool *ordered, bool *bypass, terr_t *err);

/* Append {index, code, <extra fields>, errmsg} (and errInfo where err has it)
 * to the writeErrors array being built, at position pos. */
void write_error_append(bson_t *write_errors, int pos, int index, const terr_t *err);

/* The generic batch-size rule: 1..100000 operations (16 InvalidLength
 * "Write batch sizes must be between 1 and 100000. Got N operations."). */
int write_check_batch_size(int n, terr_t *err);

#endif
