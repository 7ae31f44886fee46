/*
 * js.h -- server-side JavaScript: the C face of the one C++ file
 * (js_engine.cpp) that embeds SpiderMonkey, mongod's own engine family.
 *
 * What it is for: $where (query/), $function and $accumulator (expr/) and
 * mapReduce (commands/) run user JavaScript through this API and nothing
 * else.  The engine is kept per thread: the first call on a thread creates
 * that thread's JSContext (its own runtime and heap) and a global object;
 * later calls on the same thread reuse them; the thread's exit destroys
 * them.  Nothing here is shared between threads except a watchdog that
 * asks running contexts to look at their operation's deadline.
 *
 * Values are handles into a per-context stack of rooted values (js_ref_t,
 * as in Lua's C API): a push returns the new slot, js_pop_to() drops every
 * slot above a mark.  Handles are valid until popped; the GC sees every
 * slot.  The C side (js_bson.c, js_helpers.c) builds mongod's types from
 * these primitives; this file knows no BSON.
 *
 * Limits: every call into JavaScript (js_call, js_eval) is bounded by the
 * calling thread's operation (common/opctx.h): its maxTimeMS deadline
 * (50 MaxTimeMSExpired) and killOp (11601), checked by an interrupt
 * callback the watchdog triggers every few milliseconds, and by a heap
 * limit (js_set_heap_limit_mb; 139 JSInterpreterFailure "Out of memory").
 * The global has only the ECMAScript standard library plus what js_helpers.c
 * installs: no load, run, readFile, Mongo, or anything reaching files,
 * network or processes.
 *
 * Not here: the conversion of BSON (js_bson.c), mongod's helpers and type
 * classes (js_helpers.c, js_prelude.c), the scripting on/off switch
 * (js_enabled) is read by callers.
 */
#ifndef TAMGA_JS_JS_H
#define TAMGA_JS_JS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct js_ctx js_ctx_t;
typedef int js_ref_t;       /* a stack slot; -1 = none (the push failed) */

/* What a value is (js_type). */
typedef enum {
	JS_T_UNDEFINED = 0,
	JS_T_NULL,
	JS_T_BOOL,
	JS_T_INT32,
	JS_T_DOUBLE,
	JS_T_STRING,
	JS_T_ARRAY,
	JS_T_FUNCTION,
	JS_T_DATE,
	JS_T_REGEXP,
	JS_T_OBJECT,
	JS_T_BIGINT,
	JS_T_SYMBOL,
} js_type_t;

/* Prototypes the C side registers (js_proto_register) so that an object
 * made by a mongod type constructor can be recognised (js_proto_kind). */
enum {
	JS_K_NUMBER_LONG = 0,
	JS_K_NUMBER_INT,
	JS_K_NUMBER_DECIMAL,
	JS_K_OBJECT_ID,
	JS_K_TIMESTAMP,
	JS_K_BINDATA,
	JS_K_DBREF,
	JS_K_DBPOINTER,
	JS_K_MINKEY,
	JS_K_MAXKEY,
	JS_K_CODE,
	JS_K_MAX
};

/* ---- process-wide settings ---------------------------------------------- */

/* Scripting on (default) or off (--noscripting, security.javascriptEnabled:
 * false).  Callers check js_enabled() at parse time and answer mongod's
 * code for their feature; the engine itself does not refuse. */
void js_set_enabled(bool on);
bool js_enabled(void);

/* The heap limit of contexts created from now on, in MB (mongod's
 * jsHeapLimitMB; default 1100).  0 or values above 64 GB are clamped. */
void js_set_heap_limit_mb(uint32_t mb);
uint32_t js_heap_limit_mb(void);

/* ---- the thread's context ----------------------------------------------- */

/*
 * The calling thread's context, created on first use (engine start-up, a
 * global object, js_helpers.c's prelude).  Borrowed: valid until the thread
 * exits or js_thread_release().  Returns 0, or -1 with err set (139 when the
 * engine cannot start).  Count of creations: js_contexts_created().
 */
int js_ctx_get(js_ctx_t **out, terr_t *err);

/* Destroy the calling thread's context now (tests; threads that end do it
 * themselves).  Nothing when there is none. */
void js_thread_release(void);

/* How many contexts this process has created (tests prove reuse). */
uint64_t js_contexts_created(void);

/*
 * Start using the global object kept for key (a database and user, so
 * that one user's globals are never another's): when key differs from the
 * key of the current global, a fresh global replaces it (and
 * js_ctx_global_init runs on it).  Returns 0 or -1 with err.
 */
int js_ctx_use_global(js_ctx_t *ctx, const char *key, terr_t *err);

/* A number that changes whenever the context's global is replaced (caches
 * of compiled functions key on it). */
uint64_t js_global_generation(js_ctx_t *ctx);

/* Called on every new global (installed by js_helpers.c) before any user
 * code runs; returns 0 or -1 with err. */
typedef int (*js_global_init_fn)(js_ctx_t *ctx, terr_t *err);
void js_set_global_init(js_global_init_fn fn);

/* Called on the owning thread when a context is destroyed (thread exit or
 * js_thread_release), so C-side per-thread caches can be freed. */
void js_set_release_hook(void (*fn)(void));

/* ---- the value stack ----------------------------------------------------- */

int js_top(js_ctx_t *ctx);                 /* the mark for js_pop_to */
void js_pop_to(js_ctx_t *ctx, int mark);   /* drop every slot >= mark */
/* Copy a slot to the top (same value); -1 when the stack is full. */
js_ref_t js_dup(js_ctx_t *ctx, js_ref_t v);

