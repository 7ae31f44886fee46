/*
 * view.c -- read-only views, as mongod has them.
 *
 * A view is a name, a source (viewOn: a collection or another view of the
 * same database) and a pipeline; storage keeps only the definition
 * (storage_view_*).  Reading a view runs an aggregation on the collection at
 * the end of the viewOn chain with the views' pipelines in front (innermost
 * first) of what the reader asked for.  find, count and distinct on a view
 * become that aggregation the way mongod converts them (asAggregationCommand):
 * find's options that aggregation lacks are refused with 168, count ends in
 * $count, distinct unwinds the key's path and collects it with $addToSet.
 * Everything that writes, indexes or reads storage sizes answers 166
 * CommandNotSupportedOnView.  mongod's collation rules: a pipeline's views
 * (and a view's: its viewOn, its pipeline's joins, the views that read it)
 * share one default collation, 167 otherwise.  system.views mirrors the
 * definitions as mongod's own store of them.
 *
 * Not here: the aggregate command itself (cmd_aggregate.c), which calls
 * view_resolve; how views are stored (storage/catalog.c).
 */
#include "commands/commands_private.h"

#include <string.h>

#include "agg/pipeline.h"
#include "bson/collation.h"
#include "bson/value.h"
#include "commands/write.h"
#include "common/log.h"
#include "common/mem.h"

CMD_HANDLER(cmd_aggregate);

#define VIEW_MAX_DEPTH AGG_VIEW_MAX_DEPTH

static const coll_t *def_collation(const bson_t *def);

int
view_resolve(cmd_t *c, const char *name, view_t *v, terr_t *err)
{
	bson_t def;
	int rc;

	memset(v, 0, sizeof(*v));
	rc = agg_view_resolve(c->engine->st, c->db, name, &v->base, &v->pipeline, err);
	if (rc == 1 && storage_view_get(c->engine->st, c->db, name, &def) == 0) {
		v->collation = def_collation(&def);
		bson_destroy(&def);
	}
	return rc;
}

int
view_check_involved(cmd_t *c, const bson_t *stages, const coll_t *coll, terr_t *err)
{
	bson_t names = BSON_INITIALIZER, def;
	bson_iter_t it;
	int n = 0, ret = 0;

	agg_pipeline_involved(stages, &names, &n);
	bson_iter_init(&it, &names);
	while (ret == 0 && bson_iter_next(&it)) {
		const char *name = bson_iter_utf8(&it, NULL);
		if (storage_view_get(c->engine->st, c->db, name, &def) != 0)
			continue;
		if (def_collation(&def) != coll)
			ret = terr_set(err, TERR_OPTION_NOT_SUPPORTED_ON_VIEW,
			    "Cannot override a view's default collation%s.%s", c->db, name);
		bson_destroy(&def);
	}
	bson_destroy(&names);
	return ret;
}

void
view_free(view_t *v)
{
	if (v->base != NULL)
		bson_destroy(&v->pipeline);
	bson_free(v->base);
	v->base = NULL;
}

bool
view_exists(cmd_t *c, const char *db, const char *name)
{
	bson_t def;

	if (storage_view_get(c->engine->st, db, name, &def) != 0)
		return false;
	bson_destroy(&def);
	return true;
}

int
view_refuse(cmd_t *c, const char *db, const char *name, terr_t *err)
{
	if (!view_exists(c, db, name))
		return 0;
	return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "Namespace %s.%s is a view, not a collection",
	    db, name);
}

/* ---- find, count, distinct as aggregations -------------------------------- */

/* Fields copied from the read command to the aggregate as they are. */
static const char *const passed_fields[] = {
	"hint", "collation", "let", "allowDiskUse", "readConcern", "comment", "maxTimeMS", "$db",
	"$_explainVerbosity", NULL,
};

/* find options aggregation does not have: 168 "Option <f> not supported in
 * aggregation." when present with a value that asks for them.  A token to
 * resume from is refused there too (mongod's timeseries_resume_after.js:
 * InvalidPipelineOperator for a find over the time-series collection, as
 * over a view before 8.1). */
static const char *const find_refused[] = {
	"min", "max", "returnKey", "showRecordId", "oplogReplay", "noCursorTimeout",
	"allowPartialResults", "readOnce", "allowSpeculativeMajorityRead", "$_resumeAfter", "$_startAt", NULL,
};

static bool
is_set(const bson_iter_t *it)
{
	if (BSON_ITER_HOLDS_DOCUMENT(it)) {
		bson_t d;
		const uint8_t *p;
		uint32_t l;
		bson_iter_document(it, &l, &p);
		return bson_init_static(&d, p, l) && !bson_empty(&d);
	}
	return bson_iter_as_bool(it);
}

/* The end of an aggregate made from the read command cmd: the cursor (with
 * find's batchSize) and the fields passed on as they are. */
static void
finish_aggregate(const bson_t *cmd, bson_t *agg)
{
	bson_iter_t it;
	bson_t cursor;

	bson_append_document_begin(agg, "cursor", -1, &cursor);
	if (bson_iter_init_find(&it, cmd, "batchSize"))
		bson_append_iter(&cursor, "batchSize", -1, &it);
	bson_append_document_end(agg, &cursor);
	for (int i = 0; passed_fields[i] != NULL; i++)
		if (bson_iter_init_find(&it, cmd, passed_fields[i]))
			bson_append_iter(agg, passed_fields[i], -1, &it);
}

