/*
 * test_expr_string.c -- string, regex, type-conversion and date operators.
 */
#include "test_expr_util.h"

#define DT(x) "{\"$date\": {\"$numberLong\": \"" x "\"}}"

static void
test_strings(void)
{
	TX("{\"$concat\": [\"a\", \"$b\", \"c\"]}", "{\"b\": \"B\"}", RS("aBc"));
	TX("{\"$concat\": [\"a\", \"$nope\"]}", "{}", RJ("null"));
	TX("{\"$concat\": []}", NULL, RS(""));
	TXERR("{\"$concat\": [\"a\", 1]}", NULL, "ERR 16702 $concat only supports strings, not int");
	TX("{\"$toLower\": \"AbC\"}", NULL, RS("abc"));
	TX("{\"$toUpper\": \"\\u00e9a\"}", NULL, RS("\xc3\xa9" "A"));
	TX("{\"$toUpper\": 12}", NULL, RS("12"));
	TX("{\"$toLower\": null}", NULL, RS(""));
	TX("{\"$strLenBytes\": \"\\u00e9a\"}", NULL, RI("3"));
	TX("{\"$strLenCP\": \"\\u00e9a\"}", NULL, RI("2"));
	TXERR("{\"$strLenCP\": 1}", NULL, "ERR 34471 $strLenCP requires a string argument, found: int");
	TX("{\"$substrBytes\": [\"hello\", 1, 3]}", NULL, RS("ell"));
	TX("{\"$substr\": [\"hello\", 1, -1]}", NULL, RS("ello"));
	TX("{\"$substrBytes\": [\"hello\", 10, 3]}", NULL, RS(""));
	TXERR("{\"$substr\": [\"hello\", 1]}", NULL,
	      "ERR 16020 Expression $substrBytes takes exactly 3 arguments. 2 were passed in.");
	TXERR("{\"$substrBytes\": [\"\\u00e9\", 1, 1]}", NULL,
	      "ERR 28656 $substrBytes:  Invalid range, starting index is a UTF-8 continuation byte.");
	TX("{\"$substrCP\": [\"h\\u00e9llo\", 1, 2]}", NULL, RS("\xc3\xa9l"));
	TXERR("{\"$substrCP\": [\"abc\", -1, 2]}", NULL, "ERR 34455 $substrCP: the starting index must be nonnegative integer.");
	TX("{\"$split\": [\"a,b,,c\", \",\"]}", NULL, RJ("[ \"a\", \"b\", \"\", \"c\" ]"));
	TX("{\"$split\": [null, \",\"]}", NULL, RJ("null"));
	TXERR("{\"$split\": [\"a\", \"\"]}", NULL, "ERR 40087 $split requires a non-empty separator");
	TX("{\"$trim\": {\"input\": \"  hi \\n\"}}", NULL, RS("hi"));
	TX("{\"$ltrim\": {\"input\": \"xxhixx\", \"chars\": \"x\"}}", NULL, RS("hixx"));
	TX("{\"$rtrim\": {\"input\": \"xxhixy\", \"chars\": \"yx\"}}", NULL, RS("xxhi"));
	TXERR("{\"$trim\": {\"chars\": \"x\"}}", NULL, "ERR 50695 $trim requires an 'input' field");
	TX("{\"$indexOfBytes\": [\"hello\", \"l\"]}", NULL, RI("2"));
	TX("{\"$indexOfBytes\": [\"hello\", \"l\", 3]}", NULL, RI("3"));
	TX("{\"$indexOfBytes\": [\"hello\", \"z\"]}", NULL, RI("-1"));
	TX("{\"$indexOfCP\": [\"h\\u00e9llo\", \"l\"]}", NULL, RI("2"));
	TX("{\"$indexOfBytes\": [\"$x\", \"l\"]}", "{}", RJ("null"));
	TX("{\"$strcasecmp\": [\"ABC\", \"abc\"]}", NULL, RI("0"));
	TX("{\"$strcasecmp\": [\"abd\", \"ABC\"]}", NULL, RI("1"));
	TX("{\"$strcasecmp\": [\"_\", \"a\"]}", NULL, RI("1"));
	TX("{\"$toUpper\": 1.23456789}", NULL, RS("1.23457"));
	TXERR("{\"$indexOfBytes\": [\"abc\", \"b\", -1]}", NULL,
	      "ERR 40097 $indexOfBytes requires a nonnegative starting index, found: -1");
	TXERR("{\"$indexOfCP\": [\"abc\", \"b\", 1.5]}", NULL,
	      "ERR 40096 $indexOfCPrequires an integral starting index, found a value of type: double, with value: 1.5");
	TX("{\"$replaceOne\": {\"input\": \"aXbXc\", \"find\": \"X\", \"replacement\": \"-\"}}", NULL, RS("a-bXc"));
	TX("{\"$replaceAll\": {\"input\": \"aXbXc\", \"find\": \"X\", \"replacement\": \"--\"}}", NULL, RS("a--b--c"));
	TX("{\"$replaceAll\": {\"input\": \"ab\", \"find\": \"\", \"replacement\": \"-\"}}", NULL, RS("-a-b-"));
	TX("{\"$replaceOne\": {\"input\": \"ab\", \"find\": \"\", \"replacement\": \"-\"}}", NULL, RS("-ab"));
	TXERR("{\"$replaceOne\": {\"find\": \"a\", \"replacement\": \"-\"}}", NULL,
	      "ERR 51749 $replaceOne requires 'input' to be specified");
	TXERR("{\"$replaceOne\": {\"input\": \"a\", \"find\": 1, \"replacement\": null}}", NULL,
	      "ERR 51745 $replaceOne requires that 'find' be a string, found: 1");
	TX("{\"$replaceAll\": {\"input\": null, \"find\": \"X\", \"replacement\": \"-\"}}", NULL, RJ("null"));
}

