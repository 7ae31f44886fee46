/*
 * opctx.c -- the registry of running operations and the interrupt check
 * (opctx.h).  One mutex guards the registry's list; the deadline and kill
 * flag are atomics, so the check itself never takes the lock.
 */
#include "common/opctx.h"

#include <stdio.h>

#include <pthread.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

__thread tm_opctx_t *tm_opctx_tls;
__thread int tm_interrupt_ticks;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_opctx_t *reg_head, *reg_tail;
static int32_t next_opid;   /* guarded by reg_lock */

int64_t
tm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void
tm_opctx_begin(tm_opctx_t *op, void *owner)
{
	tm_opctx_t *outer = tm_opctx_tls;

	memset(op, 0, sizeof(*op));
	op->owner = owner;
	op->start_us = tm_now_us();
	op->start_wall_ms = wall_ms();
	op->outer = outer;
	if (outer != NULL)
		op->deadline_us = __atomic_load_n(&outer->deadline_us, __ATOMIC_RELAXED);
	pthread_mutex_lock(&reg_lock);
	/* opids wrap within the positive int32 range as mongod's do */
	if (next_opid == INT32_MAX)
		next_opid = 0;
	op->opid = ++next_opid;
	op->prev = reg_tail;
	if (reg_tail != NULL)
		reg_tail->next = op;
	else
		reg_head = op;
	reg_tail = op;
	pthread_mutex_unlock(&reg_lock);
	tm_opctx_tls = op;
	tm_interrupt_ticks = TM_INTERRUPT_EVERY;
}

void
tm_opctx_end(tm_opctx_t *op)
{
	pthread_mutex_lock(&reg_lock);
	if (op->prev != NULL)
		op->prev->next = op->next;
	else
		reg_head = op->next;
	if (op->next != NULL)
		op->next->prev = op->prev;
	else
		reg_tail = op->prev;
	op->prev = op->next = NULL;
	pthread_mutex_unlock(&reg_lock);
	if (tm_opctx_tls == op)
		tm_opctx_tls = op->outer;
	tm_interrupt_ticks = TM_INTERRUPT_EVERY;
}

tm_opctx_t *
tm_opctx_current(void)
{
	return tm_opctx_tls;
}

void
tm_opctx_adopt(tm_opctx_t *op)
{
	tm_opctx_tls = op;
	tm_interrupt_ticks = TM_INTERRUPT_EVERY;
}

void
tm_opctx_set_deadline(int64_t deadline_us)
{
	if (tm_opctx_tls != NULL)
		__atomic_store_n(&tm_opctx_tls->deadline_us, deadline_us, __ATOMIC_RELAXED);
}

int64_t
tm_opctx_deadline(void)
{
	if (tm_opctx_tls == NULL)
		return 0;
	return __atomic_load_n(&tm_opctx_tls->deadline_us, __ATOMIC_RELAXED);
}

bool
tm_opctx_kill(int32_t opid)
{
	bool found = false;

	pthread_mutex_lock(&reg_lock);
	for (tm_opctx_t *op = reg_head; op != NULL; op = op->next)
		if (op->opid == opid) {
			__atomic_store_n(&op->killed, 1, __ATOMIC_RELAXED);
			found = true;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

void
tm_opctx_add_plan_stats(int64_t keys, int64_t docs, const char *summary)
{
	tm_opctx_t *op = tm_opctx_tls;

	if (op == NULL)
		return;
	op->keys_examined += keys;
	op->docs_examined += docs;
	if (summary != NULL && op->plan_summary[0] == '\0') {
		size_t n = strnlen(summary, sizeof(op->plan_summary) - 1);
		memcpy(op->plan_summary, summary, n);
		op->plan_summary[n] = '\0';
	}
}

bool
tm_opctx_kill_pending(const tm_opctx_t *op)
{
	return __atomic_load_n(&op->killed, __ATOMIC_RELAXED) != 0;
}

void
tm_opctx_foreach(void (*fn)(const tm_opctx_t *op, void *arg), void *arg)
{
	pthread_mutex_lock(&reg_lock);
	for (tm_opctx_t *op = reg_head; op != NULL; op = op->next)
		fn(op, arg);
	pthread_mutex_unlock(&reg_lock);
}

static int
raise_code(tm_opctx_t *op, int code, terr_t *err)
{
	__atomic_store_n(&op->raised, code, __ATOMIC_RELAXED);
	/* stay at the clock-reading end of the countdown: every later check
	 * answers again without waiting for the counter */
	tm_interrupt_ticks = 1;
	if (code == TERR_INTERRUPTED)
		return terr_set(err, TERR_INTERRUPTED, "operation was interrupted");
	return terr_set(err, TERR_MAX_TIME_MS_EXPIRED, "operation exceeded time limit");
}

int
tm_interrupt_check_now(terr_t *err)
{
	tm_opctx_t *op = tm_opctx_tls;
	int64_t deadline;

	tm_interrupt_ticks = TM_INTERRUPT_EVERY;
	if (op == NULL)
		return 0;
	{
		int raised = __atomic_load_n(&op->raised, __ATOMIC_RELAXED);
		if (raised != 0)
			return raise_code(op, raised, err);
	}
	for (tm_opctx_t *o = op; o != NULL; o = o->outer)
		if (__atomic_load_n(&o->killed, __ATOMIC_RELAXED) != 0)
			return raise_code(op, TERR_INTERRUPTED, err);
	deadline = __atomic_load_n(&op->deadline_us, __ATOMIC_RELAXED);
	if (deadline != 0 && tm_now_us() > deadline)
		return raise_code(op, TERR_MAX_TIME_MS_EXPIRED, err);
	return 0;
}
