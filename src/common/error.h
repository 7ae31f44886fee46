/*
 * error.h -- the one error type every layer returns through.
 *
 * Every fallible function returns int (0 = ok, non-zero = failed) and takes a
 * terr_t * as its last argument.  The code is MongoDB's numeric error code
 * (src/mongo/base/error_codes.yml), so the command layer only serialises it:
 * {ok: 0, errmsg, code, codeName[, errInfo]}.  The message is heap-allocated
 * and unbounded (MongoDB messages can carry whole documents); errInfo is an
 * optional BSON document owned by the error.
 *
 * This module does not log; it only carries.
 */
#ifndef TAMGA_COMMON_ERROR_H
#define TAMGA_COMMON_ERROR_H

#include <stdarg.h>
#include <stdbool.h>
#include <bson/bson.h>

/* MongoDB error codes used across layers.  Names follow error_codes.yml. */
enum {
	TERR_OK = 0,
	TERR_INTERNAL_ERROR = 1,
	TERR_BAD_VALUE = 2,
	TERR_NO_SUCH_KEY = 4,
	TERR_GRAPH_CONTAINS_CYCLE = 5,
	TERR_HOST_UNREACHABLE = 6,
	TERR_UNKNOWN_ERROR = 8,
	TERR_FAILED_TO_PARSE = 9,
	TERR_CANNOT_MUTATE_OBJECT = 10,
	TERR_USER_NOT_FOUND = 11,
	TERR_UNSUPPORTED_FORMAT = 12,
	TERR_UNAUTHORIZED = 13,
	TERR_TYPE_MISMATCH = 14,
	TERR_OVERFLOW = 15,
	TERR_INVALID_LENGTH = 16,
	TERR_PROTOCOL_ERROR = 17,
	TERR_AUTHENTICATION_FAILED = 18,
	TERR_ILLEGAL_OPERATION = 20,
	TERR_EMPTY_ARRAY_OPERATION = 21,
	TERR_INVALID_BSON = 22,
	TERR_LOCK_TIMEOUT = 24,
	TERR_NAMESPACE_NOT_FOUND = 26,
	TERR_INDEX_NOT_FOUND = 27,
	TERR_PATH_NOT_VIABLE = 28,
	TERR_NON_EXISTENT_PATH = 29,
	TERR_INVALID_PATH = 30,
	TERR_ROLE_NOT_FOUND = 31,
	TERR_CONFLICTING_UPDATE_OPERATORS = 40,
	TERR_CURSOR_NOT_FOUND = 43,
	TERR_NAMESPACE_EXISTS = 48,
	TERR_MAX_TIME_MS_EXPIRED = 50,
	TERR_DOLLAR_PREFIXED_FIELD_NAME = 52,
	TERR_INVALID_ID_FIELD = 53,
	TERR_NOT_SINGLE_VALUE_FIELD = 54,
	TERR_INVALID_DBREF = 55,
	TERR_EMPTY_FIELD_NAME = 56,
	TERR_DOTTED_FIELD_NAME = 57,
	TERR_COMMAND_NOT_FOUND = 59,
	TERR_IMMUTABLE_FIELD = 66,
	TERR_CANNOT_CREATE_INDEX = 67,
	TERR_INDEX_ALREADY_EXISTS = 68,
	TERR_INVALID_OPTIONS = 72,
	TERR_INVALID_NAMESPACE = 73,
	TERR_INDEX_OPTIONS_CONFLICT = 85,
	TERR_INDEX_KEY_SPECS_CONFLICT = 86,
	TERR_DB_PATH_IN_USE = 98,
	TERR_CANNOT_BACKFILL_ARRAY = 34,
	TERR_WRITE_CONFLICT = 112,
	TERR_CONFLICTING_OPERATION_IN_PROGRESS = 117,
	TERR_INCOMPLETE_TRANSACTION_HISTORY = 217,
	TERR_TRANSACTION_TOO_OLD = 225,
	TERR_SNAPSHOT_TOO_OLD = 239,
	TERR_NO_SUCH_TRANSACTION = 251,
	TERR_TRANSACTION_COMMITTED = 256,
	TERR_TOO_MANY_LOGICAL_SESSIONS = 261,
	TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION = 263,
	TERR_TRANSACTION_EXCEEDED_LIFETIME_LIMIT_SECONDS = 290,
	TERR_COMMAND_NOT_SUPPORTED = 115,
	TERR_DOCUMENT_VALIDATION_FAILURE = 121,
	TERR_TS_MIXED_SCHEMA = 408,   /* CannotInsertTimeseriesBucketsWithMixedSchema */
	TERR_VIEW_DEPTH_LIMIT_EXCEEDED = 165,
	TERR_COMMAND_NOT_SUPPORTED_ON_VIEW = 166,
	TERR_OPTION_NOT_SUPPORTED_ON_VIEW = 167,
	TERR_INVALID_PIPELINE_OPERATOR = 168,
	TERR_VIEW_PIPELINE_MAX_SIZE_EXCEEDED = 195,
	TERR_INVALID_VIEW_DEFINITION = 182,
	TERR_QUERY_FEATURE_NOT_ALLOWED = 224,
	TERR_MAX_SUB_PIPELINE_DEPTH_EXCEEDED = 232,
	TERR_NOT_IMPLEMENTED = 238,
	TERR_INDEX_BUILD_ABORTED = 276,
	TERR_QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED = 292,
	TERR_OBJECT_IS_BUSY = 314,
	TERR_DUPLICATE_KEY = 11000,
	TERR_INTERRUPTED = 11601,
	TERR_BSON_OBJECT_TOO_LARGE = 10334,
	/* replica set, concerns, cluster time (repl/replset.h, commands/cmd_repl.c) */
	TERR_ALREADY_INITIALIZED = 23,
	TERR_NODE_NOT_FOUND = 74,
	TERR_NO_REPLICATION_ENABLED = 76,
	TERR_UNKNOWN_REPL_WRITE_CONCERN = 79,
	TERR_INVALID_REPLICA_SET_CONFIG = 93,
	TERR_NOT_YET_INITIALIZED = 94,
	TERR_NOT_SECONDARY = 95,
	TERR_NOT_A_REPLICA_SET = 123,
	TERR_UNSATISFIABLE_WRITE_CONCERN = 100,
	TERR_CONFIGURATION_IN_PROGRESS = 109,
	TERR_NEW_REPLICA_SET_CONFIGURATION_INCOMPATIBLE = 103,
	TERR_NODE_NOT_ELECTABLE = 104,
	TERR_READ_CONCERN_MAJORITY_NOT_ENABLED = 148,
	TERR_TIME_PROOF_MISMATCH = 204,
	TERR_CANNOT_VERIFY_AND_SIGN_LOGICAL_TIME = 210,
	TERR_KEY_NOT_FOUND = 211,
	TERR_EXCEEDED_TIME_LIMIT = 262,
	TERR_NOT_WRITABLE_PRIMARY = 10107,
	TERR_NOT_PRIMARY_NO_SECONDARY_OK = 13435,
	TERR_NOT_PRIMARY_OR_SECONDARY = 13436,
};

