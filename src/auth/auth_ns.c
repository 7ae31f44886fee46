/*
 * auth_ns.c -- every namespace a command reads or writes, found in its
 * arguments before it runs, with the actions each needs: the one place the
 * privilege check (auth_check.c) learns what an aggregation, a view
 * definition (create with viewOn, collMod with viewOn + pipeline) or an
 * explain of one will touch.
 *
 * A pipeline reads its source (find, unless it starts with $collStats /
 * $indexStats / $listSessions / $listLocalSessions, which need only their own
 * action), every $lookup's and
 * $graphLookup's `from` ("coll" or {db, coll}), every $unionWith's
 * collection, at any depth: inside $lookup and $unionWith sub-pipelines and
 * $facet's pipelines; it writes the target of $out (insert, remove) and
 * $merge (insert, update), with bypassDocumentValidation when the command
 * asks for it; $currentOp needs its cluster action, and $listSessions /
 * $listLocalSessions theirs unless they name only the caller's sessions.
 * These are mongod's LiteParsedPipeline privileges.  A view named in a
 * pipeline is a namespace like any other (mongod's rule: reading a view
 * needs find on the view; whoever defined it needed find on what its
 * definition reads, which create and collMod check here).
 *
 * The walk is over the BSON as sent, not over what the parser will keep:
 * a key that appears twice (BSON allows it) contributes each of its values,
 * and a {db, coll} document every pair, so whichever one the stage parser
 * takes has been checked.  Past the nesting or size bounds below the list
 * is marked `refused` and the check refuses the command.
 */
#include "auth/auth_private.h"

#include <string.h>

/* mongod refuses pipelines nested deeper than this long before; a BSON
 * document cannot nest past 100 levels anyway. */
#define NS_MAX_DEPTH 64
/* Namespaces in one list (a 48 MB command could name millions). */
#define NS_MAX_ENTRIES 100000
/* Values of one key kept per document ({db, coll} pairs multiply). */
#define NS_MAX_DUPLICATES 16

void
auth_nslist_init(auth_nslist_t *l)
{
	memset(l, 0, sizeof(*l));
}

void
auth_nslist_destroy(auth_nslist_t *l)
{
	for (int i = 0; i < l->n; i++) {
		bson_free(l->v[i].db);
		bson_free(l->v[i].coll);
	}
	bson_free(l->v);
	memset(l, 0, sizeof(*l));
}

void
auth_nslist_add(auth_nslist_t *l, auth_res_kind_t kind, const char *db, const char *coll, const char *actions)
{
	auth_ns_t *e;

	if (l->refused)
		return;
	if (l->n >= NS_MAX_ENTRIES) {
		l->refused = true;
		return;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = bson_realloc(l->v, sizeof(*l->v) * (size_t)l->cap);
	}
	e = &l->v[l->n++];
	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->db = db ? bson_strdup(db) : NULL;
	e->coll = coll ? bson_strdup(coll) : NULL;
	auth_actions_add_list(&e->actions, actions);
}

/* ---- the walk ----------------------------------------------------------------------- */

typedef struct walk {
	auth_nslist_t *out;
	const char *db;        /* the command's database: a bare collection name's */
	bool bypass;           /* bypassDocumentValidation asked for */
	int depth;
} walk_t;

static void walk_pipeline(walk_t *w, const char *source, const bson_iter_t *arr);

/* Add every namespace a stage argument names: "coll" (in the command's
 * database) or {db, coll} (each pair of the values it holds).  A value of
 * another type names nothing: the stage parser refuses it. */
static void
add_ns_arg(walk_t *w, const bson_iter_t *v, const char *actions)
{
	const char *dbs[NS_MAX_DUPLICATES], *colls[NS_MAX_DUPLICATES];
	int ndb = 0, ncoll = 0;
	bson_iter_t sub;

	if (BSON_ITER_HOLDS_UTF8(v)) {
		auth_nslist_add(w->out, AUTH_RES_NS, w->db, bson_iter_utf8(v, NULL), actions);
		return;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(v) || !bson_iter_recurse(v, &sub))
		return;
	while (bson_iter_next(&sub)) {
		const char *k = bson_iter_key(&sub);
		bool is_db = strcmp(k, "db") == 0, is_coll = strcmp(k, "coll") == 0;
		if ((!is_db && !is_coll) || !BSON_ITER_HOLDS_UTF8(&sub))
			continue;
		if ((is_db ? ndb : ncoll) == NS_MAX_DUPLICATES) {
			w->out->refused = true;
			return;
		}
		if (is_db)
			dbs[ndb++] = bson_iter_utf8(&sub, NULL);
		else
			colls[ncoll++] = bson_iter_utf8(&sub, NULL);
	}
	if (ndb == 0)
		dbs[ndb++] = w->db;
	for (int i = 0; i < ndb; i++)
		for (int j = 0; j < ncoll; j++)
			auth_nslist_add(w->out, AUTH_RES_NS, dbs[i], colls[j], actions);
}

