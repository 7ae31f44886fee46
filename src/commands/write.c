/*
 * write.c -- shared pieces of the write commands (see write.h).
 */
#include "commands/write.h"

#include <pthread.h>
#include <time.h>
#include <string.h>

#include "bson/iter.h"
#include "bson/value.h"
#include "common/log.h"
#include "common/version.h"
#include "repl/replset.h"
#include "expr/expr.h"

int
write_get_coll_in(cmd_t *c, const char *db, const char *name, bool create, storage_coll_t **out,
                  terr_t *err)
{
	storage_session_t *s;
	int tries;

	for (tries = 0; tries < 3; tries++) {
		if (storage_coll_get(c->engine->st, db, name, out, NULL) == 0)
			return 0;
		RET(view_refuse(c, db, name, err));
		if (!create)
			return 0;
		if ((s = client_session(c->client, err)) == NULL)
			return -1;
		if (cmd_in_transaction(c)) {
			/* seen by this transaction only, published by its commit */
			RET(cmd_txn_check_create(c, db, name, err));
			RET(storage_coll_create_in_txn(c->engine->st, s, db, name, NULL, err));
			continue;
		}
		if (storage_coll_create(c->engine->st, s, db, name, NULL, err) != 0) {
			if (err->code != TERR_NAMESPACE_EXISTS)
				return -1;
			terr_clear(err);   /* created concurrently: look it up again */
		}
	}
	return storage_coll_get(c->engine->st, db, name, out, err) == 0 ? 0 :
	    terr_set(err, TERR_INTERNAL_ERROR, "could not create collection %s.%s", db, name);
}

int
write_capped_txn_check(cmd_t *c, const storage_coll_t *coll, bool is_delete, terr_t *err)
{
	if (coll == NULL || !coll->capped || !cmd_in_transaction(c))
		return 0;
	if (is_delete)
		return terr_set(err, TERR_ILLEGAL_OPERATION,
		    "Cannot remove from a capped collection in a multi-document transaction: %s", coll->ns);
	return terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
	    "Collection '%s' is a capped collection. Writes in transactions are not allowed on capped collections.",
	    coll->ns);
}

int
write_get_or_create_coll_in(cmd_t *c, const char *db, const char *name, storage_coll_t **out,
    terr_t *err)
{
	return write_get_coll_in(c, db, name, true, out, err);
}

int
write_get_or_create_coll(cmd_t *c, const char *name, storage_coll_t **out, terr_t *err)
{
	return write_get_or_create_coll_in(c, c->db, name, out, err);
}

void
write_update_result_clear(write_update_result_t *r)
{
	if (r->upserted)
		bson_value_destroy(&r->upserted_id);
	memset(r, 0, sizeof(*r));
}

/* Depth of nested documents/arrays, stopping once past limit. */
static int
depth_of(const bson_t *doc, int depth, int limit)
{
	bson_iter_t it;
	int max = depth;

	if (depth > limit || !bson_iter_init(&it, doc))
		return depth;
	while (bson_iter_next(&it)) {
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub;
			int d;
			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				bson_iter_document(&it, &len, &data);
			else
				bson_iter_array(&it, &len, &data);
			if (!bson_init_static(&sub, data, len))
				continue;
			d = depth_of(&sub, depth + 1, limit);
			if (d > max)
				max = d;
			if (max > limit)
				break;
		}
	}
	return max;
}

/*
 * mongod's storage rule for embedded documents: no '$'-prefixed field name,
 * except a DBRef's leading {$ref: <string>, $id: ..., $db: <string>}.
 * Nested documents and arrays are checked too (below depth 200 the nesting
 * check rejects the document anyway).  Sets 52 "<name> is not valid for
 * storage." and returns -1.
 */
