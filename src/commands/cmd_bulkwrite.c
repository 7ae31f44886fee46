/*
 * cmd_bulkwrite.c -- the client-level bulkWrite command (MongoDB 8.0+, run
 * on admin): one list of insert/update/delete operations over any number of
 * namespaces (nsInfo), answered with a cursor of per-operation results and
 * the summary counts.
 *
 * Every operation runs through the same statement paths as the insert,
 * update and delete commands (write.h): the same document preparation,
 * validation, upsert, sort and write errors.  The whole request is parsed
 * and checked before the first write, as mongod's IDL does, so a malformed
 * operation fails the command without having written anything.
 *
 * A retryable bulkWrite is kept per statement as the insert, update and
 * delete commands are (retried_op): a retry answers the ops that ran from
 * their oplog entries, in memory and after a restart, and runs the others.
 *
 * Operations on a time-series collection (without rawData) write
 * measurements, as mongod 8.0+: an insert routed into its bucket, updates
 * and deletes through cmd_timeseries.c's bucket rewrites; a retryable
 * bulkWrite naming one is kept whole (its entries are the buckets', which
 * cannot give an update's result back): a retry answers its first reply,
 * and 238 when that reply was lost (a restart, a failure part-way) after
 * some of its ops ran.
 */
#include "commands/commands_private.h"
#include "commands/cmd_timeseries.h"

#include <string.h>
#include <sys/time.h>

#include "bson/value.h"
#include "common/checked.h"
#include "commands/write.h"

/* cmd_catalog.c */
int cmd_cursor_options(cmd_t *c, cursor_opts_t *o, terr_t *err);
void cmd_array_source(bson_t *docs_steal, cursor_source_t *src);

enum { BW_INSERT, BW_UPDATE, BW_DELETE };

/* One nsInfo entry: its database and collection, and the collection
 * reference once the namespace has been looked up (or created). */
typedef struct bw_ns {
	char *db;
	char *coll;
	storage_coll_t *ref;
} bw_ns_t;

/* The fields each kind of operation accepts (the IDL structs are strict). */
static const char *const insert_op_fields[] = {"insert", "document", NULL};
static const char *const update_op_fields[] = {
	"update", "filter", "sort", "multi", "updateMods", "upsert", "upsertSupplied", "arrayFilters",
	"hint", "constants", "collation", "sampleId", "$_allowShardKeyUpdatesWithoutFullShardKeyInQuery",
	NULL,
};
static const char *const delete_op_fields[] = {"delete", "filter", "multi", "hint", "collation", "sampleId",
	NULL};
static const char *const ns_info_fields[] = {"ns", "collectionUUID", "encryptionInformation",
	"isTimeseriesNamespace", "shardVersion", "databaseVersion", NULL};

static const char *const bulk_write_fields[] = {
	"ops", "nsInfo", "cursor", "bypassDocumentValidation", "ordered", "stmtId", "stmtIds", "let",
	"errorsOnly", "bypassEmptyTsReplacement", "rawData", NULL,
};

static bool
in_list(const char *const *list, const char *k)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, k) == 0)
			return true;
	return false;
}

static int64_t
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void
sub_view(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *data;
	uint32_t len;

	if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &len, &data);
	else
		bson_iter_document(it, &len, &data);
	bson_init_static(out, data, len);
}

static int
wrong_type(const char *field, const bson_iter_t *it, const char *want, terr_t *err)
{
	return terr_set(err, TERR_TYPE_MISMATCH, "BSON field 'bulkWrite.%s' is the wrong type '%s', expected type '%s'",
	    field, bv_type_name(bson_iter_type(it)), want);
}

/* The kind of an operation (from its first field) and its nsInfo index,
 * with every field checked against the kind's IDL struct. */
