/*
 * planner_ttl.h -- the TTL monitor: a background thread that removes
 * documents whose indexed date is older than the index's
 * expireAfterSeconds, as mongod's TTLMonitor does.
 *
 * A pass walks every collection's indexes with expireAfterSeconds (single
 * field key patterns), scans the index for dates below now - expireAfter
 * (an array expires by its earliest date, which its lowest key gives), and
 * deletes each such document in its own transaction after checking it
 * again.  Capped collections are skipped.  Values that are not dates never
 * expire.  Deletions bypass the command layer (no opcounters, no
 * validation), as mongod's TTL deletes do.  On a time-series collection
 * (its buckets) an index's cutoff moves back by bucketMaxSpanSeconds
 * (mongod's safeExpirationDate: the index is on control.min.<time>, a
 * bucket's start, and the bucket may hold times up to its span later), so
 * whole buckets go once every measurement in them has expired.
 */
#ifndef TAMGA_QUERY_PLANNER_TTL_H
#define TAMGA_QUERY_PLANNER_TTL_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/error.h"
#include "storage/storage.h"

typedef struct ttl_monitor ttl_monitor_t;

/* Start the thread: a pass every *sleep_secs seconds (mongod's
 * ttlMonitorSleepSecs, read again before each sleep; <= 0 or NULL means
 * 60), none while *enabled is 0 (ttlMonitorEnabled; NULL = always).  The
 * two are the caller's (the engine's server parameters) and must outlive
 * the monitor.  *out is owned by the caller until ttl_monitor_stop.  st
 * must outlive the monitor. */
int ttl_monitor_start(storage_t *st, const atomic_llong *sleep_secs, const atomic_llong *enabled,
                      ttl_monitor_t **out, terr_t *err);

/* A parameter changed: end the current sleep and start one of the new
 * length (no pass runs early).  NULL ok. */
void ttl_monitor_wake(ttl_monitor_t *m);

/* Wake the thread, wait for it to finish its pass and exit, free. NULL ok. */
void ttl_monitor_stop(ttl_monitor_t *m);

/* One pass now, with now_ms as the current time (ms since the epoch);
 * adds the number of documents removed to *deleted when not NULL.  What
 * the thread runs; tests call it directly. */
int ttl_pass(storage_t *st, int64_t now_ms, int64_t *deleted, terr_t *err);

/* serverStatus metrics.ttl: passes run and documents removed since the
 * process started (all monitors together). */
typedef struct ttl_stats {
	int64_t passes;
	int64_t deleted_documents;
} ttl_stats_t;
void ttl_stats_get(ttl_stats_t *out);

#endif
