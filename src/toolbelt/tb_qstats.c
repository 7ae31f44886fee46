/*
 * tb_qstats.c -- query shapes and the $queryStats store (toolbelt.h).
 *
 * A query shape is the command with every literal replaced by its type, as
 * mongod's query_shape does: {find: "c", filter: {a: 5, b: {$in: [1, 2]}}}
 * becomes {cmdNs: {db, coll: "c"}, command: "find", filter: {a: {$eq:
 * "?number"}, b: {$in: "?array<?number>"}}}.  Field names, operators and
 * field paths ("$a") stay; the options that shape the plan (sort,
 * projection, skip, limit, hint...) are kept, skip and limit as "?number".
 * The key adds the client's metadata and collectionType.
 *
 * The store is one hash table of entries with mongod's metrics, bounded by
 * internalQueryStatsCacheSize: past it the least recently seen entries go.
 * Collection is off by default (internalQueryStatsRateLimit 0, as mongod's).
 */
#include "toolbelt/toolbelt.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "bson/iter.h"
#include "bson/value.h"
#include "common/mem.h"

/* ---- literal replacement ----------------------------------------------------- */

static const char *
type_placeholder(bson_type_t t)
{
	switch (t) {
	case BSON_TYPE_INT32: case BSON_TYPE_INT64: case BSON_TYPE_DOUBLE: case BSON_TYPE_DECIMAL128:
		return "?number";
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: return "?string";
	case BSON_TYPE_OID: return "?objectId";
	case BSON_TYPE_DATE_TIME: return "?date";
	case BSON_TYPE_BOOL: return "?bool";
	case BSON_TYPE_NULL: return "?null";
	case BSON_TYPE_BINARY: return "?binData";
	case BSON_TYPE_TIMESTAMP: return "?timestamp";
	case BSON_TYPE_REGEX: return "?regex";
	case BSON_TYPE_DOCUMENT: return "?object";
	case BSON_TYPE_MINKEY: return "?minKey";
	case BSON_TYPE_MAXKEY: return "?maxKey";
	case BSON_TYPE_UNDEFINED: return "?undefined";
	case BSON_TYPE_CODE: case BSON_TYPE_CODEWSCOPE: return "?javascript";
	default: return "?unknown";
	}
}

/* "?array<?number>", "?array<>" for mixed types, "[]" for empty. */
static void
append_array_placeholder(bson_t *out, const char *k, const bson_iter_t *arr)
{
	bson_iter_t it;
	const char *t = NULL;
	bool mixed = false, any = false;
	char buf[64];

	if (bson_iter_recurse(arr, &it))
		while (bson_iter_next(&it)) {
			const char *p = BSON_ITER_HOLDS_ARRAY(&it) ? "?array" : type_placeholder(bson_iter_type(&it));
			any = true;
			if (t == NULL)
				t = p;
			else if (strcmp(t, p) != 0)
				mixed = true;
		}
	if (!any) {
		bson_t e;
		BSON_APPEND_ARRAY_BEGIN(out, k, &e);
		bson_append_array_end(out, &e);
		return;
	}
	snprintf(buf, sizeof(buf), "?array<%s>", mixed ? "" : t);
	BSON_APPEND_UTF8(out, k, buf);
}

static void
append_literal(bson_t *out, const char *k, const bson_iter_t *it)
{
	if (BSON_ITER_HOLDS_ARRAY(it))
		append_array_placeholder(out, k, it);
	else
		BSON_APPEND_UTF8(out, k, type_placeholder(bson_iter_type(it)));
}

static void shape_filter(const bson_t *f, bson_t *out, int depth);

/* An aggregation expression: "$path" and "$$var" stay, objects are entered
 * (operators keep their names), other literals become their type. */
static void
shape_expr_value(bson_t *out, const char *k, const bson_iter_t *it, int depth)
{
	if (BSON_ITER_HOLDS_UTF8(it) && bson_iter_utf8(it, NULL)[0] == '$') {
		BSON_APPEND_UTF8(out, k, bson_iter_utf8(it, NULL));
	} else if (BSON_ITER_HOLDS_DOCUMENT(it) && depth < 100) {
		bson_iter_t c;
		bson_t sub;
		BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
		if (bson_iter_recurse(it, &c))
			while (bson_iter_next(&c))
				shape_expr_value(&sub, bson_iter_key(&c), &c, depth + 1);
		bson_append_document_end(out, &sub);
	} else if (BSON_ITER_HOLDS_ARRAY(it) && depth < 100) {
		/* an operator's argument list: each argument is an expression */
		bson_iter_t c;
		bson_t sub;
		BSON_APPEND_ARRAY_BEGIN(out, k, &sub);
		if (bson_iter_recurse(it, &c))
			while (bson_iter_next(&c))
				shape_expr_value(&sub, bson_iter_key(&c), &c, depth + 1);
		bson_append_array_end(out, &sub);
	} else {
		append_literal(out, k, it);
	}
}

/* {$op: v, ...} under a field. */
static void
shape_operators(const bson_iter_t *ops, bson_t *out, int depth)
{
	bson_iter_t it;

	if (!bson_iter_recurse(ops, &it))
		return;
	while (bson_iter_next(&it)) {
		const char *op = bson_iter_key(&it);
		if ((strcmp(op, "$elemMatch") == 0 || strcmp(op, "$not") == 0) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
		    depth < 100) {
			bson_iter_t c;
			bson_t sub, inner;
			const uint8_t *d;
			uint32_t l;
			bson_iter_recurse(&it, &c);
			if (bson_iter_next(&c) && bson_iter_key(&c)[0] == '$') {
				BSON_APPEND_DOCUMENT_BEGIN(out, op, &sub);
				shape_operators(&it, &sub, depth + 1);
				bson_append_document_end(out, &sub);
			} else {
				bson_iter_document(&it, &l, &d);
				bson_init_static(&inner, d, l);
				BSON_APPEND_DOCUMENT_BEGIN(out, op, &sub);
				shape_filter(&inner, &sub, depth + 1);
				bson_append_document_end(out, &sub);
			}
		} else if (strcmp(op, "$exists") == 0 || strcmp(op, "$type") == 0 || strcmp(op, "$options") == 0) {
			bv_append(out, op, -1, bson_iter_value(&it));
		} else if (strcmp(op, "$regex") == 0) {
			BSON_APPEND_UTF8(out, op, "?string");
		} else {
			append_literal(out, op, &it);
		}
	}
}

