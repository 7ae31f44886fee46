/*
 * tb_advise.c -- tamgaSchemaAdvice (toolbelt.h): the seed's schema
 * anti-patterns, each found from evidence the server holds, with its
 * numbers, a severity and the pattern that fixes it (docs/patterns.md).
 *
 *   unboundedArray       an array longer than array_max in some document
 *                        (subset / outlier / bucket; reference)
 *   documentNearLimit    documents past half of the 16 MiB limit
 *   bloatedDocument      one field carrying most of large documents' bytes
 *                        (subset; move the rarely read part out)
 *   tooManyCollections   more than collections_max collections in a database
 *   collectionPerEntity  names that differ only by a number or a date
 *                        (one collection with a field for it)
 *   unusedIndex          a secondary index no plan chose since start
 *                        ($indexStats' accesses.ops)
 *   prefixIndex          an index whose key is a prefix of another one's
 *   caseInsensitiveRegex /i regexes (or $options: "i") that scanned the
 *                        collection (system.profile): a collation index
 *   unboundedPush        profiled updates that $push / $addToSet into an
 *                        array without $slice: it grows with every write
 *   lookupEveryRead      an aggregation with $lookup run again and again
 *                        ($queryStats or system.profile): extended
 *                        reference / computed
 *
 * Only reads: the documents (a sample per collection), the catalog, the
 * index usage counters, the $queryStats store and <db>.system.profile.
 */
#include "toolbelt/toolbelt.h"

#include <ctype.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "query/plan.h"

#define DOC_LIMIT (16 * 1024 * 1024)
#define PATH_MAX_LEN 512

typedef struct findings {
	bson_t arr;
	int n;
} findings_t;

/* Open a finding; the caller appends evidence fields to *ev, then calls
 * finding_end. */
static void
finding_begin(findings_t *f, bson_t *one, bson_t *ev, const char *type, const char *ns, const char *severity)
{
	char idx[16];
	const char *ik;

	bson_uint32_to_string((uint32_t)f->n++, &ik, idx, sizeof(idx));
	BSON_APPEND_DOCUMENT_BEGIN(&f->arr, ik, one);
	BSON_APPEND_UTF8(one, "type", type);
	BSON_APPEND_UTF8(one, "ns", ns);
	BSON_APPEND_UTF8(one, "severity", severity);
	BSON_APPEND_DOCUMENT_BEGIN(one, "evidence", ev);
}

static void
finding_end(findings_t *f, bson_t *one, bson_t *ev, const char *pattern, const char *fix, const char *anchor)
{
	char doc[128];

	bson_append_document_end(one, ev);
	BSON_APPEND_UTF8(one, "pattern", pattern);
	BSON_APPEND_UTF8(one, "fix", fix);
	snprintf(doc, sizeof(doc), "docs/patterns.md#%s", anchor);
	BSON_APPEND_UTF8(one, "doc", doc);
	bson_append_document_end(&f->arr, one);
}

/* ---- documents: arrays and sizes ------------------------------------------------ */

typedef struct arr_stat {
	char path[PATH_MAX_LEN];
	int64_t max_len, docs_over, sum_len, docs;
	bson_value_t max_id;       /* owned */
	bool has_id;
} arr_stat_t;

typedef struct field_size {
	char name[PATH_MAX_LEN];
	int64_t bytes;             /* summed over large documents */
} field_size_t;

typedef struct doc_scan {
	arr_stat_t *a;
	int na, cap;
	int64_t array_max;
	field_size_t *fs;
	int nfs, fscap;
	int64_t large_docs, large_bytes;
} doc_scan_t;

static arr_stat_t *
arr_get(doc_scan_t *d, const char *path)
{
	for (int i = 0; i < d->na; i++)
		if (strcmp(d->a[i].path, path) == 0)
			return &d->a[i];
	if (d->na == 256)
		return NULL;
	if (d->na == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->a = bson_realloc(d->a, (size_t)d->cap * sizeof(*d->a));
	}
	memset(&d->a[d->na], 0, sizeof(arr_stat_t));
	snprintf(d->a[d->na].path, PATH_MAX_LEN, "%s", path);
	return &d->a[d->na++];
}

