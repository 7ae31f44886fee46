/*
 * session.c -- the logical session cache and the session catalog (see
 * session.h): one table of sessions per engine, dense for listing and
 * expiry, with a hash index on the ids (open addressing, linear probing:
 * slot = index + 1, 0 = empty) so a lookup never walks the whole table under
 * the lock.  Entries are heap-allocated so a checked-out session stays put
 * while others come and go.
 */
#include "repl/session.h"
#include "repl/txn.h"
#include "repl/retryable.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <openssl/sha.h>

#include "common/mem.h"
#include "common/opctx.h"

struct repl_session {
	repl_sessions_t *reg;
	uint8_t id[16];
	uint8_t uid[SHA256_DIGEST_LENGTH];
	char *user;              /* "name@db", NULL when unauthenticated */
	int64_t last_use_ms;
	bool listed;             /* in the session cache (not ended) */
	bool checked_out;
	bool ended;              /* ended while checked out: removed at check-in */
	repl_txn_state_t txn;
};

struct repl_sessions {
	storage_t *st;
	pthread_mutex_t mu;
	pthread_cond_t cv;       /* a session was checked in */
	repl_session_t **tab;
	int n, cap;
	uint32_t *slots;
	uint32_t mask;           /* slots size - 1; slots NULL before the first session */
	repl_txn_stats_t stats;
	/* ended since the last refresh: their config.system.sessions rows go */
	uint8_t (*ended)[16];
	int nended, capended;
	atomic_ullong gen;       /* repl_sessions_generation */
};

#define SESSIONS_DB "config"
#define SESSIONS_COLL "system.sessions"
#define ENDED_MAX 10000

int64_t
repl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
repl_session_uid(const char *user, uint8_t uid[32])
{
	/* SHA-256 of "" (no user: no --auth), the uid of every session row
	 * written without auth -- computed once, not per retryable write */
	static const uint8_t empty[32] = {0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4,
	    0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99,
	    0x1b, 0x78, 0x52, 0xb8, 0x55};

	if (user == NULL || user[0] == '\0') {
		memcpy(uid, empty, 32);
		return;
	}
	SHA256((const unsigned char *)user, strlen(user), uid);
}

bool
repl_lsid_id(const bson_iter_t *lsid, const uint8_t **id)
{
	/* what drivers send, byte for byte: {id: BinData(4, <16 bytes>)} */
	static const uint8_t shape[13] = {30, 0, 0, 0, BSON_TYPE_BINARY, 'i', 'd', 0, 16, 0, 0, 0,
	    BSON_SUBTYPE_UUID};
	bson_iter_t sub;
	bson_subtype_t st;
	uint32_t len;
	const uint8_t *doc;

	if (BSON_ITER_HOLDS_DOCUMENT(lsid)) {
		bson_iter_document(lsid, &len, &doc);
		if (len == 30 && memcmp(doc, shape, sizeof(shape)) == 0 && doc[29] == 0) {
			*id = doc + 13;
			return true;
		}
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(lsid) || !bson_iter_recurse(lsid, &sub) || !bson_iter_find(&sub, "id") ||
	    !BSON_ITER_HOLDS_BINARY(&sub))
		return false;
	bson_iter_binary(&sub, &st, &len, id);
	return st == BSON_SUBTYPE_UUID && len == 16;
}

repl_sessions_t *
repl_sessions_new(storage_t *st)
{
	repl_sessions_t *ss = tm_alloc0(sizeof(*ss));

	ss->st = st;
	atomic_init(&ss->gen, 1);
	pthread_mutex_init(&ss->mu, NULL);
	pthread_cond_init(&ss->cv, NULL);
	return ss;
}

storage_t *
repl_sessions_storage(repl_sessions_t *ss)
{
	return ss->st;
}

repl_txn_stats_t *
repl_txn_stats(repl_sessions_t *ss)
{
	return &ss->stats;
}

static void
session_free(repl_session_t *s)
{
	repl_txn_abort_quietly(s, s->reg->st);
	repl_retry_record_free(s->txn.retry);
	if (s->txn.row_key != NULL)
		bson_destroy(s->txn.row_key);
	bson_free(s->txn.row_last);
	bson_free(s->user);
	bson_free(s);
}