static void
shape_filter(const bson_t *f, bson_t *out, int depth)
{
	bson_iter_t it, c;

	if (!bson_iter_init(&it, f))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if ((strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0 || strcmp(k, "$nor") == 0) &&
		    BSON_ITER_HOLDS_ARRAY(&it) && depth < 100) {
			bson_t arr, one, sub;
			const uint8_t *d;
			uint32_t l;
			BSON_APPEND_ARRAY_BEGIN(out, k, &arr);
			bson_iter_recurse(&it, &c);
			while (bson_iter_next(&c)) {
				if (!BSON_ITER_HOLDS_DOCUMENT(&c))
					continue;
				bson_iter_document(&c, &l, &d);
				bson_init_static(&one, d, l);
				BSON_APPEND_DOCUMENT_BEGIN(&arr, bson_iter_key(&c), &sub);
				shape_filter(&one, &sub, depth + 1);
				bson_append_document_end(&arr, &sub);
			}
			bson_append_array_end(out, &arr);
		} else if (strcmp(k, "$expr") == 0) {
			shape_expr_value(out, k, &it, depth + 1);
		} else if (strcmp(k, "$jsonSchema") == 0 || strcmp(k, "$comment") == 0) {
			bv_append(out, k, -1, bson_iter_value(&it));
		} else if (strcmp(k, "$text") == 0) {
			bson_t sub;
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
			shape_operators(&it, &sub, depth + 1);
			bson_append_document_end(out, &sub);
		} else if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &c) && bson_iter_next(&c) &&
		           bson_iter_key(&c)[0] == '$') {
			bson_t sub;
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
			shape_operators(&it, &sub, depth + 1);
			bson_append_document_end(out, &sub);
		} else {
			bson_t sub;
			/* {a: v}: an equality, as mongod serializes it */
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
			if (BSON_ITER_HOLDS_REGEX(&it))
				BSON_APPEND_UTF8(&sub, "$regex", "?string");
			else
				append_literal(&sub, "$eq", &it);
			bson_append_document_end(out, &sub);
		}
	}
}

/* Strings that name things (collections, fields) in pipeline stages. */
static bool
identifier_field(const char *stage, const char *k)
{
	static const char *const ids[] = {"from", "localField", "foreignField", "as", "connectFromField",
		"connectToField", "includeArrayIndex", "coll", "db", "into", "path", NULL};

	if (strcmp(stage, "$count") == 0 || strcmp(stage, "$out") == 0 || strcmp(stage, "$unset") == 0)
		return true;
	for (int i = 0; ids[i] != NULL; i++)
		if (strcmp(ids[i], k) == 0)
			return true;
	return false;
}

static void
shape_stage_value(const char *stage, bson_t *out, const char *k, const bson_iter_t *it, int depth)
{
	bool keep_numbers = strcmp(stage, "$project") == 0 || strcmp(stage, "$sort") == 0;

	if (BSON_ITER_HOLDS_UTF8(it) && (identifier_field(stage, k) || bson_iter_utf8(it, NULL)[0] == '$')) {
		BSON_APPEND_UTF8(out, k, bson_iter_utf8(it, NULL));
	} else if (keep_numbers && (BSON_ITER_HOLDS_NUMBER(it) || BSON_ITER_HOLDS_BOOL(it))) {
		bv_append(out, k, -1, bson_iter_value((bson_iter_t *)it));
	} else if (BSON_ITER_HOLDS_DOCUMENT(it) && depth < 100) {
		bson_iter_t c;
		bson_t sub;
		BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
		if (bson_iter_recurse(it, &c))
			while (bson_iter_next(&c))
				shape_stage_value(stage, &sub, bson_iter_key(&c), &c, depth + 1);
		bson_append_document_end(out, &sub);
	} else if (BSON_ITER_HOLDS_ARRAY(it) && strcmp(k, "pipeline") == 0 && depth < 100) {
		bson_iter_t c, st;
		bson_t sub, sd;
		BSON_APPEND_ARRAY_BEGIN(out, k, &sub);
		if (bson_iter_recurse(it, &c))
			while (bson_iter_next(&c))
				if (BSON_ITER_HOLDS_DOCUMENT(&c) && bson_iter_recurse(&c, &st) && bson_iter_next(&st)) {
					BSON_APPEND_DOCUMENT_BEGIN(&sub, bson_iter_key(&c), &sd);
					shape_stage_value(bson_iter_key(&st), &sd, bson_iter_key(&st), &st, depth + 1);
					bson_append_document_end(&sub, &sd);
				}
		bson_append_array_end(out, &sub);
	} else {
		shape_expr_value(out, k, it, depth);
	}
}

static void
shape_pipeline(const bson_iter_t *pl, bson_t *out)
{
	bson_iter_t c, st;
	bson_t arr, sd, f, sub;
	const uint8_t *d;
	uint32_t l;

	BSON_APPEND_ARRAY_BEGIN(out, "pipeline", &arr);
	if (bson_iter_recurse(pl, &c))
		while (bson_iter_next(&c)) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&c) || !bson_iter_recurse(&c, &st) || !bson_iter_next(&st))
				continue;
			BSON_APPEND_DOCUMENT_BEGIN(&arr, bson_iter_key(&c), &sd);
			if (strcmp(bson_iter_key(&st), "$match") == 0 && BSON_ITER_HOLDS_DOCUMENT(&st)) {
				bson_iter_document(&st, &l, &d);
				bson_init_static(&f, d, l);
				BSON_APPEND_DOCUMENT_BEGIN(&sd, "$match", &sub);
				shape_filter(&f, &sub, 1);
				bson_append_document_end(&sd, &sub);
			} else if ((strcmp(bson_iter_key(&st), "$limit") == 0 || strcmp(bson_iter_key(&st), "$skip") == 0 ||
			            strcmp(bson_iter_key(&st), "$sample") == 0) && !BSON_ITER_HOLDS_DOCUMENT(&st)) {
				append_literal(&sd, bson_iter_key(&st), &st);
			} else {
				shape_stage_value(bson_iter_key(&st), &sd, bson_iter_key(&st), &st, 1);
			}
			bson_append_document_end(&arr, &sd);
		}
	bson_append_array_end(out, &arr);
}

