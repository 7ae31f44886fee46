/*
 * test_planner.c -- index bounds as the planner builds them, on collection
 * descriptors made up in memory (no storage): equality, $in, ranges with
 * type brackets, descending fields, compound prefixes, $elemMatch on a
 * multikey compound index, multikey refusals, sparse/partial/hidden,
 * hint and sort.
 */
#include "tt.h"

#include "bson/collation.h"
#include "common/mem.h"
#include "query/keygen.h"
#include "query/planner.h"

static storage_coll_t coll;
static storage_index_t idx[8];

static void
add_index(const char *spec_json, bool multikey)
{
	int i = coll.nindexes++;
	bson_iter_t it;
	const uint8_t *d;
	uint32_t l;
	bson_t key;

	idx[i].spec = tt_json(spec_json);
	bson_iter_init_find(&it, idx[i].spec, "key");
	bson_iter_document(&it, &l, &d);
	bson_init_static(&key, d, l);
	idx[i].key = bson_copy(&key);
	bson_iter_init_find(&it, idx[i].spec, "name");
	idx[i].name = bson_strdup(bson_iter_utf8(&it, NULL));
	idx[i].multikey = multikey;
	idx[i].unique = bson_iter_init_find(&it, idx[i].spec, "unique") && bson_iter_as_bool(&it);
	idx[i].is_id = strcmp(idx[i].name, "_id_") == 0;
	/* what the catalog parses from a spec (storage/catalog.c) */
	idx[i].sparse = bson_iter_init_find(&it, idx[i].spec, "sparse") && bson_iter_as_bool(&it);
	idx[i].partial = bson_has_field(idx[i].spec, "partialFilterExpression");
	idx[i].hidden = bson_iter_init_find(&it, idx[i].spec, "hidden") && bson_iter_as_bool(&it);
	idx[i].wildcard = keygen_is_wildcard(&idx[i]);
	idx[i].nfields = (int)bson_count_keys(idx[i].key);
}

static void
reset(void)
{
	int i;

	for (i = 0; i < coll.nindexes; i++) {
		bson_destroy(idx[i].spec);
		bson_destroy(idx[i].key);
		bson_free(idx[i].name);
	}
	memset(idx, 0, sizeof(idx));
	memset(&coll, 0, sizeof(coll));
	coll.ns = (char *)"test.c";
	coll.indexes = idx;
	add_index("{\"v\": 2, \"key\": {\"_id\": 1}, \"name\": \"_id_\"}", false);
}

/* The index filter plan() plans under (PLANNER_ALL_INDEXES: none). */
static uint64_t plan_allowed = PLANNER_ALL_INDEXES;

/* Plan filter; return "index|field:[iv,iv] field:[..]|sort" or "COLLSCAN". */
static char *
plan(const char *filter, const char *sort_json, const char *hint_json)
{
	bson_t *f = tt_json(filter), *so = sort_json ? tt_json(sort_json) : NULL, *h = NULL;
	bson_iter_t hit;
	match_t *m = NULL;
	planner_solution_t *s = NULL;
	terr_t err = TERR_INIT;
	bson_string_t *out = bson_string_new("");
	int i, j;

	if (match_compile(f, NULL, &m, &err) != 0)
		abort();
	if (hint_json != NULL) {
		char *w = bson_strdup_printf("{\"h\": %s}", hint_json);
		h = tt_json(w);
		bson_free(w);
		bson_iter_init_find(&hit, h, "h");
	}
	if (planner_plan_filtered(&coll, m, so, h ? bson_iter_value(&hit) : NULL, NULL, plan_allowed, &s, &err) != 0) {
		bson_string_append_printf(out, "ERR %d", err.code);
	} else if (s->kind == PLANNER_COLLSCAN) {
		bson_string_append(out, "COLLSCAN");
	} else if (s->kind == PLANNER_OR) {
		bson_string_append_printf(out, "OR %d", s->nbranches);
	} else {
		bson_string_append(out, coll.indexes[s->index].name);
		for (i = 0; i < s->nfields; i++) {
			bson_string_append_printf(out, "|%s:", s->fields[i].path);
			for (j = 0; j < s->fields[i].n; j++) {
				char *iv = planner_interval_string(&s->fields[i].iv[j]);
				bson_string_append_printf(out, "%s%s", j ? "," : "", iv);
				bson_free(iv);
			}
		}
		if (s->provides_sort)
			bson_string_append(out, s->backward ? "|sorted backward" : "|sorted");
		if (s->exact)
			bson_string_append(out, "|exact");
	}
	planner_solution_free(s);
	match_free(m);
	terr_clear(&err);
	bson_destroy(f);
	if (so)
		bson_destroy(so);
	if (h)
		bson_destroy(h);
	return bson_string_free(out, false);
}

