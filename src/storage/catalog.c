/*
 * catalog.c -- the catalog: which collections exist, their UUIDs, options,
 * tables and index specs.
 *
 * On disk: the WiredTiger table "table:_catalog", key = ns string, value =
 * BSON {ns, uuid, ident, options, indexes: [{spec, ident, multikey}]}, plus
 * one row "$meta" {nextIdent} (no namespace can be spelled "$meta").  In
 * memory: a sorted array of immutable, reference-counted storage_coll_t
 * descriptors; every change builds new descriptors and swaps pointers under
 * the write lock, so a reader holding a reference never sees a change.
 *
 * WiredTiger 3.2's create/drop are not transactional, so changes are ordered
 * to survive a crash anywhere: tables are created before the catalog row
 * that names them is committed, and dropped only after the row is gone;
 * storage_catalog_load drops tables no row names.
 *
 * Not here: reading or writing documents (record.c).
 */
#include "storage/storage_private.h"

#include "bson/collation.h"
#include "bson/value.h"
#include "bson/keystring.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "common/opctx.h"

/* ---- runtime counters and descriptors ------------------------------------ */

static coll_rt_t *
coll_rt_new(void)
{
	coll_rt_t *rt = bson_malloc0(sizeof(*rt));
	pthread_rwlockattr_t attr;

	atomic_init(&rt->refs, 1);
	/* Writer preference: an index build waiting for the gate is not
	 * starved by a stream of new write transactions. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rt->gate, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&rt->capped_lock, NULL);
	pthread_mutex_init(&rt->ins_mu, NULL);
	{
		/* insert waiters' deadlines are CLOCK_MONOTONIC (storage_coll_wait_insert) */
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&rt->ins_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	return rt;
}

void
coll_rt_ref(coll_rt_t *rt)
{
	atomic_fetch_add(&rt->refs, 1);
}

void
coll_rt_release(coll_rt_t *rt)
{
	if (rt != NULL && atomic_fetch_sub(&rt->refs, 1) == 1) {
		pthread_rwlock_destroy(&rt->gate);
		pthread_mutex_destroy(&rt->capped_lock);
		pthread_mutex_destroy(&rt->ins_mu);
		pthread_cond_destroy(&rt->ins_cond);
		bson_free(rt);
	}
}

static void
coll_free(storage_coll_t *c)
{
	coll_impl_t *impl = c->impl;

	if (c->cache != NULL && c->cache_free != NULL)
		c->cache_free(c->cache);
	for (int i = 0; i < c->nindexes; i++) {
		bson_free(c->indexes[i].name);
		bson_destroy(c->indexes[i].spec);
		bson_destroy(c->indexes[i].key);
		bson_free(c->indexes[i].ident);
		bson_free(c->indexes[i].ts_time_field);
	}
	bson_free(c->indexes);
	bson_free(c->db);
	bson_free(c->name);
	bson_free(c->ns);
	if (c->options != NULL)
		bson_destroy(c->options);
	bson_free(c->ident);
	if (impl != NULL) {
		coll_rt_release(impl->rt);
		bson_free(impl);
	}
	bson_free(c);
}

void
storage_coll_ref(storage_coll_t *c)
{
	atomic_fetch_add(&((coll_impl_t *)c->impl)->refs, 1);
}

void
storage_coll_release(storage_coll_t *c)
{
	if (c != NULL && atomic_fetch_sub(&((coll_impl_t *)c->impl)->refs, 1) == 1)
		coll_free(c);
}

void *
storage_coll_cache_set(storage_coll_t *c, void *value, void (*free_fn)(void *))
{
	void *expected = NULL;

	if (__atomic_compare_exchange_n(&c->cache, &expected, value, false, __ATOMIC_ACQ_REL,
	        __ATOMIC_ACQUIRE)) {
		c->cache_free = free_fn;
		return value;
	}
	return expected;
}

/* The collation a stored spec or options document names (already
 * validated and normalized when it was written, so parsing cannot fail;
 * a damaged one reads as simple). */
static const coll_t *
stored_collation(const bson_t *doc)
{
	bson_iter_t it;
	const coll_t *c = NULL;
	terr_t e = TERR_INIT;

	if (doc != NULL && bson_iter_init_find(&it, doc, "collation") &&
	    coll_parse_value(bson_iter_value(&it), "collation", &c, &e) != 0)
		c = NULL;
	terr_clear(&e);
	return c;
}

/* Build a descriptor from a catalog row.  rt: the table's counters (a
 * reference is taken), or NULL for new ones. */
/* A descriptor's capped fields from its options (as create/collMod stored
 * them), also published to the table's counters for writers holding older
 * descriptors. */
static void
capped_from_options(storage_coll_t *c)
{
	coll_rt_t *rt = storage_coll_rt(c);
	bson_iter_t it;

	c->capped = bson_iter_init_find(&it, c->options, "capped") && bson_iter_as_bool(&it);
	if (!c->capped)
		return;
	if (bson_iter_init_find(&it, c->options, "size") && BSON_ITER_HOLDS_NUMBER(&it))
		c->capped_size = bson_iter_as_int64(&it);
	if (bson_iter_init_find(&it, c->options, "max") && BSON_ITER_HOLDS_NUMBER(&it))
		c->capped_max = bson_iter_as_int64(&it);
	if (c->capped_max < 0)
		c->capped_max = 0;
	atomic_store(&rt->cap_size, c->capped_size);
	atomic_store(&rt->cap_max, c->capped_max);
	/* the oplog is capped for its readers, but its owner (repl/) orders it
	 * by timestamp and truncates its oldest end itself, as mongod's
	 * truncate markers do: its inserts are neither serialised nor capped */
	if (strcmp(c->ns, STORAGE_OPLOG_NS) != 0)
		atomic_store(&rt->capped, true);
}

static int
coll_from_entry(const bson_t *entry, coll_rt_t *rt, uint64_t version, storage_coll_t **out, terr_t *err)
{
	storage_coll_t *c = bson_malloc0(sizeof(*c));
	coll_impl_t *impl = bson_malloc0(sizeof(*impl));
	bson_iter_t it, arr, sub;
	const char *dot;
	int ret = 0;

	atomic_init(&impl->refs, 1);
	if (rt != NULL)
		coll_rt_ref(rt);
	impl->rt = rt != NULL ? rt : coll_rt_new();
	impl->ixgen = atomic_load(&impl->rt->ixgen);
	impl->optgen = atomic_load(&impl->rt->optgen);
	c->impl = impl;
	c->version = version;
	if (!bson_iter_init(&it, entry)) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt catalog entry");
		goto err;
	}
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "ns") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
			c->ns = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (strcmp(k, "ident") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
			c->ident = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (strcmp(k, "uuid") == 0 && BSON_ITER_HOLDS_BINARY(&it)) {
			bson_subtype_t st;
			uint32_t len;
			const uint8_t *data;
			bson_iter_binary(&it, &st, &len, &data);
			if (len == 16)
				memcpy(c->uuid, data, 16);
		} else if (strcmp(k, "options") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			uint32_t len;
			const uint8_t *data;
			bson_iter_document(&it, &len, &data);
			c->options = bson_new_from_data(data, len);
		} else if (strcmp(k, "indexes") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
			int n = 0;
			bson_iter_recurse(&it, &arr);
			while (bson_iter_next(&arr))
				n++;
			c->indexes = bson_malloc0((n ? n : 1) * sizeof(*c->indexes));
			bson_iter_recurse(&it, &arr);
			while (bson_iter_next(&arr)) {
				storage_index_t *ix = &c->indexes[c->nindexes];
				if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &sub))
					continue;
				while (bson_iter_next(&sub)) {
					const char *sk = bson_iter_key(&sub);
					if (strcmp(sk, "spec") == 0 && BSON_ITER_HOLDS_DOCUMENT(&sub)) {
						uint32_t len;
						const uint8_t *data;
						bson_iter_document(&sub, &len, &data);
						ix->spec = bson_new_from_data(data, len);
					} else if (strcmp(sk, "ident") == 0 && BSON_ITER_HOLDS_UTF8(&sub)) {
						ix->ident = bson_strdup(bson_iter_utf8(&sub, NULL));
					} else if (strcmp(sk, "multikey") == 0) {
						ix->multikey = bson_iter_as_bool(&sub);
					} else if (strcmp(sk, "typeBits") == 0) {
						ix->typebits = bson_iter_as_bool(&sub);
					} else if (strcmp(sk, "ridKeys") == 0) {
						ix->unique_rid = bson_iter_as_bool(&sub);
					} else if (strcmp(sk, "clusteredValue") == 0 && BSON_ITER_HOLDS_UTF8(&sub)) {
						ix->clustered_u = strcmp(bson_iter_utf8(&sub, NULL), "u") == 0;
					} else if (strcmp(sk, "multikeyPaths") == 0 && BSON_ITER_HOLDS_ARRAY(&sub)) {
						bson_iter_t mp;
						int f = 0;
						ix->mkpaths_known = true;
						bson_iter_recurse(&sub, &mp);
						while (bson_iter_next(&mp) && f < STORAGE_INDEX_MAX_FIELDS)
							ix->mkpaths[f++] = (uint32_t)bson_iter_as_int64(&mp);
					}
				}
				if (ix->spec == NULL || ix->ident == NULL) {
					bson_free(ix->ident);
					if (ix->spec)
						bson_destroy(ix->spec);
					memset(ix, 0, sizeof(*ix));
					ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt index entry in catalog");
					goto err;
				}
				c->nindexes++;
				if (!ix->multikey)
					ix->mkpaths_known = true;
				if (bson_iter_init_find(&sub, ix->spec, "name") && BSON_ITER_HOLDS_UTF8(&sub))
					ix->name = bson_strdup(bson_iter_utf8(&sub, NULL));
				else
					ix->name = bson_strdup("");
				if (bson_iter_init_find(&sub, ix->spec, "key") && BSON_ITER_HOLDS_DOCUMENT(&sub)) {
					uint32_t len;
					const uint8_t *data;
					bson_iter_document(&sub, &len, &data);
					ix->key = bson_new_from_data(data, len);
				} else {
					ix->key = bson_new();
				}
				ix->clustered = bson_iter_init_find(&sub, ix->spec, "clustered") &&
				    bson_iter_as_bool(&sub);
				ix->is_id = strcmp(ix->name, "_id_") == 0 || ix->clustered;
				ix->unique = ix->is_id;
				ix->collation = stored_collation(ix->spec);
				ix->sparse = bson_iter_init_find(&sub, ix->spec, "sparse") && bson_iter_as_bool(&sub);
				ix->partial = bson_iter_init_find(&sub, ix->spec, "partialFilterExpression") &&
				    BSON_ITER_HOLDS_DOCUMENT(&sub);
				if (bson_iter_init_find(&sub, ix->spec, "unique"))
					ix->unique = ix->unique || bson_iter_as_bool(&sub);
				/* the flag only means something on a unique index */
				ix->unique_rid = ix->unique_rid && ix->unique && !ix->is_id;
				ix->prepare_unique = !ix->unique && bson_iter_init_find(&sub, ix->spec, "prepareUnique") &&
				    bson_iter_as_bool(&sub);
				ix->hidden = bson_iter_init_find(&sub, ix->spec, "hidden") && bson_iter_as_bool(&sub);
				ix->nfields = (int)bson_count_keys(ix->key);
				if (bson_iter_init(&sub, ix->key) && bson_iter_next(&sub)) {
					const char *k0 = bson_iter_key(&sub);
					size_t k0len = strlen(k0);
					ix->wildcard = strcmp(k0, "$**") == 0 ||
					    (k0len > 4 && strcmp(k0 + k0len - 4, ".$**") == 0);
					ix->plain_btree = !ix->wildcard;
					do {
						if (!BSON_ITER_HOLDS_NUMBER(&sub) || strcmp(bson_iter_key(&sub), "_fts") == 0)
							ix->plain_btree = false;
					} while (ix->plain_btree && bson_iter_next(&sub));
				}
			}
		}
	}
	if (c->ns == NULL || c->ident == NULL || (dot = strchr(c->ns, '.')) == NULL) {
		ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt catalog entry");
		goto err;
	}
	if (c->options == NULL)
		c->options = bson_new();
	c->collation = stored_collation(c->options);
	capped_from_options(c);
	if (c->indexes == NULL)
		c->indexes = bson_malloc0(sizeof(*c->indexes));
	c->clustered_ttl = -1;
	c->timeseries = bson_iter_init_find(&it, c->options, "timeseries") && BSON_ITER_HOLDS_DOCUMENT(&it);
	if (c->timeseries) {
		bson_iter_t tf;
		if (bson_iter_recurse(&it, &tf) && bson_iter_find(&tf, "timeField") && BSON_ITER_HOLDS_UTF8(&tf))
			for (int i = 0; i < c->nindexes; i++)
				c->indexes[i].ts_time_field = bson_strdup(bson_iter_utf8(&tf, NULL));
	}
	for (int i = 0; i < c->nindexes; i++)
		if (c->indexes[i].clustered)
			c->clustered_ix = &c->indexes[i];
	if (c->clustered_ix != NULL && !c->timeseries &&
	    bson_iter_init_find(&it, c->options, "expireAfterSeconds") && BSON_ITER_HOLDS_NUMBER(&it))
		c->clustered_ttl = bson_iter_as_int64(&it);
	c->db = bson_strndup(c->ns, (size_t)(dot - c->ns));
	c->name = bson_strdup(dot + 1);
	*out = c;
	return 0;
