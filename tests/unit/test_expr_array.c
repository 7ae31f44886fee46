/*
 * test_expr_array.c -- array, set and object operators, including the
 * seed patterns ($objectToArray + $filter + $$this, $mergeObjects).
 */
#include "test_expr_util.h"

#define I(x) "{ \"$numberInt\" : \"" #x "\" }"

static void
test_arrays(void)
{
	TX("{\"$arrayElemAt\": [[1, 2, 3], -1]}", NULL, RI("3"));
	TX("{\"$arrayElemAt\": [[1, 2, 3], 5]}", NULL, "missing");
	TX("{\"$arrayElemAt\": [\"$x\", 0]}", "{}", RJ("null"));
	TXERR("{\"$arrayElemAt\": [1, 0]}", NULL, "ERR 28689 $arrayElemAt's first argument must be an array, but is int");
	TXERR("{\"$arrayElemAt\": [[1], 1.5]}", NULL,
	      "ERR 28691 $arrayElemAt's second argument must be representable as a 32-bit integer: 1.5");
	TX("{\"$first\": [[4, 5]]}", NULL, RI("4"));
	TX("{\"$last\": [[4, 5]]}", NULL, RI("5"));
	TX("{\"$first\": [[]]}", NULL, "missing");
	TX("{\"$concatArrays\": [[1], [2, 3]]}", NULL, RJ("[ " I(1) ", " I(2) ", " I(3) " ]"));
	TX("{\"$concatArrays\": [[1], null]}", NULL, RJ("null"));
	TXERR("{\"$concatArrays\": [[1], 2]}", NULL, "ERR 28664 $concatArrays only supports arrays, not int");
	TX("{\"$in\": [2, [1, 2]]}", NULL, RJ("true"));
	TX("{\"$in\": [2.0, [1, 2]]}", NULL, RJ("true"));
	TX("{\"$in\": [\"$x\", [null]]}", "{}", RJ("false"));
	TXERR("{\"$in\": [1, \"$x\"]}", "{}", "ERR 40081 $in requires an array as a second argument, found: missing");
	TX("{\"$indexOfArray\": [[1, 2, 1], 1, 1]}", NULL, RI("2"));
	TX("{\"$indexOfArray\": [[1, 2], 3]}", NULL, RI("-1"));
	TXERR("{\"$indexOfArray\": [[1, 2], 3, -1]}", NULL,
	      "ERR 9711601 $indexOfArray requires a nonnegative starting index, found: -1");
	TXERR("{\"$slice\": [[1], 1.5]}", NULL, "ERR 28726 Second argument to $slice can't be represented as a 32-bit integer: 1.5");
	TX("{\"$isArray\": [[1]]}", NULL, RJ("true"));
	TX("{\"$isArray\": \"$x\"}", "{\"x\": 1}", RJ("false"));
	TX("{\"$range\": [0, 10, 3]}", NULL, RJ("[ " I(0) ", " I(3) ", " I(6) ", " I(9) " ]"));
	TX("{\"$range\": [5, 0, -2]}", NULL, RJ("[ " I(5) ", " I(3) ", " I(1) " ]"));
	TX("{\"$range\": [0, 5, -1]}", NULL, RJ("[  ]"));
	TXERR("{\"$range\": [0, 5, 0]}", NULL, "ERR 34449 $range requires a non-zero step value");
	TX("{\"$reverseArray\": [[1, 2]]}", NULL, RJ("[ " I(2) ", " I(1) " ]"));
	TX("{\"$size\": [[1, 2]]}", NULL, RI("2"));
	TXERR("{\"$size\": \"$x\"}", "{}", "ERR 17124 The argument to $size must be an array, but was of type: missing");
	TX("{\"$slice\": [[1, 2, 3, 4], 2]}", NULL, RJ("[ " I(1) ", " I(2) " ]"));
	TX("{\"$slice\": [[1, 2, 3, 4], -2]}", NULL, RJ("[ " I(3) ", " I(4) " ]"));
	TX("{\"$slice\": [[1, 2, 3, 4], 1, 2]}", NULL, RJ("[ " I(2) ", " I(3) " ]"));
	TX("{\"$slice\": [[1, 2, 3, 4], -3, 2]}", NULL, RJ("[ " I(2) ", " I(3) " ]"));
	TXERR("{\"$slice\": [[1], 0, 0]}", NULL, "ERR 28729 Third argument to $slice must be positive: 0");
	TX("{\"$zip\": {\"inputs\": [[1, 2], [3]]}}", NULL, RJ("[ [ " I(1) ", " I(3) " ] ]"));
	TX("{\"$zip\": {\"inputs\": [[1, 2], [3]], \"useLongestLength\": true, \"defaults\": [0, 9]}}", NULL,
	   RJ("[ [ " I(1) ", " I(3) " ], [ " I(2) ", " I(9) " ] ]"));
	TXERR("{\"$sortArray\": {\"input\": [3, 1, 2], \"sortBy\": 2}}", NULL,
	      "ERR 2942506 The $sort element value must be either 1 or -1");
	TX("{\"$sortArray\": {\"input\": [3, 1, 2], \"sortBy\": -1}}", NULL, RJ("[ " I(3) ", " I(2) ", " I(1) " ]"));
	TX("{\"$sortArray\": {\"input\": [{\"a\": 2}, {\"a\": 1}], \"sortBy\": {\"a\": 1}}}", NULL,
	   RJ("[ { \"a\" : " I(1) " }, { \"a\" : " I(2) " } ]"));
	TX("{\"$allElementsTrue\": [[1, true, \"\"]]}", NULL, RJ("true"));
	TX("{\"$anyElementTrue\": [[0, false, null]]}", NULL, RJ("false"));
}

