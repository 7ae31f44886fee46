/*
 * tb_validate.c -- the validate command's work: the record store against
 * every index, and every document against the collection's validator, in
 * mongod's ValidateResults shape (toolbelt.h).
 *
 * One pass over the records: each document's BSON is checked, counted
 * against the validator (nNonCompliantDocuments) and its keys for every
 * index generated the way the write path does (query/keygen.h; the _id
 * index's KeyString directly).  Each (key, RecordId) becomes a 64-bit
 * fingerprint; each index is then scanned and its entries fingerprinted the
 * same way.  The two sorted multisets are compared: what the documents want
 * and the index lacks is a missing entry, the reverse an extra one.
 *
 * Nothing is written (repair is refused by the caller); reads run outside a
 * transaction, each on the latest committed data, so writers are never held
 * up (mongod's background validation semantics).
 */
#include "toolbelt/toolbelt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/keystring.h"
#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "query/keygen.h"
#include "query/match.h"

typedef struct fp {
	uint64_t h;
	int64_t recid;
} fp_t;

typedef struct fpset {
	fp_t *v;
	size_t n, cap;
} fpset_t;

static void
fpset_add(fpset_t *s, uint64_t h, int64_t recid)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = bson_realloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n].h = h;
	s->v[s->n].recid = recid;
	s->n++;
}

static int
fp_cmp(const void *a, const void *b)
{
	const fp_t *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return (x->recid > y->recid) - (x->recid < y->recid);
}

/* FNV-1a over the key's value bytes, then the RecordId, then a final mix. */
static uint64_t
fingerprint(const uint8_t *key, size_t len, int64_t recid)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= key[i];
		h *= 1099511628211ULL;
	}
	h ^= (uint64_t)recid;
	h *= 0x9E3779B97F4A7C15ULL;
	h ^= h >> 31;
	return h;
}

/* One document's keys in one index, deduplicated as the write path does. */
typedef struct doc_keys {
	uint64_t *h;
	int n, cap;
	int64_t recid;
} doc_keys_t;

static void
doc_key_add(void *ctx, const uint8_t *key, size_t len, const uint8_t *tb, size_t tb_len)
{
	doc_keys_t *d = ctx;
	uint64_t h = fingerprint(key, len, d->recid);

	(void)tb;
	(void)tb_len;
	for (int i = 0; i < d->n; i++)
		if (d->h[i] == h)
			return;
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 8;
		d->h = bson_realloc(d->h, (size_t)d->cap * sizeof(*d->h));
	}
	d->h[d->n++] = h;
}

typedef struct ix_result {
	fpset_t want, have;
	int64_t keys;
	int64_t missing, extra;
	bool keygen_failed;
} ix_result_t;

/* mongod's appendNumber: an int when it fits, else a long. */
static void
append_number(bson_t *b, const char *k, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(b, k, (int32_t)v);
	else
		BSON_APPEND_INT64(b, k, v);
}

static void
add_string(bson_t *arr, int *n, const char *s)
{
	char k[16];
	const char *key;

	bson_uint32_to_string((uint32_t)*n, &key, k, sizeof(k));
	bson_append_utf8(arr, key, -1, s, -1);
	(*n)++;
}

/* validate {metadata: true}: the catalog entry of coll, nothing else read
 * (mongod's _validateCatalogEntry, then its ValidateResults fields). */
