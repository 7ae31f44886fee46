/*
 * cluster_params.h -- cluster-wide server parameters as mongod keeps them:
 * one document per parameter in config.clusterParameters,
 *   {_id: <name>, clusterParameterTime: Timestamp, <the parameter's fields>}
 * written by setClusterParameter as an ordinary (logged) write, read back by
 * getClusterParameter and by the server's own passes.  The only cluster
 * parameter Tamga has is changeStreamOptions (mongod's
 * change_stream_options.idl):
 *   {preAndPostImages: {expireAfterSeconds: <positive int64> | "off"}}
 * default "off": pre-images then live as long as the oplog holds their
 * entry; with a number they also go once older than that many seconds
 * (repl_preimage_expire, called by the oplog thread).
 */
#ifndef TAMGA_REPL_CLUSTER_PARAMS_H
#define TAMGA_REPL_CLUSTER_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <bson/bson.h>

#include "common/error.h"
#include "repl/clock.h"
#include "storage/storage.h"

#define REPL_CLUSTER_PARAMS_DB "config"
#define REPL_CLUSTER_PARAMS_COLL "clusterParameters"
#define REPL_CS_OPTIONS_PARAM "changeStreamOptions"

/* How many cluster parameters Tamga has, and the i-th one's name (the
 * order getClusterParameter: "*" lists them in). */
size_t repl_cluster_param_count(void);
const char *repl_cluster_param_name(size_t i);
/* name is a cluster parameter Tamga has. */
bool repl_cluster_param_known(const char *name);

/*
 * Check value (the object setClusterParameter gives for name) as mongod's
 * parameter validate does, and build the stored document into out
 * (initialised by the caller): {_id: name, clusterParameterTime: time,
 * <value's fields>}.  0, or -1 with err: 4 NoSuchKey "Unknown server
 * parameter: <name>", 2 BadValue for a value mongod refuses
 * (changeStreamOptions: "Failed parsing new changeStreamOptions value..."
 * for a shape error, "Non-numeric value of 'expireAfterSeconds' should be
 * 'off'", "Numeric value of 'expireAfterSeconds' should be positive").
 */
int repl_cluster_param_build(const char *name, const bson_t *value, repl_ts_t time, bson_t *out, terr_t *err);

/*
 * Store doc (from repl_cluster_param_build) in config.clusterParameters
 * through s, replacing the parameter's document or inserting it: one
 * transaction, committed (journal synced when sync), logged as any write
 * there.  The collection is created when missing.  0 or -1 with err.
 */
int repl_cluster_param_store(storage_t *st, storage_session_t *s, const bson_t *doc, bool sync, terr_t *err);

/*
 * Append name's current value to out as mongod's getClusterParameter
 * shows it: {_id: name, clusterParameterTime (only when with_time),
 * <fields, normalised: expireAfterSeconds a NumberLong or "off">}; the
 * default (clusterParameterTime Timestamp(0, 0)) when never set.  out is
 * the document to append to (a fresh one, initialised by the caller).
 * 0 or -1 with err.
 */
int repl_cluster_param_get(storage_t *st, storage_session_t *s, const char *name, bool with_time, bson_t *out,
                           terr_t *err);

/* changeStreamOptions.preAndPostImages.expireAfterSeconds: the number of
 * seconds, or 0 when "off" (or unreadable). */
int64_t repl_cluster_param_preimage_expire_secs(storage_t *st, storage_session_t *s);

#endif
