/*
 * test_view_join.c -- joins that read views, and the collation rules around
 * them, through the embedded API: $lookup by localField/foreignField and
 * $graphLookup from a view (and a view of a view; the hash join and the
 * per-document path), mongod's 167 when a view's default collation is not
 * the pipeline's (at aggregate, create and collMod time), and the stages
 * whose comparisons follow the collation ($graphLookup's searches, $bucket
 * boundaries, $bucketAuto, $densify partitions) or, as mongod, ignore it
 * ($jsonSchema enum); and system.views, the collection mongod keeps the
 * definitions in.  mongosh covers the same end to end
 * (tests/e2e/mongosh/views_join.js).
 *
 * Commands are written with single quotes, turned into JSON by run().
 */
#include "tt.h"

#include <string.h>

#include "tt_embedded.h"

static tamga_t *db;
static char *dir;

/* Run cmd (single-quoted JSON); the reply, rc in *rc. */
static bson_t *
run(const char *cmd, int *rc)
{
	return tt_run_sq(db, "vj", cmd, rc);
}

static void
ok(const char *cmd)
{
	int rc;
	bson_t *r = run(cmd, &rc);

	if (rc != 0) {
		char *s = bson_as_relaxed_extended_json(r, NULL);
		TT_FAIL_("%s -> %s", cmd, s);
		bson_free(s);
	}
	tt_free_reply(r);
}

/* The firstBatch of cmd as relaxed JSON, or "error <code>: <errmsg>". */
static char *
batch(const char *cmd)
{
	return tt_batch_sq(db, "vj", cmd);
}

#define BATCH_EQ(cmd, want) do { char *got_ = batch(cmd); TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)

/* ---- $lookup by localField/foreignField from a view ---------------------- */

