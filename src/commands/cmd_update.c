/*
 * cmd_update.c -- update and findAndModify: find the documents with the
 * planner, transform them with update/, validate, store, keep indexes right;
 * each update statement is one transaction (write conflicts retried).
 */
#include "commands/commands_private.h"
#include "commands/cmd_timeseries.h"
#include "repl/oplog.h"

#include <string.h>
#include <sys/time.h>

#include "bson/value.h"
#include "commands/validation.h"
#include "commands/write.h"
#include "query/plan.h"
#include "query/projection.h"
#include "update/update.h"

static int64_t
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/*
 * What the statement's execution raised (the scan, applying the update to a
 * stored document, its validation and size checks, the write, the upsert's
 * insert, a write conflict or interruption) carries mongod's executor
 * context, as write_ops_exec's advanceExecutor adds it: "Plan executor
 * error during update|delete|findAndModify :: caused by :: ...".  Parse
 * errors of the statement do not (they are raised before it runs).
 */
static void
prefix_exec_error(terr_t *err, const char *op)
{
	char ctx[64];

	if (err == NULL || err->msg == NULL)
		return;
	snprintf(ctx, sizeof ctx, "Plan executor error during %s", op);
	terr_wrap(err, ctx);
}

/* One update statement, run inside a transaction (and re-run on conflict). */
typedef struct update_stmt {
	storage_coll_t *coll;
	match_t *match;
	const bson_t *filter;        /* the raw q, for upsert seeds */
	update_t *update;
	const bson_t *sort;          /* findAndModify */
	const coll_t *collation;     /* the statement's (NULL = simple) */
	bool multi, upsert, bypass;
	bool remove;                 /* findAndModify remove */
	bool want_doc, want_new;     /* findAndModify: return the pre/post image */
	int64_t now_ms;
	int64_t deadline_us;
	/* a sort past its memory limit spills, as mongod's updates do under
	 * allowDiskUseByDefault */
	bool allow_disk_use;
	const char *spill_dir;
	uint64_t sort_memory_limit;
	/* results */
	int64_t n, modified;
	bool upserted;
	bson_value_t upserted_id;
	bson_t *doc_out;             /* findAndModify's value (owned) */
} update_stmt_t;

/* How a statement's sort may use memory and disk: the server's
 * allowDiskUseByDefault and sort memory limit (updates take no
 * allowDiskUse of their own). */
static void
stmt_sort_options(cmd_t *c, update_stmt_t *u)
{
	u->allow_disk_use = atomic_load(&c->engine->allow_disk_use_by_default);
	u->spill_dir = c->engine->tmp_dir;
	u->sort_memory_limit = cmd_sort_memory_limit(c);
}

static void
stmt_reset(update_stmt_t *u)
{
	u->n = u->modified = 0;
	if (u->upserted)
		bson_value_destroy(&u->upserted_id);
	u->upserted = false;
	if (u->doc_out != NULL) {
		bson_destroy(u->doc_out);
		u->doc_out = NULL;
	}
}

static int
do_upsert(storage_session_t *s, update_stmt_t *u, terr_t *err)
{
	update_apply_ctx_t ctx = UPDATE_APPLY_CTX_INIT;
	bson_t seeded, doc = BSON_INITIALIZER;
	validation_result_t vr;
	bson_iter_t it;
	int ret = -1;

	ctx.now_ms = u->now_ms;
	ctx.is_insert = true;
	if (update_build_upsert_doc(u->update, u->filter, &ctx, &seeded, err) != 0) {
		bson_destroy(&doc);
		return -1;
	}
	ERR(write_prepare_doc(&seeded, &doc, err));
	if (validation_check_write(u->coll, &doc, NULL, u->bypass, &vr, err) != 0) {
		ret = -1;
		goto err;
	}
	ERR(storage_doc_insert(s, u->coll, &doc, NULL, err));
	u->n = 1;
	u->upserted = true;
	bson_iter_init_find(&it, &doc, "_id");
	bson_value_copy(bson_iter_value(&it), &u->upserted_id);
	if (u->want_doc && u->want_new)
		u->doc_out = bson_copy(&doc);
	ret = 0;
err:
	bson_destroy(&seeded);
	bson_destroy(&doc);
	return ret;
}

