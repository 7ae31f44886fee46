/*
 * expr_object.c -- object operators: $objectToArray $arrayToObject
 * $mergeObjects $getField $setField $unsetField.
 *
 * Field order follows mongod: merged and replaced fields keep the position
 * of their first occurrence, new fields go at the end.
 */
#include "expr/expr_private.h"

#include <string.h>

#include "bson/value.h"

/* A tiny ordered field list used to build documents with replacement. */
typedef struct fields {
	const char **names;
	size_t *lens;
	bson_value_t *vals;
	size_t n, cap;
} fields_t;

static void
fields_set(expr_env_t *env, fields_t *f, const char *name, size_t len, const bson_value_t *v)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->lens[i] == len && memcmp(f->names[i], name, len) == 0) {
			f->vals[i] = *v;
			return;
		}
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		const char **nn = expr_env_alloc(env, cap * sizeof(*nn));
		size_t *nl = expr_env_alloc(env, cap * sizeof(*nl));
		bson_value_t *nv = expr_env_alloc(env, cap * sizeof(*nv));
		if (f->n) {
			memcpy(nn, f->names, f->n * sizeof(*nn));
			memcpy(nl, f->lens, f->n * sizeof(*nl));
			memcpy(nv, f->vals, f->n * sizeof(*nv));
		}
		f->names = nn;
		f->lens = nl;
		f->vals = nv;
		f->cap = cap;
	}
	f->names[f->n] = name;
	f->lens[f->n] = len;
	f->vals[f->n] = *v;
	f->n++;
}

static void
fields_to_value(expr_env_t *env, const fields_t *f, bson_value_t *out)
{
	bson_t b;

	bson_init(&b);
	for (size_t i = 0; i < f->n; i++) {
		if (f->vals[i].value_type == BSON_TYPE_EOD)
			continue;
		bson_append_value(&b, f->names[i], (int)f->lens[i], &f->vals[i]);
	}
	expr_set_doc_from(env, out, &b, false);
}

static void
fields_add_doc(expr_env_t *env, fields_t *f, const bson_value_t *doc)
{
	bson_iter_t it;

	expr_iter_init(&it, doc);
	while (bson_iter_next(&it))
		fields_set(env, f, bson_iter_key(&it), bson_iter_key_len(&it), bson_iter_value(&it));
}

static int
eval_object_to_array(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;
	bson_iter_t it;
	bson_t b;
	uint32_t idx = 0;

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (v.value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 40390, "$objectToArray requires a document input, found: %s", expr_type_name(&v));
	bson_init(&b);
	expr_iter_init(&it, &v);
	while (bson_iter_next(&it)) {
		bson_t kv;
		char k[16];
		const char *key;
		size_t kl = bson_uint32_to_string(idx++, &key, k, sizeof(k));
		bson_append_document_begin(&b, key, (int)kl, &kv);
		bson_append_utf8(&kv, "k", 1, bson_iter_key(&it), (int)bson_iter_key_len(&it));
		bson_append_value(&kv, "v", 1, bson_iter_value(&it));
		bson_append_document_end(&b, &kv);
	}
	expr_set_doc_from(env, out, &b, true);
	return 0;
}