void
repl_sessions_free(repl_sessions_t *ss)
{
	if (ss == NULL)
		return;
	for (int i = 0; i < ss->n; i++)
		session_free(ss->tab[i]);
	bson_free(ss->tab);
	bson_free(ss->slots);
	bson_free(ss->ended);
	pthread_mutex_destroy(&ss->mu);
	pthread_cond_destroy(&ss->cv);
	bson_free(ss);
}

/* Session ids are random UUIDs (drivers use version 4): their first bytes
 * spread well once mixed. */
static uint32_t
sess_hash(const uint8_t *id)
{
	uint64_t h;

	memcpy(&h, id, 8);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}

/* The slot holding id, or the empty slot where it would go; *idx gets its
 * index in tab, or -1.  Caller holds mu; slots exist. */
static uint32_t
sess_probe(repl_sessions_t *ss, const uint8_t *id, int *idx)
{
	uint32_t p = sess_hash(id) & ss->mask;

	for (;; p = (p + 1) & ss->mask) {
		uint32_t v = ss->slots[p];
		if (v == 0) {
			*idx = -1;
			return p;
		}
		if (memcmp(ss->tab[v - 1]->id, id, 16) == 0) {
			*idx = (int)v - 1;
			return p;
		}
	}
}

/* Rebuild the index for the sessions there are, at most half full. */
static void
sess_reindex(repl_sessions_t *ss)
{
	uint32_t size = 64;
	int i, idx;

	while (size < (uint32_t)ss->n * 2 + 2)
		size *= 2;
	bson_free(ss->slots);
	ss->slots = bson_malloc0(sizeof(*ss->slots) * size);
	ss->mask = size - 1;
	for (i = 0; i < ss->n; i++)
		ss->slots[sess_probe(ss, ss->tab[i]->id, &idx)] = (uint32_t)i + 1;
}

/* Empty slot p and close the gap behind it (linear probing's deletion). */
static void
sess_slot_clear(repl_sessions_t *ss, uint32_t p)
{
	uint32_t q = p;

	ss->slots[p] = 0;
	for (;;) {
		uint32_t h;
		q = (q + 1) & ss->mask;
		if (ss->slots[q] == 0)
			return;
		h = sess_hash(ss->tab[ss->slots[q] - 1]->id) & ss->mask;
		/* the entry at q may move to p unless its home lies in (p, q] */
		if (((q - h) & ss->mask) >= ((q - p) & ss->mask)) {
			ss->slots[p] = ss->slots[q];
			ss->slots[q] = 0;
			p = q;
		}
	}
}

/* Take entry i out of the table (caller frees it); caller holds mu. */
static repl_session_t *
sess_remove_at(repl_sessions_t *ss, int i)
{
	repl_session_t *s = ss->tab[i];
	int last = ss->n - 1, j;
	uint32_t p = sess_probe(ss, s->id, &j);

	sess_slot_clear(ss, p);
	if (i != last) {
		/* the last session moves into the hole: re-point its slot */
		uint32_t q = sess_probe(ss, ss->tab[last]->id, &j);
		ss->tab[i] = ss->tab[last];
		ss->slots[q] = (uint32_t)i + 1;
	}
	ss->n--;
	return s;
}

/* The entry for id, created when create; NULL when absent or the table is
 * full.  Caller holds mu. */
static repl_session_t *
sess_find(repl_sessions_t *ss, const uint8_t *id, bool create)
{
	repl_session_t *s;
	uint32_t p;
	int i;

	if (ss->slots == NULL)
		sess_reindex(ss);
	p = sess_probe(ss, id, &i);
	if (i >= 0)
		return ss->tab[i];
	if (!create || ss->n >= REPL_SESSION_CACHE_MAX)
		return NULL;
	if (ss->n == ss->cap) {
		ss->cap = ss->cap ? ss->cap * 2 : 64;
		ss->tab = bson_realloc(ss->tab, sizeof(*ss->tab) * (size_t)ss->cap);
	}
	s = tm_alloc0(sizeof(*s));
	s->reg = ss;
	memcpy(s->id, id, 16);
	repl_session_uid(NULL, s->uid);
	s->txn.txn_number = -1;
	ss->tab[ss->n] = s;
	ss->slots[p] = (uint32_t)ss->n + 1;
	ss->n++;
	if ((uint32_t)ss->n * 2 > ss->mask)
		sess_reindex(ss);
	return s;
}

