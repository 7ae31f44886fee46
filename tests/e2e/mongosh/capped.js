// Capped collections through mongosh: create with size/max, isCapped(),
// stats(), insertion order, the oldest documents removed past the limits,
// collMod of cappedSize/cappedMax, convertToCapped, cloneCollectionAsCapped,
// the restrictions (tailable on a plain collection, $out, TTL), and a
// tailable cursor that sees what was inserted after it reached the end.
function check(cond, msg) {
  if (!cond) {
    print('FAIL: ' + msg);
    quit(1);
  }
}
function fails(fn, code, msg) {
  try {
    fn();
  } catch (e) {
    check(e.code === code, msg + ': expected code ' + code + ', got ' + e.code + ' ' + e.message);
    return e;
  }
  check(false, msg + ': did not fail');
}

const t = db.getSiblingDB('capped_e2e');
t.dropDatabase();

// create and what mongod shows of it
check(t.createCollection('c', {capped: true, size: 4096, max: 5}).ok === 1, 'create capped');
check(t.c.isCapped() === true, 'isCapped');
t.createCollection('plain');
check(t.plain.isCapped() === false, 'plain not capped');
const info = t.getCollectionInfos({name: 'c'})[0];
check(info.options.capped === true && info.options.size === 4096 && info.options.max === 5,
      'listCollections options ' + JSON.stringify(info.options));
t.createCollection('r', {capped: true, size: 1000});
// mongod 9.0 keeps the size as given (no rounding to 256 since SERVER-67036)
check(t.getCollectionInfos({name: 'r'})[0].options.size === 1000, 'size kept as given');
fails(() => t.createCollection('bad', {capped: true}), 72, 'size required');
fails(() => t.createCollection('bad', {size: 4096}), 72, 'capped required with size');
fails(() => t.createCollection('bad', {capped: true, size: 4096, max: Math.pow(2, 31)}), 2, 'max < 2^31');

// max: the oldest go, natural order is insertion order
for (let i = 0; i < 8; i++) t.c.insertOne({_id: i, v: 'x'});
let ids = t.c.find().toArray().map(d => d._id);
check(JSON.stringify(ids) === JSON.stringify([3, 4, 5, 6, 7]), 'max 5 keeps the newest: ' + ids);
check(t.c.countDocuments({_id: 1}) === 0, 'the _id index lost the removed ones');
ids = t.c.find().sort({$natural: -1}).toArray().map(d => d._id);
check(ids[0] === 7, 'reverse natural order');
const st = t.c.stats();
check(st.capped === true && st.max === 5 && st.maxSize === 4096 && st.count === 5, 'stats ' + JSON.stringify(st));

// size: documents of ~1 KB in a 4096-byte collection
t.createCollection('s', {capped: true, size: 4096});
const pad = 'p'.repeat(1000);
for (let i = 0; i < 10; i++) t.s.insertOne({_id: i, pad: pad});
const s = t.s.stats();
check(s.size <= 4096 && s.count >= 3, 'size limit kept: ' + s.size + ' bytes, ' + s.count + ' docs');
check(t.s.find().toArray()[s.count - 1]._id === 9, 'newest kept');

// mongod's capped_large_docs.js: 10 MB documents in a 25 MB collection keep 2
t.createCollection('large', {capped: true, size: 25 * 1024 * 1024});
const big = 'a'.repeat(10 * 1024 * 1024);
for (let i = 0; i < 5; i++) t.large.insertOne({key: big});
const ls = t.large.stats();
check(ls.count === 2 && ls.size <= 25 * 1024 * 1024, 'large documents: ' + ls.count + ' docs, ' + ls.size);
t.large.drop();

// collMod of cappedMax/cappedSize: applied at the next insert
check(t.runCommand({collMod: 'c', cappedMax: 2}).ok === 1, 'collMod cappedMax');
t.c.insertOne({_id: 100});
ids = t.c.find().toArray().map(d => d._id);
check(JSON.stringify(ids) === JSON.stringify([7, 100]), 'cappedMax applied: ' + ids);
check(t.getCollectionInfos({name: 'c'})[0].options.max === 2, 'max shown after collMod');
check(t.runCommand({collMod: 'c', cappedSize: 8192}).ok === 1, 'collMod cappedSize');
check(t.c.stats().maxSize === 8192, 'maxSize after collMod');
fails(() => t.runCommand({collMod: "plain", cappedSize: 8192}), 72, 'cappedSize on a plain collection');

