/*
 * stage_write.c -- $out and $merge: the stages that write the pipeline's
 * result into a collection.
 *
 * Both drain their input on the first pull and return no documents.  $out
 * fills a temporary collection (created with the target's options and
 * indexes) and renames it over the target, so the target changes all at once
 * or not at all.  $merge writes in batches of transactions, matching on _id
 * or on fields covered by a unique index.  Documents are prepared and
 * validated through the host's write path (agg_host_t), honouring
 * bypassDocumentValidation.
 */
#include "agg/agg_private.h"

#include <string.h>
#include <sys/random.h>

#include "bson/value.h"
#include "query/plan.h"

enum { WM_REPLACE, WM_KEEP, WM_MERGE, WM_FAIL, WM_PIPELINE };
enum { WNM_INSERT, WNM_DISCARD, WNM_FAIL };

typedef struct write_plan {
	char *db, *coll;
	bool merge;
	/* $merge */
	char **on;
	int non;
	int when_matched, when_not_matched;
	agg_pipeline_t *pipe;      /* whenMatched pipeline */
	int new_var;               /* $$new */
	int *let_ids;              /* $merge let: ids and expressions */
	char **let_names;
	expr_t **let_exprs;
	int nlet;
} write_plan_t;

static void
write_free_plan(void *plan)
{
	write_plan_t *wp = plan;
	int i;

	bson_free(wp->db);
	bson_free(wp->coll);
	for (i = 0; i < wp->non; i++)
		bson_free(wp->on[i]);
	bson_free(wp->on);
	agg_pipeline_free(wp->pipe);
	for (i = 0; i < wp->nlet; i++) {
		expr_destroy(wp->let_exprs[i]);
		bson_free(wp->let_names[i]);
	}
	bson_free(wp->let_exprs);
	bson_free(wp->let_names);
	bson_free(wp->let_ids);
	bson_free(wp);
}

static int
parse_target(const char *stage, const bson_value_t *v, const char *defdb, char **db, char **coll,
    terr_t *err)
{
	bson_t d;
	bson_iter_t it;

	/* a repeated target replaces the one before it, whole */
	bson_free(*db);
	bson_free(*coll);
	*db = *coll = NULL;
	if (v->value_type == BSON_TYPE_UTF8) {
		*db = bson_strdup(defdb);
		*coll = bson_strdup(v->value.v_utf8.str);
		return 0;
	}
	if (v->value_type != BSON_TYPE_DOCUMENT)
		return -2;
	agg_value_doc(v, &d);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "db") == 0 || strcmp(k, "coll") == 0) {
			if (!BSON_ITER_HOLDS_UTF8(&it))
				return terr_set(err, TERR_TYPE_MISMATCH,
				    "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", stage, k,
				    bv_type_name(bson_iter_type(&it)));
			char **dst = k[0] == 'd' ? db : coll;
			bson_free(*dst);
			*dst = bson_strdup(bson_iter_utf8(&it, NULL));
		} else if (strcmp(k, "timeseries") == 0) {
			return terr_set(err, TERR_NOT_IMPLEMENTED,
			    "%s to a time series collection is not supported by Tamga yet", stage);
		} else {
			return terr_set(err, 40415, "BSON field '%s.%s' is an unknown field.", stage, k);
		}
	}
	if (*coll == NULL)
		return terr_set(err, 40414, "BSON field '%s.coll' is missing but a required field", stage);
	if (*db == NULL)
		*db = bson_strdup(defdb);
	return 0;
}

/* The target's name is one a collection may have, and not a view's (st may
 * be NULL while nothing is stored). */
static int
check_target_ns(storage_t *st, const char *stage, const char *db, const char *coll, terr_t *err)
{
	bson_t def;

	if (st != NULL && storage_view_get(st, db, coll, &def) == 0) {
		bson_destroy(&def);
		return terr_set(err, TERR_COMMAND_NOT_SUPPORTED_ON_VIEW, "Namespace %s.%s is a view, not a collection",
		    db, coll);
	}
	bool out = strcmp(stage, "$out") == 0;

	/* mongod's wording differs between the two stages ("Can't" / "Cannot") */
	if (strncmp(coll, "system.", 7) == 0)
		return terr_set(err, out ? 17385 : 31319, "%s %s to special collection: %s",
		    out ? "Can't" : "Cannot", stage, coll);
	if (strcmp(db, "admin") == 0 || strcmp(db, "config") == 0 || strcmp(db, "local") == 0)
		return terr_set(err, out ? 31321 : 31320, "%s %s to internal database: %s",
		    out ? "Can't" : "Cannot", stage, db);
	if (storage_ns_check(db, coll, err) != 0) {
		terr_clear(err);
		return terr_set(err, TERR_INVALID_NAMESPACE, "Invalid %s target namespace, %s.%s", stage, db,
		    coll);
	}
	return 0;
}