#define PLAN_EQ(filter, sort, hint, want) do { char *got_ = plan(filter, sort, hint); \
	TT_EQ_STR(got_, want); bson_free(got_); } while (0)

static void
test_points_and_ranges(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}", false);
	PLAN_EQ("{\"a\": 5}", NULL, NULL, "a_1|a:[5, 5]|exact");
	PLAN_EQ("{\"a\": {\"$in\": [3, 1, 3.0]}}", NULL, NULL, "a_1|a:[1, 1],[3, 3]|exact");
	PLAN_EQ("{\"a\": {\"$gt\": 5, \"$lt\": 10}}", NULL, NULL, "a_1|a:(5, 10)|exact");
	PLAN_EQ("{\"a\": {\"$gte\": 5}}", NULL, NULL, "a_1|a:[5, inf.0]|exact");
	PLAN_EQ("{\"a\": {\"$lt\": 5}}", NULL, NULL, "a_1|a:[-inf.0, 5)|exact");
	PLAN_EQ("{\"a\": {\"$gt\": \"m\"}}", NULL, NULL, "a_1|a:(\"m\", {})|exact");
	PLAN_EQ("{\"a\": {\"$gt\": 5, \"$lt\": 1}}", NULL, NULL, "a_1|a:|exact");
	/* mixed types intersect to nothing */
	PLAN_EQ("{\"a\": {\"$gt\": 5, \"$lt\": \"z\"}}", NULL, NULL, "a_1|a:|exact");
	/* null: the null and undefined keys (a missing field, an empty
	 * array), never exact; $ne and $nin: the complement, exact on a
	 * path that never held an array; $exists: every key or the null one */
	PLAN_EQ("{\"a\": null}", NULL, NULL, "a_1|a:[undefined, undefined],[null, null]");
	PLAN_EQ("{\"a\": {\"$in\": [2, null]}}", NULL, NULL, "a_1|a:[undefined, undefined],[null, null],[2, 2]");
	PLAN_EQ("{\"a\": {\"$ne\": 1}}", NULL, NULL, "a_1|a:[MinKey, 1),(1, MaxKey]|exact");
	PLAN_EQ("{\"a\": {\"$nin\": [5, 1, \"x\"]}}", NULL, NULL,
	    "a_1|a:[MinKey, 1),(1, 5),(5, \"x\"),(\"x\", MaxKey]|exact");
	PLAN_EQ("{\"a\": {\"$ne\": null}}", NULL, NULL, "COLLSCAN");
	/* $not of a range: its complement (other types, NaN and missing
	 * included), as mongod's NOT bounds; exact where no array was met */
	PLAN_EQ("{\"a\": {\"$not\": {\"$gte\": 40}}}", NULL, NULL, "a_1|a:[MinKey, 40),(inf.0, MaxKey]|exact");
	PLAN_EQ("{\"a\": {\"$not\": {\"$lt\": 40}}}", NULL, NULL, "a_1|a:[MinKey, -inf.0),[40, MaxKey]|exact");
	PLAN_EQ("{\"a\": {\"$not\": {\"$gt\": \"m\"}}}", NULL, NULL, "a_1|a:[MinKey, \"m\"],[{}, MaxKey]|exact");
	PLAN_EQ("{\"a\": {\"$not\": {\"$lte\": 5}}, \"$and\": [{\"a\": {\"$lt\": 9}}]}", NULL, NULL, "a_1|a:(5, 9)|exact");
	PLAN_EQ("{\"a\": {\"$not\": {\"$gt\": {\"$numberDouble\": \"NaN\"}}}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"a\": {\"$not\": {\"$exists\": true, \"$gt\": 1}}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"a\": {\"$exists\": true}}", NULL, NULL, "a_1|a:[MinKey, MaxKey]");
	PLAN_EQ("{\"a\": {\"$exists\": false}}", NULL, NULL, "a_1|a:[null, null]");
	/* $mod: every number, NaN first; the keys or documents decide */
	PLAN_EQ("{\"a\": {\"$mod\": [4, 1]}}", NULL, NULL, "a_1|a:[nan.0, inf.0]");
	PLAN_EQ("{\"a\": {\"$mod\": [2, 0], \"$lt\": 10}}", NULL, NULL, "a_1|a:[-inf.0, 10)");
	/* several predicates on one field: their intervals intersected */
	PLAN_EQ("{\"a\": {\"$ne\": 3, \"$gt\": 1}}", NULL, NULL, "a_1|a:(1, 3),(3, inf.0]|exact");
	PLAN_EQ("{\"a\": {\"$in\": [1, 4, 7]}, \"$and\": [{\"a\": {\"$gt\": 2}}]}", NULL, NULL, "a_1|a:[4, 4],[7, 7]|exact");
	PLAN_EQ("{\"a\": {\"$nin\": [2, 4], \"$gte\": 1, \"$lte\": 5}}", NULL, NULL, "a_1|a:[1, 2),(2, 4),(4, 5]|exact");
	PLAN_EQ("{\"a\": {\"$exists\": true, \"$lt\": 3}}", NULL, NULL, "a_1|a:[-inf.0, 3)");
	PLAN_EQ("{\"a\": 5, \"$and\": [{\"a\": {\"$lt\": 3}}]}", NULL, NULL, "a_1|a:|exact");
	/* an array A: mongod's translateEquality bounds, [A, A] and the first
	 * element (undefined for [], an empty array's key), fetched; no
	 * bounds from a negated array (Indexability) */
	PLAN_EQ("{\"a\": [1, 2]}", NULL, NULL, "a_1|a:[1, 1],[[ 1, 2 ], [ 1, 2 ]]");
	PLAN_EQ("{\"a\": []}", NULL, NULL, "a_1|a:[undefined, undefined],[[], []]");
	PLAN_EQ("{\"a\": {\"$in\": [[], null, 3]}}", NULL, NULL,
	    "a_1|a:[undefined, undefined],[null, null],[3, 3],[[], []]");
	PLAN_EQ("{\"a\": {\"$ne\": [1]}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"a\": {\"$nin\": [[]]}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"b\": 1}", NULL, NULL, "COLLSCAN");
	/* _id ranges use the _id index */
	PLAN_EQ("{\"_id\": {\"$gte\": 3}}", NULL, NULL, "_id_|_id:[3, inf.0]|exact");
}

