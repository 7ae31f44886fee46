/*
 * expr_parse.c -- turning an expression spec (BSON) into an expr_t tree:
 * literals, field paths, variables, expression objects and arrays, and
 * operator lookup across the family tables; constant folding of subtrees
 * that depend on nothing (as mongod's optimize() does, so errors such as
 * {$divide: [1, 0]} surface at parse time there too).
 *
 * Not here: what each operator does (expr_<family>.c), evaluation of the
 * generic node kinds (expr_eval.c).
 */
#include "bson/path.h"
#include "expr/expr_private.h"

#include <string.h>

#include "bson/value.h"

#define EXPR_MAX_DEPTH 150

static const expr_op_t *const op_tables[] = {
	expr_ops_arith, expr_ops_logic, expr_ops_string, expr_ops_array,
	expr_ops_object, expr_ops_type, expr_ops_date, expr_ops_accum, expr_ops_misc, expr_ops_js,
};

static const expr_op_t *
op_find(const char *name)
{
	for (size_t t = 0; t < sizeof(op_tables) / sizeof(op_tables[0]); t++) {
		for (const expr_op_t *op = op_tables[t]; op->name != NULL; op++) {
			if (strcmp(op->name, name) == 0)
				return op;
		}
	}
	return NULL;
}

expr_t *
expr_node_new(enum expr_kind kind)
{
	expr_t *e = bson_malloc0(sizeof(*e));
	e->kind = kind;
	e->var = -1;
	e->var2 = -1;
	return e;
}

void
expr_destroy(expr_t *e)
{
	if (e == NULL)
		return;
	if (e->kind == EXPR_CONST)
		bson_value_destroy(&e->value);
	for (size_t i = 0; i < e->nargs; i++) {
		expr_destroy(e->args[i]);
		if (e->names != NULL)
			bson_free(e->names[i]);
	}
	bson_free(e->args);
	bson_free(e->names);
	bson_free(e->path);
	if (e->extra != NULL && e->extra_free != NULL)
		e->extra_free(e->extra);
	bson_free(e);
}

static void
node_push(expr_t *e, expr_t *arg, const char *name)
{
	e->args = bson_realloc(e->args, (e->nargs + 1) * sizeof(*e->args));
	if (name != NULL || e->names != NULL) {
		e->names = bson_realloc(e->names, (e->nargs + 1) * sizeof(*e->names));
		e->names[e->nargs] = name ? bson_strdup(name) : NULL;
	}
	e->args[e->nargs++] = arg;
}

static expr_t *
const_new(const bson_value_t *v)
{
	expr_t *e = expr_node_new(EXPR_CONST);
	if (v->value_type == BSON_TYPE_EOD)
		expr_set_missing(&e->value);
	else
		bson_value_copy(v, &e->value);
	e->constant = true;
	return e;
}

/* Check "a.b.c" as a FieldPath (no empty parts, no '$' prefixes). */
static int
check_field_path(const char *p, size_t len, terr_t *err)
{
	size_t start = 0;

	if (len == 0)
		return terr_set(err, 40352, "FieldPath cannot be constructed with empty string");
	if (p[len - 1] == '.')
		return terr_set(err, 40353, "FieldPath must not end with a '.'.");
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] == 0)
			return terr_set(err, 16411, "FieldPath field names may not contain '\\0'.");
		if (i == len || p[i] == '.') {
			if (i == start)
				return terr_set(err, 15998, "FieldPath field names may not be empty strings.");
			if (p[start] == '$' && !bpath_is_dbref_field(p + start, i - start))
				return terr_set(err, 16410, "FieldPath field names may not start with '$'. "
				                "Consider using $getField or $setField.");
			start = i + 1;
		}
	}
	return 0;
}

