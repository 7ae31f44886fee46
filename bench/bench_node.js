#!/usr/bin/env node
// bench_node.js -- the Node-driver variant of bench_wire (issues 3 and 4):
// the official MongoDB Node driver against tamgad and node-postgres (`pg`,
// pure JavaScript, both pinned in tests/clients) against the same
// PostgreSQL 15 bench_wire uses, in one Node process, at 1, 8 and 64
// connections (driver: maxPoolSize = minPoolSize = c; PostgreSQL: c
// clients; c concurrent async workers either way).  Each case prints two
// lines: against node-postgres (same client language and process model)
// and against bench_wire's libpq run (read from WORKDIR/wire_pg.txt).
//
//   node bench_node.js WORKDIR      (TAMGA_URI, BENCH_PG, BENCH_N, BENCH_SECONDS,
//                                    TAMGAD_PID from run.sh)
//
// Cases: node_insert_many_<c> (documents/s, batches of 1000),
// node_find_id_<c> (findOne by _id), node_find_range_<c> (100 documents by
// an _id range), node_find_100k_docs (one find returning 100 000 documents).
// Same counts and caps as bench_wire; reads take the best of three rounds,
// the sides alternating.  For each case stderr gets the CPU time per
// operation (per document for inserts) of each side: the Node process's
// (process.cpuUsage) and, on the tamga side, tamgad's (/proc/TAMGAD_PID/stat).
// That says where the time goes even when other load on the machine caps
// every process's share of a core.
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
let pgjs = null;
try {
	pgjs = require(path.join(root, 'tests/clients/node_modules/pg'));
} catch (e) { /* node-postgres not installed: libpq numbers only */ }

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

function line(name, t, peer, p) {
	if (p > 0)
		console.log(`bench ${name}: tamga ${t.toFixed(0)}, ${peer} ${p.toFixed(0)}, ratio ${(t / p).toFixed(2)}`);
	else
		console.log(`bench ${name}: tamga ${t.toFixed(0)}, ${peer} not available (${p === undefined ? 'no run' : 'failed'})`);
}

// Two lines per case: node-postgres from this process, libpq from bench_wire.
function report(name, t, pjs, peerCase) {
	if (pgjs && process.env.BENCH_PG)
		line(name, t, 'postgresql_node', pjs);
	line(name, t, 'postgresql', pg[peerCase]);
}

// ---- CPU accounting --------------------------------------------------------

const tamgadPid = Number(process.env.TAMGAD_PID) || 0;
const ticks = 100; // USER_HZ on Linux

function tamgadCpu() {
	try {
		const f = fs.readFileSync(`/proc/${tamgadPid}/stat`, 'utf8');
		const v = f.slice(f.lastIndexOf(')') + 2).split(' ');
		return (Number(v[11]) + Number(v[12])) / ticks; // utime + stime, seconds
	} catch (e) {
		return NaN;
	}
}

// CPU per operation, per side: Node's own (process.cpuUsage) and tamgad's
// (/proc).  Unlike a share of a core, a time per operation does not depend
// on how much of the machine other processes took meanwhile.
const cpuUse = {};

function cpuStart() {
	return { node: process.cpuUsage(), tamgad: tamgadCpu() };
}

function cpuAdd(side, start, ops) {
	const c = process.cpuUsage(start.node), u = cpuUse[side] || (cpuUse[side] = { node: 0, tamgad: 0, ops: 0 });
	u.node += (c.user + c.system) / 1e6;
	u.tamgad += tamgadCpu() - start.tamgad;
	u.ops += ops;
}

