/*
 * engine.c -- the WiredTiger connection of one data folder: open (with
 * mongod's errors for a missing or locked folder), close (checkpoint), the
 * session pool, transactions with write-conflict retry, and group commit
 * (a thread that syncs the journal every ~100 ms).
 *
 * Not here: the catalog (catalog.c), documents and indexes (record.c),
 * cursors (cursor.c).
 */
#include "storage/storage_private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

#define FLUSH_INTERVAL_MS 100
#define PENDING_DROP_EVERY 10      /* flusher ticks between drop retries */
#define POOL_MAX 256
#define POOL_RESET_EVERY 64
#define TXN_RETRY_MAX 100000
#define SESSION_MAX "2000"         /* ~1000 connections + pool + WT's threads */

/* ---- errors ------------------------------------------------------------- */

int
storage_wt_err(int ret, const char *what, terr_t *err)
{
	if (ret == WT_ROLLBACK)
		return terr_set(err, TERR_WRITE_CONFLICT,
		    "WriteConflict error: this operation conflicted with another operation. "
		    "Please retry your operation or multi-document transaction.");
	if (ret == ENOENT)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "collection dropped (%s)", what);
	return terr_set(err, TERR_INTERNAL_ERROR, "WiredTiger error (%s): %s", what,
	    wiredtiger_strerror(ret));
}

bool
storage_is_write_conflict(const terr_t *err)
{
	return err != NULL && err->code == TERR_WRITE_CONFLICT;
}

/* WiredTiger's own messages go to our log, not stderr.  Errors we expect
 * and handle (a busy lock file, a busy table on drop, a dropped table) are
 * debug lines. */
static int
on_wt_error(WT_EVENT_HANDLER *h, WT_SESSION *ws, int error, const char *message)
{
	bson_t attr = BSON_INITIALIZER;
	bool expected = error == EBUSY || error == ENOENT || error == WT_ROLLBACK;

	BSON_APPEND_INT32(&attr, "error", error);
	BSON_APPEND_UTF8(&attr, "message", message);
	tlog(expected ? 'D' : 'E', "STORAGE", 22435, "WiredTiger error message", &attr);
	bson_destroy(&attr);
	return 0;
}

static int
on_wt_message(WT_EVENT_HANDLER *h, WT_SESSION *ws, const char *message)
{
	bson_t attr = BSON_INITIALIZER;

	BSON_APPEND_UTF8(&attr, "message", message);
	tlog('D', "STORAGE", 22430, "WiredTiger message", &attr);
	bson_destroy(&attr);
	return 0;
}

/* ---- open / close ------------------------------------------------------- */

static int
mkdir_p(const char *path)
{
	char *p = bson_strdup(path);
	int ret = 0;

	for (char *q = p + 1; ; q++) {
		if (*q == '/' || *q == '\0') {
			char c = *q;
			*q = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST) {
				ret = -1;
				break;
			}
			*q = c;
			if (c == '\0')
				break;
		}
	}
	bson_free(p);
	return ret;
}

static void *flusher_main(void *arg);
static int journal_sync(storage_t *st, WT_SESSION *ws, bool force);
static void pool_cursors_flush(storage_t *st);
static storage_session_t *session_wrap(storage_t *st, WT_SESSION *ws);

int
storage_open(const char *path, const storage_options_t *opts, storage_t **out, terr_t *err)
{
	storage_options_t defaults = {0};
	storage_t *st = NULL;
	struct stat sb;
	char *config = NULL;
	int ret = 0, wret;

	*out = NULL;
	if (opts == NULL)
		opts = &defaults;
	if (path == NULL || path[0] == '\0')
		return terr_set(err, TERR_BAD_VALUE, "dbpath is empty");
	if (stat(path, &sb) != 0) {
		if (!opts->create)
			return terr_set(err, TERR_NON_EXISTENT_PATH, "Data directory %s not found.", path);
		if (mkdir_p(path) != 0)
			return terr_set(err, TERR_NON_EXISTENT_PATH,
			    "Data directory %s not found. Create it failed: %s", path, strerror(errno));
	} else if (!S_ISDIR(sb.st_mode)) {
		return terr_set(err, TERR_NON_EXISTENT_PATH, "Data directory %s not found.", path);
	}

	st = bson_malloc0(sizeof(*st));
	st->path = bson_strdup(path);
	st->in_memory = opts->in_memory;
	st->events.handle_error = on_wt_error;
	st->events.handle_message = on_wt_message;
	pthread_rwlock_init(&st->cat_lock, NULL);
	pthread_mutex_init(&st->ddl_lock, NULL);
	pthread_mutex_init(&st->index_lock, NULL);
	pthread_mutex_init(&st->pool_lock, NULL);
	pthread_mutex_init(&st->flush_lock, NULL);
	pthread_cond_init(&st->flush_cond, NULL);
	pthread_rwlock_init(&st->listener_lock, NULL);

	if (opts->in_memory)
		config = bson_strdup_printf("create,in_memory=true,cache_size=%s,session_max=" SESSION_MAX,
		    opts->cache_size ? opts->cache_size : "256M");
	else
		config = bson_strdup_printf("create,cache_size=%s,session_max=" SESSION_MAX
		    ",log=(enabled=true,archive=true,file_max=16MB,prealloc=false),checkpoint=(wait=60)"
		    ",transaction_sync=(enabled=false),file_manager=(close_idle_time=600)",
		    opts->cache_size ? opts->cache_size : "256M");

	wret = wiredtiger_open(path, &st->events, config, &st->conn);
	if (wret == EBUSY) {
		terr_set(err, TERR_DB_PATH_IN_USE,
		    "Unable to lock the lock file: %s/WiredTiger.lock (Resource temporarily unavailable)."
		    " Another mongod instance is already running on the %s directory", path, path);
		ret = -1;
		goto err;
	}
	if (wret != 0) {
		storage_wt_err(wret, "wiredtiger_open", err);
		ret = -1;
		goto err;
	}
	if ((wret = st->conn->open_session(st->conn, NULL, "isolation=snapshot", &st->ddl_ws)) != 0) {
		storage_wt_err(wret, "open_session", err);
		ret = -1;
		goto err;
	}
	st->ddl_s = session_wrap(st, st->ddl_ws);
	if ((wret = st->ddl_ws->create(st->ddl_ws, STORAGE_CATALOG_URI, "key_format=S,value_format=u")) != 0) {
		storage_wt_err(wret, "create catalog", err);
		ret = -1;
		goto err;
	}
	ERR(storage_catalog_load(st, err));
	if (!st->in_memory) {
		if (pthread_create(&st->flusher, NULL, flusher_main, st) != 0) {
			terr_set(err, TERR_INTERNAL_ERROR, "could not start the journal flush thread");
			ret = -1;
			goto err;
		}
		st->flusher_running = true;
	}
	bson_free(config);
	*out = st;
	return 0;
err:
	bson_free(config);
	storage_session_close(st->ddl_s);
	if (st->conn != NULL)
		st->conn->close(st->conn, NULL);
	storage_catalog_free(st);
	pthread_rwlock_destroy(&st->cat_lock);
	pthread_mutex_destroy(&st->ddl_lock);
	pthread_mutex_destroy(&st->index_lock);
	pthread_mutex_destroy(&st->pool_lock);
	pthread_mutex_destroy(&st->flush_lock);
	pthread_cond_destroy(&st->flush_cond);
	pthread_rwlock_destroy(&st->listener_lock);
	bson_free(st->path);
	bson_free(st);
	return ret;
}