static int
parse_op(const bson_t *op, int nns, int *kind, int *ns_idx, terr_t *err)
{
	bson_iter_t it;
	const char *const *fields;
	const char *k;
	bool has_filter = false, has_doc = false, has_mods = false;
	bson_value_t v;
	int64_t idx;

	if (!bson_iter_init(&it, op) || !bson_iter_next(&it))
		return terr_set(err, TERR_FAILED_TO_PARSE,
		    "BulkWrite ops entry must contain an insert, update or delete field");
	k = bson_iter_key(&it);
	if (strcmp(k, "insert") == 0) {
		*kind = BW_INSERT;
		fields = insert_op_fields;
	} else if (strcmp(k, "update") == 0) {
		*kind = BW_UPDATE;
		fields = update_op_fields;
	} else if (strcmp(k, "delete") == 0) {
		*kind = BW_DELETE;
		fields = delete_op_fields;
	} else {
		return terr_set(err, 40415, "BSON field 'bulkWrite.ops.%s' is an unknown field.", k);
	}
	v = *bson_iter_value(&it);
	if (!bv_is_number(&v) || v.value_type == BSON_TYPE_DECIMAL128)
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'bulkWrite.ops.%s' is the wrong type '%s', expected types '[long, int, double]'", k,
		    bv_type_name(v.value_type));
	if (!bv_as_int64_exact(&v, &idx))
		idx = tm_double_to_i64_sat(bv_as_double(&v));
	if (idx < 0)
		return terr_set(err, 51024, "BSON field '%s' value must be >= 0, actual value '%lld'", k,
		    (long long)idx);
	if (idx >= nns) {
		char *s = bv_doc_to_mongo_string(op);
		terr_set(err, TERR_BAD_VALUE, "BulkWrite ops entry %s has an invalid nsInfo index.", s);
		bson_free(s);
		return -1;
	}
	*ns_idx = (int)idx;
	while (bson_iter_next(&it)) {
		k = bson_iter_key(&it);
		if (!in_list(fields, k))
			return terr_set(err, 40415, "BSON field 'bulkWrite.ops.%s' is an unknown field.", k);
		if (strcmp(k, "filter") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return wrong_type("ops.filter", &it, "object", err);
			has_filter = true;
		} else if (strcmp(k, "document") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return wrong_type("ops.document", &it, "object", err);
			has_doc = true;
		} else if (strcmp(k, "updateMods") == 0) {
			has_mods = true;
		} else if (strcmp(k, "multi") == 0 || strcmp(k, "upsert") == 0) {
			if (!BSON_ITER_HOLDS_BOOL(&it)) {
				char f[32];
				snprintf(f, sizeof(f), "ops.%s", k);
				return wrong_type(f, &it, "bool", err);
			}
		} else if (strcmp(k, "sort") == 0 || strcmp(k, "constants") == 0 || strcmp(k, "collation") == 0) {
			if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
				char f[32];
				snprintf(f, sizeof(f), "ops.%s", k);
				return wrong_type(f, &it, "object", err);
			}
		} else if (strcmp(k, "arrayFilters") == 0) {
			if (!BSON_ITER_HOLDS_ARRAY(&it))
				return wrong_type("ops.arrayFilters", &it, "array", err);
		}
	}
	if (*kind == BW_INSERT && !has_doc)
		return terr_set(err, 40414, "BSON field 'bulkWrite.ops.document' is missing but a required field");
	if (*kind != BW_INSERT && !has_filter)
		return terr_set(err, 40414, "BSON field 'bulkWrite.ops.filter' is missing but a required field");
	if (*kind == BW_UPDATE && !has_mods)
		return terr_set(err, 40414, "BSON field 'bulkWrite.ops.updateMods' is missing but a required field");
	return 0;
}

