/*
 * auth_privs.c -- privileges: MongoDB's action names, resources and how
 * they match, the built-in roles' privilege sets, role inheritance, and
 * privilege documents as createRole/rolesInfo read and write them.
 *
 * Not here: which command needs which privilege (auth_check.c) or where
 * users and roles are stored (auth_users.c).
 */
#include "auth/auth_private.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* MongoDB's action types (action_type.idl) that Tamga's commands and the
 * built-in roles use.  At most 64 * AUTH_ACTION_WORDS. */
static const char *const action_names[] = {
	"anyAction", "analyze", "applicationMessage", "authSchemaUpgrade", "bypassDocumentValidation",
	"changeCustomData", "changeOwnCustomData", "changeOwnPassword", "changePassword", "changeStream",
	"collMod", "collStats", "compact", "connPoolStats", "connPoolSync", "convertToCapped", "cpuProfiler",
	"createCollection", "createIndex", "createRole", "createSearchIndexes", "createUser", "dbHash",
	"dbStats", "dropCollection", "dropConnections", "dropDatabase", "dropIndex", "dropRole",
	"dropSearchIndex", "dropUser", "enableProfiler", "find", "flushRouterConfig", "fsync",
	"getCmdLineOpts", "getDefaultRWConcern", "getLog", "getParameter", "grantRole", "hostInfo",
	"indexStats", "inprog", "insert", "invalidateUserCache", "killAnyCursor", "killAnySession",
	"killCursors", "killop", "listCollections", "listDatabases", "listIndexes", "listSearchIndexes",
	"listSessions", "logRotate", "netstat", "planCacheIndexFilter", "planCacheRead", "planCacheWrite",
	"reIndex", "remove", "renameCollection", "renameCollectionSameDB", "replSetGetConfig",
	"replSetGetStatus", "revokeRole", "serverStatus", "setAuthenticationRestriction",
	"setDefaultRWConcern", "setParameter", "shutdown", "storageDetails", "top", "update",
	"updateSearchIndex", "useUUID", "validate", "viewRole", "viewUser", "bypassWriteBlockingMode",
	"dropAllRolesFromDatabase", "checkMetadataConsistency", "getClusterParameter", "setClusterParameter",
	"rotateCertificates", "cleanupStructuredEncryptionData", "compactStructuredEncryptionData",
	"listCachedAndActiveUsers", "setFeatureCompatibilityVersion", "analyzeShardKey", "appendOplogNote",
	"applyOps", "forceUUID",
	/* replica set (cmd_repl.c) */
	"replSetConfigure", "replSetStateChange", "internal",
	/* the oplog (cmd_repl_oplog.c) */
	"replSetResizeOplog",
};
#define NACTIONS ((int)(sizeof(action_names) / sizeof(action_names[0])))

_Static_assert(sizeof(action_names) / sizeof(action_names[0]) <= 64 * AUTH_ACTION_WORDS,
    "action bitset too small");

int
auth_action_index(const char *name)
{
	int i;

	for (i = 0; i < NACTIONS; i++)
		if (strcmp(action_names[i], name) == 0)
			return i;
	return -1;
}

const char *
auth_action_name(int idx)
{
	return idx >= 0 && idx < NACTIONS ? action_names[idx] : "";
}

int
auth_action_count(void)
{
	return NACTIONS;
}

void
auth_actions_add(auth_actions_t *a, int idx)
{
	if (idx >= 0)
		a->w[idx / 64] |= (uint64_t)1 << (idx % 64);
}

bool
auth_actions_has(const auth_actions_t *a, int idx)
{
	if (idx < 0)
		return false;
	if (a->w[0] & 1) /* anyAction */
		return true;
	return (a->w[idx / 64] >> (idx % 64)) & 1;
}

int
auth_actions_add_list(auth_actions_t *a, const char *names)
{
	char buf[64];
	const char *p = names, *e;
	int idx, ret = 0;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		e = p;
		while (*e && *e != ' ')
			e++;
		snprintf(buf, sizeof(buf), "%.*s", (int)(e - p), p);
		idx = auth_action_index(buf);
		if (idx < 0)
			ret = -1;
		auth_actions_add(a, idx);
		p = e;
	}
	return ret;
}

/* ---- privilege sets --------------------------------------------------------- */

void
auth_privset_init(auth_privset_t *ps)
{
	memset(ps, 0, sizeof(*ps));
}