/* The next document of a sorted plan with its RecordId: the sort runs in
 * the plan (plan_exec_next); the record is found again by its _id, in the
 * same transaction.  1, 0 at the end, -1 with err. */
static int
next_sorted_record(plan_exec_t *x, storage_session_t *s, storage_coll_t *coll, recid_t *recid,
                   bson_t *doc, terr_t *err)
{
	bson_t sorted;
	bson_iter_t it;
	bson_value_t id;
	int rc;

	if ((rc = plan_exec_next(x, s, &sorted, err)) != 1)
		return rc;
	if (!bson_iter_init_find(&it, &sorted, "_id"))
		return terr_set(err, TERR_INTERNAL_ERROR, "sorted document without _id");
	bson_value_copy(bson_iter_value(&it), &id);
	rc = storage_doc_find_id(s, coll, &id, recid, doc, err);
	bson_value_destroy(&id);
	if (rc < 0)
		return -1;
	return rc == 0 ? 1 : 0;
}

static int
update_txn(storage_session_t *s, void *arg, terr_t *err)
{
	update_stmt_t *u = arg;
	plan_request_t req;
	plan_exec_t *x = NULL;
	recid_t recid;
	bson_t doc;
	int rc;

	stmt_reset(u);
	memset(&req, 0, sizeof(req));
	req.coll = u->coll;
	req.match = u->match;
	req.sort = u->sort;
	/* a sort is for one document (multi with a sort is refused): the first
	 * in order is all that is kept, as mongod's limit of 1 */
	req.limit = u->sort != NULL ? 1 : 0;
	req.allow_disk_use = u->allow_disk_use;
	req.spill_dir = u->spill_dir;
	req.sort_memory_limit = u->sort_memory_limit;
	req.collation = u->collation;
	req.borrow = true;
	if (u->coll != NULL) {
		RET(plan_exec_new(&req, &x, err));
	}
	while (x != NULL && (rc = u->sort != NULL ? next_sorted_record(x, s, u->coll, &recid, &doc, err) :
	                          plan_exec_next_record(x, s, &recid, &doc, err)) == 1) {
		update_apply_ctx_t ctx = UPDATE_APPLY_CTX_INIT;
		validation_result_t vr;
		bson_t new_doc;
		bool modified = false;
		int pos = -1;

		u->n++;
		if (u->remove) {
			if (u->want_doc)
				u->doc_out = bson_copy(&doc);
			if (storage_doc_delete(s, u->coll, recid, &doc, err) != 0)
				goto fail;
			break;
		}
		if (update_uses_positional(u->update) && u->match != NULL &&
		    match_exec(u->match, &doc, &pos, err) < 0)
			goto fail;
		ctx.matched_pos = pos;
		ctx.now_ms = u->now_ms;
		if (update_apply(u->update, &doc, &ctx, &new_doc, &modified, err) != 0)
			goto fail;
		if (modified) {
			bson_t old_copy;
			/* the stored view dies with the next storage call: keep a copy
			 * for validation (moderate) and index maintenance */
			bson_copy_to(&doc, &old_copy);
			rc = write_check_stored_doc(&new_doc, err);
			if (rc == 0 && validation_check_write(u->coll, &new_doc, &old_copy, u->bypass, &vr, err) != 0)
				rc = -1;
			if (rc == 0) {
				/* the oplog logs a replacement whole, other updates as a diff */
				bool repl = update_is_replacement(u->update);
				if (repl)
					repl_oplog_session_set_replacement(s, true);
				else
					repl_oplog_session_set_update(s, u->update);
				rc = storage_doc_update(s, u->coll, recid, &old_copy, &new_doc, err);
				if (repl)
					repl_oplog_session_set_replacement(s, false);
				else
					repl_oplog_session_set_update(s, NULL);
			}
			if (rc == 0 && u->want_doc)
				u->doc_out = bson_copy(u->want_new ? &new_doc : &old_copy);
			bson_destroy(&old_copy);
			if (rc != 0) {
				bson_destroy(&new_doc);
				goto fail;
			}
			u->modified++;
		} else if (u->want_doc) {
			u->doc_out = bson_copy(&doc);
		}
		bson_destroy(&new_doc);
		if (!u->multi)
			break;
	}
	if (x != NULL && rc < 0)
		goto fail;
	plan_exec_free(x);
	x = NULL;
	if (u->n == 0 && u->upsert && !u->remove)
		return do_upsert(s, u, err);
	return 0;
fail:
	plan_exec_free(x);
	return -1;
}

