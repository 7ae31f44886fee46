/*
 * sort.c -- sort spec parsing, sort-key extraction with array semantics,
 * key comparison, and the sorter (see sort.h): in memory, top-k as a heap
 * of k that most documents never enter, spilled runs merged from disk.
 *
 * Not here: index-provided order (the planner).
 */
#include "query/sort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bson/iter.h"
#include "bson/path.h"
#include "bson/value.h"
#include "common/opctx.h"
#include "common/mem.h"

#define SORT_MAX_KEYS 32
#define SORT_MAX_RUNS 64      /* open run files before they are merged into one */

typedef struct sort_key_spec {
	bpath_t path;
	int dir;
	bool text_score;         /* {$meta: "textScore"}: path is SORT_TEXT_SCORE_FIELD */
} sort_key_spec_t;

struct sort_spec {
	sort_key_spec_t *keys;
	size_t n;
	bool natural;
	int natural_dir;
	const coll_t *coll;      /* strings order by it; NULL = simple */
};

static int
check_path(const char *k, terr_t *err)
{
	size_t len = strlen(k);

	if (len == 0)
		return terr_set(err, 40352, "FieldPath cannot be constructed with empty string");
	if (k[len - 1] == '.')
		return terr_set(err, 40353, "FieldPath must not end with a '.'.");
	for (const char *c = k; *c; ) {
		const char *dot = strchr(c, '.');
		size_t l = dot ? (size_t)(dot - c) : strlen(c);

		if (l == 0)
			return terr_set(err, 15998, "FieldPath field names may not be empty strings.");
		if (c[0] == '$' && !bpath_is_dbref_field(c, l))
			return terr_set(err, 16410,
			                "FieldPath field names may not start with '$'. Consider using "
			                "$getField or $setField.");
		c += l + (dot ? 1 : 0);
		if (dot == NULL)
			break;
	}
	return 0;
}

int
sort_spec_parse(const bson_t *spec, sort_spec_t **out, terr_t *err)
{
	return sort_spec_parse_meta(spec, false, out, err);
}

bool
sort_spec_has_text_score(const sort_spec_t *s)
{
	for (size_t i = 0; s != NULL && i < s->n; i++)
		if (s->keys[i].text_score)
			return true;
	return false;
}

int
sort_spec_parse_meta(const bson_t *spec, bool text_score, sort_spec_t **out, terr_t *err)
{
	sort_spec_t *s = bson_malloc0(sizeof *s);
	bson_iter_t it;
	char *str = NULL;
	int ret = 0;

	*out = NULL;
	s->keys = bson_malloc0(sizeof(sort_key_spec_t) * (bson_count_keys(spec) + 1));
	if (!bson_iter_init(&it, spec))
		ERR(terr_set(err, TERR_INVALID_BSON, "invalid BSON in sort specification"));
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		double d;

		if (v->value_type == BSON_TYPE_DOCUMENT) {
			bson_iter_t sub;

			if (bson_iter_recurse(&it, &sub) && bson_iter_next(&sub) &&
			    strcmp(bson_iter_key(&sub), "$meta") == 0) {
				if (BSON_ITER_HOLDS_UTF8(&sub) && text_score &&
				    strcmp(bson_iter_utf8(&sub, NULL), "textScore") == 0) {
					if (s->n >= SORT_MAX_KEYS)
						ERR(terr_set(err, 13103, "too many compound keys"));
					bpath_init(&s->keys[s->n].path, SORT_TEXT_SCORE_FIELD);
					s->keys[s->n].dir = -1;
					s->keys[s->n].text_score = true;
					s->n++;
					continue;
				}
				if (BSON_ITER_HOLDS_UTF8(&sub) &&
				    strcmp(bson_iter_utf8(&sub, NULL), "textScore") == 0)
					ERR(terr_set(err, 40218,
					             "query requires text score metadata, but it is not "
					             "available"));
				ERR(terr_set(err, TERR_NOT_IMPLEMENTED,
				             "$meta sort is not supported yet"));
			}
			ERR(terr_set(err, 17312, "$meta is the only expression supported by $sort right now"));
		}
		if (!bv_is_number(v)) {
			str = bv_to_mongo_string(v);
			ERR(terr_set(err, 15974, "Illegal key in $sort specification: %s: %s", k, str));
		}
		/* mongod reads the direction with numberInt(): 1.5 is 1, 0.5 is 0 */
		d = bv_as_double(v);
		d = d != d ? 0 : d >= 2147483647.0 ? 2 : d <= -2147483648.0 ? -2 : (double)(int32_t)d;
		if (d != 1.0 && d != -1.0)
			ERR(terr_set(err, 15975,
			             "$sort key ordering must be 1 (for ascending) or -1 (for descending)"));
		if (strcmp(k, "$natural") == 0) {
			s->natural = true;
			s->natural_dir = d > 0 ? 1 : -1;
			continue;
		}
		ERR(check_path(k, err));
		if (s->n >= SORT_MAX_KEYS)
			ERR(terr_set(err, 13103, "too many compound keys"));
		bpath_init(&s->keys[s->n].path, k);
		s->keys[s->n].dir = d > 0 ? 1 : -1;
		s->n++;
	}
	*out = s;
	return 0;
