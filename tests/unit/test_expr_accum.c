/*
 * test_expr_accum.c -- accumulators: each run over a small list of
 * documents (one group), result checked exactly; merge of partial states;
 * parse errors.
 */
#include "test_expr_util.h"
#include "expr/accum.h"

static char acc_buf[4096];

/* Accumulate spec ({"$sum": ...}) over docs (a JSON array of documents);
 * split > 0 accumulates the first `split` docs in a second state and merges
 * it in front... (merged: into <- from, in document order). */
static const char *
acc_run(const char *spec, const char *docs, int split)
{
	bson_t *s = tt_json(spec);
	char *wrapped = bson_strdup_printf("{\"d\": %s}", docs);
	bson_t *d = tt_json(wrapped);
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	terr_t err = TERR_INIT;
	accum_t *a = NULL;
	accum_state_t *st = NULL, *st2 = NULL;
	bson_iter_t it, dit, arr;
	bson_value_t out;
	int i = 0;

	bson_iter_init(&it, s);
	bson_iter_next(&it);
	if (accum_parse(bson_iter_key(&it), bson_iter_value(&it), scope, &a, &err) != 0)
		goto fail;
	st = accum_state_new(a);
	st2 = accum_state_new(a);
	bson_iter_init_find(&dit, d, "d");
	bson_iter_recurse(&dit, &arr);
	while (bson_iter_next(&arr)) {
		const uint8_t *data;
		uint32_t len;
		bson_t doc;
		bson_iter_document(&arr, &len, &data);
		bson_init_static(&doc, data, len);
		expr_env_set_root(env, &doc);
		if (accum_process(a, i < split ? st2 : st, env, &err) != 0)
			goto fail;
		expr_env_reset(env);
		i++;
	}
	if (split > 0) {
		/* st2 holds the earlier documents: merge st into st2 */
		if (accum_merge(a, st2, st, &err) != 0)
			goto fail;
		accum_state_t *t = st;
		st = st2;
		st2 = t;
	}
	if (accum_finalize(a, st, env, &out, &err) != 0)
		goto fail;
	{
		bson_t r = BSON_INITIALIZER;
		bson_append_value(&r, "r", 1, &out);
		char *j = bson_as_canonical_extended_json(&r, NULL);
		snprintf(acc_buf, sizeof(acc_buf), "%s", j);
		bson_free(j);
		bson_destroy(&r);
	}
	TT_ASSERT(accum_state_mem(st) > 0);
	goto done;
fail:
	snprintf(acc_buf, sizeof(acc_buf), "ERR %d %s", err.code, err.msg ? err.msg : "");
done:
	terr_clear(&err);
	accum_state_destroy(st);
	accum_state_destroy(st2);
	accum_destroy(a);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
	bson_destroy(d);
	bson_destroy(s);
	bson_free(wrapped);
	return acc_buf;
}

#define ACC(spec, docs, want) do { TT_EQ_STR(acc_run(spec, docs, 0), want); \
	TT_EQ_STR(acc_run(spec, docs, 2), want); } while (0)
#define ACC1(spec, docs, want) TT_EQ_STR(acc_run(spec, docs, 0), want)

#define I(x) "{ \"$numberInt\" : \"" #x "\" }"

static const char *DOCS = "[{\"g\": 1, \"x\": 5, \"s\": \"b\"}, {\"g\": 1, \"x\": 2.5, \"s\": \"a\"}, "
                          "{\"g\": 2, \"s\": \"c\"}, {\"g\": 2, \"x\": 10, \"s\": \"a\"}]";