static bson_t *write_explain(const struct write_plan *wp, const bson_value_t *merge_spec);

static int
out_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	write_plan_t *wp = bson_malloc0(sizeof(*wp));
	const char *defdb = pc->host != NULL ? pc->host->db : "test";
	int rc;

	rc = parse_target("$out", spec, defdb, &wp->db, &wp->coll, err);
	if (rc == -2)
		terr_set(err, 16990, "$out only supports a string or object argument, but found %s",
		    bv_type_name(spec->value_type));
	if (rc != 0 ||
	    check_target_ns(pc->host != NULL ? pc->host->st : NULL, "$out", wp->db, wp->coll, err) != 0) {
		write_free_plan(wp);
		return -1;
	}
	agg_pctx_add(pc, &agg_stages_write[0], wp, write_explain(wp, NULL));
	return 0;
}

static const char *const wm_names[] = {"replace", "keepExisting", "merge", "fail", NULL};
static const char *const wnm_names[] = {"insert", "discard", "fail", NULL};

/* explain's form of $out / $merge (mongod's serialize): the target as
 * {db, coll}; $merge with its resolved on, whenMatched, whenNotMatched
 * (merge_spec non-NULL). */
static bson_t *
write_explain(const write_plan_t *wp, const bson_value_t *merge_spec)
{
	bson_t *d = bson_new(), s, into, on;

	(void)merge_spec;
	BSON_APPEND_DOCUMENT_BEGIN(d, wp->merge ? "$merge" : "$out", &s);
	if (!wp->merge) {
		BSON_APPEND_UTF8(&s, "db", wp->db);
		BSON_APPEND_UTF8(&s, "coll", wp->coll);
	} else {
		BSON_APPEND_DOCUMENT_BEGIN(&s, "into", &into);
		BSON_APPEND_UTF8(&into, "db", wp->db);
		BSON_APPEND_UTF8(&into, "coll", wp->coll);
		bson_append_document_end(&s, &into);
		if (wp->non <= 1) {
			BSON_APPEND_UTF8(&s, "on", wp->non == 1 ? wp->on[0] : "_id");
		} else {
			char key[16];

			BSON_APPEND_ARRAY_BEGIN(&s, "on", &on);
			for (int i = 0; i < wp->non; i++) {
				bv_array_key((uint32_t)i, key);
				BSON_APPEND_UTF8(&on, key, wp->on[i]);
			}
			bson_append_array_end(&s, &on);
		}
		BSON_APPEND_UTF8(&s, "whenMatched", wm_names[wp->when_matched]);
		BSON_APPEND_UTF8(&s, "whenNotMatched", wnm_names[wp->when_not_matched]);
	}
	bson_append_document_end(d, &s);
	return d;
}

static int
enum_value(const char *const *names, const char *v)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], v) == 0)
			return i;
	return -1;
}

