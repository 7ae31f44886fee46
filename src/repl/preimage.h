/*
 * preimage.h -- change streams' pre-images: config.system.preimages.
 *
 * A collection created or modified with changeStreamPreAndPostImages:
 * {enabled: true} keeps, for each update, replace and delete, the document
 * as it was before, in config.system.preimages as mongod's
 * ChangeStreamPreImage:
 *   {_id: {nsUUID, ts, applyOpsIndex: NumberLong}, operationTime: Date,
 *    preImage: <document>}
 * written by the oplog's observer in the write's own transaction, not logged
 * itself: ts is the write's entry and applyOpsIndex 0, or, for a write in a
 * multi-document transaction, the applyOps entry holding it and its index
 * in that entry's applyOps (written at the commit).  Change streams read them for
 * fullDocumentBeforeChange and compute post-images (fullDocument
 * whenAvailable / required) by applying the entry's $v: 2 diff to them.
 * Pre-images older than the oldest oplog entry are removed by
 * repl_preimage_expire (the oplog's truncation pass calls it), so they live
 * as long as the oplog holds their entry; with the cluster parameter
 * changeStreamOptions.preAndPostImages.expireAfterSeconds set
 * (repl/cluster_params.h) the oplog thread also removes those older than
 * that, in bounded batches.
 */
#ifndef TAMGA_REPL_PREIMAGE_H
#define TAMGA_REPL_PREIMAGE_H

#include <stdbool.h>
#include <bson/bson.h>

#include "common/error.h"
#include "repl/clock.h"
#include "storage/storage.h"

#define REPL_PREIMAGES_DB "config"
#define REPL_PREIMAGES_COLL "system.preimages"

/* c's options hold changeStreamPreAndPostImages: {enabled: true}. */
bool repl_preimage_enabled(const storage_coll_t *c);

/* Create config.system.preimages when missing (0, or -1 with err). */
int repl_preimage_ensure(storage_t *st, storage_session_t *s, terr_t *err);

/* Record pre (the document before a write to c logged at ts) in s's open
 * transaction, unobserved.  Nothing when the collection is missing. */
int repl_preimage_write(storage_t *st, storage_session_t *s, const storage_coll_t *c, repl_ts_t ts,
                        const bson_t *pre, terr_t *err);

/* The same for the write at index of the applyOps entry at ts. */
int repl_preimage_write_at(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, int64_t index,
                           const bson_t *pre, terr_t *err);

/* The pre-image of the write to the collection uuid at ts: 0 with out
 * initialised to a copy (the caller destroys it), 1 when there is none,
 * -1 with err. */
int repl_preimage_find(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, bson_t *out,
                       terr_t *err);
/* The same for the write at index of the applyOps entry at ts. */
int repl_preimage_find_at(storage_t *st, storage_session_t *s, const uint8_t uuid[16], repl_ts_t ts, int64_t index,
                          bson_t *out, terr_t *err);

/* Remove, in one transaction, the pre-images older than oldest (the
 * oldest oplog entry's ts; 0: none by it) or, when before_ms > 0, whose
 * operationTime is at or before before_ms (wall-clock ms: now less
 * changeStreamOptions.preAndPostImages.expireAfterSeconds, as mongod's
 * expiry); at most limit of them (<= 0: no bound).  *removed (may be
 * NULL) gets the count: limit means there may be more. */
int repl_preimage_expire(storage_t *st, storage_session_t *s, repl_ts_t oldest, int64_t before_ms, int64_t limit,
                         int64_t *removed, terr_t *err);

/* Apply a $v: 2 update diff (mongod's doc_diff: i / u / d / s<field>,
 * arrays {a: true, l, u<n>, s<n>}) to pre into out (initialised).  false
 * when the diff does not fit the document. */
bool repl_diff_apply(const bson_t *pre, const bson_t *diff, bson_t *out);

#endif
