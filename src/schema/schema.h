/*
 * schema.h -- MongoDB's $jsonSchema: compile a schema once, then validate
 * documents against it and explain failures the way mongod does.
 *
 * A schema is JSON Schema draft 4 with MongoDB's changes: `bsonType` added,
 * `type: "integer"`, `$ref`, `definitions`, `format`, `default`, `id` and the
 * other unsupported draft-4 keywords rejected, encryption keywords rejected
 * where mongod refuses them (see SCHEMA_DENY_ENCRYPT).  Keywords only constrain values of the type
 * they talk about (minimum ignores strings, properties ignores arrays...), and
 * the top level of the schema applies to the whole document.
 *
 * This module does not decide validation levels or actions, does not build
 * the outer errInfo ({failingDocumentId, details}) and does not parse query
 * validators ({rating: {$gte: 1}}): those live in commands/ and query/.
 */
#ifndef TAMGA_SCHEMA_SCHEMA_H
#define TAMGA_SCHEMA_SCHEMA_H

#include <stdbool.h>
#include <bson/bson.h>
#include "common/error.h"

typedef struct schema schema_t;

/* Compile json_schema (the value of a $jsonSchema operator, a document) into
 * *out.  On success returns 0 and the caller owns *out (schema_free).  On a
 * malformed schema returns -1, sets err with mongod's code and message, word
 * for word -- e.g. 9 FailedToParse "Unknown $jsonSchema keyword: foo" or
 * "$jsonSchema keyword '$ref' is not currently supported", 14 TypeMismatch
 * "$jsonSchema keyword 'minimum' must be a number", 2 BadValue "Unknown type
 * name alias: x", 51091 "Regular expression is invalid: ..." -- and leaves
 * *out NULL.  Subschemas nested more than 100 deep fail with 2 BadValue.
 * json_schema is only read; the compiled schema does not borrow from it. */
int schema_compile(const bson_t *json_schema, schema_t **out, terr_t *err);

/* Flags for schema_compile_flags. */
enum {
	/* Refuse the encryption keywords (encrypt, encryptMetadata) with 224
	 * QueryFeatureNotAllowed "Encryption-related validator keywords are
	 * not allowed in this context".  mongod accepts them in queries and in
	 * validators at validationLevel strict with validationAction error;
	 * a validator at moderate or with warn/errorAndLog compiles with this
	 * flag. */
	SCHEMA_DENY_ENCRYPT = 1u << 0,
};

/* schema_compile with flags (schema_compile passes 0). */
int schema_compile_flags(const bson_t *json_schema, unsigned flags, schema_t **out,
			 terr_t *err);

/* true when the schema uses encrypt/encryptMetadata anywhere (collMod of
 * validationAction to warn/errorAndLog or validationLevel to moderate must
 * then be refused with 224 QueryFeatureNotAllowed). */
bool schema_uses_encrypt(const schema_t *s);

/* Free a compiled schema; NULL is allowed. */
void schema_free(schema_t *s);

/* true when doc satisfies the schema.  Does not allocate when the document
 * passes, except: the first regex match on a thread allocates that thread's
 * PCRE2 match data (freed when the thread exits), and uniqueItems on an array
 * longer than 64 items uses a temporary heap set.  Thread-safe: a compiled
 * schema is read-only and may be shared between threads. */
bool schema_matches(const schema_t *s, const bson_t *doc);

/* schema_matches on the document at data (len bytes, length prefix
 * included; borrowed): what a scan that holds raw records calls, without
 * wrapping them in a bson_t first.  A buffer whose framing is not a
 * document's (length prefix, final NUL) fails; nothing is read past len. */
bool schema_matches_data(const schema_t *s, const uint8_t *data, uint32_t len);

/* Same answer as schema_matches.  When doc fails (returns false) appends to
 * details, which must be an empty document being built by the caller, the
 * fields of mongod's explanation, in mongod's order:
 *   operatorName: "$jsonSchema", title?, description?, schemaRulesNotSatisfied: [...]
 * or, for a schema whose top-level type excludes "object",
 *   operatorName: "$jsonSchema", specifiedAs: {$jsonSchema: S}, reason: ...
 * The caller wraps details into {failingDocumentId, details}.  On success
 * details is left untouched.  Slow path: allocates freely. */
bool schema_explain(const schema_t *s, const bson_t *doc, bson_t *details);

/* Flags for schema_explain_flags. */
enum {
	/* mongod's second try when the detailed error is too large: leave out
	 * specifiedAs and the considered values of leaf keywords (the caller
	 * then adds truncated: true next to details). */
	SCHEMA_EXPLAIN_TRUNCATE = 1u << 0,
};

/* schema_explain with flags (schema_explain passes 0). */
bool schema_explain_flags(const schema_t *s, const bson_t *doc, unsigned flags,
			  bson_t *details);

/* For a $jsonSchema nested in a larger validator ({$and: [{$jsonSchema: S},
 * ...]}): when doc fails, appends to parent, under key, the same object
 * schema_explain builds.  Returns the same as schema_matches (on true,
 * parent is untouched). */
bool schema_explain_append(const schema_t *s, const bson_t *doc,
			   bson_t *parent, const char *key);

/* For a $jsonSchema under a negation ($nor / $not) in a validator, when doc
 * MATCHES the schema (so the validator fails): appends under key in parent
 * mongod's inverted explanation {operatorName: "$jsonSchema", reason:
 * "schema matched"}.  Returns schema_matches(s, doc) (on false, parent is
 * untouched). */
bool schema_explain_inverted_append(const schema_t *s, const bson_t *doc,
				    bson_t *parent, const char *key);

/* The title of the top-level schema, or NULL; borrowed, lives as long as s. */
const char *schema_title(const schema_t *s);

#endif
