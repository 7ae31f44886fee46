/*
 * cmd_metrics.c -- what the server counts per command and per collection,
 * for the tools that read it: serverStatus().metrics.commands (each
 * command's total and failed runs, "<UNKNOWN>" for names no row has), the
 * `top` command (per namespace: time and count of reads, writes, queries,
 * getMores, inserts, updates, removes and other commands, as mongod's Top),
 * and $collStats' latencyStats (reads, writes, commands, transactions: ops,
 * total latency in microseconds and a histogram of powers of two, as
 * mongod's OperationLatencyHistogram).
 *
 * The counts are the process's (one engine per process in tamgad); they
 * start at zero and are not persisted, as mongod's.  Recording takes no
 * lock: every counter is one relaxed atomic add (as mongod's Counter64), so
 * commands of several connections do not queue on one mutex, and a reader
 * sums what it loads (each counter exact, the set not one snapshot, as in
 * mongod).  Namespaces are kept in a table of stable pointers found without
 * a lock (a slot is published with a release store once its entry is
 * complete); only the first command of a new namespace takes the mutex to
 * add it.  They are dropped never (a dropped collection's counters stay, as
 * in mongod until its next restart): at most METRICS_MAX_NS of them, later
 * ones are not counted.
 */
#include "commands/commands_private.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bson/value.h"

#define METRICS_MAX_NS 4096
#define METRICS_BUCKETS 48
#define NS_BUF 512               /* "<db>.<coll>" built for a lookup, NUL included */

typedef struct tcount {
	int64_t time_us, count;
} tcount_t;

/* ops is not stored: it is the sum of the buckets (one atomic add less a
 * command) */
typedef struct lat {
	int64_t latency_us;
	int64_t hist[METRICS_BUCKETS];   /* bucket b: latencies in [2^b, 2^(b+1)) us */
} lat_t;

/* Top's total is not stored either: every command counts under exactly one
 * of readLock / writeLock, so total is their sum (as in mongod's Top, which
 * adds each command to total and to one of the two) */
typedef struct ns_stats {
	char *ns;
	size_t ns_len;                    /* strlen(ns) */
	tcount_t read_lock, write_lock, queries, getmore, insert, update, remove, commands;
	lat_t reads, writes, cmds, txns;
} ns_stats_t;

static pthread_mutex_t m_lock = PTHREAD_MUTEX_INITIALIZER;   /* adding a namespace */
static pthread_once_t rows_once = PTHREAD_ONCE_INIT;
static bool rows_ready;                  /* rows_init has run (acquire / release) */
static int64_t (*cmd_counts)[2];          /* per command table row: total, failed (atomic adds) */
static uint8_t *row_kind;                /* metrics_kind of each command table row */
static int cmd_rows;
static int64_t unknown_total;
static ns_stats_t *ns_tab[METRICS_MAX_NS];   /* stable: an entry never moves */
static int ns_n;                         /* entries published: atomic loads / stores */

/* Namespaces are found through an open-addressing table of indexes into
 * ns_tab (slot = index + 1, 0 empty), sized for METRICS_MAX_NS: a command
 * costs one hash of its namespace, not a walk of every namespace seen.
 * A slot is stored (release) only after its entry is complete. */
#define NS_SLOTS (METRICS_MAX_NS * 2)
static int32_t ns_slot[NS_SLOTS];

#define CNT_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define CNT_GET(p) __atomic_load_n((p), __ATOMIC_RELAXED)

static uint32_t
ns_hash(const char *ns, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)ns[i]) * 16777619u;
	return h;
}

/* The entry of ns (len bytes), from its slot on; NULL at an empty slot,
 * whose number goes to *empty. */
static ns_stats_t *
ns_probe(const char *ns, uint32_t i, uint32_t *empty)
{
	int32_t v;

	for (; (v = __atomic_load_n(&ns_slot[i], __ATOMIC_ACQUIRE)) != 0; i = (i + 1) & (NS_SLOTS - 1)) {
		ns_stats_t *s = ns_tab[v - 1];
		if (strcmp(s->ns, ns) == 0)
			return s;
	}
	*empty = i;
	return NULL;
}

