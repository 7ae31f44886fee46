/*
 * changestream.h -- change streams: the oplog reader and event transform
 * behind the aggregation stage $changeStream.
 *
 * A change stream reads the oplog (repl/oplog.h) and nothing else: it
 * scans the visible entries after its start point (in a set of several
 * members only those at or before the majority commit point,
 * repl_oplog_commit_point, as mongod's streams read majority-committed
 * data; a resume token never passes it either), keeps those of its
 * namespace (one collection, one database, or every database but admin,
 * config and local), turns each into mongod's change event (insert,
 * update, replace, delete, drop, rename, dropDatabase, invalidate; with
 * showExpandedEvents also create, createIndexes, dropIndexes, modify) with
 * its resume token (repl/cs_token.h), and unwinds a transaction's applyOps
 * into one event per operation at its commit.  A $match right after
 * $changeStream that only reads operationType, ns and documentKey is
 * applied to a stub of those fields before the event is built (and before
 * any lookup).  fullDocument: "updateLookup" reads the current document by
 * its documentKey.
 *
 * agg/ defines the interface (agg_change_stream_ops_t, agg/pipeline.h);
 * this module implements it (repl_cs_ops), and the aggregate command hands
 * it to the pipeline with a service (repl_cs_service_t) created by the
 * engine of a replica-set member.
 *
 * Not here: the cursor's awaitData wait (commands/cursor.c waits on the
 * oplog's insert notifier: a commit wakes it), authorization (auth/).
 */
#ifndef TAMGA_REPL_CHANGESTREAM_H
#define TAMGA_REPL_CHANGESTREAM_H

#include <stdbool.h>
#include <bson/bson.h>

#include "agg/pipeline.h"
#include "common/error.h"
#include "repl/oplog.h"
#include "storage/storage.h"

typedef struct repl_cs_service repl_cs_service_t;

/* A service for the streams of one engine: st and op are borrowed and
 * outlive it.  Owned by the caller (repl_cs_service_free). */
repl_cs_service_t *repl_cs_service_new(storage_t *st, repl_oplog_t *op);
void repl_cs_service_free(repl_cs_service_t *svc);
/* The shared event cache's hits and misses since the start (events one
 * stream built and the others copied; changestream.c). */
void repl_cs_service_cache_stats(repl_cs_service_t *svc, uint64_t *hits, uint64_t *misses);

/* The callbacks agg's $changeStream calls; ctx is a repl_cs_service_t. */
extern const agg_change_stream_ops_t repl_cs_ops;

/*
 * The event(s) one oplog entry makes for a stream over ns (db, coll; coll
 * NULL = the database; db NULL = the cluster), as the reader builds them
 * with the default options (fullDocument "default", no expanded events),
 * appended to out (an array being built).  For tests.  Returns how many.
 */
int repl_cs_events_for_entry(const char *db, const char *coll, bool expanded, const bson_t *entry,
                             bson_t *out);

#endif