void
auth_privset_destroy(auth_privset_t *ps)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		bson_free(ps->v[i].db);
		bson_free(ps->v[i].coll);
	}
	bson_free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

static bool
str_eq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

void
auth_privset_add(auth_privset_t *ps, auth_res_kind_t kind, const char *db, const char *coll,
                 const auth_actions_t *actions)
{
	auth_priv_t *p;
	int i, w;

	if (kind != AUTH_RES_DB && kind != AUTH_RES_NS)
		db = NULL;
	if (kind != AUTH_RES_COLL_ANY_DB && kind != AUTH_RES_NS)
		coll = NULL;
	for (i = 0; i < ps->n; i++) {
		p = &ps->v[i];
		if (p->kind == kind && str_eq(p->db, db) && str_eq(p->coll, coll)) {
			for (w = 0; w < AUTH_ACTION_WORDS; w++)
				p->actions.w[w] |= actions->w[w];
			return;
		}
	}
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 8;
		ps->v = bson_realloc(ps->v, sizeof(*ps->v) * (size_t)ps->cap);
	}
	p = &ps->v[ps->n++];
	p->kind = kind;
	p->db = db ? bson_strdup(db) : NULL;
	p->coll = coll ? bson_strdup(coll) : NULL;
	p->actions = *actions;
}

/* System collections are not covered by database-wide or anyNormal privileges. */
static bool
coll_is_normal(const char *coll)
{
	return strncmp(coll, "system.", 7) != 0;
}

bool
auth_privset_allows_db(const auth_privset_t *ps, const char *db, int action)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		bool match = p->kind == AUTH_RES_ANY || p->kind == AUTH_RES_ANY_NORMAL ||
		    (p->kind == AUTH_RES_DB && strcmp(p->db, db) == 0);
		if (match && auth_actions_has(&p->actions, action))
			return true;
	}
	return false;
}

bool
auth_privset_allows_ns(const auth_privset_t *ps, const char *db, const char *coll, int action)
{
	bool normal = coll_is_normal(coll);
	int i;

	for (i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		bool match = false;

		switch (p->kind) {
		case AUTH_RES_ANY:
			match = true;
			break;
		case AUTH_RES_ANY_NORMAL:
			match = normal;
			break;
		case AUTH_RES_DB:
			match = normal && strcmp(p->db, db) == 0;
			break;
		case AUTH_RES_COLL_ANY_DB:
			match = strcmp(p->coll, coll) == 0;
			break;
		case AUTH_RES_NS:
			match = strcmp(p->db, db) == 0 && strcmp(p->coll, coll) == 0;
			break;
		case AUTH_RES_CLUSTER:
			break;
		}
		if (match && auth_actions_has(&p->actions, action))
			return true;
	}
	return false;
}

bool
auth_privset_allows_pattern(const auth_privset_t *ps, int kind, const char *db, int action)
{
	for (int i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		bool match = p->kind == AUTH_RES_ANY || p->kind == AUTH_RES_ANY_NORMAL ||
		    (kind == AUTH_RES_DB && p->kind == AUTH_RES_DB && strcmp(p->db, db) == 0);
		if (match && auth_actions_has(&p->actions, action))
			return true;
	}
	return false;
}

bool
auth_privset_allows_cluster(const auth_privset_t *ps, int action)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		if ((p->kind == AUTH_RES_ANY || p->kind == AUTH_RES_CLUSTER) && auth_actions_has(&p->actions, action))
			return true;
	}
	return false;
}

bool
auth_privset_touches_db(const auth_privset_t *ps, const char *db)
{
	int i;

	for (i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		if (p->kind == AUTH_RES_ANY || p->kind == AUTH_RES_ANY_NORMAL ||
		    ((p->kind == AUTH_RES_DB || p->kind == AUTH_RES_NS) && strcmp(p->db, db) == 0))
			return true;
	}
	return false;
}

/* ---- privilege documents ------------------------------------------------------ */

