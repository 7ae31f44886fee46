// collation.js -- collations end to end through mongosh: the commands that
// take one (find, count, distinct, aggregate, update, delete,
// findAndModify, bulkWrite), a collection's default collation (inherited
// by queries, the _id index and new indexes), indexes with a collation
// (unique by it, used by the planner only for queries with the same one),
// listCollections/listIndexes/explain output and mongod's errors.
// Run by CTest through with_tamgad.sh:
//   mongosh $TAMGA_URI --quiet --file collation.js
// Prints "N passed, N failed" and exits non-zero when anything failed.
load(__dirname + '/harness.js');

const t = db.getSiblingDB('collation_e2e');
t.dropDatabase();
const ci = {locale: 'en', strength: 2};      // case-insensitive
const base = {locale: 'en', strength: 1};    // accents ignored too
t.c.insertMany([{_id: 1, x: 'a'}, {_id: 2, x: 'A'}, {_id: 3, x: 'b'}, {_id: 4, x: 'B'},
	{_id: 5, x: 'á'}, {_id: 6, x: '10'}, {_id: 7, x: '9'}, {_id: 8, x: 5}]);
const ids = (cur) => cur.toArray().map((d) => d._id);
const xs = (cur) => cur.toArray().map((d) => d.x);

test('find: equality and ranges by strength', () => {
	eq(ids(t.c.find({x: 'a'})), [1]);
	eq(ids(t.c.find({x: 'a'}).collation(ci)), [1, 2]);
	eq(ids(t.c.find({x: 'a'}).collation(base)), [1, 2, 5]);
	eq(ids(t.c.find({x: {$gte: 'B', $lt: 'C'}}).collation(ci)), [3, 4]);
	eq(ids(t.c.find({x: {$in: ['Q', 'B']}}).collation(ci)), [3, 4]);
	eq(ids(t.c.find({x: 5}).collation(ci)), [8], 'numbers unchanged');
	eq(ids(t.c.find({x: /^A/}).collation(ci)), [2], '$regex ignores the collation');
	eq(ids(t.c.find({X: 'a'}).collation(ci)), [], 'field names are not collated');
	eq(ids(t.c.find({$expr: {$eq: ['$x', 'A']}}).collation(ci)), [1, 2]);
});

test('find: sort by locale, caseFirst, numericOrdering', () => {
	eq(xs(t.c.find({_id: {$lt: 8}}).sort({x: 1})), ['10', '9', 'A', 'B', 'a', 'b', 'á']);
	eq(xs(t.c.find({_id: {$lt: 8}}).sort({x: 1}).collation({locale: 'en'})), ['10', '9', 'a', 'A', 'á', 'b', 'B']);
	eq(xs(t.c.find({_id: {$lt: 8}}).sort({x: 1}).collation({locale: 'en', caseFirst: 'upper'})),
		['10', '9', 'A', 'a', 'á', 'B', 'b']);
	eq(xs(t.c.find({_id: {$lt: 8}}).sort({x: -1}).collation({locale: 'en', numericOrdering: true})),
		['B', 'b', 'á', 'A', 'a', '10', '9']);
});

