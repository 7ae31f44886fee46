// collMod's unique-index conversion through mongosh's helpers (issue 19):
// createIndex with prepareUnique, db.runCommand({collMod}) with
// prepareUnique / unique / dryRun / forceNonUnique and mongod's codes
// (72, 2, 359 with `violations`, 11000), getIndexes() showing each state.
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
// mongosh's runCommand throws on ok: 0; the server's reply fields are on the error
function cmdFails(cmd, code, msg) {
  const e = fails(() => t.runCommand(cmd), code, msg);
  return e.errorResponse || e;
}
function spec(name) {
  return t.c.getIndexes().filter((i) => i.name === name)[0];
}

const t = db.getSiblingDB('collmod_unique_e2e');
t.dropDatabase();
t.c.insertMany([{_id: 1, a: 1}, {_id: 2, a: 1}, {_id: 3, b: 1}, {_id: 4, b: 2}]);
t.c.createIndex({a: 1});
cmdFails({collMod: 'c', index: {keyPattern: {a: 1}, unique: true}}, 72, 'unique without prepareUnique');
cmdFails({collMod: 'c', index: {keyPattern: {a: 1}, unique: false}}, 2, 'unique: false');
let r = t.runCommand({collMod: 'c', index: {keyPattern: {a: 1}, prepareUnique: true}});
check(r.ok === 1 && r.prepareUnique_old === false && r.prepareUnique_new === true, 'prepareUnique ' + JSON.stringify(r));
check(spec('a_1').prepareUnique === true, 'getIndexes shows prepareUnique');
fails(() => t.c.insertOne({_id: 5, a: 1}), 11000, 'a new duplicate');
r = cmdFails({collMod: 'c', index: {name: 'a_1', unique: true}}, 359, 'conversion with duplicates');
// documents 3 and 4 have no `a`: their null keys are duplicates too (in key order)
check(r.codeName === 'CannotConvertIndexToUnique' &&
      JSON.stringify(r.violations) === JSON.stringify([{ids: [3, 4]}, {ids: [1, 2]}]),
      'violations ' + JSON.stringify(r));
t.c.deleteOne({_id: 2});
cmdFails({collMod: 'c', index: {name: 'a_1', unique: true}, dryRun: true}, 359, 'dryRun: the null keys');
t.c.updateOne({_id: 4}, {$set: {a: 4}});
r = t.runCommand({collMod: 'c', index: {name: 'a_1', unique: true}, dryRun: true});
check(r.ok === 1 && r.unique_new === undefined && spec('a_1').unique === undefined, 'dryRun ' + JSON.stringify(r));
r = t.runCommand({collMod: 'c', index: {name: 'a_1', unique: true}});
check(r.ok === 1 && r.unique_new === true, 'conversion ' + JSON.stringify(r));
check(spec('a_1').unique === true && spec('a_1').prepareUnique === undefined, 'getIndexes: unique');
// documents without `a` share the null key: one of them at most once unique
fails(() => t.c.insertOne({_id: 6}), 11000, 'a second null key');
r = t.runCommand({collMod: 'c', index: {name: 'a_1', forceNonUnique: true}});
check(r.ok === 1 && r.forceNonUnique_new === true, 'forceNonUnique ' + JSON.stringify(r));
t.c.insertOne({_id: 6});
check(t.c.countDocuments({a: null}) === 2, 'duplicates accepted again');
// createIndex with prepareUnique: enforced from the start, old duplicates kept
// (the createIndex helper's driver drops prepareUnique from the options: the command itself)
t.runCommand({createIndexes: 'c', indexes: [{key: {b: 1}, name: 'b_1', prepareUnique: true}]});
check(spec('b_1').prepareUnique === true, 'createIndexes keeps prepareUnique');
fails(() => t.c.insertOne({_id: 7, b: 2}), 11000, 'prepareUnique from createIndex');
t.c.updateOne({_id: 4}, {$set: {c: 1}});   // a document's own unchanged key is no duplicate
t.c.insertOne({_id: 7, b: 3});
print('collmod_unique.js: ok');
