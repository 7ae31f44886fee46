/*
 * plan.c -- the find executor: access path (EXPRESS _id lookup, IXSCAN +
 * FETCH over the planner's KeyString ranges, or COLLSCAN), then filter,
 * sort, skip, limit and projection; and the explain tree of that shape.
 *
 * The pipeline is fixed rather than a tree of stage objects because find has
 * exactly this shape; the planner picks the access path, not stages.
 */
#include "query/plan.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "bson/collation.h"
#include "bson/keystring.h"
#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "common/log.h"
#include "query/keygen.h"
#include "query/planner.h"
#include "query/projection.h"
#include "query/sort.h"
#include "query/plan_geo.h"
#include "text/text.h"

typedef enum { ACCESS_ID, ACCESS_SCAN, ACCESS_IXSCAN, ACCESS_TEXT, ACCESS_GEO } access_t;

/* RecordIds an index scan already returned (open addressing, 0 = empty
 * slot, so ids are stored +1... recids are >= 1 in storage). */
typedef struct recset {
	int64_t *slot;
	size_t cap, n;
} recset_t;

static uint64_t
rs_hash(int64_t v)
{
	uint64_t x = (uint64_t)v * 0x9E3779B97F4A7C15ull;
	return x ^ (x >> 29);
}

/* Add v; false when it was there already. */
static bool
recset_add(recset_t *r, int64_t v)
{
	size_t i;

	if ((r->n + 1) * 2 > r->cap) {
		recset_t g = {0};
		g.cap = r->cap ? r->cap * 2 : 64;
		g.slot = tm_malloc0(sizeof(int64_t) * g.cap);
		for (i = 0; i < r->cap; i++)
			if (r->slot[i] != 0) {
				size_t j = rs_hash(r->slot[i]) & (g.cap - 1);
				while (g.slot[j] != 0)
					j = (j + 1) & (g.cap - 1);
				g.slot[j] = r->slot[i];
				g.n++;
			}
		bson_free(r->slot);
		*r = g;
	}
	v = v == 0 ? INT64_MIN : v;
	for (i = rs_hash(v) & (r->cap - 1); r->slot[i] != 0; i = (i + 1) & (r->cap - 1))
		if (r->slot[i] == v)
			return false;
	r->slot[i] = v;
	r->n++;
	return true;
}

#define KEYGEN_MAX_FIELDS_PLAN 32

struct plan_exec {
	storage_coll_t *coll;          /* owned reference (NULL: no such collection) */
	match_t *match;                /* owned */
	sort_spec_t *sort;             /* owned; NULL = no sort (or $natural) */
	const coll_t *collation;       /* the query's (NULL = simple) */
	sorter_t *sorter;              /* filled on the first plan_exec_next */
	bool sorted;
	bool allow_disk_use;
	uint64_t sort_memory_limit;    /* 0 = the sorter's default */
	char *spill_dir;               /* owned copy, or NULL */
	projection_t *proj;            /* owned or NULL */
	bson_t *proj_out;              /* the projected current document (lazy; tm_bson_array_new) */
	int64_t skip, limit;
	int64_t skipped, produced;
	bool backward;
	bool borrowed;                 /* coll and match are not ours to free */
	access_t access;
	const bson_value_t *id;        /* ACCESS_ID: borrowed from match, or id_copy */
	bool id_done;
	bool id_check;                 /* no match: check the found _id against id_copy */
	bson_value_t id_copy;
	storage_cursor_t *cur;         /* ACCESS_SCAN, ACCESS_IXSCAN */
	bool scan_done;
	planner_solution_t *sol;       /* ACCESS_IXSCAN (owned) */
	int range_i;                   /* next range to open */
	int branch_i;                  /* PLANNER_OR: the branch being scanned */
	int64_t *branch_keys;          /* PLANNER_OR: keys examined per branch */
	int64_t *branch_dups;
	int64_t seeks;                 /* cursor positionings (explain's seeks) */
	uint8_t *seek_key;             /* owned: where the next positioning starts */
	size_t seek_len;
	recset_t seen;
	bson_t *sort_spec_doc;         /* owned copy for explain */
	bson_t *parsed;                /* owned: the filter for explain (lazy) */
	bool hinted;
	bool express;                  /* ACCESS_IXSCAN on one equality (EXPRESS_IXSCAN) */
	bool tailable;                 /* a tailable COLLSCAN: the end is only "nothing yet" */
	bson_t *proj_doc;              /* owned copy for explain */
	plan_stats_t stats;
	int64_t rep_keys, rep_docs;    /* stats already added to the operation (opctx_flush) */
	bool for_count;                /* plan_request_t.count */
	bool count_scan;               /* COUNT_SCAN: keys counted, no fetch */
	bool covered;                  /* PROJECTION_COVERED: documents rebuilt from index keys, no fetch */
	bson_t *covered_doc;           /* the current rebuilt document (lazy, as proj_out) */
	char *distinct_key;            /* owned copy of plan_request_t.distinct_key */
	/* issue 22 (find showRecordId): keep the RecordId of each result; a
	 * blocking sort carries it as a trailing int64 element of each sorted
	 * document (as mongod's SORT keeps the WorkingSetMember's RecordId),
	 * appended in recid_sort_doc and stripped into recid_strip_doc */
	bool want_recid;
	bool have_recid;
	recid_t last_recid;
	uint8_t *ckey;                 /* ... and on a clustered scan its clustered key (owned) */
	size_t ckey_len, ckey_cap;
	bool have_ckey;
	uint8_t *resume_key;           /* plan_request_t.resume_key (owned copy) */
	size_t resume_key_len;
	bson_t *recid_sort_doc;
	bson_t *recid_strip_doc;
	/* find's returnKey (issue 22): the index key each result came through,
	 * decoded into key_doc ({field: value} in key-pattern order), as
	 * mongod's RETURN_KEY reads the WorkingSetMember's keyData: for a
	 * multikey field the element the scan met.  Through a blocking sort
	 * it travels as a trailing element too (before the RecordId). */
	bool want_key;
	bool have_key;
	bson_t *key_doc;
	bson_t *key_sort_doc;
	bson_t *key_strip_doc;
	bool has_resume_after;         /* plan_request_t.resume_after */
	recid_t resume_after;
	int distinct_pos;              /* >= 0: DISTINCT_SCAN on this key field */
	/* trial runs (mongod's multi-planner) */
	bool trial_pending;            /* candidates not raced yet */
	bool is_view;                  /* a trial view: borrows everything but its runtime */
	int64_t work_limit;            /* > 0: return 2 (need time) once this many works were done */
	int64_t trial_advanced;        /* a view's results during its trial */
	bool trial_eof;
	double trial_score;
	int ntrials;
	struct plan_exec **trials;     /* owned views, in candidate order (the planner's) */
	geo_run_t *geo;                /* ACCESS_GEO: $near, or a covering-bounded $geoWithin/$geoIntersects (plan_geo.h) */
	/* ACCESS_TEXT: $text over the collection's text index */
	int text_index;
	const text_spec_t *text_spec;  /* cached by text/ forever */
	text_query_t *text_query;      /* owned */
	bson_t *text_prefix;           /* owned: the prefix fields' equality values, in key order */
	bool text_want_score;          /* TEXT_OR: something reads textScore */
	bool text_sort_meta;           /* the sort orders by textScore (hidden field, SORT_TEXT_SCORE_FIELD) */
	bool text_scanned;             /* the index scans ran */
	int64_t *text_recs;            /* matching RecordIds in first-seen order */
	double *text_scores;           /* their summed term scores */
	bson_t **text_keys;            /* returnKey: each one's first key met (owned), as
	                                * mongod's TEXT_OR / OR keeps the first member */
	size_t text_n, text_cap, text_pos;
	size_t *text_slot;             /* open addressing: recid -> index + 1 */
	size_t text_slot_cap;
	int64_t *text_term_keys;       /* keys examined per term (explain) */
	double text_score;             /* the current document's */
	bool text_has_score;
	bson_t *text_sort_doc;         /* the document with its hidden score (lazy, as proj_out) */
	bson_t *text_strip_doc;        /* a sorted document without it */
	bool text_keep;                /* plan_request_t.keep_text_score */
	/* sorted by the score alone, nothing but a plain $text in the filter:
	 * every scanned document matches, so they are fetched in score order
	 * (ties in first-seen order, as the sorter keeps them) and the SORT
	 * reads no more of them than skip + limit need */
	bool text_ranked;
	size_t *text_order;
	bson_t *text_keep_doc;         /* a result with its score appended */
};

/* An output document the executor refills for every result: created on
 * first use (a heap bson_t must be 128-byte aligned), emptied after. */
static bson_t *
lazy_doc(bson_t *d)
{
	if (d == NULL) {
		d = tm_bson_array_new(1);
		bson_init(d);
	} else {
		bson_reinit(d);
	}
	return d;
}

static void
lazy_doc_free(bson_t *d)
{
	if (d != NULL) {
		bson_destroy(d);
		bson_free(d);
	}
}

/* The conjuncts the IXSCAN stage checks on each key (mongod's IXSCAN
 * filter), when the filter and the scan allow it. */
static uint64_t
key_mask(const plan_exec_t *x)
{
	const planner_solution_t *sol = x->sol;

	if (x->match == NULL || sol == NULL || sol->kind != PLANNER_IXSCAN || sol->exact || x->express ||
	    x->count_scan || sol->nfields == 0 || sol->nfields > KEYGEN_MAX_FIELDS_PLAN)
		return 0;
	return sol->key_mask;
}

/* The filter's top-level conjuncts a fetch after the index scan need not
 * check: those the scan's bounds or key filter answer (never across $or
 * branches). */
static uint64_t
fetch_skip(const plan_exec_t *x)
{
	return x->sol != NULL && x->sol->kind == PLANNER_IXSCAN ? x->sol->exact_mask | key_mask(x) : 0;
}

static bool
sort_needed(const plan_exec_t *x)
{
	return x->sort != NULL && !(x->access == ACCESS_IXSCAN && x->sol->provides_sort) && !x->text_ranked;
}

/* ---- index usage ($indexStats accesses.ops) ----------------------------- */

/* One counter per index, found by its collection's UUID and its table
 * (two folders open in one process may both have "table:index-4").  The
 * chains only grow: a bump finds its entry without a lock (entries never
 * change but for their atomic counter), a new entry is pushed under
 * usage_mu. */
typedef struct usage {
	struct usage *_Atomic next;
	uint8_t uuid[16];
	char *ident;
	atomic_llong ops;
} usage_t;

#define USAGE_BUCKETS 256
static usage_t *_Atomic usage_tab[USAGE_BUCKETS];
static pthread_mutex_t usage_mu = PTHREAD_MUTEX_INITIALIZER;

static unsigned
usage_bucket(const uint8_t uuid[16], const char *ident)
{
	unsigned h = 5381;

	for (int i = 0; i < 16; i++)
		h = h * 33 + uuid[i];
	for (; *ident; ident++)
		h = h * 33 + (unsigned char)*ident;
	return h % USAGE_BUCKETS;
}

static usage_t *
usage_find(usage_t *u, const uint8_t uuid[16], const char *ident)
{
	for (; u != NULL; u = atomic_load_explicit(&u->next, memory_order_acquire))
		if (memcmp(u->uuid, uuid, 16) == 0 && strcmp(u->ident, ident) == 0)
			return u;
	return NULL;
}

static void
usage_bump(const storage_coll_t *coll, const storage_index_t *ix)
{
	unsigned b;
	usage_t *u;

	/* this thread's last entry (entries never move or go): a connection's
	 * queries mostly repeat one index; confirmed by its bytes, as a freed
	 * ident's address may come back with others */
	static __thread usage_t *last;

	if (ix == NULL || ix->ident == NULL)
		return;
	if ((u = last) != NULL && memcmp(u->uuid, coll->uuid, 16) == 0 && strcmp(u->ident, ix->ident) == 0) {
		atomic_fetch_add_explicit(&u->ops, 1, memory_order_relaxed);
		return;
	}
	b = usage_bucket(coll->uuid, ix->ident);
	u = usage_find(atomic_load_explicit(&usage_tab[b], memory_order_acquire), coll->uuid, ix->ident);
	if (u == NULL) {
		pthread_mutex_lock(&usage_mu);
		u = usage_find(atomic_load_explicit(&usage_tab[b], memory_order_acquire), coll->uuid, ix->ident);
		if (u == NULL) {
			u = tm_malloc0(sizeof(*u));
			memcpy(u->uuid, coll->uuid, 16);
			u->ident = bson_strdup(ix->ident);
			atomic_init(&u->ops, 0);
			atomic_store_explicit(&u->next, atomic_load(&usage_tab[b]), memory_order_relaxed);
			atomic_store_explicit(&usage_tab[b], u, memory_order_release);
		}
		pthread_mutex_unlock(&usage_mu);
	}
	last = u;
	atomic_fetch_add_explicit(&u->ops, 1, memory_order_relaxed);
}

int64_t
plan_index_ops(const storage_coll_t *coll, const storage_index_t *ix)
{
	usage_t *u;

	if (coll == NULL || ix == NULL || ix->ident == NULL)
		return 0;
	u = usage_find(atomic_load_explicit(&usage_tab[usage_bucket(coll->uuid, ix->ident)], memory_order_acquire),
	    coll->uuid, ix->ident);
	return u != NULL ? atomic_load_explicit(&u->ops, memory_order_relaxed) : 0;
}

static bool
spec_empty(const bson_t *b)
{
	return b == NULL || bson_empty(b);
}

/* {$natural: 1|-1} alone is a scan direction, not a sort. */
static bool
natural_sort(const bson_t *sort, bool *backward)
{
	bson_iter_t it;

	if (sort == NULL || bson_count_keys(sort) != 1 || !bson_iter_init_find(&it, sort, "$natural"))
		return false;
	*backward = bson_iter_as_int64(&it) < 0;
	return true;
}

/*
 * mongod's express path for a single equality {p: v} (8.0+): an index whose
 * first field is p, with limit 1, or a unique single-field index on p
 * without a limit; the shortest such index wins.  Returns its position or
 * -1.  (Partial indexes are left to the planner here.)
 */
