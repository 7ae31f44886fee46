/*
 * tb_profile.c -- the database profiler and the slow query log
 * (toolbelt.h): per-database profiling level and filter, the server-wide
 * slowms and sampleRate (mongod's serverGlobalParams), the profile entry
 * in mongod's shape, <db>.system.profile, and the "Slow query" line.
 *
 * The fast path is what every command pays: toolbelt_profile_wanted reads
 * two atomics.  Only a slow command, or one on a profiled database, builds
 * an entry.
 *
 * system.profile is created as mongod does (capped, 1 MB) with no _id
 * index, its entries have no _id (stored at increasing RecordIds), and it
 * is never replicated (repl/oplog.c leaves it out).
 */
#include "toolbelt/toolbelt.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bson/value.h"
#include "common/log.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "query/match.h"

typedef struct db_prof {
	char *db;
	int level;
	bson_t *filter;            /* bson_new()'d copy (libbson only), or NULL */
	match_t *match;            /* compiled filter */
	struct db_prof *next;
} db_prof_t;

static pthread_mutex_t prof_mu = PTHREAD_MUTEX_INITIALIZER;
static db_prof_t *prof_head;
static atomic_int nprofiled;                       /* databases at level > 0 or with a filter */
static atomic_int nevery;                          /* of them, those at level 2 or with a filter (under
                                                    * prof_mu to change): the others profile slow ops only */
static atomic_llong slowms = TOOLBELT_SLOWMS_DEFAULT;
static atomic_llong sample_bits;                    /* a double's bits; 0 = 1.0 (see rate()) */
static atomic_llong next_recid;

static double
rate(void)
{
	long long b = atomic_load(&sample_bits);
	double d;

	if (b == 0)
		return 1.0;
	memcpy(&d, &b, sizeof(d));
	return d;
}

static void
set_rate(double d)
{
	long long b;

	if (d == 1.0) {
		atomic_store(&sample_bits, 0);
		return;
	}
	if (d == 0.0)
		d = -0.0;      /* bits of +0.0 are 0, which stands for 1.0 */
	memcpy(&b, &d, sizeof(b));
	atomic_store(&sample_bits, b);
}

static db_prof_t *
find_db(const char *db)
{
	for (db_prof_t *p = prof_head; p != NULL; p = p->next)
		if (strcmp(p->db, db) == 0)
			return p;
	return NULL;
}

static void
append_rate(bson_t *b, const char *k, double r)
{
	BSON_APPEND_DOUBLE(b, k, r == 0.0 ? 0.0 : r);
}

static void
append_state(bson_t *b, int level, int64_t ms, double r, const bson_t *filter)
{
	BSON_APPEND_INT32(b, "level", level);
	BSON_APPEND_INT32(b, "slowms", (int32_t)ms);
	append_rate(b, "sampleRate", r);
	if (filter != NULL)
		BSON_APPEND_DOCUMENT(b, "filter", filter);
}