js_ref_t js_push_undefined(js_ctx_t *ctx);
js_ref_t js_push_null(js_ctx_t *ctx);
js_ref_t js_push_bool(js_ctx_t *ctx, bool b);
js_ref_t js_push_int32(js_ctx_t *ctx, int32_t i);
js_ref_t js_push_double(js_ctx_t *ctx, double d);
/* UTF-8 (invalid sequences are read as Latin-1 bytes). */
js_ref_t js_push_string(js_ctx_t *ctx, const char *s, size_t len);
js_ref_t js_push_object(js_ctx_t *ctx);              /* {} */
js_ref_t js_push_array(js_ctx_t *ctx, uint32_t len); /* [] of len holes */
js_ref_t js_push_date(js_ctx_t *ctx, double ms);     /* new Date(ms) */
js_ref_t js_push_bigint(js_ctx_t *ctx, int64_t v);
/* An object whose prototype is the registered kind's (JS_K_*). */
js_ref_t js_push_kind_object(js_ctx_t *ctx, int kind);
js_ref_t js_push_global(js_ctx_t *ctx);
/* An array kept with the current global but unreachable from scripts (the
 * compiled-function cache of js_bson.c). */
js_ref_t js_push_cache(js_ctx_t *ctx);
/* The pending exception's value after a failed call (undefined if none). */

/* All push functions return -1 (err-free; the next call that takes an err
 * reports it) when the stack is full or the heap is exhausted. */

/* ---- objects -------------------------------------------------------------- */

/* obj[name] = v (an ordinary, enumerable data property).  0 or -1. */
int js_set(js_ctx_t *ctx, js_ref_t obj, const char *name, size_t len, js_ref_t v);
/* A non-enumerable, read-only own property (a type's internal value). */
int js_set_hidden(js_ctx_t *ctx, js_ref_t obj, const char *name, js_ref_t v);
int js_set_index(js_ctx_t *ctx, js_ref_t arr, uint32_t i, js_ref_t v);
/* obj[name] / arr[i] pushed (undefined when absent); -1 on failure
 * (getters may throw: the exception stays pending for the next call). */
js_ref_t js_get(js_ctx_t *ctx, js_ref_t obj, const char *name);
js_ref_t js_get_index(js_ctx_t *ctx, js_ref_t arr, uint32_t i);
/* arr.length (arrays) into *n; 0 or -1. */
int js_array_length(js_ctx_t *ctx, js_ref_t arr, uint32_t *n);
/* An array of obj's own enumerable string keys, in JavaScript's order. */
js_ref_t js_keys(js_ctx_t *ctx, js_ref_t obj);
/* True when obj has an own property name. */
bool js_has_own(js_ctx_t *ctx, js_ref_t obj, const char *name);

/* ---- reading values ------------------------------------------------------ */

js_type_t js_type(js_ctx_t *ctx, js_ref_t v);
bool js_truthy(js_ctx_t *ctx, js_ref_t v);           /* ToBoolean */
/* ToNumber (may run valueOf); 0 or -1 (exception pending). */
int js_to_number(js_ctx_t *ctx, js_ref_t v, double *out);
/* ToString as UTF-8 (may run toString); *out is malloc'd, NUL-terminated,
 * caller frees with free(); 0 or -1. */
int js_to_string(js_ctx_t *ctx, js_ref_t v, char **out, size_t *len);
/* A BigInt's value truncated to 64 bits; 0 or -1 when v is no BigInt. */
int js_bigint_value(js_ctx_t *ctx, js_ref_t v, int64_t *out);
/* The registered kind (JS_K_*) of v's prototype, or -1 (also for
 * non-objects). */
int js_proto_kind(js_ctx_t *ctx, js_ref_t v);
/* Register value v's (an object's) own "prototype" property as kind's
 * prototype.  0 or -1. */
int js_proto_register(js_ctx_t *ctx, int kind, js_ref_t ctor);

/* ---- running code -------------------------------------------------------- */

/* A native function's body.  args[0..argc-1] are slots; *ret may be set to
 * a slot (left -1: undefined).  Returns 0; -1 with err set throws a
 * JavaScript Error carrying err's message (catchable); JS_NATIVE_TERMINATE
 * with err set ends the whole script (uncatchable) and the running call
 * fails with err (how sleep() answers a passed deadline). */
#define JS_NATIVE_TERMINATE (-2)
typedef int (*js_native_fn)(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t this_v,
                            js_ref_t *ret, terr_t *err);
/* obj[name] = a native function (non-enumerable). 0 or -1. */
int js_define_native(js_ctx_t *ctx, js_ref_t obj, const char *name, js_native_fn fn,
                     unsigned nargs);

/*
 * Evaluate a script (filename for messages) in the current global; the
 * completion value is pushed.  On failure -1 and err: 139
 * JSInterpreterFailure "<Error>: <message> :\n<stack>" for an exception,
 * 139 "Out of memory" for the heap limit, 50/11601 from the operation.
 */
js_ref_t js_eval(js_ctx_t *ctx, const char *src, size_t len, const char *filename, terr_t *err);
/* fn(argv...) with this = this_v (-1: undefined); the result is pushed.
 * Errors as js_eval. */
js_ref_t js_call(js_ctx_t *ctx, js_ref_t fn, js_ref_t this_v, int argc, const js_ref_t *argv,
                 terr_t *err);

/* Release memory now (between commands when a thread's heap grew). */
void js_gc(js_ctx_t *ctx);

#ifdef __cplusplus
}
#endif

#endif