static int
express_index(const storage_coll_t *coll, const match_t *m, int64_t limit)
{
	const char *path;
	const bson_value_t *v;
	int i, best = -1, best_n = 0;

	if (m == NULL || !match_single_eq(m, &path, &v))
		return -1;
	switch (v->value_type) {
	case BSON_TYPE_NULL: case BSON_TYPE_UNDEFINED: case BSON_TYPE_ARRAY: case BSON_TYPE_REGEX:
	case BSON_TYPE_MINKEY: case BSON_TYPE_MAXKEY:
		return -1;
	default:
		break;
	}
	for (i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bson_iter_t k;
		int n = ix->nfields;
		/* a text index holds keys only for documents with terms */
		if (ix->is_id || ix->hidden || ix->partial || keygen_is_text(ix) || keygen_geo_kind(ix, NULL) ||
		    !bson_iter_init(&k, ix->key) || !bson_iter_next(&k) || !BSON_ITER_HOLDS_NUMBER(&k) ||
		    strcmp(bson_iter_key(&k), path) != 0)
			continue;
		if (limit != 1 && !(ix->unique && n == 1))
			continue;
		if (best < 0 || n < best_n) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

/* The index a filterless distinct on key scans: not multikey, sparse,
 * partial, hidden or wildcard, key its first field; the fewest fields win. */
static int
distinct_index(const storage_coll_t *coll, const char *key)
{
	int i, best = -1, best_n = 0;

	for (i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bson_iter_t k;
		int n = ix->nfields;
		if (ix->multikey || ix->hidden || ix->sparse || ix->partial || ix->wildcard || keygen_is_text(ix) ||
		    keygen_geo_kind(ix, NULL) || !bson_iter_init(&k, ix->key) || !bson_iter_next(&k) || !BSON_ITER_HOLDS_NUMBER(&k) ||
		    strcmp(bson_iter_key(&k), key) != 0)
			continue;
		if (best < 0 || n < best_n) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

/* One interval over the key (mongod's IndexBoundsBuilder::isSingleInterval):
 * points, then at most one range, then unbounded fields. */
static bool
single_interval(const planner_solution_t *sol)
{
	int i = 0;

	while (i < sol->nfields && sol->fields[i].points && sol->fields[i].n == 1)
		i++;
	if (i < sol->nfields && sol->fields[i].n == 1)
		i++;
	for (; i < sol->nfields; i++)
		if (sol->fields[i].bounded || sol->fields[i].n != 1)
			return false;
	return true;
}

/* The _id point lookup finds the key the _id index's collation (the
 * collection's default) makes of id: right for the query only when the
 * collations agree or id holds no string. */
static bool
id_lookup_collation_ok(const storage_coll_t *coll, const bson_value_t *id, const coll_t *collation)
{
	const coll_t *ixc = NULL;
	int i;

	if (coll == NULL)
		return true;
	for (i = 0; i < coll->nindexes; i++)
		if (coll->indexes[i].is_id)
			ixc = coll->indexes[i].collation;
	if (ixc == collation)
		return true;
	switch (id->value_type) {
	case BSON_TYPE_UTF8: case BSON_TYPE_SYMBOL: case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY:
		return false;
	default:
		return true;
	}
}

/* ---- covered plans (PROJECTION_COVERED) --------------------------------------
 *
 * mongod answers a find from index keys alone when the filter is decided by
 * the bounds, the projection only includes fields of the index (and _id is
 * excluded or indexed), no needed field is a multikey path, and a blocking
 * sort only uses index fields.  Our entries carry type bits
 * (storage_index_t.typebits), so the keys give back the exact values.
 *
 * A key cannot tell a missing field from null.  mongod's covered projection
 * (ProjectionStageCovered) copies the key's elements as they are, so a
 * document missing a projected field comes back with that field null: with
 * {city: 1, age: 1}, find({city: "Berlin"}, {_id: 0, city: 1, age: 1})
 * answers {city: "Berlin", age: null} for {city: "Berlin"}.  We do the same.
 * What mongod does fetch for is a projected field whose own predicate tests
 * null ({a: null}, {a: {$in: [null, 2]}}: the null key could be either, and
 * the answer must say which; jstests cover_null_queries.js), and so do we:
 * a projected field whose bounds have null as an end fetches (a one-field
 * sparse index holds no missing fields, so its null keys are nulls).
 *
 * The documents are rebuilt in key-pattern order (_id where the key pattern
 * has it), as mongod's covered projection and its index-key rehydration do.
 * A projection of top-level fields is mongod's PROJECTION_COVERED; one with
 * dotted fields is its PROJECTION_DEFAULT over the IXSCAN, still with no
 * FETCH and no document examined.
 */

/* Position of the field path in sol, or -1. */
static int
sol_field(const planner_solution_t *sol, const char *path)
{
	for (int i = 0; i < sol->nfields; i++)
		if (strcmp(sol->fields[i].path, path) == 0)
			return i;
	return -1;
}

/* Does a predicate on field i test null: an interval of its bounds that
 * starts or ends at null ([null, null] from {a: null} or an $in with null,
 * $lte/$gte null)?  Unbounded fields ([MinKey, MaxKey]) and ranges that
 * merely span null ($ne) do not. */
static bool
field_tests_null(const planner_solution_t *sol, int i)
{
	const planner_field_t *f = &sol->fields[i];
	bson_value_t null_v = {.value_type = BSON_TYPE_NULL};

	if (!f->bounded)
		return false;
	for (int k = 0; k < f->n; k++) {
		const planner_interval_t *iv = &f->iv[k];
		if (bv_compare(&iv->lo, &null_v) == 0 || bv_compare(&iv->hi, &null_v) == 0)
			return true;
	}
	return false;
}

static bool
path_numeric_part(const char *p)
{
	while (*p != '\0') {
		size_t n = strcspn(p, ".");
		if (n > 0 && strspn(p, "0123456789") >= n)
			return true;
		p += n + (p[n] == '.');
	}
	return false;
}

/* Whether sol can answer x without fetching documents (see above). */
static bool
covered_for(const plan_exec_t *x, const planner_solution_t *sol)
{
	const storage_index_t *ix;
	bson_iter_t it;
	bool id_out = true, any = false, sparse1;
	int i, j;

	if (x->proj == NULL || x->proj_doc == NULL || x->borrowed || x->for_count || x->distinct_key != NULL ||
	    x->express || sol == NULL || sol->kind != PLANNER_IXSCAN || sol->wildcard_path != NULL ||
	    x->coll == NULL || sol->index >= x->coll->nindexes || sol->nfields == 0 ||
	    sol->nfields > KEYGEN_MAX_FIELDS_PLAN)
		return false;
	ix = &x->coll->indexes[sol->index];
	/* a collated index holds sort keys, not the strings themselves */
	if (!ix->typebits || ix->collation != NULL ||
	    !(x->match == NULL || match_is_trivially_true(x->match) || sol->exact || sol->key_complete))
		return false;
	/* fields must not overlap ({a: 1, "a.b": 1}) nor use positions */
	for (i = 0; i < sol->nfields; i++) {
		if (path_numeric_part(sol->fields[i].path))
			return false;
		for (j = 0; j < sol->nfields; j++) {
			size_t n = strlen(sol->fields[i].path);
			if (i != j && strncmp(sol->fields[i].path, sol->fields[j].path, n) == 0 &&
			    sol->fields[j].path[n] == '.')
				return false;
		}
	}
	sparse1 = sol->nfields == 1 && ix->sparse;
	if (!bson_iter_init(&it, x->proj_doc))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bool on;
		if (strchr(k, '$') != NULL || !(BSON_ITER_HOLDS_NUMBER(&it) || BSON_ITER_HOLDS_BOOL(&it)))
			return false;
		on = bson_iter_as_bool(&it);
		if (strcmp(k, "_id") == 0) {
			id_out = on;
			continue;
		}
		if (!on || (i = sol_field(sol, k)) < 0 || sol->fields[i].multikey ||
		    (!sparse1 && field_tests_null(sol, i)))
			return false;
		any = true;
	}
	if (id_out && ((i = sol_field(sol, "_id")) < 0 || sol->fields[i].multikey))
		return false;
	if (!any && !id_out)
		return false;   /* {_id: 0}: an exclusion, the whole document */
	if (sort_needed(x) && x->sort_spec_doc != NULL && bson_iter_init(&it, x->sort_spec_doc)) {
		while (bson_iter_next(&it))
			if ((i = sol_field(sol, bson_iter_key(&it))) < 0 || sol->fields[i].multikey)
				return false;
	}
	return true;
}

/* Append the fields idx[0..n) of sc (paths read from off[field] on) to out
 * as nested documents ({"a.b", "a.c"} -> {a: {b, c}}), in key order. */
static void
covered_level(bson_t *out, const planner_solution_t *sc, const bson_value_t *vals, const int *idx, int n,
              size_t *off)
{
	bool done[KEYGEN_MAX_FIELDS_PLAN] = {false};

	for (int i = 0; i < n; i++) {
		const char *p, *dot;
		size_t len;
		int sub[KEYGEN_MAX_FIELDS_PLAN], m = 0;
		bson_t child;
		if (done[i])
			continue;
		p = sc->fields[idx[i]].path + off[idx[i]];
		dot = strchr(p, '.');
		len = dot != NULL ? (size_t)(dot - p) : strlen(p);
		done[i] = true;
		if (dot == NULL) {
			bv_append(out, p, (int)len, &vals[idx[i]]);
			continue;
		}
		for (int j = i; j < n; j++) {
			const char *q = sc->fields[idx[j]].path + off[idx[j]];
			if (j != i && (done[j] || strncmp(q, p, len + 1) != 0))
				continue;
			done[j] = true;
			off[idx[j]] += len + 1;
			sub[m++] = idx[j];
		}
		bson_append_document_begin(out, p, (int)len, &child);
		covered_level(&child, sc, vals, sub, m, off);
		bson_append_document_end(out, &child);
	}
}

/* The document the key stands for, restricted to the index's fields, into
 * x->covered_doc; doc views it.  0, or -1 with err for a key that does not
 * decode. */
static int
covered_rebuild(plan_exec_t *x, const planner_solution_t *sc, const uint8_t *key, size_t klen, bson_t *doc,
                terr_t *err)
{
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	bson_value_t vals[KEYGEN_MAX_FIELDS_PLAN];    /* views into parts */
	int idx[KEYGEN_MAX_FIELDS_PLAN];
	size_t off[KEYGEN_MAX_FIELDS_PLAN] = {0};
	const uint8_t *tb;
	size_t tblen;
	bson_t parts;
	bson_iter_t it;
	int i, n = sc->nfields;

	if (storage_cursor_typebits(x->cur, &tb, &tblen, err) != 0)
		return -1;
	/* key-pattern order, _id included where it sits (see above) */
	for (i = 0; i < n; i++) {
		desc[i] = sc->fields[i].desc;
		idx[i] = i;
	}
	bson_init(&parts);
	if (!keystring_decode_values_tb(key, klen, tb, tblen, n, desc, &parts) || !bson_iter_init(&it, &parts)) {
		bson_destroy(&parts);
		return terr_set(err, TERR_INTERNAL_ERROR, "index %s: an entry does not decode",
		    x->coll->indexes[sc->index].name);
	}
	for (i = 0; i < n && bson_iter_next(&it); i++)
		vals[i] = *bson_iter_value(&it);
	x->covered_doc = lazy_doc(x->covered_doc);
	if (i == n)
		covered_level(x->covered_doc, sc, vals, idx, n, off);
	bson_destroy(&parts);
	bson_init_static(doc, bson_get_data(x->covered_doc), x->covered_doc->len);
	return 0;
}

/* returnKey: the entry (key, klen) of sc's index, decoded exactly (type
 * bits) into x->key_doc under the key pattern's field names.  0, or -1
 * with err for an entry that does not decode. */
static int
key_capture(plan_exec_t *x, const planner_solution_t *sc, const uint8_t *key, size_t klen, terr_t *err)
{
	const storage_index_t *ix = &x->coll->indexes[sc->index];
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	const uint8_t *tb;
	size_t tblen;
	bson_t parts;
	bson_iter_t p, v;
	int n = 0;

	x->have_key = false;
	if (!bson_iter_init(&p, ix->key))
		return 0;
	while (bson_iter_next(&p) && n < KEYGEN_MAX_FIELDS_PLAN)
		desc[n++] = BSON_ITER_HOLDS_NUMBER(&p) && bson_iter_as_double(&p) < 0;
	if (storage_cursor_typebits(x->cur, &tb, &tblen, err) != 0)
		return -1;
	bson_init(&parts);
	if (!keystring_decode_values_tb(key, klen, tb, tblen, n, desc, &parts)) {
		bson_destroy(&parts);
		return terr_set(err, TERR_INTERNAL_ERROR, "index %s: an entry does not decode", ix->name);
	}
	x->key_doc = lazy_doc(x->key_doc);
	bson_iter_init(&p, ix->key);
	bson_iter_init(&v, &parts);
	while (bson_iter_next(&p) && bson_iter_next(&v))
		bson_append_value(x->key_doc, bson_iter_key(&p), -1, bson_iter_value(&v));
	bson_destroy(&parts);
	x->have_key = true;
	return 0;
}

/* The keys a geo index makes of one document: how many, and the first. */
typedef struct geo_keys_ctx {
	size_t n;
	uint8_t *key, *tb;
	size_t klen, tblen;
} geo_keys_ctx_t;

static void
geo_keys_add(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tb_len)
{
	geo_keys_ctx_t *c = ctx;

	if (c->n++ > 0)
		return;
	c->key = tm_malloc0(len + 1);
	memcpy(c->key, key, len);
	c->klen = len;
	if (tb != NULL && tb_len > 0) {
		c->tb = tm_malloc0(tb_len);
		memcpy(c->tb, tb, tb_len);
		c->tblen = tb_len;
	}
}

/*
 * returnKey through a geo plan: mongod returns the index entry its scan met
 * first for the document.  A covering scan ($geoWithin / $geoIntersects:
 * the query's S2 covering as intervals, walked in key order, deduplicated
 * by RecordId, as mongod's IXSCAN under its FETCH) keeps that entry
 * (plan_geo_cur_key).  A near search's order is its annuli's, which
 * Tamga's rings do not reproduce: a document with exactly one key in the
 * index has that key whatever the scan (generated again from doc); one
 * with several (a polygon's cells, several points, an array on a compound
 * field), and a near search without an index, answer 238.
 */
static int
geo_key_capture(plan_exec_t *x, const bson_t *doc, terr_t *err)
{
	int ixn = plan_geo_index(x->geo);
	const storage_index_t *ix;
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	geo_keys_ctx_t c = {0};
	bson_t parts;
	bson_iter_t p, v;
	int n = 0, ret = 0;

	const uint8_t *key, *tb;
	size_t klen, tblen;

	x->have_key = false;
	if (ixn < 0 || ixn >= x->coll->nindexes)
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "returnKey with a geo query and no geo index is not supported by Tamga yet");
	ix = &x->coll->indexes[ixn];
	if (!bson_iter_init(&p, ix->key))
		return 0;
	while (bson_iter_next(&p) && n < KEYGEN_MAX_FIELDS_PLAN)
		desc[n++] = BSON_ITER_HOLDS_NUMBER(&p) && bson_iter_as_double(&p) < 0;
	if (!plan_geo_cur_key(x->geo, &key, &klen, &tb, &tblen)) {
		/* a near plan: the document's only key, if it has one */
		if (keygen_geo_keys(ix, doc, geo_keys_add, &c, err) != 0)
			ERR(-1);
		if (c.n != 1) {
			ret = terr_set(err, TERR_NOT_IMPLEMENTED,
			    "returnKey with a geo near query (index %s) of a document with %zu keys in it is not supported by Tamga yet",
			    ix->name, c.n);
			goto err;
		}
		key = c.key, klen = c.klen, tb = c.tb, tblen = c.tblen;
	}
	bson_init(&parts);
	if (!keystring_decode_values_tb(key, klen, tb, tblen, n, desc, &parts)) {
		bson_destroy(&parts);
		ret = terr_set(err, TERR_INTERNAL_ERROR, "index %s: a key does not decode", ix->name);
		goto err;
	}
	x->key_doc = lazy_doc(x->key_doc);
	bson_iter_init(&p, ix->key);
	bson_iter_init(&v, &parts);
	while (bson_iter_next(&p) && bson_iter_next(&v))
		bson_append_value(x->key_doc, bson_iter_key(&p), -1, bson_iter_value(&v));
	bson_destroy(&parts);
	x->have_key = true;
err:
	bson_free(c.key);
	bson_free(c.tb);
	return ret;
}

/* COUNT_SCAN / DISTINCT_SCAN for the plan chosen (after the trial runs). */
static void
choose_modes(plan_exec_t *x)
{
	const planner_solution_t *sol = x->sol;
	bool covered;
	int i;

	x->count_scan = false;
	x->distinct_pos = -1;
	x->covered = x->access == ACCESS_IXSCAN && covered_for(x, sol);
	if (x->access != ACCESS_IXSCAN || x->express || sol == NULL || sol->kind != PLANNER_IXSCAN ||
	    sol->wildcard_path != NULL || sol->nfields == 0)
		return;
	/* a hashed index's keys hold hashes, not the values */
	if (sol->index < x->coll->nindexes && keygen_is_hashed(&x->coll->indexes[sol->index])) {
		x->covered = false;
		if (x->for_count && (x->match == NULL || match_is_trivially_true(x->match)) && single_interval(sol)) {
			x->count_scan = true;
			x->stats.stage = "COUNT_SCAN";
		}
		return;
	}
	covered = x->match == NULL || match_is_trivially_true(x->match) || sol->exact;
	if (!covered)
		return;
	if (x->for_count && single_interval(sol)) {
		x->count_scan = true;
		x->stats.stage = "COUNT_SCAN";
		return;
	}
	/* one key per distinct value only means one per query-distinct value
	 * when the index orders strings by the query's collation */
	if (x->distinct_key == NULL || sol->dedup || sol->backward || x->sort != NULL ||
	    x->coll->indexes[sol->index].multikey ||
	    x->coll->indexes[sol->index].collation != x->collation)
		return;
	for (i = 0; i < sol->nfields; i++) {
		if (strcmp(sol->fields[i].path, x->distinct_key) == 0) {
			x->distinct_pos = i;
			x->stats.stage = "DISTINCT_SCAN";
			return;
		}
		if (!(sol->fields[i].points && sol->fields[i].n == 1))
			return;
	}
}

/* DISTINCT_SCAN: position past every key sharing this one's values up to
 * the distinct field. */
static void
distinct_skip(plan_exec_t *x, const planner_solution_t *sc, const uint8_t *key, size_t klen)
{
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	bson_t vals;
	bson_iter_t it;
	keystring_t prefix;
	int i, n = x->distinct_pos + 1;

	if (n > KEYGEN_MAX_FIELDS_PLAN)
		return;
	for (i = 0; i < n; i++)
		desc[i] = sc->fields[i].desc;
	bson_init(&vals);
	keystring_init(&prefix);
	if (keystring_decode_values(key, klen, n, desc, &vals) && bson_iter_init(&it, &vals)) {
		bool nullish = false;
		for (i = 0; i < n && bson_iter_next(&it); i++) {
			/* a null key may stand for a missing field: read every one */
			nullish = BSON_ITER_HOLDS_NULL(&it) || BSON_ITER_HOLDS_UNDEFINED(&it);
			keystring_append_value(&prefix, bson_iter_value(&it), desc[i]);
		}
		if (i == n && !nullish) {
			keystring_append_max(&prefix);
			bson_free(x->seek_key);
			x->seek_key = bson_malloc(prefix.len);
			memcpy(x->seek_key, prefix.buf, prefix.len);
			x->seek_len = prefix.len;
			storage_cursor_close(x->cur);
			x->cur = NULL;
		}
	}
	keystring_destroy(&prefix);
	bson_destroy(&vals);
}


/* ---- $text (TEXT_MATCH over TEXT_OR / OR of index scans) --------------------
 *
 * mongod's text plan: one backward index scan per query term over the keys
 * (prefix values, term, score, ...), the scores of one document summed
 * (TEXT_OR) or the documents only deduplicated (OR), then each document
 * fetched and checked by the $text matcher (negations, phrases, case and
 * diacritic sensitivity) and the rest of the filter.  The matching
 * RecordIds are collected first, in the order the scans meet them. */

typedef struct text_eq_ctx {
	const char *path;
	const bson_value_t *found;
} text_eq_ctx_t;

static bool
text_eq_cb(const char *path, const bson_value_t *value, void *ctx)
{
	text_eq_ctx_t *c = ctx;

	if (c->found == NULL && strcmp(path, c->path) == 0)
		c->found = value;
	return true;
}

/* $text under a top-level $or: mongod plans it only when every other
 * branch has an index (291 otherwise, its message); Tamga does not run
 * that union yet (238). */
static int
text_or_refuse(plan_exec_t *x, const plan_request_t *req, terr_t *err)
{
	bson_t *f = match_to_bson(x->match);
	bson_iter_t it, br;
	bool root_or = false, all_indexed = true;

	if (bson_iter_init(&it, f) && bson_iter_next(&it) && strcmp(bson_iter_key(&it), "$or") == 0 &&
	    BSON_ITER_HOLDS_ARRAY(&it) && !bson_iter_next(&it))
		root_or = true;
	if (root_or && x->coll != NULL && bson_iter_init_find(&it, f, "$or") && bson_iter_recurse(&it, &br)) {
		while (bson_iter_next(&br) && all_indexed) {
			const uint8_t *d;
			uint32_t l;
			bson_t b;
			match_t *m = NULL;
			planner_solution_t *sol = NULL;
			match_options_t mo = {0};
			terr_t e2 = TERR_INIT;
			if (!BSON_ITER_HOLDS_DOCUMENT(&br))
				continue;
			bson_iter_document(&br, &l, &d);
			bson_init_static(&b, d, l);
			if (bson_has_field(&b, "$text"))
				continue;
			mo.coll = req->collation;
			if (match_compile(&b, &mo, &m, &e2) != 0 ||
			    planner_plan(x->coll, m, NULL, NULL, req->collation, &sol, &e2) != 0 ||
			    sol->kind == PLANNER_COLLSCAN)
				all_indexed = false;
			planner_solution_free(sol);
			match_free(m);
			terr_clear(&e2);
		}
	}
	bson_destroy(f);
	if (root_or && !all_indexed)
		return terr_set(err, 291,
		    "error processing query: ns=%s planner returned error :: caused by :: Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.",
		    x->coll->ns);
	return terr_set(err, TERR_NOT_IMPLEMENTED, "$text under $or or $not is not supported by Tamga yet");
}

/* Bind x's $text to the collection's text index: the errors mongod gives
 * when building the TextMatchExpression and the TEXT plan. */
static int
text_setup(plan_exec_t *x, const plan_request_t *req, terr_t *err)
{
	match_text_params_t tp;
	const storage_index_t *ix = NULL;
	const text_lang_t *lang;
	int n = match_text_info(x->match, &tp), i;

	if (n > 1)
		return terr_set(err, TERR_BAD_VALUE, "Too many text expressions");
	if (tp.under_nor)
		return terr_set(err, TERR_BAD_VALUE, "text expression not allowed in nor");
	if (tp.under_or)
		return text_or_refuse(x, req, err);
	if (x->coll == NULL)
		return terr_set(err, TERR_INDEX_NOT_FOUND, "text index required for $text query (no such collection)");
	for (i = 0; i < x->coll->nindexes; i++)
		if (keygen_is_text(&x->coll->indexes[i]) && !x->coll->indexes[i].hidden) {
			ix = &x->coll->indexes[i];
			break;
		}
	if (ix == NULL)
		return terr_set(err, TERR_INDEX_NOT_FOUND, "text index required for $text query");
	if (req->hint != NULL)
		return terr_set(err, TERR_BAD_VALUE, "text and hint not allowed in same query");
	if (req->tailable)
		return terr_set(err, TERR_BAD_VALUE, "text and tailable cursor not allowed in same query");
	if (!spec_empty(req->min) || !spec_empty(req->max))
		return terr_set(err, TERR_NOT_IMPLEMENTED, "min and max with $text are not supported by Tamga yet");
	x->text_index = i;
	if ((x->text_spec = text_spec_get(ix->spec, err)) == NULL)
		return -1;
	lang = tp.language != NULL ? text_lang_find(tp.language) : text_spec_default_lang(x->text_spec);
	if (lang == NULL)
		return terr_set(err, TERR_BAD_VALUE, "unsupported language: \"%s\" for text index version %d", tp.language,
		    text_spec_version(x->text_spec));
	if (text_query_new(tp.search, tp.search_len, lang, text_spec_version(x->text_spec), tp.case_sensitive,
	    tp.diacritic_sensitive, &x->text_query, err) != 0)
		return -1;
	/* a compound text index needs an equality on every prefix field */
	x->text_prefix = bson_new();
	for (i = 0; i < text_spec_nprefix(x->text_spec); i++) {
		text_eq_ctx_t c = {text_spec_prefix(x->text_spec, i), NULL};
		match_equalities(x->match, text_eq_cb, &c);
		if (c.found == NULL || c.found->value_type == BSON_TYPE_ARRAY || c.found->value_type == BSON_TYPE_REGEX)
			return terr_set(err, 291,
			    "error processing query: ns=%s planner returned error :: caused by :: failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)",
			    x->coll->ns);
		bv_append(x->text_prefix, c.path, -1, c.found);
	}
	match_text_bind(x->match, x->text_spec, x->text_query);
	x->text_term_keys = tm_malloc0(sizeof(int64_t) * (text_query_nbounds(x->text_query) + 1));
	x->access = ACCESS_TEXT;
	x->stats.stage = "TEXT_MATCH";
	usage_bump(x->coll, ix);
	return 0;
}

/* Add score to recid's sum (a new recid is appended; key, when not NULL,
 * is its key parts for returnKey, copied only for a new one). */
static void
text_add(plan_exec_t *x, int64_t recid, double score, const bson_t *key)
{
	size_t i, h;

	if ((x->text_n + 1) * 2 > x->text_slot_cap) {
		size_t cap = x->text_slot_cap ? x->text_slot_cap * 2 : 256;
		bson_free(x->text_slot);
		x->text_slot = tm_malloc0(sizeof(size_t) * cap);
		x->text_slot_cap = cap;
		for (i = 0; i < x->text_n; i++) {
			for (h = rs_hash(x->text_recs[i]) & (cap - 1); x->text_slot[h] != 0; h = (h + 1) & (cap - 1))
				;
			x->text_slot[h] = i + 1;
		}
	}
	for (h = rs_hash(recid) & (x->text_slot_cap - 1); x->text_slot[h] != 0; h = (h + 1) & (x->text_slot_cap - 1))
		if (x->text_recs[x->text_slot[h] - 1] == recid) {
			x->text_scores[x->text_slot[h] - 1] += score;
			return;
		}
	if (x->text_n == x->text_cap) {
		x->text_cap = x->text_cap ? x->text_cap * 2 : 64;
		x->text_recs = bson_realloc(x->text_recs, sizeof(int64_t) * x->text_cap);
		x->text_scores = bson_realloc(x->text_scores, sizeof(double) * x->text_cap);
		if (x->want_key)
			x->text_keys = bson_realloc(x->text_keys, sizeof(bson_t *) * x->text_cap);
	}
	if (x->want_key)
		x->text_keys[x->text_n] = key != NULL ? bson_copy(key) : NULL;
	x->text_recs[x->text_n] = recid;
	x->text_scores[x->text_n] = score;
	x->text_slot[h] = ++x->text_n;
}

/* Higher score first, then first seen. */
static int
text_rank_cmp(const void *a, const void *b, void *scores)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const double *sc = scores;

	if (sc[i] != sc[j])
		return sc[i] > sc[j] ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* The key prefix (prefix values, term) of one term's keys, into ks. */
static void
text_term_key(const plan_exec_t *x, const bool *desc, const char *term, keystring_t *ks)
{
	bson_value_t tv = {.value_type = BSON_TYPE_UTF8};
	bson_iter_t pit;
	int i;

	keystring_reset(ks);
	bson_iter_init(&pit, x->text_prefix);
	for (i = 0; bson_iter_next(&pit); i++)
		keystring_append_value(ks, bson_iter_value(&pit), desc[i]);
	{
		char buf[KEYGEN_TEXT_TERM_MAX + 1];
		size_t n;
		tv.value.v_utf8.str = (char *)keygen_text_term(term, strlen(term), text_spec_version(x->text_spec), buf, &n);
		tv.value.v_utf8.len = (uint32_t)n;
		keystring_append_value(ks, &tv, false);
	}
}

/* The index scans: for each term, the keys [prefix, term, *] backward. */
static int
text_scan(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	const storage_index_t *ix = &x->coll->indexes[x->text_index];
	int np = text_spec_nprefix(x->text_spec);
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	bson_iter_t kp;
	keystring_t lo, hi;
	int i = 0, ret = 0;

	memset(desc, 0, sizeof(desc));
	bson_iter_init(&kp, ix->key);
	/* every field's direction: returnKey decodes the whole key (prefix,
	 * _fts, _ftsx, suffix); "text" is ascending */
	while (bson_iter_next(&kp) && i < ix->nfields && i < KEYGEN_MAX_FIELDS_PLAN)
		desc[i++] = BSON_ITER_HOLDS_NUMBER(&kp) && bson_iter_as_double(&kp) < 0;
	keystring_init(&lo);
	keystring_init(&hi);
	for (size_t t = 0; t < text_query_nbounds(x->text_query); t++) {
		const char *term = text_query_bound(x->text_query, t);
		storage_cursor_t *cur = NULL;
		int rc;
		/* a $search of many words: maxTimeMS and killOp between the scans too */
		if (tm_interrupt_check(err) != 0)
			ERR(-1);
		text_term_key(x, desc, term, &lo);
		text_term_key(x, desc, term, &hi);
		keystring_append_max(&hi);
		x->seeks++;
		if (storage_index_scan_open(s, x->coll, ix, lo.buf, lo.len, true, hi.buf, hi.len, true, true, &cur, err) != 0)
			ERR(-1);
		for (;;) {
			recid_t recid;
			const uint8_t *key;
			size_t klen;
			bson_t unused, parts;
			bson_iter_t it;
			double score = 0;
			rc = storage_cursor_next(cur, &recid, &unused, &key, &klen, err);
			if (rc <= 0)
				break;
			x->stats.keys_examined++;
			x->text_term_keys[t]++;
			if (tm_interrupt_check(err) != 0) {
				rc = -1;
				break;
			}
			bson_init(&parts);
			if (keystring_decode_values(key, klen, np + 2, desc, &parts) && bson_iter_init(&it, &parts)) {
				for (i = 0; i < np + 2 && bson_iter_next(&it); i++)
					if (i == np + 1)
						score = bson_iter_as_double(&it);
			}
			bson_destroy(&parts);
			if (x->want_key) {
				/* the key under the key pattern's names, exactly (type bits) */
				const uint8_t *tb;
				size_t tblen;
				bson_t vals, named;
				bson_iter_t p, v;
				if ((rc = storage_cursor_typebits(cur, &tb, &tblen, err)) != 0)
					break;
				bson_init(&vals);
				if (!keystring_decode_values_tb(key, klen, tb, tblen, ix->nfields, desc, &vals)) {
					bson_destroy(&vals);
					rc = terr_set(err, TERR_INTERNAL_ERROR, "index %s: an entry does not decode", ix->name);
					break;
				}
				bson_init(&named);
				bson_iter_init(&p, ix->key);
				bson_iter_init(&v, &vals);
				while (bson_iter_next(&p) && bson_iter_next(&v))
					bson_append_value(&named, bson_iter_key(&p), -1, bson_iter_value(&v));
				text_add(x, recid, score, &named);
				bson_destroy(&named);
				bson_destroy(&vals);
			} else {
				text_add(x, recid, score, NULL);
			}
		}
		storage_cursor_close(cur);
		if (rc < 0)
			ERR(-1);
	}
	x->text_scanned = true;
	if (x->text_ranked && x->text_n > 0) {
		x->text_order = tm_malloc0(sizeof(size_t) * x->text_n);
		for (size_t k = 0; k < x->text_n; k++)
			x->text_order[k] = k;
		qsort_r(x->text_order, x->text_n, sizeof(size_t), text_rank_cmp, x->text_scores);
	}
err:
	keystring_destroy(&lo);
	keystring_destroy(&hi);
	return ret;
}

static int
text_next(plan_exec_t *x, storage_session_t *s, recid_t *recid, bson_t *doc, terr_t *err)
{
	int rc;

	if (!x->text_scanned && text_scan(x, s, err) != 0)
		return -1;
	while (x->text_pos < x->text_n) {
		size_t i = x->text_order != NULL ? x->text_order[x->text_pos++] : x->text_pos++;
		*recid = x->text_recs[i];
		rc = storage_doc_get(s, x->coll, *recid, doc, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			continue;
		x->stats.docs_examined++;
		if (tm_interrupt_check(err) != 0)
			return -1;
		if ((rc = match_exec(x->match, doc, NULL, err)) < 0)
			return -1;
		if (rc == 1) {
			x->text_score = x->text_scores[i];
			x->text_has_score = true;
			if (x->want_key && x->text_keys != NULL && x->text_keys[i] != NULL) {
				x->key_doc = lazy_doc(x->key_doc);
				bson_concat(x->key_doc, x->text_keys[i]);
				x->have_key = true;
			}
			x->stats.access_returned++;
			return 1;
		}
	}
	x->scan_done = true;
	return 0;
}

/* The document with its score appended as SORT_TEXT_SCORE_FIELD, for the
 * sorter (valid until the next call). */
static const bson_t *
text_doc_with_score(plan_exec_t *x, const bson_t *doc)
{
	x->text_sort_doc = lazy_doc(x->text_sort_doc);
	bson_concat(x->text_sort_doc, doc);
	BSON_APPEND_DOUBLE(x->text_sort_doc, SORT_TEXT_SCORE_FIELD, x->text_score);
	return x->text_sort_doc;
}

/* The document to sort with its RecordId appended as the last element
 * (valid until the next call).  A $-prefixed name: no sort pattern can
 * name it (mongod refuses such sort paths), so a document that lacks a
 * sorted field never sorts by the appended one; taken off by position. */
static const bson_t *
recid_doc_for_sort(plan_exec_t *x, const bson_t *doc, recid_t recid)
{
	x->recid_sort_doc = lazy_doc(x->recid_sort_doc);
	bson_concat(x->recid_sort_doc, doc);
	BSON_APPEND_INT64(x->recid_sort_doc, "$recordId", recid);
	return x->recid_sort_doc;
}

/* The document to sort with returnKey's key appended as the last element
 * (null without one; valid until the next call). */
static const bson_t *
key_doc_for_sort(plan_exec_t *x, const bson_t *doc)
{
	x->key_sort_doc = lazy_doc(x->key_sort_doc);
	bson_concat(x->key_sort_doc, doc);
	if (x->have_key)
		BSON_APPEND_DOCUMENT(x->key_sort_doc, "$returnKey", x->key_doc);
	else
		BSON_APPEND_NULL(x->key_sort_doc, "$returnKey");
	return x->key_sort_doc;
}

/* doc without its last element, copied into *buf (lazy) and viewed by doc;
 * *last is that element, pointing into doc's old bytes (the caller keeps
 * them).  The element is found by position, not name: a stored top-level
 * field may be named anything. */
static void
trail_strip(bson_t **buf, bson_t *doc, bson_iter_t *last)
{
	bson_iter_t it;
	uint32_t n = bson_count_keys(doc), i = 0;

	*buf = lazy_doc(*buf);
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it)) {
		if (++i == n) {
			*last = it;
			break;
		}
		bson_append_iter(*buf, NULL, 0, &it);
	}
	bson_init_static(doc, bson_get_data(*buf), (*buf)->len);
}

/* A sorted document back without its trailing RecordId and key (into doc),
 * kept as the last ones (plan_exec_last_recid / plan_exec_last_key). */
static void
trail_doc_strip(plan_exec_t *x, bson_t *doc)
{
	bson_iter_t last;

	if (x->want_recid) {
		trail_strip(&x->recid_strip_doc, doc, &last);
		x->last_recid = bson_iter_int64(&last);
		x->have_recid = true;
		x->have_ckey = false;   /* a sorted result: no scan position */
	}
	if (x->want_key) {
		trail_strip(&x->key_strip_doc, doc, &last);
		x->have_key = BSON_ITER_HOLDS_DOCUMENT(&last);
		if (x->have_key) {
			const uint8_t *data;
			uint32_t len;
			bson_t k;

			bson_iter_document(&last, &len, &data);
			bson_init_static(&k, data, len);
			x->key_doc = lazy_doc(x->key_doc);
			bson_concat(x->key_doc, &k);
		}
	}
}

/* A sorted document back without its score field (into doc), the score
 * kept as the current one. */
static void
text_doc_strip(plan_exec_t *x, bson_t *doc)
{
	bson_iter_t it;

	x->text_strip_doc = lazy_doc(x->text_strip_doc);
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), SORT_TEXT_SCORE_FIELD) == 0) {
			x->text_score = bson_iter_as_double(&it);
			x->text_has_score = true;
			continue;
		}
		bson_append_iter(x->text_strip_doc, NULL, 0, &it);
	}
	bson_init_static(doc, bson_get_data(x->text_strip_doc), x->text_strip_doc->len);
}