// convertToCapped and cloneCollectionAsCapped
for (let i = 0; i < 20; i++) t.plain.insertOne({_id: i});
check(t.plain.convertToCapped(4096).ok === 1, 'convertToCapped');
check(t.plain.isCapped() === true && t.plain.countDocuments({}) === 20, 'converted keeps documents');
check(t.runCommand({cloneCollectionAsCapped: 'plain', toCollection: 'copy', size: 4096}).ok === 1, 'clone');
check(t.copy.isCapped() && t.copy.countDocuments({}) === 20, 'clone has the documents');
fails(() => t.runCommand({cloneCollectionAsCapped: 'nope', toCollection: 'x', size: 4096}), 26, 'clone missing source');

// restrictions
t.createCollection('n');
fails(() => t.runCommand({find: 'n', tailable: true}), 2, 'tailable on a plain collection');
fails(() => t.runCommand({find: 'c', awaitData: true}), 9, 'awaitData without tailable');
fails(() => t.n.aggregate([{$out: 'c'}]).toArray(), 17152, '$out to capped');
// TTL indexes on capped collections are allowed since 7.0 (SERVER-77586)
check(t.c.createIndex({d: 1}, {expireAfterSeconds: 3600}) === 'd_1', 'TTL index on capped');
// deletes and growing updates are allowed (mongod 5.0+)
t.c.updateOne({_id: 100}, {$set: {grown: 'g'.repeat(200)}});
check(t.c.findOne({_id: 100}).grown.length === 200, 'update may grow a document');
t.c.deleteOne({_id: 100});
check(t.c.countDocuments({}) === 1, 'delete from a capped collection');

// a tailable cursor keeps going after the end
t.createCollection('tail', {capped: true, size: 100000});
t.tail.insertOne({_id: 1});
const res = t.runCommand({find: 'tail', tailable: true, batchSize: 10});
check(res.cursor.firstBatch.length === 1 && res.cursor.id != 0, 'tailable cursor stays open');
let more = t.runCommand({getMore: res.cursor.id, collection: 'tail'});
check(more.cursor.nextBatch.length === 0 && more.cursor.id != 0, 'empty getMore, cursor alive');
t.tail.insertOne({_id: 2});
more = t.runCommand({getMore: res.cursor.id, collection: 'tail'});
check(more.cursor.nextBatch.length === 1 && more.cursor.nextBatch[0]._id === 2, 'new document seen');
fails(() => t.runCommand({getMore: res.cursor.id, collection: 'tail', maxTimeMS: 10}), 2,
      'maxTimeMS on a non-awaitData getMore');
t.runCommand({killCursors: 'tail', cursors: [res.cursor.id]});

// mongod's tailable_skip_limit.js, with find/getMore (the shell's hasNext on
// a tailable cursor asks again until something comes)
t.createCollection('sl', {capped: true, size: 1024});
for (let i = 1; i <= 4; i++) t.sl.insertOne({_id: i});
const ids_of = (batch) => JSON.stringify(batch.map(d => d._id));
let r1 = t.runCommand({find: 'sl', tailable: true, skip: 3});
check(ids_of(r1.cursor.firstBatch) === '[4]' && r1.cursor.id != 0, 'tailable skip');
check(t.runCommand({getMore: r1.cursor.id, collection: 'sl'}).cursor.nextBatch.length === 0, 'tailable skip at the end');
t.sl.insertOne({_id: 5});
check(ids_of(t.runCommand({getMore: r1.cursor.id, collection: 'sl'}).cursor.nextBatch) === '[5]',
      'tailable skip sees the next insert');
let r2 = t.runCommand({find: 'sl', tailable: true, limit: 100});
check(ids_of(r2.cursor.firstBatch) === '[1,2,3,4,5]' && r2.cursor.id != 0, 'tailable limit');
t.sl.insertOne({_id: 6});
check(ids_of(t.runCommand({getMore: r2.cursor.id, collection: 'sl'}).cursor.nextBatch) === '[6]',
      'tailable limit sees the next insert');
let r3 = t.runCommand({find: 'sl', tailable: true, limit: 1});
check(ids_of(r3.cursor.firstBatch) === '[1]' && r3.cursor.id == 0, 'tailable limit 1 ends the cursor');
t.runCommand({killCursors: 'sl', cursors: [r1.cursor.id, r2.cursor.id]});
t.sl.drop();
t.createCollection('sl', {capped: true, size: 1024});
const empty = t.runCommand({find: 'sl', tailable: true});
check(empty.cursor.id == 0 && empty.cursor.firstBatch.length === 0, 'no tailable cursor on an empty collection');
check(t.sl.find().tailable().itcount() === 0, 'an empty tail ends');

t.dropDatabase();
print('capped.js: ok');
