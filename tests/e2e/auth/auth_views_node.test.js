// auth_views_node.test.js -- the Node driver against tamgad --auth (node:test):
// the localhost exception (listDatabases answers with nothing, other commands
// are 13, the first user is created), pipelines that reach another database
// at random depths and places ($lookup both forms, $graphLookup, $unionWith
// and $lookup sub-pipelines, $facet, $out/$merge) refused directly, as a view,
// a view of a view and through collMod until the user is granted the other
// database; a view an administrator made stays readable with find on it (as
// mongod); SASLprep of a SCRAM-SHA-256 password ("\u2163" logs in) and a
// SCRAM-SHA-1-only user logging in without naming a mechanism (the driver's
// speculative SCRAM-SHA-256 is not taken, it falls back).
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

let root, app;
before(async () => {
	const anon = new MongoClient(url(), opts);
	await anon.connect();
	// the localhost exception, before any user exists
	const ld = await anon.db('admin').command({ listDatabases: 1 });
	assert.deepEqual(ld.databases, []);
	for (const [db, cmd] of [['va', { find: 'c' }], ['admin', { serverStatus: 1 }], ['va', { listCollections: 1 }]]) {
		const r = await code(anon.db(db).command(cmd));
		assert.equal(r.code, 13);
		assert.match(r.message, new RegExp(`^not authorized on ${db} to execute command \\{ `));
	}
	await anon.db('admin').command({ createUser: 'vroot', pwd: 'vrootpw', roles: ['root'] });
	assert.equal((await code(anon.db('admin').command({ listDatabases: 1 }))).code, 13);
	await anon.close();
	root = new MongoClient(url('vroot', 'vrootpw', 'admin'), opts);
	await root.connect();
	await root.db('va').collection('c').insertMany([{ _id: 1, x: 1 }, { _id: 2, x: 2 }]);
	await root.db('vb').collection('secret').insertOne({ _id: 1, x: 1, s: 'hidden' });
	await root.db('admin').command({
		createRole: 'vaMod', roles: [],
		privileges: [{ resource: { db: 'va', collection: '' }, actions: ['collMod'] }],
	});
	await root.db('admin').command({ createUser: 'vapp', pwd: 'vapppw', roles: [{ role: 'readWrite', db: 'va' }, 'vaMod'] });
	app = new MongoClient(url('vapp', 'vapppw', 'admin'), opts);
	await app.connect();
});
after(async () => {
	if (app) await app.close();
	if (root) await root.close();
});

// ---- random pipelines reaching vb ---------------------------------------------------

let seed = 4242;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor(seed / 65536) % n; };
const fillers = [
	{ $match: { x: { $gte: 0 } } }, { $addFields: { y: 1 } }, { $limit: 50 }, { $sort: { _id: 1 } },
	{ $lookup: { from: 'c', localField: 'x', foreignField: 'x', as: 'mine' } },
];
const leaves = [
	{ $lookup: { from: { db: 'vb', coll: 'secret' }, localField: 'x', foreignField: 'x', as: 'j' } },
	{ $lookup: { from: { db: 'vb', coll: 'secret' }, pipeline: [{ $match: {} }], as: 'j' } },
	{ $graphLookup: { from: { db: 'vb', coll: 'secret' }, startWith: '$x', connectFromField: 'x', connectToField: 'x', as: 'g' } },
];
function pipeline(depth, inFacet) {
	const p = [];
	for (let i = rnd(3); i > 0; i--) p.push(fillers[rnd(fillers.length)]);
	let kind;
	if (depth === 0) {
		p.push(leaves[rnd(leaves.length)]);
	} else {
		do kind = rnd(3); while (kind === 2 && inFacet);
		if (kind === 0) p.push({ $lookup: { from: 'c', pipeline: pipeline(depth - 1, inFacet), as: 'j' } });
		else if (kind === 1) p.push({ $unionWith: { coll: 'c', pipeline: pipeline(depth - 1, inFacet) } });
		else p.push({ $facet: { plain: [{ $match: {} }], deep: pipeline(depth - 1, true) } });
	}
	for (let i = rnd(3); i > 0; i--) p.push(fillers[rnd(fillers.length)]);
	return p;
}
const pipes = Array.from({ length: 15 }, () => pipeline(rnd(4), false));

