/*
 * test_update.c -- operator updates: every field and array operator, paths
 * through arrays, positional and filtered positional operators, no-op
 * detection, and the errors mongod reports (codes and messages).
 */
#include "test_update_util.h"

static void
test_set_basic(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1}", "{\"$set\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : 2 }");
	/* new fields appended in MongoDB's (lexicographic) order */
	TU_OK("{\"_id\": 1}", "{\"$set\": {\"b\": 1, \"a\": 2}}", "{ \"_id\" : 1, \"a\" : 2, \"b\" : 1 }");
	/* existing fields changed in place */
	TU_OK("{\"_id\": 1, \"z\": 1, \"a\": 1}", "{\"$set\": {\"z\": 5, \"m\": 2}}",
	      "{ \"_id\" : 1, \"z\" : 5, \"a\" : 1, \"m\" : 2 }");
	TU_OK("{\"_id\": 1}", "{\"$set\": {\"a.b.c\": 1}}",
	      "{ \"_id\" : 1, \"a\" : { \"b\" : { \"c\" : 1 } } }");
	TU_OK("{\"_id\": 1, \"a\": {\"x\": 1}}", "{\"$set\": {\"a.b\": 1}}",
	      "{ \"_id\" : 1, \"a\" : { \"x\" : 1, \"b\" : 1 } }");
	/* numeric names sort numerically */
	TU_OK("{\"_id\": 1}", "{\"$set\": {\"10\": 1, \"9\": 2}}", "{ \"_id\" : 1, \"9\" : 2, \"10\" : 1 }");
	/* empty operand is fine since 5.0 */
	TU_NOOP("{\"_id\": 1}", "{\"$set\": {}}");
}

static void
test_set_noop(void)
{
	TU_NOOP("{\"_id\": 1, \"a\": 1}", "{\"$set\": {\"a\": 1}}");
	TU_NOOP("{\"_id\": 1, \"a\": {\"b\": [1, 2]}}", "{\"$set\": {\"a\": {\"b\": [1, 2]}}}");
	{
		/* same number, other type: modified */
		uresult_t r = tu_apply("{\"_id\": 1, \"a\": 1}", "{\"$set\": {\"a\": 1.0}}");
		TT_ASSERT(r.json != NULL && r.modified);
		bson_free(r.json);
	}
	TU_NOOP("{\"_id\": 1}", "{\"$unset\": {\"a\": 1}}");
	TU_NOOP("{\"_id\": 1, \"a\": 5}", "{\"$inc\": {\"a\": 0}}");
	TU_NOOP("{\"_id\": 1, \"a\": [1]}", "{\"$addToSet\": {\"a\": 1}}");
	TU_NOOP("{\"_id\": 1, \"a\": [1]}", "{\"$pull\": {\"a\": 2}}");
	TU_NOOP("{\"_id\": 1, \"a\": []}", "{\"$pop\": {\"a\": 1}}");
	TU_NOOP("{\"_id\": 1, \"a\": 3}", "{\"$min\": {\"a\": 5}}");
	TU_NOOP("{\"_id\": 1, \"a\": [1]}", "{\"$push\": {\"a\": {\"$each\": []}}}");
	{
		/* mongod counts a sorted $push as a modification even when nothing moves */
		uresult_t r = tu_apply("{\"_id\": 1, \"a\": [1, 2]}",
		                       "{\"$push\": {\"a\": {\"$each\": [], \"$sort\": 1}}}");
		TT_ASSERT(r.json != NULL && r.modified);
		bson_free(r.json);
	}
	TU_NOOP("{\"_id\": 1, \"a\": 3}", "{\"$max\": {\"a\": 3.0}}");
	TU_NOOP("{\"_id\": 1}", "{\"$rename\": {\"a\": \"b\"}}");
	TU_NOOP("{\"_id\": 1}", "{\"$setOnInsert\": {\"a\": 1}}");
}

