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

#include "bson/collation.h"
#include "commands/commands_private.h"

/* The collection a write goes to; created (with no options) when missing.
 * Returns a reference to release.  The _in form names the database (the
 * client bulkWrite writes to any database from admin).  A view there: 166
 * CommandNotSupportedOnView. */
int write_get_or_create_coll(cmd_t *c, const char *name, storage_coll_t **out, terr_t *err);
/* The same when create is true; otherwise *out is NULL when missing (an
 * update without upsert, a delete: nothing to do) but a view is still 166. */
int write_get_coll_in(cmd_t *c, const char *db, const char *name, bool create, storage_coll_t **out,
                      terr_t *err);
int write_get_or_create_coll_in(cmd_t *c, const char *db, const char *name, storage_coll_t **out,
                                terr_t *err);

/* mongod's refusal of writes to a capped collection inside a
 * multi-document transaction (its checkIfTransactionOnCappedColl and the
 * delete path's check): returns 0 when c is not in a transaction or coll is
 * NULL or not capped; else -1 with 263 OperationNotSupportedInTransaction
 * "Collection '<ns>' is a capped collection. Writes in transactions are not
 * allowed on capped collections." (insert, update, findAndModify), or, when
 * is_delete, 20 IllegalOperation "Cannot remove from a capped collection in
 * a multi-document transaction: <ns>". */
int write_capped_txn_check(cmd_t *c, const storage_coll_t *coll, bool is_delete, terr_t *err);

/* Copy doc into out (initialised by the caller) with _id as its first field,
 * generating an ObjectId when absent, and checking the rules of a stored
 * document: _id not an array/regex/undefined (53 InvalidIdField), nesting
 * depth, 16 MiB (10334). */
int write_prepare_doc(const bson_t *doc, bson_t *out, terr_t *err);
/* The same, without the copy when doc is already in stored form (_id first
 * and valid): out then becomes a read-only view of doc's bytes, valid while
 * doc is (no appending to it).  The caller destroys out either way.  What
 * insert uses: most documents come with their _id first, or without one. */
int write_prepare_doc_view(const bson_t *doc, bson_t *out, terr_t *err);

/* Check the same rules for a document produced by an update/replacement
 * (its _id is already first when it came from a stored document). */
int write_check_stored_doc(const bson_t *doc, terr_t *err);

/* writeConcern: {j: true} or {w: "majority"|n, j} -> sync the journal on commit. */
bool write_concern_sync(cmd_t *c);

/* ordered (default true), bypassDocumentValidation (default false). */
int write_common_flags(cmd_t *c, bool *ordered, bool *bypass, terr_t *err);

/* The arguments every batch write command (insert, update, delete) starts
 * with: the collection name, no unknown fields (known as for
 * cmd_check_fields), the required statement array `field` (40414 "BSON field
 * '<cmd>.<field>' is missing but a required field"; *stmts is a view into
 * the command), ordered/bypassDocumentValidation, the 1..100000 batch rule
 * (*nops), and whether the write concern asks for a journal sync. */
typedef struct write_batch {
	const char *coll;
	bson_t stmts;
	int nops;
	bool ordered, bypass, sync;
} write_batch_t;
int write_batch_args(cmd_t *c, const char *const *known, const char *field, write_batch_t *w,
                     terr_t *err);

/* True for mongod's Interruption codes (50 MaxTimeMSExpired, 11601
 * Interrupted, 11600 InterruptedAtShutdown, 11602, 279 ClientDisconnect,
 * 46841 ClientMarkedKilled): those fail the whole write command instead of
 * becoming a writeErrors entry, as mongod's handleError rethrows them. */
bool write_error_is_interruption(const terr_t *err);

/* Append {index, code, <extra fields>, errmsg} (and errInfo where err has it)
 * to the writeErrors array being built, at position pos. */
void write_error_append(bson_t *write_errors, int pos, int index, const terr_t *err);