int
toolbelt_profile_command(const char *db, int64_t level, bool has_slowms, int64_t new_slowms, bool has_rate,
                         double sample_rate, bool has_filter, const bson_t *filter, bson_t *reply,
                         terr_t *err)
{
	match_t *m = NULL;
	db_prof_t *p;
	int old_level;
	int64_t old_ms = atomic_load(&slowms);
	double old_rate = rate();
	bson_t *old_filter = NULL;
	bool change = (level >= 0 && level <= 2) || has_slowms || has_rate || has_filter;

	if (has_rate && !(sample_rate >= 0.0 && sample_rate <= 1.0))
		return terr_set(err, TERR_BAD_VALUE, "'sampleRate' must be between 0.0 and 1.0 inclusive");
	if (has_filter && filter != NULL) {
		match_options_t mo = {0};
		RET(match_compile(filter, &mo, &m, err));
	}
	pthread_mutex_lock(&prof_mu);
	p = find_db(db);
	old_level = p != NULL ? p->level : 0;
	if (p != NULL && p->filter != NULL)
		old_filter = bson_copy(p->filter);
	if ((level >= 0 && level <= 2) || has_filter) {
		bool was_on = p != NULL && (p->level > 0 || p->match != NULL);
		bool was_every = p != NULL && (p->level == 2 || p->match != NULL);
		bool on, every;
		if (p == NULL) {
			p = tm_alloc0(sizeof(*p));
			p->db = bson_strdup(db);
			p->next = prof_head;
			prof_head = p;
		}
		if (level >= 0 && level <= 2)
			p->level = (int)level;
		if (has_filter) {
			/* filters are only evaluated under prof_mu (toolbelt_profile_op),
			 * so the old one can go now */
			match_free(p->match);
			if (p->filter != NULL)
				bson_destroy(p->filter);
			p->match = m;
			m = NULL;
			p->filter = filter != NULL ? bson_copy(filter) : NULL;
		}
		on = p->level > 0 || p->match != NULL;
		if (on != was_on)
			atomic_fetch_add(&nprofiled, on ? 1 : -1);
		every = p->level == 2 || p->match != NULL;
		if (every != was_every)
			atomic_fetch_add(&nevery, every ? 1 : -1);
	}
	pthread_mutex_unlock(&prof_mu);
	match_free(m);

	BSON_APPEND_INT32(reply, "was", old_level);
	BSON_APPEND_INT32(reply, "slowms", (int32_t)old_ms);
	append_rate(reply, "sampleRate", old_rate);
	if (old_filter != NULL)
		BSON_APPEND_DOCUMENT(reply, "filter", old_filter);
	if (old_filter != NULL || (has_filter && filter != NULL))
		BSON_APPEND_UTF8(reply, "note",
		    "When a filter expression is set, slowms and sampleRate are not used for profiling and slow-query log lines.");
	if (has_slowms)
		atomic_store(&slowms, new_slowms);
	if (has_rate)
		set_rate(sample_rate);
	if (change) {
		bson_t attr = BSON_INITIALIZER, from, to;
		int new_level;
		bson_t *new_filter = NULL;
		pthread_mutex_lock(&prof_mu);
		p = find_db(db);
		new_level = p != NULL ? p->level : 0;
		if (p != NULL && p->filter != NULL)
			new_filter = bson_copy(p->filter);
		pthread_mutex_unlock(&prof_mu);
		BSON_APPEND_DOCUMENT_BEGIN(&attr, "from", &from);
		append_state(&from, old_level, old_ms, old_rate, old_filter);
		bson_append_document_end(&attr, &from);
		BSON_APPEND_DOCUMENT_BEGIN(&attr, "to", &to);
		append_state(&to, new_level, atomic_load(&slowms), rate(), new_filter);
		bson_append_document_end(&attr, &to);
		tlog('I', "COMMAND", 48742, "Profiler settings changed", &attr);
		bson_destroy(&attr);
		if (new_filter != NULL)
			bson_destroy(new_filter);
	}
	if (old_filter != NULL)
		bson_destroy(old_filter);
	return 0;
}

bool
toolbelt_profile_wanted(int64_t micros)
{
	return atomic_load_explicit(&nprofiled, memory_order_relaxed) > 0 ||
	    micros >= atomic_load_explicit(&slowms, memory_order_relaxed) * 1000 || tlog_debug_on("COMMAND", 1);
}

bool
toolbelt_profile_needed(const char *db, int64_t micros)
{
	db_prof_t *p;
	bool need;

	if (micros >= atomic_load_explicit(&slowms, memory_order_relaxed) * 1000 || tlog_debug_on("COMMAND", 1))
		return true;
	/* level 1 everywhere (no filter): only slow ops, no lock to know it */
	if (atomic_load_explicit(&nprofiled, memory_order_relaxed) == 0 ||
	    atomic_load_explicit(&nevery, memory_order_relaxed) == 0)
		return false;
	pthread_mutex_lock(&prof_mu);
	p = find_db(db);
	need = p != NULL && (p->level == 2 || p->match != NULL);
	pthread_mutex_unlock(&prof_mu);
	return need;
}

/* mongod's op names: find is a query, the write commands their own, the
 * rest commands. */
static const char *
op_name(const char *cmd)
{
	static const struct { const char *cmd, *op; } ops[] = {
		{"find", "query"}, {"getMore", "getmore"}, {"insert", "insert"}, {"update", "update"},
		{"delete", "remove"}, {"findAndModify", "command"},
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(ops[i].cmd, cmd) == 0)
			return ops[i].op;
	return "command";
}