/* The collection a stage's sub-pipeline reads: its first string `key`
 * (the sub-pipeline's $collStats / $indexStats apply to it), or NULL. */
static const char *
string_field(const bson_iter_t *doc, const char *key)
{
	bson_iter_t sub;

	if (!BSON_ITER_HOLDS_DOCUMENT(doc) || !bson_iter_recurse(doc, &sub))
		return NULL;
	while (bson_iter_next(&sub))
		if (strcmp(bson_iter_key(&sub), key) == 0 && BSON_ITER_HOLDS_UTF8(&sub))
			return bson_iter_utf8(&sub, NULL);
	return NULL;
}

/* $lookup and $graphLookup: find on every `from`; a $lookup's pipeline
 * reads what its stages read. */
static void
stage_lookup(walk_t *w, const char *source, const bson_iter_t *arg)
{
	const char *from = string_field(arg, "from");
	bson_iter_t sub;

	(void)source;
	if (!BSON_ITER_HOLDS_DOCUMENT(arg) || !bson_iter_recurse(arg, &sub))
		return;
	while (bson_iter_next(&sub)) {
		if (strcmp(bson_iter_key(&sub), "from") == 0)
			add_ns_arg(w, &sub, "find");
		else if (strcmp(bson_iter_key(&sub), "pipeline") == 0)
			walk_pipeline(w, from, &sub);
	}
}

/* $unionWith: "coll" or {coll, pipeline}; the collection is in the
 * command's database. */
static void
stage_union_with(walk_t *w, const char *source, const bson_iter_t *arg)
{
	const char *coll = string_field(arg, "coll");
	bson_iter_t sub;

	(void)source;
	if (BSON_ITER_HOLDS_UTF8(arg)) {
		add_ns_arg(w, arg, "find");
		return;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(arg) || !bson_iter_recurse(arg, &sub))
		return;
	while (bson_iter_next(&sub)) {
		if (strcmp(bson_iter_key(&sub), "coll") == 0)
			add_ns_arg(w, &sub, "find");
		else if (strcmp(bson_iter_key(&sub), "pipeline") == 0)
			walk_pipeline(w, coll, &sub);
	}
}

/* $facet: each field a pipeline over the stage's input. */
static void
stage_facet(walk_t *w, const char *source, const bson_iter_t *arg)
{
	bson_iter_t sub;

	if (!BSON_ITER_HOLDS_DOCUMENT(arg) || !bson_iter_recurse(arg, &sub))
		return;
	while (bson_iter_next(&sub))
		walk_pipeline(w, source, &sub);
}

/* $out: "coll" or {db, coll[, timeseries]}: replaces the target. */
static void
stage_out(walk_t *w, const char *source, const bson_iter_t *arg)
{
	(void)source;
	add_ns_arg(w, arg, w->bypass ? "insert remove bypassDocumentValidation" : "insert remove");
}

/* $merge: "coll" or {into: "coll" | {db, coll}, ...}. */
static void
stage_merge(walk_t *w, const char *source, const bson_iter_t *arg)
{
	const char *acts = w->bypass ? "insert update bypassDocumentValidation" : "insert update";
	bson_iter_t sub;

	(void)source;
	if (BSON_ITER_HOLDS_UTF8(arg)) {
		add_ns_arg(w, arg, acts);
		return;
	}
	if (!BSON_ITER_HOLDS_DOCUMENT(arg) || !bson_iter_recurse(arg, &sub))
		return;
	while (bson_iter_next(&sub))
		if (strcmp(bson_iter_key(&sub), "into") == 0)
			add_ns_arg(w, &sub, acts);
}

static void
stage_current_op(walk_t *w, const char *source, const bson_iter_t *arg)
{
	(void)source;
	(void)arg;
	auth_nslist_add(w->out, AUTH_RES_CLUSTER, NULL, NULL, "inprog");
}

/* Whether a users element of a $listSessions spec names someone other
 * than the asking user.  An element the stage's parser refuses (not a
 * document, a field other than user/db or not a string, one missing) names
 * no one: the command fails with the parser's error, as mongod's, whose
 * lite parse runs before the privilege check. */
static bool
names_other(const auth_nslist_t *out, const bson_iter_t *el)
{
	bson_iter_t f;
	bool user = false, db = false, other = false;

	if (!BSON_ITER_HOLDS_DOCUMENT(el) || !bson_iter_recurse(el, &f))
		return false;
	while (bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f), *v, *want;
		bool is_user = strcmp(k, "user") == 0;
		uint32_t len;
		if ((!is_user && strcmp(k, "db") != 0) || !BSON_ITER_HOLDS_UTF8(&f))
			return false;
		v = bson_iter_utf8(&f, &len);
		want = is_user ? out->self_user : out->self_db;
		/* the length too: a name with a NUL inside is someone else's */
		if (want == NULL || len != strlen(want) || memcmp(v, want, len) != 0)
			other = true;
		*(is_user ? &user : &db) = true;
	}
	return user && db && other;
}