static ns_stats_t *
ns_get(const char *ns, size_t len)
{
	uint32_t h = ns_hash(ns, len) & (NS_SLOTS - 1), i;
	ns_stats_t *s = ns_probe(ns, h, &i);
	int n;

	if (s != NULL)
		return s;
	pthread_mutex_lock(&m_lock);
	/* another thread may have added it (or a neighbour) meanwhile */
	if ((s = ns_probe(ns, h, &i)) == NULL && (n = __atomic_load_n(&ns_n, __ATOMIC_RELAXED)) < METRICS_MAX_NS) {
		s = bson_malloc0(sizeof *s);
		s->ns = bson_strdup(ns);
		s->ns_len = strlen(ns);
		ns_tab[n] = s;
		__atomic_store_n(&ns_n, n + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&ns_slot[i], n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&m_lock);
	return s;
}

/* Whether s is the namespace "<db>.<coll>" (coll: coll_len bytes), as the
 * name cmd_metrics_record would build: false for a name with a NUL inside
 * coll or one too long for its buffer (cut there), which the caller builds
 * and looks up. */
static bool
ns_is(const ns_stats_t *s, const char *db, const char *coll, uint32_t coll_len)
{
	const char *p = s->ns;
	size_t i = 0;

	while (db[i] != '\0' && p[i] == db[i])
		i++;
	if (db[i] != '\0' || p[i] != '.' || s->ns_len != i + 1 + (size_t)coll_len || s->ns_len >= NS_BUF - 1)
		return false;
	p += i + 1;
	for (uint32_t j = 0; j < coll_len; j++)
		if (p[j] != coll[j] || coll[j] == '\0')
			return false;
	return true;
}

/* What `top` and latencyStats count a command as, from its name. */
enum { MK_QUERY = 1, MK_GETMORE = 2, MK_INSERT = 4, MK_UPDATE = 8, MK_REMOVE = 16, MK_READ = 32, MK_WRITE = 64 };

static uint8_t
metrics_kind(const char *n)
{
	uint8_t k = 0;

	if (strcmp(n, "find") == 0 || strcmp(n, "aggregate") == 0)
		k |= MK_QUERY | MK_READ;
	else if (strcmp(n, "getMore") == 0)
		k |= MK_GETMORE | MK_READ;
	else if (strcmp(n, "count") == 0 || strcmp(n, "distinct") == 0)
		k |= MK_READ;
	else if (strcmp(n, "insert") == 0)
		k |= MK_INSERT | MK_WRITE;
	else if (strcmp(n, "update") == 0 || strcmp(n, "findAndModify") == 0)
		k |= MK_UPDATE | MK_WRITE;
	else if (strcmp(n, "delete") == 0)
		k |= MK_REMOVE | MK_WRITE;
	return k;
}

static void
rows_init(void)
{
	int tn;
	const cmd_def_t *tab = cmd_table(&tn);

	cmd_rows = tn;
	cmd_counts = bson_malloc0((size_t)tn * sizeof *cmd_counts);
	row_kind = bson_malloc0((size_t)tn);
	for (int i = 0; i < tn; i++)
		row_kind[i] = metrics_kind(tab[i].name);
}

static void
lat_add(lat_t *l, int64_t us)
{
	/* the highest bit set, capped at the last bucket */
	int b = us <= 1 ? 0 : 63 - __builtin_clzll((unsigned long long)us);

	if (b > METRICS_BUCKETS - 1)
		b = METRICS_BUCKETS - 1;
	CNT_ADD(&l->latency_us, us);
	CNT_ADD(&l->hist[b], 1);
}

static void
tc_add(tcount_t *t, int64_t us)
{
	CNT_ADD(&t->time_us, us);
	CNT_ADD(&t->count, 1);
}

void
cmd_metrics_record(const cmd_def_t *def, const bson_iter_t *first, const char *db, const bson_t *body,
                   int64_t elapsed_us, bool failed)
{
	bson_iter_t it;
	char ns[NS_BUF];
	const char *coll = NULL;
	uint32_t coll_len = 0;
	int tn;
	const cmd_def_t *tab = cmd_table(&tn);
	bool in_tab;
	uint8_t kind;

	/* rows_init done (published with a release store): no pthread_once call */
	if (!__atomic_load_n(&rows_ready, __ATOMIC_ACQUIRE)) {
		pthread_once(&rows_once, rows_init);
		__atomic_store_n(&rows_ready, true, __ATOMIC_RELEASE);
	}
	if (def == NULL) {
		CNT_ADD(&unknown_total, 1);
		return;
	}
	if (def >= tab && def < tab + cmd_rows) {
		CNT_ADD(&cmd_counts[def - tab][0], 1);
		if (failed)
			CNT_ADD(&cmd_counts[def - tab][1], 1);
	}
	/* the namespace: getMore names it in `collection`, the rest first */
	in_tab = def >= tab && def < tab + cmd_rows;
	kind = in_tab ? row_kind[def - tab] : metrics_kind(def->name);
	if (db != NULL && body != NULL) {
		if (kind & MK_GETMORE) {
			if (bson_iter_init_find(&it, body, "collection") && BSON_ITER_HOLDS_UTF8(&it))
				coll = bson_iter_utf8(&it, &coll_len);
		} else if (first != NULL) {
			if (BSON_ITER_HOLDS_UTF8(first))
				coll = bson_iter_utf8(first, &coll_len);
		} else if (bson_iter_init(&it, body) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it)) {
			coll = bson_iter_utf8(&it, &coll_len);
		}
	}
	if (coll != NULL && coll[0] != '\0') {
		/* this thread's last namespace (entries never move or go):
		 * a connection's commands mostly repeat one */
		static __thread ns_stats_t *last;
		ns_stats_t *s = last;

		/* the same namespace as this thread's last: "<db>.<coll>" compared
		 * in place, byte by byte (names are short: no strnlen / memcmp
		 * calls); anything else takes the build below */
		if (s == NULL || !ns_is(s, db, coll, coll_len)) {
			/* "<db>.<coll>", cut at sizeof ns - 1 bytes as snprintf would */
			size_t dl = strnlen(db, sizeof ns - 1), cl, len = dl;

			memcpy(ns, db, dl);
			if (len < sizeof ns - 1)
				ns[len++] = '.';
			cl = strnlen(coll, sizeof ns - 1 - len);
			memcpy(ns + len, coll, cl);
			len += cl;
			ns[len] = '\0';
			if ((s = ns_get(ns, len)) != NULL)
				last = s;
		}
		if (s != NULL) {
			tc_add((def->flags & CMDF_WRITE) ? &s->write_lock : &s->read_lock, elapsed_us);
			if (kind & MK_QUERY)
				tc_add(&s->queries, elapsed_us);
			else if (kind & MK_GETMORE)
				tc_add(&s->getmore, elapsed_us);
			else if (kind & MK_INSERT)
				tc_add(&s->insert, elapsed_us);
			else if (kind & MK_UPDATE)
				tc_add(&s->update, elapsed_us);
			else if (kind & MK_REMOVE)
				tc_add(&s->remove, elapsed_us);
			else
				tc_add(&s->commands, elapsed_us);
			if (kind & MK_READ)
				lat_add(&s->reads, elapsed_us);
			else if (kind & MK_WRITE)
				lat_add(&s->writes, elapsed_us);
			else
				lat_add(&s->cmds, elapsed_us);
		}
	}
}

