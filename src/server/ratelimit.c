/*
 * ratelimit.c -- the ingress connection establishment rate limiter
 * (mongod's ingressConnectionEstablishmentRateLimiter* parameters).
 *
 * A token bucket: ratePerSec tokens a second, holding at most ratePerSec x
 * burstCapacitySecs.  A new connection's thread takes a token before it
 * reads its first message; without one it may wait its turn when fewer than
 * maxQueueDepth connections already wait (the bucket goes into debt and each
 * waiter sleeps until its token exists), otherwise it is refused and closed,
 * as mongod closes it.  The parameters are the engine's
 * (engine_ingress_limits), read on every connection, so setParameter applies
 * to the next one.  Not here: mongod's bypass list
 * (ingressConnectionEstablishmentRateLimiterBypass) and queue statistics
 * beyond the counters in serverStatus.connections.establishmentRateLimit.
 */
#include "server/server_private.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
ratelimit_init(ratelimit_t *rl)
{
	memset(rl, 0, sizeof(*rl));
	pthread_mutex_init(&rl->lock, NULL);
	rl->tokens = -1;   /* full at first use */
}

void
ratelimit_destroy(ratelimit_t *rl)
{
	pthread_mutex_destroy(&rl->lock);
}

int
ratelimit_admit(ratelimit_t *rl, engine_t *e, const atomic_bool *stopping)
{
	engine_ingress_limits_t lim;
	engine_counters_t *k = engine_counters(e);
	double now, cap, wait_s;

	engine_ingress_limits(e, &lim);
	if (!lim.enabled)
		return 0;
	pthread_mutex_lock(&rl->lock);
	now = mono_s();
	cap = (double)lim.rate_per_sec * lim.burst_capacity_secs;
	if (!(cap >= 1))
		cap = 1;
	if (rl->tokens < 0 && rl->last == 0) {
		rl->tokens = cap;
	} else {
		rl->tokens += (now - rl->last) * (double)lim.rate_per_sec;
		if (rl->tokens > cap)
			rl->tokens = cap;
	}
	rl->last = now;
	if (rl->tokens >= 1) {
		rl->tokens -= 1;
		pthread_mutex_unlock(&rl->lock);
		return 0;
	}
	if (rl->queued >= lim.max_queue_depth) {
		pthread_mutex_unlock(&rl->lock);
		__atomic_fetch_add(&k->ingress_rejected, 1, __ATOMIC_RELAXED);
		return -1;
	}
	/* wait in the queue: this connection's token is the one the bucket
	 * will hold after the debt before it is paid */
	rl->tokens -= 1;
	wait_s = -rl->tokens / (double)lim.rate_per_sec;
	rl->queued++;
	pthread_mutex_unlock(&rl->lock);
	__atomic_fetch_add(&k->ingress_queued, 1, __ATOMIC_RELAXED);
	while (wait_s > 0 && !atomic_load(stopping)) {
		double step = wait_s < 0.05 ? wait_s : 0.05;
		struct timespec ts = {(time_t)step, (long)((step - floor(step)) * 1e9)};
		nanosleep(&ts, NULL);
		wait_s -= step;
	}
	__atomic_fetch_sub(&k->ingress_queued, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&rl->lock);
	rl->queued--;
	pthread_mutex_unlock(&rl->lock);
	return atomic_load(stopping) ? -1 : 0;
}
