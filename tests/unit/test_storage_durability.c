/*
 * test_storage_durability.c -- what survives other processes and crashes:
 * a second process cannot open a folder in use (98 DBPathInUse); every
 * document acknowledged after a sync=true commit is there after kill -9;
 * documents committed without sync are there after kill -9 once the group
 * commit (~100 ms) has run (a process crash; WiredTiger has usually handed
 * them to the OS already, so this cannot tell the flusher's fsync apart --
 * only a power cut could); tables no catalog row names (a crash between
 * create and catalog commit) are dropped at open.
 *
 * The in-process behaviour of the layer is in test_storage.c.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <wiredtiger.h>

#include "tt.h"
#include "storage/storage.h"

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

static void
test_second_process_refused(void)
{
	char *dir = tt_tmpdir("lock");
	int ready[2], hold[2];
	pid_t pid;
	char c;
	storage_options_t o = {.create = true};
	storage_t *st = NULL;
	terr_t err = TERR_INIT;
	char *want;
	int status;

	TT_ASSERT(pipe(ready) == 0 && pipe(hold) == 0);
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		close(hold[1]);
		if (storage_open(dir, &o, &st, &err) != 0)
			_exit(2);
		c = 'R';
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		while (read(hold[0], &c, 1) > 0)   /* until the parent closes */
			;
		storage_close(st);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	TT_ASSERT(read_full(ready[0], &c, 1) && c == 'R');
	TT_ASSERT(storage_open(dir, &o, &st, &err) != 0);
	TT_EQ_INT(err.code, 98);
	want = bson_strdup_printf("Unable to lock the lock file: %s/WiredTiger.lock (Resource temporarily "
	    "unavailable). Another mongod instance is already running on the %s directory", dir, dir);
	TT_EQ_STR(err.msg, want);
	bson_free(want);
	terr_clear(&err);
	close(hold[1]);
	TT_ASSERT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(ready[0]);
	/* free again once the other process is gone */
	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	storage_close(st);
	tt_rmdir(dir);
	bson_free(dir);
}

typedef struct ins_arg {
	storage_coll_t *c;
	int32_t id;
} ins_arg_t;

static int
insert_one(storage_session_t *s, void *p, terr_t *err)
{
	ins_arg_t *a = p;
	bson_t d = BSON_INITIALIZER;
	int rc;

	BSON_APPEND_INT32(&d, "_id", a->id);
	BSON_APPEND_UTF8(&d, "pad", "some bytes so that the journal has something to write");
	rc = storage_doc_insert(s, a->c, &d, NULL, err);
	bson_destroy(&d);
	return rc;
}

/* The options "crash.docs" is created with (NULL: a plain collection;
 * test_kill9_clustered sets a clustered one). */
static bson_t *coll_opts;

/* Child: insert ids from 1 up (to limit, then wait; 0 = no limit), each
 * in its own commit; write each acknowledged id to fd.  Never returns. */
static void
child_insert(const char *dir, int fd, bool sync, int32_t limit)
{
	storage_options_t o = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;

	if (storage_open(dir, &o, &st, &err) != 0 || storage_session_open(st, &s, &err) != 0)
		_exit(2);
	if ((storage_coll_create(st, s, "crash", "docs", coll_opts, &err) != 0 && err.code != 48) ||
	    storage_coll_get(st, "crash", "docs", &c, &err) != 0)
		_exit(3);
	for (int32_t id = 1; limit == 0 || id <= limit; id++) {
		ins_arg_t a = {c, id};
		if (storage_txn_run(s, insert_one, &a, sync, &err) != 0)
			_exit(4);
		if (write(fd, &id, sizeof(id)) != sizeof(id))
			_exit(5);
	}
	for (;;)
		pause();
}

/* Open dir and check that ids 1..max are all there, and that the count is
 * base + max (+1: a commit whose acknowledgement was not written yet). */
static void
check_present(const char *dir, int32_t max, int64_t base)
{
	storage_options_t o = {0};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t *c = NULL;
	terr_t err = TERR_INIT;
	int missing = 0;
	int64_t count = 0;

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	if (st == NULL) {
		fprintf(stderr, "reopen: %s\n", err.msg);
		return;
	}
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	TT_EQ_INT(storage_coll_get(st, "crash", "docs", &c, &err), 0);
	if (c != NULL) {
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		for (int32_t id = 1; id <= max; id++) {
			bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
			recid_t rid;
			bson_t doc;
			if (storage_doc_find_id(s, c, &v, &rid, &doc, &err) != 0)
				missing++;
		}
		storage_txn_rollback(s);
		TT_EQ_INT(storage_coll_stats(st, s, c, &count, NULL, NULL, &err), 0);
		TT_ASSERT(count >= base + max && count <= base + max + 1);
		storage_coll_release(c);
	}
	TT_EQ_INT(missing, 0);
	storage_session_close(s);
	storage_close(st);
}