err:
	coll_free(c);
	return ret;
}

/* An index entry's multikey fields: the flag, whether entries carry type
 * bits, and the multiKeyPaths masks (left out when not known). */
static void
entry_index_flags(bson_t *ix, bool multikey, bool typebits, bool clustered_u, bool rid_keys, bool known,
                  const uint32_t *masks, const uint32_t *more)
{
	BSON_APPEND_BOOL(ix, "multikey", multikey);
	if (typebits)
		BSON_APPEND_BOOL(ix, "typeBits", true);
	/* a unique index whose table keeps the key+RecordId layout (converted
	 * by collMod; storage_index_t.unique_rid) */
	if (rid_keys)
		BSON_APPEND_BOOL(ix, "ridKeys", true);
	/* a clustered table of one `u` value (RecordId + document); rows
	 * without it name the older `qu` tables */
	if (clustered_u)
		BSON_APPEND_UTF8(ix, "clusteredValue", "u");
	if (known) {
		bson_t arr;
		char key[16];
		int n = STORAGE_INDEX_MAX_FIELDS;
		while (n > 0 && (masks == NULL || masks[n - 1] == 0) && (more == NULL || more[n - 1] == 0))
			n--;
		BSON_APPEND_ARRAY_BEGIN(ix, "multikeyPaths", &arr);
		for (int f = 0; f < n; f++) {
			bson_snprintf(key, sizeof(key), "%d", f);
			BSON_APPEND_INT64(&arr, key, (int64_t)((masks ? masks[f] : 0) | (more ? more[f] : 0)));
		}
		bson_append_array_end(ix, &arr);
	}
}

/*
 * Write a catalog row.  indexes come from src (NULL: only _id_ with
 * id_ident), minus the one named skip, plus add_spec/add_ident (a new
 * table: type bits); the one named multikey is marked so and gets
 * mk_masks ORed into its multiKeyPaths; the one named replace gets
 * replace_spec.
 */
static void
entry_build(bson_t *out, const char *ns, const uint8_t uuid[16], const char *ident,
            const bson_t *options, const storage_coll_t *src, const char *id_ident,
            const char *skip, const bson_t *add_spec, const char *add_ident,
            const char *multikey, const uint32_t *mk_masks, const char *replace, const bson_t *replace_spec)
{
	bson_t arr, ix, tmp;
	char key[16];
	int n = 0;

	bson_init(out);
	BSON_APPEND_UTF8(out, "ns", ns);
	BSON_APPEND_BINARY(out, "uuid", BSON_SUBTYPE_UUID, uuid, 16);
	BSON_APPEND_UTF8(out, "ident", ident);
	if (options != NULL) {
		BSON_APPEND_DOCUMENT(out, "options", options);
	} else {
		bson_init(&tmp);
		BSON_APPEND_DOCUMENT(out, "options", &tmp);
		bson_destroy(&tmp);
	}
	BSON_APPEND_ARRAY_BEGIN(out, "indexes", &arr);
	if (src == NULL && id_ident != NULL) {
		bson_t spec, k;
		bson_iter_t ci, cn;
		/* a clustered collection's clustered index: its name comes from
		 * options.clusteredIndex (the caller checked it), and its table
		 * holds the documents (no type bits) */
		bool clustered = options != NULL && bson_iter_init_find(&ci, options, "clusteredIndex") &&
		    BSON_ITER_HOLDS_DOCUMENT(&ci);
		/* a time-series collection's buckets are clustered by their _id */
		bool ts = !clustered && options != NULL && bson_iter_init_find(&cn, options, "timeseries") &&
		    BSON_ITER_HOLDS_DOCUMENT(&cn);
		bson_init(&spec);
		BSON_APPEND_INT32(&spec, "v", 2);
		BSON_APPEND_DOCUMENT_BEGIN(&spec, "key", &k);
		BSON_APPEND_INT32(&k, "_id", 1);
		bson_append_document_end(&spec, &k);
		if (clustered && bson_iter_recurse(&ci, &cn) && bson_iter_find(&cn, "name") &&
		    BSON_ITER_HOLDS_UTF8(&cn))
			BSON_APPEND_UTF8(&spec, "name", bson_iter_utf8(&cn, NULL));
		else
			BSON_APPEND_UTF8(&spec, "name", "_id_");
		if (clustered || ts)
			BSON_APPEND_BOOL(&spec, "unique", true);
		{
			/* the _id index orders by the collection's default collation */
			bson_iter_t ci;
			if (options != NULL && bson_iter_init_find(&ci, options, "collation") &&
			    BSON_ITER_HOLDS_DOCUMENT(&ci))
				bson_append_iter(&spec, "collation", -1, &ci);
		}
		bson_snprintf(key, sizeof(key), "%d", n++);
		if (clustered || ts)
			BSON_APPEND_BOOL(&spec, "clustered", true);
		bson_append_document_begin(&arr, key, -1, &ix);
		BSON_APPEND_DOCUMENT(&ix, "spec", &spec);
		BSON_APPEND_UTF8(&ix, "ident", id_ident);
		entry_index_flags(&ix, false, !(clustered || ts), clustered || ts, false, true, NULL, NULL);
		bson_append_document_end(&arr, &ix);
		bson_destroy(&spec);
	} else if (src != NULL) {
		for (int i = 0; i < src->nindexes; i++) {
			const storage_index_t *six = &src->indexes[i];
			bool mark = multikey != NULL && strcmp(six->name, multikey) == 0;
			if (skip != NULL && strcmp(src->indexes[i].name, skip) == 0)
				continue;
			const bson_t *wspec = replace != NULL && strcmp(src->indexes[i].name, replace) == 0 ?
			    replace_spec : src->indexes[i].spec;
			bson_iter_t ui;
			/* the table's layout is fixed at creation: a key+RecordId
			 * table under a unique spec is flagged */
			bool rid_keys = !six->is_id && !storage_index_key_only(six) &&
			    bson_iter_init_find(&ui, wspec, "unique") && bson_iter_as_bool(&ui);
			bson_snprintf(key, sizeof(key), "%d", n++);
			bson_append_document_begin(&arr, key, -1, &ix);
			BSON_APPEND_DOCUMENT(&ix, "spec", wspec);
			BSON_APPEND_UTF8(&ix, "ident", src->indexes[i].ident);
			entry_index_flags(&ix, six->multikey || mark, six->typebits, six->clustered_u, rid_keys,
			    six->mkpaths_known, six->mkpaths, mark ? mk_masks : NULL);
			bson_append_document_end(&arr, &ix);
		}
	}
	if (add_spec != NULL) {
		bson_iter_t it;
		bool mk = multikey != NULL && bson_iter_init_find(&it, add_spec, "name") &&
		    BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), multikey) == 0;
		bson_snprintf(key, sizeof(key), "%d", n++);
		bson_append_document_begin(&arr, key, -1, &ix);
		BSON_APPEND_DOCUMENT(&ix, "spec", add_spec);
		BSON_APPEND_UTF8(&ix, "ident", add_ident);
		entry_index_flags(&ix, mk, true, false, false, true, mk ? mk_masks : NULL, NULL);
		bson_append_document_end(&arr, &ix);
	}
	bson_append_array_end(out, &arr);
}

/* ---- the in-memory array (callers hold cat_lock as needed) -------------- */

/* Index of ns, or -(insertion point)-1. */
static int
cat_find(storage_t *st, const char *ns)
{
	int lo = 0, hi = st->ncolls;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		int c = strcmp(st->colls[mid]->ns, ns);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -lo - 1;
}

/* ---- the per-thread cache of lookups -------------------------------------
 *
 * A lookup by namespace took cat_lock shared and a binary search of the
 * catalog (~200 instructions, two atomic operations on a lock every thread
 * shares).  Each thread keeps its last CC_ENTRIES answers, each holding a
 * reference to its descriptor and the catalog generation it was read at; an
 * entry answers while st->cat_gen has not moved (any change of the catalog
 * moves it, under cat_lock exclusive), so a hit returns exactly the
 * descriptor the catalog holds, as the locked search would have.  The
 * cache's lock is a spin lock its owner alone takes on the lookup path;
 * storage_catalog_free (closing) drops every thread's entries of its storage
 * under cc_list_lock, and a thread's exit drops its own (a pthread key
 * destructor).  When the catalog lets a descriptor go (replaced or removed)
 * every thread's entry of it is released first (cc_drop_coll), so a
 * descriptor is freed when it was before the cache; an entry is installed
 * only if the generation it was read at is still current. */

#define CC_ENTRIES 4

typedef struct coll_cache {
	int lock;                        /* 0 free, 1 held (atomic) */
	struct {
		storage_t *st;
		uint64_t gen;
		storage_coll_t *c;           /* a reference, or NULL */
	} e[CC_ENTRIES];
	unsigned rr;                     /* the entry the next full miss replaces */
	struct coll_cache *prev, *next;  /* cc_list_lock */
} coll_cache_t;

static pthread_mutex_t cc_list_lock = PTHREAD_MUTEX_INITIALIZER;
static coll_cache_t *cc_head;
static pthread_key_t cc_key;
static pthread_once_t cc_once = PTHREAD_ONCE_INIT;
static __thread coll_cache_t *my_cc;

static inline void
cc_lock(coll_cache_t *cc)
{
	while (__atomic_exchange_n(&cc->lock, 1, __ATOMIC_ACQUIRE) != 0)
		while (__atomic_load_n(&cc->lock, __ATOMIC_RELAXED) != 0)
			sched_yield();
}

static inline void
cc_unlock(coll_cache_t *cc)
{
	__atomic_store_n(&cc->lock, 0, __ATOMIC_RELEASE);
}

static void
cc_release(void *arg)
{
	coll_cache_t *cc = arg;

	pthread_mutex_lock(&cc_list_lock);
	if (cc->prev != NULL)
		cc->prev->next = cc->next;
	else
		cc_head = cc->next;
	if (cc->next != NULL)
		cc->next->prev = cc->prev;
	cc_lock(cc);
	for (int i = 0; i < CC_ENTRIES; i++)
		storage_coll_release(cc->e[i].c);
	cc_unlock(cc);
	pthread_mutex_unlock(&cc_list_lock);
	free(cc);
	my_cc = NULL;
}

static void
cc_key_init(void)
{
	(void)pthread_key_create(&cc_key, cc_release);
}

static coll_cache_t *
cc_attach(void)
{
	coll_cache_t *cc;

	pthread_once(&cc_once, cc_key_init);
	if ((cc = calloc(1, sizeof(*cc))) == NULL)
		return NULL;
	pthread_mutex_lock(&cc_list_lock);
	cc->next = cc_head;
	if (cc_head != NULL)
		cc_head->prev = cc;
	cc_head = cc;
	pthread_mutex_unlock(&cc_list_lock);
	if (pthread_setspecific(cc_key, cc) != 0) {
		cc_release(cc);
		return NULL;
	}
	my_cc = cc;
	return cc;
}

/* A new reference to ns's descriptor from this thread's cache, or NULL. */
static storage_coll_t *
cc_get(storage_t *st, const char *ns)
{
	coll_cache_t *cc = my_cc;
	storage_coll_t *c = NULL;
	uint64_t gen;

	if (cc == NULL)
		return NULL;
	gen = __atomic_load_n(&st->cat_gen, __ATOMIC_ACQUIRE);
	cc_lock(cc);
	for (int i = 0; i < CC_ENTRIES; i++)
		if (cc->e[i].st == st && cc->e[i].gen == gen && strcmp(cc->e[i].c->ns, ns) == 0) {
			c = cc->e[i].c;
			storage_coll_ref(c);
			break;
		}
	cc_unlock(cc);
	return c;
}

/* Keep c (the caller's reference, given to the cache), read at catalog
 * generation gen: in the entry of the same namespace, else a stale or
 * empty one, else the next in turn. */