static void
test_set_arrays(void)
{
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$set\": {\"a.1\": 9}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 9, 3 ] }");
	/* padding with nulls */
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$set\": {\"a.3\": 9}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, null, null, 9 ] }");
	TU_OK("{\"_id\": 1, \"a\": [{\"b\": 1}]}", "{\"$set\": {\"a.0.c\": 2}}",
	      "{ \"_id\" : 1, \"a\" : [ { \"b\" : 1, \"c\" : 2 } ] }");
	TU_OK("{\"_id\": 1, \"a\": []}", "{\"$set\": {\"a.1.b\": 2}}",
	      "{ \"_id\" : 1, \"a\" : [ null, { \"b\" : 2 } ] }");
	/* a missing path creates documents, even with numeric names */
	TU_OK("{\"_id\": 1}", "{\"$set\": {\"a.0\": 1}}", "{ \"_id\" : 1, \"a\" : { \"0\" : 1 } }");
	TU_ERR("{\"_id\": 1, \"a\": [1]}", "{\"$set\": {\"a.b\": 1}}", 28,
	       "Cannot create field 'b' in element {a: [ 1 ]}");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"$set\": {\"a.b.c\": 1}}", 28,
	       "Cannot create field 'b' in element {a: 1}");
	TU_NOOP("{\"_id\": 1, \"a\": 1}", "{\"$unset\": {\"a.b\": 1}}");
	/* $unset of an array element leaves null */
	TU_OK("{\"_id\": 1, \"a\": [1, 2]}", "{\"$unset\": {\"a.0\": 1}}",
	      "{ \"_id\" : 1, \"a\" : [ null, 2 ] }");
}

static void
test_unset(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"$unset\": {\"a\": \"\"}}", "{ \"_id\" : 1, \"b\" : 2 }");
	TU_OK("{\"_id\": 1, \"a\": {\"b\": 1, \"c\": 2}}", "{\"$unset\": {\"a.b\": 1}}",
	      "{ \"_id\" : 1, \"a\" : { \"c\" : 2 } }");
}

static void
test_inc_mul(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1}", "{\"$inc\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : 3 }");
	TU_OK("{\"_id\": 1}", "{\"$inc\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : 2 }");
	TU_OK("{\"_id\": 1, \"a\": 1}", "{\"$inc\": {\"a\": 0.5}}", "{ \"_id\" : 1, \"a\" : 1.5 }");
	TU_OK("{\"_id\": 1, \"a\": 3}", "{\"$mul\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : 6 }");
	TU_OK("{\"_id\": 1}", "{\"$mul\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : 0 }");
	{
		/* int32 overflow widens to int64 */
		bson_t *d = tt_json("{\"a\": {\"$numberInt\": \"2147483647\"}}");
		bson_t *u = tt_json("{\"u\": {\"$inc\": {\"a\": 1}}}");
		bson_iter_t it;
		update_t *up = NULL;
		bson_t out;
		bool mod;
		terr_t err = TERR_INIT;

		bson_iter_init_find(&it, u, "u");
		TT_ASSERT(update_compile(bson_iter_value(&it), NULL, &up, &err) == 0);
		TT_ASSERT(update_apply(up, d, NULL, &out, &mod, &err) == 0);
		TT_ASSERT(bson_iter_init_find(&it, &out, "a") && BSON_ITER_HOLDS_INT64(&it) &&
		          bson_iter_int64(&it) == 2147483648LL);
		bson_destroy(&out);
		update_free(up);
		bson_destroy(d);
		bson_destroy(u);
	}
	TU_ERR("{\"_id\": 1, \"a\": {\"$numberLong\": \"9223372036854775807\"}}",
	       "{\"$inc\": {\"a\": 1}}", 2,
	       "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) "
	       "for document {_id: 1}");
	TU_ERR("{\"_id\": 1, \"a\": \"x\"}", "{\"$inc\": {\"a\": 1}}", 14,
	       "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of "
	       "non-numeric type string");
	TU_ERR("{\"_id\": 1}", "{\"$inc\": {\"a\": \"x\"}}", 14,
	       "Cannot increment with non-numeric argument: {a: \"x\"}");
	TU_ERR("{\"_id\": 1}", "{\"$mul\": {\"a\": null}}", 14,
	       "Cannot multiply with non-numeric argument: {a: null}");
	TU_OK("{\"_id\": 1, \"a\": {\"$numberDecimal\": \"1.5\"}}", "{\"$inc\": {\"a\": 1}}",
	      "{ \"_id\" : 1, \"a\" : { \"$numberDecimal\" : \"2.5\" } }");
}