int
auth_priv_parse(const bson_t *doc, auth_privset_t *into, terr_t *err)
{
	bson_iter_t it, r, a;
	bool has_res = false, has_actions = false, cluster = false, any = false;
	const char *db = NULL, *coll = NULL;
	auth_actions_t acts;
	auth_res_kind_t kind;
	bson_t rdoc;

	memset(&acts, 0, sizeof(acts));
	bson_iter_init(&it, doc);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "resource") == 0) {
			const uint8_t *d;
			uint32_t l;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'Privilege.resource' is the wrong type, expected type 'object'");
			bson_iter_document(&it, &l, &d);
			if (!bson_init_static(&rdoc, d, l) || !bson_iter_init(&r, &rdoc))
				return terr_set(err, TERR_BAD_VALUE, "invalid resource document");
			has_res = true;
			while (bson_iter_next(&r)) {
				const char *rk = bson_iter_key(&r);
				if (strcmp(rk, "db") == 0 && BSON_ITER_HOLDS_UTF8(&r))
					db = bson_iter_utf8(&r, NULL);
				else if (strcmp(rk, "collection") == 0 && BSON_ITER_HOLDS_UTF8(&r))
					coll = bson_iter_utf8(&r, NULL);
				else if (strcmp(rk, "cluster") == 0 && BSON_ITER_HOLDS_BOOL(&r))
					cluster = bson_iter_bool(&r);
				else if (strcmp(rk, "anyResource") == 0 && BSON_ITER_HOLDS_BOOL(&r))
					any = bson_iter_bool(&r);
				else
					return terr_set(err, TERR_BAD_VALUE,
					    "BSON field 'Privilege.resource.%s' is an unknown field or has the wrong type", rk);
			}
		} else if (strcmp(k, "actions") == 0) {
			const uint8_t *d;
			uint32_t l;
			bson_t adoc;
			if (!BSON_ITER_HOLDS_ARRAY(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field 'Privilege.actions' is the wrong type, expected type 'array'");
			bson_iter_array(&it, &l, &d);
			if (!bson_init_static(&adoc, d, l) || !bson_iter_init(&a, &adoc))
				return terr_set(err, TERR_BAD_VALUE, "invalid actions array");
			has_actions = true;
			while (bson_iter_next(&a)) {
				int idx;
				if (!BSON_ITER_HOLDS_UTF8(&a))
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'Privilege.actions' is the wrong type, expected type 'string'");
				idx = auth_action_index(bson_iter_utf8(&a, NULL));
				if (idx < 0)
					return terr_set(err, TERR_FAILED_TO_PARSE, "Unrecognized action privilege string: %s",
					    bson_iter_utf8(&a, NULL));
				auth_actions_add(&acts, idx);
			}
		} else {
			return terr_set(err, 40415, "BSON field 'Privilege.%s' is an unknown field.", k);
		}
	}
	if (!has_res)
		return terr_set(err, 40414, "BSON field 'Privilege.resource' is missing but a required field");
	if (!has_actions)
		return terr_set(err, 40414, "BSON field 'Privilege.actions' is missing but a required field");
	if (any) {
		if (cluster || db || coll)
			return terr_set(err, TERR_BAD_VALUE, "anyResource may not be combined with other resource fields");
		kind = AUTH_RES_ANY;
	} else if (cluster) {
		if (db || coll)
			return terr_set(err, TERR_BAD_VALUE, "resource: {cluster: true} cannot be combined with 'db' or 'collection'");
		kind = AUTH_RES_CLUSTER;
	} else {
		if (db == NULL || coll == NULL)
			return terr_set(err, TERR_BAD_VALUE,
			    "resource pattern must contain 'collection' and 'db' fields, or 'cluster': true, or 'anyResource': true");
		if (db[0] == '\0' && coll[0] == '\0')
			kind = AUTH_RES_ANY_NORMAL;
		else if (coll[0] == '\0')
			kind = AUTH_RES_DB;
		else if (db[0] == '\0')
			kind = AUTH_RES_COLL_ANY_DB;
		else
			kind = AUTH_RES_NS;
	}
	auth_privset_add(into, kind, db, coll, &acts);
	return 0;
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
auth_privset_append(const auth_privset_t *ps, bson_t *parent, const char *key)
{
	bson_t arr, one, res, acts;
	char k[16];
	int i, j, n;

	bson_append_array_begin(parent, key, -1, &arr);
	for (i = 0; i < ps->n; i++) {
		const auth_priv_t *p = &ps->v[i];
		snprintf(k, sizeof(k), "%d", i);
		bson_append_document_begin(&arr, k, -1, &one);
		BSON_APPEND_DOCUMENT_BEGIN(&one, "resource", &res);
		switch (p->kind) {
		case AUTH_RES_ANY:
			BSON_APPEND_BOOL(&res, "anyResource", true);
			break;
		case AUTH_RES_CLUSTER:
			BSON_APPEND_BOOL(&res, "cluster", true);
			break;
		default:
			BSON_APPEND_UTF8(&res, "db", p->db ? p->db : "");
			BSON_APPEND_UTF8(&res, "collection", p->coll ? p->coll : "");
			break;
		}
		bson_append_document_end(&one, &res);
		/* actions in alphabetical order, as mongod lists them */
		BSON_APPEND_ARRAY_BEGIN(&one, "actions", &acts);
		{
			const char *names[NACTIONS];
			int m = 0;
			for (j = 0; j < NACTIONS; j++)
				if ((p->actions.w[j / 64] >> (j % 64)) & 1)
					names[m++] = action_names[j];
			qsort(names, (size_t)m, sizeof(names[0]), cmp_names);
			for (n = 0; n < m; n++) {
				snprintf(k, sizeof(k), "%d", n);
				BSON_APPEND_UTF8(&acts, k, names[n]);
			}
		}
		bson_append_array_end(&one, &acts);
		bson_append_document_end(&arr, &one);
	}
	bson_append_array_end(parent, &arr);
}

/* ---- built-in roles (builtin_roles.yml) ---------------------------------------- */

#define READ_ACTIONS "changeStream collStats dbHash dbStats find killCursors listCollections listIndexes " \
	"listSearchIndexes planCacheRead"
#define READWRITE_ACTIONS READ_ACTIONS " cleanupStructuredEncryptionData compactStructuredEncryptionData " \
	"convertToCapped createCollection createIndex createSearchIndexes dropCollection dropIndex dropSearchIndex " \
	"insert remove renameCollectionSameDB update updateSearchIndex"
#define DBADMIN_ACTIONS "analyze bypassDocumentValidation collMod collStats compact convertToCapped " \
	"createCollection createIndex createSearchIndexes dbStats dropCollection dropDatabase dropIndex " \
	"dropSearchIndex enableProfiler listCollections listIndexes listSearchIndexes updateSearchIndex " \
	"planCacheIndexFilter planCacheRead planCacheWrite reIndex renameCollectionSameDB storageDetails validate"
#define PROFILE_ACTIONS READ_ACTIONS " convertToCapped createCollection dropCollection"
#define USERADMIN_ACTIONS "changeCustomData changePassword createRole createUser dropRole dropUser grantRole " \
	"revokeRole setAuthenticationRestriction viewRole viewUser"
#define CLUSTER_MONITOR_ACTIONS "connPoolStats getCmdLineOpts getDefaultRWConcern getLog getParameter " \
	"hostInfo inprog listDatabases listSessions netstat replSetGetConfig replSetGetStatus serverStatus top " \
	"useUUID getClusterParameter checkMetadataConsistency"
#define HOST_MANAGER_ACTIONS "applicationMessage connPoolSync cpuProfiler dropConnections flushRouterConfig " \
	"fsync invalidateUserCache killAnyCursor killAnySession killop logRotate setParameter shutdown " \
	"rotateCertificates replSetResizeOplog"
#define CLUSTER_MANAGER_ACTIONS "applicationMessage checkMetadataConsistency flushRouterConfig " \
	"getClusterParameter getDefaultRWConcern listSessions replSetConfigure replSetGetConfig " \
	"replSetGetStatus replSetStateChange setClusterParameter setDefaultRWConcern setFeatureCompatibilityVersion"

#define RESTORE_WRITE_ACTIONS "bypassDocumentValidation collMod convertToCapped createCollection createIndex " \
	"createSearchIndexes dropCollection insert updateSearchIndex"

/* Where a built-in role's privilege applies. */
typedef enum {
	ON_DB,             /* a database: db, or the role's own when db is NULL */
	ON_DB_COLL,        /* <role db>.<coll> */
	ON_ANY_NORMAL,
	ON_COLL_ANY_DB,    /* <coll> in every db */
	ON_NS,             /* a fixed namespace */
	ON_CLUSTER,
	ON_ANY,
} builtin_on_t;

typedef struct builtin_priv {
	builtin_on_t on;
	const char *db, *coll;
	const char *actions;
} builtin_priv_t;

#define BUILTIN_MAX_PRIVS 20

typedef struct builtin_role {
	const char *name;
	bool admin_only;
	/* the roles it inherits (builtin_roles.yml's roles:), space separated:
	 * "name" is in the role's own db, "name@db" in db */
	const char *subroles;
	builtin_priv_t privs[BUILTIN_MAX_PRIVS];
} builtin_role_t;

static const builtin_role_t builtin_roles[] = {
	{"read", false, NULL, {
		{ON_DB, NULL, NULL, READ_ACTIONS},
		{ON_DB_COLL, NULL, "system.js", READ_ACTIONS},
	}},
	{"readWrite", false, NULL, {
		{ON_DB, NULL, NULL, READWRITE_ACTIONS},
		{ON_DB_COLL, NULL, "system.js", READWRITE_ACTIONS},
	}},
	{"dbAdmin", false, NULL, {
		{ON_DB, NULL, NULL, DBADMIN_ACTIONS},
		{ON_DB_COLL, NULL, "system.profile", PROFILE_ACTIONS},
	}},
	{"userAdmin", false, NULL, {
		{ON_DB, NULL, NULL, USERADMIN_ACTIONS},
	}},
	{"dbOwner", false, "readWrite dbAdmin userAdmin", {
		{0, NULL, NULL, NULL},
	}},
	{"readAnyDatabase", true, NULL, {
		{ON_ANY_NORMAL, NULL, NULL, READ_ACTIONS},
		{ON_CLUSTER, NULL, NULL, "listDatabases"},
		{ON_COLL_ANY_DB, NULL, "system.js", READ_ACTIONS},
	}},
	{"readWriteAnyDatabase", true, "readAnyDatabase", {
		{ON_ANY_NORMAL, NULL, NULL, READWRITE_ACTIONS},
		{ON_COLL_ANY_DB, NULL, "system.js", READWRITE_ACTIONS},
	}},
	{"userAdminAnyDatabase", true, NULL, {
		{ON_ANY_NORMAL, NULL, NULL, USERADMIN_ACTIONS " listCachedAndActiveUsers"},
		{ON_DB, "local", NULL, USERADMIN_ACTIONS},
		{ON_DB, "config", NULL, USERADMIN_ACTIONS},
		{ON_CLUSTER, NULL, NULL, "authSchemaUpgrade invalidateUserCache listDatabases viewUser"},
		{ON_NS, "admin", "system.users", READ_ACTIONS " createIndex createSearchIndexes dropIndex dropSearchIndex"},
		{ON_NS, "admin", "system.roles", READ_ACTIONS " createIndex createSearchIndexes dropIndex dropSearchIndex"},
		{ON_COLL_ANY_DB, NULL, "system.users", READ_ACTIONS},
		{ON_NS, "admin", "system.version", READ_ACTIONS},
		{ON_NS, "admin", "system.backup_users", READ_ACTIONS},
	}},
	{"dbAdminAnyDatabase", true, NULL, {
		{ON_CLUSTER, NULL, NULL, "listDatabases applyOps"},
		{ON_ANY_NORMAL, NULL, NULL, DBADMIN_ACTIONS},
		{ON_COLL_ANY_DB, NULL, "system.profile", PROFILE_ACTIONS},
	}},
	{"clusterMonitor", true, "read@config read@local", {
		{ON_CLUSTER, NULL, NULL, CLUSTER_MONITOR_ACTIONS},
		{ON_ANY_NORMAL, NULL, NULL, "collStats dbStats indexStats"},
		{ON_DB, "config", NULL, "collStats dbStats indexStats"},
		{ON_NS, "config", "system.sessions", "collStats dbStats indexStats"},
		{ON_DB, "local", NULL, "collStats dbStats indexStats"},
		{ON_NS, "local", "system.replset", "find"},
		{ON_COLL_ANY_DB, NULL, "system.profile", "find"},
	}},
	{"hostManager", true, NULL, {
		{ON_CLUSTER, NULL, NULL, HOST_MANAGER_ACTIONS},
		{ON_ANY_NORMAL, NULL, NULL, "killCursors"},
	}},
	{"clusterManager", true, "read@config", {
		{ON_CLUSTER, NULL, NULL, CLUSTER_MANAGER_ACTIONS},
		{ON_NS, "local", "system.replset", READ_ACTIONS},
		{ON_DB, "config", NULL, "insert update remove"},
		{ON_DB, "local", NULL, "insert update remove"},
	}},
	{"clusterAdmin", true, "clusterMonitor hostManager clusterManager", {
		{ON_ANY_NORMAL, NULL, NULL, "dropDatabase"},
	}},
	{"backup", true, NULL, {
		{ON_ANY, NULL, NULL, "collStats listCollections listIndexes listSearchIndexes"},
		{ON_ANY_NORMAL, NULL, NULL, "find"},
		{ON_CLUSTER, NULL, NULL, "getParameter listDatabases useUUID appendOplogNote serverStatus"},
		{ON_DB, "config", NULL, "find"},
		{ON_DB, "local", NULL, "find"},
		{ON_COLL_ANY_DB, NULL, "system.js", "find"},
		{ON_COLL_ANY_DB, NULL, "system.users", "find"},
		{ON_COLL_ANY_DB, NULL, "system.profile", "find"},
		{ON_NS, "admin", "system.backup_users", "find"},
		{ON_NS, "admin", "system.roles", "find"},
		{ON_NS, "admin", "system.version", "find"},
		{ON_NS, "config", "settings", "find insert update"},
	}},
	{"restore", true, NULL, {
		{ON_CLUSTER, NULL, NULL, "getParameter useUUID forceUUID applyOps bypassWriteBlockingMode"},
		{ON_DB, "local", NULL, RESTORE_WRITE_ACTIONS},
		{ON_DB, "config", NULL, RESTORE_WRITE_ACTIONS},
		{ON_NS, "local", "system.replset", RESTORE_WRITE_ACTIONS},
		{ON_ANY, NULL, NULL, "listCollections"},
		{ON_ANY_NORMAL, NULL, NULL, RESTORE_WRITE_ACTIONS " " USERADMIN_ACTIONS},
		{ON_COLL_ANY_DB, NULL, "system.js", RESTORE_WRITE_ACTIONS},
		{ON_NS, "admin", "system.backup_users", RESTORE_WRITE_ACTIONS},
		{ON_NS, "admin", "system.version", RESTORE_WRITE_ACTIONS " find"},
		{ON_COLL_ANY_DB, NULL, "system.users", RESTORE_WRITE_ACTIONS " find update remove"},
		{ON_NS, "admin", "system.roles", "createIndex"},
	}},
	{"root", true, "clusterAdmin userAdminAnyDatabase dbAdminAnyDatabase readWriteAnyDatabase backup restore", {
		{ON_ANY, NULL, NULL, "validate"},
	}},
};
#define NBUILTIN ((int)(sizeof(builtin_roles) / sizeof(builtin_roles[0])))

static const builtin_role_t *
builtin_find(const char *role)
{
	int i;

	for (i = 0; i < NBUILTIN; i++)
		if (strcmp(builtin_roles[i].name, role) == 0)
			return &builtin_roles[i];
	return NULL;
}

int
auth_builtin_roles_check(void)
{
	auth_actions_t a;
	int i, j, bad = 0;

	for (i = 0; i < NBUILTIN; i++) {
		for (j = 0; j < BUILTIN_MAX_PRIVS && builtin_roles[i].privs[j].actions != NULL; j++) {
			memset(&a, 0, sizeof(a));
			if (auth_actions_add_list(&a, builtin_roles[i].privs[j].actions) != 0)
				bad++;
		}
		{
			auth_rolelist_t subs;
			int k;
			auth_rolelist_init(&subs);
			auth_builtin_role_subroles(builtin_roles[i].name, "admin", &subs);
			for (k = 0; k < subs.n; k++)
				if (!auth_builtin_role_exists(subs.role[k], subs.db[k]))
					bad++;
			auth_rolelist_destroy(&subs);
		}
	}
	return bad;
}

bool
auth_builtin_role_name(const char *role)
{
	return builtin_find(role) != NULL || strcmp(role, "__system") == 0;
}

bool
auth_builtin_role_exists(const char *role, const char *db)
{
	const builtin_role_t *r = builtin_find(role);

	return r != NULL && (!r->admin_only || strcmp(db, "admin") == 0);
}

bool
auth_builtin_role_subroles(const char *role, const char *db, auth_rolelist_t *into)
{
	const builtin_role_t *r = builtin_find(role);
	const char *p, *e, *at;
	char name[64], rdb[64];

	if (r == NULL || (r->admin_only && strcmp(db, "admin") != 0))
		return false;
	for (p = r->subroles; p != NULL && *p; p = e) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != ' '; e++)
			;
		at = memchr(p, '@', (size_t)(e - p));
		snprintf(name, sizeof(name), "%.*s", (int)((at ? at : e) - p), p);
		if (at)
			snprintf(rdb, sizeof(rdb), "%.*s", (int)(e - at - 1), at + 1);
		else
			bson_strncpy(rdb, db, sizeof(rdb));
		auth_rolelist_add(into, name, rdb);
	}
	return true;
}

