/*
 * auth_users.c -- where users and roles live (admin.system.users and
 * admin.system.roles, documents keyed by _id "<db>.<name>" as mongod keeps
 * them) and the per-client authentication state: who is logged in, the
 * SASL conversation in flight, the privileges resolved for the user.
 *
 * Not here: the SCRAM arithmetic (auth_scram.c), the user/role commands
 * (cmd_auth.c), which command needs what (auth_check.c).
 */
#include "auth/auth_private.h"
#include "auth/auth_member.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "common/mem.h"

/* ---- generation --------------------------------------------------------------- */

static atomic_ullong generation = 1;

void
auth_generation_bump(void)
{
	atomic_fetch_add(&generation, 1);
}

void
auth_invalidate_cache(void)
{
	auth_generation_bump();
}

uint64_t
auth_generation(void)
{
	return atomic_load(&generation);
}

/* ---- stored documents ------------------------------------------------------------- */

typedef struct store_op {
	storage_t *st;
	const char *coll;
	char *id;
	const bson_t *doc;         /* insert / replace */
	bson_t *out;               /* get: initialised on found */
	bool found;
	int kind;                  /* 0 get, 1 insert, 2 replace, 3 delete */
} store_op_t;

static int
store_fn(storage_session_t *s, void *arg, terr_t *err)
{
	store_op_t *op = arg;
	storage_coll_t *c = NULL;
	bson_value_t id;
	bson_t cur;
	recid_t rid;
	int r, ret = 0;

	op->found = false;
	if (storage_coll_get(op->st, "admin", op->coll, &c, err) != 0) {
		if (op->kind != 1)
			return 0;
		/* first insert: create the collection (outside this transaction,
		 * like any implicit creation) */
		r = storage_coll_create(op->st, s, "admin", op->coll, NULL, err);
		if (r != 0 && err->code != TERR_NAMESPACE_EXISTS)
			return -1;
		terr_clear(err);
		if (storage_coll_get(op->st, "admin", op->coll, &c, err) != 0)
			return terr_set(err, TERR_INTERNAL_ERROR, "admin.%s vanished", op->coll);
	}
	id.value_type = BSON_TYPE_UTF8;
	id.value.v_utf8.str = op->id;
	id.value.v_utf8.len = (uint32_t)strlen(op->id);
	r = storage_doc_find_id(s, c, &id, &rid, &cur, err);
	if (r < 0)
		ERR(-1);
	op->found = r == 0;
	switch (op->kind) {
	case 0:
		if (op->found)
			bson_copy_to(&cur, op->out);
		break;
	case 1:
		if (!op->found)
			ERR(storage_doc_insert(s, c, op->doc, NULL, err));
		break;
	case 2:
		if (op->found) {
			bson_t old;
			bson_copy_to(&cur, &old);
			ret = storage_doc_update(s, c, rid, &old, op->doc, err);
			bson_destroy(&old);
		}
		break;
	case 3:
		if (op->found) {
			bson_t old;
			bson_copy_to(&cur, &old);
			ret = storage_doc_delete(s, c, rid, &old, err);
			bson_destroy(&old);
		}
		break;
	}
err:
	storage_coll_release(c);
	return ret;
}

static int
store_run(storage_t *st, storage_session_t *s, store_op_t *op, terr_t *err)
{
	int r;

	op->st = st;
	r = storage_txn_run(s, store_fn, op, op->kind != 0, err);
	bson_free(op->id);
	op->id = NULL;
	if (r != 0) {
		if (op->kind == 0 && op->found)
			bson_destroy(op->out);
		return -1;
	}
	if (op->kind != 0)
		auth_generation_bump();
	if (op->kind == 1)
		return op->found ? 1 : 0;
	return op->found ? 0 : 1;
}

int
auth_store_get(storage_t *st, storage_session_t *s, const char *coll, const char *db, const char *name,
               bson_t *out, terr_t *err)
{
	store_op_t op = {0};

	op.coll = coll;
	op.id = bson_strdup_printf("%s.%s", db, name);
	op.out = out;
	op.kind = 0;
	return store_run(st, s, &op, err);
}

static char *
doc_id(const bson_t *doc)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it))
		return bson_strdup(bson_iter_utf8(&it, NULL));
	return bson_strdup("");
}

int
auth_store_insert(storage_t *st, storage_session_t *s, const char *coll, const bson_t *doc, terr_t *err)
{
	store_op_t op = {0};

	op.coll = coll;
	op.id = doc_id(doc);
	op.doc = doc;
	op.kind = 1;
	return store_run(st, s, &op, err);
}

