/*
 * clock.h -- the logical clock of a replica-set member: MongoDB Timestamps
 * (seconds since the epoch, increment within the second) handed out strictly
 * increasing.
 *
 * One clock per engine.  The oplog takes every entry's `ts` from it
 * (repl/oplog.h), and the cluster time `replset` gossips ($clusterTime,
 * operationTime) is the same clock: a reply's operationTime is a value this
 * clock handed out, and a validated $clusterTime received from a client or
 * another member moves it forward (repl_clock_advance).
 *
 * Rules (mongod's VectorClock / LogicalClock):
 * - reserving n ticks gives (wall, 1) when the wall clock's seconds are past
 *   the clock's, else the next increments of the current second; an
 *   increment that would pass 2^31-1 moves to the next second;
 * - it never goes back: at start-up it is raised to the last oplog entry
 *   (repl_clock_recover), so a wall clock set back cannot make a Timestamp
 *   repeat;
 * - a gossiped time more than maxAcceptableLogicalClockDriftSecs (365 days,
 *   mongod's default) ahead of the wall clock is refused.
 *
 * What it does not do: sign or validate $clusterTime (replset does, with
 * the keys of admin.system.keys); order WiredTiger commits (the oplog does,
 * by reserving and stamping under one lock).
 *
 * Threads: every function may be called from any thread.
 */
#ifndef TAMGA_REPL_CLOCK_H
#define TAMGA_REPL_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* A MongoDB Timestamp as one unsigned 64-bit value: seconds in the high 32
 * bits, increment in the low 32 (libbson's bson_append_timestamp(timestamp,
 * increment) order; WiredTiger timestamps and oplog RecordIds use the same
 * number, so comparing two values compares the Timestamps).  0 is
 * Timestamp(0, 0): "none". */
typedef uint64_t repl_ts_t;

#define REPL_TS(secs, inc) (((uint64_t)(uint32_t)(secs) << 32) | (uint64_t)(uint32_t)(inc))
static inline uint32_t repl_ts_secs(repl_ts_t t) { return (uint32_t)(t >> 32); }
static inline uint32_t repl_ts_inc(repl_ts_t t) { return (uint32_t)t; }

/* mongod's maxAcceptableLogicalClockDriftSecs default: 365 days. */
#define REPL_CLOCK_MAX_DRIFT_SECS (365LL * 24 * 60 * 60)
/* ClusterTimeFailsRateLimiter */
#define REPL_CODE_CLUSTER_TIME_FAILS_RATE_LIMITER 262

typedef struct repl_clock repl_clock_t;

/* A clock at Timestamp(0, 0) reading the system's wall clock.  Owned by the
 * caller (repl_clock_free). */
repl_clock_t *repl_clock_new(void);
void repl_clock_free(repl_clock_t *clk);

/* Tests: read wall-clock seconds from fn(arg) instead of the system clock
 * (fn NULL restores the system clock).  Call before the clock is shared. */
void repl_clock_set_wall(repl_clock_t *clk, uint32_t (*fn)(void *arg), void *arg);

/* The current cluster time: the greatest Timestamp handed out, recovered
 * or advanced to (0 before any).  Does not tick. */
repl_ts_t repl_clock_now(repl_clock_t *clk);

/*
 * Reserve n consecutive Timestamps (n >= 1): *first is the first, the others
 * are *first + 1 .. *first + n - 1 (same second).  Every reservation is
 * greater than everything reserved, recovered or advanced to before it, on
 * any thread.  Errors: 2 BadValue for n == 0 or n > 2^31-1; 40482 when the
 * seconds would pass 2^32-1 (mongod's "currentTime is too large").
 */
int repl_clock_reserve(repl_clock_t *clk, uint32_t n, repl_ts_t *first, terr_t *err);

/* Raise the clock to at least ts (start-up: the last oplog entry's ts), so
 * the next reservation is greater.  Never lowers it. */
void repl_clock_recover(repl_clock_t *clk, repl_ts_t ts);

/*
 * Advance to a gossiped cluster time the caller has already validated
 * (signature): raises the clock to ts when ts is greater (never lowers).
 * Refused, the clock unchanged, with 262 ClusterTimeFailsRateLimiter "New
 * clusterTime, <secs>, is too far from this node's wall clock time,
 * <wall>." (mongod's VectorClock) when ts's seconds exceed the wall clock's
 * by more than REPL_CLOCK_MAX_DRIFT_SECS.
 */
int repl_clock_advance(repl_clock_t *clk, repl_ts_t ts, terr_t *err);

#endif