static int
parse_ns_info(const bson_t *arr, bw_ns_t **out, int *n_out, terr_t *err)
{
	bson_iter_t it, f;
	bw_ns_t *ns;
	int n = (int)bson_count_keys(arr), i;

	ns = bson_malloc0(sizeof(*ns) * (size_t)(n + 1));
	*out = ns;
	*n_out = 0;
	bson_iter_init(&it, arr);
	for (i = 0; bson_iter_next(&it); i++) {
		bson_t entry;
		const char *name = NULL, *dot;
		uint32_t len = 0;

		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'bulkWrite.nsInfo' is the wrong type '%s', expected type 'object'",
			    bv_type_name(bson_iter_type(&it)));
		sub_view(&it, &entry);
		bson_iter_init(&f, &entry);
		while (bson_iter_next(&f)) {
			const char *k = bson_iter_key(&f);
			if (!in_list(ns_info_fields, k))
				return terr_set(err, 40415, "BSON field 'bulkWrite.nsInfo.%s' is an unknown field.", k);
			if (strcmp(k, "ns") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&f))
					return wrong_type("nsInfo.ns", &f, "string", err);
				name = bson_iter_utf8(&f, &len);
			}
		}
		if (name == NULL)
			return terr_set(err, 40414, "BSON field 'bulkWrite.nsInfo.ns' is missing but a required field");
		dot = strchr(name, '.');
		if (dot == NULL || dot == name || dot[1] == '\0' || strlen(name) != len)
			return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace specified for bulkWrite: '%s'",
			    name);
		ns[i].db = bson_strndup(name, (size_t)(dot - name));
		ns[i].coll = bson_strdup(dot + 1);
		*n_out = i + 1;
	}
	return 0;
}

/* An update op in the update command's statement shape. */
static void
update_stmt_from_op(const bson_t *op, bson_t *stmt)
{
	bson_iter_t it;

	bson_iter_init(&it, op);
	bson_iter_next(&it);    /* update: <nsInfo index> */
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "filter") == 0)
			k = "q";
		else if (strcmp(k, "updateMods") == 0)
			k = "u";
		else if (strcmp(k, "constants") == 0)
			k = "c";
		bson_append_iter(stmt, k, -1, &it);
	}
}

static void
item_error(bson_t *batch, int pos, int idx, const terr_t *e)
{
	char key[16];
	const char *k;
	bson_t item;
	bson_iter_t it;

	bson_uint32_to_string((uint32_t)pos, &k, key, sizeof(key));
	bson_append_document_begin(batch, k, -1, &item);
	BSON_APPEND_DOUBLE(&item, "ok", 0.0);
	BSON_APPEND_INT32(&item, "idx", idx);
	BSON_APPEND_INT32(&item, "code", e->code);
	BSON_APPEND_UTF8(&item, "errmsg", e->msg ? e->msg : "");
	if (e->extra != NULL && bson_iter_init(&it, e->extra))
		while (bson_iter_next(&it))
			bson_append_iter(&item, bson_iter_key(&it), -1, &it);
	if (e->info != NULL)
		BSON_APPEND_DOCUMENT(&item, "errInfo", e->info);
	BSON_APPEND_INT32(&item, "n", 0);
	bson_append_document_end(batch, &item);
}

static void
item_ok(bson_t *batch, int pos, int idx, int kind, const write_update_result_t *r, int64_t n)
{
	char key[16];
	const char *k;
	bson_t item, up;

	bson_uint32_to_string((uint32_t)pos, &k, key, sizeof(key));
	bson_append_document_begin(batch, k, -1, &item);
	BSON_APPEND_DOUBLE(&item, "ok", 1.0);
	BSON_APPEND_INT32(&item, "idx", idx);
	BSON_APPEND_INT32(&item, "n", (int32_t)n);
	if (kind == BW_UPDATE) {
		BSON_APPEND_INT32(&item, "nModified", (int32_t)r->modified);
		if (r->upserted) {
			bson_append_document_begin(&item, "upserted", -1, &up);
			bv_append(&up, "_id", 3, &r->upserted_id);
			bson_append_document_end(&item, &up);
		}
	}
	bson_append_document_end(batch, &item);
}

