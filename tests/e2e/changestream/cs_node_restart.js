// cs_node_restart.js -- the Node driver's collection.watch() across a
// tamgad restart: a stream open while the server goes down resumes by
// itself (the driver's automatic resume after a network error, from its
// cached resume token) and misses or repeats nothing; a new stream with
// resumeAfter a token taken before the restart returns exactly the events
// after it; startAfter and startAtOperationTime; postBatchResumeToken on
// empty batches.  Starts its own `tamgad --replSet` (argv[2]) on a free
// port and a temporary folder.  Prints "N passed, N failed".
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const net = require('node:net');
const { spawn } = require('node:child_process');
const assert = require('node:assert/strict');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const TAMGAD = process.argv[2];
const work = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'tamgad-cs-'));
fs.mkdirSync(path.join(work, 'db'));
let passed = 0, failed = 0, proc = null, port = 0;

function freePort() {
	return new Promise((res) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
}
async function waitPort() {
	for (let i = 0; i < 300; i++) {
		const okc = await new Promise((res) => { const c = net.connect(port, '127.0.0.1'); c.on('connect', () => { c.destroy(); res(true); }); c.on('error', () => res(false)); });
		if (okc) return;
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new Error('tamgad did not start');
}
async function start() {
	const log = fs.openSync(path.join(work, 'tamgad.log'), 'a');
	proc = spawn(TAMGAD, ['--port', String(port), '--bind_ip', '127.0.0.1', '--dbpath', path.join(work, 'db'), '--nounixsocket',
		'--replSet', 'rs0', '--replSetAutoInitiate'], { stdio: ['ignore', log, log] });
	await waitPort();
}
async function stop() {
	const p = proc;
	proc = null;
	const exited = new Promise((res) => p.on('exit', (code, sig) => res({ code, sig })));
	p.kill('SIGTERM');
	const r = await exited;
	if (r.code !== 0) throw new Error(`tamgad exited ${r.code} ${r.sig}: ` + fs.readFileSync(path.join(work, 'tamgad.log'), 'utf8').slice(-3000));
}
async function test(name, fn) {
	try { await fn(); passed++; console.log(`ok - ${name}`); } catch (e) { failed++; console.log(`not ok - ${name}: ${e && e.stack || e}`); }
}
async function primary(client) {
	for (let i = 0; i < 200; i++) {
		const h = await client.db('admin').command({ hello: 1 });
		if (h.isWritablePrimary) return;
		await new Promise((r) => setTimeout(r, 50));
	}
	throw new Error('no primary');
}

(async () => {
	port = await freePort();
	await start();
	const uri = `mongodb://127.0.0.1:${port}/?directConnection=true&serverSelectionTimeoutMS=20000`;
	let client = new MongoClient(uri);
	await client.connect();
	await primary(client);
	const c = client.db('e2e_cs').collection('books');
	await c.insertOne({ _id: 0 });
	let tokenAfter2 = null, stream = null;

	await test('watch() sees inserts with resume tokens in order', async () => {
		stream = c.watch([], { maxAwaitTimeMS: 200 });
		assert.equal(await stream.tryNext(), null);
		await c.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }]);
		const e1 = await stream.next(), e2 = await stream.next(), e3 = await stream.next();
		assert.deepEqual([e1, e2, e3].map((e) => e.documentKey._id), [1, 2, 3]);
		assert.ok(e1._id._data < e2._id._data && e2._id._data < e3._id._data);
		tokenAfter2 = e2._id;
		assert.deepEqual(stream.resumeToken, e3._id);
	});

	await test('an open stream resumes by itself across a restart', async () => {
		await stop();
		await start();
		// the driver's getMore fails on the dropped connection; it resumes
		// with its cached token once the server is back
		const w = new MongoClient(uri);
		await w.connect();
		await primary(w);
		await w.db('e2e_cs').collection('books').insertMany([{ _id: 4 }, { _id: 5 }]);
		await w.close();
		const e4 = await stream.next(), e5 = await stream.next();
		assert.deepEqual([e4.documentKey._id, e5.documentKey._id], [4, 5]);
		assert.equal(await stream.tryNext(), null);
		await stream.close();
	});

	await test('resumeAfter a token from before the restart', async () => {
		await client.close();
		client = new MongoClient(uri);
		await client.connect();
		const s = client.db('e2e_cs').collection('books').watch([], { resumeAfter: tokenAfter2 });
		const ids = [];
		for (let i = 0; i < 3; i++) ids.push((await s.next()).documentKey._id);
		assert.deepEqual(ids, [3, 4, 5]);
		await s.close();
	});

	await test('startAfter and startAtOperationTime', async () => {
		const col = client.db('e2e_cs').collection('books');
		const s = col.watch([], { startAfter: tokenAfter2 });
		assert.equal((await s.next()).documentKey._id, 3);
		await s.close();
		const r = await client.db('e2e_cs').command({ insert: 'books', documents: [{ _id: 6 }] });
		const s2 = col.watch([], { startAtOperationTime: r.operationTime });
		assert.equal((await s2.next()).documentKey._id, 6);
		await s2.close();
	});

	await test('postBatchResumeToken moves on empty batches', async () => {
		const db = client.db('e2e_cs');
		const a = await db.command({ aggregate: 'books', pipeline: [{ $changeStream: {} }, { $match: { operationType: 'delete' } }], cursor: {} });
		const t0 = a.cursor.postBatchResumeToken._data;
		await db.collection('books').insertMany([{ _id: 7 }, { _id: 7.5 }], { ordered: true });
		await db.collection('books').insertOne({ _id: 7.7 });
		const g = await db.command({ getMore: a.cursor.id, collection: 'books', maxTimeMS: 300 });
		assert.equal(g.cursor.nextBatch.length, 0);
		assert.ok(g.cursor.postBatchResumeToken._data > t0, 'token advanced past the filtered insert');
		await db.command({ killCursors: 'books', cursors: [a.cursor.id] });
	});

	await test('a getMore waits for the commit, not a poll', async () => {
		const s = client.db('e2e_cs').collection('books').watch([], { maxAwaitTimeMS: 5000 });
		await s.tryNext();
		const t0 = Date.now();
		setTimeout(() => client.db('e2e_cs').collection('books').insertOne({ _id: 8 }), 200);
		const ev = await s.next();
		const dt = Date.now() - t0;
		assert.equal(ev.documentKey._id, 8);
		assert.ok(dt < 2000, `event after ${dt} ms`);
		await s.close();
	});

	await test('closing the connection frees its change stream', async () => {
		const a = new MongoClient(uri, { maxPoolSize: 1 });
		await a.connect();
		const r = await a.db('e2e_cs').command({ aggregate: 'books', pipeline: [{ $changeStream: {} }], cursor: {} });
		assert.ok(r.cursor.id.toString() !== '0');
		await a.close();
		await new Promise((res) => setTimeout(res, 300));
		const k = await client.db('e2e_cs').command({ killCursors: 'books', cursors: [r.cursor.id] });
		assert.equal(k.cursorsNotFound.length, 1, JSON.stringify(k));
	});

	// a pooled connection's late error while the client closes is no result
	process.on('uncaughtException', (e) => { if (!(e && e.name === 'MongoClientClosedError')) throw e; });
	await client.close().catch(() => {});
	await stop();
	fs.rmSync(work, { recursive: true, force: true });
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
})().catch(async (e) => {
	console.log(`not ok - run: ${e && e.stack || e}`);
	if (proc) proc.kill('SIGKILL');
	process.exit(1);
});
