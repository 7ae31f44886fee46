/*
 * cmd_tools.c -- the server commands tools and test harnesses run to look at
 * data, as mongod answers them (issue 22 item 7): dataSize, dbHash, filemd5,
 * getDiagnosticData and applyOps.
 *
 * dbHash hashes each collection's documents in _id order (natural order for
 * a collection without an _id index), as mongod does, so two servers holding
 * the same data agree; the hash is MD5 over the documents' BSON bytes, and
 * the database's md5 is MD5 over each collection's name and hex digest.
 * filemd5 is MD5 over a GridFS file's chunks in n order.  applyOps applies
 * insert, update (a modifier or replacement document, or the oplog's `$v: 2`
 * diff, applied to the stored document), delete, no-op and command entries one by one through the ordinary
 * command path (validation bypassed, as mongod's oplog application), and
 * reports each one's success.  `preCondition` is typed and otherwise
 * ignored, as 9.0's applyOps no longer reads it; the batch is applied one
 * by one (mongod 9.0's applyOps has no atomic mode).
 */
#include "commands/commands_private.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "common/opctx.h"
#include "common/version.h"
#include "query/match.h"
#include "query/plan.h"

/* ---- shared ------------------------------------------------------------- */

static void
md5_hex(EVP_MD_CTX *ctx, char out[33])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	EVP_DigestFinal_ex(ctx, d, &n);
	for (unsigned int i = 0; i < n && i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
	out[32] = '\0';
}

/* "db.coll" into db and coll (buffers of len); 73 InvalidNamespace when
 * either part is empty. */
static int
split_ns(const char *ns, char *db, char *coll, size_t len, terr_t *err)
{
	const char *dot = strchr(ns, '.');

	if (dot == NULL || dot == ns || dot[1] == '\0' || (size_t)(dot - ns) >= len ||
	    strlen(dot + 1) >= len)
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace specified '%s'", ns);
	memcpy(db, ns, (size_t)(dot - ns));
	db[dot - ns] = '\0';
	strcpy(coll, dot + 1);
	return 0;
}

/* mongod's BSONObjBuilder::appendNumber(long long): an int when it fits */
static void
append_number(bson_t *b, const char *k, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(b, k, (int32_t)v);
	else
		BSON_APPEND_INT64(b, k, v);
}

/* ---- dataSize ----------------------------------------------------------- */

static const char *const data_size_fields[] = {"keyPattern", "min", "max", "estimate", "maxSize",
	"maxObjects", NULL};

/*
 * findShardKeyPrefixedIndex(keyPattern, requireSingleKey): an index whose
 * key pattern starts with kp's fields and directions and that holds every
 * document once (not multikey, sparse, partial or hidden, simple
 * collation, no special key types); NULL when none.
 */
static const storage_index_t *
prefixed_index(const storage_coll_t *coll, const bson_t *kp)
{
	for (int i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bson_iter_t a, b;
		bool ok = !ix->multikey && !ix->sparse && !ix->partial && !ix->hidden && ix->collation == NULL &&
		    !ix->wildcard;

		if (!ok || !bson_iter_init(&a, ix->key) || !bson_iter_init(&b, kp))
			continue;
		while (ok && bson_iter_next(&b)) {
			ok = bson_iter_next(&a) && strcmp(bson_iter_key(&a), bson_iter_key(&b)) == 0 &&
			    BSON_ITER_HOLDS_NUMBER(&a) && BSON_ITER_HOLDS_NUMBER(&b) &&
			    (bson_iter_as_double(&a) < 0) == (bson_iter_as_double(&b) < 0);
		}
		if (!ok)
			continue;
		while (ok && bson_iter_next(&a))
			ok = BSON_ITER_HOLDS_NUMBER(&a);
		if (ok)
			return ix;
	}
	return NULL;
}

/*
 * KeyPattern::extendRangeBound(bound, false): bound's fields must be the
 * pattern's leading ones, in order (16649 "keyPattern doesn't match bound",
 * 16634 for another name); the missing ones are appended as MinKey
 * (ascending) or MaxKey (descending).  out initialised by the caller.
 */
static int
extend_bound(const bson_t *pattern, const bson_t *bound, bson_t *out, terr_t *err)
{
	bson_iter_t pat, src;

	bson_iter_init(&pat, pattern);
	bson_iter_init(&src, bound);
	while (bson_iter_next(&src)) {
		if (!bson_iter_next(&pat))
			return terr_set(err, 16649, "keyPattern doesn't match bound");
		if (strcmp(bson_iter_key(&src), bson_iter_key(&pat)) != 0) {
			char *b = bv_doc_to_mongo_string(bound), *p = bv_doc_to_mongo_string(pattern);

			terr_set(err, 16634, "field names of bound %s do not match those of keyPattern %s", b, p);
			bson_free(b);
			bson_free(p);
			return -1;
		}
		bson_append_iter(out, NULL, 0, &src);
	}
	while (bson_iter_next(&pat)) {
		if (BSON_ITER_HOLDS_NUMBER(&pat) && bson_iter_as_double(&pat) < 0)
			BSON_APPEND_MAXKEY(out, bson_iter_key(&pat));
		else
			BSON_APPEND_MINKEY(out, bson_iter_key(&pat));
	}
	return 0;
}

