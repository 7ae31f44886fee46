/*
 * match_explain.c -- the `details` of a failed validation for any validator
 * expression, in mongod's shapes (doc_validation_error.cpp).
 *
 * The validator is read again from the match_t's copy of the filter into an
 * explain tree whose nodes carry what mongod's parser annotates: the
 * operator name a user wrote ($ne, $nin, $exists: false are negations of
 * $eq, $in, $exists that report under their own name), the predicate as
 * specified, and whether the node speaks for itself (an implicit one-clause
 * $and under $not, the negation of $ne, is transparent).  The walk then
 * follows mongod's error generator: a failing node explains itself; $and
 * (and $or/$nor under negation) asks each clause whether it decided the
 * result; $not and $nor flip what "failing" means.  Whether a clause
 * matches is answered by compiling that clause alone with match_compile --
 * fine for a path that only runs when a write is refused.  $jsonSchema
 * nodes reuse the compiled schema of the match_t and schema/'s explainer.
 *
 * Not here: deciding that a document fails (match.c), levels and actions
 * (commands/validation.c).
 */
#include "query/match_explain.h"

#include <string.h>
#include <time.h>

#include "bson/path.h"
#include "bson/value.h"
#include "common/mem.h"
#include "expr/expr.h"
#include "query/match_private.h"
#include "schema/schema.h"

/* mongod's BSONDepth::getMaxAllowableDepth() (200) minus its offset (10) */
#define EXPLAIN_MAX_DEPTH 190

/* ---- the operators: one row each -------------------------------------------- */

typedef enum {
	STYLE_PATH,     /* generatePathError: missing / type / reason / values */
	STYLE_TYPE,     /* $type: reason, values, consideredType(s) */
	STYLE_EXISTS,   /* $exists: reason only */
	STYLE_LOGICAL,  /* $all: a logical node explained as a leaf */
} lstyle_t;

typedef enum { TRAV_OMIT_ARRAY, TRAV_NONE } trav_t;

#define TB(t) (1u << (t))
#define T_NUMBERS (TB(BSON_TYPE_INT32) | TB(BSON_TYPE_INT64) | TB(BSON_TYPE_DOUBLE) | \
                   TB(BSON_TYPE_DECIMAL128))

static const char *const names_numbers[] = {"decimal", "double", "int", "long", NULL};
static const char *const names_regex[] = {"regex", "string", "symbol", NULL};
static const char *const names_bits[] = {"binData", "decimal", "double", "int", "long", NULL};
static const char *const names_array[] = {"array", NULL};

typedef struct leaf_row {
	const char *tag;
	const char *normal;
	const char *inverted;
	lstyle_t style;
	trav_t trav;
	uint32_t expected;                 /* bit per BSON type; 0 = any type */
	const char *const *expected_names; /* sorted, as mongod's std::set */
} leaf_row_t;