/* $listSessions / $listLocalSessions: mongod's
 * listSessionsRequiredPrivileges -- listSessions on the cluster for
 * {allUsers: true} or a users list naming anyone but the asking user;
 * nothing for the caller's own sessions ({}, allUsers: false, users:
 * [self]).  Every occurrence of a repeated field counts.  A field of the
 * wrong type is the parser's to refuse (mongod parses before it checks). */
static void
stage_list_sessions(walk_t *w, const char *source, const bson_iter_t *arg)
{
	bson_iter_t f, el;
	bool need = false;

	(void)source;
	if (!BSON_ITER_HOLDS_DOCUMENT(arg) || !bson_iter_recurse(arg, &f))
		return;
	while (!need && bson_iter_next(&f)) {
		const char *k = bson_iter_key(&f);
		if (strcmp(k, "allUsers") == 0)
			need = BSON_ITER_HOLDS_BOOL(&f) && bson_iter_bool(&f);
		else if (strcmp(k, "users") == 0 && BSON_ITER_HOLDS_ARRAY(&f) && bson_iter_recurse(&f, &el))
			while (!need && bson_iter_next(&el))
				need = names_other(w->out, &el);
	}
	if (need)
		auth_nslist_add(w->out, AUTH_RES_CLUSTER, NULL, NULL, "listSessions");
}

/* $collStats / $indexStats: their action on the collection the pipeline
 * reads (none for a collectionless one: the stage parser refuses it). */
static void
stage_coll_stats(walk_t *w, const char *source, const bson_iter_t *arg)
{
	(void)arg;
	auth_nslist_add(w->out, AUTH_RES_NS, w->db, source ? source : "", "collStats");
}

static void
stage_index_stats(walk_t *w, const char *source, const bson_iter_t *arg)
{
	(void)arg;
	auth_nslist_add(w->out, AUTH_RES_NS, w->db, source ? source : "", "indexStats");
}

typedef void (*stage_ns_fn)(walk_t *w, const char *source, const bson_iter_t *arg);

/* The stages that touch a namespace besides their input, or need a
 * privilege of their own.  Every other stage reads only its input. */
static const struct {
	const char *name;
	stage_ns_fn fn;
} stage_table[] = {
	{"$lookup", stage_lookup},
	{"$graphLookup", stage_lookup},
	{"$unionWith", stage_union_with},
	{"$facet", stage_facet},
	{"$out", stage_out},
	{"$merge", stage_merge},
	{"$currentOp", stage_current_op},
	{"$listLocalSessions", stage_list_sessions},
	{"$listSessions", stage_list_sessions},
	{"$collStats", stage_coll_stats},
	{"$indexStats", stage_index_stats},
};

/* Every stage of arr (an array; anything else names nothing: the parser
 * refuses it) over source (the collection it reads, NULL when none). */
static void
walk_pipeline(walk_t *w, const char *source, const bson_iter_t *arr)
{
	bson_iter_t el, s;

	if (w->out->refused)
		return;
	if (++w->depth > NS_MAX_DEPTH) {
		w->out->refused = true;
		w->depth--;
		return;
	}
	if (BSON_ITER_HOLDS_ARRAY(arr) && bson_iter_recurse(arr, &el)) {
		while (bson_iter_next(&el) && !w->out->refused) {
			/* a stage document holds one field; should it hold more (the
			 * parser refuses it: 40323), each is walked all the same */
			if (!BSON_ITER_HOLDS_DOCUMENT(&el) || !bson_iter_recurse(&el, &s))
				continue;
			while (bson_iter_next(&s)) {
				const char *name = bson_iter_key(&s);
				for (size_t i = 0; i < sizeof(stage_table) / sizeof(stage_table[0]); i++)
					if (strcmp(stage_table[i].name, name) == 0)
						stage_table[i].fn(w, source, &s);
			}
		}
	}
	w->depth--;
}

/* The first stage's name, or NULL. */
static const char *
first_stage(const bson_iter_t *arr)
{
	bson_iter_t el, s;

	if (BSON_ITER_HOLDS_ARRAY(arr) && bson_iter_recurse(arr, &el) && bson_iter_next(&el) &&
	    BSON_ITER_HOLDS_DOCUMENT(&el) && bson_iter_recurse(&el, &s) && bson_iter_next(&s))
		return bson_iter_key(&s);
	return NULL;
}