static void
test_kill9_sync(void)
{
	char *dir = tt_tmpdir("kill9");
	int acks[2], status;
	int32_t id = 0, last = 0;
	pid_t pid;

	/* A clean close first: it saves counts for the next open, which must
	 * not trust them again after the crash below. */
	{
		storage_options_t o = {.create = true};
		storage_t *st = NULL;
		storage_session_t *s = NULL;
		storage_coll_t *c = NULL;
		terr_t err = TERR_INIT;
		TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
		TT_EQ_INT(storage_session_open(st, &s, &err), 0);
		TT_EQ_INT(storage_coll_create(st, s, "crash", "docs", coll_opts, &err), 0);
		TT_EQ_INT(storage_coll_get(st, "crash", "docs", &c, &err), 0);
		for (int32_t i = -10; i < 0; i++) {
			ins_arg_t a = {c, i};
			TT_EQ_INT(storage_txn_run(s, insert_one, &a, false, &err), 0);
		}
		storage_coll_release(c);
		storage_session_close(s);
		storage_close(st);
	}
	TT_ASSERT(pipe(acks) == 0);
	pid = fork();
	if (pid == 0) {
		close(acks[0]);
		child_insert(dir, acks[1], true, 0);
	}
	close(acks[1]);
	/* Read some acknowledgements, then kill mid-stream. */
	while (last < 150 && read_full(acks[0], &id, sizeof(id)))
		last = id;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	TT_ASSERT(WIFSIGNALED(status));
	/* Whatever the child acknowledged before dying counts too. */
	while (read_full(acks[0], &id, sizeof(id)))
		last = id;
	close(acks[0]);
	TT_ASSERT(last >= 150);
	check_present(dir, last, 10);
	tt_rmdir(dir);
	bson_free(dir);
}

/* The same crash on a clustered collection: the documents live in the
 * clustered table, and the count after the crash is counted from it. */
static void
test_kill9_clustered(void)
{
	coll_opts = tt_json("{\"clusteredIndex\": {\"v\": 2, \"key\": {\"_id\": 1}, \"name\": \"_id_\", \"unique\": true}}");
	test_kill9_sync();
	bson_destroy(coll_opts);
	coll_opts = NULL;
}

