/*
 * cmd_crud.c -- insert, find, getMore, killCursors, delete, count, distinct.
 * (update and findAndModify are in cmd_update.c, aggregate in
 * cmd_aggregate.c.)
 */
#include "commands/cmd_repl_reads.h"
#include "commands/commands_private.h"
#include "commands/cmd_timeseries.h"

#include <pthread.h>
#include <string.h>

#include "bson/path.h"
#include "bson/value.h"
#include "common/checked.h"
#include "common/mem.h"
#include "commands/validation.h"
#include "commands/write.h"
#include "query/plan.h"
#include "repl/oplog.h"

/* {n: v} appended as one raw element (libbson's appender is ~300
 * instructions, a third of a small insert's own work) */
static void
reply_n(bson_t *reply, int32_t v)
{
	uint32_t u = (uint32_t)v;
	uint8_t e[7] = {BSON_TYPE_INT32, 'n', 0, (uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};

	if (!bv_append_raw(reply, e, sizeof e))
		BSON_APPEND_INT32(reply, "n", v);
}

/* cmd_catalog.c */
int cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err);
void cmd_array_source(bson_t *docs_steal, cursor_source_t *src);

/* ---- insert ------------------------------------------------------------- */

typedef struct insert_batch {
	storage_coll_t *coll;
	bson_t *docs;        /* prepared and validated documents, _id first */
	int from, to;        /* [from, to) of docs to insert in this transaction */
	/* a retryable write: the stmtId of docs[i] is stmt_ids[orig_index[i]] */
	const int32_t *stmt_ids;
	const int *orig_index;
} insert_batch_t;

static int
insert_txn(storage_session_t *s, void *arg, terr_t *err)
{
	insert_batch_t *b = arg;
	int i;

	for (i = b->from; i < b->to; i++) {
		if (b->stmt_ids != NULL)
			repl_oplog_session_set_stmt(s, b->stmt_ids[b->orig_index[i]]);
		if (storage_doc_insert(s, b->coll, &b->docs[i], NULL, err) != 0)
			return -1;
	}
	return 0;
}

int
write_insert_one(cmd_t *c, storage_session_t *s, storage_coll_t *coll, const bson_t *doc, bool bypass,
    bool sync, terr_t *err)
{
	validation_result_t vr;
	insert_batch_t b;
	bson_t *prepared = tm_bson_array_new(1);
	int ret;

	bson_init(&prepared[0]);
	ret = write_capped_txn_check(c, coll, false, err);
	if (ret == 0)
		ret = write_prepare_doc_view(doc, &prepared[0], err);
	if (ret == 0)
		ret = validation_check_write(coll, &prepared[0], NULL, bypass, &vr, err);
	if (ret == 0) {
		memset(&b, 0, sizeof(b));
		b.coll = coll;
		b.docs = prepared;
		b.from = 0;
		b.to = 1;
		ret = storage_txn_run(s, insert_txn, &b, sync, err);
	}
	bson_destroy(&prepared[0]);
	bson_free(prepared);
	return ret == 0 ? 0 : -1;
}

/* Write errors collected out of order, reported sorted by index. */
typedef struct insert_errors {
	int *index;
	terr_t *errs;
	int n;
} insert_errors_t;

static void
insert_error_add(insert_errors_t *ie, int index, terr_t *e)
{
	ie->index[ie->n] = index;
	terr_move(&ie->errs[ie->n], e);
	ie->n++;
}

static const char *const insert_fields[] = {
	"documents", "ordered", "bypassDocumentValidation", "let", "collectionUUID", "rawData", "stmtId", "stmtIds",
	NULL,
};

/*
 * Documents are prepared (_id first) and validated once, before any
 * transaction, so a warn/errorAndLog line is logged once per document.  The
 * valid ones are inserted in transactions of up to 256; when one fails, that
 * group is redone a document per transaction so the others still land and
 * the failure gets its own index.  An ordered batch stops at the first
 * error, whichever step found it.
 */
CMD_HANDLER(cmd_insert)
{
	const char *name;
	write_batch_t w;
	bson_t write_errors = BSON_INITIALIZER;
	bson_iter_t it;
	bool ordered, bypass, sync;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	bson_t *docs = NULL;
	int ndocs = 0, nprep = 0, i, n = 0, ret = -1, stop_at, rr;
	int *orig_index = NULL;
	insert_batch_t b;
	insert_errors_t ie = {0};
	terr_t e = TERR_INIT;
	/* small batches (single inserts above all) need no allocation */
	enum { LOCAL = 4 };
	bson_t local_docs[LOCAL];
	int local_orig[LOCAL], local_index[LOCAL];
	terr_t local_errs[LOCAL];

	ERR(write_batch_args(c, insert_fields, "documents", &w, err));
	name = w.coll;
	ordered = w.ordered;
	bypass = w.bypass;
	sync = w.sync;
	ndocs = w.nops;
	bson_iter_init(&it, &w.stmts);
	for (i = 0; bson_iter_next(&it); i++) {
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'insert.documents.%d' is the wrong type '%s', expected type 'object'",
			    i, bv_type_name(bson_iter_type(&it)));
			goto err;
		}
	}
	if (write_get_or_create_coll(c, name, &coll, &e) != 0) {
		if (e.code != TERR_COMMAND_NOT_SUPPORTED_ON_VIEW) {
			terr_move(err, &e);
			goto err;
		}
		/* a view: each document fails on its own (only the first when
		 * ordered), as mongod reports it */
		for (i = 0; i < ndocs && (i == 0 || !ordered); i++)
			write_error_append(&write_errors, i, i, &e);
		BSON_APPEND_INT32(c->reply, "n", 0);
		BSON_APPEND_ARRAY(c->reply, "writeErrors", &write_errors);
		ret = 0;
		goto err;
	}
	if (cmd_ts_is(coll) && !cmd_ts_raw(c)) {
		/* measurements go into buckets (cmd_timeseries.c); a retryable
		 * one is kept whole (cmd_retry_whole) */
		storage_session_t *ts_s = client_session(c->client, err);
		int rw = ts_s == NULL ? -1 : cmd_retry_whole(c, ts_s, err);
		if (rw < 0) {
			ret = -1;
			goto err;
		}
		if (rw == 1) {
			BSON_APPEND_INT32(c->reply, "n", ndocs);
			ret = 0;
			goto err;
		}
		ret = cmd_ts_insert(c, coll, &w.stmts, ordered, err);
		goto err;
	}
	if (write_capped_txn_check(c, coll, false, err) != 0 || (s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}

	if (ndocs <= LOCAL) {
		docs = local_docs;
		orig_index = local_orig;
		ie.index = local_index;
		ie.errs = local_errs;
		memset(local_errs, 0, sizeof(local_errs));
	} else {
		docs = tm_bson_array_new((size_t)ndocs);
		orig_index = bson_malloc0(sizeof(int) * (size_t)ndocs);
		ie.index = bson_malloc0(sizeof(int) * (size_t)ndocs);
		ie.errs = bson_malloc0(sizeof(terr_t) * (size_t)ndocs);
	}
	bson_iter_init(&it, &w.stmts);
	for (i = 0; bson_iter_next(&it); i++) {
		const uint8_t *data;
		uint32_t len;
		bson_t d;
		validation_result_t vr;

		uint64_t done_ts;

		/* a retried statement the session executed already: n: 1, as
		 * mongod answers it (not inserted again) */
		if ((rr = cmd_retry_stmt(c, s, i, &done_ts, err)) < 0) {
			ret = -1;
			goto err;
		}
		if (rr == 1) {
			n++;
			continue;
		}
		bson_iter_document(&it, &len, &data);
		bson_init_static(&d, data, len);
		bson_init(&docs[nprep]);
		if (write_prepare_doc_view(&d, &docs[nprep], &e) != 0 ||
		    validation_check_write(coll, &docs[nprep], NULL, bypass, &vr, &e) != 0) {
			bson_destroy(&docs[nprep]);
			insert_error_add(&ie, i, &e);
			if (ordered)
				break;
			continue;
		}
		orig_index[nprep++] = i;
	}

	memset(&b, 0, sizeof(b));
	b.coll = coll;
	b.docs = docs;
	if (c->txn_oplog_session && c->txn_stmt_ids != NULL && c->txn_nstmts == ndocs) {
		b.stmt_ids = c->txn_stmt_ids;
		b.orig_index = orig_index;
	}
	stop_at = nprep;
	for (i = 0; i < stop_at;) {
		int group = stop_at - i < 256 ? stop_at - i : 256;
		/* maxTimeMS / killOp between groups: what is inserted stays, the
		 * command fails as mongod's interrupted batch does */
		if (tm_interrupt_check_now(err) != 0) {
			ret = -1;
			goto err;
		}
		b.from = i;
		b.to = i + group;
		/* inside a multi-document transaction (or the storage transaction
		 * a retryable write runs in) a failed group could not be retried
		 * document by document (the storage transaction is only good for
		 * rollback after a failure): one document at a time */
		if (cmd_in_transaction(c) || storage_txn_active(s))
			b.to = i + 1;
		else if (storage_txn_run(s, insert_txn, &b, sync, &e) == 0) {
			n += group;
			i += group;
			continue;
		}
		terr_clear(&e);
		for (; i < b.to; i++) {
			b.from = i;
			b.to = i + 1;
			if (storage_txn_run(s, insert_txn, &b, sync, &e) == 0) {
				n++;
				continue;
			}
			if (write_error_is_interruption(&e)) {
				terr_move(err, &e);
				ret = -1;
				goto err;
			}
			if (ordered) {
				/* the batch stops here: a later preparation error is
				 * never reached */
				int k;
				for (k = 0; k < ie.n; k++)
					terr_clear(&ie.errs[k]);
				ie.n = 0;
				insert_error_add(&ie, orig_index[i], &e);
				stop_at = i;
				break;
			}
			insert_error_add(&ie, orig_index[i], &e);
		}
	}
	__atomic_fetch_add(&c->engine->counters.insert, n, __ATOMIC_RELAXED);

	/* errors sorted by index (insertion order of ie is almost sorted) */
	for (i = 1; i < ie.n; i++) {
		int j = i, idx = ie.index[i];
		terr_t t = ie.errs[i];
		while (j > 0 && ie.index[j - 1] > idx) {
			ie.index[j] = ie.index[j - 1];
			ie.errs[j] = ie.errs[j - 1];
			j--;
		}
		ie.index[j] = idx;
		ie.errs[j] = t;
	}
	for (i = 0; i < ie.n; i++)
		write_error_append(&write_errors, i, ie.index[i], &ie.errs[i]);
	/* mongod's insert has one CurOp: its last error is the one logged */
	if (ie.n > 0)
		write_log_assertion("insert", &ie.errs[ie.n - 1]);
	reply_n(c->reply, n);
	if (ie.n > 0)
		BSON_APPEND_ARRAY(c->reply, "writeErrors", &write_errors);
	ret = 0;
err:
	if (docs != NULL) {
		for (i = 0; i < nprep; i++)
			bson_destroy(&docs[i]);
	}
	for (i = 0; i < ie.n; i++)
		terr_clear(&ie.errs[i]);
	if (docs != local_docs) {
		bson_free(docs);
		bson_free(ie.index);
		bson_free(ie.errs);
		bson_free(orig_index);
	}
	bson_destroy(&write_errors);
	terr_clear(&e);
	if (coll != NULL)
		storage_coll_release(coll);
	return ret;
}