/* Drop sessions unused for the timeout (their transactions aborted);
 * caller holds mu. */
static void
sessions_expire(repl_sessions_t *ss, int64_t now)
{
	for (int i = 0; i < ss->n;) {
		repl_session_t *s = ss->tab[i];
		if (!s->checked_out && now - s->last_use_ms > (int64_t)REPL_SESSION_TIMEOUT_MINUTES * 60000) {
			atomic_fetch_add(&ss->gen, 1);
			session_free(sess_remove_at(ss, i));
			continue;
		}
		i++;
	}
}

uint64_t
repl_sessions_generation(repl_sessions_t *ss)
{
	return atomic_load(&ss->gen);
}

void
repl_sessions_touch(repl_sessions_t *ss, const uint8_t *id, const char *user)
{
	int64_t now = repl_now_ms();
	repl_session_t *s;

	pthread_mutex_lock(&ss->mu);
	if (ss->n >= REPL_SESSION_CACHE_MAX)
		sessions_expire(ss, now);
	if ((s = sess_find(ss, id, true)) != NULL) {
		if (!s->listed || (s->user == NULL) != (user == NULL) ||
		    (user != NULL && strcmp(s->user, user) != 0)) {
			bson_free(s->user);
			s->user = user ? bson_strdup(user) : NULL;
			repl_session_uid(user, s->uid);
		}
		s->listed = true;
		s->ended = false;
		s->last_use_ms = now;
	}
	pthread_mutex_unlock(&ss->mu);
}

/* End s: caller holds mu. */
static void
sess_end_locked(repl_sessions_t *ss, repl_session_t *s)
{
	int i;

	atomic_fetch_add(&ss->gen, 1);
	if (s->listed && ss->nended < ENDED_MAX) {
		if (ss->nended == ss->capended) {
			ss->capended = ss->capended ? ss->capended * 2 : 16;
			ss->ended = bson_realloc(ss->ended, sizeof(*ss->ended) * (size_t)ss->capended);
		}
		memcpy(ss->ended[ss->nended++], s->id, 16);
	}

	if (s->checked_out) {
		s->ended = true;
		s->listed = false;
		s->txn.killed = true;
		return;
	}
	sess_probe(ss, s->id, &i);
	if (i >= 0)
		session_free(sess_remove_at(ss, i));
}

void
repl_sessions_end(repl_sessions_t *ss, const uint8_t *id)
{
	repl_session_t *s;

	pthread_mutex_lock(&ss->mu);
	if ((s = sess_find(ss, id, false)) != NULL)
		sess_end_locked(ss, s);
	pthread_mutex_unlock(&ss->mu);
}

static bool
uid_among(const uint8_t *uid, const uint8_t *uids, int nuids)
{
	for (int k = 0; k < nuids; k++)
		if (memcmp(uids + SHA256_DIGEST_LENGTH * k, uid, SHA256_DIGEST_LENGTH) == 0)
			return true;
	return false;
}

int
repl_sessions_kill_matching(repl_sessions_t *ss, const uint8_t *uids, int nuids)
{
	int killed = 0;

	pthread_mutex_lock(&ss->mu);
	for (int i = 0; i < ss->n;) {
		repl_session_t *s = ss->tab[i];
		int before = ss->n;
		if (uids != NULL && !uid_among(s->uid, uids, nuids)) {
			i++;
			continue;
		}
		killed++;
		sess_end_locked(ss, s);
		if (ss->n == before)
			i++;
	}
	pthread_mutex_unlock(&ss->mu);
	return killed;
}