/* The queryShape of cmd (find, aggregate, count, distinct) into out. */
static bool
build_shape(const char *db, const bson_t *cmd, bson_t *out, const char **command)
{
	bson_iter_t it, first;
	bson_t ns, sub, f;
	const uint8_t *d;
	uint32_t l;
	const char *name;

	if (!bson_iter_init(&first, cmd) || !bson_iter_next(&first))
		return false;
	name = bson_iter_key(&first);
	if (strcmp(name, "find") != 0 && strcmp(name, "aggregate") != 0 && strcmp(name, "count") != 0 &&
	    strcmp(name, "distinct") != 0)
		return false;
	*command = name;
	BSON_APPEND_DOCUMENT_BEGIN(out, "cmdNs", &ns);
	BSON_APPEND_UTF8(&ns, "db", db);
	if (BSON_ITER_HOLDS_UTF8(&first))
		BSON_APPEND_UTF8(&ns, "coll", bson_iter_utf8(&first, NULL));
	bson_append_document_end(out, &ns);
	BSON_APPEND_UTF8(out, "command", name);
	bson_iter_init(&it, cmd);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if ((strcmp(k, "filter") == 0 || strcmp(k, "query") == 0) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_document(&it, &l, &d);
			bson_init_static(&f, d, l);
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
			shape_filter(&f, &sub, 0);
			bson_append_document_end(out, &sub);
		} else if (strcmp(k, "pipeline") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			shape_pipeline(&it, out);
		} else if (strcmp(k, "sort") == 0 || strcmp(k, "hint") == 0 || strcmp(k, "key") == 0 ||
		           strcmp(k, "collation") == 0 || strcmp(k, "returnKey") == 0 ||
		           strcmp(k, "showRecordId") == 0 || strcmp(k, "tailable") == 0 ||
		           strcmp(k, "awaitData") == 0 || strcmp(k, "allowPartialResults") == 0 ||
		           strcmp(k, "singleBatch") == 0) {
			bv_append(out, k, -1, bson_iter_value(&it));
		} else if (strcmp(k, "projection") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			shape_stage_value("$project", out, k, &it, 0);
		} else if (strcmp(k, "skip") == 0 || strcmp(k, "limit") == 0 || strcmp(k, "max") == 0 ||
		           strcmp(k, "min") == 0) {
			append_literal(out, k, &it);
		} else if (strcmp(k, "let") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			shape_expr_value(out, k, &it, 0);
		}
	}
	return true;
}

/* ---- hashes ----------------------------------------------------------------- */

static void
hex_upper(const uint8_t *h, size_t n, char *out)
{
	static const char x[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = x[h[i] >> 4];
		out[2 * i + 1] = x[h[i] & 15];
	}
	out[2 * n] = '\0';
}

static void
sha256(const uint8_t *data, size_t len, uint8_t out[32])
{
	SHA256(data, len, out);
}

void
toolbelt_query_hashes(const char *db, const bson_t *cmd, char *shape_hash, char *plan_hash)
{
	bson_t shape = BSON_INITIALIZER, plan = BSON_INITIALIZER;
	const char *command = "";
	uint8_t h[32];
	bson_iter_t it;

	if (!build_shape(db, cmd, &shape, &command)) {
		/* writes: the shape of their query part */
		bson_iter_t first;
		bson_t q = BSON_INITIALIZER;
		if (bson_iter_init(&first, cmd) && bson_iter_next(&first)) {
			BSON_APPEND_UTF8(&shape, "command", bson_iter_key(&first));
			if ((bson_iter_init_find(&it, cmd, "query") || bson_iter_init_find(&it, cmd, "filter")) &&
			    BSON_ITER_HOLDS_DOCUMENT(&it)) {
				const uint8_t *d;
				uint32_t l;
				bson_t f;
				bson_iter_document(&it, &l, &d);
				bson_init_static(&f, d, l);
				shape_filter(&f, &q, 0);
			}
			BSON_APPEND_DOCUMENT(&shape, "filter", &q);
		}
		bson_destroy(&q);
	}
	sha256(bson_get_data(&shape), shape.len, h);
	if (shape_hash != NULL)
		hex_upper(h, 32, shape_hash);
	/* the plan cache's shape: filter, sort, projection, collation, without
	 * the namespace and the limits */
	if (bson_iter_init(&it, &shape))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "filter") == 0 || strcmp(k, "query") == 0 || strcmp(k, "sort") == 0 ||
			    strcmp(k, "projection") == 0 || strcmp(k, "collation") == 0 || strcmp(k, "pipeline") == 0)
				bv_append(&plan, k, -1, bson_iter_value(&it));
		}
	sha256(bson_get_data(&plan), plan.len, h);
	if (plan_hash != NULL)
		hex_upper(h, 4, plan_hash);
	bson_destroy(&shape);
	bson_destroy(&plan);
}

/* ---- the store ----------------------------------------------------------------- */

typedef struct agg_metric {
	int64_t sum, max, min, sumsq;
} agg_metric_t;

typedef struct qs_entry {
	uint64_t h;
	uint64_t id;               /* unique for the process: the fast path's handle */
	uint8_t *key;              /* the key's BSON bytes */
	uint32_t key_len;
	uint8_t shape_hash[32];
	int64_t exec_count, last_micros;
	agg_metric_t total_micros, first_micros, docs_returned, keys_examined, docs_examined;
	int64_t first_seen_ms, last_seen_ms;
	struct qs_entry *hnext;          /* bucket chain */
	struct qs_entry *lprev, *lnext;  /* recency list, newest first */
} qs_entry_t;

#define QS_BUCKETS 4096

static pthread_mutex_t qs_mu = PTHREAD_MUTEX_INITIALIZER;
static qs_entry_t *qs_bucket[QS_BUCKETS];
static qs_entry_t *qs_newest, *qs_oldest;
static int64_t qs_bytes, qs_entries, qs_evicted;
static atomic_llong qs_window_sec, qs_window_count;
static char qs_cache_spec[32] = "1%";
static int64_t qs_cache_bytes;               /* 0: not computed yet */