static void
test_sum_avg_count(void)
{
	ACC("{\"$sum\": \"$x\"}", DOCS, RD("17.5"));
	ACC("{\"$sum\": 1}", DOCS, RI("4"));
	ACC("{\"$sum\": \"$s\"}", DOCS, RI("0"));
	ACC("{\"$sum\": \"$g\"}", "[{\"g\": 2147483647}, {\"g\": 1}, {\"g\": 1}]", RL("2147483649"));
	/* integers sum exactly: a transient int64 overflow comes back as a long */
	ACC("{\"$sum\": \"$g\"}", "[{\"g\": {\"$numberLong\": \"9223372036854775807\"}}, {\"g\": 1}, {\"g\": -1}]",
	    RL("9223372036854775807"));
	ACC1("{\"$sum\": \"$g\"}", "[{\"g\": {\"$numberLong\": \"9223372036854775807\"}}, {\"g\": 1}]",
	     RD("9223372036854775808.0"));
	ACC("{\"$sum\": \"$g\"}", "[{\"g\": {\"$numberDecimal\": \"0.1\"}}, {\"g\": 1}, {\"g\": 2}]", RDEC("3.1"));
	ACC("{\"$avg\": \"$x\"}", DOCS, RD("5.8333333333333330373"));
	ACC("{\"$avg\": \"$g\"}", "[{\"g\": 1}, {\"g\": 2}, {}]", RD("1.5"));
	ACC("{\"$avg\": \"$nope\"}", DOCS, RJ("null"));
	ACC("{\"$avg\": \"$g\"}", "[{\"g\": {\"$numberDecimal\": \"1\"}}, {\"g\": 2}, {\"g\": 2}]",
	    RDEC("1.666666666666666666666666666666667"));
	ACC("{\"$count\": {}}", DOCS, RI("4"));
	TT_EQ_STR(acc_run("{\"$count\": 1}", DOCS, 0), "ERR 14 $count takes no arguments, i.e. $count:{}");
	TT_EQ_STR(acc_run("{\"$sum\": [1, 2]}", DOCS, 0), "ERR 40237 The $sum accumulator is a unary operator");
	TT_EQ_STR(acc_run("{\"$foo\": 1}", DOCS, 0), "ERR 15952 unknown group operator '$foo'");
}

static void
test_min_max_first_last(void)
{
	ACC("{\"$min\": \"$x\"}", DOCS, RD("2.5"));
	ACC("{\"$max\": \"$x\"}", DOCS, RI("10"));
	ACC("{\"$max\": \"$s\"}", DOCS, RJ("\"c\""));
	ACC("{\"$min\": \"$nope\"}", DOCS, RJ("null"));
	ACC("{\"$first\": \"$x\"}", DOCS, RI("5"));
	ACC("{\"$last\": \"$x\"}", DOCS, RI("10"));
	ACC("{\"$last\": \"$x\"}", "[{\"x\": 1}, {}]", RJ("null"));
	ACC("{\"$first\": \"$x\"}", "[{}, {\"x\": 1}]", RJ("null"));
}

static void
test_push_set_merge(void)
{
	ACC("{\"$push\": \"$x\"}", DOCS, RJ("[ " I(5) ", { \"$numberDouble\" : \"2.5\" }, " I(10) " ]"));
	ACC("{\"$addToSet\": \"$s\"}", DOCS, RJ("[ \"b\", \"a\", \"c\" ]"));
	ACC("{\"$push\": {\"a\": \"$s\"}}", "[{\"s\": 1}, {}]", RJ("[ { \"a\" : " I(1) " }, {  } ]"));
	ACC("{\"$mergeObjects\": \"$o\"}", "[{\"o\": {\"a\": 1, \"b\": 1}}, {\"o\": null}, {\"o\": {\"b\": 2, \"c\": 3}}]",
	    RJ("{ \"a\" : " I(1) ", \"b\" : " I(2) ", \"c\" : " I(3) " }"));
	ACC("{\"$mergeObjects\": \"$o\"}", "[{}, {}]", RJ("{  }"));
	TT_EQ_STR(acc_run("{\"$mergeObjects\": \"$o\"}", "[{\"o\": 1}]", 0),
	          "ERR 40400 $mergeObjects requires object inputs, but input 1 is of type int");
}