// Print and reset what the case used: µs of CPU per operation (document for inserts).
function cpuReport(name) {
	const us = (x, n) => (Number.isNaN(x) ? '?' : (x / n * 1e6).toFixed(0));
	const parts = [];
	for (const [side, u] of Object.entries(cpuUse)) {
		if (u.ops === 0) continue;
		parts.push(`${side}: Node ${us(u.node, u.ops)} µs` + (side === 'tamga' ? `, tamgad ${us(u.tamgad, u.ops)} µs` : ''));
		delete cpuUse[side];
	}
	console.error(`bench_node: ${name}: CPU per operation: ${parts.join('; ')}`);
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

// The same document as JSON text for PostgreSQL (bench_common.h's make_json).
function makeJson(i) {
	return `{"_id":${i},"title":"book title ${pad(i)}","customer":{"name":"customer number ${pad(i % 100000)}",` +
		`"city":"${cities[i % 5]}","country":"${countries[i % 5]}"},"rating":${1 + ((i * 7919) % 5)},` +
		`"score":${(((i * 7 + 3) % 1000) / 10).toFixed(1)},"tags":["books","${i % 2 ? 'scifi' : 'history'}"],` +
		`"at":{"$date":${1751328000000 + i * 1000}},"active":${i % 3 !== 0}}`;
}

// xorshift64, reset per round so both sides look up the same keys
let rng = 88172645463325252n;
function rndReset() { rng = 88172645463325252n; }
function rnd(n) {
	rng ^= (rng << 13n) & 0xffffffffffffffffn;
	rng ^= rng >> 7n;
	rng ^= (rng << 17n) & 0xffffffffffffffffn;
	return Number(rng % BigInt(n));
}

// ---- the two sides: each opens c connections, run(op) uses them ----------

async function mongoSide(c) {
	const client = new MongoClient(uri, { maxPoolSize: c, minPoolSize: c, serverSelectionTimeoutMS: 5000 });
	await client.connect();
	const db = client.db('bench');
	await Promise.all(Array.from({ length: c }, () => db.command({ ping: 1 })));
	return {
		name: 'tamga',
		async reset(table) { await db.collection(table).drop().catch(() => {}); },
		async insert(w, table, from, to) {
			const batch = [];
			for (let k = from; k < to; k++) batch.push(makeDoc(k));
			await db.collection(table).insertMany(batch);
		},
		async findId(w, k) { return (await db.collection('node_ins1').findOne({ _id: k })) !== null; },
		async findRange(w, k) {
			return (await db.collection('node_ins1').find({ _id: { $gte: k, $lt: k + 100 } }).toArray()).length;
		},
		async findAll(n) {
			let got = 0;
			for await (const _ of db.collection('node_ins1').find({}).limit(n)) got++;
			return got;
		},
		close: () => client.close(),
	};
}

function pgConfig() {
	const cfg = {};
	for (const kv of (process.env.BENCH_PG || '').trim().split(/\s+/)) {
		const [k, v] = kv.split('=');
		if (k === 'dbname') cfg.database = v; else if (k === 'port') cfg.port = Number(v); else if (k) cfg[k] = v;
	}
	return cfg;
}

async function pgSide(c) {
	const conns = [];
	for (let i = 0; i < c; i++) {
		const cl = new pgjs.Client(pgConfig());
		await cl.connect();
		conns.push(cl);
	}
	const q = (w, name, text, values) => conns[w].query({ name, text, values });
	return {
		name: 'postgresql_node',
		async reset(table) {
			await conns[0].query(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id bigint PRIMARY KEY, doc jsonb NOT NULL)`);
		},
		async insert(w, table, from, to) {
			const parts = [];
			for (let k = from; k < to; k++) parts.push(makeJson(k));
			await q(w, `ins_${table}`, `INSERT INTO ${table} (id, doc) SELECT (j->>'_id')::bigint, j ` +
				'FROM jsonb_array_elements($1::jsonb) j', [`[${parts.join(',')}]`]);
		},
		async findId(w, k) {
			return (await q(w, 'id', 'SELECT doc FROM node_ins1 WHERE id = $1', [k])).rows.length === 1;
		},
		async findRange(w, k) {
			return (await q(w, 'range', 'SELECT doc FROM node_ins1 WHERE id >= $1 AND id < $2 ORDER BY id',
				[k, k + 100])).rows.length;
		},
		async findAll(n) {
			return (await conns[0].query(`SELECT doc FROM node_ins1 LIMIT ${n}`)).rows.length;
		},
		async vacuum(table) {
			await conns[0].query(`VACUUM ANALYZE ${table}`);
			await conns[0].query('CHECKPOINT');
		},
		async drop(tables) { await conns[0].query(`DROP TABLE IF EXISTS ${tables.join(', ')}`); },
		close: () => Promise.all(conns.map((cl) => cl.end())),
	};
}

const havePg = () => pgjs !== null && !!process.env.BENCH_PG;

async function withSides(c, fn) {
	const t = await mongoSide(c);
	let p = null;
	try {
		if (havePg()) p = await pgSide(c);
		return await fn(t, p);
	} finally {
		await t.close();
		if (p) await p.close();
	}
}

// documents [from, to) in batches of 1000 over c workers; seconds taken
async function loadRange(side, c, table, from, to) {
	const per = (to - from) / c, cpu = cpuStart();
	const t0 = process.hrtime.bigint();
	await Promise.all(Array.from({ length: c }, async (_, w) => {
		for (let i = from + w * per; i < from + (w + 1) * per; i += 1000)
			await side.insert(w, table, i, Math.min(i + 1000, from + (w + 1) * per));
	}));
	const secs = Number(process.hrtime.bigint() - t0) / 1e9;
	cpuAdd(side.name, cpu, to - from);
	return secs;
}

// two halves, the sides alternating as in bench_wire: Tamga, PostgreSQL, PostgreSQL, Tamga
async function insertMany(c) {
	return withSides(c, async (t, p) => {
		const table = `node_ins${c}`, half = docs / 2;
		let st = 0, sp = 0;
		await t.reset(table);
		if (p) await p.reset(table);
		st += await loadRange(t, c, table, 0, half);
		if (p) sp += await loadRange(p, c, table, 0, half);
		if (p) sp += await loadRange(p, c, table, half, docs);
		st += await loadRange(t, c, table, half, docs);
		if (p) await p.vacuum(table);
		return [docs / st, p ? docs / sp : undefined];
	});
}

async function readRound(side, c, op, per) {
	const deadline = Date.now() + (maxSeconds / ROUNDS) * 1000, cpu = cpuStart();
	let done = 0;
	rndReset();
	const t0 = process.hrtime.bigint();
	await Promise.all(Array.from({ length: c }, async (_, w) => {
		for (let i = 0; i < per && Date.now() < deadline; i++) {
			if (op === 'id') {
				const k = rnd(docs);
				if (!(await side.findId(w, k))) throw new Error(`no document ${k}`);
			} else {
				const k = rnd(docs - 100), n = await side.findRange(w, k);
				if (n !== 100) throw new Error(`range ${k}: ${n} documents`);
			}
			done++;
		}
	}));
	const rate = done / (Number(process.hrtime.bigint() - t0) / 1e9);
	cpuAdd(side.name, cpu, done);
	return rate;
}

// best of three rounds per side, the order rotating
async function reads(c, op, ops) {
	return withSides(c, async (t, p) => {
		const per = Math.max(1, Math.floor(ops / ROUNDS / c));
		let bt = 0, bp = 0;
		for (let r = 0; r < ROUNDS; r++) {
			for (const side of r % 2 ? [p, t] : [t, p]) {
				if (!side) continue;
				const x = await readRound(side, c, op, per);
				if (side === t) bt = Math.max(bt, x); else bp = Math.max(bp, x);
			}
		}
		return [bt, p ? bp : undefined];
	});
}

async function bigFind() {
	return withSides(1, async (t, p) => {
		const n = Math.min(docs, 100000), rate = [];
		for (const side of [t, p]) {
			if (!side) { rate.push(undefined); continue; }
			const t0 = process.hrtime.bigint(), cpu = cpuStart();
			for (let r = 0; r < 3; r++) {
				const got = await side.findAll(n);
				if (got !== n) throw new Error(`find: ${got} documents, not ${n}`);
			}
			rate.push((3 * n) / (Number(process.hrtime.bigint() - t0) / 1e9));
			cpuAdd(side.name, cpu, 3 * n);
		}
		return rate;
	});
}

async function main() {
	if (!uri) {
		console.log('bench node: tamga not available yet (tamgad was not started)');
		return;
	}
	if (!havePg())
		console.error(`bench_node: no node-postgres line (${pgjs ? 'BENCH_PG not set' : 'pg not installed: run make deps'})`);
	const run = async (name, peer, fn) => {
		const [t, p] = await fn();
		report(name, t, p, peer);
		cpuReport(name);
	};
	for (const c of [1, 8, 64]) await run(`node_insert_many_${c}`, `wire_insert_many_${c}`, () => insertMany(c));
	for (const c of [1, 8, 64]) await run(`node_find_id_${c}`, `wire_find_id_${c}`, () => reads(c, 'id', finds));
	for (const c of [1, 8, 64])
		await run(`node_find_range_${c}`, `wire_find_range_${c}`, () => reads(c, 'range', ranges));
	await run('node_find_100k_docs', 'wire_find_100k_docs', () => bigFind());
	if (havePg()) {
		const p = await pgSide(1);
		await p.drop(['node_ins1', 'node_ins8', 'node_ins64']);
		await p.close();
	}
}

main().catch((e) => {
	console.error(`bench_node: ${e.stack || e}`);
	process.exit(1);
});
