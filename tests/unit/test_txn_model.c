/*
 * test_txn_model.c -- concurrent multi-document transactions over a few hot
 * documents, checked against a serial model, in the spirit of WiredTiger's
 * test/format + test/model.
 *
 * Writer threads move random amounts between two of HOT documents inside a
 * transaction (two update statements, each read back inside the
 * transaction), sometimes abort on purpose, and retry whatever fails with a
 * TransientTransactionError; reader threads run read-only transactions over
 * every document.  Checked:
 * - snapshot isolation, no dirty read, no partial commit: every
 *   transaction's reads of all documents sum to the invariant total, even
 *   after its own first update was read back (a transfer half-applied in
 *   somebody else's open or committing transaction is never seen);
 * - reads see the transaction's own writes;
 * - no lost update: the final documents equal the serial model, the initial
 *   values plus every committed transfer (additions commute, so any serial
 *   order of the commits gives the same state);
 * - conflicts are only ever 112 WriteConflict with TransientTransactionError.
 * The seed is fixed (srand) per thread so a failure can be replayed;
 * thread interleaving still varies.
 */
#include "tt.h"
#include "tt_embedded.h"

#include <pthread.h>

#define HOT 4
#define WRITERS 3
#define READERS 1
#define ROUNDS 120
#define INITIAL 1000

static tamga_t *db;
static int64_t committed_delta[WRITERS][HOT];   /* the model, per writer */
static int conflicts, aborted_on_purpose, reader_checks;
static pthread_mutex_t stat_mu = PTHREAD_MUTEX_INITIALIZER;
static int bad_sum, bad_own, bad_code;

static void
lsid_json(char *buf, size_t n, int who)
{
	snprintf(buf, n, "{\"id\": {\"$binary\": {\"base64\": \"AAAAAAAAQACAAAAAAAAA%cA==\", \"subType\": \"04\"}}}",
	    'B' + who);
}

/* run; returns the code (0 ok) and whether the TransientTransactionError label came with it */
static int
run(const char *json, bson_t **out, bool *transient)
{
	int rc;
	bson_t *r = tt_run_json(db, "m", json, &rc);
	int code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");

	if (transient != NULL) {
		const char *l = tt_get_str(r, "errorLabels.0");
		*transient = l != NULL && strcmp(l, "TransientTransactionError") == 0;
	}
	if (out != NULL)
		*out = r;
	else
		tt_free_reply(r);
	return code;
}

/* Read every hot document in the transaction: sum and values. */
static int
read_all(const char *lsid, int64_t txn, bool start, int64_t vals[HOT], int64_t *sum, bool *transient)
{
	char cmd[512];
	bson_t *r;
	bson_iter_t it, b;
	int code;

	snprintf(cmd, sizeof(cmd), "{\"find\": \"hot\", \"sort\": {\"_id\": 1}, \"lsid\": %s, \"txnNumber\": {\"$numberLong\": "
	    "\"%lld\"}, \"autocommit\": false%s}", lsid, (long long)txn,
	    start ? ", \"startTransaction\": true, \"readConcern\": {\"level\": \"snapshot\"}" : "");
	if ((code = run(cmd, &r, transient)) != 0) {
		tt_free_reply(r);
		return code;
	}
	*sum = 0;
	if (tt_get(r, "cursor.firstBatch", &it) && bson_iter_recurse(&it, &b)) {
		int i = 0;
		while (bson_iter_next(&b) && i < HOT) {
			bson_iter_t d;
			if (bson_iter_recurse(&b, &d) && bson_iter_find(&d, "v"))
				vals[i] = bson_iter_as_int64(&d);
			*sum += vals[i++];
		}
	}
	tt_free_reply(r);
	return 0;
}

static int
end_txn(const char *lsid, int64_t txn, const char *what, bool *transient)
{
	char cmd[512];
	int rc;
	bson_t *r;
	int code;

	snprintf(cmd, sizeof(cmd), "{\"%s\": 1, \"lsid\": %s, \"txnNumber\": {\"$numberLong\": \"%lld\"}, "
	    "\"autocommit\": false}", what, lsid, (long long)txn);
	r = tt_run_json(db, "admin", cmd, &rc);
	code = rc == 0 ? 0 : (int)tt_get_i64(r, "code");
	if (transient != NULL) {
		const char *l = tt_get_str(r, "errorLabels.0");
		*transient = l != NULL && strcmp(l, "TransientTransactionError") == 0;
	}
	tt_free_reply(r);
	return code;
}

static int
inc(const char *lsid, int64_t txn, int id, int64_t by, bool *transient)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "{\"update\": \"hot\", \"updates\": [{\"q\": {\"_id\": %d}, \"u\": {\"$inc\": {\"v\": %lld}}}], "
	    "\"lsid\": %s, \"txnNumber\": {\"$numberLong\": \"%lld\"}, \"autocommit\": false}", id, (long long)by, lsid,
	    (long long)txn);
	return run(cmd, NULL, transient);
}

static void
note_code(int code, bool transient)
{
	pthread_mutex_lock(&stat_mu);
	if (code == 112 && transient)
		conflicts++;
	else
		bad_code++, fprintf(stderr, "unexpected code %d (transient %d)\n", code, transient);
	pthread_mutex_unlock(&stat_mu);
}