void
cmd_metrics_commands_append(bson_t *out)
{
	int tn;
	const cmd_def_t *tab = cmd_table(&tn);
	bson_t one;

	pthread_once(&rows_once, rows_init);
	BSON_APPEND_INT64(out, "<UNKNOWN>", CNT_GET(&unknown_total));
	for (int i = 0; i < tn; i++) {
		int64_t total = i < cmd_rows ? CNT_GET(&cmd_counts[i][0]) : 0;
		int64_t failed = i < cmd_rows ? CNT_GET(&cmd_counts[i][1]) : 0;

		BSON_APPEND_DOCUMENT_BEGIN(out, tab[i].name, &one);
		BSON_APPEND_INT64(&one, "failed", failed);
		BSON_APPEND_INT64(&one, "total", total);
		bson_append_document_end(out, &one);
	}
}

static void
tc_append(bson_t *out, const char *k, const tcount_t *t)
{
	bson_t d;
	int64_t time_us = CNT_GET(&t->time_us), count = CNT_GET(&t->count);

	/* mongod's Top: appendNumber, an int when it fits */
	BSON_APPEND_DOCUMENT_BEGIN(out, k, &d);
	if (time_us <= INT32_MAX)
		BSON_APPEND_INT32(&d, "time", (int32_t)time_us);
	else
		BSON_APPEND_INT64(&d, "time", time_us);
	if (count <= INT32_MAX)
		BSON_APPEND_INT32(&d, "count", (int32_t)count);
	else
		BSON_APPEND_INT64(&d, "count", count);
	bson_append_document_end(out, &d);
}