static void
test_min_max(void)
{
	TU_OK("{\"_id\": 1, \"a\": 5}", "{\"$min\": {\"a\": 3}}", "{ \"_id\" : 1, \"a\" : 3 }");
	TU_OK("{\"_id\": 1, \"a\": 5}", "{\"$max\": {\"a\": 7}}", "{ \"_id\" : 1, \"a\" : 7 }");
	TU_OK("{\"_id\": 1}", "{\"$max\": {\"a\": 7}}", "{ \"_id\" : 1, \"a\" : 7 }");
	/* across types: MongoDB's order (numbers < strings) */
	TU_OK("{\"_id\": 1, \"a\": 5}", "{\"$max\": {\"a\": \"x\"}}", "{ \"_id\" : 1, \"a\" : \"x\" }");
}

static void
test_rename(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"$rename\": {\"a\": \"c\"}}",
	      "{ \"_id\" : 1, \"b\" : 2, \"c\" : 1 }");
	TU_OK("{\"_id\": 1, \"a\": 1, \"b\": 2}", "{\"$rename\": {\"a\": \"b\"}}", "{ \"_id\" : 1, \"b\" : 1 }");
	TU_OK("{\"_id\": 1, \"a\": {\"x\": 1}}", "{\"$rename\": {\"a.x\": \"y.z\"}}",
	      "{ \"_id\" : 1, \"a\" : {  }, \"y\" : { \"z\" : 1 } }");
	TU_ERR("{\"_id\": 1}", "{\"$rename\": {\"a\": 1}}", 2,
	       "The 'to' field for $rename must be a string: a: 1");
	TU_ERR("{\"_id\": 1}", "{\"$rename\": {\"a\": \"a\"}}", 2,
	       "The source and target field for $rename must differ: a: \"a\"");
	TU_ERR("{\"_id\": 1}", "{\"$rename\": {\"a\": \"a.b\"}}", 2,
	       "The source and target field for $rename must not be on the same path: a: \"a.b\"");
	TU_ERR("{\"_id\": 1, \"a\": [{\"b\": 1}]}", "{\"$rename\": {\"a.0.b\": \"c\"}}", 2,
	       "The source field cannot be an array element, 'a.0.b' in doc with _id: 1 has an "
	       "array field called 'a'");
	TU_ERR("{\"_id\": 1}", "{\"$rename\": {\"a\": \"b\"}, \"$set\": {\"b\": 1}}", 40,
	       "Updating the path 'b' would create a conflict at 'b'");
}

static void
test_current_date_bit(void)
{
	TU_OK("{\"_id\": 1}", "{\"$currentDate\": {\"d\": true}}",
	      "{ \"_id\" : 1, \"d\" : { \"$date\" : \"2026-06-30T10:00:00Z\" } }");
	TU_OK("{\"_id\": 1}", "{\"$currentDate\": {\"d\": {\"$type\": \"timestamp\"}}}",
	      "{ \"_id\" : 1, \"d\" : { \"$timestamp\" : { \"t\" : 1782813600, \"i\" : 1 } } }");
	TU_ERR("{\"_id\": 1}", "{\"$currentDate\": {\"d\": {\"$type\": \"x\"}}}", 2,
	       "The '$type' string field is required to be 'date' or 'timestamp': "
	       "{$currentDate: {field : {$type: 'date'}}}");
	TU_ERR("{\"_id\": 1}", "{\"$currentDate\": {\"d\": 1}}", 2,
	       "int is not valid type for $currentDate. Please use a boolean ('true') or a $type "
	       "expression ({$type: 'timestamp/date'}).");
	TU_OK("{\"_id\": 1, \"a\": 13}", "{\"$bit\": {\"a\": {\"and\": 10}}}", "{ \"_id\" : 1, \"a\" : 8 }");
	TU_OK("{\"_id\": 1, \"a\": 13}", "{\"$bit\": {\"a\": {\"or\": 2, \"xor\": 1}}}",
	      "{ \"_id\" : 1, \"a\" : 14 }");
	TU_OK("{\"_id\": 1}", "{\"$bit\": {\"a\": {\"or\": 5}}}", "{ \"_id\" : 1, \"a\" : 5 }");
	TU_ERR("{\"_id\": 1}", "{\"$bit\": {\"a\": {\"nand\": 5}}}", 2,
	       "The $bit modifier only supports 'and', 'or', and 'xor', not 'nand' which is an "
	       "unknown operator: {nand: 5}");
	TU_ERR("{\"_id\": 1, \"a\": 1.5}", "{\"$bit\": {\"a\": {\"and\": 1}}}", 2,
	       "Cannot apply $bit to a value of non-integral type._id: 1 has the field a of "
	       "non-integer type double");
}