static int
eval_array_to_object(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	bson_value_t v;
	bson_iter_t it;
	fields_t f = {0};
	int fmt = 0; /* 1 arrays, 2 objects */

	RET(expr_eval_arg(e, 0, env, &v, err));
	if (expr_is_nullish(&v)) {
		expr_set_null(out);
		return 0;
	}
	if (v.value_type != BSON_TYPE_ARRAY)
		return terr_set(err, 40386, "$arrayToObject requires an array input, found: %s", expr_type_name(&v));
	expr_iter_init(&it, &v);
	while (bson_iter_next(&it)) {
		const bson_value_t *el = bson_iter_value(&it);
		int this_fmt = el->value_type == BSON_TYPE_ARRAY ? 1 : el->value_type == BSON_TYPE_DOCUMENT ? 2 : 0;
		if (fmt == 0) {
			if (this_fmt == 0)
				return terr_set(err, 40398, "Unrecognised input type format for $arrayToObject: %s",
				                expr_type_name(el));
			fmt = this_fmt;
		} else if (this_fmt != fmt) {
			/* sic: "mustall", as mongod */
			return terr_set(err, fmt == 1 ? 40396 : 40391,
			                "$arrayToObject requires a consistent input format. Elements mustall be arrays or "
			                "all be objects. %s was detected, now found: %s",
			                fmt == 1 ? "Array" : "Object", expr_type_name(el));
		}
		bson_iter_t sub;
		bson_value_t k, val;
		expr_set_missing(&k);
		expr_set_missing(&val);
		if (fmt == 1) {
			uint32_t n = expr_array_len(el);
			if (n != 2)
				return terr_set(err, 40397, "$arrayToObject requires an array of size 2 arrays,found array of "
				                "size: %u", n);
			expr_iter_init(&sub, el);
			bson_iter_next(&sub);
			k = *bson_iter_value(&sub);
			bson_iter_next(&sub);
			val = *bson_iter_value(&sub);
			if (k.value_type != BSON_TYPE_UTF8)
				return terr_set(err, 40395, "$arrayToObject requires an array of key-value pairs, where the key "
				                "must be of type string. Found key type: %s", expr_type_name(&k));
		} else {
			uint32_t n = expr_array_len(el);
			if (n != 2)
				return terr_set(err, 40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found "
				                "incorrect number of keys:%u", n);
			expr_iter_init(&sub, el);
			while (bson_iter_next(&sub)) {
				if (strcmp(bson_iter_key(&sub), "k") == 0)
					k = *bson_iter_value(&sub);
				else if (strcmp(bson_iter_key(&sub), "v") == 0)
					val = *bson_iter_value(&sub);
			}
			if (k.value_type == BSON_TYPE_EOD || val.value_type == BSON_TYPE_EOD) {
				char *t = bv_to_mongo_string(el);
				terr_set(err, 40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either "
				         "or both keys from: %s", t);
				bson_free(t);
				return -1;
			}
			if (k.value_type != BSON_TYPE_UTF8)
				return terr_set(err, 40394, "$arrayToObject requires an object with keys 'k' and 'v', where "
				                "the value of 'k' must be of type string. Found type: %s", expr_type_name(&k));
		}
		if (memchr(k.value.v_utf8.str, 0, k.value.v_utf8.len) != NULL)
			return terr_set(err, fmt == 1 ? 4940400 : 4940401, "Key field cannot contain an embedded null byte");
		fields_set(env, &f, k.value.v_utf8.str, k.value.v_utf8.len, &val);
	}
	fields_to_value(env, &f, out);
	return 0;
}

static int
eval_merge_objects(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	fields_t f = {0};

	for (size_t i = 0; i < e->nargs; i++) {
		bson_value_t v;
		RET(expr_eval_arg(e, i, env, &v, err));
		if (expr_is_nullish(&v))
			continue;
		if (v.value_type != BSON_TYPE_DOCUMENT) {
			char *t = bv_to_mongo_string(&v);
			terr_set(err, 40400, "$mergeObjects requires object inputs, but input %s is of type %s", t,
			         expr_type_name(&v));
			bson_free(t);
			return -1;
		}
		fields_add_doc(env, &f, &v);
	}
	fields_to_value(env, &f, out);
	return 0;
}

/* ---- $getField / $setField / $unsetField --------------------------------
 * args: field (constant string), input|NULL ($$CURRENT), value (setField) */

/* Is spec a literal string after parsing (a plain string, or {$literal: x} /
 * {$const: x})?  mongod checks 'field' before optimization, so only literal
 * constants count.  *lit receives the literal value. */
