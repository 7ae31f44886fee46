/*
 * oplog_apply.c -- a secondary applies the primary's oplog entries
 * (oplog_apply.h): $v: 2 diffs, CRUD in one storage transaction with the
 * entry (or a run of CRUD entries in one, each entry's ts set before its
 * writes), DDL through storage's catalog calls (each a transaction of its
 * own, then the entry), applyOps of a transaction in one.  Every data
 * change is made with the session unobserved: the only oplog entry written
 * is the primary's own (repl_oplog_write_replicated).
 */
#include "repl/oplog_apply.h"
#include "repl/retryable.h"

#include <stdio.h>
#include <string.h>

#define DIFF_MAX_DEPTH 200

/* ---- $v: 2 diffs ------------------------------------------------------------------------------- */

static int diff_doc(const bson_t *doc, const bson_t *diff, bson_t *out, int depth, terr_t *err);

/* After a rollback (repl/rollback.h), until this thread has applied the
 * entry at min_valid, an update of a missing document is not an error: the
 * document was refetched from a source that had already deleted it. */
static _Thread_local repl_ts_t tl_min_valid, tl_entry_ts;
/* repl_oplog_apply_defer_session_row: the next entry writes no session row */
static _Thread_local bool tl_defer_session;

void
repl_oplog_apply_set_min_valid(repl_ts_t ts)
{
	tl_min_valid = ts;
}

void
repl_oplog_apply_defer_session_row(void)
{
	tl_defer_session = true;
}

/* The fields of a retryable write's CRUD entry that say whose row it
 * writes: one walk of the entry's first fields (lsid, txnNumber and op
 * lead a mongod oplog entry). */
typedef struct {
	const uint8_t *lsid;
	uint32_t lsid_len;
	int64_t num;
	int have;   /* bits: 1 lsid, 2 txnNumber, 4 a CRUD op */
} session_key_t;

static bool
session_key(const bson_t *e, session_key_t *k)
{
	bson_iter_t it;
	const char *op;

	k->have = 0;
	if (!bson_iter_init(&it, e))
		return false;
	while (k->have != 7 && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (strcmp(key, "lsid") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_document(&it, &k->lsid_len, &k->lsid);
			k->have |= 1;
		} else if (strcmp(key, "txnNumber") == 0 && BSON_ITER_HOLDS_INT64(&it)) {
			k->num = bson_iter_int64(&it);
			k->have |= 2;
		} else if (strcmp(key, "op") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
			op = bson_iter_utf8(&it, NULL);
			if ((op[0] == 'i' || op[0] == 'u' || op[0] == 'd') && op[1] == '\0')
				k->have |= 4;
			else
				return false;
		}
	}
	return k->have == 7;
}

/* Whether two entries' keys (each session_key's true) name one write. */
static bool
session_key_eq(const session_key_t *a, const session_key_t *b)
{
	return a->num == b->num && a->lsid_len == b->lsid_len && memcmp(a->lsid, b->lsid, a->lsid_len) == 0;
}

bool
repl_oplog_apply_same_session(const bson_t *entry, const bson_t *next)
{
	session_key_t a, b;

	return session_key(entry, &a) && session_key(next, &b) && session_key_eq(&a, &b);
}

static bool
sub_of(const bson_iter_t *it, bson_t *out)
{
	const uint8_t *d;
	uint32_t l;

	if (BSON_ITER_HOLDS_DOCUMENT(it))
		bson_iter_document(it, &l, &d);
	else if (BSON_ITER_HOLDS_ARRAY(it))
		bson_iter_array(it, &l, &d);
	else
		return false;
	return bson_init_static(out, d, l);
}

static bool
section(const bson_t *diff, const char *name, bson_t *out)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, diff, name) && BSON_ITER_HOLDS_DOCUMENT(&it) && sub_of(&it, out);
}

static bool
has_key(const bson_t *sec, bool have, const char *key, bson_iter_t *at)
{
	return have && bson_iter_init_find(at, sec, key);
}

/* Apply a sub diff to the value `old` (may be NULL: a missing field) as key
 * into out. */
static int
diff_value(const bson_iter_t *old, const bson_t *sub, const char *key, bson_t *out, int depth, terr_t *err)
{
	bson_t od, res;
	bool is_array = false;
	bson_iter_t a;
	int ret;

	if (depth > DIFF_MAX_DEPTH)
		return terr_set(err, TERR_BAD_VALUE, "an update diff nests too deep");
	if (bson_iter_init_find(&a, sub, "a") && bson_iter_as_bool(&a))
		is_array = true;
	if (old == NULL || !sub_of(old, &od))
		bson_init(&od);
	if (!is_array) {
		ret = diff_doc(&od, sub, &res, depth + 1, err);
		if (ret == 0)
			bson_append_document(out, key, -1, &res);
	} else {
		/* {a: true, [l: len], u<i>: value, s<i>: sub} */
		bson_iter_t it;
		uint32_t oldlen = 0, newlen;
		int64_t l = -1, maxidx = -1;
		bson_t arr;
		if (bson_iter_init(&it, &od))
			while (bson_iter_next(&it))
				oldlen++;
		if (bson_iter_init(&it, sub)) {
			while (bson_iter_next(&it)) {
				const char *k = bson_iter_key(&it);
				if (strcmp(k, "l") == 0)
					l = bson_iter_as_int64(&it);
				else if ((k[0] == 'u' || k[0] == 's') && k[1] >= '0' && k[1] <= '9') {
					int64_t i = strtoll(k + 1, NULL, 10);
					if (i > maxidx)
						maxidx = i;
				}
			}
		}
		newlen = l >= 0 ? (uint32_t)(l > 16 * 1024 * 1024 ? 16 * 1024 * 1024 : l) :
		    (maxidx + 1 > (int64_t)oldlen ? (uint32_t)(maxidx + 1) : oldlen);
		if (maxidx >= (int64_t)16 * 1024 * 1024) {
			if (old == NULL)
				bson_destroy(&od);
			return terr_set(err, TERR_BAD_VALUE, "an update diff's array index is out of range");
		}
		bson_init(&res);
		ret = 0;
		for (uint32_t i = 0; i < newlen && ret == 0; i++) {
			char ik[16], uk[18];
			bson_iter_t ov, dv;
			bool have_old;
			snprintf(ik, sizeof(ik), "%u", i);
			have_old = bson_iter_init_find(&ov, &od, ik);
			snprintf(uk, sizeof(uk), "u%u", i);
			if (bson_iter_init_find(&dv, sub, uk)) {
				bson_append_value(&res, ik, -1, bson_iter_value(&dv));
				continue;
			}
			uk[0] = 's';
			if (bson_iter_init_find(&dv, sub, uk)) {
				bson_t s2;
				if (!sub_of(&dv, &s2))
					ret = terr_set(err, TERR_BAD_VALUE, "an update diff's sub diff is not a document");
				else
					ret = diff_value(have_old ? &ov : NULL, &s2, ik, &res, depth + 1, err);
				continue;
			}
			if (have_old)
				bson_append_iter(&res, ik, -1, &ov);
			else
				bson_append_null(&res, ik, -1);
		}
		if (ret == 0) {
			bson_init(&arr);
			bson_append_array(out, key, -1, &res);
			bson_destroy(&arr);
		}
	}
	bson_destroy(&res);
	if (old == NULL)
		bson_destroy(&od);
	return ret;
}

