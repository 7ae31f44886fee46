// geo.test.js -- the official Node driver against tamgad (node:test): the
// bookshop example (examples/geo/bookshops.js: "shops within 5 km of a
// point, nearest first", $geoNear distances, delivery zones), $nearSphere
// with legacy pairs in radians, $geoWithin $centerSphere, a compound
// 2dsphere index with a field before the geo one, getMore batches of a
// near query, and the driver seeing mongod's codes (16755, 291).
// TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));
const { main: bookshops } = require(path.join(__dirname, '../../../examples/geo/bookshops.js'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let client, db;

before(async () => {
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_geo');
	await db.dropDatabase().catch(() => {});
});
after(async () => { if (client) await client.close(); });

test('bookshop example: within 5 km nearest first, $geoNear km, zones', async () => {
	const got = await bookshops(uri);
	assert.deepEqual(got.near, ['Mitte Antiquariat', 'Books of Kreuzberg', 'Prenzlauer Papers']);
	assert.deepEqual(got.withDist.map((s) => s.name), got.near);
	assert.equal(got.withDist[0].km, 0.27);
	assert.ok(got.withDist.every((s, i, a) => i === 0 || a[i - 1].km <= s.km));
	assert.equal(got.zone, 'west');
});

test('legacy pairs: $nearSphere in radians, $centerSphere', async () => {
	const c = db.collection('legacy');
	await c.createIndex({ loc: '2dsphere' });
	await c.insertMany([{ _id: 1, loc: [0, 0] }, { _id: 2, loc: [0, 1] }, { _id: 3, loc: [0, 3] }]);
	const ids = (await c.find({ loc: { $nearSphere: [0, 0], $maxDistance: 2 * Math.PI / 180 } }).toArray()).map((d) => d._id);
	assert.deepEqual(ids, [1, 2]);
	const within = await c.find({ loc: { $geoWithin: { $centerSphere: [[0, 0], 3.5 * Math.PI / 180] } } }).sort({ _id: 1 }).toArray();
	assert.deepEqual(within.map((d) => d._id), [1, 2, 3]);
	const [first] = await c.aggregate([{ $geoNear: { near: [0, 0], distanceField: 'd', spherical: true, minDistance: 0.01 } }]).toArray();
	assert.equal(first._id, 2);
	assert.ok(Math.abs(first.d - Math.PI / 180) < 1e-12);
});

test('compound index with a field before the geo one, batches of a near query', async () => {
	const c = db.collection('compound');
	await c.createIndex({ kind: 1, loc: '2dsphere' });
	const docs = [];
	for (let i = 0; i < 250; i++)
		docs.push({ _id: i, kind: i % 2 ? 'book' : 'cafe', loc: { type: 'Point', coordinates: [(i % 50) * 0.01, Math.floor(i / 50) * 0.01] } });
	await c.insertMany(docs);
	const got = await c.find({ kind: 'book', loc: { $near: { $geometry: { type: 'Point', coordinates: [0, 0] } } } }).batchSize(10).toArray();
	assert.equal(got.length, 125);
	let last = -1;
	for (const d of got) {
		const dist = Math.hypot(d.loc.coordinates[0], d.loc.coordinates[1]);
		assert.ok(dist >= last - 1e-9);
		last = dist;
		assert.equal(d.kind, 'book');
	}
});

test('errors reach the driver with mongod codes', async () => {
	const c = db.collection('bad');
	await c.createIndex({ loc: '2dsphere' });
	await assert.rejects(c.insertOne({ loc: { type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0]]] } }), (e) => e.code === 16755);
	await db.collection('plain').insertOne({ loc: [0, 0] });
	await assert.rejects(db.collection('plain').find({ loc: { $near: [0, 0] } }).toArray(), (e) => e.code === 291);
	assert.equal(await c.countDocuments({}), 0);
});
