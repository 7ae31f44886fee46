/*
 * failpoint.c -- the fail point table and its modes (see failpoint.h).
 *
 * Each row is a fail point some code consults (the consumer is named in the
 * row's comment); configureFailPoint refuses any other name.  Modes are
 * parsed as mongod's FailPoint::parseBSON reads them.
 */
#include "common/failpoint.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef enum fp_mode { FP_OFF, FP_ALWAYS, FP_TIMES, FP_SKIP, FP_RANDOM } fp_mode_t;

typedef struct failpoint {
	const char *name;
	fp_mode_t mode;
	int64_t n;             /* times: left; skip: still to skip */
	double p;              /* activationProbability */
	bson_t *data;
	int64_t fired;         /* times it fired since the process started */
} failpoint_t;

static failpoint_t table[] = {
	/* commands/cmd_repl.c, before every command: the command fails, closes
	 * the connection, blocks, or gets a writeConcernError */
	{"failCommand"},
	/* commands/cmd_txn.c: a retryable write fails with
	 * data.failBeforeCommitExceptionCode before it runs, or (closeConnection)
	 * runs and the connection closes instead of the reply */
	{"onPrimaryTransactionalWrite"},
	/* commands/cursor.c: a getMore fails with data.errorCode once it took
	 * its cursor (change streams' resume tests) */
	{"failGetMoreAfterCursorCheckout"},
	/* repl/initial_sync.c: a logical copy waits before its first database
	 * while it is on (a member held in STARTUP2: it must not be elected) */
	{"initialSyncHangBeforeCopyingDatabases"},
	/* repl/raft_member.c: Raft messages from the members data.hosts names
	 * are dropped on arrival; repl/member_rpc.c: those members cannot be
	 * reached (the fault-injection test's partitions) */
	{"dropRaftMessagesFrom"},
	/* repl/raft_member.c: a secondary's applier takes no entry while it is
	 * on (mongod's name; e2e.replset_join_minvalid holds a member short of
	 * its minValid) */
	{"rsSyncApplyStop"},
};

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int fp_active;

static failpoint_t *
find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

static void
set_off_locked(failpoint_t *fp)
{
	if (fp->mode != FP_OFF)
		atomic_fetch_sub(&fp_active, 1);
	fp->mode = FP_OFF;
	if (fp->data != NULL)
		bson_destroy(fp->data);
	fp->data = NULL;
}

/* The mode as mongod's parseBSON reads it. */
static int
parse_mode(const bson_iter_t *mode, fp_mode_t *m, int64_t *n, double *p, terr_t *err)
{
	bson_iter_t it;

	*n = 0;
	*p = 0;
	if (BSON_ITER_HOLDS_UTF8(mode)) {
		const char *s = bson_iter_utf8(mode, NULL);
		if (strcmp(s, "off") == 0)
			*m = FP_OFF;
		else if (strcmp(s, "alwaysOn") == 0)
			*m = FP_ALWAYS;
		else
			return terr_set(err, TERR_BAD_VALUE, "unknown mode: %s", s);
		return 0;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(mode))
		return terr_set(err, TERR_TYPE_MISMATCH, "'mode' must be a string or JSON object");
	bson_iter_recurse(mode, &it);
	if (!bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "'mode' must be one of 'off', 'alwaysOn', 'times', 'skip', and 'activationProbability'");
	if (strcmp(bson_iter_key(&it), "times") == 0 || strcmp(bson_iter_key(&it), "skip") == 0) {
		bool times = strcmp(bson_iter_key(&it), "times") == 0;
		int64_t v;
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH, "The '%s' option to 'mode' must be a number",
			    bson_iter_key(&it));
		if (BSON_ITER_HOLDS_DOUBLE(&it) && (!isfinite(bson_iter_double(&it)) ||
		    bson_iter_double(&it) < INT32_MIN || bson_iter_double(&it) > INT32_MAX))
			return terr_set(err, TERR_BAD_VALUE, "The '%s' option to 'mode' must be in range of an int",
			    bson_iter_key(&it));
		v = bson_iter_as_int64(&it);
		if (v < INT32_MIN || v > INT32_MAX)
			return terr_set(err, TERR_BAD_VALUE, "The '%s' option to 'mode' must be in range of an int",
			    bson_iter_key(&it));
		if (v < 0)
			return terr_set(err, TERR_BAD_VALUE, "The '%s' option to 'mode' must be positive",
			    bson_iter_key(&it));
		*m = times ? FP_TIMES : FP_SKIP;
		*n = v;
		if (times && v == 0)
			*m = FP_OFF;
		return 0;
	}
	if (strcmp(bson_iter_key(&it), "activationProbability") == 0) {
		if (!BSON_ITER_HOLDS_NUMBER(&it))
			return terr_set(err, TERR_TYPE_MISMATCH, "the 'activationProbability' option to 'mode' must be a double");
		*p = bson_iter_as_double(&it);
		if (!(*p >= 0 && *p <= 1))
			return terr_set(err, TERR_BAD_VALUE, "activationProbability must be between 0.0 and 1.0");
		*m = FP_RANDOM;
		return 0;
	}
	return terr_set(err, TERR_BAD_VALUE, "'mode' must be one of 'off', 'alwaysOn', 'times', 'skip', and 'activationProbability'");
}

int
failpoint_configure(const char *name, const bson_iter_t *mode, const bson_t *data, int64_t *count,
                    terr_t *err)
{
	failpoint_t *fp = find(name);
	fp_mode_t m = FP_OFF;
	int64_t n;
	double p;

	*count = 0;
	if (fp == NULL)
		return terr_set(err, 266, "%s not found", name);
	RET(parse_mode(mode, &m, &n, &p, err));
	pthread_mutex_lock(&fp_lock);
	*count = fp->fired;
	set_off_locked(fp);
	if (m != FP_OFF) {
		fp->mode = m;
		fp->n = n;
		fp->p = p;
		fp->data = data != NULL ? bson_copy(data) : bson_new();
		atomic_fetch_add(&fp_active, 1);
	}
	pthread_mutex_unlock(&fp_lock);
	return 0;
}

bool
failpoint_any_active(void)
{
	return atomic_load_explicit(&fp_active, memory_order_relaxed) > 0;
}

bool
failpoint_fire(const char *name, failpoint_match_fn match, void *arg, bson_t *data)
{
	failpoint_t *fp;
	bool fire = false;

	if (!failpoint_any_active() || (fp = find(name)) == NULL)
		return false;
	pthread_mutex_lock(&fp_lock);
	if (fp->mode == FP_OFF || (match != NULL && !match(fp->data, arg)))
		goto out;
	switch (fp->mode) {
	case FP_ALWAYS:
		fire = true;
		break;
	case FP_TIMES:
		fire = fp->n > 0;
		if (fire && --fp->n == 0) {
			bson_copy_to(fp->data, data);
			fp->fired++;
			set_off_locked(fp);
			pthread_mutex_unlock(&fp_lock);
			return true;
		}
		break;
	case FP_SKIP:
		if (fp->n > 0)
			fp->n--;
		else
			fire = true;
		break;
	case FP_RANDOM:
		fire = (double)random() / RAND_MAX < fp->p;
		break;
	case FP_OFF:
		break;
	}
	if (fire) {
		bson_copy_to(fp->data, data);
		fp->fired++;
	}
out:
	pthread_mutex_unlock(&fp_lock);
	return fire;
}

void
failpoint_reset_all(void)
{
	pthread_mutex_lock(&fp_lock);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		set_off_locked(&table[i]);
	pthread_mutex_unlock(&fp_lock);
}