/*
 * dataSize, as mongod 9.0's CmdDataSize: min and max both or neither (2),
 * a missing or empty collection answers zeros; without bounds the whole
 * collection (estimate: its stored data size); with them the documents in
 * [min, max) of an index that keyPattern (or min's fields) prefixes, found
 * as findShardKeyPrefixedIndex does (96 "Couldn't find valid index
 * containing key pattern"), the bounds extended with MinKey/MaxKey to the
 * index's fields; estimate counts the average document size for each;
 * maxSize / maxObjects stop the count once passed (maxReached: true).
 */
CMD_HANDLER(cmd_data_size)
{
	char db[256], coll_name[256];
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	storage_cursor_t *cur = NULL;
	plan_exec_t *x = NULL;
	bson_t doc, min, max, kp, emin = BSON_INITIALIZER, emax = BSON_INITIALIZER;
	bool has_min, has_max, has_kp, estimate = false, found, max_reached = false;
	int64_t size = 0, n = 0, t0 = tm_now_us(), max_size = 0, max_objects = 0, records = 0, data = 0, avg;
	int ret = -1, rc;

	if (!BSON_ITER_HOLDS_UTF8(&c->first))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field 'dataSize.dataSize' is the wrong type '%s', expected type 'string'",
		    bv_type_name(bson_iter_type(&c->first)));
	RET(cmd_check_fields(c, data_size_fields, err));
	RET(cmd_get_doc(c, "keyPattern", &kp, &has_kp, err));
	RET(cmd_get_doc(c, "min", &min, &has_min, err));
	RET(cmd_get_doc(c, "max", &max, &has_max, err));
	RET(cmd_get_bool(c, "estimate", &estimate, &found, err));
	RET(cmd_get_int64(c, "maxSize", &max_size, &found, err));
	RET(cmd_get_int64(c, "maxObjects", &max_objects, &found, err));
	if (has_min != has_max)
		return terr_set(err, TERR_BAD_VALUE, "Max must %sbe set if min is %sset.", has_min ? "" : "not ",
		    has_min ? "" : "not ");
	RET(split_ns(bson_iter_utf8(&c->first, NULL), db, coll_name, sizeof db, err));
	if (storage_coll_get(c->engine->st, db, coll_name, &coll, NULL) != 0) {
		BSON_APPEND_INT32(c->reply, "size", 0);
		BSON_APPEND_INT32(c->reply, "numObjects", 0);
		BSON_APPEND_INT32(c->reply, "millis", 0);
		return 0;
	}
	if ((s = client_session(c->client, err)) == NULL)
		goto err;
	ERR(storage_coll_stats(c->engine->st, s, coll, &records, &data, NULL, err));
	if (records == 0) {
		append_number(c->reply, "size", 0);
		append_number(c->reply, "numObjects", 0);
		append_number(c->reply, "millis", (tm_now_us() - t0) / 1000);
		ret = 0;
		goto err;
	}
	has_min = has_min && !bson_empty(&min);
	has_max = has_max && !bson_empty(&max);
	if (has_min != has_max) {
		ret = terr_set(err, TERR_BAD_VALUE, "Only one of min or max specified");
		goto err;
	}
	avg = data / records;
	if (!has_min) {
		if (estimate) {
			BSON_APPEND_BOOL(c->reply, "estimate", true);
			append_number(c->reply, "size", data);
			append_number(c->reply, "numObjects", records);
			append_number(c->reply, "millis", (tm_now_us() - t0) / 1000);
			ret = 0;
			goto err;
		}
		ERR(storage_scan_open(s, coll, false, &cur, err));
	} else {
		plan_request_t req;
		bson_t inferred = BSON_INITIALIZER;
		const storage_index_t *ix;
		bson_value_t hint;

		if (!has_kp || bson_empty(&kp)) {
			/* Helpers::inferKeyPattern: min's fields, ascending */
			bson_iter_t f;

			bson_iter_init(&f, &min);
			while (bson_iter_next(&f))
				BSON_APPEND_INT32(&inferred, bson_iter_key(&f), 1);
		} else {
			bson_concat(&inferred, &kp);
		}
		ix = prefixed_index(coll, &inferred);
		bson_destroy(&inferred);
		if (ix == NULL) {
			ret = terr_set(err, 96, "Couldn't find valid index containing key pattern");
			goto err;
		}
		ERR(extend_bound(ix->key, &min, &emin, err));
		ERR(extend_bound(ix->key, &max, &emax, err));
		memset(&req, 0, sizeof req);
		hint.value_type = BSON_TYPE_DOCUMENT;
		hint.value.v_doc.data = (uint8_t *)bson_get_data(ix->key);
		hint.value.v_doc.data_len = ix->key->len;
		req.coll = coll;
		req.borrow = true;
		req.hint = &hint;
		req.min = &emin;
		req.max = &emax;
		ERR(plan_exec_new(&req, &x, err));
	}
	for (;;) {
		rc = x != NULL ? plan_exec_next(x, s, &doc, err) : storage_cursor_next(cur, NULL, &doc, NULL, NULL, err);
		if (rc < 0)
			goto scan_err;
		if (rc == 0)
			break;
		size += estimate ? avg : (int64_t)doc.len;
		n++;
		if ((max_size > 0 && size > max_size) || (max_objects > 0 && n > max_objects)) {
			max_reached = true;
			break;
		}
		if ((n & 1023) == 0 && cmd_check_deadline(c, err))
			goto scan_err;
	}
	BSON_APPEND_BOOL(c->reply, "estimate", estimate);
	append_number(c->reply, "size", size);
	append_number(c->reply, "numObjects", n);
	append_number(c->reply, "millis", (tm_now_us() - t0) / 1000);
	if (max_reached)
		BSON_APPEND_BOOL(c->reply, "maxReached", true);
	ret = 0;
	goto err;
