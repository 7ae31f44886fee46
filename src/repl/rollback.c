/*
 * rollback.c -- a deposed primary undoes the oplog entries the set never
 * committed (see rollback.h for what, why and how): collect the documents
 * they touched, save the local versions to rollback files, refetch each one
 * from the leader, write them back and cut the oplog at the common point in
 * one transaction, then move WiredTiger's timestamps back.
 */
#include "repl/rollback.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "repl/member_rpc.h"
#include "repl/retryable.h"

#define TERR_UNRECOVERABLE_ROLLBACK 127
#define FETCH_TIMEOUT_MS 10000

/* One document a rolled-back entry touched. */
typedef struct rb_doc {
	char db[128], coll[256];
	uint8_t uuid[16];
	bool has_uuid;
	bool save;                    /* an insert or update: saved to a file when present */
	bson_t *id;                   /* {_id: value} */
	bson_t *fetched;              /* the source's version, NULL: none */
} rb_doc_t;

typedef struct rb_set {
	rb_doc_t *docs;
	size_t n, cap;
	/* a command among the entries (DDL): the documents are still saved,
	 * then the run fails with 127 and the member copies the data again */
	char resync_why[256];
} rb_set_t;

static void
rb_free(rb_set_t *set)
{
	for (size_t i = 0; i < set->n; i++) {
		bson_destroy(set->docs[i].id);
		if (set->docs[i].fetched != NULL)
			bson_destroy(set->docs[i].fetched);
	}
	bson_free(set->docs);
}

/* Add (db.coll, _id) once; `save` sticks once any entry asks for it. */
static int
rb_add(rb_set_t *set, const char *ns, const uint8_t *uuid, const bson_value_t *id, bool save, terr_t *err)
{
	const char *dot = strchr(ns, '.');
	bson_t *key;
	rb_doc_t *d;

	if (dot == NULL || (size_t)(dot - ns) >= sizeof(d->db) || strlen(dot + 1) >= sizeof(d->coll))
		return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "cannot roll back an entry on namespace '%s'", ns);
	key = bson_new();
	bson_append_value(key, "_id", 3, id);
	for (size_t i = 0; i < set->n; i++) {
		d = &set->docs[i];
		if (strncmp(d->db, ns, (size_t)(dot - ns)) == 0 && d->db[dot - ns] == '\0' &&
		    strcmp(d->coll, dot + 1) == 0 && d->id->len == key->len &&
		    memcmp(bson_get_data(d->id), bson_get_data(key), key->len) == 0) {
			d->save = d->save || save;
			bson_destroy(key);
			return 0;
		}
	}
	if (set->n >= REPL_ROLLBACK_MAX_DOCS) {
		bson_destroy(key);
		return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "more than %d documents to roll back",
		    REPL_ROLLBACK_MAX_DOCS);
	}
	if (set->n == set->cap) {
		set->cap = set->cap ? set->cap * 2 : 32;
		set->docs = bson_realloc(set->docs, set->cap * sizeof(*set->docs));
	}
	d = &set->docs[set->n++];
	memset(d, 0, sizeof(*d));
	memcpy(d->db, ns, (size_t)(dot - ns));
	strcpy(d->coll, dot + 1);
	if (uuid != NULL) {
		memcpy(d->uuid, uuid, 16);
		d->has_uuid = true;
	}
	d->save = save;
	d->id = key;
	return 0;
}

/* The _id of a document field (o or o2) of an entry. */
static bool
id_in(const bson_t *e, const char *field, bson_value_t *out)
{
	bson_iter_t it, sub;

	if (!bson_iter_init_find(&it, e, field) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &sub) ||
	    !bson_iter_find(&sub, "_id"))
		return false;
	*out = *bson_iter_value(&sub);
	return true;
}