static void
retry_pending_drops(storage_t *st, WT_SESSION *ws)
{
	pending_drop_t *list, *p, *next;

	pthread_mutex_lock(&st->flush_lock);
	list = st->pending;
	st->pending = NULL;
	pthread_mutex_unlock(&st->flush_lock);
	if (list != NULL)
		pool_cursors_flush(st);
	for (p = list; p != NULL; p = next) {
		next = p->next;
		storage_ident_drop(st, ws, p->ident, p->rt);
		coll_rt_release(p->rt);
		bson_free(p->ident);
		bson_free(p);
	}
}

static void *
flusher_main(void *arg)
{
	storage_t *st = arg;
	WT_SESSION *ws = NULL;
	struct timespec ts;
	int tick = 0;

	tlog_set_ctx("JournalFlusher");
	if (st->conn->open_session(st->conn, NULL, NULL, &ws) != 0)
		return NULL;
	pthread_mutex_lock(&st->flush_lock);
	while (!st->stopping) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += FLUSH_INTERVAL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&st->flush_cond, &st->flush_lock, &ts);
		if (st->stopping)
			break;
		pthread_mutex_unlock(&st->flush_lock);
		journal_sync(st, ws, false);
		if (++tick % PENDING_DROP_EVERY == 0)
			retry_pending_drops(st, ws);
		pthread_mutex_lock(&st->flush_lock);
	}
	pthread_mutex_unlock(&st->flush_lock);
	journal_sync(st, ws, false);
	ws->close(ws, NULL);
	return NULL;
}

/* One journal sync through ws (always when force, else when something was
 * committed without sync since the last one), the listener told around it.
 * The token is taken before the dirty flag is read: a transaction the
 * token names had returned from its commit, which set the flag after
 * WiredTiger's commit, so either this sync or an earlier one (whose
 * exchange cleared the flag after that commit) wrote its log record; a
 * sync=on commit was on disk before it returned.  So a round without a
 * flush still reports its token durable. */
static int
journal_sync(storage_t *st, WT_SESSION *ws, bool force)
{
	storage_journal_token_t tok;
	bool told;
	int ret = 0;

	pthread_rwlock_rdlock(&st->listener_lock);
	told = st->listener.token != NULL && st->listener.durable != NULL;
	if (told)
		st->listener.token(st->listener.arg, &tok);
	if (atomic_exchange(&st->dirty, false) || force)
		ret = ws->log_flush(ws, "sync=on");
	if (ret == 0 && told)
		st->listener.durable(st->listener.arg, &tok);
	pthread_rwlock_unlock(&st->listener_lock);
	return ret;
}

bool
storage_set_journal_listener(storage_t *st, const storage_journal_listener_t *l)
{
	if (st->in_memory)
		return false;
	pthread_rwlock_wrlock(&st->listener_lock);
	if (l == NULL)
		memset(&st->listener, 0, sizeof(st->listener));
	else
		st->listener = *l;
	pthread_rwlock_unlock(&st->listener_lock);
	return true;
}

int
storage_journal_sync(storage_session_t *s, terr_t *err)
{
	int ret;

	if (s->st->in_memory)
		return 0;
	ret = journal_sync(s->st, s->ws, true);
	return ret == 0 ? 0 : storage_wt_err(ret, "log_flush", err);
}

