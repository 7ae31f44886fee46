/*
 * cmd_currentop.c -- `currentOp` and `killOp`: the running operations, as
 * mongod lists and interrupts them.
 *
 * Every command is an operation of common/opctx.h's registry (begun by the
 * dispatcher); currentOp builds mongod's document for each one (opid,
 * active, op, ns, command, secs_running, microsecs_running, client,
 * connectionId, desc, killPending, ...) and filters them with the request's
 * remaining fields as a match expression, as mongod runs
 * [{$currentOp}, {$match: <those fields>}].  killOp marks an operation; its
 * loops answer 11601 Interrupted at their next check.
 *
 * What is not here: idle connections and system threads ($all lists the
 * same running operations), lock statistics (Tamga has no lock manager to
 * report: locks and lockStats are empty), and killOp of
 * another user's operation without the killop privilege (refused by the
 * privilege table rather than allowed for co-authorized users).
 */
#include "commands/commands_private.h"

#include <inttypes.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "bson/value.h"
#include "common/log.h"
#include "query/match.h"

/* mongod's `op` of a command */
static const struct {
	const char *cmd;
	const char *op;
} op_kinds[] = {
	{"find", "query"},
	{"getMore", "getmore"},
	{"insert", "insert"},
	{"update", "update"},
	{"delete", "remove"},
	{NULL, NULL},
};

/* Commands that change what the client reports about itself (metadata,
 * users): while one runs, another thread must not read those. */
static const char *const identity_cmds[] = {
	"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "logout", NULL,
};

static bool
in_list(const char *const *l, const char *s)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, s) == 0)
			return true;
	return false;
}

static const char *
op_kind(const char *name)
{
	for (int i = 0; op_kinds[i].cmd != NULL; i++)
		if (strcmp(op_kinds[i].cmd, name) == 0)
			return op_kinds[i].op;
	return "command";
}

static void
append_iso_now(bson_t *b, const char *key)
{
	struct timeval tv;
	struct tm tm;
	char buf[64], tz[8];

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(tz, sizeof(tz), "%z", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%03d%.3s:%s", (int)(tv.tv_usec / 1000), tz,
	    tz + 3);
	BSON_APPEND_UTF8(b, key, buf);
}

static void
append_number(bson_t *b, const char *key, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX)
		BSON_APPEND_INT32(b, key, (int32_t)v);
	else
		BSON_APPEND_INT64(b, key, v);
}

typedef struct list_ctx {
	cmd_t *self;
	bool own_only;
	const char *own_user;      /* "user@db" of the caller, NULL = none */
	const match_t *filter;
	bson_t *arr;
	uint32_t n;
	terr_t *err;
	int rc;
} list_ctx_t;