static int
storage_valid_embedded(const bson_t *doc, int depth, terr_t *err)
{
	bson_iter_t it;
	bool first = true;

	if (depth > 200 || !bson_iter_init(&it, doc))
		return 0;
	while (bson_iter_next(&it)) {
		const char *name = bson_iter_key(&it);

		if (name[0] == '$') {
			bson_iter_t next = it;
			if (first && strcmp(name, "$ref") == 0 && BSON_ITER_HOLDS_UTF8(&it) && bson_iter_next(&next) &&
			    strcmp(bson_iter_key(&next), "$id") == 0) {
				it = next;
				first = false;
				if (!bson_iter_next(&it))
					break;
				name = bson_iter_key(&it);
				if (!(strcmp(name, "$db") == 0 && BSON_ITER_HOLDS_UTF8(&it)) && name[0] == '$')
					return terr_set(err, TERR_DOLLAR_PREFIXED_FIELD_NAME, "%s is not valid for storage.",
					    name);
			} else {
				return terr_set(err, TERR_DOLLAR_PREFIXED_FIELD_NAME, "%s is not valid for storage.", name);
			}
		}
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub;
			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				bson_iter_document(&it, &len, &data);
			else
				bson_iter_array(&it, &len, &data);
			if (bson_init_static(&sub, data, len))
				RET(storage_valid_embedded(&sub, depth + 1, err));
		}
		first = false;
	}
	return 0;
}

static int
check_id(const bson_iter_t *id, terr_t *err)
{
	switch (bson_iter_type(id)) {
	case BSON_TYPE_DOCUMENT: {
		const uint8_t *data;
		uint32_t len;
		bson_t sub;
		bson_iter_document(id, &len, &data);
		if (bson_init_static(&sub, data, len) && storage_valid_embedded(&sub, 0, err) != 0) {
			char *m = bson_strdup_printf("_id fields may not contain '$'-prefixed fields: %s",
			    err->msg != NULL ? err->msg : "");
			bson_free(err->msg);
			err->msg = m;
			return -1;
		}
		return 0;
	}
	case BSON_TYPE_ARRAY:
		return terr_set(err, TERR_INVALID_ID_FIELD, "The '_id' value cannot be of type array");
	case BSON_TYPE_REGEX:
		return terr_set(err, TERR_INVALID_ID_FIELD, "can't use a regex for _id");
	case BSON_TYPE_UNDEFINED:
		return terr_set(err, TERR_INVALID_ID_FIELD, "can't use a undefined for _id");
	default:
		return 0;
	}
}

/*
 * Each level of nesting takes at least 7 bytes (type, an empty key's NUL,
 * the sub-document's length and its terminating NUL), so a document shorter
 * than this cannot nest past the limit and its depth need not be walked.
 */
#define NESTING_MIN_LEN (5 + 7 * (TAMGA_MAX_NESTING + 1))

/* write_check_stored_doc without the _id rules. */
static int
check_size_depth(const bson_t *doc, terr_t *err)
{
	if (doc->len > TAMGA_MAX_BSON_SIZE)
		return terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
		    "object to insert too large. size in bytes: %u, max size: %d", doc->len,
		    TAMGA_MAX_BSON_SIZE);
	if (doc->len >= NESTING_MIN_LEN && depth_of(doc, 0, TAMGA_MAX_NESTING) > TAMGA_MAX_NESTING)
		return terr_set(err, TERR_OVERFLOW, "Document exceeds maximum nesting depth of %d",
		    TAMGA_MAX_NESTING);
	return 0;
}

int
write_check_stored_doc(const bson_t *doc, terr_t *err)
{
	bson_iter_t it;

	if (doc->len > TAMGA_MAX_BSON_SIZE)
		return check_size_depth(doc, err);
	if (bson_iter_init_find(&it, doc, "_id"))
		RET(check_id(&it, err));
	return check_size_depth(doc, err);
}

/* The next value for an empty Timestamp(0, 0) an insert fills in, as
 * mongod's fixDocumentForInsert takes from its clock: the current second,
 * and an increment that makes every value handed out unique. */
static void
next_fill_timestamp(uint32_t *t, uint32_t *i)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static uint32_t last_t, last_i;
	uint32_t now = (uint32_t)time(NULL);

	pthread_mutex_lock(&lock);
	if (now > last_t) {
		last_t = now;
		last_i = 0;
	}
	if (last_i == UINT32_MAX) {
		last_t++;
		last_i = 0;
	}
	*t = last_t;
	*i = ++last_i;
	pthread_mutex_unlock(&lock);
}

static bool
is_empty_timestamp(const bson_iter_t *it)
{
	uint32_t t, i;

	if (!BSON_ITER_HOLDS_TIMESTAMP(it))
		return false;
	bson_iter_timestamp(it, &t, &i);
	return t == 0 && i == 0;
}

/* Append it to out, an empty Timestamp(0, 0) replaced by the clock's next
 * value (top-level fields other than _id only, as mongod). */