/* ---- the per-thread stash of the session pool ------------------------------
 *
 * The embedded API takes a session from the pool and gives it back around
 * every command: two lock/unlock pairs of pool_lock (~190 instructions and
 * four atomic operations).  A thread keeps the last session it gave back in
 * its stash instead, guarded by a spin lock its owner alone takes on that
 * path (one atomic exchange each way); the next get of the same storage
 * takes it back.  Everything that walks the pool's idle sessions walks the
 * stashes too, under stash_list_lock: storage_close takes its storage's
 * stashed sessions, a table drop closes their cached cursors
 * (pool_cursors_flush).  A thread's exit gives its stashed session back to
 * its storage's pool (a pthread key destructor, under stash_list_lock, so
 * the storage cannot be closed meanwhile). */

typedef struct pool_stash {
	int lock;                        /* 0 free, 1 held (atomic) */
	storage_session_t *s;            /* an idle session, or NULL */
	struct pool_stash *prev, *next;  /* stash_list_lock */
} pool_stash_t;

static pthread_mutex_t stash_list_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_stash_t *stash_head;
static pthread_key_t stash_key;
static pthread_once_t stash_once = PTHREAD_ONCE_INIT;
static __thread pool_stash_t *my_stash;

static inline void
stash_lock(pool_stash_t *p)
{
	while (__atomic_exchange_n(&p->lock, 1, __ATOMIC_ACQUIRE) != 0)
		while (__atomic_load_n(&p->lock, __ATOMIC_RELAXED) != 0)
			sched_yield();
}

static inline void
stash_unlock(pool_stash_t *p)
{
	__atomic_store_n(&p->lock, 0, __ATOMIC_RELEASE);
}

/* Give s back to its storage's pool (or close it when the pool is full). */
static void
pool_push(storage_session_t *s)
{
	storage_t *st = s->st;

	pthread_mutex_lock(&st->pool_lock);
	if (st->pool_size < POOL_MAX) {
		s->pool_next = st->pool;
		st->pool = s;
		st->pool_size++;
		s = NULL;
	}
	pthread_mutex_unlock(&st->pool_lock);
	if (s != NULL)
		storage_session_close(s);
}

static void
stash_release(void *arg)
{
	pool_stash_t *p = arg;

	pthread_mutex_lock(&stash_list_lock);
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		stash_head = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	stash_lock(p);
	if (p->s != NULL)
		pool_push(p->s);      /* its storage is open: closing takes stash_list_lock */
	p->s = NULL;
	stash_unlock(p);
	pthread_mutex_unlock(&stash_list_lock);
	free(p);
	my_stash = NULL;
}

static void
stash_key_init(void)
{
	(void)pthread_key_create(&stash_key, stash_release);
}

/* The calling thread's stash, made and listed at its first use; NULL when
 * memory runs out (the pool alone then). */
static pool_stash_t *
stash_attach(void)
{
	pool_stash_t *p;

	pthread_once(&stash_once, stash_key_init);
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	pthread_mutex_lock(&stash_list_lock);
	p->next = stash_head;
	if (stash_head != NULL)
		stash_head->prev = p;
	stash_head = p;
	pthread_mutex_unlock(&stash_list_lock);
	if (pthread_setspecific(stash_key, p) != 0) {
		stash_release(p);
		return NULL;
	}
	my_stash = p;
	return p;
}

/* fn(s, arg) for every stashed session of st, each stash locked meanwhile. */
static void
stash_foreach(storage_t *st, void (*fn)(storage_session_t **sp, void *arg), void *arg)
{
	pthread_mutex_lock(&stash_list_lock);
	for (pool_stash_t *p = stash_head; p != NULL; p = p->next) {
		stash_lock(p);
		if (p->s != NULL && p->s->st == st)
			fn(&p->s, arg);
		stash_unlock(p);
	}
	pthread_mutex_unlock(&stash_list_lock);
}

static void
stash_take_close(storage_session_t **sp, void *arg)
{
	(void)arg;
	storage_session_close(*sp);
	*sp = NULL;
}

static void
stash_flush_cursors(storage_session_t **sp, void *arg)
{
	if ((*sp)->cur_epoch != *(const uint64_t *)arg)
		storage_session_cursors_close(*sp);
}

void
storage_close(storage_t *st)
{
	storage_session_t *s, *next;

	if (st == NULL)
		return;
	if (st->flusher_running) {
		pthread_mutex_lock(&st->flush_lock);
		st->stopping = true;
		pthread_cond_signal(&st->flush_cond);
		pthread_mutex_unlock(&st->flush_lock);
		pthread_join(st->flusher, NULL);
	}
	stash_foreach(st, stash_take_close, NULL);
	for (s = st->pool; s != NULL; s = next) {
		next = s->pool_next;
		storage_session_close(s);
	}
	st->pool = NULL;
	retry_pending_drops(st, st->ddl_ws);
	if (!st->in_memory)
		storage_catalog_save_sizes(st);
	storage_session_close(st->ddl_s);
	st->ddl_s = NULL;
	if (!st->in_memory)
		st->ddl_ws->checkpoint(st->ddl_ws, NULL);
	st->conn->close(st->conn, NULL);
	/* Idents still pending are orphans now; the next open drops them. */
	while (st->pending != NULL) {
		pending_drop_t *p = st->pending;
		st->pending = p->next;
		coll_rt_release(p->rt);
		bson_free(p->ident);
		bson_free(p);
	}
	storage_catalog_free(st);
	pthread_rwlock_destroy(&st->cat_lock);
	pthread_mutex_destroy(&st->ddl_lock);
	pthread_mutex_destroy(&st->index_lock);
	pthread_mutex_destroy(&st->pool_lock);
	pthread_mutex_destroy(&st->flush_lock);
	pthread_cond_destroy(&st->flush_cond);
	pthread_rwlock_destroy(&st->listener_lock);
	bson_free(st->path);
	bson_free(st);
}

/* ---- drops -------------------------------------------------------------- */