/* Run one parsed operation; its counts go to the summary. */
typedef struct bw_counts {
	int64_t inserted, matched, modified, upserted, deleted;
} bw_counts_t;

static int
run_op(cmd_t *c, storage_session_t *s, const bson_t *op, int kind, bw_ns_t *ns, const bson_t *let,
    bool bypass, bool sync, int64_t now, write_update_result_t *r, int64_t *n, bool *fatal, terr_t *e)
{
	bson_iter_t it;
	bson_t sub;
	bool ts;

	*n = 0;
	*fatal = false;
	memset(r, 0, sizeof(*r));
	if (ns->ref == NULL)
		storage_coll_get(c->engine->st, ns->db, ns->coll, &ns->ref, NULL);
	ts = cmd_ts_is(ns->ref) && !cmd_ts_raw(c);
	if (kind == BW_INSERT) {
		bson_iter_init_find(&it, op, "document");
		sub_view(&it, &sub);
		if (ts) {
			/* a measurement into its bucket (cmd_timeseries.c) */
			RET(cmd_ts_insert_one(c, ns->ref, &sub, e));
			*n = 1;
			return 0;
		}
		if (ns->ref == NULL)
			RET(write_get_or_create_coll_in(c, ns->db, ns->coll, &ns->ref, e));
		RET(write_insert_one(c, s, ns->ref, &sub, bypass, sync, e));
		*n = 1;
		return 0;
	}
	if (kind == BW_UPDATE) {
		bson_t stmt = BSON_INITIALIZER;
		int rc;

		update_stmt_from_op(op, &stmt);
		rc = write_update_run(c, s, ns->db, ns->coll, &ns->ref, &stmt, let, bypass, sync, now, r, fatal, e);
		bson_destroy(&stmt);
		if (rc == 0)
			*n = r->n;
		return rc;
	}
	/* delete */
	{
		bool multi = false;
		const coll_t *collation;

		if (ns->ref == NULL)
			RET(write_get_coll_in(c, ns->db, ns->coll, false, &ns->ref, e));
		RET(cmd_collation(c, op, ns->ref, &collation, e));
		RET(cmd_check_hint(c, op, ns->ref, e));
		if (bson_iter_init_find(&it, op, "multi"))
			multi = bson_iter_as_bool(&it);
		bson_iter_init_find(&it, op, "filter");
		sub_view(&it, &sub);
		if (ts)   /* measurements out of their buckets (cmd_timeseries.c) */
			return cmd_ts_delete(c, ns->ref, &sub, collation, multi, n, e);
		return write_delete_run(c, s, ns->ref, &sub, let, collation, !multi, sync, n, e);
	}
}

/*
 * A retryable bulkWrite's op i (mongod's handleInsertOp / handleUpdateOp /
 * handleDeleteOp): when the session executed its stmtId already, it is
 * answered from its oplog entry -- an insert or a delete n: 1, an update
 * parsed from the entry (mongod's parseOplogEntryForUpdate) -- its stmtId
 * joins the reply's retriedStmtIds, and 0 is returned with *r / *n filled.
 * 1: run it (its entry will carry its stmtId); a multi update or delete in
 * a retryable write is its write error 72 (-1 with e set).  -1 with e set:
 * 217 when the history is incomplete (the caller fails the command), else
 * the op's write error.  Outside retryable writes: 1.
 */