err:
	bson_free(str);
	sort_spec_free(s);
	return ret;
}

void
sort_spec_free(sort_spec_t *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		bpath_destroy(&s->keys[i].path);
	bson_free(s->keys);
	bson_free(s);
}

void
sort_spec_set_collation(sort_spec_t *s, const coll_t *coll)
{
	s->coll = coll;
}

const coll_t *
sort_spec_collation(const sort_spec_t *s)
{
	return s->coll;
}

size_t
sort_spec_nkeys(const sort_spec_t *s)
{
	return s->n;
}

const char *
sort_spec_path(const sort_spec_t *s, size_t i)
{
	return i < s->n ? s->keys[i].path.full : NULL;
}

int
sort_spec_direction(const sort_spec_t *s, size_t i)
{
	return i < s->n ? s->keys[i].dir : 0;
}

bool
sort_spec_natural(const sort_spec_t *s, int *dir)
{
	if (s->natural && dir != NULL)
		*dir = s->natural_dir;
	return s->natural;
}

/* ---- keys ------------------------------------------------------------------ */

/* Order of one key value: MinKey < empty array (undefined) < null/missing <
 * the rest (sorta.js). */
static int
key_cmp(const bson_value_t *a, const bson_value_t *b, const coll_t *coll)
{
	bool ua = a->value_type == BSON_TYPE_UNDEFINED, ub = b->value_type == BSON_TYPE_UNDEFINED;

	if (ua && ub)
		return 0;
	if (ua)
		return b->value_type == BSON_TYPE_MINKEY ? 1 : -1;
	if (ub)
		return a->value_type == BSON_TYPE_MINKEY ? -1 : 1;
	return coll ? bv_compare_coll(a, b, coll) : bv_compare(a, b);
}

typedef struct keywalk {
	bson_value_t best;
	bool have;
	int dir;
	const coll_t *coll;
} keywalk_t;

static void
consider(keywalk_t *w, const bson_value_t *v)
{
	int c;

	if (!w->have) {
		w->best = *v;
		w->have = true;
		return;
	}
	c = key_cmp(v, &w->best, w->coll);
	if ((w->dir > 0 && c < 0) || (w->dir < 0 && c > 0))
		w->best = *v;
}

static bool
key_visit(const bpath_hit_t *h, void *ctx)
{
	keywalk_t *w = ctx;
	bson_value_t v;

	if (h->value.value_type == BSON_TYPE_EOD) {
		v.value_type = BSON_TYPE_NULL;
		consider(w, &v);
		return true;
	}
	if (h->value.value_type == BSON_TYPE_ARRAY && !h->leaf_element) {
		/* the leaf array itself: its elements were already considered */
		if (h->value.value.v_doc.data_len <= 5) {
			v.value_type = BSON_TYPE_UNDEFINED;
			consider(w, &v);
		}
		return true;
	}
	consider(w, &h->value);
	return true;
}

/* A top-level field that holds no array is its own key: found with one
 * walk over the document's elements, without the general path walk.
 * False when the general walk is needed (a dotted path, an array). */
