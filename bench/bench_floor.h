/*
 * bench_floor.h -- the raw WiredTiger work of Tamga's storage layout
 * (DESIGN.md; src/storage/catalog.c's table formats), shared by bench_core
 * (wall-clock floors) and bench_insns (instruction floors): a record table
 * keyed by an int64 RecordId (`q` -> `u`), a unique `_id` index table (the
 * key's order-preserving bytes -> RecordId and empty type bits, `u` -> `qu`)
 * and, for issue 23's insert_3_indexes floor, secondary index tables whose
 * key is the field's order-preserving bytes followed by the RecordId's 8
 * (`u` -> empty `u`, as Tamga's non-unique indexes).  Every write of one
 * document goes into the same transaction; nothing but WiredTiger and
 * libbson's iterators runs, so Tamga's cost over it is the command, the key
 * generation and the bookkeeping.  The header is static inline only.
 */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include <bson/bson.h>
#include <string.h>
#include <wiredtiger.h>

#define FLOOR_MAX_SEC 3

/* One collection of the layout: its cursors (overwrite=false, as Tamga's)
 * and RecordId counter.  nsec secondary indexes on floor_sec_paths. */
typedef struct floor_coll {
	WT_CURSOR *rec, *id, *sec[FLOOR_MAX_SEC];
	int nsec;
	int64_t next_rid;
} floor_coll_t;

/* The fields bench_core's insert_3_indexes indexes (bench_insns indexes
 * customer.city instead of customer.name: the same kind of key). */
static const char *const floor_sec_paths[FLOOR_MAX_SEC] = {"title", "customer.name", "score"};

/* The _id index key: a type byte, the int64 big-endian with its sign bit
 * flipped (byte order is numeric order), an end byte: 10 bytes. */
static inline size_t
floor_id_key(uint8_t out[10], int64_t id)
{
	uint64_t u = (uint64_t)id ^ (1ULL << 63);

	out[0] = 0x2b;
	for (int b = 0; b < 8; b++)
		out[1 + b] = (uint8_t)(u >> (56 - 8 * b));
	out[9] = 0x04;
	return 10;
}

static inline size_t
floor_be64(uint8_t *out, uint64_t u)
{
	for (int b = 0; b < 8; b++)
		out[b] = (uint8_t)(u >> (56 - 8 * b));
	return 8;
}

/* A secondary key of doc on path (dotted paths through libbson), then the
 * RecordId: a string as type byte, bytes, 0; a double as type byte and its
 * order-flipped bits; anything else as a null byte.  out holds 300 bytes;
 * a longer string is cut (the bench's are ~30 bytes). */
static inline size_t
floor_sec_key(uint8_t out[300], const bson_t *doc, const char *path, int64_t rid)
{
	bson_iter_t it, f;
	size_t n = 0;

	bool found = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &f);

	if (found && BSON_ITER_HOLDS_UTF8(&f)) {
		uint32_t len;
		const char *s = bson_iter_utf8(&f, &len);
		if (len > 280)
			len = 280;
		out[n++] = 0x3c;
		memcpy(out + n, s, len);
		n += len;
		out[n++] = 0;
	} else if (found && BSON_ITER_HOLDS_DOUBLE(&f)) {
		double d = bson_iter_double(&f);
		uint64_t u;
		memcpy(&u, &d, 8);
		u = (u >> 63) ? ~u : u | (1ULL << 63);
		out[n++] = 0x2b;
		n += floor_be64(out + n, u);
	} else {
		out[n++] = 0x0a;
	}
	out[n++] = 0x04;
	n += floor_be64(out + n, (uint64_t)rid ^ (1ULL << 63));
	return n;
}

/* Create (if needed) and open the tables of collection name with nsec
 * secondary indexes; returns WiredTiger's error or 0. */
static inline int
floor_open(WT_SESSION *s, const char *name, int nsec, floor_coll_t *fc)
{
	char uri[128];
	int rc;

	memset(fc, 0, sizeof(*fc));
	fc->nsec = nsec;
	snprintf(uri, sizeof(uri), "table:%s", name);
	if ((rc = s->create(s, uri, "key_format=q,value_format=u")) != 0 ||
	    (rc = s->open_cursor(s, uri, NULL, "overwrite=false", &fc->rec)) != 0)
		return rc;
	snprintf(uri, sizeof(uri), "table:%s_id", name);
	if ((rc = s->create(s, uri, "key_format=u,value_format=qu")) != 0 ||
	    (rc = s->open_cursor(s, uri, NULL, "overwrite=false", &fc->id)) != 0)
		return rc;
	for (int i = 0; i < nsec; i++) {
		snprintf(uri, sizeof(uri), "table:%s_ix%d", name, i);
		if ((rc = s->create(s, uri, "key_format=u,value_format=u")) != 0 ||
		    (rc = s->open_cursor(s, uri, NULL, "overwrite=false", &fc->sec[i])) != 0)
			return rc;
	}
	return 0;
}

static inline void
floor_close(floor_coll_t *fc)
{
	fc->rec->close(fc->rec);
	fc->id->close(fc->id);
	for (int i = 0; i < fc->nsec; i++)
		fc->sec[i]->close(fc->sec[i]);
}

/* One document's writes (inside the caller's transaction): the record under
 * the next RecordId, its _id entry (id: the document's int64 _id), each
 * secondary entry.  Returns WiredTiger's error or 0. */
static inline int
floor_insert(floor_coll_t *fc, const bson_t *doc, int64_t id)
{
	WT_ITEM item, key, empty = {0};
	uint8_t kbuf[300];
	int64_t rid = ++fc->next_rid;
	int rc;

	item.data = bson_get_data(doc);
	item.size = doc->len;
	fc->rec->set_key(fc->rec, rid);
	fc->rec->set_value(fc->rec, &item);
	if ((rc = fc->rec->insert(fc->rec)) != 0)
		return rc;
	key.data = kbuf;
	key.size = floor_id_key(kbuf, id);
	fc->id->set_key(fc->id, &key);
	fc->id->set_value(fc->id, rid, &empty);
	if ((rc = fc->id->insert(fc->id)) != 0)
		return rc;
	for (int i = 0; i < fc->nsec; i++) {
		key.size = floor_sec_key(kbuf, doc, floor_sec_paths[i], rid);
		fc->sec[i]->set_key(fc->sec[i], &key);
		fc->sec[i]->set_value(fc->sec[i], &empty);
		if ((rc = fc->sec[i]->insert(fc->sec[i])) != 0)
			return rc;
	}
	return 0;
}

/* A find by _id in the layout: the _id index searched, then the record
 * table; the document's bytes copied out (what a client gets).  Returns
 * WiredTiger's error or 0. */
static inline int
floor_lookup(floor_coll_t *fc, int64_t id)
{
	WT_ITEM key, typebits, item;
	uint8_t kbuf[10];
	int64_t rid;
	bson_t v, *copy;
	int rc;

	key.data = kbuf;
	key.size = floor_id_key(kbuf, id);
	fc->id->set_key(fc->id, &key);
	if ((rc = fc->id->search(fc->id)) != 0 || (rc = fc->id->get_value(fc->id, &rid, &typebits)) != 0)
		return rc;
	fc->id->reset(fc->id);
	fc->rec->set_key(fc->rec, rid);
	if ((rc = fc->rec->search(fc->rec)) != 0 || (rc = fc->rec->get_value(fc->rec, &item)) != 0)
		return rc;
	bson_init_static(&v, item.data, item.size);
	copy = bson_copy(&v);
	bson_destroy(copy);
	fc->rec->reset(fc->rec);
	return 0;
}

#endif