static void *
writer(void *arg)
{
	int who = (int)(intptr_t)arg;
	char lsid[128];
	unsigned seed = 1234u + (unsigned)who;
	int64_t txn = 0;

	lsid_json(lsid, sizeof(lsid), who);
	for (int round = 0; round < ROUNDS; round++) {
		int a = rand_r(&seed) % HOT, b = (a + 1 + rand_r(&seed) % (HOT - 1)) % HOT;
		int64_t delta = 1 + rand_r(&seed) % 10, vals[HOT], after[HOT], sum;
		bool give_up = rand_r(&seed) % 5 == 0, transient = false;
		int code;

		for (;;) {            /* until this transfer commits (or is abandoned on purpose) */
			txn++;
			if ((code = read_all(lsid, txn, true, vals, &sum, &transient)) != 0)
				goto failed;
			if (sum != (int64_t)HOT * INITIAL)
				__atomic_fetch_add(&bad_sum, 1, __ATOMIC_RELAXED);
			if ((code = inc(lsid, txn, a, -delta, &transient)) != 0)
				goto failed;
			/* its own write, and still no partial state of anyone else's */
			if ((code = read_all(lsid, txn, false, after, &sum, &transient)) != 0)
				goto failed;
			if (after[a] != vals[a] - delta || sum != (int64_t)HOT * INITIAL - delta)
				__atomic_fetch_add(&bad_own, 1, __ATOMIC_RELAXED);
			if ((code = inc(lsid, txn, b, delta, &transient)) != 0)
				goto failed;
			if (give_up) {
				if (end_txn(lsid, txn, "abortTransaction", NULL) != 0)
					__atomic_fetch_add(&bad_code, 1, __ATOMIC_RELAXED);
				__atomic_fetch_add(&aborted_on_purpose, 1, __ATOMIC_RELAXED);
				break;
			}
			if ((code = end_txn(lsid, txn, "commitTransaction", &transient)) != 0)
				goto failed;
			committed_delta[who][a] -= delta;
			committed_delta[who][b] += delta;
			break;
failed:
			note_code(code, transient);
			if (bad_code > 0)
				return NULL;
			/* the transaction is already aborted by the server */
		}
	}
	return NULL;
}

static void *
reader(void *arg)
{
	int who = (int)(intptr_t)arg;
	char lsid[128];
	int64_t txn = 0, vals[HOT], sum;
	bool transient;

	lsid_json(lsid, sizeof(lsid), who);
	for (int round = 0; round < ROUNDS; round++) {
		txn++;
		if (read_all(lsid, txn, true, vals, &sum, &transient) != 0)
			continue;
		if (sum != (int64_t)HOT * INITIAL)
			__atomic_fetch_add(&bad_sum, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&reader_checks, 1, __ATOMIC_RELAXED);
		end_txn(lsid, txn, "commitTransaction", NULL);
	}
	return NULL;
}

static void
test_concurrent_transfers(void)
{
	pthread_t th[WRITERS + READERS];
	bson_t *r;
	bson_iter_t it, b;
	int rc, i;

	for (i = 0; i < HOT; i++) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "{\"insert\": \"hot\", \"documents\": [{\"_id\": %d, \"v\": %d}]}", i, INITIAL);
		TT_EQ_INT(run(cmd, NULL, NULL), 0);
	}
	for (i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
	for (i = 0; i < READERS; i++)
		pthread_create(&th[WRITERS + i], NULL, reader, (void *)(intptr_t)(WRITERS + i));
	for (i = 0; i < WRITERS + READERS; i++)
		pthread_join(th[i], NULL);
	TT_EQ_INT(bad_code, 0);
	TT_EQ_INT(bad_sum, 0);
	TT_EQ_INT(bad_own, 0);
	TT_ASSERT(reader_checks > 0);
	/* the serial model */
	r = tt_run_json(db, "m", "{\"find\": \"hot\", \"sort\": {\"_id\": 1}}", &rc);
	TT_EQ_INT(rc, 0);
	TT_ASSERT(tt_get(r, "cursor.firstBatch", &it) && bson_iter_recurse(&it, &b));
	for (i = 0; i < HOT && bson_iter_next(&b); i++) {
		int64_t want = INITIAL;
		bson_iter_t d;
		for (int w = 0; w < WRITERS; w++)
			want += committed_delta[w][i];
		TT_ASSERT(bson_iter_recurse(&b, &d) && bson_iter_find(&d, "v"));
		TT_EQ_INT(bson_iter_as_int64(&d), want);
	}
	TT_EQ_INT(i, HOT);
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"serverStatus\": 1}", &rc);
	TT_EQ_INT(tt_get_i64(r, "transactions.currentOpen"), 0);
	tt_free_reply(r);
	fprintf(stderr, "# %d conflicts retried, %d aborted on purpose, %d reader snapshots\n", conflicts,
	    aborted_on_purpose, reader_checks);
}

int
main(void)
{
	char *dir = tt_tmpdir("txn-model");

	if ((db = tt_open_replset(dir, "create,replSet=rs0")) == NULL)
		return 1;
	TT_RUN(test_concurrent_transfers);
	tt_close_rm(db, dir);
	return tt_finish();
}