void
auth_pipeline_namespaces(auth_nslist_t *out, const char *db, const char *source, const bson_iter_t *pipeline,
                         bool bypass)
{
	walk_t w;
	const char *first = pipeline != NULL ? first_stage(pipeline) : NULL;

	memset(&w, 0, sizeof(w));
	w.out = out;
	w.db = db;
	w.bypass = bypass;
	/* the source is read unless the pipeline starts with a stage that
	 * produces its own documents (mongod's isInitialSource: $collStats,
	 * $indexStats, $listSessions, $listLocalSessions, which need only their
	 * own action) */
	if (first != NULL && strcmp(first, "$changeStream") == 0) {
		/* mongod's change-stream privileges: the collection, the
		 * database, or (on admin, the whole deployment) every normal
		 * namespace, each with changeStream and find */
		if (source != NULL)
			auth_nslist_add(out, AUTH_RES_NS, db, source, "changeStream find");
		else if (strcmp(db, "admin") == 0)
			auth_nslist_add(out, AUTH_RES_ANY_NORMAL, NULL, NULL, "changeStream find");
		else
			auth_nslist_add(out, AUTH_RES_DB, db, NULL, "changeStream find");
	} else if (source != NULL && !(first != NULL && (strcmp(first, "$collStats") == 0 ||
	    strcmp(first, "$indexStats") == 0 || strcmp(first, "$listSessions") == 0 ||
	    strcmp(first, "$listLocalSessions") == 0)))
		auth_nslist_add(out, AUTH_RES_NS, db, source, "find");
	if (pipeline != NULL)
		walk_pipeline(&w, source, pipeline);
}

bool
auth_body_any_true(const bson_t *body, const char *field)
{
	bson_iter_t it;

	if (!bson_iter_init(&it, body))
		return false;
	while (bson_iter_next(&it))
		if (strcmp(bson_iter_key(&it), field) == 0 && bson_iter_as_bool(&it))
			return true;
	return false;
}

void
auth_aggregate_namespaces(auth_nslist_t *out, const char *db, const bson_t *body)
{
	bson_iter_t it, first;
	const char *source = NULL;
	bool bypass = auth_body_any_true(body, "bypassDocumentValidation"), any = false;

	if (bson_iter_init(&first, body) && bson_iter_next(&first) && BSON_ITER_HOLDS_UTF8(&first))
		source = bson_iter_utf8(&first, NULL);
	if (!bson_iter_init(&it, body))
		return;
	/* every `pipeline` field (a duplicate one too) */
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "pipeline") != 0)
			continue;
		any = true;
		auth_pipeline_namespaces(out, db, source, &it, bypass);
	}
	if (!any)
		auth_pipeline_namespaces(out, db, source, NULL, bypass);
}

void
auth_view_namespaces(auth_nslist_t *out, const char *db, const bson_t *body)
{
	const char *view_on[NS_MAX_DUPLICATES];
	int nv = 0, np = 0;
	bson_iter_t it;

	/* the first element names the view: skipped */
	if (!bson_iter_init(&it, body) || !bson_iter_next(&it))
		return;
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "viewOn") != 0 || !BSON_ITER_HOLDS_UTF8(&it))
			continue;
		if (nv == NS_MAX_DUPLICATES) {
			out->refused = true;
			return;
		}
		view_on[nv++] = bson_iter_utf8(&it, NULL);
	}
	/* a view is read as an aggregation of viewOn with its pipeline (each
	 * pair when a field repeats); without a pipeline, the empty one */
	if (!bson_iter_init(&it, body) || !bson_iter_next(&it))
		return;
	while (bson_iter_next(&it)) {
		if (strcmp(bson_iter_key(&it), "pipeline") != 0)
			continue;
		np++;
		for (int i = 0; i < nv; i++)
			auth_pipeline_namespaces(out, db, view_on[i], &it, false);
	}
	if (np == 0)
		for (int i = 0; i < nv; i++)
			auth_pipeline_namespaces(out, db, view_on[i], NULL, false);
}

bool
auth_nslist_allowed(const auth_nslist_t *l, const auth_privset_t *ps)
{
	if (l->refused)
		return false;
	for (int i = 0; i < l->n; i++) {
		const auth_ns_t *e = &l->v[i];
		for (int a = 0; a < auth_action_count(); a++) {
			if (!auth_actions_has(&e->actions, a))
				continue;
			if (e->kind == AUTH_RES_CLUSTER ? !auth_privset_allows_cluster(ps, a) :
			    e->kind == AUTH_RES_DB || e->kind == AUTH_RES_ANY_NORMAL ?
			    !auth_privset_allows_pattern(ps, e->kind, e->db, a) :
			    !auth_privset_allows_ns(ps, e->db, e->coll, a))
				return false;
		}
	}
	return true;
}
