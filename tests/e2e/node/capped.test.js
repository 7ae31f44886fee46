// capped.test.js -- capped collections and tailable awaitData cursors through
// the official Node driver (node:test): a cursor of one client receives the
// documents another client inserts, each getMore blocked until the insert
// (woken by it, not by a poll), an empty batch after maxAwaitTimeMS with the
// cursor still alive, CappedPositionLost when capping overtakes the cursor,
// and concurrent writers keeping natural order == insertion order within the
// limits.  TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let reader, writer, rdb, wdb;

before(async () => {
	reader = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	writer = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await reader.connect();
	await writer.connect();
	rdb = reader.db('e2e_capped');
	wdb = writer.db('e2e_capped');
	await rdb.dropDatabase().catch(() => {});
});
after(async () => {
	if (reader) await reader.close();
	if (writer) await writer.close();
});

test('createCollection capped: options, stats, limits', async () => {
	const c = await wdb.createCollection('c', { capped: true, size: 4096, max: 5 });
	assert.equal(await c.isCapped(), true);
	const [info] = await wdb.listCollections({ name: 'c' }).toArray();
	assert.deepEqual(info.options, { capped: true, size: 4096, max: 5 });
	for (let i = 0; i < 12; i++) await c.insertOne({ _id: i });
	const ids = (await c.find().toArray()).map((d) => d._id);
	assert.deepEqual(ids, [7, 8, 9, 10, 11]);
	const st = await wdb.command({ collStats: 'c' });
	assert.equal(st.capped, true);
	assert.equal(st.max, 5);
	assert.equal(st.maxSize, 4096);
	// a document larger than the size limit stays, alone (mongod 7.0+)
	await c.insertOne({ _id: 'big', big: 'x'.repeat(5000) });
	assert.deepEqual((await c.find().toArray()).map((d) => d._id), ['big']);
});

test('tailable awaitData cursor is woken by another client\'s insert', async () => {
	const name = 'tail';
	await wdb.createCollection(name, { capped: true, size: 1 << 20 });
	await wdb.collection(name).insertOne({ _id: 0 });
	const cursor = rdb.collection(name).find({}, { tailable: true, awaitData: true, maxAwaitTimeMS: 5000 });
	assert.equal((await cursor.next())._id, 0);
	for (let i = 1; i <= 3; i++) {
		// the getMore is already waiting when the insert comes
		const started = Date.now();
		const next = cursor.next();
		await new Promise((r) => setTimeout(r, 150));
		await wdb.collection(name).insertOne({ _id: i });
		const doc = await next;
		const waited = Date.now() - started;
		assert.equal(doc._id, i);
		assert.ok(waited >= 140, `the getMore waited (${waited} ms)`);
		assert.ok(waited < 4000, `woken by the insert, not the await timeout (${waited} ms)`);
	}
	await cursor.close();
});

test('awaitData getMore times out with an empty batch, cursor alive', async () => {
	const name = 'tail_timeout';
	await wdb.createCollection(name, { capped: true, size: 1 << 20 });
	await wdb.collection(name).insertOne({ _id: 1 });
	const first = await rdb.command({ find: name, tailable: true, awaitData: true });
	const id = first.cursor.id;
	assert.notEqual(Number(id), 0);
	const started = Date.now();
	const more = await rdb.command({ getMore: id, collection: name, maxTimeMS: 300 });
	const waited = Date.now() - started;
	assert.equal(more.cursor.nextBatch.length, 0);
	assert.notEqual(Number(more.cursor.id), 0);
	assert.ok(waited >= 250 && waited < 3000, `waited about maxTimeMS (${waited} ms)`);
	await wdb.collection(name).insertOne({ _id: 2 });
	const again = await rdb.command({ getMore: id, collection: name, maxTimeMS: 300 });
	assert.deepEqual(again.cursor.nextBatch.map((d) => d._id), [2]);
	await rdb.command({ killCursors: name, cursors: [id] });
});