static void plan_summary_format(const plan_exec_t *x, char *summary, size_t cap);

/* mongod's QUERY D2 20926 "Only one plan is available" when the planner
 * had a single solution (nothing to race, nothing cached): its query as
 * CanonicalQuery::toStringShort prints it ("ns: d.c query: { a: 1 } sort:
 * {} projection: {}", then limit / skip when set) and its planSummary. */
static void
log_one_plan(const plan_exec_t *x, const plan_request_t *req)
{
	bson_t attr, empty = BSON_INITIALIZER;
	bson_t *filter = req->filter == NULL && x->match != NULL ? match_to_bson_skip(x->match, 0) : NULL;
	char *q, *fs, *ss, *ps, summary[96];
	bson_string_t *str;

	fs = bv_doc_to_mongo_string(req->filter != NULL ? req->filter : filter != NULL ? filter : &empty);
	ss = bv_doc_to_mongo_string(req->sort != NULL ? req->sort : &empty);
	ps = bv_doc_to_mongo_string(req->projection != NULL ? req->projection : &empty);
	str = bson_string_new(NULL);
	bson_string_append_printf(str, "ns: %s query: %s sort: %s projection: %s", x->coll->ns, fs, ss, ps);
	if (req->limit > 0)
		bson_string_append_printf(str, " limit: %lld", (long long)req->limit);
	if (req->skip > 0)
		bson_string_append_printf(str, " skip: %lld", (long long)req->skip);
	q = bson_string_free(str, false);
	plan_summary_format(x, summary, sizeof(summary));
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "query", q);
	BSON_APPEND_UTF8(&attr, "planSummary", summary);
	tlog_debug(2, "QUERY", 20926, "Only one plan is available", &attr);
	bson_destroy(&attr);
	bson_free(q);
	bson_free(fs);
	bson_free(ss);
	bson_free(ps);
	if (filter != NULL)
		bson_destroy(filter);
}