static void
test_lookup_from_view(void)
{
	ok("{'insert': 'orders', 'documents': [{'_id': 1, 'item': 'a'}, {'_id': 2, 'item': ['b', 'c']},"
	   " {'_id': 3}, {'_id': 4, 'item': {'$regularExpression': {'pattern': '^[ab]', 'options': ''}}}]}");
	ok("{'insert': 'items', 'documents': [{'_id': 10, 'sku': 'a', 'price': 5}, {'_id': 11, 'sku': 'b', 'price': 50},"
	   " {'_id': 12, 'sku': 'c', 'price': 7}, {'_id': 13, 'price': 1}, {'_id': 14, 'sku': 'a', 'price': 99}]}");
	/* the view drops one 'a' and the document without sku, and adds a field */
	ok("{'create': 'cheap', 'viewOn': 'items', 'pipeline': [{'$match': {'price': {'$lt': 60}}},"
	   " {'$addFields': {'cheap': true}}]}");
	ok("{'create': 'cheapIds', 'viewOn': 'cheap', 'pipeline': [{'$project': {'sku': 1}}]}");
	/* the join applies to the view's output (no _id 14, a cheap field); the
	 * order without item (null) finds the sku-less item; a regex local
	 * value matches by pattern (the per-document path) */
	BATCH_EQ("{'aggregate': 'orders', 'pipeline': [{'$lookup': {'from': 'cheap', 'localField': 'item',"
	         " 'foreignField': 'sku', 'as': 'r'}}, {'$project': {'r._id': 1, 'r.cheap': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"r\" : [ { \"_id\" : 10, \"cheap\" : true } ] }, "
	    "{ \"_id\" : 2, \"r\" : [ { \"_id\" : 11, \"cheap\" : true }, { \"_id\" : 12, \"cheap\" : true } ] }, "
	    "{ \"_id\" : 3, \"r\" : [ { \"_id\" : 13, \"cheap\" : true } ] }, "
	    "{ \"_id\" : 4, \"r\" : [ { \"_id\" : 10, \"cheap\" : true }, { \"_id\" : 11, \"cheap\" : true } ] } ]");
	/* a view of a view, with the user's pipeline after the join, and let */
	BATCH_EQ("{'aggregate': 'orders', 'pipeline': [{'$match': {'_id': {'$lte': 2}}}, {'$lookup': {'from': 'cheapIds',"
	         " 'localField': 'item', 'foreignField': 'sku', 'let': {'o': '$_id'},"
	         " 'pipeline': [{'$project': {'_id': 0, 'sku': 1, 'o': '$$o'}}], 'as': 'r'}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"item\" : \"a\", \"r\" : [ { \"sku\" : \"a\", \"o\" : 1 } ] }, "
	    "{ \"_id\" : 2, \"item\" : [ \"b\", \"c\" ], \"r\" : [ { \"sku\" : \"b\", \"o\" : 2 }, { \"sku\" : \"c\", \"o\" : 2 } ] } ]");
	/* the regex again, with a pipeline: the per-document path feeds it */
	BATCH_EQ("{'aggregate': 'orders', 'pipeline': [{'$match': {'_id': 4}}, {'$lookup': {'from': 'cheapIds',"
	         " 'localField': 'item', 'foreignField': 'sku', 'pipeline': [{'$count': 'n'}], 'as': 'r'}},"
	         " {'$project': {'r': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : 4, \"r\" : [ { \"n\" : 2 } ] } ]");
	/* a view in a $lookup sub-pipeline's $lookup */
	BATCH_EQ("{'aggregate': 'orders', 'pipeline': [{'$match': {'_id': 1}}, {'$lookup': {'from': 'orders',"
	         " 'pipeline': [{'$match': {'_id': 2}}, {'$lookup': {'from': 'cheap', 'localField': 'item',"
	         " 'foreignField': 'sku', 'as': 'inner'}}, {'$project': {'inner._id': 1}}], 'as': 'r'}},"
	         " {'$project': {'r': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"r\" : [ { \"_id\" : 2, \"inner\" : [ { \"_id\" : 11 }, { \"_id\" : 12 } ] } ] } ]");
	/* a $facet in a $lookup pipeline inside a $facet (40600 is only for a
	 * $facet directly in a $facet) */
	BATCH_EQ("{'aggregate': 'orders', 'pipeline': [{'$match': {'_id': 1}}, {'$facet': {'f': [{'$lookup': {'from': 'items',"
	         " 'pipeline': [{'$facet': {'n': [{'$count': 'n'}]}}], 'as': 'r'}}, {'$project': {'r': 1}}]}}], 'cursor': {}}",
	    "[ { \"f\" : [ { \"_id\" : 1, \"r\" : [ { \"n\" : [ { \"n\" : 5 } ] } ] } ] } ]");
	/* an aggregate on a view whose own stages join another view */
	ok("{'create': 'withItems', 'viewOn': 'orders', 'pipeline': [{'$lookup': {'from': 'cheapIds',"
	   " 'localField': 'item', 'foreignField': 'sku', 'as': 'r'}}, {'$project': {'n': {'$size': '$r'}}}]}");
	BATCH_EQ("{'aggregate': 'withItems', 'pipeline': [], 'cursor': {}}",
	    "[ { \"_id\" : 1, \"n\" : 1 }, { \"_id\" : 2, \"n\" : 2 }, { \"_id\" : 3, \"n\" : 1 }, { \"_id\" : 4, \"n\" : 2 } ]");
}

/* ---- $graphLookup -------------------------------------------------------- */

