/*
 * op_field.c -- the field operators: $set $unset $inc $mul $min $max
 * $setOnInsert $currentDate $bit $rename, one table row each.
 *
 * Each row parses its argument once (errors as mongod's *_node.cpp) and
 * applies to one value: the existing one or NULL when the path is missing.
 * Numbers follow MongoDB's SafeNum: int32 widens to int64 on overflow, an
 * int64 overflow is an error, doubles and Decimal128 absorb the rest.
 *
 * Not here: array operators (op_array.c), walking paths (update.c).
 */
#include "update/update_private.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "bson/path.h"
#include "bson/value.h"
#include "common/checked.h"
#include "expr/decimal.h"

/* ------------------------------------------------------------------ */
/* numbers                                                             */

static bson_decimal128_t
to_dec(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
		return expr_decimal_from_int64(v->value.v_int32);
	case BSON_TYPE_INT64:
		return expr_decimal_from_int64(v->value.v_int64);
	case BSON_TYPE_DOUBLE:
		return expr_decimal_from_double(v->value.v_double);
	default:
		return v->value.v_decimal128;
	}
}

static double
to_dbl(const bson_value_t *v)
{
	switch (v->value_type) {
	case BSON_TYPE_INT32:
		return v->value.v_int32;
	case BSON_TYPE_INT64:
		return (double)v->value.v_int64;
	case BSON_TYPE_DOUBLE:
		return v->value.v_double;
	default:
		return expr_decimal_to_double(v->value.v_decimal128);
	}
}

static int64_t
to_i64(const bson_value_t *v)
{
	return v->value_type == BSON_TYPE_INT32 ? v->value.v_int32 : v->value.v_int64;
}

bool
update_num_arith(unum_op_t op, const bson_value_t *a, const bson_value_t *b, bson_value_t *out)
{
	bson_type_t ta = a->value_type, tb = b->value_type;

	memset(out, 0, sizeof *out);
	if (ta == BSON_TYPE_DECIMAL128 || tb == BSON_TYPE_DECIMAL128) {
		bson_decimal128_t x = to_dec(a), y = to_dec(b);

		out->value_type = BSON_TYPE_DECIMAL128;
		out->value.v_decimal128 = op == UNUM_ADD ? expr_decimal_add(x, y) : expr_decimal_mul(x, y);
		return true;
	}
	if (ta == BSON_TYPE_DOUBLE || tb == BSON_TYPE_DOUBLE) {
		out->value_type = BSON_TYPE_DOUBLE;
		out->value.v_double = op == UNUM_ADD ? to_dbl(a) + to_dbl(b) : to_dbl(a) * to_dbl(b);
		return true;
	}
	if (ta == BSON_TYPE_INT32 && tb == BSON_TYPE_INT32) {
		int32_t r;
		bool ovf = op == UNUM_ADD ? tm_i32_add(a->value.v_int32, b->value.v_int32, &r)
		                          : tm_i32_mul(a->value.v_int32, b->value.v_int32, &r);

		if (!ovf) {
			out->value_type = BSON_TYPE_INT32;
			out->value.v_int32 = r;
			return true;
		}
	}
	{
		int64_t r;
		bool ovf = op == UNUM_ADD ? tm_i64_add(to_i64(a), to_i64(b), &r)
		                          : tm_i64_mul(to_i64(a), to_i64(b), &r);

		if (ovf)
			return false;
		out->value_type = BSON_TYPE_INT64;
		out->value.v_int64 = r;
		return true;
	}
}

char *
update_num_debug(const bson_value_t *v)
{
	char *s = bv_to_mongo_string(v), *r;
	const char *tag = "";

	switch (v->value_type) {
	case BSON_TYPE_INT32:
		tag = "(NumberInt)";
		break;
	case BSON_TYPE_INT64:
		tag = "(NumberLong)";
		/* bv_to_mongo_string may print NumberLong(...) */
		if (strncmp(s, "NumberLong(", 11) == 0) {
			size_t l = strlen(s);

			memmove(s, s + 11, l - 11);
			s[l - 12] = '\0';
		}
		break;
	case BSON_TYPE_DOUBLE:
		tag = "(NumberDouble)";
		break;
	case BSON_TYPE_DECIMAL128:
		tag = "(NumberDecimal)";
		break;
	default:
		break;
	}
	r = bson_strdup_printf("%s%s", tag, s);
	bson_free(s);
	return r;
}

