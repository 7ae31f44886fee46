// covered.js -- mongosh against tamgad: covered queries (PROJECTION_COVERED
// over IXSCAN, no document examined, exact BSON types back from the index)
// and per-field multiKeyPaths in explain, as mongod reports them (the
// jstests core/index/covered/*.js cases).  Run by CTest through
// with_tamgad.sh:  mongosh $TAMGA_URI --quiet --file covered.js
load(__dirname + '/harness.js');

// the winning plan's stages from the top, e.g. ["PROJECTION_COVERED", "IXSCAN"]
function stages(plan) {
	const out = [];
	for (let s = plan; s; s = s.inputStage) out.push(s.stage);
	return out;
}
function ixscan(plan) {
	let s = plan;
	while (s && s.stage !== 'IXSCAN') s = s.inputStage;
	return s;
}

const d = db.getSiblingDB('covered_e2e');
d.dropDatabase();
const c = d.c;
c.insertMany([
	{_id: 1, a: 1, b: NumberLong('10'), s: 'x'},
	{_id: 2, a: 2.5, b: NumberDecimal('1.50'), s: 'y'},
	{_id: 3, a: NumberInt(3), b: -0.0, s: 'z'},
	{_id: 4, a: 4, b: 7},
	{_id: 5, b: 8},
]);
c.createIndex({a: 1, b: 1});
c.createIndex({s: 1}, {sparse: true});

const RANGE = {a: {$gte: 1}, b: {$gte: -1}};
test('covered range: PROJECTION_COVERED over IXSCAN, no document examined', () => {
	const e = c.find(RANGE, {a: 1, b: 1, _id: 0}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'stages');
	eq(e.queryPlanner.winningPlan.transformBy, {a: 1, b: 1, _id: 0}, 'transformBy');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(e.executionStats.nReturned, 4, 'nReturned');
	const s = ixscan(e.executionStats.executionStages);
	eq(s.docsExamined, undefined, 'IXSCAN has no docsExamined');
	eq(s.indexBounds, {a: ['[1, inf.0]'], b: ['[-1, inf.0]']}, 'bounds');
});

test('covered results keep every BSON type (type bits)', () => {
	eq(stages(c.find(RANGE, {a: 1, b: 1, _id: 0}).sort({a: 1}).explain().queryPlanner.winningPlan),
		['PROJECTION_COVERED', 'IXSCAN'], 'covered');
	const r = c.find(RANGE, {a: 1, b: 1, _id: 0}).sort({a: 1}).toArray();
	eq(r.length, 4, 'count');
	ok(r[0].b instanceof Long, 'long stays long');
	eq(r[1].a, 2.5, 'double');
	eq(r[1].b.toString(), '1.50', 'decimal keeps its digits');
	ok(r[2].a === 3 && typeof r[2].a === 'number', 'int32');
	ok(Object.is(r[2].b, -0), '-0.0 stays -0.0');
});

test('aggregate: $match + plain $project pushed down and covered', () => {
	const pipeline = [{$match: RANGE}, {$sort: {a: 1}}, {$project: {a: 1, b: 1, _id: 0}}];
	const e = c.explain('executionStats').aggregate(pipeline);
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'stages');
	eq(Number(e.executionStats.totalDocsExamined), 0, 'totalDocsExamined');
	eq(c.aggregate(pipeline).toArray(), c.find(RANGE, {a: 1, b: 1, _id: 0}).sort({a: 1}).toArray(), 'same as find');
	// a computed field is not a find projection: the $project stays a stage
	const f = c.explain().aggregate([{$match: RANGE}, {$project: {s: {$add: ['$a', 1]}}}]);
	eq(f.stages[1].$project !== undefined, true, '$project stage');
});

test('_id included and not indexed: FETCH', () => {
	const e = c.find({a: {$gte: 1}}, {a: 1}).explain('executionStats');
	ok(stages(e.queryPlanner.winningPlan).includes('FETCH'), 'FETCH');
	ok(!stages(e.queryPlanner.winningPlan).includes('PROJECTION_COVERED'), 'not covered');
	eq(e.executionStats.totalDocsExamined, 4, 'totalDocsExamined');
});