/* ---- find / getMore / killCursors --------------------------------------- */

/* A plan as a cursor source: the exec itself is the state. */
/*
 * A find's plan as a cursor source.  Errors the executor raises carry
 * mongod's context: "Executor error during find command: <ns>" in the
 * first batch, "Executor error during getMore" in later ones (restore marks the
 * change: every getMore restores the plan first).
 */
typedef struct plan_src {
	plan_exec_t *x;
	const char *context;
	char find_context[600];     /* "Executor error during find command: <ns>" */
	/* returnKey: {index name: key pattern} of the collection's indexes;
	 * each result becomes the keys of the index the plan scans ({} for a
	 * collection scan), built in key */
	bson_t *key_patterns;
	bson_t key;
	/* showRecordId: each result with $recordId appended, built in rid_doc */
	bool show_rid;
	bson_t *rid_doc;
	/* $_requestResumeToken: the RecordIds of the last two results (the
	 * last may be held back for the next batch) for postBatchResumeToken */
	bool resume_token;
	cmd_resume_tok_t tok;
} plan_src_t;

void
cmd_resume_tok_push(cmd_resume_tok_t *t, int64_t rid, const uint8_t *key, size_t key_len)
{
	bson_t *b = t->prev != NULL ? t->prev : bson_new();

	t->prev = t->last;
	t->last = b;
	bson_reinit(b);
	if (key != NULL)
		bson_append_binary(b, "$recordId", -1, BSON_SUBTYPE_BINARY, key, (uint32_t)key_len);
	else
		BSON_APPEND_INT64(b, "$recordId", rid);
}

void
cmd_resume_tok_append(const cmd_resume_tok_t *t, bool pending, bson_t *cursor)
{
	const bson_t *b = pending ? t->prev : t->last;
	bson_t tok;

	if (b != NULL) {
		BSON_APPEND_DOCUMENT(cursor, "postBatchResumeToken", b);
		return;
	}
	BSON_APPEND_DOCUMENT_BEGIN(cursor, "postBatchResumeToken", &tok);
	BSON_APPEND_NULL(&tok, "$recordId");
	bson_append_document_end(cursor, &tok);
}

void
cmd_resume_tok_free(cmd_resume_tok_t *t)
{
	if (t->last != NULL)
		bson_destroy(t->last);
	if (t->prev != NULL)
		bson_destroy(t->prev);
	t->last = t->prev = NULL;
}

static void
plan_src_batch_end(void *state, bool ended, bool pending, bson_t *cursor)
{
	plan_src_t *ps = state;

	(void)ended;
	cmd_resume_tok_append(&ps->tok, pending, cursor);
}

/* The index keys of the result for returnKey: the index entry the plan met
 * (plan_exec_last_key: for a multikey field the element the scan met, as
 * mongod's RETURN_KEY reads the member's keyData), {} for a result no index
 * entry gave (a collection scan).  Any index kind scanned by bounds gives
 * its stored key under the key pattern's names, as mongod: a hashed field's
 * NumberLong hash, a 2dsphere field's NumberLong cell, a 2d field's GeoHash
 * BinData, a text index's {_fts: term, _ftsx: weight}; a $text plan the
 * key its first term met (plan.c text_scan); a geo plan the document's
 * key when it has only one (several: 238, plan.c geo_key_capture); a geo
 * predicate Tamga answers by a collection scan where mongod scans a geo
 * index, 238. */
static int
return_key(plan_src_t *ps, bson_t *doc, terr_t *err)
{
	bson_t key;

	bson_reinit(&ps->key);
	if (!plan_exec_keys_known(ps->x))
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "returnKey with a geo query Tamga answers by a collection scan (mongod scans the geo index) is not supported by Tamga yet");
	if (plan_exec_last_key(ps->x, &key))
		bson_concat(&ps->key, &key);
	bson_init_static(doc, bson_get_data(&ps->key), ps->key.len);
	return 0;
}

static int
plan_src_next(void *state, storage_session_t *s, bson_t *doc, terr_t *err)
{
	plan_src_t *ps = state;
	int rc = plan_exec_next(ps->x, s, doc, err);

	if (rc == 1 && ps->key_patterns != NULL && return_key(ps, doc, err) != 0)
		return -1;
	if (rc == 1 && ps->resume_token) {
		recid_t r;
		const uint8_t *k = NULL;
		size_t kl = 0;

		if (!plan_exec_last_recid(ps->x, &r))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "$_requestResumeToken without a collection scan is not supported by Tamga yet");
		plan_exec_last_cluster_key(ps->x, &k, &kl);
		cmd_resume_tok_push(&ps->tok, r, k, kl);
	}
	if (rc == 1 && ps->show_rid) {
		recid_t rid;
		const uint8_t *k = NULL;
		size_t kl = 0;

		if (!plan_exec_last_recid(ps->x, &rid))
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "find with showRecordId: this plan does not keep RecordIds");
		bson_reinit(ps->rid_doc);
		bson_concat(ps->rid_doc, doc);
		/* a clustered collection's RecordId is its clustered key
		 * (BinData), as mongod shows it */
		if (plan_exec_last_cluster_key(ps->x, &k, &kl))
			bson_append_binary(ps->rid_doc, "$recordId", -1, BSON_SUBTYPE_BINARY, k, (uint32_t)kl);
		else
			BSON_APPEND_INT64(ps->rid_doc, "$recordId", rid);
		bson_init_static(doc, bson_get_data(ps->rid_doc), ps->rid_doc->len);
	}
	if (rc < 0 && terr_is_set(err) && ps->context != NULL)
		terr_wrap(err, ps->context);
	return rc;
}

/* cursor_source_t.next_batch: the plan hands its results to the batch in
 * one loop (plan_exec_next_batch).  returnKey, showRecordId and resume
 * tokens decorate each result in plan_src_next, so those go through it;
 * the sink's own failure passes unwrapped, as fill_batch's. */
static int
plan_src_next_batch(void *state, storage_session_t *s, doc_sink_t *sink, terr_t *err)
{
	plan_src_t *ps = state;
	bson_t doc;
	int rc;

	if (ps->key_patterns != NULL || ps->resume_token || ps->show_rid) {
		while ((rc = plan_src_next(ps, s, &doc, err)) == 1)
			if ((rc = sink->take(sink, bson_get_data(&doc), doc.len, err)) != DOC_SINK_MORE)
				return rc;
		return rc;
	}
	rc = plan_exec_next_batch(ps->x, s, sink, err);
	if (rc == -1 && terr_is_set(err) && ps->context != NULL)
		terr_wrap(err, ps->context);
	return rc;
}