static const char *
last_name(const uapply_t *st)
{
	return st->ncomp ? st->comp[st->ncomp - 1] : "";
}

/* ------------------------------------------------------------------ */
/* $set, $setOnInsert                                                  */

static int
set_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	if (cur != NULL && update_value_identical(cur, &leaf->arg))
		return 0;
	update_res_set_copy(out, &leaf->arg);
	return 0;
}

static int
set_on_insert_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
                    terr_t *err)
{
	if (!st->ctx->is_insert)
		return 0;
	return set_apply(leaf, cur, st, out, err);
}

/* ------------------------------------------------------------------ */
/* $unset                                                              */

static int
unset_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	if (cur != NULL)
		out->kind = UR_REMOVE;
	return 0;
}

/* ------------------------------------------------------------------ */
/* $inc, $mul                                                          */

static int
arith_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	bool inc = strcmp(leaf->op->name, "$inc") == 0;

	if (!bv_is_number(arg)) {
		char *v = bv_to_mongo_string(arg);

		terr_set(err, TERR_TYPE_MISMATCH, "Cannot %s with non-numeric argument: {%s: %s}",
		         inc ? "increment" : "multiply", leaf->path, v);
		bson_free(v);
		return -1;
	}
	return 0;
}

static int
arith_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	bool inc = strcmp(leaf->op->name, "$inc") == 0;
	bson_value_t r, zero;

	if (cur == NULL) {
		if (inc) {
			update_res_set_copy(out, &leaf->arg);
			return 0;
		}
		zero.value_type = BSON_TYPE_INT32;
		zero.value.v_int32 = 0;
		update_num_arith(UNUM_MUL, &leaf->arg, &zero, &r);
		update_res_set_copy(out, &r);
		return 0;
	}
	if (!bv_is_number(cur)) {
		char *id = update_id_str(st, "no id");

		terr_set(err, TERR_TYPE_MISMATCH,
		         "Cannot apply %s to a value of non-numeric type. {%s} has the field '%s' of "
		         "non-numeric type %s", leaf->op->name, id, last_name(st),
		         bv_type_name(cur->value_type));
		bson_free(id);
		return -1;
	}
	if (!update_num_arith(inc ? UNUM_ADD : UNUM_MUL, cur, &leaf->arg, &r)) {
		char *id = update_id_str(st, "no id"), *d = update_num_debug(cur);

		terr_set(err, TERR_BAD_VALUE,
		         "Failed to apply %s operations to current value (%s) for document {%s}",
		         leaf->op->name, d, id);
		bson_free(id);
		bson_free(d);
		return -1;
	}
	if (update_value_identical(&r, cur))
		return 0;
	update_res_set_copy(out, &r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $min, $max                                                          */

static int
compare_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
              terr_t *err)
{
	bool is_min = strcmp(leaf->op->name, "$min") == 0;
	int c;

	if (cur == NULL) {
		update_res_set_copy(out, &leaf->arg);
		return 0;
	}
	c = bv_compare_coll(&leaf->arg, cur, leaf->coll);
	if ((is_min && c < 0) || (!is_min && c > 0))
		update_res_set_copy(out, &leaf->arg);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $currentDate                                                        */

static int
current_date_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	bool is_date = true;

	if (arg->value_type == BSON_TYPE_BOOL) {
		is_date = true;
	} else if (arg->value_type == BSON_TYPE_DOCUMENT) {
		bson_t d;
		bson_iter_t it;
		bool found = false;

		bson_init_static(&d, arg->value.v_doc.data, arg->value.v_doc.data_len);
		bson_iter_init(&it, &d);
		while (bson_iter_next(&it)) {
			if (strcmp(bson_iter_key(&it), "$type") == 0) {
				if (BSON_ITER_HOLDS_UTF8(&it)) {
					const char *s = bson_iter_utf8(&it, NULL);

					if (strcmp(s, "date") == 0) {
						is_date = true;
						found = true;
					} else if (strcmp(s, "timestamp") == 0) {
						is_date = false;
						found = true;
					}
				}
			} else {
				return terr_set(err, TERR_BAD_VALUE, "Unrecognized $currentDate option: %s",
				                bson_iter_key(&it));
			}
		}
		if (!found)
			return terr_set(err, TERR_BAD_VALUE,
			                "The '$type' string field is required to be 'date' or 'timestamp': "
			                "{$currentDate: {field : {$type: 'date'}}}");
	} else {
		return terr_set(err, TERR_BAD_VALUE,
		                "%s is not valid type for $currentDate. Please use a boolean ('true') or a "
		                "$type expression ({$type: 'timestamp/date'}).",
		                bv_type_name(arg->value_type));
	}
	leaf->priv = is_date ? NULL : (void *)1;
	return 0;
}

