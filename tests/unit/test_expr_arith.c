/*
 * test_expr_arith.c -- arithmetic expressions: result types and values
 * exactly as mongod (widening, decimals, dates), error codes and messages.
 */
#include "test_expr_util.h"

#define NL(x) "{\"$numberLong\": \"" x "\"}"
#define ND(x) "{\"$numberDecimal\": \"" x "\"}"
#define DT(x) "{\"$date\": {\"$numberLong\": \"" x "\"}}"

static void
test_add(void)
{
	TX("{\"$add\": [1, 2]}", NULL, RI("3"));
	TX("{\"$add\": []}", NULL, RI("0"));
	TX("{\"$add\": [2147483647, 1]}", NULL, RL("2147483648"));
	TX("{\"$add\": [" NL("1") ", 2]}", NULL, RL("3"));
	TX("{\"$add\": [" NL("9223372036854775807") ", 1]}", NULL, RD("9.223372036854776e+18"));
	TX("{\"$add\": [1, 1.5]}", NULL, RD("2.5"));
	TX("{\"$add\": [1, " ND("1.5") "]}", NULL, RDEC("2.5"));
	TX("{\"$add\": [0.1, " ND("1") "]}", NULL, RDEC("1.100000000000000"));
	TX("{\"$add\": [\"$a\", 1]}", "{\"a\": 5}", RI("6"));
	TX("{\"$add\": [\"$missing\", 1]}", "{}", RJ("null"));
	TX("{\"$add\": [null, \"x\"]}", NULL, RJ("null"));
	TX("{\"$add\": [" DT("1000") ", 5]}", NULL, RDATE("1005"));
	TX("{\"$add\": [5, " DT("1000") ", 2.6]}", NULL, RDATE("1008"));
	TXERR("{\"$add\": [1, \"x\"]}", NULL, "ERR 14 $add only supports numeric or date types, not string");
	TXERR("{\"$add\": [" DT("1") ", " DT("2") "]}", NULL, "ERR 16612 only one date allowed in an $add expression");
	TXERR("{\"$add\": [" DT("9223372036854775807") ", 1]}", NULL, "ERR 15 date overflow");
}

static void
test_subtract(void)
{
	TX("{\"$subtract\": [5, 3]}", NULL, RI("2"));
	TX("{\"$subtract\": [-2147483648, 1]}", NULL, RL("-2147483649"));
	TX("{\"$subtract\": [" NL("-9223372036854775808") ", 1]}", NULL, RD("-9.223372036854776e+18"));
	TX("{\"$subtract\": [" DT("5000") ", " DT("1000") "]}", NULL, RL("4000"));
	TX("{\"$subtract\": [" DT("5000") ", 1000]}", NULL, RDATE("4000"));
	TX("{\"$subtract\": [" ND("5.5") ", 1]}", NULL, RDEC("4.5"));
	TX("{\"$subtract\": [null, 1]}", NULL, RJ("null"));
	TXERR("{\"$subtract\": [1, " DT("5") "]}", NULL, "ERR 14 can't $subtract date from int");
	TXERR("{\"$subtract\": [" DT("5") ", \"a\"]}", NULL, "ERR 14 can't $subtract string from Date");
	TXERR("{\"$subtract\": [1]}", NULL, "ERR 16020 Expression $subtract takes exactly 2 arguments. 1 were passed in.");
	TXERR("{\"$subtract\": [1, 2, 3]}", NULL,
	      "ERR 16020 Expression $subtract takes exactly 2 arguments. 3 were passed in.");
}