int
plan_exec_new(const plan_request_t *req, plan_exec_t **out, terr_t *err)
{
	plan_exec_t *x = tm_malloc0(sizeof(*x));   /* holds no bson_t: no 128-byte alignment */
	bool backward = req->natural_backward, minmax;

	*out = NULL;
	x->match = req->match;
	x->skip = req->skip;
	x->limit = req->limit;
	x->collation = req->collation;
	x->coll = req->coll;
	x->borrowed = req->borrow;
	x->allow_disk_use = req->allow_disk_use;
	x->sort_memory_limit = req->sort_memory_limit;
	x->for_count = req->count;
	x->distinct_pos = -1;
	if (req->distinct_key != NULL)
		x->distinct_key = bson_strdup(req->distinct_key);
	minmax = !spec_empty(req->min) || !spec_empty(req->max);
	if (minmax && planner_minmax_check(req->min, req->max, err) != 0) {
		plan_exec_free(x);
		return -1;
	}
	if (!spec_empty(req->sort) && !natural_sort(req->sort, &backward)) {
		int dir;
		if (sort_spec_parse_meta(req->sort, match_has_text(x->match), &x->sort, err) != 0) {
			plan_exec_free(x);
			return -1;
		}
		sort_spec_set_collation(x->sort, req->collation);
		if (sort_spec_natural(x->sort, &dir)) {
			backward = dir < 0;
			if (sort_spec_nkeys(x->sort) == 0) {
				sort_spec_free(x->sort);
				x->sort = NULL;
			}
		}
	}
	if (!spec_empty(req->projection) &&
	    projection_compile(req->projection, x->match, req->let, &x->proj, err) != 0) {
		plan_exec_free(x);
		return -1;
	}
	if (req->spill_dir != NULL && x->sort != NULL)   /* only a sort spills */
		x->spill_dir = bson_strdup(req->spill_dir);
	x->backward = backward;
	x->hinted = req->hint != NULL;
	if (match_has_text(x->match)) {
		if (text_setup(x, req, err) != 0) {
			plan_exec_free(x);
			return -1;
		}
		x->text_sort_meta = sort_spec_has_text_score(x->sort);
		x->text_keep = req->keep_text_score;
		{
			bson_t *rest = match_to_bson_skip(x->match, match_text_conjuncts(x->match));
			x->text_ranked = x->text_sort_meta && sort_spec_nkeys(x->sort) == 1 && rest == NULL &&
			    text_query_plain(x->text_query);
			if (rest != NULL)
				bson_destroy(rest);
		}
		x->text_want_score = x->text_sort_meta || x->text_keep || projection_wants_text_score(x->proj);
		if (x->sort != NULL)
			x->sort_spec_doc = bson_copy(req->sort);
		if (!spec_empty(req->projection))
			x->proj_doc = bson_copy(req->projection);
		*out = x;
		return 0;
	}
	if (x->sort != NULL)
		x->sort_spec_doc = bson_copy(req->sort);
	if (!spec_empty(req->projection))
		x->proj_doc = bson_copy(req->projection);
	x->has_resume_after = req->has_resume_after;
	x->resume_after = req->resume_after;
	if (req->resume_key != NULL) {
		x->resume_key = bson_malloc(req->resume_key_len > 0 ? req->resume_key_len : 1);
		memcpy(x->resume_key, req->resume_key, req->resume_key_len);
		x->resume_key_len = req->resume_key_len;
	}
	/* geo: the near search, or S2 covering bounds (query/plan_geo.c) */
	if (x->match != NULL && !req->tailable) {
		if (plan_geo_setup(x->coll, x->match, req, &x->geo, err) != 0) {
			plan_exec_free(x);
			return -1;
		}
		if (x->geo != NULL) {
			x->access = ACCESS_GEO;
			x->stats.stage = plan_geo_is_near(x->geo) ? "GEO_NEAR" : "IXSCAN";
			*out = x;
			return 0;
		}
	}
	if (req->tailable) {
		/* mongod plans a tailable query as a forward collection scan only */
		x->access = ACCESS_SCAN;
		x->stats.stage = "COLLSCAN";
		x->tailable = true;
		x->backward = false;
	} else if (minmax) {
		x->access = ACCESS_SCAN;
		x->stats.stage = "COLLSCAN";
		if (x->coll != NULL) {
			if (planner_plan_minmax(x->coll, req->min, req->max, x->sort != NULL ? req->sort : NULL, req->hint,
			    &x->sol, err) != 0) {
				plan_exec_free(x);
				return -1;
			}
			x->access = ACCESS_IXSCAN;
			x->stats.stage = "IXSCAN";
		}
	} else if (req->id_point != NULL) {
		if (x->match != NULL || backward || req->hint != NULL || req->count || x->sort != NULL ||
		    !id_lookup_collation_ok(x->coll, req->id_point, req->collation)) {
			plan_exec_free(x);
			return terr_set(err, TERR_INTERNAL_ERROR, "an _id point request with other query parts");
		}
		bson_value_copy(req->id_point, &x->id_copy);
		x->id = &x->id_copy;
		x->id_check = true;
		x->access = ACCESS_ID;
		x->stats.stage = "EXPRESS_IXSCAN";
	} else if (x->match != NULL && !backward && req->hint == NULL && !req->count && match_is_id_point(x->match, &x->id) &&
	           id_lookup_collation_ok(x->coll, x->id, req->collation)) {
		x->access = ACCESS_ID;
		x->stats.stage = "EXPRESS_IXSCAN";
	} else {
		x->access = ACCESS_SCAN;
		x->stats.stage = "COLLSCAN";
		if (x->coll != NULL) {
			const bson_value_t *hint = req->hint;
			bson_value_t ehint;
			int ex = req->hint == NULL && x->sort == NULL && !backward && x->skip == 0 && !req->count &&
			    req->distinct_key == NULL ?
			    express_index(x->coll, x->match, x->limit) : -1;
			if (ex >= 0 && x->coll->indexes[ex].collation != req->collation)
				ex = -1;
			if (ex >= 0 && req->has_index_filter && (ex >= 64 || !(req->index_filter & (1ull << ex))))
				ex = -1;
			if (ex >= 0) {
				ehint.value_type = BSON_TYPE_UTF8;
				ehint.value.v_utf8.str = x->coll->indexes[ex].name;
				ehint.value.v_utf8.len = (uint32_t)strlen(x->coll->indexes[ex].name);
				hint = &ehint;
				x->express = true;
			}
			if (planner_plan_partial(x->coll, x->match, x->sort != NULL ? req->sort : NULL, hint,
			    req->collation, req->has_index_filter ? req->index_filter : PLANNER_ALL_INDEXES,
			    req->has_partial_ok, req->partial_ok, &x->sol, err) != 0) {
				plan_exec_free(x);
				return -1;
			}
			if (x->sol->kind == PLANNER_COLLSCAN && req->hint == NULL && x->distinct_key != NULL &&
			    (x->match == NULL || match_is_trivially_true(x->match)) && !backward) {
				/* distinct without a filter: an index led by the key */
				int di = distinct_index(x->coll, x->distinct_key);
				if (di >= 0 && x->coll->indexes[di].collation != req->collation)
					di = -1;
				if (di >= 0 && req->has_index_filter && (di >= 64 || !(req->index_filter & (1ull << di))))
					di = -1;
				if (di >= 0) {
					bson_value_t dh;
					dh.value_type = BSON_TYPE_UTF8;
					dh.value.v_utf8.str = x->coll->indexes[di].name;
					dh.value.v_utf8.len = (uint32_t)strlen(x->coll->indexes[di].name);
					planner_solution_free(x->sol);
					x->sol = NULL;
					if (planner_plan(x->coll, x->match, NULL, &dh, req->collation, &x->sol,
					    err) != 0) {
						plan_exec_free(x);
						return -1;
					}
				}
			}
			if (x->sol->kind == PLANNER_IXSCAN || x->sol->kind == PLANNER_OR) {
				x->access = ACCESS_IXSCAN;
				x->stats.stage = x->express ? "EXPRESS_IXSCAN" : "IXSCAN";
				if (x->sol->kind == PLANNER_OR) {
					x->branch_keys = tm_malloc0(sizeof(int64_t) * (size_t)x->sol->nbranches);
					x->branch_dups = tm_malloc0(sizeof(int64_t) * (size_t)x->sol->nbranches);
				}
				/* several candidates: the trial runs decide (first next) */
				x->trial_pending = !x->express && req->hint == NULL && x->sol->nrejected > 0;
			} else if (req->hint != NULL) {
				x->backward = x->sol->backward;
			}
		}
	}
	if (!x->trial_pending)
		choose_modes(x);
	if (x->access == ACCESS_IXSCAN && x->sol->kind == PLANNER_OR) {
		int i;
		for (i = 0; i < x->sol->nbranches; i++)
			if (x->sol->branches[i]->index < x->coll->nindexes)
				usage_bump(x->coll, &x->coll->indexes[x->sol->branches[i]->index]);
	} else if (x->access == ACCESS_IXSCAN && x->sol->index < x->coll->nindexes) {
		usage_bump(x->coll, &x->coll->indexes[x->sol->index]);
	} else if (x->access == ACCESS_ID && x->coll != NULL) {
		int i;
		for (i = 0; i < x->coll->nindexes; i++)
			if (x->coll->indexes[i].is_id)
				usage_bump(x->coll, &x->coll->indexes[i]);
	}
	if (x->sol != NULL && x->sol->nrejected == 0 && !x->express && x->coll != NULL && tlog_debug_on("QUERY", 2))
		log_one_plan(x, req);
	*out = x;
	return 0;
}

/* The common {_id: <fixed-size scalar>} filter read straight from its bytes
 * (libbson's iterator was ~300 instructions of a find by _id): true with *v
 * set only when the document is exactly that one element; anything else
 * (other types, more fields, odd bytes) answers false and the caller takes
 * libbson's walk, whose answer is then the same as before. */
static bool
id_point_fast(const bson_t *filter, bson_value_t *v)
{
	static const uint8_t width[] = {
		[BSON_TYPE_DOUBLE] = 8, [BSON_TYPE_OID] = 12, [BSON_TYPE_DATE_TIME] = 8, [BSON_TYPE_INT32] = 4,
		[BSON_TYPE_TIMESTAMP] = 8, [BSON_TYPE_INT64] = 8, [BSON_TYPE_DECIMAL128] = 16,
	};
	const uint8_t *d = bson_get_data(filter), *x;
	uint8_t t;
	uint32_t w;

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return false;   /* the memcpy below reads host order */
#endif
	if (filter->len < 10 || memcmp(d + 5, "_id", 4) != 0)
		return false;
	t = d[4];
	if (t >= sizeof(width) || (w = width[t]) == 0 || filter->len != 4 + 1 + 4 + w + 1 || d[9 + w] != 0)
		return false;
	x = d + 9;
	v->value_type = (bson_type_t)t;
	switch (t) {
	case BSON_TYPE_DOUBLE:
		memcpy(&v->value.v_double, x, 8);
		break;
	case BSON_TYPE_OID:
		memcpy(v->value.v_oid.bytes, x, 12);
		break;
	case BSON_TYPE_DATE_TIME:
		memcpy(&v->value.v_datetime, x, 8);
		break;
	case BSON_TYPE_INT32:
		memcpy(&v->value.v_int32, x, 4);
		break;
	case BSON_TYPE_TIMESTAMP:
		memcpy(&v->value.v_timestamp.increment, x, 4);
		memcpy(&v->value.v_timestamp.timestamp, x + 4, 4);
		break;
	case BSON_TYPE_INT64:
		memcpy(&v->value.v_int64, x, 8);
		break;
	default:   /* BSON_TYPE_DECIMAL128 */
		memcpy(&v->value.v_decimal128.low, x, 8);
		memcpy(&v->value.v_decimal128.high, x + 8, 8);
		break;
	}
	return true;
}

bool
plan_filter_id_point(const bson_t *filter, bson_value_t *v)
{
	bson_iter_t it;

	if (id_point_fast(filter, v))
		return true;

	if (!bson_iter_init(&it, filter) || !bson_iter_next(&it) || bson_iter_key_len(&it) != 3 ||
	    memcmp(bson_iter_key(&it), "_id", 3) != 0)
		return false;
	switch (bson_iter_type(&it)) {
	case BSON_TYPE_INT32:
	case BSON_TYPE_INT64:
	case BSON_TYPE_DOUBLE:
	case BSON_TYPE_DECIMAL128:
	case BSON_TYPE_OID:
	case BSON_TYPE_BOOL:
	case BSON_TYPE_DATE_TIME:
	case BSON_TYPE_TIMESTAMP:
	case BSON_TYPE_BINARY:
		break;
	default:
		return false;
	}
	*v = *bson_iter_value(&it);
	return !bson_iter_next(&it);
}

/* True when doc's first element is _id holding exactly id's bytes, for the
 * types whose equal bytes mean equal values (a double only when not NaN):
 * the found document's check without libbson's iterator (~200
 * instructions).  False says nothing: the caller then compares values. */