static bool
key_top_level(const bpath_t *p, const uint8_t *data, uint32_t len, bson_value_t *out)
{
	const char *name = p->comp[0].s;
	uint32_t name_len = p->comp[0].len;
	biter_t it;

	if (p->n != 1)
		return false;
	biter_init(&it, data, len);
	if (!biter_find(&it, name, name_len)) {
		out->value_type = BSON_TYPE_NULL;    /* missing */
		return true;
	}
	if (it.type == BSON_TYPE_ARRAY)
		return false;
	biter_value(&it, out);
	return true;
}

/* The key of one sort field of the document at data (len bytes). */
static void
key_extract_one(const sort_spec_t *s, size_t i, const uint8_t *data, uint32_t len,
                bson_value_t *out)
{
	keywalk_t w;

	if (key_top_level(&s->keys[i].path, data, len, out))
		return;
	w.have = false;
	w.dir = s->keys[i].dir;
	w.coll = s->coll;
	bpath_walk_data(data, len, &s->keys[i].path, true, key_visit, &w);
	if (!w.have)
		w.best.value_type = BSON_TYPE_NULL;
	*out = w.best;
}

static void
key_extract_data(const sort_spec_t *s, const uint8_t *data, uint32_t len, bson_value_t *keys)
{
	for (size_t i = 0; i < s->n; i++)
		key_extract_one(s, i, data, len, &keys[i]);
}

void
sort_key_extract(const sort_spec_t *s, const bson_t *doc, bson_value_t *keys)
{
	key_extract_data(s, bson_get_data(doc), doc->len, keys);
}

int
sort_key_compare(const sort_spec_t *s, const bson_value_t *a, const bson_value_t *b)
{
	for (size_t i = 0; i < s->n; i++) {
		int c = key_cmp(&a[i], &b[i], s->coll);

		if (c != 0)
			return s->keys[i].dir > 0 ? c : -c;
	}
	return 0;
}

/* The document at data against extracted keys b, as sort_key_compare of
 * its key would answer, extracting one field at a time: most documents
 * are decided by the first field, and their other fields are never read.
 * The keys read go to probe[0..*nread). */
static int
key_compare_data(const sort_spec_t *s, const uint8_t *data, uint32_t len, const bson_value_t *b,
                 bson_value_t *probe, size_t *nread)
{
	for (size_t i = 0; i < s->n; i++) {
		int c;

		key_extract_one(s, i, data, len, &probe[i]);
		*nread = i + 1;
		if ((c = key_cmp(&probe[i], &b[i], s->coll)) != 0)
			return s->keys[i].dir > 0 ? c : -c;
	}
	return 0;
}

/* Point a key read from the bytes at `from` (len of them) at the same
 * place in a copy at `to`.  False when the key holds a pointer outside
 * them (never for keys of that document; the caller then reads again). */
static bool
key_rebase(bson_value_t *v, const uint8_t *from, uint32_t len, const uint8_t *to)
{
	const void **ptrs[2] = {NULL, NULL};

	switch ((int)v->value_type) {
	case BSON_TYPE_UTF8: ptrs[0] = (const void **)&v->value.v_utf8.str; break;
	case BSON_TYPE_DOCUMENT: case BSON_TYPE_ARRAY: ptrs[0] = (const void **)&v->value.v_doc.data; break;
	case BSON_TYPE_BINARY: ptrs[0] = (const void **)&v->value.v_binary.data; break;
	case BSON_TYPE_REGEX:
		ptrs[0] = (const void **)&v->value.v_regex.regex;
		ptrs[1] = (const void **)&v->value.v_regex.options;
		break;
	case BSON_TYPE_DBPOINTER: ptrs[0] = (const void **)&v->value.v_dbpointer.collection; break;
	case BSON_TYPE_CODE: ptrs[0] = (const void **)&v->value.v_code.code; break;
	case BSON_TYPE_SYMBOL: ptrs[0] = (const void **)&v->value.v_symbol.symbol; break;
	case BSON_TYPE_CODEWSCOPE:
		ptrs[0] = (const void **)&v->value.v_codewscope.code;
		ptrs[1] = (const void **)&v->value.v_codewscope.scope_data;
		break;
	default:
		return true;    /* held by value */
	}
	for (int i = 0; i < 2 && ptrs[i] != NULL; i++) {
		const uint8_t *p = *ptrs[i];

		if (p < from || p >= from + len)
			return false;
		*ptrs[i] = to + (p - from);
	}
	return true;
}