static void
test_regex(void)
{
	TX("{\"$regexMatch\": {\"input\": \"Hello\", \"regex\": \"^h\", \"options\": \"i\"}}", NULL, RJ("true"));
	TX("{\"$regexMatch\": {\"input\": \"Hello\", \"regex\": \"^h\"}}", NULL, RJ("false"));
	TX("{\"$regexMatch\": {\"input\": \"Hello\", \"regex\": {\"$regularExpression\": {\"pattern\": \"L+\", "
	   "\"options\": \"i\"}}}}", NULL, RJ("true"));
	TX("{\"$regexFind\": {\"input\": \"a1b22\", \"regex\": \"([0-9]+)\"}}", NULL,
	   RJ("{ \"match\" : \"1\", \"idx\" : { \"$numberInt\" : \"1\" }, \"captures\" : [ \"1\" ] }"));
	TX("{\"$regexFind\": {\"input\": \"abc\", \"regex\": \"z\"}}", NULL, RJ("null"));
	TX("{\"$regexFindAll\": {\"input\": \"a1b22\", \"regex\": \"[0-9]+\"}}", NULL,
	   RJ("[ { \"match\" : \"1\", \"idx\" : { \"$numberInt\" : \"1\" }, \"captures\" : [  ] }, "
	      "{ \"match\" : \"22\", \"idx\" : { \"$numberInt\" : \"3\" }, \"captures\" : [  ] } ]"));
	TX("{\"$regexFindAll\": {\"input\": \"ab\", \"regex\": \"x*\"}}", NULL,
	   RJ("[ { \"match\" : \"\", \"idx\" : { \"$numberInt\" : \"0\" }, \"captures\" : [  ] }, "
	      "{ \"match\" : \"\", \"idx\" : { \"$numberInt\" : \"1\" }, \"captures\" : [  ] } ]"));
	TX("{\"$regexFindAll\": {\"input\": \"$nope\", \"regex\": \"x\"}}", "{}", RJ("[  ]"));
	TXERR("{\"$regexMatch\": {\"input\": \"a\", \"regex\": {\"$regularExpression\": {\"pattern\": \"a\", "
	      "\"options\": \"i\"}}, \"options\": \"\"}}", NULL,
	      "ERR 51107 $regexMatch: found regex option(s) specified in both 'regex' and 'option' fields");
	TXERR("{\"$regexMatch\": {\"input\": 1, \"regex\": \"a\"}}", NULL, "ERR 51104 $regexMatch needs 'input' to be of type string");
	TXERR("{\"$regexMatch\": {\"input\": \"a\", \"regex\": \"(\"}}", NULL,
	      "ERR 51111 Invalid Regex in $regexMatch: missing closing parenthesis");
}

