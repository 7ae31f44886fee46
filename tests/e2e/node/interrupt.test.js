// interrupt.test.js -- maxTimeMS, killOp / currentOp and the server
// parameters of issue 21 through the Node driver against a real tamgad
// (node:test).  with_tamgad.sh starts the server with
// --setParameter enableTestCommands=1 --setParameter ttlMonitorSleepSecs=7,
// so the startup path of --setParameter is checked too.
//
// Overshoot samples are wall-clock times seen by the client (the network
// adds a little): each slow operation gets three tries at the bound
// (maxTimeMS + 10% + 5 ms, plus 15 ms for the round trip and the driver).
// On a machine loaded far past its cores all three can miss it; the test
// then accepts three times maxTimeMS and says so (the unit test
// test_interrupt holds the strict bound, in CPU time when the machine is
// loaded).  An operation that ignores its deadline runs for seconds every
// time and fails either way.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, MongoServerError } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db, admin;

before(async () => {
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_interrupt');
	admin = client.db('admin');
	await db.dropDatabase().catch(() => {});
	const docs = [];
	for (let i = 0; i < 5000; i++) docs.push({ _id: i, k: i % 10 });
	await db.collection('c').insertMany(docs);
	await db.collection('one').insertOne({ _id: 1 });
	await db.collection('ends').insertMany([{ x: 0 }, { x: 300000 }]);
});
after(async () => { if (client) await client.close(); });

// 3000 elements, not folded as a constant
const BIG = { $range: [0, { $add: [3000, { $ifNull: ['$nosuch', 0] }] }] };

const slow = {
	'$reduce + $concatArrays': (ms) => db.collection('one').aggregate([{ $project: { r: { $size: { $reduce: {
		input: { $range: [0, 100000] }, initialValue: [], in: { $concatArrays: ['$$value', ['$$this']] } } } } } }],
		{ maxTimeMS: ms }).toArray(),
	'$densify': (ms) => db.collection('ends').aggregate([{ $densify: { field: 'x', range: { step: 1, bounds: 'full' } } },
		{ $count: 'n' }], { maxTimeMS: ms }).toArray(),
	'$group': (ms) => db.collection('c').aggregate([{ $group: { _id: '$_id', s: { $sum: { $size: BIG } } } }],
		{ maxTimeMS: ms }).toArray(),
	'find $expr': (ms) => db.collection('c').find({ $expr: { $lt: [{ $size: BIG }, 0] } }, { maxTimeMS: ms }).toArray(),
	'updateMany (pipeline)': (ms) => db.collection('c').updateMany({}, [{ $set: { s: { $size: BIG } } }], { maxTimeMS: ms }),
};

test('maxTimeMS: 50 within 10% + 5 ms for slow operations', async () => {
	const ms = 100, bound = ms * 1.1 + 5 + 15;
	for (const [what, run] of Object.entries(slow)) {
		let best = Infinity, code;
		for (let attempt = 0; attempt < 3 && best > bound; attempt++) {
			const t0 = performance.now();
			try {
				await run(ms);
				code = 0;
			} catch (e) {
				code = e.code;
			}
			best = Math.min(best, performance.now() - t0);
			assert.equal(code, 50, `${what}: code ${code}`);
		}
		if (best > bound)
			console.log(`# ${what}: ${best.toFixed(1)} ms with maxTimeMS ${ms} (loaded machine?)`);
		assert.ok(best <= 3 * ms, `${what}: ${best.toFixed(1)} ms with maxTimeMS ${ms}`);
	}
});

test('killOp interrupts a running aggregation (11601), currentOp lists it', async () => {
	const victim = db.collection('one').aggregate([{ $project: { r: { $size: { $reduce: {
		input: { $range: [0, 100000] }, initialValue: [], in: { $concatArrays: ['$$value', ['$$this']] } } } } } }],
		{ comment: 'e2e-victim' }).toArray().then(() => 0, (e) => e);
	let op;
	for (let i = 0; i < 500 && !op; i++) {
		const r = await admin.command({ currentOp: 1, 'command.comment': 'e2e-victim' });
		op = r.inprog[0];
		if (!op) await new Promise((res) => setTimeout(res, 10));
	}
	assert.ok(op, 'the victim shows in currentOp');
	assert.equal(op.type, 'op');
	assert.equal(op.active, true);
	assert.equal(op.ns, 'e2e_interrupt.one');
	assert.equal(op.op, 'command');
	assert.equal(typeof op.opid, 'number');
	assert.match(op.desc, /^conn\d+$/);
	assert.equal(op.desc, `conn${op.connectionId}`);
	assert.match(op.client, /^127\.0\.0\.1:\d+$/);
	assert.ok(op.microsecs_running >= 0);
	assert.equal(op.command.aggregate, 'one');
	const k = await admin.command({ killOp: 1, op: op.opid });
	assert.equal(k.info, 'attempting to kill op');
	const t0 = performance.now();
	const err = await victim;
	assert.ok(err instanceof MongoServerError, `victim ended with ${err}`);
	assert.equal(err.code, 11601);
	assert.equal(err.codeName, 'Interrupted');
	assert.ok(performance.now() - t0 < 2000);
	await assert.rejects(admin.command({ killOp: 1 }), (e) => e.code === 4);
});