void
storage_pending_drop_add(storage_t *st, const char *ident, coll_rt_t *rt)
{
	pending_drop_t *p = bson_malloc0(sizeof(*p));

	p->ident = bson_strdup(ident);
	if (rt != NULL)
		coll_rt_ref(rt);
	p->rt = rt;
	pthread_mutex_lock(&st->flush_lock);
	p->next = st->pending;
	st->pending = p;
	pthread_mutex_unlock(&st->flush_lock);
}

/* Close the cached cursors of the idle (pooled) sessions that have not seen
 * the current cursor epoch; sessions in use close theirs at their next
 * cached-cursor lookup or when they come back to the pool. */
static void
pool_cursors_flush(storage_t *st)
{
	uint64_t epoch = atomic_load(&st->cursor_epoch);

	pthread_mutex_lock(&st->pool_lock);
	for (storage_session_t *s = st->pool; s != NULL; s = s->pool_next)
		if (s->cur_epoch != epoch)
			storage_session_cursors_close(s);
	pthread_mutex_unlock(&st->pool_lock);
	stash_foreach(st, stash_flush_cursors, &epoch);
}

/* Is a transaction still inside rt's gate?  rt->dropped is set before
 * this is asked, so a transaction that enters after it refuses to write
 * (storage_txn_gate): a free gate now means nothing can be left in the
 * table's pages for a transaction to touch at its commit or rollback. */
static bool
gate_busy(coll_rt_t *rt)
{
	if (rt == NULL)
		return false;
	if (pthread_rwlock_trywrlock(&rt->gate) != 0)
		return true;
	pthread_rwlock_unlock(&rt->gate);
	return false;
}

void
storage_ident_drop(storage_t *st, WT_SESSION *ws, const char *ident, coll_rt_t *rt)
{
	int ret;

	atomic_fetch_add(&st->cursor_epoch, 1);
	pool_cursors_flush(st);
	/* WiredTiger only refuses a drop while a cursor is open on the table;
	 * a writer closes its cached cursors when the epoch moves, possibly
	 * in the middle of its transaction, so cursors say nothing of
	 * uncommitted updates: the gate does. */
	if (gate_busy(rt)) {
		storage_pending_drop_add(st, ident, rt);
		return;
	}
	ret = ws->drop(ws, ident, "force=true");
	if (ret == EBUSY)
		storage_pending_drop_add(st, ident, rt);
}

/* ---- sessions ----------------------------------------------------------- */

static storage_session_t *
session_wrap(storage_t *st, WT_SESSION *ws)
{
	storage_session_t *s = bson_malloc0(sizeof(*s));

	s->st = st;
	s->ws = ws;
	keystring_init(&s->ks);
	keystring_init(&s->ks2);
	keystring_init(&s->tb);
	s->cur_epoch = atomic_load(&st->cursor_epoch);
	s->internal = ws == st->ddl_ws;
	return s;
}

int
storage_session_open(storage_t *st, storage_session_t **out, terr_t *err)
{
	WT_SESSION *ws;
	int ret;

	*out = NULL;
	if ((ret = st->conn->open_session(st->conn, NULL, "isolation=snapshot", &ws)) != 0)
		return storage_wt_err(ret, "open_session", err);
	*out = session_wrap(st, ws);
	return 0;
}

void
storage_session_close(storage_session_t *s)
{
	if (s == NULL)
		return;
	if (s->in_txn)
		storage_txn_rollback(s);
	storage_session_cursors_close(s);
	if (s->obs_free != NULL && s->obs_ctx != NULL)
		s->obs_free(s->obs_ctx);
	if (!s->internal)
		s->ws->close(s->ws, NULL);
	keystring_destroy(&s->ks);
	keystring_destroy(&s->ks2);
	keystring_destroy(&s->tb);
	bson_free(s->deltas);
	bson_free(s->staged);
	bson_free(s->buf);
	bson_free(s->kbuf);
	bson_free(s->cbuf);
	bson_free(s->oldk.data);
	bson_free(s->oldk.k);
	bson_free(s->newk.data);
	bson_free(s->newk.k);
	bson_free(s);
}

void
storage_session_cursors_close(storage_session_t *s)
{
	for (int i = 0; i < s->ncur; i++) {
		s->cur[i].wc->close(s->cur[i].wc);
		bson_free(s->cur[i].uri);
	}
	s->ncur = 0;
	if (s->spare_scan != NULL) {
		s->spare_scan->close(s->spare_scan);
		s->spare_scan = NULL;
	}
	s->cur_epoch = atomic_load(&s->st->cursor_epoch);
}

/* FNV-1a of a table URI (and the raw flag): a write touches a cursor per
 * index, and comparing every cached URI with strcmp was ~260 instructions
 * per lookup. */
static uint64_t
uri_hash(const char *uri, bool raw)
{
	uint64_t h = raw ? 0xcbf29ce484222325ULL ^ 0x5a : 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)uri; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

