/*
 * accum_js.c -- $accumulator: a $group accumulator written in JavaScript
 * (mongod's AccumulatorJs), run by js/ on the calling thread's engine.
 *
 * {$accumulator: {init, initArgs, accumulate, accumulateArgs, merge,
 * finalize, lang: "js"}}: init(...initArgs) makes a group's state on its
 * first document (initArgs evaluated against that document), each document
 * then sets state = accumulate(state, ...accumulateArgs), two partial
 * states (a $group that spilled) combine through merge(a, b), and the
 * group's value is finalize(state) (the state itself without finalize).
 * The state is always a BSON value between calls, so accum.c saves and
 * reloads it with every other accumulator's state when $group spills.
 * Parse errors are mongod's 4544701-4544710; with scripting disabled the
 * first call answers 31264.
 */
#include <string.h>

#include "expr/expr_private.h"
#include "js/script.h"

struct accum_js {
	char *src[4];          /* init, accumulate, merge, finalize (NULL: none) */
	size_t len[4];
	expr_t *init_args;     /* NULL: [] */
	expr_t *acc_args;
};

enum { F_INIT, F_ACC, F_MERGE, F_FIN };
static const char *const fnames[4] = {"init", "accumulate", "merge", "finalize"};

void
accum_js_free(accum_js_t *j)
{
	if (j == NULL)
		return;
	for (int i = 0; i < 4; i++)
		bson_free(j->src[i]);
	expr_destroy(j->init_args);
	expr_destroy(j->acc_args);
	bson_free(j);
}

static int
parse_code(const char *name, const bson_value_t *v, expr_scope_t *scope, char **out, size_t *len,
           terr_t *err)
{
	expr_t *e = NULL;
	const bson_value_t *c;

	RET(expr_parse(v, scope, &e, err));
	if (!expr_is_constant(e, &c)) {
		expr_destroy(e);
		return terr_set(err, 4544701, "$accumulator '%s' must be a constant expression", name);
	}
	if (c->value_type == BSON_TYPE_UTF8) {
		*len = c->value.v_utf8.len;
		*out = bson_strndup(c->value.v_utf8.str, *len);
	} else if (c->value_type == BSON_TYPE_CODE) {
		*len = c->value.v_code.code_len;
		*out = bson_strndup(c->value.v_code.code, *len);
	} else {
		expr_destroy(e);
		return terr_set(err, 4544702, "$accumulator '%s' must be a String or Code", name);
	}
	expr_destroy(e);
	return 0;
}

int
accum_js_parse(const bson_value_t *arg, expr_scope_t *scope, accum_js_t **out, terr_t *err)
{
	accum_js_t *j;
	bson_iter_t it;
	int ret = 0;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 4544703, "$accumulator expects an object as an argument; found: %s",
		                expr_type_name(arg));
	j = bson_malloc0(sizeof(*j));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int f = -1;
		for (int i = 0; i < 4; i++)
			if (strcmp(k, fnames[i]) == 0)
				f = i;
		if (f >= 0) {
			bson_free(j->src[f]);
			j->src[f] = NULL;
			ERR(parse_code(k, bson_iter_value(&it), scope, &j->src[f], &j->len[f], err));
		} else if (strcmp(k, "initArgs") == 0) {
			expr_destroy(j->init_args);
			j->init_args = NULL;
			ERR(expr_parse(bson_iter_value(&it), scope, &j->init_args, err));
		} else if (strcmp(k, "accumulateArgs") == 0) {
			expr_destroy(j->acc_args);
			j->acc_args = NULL;
			ERR(expr_parse(bson_iter_value(&it), scope, &j->acc_args, err));
		} else if (strcmp(k, "lang") == 0) {
			uint32_t n;
			if (!BSON_ITER_HOLDS_UTF8(&it)) {
				ret = terr_set(err, 4544704, "$accumulator lang must be a string; found: %s",
				               expr_type_name(bson_iter_value(&it)));
				goto err;
			}
			if (strcmp(bson_iter_utf8(&it, &n), "js") != 0) {
				ret = terr_set(err, 4544705, "$accumulator only supports lang: 'js'");
				goto err;
			}
		} else {
			ret = terr_set(err, 4544706, "$accumulator got an unexpected field: %s", k);
			goto err;
		}
	}
	if (j->src[F_INIT] == NULL || j->len[F_INIT] == 0) {
		ret = terr_set(err, 4544707, "$accumulator missing required argument 'init'");
		goto err;
	}
	if (j->src[F_ACC] == NULL || j->len[F_ACC] == 0) {
		ret = terr_set(err, 4544708, "$accumulator missing required argument 'accumulate'");
		goto err;
	}
	if (j->src[F_MERGE] == NULL || j->len[F_MERGE] == 0) {
		ret = terr_set(err, 4544709, "$accumulator missing required argument 'merge'");
		goto err;
	}
	if (j->acc_args == NULL) {
		ret = terr_set(err, 4544710, "$accumulator missing required argument 'accumulateArgs'");
		goto err;
	}
	*out = j;
	return 0;