static const leaf_row_t leaf_rows[] = {
	{"$eq", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$ne", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$lt", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$lte", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$gt", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$gte", "comparison failed", "comparison succeeded", STYLE_PATH, TRAV_OMIT_ARRAY, 0, NULL},
	{"$in", "no matching value found in array", "matching value found in array", STYLE_PATH,
	 TRAV_OMIT_ARRAY, 0, NULL},
	{"$nin", "no matching value found in array", "matching value found in array", STYLE_PATH,
	 TRAV_OMIT_ARRAY, 0, NULL},
	{"$exists", "path does not exist", "path does exist", STYLE_EXISTS, TRAV_OMIT_ARRAY, 0, NULL},
	{"$type", "type did not match", "type did match", STYLE_TYPE, TRAV_OMIT_ARRAY, 0, NULL},
	{"$mod", "$mod did not evaluate to expected remainder",
	 "$mod did evaluate to expected remainder", STYLE_PATH, TRAV_OMIT_ARRAY, T_NUMBERS,
	 names_numbers},
	{"$regex", "regular expression did not match", "regular expression did match", STYLE_PATH,
	 TRAV_OMIT_ARRAY, TB(BSON_TYPE_UTF8) | TB(BSON_TYPE_SYMBOL) | TB(BSON_TYPE_REGEX),
	 names_regex},
	{"$size", "array length was not equal to given size", "array length was equal to given size",
	 STYLE_PATH, TRAV_NONE, TB(BSON_TYPE_ARRAY), names_array},
	{"$elemMatch", "array did not satisfy the child predicate",
	 "array did satisfy the child predicate", STYLE_PATH, TRAV_NONE, TB(BSON_TYPE_ARRAY),
	 names_array},
	{"$bitsAllSet", "bitwise operator failed to match", "bitwise operator matched successfully",
	 STYLE_PATH, TRAV_OMIT_ARRAY, T_NUMBERS | TB(BSON_TYPE_BINARY), names_bits},
	{"$bitsAnySet", "bitwise operator failed to match", "bitwise operator matched successfully",
	 STYLE_PATH, TRAV_OMIT_ARRAY, T_NUMBERS | TB(BSON_TYPE_BINARY), names_bits},
	{"$bitsAllClear", "bitwise operator failed to match", "bitwise operator matched successfully",
	 STYLE_PATH, TRAV_OMIT_ARRAY, T_NUMBERS | TB(BSON_TYPE_BINARY), names_bits},
	{"$bitsAnyClear", "bitwise operator failed to match", "bitwise operator matched successfully",
	 STYLE_PATH, TRAV_OMIT_ARRAY, T_NUMBERS | TB(BSON_TYPE_BINARY), names_bits},
	{"$all", "array did not contain all specified values", "array did contain all specified values",
	 STYLE_LOGICAL, TRAV_NONE, 0, NULL},
};

static const leaf_row_t *
leaf_row(const char *tag)
{
	for (size_t i = 0; i < sizeof leaf_rows / sizeof leaf_rows[0]; i++)
		if (strcmp(leaf_rows[i].tag, tag) == 0)
			return &leaf_rows[i];
	return NULL;
}

/* ---- the explain tree ------------------------------------------------------- */

typedef enum {
	EN_AND, EN_OR, EN_NOR, EN_NOT, EN_LEAF, EN_FALSE, EN_EXPR, EN_SCHEMA,
	EN_NOANNOT,   /* a node mongod's parser leaves without annotation */
} ekind_t;

typedef struct enode enode_t;
struct enode {
	ekind_t kind;
	bool transparent;        /* mongod's kIgnoreButDescend */
	const char *tag;         /* operatorName */
	const leaf_row_t *row;   /* EN_LEAF */
	char *path;              /* EN_LEAF */
	bson_t *spec;            /* specifiedAs (owned) */
	bson_t *eval;            /* the filter whose match decides this node (owned) */
	match_t *m;              /* eval compiled on first use */
	bool has_const, const_val; /* EN_EXPR for $sampleRate 0 / 1 */
	bson_value_t expr_arg;   /* EN_EXPR: borrowed from the match_t's filter */
	const schema_t *schema;  /* EN_SCHEMA: borrowed from the match_t */
	char *noannot;           /* EN_NOANNOT: the node as mongod prints it */
	enode_t **kids;
	uint32_t nkids, cap;
};

typedef struct ectx {
	const match_t *m;
	const bson_t *doc;
	bool truncate;
	int32_t max_size;
	int32_t max_considered;
	bool too_large;          /* a size check failed: retry truncated */
	bool failed;             /* any other failure, described by err */
	terr_t err;
} ectx_t;

static bson_t *
doc_new(void)
{
	bson_t *b = tm_bson_array_new(1);

	bson_init(b);
	return b;
}

static void
doc_free(bson_t *b)
{
	if (b != NULL) {
		bson_destroy(b);
		bson_free(b);
	}
}

static enode_t *
en_new(ekind_t kind, const char *tag)
{
	enode_t *n = bson_malloc0(sizeof *n);

	n->kind = kind;
	n->tag = tag;
	return n;
}

static void
en_free(enode_t *n)
{
	if (n == NULL)
		return;
	for (uint32_t i = 0; i < n->nkids; i++)
		en_free(n->kids[i]);
	bson_free(n->kids);
	bson_free(n->path);
	doc_free(n->spec);
	doc_free(n->eval);
	match_free(n->m);
	bson_free(n->noannot);
	bson_free(n);
}

static void
en_add(enode_t *parent, enode_t *kid)
{
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? parent->cap * 2 : 4;
		parent->kids = bson_realloc(parent->kids, parent->cap * sizeof *parent->kids);
	}
	parent->kids[parent->nkids++] = kid;
}

/* {path: v} */
static bson_t *
spec_path_value(const char *path, const bson_value_t *v)
{
	bson_t *b = doc_new();

	bson_append_value(b, path, -1, v);
	return b;
}

/* {path: {op: v}} */
static bson_t *
spec_path_op(const char *path, const char *op, const bson_value_t *v)
{
	bson_t *b = doc_new(), sub;

	bson_append_document_begin(b, path, -1, &sub);
	bson_append_value(&sub, op, -1, v);
	bson_append_document_end(b, &sub);
	return b;
}

static enode_t *
leaf_new(const char *tag, const char *path, bson_t *spec, bson_t *eval)
{
	enode_t *n = en_new(EN_LEAF, tag);

	n->row = leaf_row(tag);
	n->path = bson_strdup(path);
	n->spec = spec;
	n->eval = eval;
	return n;
}

static enode_t *
not_of(enode_t *kid, bool transparent)
{
	enode_t *n = en_new(EN_NOT, "$not");

	n->transparent = transparent;
	en_add(n, kid);
	return n;
}

/* mongod's toString() of a node it parses without an annotation */
static enode_t *
noannot_new(const bson_t *serialized)
{
	enode_t *n = en_new(EN_NOANNOT, NULL);

	n->noannot = bv_doc_to_mongo_string(serialized);
	return n;
}

static const schema_t *
find_schema(const mnode_t *n, const uint8_t *data)
{
	const schema_t *s;

	if (n == NULL)
		return NULL;
	if (n->kind == MK_SCHEMA && n->val.value.v_doc.data == data)
		return n->u.schema;
	for (uint32_t i = 0; i < n->nkids; i++)
		if ((s = find_schema(n->kids[i], data)) != NULL)
			return s;
	return NULL;
}

static int parse_obj(ectx_t *c, const uint8_t *data, uint32_t len, enode_t **out);

static bool
is_pathless(const char *k)
{
	static const char *const names[] = {"$and", "$or", "$nor", "$comment", "$alwaysTrue",
		"$alwaysFalse", "$expr", "$jsonSchema", "$where", "$text", "$sampleRate", "$id", "$ref",
		"$db", NULL};

	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], k) == 0)
			return true;
	return false;
}