int
sort_compare_docs(const sort_spec_t *s, const bson_t *a, const bson_t *b)
{
	bson_value_t ka[SORT_MAX_KEYS], kb[SORT_MAX_KEYS];

	sort_key_extract(s, a, ka);
	sort_key_extract(s, b, kb);
	return sort_key_compare(s, ka, kb);
}

/* ---- sorter ------------------------------------------------------------------ */

/* A held document: its keys, a copy of its bytes and its caller's bytes
 * (sorter_add_aux) in one allocation (keys first, then the document they
 * borrow from, then the aux bytes), so the memory limit counts all three
 * and a dropped document takes its aux bytes with it. */
typedef struct sitem {
	bson_value_t *keys;   /* the block; NULL for an empty slot */
	const uint8_t *data;  /* inside the block */
	uint32_t len;
	uint32_t aux_len;     /* bytes after the document (never written to a run) */
	uint32_t cap;         /* bytes the block has room for after the keys */
	uint64_t seq;         /* arrival order: ties keep it */
} sitem_t;

/* A sorted run spilled to an (already unlinked) temporary file, read back
 * one document at a time during the merge. */
typedef struct srun {
	FILE *f;
	sitem_t head;         /* current document of the run, keys NULL at end */
} srun_t;

/*
 * Without a limit, items[0..n) is every document in arrival order, sorted
 * once at the end.  With a limit k (top-k), items fills up to k in arrival
 * order; from then on (`heaped`) it is a binary heap whose root is the
 * worst of the k, and a new document is first compared with that root
 * straight from its stored bytes: only one that sorts before it is copied,
 * taking the root's place.
 */
struct sorter {
	bson_t out;           /* what sorter_next returns (static over an item) */
	const sort_spec_t *spec;
	bson_value_t probe[SORT_MAX_KEYS];   /* keys of the document being added */
	int64_t limit;
	bool allow_disk;
	char *spill_dir;
	uint64_t mem_limit;
	uint64_t mem;
	uint64_t seq;
	sitem_t *items;
	size_t n, cap, next;
	bool heaped;
	srun_t *runs;
	size_t nruns;
	bool merging;
	int64_t returned;
	sitem_t last;         /* document returned last while merging (owned) */
	terr_t read_err;      /* a run could not be read while merging: the order ends */
};

sorter_t *
sorter_new(const sort_spec_t *spec, int64_t limit, bool allow_disk_use, uint64_t mem_limit)
{
	sorter_t *st = tm_alloc0(sizeof *st);

	st->spec = spec;
	st->limit = limit > 0 ? limit : 0;
	st->allow_disk = allow_disk_use;
	st->mem_limit = mem_limit ? mem_limit : SORT_DEFAULT_MEMORY_LIMIT;
	return st;
}

void
sorter_set_spill_dir(sorter_t *st, const char *dir)
{
	bson_free(st->spill_dir);
	st->spill_dir = dir != NULL ? bson_strdup(dir) : NULL;
}

