// text_hashed.js -- text and hashed indexes through mongosh against tamgad:
// createIndex({title: "text"}) and its stored spec, $text with textScore in
// projection and sort (the manual's "cakes" scores), phrases and
// negations, explain's TEXT_MATCH, $text first in an aggregation with
// $sort by textScore, mongod's errors (27, 85, 16766, 31303); a hashed
// index used for equality with explain's hashed bounds, and
// convertShardKeyToHashed (hasher.cpp's own {check: 42} value).
// Prints "N passed, N failed"; exits non-zero when anything failed.
load(__dirname + '/harness.js');

const tdb = db.getSiblingDB('text_hashed_e2e');
tdb.dropDatabase();

test('text index: created as mongod stores it', () => {
	tdb.articles.insertMany([
		{_id: 1, title: 'cakes and ale'}, {_id: 2, title: 'more cakes'}, {_id: 3, title: 'bread'},
		{_id: 4, title: 'some cakes'}, {_id: 5, title: 'two cakes to go'}, {_id: 6, title: 'pan cakes'},
	]);
	eq(code(() => tdb.articles.find({$text: {$search: 'cake'}}).toArray()), 27);
	eq(tdb.articles.createIndex({title: 'text'}), 'title_text');
	const ix = tdb.articles.getIndexes().find((i) => i.name === 'title_text');
	eq(ix.key, {_fts: 'text', _ftsx: 1});
	eq(ix.weights, {title: 1});
	eq(ix.default_language, 'english');
	eq(ix.language_override, 'language');
	eq(ix.textIndexVersion, 3);
	eq(code(() => tdb.articles.createIndex({body: 'text'})), 85);
});

test('$text with textScore projected and sorted', () => {
	const got = tdb.articles.find({$text: {$search: 'cake'}}, {score: {$meta: 'textScore'}})
		.sort({score: {$meta: 'textScore'}, _id: 1}).toArray();
	eq(got.map((d) => d._id), [2, 4, 1, 6, 5]);
	eq(got.map((d) => d.score), [1, 1, 0.75, 0.75, 0.5 / 3 + 0.5]);
});

test('phrases, negations, explain', () => {
	eq(tdb.articles.find({$text: {$search: '"cakes to"'}}, {_id: 1}).toArray(), [{_id: 5}]);
	eq(tdb.articles.find({$text: {$search: 'cakes -ale -pan'}}, {_id: 1}).sort({_id: 1}).toArray(),
		[{_id: 2}, {_id: 4}, {_id: 5}]);
	const ex = tdb.articles.find({$text: {$search: 'coffee cakes'}}).explain();
	eq(ex.queryPlanner.winningPlan.stage, 'TEXT_MATCH');
	eq(ex.queryPlanner.winningPlan.parsedTextQuery.terms, ['cake', 'coffe']);
	eq(ex.queryPlanner.winningPlan.inputStage.stage, 'FETCH');
	eq(ex.queryPlanner.winningPlan.inputStage.inputStage.stage, 'OR');
});

test('$text first in an aggregation, $sort by textScore', () => {
	const got = tdb.articles.aggregate([
		{$match: {$text: {$search: 'ale bread'}}},
		{$sort: {score: {$meta: 'textScore'}}},
		{$project: {_id: 1}},
	]).toArray();
	eq(got, [{_id: 3}, {_id: 1}]);
	const scored = tdb.articles.aggregate([
		{$match: {$text: {$search: 'cakes'}}},
		{$addFields: {score: {$meta: 'textScore'}}},
		{$sort: {score: -1, _id: 1}},
		{$limit: 2},
		{$project: {_id: 1, score: 1}},
	]).toArray();
	eq(scored, [{_id: 2, score: 1}, {_id: 4, score: 1}]);
	eq(code(() => tdb.articles.find({}, {s: {$meta: 'textScore'}}).toArray()), 40218);
});

test('hashed index: equality uses the hashes', () => {
	tdb.users.insertMany([{_id: 1, email: 'a@x'}, {_id: 2, email: 'b@x'}, {_id: 3}]);
	eq(tdb.users.createIndex({email: 'hashed'}), 'email_hashed');
	eq(tdb.users.find({email: 'b@x'}).toArray(), [{_id: 2, email: 'b@x'}]);
	const ex = tdb.users.find({email: 'b@x'}).explain();
	const ixscan = ex.queryPlanner.winningPlan.inputStage;
	eq(ixscan.stage, 'IXSCAN');
	eq(ixscan.keyPattern, {email: 'hashed'});
	const h = convertShardKeyToHashed('b@x');
	eq(ixscan.indexBounds.email, [`[${h}, ${h}]`]);
	eq(tdb.users.find({email: {$in: ['a@x', 'b@x']}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2]);
	eq(tdb.users.find({email: {$gt: 'a'}}).explain().queryPlanner.winningPlan.stage, 'COLLSCAN');
	eq(code(() => tdb.users.insertOne({email: ['c@x']})), 16766);
	eq(tdb.users.countDocuments({}), 3);
	eq(code(() => tdb.users.createIndex({a: 'hashed', b: 'hashed'})), 31303);
	eq(code(() => tdb.users.createIndex({x: 'hashed'}, {unique: true})), 16764);
});

test('convertShardKeyToHashed matches mongod', () => {
	// hasher.cpp checks BSON("check" << 42) hashes to -944302157085130861
	eq(convertShardKeyToHashed(42).toString(), '-944302157085130861');
});

done();