static void
cc_put(storage_t *st, uint64_t gen, storage_coll_t *c)
{
	coll_cache_t *cc = my_cc != NULL ? my_cc : cc_attach();
	int i, pick = -1;

	if (cc == NULL) {
		storage_coll_release(c);
		return;
	}
	cc_lock(cc);
	/* the catalog changed since c was read: c may be out of it already
	 * (and out of reach of cc_drop_coll), so it is not kept */
	if (__atomic_load_n(&st->cat_gen, __ATOMIC_ACQUIRE) != gen) {
		cc_unlock(cc);
		storage_coll_release(c);
		return;
	}
	for (i = 0; i < CC_ENTRIES && pick < 0; i++)
		if (cc->e[i].st == st && strcmp(cc->e[i].c->ns, c->ns) == 0)
			pick = i;
	for (i = 0; i < CC_ENTRIES && pick < 0; i++)
		if (cc->e[i].c == NULL || (cc->e[i].st == st && cc->e[i].gen != gen))
			pick = i;
	if (pick < 0)
		pick = (int)(cc->rr++ % CC_ENTRIES);
	/* released under the lock: a storage closing meanwhile waits for it */
	storage_coll_release(cc->e[pick].c);
	cc->e[pick].st = st;
	cc->e[pick].gen = gen;
	cc->e[pick].c = c;
	cc_unlock(cc);
}

/* Every thread's cached references to c released: the catalog lets c go
 * (under cat_lock exclusive, after moving cat_gen), so that its last
 * reference goes when it did before the cache (a drop frees it). */
static void
cc_drop_coll(storage_coll_t *c)
{
	pthread_mutex_lock(&cc_list_lock);
	for (coll_cache_t *cc = cc_head; cc != NULL; cc = cc->next) {
		cc_lock(cc);
		for (int i = 0; i < CC_ENTRIES; i++)
			if (cc->e[i].c == c) {
				storage_coll_release(c);
				cc->e[i].c = NULL;
				cc->e[i].st = NULL;
			}
		cc_unlock(cc);
	}
	pthread_mutex_unlock(&cc_list_lock);
}

/* Every thread's cached entries of st released (st is closing). */
static void
cc_forget(storage_t *st)
{
	pthread_mutex_lock(&cc_list_lock);
	for (coll_cache_t *cc = cc_head; cc != NULL; cc = cc->next) {
		cc_lock(cc);
		for (int i = 0; i < CC_ENTRIES; i++)
			if (cc->e[i].st == st) {
				storage_coll_release(cc->e[i].c);
				cc->e[i].c = NULL;
				cc->e[i].st = NULL;
			}
		cc_unlock(cc);
	}
	pthread_mutex_unlock(&cc_list_lock);
}

/* Insert (the array takes the caller's reference). */
static void
cat_insert(storage_t *st, storage_coll_t *c)
{
	int pos = cat_find(st, c->ns);

	__atomic_add_fetch(&st->cat_gen, 1, __ATOMIC_RELEASE);
	if (pos >= 0) {
		cc_drop_coll(st->colls[pos]);
		storage_coll_release(st->colls[pos]);
		st->colls[pos] = c;
		return;
	}
	pos = -pos - 1;
	if (st->ncolls == st->colls_cap) {
		st->colls_cap = st->colls_cap ? st->colls_cap * 2 : 16;
		st->colls = bson_realloc(st->colls, st->colls_cap * sizeof(*st->colls));
	}
	memmove(&st->colls[pos + 1], &st->colls[pos], (st->ncolls - pos) * sizeof(*st->colls));
	st->colls[pos] = c;
	st->ncolls++;
}

static void
cat_remove(storage_t *st, const char *ns)
{
	int pos = cat_find(st, ns);

	if (pos < 0)
		return;
	__atomic_add_fetch(&st->cat_gen, 1, __ATOMIC_RELEASE);
	cc_drop_coll(st->colls[pos]);
	storage_coll_release(st->colls[pos]);
	memmove(&st->colls[pos], &st->colls[pos + 1], (st->ncolls - pos - 1) * sizeof(*st->colls));
	st->ncolls--;
}

void
storage_catalog_free(storage_t *st)
{
	cc_forget(st);
	__atomic_add_fetch(&st->cat_gen, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < st->ncolls; i++)
		storage_coll_release(st->colls[i]);
	bson_free(st->colls);
	st->colls = NULL;
	st->ncolls = st->colls_cap = 0;
	if (st->views != NULL)
		bson_destroy(st->views);
	st->views = NULL;
}

/* Look up by ns under the caller's lock; returns a new reference or NULL. */
static storage_coll_t *
cat_get_locked(storage_t *st, const char *ns)
{
	int pos = cat_find(st, ns);

	if (pos < 0)
		return NULL;
	storage_coll_ref(st->colls[pos]);
	return st->colls[pos];
}

/* ---- collections a transaction created (staged until its commit) -------- */

/* The session whose staged collections storage_coll_get sees on this
 * thread (storage_session_bind_thread). */
static __thread storage_session_t *bound_session;

void
storage_session_bind_thread(storage_session_t *s)
{
	bound_session = s;
}

/* The bound session's staged descriptor of ns (a new reference), or NULL. */
static storage_coll_t *
staged_get(storage_t *st, const char *ns)
{
	storage_session_t *s = bound_session;

	if (s == NULL || s->st != st || s->nstaged == 0)
		return NULL;
	for (int i = 0; i < s->nstaged; i++)
		if (strcmp(s->staged[i].c->ns, ns) == 0) {
			storage_coll_ref(s->staged[i].c);
			return s->staged[i].c;
		}
	return NULL;
}

static int
staged_index(const storage_session_t *s, const char *ns)
{
	for (int i = 0; i < s->nstaged; i++)
		if (strcmp(s->staged[i].c->ns, ns) == 0)
			return i;
	return -1;
}

bool
storage_coll_created_in_txn(const storage_session_t *s, const storage_coll_t *c)
{
	if (s == NULL || c == NULL)
		return false;
	for (int i = 0; i < s->nstaged; i++)
		if (storage_coll_rt(s->staged[i].c) == storage_coll_rt(c))
			return true;
	return false;
}

storage_coll_t *
storage_coll_by_ident(storage_t *st, const char *ident)
{
	storage_coll_t *c = NULL;
	storage_session_t *bs = bound_session;

	if (bs != NULL && bs->st == st) {
		for (int i = 0; i < bs->nstaged; i++)
			if (strcmp(bs->staged[i].c->ident, ident) == 0) {
				storage_coll_ref(bs->staged[i].c);
				return bs->staged[i].c;
			}
	}

	pthread_rwlock_rdlock(&st->cat_lock);
	for (int i = 0; i < st->ncolls && c == NULL; i++) {
		if (strcmp(st->colls[i]->ident, ident) == 0) {
			c = st->colls[i];
			storage_coll_ref(c);
		}
	}
	pthread_rwlock_unlock(&st->cat_lock);
	return c;
}

/* ---- namespace rules (mongod's userAllowedCreateNS) ----------------------- */

static bool
db_name_valid(const char *db)
{
	size_t n = strlen(db);

	if (n == 0 || n > STORAGE_MAX_DB_LEN)
		return false;
	return strcspn(db, "/\\. \"$") == n;
}

static bool
system_name_legal(const char *db, const char *coll)
{
	static const char *const anydb[] = {"system.users", "system.js", "system.views", "system.profile"};
	static const char *const admin[] = {"system.roles", "system.version", "system.keys",
	                                    "system.backup_users", "system.new_users"};
	static const char *const config[] = {"system.sessions", "system.indexBuilds", "system.preimages"};
	/* system.rollback.id: the rollback id (repl/rollback.h) */
	static const char *const local[] = {"system.replset", "system.healthlog", "system.rollback.id"};

	for (size_t i = 0; i < sizeof(anydb) / sizeof(anydb[0]); i++)
		if (strcmp(coll, anydb[i]) == 0)
			return true;
	if (strncmp(coll, "system.buckets.", 15) == 0 && coll[15] != '\0')
		return true;
	if (strcmp(db, "admin") == 0) {
		for (size_t i = 0; i < sizeof(admin) / sizeof(admin[0]); i++)
			if (strcmp(coll, admin[i]) == 0)
				return true;
	} else if (strcmp(db, "config") == 0) {
		for (size_t i = 0; i < sizeof(config) / sizeof(config[0]); i++)
			if (strcmp(coll, config[i]) == 0)
				return true;
	} else if (strcmp(db, "local") == 0) {
		for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
			if (strcmp(coll, local[i]) == 0)
				return true;
	}
	return false;
}

int
storage_ns_check(const char *db, const char *coll, terr_t *err)
{
	size_t len;

	if (db == NULL || coll == NULL || !db_name_valid(db) || coll[0] == '\0')
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid namespace: %s.%s",
		    db ? db : "", coll ? coll : "");
	if (coll[0] == '.' || strchr(coll, '$') != NULL)
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid collection name: %s", coll);
	if (strncmp(coll, "system.", 7) == 0 && !system_name_legal(db, coll))
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid system namespace: %s.%s", db, coll);
	len = strlen(db) + 1 + strlen(coll);
	if (len > STORAGE_MAX_NS_LEN)
		return terr_set(err, TERR_INVALID_NAMESPACE,
		    "Fully qualified namespace is too long. Namespace: %s.%s Max: %d", db, coll,
		    STORAGE_MAX_NS_LEN);
	if (strstr(coll, ".system.") != NULL)
		return terr_set(err, TERR_BAD_VALUE, "Invalid namespace: %s.%s", db, coll);
	return 0;
}

/* ---- catalog table writes (ddl session, under ddl_lock) -------------------- */

static int
ddl_put(storage_t *st, const char *key, const bson_t *val, terr_t *err)
{
	WT_CURSOR *cur;
	WT_ITEM item;
	int ret;

	if ((ret = st->ddl_ws->open_cursor(st->ddl_ws, STORAGE_CATALOG_URI, NULL, NULL, &cur)) != 0)
		return storage_wt_err(ret, "open catalog", err);
	item.data = bson_get_data(val);
	item.size = val->len;
	cur->set_key(cur, key);
	cur->set_value(cur, &item);
	ret = cur->insert(cur);
	cur->close(cur);
	if (ret != 0)
		return storage_wt_err(ret, "write catalog", err);
	return 0;
}

static int
ddl_remove(storage_t *st, const char *key, terr_t *err)
{
	WT_CURSOR *cur;
	int ret;

	if ((ret = st->ddl_ws->open_cursor(st->ddl_ws, STORAGE_CATALOG_URI, NULL, NULL, &cur)) != 0)
		return storage_wt_err(ret, "open catalog", err);
	cur->set_key(cur, key);
	ret = cur->remove(cur);
	cur->close(cur);
	if (ret != 0 && ret != WT_NOTFOUND)
		return storage_wt_err(ret, "write catalog", err);
	return 0;
}

static int
ddl_put_meta(storage_t *st, terr_t *err)
{
	bson_t meta = BSON_INITIALIZER;
	int ret;

	BSON_APPEND_INT64(&meta, "nextIdent", st->next_ident);
	ret = ddl_put(st, STORAGE_META_KEY, &meta, err);
	bson_destroy(&meta);
	return ret;
}

/* Catalog transactions run on st->ddl_s (ddl_ws as a storage session), so
 * the op observer can write its entry into them (ddl_observe). */
static int
ddl_begin(storage_t *st, terr_t *err)
{
	return storage_txn_begin(st->ddl_s, err);
}

static int
ddl_commit(storage_t *st, terr_t *err)
{
	return storage_txn_commit(st->ddl_s, true, err);
}

static void
ddl_rollback(storage_t *st)
{
	storage_txn_rollback(st->ddl_s);
}

/* Show a catalog change to the op observer inside the open catalog
 * transaction; on failure the transaction is rolled back. */
static int
ddl_observe(storage_t *st, const storage_op_t *op, terr_t *err)
{
	if (op == NULL || storage_observe(st->ddl_s, op, err) == 0)
		return 0;
	ddl_rollback(st);
	return -1;
}

static char *
new_ident(storage_t *st, const char *kind)
{
	return bson_strdup_printf("table:%s-%" PRId64, kind, st->next_ident++);
}

