/*
 * cmd_mapreduce.c -- mapReduce, as mongod 5.0+ runs it: the source is read
 * through an aggregation ($match query, $sort, $limit), map runs with
 * `this` = each document and emit(key, value) collects pairs, every key's
 * values go through reduce (also a key with one value, as mongod's
 * $_internalJsReduce does), then finalize(key, value) when given; the
 * results, {_id: key, value}, sorted by key, are returned inline
 * ({results: [...]}) or written to a collection ({result: name} or
 * {result: {db, collection}}): `replace` (the default for a string) through
 * $out, `merge` through $merge (replace on _id), `reduce` by reducing each
 * existing document's value with the new one first.
 *
 * The reads and writes are nested commands (aggregate / getMore / find /
 * insert / drop on this connection), so they go through the same planner,
 * auth, validation and oplog as the client's own.  `scope` variables are
 * globals of the run; jsMode and verbose are accepted (they change nothing
 * a client sees since 4.4).  Scripting disabled: 31264, as mongod.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bson/value.h"
#include "commands/commands_private.h"
#include "common/opctx.h"
#include "js/script.h"

typedef struct mr_pair {
	bson_value_t k, v;       /* owned */
	uint64_t seq;
} mr_pair_t;

typedef struct mr_run {
	mr_pair_t *pairs;
	size_t n, cap;
	size_t bytes;
} mr_run_t;

#define MR_MAX_BYTES (512u * 1024 * 1024)

static int
mr_emit(void *arg, const bson_t *kv, terr_t *err)
{
	mr_run_t *r = arg;
	bson_iter_t it;

	if (r->bytes + kv->len > MR_MAX_BYTES)
		return terr_set(err, 146 /* ExceededMemoryLimit */,
		                "mapReduce exceeded its memory limit while emitting");
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 256;
		r->pairs = bson_realloc(r->pairs, r->cap * sizeof(*r->pairs));
	}
	mr_pair_t *p = &r->pairs[r->n];
	bson_iter_init_find(&it, kv, "k");
	bson_value_copy(bson_iter_value(&it), &p->k);
	bson_iter_init_find(&it, kv, "v");
	bson_value_copy(bson_iter_value(&it), &p->v);
	p->seq = r->n++;
	r->bytes += kv->len;
	return 0;
}

static int
pair_cmp(const void *a, const void *b)
{
	const mr_pair_t *x = a, *y = b;
	int c = bv_compare(&x->k, &y->k);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void
mr_run_free(mr_run_t *r)
{
	for (size_t i = 0; i < r->n; i++) {
		bson_value_destroy(&r->pairs[i].k);
		bson_value_destroy(&r->pairs[i].v);
	}
	bson_free(r->pairs);
}

/* A nested command on this connection; reply initialised here. */
static int
nested(cmd_t *c, const char *db, const bson_t *cmd, bson_t *reply, terr_t *err)
{
	return engine_run_command(c->engine, c->client, db, cmd, reply, err) == 0 ? 0 : -1;
}

static int
code_arg(cmd_t *c, const char *field, char **out, size_t *len, bool required, terr_t *err)
{
	bson_iter_t it;

	*out = NULL;
	if (!cmd_find_field(c, field, &it)) {
		if (required)
			return terr_set(err, 40414, "BSON field 'mapReduce.%s' is missing but a required field",
			                field);
		return 0;
	}
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		uint32_t n;
		const char *s = bson_iter_utf8(&it, &n);
		*out = bson_strndup(s, n);
		*len = n;
	} else if (BSON_ITER_HOLDS_CODE(&it)) {
		uint32_t n;
		const char *s = bson_iter_code(&it, &n);
		*out = bson_strndup(s, n);
		*len = n;
	} else if (BSON_ITER_HOLDS_CODEWSCOPE(&it)) {
		uint32_t n, sl;
		const uint8_t *sd;
		const char *s = bson_iter_codewscope(&it, &n, &sl, &sd);
		*out = bson_strndup(s, n);
		*len = n;
	} else if (!required && BSON_ITER_HOLDS_NULL(&it)) {
		return 0;
	} else
		return terr_set(err, TERR_TYPE_MISMATCH,
		                "BSON field 'mapReduce.%s' is the wrong type '%s', expected types '[string, javascript]'",
		                field, bv_type_name(bson_iter_type(&it)));
	return 0;
}

