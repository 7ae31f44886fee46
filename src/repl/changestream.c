/*
 * changestream.c -- the change-stream reader (see changestream.h): the
 * $changeStream spec as mongod's IDL reads it, the start point (now, a
 * resume token, an operation time), the oplog scan, one transform per kind
 * of oplog entry (a table), the resume-token checks (280, 286) and the
 * postBatchResumeToken.
 *
 * A run keeps an oplog cursor (repl_oplog_scan_open) between batches;
 * what one entry makes (a transaction's applyOps: one event per
 * operation, all at the commit's ts with txnOpIndex 0, 1, ...) waits in a
 * small queue.  Its position token (`pos`) is the token of the last event
 * it handed on, or a high-water mark at the last entry it read, whichever
 * is greater: the postBatchResumeToken of a batch that read everything
 * there was.
 */
#include "repl/changestream.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "bson/value.h"
#include "common/mem.h"
#include "common/opctx.h"
#include "query/match.h"
#include "repl/cs_token.h"
#include "repl/preimage.h"

enum { LVL_COLL, LVL_DB, LVL_CLUSTER };
enum { FD_DEFAULT, FD_LOOKUP, FD_WHEN, FD_REQUIRED };
enum { FB_OFF, FB_WHEN, FB_REQUIRED };
enum { RS_NONE, RS_AFTER, RS_START_AFTER, RS_AT };

#define CODE_CHANGE_STREAM_FATAL 280
#define CODE_HISTORY_LOST 286
#define CODE_INVALID_RESUME_TOKEN 260
#define CODE_NO_MATCHING_DOCUMENT 47

/*
 * Events built once for every stream: the streams of a deployment read the
 * same oplog entries, and streams whose options agree (showExpandedEvents,
 * showRawUpdateDescription) build the same event for an operation, token
 * included.  The first stream to build it leaves a copy here, keyed by the
 * operation's ts, its index in the entry (txnOpIndex) and those options;
 * the others copy it.  An operation's event never changes (oplog entries
 * are immutable), so a slot is only ever replaced, by another operation
 * hashing to it.  Only the event as assemble() makes it: the per-stream
 * parts (pre/post-images, updateLookup) are added after.  Events past
 * EV_CACHE_MAX_DOC are not kept (memory).
 */
#define EV_CACHE_SLOTS 256
/* larger events are built by each stream: the cache holds at most
 * EV_CACHE_SLOTS * EV_CACHE_MAX_DOC bytes (16 MiB) */
#define EV_CACHE_MAX_DOC (64 * 1024)

typedef struct ev_slot {
	repl_ts_t ts;
	int32_t idx;
	uint8_t opts;               /* bit 0 expanded, bit 1 raw update */
	bool used;
	bson_t doc;
} ev_slot_t;

struct repl_cs_service {
	storage_t *st;
	repl_oplog_t *op;
	pthread_mutex_t cache_lock;
	ev_slot_t cache[EV_CACHE_SLOTS];
	atomic_ullong cache_hits, cache_misses;
};

typedef struct cs_plan {
	repl_cs_service_t *svc;
	int level;
	char *db, *coll;
	int full_doc, before;
	bool expanded, show_system, raw_update;
	int resume;
	cs_token_t tok;
	char *tok_hex;
	repl_ts_t start_at;
	match_t *pushed;          /* the following $match, on the event's stub */
} cs_plan_t;

typedef struct cs_run {
	const cs_plan_t *p;
	repl_oplog_cursor_t *cur;
	storage_session_t *s;
	repl_ts_t after;           /* the scan starts after it */
	bool opened;
	char *resume_hex;          /* events <= it are skipped */
	char *resume_base;         /* a fragment's token: its event's token (handed on whole) */
	char *frag_hex;            /* that event, when handed on: the split stage asks (resume_fragment) */
	bool must_find;            /* an event token: it must be seen first */
	char *pos;                 /* the position token (owned hex) */
	bson_t **queue;            /* events of the entry being unwound (tm_bson_array_new(1) each) */
	int nq, iq, capq;
	repl_ts_t scanned;         /* the last entry read (0: none) */
	bool at_end;               /* the scan returned 0: reopened at restore */
	uint64_t scanned_n;        /* entries read (for the interrupt check) */
	bool invalidated;          /* the invalidate was handed on */
	bson_t out;
} cs_run_t;

repl_cs_service_t *
repl_cs_service_new(storage_t *st, repl_oplog_t *op)
{
	repl_cs_service_t *svc = bson_malloc0(sizeof(*svc));

	svc->st = st;
	svc->op = op;
	pthread_mutex_init(&svc->cache_lock, NULL);
	return svc;
}

void
repl_cs_service_free(repl_cs_service_t *svc)
{
	if (svc == NULL)
		return;
	for (int i = 0; i < EV_CACHE_SLOTS; i++)
		if (svc->cache[i].used)
			bson_destroy(&svc->cache[i].doc);
	pthread_mutex_destroy(&svc->cache_lock);
	bson_free(svc);
}

void
repl_cs_service_cache_stats(repl_cs_service_t *svc, uint64_t *hits, uint64_t *misses)
{
	*hits = atomic_load(&svc->cache_hits);
	*misses = atomic_load(&svc->cache_misses);
}

static ev_slot_t *
cache_slot(repl_cs_service_t *svc, repl_ts_t ts, int32_t idx, uint8_t opts)
{
	uint64_t h = (ts ^ (ts >> 29) ^ ((uint64_t)(uint32_t)idx * 0x9E3779B97F4A7C15ull)) * 4 + opts;

	return &svc->cache[h % EV_CACHE_SLOTS];
}

/* Copy the shared event of (ts, idx, opts) into out (empty): true when
 * there was one. */
static bool
cache_get(repl_cs_service_t *svc, repl_ts_t ts, int32_t idx, uint8_t opts, bson_t *out)
{
	ev_slot_t *sl = cache_slot(svc, ts, idx, opts);
	bool hit;

	pthread_mutex_lock(&svc->cache_lock);
	hit = sl->used && sl->ts == ts && sl->idx == idx && sl->opts == opts;
	if (hit)
		bson_concat(out, &sl->doc);
	pthread_mutex_unlock(&svc->cache_lock);
	atomic_fetch_add(hit ? &svc->cache_hits : &svc->cache_misses, 1);
	return hit;
}

static void
cache_put(repl_cs_service_t *svc, repl_ts_t ts, int32_t idx, uint8_t opts, const bson_t *doc)
{
	ev_slot_t *sl = cache_slot(svc, ts, idx, opts);

	if (doc->len > EV_CACHE_MAX_DOC)
		return;
	pthread_mutex_lock(&svc->cache_lock);
	if (sl->used)
		bson_destroy(&sl->doc);
	bson_copy_to(doc, &sl->doc);
	sl->ts = ts;
	sl->idx = idx;
	sl->opts = opts;
	sl->used = true;
	pthread_mutex_unlock(&svc->cache_lock);
}

/* ---- the spec ------------------------------------------------------------ */

static void
plan_free(void *pp)
{
	cs_plan_t *p = pp;

	if (p == NULL)
		return;
	bson_free(p->db);
	bson_free(p->coll);
	bson_free(p->tok_hex);
	match_free(p->pushed);
	bson_free(p);
}