/* $regex bounds, as mongod's simple-regex rule builds them: the strings
 * with the literal prefix of an anchored regex (exact when the regex is
 * nothing more), or every string; then the regex value itself. */
static void
test_regex(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}", false);
	PLAN_EQ("{\"a\": {\"$regex\": \"^abc\"}}", NULL, NULL, "a_1|a:[\"abc\", \"abd\"),[/^abc/, /^abc/]|exact");
	PLAN_EQ("{\"a\": {\"$regex\": \"abc\"}}", NULL, NULL, "a_1|a:[\"\", {}),[/abc/, /abc/]");
	PLAN_EQ("{\"a\": {\"$regex\": \"^abc\", \"$options\": \"i\"}}", NULL, NULL,
	    "a_1|a:[\"\", {}),[/^abc/i, /^abc/i]");
	PLAN_EQ("{\"a\": {\"$regex\": \"^ab.d\"}}", NULL, NULL, "a_1|a:[\"ab\", \"ac\"),[/^ab.d/, /^ab.d/]");
	/* a quantifier makes the character before it optional */
	PLAN_EQ("{\"a\": {\"$regex\": \"^abc?\"}}", NULL, NULL, "a_1|a:[\"ab\", \"ac\"),[/^abc?/, /^abc?/]");
	/* so does {n,m}, which may be {0} (mongod keeps the character there) */
	PLAN_EQ("{\"a\": {\"$regex\": \"^ab{0}c\"}}", NULL, NULL, "a_1|a:[\"a\", \"b\"),[/^ab{0}c/, /^ab{0}c/]");
	PLAN_EQ("{\"a\": {\"$regex\": \"^a|b\"}}", NULL, NULL, "a_1|a:[\"\", {}),[/^a|b/, /^a|b/]");
	PLAN_EQ("{\"a\": {\"$regex\": \"^\\\\Qa.b\\\\E\"}}", NULL, NULL,
	    "a_1|a:[\"a.b\", \"a.c\"),[/^\\Qa.b\\E/, /^\\Qa.b\\E/]|exact");
	PLAN_EQ("{\"a\": {\"$regex\": \"^a\\\\.b\"}}", NULL, NULL, "a_1|a:[\"a.b\", \"a.c\"),[/^a\\.b/, /^a\\.b/]|exact");
	PLAN_EQ("{\"a\": {\"$regex\": \"^a\\\\d\"}}", NULL, NULL, "a_1|a:[\"a\", \"b\"),[/^a\\d/, /^a\\d/]");
	/* multiline: ^ may match after any newline, \A only at the start */
	PLAN_EQ("{\"a\": {\"$regex\": \"^abc\", \"$options\": \"m\"}}", NULL, NULL,
	    "a_1|a:[\"\", {}),[/^abc/m, /^abc/m]");
	PLAN_EQ("{\"a\": {\"$regex\": \"\\\\Aabc\", \"$options\": \"m\"}}", NULL, NULL,
	    "a_1|a:[\"abc\", \"abd\"),[/\\Aabc/m, /\\Aabc/m]|exact");
	/* extended mode skips blanks */
	PLAN_EQ("{\"a\": {\"$regex\": \"^a b\", \"$options\": \"x\"}}", NULL, NULL,
	    "a_1|a:[\"ab\", \"ac\"),[/^a b/x, /^a b/x]|exact");
	/* a $in listing regexes: its points and the regexes' intervals, united */
	PLAN_EQ("{\"a\": {\"$in\": [{\"$regex\": \"^ab\"}, 5]}}", NULL, NULL,
	    "a_1|a:[5, 5],[\"ab\", \"ac\"),[/^ab/, /^ab/]|exact");
	PLAN_EQ("{\"a\": {\"$in\": [{\"$regex\": \"^ab\"}, \"abc\"]}}", NULL, NULL,
	    "a_1|a:[\"ab\", \"ac\"),[/^ab/, /^ab/]|exact");
	PLAN_EQ("{\"a\": {\"$in\": [{\"$regex\": \"b\"}, \"x\"]}}", NULL, NULL, "a_1|a:[\"\", {}),[/b/, /b/]");
	PLAN_EQ("{\"a\": {\"$in\": [{\"$regex\": \"^a\"}, {\"$regex\": \"^b\"}]}}", NULL, NULL,
	    "a_1|a:[\"a\", \"c\"),[/^a/, /^a/],[/^b/, /^b/]|exact");
	/* with an equality or a range on the same field: intersected */
	PLAN_EQ("{\"a\": \"abz\", \"$and\": [{\"a\": {\"$regex\": \"^ab\"}}]}", NULL, NULL,
	    "a_1|a:[\"abz\", \"abz\"]|exact");
	PLAN_EQ("{\"a\": {\"$gt\": \"b\", \"$regex\": \"^bc\"}}", NULL, NULL, "a_1|a:[\"bc\", \"bd\")|exact");
	/* a sparse index serves it: a regex never matches a missing field */
	add_index("{\"v\": 2, \"key\": {\"b\": 1}, \"name\": \"b_1\", \"sparse\": true}", false);
	PLAN_EQ("{\"b\": {\"$regex\": \"^abc\"}}", NULL, NULL, "b_1|b:[\"abc\", \"abd\"),[/^abc/, /^abc/]|exact");
	/* a collated index holds sort keys, not strings: every string, never
	 * exact (the regex ignores the collation, so the index still serves) */
	add_index("{\"v\": 2, \"key\": {\"c\": 1}, \"name\": \"c_1\", "
	    "\"collation\": {\"locale\": \"fr\", \"strength\": 2}}", false);
	{
		bson_iter_t it;
		terr_t e = TERR_INIT;
		TT_ASSERT(bson_iter_init_find(&it, idx[coll.nindexes - 1].spec, "collation"));
		TT_EQ_INT(coll_parse_value(bson_iter_value(&it), "collation", &idx[coll.nindexes - 1].collation, &e), 0);
	}
	PLAN_EQ("{\"c\": {\"$regex\": \"^abc\"}}", NULL, NULL, "c_1|c:[\"\", {}),[/^abc/, /^abc/]");
}

