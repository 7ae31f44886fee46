/*
 * tb_preview.c -- tamgaValidationPreview (toolbelt.h): what a validator
 * would say of every document already stored, per rule, before it is
 * installed (or of the current one, before going to 'constraint').
 *
 * One pass in natural order (the record table read sequentially), so a
 * caller can stop after `limit` documents and resume after the last one,
 * named by its _id (found again through the _id index).  Nothing is locked: no
 * transaction is open (each read sees the latest committed data), no
 * catalog lock is held between documents, writers never wait.  A document
 * that passes costs one match evaluation; one that fails is explained
 * (query/match_explain.h) and its errInfo walked for the rules it broke
 * (schema/schema_rules.h).  A whole scan (no limit) of a large collection
 * is split into RecordId ranges read by up to four threads at once (the
 * command's operation adopted by each, so maxTimeMS and killOp reach them),
 * whose counts and examples are merged in range order.
 */
#include "toolbelt/toolbelt.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "bson/keystring.h"
#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "query/match.h"
#include "query/match_explain.h"
#include "schema/schema_rules.h"

typedef struct rule {
	char *name;
	int64_t failed;
	bson_t *examples;          /* array being built (tm_bson_array_new) */
	int nex;
} rule_t;

typedef struct preview {
	rule_t *r;
	int n, cap;
	int64_t max_ids;
	/* the document being counted */
	const bson_value_t *id;
	const bson_t *info;
	char **seen;
	int nseen, seencap;
} preview_t;

static rule_t *
rule_get(preview_t *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->r[i].name, name) == 0)
			return &p->r[i];
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 16;
		p->r = bson_realloc(p->r, (size_t)p->cap * sizeof(*p->r));
	}
	memset(&p->r[p->n], 0, sizeof(rule_t));
	p->r[p->n].name = bson_strdup(name);
	p->r[p->n].examples = tm_bson_array_new(1);
	bson_init(p->r[p->n].examples);
	return &p->r[p->n++];
}

static void
on_rule_listed(void *ctx, const char *name)
{
	rule_get(ctx, name);
}

static void
on_rule_failed(void *ctx, const char *name)
{
	preview_t *p = ctx;
	rule_t *r;

	for (int i = 0; i < p->nseen; i++)
		if (strcmp(p->seen[i], name) == 0)
			return;
	if (p->nseen == p->seencap) {
		p->seencap = p->seencap ? p->seencap * 2 : 8;
		p->seen = bson_realloc(p->seen, (size_t)p->seencap * sizeof(*p->seen));
	}
	p->seen[p->nseen++] = bson_strdup(name);
	r = rule_get(p, name);
	r->failed++;
	if (r->nex < p->max_ids) {
		char k[16];
		const char *key;
		bson_t ex;
		bson_uint32_to_string((uint32_t)r->nex++, &key, k, sizeof(k));
		BSON_APPEND_DOCUMENT_BEGIN(r->examples, key, &ex);
		if (p->id != NULL)
			bv_append(&ex, "_id", 3, p->id);
		BSON_APPEND_DOCUMENT(&ex, "errInfo", p->info);
		bson_append_document_end(r->examples, &ex);
	}
}

static void
seen_clear(preview_t *p)
{
	for (int i = 0; i < p->nseen; i++)
		bson_free(p->seen[i]);
	p->nseen = 0;
}

/* One RecordId range (lo, hi] of the scan (hi 0: to the end), read on its
 * own session; what it found, merged by the caller. */
typedef struct part {
	preview_t p;
	storage_t *st;
	storage_session_t *s;      /* NULL: one from the pool (a helper thread) */
	storage_coll_t *coll;
	const match_t *m;
	tm_opctx_t *op;            /* adopted by a helper thread */
	recid_t lo, hi;
	int64_t limit;
	int64_t scanned, failed;
	bson_value_t last_id, first_bad;
	bool have_last, have_bad, complete;
	int rc;
	terr_t err;
} part_t;

