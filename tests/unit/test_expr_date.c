/*
 * test_expr_date.c -- date operators with time zones (fixed offsets and
 * Olson names from the system tz database), $dateToParts/$dateFromParts,
 * $dateAdd/$dateSubtract, $dateDiff, $dateTrunc, $dateFromString.
 */
#include "test_expr_util.h"

#define DT(x) "{\"$date\": {\"$numberLong\": \"" x "\"}}"
#define I(x) "{ \"$numberInt\" : \"" #x "\" }"

/* 2021-03-04T05:06:07.089Z */
#define D1 DT("1614834367089")

static void
test_olson(void)
{
	/* New York is UTC-5 in March before the DST switch (2021-03-14) */
	TX("{\"$hour\": {\"date\": " D1 ", \"timezone\": \"America/New_York\"}}", NULL, RI("0"));
	/* and UTC-4 in July */
	TX("{\"$hour\": {\"date\": " DT("1625115600000") ", \"timezone\": \"America/New_York\"}}", NULL, RI("1"));
	TX("{\"$dateToString\": {\"date\": " D1 ", \"format\": \"%H:%M %z %Z\", \"timezone\": \"Asia/Kolkata\"}}", NULL,
	   RS("10:36 +0530 330"));
	/* beyond the TZif transitions (2037): the footer rule still applies DST */
	TX("{\"$hour\": {\"date\": " DT("2224713600000") ", \"timezone\": \"America/New_York\"}}", NULL, RI("20"));
	TX("{\"$hour\": {\"date\": " DT("2208988800000") ", \"timezone\": \"America/New_York\"}}", NULL, RI("19"));
	TX("{\"$hour\": {\"date\": " DT("2224713600000") ", \"timezone\": \"Australia/Sydney\"}}", NULL, RI("10"));
	TXERR("{\"$hour\": {\"date\": " D1 ", \"timezone\": \"Mars/Olympus\"}}", NULL,
	      "ERR 40485 unrecognized time zone identifier: \"Mars/Olympus\"");
	TXERR("{\"$hour\": {\"date\": " D1 ", \"timezone\": \"../../etc/passwd\"}}", NULL,
	      "ERR 40485 unrecognized time zone identifier: \"../../etc/passwd\"");
	TXERR("{\"$hour\": {\"date\": " D1 ", \"timezone\": 5}}", NULL, "ERR 40517 timezone must evaluate to a string, found int");
	TX("{\"$hour\": {\"date\": " D1 ", \"timezone\": null}}", NULL, RJ("null"));
}

static void
test_parts(void)
{
	TX("{\"$dateToParts\": {\"date\": " D1 "}}", NULL,
	   RJ("{ \"year\" : " I(2021) ", \"month\" : " I(3) ", \"day\" : " I(4) ", \"hour\" : " I(5) ", \"minute\" : " I(6)
	      ", \"second\" : " I(7) ", \"millisecond\" : " I(89) " }"));
	TX("{\"$dateToParts\": {\"date\": " D1 ", \"iso8601\": true, \"timezone\": \"+01:00\"}}", NULL,
	   RJ("{ \"isoWeekYear\" : " I(2021) ", \"isoWeek\" : " I(9) ", \"isoDayOfWeek\" : " I(4) ", \"hour\" : " I(6)
	      ", \"minute\" : " I(6) ", \"second\" : " I(7) ", \"millisecond\" : " I(89) " }"));
	TXERR("{\"$dateToParts\": {\"date\": " D1 ", \"iso8601\": 1}}", NULL, "ERR 40521 iso8601 must evaluate to a bool, found int");
	TXERR("{\"$dateToParts\": {\"x\": 1}}", NULL, "ERR 40520 Unrecognized argument to $dateToParts: x");
	TX("{\"$dateFromParts\": {\"year\": 2021, \"month\": 3, \"day\": 4, \"hour\": 5, \"minute\": 6, \"second\": 7, "
	   "\"millisecond\": 89}}", NULL, RDATE("1614834367089"));
	TX("{\"$dateFromParts\": {\"year\": 2021, \"month\": 14, \"day\": 0}}", NULL, RDATE("1643587200000"));
	TX("{\"$dateFromParts\": {\"year\": 2021, \"timezone\": \"America/New_York\"}}", NULL, RDATE("1609477200000"));
	TX("{\"$dateFromParts\": {\"isoWeekYear\": 2021, \"isoWeek\": 9, \"isoDayOfWeek\": 4}}", NULL,
	   RDATE("1614816000000"));
	TX("{\"$dateFromParts\": {\"year\": 2021, \"month\": null}}", NULL, RJ("null"));
	TXERR("{\"$dateFromParts\": {\"month\": 1}}", NULL,
	      "ERR 40516 $dateFromParts requires either 'year' or 'isoWeekYear' to be present");
	TXERR("{\"$dateFromParts\": {\"year\": 2021, \"isoWeek\": 1}}", NULL,
	      "ERR 40489 $dateFromParts does not allow mixing natural dates with ISO dates");
	TXERR("{\"$dateFromParts\": {\"year\": 10000}}", NULL,
	      "ERR 40523 'year' must evaluate to an integer in the range 1 to 9999, found 10000");
	TXERR("{\"$dateFromParts\": {\"year\": 2000, \"month\": 1.5}}", NULL,
	      "ERR 40515 'month' must evaluate to an integer, found double with value 1.5");
	TXERR("{\"$dateFromParts\": {\"year\": 2000, \"hour\": 40000}}", NULL,
	      "ERR 31034 'hour' must evaluate to a value in the range [-32768, 32767]; value 40000 is not in range");
}

