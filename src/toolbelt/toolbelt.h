/*
 * toolbelt.h -- the schema toolbelt: MongoDB's own inspection tools
 * (validate, the database profiler, $queryStats) and Tamga's schema tools
 * on top of them (validation preview, validator inference, the
 * anti-pattern advisor).
 *
 * A layer of its own between commands/ (which parses the requests and calls
 * in here) and the layers below it (storage, query, schema).  Nothing here
 * writes to a collection it inspects: the profiler writes only
 * <db>.system.profile, the other tools only read.
 *
 * Files: tb_validate.c (validate), tb_profile.c (profile settings, entries,
 * system.profile, the "Slow query" log line), tb_qstats.c (query shapes and
 * the $queryStats store), tb_preview.c (tamgaValidationPreview),
 * tb_infer.c (tamgaInferSchema), tb_advise.c (tamgaSchemaAdvice).
 */
#ifndef TAMGA_TOOLBELT_TOOLBELT_H
#define TAMGA_TOOLBELT_TOOLBELT_H

#include <stdbool.h>
#include <stdint.h>
#include <bson/bson.h>

#include "common/error.h"
#include "storage/storage.h"

/* The number of elements of the array or document it is on. */
static inline int64_t
toolbelt_iter_count(const bson_iter_t *it)
{
	bson_iter_t c;
	int64_t n = 0;

	if (bson_iter_recurse(it, &c))
		while (bson_iter_next(&c))
			n++;
	return n;
}

/* ---- validate (tb_validate.c) ---------------------------------------------- */

typedef struct toolbelt_validate_opts {
	bool full;                 /* {full: true}: the same checks (no storage-level verify yet) */
	/* {metadata: true}: mongod's kMetadata mode, the catalog entry only (no
	 * record or index entry is read): the UUID, the validator and its
	 * level/action, each index spec through spec_check (an invalid one is
	 * a warning, in mongod's words).  The reply has no nInvalidDocuments,
	 * nNonCompliantDocuments or nrecords, and keysPerIndex counts 0 keys,
	 * as mongod's (its non-full index validation traverses none). */
	bool metadata;
	int (*spec_check)(const bson_t *spec, terr_t *err);   /* required with metadata */
} toolbelt_validate_opts_t;

/*
 * Check coll: every record's BSON, every record against the validator
 * (nNonCompliantDocuments), every index against the records (each missing
 * and extra entry), all in one snapshot of s (a read-only transaction
 * begun and rolled back here; s must have none open).  Appends mongod's
 * ValidateResults fields (valid, repaired, ns, uuid, warnings, errors,
 * extraIndexEntries, missingIndexEntries, nInvalidDocuments,
 * nNonCompliantDocuments, nrecords, corruptRecords, nIndexes, keysPerIndex,
 * indexDetails) to reply.  Returns 0, or -1 with err (50 / 11601 from the
 * interrupt check, storage errors).
 */
int toolbelt_validate(storage_t *st, storage_session_t *s, storage_coll_t *coll, const toolbelt_validate_opts_t *o,
                      bson_t *reply, terr_t *err);

/* ---- the profiler (tb_profile.c) -------------------------------------------- */

/* What the dispatcher knows of one finished command.  Everything borrowed. */
typedef struct toolbelt_op {
	const char *db;
	const char *ns;            /* "db.coll" or "db.$cmd"; "" unless the profiler wants the op */
	const char *name;          /* the command's name */
	const bson_t *cmd;         /* the command document */
	const bson_t *reply;       /* its reply so far (no ok yet), NULL on failure */
	bool batch_known;          /* reply is one first batch of batch_n documents and */
	int64_t batch_n, batch_cursor_id;   /* cursor batch_cursor_id (0: none): no walk */
	int code;                  /* 0, or the error code */
	const char *errmsg;        /* on failure */
	int64_t micros;            /* how long it ran */
	int64_t keys_examined, docs_examined;
	const char *plan_summary;  /* "" when none */
	const char *client;        /* "127.0.0.1:5555" or NULL */
	const char *app_name;      /* or NULL */
	const char *user;          /* "user@db" or NULL */
	const char *log_ctx;       /* "conn12" */
} toolbelt_op_t;