static void
test_graph_lookup(void)
{
	ok("{'insert': 'g', 'documents': [{'_id': 'a', 'to': ['b', 'c']}, {'_id': 'b', 'to': 'd'}, {'_id': 'c', 'to': 'd'},"
	   " {'_id': 'd', 'to': 'a'}, {'_id': 'e', 'to': 'a'}, {'_id': 'f'}, {'_id': 'h', 'to': null}]}");
	/* every document a search finds is taken (b and c at depth 0) */
	BATCH_EQ("{'aggregate': 'g', 'pipeline': [{'$match': {'_id': 'e'}}, {'$graphLookup': {'from': 'g',"
	         " 'startWith': '$to', 'connectFromField': 'to', 'connectToField': '_id', 'as': 'r',"
	         " 'depthField': 'n'}}, {'$project': {'r._id': 1, 'r.n': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : \"e\", \"r\" : [ { \"_id\" : \"a\", \"n\" : 0 }, { \"_id\" : \"b\", \"n\" : 1 }, "
	    "{ \"_id\" : \"c\", \"n\" : 1 }, { \"_id\" : \"d\", \"n\" : 2 } ] } ]");
	/* from a view: the search reads the view's output */
	ok("{'create': 'noC', 'viewOn': 'g', 'pipeline': [{'$match': {'_id': {'$ne': 'c'}}}, {'$addFields': {'v': 1}}]}");
	ok("{'create': 'noC2', 'viewOn': 'noC'}");
	BATCH_EQ("{'aggregate': 'g', 'pipeline': [{'$match': {'_id': 'e'}}, {'$graphLookup': {'from': 'noC2',"
	         " 'startWith': '$to', 'connectFromField': 'to', 'connectToField': '_id', 'as': 'r',"
	         " 'restrictSearchWithMatch': {'_id': {'$ne': 'd'}}}}, {'$project': {'r._id': 1, 'r.v': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : \"e\", \"r\" : [ { \"_id\" : \"a\", \"v\" : 1 }, { \"_id\" : \"b\", \"v\" : 1 } ] } ]");
	/* a null start matches null, not a missing connectToField (mongod's
	 * $exists guard) */
	BATCH_EQ("{'aggregate': 'g', 'pipeline': [{'$match': {'_id': 'f'}}, {'$graphLookup': {'from': 'g',"
	         " 'startWith': '$to', 'connectFromField': 'x', 'connectToField': 'to', 'as': 'r'}},"
	         " {'$project': {'r._id': 1}}], 'cursor': {}}",
	    "[ { \"_id\" : \"f\", \"r\" : [ { \"_id\" : \"h\" } ] } ]");
}

/* ---- the views a pipeline reads share its collation ---------------------- */

static void
test_view_collations(void)
{
	const char *lk = "{'$lookup': {'from': 'filView', 'localField': 'x', 'foreignField': 'x', 'as': 'r'}}";
	char *cmd;

	ok("{'create': 'simpleColl'}");
	ok("{'create': 'filColl', 'collation': {'locale': 'fil'}}");
	ok("{'create': 'filView', 'viewOn': 'simpleColl', 'collation': {'locale': 'fil'}}");
	ok("{'create': 'simpleView', 'viewOn': 'simpleColl'}");
	/* the collection's default, or the command's, must be the view's */
	cmd = bson_strdup_printf("{'aggregate': 'filColl', 'pipeline': [%s], 'cursor': {}}", lk);
	BATCH_EQ(cmd, "[ ]");
	bson_free(cmd);
	cmd = bson_strdup_printf("{'aggregate': 'simpleColl', 'pipeline': [%s], 'cursor': {}}", lk);
	BATCH_EQ(cmd, "error 167: Cannot override a view's default collationvj.filView");
	bson_free(cmd);
	cmd = bson_strdup_printf("{'aggregate': 'simpleColl', 'pipeline': [%s], 'cursor': {}, 'collation': {'locale': 'fil'}}", lk);
	BATCH_EQ(cmd, "[ ]");
	bson_free(cmd);
	/* nested, $graphLookup, $unionWith, $facet, the pipeline form */
	BATCH_EQ("{'aggregate': 'filColl', 'cursor': {}, 'pipeline': [{'$lookup': {'from': 'simpleColl', 'pipeline':"
	         " [{'$lookup': {'from': 'simpleView', 'localField': 'x', 'foreignField': 'x', 'as': 'i'}}], 'as': 'r'}}]}",
	    "error 167: Cannot override a view's default collationvj.simpleView");
	BATCH_EQ("{'aggregate': 'simpleColl', 'cursor': {}, 'pipeline': [{'$graphLookup': {'from': 'filView',"
	         " 'startWith': '$x', 'connectFromField': 'x', 'connectToField': 'x', 'as': 'r'}}]}",
	    "error 167: Cannot override a view's default collationvj.filView");
	BATCH_EQ("{'aggregate': 'simpleColl', 'cursor': {}, 'pipeline': [{'$facet': {'a': [{'$unionWith': 'filView'}]}}]}",
	    "error 167: Cannot override a view's default collationvj.filView");
	BATCH_EQ("{'aggregate': 'simpleColl', 'cursor': {}, 'pipeline': [{'$lookup': {'from': 'filView', 'pipeline': [],"
	         " 'as': 'r'}}]}",
	    "error 167: Cannot override a view's default collationvj.filView");
	/* aggregating a view: the pipeline's collation is the view's */
	BATCH_EQ("{'aggregate': 'simpleView', 'cursor': {}, 'pipeline': [{'$unionWith': 'filView'}]}",
	    "error 167: Cannot override a view's default collationvj.filView");
	/* a collection of the same name as nothing: no view, no check */
	BATCH_EQ("{'aggregate': 'filColl', 'cursor': {}, 'pipeline': [{'$unionWith': 'nothing'}]}", "[ ]");
}