static bool
id_bytes_equal(const bson_t *doc, const bson_value_t *id)
{
	const uint8_t *d = bson_get_data(doc), *x = d + 9;
	uint32_t w;

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return false;
#endif
	if (doc->len < 10 || d[4] != (uint8_t)id->value_type || memcmp(d + 5, "_id", 4) != 0)
		return false;
	switch (id->value_type) {
	case BSON_TYPE_INT32:
		w = 4;
		break;
	case BSON_TYPE_INT64:
	case BSON_TYPE_DATE_TIME:
	case BSON_TYPE_TIMESTAMP:
	case BSON_TYPE_DOUBLE:
		w = 8;
		break;
	case BSON_TYPE_OID:
		w = 12;
		break;
	default:
		return false;
	}
	if (doc->len < 9 + w + 1)
		return false;
	switch (id->value_type) {
	case BSON_TYPE_INT32:
		return memcmp(x, &id->value.v_int32, 4) == 0;
	case BSON_TYPE_INT64:
		return memcmp(x, &id->value.v_int64, 8) == 0;
	case BSON_TYPE_DATE_TIME:
		return memcmp(x, &id->value.v_datetime, 8) == 0;
	case BSON_TYPE_TIMESTAMP:
		return memcmp(x, &id->value.v_timestamp.increment, 4) == 0 &&
		    memcmp(x + 4, &id->value.v_timestamp.timestamp, 4) == 0;
	case BSON_TYPE_DOUBLE:
		return id->value.v_double == id->value.v_double && memcmp(x, &id->value.v_double, 8) == 0;
	default:
		return memcmp(x, id->value.v_oid.bytes, 12) == 0;
	}
}

int
plan_express_id(storage_session_t *s, storage_coll_t *coll, const bson_value_t *id, bson_t *doc, terr_t *err)
{
	const storage_index_t *ix = NULL;
	bson_iter_t it;
	int rc;

	for (int i = 0; i < coll->nindexes && ix == NULL; i++)
		if (coll->indexes[i].is_id)
			ix = &coll->indexes[i];
	if (ix == NULL)
		return 2;
	usage_bump(coll, ix);
	rc = storage_doc_find_id(s, coll, id, NULL, doc, err);
	/* what opctx_flush reports for the same plan: one key, the document */
	if (tm_opctx_tls != NULL) {
		static const char summary[] = "EXPRESS_IXSCAN { _id: 1 }";
		tm_opctx_t *op = tm_opctx_tls;

		/* tm_opctx_add_plan_stats inline, the summary of known length */
		_Static_assert(sizeof summary <= sizeof op->plan_summary, "the summary fits");
		op->keys_examined += 1;
		op->docs_examined += rc == 0 ? 1 : 0;
		if (op->plan_summary[0] == '\0')
			memcpy(op->plan_summary, summary, sizeof summary);
	}
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	/* the index answers equality by KeyString; the document is checked
	 * as the general plan checks it (id_check) */
	if (id_bytes_equal(doc, id))
		return 1;
	if (!bson_iter_init(&it, doc) || !bson_iter_next(&it) || bson_iter_key_len(&it) != 3 ||
	    memcmp(bson_iter_key(&it), "_id", 3) != 0 || !bv_equal(bson_iter_value(&it), id))
		return 0;
	return 1;
}

const plan_stats_t *
plan_exec_stats(const plan_exec_t *x)
{
	return &x->stats;
}

/* IXSCAN + FETCH: the next document (not returned before) behind a key in
 * one of the solution's ranges that passes the filter. */
typedef enum { CHK_MATCH, CHK_SKIP, CHK_SEEK, CHK_DONE } chk_t;

static int
part_cmp(const keystring_t *v, const uint8_t *b, size_t blen)
{
	size_t n = v->len < blen ? v->len : blen;
	int c = memcmp(v->buf, b, n);

	if (c != 0)
		return c;
	return v->len < blen ? -1 : v->len > blen;
}

/*
 * mongod's IndexBoundsChecker, simply: is this key inside the bounds of
 * every field?  If not, where is the next key that could be (a seek), or
 * is the scan over?  Backward scans only filter.
 */
static chk_t
bounds_check(plan_exec_t *x, const planner_solution_t *sc, const uint8_t *key, size_t klen)
{
	bool desc[KEYGEN_MAX_FIELDS_PLAN];
	bson_t vals;
	bson_iter_t it;
	keystring_t part, prefix;
	chk_t res = CHK_MATCH;
	int i, j;

	if (sc->nfields > KEYGEN_MAX_FIELDS_PLAN)
		return CHK_MATCH;
	for (i = 0; i < sc->nfields; i++)
		desc[i] = sc->fields[i].desc;
	bson_init(&vals);
	if (!keystring_decode_values(key, klen, sc->nfields, desc, &vals) || !bson_iter_init(&it, &vals)) {
		bson_destroy(&vals);
		return CHK_MATCH;   /* the filter still decides */
	}
	keystring_init(&part);
	keystring_init(&prefix);
	for (i = 0; i < sc->nfields && res == CHK_MATCH; i++) {
		const planner_field_t *f = &sc->fields[i];
		const bson_value_t *v;
		if (!bson_iter_next(&it))
			break;
		v = bson_iter_value(&it);
		keystring_reset(&part);
		keystring_append_value(&part, v, f->desc);
		for (j = 0; j < f->n; j++) {
			const planner_range_t *e = &f->enc[j];
			int clo = part_cmp(&part, e->lo, e->lo_len), chi;
			if (clo < 0 || (clo == 0 && !e->lo_incl)) {
				/* in the gap before interval j: go to its start */
				res = CHK_SEEK;
				if (sc->backward) {
					res = CHK_SKIP;
					break;
				}
				keystring_append_value_coll(&prefix, &f->iv[j].lo, f->desc,
				                            planner_field_collation(f, sc->collation));
				if (!f->iv[j].lo_incl)
					keystring_append_max(&prefix);
				break;
			}
			chi = part_cmp(&part, e->hi, e->hi_len);
			if (chi < 0 || (chi == 0 && e->hi_incl))
				break;   /* inside interval j */
		}
		if (res != CHK_MATCH)
			break;
		if (j == f->n) {
			/* past every interval: the next value of the field before */
			if (sc->backward) {
				res = CHK_SKIP;
			} else if (i == 0) {
				res = CHK_DONE;
			} else {
				keystring_append_max(&prefix);
				res = CHK_SEEK;
			}
			break;
		}
		keystring_append_value(&prefix, v, f->desc);
	}
	if (res == CHK_SEEK) {
		bson_free(x->seek_key);
		x->seek_key = bson_malloc(prefix.len);
		memcpy(x->seek_key, prefix.buf, prefix.len);
		x->seek_len = prefix.len;
	}
	keystring_destroy(&part);
	keystring_destroy(&prefix);
	bson_destroy(&vals);
	return res;
}

/* The IXSCAN being run: the solution, or the current branch of an OR. */
static const planner_solution_t *
cur_scan(const plan_exec_t *x)
{
	return x->sol->kind == PLANNER_OR ? x->sol->branches[x->branch_i] : x->sol;
}

static int
ixscan_next(plan_exec_t *x, storage_session_t *s, recid_t *recid, bson_t *doc, terr_t *err)
{
	int rc;

	for (;;) {
		const uint8_t *key;
		size_t klen;
		bson_t unused;
		const planner_solution_t *sc = cur_scan(x);
		if (x->work_limit > 0 && x->stats.keys_examined >= x->work_limit)
			return 2;
		if (sc->index >= x->coll->nindexes)
			return terr_set(err, 175, "query plan killed :: caused by :: index dropped");
		if (x->cur == NULL && x->seek_key != NULL) {
			/* reposition inside the current range */
			const planner_range_t *r = &sc->ranges[x->range_i - 1];
			x->seeks++;
			rc = storage_index_scan_open(s, x->coll, &x->coll->indexes[sc->index], x->seek_key, x->seek_len,
			    true, r->hi, r->hi_len, r->hi_incl, sc->backward, &x->cur, err);
			bson_free(x->seek_key);
			x->seek_key = NULL;
			if (rc != 0)
				return -1;
		}
		if (x->cur == NULL) {
			const planner_range_t *r;
			if (x->range_i >= sc->nranges) {
				if (x->sol->kind == PLANNER_OR && x->branch_i + 1 < x->sol->nbranches) {
					x->branch_i++;
					x->range_i = 0;
					continue;
				}
				x->scan_done = true;
				return 0;
			}
			r = &sc->ranges[x->range_i++];
			x->seeks++;
			if (storage_index_scan_open(s, x->coll, &x->coll->indexes[sc->index], r->lo, r->lo_len,
			    r->lo_incl, r->hi, r->hi_len, r->hi_incl, sc->backward, &x->cur, err) != 0)
				return -1;
		}
		rc = storage_cursor_next(x->cur, recid, &unused, &key, &klen, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			storage_cursor_close(x->cur);
			x->cur = NULL;
			continue;
		}
		x->stats.keys_examined++;
		if (x->branch_keys != NULL)
			x->branch_keys[x->branch_i]++;
		if (tm_interrupt_check(err) != 0)
			return -1;
		if (sc->nfields > 1 || (sc->nfields == 1 && sc->fields[0].n > 1)) {
			chk_t ck = bounds_check(x, sc, key, klen);
			if (ck == CHK_SKIP)
				continue;
			if (ck == CHK_SEEK || ck == CHK_DONE) {
				storage_cursor_close(x->cur);
				x->cur = NULL;
				if (ck == CHK_DONE)
					x->range_i = sc->nranges;
				continue;
			}
		}
		/* mongod's IXSCAN filter: what the key alone decides, before any
		 * fetch (the rebuilt key document holds the exact values) */
		if (sc == x->sol && key_mask(x) != 0) {
			bson_t kdoc;
			if (covered_rebuild(x, sc, key, klen, &kdoc, err) != 0)
				return -1;
			if ((rc = match_exec_skip(x->match, ~key_mask(x), &kdoc, err)) < 0)
				return -1;
			if (rc == 0) {
				x->stats.keys_filtered++;
				continue;
			}
		}
		/* A document can come back through several keys (multikey, $or),
		 * or, for writes, after its own update moved its key ahead. */
		if ((sc->dedup || x->sol->kind == PLANNER_OR || x->borrowed) && !recset_add(&x->seen, *recid)) {
			x->stats.dups_dropped++;
			if (x->branch_dups != NULL)
				x->branch_dups[x->branch_i]++;
			continue;
		}
		if (x->count_scan) {
			static const uint8_t empty_doc[5] = {5, 0, 0, 0, 0};
			bson_init_static(doc, empty_doc, sizeof(empty_doc));
			x->stats.access_returned++;
			return 1;
		}
		if (x->covered) {
			/* the bounds decided the filter (covered_for) */
			if (covered_rebuild(x, sc, key, klen, doc, err) != 0)
				return -1;
			if (x->want_key && key_capture(x, sc, key, klen, err) != 0)
				return -1;
			x->stats.access_returned++;
			return 1;
		}
		if (x->coll->indexes[sc->index].clustered) {
			/* CLUSTERED_IXSCAN: the clustered table gave the document */
			if (!bson_init_static(doc, bson_get_data(&unused), unused.len))
				return terr_set(err, TERR_INTERNAL_ERROR, "corrupt clustered record");
			rc = 0;
		} else {
			rc = storage_doc_get(s, x->coll, *recid, doc, err);
		}
		if (rc < 0)
			return -1;
		if (rc == 1)
			continue;
		x->stats.docs_examined++;
		/* exact bounds decide the filter (the FETCH has none in explain,
		 * and covered plans already rely on it); otherwise what they
		 * do not answer */
		if (x->match == NULL || x->sol->exact)
			rc = 1;
		else if ((rc = match_exec_skip(x->match, fetch_skip(x), doc, err)) < 0)
			return -1;
		if (rc == 1) {
			x->stats.access_returned++;
			if (x->want_key && key_capture(x, sc, key, klen, err) != 0)
				return -1;
			if (x->distinct_pos >= 0)
				distinct_skip(x, sc, key, klen);
			return 1;
		}
	}
}

/* ---- trial runs --------------------------------------------------------------
 *
 * mongod's multi-planner, simply: every candidate plan (the planner's
 * choice and its rejected plans) runs one work at a time, round robin,
 * until one reaches EOF, one has produced a batch's worth of results
 * (101, or skip + limit when smaller) or each has done 10000 works.  A
 * work is one index key (IXSCAN + FETCH) or one document (COLLSCAN).  The
 * score is plan_ranker's: 1 + advanced/works + 1 at EOF + small bonuses
 * for no blocking SORT and no index intersection; the highest wins, ties
 * going to the planner's order (the cost rule).  A plan needing a
 * blocking SORT produces nothing before its input ends.  The winner then
 * runs from the start (its results are the same; its counters are one
 * pass), the views keep their counters for allPlansExecution.
 */

static void append_count(bson_t *out, const char *key, int64_t v);

#define TRIAL_MAX_WORKS 10000
#define TRIAL_MAX_RESULTS 101

static plan_exec_t *
trial_view(const plan_exec_t *x, planner_solution_t *sol)
{
	plan_exec_t *v = tm_malloc0(sizeof(*v));

	v->is_view = true;
	v->borrowed = true;
	v->distinct_pos = -1;
	v->coll = x->coll;
	v->match = x->match;
	v->sort = x->sort;
	v->proj = x->proj;
	v->sort_spec_doc = x->sort_spec_doc;
	v->proj_doc = x->proj_doc;
	v->skip = x->skip;
	v->limit = x->limit;
	v->sol = sol;
	v->access = sol->kind == PLANNER_COLLSCAN ? ACCESS_SCAN : ACCESS_IXSCAN;
	v->backward = sol->kind == PLANNER_COLLSCAN ? x->backward : sol->backward;
	v->stats.stage = v->access == ACCESS_SCAN ? "COLLSCAN" : "IXSCAN";
	if (sol->kind == PLANNER_OR) {
		v->branch_keys = tm_malloc0(sizeof(int64_t) * (size_t)sol->nbranches);
		v->branch_dups = tm_malloc0(sizeof(int64_t) * (size_t)sol->nbranches);
	}
	return v;
}

/* Free what a view owns (its runtime), never what it borrows. */
static void
trial_view_free(plan_exec_t *v)
{
	if (v == NULL)
		return;
	if (v->cur != NULL)
		storage_cursor_close(v->cur);
	lazy_doc_free(v->covered_doc);   /* the key filter's rebuilt documents */
	bson_free(v->branch_keys);
	bson_free(v->branch_dups);
	bson_free(v->seek_key);
	bson_free(v->seen.slot);
	bson_free(v);
}

static int64_t
trial_works(const plan_exec_t *v)
{
	return v->access == ACCESS_IXSCAN ? v->stats.keys_examined : v->stats.docs_examined;
}

static int
trial_run(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	planner_solution_t *sol = x->sol;
	int n = 1 + sol->nrejected, i, best = 0, alive;
	int64_t max_results = TRIAL_MAX_RESULTS, round;
	int64_t *records;
	bool stop = false;

	x->trial_pending = false;
	if (x->limit > 0 && tm_i64_add_sat(x->skip, x->limit) < max_results)
		max_results = x->skip + x->limit;
	x->trials = tm_malloc0(sizeof(plan_exec_t *) * (size_t)n);
	records = tm_malloc0(sizeof(int64_t) * (size_t)n);
	x->ntrials = n;
	for (i = 0; i < n; i++)
		x->trials[i] = trial_view(x, i == 0 ? sol : sol->rejected[i - 1]);
	alive = n;
	for (round = 0; round < TRIAL_MAX_WORKS && !stop && alive > 0; round++) {
		for (i = 0; i < n && !stop; i++) {
			plan_exec_t *v = x->trials[i];
			recid_t recid;
			bson_t doc;
			int rc;
			if (v->trial_eof || v->work_limit < 0)
				continue;
			v->work_limit = trial_works(v) + 1;
			rc = plan_exec_next_record(v, s, &recid, &doc, err);
			if (rc < 0) {
				if (err != NULL && err->code == TERR_MAX_TIME_MS_EXPIRED) {
					bson_free(records);
					return -1;
				}
				/* a failing candidate drops out of the race */
				terr_clear(err);
				v->work_limit = -1;
				alive--;
				continue;
			}
			if (rc == 1) {
				records[i]++;
				if (!sort_needed(v))
					v->trial_advanced++;
			} else if (rc == 0) {
				v->trial_eof = true;
				if (sort_needed(v))
					v->trial_advanced = records[i];
				stop = true;
			}
			if (v->trial_advanced >= max_results)
				stop = true;
		}
	}
	for (i = 0; i < n; i++) {
		plan_exec_t *v = x->trials[i];
		int64_t works = trial_works(v) + (v->trial_eof ? 1 : 0);
		double eps;
		if (v->cur != NULL) {
			storage_cursor_close(v->cur);
			v->cur = NULL;
		}
		v->work_limit = v->work_limit < 0 ? -1 : 0;
		v->stats.returned = v->trial_advanced;
		v->produced = v->trial_advanced;
		if (works < 1)
			works = 1;
		eps = 1.0 / (10.0 * (double)works);
		if (eps > 1e-4)
			eps = 1e-4;
		v->trial_score = v->work_limit < 0 ? -1.0 :
		    1.0 + (double)v->trial_advanced / (double)works + (v->trial_eof ? 1.0 : 0.0) +
		    (sort_needed(v) ? 0.0 : eps) + eps;
		if (v->trial_score > x->trials[best]->trial_score)
			best = i;
	}
	bson_free(records);
	if (best > 0) {
		/* the winner takes the planner's place; the others are rejected */
		planner_solution_t *w = sol->rejected[best - 1];
		w->rejected = sol->rejected;
		w->nrejected = sol->nrejected;
		sol->rejected = NULL;
		sol->nrejected = 0;
		w->rejected[best - 1] = sol;
		x->sol = w;
		x->backward = w->backward;
		x->access = w->kind == PLANNER_COLLSCAN ? ACCESS_SCAN : ACCESS_IXSCAN;
		x->stats.stage = x->access == ACCESS_SCAN ? "COLLSCAN" : "IXSCAN";
		bson_free(x->branch_keys);
		bson_free(x->branch_dups);
		x->branch_keys = x->branch_dups = NULL;
		if (w->kind == PLANNER_OR) {
			x->branch_keys = tm_malloc0(sizeof(int64_t) * (size_t)w->nbranches);
			x->branch_dups = tm_malloc0(sizeof(int64_t) * (size_t)w->nbranches);
		}
	}
	choose_modes(x);
	return 0;
}