static int
get_bool(const bson_iter_t *it, bool *out, terr_t *err)
{
	if (!BSON_ITER_HOLDS_BOOL(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$changeStream.%s' is the wrong type '%s', expected type 'bool'", bson_iter_key(it),
		    bv_type_name(bson_iter_type(it)));
	*out = bson_iter_bool(it);
	return 0;
}

static int
get_enum(const bson_iter_t *it, const char *const *names, int *out, terr_t *err)
{
	const char *s;

	if (!BSON_ITER_HOLDS_UTF8(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$changeStream.%s' is the wrong type '%s', expected type 'string'", bson_iter_key(it),
		    bv_type_name(bson_iter_type(it)));
	s = bson_iter_utf8(it, NULL);
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
	return terr_set(err, TERR_BAD_VALUE, "Enumeration value '%s' for field '$changeStream.%s' is not a valid value.",
	    s, bson_iter_key(it));
}

static int
get_token(const bson_iter_t *it, cs_token_t *tok, char **hex, terr_t *err)
{
	bson_t d;
	const uint8_t *data;
	uint32_t len;

	if (!BSON_ITER_HOLDS_DOCUMENT(it))
		return terr_set(err, TERR_TYPE_MISMATCH,
		    "BSON field '$changeStream.%s' is the wrong type '%s', expected type 'object'", bson_iter_key(it),
		    bv_type_name(bson_iter_type(it)));
	bson_iter_document(it, &len, &data);
	bson_init_static(&d, data, len);
	return cs_token_parse(&d, tok, hex, err);
}

static bool
is_system(const char *coll)
{
	return coll != NULL && strncmp(coll, "system.", 7) == 0;
}

static int
cs_parse(void *ctx, const agg_host_t *host, const bson_value_t *spec, void **out, terr_t *err)
{
	static const char *const fd_names[] = {"default", "updateLookup", "whenAvailable", "required", NULL};
	static const char *const fb_names[] = {"off", "whenAvailable", "required", NULL};
	static const char *const known[] = {
		"resumeAfter", "startAfter", "startAtOperationTime", "fullDocument", "fullDocumentBeforeChange",
		"allChangesForCluster", "showMigrationEvents", "showSystemEvents", "allowToRunOnConfigDB",
		"allowToRunOnSystemNS", "showExpandedEvents", "showRawUpdateDescription", "version",
		"supportedEvents", "ignoreRemovedShards", NULL,
	};
	cs_plan_t *p = bson_malloc0(sizeof(*p));
	bson_t sd;
	bson_iter_t it;
	bool all = false, cfg = false, sys_ns = false, ignored, has_after = false, has_start_after = false;
	bool has_at = false;
	cs_token_t t2;
	char *hex2 = NULL;
	int ret = -1;

	p->svc = ctx;
	bson_init_static(&sd, spec->value.v_doc.data, spec->value.v_doc.data_len);
	bson_iter_init(&it, &sd);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int i;
		for (i = 0; known[i] != NULL && strcmp(known[i], k) != 0; i++)
			;
		if (known[i] == NULL) {
			ret = terr_set(err, 40415, "BSON field '$changeStream.%s' is an unknown field.", k);
			goto err;
		}
		if (strcmp(k, "resumeAfter") == 0) {
			ERR(get_token(&it, &p->tok, &p->tok_hex, err));
			has_after = true;
		} else if (strcmp(k, "startAfter") == 0) {
			if (p->tok_hex != NULL) {
				ERR(get_token(&it, &t2, &hex2, err));
				bson_free(hex2);
				hex2 = NULL;
			} else {
				ERR(get_token(&it, &p->tok, &p->tok_hex, err));
			}
			has_start_after = true;
		} else if (strcmp(k, "startAtOperationTime") == 0) {
			uint32_t ts, inc;
			if (!BSON_ITER_HOLDS_TIMESTAMP(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '$changeStream.startAtOperationTime' is the wrong type '%s', expected type 'timestamp'",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
			bson_iter_timestamp(&it, &ts, &inc);
			p->start_at = ((repl_ts_t)ts << 32) | inc;
			has_at = true;
		} else if (strcmp(k, "fullDocument") == 0) {
			ERR(get_enum(&it, fd_names, &p->full_doc, err));
		} else if (strcmp(k, "fullDocumentBeforeChange") == 0) {
			ERR(get_enum(&it, fb_names, &p->before, err));
		} else if (strcmp(k, "allChangesForCluster") == 0) {
			ERR(get_bool(&it, &all, err));
		} else if (strcmp(k, "showSystemEvents") == 0) {
			ERR(get_bool(&it, &p->show_system, err));
		} else if (strcmp(k, "allowToRunOnConfigDB") == 0) {
			ERR(get_bool(&it, &cfg, err));
		} else if (strcmp(k, "allowToRunOnSystemNS") == 0) {
			ERR(get_bool(&it, &sys_ns, err));
		} else if (strcmp(k, "showExpandedEvents") == 0) {
			ERR(get_bool(&it, &p->expanded, err));
		} else if (strcmp(k, "showRawUpdateDescription") == 0) {
			ERR(get_bool(&it, &p->raw_update, err));
		} else if (strcmp(k, "showMigrationEvents") == 0 || strcmp(k, "ignoreRemovedShards") == 0) {
			ERR(get_bool(&it, &ignored, err));
		} else if (strcmp(k, "version") == 0 || strcmp(k, "supportedEvents") == 0) {
			/* mongos-only options of 8.x: accepted for their type only */
			if (strcmp(k, "version") == 0 && !BSON_ITER_HOLDS_UTF8(&it)) {
				ret = terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '$changeStream.version' is the wrong type '%s', expected type 'string'",
				    bv_type_name(bson_iter_type(&it)));
				goto err;
			}
		}
	}
	/* assertIsLegalSpecification, in mongod's order */
	if (all && !(strcmp(host->db, "admin") == 0 && host->coll == NULL)) {
		ret = terr_set(err, TERR_INVALID_OPTIONS,
		    "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found %s.%s",
		    host->db, host->coll != NULL ? host->coll : "$cmd.aggregate");
		goto err;
	}
	if (strcmp(host->db, "admin") == 0 ? !all :
	    (strcmp(host->db, "local") == 0 || (strcmp(host->db, "config") == 0 && !cfg))) {
		ret = terr_set(err, TERR_INVALID_NAMESPACE, "$changeStream may not be opened on the internal %s database",
		    host->db);
		goto err;
	}
	if (is_system(host->coll) && !sys_ns) {
		ret = terr_set(err, TERR_INVALID_NAMESPACE, "$changeStream may not be opened on the internal %s.%s collection",
		    host->db, host->coll);
		goto err;
	}
	if (has_after && has_start_after) {
		ret = terr_set(err, 50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage");
		goto err;
	}
	if (has_at && (has_after || has_start_after)) {
		ret = terr_set(err, 40674, "Only one type of resume option is allowed, but multiple were found");
		goto err;
	}
	if (has_after && p->tok.from_invalidate) {
		ret = terr_set(err, CODE_INVALID_RESUME_TOKEN,
		    "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification");
		goto err;
	}
	if ((has_after || has_start_after) && !p->tok.has_uuid && host->coll != NULL && p->tok.type != CS_TOKEN_HWM) {
		ret = terr_set(err, CODE_INVALID_RESUME_TOKEN,
		    "Attempted to resume a single-collection stream, but the resume token does not include a UUID");
		goto err;
	}
	p->resume = has_after ? RS_AFTER : has_start_after ? RS_START_AFTER : has_at ? RS_AT : RS_NONE;
	p->level = host->coll != NULL ? LVL_COLL : all ? LVL_CLUSTER : LVL_DB;
	p->db = bson_strdup(host->db);
	p->coll = host->coll != NULL ? bson_strdup(host->coll) : NULL;
	*out = p;
	return 0;
err:
	plan_free(p);
	return ret;
}

/* ---- the pushed-down $match --------------------------------------------- */

/* A filter whose every path starts with operationType, ns or documentKey
 * (through $and / $or / $nor): the same on the stub as on the event. */
static bool
stub_only(const bson_t *f, int depth)
{
	static const char *const roots[] = {"operationType", "ns", "documentKey", NULL};
	bson_iter_t it, el;

	if (depth > 20 || !bson_iter_init(&it, f))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		bool ok = false;
		if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0 || strcmp(k, "$nor") == 0) {
			if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &el))
				return false;
			while (bson_iter_next(&el)) {
				bson_t sub;
				const uint8_t *d;
				uint32_t l;
				if (!BSON_ITER_HOLDS_DOCUMENT(&el))
					return false;
				bson_iter_document(&el, &l, &d);
				bson_init_static(&sub, d, l);
				if (!stub_only(&sub, depth + 1))
					return false;
			}
			continue;
		}
		for (int i = 0; roots[i] != NULL && !ok; i++) {
			size_t n = strlen(roots[i]);
			ok = strncmp(k, roots[i], n) == 0 && (k[n] == '\0' || k[n] == '.');
		}
		if (!ok)
			return false;
	}
	return true;
}