static bool
is_query_command(const char *name)
{
	return strcmp(name, "find") == 0 || strcmp(name, "aggregate") == 0 || strcmp(name, "count") == 0 ||
	    strcmp(name, "distinct") == 0 || strcmp(name, "findAndModify") == 0 || strcmp(name, "update") == 0 ||
	    strcmp(name, "delete") == 0;
}

/* nreturned of a cursor reply (firstBatch / nextBatch), -1 when none. */
static int64_t
nreturned(const bson_t *reply)
{
	bson_iter_t it, b;

	if (reply == NULL)
		return -1;
	if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "cursor.firstBatch", &b))
		return toolbelt_iter_count(&b);
	if (bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "cursor.nextBatch", &b))
		return toolbelt_iter_count(&b);
	if (bson_iter_init_find(&it, reply, "values") && BSON_ITER_HOLDS_ARRAY(&it))
		return toolbelt_iter_count(&it);
	return -1;
}

static int64_t
reply_int(const bson_t *reply, const char *k)
{
	bson_iter_t it;

	return reply != NULL && bson_iter_init_find(&it, reply, k) && BSON_ITER_HOLDS_NUMBER(&it)
	    ? bson_iter_as_int64(&it) : -1;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The profile entry of op, in mongod's field order. */
/* The query's hashes, computed once per profiled command (sh 65, ph 9
 * bytes; empty when the command is no query). */
typedef struct hashes {
	char sh[65], ph[9];
} hashes_t;

static void
build_entry(const toolbelt_op_t *op, const hashes_t *hs, bson_t *e)
{
	int64_t millis = op->micros / 1000, n;
	bson_t users;

	BSON_APPEND_UTF8(e, "op", op_name(op->name));
	BSON_APPEND_UTF8(e, "ns", op->ns);
	if (op->cmd->len <= 50 * 1024) {
		BSON_APPEND_DOCUMENT(e, "command", op->cmd);
	} else {
		/* mongod abbreviates commands past 50 KB */
		bson_t t;
		bson_json_opts_t *jo = bson_json_opts_new(BSON_JSON_MODE_RELAXED, 1024);
		char *j = bson_as_json_with_opts(op->cmd, NULL, jo);
		bson_json_opts_destroy(jo);
		BSON_APPEND_DOCUMENT_BEGIN(e, "command", &t);
		BSON_APPEND_UTF8(&t, "$truncated", j != NULL ? j : "");
		bson_append_document_end(e, &t);
		bson_free(j);
	}
	BSON_APPEND_INT64(e, "keysExamined", op->keys_examined);
	BSON_APPEND_INT64(e, "docsExamined", op->docs_examined);
	if (op->reply != NULL) {
		if (strcmp(op->name, "insert") == 0 && (n = reply_int(op->reply, "n")) >= 0)
			BSON_APPEND_INT64(e, "ninserted", n);
		if (strcmp(op->name, "delete") == 0 && (n = reply_int(op->reply, "n")) >= 0)
			BSON_APPEND_INT64(e, "ndeleted", n);
		if (strcmp(op->name, "update") == 0) {
			if ((n = reply_int(op->reply, "n")) >= 0)
				BSON_APPEND_INT64(e, "nMatched", n);
			if ((n = reply_int(op->reply, "nModified")) >= 0)
				BSON_APPEND_INT64(e, "nModified", n);
		}
	}
	BSON_APPEND_INT32(e, "numYield", 0);
	if ((n = nreturned(op->reply)) >= 0)
		BSON_APPEND_INT64(e, "nreturned", n);
	else if (strcmp(op->name, "count") == 0 && (n = reply_int(op->reply, "n")) >= 0)
		BSON_APPEND_INT64(e, "nreturned", 1);
	if (hs->sh[0] != '\0') {
		BSON_APPEND_UTF8(e, "queryHash", hs->ph);
		BSON_APPEND_UTF8(e, "planCacheShapeHash", hs->ph);
		BSON_APPEND_UTF8(e, "queryShapeHash", hs->sh);
	}
	BSON_APPEND_UTF8(e, "queryFramework", "classic");
	if (op->code != 0) {
		BSON_APPEND_INT32(e, "ok", 0);
		BSON_APPEND_UTF8(e, "errMsg", op->errmsg != NULL ? op->errmsg : "");
		BSON_APPEND_INT32(e, "errCode", op->code);
	}
	BSON_APPEND_INT64(e, "responseLength", op->reply != NULL ? op->reply->len : 0);
	BSON_APPEND_UTF8(e, "protocol", "op_msg");
	BSON_APPEND_INT64(e, "millis", millis);
	if (op->plan_summary != NULL && op->plan_summary[0] != '\0')
		BSON_APPEND_UTF8(e, "planSummary", op->plan_summary);
	BSON_APPEND_DATE_TIME(e, "ts", wall_ms());
	BSON_APPEND_UTF8(e, "client", op->client != NULL ? op->client : "");
	if (op->app_name != NULL)
		BSON_APPEND_UTF8(e, "appName", op->app_name);
	BSON_APPEND_ARRAY_BEGIN(e, "allUsers", &users);
	if (op->user != NULL) {
		bson_t u;
		const char *at = strchr(op->user, '@');
		BSON_APPEND_DOCUMENT_BEGIN(&users, "0", &u);
		if (at != NULL) {
			bson_append_utf8(&u, "user", -1, op->user, (int)(at - op->user));
			BSON_APPEND_UTF8(&u, "db", at + 1);
		} else {
			BSON_APPEND_UTF8(&u, "user", op->user);
		}
		bson_append_document_end(&users, &u);
	}
	bson_append_array_end(e, &users);
	BSON_APPEND_UTF8(e, "user", op->user != NULL ? op->user : "");
}

/* mongod's "Slow query" attributes. */
static void
log_slow(const toolbelt_op_t *op, const hashes_t *hs)
{
	bson_t a = BSON_INITIALIZER;
	int64_t n;

	BSON_APPEND_UTF8(&a, "type", "command");
	BSON_APPEND_UTF8(&a, "ns", op->ns);
	if (op->app_name != NULL)
		BSON_APPEND_UTF8(&a, "appName", op->app_name);
	if (op->cmd->len <= 50 * 1024)
		BSON_APPEND_DOCUMENT(&a, "command", op->cmd);
	if (op->plan_summary != NULL && op->plan_summary[0] != '\0')
		BSON_APPEND_UTF8(&a, "planSummary", op->plan_summary);
	BSON_APPEND_INT64(&a, "keysExamined", op->keys_examined);
	BSON_APPEND_INT64(&a, "docsExamined", op->docs_examined);
	if ((n = nreturned(op->reply)) >= 0)
		BSON_APPEND_INT64(&a, "nreturned", n);
	if (hs->sh[0] != '\0') {
		BSON_APPEND_UTF8(&a, "queryHash", hs->ph);
		BSON_APPEND_UTF8(&a, "planCacheShapeHash", hs->ph);
		BSON_APPEND_UTF8(&a, "queryShapeHash", hs->sh);
	}
	if (op->code != 0) {
		BSON_APPEND_UTF8(&a, "ok", "0");
		BSON_APPEND_UTF8(&a, "errMsg", op->errmsg != NULL ? op->errmsg : "");
		BSON_APPEND_INT32(&a, "errCode", op->code);
	}
	BSON_APPEND_INT64(&a, "reslen", op->reply != NULL ? op->reply->len : 0);
	BSON_APPEND_UTF8(&a, "protocol", "op_msg");
	BSON_APPEND_INT64(&a, "durationMillis", op->micros / 1000);
	tlog('I', "COMMAND", 51803, "Slow query", &a);
	bson_destroy(&a);
}

static int
profile_insert(storage_t *st, const char *db, const bson_t *entry, terr_t *err)
{
	storage_session_t *s = storage_session_pool_get(st, err);
	storage_coll_t *c = NULL;
	int ret = -1;
	long long seen, want;
	struct timespec ts;

	if (s == NULL)
		return -1;
	if (storage_coll_get(st, db, "system.profile", &c, NULL) != 0) {
		bson_t *opts = bson_new();
		terr_t e = TERR_INIT;
		BSON_APPEND_BOOL(opts, "capped", true);
		BSON_APPEND_INT64(opts, "size", TOOLBELT_PROFILE_SIZE);
		BSON_APPEND_BOOL(opts, "autoIndexId", false);
		/* two profiled commands may race to create it: either wins */
		storage_coll_create(st, s, db, "system.profile", opts, &e);
		terr_clear(&e);
		bson_destroy(opts);
		if (storage_coll_get(st, db, "system.profile", &c, err) != 0)
			goto err;
	}
	/* increasing RecordIds: the wall clock in microseconds, or one past the
	 * last one handed out */
	clock_gettime(CLOCK_REALTIME, &ts);
	want = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	seen = atomic_load(&next_recid);
	do {
		if (want <= seen)
			want = seen + 1;
	} while (!atomic_compare_exchange_weak(&next_recid, &seen, want));
	ERR(storage_txn_begin(s, err));
	if (storage_doc_insert_at(s, c, (recid_t)want, entry, err) != 0) {
		storage_txn_rollback(s);
		ret = -1;
		goto err;
	}
	ERR(storage_txn_commit(s, false, err));
err:
	storage_coll_release(c);
	storage_session_pool_put(st, s);
	return ret;
}

static __thread unsigned sample_seed;

void
toolbelt_profile_op(storage_t *st, const toolbelt_op_t *op)
{
	db_prof_t *p;
	int level = 0;
	/* COMMAND verbosity >= 1 logs every operation's "Slow query" line
	 * (mongod's shouldLogSlowOpWithSampling); profiling stays on slowms */
	bool verbose = tlog_debug_on("COMMAND", 1);
	bool use_filter = false, slow, log_it, profile_it;
	match_t *m = NULL;
	bson_t entry;
	double r = rate();
	bool sampled;
	hashes_t hashes;

	if (op->ns != NULL && strstr(op->ns, ".system.profile") != NULL)
		return;
	slow = op->micros >= atomic_load(&slowms) * 1000;
	/* the common case first, before any entry is built: a fast command on
	 * a database at level 0 or 1 without a filter */
	if (!slow && !verbose) {
		bool filtered = false;
		pthread_mutex_lock(&prof_mu);
		if ((p = find_db(op->db)) != NULL) {
			level = p->level;
			filtered = p->match != NULL;
		}
		pthread_mutex_unlock(&prof_mu);
		if (!filtered && level < 2)
			return;
	}
	if (sample_seed == 0)
		sample_seed = (unsigned)(uintptr_t)&sample_seed ^ (unsigned)time(NULL);
	sampled = r >= 1.0 || ((double)rand_r(&sample_seed) / ((double)RAND_MAX + 1.0)) < r;
	hashes.sh[0] = hashes.ph[0] = '\0';
	if (is_query_command(op->name))
		toolbelt_query_hashes(op->db, op->cmd, hashes.sh, hashes.ph);
	bson_init(&entry);
	build_entry(op, &hashes, &entry);
	pthread_mutex_lock(&prof_mu);
	if ((p = find_db(op->db)) != NULL) {
		level = p->level;
		m = p->match;
		use_filter = m != NULL;
	}
	if (use_filter) {
		/* a filter replaces slowms and sampleRate for both (evaluated
		 * under the lock: a profile command may replace it) */
		terr_t e = TERR_INIT;
		log_it = profile_it = match_exec(m, &entry, NULL, &e) == 1;
		terr_clear(&e);
	}
	pthread_mutex_unlock(&prof_mu);
	if (!use_filter) {
		log_it = (slow && sampled) || verbose;
		profile_it = sampled && (level == 2 || (level == 1 && slow));
	}
	if (log_it)
		log_slow(op, &hashes);
	if (profile_it) {
		terr_t e = TERR_INIT;
		if (profile_insert(st, op->db, &entry, &e) != 0) {
			bson_t a = BSON_INITIALIZER;
			BSON_APPEND_UTF8(&a, "ns", op->ns);
			BSON_APPEND_UTF8(&a, "error", e.msg != NULL ? e.msg : "");
			tlog('W', "COMMAND", 20703, "Failed to write to the profile collection", &a);
			bson_destroy(&a);
		}
		terr_clear(&e);
	}
	bson_destroy(&entry);
}