static void
part_scan(part_t *pt)
{
	storage_session_t *s = pt->s;
	storage_cursor_t *cur = NULL;
	preview_t *p = &pt->p;
	terr_t *err = &pt->err;
	int rc, ret = -1;

	if (s == NULL && (s = storage_session_pool_get(pt->st, err)) == NULL)
		goto out;
	ERR(storage_scan_open(s, pt->coll, false, &cur, err));
	if (pt->lo > 0)
		storage_cursor_seek_after(cur, pt->lo);
	for (;;) {
		bson_t doc;
		bson_iter_t idit;
		recid_t recid;
		if (pt->limit > 0 && pt->scanned == pt->limit)
			break;
		if ((rc = storage_cursor_next(cur, pt->hi > 0 ? &recid : NULL, &doc, NULL, NULL, err)) < 0)
			goto err;
		if (rc == 0 || (pt->hi > 0 && recid > pt->hi)) {
			pt->complete = true;
			break;
		}
		ERR(tm_interrupt_check(err));
		pt->scanned++;
		if (match_exec(pt->m, &doc, NULL, NULL) == 1) {
			if (pt->limit > 0 && pt->scanned == pt->limit) {
				/* the resume point: this document's _id */
				if (pt->have_last)
					bson_value_destroy(&pt->last_id);
				pt->have_last = bson_iter_init_find(&idit, &doc, "_id");
				if (pt->have_last)
					bson_value_copy(bson_iter_value(&idit), &pt->last_id);
			}
			continue;
		}
		pt->failed++;
		if (pt->have_last)
			bson_value_destroy(&pt->last_id);
		pt->have_last = false;
		if (bson_iter_init_find(&idit, &doc, "_id")) {
			bson_value_copy(bson_iter_value(&idit), &pt->last_id);
			pt->have_last = true;
		}
		if (!pt->have_bad && pt->have_last) {
			bson_value_copy(&pt->last_id, &pt->first_bad);
			pt->have_bad = true;
		}
		p->info = match_explain_errinfo(pt->m, &doc, NULL);
		p->id = pt->have_last ? &pt->last_id : NULL;
		if (p->info != NULL) {
			schema_rules_failed(p->info, on_rule_failed, p);
			bson_destroy((bson_t *)p->info);
		}
		p->info = NULL;
		seen_clear(p);
	}
	if (!pt->complete && pt->limit > 0) {
		/* stopped at the limit: complete when nothing follows */
		bson_t doc;
		if ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) < 0)
			goto err;
		pt->complete = rc == 0;
	}
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	if (pt->s == NULL && s != NULL)
		storage_session_pool_put(pt->st, s);
out:
	pt->rc = ret;
}

static void *
part_thread(void *arg)
{
	part_t *pt = arg;

	tm_opctx_adopt(pt->op);
	part_scan(pt);
	tm_opctx_adopt(NULL);
	return NULL;
}

static void
preview_free(preview_t *p)
{
	seen_clear(p);
	bson_free(p->seen);
	for (int i = 0; i < p->n; i++) {
		bson_free(p->r[i].name);
		bson_destroy(p->r[i].examples);
		bson_free(p->r[i].examples);
	}
	bson_free(p->r);
}

static void
part_free(part_t *pt)
{
	preview_free(&pt->p);
	if (pt->have_last)
		bson_value_destroy(&pt->last_id);
	if (pt->have_bad)
		bson_value_destroy(&pt->first_bad);
	terr_clear(&pt->err);
}

/* Add what part found to p (rules by name, examples in order, up to
 * max_ids each). */
static void
part_merge(preview_t *p, const part_t *pt)
{
	for (int i = 0; i < pt->p.n; i++) {
		const rule_t *from = &pt->p.r[i];
		rule_t *to = rule_get(p, from->name);
		bson_iter_t it;
		to->failed += from->failed;
		if (!bson_iter_init(&it, from->examples))
			continue;
		while (to->nex < p->max_ids && bson_iter_next(&it)) {
			char k[16];
			const char *key;
			bson_uint32_to_string((uint32_t)to->nex++, &key, k, sizeof(k));
			bv_append(to->examples, key, -1, bson_iter_value(&it));
		}
	}
}