static void
cs_push_match(void *pp, const bson_t *filter)
{
	cs_plan_t *p = pp;
	match_options_t mo = {0};
	terr_t e = {0};

	if (p->pushed != NULL || !stub_only(filter, 0))
		return;
	if (match_compile(filter, &mo, &p->pushed, &e) != 0)
		p->pushed = NULL;
	terr_clear(&e);
}

/* ---- the event transform -------------------------------------------------- */

/* What one operation of the oplog says, before it becomes an event. */
typedef struct op_view {
	repl_ts_t ts;
	int64_t wall;
	const bson_t *lsid;        /* a transaction's, or NULL */
	int64_t txn_number;
	int32_t idx;               /* txnOpIndex (0 outside transactions) */
	repl_ts_t entry_ts;        /* a transaction's: the applyOps entry holding the operation */
	int32_t entry_idx;         /* ... and its index there (its pre-image's applyOpsIndex) */
	bool in_txn;
} op_view_t;

/* An event as the transform table builds it. */
typedef struct ev {
	const char *type;          /* operationType */
	char db[256], coll[256];   /* ns (coll "" = none) */
	char to_db[256], to_coll[256];
	bool has_to;
	bool has_uuid;
	uint8_t uuid[16];
	bson_t doc_key, full_doc, op_desc, upd_desc, before_state;
	bool has_doc_key, has_full, has_desc, has_upd, has_before;
	const char *ns_type;
	bool expanded_only;
	bool is_update;            /* an operator update (updateLookup reads it) */
	bson_t diff;               /* an operator update's $v: 2 diff (post-images) */
	bool raw_upd;              /* showRawUpdateDescription: the oplog's o as rawUpdateDescription */
	bson_t o2;                 /* the operation's o2 (a static view), when has_o2 */
	bool has_o2;
} ev_t;

static void
ev_init(ev_t *e)
{
	memset(e, 0, sizeof(*e));
	bson_init(&e->doc_key);
	bson_init(&e->full_doc);
	bson_init(&e->op_desc);
	bson_init(&e->upd_desc);
	bson_init(&e->before_state);
	bson_init(&e->diff);
}

static void
ev_destroy(ev_t *e)
{
	bson_destroy(&e->doc_key);
	bson_destroy(&e->full_doc);
	bson_destroy(&e->op_desc);
	bson_destroy(&e->upd_desc);
	bson_destroy(&e->before_state);
	bson_destroy(&e->diff);
}

static bool
sub_doc(const bson_t *d, const char *key, bson_t *out)
{
	bson_iter_t it;
	const uint8_t *data;
	uint32_t len;

	if (!bson_iter_init_find(&it, d, key) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &len, &data);
	return bson_init_static(out, data, len);
}

static const char *
str_field(const bson_t *d, const char *key)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, d, key) && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : NULL;
}

/* "db.coll" into the two parts. */
static void
split_ns(const char *ns, char *db, char *coll)
{
	const char *dot = strchr(ns, '.');
	size_t n = dot != NULL ? (size_t)(dot - ns) : strlen(ns);

	if (n > 255)
		n = 255;
	memcpy(db, ns, n);
	db[n] = '\0';
	snprintf(coll, 256, "%s", dot != NULL ? dot + 1 : "");
}

/* Copy d without the named fields into out (initialised). */
static void
copy_except(const bson_t *d, bson_t *out, const char *a, const char *b)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, d))
		return;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if ((a != NULL && strcmp(k, a) == 0) || (b != NULL && strcmp(k, b) == 0))
			continue;
		bson_append_value(out, k, -1, bson_iter_value(&it));
	}
}

static void
append_ns_doc(bson_t *out, const char *key, const char *db, const char *coll)
{
	bson_t d;

	bson_append_document_begin(out, key, -1, &d);
	bson_append_utf8(&d, "db", 2, db, -1);
	if (coll != NULL && coll[0] != '\0')
		bson_append_utf8(&d, "coll", 4, coll, -1);
	bson_append_document_end(out, &d);
}

/* ---- updateDescription from a $v: 2 diff --------------------------------- */

typedef struct upd_acc {
	bson_t updated, removed, truncated, disamb;
	int ntrunc;
	bool expanded;
} upd_acc_t;

static bool
numeric_name(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* parts: the path so far, each part a field name or an array index. */
typedef struct path {
	const char *part[100];
	bool index[100];
	int n;
} path_t;

static void
path_str(const path_t *p, const char *last, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < p->n; i++)
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", i ? "." : "", p->part[i]);
	if (last != NULL)
		snprintf(buf + (len < cap ? len : cap - 1), len < cap ? cap - len : 1, "%s%s", p->n ? "." : "",
		         last);
}

/* FieldRef::isNumericPathComponentStrict: digits, no leading zero. */
static bool
numeric_strict(const char *s)
{
	return numeric_name(s) && (s[1] == '\0' || s[0] != '0');
}

/*
 * mongod's disambiguatedPaths (change_stream_document_diff_parser): a path
 * is ambiguous from its first field name (not array index) that is numeric
 * (past the first part) or holds a dot; such a path is listed as the array
 * of its parts, array indices as ints.
 */
static void
note_ambiguous(upd_acc_t *a, const path_t *p, const char *last, bool last_index, const char *full)
{
	bool amb = false;
	bson_t arr;
	char key[16];

	if (!a->expanded)
		return;
	for (int i = 0; i <= p->n && !amb; i++) {
		const char *part = i < p->n ? p->part[i] : last;
		bool idx = i < p->n ? p->index[i] : last_index;
		if (part == NULL || idx)
			continue;
		amb = (i > 0 && numeric_strict(part)) || strchr(part, '.') != NULL;
	}
	if (!amb)
		return;
	bson_append_array_begin(&a->disamb, full, -1, &arr);
	for (int i = 0; i <= p->n; i++) {
		const char *part = i < p->n ? p->part[i] : last;
		bool idx = i < p->n ? p->index[i] : last_index;
		if (part == NULL)
			break;
		snprintf(key, sizeof(key), "%d", i);
		if (idx)
			bson_append_int32(&arr, key, -1, (int32_t)strtol(part, NULL, 10));
		else
			bson_append_utf8(&arr, key, -1, part, -1);
	}
	bson_append_array_end(&a->disamb, &arr);
}

static void diff_walk(upd_acc_t *a, const bson_t *diff, path_t *p, bool array, int depth);

static void
diff_walk(upd_acc_t *a, const bson_t *diff, path_t *p, bool array, int depth)
{
	bson_iter_t it, f;
	char full[4096];

	if (depth > 100 || !bson_iter_init(&it, diff))
		return;
	if (!array) {
		/* mongod's order: updates, inserts, deletes, then sub diffs */
		static const char *const sections[] = {"u", "i", "d"};
		for (int s = 0; s < 3; s++) {
			if (!bson_iter_init_find(&it, diff, sections[s]) || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
			    !bson_iter_recurse(&it, &f))
				continue;
			while (bson_iter_next(&f)) {
				path_str(p, bson_iter_key(&f), full, sizeof(full));
				if (s < 2) {
					bson_append_value(&a->updated, full, -1, bson_iter_value(&f));
				} else {
					char key[16];
					snprintf(key, sizeof(key), "%d", (int)bson_count_keys(&a->removed));
					bson_append_utf8(&a->removed, key, -1, full, -1);
				}
				note_ambiguous(a, p, bson_iter_key(&f), false, full);
			}
		}
	} else if (bson_iter_init_find(&it, diff, "l")) {
		bson_t t;
		char key[16];
		snprintf(key, sizeof(key), "%d", a->ntrunc++);
		path_str(p, NULL, full, sizeof(full));
		bson_append_document_begin(&a->truncated, key, -1, &t);
		bson_append_utf8(&t, "field", 5, full, -1);
		bson_append_int32(&t, "newSize", 7, (int32_t)bson_iter_as_int64(&it));
		bson_append_document_end(&a->truncated, &t);
		note_ambiguous(a, p, NULL, false, full);
	}
	bson_iter_init(&it, diff);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (array && k[0] == 'u') {
			path_str(p, k + 1, full, sizeof(full));
			bson_append_value(&a->updated, full, -1, bson_iter_value(&it));
			note_ambiguous(a, p, k + 1, true, full);
		} else if (k[0] == 's' && BSON_ITER_HOLDS_DOCUMENT(&it) && p->n < 99) {
			bson_t sub;
			bson_iter_t ai;
			bool sub_array;
			sub_doc(diff, k, &sub);
			sub_array = bson_iter_init_find(&ai, &sub, "a") && BSON_ITER_HOLDS_BOOL(&ai) && bson_iter_bool(&ai);
			p->part[p->n] = k + 1;
			p->index[p->n] = array;
			p->n++;
			diff_walk(a, &sub, p, sub_array, depth + 1);
			p->n--;
		}
	}
}