test('an unbounded suffix field is covered; a missing one comes back null, as from mongod', () => {
	// b is unbounded: a missing b and a null b share one key, and mongod's
	// covered projection copies the key (null) for both
	const e = c.find({a: {$gte: 1}}, {b: 1, _id: 0}).hint({a: 1, b: 1}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'covered');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	const r = c.find({a: {$gte: 0}}, {a: 1, b: 1, _id: 0}).hint({a: 1, b: 1}).toArray();
	eq(r.length, 4, 'count');
	// {_id: 5, b: 8} has no a: its key holds a: null
	const all = c.find({}, {a: 1, b: 1, _id: 0}).hint({a: 1, b: 1}).toArray();
	eq(all[0], {a: null, b: 8}, 'missing a is null');
});

test('the issue 23 example: {city: 1, age: 1}, find({city: "Berlin"}, {_id: 0, city: 1, age: 1})', () => {
	const p = d.people;
	const docs = [];
	for (let i = 0; i < 500; i++)
		docs.push(i % 3 === 0 ? {_id: i, city: 'Berlin'} : {_id: i, city: ['Berlin', 'Paris', 'Rome'][i % 3], age: 20 + i % 50});
	p.insertMany(docs);
	p.createIndex({city: 1, age: 1});
	const q = {city: 'Berlin'}, proj = {_id: 0, city: 1, age: 1};
	const e = p.find(q, proj).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'stages');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(e.executionStats.nReturned, 167, 'nReturned');
	const r = p.find(q, proj).toArray();
	eq(r[0], {city: 'Berlin', age: null}, 'a document without age: age null (the key)');
	eq(r.filter(x => x.age === null).length, 167, 'every Berlin document here lacks age');
	// a predicate that tests null on a projected field fetches (mongod: the
	// answer must tell null from missing)
	const f = p.find({city: 'Berlin', age: null}, proj).explain('executionStats');
	ok(stages(f.queryPlanner.winningPlan).includes('FETCH'), 'null test fetches');
	eq(p.find({city: 'Berlin', age: null}, proj).toArray()[0], {city: 'Berlin'}, 'missing stays missing');
});

test('dotted fields: PROJECTION_DEFAULT over IXSCAN, nested in key order', () => {
	const t = d.dotted;
	t.insertOne({_id: 1, a: 1, b: {c: 1, d: 1, e: 1}, c: 1, e: 1});
	t.createIndex({a: 1, 'b.c': 1, 'b.d': 1, c: 1});
	const proj = {_id: 0, a: 1, 'b.c': 1, 'b.d': 1, c: 1};
	const e = t.find({a: 1}, proj).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_DEFAULT', 'IXSCAN'], 'stages');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(t.findOne({a: 1}, proj), {a: 1, b: {c: 1, d: 1}, c: 1}, 'value');
	eq(t.findOne({a: 1}, {_id: 0, 'b.c': 1, c: 1}), {b: {c: 1}, c: 1}, 'subset');
	ok(stages(t.find({a: 1}, {a: 1, 'b.c': 1}).explain().queryPlanner.winningPlan).includes('FETCH'),
		'_id included: FETCH');
});

test('sparse one-field index covers without bounds', () => {
	const e = c.find({}, {s: 1, _id: 0}).hint({s: 1}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'stages');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(c.find({}, {s: 1, _id: 0}).hint({s: 1}).toArray(), [{s: 'x'}, {s: 'y'}, {s: 'z'}], 'values');
});

test('_id index covers {_id: 1}', () => {
	const e = c.find({_id: {$gt: 2, $lt: 5}}, {_id: 1}).hint({_id: 1}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'stages');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(c.find({_id: {$gt: 2, $lt: 5}}, {_id: 1}).hint({_id: 1}).toArray(), [{_id: 3}, {_id: 4}], 'values');
});