err:
	accum_js_free(j);
	return ret < 0 ? ret : -1;
}

/* f(state?, ...array elements) -> *out (owned copy). */
static int
call(const accum_js_t *j, int f, const bson_value_t *state, const bson_value_t *state2,
     const bson_value_t *arr, bson_value_t *out, terr_t *err)
{
	bson_t args = BSON_INITIALIZER, result;
	uint32_t idx = 0;
	bson_iter_t it;
	js_ctx_t *ctx;
	js_ref_t fn;
	int mark, rc;

	if (!js_enabled()) {
		bson_destroy(&args);
		return terr_set(err, 31264,
		                "Cannot run server-side javascript without the javascript engine enabled");
	}
	if (state != NULL)
		expr_array_append(&args, &idx, state);
	if (state2 != NULL)
		expr_array_append(&args, &idx, state2);
	if (arr != NULL && expr_iter_init(&it, arr))
		while (bson_iter_next(&it))
			expr_array_append(&args, &idx, bson_iter_value(&it));
	if (js_scope_enter_for(false, &ctx, err) != 0) {
		bson_destroy(&args);
		return -1;
	}
	mark = js_top(ctx);
	fn = js_function_get(ctx, j->src[f], j->len[f], err);
	rc = fn < 0 ? -1 : js_invoke(ctx, fn, NULL, &args, &result, err);
	js_pop_to(ctx, mark);
	bson_destroy(&args);
	if (rc == 0) {
		if (bson_iter_init_find(&it, &result, "r"))
			bson_value_copy(bson_iter_value(&it), out);
		else
			expr_set_null(out);
	}
	if (fn >= 0)
		bson_destroy(&result);
	return rc;
}

int
accum_js_init(const accum_js_t *j, expr_env_t *env, bson_value_t *state, terr_t *err)
{
	bson_value_t a;

	if (j->init_args != NULL) {
		RET(expr_eval(j->init_args, env, &a, err));
		if (a.value_type != BSON_TYPE_ARRAY)
			return terr_set(err, 4544711, "$accumulator initArgs must evaluate to an array: %s",
			                expr_type_name(&a));
		return call(j, F_INIT, NULL, NULL, &a, state, err);
	}
	return call(j, F_INIT, NULL, NULL, NULL, state, err);
}

int
accum_js_accumulate(const accum_js_t *j, expr_env_t *env, bson_value_t *state, terr_t *err)
{
	bson_value_t a, next;

	RET(expr_eval(j->acc_args, env, &a, err));
	if (a.value_type != BSON_TYPE_ARRAY)
		return terr_set(err, 4544712, "$accumulator accumulateArgs must evaluate to an array: %s",
		                expr_type_name(&a));
	RET(call(j, F_ACC, state, NULL, &a, &next, err));
	bson_value_destroy(state);
	*state = next;
	return 0;
}

int
accum_js_merge(const accum_js_t *j, bson_value_t *into, const bson_value_t *from, terr_t *err)
{
	bson_value_t next;

	RET(call(j, F_MERGE, into, from, NULL, &next, err));
	bson_value_destroy(into);
	*into = next;
	return 0;
}

int
accum_js_finalize(const accum_js_t *j, const bson_value_t *state, expr_env_t *env,
                  bson_value_t *out, terr_t *err)
{
	bson_value_t r;

	if (j->src[F_FIN] == NULL) {
		*out = *state;
		return 0;
	}
	RET(call(j, F_FIN, state, NULL, NULL, &r, err));
	expr_env_copy_value(env, &r, out);
	bson_value_destroy(&r);
	return 0;
}