void
cmd_metrics_top_append(bson_t *totals)
{
	bson_t d;
	int n = __atomic_load_n(&ns_n, __ATOMIC_ACQUIRE);

	BSON_APPEND_UTF8(totals, "note", "all times in microseconds");
	for (int i = 0; i < n; i++) {
		const ns_stats_t *s = ns_tab[i];

		BSON_APPEND_DOCUMENT_BEGIN(totals, s->ns, &d);
		{
			tcount_t total = {CNT_GET(&s->read_lock.time_us) + CNT_GET(&s->write_lock.time_us),
			    CNT_GET(&s->read_lock.count) + CNT_GET(&s->write_lock.count)};
			tc_append(&d, "total", &total);
		}
		tc_append(&d, "readLock", &s->read_lock);
		tc_append(&d, "writeLock", &s->write_lock);
		tc_append(&d, "queries", &s->queries);
		tc_append(&d, "getmore", &s->getmore);
		tc_append(&d, "insert", &s->insert);
		tc_append(&d, "update", &s->update);
		tc_append(&d, "remove", &s->remove);
		tc_append(&d, "commands", &s->commands);
		bson_append_document_end(totals, &d);
	}
}

static void
lat_append(bson_t *out, const char *k, const lat_t *l, bool histograms)
{
	bson_t d, h, b;
	char key[16];
	uint32_t n = 0;
	int64_t ops = 0;

	for (int i = 0; i < METRICS_BUCKETS; i++)
		ops += CNT_GET(&l->hist[i]);
	BSON_APPEND_DOCUMENT_BEGIN(out, k, &d);
	BSON_APPEND_INT64(&d, "latency", CNT_GET(&l->latency_us));
	BSON_APPEND_INT64(&d, "ops", ops);
	BSON_APPEND_INT64(&d, "queryableEncryptionLatencyMicros", 0);
	if (histograms) {
		BSON_APPEND_ARRAY_BEGIN(&d, "histogram", &h);
		for (int i = 0; i < METRICS_BUCKETS; i++) {
			int64_t count = CNT_GET(&l->hist[i]);

			if (count == 0)
				continue;
			bv_array_key(n++, key);
			BSON_APPEND_DOCUMENT_BEGIN(&h, key, &b);
			BSON_APPEND_INT64(&b, "micros", i == 0 ? 0 : (int64_t)1 << i);
			BSON_APPEND_INT64(&b, "count", count);
			bson_append_document_end(&h, &b);
		}
		bson_append_array_end(&d, &h);
	}
	bson_append_document_end(out, &d);
}

void
cmd_metrics_latency_append(const char *ns, bool histograms, bson_t *out)
{
	static const lat_t zero;
	const ns_stats_t *s = NULL;
	int n = __atomic_load_n(&ns_n, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (strcmp(ns_tab[i]->ns, ns) == 0)
			s = ns_tab[i];
	lat_append(out, "reads", s ? &s->reads : &zero, histograms);
	lat_append(out, "writes", s ? &s->writes : &zero, histograms);
	lat_append(out, "commands", s ? &s->cmds : &zero, histograms);
	lat_append(out, "transactions", s ? &s->txns : &zero, histograms);
}

CMD_HANDLER(cmd_top)
{
	bson_t totals;

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "totals", &totals);
	cmd_metrics_top_append(&totals);
	bson_append_document_end(c->reply, &totals);
	return 0;
}
