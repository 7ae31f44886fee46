/*
 * auth_check.c -- which privileges each command needs, and the check the
 * dispatcher runs before a handler: one table (command -> actions on a
 * resource), with a function for the few commands whose needs depend on
 * their arguments (writes that bypass validation or upsert, aggregate
 * stages that read or write other collections, explain, renameCollection,
 * the user and role commands).  A command missing from the table is
 * refused when auth is on.
 *
 * Also: connectionStatus's authInfo, hello's saslSupportedMechs, and
 * mongod's rendering of a command in "not authorized" messages.
 *
 * Not here: resolving a user's privileges (auth_users.c, auth_privs.c);
 * finding the namespaces a pipeline or a view definition touches
 * (auth_ns.c, which aggregate, explain, create and collMod use).  A flag
 * BSON repeats counts as the value that needs more privileges.
 */
#include "auth/auth_private.h"

#include <math.h>
#include <string.h>

/* ---- mongod's BSONObj::toString -------------------------------------------------- */

/* Stop rendering past this many bytes (a command can be 48 MB). */
#define RENDER_MAX (1024 * 1024)

static void render_doc(bson_string_t *b, const bson_t *doc, bool array, int depth, bool snip_pwd);

static void
render_string(bson_string_t *b, const char *s, uint32_t len)
{
	uint32_t i;

	bson_string_append_c(b, '"');
	for (i = 0; i < len; i++) {
		char ch = s[i];
		if (ch == '"' || ch == '\\') {
			bson_string_append_c(b, '\\');
			bson_string_append_c(b, ch);
		} else if ((unsigned char)ch < 0x20) {
			bson_string_append_printf(b, "\\x%02x", (unsigned char)ch);
		} else {
			bson_string_append_c(b, ch);
		}
	}
	bson_string_append_c(b, '"');
}

static void
render_value(bson_string_t *b, bson_iter_t *it, int depth)
{
	switch (bson_iter_type(it)) {
	case BSON_TYPE_DOUBLE: {
		double d = bson_iter_double(it);
		if (isnan(d))
			bson_string_append(b, "nan.0");
		else if (isinf(d))
			bson_string_append(b, d > 0 ? "inf.0" : "-inf.0");
		else if (d == floor(d) && fabs(d) < 1e16)
			bson_string_append_printf(b, "%.1f", d);
		else
			bson_string_append_printf(b, "%.16g", d);
		break;
	}
	case BSON_TYPE_UTF8: {
		uint32_t l;
		const char *s = bson_iter_utf8(it, &l);
		render_string(b, s, l);
		break;
	}
	case BSON_TYPE_DOCUMENT:
	case BSON_TYPE_ARRAY: {
		const uint8_t *d;
		uint32_t l;
		bson_t sub;
		if (BSON_ITER_HOLDS_DOCUMENT(it))
			bson_iter_document(it, &l, &d);
		else
			bson_iter_array(it, &l, &d);
		if (bson_init_static(&sub, d, l))
			render_doc(b, &sub, BSON_ITER_HOLDS_ARRAY(it), depth + 1, false);
		break;
	}
	case BSON_TYPE_BINARY: {
		bson_subtype_t st;
		uint32_t l, i;
		const uint8_t *d;
		bson_iter_binary(it, &st, &l, &d);
		if (st == BSON_SUBTYPE_UUID && l == 16) {
			bson_string_append(b, "UUID(\"");
			for (i = 0; i < 16; i++) {
				bson_string_append_printf(b, "%02x", d[i]);
				if (i == 3 || i == 5 || i == 7 || i == 9)
					bson_string_append_c(b, '-');
			}
			bson_string_append(b, "\")");
		} else {
			bson_string_append_printf(b, "BinData(%d, ", (int)st);
			for (i = 0; i < l; i++)
				bson_string_append_printf(b, "%02X", d[i]);
			bson_string_append_c(b, ')');
		}
		break;
	}
	case BSON_TYPE_UNDEFINED:
		bson_string_append(b, "undefined");
		break;
	case BSON_TYPE_OID: {
		char hex[25];
		bson_oid_to_string(bson_iter_oid(it), hex);
		bson_string_append_printf(b, "ObjectId('%s')", hex);
		break;
	}
	case BSON_TYPE_BOOL:
		bson_string_append(b, bson_iter_bool(it) ? "true" : "false");
		break;
	case BSON_TYPE_DATE_TIME:
		bson_string_append_printf(b, "new Date(%lld)", (long long)bson_iter_date_time(it));
		break;
	case BSON_TYPE_NULL:
		bson_string_append(b, "null");
		break;
	case BSON_TYPE_REGEX: {
		const char *opts;
		const char *re = bson_iter_regex(it, &opts);
		bson_string_append_printf(b, "/%s/%s", re, opts);
		break;
	}
	case BSON_TYPE_CODE: {
		uint32_t l;
		const char *s = bson_iter_code(it, &l);
		bson_string_append_printf(b, "%.*s", (int)l, s);
		break;
	}
	case BSON_TYPE_INT32:
		bson_string_append_printf(b, "%d", bson_iter_int32(it));
		break;
	case BSON_TYPE_TIMESTAMP: {
		uint32_t t, i;
		bson_iter_timestamp(it, &t, &i);
		bson_string_append_printf(b, "Timestamp(%u, %u)", t, i);
		break;
	}
	case BSON_TYPE_INT64:
		bson_string_append_printf(b, "%lld", (long long)bson_iter_int64(it));
		break;
	case BSON_TYPE_DECIMAL128: {
		bson_decimal128_t dec;
		char s[BSON_DECIMAL128_STRING];
		bson_iter_decimal128(it, &dec);
		bson_decimal128_to_string(&dec, s);
		bson_string_append_printf(b, "NumberDecimal(\"%s\")", s);
		break;
	}
	case BSON_TYPE_MINKEY:
		bson_string_append(b, "MinKey");
		break;
	case BSON_TYPE_MAXKEY:
		bson_string_append(b, "MaxKey");
		break;
	default:
		bson_string_append(b, "?");
		break;
	}
}

static void
render_doc(bson_string_t *b, const bson_t *doc, bool array, int depth, bool snip_pwd)
{
	bson_iter_t it;
	bool first = true;

	if (depth > 100 || b->len > RENDER_MAX) {
		bson_string_append(b, array ? "[ ... ]" : "{ ... }");
		return;
	}
	bson_string_append(b, array ? "[" : "{");
	if (bson_iter_init(&it, doc)) {
		while (bson_iter_next(&it)) {
			if (b->len > RENDER_MAX) {
				bson_string_append(b, ", ...");
				break;
			}
			bson_string_append(b, first ? " " : ", ");
			first = false;
			if (!array) {
				bson_string_append(b, bson_iter_key(&it));
				bson_string_append(b, ": ");
			}
			/* mongod's snipForLogging: a password never appears */
			if (snip_pwd && strcmp(bson_iter_key(&it), "pwd") == 0)
				bson_string_append(b, "\"xxx\"");
			else
				render_value(b, &it, depth);
		}
	}
	bson_string_append(b, first ? (array ? "]" : "}") : (array ? " ]" : " }"));
}