/* "$a.b" or "$$var.a.b" */
static int
parse_path(const char *s, size_t len, expr_scope_t *scope, expr_t **out, terr_t *err)
{
	expr_t *e = NULL;

	if (len >= 2 && s[1] == '$') {
		const char *name = s + 2;
		size_t nlen = len - 2;
		const char *dot = memchr(name, '.', nlen);
		size_t vlen = dot ? (size_t)(dot - name) : nlen;
		char *vname = bson_strndup(name, vlen);
		int id;

		if (vlen == 0) {
			bson_free(vname);
			return terr_set(err, 16869, "empty variable names are not allowed");
		}
		if (!((vname[0] >= 'a' && vname[0] <= 'z') || (vname[0] >= 'A' && vname[0] <= 'Z') ||
		      (vname[0] & 0x80))) {
			terr_set(err, 16870, "'%s' starts with an invalid character for a user variable name", vname);
			bson_free(vname);
			return -1;
		}
		for (size_t i = 1; i < vlen; i++) {
			char c = vname[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			      c == '_' || (c & 0x80))) {
				terr_set(err, 16871, "'%s' contains an invalid character for a variable name: '%c'",
				         vname, c);
				bson_free(vname);
				return -1;
			}
		}
		id = expr_scope_lookup(scope, vname);
		if (id < 0) {
			terr_set(err, 17276, "Use of undefined variable: %s", vname);
			bson_free(vname);
			return -1;
		}
		bson_free(vname);
		if (dot != NULL)
			RET(check_field_path(dot + 1, nlen - vlen - 1, err));
		e = expr_node_new(EXPR_VAR);
		e->var = id;
		if (dot != NULL)
			e->path = bson_strndup(dot + 1, nlen - vlen - 1);
		*out = e;
		return 0;
	}
	if (len == 1)
		return terr_set(err, 16872, "'$' by itself is not a valid FieldPath");
	RET(check_field_path(s + 1, len - 1, err));
	int cur = expr_scope_lookup(scope, "CURRENT");
	if (cur != EXPR_VAR_CURRENT) {
		/* $$CURRENT rebound by $let/$map... in this scope */
		e = expr_node_new(EXPR_VAR);
		e->var = cur;
	} else {
		e = expr_node_new(EXPR_FIELD);
	}
	e->path = bson_strndup(s + 1, len - 1);
	*out = e;
	return 0;
}

static __thread const char *fold_context;

const char *
expr_fold_context_set(const char *context)
{
	const char *old = fold_context;

	fold_context = context;
	return old;
}

/* Fold an operator node whose arguments are all constant. */
static int
maybe_fold(expr_t **ep, terr_t *err)
{
	expr_t *e = *ep;
	bson_value_t v;
	expr_env_t *env;
	int ret = 0;

	if (e->kind == EXPR_OP && (e->op->flags & EXPR_OP_NOFOLD))
		return 0;
	if (e->kind == EXPR_VAR || e->kind == EXPR_FIELD)
		return 0;
	for (size_t i = 0; i < e->nargs; i++) {
		if (e->args[i] == NULL)
			continue;
		if (!e->args[i]->constant)
			return 0;
	}
	if (e->var >= 0 || e->var2 >= 0)
		return 0; /* binds variables: its body may use them */
	env = expr_env_new();
	ret = expr_eval(e, env, &v, err);
	if (ret == 0) {
		expr_t *c = const_new(&v);
		expr_destroy(e);
		*ep = c;
	} else if (fold_context != NULL && err != NULL && err->msg != NULL && !(e->kind == EXPR_OP &&
	           strncmp(e->op->name, "$regex", 6) == 0)) {
		/* (mongod compiles a constant regex and its options while parsing:
		 * those errors have no optimize() context) */
		terr_wrap(err, fold_context);
	}
	expr_env_destroy(env);
	return ret;
}