/* {d: {f: false}, u: {f: v}, i: {f: v}, s<f>: sub} over doc, fields kept in
 * doc's order, inserts at the end (as mongod's applier). */
static int
diff_doc(const bson_t *doc, const bson_t *diff, bson_t *out, int depth, terr_t *err)
{
	bson_t del, upd, ins;
	bool hd = section(diff, "d", &del), hu = section(diff, "u", &upd), hi = section(diff, "i", &ins);
	bson_iter_t it, at;
	int ret = 0;

	bson_init(out);
	if (bson_iter_init(&it, doc)) {
		while (ret == 0 && bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			char sk[1024];
			if (has_key(&del, hd, k, &at))
				continue;
			if (has_key(&upd, hu, k, &at)) {
				bson_append_value(out, k, -1, bson_iter_value(&at));
				continue;
			}
			if (has_key(&ins, hi, k, &at))
				continue;   /* re-inserted below, at the end */
			if (strlen(k) + 2 <= sizeof(sk)) {
				snprintf(sk, sizeof(sk), "s%s", k);
				if (bson_iter_init_find(&at, diff, sk)) {
					bson_t sub;
					if (!sub_of(&at, &sub))
						ret = terr_set(err, TERR_BAD_VALUE, "an update diff's sub diff is not a document");
					else
						ret = diff_value(&it, &sub, k, out, depth, err);
					continue;
				}
			}
			bson_append_iter(out, k, -1, &it);
		}
	}
	/* updates of fields the document lacks, and inserts, go at the end */
	if (ret == 0 && hu && bson_iter_init(&it, &upd))
		while (bson_iter_next(&it))
			if (!bson_has_field(doc, bson_iter_key(&it)))
				bson_append_iter(out, bson_iter_key(&it), -1, &it);
	if (ret == 0 && hi && bson_iter_init(&it, &ins))
		while (bson_iter_next(&it))
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
	/* sub diffs of fields the document lacks create them */
	if (ret == 0 && bson_iter_init(&it, diff)) {
		while (ret == 0 && bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			bson_t sub;
			if (k[0] != 's' || k[1] == '\0' || bson_has_field(doc, k + 1))
				continue;
			if (!sub_of(&it, &sub))
				ret = terr_set(err, TERR_BAD_VALUE, "an update diff's sub diff is not a document");
			else
				ret = diff_value(NULL, &sub, k + 1, out, depth, err);
		}
	}
	if (ret != 0)
		bson_destroy(out);
	return ret;
}

int
repl_oplog_diff_apply(const bson_t *doc, const bson_t *diff, bson_t *out, terr_t *err)
{
	return diff_doc(doc, diff, out, 0, err);
}

/* ---- entries ---------------------------------------------------------------------------------- */

typedef struct parsed {
	const char *op, *ns;
	repl_ts_t ts;        /* 0: none */
	int64_t t;           /* -1: none */
	bson_t o, o2;
	bool has_o, has_o2;
	const uint8_t *ui;   /* the collection's UUID (16 bytes), or NULL */
	char db[128], coll[256];
} parsed_t;

/* One walk of the entry's top-level fields (each name's first occurrence
 * counts, as bson_iter_init_find's would): an entry is parsed once per
 * application, so five lookups from the start were 5k instructions of an
 * insert's ~50k on a secondary. */
static int
parse(const bson_t *e, parsed_t *p, terr_t *err)
{
	bson_iter_t it;
	const char *dot;
	unsigned seen = 0;   /* bits: 1 op, 2 ns, 4 o, 8 o2, 16 ui, 32 ts, 64 t */

	memset(p, 0, sizeof(*p));
	p->t = -1;
	if (bson_iter_init(&it, e)) {
		while (seen != 127 && bson_iter_next(&it)) {
			const char *key = bson_iter_key(&it);
			if (key[0] == 't' && key[1] == 's' && key[2] == '\0') {
				if (!(seen & 32) && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
					uint32_t secs, inc;
					bson_iter_timestamp(&it, &secs, &inc);
					p->ts = REPL_TS(secs, inc);
				}
				seen |= 32;
			} else if (key[0] == 't' && key[1] == '\0') {
				if (!(seen & 64))
					p->t = bson_iter_as_int64(&it);
				seen |= 64;
			} else if (key[0] == 'o' && key[1] == 'p' && key[2] == '\0') {
				if (!(seen & 1) && BSON_ITER_HOLDS_UTF8(&it))
					p->op = bson_iter_utf8(&it, NULL);
				seen |= 1;
			} else if (key[0] == 'n' && key[1] == 's' && key[2] == '\0') {
				if (!(seen & 2) && BSON_ITER_HOLDS_UTF8(&it))
					p->ns = bson_iter_utf8(&it, NULL);
				seen |= 2;
			} else if (key[0] == 'o' && key[1] == '\0') {
				if (!(seen & 4) && BSON_ITER_HOLDS_DOCUMENT(&it))
					p->has_o = sub_of(&it, &p->o);
				seen |= 4;
			} else if (key[0] == 'o' && key[1] == '2' && key[2] == '\0') {
				if (!(seen & 8) && BSON_ITER_HOLDS_DOCUMENT(&it))
					p->has_o2 = sub_of(&it, &p->o2);
				seen |= 8;
			} else if (key[0] == 'u' && key[1] == 'i' && key[2] == '\0') {
				if (!(seen & 16) && BSON_ITER_HOLDS_BINARY(&it)) {
					bson_subtype_t st;
					uint32_t len;
					const uint8_t *data;
					bson_iter_binary(&it, &st, &len, &data);
					if (st == BSON_SUBTYPE_UUID && len == 16)
						p->ui = data;
				}
				seen |= 16;
			}
		}
	}
	if (p->op == NULL || p->ns == NULL)
		return terr_set(err, TERR_BAD_VALUE, "an oplog entry without op or ns");
	if (p->op[0] == 'n')
		return 0;
	if (!p->has_o)
		return terr_set(err, TERR_BAD_VALUE, "an oplog entry without o");
	dot = strchr(p->ns, '.');
	if (dot == NULL || (size_t)(dot - p->ns) >= sizeof(p->db) || strlen(dot + 1) >= sizeof(p->coll))
		return terr_set(err, TERR_BAD_VALUE, "an oplog entry's ns is not <db>.<collection>: %s", p->ns);
	memcpy(p->db, p->ns, (size_t)(dot - p->ns));
	p->db[dot - p->ns] = '\0';
	strcpy(p->coll, dot + 1);
	return 0;
}

