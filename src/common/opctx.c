/*
 * opctx.c -- the registry of running operations and the interrupt check
 * (opctx.h).  The deadline and kill flag are atomics, so the check itself
 * never takes a lock.
 *
 * The registry is per thread: each thread that begins an operation owns a
 * slot (its operations, oldest first) guarded by a spin lock that only its
 * owner takes on the command path -- one uncontended atomic exchange and a
 * store per begin and per end, where one mutex shared by every thread cost
 * ~140 instructions a command and serialised all connections.  currentOp
 * and killOp (rare) walk the list of slots under slots_lock, taking each
 * slot's lock: an operation ends only after taking its slot's lock, so what
 * they read stays valid.  A slot joins the list at its thread's first
 * operation and leaves it when the thread exits (a pthread key destructor).
 * Opids come from one atomic counter.
 */
#include "common/opctx.h"

#include <stdio.h>
#include <stdlib.h>

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

__thread tm_opctx_t *tm_opctx_tls;
__thread int tm_interrupt_ticks;

typedef struct tm_op_slot {
	int lock;                       /* 0 free, 1 held (atomic) */
	tm_opctx_t *head, *tail;        /* the thread's registered operations, oldest first */
	struct tm_op_slot *prev, *next; /* the list of slots (slots_lock) */
} tm_op_slot_t;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static tm_op_slot_t *slots_head;
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static __thread tm_op_slot_t *my_slot;
static uint64_t opid_counter;   /* atomic */

static inline void
slot_lock(tm_op_slot_t *s)
{
	while (__atomic_exchange_n(&s->lock, 1, __ATOMIC_ACQUIRE) != 0)
		while (__atomic_load_n(&s->lock, __ATOMIC_RELAXED) != 0)
			sched_yield();
}

static inline void
slot_unlock(tm_op_slot_t *s)
{
	__atomic_store_n(&s->lock, 0, __ATOMIC_RELEASE);
}

/* the thread exits: its slot leaves the list (its operations have ended) */
static void
slot_release(void *arg)
{
	tm_op_slot_t *s = arg;

	pthread_mutex_lock(&slots_lock);
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		slots_head = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&slots_lock);
	free(s);
	my_slot = NULL;
}

static void
slot_key_init(void)
{
	(void)pthread_key_create(&slot_key, slot_release);
}

/* The calling thread's slot, created and listed at its first operation.
 * NULL only when memory runs out (the operation then runs unlisted). */
static tm_op_slot_t *
slot_attach(void)
{
	tm_op_slot_t *s;

	pthread_once(&slot_once, slot_key_init);
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	pthread_mutex_lock(&slots_lock);
	s->next = slots_head;
	if (slots_head != NULL)
		slots_head->prev = s;
	slots_head = s;
	pthread_mutex_unlock(&slots_lock);
	(void)pthread_setspecific(slot_key, s);
	my_slot = s;
	return s;
}

int64_t
tm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
tm_opctx_begin_at(tm_opctx_t *op, void *owner, int64_t start_us)
{
	tm_opctx_t *outer = tm_opctx_tls;
	tm_op_slot_t *s = my_slot != NULL ? my_slot : slot_attach();
	uint64_t n;

	memset(op, 0, sizeof(*op));
	op->owner = owner;
	op->start_us = start_us;
	op->outer = outer;
	if (outer != NULL)
		op->deadline_us = __atomic_load_n(&outer->deadline_us, __ATOMIC_RELAXED);
	/* opids wrap within the positive int32 range as mongod's do */
	n = __atomic_fetch_add(&opid_counter, 1, __ATOMIC_RELAXED);
	op->opid = (int32_t)(n % INT32_MAX) + 1;
	op->slot = s;
	if (s != NULL) {
		slot_lock(s);
		op->prev = s->tail;
		if (s->tail != NULL)
			s->tail->next = op;
		else
			s->head = op;
		s->tail = op;
		slot_unlock(s);
	}
	tm_opctx_tls = op;
	tm_interrupt_ticks = TM_INTERRUPT_EVERY;
}

void
tm_opctx_begin(tm_opctx_t *op, void *owner)
{
	tm_opctx_begin_at(op, owner, tm_now_us());
}

void
tm_opctx_end(tm_opctx_t *op)
{
	tm_op_slot_t *s = op->slot;

	if (s != NULL) {
		slot_lock(s);
		if (op->prev != NULL)
			op->prev->next = op->next;
		else
			s->head = op->next;
		if (op->next != NULL)
			op->next->prev = op->prev;
		else
			s->tail = op->prev;
		slot_unlock(s);
		op->prev = op->next = NULL;
		op->slot = NULL;
	}
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

	pthread_mutex_lock(&slots_lock);
	for (tm_op_slot_t *s = slots_head; s != NULL && !found; s = s->next) {
		slot_lock(s);
		for (tm_opctx_t *op = s->head; op != NULL; op = op->next)
			if (op->opid == opid) {
				__atomic_store_n(&op->killed, 1, __ATOMIC_RELAXED);
				found = true;
				break;
			}
		slot_unlock(s);
	}
	pthread_mutex_unlock(&slots_lock);
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

/* oldest first: by start time, then by opid */
static int
op_order(const void *a, const void *b)
{
	const tm_opctx_t *x = *(const tm_opctx_t *const *)a, *y = *(const tm_opctx_t *const *)b;

	if (x->start_us != y->start_us)
		return x->start_us < y->start_us ? -1 : 1;
	return (x->opid > y->opid) - (x->opid < y->opid);
}

void
tm_opctx_foreach(void (*fn)(const tm_opctx_t *op, void *arg), void *arg)
{
	size_t n = 0, i = 0;
	tm_opctx_t **all;

	/* every slot locked while fn runs: no operation ends meanwhile */
	pthread_mutex_lock(&slots_lock);
	for (tm_op_slot_t *s = slots_head; s != NULL; s = s->next) {
		slot_lock(s);
		for (tm_opctx_t *op = s->head; op != NULL; op = op->next)
			n++;
	}
	all = n > 0 ? malloc(n * sizeof(*all)) : NULL;
	if (all != NULL) {
		for (tm_op_slot_t *s = slots_head; s != NULL; s = s->next)
			for (tm_opctx_t *op = s->head; op != NULL; op = op->next)
				all[i++] = op;
		qsort(all, n, sizeof(*all), op_order);
		for (i = 0; i < n; i++)
			fn(all[i], arg);
		free(all);
	} else {
		/* no memory for the order: every operation all the same */
		for (tm_op_slot_t *s = slots_head; s != NULL; s = s->next)
			for (tm_opctx_t *op = s->head; op != NULL; op = op->next)
				fn(op, arg);
	}
	for (tm_op_slot_t *s = slots_head; s != NULL; s = s->next)
		slot_unlock(s);
	pthread_mutex_unlock(&slots_lock);
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
