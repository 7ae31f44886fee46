// views_join.js -- views read by joins, through mongosh against tamgad:
// $lookup by localField/foreignField and $graphLookup from views and views
// of views, the collation rules mongod applies to every view a pipeline
// reads (167 at aggregate, create and collMod time), system.views as the
// shell shows it, and the stages that compare by the collation.  Run by
// CTest through with_tamgad.sh; prints "N passed, N failed" and exits
// non-zero when anything failed.
load(__dirname + '/harness.js');

const vdb = db.getSiblingDB('views_join_e2e');
vdb.dropDatabase();

// The error code of cmd on vdb (0 when it works); mongosh throws on errors.
function codeOf(cmd) {
	try {
		const r = vdb.runCommand(cmd);
		return r.ok === 1 ? 0 : r.code;
	} catch (e) {
		return e.code;
	}
}

function errmsgOf(cmd) {
	try {
		return vdb.runCommand(cmd).errmsg;
	} catch (e) {
		return e.errmsg || e.message;
	}
}

test('$lookup by localField/foreignField from a view and a view of a view', () => {
	vdb.books.insertMany([{_id: 1, author: 'le guin'}, {_id: 2, author: ['banks', 'le guin']}, {_id: 3}]);
	vdb.people.insertMany([{_id: 'a', name: 'le guin', alive: false}, {_id: 'b', name: 'banks', alive: false},
		{_id: 'c', name: 'jemisin', alive: true}, {_id: 'd', alive: true}]);
	vdb.createView('gone', 'people', [{$match: {alive: false}}, {$project: {alive: 0}}]);
	vdb.createView('goneNames', 'gone', [{$project: {_id: 0, name: 1}}]);
	eq(vdb.books.aggregate([{$lookup: {from: 'gone', localField: 'author', foreignField: 'name', as: 'who'}},
		{$project: {who: '$who._id'}}]).toArray(),
		[{_id: 1, who: ['a']}, {_id: 2, who: ['a', 'b']}, {_id: 3, who: []}]);
	eq(vdb.books.aggregate([{$match: {_id: 2}}, {$lookup: {from: 'goneNames', localField: 'author',
		foreignField: 'name', let: {b: '$_id'}, pipeline: [{$set: {book: '$$b'}}, {$sort: {name: 1}}], as: 'who'}},
		{$project: {_id: 0, who: 1}}]).toArray(),
		[{who: [{name: 'banks', book: 2}, {name: 'le guin', book: 2}]}]);
	// an aggregate on a view whose stages join a view
	vdb.createView('booksWithAuthors', 'books', [{$lookup: {from: 'gone', localField: 'author',
		foreignField: 'name', as: 'who'}}, {$project: {n: {$size: '$who'}}}]);
	eq(vdb.booksWithAuthors.find().toArray(), [{_id: 1, n: 1}, {_id: 2, n: 2}, {_id: 3, n: 0}]);
});

test('$graphLookup from a view, every document of each search', () => {
	vdb.edges.insertMany([{_id: 1, from: 'x', to: 'y'}, {_id: 2, from: 'x', to: 'z'}, {_id: 3, from: 'y', to: 'w'},
		{_id: 4, from: 'z', to: 'w'}, {_id: 5, from: 'w', to: 'x', closed: true}]);
	vdb.createView('openEdges', 'edges', [{$match: {closed: {$ne: true}}}]);
	const r = vdb.edges.aggregate([{$match: {_id: 5}}, {$graphLookup: {from: 'openEdges', startWith: '$to',
		connectFromField: 'to', connectToField: 'from', as: 'reach', depthField: 'd'}}]).toArray()[0];
	eq(r.reach.map(e => [e._id, Number(e.d)]), [[1, 0], [2, 0], [3, 1], [4, 1]]);
});