static int
item_cmp_spec(const sort_spec_t *s, const sitem_t *a, const sitem_t *b)
{
	int c = sort_key_compare(s, a->keys, b->keys);

	if (c != 0)
		return c;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static _Thread_local const sort_spec_t *qsort_spec;

static int
item_cmp(const void *pa, const void *pb)
{
	return item_cmp_spec(qsort_spec, pa, pb);
}

static uint64_t
item_size(const sitem_t *it, size_t nkeys)
{
	return it->cap + sizeof(sitem_t) + sizeof(bson_value_t) * nkeys + 64;
}

/* A block for a document of len bytes and aux_len aux bytes: it->data is
 * where its bytes go, the aux bytes right after; the keys are extracted by
 * item_set_keys once they are there.  A block already there is kept when
 * both fit (the top-k's evicted root). */
static void
item_alloc(const sort_spec_t *s, sitem_t *it, uint32_t len, uint32_t aux_len)
{
	size_t koff = sizeof(bson_value_t) * s->n;

	if (it->keys == NULL || (uint64_t)it->cap < (uint64_t)len + aux_len) {
		bson_free(it->keys);
		it->keys = bson_malloc(koff + (size_t)len + aux_len);
		it->cap = len + aux_len;
	}
	it->data = (const uint8_t *)it->keys + koff;
	it->len = len;
	it->aux_len = aux_len;
}

static void
item_set_keys(const sort_spec_t *s, sitem_t *it)
{
	key_extract_data(s, it->data, it->len, it->keys);
}

static void
item_free(sitem_t *it)
{
	bson_free(it->keys);
	it->keys = NULL;
	it->data = NULL;
	it->len = 0;
	it->aux_len = 0;
	it->cap = 0;
}

static void
sort_items(sorter_t *st)
{
	qsort_spec = st->spec;
	if (st->n > 1)
		qsort(st->items, st->n, sizeof(sitem_t), item_cmp);
	qsort_spec = NULL;
	st->heaped = false;
}

/* Restore the heap (worst item at the root) below position i. */
static void
heap_sift_down(sorter_t *st, size_t i)
{
	sitem_t *h = st->items, tmp;
	size_t n = st->n;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;

		if (l < n && item_cmp_spec(st->spec, &h[l], &h[w]) > 0)
			w = l;
		if (r < n && item_cmp_spec(st->spec, &h[r], &h[w]) > 0)
			w = r;
		if (w == i)
			return;
		tmp = h[i];
		h[i] = h[w];
		h[w] = tmp;
		i = w;
	}
}

static void
heap_build(sorter_t *st)
{
	for (size_t i = st->n / 2; i-- > 0;)
		heap_sift_down(st, i);
	st->heaped = true;
}

/* A new unlinked temporary file in the spill directory. */
static int
spill_file_open(sorter_t *st, FILE **out, terr_t *err)
{
	char *path = bson_strdup_printf("%s/tamga-sort-XXXXXX", st->spill_dir);
	int fd = mkstemp(path);
	int ret = 0;

	*out = NULL;
	if (fd < 0) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s: %s", path,
		               strerror(errno));
		bson_free(path);
		return ret;
	}
	unlink(path);
	bson_free(path);
	*out = fdopen(fd, "w+b");
	if (*out == NULL) {
		close(fd);
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s",
		                strerror(errno));
	}
	return 0;
}

static int run_advance(sorter_t *st, srun_t *r, terr_t *err);

/* The run whose head sorts first (ties to the earlier run: runs hold
 * earlier documents first), or NULL when every run is at its end. */
static srun_t *
runs_best(sorter_t *st)
{
	srun_t *best = NULL;

	for (size_t i = 0; i < st->nruns; i++) {
		srun_t *r = &st->runs[i];
		if (r->head.keys != NULL &&
		    (best == NULL || sort_key_compare(st->spec, r->head.keys, best->head.keys) < 0))
			best = r;
	}
	return best;
}

/* Merge every run into one (at most `limit` documents with a limit), so
 * that a sort with a small memory limit does not hold a file per run. */
static int
runs_compact(sorter_t *st, terr_t *err)
{
	FILE *f;
	srun_t *best;
	int64_t written = 0;
	int ret = 0;

	RET(spill_file_open(st, &f, err));
	for (size_t i = 0; i < st->nruns && ret == 0; i++)
		ret = run_advance(st, &st->runs[i], err);
	while (ret == 0 && (st->limit == 0 || written < st->limit) && (best = runs_best(st)) != NULL) {
		if (fwrite(best->head.data, 1, best->head.len, f) != best->head.len) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s", strerror(errno));
			break;
		}
		written++;
		ret = run_advance(st, best, err);
		if (ret == 0)
			ret = tm_interrupt_check(err);
	}
	if (ret == 0 && (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0))
		ret = terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s", strerror(errno));
	if (ret != 0) {
		fclose(f);
		return -1;
	}
	for (size_t i = 0; i < st->nruns; i++) {
		item_free(&st->runs[i].head);
		fclose(st->runs[i].f);
	}
	memset(&st->runs[0], 0, sizeof(srun_t));
	st->runs[0].f = f;
	st->nruns = 1;
	return 0;
}