/* What one entry (or one operation of an applyOps) touched. */
static int
collect_op(rb_set_t *set, const bson_t *e, int depth, terr_t *err)
{
	bson_iter_t it;
	const char *op = "", *ns = "";
	const uint8_t *uuid = NULL;
	bson_value_t id;

	if (bson_iter_init_find(&it, e, "op") && BSON_ITER_HOLDS_UTF8(&it))
		op = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, e, "ns") && BSON_ITER_HOLDS_UTF8(&it))
		ns = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&it, e, "ui") && BSON_ITER_HOLDS_BINARY(&it)) {
		bson_subtype_t st;
		uint32_t len;
		bson_iter_binary(&it, &st, &len, &uuid);
		if (len != 16)
			uuid = NULL;
	}
	/* a retryable write's session row is the source's too */
	if (depth == 0 && bson_iter_init_find(&it, e, "lsid") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_value_t lsid = *bson_iter_value(&it);
		if (rb_add(set, "config.transactions", NULL, &lsid, false, err) != 0)
			return -1;
	}
	switch (op[0]) {
	case 'n': {
		/* a retryable write's reply kept whole (retryable.h): its row in
		 * config.tamga_retry_replies is the source's too, as the session's
		 * config.transactions row is (the note has no lsid of its own: the
		 * row's _id is the lsid), so a retry after the rollback answers
		 * what the set's history holds, not a reply of a write undone */
		bson_t row;
		if (depth == 0 && repl_retryable_reply_of_entry(e, &row) && bson_iter_init_find(&it, &row, "_id")) {
			bson_value_t lsid = *bson_iter_value(&it);
			return rb_add(set, "config." REPL_RETRYABLE_REPLY_TABLE, NULL, &lsid, false, err);
		}
		return 0;
	}
	case 'i':
		if (!id_in(e, "o", &id))
			return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "an insert entry to roll back has no _id");
		return rb_add(set, ns, uuid, &id, true, err);
	case 'u':
		if (!id_in(e, "o2", &id))
			return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "an update entry to roll back has no o2._id");
		return rb_add(set, ns, uuid, &id, true, err);
	case 'd':
		if (!id_in(e, "o", &id))
			return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "a delete entry to roll back has no _id");
		return rb_add(set, ns, uuid, &id, false, err);
	case 'c': {
		bson_iter_t o, ops;
		if (bson_iter_init_find(&it, e, "o") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &o) &&
		    bson_iter_next(&o) && strcmp(bson_iter_key(&o), "applyOps") == 0 && depth == 0) {
			uint32_t len;
			const uint8_t *data;
			/* a transaction's entry, alone or one of a chain (partialTxn,
			 * count): a chain is in the set's log whole or not at all (one
			 * Raft entry, raft_member.c), so every entry of a chain to undo
			 * is past the common point and collected here */
			if (!BSON_ITER_HOLDS_ARRAY(&o) || !bson_iter_recurse(&o, &ops))
				return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "applyOps is not an array");
			while (bson_iter_next(&ops)) {
				bson_t sub;
				if (!BSON_ITER_HOLDS_DOCUMENT(&ops))
					continue;
				bson_iter_document(&ops, &len, &data);
				if (!bson_init_static(&sub, data, len) || collect_op(set, &sub, depth + 1, err) != 0)
					return -1;
			}
			return 0;
		}
		if (set->resync_why[0] == '\0')
			snprintf(set->resync_why, sizeof(set->resync_why), "cannot roll back the command '%s' on %s",
			    bson_iter_init_find(&it, e, "o") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &o) &&
			    bson_iter_next(&o) ? bson_iter_key(&o) : "?", ns);
		return 0;
	}
	default:
		return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "cannot roll back an entry of op '%s'", op);
	}
}

int
repl_rollback_needed(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, repl_ts_t next, repl_ts_t *own,
                     terr_t *err)
{
	return repl_rollback_needed_t(op, s, common, next, -1, own, err);
}

int
repl_rollback_needed_t(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, repl_ts_t next, int64_t next_t,
                       repl_ts_t *own, terr_t *err)
{
	repl_oplog_cursor_t *cur = NULL;
	bson_t e;
	int r, got;

	*own = 0;
	r = repl_oplog_find(op, s, next, &e, err);
	if (r == 0) {
		/* the same ts written by a leader of another term: another
		 * history (a forced reconfig's side), so not the set's entry */
		bson_iter_t it;
		if (next_t >= 0 && bson_iter_init_find(&it, &e, "t") && BSON_ITER_HOLDS_NUMBER(&it) &&
		    bson_iter_as_int64(&it) != next_t)
			r = 1;
		bson_destroy(&e);
	}
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	if (r <= 0)
		return r;   /* the set's entry is here: nothing to undo before it */
	if (repl_oplog_scan_open(op, s, common, &cur, err) != 0)
		return -1;
	got = repl_oplog_cursor_next(cur, &e, err);
	if (got == 1) {
		bson_iter_t it;
		uint32_t secs = 0, inc = 0;
		if (bson_iter_init_find(&it, &e, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it))
			bson_iter_timestamp(&it, &secs, &inc);
		*own = REPL_TS(secs, inc);
	}
	repl_oplog_cursor_close(cur);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return got < 0 ? -1 : got;
}