static bool
id_of(const bson_t *d, bson_iter_t *it)
{
	return bson_iter_init_find(it, d, "_id");
}

/* Collection of p, created (unlogged) when missing: implicit creation by
 * an insert ('i' entries of mongod come after their create, but a member
 * may replay a log whose create came first in another folder's life). */
static int
coll_of(storage_t *st, storage_session_t *s, const parsed_t *p, bool create, storage_coll_t **c, terr_t *err)
{
	if (storage_coll_get(st, p->db, p->coll, c, err) == 0)
		return 0;
	terr_clear(err);
	if (!create)
		return 1;
	storage_set_next_uuid(p->ui);   /* the primary's */
	if (storage_coll_create(st, s, p->db, p->coll, NULL, err) != 0) {
		if (err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
	}
	return storage_coll_get(st, p->db, p->coll, c, err) == 0 ? 0 : -1;
}

/* One CRUD operation, in s's open transaction.  fresh: an insert does not
 * look its _id up first -- a document already there fails it (11000, the
 * unique _id index or the clustered key) and the caller applies the entry
 * again without fresh (a run's fallback, repl_oplog_apply_run), as mongod's
 * secondaries insert a group and fall back to one upsert at a time. */
static int
apply_crud(storage_t *st, storage_session_t *s, const parsed_t *p, bool fresh, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_iter_t id;
	recid_t rid;
	bson_t cur, next;
	int r, ret = 0;

	r = coll_of(st, s, p, false, &c, err);
	if (r < 0)
		return -1;
	if (r == 1) {
		if (p->op[0] == 'd')
			return 0;   /* dropped later in the log: nothing to delete */
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "applying an oplog entry: no collection %s", p->ns);
	}
	switch (p->op[0]) {
	case 'i':
		if (!id_of(&p->o, &id)) {
			ret = terr_set(err, TERR_BAD_VALUE, "an insert entry's document has no _id");
			break;
		}
		r = fresh ? 1 : storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err);
		if (r < 0) {
			ret = -1;
		} else if (r == 0) {
			bson_t old;
			bson_copy_to(&cur, &old);
			ret = storage_doc_update(s, c, rid, &old, &p->o, err);
			bson_destroy(&old);
		} else {
			ret = storage_doc_insert(s, c, &p->o, NULL, err);
		}
		break;
	case 'u': {
		bson_iter_t v, dv;
		if (!p->has_o2 || !id_of(&p->o2, &id)) {
			ret = terr_set(err, TERR_BAD_VALUE, "an update entry without o2._id");
			break;
		}
		r = storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err);
		if (r == 1 && tl_entry_ts != 0 && tl_entry_ts <= tl_min_valid)
			break;   /* refetched by a rollback, deleted at the source since */
		if (r != 0) {
			ret = r < 0 ? -1 : terr_set(err, 47 /* NoMatchingDocument */,
			    "applying an update to %s: the document is missing", p->ns);
			break;
		}
		{
			bson_t old;
			bson_copy_to(&cur, &old);
			if (bson_iter_init_find(&v, &p->o, "$v") && bson_iter_init_find(&dv, &p->o, "diff")) {
				bson_t diff;
				if (!sub_of(&dv, &diff))
					ret = terr_set(err, TERR_BAD_VALUE, "an update entry's diff is not a document");
				else if ((ret = repl_oplog_diff_apply(&old, &diff, &next, err)) == 0) {
					ret = storage_doc_update(s, c, rid, &old, &next, err);
					bson_destroy(&next);
				}
			} else {
				ret = storage_doc_update(s, c, rid, &old, &p->o, err);
			}
			bson_destroy(&old);
		}
		break;
	}
	case 'd':
		if (!id_of(&p->o, &id)) {
			ret = terr_set(err, TERR_BAD_VALUE, "a delete entry without o._id");
			break;
		}
		r = storage_doc_find_id(s, c, bson_iter_value(&id), &rid, &cur, err);
		if (r < 0) {
			ret = -1;
		} else if (r == 0) {
			bson_t old;
			bson_copy_to(&cur, &old);
			ret = storage_doc_delete(s, c, rid, &old, err);
			bson_destroy(&old);
		}
		break;
	default:
		ret = terr_set(err, TERR_NOT_IMPLEMENTED, "cannot apply an oplog entry of op '%s'", p->op);
	}
	storage_coll_release(c);
	return ret;
}

/* Copy every field of o but the ones named into out. */
static void
copy_except(const bson_t *o, bson_t *out, const char *a, const char *b)
{
	bson_iter_t it;

	bson_init(out);
	if (bson_iter_init(&it, o))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if ((a != NULL && strcmp(k, a) == 0) || (b != NULL && strcmp(k, b) == 0))
				continue;
			bson_append_iter(out, k, -1, &it);
		}
}

static int
tolerate(terr_t *err, int code1, int code2)
{
	if (err->code == code1 || (code2 != 0 && err->code == code2)) {
		terr_clear(err);
		return 0;
	}
	return -1;
}

/* A DDL command entry ('c' but applyOps), s with no transaction open. */

/*
 * A collMod entry's index part ({name | keyPattern, hidden,
 * expireAfterSeconds, unique, prepareUnique, forceNonUnique}) applied as
 * mongod's oplog application does: the index's spec changed in place, no
 * duplicate scan for a unique conversion (the primary made it), a unique
 * conversion clearing prepareUnique.  A missing collection or index is
 * tolerated (dropped later in the log).
 */