static void
update_description(const bson_t *o, bool expanded, bool raw, bson_t *out)
{
	upd_acc_t a;
	path_t p = {.n = 0};
	bson_t diff;

	if (raw) {
		bson_concat(out, o);
		return;
	}
	bson_init(&a.updated);
	bson_init(&a.removed);
	bson_init(&a.truncated);
	bson_init(&a.disamb);
	a.ntrunc = 0;
	a.expanded = expanded;
	if (sub_doc(o, "diff", &diff))
		diff_walk(&a, &diff, &p, false, 0);
	bson_append_document(out, "updatedFields", -1, &a.updated);
	bson_append_array(out, "removedFields", -1, &a.removed);
	bson_append_array(out, "truncatedArrays", -1, &a.truncated);
	if (expanded)
		bson_append_document(out, "disambiguatedPaths", -1, &a.disamb);
	bson_destroy(&a.updated);
	bson_destroy(&a.removed);
	bson_destroy(&a.truncated);
	bson_destroy(&a.disamb);
}

/* ---- one transform per kind of entry ------------------------------------- */

typedef int (*xform_fn)(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw);

static int
x_insert(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_t o2;
	bson_iter_t it;

	e->type = "insert";
	bson_concat(&e->full_doc, o);
	e->has_full = true;
	(void)o2;
	if (e->has_o2) {
		bson_concat(&e->doc_key, &e->o2);
	} else if (bson_iter_init_find(&it, o, "_id")) {
		bson_append_value(&e->doc_key, "_id", 3, bson_iter_value(&it));
	}
	e->has_doc_key = true;
	return 1;
}

static int
x_update(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_t o2;
	bson_iter_t it;

	if (bson_iter_init_find(&it, o, "$v")) {
		bson_t d;
		e->type = "update";
		e->is_update = true;
		if (sub_doc(o, "diff", &d))
			bson_concat(&e->diff, &d);
		update_description(o, expanded, raw, &e->upd_desc);
		e->has_upd = true;
		e->raw_upd = raw;
	} else {
		e->type = "replace";
		bson_concat(&e->full_doc, o);
		e->has_full = true;
	}
	(void)o2;
	if (e->has_o2)
		bson_concat(&e->doc_key, &e->o2);
	e->has_doc_key = true;
	return 1;
}

static int
x_delete(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	e->type = "delete";
	bson_concat(&e->doc_key, o);
	e->has_doc_key = true;
	return 1;
}

/* Commands: the first field of o names the kind. */
static int
c_drop(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	e->type = "drop";
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "drop"));
	return 1;
}

static int
c_rename(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	const char *to = str_field(o, "to");
	bson_iter_t it;

	e->type = "rename";
	split_ns(str_field(o, "renameCollection"), e->db, e->coll);
	if (to == NULL)
		return 0;
	split_ns(to, e->to_db, e->to_coll);
	e->has_to = true;
	/* operationDescription: o without renameCollection and stayTemp, its
	 * `to` as a namespace document */
	if (bson_iter_init(&it, o))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "renameCollection") == 0 || strcmp(k, "stayTemp") == 0)
				continue;
			if (strcmp(k, "to") == 0)
				append_ns_doc(&e->op_desc, "to", e->to_db, e->to_coll);
			else
				bson_append_value(&e->op_desc, k, -1, bson_iter_value(&it));
		}
	e->has_desc = true;
	return 1;
}

static int
c_drop_db(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	e->type = "dropDatabase";
	e->coll[0] = '\0';
	return 1;
}

static int
c_create(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	e->type = "create";
	e->expanded_only = true;
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "create"));
	/* "tamgaBucketBounds": Tamga's own time-series option (timeseries.h TS_OPT_BOUNDS) */
	copy_except(o, &e->op_desc, "create", "tamgaBucketBounds");
	e->has_desc = true;
	e->ns_type = "collection";
	return 1;
}

static int
c_create_indexes(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_t arr, spec;

	e->type = "createIndexes";
	e->expanded_only = true;
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "createIndexes"));
	bson_append_array_begin(&e->op_desc, "indexes", -1, &arr);
	bson_append_document_begin(&arr, "0", 1, &spec);
	copy_except(o, &spec, "createIndexes", NULL);
	bson_append_document_end(&arr, &spec);
	bson_append_array_end(&e->op_desc, &arr);
	e->has_desc = true;
	return 1;
}

static int
c_commit_index(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_iter_t it;

	e->type = "createIndexes";
	e->expanded_only = true;
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "commitIndexBuild"));
	if (bson_iter_init_find(&it, o, "indexes"))
		bson_append_value(&e->op_desc, "indexes", -1, bson_iter_value(&it));
	e->has_desc = true;
	return 1;
}

static int
c_drop_indexes(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_t arr, spec, o2;

	e->type = "dropIndexes";
	e->expanded_only = true;
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "dropIndexes"));
	bson_append_array_begin(&e->op_desc, "indexes", -1, &arr);
	bson_append_document_begin(&arr, "0", 1, &spec);
	if (sub_doc(op, "o2", &o2))
		copy_except(&o2, &spec, "dropIndexes", NULL);
	bson_append_document_end(&arr, &spec);
	bson_append_array_end(&e->op_desc, &arr);
	e->has_desc = true;
	return 1;
}

static int
c_coll_mod(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	bson_t o2, sub;

	e->type = "modify";
	e->expanded_only = true;
	snprintf(e->coll, sizeof(e->coll), "%s", str_field(o, "collMod"));
	copy_except(o, &e->op_desc, "collMod", NULL);
	e->has_desc = true;
	if (sub_doc(op, "o2", &o2)) {
		if (sub_doc(&o2, "collectionOptions_old", &sub))
			bson_append_document(&e->before_state, "collectionOptions", -1, &sub);
		if (sub_doc(&o2, "indexOptions_old", &sub))
			bson_append_document(&e->before_state, "indexOptions", -1, &sub);
		e->has_before = true;
	}
	return 1;
}

static const struct {
	const char *field;    /* the command field of o */
	xform_fn fn;
} COMMANDS[] = {
	{"drop", c_drop},
	{"renameCollection", c_rename},
	{"dropDatabase", c_drop_db},
	{"create", c_create},
	{"createIndexes", c_create_indexes},
	{"commitIndexBuild", c_commit_index},
	{"dropIndexes", c_drop_indexes},
	{"collMod", c_coll_mod},
};

/* A view's definition is a document of <db>.system.views ({_id: "<db>.<view>",
 * viewOn, pipeline}): its insert, update and delete are the view's create,
 * modify and drop (mongod's ChangeStreamViewDefinitionEventTransformation). */
static int
v_view(const bson_t *op, const bson_t *o, ev_t *e, bool expanded, bool raw)
{
	const char *kind = str_field(op, "op"), *id = str_field(o, "_id");
	bson_t o2;

	if (id == NULL && sub_doc(op, "o2", &o2))
		id = str_field(&o2, "_id");
	if (id == NULL)
		return 0;
	split_ns(id, e->db, e->coll);
	e->expanded_only = true;
	e->has_uuid = false;
	if (strcmp(kind, "i") == 0) {
		const char *on = str_field(o, "viewOn");
		e->type = "create";
		copy_except(o, &e->op_desc, "_id", NULL);
		e->has_desc = true;
		e->ns_type = on != NULL && strncmp(on, "system.buckets.", 15) == 0 ? "timeseries" : "view";
	} else if (strcmp(kind, "u") == 0) {
		e->type = "modify";
		copy_except(o, &e->op_desc, "_id", NULL);
		e->has_desc = true;
	} else {
		e->type = "drop";
	}
	return 1;
}