/* One time per update: every $currentDate of it gets the same value. */
static int64_t
now_ms(uapply_t *st)
{
	struct timespec ts;

	if (st->now_ms == 0) {
		if (st->ctx->now_ms != 0) {
			st->now_ms = st->ctx->now_ms;
		} else {
			clock_gettime(CLOCK_REALTIME, &ts);
			st->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		}
	}
	return st->now_ms;
}

static int
current_date_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
                   terr_t *err)
{
	bson_value_t v;

	memset(&v, 0, sizeof v);
	if (leaf->priv == NULL) {
		v.value_type = BSON_TYPE_DATE_TIME;
		v.value.v_datetime = now_ms(st);
	} else {
		v.value_type = BSON_TYPE_TIMESTAMP;
		if (st->ctx->ts_t != 0 || st->ctx->ts_i != 0) {
			v.value.v_timestamp.timestamp = st->ctx->ts_t;
			v.value.v_timestamp.increment = st->ctx->ts_i;
		} else {
			v.value.v_timestamp.timestamp = (uint32_t)(now_ms(st) / 1000);
			v.value.v_timestamp.increment = 1;
		}
	}
	update_res_set_copy(out, &v);
	st->force_modified = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* $bit                                                             */

typedef struct bitop {
	int kind; /* 0 and, 1 or, 2 xor */
	bson_value_t operand;
} bitop_t;

typedef struct bitops {
	size_t n;
	bitop_t op[];
} bitops_t;

static int
bit_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	bson_t d;
	bson_iter_t it;
	size_t n = 0;
	bitops_t *ops;

	if (arg->value_type != BSON_TYPE_DOCUMENT)
		return terr_set(err, TERR_BAD_VALUE,
		                "The $bit modifier is not compatible with a %s. You must pass in an "
		                "embedded document: {$bit: {field: {and/or/xor: #}}",
		                bv_type_name(arg->value_type));
	bson_init_static(&d, arg->value.v_doc.data, arg->value.v_doc.data_len);
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it))
		n++;
	ops = bson_malloc0(sizeof *ops + (n ? n : 1) * sizeof(bitop_t));
	leaf->priv = ops;
	bson_iter_init(&it, &d);
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		int kind;
		char *v;

		if (strcmp(k, "and") == 0)
			kind = 0;
		else if (strcmp(k, "or") == 0)
			kind = 1;
		else if (strcmp(k, "xor") == 0)
			kind = 2;
		else {
			v = bv_to_mongo_string(bson_iter_value(&it));
			terr_set(err, TERR_BAD_VALUE,
			         "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is "
			         "an unknown operator: {%s: %s}", k, k, v);
			bson_free(v);
			return -1;
		}
		if (!BSON_ITER_HOLDS_INT32(&it) && !BSON_ITER_HOLDS_INT64(&it)) {
			v = bv_to_mongo_string(bson_iter_value(&it));
			terr_set(err, TERR_BAD_VALUE,
			         "The $bit modifier field must be an Integer(32/64 bit); a '%s' is not "
			         "supported here: {%s: %s}", bv_type_name(bson_iter_type(&it)), k, v);
			bson_free(v);
			return -1;
		}
		ops->op[ops->n].kind = kind;
		ops->op[ops->n].operand = *bson_iter_value(&it);
		ops->n++;
	}
	if (ops->n == 0)
		return terr_set(err, TERR_BAD_VALUE,
		                "You must pass in at least one bitwise operation. The format is: "
		                "{$bit: {field: {and/or/xor: #}}");
	return 0;
}