char *
auth_render_bson(const bson_t *doc)
{
	bson_string_t *b = bson_string_new(NULL);
	bson_iter_t it;
	bool snip = false;

	/* createUser and updateUser carry a password */
	if (bson_iter_init(&it, doc) && bson_iter_next(&it))
		snip = strcmp(bson_iter_key(&it), "createUser") == 0 || strcmp(bson_iter_key(&it), "updateUser") == 0;
	render_doc(b, doc, false, 0, snip);
	return bson_string_free(b, false);
}

/* ---- the check context ------------------------------------------------------------- */

typedef struct chk {
	const auth_ctx_t *x;
	auth_client_t *ac;
	const auth_privset_t *ps;
	int depth;
	/* a refusal with its own code or message (collMod's 72, applyOps'
	 * "Unauthorized"): the code and message (fail_msg may point into
	 * fail_buf) */
	int fail_code;
	const char *fail_msg;
	char fail_buf[600];
} chk_t;

static bool
can_ns(chk_t *k, const char *db, const char *coll, const char *action)
{
	return auth_privset_allows_ns(k->ps, db, coll, auth_action_index(action));
}

static bool
can_db(chk_t *k, const char *db, const char *action)
{
	return auth_privset_allows_db(k->ps, db, auth_action_index(action));
}

static bool
can_cluster(chk_t *k, const char *action)
{
	return auth_privset_allows_cluster(k->ps, auth_action_index(action));
}

/* Every action of a space-separated list on db.coll. */
static bool
can_ns_all(chk_t *k, const char *db, const char *coll, const char *actions)
{
	char buf[64];
	const char *p = actions, *e;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != ' '; e++)
			;
		snprintf(buf, sizeof(buf), "%.*s", (int)(e - p), p);
		if (!can_ns(k, db, coll, buf))
			return false;
		p = e;
	}
	return true;
}

static bool
can_db_all(chk_t *k, const char *db, const char *actions)
{
	char buf[64];
	const char *p = actions, *e;

	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		for (e = p; *e && *e != ' '; e++)
			;
		snprintf(buf, sizeof(buf), "%.*s", (int)(e - p), p);
		if (!can_db(k, db, buf))
			return false;
		p = e;
	}
	return true;
}

static const char *
first_string(const bson_t *body)
{
	bson_iter_t it;

	if (bson_iter_init(&it, body) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it))
		return bson_iter_utf8(&it, NULL);
	return NULL;
}

/* A flag that adds to what a command needs: true when any occurrence of
 * it is (BSON may repeat a key; whichever the handler reads, the check
 * covered it). */
static bool
field_true(const bson_t *body, const char *field)
{
	return auth_body_any_true(body, field);
}

/* A flag that lowers what a command needs: true only when present and
 * every occurrence is true. */
static bool
field_all_true(const bson_t *body, const char *field)
{
	bson_iter_t it;
	bool seen = false;

	if (!bson_iter_init(&it, body))
		return false;
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), field) != 0)
			continue;
		if (!bson_iter_as_bool(&it))
			return false;
		seen = true;
	}
	return seen;
}

/* The collection the command names first, or the database itself when it
 * does not name one (then the actions are checked on the database). */
static bool
can_target(chk_t *k, const bson_t *body, const char *actions)
{
	const char *coll = first_string(body);

	if (coll != NULL && coll[0] != '\0')
		return can_ns_all(k, k->x->db, coll, actions);
	return can_db_all(k, k->x->db, actions);
}

/* ---- commands whose needs depend on their arguments ------------------------------- */

typedef bool (*special_fn)(chk_t *k, const bson_t *body);

static bool
chk_insert(chk_t *k, const bson_t *body)
{
	if (!can_target(k, body, "insert"))
		return false;
	return !field_true(body, "bypassDocumentValidation") || can_target(k, body, "bypassDocumentValidation");
}

static bool
chk_update(chk_t *k, const bson_t *body)
{
	bson_iter_t it, el;

	if (!can_target(k, body, "update"))
		return false;
	if (field_true(body, "bypassDocumentValidation") && !can_target(k, body, "bypassDocumentValidation"))
		return false;
	if (bson_iter_init_find(&it, body, "updates") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &el)) {
		while (bson_iter_next(&el)) {
			bson_iter_t u;
			if (!BSON_ITER_HOLDS_DOCUMENT(&el) || !bson_iter_recurse(&el, &u))
				continue;
			while (bson_iter_next(&u))
				if (strcmp(bson_iter_key(&u), "upsert") == 0 && bson_iter_as_bool(&u))
					return can_target(k, body, "insert");
		}
	}
	return true;
}

static bool
chk_find_and_modify(chk_t *k, const bson_t *body)
{
	/* remove: true needs remove, anything else update; a repeated remove
	 * that disagrees with itself needs both */
	if (field_true(body, "remove") && !can_target(k, body, "find remove"))
		return false;
	if (field_all_true(body, "remove"))
		return true;
	if (!can_target(k, body, "find update"))
		return false;
	if (field_true(body, "upsert") && !can_target(k, body, "insert"))
		return false;
	return !field_true(body, "bypassDocumentValidation") || can_target(k, body, "bypassDocumentValidation");
}

/* Every entry of l allowed (l is destroyed). */
static bool
list_allowed(chk_t *k, auth_nslist_t *l)
{
	bool ok = auth_nslist_allowed(l, k->ps);

	auth_nslist_destroy(l);
	return ok;
}

/* aggregate: every namespace auth_aggregate_namespaces finds, at any depth. */
static bool
chk_aggregate(chk_t *k, const bson_t *body)
{
	auth_nslist_t l;

	auth_nslist_init(&l);
	if (k->ac != NULL && k->ac->user != NULL) {
		l.self_user = k->ac->user;
		l.self_db = k->ac->db;
	}
	auth_aggregate_namespaces(&l, k->x->db, body);
	return list_allowed(k, &l);
}

/* A view definition (create with viewOn, collMod with viewOn + pipeline)
 * as mongod's checkAuthForCreateOrModifyView: a user who may not read the
 * view may define it freely (nothing is exposed to it); one who may must be
 * able to read everything the definition reads. */
static bool
view_definition_allowed(chk_t *k, const char *view, const bson_t *body)
{
	auth_nslist_t l;

	if (!can_ns(k, k->x->db, view, "find"))
		return true;
	auth_nslist_init(&l);
	auth_view_namespaces(&l, k->x->db, body);
	return list_allowed(k, &l);
}

static bool
has_field(const bson_t *body, const char *field)
{
	bson_iter_t it;

	return bson_iter_init_find(&it, body, field);
}

/* create (mongod's checkAuthForCreate): a view needs createCollection and
 * its definition's namespaces; a collection createCollection or insert;
 * capped: convertToCapped as well. */