static int
retried_op(cmd_t *c, storage_session_t *s, const bson_t *op, int kind, int i, write_update_result_t *r,
    int64_t *n, terr_t *e)
{
	bson_iter_t it;
	uint64_t ts;
	int rr;

	memset(r, 0, sizeof(*r));
	*n = 0;
	if (!c->txn_oplog_session)
		return 1;
	if ((rr = cmd_retry_stmt(c, s, i, &ts, e)) < 0)
		return -1;
	if (rr == 0) {
		if (kind != BW_INSERT && bson_iter_init_find(&it, op, "multi") && bson_iter_as_bool(&it))
			return terr_set(e, TERR_INVALID_OPTIONS, "Cannot use retryable writes with multi=true");
		return 1;
	}
	if (kind != BW_UPDATE) {
		*n = 1;   /* multi is refused in retryable writes: one document */
		return 0;
	}
	RET(cmd_retry_update_result(c, s, ts, &r->n, &r->modified, &r->upserted_id, &r->upserted, e));
	*n = r->n;
	return 0;
}

CMD_HANDLER(cmd_bulk_write)
{
	bson_t ops, ns_arr, let = BSON_INITIALIZER, *batch = NULL;
	bool found, has_let, ordered, bypass, errors_only = false, sync;
	bw_ns_t *ns = NULL;
	int nns = 0, nops, i, pos = 0, ret = -1, *kinds = NULL, *ns_idx = NULL;
	int64_t nerrors = 0, now = wall_ms();
	bw_counts_t cnt = {0};
	bson_iter_t it;
	storage_session_t *s;
	cursor_opts_t copts;
	cursor_source_t src = {0};
	terr_t e = TERR_INIT;
	char cns[64];

	ERR(cmd_check_fields(c, bulk_write_fields, err));
	ERR(cmd_get_array(c, "ops", &ops, &found, err));
	if (!found) {
		ret = terr_set(err, 40414, "BSON field 'bulkWrite.ops' is missing but a required field");
		goto err;
	}
	ERR(cmd_get_array(c, "nsInfo", &ns_arr, &found, err));
	if (!found) {
		ret = terr_set(err, 40414, "BSON field 'bulkWrite.nsInfo' is missing but a required field");
		goto err;
	}
	ERR(cmd_get_let(c, &let, &has_let, err));
	ERR(cmd_get_bool(c, "errorsOnly", &errors_only, &found, err));
	ERR(write_common_flags(c, &ordered, &bypass, err));
	ERR(cmd_cursor_options(c, &copts, err));
	nops = (int)bson_count_keys(&ops);
	ERR(write_check_batch_size(nops, err));
	ERR(parse_ns_info(&ns_arr, &ns, &nns, err));

	/* the whole request is checked before the first write */
	kinds = bson_malloc0(sizeof(int) * (size_t)nops);
	ns_idx = bson_malloc0(sizeof(int) * (size_t)nops);
	bson_iter_init(&it, &ops);
	for (i = 0; bson_iter_next(&it) && i < nops; i++) {
		bson_t op;
		if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
			ret = terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'bulkWrite.ops' is the wrong type '%s', expected type 'object'",
			    bv_type_name(bson_iter_type(&it)));
			goto err;
		}
		sub_view(&it, &op);
		ERR(parse_op(&op, nns, &kinds[i], &ns_idx[i], err));
	}

	sync = write_concern_sync(c);
	if ((s = client_session(c->client, err)) == NULL) {
		ret = -1;
		goto err;
	}
	if (c->txn_oplog_session) {
		/* a retryable one with time-series ops is kept whole
		 * (cmd_retry_keep_whole): their entries are the buckets' */
		bool any_ts = false;
		for (i = 0; i < nns && !any_ts; i++) {
			if (ns[i].ref == NULL)
				storage_coll_get(c->engine->st, ns[i].db, ns[i].coll, &ns[i].ref, NULL);
			any_ts = cmd_ts_is(ns[i].ref) && !cmd_ts_raw(c);
		}
		if (any_ts)
			ERR(cmd_retry_keep_whole(c, s, "bulkWrite", err));
	}
	batch = bson_new();    /* handed to the cursor source, which destroys it */
	bson_iter_init(&it, &ops);
	for (i = 0; bson_iter_next(&it) && i < nops; i++) {
		write_update_result_t r;
		bson_t op;
		int64_t n;
		bool fatal;
		int rc;

		if (cmd_check_deadline(c, err)) {
			ret = -1;
			goto err;
		}
		sub_view(&it, &op);
		rc = retried_op(c, s, &op, kinds[i], i, &r, &n, &e);
		if (rc < 0 && e.code == TERR_INCOMPLETE_TRANSACTION_HISTORY) {
			/* the history cannot say whether it ran: the whole command
			 * fails, as mongod's */
			terr_move(err, &e);
			ret = -1;
			goto err;
		}
		if (rc == 1)
			rc = run_op(c, s, &op, kinds[i], &ns[ns_idx[i]], has_let ? &let : NULL, bypass, sync, now, &r,
			    &n, &fatal, &e);
		if (rc != 0 && write_error_is_interruption(&e)) {
			write_update_result_clear(&r);
			terr_move(err, &e);
			ret = -1;
			goto err;
		}
		if (rc != 0) {
			write_update_result_clear(&r);
			nerrors++;
			item_error(batch, pos++, i, &e);
			terr_clear(&e);
			if (ordered)
				break;
			continue;
		}
		switch (kinds[i]) {
		case BW_INSERT:
			cnt.inserted += n;
			__atomic_fetch_add(&c->engine->counters.insert, 1, __ATOMIC_RELAXED);
			break;
		case BW_UPDATE:
			if (r.upserted)
				cnt.upserted++;
			else
				cnt.matched += r.n;
			cnt.modified += r.modified;
			__atomic_fetch_add(&c->engine->counters.update, 1, __ATOMIC_RELAXED);
			break;
		default:
			cnt.deleted += n;
			__atomic_fetch_add(&c->engine->counters.delete_, n, __ATOMIC_RELAXED);
			break;
		}
		if (!errors_only)
			item_ok(batch, pos++, i, kinds[i], &r, n);
		write_update_result_clear(&r);
	}

	/* the results are a cursor on admin.$cmd.bulkWrite, as mongod's */
	cmd_ns(cns, sizeof(cns), "admin", "$cmd.bulkWrite");
	if (c->txn_keep_reply) {
		/* a retry answers every result, not only this reply's first batch */
		if (c->txn_kept_results != NULL)
			bson_destroy(c->txn_kept_results);
		c->txn_kept_results = bson_copy(batch);
	}
	cmd_array_source(batch, &src);
	batch = NULL;
	{
		char owner_buf[256];
		copts.owner = cmd_cursor_owner(c, owner_buf);
		ERR(cursor_first_batch(c->engine->cursors, NULL, cns, &src, &copts, c->reply, err));
	}
	BSON_APPEND_INT32(c->reply, "nErrors", (int32_t)nerrors);
	BSON_APPEND_INT32(c->reply, "nInserted", (int32_t)cnt.inserted);
	BSON_APPEND_INT32(c->reply, "nMatched", (int32_t)cnt.matched);
	BSON_APPEND_INT32(c->reply, "nModified", (int32_t)cnt.modified);
	BSON_APPEND_INT32(c->reply, "nUpserted", (int32_t)cnt.upserted);
	BSON_APPEND_INT32(c->reply, "nDeleted", (int32_t)cnt.deleted);
	ret = 0;
err:
	if (batch != NULL)
		bson_destroy(batch);
	/* direct writes to system.views: the views are what it holds now */
	for (i = 0; i < nns; i++)
		if (ns[i].coll != NULL && view_is_system_views(ns[i].coll))
			view_reload(c, ns[i].db);
	for (i = 0; i < nns; i++) {
		if (ns[i].ref != NULL)
			storage_coll_release(ns[i].ref);
		bson_free(ns[i].db);
		bson_free(ns[i].coll);
	}
	bson_free(ns);
	bson_free(kinds);
	bson_free(ns_idx);
	bson_destroy(&let);
	terr_clear(&e);
	return ret;
}