static int
session_cursor_get(storage_session_t *s, const char *uri, bool raw, WT_CURSOR **out, terr_t *err)
{
	session_cursor_t *slot;
	uint64_t h;
	int i, lru = 0, ret;

	*out = NULL;
	if (s->cur_epoch != atomic_load_explicit(&s->st->cursor_epoch, memory_order_acquire))
		storage_session_cursors_close(s);
	s->cur_tick++;
	/* the same descriptor string as last time: one strcmp confirms it
	 * (the pointer alone could be a new string at a freed one's address) */
	for (i = 0; i < s->ncur; i++)
		if (s->cur[i].src == uri && s->cur[i].raw == raw && strcmp(s->cur[i].uri, uri) == 0) {
			s->cur[i].used = s->cur_tick;
			*out = s->cur[i].wc;
			return 0;
		}
	h = uri_hash(uri, raw);
	for (i = 0; i < s->ncur; i++) {
		if (s->cur[i].hash == h && s->cur[i].raw == raw && strcmp(s->cur[i].uri, uri) == 0) {
			s->cur[i].used = s->cur_tick;
			s->cur[i].src = uri;
			*out = s->cur[i].wc;
			return 0;
		}
		if (s->cur[i].used < s->cur[lru].used)
			lru = i;
	}
	if (s->ncur == SESSION_CURSORS) {
		slot = &s->cur[lru];
		slot->wc->close(slot->wc);
		bson_free(slot->uri);
	} else {
		slot = &s->cur[s->ncur];
	}
	if ((ret = s->ws->open_cursor(s->ws, uri, NULL, raw ? "overwrite=false,raw" : "overwrite=false",
	    &slot->wc)) != 0) {
		if (slot != &s->cur[s->ncur])   /* the evicted slot: fill the hole */
			*slot = s->cur[--s->ncur];
		return storage_wt_err(ret, "open cursor", err);
	}
	if (slot == &s->cur[s->ncur])
		s->ncur++;
	slot->uri = bson_strdup(uri);
	slot->raw = raw;
	slot->hash = h;
	slot->src = uri;
	slot->used = s->cur_tick;
	*out = slot->wc;
	return 0;
}

int
storage_session_cursor(storage_session_t *s, const char *uri, WT_CURSOR **out, terr_t *err)
{
	return session_cursor_get(s, uri, false, out, err);
}

int
storage_session_cursor_raw(storage_session_t *s, const char *uri, WT_CURSOR **out, terr_t *err)
{
	return session_cursor_get(s, uri, true, out, err);
}

storage_session_t *
storage_session_pool_get(storage_t *st, terr_t *err)
{
	storage_session_t *s;
	pool_stash_t *p = my_stash;

	if (p != NULL) {
		stash_lock(p);
		s = p->s;
		if (s != NULL && s->st == st)
			p->s = NULL;
		else
			s = NULL;
		stash_unlock(p);
		if (s != NULL)
			return s;
	}
	pthread_mutex_lock(&st->pool_lock);
	s = st->pool;
	if (s != NULL) {
		st->pool = s->pool_next;
		st->pool_size--;
	}
	pthread_mutex_unlock(&st->pool_lock);
	if (s != NULL) {
		s->pool_next = NULL;
		return s;
	}
	if (storage_session_open(st, &s, err) != 0)
		return NULL;
	return s;
}

void
storage_session_set_lock_timeout(storage_session_t *s, int64_t ms)
{
	s->lock_timeout_set = ms >= 0;
	s->lock_timeout_ms = ms;
}

void
storage_session_pool_put(storage_t *st, storage_session_t *s)
{
	if (s == NULL)
		return;
	s->lock_timeout_set = false;
	if (s->in_txn)
		storage_txn_rollback(s);
	if (s->cur_epoch != atomic_load(&st->cursor_epoch))
		storage_session_cursors_close(s);
	/* No transaction is open, so the session holds no snapshot, and our
	 * cached cursors are already reset; WiredTiger's reset (which also
	 * sweeps its own cursor cache) costs more than a small command, so it
	 * runs every POOL_RESET_EVERY returns. */
	storage_cursor_settle(s);
	if (++s->pool_puts % POOL_RESET_EVERY == 0)
		s->ws->reset(s->ws);
	{
		pool_stash_t *p = my_stash != NULL ? my_stash : stash_attach();
		if (p != NULL) {
			stash_lock(p);
			if (p->s == NULL) {
				p->s = s;
				s = NULL;
			}
			stash_unlock(p);
			if (s == NULL)
				return;
		}
	}
	pool_push(s);
}

uint8_t *
storage_session_buf(storage_session_t *s, size_t n)
{
	if (n > s->buf_cap) {
		size_t cap = s->buf_cap ? s->buf_cap : 4096;
		while (cap < n)
			cap *= 2;
		s->buf = bson_realloc(s->buf, cap);
		s->buf_cap = cap;
	}
	return s->buf;
}

/* ---- transactions ------------------------------------------------------- */

/* Wake rt's insert waiters (storage_coll_wait_insert).  The sequence moves
 * before the waiter count is read, and a waiter counts itself before it
 * reads the sequence under ins_mu: one of the two always sees the other. */
static void
insert_notify(coll_rt_t *rt)
{
	atomic_fetch_add(&rt->ins_seq, 1);
	if (atomic_load(&rt->ins_waiters) > 0) {
		pthread_mutex_lock(&rt->ins_mu);
		pthread_cond_broadcast(&rt->ins_cond);
		pthread_mutex_unlock(&rt->ins_mu);
	}
}

/* End of a transaction: after a commit (committed) the tables it inserted
 * into wake their waiters, then every capped lock and gate is let go (a
 * capped table's next writer gets RecordIds after this commit's). */
static void
deltas_clear_ex(storage_session_t *s, bool committed)
{
	for (int i = 0; i < s->ndeltas; i++) {
		txn_delta_t *d = &s->deltas[i];
		if (committed && d->inserted)
			insert_notify(d->rt);
		if (d->capped_locked && committed)
			atomic_fetch_add(&s->st->capped_commits, 1);
		if (d->capped_locked && !committed && d->keep_locks && d->gated && s->prelocked == NULL) {
			/* the retry starts with them held (storage_txn_capped_lock) */
			coll_rt_ref(d->rt);
			s->prelocked = d->rt;
		} else {
			if (d->capped_locked)
				pthread_mutex_unlock(&d->rt->capped_lock);
			if (d->gated)
				pthread_rwlock_unlock(&d->rt->gate);
		}
		coll_rt_release(d->rt);
	}
	s->ndeltas = 0;
}