static int
get_sub_doc(bson_iter_t *f, const char *what, bson_t *out, terr_t *err)
{
	const uint8_t *data;
	uint32_t len;

	if (!BSON_ITER_HOLDS_DOCUMENT(f))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '%s' is the wrong type '%s', expected type 'object'", what,
		    bv_type_name(bson_iter_type(f)));
	bson_iter_document(f, &len, &data);
	bson_init_static(out, data, len);
	return 0;
}

static const char *const update_fields[] = {
	"updates", "ordered", "bypassDocumentValidation", "let", "collectionUUID", "rawData", "stmtId", "stmtIds", NULL,
};

/* Parse one entry of updates[] into the statement; compile q and u. */
static int
parse_update_op(cmd_t *c, const bson_t *op, const bson_t *cmd_let, const storage_coll_t *coll,
    update_stmt_t *u, bson_t *filter_view, bson_t *sort_view, terr_t *err)
{
	bson_iter_t f;
	bson_t *q = filter_view, arr_filters, cvars;
	bool has_q = false, has_u = false, has_af = false, has_c = false;
	bson_value_t uval;
	update_options_t uo = {0};
	match_options_t mo = {0};

	bson_iter_init(&f, op);
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "q") == 0) {
			RET(get_sub_doc(&f, "update.updates.q", q, err));
			has_q = true;
		} else if (strcmp(k, "u") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&f) && !BSON_ITER_HOLDS_ARRAY(&f))
				return terr_set(err, TERR_FAILED_TO_PARSE,
				    "Update argument must be either an object or an array");
			uval = *bson_iter_value(&f);
			has_u = true;
		} else if (strcmp(k, "multi") == 0) {
			u->multi = bson_iter_as_bool(&f);
		} else if (strcmp(k, "upsert") == 0) {
			u->upsert = bson_iter_as_bool(&f);
		} else if (strcmp(k, "arrayFilters") == 0) {
			const uint8_t *data;
			uint32_t len;
			if (!BSON_ITER_HOLDS_ARRAY(&f))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'update.updates.arrayFilters' is the wrong type '%s', expected type 'array'",
				    bv_type_name(bson_iter_type(&f)));
			bson_iter_array(&f, &len, &data);
			bson_init_static(&arr_filters, data, len);
			has_af = true;
		} else if (strcmp(k, "c") == 0) {
			RET(get_sub_doc(&f, "update.updates.c", &cvars, err));
			has_c = true;
		} else if (strcmp(k, "collation") == 0) {
			RET(cmd_collation_type_check(c, op, err));
		} else if (strcmp(k, "hint") == 0 || strcmp(k, "upsertSupplied") == 0 ||
		    strcmp(k, "sampleId") == 0 || strcmp(k, "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery") == 0) {
			/* hint: only the _id index exists; honoured by the scan order */
		} else if (strcmp(k, "sort") == 0) {
			RET(get_sub_doc(&f, "update.updates.sort", sort_view, err));
			if (!bson_empty(sort_view))
				u->sort = sort_view;
		} else {
			return terr_set(err, 40415, "BSON field 'update.updates.%s' is an unknown field.", k);
		}
	}
	if (!has_q)
		return terr_set(err, 40414, "BSON field 'update.updates.q' is missing but a required field");
	if (!has_u)
		return terr_set(err, 40414, "BSON field 'update.updates.u' is missing but a required field");
	/* bson_init_static'd structs point into themselves: never copy one by
	 * value, hence q lives in the caller's filter_view */
	u->filter = filter_view;
	if (cmd_let != NULL)
		mo.let = cmd_let;
	/* an upsert must be able to seed its document from the query, which
	 * $expr makes impossible: mongod refuses it at parse time */
	if (u->upsert)
		mo.disallow |= MATCH_DISALLOW_EXPR;
	RET(cmd_collation(c, op, coll, &u->collation, err));
	mo.coll = u->collation;
	uo.coll = u->collation;
	RET(match_compile(q, &mo, &u->match, err));
	uo.array_filters = has_af ? &arr_filters : NULL;
	if (has_c && cmd_let != NULL) {
		/* both the command's let and the statement's constants are visible */
		bson_t vars = BSON_INITIALIZER;
		int rc;
		bson_concat(&vars, cmd_let);
		bson_concat(&vars, &cvars);
		uo.let = &vars;
		rc = update_compile(&uval, &uo, &u->update, err);
		bson_destroy(&vars);
		if (rc != 0)
			return -1;
	} else {
		uo.let = has_c ? &cvars : cmd_let;
		if (update_compile(&uval, &uo, &u->update, err) != 0)
			return -1;
	}
	if (u->multi && update_is_replacement(u->update))
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "multi update is not supported for replacement-style update");
	return 0;
}

