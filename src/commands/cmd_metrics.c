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
 * start at zero and are not persisted, as mongod's.  Namespaces are kept in
 * a small table under one mutex, dropped never (a dropped collection's
 * counters stay, as in mongod until its next restart): at most
 * METRICS_MAX_NS of them, later ones are not counted.
 */
#include "commands/commands_private.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bson/value.h"

#define METRICS_MAX_NS 4096
#define METRICS_BUCKETS 48

typedef struct tcount {
	int64_t time_us, count;
} tcount_t;

typedef struct lat {
	int64_t ops, latency_us;
	int64_t hist[METRICS_BUCKETS];   /* bucket b: latencies in [2^b, 2^(b+1)) us */
} lat_t;

typedef struct ns_stats {
	char *ns;
	tcount_t total, read_lock, write_lock, queries, getmore, insert, update, remove, commands;
	lat_t reads, writes, cmds, txns;
} ns_stats_t;

static pthread_mutex_t m_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t (*cmd_counts)[2];          /* per command table row: total, failed */
static int cmd_rows;
static int64_t unknown_total;
static ns_stats_t *ns_tab;
static int ns_n, ns_cap;

/* Namespaces are found through an open-addressing table of indexes into
 * ns_tab (slot = index + 1, 0 empty), sized for METRICS_MAX_NS: a command
 * costs one hash of its namespace, not a walk of every namespace seen. */
#define NS_SLOTS (METRICS_MAX_NS * 2)
static int32_t ns_slot[NS_SLOTS];

static uint32_t
ns_hash(const char *ns, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)ns[i]) * 16777619u;
	return h;
}