static int
merge_parse_pipeline(agg_pctx_t *pc, write_plan_t *wp, const bson_t *arr, const bson_t *let,
    terr_t *err)
{
	static const char *const allowed[] = {"$addFields", "$set", "$project", "$unset",
		"$replaceRoot", "$replaceWith", NULL};
	bson_iter_t it;
	int ret = 0, i, j;

	expr_scope_push(pc->scope);
	if (let != NULL) {
		int n = (int)bson_count_keys(let);
		wp->let_ids = bson_malloc0(sizeof(int) * (size_t)(n + 1));
		wp->let_names = bson_malloc0(sizeof(char *) * (size_t)(n + 1));
		wp->let_exprs = bson_malloc0(sizeof(expr_t *) * (size_t)(n + 1));
		bson_iter_init(&it, let);
		while (bson_iter_next(&it)) {
			/* let expressions see the source document ($$new is its default) */
			ERR(expr_parse(bson_iter_value(&it), pc->scope, &wp->let_exprs[wp->nlet], err));
			wp->let_names[wp->nlet] = bson_strdup(bson_iter_key(&it));
			wp->nlet++;
		}
		bson_iter_init(&it, let);
		for (i = 0; bson_iter_next(&it); i++)
			ERR(expr_scope_define(pc->scope, bson_iter_key(&it), &wp->let_ids[i], err));
	}
	if (let == NULL || !bson_has_field(let, "new"))
		ERR(expr_scope_define(pc->scope, "new", &wp->new_var, err));
	else
		wp->new_var = -1;
	ERR(agg_pipeline_parse_sub(pc, arr, false, true, &wp->pipe, err));
	for (i = 0; i < wp->pipe->nstages; i++) {
		bool ok = false;
		for (j = 0; allowed[j] != NULL; j++)
			ok = ok || strcmp(allowed[j], wp->pipe->stages[i].def->name) == 0;
		if (!ok) {
			ret = terr_set(err, TERR_BAD_VALUE,
			    "$merge 'whenMatched' pipeline allows only $addFields, $project, $replaceRoot, $replaceWith, $set and $unset stages, found %s",
			    wp->pipe->stages[i].def->name);
			goto err;
		}
	}
err:
	expr_scope_pop(pc->scope);
	return ret;
}

static int merge_check_on(const write_plan_t *wp, storage_coll_t *coll, terr_t *err);