int
write_update_run(cmd_t *c, storage_session_t *s, const char *db, const char *name,
    storage_coll_t **coll, const bson_t *stmt, const bson_t *let, bool bypass, bool sync,
    int64_t now_ms, write_update_result_t *res, bool *cmd_error, terr_t *err)
{
	update_stmt_t u;
	bson_t filter, sort;
	int rc;

	memset(res, 0, sizeof(*res));
	*cmd_error = false;
	memset(&u, 0, sizeof(u));
	/* the statement runs with the collection's default collation unless it
	 * names one, so look the collection up first */
	if (*coll == NULL)
		storage_coll_get(c->engine->st, db, name, coll, NULL);
	rc = parse_update_op(c, stmt, let, *coll, &u, &filter, &sort, err);
	if (rc == 0 && u.sort != NULL && u.multi) {
		terr_clear(err);
		rc = terr_set(err, TERR_FAILED_TO_PARSE, "Cannot specify sort with multi=true");
		*cmd_error = true;
	}
	if (rc == 0 && *coll == NULL)
		rc = write_get_coll_in(c, db, name, u.upsert, coll, err);
	if (rc == 0 && write_capped_txn_check(c, *coll, false, err) != 0) {
		rc = -1;
		*cmd_error = true;
	}
	if (rc == 0 && *coll != NULL && cmd_ts_is(*coll) && !cmd_ts_raw(c)) {
		/* measurements: their buckets are rewritten (cmd_timeseries.c) */
		bson_iter_t uit;
		if (u.sort != NULL && !bson_empty(u.sort))
			/* mongod's parsed_update refuses an updateOne's sort there */
			rc = terr_set(err, TERR_INVALID_OPTIONS,
			    "Cannot perform a findAndModify with a query and sort on a time-series collection.");
		else if (bson_iter_init_find(&uit, stmt, "u"))
			rc = cmd_ts_update(c, *coll, &filter, u.collation, bson_iter_value(&uit), u.match, u.update, u.multi,
			    u.upsert, &res->n, &res->modified, &res->upserted_id, &res->upserted, err);
		stmt_reset(&u);
		match_free(u.match);
		update_free(u.update);
		return rc == 0 ? 0 : -1;
	}
	if (rc == 0) {
		u.coll = *coll;
		u.bypass = bypass;
		u.now_ms = now_ms;
		u.deadline_us = c->deadline_us;
		stmt_sort_options(c, &u);
		rc = storage_txn_run(s, update_txn, &u, sync, err);
		if (rc != 0)
			prefix_exec_error(err, "update");
	}
	if (rc == 0) {
		res->n = u.n;
		res->modified = u.modified;
		if (u.upserted) {
			res->upserted = true;
			bson_value_copy(&u.upserted_id, &res->upserted_id);
		}
	}
	stmt_reset(&u);
	match_free(u.match);
	update_free(u.update);
	return rc == 0 ? 0 : -1;
}