/* mongod's defaults: slowms 100, sampleRate 1.0, every database at level 0. */
#define TOOLBELT_SLOWMS_DEFAULT 100
/* The size mongod creates system.profile with (1 MB, capped). */
#define TOOLBELT_PROFILE_SIZE (1024 * 1024)

/*
 * The profile command.  level -1 (or anything outside 0..2) only reads;
 * slowms / sample_rate / filter are set when has_* (filter NULL with
 * has_filter: "unset").  Appends was, slowms, sampleRate, [filter], [note]
 * as mongod's ProfileCmdBase::run, and logs 48742 "Profiler settings
 * changed" when anything was asked to change.  Errors: 2 BadValue
 * "'sampleRate' must be between 0.0 and 1.0 inclusive", a filter that does
 * not compile (its own error).
 */
int toolbelt_profile_command(const char *db, int64_t level, bool has_slowms, int64_t slowms, bool has_rate,
                             double sample_rate, bool has_filter, const bson_t *filter, bson_t *reply,
                             terr_t *err);

/* True when op may need profiling or the slow query log: some database is
 * profiled, or micros reaches slowms.  Cheap (two atomic loads). */
bool toolbelt_profile_wanted(int64_t micros);
/* The next test, when wanted: db's level or filter may take a command of
 * micros (slow, level 2, or a filter to evaluate); a fast command on a
 * level-1 database is not.  One lookup under the settings' lock. */
bool toolbelt_profile_needed(const char *db, int64_t micros);

/*
 * After a command: the "Slow query" log line (I COMMAND 51803) when it ran
 * at least slowms (and the sample says so), and an entry in
 * <db>.system.profile (created capped, 1 MB, when missing) when the
 * database's level asks for it (1: slow ones, 2: all; a filter replaces
 * both tests).  Commands on system.profile itself are not profiled.
 * Errors are logged, never returned.
 */
void toolbelt_profile_op(storage_t *st, const toolbelt_op_t *op);

/* ---- $queryStats (tb_qstats.c) ---------------------------------------------- */

/*
 * internalQueryStatsCacheSize ("1%" of memory by default, or "<n>MB" /
 * "<n>KB" / "<n>GB" / "<n>%"): the store's memory bound, the least recently
 * seen entries evicted first.  set answers 2 BadValue for a size that does
 * not parse.  (internalQueryStatsRateLimit is the engine's parameter; it
 * comes in as toolbelt_qstats_wanted's limit.)
 */
int toolbelt_qstats_set_cache_size(const char *spec, terr_t *err);
const char *toolbelt_qstats_cache_size(void);

/* True when a query finishing now would be recorded under rate limit
 * `limit` (0: never, -1: always, n: the first n of each second). */
bool toolbelt_qstats_wanted(int64_t limit);

/*
 * Record one execution of a find / aggregate / distinct / count (op->cmd,
 * its reply for docsReturned, micros, the examined counts).  The shape is
 * mongod's query shape: literals replaced by "?<type>", {a: 1} as
 * {a: {$eq: "?number"}}.  client_md is the connection's hello metadata
 * (NULL: none).
 */
void toolbelt_qstats_record(const toolbelt_op_t *op, const bson_t *client_md);

/* A getMore of cursor_id (op: its outcome): when the cursor belongs to a
 * recorded query, its time, documents and examined counts are added to the
 * query's entry (totalExecMicros, docsReturned... sums; execCount stays),
 * and the cursor is forgotten once exhausted.  cursors_open: whether any
 * recorded query still has one (the dispatcher's cheap test). */
bool toolbelt_qstats_cursors_open(void);
void toolbelt_qstats_getmore(const toolbelt_op_t *op, int64_t cursor_id);