/* Read every source document through aggregate + getMore and run map. */
static int
mr_map(cmd_t *c, const char *coll, js_ctx_t *ctx, js_ref_t map_fn, mr_run_t *run, terr_t *err)
{
	bson_t cmd = BSON_INITIALIZER, pipe, st, cur, reply;
	bson_iter_t it, f;
	int64_t cursor_id = 0;
	int n = 0, ret = -1;
	char k[16];

	BSON_APPEND_UTF8(&cmd, "aggregate", coll);
	BSON_APPEND_ARRAY_BEGIN(&cmd, "pipeline", &pipe);
	if (cmd_find_field(c, "query", &it) && !BSON_ITER_HOLDS_NULL(&it)) {
		snprintf(k, sizeof k, "%d", n++);
		BSON_APPEND_DOCUMENT_BEGIN(&pipe, k, &st);
		bson_append_iter(&st, "$match", 6, &it);
		bson_append_document_end(&pipe, &st);
	}
	if (cmd_find_field(c, "sort", &it) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_t sv;
		uint32_t len;
		const uint8_t *data;
		bson_iter_document(&it, &len, &data);
		bson_init_static(&sv, data, len);
		if (!bson_empty(&sv)) {
			snprintf(k, sizeof k, "%d", n++);
			BSON_APPEND_DOCUMENT_BEGIN(&pipe, k, &st);
			bson_append_iter(&st, "$sort", 5, &it);
			bson_append_document_end(&pipe, &st);
		}
	}
	if (cmd_find_field(c, "limit", &it) && BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) > 0) {
		snprintf(k, sizeof k, "%d", n++);
		BSON_APPEND_DOCUMENT_BEGIN(&pipe, k, &st);
		BSON_APPEND_INT64(&st, "$limit", bson_iter_as_int64(&it));
		bson_append_document_end(&pipe, &st);
	}
	bson_append_array_end(&cmd, &pipe);
	BSON_APPEND_DOCUMENT_BEGIN(&cmd, "cursor", &cur);
	bson_append_document_end(&cmd, &cur);
	if (cmd_find_field(c, "collation", &it))
		bson_append_iter(&cmd, "collation", 9, &it);
	if (nested(c, c->db, &cmd, &reply, err) != 0) {
		bson_destroy(&cmd);
		bson_destroy(&reply);
		return -1;
	}
	bson_destroy(&cmd);
	for (;;) {
		const char *batch = cursor_id == 0 ? "cursor.firstBatch" : "cursor.nextBatch";
		if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, batch, &f) &&
		    BSON_ITER_HOLDS_ARRAY(&f)) {
			bson_iter_t d;
			bson_iter_recurse(&f, &d);
			while (bson_iter_next(&d)) {
				bson_t doc, result;
				uint32_t len;
				const uint8_t *data;
				if (!BSON_ITER_HOLDS_DOCUMENT(&d))
					continue;
				if (tm_interrupt_check(err) != 0)
					goto out;
				bson_iter_document(&d, &len, &data);
				bson_init_static(&doc, data, len);
				if (js_invoke(ctx, map_fn, &doc, NULL, &result, err) != 0) {
					bson_destroy(&result);
					goto out;
				}
				bson_destroy(&result);
			}
		}
		if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.id", &f))
			cursor_id = bson_iter_as_int64(&f);
		else
			cursor_id = 0;
		bson_destroy(&reply);
		bson_init(&reply);
		if (cursor_id == 0)
			break;
		bson_t gm = BSON_INITIALIZER;
		BSON_APPEND_INT64(&gm, "getMore", cursor_id);
		BSON_APPEND_UTF8(&gm, "collection", coll);
		bson_destroy(&reply);
		int rc = nested(c, c->db, &gm, &reply, err);
		bson_destroy(&gm);
		if (rc != 0) {
			cursor_id = 0;
			goto out;
		}
	}
	ret = 0;
out:
	bson_destroy(&reply);
	if (cursor_id != 0) {
		bson_t kc = BSON_INITIALIZER, ids, r2;
		terr_t e2 = TERR_INIT;
		BSON_APPEND_UTF8(&kc, "killCursors", coll);
		BSON_APPEND_ARRAY_BEGIN(&kc, "cursors", &ids);
		BSON_APPEND_INT64(&ids, "0", cursor_id);
		bson_append_array_end(&kc, &ids);
		nested(c, c->db, &kc, &r2, &e2);
		bson_destroy(&kc);
		bson_destroy(&r2);
		terr_clear(&e2);
	}
	return ret;
}