test('an update changing only the type is seen by covered reads', () => {
	c.updateOne({_id: 4}, {$set: {a: 4.0, b: NumberLong('7')}});
	const q = {a: 4, b: {$gte: 0}};
	eq(stages(c.find(q, {a: 1, b: 1, _id: 0}).explain().queryPlanner.winningPlan),
		['PROJECTION_COVERED', 'IXSCAN'], 'covered');
	const r = c.find(q, {a: 1, b: 1, _id: 0}).toArray();
	eq(r.length, 1, 'count');
	ok(r[0].b instanceof Long, 'b is a long now');
});

test('multiKeyPaths per field', () => {
	const m = d.m;
	m.insertMany([{a: [1, 2], b: 1, c: {d: 1}}, {a: 3, b: 2, c: [{d: 2}]}]);
	m.createIndex({a: 1, b: 1});
	m.createIndex({'c.d': 1, b: 1});
	let s = ixscan(m.find({a: 1, b: 1}).explain().queryPlanner.winningPlan);
	eq(s.isMultiKey, true, 'isMultiKey');
	eq(s.multiKeyPaths, {a: ['a'], b: []}, 'multiKeyPaths a_1_b_1');
	s = ixscan(m.find({'c.d': 1}).explain().queryPlanner.winningPlan);
	eq(s.multiKeyPaths, {'c.d': ['c'], b: []}, 'multiKeyPaths c.d_1_b_1');
	// a document arriving later adds its paths
	m.insertOne({a: 5, b: [1, 2], c: {d: 3}});
	s = ixscan(m.find({a: 5}).explain().queryPlanner.winningPlan);
	eq(s.multiKeyPaths, {a: ['a'], b: ['b']}, 'after insert a_1_b_1');
	m.insertOne({a: 6, b: 3, c: {d: [3, 4]}});
	s = ixscan(m.find({'c.d': 3}).explain().queryPlanner.winningPlan);
	eq(s.multiKeyPaths, {'c.d': ['c', 'c.d'], b: ['b']}, 'after insert c.d_1_b_1');
	// an index that never met an array
	m.createIndex({z: 1});
	s = ixscan(m.find({z: 1}).explain().queryPlanner.winningPlan);
	eq(s.isMultiKey, false, 'z not multikey');
	eq(s.multiKeyPaths, {z: []}, 'z paths');
});

test('a multikey path is never covered, a non-multikey one of the same index is', () => {
	const m = d.m2;
	m.insertMany([{a: [1, 2], b: 1}, {a: 3, b: 2}]);
	m.createIndex({b: 1, a: 1});
	let e = m.find({b: {$gte: 1}}, {a: 1, _id: 0}).explain('executionStats');
	ok(!stages(e.queryPlanner.winningPlan).includes('PROJECTION_COVERED'), 'a is multikey');
	e = m.find({b: {$gte: 1}}, {b: 1, _id: 0}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'b is not');
	eq(e.executionStats.totalDocsExamined, 0, 'totalDocsExamined');
	eq(m.find({b: {$gte: 1}}, {b: 1, _id: 0}).toArray(), [{b: 1}, {b: 2}], 'results');
});

test('bounds on two fields under one non-multikey prefix are compounded', () => {
	const m = d.m3;
	m.insertMany([{x: {p: 1, q: 1}, arr: [1, 2]}, {x: {p: 2, q: 3}, arr: 3}]);
	m.createIndex({'x.p': 1, 'x.q': 1, arr: 1});
	const s = ixscan(m.find({'x.p': 1, 'x.q': {$gt: 0}}).explain().queryPlanner.winningPlan);
	eq(s.indexBounds, {'x.p': ['[1, 1]'], 'x.q': ['(0, inf.0]'], arr: ['[MinKey, MaxKey]']}, 'bounds');
	// a multikey prefix: x is an array now, the second field is not compounded
	m.insertOne({x: [{p: 1, q: 5}]});
	const t = ixscan(m.find({'x.p': 1, 'x.q': {$gt: 0}}).explain().queryPlanner.winningPlan);
	eq(t.multiKeyPaths['x.p'], ['x'], 'x multikey');
	eq(t.indexBounds['x.q'], ['[MinKey, MaxKey]'], 'not compounded');
	eq(m.countDocuments({'x.p': 1, 'x.q': {$gt: 0}}), 2, 'count');
});