static bool
chk_create(chk_t *k, const bson_t *body)
{
	const char *coll = first_string(body);
	bool create;

	if (coll == NULL || coll[0] == '\0')
		return can_db(k, k->x->db, "createCollection");
	if (auth_body_any_true(body, "capped") && !can_ns(k, k->x->db, coll, "convertToCapped"))
		return false;
	create = can_ns(k, k->x->db, coll, "createCollection");
	if (has_field(body, "viewOn"))
		return create && view_definition_allowed(k, coll, body);
	return create || can_ns(k, k->x->db, coll, "insert");
}

/* collMod (mongod's checkAuthForCollMod): with auth on, a view's viewOn and
 * pipeline change together (72 otherwise), and the new definition's
 * namespaces are checked as create checks them. */
static bool
chk_coll_mod(chk_t *k, const bson_t *body)
{
	const char *coll = first_string(body);

	if (coll == NULL || !can_ns(k, k->x->db, coll, "collMod"))
		return false;
	if (has_field(body, "viewOn") != has_field(body, "pipeline")) {
		k->fail_code = TERR_INVALID_OPTIONS;
		k->fail_msg = "Must specify both 'viewOn' and 'pipeline' when modifying a view and auth is enabled";
		return false;
	}
	return !has_field(body, "viewOn") || view_definition_allowed(k, coll, body);
}

static bool
chk_get_more(chk_t *k, const bson_t *body)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, body, "collection") && BSON_ITER_HOLDS_UTF8(&it))
		return can_ns(k, k->x->db, bson_iter_utf8(&it, NULL), "find") ||
		    can_ns(k, k->x->db, bson_iter_utf8(&it, NULL), "listCollections") ||
		    can_ns(k, k->x->db, bson_iter_utf8(&it, NULL), "listIndexes") ||
		    can_db(k, k->x->db, "listCollections");
	return false;
}

static bool
chk_list_collections(chk_t *k, const bson_t *body)
{
	if (can_db(k, k->x->db, "listCollections"))
		return true;
	/* mongod lets a user list the collections it has privileges on */
	return field_all_true(body, "authorizedCollections") && field_all_true(body, "nameOnly") &&
	    auth_privset_touches_db(k->ps, k->x->db);
}

static bool
chk_list_databases(chk_t *k, const bson_t *body)
{
	/* Any authenticated user may list databases: without the action the
	 * handler shows only the databases the user has privileges on
	 * (auth_db_visible), as mongod does. */
	(void)k;
	(void)body;
	return true;
}

static bool
chk_rename(chk_t *k, const bson_t *body)
{
	const char *from = first_string(body), *to = NULL, *fd, *td;
	const char *fdot, *tdot;
	char fdb[128], tdb[128];
	bson_iter_t it;

	if (bson_iter_init_find(&it, body, "to") && BSON_ITER_HOLDS_UTF8(&it))
		to = bson_iter_utf8(&it, NULL);
	if (from == NULL || to == NULL || (fdot = strchr(from, '.')) == NULL || (tdot = strchr(to, '.')) == NULL)
		return can_cluster(k, "shutdown") && can_db(k, "admin", "renameCollection");
	snprintf(fdb, sizeof(fdb), "%.*s", (int)(fdot - from), from);
	snprintf(tdb, sizeof(tdb), "%.*s", (int)(tdot - to), to);
	fd = fdb;
	td = tdb;
	if (strcmp(fd, td) == 0)
		return can_ns(k, fd, fdot + 1, "renameCollectionSameDB") &&
		    (!field_true(body, "dropTarget") || can_ns(k, td, tdot + 1, "dropCollection"));
	return can_ns_all(k, fd, fdot + 1, "find dropCollection") &&
	    can_ns_all(k, td, tdot + 1, "insert createIndex") &&
	    (!field_true(body, "dropTarget") || can_ns(k, td, tdot + 1, "dropCollection"));
}

/* cloneCollectionAsCapped: find on the source; insert, createIndex and
 * convertToCapped on the target (mongod's checkAuthForCommand). */
static bool
chk_clone_capped(chk_t *k, const bson_t *body)
{
	const char *from = first_string(body), *to = NULL;
	bson_iter_t it;

	if (bson_iter_init_find(&it, body, "toCollection") && BSON_ITER_HOLDS_UTF8(&it))
		to = bson_iter_utf8(&it, NULL);
	if (from == NULL || to == NULL)
		return false;
	return can_ns(k, k->x->db, from, "find") && can_ns_all(k, k->x->db, to, "insert createIndex convertToCapped");
}

static bool auth_allows(chk_t *k, const char *name, const bson_t *body);

static bool
chk_explain(chk_t *k, const bson_t *body)
{
	bson_iter_t it, in;
	const uint8_t *d;
	uint32_t l;
	bson_t inner;

	if (!bson_iter_init(&it, body) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &l, &d);
	if (!bson_init_static(&inner, d, l) || !bson_iter_init(&in, &inner) || !bson_iter_next(&in))
		return false;
	if (strcmp(bson_iter_key(&in), "explain") == 0 || ++k->depth > 3)
		return false;
	return auth_allows(k, bson_iter_key(&in), &inner);
}

/*
 * applyOps, as mongod's validateApplyOpsCommand and
 * OplogApplicationChecks::checkAuthForOperation: the applyOps action on
 * the cluster first (dbAdminAnyDatabase, restore, root); an empty batch (at any
 * nesting depth), or a create/renameCollection among several entries,
 * needs every privilege (root); an entry holding a UUID needs useUUID on
 * the cluster, a create with one forceUUID too; then each top-level entry
 * needs what it does: a no-op appendOplogNote on the cluster, an insert
 * insert, an update update (and insert when it may upsert: its b or the
 * command's alwaysUpsert, true by default), a delete remove, a command
 * entry what that command needs on its namespace's database (admin for
 * renameCollection; a nested applyOps the same check again).  9.0 no
 * longer reads preCondition, so it needs nothing.  Refusals say "Unauthorized", "not
 * authorized for insert on <ns>", ... as mongod.  A malformed command
 * passes here and is refused by the handler.
 */
enum { AO_OK, AO_USE_UUID, AO_FORCE_UUID, AO_SUPERUSER };

static bool
bin_uuid_at_top(const bson_t *d)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, d))
		return false;
	while (bson_iter_next(&it))
		if (BSON_ITER_HOLDS_BINARY(&it)) {
			bson_subtype_t st;

			bson_iter_binary(&it, &st, NULL, NULL);
			if (st == BSON_SUBTYPE_UUID)
				return true;
		}
	return false;
}

/* The entry's o as a document (false when absent or not one). */
static bool
op_o(const bson_t *op, bson_t *o)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;

	if (!bson_iter_init_find(&it, op, "o") || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &l, &d);
	return bson_init_static(o, d, l);
}