static void
test_add_diff_trunc(void)
{
	TX("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"hour\", \"amount\": 2}}", NULL, RDATE("1614841567089"));
	/* Jan 31 + 1 month = Feb 28 */
	TX("{\"$dateAdd\": {\"startDate\": " DT("1612051200000") ", \"unit\": \"month\", \"amount\": 1}}", NULL,
	   RDATE("1614470400000"));
	TX("{\"$dateSubtract\": {\"startDate\": " D1 ", \"unit\": \"day\", \"amount\": 4}}", NULL, RDATE("1614488767089"));
	TX("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"year\", \"amount\": -1}}", NULL, RDATE("1583298367089"));
	/* a day across the New York DST switch keeps the wall-clock time: 23 hours */
	TX("{\"$dateAdd\": {\"startDate\": " DT("1615654800000") ", \"unit\": \"day\", \"amount\": 1, "
	   "\"timezone\": \"America/New_York\"}}", NULL, RDATE("1615737600000"));
	TX("{\"$dateAdd\": {\"startDate\": null, \"unit\": \"day\", \"amount\": 1}}", NULL, RJ("null"));
	TXERR("{\"$dateAdd\": {\"startDate\": 1, \"unit\": \"day\", \"amount\": 1}}", NULL,
	      "ERR 5166403 $dateAdd requires startDate to be convertible to a date");
	TXERR("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"days\", \"amount\": 1}}", NULL,
	      "ERR 9 unknown time unit value: days");
	TXERR("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"day\", \"amount\": 1.5}}", NULL,
	      "ERR 5166405 $dateAdd expects integer amount of time units");
	TXERR("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"day\"}}", NULL,
	      "ERR 5166402 $dateAdd requires startDate, unit, and amount to be present");
	TXERR("{\"$dateAdd\": {\"startDate\": " D1 ", \"unit\": \"year\", \"amount\": 9000000000000000000}}", NULL,
	      "ERR 5976500 invalid dateAdd 'amount' parameter value: 9000000000000000000 year");
	TX("{\"$dateDiff\": {\"startDate\": " DT("1609459199000") ", \"endDate\": " DT("1609459201000") ", \"unit\": \"year\"}}",
	   NULL, RL("1"));
	TX("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"endDate\": " DT("1614834367089") ", \"unit\": \"day\"}}", NULL,
	   RL("18690"));
	TX("{\"$dateDiff\": {\"startDate\": " DT("1614834367089") ", \"endDate\": " DT("0") ", \"unit\": \"month\"}}", NULL,
	   RL("-614"));
	TX("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"endDate\": " DT("1500") ", \"unit\": \"second\"}}", NULL, RL("1"));
	/* 1970-01-01 is a Thursday; the next Sunday starts a week */
	TX("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"endDate\": " DT("259200000") ", \"unit\": \"week\"}}", NULL,
	   RL("1"));
	TX("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"endDate\": " DT("259200000") ", \"unit\": \"week\", "
	   "\"startOfWeek\": \"fri\"}}", NULL, RL("1"));
	TXERR("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"endDate\": " DT("0") ", \"unit\": \"weeks\"}}", NULL,
	      "ERR 5439014 $dateDiff parameter 'unit' value cannot be recognized as a time unit: weeks");
	TXERR("{\"$dateDiff\": {\"startDate\": " DT("0") ", \"unit\": \"day\"}}", NULL,
	      "ERR 5166304 Missing 'endDate' parameter to $dateDiff");
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"day\"}}", NULL, RDATE("1614816000000"));
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"month\"}}", NULL, RDATE("1614556800000"));
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"quarter\"}}", NULL, RDATE("1609459200000"));
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"hour\", \"binSize\": 6}}", NULL, RDATE("1614816000000"));
	/* week starting Sunday: 2021-02-28 */
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"week\"}}", NULL, RDATE("1614470400000"));
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"week\", \"startOfWeek\": \"Monday\"}}", NULL,
	   RDATE("1614556800000"));
	TX("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"day\", \"timezone\": \"+10:00\"}}", NULL, RDATE("1614780000000"));
	TXERR("{\"$dateTrunc\": {\"date\": " D1 ", \"unit\": \"day\", \"binSize\": 0}}", NULL,
	      "ERR 5439018 $dateTrunc requires 'binSize' to be greater than 0, but got value 0");
	TXERR("{\"$dateTrunc\": {\"date\": 5, \"unit\": \"day\"}}", NULL,
	      "ERR 5439012 $dateTrunc requires 'date' to be a date, but got int");
}