static ns_stats_t *
ns_get(const char *ns, size_t len)
{
	uint32_t i = ns_hash(ns, len) & (NS_SLOTS - 1);

	for (; ns_slot[i] != 0; i = (i + 1) & (NS_SLOTS - 1)) {
		ns_stats_t *s = &ns_tab[ns_slot[i] - 1];
		if (strcmp(s->ns, ns) == 0)
			return s;
	}
	if (ns_n >= METRICS_MAX_NS)
		return NULL;
	if (ns_n == ns_cap) {
		int cap = ns_cap ? ns_cap * 2 : 16;

		ns_tab = bson_realloc(ns_tab, (size_t)cap * sizeof *ns_tab);
		memset(&ns_tab[ns_cap], 0, (size_t)(cap - ns_cap) * sizeof *ns_tab);
		ns_cap = cap;
	}
	ns_tab[ns_n].ns = bson_strdup(ns);
	ns_slot[i] = ns_n + 1;
	return &ns_tab[ns_n++];
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

static uint8_t *row_kind;                /* metrics_kind of each command table row */

static void
lat_add(lat_t *l, int64_t us)
{
	int b = 0;

	l->ops++;
	l->latency_us += us;
	while (b < METRICS_BUCKETS - 1 && ((int64_t)1 << (b + 1)) <= us)
		b++;
	l->hist[b]++;
}

static void
tc_add(tcount_t *t, int64_t us)
{
	t->time_us += us;
	t->count++;
}

void
cmd_metrics_record(const cmd_def_t *def, const char *name, const char *db, const bson_t *body,
                   int64_t elapsed_us, bool failed)
{
	bson_iter_t it;
	char ns[512];
	const char *coll = NULL;
	int tn;
	const cmd_def_t *tab = cmd_table(&tn);
	bool in_tab;
	uint8_t kind;

	(void)name;
	pthread_mutex_lock(&m_lock);
	if (cmd_counts == NULL) {
		cmd_rows = tn;
		cmd_counts = bson_malloc0((size_t)tn * sizeof *cmd_counts);
		row_kind = bson_malloc0((size_t)tn);
		for (int i = 0; i < tn; i++)
			row_kind[i] = metrics_kind(tab[i].name);
	}
	if (def == NULL) {
		unknown_total++;
		pthread_mutex_unlock(&m_lock);
		return;
	}
	if (def >= tab && def < tab + cmd_rows) {
		cmd_counts[def - tab][0]++;
		if (failed)
			cmd_counts[def - tab][1]++;
	}
	/* the namespace: getMore names it in `collection`, the rest first */
	in_tab = def >= tab && def < tab + cmd_rows;
	kind = in_tab ? row_kind[def - tab] : metrics_kind(def->name);
	if (db != NULL && body != NULL) {
		if (kind & MK_GETMORE) {
			if (bson_iter_init_find(&it, body, "collection") && BSON_ITER_HOLDS_UTF8(&it))
				coll = bson_iter_utf8(&it, NULL);
		} else if (bson_iter_init(&it, body) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it)) {
			coll = bson_iter_utf8(&it, NULL);
		}
	}
	if (coll != NULL && coll[0] != '\0') {
		ns_stats_t *s;
		/* "<db>.<coll>", cut at sizeof ns - 1 bytes as snprintf would */
		size_t dl = strnlen(db, sizeof ns - 1), cl, len = dl;

		memcpy(ns, db, dl);
		if (len < sizeof ns - 1)
			ns[len++] = '.';
		cl = strnlen(coll, sizeof ns - 1 - len);
		memcpy(ns + len, coll, cl);
		len += cl;
		ns[len] = '\0';
		if ((s = ns_get(ns, len)) != NULL) {
			tc_add(&s->total, elapsed_us);
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
	pthread_mutex_unlock(&m_lock);
}

void
cmd_metrics_commands_append(bson_t *out)
{
	int tn;
	const cmd_def_t *tab = cmd_table(&tn);
	bson_t one;

	pthread_mutex_lock(&m_lock);
	BSON_APPEND_INT64(out, "<UNKNOWN>", unknown_total);
	for (int i = 0; i < tn; i++) {
		int64_t total = cmd_counts != NULL && i < cmd_rows ? cmd_counts[i][0] : 0;
		int64_t failed = cmd_counts != NULL && i < cmd_rows ? cmd_counts[i][1] : 0;

		BSON_APPEND_DOCUMENT_BEGIN(out, tab[i].name, &one);
		BSON_APPEND_INT64(&one, "failed", failed);
		BSON_APPEND_INT64(&one, "total", total);
		bson_append_document_end(out, &one);
	}
	pthread_mutex_unlock(&m_lock);
}

static void
tc_append(bson_t *out, const char *k, const tcount_t *t)
{
	bson_t d;

	/* mongod's Top: appendNumber, an int when it fits */
	BSON_APPEND_DOCUMENT_BEGIN(out, k, &d);
	if (t->time_us <= INT32_MAX)
		BSON_APPEND_INT32(&d, "time", (int32_t)t->time_us);
	else
		BSON_APPEND_INT64(&d, "time", t->time_us);
	if (t->count <= INT32_MAX)
		BSON_APPEND_INT32(&d, "count", (int32_t)t->count);
	else
		BSON_APPEND_INT64(&d, "count", t->count);
	bson_append_document_end(out, &d);
}

void
cmd_metrics_top_append(bson_t *totals)
{
	bson_t d;

	BSON_APPEND_UTF8(totals, "note", "all times in microseconds");
	pthread_mutex_lock(&m_lock);
	for (int i = 0; i < ns_n; i++) {
		const ns_stats_t *s = &ns_tab[i];

		BSON_APPEND_DOCUMENT_BEGIN(totals, s->ns, &d);
		tc_append(&d, "total", &s->total);
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
	pthread_mutex_unlock(&m_lock);
}

static void
lat_append(bson_t *out, const char *k, const lat_t *l, bool histograms)
{
	bson_t d, h, b;
	char key[16];
	uint32_t n = 0;

	BSON_APPEND_DOCUMENT_BEGIN(out, k, &d);
	BSON_APPEND_INT64(&d, "latency", l->latency_us);
	BSON_APPEND_INT64(&d, "ops", l->ops);
	BSON_APPEND_INT64(&d, "queryableEncryptionLatencyMicros", 0);
	if (histograms) {
		BSON_APPEND_ARRAY_BEGIN(&d, "histogram", &h);
		for (int i = 0; i < METRICS_BUCKETS; i++) {
			if (l->hist[i] == 0)
				continue;
			bv_array_key(n++, key);
			BSON_APPEND_DOCUMENT_BEGIN(&h, key, &b);
			BSON_APPEND_INT64(&b, "micros", i == 0 ? 0 : (int64_t)1 << i);
			BSON_APPEND_INT64(&b, "count", l->hist[i]);
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

	pthread_mutex_lock(&m_lock);
	for (int i = 0; i < ns_n; i++)
		if (strcmp(ns_tab[i].ns, ns) == 0)
			s = &ns_tab[i];
	lat_append(out, "reads", s ? &s->reads : &zero, histograms);
	lat_append(out, "writes", s ? &s->writes : &zero, histograms);
	lat_append(out, "commands", s ? &s->cmds : &zero, histograms);
	lat_append(out, "transactions", s ? &s->txns : &zero, histograms);
	pthread_mutex_unlock(&m_lock);
}

CMD_HANDLER(cmd_top)
{
	bson_t totals;

	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "totals", &totals);
	cmd_metrics_top_append(&totals);
	bson_append_document_end(c->reply, &totals);
	return 0;
}