/* Let go of locks kept for a retry that did not use them. */
static void
prelocked_release(storage_session_t *s)
{
	coll_rt_t *rt = s->prelocked;

	if (rt == NULL)
		return;
	s->prelocked = NULL;
	pthread_mutex_unlock(&rt->capped_lock);
	pthread_rwlock_unlock(&rt->gate);
	coll_rt_release(rt);
}

static void
deltas_clear(storage_session_t *s)
{
	deltas_clear_ex(s, false);
}

int
storage_txn_begin(storage_session_t *s, terr_t *err)
{
	int ret;

	if (s->in_txn)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "a storage transaction is already open on this session");
	s->begin_capped = atomic_load(&s->st->capped_commits);
	if ((ret = s->ws->begin_transaction(s->ws, NULL)) != 0)
		return storage_wt_err(ret, "begin_transaction", err);
	s->in_txn = true;
	s->txn_failed = false;
	s->observed = false;
	s->first_ts = 0;
	return 0;
}

/* "<key>=<ts in hex>" into cfg (at least 64 bytes), as WiredTiger reads a
 * timestamp: without printf, which cost a stamped write about 950
 * instructions (issue 16: every replica-set write sets one). */
static void
ts_config(char *cfg, const char *key, uint64_t ts)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(key);
	int shift = 60;

	memcpy(cfg, key, n);
	cfg[n++] = '=';
	while (shift > 0 && ((ts >> shift) & 0xf) == 0)
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		cfg[n++] = hex[(ts >> shift) & 0xf];
	cfg[n] = '\0';
}

int
storage_txn_begin_at(storage_session_t *s, uint64_t read_ts, terr_t *err)
{
	char cfg[64];
	int ret;

	if (s->in_txn)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "a storage transaction is already open on this session");
	ts_config(cfg, "read_timestamp", read_ts);
	if ((ret = s->ws->begin_transaction(s->ws, cfg)) != 0)
		return storage_wt_err(ret, "begin_transaction at a read timestamp", err);
	s->in_txn = true;
	s->txn_failed = false;
	s->observed = false;
	s->first_ts = 0;
	return 0;
}

/* The observer forgets the transaction that just ended on s. */
static void
txn_ended(storage_session_t *s, bool committed)
{
	s->observed = false;
	s->first_ts = 0;
	if (s->st->obs.on_end != NULL)
		s->st->obs.on_end(s->st->obs.arg, s, committed);
}

int
storage_txn_set_timestamp(storage_session_t *s, uint64_t ts, terr_t *err)
{
	char cfg[64];
	int ret;

	RET(storage_require_txn(s, err));
	ts_config(cfg, "commit_timestamp", ts);
	if ((ret = s->ws->timestamp_transaction(s->ws, cfg)) != 0)
		return storage_txn_fail(s, storage_wt_err(ret, "timestamp_transaction", err));
	if (s->first_ts == 0)
		s->first_ts = ts;
	return 0;
}

uint64_t
storage_txn_first_timestamp(const storage_session_t *s)
{
	return s->in_txn ? s->first_ts : 0;
}

int
storage_ts_all_committed(storage_t *st, uint64_t *ts, terr_t *err)
{
	char hex[32];
	int ret;

	*ts = 0;
	ret = st->conn->query_timestamp(st->conn, hex, "get=all_committed");
	if (ret == WT_NOTFOUND)
		return 0;
	if (ret != 0)
		return storage_wt_err(ret, "query_timestamp", err);
	*ts = strtoull(hex, NULL, 16);
	return 0;
}

int
storage_ts_set(storage_t *st, uint64_t stable, uint64_t oldest, terr_t *err)
{
	char cfg[96];
	int n = 0, ret;

	cfg[0] = '\0';
	if (stable != 0)
		n = snprintf(cfg, sizeof(cfg), "stable_timestamp=%" PRIx64, stable);
	if (oldest != 0)
		snprintf(cfg + n, sizeof(cfg) - (size_t)n, "%soldest_timestamp=%" PRIx64, n ? "," : "", oldest);
	if (cfg[0] == '\0')
		return 0;
	if ((ret = st->conn->set_timestamp(st->conn, cfg)) != 0)
		return storage_wt_err(ret, "set_timestamp", err);
	return 0;
}

int
storage_ts_force_back(storage_t *st, uint64_t ts, terr_t *err)
{
	char cfg[192];
	int ret;

	snprintf(cfg, sizeof(cfg),
	    "force=true,oldest_timestamp=%" PRIx64 ",stable_timestamp=%" PRIx64 ",commit_timestamp=%" PRIx64, ts, ts,
	    ts);
	if ((ret = st->conn->set_timestamp(st->conn, cfg)) != 0)
		return storage_wt_err(ret, "set_timestamp", err);
	return 0;
}

void
storage_set_op_observer(storage_t *st, const storage_op_observer_t *obs)
{
	if (obs == NULL)
		memset(&st->obs, 0, sizeof(st->obs));
	else
		st->obs = *obs;
}

void
storage_session_set_observer_ctx(storage_session_t *s, void *ctx, void (*free_fn)(void *ctx))
{
	if (s->obs_ctx != NULL && s->obs_ctx != ctx && s->obs_free != NULL)
		s->obs_free(s->obs_ctx);
	s->obs_ctx = ctx;
	s->obs_free = free_fn;
}