CMD_HANDLER(cmd_update)
{
	const char *name;
	write_batch_t w;
	bson_t write_errors = BSON_INITIALIZER, upserted = BSON_INITIALIZER, let = BSON_INITIALIZER;
	bson_iter_t it;
	bool ordered, bypass, sync, has_let;
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	int64_t n = 0, nmod = 0;
	int i, nerr = 0, nups = 0, ret = -1;
	terr_t e = TERR_INIT;
	int64_t now = wall_ms();

	ERR(write_batch_args(c, update_fields, "updates", &w, err));
	name = w.coll;
	ordered = w.ordered;
	bypass = w.bypass;
	sync = w.sync;
	ERR(cmd_get_let(c, &let, &has_let, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	if (c->txn_oplog_session) {
		/* a retryable one on measurements is kept whole
		 * (cmd_retry_keep_whole): its entries are the buckets' (a split
		 * logs an insert), which cannot give n / nModified back */
		storage_coll_t *tc = NULL;
		bool ts = storage_coll_get(c->engine->st, c->db, name, &tc, NULL) == 0 && cmd_ts_is(tc) &&
		          !cmd_ts_raw(c);
		storage_coll_release(tc);
		if (ts)
			ERR(cmd_retry_keep_whole(c, s, "update", err));
	}
	bson_iter_init(&it, &w.stmts);
	for (i = 0; bson_iter_next(&it); i++) {
		write_update_result_t r;
		bson_t op;
		bool fatal;
		int rc;

		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'update.updates.%d' is the wrong type '%s', expected type 'object'", i,
			    bv_type_name(bson_iter_type(&it)));
			goto err;
		}
		{
			const uint8_t *data;
			uint32_t len;
			bson_iter_document(&it, &len, &data);
			bson_init_static(&op, data, len);
		}
		memset(&r, 0, sizeof(r));
		fatal = false;
		rc = 1;
		if (c->txn_oplog_session) {
			/* a retryable write: a statement the session executed is
			 * answered from its oplog entry (mongod's
			 * parseOplogEntryForUpdate), a multi one refused */
			bson_iter_t mf;
			uint64_t done_ts;
			int rr = cmd_retry_stmt(c, s, i, &done_ts, err);
			if (rr < 0)
				goto err;
			if (rr == 1) {
				rc = cmd_retry_update_result(c, s, done_ts, &r.n, &r.modified, &r.upserted_id, &r.upserted, &e);
				fatal = rc != 0;
			} else if (bson_iter_init_find(&mf, &op, "multi") && bson_iter_as_bool(&mf)) {
				rc = terr_set(&e, TERR_INVALID_OPTIONS, "Cannot use (or request) retryable writes with multi=true");
			}
		}
		if (rc == 1)
			rc = write_update_run(c, s, c->db, name, &coll, &op, has_let ? &let : NULL, bypass, sync, now,
			    &r, &fatal, &e);
		if (rc != 0 && fatal) {
			/* a parse error of the command, not a write error */
			terr_move(err, &e);
			ret = -1;
			goto err;
		}
		if (rc == 0) {
			n += r.n;
			nmod += r.modified;
			if (r.upserted) {
				char key[16];
				const char *k;
				bson_t entry;
				bson_uint32_to_string((uint32_t)nups++, &k, key, sizeof(key));
				bson_append_document_begin(&upserted, k, -1, &entry);
				BSON_APPEND_INT32(&entry, "index", i);
				bv_append(&entry, "_id", 3, &r.upserted_id);
				bson_append_document_end(&upserted, &entry);
			}
			write_update_result_clear(&r);
		} else if (write_error_is_interruption(&e)) {
			terr_move(err, &e);
			ret = -1;
			goto err;
		} else {
			write_error_append(&write_errors, nerr++, i, &e);
			write_log_assertion("update", &e);
			terr_clear(&e);
		}
		if (rc != 0 && ordered)
			break;
	}
	__atomic_fetch_add(&c->engine->counters.update, i, __ATOMIC_RELAXED);
	BSON_APPEND_INT32(c->reply, "n", (int32_t)n);
	BSON_APPEND_INT32(c->reply, "nModified", (int32_t)nmod);
	if (nups > 0)
		BSON_APPEND_ARRAY(c->reply, "upserted", &upserted);
	if (nerr > 0)
		BSON_APPEND_ARRAY(c->reply, "writeErrors", &write_errors);
	ret = 0;
err:
	bson_destroy(&let);
	bson_destroy(&write_errors);
	bson_destroy(&upserted);
	terr_clear(&e);
	if (coll != NULL)
		storage_coll_release(coll);
	return ret;
}

