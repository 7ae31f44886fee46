// oplog_mongosh.js -- local.oplog.rs through mongosh against `tamgad
// --replSet rs0 --oplogSize 1`: created by rs.initiate() with its
// "initiating set" no-op, mongod's entry shapes for CRUD and DDL, $natural
// order, listCollections' options, truncation past the size, the live
// oplog's protections, replSetResizeOplog's checks.
load(__dirname + '/../mongosh/harness.js');

const local = db.getSiblingDB('local');
const shop = db.getSiblingDB('shop');
const oplog = local.oplog.rs;

test('no oplog before rs.initiate(), one after', () => {
	eq(local.getCollectionNames().includes('oplog.rs'), false);
	const r = rs.initiate();
	eq(r.ok, 1);
	for (let i = 0; i < 100 && !db.hello().isWritablePrimary; i++) sleep(50);
	ok(db.hello().isWritablePrimary, 'primary');
	const first = oplog.find().sort({$natural: 1}).limit(1).toArray()[0];
	eq(first.op, 'n');
	eq(first.ns, '');
	eq(first.o, {msg: 'initiating set'});
	eq(Number(first.t), -1);
	const second = oplog.find().sort({$natural: 1}).skip(1).limit(1).toArray()[0];
	eq([second.op, second.o, Number(second.t)], ['n', {msg: 'new primary'}, 1]);
	ok(first.ts instanceof Timestamp, 'ts is a Timestamp');
	eq(typeof first.v === 'object' ? Number(first.v) : first.v, 2);
	ok(first.wall instanceof Date, 'wall is a Date');
});

test('listCollections shows the capped options', () => {
	const info = local.getCollectionInfos({name: 'oplog.rs'})[0];
	eq(info.options, {capped: true, size: 1048576, autoIndexId: false});
});

test('insert, update ($v: 2 diff), replacement, delete', () => {
	shop.items.insertOne({_id: 1, a: 1, tags: ['x']});
	shop.items.updateOne({_id: 1}, {$set: {a: 2}, $push: {tags: 'y'}});
	shop.items.replaceOne({_id: 1}, {b: 'whole'});
	shop.items.deleteOne({_id: 1});
	const es = oplog.find({ns: 'shop.items'}).toArray();
	eq(es.map(e => e.op), ['i', 'u', 'u', 'd']);
	eq(es[0].o, {_id: 1, a: 1, tags: ['x']});
	eq(es[0].o2, {_id: 1});
	eq(es[1].o, {$v: 2, diff: {u: {a: 2}, stags: {a: true, u1: 'y'}}});
	eq(es[1].o2, {_id: 1});
	eq(es[2].o, {_id: 1, b: 'whole'});
	eq(es[3].o, {_id: 1});
	ok(es[0].ui instanceof UUID || es[0].ui.sub_type === 4, 'ui is a UUID');
	for (let i = 1; i < es.length; i++)
		ok(es[i].ts.compare(es[i - 1].ts) > 0, 'ts strictly increases');
	eq(Number(es[0].t), 1);
	// $natural: -1 gives the newest
	const last = oplog.find().sort({$natural: -1}).limit(1).toArray()[0];
	eq(last.op, 'd');
});

test('DDL as c entries', () => {
	shop.createCollection('logs');
	shop.logs.createIndex({at: 1});
	shop.logs.drop();
	const es = oplog.find({ns: 'shop.$cmd'}).toArray();
	eq(es.map(e => Object.keys(e.o)[0]), ['create', 'create', 'createIndexes', 'drop']);
	eq(es[1].o.idIndex, {v: 2, key: {_id: 1}, name: '_id_'});
	eq(es[2].o, {createIndexes: 'logs', v: 2, key: {at: 1}, name: 'at_1'});
	eq(es[3].o2, {numRecords: 0});
});

test('local is never logged', () => {
	local.scratch.insertOne({x: 1});
	eq(oplog.countDocuments({ns: /^local\./}), 0);
});

test('truncated from the oldest end past --oplogSize', () => {
	const pad = 'p'.repeat(1000);
	for (let k = 0; k < 30; k++)
		shop.big.insertMany(Array.from({length: 100}, (_, i) => ({k, i, pad})));
	let st;
	for (let i = 0; i < 100; i++) {
		st = oplog.stats();
		if (st.size <= 1048576) break;
		sleep(100);
	}
	ok(st.size <= 1048576, `oplog size ${st.size} <= 1 MB`);
	const first = oplog.find().sort({$natural: 1}).limit(1).toArray()[0];
	ok(first.op !== 'n', 'the initiating no-op is gone');
	eq(oplog.find().sort({$natural: -1}).limit(1).toArray()[0].o.i, 99);
});

test('the live oplog cannot be dropped or renamed', () => {
	eq(err(() => local.runCommand({drop: 'oplog.rs'})), {code: 20, msg: "can't drop live oplog while replicating"});
	eq(err(() => local.runCommand({dropDatabase: 1})),
	    {code: 20, msg: "Cannot drop 'local' database while replication is active"});
	eq(err(() => db.adminCommand({renameCollection: 'local.oplog.rs', to: 'local.poison'})),
	    {code: 20, msg: "can't rename live oplog while replicating"});
});

test('replSetResizeOplog', () => {
	eq(err(() => db.adminCommand({replSetResizeOplog: 1, size: Double(900)})),
	    {code: 2, msg: "BSON field 'replSetResizeOplog.size' value must be >= 990, actual value '900'"});
	eq(err(() => db.adminCommand({replSetResizeOplog: 1, minRetentionHours: Double(-1)})),
	    {code: 2, msg: "BSON field 'replSetResizeOplog.minRetentionHours' value must be >= 0, actual value '-1'"});
	const r = db.adminCommand({replSetResizeOplog: 1, size: Double(990), minRetentionHours: Double(1.5)});
	eq(r.ok, 1);
	eq(local.getCollectionInfos({name: 'oplog.rs'})[0].options.size, 990 * 1024 * 1024);
});

done();