/* A view's definition reads views of its collation only, and views that
 * read a name keep it from becoming a view of another collation. */
static void
test_view_graph_collations(void)
{
	int rc;
	bson_t *r;

	r = run("{'create': 'zhView', 'viewOn': 'filView', 'collation': {'locale': 'zh'}}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 167);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "View vj.zhView has conflicting collation with view vj.filView");
	tt_free_reply(r);
	r = run("{'create': 'zhView', 'viewOn': 'simpleColl', 'collation': {'locale': 'zh'}, 'pipeline':"
	        " [{'$facet': {'a': [{'$lookup': {'from': 'filView', 'pipeline': [], 'as': 'x'}}]}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 167);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "View vj.zhView has conflicting collation with view vj.filView");
	tt_free_reply(r);
	ok("{'create': 'esView', 'viewOn': 'simpleColl', 'collation': {'locale': 'es'}}");
	r = run("{'collMod': 'esView', 'viewOn': 'simpleColl', 'pipeline': [{'$unionWith': 'simpleView'}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 167);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "View vj.esView has conflicting collation with view vj.simpleView");
	tt_free_reply(r);
	/* filView2 reads filView: filView cannot come back with another collation */
	ok("{'create': 'filView2', 'viewOn': 'simpleColl', 'collation': {'locale': 'fil'},"
	   " 'pipeline': [{'$graphLookup': {'from': 'filView', 'startWith': '$x', 'connectFromField': 'x',"
	   " 'connectToField': 'x', 'as': 'r'}}]}");
	ok("{'drop': 'filView'}");
	r = run("{'create': 'filView', 'viewOn': 'simpleColl'}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 167);
	TT_EQ_STR(tt_get_str(r, "errmsg"),
	    "View vj.filView has a collation that does not match the collation of view vj.filView2");
	tt_free_reply(r);
	ok("{'create': 'filView', 'viewOn': 'simpleColl', 'collation': {'locale': 'fil'}}");
	/* a collection of that name answers 48 before any of this */
	r = run("{'create': 'simpleColl', 'viewOn': 'filView'}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 48);
	tt_free_reply(r);
}

/* ---- stages that compare by the collation, and $jsonSchema that does not -- */

static void
test_collation_stages(void)
{
	const char *ci = "'collation': {'locale': 'en', 'strength': 2}";
	char *cmd;

	ok("{'insert': 's', 'documents': [{'_id': 1, 'v': 'a'}, {'_id': 2, 'v': 'B'}, {'_id': 3, 'v': 'c'},"
	   " {'_id': 4, 'v': 'A'}, {'_id': 5, 'v': 'D'}]}");
	/* $bucket boundaries are ordered, and the default placed, by the collation */
	cmd = bson_strdup_printf("{'aggregate': 's', 'pipeline': [{'$bucket': {'groupBy': '$v', 'boundaries': ['a', 'C', 'z']}}],"
	    " 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : \"a\", \"count\" : 3 }, { \"_id\" : \"C\", \"count\" : 2 } ]");
	bson_free(cmd);
	BATCH_EQ("{'aggregate': 's', 'pipeline': [{'$bucket': {'groupBy': '$v', 'boundaries': ['a', 'C', 'z']}}], 'cursor': {}}",
	    "error 40194: The 'boundaries' option to $bucket must be sorted in ascending order, but elements 0 and 1 "
	    "are not in ascending order (\"a\" is not less than \"C\").");
	cmd = bson_strdup_printf("{'aggregate': 's', 'pipeline': [{'$bucket': {'groupBy': '$v', 'boundaries': ['b', 'd'],"
	    " 'default': 'A'}}], 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : \"A\", \"count\" : 3 }, { \"_id\" : \"b\", \"count\" : 2 } ]");
	bson_free(cmd);
	/* $bucketAuto sorts by it and keeps equal values in one bucket */
	cmd = bson_strdup_printf("{'aggregate': 's', 'pipeline': [{'$bucketAuto': {'groupBy': '$v', 'buckets': 2}}],"
	    " 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : { \"min\" : \"a\", \"max\" : \"c\" }, \"count\" : 3 }, "
	    "{ \"_id\" : { \"min\" : \"c\", \"max\" : \"D\" }, \"count\" : 2 } ]");
	bson_free(cmd);
	/* $densify: partitions equal under the collation are one */
	ok("{'insert': 'dn', 'documents': [{'_id': 1, 'p': 'x', 't': 0}, {'_id': 2, 'p': 'X', 't': 4},"
	   " {'_id': 3, 'p': 'x', 't': 6}]}");
	cmd = bson_strdup_printf("{'aggregate': 'dn', 'pipeline': [{'$densify': {'field': 't', 'partitionByFields': ['p'],"
	    " 'range': {'step': 2, 'bounds': 'partition'}}}, {'$project': {'_id': 0, 't': 1}}], 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"t\" : 0 }, { \"t\" : 2 }, { \"t\" : 4 }, { \"t\" : 6 } ]");
	bson_free(cmd);
	/* $graphLookup: the searches, the values asked for and the _ids seen */
	ok("{'insert': 'gc', 'documents': [{'_id': 1, 'k': 'x', 'to': 'y'}, {'_id': 2, 'k': 'Y', 'to': 'X'},"
	   " {'_id': 3, 'k': 'X', 'to': 'z'}]}");
	cmd = bson_strdup_printf("{'aggregate': 'gc', 'pipeline': [{'$match': {'_id': 1}}, {'$graphLookup': {'from': 'gc',"
	    " 'startWith': '$k', 'connectFromField': 'to', 'connectToField': 'k', 'as': 'r', 'depthField': 'n'}},"
	    " {'$project': {'r._id': 1, 'r.n': 1}}], 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : 1, \"r\" : [ { \"_id\" : 1, \"n\" : 0 }, { \"_id\" : 3, \"n\" : 0 }, "
	    "{ \"_id\" : 2, \"n\" : 1 } ] } ]");
	bson_free(cmd);
	ok("{'insert': 'gi', 'documents': [{'_id': 'a', 'to': 'B'}, {'_id': 'b', 'to': 'A'}]}");
	cmd = bson_strdup_printf("{'aggregate': 'gi', 'pipeline': [{'$match': {'_id': 'a'}}, {'$graphLookup': {'from': 'gi',"
	    " 'startWith': '$to', 'connectFromField': 'to', 'connectToField': '_id', 'as': 'r'}},"
	    " {'$project': {'n': {'$size': '$r'}}}], 'cursor': {}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : \"a\", \"n\" : 2 } ]");
	bson_free(cmd);
	/* $jsonSchema ignores the collation (mongod's json_schema/misc_validation) */
	ok("{'insert': 'js', 'documents': [{'_id': 1, 'a': 'str'}, {'_id': 2, 'a': ['STR', 'sTr']}]}");
	cmd = bson_strdup_printf("{'find': 'js', 'filter': {'$jsonSchema': {'properties': {'a': {'enum': ['STR']}}}}, %s}", ci);
	BATCH_EQ(cmd, "[ ]");
	bson_free(cmd);
	cmd = bson_strdup_printf("{'find': 'js', 'filter': {'$jsonSchema': {'properties': {'a': {'uniqueItems': true}}}},"
	    " 'projection': {'_id': 1}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : 1 }, { \"_id\" : 2 } ]");
	bson_free(cmd);
	cmd = bson_strdup_printf("{'find': 'js', 'filter': {'a': 'STR'}, 'projection': {'_id': 1}, %s}", ci);
	BATCH_EQ(cmd, "[ { \"_id\" : 1 }, { \"_id\" : 2 } ]");
	bson_free(cmd);
}

/* ---- system.views, as mongod keeps it ------------------------------------ */

/* The names listCollections (nameOnly, with filter f or none) returns,
 * "a b c". */
static char *
names(const char *filter)
{
	char *cmd = bson_strdup_printf("{'listCollections': 1, 'nameOnly': true%s%s}", filter ? ", 'filter': " : "",
	    filter ? filter : "");
	int rc;
	bson_t *r = run(cmd, &rc);
	bson_string_t *out = bson_string_new(NULL);
	bson_iter_t f, it;

	if (tt_get(r, "cursor.firstBatch", &f) && bson_iter_recurse(&f, &it))
		while (bson_iter_next(&it)) {
			bson_iter_t n;
			if (bson_iter_recurse(&it, &n) && bson_iter_find(&n, "name"))
				bson_string_append_printf(out, "%s%s", out->len ? " " : "", bson_iter_utf8(&n, NULL));
		}
	tt_free_reply(r);
	bson_free(cmd);
	return bson_string_free(out, false);
}

#define NAMES_EQ(filter, want) do { char *got_ = names(filter); TT_EQ_STR(got_, (want)); bson_free(got_); } while (0)

static void
test_system_views(void)
{
	int rc;
	bson_t *r;

	ok("{'dropDatabase': 1}");
	ok("{'insert': 'c', 'documents': [{'_id': 1}]}");
	NAMES_EQ(NULL, "c");
	/* the first view brings system.views, a collection holding the definitions */
	ok("{'create': 'v', 'viewOn': 'c', 'pipeline': [{'$match': {'_id': 1}}]}");
	ok("{'create': 'w', 'viewOn': 'v', 'collation': {'locale': 'simple'}}");
	NAMES_EQ(NULL, "c system.views v w");
	NAMES_EQ("{'type': 'collection'}", "c system.views");
	BATCH_EQ("{'find': 'system.views'}",
	    "[ { \"_id\" : \"vj.v\", \"viewOn\" : \"c\", \"pipeline\" : [ { \"$match\" : { \"_id\" : 1 } } ] }, "
	    "{ \"_id\" : \"vj.w\", \"viewOn\" : \"v\", \"pipeline\" : [  ] } ]");
	ok("{'collMod': 'w', 'pipeline': [{'$limit': 1}]}");
	BATCH_EQ("{'find': 'system.views', 'filter': {'_id': 'vj.w'}, 'projection': {'pipeline': 1}}",
	    "[ { \"_id\" : \"vj.w\", \"pipeline\" : [ { \"$limit\" : 1 } ] } ]");
	/* dropping the last view keeps it, empty */
	ok("{'drop': 'w'}");
	ok("{'drop': 'v'}");
	NAMES_EQ(NULL, "c system.views");
	BATCH_EQ("{'find': 'system.views'}", "[ ]");
	/* direct writes, as mongod takes them from a user allowed to: the
	 * views follow what system.views holds */
	ok("{'create': 'v', 'viewOn': 'c'}");
	ok("{'insert': 'c', 'documents': [{'_id': 2}]}");
	ok("{'insert': 'system.views', 'documents': [{'_id': 'vj.x', 'pipeline': [{'$match': {'_id': 1}}], 'viewOn': 'c'}]}");
	NAMES_EQ(NULL, "c system.views v x");
	NAMES_EQ("{'type': 'view'}", "v x");
	BATCH_EQ("{'find': 'x'}", "[ { \"_id\" : 1 } ]");
	/* a view on it goes through the view graph as any */
	ok("{'create': 'xx', 'viewOn': 'x', 'pipeline': [{'$project': {'_id': 1}}]}");
	ok("{'update': 'system.views', 'updates': [{'q': {'_id': 'vj.x'}, 'u': {'$set': {'pipeline': [{'$match': {'_id': 2}}]}}}]}");
	BATCH_EQ("{'find': 'xx'}", "[ { \"_id\" : 2 } ]");
	/* an upsert makes one, findAndModify changes and removes */
	ok("{'update': 'system.views', 'updates': [{'q': {'_id': 'vj.y'}, 'u': {'viewOn': 'x', 'pipeline': []}, 'upsert': true}]}");
	BATCH_EQ("{'aggregate': 'y', 'pipeline': [], 'cursor': {}}", "[ { \"_id\" : 2 } ]");
	ok("{'findAndModify': 'system.views', 'query': {'_id': 'vj.y'}, 'update': {'$set': {'viewOn': 'c'}}}");
	{
		int n;
		r = run("{'count': 'y'}", &n);
		TT_EQ_INT(tt_get_i64(r, "n"), 2);
		tt_free_reply(r);
	}
	ok("{'findAndModify': 'system.views', 'query': {'_id': 'vj.y'}, 'remove': true}");
	ok("{'delete': 'system.views', 'deletes': [{'q': {'_id': {'$in': ['vj.x', 'vj.xx']}}, 'limit': 0}]}");
	NAMES_EQ("{'type': 'view'}", "v");
	BATCH_EQ("{'find': 'x'}", "[ ]");   /* no view: a missing collection */
	/* documents mongod's catalog could not read are refused (mongod takes
	 * them, then refuses every use of the database's views until they go) */
	{
		static const char *const bad[][2] = {
			{"{'_id': 'vj.b', 'viewOn': 'c', 'pipeline': 'bad'}", "_id: \"vj.b\""},
			{"{'_id': 'vj.b', 'viewOn': 'c', 'pipeline': {}}", "_id: \"vj.b\""},
			{"{'_id': 'vj.b', 'viewOn': 'c', 'pipeline': [], 'extra': 1}", "_id: \"vj.b\""},
			{"{'_id': 'vj.b', 'pipeline': []}", "_id: \"vj.b\""},
			{"{'_id': 'vj.b', 'viewOn': 'c', 'pipeline': [], 'collation': 'fr'}", "_id: \"vj.b\""},
			{"{'_id': 7, 'viewOn': 'c', 'pipeline': []}", "_id: 7"},
			{"{'_id': 'other.b', 'viewOn': 'c', 'pipeline': []}", "_id: \"other.b\""},
			{"{'_id': 'notQualified', 'viewOn': 'c', 'pipeline': []}", "_id: \"notQualified\""},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char *cmd = bson_strdup_printf("{'insert': 'system.views', 'documents': [%s]}", bad[i][0]);
			char *want = bson_strdup_printf("found invalid view definition %s while reading 'vj.system.views'",
			    bad[i][1]);
			r = run(cmd, &rc);
			TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 182);
			TT_EQ_STR(tt_get_str(r, "writeErrors.0.errmsg"), want);
			tt_free_reply(r);
			bson_free(want);
			bson_free(cmd);
		}
	}
	r = run("{'update': 'system.views', 'updates': [{'q': {'_id': 'vj.v'}, 'u': {'$unset': {'pipeline': 1}}}]}", &rc);
	TT_EQ_INT(tt_get_i64(r, "writeErrors.0.code"), 182);
	tt_free_reply(r);
	/* bulkWrite names the namespace: each kind of operation */
	{
		static const char *const ops[][2] = {
			{"{'insert': 0, 'document': {'_id': 'vj.z', 'viewOn': 'c', 'pipeline': [{'$match': {'_id': 1}}]}}", "v z"},
			{"{'update': 0, 'filter': {'_id': 'vj.z'}, 'updateMods': {'$set': {'viewOn': 'none'}}}", "v z"},
			{"{'update': 0, 'filter': {'_id': 'vj.w'}, 'updateMods': {'viewOn': 'c', 'pipeline': []}, 'upsert': true}",
			    "v w z"},
			{"{'delete': 0, 'filter': {'_id': {'$ne': 'vj.v'}}, 'multi': true}", "v"},
		};
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
			char *cmd = bson_strdup_printf("{'bulkWrite': 1, 'ops': [%s], 'nsInfo': [{'ns': 'vj.system.views'}]}",
			    ops[i][0]);
			for (char *q = cmd; *q != '\0'; q++)
				if (*q == '\'')
					*q = '"';
			r = tt_run_json(db, "admin", cmd, &rc);
			TT_EQ_INT(rc, 0);
			TT_EQ_INT(tt_get_i64(r, "nErrors"), 0);
			tt_free_reply(r);
			bson_free(cmd);
			NAMES_EQ("{'type': 'view'}", ops[i][1]);
			if (i == 0)
				BATCH_EQ("{'find': 'z'}", "[ { \"_id\" : 1 } ]");
			if (i == 1)
				BATCH_EQ("{'find': 'z'}", "[ ]");
		}
	}
	BATCH_EQ("{'find': 'system.views', 'projection': {'viewOn': 1}}", "[ { \"_id\" : \"vj.v\", \"viewOn\" : \"c\" } ]");
	/* what create's checks refuse, a direct write may hold (mongod loads
	 * it all the same): reading it fails as on mongod */
	ok("{'insert': 'system.views', 'documents': [{'_id': 'vj.loop', 'viewOn': 'loop', 'pipeline': []},"
	   " {'_id': 'vj.self', 'viewOn': 'c', 'pipeline': [{'$lookup': {'from': 'self', 'pipeline': [], 'as': 'a'}}]}]}");
	BATCH_EQ("{'find': 'loop'}", "error 165: View depth too deep or view cycle detected; maximum depth is 20");
	BATCH_EQ("{'find': 'self'}", "error 232: Maximum number of nested sub-pipelines exceeded. Limit is 20");
	ok("{'delete': 'system.views', 'deletes': [{'q': {'_id': {'$in': ['vj.loop', 'vj.self']}}, 'limit': 0}]}");
	/* a name a collection holds stays the collection's */
	ok("{'insert': 'system.views', 'documents': [{'_id': 'vj.c', 'viewOn': 'v', 'pipeline': []}]}");
	NAMES_EQ("{'type': 'view'}", "v");
	BATCH_EQ("{'find': 'c', 'projection': {'_id': 1}}", "[ { \"_id\" : 1 }, { \"_id\" : 2 } ]");
	ok("{'delete': 'system.views', 'deletes': [{'q': {'_id': 'vj.c'}, 'limit': 1}]}");
	/* $out and $merge refuse every system collection, as mongod */
	BATCH_EQ("{'aggregate': 'c', 'pipeline': [{'$out': 'system.views'}], 'cursor': {}}",
	    "error 17385: Can't $out to special collection: system.views");
	BATCH_EQ("{'aggregate': 'c', 'pipeline': [{'$merge': {'into': 'system.views'}}], 'cursor': {}}",
	    "error 31319: Cannot $merge to special collection: system.views");
	/* neither away from system.views nor onto it (mongod's 20) */
	r = tt_run_json(db, "admin", "{\"renameCollection\": \"vj.system.views\", \"to\": \"vj.other\"}", &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 20);
	TT_EQ_STR(tt_get_str(r, "errmsg"), "renaming system.views collection or renaming to system.views is not allowed");
	tt_free_reply(r);
	r = tt_run_json(db, "admin", "{\"renameCollection\": \"vj.c\", \"to\": \"vj.system.views\", \"dropTarget\": true}",
	    &rc);
	TT_EQ_INT(tt_get_i64(r, "code"), 20);
	tt_free_reply(r);
	/* dropping system.views drops the views with it */
	ok("{'drop': 'system.views'}");
	NAMES_EQ(NULL, "c");
	ok("{'create': 'v', 'viewOn': 'c'}");
	ok("{'dropDatabase': 1}");
	NAMES_EQ(NULL, "");
	/* the first view may come by a direct insert too */
	ok("{'insert': 'system.views', 'documents': [{'_id': 'vj.first', 'viewOn': 'c', 'pipeline': []}]}");
	NAMES_EQ(NULL, "system.views first");   /* collections, then views */
	ok("{'dropDatabase': 1}");
}

int
main(void)
{
	dir = tt_tmpdir("view_join");
	if ((db = tt_open_new(dir)) == NULL)
		return 1;
	TT_RUN(test_lookup_from_view);
	TT_RUN(test_graph_lookup);
	TT_RUN(test_view_collations);
	TT_RUN(test_view_graph_collations);
	TT_RUN(test_collation_stages);
	TT_RUN(test_system_views);
	tt_close_rm(db, dir);
	return tt_finish();
}