static const struct {
	char op;
	xform_fn fn;
} CRUD[] = {
	{'i', x_insert},
	{'u', x_update},
	{'d', x_delete},
};

/*
 * Classify one operation: 1 with e filled (type, ns, parts), 0 when it
 * makes no event (no-ops, index build starts, unknown commands).
 */
static int
classify(const bson_t *op, bool expanded, bool raw, ev_t *e)
{
	const char *kind = NULL, *ns = NULL;
	bson_t o;
	bool has_o = false;
	bson_iter_t it;

	/* one pass over the operation's fields (an event per entry per stream:
	 * a find per field would walk the entry again each time) */
	if (!bson_iter_init(&it, op))
		return 0;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const uint8_t *data;
		uint32_t len;
		if (k[0] == 'o' && k[1] == 'p' && k[2] == '\0' && BSON_ITER_HOLDS_UTF8(&it)) {
			kind = bson_iter_utf8(&it, NULL);
		} else if (k[0] == 'n' && k[1] == 's' && k[2] == '\0' && BSON_ITER_HOLDS_UTF8(&it)) {
			ns = bson_iter_utf8(&it, NULL);
		} else if (k[0] == 'o' && (k[1] == '\0' || (k[1] == '2' && k[2] == '\0')) &&
		           BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_document(&it, &len, &data);
			if (k[1] == '\0')
				has_o = bson_init_static(&o, data, len);
			else
				e->has_o2 = bson_init_static(&e->o2, data, len);
		} else if (k[0] == 'u' && k[1] == 'i' && k[2] == '\0' && BSON_ITER_HOLDS_BINARY(&it)) {
			bson_subtype_t st;
			bson_iter_binary(&it, &st, &len, &data);
			if (st == BSON_SUBTYPE_UUID && len == 16) {
				memcpy(e->uuid, data, 16);
				e->has_uuid = true;
			}
		}
	}
	if (kind == NULL || ns == NULL || !has_o)
		return 0;
	split_ns(ns, e->db, e->coll);
	if (strcmp(e->coll, "system.views") == 0 && (strcmp(kind, "i") == 0 || strcmp(kind, "u") == 0 ||
	    strcmp(kind, "d") == 0))
		return v_view(op, &o, e, expanded, raw);
	for (size_t i = 0; i < sizeof(CRUD) / sizeof(CRUD[0]); i++)
		if (kind[0] == CRUD[i].op && kind[1] == '\0')
			return CRUD[i].fn(op, &o, e, expanded, raw);
	if (strcmp(kind, "c") != 0 || !bson_iter_init(&it, &o) || !bson_iter_next(&it))
		return 0;
	for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(COMMANDS[0]); i++)
		if (strcmp(bson_iter_key(&it), COMMANDS[i].field) == 0) {
			if (strcmp(COMMANDS[i].field, "drop") == 0 || strcmp(COMMANDS[i].field, "create") == 0 ||
			    strcmp(COMMANDS[i].field, "createIndexes") == 0 || strcmp(COMMANDS[i].field, "commitIndexBuild") == 0 ||
			    strcmp(COMMANDS[i].field, "dropIndexes") == 0 || strcmp(COMMANDS[i].field, "collMod") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&it))
					return 0;
			} else if (strcmp(COMMANDS[i].field, "renameCollection") == 0 && !BSON_ITER_HOLDS_UTF8(&it)) {
				return 0;
			}
			return COMMANDS[i].fn(op, &o, e, expanded, raw);
		}
	return 0;
}

/* Is the event's namespace one the stream watches?  *invalidates: it ends
 * the stream (a collection dropped or renamed, a database dropped). */
static bool
wanted(int level, const char *db, const char *coll, bool show_system, const ev_t *e, bool *invalidates)
{
	bool internal_db = strcmp(e->db, "admin") == 0 || strcmp(e->db, "config") == 0 || strcmp(e->db, "local") == 0;
	bool sys = is_system(e->coll) && !show_system;

	*invalidates = false;
	switch (level) {
	case LVL_COLL:
		if (strcmp(e->type, "dropDatabase") == 0)
			return false;
		if (strcmp(e->db, db) == 0 && strcmp(e->coll, coll) == 0) {
			*invalidates = strcmp(e->type, "drop") == 0 || strcmp(e->type, "rename") == 0;
			return true;
		}
		if (e->has_to && strcmp(e->to_db, db) == 0 && strcmp(e->to_coll, coll) == 0) {
			*invalidates = true;
			return true;
		}
		return false;
	case LVL_DB:
		if (strcmp(e->db, db) != 0 && !(e->has_to && strcmp(e->to_db, db) == 0))
			return false;
		if (sys)
			return false;
		*invalidates = strcmp(e->type, "dropDatabase") == 0;
		return true;
	default:
		return !internal_db && !sys;
	}
}

/* The eventIdentifier of e's token: {operationType, documentKey} or
 * {operationType, operationDescription} (version 2). */
static void
event_id(const ev_t *e, bson_t *out)
{
	bson_append_utf8(out, "operationType", -1, e->type, -1);
	if (e->has_doc_key)
		bson_append_document(out, "documentKey", -1, &e->doc_key);
	else if (e->has_desc)
		bson_append_document(out, "operationDescription", -1, &e->op_desc);
}

static void
append_uuid(bson_t *b, const char *key, const uint8_t *uuid)
{
	bson_append_binary(b, key, -1, BSON_SUBTYPE_UUID, uuid, 16);
}

/* The stub the pushed-down $match sees: {operationType, ns, documentKey}. */
static void
stub(const ev_t *e, bson_t *out)
{
	bson_append_utf8(out, "operationType", -1, e->type, -1);
	append_ns_doc(out, "ns", e->db, e->coll);
	if (e->has_doc_key)
		bson_append_document(out, "documentKey", -1, &e->doc_key);
}

/* Build the event document; *hex gets its token (owned). */
static void
assemble(const ev_t *e, const op_view_t *v, bool expanded, char **hex, bson_t *out)
{
	bson_t eid = BSON_INITIALIZER;
	cs_token_t t = {.ts = v->ts, .version = CS_TOKEN_VERSION, .type = CS_TOKEN_EVENT,
	                .txn_op_index = v->idx, .fragment = -1};

	event_id(e, &eid);
	t.event_id = &eid;
	t.has_uuid = e->has_uuid;
	memcpy(t.uuid, e->uuid, 16);
	*hex = cs_token_append_id(out, "_id", &t);
	bson_append_utf8(out, "operationType", -1, e->type, -1);
	bson_append_timestamp(out, "clusterTime", -1, repl_ts_secs(v->ts), repl_ts_inc(v->ts));
	if (expanded && e->has_uuid)
		append_uuid(out, "collectionUUID", e->uuid);
	bson_append_date_time(out, "wallTime", -1, v->wall);
	if (e->has_full)
		bson_append_document(out, "fullDocument", -1, &e->full_doc);
	append_ns_doc(out, "ns", e->db, e->coll);
	if (e->has_to)
		append_ns_doc(out, "to", e->to_db, e->to_coll);
	if (e->has_doc_key)
		bson_append_document(out, "documentKey", -1, &e->doc_key);
	if (expanded && e->has_desc)
		bson_append_document(out, "operationDescription", -1, &e->op_desc);
	if (e->has_upd)
		bson_append_document(out, e->raw_upd ? "rawUpdateDescription" : "updateDescription", -1, &e->upd_desc);
	if (expanded && e->has_before)
		bson_append_document(out, "stateBeforeChange", -1, &e->before_state);
	if (expanded && e->ns_type != NULL)
		bson_append_utf8(out, "nsType", -1, e->ns_type, -1);
	if (v->in_txn) {
		bson_append_document(out, "lsid", -1, v->lsid);
		bson_append_int64(out, "txnNumber", -1, v->txn_number);
	}
	bson_destroy(&eid);
}

