#!/usr/bin/env node
// bench_changestream.js -- issue 17's targets through the Node driver against
// a `tamgad --replSet rs0` (TAMGA_RS_URI from run.sh; initiated here):
//   changestream_latency_<w>: from an acknowledged insertOne to its event
//     arriving at each of w watchers (collection.watch(), awaitData getMores
//     woken by the commit), w = 1 and 64; p50 / p99 in ms (goal: p99 < 5 ms
//     with one watcher).
//   changestream_writes_8: insertOne throughput of 8 concurrent writers with
//     8 open change streams consuming the events, against the same writes
//     with no stream (goal: ratio >= 0.8).
//     Each write run also reports the CPU it cost per insert: tamgad's (from
//     /proc/TAMGA_RS_PID/stat when run.sh gives the pid) and this client's
//     (the writers and, with streams, the 8 consumers decoding every event).
//   node bench_changestream.js WORKDIR      (BENCH_SECONDS caps each write run, default 10)
'use strict';
const path = require('path');
const { MongoClient } = require(path.join(path.resolve(__dirname, '..'), 'tests/clients/node_modules/mongodb'));

const uri = process.env.TAMGA_RS_URI;
const seconds = Math.min(Number(process.env.BENCH_SECONDS || 10), 10);

function pct(a, p) { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; }
const now = () => Number(process.hrtime.bigint()) / 1e6;
const fs = require('fs');
// tamgad's CPU time in microseconds (utime + stime), or NaN without its pid
function serverCpuUs() {
	try {
		const f = fs.readFileSync(`/proc/${process.env.TAMGA_RS_PID}/stat`, 'utf8').split(') ')[1].split(' ');
		return (Number(f[11]) + Number(f[12])) * 1e6 / 100;
	} catch (e) { return NaN; }
}

async function initiate() {
	const d = new MongoClient(uri, { directConnection: true });
	await d.db('admin').command({ replSetInitiate: {} }).catch((e) => { if (e.code !== 23) throw e; });
	for (let i = 0; i < 200; i++) {
		if ((await d.db('admin').command({ hello: 1 })).isWritablePrimary) break;
		await new Promise((r) => setTimeout(r, 50));
	}
	await d.close();
}

async function latency(client, watchers, samples) {
	const coll = client.db('bench_cs').collection(`lat${watchers}`);
	await coll.drop().catch(() => {});
	await coll.insertOne({ _id: -1 });
	const acked = new Map(), lat = [];
	let waiting = null, pending = 0;
	const streams = [];
	for (let w = 0; w < watchers; w++) {
		const s = coll.watch([], { maxAwaitTimeMS: 1000 });
		s.on('change', (ev) => {
			const t = now(), id = ev.documentKey._id, a = acked.get(id);
			lat.push(a === undefined ? 0 : Math.max(0, t - a));
			if (--pending === 0 && waiting) waiting();
		});
		streams.push(s);
	}
	// every stream has its cursor before the first insert
	await new Promise((r) => setTimeout(r, 500 + 10 * watchers));
	for (let i = 0; i < samples; i++) {
		pending = watchers;
		const done = new Promise((r) => { waiting = r; });
		await coll.insertOne({ _id: i, at: new Date() });
		acked.set(i, now());
		await Promise.race([done, new Promise((r) => setTimeout(r, 5000))]);
	}
	for (const s of streams) await s.close();
	return { p50: pct(lat, 0.5), p99: pct(lat, 0.99), n: lat.length };
}

async function writes(client, streams) {
	const coll = client.db('bench_cs').collection(`w${streams}`);
	await coll.drop().catch(() => {});
	await coll.insertOne({ _id: 'x' });
	const open = [];
	let seen = 0;
	for (let s = 0; s < streams; s++) {
		const cs = coll.watch([], { maxAwaitTimeMS: 1000 });
		cs.on('change', () => { seen++; });
		open.push(cs);
	}
	if (streams) await new Promise((r) => setTimeout(r, 500));
	let n = 0, stop = false;
	const t0 = now(), s0 = serverCpuUs(), c0 = process.cpuUsage();
	setTimeout(() => { stop = true; }, seconds * 1000);
	await Promise.all(Array.from({ length: 8 }, async (_, w) => {
		for (let k = 0; !stop; k++) { await coll.insertOne({ w, k }); n++; }
	}));
	const rate = n / ((now() - t0) / 1000);
	const c1 = process.cpuUsage(c0), serverUs = (serverCpuUs() - s0) / n, clientUs = (c1.user + c1.system) / n;
	for (const cs of open) await cs.close();
	return { rate, seen, serverUs, clientUs };
}

(async () => {
	if (!uri) { console.log('bench changestream: tamga not available yet (no TAMGA_RS_URI)'); return; }
	await initiate();
	const client = new MongoClient(uri, { directConnection: true, maxPoolSize: 80 });
	await client.connect();
	for (const [w, samples] of [[1, 400], [64, 60]]) {
		const r = await latency(client, w, samples);
		console.log(`bench changestream_latency_${w}: tamga p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms (${r.n} events${w === 1 ? ', goal p99 < 5 ms' : ''})`);
	}
	const base = await writes(client, 0);
	const with8 = await writes(client, 8);
	console.log(`bench changestream_writes_8: tamga ${with8.rate.toFixed(0)} inserts/s with 8 streams, ${base.rate.toFixed(0)} inserts/s with none, ratio ${(with8.rate / base.rate).toFixed(2)} (goal >= 0.8; ${with8.seen} events consumed); CPU per insert: tamgad ${with8.serverUs.toFixed(0)} us with 8 streams, ${base.serverUs.toFixed(0)} us with none; client ${with8.clientUs.toFixed(0)} us, ${base.clientUs.toFixed(0)} us`);
	await client.close();
})().catch((e) => { console.error('bench_changestream:', e); process.exit(1); });