static void
test_set_on_insert(void)
{
	uresult_t r = tu_apply_ex("{\"_id\": 1}", "{\"$setOnInsert\": {\"a\": 1}, \"$set\": {\"b\": 2}}",
	                          NULL, -1, true);

	TT_ASSERT(r.json != NULL);
	if (r.json)
		TT_EQ_STR(r.json, "{ \"_id\" : 1, \"a\" : 1, \"b\" : 2 }");
	bson_free(r.json);
	TU_OK("{\"_id\": 1}", "{\"$setOnInsert\": {\"a\": 1}, \"$set\": {\"b\": 2}}",
	      "{ \"_id\" : 1, \"b\" : 2 }");
}

static void
test_parse_errors(void)
{
	TU_ERR("{\"_id\": 1}", "{\"$foo\": {\"a\": 1}}", 9,
	       "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update "
	       "specified as an array");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a\": 1}, \"b\": 2}", 9,
	       "Unknown modifier: b. Expected a valid update modifier or pipeline-style update "
	       "specified as an array");
	TU_ERR("{\"_id\": 1}", "{\"$set\": \"x\"}", 9,
	       "Modifiers operate on fields but we found type string instead. For example: "
	       "{$mod: {<field>: ...}} not {$set: \"x\"}");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a\": 1, \"a.b\": 2}}", 40,
	       "Updating the path 'a.b' would create a conflict at 'a'");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a.b\": 1}, \"$inc\": {\"a\": 2}}", 40,
	       "Updating the path 'a' would create a conflict at 'a'");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a..b\": 1}}", 56,
	       "The update path 'a..b' contains an empty field name, which is not allowed.");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"\": 1}}", 56, "An empty update path is not valid.");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"$.a\": 1}}", 2,
	       "Cannot have positional (i.e. '$') element in the first position in path '$.a'");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a.$.b.$\": 1}}", 2,
	       "Too many positional (i.e. '$') elements found in path 'a.$.b.$'");
}

static void
test_id_immutable(void)
{
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"_id\": 2}}", 66,
	       "Performing an update on the path '_id' would modify the immutable field '_id'");
	TU_NOOP("{\"_id\": 1}", "{\"$set\": {\"_id\": 1}}");
	TU_ERR("{\"_id\": 1}", "{\"$unset\": {\"_id\": 1}}", 66,
	       "Performing an update on the path '_id' would modify the immutable field '_id'");
	TU_ERR("{\"_id\": {\"a\": 1}}", "{\"$inc\": {\"_id.a\": 1}}", 66,
	       "Performing an update on the path '_id.a' would modify the immutable field '_id'");
}