int
plan_exec_choose(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	if (x->coll != NULL && x->trial_pending)
		return trial_run(x, s, err);
	return 0;
}

void
plan_exec_all_plans_append(const plan_exec_t *x, bson_t *arr)
{
	int i;

	for (i = 0; i < x->ntrials; i++) {
		const plan_exec_t *v = x->trials[i];
		char key[16];
		const char *k;
		bson_t d, st;
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_document_begin(arr, k, -1, &d);
		append_count(&d, "nReturned", v->trial_advanced);
		BSON_APPEND_INT32(&d, "executionTimeMillisEstimate", 0);
		append_count(&d, "totalKeysExamined", v->stats.keys_examined);
		append_count(&d, "totalDocsExamined", v->stats.docs_examined);
		BSON_APPEND_DOCUMENT_BEGIN(&d, "executionStages", &st);
		plan_exec_explain_append(v, true, &st);
		bson_append_document_end(&d, &st);
		bson_append_document_end(arr, &d);
	}
}

/* The collection scan's cursor, opened on first use: tailable, and placed
 * after the resume point when asked. */
static int
scan_open(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	if (storage_scan_open(s, x->coll, x->backward, &x->cur, err) != 0)
		return -1;
	if (x->tailable)
		storage_cursor_set_tailable(x->cur);
	if (x->resume_key != NULL)
		storage_cursor_seek_after_key(x->cur, x->resume_key, x->resume_key_len);
	else if (x->has_resume_after)
		storage_cursor_seek_after(x->cur, x->resume_after);
	return 0;
}

/* The collection scan reached the end: done for good, unless tailable (the
 * end is then only "nothing new yet"). */
static void
scan_end(plan_exec_t *x)
{
	if (x->tailable)
		return;
	x->scan_done = true;
	storage_cursor_close(x->cur);
	x->cur = NULL;
}

/* The next stored document that passes the filter. */
int
plan_exec_next_record(plan_exec_t *x, storage_session_t *s, recid_t *recid, bson_t *doc,
                      terr_t *err)
{
	recid_t own;
	int rc;

	if (x->coll == NULL)
		return 0;
	if (x->trial_pending && trial_run(x, s, err) != 0)
		return -1;
	x->have_key = false;   /* returnKey: set again by an index entry */
	if (recid == NULL)
		recid = &own;   /* the index paths need it; a collection scan is told not to read it */
	if (x->access == ACCESS_ID) {
		if (x->id_done)
			return 0;
		x->id_done = true;
		x->stats.keys_examined++;
		rc = storage_doc_find_id(s, x->coll, x->id, recid, doc, err);
		if (rc < 0)
			return -1;
		if (rc == 1)
			return 0;
		x->stats.docs_examined++;
		if (x->id_check) {
			bson_iter_t it;
			rc = bson_iter_init(&it, doc) && bson_iter_next(&it) && strcmp(bson_iter_key(&it), "_id") == 0 &&
			    bv_equal(bson_iter_value(&it), x->id);
		} else {
			rc = x->match == NULL ? 1 : match_exec(x->match, doc, NULL, err);
		}
		if (rc == 1)
			x->stats.access_returned++;
		return rc;
	}
	if (x->scan_done)
		return 0;
	if (x->access == ACCESS_TEXT)
		return text_next(x, s, recid, doc, err);
	if (x->access == ACCESS_GEO) {
		if (x->want_key)
			plan_geo_want_keys(x->geo);
		rc = plan_geo_next(x->geo, s, x->coll, x->match, recid, doc, &x->stats, err);
		if (rc == 0)
			x->scan_done = true;
		if (rc == 1 && x->want_key && geo_key_capture(x, doc, err) != 0)
			return -1;
		return rc;
	}
	if (x->access == ACCESS_IXSCAN)
		return ixscan_next(x, s, recid, doc, err);
	if (x->cur == NULL && scan_open(x, s, err) != 0)
		return -1;
	for (;;) {
		if (x->work_limit > 0 && x->stats.docs_examined >= x->work_limit)
			return 2;
		rc = storage_cursor_next(x->cur, recid == &own ? NULL : recid, doc, NULL, NULL, err);
		if (rc <= 0) {
			if (rc == 0)
				scan_end(x);
			return rc;
		}
		x->stats.docs_examined++;
		if (tm_interrupt_check(err) != 0)
			return -1;
		if (x->match == NULL) {
			x->stats.access_returned++;
			return 1;
		}
		rc = match_exec(x->match, doc, NULL, err);
		if (rc == 1)
			x->stats.access_returned++;
		if (rc != 0)
			return rc;
	}
}

/* Drain the filtered documents into the sorter (top skip+limit only). */
static int
fill_sorter(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	recid_t recid;
	bson_t doc;
	int rc;

	/* (skip + limit past 2^63: every document) */
	x->sorter = sorter_new(x->sort, x->limit > 0 ? tm_i64_add_sat(x->skip, x->limit) : 0, x->allow_disk_use,
	                       x->sort_memory_limit);
	if (x->spill_dir != NULL)
		sorter_set_spill_dir(x->sorter, x->spill_dir);
	while ((rc = plan_exec_next_record(x, s, &recid, &doc, err)) == 1) {
		/* the score (and showRecordId's RecordId, last) travel with the
		 * document through the sort */
		const bson_t *d = x->text_want_score ? text_doc_with_score(x, &doc) : &doc;

		if (x->want_key)
			d = key_doc_for_sort(x, d);
		if (x->want_recid)
			d = recid_doc_for_sort(x, d, recid);
		if (sorter_add(x->sorter, d, err) != 0)
			return -1;
	}
	if (rc < 0)
		return -1;
	if (sorter_finish_ex(x->sorter, err) != 0)
		return -1;
	x->sorted = true;
	x->stats.stage = "SORT";
	return 0;
}

/* A result's projection (and $text's kept score), into *doc: 0 or -1. */
static int
project_result(plan_exec_t *x, bson_t *doc, terr_t *err)
{
	if (x->proj != NULL) {
		int pos = -1;
		if (projection_needs_match_pos(x->proj) && x->match != NULL &&
		    match_exec(x->match, doc, &pos, err) < 0)
			return -1;
		x->proj_out = lazy_doc(x->proj_out);
		if (projection_apply_meta(x->proj, doc, pos, x->text_has_score ? &x->text_score : NULL, x->proj_out,
		    err) != 0)
			return -1;
		bson_init_static(doc, bson_get_data(x->proj_out), x->proj_out->len);
	}
	if (x->text_keep && x->text_has_score) {
		x->text_keep_doc = lazy_doc(x->text_keep_doc);
		bson_concat(x->text_keep_doc, doc);
		BSON_APPEND_DOUBLE(x->text_keep_doc, SORT_TEXT_SCORE_FIELD, x->text_score);
		bson_init_static(doc, bson_get_data(x->text_keep_doc), x->text_keep_doc->len);
	}
	return 0;
}

int
plan_exec_next(plan_exec_t *x, storage_session_t *s, bson_t *doc, terr_t *err)
{
	int rc;

	if (x->trial_pending && x->coll != NULL && trial_run(x, s, err) != 0)
		return -1;
	for (;;) {
		if (x->limit > 0 && x->produced >= x->limit)
			return 0;
		if (sort_needed(x)) {
			const bson_t *next;
			if (!x->sorted && fill_sorter(x, s, err) != 0)
				return -1;
			/* a spilled run that cannot be read back is an error, not
			 * the end of the results */
			if ((rc = sorter_next_ex(x->sorter, &next, err)) <= 0)
				return rc;
			bson_init_static(doc, bson_get_data(next), next->len);
			if (x->want_recid || x->want_key)
				trail_doc_strip(x, doc);
			if (x->text_want_score)
				text_doc_strip(x, doc);
			rc = 1;
		} else {
			rc = plan_exec_next_record(x, s, x->want_recid ? &x->last_recid : NULL, doc, err);
			x->have_recid = x->want_recid && rc == 1;
			x->have_ckey = false;
			if (x->have_recid && x->access == ACCESS_SCAN && x->cur != NULL) {
				const uint8_t *k;
				size_t kl;
				if (storage_cursor_cluster_key(x->cur, &k, &kl)) {
					if (kl > x->ckey_cap) {
						x->ckey_cap = kl;
						x->ckey = bson_realloc(x->ckey, kl);
					}
					if (kl > 0)
						memcpy(x->ckey, k, kl);
					x->ckey_len = kl;
					x->have_ckey = true;
				}
			}
		}
		if (rc <= 0)
			return rc;
		if (x->skipped < x->skip) {
			x->skipped++;
			continue;
		}
		x->produced++;
		x->stats.returned++;
		return project_result(x, doc, err) != 0 ? -1 : 1;
	}
}

/* The plans plan_exec_next_batch runs in its own loop: a collection scan
 * with at most a filter, skip, limit and projection; no sort, RecordIds,
 * index keys or trial (what plan_exec_next does for those per result
 * stays there). */
static bool
batch_scan_ok(const plan_exec_t *x)
{
	return x->coll != NULL && x->access == ACCESS_SCAN && !x->trial_pending && !sort_needed(x) &&
	    !x->want_recid && !x->want_key && !x->text_keep && !x->is_view && x->work_limit <= 0;
}

int
plan_exec_next_batch(plan_exec_t *x, storage_session_t *s, doc_sink_t *sink, terr_t *err)
{
	const uint8_t *data;
	uint32_t len;
	bson_t doc;
	int rc;

	if (x->trial_pending && x->coll != NULL && trial_run(x, s, err) != 0)
		return -1;
	if (!batch_scan_ok(x)) {
		/* every other plan: its results one at a time, handed on */
		while ((rc = plan_exec_next(x, s, &doc, err)) == 1)
			if ((rc = sink->take(sink, bson_get_data(&doc), doc.len, err)) != DOC_SINK_MORE)
				return rc;
		return rc;
	}
	/* what plan_exec_next and plan_exec_next_record do per result, in one
	 * loop, in the same order: the limit before reading, each examined
	 * document counted and checked for interruption, then the filter,
	 * skip and projection */
	x->have_key = false;
	x->have_recid = false;
	x->have_ckey = false;
	for (;;) {
		if (x->limit > 0 && x->produced >= x->limit)
			return 0;
		if (x->scan_done)
			return 0;
		if (x->cur == NULL && scan_open(x, s, err) != 0)
			return -1;
		/* WiredTiger's bytes, lent until the next move: the sink copies
		 * them before it */
		rc = storage_cursor_next_view(x->cur, &data, &len, err);
		if (rc <= 0) {
			if (rc == 0)
				scan_end(x);
			return rc;
		}
		x->stats.docs_examined++;
		if (tm_interrupt_check(err) != 0)
			return -1;
		if (x->match != NULL || x->proj != NULL) {
			if (!bson_init_static(&doc, data, len))
				return terr_set(err, TERR_INTERNAL_ERROR, "corrupt record in %s", x->coll->ns);
			if (x->match != NULL && (rc = match_exec(x->match, &doc, NULL, err)) != 1) {
				if (rc < 0)
					return -1;
				continue;
			}
		}
		x->stats.access_returned++;
		if (x->skipped < x->skip) {
			x->skipped++;
			continue;
		}
		x->produced++;
		x->stats.returned++;
		if (x->proj != NULL) {
			if (project_result(x, &doc, err) != 0)
				return -1;
			data = bson_get_data(&doc);
			len = doc.len;
		}
		if ((rc = sink->take(sink, data, len, err)) != DOC_SINK_MORE)
			return rc;
	}
}

/* ---- the operation's examined counts (common/opctx.h; src/toolbelt/) ---- */
/* Add what x examined since the last call to the calling thread's current
 * operation, with the plan's summary ("IXSCAN { a: 1 }") the first time. */
/* Append s to the summary being built at *n (cut at the buffer's end). */
static void
summary_cat(char *buf, size_t cap, size_t *n, const char *s)
{
	size_t l = strlen(s);

	if (*n >= cap - 1)
		return;
	if (l > cap - 1 - *n)
		l = cap - 1 - *n;
	memcpy(buf + *n, s, l);
	*n += l;
	buf[*n] = '\0';
}

/* The plan's summary as mongod prints planSummary ("COLLSCAN", "IXSCAN {
 * a: 1, b: -1 }") into summary (cap bytes; "" before a stage is chosen):
 * formatted by hand (snprintf was a tenth of a find by _id). */
static void
plan_summary_format(const plan_exec_t *x, char *summary, size_t cap)
{
	const char *ix;

	summary[0] = '\0';
	if (x->stats.stage != NULL) {
		size_t n = 0;

		summary_cat(summary, cap, &n, x->stats.stage);
		if ((ix = plan_exec_index_name(x)) != NULL && x->coll != NULL) {
			for (int i = 0; i < x->coll->nindexes; i++) {
				if (strcmp(x->coll->indexes[i].name, ix) != 0)
					continue;
				bson_iter_t kit;
				bool first = true;
				/* mongod's form: "IXSCAN { a: 1, b: -1 }" */
				if (bson_iter_init(&kit, x->coll->indexes[i].key)) {
					while (bson_iter_next(&kit) && n < cap - 1) {
						summary_cat(summary, cap, &n, first ? " { " : ", ");
						summary_cat(summary, cap, &n, bson_iter_key(&kit));
						summary_cat(summary, cap, &n, ": ");
						if (BSON_ITER_HOLDS_UTF8(&kit)) {
							summary_cat(summary, cap, &n, "\"");
							summary_cat(summary, cap, &n, bson_iter_utf8(&kit, NULL));
							summary_cat(summary, cap, &n, "\"");
						} else {
							double d = bson_iter_as_double(&kit);
							char num[32];
							if (d == 1.0 || d == -1.0)
								summary_cat(summary, cap, &n, d > 0 ? "1" : "-1");
							else {
								snprintf(num, sizeof(num), "%g", d);
								summary_cat(summary, cap, &n, num);
							}
						}
						first = false;
					}
					summary_cat(summary, cap, &n, " }");
				}
				break;
			}
		} else if (strcmp(x->stats.stage, "EXPRESS_IXSCAN") == 0) {
			n = 0;
			summary_cat(summary, cap, &n, "EXPRESS_IXSCAN { _id: 1 }");
		}
	}
}

static void
opctx_flush(plan_exec_t *x)
{
	char summary[96];

	if (x->is_view || tm_opctx_tls == NULL)
		return;
	summary[0] = '\0';
	/* the summary is kept only by the operation's first plan */
	if (x->stats.stage != NULL && tm_opctx_tls->plan_summary[0] == '\0')
		plan_summary_format(x, summary, sizeof(summary));
	tm_opctx_add_plan_stats(x->stats.keys_examined - x->rep_keys, x->stats.docs_examined - x->rep_docs,
	    summary[0] != '\0' ? summary : NULL);
	x->rep_keys = x->stats.keys_examined;
	x->rep_docs = x->stats.docs_examined;
}

void
plan_exec_want_recid(plan_exec_t *x)
{
	x->want_recid = true;
}

void
plan_exec_want_key(plan_exec_t *x)
{
	x->want_key = true;
}

bool
plan_exec_last_key(const plan_exec_t *x, bson_t *out)
{
	if (!x->have_key)
		return false;
	bson_init_static(out, bson_get_data(x->key_doc), x->key_doc->len);
	return true;
}