/*
 * The $queryStats stage's rows, appended to out (an array being built):
 * {key, keyHash, queryShapeHash, metrics, asOf} per shape.  hmac_key
 * (NULL: none) turns on transformIdentifiers: every field name, database
 * and collection name in key becomes the base64 HMAC-SHA-256 of itself.
 */
void toolbelt_qstats_rows(const uint8_t *hmac_key, size_t hmac_len, bson_t *out);

/* Shape and hashes of a find command: what the profiler shows as
 * queryShapeHash (64 hex) and planCacheShapeHash (8 hex).  out buffers
 * are 65 and 9 bytes; either may be NULL. */
void toolbelt_query_hashes(const char *db, const bson_t *cmd, char *shape_hash, char *plan_hash);

/* serverStatus.queryStats-like figures (entries, bytes, evictions). */
void toolbelt_qstats_status(bson_t *out);

/* ---- validation preview (tb_preview.c) --------------------------------------- */

typedef struct toolbelt_preview_opts {
	const bson_t *validator;   /* the candidate ({$jsonSchema: ...}); NULL: the collection's */
	int64_t max_ids;           /* offending _ids kept per rule (default 10) */
	int64_t limit;             /* documents this call scans; 0 = to the end */
	const bson_value_t *resume_after;   /* go on after the document with this _id (NULL: from the start) */
} toolbelt_preview_opts_t;

/*
 * One pass over coll in natural order, resumable after the document with
 * a given _id (the last one of the previous page), outside any transaction
 * and without the catalog lock: writers are never held.  Appends {ns, validator,
 * scanned, failed, passed, rules: [{rule, failed, examples: [{_id,
 * errInfo}]}], levels: {strict, moderate, constraint, off}, complete,
 * resumeAfter?}.  Errors: 9 / 2 for a validator that does not compile
 * ("Parsing of collection validator failed :: caused by :: ..."), 2 for a
 * collection without a validator when none is given, 2 for a resume _id
 * that is not in the collection (any more).
 */
int toolbelt_preview(storage_t *st, storage_session_t *s, storage_coll_t *coll, const toolbelt_preview_opts_t *o,
                     bson_t *reply, terr_t *err);

/* ---- inference (tb_infer.c) --------------------------------------------------- */

typedef struct toolbelt_infer_opts {
	int64_t sample;            /* documents to read; 0 = all */
	double required_threshold; /* a field is required when present in >= this share (1.0) */
	int64_t enum_max;          /* strings with at most this many distinct values become an enum (0: none) */
	bool ranges;               /* minimum/maximum, minLength/maxLength */
	double tighten;            /* > 0: leave out types seen in fewer than this share of a field's values */
	const char *discriminator; /* NULL: detect (schemaVersion, format, type, kind, _t) */
	bool no_discriminator;     /* never split by variant */
} toolbelt_infer_opts_t;

/*
 * Read coll (all, or the first `sample` documents in natural order) and
 * append {ns, sampled, validator: {$jsonSchema: ...}, fields: [{path,
 * count, probability, types: [{bsonType, count, probability}]}],
 * discriminator?, variants?} to reply: a validator ready for collMod.
 */
int toolbelt_infer(storage_session_t *s, storage_coll_t *coll, const toolbelt_infer_opts_t *o, bson_t *reply,
                   terr_t *err);

/* ---- the advisor (tb_advise.c) ------------------------------------------------- */

typedef struct toolbelt_advise_opts {
	int64_t array_max;         /* arrays longer than this are unbounded-array findings (200) */
	int64_t sample;            /* documents read per collection (0 = all) */
	int64_t collections_max;   /* more collections than this in a database: a finding (10000) */
} toolbelt_advise_opts_t;

/* Findings for every collection of db (coll NULL) or one collection:
 * appends {findings: [{type, ns, severity, evidence, pattern, fix, doc}],
 * checked: {...}}.  Reads the data, the catalog, index usage
 * (query/plan.h), the $queryStats store and system.profile. */
int toolbelt_advise(storage_t *st, storage_session_t *s, const char *db, const char *coll,
                    const toolbelt_advise_opts_t *o, bson_t *reply, terr_t *err);

#endif
