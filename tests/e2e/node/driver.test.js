// driver.test.js -- the official Node driver against tamgad (node:test):
// handshake with compression, CRUD, a cursor over several getMore batches,
// error replies (59, 11000).  TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, MongoServerError } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db;

// the count command (countDocuments runs an aggregation)
async function count(d, name, query) {
	return (await d.command({ count: name, query })).n;
}

before(async () => {
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_node');
	await db.dropDatabase().catch(() => {});
});
after(async () => { if (client) await client.close(); });

test('hello and buildInfo', async () => {
	const h = await db.admin().command({ hello: 1 });
	assert.equal(h.isWritablePrimary, true);
	assert.equal(h.maxWriteBatchSize, 100000);
	const b = await db.admin().command({ buildInfo: 1 });
	assert.match(b.version, /^\d+\.\d+\.\d+$/);
});

for (const compressor of ['zlib', 'zstd', 'snappy']) {
	test(`compression ${compressor}`, async (t) => {
		if (compressor === 'snappy') {
			try { require(path.join(__dirname, '../../clients/node_modules/snappy')); } catch (e) {
				t.skip('snappy npm package not installed'); return;
			}
		}
		if (compressor === 'zstd') {
			try { require(path.join(__dirname, '../../clients/node_modules/@mongodb-js/zstd')); } catch (e) {
				t.skip('@mongodb-js/zstd not installed'); return;
			}
		}
		const c = new MongoClient(uri, { compressors: [compressor], serverSelectionTimeoutMS: 10000 });
		try {
			await c.connect();
			const coll = c.db('e2e_node').collection(`z_${compressor}`);
			await coll.insertMany(Array.from({ length: 50 }, (_, i) => ({ i, pad: 'y'.repeat(200) })));
			assert.equal(await count(c.db('e2e_node'), `z_${compressor}`, {}), 50);
			await coll.drop();
		} finally {
			await c.close();
		}
	});
}

test('CRUD and a cursor over several batches', async () => {
	const coll = db.collection('items');
	const docs = Array.from({ length: 1000 }, (_, i) => ({ _id: i, n: i, tag: i % 3 }));
	const r = await coll.insertMany(docs);
	assert.equal(r.insertedCount, 1000);
	assert.equal(await count(db, 'items', { tag: 1 }), 333);

	const seen = [];
	for await (const d of coll.find({}, { batchSize: 64 }).sort({ _id: 1 })) seen.push(d._id);
	assert.equal(seen.length, 1000);
	assert.deepEqual(seen.slice(0, 3), [0, 1, 2]);

	const one = await coll.findOne({ _id: 500 });
	assert.equal(one.n, 500);
	const u = await coll.updateMany({ tag: 2 }, { $inc: { n: 1 } });
	assert.equal(u.modifiedCount, 333);
	const d = await coll.deleteMany({ tag: 0 });
	assert.equal(d.deletedCount, 334);
	assert.equal(await count(db, 'items', {}), 666);
});

test('duplicate key error is 11000', async () => {
	const coll = db.collection('dups');
	await coll.insertOne({ _id: 'a' });
	await assert.rejects(coll.insertOne({ _id: 'a' }), (e) => {
		assert.ok(e instanceof MongoServerError);
		assert.equal(e.code, 11000);
		return true;
	});
});

test('unknown command is 59', async () => {
	await assert.rejects(db.command({ noSuchCommand: 1 }), (e) => {
		assert.equal(e.code, 59);
		assert.equal(e.codeName, 'CommandNotFound');
		return true;
	});
});

test('listCollections and drop', async () => {
	const names = (await db.listCollections().toArray()).map((c) => c.name).sort();
	assert.ok(names.includes('items'));
	assert.equal(await db.collection('items').drop(), true);
});

test('a prefix regex reads the index: bounds in explain, the same documents as a collection scan', async () => {
	const c = db.collection('regex_ix');
	await c.insertMany([{ _id: 1, t: 'apple' }, { _id: 2, t: 'apricot' }, { _id: 3, t: 'banana' }, { _id: 4 }]);
	await c.createIndex({ t: 1 });
	const e = await c.find({ t: /^ap/ }).explain('executionStats');
	let s = e.queryPlanner.winningPlan;
	while (s && s.stage !== 'IXSCAN') s = s.inputStage;
	assert.ok(s, 'IXSCAN');
	assert.deepEqual(s.indexBounds, { t: ['["ap", "aq")', '[/^ap/, /^ap/]'] });
	assert.equal(e.executionStats.totalKeysExamined, 3);
	const withIx = await c.find({ t: /^ap/ }).sort({ _id: 1 }).toArray();
	const scan = await c.find({ t: /^ap/ }).hint({ $natural: 1 }).sort({ _id: 1 }).toArray();
	assert.deepEqual(withIx.map((d) => d._id), [1, 2]);
	assert.deepEqual(withIx, scan);
});