static void
append_stage(bson_t *pipe, int *n, const char *stage, const bson_iter_t *arg)
{
	char key[16];
	bson_t st;

	bson_snprintf(key, sizeof(key), "%d", (*n)++);
	bson_append_document_begin(pipe, key, -1, &st);
	bson_append_iter(&st, stage, -1, arg);
	bson_append_document_end(pipe, &st);
}

/* The find command body as the aggregate mongod runs on a view. */
static int
find_as_aggregate(const bson_t *find, const char *view_name, bson_t *agg, terr_t *err)
{
	static const char *const stages[][2] = {
		{"filter", "$match"}, {"sort", "$sort"}, {"skip", "$skip"}, {"limit", "$limit"},
		{"projection", "$project"},
	};
	bson_iter_t it;
	bson_t pipe;
	int n = 0;
	int64_t limit = 0;

	for (int i = 0; find_refused[i] != NULL; i++)
		if (bson_iter_init_find(&it, find, find_refused[i]) && is_set(&it))
			return terr_set(err, TERR_INVALID_PIPELINE_OPERATOR, "Option %s not supported in aggregation.",
			    find_refused[i]);
	if (bson_iter_init_find(&it, find, "tailable") && bson_iter_as_bool(&it))
		return terr_set(err, TERR_INVALID_PIPELINE_OPERATOR, "Tailable cursors are not supported in aggregation.");
	if (bson_iter_init_find(&it, find, "sort") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_t s;
		if (bson_iter_recurse(&it, &s) && bson_iter_find(&s, "$natural"))
			return terr_set(err, TERR_INVALID_PIPELINE_OPERATOR,
			    "Sort option $natural not supported in aggregation.");
	}
	if (bson_iter_init_find(&it, find, "limit") && BSON_ITER_HOLDS_NUMBER(&it))
		limit = bson_iter_as_int64(&it);
	/* singleBatch only as findOne sends it, with limit 1 */
	if (bson_iter_init_find(&it, find, "singleBatch") && bson_iter_as_bool(&it) && limit != 1)
		return terr_set(err, TERR_INVALID_PIPELINE_OPERATOR, "Option singleBatch not supported in aggregation.");

	bson_init(agg);
	BSON_APPEND_UTF8(agg, "aggregate", view_name);
	bson_append_array_begin(agg, "pipeline", -1, &pipe);
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		if (!bson_iter_init_find(&it, find, stages[i][0]))
			continue;
		if (BSON_ITER_HOLDS_DOCUMENT(&it) && !is_set(&it))
			continue;   /* {} filter, sort or projection: no stage */
		if (BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) == 0 &&
		    (strcmp(stages[i][0], "skip") == 0 || strcmp(stages[i][0], "limit") == 0))
			continue;   /* 0 means none */
		append_stage(&pipe, &n, stages[i][1], &it);
	}
	bson_append_array_end(agg, &pipe);
	finish_aggregate(find, agg);
	return 0;
}

/* count: [$match query] [$skip] [$limit] {$count: "count"}. */
static void
count_as_aggregate(const bson_t *count, const char *view_name, bson_t *agg)
{
	bson_iter_t it;
	bson_t pipe, st;
	int n = 0;

	bson_init(agg);
	BSON_APPEND_UTF8(agg, "aggregate", view_name);
	bson_append_array_begin(agg, "pipeline", -1, &pipe);
	if (bson_iter_init_find(&it, count, "query") && BSON_ITER_HOLDS_DOCUMENT(&it) && is_set(&it))
		append_stage(&pipe, &n, "$match", &it);
	if (bson_iter_init_find(&it, count, "skip") && BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) > 0)
		append_stage(&pipe, &n, "$skip", &it);
	if (bson_iter_init_find(&it, count, "limit") && BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) != 0) {
		int64_t l = bson_iter_as_int64(&it);
		char key[16];
		bson_snprintf(key, sizeof(key), "%d", n++);
		bson_append_document_begin(&pipe, key, -1, &st);
		BSON_APPEND_INT64(&st, "$limit", l < 0 ? -l : l);
		bson_append_document_end(&pipe, &st);
	}
	{
		char key[16];
		bson_snprintf(key, sizeof(key), "%d", n++);
		bson_append_document_begin(&pipe, key, -1, &st);
		BSON_APPEND_UTF8(&st, "$count", "count");
		bson_append_document_end(&pipe, &st);
	}
	bson_append_array_end(agg, &pipe);
	finish_aggregate(count, agg);
}

/* distinct: [$match query], one $unwind (keeping null and empty arrays) per
 * prefix of the key's path, then {$group: {_id: null, distinct: {$addToSet:
 * "$key"}}}. */