/* One operation's document, in mongod's field order. */
static void
op_doc(const tm_opctx_t *op, cmd_t *oc, bool identity_safe, bson_t *d)
{
	int64_t now = tm_now_us(), us = now - op->start_us;
	client_t *cl = oc->client;
	char desc[64], ns[600];
	const char *coll = NULL;
	bson_iter_t it;

	BSON_APPEND_UTF8(d, "type", "op");
	if (cl != NULL && cl->connection_id > 0) {
		snprintf(desc, sizeof(desc), "conn%" PRId64, cl->connection_id);
		BSON_APPEND_UTF8(d, "desc", desc);
		append_number(d, "connectionId", cl->connection_id);
	} else {
		BSON_APPEND_UTF8(d, "desc", "embedded");
	}
	if (cl != NULL && cl->remote != NULL)
		BSON_APPEND_UTF8(d, "client", cl->remote);
	if (identity_safe && cl != NULL && cl->metadata != NULL) {
		if (bson_iter_init_find(&it, cl->metadata, "application") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
			bson_iter_t a;
			if (bson_iter_recurse(&it, &a) && bson_iter_find(&a, "name") && BSON_ITER_HOLDS_UTF8(&a))
				BSON_APPEND_UTF8(d, "appName", bson_iter_utf8(&a, NULL));
		}
		BSON_APPEND_DOCUMENT(d, "clientMetadata", cl->metadata);
	}
	BSON_APPEND_BOOL(d, "active", true);
	append_iso_now(d, "currentOpTime");
	/* mongod's effectiveUsers: who the operation runs as.  The owner's
	 * thread is inside this operation, so its login does not change
	 * under us -- except in the commands that change it (skipped). */
	if (cl != NULL && oc->name != NULL && strcmp(oc->name, "authenticate") != 0 &&
	    strcmp(oc->name, "saslStart") != 0 && strcmp(oc->name, "saslContinue") != 0 &&
	    strcmp(oc->name, "logout") != 0) {
		auth_client_t *ac = auth_client_peek(&cl->auth);
		if (ac != NULL && ac->user != NULL) {
			bson_t arr, u;
			BSON_APPEND_ARRAY_BEGIN(d, "effectiveUsers", &arr);
			BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &u);
			BSON_APPEND_UTF8(&u, "user", ac->user);
			BSON_APPEND_UTF8(&u, "db", ac->db);
			bson_append_document_end(&arr, &u);
			bson_append_array_end(d, &arr);
		}
	}
	BSON_APPEND_BOOL(d, "threaded", true);
	BSON_APPEND_INT32(d, "opid", op->opid);
	BSON_APPEND_INT64(d, "secs_running", us / 1000000);
	BSON_APPEND_INT64(d, "microsecs_running", us);
	BSON_APPEND_UTF8(d, "op", oc->name != NULL ? op_kind(oc->name) : "none");
	if (oc->name != NULL && BSON_ITER_HOLDS_UTF8(&oc->first) && oc->db != NULL)
		coll = bson_iter_utf8(&oc->first, NULL);
	if (oc->db != NULL) {
		snprintf(ns, sizeof(ns), "%s.%s", oc->db, coll != NULL ? coll : "$cmd");
		BSON_APPEND_UTF8(d, "ns", ns);
	}
	BSON_APPEND_BOOL(d, "redacted", false);
	if (oc->body != NULL)
		BSON_APPEND_DOCUMENT(d, "command", oc->body);
	BSON_APPEND_INT32(d, "numYields", 0);
	{
		bson_t e;
		BSON_APPEND_DOCUMENT_BEGIN(d, "locks", &e);
		bson_append_document_end(d, &e);
		BSON_APPEND_BOOL(d, "waitingForLock", false);
		BSON_APPEND_DOCUMENT_BEGIN(d, "lockStats", &e);
		bson_append_document_end(d, &e);
		BSON_APPEND_BOOL(d, "waitingForFlowControl", false);
		BSON_APPEND_DOCUMENT_BEGIN(d, "flowControlStats", &e);
		bson_append_document_end(d, &e);
	}
	if (tm_opctx_kill_pending(op))
		BSON_APPEND_BOOL(d, "killPending", true);
}

static void
list_one(const tm_opctx_t *op, void *arg)
{
	list_ctx_t *lc = arg;
	cmd_t *oc = op->owner;
	bool identity_safe;
	bson_t d;
	char key[16];
	const char *k;

	if (lc->rc != 0 || oc == NULL)
		return;
	identity_safe = oc == lc->self || oc->name == NULL || !in_list(identity_cmds, oc->name);
	if (lc->own_only) {
		char buf[256];
		const char *u;
		if (!identity_safe)
			return;
		u = cmd_cursor_owner(oc, buf);
		if ((u == NULL) != (lc->own_user == NULL) || (u != NULL && strcmp(u, lc->own_user) != 0))
			return;
	}
	bson_init(&d);
	op_doc(op, oc, identity_safe, &d);
	if (lc->filter != NULL) {
		int m = match_exec(lc->filter, &d, NULL, lc->err);
		if (m < 0) {
			lc->rc = -1;
			bson_destroy(&d);
			return;
		}
		if (m == 0) {
			bson_destroy(&d);
			return;
		}
	}
	bson_uint32_to_string(lc->n++, &k, key, sizeof(key));
	bson_append_document(lc->arr, k, -1, &d);
	bson_destroy(&d);
}