static void
test_push(void)
{
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$push\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : [ 1, 2 ] }");
	TU_OK("{\"_id\": 1}", "{\"$push\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : [ 2 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$push\": {\"a\": [2, 3]}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, [ 2, 3 ] ] }");
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$push\": {\"a\": {\"$each\": [2, 3]}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 2, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$push\": {\"a\": {\"$each\": [9], \"$position\": 1}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 9, 2, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$push\": {\"a\": {\"$each\": [9], \"$position\": -1}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 2, 9, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$push\": {\"a\": {\"$each\": [9], \"$position\": -10}}}",
	      "{ \"_id\" : 1, \"a\" : [ 9, 1, 2, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [3, 1]}", "{\"$push\": {\"a\": {\"$each\": [2], \"$sort\": 1}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 2, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [3, 1]}", "{\"$push\": {\"a\": {\"$each\": [2], \"$sort\": -1, \"$slice\": 2}}}",
	      "{ \"_id\" : 1, \"a\" : [ 3, 2 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$push\": {\"a\": {\"$each\": [4], \"$slice\": -2}}}",
	      "{ \"_id\" : 1, \"a\" : [ 3, 4 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$push\": {\"a\": {\"$each\": [], \"$slice\": 0}}}",
	      "{ \"_id\" : 1, \"a\" : [  ] }");
	TU_OK("{\"_id\": 1, \"a\": [{\"s\": 2, \"n\": \"b\"}, {\"s\": 1, \"n\": \"a\"}, {\"n\": \"z\"}]}",
	      "{\"$push\": {\"a\": {\"$each\": [{\"s\": 3, \"n\": \"c\"}], \"$sort\": {\"s\": 1}}}}",
	      "{ \"_id\" : 1, \"a\" : [ { \"n\" : \"z\" }, { \"s\" : 1, \"n\" : \"a\" }, "
	      "{ \"s\" : 2, \"n\" : \"b\" }, { \"s\" : 3, \"n\" : \"c\" } ] }");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"$push\": {\"a\": 2}}", 2,
	       "The field 'a' must be an array but is of type int in document {_id: 1}");
	TU_ERR("{\"_id\": 1}", "{\"$push\": {\"a\": {\"$each\": 1}}}", 2,
	       "The argument to $each in $push must be an array but it was of type: int");
	TU_ERR("{\"_id\": 1}", "{\"$push\": {\"a\": {\"$each\": [], \"$foo\": 1}}}", 2,
	       "Unrecognized clause in $push: $foo");
	TU_ERR("{\"_id\": 1}", "{\"$push\": {\"a\": {\"$each\": [], \"$sort\": 2}}}", 2,
	       "The $sort element value must be either 1 or -1");
	TU_ERR("{\"_id\": 1}", "{\"$push\": {\"a\": {\"$each\": [], \"$slice\": \"x\"}}}", 2,
	       "The value for $slice must be an integer value but was given type: string");
}

static void
test_add_to_set_pop_pull(void)
{
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$addToSet\": {\"a\": 2}}", "{ \"_id\" : 1, \"a\" : [ 1, 2 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1]}", "{\"$addToSet\": {\"a\": {\"$each\": [1, 2, 2, 3]}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 2, 3 ] }");
	TU_OK("{\"_id\": 1}", "{\"$addToSet\": {\"a\": {\"$each\": [1, 1]}}}", "{ \"_id\" : 1, \"a\" : [ 1 ] }");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"$addToSet\": {\"a\": 2}}", 2,
	       "Cannot apply $addToSet to non-array field. Field named 'a' has non-array type int");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$pop\": {\"a\": 1}}", "{ \"_id\" : 1, \"a\" : [ 1, 2 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$pop\": {\"a\": -1}}", "{ \"_id\" : 1, \"a\" : [ 2, 3 ] }");
	TU_ERR("{\"_id\": 1, \"a\": [1]}", "{\"$pop\": {\"a\": 2}}", 9, "$pop expects 1 or -1, found: 2");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"$pop\": {\"a\": 1}}", 14,
	       "Path 'a' contains an element of non-array type 'int'");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 1, 3]}", "{\"$pull\": {\"a\": 1}}", "{ \"_id\" : 1, \"a\" : [ 2, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 5, 7, 3]}", "{\"$pull\": {\"a\": {\"$gte\": 5}}}",
	      "{ \"_id\" : 1, \"a\" : [ 1, 3 ] }");
	TU_OK("{\"_id\": 1, \"a\": [{\"x\": 1, \"y\": 2}, {\"x\": 2}]}", "{\"$pull\": {\"a\": {\"x\": 1}}}",
	      "{ \"_id\" : 1, \"a\" : [ { \"x\" : 2 } ] }");
	TU_OK("{\"_id\": 1, \"a\": [{\"x\": 1}, {\"x\": 5}]}", "{\"$pull\": {\"a\": {\"x\": {\"$gt\": 2}}}}",
	      "{ \"_id\" : 1, \"a\" : [ { \"x\" : 1 } ] }");
	TU_OK("{\"_id\": 1, \"a\": [\"ab\", \"cd\"]}", "{\"$pull\": {\"a\": {\"$regex\": \"^a\"}}}",
	      "{ \"_id\" : 1, \"a\" : [ \"cd\" ] }");
	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3, 1]}", "{\"$pullAll\": {\"a\": [1, 3]}}",
	      "{ \"_id\" : 1, \"a\" : [ 2 ] }");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"$pull\": {\"a\": 1}}", 2, "Cannot apply $pull to a non-array value");
	TU_ERR("{\"_id\": 1}", "{\"$pullAll\": {\"a\": 1}}", 2,
	       "$pullAll requires an array argument but was given a int");
}