test('a regex uses the index: prefix bounds as mongod builds them, exact when the regex is the prefix', () => {
	const r = d.re;
	r.insertMany([
		{_id: 1, t: 'abc'}, {_id: 2, t: 'abd'}, {_id: 3, t: 'ab'}, {_id: 4, t: 'xabc'},
		{_id: 5, t: /^abc/}, {_id: 6, t: 'ABC'}, {_id: 7}, {_id: 8, t: ['zz', 'abcz']},
	]);
	r.createIndex({t: 1});
	let e = r.find({t: /^abc/}).explain('executionStats');
	let s = ixscan(e.queryPlanner.winningPlan);
	eq(s.indexBounds, {t: ['["abc", "abd")', '[/^abc/, /^abc/]']}, 'prefix bounds');
	eq(e.queryPlanner.winningPlan.filter, undefined, 'exact: no filter left');
	eq(e.executionStats.nReturned, 3, 'nReturned');
	eq(r.find({t: /^abc/}).sort({_id: 1}).toArray().map(x => x._id), [1, 5, 8], 'prefix results');
	// covered: the prefix alone decides, the strings come back from the keys
	const c2 = d.re2;
	c2.insertMany([{_id: 1, t: 'abc'}, {_id: 2, t: 'abx'}, {_id: 3, t: 'b'}]);
	c2.createIndex({t: 1});
	e = c2.find({t: /^ab/}, {t: 1, _id: 0}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'covered');
	eq(e.executionStats.totalDocsExamined, 0, 'no document read');
	eq(c2.find({t: /^ab/}, {t: 1, _id: 0}).toArray(), [{t: 'abc'}, {t: 'abx'}], 'covered results');
	// $mod: every number; on a path that never held an array, the keys decide
	c2.insertMany([{_id: 10, t: 4}, {_id: 11, t: 7}, {_id: 12, t: NumberLong(10)}]);
	e = c2.find({t: {$mod: [2, 0]}}).explain('executionStats');
	eq(ixscan(e.queryPlanner.winningPlan).indexBounds, {t: ['[nan.0, inf.0]']}, '$mod bounds');
	eq(ixscan(e.queryPlanner.winningPlan).filter, {t: {$mod: [NumberLong(2), NumberLong(0)]}}, '$mod on IXSCAN (longs, as mongod prints them)');
	eq(e.executionStats.totalDocsExamined, 2, '$mod: only matches fetched');
	eq(c2.find({t: {$mod: [2, 0]}}).toArray().map(x => x._id), [10, 12], '$mod results');
	c2.deleteMany({_id: {$gte: 10}});
	// no usable prefix: every string, and the filter still decides -- on a
	// multikey path only the fetched document can
	e = r.find({t: /bc/}).explain();
	s = ixscan(e.queryPlanner.winningPlan);
	eq(s.indexBounds, {t: ['["", {})', '[/bc/, /bc/]']}, 'all strings');
	eq(s.filter, undefined, 'multikey: no IXSCAN filter');
	eq(e.queryPlanner.winningPlan.filter, {t: {$regex: 'bc'}}, 'multikey: FETCH filter');
	// a path that never held an array: the IXSCAN stage checks the keys
	// (mongod's INEXACT_COVERED), only matching documents are fetched
	c2.insertOne({_id: 4, t: 'xyz'});
	e = c2.find({t: /b/}).explain('executionStats');
	eq(e.queryPlanner.winningPlan.stage, 'FETCH', 'fetch');
	eq(e.queryPlanner.winningPlan.filter, undefined, 'no FETCH filter');
	eq(ixscan(e.queryPlanner.winningPlan).filter, {t: {$regex: 'b'}}, 'IXSCAN filter');
	eq(e.executionStats.totalKeysExamined, 4, 'keys');
	eq(e.executionStats.totalDocsExamined, 3, 'only matching documents fetched');
	eq(e.executionStats.nReturned, 3, 'nReturned');
	eq(ixscan(e.executionStats.executionStages).advanced, 3, 'IXSCAN advanced');
	e = c2.find({t: /b/i}, {t: 1, _id: 0}).explain('executionStats');
	eq(stages(e.queryPlanner.winningPlan), ['PROJECTION_COVERED', 'IXSCAN'], 'covered with a key filter');
	eq(e.executionStats.totalDocsExamined, 0, 'covered: no document');
	eq(c2.find({t: /b/i}, {t: 1, _id: 0}).toArray(), [{t: 'abc'}, {t: 'abx'}, {t: 'b'}], 'covered results');
	c2.updateOne({_id: 2}, {$set: {k: 1}});
	e = c2.find({t: /b/, k: {$ne: 1}}).explain();
	eq(e.queryPlanner.winningPlan.filter, {k: {$not: {$eq: 1}}}, 'the rest on FETCH');
	eq(ixscan(e.queryPlanner.winningPlan).filter, {t: {$regex: 'b'}}, 'the regex on IXSCAN');
	eq(c2.find({t: /b/, k: {$ne: 1}}).toArray().map(x => x._id), [1, 3], 'split filter results');
	eq(r.find({t: /bc/}).sort({_id: 1}).toArray().map(x => x._id), [1, 4, 8], 'unanchored');
	s = ixscan(r.find({t: {$regex: '^abc', $options: 'i'}}).explain().queryPlanner.winningPlan);
	eq(s.indexBounds, {t: ['["", {})', '[/^abc/i, /^abc/i]']}, 'case-insensitive: all strings');
	eq(r.find({t: {$regex: '^abc', $options: 'i'}}).sort({_id: 1}).toArray().map(x => x._id), [1, 6, 8], 'i');
	s = ixscan(r.find({t: /^ab.d/}).explain().queryPlanner.winningPlan);
	eq(s.indexBounds, {t: ['["ab", "ac")', '[/^ab.d/, /^ab.d/]']}, 'prefix up to a metacharacter');
	// the same answers without the index
	for (const f of [{t: /^abc/}, {t: /bc/}, {t: /^ab.d/}, {t: /^a|x/}])
		eq(r.find(f).sort({_id: 1}).toArray(), r.find(f).hint({$natural: 1}).sort({_id: 1}).toArray(), String(f.t));
});

