// find_express.js -- mongosh against tamgad: a find by _id alone takes
// mongod's express path (EXPRESS_IXSCAN, no plan built, issue 23) and must
// answer what the general path answers, with mongod's explain, profiler and
// $indexStats traces.  Run by CTest through with_tamgad.sh:
//   mongosh $TAMGA_URI --quiet --file find_express.js
load(__dirname + '/harness.js');

const d = db.getSiblingDB('express_e2e');
d.dropDatabase();
const c = d.c;
const oid = ObjectId();
c.insertMany([{_id: 1, v: 'int'}, {_id: 2.5, v: 'dbl'}, {_id: oid, v: 'oid'}, {_id: NumberLong('9007199254740993'), v: 'long'},
	{_id: 's', v: 'str'}]);

function idOps() {
	return c.aggregate([{$indexStats: {}}]).toArray().find(s => s.name === '_id_').accesses.ops;
}

test('answers as the general path', () => {
	eq(c.findOne({_id: 1}), {_id: 1, v: 'int'});
	eq(c.findOne({_id: NumberDecimal('1.0')}), {_id: 1, v: 'int'});
	eq(c.findOne({_id: 2.5}).v, 'dbl');
	eq(c.findOne({_id: oid}).v, 'oid');
	eq(c.findOne({_id: NumberLong('9007199254740993')}).v, 'long');
	eq(c.findOne({_id: NumberLong('9007199254740992')}), null);
	eq(c.findOne({_id: 's'}).v, 'str');
	eq(c.findOne({_id: 404}), null);
	eq(d.nope.findOne({_id: 1}), null);
	eq(c.find({_id: 1}).comment('why').toArray(), [{_id: 1, v: 'int'}]);
});

test('reply', () => {
	const r = d.runCommand({find: 'c', filter: {_id: 1}});
	eq(r.cursor.id, NumberLong(0), 'cursor id');
	eq(r.cursor.ns, 'express_e2e.c', 'ns');
	eq(r.cursor.firstBatch, [{_id: 1, v: 'int'}], 'batch');
	eq(code(() => c.find({_id: 1}).batchSize(-1).hint({$natural: 1}).toArray()), 0, 'other shapes still run');
	eq(code(() => d.runCommand({find: 'c', filter: {_id: 1}, bogus: 1})), 40415, 'unknown field');
});

test('explain, profiler, $indexStats', () => {
	const before = idOps();
	c.findOne({_id: 1});
	c.findOne({_id: 77});
	eq(idOps() - before, 2, 'accesses.ops');
	const e = c.find({_id: 1}).explain('executionStats');
	eq(e.queryPlanner.winningPlan.stage, 'EXPRESS_IXSCAN', 'stage');
	eq(e.executionStats.totalDocsExamined, 1, 'docs examined');
	d.setProfilingLevel(2);
	c.findOne({_id: 2.5});
	d.setProfilingLevel(0);
	const p = d.system.profile.find({ns: 'express_e2e.c', op: 'query', 'command.filter._id': 2.5}).toArray();
	ok(p.length > 0, 'profile entry');
	eq(p[p.length - 1].planSummary, 'EXPRESS_IXSCAN { _id: 1 }', 'planSummary');
	const last = p[p.length - 1];
	eq([Number(last.keysExamined), Number(last.docsExamined), Number(last.nreturned)], [1, 1, 1], 'counts');
});

d.dropDatabase();
done();