static int64_t
mem_total(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);

	return pages > 0 && ps > 0 ? (int64_t)pages * ps : (int64_t)1 << 30;
}

static void evict_locked(void);

int
toolbelt_qstats_set_cache_size(const char *spec, terr_t *err)
{
	char *end;
	double v = strtod(spec, &end);
	int64_t bytes;

	if (end == spec || v < 0 || v > 1e15)
		return terr_set(err, TERR_BAD_VALUE, "Unable to parse memory size string: %s", spec);
	if (strcmp(end, "%") == 0) {
		if (v > 100)
			return terr_set(err, TERR_BAD_VALUE, "Percentage must be between 0 and 100: %s", spec);
		bytes = (int64_t)((double)mem_total() * v / 100.0);
	} else if (strcasecmp(end, "MB") == 0) {
		bytes = (int64_t)(v * 1024 * 1024);
	} else if (strcasecmp(end, "GB") == 0) {
		bytes = (int64_t)(v * 1024 * 1024 * 1024);
	} else if (strcasecmp(end, "KB") == 0) {
		bytes = (int64_t)(v * 1024);
	} else {
		return terr_set(err, TERR_BAD_VALUE, "Unable to parse memory size string: %s", spec);
	}
	if (strlen(spec) >= sizeof(qs_cache_spec))
		return terr_set(err, TERR_BAD_VALUE, "Unable to parse memory size string: %s", spec);
	pthread_mutex_lock(&qs_mu);
	snprintf(qs_cache_spec, sizeof(qs_cache_spec), "%s", spec);
	qs_cache_bytes = bytes;
	evict_locked();
	pthread_mutex_unlock(&qs_mu);
	return 0;
}

const char *
toolbelt_qstats_cache_size(void)
{
	return qs_cache_spec;
}

bool
toolbelt_qstats_wanted(int64_t lim)
{
	struct timespec ts;
	long long sec;

	if (lim == 0)
		return false;
	if (lim < 0)
		return true;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	sec = ts.tv_sec;
	if (atomic_load(&qs_window_sec) != sec) {
		atomic_store(&qs_window_sec, sec);
		atomic_store(&qs_window_count, 0);
	}
	return atomic_fetch_add(&qs_window_count, 1) < lim;
}

static void
metric_add(agg_metric_t *m, int64_t v, bool first)
{
	if (first) {
		m->min = INT64_MAX;
	}
	m->sum += v;
	if (v > m->max)
		m->max = v;
	if (v < m->min)
		m->min = v;
	if (v < 3037000499LL && v > -3037000499LL)
		m->sumsq += v * v;
	else
		m->sumsq = INT64_MAX;
}

static size_t
entry_bytes(const qs_entry_t *e)
{
	return sizeof(*e) + e->key_len;
}