/* The invalidate that follows e: its token is e's with fromInvalidate. */
static void
assemble_invalidate(const ev_t *e, const op_view_t *v, char **hex, bson_t *out)
{
	bson_t eid = BSON_INITIALIZER;
	cs_token_t t = {.ts = v->ts, .version = CS_TOKEN_VERSION, .type = CS_TOKEN_EVENT,
	                .txn_op_index = v->idx, .from_invalidate = true, .fragment = -1};

	event_id(e, &eid);
	t.event_id = &eid;
	t.has_uuid = e->has_uuid;
	memcpy(t.uuid, e->uuid, 16);
	*hex = cs_token_append_id(out, "_id", &t);
	bson_append_utf8(out, "operationType", -1, "invalidate", -1);
	bson_append_timestamp(out, "clusterTime", -1, repl_ts_secs(v->ts), repl_ts_inc(v->ts));
	bson_append_date_time(out, "wallTime", -1, v->wall);
	bson_destroy(&eid);
}

int
repl_cs_events_for_entry(const char *db, const char *coll, bool expanded, const bson_t *entry, bson_t *out)
{
	op_view_t v = {0};
	bson_iter_t it;
	uint32_t ts, inc;
	int n = 0;
	ev_t e;
	bool inval;

	if (bson_iter_init_find(&it, entry, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		bson_iter_timestamp(&it, &ts, &inc);
		v.ts = ((repl_ts_t)ts << 32) | inc;
	}
	if (bson_iter_init_find(&it, entry, "wall") && BSON_ITER_HOLDS_DATE_TIME(&it))
		v.wall = bson_iter_date_time(&it);
	ev_init(&e);
	if (classify(entry, expanded, false, &e) == 1 && (expanded || !e.expanded_only) &&
	    wanted(db == NULL ? LVL_CLUSTER : coll == NULL ? LVL_DB : LVL_COLL, db, coll, false, &e, &inval)) {
		bson_t d;
		char key[16], *hex;
		snprintf(key, sizeof(key), "%d", n++);
		bson_append_document_begin(out, key, -1, &d);
		assemble(&e, &v, expanded, &hex, &d);
		bson_append_document_end(out, &d);
		bson_free(hex);
		if (inval) {
			snprintf(key, sizeof(key), "%d", n++);
			bson_append_document_begin(out, key, -1, &d);
			assemble_invalidate(&e, &v, &hex, &d);
			bson_append_document_end(out, &d);
			bson_free(hex);
		}
	}
	ev_destroy(&e);
	return n;
}

/* ---- the run --------------------------------------------------------------- */

static int
cs_open(void *ctx, const void *pp, void **out, terr_t *err)
{
	const cs_plan_t *p = pp;
	cs_run_t *r = tm_alloc0(sizeof(*r));

	r->p = p;
	bson_init(&r->out);
	switch (p->resume) {
	case RS_AFTER:
	case RS_START_AFTER:
		r->after = p->tok.ts > 0 ? p->tok.ts - 1 : 0;
		r->resume_hex = bson_strdup(p->tok_hex);
		r->must_find = p->tok.type == CS_TOKEN_EVENT;
		if (p->tok.fragment >= 0)
			r->resume_base = cs_token_hex_unfragment(p->tok_hex, p->tok.fragment);
		r->pos = bson_strdup(p->tok_hex);
		break;
	case RS_AT:
		r->after = p->start_at > 0 ? p->start_at - 1 : 0;
		r->pos = cs_token_hwm_hex(p->start_at);
		break;
	default: {
		/* one tick past the newest visible entry, as mongod (in a set
		 * of several members the newest committed one: later entries
		 * may still be rolled back, and if not they are this stream's) */
		repl_ts_t now = repl_oplog_last_optime(p->svc->op).ts, limit = repl_oplog_commit_point(p->svc->op);
		if (limit != 0 && limit < now)
			now = limit;
		r->after = now;
		r->pos = cs_token_hwm_hex(now + 1);
		break;
	}
	}
	*out = r;
	return 0;
}

static void
queue_clear(cs_run_t *r)
{
	for (int i = 0; i < r->nq; i++) {
		bson_destroy(r->queue[i]);
		bson_free(r->queue[i]);
	}
	r->nq = r->iq = 0;
}

static void
cs_close(void *st)
{
	cs_run_t *r = st;

	repl_oplog_cursor_close(r->cur);
	queue_clear(r);
	bson_free(r->queue);
	bson_free(r->resume_hex);
	bson_free(r->resume_base);
	bson_free(r->frag_hex);
	bson_free(r->pos);
	bson_destroy(&r->out);
	bson_free(r);
}

static bson_t *
queue_push(cs_run_t *r)
{
	if (r->nq == r->capq) {
		r->capq = r->capq ? r->capq * 2 : 4;
		r->queue = bson_realloc(r->queue, sizeof(bson_t *) * (size_t)r->capq);
	}
	r->queue[r->nq] = tm_bson_array_new(1);
	bson_init(r->queue[r->nq]);
	return r->queue[r->nq++];
}

/* The oldest entry's ts (0 when none). */
static repl_ts_t
oldest_ts(cs_run_t *r, storage_session_t *s)
{
	repl_oplog_cursor_t *c = NULL;
	bson_t e;
	bson_iter_t it;
	repl_ts_t ts = 0;
	uint32_t t, i;

	if (repl_oplog_scan_open(r->p->svc->op, s, 0, &c, NULL) != 0)
		return 0;
	if (repl_oplog_cursor_next(c, &e, NULL) == 1 && bson_iter_init_find(&it, &e, "ts") &&
	    BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		bson_iter_timestamp(&it, &t, &i);
		ts = ((repl_ts_t)t << 32) | i;
	}
	repl_oplog_cursor_close(c);
	return ts;
}

static int
history_lost(terr_t *err)
{
	return terr_set(err, CODE_HISTORY_LOST,
	    "Resume of change stream was not possible, as the resume point may no longer be in the oplog.");
}

/* fullDocument: "updateLookup" -- the document as it is now (null when
 * gone). */
static int
lookup(cs_run_t *r, const ev_t *e, bson_t *out, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_iter_t it;
	bson_t doc;
	recid_t rid;
	int rc = 1;

	if (bson_iter_init_find(&it, &e->doc_key, "_id") &&
	    storage_coll_get(r->p->svc->st, e->db, e->coll, &c, NULL) == 0 && c != NULL &&
	    memcmp(c->uuid, e->uuid, 16) == 0) {
		rc = storage_doc_find_id(r->s, c, bson_iter_value(&it), &rid, &doc, err);
		if (rc < 0) {
			storage_coll_release(c);
			return -1;
		}
		if (rc == 0)
			bson_append_document(out, "fullDocument", -1, &doc);
	}
	storage_coll_release(c);
	if (rc != 0)
		bson_append_null(out, "fullDocument", -1);
	return 0;
}

/* Turn one operation into queued events. */
static int
handle_op(cs_run_t *r, const bson_t *op, const op_view_t *v, terr_t *err)
{
	const cs_plan_t *p = r->p;
	ev_t e;
	bool inval;
	int ret = 0;

	ev_init(&e);
	if (classify(op, p->expanded, p->raw_update, &e) != 1 || (e.expanded_only && !p->expanded) ||
	    !wanted(p->level, p->db, p->coll, p->show_system, &e, &inval))
		goto err;
	if (p->pushed != NULL) {
		bson_t sd = BSON_INITIALIZER;
		bool keep;
		stub(&e, &sd);
		keep = match_eval(p->pushed, &sd);
		bson_destroy(&sd);
		if (!keep && !inval)
			goto err;
		if (!keep)
			goto invalidate;
	}
	{
		bson_t *ev = queue_push(r);
		uint8_t opts = (uint8_t)((p->expanded ? 1 : 0) | (e.raw_upd ? 2 : 0));
		if (!cache_get(p->svc, v->ts, v->idx, opts, ev)) {
			char *hex = NULL;
			assemble(&e, v, p->expanded, &hex, ev);
			bson_free(hex);
			cache_put(p->svc, v->ts, v->idx, opts, ev);
		}
		bool pre_wanted = p->before != FB_OFF && (e.is_update || strcmp(e.type, "replace") == 0 ||
		    strcmp(e.type, "delete") == 0);
		bool post_wanted = e.is_update && (p->full_doc == FD_WHEN || p->full_doc == FD_REQUIRED);
		bson_t pre;
		int found = 1;
		/* pre-images (changeStreamPreAndPostImages): a transaction's by
		 * its applyOps entry and index */
		if ((pre_wanted || post_wanted) && e.has_uuid) {
			found = v->in_txn ? repl_preimage_find_at(p->svc->st, r->s, e.uuid, v->entry_ts, v->entry_idx, &pre, err)
			                  : repl_preimage_find(p->svc->st, r->s, e.uuid, v->ts, &pre, err);
			if (found < 0) {
				ret = -1;
				goto err;
			}
		}
		if (e.is_update && p->full_doc == FD_LOOKUP) {
			ERR(lookup(r, &e, ev, err));
		} else if (post_wanted) {
			bson_t post = BSON_INITIALIZER;
			bool have = found == 0 && repl_diff_apply(&pre, &e.diff, &post);
			if (!have && p->full_doc == FD_REQUIRED) {
				char *j = bson_as_relaxed_extended_json(ev, NULL);
				ret = terr_set(err, CODE_NO_MATCHING_DOCUMENT,
				    "Change stream was configured to require a post-image for all update events, but the post-image was not found for event: %s",
				    j);
				bson_free(j);
				bson_destroy(&post);
				if (found == 0)
					bson_destroy(&pre);
				goto err;
			}
			if (have)
				bson_append_document(ev, "fullDocument", -1, &post);
			else
				bson_append_null(ev, "fullDocument", -1);
			bson_destroy(&post);
		}
		if (pre_wanted) {
			if (found != 0 && p->before == FB_REQUIRED) {
				char *j = bson_as_relaxed_extended_json(ev, NULL);
				ret = terr_set(err, CODE_NO_MATCHING_DOCUMENT,
				    "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s",
				    j);
				bson_free(j);
				goto err;
			}
			if (found == 0)
				bson_append_document(ev, "fullDocumentBeforeChange", -1, &pre);
			else
				bson_append_null(ev, "fullDocumentBeforeChange", -1);
		}
		if (found == 0)
			bson_destroy(&pre);
	}
invalidate:
	if (inval) {
		bson_t *ev = queue_push(r);
		char *hex = NULL;
		assemble_invalidate(&e, v, &hex, ev);
		/* startAfter an invalidate: the stream goes on past it */
		if (p->resume == RS_START_AFTER && p->tok.from_invalidate && strcmp(hex, p->tok_hex) == 0) {
			bson_destroy(ev);
			bson_free(ev);
			r->nq--;
		}
		bson_free(hex);
	}
err:
	ev_destroy(&e);
	return ret;
}

/* A chained transaction's earlier entries (partialTxn), oldest first,
 * found through prevOpTime. */
static int
txn_chain(cs_run_t *r, const bson_t *last, bson_t ***chain, int *n, terr_t *err)
{
	bson_t cur, prev;
	bson_iter_t it;
	bson_t **v = NULL;
	int cnt = 0, cap = 0;

	bson_copy_to(last, &cur);
	for (int guard = 0; guard < 100000; guard++) {
		bson_t pt, e, o;
		uint32_t t, i;
		repl_ts_t ts;
		int rc;
		if (!sub_doc(&cur, "prevOpTime", &pt) || !bson_iter_init_find(&it, &pt, "ts") ||
		    !BSON_ITER_HOLDS_TIMESTAMP(&it))
			break;
		bson_iter_timestamp(&it, &t, &i);
		ts = ((repl_ts_t)t << 32) | i;
		if (ts == 0)
			break;
		rc = repl_oplog_find(r->p->svc->op, r->s, ts, &prev, err);
		if (rc < 0) {
			bson_destroy(&cur);
			goto fail;
		}
		if (rc == 1)
			break;
		if (!sub_doc(&prev, "o", &o) || !bson_iter_init_find(&it, &o, "partialTxn")) {
			bson_destroy(&prev);
			break;
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 4;
			v = bson_realloc(v, sizeof(bson_t *) * (size_t)cap);
		}
		v[cnt++] = bson_copy(&prev);
		bson_destroy(&cur);
		bson_copy_to(&prev, &cur);
		bson_destroy(&prev);
		(void)e;
	}
	bson_destroy(&cur);
	/* oldest first */
	for (int a = 0, b = cnt - 1; a < b; a++, b--) {
		bson_t *tmp = v[a];
		v[a] = v[b];
		v[b] = tmp;
	}
	*chain = v;
	*n = cnt;
	return 0;
fail:
	for (int k = 0; k < cnt; k++)
		bson_destroy(v[k]);
	bson_free(v);
	return -1;
}

/* One applyOps entry's operations, txnOpIndex counting on from *idx. */
static int
unwind(cs_run_t *r, const bson_t *entry, op_view_t *v, terr_t *err)
{
	bson_t o, op;
	bson_iter_t it, el;
	const uint8_t *d;
	uint32_t l;

	v->entry_ts = 0;
	v->entry_idx = 0;
	if (bson_iter_init_find(&it, entry, "ts") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
		uint32_t t, i;
		bson_iter_timestamp(&it, &t, &i);
		v->entry_ts = ((repl_ts_t)t << 32) | i;
	}
	if (!sub_doc(entry, "o", &o) || !bson_iter_init_find(&it, &o, "applyOps") || !BSON_ITER_HOLDS_ARRAY(&it) ||
	    !bson_iter_recurse(&it, &el))
		return 0;
	while (bson_iter_next(&el)) {
		if (BSON_ITER_HOLDS_DOCUMENT(&el)) {
			bson_iter_document(&el, &l, &d);
			bson_init_static(&op, d, l);
			RET(handle_op(r, &op, v, err));
			v->idx++;
		}
		v->entry_idx++;
	}
	return 0;
}

static void pos_set(cs_run_t *r, const char *hex);

/* In a set of several members a stream returns only majority-committed
 * entries, as mongod's (it reads at the majority snapshot): an entry past
 * the commit point may still be rolled back, and neither its event nor a
 * resume token after it may reach the client. */
static bool
past_commit_point(const cs_run_t *r, const bson_t *entry)
{
	repl_ts_t limit = repl_oplog_commit_point(r->p->svc->op);
	bson_iter_t it;
	uint32_t t, i;

	if (limit == 0 || !bson_iter_init_find(&it, entry, "ts") || !BSON_ITER_HOLDS_TIMESTAMP(&it))
		return false;
	bson_iter_timestamp(&it, &t, &i);
	return (((repl_ts_t)t << 32) | i) > limit;
}

/* One oplog entry into the queue; the scan's position moves to it. */
static int
handle_entry(cs_run_t *r, const bson_t *entry, terr_t *err)
{
	op_view_t v = {0};
	bson_iter_t it;
	uint32_t ts, inc;
	bson_t o, lsid;
	const char *kind = NULL, *ns = NULL;

	/* one pass for what every entry needs */
	if (bson_iter_init(&it, entry))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "op") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
				kind = bson_iter_utf8(&it, NULL);
			} else if (strcmp(k, "ns") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
				ns = bson_iter_utf8(&it, NULL);
			} else if (strcmp(k, "ts") == 0 && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
				bson_iter_timestamp(&it, &ts, &inc);
				v.ts = ((repl_ts_t)ts << 32) | inc;
			} else if (strcmp(k, "wall") == 0 && BSON_ITER_HOLDS_DATE_TIME(&it)) {
				v.wall = bson_iter_date_time(&it);
			}
		}
	if (v.ts != 0) {
		char *h = cs_token_hwm_hex(v.ts);
		r->scanned = v.ts;
		pos_set(r, h);
		bson_free(h);
	}
	if (kind == NULL || ns == NULL)
		return 0;
	if (kind[0] == 'c' && kind[1] == '\0' && strcmp(ns, "admin.$cmd") == 0 && sub_doc(entry, "o", &o) &&
	    bson_iter_init_find(&it, &o, "applyOps")) {
		bson_t **chain = NULL;
		int n = 0, ret = 0;
		if (bson_iter_init_find(&it, &o, "partialTxn"))
			return 0;   /* read with the entry that ends its chain */
		if (sub_doc(entry, "lsid", &lsid)) {
			v.lsid = &lsid;
			v.in_txn = true;
			if (bson_iter_init_find(&it, entry, "txnNumber"))
				v.txn_number = bson_iter_as_int64(&it);
		}
		if (bson_iter_init_find(&it, &o, "count"))
			RET(txn_chain(r, entry, &chain, &n, err));
		for (int i = 0; i < n && ret == 0; i++)
			ret = unwind(r, chain[i], &v, err);
		for (int i = 0; i < n; i++)
			bson_destroy(chain[i]);
		bson_free(chain);
		RET(ret);
		return unwind(r, entry, &v, err);
	}
	return handle_op(r, entry, &v, err);
}