static void
test_multikey_and_compound(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}", true);
	/* one range only on a multikey path */
	PLAN_EQ("{\"a\": {\"$gt\": 5, \"$lt\": 10}}", NULL, NULL, "a_1|a:(5, inf.0]");
	/* ... unless one $elemMatch ties them to one element */
	PLAN_EQ("{\"a\": {\"$elemMatch\": {\"$gt\": 5, \"$lt\": 10}}}", NULL, NULL, "a_1|a:(5, 10)");
	/* no sort from a multikey index */
	PLAN_EQ("{}", "{\"a\": 1}", NULL, "COLLSCAN");
	reset();
	add_index("{\"v\": 2, \"key\": {\"attributes.k\": 1, \"attributes.v\": 1}, \"name\": \"kv\"}", true);
	PLAN_EQ("{\"attributes\": {\"$elemMatch\": {\"k\": \"narrator\", \"v\": \"Grace Hopper\"}}}", NULL, NULL,
	    "kv|attributes.k:[\"narrator\", \"narrator\"]|attributes.v:[\"Grace Hopper\", \"Grace Hopper\"]");
	/* outside $elemMatch the second field stays open */
	PLAN_EQ("{\"attributes.k\": \"narrator\", \"attributes.v\": \"Grace Hopper\"}", NULL, NULL,
	    "kv|attributes.k:[\"narrator\", \"narrator\"]|attributes.v:[MinKey, MaxKey]");
	reset();
	add_index("{\"v\": 2, \"key\": {\"a\": 1, \"b\": -1}, \"name\": \"a_1_b_-1\"}", false);
	PLAN_EQ("{\"a\": 1, \"b\": {\"$gt\": 5}}", NULL, NULL, "a_1_b_-1|a:[1, 1]|b:[inf.0, 5)|exact");
	PLAN_EQ("{\"b\": 3}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"a\": {\"$in\": [1, 2]}, \"b\": 3}", NULL, NULL, "a_1_b_-1|a:[1, 1],[2, 2]|b:[3, 3]|exact");
	/* a range on the first field: the second is checked on the keys */
	PLAN_EQ("{\"a\": {\"$gt\": 1}, \"b\": 3}", NULL, NULL, "a_1_b_-1|a:(1, inf.0]|b:[3, 3]|exact");
	/* sort after an equality prefix, either direction */
	PLAN_EQ("{\"a\": 1}", "{\"b\": -1}", NULL, "a_1_b_-1|a:[1, 1]|b:[MaxKey, MinKey]|sorted|exact");
	PLAN_EQ("{\"a\": 1}", "{\"b\": 1}", NULL, "a_1_b_-1|a:[1, 1]|b:[MaxKey, MinKey]|sorted backward|exact");
	PLAN_EQ("{}", "{\"a\": -1, \"b\": 1}", NULL, "a_1_b_-1|a:[MinKey, MaxKey]|b:[MaxKey, MinKey]|sorted backward");
	PLAN_EQ("{}", "{\"a\": 1, \"b\": 1}", NULL, "COLLSCAN");
}

