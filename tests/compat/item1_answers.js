// item1_answers.js -- issue 22 item 1: answers that differ from mongod's.
// Each case states mongod 9.0's answer (its source or jstests named).
{
	const c = cdb.i1;
	c.insertMany([{_id: 1, a: 1, b: 2, c: 3}, {_id: 2, a: null}, {_id: 3}]);

	compat(1, '$group: a missing key and a null key are the same group (_id null)', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: {$in: [2, 3]}}}, {$group: {_id: '$a', n: {$sum: 1}}}]);
		eq(r, [{_id: null, n: 2}]);
	});
	compat(1, '$mod over mixed numeric types keeps the widest type', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			il: {$mod: [NumberInt(7), NumberLong(4)]}, ld: {$mod: [NumberLong(7), 2.5]},
			dd: {$mod: [NumberDecimal('7.5'), NumberInt(2)]}, neg: {$mod: [-7, 4]}}}]);
		eq(r, [{il: NumberLong(3), ld: 2, dd: NumberDecimal('1.5'), neg: -3}]);
	});
	compat(1, '$bsonSize of an object, null and missing', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			s: {$bsonSize: '$$ROOT'}, n: {$bsonSize: null}, m: {$bsonSize: '$nope'}}}]);
		eq(r, [{s: 35, n: null, m: null}]); // {_id: 1, a: 1, b: 2, c: 3}, int32s
	});
	compat(1, 'a pipeline update that matches nothing does not evaluate the pipeline', () => {
		const r = cmdOk(cdb, {update: 'i1', updates: [{q: {_id: 99}, u: [{$set: {age: {$add: ['age', 1]}}}]}]});
		eq([r.n, r.nModified], [0, 0]);
	});
	compat(1, 'a pipeline update that matches evaluates it (and fails as mongod does)', () => {
		const r = cdb.runCommand({update: 'i1', updates: [{q: {_id: 1}, u: [{$set: {age: {$add: ['age', 1]}}}]}]});
		ok(r.writeErrors && r.writeErrors[0].code > 0, cj(r));
	});
	compat(1, '$set of a top-level $-prefixed field with upsert (allowed since 5.0)', () => {
		cdb.i1dollar.drop();
		const r = cmdOk(cdb, {update: 'i1dollar', updates: [{q: {_id: 1}, u: {$set: {$myKey: 1}}, upsert: true}]});
		eq(r.n, 1);
		eq(cdb.i1dollar.find().toArray(), [{_id: 1, $myKey: 1}]);
	});
	compat(1, 'find returnKey: the index keys of each document', () => {
		cdb.i1rk.drop();
		cdb.i1rk.insertMany([{_id: 1, k: 5, x: 1}, {_id: 2, k: 6, x: 2}]);
		cdb.i1rk.createIndex({k: 1});
		const r = cmdOk(cdb, {find: 'i1rk', filter: {k: {$gte: 5}}, hint: {k: 1}, returnKey: true});
		eq(r.cursor.firstBatch, [{k: 5}, {k: 6}]);
		// a collection scan: an empty document each; the _id index: {_id}
		const r2 = cmdOk(cdb, {find: 'i1rk', filter: {x: 1}, returnKey: true, hint: {$natural: 1}});
		eq(r2.cursor.firstBatch, [{}]);
		const r3 = cmdOk(cdb, {find: 'i1rk', filter: {}, returnKey: true, sort: {_id: -1}});
		eq(r3.cursor.firstBatch, [{_id: 2}, {_id: 1}]);
	});
	compat(1, 'find showRecordId adds $recordId', () => {
		const r = cmdOk(cdb, {find: 'i1rk', filter: {_id: 1}, showRecordId: true});
		const d = r.cursor.firstBatch[0];
		ok(d.$recordId !== undefined, 'no $recordId: ' + cj(d));
		eq(Object.keys(d), ['_id', 'k', 'x', '$recordId']);
	});
	compat(1, 'find showRecordId through a blocking sort (mongod keeps the RecordId through SORT)', () => {
		cdb.i1srt.drop();
		cdb.i1srt.insertMany([{_id: 1, a: 3}, {_id: 2, a: 1}, {_id: 3, a: 2}]);
		const ids = {};
		for (const d of cmdOk(cdb, {find: 'i1srt', filter: {}, hint: {$natural: 1}, showRecordId: true}).cursor.firstBatch)
			ids[d._id] = d.$recordId;
		const r = cmdOk(cdb, {find: 'i1srt', filter: {}, sort: {a: -1}, projection: {_id: 0}, skip: 1, showRecordId: true});
		eq(r.cursor.firstBatch, [{a: 2, $recordId: ids[3]}, {a: 1, $recordId: ids[2]}]);
		// top-k (limit) and a batch boundary (getMore) keep them too
		const r2 = cmdOk(cdb, {find: 'i1srt', filter: {}, sort: {a: 1}, limit: 2, batchSize: 1, showRecordId: true});
		eq(r2.cursor.firstBatch, [{_id: 2, a: 1, $recordId: ids[2]}]);
		const m = cmdOk(cdb, {getMore: r2.cursor.id, collection: 'i1srt'});
		eq(m.cursor.nextBatch, [{_id: 3, a: 2, $recordId: ids[3]}]);
		// a sorted field no document has leaves the order to the next key
		const r3 = cmdOk(cdb, {find: 'i1srt', filter: {}, sort: {r: -1, k: -1, _id: 1}, showRecordId: true, returnKey: true,
			hint: {_id: 1}});
		eq(r3.cursor.firstBatch, [{_id: 1, $recordId: ids[1]}, {_id: 2, $recordId: ids[2]}, {_id: 3, $recordId: ids[3]}]);
	});
	compat(1, 'find returnKey of a multikey field: the key the index scan met', () => {
		cdb.i1rkm.drop();
		cdb.i1rkm.insertMany([{_id: 1, a: [5, 1, 9], b: 2}, {_id: 2, a: [3, 7], b: 1}]);
		cdb.i1rkm.createIndex({a: 1, b: -1});
		const f = (c) => cmdOk(cdb, Object.assign({find: 'i1rkm', returnKey: true}, c)).cursor.firstBatch;
		eq(f({filter: {a: {$gte: 6}}, hint: {a: 1, b: -1}}), [{a: 7, b: 1}, {a: 9, b: 2}]);
		eq(f({filter: {a: {$lte: 4}}, hint: {a: 1, b: -1}}), [{a: 1, b: 2}, {a: 3, b: 1}]);
		// through a blocking sort: the key each document came through
		eq(f({filter: {a: {$gte: 6}}, hint: {a: 1, b: -1}, sort: {b: -1}}), [{a: 9, b: 2}, {a: 7, b: 1}]);
		// exact types from the key (NumberLong stays NumberLong)
		cdb.i1rkm.insertOne({_id: 3, a: [NumberLong('20'), 30], b: 0});
		eq(f({filter: {a: {$gte: 15, $lte: 25}}, hint: {a: 1, b: -1}}), [{a: NumberLong('20'), b: 0}]);
	});
	compat(1, 'find returnKey over a hashed index: the stored NumberLong hash (mongod keeps the key as indexed)', () => {
		cdb.i1rkh.drop();
		cdb.i1rkh.insertMany([{_id: 1, h: 5}, {_id: 2, h: 'x'}]);
		cdb.i1rkh.createIndex({h: 'hashed'});
		const want = agg(cdb, 'i1rkh', [{$sort: {_id: 1}}, {$project: {_id: 0, h: {$toHashedIndexKey: '$h'}}}]);
		ok(want[0].h instanceof Long, cj(want));
		const f = (c) => cmdOk(cdb, Object.assign({find: 'i1rkh', returnKey: true}, c)).cursor.firstBatch;
		eq(f({filter: {h: 5}}), [want[0]]);
		eq(f({filter: {}, hint: {h: 'hashed'}, sort: {_id: 1}}), want);
	});
	compat(1, 'find returnKey over geo plans: a document\'s one key as stored; several keys: a covering scan\'s first entry, a near search 238', () => {
		cdb.i1rkg.drop();
		cdb.i1rkg.insertMany([{_id: 1, g: {type: 'Point', coordinates: [1, 1]}, p: [1, 1], a: 5},
			{_id: 2, g: {type: 'Point', coordinates: [1.001, 1]}, p: [1.5, 1], a: 6}]);
		cdb.i1rkg.createIndex({g: '2dsphere', a: 1});
		cdb.i1rkg.createIndex({p: '2d'});
		const f = (q, x) => cmdOk(cdb, Object.assign({find: 'i1rkg', filter: q, returnKey: true}, x || {})).cursor.firstBatch;
		// the keys the whole-index scans hold, by _id
		const whole = (h) => f({}, {hint: h, sort: {_id: 1}});
		const gk = whole('g_2dsphere_a_1'), pk = whole('p_2d');
		eq(gk.length, 2);
		ok(gk[0].g instanceof Long && gk[0].a === 5, cj(gk));
		eq(pk[0].p.sub_type, 128, cj(pk));
		const pt = {type: 'Point', coordinates: [1, 1]};
		eq(f({g: {$near: {$geometry: pt}}}), gk);
		eq(f({g: {$nearSphere: {$geometry: pt}}}, {limit: 1}), [gk[0]]);
		// (unsorted: a sort on _id could take the _id index instead)
		const set = (a) => a.map((k) => cj(k)).sort();
		eq(set(f({g: {$geoWithin: {$centerSphere: [[1, 1], 0.01]}}})), set(gk));
		eq(f({g: {$geoIntersects: {$geometry: pt}}}), [gk[0]]);
		eq(f({p: {$near: [1, 1]}}), pk);
		// a $geoWithin Tamga answers by a collection scan (mongod scans the 2d index): 238, not {}
		wantErr(cdb, {find: 'i1rkg', filter: {p: {$geoWithin: {$box: [[0, 0], [5, 5]]}}}, returnKey: true}, 238);
		eq(set(f({p: {$geoWithin: {$box: [[0, 0], [5, 5]]}}}, {hint: 'p_2d'})), set(pk));
		eq(f({p: {$geoWithin: {$box: [[0, 0], [5, 5]]}}}, {hint: {$natural: 1}}), [{}, {}]);
		// several keys: a covering scan ($geoWithin / $geoIntersects) walks the
		// query's intervals in key order and keeps the first entry of each
		// document (mongod's IXSCAN dedup); a near search's annuli Tamga does
		// not reproduce: 238, never a wrong key
		cdb.i1rkg.insertOne({_id: 3, g: {type: 'Polygon', coordinates: [[[0, 0], [3, 0], [3, 3], [0, 0]]]}, a: 7});
		const k3 = f({_id: 3, g: {$geoIntersects: {$geometry: pt}}});
		ok(k3.length === 1 && k3[0].g instanceof Long && k3[0].a === 7, cj(k3));
		wantErr(cdb, {find: 'i1rkg', filter: {_id: 3, g: {$near: {$geometry: pt}}}, returnKey: true}, 238);
		// two points far apart: each point's query meets its own cell; a
		// region holding both meets the smaller one first, the one a whole
		// index scan keeps
		cdb.i1rkg.insertOne({_id: 4, g: {type: 'MultiPoint', coordinates: [[20, 20], [60, 50]]}, a: 8});
		const at = (c) => f({_id: 4, g: {$geoIntersects: {$geometry: {type: 'Point', coordinates: c}}}});
		const ka = at([20, 20]), kb = at([60, 50]);
		ok(ka.length === 1 && kb.length === 1 && ka[0].a === 8 && kb[0].a === 8, cj([ka, kb]));
		ok(!ka[0].g.equals(kb[0].g), 'two points, two cells: ' + cj([ka, kb]));
		const first = ka[0].g.lessThan(kb[0].g) ? ka[0] : kb[0];
		const box = {type: 'Polygon', coordinates: [[[10, 10], [70, 10], [70, 60], [10, 60], [10, 10]]]};
		eq(f({_id: 4, g: {$geoWithin: {$geometry: box}}}), [first]);
		eq(f({_id: 4}, {hint: 'g_2dsphere_a_1'}), [first]);
		wantErr(cdb, {find: 'i1rkg', filter: {_id: 4, g: {$nearSphere: {$geometry: pt}}}, returnKey: true}, 238);
	});
	compat(1, 'find returnKey over $text: the key of the first term (sorted) that met the document, as TEXT_OR keeps it', () => {
		cdb.i1rkt.drop();
		cdb.i1rkt.insertMany([{_id: 1, t: 'hello world', a: 1}, {_id: 2, t: 'world peace peace', a: 2},
			{_id: 3, t: 'zebra hello', a: 1}, {_id: 4, t: 'zebra', a: 1, s: NumberInt(7)}]);
		cdb.i1rkt.createIndex({a: 1, t: 'text', s: -1});
		const f = (q, x) => cmdOk(cdb, Object.assign({find: 'i1rkt', filter: q, returnKey: true, sort: {_id: 1}}, x || {})).cursor.firstBatch;
		// one key per term: prefix, the stemmed term, its weight, suffix (null when missing, type kept)
		eq(f({a: 1, $text: {$search: 'zebra world hello'}}), [{a: 1, _fts: 'hello', _ftsx: 0.75, s: null},
			{a: 1, _fts: 'hello', _ftsx: 0.75, s: null}, {a: 1, _fts: 'zebra', _ftsx: 1.1, s: NumberInt(7)}]);
		eq(f({a: 2, $text: {$search: 'peace world'}}), [{a: 2, _fts: 'peac', _ftsx: 1.25, s: null}]);
		// through the text score order and a projection (returnKey wins over it)
		eq(f({a: 1, $text: {$search: 'zebra'}}, {sort: {sc: {$meta: 'textScore'}}, projection: {sc: {$meta: 'textScore'}, t: 1}}),
			[{a: 1, _fts: 'zebra', _ftsx: 1.1, s: NumberInt(7)}, {a: 1, _fts: 'zebra', _ftsx: 0.75, s: null}]);
	});
	compat(1, 'a hint of a 2dsphere, 2d or text index no predicate uses: the whole index scanned (buildWholeIXSoln)', () => {
		cdb.i1hw.drop();
		cdb.i1hw.insertMany([{_id: 1, loc: {type: 'Point', coordinates: [1, 2]}, p: [1, 2], t: 'hello world', a: 1},
			{_id: 2, loc: {type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 0]]]}, p: [3, 4], t: 'world peace', a: 2},
			{_id: 3, a: 3}]);
		cdb.i1hw.createIndex({loc: '2dsphere'});
		cdb.i1hw.createIndex({p: '2d'});
		cdb.i1hw.createIndex({t: 'text'});
		const ids = (q, h) => cdb.i1hw.find(q, {_id: 1}).hint(h).toArray().map((d) => d._id).sort();
		const plan = (h) => cdb.i1hw.find({a: {$gte: 1}}).hint(h).explain().queryPlanner.winningPlan;
		for (const [h, kp] of [['loc_2dsphere', {loc: '2dsphere'}], ['p_2d', {p: '2d'}], ['t_text', {_fts: 'text', _ftsx: 1}]]) {
			// the index holds only the documents with the field; each comes once (several keys each)
			eq(ids({}, h), [1, 2], h);
			eq(ids({a: {$gte: 2}}, h), [2], h);
			// a hinted count plans (mongod's useRecordStoreCount only without a hint): the documents it holds
			eq(cmdOk(cdb, {count: 'i1hw', query: {}, hint: h}).n, 2, h);
			eq(cmdOk(cdb, {distinct: 'i1hw', key: 'a', query: {}, hint: h}).values, [1, 2], h);
			const w = plan(h);
			eq(w.stage, 'FETCH', h);
			eq(w.filter, {a: {$gte: 1}}, h);
			eq(w.inputStage.stage, 'IXSCAN', h);
			eq(w.inputStage.keyPattern, kp, h);
			for (const f of Object.keys(kp))
				eq(w.inputStage.indexBounds[f], ['[MinKey, MaxKey]'], h + ' ' + f);
			// never covered: the keys are cells, geohashes or terms
			const one = cdb.i1hw.find({_id: 1}, {_id: 0, loc: 1, p: 1, t: 1}).hint(h).toArray();
			eq(one, [{loc: {type: 'Point', coordinates: [1, 2]}, p: [1, 2], t: 'hello world'}], h);
		}
		// returnKey through them: the stored key (NumberLong cell, GeoHash BinData, term and weight)
		const rk = (h) => cmdOk(cdb, {find: 'i1hw', filter: {_id: 1}, hint: h, returnKey: true}).cursor.firstBatch;
		ok(rk('loc_2dsphere')[0].loc instanceof Long, cj(rk('loc_2dsphere')));
		eq(rk('p_2d')[0].p.sub_type, 128, cj(rk('p_2d')));
		eq(rk('t_text'), [{_fts: 'hello', _ftsx: 0.75}]);
		// the same for a sparse index; without a hint the record count
		cdb.i1hw.createIndex({a: 1, z: 1}, {sparse: true, name: 'az_sparse'});
		cdb.i1hw.insertOne({_id: 4, b: 1});
		eq(cmdOk(cdb, {count: 'i1hw', query: {}, hint: 'az_sparse'}).n, 3);
		eq(cmdOk(cdb, {count: 'i1hw', query: {}, hint: {$natural: 1}}).n, 4);
		eq(cmdOk(cdb, {count: 'i1hw', query: {}}).n, 4);
	});
	compat(1, 'an empty array in an index: mongod\'s bounds (undefined and [] for {a: []}), answers equal to a scan', () => {
		cdb.i1ea.drop();
		cdb.i1ea.insertMany([{_id: 1, a: []}, {_id: 2, a: null}, {_id: 3}, {_id: 4, a: [null]}, {_id: 5, a: [[]]},
			{_id: 6, a: 1}, {_id: 7, a: [1, []]}, {_id: 8, a: [2, 1]}]);
		cdb.i1ea.createIndex({a: 1});
		const ids = (q, h) => cdb.i1ea.find(q, {_id: 1}).hint(h).toArray().map((d) => d._id).sort();
		for (const q of [{a: []}, {a: null}, {a: {$exists: false}}, {a: {$in: [[]]}}, {a: {$in: [null]}},
			{a: {$in: [null, []]}}, {a: [[]]}, {a: [2, 1]}, {a: {$in: [[], 1]}}, {a: {$ne: []}}, {a: {$nin: [[], null]}},
			{a: {$lte: null}}, {a: {$gt: null}}, {a: {$exists: true}}])
			eq(ids(q, {a: 1}), ids(q, {$natural: 1}), cj(q));
		const b = (q) => cdb.i1ea.find(q).hint({a: 1}).explain().queryPlanner.winningPlan.inputStage.indexBounds.a;
		// index_bounds_builder.cpp translateEquality: [A, A] and A's first element, undefined for []
		eq(b({a: []}), ['[undefined, undefined]', '[[], []]']);
		eq(b({a: [2, 1]}), ['[2, 2]', '[[ 2, 1 ], [ 2, 1 ]]']);
		eq(b({a: null}), ['[undefined, undefined]', '[null, null]']);
		eq(b({a: {$in: [[], 1]}}), ['[undefined, undefined]', '[1, 1]', '[[], []]']);
		// an empty array sorts before null (its sort key is the undefined its index key is)
		eq(cdb.i1ea.find({_id: {$in: [1, 2, 3]}}).sort({a: 1, _id: 1}).hint({a: 1}).toArray().map((d) => d._id), [1, 2, 3]);
		eq(cdb.i1ea.find({_id: {$in: [1, 2, 3]}}).sort({a: 1, _id: 1}).hint({$natural: 1}).toArray().map((d) => d._id), [1, 2, 3]);
	});
	compat(1, 'listDatabases names admin and local as mongod does', () => {
		const names = cmdOk(db.getSiblingDB('admin'), {listDatabases: 1}).databases.map((d) => d.name);
		ok(names.includes('admin') && names.includes('local'), cj(names));
	});
	compat(1, 'command aliases mongod registers (dbstats, collstats, buildinfo, ismaster, findandmodify, datasize)', () => {
		cmdOk(cdb, {dbstats: 1});
		cmdOk(cdb, {collstats: 'i1'});
		cmdOk(cdb, {buildinfo: 1});
		cmdOk(cdb, {ismaster: 1});
		cmdOk(cdb, {findandmodify: 'i1', query: {_id: 1}, update: {$set: {z: 1}}});
		cmdOk(cdb, {datasize: 'compat22.i1'});
		cmdOk(cdb, {deleteIndexes: 'i1', index: '*'});
		// registered (the answer may be an error, never CommandNotFound)
		for (const cmd of [{dbhash: 1}, {collstats: 'i1'}]) {
			const r = cdb.runCommand(cmd);
			ok(r.ok || r.code !== 59, cj(cmd) + ': ' + cj(r));
		}
	});
	compat(1, 'an empty Timestamp in a top-level field is filled with the current time', () => {
		cdb.i1ts.drop();
		cdb.i1ts.insertOne({_id: 1, t: Timestamp(0, 0), sub: {t: Timestamp(0, 0)}});
		const d = cdb.i1ts.findOne();
		ok(d.t.getHighBits() > 0, 'top-level not filled: ' + cj(d));
		eq(d.sub.t, Timestamp(0, 0), 'nested is kept');
	});
	compat(1, 'serverStatus().metrics.commands counts per command', () => {
		cdb.runCommand({ping: 1});
		const m = cmdOk(db.getSiblingDB('admin'), {serverStatus: 1}).metrics;
		ok(m && m.commands && m.commands.ping, 'no metrics.commands.ping');
		ok(m.commands.ping.total >= 1 && m.commands.ping.failed !== undefined, cj(m.commands.ping));
	});
	compat(1, 'collStats has a wiredTiger section', () => {
		const s = cmdOk(cdb, {collStats: 'i1'});
		ok(s.wiredTiger && typeof s.wiredTiger === 'object', 'no wiredTiger');
		ok(s.wiredTiger.uri && s.wiredTiger.uri.startsWith('statistics:table:'), cj(s.wiredTiger.uri));
	});
	// mongod's Document keeps a removed field's slot (Document::remove sets a
	// missing value in place), so a field an exclusion removes and a later
	// $addFields sets again comes back where it was; excluding an absent
	// field leaves no slot (SERVER-37791,
	// jstests/aggregation/bugs/exclusion_projection_does_not_affect_field_order.js)
	compat(1, 'a field excluded by $project and set by $addFields keeps its input position', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {b: 0, z: 0}}, {$addFields: {b: 5}}]);
		eq(Object.keys(r[0]), ['_id', 'a', 'b', 'c']);
		cdb.i1slots.drop();
		cdb.i1slots.insertMany([{_id: 1}, {_id: 2, c: 1}, {_id: 3, y: 1, z: 1}]);
		eq(agg(cdb, 'i1slots', [{$project: {b: 0, c: 0}}, {$addFields: {x: 3, y: 4, b: 5, c: 6, a: 7}},
			{$sort: {_id: 1}}]), [{_id: 1, x: 3, y: 4, b: 5, c: 6, a: 7}, {_id: 2, c: 6, x: 3, y: 4, b: 5, a: 7},
			{_id: 3, y: 4, z: 1, x: 3, b: 5, c: 6, a: 7}]);
		cdb.i1slots.drop();
	});
	// an in-memory $sort hands the Documents on, each with its own slots
	// (the sorter keeps them); a spilled one serialised them to BSON
	// (Document::serializeForSorter skips missing values): no slot
	compat(1, 'a removed field\'s slot lasts through $sort and top-k $sort + $limit, per document', () => {
		cdb.i1slots.drop();
		cdb.i1slots.insertMany([{_id: 1, b: 1, a: 2, c: 1}, {_id: 2, a: 1, b: 2}, {_id: 3, c: 0, a: 3, b: 3},
			{_id: 4, a: 0}]);
		const p = [{$project: {b: 0}}, {$sort: {a: 1}}, {$addFields: {b: 5}}];
		eq(agg(cdb, 'i1slots', p), [{_id: 4, a: 0, b: 5}, {_id: 2, a: 1, b: 5}, {_id: 1, b: 5, a: 2, c: 1},
			{_id: 3, c: 0, a: 3, b: 5}]);
		eq(agg(cdb, 'i1slots', [{$unset: 'b'}, {$match: {a: {$gt: 1}}}, {$sort: {a: -1}}, {$limit: 1},
			{$set: {n: 1, b: 5}}]), [{_id: 3, c: 0, a: 3, b: 5, n: 1}]);
		eq(agg(cdb, 'i1slots', [{$unset: 'b'}, {$sort: {c: 1, a: 1}}, {$limit: 3}, {$sort: {_id: 1}}, {$set: {b: 5}}]),
			[{_id: 2, a: 1, b: 5}, {_id: 3, c: 0, a: 3, b: 5}, {_id: 4, a: 0, b: 5}]);
		// two exclusions carried by one sort, one of them nested
		cdb.i1slots2.drop();
		cdb.i1slots2.insertMany([{_id: 1, s: {x: 1, y: 2}, k: 1, m: 2}, {_id: 2, k: 0, s: [{x: 2, y: 1}, {y: 3}], m: 1}]);
		eq(agg(cdb, 'i1slots2', [{$project: {'s.x': 0}}, {$unset: 'k'}, {$sort: {m: 1}}, {$set: {'s.x': 9, k: 8}}]),
			[{_id: 2, k: 8, s: [{x: 9, y: 1}, {y: 3, x: 9}], m: 1}, {_id: 1, s: {x: 9, y: 2}, k: 8, m: 2}]);
		cdb.i1slots2.drop();
		const old = cmdOk(cdb.getSiblingDB('admin'), {getParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 1})
			.internalQueryMaxBlockingSortMemoryUsageBytes;
		cmdOk(cdb.getSiblingDB('admin'), {setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 1});
		try {
			const r = cmdOk(cdb, {aggregate: 'i1slots', pipeline: p, allowDiskUse: true, cursor: {}}).cursor.firstBatch;
			eq(r, [{_id: 4, a: 0, b: 5}, {_id: 2, a: 1, b: 5}, {_id: 1, a: 2, c: 1, b: 5}, {_id: 3, c: 0, a: 3, b: 5}]);
		} finally {
			cmdOk(cdb.getSiblingDB('admin'), {setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: old});
		}
		cdb.i1slots.drop();
	});
	// the other stages that hand mongod's Document on with its slots: a
	// $facet's TeeBuffer, $replaceRoot/$replaceWith (newRoot's Document),
	// $unwind (the element's Value); and those that fill a slot by setting
	// a field on their input ($lookup's as, $unwind's includeArrayIndex)
	compat(1, 'a removed field\'s slot lasts into $facet, $replaceRoot, $unwind elements, and $lookup/$unwind fill it, per document', () => {
		cdb.i1slots3.drop();
		cdb.i1slots3.insertMany([{_id: 1, a: 1, s: {x: 1, y: 2}, k: 2, r: [{p: 1, q: 2}, {q: 3}]},
			{_id: 2, k: 1, s: {y: 1}, a: 2, r: [{q: 1, p: 2}]}]);
		const agg3 = (p) => agg(cdb, 'i1slots3', p);
		eq(agg3([{$unset: ['a', 's.x']}, {$facet: {o: [{$sort: {k: 1}}, {$set: {a: 9, 's.x': 8}}]}}, {$unwind: '$o'},
			{$replaceWith: '$o'}, {$project: {r: 0}}]),
			[{_id: 2, k: 1, s: {y: 1, x: 8}, a: 9}, {_id: 1, a: 9, s: {x: 8, y: 2}, k: 2}]);
		eq(agg3([{$project: {'s.x': 0}}, {$sort: {k: 1}}, {$replaceWith: '$s'}, {$set: {x: 0}}]),
			[{y: 1, x: 0}, {x: 0, y: 2}]);
		eq(agg3([{$project: {'r.p': 0}}, {$unwind: '$r'}, {$set: {'r.p': 0}}, {$project: {_id: 1, r: 1}}]),
			[{_id: 1, r: {p: 0, q: 2}}, {_id: 1, r: {q: 3, p: 0}}, {_id: 2, r: {q: 1, p: 0}}]);
		eq(agg3([{$unset: 'a'}, {$lookup: {from: 'i1slots3', pipeline: [{$count: 'n'}], as: 'a'}},
			{$project: {r: 0, s: 0}}]), [{_id: 1, a: [{n: 2}], k: 2}, {_id: 2, k: 1, a: [{n: 2}]}]);
		eq(agg3([{$unset: 'a'}, {$unwind: {path: '$r', includeArrayIndex: 'a'}}, {$project: {r: 0, s: 0}}]),
			[{_id: 1, a: NumberLong(0), k: 2}, {_id: 1, a: NumberLong(1), k: 2}, {_id: 2, k: 1, a: NumberLong(0)}]);
		cdb.i1slots3.drop();
	});
	// a computed field left missing ($$REMOVE) is a missing Value kept in
	// the Document's storage (setField of a missing value, DocumentStorage::
	// getField appends it for a field the document lacked): the same hole
	// through the in-memory sorter (lost by a spilled one: serializeForSorter
	// walks FieldIterator, which skips missing values), into a $facet branch
	// and inside the document $replaceWith promotes
	compat(1, 'a $$REMOVE hole\'s slot lasts through $sort, $facet and $replaceWith, per document', () => {
		cdb.i1holes.drop();
		cdb.i1holes.insertMany([{_id: 1, b: 1, a: 2, c: 1}, {_id: 2, a: 1, b: 2}, {_id: 3, c: 0, a: 3, b: 3},
			{_id: 4, a: 0}]);
		const p = [{$set: {b: '$$REMOVE'}}, {$sort: {a: 1}}, {$addFields: {b: 5}}];
		eq(agg(cdb, 'i1holes', p), [{_id: 4, a: 0, b: 5}, {_id: 2, a: 1, b: 5}, {_id: 1, b: 5, a: 2, c: 1},
			{_id: 3, c: 0, a: 3, b: 5}]);
		eq(agg(cdb, 'i1holes', [{$set: {b: '$$REMOVE'}}, {$set: {n: 1}}, {$sort: {a: -1}}, {$limit: 2}, {$set: {b: 5}}]),
			[{_id: 3, c: 0, a: 3, b: 5, n: 1}, {_id: 1, b: 5, a: 2, c: 1, n: 1}]);
		const old = cmdOk(cdb.getSiblingDB('admin'), {getParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 1})
			.internalQueryMaxBlockingSortMemoryUsageBytes;
		cmdOk(cdb.getSiblingDB('admin'), {setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: 1});
		try {
			const r = cmdOk(cdb, {aggregate: 'i1holes', pipeline: p, allowDiskUse: true, cursor: {}}).cursor.firstBatch;
			eq(r, [{_id: 4, a: 0, b: 5}, {_id: 2, a: 1, b: 5}, {_id: 1, a: 2, c: 1, b: 5}, {_id: 3, c: 0, a: 3, b: 5}]);
		} finally {
			cmdOk(cdb.getSiblingDB('admin'), {setParameter: 1, internalQueryMaxBlockingSortMemoryUsageBytes: old});
		}
		cdb.i1holes.drop();
		cdb.i1holes.insertMany([{_id: 1, a: 1, s: {x: 1, y: 2}, k: 2}, {_id: 2, k: 1, s: {y: 1}, a: 2}]);
		eq(agg(cdb, 'i1holes', [{$set: {a: '$$REMOVE', 's.x': '$$REMOVE'}},
			{$facet: {n: [{$count: 'n'}], o: [{$sort: {k: 1}}, {$set: {a: 9, 's.x': 8}}]}}, {$unwind: '$o'},
			{$replaceWith: '$o'}]), [{_id: 2, k: 1, s: {y: 1, x: 8}, a: 9}, {_id: 1, a: 9, s: {x: 8, y: 2}, k: 2}]);
		eq(agg(cdb, 'i1holes', [{$set: {'s.x': '$$REMOVE'}}, {$sort: {k: 1}}, {$replaceWith: '$s'}, {$set: {x: 0}}]),
			[{y: 1, x: 0}, {x: 0, y: 2}]);
		cdb.i1holes.drop();
	});
	// a classic $group's $first / $last of $$ROOT holds the input Document
	// itself (the accumulator keeps the Value), slots included; 9.0 runs
	// the $group classic when a stage its default trySbeRestricted does not
	// push into SBE comes first ($set here), and in SBE (BSON, no slot)
	// after a leading $match / projection only (sbe_pushdown.cpp)
	compat(1, 'a slot lasts inside the document a classic $group\'s $first / $last of $$ROOT keeps', () => {
		cdb.i1gslots.drop();
		cdb.i1gslots.insertMany([{_id: 1, k: 1, b: 1, a: 2}, {_id: 2, k: 1, a: 3, b: 2}, {_id: 3, k: 2, b: 3, a: 1}]);
		const g = (pre, acc) => agg(cdb, 'i1gslots', pre.concat([{$group: {_id: '$k', d: {[acc]: '$$ROOT'}}},
			{$sort: {_id: 1}}, {$replaceWith: '$d'}, {$set: {b: 5}}]));
		eq(g([{$set: {n: 1}}, {$unset: 'b'}], '$first'),
			[{_id: 1, k: 1, b: 5, a: 2, n: 1}, {_id: 3, k: 2, b: 5, a: 1, n: 1}]);
		eq(g([{$set: {n: 1}}, {$project: {b: 0}}], '$last'),
			[{_id: 2, k: 1, a: 3, b: 5, n: 1}, {_id: 3, k: 2, b: 5, a: 1, n: 1}]);
		eq(g([{$set: {b: '$$REMOVE'}}], '$first'), [{_id: 1, k: 1, b: 5, a: 2}, {_id: 3, k: 2, b: 5, a: 1}]);
		// SBE's $group after a leading exclusion: BSON, the field appended
		eq(g([{$match: {a: {$gt: 0}}}, {$unset: 'b'}], '$first'),
			[{_id: 1, k: 1, a: 2, b: 5}, {_id: 3, k: 2, a: 1, b: 5}]);
		cdb.i1gslots.drop();
	});
	// $top / $bottom of $$ROOT: AccumulatorTopBottomN keeps the output Value
	// of its {output, sortFields} object, the Document it took with its slots
	compat(1, 'a slot lasts inside the document a classic $group\'s $top / $bottom of $$ROOT keeps', () => {
		cdb.i1tslots.drop();
		cdb.i1tslots.insertMany([{_id: 1, k: 1, b: 1, a: 2}, {_id: 2, k: 1, a: 3}, {_id: 3, k: 2, b: 3, a: 1},
			{_id: 4, k: 2, a: 0, b: 4}]);
		const g = (acc, sortBy) => agg(cdb, 'i1tslots', [{$set: {n: 1}}, {$unset: 'b'},
			{$group: {_id: '$k', d: {[acc]: {output: '$$ROOT', sortBy}}}},
			{$sort: {_id: 1}}, {$replaceWith: '$d'}, {$set: {b: 5}}]);
		eq(g('$top', {a: 1}), [{_id: 1, k: 1, b: 5, a: 2, n: 1}, {_id: 4, k: 2, a: 0, b: 5, n: 1}]);
		eq(g('$bottom', {a: 1}), [{_id: 2, k: 1, a: 3, n: 1, b: 5}, {_id: 3, k: 2, b: 5, a: 1, n: 1}]);
		cdb.i1tslots.drop();
	});
	// a deeper promotion of the kept Document ('$d.s') takes the Document
	// the exclusion left inside it, with its own slots
	compat(1, 'a slot lasts inside a sub-document of the $$ROOT a classic $group keeps ($replaceRoot of $d.s)', () => {
		cdb.i1dslots.drop();
		cdb.i1dslots.insertMany([{_id: 1, k: 1, s: {x: 1, y: 2}}, {_id: 2, k: 2, s: {y: 3, x: 4}}]);
		eq(agg(cdb, 'i1dslots', [{$set: {n: 1}}, {$unset: 's.x'}, {$group: {_id: '$k', d: {$first: '$$ROOT'}}},
			{$sort: {_id: 1}}, {$replaceRoot: {newRoot: '$d.s'}}, {$set: {x: 5}}]), [{x: 5, y: 2}, {y: 3, x: 5}]);
		cdb.i1dslots.drop();
	});
	// $push / $addToSet / $firstN / $lastN / $topN / $bottomN of $$ROOT:
	// AccumulatorPush and AccumulatorN keep each input Value, so the array a
	// classic $group outputs holds each Document with its own slots; an
	// $unwind sets the element's Value, a promotion takes it whole
	compat(1, 'each Document a classic $group\'s $push / $addToSet / $firstN / $lastN / $topN / $bottomN of $$ROOT keeps has its own slots', () => {
		cdb.i1pslots.drop();
		cdb.i1pslots.insertMany([{_id: 1, k: 1, b: 1, a: 2}, {_id: 2, k: 1, a: 3, b: 2}, {_id: 3, k: 1, a: 1},
			{_id: 4, k: 2, a: 0, b: 4}]);
		const g = (acc, arg) => agg(cdb, 'i1pslots', [{$set: {n: 1}}, {$unset: 'b'},
			{$group: {_id: '$k', d: {[acc]: arg}}}, {$sort: {_id: 1}}, {$unwind: '$d'}, {$replaceWith: '$d'},
			{$set: {b: 5}}]);
		const d1 = {_id: 1, k: 1, b: 5, a: 2, n: 1}, d2 = {_id: 2, k: 1, a: 3, b: 5, n: 1},
			d3 = {_id: 3, k: 1, a: 1, n: 1, b: 5}, d4 = {_id: 4, k: 2, a: 0, b: 5, n: 1};
		eq(g('$push', '$$ROOT'), [d1, d2, d3, d4]);
		eq(g('$firstN', {n: 2, input: '$$ROOT'}), [d1, d2, d4]);
		eq(g('$lastN', {n: 2, input: '$$ROOT'}), [d2, d3, d4]);
		eq(g('$topN', {n: 2, output: '$$ROOT', sortBy: {a: 1}}), [d3, d1, d4]);
		eq(g('$bottomN', {n: 2, output: '$$ROOT', sortBy: {a: 1}}), [d1, d2, d4]);
		// $addToSet's order is its set's (unspecified): compare by _id
		eq(g('$addToSet', '$$ROOT').sort((x, y) => x._id - y._id), [d1, d2, d3, d4]);
		// SBE's $group after a leading exclusion: BSON, the field appended
		eq(agg(cdb, 'i1pslots', [{$match: {k: 1}}, {$unset: 'b'}, {$group: {_id: '$k', d: {$push: '$$ROOT'}}},
			{$unwind: '$d'}, {$replaceWith: '$d'}, {$set: {b: 5}}]),
			[{_id: 1, k: 1, a: 2, b: 5}, {_id: 2, k: 1, a: 3, b: 5}, {_id: 3, k: 1, a: 1, b: 5}]);
		cdb.i1pslots.drop();
	});
	// a $set of d.F right after the $group (or after an $unwind of d) sets
	// F inside the kept Document(s): ProjectionNode applies it to each
	// element's Document, MutableDocument::setField finds the slot
	compat(1, 'a $set of d.F right after a classic $group fills the slot of the kept Document(s)', () => {
		cdb.i1fslots.drop();
		cdb.i1fslots.insertMany([{_id: 1, k: 1, b: 1, a: 2}, {_id: 2, k: 1, a: 3}]);
		const pre = [{$set: {n: 1}}, {$unset: 'b'}];
		const d1 = {_id: 1, k: 1, b: 5, a: 2, n: 1}, d2 = {_id: 2, k: 1, a: 3, n: 1, b: 5};
		eq(agg(cdb, 'i1fslots', pre.concat([{$group: {_id: '$k', d: {$push: '$$ROOT'}}}, {$set: {'d.b': 5}}])),
			[{_id: 1, d: [d1, d2]}]);
		eq(agg(cdb, 'i1fslots', pre.concat([{$group: {_id: '$k', d: {$first: '$$ROOT'}}}, {$set: {'d.b': 5}}])),
			[{_id: 1, d: d1}]);
		eq(agg(cdb, 'i1fslots', pre.concat([{$group: {_id: '$k', d: {$last: '$$ROOT'}}}, {$set: {'d.b': 5}}])),
			[{_id: 1, d: d2}]);
		eq(agg(cdb, 'i1fslots', pre.concat([{$group: {_id: '$k', d: {$push: '$$ROOT'}}}, {$unwind: '$d'},
			{$set: {'d.b': 5}}, {$project: {_id: 0}}])), [{d: d1}, {d: d2}]);
		cdb.i1fslots.drop();
	});
	// The field order of every reshaping stage and update form, as mongod
	// builds it: inclusion $project keeps the input's order and appends
	// computed fields in spec order (InclusionNode); $addFields/$set and
	// $lookup/$unwind/$setWindowFields/$fill outputs replace a field in place
	// and append new ones (MutableDocument::setField); $group/$bucket put _id
	// first, then the accumulators in spec order; update operators replace in
	// place and append new fields in field-name order (UpdateObjectNode's
	// children are a sorted map), a pipeline update follows aggregation; an
	// upsert starts from the query's equalities.
	const FO_DOC = {_id: 1, a: 1, b: {x: 1, y: 2}, c: [1, 2], d: 'd'};
	// the keys of a document, nested documents as [name, keys]
	const shape = (d) => Object.keys(d).map(k => (d[k] !== null && typeof d[k] === 'object' &&
		!Array.isArray(d[k]) && d[k]._bsontype === undefined && !(d[k] instanceof Date)) ? [k, shape(d[k])] : k);
	const foAgg = (rows) => {
		cdb.i1fo.drop();
		cdb.i1fo.insertOne(FO_DOC);
		const bad = [];
		for (const [name, pipeline, want] of rows) {
			const got = shape(agg(cdb, 'i1fo', pipeline)[0]);
			if (cj(got) !== cj(want)) bad.push(`${name}: got ${cj(got)}, want ${cj(want)}`);
		}
		cdb.i1fo.drop();
		if (bad.length) throw new Error(bad.join('; '));
	};
	const foUpdate = (rows) => {
		const bad = [];
		for (const [name, u, want, query] of rows) {
			cdb.i1fo.drop();
			if (query === undefined) cdb.i1fo.insertOne(FO_DOC);
			cmdOk(cdb, {update: 'i1fo', updates: [{q: query || {_id: 1}, u, upsert: query !== undefined}]});
			const got = shape(cdb.i1fo.findOne());
			if (cj(got) !== cj(want)) bad.push(`${name}: got ${cj(got)}, want ${cj(want)}`);
		}
		cdb.i1fo.drop();
		if (bad.length) throw new Error(bad.join('; '));
	};
	const B = ['b', ['x', 'y']];
	compat(1, 'field order: aggregation stages', () => foAgg([
		['inclusion keeps the input order', [{$project: {d: 1, a: 1}}], ['_id', 'a', 'd']],
		['inclusion: computed fields after, in spec order', [{$project: {z: '$a', d: 1, a: '$d'}}], ['_id', 'd', 'z', 'a']],
		['inclusion: _id where the input has it', [{$project: {a: 1, _id: 1}}], ['_id', 'a']],
		['inclusion of nested paths', [{$project: {'b.y': 1, 'b.z': '$a', 'b.x': 1}}], ['_id', ['b', ['x', 'y', 'z']]]],
		['exclusion', [{$project: {b: 0}}], ['_id', 'a', 'c', 'd']],
		['$addFields: in place, then appended', [{$addFields: {z: 1, a: 5, e: 2}}], ['_id', 'a', B, 'c', 'd', 'z', 'e']],
		['$set of nested paths', [{$set: {'b.z': 1, 'b.x': 9}}], ['_id', 'a', ['b', ['x', 'y', 'z']], 'c', 'd']],
		['$unset then $set (a slot)', [{$unset: ['a', 'd']}, {$set: {d: 1, a: 2}}], ['_id', 'a', B, 'c', 'd']],
		['$unset, $match, $set (a slot)', [{$unset: 'a'}, {$match: {_id: 1}}, {$set: {n: 1, a: 2}}], ['_id', 'a', B, 'c', 'd', 'n']],
		['nested exclusion then $set (a slot)', [{$project: {'b.x': 0}}, {$set: {'b.x': 3}}], ['_id', 'a', B, 'c', 'd']],
		['$unset, $set, $set (the slot lasts)', [{$unset: 'a'}, {$set: {z: 1}}, {$set: {a: 3}}], ['_id', 'a', B, 'c', 'd', 'z']],
		['two exclusions then $set (both slots)', [{$unset: 'a'}, {$unset: 'b'}, {$set: {b: 1, a: 2}}], ['_id', 'a', 'b', 'c', 'd']],
		['$unset of two fields, then a $set of each (each in its slot)', [{$unset: ['a', 'c']}, {$set: {a: 1}}, {$set: {c: 2}}],
			['_id', 'a', B, 'c', 'd']],
		['exclusion inside array elements then $set', [{$set: {c: [{x: 1, y: 2}]}}, {$project: {'c.x': 0}},
			{$set: {'c.x': 7}}, {$project: {c: {$arrayElemAt: ['$c', 0]}}}], ['_id', ['c', ['x', 'y']]]],
		['$$REMOVE of an absent field leaves a slot (setField of a missing value appends one, DocumentStorage::getField)',
			[{$addFields: {z: '$$REMOVE'}}, {$addFields: {n: 1}}, {$addFields: {z: 2}}], ['_id', 'a', B, 'c', 'd', 'z', 'n']],
		['$$REMOVE of a present field, then $set (a slot)', [{$set: {a: '$$REMOVE'}}, {$set: {n: 1, a: 2}}], ['_id', 'a', B, 'c', 'd', 'n']],
		['a missing field path, $match, then $set (a slot)', [{$set: {z: '$nope', y: 1}}, {$match: {y: 1}}, {$set: {z: 1}}],
			['_id', 'a', B, 'c', 'd', 'z', 'y']],
		['exclusion, $unwind, $set (the slot lasts: DocumentSourceUnwind sets the field in a copy of the Document)',
			[{$set: {u: [1, 2]}}, {$project: {a: 0}}, {$unwind: '$u'}, {$set: {a: 3}}], ['_id', 'a', B, 'c', 'd', 'u']],
		['exclusion, $sort, $set (the slot lasts: the in-memory sorter keeps the Documents)',
			[{$set: {n: 1}}, {$project: {a: 0}}, {$sort: {d: 1}}, {$set: {a: 3}}], ['_id', 'a', B, 'c', 'd', 'n']],
		['$unset, top-k $sort + $limit, $set (a slot)', [{$unset: 'a'}, {$sort: {d: -1}}, {$limit: 1}, {$set: {n: 1, a: 2}}],
			['_id', 'a', B, 'c', 'd', 'n']],
		['nested exclusion, $sort, $sort, $set (a slot inside b)', [{$project: {'b.x': 0}}, {$sort: {a: 1}}, {$sort: {d: 1}},
			{$set: {'b.x': 3}}], ['_id', 'a', B, 'c', 'd']],
		['nested exclusion, $replaceRoot, $set (a slot inside the promoted document: ReplaceRootTransformation keeps newRoot\'s Document)',
			[{$project: {'b.x': 0}}, {$replaceRoot: {newRoot: '$b'}}, {$set: {x: 3}}], ['x', 'y']],
		['$unset, $replaceWith $$ROOT, $set (a slot)', [{$unset: 'a'}, {$replaceWith: '$$ROOT'}, {$set: {n: 1, a: 2}}],
			['_id', 'a', B, 'c', 'd', 'n']],
		['nested exclusion, $sort, $replaceWith, $set (a slot)', [{$project: {'b.x': 0}}, {$sort: {a: 1}}, {$replaceWith: '$b'},
			{$set: {x: 3}}], ['x', 'y']],
		['two levels of $replaceRoot (a slot two levels down)', [{$set: {'b.z': {p: 1, q: 2}}}, {$project: {'b.z.p': 0}},
			{$replaceRoot: {newRoot: '$b'}}, {$replaceWith: '$z'}, {$set: {p: 3}}], ['p', 'q']],
		['$unset, $facet with a $set (a slot: the TeeBuffer hands each branch the same Documents)',
			[{$unset: 'a'}, {$facet: {o: [{$set: {a: 2}}]}}, {$unwind: '$o'}, {$replaceWith: '$o'}], ['_id', 'a', B, 'c', 'd']],
		['nested exclusion, $facet with $sort then $set, another branch (a slot inside b)',
			[{$project: {'b.x': 0}}, {$facet: {p: [{$count: 'n'}], o: [{$sort: {d: 1}}, {$set: {'b.x': 3}}]}},
				{$unwind: '$o'}, {$replaceWith: '$o'}], ['_id', 'a', B, 'c', 'd']],
		['nested exclusion, $facet with $replaceWith then $set (a slot)',
			[{$project: {'b.x': 0}}, {$facet: {o: [{$replaceWith: '$b'}, {$set: {x: 3}}]}}, {$unwind: '$o'},
				{$replaceWith: '$o'}], ['x', 'y']],
		['exclusion, then $lookup as the removed field (its slot: setNestedField on the input Document)',
			[{$project: {a: 0}}, {$lookup: {from: 'i1fo', pipeline: [{$limit: 1}, {$project: {_id: 1}}], as: 'a'}}],
			['_id', 'a', B, 'c', 'd']],
		['$unset, then $unwind includeArrayIndex into the removed field (its slot)',
			[{$unset: 'a'}, {$unwind: {path: '$c', includeArrayIndex: 'a'}}], ['_id', 'a', B, 'c', 'd']],
		['$$REMOVE, then $unwind includeArrayIndex into that field (its slot)',
			[{$set: {a: '$$REMOVE'}}, {$unwind: {path: '$c', includeArrayIndex: 'a'}}], ['_id', 'a', B, 'c', 'd']],
		['exclusion inside array elements, $unwind, $set (a slot inside the element: $unwind sets the element\'s Document)',
			[{$set: {c: [{x: 1, y: 2}, {x: 3, y: 4}]}}, {$project: {'c.x': 0}}, {$unwind: '$c'}, {$match: {'c.y': 4}},
				{$set: {'c.x': 7}}], ['_id', 'a', B, ['c', ['x', 'y']], 'd']],
		['exclusion inside array elements, $unwind, $sort, $replaceWith, $set (a slot: the sort keeps each element)',
			[{$set: {c: [{x: 1, y: 2}, {y: 4, x: 3}]}}, {$project: {'c.x': 0}}, {$unwind: '$c'}, {$sort: {'c.y': 1}},
				{$replaceWith: '$c'}, {$set: {x: 7}}], ['x', 'y']],
		['exclusion inside array elements, $unwind, $replaceWith, $set (a slot)',
			[{$set: {c: [{x: 1, y: 2}, {x: 3, y: 4}]}}, {$project: {'c.x': 0}}, {$unwind: '$c'}, {$match: {'c.y': 4}},
				{$replaceWith: '$c'}, {$set: {x: 7}}], ['x', 'y']],
		['exclusion, $lookup, $set (the slot lasts: $lookup sets as on a MutableDocument of its input)',
			[{$project: {a: 0}}, {$lookup: {from: 'i1fo', pipeline: [{$limit: 1}], as: 'j'}}, {$set: {a: 3}}, {$unset: 'j'}],
			['_id', 'a', B, 'c', 'd']],
		['$$REMOVE, $unwind, then $set (a slot)', [{$set: {u: [1], z: '$$REMOVE'}}, {$unwind: '$u'}, {$set: {n: 1}}, {$set: {z: 1}}],
			['_id', 'a', B, 'c', 'd', 'u', 'z', 'n']],
		['nested $$REMOVE, then $set (a slot inside b)', [{$set: {'b.x': '$$REMOVE'}}, {$set: {'b.x': 1}}], ['_id', 'a', B, 'c', 'd']],
		['nested $$REMOVE in array elements, then $set', [{$set: {c: [{x: 1, y: 2}]}}, {$set: {'c.x': '$$REMOVE'}},
			{$set: {'c.x': 7}}, {$project: {c: {$arrayElemAt: ['$c', 0]}}}], ['_id', ['c', ['x', 'y']]]],
		['$$REMOVE, $sort, $set (the hole: a missing Value the sorter keeps in the Document)',
			[{$set: {a: '$$REMOVE'}}, {$sort: {d: 1}}, {$set: {n: 1, a: 2}}], ['_id', 'a', B, 'c', 'd', 'n']],
		['$$REMOVE of an absent field, $set, $sort, $set (its hole before the later field)',
			[{$set: {z: '$$REMOVE'}}, {$set: {n: 1}}, {$sort: {d: -1}}, {$limit: 3}, {$set: {z: 2}}],
			['_id', 'a', B, 'c', 'd', 'z', 'n']],
		['nested $$REMOVE, two $sorts, $set (the hole inside b)',
			[{$set: {'b.x': '$$REMOVE'}}, {$sort: {a: 1}}, {$sort: {d: 1}}, {$set: {'b.x': 1}}], ['_id', 'a', B, 'c', 'd']],
		['$$REMOVE, $facet with a $set (the TeeBuffer hands the branch the Document with its hole)',
			[{$set: {a: '$$REMOVE'}}, {$facet: {p: [{$count: 'n'}], o: [{$sort: {d: 1}}, {$set: {a: 2}}]}}, {$unwind: '$o'},
				{$replaceWith: '$o'}], ['_id', 'a', B, 'c', 'd']],
		['nested $$REMOVE, $replaceWith, $set (the hole inside the promoted document)',
			[{$set: {'b.x': '$$REMOVE'}}, {$replaceWith: '$b'}, {$set: {x: 3}}], ['x', 'y']],
		['nested $$REMOVE, $sort, $replaceRoot, $set',
			[{$set: {'b.x': '$$REMOVE'}}, {$sort: {d: 1}}, {$replaceRoot: {newRoot: '$b'}}, {$set: {x: 3}}], ['x', 'y']],
		['exclusion then $set of an object (merged)', [{$project: {'b.x': 0, c: 0}}, {$set: {b: {x: 7}, c: 1}}], ['_id', 'a', B, 'c', 'd']],
		['$replaceRoot $mergeObjects', [{$replaceRoot: {newRoot: {$mergeObjects: ['$b', {x: 5, q: 1, y: 0}]}}}], ['x', 'y', 'q']],
		['$group', [{$group: {_id: '$a', z: {$sum: 1}, a: {$first: '$d'}}}], ['_id', 'z', 'a']],
		['$lookup into an existing field', [{$lookup: {from: 'i1fo', localField: 'a', foreignField: 'a', as: 'b'}},
			{$project: {c: 0, d: 0}}], ['_id', 'a', 'b']],
		['$unwind includeArrayIndex (existing)', [{$unwind: {path: '$c', includeArrayIndex: 'a'}}], ['_id', 'a', B, 'c', 'd']],
		['$unwind includeArrayIndex (new)', [{$unwind: {path: '$c', includeArrayIndex: 'i'}}], ['_id', 'a', B, 'c', 'd', 'i']],
		['$facet', [{$facet: {z: [{$count: 'n'}], a: [{$count: 'n'}]}}], ['z', 'a']],
		['$bucket', [{$bucket: {groupBy: '$a', boundaries: [0, 5], output: {z: {$sum: 1}, a: {$sum: 1}}}}], ['_id', 'z', 'a']],
		['$bucketAuto', [{$bucketAuto: {groupBy: '$a', buckets: 1}}], [['_id', ['min', 'max']], 'count']],
		['$sortByCount', [{$sortByCount: '$a'}], ['_id', 'count']],
		['$setWindowFields', [{$setWindowFields: {sortBy: {a: 1}, output: {z: {$sum: 1}, a: {$sum: 1}}}}], ['_id', 'a', B, 'c', 'd', 'z']],
		['$fill', [{$fill: {output: {z: {value: 1}, a: {value: 2}}}}], ['_id', 'a', B, 'c', 'd', 'z']],
		['$setField', [{$replaceWith: {$setField: {field: 'a', input: '$$ROOT', value: 7}}}], ['_id', 'a', B, 'c', 'd']],
		['$unsetField', [{$replaceWith: {$unsetField: {field: 'a', input: '$$ROOT'}}}], ['_id', B, 'c', 'd']],
		['inclusion after an exclusion (a new document)', [{$project: {a: 0}}, {$project: {d: 1, a: '$d'}}], ['_id', 'd', 'a']],
	]));
	compat(1, 'field order: updates', () => foUpdate([
		['$set: new fields in name order', {$set: {z: 1, e: 2}}, ['_id', 'a', B, 'c', 'd', 'e', 'z']],
		['$set: existing in place', {$set: {z: 1, a: 5}}, ['_id', 'a', B, 'c', 'd', 'z']],
		['$set of nested new fields', {$set: {'b.z': 1, 'b.a': 2}}, ['_id', 'a', ['b', ['x', 'y', 'a', 'z']], 'c', 'd']],
		['operators together, in name order', {$set: {z: 1}, $inc: {m: 1}, $min: {k: 1}}, ['_id', 'a', B, 'c', 'd', 'k', 'm', 'z']],
		['$rename to a new field', {$rename: {a: 'z'}}, ['_id', B, 'c', 'd', 'z']],
		['$rename onto an existing field', {$rename: {a: 'd'}}, ['_id', B, 'c', 'd']],
		['$rename inside a document', {$rename: {'b.x': 'b.w'}}, ['_id', 'a', ['b', ['y', 'w']], 'c', 'd']],
		['pipeline: aggregation order', [{$set: {z: 1, e: 2, a: 7}}], ['_id', 'a', B, 'c', 'd', 'z', 'e']],
		['pipeline: $unset then $set (a slot)', [{$unset: 'a'}, {$set: {a: 5, n: 1}}], ['_id', 'a', B, 'c', 'd', 'n']],
		['pipeline: nested exclusion then $set (a slot)', [{$project: {'b.x': 0}}, {$set: {'b.x': 5}}], ['_id', 'a', B, 'c', 'd']],
		['pipeline: $unset, $set, $set (the slot lasts)', [{$unset: 'a'}, {$set: {z: 1}}, {$set: {a: 3}}], ['_id', 'a', B, 'c', 'd', 'z']],
		['pipeline: two exclusions then $set', [{$unset: 'a'}, {$unset: 'b'}, {$set: {b: 1, a: 2}}], ['_id', 'a', 'b', 'c', 'd']],
		['pipeline: $unset of two fields, then a $set of each', [{$unset: ['a', 'c']}, {$set: {a: 1}}, {$set: {c: 2}}],
			['_id', 'a', B, 'c', 'd']],
		['pipeline: $$REMOVE of an absent field leaves a slot', [{$set: {z: '$$REMOVE'}}, {$set: {n: 1}}, {$set: {z: 2}}],
			['_id', 'a', B, 'c', 'd', 'z', 'n']],
		['pipeline: $$REMOVE of a present field, $unset, then $set', [{$set: {a: '$$REMOVE'}}, {$unset: 'c'}, {$set: {n: 1, a: 2}}],
			['_id', 'a', B, 'd', 'n']],
		['pipeline: nested $$REMOVE, then $set (a slot inside b)', [{$set: {'b.x': '$$REMOVE'}}, {$set: {'b.x': 1}}],
			['_id', 'a', B, 'c', 'd']],
		['replacement keeps _id first', {z: 1, a: 2}, ['_id', 'z', 'a']],
		['upsert: query equalities, then the update', {$set: {z: 1, c: 3}}, ['_id', 'a', 'b', 'c', 'z'], {b: 1, a: 2}],
		['upsert with _id in the query', {$set: {a: 1}}, ['_id', 'b', 'a'], {b: 1, _id: 5}],
	]));
	compat(1, '$round / $trunc of a decimal keep its exponent', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			r: {$round: [NumberDecimal('1.2345'), 2]}, t: {$trunc: [NumberDecimal('1.2399'), 2]},
			r0: {$round: [NumberDecimal('2.50')]}}}]);
		eq(r, [{r: NumberDecimal('1.23'), t: NumberDecimal('1.23'), r0: NumberDecimal('2')}]);
	});
	compat(1, '$round / $trunc / $floor of a decimal: mongod\'s quantize exponent', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			r: {$round: [NumberDecimal('1.298'), 33]}, t: {$trunc: [NumberDecimal('5'), 2]},
			f: {$floor: NumberDecimal('1E+2')}}}]);
		eq(r, [{r: NumberDecimal('1.298000000000000000000000000000000'), t: NumberDecimal('5.00'), f: NumberDecimal('100')}]);
	});
	compat(1, '$dateFromString reads the formats mongod\'s jstests parse ("11:56.02")', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			a: {$dateFromString: {dateString: '2017-07-04T11:56.02'}},
			b: {$dateFromString: {dateString: '2017-07-04T11:56.02.81'}}}}]);
		eq(r, [{a: ISODate('2017-07-04T11:56:02Z'), b: ISODate('2017-07-04T11:56:02.810Z')}]);
	});
	compat(1, '$merge of large documents in several batches, also into its own collection', () => {
		cdb.i1big.drop();
		cdb.i1bigout.drop();
		const big = 'x'.repeat(4 * 1024 * 1024);
		for (let i = 0; i < 6; i++) cdb.i1big.insertOne({_id: i, s: big});
		agg(cdb, 'i1big', [{$merge: {into: 'i1bigout'}}]);
		agg(cdb, 'i1big', [{$project: {s: 1, t: '$s'}}, {$merge: {into: 'i1bigout', whenMatched: 'replace'}}]);
		eq(cdb.i1bigout.countDocuments({t: {$exists: true}}), 6);
		agg(cdb, 'i1big', [{$addFields: {n: 1}}, {$merge: {into: 'i1big', whenMatched: 'merge'}}]);
		eq(cdb.i1big.countDocuments({n: 1}), 6);
		cdb.i1big.drop();
		cdb.i1bigout.drop();
	});
	compat(1, '$pow / $sqrt / $exp / $ln with decimal arguments answer decimals', () => {
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			p: {$pow: [NumberDecimal('2'), NumberInt(10)]}, s: {$sqrt: NumberDecimal('16')},
			n: {$pow: [NumberDecimal('2'), -2]}, f: {$pow: [NumberDecimal('4'), NumberDecimal('0.5')]}}}]);
		// mongod's Decimal128::power adds 0E-6176 to the result: 34 digits
		// (log_exponential_expressions.js); base 2 / 10 go through exp2 / exp10
		eq(r[0].p, NumberDecimal('1024.000000000000000000000000000000'));
		eq(r[0].n, NumberDecimal('0.2500000000000000000000000000000000'));
		eq(Number(r[0].s.toString()), 4);
		ok(Math.abs(Number(r[0].f.toString()) - 2) < 1e-30, cj(r[0].f));
		// mongod's Decimal128::power / exp call Intel's bid128_pow / bid128_exp: their digits and exponents
		// (the correctly rounded exp(100) ends ...580014)
		const m = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			f: {$pow: [NumberDecimal('4'), NumberDecimal('0.5')]}, e: {$exp: NumberDecimal('100')},
			c: {$pow: [NumberDecimal('1.0001'), NumberInt(10000)]}}}]);
		eq(m, [{f: NumberDecimal('2.000000000000000000000000000000000'), e: NumberDecimal('2.688117141816135448412625551580013E+43'),
			c: NumberDecimal('2.718145926825224864037664674912241')}]);
		const D = NumberDecimal;
		const j = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			a: {$pow: [D('10.0'), -2]}, b: {$pow: [0.5, D('-1')]}, c: {$pow: [-2, D('2')]}, d: {$pow: [D('-2.0'), NumberInt(2)]},
			e: {$pow: [D('10.0'), 2]}, f: {$pow: [NaN, D('2')]}, g: {$pow: [D('-0'), 3]}, h: {$pow: [D('1E+1'), 3]}}}]);
		eq(j, [{a: D('0.01000000000000000000000000000000000'), b: D('2.000000000000000000000000000000000'),
			c: D('4.000000000000000000000000000000000'), d: D('4.000000000000000000000000000000000'),
			e: D('100.0000000000000000000000000000000'), f: D('NaN'), g: D('0E-6176'), h: D('1000.000000000000000000000000000000')}]);
		// $sqrt: bid128_sqrt, the exact root at half the exponent
		const q = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			a: {$sqrt: D('4.00')}, b: {$sqrt: D('1E+2')}, c: {$sqrt: D('0.0001')}, d: {$sqrt: D('-0')}, e: {$sqrt: D('NaN')},
			f: {$sqrt: D('Infinity')}, g: {$sqrt: D('2')}}}]);
		eq(q, [{a: D('2.0'), b: D('1E+1'), c: D('0.01'), d: D('-0'), e: D('NaN'), f: D('Infinity'),
			g: D('1.414213562373095048801688724209698')}]);
		eq(cmdErr(cdb, {aggregate: 'i1', pipeline: [{$project: {s: {$sqrt: D('-1E-30')}}}], cursor: {}}).code, 28714);
	});
	compat(1, '$log / $log10 / $ln / $exp of decimals: log_exponential_expressions.js\'s values, digits and exponents', () => {
		const D = NumberDecimal;
		const logs = [[1, 8, '0E+33'], [2.5, 8, '0.4406426982957874492901064764964633'], [8, 8, '1'],
			[64, 8, '2.000000000000000000000000000000000'], [65, 8, '2.007455937676151502755710694582028'],
			[81, 9, '2'], [10, 9, '1.047951637144692302148283761010701'], [1, 12.77, '0E+33'],
			[163.0729, 12.77, '2.000000000000000000000000000000000'], [170, 12.77, '2.016332738676605709114981994718173']];
		const proj = {_id: 0};
		logs.forEach(([x, b], i) => {
			proj['a' + i] = {$log: [D(String(x)), b]};
			proj['b' + i] = {$log: [x, D(String(b))]};
		});
		const one = [['1', '0'], ['2.5', '0.3979400086720376095725222105510140'], ['100', '2'], ['101', '2.004321373782642574275188178222938']];
		one.forEach(([x], i) => { proj['l' + i] = {$log10: D(x)}; });
		const lns = [['2.5', '0.9162907318741550651835272117680110'], ['10', '2.302585092994045684017991454684364'],
			['2.718281828459045235360287471352662', '0.9999999999999999999999999999999998']];
		lns.forEach(([x], i) => { proj['n' + i] = {$ln: D(x)}; });
		proj.e = {$exp: D('-1')};
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: proj}])[0];
		const want = {};
		logs.forEach(([, , w], i) => { want['a' + i] = D(w); want['b' + i] = D(w); });
		one.forEach(([, w], i) => { want['l' + i] = D(w); });
		lns.forEach(([, w], i) => { want['n' + i] = D(w); });
		want.e = D('0.3678794411714423215955237701614609');
		eq(r, want);
	});
	// mongod computes these with Intel's decimal library (34 digits, a decimal
	// result); bounds as expression_trigonometric.js checks them (50989)
	compat(1, 'trigonometric operators with decimal arguments answer mongod\'s decimals (Intel\'s bid128_sin ..., last digit and exponent)', () => {
		const D = NumberDecimal;
		const r = agg(cdb, 'i1', [{$match: {_id: 1}}, {$project: {_id: 0,
			a: {$acos: D('1')}, s: {$sin: D('0')}, c: {$cos: D('0')}, t: {$tanh: D('Infinity')},
			at: {$atan: D('1')}, a2: {$atan2: [D('1'), 1]}, sh: {$sinh: D('-Infinity')},
			ah: {$atanh: D('-1')}, d: {$degreesToRadians: D('180')}, g: {$radiansToDegrees: D('NaN')}, g1: {$radiansToDegrees: D('1')},
			s30: {$sin: D('1E+30')}, c6111: {$cos: D('1E+6111')}, s1: {$sin: D('1')},
			q: {$atan2: [D('-Infinity'), D('Infinity')]}, ai: {$atan: D('Infinity')}}}]);
		eq(r, [{a: D('0E-6176'), s: D('0'), c: D('1.000000000000000000000000000000000'), t: D('1'),
			at: D('0.7853981633974483096156608458198757'), a2: D('0.7853981633974483096156608458198757'),
			sh: D('-Infinity'), ah: D('-Infinity'), d: D('3.141592653589793238462643383279503'),
			g: D('NaN'), g1: D('57.29577951308232087679815481410517'),
			// any finite argument is reduced; Intel's last digit where it is not the correctly rounded one
			// (the exact values: ...5298733 and ...4976593, ...302990; tests/unit/test_expr_decimal.c)
			s30: D('-0.09011690191213805803038642895298733'), c6111: D('-0.9308997342432986931781750154976594'),
			s1: D('0.8414709848078965066525023216302991'),
			// expression_trigonometric.js expects these two digit for digit
			q: D('-0.785398163397448309615660845819876'), ai: D('1.570796326794896619231321691639751')}]);
		cdb.i1trig.drop();
		cdb.i1trig.insertOne({_id: 1, y: D('1.1'), i: D('-Infinity'), h: D('0.9')});
		const PE = 'Executor error during aggregate command on namespace: compat22.i1trig :: caused by :: ';
		wantErr(cdb, {aggregate: 'i1trig', pipeline: [{$project: {r: {$acos: '$y'}}}], cursor: {}}, 50989,
			PE + 'cannot apply $acos to 1.1, value must in [-1,1]');
		wantErr(cdb, {aggregate: 'i1trig', pipeline: [{$project: {r: {$sin: '$i'}}}], cursor: {}}, 50989,
			PE + 'cannot apply $sin to -Infinity, value must in (-inf,inf)');
		wantErr(cdb, {aggregate: 'i1trig', pipeline: [{$project: {r: {$acosh: '$h'}}}], cursor: {}}, 50989,
			PE + 'cannot apply $acosh to 0.9, value must in [1,inf]');
		cdb.i1trig.drop();
	});
	// mongod loads <db>.system.js for $where and mapReduce only
	// (ExpressionContext::getJsExecWithScope: "Stored procedures are only
	// loaded for the $where expression and MapReduce command";
	// jstests where_system_js.js, system_js_access.js)
	compat(1, 'system.js stored functions: $where and mapReduce see them, $function does not', () => {
		cdb.i1js.drop();
		cdb.system.js.drop();
		cdb.i1js.insertMany([{_id: 1, a: 1}, {_id: 2, a: 2}]);
		cdb.system.js.insertOne({_id: 'addOne', value: Code('function(x) { return x + 1; }')});
		cdb.system.js.insertOne({_id: 'K', value: 2});
		eq(cdb.i1js.find({$where: 'addOne(this.a) == K'}).toArray(), [{_id: 1, a: 1}]);
		const mr = cmdOk(cdb, {mapReduce: 'i1js', map: 'function() { emit(addOne(this.a), 1); }',
			reduce: 'function(k, v) { return Array.sum(v); }', out: {inline: 1}});
		eq(mr.results.map(r => r._id).sort(), [2, 3]);
		const e = wantErr(cdb, {aggregate: 'i1js', pipeline: [{$project: {r: {$function: {
			body: 'function(a) { return addOne(a); }', args: ['$a'], lang: 'js'}}}}], cursor: {}}, 139);
		ok(/addOne is not defined/.test(e.errmsg), e.errmsg);
		// a function removed from system.js is gone for the next operation
		cdb.system.js.deleteOne({_id: 'addOne'});
		wantErr(cdb, {find: 'i1js', filter: {$where: 'addOne(this.a) == K'}}, 139);
		cdb.system.js.drop();
		cdb.i1js.drop();
	});
}
