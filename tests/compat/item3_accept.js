// item3_accept.js -- issue 22 item 3: inputs mongod accepts that tamgad
// refused (or answered differently).
{
	const c = cdb.i3;
	c.insertMany([{_id: 1, a: 1, r: {$ref: 'x', $id: 7, $db: 'd'}}, {_id: 2, a: 2, r: {$ref: 'x', $id: 8}}, {_id: 3, a: 3}]);

	compat(3, '$skip: -0.0 and integral doubles parse (parseIntegerElementToNonNegativeLong)', () => {
		eq(agg(cdb, 'i3', [{$sort: {_id: 1}}, {$skip: -0.0}, {$count: 'n'}]), [{n: 3}]);
		eq(agg(cdb, 'i3', [{$sort: {_id: 1}}, {$skip: 2.0}, {$project: {_id: 1}}]), [{_id: 3}]);
		eq(agg(cdb, 'i3', [{$sort: {_id: 1}}, {$skip: NumberDecimal('1')}, {$limit: NumberDecimal('1')}, {$project: {_id: 1}}]), [{_id: 2}]);
	});
	compat(3, 'count with a negative limit counts as its absolute value', () => {
		eq(cmdOk(cdb, {count: 'i3', limit: -2}).n, 2);
		eq(cmdOk(cdb, {count: 'i3', query: {}, limit: -1}).n, 1);
	});
	compat(3, 'distinct with query: null', () => {
		eq(cmdOk(cdb, {distinct: 'i3', key: 'a', query: null}).values, [1, 2, 3]);
	});
	compat(3, 'bypassDocumentValidation: numbers are coerced (safeBool)', () => {
		cmdOk(cdb, {insert: 'i3b', documents: [{_id: 1}], bypassDocumentValidation: 1});
		cmdOk(cdb, {update: 'i3b', updates: [{q: {_id: 1}, u: {$set: {x: 1}}}], bypassDocumentValidation: 0});
		cmdOk(cdb, {findAndModify: 'i3b', query: {_id: 1}, update: {$set: {y: 1}}, bypassDocumentValidation: 1.0});
		cmdOk(cdb, {aggregate: 'i3', pipeline: [{$out: 'i3o'}], cursor: {}, bypassDocumentValidation: NumberLong(1)});
		wantErr(cdb, {insert: 'i3b', documents: [{_id: 2}], bypassDocumentValidation: 'yes'}, 14);
	});
	compat(3, 'DBRef fields ($ref, $id, $db) in field paths', () => {
		eq(agg(cdb, 'i3', [{$match: {'r.$id': 7}}, {$project: {_id: 0, id: '$r.$id', ref: '$r.$ref', d: '$r.$db'}}]),
			[{id: 7, ref: 'x', d: 'd'}]);
		eq(agg(cdb, 'i3', [{$match: {r: {$exists: true}}}, {$group: {_id: '$r.$ref', n: {$sum: 1}}}]), [{_id: 'x', n: 2}]);
		eq(c.find({'r.$id': 8}, {_id: 1}).toArray(), [{_id: 2}]);
		eq(agg(cdb, 'i3', [{$match: {_id: 1}}, {$project: {'r.$id': 1}}]), [{_id: 1, r: {$id: 7}}]);
	});
	compat(3, 'listIndexes with cursor.batchSize', () => {
		c.createIndex({a: 1});
		const r = cmdOk(cdb, {listIndexes: 'i3', cursor: {batchSize: 1}});
		eq(r.cursor.firstBatch.length, 1);
		ok(r.cursor.id != 0, 'cursor left open');
		// the collection of the reply's ns, as drivers send it
		const m = cmdOk(cdb, {getMore: r.cursor.id, collection: r.cursor.ns.slice('compat22.'.length)});
		eq(m.cursor.nextBatch.map((i) => i.name), ['a_1']);
	});
	compat(3, 'a collection named by its UUID (find, count, listIndexes)', () => {
		const uuid = cdb.getCollectionInfos({name: 'i3'})[0].info.uuid;
		eq(cmdOk(cdb, {find: uuid, filter: {_id: 1}, projection: {_id: 1}}).cursor.firstBatch, [{_id: 1}]);
		eq(cmdOk(cdb, {count: uuid}).n, 3);
		const r = cmdOk(cdb, {find: uuid, filter: {}});
		eq(r.cursor.ns, 'compat22.i3');
	});
	compat(3, 'find with $_requestResumeToken and $_resumeAfter (resumable collection scan)', () => {
		const r = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, batchSize: 1, $_requestResumeToken: true});
		const tok = r.cursor.postBatchResumeToken;
		ok(tok && tok.$recordId !== undefined, cj(r.cursor));
		const r2 = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true, $_resumeAfter: tok});
		eq(r2.cursor.firstBatch.map((d) => d._id), [2, 3]);
		// across getMores: each batch's token resumes after its last document
		const r3 = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, batchSize: 1, $_requestResumeToken: true, $_resumeAfter: tok});
		const m = cmdOk(cdb, {getMore: r3.cursor.id, collection: 'i3', batchSize: 1});
		const r4 = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: m.cursor.postBatchResumeToken});
		eq(r4.cursor.firstBatch, []);
		wantErr(cdb, {find: 'i3', filter: {}, $_requestResumeToken: true}, 2);
		wantErr(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: NumberLong(999)}}, 211);
	});
	compat(3, 'setParameter notablescan: a collection scan is refused with 291', () => {
		const admin = db.getSiblingDB('admin');
		cmdOk(admin, {setParameter: 1, notablescan: true});
		try {
			const e = wantErr(cdb, {find: 'i3', filter: {b: 1}}, 291);
			ok(/notablescan/.test(e.errmsg), e.errmsg);
			cmdOk(cdb, {find: 'i3', filter: {a: 1}}); // indexed
			wantErr(cdb, {count: 'i3', query: {b: 1}}, 291);
			wantErr(cdb, {distinct: 'i3', key: 'a', query: {b: 1}}, 291);
			wantErr(cdb, {aggregate: 'i3', pipeline: [{$match: {b: 1}}], cursor: {}}, 291);
			cmdOk(cdb, {aggregate: 'i3', pipeline: [{$match: {a: 1}}], cursor: {}});
			cmdOk(cdb, {find: 'nosuchcoll', filter: {b: 1}});
		} finally {
			cmdOk(admin, {setParameter: 1, notablescan: false});
		}
		eq(cmdOk(admin, {getParameter: 1, notablescan: 1}).notablescan, false);
	});
	// restrictSearchWithMatch's $expr sees the variables defined above the
	// stage (jstests/aggregation/sources/graphLookup/filter.js: an enclosing
	// $lookup's let); an unbound one is still refused (error.js)
	compat(3, '$graphLookup restrictSearchWithMatch reads variables of an enclosing $lookup or the command', () => {
		cdb.i3gl.drop();
		cdb.i3glf.drop();
		cdb.i3gl.insertOne({starting: 0});
		cdb.i3glf.insertMany([{from: 0, to: 1, inc: true}, {from: 1, to: 2, inc: false}, {from: 2, to: 3, inc: true}]);
		const gl = {$graphLookup: {from: 'i3glf', startWith: '$starting', connectFromField: 'to',
			connectToField: 'from', as: 'r', restrictSearchWithMatch: {$expr: {$eq: ['$inc', '$$foo']}}}};
		const r1 = agg(cdb, 'i3gl', [{$lookup: {from: 'i3gl', let: {foo: true}, pipeline: [gl], as: 'a'}}]);
		eq(r1[0].a[0].r.length, 1);
		const r2 = agg(cdb, 'i3gl', [gl], {let: {foo: true}});
		eq(r2[0].r.length, 1);
		const bad = JSON.parse(JSON.stringify(gl));
		bad.$graphLookup.restrictSearchWithMatch = {$expr: {$eq: ['$inc', '$$unbound']}};
		wantErr(cdb, {aggregate: 'i3gl', pipeline: [bad], cursor: {}}, 17276);
		cdb.i3gl.drop();
		cdb.i3glf.drop();
	});
}