scan_err:
	/* mongod's context for what the scan raised */
	terr_wrap(err, "Executor error while reading during dataSize command");
err:
	plan_exec_free(x);
	storage_cursor_close(cur);
	storage_coll_release(coll);
	bson_destroy(&emin);
	bson_destroy(&emax);
	return ret;
}

/* ---- dbHash ------------------------------------------------------------- */

/* MD5 of coll's documents in _id order into hex. */
static int
hash_collection(cmd_t *c, storage_session_t *s, storage_coll_t *coll, char hex[33], terr_t *err)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	storage_cursor_t *cur = NULL;
	const storage_index_t *id = NULL;
	int ret = -1, rc;
	int64_t n = 0;

	for (int i = 0; i < coll->nindexes; i++)
		if (strcmp(coll->indexes[i].name, "_id_") == 0)
			id = &coll->indexes[i];
	EVP_DigestInit_ex(ctx, EVP_md5(), NULL);
	if (id != NULL && !coll->capped)
		ERR(storage_index_scan_open(s, coll, id, NULL, 0, true, NULL, 0, true, false, &cur, err));
	else
		ERR(storage_scan_open(s, coll, false, &cur, err));
	for (;;) {
		recid_t rid;
		bson_t doc;
		const uint8_t *key;
		size_t klen;

		rc = storage_cursor_next(cur, &rid, &doc, &key, &klen, err);
		if (rc < 0)
			goto err;
		if (rc == 0)
			break;
		if (id != NULL && !coll->capped) {
			rc = storage_doc_get(s, coll, rid, &doc, err);
			if (rc < 0)
				goto err;
			if (rc == 1)
				continue;
		}
		EVP_DigestUpdate(ctx, bson_get_data(&doc), doc.len);
		if ((++n & 1023) == 0 && cmd_check_deadline(c, err))
			goto err;
	}
	md5_hex(ctx, hex);
	ret = 0;
err:
	storage_cursor_close(cur);
	EVP_MD_CTX_free(ctx);
	return ret;
}

static bool
name_listed(const bson_t *list, const char *name)
{
	bson_iter_t it;

	if (list == NULL)
		return true;
	if (!bson_iter_init(&it, list))
		return false;
	while (bson_iter_next(&it))
		if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), name) == 0)
			return true;
	return false;
}

static const char *const db_hash_fields[] = {"collections", "skipTempCollections", NULL};