static void
append_filled(bson_t *out, bson_iter_t *it)
{
	if (is_empty_timestamp(it)) {
		uint32_t t, i;

		next_fill_timestamp(&t, &i);
		bson_append_timestamp(out, bson_iter_key(it), -1, t, i);
	} else {
		bson_append_iter(out, bson_iter_key(it), -1, it);
	}
}

/* Both forms below: out is a copy, or (view) doc's own bytes when it is
 * already in stored form. */
static int
prepare_doc(const bson_t *doc, bson_t *out, bool view, terr_t *err)
{
	bson_iter_t it;
	biter_t b;
	bool has_id = false, id_first = false, first = true, empty_ts = false;

	if (!bson_iter_init(&it, doc))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON document");
	/* the lean walk first (libbson's costs several times more per field);
	 * a document it cannot walk to its end takes libbson's walk below,
	 * which decides as before */
	if (biter_init(&b, bson_get_data(doc), doc->len)) {
		bson_iter_t id;
		uint32_t id_off = 0;
		bool id_seen = false;
		while (biter_next(&b)) {
			if (b.key_len == 3 && memcmp(b.key, "_id", 3) == 0) {
				if (id_seen)
					return terr_set(err, TERR_BAD_VALUE, "can't have multiple _id fields in one document");
				id_seen = true;
				id_first = first;
				id_off = b.off;
			} else if (b.type == BSON_TYPE_TIMESTAMP && b.val_len == 8 &&
			    memcmp(b.val, "\0\0\0\0\0\0\0\0", 8) == 0) {
				empty_ts = true;   /* filled below, as is_empty_timestamp's */
			}
			first = false;
		}
		if (b.next == doc->len - 1) {
			has_id = id_seen;
			if (has_id) {
				if (!bson_iter_init_from_data_at_offset(&id, bson_get_data(doc), doc->len, id_off, 3))
					return terr_set(err, TERR_INVALID_BSON, "invalid BSON document");
				RET(check_id(&id, err));
			}
			goto walked;
		}
		id_first = false;
		first = true;
		empty_ts = false;
	}
	while (bson_iter_next(&it)) {
		if (bson_iter_key_len(&it) == 3 && memcmp(bson_iter_key(&it), "_id", 3) == 0) {
			if (has_id)
				return terr_set(err, TERR_BAD_VALUE, "can't have multiple _id fields in one document");
			has_id = true;
			id_first = first;
			RET(check_id(&it, err));
		} else if (is_empty_timestamp(&it)) {
			empty_ts = true;
		}
		first = false;
	}
walked:
	if (has_id && id_first && view && !empty_ts) {
		bson_destroy(out);   /* an empty initialised bson_t: nothing to lose */
		bson_init_static(out, bson_get_data(doc), doc->len);
	} else if (has_id && id_first && !empty_ts) {
		bson_concat(out, doc);
	} else {
		if (has_id) {
			bson_iter_init_find(&it, doc, "_id");
			bson_append_iter(out, "_id", 3, &it);
		} else {
			bson_oid_t oid;
			bson_oid_init(&oid, NULL);
			BSON_APPEND_OID(out, "_id", &oid);
		}
		bson_iter_init(&it, doc);
		while (bson_iter_next(&it))
			if (strcmp(bson_iter_key(&it), "_id") != 0)
				append_filled(out, &it);
	}
	/* the _id was checked above (or generated) */
	return check_size_depth(out, err);
}

int
write_prepare_doc(const bson_t *doc, bson_t *out, terr_t *err)
{
	return prepare_doc(doc, out, false, err);
}

int
write_prepare_doc_view(const bson_t *doc, bson_t *out, terr_t *err)
{
	return prepare_doc(doc, out, true, err);
}

bool
write_concern_sync(cmd_t *c)
{
	bson_iter_t it, wc;
	bool majority = false;

	if (!cmd_find_field(c, "writeConcern", &it) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &wc))
		return false;
	while (bson_iter_next(&wc)) {
		const char *k = bson_iter_key(&wc);
		if ((strcmp(k, "j") == 0 || strcmp(k, "fsync") == 0) && bson_iter_as_bool(&wc))
			return true;
		/* w: "majority" implies the journal, as on mongod; in a set of
		 * several members the journal that counts is the Raft log, which
		 * the acknowledgment already waits for on a majority (the
		 * primary's included: raft_member.h), so the local commit does
		 * not sync a second time (j: true still does) */
		if (strcmp(k, "w") == 0 && BSON_ITER_HOLDS_UTF8(&wc) &&
		    strcmp(bson_iter_utf8(&wc, NULL), "majority") == 0)
			majority = true;
	}
	return majority && !(c->engine->member != NULL && c->engine->rs != NULL && repl_set_multi_member(c->engine->rs));
}