test('null, $ne, $nin and $exists read the index with mongod\'s bounds; sparse and partial indexes only where complete', () => {
	const n = d.nulls;
	n.insertMany([{_id: 1, v: 1}, {_id: 2, v: null}, {_id: 3}, {_id: 4, v: 2}, {_id: 5, v: 'x'}, {_id: 6, v: 3}]);
	n.createIndex({v: 1});
	const cases = [
		[{v: null}, ['[undefined, undefined]', '[null, null]'], [2, 3]],
		[{v: {$in: [2, null]}}, ['[undefined, undefined]', '[null, null]', '[2, 2]'], [2, 3, 4]],
		[{v: {$ne: 2}}, ['[MinKey, 2)', '(2, MaxKey]'], [1, 2, 3, 5, 6]],
		[{v: {$nin: [1, 'x']}}, ['[MinKey, 1)', '(1, "x")', '("x", MaxKey]'], [2, 3, 4, 6]],
		[{v: {$exists: true}}, ['[MinKey, MaxKey]'], [1, 2, 4, 5, 6]],
		[{v: {$exists: false}}, ['[null, null]'], [3]],
	];
	for (const [f, bounds, ids] of cases) {
		const s = ixscan(n.find(f).explain().queryPlanner.winningPlan);
		ok(s, 'IXSCAN for ' + JSON.stringify(f));
		eq(s.indexBounds, {v: bounds}, 'bounds ' + JSON.stringify(f));
		eq(n.find(f).sort({_id: 1}).toArray().map(x => x._id), ids, 'ids ' + JSON.stringify(f));
		eq(n.find(f).hint({$natural: 1}).sort({_id: 1}).toArray().map(x => x._id), ids, 'scan ' + JSON.stringify(f));
	}
	// $ne on a path that never held an array: the bounds decide (no FETCH filter)
	eq(n.find({v: {$ne: 2}}).explain().queryPlanner.winningPlan.filter, undefined, '$ne exact');
	// null can stand for a missing field: always fetched and checked
	ok(n.find({v: null}).explain().queryPlanner.winningPlan.filter, 'null filtered');
	// a sparse index lacks the documents without v: never for what matches them
	const sp = d.sparse_nulls;
	sp.insertMany([{_id: 1, v: 1}, {_id: 2}, {_id: 3, v: null}]);
	sp.createIndex({v: 1}, {sparse: true});
	for (const f of [{v: null}, {v: {$ne: 1}}, {v: {$exists: false}}])
		eq(stages(sp.find(f).explain().queryPlanner.winningPlan), ['COLLSCAN'], 'sparse unused ' + JSON.stringify(f));
	let e = sp.find({v: {$exists: true}}).explain('executionStats');
	eq(ixscan(e.queryPlanner.winningPlan).indexBounds, {v: ['[MinKey, MaxKey]']}, 'sparse $exists');
	eq(e.queryPlanner.winningPlan.filter, undefined, 'a one-field sparse index answers $exists: true');
	eq(e.executionStats.nReturned, 2, '$exists: true on sparse');
	// partial {$exists: true}: an equality implies it
	const pa = d.partial_exists;
	pa.insertMany([{_id: 1, email: 'a@x'}, {_id: 2}, {_id: 3, email: 'b@x'}]);
	pa.createIndex({email: 1}, {unique: true, partialFilterExpression: {email: {$exists: true}}});
	e = pa.find({email: 'b@x'}).explain('executionStats');
	eq(ixscan(e.queryPlanner.winningPlan).indexName, 'email_1', 'partial index used');
	eq(e.executionStats.totalKeysExamined, 1, 'one key');
	eq(stages(pa.find({email: null}).explain().queryPlanner.winningPlan), ['COLLSCAN'], 'not for null');
});