/* A command entry ({op: "c", o: {<name>: ...}}) running name? */
static bool
op_is_command(const bson_t *op, const char *name)
{
	bson_iter_t it;
	bson_t o;

	if (!bson_iter_init_find(&it, op, "op") || !BSON_ITER_HOLDS_UTF8(&it) ||
	    strcmp(bson_iter_utf8(&it, NULL), "c") != 0 || !op_o(op, &o) || !bson_iter_init(&it, &o) ||
	    !bson_iter_next(&it))
		return false;
	return strcmp(bson_iter_key(&it), name) == 0;
}

/* The validity level of an applyOps body (its first field the array). */
static int
apply_ops_validity(const bson_t *body, int depth)
{
	bson_iter_t it, el;
	int ret = AO_OK, n = 0;

	if (depth > 10 || !bson_iter_init(&it, body) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_ARRAY(&it) ||
	    !bson_iter_recurse(&it, &el))
		return AO_OK;
	while (bson_iter_next(&el))
		n++;
	if (n == 0)
		return AO_SUPERUSER;
	bson_iter_recurse(&it, &el);
	while (bson_iter_next(&el)) {
		const uint8_t *d;
		uint32_t l;
		bson_t op, o;
		bson_iter_t t;
		bool uuid;
		int v;

		if (!BSON_ITER_HOLDS_DOCUMENT(&el))
			continue;
		bson_iter_document(&el, &l, &d);
		bson_init_static(&op, d, l);
		if (n > 1 && (op_is_command(&op, "create") || op_is_command(&op, "renameCollection")))
			return AO_SUPERUSER;
		uuid = bin_uuid_at_top(&op);
		if (!uuid && bson_iter_init_find(&t, &op, "op") && BSON_ITER_HOLDS_UTF8(&t) &&
		    strcmp(bson_iter_utf8(&t, NULL), "c") == 0 && op_o(&op, &o))
			uuid = bin_uuid_at_top(&o);
		if (uuid && ret < AO_USE_UUID)
			ret = AO_USE_UUID;
		if (uuid && op_is_command(&op, "create") && ret < AO_FORCE_UUID)
			ret = AO_FORCE_UUID;
		if (op_is_command(&op, "applyOps") && op_o(&op, &o) && (v = apply_ops_validity(&o, depth + 1)) > ret)
			ret = v;
		if (ret == AO_SUPERUSER)
			return ret;
	}
	return ret;
}

/* Every action on every resource (mongod's universal privileges: root). */
static bool
is_superuser(chk_t *k)
{
	for (int i = 0; i < k->ps->n; i++) {
		const auth_priv_t *p = &k->ps->v[i];
		bool all = p->kind == AUTH_RES_ANY;

		for (int a = 0; all && a < auth_action_count(); a++)
			all = auth_actions_has(&p->actions, a);
		if (all)
			return true;
	}
	return false;
}

static bool
ao_fail(chk_t *k, const char *fmt, const char *a, const char *b)
{
	snprintf(k->fail_buf, sizeof k->fail_buf, fmt, a != NULL ? a : "", b != NULL ? b : "");
	k->fail_code = TERR_UNAUTHORIZED;
	k->fail_msg = k->fail_buf;
	return false;
}

/* One top-level entry's privileges (checkOperationAuthorization). */
static bool
apply_op_allowed(chk_t *k, const bson_t *op, bool always_upsert)
{
	bson_iter_t it;
	const char *type, *ns, *dot;
	char db[256];
	bson_t o;

	if (!bson_iter_init_find(&it, op, "op") || !BSON_ITER_HOLDS_UTF8(&it))
		return true;
	type = bson_iter_utf8(&it, NULL);
	if (strcmp(type, "n") == 0)
		return can_cluster(k, "appendOplogNote") || ao_fail(k, "Unauthorized%s%s", NULL, NULL);
	if (!bson_iter_init_find(&it, op, "ns") || !BSON_ITER_HOLDS_UTF8(&it))
		return true;
	ns = bson_iter_utf8(&it, NULL);
	dot = strchr(ns, '.');
	snprintf(db, sizeof db, "%.*s", dot != NULL ? (int)(dot - ns) : (int)strlen(ns), ns);
	if (strcmp(type, "c") == 0) {
		auth_ctx_t x2 = *k->x;
		chk_t k2;
		bool ok;

		if (!op_o(op, &o) || !bson_iter_init(&it, &o) || !bson_iter_next(&it))
			return true;
		x2.name = bson_iter_key(&it);
		x2.db = strcmp(x2.name, "renameCollection") == 0 ? "admin" : db;
		x2.body = &o;
		if (!auth_command_known(x2.name) || ++k->depth > 10)
			return false;
		memset(&k2, 0, sizeof k2);
		k2.x = &x2;
		k2.ac = k->ac;
		k2.ps = k->ps;
		k2.depth = k->depth;
		ok = auth_allows(&k2, x2.name, &o);
		if (!ok && k2.fail_code != 0) {
			k->fail_code = k2.fail_code;
			snprintf(k->fail_buf, sizeof k->fail_buf, "%s", k2.fail_msg);
			k->fail_msg = k->fail_buf;
		}
		return ok;
	}
	if (dot == NULL)
		return true;   /* not a namespace: the handler refuses it */
	if (strcmp(type, "i") == 0)
		return can_ns(k, db, dot + 1, "insert") || ao_fail(k, "not authorized for insert on %s%s", ns, NULL);
	if (strcmp(type, "u") == 0) {
		bool upsert = always_upsert || (bson_iter_init_find(&it, op, "b") && bson_iter_as_bool(&it));

		if (!can_ns(k, db, dot + 1, "update") || (upsert && !can_ns(k, db, dot + 1, "insert")))
			return ao_fail(k, "not authorized for %s on %s", upsert ? "upsert" : "update", ns);
		return true;
	}
	if (strcmp(type, "d") == 0)
		return can_ns(k, db, dot + 1, "remove") || ao_fail(k, "not authorized for remove on %s%s", ns, NULL);
	return true;
}

static bool
chk_apply_ops(chk_t *k, const bson_t *body)
{
	bson_iter_t it, el;
	bool always_upsert = true;
	int v = apply_ops_validity(body, 0);

	if (!can_cluster(k, "applyOps"))
		return ao_fail(k, "Unauthorized%s%s", NULL, NULL);
	if (v == AO_SUPERUSER)
		return is_superuser(k) || ao_fail(k, "Unauthorized%s%s", NULL, NULL);
	if (v == AO_FORCE_UUID && !(can_cluster(k, "forceUUID") && can_cluster(k, "useUUID")))
		return ao_fail(k, "Unauthorized%s%s", NULL, NULL);
	if (v == AO_USE_UUID && !can_cluster(k, "useUUID"))
		return ao_fail(k, "Unauthorized%s%s", NULL, NULL);
	if (bson_iter_init_find(&it, body, "alwaysUpsert"))
		always_upsert = bson_iter_as_bool(&it);
	if (bson_iter_init(&it, body) && bson_iter_next(&it) && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &el))
		while (bson_iter_next(&el)) {
			const uint8_t *d;
			uint32_t l;
			bson_t op;

			if (!BSON_ITER_HOLDS_DOCUMENT(&el))
				continue;
			bson_iter_document(&el, &l, &d);
			bson_init_static(&op, d, l);
			if (!apply_op_allowed(k, &op, always_upsert))
				return false;
		}
	return true;
}