test('every view a pipeline reads has its collation (167)', () => {
	vdb.createCollection('simpleColl');
	vdb.createCollection('filColl', {collation: {locale: 'fil'}});
	vdb.createView('simpleView', 'simpleColl', []);
	vdb.createView('filView', 'simpleColl', [], {collation: {locale: 'fil'}});
	const lookupFil = {$lookup: {from: 'filView', localField: 'x', foreignField: 'x', as: 'r'}};
	const nestedFil = {$lookup: {from: 'simpleColl', pipeline: [lookupFil], as: 'r'}};
	const graphFil = {$graphLookup: {from: 'filView', startWith: '$_id', connectFromField: '_id',
		connectToField: 'm', as: 'r'}};
	for (const stage of [lookupFil, nestedFil, graphFil]) {
		eq(codeOf({aggregate: 'filColl', pipeline: [stage], cursor: {}}), 0, 'collection default matches');
		eq(codeOf({aggregate: 'simpleColl', pipeline: [stage], cursor: {}, collation: {locale: 'fil'}}), 0,
			'operation collation matches');
		eq(codeOf({aggregate: 'simpleColl', pipeline: [stage], cursor: {}}), 167, 'simple vs fil');
		eq(codeOf({aggregate: 'filColl', pipeline: [stage], cursor: {}, collation: {locale: 'zh'}}), 167, 'zh vs fil');
		eq(codeOf({aggregate: 'simpleView', pipeline: [stage], cursor: {}}), 167, 'from a simple view');
	}
	eq(errmsgOf({aggregate: 'simpleColl', pipeline: [lookupFil], cursor: {}}),
		"Cannot override a view's default collationviews_join_e2e.filView");
	// definitions: what a view reads, and what reads it, share its collation
	eq(codeOf({create: 'zhView', viewOn: 'filView', collation: {locale: 'zh'}}), 167);
	eq(errmsgOf({create: 'zhView', viewOn: 'simpleColl', pipeline: [graphFil], collation: {locale: 'zh'}}),
		'View views_join_e2e.zhView has conflicting collation with view views_join_e2e.filView');
	vdb.createView('filView2', 'filView', [], {collation: {locale: 'fil'}});
	ok(vdb.filView.drop());
	eq(errmsgOf({create: 'filView', viewOn: 'simpleColl'}),
		'View views_join_e2e.filView has a collation that does not match the collation of view ' +
		'views_join_e2e.filView2');
	eq(codeOf({create: 'filView', viewOn: 'simpleColl', collation: {locale: 'fil'}}), 0);
});

test('the view graph: cycles through joins (5), chains past 20 views (165)', () => {
	const lookup = from => ({$lookup: {from, as: 'as', localField: 'l', foreignField: 'f'}});
	const graph = from => ({$graphLookup: {from, as: 'as', startWith: 's', connectFromField: 'f',
		connectToField: 't'}});
	const facet = from => ({$facet: {k: [lookup(from)]}});
	eq(codeOf({create: 'ga', viewOn: 'ga'}), 5);
	for (const make of [lookup, graph, facet, from => ({$unionWith: from})]) {
		eq(codeOf({create: 'ga', viewOn: 'gb', pipeline: [make('ga')]}), 5, 'reads itself');
		eq(codeOf({create: 'ga', viewOn: 'gb', pipeline: [make('gb')]}), 0);
		eq(codeOf({create: 'gb', viewOn: 'gc', pipeline: [make('ga')]}), 5, 'through another view');
		ok(vdb.ga.drop());
	}
	eq(codeOf({create: 'ga', viewOn: 'gb', pipeline: [{$unionWith: {coll: 'gc', pipeline: [{$unionWith: 'ga'}]}}]}), 5);
	// a tree: each level reads the next four ways, 20 levels deep
	for (let i = 1; i <= 20; i++) {
		const next = 'v' + (i + 1);
		eq(codeOf({create: 'v' + i, viewOn: next, pipeline: [lookup(next), graph(next), facet(next),
			{$unionWith: next}]}), 0, 'level ' + i);
	}
	eq(codeOf({create: 'v21', viewOn: 'v22'}), 165);
	eq(codeOf({create: 'v0', viewOn: 'v1'}), 165);
	eq(errmsgOf({create: 'v0', viewOn: 'ok', pipeline: [lookup('v1')]}),
		'View depth limit exceeded; maximum depth is 20');
	eq(codeOf({create: 'vMid', viewOn: 'v10'}), 0, 'in the middle');
	// reading v1 resolves a chain of 20 views: refused before anything is
	// parsed (each view is parsed once per query anyway)
	const resolveMsg = "Failed to resolve view 'views_join_e2e.v1 :: caused by :: " +
		'View depth too deep or view cycle detected; maximum depth is 20';
	eq(errmsgOf({aggregate: 'v10', pipeline: [{$unionWith: 'v1'}], cursor: {}}), resolveMsg);
	eq(errmsgOf({aggregate: 'v10', pipeline: [lookup('v1')], cursor: {}}), resolveMsg);
	eq(codeOf({aggregate: 'v1', pipeline: [], cursor: {}}), 165);
	eq(vdb.v20.find().toArray(), [{k: []}], 'the lowest level: the $facet makes one document from none');
	eq(vdb.v17.countDocuments(), 4);
	eq(codeOf({collMod: 'v20', viewOn: 'v1'}), 5);
	for (let i = 1; i <= 20; i++)
		ok(vdb.getCollection('v' + i).drop());
	ok(vdb.vMid.drop());
});

