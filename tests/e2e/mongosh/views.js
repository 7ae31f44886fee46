// views.js -- read-only views through mongosh against tamgad: create,
// listCollections, find / count / distinct / aggregate on a view and on a
// view of a view, explain, collMod, drop, and mongod's errors for writes,
// indexes and bad definitions.  Run by CTest through with_tamgad.sh.
// Prints "N passed, N failed" and exits non-zero when anything failed.
load(__dirname + '/harness.js');

// cmd: a command document run on vdb, which must fail with code (and msg)
function fails(cmd, code, msg, on) {
	let res;
	try {
		res = (on || vdb).runCommand(cmd);
	} catch (e) {
		res = {ok: 0, code: e.code, errmsg: e.errmsg || e.message};
	}
	eq(res.ok, 0, `ok of ${JSON.stringify(cmd)}: ${JSON.stringify(res)}`);
	eq(res.code, code, `code of ${JSON.stringify(cmd)}`);
	if (msg !== undefined) eq(res.errmsg, msg, 'errmsg');
}

const vdb = db.getSiblingDB('views_e2e');
vdb.dropDatabase();
vdb.coll.insertMany([
	{_id: 'New York', state: 'NY', pop: 7},
	{_id: 'Newark', state: 'NJ', pop: 3},
	{_id: 'Palo Alto', state: 'CA', pop: 10},
	{_id: 'San Francisco', state: 'CA', pop: 4},
	{_id: 'Trenton', state: 'NJ', pop: 5},
]);

test('create views (and a view of a view)', () => {
	eq(vdb.runCommand({create: 'identity', viewOn: 'coll', pipeline: [{$match: {}}]}).ok, 1);
	eq(vdb.runCommand({create: 'noId', viewOn: 'coll', pipeline: [{$project: {_id: 0, state: 1, pop: 1}}]}).ok, 1);
	eq(vdb.runCommand({create: 'big', viewOn: 'identity', pipeline: [{$match: {pop: {$gt: 5}}}]}).ok, 1);
	eq(vdb.runCommand({create: 'plain', viewOn: 'coll'}).ok, 1);
	// the same definition again succeeds; another one does not
	eq(vdb.runCommand({create: 'plain', viewOn: 'coll'}).ok, 1);
	fails({create: 'plain', viewOn: 'identity'}, 48);
	fails({create: 'coll', viewOn: 'identity'}, 48);
	fails({create: 'plain'}, 48);
});

test('listCollections shows views as mongod does', () => {
	const r = vdb.runCommand({listCollections: 1, filter: {name: 'identity'}});
	eq(r.cursor.firstBatch, [{name: 'identity', type: 'view',
		options: {viewOn: 'coll', pipeline: [{$match: {}}]}, info: {readOnly: true}}]);
	const plain = vdb.runCommand({listCollections: 1, filter: {name: 'plain'}}).cursor.firstBatch[0];
	eq(plain.options, {viewOn: 'coll', pipeline: []}, 'default pipeline');
	const names = vdb.runCommand({listCollections: 1, nameOnly: true, filter: {type: 'view'}})
		.cursor.firstBatch.map(c => c.name).sort();
	eq(names, ['big', 'identity', 'noId', 'plain']);
	ok(vdb.getCollectionNames().includes('big'), 'getCollectionNames');
	eq(vdb.runCommand({dbStats: 1}).views, 4, 'dbStats views');
});

test('find on a view: filter, projection, sort, skip, limit, batches', () => {
	eq(vdb.identity.find({state: 'NJ'}, {_id: 1}).sort({_id: -1}).toArray(), [{_id: 'Trenton'}, {_id: 'Newark'}]);
	eq(vdb.noId.find({state: 'NY'}, {pop: 1}).toArray(), [{pop: 7}]);
	eq(vdb.big.find().sort({pop: 1}).toArray().map(d => d._id), ['New York', 'Palo Alto']);
	eq(vdb.identity.find().sort({_id: 1}).skip(1).limit(2).toArray().map(d => d._id), ['Newark', 'Palo Alto']);
	eq(vdb.identity.findOne({_id: 'San Francisco'}), {_id: 'San Francisco', state: 'CA', pop: 4});
	eq(vdb.identity.find().batchSize(2).toArray().length, 5, 'getMore batches');
	const r = vdb.runCommand({find: 'identity', batchSize: 1});
	eq(r.cursor.ns, 'views_e2e.identity', 'cursor ns is the view');
});