static int
plan_src_save(void *state, terr_t *err)
{
	plan_src_t *ps = state;

	return plan_exec_save(ps->x, err);
}

static int
plan_src_restore(void *state, storage_session_t *s, terr_t *err)
{
	plan_src_t *ps = state;

	ps->context = "Executor error during getMore";
	return plan_exec_restore(ps->x, s, err);
}

/* One spare plan_src_t per thread: the struct holds a bson_t, so it needs
 * a 128-byte aligned block, and glibc's posix_memalign costs about 1 000
 * instructions (4 % of a find by _id).  A thread keeps the last one it
 * freed; the key's destructor frees it when the thread ends. */
static pthread_key_t ps_spare_key;
static pthread_once_t ps_spare_once = PTHREAD_ONCE_INIT;
static __thread plan_src_t *ps_spare;

static void
ps_spare_key_make(void)
{
	pthread_key_create(&ps_spare_key, bson_free);
}

static plan_src_t *
ps_take(void)
{
	plan_src_t *ps = ps_spare;

	if (ps == NULL)
		return tm_alloc0(sizeof *ps);
	ps_spare = NULL;
	pthread_setspecific(ps_spare_key, NULL);
	memset(ps, 0, sizeof *ps);
	return ps;
}

static void
ps_give(plan_src_t *ps)
{
	if (ps_spare != NULL) {
		bson_free(ps);
		return;
	}
	pthread_once(&ps_spare_once, ps_spare_key_make);
	ps_spare = ps;
	pthread_setspecific(ps_spare_key, ps);
}

static void
plan_src_free(void *state)
{
	plan_src_t *ps = state;

	plan_exec_free(ps->x);
	if (ps->key_patterns != NULL) {
		bson_destroy(ps->key_patterns);
		bson_destroy(&ps->key);
	}
	if (ps->rid_doc != NULL)
		bson_destroy(ps->rid_doc);
	cmd_resume_tok_free(&ps->tok);
	ps_give(ps);
}

static void
plan_source(plan_exec_t *x, const char *ns, cursor_source_t *src)
{
	plan_src_t *ps = ps_take();

	ps->x = x;
	snprintf(ps->find_context, sizeof ps->find_context, "Executor error during find command: %s", ns);
	ps->context = ps->find_context;
	src->state = ps;
	src->next = plan_src_next;
	src->next_batch = plan_src_next_batch;
	src->save = plan_src_save;
	src->restore = plan_src_restore;
	src->free = plan_src_free;
}

int
cmd_collation_type_check(cmd_t *c, const bson_t *holder, terr_t *err)
{
	bson_iter_t it;

	if ((holder == c->body ? cmd_find_field(c, "collation", &it) : bson_iter_init_find(&it, holder, "collation")) &&
	    !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s.collation' is the wrong type '%s', expected type 'object'", c->name,
		    bv_type_name(bson_iter_type(&it)));
	return 0;
}

int
cmd_collation(cmd_t *c, const bson_t *holder, const storage_coll_t *coll, const coll_t **out,
              terr_t *err)
{
	bson_iter_t it;

	*out = coll != NULL ? coll->collation : NULL;
	if (!(holder == c->body ? cmd_find_field(c, "collation", &it) : bson_iter_init_find(&it, holder, "collation")))
		return 0;
	RET(cmd_collation_type_check(c, holder, err));
	return coll_parse_value(bson_iter_value(&it), "collation", out, err);
}

/* The hint to hand to the executor (borrowed from it, valid while it lives):
 * NULL when absent or {}. */
static const bson_value_t *
hint_for_plan(cmd_t *c, const bson_t *holder, bson_iter_t *it)
{
	if (!(holder == c->body ? cmd_find_field(c, "hint", it) : bson_iter_init_find(it, holder, "hint")))
		return NULL;
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_iter_t sub;
		if (!bson_iter_recurse(it, &sub) || !bson_iter_next(&sub))
			return NULL;
	}
	return bson_iter_value(it);
}

/* hint: only what can be honoured today: an existing index or $natural. */
int
cmd_check_hint(cmd_t *c, const bson_t *holder, storage_coll_t *coll, terr_t *err)
{
	bson_iter_t it;
	int i;

	if (!(holder == c->body ? cmd_find_field(c, "hint", &it) : bson_iter_init_find(&it, holder, "hint")))
		return 0;
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		const char *name = bson_iter_utf8(&it, NULL);
		if (coll == NULL)
			return 0;
		for (i = 0; i < coll->nindexes; i++)
			if (strcmp(coll->indexes[i].name, name) == 0)
				return 0;
	} else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *data;
		uint32_t len;
		bson_t h;
		bson_iter_document(&it, &len, &data);
		bson_init_static(&h, data, len);
		if (bson_empty(&h))
			return 0;
		if (bson_has_field(&h, "$natural") || coll == NULL)
			return 0;
		for (i = 0; i < coll->nindexes; i++)
			if (bson_equal(coll->indexes[i].key, &h))
				return 0;
	} else {
		return terr_set(err, TERR_FAILED_TO_PARSE, "hint must be a string or an object");
	}
	return terr_set(err, TERR_BAD_VALUE,
	    "error processing query: ns=%s planner returned error :: caused by :: hint provided does not correspond to an existing index",
	    coll->ns);
}

static const char *const find_fields[] = {
	"filter", "projection", "sort", "skip", "limit", "batchSize", "singleBatch", "hint",
	"min", "max", "let", "allowDiskUse", "collation", "noCursorTimeout", "tailable",
	"awaitData", "returnKey", "showRecordId", "allowPartialResults", "oplogReplay",
	"readOnce", "term", "collectionUUID", "requestResumeToken", "resumeAfter", "maxScan",
	"snapshot", "includeQueryStatsMetrics", "rawData", "$_requestResumeToken", "$_resumeAfter", "$_startAt",
	NULL,
};

/* Is sort exactly {$natural: 1} (any numeric type, compared by value)? */
static bool
sort_is_natural_forward(const bson_t *sort)
{
	bson_iter_t it;

	return bson_count_keys(sort) == 1 && bson_iter_init_find(&it, sort, "$natural") &&
	    BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) == 1.0;
}

static int
nonneg(cmd_t *c, const char *field, int64_t *out, terr_t *err)
{
	bool found;

	*out = 0;
	RET(cmd_get_int64(c, field, out, &found, err));
	if (found && *out < 0)
		return terr_set(err, 51024, "BSON field '%s' value must be >= 0, actual value '%lld'",
		    field, (long long)*out);
	return 0;
}

/*
 * notablescan (setParameter): a query only a collection scan answers is
 * refused with 291, as mongod's planner does; the internal databases are
 * exempt, and so is a collection that does not exist.  0 when the plan may
 * run.
 */
static int
notablescan_check(cmd_t *c, plan_exec_t *x, storage_session_t *s, const char *ns, terr_t *err)
{
	if (atomic_load(&c->engine->notablescan) == 0 || strcmp(c->db, "admin") == 0 ||
	    strcmp(c->db, "local") == 0 || strcmp(c->db, "config") == 0)
		return 0;
	RET(plan_exec_choose(x, s, err));
	if (plan_exec_index_name(x) != NULL)
		return 0;
	{
		const plan_stats_t *st = plan_exec_stats(x);

		if (st == NULL || st->stage == NULL || strcmp(st->stage, "COLLSCAN") != 0)
			return 0;
	}
	return terr_set(err, 291, "error processing query: ns=%s planner returned error :: caused by :: "
	    "No indexed plans available, and running with 'notablescan'", ns);
}

/*
 * find's resumable collection scans, as mongod's validateFindCommandRequest
 * checks them when parsing (2 BadValue, its messages): $_requestResumeToken
 * needs the hint {$natural: 1} and no sort but {$natural: 1};
 * $_resumeAfter / $_startAt need $_requestResumeToken.
 */
static int
resume_request_check(cmd_t *c, bool want_token, const bson_t *sort, bool has_resume_after, bool has_start_at,
                     terr_t *err)
{
	bson_iter_t h;

	if (!want_token) {
		if (has_resume_after)
			return terr_set(err, TERR_BAD_VALUE, "'requestResumeToken' must be true if 'resumeAfter' is specified");
		if (has_start_at)
			return terr_set(err, TERR_BAD_VALUE, "'requestResumeToken' must be true if 'startAt' is specified");
		return 0;
	}
	if (!cmd_find_field(c, "hint", &h) || !BSON_ITER_HOLDS_DOCUMENT(&h)) {
		return terr_set(err, TERR_BAD_VALUE, "hint must be {$natural:1} if 'requestResumeToken' is enabled");
	} else {
		const uint8_t *data;
		uint32_t len;
		bson_t hint;

		bson_iter_document(&h, &len, &data);
		bson_init_static(&hint, data, len);
		if (!sort_is_natural_forward(&hint))
			return terr_set(err, TERR_BAD_VALUE, "hint must be {$natural:1} if 'requestResumeToken' is enabled");
	}
	if (sort != NULL && !bson_empty(sort) && !sort_is_natural_forward(sort))
		return terr_set(err, TERR_BAD_VALUE, "sort must be unset or {$natural:1} if 'requestResumeToken' is enabled");
	return 0;
}

