/*
 * schema_rules.h -- a validator's rules named by path, and the violation
 * counters every validated write feeds.
 *
 * A rule is one leaf of a validator, named by where it sits:
 * "properties.rating.maximum", "required", "properties.customer.required",
 * "items.bsonType", "$and.1.rating.$gte".  The same names come out of two
 * walks: over the validator document (every rule, for a report that lists
 * the ones nobody broke with 0) and over the errInfo.details mongod's
 * explanation builds for a failing document (query/match_explain.h): the
 * rules that document broke.  anyOf / oneOf / not / $or / $nor are one rule
 * each (what failed is the alternative as a whole), allOf, properties,
 * items and $and are entered.
 *
 * The counters (passed / failed / warned per collection, failed / warned
 * per rule) live for the process, keyed by the collection's UUID: collStats,
 * $collStats and serverStatus read them; commands/validation.c writes them.
 * Nothing here allocates on a passing write (one atomic add).
 *
 * Not here: compiling or evaluating validators (schema.h, query/), the
 * validation policy (commands/validation.c).
 */
#ifndef TAMGA_SCHEMA_SCHEMA_RULES_H
#define TAMGA_SCHEMA_SCHEMA_RULES_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

/* Called once per rule name: name is valid during the call only. */
typedef void (*schema_rule_fn)(void *ctx, const char *name);

/* Every rule of validator (a query document, usually {$jsonSchema: S}), in
 * document order.  Malformed parts are skipped (the validator compiled
 * before it got here). */
void schema_rules_list(const bson_t *validator, schema_rule_fn fn, void *ctx);

/* Every rule errInfo reports as broken: errinfo is the whole errInfo
 * ({failingDocumentId, details}) or its details document.  A name may come
 * more than once (two items breaking items.bsonType); the caller decides. */
void schema_rules_failed(const bson_t *errinfo, schema_rule_fn fn, void *ctx);

/* ---- violation counters ---------------------------------------------------- */

typedef struct schema_counters schema_counters_t;

/* The counters of collection uuid (created on first use, never freed; ns is
 * remembered as the latest name).  Thread-safe; the pointer is stable. */
schema_counters_t *schema_counters_get(const uint8_t uuid[16], const char *ns);
/* The counters of uuid or NULL when no write was ever validated there. */
schema_counters_t *schema_counters_find(const uint8_t uuid[16]);

/* A validated write: passed (one atomic add), or failed / warned with the
 * rules its errInfo names (each rule counted once per write). */
void schema_counters_passed(schema_counters_t *c);
void schema_counters_failed(schema_counters_t *c, const bson_t *errinfo, bool warned);

/* Append {passed, failed, warned, rules: {<name>: {failed, warned}}} as
 * the fields of out (a document being built); nothing counted yet gives
 * zeros and an empty rules document.  c may be NULL. */
void schema_counters_append(const schema_counters_t *c, bson_t *out);
/* Append {collections: {<ns>: {...}}, passed, failed, warned} over every
 * collection counted (serverStatus.validation) as the fields of out. */
void schema_counters_append_all(bson_t *out);

#endif