/* {$ref..., $id...} documents are values, not operator documents */
static bool
is_operator_doc(const bson_value_t *v, bool allow_incomplete_dbref)
{
	bson_iter_t it;
	bool ref = false, id = false, db = false, first = true, dollar = false;

	if (v->value_type != BSON_TYPE_DOCUMENT ||
	    !bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len))
		return false;
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (first)
			dollar = k[0] == '$';
		first = false;
		ref |= strcmp(k, "$ref") == 0;
		id |= strcmp(k, "$id") == 0;
		db |= strcmp(k, "$db") == 0;
	}
	if (!dollar)
		return false;
	if (allow_incomplete_dbref ? (ref || id || db) : (ref && id))
		return false;
	return true;
}

/* The operators of {path: {<ops>}}, each added to root as mongod does. */
static int
parse_sub(ectx_t *c, const char *path, const bson_value_t *sub, enode_t *root)
{
	bson_iter_t it;
	bool regex_done = false;

	if (!bson_iter_init_from_data(&it, sub->value.v_doc.data, sub->value.v_doc.data_len))
		return terr_set(&c->err, TERR_INVALID_BSON, "invalid BSON in validator");
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);
		const leaf_row_t *row = leaf_row(k);
		enode_t *n = NULL;

		if (strcmp(k, "$not") == 0) {
			if (v->value_type == BSON_TYPE_REGEX) {
				n = not_of(leaf_new("$regex", path, spec_path_value(path, v),
				                    spec_path_value(path, v)), false);
			} else {
				enode_t *and = en_new(EN_AND, "$and");
				if (parse_sub(c, path, v, and) != 0) {
					en_free(and);
					return -1;
				}
				and->transparent = and->nkids == 1;
				n = not_of(and, false);
			}
		} else if (strcmp(k, "$ne") == 0) {
			n = not_of(leaf_new("$ne", path, spec_path_op(path, k, v),
			                    spec_path_op(path, "$eq", v)), true);
		} else if (strcmp(k, "$nin") == 0) {
			n = not_of(leaf_new("$nin", path, spec_path_op(path, k, v),
			                    spec_path_op(path, "$in", v)), true);
		} else if (strcmp(k, "$exists") == 0) {
			bson_t tmp = BSON_INITIALIZER;
			bson_value_t t;
			bson_iter_t ti;
			bool truthy;

			bson_append_value(&tmp, "v", 1, v);
			truthy = bson_iter_init_find(&ti, &tmp, "v") && bson_iter_as_bool(&ti);
			if (v->value_type == BSON_TYPE_DECIMAL128) {
				bson_decimal128_t z = {0, 0};
				truthy = bv_decimal_compare(&v->value.v_decimal128, &z) != 0;
			}
			bson_destroy(&tmp);
			t.value_type = BSON_TYPE_BOOL;
			t.value.v_bool = true;
			n = leaf_new("$exists", path, spec_path_op(path, k, v),
			             spec_path_op(path, "$exists", &t));
			if (!truthy)
				n = not_of(n, true);
		} else if (strcmp(k, "$options") == 0) {
			continue; /* part of $regex */
		} else if (strcmp(k, "$regex") == 0) {
			bson_iter_t rit;
			bson_t *eval, sub2;

			if (regex_done)
				continue;
			regex_done = true;
			eval = doc_new();
			bson_append_document_begin(eval, path, -1, &sub2);
			bson_iter_init_from_data(&rit, sub->value.v_doc.data, sub->value.v_doc.data_len);
			while (bson_iter_next(&rit))
				if (strcmp(bson_iter_key(&rit), "$regex") == 0 ||
				    strcmp(bson_iter_key(&rit), "$options") == 0)
					bson_append_iter(&sub2, NULL, 0, &rit);
			bson_append_document_end(eval, &sub2);
			n = leaf_new("$regex", path, spec_path_value(path, sub), eval);
		} else if (strcmp(k, "$all") == 0) {
			bool empty = v->value_type == BSON_TYPE_ARRAY && v->value.v_doc.data_len <= 5;

			if (empty) {
				n = en_new(EN_FALSE, "$all");
				n->spec = spec_path_op(path, k, v);
			} else {
				n = leaf_new("$all", path, spec_path_op(path, k, v), spec_path_op(path, k, v));
			}
		} else if (row != NULL) {
			n = leaf_new(row->tag, path, spec_path_op(path, k, v), spec_path_op(path, k, v));
		} else {
			return terr_set(&c->err, TERR_NOT_IMPLEMENTED,
			                "no validation error details for operator %s", k);
		}
		en_add(root, n);
	}
	return 0;
}