static void
scan_arrays(doc_scan_t *d, bson_iter_t *it, const char *prefix, const bson_value_t *id, int depth)
{
	while (bson_iter_next(it)) {
		char path[PATH_MAX_LEN];
		bson_iter_t c;
		snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", bson_iter_key(it));
		if (BSON_ITER_HOLDS_ARRAY(it) && bson_iter_recurse(it, &c)) {
			int64_t len = 0;
			arr_stat_t *a;
			while (bson_iter_next(&c))
				len++;
			if ((a = arr_get(d, path)) != NULL) {
				a->docs++;
				a->sum_len += len;
				if (len > d->array_max)
					a->docs_over++;
				if (len > a->max_len) {
					a->max_len = len;
					if (a->has_id)
						bson_value_destroy(&a->max_id);
					a->has_id = id != NULL;
					if (id != NULL)
						bson_value_copy(id, &a->max_id);
				}
			}
		} else if (BSON_ITER_HOLDS_DOCUMENT(it) && depth < 10 && bson_iter_recurse(it, &c)) {
			scan_arrays(d, &c, path, id, depth + 1);
		}
	}
}

static void
field_sizes(doc_scan_t *d, const bson_t *doc)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, doc))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		uint32_t sz = it.next_off - it.off;   /* the element's bytes */
		int i;
		for (i = 0; i < d->nfs; i++)
			if (strcmp(d->fs[i].name, k) == 0)
				break;
		if (i == d->nfs) {
			if (d->nfs == 512)
				continue;
			if (d->nfs == d->fscap) {
				d->fscap = d->fscap ? d->fscap * 2 : 16;
				d->fs = bson_realloc(d->fs, (size_t)d->fscap * sizeof(*d->fs));
			}
			snprintf(d->fs[i].name, PATH_MAX_LEN, "%s", k);
			d->fs[i].bytes = 0;
			d->nfs++;
		}
		d->fs[i].bytes += sz;
	}
}

static int
check_documents(storage_session_t *s, storage_coll_t *c, const toolbelt_advise_opts_t *o, findings_t *f,
                terr_t *err)
{
	storage_cursor_t *cur = NULL;
	doc_scan_t d = {0};
	int64_t n = 0, near = 0, max_size = 0;
	bson_value_t max_size_id = {0};
	bool have_max_id = false;
	int rc, ret = -1;
	bson_t one, ev;

	d.array_max = o->array_max;
	ERR(storage_scan_open(s, c, false, &cur, err));
	for (;;) {
		bson_t doc;
		bson_iter_t it, idit;
		const bson_value_t *id = NULL;
		if (o->sample > 0 && n == o->sample)
			break;
		if ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) < 0)
			goto err;
		if (rc == 0)
			break;
		ERR(tm_interrupt_check(err));
		n++;
		if (bson_iter_init_find(&idit, &doc, "_id"))
			id = bson_iter_value(&idit);
		if ((int64_t)doc.len > max_size) {
			max_size = doc.len;
			if (have_max_id)
				bson_value_destroy(&max_size_id);
			have_max_id = id != NULL;
			if (id != NULL)
				bson_value_copy(id, &max_size_id);
		}
		if (doc.len > DOC_LIMIT / 2)
			near++;
		if (doc.len > 1024 * 1024) {
			d.large_docs++;
			d.large_bytes += doc.len;
			field_sizes(&d, &doc);
		}
		if (bson_iter_init(&it, &doc))
			scan_arrays(&d, &it, "", id, 0);
	}
	for (int i = 0; i < d.na; i++) {
		arr_stat_t *a = &d.a[i];
		if (a->max_len <= o->array_max)
			continue;
		finding_begin(f, &one, &ev, "unboundedArray", c->ns,
		    a->max_len >= 10000 || max_size > DOC_LIMIT / 2 ? "high" : "medium");
		BSON_APPEND_UTF8(&ev, "path", a->path);
		BSON_APPEND_INT64(&ev, "maxLength", a->max_len);
		BSON_APPEND_DOUBLE(&ev, "avgLength", a->docs > 0 ? (double)a->sum_len / (double)a->docs : 0.0);
		BSON_APPEND_INT64(&ev, "documentsOverLimit", a->docs_over);
		BSON_APPEND_INT64(&ev, "limit", o->array_max);
		if (a->has_id)
			bv_append(&ev, "longestIn", -1, &a->max_id);
		BSON_APPEND_INT64(&ev, "documentsScanned", n);
		finding_end(f, &one, &ev, "subset",
		    "Keep the elements in a collection of their own, referencing the parent; embed only the few "
		    "read with it (subset), or move the overflow of the rare large ones out (outlier), or group "
		    "them by time (bucket).", "unbounded-arrays");
	}
	if (near > 0) {
		finding_begin(f, &one, &ev, "documentNearLimit", c->ns, max_size > DOC_LIMIT * 3 / 4 ? "high" : "medium");
		BSON_APPEND_INT64(&ev, "documents", near);
		BSON_APPEND_INT64(&ev, "maxBytes", max_size);
		BSON_APPEND_INT64(&ev, "limitBytes", DOC_LIMIT);
		if (have_max_id)
			bv_append(&ev, "largest", -1, &max_size_id);
		finding_end(f, &one, &ev, "outlier",
		    "Split what grows out of the document (subset, outlier); a document may not pass 16 MiB.",
		    "documents-near-the-limit");
	}
	if (d.large_docs > 0) {
		for (int i = 0; i < d.nfs; i++) {
			if (d.fs[i].bytes * 2 < d.large_bytes || strcmp(d.fs[i].name, "_id") == 0)
				continue;
			finding_begin(f, &one, &ev, "bloatedDocument", c->ns, "medium");
			BSON_APPEND_UTF8(&ev, "field", d.fs[i].name);
			BSON_APPEND_INT64(&ev, "largeDocuments", d.large_docs);
			BSON_APPEND_DOUBLE(&ev, "shareOfBytes", (double)d.fs[i].bytes / (double)d.large_bytes);
			finding_end(f, &one, &ev, "subset",
			    "Move the large, rarely read field into a document of its own and keep what every read "
			    "needs in the main one (subset).", "bloated-documents");
		}
	}
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	for (int i = 0; i < d.na; i++)
		if (d.a[i].has_id)
			bson_value_destroy(&d.a[i].max_id);
	bson_free(d.a);
	bson_free(d.fs);
	if (have_max_id)
		bson_value_destroy(&max_size_id);
	return ret;
}