/* Write the in-memory items, sorted, as a new run; memory is emptied.
 * Past SORT_MAX_RUNS runs they are first merged into one. */
static int
spill(sorter_t *st, terr_t *err)
{
	FILE *f;

	if (st->nruns >= SORT_MAX_RUNS)
		RET(runs_compact(st, err));
	RET(spill_file_open(st, &f, err));
	sort_items(st);
	for (size_t i = 0; i < st->n; i++) {
		if (fwrite(st->items[i].data, 1, st->items[i].len, f) != st->items[i].len) {
			fclose(f);
			return terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s",
			                strerror(errno));
		}
		item_free(&st->items[i]);
	}
	if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort could not spill to disk: %s",
		                strerror(errno));
	}
	st->runs = bson_realloc(st->runs, sizeof(srun_t) * (st->nruns + 1));
	memset(&st->runs[st->nruns], 0, sizeof(srun_t));
	st->runs[st->nruns++].f = f;
	st->n = 0;
	st->mem = 0;
	return 0;
}

int
sorter_add(sorter_t *st, const bson_t *doc, terr_t *err)
{
	return sorter_add_aux(st, doc, NULL, 0, err);
}

int
sorter_add_aux(sorter_t *st, const bson_t *doc, const uint8_t *aux, uint32_t aux_len, terr_t *err)
{
	const sort_spec_t *s = st->spec;
	const uint8_t *data = bson_get_data(doc);
	size_t nread = 0;
	sitem_t *it;

	if (st->heaped) {
		/* top-k, k held: most documents sort after the worst of them */
		if (key_compare_data(s, data, doc->len, st->items[0].keys, st->probe, &nread) >= 0) {
			st->seq++;
			return 0;
		}
		it = &st->items[0];
		st->mem -= item_size(it, s->n);
	} else {
		if (st->n == st->cap) {
			st->cap = st->cap ? st->cap * 2 : 64;
			if (st->limit > 0 && st->cap > (size_t)st->limit)
				st->cap = (size_t)st->limit;
			st->items = bson_realloc(st->items, sizeof(sitem_t) * st->cap);
		}
		it = &st->items[st->n++];
		memset(it, 0, sizeof *it);
	}
	/* the keys: those the comparison read, then the rest, moved onto the copy */
	for (size_t i = nread; i < s->n; i++)
		key_extract_one(s, i, data, doc->len, &st->probe[i]);
	if (aux_len > UINT32_MAX - doc->len)
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort item too large");
	item_alloc(s, it, doc->len, aux_len);
	memcpy((uint8_t *)it->data, data, doc->len);
	if (aux_len > 0)
		memcpy((uint8_t *)it->data + doc->len, aux, aux_len);
	for (size_t i = 0; i < s->n; i++) {
		it->keys[i] = st->probe[i];
		if (!key_rebase(&it->keys[i], data, doc->len, it->data)) {
			item_set_keys(s, it);
			break;
		}
	}
	it->seq = st->seq++;
	st->mem += item_size(it, st->spec->n);
	if (st->heaped)
		heap_sift_down(st, 0);
	else if (st->limit > 0 && st->n == (size_t)st->limit)
		heap_build(st);
	if (st->mem > st->mem_limit) {
		if (st->allow_disk && st->spill_dir != NULL)
			return spill(st, err);
		if (st->allow_disk)
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			                "Sort exceeded memory limit of %llu bytes, and no directory "
			                "to spill to was configured.",
			                (unsigned long long)st->mem_limit);
		return terr_set(err, TERR_QUERY_EXCEEDED_MEMORY_LIMIT_NO_DISK_USE_ALLOWED,
		                "Sort exceeded memory limit of %llu bytes, but did not opt in to "
		                "external sorting.", (unsigned long long)st->mem_limit);
	}
	return 0;
}

