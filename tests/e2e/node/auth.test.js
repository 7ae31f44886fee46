// auth.test.js -- tamgad --auth with the Node driver (node:test): the
// localhost exception creates the first user, SCRAM-SHA-256 and SCRAM-SHA-1
// log in (with speculative authentication in hello), a wrong password is 18,
// an unauthenticated command is 13, hello lists saslSupportedMechs and
// connectionStatus shows the user.
'use strict';
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const port = process.env.TAMGA_PORT;
const base = `mongodb://127.0.0.1:${port}`;
const clients = [];
function client(uri, opts) {
	const c = new MongoClient(uri, { serverSelectionTimeoutMS: 10000, ...(opts || {}) });
	clients.push(c);
	return c;
}
after(async () => { for (const c of clients) await c.close().catch(() => {}); });

test('unauthenticated: ping answers, find is refused with 13', async () => {
	const c = client(base);
	await c.connect();
	assert.equal((await c.db('admin').command({ ping: 1 })).ok, 1);
	await assert.rejects(c.db('t').collection('c').findOne({}), (e) => e.code === 13);
});

test('localhost exception creates the first user', async () => {
	const c = client(base);
	await c.connect();
	const r = await c.db('admin').command({ createUser: 'boss', pwd: 'secret', roles: ['root'] });
	assert.equal(r.ok, 1);
});

for (const mech of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
	test(`login with ${mech}`, async () => {
		const c = client(`${base}/?authSource=admin&authMechanism=${mech}`, { auth: { username: 'boss', password: 'secret' } });
		await c.connect();
		const coll = c.db('e2e_auth').collection('c');
		await coll.insertOne({ mech });
		assert.equal((await coll.findOne({ mech })).mech, mech);
		const st = await c.db('admin').command({ connectionStatus: 1 });
		assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'boss', db: 'admin' }]);
	});
}

test('wrong password is AuthenticationFailed (18)', async () => {
	const c = client(`${base}/?authSource=admin`, { auth: { username: 'boss', password: 'nope' } });
	await assert.rejects(c.connect(), (e) => e.code === 18 || /Authentication failed/.test(e.message));
});

test('hello lists saslSupportedMechs for an existing user', async () => {
	const c = client(`${base}/?authSource=admin`, { auth: { username: 'boss', password: 'secret' } });
	await c.connect();
	const h = await c.db('admin').command({ hello: 1, saslSupportedMechs: 'admin.boss' });
	assert.ok(Array.isArray(h.saslSupportedMechs) && h.saslSupportedMechs.includes('SCRAM-SHA-256'));
	// An unknown user gets the same answer as a known one: nothing in a reply
	// may tell whether a user exists (mongod leaves the field out instead).
	const none = await c.db('admin').command({ hello: 1, saslSupportedMechs: 'admin.nobody' });
	assert.deepEqual(none.saslSupportedMechs, h.saslSupportedMechs);
});
