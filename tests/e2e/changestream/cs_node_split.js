// cs_node_split.js -- the Node driver's watch() with
// $changeStreamSplitLargeEvent against a `tamgad --replSet` (TAMGA_URI from
// with_tamgad.sh): an update event with 9 MB pre- and post-images arrives
// as three fragments under 16 MB, reassembled to the whole event; the
// driver resumes from a fragment's token with the rest of the fragments;
// without the stage the getMore fails with mongod's 10334.  Also the
// updateDescription of an operator update as mongod logs it
// (disambiguatedPaths), and _typeBits in the tokens of events whose
// documentKey holds an int64.  Prints "N passed, N failed".
'use strict';
const path = require('node:path');
const assert = require('node:assert/strict');
const { MongoClient, Long } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI;
const MB = 1024 * 1024;
let passed = 0, failed = 0;

async function test(name, fn) {
	try {
		await fn();
		passed++;
		console.log(`ok - ${name}`);
	} catch (e) {
		failed++;
		console.log(`not ok - ${name}: ${e.stack || e}`);
	}
}

(async () => {
	const d = new MongoClient(uri, { directConnection: true });
	await d.db('admin').command({ replSetInitiate: {} }).catch((e) => { if (e.code !== 23) throw e; });
	for (let i = 0; i < 100; i++) {
		if ((await d.db('admin').command({ hello: 1 })).isWritablePrimary) break;
		await new Promise((r) => setTimeout(r, 100));
	}
	await d.close();
	const client = new MongoClient(uri, { directConnection: true });
	await client.connect();
	const db = client.db('e2e_cs_split');
	await db.dropDatabase();
	const big = await db.createCollection('big', { changeStreamPreAndPostImages: { enabled: true } });
	await big.insertOne({ _id: 1, s: 'a'.repeat(9 * MB) });
	const opts = { fullDocument: 'required', fullDocumentBeforeChange: 'required', maxAwaitTimeMS: 200 };

	await test('an event past 16 MB comes in fragments that reassemble', async () => {
		const cs = big.watch([{ $changeStreamSplitLargeEvent: {} }], opts);
		const plain = big.watch([], opts);
		await cs.tryNext();
		await plain.tryNext();
		await big.updateOne({ _id: 1 }, { $set: { s: 'b'.repeat(9 * MB) } });
		const f = [];
		while (f.length < 3) {
			const e = await cs.tryNext();
			if (e) f.push(e);
		}
		assert.deepEqual(f.map((x) => x.splitEvent), [{ fragment: 1, of: 3 }, { fragment: 2, of: 3 }, { fragment: 3, of: 3 }]);
		const whole = Object.assign({}, ...f.map(({ _id, splitEvent, ...rest }) => rest));
		assert.equal(whole.operationType, 'update');
		assert.equal(whole.fullDocument.s, 'b'.repeat(9 * MB));
		assert.equal(whole.fullDocumentBeforeChange.s, 'a'.repeat(9 * MB));
		assert.deepEqual(whole.documentKey, { _id: 1 });
		// resuming after the first fragment: the two others
		const again = big.watch([{ $changeStreamSplitLargeEvent: {} }], { ...opts, resumeAfter: f[0]._id });
		let n;
		while (!(n = await again.tryNext()));
		assert.deepEqual(n.splitEvent, { fragment: 2, of: 3 });
		assert.deepEqual(n._id, f[1]._id);
		await again.close();
		await cs.close();
		// the same event without the stage
		await assert.rejects(async () => { for (;;) if (await plain.tryNext()) break; }, (e) => e.code === 10334);
		await plain.close().catch(() => {});
	});

	await test('updateDescription of an operator update, disambiguatedPaths', async () => {
		const c = db.collection('amb');
		await c.insertOne({ _id: 1, a: { 1: 1 }, arr: [5] });
		const cs = c.watch([], { showExpandedEvents: true, maxAwaitTimeMS: 200 });
		await cs.tryNext();
		await c.updateOne({ _id: 1 }, { $set: { 'a.1': 2 }, $push: { arr: 6 } });
		let e;
		while (!(e = await cs.tryNext()));
		assert.deepEqual(e.updateDescription.updatedFields, { 'a.1': 2, 'arr.1': 6 });
		assert.deepEqual(e.updateDescription.disambiguatedPaths, { 'a.1': ['a', '1'] });
		await cs.close();
	});

	await test('_typeBits of an int64 documentKey, in the event and the resume token', async () => {
		const c = db.collection('tb');
		const cs = c.watch([], { maxAwaitTimeMS: 200 });
		await cs.tryNext();
		await c.insertOne({ _id: Long.fromNumber(7) });
		await c.insertOne({ _id: Long.fromNumber(8) });
		let e;
		while (!(e = await cs.tryNext()));
		// mongod's TypeBits: 3 ints, a string, then kLong (0b01): bit 8 set
		assert.deepEqual([...e._id._typeBits.buffer], [0x82, 0x00, 0x01]);
		const again = c.watch([], { resumeAfter: e._id, maxAwaitTimeMS: 200 });
		let n;
		while (!(n = await again.tryNext()));
		assert.equal(Number(n.documentKey._id), 8);
		assert.deepEqual(again.resumeToken, n._id);
		await again.close();
		await cs.close();
	});

	await client.close();
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
