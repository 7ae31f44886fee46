// rs_node.test.js -- the Node driver against a single-node replica set
// (node:test): the set is initiated through a direct connection, then the
// driver discovers it from a plain mongodb://127.0.0.1:PORT and from
// ?replicaSet=rs0 (topology ReplicaSetWithPrimary, the primary is this
// node), causal consistency (a session's operationTime / clusterTime move
// with writes; afterClusterTime is sent and accepted) and failCommand as
// the spec tests use it (errorCode, errorLabels, closeConnection,
// blockConnection, appName, times).  Run on `tamgad --replSet rs0
// --setParameter enableTestCommands=1`; writes use retryWrites=false until
// retryable writes exist.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { MongoClient } = require(path.join(__dirname, '../../clients/node_modules/mongodb'));

const uri = process.env.TAMGA_URI;
// short heartbeats: after a state-change error (closeConnection, 91) the
// driver waits for its monitor's next hello
const direct = `${uri}/?directConnection=true&retryWrites=false&heartbeatFrequencyMS=500`;
let admin;

async function waitPrimary(client) {
	for (let i = 0; i < 100; i++) {
		const h = await client.db('admin').command({ hello: 1 });
		if (h.isWritablePrimary) return h;
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new Error('never became primary');
}

before(async () => {
	admin = new MongoClient(direct, { serverSelectionTimeoutMS: 10000 });
	await admin.connect();
	const h = await admin.db('admin').command({ hello: 1 });
	assert.equal(h.isreplicaset, true);
	const r = await admin.db('admin').command({ replSetInitiate: {} });
	assert.equal(r.ok, 1);
	await waitPrimary(admin);
});
after(async () => { if (admin) await admin.close(); });

for (const [what, u] of [['a plain URI', `${uri}/?retryWrites=false&heartbeatFrequencyMS=500`], ['replicaSet=rs0', `${uri}/?replicaSet=rs0&retryWrites=false&heartbeatFrequencyMS=500`]]) {
	test(`discovers the set from ${what}`, async () => {
		const c = new MongoClient(u, { serverSelectionTimeoutMS: 10000 });
		await c.connect();
		try {
			const r = await c.db('e2e_rs_node').collection('d').insertOne({ what });
			assert.ok(r.insertedId);
			const td = c.topology.description;
			assert.equal(td.type, 'ReplicaSetWithPrimary');
			assert.equal(td.setName, 'rs0');
			const servers = [...td.servers.values()];
			assert.equal(servers.length, 1);
			assert.equal(servers[0].type, 'RSPrimary');
			assert.equal(await c.db('e2e_rs_node').collection('d').countDocuments({ what }), 1);
		} finally {
			await c.close();
		}
	});
}

test('a causally consistent session follows operationTime', async () => {
	const c = new MongoClient(`${uri}/?replicaSet=rs0&retryWrites=false`, { monitorCommands: true });
	const sent = [];
	c.on('commandStarted', (e) => sent.push(e.command));
	await c.connect();
	try {
		const s = c.startSession({ causalConsistency: true });
		const coll = c.db('e2e_rs_node').collection('cc');
		await coll.insertOne({ x: 1 }, { session: s });
		const t1 = s.operationTime;
		assert.ok(t1, 'operationTime after a write');
		await coll.insertOne({ x: 2 }, { session: s });
		assert.ok(s.operationTime.greaterThan(t1), 'a later write has a later operationTime');
		assert.ok(s.clusterTime && s.clusterTime.clusterTime, 'the session keeps $clusterTime');
		const docs = await coll.find({}, { session: s }).toArray();
		assert.equal(docs.length, 2);
		const find = sent.filter((x) => x.find === 'cc').pop();
		assert.ok(find.readConcern && find.readConcern.afterClusterTime, 'find carries afterClusterTime');
		await s.endSession();
	} finally {
		await c.close();
	}
});

async function failPoint(mode, data) {
	return admin.db('admin').command(data ? { configureFailPoint: 'failCommand', mode, data } : { configureFailPoint: 'failCommand', mode });
}

test('failCommand: errorCode and errorLabels, times', async () => {
	const c = new MongoClient(direct, { retryReads: false });
	await c.connect();
	try {
		await failPoint({ times: 1 }, { failCommands: ['find'], errorCode: 8, errorLabels: ['SomeLabel'] });
		await assert.rejects(c.db('e2e_rs_node').collection('d').findOne({}), (e) => e.code === 8 && e.hasErrorLabel('SomeLabel'));
		await c.db('e2e_rs_node').collection('d').findOne({});   // times: 1 is spent
	} finally {
		await failPoint('off');
		await c.close();
	}
});

test('failCommand: closeConnection', async () => {
	const c = new MongoClient(direct, { retryReads: false });
	await c.connect();
	try {
		await failPoint({ times: 1 }, { failCommands: ['count'], closeConnection: true });
		await assert.rejects(c.db('e2e_rs_node').command({ count: 'd' }), (e) => /MongoNetwork|closed|connection/i.test(`${e.name} ${e.message}`));
		const r = await c.db('e2e_rs_node').command({ count: 'd' });
		assert.equal(r.n, 2);
	} finally {
		await failPoint('off');
		await c.close();
	}
});

test('failCommand: blockConnection and appName', async () => {
	const a = new MongoClient(`${direct}&appName=blocked`);
	const b = new MongoClient(`${direct}&appName=other`);
	await a.connect();
	await b.connect();
	try {
		// warm both pools so the pings below need no new connection
		await a.db('admin').command({ buildInfo: 1 });
		await b.db('admin').command({ buildInfo: 1 });
		await failPoint('alwaysOn', { failCommands: ['ping'], blockConnection: true, blockTimeMS: 1500, appName: 'blocked' });
		const t0 = Date.now();
		let bDone = 0;
		const pa = a.db('admin').command({ ping: 1 }).then(() => Date.now());
		await b.db('admin').command({ ping: 1 });
		bDone = Date.now();
		const aDone = await pa;
		assert.ok(aDone - t0 >= 1490, `the blocked app waited (${aDone - t0} ms)`);
		assert.ok(bDone < aDone, `another app was not blocked (${bDone - t0} ms vs ${aDone - t0} ms)`);
	} finally {
		await failPoint('off');
		await a.close();
		await b.close();
	}
});

test('failCommand: writeConcernError', async () => {
	const c = new MongoClient(direct);
	await c.connect();
	try {
		await failPoint({ times: 1 }, { failCommands: ['insert'], writeConcernError: { code: 64, errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } } });
		await assert.rejects(c.db('e2e_rs_node').collection('w').insertOne({ a: 1 }), (e) => e.code === 64);
		assert.equal(await c.db('e2e_rs_node').collection('w').countDocuments({}), 1, 'the write applied');
	} finally {
		await failPoint('off');
		await c.close();
	}
});