static void
new_uuid(uint8_t uuid[16])
{
	size_t got = 0;

	while (got < 16) {
		ssize_t n = getrandom(uuid + got, 16 - got, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			/* Never expected; fall back to something unique enough. */
			for (; got < 16; got++)
				uuid[got] = (uint8_t)(rand() ^ (got * 131));
			break;
		}
		got += (size_t)n;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

/* Create one WiredTiger table (ident: "table:<kind>-<n>").  With STORAGE
 * verbosity 2 the table's creation is logged as mongod's: a collection's
 * record table (ns set) by D2 22331 "WiredTigerKVEngine::createRecordStore"
 * {namespace, uri, config}, an index's table (uuid set: its collection's)
 * by D2 22336 "WiredTigerKVEngine::createSortedDataInterface"
 * {collection_uuid, ident, config}. */
static int
table_create(storage_t *st, const char *ident, const char *config, const char *ns, const uint8_t *uuid,
             terr_t *err)
{
	int ret = st->ddl_ws->create(st->ddl_ws, ident, config);

	if (ret == 0 && (ns != NULL || uuid != NULL) && tlog_debug_on("STORAGE", 2)) {
		bson_t attr;

		bson_init(&attr);
		if (ns != NULL) {
			BSON_APPEND_UTF8(&attr, "namespace", ns);
			BSON_APPEND_UTF8(&attr, "uri", ident);
		} else {
			bson_append_binary(&attr, "collection_uuid", -1, BSON_SUBTYPE_UUID, uuid, 16);
			BSON_APPEND_UTF8(&attr, "ident", strncmp(ident, "table:", 6) == 0 ? ident + 6 : ident);
		}
		BSON_APPEND_UTF8(&attr, "config", config);
		tlog_debug(2, "STORAGE", ns != NULL ? 22331 : 22336,
		    ns != NULL ? "WiredTigerKVEngine::createRecordStore" : "WiredTigerKVEngine::createSortedDataInterface",
		    &attr);
		bson_destroy(&attr);
	}
	return ret ? storage_wt_err(ret, "create table", err) : 0;
}

#define RECORD_TABLE_CONFIG "key_format=q,value_format=u,exclusive=true"
/* unique: the RecordId, then the key's type bits (storage_index_t.typebits) */
#define UNIQUE_INDEX_CONFIG "key_format=u,value_format=qu,exclusive=true"
#define INDEX_TABLE_CONFIG "key_format=u,value_format=u,exclusive=true"
/* a clustered collection's clustered table: _id KeyString -> RecordId (8
 * bytes) + document in one `u`, which WT_CURSOR::modify accepts */
#define CLUSTERED_TABLE_CONFIG "key_format=u,value_format=u,exclusive=true"

/* The _id table's configuration for a new collection with these options:
 * clustered (options.clusteredIndex or timeseries, as entry_build decides)
 * or a unique index. */
static const char *
id_table_config(const bson_t *options)
{
	bson_iter_t it;

	if (options != NULL && ((bson_iter_init_find(&it, options, "clusteredIndex") && BSON_ITER_HOLDS_DOCUMENT(&it)) ||
	    (bson_iter_init_find(&it, options, "timeseries") && BSON_ITER_HOLDS_DOCUMENT(&it))))
		return CLUSTERED_TABLE_CONFIG;
	return UNIQUE_INDEX_CONFIG;
}

/* ---- views ---------------------------------------------------------------- */

static int ddl_put_entry(storage_t *st, const char *ns, const bson_t *entry, const storage_op_t *op,
                         terr_t *err);

/* Is ns a view?  Under cat_lock (either mode); *def, when not NULL, points
 * into st->views (valid while the lock is held). */
static bool
view_find_locked(storage_t *st, const char *ns, bson_iter_t *def)
{
	bson_iter_t it;

	if (st->views == NULL || !bson_iter_init_find(&it, st->views, ns))
		return false;
	if (def != NULL)
		*def = it;
	return true;
}

/* A copy of views (may be NULL) with ns set to def, or without ns when def
 * is NULL, or without every view of database drop_db when that is set; keys
 * stay sorted.  Called under ddl_lock (st->views cannot change meanwhile). */
static bson_t *
views_edit(const bson_t *views, const char *ns, const bson_t *def, const char *drop_db)
{
	bson_t *out = bson_new();
	size_t dl = drop_db != NULL ? strlen(drop_db) : 0;
	bson_iter_t it;
	bool placed = def == NULL;

	if (views != NULL && bson_iter_init(&it, views)) {
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (drop_db != NULL && strncmp(k, drop_db, dl) == 0 && k[dl] == '.')
				continue;
			if (ns != NULL && strcmp(k, ns) == 0)
				continue;
			if (!placed && strcmp(k, ns) > 0) {
				BSON_APPEND_DOCUMENT(out, ns, def);
				placed = true;
			}
			bson_append_iter(out, k, -1, &it);
		}
	}
	if (!placed)
		BSON_APPEND_DOCUMENT(out, ns, def);
	return out;
}

/* Swap in a new views document (ownership passes to st). */
static void
views_publish(storage_t *st, bson_t *views)
{
	bson_t *old;

	pthread_rwlock_wrlock(&st->cat_lock);
	old = st->views;
	st->views = views;
	pthread_rwlock_unlock(&st->cat_lock);
	if (old != NULL)
		bson_destroy(old);
}

/* The catalog row of a view: {ns, view: def}. */
static void
view_entry(bson_t *out, const char *ns, const bson_t *def)
{
	bson_init(out);
	BSON_APPEND_UTF8(out, "ns", ns);
	BSON_APPEND_DOCUMENT(out, "view", def);
}

/* Create (must_exist false) or replace (true) a view's definition. */
static int
view_put(storage_t *st, const char *db, const char *name, const bson_t *def, bool must_exist,
         terr_t *err)
{
	char *ns;
	bson_t entry;
	bool is_view, is_coll;
	int ret = 0;

	if (!must_exist)
		RET(storage_ns_check(db, name, err));
	ns = bson_strdup_printf("%s.%s", db, name);
	pthread_mutex_lock(&st->ddl_lock);
	pthread_rwlock_rdlock(&st->cat_lock);
	is_view = view_find_locked(st, ns, NULL);
	is_coll = cat_find(st, ns) >= 0;
	pthread_rwlock_unlock(&st->cat_lock);
	if (must_exist && !is_view)
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	else if (!must_exist && (is_view || is_coll))
		ret = terr_set(err, TERR_NAMESPACE_EXISTS, "Collection %s already exists.", ns);
	if (ret == 0) {
		view_entry(&entry, ns, def);
		ret = ddl_put_entry(st, ns, &entry, NULL, err);
		bson_destroy(&entry);
	}
	if (ret == 0)
		views_publish(st, views_edit(st->views, ns, def, NULL));
	pthread_mutex_unlock(&st->ddl_lock);
	bson_free(ns);
	return ret;
}

int
storage_view_get(storage_t *st, const char *db, const char *name, bson_t *def)
{
	char *ns = bson_strdup_printf("%s.%s", db, name);
	bson_iter_t it;
	bool found;

	pthread_rwlock_rdlock(&st->cat_lock);
	found = view_find_locked(st, ns, &it) && BSON_ITER_HOLDS_DOCUMENT(&it);
	if (found) {
		uint32_t len;
		const uint8_t *data;
		bson_t tmp;
		bson_iter_document(&it, &len, &data);
		found = bson_init_static(&tmp, data, len);
		if (found)
			bson_copy_to(&tmp, def);
	}
	pthread_rwlock_unlock(&st->cat_lock);
	bson_free(ns);
	return found ? 0 : TERR_NAMESPACE_NOT_FOUND;
}

int
storage_view_create(storage_t *st, const char *db, const char *name, const bson_t *def, terr_t *err)
{
	return view_put(st, db, name, def, false, err);
}

int
storage_view_set(storage_t *st, const char *db, const char *name, const bson_t *def, terr_t *err)
{
	return view_put(st, db, name, def, true, err);
}

int
storage_view_drop(storage_t *st, const char *db, const char *name, terr_t *err)
{
	char *ns = bson_strdup_printf("%s.%s", db, name);
	bool is_view;
	int ret = 0;

	pthread_mutex_lock(&st->ddl_lock);
	pthread_rwlock_rdlock(&st->cat_lock);
	is_view = view_find_locked(st, ns, NULL);
	pthread_rwlock_unlock(&st->cat_lock);
	if (!is_view)
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	else if ((ret = ddl_begin(st, err)) == 0) {
		if ((ret = ddl_remove(st, ns, err)) != 0)
			ddl_rollback(st);
		else if ((ret = ddl_commit(st, err)) == 0)
			views_publish(st, views_edit(st->views, ns, NULL, NULL));
	}
	pthread_mutex_unlock(&st->ddl_lock);
	bson_free(ns);
	return ret;
}

void
storage_list_views(storage_t *st, const char *db, bson_t *out)
{
	size_t dl = strlen(db);
	bson_iter_t it;

	pthread_rwlock_rdlock(&st->cat_lock);
	if (st->views != NULL && bson_iter_init(&it, st->views))
		while (bson_iter_next(&it)) {
			const char *ns = bson_iter_key(&it);
			if (strncmp(ns, db, dl) == 0 && ns[dl] == '.')
				bson_append_iter(out, ns + dl + 1, -1, &it);
		}
	pthread_rwlock_unlock(&st->cat_lock);
}

/* ---- public catalog operations ------------------------------------------- */

int
storage_coll_get(storage_t *st, const char *db, const char *name, storage_coll_t **out, terr_t *err)
{
	char buf[STORAGE_MAX_NS_LEN + 2];
	char *ns = buf;
	size_t dl = strlen(db), nl = strlen(name);

	*out = NULL;
	if (dl + 1 + nl + 1 > sizeof(buf))
		ns = bson_malloc(dl + nl + 2);
	memcpy(ns, db, dl);
	ns[dl] = '.';
	memcpy(ns + dl + 1, name, nl + 1);
	storage_coll_get_ns(st, ns, out);
	if (ns != buf)
		bson_free(ns);
	return *out != NULL ? 0 : TERR_NAMESPACE_NOT_FOUND;
}

int
storage_coll_get_ns(storage_t *st, const char *ns, storage_coll_t **out)
{
	uint64_t gen;

	if ((*out = staged_get(st, ns)) != NULL || (*out = cc_get(st, ns)) != NULL)
		return 0;
	pthread_rwlock_rdlock(&st->cat_lock);
	gen = __atomic_load_n(&st->cat_gen, __ATOMIC_RELAXED);   /* stable under the lock */
	*out = cat_get_locked(st, ns);
	if (*out != NULL)
		storage_coll_ref(*out);   /* the cache's reference */
	pthread_rwlock_unlock(&st->cat_lock);
	if (*out == NULL)
		return TERR_NAMESPACE_NOT_FOUND;
	cc_put(st, gen, *out);
	return 0;
}

static _Thread_local bool tl_next_uuid_set;
static _Thread_local uint8_t tl_next_uuid[16];

void
storage_set_next_uuid(const uint8_t *uuid)
{
	tl_next_uuid_set = uuid != NULL;
	if (uuid != NULL)
		memcpy(tl_next_uuid, uuid, 16);
}

int
storage_coll_create(storage_t *st, storage_session_t *s, const char *db, const char *name,
                    const bson_t *options, terr_t *err)
{
	storage_coll_t *c = NULL;
	char *ns = NULL, *ident = NULL, *id_ident = NULL;
	uint8_t uuid[16];
	bson_t entry;
	bson_iter_t oit;
	bool have_entry = false, tables = false, given = tl_next_uuid_set;
	int ret = 0;

	if (given)
		memcpy(uuid, tl_next_uuid, 16);
	tl_next_uuid_set = false;
	RET(storage_ns_check(db, name, err));
	ns = bson_strdup_printf("%s.%s", db, name);
	pthread_mutex_lock(&st->ddl_lock);
	pthread_rwlock_rdlock(&st->cat_lock);
	ret = cat_find(st, ns) >= 0 || view_find_locked(st, ns, NULL);
	pthread_rwlock_unlock(&st->cat_lock);
	if (ret) {
		ret = terr_set(err, TERR_NAMESPACE_EXISTS, "Collection %s already exists.", ns);
		goto err;
	}
	ident = new_ident(st, "collection");
	/* {autoIndexId: false}: no _id index (the oplog) */
	if (!(options != NULL && bson_iter_init_find(&oit, options, "autoIndexId") && !bson_iter_as_bool(&oit)))
		id_ident = new_ident(st, "index");
	if (!given)
		new_uuid(uuid);
	tables = true;
	ERR(table_create(st, ident, RECORD_TABLE_CONFIG, ns, NULL, err));
	if (id_ident != NULL)
		ERR(table_create(st, id_ident, id_table_config(options), NULL, uuid, err));
	entry_build(&entry, ns, uuid, ident, options, NULL, id_ident, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	have_entry = true;
	ERR(coll_from_entry(&entry, NULL, 1, &c, err));
	ERR(ddl_begin(st, err));
	if ((ret = ddl_put(st, ns, &entry, err)) != 0 || (ret = ddl_put_meta(st, err)) != 0) {
		ddl_rollback(st);
		goto err;
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_CREATE, .db = db, .coll = c};
		ERR(ddl_observe(st, &op, err));
	}
	ERR(ddl_commit(st, err));
	tables = false;
	pthread_rwlock_wrlock(&st->cat_lock);
	cat_insert(st, c);
	c = NULL;
	pthread_rwlock_unlock(&st->cat_lock);
err:
	if (tables && ident != NULL) {
		storage_ident_drop(st, st->ddl_ws, ident, NULL);
		if (id_ident != NULL)
			storage_ident_drop(st, st->ddl_ws, id_ident, NULL);
	}
	pthread_mutex_unlock(&st->ddl_lock);
	if (c != NULL)
		storage_coll_release(c);
	if (have_entry)
		bson_destroy(&entry);
	bson_free(ns);
	bson_free(ident);
	bson_free(id_ident);
	return ret;
}

/* Drop the tables of a descriptor no one else ever saw (a staged
 * collection, or a staged version's new index table). */
static void
staged_tables_drop(storage_t *st, WT_SESSION *ws, const storage_coll_t *c, coll_rt_t *rt)
{
	storage_ident_drop(st, ws, c->ident, rt);
	for (int i = 0; i < c->nindexes; i++)
		storage_ident_drop(st, ws, c->indexes[i].ident, rt);
}

int
storage_coll_create_in_txn(storage_t *st, storage_session_t *s, const char *db, const char *name,
                           const bson_t *options, terr_t *err)
{
	storage_coll_t *c = NULL;
	char *ns = NULL, *ident = NULL, *id_ident = NULL;
	uint8_t uuid[16];
	bson_t entry;
	bool have_entry = false, tables = false, exists;
	int ret = 0;

	RET(storage_require_txn(s, err));
	RET(storage_ns_check(db, name, err));
	ns = bson_strdup_printf("%s.%s", db, name);
	pthread_mutex_lock(&st->ddl_lock);
	pthread_rwlock_rdlock(&st->cat_lock);
	exists = staged_index(s, ns) >= 0 || cat_find(st, ns) >= 0 || view_find_locked(st, ns, NULL);
	pthread_rwlock_unlock(&st->cat_lock);
	if (exists) {
		pthread_mutex_unlock(&st->ddl_lock);
		ret = terr_set(err, TERR_NAMESPACE_EXISTS, "Collection %s already exists.", ns);
		goto err;
	}
	ident = new_ident(st, "collection");
	id_ident = new_ident(st, "index");
	new_uuid(uuid);
	tables = true;
	ret = table_create(st, ident, RECORD_TABLE_CONFIG, ns, NULL, err);
	if (ret == 0)
		ret = table_create(st, id_ident, id_table_config(options), NULL, uuid, err);
	pthread_mutex_unlock(&st->ddl_lock);
	if (ret != 0)
		goto err;
	entry_build(&entry, ns, uuid, ident, options, NULL, id_ident, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	have_entry = true;
	ERR(coll_from_entry(&entry, NULL, 1, &c, err));
	{
		/* logged inside the transaction's applyOps, before its writes */
		storage_op_t op = {.kind = STORAGE_OP_CREATE, .db = db, .coll = c};
		if ((ret = storage_observe(s, &op, err)) != 0) {
			storage_txn_fail(s, ret);
			goto err;
		}
	}
	if (s->nstaged == s->staged_cap) {
		s->staged_cap = s->staged_cap ? s->staged_cap * 2 : 4;
		s->staged = bson_realloc(s->staged, (size_t)s->staged_cap * sizeof(*s->staged));
	}
	s->staged[s->nstaged].c = c;
	s->staged[s->nstaged].entry = bson_copy(&entry);
	s->nstaged++;
	c = NULL;
	tables = false;
err:
	if (tables) {
		storage_session_cursors_close(s);
		storage_ident_drop(st, s->ws, ident, NULL);
		storage_ident_drop(st, s->ws, id_ident, NULL);
	}
	storage_coll_release(c);
	if (have_entry)
		bson_destroy(&entry);
	bson_free(ns);
	bson_free(ident);
	bson_free(id_ident);
	return ret;
}

int
storage_index_create_in_txn(storage_t *st, storage_session_t *s, const char *db, const char *name,
                            const bson_t *spec, terr_t *err)
{
	storage_coll_t *c, *nc = NULL;
	char *ns, *ident = NULL;
	const char *ixname;
	bson_iter_t it;
	bson_t entry;
	bool unique = false;
	int64_t dcount = 0, dsize = 0;
	int i, ret = 0;

	RET(storage_require_txn(s, err));
	if (!bson_iter_init_find(&it, spec, "name") || !BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "index spec has no name");
	ixname = bson_iter_utf8(&it, NULL);
	if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "index spec has no key pattern");
	if (bson_iter_init_find(&it, spec, "unique"))
		unique = bson_iter_as_bool(&it);
	ns = bson_strdup_printf("%s.%s", db, name);
	i = staged_index(s, ns);
	if (i < 0) {
		ret = terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot create new indexes on existing collection %s in a multi-document transaction.", ns);
		bson_free(ns);
		return ret;
	}
	c = s->staged[i].c;
	storage_txn_pending(s, storage_coll_rt(c), &dcount, &dsize);
	if (dcount + atomic_load(&storage_coll_rt(c)->count) != 0) {
		ret = terr_set(err, TERR_OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
		    "Cannot create new indexes on non-empty collection %s in a multi-document transaction.", ns);
		bson_free(ns);
		return ret;
	}
	bson_free(ns);
	for (int k = 0; k < c->nindexes; k++)
		if (strcmp(c->indexes[k].name, ixname) == 0)
			return terr_set(err, TERR_INDEX_ALREADY_EXISTS, "index with name %s already exists", ixname);
	pthread_mutex_lock(&st->ddl_lock);
	ident = new_ident(st, "index");
	ret = table_create(st, ident, unique ? UNIQUE_INDEX_CONFIG : INDEX_TABLE_CONFIG, NULL, c->uuid, err);
	pthread_mutex_unlock(&st->ddl_lock);
	if (ret != 0) {
		bson_free(ident);
		return ret;
	}
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, spec, ident, NULL, NULL, NULL,
	    NULL);
	/* a writer of this transaction holding the older descriptor maintains
	 * the new one's indexes (write_begin finds it by ident) */
	atomic_fetch_add(&storage_coll_rt(c)->ixgen, 1);
	ret = coll_from_entry(&entry, storage_coll_rt(c), c->version + 1, &nc, err);
	if (ret == 0) {
		storage_op_t op = {.kind = STORAGE_OP_INDEX_CREATE, .db = c->db, .coll = nc, .doc = spec,
		    .num_records = 0};
		if ((ret = storage_observe(s, &op, err)) != 0)
			storage_txn_fail(s, ret);
	}
	if (ret != 0) {
		storage_coll_release(nc);
		bson_destroy(&entry);
		storage_session_cursors_close(s);
		storage_ident_drop(st, s->ws, ident, NULL);
		bson_free(ident);
		return ret;
	}
	storage_coll_release(c);
	bson_destroy(s->staged[i].entry);
	s->staged[i].c = nc;
	s->staged[i].entry = bson_copy(&entry);
	bson_destroy(&entry);
	bson_free(ident);
	return 0;
}