CMD_HANDLER(cmd_db_hash)
{
	storage_coll_t **colls = NULL;
	storage_session_t *s;
	bson_t list, hashes, uuids, capped;
	bool has_list = false;
	int ncolls = 0, ret = -1, ncapped = 0;
	int64_t t0 = tm_now_us();
	EVP_MD_CTX *all = NULL;
	char hex[33];

	RET(cmd_check_fields(c, db_hash_fields, err));
	RET(cmd_get_array(c, "collections", &list, &has_list, err));
	if (has_list) {
		bson_iter_t it;

		bson_iter_init(&it, &list);
		while (bson_iter_next(&it))
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_BAD_VALUE,
				    "collections entries have to be strings");
	}
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	RET(storage_list_colls(c->engine->st, c->db, &colls, &ncolls, err));
	all = EVP_MD_CTX_new();
	EVP_DigestInit_ex(all, EVP_md5(), NULL);
	bson_init(&hashes);
	bson_init(&uuids);
	bson_init(&capped);
	for (int i = 0; i < ncolls; i++) {
		storage_coll_t *k = colls[i];

		if (!name_listed(has_list ? &list : NULL, k->name) || strcmp(k->name, "system.profile") == 0)
			continue;
		ERR(hash_collection(c, s, k, hex, err));
		BSON_APPEND_UTF8(&hashes, k->name, hex);
		BSON_APPEND_BINARY(&uuids, k->name, BSON_SUBTYPE_UUID, k->uuid, 16);
		if (k->capped) {
			char key[16];

			bv_array_key((uint32_t)ncapped++, key);
			BSON_APPEND_UTF8(&capped, key, k->name);
		}
		EVP_DigestUpdate(all, k->name, strlen(k->name));
		EVP_DigestUpdate(all, hex, 32);
	}
	md5_hex(all, hex);
	BSON_APPEND_UTF8(c->reply, "host", "localhost");
	BSON_APPEND_DOCUMENT(c->reply, "collections", &hashes);
	BSON_APPEND_ARRAY(c->reply, "capped", &capped);
	BSON_APPEND_DOCUMENT(c->reply, "uuids", &uuids);
	BSON_APPEND_UTF8(c->reply, "md5", hex);
	BSON_APPEND_INT64(c->reply, "timeMillis", (tm_now_us() - t0) / 1000);
	ret = 0;
err:
	bson_destroy(&hashes);
	bson_destroy(&uuids);
	bson_destroy(&capped);
	EVP_MD_CTX_free(all);
	for (int i = 0; i < ncolls; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);
	return ret;
}

/* ---- filemd5 ------------------------------------------------------------ */

/* a chunk's n and RecordId: the data is read again in n order, so a
 * large file is never held in memory */
typedef struct chunk {
	int64_t n;
	recid_t rid;
} chunk_t;

static int
chunk_cmp(const void *a, const void *b)
{
	const chunk_t *x = a, *y = b;

	return x->n < y->n ? -1 : x->n > y->n;
}

static const char *const filemd5_fields[] = {"root", "partialOk", "startAt", "md5state", NULL};

