// overflow.js -- issue 21's memory-safety cases through mongosh against a
// real tamgad: $sample with a size of 2^61 (a heap overflow before), count
// with limit -2^63, dates at the int64 limits in $year / $dateToParts /
// $isoWeek / $dateDiff / $dateTrunc, $push $position -2^63, and that the
// server still answers afterwards.  Each answer is mongod's.  Run by CTest
// through with_tamgad.sh; prints "N passed, N failed".
load(__dirname + '/harness.js');

const odb = db.getSiblingDB('overflow_e2e');
odb.dropDatabase();
odb.c.insertMany([{_id: 1, a: 1, arr: [1, 2, 3]}, {_id: 2, a: 2}, {_id: 3, a: 3}]);

const LMIN = NumberLong('-9223372036854775808'), LMAX = NumberLong('9223372036854775807');
const DMIN = new Date(-8.64e15), DMAX = new Date(8.64e15);

// the error of cmd as {code, errmsg}; throws when it succeeds
function cmdErr(cmd) {
	let r;
	try {
		r = odb.runCommand(cmd);
	} catch (e) {
		return {code: e.code, errmsg: e.errmsg || e.message};
	}
	if (r.ok) throw new Error(`${JSON.stringify(cmd)} succeeded: ${JSON.stringify(r)}`);
	return {code: r.code, errmsg: r.errmsg};
}
function proj(e) {
	return odb.c.aggregate([{$match: {_id: 1}}, {$project: {_id: 0, v: e}}]).toArray()[0].v;
}
function projErr(e) {
	return cmdErr({aggregate: 'c', pipeline: [{$project: {_id: 0, v: e}}], cursor: {}});
}

test('$sample size 2^61 returns every document, no overflow', () => {
	eq(odb.c.aggregate([{$sample: {size: NumberLong('2305843009213693952')}}]).toArray().length, 3);
	eq(odb.c.aggregate([{$sample: {size: LMAX}}, {$count: 'n'}]).toArray(), [{n: 3}]);
	eq(odb.c.aggregate([{$sample: {size: 1e300}}, {$count: 'n'}]).toArray(), [{n: 3}]);
});

test('$sample size <= 0, NaN and non-numbers: mongod 28747 / 28746', () => {
	for (const size of [0, -1, LMIN, NaN, -Infinity])
		eq(cmdErr({aggregate: 'c', pipeline: [{$sample: {size}}], cursor: {}}),
		   {code: 28747, errmsg: 'size argument to $sample must be a positive integer'}, `size ${size}`);
	eq(cmdErr({aggregate: 'c', pipeline: [{$sample: {size: 'x'}}], cursor: {}}),
	   {code: 28746, errmsg: 'size argument to $sample must be a number'});
});

test('count limit -2^63 is BadValue, -2^63+1 counts', () => {
	eq(cmdErr({count: 'c', limit: LMIN}), {code: 2, errmsg: 'limit value for count cannot be min long'});
	eq(odb.runCommand({count: 'c', limit: NumberLong('-9223372036854775807')}).n, 3);
	eq(odb.runCommand({count: 'c', query: {a: {$gt: 1}}, limit: NumberLong(-1)}).n, 1);
});

test('dates at the ends of the range', () => {
	eq(proj({$year: {$toDate: LMAX}}), 292278994);
	eq(proj({$year: {$toDate: LMIN}}), -292275055);
	eq(proj({$year: {date: {$toDate: LMAX}, timezone: '+14:00'}}), 292278994);
	eq(proj({$dateToParts: {date: {$toDate: LMIN}}}),
	   {year: -292275055, month: 5, day: 16, hour: 16, minute: 47, second: 4, millisecond: 192});
	eq(proj({$isoWeek: {$toDate: LMIN}}), 19);
	eq(proj({$isoWeek: {$toDate: LMAX}}), 33);
	eq(Number(proj({$dateDiff: {startDate: {$toDate: LMIN}, endDate: {$toDate: LMAX}, unit: 'day'}})),
	   213503982335);
});

test('$dateDiff / $dateTrunc / $dateAdd overflow: mongod codes', () => {
	const e = projErr({$dateDiff: {startDate: {$toDate: LMIN}, endDate: {$toDate: LMAX}, unit: 'millisecond'}});
	eq(e.code, 5166308);
	ok(e.errmsg.endsWith('dateDiff overflowed'), e.errmsg);
	eq(projErr({$dateTrunc: {date: DMIN, unit: 'day', binSize: LMAX}}).code, 5439006);
	eq(projErr({$dateTrunc: {date: {$toDate: LMIN}, unit: 'millisecond', binSize: 7}}).code, 5439000);
	eq(projErr({$dateAdd: {startDate: DMAX, unit: 'year', amount: LMAX}}).code, 5976500);
	eq(proj({$dateTrunc: {date: new Date('2020-01-01T00:00:00Z'), unit: 'millisecond', binSize: LMAX}}),
	   new Date('2000-01-01T00:00:00Z'));
});

test('$push $position -2^63 prepends', () => {
	odb.c.updateOne({_id: 1}, {$push: {arr: {$each: [0], $position: LMIN}}});
	eq(odb.c.findOne({_id: 1}).arr, [0, 1, 2, 3]);
});

test('the server still answers', () => {
	eq(odb.runCommand({ping: 1}).ok, 1);
	eq(odb.c.countDocuments({}), 3);
});

done();
