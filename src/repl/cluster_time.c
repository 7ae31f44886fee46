/*
 * cluster_time.c -- admin.system.keys and the HMAC-SHA1 proofs of
 * `$clusterTime` (see cluster_time.h).  Keys are cached in memory once read;
 * the collection is the durable copy (a restart signs with the same keys).
 */
#include "repl/cluster_time.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>

#include "common/opctx.h"

#define KEYS_DB "admin"
#define KEYS_COLL "system.keys"
#define MAX_KEYS 16

typedef struct key {
	int64_t id;
	uint8_t bytes[20];
	uint32_t expires_secs;
} key_t_;

struct cluster_keys {
	storage_t *st;
	pthread_mutex_t lock;
	bool loaded;
	int64_t reloaded_us;           /* last re-read for a key this member cannot create */
	key_t_ keys[MAX_KEYS];
	int n;
};

int
cluster_keys_open(storage_t *st, cluster_keys_t **out, terr_t *err)
{
	cluster_keys_t *k = bson_malloc0(sizeof(*k));

	k->st = st;
	pthread_mutex_init(&k->lock, NULL);
	*out = k;
	return 0;
}

void
cluster_keys_close(cluster_keys_t *k)
{
	if (k == NULL)
		return;
	pthread_mutex_destroy(&k->lock);
	bson_free(k);
}

typedef struct load_op {
	cluster_keys_t *k;
	const bson_t *insert;
} load_op_t;