static void
test_types(void)
{
	TX("{\"__type__\": \"$a\"}", "{\"a\": 1}", RS("int"));
	TX("{\"__type__\": \"$a\"}", "{}", RS("missing"));
	TX("{\"__type__\": [[1]]}", NULL, RS("array"));
	TX("{\"$isNumber\": \"1\"}", NULL, RJ("false"));
	TX("{\"$toInt\": \"42\"}", NULL, RI("42"));
	TX("{\"$toInt\": 2.9}", NULL, RI("2"));
	TX("{\"$toInt\": -2.9}", NULL, RI("-2"));
	TX("{\"$toInt\": true}", NULL, RI("1"));
	TX("{\"$toInt\": null}", NULL, RJ("null"));
	TX("{\"$toInt\": \"$missing\"}", "{}", RJ("null"));
	TXERR("{\"$toInt\": \"4.5\"}", NULL,
	      "ERR 241 Failed to parse number '4.5' in $convert with no onError value: Did not consume whole string.");
	TXERR("{\"$toInt\": \"99999999999\"}", NULL,
	      "ERR 241 Failed to parse number '99999999999' in $convert with no onError value: Overflow");
	TXERR("{\"$toInt\": 1e10}", NULL,
	      "ERR 241 Conversion would overflow target type in $convert with no onError value: 1e+10");
	TXERR("{\"$toInt\": [[1]]}", NULL, "ERR 241 Unsupported conversion from array to int in $convert with no onError value");
	TX("{\"$toLong\": " DT("5") "}", NULL, RL("5"));
	TX("{\"$toDouble\": \"1.5\"}", NULL, RD("1.5"));
	TX("{\"$toDecimal\": \"1.50\"}", NULL, RDEC("1.50"));
	TX("{\"$toDecimal\": 3}", NULL, RDEC("3"));
	TX("{\"$toString\": 1.5}", NULL, RS("1.5"));
	TX("{\"$toString\": 0.1}", NULL, RS("0.1"));
	TX("{\"$toString\": 1e15}", NULL, RS("1000000000000000"));
	TX("{\"$toString\": 1e16}", NULL, RS("1e+16"));
	TX("{\"$toString\": 0.0001}", NULL, RS("0.0001"));
	TX("{\"$toString\": 0.00001}", NULL, RS("1e-05"));
	TX("{\"$toString\": 123.456}", NULL, RS("123.456"));
	TX("{\"$toString\": -2.0}", NULL, RS("-2"));
	TX("{\"$toString\": {\"$numberDouble\": \"-0.0\"}}", NULL, RS("-0"));
	TX("{\"$toString\": 1.2345678901234567e+20}", NULL, RS("1.2345678901234567e+20"));
	TXERR("{\"$toInt\": 2147483647.5}", NULL,
	      "ERR 241 Conversion would overflow target type in $convert with no onError value: 2.14748e+09");
	TXERR("{\"$toInt\": {\"$numberLong\": \"3000000000\"}}", NULL,
	      "ERR 241 Conversion would overflow target type in $convert with no onError value: ");
	TXERR("{\"$toInt\": {\"$numberDouble\": \"NaN\"}}", NULL,
	      "ERR 241 Attempt to convert NaN value to integer type in $convert with no onError value");
	TXERR("{\"$toInt\": \"0x1F\"}", NULL, "ERR 241 Illegal hexadecimal input in $convert with no onError value: 0x1F");
	TXERR("{\"$toInt\": [1, 2]}", NULL, "ERR 50723 $toInt requires a single argument, got 2");
	TXERR("{\"$convert\": {\"input\": 1, \"to\": \"missing\"}}", NULL,
	      "ERR 241 Unsupported conversion from int to missing in $convert with no onError value");
	TX("{\"$convert\": {\"input\": null, \"to\": null, \"onNull\": 5}}", NULL, RI("5"));
	TX("{\"$toString\": " DT("0") "}", NULL, RS("1970-01-01T00:00:00.000Z"));
	TX("{\"$toString\": {\"$oid\": \"507f1f77bcf86cd799439011\"}}", NULL, RS("507f1f77bcf86cd799439011"));
	TX("{\"$toBool\": 0}", NULL, RJ("false"));
	TX("{\"$toBool\": \"\"}", NULL, RJ("true"));
	TX("{\"$toDate\": \"2020-01-02T03:04:05.006Z\"}", NULL, RDATE("1577934245006"));
	TX("{\"$toDate\": \"2020-01-02T03:04:05+01:00\"}", NULL, RDATE("1577930645000"));
	TX("{\"$toDate\": {\"$oid\": \"507f1f77bcf86cd799439011\"}}", NULL, RDATE("1350508407000"));
	TX("{\"$toObjectId\": \"507f1f77bcf86cd799439011\"}", NULL, RJ("{ \"$oid\" : \"507f1f77bcf86cd799439011\" }"));
	TXERR("{\"$toObjectId\": \"xyz\"}", NULL,
	      "ERR 241 Failed to parse objectId 'xyz' in $convert with no onError value: Invalid string length for "
	      "parsing to OID, expected 24 but found 3");
	TX("{\"$convert\": {\"input\": \"abc\", \"to\": \"int\", \"onError\": -1}}", NULL, RI("-1"));
	TX("{\"$convert\": {\"input\": null, \"to\": \"int\", \"onNull\": \"none\"}}", NULL, RS("none"));
	TX("{\"$convert\": {\"input\": \"7\", \"to\": 18}}", NULL, RL("7"));
	TXERR("{\"$convert\": {\"input\": 1}}", NULL, "ERR 9 Missing 'to' parameter to $convert");
	/* base */
	TX("{\"$convert\": {\"input\": 255, \"to\": \"string\", \"base\": 16}}", NULL, RS("FF"));
	TX("{\"$convert\": {\"input\": -5, \"to\": \"string\", \"base\": 2}}", NULL, RS("-101"));
	TX("{\"$convert\": {\"input\": 8.0, \"to\": \"string\", \"base\": 8}}", NULL, RS("10"));
	TX("{\"$convert\": {\"input\": \"ff\", \"to\": \"int\", \"base\": 16}}", NULL, RI("255"));
	TX("{\"$convert\": {\"input\": \"101\", \"to\": \"long\", \"base\": 2}}", NULL, RL("5"));
	TXERR("{\"$convert\": {\"input\": 1.5, \"to\": \"string\", \"base\": 2}}", NULL,
	      "ERR 241 Base conversion is not supported for non-integers in $convert with no onError value: ");
	TXERR("{\"$convert\": {\"input\": 1, \"to\": \"string\", \"base\": 3}}", NULL,
	      "ERR 3501301 In $convert, 'base' argument is not a valid base");
	/* binData */
	TX("{\"$convert\": {\"input\": \"aGVsbG8=\", \"to\": \"binData\", \"format\": \"base64\"}}", NULL,
	   RJ("{ \"$binary\" : { \"base64\" : \"aGVsbG8=\", \"subType\" : \"00\" } }"));
	TX("{\"$convert\": {\"input\": \"68656C6C6F\", \"to\": {\"type\": \"binData\", \"subtype\": 5}, "
	   "\"format\": \"hex\"}}", NULL, RJ("{ \"$binary\" : { \"base64\" : \"aGVsbG8=\", \"subType\" : \"05\" } }"));
	TX("{\"$convert\": {\"input\": {\"$binary\": {\"base64\": \"aGVsbG8=\", \"subType\": \"00\"}}, "
	   "\"to\": \"string\", \"format\": \"hex\"}}", NULL, RS("68656C6C6F"));
	TX("{\"$convert\": {\"input\": {\"$binary\": {\"base64\": \"aGVsbG8=\", \"subType\": \"00\"}}, "
	   "\"to\": \"string\", \"format\": \"utf8\"}}", NULL, RS("hello"));
	TX("{\"$convert\": {\"input\": {\"$binary\": {\"base64\": \"+/8=\", \"subType\": \"00\"}}, "
	   "\"to\": \"string\", \"format\": \"base64url\"}}", NULL, RS("-_8"));
	TX("{\"$convert\": {\"input\": \"123e4567-e89b-12d3-a456-426614174000\", \"to\": {\"type\": \"binData\", "
	   "\"subtype\": 4}, \"format\": \"uuid\"}}", NULL,
	   RJ("{ \"$binary\" : { \"base64\" : \"Ej5FZ+ibEtOkVkJmFBdAAA==\", \"subType\" : \"04\" } }"));
	TX("{\"$toString\": {\"$binary\": {\"base64\": \"Ej5FZ+ibEtOkVkJmFBdAAA==\", \"subType\": \"04\"}}}", NULL,
	   RS("123e4567-e89b-12d3-a456-426614174000"));
	TXERR("{\"$convert\": {\"input\": \"abc\", \"to\": \"binData\"}}", NULL,
	      "ERR 4341115 Format must be speficied when converting from 'string' to 'binData'");
	TXERR("{\"$convert\": {\"input\": \"zz\", \"to\": \"binData\", \"format\": \"hex\"}}", NULL,
	      "ERR 241 Failed to parse BinData 'zz' in $convert with no onError value: Invalid hex string");
	TX("{\"$convert\": {\"input\": \"zz\", \"to\": \"binData\", \"format\": \"hex\", \"onError\": 0}}", NULL,
	   RI("0"));
	TXERR("{\"$convert\": {\"input\": \"abc\", \"to\": \"binData\", \"format\": \"b64\"}}", NULL,
	      "ERR 4341125 Invalid 'format' argument for $convert: b64");
	TXERR("{\"$convert\": {\"input\": 1, \"to\": \"nope\"}}", NULL, "ERR 2 Unknown type name: nope");
}