bool
auth_builtin_role_privs(const char *role, const char *db, auth_privset_t *into)
{
	const builtin_role_t *r = builtin_find(role);
	int i;

	if (r == NULL || (r->admin_only && strcmp(db, "admin") != 0))
		return false;
	for (i = 0; i < BUILTIN_MAX_PRIVS && r->privs[i].actions != NULL; i++) {
		const builtin_priv_t *p = &r->privs[i];
		auth_actions_t a;

		memset(&a, 0, sizeof(a));
		auth_actions_add_list(&a, p->actions);
		switch (p->on) {
		case ON_DB:
			auth_privset_add(into, AUTH_RES_DB, p->db ? p->db : db, NULL, &a);
			break;
		case ON_DB_COLL:
			auth_privset_add(into, AUTH_RES_NS, db, p->coll, &a);
			break;
		case ON_ANY_NORMAL:
			auth_privset_add(into, AUTH_RES_ANY_NORMAL, NULL, NULL, &a);
			break;
		case ON_COLL_ANY_DB:
			auth_privset_add(into, AUTH_RES_COLL_ANY_DB, NULL, p->coll, &a);
			break;
		case ON_NS:
			auth_privset_add(into, AUTH_RES_NS, p->db, p->coll, &a);
			break;
		case ON_CLUSTER:
			auth_privset_add(into, AUTH_RES_CLUSTER, NULL, NULL, &a);
			break;
		case ON_ANY:
			auth_privset_add(into, AUTH_RES_ANY, NULL, NULL, &a);
			break;
		}
	}
	return true;
}