test('find options aggregation lacks are refused with 168', () => {
	fails({find: 'identity', sort: {$natural: 1}}, 168,
		'Sort option $natural not supported in aggregation.');
	fails({find: 'identity', min: {_id: 1}}, 168, 'Option min not supported in aggregation.');
	fails({find: 'identity', singleBatch: true}, 168,
		'Option singleBatch not supported in aggregation.');
	eq(vdb.runCommand({find: 'identity', singleBatch: true, limit: 1}).ok, 1, 'findOne form');
});

test('count, countDocuments, estimatedDocumentCount, distinct on views', () => {
	eq(vdb.big.countDocuments(), 2);
	eq(vdb.big.estimatedDocumentCount(), 2);
	eq(vdb.runCommand({count: 'identity', query: {state: 'CA'}}).n, 2);
	eq(vdb.runCommand({count: 'identity', skip: 1, limit: 2}).n, 2);
	eq(vdb.runCommand({count: 'big', query: {state: 'FL'}}).n, 0);
	eq(vdb.identity.distinct('state').sort(), ['CA', 'NJ', 'NY']);
	eq(vdb.big.distinct('pop').sort((a, b) => a - b), [7, 10]);
	eq(vdb.big.distinct('nonexistent'), []);
	eq(vdb.big.distinct('state', {pop: {$gte: 8}}), ['CA']);
});

test('distinct through arrays matches the collection', () => {
	vdb.arr.insertMany([{a: [1, 2, [3]], d: {e: [1, 2]}}, {a: 1, d: [{e: 1}, {e: [5]}]}, {a: null}, {}]);
	vdb.runCommand({create: 'arrView', viewOn: 'arr'});
	for (const k of ['a', 'd', 'd.e']) {
		const want = vdb.arr.distinct(k).map(x => JSON.stringify(x)).sort();
		const got = vdb.arrView.distinct(k).map(x => JSON.stringify(x)).sort();
		eq(got, want, `distinct ${k}`);
	}
});

test('aggregate on a view runs the view pipeline first', () => {
	const r = vdb.big.aggregate([{$group: {_id: null, total: {$sum: '$pop'}}}]).toArray();
	eq(r, [{_id: null, total: 17}]);
	eq(vdb.noId.aggregate([{$match: {state: 'CA'}}, {$sort: {pop: 1}}]).toArray(),
		[{state: 'CA', pop: 4}, {state: 'CA', pop: 10}]);
});

test('$unionWith, $lookup (both forms) and $graphLookup read views', () => {
	eq(vdb.coll.aggregate([{$match: {_id: 'Newark'}}, {$project: {_id: 1}},
		{$unionWith: {coll: 'big', pipeline: [{$project: {_id: 1}}]}}]).toArray().map(d => d._id),
		['Newark', 'New York', 'Palo Alto']);
	eq(vdb.coll.aggregate([{$match: {_id: 'Newark'}},
		{$lookup: {from: 'big', let: {s: '$state'}, pipeline: [{$match: {pop: {$gt: 8}}}, {$project: {_id: 1}}],
			as: 'bigs'}}]).toArray()[0].bigs, [{_id: 'Palo Alto'}]);
	// big: New York (NY, 7) and Palo Alto (CA, 10)
	eq(vdb.coll.aggregate([{$lookup: {from: 'big', localField: 'state', foreignField: 'state', as: 'x'}},
		{$project: {n: {$size: '$x'}}}, {$sort: {_id: 1}}]).toArray().map(d => d.n), [1, 0, 1, 1, 0]);
	eq(vdb.coll.aggregate([{$match: {_id: 'Trenton'}}, {$graphLookup: {from: 'big', startWith: 'NY',
		connectFromField: 'state', connectToField: 'state', as: 'x'}}]).toArray()[0].x.map(d => d._id),
		['New York']);
});

test('explain of a view read shows the collection it reads', () => {
	const e = vdb.big.find({state: 'CA'}).explain('executionStats');
	const s = JSON.stringify(e);
	ok(s.includes('views_e2e.coll'), 'namespace of the base collection: ' + s.slice(0, 300));
	ok(vdb.big.explain().count({foo: 'bar'}).ok === 1, 'explain count');
	ok(vdb.big.explain().distinct('pop').ok === 1, 'explain distinct');
});