static void
test_map_filter_reduce(void)
{
	TX("{\"$map\": {\"input\": [1, 2], \"in\": {\"$multiply\": [\"$$this\", 10]}}}", NULL,
	   RJ("[ " I(10) ", " I(20) " ]"));
	TX("{\"$map\": {\"input\": \"$xs\", \"as\": \"x\", \"in\": {\"$add\": [\"$$x\", \"$k\"]}}}",
	   "{\"xs\": [1, 2], \"k\": 100}", RJ("[ " I(101) ", " I(102) " ]"));
	TX("{\"$map\": {\"input\": null, \"in\": 1}}", NULL, RJ("null"));
	TXERR("{\"$map\": {\"input\": 1, \"in\": 1}}", NULL, "ERR 16883 input to $map must be an array not int");
	TXERR("{\"$map\": {\"input\": [], \"in\": \"$$x\"}}", NULL, "ERR 17276 Use of undefined variable: x");
	TX("{\"$filter\": {\"input\": [1, 5, 2, 8], \"cond\": {\"$gt\": [\"$$this\", 1]}}}", NULL,
	   RJ("[ " I(5) ", " I(2) ", " I(8) " ]"));
	TX("{\"$filter\": {\"input\": [1, 5, 2, 8], \"as\": \"n\", \"cond\": {\"$gt\": [\"$$n\", 1]}, \"limit\": 2}}", NULL,
	   RJ("[ " I(5) ", " I(2) " ]"));
	TXERR("{\"$filter\": {\"input\": [1], \"cond\": true, \"limit\": 0}}", NULL,
	      "ERR 327392 $filter: limit must be greater than 0: 0");
	TXERR("{\"$filter\": {\"input\": [1]}}", NULL, "ERR 28650 Missing 'cond' parameter to $filter");
	TXERR("{\"$filter\": {\"input\": [1], \"cond\": true, \"x\": 1}}", NULL,
	      "ERR 28647 Unrecognized parameter to $filter: x");
	TX("{\"$reduce\": {\"input\": [1, 2, 3], \"initialValue\": 0, \"in\": {\"$add\": [\"$$value\", \"$$this\"]}}}",
	   NULL, RI("6"));
	TX("{\"$reduce\": {\"input\": [\"a\", \"b\"], \"initialValue\": \"\", "
	   "\"in\": {\"$concat\": [\"$$value\", \"$$this\"]}}}", NULL, RS("ab"));
	TX("{\"$reduce\": {\"input\": [[1], [2]], \"initialValue\": [], "
	   "\"in\": {\"$concatArrays\": [\"$$value\", \"$$this\"]}}}", NULL, RJ("[ " I(1) ", " I(2) " ]"));
	TXERR("{\"$reduce\": {\"input\": [1], \"in\": 1}}", NULL,
	      "ERR 40078 $reduce requires 'initialValue' to be specified");
	/* nested: $$this of the inner $map shadows the outer */
	TX("{\"$map\": {\"input\": [[1, 2], [3]], \"in\": {\"$size\": {\"$map\": {\"input\": \"$$this\", "
	   "\"in\": \"$$this\"}}}}}", NULL, RJ("[ " I(2) ", " I(1) " ]"));
	TX("{\"$map\": {\"input\": [{\"a\": 1}, {\"a\": 2}], \"in\": \"$$this.a\"}}", NULL, RJ("[ " I(1) ", " I(2) " ]"));
	/* exponential growth stops at mongod's 64 MB buffer limit instead of eating memory */
	TT_ASSERT(strncmp(tx_eval("{\"$reduce\": {\"input\": {\"$range\": [0, 40]}, \"initialValue\": [1], "
	                          "\"in\": {\"$concatArrays\": [\"$$value\", \"$$value\"]}}}", NULL),
	                  "ERR 13548 BufBuilder attempted to grow() to ", 44) == 0);
	TT_ASSERT(strncmp(tx_eval("{\"$reduce\": {\"input\": {\"$range\": [0, 40]}, \"initialValue\": \"ab\", "
	                          "\"in\": {\"$concat\": [\"$$value\", \"$$value\"]}}}", NULL),
	                  "ERR 13548 BufBuilder attempted to grow() to ", 44) == 0);
}