static void
test_positional(void)
{
	uresult_t r;

	r = tu_apply_ex("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$set\": {\"a.$\": 9}}", NULL, 1, false);
	TT_ASSERT(r.json && strcmp(r.json, "{ \"_id\" : 1, \"a\" : [ 1, 9, 3 ] }") == 0);
	bson_free(r.json);
	r = tu_apply_ex("{\"_id\": 1, \"a\": [{\"b\": 1}, {\"b\": 2}]}", "{\"$inc\": {\"a.$.b\": 10}}",
	                NULL, 1, false);
	TT_ASSERT(r.json && strcmp(r.json, "{ \"_id\" : 1, \"a\" : [ { \"b\" : 1 }, { \"b\" : 12 } ] }") == 0);
	bson_free(r.json);
	r = tu_apply_ex("{\"_id\": 1, \"a\": [1]}", "{\"$set\": {\"a.$\": 9}}", NULL, -1, false);
	TT_EQ_INT(r.code, 2);
	TT_EQ_STR(r.msg, "The positional operator did not find the match needed from the query.");
	bson_free(r.json);
}

static void
test_all_positional_and_filters(void)
{
	uresult_t r;

	TU_OK("{\"_id\": 1, \"a\": [1, 2, 3]}", "{\"$inc\": {\"a.$[]\": 1}}",
	      "{ \"_id\" : 1, \"a\" : [ 2, 3, 4 ] }");
	TU_OK("{\"_id\": 1, \"a\": [{\"b\": [1, 2]}, {\"b\": [3]}]}", "{\"$inc\": {\"a.$[].b.$[]\": 10}}",
	      "{ \"_id\" : 1, \"a\" : [ { \"b\" : [ 11, 12 ] }, { \"b\" : [ 13 ] } ] }");
	r = tu_apply_ex("{\"_id\": 1, \"a\": [1, 5, 7]}", "{\"$set\": {\"a.$[x]\": 0}}",
	                "[{\"x\": {\"$gte\": 5}}]", -1, false);
	TT_ASSERT(r.json && strcmp(r.json, "{ \"_id\" : 1, \"a\" : [ 1, 0, 0 ] }") == 0);
	bson_free(r.json);
	r = tu_apply_ex("{\"_id\": 1, \"g\": [{\"s\": 80, \"m\": 1}, {\"s\": 90, \"m\": 2}]}",
	                "{\"$set\": {\"g.$[e].ok\": true}}", "[{\"e.s\": {\"$gte\": 85}}]", -1, false);
	TT_ASSERT(r.json && strcmp(r.json, "{ \"_id\" : 1, \"g\" : [ { \"s\" : 80, \"m\" : 1 }, "
	                                   "{ \"s\" : 90, \"m\" : 2, \"ok\" : true } ] }") == 0);
	bson_free(r.json);
	r = tu_apply_ex("{\"_id\": 1, \"a\": [1]}", "{\"$set\": {\"a.$[y]\": 0}}",
	                "[{\"x\": 1}]", -1, false);
	TT_EQ_INT(r.code, 2);
	TT_EQ_STR(r.msg, "No array filter found for identifier 'y' in path 'a.$[y]'");
	r = tu_apply_ex("{\"_id\": 1, \"a\": [1]}", "{\"$set\": {\"a.$[]\": 0}}", "[{\"x\": 1}]", -1, false);
	TT_EQ_INT(r.code, 9);
	TT_EQ_STR(r.msg, "The array filter for identifier 'x' was not used in the update "
	                 "{ $set: { a.$[]: 0 } }");
	TU_ERR("{\"_id\": 1}", "{\"$set\": {\"a.$[]\": 0}}", 2,
	       "The path 'a' must exist in the document in order to apply array updates.");
	/* two filters matching one element: children merged in MongoDB's order */
	r = tu_apply_ex("{\"_id\": 1, \"a\": [{\"v\": 1}, {\"v\": 5}]}",
	                "{\"$set\": {\"a.$[x].z\": 1, \"a.$[y].b\": 2}}",
	                "[{\"x.v\": {\"$gte\": 1}}, {\"y.v\": {\"$gte\": 5}}]", -1, false);
	TT_ASSERT(r.json && strcmp(r.json, "{ \"_id\" : 1, \"a\" : [ { \"v\" : 1, \"z\" : 1 }, "
	                                   "{ \"v\" : 5, \"b\" : 2, \"z\" : 1 } ] }") == 0);
	if (r.json == NULL || strstr(r.json, "\"b\" : 2, \"z\"") == NULL)
		TT_FAIL_("merge order: %s", r.json ? r.json : r.msg);
	bson_free(r.json);
	r = tu_apply_ex("{\"_id\": 1, \"a\": [5]}", "{\"$set\": {\"a.$[x]\": 1, \"a.$[y]\": 2}}",
	                "[{\"x\": 5}, {\"y\": 5}]", -1, false);
	TT_EQ_INT(r.code, 40);
	TT_EQ_STR(r.msg, "Update created a conflict at 'a.0'");
	bson_free(r.json);
	TU_ERR("{\"_id\": 1, \"x\": {}}", "{\"$set\": {\"x.a.$[]\": 0}}", 2,
	       "The path 'a' must exist in the document in order to apply array updates.");
	TU_ERR("{\"_id\": 1, \"a\": 5}", "{\"$set\": {\"a.$[]\": 0}}", 2,
	       "Cannot apply array updates to non-array element a: 5");
}