bool
plan_exec_last_cluster_key(const plan_exec_t *x, const uint8_t **key, size_t *len)
{
	if (!x->have_ckey)
		return false;
	*key = x->ckey;
	*len = x->ckey_len;
	return true;
}

bool
plan_exec_last_recid(const plan_exec_t *x, recid_t *out)
{
	if (!x->have_recid)
		return false;
	*out = x->last_recid;
	return true;
}

int
plan_exec_save(plan_exec_t *x, terr_t *err)
{
	opctx_flush(x);
	if (x->cur != NULL)
		return storage_cursor_save(x->cur, err);
	return 0;
}

int
plan_exec_restore(plan_exec_t *x, storage_session_t *s, terr_t *err)
{
	if (x->cur != NULL)
		return storage_cursor_restore(x->cur, s, err);
	return 0;
}

void
plan_exec_free(plan_exec_t *x)
{
	int i;

	if (x == NULL)
		return;
	opctx_flush(x);
	for (i = 0; i < x->ntrials; i++)
		trial_view_free(x->trials[i]);
	bson_free(x->trials);
	if (x->cur != NULL)
		storage_cursor_close(x->cur);
	plan_geo_free(x->geo);
	planner_solution_free(x->sol);
	bson_free(x->branch_keys);
	bson_free(x->seek_key);
	bson_free(x->spill_dir);
	bson_free(x->distinct_key);
	bson_free(x->ckey);
	bson_free(x->resume_key);
	bson_free(x->branch_dups);
	bson_free(x->seen.slot);
	if (x->sort_spec_doc != NULL)
		bson_destroy(x->sort_spec_doc);
	if (x->proj_doc != NULL)
		bson_destroy(x->proj_doc);
	if (x->parsed != NULL)
		bson_destroy(x->parsed);
	if (!x->borrowed)
		match_free(x->match);
	if (x->sorter != NULL)
		sorter_free(x->sorter);
	sort_spec_free(x->sort);
	projection_free(x->proj);
	lazy_doc_free(x->proj_out);
	lazy_doc_free(x->covered_doc);
	if (x->id_check)
		bson_value_destroy(&x->id_copy);
	if (x->text_query != NULL && x->borrowed)
		match_text_bind(x->match, NULL, NULL);   /* the query dies here, the match lives on */
	text_query_free(x->text_query);
	if (x->text_prefix != NULL)
		bson_destroy(x->text_prefix);
	if (x->text_keys != NULL)
		for (size_t k = 0; k < x->text_n; k++)
			if (x->text_keys[k] != NULL)
				bson_destroy(x->text_keys[k]);
	bson_free(x->text_keys);
	bson_free(x->text_recs);
	bson_free(x->text_scores);
	bson_free(x->text_slot);
	bson_free(x->text_term_keys);
	bson_free(x->text_order);
	lazy_doc_free(x->text_sort_doc);
	lazy_doc_free(x->recid_sort_doc);
	lazy_doc_free(x->recid_strip_doc);
	lazy_doc_free(x->key_doc);
	lazy_doc_free(x->key_sort_doc);
	lazy_doc_free(x->key_strip_doc);
	lazy_doc_free(x->text_strip_doc);
	lazy_doc_free(x->text_keep_doc);
	if (x->coll != NULL && !x->borrowed)
		storage_coll_release(x->coll);
	bson_free(x);
}

/* A counter as mongod's appendNumber writes it: int32 when it fits. */
static void
append_count(bson_t *out, const char *key, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(out, key, (int32_t)v);
	else
		BSON_APPEND_INT64(out, key, v);
}

/* ---- explain -------------------------------------------------------------- */

typedef enum { ST_PROJ, ST_LIMIT, ST_SKIP, ST_SORT, ST_FETCH, ST_ACCESS } stage_kind_t;

static bool
needs_sort_stage(const plan_exec_t *x)
{
	return x->sort_spec_doc != NULL && !(x->access == ACCESS_IXSCAN && x->sol->provides_sort);
}

static void
append_common_stats(bson_t *out, int64_t nreturned, int64_t works, int64_t advanced, bool eof)
{
	BSON_APPEND_INT32(out, "nReturned", (int32_t)nreturned);
	BSON_APPEND_INT32(out, "executionTimeMillisEstimate", 0);
	BSON_APPEND_INT32(out, "works", (int32_t)works);
	BSON_APPEND_INT32(out, "advanced", (int32_t)advanced);
	BSON_APPEND_INT32(out, "needTime", (int32_t)(works - advanced - (eof ? 1 : 0) > 0 ? works - advanced - (eof ? 1 : 0) : 0));
	BSON_APPEND_INT32(out, "needYield", 0);
	BSON_APPEND_INT32(out, "saveState", 0);
	BSON_APPEND_INT32(out, "restoreState", 0);
	BSON_APPEND_BOOL(out, "isEOF", eof);
}

/* explain's filter of a COLLSCAN (skip 0: the whole filter) or of the
 * FETCH over an index scan (what its bounds do not answer). */
static void
append_filter(const plan_exec_t *x, uint64_t skip, bson_t *out)
{
	bson_t *f;

	if (x->match == NULL || match_is_trivially_true(x->match))
		return;
	if ((f = match_to_bson_skip(x->match, skip)) == NULL)
		return;
	BSON_APPEND_DOCUMENT(out, "filter", f);
	bson_destroy(f);
}

/* One bound of a clustered scan as explain's minRecord/maxRecord: the _id
 * value the KeyString bound holds, when it is a real value. */
static void
append_record_bound(const char *name, const uint8_t *key, size_t len, bson_t *out)
{
	bool desc = false;
	bson_t vals = BSON_INITIALIZER;
	bson_iter_t it;

	if (key != NULL && keystring_decode_values(key, len, 1, &desc, &vals) && bson_iter_init(&it, &vals) &&
	    bson_iter_next(&it) && bson_iter_type(&it) != BSON_TYPE_MINKEY && bson_iter_type(&it) != BSON_TYPE_MAXKEY)
		bson_append_iter(out, name, -1, &it);
	bson_destroy(&vals);
}

/*
 * A clustered collection's bounded _id scan as mongod shows it: one stage,
 * {stage: "CLUSTERED_IXSCAN", filter, direction, minRecord, maxRecord}
 * (the documents come from the clustered table itself: no FETCH).
 */
static void
append_clustered_ixscan(const plan_exec_t *x, bool es, int64_t works, bson_t *out)
{
	const planner_solution_t *sc = x->sol;

	BSON_APPEND_UTF8(out, "stage", "CLUSTERED_IXSCAN");
	append_filter(x, 0, out);
	if (es)
		append_common_stats(out, x->stats.access_returned, works, x->stats.access_returned, x->scan_done);
	BSON_APPEND_UTF8(out, "direction", sc->backward ? "backward" : "forward");
	if (sc->nranges > 0) {
		append_record_bound("minRecord", sc->ranges[0].lo, sc->ranges[0].lo_len, out);
		append_record_bound("maxRecord", sc->ranges[sc->nranges - 1].hi, sc->ranges[sc->nranges - 1].hi_len, out);
	}
	if (es)
		BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
}

static bool
spec_flag(const bson_t *spec, const char *name)
{
	bson_iter_t it;

	return spec != NULL && bson_iter_init_find(&it, spec, name) && bson_iter_as_bool(&it);
}

/* isMultiKey and multiKeyPaths of ix as mongod prints them: per field the
 * prefixes of its path that held arrays ({a: ["a"], b: []}); left out for
 * an index whose paths were never tracked.  kp: the key pattern shown (a
 * wildcard scan's {$_path: 1, path: 1}: the path is taken as multikey at
 * its first component when the index is). */
static void
append_multikey(bson_t *out, const storage_index_t *ix, const bson_t *kp, bool wildcard)
{
	bson_t mkp;
	bson_iter_t it;

	BSON_APPEND_BOOL(out, "isMultiKey", ix->multikey);
	if (!wildcard && !ix->mkpaths_known)
		return;
	BSON_APPEND_DOCUMENT_BEGIN(out, "multiKeyPaths", &mkp);
	if (!wildcard) {
		keygen_multikey_paths_append(kp, ix->mkpaths, &mkp);
	} else {
		bson_iter_init(&it, kp);
		while (bson_iter_next(&it)) {
			bson_t arr;
			bson_append_array_begin(&mkp, bson_iter_key(&it), -1, &arr);
			if (ix->multikey && strcmp(bson_iter_key(&it), "$_path") != 0) {
				const char *k = bson_iter_key(&it), *dot = strchr(k, '.');
				bson_append_utf8(&arr, "0", 1, k, dot ? (int)(dot - k) : -1);
			}
			bson_append_array_end(&mkp, &arr);
		}
	}
	bson_append_document_end(out, &mkp);
}

static void
append_one_ixscan(const plan_exec_t *x, const planner_solution_t *sc, int64_t keys, int64_t dups, bool eof,
                  bool es, bson_t *out)
{
	const storage_index_t *ix = &x->coll->indexes[sc->index];
	int64_t works = keys + (eof ? 1 : 0) + sc->nranges, filtered = 0;
	bson_t sub;

	BSON_APPEND_UTF8(out, "stage", x->distinct_pos >= 0 ? "DISTINCT_SCAN" : "IXSCAN");
	if (sc == x->sol && key_mask(x) != 0) {
		bson_t *f = match_to_bson_skip(x->match, ~key_mask(x));
		if (f != NULL) {
			BSON_APPEND_DOCUMENT(out, "filter", f);
			bson_destroy(f);
		}
		filtered = x->stats.keys_filtered;   /* keys turned down: not advanced */
	}
	if (es)
		append_common_stats(out, keys - dups - filtered, works, keys - dups - filtered, eof);
	bson_t wkey = BSON_INITIALIZER;
	const bson_t *kp = ix->key;
	if (sc->wildcard_path != NULL) {
		BSON_APPEND_INT32(&wkey, "$_path", 1);
		BSON_APPEND_INT32(&wkey, sc->wildcard_path, 1);
		kp = &wkey;
	}
	BSON_APPEND_DOCUMENT(out, "keyPattern", kp);
	BSON_APPEND_UTF8(out, "indexName", ix->name);
	if (ix->collation != NULL)
		BSON_APPEND_DOCUMENT(out, "collation", coll_spec(ix->collation));
	append_multikey(out, ix, kp, sc->wildcard_path != NULL);
	bson_destroy(&wkey);
	BSON_APPEND_BOOL(out, "isUnique", ix->unique);
	BSON_APPEND_BOOL(out, "isSparse", spec_flag(ix->spec, "sparse"));
	BSON_APPEND_BOOL(out, "isPartial", bson_has_field(ix->spec, "partialFilterExpression"));
	BSON_APPEND_INT32(out, "indexVersion", 2);
	BSON_APPEND_UTF8(out, "direction", sc->backward ? "backward" : "forward");
	BSON_APPEND_DOCUMENT_BEGIN(out, "indexBounds", &sub);
	planner_bounds_append(sc, &sub);
	bson_append_document_end(out, &sub);
	if (es && x->distinct_pos >= 0) {
		BSON_APPEND_INT32(out, "keysExamined", (int32_t)keys);
	} else if (es) {
		BSON_APPEND_INT32(out, "keysExamined", (int32_t)keys);
		BSON_APPEND_INT32(out, "seeks", (int32_t)(x->sol->kind == PLANNER_OR ? (sc->nranges > 0 ? 1 : 0) :
		    (x->seeks > 0 ? x->seeks : 1)));
		BSON_APPEND_INT32(out, "dupsTested", (int32_t)(sc->dedup ? keys : 0));
		BSON_APPEND_INT32(out, "dupsDropped", (int32_t)dups);
	}
}

/* The access path under FETCH: one IXSCAN, or OR over one per branch. */
static void
append_ixscan(const plan_exec_t *x, bool es, bson_t *out)
{
	bson_t arr, in;
	int i;

	if (x->sol->kind != PLANNER_OR) {
		append_one_ixscan(x, x->sol, x->stats.keys_examined, x->stats.dups_dropped, x->scan_done, es, out);
		return;
	}
	BSON_APPEND_UTF8(out, "stage", "OR");
	if (es) {
		int64_t adv = x->stats.keys_examined - x->stats.dups_dropped;
		append_common_stats(out, adv, x->stats.keys_examined + (x->scan_done ? 1 : 0), adv, x->scan_done);
		BSON_APPEND_INT32(out, "dupsTested", (int32_t)x->stats.keys_examined);
		BSON_APPEND_INT32(out, "dupsDropped", (int32_t)x->stats.dups_dropped);
	}
	BSON_APPEND_ARRAY_BEGIN(out, "inputStages", &arr);
	for (i = 0; i < x->sol->nbranches; i++) {
		char key[16];
		const char *k;
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_document_begin(&arr, k, -1, &in);
		append_one_ixscan(x, x->sol->branches[i], x->branch_keys[i], 0,
		    x->scan_done || i < x->branch_i, es, &in);
		bson_append_document_end(&arr, &in);
	}
	bson_append_array_end(out, &arr);
}

/* COUNT_SCAN: the index and the one interval as start/end keys. */
static void
append_count_scan(const plan_exec_t *x, bool es, bson_t *out)
{
	const planner_solution_t *sc = x->sol;
	const storage_index_t *ix = &x->coll->indexes[sc->index];
	bson_t b, sk, ek;
	bool start_incl = true, end_incl = true;
	int i, r = -1;

	BSON_APPEND_UTF8(out, "stage", "COUNT_SCAN");
	if (es) {
		append_common_stats(out, 0, x->stats.keys_examined + (x->scan_done ? 1 : 0), 0, x->scan_done);
		BSON_APPEND_INT32(out, "keysExamined", (int32_t)x->stats.keys_examined);
	}
	BSON_APPEND_DOCUMENT(out, "keyPattern", ix->key);
	BSON_APPEND_UTF8(out, "indexName", ix->name);
	if (ix->collation != NULL)
		BSON_APPEND_DOCUMENT(out, "collation", coll_spec(ix->collation));
	append_multikey(out, ix, ix->key, false);
	BSON_APPEND_BOOL(out, "isUnique", ix->unique);
	BSON_APPEND_BOOL(out, "isSparse", spec_flag(ix->spec, "sparse"));
	BSON_APPEND_BOOL(out, "isPartial", bson_has_field(ix->spec, "partialFilterExpression"));
	BSON_APPEND_INT32(out, "indexVersion", 2);
	/* the interval's field: the first one that is not a point */
	for (i = 0; i < sc->nfields && r < 0; i++)
		if (!(sc->fields[i].points && sc->fields[i].n == 1))
			r = i;
	if (r >= 0) {
		start_incl = sc->fields[r].iv[0].lo_incl;
		end_incl = sc->fields[r].iv[0].hi_incl;
	}
	BSON_APPEND_DOCUMENT_BEGIN(out, "indexBounds", &b);
	bson_append_document_begin(&b, "startKey", -1, &sk);
	for (i = 0; i < sc->nfields; i++) {
		const planner_field_t *f = &sc->fields[i];
		if (r >= 0 && i > r) {
			/* after the range: where an exclusive start ends its key */
			bson_value_t v;
			memset(&v, 0, sizeof(v));
			v.value_type = (start_incl != f->desc) ? BSON_TYPE_MINKEY : BSON_TYPE_MAXKEY;
			bv_append(&sk, f->path, -1, &v);
		} else {
			bv_append(&sk, f->path, -1, &f->iv[0].lo);
		}
	}
	bson_append_document_end(&b, &sk);
	BSON_APPEND_BOOL(&b, "startKeyInclusive", start_incl);
	bson_append_document_begin(&b, "endKey", -1, &ek);
	for (i = 0; i < sc->nfields; i++) {
		const planner_field_t *f = &sc->fields[i];
		if (r >= 0 && i > r) {
			bson_value_t v;
			memset(&v, 0, sizeof(v));
			v.value_type = (end_incl != f->desc) ? BSON_TYPE_MAXKEY : BSON_TYPE_MINKEY;
			bv_append(&ek, f->path, -1, &v);
		} else {
			bv_append(&ek, f->path, -1, &f->iv[0].hi);
		}
	}
	bson_append_document_end(&b, &ek);
	BSON_APPEND_BOOL(&b, "endKeyInclusive", end_incl);
	bson_append_document_end(out, &b);
}

static int64_t
access_works(const plan_exec_t *x)
{
	if (x->access == ACCESS_IXSCAN)
		return x->stats.keys_examined + (x->scan_done ? 1 : 0) +
		    (x->sol->kind == PLANNER_OR ? 0 : x->sol->nranges);
	return x->stats.docs_examined + (x->scan_done ? 1 : 0);
}

/* One term's IXSCAN under TEXT_OR / OR (mongod prints simple-range bounds
 * as indexBounds {}). */