static int
merge_parse(agg_pctx_t *pc, const bson_value_t *spec, terr_t *err)
{
	write_plan_t *wp = bson_malloc0(sizeof(*wp));
	const char *defdb = pc->host != NULL ? pc->host->db : "test";
	bson_t d, let, pipe;
	bson_iter_t it;
	bool has_into = false, has_let = false, has_pipe = false;
	int rc, ret = 0;

	wp->merge = true;
	wp->when_matched = WM_MERGE;
	wp->when_not_matched = WNM_INSERT;
	if (spec->value_type == BSON_TYPE_UTF8) {
		wp->db = bson_strdup(defdb);
		wp->coll = bson_strdup(spec->value.v_utf8.str);
		has_into = true;
	} else if (spec->value_type != BSON_TYPE_DOCUMENT) {
		ret = terr_set(err, 51182, "$merge requires a string or object argument, but found %s",
		    bv_type_name(spec->value_type));
		goto err;
	} else {
		agg_value_doc(spec, &d);
		bson_iter_init(&it, &d);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			const bson_value_t *v = bson_iter_value(&it);
			if (strcmp(k, "into") == 0) {
				rc = parse_target("$merge.into", v, defdb, &wp->db, &wp->coll, err);
				if (rc == -2)
					rc = terr_set(err, 51178,
					    "$merge 'into' field  must be either a string or an object, but found %s",
					    bv_type_name(v->value_type));
				ERR(rc);
				has_into = true;
			} else if (strcmp(k, "on") == 0) {
				if (v->value_type == BSON_TYPE_UTF8) {
					wp->on = bson_malloc0(sizeof(char *) * 2);
					wp->on[wp->non++] = bson_strdup(v->value.v_utf8.str);
				} else if (v->value_type == BSON_TYPE_ARRAY) {
					bson_t a;
					bson_iter_t ai;
					agg_value_doc(v, &a);
					wp->on = bson_malloc0(sizeof(char *) * (bson_count_keys(&a) + 1));
					bson_iter_init(&ai, &a);
					while (bson_iter_next(&ai)) {
						if (!BSON_ITER_HOLDS_UTF8(&ai)) {
							ret = terr_set(err, 51134,
							    "$merge 'on' array elements must be strings, but found %s",
							    bv_type_name(bson_iter_type(&ai)));
							goto err;
						}
						wp->on[wp->non++] = bson_strdup(bson_iter_utf8(&ai, NULL));
					}
					if (wp->non == 0) {
						ret = terr_set(err, 51187,
						    "If explicitly specifying $merge 'on', must include at least one field");
						goto err;
					}
				} else {
					ret = terr_set(err, 51186,
					    "$merge 'on' field  must be either a string or an array of strings, but found %s",
					    bv_type_name(v->value_type));
					goto err;
				}
			} else if (strcmp(k, "whenMatched") == 0) {
				if (v->value_type == BSON_TYPE_ARRAY) {
					wp->when_matched = WM_PIPELINE;
					agg_value_doc(v, &pipe);
					has_pipe = true;
				} else if (v->value_type == BSON_TYPE_UTF8) {
					if ((wp->when_matched = enum_value(wm_names, v->value.v_utf8.str)) < 0) {
						ret = terr_set(err, TERR_BAD_VALUE,
						    "Enumeration value '%s' for field '$merge.whenMatched' is not a valid value.",
						    v->value.v_utf8.str);
						goto err;
					}
				} else {
					ret = terr_set(err, 51191,
					    "$merge 'whenMatched' field  must be either a string or an array, but found %s",
					    bv_type_name(v->value_type));
					goto err;
				}
			} else if (strcmp(k, "whenNotMatched") == 0) {
				if (v->value_type != BSON_TYPE_UTF8) {
					ret = terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '$merge.whenNotMatched' is the wrong type '%s', expected type 'string'",
					    bv_type_name(v->value_type));
					goto err;
				}
				if ((wp->when_not_matched = enum_value(wnm_names, v->value.v_utf8.str)) < 0) {
					ret = terr_set(err, TERR_BAD_VALUE,
					    "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.",
					    v->value.v_utf8.str);
					goto err;
				}
			} else if (strcmp(k, "let") == 0) {
				if (v->value_type != BSON_TYPE_DOCUMENT) {
					ret = terr_set(err, TERR_TYPE_MISMATCH,
					    "BSON field '$merge.let' is the wrong type '%s', expected type 'object'",
					    bv_type_name(v->value_type));
					goto err;
				}
				agg_value_doc(v, &let);
				has_let = true;
			} else {
				ret = terr_set(err, 40415, "BSON field '$merge.%s' is an unknown field.", k);
				goto err;
			}
		}
	}
	if (!has_into) {
		ret = terr_set(err, 40414, "BSON field '$merge.into' is missing but a required field");
		goto err;
	}
	ERR(check_target_ns(pc->host != NULL ? pc->host->st : NULL, "$merge", wp->db, wp->coll, err));
	/* mongod checks the unique index of `on` while it parses (51183 with
	 * no executor prefix); the run checks again for a target created since */
	if (pc->host != NULL && pc->host->st != NULL) {
		storage_coll_t *tc = NULL;
		bool id_only = wp->non == 0 || (wp->non == 1 && strcmp(wp->on[0], "_id") == 0);

		if (storage_coll_get(pc->host->st, wp->db, wp->coll, &tc, NULL) != 0) {
			if (!id_only) {
				ret = terr_set(err, 51183, "Cannot find index to verify that join fields will be unique");
				goto err;
			}
		} else {
			int rc = merge_check_on(wp, tc, err);

			storage_coll_release(tc);
			if (rc != 0) {
				ret = -1;
				goto err;
			}
		}
	}
	if (has_let && !has_pipe) {
		ret = terr_set(err, 51199, "Cannot use 'let' variables with 'whenMatched: %s' mode",
		    wm_names[wp->when_matched]);
		goto err;
	}
	if (has_pipe)
		ERR(merge_parse_pipeline(pc, wp, &pipe, has_let ? &let : NULL, err));
	agg_pctx_add(pc, &agg_stages_write[1], wp, has_pipe ? agg_explain_doc("$merge", spec) : write_explain(wp, spec));
	return 0;
err:
	write_free_plan(wp);
	return ret;
}

/* ---- runtime ------------------------------------------------------------ */

typedef struct wdoc {
	bson_t *doc;           /* prepared: _id first (owned) */
	bool had_id;           /* the pipeline's document carried an _id */
} wdoc_t;

typedef struct write_state {
	bool done;
	storage_coll_t *target;
	wdoc_t *batch;
	int n, cap;
	agg_rt_t *rt;
} write_state_t;

static int
write_open(agg_rt_t *rt, terr_t *err)
{
	write_state_t *ws = bson_malloc0(sizeof(*ws));

	ws->rt = rt;
	rt->state = ws;
	return 0;
}

static void
batch_clear(write_state_t *ws)
{
	int i;

	for (i = 0; i < ws->n; i++)
		bson_destroy(ws->batch[i].doc);
	ws->n = 0;
}

static void
write_close(agg_rt_t *rt)
{
	write_state_t *ws = rt->state;

	batch_clear(ws);
	bson_free(ws->batch);
	storage_coll_release(ws->target);
	bson_free(ws);
}