/* ESR: with an equality prefix, the index that gives the sort wins over
 * the one that bounds the range (mongod's trial runs punish the blocking
 * sort); without a sort the bounded range wins. */
static void
test_esr_choice(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"s\": 1, \"q\": 1}, \"name\": \"s_q\"}", false);
	add_index("{\"v\": 2, \"key\": {\"s\": 1, \"d\": 1, \"q\": 1}, \"name\": \"s_d_q\"}", false);
	PLAN_EQ("{\"s\": \"A\", \"q\": {\"$gt\": 5}}", "{\"d\": 1}", NULL,
	    "s_d_q|s:[\"A\", \"A\"]|d:[MinKey, MaxKey]|q:(5, inf.0]|sorted|exact");
	PLAN_EQ("{\"s\": \"A\", \"q\": {\"$gt\": 5}}", NULL, NULL, "s_q|s:[\"A\", \"A\"]|q:(5, inf.0]|exact");
	reset();
}

/* A hinted 2dsphere / 2d / text index no predicate bounds: the whole index
 * (every key-pattern field [MinKey, MaxKey], never exact, no sort), as
 * mongod's buildWholeIXSoln; unhinted they are never candidates here. */
static void
test_hint_special_whole(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"loc\": \"2dsphere\", \"a\": 1}, \"name\": \"loc_2dsphere_a_1\"}", false);
	add_index("{\"v\": 2, \"key\": {\"p\": \"2d\"}, \"name\": \"p_2d\"}", false);
	add_index("{\"v\": 2, \"key\": {\"_fts\": \"text\", \"_ftsx\": 1}, \"name\": \"t_text\"}", false);
	PLAN_EQ("{\"a\": 1}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"a\": 1}", NULL, "\"loc_2dsphere_a_1\"", "loc_2dsphere_a_1|loc:[MinKey, MaxKey]|a:[MinKey, MaxKey]");
	PLAN_EQ("{}", "{\"p\": 1}", "\"p_2d\"", "p_2d|p:[MinKey, MaxKey]");
	PLAN_EQ("{\"_fts\": \"x\"}", NULL, "{\"_fts\": \"text\", \"_ftsx\": 1}", "t_text|_fts:[MinKey, MaxKey]|_ftsx:[MinKey, MaxKey]");
	reset();
}