static void
test_replacement(void)
{
	TU_OK("{\"_id\": 1, \"a\": 1}", "{\"b\": 2}", "{ \"_id\" : 1, \"b\" : 2 }");
	TU_OK("{\"_id\": 1, \"a\": 1}", "{\"b\": 2, \"_id\": 1}", "{ \"_id\" : 1, \"b\" : 2 }");
	TU_OK("{\"_id\": 1, \"a\": 1}", "{}", "{ \"_id\" : 1 }");
	TU_NOOP("{\"_id\": 1, \"a\": 1}", "{\"_id\": 1, \"a\": 1}");
	{
		/* mongod compares the replacement as given: without _id it differs */
		uresult_t r = tu_apply("{\"_id\": 1, \"a\": 1}", "{\"a\": 1}");
		TT_ASSERT(r.json != NULL && r.modified);
		if (r.json)
			TT_EQ_STR(r.json, "{ \"_id\" : 1, \"a\" : 1 }");
		bson_free(r.json);
	}
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"_id\": 2}", 66,
	       "After applying the update, the (immutable) field '_id' was found to have been "
	       "altered to _id: 2");
	TU_ERR("{\"_id\": 1, \"a\": 1}", "{\"a\": 1, \"$b\": 2}", 52,
	       "The dollar ($) prefixed field '$b' in '$b' is not allowed in the context of an "
	       "update's replacement document. Consider using an aggregation pipeline with "
	       "$replaceWith.");
	/* nested $-prefixed fields are allowed since 5.0 */
	TU_OK("{\"_id\": 1}", "{\"a\": {\"$b\": 2}}", "{ \"_id\" : 1, \"a\" : { \"$b\" : 2 } }");
}

static void
test_subset_seed(void)
{
	/* the subset pattern: keep the 3 latest reviews */
	TU_OK("{\"_id\": 26, \"recentReviews\": ["
	      "{\"n\": \"Linus Torvalds\", \"reviewedAt\": {\"$date\": \"2026-06-30T10:00:00Z\"}},"
	      "{\"n\": \"Adele Goldberg\", \"reviewedAt\": {\"$date\": \"2026-05-04T01:49:15Z\"}},"
	      "{\"n\": \"Old\", \"reviewedAt\": {\"$date\": \"2025-01-01T00:00:00Z\"}}]}",
	      "{\"$push\": {\"recentReviews\": {\"$each\": [{\"n\": \"Ada Lovelace\", \"reviewedAt\": "
	      "{\"$date\": \"2026-06-30T12:00:00Z\"}}], \"$sort\": {\"reviewedAt\": -1}, \"$slice\": 3}}}",
	      "{ \"_id\" : 26, \"recentReviews\" : [ "
	      "{ \"n\" : \"Ada Lovelace\", \"reviewedAt\" : { \"$date\" : \"2026-06-30T12:00:00Z\" } }, "
	      "{ \"n\" : \"Linus Torvalds\", \"reviewedAt\" : { \"$date\" : \"2026-06-30T10:00:00Z\" } }, "
	      "{ \"n\" : \"Adele Goldberg\", \"reviewedAt\" : { \"$date\" : \"2026-05-04T01:49:15Z\" } } ] }");
}

