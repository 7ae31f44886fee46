#!/usr/bin/env node
// cs_insns.js -- the load bench/cs_insns.sh runs against a tamgad under
// callgrind: N inserts by 8 writers (insertOne) with S open change streams
// on the collection consuming every event (S = 0 or 8).  Prints the events
// each stream received.  node cs_insns.js URI STREAMS INSERTS
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(path.resolve(__dirname, '..'), 'tests/clients/node_modules/mongodb'));

async function main() {
	const [uri, nstreams, ninserts] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
	const d = new MongoClient(uri, { directConnection: true });
	await d.db('admin').command({ replSetInitiate: {} }).catch((e) => { if (e.code !== 23) throw e; });
	for (let i = 0; i < 400; i++) {
		if ((await d.db('admin').command({ hello: 1 })).isWritablePrimary) break;
		await new Promise((r) => setTimeout(r, 50));
	}
	await d.close();
	const client = new MongoClient(uri, { directConnection: true, maxPoolSize: 32 });
	const coll = client.db('cs_insns').collection('c');
	await coll.drop().catch(() => {});
	await coll.insertOne({ _id: -1 });
	const got = new Array(nstreams).fill(0), streams = [];
	let done = null;
	for (let s = 0; s < nstreams; s++) {
		const cs = coll.watch([], { maxAwaitTimeMS: 1000 });
		cs.on('change', () => { if (++got[s] === ninserts && got.every((g) => g === ninserts) && done) done(); });
		streams.push(cs);
	}
	await new Promise((r) => setTimeout(r, 3000));
	// the measured part starts here (cs_insns.sh zeroes callgrind's counters)
	console.log('START');
	await new Promise((r) => process.stdin.once('data', r));
	const finished = nstreams ? new Promise((r) => { done = r; }) : Promise.resolve();
	let next = 0;
	await Promise.all(Array.from({ length: 8 }, async () => {
		while (next < ninserts) {
			const id = next++;
			await coll.insertOne({ _id: id, title: 'book ' + id, rating: id % 5, tags: ['a', 'b'] });
		}
	}));
	await finished;
	console.log('END', got.join(','));
	for (const s of streams) await s.close();
	await client.close();
	process.exit(0);   // stdin (the go signal) would keep the process alive
}
main().catch((e) => { console.error(e); process.exit(1); });