static int
apply_index_mod(storage_t *st, storage_session_t *s, const char *db, const char *coll, const bson_t *ixo,
                terr_t *err)
{
	static const char *const opts[] = {"hidden", "expireAfterSeconds", "unique", "prepareUnique", NULL};
	storage_coll_t *c = NULL;
	const storage_index_t *ix = NULL;
	bson_iter_t it, kp;
	const char *name = NULL;
	bson_t key, spec = BSON_INITIALIZER;
	bool has_key = false, unique, force;
	int ret;

	if (bson_iter_init_find(&it, ixo, "name") && BSON_ITER_HOLDS_UTF8(&it))
		name = bson_iter_utf8(&it, NULL);
	if (bson_iter_init_find(&kp, ixo, "keyPattern") && sub_of(&kp, &key))
		has_key = true;
	if (storage_coll_get(st, db, coll, &c, err) != 0)
		return tolerate(err, TERR_NAMESPACE_NOT_FOUND, 0);
	for (int i = 0; i < c->nindexes && ix == NULL; i++)
		if (name != NULL ? strcmp(c->indexes[i].name, name) == 0 :
		    has_key && c->indexes[i].key->len == key.len &&
		    memcmp(bson_get_data(c->indexes[i].key), bson_get_data(&key), key.len) == 0)
			ix = &c->indexes[i];
	if (ix == NULL) {
		storage_coll_release(c);
		return 0;
	}
	unique = bson_iter_init_find(&it, ixo, "unique") && bson_iter_as_bool(&it);
	force = bson_iter_init_find(&it, ixo, "forceNonUnique") && bson_iter_as_bool(&it);
	bson_iter_init(&it, ix->spec);
	while (bson_iter_next(&it)) {
		const char *f = bson_iter_key(&it);
		bool replaced = false;
		for (int k = 0; opts[k] != NULL; k++)
			if (strcmp(f, opts[k]) == 0 && bson_has_field(ixo, f))
				replaced = true;
		if (replaced || (unique && strcmp(f, "prepareUnique") == 0) || (force && strcmp(f, "unique") == 0))
			continue;
		bson_append_iter(&spec, f, -1, &it);
	}
	for (int k = 0; opts[k] != NULL; k++) {
		if (!bson_iter_init_find(&it, ixo, opts[k]))
			continue;
		if (strcmp(opts[k], "expireAfterSeconds") == 0)
			BSON_APPEND_INT32(&spec, opts[k], (int32_t)bson_iter_as_int64(&it));
		else if (bson_iter_as_bool(&it) && !(strcmp(opts[k], "prepareUnique") == 0 && (unique || ix->unique)))
			BSON_APPEND_BOOL(&spec, opts[k], true);
	}
	if (force && storage_index_key_only(ix))
		ret = storage_index_set_spec_relayout(st, s, db, coll, ix->name, &spec, err);
	else
		ret = storage_index_set_spec(st, s, db, coll, ix->name, &spec, err);
	bson_destroy(&spec);
	storage_coll_release(c);
	return ret == 0 ? 0 : tolerate(err, TERR_INDEX_NOT_FOUND, TERR_NAMESPACE_NOT_FOUND);
}

static int
apply_ddl(storage_t *st, storage_session_t *s, const parsed_t *p, terr_t *err)
{
	bson_iter_t it;
	const char *cmd, *arg;
	bson_t rest;
	int ret = 0;

	if (!bson_iter_init(&it, &p->o) || !bson_iter_next(&it))
		return terr_set(err, TERR_BAD_VALUE, "an empty command entry");
	cmd = bson_iter_key(&it);
	arg = BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : NULL;
	if (strcmp(cmd, "create") == 0 && arg != NULL) {
		copy_except(&p->o, &rest, "create", "idIndex");
		storage_set_next_uuid(p->ui);   /* the primary's */
		ret = storage_coll_create(st, s, p->db, arg, bson_empty(&rest) ? NULL : &rest, err);
		bson_destroy(&rest);
		return ret == 0 ? 0 : tolerate(err, TERR_NAMESPACE_EXISTS, 0);
	}
	if (strcmp(cmd, "drop") == 0 && arg != NULL) {
		ret = storage_coll_drop(st, s, p->db, arg, err);
		return ret == 0 ? 0 : tolerate(err, TERR_NAMESPACE_NOT_FOUND, 0);
	}
	if (strcmp(cmd, "dropDatabase") == 0)
		return storage_db_drop(st, s, p->db, err);
	if (strcmp(cmd, "renameCollection") == 0 && arg != NULL) {
		const char *to = NULL, *fdot, *tdot;
		bool drop_target = false;
		char fdb[128], tdb[128];
		if (bson_iter_init_find(&it, &p->o, "to") && BSON_ITER_HOLDS_UTF8(&it))
			to = bson_iter_utf8(&it, NULL);
		if (bson_iter_init_find(&it, &p->o, "dropTarget"))
			drop_target = !BSON_ITER_HOLDS_BOOL(&it) || bson_iter_bool(&it);
		fdot = strchr(arg, '.');
		tdot = to != NULL ? strchr(to, '.') : NULL;
		if (fdot == NULL || tdot == NULL || (size_t)(fdot - arg) >= sizeof(fdb) || (size_t)(tdot - to) >= sizeof(tdb))
			return terr_set(err, TERR_BAD_VALUE, "a renameCollection entry without valid namespaces");
		snprintf(fdb, sizeof(fdb), "%.*s", (int)(fdot - arg), arg);
		snprintf(tdb, sizeof(tdb), "%.*s", (int)(tdot - to), to);
		ret = storage_coll_rename(st, s, fdb, fdot + 1, tdb, tdot + 1, drop_target, err);
		return ret == 0 ? 0 : tolerate(err, TERR_NAMESPACE_NOT_FOUND, 0);
	}
	if (strcmp(cmd, "createIndexes") == 0 && arg != NULL) {
		copy_except(&p->o, &rest, "createIndexes", NULL);
		ret = storage_index_create(st, s, p->db, arg, &rest, err);
		bson_destroy(&rest);
		return ret == 0 ? 0 : tolerate(err, TERR_INDEX_ALREADY_EXISTS, 86 /* IndexKeySpecsConflict */);
	}
	if (strcmp(cmd, "commitIndexBuild") == 0 && arg != NULL) {
		bson_iter_t ix, one;
		if (bson_iter_init_find(&ix, &p->o, "indexes") && bson_iter_recurse(&ix, &one)) {
			while (ret == 0 && bson_iter_next(&one)) {
				bson_t spec;
				if (!sub_of(&one, &spec))
					continue;
				ret = storage_index_create(st, s, p->db, arg, &spec, err);
				if (ret != 0)
					ret = tolerate(err, TERR_INDEX_ALREADY_EXISTS, 86);
			}
		}
		return ret;
	}
	if (strcmp(cmd, "startIndexBuild") == 0 || strcmp(cmd, "abortIndexBuild") == 0)
		return 0;
	if (strcmp(cmd, "dropIndexes") == 0 && arg != NULL) {
		const char *name = NULL;
		if (bson_iter_init_find(&it, &p->o, "index") && BSON_ITER_HOLDS_UTF8(&it))
			name = bson_iter_utf8(&it, NULL);
		if (name == NULL)
			return terr_set(err, TERR_BAD_VALUE, "a dropIndexes entry without an index name");
		ret = storage_index_drop(st, s, p->db, arg, name, err);
		return ret == 0 ? 0 : tolerate(err, TERR_INDEX_NOT_FOUND, TERR_NAMESPACE_NOT_FOUND);
	}
	if (strcmp(cmd, "collMod") == 0 && arg != NULL && bson_iter_init_find(&it, &p->o, "index")) {
		bson_t ixo;
		if (!sub_of(&it, &ixo))
			return terr_set(err, TERR_BAD_VALUE, "a collMod entry whose index is not a document");
		return apply_index_mod(st, s, p->db, arg, &ixo, err);
	}
	if (strcmp(cmd, "collMod") == 0 && arg != NULL && !bson_has_field(&p->o, "index")) {
		storage_coll_t *c = NULL;
		bson_t merged;
		bson_iter_t oi;
		if (storage_coll_get(st, p->db, arg, &c, err) != 0)
			return tolerate(err, TERR_NAMESPACE_NOT_FOUND, 0);
		copy_except(c->options != NULL ? c->options : &rest, &merged, NULL, NULL);
		storage_coll_release(c);
		{
			bson_t next = BSON_INITIALIZER;
			if (bson_iter_init(&oi, &merged))
				while (bson_iter_next(&oi))
					if (!bson_has_field(&p->o, bson_iter_key(&oi)))
						bson_append_iter(&next, bson_iter_key(&oi), -1, &oi);
			if (bson_iter_init(&oi, &p->o))
				while (bson_iter_next(&oi))
					if (strcmp(bson_iter_key(&oi), "collMod") != 0)
						bson_append_iter(&next, bson_iter_key(&oi), -1, &oi);
			ret = storage_coll_set_options(st, s, p->db, arg, &next, err);
			bson_destroy(&next);
		}
		bson_destroy(&merged);
		return ret;
	}
	return terr_set(err, TERR_NOT_IMPLEMENTED, "applying the oplog command %s is not supported yet", cmd);
}