static void
list_unlink(qs_entry_t *e)
{
	if (e->lprev != NULL)
		e->lprev->lnext = e->lnext;
	else
		qs_newest = e->lnext;
	if (e->lnext != NULL)
		e->lnext->lprev = e->lprev;
	else
		qs_oldest = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void
list_push(qs_entry_t *e)
{
	e->lnext = qs_newest;
	e->lprev = NULL;
	if (qs_newest != NULL)
		qs_newest->lprev = e;
	qs_newest = e;
	if (qs_oldest == NULL)
		qs_oldest = e;
}

static void
evict_locked(void)
{
	if (qs_cache_bytes == 0)
		qs_cache_bytes = mem_total() / 100;
	while (qs_bytes > qs_cache_bytes && qs_oldest != NULL) {
		qs_entry_t *e = qs_oldest, **pp = &qs_bucket[e->h % QS_BUCKETS];
		list_unlink(e);
		while (*pp != e)
			pp = &(*pp)->hnext;
		*pp = e->hnext;
		qs_bytes -= (int64_t)entry_bytes(e);
		qs_entries--;
		qs_evicted++;
		bson_free(e->key);
		bson_free(e);
	}
}

static uint64_t
fnv(const uint8_t *d, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= d[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- open cursors: their getMores add to the query's entry ---------------------- */

#define QS_CURSORS 4096
typedef struct qs_cursor {
	int64_t id;                /* 0: free */
	uint64_t h;                /* the entry's key hash */
} qs_cursor_t;
static qs_cursor_t qs_cursors[QS_CURSORS];   /* open addressing by id, under qs_mu */
static atomic_int qs_ncursors;

static qs_cursor_t *
cursor_slot(int64_t id, bool insert)
{
	uint64_t i = ((uint64_t)id * 0x9E3779B97F4A7C15ULL) % QS_CURSORS;

	for (int probe = 0; probe < 16; probe++, i = (i + 1) % QS_CURSORS) {
		if (qs_cursors[i].id == id)
			return &qs_cursors[i];
		if (insert && qs_cursors[i].id == 0)
			return &qs_cursors[i];
	}
	/* full around it: the insert replaces the first probed slot (that
	 * cursor's getMores are then not added) */
	return insert ? &qs_cursors[((uint64_t)id * 0x9E3779B97F4A7C15ULL) % QS_CURSORS] : NULL;
}

/* reply.cursor, walked with the lean iterator (false without one). */
static bool
reply_cursor(const bson_t *reply, biter_t *cur)
{
	biter_t it;

	if (reply == NULL || !biter_init(&it, bson_get_data(reply), reply->len) ||
	    !biter_find(&it, "cursor", 6) || it.type != BSON_TYPE_DOCUMENT)
		return false;
	return biter_init(cur, it.val, it.val_len);
}

static int64_t
reply_cursor_id(const bson_t *reply)
{
	biter_t c;
	bson_value_t v;

	if (!reply_cursor(reply, &c) || !biter_find(&c, "id", 2))
		return 0;
	biter_value(&c, &v);
	switch ((int)v.value_type) {
	case BSON_TYPE_INT64: return v.value.v_int64;
	case BSON_TYPE_INT32: return v.value.v_int32;
	case BSON_TYPE_DOUBLE: return (int64_t)v.value.v_double;
	default: return 0;
	}
}

/* The documents a reply returned; *cursor_id (when not NULL) gets its
 * cursor's id (0: none) from the same walk. */
static int64_t
docs_returned(const bson_t *reply, int64_t *cursor_id)
{
	bson_iter_t it;
	biter_t c, b;

	if (cursor_id != NULL)
		*cursor_id = 0;
	if (reply == NULL)
		return 0;
	if (reply_cursor(reply, &c)) {
		int64_t n = 0;
		while (biter_next_inline(&c)) {
			if (c.key_len == 10 && memcmp(c.key, "firstBatch", 10) == 0 && biter_init(&b, c.val, c.val_len)) {
				while (biter_next_inline(&b))
					n++;
			} else if (c.key_len == 2 && memcmp(c.key, "id", 2) == 0 && cursor_id != NULL) {
				bson_value_t v;
				biter_value(&c, &v);
				*cursor_id = v.value_type == BSON_TYPE_INT64 ? v.value.v_int64 :
				    v.value_type == BSON_TYPE_INT32 ? v.value.v_int32 : 0;
			}
		}
		return n;
	}
	if (bson_iter_init_find(&it, reply, "values") && BSON_ITER_HOLDS_ARRAY(&it))
		return toolbelt_iter_count(&it);
	if (bson_iter_init_find(&it, reply, "n"))
		return 1;
	return 0;
}

/*
 * The fast path: a query whose key was made before is found again without
 * building its shape.  Its "material" is what the key is a function of,
 * never coarser: the database, the collection type, the client metadata's
 * bytes, the command's first element, and in their order the fields the key
 * reads -- each whole, except a flat equality filter ({a: v, b: w}) as
 * its names and the values' type bytes (the shape keeps only
 * "?number"-like placeholders of them), skip/limit/max/min scalars as
 * their type byte, batchSize/maxTimeMS/comment as their name (the key
 * writes a constant for them).  Equal material therefore means an equal
 * key; the material is compared whole (no hash is trusted), and the entry
 * it names is found again by its id (an evicted one is simply not there).
 */
#define QS_FAST_SLOTS 512
#define QS_FAST_MAX 1024

typedef struct qs_fast {
	uint64_t fh;               /* hash of the material (0: free) */
	uint64_t eid, h;           /* the entry's id and key hash */
	uint32_t len;
	uint8_t mat[QS_FAST_MAX];
} qs_fast_t;

static qs_fast_t *qs_fast;          /* under qs_mu, made on first use */
static uint64_t qs_next_id = 1;     /* under qs_mu */

typedef struct mat {
	uint8_t b[QS_FAST_MAX];
	uint32_t n;
	bool ok;
} mat_t;

static void
mat_put(mat_t *m, const void *p, size_t len)
{
	if (!m->ok || len > QS_FAST_MAX - m->n) {
		m->ok = false;
		return;
	}
	memcpy(m->b + m->n, p, len);
	m->n += (uint32_t)len;
}

static void
mat_byte(mat_t *m, uint8_t c)
{
	mat_put(m, &c, 1);
}

/* The element's key (with its NUL) and type byte. */
static void
mat_name(mat_t *m, const biter_t *it)
{
	mat_byte(m, (uint8_t)it->type);
	mat_put(m, it->key, it->key_len + 1u);
}

/* What the key does with each command field (none: the field is not in it). */
enum { MAT_NONE, MAT_FILTER, MAT_WHOLE, MAT_SCALAR, MAT_NAMED };

static const struct {
	const char *name;
	uint32_t len;
	int kind;
} mat_fields[] = {
	{"filter", 6, MAT_FILTER}, {"query", 5, MAT_FILTER},
	{"pipeline", 8, MAT_WHOLE}, {"sort", 4, MAT_WHOLE}, {"hint", 4, MAT_WHOLE}, {"key", 3, MAT_WHOLE},
	{"collation", 9, MAT_WHOLE}, {"returnKey", 9, MAT_WHOLE}, {"showRecordId", 12, MAT_WHOLE},
	{"tailable", 8, MAT_WHOLE}, {"awaitData", 9, MAT_WHOLE}, {"allowPartialResults", 19, MAT_WHOLE},
	{"singleBatch", 11, MAT_WHOLE}, {"projection", 10, MAT_WHOLE}, {"let", 3, MAT_WHOLE},
	{"readConcern", 11, MAT_WHOLE}, {"allowDiskUse", 12, MAT_WHOLE}, {"noCursorTimeout", 15, MAT_WHOLE},
	{"apiVersion", 10, MAT_WHOLE}, {"apiStrict", 9, MAT_WHOLE},
	{"skip", 4, MAT_SCALAR}, {"limit", 5, MAT_SCALAR}, {"max", 3, MAT_SCALAR}, {"min", 3, MAT_SCALAR},
	{"batchSize", 9, MAT_NAMED}, {"maxTimeMS", 9, MAT_NAMED}, {"comment", 7, MAT_NAMED},
};
#define MAT_NFIELDS (sizeof(mat_fields) / sizeof(mat_fields[0]))

/* mat_fields' indexes by name length: a field is looked up among the
 * names of its length (at most 6, those of 9 bytes), not the whole table.
 * Made once (pthread_once) from mat_fields, so the two cannot disagree. */
static uint8_t mat_by_len[32][8];   /* indexes + 1, 0 ends (room for 7) */
static pthread_once_t mat_once = PTHREAD_ONCE_INIT;

static void
mat_index(void)
{
	for (size_t i = 0; i < MAT_NFIELDS; i++) {
		uint8_t *row = mat_by_len[mat_fields[i].len];
		size_t j = 0;
		while (row[j] != 0)
			j++;
		if (j < 7)
			row[j] = (uint8_t)(i + 1);
		else
			abort();   /* a table edit put 8 names of one length: widen the rows */
	}
}

static int
mat_kind(const char *k, uint32_t len)
{
	const uint8_t *row;

	if (len >= 32 || k[0] == '$')
		return MAT_NONE;
	pthread_once(&mat_once, mat_index);
	row = mat_by_len[len];
	for (size_t j = 0; row[j] != 0; j++) {
		size_t i = row[j] - 1u;
		if (mat_fields[i].name[0] == k[0] && memcmp(mat_fields[i].name, k, len) == 0)
			return mat_fields[i].kind;
	}
	return MAT_NONE;
}

/* A hash of the material (word at a time; equality is checked on the
 * bytes, so this only spreads the slots). */
static uint64_t
mat_hash(const uint8_t *d, size_t n)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;

	for (; n >= 8; d += 8, n -= 8) {
		memcpy(&w, d, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, d, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/* A filter of plain fields with scalar values: names and type bytes only
 * (written as the walk goes, taken back when a field is not plain). */
static void
mat_filter(mat_t *m, const biter_t *f)
{
	biter_t it;
	uint32_t at = m->n;
	bool flat = biter_init(&it, f->val, f->val_len);

	mat_byte(m, 'F');
	while (flat && biter_next_inline(&it)) {
		if (it.key[0] == '$' || it.type == BSON_TYPE_DOCUMENT || it.type == BSON_TYPE_ARRAY ||
		    it.type == BSON_TYPE_REGEX)
			flat = false;
		else
			mat_name(m, &it);
	}
	if (!flat) {
		m->n = at;
		mat_byte(m, 'R');
		mat_put(m, f->val, f->val_len);
	}
}

/* The material of op, in m; *hashed is where the bytes the hash covers
 * begin (the client metadata before them is compared, not hashed: it is
 * the same on every query of a connection).  False when there is none
 * (too large, no command). */
static bool
make_material(const toolbelt_op_t *op, const bson_t *client_md, mat_t *m, uint32_t *hashed)
{
	biter_t it;
	bool first = true;
	uint32_t mdlen = client_md != NULL ? client_md->len : 0;

	m->n = 0;
	m->ok = true;
	mat_put(m, &mdlen, sizeof(mdlen));
	if (client_md != NULL)
		mat_put(m, bson_get_data(client_md), client_md->len);
	*hashed = m->n;
	mat_put(m, &mdlen, sizeof(mdlen));
	mat_put(m, op->db, strlen(op->db) + 1);
	mat_byte(m, op->code == 26);
	if (!biter_init(&it, bson_get_data(op->cmd), op->cmd->len))
		return false;
	while (m->ok && biter_next_inline(&it)) {
		int kind;
		if (first) {
			mat_name(m, &it);
			mat_put(m, it.val, it.val_len);
			first = false;
			continue;
		}
		kind = mat_kind(it.key, it.key_len);
		if (kind == MAT_FILTER && it.type == BSON_TYPE_DOCUMENT) {
			mat_name(m, &it);
			mat_filter(m, &it);
		} else if (kind == MAT_FILTER || kind == MAT_WHOLE) {
			mat_name(m, &it);
			mat_put(m, it.val, it.val_len);
		} else if (kind == MAT_SCALAR) {
			mat_name(m, &it);
			if (it.type == BSON_TYPE_DOCUMENT || it.type == BSON_TYPE_ARRAY)
				mat_put(m, it.val, it.val_len);
		} else if (kind == MAT_NAMED) {
			mat_put(m, it.key, it.key_len + 1u);
		}
	}
	return m->ok && !first;
}

static void entry_count_locked(qs_entry_t *e, const toolbelt_op_t *op, bool fresh);

/* The entry of material m, if the fast table knows it (under qs_mu). */
static qs_entry_t *
fast_find_locked(const mat_t *m, uint64_t fh)
{
	qs_fast_t *f;
	qs_entry_t *e;

	if (qs_fast == NULL)
		return NULL;
	f = &qs_fast[fh % QS_FAST_SLOTS];
	if (f->fh != fh || f->len != m->n || memcmp(f->mat, m->b, m->n) != 0)
		return NULL;
	for (e = qs_bucket[f->h % QS_BUCKETS]; e != NULL; e = e->hnext)
		if (e->id == f->eid)
			return e;
	return NULL;
}

static void
fast_store_locked(const mat_t *m, uint64_t fh, const qs_entry_t *e)
{
	qs_fast_t *f;

	if (qs_fast == NULL)
		qs_fast = bson_malloc0(sizeof(*qs_fast) * QS_FAST_SLOTS);
	f = &qs_fast[fh % QS_FAST_SLOTS];
	f->fh = fh;
	f->eid = e->id;
	f->h = e->h;
	f->len = m->n;
	memcpy(f->mat, m->b, m->n);
}

/* What recording op adds to its entry e (under qs_mu). */
static void
entry_count_locked(qs_entry_t *e, const toolbelt_op_t *op, bool fresh)
{
	int64_t cid;

	if (fresh || e != qs_newest) {   /* the newest already: nothing to move */
		if (!fresh)
			list_unlink(e);
		list_push(e);
	}
	e->exec_count++;
	e->last_micros = op->micros;
	metric_add(&e->total_micros, op->micros, fresh);
	metric_add(&e->first_micros, op->micros, fresh);
	if (op->batch_known) {   /* counted when the batch was written */
		cid = op->batch_cursor_id;
		metric_add(&e->docs_returned, op->batch_n, fresh);
	} else {
		metric_add(&e->docs_returned, docs_returned(op->reply, &cid), fresh);
	}
	metric_add(&e->keys_examined, op->keys_examined, fresh);
	metric_add(&e->docs_examined, op->docs_examined, fresh);
	e->last_seen_ms = now_ms();
	if (cid != 0) {
		qs_cursor_t *slot = cursor_slot(cid, true);
		if (slot->id == 0)
			atomic_fetch_add(&qs_ncursors, 1);
		slot->id = cid;
		slot->h = e->h;
	}
}

void
toolbelt_qstats_record(const toolbelt_op_t *op, const bson_t *client_md)
{
	bson_t key = BSON_INITIALIZER, shape;
	const char *command = NULL;
	qs_entry_t *e;
	uint64_t h, fh = 0;
	bool fresh = false;
	bson_iter_t it;
	mat_t mb, *m = &mb;
	uint32_t hashed = 0;
	bool have_mat = make_material(op, client_md, m, &hashed);

	if (have_mat) {
		fh = mat_hash(m->b + hashed, m->n - hashed) | 1;
		pthread_mutex_lock(&qs_mu);
		if ((e = fast_find_locked(m, fh)) != NULL) {
			entry_count_locked(e, op, false);
			evict_locked();
			pthread_mutex_unlock(&qs_mu);
			return;
		}
		pthread_mutex_unlock(&qs_mu);
	}
	BSON_APPEND_DOCUMENT_BEGIN(&key, "queryShape", &shape);
	if (!build_shape(op->db, op->cmd, &shape, &command)) {
		bson_append_document_end(&key, &shape);
		bson_destroy(&key);
		return;
	}
	bson_append_document_end(&key, &shape);
	/* the key's options outside the shape, as mongod keeps them */
	if (bson_iter_init(&it, op->cmd))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "batchSize") == 0 || strcmp(k, "maxTimeMS") == 0)
				BSON_APPEND_UTF8(&key, k, "?number");
			else if (strcmp(k, "comment") == 0)
				BSON_APPEND_UTF8(&key, k, "?string");
			else if (strcmp(k, "readConcern") == 0 || strcmp(k, "allowDiskUse") == 0 ||
			         strcmp(k, "noCursorTimeout") == 0 || strcmp(k, "apiVersion") == 0 ||
			         strcmp(k, "apiStrict") == 0)
				bv_append(&key, k, -1, bson_iter_value(&it));
		}
	if (client_md != NULL)
		BSON_APPEND_DOCUMENT(&key, "client", client_md);
	BSON_APPEND_UTF8(&key, "collectionType", op->code == 26 ? "nonExistent" : "collection");
	h = fnv(bson_get_data(&key), key.len);
	pthread_mutex_lock(&qs_mu);
	for (e = qs_bucket[h % QS_BUCKETS]; e != NULL; e = e->hnext)
		if (e->h == h && e->key_len == key.len && memcmp(e->key, bson_get_data(&key), key.len) == 0)
			break;
	if (e == NULL) {
		e = tm_malloc0(sizeof(*e));
		e->h = h;
		e->id = qs_next_id++;
		e->key_len = key.len;
		e->key = bson_malloc(key.len);
		memcpy(e->key, bson_get_data(&key), key.len);
		bson_iter_init_find(&it, &key, "queryShape");
		{
			const uint8_t *d;
			uint32_t l;
			bson_iter_document(&it, &l, &d);
			sha256(d, l, e->shape_hash);
		}
		e->hnext = qs_bucket[h % QS_BUCKETS];
		qs_bucket[h % QS_BUCKETS] = e;
		e->first_seen_ms = now_ms();
		qs_bytes += (int64_t)entry_bytes(e);
		qs_entries++;
		fresh = true;
	}
	entry_count_locked(e, op, fresh);
	if (have_mat)
		fast_store_locked(m, fh, e);
	evict_locked();
	pthread_mutex_unlock(&qs_mu);
	bson_destroy(&key);
}

bool
toolbelt_qstats_cursors_open(void)
{
	return atomic_load_explicit(&qs_ncursors, memory_order_relaxed) > 0;
}

void
toolbelt_qstats_getmore(const toolbelt_op_t *op, int64_t cursor_id)
{
	qs_cursor_t *slot;
	qs_entry_t *e;
	int64_t n = 0;
	bson_iter_t it, b;

	if (op->reply != NULL && bson_iter_init(&it, op->reply) &&
	    bson_iter_find_descendant(&it, "cursor.nextBatch", &b))
		n = toolbelt_iter_count(&b);
	pthread_mutex_lock(&qs_mu);
	if ((slot = cursor_slot(cursor_id, false)) != NULL) {
		for (e = qs_bucket[slot->h % QS_BUCKETS]; e != NULL; e = e->hnext)
			if (e->h == slot->h)
				break;
		if (e != NULL) {
			/* the query's totals (not its count): mongod records a query
			 * once, with every batch in it */
			e->total_micros.sum += op->micros;
			e->last_micros += op->micros;
			e->docs_returned.sum += n;
			e->keys_examined.sum += op->keys_examined;
			e->docs_examined.sum += op->docs_examined;
			e->last_seen_ms = now_ms();
		}
		if (op->reply == NULL || reply_cursor_id(op->reply) == 0) {
			slot->id = 0;
			atomic_fetch_sub(&qs_ncursors, 1);
		}
	}
	pthread_mutex_unlock(&qs_mu);
}

/* ---- $queryStats output ------------------------------------------------------- */

static void
append_metric(bson_t *out, const char *k, const agg_metric_t *m)
{
	bson_t sub;

	BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
	BSON_APPEND_INT64(&sub, "sum", m->sum);
	BSON_APPEND_INT64(&sub, "max", m->max);
	BSON_APPEND_INT64(&sub, "min", m->min);
	BSON_APPEND_INT64(&sub, "sumOfSquares", m->sumsq);
	bson_append_document_end(out, &sub);
}

/* base64 of HMAC-SHA-256(key, s) */
static void
hmac_id(const uint8_t *key, size_t klen, const char *s, size_t slen, char *out, size_t outlen)
{
	uint8_t mac[32];
	unsigned int mlen = 0;
	unsigned char b64[64];

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)s, slen, mac, &mlen);
	EVP_EncodeBlock(b64, mac, (int)mlen);
	snprintf(out, outlen, "%s", (const char *)b64);
}