test('null, $ne and a partial {$exists: true} index: bounds and the same documents as a scan', async () => {
	const c = db.collection('null_ix');
	await c.insertMany([{ _id: 1, s: 'a' }, { _id: 2, s: null }, { _id: 3 }, { _id: 4, s: 'b' }]);
	await c.createIndex({ s: 1 }, { partialFilterExpression: { s: { $exists: true } } });
	await c.createIndex({ s: 1, _id: 1 });
	const ixscan = (p) => { while (p && p.stage !== 'IXSCAN') p = p.inputStage; return p; };
	const ne = ixscan((await c.find({ s: { $ne: 'a' } }).explain()).queryPlanner.winningPlan);
	assert.equal(ne.indexName, 's_1__id_1', 'the partial index misses documents without s');
	assert.deepEqual(ne.indexBounds.s, ['[MinKey, "a")', '("a", MaxKey]']);
	const nul = ixscan((await c.find({ s: null }).explain()).queryPlanner.winningPlan);
	assert.deepEqual(nul.indexBounds.s, ['[undefined, undefined]', '[null, null]']);
	const eqPlan = ixscan((await c.find({ s: 'b' }).hint('s_1').explain()).queryPlanner.winningPlan);
	assert.equal(eqPlan.indexName, 's_1');
	for (const f of [{ s: { $ne: 'a' } }, { s: null }, { s: { $exists: false } }, { s: 'b' }]) {
		const got = await c.find(f).sort({ _id: 1 }).toArray();
		const scan = await c.find(f).hint({ $natural: 1 }).sort({ _id: 1 }).toArray();
		assert.deepEqual(got, scan, JSON.stringify(f));
	}
});

test('views: createCollection with viewOn, reads, listCollections, refused writes', async () => {
	const src = db.collection('cities');
	await src.insertMany([{ _id: 1, state: 'NJ', pop: 3 }, { _id: 2, state: 'CA', pop: 10 }, { _id: 3, state: 'CA', pop: 4 }]);
	await db.createCollection('ca', { viewOn: 'cities', pipeline: [{ $match: { state: 'CA' } }] });
	const ca = db.collection('ca');
	assert.deepEqual((await ca.find({}, { sort: { pop: 1 } }).toArray()).map((d) => d._id), [3, 2]);
	assert.equal(await ca.countDocuments({ pop: { $gt: 5 } }), 1);
	assert.equal(await ca.estimatedDocumentCount(), 2);
	assert.deepEqual((await ca.distinct('pop')).sort((a, b) => a - b), [4, 10]);
	assert.deepEqual(await ca.aggregate([{ $group: { _id: '$state', n: { $sum: 1 } } }]).toArray(), [{ _id: 'CA', n: 2 }]);
	const info = (await db.listCollections({ name: 'ca' }).toArray())[0];
	assert.equal(info.type, 'view');
	assert.deepEqual(info.options, { viewOn: 'cities', pipeline: [{ $match: { state: 'CA' } }] });
	await assert.rejects(ca.insertOne({ x: 1 }), (e) => {
		assert.equal(e.code, 166);
		assert.equal(e.errmsg, 'Namespace e2e_node.ca is a view, not a collection');
		return true;
	});
	await assert.rejects(ca.createIndex({ pop: 1 }), (e) => e.code === 166);
	assert.equal(await ca.drop(), true);
	assert.equal((await db.listCollections({ name: 'ca' }).toArray()).length, 0);
});

test('views in joins: $lookup by fields and $graphLookup from a view, collations, system.views', async () => {
	await db.collection('stops').insertMany([{ _id: 'a', next: 'b', line: 'L1' }, { _id: 'b', next: 'c', line: 'l1' },
		{ _id: 'c', next: 'a', line: 'L2' }, { _id: 'd', line: 'L1' }]);
	await db.createCollection('openStops', { viewOn: 'stops', pipeline: [{ $match: { _id: { $ne: 'd' } } }] });
	const stops = db.collection('stops');
	const byLine = await stops.aggregate([{ $match: { _id: 'd' } },
		{ $lookup: { from: 'openStops', localField: 'line', foreignField: 'line', as: 'same' } }]).toArray();
	assert.deepEqual(byLine[0].same.map((d) => d._id), ['a']);
	const route = await stops.aggregate([{ $match: { _id: 'a' } }, { $graphLookup: { from: 'openStops',
		startWith: '$next', connectFromField: 'next', connectToField: '_id', as: 'route', depthField: 'n' } }]).toArray();
	assert.deepEqual(route[0].route.map((d) => [d._id, Number(d.n)]), [['b', 0], ['c', 1], ['a', 2]]);
	// a view of another default collation may not join a simple pipeline
	await db.createCollection('ciStops', { viewOn: 'stops', collation: { locale: 'en', strength: 2 } });
	await assert.rejects(stops.aggregate([{ $lookup: { from: 'ciStops', localField: 'line', foreignField: 'line',
		as: 'x' } }]).toArray(), (e) => {
		assert.equal(e.code, 167);
		assert.equal(e.errmsg, "Cannot override a view's default collatione2e_node.ciStops");
		return true;
	});
	const ci = await stops.aggregate([{ $match: { _id: 'd' } }, { $lookup: { from: 'ciStops', localField: 'line',
		foreignField: 'line', as: 'same' } }], { collation: { locale: 'en', strength: 2 } }).toArray();
	assert.deepEqual(ci[0].same.map((d) => d._id), ['a', 'b', 'd']);
	// the definitions are documents of system.views, listed as a collection
	const colls = await db.listCollections({ type: 'collection' }, { nameOnly: true }).toArray();
	assert.ok(colls.some((c) => c.name === 'system.views'));
	const defs = await db.collection('system.views').find({}, { projection: { _id: 1 } }).toArray();
	assert.deepEqual(defs.map((d) => d._id).sort(), ['e2e_node.ciStops', 'e2e_node.openStops']);
	await db.collection('ciStops').drop();
	await db.collection('openStops').drop();
});