/* ---- findAndModify ------------------------------------------------------- */

static const char *const fam_fields[] = {
	"query", "sort", "remove", "update", "new", "fields", "upsert", "bypassDocumentValidation",
	"collation", "arrayFilters", "hint", "let", "collectionUUID", "rawData", NULL,
};

CMD_HANDLER(cmd_find_and_modify)
{
	const char *name;
	bson_t query = BSON_INITIALIZER, sort, fields, arr_filters, let = BSON_INITIALIZER, q;
	bool has_query, has_sort, has_fields, has_af, has_let, found, sync, bypass = false;
	bool remove = false, want_new = false, upsert = false;
	bson_iter_t it;
	bool has_update;
	bson_value_t uval;
	update_stmt_t u;
	update_options_t uo = {0};
	match_options_t mo = {0};
	storage_session_t *s;
	projection_t *proj = NULL;
	bson_t leo;
	int ret = -1;
	bool is_ts = false;

	memset(&u, 0, sizeof(u));
	ERR(cmd_collection_arg(c, &name, err));
	ERR(cmd_check_fields(c, fam_fields, err));
	ERR(cmd_get_doc(c, "query", &q, &has_query, err));
	ERR(cmd_get_doc(c, "sort", &sort, &has_sort, err));
	ERR(cmd_get_doc(c, "fields", &fields, &has_fields, err));
	ERR(cmd_get_array(c, "arrayFilters", &arr_filters, &has_af, err));
	ERR(cmd_get_let(c, &let, &has_let, err));
	ERR(cmd_get_bool(c, "remove", &remove, &found, err));
	ERR(cmd_get_bool(c, "new", &want_new, &found, err));
	ERR(cmd_get_bool(c, "upsert", &upsert, &found, err));
	ERR(cmd_get_bool(c, "bypassDocumentValidation", &bypass, &found, err));
	has_update = bson_iter_init_find(&it, c->body, "update");
	ERR(cmd_collation_type_check(c, c->body, err));
	storage_coll_get(c->engine->st, c->db, name, &u.coll, NULL);
	if (cmd_ts_is(u.coll) && !cmd_ts_raw(c)) {
		/* measurements (cmd_timeseries.c): without a sort (mongod's 72) */
		is_ts = true;
		if (has_sort && !bson_empty(&sort)) {
			/* mongod 9.0 refuses it too (parsed_update / parsed_delete) */
			ret = terr_set(err, TERR_INVALID_OPTIONS,
			    "Cannot perform a findAndModify with a query and sort on a time-series collection.");
			goto err;
		}
		/* a retryable one is kept whole: its oplog entries are the
		 * buckets', so a retry answers the first reply (cmd_txn.c
		 * refuses a retry whose reply was lost in a restart) */
		if (c->txn_oplog_session)
			c->txn_keep_reply = true;
	}
	ERR(cmd_collation(c, c->body, u.coll, &u.collation, err));
	mo.coll = u.collation;
	uo.coll = u.collation;
	if (remove && has_update) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Cannot specify both an update and remove=true");
		goto err;
	}
	if (!remove && !has_update) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Either an update or remove=true must be specified");
		goto err;
	}
	if (remove && upsert) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE, "Cannot specify both upsert=true and remove=true");
		goto err;
	}
	if (remove && want_new) {
		ret = terr_set(err, TERR_FAILED_TO_PARSE,
		    "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document");
		goto err;
	}
	if (has_query)
		bson_copy_to_excluding_noinit(&q, &query, "", NULL);
	if (has_let)
		mo.let = &let;
	ERR(match_compile(&query, &mo, &u.match, err));
	if (has_fields && !bson_empty(&fields))
		ERR(projection_compile(&fields, u.match, has_let ? &let : NULL, &proj, err));
	if (has_update) {
		bson_iter_init_find(&it, c->body, "update");
		if (!BSON_ITER_HOLDS_DOCUMENT(&it) && !BSON_ITER_HOLDS_ARRAY(&it)) {
			ret = terr_set(err, TERR_FAILED_TO_PARSE, "Update argument must be either an object or an array");
			goto err;
		}
		uval = *bson_iter_value(&it);
		uo.array_filters = has_af ? &arr_filters : NULL;
		uo.let = has_let ? &let : NULL;
		ERR(update_compile(&uval, &uo, &u.update, err));
	}
	if (is_ts) {
		ERR(cmd_ts_find_and_modify(c, u.coll, &query, u.collation, has_update ? &uval : NULL, upsert, want_new, &u.n,
		    &u.upserted_id, &u.upserted, &u.doc_out, err));
		goto reply;
	}
	sync = write_concern_sync(c);
	if (u.coll == NULL)
		ERR(write_get_coll_in(c, c->db, name, upsert, &u.coll, err));
	ERR(write_capped_txn_check(c, u.coll, false, err));
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	u.filter = &query;
	u.sort = has_sort && !bson_empty(&sort) ? &sort : NULL;
	u.remove = remove;
	u.upsert = upsert;
	u.bypass = bypass;
	u.want_doc = true;
	u.want_new = want_new;
	u.now_ms = wall_ms();
	u.deadline_us = c->deadline_us;
	stmt_sort_options(c, &u);
	if (c->txn_oplog_session)   /* a retryable findAndModify: its entry says which image is kept */
		repl_oplog_session_set_image(s, remove || !want_new ? "preImage" : "postImage");
	ret = storage_txn_run(s, update_txn, &u, sync, err);
	if (c->txn_oplog_session)
		repl_oplog_session_set_image(s, NULL);
	if (ret != 0) {
		prefix_exec_error(err, "findAndModify");
		goto err;
	}
	if (c->txn_oplog_session && u.doc_out != NULL && !u.upserted) {
		/* config.image_collection's copy, written with the row
		 * (run_retryable_in_txn) */
		if (c->txn_image != NULL)
			bson_destroy(c->txn_image);
		c->txn_image = bson_copy(u.doc_out);
		c->txn_image_kind = remove || !want_new ? "preImage" : "postImage";
	}