static void
pos_set(cs_run_t *r, const char *hex)
{
	if (r->pos == NULL || strcmp(hex, r->pos) > 0) {
		bson_free(r->pos);
		r->pos = bson_strdup(hex);
	}
}

static const char *
doc_token(const bson_t *ev)
{
	bson_t id;

	if (!sub_doc(ev, "_id", &id))
		return NULL;
	return str_field(&id, "_data");
}

static int
cs_next(void *st, storage_session_t *s, const bson_t **doc, terr_t *err)
{
	cs_run_t *r = st;
	bson_t entry;
	int rc;

	r->s = s;
	if (r->invalidated)
		return 0;
	if (!r->opened) {
		if (!repl_oplog_exists(r->p->svc->op))
			return terr_set(err, 40573, "The $changeStream stage is only supported on replica sets");
		/* the start point must still be in the oplog */
		if (r->p->resume != RS_NONE) {
			repl_ts_t want = r->p->resume == RS_AT ? r->p->start_at : r->p->tok.ts;
			repl_ts_t old = oldest_ts(r, s);
			if (old != 0 && want < old)
				return history_lost(err);
		}
		RET(repl_oplog_scan_open(r->p->svc->op, s, r->after, &r->cur, err));
		r->opened = true;
	}
	for (;;) {
		while (r->iq < r->nq) {
			bson_t *ev = r->queue[r->iq++];
			const char *hex = doc_token(ev);
			const char *type = str_field(ev, "operationType");
			if (r->resume_hex != NULL && r->resume_base != NULL && hex != NULL &&
			    strcmp(hex, r->resume_base) == 0) {
				/* the event a fragment's token points into: handed on
				 * whole, the split stage drops the fragments up to it */
				r->frag_hex = bson_strdup(hex);
				r->must_find = false;
				bson_free(r->resume_hex);
				r->resume_hex = NULL;
			}
			if (r->resume_hex != NULL) {
				int c = strcmp(hex, r->resume_hex);
				if (c <= 0) {
					if (c == 0)
						r->must_find = false;
					continue;
				}
				if (r->must_find) {
					char *j = bson_as_relaxed_extended_json(ev, NULL);
					bson_t id;
					char *ij;
					sub_doc(ev, "_id", &id);
					ij = bson_as_relaxed_extended_json(&id, NULL);
					terr_set(err, CODE_CHANGE_STREAM_FATAL,
					    "cannot resume stream; the resume token was not found. %s", ij);
					bson_free(ij);
					bson_free(j);
					return -1;
				}
				bson_free(r->resume_hex);
				r->resume_hex = NULL;
			}
			pos_set(r, hex);
			bson_reinit(&r->out);
			bson_concat(&r->out, ev);
			if (type != NULL && strcmp(type, "invalidate") == 0)
				r->invalidated = true;
			*doc = &r->out;
			return 1;
		}
		queue_clear(r);
		/* a long scan of entries that make no event honours maxTimeMS and killOp */
		if ((++r->scanned_n & 1023) == 0)
			RET(tm_interrupt_check(err));
		if (r->cur == NULL)
			RET(repl_oplog_scan_open(r->p->svc->op, s, r->scanned > r->after ? r->scanned : r->after, &r->cur, err));
		rc = repl_oplog_cursor_next(r->cur, &entry, err);
		if (rc < 0)
			return -1;
		if (rc == 0) {
			r->at_end = true;
			return 0;
		}
		if (past_commit_point(r, &entry)) {
			/* read again from the last entry handled once it is committed */
			repl_oplog_cursor_close(r->cur);
			r->cur = NULL;
			return 0;
		}
		RET(handle_entry(r, &entry, err));
	}
}