static void
test_size_limit(void)
{
	/* a 9 MB string pushed twice exceeds 16 MiB */
	size_t n = 9 * 1024 * 1024;
	char *big = bson_malloc(n + 1);
	bson_t *d = tt_json("{\"_id\": 1}");
	bson_t u, set;
	update_t *up = NULL;
	bson_t out;
	bool mod;
	terr_t err = TERR_INIT;
	bson_value_t uv;

	memset(big, 'x', n);
	big[n] = '\0';
	bson_init(&u);
	bson_append_document_begin(&u, "$set", -1, &set);
	bson_append_utf8(&set, "a", -1, big, (int)n);
	bson_append_utf8(&set, "b", -1, big, (int)n);
	bson_append_document_end(&u, &set);
	uv.value_type = BSON_TYPE_DOCUMENT;
	uv.value.v_doc.data = (uint8_t *)bson_get_data(&u);
	uv.value.v_doc.data_len = u.len;
	TT_ASSERT(update_compile(&uv, NULL, &up, &err) == 0);
	TT_ASSERT(update_apply(up, d, NULL, &out, &mod, &err) != 0);
	TT_EQ_INT(err.code, 10334);
	TT_EQ_STR(err.msg, "Resulting document after update is larger than 16777216");
	terr_clear(&err);
	update_free(up);
	bson_destroy(&u);
	bson_destroy(d);
	bson_free(big);
}

static void
test_kinds(void)
{
	static const struct { const char *u; update_kind_t kind; bool pos; } rows[] = {
		{"{\"$set\": {\"a\": 1}}", UPDATE_KIND_OPERATORS, false},
		{"{\"$set\": {\"a.$.b\": 1}}", UPDATE_KIND_OPERATORS, true},
		{"{\"a\": 1}", UPDATE_KIND_REPLACEMENT, false},
		{"{}", UPDATE_KIND_REPLACEMENT, false},
		{"[{\"$set\": {\"a\": 1}}]", UPDATE_KIND_PIPELINE, false},
	};

	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		char *w = bson_strdup_printf("{\"u\": %s}", rows[i].u);
		bson_t *b = tt_json(w);
		bson_iter_t it;
		update_t *up = NULL;
		terr_t err = TERR_INIT;

		bson_iter_init_find(&it, b, "u");
		TT_ASSERT(update_compile(bson_iter_value(&it), NULL, &up, &err) == 0);
		if (up != NULL) {
			TT_EQ_INT(update_kind(up), rows[i].kind);
			TT_EQ_INT(update_is_replacement(up), rows[i].kind == UPDATE_KIND_REPLACEMENT);
			TT_EQ_INT(update_uses_positional(up), rows[i].pos);
		}
		update_free(up);
		bson_destroy(b);
		bson_free(w);
	}
	{
		bson_value_t v = {.value_type = BSON_TYPE_INT32};
		update_t *up = NULL;
		terr_t err = TERR_INIT;

		TT_ASSERT(update_compile(&v, NULL, &up, &err) != 0 && err.code == 9 && up == NULL);
		terr_clear(&err);
	}
}

int
main(void)
{
	TT_RUN(test_kinds);
	TT_RUN(test_set_basic);
	TT_RUN(test_set_noop);
	TT_RUN(test_set_arrays);
	TT_RUN(test_unset);
	TT_RUN(test_inc_mul);
	TT_RUN(test_min_max);
	TT_RUN(test_rename);
	TT_RUN(test_current_date_bit);
	TT_RUN(test_set_on_insert);
	TT_RUN(test_parse_errors);
	TT_RUN(test_id_immutable);
	TT_RUN(test_push);
	TT_RUN(test_add_to_set_pop_pull);
	TT_RUN(test_positional);
	TT_RUN(test_all_positional_and_filters);
	TT_RUN(test_replacement);
	TT_RUN(test_subset_seed);
	TT_RUN(test_size_limit);
	return tt_finish();
}