static void
test_stddev(void)
{
	const char *d = "[{\"x\": 2}, {\"x\": 4}, {\"x\": 4}, {\"x\": 4}, {\"x\": 5}, {\"x\": 5}, {\"x\": 7}, {\"x\": 9}]";
	ACC("{\"$stdDevPop\": \"$x\"}", d, RD("2.0"));
	ACC("{\"$stdDevSamp\": \"$x\"}", "[{\"x\": 1}, {\"x\": 3}]", RD("1.4142135623730951455"));
	ACC("{\"$stdDevSamp\": \"$x\"}", "[{\"x\": 1}]", RJ("null"));
}

static void
test_n_variants(void)
{
	const char *d = "[{\"x\": 3, \"k\": \"c\"}, {\"x\": 1, \"k\": \"a\"}, {\"x\": null, \"k\": \"n\"}, "
	                "{\"x\": 7, \"k\": \"g\"}, {\"x\": 5, \"k\": \"e\"}]";
	ACC("{\"$firstN\": {\"input\": \"$x\", \"n\": 2}}", d, RJ("[ " I(3) ", " I(1) " ]"));
	ACC("{\"$lastN\": {\"input\": \"$x\", \"n\": 2}}", d, RJ("[ " I(7) ", " I(5) " ]"));
	ACC("{\"$maxN\": {\"input\": \"$x\", \"n\": 3}}", d, RJ("[ " I(7) ", " I(5) ", " I(3) " ]"));
	ACC("{\"$minN\": {\"input\": \"$x\", \"n\": 2}}", d, RJ("[ " I(1) ", " I(3) " ]"));
	ACC("{\"$topN\": {\"output\": \"$k\", \"sortBy\": {\"x\": -1}, \"n\": 2}}", d, RJ("[ \"g\", \"e\" ]"));
	ACC("{\"$bottomN\": {\"output\": \"$k\", \"sortBy\": {\"x\": -1}, \"n\": 2}}", d, RJ("[ \"a\", \"n\" ]"));
	ACC("{\"$top\": {\"output\": [\"$k\", \"$x\"], \"sortBy\": {\"x\": 1}}}", d, RJ("[ \"n\", null ]"));
	ACC("{\"$bottom\": {\"output\": \"$k\", \"sortBy\": {\"x\": 1}}}", d, RJ("\"g\""));
	TT_EQ_STR(acc_run("{\"$firstN\": {\"input\": \"$x\", \"n\": 0}}", d, 0),
	          "ERR 5787908 'n' must be greater than 0, found 0");
	TT_EQ_STR(acc_run("{\"$firstN\": {\"input\": \"$x\", \"n\": 1.5}}", d, 0),
	          "ERR 5787902 Value for 'n' must be of integral type, but found 1.5");
	TT_EQ_STR(acc_run("{\"$firstN\": {\"input\": \"$x\"}}", d, 0), "ERR 5787906 Missing value for 'n'");
	TT_EQ_STR(acc_run("{\"$topN\": {\"output\": \"$x\", \"n\": 1}}", d, 0), "ERR 5788005 Missing value for 'sortBy'");
	TT_EQ_STR(acc_run("{\"$topN\": {\"output\": \"$x\", \"sortBy\": {\"x\": 1}}}", d, 0),
	          "ERR 5788003 Missing value for 'n'");
	TT_EQ_STR(acc_run("{\"$firstN\": {\"n\": 1}}", d, 0), "ERR 5787907 Missing value for 'input'");
	TT_EQ_STR(acc_run("{\"$firstN\": {\"n\": 1, \"input\": 1, \"z\": 1}}", d, 0),
	          "ERR 5787901 Unknown argument for 'n' operator: z");
}

/* accum_kept_seq / accum_kept_latest: which folds an array accumulator
 * keeps, in result order (a $group carries each kept document's slots by
 * them).  spec over the values 0..n-1 of "$v"; want: the kept ordinals
 * as "s0,s1,...", and latest: whether the last fold was kept. */