static int
validate_metadata(storage_coll_t *coll, const toolbelt_validate_opts_t *o, bson_t *reply, terr_t *err)
{
	static const uint8_t no_uuid[16] = {0};
	bson_t warnings, errors, arr, sub, one;
	int nw = 0, ne = 0;
	bson_iter_t vit;
	char m[1024];

	BSON_APPEND_BOOL(reply, "valid", true);      /* rewritten below when an error is found */
	BSON_APPEND_BOOL(reply, "repaired", false);
	BSON_APPEND_UTF8(reply, "ns", coll->ns);
	BSON_APPEND_BINARY(reply, "uuid", BSON_SUBTYPE_UUID, coll->uuid, 16);
	BSON_APPEND_ARRAY_BEGIN(reply, "warnings", &warnings);
	for (int i = 0; i < coll->nindexes; i++) {
		terr_t e = TERR_INIT;
		if (coll->indexes[i].spec == NULL || o->spec_check(coll->indexes[i].spec, &e) == 0) {
			terr_clear(&e);
			continue;
		}
		snprintf(m, sizeof(m), "The index specification for index '%s' contains invalid fields. %s. Run the "
		    "'collMod' command on the collection without any arguments to fix the invalid index options",
		    coll->indexes[i].name, e.msg);
		add_string(&warnings, &nw, m);
		terr_clear(&e);
	}
	bson_append_array_end(reply, &warnings);
	BSON_APPEND_ARRAY_BEGIN(reply, "errors", &errors);
	if (memcmp(coll->uuid, no_uuid, 16) == 0)
		add_string(&errors, &ne, "UUID missing on collection.");
	/* the stored validator must still be one (mongod compares the stored
	 * options with the ones the collection runs with) */
	if (coll->options != NULL && bson_iter_init_find(&vit, coll->options, "validator") &&
	    BSON_ITER_HOLDS_DOCUMENT(&vit)) {
		const uint8_t *d;
		uint32_t l;
		bson_t vd;
		match_t *mt = NULL;
		match_options_t mo = {0};
		terr_t e = TERR_INIT;
		bson_iter_document(&vit, &l, &d);
		bson_init_static(&vd, d, l);
		mo.coll = coll->collation;
		mo.disallow = MATCH_DISALLOW_TEXT | MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR;
		if (match_compile(&vd, &mo, &mt, &e) != 0) {
			char *opts = bv_doc_to_mongo_string(coll->options);
			snprintf(m, sizeof(m), "collection options are not valid for storage: %s", opts);
			bson_free(opts);
			add_string(&errors, &ne, m);
		}
		match_free(mt);
		terr_clear(&e);
	}
	bson_append_array_end(reply, &errors);
	if (ne > 0) {
		bson_iter_t it;
		if (bson_iter_init_find(&it, reply, "valid"))
			bson_iter_overwrite_bool(&it, false);
	}
	BSON_APPEND_ARRAY_BEGIN(reply, "extraIndexEntries", &arr);
	bson_append_array_end(reply, &arr);
	BSON_APPEND_ARRAY_BEGIN(reply, "missingIndexEntries", &arr);
	bson_append_array_end(reply, &arr);
	BSON_APPEND_ARRAY_BEGIN(reply, "corruptRecords", &arr);
	bson_append_array_end(reply, &arr);
	BSON_APPEND_INT32(reply, "nIndexes", coll->nindexes);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "keysPerIndex", &sub);
	for (int i = 0; i < coll->nindexes; i++)
		append_number(&sub, coll->indexes[i].name, 0);
	bson_append_document_end(reply, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "indexDetails", &sub);
	for (int i = 0; i < coll->nindexes; i++) {
		BSON_APPEND_DOCUMENT_BEGIN(&sub, coll->indexes[i].name, &one);
		BSON_APPEND_BOOL(&one, "valid", true);
		bson_append_document_end(&sub, &one);
	}
	bson_append_document_end(reply, &sub);
	(void)err;
	return 0;
}