/* ---- role lists ---------------------------------------------------------------- */

void
auth_rolelist_init(auth_rolelist_t *l)
{
	memset(l, 0, sizeof(*l));
}

void
auth_rolelist_destroy(auth_rolelist_t *l)
{
	int i;

	for (i = 0; i < l->n; i++) {
		bson_free(l->role[i]);
		bson_free(l->db[i]);
	}
	bson_free(l->role);
	bson_free(l->db);
	memset(l, 0, sizeof(*l));
}

bool
auth_rolelist_has(const auth_rolelist_t *l, const char *role, const char *db)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->role[i], role) == 0 && strcmp(l->db[i], db) == 0)
			return true;
	return false;
}

void
auth_rolelist_add(auth_rolelist_t *l, const char *role, const char *db)
{
	if (auth_rolelist_has(l, role, db))
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->role = bson_realloc(l->role, sizeof(char *) * (size_t)l->cap);
		l->db = bson_realloc(l->db, sizeof(char *) * (size_t)l->cap);
	}
	l->role[l->n] = bson_strdup(role);
	l->db[l->n] = bson_strdup(db);
	l->n++;
}

void
auth_rolelist_append(const auth_rolelist_t *l, bson_t *parent, const char *key)
{
	bson_t arr, one;
	char k[16];
	int i;

	bson_append_array_begin(parent, key, -1, &arr);
	for (i = 0; i < l->n; i++) {
		snprintf(k, sizeof(k), "%d", i);
		bson_append_document_begin(&arr, k, -1, &one);
		BSON_APPEND_UTF8(&one, "role", l->role[i]);
		BSON_APPEND_UTF8(&one, "db", l->db[i]);
		bson_append_document_end(&arr, &one);
	}
	bson_append_array_end(parent, &arr);
}

