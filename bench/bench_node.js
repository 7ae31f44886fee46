#!/usr/bin/env node
// bench_node.js -- the Node-driver variant of bench_wire (issues 3 and 4):
// the official MongoDB Node driver (tests/clients, pinned) against tamgad at
// 1, 8 and 64 connections (maxPoolSize = minPoolSize = c, c concurrent
// async workers), compared with PostgreSQL's numbers from the same run
// (bench_wire's libpq runs, read from WORKDIR/wire_pg.txt).
//
//   node bench_node.js WORKDIR      (TAMGA_URI, BENCH_N, BENCH_SECONDS from run.sh)
//
// Cases: node_insert_many_<c> (documents/s, batches of 1000),
// node_find_id_<c> (findOne by _id), node_find_range_<c> (100 documents by
// an _id range), node_find_100k_docs (one find returning 100 000 documents).
// Same counts and caps as bench_wire; reads take the best of three rounds.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
let mongodb;
try {
	mongodb = require(path.join(root, 'tests/clients/node_modules/mongodb'));
} catch (e) {
	console.log('bench node: tamga not available yet (the Node driver is not installed: run make deps)');
	process.exit(0);
}
const { MongoClient, Double } = mongodb;

const work = process.argv[2] || '.';
const uri = process.env.TAMGA_URI;
const N = Number(process.env.BENCH_N) > 0 ? Number(process.env.BENCH_N) : 1000000;
const maxSeconds = Number(process.env.BENCH_SECONDS) > 0 ? Number(process.env.BENCH_SECONDS) : 10;
const docs = Math.ceil(N / 4 / 128000) * 128000; // as bench_wire
const finds = Math.max(Math.floor(N / 10), 1000);
const ranges = Math.max(Math.floor(N / 100), 640);
const ROUNDS = 3;

const pg = {};
try {
	for (const line of fs.readFileSync(path.join(work, 'wire_pg.txt'), 'utf8').split('\n')) {
		const [k, v] = line.trim().split(/\s+/);
		if (k) pg[k] = Number(v);
	}
} catch (e) { /* no PostgreSQL numbers: Tamga's alone */ }

function report(name, t, peerCase) {
	const p = pg[peerCase];
	if (p > 0)
		console.log(`bench ${name}: tamga ${t.toFixed(0)}, postgresql ${p.toFixed(0)}, ratio ${(t / p).toFixed(2)}`);
	else
		console.log(`bench ${name}: tamga ${t.toFixed(0)}, postgresql not available (no libpq run)`);
}

const cities = ['Istanbul', 'Berlin', 'London', 'Paris', 'Ankara'];
const countries = ['TR', 'DE', 'GB', 'FR', 'TR'];
const pad = (n) => String(n).padStart(8, '0');
// The 200-byte document of bench_common.h's make_doc.
function makeDoc(i) {
	return {
		_id: i, title: `book title ${pad(i)}`,
		customer: { name: `customer number ${pad(i % 100000)}`, city: cities[i % 5], country: countries[i % 5] },
		rating: 1 + ((i * 7919) % 5), score: new Double(((i * 7 + 3) % 1000) / 10),
		tags: ['books', i % 2 ? 'scifi' : 'history'], at: new Date(1751328000000 + i * 1000), active: i % 3 !== 0,
	};
}

let rng = 88172645463325252n;
function rnd(n) {
	rng ^= (rng << 13n) & 0xffffffffffffffffn;
	rng ^= rng >> 7n;
	rng ^= (rng << 17n) & 0xffffffffffffffffn;
	return Number(rng % BigInt(n));
}

async function withClient(c, fn) {
	const client = new MongoClient(uri, { maxPoolSize: c, minPoolSize: c, serverSelectionTimeoutMS: 5000 });
	await client.connect();
	const db = client.db('bench');
	await Promise.all(Array.from({ length: c }, () => db.command({ ping: 1 })));
	try {
		return await fn(db);
	} finally {
		await client.close();
	}
}

async function insertMany(c) {
	return withClient(c, async (db) => {
		const coll = db.collection(`node_ins${c}`);
		await coll.drop().catch(() => {});
		const per = docs / c;
		const t0 = process.hrtime.bigint();
		await Promise.all(Array.from({ length: c }, async (_, w) => {
			for (let i = w * per; i < (w + 1) * per; i += 1000) {
				const batch = [];
				for (let k = i; k < Math.min(i + 1000, (w + 1) * per); k++) batch.push(makeDoc(k));
				await coll.insertMany(batch);
			}
		}));
		return docs / (Number(process.hrtime.bigint() - t0) / 1e9);
	});
}

async function reads(c, op, ops) {
	return withClient(c, async (db) => {
		const coll = db.collection('node_ins1');
		let best = 0;
		for (let r = 0; r < ROUNDS; r++) {
			const per = Math.max(1, Math.floor(ops / ROUNDS / c));
			const t0 = process.hrtime.bigint();
			const deadline = Date.now() + (maxSeconds / ROUNDS) * 1000;
			let done = 0;
			await Promise.all(Array.from({ length: c }, async () => {
				for (let i = 0; i < per && Date.now() < deadline; i++) {
					if (op === 'id') {
						const k = rnd(docs);
						if ((await coll.findOne({ _id: k })) === null) throw new Error(`no document ${k}`);
					} else {
						const k = rnd(docs - 100);
						const got = await coll.find({ _id: { $gte: k, $lt: k + 100 } }).toArray();
						if (got.length !== 100) throw new Error(`range ${k}: ${got.length} documents`);
					}
					done++;
				}
			}));
			best = Math.max(best, done / (Number(process.hrtime.bigint() - t0) / 1e9));
		}
		return best;
	});
}

async function bigFind() {
	return withClient(1, async (db) => {
		const n = Math.min(docs, 100000);
		const t0 = process.hrtime.bigint();
		for (let r = 0; r < 3; r++) {
			let got = 0;
			for await (const _ of db.collection('node_ins1').find({}).limit(n)) got++;
			if (got !== n) throw new Error(`find: ${got} documents, not ${n}`);
		}
		return (3 * n) / (Number(process.hrtime.bigint() - t0) / 1e9);
	});
}

async function main() {
	if (!uri) {
		console.log('bench node: tamga not available yet (tamgad was not started)');
		return;
	}
	for (const c of [1, 8, 64]) report(`node_insert_many_${c}`, await insertMany(c), `wire_insert_many_${c}`);
	for (const c of [1, 8, 64]) report(`node_find_id_${c}`, await reads(c, 'id', finds), `wire_find_id_${c}`);
	for (const c of [1, 8, 64]) report(`node_find_range_${c}`, await reads(c, 'range', ranges), `wire_find_range_${c}`);
	report('node_find_100k_docs', await bigFind(), 'wire_find_100k_docs');
}

main().catch((e) => {
	console.error(`bench_node: ${e.stack || e}`);
	process.exit(1);
});