#define PREVIEW_THREADS_MAX 4
#define PREVIEW_SPLIT_MIN 50000      /* documents below which one thread reads them all */

int
toolbelt_preview(storage_t *st, storage_session_t *s, storage_coll_t *coll, const toolbelt_preview_opts_t *o,
                 bson_t *reply, terr_t *err)
{
	preview_t p = {0};
	part_t *parts = NULL;
	pthread_t tids[PREVIEW_THREADS_MAX];
	bool started[PREVIEW_THREADS_MAX] = {false};
	bson_t vdoc, arr, one, lv, sub;
	const bson_t *validator = o->validator;
	match_t *m = NULL;
	match_options_t mo = {0};
	int64_t scanned = 0, failed = 0, count = 0;
	const bson_value_t *first_bad = NULL, *last_id = NULL;
	bool complete = true;
	int ret = -1, rc, nparts = 1;
	recid_t lo = 0, hi = 0;
	bson_iter_t vit;

	p.max_ids = o->max_ids > 0 ? o->max_ids : 10;
	if (validator == NULL) {
		const uint8_t *d;
		uint32_t l;
		if (coll->options == NULL || !bson_iter_init_find(&vit, coll->options, "validator") ||
		    !BSON_ITER_HOLDS_DOCUMENT(&vit))
			return terr_set(err, TERR_BAD_VALUE,
			    "Collection %s has no validator: give the one to preview as validator: {...}", coll->ns);
		bson_iter_document(&vit, &l, &d);
		bson_init_static(&vdoc, d, l);
		validator = &vdoc;
	}
	mo.coll = coll->collation;
	mo.disallow = MATCH_DISALLOW_TEXT | MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR;   /* a validator's rules */
	if (match_compile(validator, &mo, &m, err) != 0) {
		terr_wrap(err, "Parsing of collection validator failed");
		return -1;
	}
	schema_rules_list(validator, on_rule_listed, &p);
	/* a resume point is the _id of the last document seen, found again
	 * through the _id index: the scan goes on after its RecordId */
	if (o->resume_after != NULL) {
		bson_t found;
		if ((rc = storage_doc_find_id(s, coll, o->resume_after, &lo, &found, err)) < 0)
			goto err;
		if (rc == 1) {
			char *j = bv_to_mongo_string(o->resume_after);
			ret = terr_set(err, TERR_BAD_VALUE,
			    "resumeAfter %s is not a document of %s: the scan cannot resume from it", j, coll->ns);
			bson_free(j);
			goto err;
		}
	}
	/* a whole scan of a large collection: RecordId ranges on several threads */
	if (o->limit == 0 && storage_coll_stats(st, s, coll, &count, NULL, NULL, err) == 0 &&
	    count >= PREVIEW_SPLIT_MIN) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		storage_cursor_t *back = NULL;
		bson_t d;
		nparts = cpus > PREVIEW_THREADS_MAX ? PREVIEW_THREADS_MAX : cpus > 1 ? (int)cpus : 1;
		if (nparts > 1 && storage_scan_open(s, coll, true, &back, err) == 0) {
			if (storage_cursor_next(back, &hi, &d, NULL, NULL, err) != 1 || hi <= lo + nparts)
				nparts = 1;
			storage_cursor_close(back);
		} else {
			nparts = 1;
		}
		terr_clear(err);
	}
	parts = tm_alloc0(sizeof(*parts) * (size_t)nparts);
	for (int i = 0; i < nparts; i++) {
		part_t *pt = &parts[i];
		pt->p.max_ids = p.max_ids;
		pt->st = st;
		pt->s = i == 0 ? s : NULL;
		pt->coll = coll;
		pt->m = m;
		pt->op = tm_opctx_current();
		pt->limit = nparts == 1 ? o->limit : 0;
		pt->lo = nparts == 1 ? lo : lo + (hi - lo) * i / nparts;
		pt->hi = nparts == 1 ? 0 : i == nparts - 1 ? 0 : lo + (hi - lo) * (i + 1) / nparts;
	}
	for (int i = 1; i < nparts; i++)
		started[i] = pthread_create(&tids[i], NULL, part_thread, &parts[i]) == 0;
	part_scan(&parts[0]);
	for (int i = 1; i < nparts; i++) {
		if (started[i])
			pthread_join(tids[i], NULL);
		else
			part_scan(&parts[i]);      /* no thread: read the range here */
	}
	for (int i = 0; i < nparts; i++) {
		if (parts[i].rc != 0) {
			terr_move(err, &parts[i].err);
			goto err;
		}
		part_merge(&p, &parts[i]);
		scanned += parts[i].scanned;
		failed += parts[i].failed;
		if (first_bad == NULL && parts[i].have_bad)
			first_bad = &parts[i].first_bad;
		complete = complete && parts[i].complete;
	}
	if (nparts == 1 && parts[0].have_last)
		last_id = &parts[0].last_id;

	BSON_APPEND_UTF8(reply, "ns", coll->ns);
	BSON_APPEND_DOCUMENT(reply, "validator", validator);
	BSON_APPEND_INT64(reply, "scanned", scanned);
	BSON_APPEND_INT64(reply, "passed", scanned - failed);
	BSON_APPEND_INT64(reply, "failed", failed);
	BSON_APPEND_ARRAY_BEGIN(reply, "rules", &arr);
	for (int i = 0; i < p.n; i++) {
		char k[16];
		const char *key;
		bson_uint32_to_string((uint32_t)i, &key, k, sizeof(k));
		BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &one);
		BSON_APPEND_UTF8(&one, "rule", p.r[i].name);
		BSON_APPEND_INT64(&one, "failed", p.r[i].failed);
		BSON_APPEND_ARRAY(&one, "examples", p.r[i].examples);
		bson_append_document_end(&arr, &one);
	}
	bson_append_array_end(reply, &arr);
	/* what each validationLevel would mean for the documents seen */
	BSON_APPEND_DOCUMENT_BEGIN(reply, "levels", &lv);
	BSON_APPEND_DOCUMENT_BEGIN(&lv, "off", &sub);
	BSON_APPEND_INT64(&sub, "documentsChecked", 0);
	bson_append_document_end(&lv, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(&lv, "moderate", &sub);
	BSON_APPEND_INT64(&sub, "updatesNotChecked", failed);
	BSON_APPEND_UTF8(&sub, "meaning", "updates of these documents are not validated; inserts and updates of valid documents are");
	bson_append_document_end(&lv, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(&lv, "strict", &sub);
	BSON_APPEND_INT64(&sub, "updatesRejectedUnlessFixed", failed);
	BSON_APPEND_UTF8(&sub, "meaning", "every update of these documents fails until the update makes them valid");
	bson_append_document_end(&lv, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(&lv, "constraint", &sub);
	BSON_APPEND_BOOL(&sub, "upgradeSucceeds", failed == 0 && complete && o->resume_after == NULL);
	if (first_bad != NULL)
		bv_append(&sub, "firstOffendingId", -1, first_bad);
	if (!complete || o->resume_after != NULL)
		BSON_APPEND_UTF8(&sub, "meaning", "not decided: the scan did not cover the whole collection");
	bson_append_document_end(&lv, &sub);
	bson_append_document_end(reply, &lv);
	BSON_APPEND_BOOL(reply, "complete", complete);
	if (!complete && last_id != NULL)
		bv_append(reply, "resumeAfter", -1, last_id);
	ret = 0;
err:
	for (int i = 0; parts != NULL && i < nparts; i++)
		part_free(&parts[i]);
	bson_free(parts);
	preview_free(&p);
	match_free(m);
	return ret;
}