int
auth_rolelist_parse(const bson_iter_t *array_it, const char *default_db, auth_rolelist_t *out,
                    const char *field, terr_t *err)
{
	bson_iter_t it, sub;

	if (!BSON_ITER_HOLDS_ARRAY(array_it))
		return terr_set(err, TERR_TYPE_MISMATCH, "BSON field '%s' is the wrong type '%s', expected type 'array'",
		    field, "non-array");
	if (!bson_iter_recurse(array_it, &it))
		return terr_set(err, TERR_BAD_VALUE, "invalid roles array");
	while (bson_iter_next(&it)) {
		const char *role = NULL, *db = NULL;
		if (BSON_ITER_HOLDS_UTF8(&it)) {
			role = bson_iter_utf8(&it, NULL);
			db = default_db;
		} else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_recurse(&it, &sub);
			while (bson_iter_next(&sub)) {
				const char *k = bson_iter_key(&sub);
				if (strcmp(k, "role") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
					role = bson_iter_utf8(&sub, NULL);
				else if (strcmp(k, "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
					db = bson_iter_utf8(&sub, NULL);
				else if (strcmp(k, "role") == 0 || strcmp(k, "db") == 0)
					return terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field 'RoleName.%s' is the wrong type, expected type 'string'", k);
			}
			if (role == NULL)
				return terr_set(err, 40414, "BSON field 'RoleName.role' is missing but a required field");
			if (db == NULL)
				return terr_set(err, 40414, "BSON field 'RoleName.db' is missing but a required field");
		} else {
			return terr_set(err, TERR_BAD_VALUE,
			    "Role names must be either strings or objects of the form {role: \"roleName\", db: \"databaseName\"}");
		}
		if (role[0] == '\0' || db[0] == '\0')
			return terr_set(err, TERR_BAD_VALUE, "Role name and database must be non-empty");
		auth_rolelist_add(out, role, db);
	}
	return 0;
}

/* ---- resolution ------------------------------------------------------------------- */

/* Add the privileges of a stored role document and queue its roles. */
static int
add_stored_role(const bson_t *doc, auth_rolelist_t *queue, auth_privset_t *privs, terr_t *err)
{
	bson_iter_t it, el;
	terr_t ignore = TERR_INIT;

	if (bson_iter_init_find(&it, doc, "privileges") && BSON_ITER_HOLDS_ARRAY(&it) &&
	    bson_iter_recurse(&it, &el)) {
		while (bson_iter_next(&el)) {
			const uint8_t *d;
			uint32_t l;
			bson_t pd;
			if (!BSON_ITER_HOLDS_DOCUMENT(&el))
				continue;
			bson_iter_document(&el, &l, &d);
			if (bson_init_static(&pd, d, l))
				auth_priv_parse(&pd, privs, &ignore); /* a bad stored privilege grants nothing */
			terr_clear(&ignore);
		}
	}
	if (bson_iter_init_find(&it, doc, "roles") && BSON_ITER_HOLDS_ARRAY(&it))
		auth_rolelist_parse(&it, "admin", queue, "roles", &ignore);
	terr_clear(&ignore);
	return 0;
}

int
auth_roles_resolve(storage_t *st, storage_session_t *s, const auth_rolelist_t *direct,
                   auth_rolelist_t *all_roles, auth_privset_t *privs, terr_t *err)
{
	auth_rolelist_t queue, seen;
	int i, ret = 0;

	auth_rolelist_init(&queue);
	auth_rolelist_init(&seen);
	for (i = 0; i < direct->n; i++)
		auth_rolelist_add(&queue, direct->role[i], direct->db[i]);
	/* breadth first; the queue grows as custom roles name others */
	for (i = 0; i < queue.n && i < 10000; i++) {
		const char *role = queue.role[i], *db = queue.db[i];
		bson_t doc;
		int r;

		if (auth_rolelist_has(&seen, role, db))
			continue;
		if (auth_builtin_role_privs(role, db, privs)) {
			auth_rolelist_add(&seen, role, db);
			auth_builtin_role_subroles(role, db, &queue);
			continue;
		}
		r = auth_store_get(st, s, "system.roles", db, role, &doc, err);
		if (r < 0)
			ERR(-1);
		if (r == 1)
			continue;
		auth_rolelist_add(&seen, role, db);
		add_stored_role(&doc, &queue, privs, err);
		bson_destroy(&doc);
	}
	if (all_roles != NULL)
		for (i = 0; i < seen.n; i++)
			auth_rolelist_add(all_roles, seen.role[i], seen.db[i]);
err:
	auth_rolelist_destroy(&queue);
	auth_rolelist_destroy(&seen);
	return ret;
}