test('count, distinct, aggregate', () => {
	eq(t.c.countDocuments({x: 'b'}, {collation: ci}), 2);
	eq(t.runCommand({count: 'c', query: {x: 'b'}, collation: ci}).n, 2);
	eq(t.c.distinct('x', {_id: {$lt: 8}}, {collation: base}), ['10', '9', 'a', 'b']);
	eq(t.c.aggregate([{$match: {x: 'A'}}, {$count: 'n'}], {collation: ci}).toArray(), [{n: 2}]);
	eq(t.c.aggregate([{$match: {_id: {$lt: 8}}}, {$group: {_id: '$x', n: {$sum: 1}}}, {$sort: {_id: 1}}],
		{collation: ci}).toArray(), [{_id: '10', n: 1}, {_id: '9', n: 1}, {_id: 'a', n: 2}, {_id: 'á', n: 1},
		{_id: 'b', n: 2}]);
	eq(t.c.aggregate([{$match: {_id: 1}}, {$project: {_id: 0, e: {$eq: ['$x', 'A']}, c: {$cmp: ['$x', 'B']},
		i: {$in: ['A', ['a']]}, k: {$indexOfArray: [['b', 'a'], 'A']}, u: {$setUnion: [['a', 'A', 'b']]}}}],
		{collation: ci}).toArray(), [{e: true, c: -1, i: true, k: 1, u: ['a', 'b']}]);
	t.o.insertOne({_id: 1, k: 'A'});
	t.i.insertMany([{_id: 1, k: 'a'}, {_id: 2, k: 'b'}]);
	eq(t.o.aggregate([{$lookup: {from: 'i', localField: 'k', foreignField: 'k', as: 'j'}}], {collation: ci})
		.toArray(), [{_id: 1, k: 'A', j: [{_id: 1, k: 'a'}]}]);
});

test('update, delete, findAndModify, bulkWrite', () => {
	t.u.insertMany([{_id: 1, s: 'x', tags: ['a', 'B']}, {_id: 2, s: 'X'}, {_id: 3, s: 'y'}]);
	eq(t.u.updateMany({s: 'x'}, {$set: {hit: 1}}, {collation: ci}).modifiedCount, 2);
	t.u.updateOne({_id: 1}, {$addToSet: {tags: 'A'}}, {collation: ci});
	t.u.updateOne({_id: 1}, {$pull: {tags: 'b'}}, {collation: ci});
	eq(t.u.findOne({_id: 1}).tags, ['a']);
	t.u.updateOne({_id: 3}, {$max: {s: 'Y'}}, {collation: ci});
	eq(t.u.findOne({_id: 3}).s, 'y', '$max: equal under the collation keeps the value');
	eq(t.u.findOneAndUpdate({s: 'Y'}, {$set: {f: 1}}, {collation: ci, returnDocument: 'after'})._id, 3);
	eq(t.u.deleteMany({s: 'X'}, {collation: ci}).deletedCount, 2);
	const r = t.u.bulkWrite([{insertOne: {document: {_id: 4, s: 'q'}}},
		{updateOne: {filter: {s: 'Q'}, update: {$set: {b: 1}}, collation: ci}},
		{deleteOne: {filter: {s: 'Y'}, collation: ci}}]);
	eq([r.modifiedCount, r.deletedCount], [1, 1]);
});

test('a collection default collation', () => {
	t.createCollection('d', {collation: {locale: 'fr', strength: 2}});
	const info = t.getCollectionInfos({name: 'd'})[0];
	eq(info.options.collation, {locale: 'fr', caseLevel: false, caseFirst: 'off', strength: 2,
		numericOrdering: false, alternate: 'non-ignorable', maxVariable: 'punct', normalization: false,
		backwards: false, version: '57.1'});
	eq(info.idIndex.collation.locale, 'fr');
	t.d.insertMany([{_id: 'a'}, {_id: 'B'}]);
	eq(err(() => t.d.insertOne({_id: 'A'})).code, 11000, 'the _id index follows the default');
	eq(ids(t.d.find({_id: 'b'})), ['B'], 'queries inherit it');
	eq(ids(t.d.find({_id: 'b'}).collation({locale: 'simple'})), [], 'and can override it');
	t.d.createIndex({y: 1});
	t.d.createIndex({z: 1}, {collation: {locale: 'simple'}});
	const ix = t.d.getIndexes();
	eq(ix.map((i) => i.collation ? i.collation.locale : 'simple'), ['fr', 'fr', 'simple']);
	eq(t.createCollection('h', {collation: {locale: 'simple'}}).ok, 1);
	eq(t.getCollectionInfos({name: 'h'})[0].options, {});
});