/* "a.b" -> "HMAC(a).HMAC(b)"; a leading "$" (a field path) is kept. */
static void
hmac_path(const uint8_t *key, size_t klen, const char *path, char *out, size_t outlen)
{
	size_t n = 0;
	const char *p = path, *dot;

	if (*p == '$' && n + 1 < outlen) {
		out[n++] = '$';
		p++;
	}
	out[n] = '\0';
	while (*p != '\0' && n < outlen) {
		char one[64];
		dot = strchr(p, '.');
		size_t len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		hmac_id(key, klen, p, len, one, sizeof(one));
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", one, dot != NULL ? "." : "");
		if (dot == NULL)
			break;
		p = dot + 1;
	}
}

/* Copy v into out under k with identifiers transformed: field names (keys
 * not starting with '$') and field paths. */
static void
transform_value(const uint8_t *hk, size_t hl, bson_t *out, const char *k, const bson_iter_t *it, bool names,
                int depth)
{
	char tk[1024];

	if (names && k[0] != '$' && !(k[0] >= '0' && k[0] <= '9')) {
		hmac_path(hk, hl, k, tk, sizeof(tk));
		k = tk;
	}
	if ((BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) && depth < 100) {
		bson_iter_t c;
		bson_t sub;
		bool arr = BSON_ITER_HOLDS_ARRAY(it);
		if (arr)
			BSON_APPEND_ARRAY_BEGIN(out, k, &sub);
		else
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &sub);
		if (bson_iter_recurse(it, &c))
			while (bson_iter_next(&c))
				transform_value(hk, hl, &sub, bson_iter_key(&c), &c, true, depth + 1);
		if (arr)
			bson_append_array_end(out, &sub);
		else
			bson_append_document_end(out, &sub);
	} else if (BSON_ITER_HOLDS_UTF8(it) && bson_iter_utf8(it, NULL)[0] == '$' &&
	           bson_iter_utf8(it, NULL)[1] != '$') {
		char tv[1024];
		hmac_path(hk, hl, bson_iter_utf8(it, NULL), tv, sizeof(tv));
		BSON_APPEND_UTF8(out, k, tv);
	} else {
		bv_append(out, k, -1, bson_iter_value((bson_iter_t *)it));
	}
}