reply:
	if (u.doc_out != NULL && proj != NULL) {
		/* the returned image is projected as find would: the positional
		 * form takes the array position the query matches in it */
		bson_t projected = BSON_INITIALIZER;
		int pos = -1;
		if (projection_needs_match_pos(proj) && match_exec(u.match, u.doc_out, &pos, err) < 0) {
			bson_destroy(&projected);
			ret = -1;
			goto err;
		}
		if (projection_apply(proj, u.doc_out, pos, &projected, err) != 0) {
			bson_destroy(&projected);
			ret = -1;
			goto err;
		}
		bson_destroy(u.doc_out);
		u.doc_out = bson_copy(&projected);
		bson_destroy(&projected);
	}
	bson_append_document_begin(c->reply, "lastErrorObject", -1, &leo);
	BSON_APPEND_INT32(&leo, "n", (int32_t)u.n);
	if (!remove) {
		BSON_APPEND_BOOL(&leo, "updatedExisting", u.n > 0 && !u.upserted);
		if (u.upserted)
			bv_append(&leo, "upserted", -1, &u.upserted_id);
	}
	bson_append_document_end(c->reply, &leo);
	if (u.doc_out != NULL)
		BSON_APPEND_DOCUMENT(c->reply, "value", u.doc_out);
	else
		BSON_APPEND_NULL(c->reply, "value");
	__atomic_fetch_add(remove ? &c->engine->counters.delete_ : &c->engine->counters.update, 1,
	    __ATOMIC_RELAXED);
	ret = 0;
err:
	stmt_reset(&u);
	projection_free(proj);
	match_free(u.match);
	update_free(u.update);
	if (u.coll != NULL)
		storage_coll_release(u.coll);
	bson_destroy(&query);
	bson_destroy(&let);
	return ret;
}