static void
test_dates(void)
{
	/* 2021-03-04T05:06:07.089Z = 1614834367089, a Thursday */
	const char *d = "{\"d\": {\"$date\": {\"$numberLong\": \"1614834367089\"}}}";
	TX("{\"$year\": \"$d\"}", d, RI("2021"));
	TX("{\"$month\": \"$d\"}", d, RI("3"));
	TX("{\"$dayOfMonth\": \"$d\"}", d, RI("4"));
	TX("{\"$hour\": \"$d\"}", d, RI("5"));
	TX("{\"$minute\": \"$d\"}", d, RI("6"));
	TX("{\"$second\": \"$d\"}", d, RI("7"));
	TX("{\"$millisecond\": \"$d\"}", d, RI("89"));
	TX("{\"$dayOfWeek\": \"$d\"}", d, RI("5"));
	TX("{\"$isoDayOfWeek\": \"$d\"}", d, RI("4"));
	TX("{\"$dayOfYear\": \"$d\"}", d, RI("63"));
	TX("{\"$week\": \"$d\"}", d, RI("9"));
	TX("{\"$isoWeek\": \"$d\"}", d, RI("9"));
	TX("{\"$isoWeekYear\": \"$d\"}", d, RL("2021"));
	TX("{\"$hour\": {\"date\": \"$d\", \"timezone\": \"+03:30\"}}", d, RI("8"));
	TX("{\"$hour\": {\"date\": \"$d\", \"timezone\": \"-0600\"}}", d, RI("23"));
	TX("{\"$year\": \"$nope\"}", d, RJ("null"));
	TXERR("{\"$year\": \"x\"}", NULL, "ERR 16006 can't convert from BSON type string to Date");
	TXERR("{\"$hour\": {\"date\": \"$d\", \"timezone\": \"Mars/Base\"}}", d,
	      "ERR 40485 unrecognized time zone identifier: \"Mars/Base\"");
	/* 2021-01-01 is a Friday: ISO week 53 of 2020 */
	TX("{\"$isoWeek\": " DT("1609459200000") "}", NULL, RI("53"));
	TX("{\"$isoWeekYear\": " DT("1609459200000") "}", NULL, RL("2020"));
	TX("{\"$week\": " DT("1609459200000") "}", NULL, RI("0"));
	TX("{\"$year\": " DT("-1") "}", NULL, RI("1969"));
	TX("{\"$dateToString\": {\"date\": \"$d\"}}", d, RS("2021-03-04T05:06:07.089Z"));
	TX("{\"$dateToString\": {\"date\": \"$d\", \"format\": \"%Y/%m/%d %H:%M %j %z\", \"timezone\": \"+01:00\"}}", d,
	   RS("2021/03/04 06:06 063 +0100"));
	TX("{\"$dateToString\": {\"date\": \"$nope\", \"onNull\": \"n/a\"}}", d, RS("n/a"));
	TXERR("{\"$dateToString\": {\"date\": \"$d\", \"format\": \"%Q\"}}", d,
	      "ERR 18536 Invalid format character '%Q' in format string");
	TXERR("{\"$dateAdd\": {}}", NULL, "ERR 5166402 $dateAdd requires startDate, unit, and amount to be present");
}

int
main(void)
{
	TT_RUN(test_strings);
	TT_RUN(test_regex);
	TT_RUN(test_types);
	TT_RUN(test_dates);
	return tt_finish();
}
