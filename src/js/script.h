/*
 * script.h -- what the layers above call to run server-side JavaScript:
 * BSON <-> JavaScript values with mongod's types, compiled functions kept
 * per thread, and one-call invocation.
 *
 * Built on js.h (the SpiderMonkey wrapper).  Conversion follows mongod's
 * ValueReader/ValueWriter: BSON int32 and double become JavaScript numbers,
 * int64 a NumberLong, decimal128 a NumberDecimal, ObjectId / Timestamp /
 * BinData / DBPointer / MinKey / MaxKey / Code their mongod classes, dates
 * Date, regular expressions RegExp, documents beginning with $ref a DBRef.
 * Back: every JavaScript number is a double (NumberInt objects an int32),
 * functions become Code, and mongod's errors apply: 17279 for nesting
 * deeper than 150 (a cycle), 16985 for a NUL in a property name, 16662 for a
 * value BSON cannot hold.
 *
 * Callers check js_enabled() first and answer their feature's code (6108304
 * for $where, 31264 for $function, $accumulator and mapReduce).
 */
#ifndef TAMGA_JS_SCRIPT_H
#define TAMGA_JS_SCRIPT_H

#include <bson/bson.h>

#include "js/js.h"

/* mongod's limit on nesting when writing JavaScript objects as BSON. */
#define JS_MAX_WRITE_DEPTH 150

/* The scope the calling thread's next scripts run in: the command's
 * database and user (the commands dispatcher sets it for each command), so
 * one user's globals are never seen by another's scripts.  Copied. */
void js_thread_set_scope(const char *db, const char *user);
/* The same for a connection: the scope of database `db` (copied, up to 255
 * bytes) and connection `conn_id`, the key "<db>\1<conn_id>"; formatted
 * only when a script asks for it (no formatting on commands without one). */
void js_thread_set_scope_conn(const char *db, int64_t conn_id);

/*
 * The calling thread's context, on the global kept for scope_key (NULL:
 * the thread's scope from js_thread_set_scope) (the
 * database and user: "db\0user" flattened by the caller; NULL = "").
 * Borrowed, as js_ctx_get.  Returns 0 or -1 with err.
 */
int js_scope_enter(const char *scope_key, js_ctx_t **out, terr_t *err);

/*
 * system.js, mongod's stored functions: $where and mapReduce see the
 * functions (and values) saved in <db>.system.js as globals; $function and
 * $accumulator do not (ExpressionContext::getJsExecWithScope loads stored
 * procedures only for $where and MapReduce).  The commands layer installs,
 * for each command it runs on a thread, a loader that hands each document of
 * the command's <db>.system.js to `each` (NULL: none; js/ sits below
 * storage/ and cannot read it itself).
 */
typedef int (*js_stored_each_fn)(void *each_arg, const bson_t *doc, terr_t *err);
typedef int (*js_stored_loader_fn)(void *loader_arg, js_stored_each_fn each, void *each_arg, terr_t *err);
void js_thread_set_stored_loader(js_stored_loader_fn fn, void *loader_arg);

/*
 * js_scope_enter(NULL, ...) for a script that sees system.js (stored: $where,
 * mapReduce) or not ($function, $accumulator).  With stored, system.js is
 * read once per operation and its entries set on a global kept for that
 * content (mongod's Scope::loadStored: 10209 for an _id that is not a
 * string, 10210 for a missing value, 4546000 for a CodeWScope value; Code
 * becomes a function, other values are set as they are).  One operation
 * asking for both kinds answers 4649200 "A single operation cannot use both
 * JavaScript aggregation expressions and $where.", as mongod.
 */
int js_scope_enter_for(bool stored, js_ctx_t **out, terr_t *err);

/* A BSON value / document as a JavaScript value, pushed.  -1 with err
 * (139 "Out of memory" when the heap limit is reached). */
js_ref_t js_push_bson_value(js_ctx_t *ctx, const bson_value_t *v, terr_t *err);
js_ref_t js_push_bson_doc(js_ctx_t *ctx, const bson_t *doc, terr_t *err);
/* A BSON array's elements as a JavaScript array. */
js_ref_t js_push_bson_array(js_ctx_t *ctx, const bson_t *arr, terr_t *err);

/* Append value v as field key of out (mongod's ValueWriter).  0 or -1 with
 * err. */
int js_append_bson(js_ctx_t *ctx, bson_t *out, const char *key, size_t keylen, js_ref_t v,
                   terr_t *err);
/* Object v's enumerable properties as the fields of out (initialised by
 * the caller).  A non-object fails with 139.  0 or -1. */
int js_object_to_bson(js_ctx_t *ctx, js_ref_t v, bson_t *out, terr_t *err);

/*
 * The function a source string denotes, compiled once per thread and
 * global and cached: "function (a) {...}" is that function; anything else
 * is made a function as mongod does ("this.a > 1" returns the value of its
 * last expression statement; statements with their own `return` run as a
 * body).  Pushed; -1 with err (139 with the SyntaxError's message).
 */
js_ref_t js_function_get(js_ctx_t *ctx, const char *src, size_t len, terr_t *err);

/*
 * Call fn with this = this_doc (NULL: undefined) and the elements of args
 * (a BSON array, NULL = none) as arguments; the result is written as field
 * "r" of *result (initialised here, caller destroys it, also on error), so
 * a missing/undefined result is {r: undefined}.  Returns 0 or -1 with err.
 */
int js_invoke(js_ctx_t *ctx, js_ref_t fn, const bson_t *this_doc, const bson_t *args,
              bson_t *result, terr_t *err);

/* mapReduce's emit(key, value): while a sink is set on the calling thread,
 * each emit call hands fn a document {k: key, v: value} (borrowed for the
 * call); a non-zero return throws in the script.  Without a sink, emit
 * throws "emit is only available in mapReduce's map function".  NULL
 * removes the sink. */
typedef int (*js_emit_fn)(void *arg, const bson_t *kv, terr_t *err);
void js_set_emit_sink(js_emit_fn fn, void *arg);

/* js_invoke with `this` already a JavaScript value (a slot; -1:
 * undefined): $where converts its document once for both `this` and
 * `obj`. */
int js_invoke_this(js_ctx_t *ctx, js_ref_t fn, js_ref_t self, const bson_t *args, bson_t *result,
                   terr_t *err);

/* Install mongod's helpers on a fresh global (js_set_global_init's hook;
 * js_helpers.c).  Exposed for tests. */
int js_helpers_install(js_ctx_t *ctx, terr_t *err);

#endif