static void
transform_shape(const uint8_t *hk, size_t hl, const bson_t *shape, bson_t *out)
{
	bson_iter_t it, c;

	bson_iter_init(&it, shape);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "cmdNs") == 0 && bson_iter_recurse(&it, &c)) {
			bson_t ns;
			BSON_APPEND_DOCUMENT_BEGIN(out, k, &ns);
			while (bson_iter_next(&c)) {
				char tv[128];
				if (BSON_ITER_HOLDS_UTF8(&c)) {
					uint32_t l;
					const char *s = bson_iter_utf8(&c, &l);
					hmac_id(hk, hl, s, l, tv, sizeof(tv));
					BSON_APPEND_UTF8(&ns, bson_iter_key(&c), tv);
				}
			}
			bson_append_document_end(out, &ns);
		} else if (strcmp(k, "filter") == 0 || strcmp(k, "query") == 0 || strcmp(k, "sort") == 0 ||
		           strcmp(k, "projection") == 0 || strcmp(k, "pipeline") == 0 || strcmp(k, "hint") == 0 ||
		           strcmp(k, "let") == 0) {
			/* inside these every key is a field name or an operator */
			transform_value(hk, hl, out, k, &it, false, 0);
		} else {
			bv_append(out, k, -1, bson_iter_value(&it));
		}
	}
}

