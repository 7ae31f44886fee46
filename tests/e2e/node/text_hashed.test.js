// text_hashed.test.js -- the official Node driver against tamgad (node:test):
// a weighted compound text index, $text with textScore projection and
// sort, $language and $caseSensitive, the seed-flavoured "reviews matching
// 'slow start' by relevance", and a hashed index's equality plan and its
// refusals.  TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db;

before(async () => {
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_text_hashed');
	await db.dropDatabase().catch(() => {});
});
after(async () => { if (client) await client.close(); });

test('reviews by relevance: weights, textScore sort', async () => {
	const reviews = db.collection('reviews');
	await reviews.insertMany([
		{ _id: 1, shop: 'north', title: 'Slow start', body: 'a slow start but then a great read' },
		{ _id: 2, shop: 'north', title: 'Great', body: 'slow delivery' },
		{ _id: 3, shop: 'north', title: 'Fine', body: 'nothing to say' },
		{ _id: 4, shop: 'south', title: 'Slow start', body: 'slow start' },
	]);
	const name = await reviews.createIndex({ shop: 1, title: 'text', body: 'text' },
		{ weights: { title: 3 }, name: 'reviews_text' });
	assert.equal(name, 'reviews_text');
	const got = await reviews.find({ shop: 'north', $text: { $search: 'slow start' } },
		{ projection: { score: { $meta: 'textScore' } }, sort: { score: { $meta: 'textScore' } } }).toArray();
	assert.deepEqual(got.map((d) => d._id), [1, 2]);
	// title "Slow start" (weight 3): slow 3 * 0.75, start 3 * 0.75; body: slow 0.75 / 0.5 + 1/6 ...
	assert.ok(got[0].score > got[1].score);
	assert.equal(got[1].score, 0.75);
	const err = await reviews.find({ $text: { $search: 'slow' } }).toArray().catch((e) => e);
	assert.equal(err.code, 291);   // NoQueryExecutionPlans: the prefix field needs an equality
});

test('$caseSensitive, $language, negations', async () => {
	const notes = db.collection('notes');
	await notes.insertMany([
		{ _id: 1, t: 'Running Fast' }, { _id: 2, t: 'running slow' }, { _id: 3, t: 'the the' },
	]);
	await notes.createIndex({ t: 'text' });
	const ids = async (filter) => (await notes.find(filter).sort({ _id: 1 }).toArray()).map((d) => d._id);
	assert.deepEqual(await ids({ $text: { $search: 'runs' } }), [1, 2]);
	assert.deepEqual(await ids({ $text: { $search: 'Running', $caseSensitive: true } }), [1]);
	assert.deepEqual(await ids({ $text: { $search: 'running -slow' } }), [1]);
	assert.deepEqual(await ids({ $text: { $search: 'the' } }), []);
	assert.deepEqual(await ids({ $text: { $search: 'the', $language: 'none' } }), []);
	const e = await notes.find({ $text: { $search: 'x', $language: 'klingon' } }).toArray().catch((x) => x);
	assert.equal(e.code, 2);
	assert.equal(e.message, 'unsupported language: "klingon" for text index version 3');
});

test('hashed index: equality plan, arrays refused', async () => {
	const users = db.collection('users');
	await users.insertMany([{ _id: 1, k: 10 }, { _id: 2, k: 10.5 }, { _id: 3, k: 'x' }]);
	await users.createIndex({ k: 'hashed' });
	assert.deepEqual(await users.find({ k: 10 }).toArray(), [{ _id: 1, k: 10 }]);
	const ex = await users.find({ k: 10 }).explain();
	assert.equal(ex.queryPlanner.winningPlan.stage, 'FETCH');
	assert.equal(ex.queryPlanner.winningPlan.inputStage.stage, 'IXSCAN');
	assert.equal(ex.queryPlanner.winningPlan.inputStage.indexName, 'k_hashed');
	const e = await users.insertOne({ k: [1] }).catch((x) => x);
	assert.equal(e.code, 16766);
	assert.equal(e.message, 'Error: hashed indexes do not currently support array values. Found array at path: k');
	const u = await users.createIndex({ z: 'hashed' }, { unique: true }).catch((x) => x);
	assert.equal(u.code, 16764);
});