void
repl_sessions_list(repl_sessions_t *ss, bool all, const uint8_t *uids, int nuids, bson_t *out)
{
	int pos = 0;

	pthread_mutex_lock(&ss->mu);
	sessions_expire(ss, repl_now_ms());
	for (int i = 0; i < ss->n; i++) {
		repl_session_t *s = ss->tab[i];
		char key[16];
		const char *kp;
		bson_t doc, idd, user;

		if (!s->listed || (!all && !uid_among(s->uid, uids, nuids)))
			continue;
		bson_uint32_to_string((uint32_t)pos++, &kp, key, sizeof(key));
		bson_append_document_begin(out, kp, -1, &doc);
		bson_append_document_begin(&doc, "_id", 3, &idd);
		bson_append_binary(&idd, "id", 2, BSON_SUBTYPE_UUID, s->id, 16);
		bson_append_binary(&idd, "uid", 3, BSON_SUBTYPE_BINARY, s->uid, SHA256_DIGEST_LENGTH);
		bson_append_document_end(&doc, &idd);
		bson_append_date_time(&doc, "lastUse", -1, s->last_use_ms);
		if (s->user != NULL) {
			bson_append_document_begin(&doc, "user", -1, &user);
			BSON_APPEND_UTF8(&user, "name", s->user);
			bson_append_document_end(&doc, &user);
		}
		bson_append_document_end(out, &doc);
	}
	pthread_mutex_unlock(&ss->mu);
}

int
repl_sessions_count(repl_sessions_t *ss)
{
	int n = 0;

	pthread_mutex_lock(&ss->mu);
	sessions_expire(ss, repl_now_ms());
	for (int i = 0; i < ss->n; i++)
		n += ss->tab[i]->listed;
	pthread_mutex_unlock(&ss->mu);
	return n;
}

int
repl_session_checkout(repl_sessions_t *ss, const uint8_t *id, int64_t deadline_us, repl_session_t **out,
                      terr_t *err)
{
	repl_session_t *s;

	*out = NULL;
	pthread_mutex_lock(&ss->mu);
	for (;;) {
		if ((s = sess_find(ss, id, true)) == NULL) {
			pthread_mutex_unlock(&ss->mu);
			return terr_set(err, TERR_TOO_MANY_LOGICAL_SESSIONS,
			    "Unable to add session into the cache because the number of active sessions is too high");
		}
		if (!s->checked_out)
			break;
		if (deadline_us != 0) {
			int64_t now = tm_now_us(), wait;
			struct timespec ts;
			if (now >= deadline_us) {
				pthread_mutex_unlock(&ss->mu);
				return terr_set(err, TERR_MAX_TIME_MS_EXPIRED, "operation exceeded time limit");
			}
			clock_gettime(CLOCK_REALTIME, &ts);
			wait = deadline_us - now;
			if (wait > 100000)
				wait = 100000;
			ts.tv_sec += (time_t)(wait / 1000000);
			ts.tv_nsec += (long)(wait % 1000000) * 1000;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&ss->cv, &ss->mu, &ts);
		} else {
			pthread_cond_wait(&ss->cv, &ss->mu);
		}
	}
	s->checked_out = true;
	s->last_use_ms = repl_now_ms();
	pthread_mutex_unlock(&ss->mu);
	*out = s;
	return 0;
}

void
repl_session_checkin(repl_session_t *s)
{
	repl_sessions_t *ss;
	int i;

	if (s == NULL)
		return;
	ss = s->reg;
	if (s->txn.killed) {
		repl_txn_abort_quietly(s, ss->st);
		s->txn.killed = false;
	}
	pthread_mutex_lock(&ss->mu);
	s->checked_out = false;
	s->last_use_ms = repl_now_ms();
	if (s->ended) {
		sess_probe(ss, s->id, &i);
		if (i >= 0)
			session_free(sess_remove_at(ss, i));
	}
	pthread_cond_broadcast(&ss->cv);
	pthread_mutex_unlock(&ss->mu);
}

repl_sessions_t *
repl_session_registry(repl_session_t *s)
{
	return s->reg;
}

const uint8_t *
repl_session_id(const repl_session_t *s)
{
	return s->id;
}

void
repl_session_owner_uid(const repl_session_t *s, uint8_t uid[32])
{
	/* a touch from another connection may change it meanwhile */
	pthread_mutex_lock(&s->reg->mu);
	memcpy(uid, s->uid, SHA256_DIGEST_LENGTH);
	pthread_mutex_unlock(&s->reg->mu);
}

void
repl_session_adopt_uid(repl_session_t *s, const uint8_t uid[32])
{
	pthread_mutex_lock(&s->reg->mu);
	if (!s->listed)
		memcpy(s->uid, uid, SHA256_DIGEST_LENGTH);
	pthread_mutex_unlock(&s->reg->mu);
}

