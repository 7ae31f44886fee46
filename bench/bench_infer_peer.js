// bench_infer_peer.js -- the peer of bench_toolbelt's infer_full: the
// mongodb-schema npm package (Compass's schema analysis) over N = $BENCH_N
// reviews of the shape bench_toolbelt.c stores (BSON types kept: Int32,
// Long, Date...), every document, generated on the fly (no database: its
// time is the analysis alone).  Prints "peer <docs/s> <seconds>" for run.sh.
'use strict';
const path = require('node:path');
const clients = path.join(__dirname, '../tests/clients/node_modules');
const { BSON } = require(path.join(clients, 'mongodb'));
const { parseSchema } = require(path.join(clients, 'mongodb-schema'));
const { Int32, Long } = BSON;

const N = Number(process.env.BENCH_N || 1000000);
const names = ['Ada Lovelace', 'Linus Torvalds', 'Margaret Hamilton', 'Grace Hopper', 'Alan Turing'];
const AT0 = 1751328000000;

function* reviews() {
	for (let i = 0; i < N; i++) {
		const voters = i % 4;
		const hv = [];
		for (let k = 0; k < voters; k++)
			hv.push(new Int32((i + k) % 100000));
		yield {
			_id: Long.fromNumber(i),
			bookId: new Int32(i % 5000),
			customer: { customerId: new Int32(i % 100000), name: names[i % 5] },
			rating: i % 1000 === 7 ? '5' : new Int32(1 + i % 5),
			body: 'Slow start, great ending.',
			reviewedAt: new Date(AT0 + i * 1000),
			helpfulCount: new Int32(voters),
			helpfulVoters: hv,
		};
	}
}

(async () => {
	const t0 = process.hrtime.bigint();
	const schema = await parseSchema(reviews());
	const s = Number(process.hrtime.bigint() - t0) / 1e9;
	if (schema.count !== N)
		throw new Error(`mongodb-schema saw ${schema.count} documents, not ${N}`);
	console.log(`peer ${Math.round(N / s)} ${s.toFixed(2)}`);
})().catch(e => { console.error('bench_infer_peer:', e.message); process.exit(1); });