CMD_HANDLER(cmd_filemd5)
{
	const char *root = "fs";
	char chunks_name[300];
	storage_coll_t *coll = NULL;
	storage_session_t *s;
	storage_cursor_t *cur = NULL;
	chunk_t *ch = NULL;
	size_t nch = 0, cap = 0;
	const bson_value_t *id = bson_iter_value(&c->first);
	EVP_MD_CTX *ctx = NULL;
	bool found;
	int ret = -1, rc;
	char hex[33];
	bson_t doc;

	RET(cmd_check_fields(c, filemd5_fields, err));
	RET(cmd_get_string(c, "root", &root, &found, err));
	snprintf(chunks_name, sizeof chunks_name, "%s.chunks", root);
	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	if (storage_coll_get(c->engine->st, c->db, chunks_name, &coll, NULL) == 0) {
		ERR(storage_scan_open(s, coll, false, &cur, err));
		recid_t rid;

		while ((rc = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
			bson_iter_t it;
			int64_t n;

			if (!bson_iter_init_find(&it, &doc, "files_id") || !bv_equal(bson_iter_value(&it), id))
				continue;
			if (!bson_iter_init_find(&it, &doc, "n") || !BSON_ITER_HOLDS_NUMBER(&it)) {
				ret = terr_set(err, TERR_BAD_VALUE, "chunk n must be a number");
				goto err;
			}
			n = bson_iter_as_int64(&it);
			if (nch == cap) {
				cap = cap ? cap * 2 : 16;
				ch = bson_realloc(ch, cap * sizeof *ch);
			}
			ch[nch].n = n;
			ch[nch].rid = rid;
			nch++;
			if ((nch & 255) == 0 && cmd_check_deadline(c, err))
				goto err;
		}
		if (rc < 0)
			goto err;
	}
	storage_cursor_close(cur);
	cur = NULL;
	qsort(ch, nch, sizeof *ch, chunk_cmp);
	ctx = EVP_MD_CTX_new();
	EVP_DigestInit_ex(ctx, EVP_md5(), NULL);
	for (size_t i = 0; i < nch; i++) {
		bson_iter_t it;
		const uint8_t *data;
		uint32_t len;
		bson_subtype_t sub;

		if (ch[i].n != (int64_t)i) {
			ret = terr_set(err, 20, "chunk missing; expected %zu, got %lld", i, (long long)ch[i].n);
			goto err;
		}
		rc = storage_doc_get(s, coll, ch[i].rid, &doc, err);
		if (rc < 0)
			goto err;
		if (rc == 1 || !bson_iter_init_find(&it, &doc, "data") || !BSON_ITER_HOLDS_BINARY(&it)) {
			ret = terr_set(err, 10066, "chunk data must be binData");
			goto err;
		}
		bson_iter_binary(&it, &sub, &len, &data);
		EVP_DigestUpdate(ctx, data, len);
		if ((i & 255) == 255 && cmd_check_deadline(c, err))
			goto err;
	}
	md5_hex(ctx, hex);
	append_number(c->reply, "numChunks", (int64_t)nch);
	BSON_APPEND_UTF8(c->reply, "md5", hex);
	ret = 0;
err:
	bson_free(ch);
	EVP_MD_CTX_free(ctx);
	storage_cursor_close(cur);
	storage_coll_release(coll);
	return ret;
}

/* ---- getDiagnosticData -------------------------------------------------- */

CMD_HANDLER(cmd_get_diagnostic_data)
{
	bson_t cmd = BSON_INITIALIZER, ss, data;
	int64_t now = (int64_t)time(NULL) * 1000;
	int rc;

	BSON_APPEND_INT32(&cmd, "serverStatus", 1);
	rc = engine_run_command(c->engine, c->client, "admin", &cmd, &ss, NULL);
	bson_destroy(&cmd);
	if (rc != 0) {
		bson_destroy(&ss);
		return terr_set(err, rc, "serverStatus failed");
	}
	BSON_APPEND_DOCUMENT_BEGIN(c->reply, "data", &data);
	BSON_APPEND_DATE_TIME(&data, "start", now);
	BSON_APPEND_DOCUMENT(&data, "serverStatus", &ss);
	BSON_APPEND_DATE_TIME(&data, "end", now);
	bson_append_document_end(c->reply, &data);
	bson_destroy(&ss);
	return 0;
}

/* ---- applyOps ----------------------------------------------------------- */

/*
 * Apply a `$v: 2` diff (repl/oplog_diff.h) to doc into out, as mongod's
 * doc_diff applier: a document's fields in their order, d dropping, u
 * replacing, s<field> applying a sub diff, then the i fields appended; an
 * array resized to l first (cut, or grown with nulls), then u<index>
 * setting and s<index> applying a sub diff at that index.
 */
static int apply_diff_value(const bson_iter_t *cur, const bson_t *diff, bson_t *out, const char *key,
                            int depth, terr_t *err);

static bool
diff_sub(const bson_t *diff, const char *section, const char *field, bson_iter_t *out)
{
	bson_iter_t it;

	if (!bson_iter_init_find(&it, diff, section) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	return bson_iter_recurse(&it, out) && bson_iter_find(out, field);
}

static void
iter_doc(const bson_iter_t *it, bson_t *d)
{
	const uint8_t *data;
	uint32_t len;

	if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &len, &data);
	else
		bson_iter_document(it, &len, &data);
	bson_init_static(d, data, len);
}

static int
apply_doc_diff(const bson_t *doc, const bson_t *diff, bson_t *out, int depth, terr_t *err)
{
	bson_iter_t it, f, ins;
	char skey[1100];

	if (depth > 100)
		return terr_set(err, TERR_BAD_VALUE, "diff nested too deeply");
	if (!bson_iter_init(&it, doc))
		return terr_set(err, TERR_BAD_VALUE, "malformed document");
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);

		if (diff_sub(diff, "d", k, &f))
			continue;
		if (diff_sub(diff, "u", k, &f)) {
			bson_append_value(out, k, -1, bson_iter_value(&f));
			continue;
		}
		snprintf(skey, sizeof skey, "s%s", k);
		if (bson_iter_init_find(&f, diff, skey) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
			bson_t sub;

			iter_doc(&f, &sub);
			RET(apply_diff_value(&it, &sub, out, k, depth + 1, err));
			continue;
		}
		bson_append_iter(out, k, -1, &it);
	}
	if (bson_iter_init_find(&ins, diff, "i") && BSON_ITER_HOLDS_DOCUMENT(&ins) && bson_iter_recurse(&ins, &f))
		while (bson_iter_next(&f))
			bson_append_value(out, bson_iter_key(&f), -1, bson_iter_value(&f));
	return 0;
}