void
repl_session_append_lsid(bson_t *doc, const char *key, const repl_session_t *s)
{
	bson_t d;
	uint8_t uid[SHA256_DIGEST_LENGTH];

	repl_session_owner_uid(s, uid);
	bson_append_document_begin(doc, key, -1, &d);
	bson_append_binary(&d, "id", 2, BSON_SUBTYPE_UUID, s->id, 16);
	bson_append_binary(&d, "uid", 3, BSON_SUBTYPE_BINARY, uid, SHA256_DIGEST_LENGTH);
	bson_append_document_end(doc, &d);
}

void
repl_session_lsid(const repl_session_t *s, bson_t *out)
{
	uint8_t uid[SHA256_DIGEST_LENGTH];

	repl_session_owner_uid(s, uid);
	bson_init(out);
	bson_append_binary(out, "id", 2, BSON_SUBTYPE_UUID, s->id, 16);
	bson_append_binary(out, "uid", 3, BSON_SUBTYPE_BINARY, uid, SHA256_DIGEST_LENGTH);
}

const char *
repl_session_describe(const repl_session_t *s, char buf[160])
{
	static const char hex[] = "0123456789ABCDEF";
	char uuid[37], uid[65];
	int k = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			uuid[k++] = '-';
		uuid[k++] = "0123456789abcdef"[s->id[i] >> 4];
		uuid[k++] = "0123456789abcdef"[s->id[i] & 15];
	}
	uuid[k] = '\0';
	for (int i = 0; i < 32; i++) {
		uid[2 * i] = hex[s->uid[i] >> 4];
		uid[2 * i + 1] = hex[s->uid[i] & 15];
	}
	uid[64] = '\0';
	snprintf(buf, 160, "{ id: UUID(\"%s\"), uid: BinData(0, %s) }", uuid, uid);
	return buf;
}

repl_txn_state_t *
repl_session_txn(repl_session_t *s)
{
	return &s->txn;
}

void
repl_sessions_visit_idle(repl_sessions_t *ss, repl_session_visit_fn fn, void *arg)
{
	pthread_mutex_lock(&ss->mu);
	for (int i = 0; i < ss->n; i++)
		if (!ss->tab[i]->checked_out)
			fn(ss->tab[i], arg);
	pthread_mutex_unlock(&ss->mu);
}

/* ---- config.system.sessions ----------------------------------------------- */

typedef struct session_row {
	uint8_t id[16];
	uint8_t uid[SHA256_DIGEST_LENGTH];
	int64_t last_use_ms;
	char *user;
} session_row_t;

typedef struct refresh_arg {
	storage_coll_t *c;
	session_row_t *rows;
	int nrows;
	uint8_t (*ended)[16];
	int nended;
} refresh_arg_t;

static void
row_id(bson_t *out, const uint8_t *id, const uint8_t *uid)
{
	bson_t d;

	bson_append_document_begin(out, "_id", 3, &d);
	bson_append_binary(&d, "id", 2, BSON_SUBTYPE_UUID, id, 16);
	bson_append_binary(&d, "uid", 3, BSON_SUBTYPE_BINARY, uid, SHA256_DIGEST_LENGTH);
	bson_append_document_end(out, &d);
}

/* The row's current recid and document: 0 found, 1 absent, -1 error.  The
 * _id is {id, uid}: ended sessions are found by id alone, so they are looked
 * up with the uid of the row written for them (any user's). */
static int
row_find(storage_session_t *s, storage_coll_t *c, const uint8_t *id, const uint8_t *uid, recid_t *recid,
         bson_t *old, terr_t *err)
{
	bson_t key = BSON_INITIALIZER;
	bson_iter_t it;
	int rc;

	row_id(&key, id, uid);
	bson_iter_init_find(&it, &key, "_id");
	rc = storage_doc_find_id(s, c, bson_iter_value(&it), recid, old, err);
	bson_destroy(&key);
	return rc;
}

