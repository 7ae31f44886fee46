// txn_node.test.js -- the Node driver's transactions and retryable writes
// against a `tamgad --replSet` (node:test): session.withTransaction over the
// seed's computed pattern (a review and its book's summary in one
// transaction), an aborted transaction leaving nothing, a write conflict
// with TransientTransactionError retried by withTransaction, the statements
// of one transaction spread over pooled connections, serverStatus counters,
// and a retried retryable write applied once.  TAMGA_URI from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, MongoServerError, Long } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db;

// initiate the one-member set (once per fresh --dbpath), then wait for it to
// be writable primary
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

before(async () => {
	await initiate();
	// discovered as a replica set: the driver's default retryWrites=true
	// puts an lsid and a txnNumber on every write below
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000, maxPoolSize: 8 });
	await client.connect();
	db = client.db('e2e_txn');
	await db.dropDatabase().catch(() => {});
	await db.createCollection('books');
	await db.createCollection('reviews');
	await db.collection('books').insertOne({ _id: 1, title: 'Dune', reviewCount: 0, ratingSum: 0 });
});
after(async () => { if (client) await client.close(); });

// the computed pattern's two writes, in one transaction
async function addReview(session, bookId, rating) {
	await db.collection('reviews').insertOne({ bookId, rating }, { session });
	await db.collection('books').updateOne({ _id: bookId }, { $inc: { reviewCount: 1, ratingSum: rating } },
		{ session });
}

test('withTransaction commits both writes', async () => {
	const session = client.startSession();
	try {
		await session.withTransaction(async () => { await addReview(session, 1, 5); },
			{ readConcern: { level: 'snapshot' }, writeConcern: { w: 'majority', j: true } });
	} finally { await session.endSession(); }
	const book = await db.collection('books').findOne({ _id: 1 });
	assert.equal(book.reviewCount, 1);
	assert.equal(book.ratingSum, 5);
	assert.equal(await db.collection('reviews').countDocuments({ bookId: 1 }), 1);
});

test('an aborted transaction leaves nothing, reads in it see its own writes only', async () => {
	const session = client.startSession();
	try {
		session.startTransaction();
		await addReview(session, 1, 1);
		const inside = await db.collection('books').findOne({ _id: 1 }, { session });
		assert.equal(inside.reviewCount, 2);
		const outside = await db.collection('books').findOne({ _id: 1 });
		assert.equal(outside.reviewCount, 1);
		await session.abortTransaction();
	} finally { await session.endSession(); }
	assert.equal((await db.collection('books').findOne({ _id: 1 })).reviewCount, 1);
	assert.equal(await db.collection('reviews').countDocuments({}), 1);
});

test('a write conflict is TransientTransactionError; withTransaction retries it', async () => {
	const s1 = client.startSession(), s2 = client.startSession();
	try {
		s1.startTransaction();
		await db.collection('books').updateOne({ _id: 1 }, { $inc: { ratingSum: 1 } }, { session: s1 });
		s2.startTransaction();
		await assert.rejects(
			db.collection('books').updateOne({ _id: 1 }, { $inc: { ratingSum: 1 } }, { session: s2 }),
			(e) => e instanceof MongoServerError && e.code === 112 && e.hasErrorLabel('TransientTransactionError'));
		await s2.abortTransaction().catch(() => {});
		let attempts = 0;
		const done = s2.withTransaction(async () => {
			attempts++;
			await db.collection('books').updateOne({ _id: 1 }, { $inc: { ratingSum: 10 } }, { session: s2 });
		});
		setTimeout(() => { s1.commitTransaction().catch(() => {}); }, 200);
		await done;
		assert.ok(attempts >= 1);
	} finally { await s1.endSession(); await s2.endSession(); }
	assert.equal((await db.collection('books').findOne({ _id: 1 })).ratingSum, 16);
});

test('one transaction over several pooled connections', async () => {
	const session = client.startSession();
	try {
		await session.withTransaction(async () => {
			// the first statement starts the transaction (sent alone: a
			// statement that overtook it would find no transaction, on mongod
			// too); the rest are issued at once, so the driver sends them on
			// different connections and the server runs them one at a time
			await db.collection('reviews').insertOne({ bookId: 2, rating: 0 }, { session });
			await Promise.all([1, 2, 3, 4, 5].map((i) =>
				db.collection('reviews').insertOne({ bookId: 2, rating: i }, { session })));
		});
	} finally { await session.endSession(); }
	assert.equal(await db.collection('reviews').countDocuments({ bookId: 2 }), 6);
});

test('commands refused in a transaction, and serverStatus.transactions', async () => {
	const session = client.startSession();
	try {
		session.startTransaction();
		await assert.rejects(db.command({ count: 'books' }, { session }),
			(e) => e.code === 263 && /Cannot run 'count' in a multi-document transaction/.test(e.message));
		await session.abortTransaction().catch(() => {});
	} finally { await session.endSession(); }
	const st = await db.admin().command({ serverStatus: 1 });
	assert.ok(st.transactions.totalCommitted >= 3);
	assert.ok(st.transactions.totalAborted >= 2);
	assert.equal(Number(st.transactions.currentOpen), 0);
});

test('a retryable write retried with the same txnNumber is applied once', async () => {
	// the driver puts its own session's lsid on the command (a pooled server
	// session that may have used small txnNumbers already): a large one
	const session = client.startSession();
	const txnNumber = Long.fromNumber(1000000);
	const cmd = { update: 'books', updates: [{ q: { _id: 1 }, u: { $inc: { reviewCount: 100 } } }], txnNumber };
	try {
		const r1 = await db.command(cmd, { session });
		const r2 = await db.command(cmd, { session });
		assert.equal(r1.n, 1);
		assert.equal(r2.n, 1);
		assert.equal((await db.collection('books').findOne({ _id: 1 })).reviewCount, 101);
		await assert.rejects(db.command({ ...cmd, txnNumber: Long.fromNumber(999999) }, { session }),
			(e) => e.code === 225);
	} finally { await session.endSession(); }
	const row = await client.db('config').collection('transactions').findOne({ txnNum: txnNumber });
	assert.ok(row && row.lastWriteDate instanceof Date);
});