static int
batch_add(agg_rt_t *rt, write_state_t *ws, const bson_t *d, terr_t *err)
{
	const agg_host_t *h = rt->x->p->host;
	wdoc_t *w;

	if (ws->n == ws->cap) {
		ws->cap = ws->cap ? ws->cap * 2 : 64;
		ws->batch = bson_realloc(ws->batch, sizeof(wdoc_t) * (size_t)ws->cap);
	}
	w = &ws->batch[ws->n];
	w->doc = bson_new();
	w->had_id = bson_has_field(d, "_id");
	if (h->prepare_doc(h->ctx, d, w->doc, err) != 0) {
		bson_destroy(w->doc);
		return -1;
	}
	ws->n++;
	return 0;
}

/* ---- $out ---------------------------------------------------------------- */

typedef struct out_txn {
	write_state_t *ws;
	storage_coll_t *tmp;
	const agg_host_t *h;
} out_txn_t;

static int
out_insert_txn(storage_session_t *s, void *arg, terr_t *err)
{
	out_txn_t *o = arg;
	int i;

	for (i = 0; i < o->ws->n; i++) {
		RET(o->h->check_write(o->h->ctx, o->tmp, o->ws->batch[i].doc, NULL, err));
		RET(storage_doc_insert(s, o->tmp, o->ws->batch[i].doc, NULL, err));
	}
	return 0;
}

