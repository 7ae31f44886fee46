// Clustered collections through mongosh: create with clusteredIndex, what
// listCollections / listIndexes show, CRUD through the clustered layout
// (natural order is _id order), secondary indexes pointing at the clustered
// key, CLUSTERED_IXSCAN / EXPRESS_CLUSTERED_IXSCAN in explain, the
// clustered index that cannot be dropped, and mongod's codes for bad input.
load(__dirname + '/harness.js');

const t = db.getSiblingDB('clustered_e2e');
t.dropDatabase();

test('create and listCollections', () => {
	eq(t.createCollection('c', {clusteredIndex: {key: {_id: 1}, unique: true, name: 'by id'}}).ok, 1, 'create');
	const info = t.getCollectionInfos({name: 'c'})[0];
	eq(info.options.clusteredIndex, {v: 2, key: {_id: 1}, name: 'by id', unique: true}, 'options');
	eq(info.type, 'collection', 'type');
	ok(info.idIndex === undefined, 'no idIndex');
	// the same options again succeed
	eq(t.createCollection('c', {clusteredIndex: {key: {_id: 1}, unique: true, name: 'by id'}}).ok, 1, 'again');
});

test('listIndexes', () => {
	eq(t.c.getIndexes(), [{v: 2, key: {_id: 1}, name: 'by id', unique: true, clustered: true}], 'indexes');
});

test('writes and natural order is _id order', () => {
	for (const id of [5, 3, 9, 1, 7])
		t.c.insertOne({_id: id, v: id * 10, tag: id % 2 ? 'odd' : 'even'});
	eq(t.c.find().toArray().map(d => d._id), [1, 3, 5, 7, 9], 'order');
	eq(t.c.find().sort({$natural: -1}).toArray().map(d => d._id), [9, 7, 5, 3, 1], 'backward');
	eq(code(() => t.c.insertOne({_id: 3})), 11000, 'duplicate _id');
	t.c.updateOne({_id: 3}, {$set: {v: 31}});
	eq(t.c.findOne({_id: 3}).v, 31, 'update');
	t.c.deleteOne({_id: 5});
	eq(t.c.countDocuments(), 4, 'count');
	eq(t.c.findOne({_id: 5}), null, 'deleted');
});

test('secondary index through the clustered key', () => {
	t.c.createIndex({v: 1});
	eq(t.c.find({v: {$gte: 30}}).sort({v: 1}).toArray().map(d => d._id), [3, 7, 9], 'by v');
	t.c.insertOne({_id: 11, v: 110});
	eq(t.c.find({v: 110}).toArray().map(d => d._id), [11], 'new doc in index');
	const w = t.c.find({v: 70}).explain().queryPlanner.winningPlan;
	eq(w.stage, 'FETCH', 'fetch');
	eq(w.inputStage.indexName, 'v_1', 'index');
});

test('explain: CLUSTERED_IXSCAN and EXPRESS_CLUSTERED_IXSCAN', () => {
	const e = t.c.find({_id: {$gte: 3, $lte: 9}}).explain('executionStats');
	const w = e.queryPlanner.winningPlan;
	eq(w.stage, 'CLUSTERED_IXSCAN', 'stage');
	eq(w.minRecord, 3, 'minRecord');
	eq(w.maxRecord, 9, 'maxRecord');
	eq(e.executionStats.nReturned, 3, 'nReturned');
	eq(t.c.find({_id: {$gte: 3, $lte: 9}}).toArray().map(d => d._id), [3, 7, 9], 'range');
	eq(t.c.find({_id: 7}).explain().queryPlanner.winningPlan.stage, 'EXPRESS_CLUSTERED_IXSCAN', 'express');
});

test('createIndexes with the clustered option', () => {
	const before = t.c.getIndexes();
	eq(t.runCommand({createIndexes: 'c', indexes: [before[0]]}).ok, 1, 'the cluster key again: a no-op');
	eq(t.c.getIndexes(), before, 'nothing added');
	eq(code(() => t.runCommand({createIndexes: 'c', indexes: [{key: {notMyIndex: 1}, name: 'n', clustered: true, unique: true}]})), 6243700, 'not the cluster key');
	eq(code(() => t.runCommand({createIndexes: 'c', indexes: [{key: {s: 1}, name: 's2', clustered: false, unique: true}]})), 6492800, 'false');
});

test('the clustered index cannot be dropped', () => {
	eq(code(() => t.c.dropIndex('by id')), 5979800, 'by name');
	eq(code(() => t.c.dropIndex({_id: 1})), 5979800, 'by key');
	t.c.dropIndexes();
	eq(t.c.getIndexes().length, 1, 'clustered stays');
});

test('bad clusteredIndex options', () => {
	const bad = (opts) => err(() => t.createCollection('bad', opts));
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: false}}).code, 5979700, 'unique false');
	eq(bad({clusteredIndex: {key: {a: 1}, unique: true}}).code, 197, 'key a');
	eq(bad({clusteredIndex: {key: {_id: 1}}}).code, 40414, 'unique missing');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true, x: 1}}).code, 40415, 'unknown field');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true}, size: 10}).code, 6049200, 'size');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true}, max: 10}).code, 6049204, 'max');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true}, autoIndexId: false}).code, 6026501, 'autoIndexId');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true}, viewOn: 'c'}).code, 6026500, 'view');
	eq(bad({clusteredIndex: true}).code, 5979703, 'legacy');
	eq(bad({clusteredIndex: 1}).code, 5979702, 'type');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true, v: 1}}).code, 5979704, 'v');
	eq(bad({expireAfterSeconds: 5}).code, 72, 'ttl without clustering');
	eq(bad({clusteredIndex: {key: {_id: 1}, unique: true}, expireAfterSeconds: -1}).code, 72, 'negative ttl');
	eq(t.getCollectionNames().includes('bad'), false, 'nothing created');
	eq(t.createCollection('plain', {clusteredIndex: false}).ok, 1, 'clusteredIndex false');
	eq(t.plain.getIndexes()[0].name, '_id_', 'plain has _id_');
});

test('expireAfterSeconds shows in listIndexes', () => {
	t.createCollection('ttl', {clusteredIndex: {key: {_id: 1}, unique: true}, expireAfterSeconds: 60});
	const ix = t.ttl.getIndexes()[0];
	eq(ix.name, '_id_', 'default name');
	eq(Number(ix.expireAfterSeconds), 60, 'ttl');
	eq(ix.clustered, true, 'clustered');
});

test('survives a restart of the descriptor (rename)', () => {
	t.c.renameCollection('c2');
	eq(t.c2.find({_id: {$gt: 3}}).toArray().map(d => d._id), [7, 9, 11], 'after rename');
	eq(t.c2.findOne({_id: 9}).v, 90, 'point');
});

done();