int
storage_staged_prepare(storage_session_t *s, terr_t *err)
{
	storage_t *st = s->st;
	bool conflict = false;
	WT_CURSOR *cur = NULL;
	int ret = 0;

	pthread_mutex_lock(&st->ddl_lock);
	s->staged_locked = true;
	pthread_rwlock_rdlock(&st->cat_lock);
	for (int i = 0; i < s->nstaged && !conflict; i++)
		conflict = cat_find(st, s->staged[i].c->ns) >= 0 || view_find_locked(st, s->staged[i].c->ns, NULL);
	pthread_rwlock_unlock(&st->cat_lock);
	/* someone created the name since (mongod: the later commit fails) */
	if (conflict) {
		ret = storage_wt_err(WT_ROLLBACK, "create collection", err);
		goto err;
	}
	if ((ret = s->ws->open_cursor(s->ws, STORAGE_CATALOG_URI, NULL, NULL, &cur)) != 0) {
		ret = storage_wt_err(ret, "open catalog", err);
		goto err;
	}
	for (int i = 0; i < s->nstaged; i++) {
		WT_ITEM item;
		item.data = bson_get_data(s->staged[i].entry);
		item.size = s->staged[i].entry->len;
		cur->set_key(cur, s->staged[i].c->ns);
		cur->set_value(cur, &item);
		if ((ret = cur->insert(cur)) != 0) {
			/* a row our snapshot still sees, changed since: the name
			 * was dropped or renamed meanwhile */
			ret = storage_wt_err(ret == WT_DUPLICATE_KEY ? WT_ROLLBACK : ret, "write catalog", err);
			goto err;
		}
	}
	cur->close(cur);
	return 0;
err:
	if (cur != NULL)
		cur->close(cur);
	s->staged_locked = false;
	pthread_mutex_unlock(&st->ddl_lock);
	return ret;
}

void
storage_staged_finish(storage_session_t *s, bool committed)
{
	storage_t *st = s->st;
	int n = s->nstaged;

	if (n == 0) {
		if (s->staged_locked) {
			s->staged_locked = false;
			pthread_mutex_unlock(&st->ddl_lock);
		}
		return;
	}
	s->nstaged = 0;
	if (committed) {
		pthread_rwlock_wrlock(&st->cat_lock);
		for (int i = 0; i < n; i++)
			cat_insert(st, s->staged[i].c);   /* the array takes the reference */
		pthread_rwlock_unlock(&st->cat_lock);
	}
	if (s->staged_locked) {
		s->staged_locked = false;
		pthread_mutex_unlock(&st->ddl_lock);
	}
	if (!committed)
		storage_session_cursors_close(s);   /* its cached cursors would keep the tables busy */
	for (int i = 0; i < n; i++) {
		if (!committed) {
			coll_rt_t *rt = storage_coll_rt(s->staged[i].c);
			atomic_store(&rt->dropped, true);
			staged_tables_drop(st, s->ws, s->staged[i].c, rt);
			storage_coll_release(s->staged[i].c);
		}
		bson_destroy(s->staged[i].entry);
	}
}

/* Store one catalog entry in its own catalog transaction (rolled back on
 * failure).  Under ddl_lock. */
static int
ddl_put_entry(storage_t *st, const char *ns, const bson_t *entry, const storage_op_t *op, terr_t *err)
{
	RET(ddl_begin(st, err));
	if (ddl_put(st, ns, entry, err) != 0) {
		ddl_rollback(st);
		return -1;
	}
	RET(ddl_observe(st, op, err));
	return ddl_commit(st, err);
}

/* Replace the descriptor of old with one built from entry (same table). */
static int
republish(storage_t *st, storage_coll_t *old, const bson_t *entry, const char *old_ns, terr_t *err)
{
	storage_coll_t *c;

	RET(coll_from_entry(entry, storage_coll_rt(old), old->version + 1, &c, err));
	pthread_rwlock_wrlock(&st->cat_lock);
	if (old_ns != NULL && strcmp(old_ns, c->ns) != 0)
		cat_remove(st, old_ns);
	cat_insert(st, c);
	pthread_rwlock_unlock(&st->cat_lock);
	return 0;
}

/* Under ddl_lock: a reference to the current descriptor, or 26 with err. */
static int
ddl_get(storage_t *st, const char *db, const char *name, storage_coll_t **out, terr_t *err)
{
	if (storage_coll_get(st, db, name, out, err) != 0)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	return 0;
}