test('getMore: the find\'s maxTimeMS is the cursor\'s budget; getMore may not name one', async () => {
	const r = await db.command({ find: 'c', batchSize: 2, maxTimeMS: 100000 });
	await assert.rejects(db.command({ getMore: r.cursor.id, collection: 'c', maxTimeMS: 10 }),
		(e) => e.code === 2 && e.message === 'cannot set maxTimeMS on getMore command for a non-awaitData cursor');
	const more = await db.command({ getMore: r.cursor.id, collection: 'c', batchSize: 2 });
	assert.equal(more.cursor.nextBatch[0]._id, 2);
	await db.command({ killCursors: 'c', cursors: [r.cursor.id] });
});

test('--setParameter at startup, getParameter "*" and showDetails', async () => {
	const all = await admin.command({ getParameter: '*' });
	assert.equal(all.enableTestCommands, true);
	assert.equal(all.ttlMonitorSleepSecs, 7);
	assert.equal(all.ttlMonitorEnabled, true);
	assert.equal(all.requireApiVersion, false);
	assert.equal(all.ingressConnectionEstablishmentRateLimiterEnabled, false);
	assert.equal(all.ingressConnectionEstablishmentRatePerSec, 2147483647);
	assert.equal(all.ingressConnectionEstablishmentMaxQueueDepth, 0);
	assert.equal(all.ingressConnectionEstablishmentBurstCapacitySecs, Number.MAX_VALUE);
	const names = Object.keys(all).filter((k) => k !== 'ok');
	assert.deepEqual(names, [...names].sort());
	const d = await admin.command({ getParameter: { showDetails: true }, ttlMonitorSleepSecs: 1 });
	assert.deepEqual(d.ttlMonitorSleepSecs, { value: 7, settableAtRuntime: true, settableAtStartup: true });
	const e = await admin.command({ getParameter: { showDetails: true }, enableTestCommands: 1 });
	assert.deepEqual(e.enableTestCommands, { value: true, settableAtRuntime: false, settableAtStartup: true });
	await assert.rejects(admin.command({ setParameter: 1, enableTestCommands: false }),
		(err) => err.code === 20 && err.message === 'not allowed to change [enableTestCommands] at runtime');
});

test('ttlMonitorSleepSecs: set at runtime, the TTL monitor runs at the new period', async () => {
	const r = await admin.command({ setParameter: 1, ttlMonitorSleepSecs: 1 });
	assert.equal(r.was, 7);
	await assert.rejects(admin.command({ setParameter: 1, ttlMonitorSleepSecs: 0 }),
		(e) => e.code === 2 && e.message === 'Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than or equal to 1');
	const t = db.collection('ttl');
	await t.createIndex({ at: 1 }, { expireAfterSeconds: 0 });
	await t.insertMany([{ at: new Date(Date.now() - 60000) }, { at: new Date(Date.now() + 3600000) }]);
	let n = 2;
	for (let i = 0; i < 100 && n !== 1; i++) {
		await new Promise((res) => setTimeout(res, 100));
		n = await t.countDocuments({});
	}
	assert.equal(n, 1, 'the expired document is gone within a few periods of 1 s');
	await admin.command({ setParameter: 1, ttlMonitorSleepSecs: 60 });
});

test('requireApiVersion: commands must name apiVersion (498870)', async () => {
	await admin.command({ setParameter: 1, requireApiVersion: true });
	try {
		await assert.rejects(db.command({ ping: 1 }), (e) => e.code === 498870 &&
			e.message === "The apiVersion parameter is required, please configure your MongoClient's API version");
		const ok = await db.command({ ping: 1, apiVersion: '1' });
		assert.equal(ok.ok, 1);
	} finally {
		await admin.command({ setParameter: 1, requireApiVersion: false, apiVersion: '1' });
	}
	assert.equal((await db.command({ ping: 1 })).ok, 1);
});

test('ingress rate limiter: refused connections past the burst and the queue', async () => {
	await admin.command({ setParameter: 1, ingressConnectionEstablishmentRatePerSec: 1 });
	await admin.command({ setParameter: 1, ingressConnectionEstablishmentBurstCapacitySecs: 1 });
	await admin.command({ setParameter: 1, ingressConnectionEstablishmentMaxQueueDepth: 0 });
	await assert.rejects(admin.command({ setParameter: 1, ingressConnectionEstablishmentRatePerSec: 0 }), (e) => e.code === 2);
	await admin.command({ setParameter: 1, ingressConnectionEstablishmentRateLimiterEnabled: true });
	const before = (await admin.command({ serverStatus: 1 })).connections.establishmentRateLimit.rejected;
	const results = [];
	try {
		for (let i = 0; i < 4; i++) {
			const c = new MongoClient(uri, { serverSelectionTimeoutMS: 1500, connectTimeoutMS: 1500, maxPoolSize: 1 });
			results.push(await c.db('admin').command({ ping: 1 }).then(() => 'ok', () => 'refused'));
			await c.close().catch(() => {});
		}
	} finally {
		await admin.command({ setParameter: 1, ingressConnectionEstablishmentRateLimiterEnabled: false });
	}
	assert.ok(results.includes('refused'), `results ${results}`);
	const afterStatus = (await admin.command({ serverStatus: 1 })).connections;
	assert.ok(afterStatus.establishmentRateLimit.rejected > before);
	assert.equal(typeof afterStatus.queuedForEstablishment, 'number');
	// disabled again: new connections are admitted
	const c = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
	assert.equal((await c.db('admin').command({ ping: 1 })).ok, 1);
	await c.close();
});