static void
test_sets(void)
{
	TX("{\"$setEquals\": [[1, 2, 2], [2, 1]]}", NULL, RJ("true"));
	TX("{\"$setEquals\": [[1], [2]]}", NULL, RJ("false"));
	TXERR("{\"$setEquals\": [[1], \"$b\"]}", "{\"b\": 2}",
	      "ERR 17044 All operands of $setEquals must be arrays. 2-th argument is of type: int");
	TXERR("{\"$setEquals\": [[1], 2]}", NULL,
	      "ERR 5887502 All operands of $setEquals must be arrays. 2-th argument is of type: int");
	TXERR("{\"$setEquals\": [[1]]}", NULL, "ERR 17045 $setEquals needs at least two arguments had: 1");
	TXERR("{\"$setIsSubset\": [\"$a\", [1]]}", "{\"a\": 1}",
	      "ERR 17310 both operands of $setIsSubset must be arrays. First argument is of type: int");
	TXERR("{\"$setIsSubset\": [\"$a\", 1]}", "{\"a\": 1}",
	      "ERR 17311 both operands of $setIsSubset must be arrays. Second argument is of type: int");
	TX("{\"$setIntersection\": [[1, 2, 3], [3, 2, 5]]}", NULL, RJ("[ " I(2) ", " I(3) " ]"));
	TX("{\"$setIntersection\": [[1], null]}", NULL, RJ("null"));
	TX("{\"$setUnion\": [[1, 2], [2, 3]]}", NULL, RJ("[ " I(1) ", " I(2) ", " I(3) " ]"));
	TX("{\"$setUnion\": [[3, 1], [2, 1]]}", NULL, RJ("[ " I(1) ", " I(2) ", " I(3) " ]"));
	TX("{\"$setIntersection\": [[3, 1, 2], [2, 3]]}", NULL, RJ("[ " I(2) ", " I(3) " ]"));
	TX("{\"$setUnion\": [null, 1]}", NULL, RJ("null"));
	TX("{\"$setEquals\": [[1], [2], \"$c\"]}", "{\"c\": 3}", RJ("false"));
	TX("{\"$setDifference\": [[1, 2, 3], [2]]}", NULL, RJ("[ " I(1) ", " I(3) " ]"));
	TX("{\"$setIsSubset\": [[1], [1, 2]]}", NULL, RJ("true"));
	TXERR("{\"$setIsSubset\": [[1], 1]}", NULL,
	      "ERR 17042 both operands of $setIsSubset must be arrays. Second argument is of type: int");
}