/* Load the next document of a run into its head (keys NULL at the end). */
static int
run_advance(sorter_t *st, srun_t *r, terr_t *err)
{
	uint8_t lenbuf[4];
	uint32_t len;

	item_free(&r->head);
	if (fread(lenbuf, 1, 4, r->f) != 4)
		return 0;
	len = (uint32_t)lenbuf[0] | (uint32_t)lenbuf[1] << 8 | (uint32_t)lenbuf[2] << 16 |
	      (uint32_t)lenbuf[3] << 24;
	if (len < 5 || len > 64 * 1024 * 1024)
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort spill file is corrupt");
	item_alloc(st->spec, &r->head, len, 0);
	memcpy((uint8_t *)r->head.data, lenbuf, 4);
	if (fread((uint8_t *)r->head.data + 4, 1, len - 4, r->f) != len - 4) {
		item_free(&r->head);
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort spill file is truncated");
	}
	if (r->head.data[len - 1] != 0) {
		item_free(&r->head);
		return terr_set(err, TERR_INTERNAL_ERROR, "Sort spill file is corrupt");
	}
	item_set_keys(st->spec, &r->head);
	return 0;
}

int
sorter_finish_ex(sorter_t *st, terr_t *err)
{
	if (st->nruns == 0) {
		sorter_finish(st);
		return 0;
	}
	/* the rest of memory becomes the last run, then every run is merged */
	if (st->n > 0)
		RET(spill(st, err));
	for (size_t i = 0; i < st->nruns; i++)
		RET(run_advance(st, &st->runs[i], err));
	st->merging = true;
	return 0;
}

void
sorter_finish(sorter_t *st)
{
	if (st->nruns > 0) {
		(void)sorter_finish_ex(st, NULL);
		return;
	}
	sort_items(st);
	st->next = 0;
}

/* it's document as st->out (valid while it is held). */
static const bson_t *
item_doc(sorter_t *st, const sitem_t *it)
{
	if (!bson_init_static(&st->out, it->data, it->len))
		bson_init(&st->out);    /* never for bytes that came from a bson_t */
	return &st->out;
}

const bson_t *
sorter_next(sorter_t *st)
{
	srun_t *best = NULL;

	if (!st->merging) {
		if (st->next >= st->n)
			return NULL;
		return item_doc(st, &st->items[st->next++]);
	}
	if (st->limit > 0 && st->returned >= st->limit)
		return NULL;
	if (st->read_err.code != 0)
		return NULL;    /* a run was lost: nothing after it is in order */
	best = runs_best(st);
	if (best == NULL)
		return NULL;
	item_free(&st->last);
	st->last = best->head;
	best->head.keys = NULL;
	best->head.data = NULL;
	if (run_advance(st, best, &st->read_err) != 0) {
		item_free(&best->head);
		if (st->read_err.code == 0)
			terr_set(&st->read_err, TERR_INTERNAL_ERROR, "Sort spill file could not be read");
	}
	st->returned++;
	return item_doc(st, &st->last);
}

int
sorter_next_ex(sorter_t *st, const bson_t **out, terr_t *err)
{
	*out = sorter_next(st);
	if (*out != NULL)
		return 1;
	if (st->read_err.code != 0)
		return terr_set(err, st->read_err.code, "%s", st->read_err.msg);
	return 0;
}

uint64_t
sorter_memory(const sorter_t *st)
{
	return st->mem;
}

bool
sorter_spilled(const sorter_t *st)
{
	return st->nruns > 0;
}

const uint8_t *
sorter_last_aux(const sorter_t *st, uint32_t *len)
{
	const sitem_t *it;

	*len = 0;
	if (st->merging || st->next == 0 || st->next > st->n)
		return NULL;
	it = &st->items[st->next - 1];
	if (it->aux_len == 0)
		return NULL;
	*len = it->aux_len;
	return it->data + it->len;
}

void
sorter_free(sorter_t *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->n; i++)
		item_free(&st->items[i]);
	for (size_t i = 0; i < st->nruns; i++) {
		item_free(&st->runs[i].head);
		fclose(st->runs[i].f);
	}
	item_free(&st->last);
	terr_clear(&st->read_err);
	bson_free(st->runs);
	bson_free(st->items);
	bson_free(st->spill_dir);
	bson_free(st);
}