static int
apply_array_diff(const bson_t *arr, const bson_t *diff, bson_t *out, int depth, terr_t *err)
{
	bson_iter_t it, f;
	int64_t len = 0, n = 0;
	char key[16], k2[24];

	if (depth > 100)
		return terr_set(err, TERR_BAD_VALUE, "diff nested too deeply");
	len = bson_count_keys(arr);
	if (bson_iter_init_find(&f, diff, "l")) {
		/* no longer than a 16 MB document can hold (3 bytes a null) */
		if (!BSON_ITER_HOLDS_NUMBER(&f) || bson_iter_as_int64(&f) < 0 ||
		    bson_iter_as_int64(&f) > TAMGA_MAX_BSON_SIZE / 3)
			return terr_set(err, TERR_BAD_VALUE, "malformed array diff: bad length");
		len = bson_iter_as_int64(&f);
	}
	/* a u<index> past the end grows the array, nulls before it (mongod's
	 * update driver logs only the index it set) */
	if (bson_iter_init(&f, diff))
		while (bson_iter_next(&f)) {
			const char *k = bson_iter_key(&f);
			char *end;
			long long idx;

			if (k[0] != 'u' || k[1] < '0' || k[1] > '9')
				continue;
			idx = strtoll(k + 1, &end, 10);
			if (*end != '\0' || idx < 0 || idx >= TAMGA_MAX_BSON_SIZE / 3)
				return terr_set(err, TERR_BAD_VALUE, "malformed array diff: bad index %s", k);
			if (idx + 1 > len)
				len = idx + 1;
		}
	bson_iter_init(&it, arr);
	for (n = 0; n < len; n++) {
		bool have = bson_iter_next(&it);

		bv_array_key((uint32_t)n, key);
		snprintf(k2, sizeof k2, "u%lld", (long long)n);
		if (bson_iter_init_find(&f, diff, k2)) {
			bson_append_value(out, key, -1, bson_iter_value(&f));
			continue;
		}
		snprintf(k2, sizeof k2, "s%lld", (long long)n);
		if (have && bson_iter_init_find(&f, diff, k2) && BSON_ITER_HOLDS_DOCUMENT(&f)) {
			bson_t sub;

			iter_doc(&f, &sub);
			RET(apply_diff_value(&it, &sub, out, key, depth + 1, err));
			continue;
		}
		if (have)
			bson_append_iter(out, key, -1, &it);
		else
			bson_append_null(out, key, -1);
	}
	return 0;
}

/* cur's value with diff applied, appended to out as key */
static int
apply_diff_value(const bson_iter_t *cur, const bson_t *diff, bson_t *out, const char *key, int depth,
                 terr_t *err)
{
	bson_t old, child;
	int rc;

	if (bson_has_field(diff, "a")) {
		if (!BSON_ITER_HOLDS_ARRAY(cur))
			return terr_set(err, TERR_BAD_VALUE, "array diff on a field that is not an array: %s", key);
		iter_doc(cur, &old);
		bson_append_array_begin(out, key, -1, &child);
		rc = apply_array_diff(&old, diff, &child, depth, err);
		bson_append_array_end(out, &child);
		return rc;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(cur))
		return terr_set(err, TERR_BAD_VALUE, "document diff on a field that is not a document: %s", key);
	iter_doc(cur, &old);
	bson_append_document_begin(out, key, -1, &child);
	rc = apply_doc_diff(&old, diff, &child, depth, err);
	bson_append_document_end(out, &child);
	return rc;
}

/*
 * Run cmd on db for applyOps: the batch was authorized as a whole
 * (auth/auth_check.c, chk_apply_ops: each entry's own privileges, as
 * mongod's OplogApplicationChecks), and mongod applies the entries without
 * a second check, so the entry's command (with bypassDocumentValidation)
 * runs with this connection's auth checks off.  A connection runs one
 * command at a time, so nothing else sees the flag change.
 */
static int
apply_ops_run(cmd_t *c, const char *db, const bson_t *cmd, bson_t *reply, terr_t *err)
{
	bool was = c->client->auth.enabled;
	int rc;

	c->client->auth.enabled = false;
	rc = engine_run_command(c->engine, c->client, db, cmd, reply, err);
	c->client->auth.enabled = was;
	return rc;
}

/* Run sub on db as a command of this client; its error becomes err. */
static int
run_sub(cmd_t *c, const char *db, const bson_t *sub, terr_t *err)
{
	bson_t reply;
	bson_iter_t it;
	int rc = apply_ops_run(c, db, sub, &reply, err);

	if (rc == 0 && bson_iter_init_find(&it, &reply, "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it)) {
		bson_iter_t we, f;
		int code = TERR_BAD_VALUE;
		const char *msg = "write error";

		bson_iter_recurse(&it, &we);
		if (bson_iter_next(&we) && BSON_ITER_HOLDS_DOCUMENT(&we)) {
			bson_iter_recurse(&we, &f);
			while (bson_iter_next(&f)) {
				if (strcmp(bson_iter_key(&f), "code") == 0)
					code = bson_iter_as_int64(&f);
				else if (strcmp(bson_iter_key(&f), "errmsg") == 0 && BSON_ITER_HOLDS_UTF8(&f))
					msg = bson_iter_utf8(&f, NULL);
			}
		}
		rc = terr_set(err, code, "%s", msg);
	}
	bson_destroy(&reply);
	return rc != 0 ? -1 : 0;
}

/* The document of db.coll matching q into doc (initialised; destroy it):
 * 0, or -1 with 26 when none does (mongod: the update of a missing
 * document fails its application). */
static int
fetch_one(cmd_t *c, const char *db, const char *coll, const bson_t *q, bson_t *doc, terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, reply;
	bson_iter_t it;
	int rc;

	BSON_APPEND_UTF8(&cmd, "find", coll);
	BSON_APPEND_DOCUMENT(&cmd, "filter", q);
	BSON_APPEND_INT32(&cmd, "limit", 1);
	BSON_APPEND_BOOL(&cmd, "singleBatch", true);
	rc = apply_ops_run(c, db, &cmd, &reply, err);
	bson_destroy(&cmd);
	if (rc == 0 && bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch.0", &it) &&
	    BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_t v;

		iter_doc(&it, &v);
		bson_copy_to(&v, doc);
		bson_destroy(&reply);
		return 0;
	}
	bson_destroy(&reply);
	if (rc != 0)
		return -1;
	return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "update of a missing document in %s.%s", db, coll);
}

