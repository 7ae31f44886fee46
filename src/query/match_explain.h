/*
 * match_explain.h -- why a document fails a collection validator: the
 * errInfo mongod attaches to error 121 DocumentValidationFailure, for any
 * validator expression (doc_validation_error.cpp's shapes).
 *
 *   {failingDocumentId: <_id>, details: {operatorName: "$and",
 *    clausesNotSatisfied: [{index: 1, details: {operatorName: "$lt",
 *    specifiedAs: {a: {$lt: 10}}, reason: "comparison failed",
 *    consideredValue: 11}}]}}
 *
 * Every query operator a validator may use reports its operatorName, its
 * specifiedAs (the predicate as written), a reason ("comparison failed",
 * "type did not match", "field was missing"...), and the values it looked
 * at (consideredValue / consideredValues, at most 10, then
 * consideredValuesTruncated); $and/$or/$nor list the clauses that decided,
 * by index; $not and $nor invert the reasons ("comparison succeeded");
 * $expr gives its expressionResult; a $jsonSchema is explained by schema/
 * (schema_explain, "schema matched" under negation).  A detailed error over
 * 12 MiB is built again without specifiedAs and considered values
 * (truncated: true), then replaced by {failingDocumentId, note: "detailed
 * error was too large"}; one nested deeper than 190 levels becomes {reason:
 * "generated error was too deeply nested", truncated: true}.
 *
 * This is the slow path: it runs only for a document that failed, and
 * allocates freely.  It does not decide levels or actions (commands/
 * validation.c) and does not evaluate anything for documents that pass.
 */
#ifndef TAMGA_QUERY_MATCH_EXPLAIN_H
#define TAMGA_QUERY_MATCH_EXPLAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "query/match.h"

/* mongod's knobs (kDefaultMaxDocValidationErrorSize and
 * internalQueryMaxDocValidationErrorConsideredValues); 0 = the default. */
typedef struct match_explain_opts {
	int32_t max_size;        /* bytes, default 12 MiB */
	int32_t max_considered;  /* values per leaf, default 10 */
} match_explain_opts_t;

#define MATCH_EXPLAIN_MAX_SIZE (12 * 1024 * 1024)
#define MATCH_EXPLAIN_MAX_CONSIDERED 10

/*
 * The errInfo for doc, which failed validator m (match_exec returned 0 or
 * -1; m was compiled from the collection's validator).  Returns a new
 * document the caller destroys: {failingDocumentId, [truncated,] details},
 * or one of mongod's fallbacks ({failingDocumentId, note, [details]} when
 * the error cannot be built or is too large).  opts may be NULL.  m and doc
 * are only read.
 */
bson_t *match_explain_errinfo(const match_t *m, const bson_t *doc,
                              const match_explain_opts_t *opts);

/* Only the `details` object (what the errInfo's details field would hold),
 * appended to `out` (an empty document being built); returns false when
 * doc in fact matches (out untouched) or when the detailed error is not
 * available (too large, internal error).  For tests and tools. */
bool match_explain_details(const match_t *m, const bson_t *doc, bson_t *out);

/* true when some $jsonSchema of the filter uses the encryption keywords
 * (encrypt, encryptMetadata): such a validator is refused at
 * validationLevel moderate and validationAction warn / errorAndLog. */
bool match_uses_encrypt(const match_t *m);

#endif
