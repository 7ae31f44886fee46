// cs_seed_sync.js -- the seeds' subset and computed patterns kept by a
// change-stream consumer: books carry reviewCount / ratingSum (computed) and
// their three latest reviews (subset); four writers insert, edit and delete
// reviews concurrently while one consumer reads the reviews' change stream
// and applies each event to the books (incrementally for the sums, from a
// map of what each review was; the subset re-read from the reviews of the
// event's book).  Once the writers stop and the consumer has caught up with
// the last write's operationTime, every book must equal a recomputation
// from the reviews.  TAMGA_URI from with_tamgad.sh.  Prints "N passed, N failed".
'use strict';
const path = require('node:path');
const assert = require('node:assert/strict');
const { MongoClient, Timestamp } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI;
const BOOKS = 5, WRITERS = 4, OPS = 60;
let passed = 0, failed = 0;

async function initiate() {
	const d = new MongoClient(uri, { directConnection: true });
	await d.db('admin').command({ replSetInitiate: {} }).catch((e) => { if (e.code !== 23) throw e; });
	for (let i = 0; i < 100; i++) {
		if ((await d.db('admin').command({ hello: 1 })).isWritablePrimary) break;
		await new Promise((r) => setTimeout(r, 100));
	}
	await d.close();
}

function rnd(n) { return Math.floor(Math.random() * n); }

(async () => {
	await initiate();
	const client = new MongoClient(uri, { directConnection: true, maxPoolSize: 16 });
	await client.connect();
	const db = client.db('e2e_cs_seed');
	await db.dropDatabase();
	const books = db.collection('books'), reviews = db.collection('reviews');
	for (let b = 0; b < BOOKS; b++) await books.insertOne({ _id: b, reviewCount: 0, ratingSum: 0, recentReviews: [] });
	await reviews.createIndex({ bookId: 1, at: -1 });

	// the consumer
	const stream = reviews.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 100 });
	await stream.tryNext();
	const known = new Map();   // review _id -> {bookId, rating}
	let lastSeen = new Timestamp({ t: 0, i: 0 }), stop = false;
	async function refreshSubset(bookId) {
		const recent = await reviews.find({ bookId }, { sort: { at: -1, _id: -1 }, limit: 3, projection: { bookId: 0 } }).toArray();
		await books.updateOne({ _id: bookId }, { $set: { recentReviews: recent } });
	}
	async function apply(ev) {
		const id = ev.documentKey._id;
		if (ev.operationType === 'insert') {
			const r = ev.fullDocument;
			known.set(id, { bookId: r.bookId, rating: r.rating });
			await books.updateOne({ _id: r.bookId }, { $inc: { reviewCount: 1, ratingSum: r.rating } });
			await refreshSubset(r.bookId);
		} else if (ev.operationType === 'update' || ev.operationType === 'replace') {
			const was = known.get(id);
			const f = ev.updateDescription && ev.updateDescription.updatedFields;
			const rating = f && f.rating !== undefined ? f.rating : ev.fullDocument ? ev.fullDocument.rating : was.rating;
			await books.updateOne({ _id: was.bookId }, { $inc: { ratingSum: rating - was.rating } });
			known.set(id, { bookId: was.bookId, rating });
			await refreshSubset(was.bookId);
		} else if (ev.operationType === 'delete') {
			const was = known.get(id);
			known.delete(id);
			await books.updateOne({ _id: was.bookId }, { $inc: { reviewCount: -1, ratingSum: -was.rating } });
			await refreshSubset(was.bookId);
		}
		lastSeen = ev.clusterTime;
	}
	const consumer = (async () => {
		while (!stop) {
			const ev = await stream.tryNext();
			if (ev) await apply(ev);
		}
	})();

	// the writers
	let next = 0, lastOp = new Timestamp({ t: 0, i: 0 });
	const note = (r) => { if (r && r.operationTime && r.operationTime.compare(lastOp) > 0) lastOp = r.operationTime; };
	async function writer(w) {
		const mine = [];
		for (let k = 0; k < OPS; k++) {
			const op = mine.length === 0 ? 0 : rnd(3);
			if (op === 0) {
				const id = `r${w}-${next++}`;
				note(await db.command({ insert: 'reviews', documents: [{ _id: id, bookId: rnd(BOOKS), rating: 1 + rnd(5), at: new Date(Date.now() + k) }] }));
				mine.push(id);
			} else if (op === 1) {
				note(await db.command({ update: 'reviews', updates: [{ q: { _id: mine[rnd(mine.length)] }, u: { $set: { rating: 1 + rnd(5) } } }] }));
			} else {
				const id = mine.splice(rnd(mine.length), 1)[0];
				note(await db.command({ delete: 'reviews', deletes: [{ q: { _id: id }, limit: 1 }] }));
			}
		}
	}
	await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
	// wait for the consumer to pass the last write
	const deadline = Date.now() + 30000;
	while (lastSeen.compare(lastOp) < 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
	stop = true;
	await consumer;
	await stream.close();

	try {
		assert.ok(lastSeen.compare(lastOp) >= 0, 'the consumer caught up');
		for (let b = 0; b < BOOKS; b++) {
			const book = await books.findOne({ _id: b });
			const all = await reviews.find({ bookId: b }).toArray();
			const recent = await reviews.find({ bookId: b }, { sort: { at: -1, _id: -1 }, limit: 3, projection: { bookId: 0 } }).toArray();
			assert.deepEqual({ reviewCount: book.reviewCount, ratingSum: book.ratingSum, recentReviews: book.recentReviews },
				{ reviewCount: all.length, ratingSum: all.reduce((s, r) => s + r.rating, 0), recentReviews: recent }, `book ${b}`);
		}
		passed++;
		console.log(`ok - ${WRITERS} writers x ${OPS} ops: the computed and subset copies equal a recomputation`);
	} catch (e) {
		failed++;
		console.log(`not ok - copies: ${e.message}`);
	}
	await client.close();
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
})().catch((e) => { console.log(`not ok - run: ${e.stack || e}`); process.exit(1); });