static void
test_kill9_group_commit(void)
{
	char *dir = tt_tmpdir("kill9g");
	int acks[2], status;
	int32_t id = 0, last = 0;
	pid_t pid;

	TT_ASSERT(pipe(acks) == 0);
	pid = fork();
	if (pid == 0) {
		close(acks[0]);
		child_insert(dir, acks[1], false, 2000);
	}
	close(acks[1]);
	while (last < 2000 && read_full(acks[0], &id, sizeof(id)))
		last = id;
	TT_EQ_INT(last, 2000);
	/* Committed without sync: the flusher makes them durable within ~100 ms. */
	usleep(500 * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(acks[0]);
	check_present(dir, last, 0);
	tt_rmdir(dir);
	bson_free(dir);
}

static void
test_orphan_tables_dropped(void)
{
	char *dir = tt_tmpdir("orphan");
	storage_options_t o = {.create = true};
	storage_t *st = NULL;
	terr_t err = TERR_INIT;
	WT_CONNECTION *conn = NULL;
	WT_SESSION *ws = NULL;
	WT_CURSOR *cur = NULL;
	int found = 0;

	/* A folder with a catalog and one real collection. */
	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	TT_EQ_INT(storage_coll_create(st, NULL, "d", "real", NULL, &err), 0);
	storage_close(st);
	/* Tables as a crash between table create and catalog commit leaves them. */
	TT_EQ_INT(wiredtiger_open(dir, NULL, "log=(enabled=true)", &conn), 0);
	TT_EQ_INT(conn->open_session(conn, NULL, NULL, &ws), 0);
	TT_EQ_INT(ws->create(ws, "table:collection-900", "key_format=q,value_format=u"), 0);
	TT_EQ_INT(ws->create(ws, "table:index-901", "key_format=u,value_format=q"), 0);
	conn->close(conn, NULL);

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	/* new idents are numbered past the orphans */
	TT_EQ_INT(storage_coll_create(st, NULL, "d", "next", NULL, &err), 0);
	{
		storage_coll_t *c = NULL;
		TT_EQ_INT(storage_coll_get(st, "d", "next", &c, &err), 0);
		TT_ASSERT(c != NULL && strcmp(c->ident, "table:collection-902") >= 0);
		storage_coll_release(c);
	}
	storage_close(st);

	TT_EQ_INT(wiredtiger_open(dir, NULL, "log=(enabled=true)", &conn), 0);
	TT_EQ_INT(conn->open_session(conn, NULL, NULL, &ws), 0);
	TT_EQ_INT(ws->open_cursor(ws, "metadata:", NULL, NULL, &cur), 0);
	while (cur->next(cur) == 0) {
		const char *key;
		cur->get_key(cur, &key);
		if (strcmp(key, "table:collection-900") == 0 || strcmp(key, "table:index-901") == 0)
			found++;
	}
	TT_EQ_INT(found, 0);
	conn->close(conn, NULL);
	tt_rmdir(dir);
	bson_free(dir);
}

/* Child: create collections c1, c2, ... each with one document committed
 * with sync, dropping every third one again; ack each finished step. */
static void
child_ddl(const char *dir, int fd)
{
	storage_options_t o = {.create = true};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	terr_t err = TERR_INIT;

	if (storage_open(dir, &o, &st, &err) != 0 || storage_session_open(st, &s, &err) != 0)
		_exit(2);
	for (int32_t i = 1; ; i++) {
		char name[32];
		storage_coll_t *c = NULL;
		ins_arg_t a;

		snprintf(name, sizeof(name), "c%d", i);
		if (storage_coll_create(st, s, "ddl", name, NULL, &err) != 0 ||
		    storage_coll_get(st, "ddl", name, &c, &err) != 0)
			_exit(3);
		a.c = c;
		a.id = i;
		if (storage_txn_run(s, insert_one, &a, true, &err) != 0)
			_exit(4);
		storage_coll_release(c);
		if (i % 3 == 0) {
			snprintf(name, sizeof(name), "c%d", i - 1);
			if (storage_coll_drop(st, s, "ddl", name, &err) != 0)
				_exit(5);
		}
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(6);
	}
}

static void
test_kill9_during_ddl(void)
{
	char *dir = tt_tmpdir("kill9ddl");
	storage_options_t o = {0};
	storage_t *st = NULL;
	storage_session_t *s = NULL;
	storage_coll_t **colls = NULL;
	terr_t err = TERR_INIT;
	int acks[2], status, n = 0;
	int32_t id = 0, last = 0;
	pid_t pid;
	WT_CONNECTION *conn = NULL;
	WT_SESSION *ws = NULL;
	WT_CURSOR *mc = NULL;
	int tables = 0;

	TT_ASSERT(pipe(acks) == 0);
	pid = fork();
	if (pid == 0) {
		close(acks[0]);
		child_ddl(dir, acks[1]);
	}
	close(acks[1]);
	while (last < 40 && read_full(acks[0], &id, sizeof(id)))
		last = id;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	while (read_full(acks[0], &id, sizeof(id)))
		last = id;
	close(acks[0]);
	TT_ASSERT(last >= 40);

	TT_EQ_INT(storage_open(dir, &o, &st, &err), 0);
	if (st == NULL)
		return;
	TT_EQ_INT(storage_session_open(st, &s, &err), 0);
	/* every acknowledged step is there: cN exists unless N+1 was a
	 * multiple of 3 and acknowledged */
	for (int32_t i = 1; i <= last; i++) {
		char name[32];
		storage_coll_t *c = NULL;
		bool dropped = (i + 1) % 3 == 0 && i + 1 <= last;
		bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = i};
		recid_t rid;
		bson_t doc;

		snprintf(name, sizeof(name), "c%d", i);
		if (dropped) {
			TT_EQ_INT(storage_coll_get(st, "ddl", name, &c, &err), 26);
			continue;
		}
		TT_EQ_INT(storage_coll_get(st, "ddl", name, &c, &err), 0);
		if (c == NULL)
			continue;
		TT_EQ_INT(storage_txn_begin(s, &err), 0);
		TT_EQ_INT(storage_doc_find_id(s, c, &v, &rid, &doc, &err), 0);
		storage_txn_rollback(s);
		storage_coll_release(c);
	}
	/* every collection the catalog lists has working tables */
	TT_EQ_INT(storage_list_colls(st, "ddl", &colls, &n, &err), 0);
	for (int i = 0; i < n; i++) {
		storage_cursor_t *cur = NULL;
		recid_t rid;
		bson_t doc;
		TT_EQ_INT(storage_scan_open(s, colls[i], false, &cur, &err), 0);
		if (cur != NULL)
			TT_ASSERT(storage_cursor_next(cur, &rid, &doc, NULL, NULL, &err) >= 0);
		storage_cursor_close(cur);
		storage_coll_release(colls[i]);
	}
	bson_free(colls);
	storage_session_close(s);
	storage_close(st);

	/* and no table is left that the catalog does not name: 2 per collection */
	TT_EQ_INT(wiredtiger_open(dir, NULL, "log=(enabled=true)", &conn), 0);
	TT_EQ_INT(conn->open_session(conn, NULL, NULL, &ws), 0);
	TT_EQ_INT(ws->open_cursor(ws, "metadata:", NULL, NULL, &mc), 0);
	while (mc->next(mc) == 0) {
		const char *key;
		mc->get_key(mc, &key);
		if (strncmp(key, "table:collection-", 17) == 0 || strncmp(key, "table:index-", 12) == 0)
			tables++;
	}
	TT_EQ_INT(tables, 2 * n);
	conn->close(conn, NULL);
	tt_rmdir(dir);
	bson_free(dir);
}

int
main(void)
{
	/* Fork before this process has any WiredTiger threads running. */
	TT_RUN(test_second_process_refused);
	TT_RUN(test_kill9_sync);
	TT_RUN(test_kill9_clustered);
	TT_RUN(test_kill9_group_commit);
	TT_RUN(test_kill9_during_ddl);
	TT_RUN(test_orphan_tables_dropped);
	return tt_finish();
}