CMD_HANDLER(cmd_current_op)
{
	bson_t filter, arr;
	bson_iter_t it;
	match_t *m = NULL;
	list_ctx_t lc;
	char own_buf[256];
	int ret = 0;

	memset(&lc, 0, sizeof(lc));
	bson_init(&filter);
	bson_iter_init(&it, c->body);
	bson_iter_next(&it);    /* currentOp: 1 */
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "$all") == 0)
			continue;       /* idle connections are not tracked: the same running operations */
		if (strcmp(k, "$ownOps") == 0) {
			lc.own_only = bson_iter_as_bool(&it);
			continue;
		}
		if (cmd_is_generic_field(k))
			continue;
		bson_append_iter(&filter, k, -1, &it);
	}
	if (!bson_empty(&filter)) {
		match_options_t mo;
		memset(&mo, 0, sizeof(mo));
		ERR(match_compile(&filter, &mo, &m, err));
	}
	lc.self = c;
	lc.own_user = lc.own_only ? cmd_cursor_owner(c, own_buf) : NULL;
	lc.filter = m;
	lc.err = err;
	BSON_APPEND_ARRAY_BEGIN(c->reply, "inprog", &arr);
	lc.arr = &arr;
	tm_opctx_foreach(list_one, &lc);
	bson_append_array_end(c->reply, &arr);
	ret = lc.rc;
err:
	match_free(m);
	bson_destroy(&filter);
	return ret;
}

void
cmd_current_op_docs(cmd_t *c, bool all_users, bson_t *arr)
{
	list_ctx_t lc;
	char own_buf[256];
	terr_t e = TERR_INIT;

	memset(&lc, 0, sizeof(lc));
	lc.self = c;
	lc.own_only = !all_users;
	lc.own_user = lc.own_only ? cmd_cursor_owner(c, own_buf) : NULL;
	lc.err = &e;
	lc.arr = arr;
	tm_opctx_foreach(list_one, &lc);
	terr_clear(&e);
}

CMD_HANDLER(cmd_kill_op)
{
	bson_iter_t it;
	int64_t op;

	/* mongod: bsonExtractIntegerField(cmd, "op"), then the 32-bit check */
	if (!cmd_find_field(c, "op", &it))
		return terr_set(err, TERR_NO_SUCH_KEY, "Missing expected field \"op\"");
	if (!BSON_ITER_HOLDS_INT32(&it) && !BSON_ITER_HOLDS_INT64(&it) && !BSON_ITER_HOLDS_DOUBLE(&it) &&
	    !BSON_ITER_HOLDS_DECIMAL128(&it))
		return terr_set(err, TERR_TYPE_MISMATCH, "Expected field \"op\" to have numeric type, but found %s",
		    bv_type_name(bson_iter_type(&it)));
	if (BSON_ITER_HOLDS_INT32(&it)) {
		op = bson_iter_int32(&it);
	} else if (BSON_ITER_HOLDS_INT64(&it)) {
		op = bson_iter_int64(&it);
	} else if (BSON_ITER_HOLDS_DOUBLE(&it)) {
		double d = bson_iter_double(&it);
		if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
			return terr_set(err, TERR_BAD_VALUE,
			    "Expected field \"op\" to have a value exactly representable as a 64-bit integer, but "
			    "found op: %g", d);
		op = (int64_t)d;
	} else {
		return terr_set(err, TERR_BAD_VALUE,
		    "Expected field \"op\" to have a value exactly representable as a 64-bit integer");
	}
	if (op < INT32_MIN || op > INT32_MAX)
		return terr_set(err, 26823, "invalid op : %" PRId64 ". Op ID cannot be represented with 32 bits", op);
	{
		bson_t attr = BSON_INITIALIZER;
		BSON_APPEND_INT64(&attr, "op", op);
		tlog('I', "COMMAND", 20482, "Going to kill op", &attr);
		bson_destroy(&attr);
	}
	(void)tm_opctx_kill((int32_t)op);
	/* killOp always reports success past its checks, as mongod */
	BSON_APPEND_UTF8(c->reply, "info", "attempting to kill op");
	return 0;
}
