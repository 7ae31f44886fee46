// item7_tools.js -- issue 22 item 7: server commands tools expect.
{
	const admin = db.getSiblingDB('admin');
	cdb.i7.insertMany([{_id: 1, a: 1}, {_id: 2, a: 2}]);

	compat(7, 'dataSize: size, numObjects, millis', () => {
		const r = cmdOk(cdb, {dataSize: 'compat22.i7'});
		eq(r.numObjects, 2);
		eq(r.size, 2 * 21); // {_id: 1, a: 1}: 21 bytes
		ok(typeof r.millis === 'number', cj(r));
		const e = cmdOk(cdb, {dataSize: 'compat22.nope'});
		eq([e.size, e.numObjects], [0, 0]);
	});
	compat(7, 'dataSize with keyPattern / min / max: the documents in [min, max) of an index', () => {
		cdb.i7d.drop();
		for (let i = 0; i < 10; i++)
			cdb.i7d.insertOne({_id: i, a: i, b: 10 - i});   // 28 bytes each
		cdb.i7d.createIndexes([{a: 1, b: -1}, {b: 1}]);
		const ds = (extra) => cmdOk(cdb, Object.assign({dataSize: 'compat22.i7d'}, extra));
		let r = ds({keyPattern: {a: 1}, min: {a: 2}, max: {a: 5}});
		eq([r.size, r.numObjects, r.estimate], [84, 3, false]);
		// keyPattern inferred from min; another index by its prefix
		eq(ds({min: {a: 2}, max: {a: 5}}).numObjects, 3);
		eq(ds({min: {b: 2}, max: {b: 4}}).numObjects, 2);
		// estimate: the average size per document; maxObjects stops past the limit
		r = ds({min: {a: 2}, max: {a: 5}, estimate: true});
		eq([r.size, r.estimate], [84, true]);
		r = ds({min: {a: 0}, max: {a: 9}, maxObjects: 2});
		eq([r.numObjects, r.maxReached], [3, true]);
		wantErr(cdb, {dataSize: 'compat22.i7d', min: {c: 1}, max: {c: 2}}, 96, "Couldn't find valid index containing key pattern");
		wantErr(cdb, {dataSize: 'compat22.i7d', min: {a: 1}}, 2, 'Max must be set if min is set.');
		wantErr(cdb, {dataSize: 'compat22.i7d', max: {a: 1}}, 2, 'Max must not be set if min is not set.');
		wantErr(cdb, {dataSize: 'compat22.i7d', min: {}, max: {a: 1}}, 2, 'Only one of min or max specified');
		wantErr(cdb, {dataSize: 'compat22.i7d', keyPattern: {a: 1}, min: {b: 1}, max: {b: 2}}, 16634);
	});
	compat(7, 'dbHash: md5 per collection and for the database', () => {
		const r = cmdOk(cdb, {dbHash: 1, collections: ['i7']});
		ok(/^[0-9a-f]{32}$/.test(r.md5), cj(r));
		ok(/^[0-9a-f]{32}$/.test(r.collections.i7), cj(r));
		eq(r.uuids.i7, cdb.getCollectionInfos({name: 'i7'})[0].info.uuid);
		const r2 = cmdOk(cdb, {dbHash: 1, collections: ['i7']});
		eq(r2.md5, r.md5, 'stable');
		cdb.i7.insertOne({_id: 3});
		ok(cmdOk(cdb, {dbHash: 1, collections: ['i7']}).collections.i7 !== r.collections.i7, 'changes with content');
		cdb.i7.deleteOne({_id: 3});
		eq(cmdOk(cdb, {dbHash: 1, collections: ['i7']}).collections.i7, r.collections.i7, 'same content, same hash');
	});
	compat(7, 'filemd5 of a GridFS file', () => {
		cdb.fs.files.drop();
		cdb.fs.chunks.drop();
		const id = ObjectId();
		cdb.fs.files.insertOne({_id: id, length: 6, chunkSize: 4, filename: 'f'});
		cdb.fs.chunks.insertMany([{files_id: id, n: 0, data: BinData(0, 'YWJjZA==')}, {files_id: id, n: 1, data: BinData(0, 'ZWY=')}]);
		const r = cmdOk(cdb, {filemd5: id, root: 'fs'});
		eq(r.md5, 'e80b5017098950fc58aad83c8c14978e'); // md5("abcdef")
		eq(r.numChunks, 2);
	});
	compat(7, 'top: per-namespace counters', () => {
		const r = cmdOk(admin, {top: 1});
		ok(r.totals && r.totals['compat22.i7'], 'no compat22.i7 in totals');
		const t = r.totals['compat22.i7'];
		for (const k of ['total', 'readLock', 'writeLock', 'queries', 'getmore', 'insert', 'update', 'remove', 'commands'])
			ok(t[k] && typeof t[k].time === 'number' && typeof t[k].count === 'number', k + ': ' + cj(t[k]));
		ok(t.insert.count >= 1, cj(t.insert));
		wantErr(cdb, {top: 1}, 13, 'top may only be run against the admin database.');
	});
	compat(7, '$currentOp stage lists this operation', () => {
		const ops = admin.aggregate([{$currentOp: {}}, {$match: {'command.aggregate': 1}}]).toArray();
		ok(ops.length >= 1, 'no op');
		ok(ops[0].opid !== undefined && ops[0].active === true, cj(ops[0]));
		wantErr(cdb, {aggregate: 1, pipeline: [{$currentOp: {}}], cursor: {}}, 73);
	});
	compat(7, 'currentOp command and killOp of a missing op', () => {
		const r = cmdOk(admin, {currentOp: 1});
		ok(Array.isArray(r.inprog), cj(r));
		cmdOk(admin, {killOp: 1, op: 123456789});
	});
	compat(7, '$collStats latencyStats and storageStats', () => {
		cdb.i7.find().toArray();
		const r = agg(cdb, 'i7', [{$collStats: {latencyStats: {histograms: true}, storageStats: {}, count: {}}}]);
		eq(r.length, 1);
		const l = r[0].latencyStats;
		ok(l && l.reads && l.reads.latency !== undefined && Number(l.reads.ops) >= 1, cj(l));
		ok(l.writes && l.commands && l.transactions, cj(l));
		ok(Array.isArray(l.reads.histogram), 'histogram');
		eq(Number(r[0].count), 2);
		eq(Number(r[0].storageStats.count), 2);
		eq(r[0].ns, 'compat22.i7');
	});
	compat(7, 'getDiagnosticData answers serverStatus under data', () => {
		const r = cmdOk(admin, {getDiagnosticData: 1});
		ok(r.data && r.data.serverStatus && r.data.serverStatus.uptime !== undefined, cj(Object.keys(r.data || {})));
	});
	compat(7, 'setParameter logLevel and logComponentVerbosity at run time', () => {
		const was = cmdOk(admin, {setParameter: 1, logLevel: 2}).was;
		eq(was, 0);
		eq(cmdOk(admin, {getParameter: 1, logLevel: 1}).logLevel, 2);
		cmdOk(admin, {setParameter: 1, logLevel: 0});
		cmdOk(admin, {setParameter: 1, logComponentVerbosity: {query: {verbosity: 3}}});
		const v = cmdOk(admin, {getParameter: 1, logComponentVerbosity: 1}).logComponentVerbosity;
		eq(v.verbosity, 0);
		eq(v.query.verbosity, 3);
		cmdOk(admin, {setParameter: 1, logComponentVerbosity: {query: {verbosity: -1}}});
		eq(cmdOk(admin, {getParameter: 1, logComponentVerbosity: 1}).logComponentVerbosity.query.verbosity, -1);
	});
	compat(7, 'logLevel / logComponentVerbosity turn on mongod\'s debug lines (D1 21962, D2 21965, every op\'s Slow query at 1)', () => {
		// the lines of the global log written since mark, parsed
		const since = (mark) => cmdOk(admin, {getLog: 'global'}).log.filter((l) => l.includes(mark)).map((l) => JSON.parse(l));
		const run = (mark) => {
			cmdOk(cdb, {find: 'i7log', filter: {}, comment: mark});
			cmdErr(cdb, {find: 'i7log', filter: {$bad: 1}, comment: mark});   // fails: 2 BadValue
		};
		cmdOk(admin, {setParameter: 1, logLevel: 2});
		run('m-level2');
		cmdOk(admin, {setParameter: 1, logLevel: 0});
		const l2 = since('m-level2');
		const about = l2.filter((l) => l.id === 21965);
		eq(about.length, 2, cj(l2));
		eq([about[0].s, about[0].c, about[0].msg, about[0].attr.db, about[0].attr.commandArgs.find],
			['D2', 'COMMAND', 'About to run the command', 'compat22', 'i7log']);
		const asrt = l2.filter((l) => l.id === 21962);
		eq(asrt.length, 1, cj(l2));
		eq([asrt[0].s, asrt[0].attr.command, asrt[0].attr.db], ['D1', 'find', 'compat22']);
		ok(/^BadValue: /.test(asrt[0].attr.error), asrt[0].attr.error);
		// level 1: every operation's Slow query line (fast ones too), no D2 lines
		cmdOk(admin, {setParameter: 1, logLevel: 1});
		run('m-level1');
		cmdOk(admin, {setParameter: 1, logLevel: 0});
		const l1 = since('m-level1');
		ok(l1.some((l) => l.id === 51803 && l.s === 'I' && l.attr.command.comment === 'm-level1'), cj(l1));
		ok(!l1.some((l) => l.id === 21965), cj(l1));
		// a component's own verbosity, over the global 0, and -1 to inherit again
		cmdOk(admin, {setParameter: 1, logComponentVerbosity: {command: {verbosity: 2}}});
		run('m-comp');
		cmdOk(admin, {setParameter: 1, logComponentVerbosity: {command: {verbosity: -1}}});
		run('m-off');
		eq(since('m-comp').filter((l) => l.id === 21965).length, 2);
		eq(since('m-off').filter((l) => l.id === 21965 || l.id === 21962).length, 0);
	});
	compat(7, 'a slow operation logs one "Slow query" line (I COMMAND 51803), not one per layer', () => {
		const mark = 'm-slow-once';
		const before = cmdOk(admin, {getLog: 'global'}).log;
		cmdOk(cdb, {find: 'i7', filter: {$where: 'sleep(150) || true', _id: 1}, comment: mark});
		const after = cmdOk(admin, {getLog: 'global'}).log;
		// every line written since, whichever layer wrote it
		const lines = after.slice(after.lastIndexOf(before[before.length - 1]) + 1).map((l) => JSON.parse(l))
			.filter((l) => l.id === 51803 && l.attr.durationMillis >= 150);
		eq(lines.length, 1, cj(lines));
		eq([lines[0].attr.ns, lines[0].attr.command.comment], ['compat22.i7', mark]);
		ok(lines[0].attr.durationMillis >= 150, cj(lines[0]));
	});
	compat(7, 'component verbosity turns on its debug lines: QUERY D2 20926, STORAGE D2 22331/22336, INDEX D2 20353, WRITE D3 20886, NETWORK D2 22986', () => {
		const lines = (id, pred) => cmdOk(admin, {getLog: 'global'}).log.map((l) => JSON.parse(l)).filter((l) => l.id === id && pred(l));
		const comp = (name, v) => cmdOk(admin, {setParameter: 1, logComponentVerbosity: {[name]: {verbosity: v}}});
		// QUERY 2: a find with one candidate plan; at 1 nothing
		cdb.i7q.drop();
		cdb.i7q.insertMany([{a: 1}, {a: 2}]);
		const oneplan = (l) => l.attr.query.startsWith('ns: compat22.i7q query: { a: ');
		comp('query', 1);
		cdb.i7q.find({a: 1}).toArray();
		comp('query', 2);
		cdb.i7q.find({a: 2}).sort({a: -1}).toArray();
		comp('query', -1);
		let q = lines(20926, oneplan);
		eq(q.length, 1, cj(q));
		eq([q[0].s, q[0].c, q[0].msg, q[0].attr.query, q[0].attr.planSummary],
			['D2', 'QUERY', 'Only one plan is available', 'ns: compat22.i7q query: { a: 2 } sort: { a: -1 } projection: {}', 'COLLSCAN']);
		// STORAGE 2: a new collection's table and its indexes' tables
		cdb.i7s1.drop();
		cdb.i7s2.drop();
		comp('storage', 1);
		cdb.createCollection('i7s1');
		comp('storage', 2);
		cdb.createCollection('i7s2');
		cdb.i7s2.createIndex({b: 1});
		comp('storage', -1);
		const rs = lines(22331, (l) => /^compat22\.i7s[12]$/.test(l.attr.namespace));
		eq(rs.length, 1, cj(rs));
		eq([rs[0].s, rs[0].c, rs[0].msg, rs[0].attr.namespace], ['D2', 'STORAGE', 'WiredTigerKVEngine::createRecordStore', 'compat22.i7s2']);
		ok(/^table:collection-/.test(rs[0].attr.uri) && /key_format=/.test(rs[0].attr.config), cj(rs[0]));
		// a UUID attr as mongod's log writes it: {"$uuid": "8-4-4-4-12"}
		const uuid = cdb.getCollectionInfos({name: 'i7s2'})[0].info.uuid.toString('hex');
		const sd = lines(22336, (l) => l.attr.collection_uuid && Object.keys(l.attr.collection_uuid).join() === '$uuid' &&
			/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(l.attr.collection_uuid.$uuid) &&
			l.attr.collection_uuid.$uuid.replace(/-/g, '') === uuid);
		eq(sd.length, 2, cj(sd));   // the _id index, then {b: 1}
		eq([sd[0].s, sd[0].c, sd[0].msg], ['D2', 'STORAGE', 'WiredTigerKVEngine::createSortedDataInterface']);
		ok(/^index-/.test(sd[1].attr.ident), cj(sd[1]));
		// INDEX 2: an index asked for under another name; at 1 nothing
		cdb.i7x.drop();
		cdb.i7x.createIndex({c: 1}, {name: 'c_first'});
		comp('index', 1);
		eq(cmdErr(cdb, {createIndexes: 'i7x', indexes: [{key: {c: 1}, name: 'c_one'}]}).code, 85);
		comp('index', 2);
		eq(cmdErr(cdb, {createIndexes: 'i7x', indexes: [{key: {c: 1}, name: 'c_two'}]}).code, 85);
		eq(cmdErr(cdb, {createIndexes: 'i7x', indexes: [{key: {c: 1}, name: 'c_three', expireAfterSeconds: 60}]}).code, 85);
		comp('index', -1);
		const ix = lines(20353, (l) => l.attr.name === 'c_first');
		eq(ix.length, 2, cj(ix));   // both conflicts (same options, other options) log it
		eq([ix[0].s, ix[0].c, ix[0].msg, ix[0].attr.spec.name, cj(ix[0].attr.spec.key)],
			['D2', 'INDEX', 'Index already exists with a different name', 'c_first', cj({c: 1})]);
		// WRITE 3: a failed write's "Caught Assertion in finishCurOp"; at 2 nothing
		cdb.i7w.drop();
		cdb.i7w.insertOne({_id: 1, n: 'x'});
		const werr = (l) => l.attr.error.includes('compat22.i7w');
		comp('write', 2);
		cmdOk(cdb, {insert: 'i7w', documents: [{_id: 1}]});
		comp('write', 3);
		cmdOk(cdb, {insert: 'i7w', documents: [{_id: 1}]});
		cmdOk(cdb, {update: 'i7w', updates: [{q: {_id: 1}, u: {$inc: {n: 1}}}]});
		comp('write', -1);
		const w = lines(20886, (l) => l.attr.operation === 'insert' && werr(l));
		eq(w.length, 1, cj(w));
		eq([w[0].s, w[0].c, w[0].msg], ['D3', 'WRITE', 'Caught Assertion in finishCurOp']);
		ok(w[0].attr.error.startsWith('DuplicateKey{ keyPattern: { _id: 1 }, keyValue: { _id: 1 } }: E11000 duplicate key error collection: compat22.i7w'), w[0].attr.error);
		const wu = lines(20886, (l) => l.attr.operation === 'update');
		eq(wu.length, 1, cj(wu));
		ok(wu[0].attr.error.startsWith('TypeMismatch: '), wu[0].attr.error);
		// NETWORK 2: a client closing its connections; at 1 nothing
		const closed = () => lines(22986, (l) => l.attr.error && l.attr.error.errmsg === 'Connection closed by peer').length;
		const openClose = () => {
			const m = new Mongo(db.getMongo()._uri);
			m.getDB('admin').runCommand({ping: 1});
			m.close();
		};
		const settle = (want) => {
			for (let i = 0; i < 50 && !want(closed()); i++)
				sleep(20);
			return closed();
		};
		const n0 = closed();
		comp('network', 1);
		openClose();
		sleep(200);
		eq(closed(), n0);
		comp('network', 2);
		openClose();
		const n2 = settle((n) => n > n0);
		comp('network', -1);
		ok(n2 > n0, 'no 22986 line');
		const nl = lines(22986, () => true).pop();
		eq([nl.s, nl.c, nl.msg, nl.attr.error.code, nl.attr.error.codeName],
			['D2', 'NETWORK', 'Session from remote encountered a network error during SourceMessage', 6, 'HostUnreachable']);
		ok(/^127\.0\.0\.1:\d+$/.test(nl.attr.remote), cj(nl));
		// TXN's D3 20507/20508 need a replica set: tests/e2e/txn/txn_mongosh.js
	});
	compat(7, 'applyOps: insert, update, delete in one command', () => {
		cdb.i7a.drop();
		cdb.createCollection('i7a');
		const r = cmdOk(admin, {applyOps: [
			{op: 'i', ns: 'compat22.i7a', o: {_id: 1, x: 1}},
			{op: 'i', ns: 'compat22.i7a', o: {_id: 2, x: 2}},
			{op: 'u', ns: 'compat22.i7a', o: {$v: 2, diff: {u: {x: 10}}}, o2: {_id: 1}},
			{op: 'd', ns: 'compat22.i7a', o: {_id: 2}},
			{op: 'n', ns: '', o: {msg: 'noop'}},
		]});
		// mongod 9.0's _applyOps skips no-op entries: not counted, no result
		eq(r.applied, 4);
		eq(r.results, [true, true, true, true]);
		eq(cdb.i7a.find().toArray(), [{_id: 1, x: 10}]);
		wantErr(admin, {applyOps: [{op: 'z', ns: 'compat22.i7a', o: {}}]}, 2);
	});
	compat(7, 'applyOps on any database; preCondition typed, then ignored as 9.0 does', () => {
		cdb.i7p.drop();
		cdb.i7p.insertOne({_id: 5, x: 19});
		// not admin-only (mongod's ApplyOpsCmd is not)
		const ops = [{op: 'u', ns: 'compat22.i7p', o2: {_id: 5}, o: {$set: {x: 20}}}];
		// 9.0's applyOps parses preCondition (array<object>) and never reads it
		eq(cmdOk(cdb, {applyOps: ops, preCondition: [{ns: 'compat22.i7p', q: {_id: 5}, res: {x: 1}}]}).applied, 1);
		eq(cdb.i7p.findOne(), {_id: 5, x: 20});
		wantErr(cdb, {applyOps: ops, preCondition: 1}, 14);
		wantErr(cdb, {applyOps: ops, preCondition: [1]}, 14);
	});
}