/* fn(key, value-or-values) -> *out (owned). */
static int
mr_call2(js_ctx_t *ctx, js_ref_t fn, const bson_value_t *k, const bson_value_t *v, bool v_is_array,
         const mr_pair_t *vals, size_t nv, bson_value_t *out, terr_t *err)
{
	bson_t args = BSON_INITIALIZER, result;
	bson_iter_t it;
	int rc;

	bv_append(&args, "0", 1, k);
	if (v_is_array) {
		bson_t arr;
		char key[16];
		const char *kp;
		BSON_APPEND_ARRAY_BEGIN(&args, "1", &arr);
		for (size_t i = 0; i < nv; i++) {
			size_t kl = bson_uint32_to_string((uint32_t)i, &kp, key, sizeof key);
			bv_append(&arr, kp, (int)kl, &vals[i].v);
		}
		bson_append_array_end(&args, &arr);
	} else
		bv_append(&args, "1", 1, v);
	rc = js_invoke(ctx, fn, NULL, &args, &result, err);
	bson_destroy(&args);
	if (rc == 0 && bson_iter_init_find(&it, &result, "r"))
		bson_value_copy(bson_iter_value(&it), out);
	bson_destroy(&result);
	return rc;
}

/* Insert docs (an array of {_id, value}) into db.coll in batches. */
static int
mr_insert(cmd_t *c, const char *db, const char *coll, const bson_t *docs, terr_t *err)
{
	bson_iter_t it;
	bool more;

	bson_iter_init(&it, docs);
	more = bson_iter_next(&it);
	while (more) {
		bson_t cmd = BSON_INITIALIZER, arr, reply;
		bson_iter_t we;
		uint32_t i = 0;
		size_t bytes = 0;
		BSON_APPEND_UTF8(&cmd, "insert", coll);
		BSON_APPEND_ARRAY_BEGIN(&cmd, "documents", &arr);
		while (more && i < 10000 && bytes < 8 * 1024 * 1024) {
			char key[16];
			const char *kp;
			size_t kl = bson_uint32_to_string(i++, &kp, key, sizeof key);
			bv_append(&arr, kp, (int)kl, bson_iter_value(&it));
			bytes += bson_iter_value(&it)->value.v_doc.data_len;
			more = bson_iter_next(&it);
		}
		bson_append_array_end(&cmd, &arr);
		BSON_APPEND_BOOL(&cmd, "ordered", true);
		if (nested(c, db, &cmd, &reply, err) != 0) {
			bson_destroy(&cmd);
			bson_destroy(&reply);
			return -1;
		}
		bson_destroy(&cmd);
		if (bson_iter_init_find(&we, &reply, "writeErrors")) {
			bson_iter_t m;
			const char *msg = "write error";
			if (bson_iter_recurse(&we, &m) && bson_iter_find_descendant(&m, "0.errmsg", &m) &&
			    BSON_ITER_HOLDS_UTF8(&m))
				msg = bson_iter_utf8(&m, NULL);
			terr_set(err, TERR_BAD_VALUE, "mapReduce could not write its output: %s", msg);
			bson_destroy(&reply);
			return -1;
		}
		bson_destroy(&reply);
	}
	return 0;
}