/* A pathless operator: $and/$or/$nor, $expr, $jsonSchema, ... */
static int
parse_pathless(ectx_t *c, const char *k, const bson_value_t *v, enode_t **out)
{
	bson_t ser = BSON_INITIALIZER;
	bson_iter_t it;

	*out = NULL;
	if (strcmp(k, "$and") == 0 || strcmp(k, "$or") == 0 || strcmp(k, "$nor") == 0) {
		enode_t *n = en_new(k[1] == 'a' ? EN_AND : k[2] == 'r' ? EN_OR : EN_NOR,
		                    k[1] == 'a' ? "$and" : k[2] == 'r' ? "$or" : "$nor");
		bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len);
		while (bson_iter_next(&it)) {
			const bson_value_t *e = bson_iter_value(&it);
			enode_t *kid;
			if (e->value_type != BSON_TYPE_DOCUMENT ||
			    parse_obj(c, e->value.v_doc.data, e->value.v_doc.data_len, &kid) != 0) {
				en_free(n);
				if (!terr_is_set(&c->err))
					terr_set(&c->err, TERR_BAD_VALUE, "bad %s clause", k);
				return -1;
			}
			en_add(n, kid);
		}
		*out = n;
	} else if (strcmp(k, "$comment") == 0) {
		/* nothing */
	} else if (strcmp(k, "$expr") == 0) {
		enode_t *n = en_new(EN_EXPR, "$expr");
		n->spec = spec_path_value(k, v);
		n->eval = spec_path_value(k, v);
		n->expr_arg = *v;
		*out = n;
	} else if (strcmp(k, "$jsonSchema") == 0) {
		enode_t *n = en_new(EN_SCHEMA, "$jsonSchema");
		n->schema = find_schema(c->m->root, v->value.v_doc.data);
		if (n->schema == NULL) {
			en_free(n);
			return terr_set(&c->err, TERR_INTERNAL_ERROR, "compiled $jsonSchema not found");
		}
		*out = n;
	} else if (strcmp(k, "$sampleRate") == 0 && bv_as_double(v) == 0.0) {
		enode_t *n = en_new(EN_EXPR, "$sampleRate");
		n->spec = spec_path_value(k, v);
		n->has_const = true;
		n->const_val = false;
		*out = n;
	} else if (strcmp(k, "$sampleRate") == 0 && bv_as_double(v) == 1.0) {
		enode_t *n = en_new(EN_EXPR, "$sampleRate");
		n->spec = spec_path_value(k, v);
		n->has_const = true;
		n->const_val = true;
		*out = n;
	} else if (strcmp(k, "$sampleRate") == 0) {
		/* {$expr: {$lt: [{$rand: {}}, {$const: x}]}}, as mongod serializes it */
		bson_t e, lt, arr, r, empty, cst;
		bson_append_document_begin(&ser, "$expr", -1, &e);
		bson_append_document_begin(&e, "$lt", -1, &lt);
		bson_append_array_begin(&lt, "$lt", -1, &arr);
		bson_append_document_begin(&arr, "0", -1, &r);
		bson_append_document_begin(&r, "$rand", -1, &empty);
		bson_append_document_end(&r, &empty);
		bson_append_document_end(&arr, &r);
		bson_append_document_begin(&arr, "1", -1, &cst);
		bson_append_value(&cst, "$const", -1, v);
		bson_append_document_end(&arr, &cst);
		bson_append_array_end(&lt, &arr);
		bson_append_document_end(&e, &lt);
		bson_append_document_end(&ser, &e);
		*out = noannot_new(&ser);
	} else if (strcmp(k, "$alwaysTrue") == 0 || strcmp(k, "$alwaysFalse") == 0) {
		BSON_APPEND_INT32(&ser, k, 1);
		*out = noannot_new(&ser);
	} else if (strcmp(k, "$id") == 0 || strcmp(k, "$ref") == 0 || strcmp(k, "$db") == 0) {
		bson_t sub;
		bson_append_document_begin(&ser, k, -1, &sub);
		bson_append_value(&sub, "$eq", -1, v);
		bson_append_document_end(&ser, &sub);
		*out = noannot_new(&ser);
	} else {
		bson_destroy(&ser);
		return terr_set(&c->err, TERR_NOT_IMPLEMENTED,
		                "no validation error details for operator %s", k);
	}
	bson_destroy(&ser);
	return 0;
}

/* A filter document: an implicit $and of its fields, one clause collapsed. */
static int
parse_obj(ectx_t *c, const uint8_t *data, uint32_t len, enode_t **out)
{
	enode_t *root = en_new(EN_AND, "$and"), *n;
	bson_iter_t it;

	if (!bson_iter_init_from_data(&it, data, len)) {
		en_free(root);
		return terr_set(&c->err, TERR_INVALID_BSON, "invalid BSON in validator");
	}
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		const bson_value_t *v = bson_iter_value(&it);

		if (k[0] == '$' && is_pathless(k)) {
			if (parse_pathless(c, k, v, &n) != 0)
				goto fail;
			if (n != NULL)
				en_add(root, n);
		} else if (k[0] != '$' && is_operator_doc(v, false)) {
			if (parse_sub(c, k, v, root) != 0)
				goto fail;
		} else if (v->value_type == BSON_TYPE_REGEX) {
			en_add(root, leaf_new("$regex", k, spec_path_value(k, v), spec_path_value(k, v)));
		} else if (k[0] == '$') {
			terr_set(&c->err, TERR_BAD_VALUE, "unknown top level operator: %s", k);
			goto fail;
		} else {
			en_add(root, leaf_new("$eq", k, spec_path_value(k, v), spec_path_value(k, v)));
		}
	}
	if (root->nkids == 1) {
		n = root->kids[0];
		root->nkids = 0;
		en_free(root);
		*out = n;
		return 0;
	}
	*out = root;
	return 0;