/* err with the command's executor context ("<context><ns> :: caused by ::
 * ..."); returns -1. */
static int
context_wrap(const char *context, const char *ns, terr_t *err)
{
	char ctx[600];

	snprintf(ctx, sizeof ctx, "%s%s", context, ns);
	terr_wrap(err, ctx);
	return -1;
}

/*
 * Where a resumable scan starts, as mongod's validateResumeInput and its
 * CollectionScan decide: one of $_resumeAfter (past the RecordId, which
 * must still exist: 211 KeyNotFound otherwise) and $_startAt (past it too
 * when it exists -- CollectionScan seeks it exactly and then advances, as
 * the token names the last document returned -- else at the next one: so
 * past it either way, with no KeyNotFound); {$recordId: NumberLong |
 * BinData | null[, $initialSyncId:
 * UUID]}; an $initialSyncId never matches (no initial sync made this
 * node: 8132701); the RecordId's type must match the collection's (int64,
 * BinData for a clustered one: 7738600); a null RecordId cannot be resumed
 * from (211).  Errors the scan raises carry find's executor context, as
 * mongod's do.  Sets *has_after / *after (a position to scan past), or on
 * a clustered collection *after_key (its clustered key).
 */
int
cmd_resume_input_check(cmd_t *c, const storage_coll_t *coll, const char *ns, const char *context,
                       const bson_t *resume_after, const bson_t *start_at, bool *has_after, recid_t *after,
                       const uint8_t **after_key, size_t *after_key_len, terr_t *err)
{
	const char *name = resume_after != NULL ? "$_resumeAfter" : "$_startAt";
	const bson_t *in = resume_after != NULL ? resume_after : start_at;
	bool clustered = coll != NULL && coll->clustered_ix != NULL;
	bson_iter_t rid, sid;
	bool has_rid = bson_iter_init_find(&rid, in, "$recordId");
	bool has_sid = bson_iter_init_find(&sid, in, "$initialSyncId");
	uint32_t n = bson_count_keys(in);
	bson_subtype_t sub = BSON_SUBTYPE_BINARY;
	bson_t d;
	int g;

	if (resume_after != NULL && start_at != NULL)
		return terr_set(err, TERR_BAD_VALUE, "Cannot set both '$_resumeAfter' and '$_startAt'");
	if (has_sid && BSON_ITER_HOLDS_BINARY(&sid))
		bson_iter_binary(&sid, &sub, NULL, NULL);
	if (n > 2 || !has_rid ||
	    !(BSON_ITER_HOLDS_INT64(&rid) || BSON_ITER_HOLDS_BINARY(&rid) || BSON_ITER_HOLDS_NULL(&rid)) ||
	    (n == 2 && !(has_sid && BSON_ITER_HOLDS_BINARY(&sid) && sub == BSON_SUBTYPE_UUID)))
		return terr_set(err, TERR_BAD_VALUE,
		    "Malformed resume token: the '%s' object must contain '$recordId', of type NumberLong, BinData "
		    "or jstNULL and optional '$initialSyncId of type BinData.", name);
	if (has_sid)
		return terr_set(err, 8132701, "$initialSyncId mismatch, the query is no longer resumable.");
	if ((clustered && BSON_ITER_HOLDS_INT64(&rid)) || (!clustered && BSON_ITER_HOLDS_BINARY(&rid)))
		return terr_set(err, 7738600,
		    "The '%s' parameter must match collection type. Clustered collections only have BinData "
		    "recordIds, and all other collectionshave Long recordId.", name);
	if (clustered && BSON_ITER_HOLDS_BINARY(&rid)) {
		/* mongod's RecordId of a clustered collection: the _id's
		 * KeyString, which is Tamga's clustered key */
		const uint8_t *kb;
		uint32_t kl;
		bson_subtype_t ksub;
		storage_session_t *s;

		bson_iter_binary(&rid, &ksub, &kl, &kb);
		if (start_at != NULL)
			goto past_key;   /* present or not: the scan goes on past it */
		if ((s = client_session(c->client, err)) == NULL)
			return -1;
		if ((g = storage_doc_find_key(s, (storage_coll_t *)coll, kb, kl, NULL, &d, err)) < 0)
			return -1;
		if (g == 1) {
			char hex[2 * 64 + 4];
			size_t i, n = kl < 64 ? kl : 64;

			for (i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02X", kb[i]);
			hex[2 * n] = '\0';
			terr_set(err, TERR_KEY_NOT_FOUND, "Failed to resume collection scan: the recordId from which we are "
			    "attempting to resume no longer exists in the collection: RecordId(%s%s)", hex, kl > 64 ? "..." : "");
			return context_wrap(context, ns, err);
		}
past_key:
		*has_after = true;
		*after_key = kb;
		*after_key_len = kl;
		return 0;
	}
	if (BSON_ITER_HOLDS_NULL(&rid)) {
		terr_set(err, TERR_KEY_NOT_FOUND, "Failed to resume collection scan: cannot resume from null recordId");
		return context_wrap(context, ns, err);
	}
	if (coll == NULL)
		return 0;      /* no collection: no documents, as mongod's EOF plan */
	*has_after = true;
	*after = bson_iter_int64(&rid);
	if (start_at != NULL)
		return 0;   /* past it, whether it is still there or not */
	{
		storage_session_t *s = client_session(c->client, err);

		if (s == NULL)
			return -1;
		if ((g = storage_doc_get(s, (storage_coll_t *)coll, *after, &d, err)) < 0)
			return -1;
	}
	if (g == 1) {
		terr_set(err, TERR_KEY_NOT_FOUND, "Failed to resume collection scan: the recordId from which we are "
		    "attempting to resume no longer exists in the collection: RecordId(%lld)",
		    (long long)*after);
		return context_wrap(context, ns, err);
	}
	return 0;
}

/*
 * mongod's express path (EXPRESS_IXSCAN, 8.0+) for the commonest read:
 * find {filter: {_id: v}} with nothing else but the dispatcher's generic
 * fields and what drivers' findOne adds (limit, singleBatch, batchSize,
 * when they change nothing in the answer), v a value whose _id key needs no
 * collation (plan_filter_id_point).
 * The general path would read ~30 absent arguments, build and free a plan
 * and a plan source; this one looks the document up (plan_express_id: the
 * same index usage count, examined counts and plan summary) and answers the
 * same single batch with cursor id 0.  Anything it does not cover -- a
 * view, a time-series or missing collection, an index filter set for the
 * shape, a collection without an _id index -- returns 1 before any effect,
 * and the general path answers.
 */
enum { EX_FILTER, EX_LIMIT, EX_SINGLE, EX_BATCH, EX_N };
static const char *const express_fields[EX_N + 1] = {"filter", "limit", "singleBatch", "batchSize", NULL};

static bool
express_int(const bson_value_t *v, int64_t *out)
{
	if (v->value_type == BSON_TYPE_INT32)
		*out = v->value.v_int32;
	else if (v->value_type == BSON_TYPE_INT64)
		*out = v->value.v_int64;
	else
		return false;
	return true;
}

static int
find_express(cmd_t *c, terr_t *err)
{
	bson_value_t f[EX_N];
	bool has[EX_N], single = false;
	int64_t limit = 0;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	bson_value_t id;
	bson_t filter, doc;
	uint64_t fmask;
	const char *name;
	char ns[512];
	uint32_t name_len;
	size_t db_len;
	int ret, rc;

	if (!BSON_ITER_HOLDS_UTF8(&c->first) || !cmd_args_only(c, express_fields, f, has) ||
	    !has[EX_FILTER] || f[EX_FILTER].value_type != BSON_TYPE_DOCUMENT)
		return 1;
	/* what a driver's findOne adds (limit: 1, singleBatch: true, batchSize:
	 * 1): taken when the answer is the same, at most one document and the
	 * cursor closed with that batch */
	if (has[EX_LIMIT]) {
		if (!express_int(&f[EX_LIMIT], &limit) || limit < 0)
			return 1;
	}
	if (has[EX_SINGLE]) {
		if (f[EX_SINGLE].value_type != BSON_TYPE_BOOL)
			return 1;
		single = f[EX_SINGLE].value.v_bool;
	}
	if (has[EX_BATCH]) {
		int64_t bs;
		/* batchSize 1 leaves the general path's cursor open after its one
		 * document unless the limit or singleBatch ends it */
		if (!express_int(&f[EX_BATCH], &bs) || bs < 1 || (bs == 1 && !single && limit != 1))
			return 1;
	}
	if (!bson_init_static(&filter, f[EX_FILTER].value.v_doc.data, f[EX_FILTER].value.v_doc.data_len) ||
	    !plan_filter_id_point(&filter, &id))
		return 1;
	name = bson_iter_utf8(&c->first, &name_len);
	db_len = strlen(c->db);
	/* the namespace built once, for the lookup and the reply; a longer one
	 * than the buffer takes the general path */
	if (name[0] == '\0' || db_len + 1 + (size_t)name_len >= sizeof(ns))
		return 1;
	memcpy(ns, c->db, db_len);
	ns[db_len] = '.';
	memcpy(ns + db_len + 1, name, (size_t)name_len + 1);
	if (storage_coll_get_ns(c->engine->st, ns, &coll) != 0 || coll == NULL)
		return 1;
	ret = 1;
	/* an index filter on this shape: the general path applies it */
	if (cmd_ts_is(coll) || cmd_plan_filter_mask(c, coll, &filter, NULL, NULL, &fmask))
		goto done;
	for (int i = 0; i < coll->nindexes && ret == 1; i++)
		if (coll->indexes[i].is_id)
			ret = 0;
	if (ret == 1)
		goto done;
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto done;
	}
	__atomic_fetch_add(&c->engine->counters.query, 1, __ATOMIC_RELAXED);
	rc = plan_express_id(s, coll, &id, &doc, err);
	if (rc < 0 || rc > 1) {
		if (rc > 1)   /* the _id index went away: not this path's case */
			terr_set(err, TERR_INTERNAL_ERROR, "collection %s has no _id index", coll->ns);
		terr_wrap(err, "Executor error during find command");
		ret = -1;
		goto done;
	}
	/* the interrupt check the general path makes after each document */
	if (rc == 1 && tm_interrupt_check(err) != 0) {
		ret = -1;
		goto done;
	}
	cursor_reply_one(c->reply, ns, rc == 1 ? &doc : NULL);
done:
	storage_coll_release(coll);
	return ret;
}

