/*
 * test_txn_durability.c -- transactions and kill -9 (issue 16 item 8), with
 * the seed's computed pattern: a review insert and its book's summary
 * update ($inc reviewCount, ratingSum) in one transaction.
 *
 * A child process runs transactions on a replica-set database (tamga_open
 * replSet=rs0), each committed with writeConcern {j: true}, and tells the
 * parent every commit it had acknowledged.  The parent kills it with
 * SIGKILL between the two writes of a transaction (after the review insert,
 * before the summary update), and also once in the middle of a stream of
 * commits with no pause.  After each crash the reopened folder must hold
 * every acknowledged transaction, and no transaction half-applied: the
 * reviews count equals the book's reviewCount, their ratings sum its
 * ratingSum.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#include "tt.h"
#include "tt_embedded.h"

#define LSID "{'id': {'$binary': {'base64': 'AAAAAAAAQACAAAAAAAAAdw==', 'subType': '04'}}}"

static bool
read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static int
sq(tamga_t *db, const char *dbname, const char *fmt, ...) BSON_GNUC_PRINTF(3, 4);
static int
sq(tamga_t *db, const char *dbname, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc;
	bson_t *r;

	va_start(ap, fmt);
	cmd = bson_strdupv_printf(fmt, ap);
	va_end(ap);
	r = tt_run_sq(db, dbname, cmd, &rc);
	tt_free_reply(r);
	bson_free(cmd);
	return rc;
}

/* Child: from txnNumber first on, transactions of the computed pattern;
 * writes each acknowledged review id to fd (int32).  pause_at > 0: after
 * that transaction's review insert, write -1 and wait to be killed.
 * Never returns. */
static void
child_reviews(const char *dir, int fd, int first, int pause_at)
{
	tamga_t *db = NULL;

	if ((db = tt_open_replset(dir, "create,replSet=rs0")) == NULL)
		_exit(2);
	for (int i = first;; i++) {
		int32_t id = i;
		if (sq(db, "shop", "{'insert': 'reviews', 'documents': [{'_id': %d, 'bookId': 1, 'rating': %d}], "
		    "'lsid': " LSID ", 'txnNumber': %d, 'autocommit': false, 'startTransaction': true}", i, i % 5 + 1, i) != 0)
			_exit(3);
		if (i == pause_at) {
			int32_t m = -1;
			if (write(fd, &m, sizeof(m)) != sizeof(m))
				_exit(4);
			for (;;)
				pause();
		}
		if (sq(db, "shop", "{'update': 'books', 'updates': [{'q': {'_id': 1}, 'u': {'$inc': {'reviewCount': 1, "
		    "'ratingSum': %d}}}], 'lsid': " LSID ", 'txnNumber': %d, 'autocommit': false}", i % 5 + 1, i) != 0)
			_exit(5);
		if (sq(db, "admin", "{'commitTransaction': 1, 'writeConcern': {'w': 1, 'j': true}, 'lsid': " LSID ", "
		    "'txnNumber': %d, 'autocommit': false}", i) != 0)
			_exit(6);
		if (write(fd, &id, sizeof(id)) != sizeof(id))
			_exit(7);
	}
}

/* Reopen and check: every acknowledged review (ids <= last_acked from
 * first_ever) is there, and the summary agrees with the reviews. */
static void
check_consistent(const char *dir, int32_t last_acked, int64_t *nreviews)
{
	tamga_t *db = NULL;
	int rc;
	bson_t *r;
	int64_t n, sum, rc_count, rsum;

	TT_ASSERT((db = tt_open_replset(dir, "replSet=rs0")) != NULL);
	r = tt_run_sq(db, "shop", "{'aggregate': 'reviews', 'pipeline': [{'$group': {'_id': null, 'n': {'$sum': 1}, "
	    "'s': {'$sum': '$rating'}, 'max': {'$max': '$_id'}}}], 'cursor': {}}", &rc);
	TT_EQ_INT(rc, 0);
	n = tt_get_i64(r, "cursor.firstBatch.0.n");
	sum = tt_get_i64(r, "cursor.firstBatch.0.s");
	TT_ASSERT(tt_get_i64(r, "cursor.firstBatch.0.max") >= last_acked);
	tt_free_reply(r);
	r = tt_run_sq(db, "shop", "{'find': 'books', 'filter': {'_id': 1}}", &rc);
	TT_EQ_INT(rc, 0);
	rc_count = tt_get_i64(r, "cursor.firstBatch.0.reviewCount");
	rsum = tt_get_i64(r, "cursor.firstBatch.0.ratingSum");
	tt_free_reply(r);
	TT_EQ_INT(rc_count, n);
	TT_EQ_INT(rsum, sum);
	*nreviews = n;
	tamga_close(db);
}

static pid_t
spawn(const char *dir, int *rfd, int first, int pause_at)
{
	int p[2];
	pid_t pid;

	TT_ASSERT(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child_reviews(dir, p[1], first, pause_at);
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static void
test_kill_between_the_two_writes(void)
{
	char *dir = tt_tmpdir("txn-crash");
	tamga_t *db = NULL;
	int fd, status;
	int32_t id, last = 0;
	int64_t n;
	pid_t pid;

	TT_ASSERT((db = tt_open_replset(dir, "create,replSet=rs0")) != NULL);
	TT_EQ_INT(sq(db, "shop", "{'insert': 'books', 'documents': [{'_id': 1, 'title': 'Dune', 'reviewCount': 0, "
	    "'ratingSum': 0}], 'writeConcern': {'j': true}}"), 0);
	TT_EQ_INT(sq(db, "shop", "{'create': 'reviews'}"), 0);
	tamga_close(db);

	/* 1: killed after the review insert of transaction 6, before its summary update */
	pid = spawn(dir, &fd, 1, 6);
	while (read_full(fd, &id, sizeof(id)) && id != -1)
		last = id;
	TT_EQ_INT(id, -1);
	TT_EQ_INT(last, 5);
	kill(pid, SIGKILL);
	TT_ASSERT(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	close(fd);
	check_consistent(dir, last, &n);
	TT_EQ_INT(n, 5);   /* the half-done sixth is not there */

	/* 2: killed at an arbitrary point of a stream of acknowledged commits */
	pid = spawn(dir, &fd, 100, 0);
	for (int k = 0; k < 40 && read_full(fd, &id, sizeof(id)); k++)
		last = id;
	kill(pid, SIGKILL);
	TT_ASSERT(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status));
	close(fd);
	check_consistent(dir, last, &n);
	TT_ASSERT(n >= 5 + 40);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	TT_RUN(test_kill_between_the_two_writes);
	return tt_finish();
}
