// basic.js -- mongosh against tamgad: handshake, admin commands, CRUD, a
// cursor over several getMore batches, error replies.  Run by CTest through
// with_tamgad.sh:  mongosh $TAMGA_URI --quiet --file basic.js
// Prints "N passed, N failed" and exits non-zero when anything failed.
load(__dirname + '/harness.js');

test('hello', () => {
	const h = db.hello();
	eq(h.isWritablePrimary, true, 'isWritablePrimary');
	eq(h.maxBsonObjectSize, 16777216, 'maxBsonObjectSize');
	eq(h.maxMessageSizeBytes, 48000000, 'maxMessageSizeBytes');
	eq(h.maxWriteBatchSize, 100000, 'maxWriteBatchSize');
	eq(h.minWireVersion, 0, 'minWireVersion');
	ok(h.maxWireVersion >= 25, 'maxWireVersion');
	ok(h.connectionId > 0, 'connectionId');
});
test('isMaster', () => {
	const h = db.runCommand({isMaster: 1});
	eq(h.ismaster, true, 'ismaster');
	eq(h.isWritablePrimary, undefined, 'no isWritablePrimary in the legacy form');
});
test('ping', () => eq(db.adminCommand({ping: 1}).ok, 1));
test('buildInfo', () => {
	const b = db.adminCommand({buildInfo: 1});
	ok(/^\d+\.\d+\.\d+$/.test(b.version), 'version ' + b.version);
	eq(b.versionArray.length, 4, 'versionArray');
	ok(typeof b.tamgaVersion === 'string', 'tamgaVersion');
	eq(b.javascriptEngine, 'mozjs');
	eq(db.version(), b.version, 'db.version()');
});
test('serverStatus', () => {
	const s = db.serverStatus();
	eq(s.process, 'tamgad');
	ok(s.connections.current >= 1, 'connections.current');
	ok(s.uptime >= 0, 'uptime');
	ok(s.opcounters.command > 0, 'opcounters.command');
	ok(s.network.numRequests > 0, 'network.numRequests');
});
test('getParameter featureCompatibilityVersion', () => {
	const r = db.adminCommand({getParameter: 1, featureCompatibilityVersion: 1});
	eq(r.featureCompatibilityVersion.version, '9.0');
});
test('getCmdLineOpts', () => {
	const r = db.adminCommand({getCmdLineOpts: 1});
	ok(Array.isArray(r.argv) && r.argv.length > 0, 'argv');
	ok(r.parsed.storage.dbPath.length > 0, 'parsed.storage.dbPath');
});
test('getLog', () => {
	const r = db.adminCommand({getLog: 'global'});
	ok(r.log.length > 0, 'log lines');
	JSON.parse(r.log[0]);
	eq(db.adminCommand({getLog: '*'}).names, ['global', 'startupWarnings']);
});
test('whatsmyuri and connectionStatus', () => {
	ok(/^127\.0\.0\.1:\d+$/.test(db.runCommand({whatsmyuri: 1}).you), 'you');
	eq(db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers, []);
});
test('listCommands', () => {
	const r = db.runCommand({listCommands: 1});
	ok(r.commands.hello && r.commands.find && r.commands.insert, 'hello, find and insert listed');
});
function serverError(fn) {
	try { fn(); } catch (e) { return e; }
	throw new Error('expected a server error');
}
test('unknown command is 59', () => {
	const e = serverError(() => db.runCommand({noSuchCommand: 1}));
	eq(e.code, 59);
	eq(e.codeName, 'CommandNotFound');
	eq(e.message, "no such command: 'noSuchCommand'");
});
test('admin-only command elsewhere is 13', () => {
	eq(serverError(() => db.getSiblingDB('test').runCommand({getCmdLineOpts: 1})).code, 13);
});

const t = db.getSiblingDB('e2e_mongosh').items;
// the count command (countDocuments needs aggregate)
const count = (q) => db.getSiblingDB('e2e_mongosh').runCommand({count: 'items', query: q}).n;
test('insertMany and countDocuments', () => {
	t.drop();
	const docs = [];
	for (let i = 0; i < 250; i++) docs.push({_id: i, n: i, even: i % 2 === 0, s: 'x'.repeat(i % 7)});
	const r = t.insertMany(docs);
	eq(Object.keys(r.insertedIds).length, 250, 'insertedIds');
	eq(count({}), 250, 'count');
	eq(count({even: true}), 125, 'count even');
});
test('cursor across getMore batches', () => {
	const c = t.find({}).sort({_id: 1}).batchSize(40);
	let n = 0, last = -1;
	while (c.hasNext()) {
		const d = c.next();
		ok(d._id > last, 'order');
		last = d._id;
		n++;
	}
	eq(n, 250, 'documents seen');
});
test('findOne, updateOne, deleteMany', () => {
	eq(t.findOne({_id: 7}).n, 7);
	const u = t.updateOne({_id: 7}, {$set: {n: 700}});
	eq(u.modifiedCount, 1, 'modified');
	eq(t.findOne({_id: 7}).n, 700);
	const d = t.deleteMany({even: true});
	eq(d.deletedCount, 125, 'deleted');
	eq(count({}), 125);
});
test('duplicate key is 11000', () => {
	eq(code(() => t.insertOne({_id: 1})), 11000);
});
test('listCollections and drop', () => {
	ok(db.getSiblingDB('e2e_mongosh').getCollectionNames().includes('items'), 'listed');
	ok(t.drop(), 'dropped');
});

test('a transaction is refused with code 20 and writes nothing', () => {
	const s = db.getMongo().startSession();
	const c = s.getDatabase(db.getName()).txn_refused;
	s.startTransaction();
	// mongosh rewrites mongod's answer (code 20, "Transaction numbers are only
	// allowed on a replica set member or mongos") into its retryable-writes
	// advice and keeps the server's reply as originalError
	let err = null;
	try { c.insertOne({_id: 1}); } catch (e) { err = e; }
	ok(err !== null, 'insert in a transaction fails');
	const orig = err.originalError || err;
	eq(orig.code, 20, 'code');
	eq(orig.errorResponse.errmsg, 'Transaction numbers are only allowed on a replica set member or mongos');
	try { s.abortTransaction(); } catch (e) { /* nothing to abort */ }
	s.endSession();
	eq(db.txn_refused.countDocuments({}), 0, 'nothing written');
});

done();