static void
test_multiply_divide_mod(void)
{
	TX("{\"$multiply\": [3, 4]}", NULL, RI("12"));
	TX("{\"$multiply\": [65536, 65536]}", NULL, RL("4294967296"));
	TX("{\"$multiply\": [" NL("4294967296") ", " NL("4294967296") "]}", NULL, RD("1.8446744073709552e+19"));
	TX("{\"$multiply\": [2, 1.5]}", NULL, RD("3.0"));
	TX("{\"$multiply\": [" ND("1.10") ", 2]}", NULL, RDEC("2.20"));
	TXERR("{\"$multiply\": [2, true]}", NULL, "ERR 14 $multiply only supports numeric types, not bool");
	TX("{\"$divide\": [10, 4]}", NULL, RD("2.5"));
	TX("{\"$divide\": [10, 5]}", NULL, RD("2.0"));
	TX("{\"$divide\": [" ND("10") ", 4]}", NULL, RDEC("2.5"));
	TX("{\"$divide\": [" ND("1") ", 3]}", NULL, RDEC("0.3333333333333333333333333333333333"));
	TX("{\"$divide\": [" ND("2") ", 3]}", NULL, RDEC("0.6666666666666666666666666666666667"));
	TXERR("{\"$divide\": [1, 0]}", NULL, "ERR 2 can't $divide by zero");
	TXERR("{\"$divide\": [\"$a\", \"$b\"]}", "{\"a\": 1, \"b\": 0.0}", "ERR 2 can't $divide by zero");
	TXERR("{\"$divide\": [1, " ND("0") "]}", NULL, "ERR 2 can't $divide by zero");
	TXERR("{\"$divide\": [\"a\", 1]}", NULL, "ERR 14 $divide only supports numeric types, not string and int");
	TX("{\"$divide\": [null, 1]}", NULL, RJ("null"));
	TX("{\"$mod\": [10, 3]}", NULL, RI("1"));
	TX("{\"$mod\": [-10, 3]}", NULL, RI("-1"));
	TX("{\"$mod\": [" NL("10") ", 3]}", NULL, RL("1"));
	TX("{\"$mod\": [10.5, 3]}", NULL, RD("1.5"));
	TX("{\"$mod\": [" ND("10.5") ", 3]}", NULL, RDEC("1.5"));
	TX("{\"$mod\": [-2147483648, -1]}", NULL, RI("0"));
	TXERR("{\"$mod\": [1, 0]}", NULL, "ERR 16610 can't $mod by zero");
	TXERR("{\"$mod\": [1, " ND("0") "]}", NULL, "ERR 5733415 can't $mod by zero");
	TXERR("{\"$mod\": [1, \"a\"]}", NULL, "ERR 16611 $mod only supports numeric types, not int and string");
}