fail:
	en_free(root);
	return -1;
}

/* The first node without an annotation, in mongod's pre-order. */
static const enode_t *
find_noannot(const enode_t *n)
{
	const enode_t *f;

	if (n->kind == EN_NOANNOT)
		return n;
	for (uint32_t i = 0; i < n->nkids; i++)
		if ((f = find_noannot(n->kids[i])) != NULL)
			return f;
	return NULL;
}

/* ---- does a node match: 1, 0, or -1 when its evaluation throws -------------- */

static int
en_matches(ectx_t *c, enode_t *n)
{
	int r;

	switch (n->kind) {
	case EN_AND:
		for (uint32_t i = 0; i < n->nkids; i++)
			if ((r = en_matches(c, n->kids[i])) != 1)
				return r;
		return 1;
	case EN_OR:
		for (uint32_t i = 0; i < n->nkids; i++)
			if ((r = en_matches(c, n->kids[i])) != 0)
				return r;
		return 0;
	case EN_NOR:
		for (uint32_t i = 0; i < n->nkids; i++)
			if ((r = en_matches(c, n->kids[i])) != 0)
				return r < 0 ? -1 : 0;
		return 1;
	case EN_NOT:
		r = en_matches(c, n->kids[0]);
		return r < 0 ? -1 : !r;
	case EN_FALSE:
		return 0;
	case EN_SCHEMA:
		return schema_matches(n->schema, c->doc) ? 1 : 0;
	case EN_EXPR:
		if (n->has_const)
			return n->const_val ? 1 : 0;
		/* fallthrough */
	default:
		if (n->eval == NULL)
			return 0;
		if (n->m == NULL) {
			terr_t e = TERR_INIT;
			if (match_compile(n->eval, NULL, &n->m, &e) != 0) {
				if (!c->failed)
					terr_move(&c->err, &e);
				terr_clear(&e);
				c->failed = true;
				return 0;
			}
		}
		{
			terr_t e = TERR_INIT;
			r = match_exec(n->m, c->doc, NULL, &e);
			terr_clear(&e);
			return r;
		}
	}
}

/* ---- building the error, with mongod's size checks ------------------------- */

static bool
fits(ectx_t *c, const bson_t *b, const char *key, uint32_t item_len)
{
	if ((int64_t)b->len + item_len + (int64_t)strlen(key) + 2 > c->max_size) {
		c->too_large = true;
		return false;
	}
	return true;
}

static void
put_doc(ectx_t *c, bson_t *b, const char *key, const bson_t *item)
{
	if (fits(c, b, key, item->len))
		bson_append_document(b, key, -1, item);
}

static void
put_array(ectx_t *c, bson_t *b, const char *key, const bson_t *item)
{
	if (fits(c, b, key, item->len))
		bson_append_array(b, key, -1, item);
}

static void
put_value(ectx_t *c, bson_t *b, const char *key, const bson_value_t *v)
{
	bson_t tmp = BSON_INITIALIZER;

	bson_append_value(&tmp, "", 0, v);
	if (fits(c, b, key, tmp.len))
		bson_append_value(b, key, -1, v);
	bson_destroy(&tmp);
}

/* The values at path, mongod's createValuesArray: arr receives them (at
 * most max_considered); returns false when the path is missing. */
typedef struct vwalk {
	bson_t *arr;
	uint32_t n, max;
	trav_t trav;
	bool truncated;
} vwalk_t;

static bool
values_visit(const bpath_hit_t *h, void *ctx)
{
	vwalk_t *w = ctx;
	char key[16];
	const char *k;

	if (h->value.value_type == BSON_TYPE_EOD)
		return false;
	if (w->trav == TRAV_OMIT_ARRAY && h->value.value_type == BSON_TYPE_ARRAY && !h->leaf_element)
		return true;
	if (w->n >= w->max) {
		w->truncated = true;
		return false;
	}
	bson_uint32_to_string(w->n, &k, key, sizeof key);
	bson_append_value(w->arr, k, -1, &h->value);
	w->n++;
	return true;
}

static bool
exists_visit(const bpath_hit_t *h, void *ctx)
{
	*(bool *)ctx = h->value.value_type != BSON_TYPE_EOD;
	return false;
}

static bool
values_at(ectx_t *c, const char *path, trav_t trav, bson_t *arr, uint32_t *n, bool *truncated)
{
	vwalk_t w = {arr, 0, (uint32_t)c->max_considered, trav, false};
	bool exists = false;

	*truncated = false;
	if (path[0] == '\0') {
		bson_append_document(arr, "0", 1, c->doc);
		*n = 1;
		return true;
	}
	bpath_walk(c->doc, path, trav == TRAV_OMIT_ARRAY, values_visit, &w);
	*n = w.n;
	*truncated = w.truncated;
	if (w.n > 0)
		return true;
	bpath_walk(c->doc, path, true, exists_visit, &exists);
	return exists;
}

static void
put_reason(bson_t *obj, const char *normal, const char *inverted, bool inv)
{
	if (bson_has_field(obj, "reason"))
		return;
	BSON_APPEND_UTF8(obj, "reason", inv ? inverted : normal);
}