/* bulkWrite (run on admin): each op needs its action on the namespace
 * its nsInfo entry names. */
static bool
chk_bulk_write(chk_t *k, const bson_t *body)
{
	bson_iter_t it, ops, op, f, ns;
	const char *names[1000];
	bool bypass = field_true(body, "bypassDocumentValidation");
	int nns = 0;

	if (bson_iter_init_find(&it, body, "nsInfo") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &ns)) {
		while (bson_iter_next(&ns) && nns < 1000) {
			names[nns] = NULL;
			if (BSON_ITER_HOLDS_DOCUMENT(&ns) && bson_iter_recurse(&ns, &f) && bson_iter_find(&f, "ns") &&
			    BSON_ITER_HOLDS_UTF8(&f))
				names[nns] = bson_iter_utf8(&f, NULL);
			nns++;
		}
	}
	if (!bson_iter_init_find(&it, body, "ops") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &ops))
		return true; /* malformed: the parser refuses it */
	while (bson_iter_next(&ops)) {
		const char *action = NULL, *name, *dot;
		bool upsert = false;
		int64_t idx = -1;
		char db[128];

		if (!BSON_ITER_HOLDS_DOCUMENT(&ops) || !bson_iter_recurse(&ops, &op) || !bson_iter_next(&op))
			continue;
		name = bson_iter_key(&op);
		if (strcmp(name, "insert") == 0)
			action = "insert";
		else if (strcmp(name, "update") == 0)
			action = "update";
		else if (strcmp(name, "delete") == 0)
			action = "remove";
		else
			continue;
		if (BSON_ITER_HOLDS_NUMBER(&op))
			idx = bson_iter_as_int64(&op);
		while (bson_iter_next(&op))
			if (strcmp(bson_iter_key(&op), "upsert") == 0)
				upsert = bson_iter_as_bool(&op);
		if (idx < 0 || idx >= nns || names[idx] == NULL || (dot = strchr(names[idx], '.')) == NULL ||
		    dot - names[idx] >= (long)sizeof(db))
			return false;
		snprintf(db, sizeof(db), "%.*s", (int)(dot - names[idx]), names[idx]);
		if (!can_ns(k, db, dot + 1, action) || (upsert && !can_ns(k, db, dot + 1, "insert")) ||
		    (bypass && strcmp(action, "remove") != 0 && !can_ns(k, db, dot + 1, "bypassDocumentValidation")))
			return false;
	}
	return true;
}

/* mapReduce: find on the source; a collection output needs insert and
 * remove (replace) or update (merge, reduce) on the target. */
static bool
chk_map_reduce(chk_t *k, const bson_t *body)
{
	const char *coll = first_string(body), *out_db = k->x->db, *out = NULL, *acts = "insert remove";
	bson_iter_t it, o;

	if (coll == NULL || !can_ns(k, k->x->db, coll, "find"))
		return false;
	if (!bson_iter_init_find(&it, body, "out"))
		return true;
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		out = bson_iter_utf8(&it, NULL);
	} else if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &o)) {
		while (bson_iter_next(&o)) {
			const char *key = bson_iter_key(&o);
			if (strcmp(key, "inline") == 0)
				return true;
			if (!BSON_ITER_HOLDS_UTF8(&o))
				continue;
			if (strcmp(key, "db") == 0)
				out_db = bson_iter_utf8(&o, NULL);
			else if (strcmp(key, "replace") == 0)
				out = bson_iter_utf8(&o, NULL);
			else if (strcmp(key, "merge") == 0 || strcmp(key, "reduce") == 0) {
				out = bson_iter_utf8(&o, NULL);
				acts = "insert update";
			}
		}
	}
	if (out == NULL)
		return true;
	if (!can_ns_all(k, out_db, out, acts))
		return false;
	return !field_true(body, "bypassDocumentValidation") || can_ns(k, out_db, out, "bypassDocumentValidation");
}

/* A roles argument's databases each need action. */
static bool
roles_field_allowed(chk_t *k, const bson_t *body, const char *field, const char *action)
{
	auth_rolelist_t l;
	terr_t ignore = TERR_INIT;
	bson_iter_t it;
	bool ok = true;
	int i;

	if (!bson_iter_init_find(&it, body, field))
		return true;
	auth_rolelist_init(&l);
	if (auth_rolelist_parse(&it, k->x->db, &l, field, &ignore) == 0) {
		for (i = 0; i < l.n && ok; i++)
			ok = can_db(k, l.db[i], action);
	}
	terr_clear(&ignore);
	auth_rolelist_destroy(&l);
	return ok;
}

static bool
chk_create_user(chk_t *k, const bson_t *body)
{
	return can_db(k, k->x->db, "createUser") && roles_field_allowed(k, body, "roles", "grantRole");
}

static bool
is_self(chk_t *k, const char *user, const char *db)
{
	return k->ac != NULL && k->ac->user != NULL && strcmp(k->ac->user, user) == 0 && strcmp(k->ac->db, db) == 0;
}

static bool
chk_update_user(chk_t *k, const bson_t *body)
{
	const char *user = first_string(body);
	bson_iter_t it;
	bool self = user != NULL && is_self(k, user, k->x->db);

	if (bson_iter_init_find(&it, (bson_t *)body, "pwd") &&
	    !(can_db(k, k->x->db, "changePassword") || (self && can_db(k, k->x->db, "changeOwnPassword"))))
		return false;
	if (bson_iter_init_find(&it, (bson_t *)body, "customData") &&
	    !(can_db(k, k->x->db, "changeCustomData") || (self && can_db(k, k->x->db, "changeOwnCustomData"))))
		return false;
	if (bson_iter_init_find(&it, (bson_t *)body, "authenticationRestrictions") &&
	    !can_db(k, k->x->db, "setAuthenticationRestriction"))
		return false;
	return roles_field_allowed(k, body, "roles", "grantRole") && roles_field_allowed(k, body, "roles", "revokeRole");
}