int
toolbelt_validate(storage_t *st, storage_session_t *s, storage_coll_t *coll, const toolbelt_validate_opts_t *o,
                  bson_t *reply, terr_t *err)
{
	ix_result_t *ix = NULL;
	storage_cursor_t *cur = NULL;
	match_t *validator = NULL;
	keystring_t ks, tb;
	doc_keys_t dk = {0};
	int64_t nrecords = 0, ninvalid = 0, noncompliant = 0;
	int ret = -1, rc, nix = coll->nindexes;
	bson_iter_t vit;
	bson_t warnings, errors, arr, sub, one;
	int nw = 0, ne = 0;
	bool valid = true, in_txn = false;

	(void)st;
	if (o->metadata)
		return validate_metadata(coll, o, reply, err);
	keystring_init(&ks);
	keystring_init(&tb);
	ix = bson_malloc0(sizeof(*ix) * (size_t)(nix > 0 ? nix : 1));
	if (coll->options != NULL && bson_iter_init_find(&vit, coll->options, "validator") &&
	    BSON_ITER_HOLDS_DOCUMENT(&vit)) {
		const uint8_t *d;
		uint32_t l;
		bson_t vd;
		match_options_t mo = {0};
		terr_t e = TERR_INIT;
		bson_iter_document(&vit, &l, &d);
		bson_init_static(&vd, d, l);
		mo.coll = coll->collation;
	mo.disallow = MATCH_DISALLOW_TEXT | MATCH_DISALLOW_WHERE | MATCH_DISALLOW_GEO_NEAR;   /* a validator's rules */
		if (!bson_empty(&vd) && match_compile(&vd, &mo, &validator, &e) != 0)
			validator = NULL;
		terr_clear(&e);
	}

	/* one snapshot for both passes: documents and index entries committed
	 * meanwhile are seen by neither (a read-only transaction, rolled back) */
	ERR(storage_txn_begin(s, err));
	in_txn = true;
	/* the record store, once */
	ERR(storage_scan_open(s, coll, false, &cur, err));
	for (;;) {
		recid_t recid;
		bson_t doc;
		if ((rc = storage_cursor_next(cur, &recid, &doc, NULL, NULL, err)) < 0)
			goto err;
		if (rc == 0)
			break;
		ERR(tm_interrupt_check(err));
		nrecords++;
		if (!bson_validate(&doc, BSON_VALIDATE_NONE, NULL)) {
			ninvalid++;
			continue;
		}
		if (validator != NULL && match_exec(validator, &doc, NULL, NULL) != 1)
			noncompliant++;
		for (int i = 0; i < nix; i++) {
			const storage_index_t *idx = &coll->indexes[i];
			terr_t e = TERR_INIT;
			dk.n = 0;
			dk.recid = recid;
			if (idx->is_id) {
				bson_iter_t it;
				bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
				keystring_reset(&ks);
				keystring_reset(&tb);
				keystring_append_value_tb_coll(&ks, &tb,
				    bson_iter_init_find(&it, &doc, "_id") ? bson_iter_value(&it) : &null_v, false,
				    idx->collation);
				doc_key_add(&dk, ks.buf, ks.len, NULL, 0);
			} else if (query_keygen(idx, &doc, doc_key_add, &dk, NULL, &e) != 0) {
				ix[i].keygen_failed = true;
				terr_clear(&e);
				continue;
			}
			for (int k = 0; k < dk.n; k++)
				fpset_add(&ix[i].want, dk.h[k], recid);
		}
	}
	storage_cursor_close(cur);
	cur = NULL;

	/* every index, once */
	for (int i = 0; i < nix; i++) {
		const storage_index_t *idx = &coll->indexes[i];
		size_t a = 0, b = 0;
		ERR(storage_index_scan_open(s, coll, idx, NULL, 0, false, NULL, 0, false, false, &cur, err));
		for (;;) {
			recid_t recid;
			const uint8_t *key;
			size_t klen;
			if ((rc = storage_cursor_next(cur, &recid, NULL, &key, &klen, err)) < 0)
				goto err;
			if (rc == 0)
				break;
			ERR(tm_interrupt_check(err));
			ix[i].keys++;
			/* a non-unique entry ends with its RecordId (8 bytes) */
			if (!storage_index_key_only(idx) && klen >= 8)
				klen -= 8;
			fpset_add(&ix[i].have, fingerprint(key, klen, recid), recid);
		}
		storage_cursor_close(cur);
		cur = NULL;
		if (ix[i].want.n > 1)
			qsort(ix[i].want.v, ix[i].want.n, sizeof(fp_t), fp_cmp);
		if (ix[i].have.n > 1)
			qsort(ix[i].have.v, ix[i].have.n, sizeof(fp_t), fp_cmp);
		while (a < ix[i].want.n || b < ix[i].have.n) {
			int c = a == ix[i].want.n ? 1 : b == ix[i].have.n ? -1 : fp_cmp(&ix[i].want.v[a], &ix[i].have.v[b]);
			if (c < 0) {
				ix[i].want.v[ix[i].missing++] = ix[i].want.v[a++];   /* kept for the report */
			} else if (c > 0) {
				ix[i].have.v[ix[i].extra++] = ix[i].have.v[b++];
			} else {
				a++;
				b++;
			}
		}
		if (ix[i].missing || ix[i].extra || ix[i].keygen_failed)
			valid = false;
	}
	if (ninvalid > 0)
		valid = false;
	storage_txn_rollback(s);
	in_txn = false;

	/* mongod's ValidateResults::appendToResultObj order */
	BSON_APPEND_BOOL(reply, "valid", valid);
	BSON_APPEND_BOOL(reply, "repaired", false);
	BSON_APPEND_UTF8(reply, "ns", coll->ns);
	BSON_APPEND_BINARY(reply, "uuid", BSON_SUBTYPE_UUID, coll->uuid, 16);
	BSON_APPEND_ARRAY_BEGIN(reply, "warnings", &warnings);
	if (noncompliant > 0)
		add_string(&warnings, &nw, "Detected one or more documents not compliant with the collection's schema. "
		    "Check logs for log id 5363500.");
	bson_append_array_end(reply, &warnings);
	BSON_APPEND_ARRAY_BEGIN(reply, "errors", &errors);
	if (ninvalid > 0)
		add_string(&errors, &ne, "Detected one or more documents in this collection not conformant to BSON "
		    "specifications. For more info, see logs with log id 4835001");
	for (int i = 0; i < nix; i++)
		if (ix[i].missing || ix[i].extra || ix[i].keygen_failed) {
			char m[512];
			snprintf(m, sizeof(m), "Found errors in %s", coll->indexes[i].name);
			add_string(&errors, &ne, m);
		}
	bson_append_array_end(reply, &errors);
	/* extraIndexEntries / missingIndexEntries: the first 100 of each */
	for (int pass = 0; pass < 2; pass++) {
		int n = 0;
		BSON_APPEND_ARRAY_BEGIN(reply, pass == 0 ? "extraIndexEntries" : "missingIndexEntries", &arr);
		for (int i = 0; i < nix && n < 100; i++) {
			int64_t cnt = pass == 0 ? ix[i].extra : ix[i].missing;
			const fp_t *v = pass == 0 ? ix[i].have.v : ix[i].want.v;
			for (int64_t j = 0; j < cnt && n < 100; j++) {
				char k[16];
				const char *key;
				bson_uint32_to_string((uint32_t)n++, &key, k, sizeof(k));
				BSON_APPEND_DOCUMENT_BEGIN(&arr, key, &one);
				BSON_APPEND_UTF8(&one, "indexName", coll->indexes[i].name);
				BSON_APPEND_INT64(&one, "recordId", v[j].recid);
				bson_append_document_end(&arr, &one);
			}
		}
		bson_append_array_end(reply, &arr);
	}
	append_number(reply, "nInvalidDocuments", ninvalid);
	append_number(reply, "nNonCompliantDocuments", noncompliant);
	append_number(reply, "nrecords", nrecords);
	BSON_APPEND_ARRAY_BEGIN(reply, "corruptRecords", &arr);
	bson_append_array_end(reply, &arr);
	BSON_APPEND_INT32(reply, "nIndexes", nix);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "keysPerIndex", &sub);
	for (int i = 0; i < nix; i++)
		append_number(&sub, coll->indexes[i].name, ix[i].keys);
	bson_append_document_end(reply, &sub);
	BSON_APPEND_DOCUMENT_BEGIN(reply, "indexDetails", &sub);
	for (int i = 0; i < nix; i++) {
		bson_t w, e;
		int nie = 0;
		char m[256];
		BSON_APPEND_DOCUMENT_BEGIN(&sub, coll->indexes[i].name, &one);
		BSON_APPEND_BOOL(&one, "valid", !(ix[i].missing || ix[i].extra || ix[i].keygen_failed));
		BSON_APPEND_ARRAY_BEGIN(&one, "warnings", &w);
		bson_append_array_end(&one, &w);
		BSON_APPEND_ARRAY_BEGIN(&one, "errors", &e);
		if (ix[i].missing) {
			snprintf(m, sizeof(m), "Detected %lld missing index entries", (long long)ix[i].missing);
			add_string(&e, &nie, m);
		}
		if (ix[i].extra) {
			snprintf(m, sizeof(m), "Detected %lld extra index entries", (long long)ix[i].extra);
			add_string(&e, &nie, m);
		}
		if (ix[i].keygen_failed)
			add_string(&e, &nie, "Could not generate the keys of one or more documents");
		bson_append_array_end(&one, &e);
		bson_append_document_end(&sub, &one);
	}
	bson_append_document_end(reply, &sub);
	(void)o;
	ret = 0;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	if (in_txn)
		storage_txn_rollback(s);
	for (int i = 0; i < nix; i++) {
		bson_free(ix[i].want.v);
		bson_free(ix[i].have.v);
	}
	bson_free(ix);
	bson_free(dk.h);
	keystring_destroy(&ks);
	keystring_destroy(&tb);
	match_free(validator);
	return ret;
}
