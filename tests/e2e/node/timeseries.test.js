// timeseries.test.js -- time-series and clustered collections through the
// official Node driver (node:test): createCollection with the driver's
// timeseries and clusteredIndex options, concurrent insertMany batches
// from two clients routed into buckets without losing a measurement, the
// seed's sensor queries (average per sensor per hour, last reading per
// sensor) equal on a time-series and a plain collection (with mongod's
// lastpoint and include-list explain shapes), rawData, and
// clustered _id lookups and ranges.  TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, Double } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
let a, b, db, db2;
const base = Date.UTC(2024, 0, 1);

before(async () => {
	a = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	b = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await a.connect();
	await b.connect();
	db = a.db('e2e_ts');
	db2 = b.db('e2e_ts');
	await db.dropDatabase().catch(() => {});
});
after(async () => {
	if (a) await a.close();
	if (b) await b.close();
});

function batch(from, n) {
	const docs = [];
	for (let i = from; i < from + n; i++)
		docs.push({ sensor: i % 10, t: new Date(base + Math.floor(i / 10) * 1000), temp: (i * 7) % 31, hum: (i * 3) % 17 });
	return docs;
}

test('createCollection with timeseries, concurrent inserts', async () => {
	await db.createCollection('m', { timeseries: { timeField: 't', metaField: 'sensor', granularity: 'seconds' } });
	await db.createCollection('plain');
	const colls = await db.listCollections({ name: 'm' }).toArray();
	assert.equal(colls[0].type, 'timeseries');
	const work = [];
	for (let k = 0; k < 8; k++) {
		const docs = batch(k * 500, 500);
		work.push((k % 2 ? db2 : db).collection('m').insertMany(docs));
		work.push(db.collection('plain').insertMany(docs.map(d => ({ ...d }))));
	}
	await Promise.all(work);
	assert.equal(await db.collection('m').countDocuments(), 4000);
	const buckets = await db.command({ count: 'm', rawData: true });
	assert.ok(buckets.n >= 10 && buckets.n < 400, `buckets ${buckets.n}`);
});

test('the seed queries answer the same on both', async () => {
	const hourly = [
		{ $match: { t: { $gte: new Date(base), $lt: new Date(base + 86400000) } } },
		{ $group: { _id: { s: '$sensor', h: { $dateTrunc: { date: '$t', unit: 'hour' } } }, avg: { $avg: '$temp' }, n: { $sum: 1 } } },
		{ $sort: { '_id.s': 1, '_id.h': 1 } }];
	const last = [{ $sort: { t: -1 } }, { $group: { _id: '$sensor', t: { $first: '$t' } } }, { $sort: { _id: 1 } }];
	for (const p of [hourly, last]) {
		const x = await db.collection('m').aggregate(p).toArray();
		const y = await db.collection('plain').aggregate(p).toArray();
		assert.deepEqual(x, y);
		assert.ok(x.length > 0);
	}
	// explain in mongod's lastpoint shape: the bucket-level sort (in the $cursor) and $group, then the
	// unpack of only the fields the pipeline reads
	const e = await db.collection('m').aggregate([{ $sort: { sensor: 1, t: -1 } },
		{ $group: { _id: '$sensor', t: { $first: '$t' }, temp: { $first: '$temp' } } }]).explain();
	assert.deepEqual(e.stages[0].$cursor.queryPlanner.winningPlan.sortPattern, { meta: 1, 'control.max.t': -1, 'control.min.t': -1 });
	assert.deepEqual(e.stages[1].$group, { _id: '$meta', meta: { $first: '$meta' }, control: { $first: '$control' }, data: { $first: '$data' } });
	// mongod's order: its sorted field set, then the metaField
	assert.deepEqual(e.stages[2].$_internalUnpackBucket.include, ['t', 'temp', 'sensor']);
	const h = await db.collection('m').aggregate(hourly).explain();
	const hu = h.stages.find(st => st.$_internalUnpackBucket).$_internalUnpackBucket;
	assert.deepEqual(hu.include, ['t', 'temp', 'sensor']);
	// the $match is the unpack's eventFilter, with the wholeBucketFilter of its time range
	assert.deepEqual(hu.eventFilter, { $and: [{ t: { $gte: new Date(base) } }, { t: { $lt: new Date(base + 86400000) } }] });
	assert.deepEqual(hu.wholeBucketFilter,
		{ $and: [{ 'control.min.t': { $gte: new Date(base) } }, { 'control.max.t': { $lt: new Date(base + 86400000) } }] });
	// mongod's $group on the buckets: an _id expression over the meta renamed onto "meta", {$sum: 1.0} the
	// buckets' count (an int, as mongod answers it; the plain collection sums doubles)
	const cg = [{ $group: { _id: { $mod: ['$sensor', 3] }, n: { $sum: new Double(1) }, hi: { $max: '$temp' } } }, { $sort: { _id: 1 } }];
	const ce = await db.collection('m').aggregate(cg).explain();
	assert.equal(ce.stages[1].$group._id.$mod[0], '$meta');
	assert.equal(ce.stages[1].$group.n.$sum.$cond[1], '$control.count');
	assert.ok(!ce.stages.some(st => st.$_internalUnpackBucket));
	const cx = await db.collection('m').aggregate(cg, { promoteValues: false }).toArray();
	const cy = await db.collection('plain').aggregate(cg, { promoteValues: false }).toArray();
	assert.equal(cx[0].n._bsontype, 'Int32');
	assert.equal(cy[0].n._bsontype, 'Double');
	assert.deepEqual(cx.map(d => [d._id.valueOf(), d.n.valueOf(), d.hi.valueOf()]), cy.map(d => [d._id.valueOf(), d.n.valueOf(), d.hi.valueOf()]));
	const r = await db.collection('m').find({ sensor: 3, temp: { $gt: 20 } }).sort({ t: 1 }).project({ _id: 0 }).toArray();
	const s = await db.collection('plain').find({ sensor: 3, temp: { $gt: 20 } }).sort({ t: 1 }).project({ _id: 0 }).toArray();
	assert.deepEqual(r.map(d => [d.t.getTime(), d.temp]), s.map(d => [d.t.getTime(), d.temp]));
});