static int
parse_operator(const char *name, const bson_value_t *arg, expr_scope_t *scope, expr_t **out, terr_t *err)
{
	const expr_op_t *op;
	expr_t *e = NULL;
	int ret = 0;

	if (strcmp(name, "$literal") == 0 || strcmp(name, "$const") == 0) {
		*out = const_new(arg);
		return 0;
	}
	op = op_find(name);
	if (op == NULL)
		return terr_set(err, 168, "Unrecognized expression '%s'", name);
	e = expr_node_new(EXPR_OP);
	e->op = op;
	e->coll = scope->coll;
	if (op->parse != NULL) {
		ERR(op->parse(e, arg, scope, err));
	} else if (arg->value_type == BSON_TYPE_ARRAY) {
		bson_iter_t it;
		expr_iter_init(&it, arg);
		while (bson_iter_next(&it)) {
			expr_t *sub = NULL;
			ERR(expr_parse_sub(bson_iter_value(&it), scope, &sub, err));
			node_push(e, sub, NULL);
		}
	} else {
		expr_t *sub = NULL;
		ERR(expr_parse_sub(arg, scope, &sub, err));
		node_push(e, sub, NULL);
	}
	if (op->parse == NULL) {
		int n = (int)e->nargs;
		const char *opname = op->alias_of ? op->alias_of : op->name;
		if (op->min_args == op->max_args && n != op->min_args) {
			ret = terr_set(err, 16020, "Expression %s takes exactly %d arguments. %d were passed in.",
			               opname, op->min_args, n);
			goto err;
		}
		if (op->max_args >= 0 && op->min_args != op->max_args && (n < op->min_args || n > op->max_args)) {
			ret = terr_set(err, 28667,
			               "Expression %s takes at least %d arguments, and at most %d, but %d were passed in.",
			               opname, op->min_args, op->max_args, n);
			goto err;
		}
		if (op->max_args < 0 && n < op->min_args) {
			ret = terr_set(err, 16020, "Expression %s takes at least %d arguments. %d were passed in.",
			               opname, op->min_args, n);
			goto err;
		}
	}
	ERR(maybe_fold(&e, err));
	*out = e;
	return 0;
err:
	expr_destroy(e);
	return ret;
}

static int
parse_object_fields(const bson_value_t *spec, expr_scope_t *scope, bool fold, expr_t **out, terr_t *err)
{
	bson_iter_t it;
	expr_t *e = expr_node_new(EXPR_OBJECT);
	int ret = 0;

	e->constant = true;
	expr_iter_init(&it, spec);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		expr_t *sub = NULL;

		if (k[0] == 0) {
			ret = terr_set(err, 15998, "FieldPath field names may not be empty strings.");
			goto err;
		}
		if (k[0] == '$') {
			ret = terr_set(err, 16410, "FieldPath field names may not start with '$'. "
			               "Consider using $getField or $setField.");
			goto err;
		}
		if (strchr(k, '.') != NULL) {
			ret = terr_set(err, 16412, "FieldPath field names may not contain '.'.");
			goto err;
		}
		for (size_t i = 0; i < e->nargs; i++) {
			if (strcmp(e->names[i], k) == 0) {
				char *s = bv_to_mongo_string(spec);
				ret = terr_set(err, 16406, "duplicate field name specified in object literal: %s", s);
				bson_free(s);
				goto err;
			}
		}
		ERR(expr_parse_sub(bson_iter_value(&it), scope, &sub, err));
		if (!sub->constant)
			e->constant = false;
		node_push(e, sub, k);
	}
	if (fold && e->constant && e->nargs > 0) {
		/* fold to a constant document */
		e->constant = false;
		ERR(maybe_fold(&e, err));
	}
	*out = e;
	return 0;
err:
	expr_destroy(e);
	return ret;
}

void
expr_args_set(expr_t *e, expr_t **parts, size_t n)
{
	e->args = bson_malloc(n * sizeof(*e->args));
	memcpy(e->args, parts, n * sizeof(*parts));
	e->nargs = n;
}

void
expr_parts_destroy(expr_t **parts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expr_destroy(parts[i]);
}

int
expr_parse_named(const expr_t *e, const bson_value_t *arg, expr_scope_t *scope, const char *const *names,
                 int n, expr_t **parts, int unknown_code, const char *unknown_fmt, terr_t *err)
{
	bson_iter_t it;

	expr_iter_init(&it, arg);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int idx = -1;

		for (int i = 0; i < n; i++) {
			if (strcmp(k, names[i]) == 0)
				idx = i;
		}
		if (idx < 0)
			return terr_set(err, unknown_code, unknown_fmt, e->op->name, k);
		expr_destroy(parts[idx]);
		parts[idx] = NULL;
		RET(expr_parse_sub(bson_iter_value(&it), scope, &parts[idx], err));
	}
	return 0;
}