static int
out_run(agg_rt_t *rt, write_state_t *ws, terr_t *err)
{
	const write_plan_t *wp = rt->st->plan;
	const agg_host_t *h = rt->x->p->host;
	storage_coll_t *target = NULL, *tmp = NULL;
	char tmpname[96];
	uint8_t rnd[8];
	const bson_t *d;
	out_txn_t o;
	int rc, ret = 0, i;
	bool created = false;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		memset(rnd, 7, sizeof(rnd));
	snprintf(tmpname, sizeof(tmpname), "tmp.agg_out.%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1],
	    rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	/* the temporary collection takes the target's options and indexes */
	storage_coll_get(h->st, wp->db, wp->coll, &target, NULL);
	if (target != NULL && bson_has_field(target->options, "timeseries")) {
		ret = terr_set(err, TERR_NOT_IMPLEMENTED, "$out into a time-series collection is not supported by Tamga yet");
		goto err;
	}
	if (target != NULL && target->capped) {
		ret = terr_set(err, 17152, "namespace '%s.%s' is capped so it can't be used for $out", wp->db, wp->coll);
		goto err;
	}
	ERR(storage_coll_create(h->st, NULL, wp->db, tmpname, target ? target->options : NULL, err));
	created = true;
	if (target != NULL)
		for (i = 0; i < target->nindexes; i++)
			if (!target->indexes[i].is_id)
				ERR(storage_index_create(h->st, NULL, wp->db, tmpname, target->indexes[i].spec, err));
	ERR(storage_coll_get(h->st, wp->db, tmpname, &tmp, err));
	o.ws = ws;
	o.tmp = tmp;
	o.h = h;
	for (;;) {
		rc = 1;
		while (ws->n < 1000 && (rc = agg_rt_pull(rt, &d, err)) == 1)
			ERR(batch_add(rt, ws, d, err));
		if (rc < 0) {
			ret = -1;
			goto err;
		}
		if (ws->n > 0)
			ERR(storage_txn_run(h->write_session != NULL ? h->write_session : rt->x->s, out_insert_txn, &o,
			    h->sync, err));
		batch_clear(ws);
		if (rc == 0)
			break;
	}
	storage_coll_release(tmp);
	tmp = NULL;
	ERR(storage_coll_rename(h->st, NULL, wp->db, tmpname, wp->db, wp->coll, true, err));
	created = false;
err:
	if (created) {
		terr_t e2 = TERR_INIT;
		storage_coll_release(tmp);
		tmp = NULL;
		storage_coll_drop(h->st, NULL, wp->db, tmpname, &e2);
		terr_clear(&e2);
	}
	storage_coll_release(tmp);
	storage_coll_release(target);
	return ret;
}

/* ---- $merge -------------------------------------------------------------- */

typedef struct merge_txn {
	agg_rt_t *rt;
	write_state_t *ws;
	const write_plan_t *wp;
	const agg_host_t *h;
	storage_coll_t *coll;
} merge_txn_t;

/* The target document matching w on the 'on' fields: 0 found (recid, copy
 * in *old), 1 not found, -1 error. */
static int
merge_find(merge_txn_t *m, storage_session_t *s, const wdoc_t *w, recid_t *recid, bson_t *old,
    terr_t *err)
{
	const write_plan_t *wp = m->wp;
	bson_iter_t it;
	bson_t view;
	int rc, i;

	if (wp->non == 0 || (wp->non == 1 && strcmp(wp->on[0], "_id") == 0)) {
		bson_iter_init_find(&it, w->doc, "_id");
		rc = storage_doc_find_id(s, m->coll, bson_iter_value(&it), recid, &view, err);
		if (rc == 0)
			bson_copy_to(&view, old);
		return rc;
	}
	{
		bson_t filter = BSON_INITIALIZER;
		plan_request_t req;
		plan_exec_t *x = NULL;
		match_t *mt = NULL;
		for (i = 0; i < wp->non; i++) {
			bson_value_t v;
			bson_iter_t f;
			if (!bson_iter_init_find(&f, w->doc, wp->on[i]) &&
			    !(bson_iter_init(&f, w->doc) && bson_iter_find_descendant(&f, wp->on[i], &f))) {
				bson_destroy(&filter);
				return terr_set(err, 51132,
				    "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array",
				    wp->on[i]);
			}
			v = *bson_iter_value(&f);
			if (v.value_type == BSON_TYPE_NULL || v.value_type == BSON_TYPE_UNDEFINED ||
			    v.value_type == BSON_TYPE_ARRAY) {
				bson_destroy(&filter);
				return terr_set(err, 51132,
				    "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array",
				    wp->on[i]);
			}
			{
				bson_t eq;
				bson_append_document_begin(&filter, wp->on[i], -1, &eq);
				bv_append(&eq, "$eq", 3, &v);
				bson_append_document_end(&filter, &eq);
			}
		}
		rc = match_compile(&filter, NULL, &mt, err);
		bson_destroy(&filter);
		if (rc != 0)
			return -1;
		memset(&req, 0, sizeof(req));
		req.coll = m->coll;
		req.match = mt;
		req.borrow = true;
		if (plan_exec_new(&req, &x, err) != 0) {
			match_free(mt);
			return -1;
		}
		rc = plan_exec_next_record(x, s, recid, &view, err);
		if (rc == 1)
			bson_copy_to(&view, old);
		plan_exec_free(x);
		match_free(mt);
		return rc == 1 ? 0 : rc == 0 ? 1 : -1;
	}
}

/* whenMatched: merge -- the target with the source's top-level fields set. */
static void
merge_fields(const bson_t *old, const bson_t *src, bson_t *out)
{
	bson_iter_t it, f;

	bson_iter_init(&it, old);
	while (bson_iter_next(&it)) {
		if (bson_iter_init_find(&f, src, bson_iter_key(&it)))
			bson_append_iter(out, bson_iter_key(&it), -1, &f);
		else
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
	}
	bson_iter_init(&it, src);
	while (bson_iter_next(&it))
		if (!bson_has_field(old, bson_iter_key(&it)))
			bson_append_iter(out, bson_iter_key(&it), -1, &it);
}

typedef struct one_feed {
	const bson_t *doc;
	bool done;
} one_feed_t;

static int
one_feed_next(void *ctx, const bson_t **doc, terr_t *err)
{
	one_feed_t *f = ctx;

	if (f->done)
		return 0;
	f->done = true;
	*doc = f->doc;
	return 1;
}

static int
merge_pipeline(merge_txn_t *m, const bson_t *old, const bson_t *src, bson_t *out, terr_t *err)
{
	const write_plan_t *wp = m->wp;
	agg_exec_t *x = NULL;
	one_feed_t feed = {old, false};
	const bson_t *d;
	bson_value_t sv;
	int ret = 0, rc, i;

	ERR(agg_exec_new_sub(wp->pipe, m->rt->x, &x, err));
	x->feed = one_feed_next;
	x->feed_ctx = &feed;
	sv.value_type = BSON_TYPE_DOCUMENT;
	sv.value.v_doc.data = (uint8_t *)bson_get_data(src);
	sv.value.v_doc.data_len = src->len;
	if (wp->new_var >= 0)
		ERR(agg_exec_set_var(x, wp->new_var, "new", &sv, err));
	for (i = 0; i < wp->nlet; i++) {
		bson_value_t v;
		expr_env_reset(m->rt->env);
		expr_env_set_root(m->rt->env, src);
		ERR(expr_eval(wp->let_exprs[i], m->rt->env, &v, err));
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		ERR(agg_exec_set_var(x, wp->let_ids[i], wp->let_names[i], &v, err));
	}
	rc = agg_exec_pull(x, &d, err);
	if (rc < 0) {
		ret = -1;
		goto err;
	}
	if (rc == 1)
		bson_concat(out, d);
err:
	agg_exec_free(x);
	return ret;
}

static int
id_differs(const bson_t *a, const bson_t *b)
{
	bson_iter_t ia, ib;

	if (!bson_iter_init_find(&ia, a, "_id") || !bson_iter_init_find(&ib, b, "_id"))
		return 0;
	return !bv_equal(bson_iter_value(&ia), bson_iter_value(&ib));
}

static int
merge_one(merge_txn_t *m, storage_session_t *s, const wdoc_t *w, terr_t *err)
{
	const write_plan_t *wp = m->wp;
	recid_t recid;
	bson_t old = BSON_INITIALIZER, newd = BSON_INITIALIZER, prepared = BSON_INITIALIZER;
	int rc, ret = 0;

	rc = merge_find(m, s, w, &recid, &old, err);
	if (rc < 0) {
		ret = -1;
		goto err;
	}
	if (rc == 1) {
		if (wp->when_not_matched == WNM_DISCARD)
			goto err;
		if (wp->when_not_matched == WNM_FAIL) {
			ret = terr_set(err, 13113,
			    "$merge could not find a matching document in the target collection for at least one document in the source collection");
			goto err;
		}
		ERR(m->h->check_write(m->h->ctx, m->coll, w->doc, NULL, err));
		ERR(storage_doc_insert(s, m->coll, w->doc, NULL, err));
		goto err;
	}
	switch (wp->when_matched) {
	case WM_KEEP:
		goto err;
	case WM_FAIL:
		/* the insert reports the duplicate key, as mongod's does */
		ERR(storage_doc_insert(s, m->coll, w->doc, NULL, err));
		goto err;
	case WM_REPLACE:
		if (w->had_id && id_differs(w->doc, &old))
			goto immutable;
		{
			bson_iter_t it;
			bson_iter_init_find(&it, &old, "_id");
			bson_append_iter(&newd, "_id", 3, &it);
			bson_iter_init(&it, w->doc);
			while (bson_iter_next(&it))
				if (strcmp(bson_iter_key(&it), "_id") != 0)
					bson_append_iter(&newd, bson_iter_key(&it), -1, &it);
		}
		break;
	case WM_MERGE:
		if (w->had_id && id_differs(w->doc, &old))
			goto immutable;
		{
			bson_t src = BSON_INITIALIZER;
			bson_iter_t it;
			bson_iter_init(&it, w->doc);
			while (bson_iter_next(&it))
				if (w->had_id || strcmp(bson_iter_key(&it), "_id") != 0)
					bson_append_iter(&src, bson_iter_key(&it), -1, &it);
			merge_fields(&old, &src, &newd);
			bson_destroy(&src);
		}
		break;
	default:
		ERR(merge_pipeline(m, &old, w->doc, &newd, err));
		if (id_differs(&newd, &old))
			goto immutable;
		if (!bson_has_field(&newd, "_id")) {
			bson_t tmp = BSON_INITIALIZER;
			bson_iter_t it;
			bson_iter_init_find(&it, &old, "_id");
			bson_append_iter(&tmp, "_id", 3, &it);
			bson_concat(&tmp, &newd);
			bson_reinit(&newd);
			bson_concat(&newd, &tmp);
			bson_destroy(&tmp);
		}
		break;
	}
	ERR(m->h->prepare_doc(m->h->ctx, &newd, &prepared, err));
	ERR(m->h->check_write(m->h->ctx, m->coll, &prepared, &old, err));
	ERR(storage_doc_update(s, m->coll, recid, &old, &prepared, err));
	goto err;
immutable:
	ret = terr_set(err, TERR_IMMUTABLE_FIELD,
	    "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'");
err:
	bson_destroy(&old);
	bson_destroy(&newd);
	bson_destroy(&prepared);
	return ret;
}

static int
merge_txn(storage_session_t *s, void *arg, terr_t *err)
{
	merge_txn_t *m = arg;
	int i;

	for (i = 0; i < m->ws->n; i++)
		RET(merge_one(m, s, &m->ws->batch[i], err));
	return 0;
}

/* 'on' other than _id needs a unique index on exactly those fields. */
static int
merge_check_on(const write_plan_t *wp, storage_coll_t *coll, terr_t *err)
{
	int i, j;

	if (wp->non == 0 || (wp->non == 1 && strcmp(wp->on[0], "_id") == 0))
		return 0;
	for (i = 0; i < coll->nindexes; i++) {
		const storage_index_t *ix = &coll->indexes[i];
		bool ok;
		if (!ix->unique || ix->key == NULL || (int)bson_count_keys(ix->key) != wp->non)
			continue;
		ok = true;
		for (j = 0; j < wp->non && ok; j++) {
			bson_iter_t it;
			/* dotted names are one key each in the pattern */
			ok = bson_iter_init_find(&it, ix->key, wp->on[j]);
		}
		if (ok)
			return 0;
	}
	return terr_set(err, 51183, "Cannot find index to verify that join fields will be unique");
}

static int
merge_run(agg_rt_t *rt, write_state_t *ws, terr_t *err)
{
	const write_plan_t *wp = rt->st->plan;
	const agg_host_t *h = rt->x->p->host;
	storage_coll_t *coll = NULL;
	merge_txn_t m;
	const bson_t *d;
	int rc = 0, ret = 0;
	bool same;

	/* a missing target has no unique index either: refuse before creating it */
	if (storage_coll_get(h->st, wp->db, wp->coll, &coll, NULL) != 0 &&
	    !(wp->non == 0 || (wp->non == 1 && strcmp(wp->on[0], "_id") == 0))) {
		ret = terr_set(err, 51183, "Cannot find index to verify that join fields will be unique");
		goto err;
	}
	if (coll != NULL && bson_has_field(coll->options, "timeseries")) {
		ret = terr_set(err, TERR_NOT_IMPLEMENTED, "$merge into a time-series collection is not supported by Tamga yet");
		goto err;
	}
	if (coll != NULL)
		ERR(merge_check_on(wp, coll, err));
	/* on [_id] is the default */
	memset(&m, 0, sizeof(m));
	m.rt = rt;
	m.ws = ws;
	m.wp = wp;
	m.h = h;
	m.coll = coll;
	/* Reading and writing the same collection: read everything first so
	 * the scan never meets what the merge wrote. */
	same = h->coll != NULL && strcmp(h->db, wp->db) == 0 && strcmp(h->coll, wp->coll) == 0;
	for (;;) {
		rc = 1;
		while ((same || ws->n < 1000) && (rc = agg_rt_pull(rt, &d, err)) == 1)
			ERR(batch_add(rt, ws, d, err));
		if (rc < 0) {
			ret = -1;
			goto err;
		}
		if (ws->n > 0) {
			/* created with the first write, as mongod's implicit creation */
			if (coll == NULL) {
				ERR(h->get_or_create_coll(h->ctx, wp->db, wp->coll, &coll, err));
				m.coll = coll;
			}
			ERR(storage_txn_run(h->write_session != NULL ? h->write_session : rt->x->s, merge_txn, &m, h->sync,
			    err));
		}
		batch_clear(ws);
		if (rc == 0)
			break;
	}
err:
	storage_coll_release(coll);
	return ret;
}

static int
write_next(agg_rt_t *rt, const bson_t **out, terr_t *err)
{
	const write_plan_t *wp = rt->st->plan;
	const agg_host_t *h = rt->x->p->host;
	write_state_t *ws = rt->state;

	if (ws->done)
		return 0;
	ws->done = true;
	if (h == NULL || h->prepare_doc == NULL || h->check_write == NULL || h->get_or_create_coll == NULL)
		return terr_set(err, TERR_NOT_IMPLEMENTED, "%s is not available here",
		    wp->merge ? "$merge" : "$out");
	if (wp->merge) {
		RET(merge_run(rt, ws, err));
	} else {
		RET(out_run(rt, ws, err));
	}
	return 0;
}

const agg_stage_def_t agg_stages_write[] = {
	{"$out", out_parse, write_open, write_next, write_close, write_free_plan,
	    AGG_F_LAST | AGG_F_WRITES | AGG_F_NOT_IN_FACET},
	{"$merge", merge_parse, write_open, write_next, write_close, write_free_plan,
	    AGG_F_LAST | AGG_F_WRITES | AGG_F_NOT_IN_FACET},
	{NULL},
};
