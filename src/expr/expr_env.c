/*
 * expr_env.c -- evaluation environments (variables, $$ROOT, $$NOW, the
 * arena that owns evaluation results) and parse-time scopes (which variable
 * names exist, and their ids).
 *
 * Not here: parsing or evaluating expressions themselves.
 */
#include "expr/expr_private.h"

#include "bson/value.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- arena (common/arena.h) ---------------------------------------------- */

void *
expr_env_alloc(expr_env_t *env, size_t n)
{
	return tm_arena_alloc(&env->arena, n);
}

void
expr_env_reset(expr_env_t *env)
{
	tm_arena_reset(&env->arena);
}

void
expr_set_string(expr_env_t *env, bson_value_t *v, const char *s, size_t len)
{
	char *p = expr_env_alloc(env, len + 1);
	if (len)
		memcpy(p, s, len);
	p[len] = 0;
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_UTF8;
	v->value.v_utf8.str = p;
	v->value.v_utf8.len = (uint32_t)len;
}

void
expr_set_doc_from(expr_env_t *env, bson_value_t *v, bson_t *b, bool array)
{
	uint8_t *p = expr_env_alloc(env, b->len);
	memcpy(p, bson_get_data(b), b->len);
	memset(v, 0, sizeof(*v));
	v->value_type = array ? BSON_TYPE_ARRAY : BSON_TYPE_DOCUMENT;
	v->value.v_doc.data = p;
	v->value.v_doc.data_len = b->len;
	bson_destroy(b);
}

void
expr_env_copy_value(expr_env_t *env, const bson_value_t *v, bson_value_t *out)
{
	tm_arena_value_copy(&env->arena, v, out);
}

/* ---- env ----------------------------------------------------------------- */

expr_env_t *
expr_env_new(void)
{
	expr_env_t *env = bson_malloc0(sizeof(*env));
	struct timespec ts;

	tm_arena_init(&env->arena, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	env->now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	expr_set_missing(&env->root);
	expr_set_missing(&env->current);
	expr_set_missing(&env->meta);
	env->rand_state = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)env;
	if (env->rand_state == 0)
		env->rand_state = 1;
	return env;
}

void
expr_env_destroy(expr_env_t *env)
{
	if (env == NULL)
		return;
	tm_arena_destroy(&env->arena);
	for (size_t i = 0; i < env->nvars; i++)
		bson_free(env->var_owned[i]);
	bson_free(env->var_owned);
	bson_free(env->vars);
	bson_free(env);
}

static void
doc_value(bson_value_t *v, const bson_t *doc)
{
	if (doc == NULL) {
		expr_set_missing(v);
		return;
	}
	memset(v, 0, sizeof(*v));
	v->value_type = BSON_TYPE_DOCUMENT;
	v->value.v_doc.data = (uint8_t *)bson_get_data(doc);
	v->value.v_doc.data_len = doc->len;
}

void
expr_env_set_root(expr_env_t *env, const bson_t *doc)
{
	doc_value(&env->root, doc);
	env->current = env->root;
}

void
expr_env_set_current(expr_env_t *env, const bson_t *doc)
{
	doc_value(&env->current, doc);
}

void
expr_env_set_meta(expr_env_t *env, const bson_t *meta)
{
	doc_value(&env->meta, meta);
}

void
expr_env_set_now(expr_env_t *env, int64_t ms)
{
	env->now = ms;
}

void
expr_env_set_cluster_time(expr_env_t *env, uint32_t t, uint32_t i)
{
	env->ct_t = t;
	env->ct_i = i;
	env->ct_set = true;
}

/* Make room for id; new slots are missing. */
static void
env_grow(expr_env_t *env, size_t id)
{
	if (id < env->nvars)
		return;
	size_t n = id + 8;
	env->vars = bson_realloc(env->vars, n * sizeof(*env->vars));
	env->var_owned = bson_realloc(env->var_owned, n * sizeof(*env->var_owned));
	for (size_t i = env->nvars; i < n; i++) {
		expr_set_missing(&env->vars[i]);
		env->var_owned[i] = NULL;
	}
	env->nvars = n;
}

int
expr_env_set_var(expr_env_t *env, int id, const bson_value_t *v, terr_t *err)
{
	if (id < EXPR_VAR_FIRST_USER && id != EXPR_VAR_CURRENT)
		return terr_set(err, TERR_BAD_VALUE, "cannot set built-in variable %d", id);
	if (id > 1000000)
		return terr_set(err, TERR_BAD_VALUE, "bad variable id %d", id);
	env_grow(env, (size_t)id);
	bson_free(env->var_owned[id]);
	env->var_owned[id] = NULL;
	/* deep copy into one heap block */
	bson_t tmp = BSON_INITIALIZER;
	bson_append_value(&tmp, "v", 1, v);
	uint8_t *copy = bson_malloc(tmp.len);
	memcpy(copy, bson_get_data(&tmp), tmp.len);
	bson_destroy(&tmp);
	env->var_owned[id] = copy;
	bson_t view;
	bson_iter_t it;
	if (v->value_type == BSON_TYPE_EOD || !bson_init_static(&view, copy, ((uint32_t *)copy)[0]) ||
	    !bson_iter_init_find(&it, &view, "v")) {
		expr_set_missing(&env->vars[id]);
	} else {
		env->vars[id] = *bson_iter_value(&it);
	}
	if (id == EXPR_VAR_CURRENT)
		env->current = env->vars[id];
	return 0;
}