/* ---- views --------------------------------------------------------------------------------------- */

#define SYSTEM_VIEWS "system.views"

/* A system.views document's definition ({viewOn, pipeline[, collation]})
 * into def and its name (after "<db>.") into *name; false when it is none. */
static bool
view_def_of(const char *db, const bson_t *doc, const char **name, bson_t *def)
{
	static const char *const fields[] = {"viewOn", "pipeline", "collation"};
	bson_iter_t it;
	const char *id;
	size_t n = strlen(db);

	if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_UTF8(&it))
		return false;
	id = bson_iter_utf8(&it, NULL);
	if (strncmp(id, db, n) != 0 || id[n] != '.' || id[n + 1] == '\0')
		return false;
	if (!bson_iter_init_find(&it, doc, "viewOn") || !BSON_ITER_HOLDS_UTF8(&it) ||
	    !bson_iter_init_find(&it, doc, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) ||
	    (bson_iter_init_find(&it, doc, "collation") && !BSON_ITER_HOLDS_DOCUMENT(&it)))
		return false;
	*name = id + n + 1;
	bson_init(def);
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (bson_iter_init_find(&it, doc, fields[i]))
			bson_append_iter(def, fields[i], -1, &it);
	return true;
}

int
repl_views_reload(storage_t *st, storage_session_t *s, const char *db, terr_t *err)
{
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_t defs = BSON_INITIALIZER, current = BSON_INITIALIZER, doc;
	bson_iter_t it, f;
	int rc = 0;

	if (storage_coll_get(st, db, SYSTEM_VIEWS, &c, NULL) == 0 && c != NULL) {
		if (storage_scan_open(s, c, false, &cur, err) == 0) {
			while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
				const char *name;
				bson_t def;
				if (view_def_of(db, &doc, &name, &def)) {
					BSON_APPEND_DOCUMENT(&defs, name, &def);
					bson_destroy(&def);
				}
			}
			storage_cursor_close(cur);
		} else {
			rc = -1;
		}
		storage_coll_release(c);
	}
	if (storage_txn_active(s))
		storage_txn_rollback(s);
	if (rc < 0) {
		bson_destroy(&defs);
		bson_destroy(&current);
		return -1;
	}
	storage_list_views(st, db, &current);
	bson_iter_init(&it, &current);
	while (bson_iter_next(&it)) {
		terr_t e = TERR_INIT;
		if (!bson_iter_init_find(&f, &defs, bson_iter_key(&it)))
			(void)storage_view_drop(st, db, bson_iter_key(&it), &e);
		terr_clear(&e);
	}
	bson_iter_init(&it, &defs);
	while (bson_iter_next(&it)) {
		bson_t def, old;
		uint32_t len;
		const uint8_t *data;
		terr_t e = TERR_INIT;
		bson_iter_document(&it, &len, &data);
		if (!bson_init_static(&def, data, len))
			continue;
		if (!bson_iter_init_find(&f, &current, bson_iter_key(&it)))
			(void)storage_view_create(st, db, bson_iter_key(&it), &def, &e);
		else {
			bson_iter_document(&f, &len, &data);
			if (bson_init_static(&old, data, len) && !bson_equal(&old, &def))
				(void)storage_view_set(st, db, bson_iter_key(&it), &def, &e);
		}
		terr_clear(&e);   /* a collection of that name: left out */
	}
	bson_destroy(&defs);
	bson_destroy(&current);
	return 0;
}

/* Whether a parsed entry (or one operation of an applyOps) wrote to
 * system.views: its database in db. */
static bool
touches_views(const parsed_t *p)
{
	bson_iter_t it;

	if (p->op[0] == 'i' || p->op[0] == 'u' || p->op[0] == 'd')
		return strcmp(p->coll, SYSTEM_VIEWS) == 0;
	if (p->op[0] != 'c' || !bson_iter_init(&it, &p->o) || !bson_iter_next(&it))
		return false;
	if (strcmp(bson_iter_key(&it), "dropDatabase") == 0)
		return false;   /* storage_db_drop drops the views */
	/* drop or rename of system.views, renames into it */
	if (BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), SYSTEM_VIEWS) == 0)
		return true;
	return bson_iter_init_find(&it, &p->o, "to") && BSON_ITER_HOLDS_UTF8(&it) &&
	    strstr(bson_iter_utf8(&it, NULL), "." SYSTEM_VIEWS) != NULL;
}

/* The databases whose system.views an applyOps wrote (up to n; *count). */
static void
ops_views_dbs(const bson_t *ops, char dbs[][128], int n, int *count)
{
	bson_iter_t it;

	*count = 0;
	if (!bson_iter_init(&it, ops))
		return;
	while (bson_iter_next(&it) && *count < n) {
		bson_t one;
		parsed_t p;
		terr_t e = TERR_INIT;
		bool seen = false;
		if (!sub_of(&it, &one) || parse(&one, &p, &e) != 0 || p.op[0] == 'n' || !touches_views(&p)) {
			terr_clear(&e);
			continue;
		}
		for (int i = 0; i < *count; i++)
			seen = seen || strcmp(dbs[i], p.db) == 0;
		if (!seen)
			strcpy(dbs[(*count)++], p.db);
	}
}

/* One pass over an applyOps' operations: the 'c' entries (ddl: the
 * collections the transaction created, run first, each on its own) or the
 * i/u/d ones (!ddl). */
static int
apply_ops_pass(storage_t *st, storage_session_t *s, const bson_t *ops, bool ddl, terr_t *err)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, ops))
		return 0;
	while (bson_iter_next(&it)) {
		bson_t one;
		parsed_t p;
		if (!sub_of(&it, &one))
			return terr_set(err, TERR_BAD_VALUE, "an applyOps operation is not a document");
		RET(parse(&one, &p, err));
		if (ddl && p.op[0] == 'c')
			RET(apply_ddl(st, s, &p, err));
		else if (!ddl && (p.op[0] == 'i' || p.op[0] == 'u' || p.op[0] == 'd'))
			RET(apply_crud(st, s, &p, false, err));
	}
	return 0;
}

