// tls_check.js -- run by tls.sh against a tamgad in requireTLS mode.
'use strict';
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

let passed = 0, failed = 0;
function report(ok, name, extra) {
	if (ok) { passed++; console.log(`ok - ${name}`); } else { failed++; console.log(`not ok - ${name}${extra ? ': ' + extra : ''}`); }
}

(async () => {
	const port = process.env.TAMGA_PORT;
	const tls = new MongoClient(`mongodb://127.0.0.1:${port}/?tls=true`, {
		tlsCAFile: process.env.TAMGA_TLS_CA, serverSelectionTimeoutMS: 10000,
	});
	try {
		await tls.connect();
		report((await tls.db('admin').command({ ping: 1 })).ok === 1, 'ping over TLS');
		const coll = tls.db('e2e_tls').collection('c');
		await coll.insertOne({ _id: 1, secret: 'x' });
		const d = await coll.findOne({ _id: 1 });
		report(d && d.secret === 'x', 'insert and find over TLS');
		await coll.drop();
	} catch (e) {
		report(false, 'TLS connection', e.message);
	} finally {
		await tls.close();
	}
	const plain = new MongoClient(`mongodb://127.0.0.1:${port}/`, { serverSelectionTimeoutMS: 2000 });
	try {
		await plain.connect();
		await plain.db('admin').command({ ping: 1 });
		report(false, 'plain connection refused in requireTLS', 'it answered');
	} catch (e) {
		report(true, 'plain connection refused in requireTLS');
	} finally {
		await plain.close();
	}
	console.log(`${passed} passed, ${failed} failed`);
	process.exitCode = failed ? 1 : 0;
})();