static bool
literal_field(const bson_value_t *spec, bson_value_t *lit)
{
	bson_iter_t it;

	if (spec->value_type == BSON_TYPE_DOCUMENT && expr_iter_init(&it, spec) && bson_iter_next(&it) &&
	    (strcmp(bson_iter_key(&it), "$literal") == 0 || strcmp(bson_iter_key(&it), "$const") == 0)) {
		*lit = *bson_iter_value(&it);
		return !bson_iter_next(&it);
	}
	if (spec->value_type == BSON_TYPE_DOCUMENT || spec->value_type == BSON_TYPE_ARRAY)
		return false;
	if (spec->value_type == BSON_TYPE_UTF8 && spec->value.v_utf8.len > 0 && spec->value.v_utf8.str[0] == '$')
		return false;
	*lit = *spec;
	return true;
}

/* args: field (constant string), input (NULL = $$CURRENT), value ($setField;
 * NULL for $unsetField) */
static int
parse_field_op(expr_t *e, const bson_value_t *arg, expr_scope_t *scope, terr_t *err)
{
	bool is_get = strcmp(e->op->name, "$getField") == 0;
	bool is_unset = strcmp(e->op->name, "$unsetField") == 0;
	const char *name = e->op->name;
	bson_value_t field_v, input_v, value_v, lit;
	bool have_field = false, have_input = false, have_value = false;
	expr_t *parts[3] = {NULL, NULL, NULL};
	int ret = 0;

	if (is_get) {
		bson_iter_t it;
		if (arg->value_type == BSON_TYPE_DOCUMENT) {
			expr_iter_init(&it, arg);
			while (bson_iter_next(&it)) {
				const char *k = bson_iter_key(&it);
				if (!have_field && !have_input && k[0] == '$') {
					/* the whole object is the 'field' expression */
					field_v = *arg;
					have_field = have_input = true;
					memset(&input_v, 0, sizeof(input_v));
					input_v.value_type = BSON_TYPE_EOD; /* $$CURRENT */
					break;
				} else if (strcmp(k, "field") == 0) {
					field_v = *bson_iter_value(&it);
					have_field = true;
				} else if (strcmp(k, "input") == 0) {
					input_v = *bson_iter_value(&it);
					have_input = true;
				} else {
					return terr_set(err, 3041701, "$getField found an unknown argument: %s", k);
				}
			}
		} else {
			field_v = *arg;
			have_field = have_input = true;
			memset(&input_v, 0, sizeof(input_v));
			input_v.value_type = BSON_TYPE_EOD;
		}
		if (!have_field)
			return terr_set(err, 3041702, "$getField requires 'field' to be specified");
		if (!have_input)
			return terr_set(err, 3041703, "$getField requires 'input' to be specified");
	} else {
		bson_iter_t it;
		if (arg->value_type != BSON_TYPE_DOCUMENT)
			return terr_set(err, 4161100, "%s only supports an object as its argument", name);
		expr_iter_init(&it, arg);
		while (bson_iter_next(&it)) {
			const char *k = bson_iter_key(&it);
			if (strcmp(k, "field") == 0) {
				field_v = *bson_iter_value(&it);
				have_field = true;
			} else if (strcmp(k, "input") == 0) {
				input_v = *bson_iter_value(&it);
				have_input = true;
			} else if (!is_unset && strcmp(k, "value") == 0) {
				value_v = *bson_iter_value(&it);
				have_value = true;
			} else {
				return terr_set(err, 4161101, "%s found an unknown argument: %s", name, k);
			}
		}
		if (!have_field)
			return terr_set(err, 4161102, "%s requires 'field' to be specified", name);
		if (!is_unset && !have_value)
			return terr_set(err, 4161103, "%s requires 'value' to be specified", name);
		if (!have_input)
			return terr_set(err, 4161109, "%s requires 'input' to be specified", name);
	}
	/* 'field' must be a constant string */
	if (field_v.value_type == BSON_TYPE_UTF8 && field_v.value.v_utf8.len > 0 && field_v.value.v_utf8.str[0] == '$') {
		/* a field path (or a variable) */
		ERR(expr_parse_sub(&field_v, scope, &parts[0], err));
		ret = terr_set(err, is_get ? 5654600 : 4161108, "'%s' is a field path reference which is not allowed in "
		               "this context. Did you mean {$literal: '%s'}?", field_v.value.v_utf8.str,
		               field_v.value.v_utf8.str);
		goto err;
	}
	if (!literal_field(&field_v, &lit)) {
		ERR(expr_parse_sub(&field_v, scope, &parts[0], err));
		ret = terr_set(err, is_get ? 5654601 : 4161106, "%s requires 'field' to evaluate to a constant, but got a "
		               "non-constant argument", name);
		goto err;
	}
	if (lit.value_type != BSON_TYPE_UTF8) {
		ret = terr_set(err, is_get ? 5654602 : 4161107, "%s requires 'field' to evaluate to type String, but got %s",
		               name, expr_type_name(&lit));
		goto err;
	}
	parts[0] = expr_node_new(EXPR_CONST);
	bson_value_copy(&lit, &parts[0]->value);
	parts[0]->constant = true;
	if (input_v.value_type == BSON_TYPE_EOD) {
		/* default input: $$CURRENT as bound where the operator appears */
		memset(&input_v, 0, sizeof(input_v));
		input_v.value_type = BSON_TYPE_UTF8;
		input_v.value.v_utf8.str = (char *)"$$CURRENT";
		input_v.value.v_utf8.len = 9;
	}
	ERR(expr_parse_sub(&input_v, scope, &parts[1], err));
	if (have_value)
		ERR(expr_parse_sub(&value_v, scope, &parts[2], err));
	expr_args_set(e, parts, 3);
	/* mongod never folds $getField/$setField; an input of $$CURRENT makes
	 * the node depend on the document anyway */
	e->var = EXPR_VAR_CURRENT;
	return 0;
err:
	expr_parts_destroy(parts, 3);
	return ret;
}