static void
put_considered_values(ectx_t *c, bson_t *obj, const bson_t *arr, uint32_t n, bool truncated)
{
	if (c->truncate)
		return;
	if (n == 1) {
		bson_iter_t it;
		bson_iter_init(&it, arr);
		bson_iter_next(&it);
		put_value(c, obj, "consideredValue", bson_iter_value(&it));
	} else {
		put_array(c, obj, "consideredValues", arr);
	}
	if (truncated)
		BSON_APPEND_BOOL(obj, "consideredValuesTruncated", true);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* consideredType / consideredTypes: the set of type names, sorted */
static void
put_considered_types(bson_t *obj, const bson_t *arr, uint32_t n)
{
	const char *names[32];
	int count = 0, i, j;
	bson_iter_t it;

	if (n == 0)
		return;
	bson_iter_init(&it, arr);
	while (bson_iter_next(&it) && count < 32) {
		const char *name = bv_type_name(bson_iter_type(&it));
		for (j = 0; j < count; j++)
			if (strcmp(names[j], name) == 0)
				break;
		if (j == count)
			names[count++] = name;
	}
	qsort(names, (size_t)count, sizeof names[0], cmp_str);
	if (count == 1) {
		BSON_APPEND_UTF8(obj, "consideredType", names[0]);
	} else {
		bson_t a;
		char key[16];
		const char *k;
		bson_append_array_begin(obj, "consideredTypes", -1, &a);
		for (i = 0; i < count; i++) {
			bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
			bson_append_utf8(&a, k, -1, names[i], -1);
		}
		bson_append_array_end(obj, &a);
	}
}

static void
put_type_mismatch(bson_t *obj, const leaf_row_t *row, const bson_t *arr, uint32_t n)
{
	bson_iter_t it;

	if (bson_has_field(obj, "reason") || row->expected == 0)
		return;
	bson_iter_init(&it, arr);
	while (bson_iter_next(&it))
		if ((uint32_t)bson_iter_type(&it) < 32 && (row->expected & TB(bson_iter_type(&it))))
			return;
	BSON_APPEND_UTF8(obj, "reason", "type did not match");
	put_considered_types(obj, arr, n);
	if (row->expected_names[1] == NULL) {
		BSON_APPEND_UTF8(obj, "expectedType", row->expected_names[0]);
	} else {
		bson_t a;
		char key[16];
		const char *k;
		bson_append_array_begin(obj, "expectedTypes", -1, &a);
		for (uint32_t i = 0; row->expected_names[i] != NULL; i++) {
			bson_uint32_to_string(i, &k, key, sizeof key);
			bson_append_utf8(&a, k, -1, row->expected_names[i], -1);
		}
		bson_append_array_end(obj, &a);
	}
}

/* operatorName and specifiedAs */
static void
put_details(ectx_t *c, bson_t *obj, const enode_t *n)
{
	if (n->tag != NULL)
		BSON_APPEND_UTF8(obj, "operatorName", n->tag);
	if (!c->truncate && n->spec != NULL)
		put_doc(c, obj, "specifiedAs", n->spec);
}

static void
gen_leaf(ectx_t *c, const enode_t *n, bool inv, bson_t *obj)
{
	const leaf_row_t *row = n->row;
	bson_t arr = BSON_INITIALIZER;
	uint32_t count = 0;
	bool truncated = false, have;

	put_details(c, obj, n);
	if (row->style == STYLE_EXISTS) {
		put_reason(obj, row->normal, row->inverted, inv);
		bson_destroy(&arr);
		return;
	}
	have = values_at(c, n->path, row->trav, &arr, &count, &truncated);
	if (!have)
		BSON_APPEND_UTF8(obj, "reason", "field was missing");
	if (row->style == STYLE_PATH && have)
		put_type_mismatch(obj, row, &arr, count);
	put_reason(obj, row->normal, row->inverted, inv);
	if (have)
		put_considered_values(c, obj, &arr, count, truncated);
	if (row->style == STYLE_TYPE && have)
		put_considered_types(obj, &arr, count);
	bson_destroy(&arr);
}

static void
gen_expr(ectx_t *c, const enode_t *n, bool inv, bson_t *obj)
{
	expr_scope_t *scope;
	expr_env_t *env;
	expr_t *e = NULL;
	terr_t err = TERR_INIT;
	bson_value_t out;
	struct timespec ts;

	put_details(c, obj, n);
	if (n->has_const) {
		put_reason(obj, "expression did not match", "expression did match", inv);
		BSON_APPEND_BOOL(obj, "expressionResult", n->const_val);
		return;
	}
	scope = expr_scope_new();
	env = expr_env_new();
	clock_gettime(CLOCK_REALTIME, &ts);
	expr_env_set_now(env, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	expr_env_set_root(env, c->doc);
	if (expr_parse(&n->expr_arg, scope, &e, &err) == 0 && expr_eval(e, env, &out, &err) == 0) {
		put_reason(obj, "expression did not match", "expression did match", inv);
		if (out.value_type != BSON_TYPE_EOD)
			put_value(c, obj, "expressionResult", &out);
	} else {
		bson_t d;
		char buf[32];
		BSON_APPEND_UTF8(obj, "reason", "failed to evaluate aggregation expression");
		bson_append_document_begin(obj, "details", -1, &d);
		BSON_APPEND_INT32(&d, "code", err.code);
		BSON_APPEND_UTF8(&d, "codeName", terr_code_name(err.code, buf));
		BSON_APPEND_UTF8(&d, "errmsg", err.msg ? err.msg : "");
		bson_append_document_end(obj, &d);
	}
	terr_clear(&err);
	expr_destroy(e);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
}

typedef enum { ST_ERROR, ST_NO_ERROR, ST_NEED_CHILDREN } st_t;

/*
 * One node of mongod's error walk.  pstate is the parent's runtime state,
 * root marks the first frame.  Returns the node's error (a new document) or
 * NULL when it contributes none; a transparent node returns its child's.
 */
static bson_t *
gen(ectx_t *c, enode_t *n, bool inv, st_t pstate, bool root)
{
	st_t st;
	bool g;
	bson_t *obj = NULL, *kid_err = NULL;

	if (c->failed || c->too_large)
		return NULL;
	if (root) {
		st = ST_ERROR;
	} else if (pstate == ST_NO_ERROR) {
		st = ST_NO_ERROR;
	} else if (pstate == ST_NEED_CHILDREN) {
		int r = en_matches(c, n);
		st = (r < 0 || (r == 1) == inv) ? ST_ERROR : ST_NO_ERROR;
	} else {
		st = ST_ERROR;
	}
	g = !n->transparent && st != ST_NO_ERROR;
	if (g)
		obj = doc_new();

	switch (n->kind) {
	case EN_LEAF:
		if (g)
			gen_leaf(c, n, inv, obj);
		break;
	case EN_FALSE:
		if (g) {
			put_details(c, obj, n);
			put_reason(obj, "expression always evaluates to false",
			           "expression always evaluates to true", inv);
		}
		break;
	case EN_EXPR:
		if (g)
			gen_expr(c, n, inv, obj);
		break;
	case EN_SCHEMA:
		if (g) {
			bson_t tmp = BSON_INITIALIZER;
			bool matched;
			if (!inv) {
				matched = schema_explain_flags(n->schema, c->doc,
				                               c->truncate ? SCHEMA_EXPLAIN_TRUNCATE : 0, &tmp);
				if (!matched)
					bson_concat(obj, &tmp);
			} else {
				matched = !schema_explain_inverted_append(n->schema, c->doc, &tmp, "d");
				if (!matched) {
					bson_iter_t it, sub;
					if (bson_iter_init_find(&it, &tmp, "d") && bson_iter_recurse(&it, &sub)) {
						const uint8_t *data;
						uint32_t len;
						bson_t d;
						bson_iter_document(&it, &len, &data);
						if (bson_init_static(&d, data, len))
							bson_concat(obj, &d);
					}
				}
			}
			bson_destroy(&tmp);
			if (obj->len > (uint32_t)c->max_size)
				c->too_large = true;
			if (matched) {
				doc_free(obj);
				obj = NULL;
			}
		}
		break;
	case EN_NOT:
		if (g)
			BSON_APPEND_UTF8(obj, "operatorName", "$not");
		kid_err = gen(c, n->kids[0], !inv, st, false);
		if (g && kid_err != NULL)
			put_doc(c, obj, "details", kid_err);
		break;
	case EN_AND:
	case EN_OR:
	case EN_NOR: {
		st_t cst = st;
		bool cinv = inv;
		bson_t arr = BSON_INITIALIZER;
		uint32_t added = 0;
		const char *what;

		if (g)
			BSON_APPEND_UTF8(obj, "operatorName", n->tag);
		if (st != ST_NO_ERROR) {
			if (n->kind == EN_AND && !inv)
				cst = ST_NEED_CHILDREN;
			else if (n->kind == EN_OR && inv)
				cst = ST_NEED_CHILDREN;
			else if (n->kind == EN_NOR && !inv)
				cst = ST_NEED_CHILDREN;
		}
		if (n->kind == EN_NOR)
			cinv = !inv;
		for (uint32_t i = 0; i < n->nkids; i++) {
			bson_t *e = gen(c, n->kids[i], cinv, cst, false);
			if (!g) {
				/* transparent: only the last clause's error survives */
				doc_free(kid_err);
				kid_err = e;
				continue;
			}
			if (e != NULL) {
				bson_t item;
				char key[16];
				const char *k;
				bson_uint32_to_string(added++, &k, key, sizeof key);
				if (fits(c, &arr, k, e->len + 32)) {
					bson_append_document_begin(&arr, k, -1, &item);
					BSON_APPEND_INT32(&item, "index", (int32_t)i);
					bson_append_document(&item, "details", -1, e);
					bson_append_document_end(&arr, &item);
				}
				doc_free(e);
			}
		}
		what = cinv ? "clausesSatisfied" : "clausesNotSatisfied";
		if (g)
			put_array(c, obj, what, &arr);
		bson_destroy(&arr);
		break;
	}
	case EN_NOANNOT:
		break;
	}
	if (!g)
		return kid_err;
	doc_free(kid_err);
	return obj;
}

/* ---- the errInfo ------------------------------------------------------------ */

static void
put_id(bson_t *out, const bson_t *doc)
{
	bson_iter_t it;

	if (bson_iter_init_find(&it, doc, "_id"))
		bson_append_value(out, "failingDocumentId", -1, bson_iter_value(&it));
}

/* mongod's checkValidationErrorDepth: the deepest non-empty object or array */
static int
max_depth(const uint8_t *data, uint32_t len, int level)
{
	bson_iter_t it;
	int best = level, d;

	if (!bson_iter_init_from_data(&it, data, len))
		return level;
	while (bson_iter_next(&it)) {
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *sd;
			uint32_t sl;
			if (BSON_ITER_HOLDS_DOCUMENT(&it))
				bson_iter_document(&it, &sl, &sd);
			else
				bson_iter_array(&it, &sl, &sd);
			if (sl > 5 && (d = max_depth(sd, sl, level + 1)) > best)
				best = d;
		}
	}
	return best;
}

static void
note_failure(bson_t *out, const bson_t *doc, const terr_t *e)
{
	bson_t d;
	char buf[32];

	put_id(out, doc);
	BSON_APPEND_UTF8(out, "note", "failed to generate document validation error");
	bson_append_document_begin(out, "details", -1, &d);
	BSON_APPEND_INT32(&d, "code", e->code);
	BSON_APPEND_UTF8(&d, "codeName", terr_code_name(e->code, buf));
	BSON_APPEND_UTF8(&d, "errmsg", e->msg ? e->msg : "");
	bson_append_document_end(out, &d);
}

/* Build the explain tree; on failure err says why. */
static enode_t *
build_tree(ectx_t *c)
{
	enode_t *tree = NULL;
	const enode_t *na;

	if (parse_obj(c, c->m->filter_data, c->m->filter_len, &tree) != 0) {
		c->failed = true;
		return NULL;
	}
	if ((na = find_noannot(tree)) != NULL) {
		terr_set(&c->err, 4994600,
		         "Cannot generate validation error details: no annotation found for expression %s",
		         na->noannot);
		c->failed = true;
		en_free(tree);
		return NULL;
	}
	return tree;
}

static void
ctx_init(ectx_t *c, const match_t *m, const bson_t *doc, const match_explain_opts_t *opts)
{
	memset(c, 0, sizeof *c);
	c->m = m;
	c->doc = doc;
	c->max_size = opts != NULL && opts->max_size > 0 ? opts->max_size : MATCH_EXPLAIN_MAX_SIZE;
	c->max_considered = opts != NULL && opts->max_considered > 0 ? opts->max_considered :
	                    MATCH_EXPLAIN_MAX_CONSIDERED;
}

bson_t *
match_explain_errinfo(const match_t *m, const bson_t *doc, const match_explain_opts_t *opts)
{
	bson_t out = BSON_INITIALIZER;
	ectx_t c;
	enode_t *tree;
	bson_t *res = NULL;

	ctx_init(&c, m, doc, opts);
	tree = build_tree(&c);
	for (int attempt = 0; tree != NULL && attempt < 2; attempt++) {
		bson_t *details;

		c.truncate = attempt == 1;
		c.too_large = false;
		details = gen(&c, tree, false, ST_ERROR, true);
		if (c.failed) {
			doc_free(details);
			break;
		}
		if (c.too_large) {
			doc_free(details);
			continue;
		}
		if (details == NULL) {
			terr_set(&c.err, 9740339,
			         "Must have a non-empty error when error generation has completed");
			c.failed = true;
			break;
		}
		bson_reinit(&out);
		put_id(&out, doc);
		if (c.truncate)
			BSON_APPEND_BOOL(&out, "truncated", true);
		bson_append_document(&out, "details", -1, details);
		doc_free(details);
		if (max_depth(bson_get_data(&out), out.len, 1) > EXPLAIN_MAX_DEPTH) {
			bson_reinit(&out);
			BSON_APPEND_UTF8(&out, "reason", "generated error was too deeply nested");
			BSON_APPEND_BOOL(&out, "truncated", true);
		}
		if (out.len > (uint32_t)c.max_size)
			continue;
		res = bson_copy(&out);
		break;
	}
	if (res == NULL) {
		bson_reinit(&out);
		if (c.failed) {
			note_failure(&out, doc, &c.err);
		} else {
			put_id(&out, doc);
			BSON_APPEND_UTF8(&out, "note", "detailed error was too large");
		}
		res = bson_copy(&out);
	}
	en_free(tree);
	terr_clear(&c.err);
	bson_destroy(&out);
	return res;
}

bool
match_explain_details(const match_t *m, const bson_t *doc, bson_t *out)
{
	bson_t *info = match_explain_errinfo(m, doc, NULL);
	bson_iter_t it;
	bool ok = false;

	if (bson_iter_init_find(&it, info, "details") && !bson_has_field(info, "note") &&
	    BSON_ITER_HOLDS_DOCUMENT(&it)) {
		const uint8_t *data;
		uint32_t len;
		bson_t d;
		bson_iter_document(&it, &len, &data);
		if (bson_init_static(&d, data, len)) {
			bson_concat(out, &d);
			ok = true;
		}
	}
	bson_destroy(info);
	return ok;
}

static bool
uses_encrypt(const mnode_t *n)
{
	if (n == NULL)
		return false;
	if (n->kind == MK_SCHEMA && n->u.schema != NULL && schema_uses_encrypt(n->u.schema))
		return true;
	for (uint32_t i = 0; i < n->nkids; i++)
		if (uses_encrypt(n->kids[i]))
			return true;
	return false;
}

bool
match_uses_encrypt(const match_t *m)
{
	return m != NULL && uses_encrypt(m->root);
}