static void
distinct_as_aggregate(const bson_t *distinct, const char *view_name, const char *key_path, bson_t *agg)
{
	bson_iter_t it;
	bson_t pipe, st, sub, acc;
	char key[16], *path = bson_strdup_printf("$%s", key_path);
	int n = 0;

	bson_init(agg);
	BSON_APPEND_UTF8(agg, "aggregate", view_name);
	bson_append_array_begin(agg, "pipeline", -1, &pipe);
	if (bson_iter_init_find(&it, distinct, "query") && BSON_ITER_HOLDS_DOCUMENT(&it) && is_set(&it))
		append_stage(&pipe, &n, "$match", &it);
	for (char *p = path;; p++) {
		if (*p != '.' && *p != '\0')
			continue;
		bson_snprintf(key, sizeof(key), "%d", n++);
		bson_append_document_begin(&pipe, key, -1, &st);
		bson_append_document_begin(&st, "$unwind", -1, &sub);
		bson_append_utf8(&sub, "path", -1, path, (int)(p - path));
		BSON_APPEND_BOOL(&sub, "preserveNullAndEmptyArrays", true);
		bson_append_document_end(&st, &sub);
		bson_append_document_end(&pipe, &st);
		if (*p == '\0')
			break;
	}
	bson_snprintf(key, sizeof(key), "%d", n++);
	bson_append_document_begin(&pipe, key, -1, &st);
	bson_append_document_begin(&st, "$group", -1, &sub);
	BSON_APPEND_NULL(&sub, "_id");
	bson_append_document_begin(&sub, "distinct", -1, &acc);
	BSON_APPEND_UTF8(&acc, "$addToSet", path);
	bson_append_document_end(&sub, &acc);
	bson_append_document_end(&st, &sub);
	bson_append_document_end(&pipe, &st);
	bson_append_array_end(agg, &pipe);
	finish_aggregate(distinct, agg);
	bson_free(path);
}

int
view_read_as_aggregate(const char *kind, const bson_t *cmd, const char *view_name, bson_t *agg, terr_t *err)
{
	bson_iter_t it;

	if (strcmp(kind, "find") == 0)
		return find_as_aggregate(cmd, view_name, agg, err);
	if (strcmp(kind, "count") == 0) {
		count_as_aggregate(cmd, view_name, agg);
		return 0;
	}
	if (strcmp(kind, "distinct") == 0 && bson_iter_init_find(&it, cmd, "key") && BSON_ITER_HOLDS_UTF8(&it)) {
		distinct_as_aggregate(cmd, view_name, bson_iter_utf8(&it, NULL), agg);
		return 0;
	}
	return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "Namespace %s is a view, not a collection",
	    view_name);
}

/* Run the aggregate body agg as c's sub-command; its reply goes to reply. */
static int
run_aggregate(cmd_t *c, const bson_t *agg, bson_t *reply, terr_t *err)
{
	cmd_t sub = *c;

	sub.body = agg;
	sub.name = "aggregate";
	sub.reply = reply;
	bson_iter_init(&sub.first, agg);
	bson_iter_next(&sub.first);
	return cmd_aggregate(&sub, err);
}

/* The first document of the reply's cursor.firstBatch, or false. */
static bool
first_result(const bson_t *reply, bson_iter_t *doc)
{
	bson_iter_t it;

	return bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "cursor.firstBatch.0", doc) &&
	    BSON_ITER_HOLDS_DOCUMENT(doc);
}

int
view_read(cmd_t *c, const char *kind, const char *view_name, terr_t *err)
{
	bson_t agg, tmp = BSON_INITIALIZER;
	bson_iter_t doc, f;
	int ret;

	RET(view_read_as_aggregate(kind, c->body, view_name, &agg, err));
	if (strcmp(kind, "find") == 0) {
		ret = run_aggregate(c, &agg, c->reply, err);
		bson_destroy(&agg);
		return ret;
	}
	ret = run_aggregate(c, &agg, &tmp, err);
	if (ret == 0 && strcmp(kind, "count") == 0) {
		int64_t n = 0;
		if (first_result(&tmp, &doc) && bson_iter_recurse(&doc, &f) && bson_iter_find(&f, "count"))
			n = bson_iter_as_int64(&f);
		if (n <= INT32_MAX)
			BSON_APPEND_INT32(c->reply, "n", (int32_t)n);
		else
			BSON_APPEND_INT64(c->reply, "n", n);
	} else if (ret == 0) {
		bson_t empty = BSON_INITIALIZER;
		if (first_result(&tmp, &doc) && bson_iter_recurse(&doc, &f) && bson_iter_find(&f, "distinct"))
			bson_append_iter(c->reply, "values", -1, &f);
		else
			BSON_APPEND_ARRAY(c->reply, "values", &empty);
	}
	bson_destroy(&tmp);
	bson_destroy(&agg);
	return ret;
}

/* ---- system.views ---------------------------------------------------------- */

/*
 * mongod keeps view definitions as documents of <db>.system.views ({_id:
 * "<db>.<view>", viewOn, pipeline[, collation]}), a collection created with
 * the first view and kept when the last one goes (dropDatabase, or dropping
 * system.views itself, removes it; dropping it also drops every view).
 * Tamga's definitions live in the catalog (storage_view_*); the collection
 * is kept as their mirror so that listCollections, find and dropDatabase
 * see what they see on mongod.  Writes to it by other commands (insert,
 * update, delete, findAndModify, bulkWrite) are taken as mongod takes them
 * from a user allowed to: each document must be a definition mongod can
 * read (view_check_definition_doc), and the catalog then follows what the
 * collection holds (view_reload).
 */
#define SYSTEM_VIEWS "system.views"

typedef struct sysviews_put {
	storage_coll_t *coll;
	const char *ns;
	const bson_t *def;        /* NULL: remove */
} sysviews_put_t;