async function tryAll(want) {
	const va = app.db('va');
	for (const [i, p] of pipes.entries()) {
		const agg = await code(va.command({ aggregate: 'c', pipeline: p, cursor: {} }));
		assert.equal(agg.code, want, JSON.stringify(p));
		if (want === 13)
			assert.match(agg.message, /^not authorized on va to execute command \{ aggregate: "c", pipeline: \[ /);
		assert.equal((await code(va.command({ create: `v${i}`, viewOn: 'c', pipeline: p }))).code, want);
		await va.command({ create: `w${i}`, viewOn: 'c', pipeline: [] });
		assert.equal((await code(va.command({ create: `x${i}`, viewOn: `w${i}`, pipeline: p }))).code, want);
		assert.equal((await code(va.command({ collMod: `w${i}`, viewOn: 'c', pipeline: p }))).code, want);
		assert.equal((await code(va.command({ aggregate: `w${i}`, pipeline: p, cursor: {} }))).code, want);
		for (const n of [`x${i}`, `v${i}`, `w${i}`])
			await code(va.command({ drop: n }));
	}
	const out = await code(va.collection('c').aggregate([{ $out: { db: 'vb', coll: 'dst' } }]).toArray());
	assert.equal(out.code, want);
	const merge = await code(va.collection('c').aggregate([{ $merge: { into: { db: 'vb', coll: 'dst' } } }]).toArray());
	assert.equal(merge.code, want);
}

test('pipelines reaching another database: refused everywhere, then granted', async () => {
	await tryAll(13);
	assert.equal((await code(app.db('vb').collection('secret').findOne({}))).code, 13);
	await root.db('admin').command({ grantRolesToUser: 'vapp', roles: [{ role: 'readWrite', db: 'vb' }] });
	await tryAll(0);
	const joined = await app.db('va').collection('c').aggregate([
		{ $match: { _id: 1 } },
		{ $lookup: { from: { db: 'vb', coll: 'secret' }, localField: 'x', foreignField: 'x', as: 'j' } },
	]).toArray();
	assert.equal(joined[0].j[0].s, 'hidden');
	await root.db('admin').command({ revokeRolesFromUser: 'vapp', roles: [{ role: 'readWrite', db: 'vb' }] });
});

test('views: mongod\'s rules', async () => {
	const va = app.db('va');
	// an administrator's view over vb: find on the view is enough (mongod)
	await root.db('va').command({
		create: 'joined', viewOn: 'c',
		pipeline: [{ $lookup: { from: { db: 'vb', coll: 'secret' }, localField: 'x', foreignField: 'x', as: 'j' } }],
	});
	const rows = await va.collection('joined').find({ _id: 1 }).toArray();
	assert.equal(rows[0].j[0].s, 'hidden');
	// the user's own attempt at the same view is refused
	const r = await code(va.command({
		create: 'mine', viewOn: 'c',
		pipeline: [{ $facet: { a: [{ $lookup: { from: { db: 'vb', coll: 'secret' }, pipeline: [], as: 'j' } }] } }],
	}));
	assert.equal(r.code, 13);
	assert.match(r.message, /^not authorized on va to execute command \{ create: "mine", viewOn: "c", pipeline: \[ /);
	// collMod of a view under auth names viewOn and pipeline together
	await va.command({ create: 'plain', viewOn: 'c', pipeline: [] });
	const m = await code(va.command({ collMod: 'plain', pipeline: [] }));
	assert.equal(m.code, 72);
	assert.equal(m.message, 'Must specify both \'viewOn\' and \'pipeline\' when modifying a view and auth is enabled');
});

test('SASLprep: a SCRAM-SHA-256 password "\\u2163" logs in', async () => {
	await root.db('admin').command({ createUser: 'roman', pwd: '\u2163', roles: [] });
	for (const pwd of ['\u2163', 'IV']) {
		const c = new MongoClient(url('roman', pwd, 'admin', 'SCRAM-SHA-256'), opts);
		await c.connect();
		const st = await c.db('admin').command({ connectionStatus: 1 });
		assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'roman', db: 'admin' }]);
		await c.close();
	}
});

test('a SCRAM-SHA-1-only user logs in without naming a mechanism', async () => {
	await root.db('admin').command({ createUser: 'legacy', pwd: 'legacypw', roles: [], mechanisms: ['SCRAM-SHA-1'] });
	const hello = await root.db('admin').command({ hello: 1, saslSupportedMechs: 'admin.legacy' });
	assert.deepEqual(hello.saslSupportedMechs, ['SCRAM-SHA-1']);
	const c = new MongoClient(url('legacy', 'legacypw', 'admin'), opts);
	await c.connect();
	const st = await c.db('admin').command({ connectionStatus: 1 });
	assert.deepEqual(st.authInfo.authenticatedUsers, [{ user: 'legacy', db: 'admin' }]);
	await c.close();
	const bad = new MongoClient(url('legacy', 'legacypw', 'admin', 'SCRAM-SHA-256'), opts);
	assert.equal((await code(bad.connect())).code, 18);
	await bad.close();
});