void
toolbelt_qstats_rows(const uint8_t *hmac_key, size_t hmac_len, bson_t *out)
{
	int n = 0;
	int64_t as_of = now_ms();

	pthread_mutex_lock(&qs_mu);
	for (qs_entry_t *e = qs_newest; e != NULL; e = e->lnext) {
		bson_t row, key, metrics, kd;
		char idx[16], hex[65];
		const char *ik;
		uint8_t kh[32];
		unsigned char b64[64];
		bson_iter_t it;

		bson_init_static(&kd, e->key, e->key_len);
		bson_uint32_to_string((uint32_t)n++, &ik, idx, sizeof(idx));
		BSON_APPEND_DOCUMENT_BEGIN(out, ik, &row);
		BSON_APPEND_DOCUMENT_BEGIN(&row, "key", &key);
		bson_iter_init(&it, &kd);
		while (bson_iter_next(&it)) {
			if (hmac_key != NULL && strcmp(bson_iter_key(&it), "queryShape") == 0) {
				bson_t sh, tsh;
				const uint8_t *d;
				uint32_t l;
				bson_iter_document(&it, &l, &d);
				bson_init_static(&sh, d, l);
				BSON_APPEND_DOCUMENT_BEGIN(&key, "queryShape", &tsh);
				transform_shape(hmac_key, hmac_len, &sh, &tsh);
				bson_append_document_end(&key, &tsh);
			} else {
				bv_append(&key, bson_iter_key(&it), -1, bson_iter_value(&it));
			}
		}
		bson_append_document_end(&row, &key);
		sha256(e->key, e->key_len, kh);
		EVP_EncodeBlock(b64, kh, 32);
		BSON_APPEND_UTF8(&row, "keyHash", (const char *)b64);
		hex_upper(e->shape_hash, 32, hex);
		BSON_APPEND_UTF8(&row, "queryShapeHash", hex);
		BSON_APPEND_DOCUMENT_BEGIN(&row, "metrics", &metrics);
		BSON_APPEND_INT64(&metrics, "lastExecutionMicros", e->last_micros);
		BSON_APPEND_INT64(&metrics, "execCount", e->exec_count);
		append_metric(&metrics, "totalExecMicros", &e->total_micros);
		append_metric(&metrics, "firstResponseExecMicros", &e->first_micros);
		append_metric(&metrics, "docsReturned", &e->docs_returned);
		append_metric(&metrics, "keysExamined", &e->keys_examined);
		append_metric(&metrics, "docsExamined", &e->docs_examined);
		BSON_APPEND_DATE_TIME(&metrics, "firstSeenTimestamp", e->first_seen_ms);
		BSON_APPEND_DATE_TIME(&metrics, "latestSeenTimestamp", e->last_seen_ms);
		bson_append_document_end(&row, &metrics);
		BSON_APPEND_TIMESTAMP(&row, "asOf", (uint32_t)(as_of / 1000), 0);
		bson_append_document_end(out, &row);
	}
	pthread_mutex_unlock(&qs_mu);
}

void
toolbelt_qstats_status(bson_t *out)
{
	pthread_mutex_lock(&qs_mu);
	if (qs_cache_bytes == 0)
		qs_cache_bytes = mem_total() / 100;
	BSON_APPEND_INT64(out, "numEntries", qs_entries);
	BSON_APPEND_INT64(out, "queryStatsStoreSizeEstimateBytes", qs_bytes);
	BSON_APPEND_INT64(out, "numEvicted", qs_evicted);
	BSON_APPEND_INT64(out, "maxSizeBytes", qs_cache_bytes);
	pthread_mutex_unlock(&qs_mu);
}