/* find's general path (everything find_express does not answer), out of
 * line: its locals (a plan request, several bson_t) are set up only when
 * it runs */
static __attribute__((noinline)) int find_general(cmd_t *c, terr_t *err);

CMD_HANDLER(cmd_find)
{
	int ret = find_express(c, err);

	return ret != 1 ? ret : find_general(c, err);
}

static __attribute__((noinline)) int
find_general(cmd_t *c, terr_t *err)
{
	const char *name;
	bson_t min_doc, max_doc;
	bool has_min = false, has_max = false;
	bson_t filter, sort, proj, let = BSON_INITIALIZER;
	bool has_filter, has_sort, has_proj, has_let, found, single_batch = false, no_timeout = false;
	bool allow_disk = false, tailable = false, await_data = false, return_key_on = false, has_coll;
	bool show_rid = false, want_token = false;
	bson_t resume_after, start_at;
	bool has_resume_after = false, has_start_at = false;
	plan_request_t req;
	plan_exec_t *x = NULL;
	match_options_t mo = {0};
	cursor_opts_t copts;
	cursor_source_t src = {0};
	storage_session_t *s;
	bson_iter_t hint_it;
	bson_value_t id_point;
	char ns[512];
	int ret = -1;

	memset(&req, 0, sizeof(req));
	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, find_fields, err));
	ERR(cmd_get_doc(c, "filter", &filter, &has_filter, err));
	ERR(cmd_get_doc(c, "sort", &sort, &has_sort, err));
	ERR(cmd_get_doc(c, "projection", &proj, &has_proj, err));
	ERR(cmd_get_let(c, &let, &has_let, err));
	ERR(nonneg(c, "skip", &req.skip, err));
	ERR(nonneg(c, "limit", &req.limit, err));
	ERR(cmd_get_bool(c, "singleBatch", &single_batch, &found, err));
	ERR(cmd_get_bool(c, "noCursorTimeout", &no_timeout, &found, err));
	ERR(cmd_get_allow_disk_use(c, &allow_disk, err));
	ERR(cmd_get_bool(c, "tailable", &tailable, &found, err));
	ERR(cmd_get_bool(c, "awaitData", &await_data, &found, err));
	ERR(cmd_get_bool(c, "returnKey", &return_key_on, &found, err));
	ERR(cmd_get_bool(c, "showRecordId", &show_rid, &found, err));
	ERR(cmd_get_bool(c, "$_requestResumeToken", &want_token, &found, err));
	ERR(cmd_get_doc(c, "$_resumeAfter", &resume_after, &has_resume_after, err));
	ERR(cmd_get_doc(c, "$_startAt", &start_at, &has_start_at, err));
	has_resume_after = has_resume_after && !bson_empty(&resume_after);
	has_start_at = has_start_at && !bson_empty(&start_at);
	ERR(resume_request_check(c, want_token, has_sort ? &sort : NULL, has_resume_after, has_start_at, err));
	if (await_data && !tailable) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Cannot set 'awaitData' without also setting 'tailable'");
		goto err;
	}
	ERR(cmd_collation_type_check(c, c->body, err));
	memset(&copts, 0, sizeof(copts));
	copts.batch_size = -1;
	{
		int64_t bs;
		ERR(cmd_get_int64(c, "batchSize", &bs, &found, err));
		if (found) {
			if (bs < 0) {
				ret = terr_set(err, 51024, "BSON field 'batchSize' value must be >= 0, actual value '%lld'",
				    (long long)bs);
				goto err;
			}
			copts.batch_size = bs;
		}
	}
	ERR(cmd_get_doc(c, "min", &min_doc, &has_min, err));
	ERR(cmd_get_doc(c, "max", &max_doc, &has_max, err));
	cmd_ns(ns, sizeof(ns), c->db, name);
	storage_coll_get(c->engine->st, c->db, name, &req.coll, NULL);
	if ((req.coll == NULL && view_exists(c, c->db, name)) || (cmd_ts_is(req.coll) && !cmd_ts_raw(c))) {
		/* a view, or a time-series collection's measurements: an aggregation */
		ret = view_read(c, "find", name, err);
		goto err;
	}
	has_coll = req.coll != NULL;
	ERR(cmd_collation(c, c->body, req.coll, &req.collation, err));
	mo.coll = req.collation;
	if (tailable) {
		/* mongod's checks of the request first, then of the collection (a
		 * missing one answers no documents, as mongod's EOF plan) */
		if (has_sort && !bson_empty(&sort) && !sort_is_natural_forward(&sort)) {
			ret = terr_set(err, TERR_BAD_VALUE, "cannot use tailable option with a sort other than {$natural: 1}");
			goto err;
		}
		if (single_batch) {
			ret = terr_set(err, TERR_BAD_VALUE, "cannot use tailable option with the 'singleBatch' option");
			goto err;
		}
		if (req.coll != NULL && !req.coll->capped) {
			ret = terr_set(err, TERR_BAD_VALUE,
			    "error processing query: ns=%s planner returned error :: caused by :: tailable cursor requested on non capped collection",
			    ns);
			goto err;
		}
		req.tailable = req.coll != NULL;
	}
	ERR(cmd_check_hint(c, c->body, req.coll, err));
	if (has_resume_after || has_start_at)
		ERR(cmd_resume_input_check(c, req.coll, ns, "Executor error during find command: ",
		    has_resume_after ? &resume_after : NULL,
		    has_start_at ? &start_at : NULL, &req.has_resume_after, &req.resume_after, &req.resume_key,
		    &req.resume_key_len, err));
	if (has_let)
		mo.let = &let;
	req.hint = hint_for_plan(c, c->body, &hint_it);
	/* an index filter for the query's shape (cmd_plancache.c): its
	 * indexes compete, an index hint is ignored (min/max keep theirs) */
	if (!has_min && !has_max &&
	    cmd_plan_filter_mask(c, req.coll, has_filter ? &filter : NULL, has_sort ? &sort : NULL,
	        has_proj ? &proj : NULL, &req.index_filter)) {
		req.has_index_filter = true;
		req.hint = cmd_plan_filter_keep_hint(req.hint);
	}
	/* {_id: <number, ObjectId, ...>} alone: the _id point lookup needs no
	 * compiled filter (mongod's express path) */
	if (has_filter && !has_let && !has_sort && !has_proj && !has_min && !has_max && req.hint == NULL &&
	    !req.tailable && !return_key_on && !show_rid && !want_token && plan_filter_id_point(&filter, &id_point))
		req.id_point = &id_point;
	else if (has_filter)
		ERR(match_compile(&filter, &mo, &req.match, err));
	req.filter = has_filter ? &filter : NULL;
	req.sort = has_sort ? &sort : NULL;
	req.projection = has_proj ? &proj : NULL;
	/* returnKey: the keys replace the documents, a projection has nothing
	 * left to shape (mongod ignores it but for $meta) */
	if (return_key_on)
		req.projection = NULL;
	req.allow_disk_use = allow_disk;
	req.min = has_min ? &min_doc : NULL;
	req.max = has_max ? &max_doc : NULL;
	req.spill_dir = c->engine->tmp_dir;
	req.sort_memory_limit = cmd_sort_memory_limit(c);
	req.let = has_let ? &let : NULL;
	ret = plan_exec_new(&req, &x, err);
	req.coll = NULL;
	req.match = NULL;
	if (ret != 0)
		goto err;
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	/* notablescan: a query only a collection scan answers is refused, as
	 * mongod's planner does (the internal databases are exempt) */
	if (has_coll && req.id_point == NULL && !req.tailable && notablescan_check(c, x, s, ns, err) != 0) {
		ret = -1;
		goto err;
	}
	if (want_token) {
		/* a resumable collection scan: forward, hinted {$natural: 1}
		 * (resume_request_check); where it starts was checked by
		 * cmd_resume_input_check before the plan was built */
		plan_exec_want_recid(x);
	}
	if (show_rid)
		plan_exec_want_recid(x);
	plan_source(x, ns, &src);
	x = NULL;
	if (show_rid) {
		plan_src_t *ps = src.state;

		ps->show_rid = true;
		ps->rid_doc = bson_new();
	}
	if (want_token) {
		plan_src_t *ps = src.state;

		ps->resume_token = true;
		/* a batch before any document says {$recordId: null}, even
		 * when resumed (mongod's CollectionScan sets its token from the
		 * documents it returns; find_with_resume_after_param.js) */
		src.batch_end = plan_src_batch_end;
	}
	if (return_key_on) {
		plan_src_t *ps = src.state;
		storage_coll_t *kc = NULL;

		ps->key_patterns = bson_new();
		bson_init(&ps->key);
		plan_exec_want_key(ps->x);
		if (storage_coll_get(c->engine->st, c->db, name, &kc, NULL) == 0) {
			for (int i = 0; i < kc->nindexes; i++)
				BSON_APPEND_DOCUMENT(ps->key_patterns, kc->indexes[i].name, kc->indexes[i].key);
			storage_coll_release(kc);
		}
	}
	copts.single_batch = single_batch;
	copts.no_timeout = no_timeout;
	copts.connection_id = c->client->connection_id;
	/* a snapshot read: its getMores read there too; a majority read's at
	 * their own commit point */
	copts.read_ts = c->rc_majority_read ? CMD_READ_TS_MAJORITY : c->txn_snapshot_ts;
	__atomic_fetch_add(&c->engine->counters.query, 1, __ATOMIC_RELAXED);
	/* the registry counts the limit too: a batch that reaches it ends the
	 * cursor (id 0), as mongod's executor is EOF once its LIMIT is met */
	copts.limit = req.limit;
	{
		char owner_buf[256];
		storage_coll_t *tail_coll = NULL;
		copts.owner = cmd_cursor_owner(c, owner_buf);
		if (req.tailable && storage_coll_get(c->engine->st, c->db, name, &tail_coll, NULL) == 0) {
			int64_t count = 0;
			copts.tailable = true;
			copts.await_data = await_data;
			copts.coll = tail_coll;
			/* the plan's end is "nothing new yet": the registry counts
			 * the limit, which ends a tailable cursor */
			copts.limit = req.limit;
			/* mongod keeps no tailable cursor on an empty collection
			 * (shouldSaveCursor, SERVER-13955) */
			if (storage_coll_stats(c->engine->st, s, tail_coll, &count, NULL, NULL, NULL) == 0 && count == 0)
				copts.single_batch = true;
		}
		ret = cursor_first_batch(c->engine->cursors, s, ns, &src, &copts, c->reply, err);
		storage_coll_release(tail_coll);
	}