typedef struct terr {
	int code;        /* MongoDB error code; 0 while no error is set */
	char *msg;       /* owned, NUL-terminated; NULL while no error is set */
	bson_t *info;    /* owned errInfo document or NULL */
	bson_t *extra;   /* owned extra reply fields (keyPattern, keyValue, ...) or NULL */
} terr_t;

#define TERR_INIT {0, NULL, NULL, NULL}

/* Set code and printf-style message; replaces any earlier error.  Returns -1
 * so callers can write `return terr_set(err, ...)`.  err may be NULL. */
int terr_set(terr_t *err, int code, const char *fmt, ...) BSON_GNUC_PRINTF(3, 4);
int terr_setv(terr_t *err, int code, const char *fmt, va_list ap);

/* Give the error an errInfo document; takes ownership of info. */
void terr_set_info_steal(terr_t *err, bson_t *info);
/* Extra top-level fields for the error reply (keyPattern/keyValue); steals. */
void terr_set_extra_steal(terr_t *err, bson_t *extra);

/* Prefix the current message: "<prefix> :: caused by :: <old message>". */
void terr_wrap(terr_t *err, const char *prefix);

/* Free what the error holds and reset it to no error. */
void terr_clear(terr_t *err);

/* Move src into dst (dst cleared first); src is left empty. */
void terr_move(terr_t *dst, terr_t *src);

bool terr_is_set(const terr_t *err);

/* MongoDB's codeName for a code ("BadValue", "DuplicateKey", ...);
 * "Location<code>" for codes without a name, as mongod prints them. The
 * returned string is static or written into buf (which must hold 32 bytes). */
const char *terr_code_name(int code, char buf[32]);

/* Return early / jump to cleanup, WiredTiger style. */
#define RET(x) do { int ret__ = (x); if (ret__ != 0) return ret__; } while (0)
#define ERR(x) do { if ((ret = (x)) != 0) goto err; } while (0)

#endif