test('transactions are refused as a standalone mongod refuses them (code 20), and nothing is written', async () => {
	const coll = db.collection('txn');
	const session = client.startSession();
	try {
		session.startTransaction();
		await assert.rejects(coll.insertOne({ _id: 1 }, { session }), (e) => {
			assert.equal(e.code, 20);
			assert.equal(e.message, 'Transaction numbers are only allowed on a replica set member or mongos');
			return true;
		});
		await session.abortTransaction().catch(() => {});
	} finally {
		await session.endSession();
	}
	assert.equal(await coll.countDocuments({}), 0);
	await assert.rejects(db.admin().command({ commitTransaction: 1 }), (e) => e.code === 20);
});

// Blocking sorts past their memory limit spill by default, as on mongod 6.0+
// (allowDiskUseByDefault); allowDiskUse: false answers 292.  The limit is
// lowered for the test with setParameter, as mongod's jstests do.
test('sorts spill by default; allowDiskUse false answers 292', async () => {
	const coll = db.collection('spill');
	const n = 300;
	await coll.insertMany(Array.from({ length: n }, (_, i) => ({ _id: i, k: (i * 37) % n, pad: 'z'.repeat(1000) })));
	const admin = db.admin();
	const was = await admin.command({ setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 32768 });
	assert.equal(was.was, 100 * 1024 * 1024);
	try {
		const asc = Array.from({ length: n }, (_, i) => i);
		const found = await coll.find({}, { projection: { k: 1 } }).sort({ k: 1 }).toArray();
		assert.deepEqual(found.map((d) => d.k), asc);
		const agg = await coll.aggregate([{ $addFields: { y: 1 } }, { $sort: { k: -1 } }, { $project: { k: 1 } }]).toArray();
		assert.deepEqual(agg.map((d) => d.k), asc.slice().reverse());
		await assert.rejects(coll.find({}).sort({ k: 1 }).allowDiskUse(false).toArray(), (e) => {
			assert.ok(e instanceof MongoServerError);
			assert.equal(e.code, 292);
			assert.equal(e.codeName, 'QueryExceededMemoryLimitNoDiskUseAllowed');
			// a find's executor error carries mongod's context (issue 22)
			assert.equal(e.message, 'Executor error during find command: e2e_node.spill :: caused by :: Sort exceeded memory limit of 32768 bytes, but did not opt in to external sorting.');
			return true;
		});
		await assert.rejects(coll.aggregate([{ $sort: { k: 1 } }], { allowDiskUse: false }).toArray(),
			(e) => e.code === 292);
	} finally {
		await admin.command({ setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 100 * 1024 * 1024 });
	}
	await coll.drop();
});

// The streaming monitor (awaitable hello with exhaustAllowed): tamgad keeps
// answering one hello with moreToCome every maxAwaitTimeMS, as mongod does.
// A server that ended the stream would make the driver report a failed
// heartbeat ("Server ended moreToCome unexpectedly") and clear its pool.
test('streaming hello: awaited heartbeats, no failures, no pool clears', async () => {
	const c = new MongoClient(uri, { heartbeatFrequencyMS: 500, serverMonitoringMode: 'stream',
		serverSelectionTimeoutMS: 10000 });
	const awaited = [], failed = [], cleared = [];
	c.on('serverHeartbeatSucceeded', (e) => { if (e.awaited) awaited.push(e); });
	c.on('serverHeartbeatFailed', (e) => failed.push(e));
	c.on('connectionPoolCleared', (e) => cleared.push(e));
	try {
		await c.connect();
		const started = Date.now();
		while (Date.now() - started < 3000)
			await c.db('admin').command({ ping: 1 }).then(() => new Promise((r) => setTimeout(r, 100)));
		assert.deepEqual(failed.map((e) => String(e.failure)), []);
		assert.equal(cleared.length, 0);
		// about one per maxAwaitTimeMS (500 ms) over 3 s, each carrying our topologyVersion
		assert.ok(awaited.length >= 3, `only ${awaited.length} awaited heartbeats`);
		for (const e of awaited)
			assert.ok(e.reply.topologyVersion && e.reply.topologyVersion.processId, 'topologyVersion in the reply');
	} finally {
		await c.close();
	}
});