static bool
chk_users_info(chk_t *k, const bson_t *body)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, body) || !bson_iter_next(&it))
		return false;
	if (BSON_ITER_HOLDS_UTF8(&it) && is_self(k, bson_iter_utf8(&it, NULL), k->x->db))
		return true;
	if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_t sub;
		const char *u = NULL, *d = NULL;
		bool forall = false;
		bson_iter_recurse(&it, &sub);
		while (bson_iter_next(&sub)) {
			if (strcmp(bson_iter_key(&sub), "user") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
				u = bson_iter_utf8(&sub, NULL);
			else if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
				d = bson_iter_utf8(&sub, NULL);
			else if (strcmp(bson_iter_key(&sub), "forAllDBs") == 0)
				forall = bson_iter_as_bool(&sub);
		}
		if (forall)
			return can_cluster(k, "viewUser");
		if (u != NULL && d != NULL)
			return is_self(k, u, d) || can_db(k, d, "viewUser");
	}
	if (BSON_ITER_HOLDS_ARRAY(&it)) {
		bson_iter_t el;
		bson_iter_recurse(&it, &el);
		while (bson_iter_next(&el)) {
			const char *u = NULL, *d = k->x->db;
			if (BSON_ITER_HOLDS_UTF8(&el)) {
				u = bson_iter_utf8(&el, NULL);
			} else if (BSON_ITER_HOLDS_DOCUMENT(&el)) {
				bson_iter_t sub;
				bson_iter_recurse(&el, &sub);
				while (bson_iter_next(&sub)) {
					if (strcmp(bson_iter_key(&sub), "user") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						u = bson_iter_utf8(&sub, NULL);
					else if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						d = bson_iter_utf8(&sub, NULL);
				}
			}
			if (u == NULL || !(is_self(k, u, d) || can_db(k, d, "viewUser")))
				return false;
		}
		return true;
	}
	return can_db(k, k->x->db, "viewUser");
}

static bool
chk_create_role(chk_t *k, const bson_t *body)
{
	return can_db(k, k->x->db, "createRole") && roles_field_allowed(k, body, "roles", "grantRole");
}

static bool
chk_update_role(chk_t *k, const bson_t *body)
{
	return can_db_all(k, k->x->db, "grantRole revokeRole") && roles_field_allowed(k, body, "roles", "grantRole");
}

static bool
chk_grant_roles(chk_t *k, const bson_t *body)
{
	return roles_field_allowed(k, body, "roles", "grantRole");
}

static bool
chk_revoke_roles(chk_t *k, const bson_t *body)
{
	return roles_field_allowed(k, body, "roles", "revokeRole");
}

static bool
chk_grant_roles_to_role(chk_t *k, const bson_t *body)
{
	return can_db(k, k->x->db, "grantRole") && roles_field_allowed(k, body, "roles", "grantRole");
}

static bool
chk_revoke_roles_from_role(chk_t *k, const bson_t *body)
{
	return can_db(k, k->x->db, "revokeRole") && roles_field_allowed(k, body, "roles", "revokeRole");
}

static bool
chk_roles_info(chk_t *k, const bson_t *body)
{
	if (can_db(k, k->x->db, "viewRole"))
		return true;
	/* a user may always look at the roles it holds */
	{
		bson_iter_t it;
		const char *r = NULL, *d = k->x->db;
		if (bson_iter_init(&it, body) && bson_iter_next(&it)) {
			if (BSON_ITER_HOLDS_UTF8(&it)) {
				r = bson_iter_utf8(&it, NULL);
			} else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
				bson_iter_t sub;
				bson_iter_recurse(&it, &sub);
				while (bson_iter_next(&sub)) {
					if (strcmp(bson_iter_key(&sub), "role") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						r = bson_iter_utf8(&sub, NULL);
					else if (strcmp(bson_iter_key(&sub), "db") == 0 && BSON_ITER_HOLDS_UTF8(&sub))
						d = bson_iter_utf8(&sub, NULL);
				}
			}
		}
		return r != NULL && k->ac != NULL && auth_rolelist_has(&k->ac->roles, r, d);
	}
}

/* ---- the table --------------------------------------------------------------------- */

typedef enum need {
	NEED_NONE,        /* allowed before authentication */
	NEED_AUTHED,      /* any authenticated user */
	NEED_NS,          /* actions on <db>.<first argument> (or <db> without one) */
	NEED_DB,          /* actions on the database */
	NEED_CLUSTER,     /* actions on the cluster */
	NEED_SPECIAL,     /* fn decides */
} need_t;

typedef struct priv_row {
	const char *cmd;
	need_t need;
	const char *actions;
	special_fn fn;
} priv_row_t;

