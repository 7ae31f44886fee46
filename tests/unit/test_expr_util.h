/*
 * test_expr_util.h -- helpers shared by the tests/unit/test_expr*.c files:
 * parse + evaluate an expression given as JSON against a document given as
 * JSON and return the result as canonical extended JSON text ({"r": value},
 * so types are checked exactly) or "ERR <code> <message>".
 */
#ifndef TAMGA_TEST_EXPR_UTIL_H
#define TAMGA_TEST_EXPR_UTIL_H

#include "tt.h"
#include "expr/expr.h"

static char tx_buf[4096];

/* Copy a document renaming every key "__type__" to "$type" (libbson's JSON
 * parser reserves "$type" for legacy binary syntax). */
static void
tx_rename(bson_t *dst, const bson_t *src)
{
	bson_iter_t it;
	bson_iter_init(&it, src);
	while (bson_iter_next(&it)) {
		const char *k = strcmp(bson_iter_key(&it), "__type__") == 0 ? "$type" : bson_iter_key(&it);
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *data;
			uint32_t len;
			bson_t sub, child;
			bson_iter_document(&it, &len, &data);
			if (BSON_ITER_HOLDS_ARRAY(&it))
				bson_iter_array(&it, &len, &data);
			bson_init_static(&sub, data, len);
			if (BSON_ITER_HOLDS_ARRAY(&it)) {
				bson_append_array_begin(dst, k, -1, &child);
				tx_rename(&child, &sub);
				bson_append_array_end(dst, &child);
			} else {
				bson_append_document_begin(dst, k, -1, &child);
				tx_rename(&child, &sub);
				bson_append_document_end(dst, &child);
			}
		} else {
			bson_append_value(dst, k, -1, bson_iter_value(&it));
		}
	}
}

/* spec: the expression's JSON; doc: the document's JSON (or NULL) */
static const char *
tx_eval(const char *spec, const char *doc)
{
	char *wrapped = bson_strdup_printf("{\"e\": %s}", spec);
	bson_t *s0 = tt_json(wrapped);
	bson_t *s = bson_new();
	tx_rename(s, s0);
	bson_destroy(s0);
	bson_t *d = doc ? tt_json(doc) : NULL;
	bson_iter_t it;
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	expr_t *e = NULL;
	terr_t err = TERR_INIT;
	bson_value_t out;

	bson_iter_init_find(&it, s, "e");
	if (expr_parse(bson_iter_value(&it), scope, &e, &err) != 0 ||
	    (expr_env_set_root(env, d), expr_eval(e, env, &out, &err)) != 0) {
		snprintf(tx_buf, sizeof(tx_buf), "ERR %d %s", err.code, err.msg ? err.msg : "(no message)");
	} else if (out.value_type == BSON_TYPE_EOD) {
		snprintf(tx_buf, sizeof(tx_buf), "missing");
	} else if (out.value_type == BSON_TYPE_DOUBLE) {
		/* shortest round-trip digits (libbson prints 20 digits) */
		char num[40];
		double dv = out.value.v_double;
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(num, sizeof(num), "%.*g", prec, dv);
			if (strtod(num, NULL) == dv || dv != dv)
				break;
		}
		if (dv != dv)
			snprintf(num, sizeof(num), "NaN");
		else if (dv == 1.0 / 0.0 || dv == -1.0 / 0.0)
			snprintf(num, sizeof(num), "%sInfinity", dv < 0 ? "-" : "");
		else if (!strpbrk(num, ".e"))
			strcat(num, ".0");
		snprintf(tx_buf, sizeof(tx_buf), "{ \"r\" : { \"$numberDouble\" : \"%s\" } }", num);
	} else {
		bson_t r = BSON_INITIALIZER;
		bson_append_value(&r, "r", 1, &out);
		char *j = bson_as_canonical_extended_json(&r, NULL);
		snprintf(tx_buf, sizeof(tx_buf), "%s", j);
		bson_free(j);
		bson_destroy(&r);
	}
	terr_clear(&err);
	expr_destroy(e);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
	if (d)
		bson_destroy(d);
	bson_destroy(s);
	bson_free(wrapped);
	return tx_buf;
}

#define TX(spec, doc, want) TT_EQ_STR(tx_eval(spec, doc), want)
/* error: compare only "ERR <code>" prefix plus the message */
#define TXERR(spec, doc, want) TT_EQ_STR(tx_eval(spec, doc), want)



/* expected-result shorthands (canonical extended JSON of {r: value}) */
#define RI(x) "{ \"r\" : { \"$numberInt\" : \"" x "\" } }"
#define RL(x) "{ \"r\" : { \"$numberLong\" : \"" x "\" } }"
#define RD(x) "{ \"r\" : { \"$numberDouble\" : \"" x "\" } }"
#define RDEC(x) "{ \"r\" : { \"$numberDecimal\" : \"" x "\" } }"
#define RS(x) "{ \"r\" : \"" x "\" }"
#define RJ(x) "{ \"r\" : " x " }"
#define RDATE(x) "{ \"r\" : { \"$date\" : { \"$numberLong\" : \"" x "\" } } }"
#endif