/* config.transactions created if missing, in its own catalog transaction:
 * before the transaction that writes a session row.  0, or -1 with err. */
static int
session_table(storage_t *st, storage_session_t *s, terr_t *err)
{
	static const parsed_t table = {.op = "i", .db = "config", .coll = "transactions"};
	storage_coll_t *c = NULL;
	int ret = coll_of(st, s, &table, true, &c, err) == 0 ? 0 : -1;

	storage_coll_release(c);
	return ret;
}

/* A write of a retryable write or a transaction: the session's row of
 * config.transactions, as the primary keeps it ({_id: lsid, txnNum,
 * lastWriteOpTime, lastWriteDate[, state]}), in s's open transaction, so a
 * retry that reaches this member once it is primary answers the first
 * result (repl/retryable.h rebuilds it from the entry) instead of running
 * again.  Mongod's secondaries keep the same table the same way. */
static int
session_row(storage_t *st, storage_session_t *s, const bson_t *entry, bool txn, terr_t *err)
{
	static const parsed_t table = {.db = "config", .coll = "transactions"};
	bson_iter_t it, lsid, num, ts;
	storage_coll_t *c = NULL;
	bson_t row = BSON_INITIALIZER, cur, old, ot;
	recid_t rid;
	uint32_t secs, inc;
	int64_t t = -1;
	int r, ret = 0;

	if (!bson_iter_init_find(&lsid, entry, "lsid") || !BSON_ITER_HOLDS_DOCUMENT(&lsid) ||
	    !bson_iter_init_find(&num, entry, "txnNumber") || !bson_iter_init_find(&ts, entry, "ts") ||
	    !BSON_ITER_HOLDS_TIMESTAMP(&ts))
		return 0;
	if (bson_iter_init_find(&it, entry, "t"))
		t = bson_iter_as_int64(&it);
	bson_iter_timestamp(&ts, &secs, &inc);
	if (storage_coll_get(st, table.db, table.coll, &c, NULL) != 0)
		return 0;   /* created before the transaction (repl_oplog_apply_entry) */
	bson_append_iter(&row, "_id", 3, &lsid);
	BSON_APPEND_INT64(&row, "txnNum", bson_iter_as_int64(&num));
	BSON_APPEND_DOCUMENT_BEGIN(&row, "lastWriteOpTime", &ot);
	BSON_APPEND_TIMESTAMP(&ot, "ts", secs, inc);
	BSON_APPEND_INT64(&ot, "t", t);
	bson_append_document_end(&row, &ot);
	if (bson_iter_init_find(&it, entry, "wall") && BSON_ITER_HOLDS_DATE_TIME(&it))
		BSON_APPEND_DATE_TIME(&row, "lastWriteDate", bson_iter_date_time(&it));
	if (txn)
		BSON_APPEND_UTF8(&row, "state", "committed");
	{
		bson_iter_t idit;
		bson_iter_init_find(&idit, &row, "_id");
		r = storage_doc_find_id(s, c, bson_iter_value(&idit), &rid, &cur, err);
	}
	if (r < 0) {
		ret = -1;
	} else if (r == 0) {
		bson_copy_to(&cur, &old);
		ret = storage_doc_update(s, c, rid, &old, &row, err);
		bson_destroy(&old);
	} else {
		ret = storage_doc_insert(s, c, &row, NULL, err);
	}
	bson_destroy(&row);
	storage_coll_release(c);
	return ret;
}

/* ---- transactions of several entries --------------------------------------------------------- */

/* The partialTxn entries of the transaction being received (this thread's,
 * copies, oldest first): held until their commit entry comes, then applied
 * with it in one storage transaction, so no member ever shows part of a
 * transaction (mongod's secondaries likewise apply a chain only at its
 * commit entry, reading it back through prevOpTime). */
static _Thread_local bson_t **tl_chain;
static _Thread_local int tl_chain_n, tl_chain_cap;

void
repl_oplog_apply_chain_reset(void)
{
	for (int i = 0; i < tl_chain_n; i++)
		bson_destroy(tl_chain[i]);
	bson_free(tl_chain);
	tl_chain = NULL;
	tl_chain_n = tl_chain_cap = 0;
}

int
repl_oplog_apply_chain_held(void)
{
	return tl_chain_n;
}

/* An entry's ts (0: none) and its prevOpTime's ts (0: none or null). */
static repl_ts_t
entry_ts_of(const bson_t *e, const char *path)
{
	bson_iter_t it, sub;
	uint32_t secs, inc;

	if (strcmp(path, "ts") == 0) {
		if (!bson_iter_init_find(&it, e, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&it))
			return 0;
	} else if (!bson_iter_init_find(&it, e, path) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
	    !bson_iter_recurse(&it, &sub) || !bson_iter_find(&sub, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&sub)) {
		return 0;
	} else {
		it = sub;
	}
	bson_iter_timestamp(&it, &secs, &inc);
	return REPL_TS(secs, inc);
}

/* The applyOps array of a transaction's entry into ops (borrowed). */
static bool
entry_ops(const bson_t *e, bson_t *ops)
{
	bson_iter_t it, o;

	return bson_iter_init_find(&it, e, "o") && BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &o) &&
	    bson_iter_next(&o) && strcmp(bson_iter_key(&o), "applyOps") == 0 && BSON_ITER_HOLDS_ARRAY(&o) &&
	    sub_of(&o, ops);
}

static int
ops_count(const bson_t *ops)
{
	bson_iter_t it;
	int n = 0;

	if (bson_iter_init(&it, ops))
		while (bson_iter_next(&it))
			n++;
	return n;
}

/* A partialTxn entry: held.  One whose prevOpTime is not the last held
 * entry starts a new chain (what was held belonged to a transaction whose
 * commit entry never came: never applied, as on mongod). */
static void
chain_hold(const bson_t *entry)
{
	if (tl_chain_n > 0 && entry_ts_of(entry, "prevOpTime") != entry_ts_of(tl_chain[tl_chain_n - 1], "ts"))
		repl_oplog_apply_chain_reset();
	if (tl_chain_n == tl_chain_cap) {
		tl_chain_cap = tl_chain_cap ? tl_chain_cap * 2 : 8;
		tl_chain = bson_realloc(tl_chain, sizeof(*tl_chain) * (size_t)tl_chain_cap);
	}
	tl_chain[tl_chain_n++] = bson_copy(entry);
}

/* The commit entry of a chain (applyOps with `count`): the held entries and
 * it, checked (prevOpTime links, the count of operations), applied in one
 * storage transaction that writes every entry of the chain too. */