void *
storage_session_observer_ctx(const storage_session_t *s)
{
	return s->obs_ctx;
}

bool
storage_session_set_unobserved(storage_session_t *s, bool on)
{
	bool was = s->unobserved;

	s->unobserved = on;
	return was;
}

/* storage_thread_set_unobserved's flag (a secondary's applier: catalog
 * changes run on the catalog's own session, on the calling thread). */
static _Thread_local bool thread_unobserved;

bool
storage_thread_set_unobserved(bool on)
{
	bool was = thread_unobserved;

	thread_unobserved = on;
	return was;
}

int
storage_observe(storage_session_t *s, const storage_op_t *op, terr_t *err)
{
	storage_t *st = s->st;

	if (st->obs.on_write == NULL || s->unobserved || thread_unobserved)
		return 0;
	s->observed = true;
	return st->obs.on_write(st->obs.arg, s, op, err);
}

int
storage_txn_commit(storage_session_t *s, bool sync, terr_t *err)
{
	int ret;

	if (!s->in_txn)
		return terr_set(err, TERR_ILLEGAL_OPERATION, "no storage transaction is open on this session");
	if (s->txn_failed) {
		storage_txn_rollback(s);
		return terr_set(err, TERR_INTERNAL_ERROR,
		    "storage transaction failed earlier and was rolled back");
	}
	/* collections this transaction created: their catalog rows go into
	 * the same WiredTiger transaction (catalog.c) */
	if (s->nstaged > 0 && storage_staged_prepare(s, err) != 0) {
		storage_txn_rollback(s);
		return -1;
	}
	if (s->observed && s->st->obs.on_commit != NULL &&
	    s->st->obs.on_commit(s->st->obs.arg, s, err) != 0) {
		storage_txn_rollback(s);
		return -1;
	}
	storage_cursor_settle(s);
	ret = s->ws->commit_transaction(s->ws, sync && !s->st->in_memory ? "sync=on" : NULL);
	s->in_txn = false;
	s->txn_epoch++;
	if (ret != 0) {
		/* A failed commit is a rollback in WiredTiger. */
		deltas_clear(s);
		storage_staged_finish(s, false);
		txn_ended(s, false);
		return storage_wt_err(ret, "commit_transaction", err);
	}
	for (int i = 0; i < s->ndeltas; i++) {
		atomic_fetch_add(&s->deltas[i].rt->count, s->deltas[i].dcount);
		atomic_fetch_add(&s->deltas[i].rt->data_size, s->deltas[i].dsize);
	}
	if (!sync)
		atomic_store(&s->st->dirty, true);
	storage_staged_finish(s, true);
	/* the observer first: it moves what readers take for visible (the
	 * oplog's commit generation), then the insert waiters wake -- woken
	 * first, a waiter could read the visibility point from before this
	 * commit and go back to sleep with the commit unseen (the Raft feeder
	 * slept 50 ms so, a change stream until the next commit) */
	txn_ended(s, true);
	deltas_clear_ex(s, true);
	return 0;
}

void
storage_txn_rollback(storage_session_t *s)
{
	if (!s->in_txn)
		return;
	storage_cursor_settle(s);
	s->ws->rollback_transaction(s->ws, NULL);
	s->in_txn = false;
	s->txn_epoch++;
	s->txn_failed = false;
	deltas_clear(s);
	storage_staged_finish(s, false);
	txn_ended(s, false);
}

bool
storage_txn_active(const storage_session_t *s)
{
	return s->in_txn;
}

int
storage_require_txn(storage_session_t *s, terr_t *err)
{
	if (!s->in_txn)
		return terr_set(err, TERR_INTERNAL_ERROR, "storage operation outside a transaction");
	if (s->txn_failed)
		return terr_set(err, TERR_INTERNAL_ERROR,
		    "storage transaction failed earlier; only rollback is allowed");
	return 0;
}

int
storage_txn_fail(storage_session_t *s, int rc)
{
	if (rc != 0 && s->in_txn)
		s->txn_failed = true;
	return rc;
}

static txn_delta_t *
delta_of(storage_session_t *s, coll_rt_t *rt)
{
	for (int i = 0; i < s->ndeltas; i++)
		if (s->deltas[i].rt == rt)
			return &s->deltas[i];
	if (s->ndeltas == s->deltas_cap) {
		s->deltas_cap = s->deltas_cap ? s->deltas_cap * 2 : 4;
		s->deltas = bson_realloc(s->deltas, s->deltas_cap * sizeof(*s->deltas));
	}
	coll_rt_ref(rt);
	memset(&s->deltas[s->ndeltas], 0, sizeof(s->deltas[0]));
	s->deltas[s->ndeltas].rt = rt;
	return &s->deltas[s->ndeltas++];
}

int
storage_txn_gate(storage_session_t *s, coll_rt_t *rt, terr_t *err)
{
	txn_delta_t *d = delta_of(s, rt);

	if (!d->gated) {
		if (s->prelocked == rt) {
			/* kept from the last attempt with the capped lock, held since
			 * before this transaction began: its snapshot is newer than
			 * every capped commit to rt */
			s->prelocked = NULL;
			coll_rt_release(rt);
			d->capped_locked = true;
		} else if (s->lock_timeout_set) {
			struct timespec until;
			int64_t ns;
			clock_gettime(CLOCK_REALTIME, &until);
			ns = until.tv_nsec + (s->lock_timeout_ms % 1000) * 1000000;
			until.tv_sec += (time_t)(s->lock_timeout_ms / 1000 + ns / 1000000000);
			until.tv_nsec = (long)(ns % 1000000000);
			if (pthread_rwlock_timedrdlock(&rt->gate, &until) != 0)
				return storage_txn_fail(s, terr_set(err, TERR_LOCK_TIMEOUT,
				    "Unable to acquire IX lock within %lldms.", (long long)s->lock_timeout_ms));
		} else {
			pthread_rwlock_rdlock(&rt->gate);
		}
		d->gated = true;
		/* the table's row is gone and its drop waits for the gates to be
		 * free: writing now would put updates under the drop */
		if (atomic_load(&rt->dropped))
			return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "collection dropped");
	}
	return 0;
}