static void
test_from_string(void)
{
	TX("{\"$dateFromString\": {\"dateString\": \"2021-03-04T05:06:07.089Z\"}}", NULL, RDATE("1614834367089"));
	TX("{\"$dateFromString\": {\"dateString\": \"2021-03-04\"}}", NULL, RDATE("1614816000000"));
	/* mongod's jstests: seconds after a '.' (timelib) */
	TX("{\"$dateFromString\": {\"dateString\": \"2017-07-04T11:56.02\"}}", NULL, RDATE("1499169362000"));
	TX("{\"$dateFromString\": {\"dateString\": \"2017-07-04T11:56.02.813\"}}", NULL, RDATE("1499169362813"));
	TX("{\"$dateFromString\": {\"dateString\": \"2017-07-04T11:56.02.8\"}}", NULL, RDATE("1499169362800"));
	TX("{\"$dateFromString\": {\"dateString\": \"2021-03-04T05:06:07\", \"timezone\": \"+01:00\"}}", NULL,
	   RDATE("1614830767000"));
	TX("{\"$dateFromString\": {\"dateString\": \"04/03/2021 05:06\", \"format\": \"%d/%m/%Y %H:%M\"}}", NULL,
	   RDATE("1614834360000"));
	TX("{\"$dateFromString\": {\"dateString\": \"2021-03-04 +0100\", \"format\": \"%Y-%m-%d %z\"}}", NULL,
	   RDATE("1614812400000"));
	TX("{\"$dateFromString\": {\"dateString\": \"Mar 4, 2021 05:06:07\"}}", NULL, RDATE("1614834367000"));
	TX("{\"$dateFromString\": {\"dateString\": \"4 March 2021\"}}", NULL, RDATE("1614816000000"));
	TX("{\"$dateFromString\": {\"dateString\": \"03/04/2021\"}}", NULL, RDATE("1614816000000"));
	TX("{\"$dateFromString\": {\"dateString\": \"2021/03/04 05:06 +01:00\"}}", NULL, RDATE("1614830760000"));
	TX("{\"$dateFromString\": {\"dateString\": \"2021-03-04 05:06:07 UTC\"}}", NULL, RDATE("1614834367000"));
	TXERR("{\"$dateFromString\": {\"dateString\": \"2021-03-04 05:06:07 GMT\", \"timezone\": \"+01\"}}", NULL,
	      "ERR 40551 you cannot pass in a date/time string with time zone information ('GMT') together with a "
	      "timezone argument");
	TX("{\"$dateFromString\": {\"dateString\": \"nope\", \"onError\": \"bad\"}}", NULL, RS("bad"));
	TX("{\"$dateFromString\": {\"dateString\": null, \"onNull\": 0}}", NULL, RI("0"));
	TXERR("{\"$dateFromString\": {\"dateString\": \"nope\"}}", NULL, "ERR 241 Error parsing date string 'nope'");
	TXERR("{\"$dateFromString\": {\"dateString\": \"2021\", \"format\": \"%Q\"}}", NULL,
	      "ERR 18536 Invalid format character '%Q' in format string");
	TXERR("{\"$dateFromString\": {}}", NULL, "ERR 40542 Missing 'dateString' parameter to $dateFromString");
	TXERR("{\"$dateFromString\": {\"dateString\": \"2021-03-04T00:00:00Z\", \"timezone\": \"+01:00\"}}", NULL,
	      "ERR 40554 you cannot pass in a date/time string with GMT offset together with a timezone argument");
}

int
main(void)
{
	TT_RUN(test_olson);
	TT_RUN(test_parts);
	TT_RUN(test_add_diff_trunc);
	TT_RUN(test_from_string);
	return tt_finish();
}