static void
test_unary(void)
{
	TX("{\"$abs\": -5}", NULL, RI("5"));
	TX("{\"$abs\": -2147483648}", NULL, RL("2147483648"));
	TX("{\"$abs\": -2.5}", NULL, RD("2.5"));
	TX("{\"$abs\": " ND("-2.50") "}", NULL, RDEC("2.50"));
	TX("{\"$abs\": null}", NULL, RJ("null"));
	TXERR("{\"$abs\": " NL("-9223372036854775808") "}", NULL, "ERR 28680 can't take $abs of long long min");
	TXERR("{\"$abs\": \"x\"}", NULL, "ERR 28765 $abs only supports numeric types, not string");
	TX("{\"$ceil\": 1.2}", NULL, RD("2.0"));
	TX("{\"$floor\": -1.2}", NULL, RD("-2.0"));
	TX("{\"$floor\": 7}", NULL, RI("7"));
	TX("{\"$ceil\": " ND("1.01") "}", NULL, RDEC("2"));
	TX("{\"$floor\": " ND("-1.01") "}", NULL, RDEC("-2"));
	TX("{\"$sqrt\": 16}", NULL, RD("4.0"));
	TXERR("{\"$sqrt\": -1}", NULL, "ERR 28714 $sqrt's argument must be greater than or equal to 0");
	TX("{\"$exp\": 0}", NULL, RD("1.0"));
	TX("{\"$ln\": 1}", NULL, RD("0.0"));
	TXERR("{\"$ln\": 0}", NULL, "ERR 28766 $ln's argument must be a positive number, but is 0");
	TX("{\"$log10\": 1000}", NULL, RD("3.0"));
	TXERR("{\"$log10\": -1}", NULL, "ERR 28761 $log10's argument must be a positive number, but is -1");
	TX("{\"$log\": [8, 2]}", NULL, RD("3.0"));
	TXERR("{\"$log\": [8, 1]}", NULL, "ERR 28759 $log's base must be a positive number not equal to 1, but is 1");
	TXERR("{\"$log\": [\"a\", 1]}", NULL, "ERR 28756 $log's argument must be numeric, not string");
	TX("{\"$exp\": " ND("1") "}", NULL, RDEC("2.718281828459045235360287471352662"));
	TX("{\"$exp\": " ND("0") "}", NULL, RDEC("1"));
	TX("{\"$ln\": " ND("10") "}", NULL, RDEC("2.302585092994045684017991454684364"));
	TX("{\"$ln\": " ND("1") "}", NULL, RDEC("0"));
	TXERR("{\"$ln\": " ND("-1") "}", NULL, "ERR 28766 $ln's argument must be a positive number, but is -1");
	TX("{\"$log10\": " ND("1000") "}", NULL, RDEC("3"));
	TX("{\"$log10\": " ND("2") "}", NULL, RDEC("0.3010299956639811952137388947244930"));
	TX("{\"$log\": [" ND("8") ", 2]}", NULL, RDEC("3.000000000000000000000000000000000"));
	/* $round / $trunc / $floor of decimals keep mongod's quantize exponent */
	TX("{\"$round\": [" ND("1.298") ", 33]}", NULL, RDEC("1.298000000000000000000000000000000"));
	TX("{\"$trunc\": [" ND("5") ", 2]}", NULL, RDEC("5.00"));
	TX("{\"$floor\": " ND("1E+2") "}", NULL, RDEC("100"));
	TX("{\"$round\": [" ND("12345678901234567890") ", 20]}", NULL, RDEC("NaN"));
	TX("{\"$round\": [" ND("Infinity") ", 2]}", NULL, RDEC("Infinity"));
	/* decimal powers (issue 22): mongod's Decimal128::power adds 0E-6176 to
	 * the result, 34 digits (log_exponential_expressions.js) */
	TX("{\"$pow\": [" ND("2") ", 2]}", NULL, RDEC("4.000000000000000000000000000000000"));
	TX("{\"$pow\": [" ND("2") ", 10]}", NULL, RDEC("1024.000000000000000000000000000000"));
	TX("{\"$pow\": [" ND("2") ", -2]}", NULL, RDEC("0.2500000000000000000000000000000000"));
	TX("{\"$pow\": [2, " ND("3") "]}", NULL, RDEC("8.000000000000000000000000000000000"));
	TX("{\"$pow\": [" ND("-8") ", " ND("0.5") "]}", NULL, RDEC("NaN"));
	TX("{\"$sqrt\": " ND("16") "}", NULL, RDEC("4"));
	TX("{\"$sqrt\": " ND("2") "}", NULL, RDEC("1.414213562373095048801688724209698"));
	TX("{\"$sqrt\": " ND("1.44") "}", NULL, RDEC("1.2"));
	TX("{\"$sqrt\": " ND("100") "}", NULL, RDEC("10"));
	TX("{\"$sqrt\": " ND("1E+3") "}", NULL, RDEC("31.62277660168379331998893544432719"));
	TX("{\"$sqrt\": " ND("0.0") "}", NULL, RDEC("0.0"));
	TXERR("{\"$sqrt\": " ND("-1") "}", NULL, "ERR 28714 $sqrt's argument must be greater than or equal to 0");
}

static void
test_pow(void)
{
	TX("{\"$pow\": [2, 10]}", NULL, RI("1024"));
	TX("{\"$pow\": [2, 31]}", NULL, RL("2147483648"));
	TX("{\"$pow\": [2, 63]}", NULL, RD("9.223372036854776e+18"));
	TX("{\"$pow\": [" NL("2") ", 3]}", NULL, RL("8"));
	TX("{\"$pow\": [2, -1]}", NULL, RD("0.5"));
	TX("{\"$pow\": [-1, -3]}", NULL, RI("-1"));
	TX("{\"$pow\": [2, 0.5]}", NULL, RD("1.4142135623730951"));
	TXERR("{\"$pow\": [0, -1]}", NULL, "ERR 28764 $pow cannot take a base of 0 and a negative exponent");
	TXERR("{\"$pow\": [\"a\", 1]}", NULL, "ERR 28762 $pow's base must be numeric, not string");
	TXERR("{\"$pow\": [1, \"a\"]}", NULL, "ERR 28763 $pow's exponent must be numeric, not string");
}