static int
chain_commit(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entry, bool sync, bool *applied,
             terr_t *err)
{
	bson_iter_t it;
	bson_t ops;
	int64_t want = -1, have = 0;
	int n = tl_chain_n, ret = 0;
	bool was;
	char dbs[8][128];
	int ndbs = 0;

	if (bson_iter_init_find(&it, entry, "o") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_t o;
		if (bson_iter_recurse(&it, &o) && bson_iter_find(&o, "count") && BSON_ITER_HOLDS_NUMBER(&o))
			want = bson_iter_as_int64(&o);
	}
	for (int i = 0; i <= n; i++) {
		const bson_t *e = i < n ? tl_chain[i] : entry;
		repl_ts_t prev = i > 0 ? entry_ts_of(tl_chain[i - 1], "ts") : 0;
		if (!entry_ops(e, &ops)) {
			repl_oplog_apply_chain_reset();
			return terr_set(err, TERR_BAD_VALUE, "applyOps is not an array");
		}
		if (i > 0 && entry_ts_of(e, "prevOpTime") != prev) {
			repl_oplog_apply_chain_reset();
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "the earlier oplog entries of a transaction of several entries were not received (its commit entry's chain is broken)");
		}
		have += ops_count(&ops);
	}
	if (n == 0 || have != want) {
		repl_oplog_apply_chain_reset();
		return terr_set(err, TERR_NOT_IMPLEMENTED,
		    "the earlier oplog entries of a transaction of several entries were not received (%lld operations of %lld)",
		    (long long)have, (long long)want);
	}
	was = storage_thread_set_unobserved(true);
	/* collections the transaction created first, each on its own */
	for (int i = 0; ret == 0 && i <= n; i++) {
		entry_ops(i < n ? tl_chain[i] : entry, &ops);
		ret = apply_ops_pass(st, s, &ops, true, err);
	}
	if (ret == 0 && bson_has_field(entry, "lsid") && bson_has_field(entry, "txnNumber"))
		ret = session_table(st, s, err);
	if (ret == 0)
		ret = storage_txn_begin(s, err);
	if (ret == 0) {
		for (int i = 0; ret == 0 && i <= n; i++) {
			entry_ops(i < n ? tl_chain[i] : entry, &ops);
			ret = apply_ops_pass(st, s, &ops, false, err);
		}
		if (ret == 0)
			ret = session_row(st, s, entry, true, err);
		/* every entry with its own ts; every write commits at the last
		 * one's (as the primary wrote them) */
		for (int i = 0; ret == 0 && i <= n; i++)
			ret = repl_oplog_write_replicated(op, s, i < n ? tl_chain[i] : entry, err);
		if (ret == 0)
			ret = storage_txn_commit(s, sync, err);
		else
			storage_txn_rollback(s);
	}
	storage_thread_set_unobserved(was);
	for (int i = 0; ret == 0 && i <= n; i++) {
		int k = 0;
		entry_ops(i < n ? tl_chain[i] : entry, &ops);
		ops_views_dbs(&ops, dbs + ndbs, 8 - ndbs, &k);
		ndbs += k;
	}
	repl_oplog_apply_chain_reset();
	if (ret == 0)
		*applied = true;
	for (int i = 0; ret == 0 && i < ndbs; i++)
		ret = repl_views_reload(st, s, dbs[i], err);
	return ret;
}

int
repl_oplog_apply_entry(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entry,
                       const repl_ts_t *after_ts, bool sync, bool *applied, terr_t *err)
{
	parsed_t p;
	bson_iter_t it;
	bson_t found, ops;
	uint32_t secs, inc;
	bson_t kept_row;
	bool was, is_ops = false, defer = tl_defer_session, kept = false;
	int r, ret = 0;

	*applied = false;
	tl_defer_session = false;   /* one entry only, whatever happens to it */
	if (!bson_iter_init_find(&it, entry, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&it))
		return terr_set(err, TERR_BAD_VALUE, "a replicated oplog entry has no ts");
	bson_iter_timestamp(&it, &secs, &inc);
	tl_entry_ts = REPL_TS(secs, inc);
	r = repl_oplog_find(op, s, REPL_TS(secs, inc), &found, err);
	if (r < 0)
		return -1;
	if (r == 0) {
		bson_destroy(&found);
		/* a chain's entries are all here or none (written in one
		 * transaction): nothing held may wait for this one */
		repl_oplog_apply_chain_reset();
		return 0;   /* already here: its writer's own, or applied before a restart */
	}
	/* an entry of this member's own that the set's log does not have (it
	 * wrote it as a primary that lost its leadership before Raft took it):
	 * applying the set's entries over it would diverge silently */
	if (after_ts != NULL) {
		repl_oplog_cursor_t *cur = NULL;
		bson_t own;
		int got = 0;
		if (repl_oplog_scan_open(op, s, *after_ts, &cur, err) != 0)
			return -1;
		got = repl_oplog_cursor_next(cur, &own, err);
		if (got == 1) {
			bson_iter_t ot;
			uint32_t os = 0, oi = 0;
			if (bson_iter_init_find(&ot, &own, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&ot))
				bson_iter_timestamp(&ot, &os, &oi);
			repl_oplog_cursor_close(cur);
			if (storage_txn_active(s))
				storage_txn_rollback(s);
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "this member's oplog has an entry (ts Timestamp(%u, %u)) that the set's log does not have: it needs a rollback, which Tamga does not do yet",
			    os, oi);
		}
		repl_oplog_cursor_close(cur);
		if (storage_txn_active(s))
			storage_txn_rollback(s);
		if (got < 0)
			return -1;
	}
	RET(parse(entry, &p, err));
	if (p.op[0] == 'c' && bson_iter_init(&it, &p.o) && bson_iter_next(&it) &&
	    strcmp(bson_iter_key(&it), "applyOps") == 0) {
		if (bson_iter_init_find(&it, &p.o, "partialTxn") && bson_iter_as_bool(&it)) {
			chain_hold(entry);
			return 0;   /* applied with its commit entry */
		}
		if (bson_has_field(&p.o, "count"))
			return chain_commit(op, st, s, entry, sync, applied, err);
		bson_iter_init(&it, &p.o);
		bson_iter_next(&it);
		if (!BSON_ITER_HOLDS_ARRAY(&it) || !sub_of(&it, &ops))
			return terr_set(err, TERR_BAD_VALUE, "applyOps is not an array");
		is_ops = true;
	}
	if (tl_chain_n > 0)
		repl_oplog_apply_chain_reset();   /* held entries whose commit never came */
	was = storage_thread_set_unobserved(true);
	if (p.op[0] == 'c')
		ret = is_ops ? apply_ops_pass(st, s, &ops, true, err) : apply_ddl(st, s, &p, err);
	/* a retryable write's reply kept whole (repl/retryable.h): its table
	 * exists before the entry's transaction, which writes its row */
	kept = p.op[0] == 'n' && repl_retryable_reply_of_entry(entry, &kept_row);
	if (ret == 0 && kept)
		ret = repl_retryable_reply_table(st, s, err);
	/* the session table must exist before the entry's transaction */
	if (ret == 0 && bson_has_field(entry, "lsid") && bson_has_field(entry, "txnNumber"))
		ret = session_table(st, s, err);
	if (ret == 0)
		ret = storage_txn_begin(s, err);
	if (ret == 0) {
		if (p.op[0] == 'i' || p.op[0] == 'u' || p.op[0] == 'd')
			ret = apply_crud(st, s, &p, false, err);
		else if (is_ops)
			ret = apply_ops_pass(st, s, &ops, false, err);
		else if (kept)
			ret = repl_retryable_reply_apply(st, s, &kept_row, err);
		else if (p.op[0] != 'n' && p.op[0] != 'c')
			ret = terr_set(err, TERR_NOT_IMPLEMENTED, "cannot apply an oplog entry of op '%s'", p.op);
		if (ret == 0 && !(defer && !is_ops))
			ret = session_row(st, s, entry, is_ops, err);
		if (ret == 0)
			ret = repl_oplog_write_replicated(op, s, entry, err);
		if (ret == 0)
			ret = storage_txn_commit(s, sync, err);
		else
			storage_txn_rollback(s);
	}
	storage_thread_set_unobserved(was);
	if (ret == 0)
		*applied = true;
	/* a write to system.views: the views are what it holds now */
	if (ret == 0 && p.op[0] != 'n') {
		char dbs[8][128];
		int n = 0;
		if (is_ops)
			ops_views_dbs(&ops, dbs, 8, &n);
		else if (touches_views(&p))
			strcpy(dbs[n++], p.db);
		for (int i = 0; ret == 0 && i < n; i++)
			ret = repl_views_reload(st, s, dbs[i], err);
	}
	return ret;
}