/* Apply one oplog entry. */
static int
apply_one(cmd_t *c, const bson_t *op, terr_t *err)
{
	bson_iter_t it;
	const char *type = NULL, *ns = NULL;
	bson_t o, o2, sub = BSON_INITIALIZER, arr, one, pre = BSON_INITIALIZER;
	bool has_o = false, has_o2 = false;
	char db[256], coll[256];
	int ret = -1;

	if (bson_iter_init_find(&it, op, "op") && BSON_ITER_HOLDS_UTF8(&it))
		type = bson_iter_utf8(&it, NULL);
	if (type == NULL) {
		ret = terr_set(err, 40414, "BSON field 'applyOps.op' is missing but a required field");
		goto err;
	}
	if (bson_iter_init_find(&it, op, "ns") && BSON_ITER_HOLDS_UTF8(&it))
		ns = bson_iter_utf8(&it, NULL);
	if (ns == NULL) {
		ret = terr_set(err, 40414, "BSON field 'applyOps.ns' is missing but a required field");
		goto err;
	}
	if (bson_iter_init_find(&it, op, "o") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;

		bson_iter_document(&it, &l, &d);
		bson_init_static(&o, d, l);
		has_o = true;
	}
	if (bson_iter_init_find(&it, op, "o2") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *d;
		uint32_t l;

		bson_iter_document(&it, &l, &d);
		bson_init_static(&o2, d, l);
		has_o2 = true;
	}
	if (strcmp(type, "n") == 0) {
		ret = 0;
		goto err;
	}
	if (!has_o) {
		ret = terr_set(err, 40414, "BSON field 'applyOps.o' is missing but a required field");
		goto err;
	}
	if (strcmp(type, "c") == 0) {
		char cdb[256], ccoll[256];
		bson_iter_t first;

		/* no applyOps inside applyOps (no unbounded recursion) */
		if (bson_iter_init(&first, &o) && bson_iter_next(&first) &&
		    strcmp(bson_iter_key(&first), "applyOps") == 0) {
			ret = terr_set(err, TERR_BAD_VALUE, "applyOps may not be nested in an applyOps command entry");
			goto err;
		}
		ERR(split_ns(ns, cdb, ccoll, sizeof cdb, err));
		ret = run_sub(c, cdb, &o, err);
		goto err;
	}
	ERR(split_ns(ns, db, coll, sizeof db, err));
	if (strcmp(type, "i") == 0) {
		bson_t q;
		bson_iter_t id;

		/* alwaysUpsert (mongod's default): an insert of an existing _id replaces it */
		if (!bson_iter_init_find(&id, &o, "_id")) {
			BSON_APPEND_UTF8(&sub, "insert", coll);
			BSON_APPEND_ARRAY_BEGIN(&sub, "documents", &arr);
			BSON_APPEND_DOCUMENT(&arr, "0", &o);
			bson_append_array_end(&sub, &arr);
		} else {
			BSON_APPEND_UTF8(&sub, "update", coll);
			BSON_APPEND_ARRAY_BEGIN(&sub, "updates", &arr);
			BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &one);
			BSON_APPEND_DOCUMENT_BEGIN(&one, "q", &q);
			BSON_APPEND_VALUE(&q, "_id", bson_iter_value(&id));
			bson_append_document_end(&one, &q);
			BSON_APPEND_DOCUMENT(&one, "u", &o);
			BSON_APPEND_BOOL(&one, "upsert", true);
			bson_append_document_end(&arr, &one);
			bson_append_array_end(&sub, &arr);
		}
	} else if (strcmp(type, "u") == 0) {
		bson_iter_t v;

		if (!has_o2) {
			ret = terr_set(err, TERR_BAD_VALUE, "Update oplog entry must contain o2");
			goto err;
		}
		BSON_APPEND_UTF8(&sub, "update", coll);
		BSON_APPEND_ARRAY_BEGIN(&sub, "updates", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &one);
		BSON_APPEND_DOCUMENT(&one, "q", &o2);
		if (bson_iter_init_find(&v, &o, "$v") && bson_iter_as_int64(&v) == 2) {
			/* the diff applied to the stored document, written back whole */
			bson_iter_t d;
			bson_t diff, post = BSON_INITIALIZER;
			int rc;

			if (!bson_iter_init_find(&d, &o, "diff") || !BSON_ITER_HOLDS_DOCUMENT(&d)) {
				bson_destroy(&post);
				ret = terr_set(err, TERR_BAD_VALUE, "A $v: 2 update must have a diff document");
				bson_append_document_end(&arr, &one);
				bson_append_array_end(&sub, &arr);
				goto err;
			}
			iter_doc(&d, &diff);
			rc = fetch_one(c, db, coll, &o2, &pre, err);
			if (rc == 0)
				rc = apply_doc_diff(&pre, &diff, &post, 0, err);
			if (rc == 0)
				BSON_APPEND_DOCUMENT(&one, "u", &post);
			bson_destroy(&post);
			if (rc != 0) {
				bson_append_document_end(&arr, &one);
				bson_append_array_end(&sub, &arr);
				goto err;
			}
		} else {
			BSON_APPEND_DOCUMENT(&one, "u", &o);
		}
		if (bson_iter_init_find(&v, op, "b") && bson_iter_as_bool(&v))
			BSON_APPEND_BOOL(&one, "upsert", true);
		bson_append_document_end(&arr, &one);
		bson_append_array_end(&sub, &arr);
	} else if (strcmp(type, "d") == 0) {
		BSON_APPEND_UTF8(&sub, "delete", coll);
		BSON_APPEND_ARRAY_BEGIN(&sub, "deletes", &arr);
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &one);
		BSON_APPEND_DOCUMENT(&one, "q", &o);
		BSON_APPEND_INT32(&one, "limit", 1);
		bson_append_document_end(&arr, &one);
		bson_append_array_end(&sub, &arr);
	} else {
		ret = terr_set(err, TERR_BAD_VALUE, "Unknown oplog operation type: %s", type);
		goto err;
	}
	BSON_APPEND_BOOL(&sub, "bypassDocumentValidation", true);
	ret = run_sub(c, db, &sub, err);