static void
test_round_trunc(void)
{
	TX("{\"$round\": [2.5]}", NULL, RD("2.0"));
	TX("{\"$round\": [3.5]}", NULL, RD("4.0"));
	TX("{\"$round\": [-2.5]}", NULL, RD("-2.0"));
	TX("{\"$round\": [1.2345, 2]}", NULL, RD("1.23"));
	TX("{\"$round\": [2.675, 2]}", NULL, RD("2.67"));
	TX("{\"$round\": [0.125, 2]}", NULL, RD("0.12"));
	TX("{\"$round\": [1234, -2]}", NULL, RI("1200"));
	TX("{\"$round\": [1250, -2]}", NULL, RI("1200"));
	TX("{\"$round\": [1350, -2]}", NULL, RI("1400"));
	TX("{\"$round\": [2147483647, -1]}", NULL, RL("2147483650"));
	TX("{\"$round\": [" NL("15") ", -1]}", NULL, RL("20"));
	TX("{\"$round\": [7, 2]}", NULL, RI("7"));
	TX("{\"$round\": [" ND("1.2345") ", 2]}", NULL, RDEC("1.23"));
	TX("{\"$round\": [" ND("2.5") "]}", NULL, RDEC("2"));
	TX("{\"$round\": [" ND("1234.5") ", -2]}", NULL, RDEC("1.2E+3"));
	TX("{\"$round\": [null, 1]}", NULL, RJ("null"));
	TX("{\"$round\": [1.5, null]}", NULL, RJ("null"));
	TX("{\"$trunc\": [2.7]}", NULL, RD("2.0"));
	TX("{\"$trunc\": [-2.7]}", NULL, RD("-2.0"));
	TX("{\"$trunc\": [1.2399, 2]}", NULL, RD("1.23"));
	TX("{\"$trunc\": [1299, -2]}", NULL, RI("1200"));
	TX("{\"$trunc\": " ND("-2.79") "}", NULL, RDEC("-2"));
	TXERR("{\"$round\": [\"a\"]}", NULL, "ERR 51081 $round only supports numeric types, not string");
	TXERR("{\"$round\": [1, 1.5]}", NULL, "ERR 51082 precision argument to  $round must be a integral value");
	TXERR("{\"$round\": [1, 101]}", NULL,
	      "ERR 51083 cannot apply $round with precision value 101 value must be in [-20, 100]");
	TXERR("{\"$round\": [1, 2, 3]}", NULL,
	      "ERR 28667 Expression $round takes at least 1 arguments, and at most 2, but 3 were passed in.");
}

static void
test_decimal_corners(void)
{
	TX("{\"$add\": [" ND("1.0") ", " ND("2.00") "]}", NULL, RDEC("3.00"));
	TX("{\"$add\": [" ND("9999999999999999999999999999999999") ", 1]}", NULL,
	   RDEC("1.000000000000000000000000000000000E+34"));
	TX("{\"$add\": [" ND("1") ", " ND("1E-10") "]}", NULL, RDEC("1.0000000001"));
	TX("{\"$add\": [" ND("1E+40") ", " ND("1E-40") "]}", NULL, RDEC("1.000000000000000000000000000000000E+40"));
	TX("{\"$subtract\": [" ND("1") ", " ND("1") "]}", NULL, RDEC("0"));
	TX("{\"$multiply\": [" ND("0.1") ", " ND("0.1") "]}", NULL, RDEC("0.01"));
	TX("{\"$multiply\": [" ND("1E+6000") ", " ND("1E+6000") "]}", NULL, RDEC("Infinity"));
	TX("{\"$add\": [" ND("Infinity") ", " ND("-Infinity") "]}", NULL, RDEC("NaN"));
	TX("{\"$divide\": [" ND("1") ", " ND("8") "]}", NULL, RDEC("0.125"));
	TX("{\"$divide\": [" ND("100") ", " ND("10") "]}", NULL, RDEC("10"));
	TX("{\"$divide\": [" ND("1.00") ", " ND("3") "]}", NULL, RDEC("0.3333333333333333333333333333333333"));
	TX("{\"$multiply\": [1.5, " ND("2") "]}", NULL, RDEC("3.00000000000000"));
	TX("{\"$toDecimal\": 0.1}", NULL, RDEC("0.100000000000000"));
}