int
storage_coll_set_options(storage_t *st, storage_session_t *s, const char *db, const char *name,
                         const bson_t *options, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_t entry;
	bool have_entry = false;
	int ret = 0;

	pthread_mutex_lock(&st->ddl_lock);
	ERR(ddl_get(st, db, name, &c, err));
	entry_build(&entry, c->ns, c->uuid, c->ident, options, c, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	have_entry = true;
	{
		storage_op_t op = {.kind = STORAGE_OP_SET_OPTIONS, .db = c->db, .coll = c, .doc = options,
		    .old_doc = c->options};
		ERR(ddl_put_entry(st, c->ns, &entry, &op, err));
	}
	/* the new descriptor carries the new generation: writers holding an
	 * older one validate again (storage_set_write_check) */
	atomic_fetch_add(&storage_coll_rt(c)->optgen, 1);
	ERR(republish(st, c, &entry, NULL, err));
err:
	pthread_mutex_unlock(&st->ddl_lock);
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(c);
	return ret;
}

/* Take the index lock, then db.name's table gate exclusive (waits for its
 * write transactions to end); *rt_out is referenced.  Index builds take the
 * index lock first too: two gate takers could deadlock on writers that touch
 * both tables.  26 when the collection does not exist. */
static int
gate_lock(storage_t *st, const char *db, const char *name, coll_rt_t **rt_out, terr_t *err)
{
	storage_coll_t *c = NULL;
	coll_rt_t *rt;

	*rt_out = NULL;
	pthread_mutex_lock(&st->index_lock);
	if (storage_coll_get(st, db, name, &c, NULL) != 0) {
		pthread_mutex_unlock(&st->index_lock);
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	}
	rt = storage_coll_rt(c);
	coll_rt_ref(rt);
	storage_coll_release(c);
	pthread_rwlock_wrlock(&rt->gate);
	*rt_out = rt;
	return 0;
}

static void
gate_unlock(storage_t *st, coll_rt_t *rt)
{
	pthread_rwlock_unlock(&rt->gate);
	pthread_mutex_unlock(&st->index_lock);
	coll_rt_release(rt);
}

int
storage_coll_set_options_checked(storage_t *st, storage_session_t *s, const char *db, const char *name,
                                 const bson_t *options, int (*check)(void *arg, terr_t *err), void *arg,
                                 terr_t *err)
{
	coll_rt_t *rt;
	int ret;

	RET(gate_lock(st, db, name, &rt, err));
	ret = check(arg, err);
	if (ret == 0)
		ret = storage_coll_set_options(st, s, db, name, options, err);
	gate_unlock(st, rt);
	return ret;
}

/* After c's row is removed: drop its tables, each once no transaction
 * that may have written it is open (storage_ident_drop; new ones refuse
 * to write from now on). */
static void
drop_tables_of(storage_t *st, const storage_coll_t *c)
{
	coll_rt_t *rt = storage_coll_rt(c);

	atomic_store(&rt->dropped, true);
	storage_ident_drop(st, st->ddl_ws, c->ident, rt);
	for (int i = 0; i < c->nindexes; i++)
		storage_ident_drop(st, st->ddl_ws, c->indexes[i].ident, rt);
}

/* A drop below would find the tables busy while the caller's own session
 * keeps cursors open on them (storage_session_cursor): close those first. */
static void
caller_cursors_close(storage_session_t *s)
{
	if (s != NULL)
		storage_session_cursors_close(s);
}

int
storage_coll_drop(storage_t *st, storage_session_t *s, const char *db, const char *name, terr_t *err)
{
	storage_coll_t *c = NULL;
	int ret = 0;

	caller_cursors_close(s);

	pthread_mutex_lock(&st->ddl_lock);
	ERR(ddl_get(st, db, name, &c, err));
	ERR(ddl_begin(st, err));
	if ((ret = ddl_remove(st, c->ns, err)) != 0) {
		ddl_rollback(st);
		goto err;
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_DROP, .db = c->db, .coll = c,
		    .num_records = atomic_load(&storage_coll_rt(c)->count)};
		ERR(ddl_observe(st, &op, err));
	}
	ERR(ddl_commit(st, err));
	pthread_rwlock_wrlock(&st->cat_lock);
	cat_remove(st, c->ns);
	pthread_rwlock_unlock(&st->cat_lock);
	storage_coll_wake(c);      /* tailers waiting for inserts find out now */
	drop_tables_of(st, c);
err:
	pthread_mutex_unlock(&st->ddl_lock);
	storage_coll_release(c);
	return ret;
}

int
storage_coll_rename(storage_t *st, storage_session_t *s, const char *db, const char *from,
                    const char *to_db, const char *to, bool drop_target, terr_t *err)
{
	storage_coll_t *c = NULL, *target = NULL;
	char *from_ns = NULL, *to_ns = NULL;
	bson_t entry;
	bool have_entry = false, target_view;
	int ret = 0;

	caller_cursors_close(s);

	RET(storage_ns_check(to_db, to, err));
	pthread_mutex_lock(&st->ddl_lock);
	if (storage_coll_get(st, db, from, &c, err) != 0) {
		ret = terr_set(err, TERR_NAMESPACE_NOT_FOUND, "Source collection %s.%s does not exist", db, from);
		goto err;
	}
	from_ns = bson_strdup(c->ns);
	to_ns = bson_strdup_printf("%s.%s", to_db, to);
	if (strcmp(from_ns, to_ns) == 0) {
		ret = terr_set(err, TERR_ILLEGAL_OPERATION, "Can't rename a collection to itself");
		goto err;
	}
	pthread_rwlock_rdlock(&st->cat_lock);
	target_view = view_find_locked(st, to_ns, NULL);
	pthread_rwlock_unlock(&st->cat_lock);
	if ((storage_coll_get(st, to_db, to, &target, err) == 0 || target_view) && !drop_target) {
		ret = terr_set(err, TERR_NAMESPACE_EXISTS, "target namespace exists");
		goto err;
	}
	entry_build(&entry, to_ns, c->uuid, c->ident, c->options, c, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	have_entry = true;
	ERR(ddl_begin(st, err));
	if ((ret = ddl_remove(st, from_ns, err)) != 0 || (ret = ddl_put(st, to_ns, &entry, err)) != 0) {
		ddl_rollback(st);
		goto err;
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_RENAME, .db = db, .coll = c, .to_db = to_db, .to_name = to,
		    .drop_target_uuid = target != NULL ? target->uuid : NULL};
		ERR(ddl_observe(st, &op, err));
	}
	ERR(ddl_commit(st, err));
	if (target_view)
		views_publish(st, views_edit(st->views, to_ns, NULL, NULL));
	if (target != NULL) {
		pthread_rwlock_wrlock(&st->cat_lock);
		cat_remove(st, to_ns);
		pthread_rwlock_unlock(&st->cat_lock);
	}
	ERR(republish(st, c, &entry, from_ns, err));
	if (target != NULL)
		drop_tables_of(st, target);
err:
	pthread_mutex_unlock(&st->ddl_lock);
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(c);
	storage_coll_release(target);
	bson_free(from_ns);
	bson_free(to_ns);
	return ret;
}

int
storage_db_drop(storage_t *st, storage_session_t *s, const char *db, terr_t *err)
{
	storage_coll_t **colls = NULL;
	int n = 0, ret = 0;

	caller_cursors_close(s);

	bson_t views = BSON_INITIALIZER;
	bson_t *kept = NULL;
	bson_iter_t vi;

	pthread_mutex_lock(&st->ddl_lock);
	ERR(storage_list_colls(st, db, &colls, &n, err));
	storage_list_views(st, db, &views);
	if (n == 0 && bson_empty(&views))
		goto err;
	ERR(ddl_begin(st, err));
	for (int i = 0; i < n; i++) {
		storage_op_t op = {.kind = STORAGE_OP_DROP, .db = db, .coll = colls[i],
		    .num_records = atomic_load(&storage_coll_rt(colls[i])->count)};

		if ((ret = ddl_remove(st, colls[i]->ns, err)) != 0) {
			ddl_rollback(st);
			goto err;
		}
		ERR(ddl_observe(st, &op, err));
	}
	bson_iter_init(&vi, &views);
	while (bson_iter_next(&vi)) {
		char *ns = bson_strdup_printf("%s.%s", db, bson_iter_key(&vi));
		ret = ddl_remove(st, ns, err);
		bson_free(ns);
		if (ret != 0) {
			ddl_rollback(st);
			goto err;
		}
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_DROP_DB, .db = db};
		ERR(ddl_observe(st, &op, err));
	}
	kept = views_edit(st->views, NULL, NULL, db);
	ERR(ddl_commit(st, err));
	views_publish(st, kept);
	kept = NULL;
	pthread_rwlock_wrlock(&st->cat_lock);
	for (int i = 0; i < n; i++)
		cat_remove(st, colls[i]->ns);
	pthread_rwlock_unlock(&st->cat_lock);
	for (int i = 0; i < n; i++) {
		storage_coll_wake(colls[i]);   /* tailers waiting for inserts */
		drop_tables_of(st, colls[i]);
	}
err:
	pthread_mutex_unlock(&st->ddl_lock);
	for (int i = 0; i < n; i++)
		storage_coll_release(colls[i]);
	bson_free(colls);
	bson_destroy(&views);
	if (kept != NULL)
		bson_destroy(kept);
	return ret;
}

/* ---- indexes in the catalog ------------------------------------------------ */

/* Take the index lock, the table's gate exclusive (waits for its write
 * transactions to end), then the DDL lock; re-reads the descriptor, which
 * may have changed meanwhile.  On success the caller holds all three and a
 * reference in *out. */
static int
ddl_lock_gated(storage_t *st, const char *db, const char *name, storage_coll_t **out,
               coll_rt_t **rt_out, terr_t *err)
{
	storage_coll_t *now = NULL;
	coll_rt_t *rt;

	*out = NULL;
	*rt_out = NULL;
	RET(gate_lock(st, db, name, &rt, err));
	pthread_mutex_lock(&st->ddl_lock);
	if (storage_coll_get(st, db, name, &now, NULL) != 0 || storage_coll_rt(now) != rt) {
		pthread_mutex_unlock(&st->ddl_lock);
		gate_unlock(st, rt);
		storage_coll_release(now);
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns not found");
	}
	*out = now;
	*rt_out = rt;
	return 0;
}

static void
ddl_unlock_gated(storage_t *st, coll_rt_t *rt)
{
	pthread_mutex_unlock(&st->ddl_lock);
	gate_unlock(st, rt);
}

/*
 * Building over existing documents holds the index lock and the table's gate
 * (no writer of this collection meanwhile) but not the DDL lock: creating,
 * dropping or renaming other collections goes on during a long build.  The
 * DDL lock is taken to make the table and again to publish; the descriptor
 * is read again then, and the build is abandoned (276 IndexBuildAborted)
 * when the collection went away meanwhile.
 */
int
storage_index_create(storage_t *st, storage_session_t *s, const char *db, const char *name,
                     const bson_t *spec, terr_t *err)
{
	storage_coll_t *c = NULL, *draft = NULL, *now = NULL;
	storage_session_t *bs = NULL;
	coll_rt_t *rt = NULL;
	const char *ixname;
	char *ident = NULL;
	bson_iter_t it;
	bson_t entry;
	bool have_entry = false, table = false, unique = false, multikey = false, ddl = false;
	uint32_t masks[STORAGE_INDEX_MAX_FIELDS] = {0};
	int ret = 0;

	(void)s;
	if (!bson_iter_init_find(&it, spec, "name") || !BSON_ITER_HOLDS_UTF8(&it))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "index spec has no name");
	ixname = bson_iter_utf8(&it, NULL);
	if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return terr_set(err, TERR_CANNOT_CREATE_INDEX, "index spec has no key pattern");
	if (bson_iter_init_find(&it, spec, "unique"))
		unique = bson_iter_as_bool(&it);
	RET(ddl_lock_gated(st, db, name, &c, &rt, err));
	ddl = true;
	for (int i = 0; i < c->nindexes; i++) {
		if (strcmp(c->indexes[i].name, ixname) == 0) {
			ret = terr_set(err, TERR_INDEX_ALREADY_EXISTS, "index with name %s already exists", ixname);
			goto err;
		}
	}
	if (st->keygen == NULL && atomic_load(&rt->count) != 0) {
		ret = terr_set(err, TERR_NOT_IMPLEMENTED,
		    "building an index over existing documents is not implemented yet");
		goto err;
	}
	ident = new_ident(st, "index");
	table = true;
	ERR(table_create(st, ident, unique ? UNIQUE_INDEX_CONFIG : INDEX_TABLE_CONFIG, NULL, c->uuid, err));
	/* Fill the table from the documents there are; no writer can add or
	 * change one while we hold the gate. */
	if (atomic_load(&rt->count) != 0) {
		pthread_mutex_unlock(&st->ddl_lock);
		ddl = false;
		entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, spec, ident, NULL, NULL,
		    NULL, NULL);
		ret = coll_from_entry(&entry, rt, c->version, &draft, err);
		bson_destroy(&entry);
		if (ret == 0 && (ret = storage_session_open(st, &bs, err)) == 0)
			ret = storage_index_build(bs, draft, &draft->indexes[draft->nindexes - 1], &multikey, masks,
			    err);
		if (bs != NULL) {
			storage_session_close(bs);
			bs = NULL;
		}
		pthread_mutex_lock(&st->ddl_lock);
		ddl = true;
		if (ret != 0)
			goto err;
		/* what the collection is now (collMod, renames went on) */
		if (storage_coll_get(st, db, name, &now, NULL) != 0 || storage_coll_rt(now) != rt) {
			storage_coll_release(now);
			now = NULL;
			ret = terr_set(err, TERR_INDEX_BUILD_ABORTED,
			    "Index build aborted: collection %s.%s was dropped during the build", db, name);
			goto err;
		}
		storage_coll_release(c);
		c = now;
	}
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, spec, ident,
	    multikey ? ixname : NULL, multikey ? masks : NULL, NULL, NULL);
	have_entry = true;
	ERR(ddl_begin(st, err));
	if ((ret = ddl_put(st, c->ns, &entry, err)) != 0 || (ret = ddl_put_meta(st, err)) != 0) {
		ddl_rollback(st);
		goto err;
	}
	{
		storage_op_t op = {.kind = STORAGE_OP_INDEX_CREATE, .db = c->db, .coll = c, .doc = spec,
		    .num_records = atomic_load(&rt->count)};
		ERR(ddl_observe(st, &op, err));
	}
	ERR(ddl_commit(st, err));
	table = false;
	atomic_fetch_add(&rt->ixgen, 1);
	ERR(republish(st, c, &entry, NULL, err));