static const priv_row_t priv_table[] = {
	/* handshake, authentication, diagnostics anyone may run */
	{"hello", NEED_NONE, NULL, NULL},
	{"isMaster", NEED_NONE, NULL, NULL},
	{"ismaster", NEED_NONE, NULL, NULL},
	{"ping", NEED_NONE, NULL, NULL},
	{"buildInfo", NEED_NONE, NULL, NULL},
	{"buildinfo", NEED_NONE, NULL, NULL},
	{"saslStart", NEED_NONE, NULL, NULL},
	{"saslContinue", NEED_NONE, NULL, NULL},
	{"authenticate", NEED_NONE, NULL, NULL},
	{"logout", NEED_NONE, NULL, NULL},
	{"getnonce", NEED_NONE, NULL, NULL},
	{"connectionStatus", NEED_NONE, NULL, NULL},
	{"listCommands", NEED_NONE, NULL, NULL},
	{"whatsmyuri", NEED_NONE, NULL, NULL},
	{"endSessions", NEED_NONE, NULL, NULL},
	/* sessions */
	{"startSession", NEED_AUTHED, NULL, NULL},
	{"refreshSessions", NEED_AUTHED, NULL, NULL},
	{"killSessions", NEED_AUTHED, NULL, NULL},
	{"killAllSessions", NEED_CLUSTER, "killAnySession", NULL},
	{"killAllSessionsByPattern", NEED_CLUSTER, "killAnySession", NULL},
	{"refreshLogicalSessionCacheNow", NEED_AUTHED, NULL, NULL},
	{"commitTransaction", NEED_AUTHED, NULL, NULL},
	{"abortTransaction", NEED_AUTHED, NULL, NULL},
	/* documents */
	{"find", NEED_NS, "find", NULL},
	{"count", NEED_NS, "find", NULL},
	{"distinct", NEED_NS, "find", NULL},
	{"insert", NEED_SPECIAL, NULL, chk_insert},
	{"update", NEED_SPECIAL, NULL, chk_update},
	{"delete", NEED_NS, "remove", NULL},
	{"findAndModify", NEED_SPECIAL, NULL, chk_find_and_modify},
	{"findandmodify", NEED_SPECIAL, NULL, chk_find_and_modify},
	{"aggregate", NEED_SPECIAL, NULL, chk_aggregate},
	{"getMore", NEED_SPECIAL, NULL, chk_get_more},
	{"killCursors", NEED_NS, "killCursors", NULL},
	{"explain", NEED_SPECIAL, NULL, chk_explain},
	{"bulkWrite", NEED_SPECIAL, NULL, chk_bulk_write},
	{"mapReduce", NEED_SPECIAL, NULL, chk_map_reduce},
	{"mapreduce", NEED_SPECIAL, NULL, chk_map_reduce},
	{"dataSize", NEED_NS, "find", NULL},
	{"filemd5", NEED_NS, "find", NULL},
	{"commitTransaction", NEED_AUTHED, NULL, NULL},
	{"abortTransaction", NEED_AUTHED, NULL, NULL},
	/* catalog */
	{"create", NEED_SPECIAL, NULL, chk_create},
	{"drop", NEED_NS, "dropCollection", NULL},
	{"dropDatabase", NEED_DB, "dropDatabase", NULL},
	{"collMod", NEED_SPECIAL, NULL, chk_coll_mod},
	{"collStats", NEED_NS, "collStats", NULL},
	{"dbStats", NEED_DB, "dbStats", NULL},
	{"listCollections", NEED_SPECIAL, NULL, chk_list_collections},
	{"listDatabases", NEED_SPECIAL, NULL, chk_list_databases},
	{"renameCollection", NEED_SPECIAL, NULL, chk_rename},
	{"createIndexes", NEED_NS, "createIndex", NULL},
	{"dropIndexes", NEED_NS, "dropIndex", NULL},
	{"deleteIndexes", NEED_NS, "dropIndex", NULL},
	{"listIndexes", NEED_NS, "listIndexes", NULL},
	{"validate", NEED_NS, "validate", NULL},
	{"convertToCapped", NEED_NS, "convertToCapped", NULL},
	{"cloneCollectionAsCapped", NEED_SPECIAL, NULL, chk_clone_capped},
	{"compact", NEED_NS, "compact", NULL},
	{"reIndex", NEED_NS, "reIndex", NULL},
	{"dbHash", NEED_DB, "dbHash", NULL},
	{"profile", NEED_DB, "enableProfiler", NULL},
	/* the schema toolbelt (src/toolbelt/): they read what find reads */
	{"tamgaValidationPreview", NEED_NS, "find", NULL},
	{"tamgaInferSchema", NEED_NS, "find", NULL},
	{"tamgaSchemaAdvice", NEED_DB, "dbStats", NULL},
	{"analyze", NEED_NS, "analyze", NULL},
	{"planCacheClear", NEED_NS, "planCacheWrite", NULL},
	{"planCacheClearFilters", NEED_NS, "planCacheIndexFilter", NULL},
	{"planCacheListFilters", NEED_NS, "planCacheIndexFilter", NULL},
	{"planCacheSetFilter", NEED_NS, "planCacheIndexFilter", NULL},
	{"listSearchIndexes", NEED_NS, "listSearchIndexes", NULL},
	{"createSearchIndexes", NEED_NS, "createSearchIndexes", NULL},
	{"dropSearchIndex", NEED_NS, "dropSearchIndex", NULL},
	{"updateSearchIndex", NEED_NS, "updateSearchIndex", NULL},
	/* server administration */
	{"hostInfo", NEED_CLUSTER, "hostInfo", NULL},
	{"serverStatus", NEED_CLUSTER, "serverStatus", NULL},
	{"getParameter", NEED_CLUSTER, "getParameter", NULL},
	{"setParameter", NEED_CLUSTER, "setParameter", NULL},
	{"getCmdLineOpts", NEED_CLUSTER, "getCmdLineOpts", NULL},
	{"getLog", NEED_CLUSTER, "getLog", NULL},
	{"shutdown", NEED_CLUSTER, "shutdown", NULL},
	{"currentOp", NEED_CLUSTER, "inprog", NULL},
	{"killOp", NEED_CLUSTER, "killop", NULL},
	{"top", NEED_CLUSTER, "top", NULL},
	{"getDiagnosticData", NEED_CLUSTER, "serverStatus", NULL},
	{"applyOps", NEED_SPECIAL, NULL, chk_apply_ops},
	{"fsync", NEED_CLUSTER, "fsync", NULL},
	{"logRotate", NEED_CLUSTER, "logRotate", NULL},
	{"getDefaultRWConcern", NEED_CLUSTER, "getDefaultRWConcern", NULL},
	{"setDefaultRWConcern", NEED_CLUSTER, "setDefaultRWConcern", NULL},
	{"replSetGetStatus", NEED_CLUSTER, "replSetGetStatus", NULL},
	{"replSetGetRBID", NEED_CLUSTER, "internal", NULL},
	{"replSetHeartbeat", NEED_CLUSTER, "internal", NULL},
	{"replSetUpdatePosition", NEED_CLUSTER, "internal", NULL},
	{"replSetGetConfig", NEED_CLUSTER, "replSetGetConfig", NULL},
	{"replSetInitiate", NEED_CLUSTER, "replSetConfigure", NULL},
	{"replSetReconfig", NEED_CLUSTER, "replSetConfigure", NULL},
	{"replSetResizeOplog", NEED_CLUSTER, "replSetResizeOplog", NULL},
	{"replSetStepDown", NEED_CLUSTER, "replSetStateChange", NULL},
	{"replSetFreeze", NEED_CLUSTER, "replSetStateChange", NULL},
	{"replSetMaintenance", NEED_CLUSTER, "replSetStateChange", NULL},
	/* mongod: no authentication, no privilege (the command exists only with
	 * enableTestCommands, set on the command line) */
	{"configureFailPoint", NEED_NONE, NULL, NULL},
	/* a member hands another the set's configuration: __system only */
	{"_tamgaReplSetJoin", NEED_CLUSTER, "internal", NULL},
	/* a secondary of higher priority asks the primary for the leadership: __system only */
	{"_tamgaPriorityTakeover", NEED_CLUSTER, "internal", NULL},
	{"_tamgaReplSetRemoved", NEED_CLUSTER, "internal", NULL},
	{"_tamgaReplSetForce", NEED_CLUSTER, "internal", NULL},
	{"connPoolStats", NEED_CLUSTER, "connPoolStats", NULL},
	{"dropConnections", NEED_CLUSTER, "dropConnections", NULL},
	{"invalidateUserCache", NEED_CLUSTER, "invalidateUserCache", NULL},
	{"lockInfo", NEED_CLUSTER, "serverStatus", NULL},
	{"setFeatureCompatibilityVersion", NEED_CLUSTER, "setFeatureCompatibilityVersion", NULL},
	{"getClusterParameter", NEED_CLUSTER, "getClusterParameter", NULL},
	{"setClusterParameter", NEED_CLUSTER, "setClusterParameter", NULL},
	{"rotateCertificates", NEED_CLUSTER, "rotateCertificates", NULL},
	{"listDatabasesForAllTenants", NEED_CLUSTER, "listDatabases", NULL},
	/* users and roles */
	{"createUser", NEED_SPECIAL, NULL, chk_create_user},
	{"updateUser", NEED_SPECIAL, NULL, chk_update_user},
	{"dropUser", NEED_DB, "dropUser", NULL},
	{"dropAllUsersFromDatabase", NEED_DB, "dropUser", NULL},
	{"usersInfo", NEED_SPECIAL, NULL, chk_users_info},
	{"grantRolesToUser", NEED_SPECIAL, NULL, chk_grant_roles},
	{"revokeRolesFromUser", NEED_SPECIAL, NULL, chk_revoke_roles},
	{"createRole", NEED_SPECIAL, NULL, chk_create_role},
	{"updateRole", NEED_SPECIAL, NULL, chk_update_role},
	{"dropRole", NEED_DB, "dropRole", NULL},
	{"dropAllRolesFromDatabase", NEED_DB, "dropRole", NULL},
	{"rolesInfo", NEED_SPECIAL, NULL, chk_roles_info},
	{"grantPrivilegesToRole", NEED_DB, "grantRole", NULL},
	{"revokePrivilegesFromRole", NEED_DB, "revokeRole", NULL},
	{"grantRolesToRole", NEED_SPECIAL, NULL, chk_grant_roles_to_role},
	{"revokeRolesFromRole", NEED_SPECIAL, NULL, chk_revoke_roles_from_role},
};
#define NPRIV ((int)(sizeof(priv_table) / sizeof(priv_table[0])))