err:
	bson_destroy(&sub);
	bson_destroy(&pre);
	return ret;
}

static const char *const apply_ops_fields[] = {"allowAtomic", "alwaysUpsert", "preCondition",
	"oplogApplicationMode", NULL};

CMD_HANDLER(cmd_apply_ops)
{
	bson_iter_t it;
	bson_t results;
	int64_t applied = 0;
	int ret = -1;

	if (!BSON_ITER_HOLDS_ARRAY(&c->first))
		return terr_set(err, TERR_FAILED_TO_PARSE, "ApplyOps command's first argument must be an array");
	RET(cmd_check_fields(c, apply_ops_fields, err));
	bson_iter_recurse(&c->first, &it);
	while (bson_iter_next(&it))
		if (!BSON_ITER_HOLDS_DOCUMENT(&it))
			return terr_set(err, TERR_FAILED_TO_PARSE, "ApplyOps command's array entries must be objects");
	{
		bson_t pre;
		bool has_pre, atomic = true, found;
		bson_iter_t p;

		RET(cmd_get_array(c, "preCondition", &pre, &has_pre, err));
		RET(cmd_get_bool(c, "allowAtomic", &atomic, &found, err));
		(void)atomic;
		/* 9.0's parser types preCondition (an array of objects) and its
		 * applyOps never reads it: no check runs */
		if (has_pre) {
			bson_iter_init(&p, &pre);
			while (bson_iter_next(&p))
				if (!BSON_ITER_HOLDS_DOCUMENT(&p))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'applyOps.preCondition.%s' is the wrong type '%s', expected type 'object'",
					    bson_iter_key(&p), bv_type_name(bson_iter_type(&p)));
		}
	}
	bson_init(&results);
	bson_iter_recurse(&c->first, &it);
	while (bson_iter_next(&it)) {
		bson_t op;
		const uint8_t *d;
		uint32_t l;
		char key[16];

		bson_iter_document(&it, &l, &d);
		bson_init_static(&op, d, l);
		if (cmd_check_deadline(c, err))
			goto err;
		/* mongod 9.0 skips no-op entries: not counted in applied, no result */
		{
			bson_iter_t t;

			if (bson_iter_init_find(&t, &op, "op") && BSON_ITER_HOLDS_UTF8(&t) &&
			    strcmp(bson_iter_utf8(&t, NULL), "n") == 0)
				continue;
		}
		if (apply_one(c, &op, err) != 0)
			goto err;
		bv_array_key((uint32_t)applied++, key);
		BSON_APPEND_BOOL(&results, key, true);
	}
	BSON_APPEND_INT32(c->reply, "applied", (int32_t)applied);
	BSON_APPEND_ARRAY(c->reply, "results", &results);
	ret = 0;
err:
	bson_destroy(&results);
	return ret;
}