static int
load_fn(storage_session_t *s, void *arg, terr_t *err)
{
	load_op_t *op = arg;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	int r, ret = 0;

	if (storage_coll_get(op->k->st, KEYS_DB, KEYS_COLL, &c, err) != 0) {
		terr_clear(err);
		if (op->insert == NULL)
			return 0;
		r = storage_coll_create(op->k->st, s, KEYS_DB, KEYS_COLL, NULL, err);
		if (r != 0 && err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
		if (storage_coll_get(op->k->st, KEYS_DB, KEYS_COLL, &c, err) != 0)
			return terr_set(err, TERR_INTERNAL_ERROR, "admin.system.keys vanished");
	}
	if (op->insert != NULL) {
		ret = storage_doc_insert(s, c, op->insert, NULL, err);
		storage_coll_release(c);
		return ret;
	}
	op->k->n = 0;
	ERR(storage_scan_open(s, c, false, &cur, err));
	while ((r = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		bson_iter_t it;
		key_t_ key;
		bool purpose = false, have_key = false;

		memset(&key, 0, sizeof(key));
		if (!bson_iter_init(&it, &doc))
			continue;
		while (bson_iter_next(&it)) {
			const char *f = bson_iter_key(&it);
			if (strcmp(f, "_id") == 0 && BSON_ITER_HOLDS_INT64(&it))
				key.id = bson_iter_int64(&it);
			else if (strcmp(f, "purpose") == 0 && BSON_ITER_HOLDS_UTF8(&it))
				purpose = strcmp(bson_iter_utf8(&it, NULL), "HMAC") == 0;
			else if (strcmp(f, "key") == 0 && BSON_ITER_HOLDS_BINARY(&it)) {
				const uint8_t *b;
				uint32_t len;
				bson_subtype_t st;
				bson_iter_binary(&it, &st, &len, &b);
				if (len == 20) {
					memcpy(key.bytes, b, 20);
					have_key = true;
				}
			} else if (strcmp(f, "expiresAt") == 0 && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
				uint32_t inc;
				bson_iter_timestamp(&it, &key.expires_secs, &inc);
			}
		}
		if (purpose && have_key && op->k->n < MAX_KEYS)
			op->k->keys[op->k->n++] = key;
	}
	if (r < 0)
		ret = -1;
err:
	if (cur != NULL)
		storage_cursor_close(cur);
	storage_coll_release(c);
	return ret;
}

static int
run(cluster_keys_t *k, const bson_t *insert, terr_t *err)
{
	storage_session_t *s = storage_session_pool_get(k->st, err);
	load_op_t op = {k, insert};
	int r;

	if (s == NULL)
		return -1;
	r = storage_txn_run(s, load_fn, &op, insert != NULL, err);
	storage_session_pool_put(k->st, s);
	return r;
}

/* A new key valid from `from` for CLUSTER_KEY_VALID_SECS (under the lock). */
static int
create_locked(cluster_keys_t *k, uint32_t from, terr_t *err)
{
	key_t_ key;
	bson_t doc;
	int r;

	if (k->n >= MAX_KEYS) {
		/* drop the oldest from memory (the stored copy stays) */
		memmove(&k->keys[0], &k->keys[1], sizeof(k->keys[0]) * (MAX_KEYS - 1));
		k->n--;
	}
	memset(&key, 0, sizeof(key));
	/* mongod's keyId: the cluster time of its creation as one 64-bit number */
	key.id = ((int64_t)from << 32) | (int64_t)(k->n + 1);
	key.expires_secs = from + CLUSTER_KEY_VALID_SECS;
	if (RAND_bytes(key.bytes, sizeof(key.bytes)) != 1)
		return terr_set(err, TERR_INTERNAL_ERROR, "cannot generate a cluster time key");
	bson_init(&doc);
	BSON_APPEND_INT64(&doc, "_id", key.id);
	BSON_APPEND_UTF8(&doc, "purpose", "HMAC");
	BSON_APPEND_BINARY(&doc, "key", BSON_SUBTYPE_BINARY, key.bytes, sizeof(key.bytes));
	BSON_APPEND_TIMESTAMP(&doc, "expiresAt", key.expires_secs, 0);
	r = run(k, &doc, err);
	bson_destroy(&doc);
	if (r != 0)
		return -1;
	k->keys[k->n++] = key;
	return 0;
}

static int
ensure_loaded_locked(cluster_keys_t *k, terr_t *err)
{
	if (k->loaded)
		return 0;
	RET(run(k, NULL, err));
	k->loaded = true;
	return 0;
}

static void
proof(const uint8_t key[20], uint32_t secs, uint32_t inc, uint8_t out[20])
{
	uint8_t msg[8];
	uint64_t v = ((uint64_t)secs << 32) | inc;
	unsigned int len = 20;

	for (int i = 0; i < 8; i++)
		msg[i] = (uint8_t)(v >> (8 * i));
	HMAC(EVP_sha1(), key, 20, msg, sizeof(msg), out, &len);
}

/* The key that expires first among those still valid at secs, or NULL. */
static const key_t_ *
pick_locked(cluster_keys_t *k, uint32_t secs)
{
	const key_t_ *use = NULL;

	for (int i = 0; i < k->n; i++)
		if (k->keys[i].expires_secs > secs && (use == NULL || k->keys[i].expires_secs < use->expires_secs))
			use = &k->keys[i];
	return use;
}

/* Read admin.system.keys again (keys the primary wrote reach a secondary
 * through the set's log), at most once a second. */
static int
reload_locked(cluster_keys_t *k, terr_t *err)
{
	int64_t now = tm_now_us();

	if (k->reloaded_us != 0 && now - k->reloaded_us < 1000000)
		return 0;
	k->reloaded_us = now;
	k->loaded = false;
	return ensure_loaded_locked(k, err);
}

static int
sign(cluster_keys_t *k, uint32_t secs, uint32_t inc, bool may_create, int64_t *key_id, uint8_t hash[20],
     terr_t *err)
{
	const key_t_ *use = NULL;

	pthread_mutex_lock(&k->lock);
	if (ensure_loaded_locked(k, err) != 0)
		goto fail;
	use = pick_locked(k, secs);
	if (use == NULL && !may_create) {
		if (reload_locked(k, err) != 0)
			goto fail;
		use = pick_locked(k, secs);
		if (use == NULL) {
			pthread_mutex_unlock(&k->lock);
			return 1;
		}
	}
	if (use == NULL) {
		/* none (first use, or every key expired): the current and the next */
		if (create_locked(k, secs, err) != 0 || create_locked(k, secs + CLUSTER_KEY_VALID_SECS, err) != 0)
			goto fail;
		use = &k->keys[k->n - 2];
	}
	*key_id = use->id;
	proof(use->bytes, secs, inc, hash);
	pthread_mutex_unlock(&k->lock);
	return 0;
fail:
	pthread_mutex_unlock(&k->lock);
	return -1;
}

int
cluster_keys_sign(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t *key_id, uint8_t hash[20],
                  terr_t *err)
{
	return sign(k, secs, inc, true, key_id, hash, err);
}

int
cluster_keys_sign_existing(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t *key_id, uint8_t hash[20],
                           terr_t *err)
{
	return sign(k, secs, inc, false, key_id, hash, err);
}

/* The cached key key_id, or NULL. */
static const key_t_ *
find_locked(cluster_keys_t *k, int64_t key_id)
{
	for (int i = 0; i < k->n; i++)
		if (k->keys[i].id == key_id)
			return &k->keys[i];
	return NULL;
}

int
cluster_keys_verify(cluster_keys_t *k, uint32_t secs, uint32_t inc, int64_t key_id, const uint8_t *hash,
                    uint32_t len, terr_t *err)
{
	uint8_t want[20];
	const key_t_ *key;

	pthread_mutex_lock(&k->lock);
	if (ensure_loaded_locked(k, err) != 0) {
		pthread_mutex_unlock(&k->lock);
		return -1;
	}
	key = find_locked(k, key_id);
	if (key == NULL) {
		/* not known here: the primary may have made it since */
		terr_t ignore = TERR_INIT;
		if (reload_locked(k, &ignore) == 0)
			key = find_locked(k, key_id);
		terr_clear(&ignore);
	}
	if (key != NULL) {
		proof(key->bytes, secs, inc, want);
		pthread_mutex_unlock(&k->lock);
		if (len != 20 || CRYPTO_memcmp(want, hash, 20) != 0)
			return terr_set(err, TERR_TIME_PROOF_MISMATCH, "Time proof mismatch");
		return 0;
	}
	pthread_mutex_unlock(&k->lock);
	return terr_set(err, TERR_KEY_NOT_FOUND,
	    "No keys found for HMAC that is valid for time: { ts: Timestamp(%u, %u) } with id: %lld", secs, inc,
	    (long long)key_id);
}