/* ---- the source ------------------------------------------------------------------------------ */

/* d is a session's config.transactions row. */
static bool
is_txn_row(const rb_doc_t *d)
{
	return strcmp(d->db, "config") == 0 && strcmp(d->coll, "transactions") == 0;
}

/* The session id (_id.id) of a key {_id: lsid}: a view into key. */
static bool
session_id_of(const bson_t *key, bson_value_t *out)
{
	bson_iter_t it, sub;

	if (!bson_iter_init_find(&it, key, "_id") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &sub) ||
	    !bson_iter_find(&sub, "id"))
		return false;
	*out = *bson_iter_value(&sub);
	return true;
}

static bool
same_value(const bson_value_t *a, const bson_value_t *b)
{
	return a->value_type == BSON_TYPE_BINARY && b->value_type == BSON_TYPE_BINARY &&
	       a->value.v_binary.data_len == b->value.v_binary.data_len &&
	       memcmp(a->value.v_binary.data, b->value.v_binary.data, a->value.v_binary.data_len) == 0;
}

/*
 * An entry's lsid is {id} (its session id alone) while the session's
 * config.transactions row is keyed {id, uid}: each such key of set becomes
 * the local row's _id (one scan of the local table), so write_back finds
 * the row it replaces or deletes.  A session without a local row keeps its
 * key (the source's row, if any, is inserted).
 */
static int
resolve_txn_rows(storage_t *st, storage_session_t *s, rb_set_t *set, terr_t *err)
{
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	size_t todo = 0;
	int r, ret = 0;

	for (size_t i = 0; i < set->n; i++)
		todo += is_txn_row(&set->docs[i]);
	if (todo == 0 || storage_coll_get(st, "config", "transactions", &c, NULL) != 0)
		return 0;
	if (storage_scan_open(s, c, false, &cur, err) != 0) {
		storage_coll_release(c);
		return -1;
	}
	while ((r = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		bson_value_t rid, want;
		bson_iter_t it;
		if (!session_id_of(&doc, &rid))
			continue;
		for (size_t i = 0; i < set->n; i++) {
			rb_doc_t *d = &set->docs[i];
			if (!is_txn_row(d) || !session_id_of(d->id, &want) || !same_value(&rid, &want))
				continue;
			bson_iter_init_find(&it, &doc, "_id");
			bson_t *key = bson_new();
			bson_append_value(key, "_id", 3, bson_iter_value(&it));
			bson_destroy(d->id);
			d->id = key;
			break;
		}
	}
	if (r < 0)
		ret = -1;
	storage_cursor_close(cur);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	storage_coll_release(c);
	return ret;
}

/* Fetch d from the source: d->fetched set when it has the document. */
static int
fetch_one(const char *source, rb_doc_t *d, repl_ts_t *min_valid, terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, rp, reply;
	bson_iter_t it, cur, batch;
	bson_value_t sid;
	int ret = 0;

	BSON_APPEND_UTF8(&cmd, "find", d->coll);
	if (is_txn_row(d) && session_id_of(d->id, &sid)) {
		/* an entry's lsid is {id} alone, the row's _id {id, uid}: the
		 * source's row by its session id */
		bson_t f;
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "filter", &f);
		BSON_APPEND_VALUE(&f, "_id.id", &sid);
		bson_append_document_end(&cmd, &f);
	} else {
		BSON_APPEND_DOCUMENT(&cmd, "filter", d->id);
	}
	BSON_APPEND_INT32(&cmd, "limit", 1);
	BSON_APPEND_BOOL(&cmd, "singleBatch", true);
	/* the leader may still be draining before it calls itself PRIMARY */
	BSON_APPEND_DOCUMENT_BEGIN(&cmd, "$readPreference", &rp);
	BSON_APPEND_UTF8(&rp, "mode", "primaryPreferred");
	bson_append_document_end(&cmd, &rp);
	if (repl_member_rpc(source, d->db, &cmd, FETCH_TIMEOUT_MS, &reply, err) != 0) {
		bson_destroy(&cmd);
		return -1;
	}
	bson_destroy(&cmd);
	if (!bson_iter_init_find(&it, &reply, "ok") || bson_iter_as_double(&it) != 1.0) {
		const char *msg = bson_iter_init_find(&it, &reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) ?
		    bson_iter_utf8(&it, NULL) : "";
		int64_t code = bson_iter_init_find(&it, &reply, "code") ? bson_iter_as_int64(&it) : 0;
		/* a namespace the source does not have: no document there */
		if (code == 26)
			goto done;
		/* the source is not (yet) able to answer: another try later; any
		 * other refusal will not change, and the member copies the data */
		ret = terr_set(err, repl_member_rpc_transient(code) ? TERR_HOST_UNREACHABLE : TERR_UNRECOVERABLE_ROLLBACK,
		    "rollback: the sync source %s refused a find on %s.%s: %s (%d)", source, d->db, d->coll, msg, (int)code);
		goto done;
	}
	if (bson_iter_init_find(&it, &reply, "operationTime") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		uint32_t s, i;
		bson_iter_timestamp(&it, &s, &i);
		if (REPL_TS(s, i) > *min_valid)
			*min_valid = REPL_TS(s, i);
	}
	if (bson_iter_init_find(&it, &reply, "cursor") && bson_iter_recurse(&it, &cur) &&
	    bson_iter_find(&cur, "firstBatch") && bson_iter_recurse(&cur, &batch) && bson_iter_next(&batch) &&
	    BSON_ITER_HOLDS_DOCUMENT(&batch)) {
		uint32_t len;
		const uint8_t *data;
		bson_iter_document(&batch, &len, &data);
		d->fetched = bson_new_from_data(data, len);
	}
done:
	bson_destroy(&reply);
	return ret;
}