static void
kept_check(const char *spec, int n, const char *want, bool latest)
{
	bson_t *s = tt_json(spec);
	expr_scope_t *scope = expr_scope_new();
	expr_env_t *env = expr_env_new();
	terr_t err = TERR_INIT;
	accum_t *a = NULL;
	accum_state_t *st;
	bson_iter_t it;
	char got[256] = "";
	size_t off = 0;

	bson_iter_init(&it, s);
	bson_iter_next(&it);
	TT_ASSERT(accum_parse(bson_iter_key(&it), bson_iter_value(&it), scope, &a, &err) == 0);
	st = accum_state_new(a);
	for (int i = 0; i < n; i++) {
		bson_t doc = BSON_INITIALIZER;
		BSON_APPEND_INT32(&doc, "v", (i * 7) % n);
		expr_env_set_root(env, &doc);
		TT_ASSERT(accum_process(a, st, env, &err) == 0);
		expr_env_reset(env);
		bson_destroy(&doc);
	}
	TT_ASSERT(accum_folded(st) == (uint64_t)n);
	for (int64_t j = 0; j < accum_kept_count(a, st); j++)
		off += (size_t)snprintf(got + off, sizeof got - off, "%s%lld", j ? "," : "",
		                        (long long)accum_kept_seq(a, st, j));
	TT_EQ_STR(got, want);
	TT_ASSERT(accum_kept_seq(a, st, accum_kept_count(a, st)) == -1);
	TT_ASSERT(accum_kept_latest(a, st) == latest);
	accum_state_destroy(st);
	accum_destroy(a);
	expr_env_destroy(env);
	expr_scope_destroy(scope);
	bson_destroy(s);
}

static void
test_kept_seqs(void)
{
	/* v over 5 folds: 0 2 4 1 3 (i*7 % 5), 10 folds: 0 7 4 1 8 5 2 9 6 3 */
	kept_check("{\"$push\": \"$v\"}", 5, "0,1,2,3,4", true);
	kept_check("{\"$addToSet\": {\"$mod\": [\"$v\", 2]}}", 5, "0,3", false);
	kept_check("{\"$firstN\": {\"n\": 2, \"input\": \"$v\"}}", 5, "0,1", false);
	kept_check("{\"$lastN\": {\"n\": 2, \"input\": \"$v\"}}", 5, "3,4", true);
	kept_check("{\"$topN\": {\"n\": 2, \"output\": \"$v\", \"sortBy\": {\"v\": 1}}}", 10, "0,3", false);
	kept_check("{\"$bottomN\": {\"n\": 3, \"output\": \"$v\", \"sortBy\": {\"v\": 1}}}", 10, "1,4,7", false);
	kept_check("{\"$maxN\": {\"n\": 2, \"input\": \"$v\"}}", 5, "2,4", true);
	kept_check("{\"$topN\": {\"n\": 2, \"output\": \"$v\", \"sortBy\": {\"v\": 1}}}", 4, "0,3", true);
	/* not an array accumulator */
	bson_t *s = tt_json("{\"$first\": \"$v\"}");
	expr_scope_t *scope = expr_scope_new();
	terr_t err = TERR_INIT;
	accum_t *a = NULL;
	bson_iter_t it;
	bson_iter_init(&it, s);
	bson_iter_next(&it);
	TT_ASSERT(accum_parse(bson_iter_key(&it), bson_iter_value(&it), scope, &a, &err) == 0);
	accum_state_t *st = accum_state_new(a);
	TT_ASSERT(accum_kept_count(a, st) == -1);
	TT_ASSERT(accum_kept_seq(a, st, 0) == -1);
	TT_ASSERT(!accum_kept_latest(a, st));
	accum_state_destroy(st);
	accum_destroy(a);
	expr_scope_destroy(scope);
	bson_destroy(s);
}