test('tailable cursor dies with CappedPositionLost when capping passes it', async () => {
	const name = 'lost';
	await wdb.createCollection(name, { capped: true, size: 4096, max: 3 });
	for (let i = 0; i < 3; i++) await wdb.collection(name).insertOne({ _id: i });
	const first = await rdb.command({ find: name, tailable: true, batchSize: 1 });
	assert.deepEqual(first.cursor.firstBatch.map((d) => d._id), [0]);
	for (let i = 3; i < 8; i++) await wdb.collection(name).insertOne({ _id: i });
	await assert.rejects(rdb.command({ getMore: first.cursor.id, collection: name }),
		(e) => e.code === 136 && e.codeName === 'CappedPositionLost');
});

test('concurrent writers: natural order is insertion order, limits kept', async () => {
	const name = 'concurrent';
	const max = 50;
	await wdb.createCollection(name, { capped: true, size: 1 << 20, max });
	const clients = [];
	for (let w = 0; w < 4; w++) {
		const cl = new MongoClient(uri, { serverSelectionTimeoutMS: 10000, maxPoolSize: 4 });
		await cl.connect();
		clients.push(cl);
	}
	// each writer numbers its own documents; a shared clock shows commit order
	await Promise.all(clients.map(async (cl, w) => {
		const coll = cl.db('e2e_capped').collection(name);
		const work = [];
		for (let k = 0; k < 4; k++) {
			work.push((async () => {
				for (let i = 0; i < 20; i++) await coll.insertOne({ w, k, i });
			})());
		}
		await Promise.all(work);
	}));
	for (const cl of clients) await cl.close();
	const docs = await rdb.collection(name).find().toArray();
	assert.equal(docs.length, max);
	// per (writer, stream) the sequence numbers appear in the order written
	const last = new Map();
	for (const d of docs) {
		const key = `${d.w}/${d.k}`;
		if (last.has(key)) assert.ok(d.i > last.get(key), `order of ${key}`);
		last.set(key, d.i);
	}
	const st = await wdb.command({ collStats: name });
	assert.equal(st.count, max);
});

test('killCursors interrupts a waiting awaitData getMore', async () => {
	const name = 'tail_kill';
	await wdb.createCollection(name, { capped: true, size: 1 << 20 });
	await wdb.collection(name).insertOne({ _id: 1 });
	const first = await rdb.command({ find: name, tailable: true, awaitData: true });
	const id = first.cursor.id;
	const started = Date.now();
	// the outcome is caught at once: the rejection may come while killCursors is awaited
	const waiting = rdb.command({ getMore: id, collection: name, maxTimeMS: 10000 }).then(() => null, (e) => e);
	await new Promise((r) => setTimeout(r, 200));
	const k = await wdb.command({ killCursors: name, cursors: [id] });
	assert.equal(k.cursorsKilled.length, 1);
	const e = await waiting;
	assert.ok(e !== null, 'the getMore failed');
	assert.equal(e.code, 237);
	assert.equal(e.codeName, 'CursorKilled');
	assert.ok(Date.now() - started < 5000, 'the wait ended with the kill');
	await assert.rejects(rdb.command({ getMore: id, collection: name }), (e) => e.code === 43);
});

test('dropping the collection ends a waiting awaitData getMore', async () => {
	const name = 'tail_drop';
	await wdb.createCollection(name, { capped: true, size: 1 << 20 });
	await wdb.collection(name).insertOne({ _id: 1 });
	const first = await rdb.command({ find: name, tailable: true, awaitData: true });
	const started = Date.now();
	const waiting = rdb.command({ getMore: first.cursor.id, collection: name, maxTimeMS: 10000 })
		.then(() => null, (e) => e);
	await new Promise((r) => setTimeout(r, 200));
	await wdb.collection(name).drop();
	const e = await waiting;
	assert.ok(e !== null, 'the getMore failed');
	assert.equal(e.code, 175);   // QueryPlanKilled, as mongod's killed plan
	assert.ok(Date.now() - started < 5000, 'the wait ended with the drop');
});