/* ---- rollback files ------------------------------------------------------------------------- */

static void
uuid_str(const uint8_t *u, char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
	    u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int
mkdir_p(const char *path)
{
	return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Append doc to the rollback file of uuid (opened on first use). */
typedef struct rb_file {
	uint8_t uuid[16];
	int fd;
} rb_file_t;

static int
save_doc(const char *dbpath, rb_file_t *files, int *nfiles, int max, const uint8_t *uuid, const bson_t *doc,
         terr_t *err)
{
	static int num;
	rb_file_t *f = NULL;
	char dir[4096], path[4200], us[37], when[32];

	for (int i = 0; i < *nfiles; i++)
		if (memcmp(files[i].uuid, uuid, 16) == 0)
			f = &files[i];
	if (f == NULL) {
		struct timespec now;
		struct tm tm;
		if (*nfiles >= max)
			return terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "too many collections to roll back");
		uuid_str(uuid, us);
		snprintf(dir, sizeof(dir), "%s/rollback", dbpath);
		if (mkdir_p(dir) != 0)
			return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", dir, strerror(errno));
		snprintf(dir, sizeof(dir), "%s/rollback/%s", dbpath, us);
		if (mkdir_p(dir) != 0)
			return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", dir, strerror(errno));
		/* mongod's RemoveSaver: removed.<terse UTC time>.<n>.bson */
		clock_gettime(CLOCK_REALTIME, &now);
		gmtime_r(&now.tv_sec, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H-%M-%S", &tm);
		snprintf(path, sizeof(path), "%s/removed.%s.%d.bson", dir, when, num++);
		f = &files[(*nfiles)++];
		memcpy(f->uuid, uuid, 16);
		f->fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (f->fd < 0) {
			(*nfiles)--;
			return terr_set(err, TERR_INTERNAL_ERROR, "cannot create %s: %s", path, strerror(errno));
		}
	}
	if (write(f->fd, bson_get_data(doc), doc->len) != (ssize_t)doc->len)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot write a rollback file: %s", strerror(errno));
	return 0;
}

/* ---- the run ------------------------------------------------------------------------------------- */

static int
write_back(const repl_rollback_args_t *a, rb_set_t *set, repl_rollback_stats_t *out, terr_t *err)
{
	storage_session_t *s = a->s;
	bool was = storage_thread_set_unobserved(true);
	int ret = 0;

	if (storage_txn_begin(s, err) != 0) {
		storage_thread_set_unobserved(was);
		return -1;
	}
	for (size_t i = 0; ret == 0 && i < set->n; i++) {
		rb_doc_t *d = &set->docs[i];
		storage_coll_t *c = NULL;
		bson_iter_t id;
		recid_t rid;
		bson_t cur, old;
		int r;
		if (storage_coll_get(a->st, d->db, d->coll, &c, NULL) != 0)
			continue;   /* dropped by the set meanwhile: its entries will say */
		bson_iter_init_find(&id, d->id, "_id");
		r = storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err);
		if (r < 0) {
			ret = -1;
		} else if (r == 0) {
			bson_copy_to(&cur, &old);
			ret = d->fetched != NULL ? storage_doc_update(s, c, rid, &old, d->fetched, err) :
			    storage_doc_delete(s, c, rid, &old, err);
			bson_destroy(&old);
		} else if (d->fetched != NULL) {
			ret = storage_doc_insert(s, c, d->fetched, NULL, err);
		}
		storage_coll_release(c);
	}
	if (ret == 0)
		ret = repl_oplog_remove_after(a->oplog, s, a->common, &out->entries, err);
	if (ret == 0)
		ret = storage_txn_commit(s, true, err);
	else
		storage_txn_rollback(s);
	storage_thread_set_unobserved(was);
	return ret;
}

/* Step 1: what the entries after common touched, into set. */
static int
collect_all(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, rb_set_t *set, terr_t *err)
{
	repl_oplog_cursor_t *cur = NULL;
	bson_t e;
	int r, ret = 0;

	if (repl_oplog_scan_open(op, s, common, &cur, err) != 0)
		return -1;
	while ((r = repl_oplog_cursor_next(cur, &e, err)) == 1)
		if ((ret = collect_op(set, &e, 0, err)) != 0)
			break;
	repl_oplog_cursor_close(cur);
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	return r < 0 ? -1 : ret;
}

int
repl_rollback_plan(repl_oplog_t *op, storage_session_t *s, repl_ts_t common, bson_t *out, terr_t *err)
{
	rb_set_t set = {0};
	int ret = collect_all(op, s, common, &set, err);

	bson_init(out);
	for (size_t i = 0; ret == 0 && i < set.n; i++) {
		char buf[16], ns[400];
		const char *key;
		bson_t d;
		bson_iter_t id;
		bson_uint32_to_string((uint32_t)i, &key, buf, sizeof(buf));
		snprintf(ns, sizeof(ns), "%s.%s", set.docs[i].db, set.docs[i].coll);
		bson_iter_init_find(&id, set.docs[i].id, "_id");
		BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
		BSON_APPEND_UTF8(&d, "ns", ns);
		BSON_APPEND_VALUE(&d, "_id", bson_iter_value(&id));
		BSON_APPEND_BOOL(&d, "save", set.docs[i].save);
		bson_append_document_end(out, &d);
	}
	rb_free(&set);
	return ret;
}

int
repl_rollback_run(const repl_rollback_args_t *a, repl_rollback_stats_t *out, terr_t *err)
{
	rb_set_t set = {0};
	rb_file_t files[256];
	int nfiles = 0, ret = 0, r;

	memset(out, 0, sizeof(*out));
	/* 1. what the entries after the common point touched */
	ret = collect_all(a->oplog, a->s, a->common, &set, err);
	if (ret == 0)
		ret = resolve_txn_rows(a->st, a->s, &set, err);
	/* 2. the source's versions, then the local ones saved */
	for (size_t i = 0; ret == 0 && i < set.n; i++) {
		ret = fetch_one(a->source, &set.docs[i], &out->min_valid, err);
		out->docs++;
	}
	for (size_t i = 0; ret == 0 && i < set.n; i++) {
		rb_doc_t *d = &set.docs[i];
		storage_coll_t *c = NULL;
		bson_iter_t id;
		recid_t rid;
		bson_t doc;
		if (!d->save || !d->has_uuid || storage_coll_get(a->st, d->db, d->coll, &c, NULL) != 0)
			continue;
		bson_iter_init_find(&id, d->id, "_id");
		r = storage_doc_find_id(a->s, c, bson_iter_value(&id), &rid, &doc, err);
		if (r == 0) {
			ret = save_doc(a->dbpath, files, &nfiles, (int)(sizeof(files) / sizeof(files[0])), d->uuid, &doc,
			    err);
			if (ret == 0)
				out->saved++;
		} else if (r < 0) {
			ret = -1;
		}
		storage_coll_release(c);
		if (storage_txn_active(a->s))
			storage_txn_rollback(a->s);
	}
	for (int i = 0; i < nfiles; i++) {
		if (ret == 0 && fsync(files[i].fd) != 0)
			ret = terr_set(err, TERR_INTERNAL_ERROR, "cannot sync a rollback file: %s", strerror(errno));
		close(files[i].fd);
	}
	if (ret == 0 && set.resync_why[0] != '\0')
		ret = terr_set(err, TERR_UNRECOVERABLE_ROLLBACK, "%s", set.resync_why);
	/* 3. write back and cut the oplog; 4. timestamps */
	if (ret == 0)
		ret = write_back(a, &set, out, err);
	if (ret == 0)
		ret = repl_oplog_rollback_reset(a->oplog, a->common, err);
	rb_free(&set);
	return ret;
}

/* ---- the rollback id ----------------------------------------------------------------------------- */

static int
rbid_once(storage_t *st, storage_session_t *s, bool bump, int32_t *out, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_t key = BSON_INITIALIZER, cur, doc = BSON_INITIALIZER;
	bson_iter_t id, f;
	recid_t rid;
	int32_t n = 1;
	int r, ret = 0;

	if (storage_coll_get(st, "local", "system.rollback.id", &c, NULL) != 0) {
		if (storage_coll_create(st, s, "local", "system.rollback.id", NULL, err) != 0 &&
		    err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
		if (storage_coll_get(st, "local", "system.rollback.id", &c, err) != 0)
			return -1;
	}
	BSON_APPEND_UTF8(&key, "_id", "rollbackId");
	bson_iter_init_find(&id, &key, "_id");
	if (storage_txn_begin(s, err) != 0) {
		storage_coll_release(c);
		bson_destroy(&key);
		return -1;
	}
	r = storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err);
	if (r == 0 && bson_iter_init_find(&f, &cur, "rollbackId") && BSON_ITER_HOLDS_NUMBER(&f))
		n = (int32_t)bson_iter_as_int64(&f);
	if (bump)
		n = n == INT32_MAX ? 0 : n + 1;
	BSON_APPEND_UTF8(&doc, "_id", "rollbackId");
	BSON_APPEND_INT32(&doc, "rollbackId", n);
	if (r < 0) {
		ret = -1;
	} else if (r == 0 && bump) {
		bson_t old;
		bson_copy_to(&cur, &old);
		ret = storage_doc_update(s, c, rid, &old, &doc, err);
		bson_destroy(&old);
	} else if (r != 0) {
		ret = storage_doc_insert(s, c, &doc, NULL, err);
	}
	if (ret == 0)
		ret = storage_txn_commit(s, bump, err);
	else
		storage_txn_rollback(s);
	storage_coll_release(c);
	bson_destroy(&key);
	bson_destroy(&doc);
	if (ret == 0)
		*out = n;
	return ret;
}

int
repl_rollback_id(storage_t *st, storage_session_t *s, bool bump, int32_t *out, terr_t *err)
{
	bool was = storage_thread_set_unobserved(true);
	int ret = rbid_once(st, s, bump, out, err);

	/* two first readers may both insert: the loser reads the winner's */
	if (ret != 0 && (err->code == TERR_DUPLICATE_KEY || err->code == 112 /* WriteConflict */)) {
		terr_clear(err);
		ret = rbid_once(st, s, bump, out, err);
	}
	storage_thread_set_unobserved(was);
	return ret;
}

/* ---- a saver for documents rolled back elsewhere (rollback.h) ------------------------------ */

struct repl_rollback_saver {
	char *dbpath;
	rb_file_t files[256];
	int nfiles;
};

repl_rollback_saver_t *
repl_rollback_saver_new(const char *dbpath)
{
	repl_rollback_saver_t *sv = bson_malloc0(sizeof(*sv));

	sv->dbpath = bson_strdup(dbpath);
	return sv;
}

int
repl_rollback_saver_add(repl_rollback_saver_t *sv, const uint8_t uuid[16], const bson_t *doc, terr_t *err)
{
	return save_doc(sv->dbpath, sv->files, &sv->nfiles, (int)(sizeof(sv->files) / sizeof(sv->files[0])), uuid, doc,
	    err);
}

int
repl_rollback_saver_free(repl_rollback_saver_t *sv, terr_t *err)
{
	int ret = 0;

	if (sv == NULL)
		return 0;
	for (int i = 0; i < sv->nfiles; i++) {
		if (ret == 0 && fsync(sv->files[i].fd) != 0)
			ret = terr_set(err, TERR_INTERNAL_ERROR, "cannot sync a rollback file: %s", strerror(errno));
		close(sv->files[i].fd);
	}
	bson_free(sv->dbpath);
	bson_free(sv);
	return ret;
}

