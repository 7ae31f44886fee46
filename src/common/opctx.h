/*
 * opctx.h -- the running operation: its deadline (maxTimeMS), its kill flag
 * (killOp), and the check every long loop makes.
 *
 * One mechanism for every layer.  The command dispatcher begins an operation
 * for each command (tm_opctx_begin): it gets an opid, joins the server-wide
 * registry (a slot per thread, opctx.c) that currentOp lists and killOp
 * searches, and becomes the calling thread's current operation.  Any loop, in any layer, calls
 * tm_interrupt_check(err) once per iteration: most calls only decrement a
 * thread-local counter; every TM_INTERRUPT_EVERY-th call reads the monotonic
 * clock and the kill flag and answers as mongod does -- 50 MaxTimeMSExpired
 * "operation exceeded time limit" once the deadline has passed, 11601
 * Interrupted "operation was interrupted" once killOp marked it.  The answer
 * is sticky: after the first, every later check on the same operation fails
 * at once, so an error swallowed by one layer is raised again by the next.
 *
 * A thread without a current operation (background threads, embedded helpers
 * outside a command) is never interrupted: the check returns 0.
 *
 * This module does not know commands: what currentOp shows (the command,
 * the client) is an opaque owner pointer the commands layer reads back,
 * under the registry's lock, through tm_opctx_foreach.
 */
#ifndef TAMGA_COMMON_OPCTX_H
#define TAMGA_COMMON_OPCTX_H

#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"

/* How many checks pass between two reads of the clock.  Each check stands
 * for one unit of work (an element, a document); a few dozen of those are
 * microseconds, far below the 10% + 5 ms overshoot allowed. */
#define TM_INTERRUPT_EVERY 32

typedef struct tm_opctx {
	int32_t opid;                /* mongod's opids: positive 32-bit */
	int64_t start_us;            /* monotonic, at tm_opctx_begin */
	int64_t deadline_us;         /* monotonic deadline, 0 = none (atomic) */
	int killed;                  /* set by killOp (atomic) */
	int raised;                  /* the code once raised (sticky; atomic) */
	void *owner;                 /* the caller's description (commands: its cmd_t) */
	struct tm_opctx *outer;      /* the thread's operation before this one */
	struct tm_opctx *prev, *next;/* registry links (its thread's slot) */
	struct tm_op_slot *slot;     /* the registry slot it joined (opctx.c) */
	/* ---- what the operation's plans examined (the profiler, the slow
	 * query log and $queryStats read them: src/toolbelt/).  Added by
	 * query/plan.c when a plan is saved between batches or freed
	 * (tm_opctx_add_plan_stats); plan_summary is the first plan's
	 * "IXSCAN { a: 1 }" / "COLLSCAN" / "EXPRESS_IXSCAN { _id: 1 }". */
	int64_t keys_examined;
	int64_t docs_examined;
	char plan_summary[96];
	/* the last first batch written (commands/cursor.c): the reply it went
	 * into, that reply's length then, its documents and cursor id (0:
	 * none).  Whoever reads them checks that the reply is still that one
	 * at that length (nothing appended since), else walks the reply. */
	const void *batch_reply;
	uint32_t batch_reply_len;
	int64_t batch_n, batch_cursor_id;
} tm_opctx_t;

/* Monotonic clock in microseconds (CLOCK_MONOTONIC). */
int64_t tm_now_us(void);

/*
 * Begin an operation: op (caller's memory, zeroed here apart from owner)
 * gets the next opid and start times, joins the registry, and becomes the
 * calling thread's current operation until tm_opctx_end(op).  Operations
 * nest (the outer one is restored at the end); a nested operation starts
 * with its outer one's deadline, and a kill of the outer reaches it.
 */
void tm_opctx_begin(tm_opctx_t *op, void *owner);
/* The same with the start time the caller has just read (tm_now_us()). */
void tm_opctx_begin_at(tm_opctx_t *op, void *owner, int64_t start_us);
/* Leave the registry and restore the thread's previous current operation.
 * op must be the thread's current operation. */
void tm_opctx_end(tm_opctx_t *op);

/* The calling thread's current operation, or NULL. */
tm_opctx_t *tm_opctx_current(void);

/*
 * A helper thread working for op (a part of an index build): op becomes the
 * calling thread's current operation without joining the registry again,
 * so its deadline and a killOp reach the helper's loops; NULL ends it.  op
 * must outlive the helper's work (its owner joins the helper first).
 */
void tm_opctx_adopt(tm_opctx_t *op);

/* Set (0 = clear) the current operation's absolute monotonic deadline;
 * nothing without a current operation. */
void tm_opctx_set_deadline(int64_t deadline_us);
/* The current operation's deadline (0 = none or no operation). */
int64_t tm_opctx_deadline(void);

/*
 * Mark operation opid killed.  Returns true when it was found in the
 * registry.  The operation notices at its next clock read (within
 * TM_INTERRUPT_EVERY checks) and fails with 11601.
 */
bool tm_opctx_kill(int32_t opid);

/*
 * Call fn(op, arg) for every registered operation, oldest first, under the
 * registry's lock: op and what its owner points to stay valid during the
 * call (an operation ends only after taking the lock).  fn must not begin or
 * end operations.
 */
void tm_opctx_foreach(void (*fn)(const tm_opctx_t *op, void *arg), void *arg);

/* Add a plan's examined keys and documents to the calling thread's current
 * operation (nothing without one); summary (may be NULL) becomes its
 * plan_summary when it has none yet. */
void tm_opctx_add_plan_stats(int64_t keys, int64_t docs, const char *summary);

/* True when killOp has marked op. */
bool tm_opctx_kill_pending(const tm_opctx_t *op);

/* Read the clock and the kill flag now: 0 while the current operation may
 * go on, else -1 with 50 or 11601 set in err (mongod's messages). */
int tm_interrupt_check_now(terr_t *err);

extern __thread tm_opctx_t *tm_opctx_tls;
extern __thread int tm_interrupt_ticks;

/*
 * The check for long loops, once per unit of work: 0 = go on, -1 with err
 * set (50 MaxTimeMSExpired / 11601 Interrupted).  Cheap: a thread-local
 * decrement, the clock every TM_INTERRUPT_EVERY calls.
 */
static inline int
tm_interrupt_check(terr_t *err)
{
	if (tm_opctx_tls == NULL || --tm_interrupt_ticks > 0)
		return 0;
	return tm_interrupt_check_now(err);
}

#endif