test('system.views: listed as a collection, holds the definitions, outlives the last view', () => {
	ok(vdb.getCollectionNames().includes('system.views'), 'getCollectionNames');
	const colls = vdb.getCollectionInfos({type: 'collection'}).map(c => c.name);
	ok(colls.includes('system.views') && colls.includes('books') && !colls.includes('gone'), JSON.stringify(colls));
	eq(vdb.system.views.findOne({_id: 'views_join_e2e.gone'}),
		{_id: 'views_join_e2e.gone', viewOn: 'people', pipeline: [{$match: {alive: false}}, {$project: {alive: 0}}]});
	eq(vdb.system.views.findOne({_id: 'views_join_e2e.filView'}).collation.locale, 'fil');
	for (const v of vdb.getCollectionInfos({type: 'view'}).map(c => c.name))
		ok(vdb.getCollection(v).drop(), 'drop ' + v);
	eq(vdb.system.views.countDocuments(), 0);
	ok(vdb.getCollectionNames().includes('system.views'), 'kept after the last view');
	// a direct write, as mongod takes it: the views follow system.views
	eq(codeOf({insert: 'system.views', documents: [{_id: 'views_join_e2e.x', viewOn: 'books', pipeline: []}]}), 0);
	eq(vdb.getCollectionInfos({type: 'view'}).map(c => c.name), ['x']);
	eq(vdb.x.countDocuments(), vdb.books.countDocuments());
	vdb.system.views.updateOne({_id: 'views_join_e2e.x'}, {$set: {pipeline: [{$limit: 1}]}});
	eq(vdb.x.countDocuments(), 1);
	const bad = vdb.runCommand({insert: 'system.views', documents: [{_id: 'views_join_e2e.y', viewOn: 'books', pipeline: 'p'}]});
	eq(bad.writeErrors[0].code, 182);
	eq(bad.writeErrors[0].errmsg,
		"found invalid view definition _id: \"views_join_e2e.y\" while reading 'views_join_e2e.system.views'");
	vdb.system.views.deleteOne({_id: 'views_join_e2e.x'});
	eq(vdb.getCollectionInfos({type: 'view'}).length, 0);
	vdb.createView('again', 'books', []);
	ok(vdb.system.views.drop(), 'drop system.views');
	eq(vdb.getCollectionInfos({name: 'again'}).length, 0, 'its views went with it');
	vdb.createView('again', 'books', []);
	vdb.dropDatabase();
	eq(vdb.getCollectionNames(), []);
});

test('stages compare by the collation; $jsonSchema does not', () => {
	const ci = {locale: 'en', strength: 2};
	vdb.s.insertMany([{v: 'a'}, {v: 'B'}, {v: 'c'}, {v: 'A'}]);
	eq(vdb.s.aggregate([{$bucket: {groupBy: '$v', boundaries: ['a', 'C', 'z']}}], {collation: ci}).toArray(),
		[{_id: 'a', count: 3}, {_id: 'C', count: 1}]);
	eq(code(() => vdb.s.aggregate([{$bucket: {groupBy: '$v', boundaries: ['a', 'C', 'z']}}]).toArray()), 40194);
	eq(vdb.s.aggregate([{$bucketAuto: {groupBy: '$v', buckets: 2}}], {collation: ci}).toArray().map(b => b.count),
		[2, 2]);
	vdb.js.insertMany([{a: 'str'}, {a: ['STR', 'sTr']}]);
	eq(vdb.js.find({$jsonSchema: {properties: {a: {enum: ['STR']}}}}).collation(ci).count(), 0);
	eq(vdb.js.find({a: 'STR'}).collation(ci).count(), 2);
	vdb.dropDatabase();
});

done();