err:
	if (table)
		storage_ident_drop(st, st->ddl_ws, ident, NULL);
	if (rt != NULL) {
		if (ddl)
			pthread_mutex_unlock(&st->ddl_lock);
		gate_unlock(st, rt);
	}
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(draft);
	storage_coll_release(c);
	bson_free(ident);
	return ret;
}

int
storage_index_drop(storage_t *st, storage_session_t *s, const char *db, const char *name,
                   const char *index_name, terr_t *err)
{
	storage_coll_t *c = NULL;
	coll_rt_t *rt = NULL;
	const char *ident = NULL;
	const bson_t *dropped_spec = NULL;
	bson_t entry;
	bool have_entry = false;
	int ret = 0;

	caller_cursors_close(s);

	RET(ddl_lock_gated(st, db, name, &c, &rt, err));
	for (int i = 0; i < c->nindexes; i++)
		if (strcmp(c->indexes[i].name, index_name) == 0) {
			ident = c->indexes[i].ident;
			dropped_spec = c->indexes[i].spec;
		}
	if (ident == NULL) {
		ret = terr_set(err, TERR_INDEX_NOT_FOUND, "index not found with name [%s]", index_name);
		goto err;
	}
	if (strcmp(index_name, "_id_") == 0) {
		ret = terr_set(err, TERR_INVALID_OPTIONS, "cannot drop _id index");
		goto err;
	}
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, index_name, NULL, NULL, NULL, NULL, NULL,
	    NULL);
	have_entry = true;
	{
		storage_op_t op = {.kind = STORAGE_OP_INDEX_DROP, .db = c->db, .coll = c, .doc = dropped_spec};
		ERR(ddl_put_entry(st, c->ns, &entry, &op, err));
	}
	atomic_fetch_add(&rt->ixgen, 1);
	ERR(republish(st, c, &entry, NULL, err));
	storage_ident_drop(st, st->ddl_ws, ident, NULL);
err:
	if (rt != NULL)
		ddl_unlock_gated(st, rt);
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(c);
	return ret;
}

/* Same BSON value under field in a and b (both absent counts as same). */
static bool
spec_field_same(const bson_t *a, const bson_t *b, const char *field)
{
	bson_iter_t ia, ib;
	bool ha = bson_iter_init_find(&ia, a, field), hb = bson_iter_init_find(&ib, b, field);

	if (ha != hb)
		return false;
	return !ha || (bson_iter_type(&ia) == bson_iter_type(&ib) &&
	    bv_compare(bson_iter_value(&ia), bson_iter_value(&ib)) == 0);
}

int
storage_index_set_spec(storage_t *st, storage_session_t *s, const char *db, const char *name,
                       const char *index_name, const bson_t *spec, terr_t *err)
{
	storage_coll_t *c = NULL;
	const storage_index_t *ix = NULL;
	bson_t entry;
	bool have_entry = false;
	int ret = 0;

	(void)s;
	pthread_mutex_lock(&st->ddl_lock);
	ERR(ddl_get(st, db, name, &c, err));
	for (int i = 0; i < c->nindexes; i++)
		if (strcmp(c->indexes[i].name, index_name) == 0)
			ix = &c->indexes[i];
	if (ix == NULL) {
		ret = terr_set(err, TERR_INDEX_NOT_FOUND, "index not found with name [%s]", index_name);
		goto err;
	}
	/* what the stored keys depend on cannot change in place; unique can
	 * on a key+RecordId table (collMod's conversions: the layout stays) */
	if (!spec_field_same(ix->spec, spec, "key") || !spec_field_same(ix->spec, spec, "name") ||
	    (storage_index_key_only(ix) && !spec_field_same(ix->spec, spec, "unique"))) {
		ret = terr_set(err, TERR_BAD_VALUE, "storage_index_set_spec: the key, name and unique "
		    "fields of index %s cannot change in place", index_name);
		goto err;
	}
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, NULL, NULL, NULL, NULL,
	    index_name, spec);
	have_entry = true;
	{
		storage_op_t op = {.kind = STORAGE_OP_INDEX_SET_SPEC, .db = c->db, .coll = c, .doc = spec,
		    .old_doc = ix->spec};
		ERR(ddl_put_entry(st, c->ns, &entry, &op, err));
	}
	ERR(republish(st, c, &entry, NULL, err));
err:
	pthread_mutex_unlock(&st->ddl_lock);
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(c);
	return ret;
}

/* entry (a catalog row) with the table of index ixname replaced by ident. */
static void
entry_replace_ident(const bson_t *entry, const char *ixname, const char *ident, bson_t *out)
{
	bson_iter_t it, arr, one, sp;

	bson_init(out);
	bson_iter_init(&it, entry);
	while (bson_iter_next(&it)) {
		bson_t oa;
		if (strcmp(bson_iter_key(&it), "indexes") != 0 || !BSON_ITER_HOLDS_ARRAY(&it)) {
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
			continue;
		}
		bson_append_array_begin(out, "indexes", -1, &oa);
		bson_iter_recurse(&it, &arr);
		while (bson_iter_next(&arr)) {
			bson_t od;
			bool mine = false;
			if (BSON_ITER_HOLDS_DOCUMENT(&arr) && bson_iter_recurse(&arr, &one) && bson_iter_find(&one, "spec") &&
			    BSON_ITER_HOLDS_DOCUMENT(&one) && bson_iter_recurse(&one, &sp) && bson_iter_find(&sp, "name") &&
			    BSON_ITER_HOLDS_UTF8(&sp))
				mine = strcmp(bson_iter_utf8(&sp, NULL), ixname) == 0;
			if (!mine) {
				bson_append_iter(&oa, bson_iter_key(&arr), -1, &arr);
				continue;
			}
			bson_append_document_begin(&oa, bson_iter_key(&arr), -1, &od);
			bson_iter_recurse(&arr, &one);
			while (bson_iter_next(&one)) {
				if (strcmp(bson_iter_key(&one), "ident") == 0)
					BSON_APPEND_UTF8(&od, "ident", ident);
				else
					bson_append_iter(&od, bson_iter_key(&one), -1, &one);
			}
			bson_append_document_end(&oa, &od);
		}
		bson_append_array_end(out, &oa);
	}
}

/* Copy a key-only unique table's entries (key -> packed RecordId, type
 * bits) into a key+RecordId table (key RecordId -> type bits), in
 * transactions of 1000 entries on bs. */
static int
relayout_copy(storage_session_t *bs, const char *from, const char *to, bool typebits, terr_t *err)
{
	WT_CURSOR *src = NULL, *dst = NULL;
	keystring_t ks;
	uint8_t *buf = NULL;
	size_t cap = 0;
	int64_t n = 0;
	int ret = 0, wret;

	keystring_init(&ks);
	ERR(storage_txn_begin(bs, err));
	ERR(storage_session_cursor_raw(bs, from, &src, err));
	ERR(storage_session_cursor_raw(bs, to, &dst, err));
	while ((wret = src->next(src)) == 0) {
		WT_ITEM k, v, nk, nv;
		int64_t rid;
		size_t used;
		if ((wret = src->get_key(src, &k)) != 0 || (wret = src->get_value(src, &v)) != 0)
			break;
		used = storage_vint_unpack(v.data, v.size, &rid);
		if (used == 0) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt unique index entry in %s", from);
			goto err;
		}
		keystring_reset(&ks);
		keystring_append_recid(&ks, rid);
		if (cap < k.size + ks.len) {
			cap = (k.size + ks.len) * 2;
			buf = bson_realloc(buf, cap);
		}
		memcpy(buf, k.data, k.size);
		memcpy(buf + k.size, ks.buf, ks.len);
		nk.data = buf;
		nk.size = k.size + ks.len;
		nv.data = (const uint8_t *)v.data + used;
		nv.size = typebits ? v.size - used : 0;
		dst->set_key(dst, &nk);
		dst->set_value(dst, &nv);
		if ((wret = dst->insert(dst)) != 0)
			break;
		if (++n % 1000 == 0) {
			ERR(tm_interrupt_check(err));
			/* cursors do not survive the commit: reposition after it */
			size_t at_len = k.size;
			uint8_t *at = bson_malloc(at_len ? at_len : 1);
			memcpy(at, k.data, at_len);
			storage_session_cursor_done(src);
			storage_session_cursor_done(dst);
			src = dst = NULL;
			ret = storage_txn_commit(bs, false, err);
			if (ret == 0)
				ret = storage_txn_begin(bs, err);
			if (ret == 0)
				ret = storage_session_cursor_raw(bs, from, &src, err);
			if (ret == 0)
				ret = storage_session_cursor_raw(bs, to, &dst, err);
			if (ret == 0) {
				WT_ITEM ak = {.data = at, .size = at_len};
				src->set_key(src, &ak);
				wret = src->search(src);
			}
			bson_free(at);
			if (ret != 0)
				goto err;
			if (wret != 0)
				break;
		}
	}
	if (wret != WT_NOTFOUND) {
		ret = storage_wt_err(wret, "relayout index", err);
		goto err;
	}
	storage_session_cursor_done(src);
	storage_session_cursor_done(dst);
	src = dst = NULL;
	ret = storage_txn_commit(bs, true, err);
	keystring_destroy(&ks);
	bson_free(buf);
	return ret;
err:
	storage_session_cursor_done(src);
	storage_session_cursor_done(dst);
	storage_txn_rollback(bs);
	keystring_destroy(&ks);
	bson_free(buf);
	return ret != 0 ? ret : -1;
}

int
storage_index_set_spec_relayout(storage_t *st, storage_session_t *s, const char *db, const char *name,
                                const char *index_name, const bson_t *spec, terr_t *err)
{
	storage_coll_t *c = NULL;
	coll_rt_t *rt = NULL;
	const storage_index_t *ix = NULL;
	storage_session_t *bs = NULL;
	char *ident = NULL;
	bson_t entry, moved;
	bool have_entry = false, table = false;
	int ret = 0;

	caller_cursors_close(s);
	RET(ddl_lock_gated(st, db, name, &c, &rt, err));
	for (int i = 0; i < c->nindexes; i++)
		if (strcmp(c->indexes[i].name, index_name) == 0)
			ix = &c->indexes[i];
	if (ix == NULL) {
		ret = terr_set(err, TERR_INDEX_NOT_FOUND, "index not found with name [%s]", index_name);
		goto err;
	}
	if (!storage_index_key_only(ix) || ix->is_id || ix->clustered || !spec_field_same(ix->spec, spec, "key") ||
	    !spec_field_same(ix->spec, spec, "name")) {
		ret = terr_set(err, TERR_BAD_VALUE, "storage_index_set_spec_relayout: index %s is not a unique "
		    "index of the key-only layout, or its key or name would change", index_name);
		goto err;
	}
	ident = new_ident(st, "index");
	table = true;
	ERR(table_create(st, ident, INDEX_TABLE_CONFIG, NULL, c->uuid, err));
	ERR(storage_session_open(st, &bs, err));
	ret = relayout_copy(bs, ix->ident, ident, ix->typebits, err);
	storage_session_close(bs);
	if (ret != 0)
		goto err;
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, NULL, NULL, NULL, NULL,
	    index_name, spec);
	entry_replace_ident(&entry, index_name, ident, &moved);
	bson_destroy(&entry);
	have_entry = true;
	{
		storage_op_t op = {.kind = STORAGE_OP_INDEX_SET_SPEC, .db = c->db, .coll = c, .doc = spec,
		    .old_doc = ix->spec};
		ERR(ddl_put_entry(st, c->ns, &moved, &op, err));
	}
	table = false;
	atomic_fetch_add(&rt->ixgen, 1);
	{
		char *old_ident = bson_strdup(ix->ident);
		ret = republish(st, c, &moved, NULL, err);
		storage_ident_drop(st, st->ddl_ws, old_ident, rt);
		bson_free(old_ident);
		if (ret != 0)
			goto err;
	}
err:
	if (table)
		storage_ident_drop(st, st->ddl_ws, ident, NULL);
	if (rt != NULL)
		ddl_unlock_gated(st, rt);
	if (have_entry)
		bson_destroy(&moved);
	storage_coll_release(c);
	bson_free(ident);
	return ret;
}