/* mongod's WRITE D3 20886 "Caught Assertion in finishCurOp" for a write
 * that failed: op is its logical op ("insert", "update", "remove"), err the
 * error as Status::toString prints it ("DuplicateKey{ keyPattern: ... }:
 * E11000 ...").  Written only at WRITE verbosity 3; err is borrowed. */
void write_log_assertion(const char *op, const terr_t *err);

/* The generic batch-size rule: 1..100000 operations (16 InvalidLength
 * "Write batch sizes must be between 1 and 100000. Got N operations."). */
int write_check_batch_size(int n, terr_t *err);

/* ---- one statement of each kind (insert, delete: cmd_crud.c; update:
 * cmd_update.c), shared by insert/delete/update and the client bulkWrite ---- */

/* Prepare doc (write_prepare_doc), validate it against coll's validator
 * (bypass as bypassDocumentValidation) and insert it in its own transaction
 * (write conflicts retried; sync: wait for the journal).  Returns 0, or -1
 * with err set (the statement's write error). */
int write_insert_one(cmd_t *c, storage_session_t *s, storage_coll_t *coll, const bson_t *doc,
                     bool bypass, bool sync, terr_t *err);

/* Delete the documents of coll matching q (one when just_one), in one
 * transaction.  let: the command's let variables (may be NULL).  coll NULL
 * (no such collection) deletes nothing once q compiles.  *n: how many were
 * deleted.  collation: the statement's (cmd_collation; NULL = simple).
 * Returns 0, or -1 with err set (q's compile error or the write's). */
int write_delete_run(cmd_t *c, storage_session_t *s, storage_coll_t *coll, const bson_t *q,
                     const bson_t *let, const coll_t *collation, bool just_one, bool sync,
                     int64_t *n, terr_t *err);

/* What one update statement did; write_update_result_clear frees upserted_id. */
typedef struct write_update_result {
	int64_t n, modified;
	bool upserted;
	bson_value_t upserted_id;
} write_update_result_t;
void write_update_result_clear(write_update_result_t *r);

/*
 * Run one update statement in the update command's shape ({q, u, c, multi,
 * upsert, arrayFilters, hint, collation, sort}) on db.name.  *coll is the
 * collection reference the caller keeps between statements (NULL until the
 * collection exists; set, and created when missing, by an upsert); the
 * caller releases it.  let: the command's let (may be NULL); now_ms: $$NOW.
 * Returns 0 with *res filled, or -1 with err set: the statement's write
 * error, or, with *cmd_error true, an error of the whole command (mongod's
 * "Cannot specify sort with multi=true").
 */
int write_update_run(cmd_t *c, storage_session_t *s, const char *db, const char *name,
                     storage_coll_t **coll, const bson_t *stmt, const bson_t *let, bool bypass,
                     bool sync, int64_t now_ms, write_update_result_t *res, bool *cmd_error,
                     terr_t *err);

/* The command's `let` (absent: *found false), each variable evaluated once
 * to a constant (expr_let_eval) into out, which the caller initialised
 * (BSON_INITIALIZER) and destroys.  Errors: the type check of cmd_get_doc,
 * variable names, the expressions' own. */
int cmd_get_let(cmd_t *c, bson_t *out, bool *found, terr_t *err);

/* Per-statement options the reads check too (cmd_crud.c), holder being
 * the document carrying the field.
 * cmd_collation: the collation the statement runs with: its `collation`
 * field (parsed by coll_parse, mongod's codes), else coll's default (coll
 * may be NULL: simple).  The result is interned (never freed).
 * cmd_collation_type_check: only the type check a command's parser makes
 * (14 "BSON field '<cmd>.collation' is the wrong type ..."), for statements
 * whose content errors are write errors.
 * cmd_check_hint: a hint naming no index of coll -> 2 BadValue (mongod's
 * planner message). */
int cmd_collation(cmd_t *c, const bson_t *holder, const storage_coll_t *coll, const coll_t **out,
                  terr_t *err);
int cmd_collation_type_check(cmd_t *c, const bson_t *holder, terr_t *err);
int cmd_check_hint(cmd_t *c, const bson_t *holder, storage_coll_t *coll, terr_t *err);

#endif