err:
	if (req.coll != NULL)
		storage_coll_release(req.coll);
	match_free(req.match);
	plan_exec_free(x);
	bson_destroy(&let);
	return ret;
}

CMD_HANDLER(cmd_get_more)
{
	static const char *const fields[] = {"collection", "batchSize", "term", "lastKnownCommittedOpTime",
		"includeQueryStatsMetrics", NULL};
	const char *coll;
	int64_t id, bs = 0;
	bool found;
	storage_session_t *s;
	char ns[512];

	if (!BSON_ITER_HOLDS_INT64(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'getMore.getMore' is the wrong type '%s', expected type 'long'",
		    bv_type_name(bson_iter_type(&c->first)));
	id = bson_iter_int64(&c->first);
	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_string(c, "collection", &coll, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field 'getMore.collection' is missing but a required field");
	RET(cmd_get_int64(c, "batchSize", &bs, &found, err));
	if (found && bs < 0)
		return terr_set(err, 51024, "BSON field 'batchSize' value must be >= 0, actual value '%lld'",
		    (long long)bs);
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	cmd_ns(ns, sizeof(ns), c->db, coll);
	__atomic_fetch_add(&c->engine->counters.getmore, 1, __ATOMIC_RELAXED);
	{
		char owner_buf[256];
		uint64_t at = cmd_in_transaction(c) ? 0 : cursor_read_ts(c->engine->cursors, id);
		storage_session_t *snap = NULL;
		int rc;
		if (at == CMD_READ_TS_MAJORITY)
			at = cmd_repl_reads_majority_now(c->engine);   /* readConcern majority (cmd_repl_reads.h) */
		else if (at != 0)
			repl_oplog_note_snapshot_read(c->engine->oplog);
		if (at != 0) {
			/* a snapshot read's cursor: this batch reads at the same
			 * timestamp as its first (mongod's atClusterTime) */
			if ((snap = storage_session_pool_get(c->engine->st, err)) == NULL)
				return -1;
			if (storage_txn_begin_at(snap, at, err) != 0) {
				storage_session_pool_put(c->engine->st, snap);
				if (err->code == TERR_INTERNAL_ERROR) {
					terr_clear(err);
					return terr_set(err, TERR_SNAPSHOT_TOO_OLD,
					    "Read timestamp Timestamp(%u, %u) is older than the oldest available timestamp.",
					    (uint32_t)(at >> 32), (uint32_t)at);
				}
				return -1;
			}
			s = snap;
		}
		rc = cursor_get_more(c->engine->cursors, s, id, ns, cmd_cursor_owner(c, owner_buf), bs,
		    c->deadline_us, c->max_time_given, c->reply, err);
		if (snap != NULL) {
			storage_txn_rollback(snap);
			storage_session_pool_put(c->engine->st, snap);
		}
		return rc;
	}
}

CMD_HANDLER(cmd_kill_cursors)
{
	static const char *const fields[] = {"cursors", NULL};
	const char *coll;
	bson_t arr;
	bson_iter_t it;
	bool found;
	int64_t *ids;
	int n = 0;
	char ns[512];

	RET(cmd_collection_arg(c, &coll, err));
	RET(cmd_check_fields(c, fields, err));
	RET(cmd_get_array(c, "cursors", &arr, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field 'killCursors.cursors' is missing but a required field");
	ids = bson_malloc0(sizeof(int64_t) * (bson_count_keys(&arr) + 1));
	bson_iter_init(&it, &arr);
	while (bson_iter_next(&it)) {
		if (!BSON_ITER_HOLDS_INT64(&it)) {
			bson_free(ids);
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'killCursors.cursors.%d' is the wrong type '%s', expected type 'long'",
			    n, bv_type_name(bson_iter_type(&it)));
		}
		ids[n++] = bson_iter_int64(&it);
	}
	cmd_ns(ns, sizeof(ns), c->db, coll);
	cursor_kill(c->engine->cursors, ns, ids, n, c->reply);
	bson_free(ids);
	return 0;
}

/* ---- delete ------------------------------------------------------------- */

typedef struct delete_op {
	storage_coll_t *coll;
	match_t *match;         /* borrowed */
	const coll_t *collation;
	bool just_one;
	int64_t n;
	int64_t deadline_us;
} delete_op_t;

static int
delete_txn(storage_session_t *s, void *arg, terr_t *err)
{
	delete_op_t *d = arg;
	plan_request_t req;
	plan_exec_t *x = NULL;
	recid_t recid;
	bson_t doc;
	int rc;

	d->n = 0;
	memset(&req, 0, sizeof(req));
	req.coll = d->coll;
	req.match = d->match;
	req.collation = d->collation;
	req.borrow = true;
	RET(plan_exec_new(&req, &x, err));
	while ((rc = plan_exec_next_record(x, s, &recid, &doc, err)) == 1) {
		if (storage_doc_delete(s, d->coll, recid, &doc, err) != 0) {
			rc = -1;
			break;
		}
		d->n++;
		if (d->just_one)
			break;
	}
	plan_exec_free(x);
	return rc < 0 ? -1 : 0;
}

int
write_delete_run(cmd_t *c, storage_session_t *s, storage_coll_t *coll, const bson_t *q, const bson_t *let,
    const coll_t *collation, bool just_one, bool sync, int64_t *n, terr_t *err)
{
	match_options_t mo = {0};
	delete_op_t d;
	match_t *m = NULL;
	int rc;

	*n = 0;
	mo.let = let;
	mo.coll = collation;
	RET(match_compile(q, &mo, &m, err));
	if (coll == NULL) {
		match_free(m);
		return 0;
	}
	if (write_capped_txn_check(c, coll, true, err) != 0) {
		match_free(m);
		return -1;
	}
	memset(&d, 0, sizeof(d));
	d.coll = coll;
	d.match = m;
	d.collation = collation;
	d.just_one = just_one;
	d.deadline_us = c->deadline_us;
	rc = storage_txn_run(s, delete_txn, &d, sync, err);
	match_free(m);
	if (rc != 0) {
		/* mongod's executor context (write_ops_exec's advanceExecutor) */
		if (terr_is_set(err))
			terr_wrap(err, "Plan executor error during delete");
		return -1;
	}
	*n = d.n;
	return 0;
}

/* bypassDocumentValidation: accepted as mongod's write commands all do */
static const char *const delete_fields[] = {"deletes", "ordered", "let", "collectionUUID", "rawData",
	"bypassDocumentValidation", "stmtId", "stmtIds", NULL};

CMD_HANDLER(cmd_delete)
{
	const char *name;
	write_batch_t w;
	bson_t write_errors = BSON_INITIALIZER, let = BSON_INITIALIZER;
	bson_iter_t it;
	bool ordered, sync, has_let;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	const coll_t *collation = NULL;
	int64_t n = 0;
	int i = 0, nerr = 0, ret = -1;
	terr_t e = TERR_INIT;

	ERR(write_batch_args(c, delete_fields, "deletes", &w, err));
	name = w.coll;
	ordered = w.ordered;
	sync = w.sync;
	ERR(cmd_get_let(c, &let, &has_let, err));
	storage_coll_get(c->engine->st, c->db, name, &coll, NULL);
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	/* a retryable one on measurements is kept whole (cmd_retry_keep_whole):
	 * its entries are the buckets' */
	if (c->txn_oplog_session && cmd_ts_is(coll) && !cmd_ts_raw(c))
		ERR(cmd_retry_keep_whole(c, s, "delete", err));
	bson_iter_init(&it, &w.stmts);
	for (i = 0; bson_iter_next(&it); i++) {
		bson_t op, q;
		bson_iter_t f;
		const uint8_t *data;
		uint32_t len;
		int64_t limit = 0, nd = 0;
		bool has_q = false;

		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'delete.deletes.%d' is the wrong type '%s', expected type 'object'", i,
			    bv_type_name(bson_iter_type(&it)));
			goto err;
		}
		bson_iter_document(&it, &len, &data);
		bson_init_static(&op, data, len);
		bson_iter_init(&f, &op);
		while (bson_iter_next(&f)) {
			const char *k = bson_iter_key(&f);
			if (strcmp(k, "q") == 0) {
				if (!BSON_ITER_HOLDS_DOCUMENT(&f)) {
					ret = terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'delete.deletes.q' is the wrong type '%s', expected type 'object'",
					    bv_type_name(bson_iter_type(&f)));
					goto err;
				}
				bson_iter_document(&f, &len, &data);
				bson_init_static(&q, data, len);
				has_q = true;
			} else if (strcmp(k, "limit") == 0) {
				bson_value_t v = *bson_iter_value(&f);
				if (!bv_is_number(&v)) {
					ret = terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'delete.deletes.limit' is the wrong type '%s', expected types '[long, int, decimal, double]'",
					    bv_type_name(v.value_type));
					goto err;
				}
				limit = tm_double_to_i64_sat(bv_as_double(&v));
				if (limit != 0 && limit != 1) {
					ret = terr_set(err, TERR_FAILED_TO_PARSE,
					    "The limit field in delete objects must be 0 or 1. Got %lld", (long long)limit);
					goto err;
				}
			} else if (strcmp(k, "collation") == 0) {
				ERR(cmd_collation_type_check(c, &op, err));
			} else if (strcmp(k, "hint") == 0) {
				ERR(cmd_check_hint(c, &op, coll, err));
			} else if (strcmp(k, "comment") != 0) {
				ret = terr_set(err, 40415, "BSON field 'delete.deletes.%s' is an unknown field.", k);
				goto err;
			}
		}
		if (!has_q) {
			ret = terr_set(err, 40414, "BSON field 'delete.deletes.q' is missing but a required field");
			goto err;
		}
		if (c->txn_oplog_session) {
			/* a retryable write: a statement the session executed answers
			 * n: 1 (mongod's makeWriteResultForInsertOrDeleteRetry) */
			uint64_t done_ts;
			int rr = cmd_retry_stmt(c, s, i, &done_ts, err);
			if (rr < 0) {
				ret = -1;
				goto err;
			}
			if (rr == 1) {
				n++;
				continue;
			}
			if (limit != 1) {
				terr_set(&e, TERR_INVALID_OPTIONS, "Cannot use (or request) retryable writes with limit=0");
				write_error_append(&write_errors, nerr++, i, &e);
				terr_clear(&e);
				if (ordered)
					break;
				continue;
			}
		}
		if ((coll == NULL && view_refuse(c, c->db, name, &e) != 0) ||
		    cmd_collation(c, &op, coll, &collation, &e) != 0 ||
		    (cmd_ts_is(coll) && !cmd_ts_raw(c) ?
		     cmd_ts_delete(c, coll, &q, collation, limit != 1, &nd, &e) :
		     write_delete_run(c, s, coll, &q, has_let ? &let : NULL, collation, limit == 1, sync, &nd,
		                      &e)) != 0) {
			if (write_error_is_interruption(&e)) {
				terr_move(err, &e);
				ret = -1;
				goto err;
			}
			write_error_append(&write_errors, nerr++, i, &e);
			write_log_assertion("remove", &e);
			terr_clear(&e);
			if (ordered)
				break;
			continue;
		}
		n += nd;
	}
	__atomic_fetch_add(&c->engine->counters.delete_, n, __ATOMIC_RELAXED);
	reply_n(c->reply, (int32_t)n);
	if (nerr > 0)
		BSON_APPEND_ARRAY(c->reply, "writeErrors", &write_errors);
	ret = 0;