/* ---- a run of CRUD entries in one transaction --------------------------------------------------- */

bool
repl_oplog_apply_groupable(const bson_t *entry)
{
	bson_iter_t it;
	const char *op = NULL, *ns = NULL;
	uint32_t nl = 0;

	if (!bson_iter_init(&it, entry))
		return false;
	while ((op == NULL || ns == NULL) && bson_iter_next(&it)) {
		const char *key = bson_iter_key(&it);
		if (op == NULL && strcmp(key, "op") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return false;
			op = bson_iter_utf8(&it, NULL);
		} else if (ns == NULL && strcmp(key, "ns") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return false;
			ns = bson_iter_utf8(&it, &nl);
		}
	}
	if (op == NULL || ns == NULL || op[0] == '\0' || op[1] != '\0' ||
	    (op[0] != 'i' && op[0] != 'u' && op[0] != 'd' && op[0] != 'n'))
		return false;
	/* a kept retryable reply's no-op creates its table before its
	 * transaction (repl_oplog_apply_entry): alone */
	if (op[0] == 'n') {
		bson_t row;
		return !repl_retryable_reply_of_entry(entry, &row);
	}
	/* a write to system.views reloads the views after its commit: alone */
	return !(nl >= sizeof(SYSTEM_VIEWS) && strcmp(ns + nl - (sizeof(SYSTEM_VIEWS) - 1), SYSTEM_VIEWS) == 0 &&
	    ns[nl - sizeof(SYSTEM_VIEWS)] == '.');
}

/* The run in one transaction: 0 (committed), or -1 with err (rolled back,
 * nothing of it written). */
static int
run_txn(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entries, int n, repl_ts_t local_newest,
        bool defer_last, bool *applied, terr_t *err)
{
	bool sessions = false, cur_ok, nxt_ok = false;
	session_key_t cur, nxt = {0};
	int ret = 0;

	for (int i = 0; i < n; i++) {
		applied[i] = false;
		if (!sessions && bson_has_field(&entries[i], "lsid") && bson_has_field(&entries[i], "txnNumber"))
			sessions = true;
	}
	/* the session table must exist before the transaction */
	if (sessions)
		ret = session_table(st, s, err);
	if (ret == 0)
		ret = storage_txn_begin(s, err);
	if (ret != 0)
		return -1;
	/* each entry's session key read once (cur: entry i's, nxt: i + 1's),
	 * not twice as repl_oplog_apply_same_session of each pair would */
	cur_ok = session_key(&entries[0], &cur);
	for (int i = 0; ret == 0 && i < n; i++, cur = nxt, cur_ok = nxt_ok) {
		const bson_t *e = &entries[i];
		repl_ts_t ts;
		parsed_t p;
		nxt_ok = i + 1 < n && session_key(&entries[i + 1], &nxt);
		if ((ret = parse(e, &p, err)) != 0)
			break;
		if ((ts = p.ts) == 0) {
			ret = terr_set(err, TERR_BAD_VALUE, "a replicated oplog entry has no ts");
			break;
		}
		tl_entry_ts = ts;
		if (ts <= local_newest) {
			bson_t found;
			int r = repl_oplog_find(op, s, ts, &found, err);
			if (r < 0) {
				ret = -1;
				break;
			}
			if (r == 0) {
				bson_destroy(&found);
				continue;   /* already here: applied before a restart */
			}
		}
		/* the entry's ts is the transaction's commit timestamp from here
		 * on: the entry and the writes below carry it, a read at an
		 * earlier ts sees none of them, a read at it all */
		if ((ret = repl_oplog_write_replicated_at(op, s, e, ts, p.t, err)) != 0)
			break;
		if (p.op[0] != 'n')
			ret = apply_crud(st, s, &p, true, err);
		if (ret == 0 && !(i + 1 < n ? cur_ok && nxt_ok && session_key_eq(&cur, &nxt) : defer_last))
			ret = session_row(st, s, e, false, err);
		if (ret == 0)
			applied[i] = true;
	}
	if (ret == 0)
		ret = storage_txn_commit(s, false, err);
	else
		storage_txn_rollback(s);
	if (ret != 0)
		for (int i = 0; i < n; i++)
			applied[i] = false;
	return ret;
}

int
repl_oplog_apply_run(repl_oplog_t *op, storage_t *st, storage_session_t *s, const bson_t *entries, int n,
                     repl_ts_t local_newest, bool defer_last, bool *applied, int *done, terr_t *err)
{
	terr_t first = TERR_INIT;
	bool was;
	int ret;

	*done = 0;
	tl_defer_session = false;
	if (tl_chain_n > 0)
		repl_oplog_apply_chain_reset();   /* held entries whose commit never came */
	if (n <= 0)
		return 0;
	was = storage_thread_set_unobserved(true);
	ret = run_txn(op, st, s, entries, n, local_newest, defer_last, applied, &first);
	storage_thread_set_unobserved(was);
	if (ret == 0) {
		*done = n;
		return 0;
	}
	/* one entry of the run failed: none of it is written; each again on
	 * its own, as before runs, so the entries before the failing one are
	 * applied and its error is its own */
	terr_clear(&first);
	for (int i = 0; i < n; i++) {
		if (i + 1 < n ? repl_oplog_apply_same_session(&entries[i], &entries[i + 1]) : defer_last)
			repl_oplog_apply_defer_session_row();
		if (repl_oplog_apply_entry(op, st, s, &entries[i], NULL, false, &applied[i], err) != 0)
			return -1;
		*done = i + 1;
	}
	return 0;
}
