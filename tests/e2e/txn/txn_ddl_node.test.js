// txn_ddl_node.test.js -- catalog changes and capped collections inside
// transactions through the Node driver against a `tamgad --replSet`
// (node:test): session.withTransaction creating a collection (explicitly,
// by an insert, by createIndex) that others see only at commit, an abort
// leaving nothing, a creator outside the transaction winning (the commit
// fails with WriteConflict, TransientTransactionError), and the capped
// refusals (263 for inserts, 20 for deletes); and a snapshot session's
// cursor whose later batches (getMore) still read at its atClusterTime.
// TAMGA_URI from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db;

async function initiate() {
	const direct = new MongoClient(uri, { directConnection: true, serverSelectionTimeoutMS: 10000 });
	try {
		await direct.db('admin').command({ replSetInitiate: {} }).catch((e) => {
			if (e.code !== 23) throw e;   // AlreadyInitialized
		});
		for (let i = 0; i < 100; i++) {
			const h = await direct.db('admin').command({ hello: 1 });
			if (h.isWritablePrimary) return;
			await new Promise((r) => setTimeout(r, 100));
		}
		throw new Error('the set never got a primary');
	} finally { await direct.close(); }
}

async function names() {
	return (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
}

before(async () => {
	await initiate();
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_txn_ddl');
	await db.dropDatabase().catch(() => {});
});
after(async () => { if (client) await client.close(); });

test('withTransaction creates collections and an index, seen by others at commit', async () => {
	const session = client.startSession();
	try {
		await session.withTransaction(async () => {
			await db.createCollection('orders', { session });
			await db.collection('orders').createIndex({ sku: 1 }, { unique: true, session });
			await db.collection('orders').insertOne({ _id: 1, sku: 'a' }, { session });
			await db.collection('lines').insertOne({ order: 1, qty: 2 }, { session });   // implicit
			assert.deepEqual(await names(), []);   // nobody else sees them yet
			assert.equal(await db.collection('orders').countDocuments({}, { session }), 1);
		});
	} finally { await session.endSession(); }
	assert.deepEqual(await names(), ['lines', 'orders']);
	const idx = (await db.collection('orders').indexes()).map((i) => i.name);
	assert.deepEqual(idx, ['_id_', 'sku_1']);
	await assert.rejects(db.collection('orders').insertOne({ _id: 2, sku: 'a' }), (e) => e.code === 11000);
});

test('an aborted transaction leaves no collection behind', async () => {
	const session = client.startSession();
	try {
		session.startTransaction();
		await db.collection('gone').insertOne({ x: 1 }, { session });
		await session.abortTransaction();
	} finally { await session.endSession(); }
	assert.ok(!(await names()).includes('gone'));
	await db.collection('gone').insertOne({ x: 2 });
	assert.equal(await db.collection('gone').countDocuments(), 1);
});

test('a creator outside the transaction wins; the commit is a WriteConflict', async () => {
	const session = client.startSession();
	try {
		session.startTransaction();
		await db.collection('race').insertOne({ from: 'txn' }, { session });
		await db.createCollection('race');
		await db.collection('race').insertOne({ from: 'outside' });
		await assert.rejects(session.commitTransaction(), (e) => e.code === 112 &&
			e.hasErrorLabel('TransientTransactionError'));
	} finally { await session.endSession(); }
	assert.deepEqual((await db.collection('race').find({}, { projection: { _id: 0 } }).toArray()),
		[{ from: 'outside' }]);
});

test('new indexes on an existing collection are refused inside', async () => {
	const session = client.startSession();
	try {
		session.startTransaction();
		await assert.rejects(db.collection('orders').createIndex({ other: 1 }, { session }), (e) => e.code === 263 &&
			/Cannot create new indexes on existing collection e2e_txn_ddl.orders/.test(e.message));
		await session.abortTransaction().catch(() => {});
	} finally { await session.endSession(); }
});

test('capped collections refuse transactional writes with mongod codes', async () => {
	await db.createCollection('log', { capped: true, size: 65536 });
	await db.collection('log').insertOne({ _id: 1 });
	const session = client.startSession();
	try {
		session.startTransaction();
		await assert.rejects(db.collection('log').insertOne({ _id: 2 }, { session }), (e) => e.code === 263 &&
			e.message === "Collection 'e2e_txn_ddl.log' is a capped collection. Writes in transactions are not " +
			'allowed on capped collections.');
		await session.abortTransaction().catch(() => {});
		session.startTransaction();
		await assert.rejects(db.collection('log').deleteOne({ _id: 1 }, { session }), (e) => e.code === 20 &&
			e.message === 'Cannot remove from a capped collection in a multi-document transaction: e2e_txn_ddl.log');
		await session.abortTransaction().catch(() => {});
	} finally { await session.endSession(); }
	assert.equal(await db.collection('log').countDocuments(), 1);
});

test('a snapshot cursor reads every batch at its atClusterTime', async () => {
	const coll = db.collection('snap');
	await coll.insertMany([{ _id: 1, v: 1 }, { _id: 2, v: 2 }, { _id: 3, v: 3 }]);
	const session = client.startSession({ snapshot: true });
	try {
		const cursor = coll.find({}, { session, batchSize: 1, sort: { _id: 1 } });
		const first = await cursor.next();
		assert.equal(first.v, 1);
		// changed and added after the first batch, outside the session
		await coll.updateOne({ _id: 2 }, { $set: { v: 20 } });
		await coll.deleteOne({ _id: 3 });
		await coll.insertOne({ _id: 4, v: 4 });
		const rest = await cursor.toArray();   // getMores
		assert.deepEqual(rest.map((d) => d.v), [2, 3]);
	} finally { await session.endSession(); }
	assert.deepEqual((await coll.find({}, { sort: { _id: 1 } }).toArray()).map((d) => d.v), [1, 20, 4]);
});
