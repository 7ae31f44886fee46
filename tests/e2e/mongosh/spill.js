// spill.js -- mongosh against tamgad: blocking sorts past their memory limit
// write to disk by default, as mongod 6.0+ does (allowDiskUseByDefault
// true); allowDiskUse: false, or the parameter turned off, answers 292
// with mongod's message; the same for $group.  The limits are lowered with setParameter
// internalQueryMaxBlockingSortMemoryUsageBytes and
// internalDocumentSourceGroupMaxMemoryBytes, as mongod's own spilling
// jstests do, so nothing large is written.  Run by CTest through
// with_tamgad.sh:  mongosh $TAMGA_URI --quiet --file spill.js
load(__dirname + '/harness.js');

const d = db.getSiblingDB('spill_e2e');
d.dropDatabase();
const c = d.c;
const N = 400;
const docs = [];
for (let i = 0; i < N; i++) docs.push({_id: i, k: (i * 37) % N, g: i % 7, pad: 'x'.repeat(1000)});
c.insertMany(docs);
const admin = db.getSiblingDB('admin');
const LIMIT = 64 * 1024;
const MSG = `Sort exceeded memory limit of ${LIMIT} bytes, but did not opt in to external sorting.`;

function ks(arr) { return arr.map((x) => x.k); }
function range(from, n, step) { return Array.from({length: n}, (_, i) => from + i * step); }

test('the defaults are mongod\'s', () => {
	const p = admin.runCommand({getParameter: 1, allowDiskUseByDefault: 1,
		internalQueryMaxBlockingSortMemoryUsageBytes: 1});
	eq(p.allowDiskUseByDefault, true, 'allowDiskUseByDefault');
	eq(p.internalQueryMaxBlockingSortMemoryUsageBytes, 100 * 1024 * 1024, 'sort limit');
	const r = admin.runCommand({setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: LIMIT});
	eq(r.was, 100 * 1024 * 1024, 'was');
});

test('find: a sort past the limit spills without being asked', () => {
	eq(ks(c.find({}, {k: 1}).sort({k: 1}).toArray()), range(0, N, 1), 'ascending');
	eq(ks(c.find({}, {k: 1}).sort({k: -1}).allowDiskUse(true).toArray()), range(N - 1, N, -1), 'descending');
	const e = c.find().sort({k: 1}).explain('executionStats');
	ok(JSON.stringify(e.executionStats).includes('"usedDisk":true'), 'usedDisk in explain');
});

test('find: allowDiskUse false answers 292 with mongod\'s message', () => {
	const e = err(() => c.find().sort({k: 1}).allowDiskUse(false).toArray());
	eq(e.code, 292, 'code');
	ok(e.msg.includes(MSG), e.msg);
});

test('aggregate: pushed-down $sort and the $sort stage spill by default', () => {
	eq(ks(c.aggregate([{$sort: {k: -1}}, {$project: {k: 1}}]).toArray()), range(N - 1, N, -1), 'pushed down');
	eq(ks(c.aggregate([{$addFields: {y: 1}}, {$sort: {k: 1}}, {$project: {k: 1}}]).toArray()),
		range(0, N, 1), '$sort stage');
	eq(ks(c.aggregate([{$addFields: {y: 1}}, {$sort: {k: 1}}, {$limit: 150}, {$project: {k: 1}}]).toArray()),
		range(0, 150, 1), 'top-k');
});

test('aggregate: allowDiskUse false answers 292', () => {
	eq(code(() => c.aggregate([{$sort: {k: 1}}], {allowDiskUse: false}).toArray()), 292, 'pushed down');
	eq(code(() => c.aggregate([{$addFields: {y: 1}}, {$sort: {k: 1}}], {allowDiskUse: false}).toArray()),
		292, '$sort stage');
});

test('allowDiskUseByDefault false: absent means no, true still opts in', () => {
	eq(admin.runCommand({setParameter: 1, allowDiskUseByDefault: false}).was, true, 'was');
	eq(code(() => c.find().sort({k: 1}).toArray()), 292, 'find');
	eq(code(() => c.aggregate([{$sort: {k: 1}}]).toArray()), 292, 'aggregate');
	eq(ks(c.find({}, {k: 1}).sort({k: 1}).allowDiskUse(true).toArray()), range(0, N, 1), 'find opts in');
	eq(ks(c.aggregate([{$sort: {k: 1}}, {$project: {k: 1}}], {allowDiskUse: true}).toArray()),
		range(0, N, 1), 'aggregate opts in');
	admin.runCommand({setParameter: 1, allowDiskUseByDefault: true});
});

test('findOneAndUpdate with a sort takes the first in order (one document held)', () => {
	const r = c.findOneAndUpdate({k: {$gte: 5}}, {$set: {hit: 1}}, {sort: {k: 1}, returnDocument: 'after'});
	eq(r.k, 5, 'k');
	eq(c.countDocuments({hit: 1}), 1, 'one updated');
});

test('$group past its memory limit spills and answers as in memory; 292 when told not to', () => {
	const pipeline = [{$group: {_id: '$g', n: {$sum: 1}, ks: {$push: '$k'}, first: {$first: '$_id'},
		last: {$last: '$_id'}, avg: {$avg: '$k'}, top: {$topN: {n: 2, sortBy: {k: -1}, output: '$k'}}}},
		{$sort: {_id: 1}}];
	const inMemory = c.aggregate(pipeline).toArray();
	const was = admin.runCommand({setParameter: 1, internalDocumentSourceGroupMaxMemoryBytes: 2048}).was;
	eq(Number(was), 100 * 1024 * 1024, 'was');
	try {
		eq(c.aggregate(pipeline).toArray(), inMemory, 'spilled');
		const e = err(() => c.aggregate(pipeline, {allowDiskUse: false}).toArray());
		eq(e.code, 292, 'code');
		ok(e.msg.includes("Exceeded memory limit for $group, but didn't allow external sort."), e.msg);
	} finally {
		admin.runCommand({setParameter: 1, internalDocumentSourceGroupMaxMemoryBytes: 100 * 1024 * 1024});
	}
});

test('setParameter errors as mongod', () => {
	eq(err(() => admin.runCommand({setParameter: 1, nosuch: 1})).code, 72, 'unknown');
	eq(err(() => admin.runCommand({setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: -5})).msg,
		'Invalid value for parameter internalQueryMaxBlockingSortMemoryUsageBytes: -5 is not greater than or equal to 0',
		'bound');
	eq(err(() => d.runCommand({setParameter: 1, allowDiskUseByDefault: true})).code, 13, 'admin only');
});

admin.runCommand({setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 100 * 1024 * 1024});
d.dropDatabase();
done();