int
expr_parse_sub(const bson_value_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err)
{
	int ret = 0;

	if (++scope->depth > EXPR_MAX_DEPTH) {
		ret = terr_set(err, TERR_BAD_VALUE, "expression nesting too deep (more than %d levels)",
		               EXPR_MAX_DEPTH);
		goto err;
	}
	switch (spec->value_type) {
	case BSON_TYPE_UTF8:
		if (spec->value.v_utf8.len > 0 && spec->value.v_utf8.str[0] == '$') {
			ERR(parse_path(spec->value.v_utf8.str, spec->value.v_utf8.len, scope, out, err));
			break;
		}
		*out = const_new(spec);
		break;
	case BSON_TYPE_DOCUMENT: {
		bson_iter_t it;
		uint32_t n = 0;
		const char *first = NULL;

		expr_iter_init(&it, spec);
		while (bson_iter_next(&it)) {
			if (n++ == 0)
				first = bson_iter_key(&it);
		}
		if (n > 0 && first[0] == '$') {
			if (n != 1) {
				char *s = bv_to_mongo_string(spec);
				ret = terr_set(err, 15983, "An object representing an expression must have exactly one field: %s",
				               s);
				bson_free(s);
				goto err;
			}
			expr_iter_init(&it, spec);
			bson_iter_next(&it);
			ERR(parse_operator(bson_iter_key(&it), bson_iter_value(&it), scope, out, err));
			break;
		}
		ERR(parse_object_fields(spec, scope, true, out, err));
		break;
	}
	case BSON_TYPE_ARRAY: {
		bson_iter_t it;
		expr_t *e = expr_node_new(EXPR_ARRAY);

		e->constant = true;
		expr_iter_init(&it, spec);
		while (bson_iter_next(&it)) {
			expr_t *sub = NULL;
			if ((ret = expr_parse_sub(bson_iter_value(&it), scope, &sub, err)) != 0) {
				expr_destroy(e);
				goto err;
			}
			if (!sub->constant)
				e->constant = false;
			node_push(e, sub, NULL);
		}
		if (e->constant) {
			e->constant = false;
			if ((ret = maybe_fold(&e, err)) != 0) {
				expr_destroy(e);
				goto err;
			}
		}
		*out = e;
		break;
	}
	default:
		*out = const_new(spec);
		break;
	}
err:
	scope->depth--;
	return ret;
}

int
expr_parse(const bson_value_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err)
{
	expr_t *e = NULL;

	RET(expr_parse_sub(spec, scope, &e, err));
	*out = e;
	return 0;
}

int
expr_parse_object(const bson_t *spec, expr_scope_t *scope, expr_t **out, terr_t *err)
{
	bson_value_t v;

	memset(&v, 0, sizeof(v));
	v.value_type = BSON_TYPE_DOCUMENT;
	v.value.v_doc.data = (uint8_t *)bson_get_data(spec);
	v.value.v_doc.data_len = spec->len;
	scope->depth++;
	int ret = parse_object_fields(&v, scope, false, out, err);
	scope->depth--;
	return ret;
}

bool
expr_is_constant(const expr_t *e, const bson_value_t **v)
{
	if (e->kind != EXPR_CONST)
		return false;
	if (v != NULL)
		*v = &e->value;
	return true;
}

bool
expr_is_field_path(const expr_t *e, const char **path)
{
	if (e->kind != EXPR_FIELD)
		return false;
	if (path != NULL)
		*path = e->path;
	return true;
}

bool
expr_is_root_path(const expr_t *e, const char **path)
{
	if (e->kind != EXPR_FIELD &&
	    (e->kind != EXPR_VAR || (e->var != EXPR_VAR_ROOT && e->var != EXPR_VAR_CURRENT)))
		return false;
	*path = e->path;
	return true;
}

size_t
expr_object_nfields(const expr_t *e)
{
	return e->kind == EXPR_OBJECT ? e->nargs : 0;
}

void
expr_object_field(const expr_t *e, size_t i, const char **name, const expr_t **sub)
{
	*name = e->names[i];
	*sub = e->args[i];
}