static int
sysviews_put_txn(storage_session_t *s, void *arg, terr_t *err)
{
	sysviews_put_t *p = arg;
	bson_value_t id = {.value_type = BSON_TYPE_UTF8};
	bson_t old, doc;
	recid_t recid;
	int rc;

	id.value.v_utf8.str = (char *)p->ns;
	id.value.v_utf8.len = (uint32_t)strlen(p->ns);
	if ((rc = storage_doc_find_id(s, p->coll, &id, &recid, &old, err)) < 0)
		return -1;
	if (rc == 0) {
		bson_t copy;
		bson_copy_to(&old, &copy);
		rc = storage_doc_delete(s, p->coll, recid, &copy, err);
		bson_destroy(&copy);
		RET(rc);
	}
	if (p->def == NULL)
		return 0;
	bson_init(&doc);
	BSON_APPEND_UTF8(&doc, "_id", p->ns);
	bson_concat(&doc, p->def);
	rc = storage_doc_insert(s, p->coll, &doc, NULL, err);
	bson_destroy(&doc);
	return rc;
}

/* Set (def) or remove (NULL) the document of view name in system.views,
 * creating the collection for the first one. */
static int
sysviews_put(cmd_t *c, const char *name, const bson_t *def, terr_t *err)
{
	sysviews_put_t p = {.def = def};
	storage_session_t *s;
	char *ns;
	int ret;

	if ((s = client_session(c->client, err)) == NULL)
		return -1;
	if (storage_coll_get(c->engine->st, c->db, SYSTEM_VIEWS, &p.coll, NULL) != 0 || p.coll == NULL) {
		if (def == NULL)
			return 0;
		if (storage_coll_create(c->engine->st, s, c->db, SYSTEM_VIEWS, NULL, err) != 0) {
			if (err->code != TERR_NAMESPACE_EXISTS)
				return -1;
			terr_clear(err);   /* created concurrently */
		}
		RET(storage_coll_get(c->engine->st, c->db, SYSTEM_VIEWS, &p.coll, err));
	}
	ns = bson_strdup_printf("%s.%s", c->db, name);
	p.ns = ns;
	ret = storage_txn_run(s, sysviews_put_txn, &p, write_concern_sync(c), err);
	bson_free(ns);
	storage_coll_release(p.coll);
	return ret;
}

int
view_drop(cmd_t *c, const char *name, terr_t *err)
{
	RET(storage_view_drop(c->engine->st, c->db, name, err));
	return sysviews_put(c, name, NULL, err);
}

void
view_drop_all(cmd_t *c)
{
	bson_t views = BSON_INITIALIZER;
	bson_iter_t it;
	terr_t e = TERR_INIT;

	storage_list_views(c->engine->st, c->db, &views);
	bson_iter_init(&it, &views);
	while (bson_iter_next(&it)) {
		(void)storage_view_drop(c->engine->st, c->db, bson_iter_key(&it), &e);
		terr_clear(&e);
	}
	bson_destroy(&views);
}

bool
view_is_system_views(const char *name)
{
	return strcmp(name, SYSTEM_VIEWS) == 0;
}

/* The name a system.views _id gives, "<db>.<name>" (borrowed from id), or
 * NULL when id is not of db. */
static const char *
sysviews_name(const char *db, const char *id)
{
	size_t n = strlen(db);

	return strncmp(id, db, n) == 0 && id[n] == '.' ? id + n + 1 : NULL;
}

int
view_check_definition_doc(const char *db, const bson_t *doc, terr_t *err)
{
	bson_iter_t it;
	const char *name = NULL;
	bool valid = true, has_id = false, has_pipeline = false;
	terr_t e = TERR_INIT;

	if (bson_iter_init(&it, doc))
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "_id") == 0) {
				has_id = true;
				name = BSON_ITER_HOLDS_UTF8(&it) ? sysviews_name(db, bson_iter_utf8(&it, NULL)) : NULL;
				valid &= name != NULL && name[0] != '\0' && storage_ns_check(db, name, &e) == 0;
			} else if (strcmp(k, "viewOn") == 0) {
				valid &= BSON_ITER_HOLDS_UTF8(&it) && bson_iter_utf8(&it, NULL)[0] != '\0' &&
				    storage_ns_check(db, bson_iter_utf8(&it, NULL), &e) == 0;
			} else if (strcmp(k, "pipeline") == 0) {
				has_pipeline = true;
				valid &= BSON_ITER_HOLDS_ARRAY(&it);
			} else if (strcmp(k, "collation") == 0) {
				valid &= BSON_ITER_HOLDS_DOCUMENT(&it);
			} else {
				valid = false;
			}
			terr_clear(&e);
		}
	valid &= has_id && has_pipeline && bson_has_field(doc, "viewOn");
	if (valid)
		return 0;
	if (has_id && bson_iter_init_find(&it, doc, "_id")) {
		char *s = bv_to_mongo_string(bson_iter_value(&it));
		terr_set(err, TERR_INVALID_VIEW_DEFINITION, "found invalid view definition _id: %s while reading '%s.%s'",
		    s, db, SYSTEM_VIEWS);
		bson_free(s);
	} else {
		terr_set(err, TERR_INVALID_VIEW_DEFINITION, "found invalid view definition  while reading '%s.%s'", db,
		    SYSTEM_VIEWS);
	}
	return -1;
}

typedef struct sysviews_read {
	storage_t *st;
	const char *db;
	bson_t defs;              /* {name: {viewOn, pipeline[, collation]}} */
} sysviews_read_t;