err:
	bson_destroy(&let);
	bson_destroy(&write_errors);
	terr_clear(&e);
	if (coll != NULL)
		storage_coll_release(coll);
	return ret;
}

/* ---- count / distinct --------------------------------------------------- */

/* Whether a count names a hint (a non-empty document or a string): mongod
 * then plans it instead of reading the record count. */
static bool
count_hinted(const bson_t *body)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, body, "hint"))
		return false;
	if (BSON_ITER_HOLDS_UTF8(&it))
		return true;
	if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
		uint32_t len;
		const uint8_t *d;
		bson_iter_document(&it, &len, &d);
		return len > 5;
	}
	return false;
}

CMD_HANDLER(cmd_count)
{
	static const char *const fields[] = {"query", "limit", "skip", "hint", "collation", "fields",
		"let", "collectionUUID", "rawData", NULL};
	const char *name;
	bson_t query;
	bool has_query;
	plan_request_t req;
	plan_exec_t *x = NULL;
	storage_session_t *s;
	int64_t n = 0, skip = 0, limit = 0;
	bson_t doc;
	int rc, ret = -1;
	bool found;

	memset(&req, 0, sizeof(req));
	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_get_doc(c, "query", &query, &has_query, err));
	ERR(cmd_get_int64(c, "skip", &skip, &found, err));
	if (skip < 0) {
		ret = terr_set(err, TERR_BAD_VALUE, "skip value is negative in count query");
		goto err;
	}
	ERR(cmd_get_int64(c, "limit", &limit, &found, err));
	/* a negative limit counts like a positive one, but -2^63 has no
	 * positive counterpart (mongod's countParseLimit) */
	if (limit < 0 && tm_i64_neg(limit, &limit)) {
		ret = terr_set(err, TERR_BAD_VALUE, "limit value for count cannot be min long");
		goto err;
	}
	ERR(cmd_collation_type_check(c, c->body, err));
	storage_coll_get(c->engine->st, c->db, name, &req.coll, NULL);
	if ((req.coll == NULL && view_exists(c, c->db, name)) || (cmd_ts_is(req.coll) && !cmd_ts_raw(c))) {
		/* a view, or a time-series collection's measurements: an aggregation */
		ret = view_read(c, "count", name, err);
		goto err;
	}
	ERR(cmd_collation(c, c->body, req.coll, &req.collation, err));
	ERR(cmd_check_hint(c, c->body, req.coll, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	if (has_query && !bson_empty(&query)) {
		match_options_t mo = {0};
		mo.coll = req.collation;
		ERR(match_compile(&query, &mo, &req.match, err));
	}
	if (req.coll != NULL && req.match == NULL && !count_hinted(c->body)) {
		/* the fast path: the maintained record count (not under a hint,
		 * as mongod's useRecordStoreCount: a hinted sparse, partial, geo
		 * or text index counts the documents it holds) */
		int64_t count = 0, ds, ss;
		ERR(storage_coll_stats(c->engine->st, s, req.coll, &count, &ds, &ss, err));
		n = count - skip;
		if (n < 0)
			n = 0;
		if (limit > 0 && n > limit)
			n = limit;
	} else {
		req.skip = skip;
		req.limit = limit;
		req.count = true;
		{
		bson_iter_t hint_it;
		req.hint = hint_for_plan(c, c->body, &hint_it);
		/* an index filter for the query's shape (cmd_plancache.c) */
		if (cmd_plan_filter_mask(c, req.coll, has_query ? &query : NULL, NULL, NULL, &req.index_filter)) {
			req.has_index_filter = true;
			req.hint = cmd_plan_filter_keep_hint(req.hint);
		}
		ret = plan_exec_new(&req, &x, err);
	}
		req.coll = NULL;
		req.match = NULL;
		if (ret != 0)
			goto err;
		ret = -1;
		{
			char cns[512];

			cmd_ns(cns, sizeof cns, c->db, name);
			if (notablescan_check(c, x, s, cns, err) != 0)
				goto err;
		}
		while ((rc = plan_exec_next(x, s, &doc, err)) == 1)
			n++;
		if (rc < 0)
			goto err;
	}
	BSON_APPEND_INT32(c->reply, "n", (int32_t)n);
	ret = 0;
err:
	if (req.coll != NULL)
		storage_coll_release(req.coll);
	match_free(req.match);
	plan_exec_free(x);
	return ret;
}

/*
 * distinct collects values for dedup by MongoDB equality (under the
 * collation) in sorted runs: vals holds runs one after the other, each
 * sorted, their sizes decreasing (a binary counter: a new value is a run of
 * one, and the last two runs merge while the earlier is no longer than the
 * later).  A membership test is a binary search per run, so n distinct
 * values cost O(n log^2 n) where sorted insertion cost O(n^2) moves.  The
 * runs are merged into one sorted array at the end (distinct_finish).
 */
#define DISTINCT_MAX_RUNS 64

typedef struct distinct_set {
	bson_value_t *vals, *tmp;
	int n, cap;
	int run_start[DISTINCT_MAX_RUNS];
	int nruns;
	size_t bytes;
	const coll_t *coll;    /* strings equal under it are one value */
} distinct_set_t;

static int
distinct_run_end(const distinct_set_t *d, int r)
{
	return r + 1 < d->nruns ? d->run_start[r + 1] : d->n;
}

/* Merge the last two runs into one. */
static void
distinct_merge_last(distinct_set_t *d)
{
	int a = d->run_start[d->nruns - 2], m = d->run_start[d->nruns - 1], b = d->n;
	int i = a, j = m, k = 0;

	while (i < m || j < b) {
		if (j >= b || (i < m && bv_compare_coll(&d->vals[i], &d->vals[j], d->coll) < 0))
			d->tmp[k++] = d->vals[i++];
		else
			d->tmp[k++] = d->vals[j++];
	}
	memcpy(&d->vals[a], d->tmp, sizeof(bson_value_t) * (size_t)k);
	d->nruns--;
}

static bool
distinct_add(const bpath_hit_t *hit, void *ctx)
{
	distinct_set_t *d = ctx;
	const bson_value_t *v = &hit->value;

	/* the array at the end of the path is unwound (its elements are
	 * visited); an array inside it is a value of its own: [1, [1]] gives
	 * 1 and [1] */
	if (v->value_type == BSON_TYPE_EOD || (v->value_type == BSON_TYPE_ARRAY && !hit->leaf_element))
		return true;
	for (int r = 0; r < d->nruns; r++) {
		int lo = d->run_start[r], hi = distinct_run_end(d, r);
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			int c = bv_compare_coll(&d->vals[mid], v, d->coll);
			if (c == 0)
				return true;
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 64;
		d->vals = bson_realloc(d->vals, sizeof(bson_value_t) * (size_t)d->cap);
		d->tmp = bson_realloc(d->tmp, sizeof(bson_value_t) * (size_t)d->cap);
	}
	bson_value_copy(v, &d->vals[d->n]);
	d->run_start[d->nruns++] = d->n;
	d->n++;
	d->bytes += 16;
	/* sizes halve at least from run to run: at most log2(n) + 1 runs */
	while (d->nruns >= 2 && d->run_start[d->nruns - 1] - d->run_start[d->nruns - 2] <= d->n - d->run_start[d->nruns - 1])
		distinct_merge_last(d);
	return true;
}

/* One sorted run of every value. */
static void
distinct_finish(distinct_set_t *d)
{
	while (d->nruns >= 2)
		distinct_merge_last(d);
}

CMD_HANDLER(cmd_distinct)
{
	static const char *const fields[] = {"key", "query", "collation", "hint", "collectionUUID",
		"let", "rawData", NULL};
	const char *name, *key;
	bson_t query, arr = BSON_INITIALIZER;
	bool has_query, found;
	plan_request_t req;
	plan_exec_t *x = NULL;
	storage_session_t *s;
	distinct_set_t d = {0};
	bson_t doc;
	int rc, i, ret = -1;

	memset(&req, 0, sizeof(req));
	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(cmd_get_string(c, "key", &key, &found, err));
	if (!found) {
		ret = terr_set(err, 40414, "BSON field 'distinct.key' is missing but a required field");
		goto err;
	}
	{
		bson_iter_t qi;

		/* query: null is no query (mongod's IDL takes null for the optional object) */
		if (cmd_find_field(c, "query", &qi) && BSON_ITER_HOLDS_NULL(&qi))
			has_query = false;
		else
			ERR(cmd_get_doc(c, "query", &query, &has_query, err));
	}
	ERR(cmd_collation_type_check(c, c->body, err));
	storage_coll_get(c->engine->st, c->db, name, &req.coll, NULL);
	if ((req.coll == NULL && view_exists(c, c->db, name)) || (cmd_ts_is(req.coll) && !cmd_ts_raw(c))) {
		/* a view, or a time-series collection's measurements: an aggregation */
		ret = view_read(c, "distinct", name, err);
		goto err;
	}
	ERR(cmd_collation(c, c->body, req.coll, &req.collation, err));
	d.coll = req.collation;
	ERR(cmd_check_hint(c, c->body, req.coll, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	if (has_query && !bson_empty(&query)) {
		match_options_t mo = {0};
		mo.coll = req.collation;
		ERR(match_compile(&query, &mo, &req.match, err));
	}
	{
		bson_iter_t hint_it;
		req.distinct_key = key;
		req.hint = hint_for_plan(c, c->body, &hint_it);
		/* an index filter for the query's shape (cmd_plancache.c) */
		if (cmd_plan_filter_mask(c, req.coll, has_query ? &query : NULL, NULL, NULL, &req.index_filter)) {
			req.has_index_filter = true;
			req.hint = cmd_plan_filter_keep_hint(req.hint);
		}
		ret = plan_exec_new(&req, &x, err);
	}
	req.coll = NULL;
	req.match = NULL;
	if (ret != 0)
		goto err;
	ret = -1;
	{
		char dns[512];

		cmd_ns(dns, sizeof dns, c->db, name);
		if (notablescan_check(c, x, s, dns, err) != 0)
			goto err;
	}
	while ((rc = plan_exec_next(x, s, &doc, err)) == 1) {
		bpath_walk(&doc, key, true, distinct_add, &d);
		if (d.bytes > 16 * 1024 * 1024) {
			terr_set(err, 17217, "distinct too big, 16mb cap");
			rc = -1;
			break;
		}
	}
	if (rc < 0) {
		/* what the scan raised, with mongod's context */
		char ctx[600];

		cmd_ns(ctx, sizeof ctx, c->db, name);
		if (terr_is_set(err)) {
			char pre[700];

			snprintf(pre, sizeof pre, "Executor error during distinct command on namespace: %s", ctx);
			terr_wrap(err, pre);
		}
		goto err;
	}
	distinct_finish(&d);
	for (i = 0; i < d.n; i++) {
		char k[16];
		const char *kp;
		bson_uint32_to_string((uint32_t)i, &kp, k, sizeof(k));
		bv_append(&arr, kp, -1, &d.vals[i]);
	}
	if (arr.len > 16 * 1024 * 1024) {
		ret = terr_set(err, 31299, "distinct too big, 16mb cap");
		goto err;
	}
	BSON_APPEND_ARRAY(c->reply, "values", &arr);
	ret = 0;
err:
	for (i = 0; i < d.n; i++)
		bson_value_destroy(&d.vals[i]);
	bson_free(d.vals);
	bson_free(d.tmp);
	bson_destroy(&arr);
	if (req.coll != NULL)
		storage_coll_release(req.coll);
	match_free(req.match);
	plan_exec_free(x);
	return ret;
}