test('the FETCH filter holds only what the index bounds do not answer, as mongod prints it', () => {
	const r = d.residual;
	r.insertMany([{_id: 1, a: 5, c: 7}, {_id: 2, a: 5, c: 8}, {_id: 3, a: 6, c: 7}]);
	r.createIndex({a: 1});
	let p = r.find({a: 5, c: 7}).explain().queryPlanner.winningPlan;
	eq(p.stage, 'FETCH', 'fetch');
	eq(p.filter, {c: {$eq: 7}}, 'one conjunct left');
	p = r.find({a: 5, c: 7, d: {$exists: false}}).explain().queryPlanner.winningPlan;
	eq(p.filter, {$and: [{c: {$eq: 7}}, {d: {$not: {$exists: true}}}]}, 'several left ($exists: false printed as mongod does)');
	// null is never answered by the bounds: it stays
	p = r.find({a: null, c: 7}).explain().queryPlanner.winningPlan;
	eq(p.filter, {$and: [{a: {$eq: null}}, {c: {$eq: 7}}]}, 'null stays');
	eq(r.find({a: 5, c: 7}).toArray().map(x => x._id), [1], 'results');
	eq(r.find({a: 5, c: {$ne: 7}}).toArray().map(x => x._id), [2], 'results $ne');
});

d.dropDatabase();
done();