/* ---- indexes ------------------------------------------------------------------- */

/* a's key is a proper prefix of b's (same fields, same directions). */
static bool
key_prefix(const bson_t *a, const bson_t *b)
{
	bson_iter_t ia, ib;
	int na = 0;

	if (!bson_iter_init(&ia, a) || !bson_iter_init(&ib, b))
		return false;
	while (bson_iter_next(&ia)) {
		if (!bson_iter_next(&ib) || strcmp(bson_iter_key(&ia), bson_iter_key(&ib)) != 0 ||
		    bv_compare(bson_iter_value(&ia), bson_iter_value(&ib)) != 0)
			return false;
		na++;
	}
	return na > 0 && bson_iter_next(&ib);
}

static bool
plain_index(const storage_index_t *ix)
{
	return !ix->is_id && !ix->unique && !ix->partial && !ix->sparse && !ix->wildcard && ix->collation == NULL;
}

static void
check_indexes(storage_coll_t *c, findings_t *f)
{
	bson_t one, ev;

	for (int i = 0; i < c->nindexes; i++) {
		const storage_index_t *ix = &c->indexes[i];
		if (ix->is_id)
			continue;
		if (plan_index_ops(c, ix) == 0) {
			finding_begin(f, &one, &ev, "unusedIndex", c->ns, "low");
			BSON_APPEND_UTF8(&ev, "index", ix->name);
			BSON_APPEND_DOCUMENT(&ev, "key", ix->key);
			BSON_APPEND_INT64(&ev, "opsSinceStart", 0);
			finding_end(f, &one, &ev, "drop the index",
			    "No query chose this index since the server started ($indexStats accesses.ops = 0): every "
			    "write still maintains it. Drop it (or hide it first) once a full workload cycle confirms it.",
			    "unused-and-redundant-indexes");
		}
		if (!plain_index(ix))
			continue;
		for (int j = 0; j < c->nindexes; j++) {
			const storage_index_t *other = &c->indexes[j];
			if (j == i || other->partial || other->sparse || other->collation != NULL || other->wildcard)
				continue;
			if (key_prefix(ix->key, other->key)) {
				finding_begin(f, &one, &ev, "prefixIndex", c->ns, "medium");
				BSON_APPEND_UTF8(&ev, "index", ix->name);
				BSON_APPEND_DOCUMENT(&ev, "key", ix->key);
				BSON_APPEND_UTF8(&ev, "prefixOf", other->name);
				BSON_APPEND_DOCUMENT(&ev, "prefixOfKey", other->key);
				finding_end(f, &one, &ev, "drop the index",
				    "Every query this index serves can use the longer one it is a prefix of; drop it.",
				    "unused-and-redundant-indexes");
				break;
			}
		}
	}
}