/* The definitions system.views holds, in create's field order. */
static int
sysviews_read_txn(storage_session_t *s, void *arg, terr_t *err)
{
	sysviews_read_t *r = arg;
	storage_coll_t *coll = NULL;
	storage_cursor_t *cur = NULL;
	bson_t doc;
	int rc, ret = 0;

	bson_reinit(&r->defs);
	if (storage_coll_get(r->st, r->db, SYSTEM_VIEWS, &coll, NULL) != 0 || coll == NULL)
		return 0;
	ERR(storage_scan_open(s, coll, false, &cur, err));
	while ((rc = storage_cursor_next(cur, NULL, &doc, NULL, NULL, err)) == 1) {
		static const char *const fields[] = {"viewOn", "pipeline", "collation"};
		bson_iter_t it;
		bson_t def;
		const char *name;
		terr_t e = TERR_INIT;
		if (view_check_definition_doc(r->db, &doc, &e) != 0) {
			terr_clear(&e);   /* written before the check existed: not a view */
			continue;
		}
		bson_iter_init_find(&it, &doc, "_id");
		name = sysviews_name(r->db, bson_iter_utf8(&it, NULL));
		bson_append_document_begin(&r->defs, name, -1, &def);
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
			if (bson_iter_init_find(&it, &doc, fields[i]))
				bson_append_iter(&def, fields[i], -1, &it);
		bson_append_document_end(&r->defs, &def);
	}
	if (rc < 0)
		ret = -1;
err:
	storage_cursor_close(cur);
	storage_coll_release(coll);
	return ret;
}

/* The definition of name in defs ({name: def}), viewed in *def. */
static bool
defs_find(const bson_t *defs, const char *name, bson_t *def)
{
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;

	if (!bson_iter_init_find(&it, defs, name) || !BSON_ITER_HOLDS_DOCUMENT(&it))
		return false;
	bson_iter_document(&it, &l, &d);
	return bson_init_static(def, d, l);
}

void
view_reload(cmd_t *c, const char *db)
{
	sysviews_read_t r = {.st = c->engine->st, .db = db};
	bson_t current = BSON_INITIALIZER;
	bson_iter_t it;
	storage_session_t *s;
	terr_t e = TERR_INIT;

	bson_init(&r.defs);
	if ((s = client_session(c->client, &e)) == NULL ||
	    storage_txn_run(s, sysviews_read_txn, &r, false, &e) != 0) {
		tlog('W', "COMMAND", 7500100, "Could not read system.views to reload the views", NULL);
		goto done;
	}
	storage_list_views(c->engine->st, db, &current);
	/* gone from system.views: dropped */
	bson_iter_init(&it, &current);
	while (bson_iter_next(&it)) {
		bson_t def;
		if (!defs_find(&r.defs, bson_iter_key(&it), &def))
			(void)storage_view_drop(c->engine->st, db, bson_iter_key(&it), &e);
		terr_clear(&e);
	}
	/* new or changed */
	bson_iter_init(&it, &r.defs);
	while (bson_iter_next(&it)) {
		bson_t def, old;
		defs_find(&r.defs, bson_iter_key(&it), &def);
		if (!defs_find(&current, bson_iter_key(&it), &old))
			(void)storage_view_create(c->engine->st, db, bson_iter_key(&it), &def, &e);
		else if (!bson_equal(&old, &def))
			(void)storage_view_set(c->engine->st, db, bson_iter_key(&it), &def, &e);
		terr_clear(&e);   /* a collection of that name: left out */
	}
done:
	terr_clear(&e);
	bson_destroy(&current);
	bson_destroy(&r.defs);
}

/* ---- create and collMod ---------------------------------------------------- */

/*
 * Check a view's pipeline (parsed as the aggregate would parse it: unknown
 * stages, bad arguments) and build the stored definition into def:
 * {viewOn, pipeline[, collation]}.  Stages that write are refused with 167
 * OptionNotSupportedOnView as mongod does.
 */
static int
view_definition(cmd_t *c, const char *cmd, const char *name, const char *view_on, const bson_t *pipeline,
                const coll_t *collation, bson_t *def, terr_t *err)
{
	agg_host_t host;
	agg_pipeline_t *p = NULL;
	bson_iter_t it;
	int i = 0;

	if (view_on[0] == '\0')
		return terr_set(err, TERR_BAD_VALUE, "'viewOn' cannot be empty");
	if (bson_iter_init(&it, pipeline))
		for (; bson_iter_next(&it); i++) {
			bson_iter_t st;
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "Each element of the 'pipeline' array must be an object");
			if (bson_iter_recurse(&it, &st) && bson_iter_next(&st) &&
			    (strcmp(bson_iter_key(&st), "$out") == 0 || strcmp(bson_iter_key(&st), "$merge") == 0))
				return terr_set(err, TERR_OPTION_NOT_SUPPORTED_ON_VIEW,
				    "Invalid pipeline for view %s.%s :: caused by :: The aggregation stage %s in location %d "
				    "of the pipeline cannot be used in the view definition of %s.%s because it writes to disk",
				    c->db, name, bson_iter_key(&st), i, c->db, name);
		}
	memset(&host, 0, sizeof(host));
	host.st = c->engine->st;
	host.db = c->db;
	host.coll = view_on;
	host.views_unresolved = true;   /* the view graph is checked on its own */
	RET(agg_pipeline_parse(pipeline, NULL, &host, &p, err));
	agg_pipeline_free(p);
	(void)cmd;
	bson_init(def);
	BSON_APPEND_UTF8(def, "viewOn", view_on);
	BSON_APPEND_ARRAY(def, "pipeline", pipeline);
	if (collation != NULL)
		coll_append_spec(def, "collation", collation);
	return 0;
}