int
storage_txn_capped_lock(storage_session_t *s, coll_rt_t *rt, terr_t *err)
{
	txn_delta_t *d = delta_of(s, rt);

	if (d->capped_locked)
		return 0;
	pthread_mutex_lock(&rt->capped_lock);
	d->capped_locked = true;
	/* Only when rt is the first table the transaction writes: the retry
	 * then takes the same locks in the same order (gate, capped lock,
	 * then any other table's gate), so keeping them cannot deadlock with
	 * an index build waiting on another gate.  Otherwise the write goes
	 * on: a conflict on a document another writer capped is retried the
	 * ordinary way. */
	if (s->in_run && s->ndeltas == 1 && atomic_load(&s->st->capped_commits) != s->begin_capped) {
		d->keep_locks = true;
		return terr_set(err, TERR_WRITE_CONFLICT, "capped write with an old snapshot: retried");
	}
	return 0;
}

void
storage_txn_inserted(storage_session_t *s, coll_rt_t *rt)
{
	delta_of(s, rt)->inserted = true;
}

void
storage_txn_pending(storage_session_t *s, coll_rt_t *rt, int64_t *dcount, int64_t *dsize)
{
	*dcount = 0;
	*dsize = 0;
	for (int i = 0; i < s->ndeltas; i++)
		if (s->deltas[i].rt == rt) {
			*dcount = s->deltas[i].dcount;
			*dsize = s->deltas[i].dsize;
		}
}

uint64_t
storage_coll_insert_seq(const storage_coll_t *c)
{
	return atomic_load(&storage_coll_rt(c)->ins_seq);
}

int
storage_coll_wait_insert(const storage_coll_t *c, uint64_t seen, int64_t deadline_us)
{
	coll_rt_t *rt = storage_coll_rt(c);
	struct timespec ts;
	int moved;

	if (atomic_load(&rt->ins_seq) != seen)
		return 1;
	if (deadline_us <= 0)
		return 0;
	/* the deadline is on CLOCK_MONOTONIC, as the condition's clock */
	ts.tv_sec = (time_t)(deadline_us / 1000000);
	ts.tv_nsec = (long)(deadline_us % 1000000) * 1000;
	pthread_mutex_lock(&rt->ins_mu);
	atomic_fetch_add(&rt->ins_waiters, 1);
	while ((moved = atomic_load(&rt->ins_seq) != seen) == 0) {
		if (pthread_cond_timedwait(&rt->ins_cond, &rt->ins_mu, &ts) == ETIMEDOUT) {
			moved = atomic_load(&rt->ins_seq) != seen;
			break;
		}
	}
	atomic_fetch_sub(&rt->ins_waiters, 1);
	pthread_mutex_unlock(&rt->ins_mu);
	return moved;
}

void
storage_coll_wake(const storage_coll_t *c)
{
	insert_notify(storage_coll_rt(c));
}

int
storage_txn_delta(storage_session_t *s, coll_rt_t *rt, int64_t dcount, int64_t dsize, terr_t *err)
{
	txn_delta_t *d = delta_of(s, rt);

	d->dcount += dcount;
	d->dsize += dsize;
	return 0;
}

/* Back off after a write conflict: yield first, then sleep with jitter
 * growing to ~10 ms, so two writers that keep colliding spread out. */
static void
conflict_backoff(int attempt, unsigned *seed)
{
	long us;

	if (attempt < 3) {
		sched_yield();
		return;
	}
	us = 50L << (attempt < 11 ? attempt - 3 : 8);
	if (us > 10000)
		us = 10000;
	usleep((useconds_t)(us / 2 + rand_r(seed) % (us / 2 + 1)));
}

int
storage_txn_run(storage_session_t *s, storage_txn_fn fn, void *arg, bool sync, terr_t *err)
{
	terr_t local = TERR_INIT;
	unsigned seed = (unsigned)(uintptr_t)s ^ (unsigned)time(NULL);
	int rc = 0;

	if (s->in_txn)
		return storage_txn_fail(s, fn(s, arg, err));
	s->in_run = true;
	for (int attempt = 0; ; attempt++) {
		terr_clear(&local);
		if ((rc = storage_txn_begin(s, &local)) != 0)
			break;
		rc = fn(s, arg, &local);
		if (rc == 0) {
			if ((rc = storage_txn_commit(s, sync, &local)) == 0)
				break;
		} else {
			storage_txn_rollback(s);
			if (!terr_is_set(&local))
				terr_set(&local, TERR_INTERNAL_ERROR, "transaction function failed");
		}
		if (!storage_is_write_conflict(&local) || attempt >= TXN_RETRY_MAX)
			break;
		/* a capped write retried with its locks held goes again at once */
		if (s->prelocked == NULL)
			conflict_backoff(attempt, &seed);
	}
	s->in_run = false;
	prelocked_release(s);
	if (rc != 0 && err != NULL)
		terr_move(err, &local);
	terr_clear(&local);
	return rc;
}
