/*
 * clock.c -- the logical clock (repl/clock.h): one 64-bit Timestamp behind a
 * mutex.  Reservations are rare enough (one per logged write) that a mutex
 * costs nothing next to the WiredTiger write they stamp, and it keeps the
 * wall-clock read and the compare-and-raise one step.
 */
#include "repl/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <bson/bson.h>

#define CODE_CURRENT_TIME_TOO_LARGE 40482
#define MAX_INC 0x7fffffffu

struct repl_clock {
	pthread_mutex_t lock;
	repl_ts_t now;
	uint32_t (*wall)(void *arg);
	void *wall_arg;
};

static uint32_t
system_wall(void *arg)
{
	(void)arg;
	return (uint32_t)time(NULL);
}

repl_clock_t *
repl_clock_new(void)
{
	repl_clock_t *clk = bson_malloc0(sizeof(*clk));

	pthread_mutex_init(&clk->lock, NULL);
	clk->wall = system_wall;
	return clk;
}

void
repl_clock_free(repl_clock_t *clk)
{
	if (clk == NULL)
		return;
	pthread_mutex_destroy(&clk->lock);
	bson_free(clk);
}

void
repl_clock_set_wall(repl_clock_t *clk, uint32_t (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&clk->lock);
	clk->wall = fn != NULL ? fn : system_wall;
	clk->wall_arg = fn != NULL ? arg : NULL;
	pthread_mutex_unlock(&clk->lock);
}

repl_ts_t
repl_clock_now(repl_clock_t *clk)
{
	repl_ts_t t;

	pthread_mutex_lock(&clk->lock);
	t = clk->now;
	pthread_mutex_unlock(&clk->lock);
	return t;
}

int
repl_clock_reserve(repl_clock_t *clk, uint32_t n, repl_ts_t *first, terr_t *err)
{
	uint32_t wall, secs, inc;

	if (n == 0 || n > MAX_INC)
		return terr_set(err, TERR_BAD_VALUE, "cannot reserve %u ticks", n);
	pthread_mutex_lock(&clk->lock);
	wall = clk->wall(clk->wall_arg);
	secs = repl_ts_secs(clk->now);
	inc = repl_ts_inc(clk->now);
	if (wall > secs) {
		secs = wall;
		inc = 1;
	} else if (inc > MAX_INC - n) {
		/* the increment would pass 2^31-1: move on to the next second */
		if (secs == UINT32_MAX) {
			pthread_mutex_unlock(&clk->lock);
			return terr_set(err, CODE_CURRENT_TIME_TOO_LARGE, "currentTime is too large");
		}
		secs++;
		inc = 1;
	} else {
		inc++;
	}
	*first = REPL_TS(secs, inc);
	clk->now = REPL_TS(secs, inc + n - 1);
	pthread_mutex_unlock(&clk->lock);
	return 0;
}

void
repl_clock_recover(repl_clock_t *clk, repl_ts_t ts)
{
	pthread_mutex_lock(&clk->lock);
	if (ts > clk->now)
		clk->now = ts;
	pthread_mutex_unlock(&clk->lock);
}

int
repl_clock_advance(repl_clock_t *clk, repl_ts_t ts, terr_t *err)
{
	uint32_t wall;

	pthread_mutex_lock(&clk->lock);
	wall = clk->wall(clk->wall_arg);
	if ((int64_t)repl_ts_secs(ts) - (int64_t)wall > REPL_CLOCK_MAX_DRIFT_SECS) {
		pthread_mutex_unlock(&clk->lock);
		return terr_set(err, REPL_CODE_CLUSTER_TIME_FAILS_RATE_LIMITER,
		    "New clusterTime, %u, is too far from this node's wall clock time, %u.",
		    repl_ts_secs(ts), wall);
	}
	if (ts > clk->now)
		clk->now = ts;
	pthread_mutex_unlock(&clk->lock);
	return 0;
}