/* Bind a variable during evaluation ($let, $map...): the value is borrowed
 * (it lives in the arena or a document for the evaluation's duration). */
void
expr_env_bind(expr_env_t *env, int id, const bson_value_t *v)
{
	if (id == EXPR_VAR_CURRENT) {
		env->current = *v;
		return;
	}
	env_grow(env, (size_t)id);
	env->vars[id] = *v;
}

void
expr_env_var(const expr_env_t *env, int id, bson_value_t *out)
{
	switch (id) {
	case EXPR_VAR_ROOT: *out = env->root; return;
	case EXPR_VAR_CURRENT: *out = env->current; return;
	case EXPR_VAR_NOW: expr_set_date(out, env->now); return;
	case EXPR_VAR_REMOVE: expr_set_missing(out); return;
	case EXPR_VAR_CLUSTER_TIME:
		memset(out, 0, sizeof(*out));
		out->value_type = BSON_TYPE_TIMESTAMP;
		out->value.v_timestamp.timestamp = env->ct_t;
		out->value.v_timestamp.increment = env->ct_i;
		return;
	default:
		break;
	}
	if (id >= 0 && (size_t)id < env->nvars)
		*out = env->vars[id];
	else
		expr_set_missing(out);
}

/* ---- scope --------------------------------------------------------------- */

expr_scope_t *
expr_scope_new(void)
{
	expr_scope_t *s = bson_malloc0(sizeof(*s));
	s->next_id = EXPR_VAR_FIRST_USER;
	return s;
}

void
expr_scope_set_collation(expr_scope_t *scope, const coll_t *coll)
{
	scope->coll = coll;
}

void
expr_scope_set_validator(expr_scope_t *scope, bool on)
{
	scope->in_validator = on;
}

const coll_t *
expr_scope_collation(const expr_scope_t *scope)
{
	return scope ? scope->coll : NULL;
}

void
expr_scope_destroy(expr_scope_t *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		bson_free(s->v[i].name);
	bson_free(s->v);
	bson_free(s);
}

static int
check_user_var_name(const char *name, terr_t *err)
{
	size_t len = strlen(name);

	if (strcmp(name, "CURRENT") == 0)
		return 0;
	if (len == 0)
		return terr_set(err, 16866, "empty variable names are not allowed");
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] & 0x80)))
		return terr_set(err, 16867, "'%s' starts with an invalid character for a user variable name", name);
	for (size_t i = 1; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || (c & 0x80)))
			return terr_set(err, 16868, "'%s' contains an invalid character for a variable name: '%c'",
			                name, c);
	}
	return 0;
}

static int
scope_add(expr_scope_t *s, const char *name, int level, int *id, terr_t *err)
{
	/* rebinding CURRENT gets a fresh id too: field paths parsed inside the
	 * binding resolve against it (lexical scoping, as mongod) */
	RET(check_user_var_name(name, err));
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = bson_realloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n].name = bson_strdup(name);
	s->v[s->n].id = s->next_id++;
	s->v[s->n].level = level;
	*id = s->v[s->n].id;
	s->n++;
	return 0;
}

int
expr_scope_define(expr_scope_t *s, const char *name, int *id, terr_t *err)
{
	return scope_add(s, name, s->level, id, err);
}

int
expr_scope_bind(expr_scope_t *s, const char *name, int *id, terr_t *err)
{
	return scope_add(s, name, s->level, id, err);
}

void
expr_scope_push(expr_scope_t *s)
{
	s->level++;
}

void
expr_scope_pop(expr_scope_t *s)
{
	while (s->n > 0 && s->v[s->n - 1].level >= s->level) {
		s->n--;
		bson_free(s->v[s->n].name);
	}
	if (s->level > 0)
		s->level--;
}

int
expr_scope_lookup(const expr_scope_t *s, const char *name)
{
	static const char *builtin[] = {"ROOT", "CURRENT", "NOW", "REMOVE", "CLUSTER_TIME"};

	for (size_t i = s->n; i > 0; i--) {
		if (strcmp(s->v[i - 1].name, name) == 0)
			return s->v[i - 1].id;
	}
	for (int i = 0; i < (int)(sizeof(builtin) / sizeof(builtin[0])); i++) {
		if (strcmp(builtin[i], name) == 0)
			return i;
	}
	return -1;
}

/* ---- a command's let ------------------------------------------------------ */

int
expr_let_eval(const bson_t *let, bson_t *out, terr_t *err)
{
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	expr_t *e = NULL;
	bson_iter_t it;
	bson_value_t v;
	int id, ret = 0;

	bson_init(out);
	if (!bson_iter_init(&it, let))
		goto err;
	while (bson_iter_next(&it)) {
		ERR(expr_parse(bson_iter_value(&it), scope, &e, err));
		ERR(expr_eval(e, env, &v, err));
		if (v.value_type == BSON_TYPE_EOD)
			v.value_type = BSON_TYPE_NULL;
		ERR(expr_scope_define(scope, bson_iter_key(&it), &id, err));
		ERR(expr_env_set_var(env, id, &v, err));
		bv_append(out, bson_iter_key(&it), -1, &v);
		expr_destroy(e);
		e = NULL;
	}
err:
	expr_destroy(e);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
	return ret == 0 ? 0 : -1;
}