int
auth_store_replace(storage_t *st, storage_session_t *s, const char *coll, const bson_t *doc, terr_t *err)
{
	store_op_t op = {0};

	op.coll = coll;
	op.id = doc_id(doc);
	op.doc = doc;
	op.kind = 2;
	return store_run(st, s, &op, err);
}

int
auth_store_delete(storage_t *st, storage_session_t *s, const char *coll, const char *db, const char *name,
                  terr_t *err)
{
	store_op_t op = {0};

	op.coll = coll;
	op.id = bson_strdup_printf("%s.%s", db, name);
	op.kind = 3;
	return store_run(st, s, &op, err);
}

typedef struct list_op {
	storage_t *st;
	const char *coll, *db;
	bson_t *docs;
	int n, cap;
} list_op_t;

static void
list_clear(list_op_t *op)
{
	int i;

	for (i = 0; i < op->n; i++)
		bson_destroy(&op->docs[i]);
	op->n = 0;
}

static int
list_fn(storage_session_t *s, void *arg, terr_t *err)
{
	list_op_t *op = arg;
	storage_coll_t *c = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	recid_t rid;
	int r, ret = 0;

	list_clear(op);
	if (storage_coll_get(op->st, "admin", op->coll, &c, err) != 0)
		return 0;
	ERR(storage_scan_open(s, c, false, &cur, err));
	while ((r = storage_cursor_next(cur, &rid, &doc, NULL, NULL, err)) == 1) {
		bson_iter_t it;
		if (op->db != NULL && (!bson_iter_init_find(&it, &doc, "db") || !BSON_ITER_HOLDS_UTF8(&it) ||
		    strcmp(bson_iter_utf8(&it, NULL), op->db) != 0))
			continue;
		if (op->n == op->cap) {
			bson_t *nd;
			op->cap = op->cap ? op->cap * 2 : 16;
			nd = tm_bson_array_new((size_t)op->cap);
			if (op->n)
				memcpy(nd, op->docs, sizeof(bson_t) * (size_t)op->n);
			bson_free(op->docs);
			op->docs = nd;
		}
		bson_copy_to(&doc, &op->docs[op->n++]);
	}
	if (r < 0)
		ret = -1;
err:
	storage_cursor_close(cur);
	storage_coll_release(c);
	return ret;
}

static int
cmp_id(const void *a, const void *b)
{
	char *x = doc_id(a), *y = doc_id(b);
	int r = strcmp(x, y);

	bson_free(x);
	bson_free(y);
	return r;
}

int
auth_store_list(storage_t *st, storage_session_t *s, const char *coll, const char *db, bson_t **docs, int *n,
                terr_t *err)
{
	list_op_t op = {0};

	op.st = st;
	op.coll = coll;
	op.db = db;
	*docs = NULL;
	*n = 0;
	if (storage_txn_run(s, list_fn, &op, false, err) != 0) {
		list_clear(&op);
		bson_free(op.docs);
		return -1;
	}
	if (op.n > 1)
		qsort(op.docs, (size_t)op.n, sizeof(bson_t), cmp_id);
	*docs = op.docs;
	*n = op.n;
	return 0;
}

bool
auth_store_any(storage_t *st, storage_session_t *s)
{
	static const char *const colls[] = {"system.users", "system.roles"};
	terr_t err = TERR_INIT;
	int i;

	for (i = 0; i < 2; i++) {
		storage_coll_t *c = NULL;
		int64_t count = 0, data = 0, size = 0;
		if (storage_coll_get(st, "admin", colls[i], &c, &err) != 0)
			continue;
		if (storage_coll_stats(st, s, c, &count, &data, &size, &err) != 0)
			count = 1; /* cannot tell: assume there are users */
		storage_coll_release(c);
		terr_clear(&err);
		if (count > 0)
			return true;
	}
	return false;
}

/* ---- per-client state ------------------------------------------------------------ */

#define NBUCKETS 256
static auth_client_t *buckets[NBUCKETS];
/* Readers (every command's lookup) share the lock; creating or forgetting
 * a client's state takes it alone. */
static pthread_rwlock_t clients_lock = PTHREAD_RWLOCK_INITIALIZER;

static unsigned
bucket_of(const void *key)
{
	uintptr_t p = (uintptr_t)key;

	return (unsigned)((p >> 4) ^ (p >> 12)) % NBUCKETS;
}