static void
test_sparse_partial_hidden_hint(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"s\": 1}, \"name\": \"s_1\", \"sparse\": true}", false);
	add_index("{\"v\": 2, \"key\": {\"p\": 1}, \"name\": \"p_1\", \"partialFilterExpression\": {\"p\": {\"$gt\": 5}}}", false);
	add_index("{\"v\": 2, \"key\": {\"h\": 1}, \"name\": \"h_1\", \"hidden\": true}", false);
	PLAN_EQ("{\"s\": 1}", NULL, NULL, "s_1|s:[1, 1]|exact");
	PLAN_EQ("{}", "{\"s\": 1}", NULL, "COLLSCAN");
	PLAN_EQ("{\"p\": 7}", NULL, NULL, "p_1|p:[7, 7]|exact");
	PLAN_EQ("{\"p\": {\"$gte\": 6}}", NULL, NULL, "p_1|p:[6, inf.0]|exact");
	PLAN_EQ("{\"p\": {\"$gte\": 5}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"p\": 3}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"h\": 1}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"h\": 1}", NULL, "\"h_1\"", "ERR 2");
	PLAN_EQ("{\"h\": 1}", NULL, "\"nope\"", "ERR 2");
	PLAN_EQ("{\"h\": 1}", NULL, "{\"s\": 1}", "s_1|s:[MinKey, MaxKey]");
	PLAN_EQ("{\"s\": 1}", NULL, "{\"$natural\": 1}", "COLLSCAN");
	PLAN_EQ("{\"$or\": [{\"s\": 1}, {\"p\": 9}]}", NULL, NULL, "OR 2");
	PLAN_EQ("{\"$or\": [{\"s\": 1}, {\"q\": 9}]}", NULL, NULL, "COLLSCAN");
	/* a sparse index lacks the documents without the field: never for
	 * what matches them; exact for $exists: true when it has one field */
	PLAN_EQ("{\"s\": null}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"s\": {\"$in\": [1, null]}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"s\": {\"$ne\": 1}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"s\": {\"$not\": {\"$gt\": 1}}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"s\": {\"$exists\": false}}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"s\": {\"$exists\": true}}", NULL, NULL, "s_1|s:[MinKey, MaxKey]|exact");
	/* a partial filter {$exists: true} is implied by what a missing field fails */
	add_index("{\"v\": 2, \"key\": {\"e\": 1}, \"name\": \"e_1\", "
	    "\"partialFilterExpression\": {\"e\": {\"$exists\": true}}}", false);
	PLAN_EQ("{\"e\": \"x\"}", NULL, NULL, "e_1|e:[\"x\", \"x\"]|exact");
	PLAN_EQ("{\"e\": {\"$gt\": 2}}", NULL, NULL, "e_1|e:(2, inf.0]|exact");
	PLAN_EQ("{\"e\": {\"$exists\": 1}}", NULL, NULL, "e_1|e:[MinKey, MaxKey]");
	PLAN_EQ("{\"e\": null}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"e\": {\"$ne\": 2}}", NULL, NULL, "COLLSCAN");
	reset();
}

