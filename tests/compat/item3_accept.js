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
		wantErr(cdb, {find: 'i3', filter: {}, $_requestResumeToken: true}, 2,
			"hint must be {$natural:1} if 'requestResumeToken' is enabled");
		wantErr(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: NumberLong(999)}}, 211,
			'Executor error during find command: compat22.i3 :: caused by :: Failed to resume collection scan: the recordId ' +
			'from which we are attempting to resume no longer exists in the collection: RecordId(999)');
	});
	compat(3, 'aggregate with $_requestResumeToken / $_resumeAfter (resume_query.js testAggregateCmd, empty and $redact pipelines)', () => {
		for (const pipeline of [[], [{$redact: {$cond: {if: {$eq: ['$d', 'never happens']}, then: '$$PRUNE', else: '$$KEEP'}}}]]) {
			const base = {aggregate: 'i3', pipeline, hint: {$natural: 1}, $_requestResumeToken: true};
			const all = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}}).cursor.firstBatch;
			const r = cmdOk(cdb, Object.assign({}, base, {cursor: {batchSize: 1}}));
			eq(r.cursor.firstBatch, all.slice(0, 1));
			const tok = r.cursor.postBatchResumeToken;
			ok(tok && tok.$recordId instanceof Long, cj(r.cursor));
			cmdOk(cdb, {killCursors: 'i3', cursors: [r.cursor.id]});
			const r2 = cmdOk(cdb, Object.assign({}, base, {cursor: {batchSize: 1}, $_resumeAfter: tok}));
			eq(r2.cursor.firstBatch, all.slice(1, 2));
			const m = cmdOk(cdb, {getMore: r2.cursor.id, collection: 'i3', batchSize: 1});
			eq(m.cursor.nextBatch, all.slice(2, 3));
			cmdOk(cdb, {killCursors: 'i3', cursors: [r2.cursor.id]});
			const r3 = cmdOk(cdb, Object.assign({}, base, {cursor: {batchSize: 10}, $_resumeAfter: m.cursor.postBatchResumeToken}));
			eq(r3.cursor.firstBatch, all.slice(3));
			eq(r3.cursor.id, Long(0));
			// resumed past the last document: nothing, and a null token (find_with_resume_after_param.js)
			const last = cmdOk(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, showRecordId: true}).cursor.firstBatch.pop().$recordId;
			const r4 = cmdOk(cdb, Object.assign({}, base, {cursor: {}, $_resumeAfter: {$recordId: last}}));
			eq([r4.cursor.firstBatch, r4.cursor.postBatchResumeToken], [[], {$recordId: null}]);
		}
		// aggregate_with_request_resume_token.js: BadValue without the hint, with another hint, for an int32
		// RecordId, and for $_resumeAfter without $_requestResumeToken
		wantErr(cdb, {aggregate: 'i3', pipeline: [], $_requestResumeToken: true, cursor: {}}, 2);
		wantErr(cdb, {aggregate: 'i3', pipeline: [], $_requestResumeToken: true, hint: {_id: 1}, cursor: {}}, 2);
		wantErr(cdb, {aggregate: 'i3', pipeline: [], hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: 1}, cursor: {}}, 2);
		wantErr(cdb, {aggregate: 'i3', pipeline: [], hint: {$natural: 1}, $_resumeAfter: {$recordId: NumberLong(1)}, cursor: {}}, 2);
		wantErr(cdb, {aggregate: 'i3', pipeline: [], hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: NumberLong(999)}, cursor: {}}, 211);
	});
	compat(3, 'resumable scans of a clustered collection: BinData RecordIds (find_with_resume_after_param.js), find and aggregate', () => {
		cdb.i3cl.drop();
		cdb.createCollection('i3cl', {clusteredIndex: {key: {_id: 1}, unique: true}});
		cdb.i3cl.insertMany([{_id: 3, a: 1}, {_id: 1, a: 2}, {_id: 'x'}, {_id: 2}]);
		const base = {find: 'i3cl', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true};
		const all = cmdOk(cdb, Object.assign({}, base, {showRecordId: true})).cursor.firstBatch;
		eq(all.map((d) => d._id), [1, 2, 3, 'x']);   // natural order is _id order
		ok(all.every((d) => d.$recordId instanceof Binary), cj(all));
		const r = cmdOk(cdb, Object.assign({}, base, {batchSize: 1}));
		const tok = r.cursor.postBatchResumeToken;
		eq(tok, {$recordId: all[0].$recordId});
		const r2 = cmdOk(cdb, Object.assign({}, base, {batchSize: 2, $_resumeAfter: tok}));
		eq(r2.cursor.firstBatch.map((d) => d._id), [2, 3]);
		const m = cmdOk(cdb, {getMore: r2.cursor.id, collection: 'i3cl'});
		eq([m.cursor.nextBatch.map((d) => d._id), m.cursor.postBatchResumeToken], [['x'], {$recordId: all[3].$recordId}]);
		const a = cmdOk(cdb, {aggregate: 'i3cl', pipeline: [{$project: {_id: 1}}], hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: all[1].$recordId}, cursor: {batchSize: 1}});
		eq([a.cursor.firstBatch, a.cursor.postBatchResumeToken], [[{_id: 3}], {$recordId: all[2].$recordId}]);
		// a NumberLong RecordId on a clustered collection (and BinData elsewhere): 7738600; a missing one: 211
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: NumberLong(2)}}), 7738600);
		wantErr(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: all[0].$recordId}}, 7738600);
		// $_startAt: past the key, whether it is still there or not
		eq(cmdOk(cdb, Object.assign({}, base, {$_startAt: tok})).cursor.firstBatch.map((d) => d._id), [2, 3, 'x']);
		cdb.i3cl.deleteOne({_id: 2});
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: all[1].$recordId}}), 211);
		eq(cmdOk(cdb, Object.assign({}, base, {$_startAt: {$recordId: all[1].$recordId}})).cursor.firstBatch.map((d) => d._id),
			[3, 'x']);
		eq(cmdOk(cdb, {aggregate: 'i3cl', pipeline: [], hint: {$natural: 1}, cursor: {}, $_requestResumeToken: true,
			$_startAt: {$recordId: all[1].$recordId}}).cursor.firstBatch.map((d) => d._id), [3, 'x']);
	});
	compat(3, 'resumable scans as 9.0 takes them: $_startAt, sort {$natural: 1}, mongod\'s checks and codes', () => {
		const base = {find: 'i3', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true};
		const all = cmdOk(cdb, Object.assign({}, base, {showRecordId: true})).cursor.firstBatch;
		const rids = all.map((d) => d.$recordId);
		// $_startAt: past the RecordId when it is there (mongod's CollectionScan
		// seeks it exactly, then advances: the token names the last document
		// returned), at the next one when it is gone (resume_query_from_non_existent_record.js)
		const s1 = cmdOk(cdb, Object.assign({}, base, {$_startAt: {$recordId: rids[1]}}));
		eq(s1.cursor.firstBatch.map((d) => d._id), all.slice(2).map((d) => d._id));
		// aggregate takes it too
		const sa = cmdOk(cdb, {aggregate: 'i3', pipeline: [], hint: {$natural: 1}, cursor: {}, $_requestResumeToken: true,
			$_startAt: {$recordId: rids[0]}});
		eq(sa.cursor.firstBatch.map((d) => d._id), all.slice(1).map((d) => d._id));
		wantErr(cdb, {aggregate: 'i3', pipeline: [], hint: {$natural: 1}, cursor: {}, $_startAt: {$recordId: rids[0]}}, 2,
			"'requestResumeToken' must be true if 'startAt' is specified");
		cdb.i3gone.drop();
		cdb.i3gone.insertMany([{_id: 1}, {_id: 2}, {_id: 3}]);
		const g = cmdOk(cdb, {find: 'i3gone', filter: {}, hint: {$natural: 1}, showRecordId: true}).cursor.firstBatch;
		cdb.i3gone.deleteOne({_id: 2});
		const s2 = cmdOk(cdb, {find: 'i3gone', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_startAt: {$recordId: g[1].$recordId}});
		eq(s2.cursor.firstBatch, [{_id: 3}]);
		// sort {$natural: 1} is allowed; any other sort or hint is not
		cmdOk(cdb, Object.assign({}, base, {sort: {$natural: 1}}));
		wantErr(cdb, Object.assign({}, base, {sort: {_id: 1}}), 2,
			"sort must be unset or {$natural:1} if 'requestResumeToken' is enabled");
		wantErr(cdb, Object.assign({}, base, {hint: {$natural: -1}}), 2,
			"hint must be {$natural:1} if 'requestResumeToken' is enabled");
		wantErr(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_resumeAfter: {$recordId: rids[0]}}, 2,
			"'requestResumeToken' must be true if 'resumeAfter' is specified");
		wantErr(cdb, {find: 'i3', filter: {}, hint: {$natural: 1}, $_startAt: {$recordId: rids[0]}}, 2,
			"'requestResumeToken' must be true if 'startAt' is specified");
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: rids[0]}, $_startAt: {$recordId: rids[0]}}), 2,
			"Cannot set both '$_resumeAfter' and '$_startAt'");
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: 1}}), 2,
			"Malformed resume token: the '$_resumeAfter' object must contain '$recordId', of type NumberLong, " +
			"BinData or jstNULL and optional '$initialSyncId of type BinData.");
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: rids[0], $initialSyncId: UUID()}}), 8132701);
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: BinData(0, 'AAAA')}}), 7738600);
		wantErr(cdb, Object.assign({}, base, {$_resumeAfter: {$recordId: null}}), 211,
			'Executor error during find command: compat22.i3 :: caused by :: Failed to resume collection scan: cannot resume from null recordId');
		// aggregate checks the hint as mongod (its resumption: the case above); a view's is not built (238)
		wantErr(cdb, {aggregate: 'i3', pipeline: [], cursor: {}, $_requestResumeToken: true}, 2,
			"hint must be {$natural:1} if 'requestResumeToken' is enabled");
		// over a view: mongod resolves it into an aggregate on the collection
		// under it that keeps the resume fields (PipelineResolver); the
		// RecordIds are that collection's
		cdb.i3view.drop();
		cdb.createView('i3view', 'i3', [{$project: {_id: 1}}]);
		const v = cmdOk(cdb, {aggregate: 'i3view', pipeline: [], cursor: {batchSize: 1}, hint: {$natural: 1},
			$_requestResumeToken: true});
		eq([v.cursor.firstBatch, v.cursor.postBatchResumeToken], [[{_id: all[0]._id}], {$recordId: rids[0]}]);
		const v2 = cmdOk(cdb, {aggregate: 'i3view', pipeline: [], cursor: {}, hint: {$natural: 1},
			$_requestResumeToken: true, $_resumeAfter: v.cursor.postBatchResumeToken});
		eq(v2.cursor.firstBatch, all.slice(1).map((d) => ({_id: d._id})));
		// a find over a view with a token to resume from: 168 (timeseries_resume_after.js)
		wantErr(cdb, {find: 'i3view', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: rids[0]}}, 168);
		wantErr(cdb, {find: 'i3view', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_startAt: {$recordId: rids[0]}}, 168);
		// a time-series collection's measurements: 9.0's tokens are those of the $cursor over
		// the buckets (the bucket the unpacking last pulled), so a resume goes on after that
		// bucket -- measurements of it not yet returned are skipped, as mongod's
		cdb.i3ts.drop();
		cdb.createCollection('i3ts', {timeseries: {timeField: 't', metaField: 'h'}});
		const ms = [];
		for (let i = 0; i < 9; i++) ms.push({t: new Date(1700000000000 + i * 1000), h: 'h' + (i % 3), v: i});
		cdb.i3ts.insertMany(ms);
		const tsCmd = {aggregate: 'i3ts', pipeline: [{$project: {_id: 0, v: 1}}], hint: {$natural: 1},
			$_requestResumeToken: true};
		const t1 = cmdOk(cdb, Object.assign({}, tsCmd, {cursor: {batchSize: 2}}));
		eq(t1.cursor.firstBatch, [{v: 0}, {v: 3}]);
		const g1 = cmdOk(cdb, {getMore: t1.cursor.id, collection: 'i3ts', batchSize: 2});
		eq(g1.cursor.nextBatch, [{v: 6}, {v: 1}]);
		ok(g1.cursor.postBatchResumeToken.$recordId instanceof Binary, cj(g1.cursor.postBatchResumeToken));
		ok(cj(g1.cursor.postBatchResumeToken) !== cj(t1.cursor.postBatchResumeToken), 'a new bucket, a new token');
		const r1 = cmdOk(cdb, Object.assign({}, tsCmd, {cursor: {}, $_resumeAfter: g1.cursor.postBatchResumeToken}));
		eq(r1.cursor.firstBatch, [{v: 2}, {v: 5}, {v: 8}]);
		const r2 = cmdOk(cdb, Object.assign({}, tsCmd, {cursor: {}, $_startAt: t1.cursor.postBatchResumeToken}));
		eq(r2.cursor.firstBatch, [{v: 1}, {v: 4}, {v: 7}, {v: 2}, {v: 5}, {v: 8}]);
		wantErr(cdb, Object.assign({}, tsCmd, {cursor: {}, $_resumeAfter: {$recordId: null}}), 211);
		wantErr(cdb, Object.assign({}, tsCmd, {cursor: {}, $_resumeAfter: {$recordId: NumberLong('10')}}), 7738600);
		wantErr(cdb, {find: 'i3ts', filter: {}, hint: {$natural: 1}, $_requestResumeToken: true,
			$_resumeAfter: {$recordId: BinData(5, '1234')}}, 168);
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