/* The default collation a view definition stores (NULL: simple). */
static const coll_t *
def_collation(const bson_t *def)
{
	bson_iter_t it;
	const coll_t *out = NULL;
	terr_t e = TERR_INIT;

	if (bson_iter_init_find(&it, def, "collation") &&
	    coll_parse_value(bson_iter_value(&it), "collation", &out, &e) != 0)
		out = NULL;   /* stored normalized by create: cannot fail */
	terr_clear(&e);
	return out;
}

static bool
ns_is_collection(cmd_t *c, const char *name)
{
	storage_coll_t *sc = NULL;

	if (storage_coll_get(c->engine->st, c->db, name, &sc, NULL) != 0 || sc == NULL)
		return false;
	storage_coll_release(sc);
	return true;
}

/*
 * mongod's view graph (views/view_graph.cpp): a node per namespace, an edge
 * from each view to what it reads (its viewOn and the namespaces of its
 * pipeline's $lookup / $graphLookup / $unionWith / $facet), checked when a
 * definition is created or changed:
 * - the views it reads share its collation: 167 "View <ns> has conflicting
 *   collation with view <ns>";
 * - no path leads back to it: 5 GraphContainsCycle "View cycle detected:
 *   <ns> => <ns> => ... => <ns>" (mongod's message: the start, then the
 *   path walked back from it);
 * - the views that read it share its collation: 167 "View <ns> has a
 *   collation that does not match the collation of view <ns>";
 * - the longest chain of views through it holds at most 20: 165 "View
 *   depth limit exceeded; maximum depth is 20";
 * - the stages of the views on a chain through it add up to 16 000 000
 *   bytes at most (mongod's kMaxViewPipelineSizeBytes): 195
 *   ViewPipelineMaxSizeExceeded, "View pipeline is too large and exceeds
 *   the maximum size of 16000000 bytes" for a chain above it, "Operation
 *   would result in a resolved view pipeline that exceeds the maximum size
 *   of 16000000 bytes" for the longest one through it.
 * A name that is not a view is a leaf.  Heights are memoised, so a view
 * reading the same view many times is walked once.
 */
typedef struct gnode {
	const char *name;         /* borrowed (the views document or the caller) */
	bson_t refs;              /* array of the names it reads */
	const coll_t *coll;
	int height, pheight;      /* 0: not computed yet */
	int64_t size;             /* its stages' bytes (agg_view_stages_size) */
	int64_t csize, psize;     /* the largest sums of sizes below / above it, its own included */
} gnode_t;

typedef struct vgraph {
	cmd_t *c;
	bson_t views;             /* {name: definition} of the database */
	gnode_t *n;
	int count;
	int path[VIEW_MAX_DEPTH + 2];
} vgraph_t;

/* The names def reads into refs (an array being built). */
static void
def_refs(const char *view_on, const bson_t *pipeline, bson_t *refs)
{
	int n = 0;
	char key[16];

	bson_init(refs);
	if (pipeline != NULL)
		agg_pipeline_involved(pipeline, refs, &n);
	bson_snprintf(key, sizeof(key), "%d", n);
	BSON_APPEND_UTF8(refs, key, view_on);
}

static void
vgraph_init(vgraph_t *g, cmd_t *c, const char *name, const char *view_on, const bson_t *pipeline,
            const coll_t *collation)
{
	bson_iter_t it;
	int cap;

	memset(g, 0, sizeof(*g));
	g->c = c;
	bson_init(&g->views);
	storage_list_views(c->engine->st, c->db, &g->views);
	cap = (int)bson_count_keys(&g->views) + 1;
	g->n = tm_alloc0(sizeof(gnode_t) * (size_t)cap);   /* holds bson_t: aligned */
	/* node 0: the definition being checked (its stored one, if any, is not
	 * part of the graph) */
	g->n[0].name = name;
	g->n[0].coll = collation;
	g->n[0].size = pipeline != NULL ? agg_view_stages_size(pipeline) : 0;
	def_refs(view_on, pipeline, &g->n[0].refs);
	g->count = 1;
	bson_iter_init(&it, &g->views);
	while (bson_iter_next(&it)) {
		bson_t def, pipe;
		bson_iter_t f;
		const char *on = "";
		bool has_pipe = false;
		if (strcmp(bson_iter_key(&it), name) == 0 || !BSON_ITER_HOLDS_DOCUMENT(&it))
			continue;
		{
			const uint8_t *d;
			uint32_t l;
			bson_iter_document(&it, &l, &d);
			bson_init_static(&def, d, l);
		}
		if (bson_iter_init_find(&f, &def, "viewOn") && BSON_ITER_HOLDS_UTF8(&f))
			on = bson_iter_utf8(&f, NULL);
		if (bson_iter_init_find(&f, &def, "pipeline") && BSON_ITER_HOLDS_ARRAY(&f)) {
			const uint8_t *d;
			uint32_t l;
			bson_iter_array(&f, &l, &d);
			has_pipe = bson_init_static(&pipe, d, l);
		}
		g->n[g->count].name = bson_iter_key(&it);
		g->n[g->count].coll = def_collation(&def);
		g->n[g->count].size = has_pipe ? agg_view_stages_size(&pipe) : 0;
		def_refs(on, has_pipe ? &pipe : NULL, &g->n[g->count].refs);
		g->count++;
	}
}