static void
test_objects(void)
{
	TX("{\"$objectToArray\": \"$o\"}", "{\"o\": {\"a\": 1, \"b\": \"x\"}}",
	   RJ("[ { \"k\" : \"a\", \"v\" : " I(1) " }, { \"k\" : \"b\", \"v\" : \"x\" } ]"));
	TX("{\"$objectToArray\": \"$nope\"}", "{}", RJ("null"));
	TXERR("{\"$objectToArray\": 1}", NULL, "ERR 40390 $objectToArray requires a document input, found: int");
	TX("{\"$arrayToObject\": [[[\"a\", 1], [\"b\", 2], [\"a\", 3]]]}", NULL,
	   RJ("{ \"a\" : " I(3) ", \"b\" : " I(2) " }"));
	TX("{\"$arrayToObject\": [[{\"k\": \"a\", \"v\": 1}]]}", NULL, RJ("{ \"a\" : " I(1) " }"));
	TXERR("{\"$arrayToObject\": [[[\"a\"]]]}", NULL,
	      "ERR 40397 $arrayToObject requires an array of size 2 arrays,found array of size: 1");
	TXERR("{\"$arrayToObject\": [[{\"k\": 1, \"v\": 1}]]}", NULL,
	      "ERR 40394 $arrayToObject requires an object with keys 'k' and 'v', where the value of 'k' must be of "
	      "type string. Found type: int");
	TXERR("{\"$arrayToObject\": [[[\"a\", 1], {\"k\": \"b\", \"v\": 2}]]}", NULL,
	      "ERR 40396 $arrayToObject requires a consistent input format. Elements mustall be arrays or all be "
	      "objects. Array was detected, now found: object");
	TX("{\"$mergeObjects\": [{\"a\": 1, \"b\": 1}, null, {\"b\": 2, \"c\": 3}]}", NULL,
	   RJ("{ \"a\" : " I(1) ", \"b\" : " I(2) ", \"c\" : " I(3) " }"));
	TX("{\"$mergeObjects\": [\"$nope\"]}", "{}", RJ("{  }"));
	TXERR("{\"$mergeObjects\": [1]}", NULL, "ERR 40400 $mergeObjects requires object inputs, but input 1 is of type int");
	TX("{\"$getField\": \"a.b\"}", "{\"a.b\": 5, \"a\": {\"b\": 6}}", RI("5"));
	TX("{\"$getField\": {\"field\": \"x\", \"input\": {\"x\": 2}}}", NULL, RI("2"));
	TX("{\"$getField\": {\"$literal\": \"$x\"}}", "{\"$x\": 3}", RI("3"));
	TX("{\"$getField\": {\"field\": \"x\", \"input\": 5}}", NULL, "missing");
	TX("{\"$getField\": {\"field\": \"x\", \"input\": null}}", NULL, RJ("null"));
	TXERR("{\"$getField\": \"$a\"}", NULL,
	      "ERR 5654600 '$a' is a field path reference which is not allowed in this context. Did you mean "
	      "{$literal: '$a'}?");
	TXERR("{\"$getField\": {\"field\": {\"$concat\": [\"a\", \"b\"]}, \"input\": {}}}", NULL,
	      "ERR 5654601 $getField requires 'field' to evaluate to a constant, but got a non-constant argument");
	TXERR("{\"$getField\": {\"field\": 1, \"input\": {}}}", NULL,
	      "ERR 5654602 $getField requires 'field' to evaluate to type String, but got int");
	TXERR("{\"$getField\": {\"field\": \"a\"}}", NULL, "ERR 3041703 $getField requires 'input' to be specified");
	TXERR("{\"$setField\": {\"field\": \"a\", \"value\": 1}}", NULL,
	      "ERR 4161109 $setField requires 'input' to be specified");
	TXERR("{\"$unsetField\": {\"field\": \"a\", \"input\": {}, \"value\": 1}}", NULL,
	      "ERR 4161101 $unsetField found an unknown argument: value");
	TXERR("{\"$setField\": {\"field\": \"a\", \"input\": 1, \"value\": 1}}", NULL,
	      "ERR 4161105 $setField requires 'input' to evaluate to type Object");
	TX("{\"$setField\": {\"field\": \"b\", \"input\": {\"a\": 1, \"b\": 2}, \"value\": 9}}", NULL,
	   RJ("{ \"a\" : " I(1) ", \"b\" : " I(9) " }"));
	TX("{\"$setField\": {\"field\": \"b\", \"input\": {\"a\": 1, \"b\": 2}, \"value\": \"$$REMOVE\"}}", NULL,
	   RJ("{ \"a\" : " I(1) " }"));
	TX("{\"$unsetField\": {\"field\": \"a\", \"input\": {\"a\": 1, \"b\": 2}}}", NULL, RJ("{ \"b\" : " I(2) " }"));
	/* seed: attribute pattern */
	TX("{\"$filter\": {\"input\": {\"$objectToArray\": \"$$ROOT\"}, "
	   "\"cond\": {\"$not\": {\"$in\": [\"$$this.k\", [\"_id\", \"name\"]]}}}}",
	   "{\"_id\": 1, \"name\": \"n\", \"color\": \"red\", \"size\": 2}",
	   RJ("[ { \"k\" : \"color\", \"v\" : \"red\" }, { \"k\" : \"size\", \"v\" : " I(2) " } ]"));
}

int
main(void)
{
	TT_RUN(test_arrays);
	TT_RUN(test_map_filter_reduce);
	TT_RUN(test_sets);
	TT_RUN(test_objects);
	return tt_finish();
}