test('writes, indexes and stats on a view answer 166', () => {
	const msg = 'Namespace views_e2e.identity is a view, not a collection';
	let r = vdb.runCommand({insert: 'identity', documents: [{a: 1}, {a: 2}]});
	eq(r.n, 0);
	eq(r.writeErrors.length, 1, 'ordered: the first fails');
	eq(r.writeErrors[0].code, 166);
	eq(r.writeErrors[0].errmsg, msg);
	r = vdb.runCommand({insert: 'identity', documents: [{a: 1}, {a: 2}], ordered: false});
	eq(r.writeErrors.map(e => e.index), [0, 1], 'unordered: each fails');
	r = vdb.runCommand({update: 'identity', updates: [{q: {}, u: {$set: {a: 1}}}]});
	eq(r.writeErrors[0].code, 166, 'update');
	r = vdb.runCommand({delete: 'identity', deletes: [{q: {}, limit: 0}]});
	eq(r.writeErrors[0].code, 166, 'delete');
	fails({findAndModify: 'identity', query: {}, remove: true}, 166, msg);
	fails({createIndexes: 'identity', indexes: [{key: {a: 1}, name: 'a_1'}]}, 166, msg);
	fails({listIndexes: 'identity'}, 166, msg);
	fails({dropIndexes: 'identity', index: '*'}, 166, msg);
	fails({collStats: 'identity'}, 166, msg);
	fails({renameCollection: 'views_e2e.identity', to: 'views_e2e.x'}, 166,
		'cannot rename view: views_e2e.identity', db.getSiblingDB('admin'));
	fails({aggregate: 'coll', pipeline: [{$out: 'identity'}], cursor: {}}, 166, msg);
	eq(vdb.coll.countDocuments(), 5, 'nothing written');
});

test('bad definitions', () => {
	fails({create: 'bad', pipeline: []}, 72, "'pipeline' requires 'viewOn' to also be specified");
	fails({create: 'bad', viewOn: 'coll', pipeline: [{$nope: 1}]}, 40324);
	fails({create: 'bad', viewOn: 'coll', pipeline: [{$out: 'x'}]}, 167,
		'Invalid pipeline for view views_e2e.bad :: caused by :: The aggregation stage $out in location 0 of ' +
		'the pipeline cannot be used in the view definition of views_e2e.bad because it writes to disk');
	fails({create: 'bad', viewOn: 'coll', pipeline: {$match: {}}}, 14);
	fails({create: 'bad', viewOn: 'coll', validator: {a: 1}}, 72,
		'option not supported on a view: validator');
	fails({create: 'system.views', viewOn: 'coll'}, 73);
	fails({create: 'bad', viewOn: ''}, 2, "'viewOn' cannot be empty");
	eq(vdb.getCollectionInfos({name: 'bad'}).length, 0, 'nothing created');
});

test('collMod changes a view; cycles are refused', () => {
	eq(vdb.runCommand({collMod: 'plain', viewOn: 'coll', pipeline: [{$match: {state: 'NJ'}}]}).ok, 1);
	eq(vdb.plain.countDocuments(), 2);
	fails({collMod: 'identity', viewOn: 'big', pipeline: []}, 5,
		'View cycle detected: views_e2e.identity => views_e2e.identity => views_e2e.big => views_e2e.identity');
	fails({collMod: 'identity', validator: {a: 1}}, 72, 'option not supported on a view: validator');
	fails({collMod: 'coll', viewOn: 'x', pipeline: []}, 72, 'option only supported on a view: viewOn');
	eq(vdb.big.countDocuments(), 2, 'unchanged');
});

test('drop a view, then the name is free; dropDatabase drops views', () => {
	ok(vdb.plain.drop(), 'drop');
	eq(vdb.getCollectionInfos({name: 'plain'}).length, 0);
	vdb.plain.insertOne({x: 1});
	eq(vdb.getCollectionInfos({name: 'plain'})[0].type, 'collection');
	vdb.dropDatabase();
	eq(vdb.getCollectionNames(), []);
	ok(!db.adminCommand({listDatabases: 1, nameOnly: true}).databases.some(d => d.name === 'views_e2e'), 'gone');
});

done();