static void
test_parse_errors(void)
{
	TXERR("{\"$foo\": 1}", NULL, "ERR 168 Unrecognized expression '$foo'");
	TXERR("{\"$add\": 1, \"$b\": 2}", NULL,
	      "ERR 15983 An object representing an expression must have exactly one field: { $add: 1, $b: 2 }");
	TXERR("\"$\"", NULL, "ERR 16872 '$' by itself is not a valid FieldPath");
	TXERR("\"$$x\"", NULL, "ERR 17276 Use of undefined variable: x");
	TXERR("\"$a..b\"", NULL, "ERR 15998 FieldPath field names may not be empty strings.");
	TXERR("\"$a.$b\"", NULL,
	      "ERR 16410 FieldPath field names may not start with '$'. Consider using $getField or $setField.");
	TXERR("{\"a\": 1, \"$b\": 2}", NULL,
	      "ERR 16410 FieldPath field names may not start with '$'. Consider using $getField or $setField.");
	TXERR("{\"a.b\": 1}", NULL, "ERR 16412 FieldPath field names may not contain '.'.");
	TXERR("\"$$\"", NULL, "ERR 16869 empty variable names are not allowed");
}

static void
test_misc(void)
{
	TX("{\"$sin\": 0}", NULL, RD("0.0"));
	TX("{\"$cos\": 0}", NULL, RD("1.0"));
	TX("{\"$acos\": 1}", NULL, RD("0.0"));
	TX("{\"$degreesToRadians\": 180}", NULL, RD("3.141592653589793"));
	TX("{\"$atan2\": [1, 1]}", NULL, RD("0.7853981633974483"));
	TX("{\"$sin\": null}", NULL, RJ("null"));
	TXERR("{\"$acos\": 2}", NULL, "ERR 50989 cannot apply $acos to 2, value must in [-1,1]");
	TXERR("{\"$sin\": \"a\"}", NULL, "ERR 28765 $sin only supports numeric types, not string");
	TX("{\"$bitAnd\": [12, 10]}", NULL, RI("8"));
	TX("{\"$bitOr\": [12, {\"$numberLong\": \"1\"}]}", NULL, RL("13"));
	TX("{\"$bitXor\": [5, 1]}", NULL, RI("4"));
	TX("{\"$bitNot\": 0}", NULL, RI("-1"));
	TXERR("{\"$bitAnd\": [1, 1.5]}", NULL, "ERR 14 $bitAnd only supports int and long operands.");
	TX("{\"$tsSecond\": {\"$timestamp\": {\"t\": 5, \"i\": 7}}}", NULL, RL("5"));
	TX("{\"$tsIncrement\": {\"$timestamp\": {\"t\": 5, \"i\": 7}}}", NULL, RL("7"));
	TX("{\"$binarySize\": \"abc\"}", NULL, RI("3"));
	TX("{\"$bsonSize\": {\"$literal\": {}}}", NULL, RI("5"));
}

int
main(void)
{
	TT_RUN(test_misc);
	TT_RUN(test_add);
	TT_RUN(test_subtract);
	TT_RUN(test_multiply_divide_mod);
	TT_RUN(test_unary);
	TT_RUN(test_pow);
	TT_RUN(test_round_trunc);
	TT_RUN(test_decimal_corners);
	TT_RUN(test_parse_errors);
	return tt_finish();
}