static int
refresh_txn(storage_session_t *s, void *p, terr_t *err)
{
	refresh_arg_t *a = p;

	for (int i = 0; i < a->nrows; i++) {
		session_row_t *r = &a->rows[i];
		bson_t doc = BSON_INITIALIZER, old, user;
		recid_t recid;
		int rc;

		row_id(&doc, r->id, r->uid);
		bson_append_date_time(&doc, "lastUse", -1, r->last_use_ms);
		if (r->user != NULL) {
			bson_append_document_begin(&doc, "user", -1, &user);
			BSON_APPEND_UTF8(&user, "name", r->user);
			bson_append_document_end(&doc, &user);
		}
		rc = row_find(s, a->c, r->id, r->uid, &recid, &old, err);
		if (rc == 0)
			rc = storage_doc_update(s, a->c, recid, &old, &doc, err);
		else if (rc == 1)
			rc = storage_doc_insert(s, a->c, &doc, NULL, err);
		bson_destroy(&doc);
		if (rc != 0)
			return -1;
	}
	for (int i = 0; i < a->nended; i++) {
		uint8_t uid[SHA256_DIGEST_LENGTH];
		bson_t old;
		recid_t recid;
		int rc;
		/* the anonymous uid; a named user's row expires by TTL */
		repl_session_uid(NULL, uid);
		rc = row_find(s, a->c, a->ended[i], uid, &recid, &old, err);
		if (rc == 0)
			rc = storage_doc_delete(s, a->c, recid, &old, err);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
sessions_coll(storage_t *st, storage_session_t *s, storage_coll_t **c, terr_t *err)
{
	terr_t e = TERR_INIT;
	bson_t spec = BSON_INITIALIZER, key;
	int rc;

	if (storage_coll_get(st, SESSIONS_DB, SESSIONS_COLL, c, NULL) == 0)
		return 0;
	if (storage_coll_create(st, s, SESSIONS_DB, SESSIONS_COLL, NULL, &e) != 0 && e.code != TERR_NAMESPACE_EXISTS) {
		terr_move(err, &e);
		return -1;
	}
	terr_clear(&e);
	BSON_APPEND_INT32(&spec, "v", 2);
	BSON_APPEND_DOCUMENT_BEGIN(&spec, "key", &key);
	BSON_APPEND_INT32(&key, "lastUse", 1);
	bson_append_document_end(&spec, &key);
	BSON_APPEND_UTF8(&spec, "name", "lsidTTLIndex");
	BSON_APPEND_INT32(&spec, "expireAfterSeconds", REPL_SESSION_TIMEOUT_MINUTES * 60);
	rc = storage_index_create(st, s, SESSIONS_DB, SESSIONS_COLL, &spec, &e);
	bson_destroy(&spec);
	if (rc != 0 && e.code != TERR_INDEX_ALREADY_EXISTS) {
		terr_move(err, &e);
		return -1;
	}
	terr_clear(&e);
	return storage_coll_get(st, SESSIONS_DB, SESSIONS_COLL, c, err) == 0 ? 0 :
	    terr_set(err, TERR_INTERNAL_ERROR, "config.system.sessions could not be created");
}

int
repl_sessions_refresh(repl_sessions_t *ss, storage_session_t *s, terr_t *err)
{
	refresh_arg_t a;
	int ret;

	memset(&a, 0, sizeof(a));
	RET(sessions_coll(ss->st, s, &a.c, err));
	pthread_mutex_lock(&ss->mu);
	sessions_expire(ss, repl_now_ms());
	a.rows = bson_malloc0(sizeof(*a.rows) * (size_t)(ss->n + 1));
	for (int i = 0; i < ss->n; i++) {
		repl_session_t *e = ss->tab[i];
		if (!e->listed)
			continue;
		memcpy(a.rows[a.nrows].id, e->id, 16);
		memcpy(a.rows[a.nrows].uid, e->uid, SHA256_DIGEST_LENGTH);
		a.rows[a.nrows].last_use_ms = e->last_use_ms;
		a.rows[a.nrows].user = e->user ? bson_strdup(e->user) : NULL;
		a.nrows++;
	}
	a.ended = ss->ended;
	a.nended = ss->nended;
	ss->ended = NULL;
	ss->nended = ss->capended = 0;
	pthread_mutex_unlock(&ss->mu);
	ret = storage_txn_run(s, refresh_txn, &a, false, err);
	for (int i = 0; i < a.nrows; i++)
		bson_free(a.rows[i].user);
	bson_free(a.rows);
	bson_free(a.ended);
	storage_coll_release(a.c);
	return ret;
}