test('an index with a collation', () => {
	t.eu.createIndex({n: 1}, {collation: ci, unique: true});
	t.eu.insertOne({n: 'hello'});
	eq(err(() => t.eu.insertOne({n: 'HELLO'})).code, 11000, 'unique by the collation');
	t.e.createIndex({n: 1}, {collation: ci});
	t.e.insertMany([{n: 'hello'}, {n: 'abc'}, {n: 5}]);
	let p = t.e.find({n: 'ABC'}).collation(ci).explain().queryPlanner.winningPlan;
	eq([p.stage, p.inputStage.stage, p.inputStage.indexName, p.inputStage.collation.strength],
		['FETCH', 'IXSCAN', 'n_1', 2]);
	eq(t.e.find({n: 'ABC'}).collation(ci).toArray().map((d) => d.n), ['abc']);
	p = t.e.find({n: 'ABC'}).explain().queryPlanner.winningPlan;
	eq(p.stage, 'COLLSCAN', 'a simple query cannot use the collated index for strings');
	eq(t.e.find({n: 'ABC'}).toArray(), []);
	p = t.e.find({n: 5}).explain().queryPlanner.winningPlan;
	eq(p.inputStage.stage, 'IXSCAN', 'non-string bounds may use it');
	eq(t.e.find({n: {$gt: 'B'}}).collation(ci).sort({n: 1}).toArray().map((d) => d.n), ['hello']);
});

test('errors as mongod', () => {
	const find = (c) => err(() => t.runCommand({find: 'c', collation: c}));
	eq(find({locale: 'xx'}), {code: 2, msg: 'Field \'locale\' is invalid in: { locale: "xx" }'});
	eq(find({locale: 'simple', strength: 2}).code, 9);
	eq(find({locale: 'en', strength: 6}),
		{code: 2, msg: "BSON field 'strength' value must be <= 5, actual value '6'"});
	eq(find({locale: 'en', bogus: 1}), {code: 40415, msg: "BSON field 'collation.bogus' is an unknown field."});
	eq(find({strength: 1}).code, 40414);
	eq(find(5).code, 14);
	eq(err(() => t.runCommand({create: 'g', collation: {}})).code, 40414);
	eq(err(() => t.c.createIndex({q: 1}, {collation: {locale: 'zz'}})).code, 2);
	const del = t.runCommand({delete: 'c', deletes: [{q: {}, limit: 0, collation: {locale: 'zz'}}]});
	eq([del.n, del.writeErrors[0].code], [0, 2], 'a statement\'s bad collation is its write error');
});

test('views: a view reads with its own default collation, never another', () => {
	t.createView('v', 'c', [{$match: {_id: {$lt: 3}}}]);
	eq(ids(t.v.find({x: 'a'})), [1]);
	eq(err(() => t.v.find({x: 'a'}).collation(ci).toArray()),
		{code: 167, msg: "Cannot override a view's default collation"});
	eq(ids(t.v.find({x: 'a'}).collation({locale: 'simple'})), [1]);
	// a case-insensitive view: its collation applies to find, count, distinct, aggregate
	t.createView('w', 'c', [{$match: {_id: {$lt: 6}}}], {collation: ci});
	const info = t.getCollectionInfos({name: 'w'})[0];
	eq(info.options.collation.locale, 'en', 'stored as the normalized spec');
	eq(info.options.collation.strength, 2);
	eq(ids(t.w.find({x: 'a'}).sort({_id: 1})), [1, 2]);
	eq(t.w.countDocuments({x: 'b'}), 2);
	eq(t.w.distinct('x').length, 3, 'a/A, b/B and á are three values at strength 2');
	eq(ids(t.w.find({x: 'A'}).collation(ci).sort({_id: 1})), [1, 2], 'the same collation may be named');
	eq(err(() => t.w.find().collation({locale: 'simple'}).toArray()).code, 167);
	// a view on a view shares its collation
	eq(err(() => t.createView('ww', 'w', [])),
		{code: 167, msg: 'View collation_e2e.ww has conflicting collation with view collation_e2e.w'});
	t.createView('ww', 'w', [], {collation: ci});
	eq(t.ww.countDocuments({x: 'A'}), 2);
});

t.dropDatabase();
done();