auth_client_t *
auth_client_get(const auth_conn_t *conn)
{
	unsigned b = bucket_of(conn->key);
	auth_client_t *ac;

	pthread_rwlock_rdlock(&clients_lock);
	for (ac = buckets[b]; ac != NULL; ac = ac->next)
		if (ac->key == conn->key)
			break;
	pthread_rwlock_unlock(&clients_lock);
	if (ac != NULL)
		return ac;
	/* only the connection's own thread adds its state, so nobody raced us to it */
	ac = bson_malloc0(sizeof(*ac));
	ac->key = conn->key;
	auth_privset_init(&ac->privs);
	auth_rolelist_init(&ac->roles);
	pthread_rwlock_wrlock(&clients_lock);
	ac->next = buckets[b];
	buckets[b] = ac;
	pthread_rwlock_unlock(&clients_lock);
	*conn->has_state = true;
	return ac;
}

auth_client_t *
auth_client_peek(const auth_conn_t *conn)
{
	unsigned b = bucket_of(conn->key);
	auth_client_t *ac;

	if (!*conn->has_state)
		return NULL;   /* never authenticated: no lock, no lookup */
	pthread_rwlock_rdlock(&clients_lock);
	for (ac = buckets[b]; ac != NULL; ac = ac->next)
		if (ac->key == conn->key)
			break;
	pthread_rwlock_unlock(&clients_lock);
	return ac;
}

void
auth_client_logout(auth_client_t *ac)
{
	bson_free(ac->user);
	bson_free(ac->db);
	ac->user = ac->db = NULL;
	auth_privset_destroy(&ac->privs);
	auth_rolelist_destroy(&ac->roles);
	ac->resolved = false;
	ac->gen = 0;
}

void
auth_client_forget(const void *key, bool *has_state)
{
	unsigned b;
	auth_client_t **pp, *ac = NULL;

	if (key == NULL || !*has_state)
		return;
	*has_state = false;
	b = bucket_of(key);
	pthread_rwlock_wrlock(&clients_lock);
	for (pp = &buckets[b]; *pp != NULL; pp = &(*pp)->next) {
		if ((*pp)->key == key) {
			ac = *pp;
			*pp = ac->next;
			break;
		}
	}
	pthread_rwlock_unlock(&clients_lock);
	if (ac == NULL)
		return;
	auth_client_logout(ac);
	auth_scram_free(ac->conv);
	bson_free(ac->conv_db);
	bson_free(ac);
}

bool
auth_client_user(const auth_conn_t *conn, char *user, size_t ulen, char *db, size_t dlen)
{
	auth_client_t *ac = auth_client_peek(conn);

	if (ac == NULL || ac->user == NULL)
		return false;
	bson_strncpy(user, ac->user, ulen);
	bson_strncpy(db, ac->db, dlen);
	return true;
}

int
auth_client_resolve(const auth_conn_t *conn, auth_client_t *ac, terr_t *err)
{
	storage_session_t *s;
	bson_t doc;
	bson_iter_t it;
	uint64_t gen = auth_generation();
	int r;

	if (ac->user == NULL || (ac->resolved && ac->gen == gen))
		return 0;
	if (auth_member_is_internal_user(ac->user, ac->db)) {
		/* mongod's __system role: every action on every resource */
		auth_actions_t all;
		memset(&all, 0, sizeof(all));
		for (int i = 0; i < auth_action_count(); i++)
			auth_actions_add(&all, i);
		auth_privset_destroy(&ac->privs);
		auth_rolelist_destroy(&ac->roles);
		auth_rolelist_add(&ac->roles, "__system", "admin");
		auth_privset_add(&ac->privs, AUTH_RES_ANY, NULL, NULL, &all);
		ac->resolved = true;
		ac->gen = gen;
		return 0;
	}
	s = conn->session(conn->session_arg, err);
	if (s == NULL)
		return -1;
	auth_privset_destroy(&ac->privs);
	auth_rolelist_destroy(&ac->roles);
	r = auth_store_get(conn->st, s, "system.users", ac->db, ac->user, &doc, err);
	if (r < 0)
		return -1;
	if (r == 1) {
		/* the user was dropped: it holds nothing any more */
		ac->resolved = true;
		ac->gen = gen;
		return 0;
	}
	if (bson_iter_init_find(&it, &doc, "roles") && BSON_ITER_HOLDS_ARRAY(&it)) {
		terr_t ignore = TERR_INIT;
		auth_rolelist_parse(&it, ac->db, &ac->roles, "roles", &ignore);
		terr_clear(&ignore);
	}
	bson_destroy(&doc);
	if (auth_roles_resolve(conn->st, s, &ac->roles, NULL, &ac->privs, err) != 0)
		return -1;
	ac->resolved = true;
	ac->gen = gen;
	return 0;
}
