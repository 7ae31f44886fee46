/*
 * match_logical.c -- the operators that hand the document to another layer:
 * $expr (the aggregation expression language, expr/) and $jsonSchema (the
 * schema validator, schema/).  $expr sees the command's `let` variables; its
 * evaluation can fail (e.g. $divide by zero), which match_exec reports.
 *
 * Not here: $and/$or/$nor/$not (their evaluation is in match.c's table).
 */
#include "query/match_private.h"

#include <pthread.h>
#include <time.h>

#include "expr/expr.h"
#include "schema/schema.h"


typedef struct mexpr {
	expr_t *e;
	bson_t *let;      /* owned copy of the variables' values */
	int *ids;         /* variable id per let field, in order */
	int nvars;
	int64_t now_ms;   /* $$NOW, fixed at compile time */
	bson_t *owned;    /* $where: the {$function: ...} the node's val points into */
} mexpr_t;

/* One evaluation environment per thread, reused across documents (reset
 * between them) so $expr does not allocate per document; freed when the
 * thread exits.  `busy` guards against re-entrant use. */
typedef struct env_slot {
	expr_env_t *env;
	bool busy;
} env_slot_t;

static pthread_key_t env_key;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static _Thread_local env_slot_t tl_env;

static void
env_slot_free(void *p)
{
	env_slot_t *slot = p;

	if (slot != NULL && slot->env != NULL) {
		expr_env_destroy(slot->env);
		slot->env = NULL;
	}
}

static void
env_key_init(void)
{
	pthread_key_create(&env_key, env_slot_free);
}

int
match_expr_compile(mnode_t *n, const bson_value_t *arg, const match_options_t *opts,
                   terr_t *err)
{
	mexpr_t *x;
	expr_scope_t *scope;
	bson_iter_t it;
	int ret = 0;

	x = tm_malloc0(sizeof *x);
	scope = expr_scope_new();
	if (opts != NULL && opts->now_ms != 0) {
		x->now_ms = opts->now_ms;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		x->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	}

	n->u.expr = x;
	if (opts != NULL)
		expr_scope_set_collation(scope, opts->coll);
	if (opts != NULL && (opts->disallow & MATCH_DISALLOW_FUNCTION))
		expr_scope_set_validator(scope, true);
	if (opts != NULL && opts->let != NULL) {
		x->let = bson_copy(opts->let);
		x->ids = tm_malloc0(sizeof(int) * (bson_count_keys(x->let) + 1));
		bson_iter_init(&it, x->let);
		while (bson_iter_next(&it)) {
			ERR(expr_scope_define(scope, bson_iter_key(&it), &x->ids[x->nvars], err));
			x->nvars++;
		}
	}
	ERR(expr_parse(arg, scope, &x->e, err));
err:
	expr_scope_destroy(scope);
	return ret;
}

bool
match_expr_eval(const mnode_t *n, mctx_t *c)
{
	const mexpr_t *x = n->u.expr;
	bool own = tl_env.busy;
	expr_env_t *env;
	terr_t e = TERR_INIT;
	bson_t root;
	bson_iter_t it;
	bool out = false;
	int i = 0;

	if (own) {
		env = expr_env_new();
	} else {
		if (tl_env.env == NULL) {
			pthread_once(&env_once, env_key_init);
			tl_env.env = expr_env_new();
			pthread_setspecific(env_key, &tl_env);
		}
		env = tl_env.env;
		tl_env.busy = true;
	}
	expr_env_set_now(env, x->now_ms);
	if (!bson_init_static(&root, c->root_data, c->root_len))
		goto done;
	expr_env_set_root(env, &root);
	if (x->let != NULL) {
		bson_iter_init(&it, x->let);
		while (bson_iter_next(&it) && i < x->nvars) {
			if (expr_env_set_var(env, x->ids[i++], bson_iter_value(&it), &e) != 0)
				goto fail;
		}
	}
	if (expr_eval_bool(x->e, env, &out, &e) != 0)
		goto fail;
	goto done;
fail:
	c->failed = true;
	out = false;
	if (c->err != NULL)
		terr_move(c->err, &e);
done:
	terr_clear(&e);
	if (own) {
		expr_env_destroy(env);
	} else {
		expr_env_set_root(env, NULL);
		expr_env_reset(env);
		tl_env.busy = false;
	}
	return out;
}

void
match_expr_free(mnode_t *n)
{
	mexpr_t *x = n->u.expr;

	if (x == NULL)
		return;
	expr_destroy(x->e);
	if (x->let != NULL)
		bson_destroy(x->let);
	if (x->owned != NULL)
		bson_destroy(x->owned);
	bson_free(x->ids);
	bson_free(x);
	n->u.expr = NULL;
}

int
match_where_compile(mnode_t *n, const bson_t *fn_spec, const match_options_t *opts, terr_t *err)
{
	bson_t *owned = bson_copy(fn_spec);
	bson_value_t v;

	v.value_type = BSON_TYPE_DOCUMENT;
	v.value.v_doc.data = (uint8_t *)bson_get_data(owned);
	v.value.v_doc.data_len = owned->len;
	n->val = v;
	if (match_expr_compile(n, &v, opts, err) != 0) {
		if (n->u.expr != NULL)
			((mexpr_t *)n->u.expr)->owned = owned;
		else
			bson_destroy(owned);
		return -1;
	}
	((mexpr_t *)n->u.expr)->owned = owned;
	return 0;
}

bool
match_where_body(const mnode_t *n, bson_value_t *out)
{
	const mexpr_t *x = n->u.expr;
	bson_iter_t it, b;

	if (x == NULL || x->owned == NULL || !bson_iter_init(&it, x->owned) ||
	    !bson_iter_find_descendant(&it, "$function.body", &b))
		return false;
	*out = *bson_iter_value(&b);
	return true;
}

int
match_schema_compile(mnode_t *n, const bson_value_t *arg, terr_t *err)
{
	bson_t doc;
	schema_t *s = NULL;

	if (!bson_init_static(&doc, arg->value.v_doc.data, arg->value.v_doc.data_len))
		return terr_set(err, TERR_INVALID_BSON, "invalid BSON in $jsonSchema");
	RET(schema_compile(&doc, &s, err));
	n->u.schema = s;
	return 0;
}

bool
match_schema_eval(const mnode_t *n, const uint8_t *data, uint32_t len)
{
	return schema_matches_data(n->u.schema, data, len);
}

void
match_schema_free(mnode_t *n)
{
	if (n->u.schema != NULL)
		schema_free(n->u.schema);
	n->u.schema = NULL;
}