int
write_common_flags(cmd_t *c, bool *ordered, bool *bypass, terr_t *err)
{
	bool found;

	*ordered = true;
	*bypass = false;
	RET(cmd_get_bool(c, "ordered", ordered, &found, err));
	if (!found)
		*ordered = true;
	RET(cmd_get_bool(c, "bypassDocumentValidation", bypass, &found, err));
	if (!found)
		*bypass = false;
	return 0;
}

bool
write_error_is_interruption(const terr_t *err)
{
	/* error_codes.yml's Interruption category */
	static const int codes[] = {TERR_MAX_TIME_MS_EXPIRED, TERR_INTERRUPTED, 11600, 11602, 279, 46841, 0};

	for (int i = 0; codes[i] != 0; i++)
		if (err->code == codes[i])
			return true;
	return false;
}

void
write_error_append(bson_t *write_errors, int pos, int index, const terr_t *err)
{
	char key[16];
	const char *k;
	bson_t we;
	bson_iter_t it;

	bson_uint32_to_string((uint32_t)pos, &k, key, sizeof(key));
	bson_append_document_begin(write_errors, k, -1, &we);
	BSON_APPEND_INT32(&we, "index", index);
	BSON_APPEND_INT32(&we, "code", err->code);
	if (err->extra != NULL && bson_iter_init(&it, err->extra))
		while (bson_iter_next(&it))
			bson_append_iter(&we, bson_iter_key(&it), -1, &it);
	if (err->info != NULL)
		BSON_APPEND_DOCUMENT(&we, "errInfo", err->info);
	BSON_APPEND_UTF8(&we, "errmsg", err->msg ? err->msg : "");
	bson_append_document_end(write_errors, &we);
}

void
write_log_assertion(const char *op, const terr_t *err)
{
	char buf[32], *extra = NULL, *error;
	bson_t attr;

	if (!tlog_debug_on("WRITE", 3))
		return;
	if (err->extra != NULL && !bson_empty(err->extra))
		extra = bv_doc_to_mongo_string(err->extra);
	error = bson_strdup_printf("%s%s: %s", terr_code_name(err->code, buf), extra != NULL ? extra : "",
	    err->msg != NULL ? err->msg : "");
	bson_init(&attr);
	BSON_APPEND_UTF8(&attr, "operation", op);
	BSON_APPEND_UTF8(&attr, "error", error);
	tlog_debug(3, "WRITE", 20886, "Caught Assertion in finishCurOp", &attr);
	bson_destroy(&attr);
	bson_free(error);
	bson_free(extra);
}

int
write_check_batch_size(int n, terr_t *err)
{
	if (n < 1 || n > TAMGA_MAX_WRITE_BATCH)
		return terr_set(err, TERR_INVALID_LENGTH,
		    "Write batch sizes must be between 1 and %d. Got %d operations.",
		    TAMGA_MAX_WRITE_BATCH, n);
	return 0;
}

int
cmd_get_let(cmd_t *c, bson_t *out, bool *found, terr_t *err)
{
	bson_t view;

	RET(cmd_get_doc(c, "let", &view, found, err));
	if (!*found)
		return 0;
	bson_destroy(out);
	return expr_let_eval(&view, out, err);
}

int
write_batch_args(cmd_t *c, const char *const *known, const char *field, write_batch_t *w,
                 terr_t *err)
{
	bool found;

	RET(cmd_collection_arg(c, &w->coll, err));
	RET(cmd_check_fields(c, known, err));
	RET(cmd_get_array(c, field, &w->stmts, &found, err));
	if (!found)
		return terr_set(err, 40414, "BSON field '%s.%s' is missing but a required field", c->name,
		    field);
	RET(write_common_flags(c, &w->ordered, &w->bypass, err));
	w->nops = (int)bson_count_keys(&w->stmts);
	RET(write_check_batch_size(w->nops, err));
	w->sync = write_concern_sync(c);
	return 0;
}
