/*
 * expr_js.c -- $function: a JavaScript function as an aggregation
 * expression (mongod's ExpressionFunction), run by js/ on the calling
 * thread's engine.
 *
 * {$function: {body: <string or code, constant>, args: <array expression>,
 * lang: "js"}}.  The body is compiled once per thread (js_function_get's
 * cache); args are evaluated per document and passed as arguments; the
 * result comes back with mongod's type mapping (numbers as doubles).  The
 * internal _internalSetObjToThis form is what $where desugars into: the
 * single argument (the document) becomes `this` and the global `obj`.
 * Never folded at parse time: a script may read the clock or throw.
 * With scripting disabled, evaluation answers 31264 as mongod does.
 */
#include <string.h>

#include "expr/expr_private.h"
#include "js/script.h"

typedef struct fn_spec {
	char *body;
	size_t len;
	bool this_is_arg;
} fn_spec_t;

static void
fn_spec_free(void *p)
{
	fn_spec_t *f = p;

	if (f != NULL) {
		bson_free(f->body);
		bson_free(f);
	}
}

static int
parse_function(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bson_iter_t it;
	bool have_body = false, have_args = false, have_lang = false, lang_ok = false, this_arg = false;
	bson_value_t body = {0}, args = {0};
	expr_t *parts[1] = {NULL}, *b = NULL;
	const bson_value_t *bv;
	fn_spec_t *f;

	if (scope->in_validator)
		return terr_set(err, 4660800, "$function cannot be used inside a validator.");
	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 31260, "$function requires an object as an argument, found: %s",
		                expr_type_name(arg));
	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "body") == 0 && !have_body) {
			have_body = true;
			body = *bson_iter_value(&it);
		} else if (strcmp(k, "args") == 0 && !have_args) {
			have_args = true;
			args = *bson_iter_value(&it);
		} else if (strcmp(k, "lang") == 0 && !have_lang) {
			uint32_t n;
			have_lang = true;
			lang_ok = BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, &n), "js") == 0;
		} else if (strcmp(k, "_internalSetObjToThis") == 0) {
			this_arg = bson_iter_as_bool(&it);
		}
	}
	if (!have_body)
		return terr_set(err, 31261, "The body function must be specified.");
	RET(expr_parse_sub(&body, scope, &b, err));
	if (!expr_is_constant(b, &bv)) {
		expr_destroy(b);
		return terr_set(err, 31432, "The body function must be a constant expression");
	}
	if (bv->value_type != BSON_TYPE_UTF8 && bv->value_type != BSON_TYPE_CODE) {
		expr_destroy(b);
		return terr_set(err, 31262, "The body function must evaluate to type string or code");
	}
	if (!have_args) {
		expr_destroy(b);
		return terr_set(err, 31263, "The args field must be specified.");
	}
	if (!have_lang) {
		expr_destroy(b);
		return terr_set(err, 31418, "The lang field must be specified.");
	}
	if (!lang_ok) {
		expr_destroy(b);
		return terr_set(err, 31419, "Currently the only supported language specifier is 'js'.");
	}
	f = bson_malloc0(sizeof(*f));
	if (bv->value_type == BSON_TYPE_UTF8) {
		f->len = bv->value.v_utf8.len;
		f->body = bson_strndup(bv->value.v_utf8.str, f->len);
	} else {
		f->len = bv->value.v_code.code_len;
		f->body = bson_strndup(bv->value.v_code.code, f->len);
	}
	f->this_is_arg = this_arg;
	expr_destroy(b);
	if (expr_parse_sub(&args, scope, &parts[0], err) != 0) {
		fn_spec_free(f);
		return -1;
	}
	expr_args_set(e, parts, 1);
	e->extra = f;
	e->extra_free = fn_spec_free;
	return 0;
}

static int
eval_function(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const fn_spec_t *f = e->extra;
	bson_value_t argv;
	bson_t args, result, self;
	bson_iter_t it;
	js_ctx_t *ctx;
	js_ref_t fn;
	int mark, rc;

	if (!js_enabled())
		return terr_set(err, 31264,
		                "Cannot run server-side javascript without the javascript engine enabled");
	RET(expr_eval_arg(e, 0, env, &argv, err));
	if (argv.value_type != BSON_TYPE_ARRAY)
		return terr_set(err, 31266, "The args field must be of type array");
	if (!bson_init_static(&args, argv.value.v_doc.data, argv.value.v_doc.data_len))
		return terr_set(err, TERR_BAD_VALUE, "invalid args array");
	/* $where (the _internalSetObjToThis form) sees system.js, $function not */
	RET(js_scope_enter_for(f->this_is_arg, &ctx, err));
	mark = js_top(ctx);
	fn = js_function_get(ctx, f->body, f->len, err);
	if (fn < 0) {
		js_pop_to(ctx, mark);
		return -1;
	}
	if (f->this_is_arg) {
		/* the $where form: the one argument is the document */
		js_ref_t g, o;
		if (bson_count_keys(&args) != 1 || !bson_iter_init(&it, &args) || !bson_iter_next(&it) ||
		    !BSON_ITER_HOLDS_DOCUMENT(&it)) {
			js_pop_to(ctx, mark);
			return terr_set(err, 31422, "field path $$CURRENT must be the only element in args");
		}
		uint32_t len;
		const uint8_t *data;
		bson_iter_document(&it, &len, &data);
		bson_init_static(&self, data, len);
		g = js_push_global(ctx);
		o = js_push_bson_doc(ctx, &self, err);
		if (g < 0 || o < 0 || js_set(ctx, g, "obj", 3, o) != 0) {
			js_pop_to(ctx, mark);
			return terr_is_set(err) ? -1 : terr_set(err, 139, "Out of memory");
		}
		/* one conversion: `this` and `obj` are the same object */
		rc = js_invoke_this(ctx, fn, o, NULL, &result, err);
	} else
		rc = js_invoke(ctx, fn, NULL, &args, &result, err);
	js_pop_to(ctx, mark);
	if (rc == 0 && bson_iter_init_find(&it, &result, "r"))
		expr_env_copy_value(env, bson_iter_value(&it), out);
	bson_destroy(&result);
	return rc;
}

const expr_op_t expr_ops_js[] = {
	{"$function", 0, -1, parse_function, eval_function, EXPR_OP_NOFOLD},
	{NULL, 0, 0, NULL, NULL, 0},
};
