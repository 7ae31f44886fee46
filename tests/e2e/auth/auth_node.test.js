// auth_node.test.js -- the Node driver against tamgad --auth (node:test):
// first user through the localhost exception, SCRAM-SHA-256 and SCRAM-SHA-1
// logins (speculative authentication in the handshake), wrong password and
// unknown user both 18, readWrite may insert/update but collMod is 13, a
// custom role may collMod one collection, unauthenticated clients get 13.
// TAMGA_PORT comes from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient, MongoServerError } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const host = `127.0.0.1:${process.env.TAMGA_PORT || 27017}`;
const url = (user, pwd, source, mech) => user
	? `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(pwd)}@${host}/?authSource=${source}` +
		(mech ? `&authMechanism=${mech}` : '')
	: `mongodb://${host}/`;
const opts = { serverSelectionTimeoutMS: 10000 };

async function code(p) {
	try {
		await p;
	} catch (e) {
		if (e instanceof MongoServerError || e.code !== undefined)
			return { code: e.code, message: e.message };
		throw e;
	}
	return { code: 0 };
}

let root;
before(async () => {
	const anon = new MongoClient(url(), opts);
	await anon.connect();
	await anon.db('admin').command({ createUser: 'nroot', pwd: 'nrootpw', roles: ['root'] });
	await anon.close();
	root = new MongoClient(url('nroot', 'nrootpw', 'admin'), opts);
	await root.connect();
	const bs = root.db('nodebooks');
	await bs.command({ createUser: 'app', pwd: 'apppw', roles: ['readWrite'] });
	await bs.command({
		createRole: 'reviewsValidator', roles: [],
		privileges: [{ resource: { db: 'nodebooks', collection: 'reviews' }, actions: ['collMod'] }],
	});
	await bs.command({ createUser: 'curator', pwd: 'curatorpw', roles: ['readWrite', 'reviewsValidator'] });
	await bs.createCollection('reviews');
	await bs.createCollection('books');
});
after(async () => { if (root) await root.close(); });

test('both SCRAM mechanisms log in', async () => {
	for (const mech of ['SCRAM-SHA-256', 'SCRAM-SHA-1', null]) {
		const c = new MongoClient(url('app', 'apppw', 'nodebooks', mech), opts);
		await c.connect();
		const st = await c.db('nodebooks').command({ connectionStatus: 1 });
		assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'app', db: 'nodebooks' }]);
		await c.close();
	}
});

test('wrong password and unknown user: same error', async () => {
	const msgs = new Set();
	for (const [u, p] of [['app', 'wrong'], ['ghost', 'wrong']]) {
		const c = new MongoClient(url(u, p, 'nodebooks'), opts);
		const r = await code(c.connect());
		assert.equal(r.code, 18);
		msgs.add(r.message);
		await c.close();
	}
	assert.equal(msgs.size, 1);
});

test('readWrite inserts and updates, collMod is unauthorized', async () => {
	const c = new MongoClient(url('app', 'apppw', 'nodebooks'), opts);
	await c.connect();
	const bs = c.db('nodebooks');
	await bs.collection('reviews').insertOne({ bookId: 1, rating: 5 });
	const u = await bs.collection('reviews').updateOne({ bookId: 1 }, { $set: { rating: 4 } });
	assert.equal(u.modifiedCount, 1);
	const r = await code(bs.command({ collMod: 'reviews', validator: { rating: { $gte: 1 } } }));
	assert.equal(r.code, 13);
	assert.match(r.message, /^not authorized on nodebooks to execute command \{ collMod: "reviews"/);
	await c.close();
});

test('a custom role may collMod one collection', async () => {
	const c = new MongoClient(url('curator', 'curatorpw', 'nodebooks'), opts);
	await c.connect();
	const bs = c.db('nodebooks');
	await bs.command({ collMod: 'reviews', validator: { rating: { $gte: 1 } } });
	assert.equal((await code(bs.command({ collMod: 'books', validator: {} }))).code, 13);
	await c.close();
});

test('unauthenticated clients are refused', async () => {
	const c = new MongoClient(url(), opts);
	await c.connect();
	const r = await code(c.db('nodebooks').collection('reviews').findOne({}));
	assert.equal(r.code, 13);
	assert.equal(r.message, 'Command find requires authentication');
	await c.db('admin').command({ ping: 1 });
	await c.close();
});