/* An index filter (planCacheSetFilter): only the listed indexes are
 * candidates, and among them the usual choice is made, $or branches too. */
static void
test_index_filter(void)
{
	reset();
	add_index("{\"v\": 2, \"key\": {\"a\": 1}, \"name\": \"a_1\"}", false);   /* 1 */
	add_index("{\"v\": 2, \"key\": {\"b\": 1}, \"name\": \"b_1\"}", false);   /* 2 */
	add_index("{\"v\": 2, \"key\": {\"a\": 1, \"b\": 1}, \"name\": \"a_1_b_1\"}", false);   /* 3 */
	PLAN_EQ("{\"a\": 5, \"b\": 6}", NULL, NULL, "a_1_b_1|a:[5, 5]|b:[6, 6]|exact");
	plan_allowed = (1u << 1) | (1u << 2);
	{
		char *got = plan("{\"a\": 5, \"b\": 6}", NULL, NULL);

		TT_ASSERT(strcmp(got, "a_1|a:[5, 5]") == 0 || strcmp(got, "b_1|b:[6, 6]") == 0);
		bson_free(got);
	}
	plan_allowed = 1u << 2;
	PLAN_EQ("{\"a\": 5, \"b\": 6}", NULL, NULL, "b_1|b:[6, 6]");
	PLAN_EQ("{\"a\": 5}", NULL, NULL, "COLLSCAN");
	PLAN_EQ("{\"$or\": [{\"a\": 5}, {\"b\": 6}]}", NULL, NULL, "COLLSCAN");
	plan_allowed = (1u << 1) | (1u << 2);
	PLAN_EQ("{\"$or\": [{\"a\": 5}, {\"b\": 6}]}", NULL, NULL, "OR 2");
	/* $natural still applies; an allowed set of nothing is a collection scan */
	PLAN_EQ("{\"a\": 5}", NULL, "{\"$natural\": 1}", "COLLSCAN");
	plan_allowed = 0;
	PLAN_EQ("{\"a\": 5, \"b\": 6}", NULL, NULL, "COLLSCAN");
	plan_allowed = PLANNER_ALL_INDEXES;
}

int
main(void)
{
	TT_RUN(test_points_and_ranges);
	TT_RUN(test_regex);
	TT_RUN(test_multikey_and_compound);
	TT_RUN(test_sparse_partial_hidden_hint);
	TT_RUN(test_hint_special_whole);
	TT_RUN(test_esr_choice);
	TT_RUN(test_index_filter);
	return tt_finish();
}