test('rawData through the driver', async () => {
	const raw = await db.collection('m').find({}, { rawData: true }).limit(1).toArray();
	assert.ok([2, 3].includes(raw[0].control.version), 'compressed (3: times out of order)');
	assert.ok('meta' in raw[0]);
});

test('buckets are compressed (control.version 2, BSONColumn) and read back', async () => {
	await db.createCollection('full', { timeseries: { timeField: 't', metaField: 'sensor' } });
	const docs = [];
	for (let i = 0; i < 2500; i++)
		docs.push({ sensor: 'a', t: new Date(base + i * 1000), ...(i % 7 === 0 ? {} : { v: i * 0.5 }), s: `k${i % 3}`,
			...(i % 5 ? { o: { x: i, y: [i % 2, 'q'] } } : {}) });
	await db.collection('full').insertMany(docs);
	const raw = await db.collection('full').find({}, { rawData: true }).sort({ 'control.min.t': 1 }).toArray();
	assert.deepEqual(raw.map(b => b.control.version), [2, 2, 2]);
	assert.deepEqual(raw.map(b => b.control.count), [1000, 1000, 500]);
	for (const f of ['t', 'v', 's', 'o'])
		assert.equal(raw[0].data[f].sub_type, 7, `column ${f}`);
	assert.ok(raw[0].data.t.buffer.length < 100, 'time column compressed');
	const back = await db.collection('full').find({}, { projection: { _id: 0 } }).sort({ t: 1 }).toArray();
	assert.equal(back.length, 2500);
	assert.deepEqual(back.map(d => [d.t.getTime(), d.v, d.s, d.o]),
		docs.map(d => [d.t.getTime(), d.v, d.s, d.o]));
	assert.equal(await db.collection('full').countDocuments({ v: { $gte: 100, $lt: 200 } }),
		docs.filter(d => d.v !== undefined && d.v >= 100 && d.v < 200).length);
});

test('open buckets are compressed from the first insert; one-by-one appends read back', async () => {
	await db.createCollection('inc', { timeseries: { timeField: 't', metaField: 'm' } });
	const c = db.collection('inc');
	await c.insertOne({ m: 1, t: new Date(base), a: 1.5 });
	let raw = await c.find({}, { rawData: true }).toArray();
	assert.equal(raw.length, 1);
	assert.equal(raw[0].control.version, 2);
	assert.equal(raw[0].control.count, 1);
	assert.equal(raw[0].data.a.sub_type, 7);
	// one measurement per insert, every kind of value, a field that appears later,
	// missing values, runs of one value, a time out of order (control.version 3)
	const docs = [];
	for (let i = 0; i < 400; i++) {
		const d = { m: i % 2, t: new Date(base + 1000 + i * 1000 - (i === 350 ? 5000 : 0)) };
		if (i % 9) d.a = i % 3 ? i * 0.25 : 7;
		d.s = `s${Math.floor(i / 40)}`;
		// one type per field: a type change would close the bucket (schema change)
		if (i > 100 && i % 4 !== 0) d.late = { x: i % 5, y: [1, 'q'] };
		if (i % 50 === 0) d.n = i;
		docs.push(d);
		await c.insertOne(d);
	}
	raw = await c.find({}, { rawData: true }).sort({ meta: 1 }).toArray();
	assert.deepEqual(raw.map(b => b.control.version), [3, 2]);
	assert.deepEqual(raw.map(b => b.control.count), [200, 201]);
	for (const b of raw)
		for (const f of Object.keys(b.data))
			assert.equal(b.data[f].sub_type, 7, `column ${f}`);
	const back = await c.find({}, { projection: { _id: 0 } }).sort({ m: 1, t: 1 }).toArray();
	const want = [{ m: 1, t: new Date(base), a: 1.5 }, ...docs].sort((x, y) => x.m - y.m || x.t - y.t);
	// the fields as inserted (the driver added _id), in any order
	const canon = d => JSON.stringify(Object.keys(d).filter(k => k !== '_id').sort().map(k => [k, d[k]]));
	assert.deepEqual(back.map(canon), want.map(canon));
});

test('clustered collection through the driver', async () => {
	await db.createCollection('c', { clusteredIndex: { key: { _id: 1 }, unique: true, name: 'cl' } });
	await db.collection('c').insertMany([...Array(200).keys()].map(i => ({ _id: 199 - i, v: i })));
	const ix = await db.collection('c').listIndexes().toArray();
	assert.deepEqual(ix, [{ v: 2, key: { _id: 1 }, name: 'cl', unique: true, clustered: true }]);
	assert.equal((await db.collection('c').findOne({ _id: 42 })).v, 157);
	const range = await db.collection('c').find({ _id: { $gte: 10, $lt: 15 } }).toArray();
	assert.deepEqual(range.map(d => d._id), [10, 11, 12, 13, 14]);
	const e = await db.collection('c').find({ _id: { $gte: 10, $lt: 15 } }).explain();
	assert.equal(e.queryPlanner.winningPlan.stage, 'CLUSTERED_IXSCAN');
	await assert.rejects(db.collection('c').insertOne({ _id: 5 }), (err) => err.code === 11000);
});