static void
vgraph_destroy(vgraph_t *g)
{
	for (int i = 0; i < g->count; i++)
		bson_destroy(&g->n[i].refs);
	bson_free(g->n);
	bson_destroy(&g->views);
}

/* The node of a view, -1 for anything else. */
static int
vgraph_find(const vgraph_t *g, const char *name)
{
	for (int i = 0; i < g->count; i++)
		if (strcmp(g->n[i].name, name) == 0)
			return i;
	return -1;
}

static int
depth_exceeded(terr_t *err)
{
	return terr_set(err, TERR_VIEW_DEPTH_LIMIT_EXCEEDED, "View depth limit exceeded; maximum depth is %d",
	    VIEW_MAX_DEPTH);
}

/* Walk down from node cur (depth steps from node 0): a cycle back to node
 * 0, or too deep; sets the heights. */
static int
vgraph_children(vgraph_t *g, int cur, int depth, terr_t *err)
{
	gnode_t *n = &g->n[cur];
	bson_iter_t it;
	int best = 0;
	int64_t best_size = 0;

	g->path[depth] = cur;
	if (depth > 0 && cur == 0) {
		bson_string_t *msg = bson_string_new("View cycle detected: ");
		int ret;
		bson_string_append_printf(msg, "%s.%s", g->c->db, g->n[0].name);
		for (int i = depth; i >= 0; i--)
			bson_string_append_printf(msg, " => %s.%s", g->c->db, g->n[g->path[i]].name);
		ret = terr_set(err, TERR_GRAPH_CONTAINS_CYCLE, "%s", msg->str);
		bson_string_free(msg, true);
		return ret;
	}
	if (depth > VIEW_MAX_DEPTH)
		return depth_exceeded(err);
	bson_iter_init(&it, &n->refs);
	while (bson_iter_next(&it)) {
		int k = vgraph_find(g, bson_iter_utf8(&it, NULL)), h = 1;
		int64_t sz = 0;
		if (k >= 0) {
			if (g->n[k].height == 0 || k == 0)
				RET(vgraph_children(g, k, depth + 1, err));
			h = g->n[k].height;
			sz = g->n[k].csize;
		}
		if (h > best)
			best = h;
		if (sz > best_size)
			best_size = sz;
	}
	n->height = best + 1;
	n->csize = best_size + n->size;
	return 0;
}

/* Walk up from node cur: the views reading it share its collation; sets
 * the parents' heights. */
static int
vgraph_parents(vgraph_t *g, int cur, int depth, terr_t *err)
{
	gnode_t *n = &g->n[cur];
	int best = 0;
	int64_t best_size = 0;

	if (depth > VIEW_MAX_DEPTH)
		return depth_exceeded(err);
	for (int i = 0; i < g->count; i++) {
		bson_iter_t it;
		bool reads = false;
		if (i == cur)
			continue;
		bson_iter_init(&it, &g->n[i].refs);
		while (!reads && bson_iter_next(&it))
			reads = strcmp(bson_iter_utf8(&it, NULL), n->name) == 0;
		if (!reads)
			continue;
		if (g->n[i].coll != n->coll)
			return terr_set(err, TERR_OPTION_NOT_SUPPORTED_ON_VIEW,
			    "View %s.%s has a collation that does not match the collation of view %s.%s", g->c->db,
			    n->name, g->c->db, g->n[i].name);
		if (g->n[i].pheight == 0)
			RET(vgraph_parents(g, i, depth + 1, err));
		if (g->n[i].pheight > best)
			best = g->n[i].pheight;
		if (g->n[i].psize > best_size)
			best_size = g->n[i].psize;
	}
	n->pheight = best + 1;
	n->psize = best_size + n->size;
	if (n->psize > AGG_VIEW_MAX_PIPELINE_BYTES)
		return terr_set(err, TERR_VIEW_PIPELINE_MAX_SIZE_EXCEEDED,
		    "View pipeline is too large and exceeds the maximum size of %d bytes", AGG_VIEW_MAX_PIPELINE_BYTES);
	return 0;
}

static int
check_view_graph(cmd_t *c, const char *name, const char *view_on, const bson_t *pipeline,
                 const coll_t *collation, terr_t *err)
{
	vgraph_t g;
	bson_iter_t it;
	int ret = 0;

	vgraph_init(&g, c, name, view_on, pipeline, collation);
	bson_iter_init(&it, &g.n[0].refs);
	while (ret == 0 && bson_iter_next(&it)) {
		int k = vgraph_find(&g, bson_iter_utf8(&it, NULL));
		if (k > 0 && g.n[k].coll != collation)
			ret = terr_set(err, TERR_OPTION_NOT_SUPPORTED_ON_VIEW,
			    "View %s.%s has conflicting collation with view %s.%s", c->db, name, c->db, g.n[k].name);
	}
	if (ret == 0)
		ret = vgraph_children(&g, 0, 0, err);
	if (ret == 0)
		ret = vgraph_parents(&g, 0, 0, err);
	/* the views of the longest chain through it: those below (the height
	 * counts the leaf) and those above (the parents' height counts it) */
	if (ret == 0 && (g.n[0].height - 1) + (g.n[0].pheight - 1) > VIEW_MAX_DEPTH)
		ret = depth_exceeded(err);
	/* and the bytes of their stages (both sums count its own) */
	if (ret == 0 && g.n[0].csize + g.n[0].psize - g.n[0].size > AGG_VIEW_MAX_PIPELINE_BYTES)
		ret = terr_set(err, TERR_VIEW_PIPELINE_MAX_SIZE_EXCEEDED,
		    "Operation would result in a resolved view pipeline that exceeds the maximum size of %d bytes",
		    AGG_VIEW_MAX_PIPELINE_BYTES);
	vgraph_destroy(&g);
	return ret;
}

