/*
 * tb_preview.c -- tamgaValidationPreview (toolbelt.h): what a validator
 * would say of every document already stored, per rule, before it is
 * installed (or of the current one, before going to 'constraint').
 *
 * One pass in _id order through the _id index, so a caller can stop after
 * `limit` documents and resume after the last _id.  Nothing is locked: no
 * transaction is open (each read sees the latest committed data), no
 * catalog lock is held between documents, writers never wait.  A document
 * that passes costs one match evaluation; one that fails is explained
 * (query/match_explain.h) and its errInfo walked for the rules it broke
 * (schema/schema_rules.h).
 */
#include "toolbelt/toolbelt.h"

#include <string.h>

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

int
toolbelt_preview(storage_session_t *s, storage_coll_t *coll, const toolbelt_preview_opts_t *o, bson_t *reply,
                 terr_t *err)
{
	preview_t p = {0};
	bson_t vdoc, arr, one, lv, sub;
	const bson_t *validator = o->validator;
	match_t *m = NULL;
	match_options_t mo = {0};
	storage_cursor_t *cur = NULL;
	const storage_index_t *idix = NULL;
	keystring_t lo;
	int64_t scanned = 0, failed = 0, limit = o->limit;
	bson_value_t last_id = {0}, first_bad = {0};
	bool complete = false, have_last = false, have_bad = false;
	int ret = -1, rc;
	bson_iter_t vit;

	keystring_init(&lo);
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
	for (int i = 0; i < coll->nindexes; i++)
		if (coll->indexes[i].is_id)
			idix = &coll->indexes[i];
	if (idix == NULL) {
		ret = terr_set(err, TERR_BAD_VALUE, "Collection %s has no _id index to scan in order", coll->ns);
		goto err;
	}
	if (o->resume_after != NULL)
		keystring_append_value_coll(&lo, o->resume_after, false, idix->collation);
	ERR(storage_index_scan_open(s, coll, idix, o->resume_after != NULL ? lo.buf : NULL,
	    o->resume_after != NULL ? lo.len : 0, false, NULL, 0, false, false, &cur, err));
	for (;;) {
		recid_t recid;
		const uint8_t *key;
		size_t klen;
		bson_t doc;
		bson_iter_t idit;
		if (limit > 0 && scanned == limit)
			break;
		if ((rc = storage_cursor_next(cur, &recid, NULL, &key, &klen, err)) < 0)
			goto err;
		if (rc == 0) {
			complete = true;
			break;
		}
		ERR(tm_interrupt_check(err));
		if ((rc = storage_doc_get(s, coll, recid, &doc, err)) < 0)
			goto err;
		if (rc == 1)
			continue;          /* deleted since the index entry was read */
		scanned++;
		if (have_last)
			bson_value_destroy(&last_id);
		have_last = false;
		if (bson_iter_init_find(&idit, &doc, "_id")) {
			bson_value_copy(bson_iter_value(&idit), &last_id);
			have_last = true;
		}
		if (match_exec(m, &doc, NULL, NULL) == 1)
			continue;
		failed++;
		if (!have_bad && have_last) {
			bson_value_copy(&last_id, &first_bad);
			have_bad = true;
		}
		p.info = match_explain_errinfo(m, &doc, NULL);
		p.id = have_last ? &last_id : NULL;
		if (p.info != NULL) {
			schema_rules_failed(p.info, on_rule_failed, &p);
			bson_destroy((bson_t *)p.info);
		}
		p.info = NULL;
		seen_clear(&p);
	}
	if (!complete && limit > 0) {
		/* stopped at the limit: complete when nothing follows */
		recid_t recid;
		const uint8_t *key;
		size_t klen;
		if ((rc = storage_cursor_next(cur, &recid, NULL, &key, &klen, err)) < 0)
			goto err;
		complete = rc == 0;
	}
	if (o->resume_after != NULL && scanned == 0) {
		char *j = bv_to_mongo_string(o->resume_after);
		ret = terr_set(err, TERR_BAD_VALUE, "resumeAfter %s is past the last _id of %s", j, coll->ns);
		bson_free(j);
		goto err;
	}

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
	BSON_APPEND_BOOL(&sub, "upgradeSucceeds", failed == 0 && complete);
	if (have_bad)
		bv_append(&sub, "firstOffendingId", -1, &first_bad);
	if (!complete)
		BSON_APPEND_UTF8(&sub, "meaning", "not decided: the scan stopped before the end");
	bson_append_document_end(&lv, &sub);
	bson_append_document_end(reply, &lv);
	BSON_APPEND_BOOL(reply, "complete", complete);
	if (!complete && have_last)
		bv_append(reply, "resumeAfter", -1, &last_id);
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	if (have_last)
		bson_value_destroy(&last_id);
	if (have_bad)
		bson_value_destroy(&first_bad);
	seen_clear(&p);
	bson_free(p.seen);
	for (int i = 0; i < p.n; i++) {
		bson_free(p.r[i].name);
		bson_destroy(p.r[i].examples);
		bson_free(p.r[i].examples);
	}
	bson_free(p.r);
	keystring_destroy(&lo);
	match_free(m);
	return ret;
}