CMD_HANDLER(cmd_map_reduce)
{
	static const char *const fields[] = {"map", "reduce", "out", "query", "sort", "limit",
		"finalize", "scope", "jsMode", "verbose", "bypassDocumentValidation", "collation",
		"sharded", "nonAtomic", "keeptemp", NULL};
	char *map_src = NULL, *reduce_src = NULL, *fin_src = NULL;
	size_t map_len = 0, reduce_len = 0, fin_len = 0;
	const char *coll, *out_name = NULL, *out_db = NULL, *mode = "replace";
	bool inline_out = false;
	bson_iter_t it, o;
	mr_run_t run = {0};
	bson_t results = BSON_INITIALIZER;
	js_ctx_t *ctx = NULL;
	js_ref_t map_fn, reduce_fn, fin_fn = -1;
	int mark = 0, ret = -1;
	uint32_t nres = 0;

	ERR(cmd_collection_arg(c, &coll, err));
	ERR(cmd_check_fields(c, fields, err));
	ERR(code_arg(c, "map", &map_src, &map_len, true, err));
	ERR(code_arg(c, "reduce", &reduce_src, &reduce_len, true, err));
	ERR(code_arg(c, "finalize", &fin_src, &fin_len, false, err));
	if (!cmd_find_field(c, "out", &it)) {
		ret = terr_set(err, 40414, "BSON field 'mapReduce.out' is missing but a required field");
		goto err;
	}
	if (BSON_ITER_HOLDS_UTF8(&it)) {
		out_name = bson_iter_utf8(&it, NULL);
	} else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_iter_recurse(&it, &o);
		while (bson_iter_next(&o)) {
			const char *k = bson_iter_key(&o);
			if (strcmp(k, "inline") == 0)
				inline_out = true;
			else if (strcmp(k, "replace") == 0 || strcmp(k, "merge") == 0 ||
			         strcmp(k, "reduce") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&o)) {
					ret = terr_set(err, TERR_BAD_VALUE, "'%s' must be a string", k);
					goto err;
				}
				mode = k;
				out_name = bson_iter_utf8(&o, NULL);
			} else if (strcmp(k, "db") == 0) {
				if (!BSON_ITER_HOLDS_UTF8(&o)) {
					ret = terr_set(err, TERR_BAD_VALUE, "'db' must be a string");
					goto err;
				}
				out_db = bson_iter_utf8(&o, NULL);
			} else if (strcmp(k, "sharded") == 0 || strcmp(k, "nonAtomic") == 0) {
				if (strcmp(k, "sharded") == 0 && bson_iter_as_bool(&o)) {
					ret = terr_set(err, TERR_INVALID_OPTIONS,
					               "Cannot specify 'sharded: true' on a mapReduce that is not run on a sharded cluster");
					goto err;
				}
			} else {
				ret = terr_set(err, TERR_BAD_VALUE, "Invalid mapReduce output option: %s", k);
				goto err;
			}
		}
		if (!inline_out && out_name == NULL) {
			ret = terr_set(err, TERR_BAD_VALUE,
			               "'out' requires 'replace', 'merge', 'reduce' or 'inline'");
			goto err;
		}
	} else {
		ret = terr_set(err, TERR_BAD_VALUE, "'out' must be either a string or an object");
		goto err;
	}
	if (out_db != NULL && (strcmp(out_db, "admin") == 0 || strcmp(out_db, "config") == 0)) {
		ret = terr_set(err, TERR_COMMAND_NOT_SUPPORTED,
		               "Can't output mapReduce results to special database %s", out_db);
		goto err;
	}
	if (!js_enabled()) {
		ret = terr_set(err, 31264,
		               "Cannot run server-side javascript without the javascript engine enabled");
		goto err;
	}
	ERR(js_scope_enter_for(true, &ctx, err)); /* mapReduce sees system.js */
	mark = js_top(ctx);
	if (cmd_find_field(c, "scope", &it) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
		bson_t sc;
		bson_iter_t s;
		uint32_t len;
		const uint8_t *data;
		js_ref_t g = js_push_global(ctx);
		bson_iter_document(&it, &len, &data);
		bson_init_static(&sc, data, len);
		bson_iter_init(&s, &sc);
		while (bson_iter_next(&s)) {
			js_ref_t v = js_push_bson_value(ctx, bson_iter_value(&s), err);
			if (v < 0 || js_set(ctx, g, bson_iter_key(&s), bson_iter_key_len(&s), v) != 0) {
				if (!terr_is_set(err))
					terr_set(err, 139, "Out of memory");
				goto err;
			}
		}
	}
	if ((map_fn = js_function_get(ctx, map_src, map_len, err)) < 0 ||
	    (reduce_fn = js_function_get(ctx, reduce_src, reduce_len, err)) < 0)
		goto err;
	if (fin_src != NULL && (fin_fn = js_function_get(ctx, fin_src, fin_len, err)) < 0)
		goto err;

	js_set_emit_sink(mr_emit, &run);
	ret = mr_map(c, coll, ctx, map_fn, &run, err);
	js_set_emit_sink(NULL, NULL);
	if (ret != 0)
		goto err;
	ret = -1;

	/* group by key (MongoDB's order; emit order within a key) and reduce */
	if (run.n > 0)
		qsort(run.pairs, run.n, sizeof(*run.pairs), pair_cmp);
	for (size_t i = 0; i < run.n;) {
		size_t j = i + 1;
		bson_value_t red, fin;
		bson_t doc;
		char key[16];
		const char *kp;
		size_t kl;

		while (j < run.n && bv_compare(&run.pairs[i].k, &run.pairs[j].k) == 0)
			j++;
		if (tm_interrupt_check(err) != 0)
			goto err;
		if (mr_call2(ctx, reduce_fn, &run.pairs[i].k, NULL, true, &run.pairs[i], j - i, &red, err) != 0)
			goto err;
		if (fin_fn >= 0) {
			int rc = mr_call2(ctx, fin_fn, &run.pairs[i].k, &red, false, NULL, 0, &fin, err);
			bson_value_destroy(&red);
			if (rc != 0)
				goto err;
			red = fin;
		}
		kl = bson_uint32_to_string(nres++, &kp, key, sizeof key);
		bson_append_document_begin(&results, kp, (int)kl, &doc);
		bv_append(&doc, "_id", 3, &run.pairs[i].k);
		bv_append(&doc, "value", 5, &red);
		bson_append_document_end(&results, &doc);
		bson_value_destroy(&red);
		if (results.len > 64 * 1024 * 1024) {
			ret = terr_set(err, 146 /* ExceededMemoryLimit */, "mapReduce output exceeds its limit");
			goto err;
		}
		i = j;
	}

	if (inline_out) {
		if (results.len > 16 * 1024 * 1024) {
			ret = terr_set(err, TERR_BSON_OBJECT_TOO_LARGE,
			               "mapReduce inline results exceed the 16MB limit: use an output collection");
			goto err;
		}
		BSON_APPEND_ARRAY(c->reply, "results", &results);
		ret = 0;
		goto err;
	}
	{
		const char *db = out_db != NULL ? out_db : c->db;
		char tmp[256];
		bson_t cmd, reply, pipe, st, spec, into;
		static atomic_llong tmp_seq;
		int rc;

		if (strcmp(mode, "reduce") == 0 && nres > 0) {
			/* reduce each existing document's value with the new one */
			bson_t keys = BSON_INITIALIZER, filter = BSON_INITIALIZER, in, reduced = BSON_INITIALIZER;
			bson_iter_t r, e;
			uint32_t i = 0;
			bson_iter_init(&r, &results);
			while (bson_iter_next(&r)) {
				bson_iter_t id;
				char key[16];
				const char *kp;
				size_t kl = bson_uint32_to_string(i++, &kp, key, sizeof key);
				bson_iter_recurse(&r, &id);
				bson_iter_find(&id, "_id");
				bv_append(&keys, kp, (int)kl, bson_iter_value(&id));
			}
			BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &in);
			BSON_APPEND_ARRAY(&in, "$in", &keys);
			bson_append_document_end(&filter, &in);
			bson_init(&cmd);
			BSON_APPEND_UTF8(&cmd, "find", out_name);
			BSON_APPEND_DOCUMENT(&cmd, "filter", &filter);
			BSON_APPEND_INT64(&cmd, "batchSize", INT32_MAX);
			BSON_APPEND_BOOL(&cmd, "singleBatch", true);
			rc = nested(c, db, &cmd, &reply, err);
			bson_destroy(&cmd);
			bson_destroy(&keys);
			bson_destroy(&filter);
			if (rc != 0) {
				bson_destroy(&reply);
				bson_destroy(&reduced);
				goto err;
			}
			i = 0;
			bson_iter_init(&r, &results);
			while (bson_iter_next(&r)) {
				bson_t rd, nd;
				bson_iter_t id, val, f;
				uint32_t len;
				const uint8_t *data;
				char key[16];
				const char *kp;
				size_t kl = bson_uint32_to_string(i++, &kp, key, sizeof key);
				bson_value_t merged;
				bool found = false;
				bson_iter_document(&r, &len, &data);
				bson_init_static(&rd, data, len);
				bson_iter_init_find(&id, &rd, "_id");
				bson_iter_init_find(&val, &rd, "value");
				if (bson_iter_init(&e, &reply) && bson_iter_find_descendant(&e, "cursor.firstBatch", &f)) {
					bson_iter_t d;
					bson_iter_recurse(&f, &d);
					while (!found && bson_iter_next(&d)) {
						bson_t ed;
						bson_iter_t eid, ev;
						bson_iter_document(&d, &len, &data);
						bson_init_static(&ed, data, len);
						if (bson_iter_init_find(&eid, &ed, "_id") &&
						    bv_compare(bson_iter_value(&eid), bson_iter_value(&id)) == 0) {
							mr_pair_t two[2];
							found = true;
							if (!bson_iter_init_find(&ev, &ed, "value"))
								break;
							two[0].v = *bson_iter_value(&ev);
							two[1].v = *bson_iter_value(&val);
							if (mr_call2(ctx, reduce_fn, bson_iter_value(&id), NULL, true, two, 2,
							             &merged, err) != 0) {
								bson_destroy(&reply);
								bson_destroy(&reduced);
								goto err;
							}
							bson_append_document_begin(&reduced, kp, (int)kl, &nd);
							bv_append(&nd, "_id", 3, bson_iter_value(&id));
							bv_append(&nd, "value", 5, &merged);
							bson_append_document_end(&reduced, &nd);
							bson_value_destroy(&merged);
						}
					}
				}
				if (!found)
					BSON_APPEND_DOCUMENT(&reduced, kp, &rd);
			}
			bson_destroy(&reply);
			bson_destroy(&results);
			results = reduced;
		}

		snprintf(tmp, sizeof tmp, "tmp.mr.%s_%lld", coll, (long long)atomic_fetch_add(&tmp_seq, 1));
		if (nres > 0 && mr_insert(c, db, tmp, &results, err) != 0)
			goto drop_tmp;
		bson_init(&cmd);
		BSON_APPEND_UTF8(&cmd, "aggregate", tmp);
		BSON_APPEND_ARRAY_BEGIN(&cmd, "pipeline", &pipe);
		BSON_APPEND_DOCUMENT_BEGIN(&pipe, "0", &st);
		if (strcmp(mode, "replace") == 0) {
			BSON_APPEND_DOCUMENT_BEGIN(&st, "$out", &spec);
			BSON_APPEND_UTF8(&spec, "db", db);
			BSON_APPEND_UTF8(&spec, "coll", out_name);
		} else {
			BSON_APPEND_DOCUMENT_BEGIN(&st, "$merge", &spec);
			BSON_APPEND_DOCUMENT_BEGIN(&spec, "into", &into);
			BSON_APPEND_UTF8(&into, "db", db);
			BSON_APPEND_UTF8(&into, "coll", out_name);
			bson_append_document_end(&spec, &into);
			BSON_APPEND_UTF8(&spec, "on", "_id");
			BSON_APPEND_UTF8(&spec, "whenMatched", "replace");
			BSON_APPEND_UTF8(&spec, "whenNotMatched", "insert");
		}
		bson_append_document_end(&st, &spec);
		bson_append_document_end(&pipe, &st);
		bson_append_array_end(&cmd, &pipe);
		BSON_APPEND_DOCUMENT_BEGIN(&cmd, "cursor", &st);
		bson_append_document_end(&cmd, &st);
		if (cmd_find_field(c, "bypassDocumentValidation", &it))
			bson_append_iter(&cmd, "bypassDocumentValidation", -1, &it);
		rc = nested(c, db, &cmd, &reply, err);
		bson_destroy(&cmd);
		bson_destroy(&reply);
		if (rc == 0) {
			if (out_db != NULL) {
				bson_t r;
				BSON_APPEND_DOCUMENT_BEGIN(c->reply, "result", &r);
				BSON_APPEND_UTF8(&r, "db", db);
				BSON_APPEND_UTF8(&r, "collection", out_name);
				bson_append_document_end(c->reply, &r);
			} else
				BSON_APPEND_UTF8(c->reply, "result", out_name);
			ret = 0;
		}
drop_tmp:
		{
			bson_t d = BSON_INITIALIZER, dr;
			terr_t e2 = TERR_INIT;
			BSON_APPEND_UTF8(&d, "drop", tmp);
			nested(c, db, &d, &dr, &e2);
			bson_destroy(&d);
			bson_destroy(&dr);
			terr_clear(&e2);
		}
	}
err:
	js_set_emit_sink(NULL, NULL);
	if (ctx != NULL)
		js_pop_to(ctx, mark);
	mr_run_free(&run);
	bson_destroy(&results);
	bson_free(map_src);
	bson_free(reduce_src);
	bson_free(fin_src);
	return ret;
}