/* viewOn (a string) and pipeline (an array, [] when absent) of cmd. */
static int
view_args(cmd_t *c, const char **view_on, bson_t *pipeline, bool *has_pipeline, terr_t *err)
{
	bool found;

	RET(cmd_get_string(c, "viewOn", view_on, &found, err));
	if (!found)
		*view_on = NULL;
	RET(cmd_get_array(c, "pipeline", pipeline, has_pipeline, err));
	if (!*has_pipeline)
		bson_init(pipeline);
	return 0;
}

int
view_create(cmd_t *c, const char *name, terr_t *err)
{
	const char *view_on;
	bson_t pipeline, def, existing;
	bson_iter_t coll_it;
	const coll_t *collation = NULL;
	bool has_pipeline;
	int ret;

	RET(view_args(c, &view_on, &pipeline, &has_pipeline, err));
	if (view_on == NULL)
		return has_pipeline ? terr_set(err, TERR_INVALID_OPTIONS,
		    "'pipeline' requires 'viewOn' to also be specified") : 0;
	if (strncmp(name, "system.", 7) == 0)
		return terr_set(err, TERR_INVALID_NAMESPACE, strcmp(name, "system.views") == 0 ?
		    "Cannot create a view called '%s.%s'" : "Invalid system namespace: %s.%s", c->db, name);
	if (bson_iter_init_find(&coll_it, c->body, "collation"))
		RET(coll_parse_value(bson_iter_value(&coll_it), "create.collation", &collation, err));
	RET(view_definition(c, "create", name, view_on, &pipeline, collation, &def, err));
	/* a namespace in use answers 48 (below) before the graph is checked */
	ret = view_exists(c, c->db, name) || ns_is_collection(c, name) ? 0 :
	    check_view_graph(c, name, view_on, &pipeline, collation, err);
	if (ret == 0)
		ret = storage_view_create(c->engine->st, c->db, name, &def, err);
	if (ret == 0)
		ret = sysviews_put(c, name, &def, err);
	if (ret != 0 && err->code == TERR_NAMESPACE_EXISTS &&
	    storage_view_get(c->engine->st, c->db, name, &existing) == 0) {
		/* the same view again succeeds, as for collections */
		if (bson_equal(&existing, &def)) {
			terr_clear(err);
			ret = 0;
		} else {
			char *o = bv_doc_to_mongo_string(&existing);
			terr_set(err, TERR_NAMESPACE_EXISTS,
			    "namespace %s.%s already exists, but with different options: %s", c->db, name, o);
			bson_free(o);
		}
		bson_destroy(&existing);
	}
	bson_destroy(&def);
	return ret;
}

int
view_coll_mod(cmd_t *c, const char *name, bson_t *reply, terr_t *err)
{
	const char *view_on;
	bson_t pipeline, def, old, old_pipeline;
	bson_iter_t it;
	const coll_t *collation;
	bool has_pipeline;
	int ret;

	(void)reply;
	bson_iter_init(&it, c->body);
	bson_iter_next(&it);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "viewOn") != 0 && strcmp(k, "pipeline") != 0 && cmd_is_coll_mod_option(k))
			return terr_set(err, TERR_INVALID_OPTIONS, "option not supported on a view: %s", k);
	}
	RET(view_args(c, &view_on, &pipeline, &has_pipeline, err));
	if (view_on == NULL && !has_pipeline)
		return 0;
	if (storage_view_get(c->engine->st, c->db, name, &old) != 0)
		return terr_set(err, TERR_NAMESPACE_NOT_FOUND, "ns does not exist");
	/* one of the two may be left out: the other keeps its value */
	if (view_on == NULL && bson_iter_init_find(&it, &old, "viewOn") && BSON_ITER_HOLDS_UTF8(&it))
		view_on = bson_iter_utf8(&it, NULL);
	if (!has_pipeline && bson_iter_init_find(&it, &old, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it)) {
		const uint8_t *d;
		uint32_t l;
		bson_iter_array(&it, &l, &d);
		if (bson_init_static(&old_pipeline, d, l))
			bson_copy_to(&old_pipeline, &pipeline);
	}
	collation = def_collation(&old);
	ret = view_definition(c, "collMod", name, view_on != NULL ? view_on : "", &pipeline, collation, &def, err);
	if (ret == 0) {
		ret = check_view_graph(c, name, view_on != NULL ? view_on : "", &pipeline, collation, err);
		if (ret == 0)
			ret = storage_view_set(c->engine->st, c->db, name, &def, err);
		if (ret == 0)
			ret = sysviews_put(c, name, &def, err);
		bson_destroy(&def);
	}
	if (!has_pipeline)
		bson_destroy(&pipeline);
	bson_destroy(&old);
	return ret;
}
