// js.test.js -- server-side JavaScript through the Node driver: $where,
// $function, $accumulator, mapReduce; a client stuck in an infinite loop
// (ended by maxTimeMS) or an unbounded allocation leaves other clients
// served meanwhile; killOp ends a script.  With TAMGA_NOSCRIPTING=1 the
// server was started with --noscripting and every feature must answer
// mongod's code (6108304 for $where, 31264 for the others) while ordinary
// queries still work.  TAMGA_URI comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, Code } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
const disabled = process.env.TAMGA_NOSCRIPTING === '1';
let a, b, db, db2;

before(async () => {
	a = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	b = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await a.connect();
	await b.connect();
	db = a.db('e2e_js');
	db2 = b.db('e2e_js');
	await db.dropDatabase().catch(() => {});
	await db.collection('c').insertMany([{ _id: 1, x: 1 }, { _id: 2, x: 2 }, { _id: 3, x: 3 }]);
});
after(async () => {
	if (a) await a.close();
	if (b) await b.close();
});

async function code(p) {
	try {
		await p;
	} catch (e) {
		return e.code;
	}
	return 0;
}

if (disabled) {
	test('--noscripting: mongod\'s codes, ordinary queries unaffected', async () => {
		const c = db.collection('c');
		assert.equal(await code(c.find({ $where: 'this.x > 1' }).toArray()), 6108304);
		assert.equal(await code(c.aggregate([{ $project: { y: { $function: { body: 'function () { return 1; }', args: [], lang: 'js' } } } }]).toArray()), 31264);
		assert.equal(await code(c.aggregate([{ $group: { _id: 1, s: { $accumulator: { init: 'function () { return 0; }', accumulate: 'function (s) { return s; }', accumulateArgs: [], merge: 'function (a) { return a; }', lang: 'js' } } } }]).toArray()), 31264);
		assert.equal(await code(db.command({ mapReduce: 'c', map: 'function () { emit(1, 1); }', reduce: 'function (k, v) { return 1; }', out: { inline: 1 } })), 31264);
		assert.equal((await c.find({ x: { $gt: 1 } }).toArray()).length, 2);
	});
} else {
	test('$where, $function, $accumulator, mapReduce through the driver', async () => {
		const c = db.collection('c');
		assert.deepEqual((await c.find({ $where: new Code('this.x >= 2') }).sort({ _id: 1 }).toArray()).map((d) => d._id), [2, 3]);
		const [f] = await c.aggregate([{ $match: { _id: 2 } }, { $project: { _id: 0, y: { $function: { body: new Code('function (x) { return x * 10; }'), args: ['$x'], lang: 'js' } } } }]).toArray();
		assert.deepEqual(f, { y: 20 });
		const [g] = await c.aggregate([{ $group: { _id: null, s: { $accumulator: { init: 'function () { return 0; }', accumulate: 'function (s, x) { return s + x; }', accumulateArgs: ['$x'], merge: 'function (a, b) { return a + b; }', finalize: 'function (s) { return s * 2; }', lang: 'js' } } } }]).toArray();
		assert.deepEqual(g, { _id: null, s: 12 });
		const r = await db.command({ mapReduce: 'c', map: new Code('function () { emit(this.x % 2, this.x); }'), reduce: new Code('function (k, v) { return Array.sum(v); }'), out: { inline: 1 } });
		assert.deepEqual(r.results, [{ _id: 0, value: 2 }, { _id: 1, value: 4 }]);
	});

	test('an infinite loop on one client leaves the other served; maxTimeMS ends it with 50', async () => {
		const c = db.collection('c');
		const t0 = Date.now();
		const looping = code(c.find({ $where: 'while (true) {} return true;' }).maxTimeMS(1500).toArray());
		// meanwhile the other client's work goes through, JavaScript included
		for (let i = 0; i < 5; i++) {
			assert.equal((await db2.collection('c').find({ $where: 'this.x == 3' }).toArray()).length, 1);
			assert.equal((await db2.command({ ping: 1 })).ok, 1);
		}
		const served = Date.now() - t0;
		assert.equal(await looping, 50);
		assert.ok(served < 1500, `other client waited ${served} ms`);
	});

	test('killOp ends a running script with 11601', async () => {
		const c = db.collection('c');
		const looping = code(c.find({ $where: 'while (true) {} return true;' }).comment('js-kill-me').toArray());
		let opid = null;
		for (let i = 0; i < 100 && opid === null; i++) {
			const r = await b.db('admin').command({ currentOp: 1 }).catch((e) => ({ inprog: [], e }));
			const ops = (r.inprog || []).filter((o) => o.command && o.command.comment === 'js-kill-me');
			if (i === 99) console.log(JSON.stringify(r));
			if (ops.length > 0) opid = ops[0].opid;
			else await new Promise((r) => setTimeout(r, 50));
		}
		assert.notEqual(opid, null, 'the op shows in $currentOp');
		await b.db('admin').command({ killOp: 1, op: opid });
		assert.equal(await looping, 11601);
	});

	test('unbounded allocation and throws: 139, server unaffected', async () => {
		const c = db.collection('c');
		assert.equal(await code(c.find({ $where: 'var a = []; while (true) a.push([a.length, "x" + a.length]);' }).toArray()), 139);
		assert.equal(await code(c.find({ $where: 'throw new TypeError("no")' }).toArray()), 139);
		assert.equal((await c.find({ $where: 'this.x == 1' }).toArray()).length, 1);
	});
}