static int
cs_save(void *st, terr_t *err)
{
	cs_run_t *r = st;

	r->s = NULL;
	return r->cur != NULL ? repl_oplog_cursor_save(r->cur, err) : 0;
}

static int
cs_restore(void *st, storage_session_t *s, terr_t *err)
{
	cs_run_t *r = st;

	r->s = s;
	if (r->cur == NULL)
		return 0;
	if (r->at_end) {
		/* a scan that reached the visibility point reads nothing more:
		 * read on from the last entry read, which must still be there */
		bson_t e;
		int rc = 0;
		repl_oplog_cursor_close(r->cur);
		r->cur = NULL;
		r->at_end = false;
		if (r->scanned != 0 && (rc = repl_oplog_find(r->p->svc->op, s, r->scanned, &e, err)) < 0)
			return -1;
		if (rc == 0 && r->scanned != 0)
			bson_destroy(&e);
		if (rc == 1)
			return history_lost(err);
		return 0;
	}
	if (repl_oplog_cursor_restore(r->cur, s, err) != 0) {
		if (err != NULL && err->code == STORAGE_CODE_CAPPED_POSITION_LOST) {
			terr_clear(err);
			return history_lost(err);
		}
		return -1;
	}
	return 0;
}

static void
cs_batch_end(void *st, const bson_value_t *last, bool ended, bson_t *cursor)
{
	cs_run_t *r = st;
	const char *hex = NULL;

	if (last != NULL && last->value_type == BSON_TYPE_DOCUMENT) {
		bson_t id;
		bson_init_static(&id, last->value.v_doc.data, last->value.v_doc.data_len);
		hex = str_field(&id, "_data");
	}
	if (hex == NULL || (ended && r->pos != NULL && strcmp(r->pos, hex) > 0))
		hex = r->pos;
	if (hex != NULL && last != NULL && last->value_type == BSON_TYPE_DOCUMENT && hex != r->pos) {
		/* the last event's token, with its _typeBits */
		bson_t id, pb;
		bson_iter_t tb;
		bson_init_static(&id, last->value.v_doc.data, last->value.v_doc.data_len);
		bson_append_document_begin(cursor, "postBatchResumeToken", -1, &pb);
		bson_append_utf8(&pb, "_data", 5, hex, -1);
		if (bson_iter_init_find(&tb, &id, "_typeBits") && BSON_ITER_HOLDS_BINARY(&tb))
			bson_append_iter(&pb, "_typeBits", 9, &tb);
		bson_append_document_end(cursor, &pb);
	} else if (hex != NULL) {
		cs_token_append(cursor, "postBatchResumeToken", hex);
	}
}

static bool
cs_finished(void *st)
{
	cs_run_t *r = st;

	return r->invalidated && r->iq >= r->nq;
}

static int32_t
cs_resume_fragment(void *st, const char *hex)
{
	cs_run_t *r = st;
	int32_t n = -1;

	if (r->frag_hex != NULL && hex != NULL && strcmp(r->frag_hex, hex) == 0) {
		n = r->p->tok.fragment;
		bson_free(r->frag_hex);
		r->frag_hex = NULL;
	}
	return n;
}

static bool
cs_resumes_split(const void *pp)
{
	const cs_plan_t *p = pp;

	return p->resume != RS_NONE && p->resume != RS_AT && p->tok.fragment >= 0;
}

const agg_change_stream_ops_t repl_cs_ops = {
	.parse = cs_parse,
	.push_match = cs_push_match,
	.open = cs_open,
	.next = cs_next,
	.save = cs_save,
	.restore = cs_restore,
	.batch_end = cs_batch_end,
	.finished = cs_finished,
	.close = cs_close,
	.free_plan = plan_free,
	.fragment_token = cs_token_hex_fragment,
	.resume_fragment = cs_resume_fragment,
	.resumes_split = cs_resumes_split,
};