/* ---- the database: collection counts and names ------------------------------------ */

/* The name with every run of digits replaced by '#'. */
static void
name_pattern(const char *name, char *out, size_t len)
{
	size_t n = 0;

	for (const char *p = name; *p != '\0' && n + 1 < len; p++) {
		if (isdigit((unsigned char)*p)) {
			if (n == 0 || out[n - 1] != '#')
				out[n++] = '#';
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

static void
check_database(const char *db, storage_coll_t **colls, int n, const toolbelt_advise_opts_t *o, findings_t *f)
{
	bson_t one, ev, ex;
	char *pat = bson_malloc0((size_t)(n > 0 ? n : 1) * 256);
	bool *done = bson_malloc0((size_t)(n > 0 ? n : 1));
	char ns[300];

	snprintf(ns, sizeof(ns), "%s", db);
	if (n > o->collections_max) {
		finding_begin(f, &one, &ev, "tooManyCollections", ns, "high");
		BSON_APPEND_INT32(&ev, "collections", n);
		BSON_APPEND_INT64(&ev, "limit", o->collections_max);
		finding_end(f, &one, &ev, "one collection with a field",
		    "Each collection and index is its own table and cache space; keep what differs by a value in one "
		    "collection with a field for it.", "too-many-collections");
	}
	for (int i = 0; i < n; i++)
		name_pattern(colls[i]->name, pat + (size_t)i * 256, 256);
	for (int i = 0; i < n; i++) {
		int members = 0;
		if (done[i] || strchr(pat + (size_t)i * 256, '#') == NULL || strncmp(colls[i]->name, "system.", 7) == 0)
			continue;
		for (int j = i; j < n; j++)
			if (strcmp(pat + (size_t)i * 256, pat + (size_t)j * 256) == 0)
				members++;
		if (members < 10)
			continue;
		finding_begin(f, &one, &ev, "collectionPerEntity", ns, members >= 100 ? "high" : "medium");
		BSON_APPEND_UTF8(&ev, "namePattern", pat + (size_t)i * 256);
		BSON_APPEND_INT32(&ev, "collections", members);
		BSON_APPEND_ARRAY_BEGIN(&ev, "examples", &ex);
		for (int j = i, k = 0; j < n; j++)
			if (strcmp(pat + (size_t)i * 256, pat + (size_t)j * 256) == 0) {
				done[j] = true;
				if (k < 5) {
					char idx[16];
					const char *ik;
					bson_uint32_to_string((uint32_t)k++, &ik, idx, sizeof(idx));
					BSON_APPEND_UTF8(&ex, ik, colls[j]->name);
				}
			}
		bson_append_array_end(&ev, &ex);
		finding_end(f, &one, &ev, "one collection with a field",
		    "A collection per day, customer or category: keep them in one collection with that value as a "
		    "field (indexed), or use a time-series / bucket collection for per-day data.", "too-many-collections");
	}
	bson_free(pat);
	bson_free(done);
}

/* ---- queries: system.profile and $queryStats --------------------------------------- */

static bool
filter_has_ci_regex(bson_iter_t *it, int depth)
{
	while (bson_iter_next(it)) {
		bson_iter_t c;
		if (BSON_ITER_HOLDS_REGEX(it)) {
			const char *opts = NULL;
			bson_iter_regex(it, &opts);
			if (opts != NULL && strchr(opts, 'i') != NULL)
				return true;
		} else if (strcmp(bson_iter_key(it), "$options") == 0 && BSON_ITER_HOLDS_UTF8(it) &&
		           strchr(bson_iter_utf8(it, NULL), 'i') != NULL) {
			return true;
		} else if ((BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) && depth < 20 &&
		           bson_iter_recurse(it, &c) && filter_has_ci_regex(&c, depth + 1)) {
			return true;
		}
	}
	return false;
}

typedef struct push_count {
	char ns[300];
	char path[PATH_MAX_LEN];
	int64_t pushes, unsliced;
} push_count_t;

/* The $push / $addToSet paths of one update document u. */
static void
count_pushes(push_count_t **v, int *n, int *cap, const char *ns, const bson_t *u)
{
	bson_iter_t it, ops, spec;

	if (!bson_iter_init(&it, u))
		return;
	while (bson_iter_next(&it)) {
		bool add_to_set = strcmp(bson_iter_key(&it), "$addToSet") == 0;
		if ((strcmp(bson_iter_key(&it), "$push") != 0 && !add_to_set) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
		    !bson_iter_recurse(&it, &ops))
			continue;
		while (bson_iter_next(&ops)) {
			bool sliced = false;
			push_count_t *pc = NULL;
			if (BSON_ITER_HOLDS_DOCUMENT(&ops) && bson_iter_recurse(&ops, &spec))
				while (bson_iter_next(&spec))
					if (strcmp(bson_iter_key(&spec), "$slice") == 0)
						sliced = true;
			for (int i = 0; i < *n; i++)
				if (strcmp((*v)[i].ns, ns) == 0 && strcmp((*v)[i].path, bson_iter_key(&ops)) == 0)
					pc = &(*v)[i];
			if (pc == NULL) {
				if (*n == 1024)
					continue;
				if (*n == *cap) {
					*cap = *cap ? *cap * 2 : 8;
					*v = bson_realloc(*v, (size_t)*cap * sizeof(**v));
				}
				pc = &(*v)[(*n)++];
				memset(pc, 0, sizeof(*pc));
				snprintf(pc->ns, sizeof(pc->ns), "%s", ns);
				snprintf(pc->path, sizeof(pc->path), "%s", bson_iter_key(&ops));
			}
			pc->pushes++;
			if (!sliced)
				pc->unsliced++;
		}
	}
}

static bool
pipeline_has_lookup(const bson_t *cmd)
{
	bson_iter_t it, st, f;

	if (!bson_iter_init_find(&it, cmd, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &st))
		return false;
	while (bson_iter_next(&st))
		if (BSON_ITER_HOLDS_DOCUMENT(&st) && bson_iter_recurse(&st, &f) && bson_iter_next(&f) &&
		    strcmp(bson_iter_key(&f), "$lookup") == 0)
			return true;
	return false;
}

typedef struct shape_count {
	char ns[300];
	char hash[65];
	int64_t n;
	int64_t docs_examined;
	bool regex;                /* a case-insensitive regex scan (else a $lookup aggregation) */
} shape_count_t;

static shape_count_t *
shape_get(shape_count_t **v, int *n, int *cap, const char *ns, const char *hash, bool regex)
{
	for (int i = 0; i < *n; i++)
		if ((*v)[i].regex == regex && strcmp((*v)[i].ns, ns) == 0 && strcmp((*v)[i].hash, hash) == 0)
			return &(*v)[i];
	if (*n == 4096)
		return NULL;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*v = bson_realloc(*v, (size_t)*cap * sizeof(**v));
	}
	memset(&(*v)[*n], 0, sizeof(shape_count_t));
	snprintf((*v)[*n].ns, sizeof((*v)[*n].ns), "%s", ns);
	snprintf((*v)[*n].hash, sizeof((*v)[*n].hash), "%s", hash);
	(*v)[*n].regex = regex;
	return &(*v)[(*n)++];
}

static int
check_queries(storage_t *st, storage_session_t *s, const char *db, const char *only, findings_t *f, terr_t *err)
{
	storage_coll_t *prof = NULL;
	storage_cursor_t *cur = NULL;
	shape_count_t *v = NULL;
	push_count_t *pv = NULL;
	int nv = 0, cap = 0, npv = 0, pcap = 0, rc, ret = -1;
	bson_t one, ev, rows = BSON_INITIALIZER;
	bson_iter_t ri;
	char only_ns[300];

	if (only != NULL)
		snprintf(only_ns, sizeof(only_ns), "%s.%s", db, only);
	/* the profiler's entries of db */
	if (storage_coll_get(st, db, "system.profile", &prof, NULL) == 0) {
		ERR(storage_scan_open(s, prof, false, &cur, err));
		for (;;) {
			bson_t e, cmd;
			bson_iter_t it, ci;
			const char *ns = NULL, *plan = "", *hash = "";
			const uint8_t *d;
			uint32_t l;
			int64_t docs = 0;
			if ((rc = storage_cursor_next(cur, NULL, &e, NULL, NULL, err)) < 0)
				goto err;
			if (rc == 0)
				break;
			ERR(tm_interrupt_check(err));
			if (!bson_iter_init_find(&it, &e, "ns") || !BSON_ITER_HOLDS_UTF8(&it))
				continue;
			ns = bson_iter_utf8(&it, NULL);
			if (only != NULL && strcmp(ns, only_ns) != 0)
				continue;
			if (bson_iter_init_find(&it, &e, "planSummary") && BSON_ITER_HOLDS_UTF8(&it))
				plan = bson_iter_utf8(&it, NULL);
			if (bson_iter_init_find(&it, &e, "queryShapeHash") && BSON_ITER_HOLDS_UTF8(&it))
				hash = bson_iter_utf8(&it, NULL);
			if (bson_iter_init_find(&it, &e, "docsExamined") && BSON_ITER_HOLDS_NUMBER(&it))
				docs = bson_iter_as_int64(&it);
			if (!bson_iter_init_find(&it, &e, "command") || !BSON_ITER_HOLDS_DOCUMENT(&it))
				continue;
			bson_iter_document(&it, &l, &d);
			bson_init_static(&cmd, d, l);
			if (strncmp(plan, "COLLSCAN", 8) == 0 && bson_iter_init(&ci, &cmd) && filter_has_ci_regex(&ci, 0)) {
				shape_count_t *sc = shape_get(&v, &nv, &cap, ns, hash, true);
				if (sc != NULL) {
					sc->n++;
					sc->docs_examined += docs;
				}
			}
			if (pipeline_has_lookup(&cmd)) {
				shape_count_t *sc = shape_get(&v, &nv, &cap, ns, hash, false);
				if (sc != NULL)
					sc->n++;
			}
			/* update statements pushing into arrays */
			if (bson_iter_init_find(&ci, &cmd, "updates") && BSON_ITER_HOLDS_ARRAY(&ci)) {
				bson_iter_t st, uf;
				if (bson_iter_recurse(&ci, &st))
					while (bson_iter_next(&st))
						if (BSON_ITER_HOLDS_DOCUMENT(&st) && bson_iter_recurse(&st, &uf) &&
						    bson_iter_find(&uf, "u") && BSON_ITER_HOLDS_DOCUMENT(&uf)) {
							bson_t ud;
							const uint8_t *ud_d;
							uint32_t ud_l;
							bson_iter_document(&uf, &ud_l, &ud_d);
							bson_init_static(&ud, ud_d, ud_l);
							count_pushes(&pv, &npv, &pcap, ns, &ud);
						}
			}
		}
		storage_cursor_close(cur);
		cur = NULL;
	}
	/* $queryStats: aggregations with $lookup and how often they ran */
	bson_init(&rows);
	toolbelt_qstats_rows(NULL, 0, &rows);
	if (bson_iter_init(&ri, &rows))
		while (bson_iter_next(&ri)) {
			bson_iter_t k;
			const char *rdb = NULL, *rcoll = NULL, *hash = NULL;
			int64_t execs = 0;
			bson_t shape;
			const uint8_t *d;
			uint32_t l;
			char ns[300];
			if (!BSON_ITER_HOLDS_DOCUMENT(&ri) || !bson_iter_recurse(&ri, &k))
				continue;
			bson_iter_t r2 = ri;
			bson_iter_t f2;
			if (bson_iter_recurse(&r2, &f2) && bson_iter_find_descendant(&f2, "key.queryShape.cmdNs.db", &f2))
				rdb = bson_iter_utf8(&f2, NULL);
			if (bson_iter_recurse(&r2, &f2) && bson_iter_find_descendant(&f2, "key.queryShape.cmdNs.coll", &f2))
				rcoll = bson_iter_utf8(&f2, NULL);
			if (bson_iter_recurse(&r2, &f2) && bson_iter_find(&f2, "queryShapeHash") && BSON_ITER_HOLDS_UTF8(&f2))
				hash = bson_iter_utf8(&f2, NULL);
			if (bson_iter_recurse(&r2, &f2) && bson_iter_find_descendant(&f2, "metrics.execCount", &f2))
				execs = bson_iter_as_int64(&f2);
			if (rdb == NULL || rcoll == NULL || hash == NULL || strcmp(rdb, db) != 0 ||
			    (only != NULL && strcmp(rcoll, only) != 0))
				continue;
			if (!bson_iter_recurse(&r2, &f2) || !bson_iter_find_descendant(&f2, "key.queryShape", &f2) ||
			    !BSON_ITER_HOLDS_DOCUMENT(&f2))
				continue;
			bson_iter_document(&f2, &l, &d);
			bson_init_static(&shape, d, l);
			if (!pipeline_has_lookup(&shape))
				continue;
			snprintf(ns, sizeof(ns), "%s.%s", rdb, rcoll);
			shape_count_t *sc = shape_get(&v, &nv, &cap, ns, hash, false);
			if (sc != NULL && execs > sc->n)
				sc->n = execs;
		}
	for (int i = 0; i < nv; i++) {
		if (v[i].regex) {
			finding_begin(f, &one, &ev, "caseInsensitiveRegex", v[i].ns, v[i].n >= 10 ? "high" : "medium");
			BSON_APPEND_UTF8(&ev, "queryShapeHash", v[i].hash);
			BSON_APPEND_INT64(&ev, "collectionScans", v[i].n);
			BSON_APPEND_INT64(&ev, "docsExamined", v[i].docs_examined);
			BSON_APPEND_UTF8(&ev, "source", "system.profile");
			finding_end(f, &one, &ev, "a collation index",
			    "A case-insensitive regex cannot use an index and scans the collection: create an index "
			    "with a case-insensitive collation ({locale: \"en\", strength: 2}) and query by equality "
			    "with that collation.", "case-insensitive-search");
		} else if (v[i].n >= 10) {
			finding_begin(f, &one, &ev, "lookupEveryRead", v[i].ns, v[i].n >= 1000 ? "high" : "medium");
			BSON_APPEND_UTF8(&ev, "queryShapeHash", v[i].hash);
			BSON_APPEND_INT64(&ev, "executions", v[i].n);
			finding_end(f, &one, &ev, "extended reference",
			    "The same $lookup runs on every read: copy the few fields read with the document into it "
			    "(extended reference), or keep the joined summary up to date at write time (computed).",
			    "lookup-on-every-read");
		}
	}
	for (int i = 0; i < npv; i++) {
		if (pv[i].unsliced == 0)
			continue;
		finding_begin(f, &one, &ev, "unboundedPush", pv[i].ns, pv[i].unsliced >= 100 ? "high" : "medium");
		BSON_APPEND_UTF8(&ev, "path", pv[i].path);
		BSON_APPEND_INT64(&ev, "pushesProfiled", pv[i].pushes);
		BSON_APPEND_INT64(&ev, "withoutSlice", pv[i].unsliced);
		BSON_APPEND_UTF8(&ev, "source", "system.profile");
		finding_end(f, &one, &ev, "subset",
		    "Every write adds to this array and none trims it: keep the last few with $push {$each, $sort, "
		    "$slice} (subset) and the rest in a collection of their own, or one document per element.",
		    "unbounded-arrays");
	}
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_coll_release(prof);
	bson_destroy(&rows);
	bson_free(v);
	bson_free(pv);
	return ret;
}

int
toolbelt_advise(storage_t *st, storage_session_t *s, const char *db, const char *coll,
                const toolbelt_advise_opts_t *o_in, bson_t *reply, terr_t *err)
{
	toolbelt_advise_opts_t o = *o_in;
	findings_t f;
	storage_coll_t **colls = NULL;
	int n = 0, ret = -1, checked = 0;

	if (o.array_max <= 0)
		o.array_max = 200;
	if (o.collections_max <= 0)
		o.collections_max = 10000;
	bson_init(&f.arr);
	f.n = 0;
	ERR(storage_list_colls(st, db, &colls, &n, err));
	for (int i = 0; i < n; i++) {
		storage_coll_t *c = colls[i];
		if (coll != NULL && strcmp(c->name, coll) != 0)
			continue;
		if (strncmp(c->name, "system.", 7) == 0)
			continue;
		checked++;
		ERR(check_documents(s, c, &o, &f, err));
		check_indexes(c, &f);
	}
	if (coll == NULL)
		check_database(db, colls, n, &o, &f);
	ERR(check_queries(st, s, db, coll, &f, err));
	BSON_APPEND_ARRAY(reply, "findings", &f.arr);
	BSON_APPEND_INT32(reply, "collectionsChecked", checked);
	ret = 0;
err:
	for (int i = 0; i < n; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);
	bson_destroy(&f.arr);
	return ret;
}