static int
eval_field_op(const expr_t *e, expr_env_t *env, bson_value_t *out, terr_t *err)
{
	const bson_value_t *name = &e->args[0]->value;
	bson_value_t in, val;
	bool is_get = strcmp(e->op->name, "$getField") == 0;

	RET(expr_eval(e->args[1], env, &in, err));
	if (is_get) {
		bson_iter_t it;
		if (in.value_type == BSON_TYPE_EOD || in.value_type != BSON_TYPE_DOCUMENT) {
			if (in.value_type == BSON_TYPE_NULL || in.value_type == BSON_TYPE_UNDEFINED)
				expr_set_null(out);
			else
				expr_set_missing(out);
			return 0;
		}
		expr_set_missing(out);
		expr_iter_init(&it, &in);
		while (bson_iter_next(&it)) {
			if (bson_iter_key_len(&it) == name->value.v_utf8.len &&
			    memcmp(bson_iter_key(&it), name->value.v_utf8.str, name->value.v_utf8.len) == 0) {
				*out = *bson_iter_value(&it);
				break;
			}
		}
		return 0;
	}
	if (expr_is_nullish(&in)) {
		expr_set_null(out);
		return 0;
	}
	if (in.value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, 4161105, "$setField requires 'input' to evaluate to type Object");
	fields_t f = {0};
	fields_add_doc(env, &f, &in);
	if (e->args[2] != NULL)
		RET(expr_eval(e->args[2], env, &val, err));
	else
		expr_set_missing(&val);
	fields_set(env, &f, name->value.v_utf8.str, name->value.v_utf8.len, &val);
	fields_to_value(env, &f, out);
	return 0;
}

const expr_op_t expr_ops_object[] = {
	{"$objectToArray", 1, 1, NULL, eval_object_to_array, 0},
	{"$arrayToObject", 1, 1, NULL, eval_array_to_object, 0},
	{"$mergeObjects", 0, -1, NULL, eval_merge_objects, 0},
	{"$getField", 0, -1, parse_field_op, eval_field_op, 0},
	{"$setField", 0, -1, parse_field_op, eval_field_op, 0},
	{"$unsetField", 0, -1, parse_field_op, eval_field_op, 0},
	{NULL, 0, 0, NULL, NULL, 0},
};