int
storage_index_mark_multikey(storage_t *st, const char *db, const char *name, const char *ident,
                            const char *ix_name, const uint32_t *masks, terr_t *err)
{
	storage_coll_t *c = NULL;
	bson_t entry;
	bool have_entry = false, found = false;
	int ret = 0;

	pthread_mutex_lock(&st->ddl_lock);
	if (storage_coll_get(st, db, name, &c, NULL) != 0 || strcmp(c->ident, ident) != 0)
		goto err;              /* dropped meanwhile: nothing to mark */
	for (int i = 0; i < c->nindexes; i++) {
		const storage_index_t *ix = &c->indexes[i];
		if (strcmp(ix->name, ix_name) == 0) {
			bool news = !ix->multikey;
			found = true;
			for (int f = 0; f < STORAGE_INDEX_MAX_FIELDS && masks != NULL && ix->mkpaths_known; f++)
				if (masks[f] & ~ix->mkpaths[f])
					news = true;
			if (!news)
				goto err;
		}
	}
	if (!found)
		goto err;
	entry_build(&entry, c->ns, c->uuid, c->ident, c->options, c, NULL, NULL, NULL, NULL, ix_name, masks, NULL,
	    NULL);
	have_entry = true;
	if (bound_session != NULL && bound_session->st == st && staged_index(bound_session, c->ns) >= 0) {
		/* created by this thread's transaction: its staged row and
		 * descriptor change, written and published with its commit */
		storage_session_t *bs = bound_session;
		int i = staged_index(bs, c->ns);
		storage_coll_t *nc;
		ERR(coll_from_entry(&entry, storage_coll_rt(c), c->version + 1, &nc, err));
		storage_coll_release(bs->staged[i].c);
		bson_destroy(bs->staged[i].entry);
		bs->staged[i].c = nc;
		bs->staged[i].entry = bson_copy(&entry);
		goto err;
	}
	ERR(ddl_put_entry(st, c->ns, &entry, NULL, err));
	ERR(republish(st, c, &entry, NULL, err));
err:
	pthread_mutex_unlock(&st->ddl_lock);
	if (have_entry)
		bson_destroy(&entry);
	storage_coll_release(c);
	return ret;
}

void
storage_set_write_check(storage_t *st, storage_write_check_fn fn)
{
	st->write_check = fn;
}

void
storage_set_keygen(storage_t *st, storage_keygen_fn fn)
{
	st->keygen = fn;
}

/* ---- listing ------------------------------------------------------------- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Add db[0..len) to names[0..cnt) unless there; returns the new count. */
static int
add_db_name(char **names, int cnt, const char *db, size_t len)
{
	for (int j = 0; j < cnt; j++)
		if (strlen(names[j]) == len && strncmp(names[j], db, len) == 0)
			return cnt;
	names[cnt] = bson_strndup(db, len);
	return cnt + 1;
}

int
storage_list_dbs(storage_t *st, char ***names, int *n, terr_t *err)
{
	char **out = NULL;
	int cnt = 0, cap;
	bson_iter_t vi;

	pthread_rwlock_rdlock(&st->cat_lock);
	cap = st->ncolls + 1 + (st->views != NULL ? (int)bson_count_keys(st->views) : 0);
	out = bson_malloc0(cap * sizeof(*out));
	for (int i = 0; i < st->ncolls; i++)
		cnt = add_db_name(out, cnt, st->colls[i]->db, strlen(st->colls[i]->db));
	if (st->views != NULL && bson_iter_init(&vi, st->views))
		while (bson_iter_next(&vi)) {
			const char *ns = bson_iter_key(&vi), *dot = strchr(ns, '.');
			cnt = add_db_name(out, cnt, ns, dot != NULL ? (size_t)(dot - ns) : strlen(ns));
		}
	pthread_rwlock_unlock(&st->cat_lock);
	qsort(out, cnt, sizeof(*out), cmp_str);
	*names = out;
	*n = cnt;
	return 0;
}

int
storage_list_colls(storage_t *st, const char *db, storage_coll_t ***colls, int *n, terr_t *err)
{
	storage_coll_t **out;
	int cnt = 0;

	pthread_rwlock_rdlock(&st->cat_lock);
	out = bson_malloc0((st->ncolls + 1) * sizeof(*out));
	for (int i = 0; i < st->ncolls; i++) {
		if (strcmp(st->colls[i]->db, db) == 0) {
			storage_coll_ref(st->colls[i]);
			out[cnt++] = st->colls[i];
		}
	}
	pthread_rwlock_unlock(&st->cat_lock);
	*colls = out;
	*n = cnt;
	return 0;
}

void
storage_free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		bson_free(names[i]);
	bson_free(names);
}

/* ---- load at open ------------------------------------------------------- */

void
storage_catalog_save_sizes(storage_t *st)
{
	bson_t row = BSON_INITIALIZER, sizes, one;
	terr_t err = TERR_INIT;

	BSON_APPEND_DOCUMENT_BEGIN(&row, "sizes", &sizes);
	for (int i = 0; i < st->ncolls; i++) {
		coll_rt_t *rt = storage_coll_rt(st->colls[i]);
		bson_append_document_begin(&sizes, st->colls[i]->ident, -1, &one);
		BSON_APPEND_INT64(&one, "count", atomic_load(&rt->count));
		BSON_APPEND_INT64(&one, "dataSize", atomic_load(&rt->data_size));
		bson_append_document_end(&sizes, &one);
	}
	bson_append_document_end(&row, &sizes);
	pthread_mutex_lock(&st->ddl_lock);
	if (ddl_begin(st, &err) == 0) {
		if (ddl_put(st, STORAGE_SIZES_KEY, &row, &err) == 0)
			ddl_commit(st, &err);
		else
			ddl_rollback(st);
	}
	pthread_mutex_unlock(&st->ddl_lock);
	terr_clear(&err);
	bson_destroy(&row);
}

/* Counters of one record table: largest RecordId, and unless saved (a
 * document {count, dataSize} from the last clean close) count and bytes. */
static int
rt_init(storage_t *st, storage_coll_t *c, const bson_t *saved, terr_t *err)
{
	coll_rt_t *rt = storage_coll_rt(c);
	WT_SESSION *ws = st->ddl_ws;
	WT_CURSOR *cur;
	WT_ITEM v;
	int64_t count = 0, size = 0, key;
	int ret;

	if ((ret = ws->open_cursor(ws, c->ident, NULL, NULL, &cur)) != 0)
		return storage_wt_err(ret, "open record table", err);
	if ((ret = cur->prev(cur)) == 0) {
		cur->get_key(cur, &key);
		atomic_store(&rt->next_recid, key);
	}
	cur->reset(cur);
	if (saved != NULL) {
		bson_iter_t it;
		bson_iter_t cnt, sz;
		if (bson_iter_init_find(&it, saved, c->ident) && BSON_ITER_HOLDS_DOCUMENT(&it) &&
		    bson_iter_recurse(&it, &cnt) && bson_iter_find(&cnt, "count") &&
		    bson_iter_recurse(&it, &sz) && bson_iter_find(&sz, "dataSize")) {
			cur->close(cur);
			atomic_store(&rt->count, bson_iter_as_int64(&cnt));
			atomic_store(&rt->data_size, bson_iter_as_int64(&sz));
			return 0;
		}
	}
	ret = 0;
	if (c->clustered_ix != NULL) {
		/* the record table maps RecordIds to keys: the documents are
		 * in the clustered table (value: RecordId, document) */
		cur->close(cur);
		if ((ret = ws->open_cursor(ws, c->clustered_ix->ident, NULL, NULL, &cur)) != 0)
			return storage_wt_err(ret, "open clustered table", err);
	}
	while (ret == 0 && (ret = cur->next(cur)) == 0) {
		int64_t rid;
		if ((ret = c->clustered_ix != NULL ? storage_clustered_value(cur, c->clustered_ix, &rid, &v)
		    : cur->get_value(cur, &v)) != 0)
			break;
		count++;
		size += (int64_t)v.size;
	}
	cur->close(cur);
	if (ret != 0 && ret != WT_NOTFOUND)
		return storage_wt_err(ret, "count records", err);
	atomic_store(&rt->count, count);
	atomic_store(&rt->data_size, size);
	return 0;
}

static int64_t
ident_number(const char *uri)
{
	const char *dash = strrchr(uri, '-');

	return dash != NULL ? strtoll(dash + 1, NULL, 10) : -1;
}

static bool
ident_referenced(storage_t *st, const char *uri)
{
	for (int i = 0; i < st->ncolls; i++) {
		storage_coll_t *c = st->colls[i];
		if (strcmp(c->ident, uri) == 0)
			return true;
		for (int j = 0; j < c->nindexes; j++)
			if (strcmp(c->indexes[j].ident, uri) == 0)
				return true;
	}
	return false;
}

int
storage_catalog_load(storage_t *st, terr_t *err)
{
	WT_SESSION *ws = st->ddl_ws;
	WT_CURSOR *cur = NULL;
	char **orphans = NULL;
	int norphans = 0, ret = 0, wret;
	int64_t next = 1;
	bson_t *saved = NULL;
	bool have_sizes_row = false;

	if ((wret = ws->open_cursor(ws, STORAGE_CATALOG_URI, NULL, NULL, &cur)) != 0)
		return storage_wt_err(wret, "open catalog", err);
	while ((wret = cur->next(cur)) == 0) {
		const char *key;
		WT_ITEM v;
		bson_t entry;
		storage_coll_t *c;

		cur->get_key(cur, &key);
		cur->get_value(cur, &v);
		if (!bson_init_static(&entry, v.data, v.size)) {
			ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt catalog entry %s", key);
			goto err;
		}
		if (strcmp(key, STORAGE_SIZES_KEY) == 0) {
			bson_iter_t it;
			uint32_t len;
			const uint8_t *data;
			if (saved == NULL && bson_iter_init_find(&it, &entry, "sizes") &&
			    BSON_ITER_HOLDS_DOCUMENT(&it)) {
				bson_iter_document(&it, &len, &data);
				saved = bson_new_from_data(data, len);
			}
			have_sizes_row = true;
			continue;
		}
		if (strcmp(key, STORAGE_META_KEY) == 0) {
			bson_iter_t it;
			if (bson_iter_init_find(&it, &entry, "nextIdent") && BSON_ITER_HOLDS_NUMBER(&it))
				next = bson_iter_as_int64(&it);
			continue;
		}
		{
			bson_iter_t vi;
			if (bson_iter_init_find(&vi, &entry, "view") && BSON_ITER_HOLDS_DOCUMENT(&vi)) {
				uint32_t len;
				const uint8_t *data;
				bson_t def, *next;
				bson_iter_document(&vi, &len, &data);
				if (!bson_init_static(&def, data, len)) {
					ret = terr_set(err, TERR_INTERNAL_ERROR, "corrupt catalog entry %s", key);
					goto err;
				}
				next = views_edit(st->views, key, &def, NULL);
				if (st->views != NULL)
					bson_destroy(st->views);
				st->views = next;
				continue;
			}
		}
		ERR(coll_from_entry(&entry, NULL, 1, &c, err));
		cat_insert(st, c);
	}
	if (wret != WT_NOTFOUND) {
		ret = storage_wt_err(wret, "read catalog", err);
		goto err;
	}
	cur->close(cur);
	cur = NULL;

	/* Tables nobody names: a crash between create and catalog commit, or
	 * a drop that was still pending. */
	if ((wret = ws->open_cursor(ws, "metadata:", NULL, NULL, &cur)) != 0) {
		ret = storage_wt_err(wret, "open metadata", err);
		goto err;
	}
	while ((wret = cur->next(cur)) == 0) {
		const char *key;
		int64_t num;

		cur->get_key(cur, &key);
		if (strncmp(key, "table:collection-", 17) != 0 && strncmp(key, "table:index-", 12) != 0)
			continue;
		num = ident_number(key);
		if (num >= next)
			next = num + 1;
		if (!ident_referenced(st, key)) {
			orphans = bson_realloc(orphans, (norphans + 1) * sizeof(*orphans));
			orphans[norphans++] = bson_strdup(key);
		}
	}
	cur->close(cur);
	cur = NULL;
	st->next_ident = next;
	for (int i = 0; i < norphans; i++) {
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_UTF8(&attr, "ident", orphans[i]);
		tlog('I', "STORAGE", 22251, "Dropping unknown ident", &attr);
		bson_destroy(&attr);
		storage_ident_drop(st, ws, orphans[i], NULL);
	}
	for (int i = 0; i < st->ncolls; i++)
		ERR(rt_init(st, st->colls[i], saved, err));
	/* The saved sizes are good for this open only. */
	if (have_sizes_row) {
		ERR(ddl_begin(st, err));
		if ((ret = ddl_remove(st, STORAGE_SIZES_KEY, err)) != 0) {
			ddl_rollback(st);
			goto err;
		}
		ERR(ddl_commit(st, err));
	}
err:
	if (saved != NULL)
		bson_destroy(saved);
	if (cur != NULL)
		cur->close(cur);
	for (int i = 0; i < norphans; i++)
		bson_free(orphans[i]);
	bson_free(orphans);
	return ret;
}