static void
test_percentile(void)
{
	const char *d = "[{\"x\": 10}, {\"x\": 20}, {\"x\": 30}, {\"x\": 40}, {\"x\": \"s\"}]";
	ACC("{\"$median\": {\"input\": \"$x\", \"method\": \"approximate\"}}", d, RD("20.0"));
	ACC("{\"$percentile\": {\"input\": \"$x\", \"p\": [0.25, 1], \"method\": \"approximate\"}}", d,
	    RJ("[ { \"$numberDouble\" : \"10.0\" }, { \"$numberDouble\" : \"40.0\" } ]"));
	ACC("{\"$median\": {\"input\": \"$x\", \"method\": \"continuous\"}}", d, RD("25.0"));
	ACC("{\"$median\": {\"input\": \"$nope\", \"method\": \"approximate\"}}", d, RJ("null"));
	TT_EQ_STR(acc_run("{\"$median\": {\"input\": \"$x\"}}", d, 0),
	          "ERR 40414 BSON field '$median.method' is missing but a required field");
}

static void
test_as_expressions(void)
{
	TX("{\"$sum\": [1, 2, 3]}", NULL, RI("6"));
	TX("{\"$sum\": \"$xs\"}", "{\"xs\": [1, 2.5, \"a\"]}", RD("3.5"));
	TX("{\"$sum\": [\"$xs\", 1]}", "{\"xs\": [1, 2]}", RI("1"));
	TX("{\"$sum\": \"$nope\"}", "{}", RI("0"));
	TX("{\"$avg\": \"$xs\"}", "{\"xs\": [1, 2]}", RD("1.5"));
	TX("{\"$avg\": []}", NULL, RJ("null"));
	TX("{\"$max\": [1, \"a\", null]}", NULL, RS("a"));
	TX("{\"$min\": \"$xs\"}", "{\"xs\": [3, 1, 2]}", RI("1"));
	TX("{\"$stdDevPop\": [1, 3]}", NULL, RD("1.0"));
	TX("{\"$median\": {\"input\": \"$xs\", \"method\": \"approximate\"}}", "{\"xs\": [5, 1, 3]}", RD("3.0"));
	TX("{\"$percentile\": {\"input\": [1, 2, 3, 4], \"p\": [0.5], \"method\": \"approximate\"}}", NULL,
	   RJ("[ { \"$numberDouble\" : \"2.0\" } ]"));
	TX("{\"$maxN\": {\"input\": [3, null, 7, 5], \"n\": 2}}", NULL, RJ("[ " I(7) ", " I(5) " ]"));
	TX("{\"$minN\": {\"input\": [3, null, 7, 5], \"n\": 5}}", NULL, RJ("[ " I(3) ", " I(5) ", " I(7) " ]"));
	TX("{\"$firstN\": {\"input\": [3, null, 7], \"n\": 2}}", NULL, RJ("[ " I(3) ", null ]"));
	TX("{\"$lastN\": {\"input\": \"$xs\", \"n\": 2}}", "{\"xs\": [1, 2, 3]}", RJ("[ " I(2) ", " I(3) " ]"));
	TX("{\"$lastN\": {\"input\": null, \"n\": 2}}", NULL, RJ("null"));
	TXERR("{\"$lastN\": {\"input\": 5, \"n\": 2}}", NULL, "ERR 5788200 Input must be an array");
	TXERR("{\"$lastN\": {\"input\": [5], \"n\": 0}}", NULL, "ERR 5787908 'n' must be greater than 0, found 0");
}

int
main(void)
{
	TT_RUN(test_as_expressions);
	TT_RUN(test_sum_avg_count);
	TT_RUN(test_min_max_first_last);
	TT_RUN(test_push_set_merge);
	TT_RUN(test_stddev);
	TT_RUN(test_n_variants);
	TT_RUN(test_kept_seqs);
	TT_RUN(test_percentile);
	return tt_finish();
}