static const priv_row_t *priv_lookup(const char *name);

bool
auth_command_known(const char *name)
{
	return priv_lookup(name) != NULL;
}

static const priv_row_t *
priv_lookup(const char *name)
{
	int i;

	for (i = 0; i < NPRIV; i++)
		if (strcmp(priv_table[i].cmd, name) == 0)
			return &priv_table[i];
	return NULL;
}

/* Whether the privileges in k allow the command (name, body) on k->x->db. */
static bool
auth_allows(chk_t *k, const char *name, const bson_t *body)
{
	const priv_row_t *row = priv_lookup(name);

	if (row == NULL)
		return false;
	switch (row->need) {
	case NEED_NONE:
		return true;
	case NEED_AUTHED:
		return k->ac != NULL && k->ac->user != NULL;
	case NEED_NS:
		return can_target(k, body, row->actions);
	case NEED_DB:
		return can_db_all(k, k->x->db, row->actions);
	case NEED_CLUSTER:
		return can_cluster(k, row->actions);
	case NEED_SPECIAL:
		return row->fn(k, body);
	}
	return false;
}

static int
unauthorized(const auth_ctx_t *x, const chk_t *k, terr_t *err)
{
	char *text;

	if (k->fail_code != 0) {
		terr_clear(err);
		return terr_set(err, k->fail_code, "%s", k->fail_msg);
	}
	text = auth_render_bson(x->body);

	terr_set(err, TERR_UNAUTHORIZED, "not authorized on %s to execute command %s", x->db, text);
	bson_free(text);
	return -1;
}

int
auth_check_command(const auth_ctx_t *x, terr_t *err)
{
	const auth_conn_t *conn = x->conn;
	const priv_row_t *row;
	auth_client_t *ac;
	storage_session_t *s;
	chk_t k;

	if (!conn->enabled)
		return 0;
	row = priv_lookup(x->name);
	if (row != NULL && row->need == NEED_NONE)
		return 0;
	ac = auth_client_peek(conn);
	if (ac == NULL || ac->user == NULL) {
		/* the localhost exception (no user and no role stored, a loopback
		 * client): mongod's bootstrap privileges, enough to create the
		 * first user in admin (with roles of admin) and nothing else */
		if (conn->is_local && (s = conn->session(conn->session_arg, err)) != NULL &&
		    !auth_store_any(conn->st, s)) {
			auth_privset_t boot;
			auth_actions_t a;
			bool ok;

			auth_privset_init(&boot);
			memset(&a, 0, sizeof(a));
			auth_actions_add_list(&a, "createUser grantRole");
			auth_privset_add(&boot, AUTH_RES_DB, "admin", NULL, &a);
			memset(&a, 0, sizeof(a));
			/* and rs.initiate(), as mongod's keyFile deployment starts */
			auth_actions_add_list(&a, "replSetGetStatus replSetConfigure");
			auth_privset_add(&boot, AUTH_RES_CLUSTER, NULL, NULL, &a);
			memset(&k, 0, sizeof(k));
			k.x = x;
			k.ac = ac;
			k.ps = &boot;
			ok = row != NULL && auth_allows(&k, row->cmd, x->body);
			auth_privset_destroy(&boot);
			return ok ? 0 : unauthorized(x, &k, err);
		}
		terr_clear(err);
		return terr_set(err, TERR_UNAUTHORIZED, "Command %s requires authentication", x->name);
	}
	if (auth_client_resolve(conn, ac, err) != 0)
		return -1;
	memset(&k, 0, sizeof(k));
	k.x = x;
	k.ac = ac;
	k.ps = &ac->privs;
	if (row == NULL || !auth_allows(&k, row->cmd, x->body))
		return unauthorized(x, &k, err);
	return 0;
}

int
auth_list_databases_filter(const auth_conn_t *conn, const bool *authorized_databases, bool *filter, terr_t *err)
{
	auth_client_t *ac;
	bool all = false;

	*filter = false;
	if (!conn->enabled)
		return 0;
	ac = auth_client_peek(conn);
	if (ac != NULL && ac->user != NULL) {
		if (auth_client_resolve(conn, ac, err) != 0)
			return -1;
		all = auth_privset_allows_cluster(&ac->privs, auth_action_index("listDatabases"));
	}
	if (authorized_databases != NULL) {
		if (!*authorized_databases && !all)
			return terr_set(err, TERR_UNAUTHORIZED, "Insufficient permissions to list all databases");
		*filter = *authorized_databases;
		return 0;
	}
	*filter = !all;
	return 0;
}

bool
auth_db_visible(const auth_conn_t *conn, const char *db)
{
	auth_client_t *ac;
	terr_t err = TERR_INIT;

	if (!conn->enabled)
		return true;
	ac = auth_client_peek(conn);
	if (ac == NULL || ac->user == NULL || auth_client_resolve(conn, ac, &err) != 0) {
		terr_clear(&err);
		return false;
	}
	return auth_privset_touches_db(&ac->privs, db);
}

/* ---- connectionStatus ----------------------------------------------------------------- */

int
auth_connection_status(const auth_conn_t *conn, bool show_privileges, bson_t *auth_info, terr_t *err)
{
	auth_client_t *ac = auth_client_peek(conn);
	auth_rolelist_t all;
	auth_privset_t privs;
	storage_session_t *s;
	bson_t arr, one;
	int ret = 0;

	auth_rolelist_init(&all);
	auth_privset_init(&privs);
	if (ac != NULL && ac->user != NULL) {
		if (auth_client_resolve(conn, ac, err) != 0)
			ERR(-1);
		if ((s = conn->session(conn->session_arg, err)) == NULL)
			ERR(-1);
		ERR(auth_roles_resolve(conn->st, s, &ac->roles, &all, &privs, err));
	}
	BSON_APPEND_ARRAY_BEGIN(auth_info, "authenticatedUsers", &arr);
	if (ac != NULL && ac->user != NULL) {
		BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &one);
		BSON_APPEND_UTF8(&one, "user", ac->user);
		BSON_APPEND_UTF8(&one, "db", ac->db);
		bson_append_document_end(&arr, &one);
	}
	bson_append_array_end(auth_info, &arr);
	auth_rolelist_append(&all, auth_info, "authenticatedUserRoles");
	if (show_privileges)
		auth_privset_append(&privs, auth_info, "authenticatedUserPrivileges");
err:
	auth_rolelist_destroy(&all);
	auth_privset_destroy(&privs);
	return ret;
}