static void
bit_free(void *p)
{
	bson_free(p);
}

static void
bit_run(const bitops_t *ops, bson_value_t *v)
{
	for (size_t i = 0; i < ops->n; i++) {
		const bson_value_t *o = &ops->op[i].operand;
		int64_t a = to_i64(v), b = to_i64(o), r;

		r = ops->op[i].kind == 0 ? (a & b) : ops->op[i].kind == 1 ? (a | b) : (a ^ b);
		if (v->value_type == BSON_TYPE_INT32 && o->value_type == BSON_TYPE_INT32) {
			v->value.v_int32 = (int32_t)r;
		} else {
			v->value_type = BSON_TYPE_INT64;
			v->value.v_int64 = r;
		}
	}
}

static int
bit_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out, terr_t *err)
{
	bson_value_t v;

	memset(&v, 0, sizeof v);
	if (cur == NULL) {
		v.value_type = BSON_TYPE_INT32;
		v.value.v_int32 = 0;
		bit_run(leaf->priv, &v);
		update_res_set_copy(out, &v);
		return 0;
	}
	if (cur->value_type != BSON_TYPE_INT32 && cur->value_type != BSON_TYPE_INT64) {
		char *id = update_id_str(st, "no id");

		terr_set(err, TERR_BAD_VALUE,
		         "Cannot apply $bit to a value of non-integral type.%s has the field %s of "
		         "non-integer type %s", id, last_name(st), bv_type_name(cur->value_type));
		bson_free(id);
		return -1;
	}
	v = *cur;
	bit_run(leaf->priv, &v);
	if (update_value_identical(&v, cur))
		return 0;
	update_res_set_copy(out, &v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* $rename                                                             */

static bool
path_is_prefix(const char *a, const char *b)
{
	size_t la = strlen(a);

	return strncmp(a, b, la) == 0 && (b[la] == '\0' || b[la] == '.');
}

static bool
path_dynamic(const char *p)
{
	const char *s = p;

	for (;;) {
		const char *dot = strchr(s, '.');
		size_t len = dot ? (size_t)(dot - s) : strlen(s);

		if ((len == 1 && s[0] == '$') || (len >= 3 && s[0] == '$' && s[1] == '[' && s[len - 1] == ']'))
			return true;
		if (!dot)
			return false;
		s = dot + 1;
	}
}

static int
rename_parse(unode_t *leaf, const bson_value_t *arg, terr_t *err)
{
	const char *from = leaf->from, *to = arg->value.v_utf8.str;

	if (strlen(to) != arg->value.v_utf8.len)
		return terr_set(err, TERR_BAD_VALUE,
		                "The 'to' field for $rename cannot contain an embedded null byte");
	if (strcmp(from, to) == 0)
		return terr_set(err, TERR_BAD_VALUE,
		                "The source and target field for $rename must differ: %s: \"%s\"", from, to);
	if (path_is_prefix(from, to) || path_is_prefix(to, from))
		return terr_set(err, TERR_BAD_VALUE,
		                "The source and target field for $rename must not be on the same path: "
		                "%s: \"%s\"", from, to);
	if (path_dynamic(from))
		return terr_set(err, TERR_BAD_VALUE, "The source field for $rename may not be dynamic: %s",
		                from);
	if (path_dynamic(to))
		return terr_set(err, TERR_BAD_VALUE,
		                "The destination field for $rename may not be dynamic: %s", to);
	return 0;
}

/*
 * Find the rename source in the original document.  Returns 1 found (value
 * in *v), 0 absent, -1 error (through an array, or not viable).
 */
static int
rename_source(const uapply_t *st, const char *from, bson_value_t *v, terr_t *err)
{
	bpath_t p;
	bson_iter_t it;
	const uint8_t *data = bson_get_data(st->root);
	uint32_t len = st->root->len;
	bson_type_t parent_t = BSON_TYPE_DOCUMENT;
	const char *parent_name = NULL;
	int ret = 0;

	bpath_init(&p, from);
	for (uint32_t i = 0; i < p.n; i++) {
		bool found = false;

		if (!bson_iter_init_from_data(&it, data, len))
			break;
		while (bson_iter_next(&it)) {
			if (strcmp(bson_iter_key(&it), p.comp[i].s) == 0) {
				found = true;
				break;
			}
		}
		if (parent_t == BSON_TYPE_ARRAY && found) {
			char *id = update_id_str(st, "no id");

			terr_set(err, TERR_BAD_VALUE,
			         "The source field cannot be an array element, '%s' in doc with %s has an "
			         "array field called '%s'", from, id, parent_name ? parent_name : "");
			bson_free(id);
			ret = -1;
			break;
		}
		if (!found)
			break;
		if (i + 1 == p.n) {
			*v = *bson_iter_value(&it);
			ret = 1;
			break;
		}
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			parent_t = bson_iter_type(&it);
			parent_name = p.comp[i].s;
			if (parent_t == BSON_TYPE_DOCUMENT)
				bson_iter_document(&it, &len, &data);
			else
				bson_iter_array(&it, &len, &data);
		} else {
			/* a scalar in the middle: mongod's findLongestPrefix says the
			 * path is not viable */
			char *val = bv_to_mongo_string(bson_iter_value(&it));

			terr_set(err, TERR_PATH_NOT_VIABLE,
			         "cannot use the part (%s of %s) to traverse the element ({%s: %s})",
			         p.comp[i + 1].s, from, p.comp[i].s, val);
			bson_free(val);
			ret = -1;
			break;
		}
	}
	bpath_destroy(&p);
	return ret;
}

/* Destination: the value of the source, when it exists. */
static int
rename_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
             terr_t *err)
{
	bson_value_t v;
	int r = rename_source(st, leaf->from, &v, err);

	if (r <= 0)
		return r;
	/* the destination may not go through an array */
	{
		bson_iter_t it;
		bson_t tmp;
		const uint8_t *data = bson_get_data(st->root);
		uint32_t len = st->root->len;

		for (size_t i = 0; i + 1 < st->ncomp; i++) {
			bool found = false;

			bson_init_static(&tmp, data, len);
			if (!bson_iter_init(&it, &tmp))
				break;
			while (bson_iter_next(&it))
				if (strcmp(bson_iter_key(&it), st->comp[i]) == 0) {
					found = true;
					break;
				}
			if (!found)
				break;
			if (BSON_ITER_HOLDS_ARRAY(&it)) {
				char *id = update_id_str(st, "no id");

				terr_set(err, TERR_BAD_VALUE,
				         "The destination field cannot be an array element, '%s' in doc with %s "
				         "has an array field called '%s'", leaf->path, id, st->comp[i]);
				bson_free(id);
				return -1;
			}
			if (!BSON_ITER_HOLDS_DOCUMENT(&it))
				break;
			bson_iter_document(&it, &len, &data);
		}
	}
	update_res_set_copy(out, &v);
	return 0;
}

/* Source: removed when the rename happens. */
static int
rename_from_apply(const unode_t *leaf, const bson_value_t *cur, uapply_t *st, ures_t *out,
                  terr_t *err)
{
	bson_value_t v;
	int r;

	if (cur == NULL)
		return 0;
	r = rename_source(st, leaf->path, &v, err);
	if (r < 0)
		return -1;
	if (r == 1)
		out->kind = UR_REMOVE;
	return 0;
}

const uop_t update_op_rename_from = {"$rename", NULL, rename_from_apply, NULL};

const uop_t update_ops_field[] = {
	{"$set", NULL, set_apply, NULL},
	{"$setOnInsert", NULL, set_on_insert_apply, NULL},
	{"$unset", NULL, unset_apply, NULL},
	{"$inc", arith_parse, arith_apply, NULL},
	{"$mul", arith_parse, arith_apply, NULL},
	{"$min", NULL, compare_apply, NULL},
	{"$max", NULL, compare_apply, NULL},
	{"$currentDate", current_date_parse, current_date_apply, NULL},
	{"$bit", bit_parse, bit_apply, bit_free},
	{"$rename", rename_parse, rename_apply, NULL},
	{NULL, NULL, NULL, NULL},
};