static void
append_text_ixscan(const plan_exec_t *x, size_t t, bool es, bson_t *out)
{
	const storage_index_t *ix = &x->coll->indexes[x->text_index];
	int64_t keys = x->text_term_keys[t];
	bson_t sub;

	BSON_APPEND_UTF8(out, "stage", "IXSCAN");
	if (es)
		append_common_stats(out, keys, keys + (x->text_scanned ? 1 : 0), keys, x->text_scanned);
	BSON_APPEND_DOCUMENT(out, "keyPattern", ix->key);
	BSON_APPEND_UTF8(out, "indexName", ix->name);
	BSON_APPEND_BOOL(out, "isMultiKey", ix->multikey);
	BSON_APPEND_BOOL(out, "isUnique", false);
	BSON_APPEND_BOOL(out, "isSparse", spec_flag(ix->spec, "sparse"));
	BSON_APPEND_BOOL(out, "isPartial", bson_has_field(ix->spec, "partialFilterExpression"));
	BSON_APPEND_INT32(out, "indexVersion", 2);
	BSON_APPEND_UTF8(out, "direction", "backward");
	BSON_APPEND_DOCUMENT_BEGIN(out, "indexBounds", &sub);
	bson_append_document_end(out, &sub);
	if (es) {
		BSON_APPEND_INT32(out, "keysExamined", (int32_t)keys);
		BSON_APPEND_INT32(out, "seeks", 1);
		BSON_APPEND_INT32(out, "dupsTested", (int32_t)(ix->multikey ? keys : 0));
		BSON_APPEND_INT32(out, "dupsDropped", 0);
	}
}

/* TEXT_MATCH over TEXT_OR (the score is needed) or FETCH over OR / one
 * IXSCAN, the filter's other conjuncts on TEXT_OR or FETCH. */
static void
append_text(const plan_exec_t *x, bool es, bson_t *out)
{
	const storage_index_t *ix = &x->coll->indexes[x->text_index];
	size_t n = text_query_nbounds(x->text_query);
	uint64_t skip = match_text_conjuncts(x->match);
	bson_t parsed, in, mid, arr, one;
	char key[16];
	const char *k;

	BSON_APPEND_UTF8(out, "stage", "TEXT_MATCH");
	if (es) {
		append_common_stats(out, x->stats.access_returned, x->stats.docs_examined + 1, x->stats.access_returned,
		    x->scan_done);
		BSON_APPEND_INT32(out, "docsRejected", (int32_t)(x->stats.docs_examined - x->stats.access_returned));
	}
	BSON_APPEND_DOCUMENT(out, "indexPrefix", x->text_prefix);
	BSON_APPEND_UTF8(out, "indexName", ix->name);
	bson_append_document_begin(out, "parsedTextQuery", -1, &parsed);
	text_query_append_parsed(x->text_query, &parsed);
	bson_append_document_end(out, &parsed);
	BSON_APPEND_INT32(out, "textIndexVersion", text_spec_version(x->text_spec));
	BSON_APPEND_DOCUMENT_BEGIN(out, "inputStage", &in);
	if (x->text_want_score) {
		BSON_APPEND_UTF8(&in, "stage", "TEXT_OR");
		append_filter(x, skip, &in);
		if (es) {
			append_common_stats(&in, x->text_n, x->stats.keys_examined + 1, x->text_n, x->text_scanned);
			BSON_APPEND_INT32(&in, "docsExamined", (int32_t)x->stats.docs_examined);
		}
		bson_append_array_begin(&in, "inputStages", -1, &arr);
		for (size_t t = 0; t < n; t++) {
			bson_uint32_to_string((uint32_t)t, &k, key, sizeof(key));
			bson_append_document_begin(&arr, k, -1, &one);
			append_text_ixscan(x, t, es, &one);
			bson_append_document_end(&arr, &one);
		}
		bson_append_array_end(&in, &arr);
	} else {
		BSON_APPEND_UTF8(&in, "stage", "FETCH");
		append_filter(x, skip, &in);
		if (es) {
			append_common_stats(&in, x->stats.access_returned, x->stats.docs_examined + 1, x->stats.access_returned,
			    x->scan_done);
			BSON_APPEND_INT32(&in, "docsExamined", (int32_t)x->stats.docs_examined);
			BSON_APPEND_INT32(&in, "alreadyHasObj", 0);
		}
		BSON_APPEND_DOCUMENT_BEGIN(&in, "inputStage", &mid);
		if (n == 0) {
			BSON_APPEND_UTF8(&mid, "stage", "EOF");
		} else if (n == 1) {
			append_text_ixscan(x, 0, es, &mid);
		} else {
			BSON_APPEND_UTF8(&mid, "stage", "OR");
			if (es) {
				append_common_stats(&mid, x->text_n, x->stats.keys_examined + 1, x->text_n, x->text_scanned);
				BSON_APPEND_INT32(&mid, "dupsTested", (int32_t)x->stats.keys_examined);
				BSON_APPEND_INT32(&mid, "dupsDropped", (int32_t)(x->stats.keys_examined - (int64_t)x->text_n));
			}
			bson_append_array_begin(&mid, "inputStages", -1, &arr);
			for (size_t t = 0; t < n; t++) {
				bson_uint32_to_string((uint32_t)t, &k, key, sizeof(key));
				bson_append_document_begin(&arr, k, -1, &one);
				append_text_ixscan(x, t, es, &one);
				bson_append_document_end(&arr, &one);
			}
			bson_append_array_end(&mid, &arr);
		}
		bson_append_document_end(&in, &mid);
	}
	bson_append_document_end(out, &in);
}

/* Does projection spec p name a dotted path? */
static bool
proj_has_dotted(const bson_t *p)
{
	bson_iter_t it;

	if (p == NULL || !bson_iter_init(&it, p))
		return false;
	while (bson_iter_next(&it))
		if (strchr(bson_iter_key(&it), '.') != NULL)
			return true;
	return false;
}

static void
append_stage(const plan_exec_t *x, stage_kind_t k, bool es, bson_t *out)
{
	int64_t nret = x->stats.returned;
	int64_t works = access_works(x);
	bool eof = x->scan_done || x->id_done || (x->limit > 0 && x->produced >= x->limit);
	bson_t in;

	switch (k) {
	case ST_PROJ:
		/* mongod's covered fast path takes top-level fields only; dotted
		 * ones are its default projection over the keys (no FETCH either) */
		BSON_APPEND_UTF8(out, "stage", x->covered && !proj_has_dotted(x->proj_doc) ? "PROJECTION_COVERED" :
		    "PROJECTION_DEFAULT");
		if (es)
			append_common_stats(out, nret, works, nret, eof);
		if (x->covered) {
			BSON_APPEND_DOCUMENT(out, "transformBy", x->proj_doc);
		} else {
			BSON_APPEND_DOCUMENT_BEGIN(out, "transformBy", &in);
			bson_append_document_end(out, &in);
		}
		break;
	case ST_LIMIT:
		BSON_APPEND_UTF8(out, "stage", "LIMIT");
		if (es)
			append_common_stats(out, nret, works, nret, eof);
		append_count(out, "limitAmount", x->limit);
		break;
	case ST_SKIP:
		BSON_APPEND_UTF8(out, "stage", "SKIP");
		if (es)
			append_common_stats(out, nret, works, nret, eof);
		append_count(out, "skipAmount", x->skip);
		break;
	case ST_SORT:
		BSON_APPEND_UTF8(out, "stage", "SORT");
		if (es)
			append_common_stats(out, nret, works, nret, eof);
		BSON_APPEND_DOCUMENT(out, "sortPattern", x->sort_spec_doc);
		BSON_APPEND_INT32(out, "memLimit", 104857600);
		if (x->limit > 0)
			append_count(out, "limitAmount", tm_i64_add_sat(x->skip, x->limit));
		BSON_APPEND_UTF8(out, "type", "simple");
		if (es)
			BSON_APPEND_BOOL(out, "usedDisk", x->sorter != NULL && sorter_spilled(x->sorter));
		break;
	case ST_FETCH:
		if (x->count_scan) {
			append_count_scan(x, es, out);
			return;
		}
		if (x->covered) {
			append_ixscan(x, es, out);
			return;
		}
		if (x->sol->kind == PLANNER_IXSCAN && x->sol->index < x->coll->nindexes &&
		    x->coll->indexes[x->sol->index].clustered) {
			append_clustered_ixscan(x, es, works, out);
			return;
		}
		BSON_APPEND_UTF8(out, "stage", "FETCH");
		if (!x->sol->exact)
			append_filter(x, fetch_skip(x), out);
		if (es) {
			append_common_stats(out, x->stats.access_returned, works, x->stats.access_returned, x->scan_done);
			BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
			BSON_APPEND_INT32(out, "alreadyHasObj", 0);
		}
		BSON_APPEND_DOCUMENT_BEGIN(out, "inputStage", &in);
		append_ixscan(x, es, &in);
		bson_append_document_end(out, &in);
		return;
	case ST_ACCESS:
		if (x->access == ACCESS_TEXT) {
			append_text(x, es, out);
			return;
		}
		if (x->access == ACCESS_GEO) {
			plan_geo_explain(x->geo, x->coll, x->match, es, &x->stats, out);
			return;
		}
		if (x->access == ACCESS_ID && x->coll != NULL && x->coll->clustered_ix != NULL) {
			BSON_APPEND_UTF8(out, "stage", "EXPRESS_CLUSTERED_IXSCAN");
			if (es) {
				BSON_APPEND_INT32(out, "keysExamined", (int32_t)x->stats.keys_examined);
				BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
				BSON_APPEND_INT32(out, "nReturned", (int32_t)x->stats.access_returned);
			}
			return;
		}
		if (x->access == ACCESS_ID) {
			BSON_APPEND_UTF8(out, "stage", "EXPRESS_IXSCAN");
			BSON_APPEND_UTF8(out, "keyPattern", "{ _id: 1 }");
			BSON_APPEND_UTF8(out, "indexName", "_id_");
			if (es) {
				BSON_APPEND_INT32(out, "keysExamined", (int32_t)x->stats.keys_examined);
				BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
				BSON_APPEND_INT32(out, "nReturned", (int32_t)x->stats.access_returned);
			}
			return;
		}
		BSON_APPEND_UTF8(out, "stage", "COLLSCAN");
		append_filter(x, 0, out);
		if (es)
			append_common_stats(out, x->stats.access_returned, works, x->stats.access_returned, x->scan_done);
		BSON_APPEND_UTF8(out, "direction", x->backward ? "backward" : "forward");
		if (es)
			BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
		return;
	}
	/* the stages above the access path have one input */
	{
		stage_kind_t next = k + 1;
		if (next == ST_LIMIT && (x->for_count || !(x->limit > 0 && !needs_sort_stage(x))))
			next++;
		if (next == ST_SKIP && (x->for_count || x->skip == 0))
			next++;
		if (next == ST_SORT && !needs_sort_stage(x))
			next++;
		if (next == ST_FETCH && x->access != ACCESS_IXSCAN)
			next++;
		BSON_APPEND_DOCUMENT_BEGIN(out, "inputStage", &in);
		append_stage(x, next, es, &in);
		bson_append_document_end(out, &in);
	}
}

/* EXPRESS_IXSCAN: the key pattern printed as a string, as mongod does. */
static void
append_express(const plan_exec_t *x, bool es, bson_t *out)
{
	const storage_index_t *ix = NULL;
	char *kp;
	int i;

	if (x->express)
		ix = &x->coll->indexes[x->sol->index];
	else
		for (i = 0; i < x->coll->nindexes; i++)
			if (x->coll->indexes[i].is_id)
				ix = &x->coll->indexes[i];
	if (ix != NULL && ix->clustered) {
		/* a clustered collection's _id lookup names no index */
		BSON_APPEND_UTF8(out, "stage", "EXPRESS_CLUSTERED_IXSCAN");
	} else {
		BSON_APPEND_UTF8(out, "stage", "EXPRESS_IXSCAN");
		kp = ix != NULL ? bv_doc_to_mongo_string(ix->key) : bson_strdup("{ _id: 1 }");
		BSON_APPEND_UTF8(out, "keyPattern", kp);
		bson_free(kp);
		BSON_APPEND_UTF8(out, "indexName", ix != NULL ? ix->name : "_id_");
	}
	if (x->proj_doc != NULL) {
		BSON_APPEND_DOCUMENT(out, "projection", x->proj_doc);
		BSON_APPEND_BOOL(out, "projectionCovered", false);
	}
	if (es) {
		BSON_APPEND_INT32(out, "keysExamined", (int32_t)x->stats.keys_examined);
		BSON_APPEND_INT32(out, "docsExamined", (int32_t)x->stats.docs_examined);
		BSON_APPEND_INT32(out, "nReturned", (int32_t)x->stats.returned);
	}
}

void
plan_exec_explain_append(const plan_exec_t *x, bool exec_stats, bson_t *out)
{
	stage_kind_t k = ST_PROJ;

	if (x->coll == NULL) {
		BSON_APPEND_UTF8(out, "stage", "EOF");
		if (exec_stats)
			append_common_stats(out, 0, 1, 0, true);
		return;
	}
	if (x->access == ACCESS_ID || x->express) {
		append_express(x, exec_stats, out);
		return;
	}
	if (x->proj == NULL)
		k = ST_LIMIT;
	if (k == ST_LIMIT && (x->for_count || !(x->limit > 0 && !needs_sort_stage(x))))
		k = ST_SKIP;
	if (k == ST_SKIP && (x->for_count || x->skip == 0))
		k = ST_SORT;
	if (k == ST_SORT && !needs_sort_stage(x))
		k = ST_FETCH;
	if (k == ST_FETCH && x->access != ACCESS_IXSCAN)
		k = ST_ACCESS;
	append_stage(x, k, exec_stats, out);
}

bool
plan_exec_keys_known(const plan_exec_t *x)
{
	/* a geo predicate Tamga answers by a collection scan where mongod
	 * scans a 2d / 2dsphere index ($geoWithin over 2d, a geo field not
	 * first, a partial index): its key is not known (a hint decides) */
	if (x->access == ACCESS_SCAN && !x->hinted && plan_geo_indexed_predicate(x->coll, x->match))
		return false;
	return true;
}

const char *
plan_exec_index_name(const plan_exec_t *x)
{
	if (x->access == ACCESS_TEXT && x->coll != NULL && x->text_index < x->coll->nindexes)
		return x->coll->indexes[x->text_index].name;
	if (x->access == ACCESS_GEO && x->coll != NULL && plan_geo_index(x->geo) >= 0 &&
	    plan_geo_index(x->geo) < x->coll->nindexes)
		return x->coll->indexes[plan_geo_index(x->geo)].name;
	if (x->access == ACCESS_IXSCAN && x->coll != NULL && x->sol->kind == PLANNER_IXSCAN &&
	    x->sol->index < x->coll->nindexes)
		return x->coll->indexes[x->sol->index].name;
	return NULL;
}

void
plan_exec_rejected_append(const plan_exec_t *x, bson_t *arr)
{
	plan_exec_t *view;
	int i;

	if (x->sol == NULL || x->express || x->access == ACCESS_ID)
		return;
	view = tm_malloc0(sizeof(*view));
	for (i = 0; i < x->sol->nrejected; i++) {
		char key[16];
		const char *k;
		bson_t d;
		/* the same query over another access path: a read-only view */
		memcpy(view, x, sizeof(*view));
		view->sol = x->sol->rejected[i];
		view->access = view->sol->kind == PLANNER_COLLSCAN ? ACCESS_SCAN : ACCESS_IXSCAN;
		view->backward = view->sol->backward;
		view->covered = view->access == ACCESS_IXSCAN && covered_for(view, view->sol);
		/* an OR candidate: its own (empty) per-branch counters */
		int64_t *bk = NULL;
		if (view->sol->kind == PLANNER_OR) {
			bk = tm_malloc0(sizeof(int64_t) * (size_t)(view->sol->nbranches > 0 ? view->sol->nbranches : 1));
			view->branch_keys = view->branch_dups = bk;
			view->branch_i = 0;
		}
		bson_uint32_to_string((uint32_t)i, &k, key, sizeof(key));
		bson_append_document_begin(arr, k, -1, &d);
		BSON_APPEND_BOOL(&d, "isCached", false);
		plan_exec_explain_append(view, false, &d);
		bson_append_document_end(arr, &d);
		bson_free(bk);
	}
	bson_free(view);
}

bool
plan_exec_geo_distance(const plan_exec_t *x, double *dist, bson_value_t *loc, bool *has_loc)
{
	if (x->access != ACCESS_GEO || !plan_geo_is_near(x->geo))
		return false;
	*dist = plan_geo_distance(x->geo);
	*has_loc = plan_geo_location(x->geo, loc);   /* measured on demand: the run's cache */
	return true;
}
