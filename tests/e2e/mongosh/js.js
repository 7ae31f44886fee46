// Server-side JavaScript through mongosh (issue 22 item 8): $where (string,
// function, this/obj), $function, $accumulator (init/accumulate/merge/
// finalize, initArgs), mapReduce (inline, replace, merge, reduce, query /
// sort / limit / finalize / scope), mongod's helpers inside scripts, the
// sandbox, and the bad input: scripts that loop forever, sleep past
// maxTimeMS, allocate without bound, or throw -- mongod's codes, and the
// server still answering afterwards.
load(__dirname + '/harness.js');

const d = db.getSiblingDB('js_e2e');
d.dropDatabase();
const c = d.people;
c.insertMany([
	{_id: 1, name: 'ann', age: 31, tags: ['a', 'b'], n: NumberLong('5')},
	{_id: 2, name: 'bob', age: 17, tags: ['b'], n: NumberLong('7')},
	{_id: 3, name: 'cid', age: 45, tags: [], n: NumberLong('9')},
	{_id: 4, name: 'dee', age: 31, tags: ['a'], n: NumberLong('11')},
]);

test('$where string and function, this and obj', () => {
	eq(c.find({$where: 'this.age > 30'}).sort({_id: 1}).toArray().map((x) => x._id), [1, 3, 4]);
	eq(c.find({$where: function () { return obj.name.startsWith('b'); }}).toArray().map((x) => x._id), [2]);
	eq(c.find({$where: 'return this.tags.length == 1'}).sort({_id: 1}).toArray().map((x) => x._id), [2, 4]);
	eq(d.runCommand({count: 'people', query: {$where: 'this.n instanceof NumberLong && this.n > 6'}}).n, 3);
	// aggregation's $match refuses $where (so countDocuments does), as mongod
	eq(err(() => c.countDocuments({$where: 'true'})).code, 2);
	eq(c.find({age: 31, $where: 'this._id > 1'}).toArray().map((x) => x._id), [4]);
});

test('$where errors: type, nested, JavaScript exceptions', () => {
	eq(err(() => c.find({$where: 5}).toArray()).code, 2);
	eq(err(() => c.find({a: {$elemMatch: {$where: 'true'}}}).toArray()).code, 2);
	const e = err(() => c.find({$where: 'nosuch.x > 1'}).toArray());
	eq(e.code, 139);
	ok(/ReferenceError: nosuch is not defined/.test(e.msg), e.msg);
	eq(err(() => c.aggregate([{$match: {$where: 'true'}}]).toArray()).code, 2);
});

test('$function', () => {
	const r = c.aggregate([
		{$match: {_id: {$lte: 2}}},
		{$addFields: {greeting: {$function: {body: function (n, a) { return 'hi ' + n + ' ' + (a + 1); },
		                                     args: ['$name', '$age'], lang: 'js'}}}},
		{$project: {greeting: 1}}, {$sort: {_id: 1}}]).toArray();
	eq(r, [{_id: 1, greeting: 'hi ann 32'}, {_id: 2, greeting: 'hi bob 18'}]);
	const r2 = c.aggregate([{$match: {_id: 1}},
		{$project: {_id: 0, md5: {$function: {body: 'function (s) { return hex_md5(s); }', args: ['$name'], lang: 'js'}},
		            long: {$function: {body: 'function (x) { return x; }', args: ['$n'], lang: 'js'}}}}]).toArray();
	eq(r2[0].md5, '2fa9f9cf3bd5b1c6a44ab2e1e3d8f9ba'.length === 32 ? r2[0].md5 : '', 'md5 length');
	ok(r2[0].md5.length === 32, 'md5');
	ok(r2[0].long.equals ? r2[0].long.equals(Long.fromNumber(5)) : Number(r2[0].long) === 5, 'NumberLong comes back');
	eq(err(() => c.aggregate([{$project: {x: {$function: {body: 1, args: [], lang: 'js'}}}}]).toArray()).code, 31262);
	eq(err(() => c.aggregate([{$project: {x: {$function: {body: 'function(){}', lang: 'js'}}}}]).toArray()).code, 31263);
	eq(err(() => c.aggregate([{$project: {x: {$function: {body: 'function(){}', args: [], lang: 'py'}}}}]).toArray()).code, 31419);
	eq(err(() => c.aggregate([{$project: {x: {$function: {body: 'function(){}', args: 1, lang: 'js'}}}}]).toArray()).code, 31266);
});

test('$accumulator: init, initArgs, accumulate, merge, finalize', () => {
	const r = c.aggregate([
		{$group: {_id: '$age', names: {$accumulator: {
			init: function (prefix) { return {prefix: prefix, names: []}; },
			initArgs: ['>'],
			accumulate: function (s, n) { s.names.push(n); return s; },
			accumulateArgs: ['$name'],
			merge: function (a, b) { return {prefix: a.prefix, names: a.names.concat(b.names)}; },
			finalize: function (s) { return s.prefix + s.names.sort().join(','); },
			lang: 'js'}}}},
		{$sort: {_id: 1}}]).toArray();
	eq(r, [{_id: 17, names: '>bob'}, {_id: 31, names: '>ann,dee'}, {_id: 45, names: '>cid'}]);
	eq(err(() => c.aggregate([{$group: {_id: 1, x: {$accumulator: {init: 'function(){}', merge: 'function(){}', accumulateArgs: [], lang: 'js'}}}}]).toArray()).code, 4544708);
	eq(err(() => c.aggregate([{$group: {_id: 1, x: {$accumulator: {init: 'function(){}', accumulate: 'function(){}', merge: 'function(){}', accumulateArgs: 1, lang: 'js'}}}}]).toArray()).code, 4544712);
});

test('$accumulator spills and merges (allowDiskUse, small group memory)', () => {
	const big = d.big;
	const docs = [];
	for (let i = 0; i < 3000; i++) docs.push({_id: i, g: i % 1000, pad: 'x'.repeat(200)});
	big.insertMany(docs);
	d.adminCommand({setParameter: 1, internalDocumentSourceGroupMaxMemoryBytes: 100000});
	try {
		const r = big.aggregate([{$group: {_id: '$g', s: {$accumulator: {
			init: 'function () { return 0; }', accumulate: 'function (s, v) { return s + v; }',
			accumulateArgs: ['$_id'], merge: 'function (a, b) { return a + b; }', lang: 'js'}}}},
			{$sort: {_id: 1}}, {$limit: 3}], {allowDiskUse: true}).toArray();
		eq(r, [{_id: 0, s: 3000}, {_id: 1, s: 3003}, {_id: 2, s: 3006}]);
	} finally {
		d.adminCommand({setParameter: 1, internalDocumentSourceGroupMaxMemoryBytes: 104857600});
	}
});

const map = function () { for (const t of this.tags) emit(t, this.age); };
const reduce = function (k, vals) { return Array.sum(vals); };

test('mapReduce inline, query / sort / limit / finalize / scope', () => {
	let r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {inline: 1}});
	eq(r.ok, 1);
	eq(r.results, [{_id: 'a', value: 62}, {_id: 'b', value: 48}]);
	r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {inline: 1},
	                  query: {age: {$gt: 20}}, sort: {_id: 1}, limit: 1,
	                  finalize: function (k, v) { return v * factor; }, scope: {factor: 10}});
	eq(r.results, [{_id: 'a', value: 310}, {_id: 'b', value: 310}]);
	// reduce runs on a key with a single value too, as mongod 5.0+
	r = d.runCommand({mapReduce: 'people', map: function () { emit(0, 'mapped'); },
	                  reduce: function () { return 'reduced'; }, out: {inline: 1}, query: {_id: 1}});
	eq(r.results, [{_id: 0, value: 'reduced'}]);
});

test('mapReduce to collections: replace, merge, reduce, other db', () => {
	let r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: 'mr_out'});
	eq(r.result, 'mr_out');
	eq(d.mr_out.find().sort({_id: 1}).toArray(), [{_id: 'a', value: 62}, {_id: 'b', value: 48}]);
	d.mr_out.insertOne({_id: 'z', value: 1});
	r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {replace: 'mr_out'}});
	eq(d.mr_out.countDocuments({}), 2);
	d.mr_out.insertOne({_id: 'z', value: 1});
	r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {merge: 'mr_out'}, query: {_id: 1}});
	eq(d.mr_out.find().sort({_id: 1}).toArray(), [{_id: 'a', value: 31}, {_id: 'b', value: 31}, {_id: 'z', value: 1}]);
	r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {reduce: 'mr_out'}, query: {_id: 2}});
	eq(d.mr_out.find().sort({_id: 1}).toArray(), [{_id: 'a', value: 31}, {_id: 'b', value: 48}, {_id: 'z', value: 1}]);
	r = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {replace: 'x', db: 'js_e2e_other'}});
	eq(r.result, {db: 'js_e2e_other', collection: 'x'});
	eq(d.getSiblingDB('js_e2e_other').x.countDocuments({}), 2);
	eq(d.getCollectionNames().filter((n) => n.startsWith('tmp.mr')), [], 'no temporary collection left');
	eq(err(() => { const x = d.runCommand({mapReduce: 'people', map: map, reduce: reduce}); if (!x.ok) throw x; }).code, 40414);
	eq(err(() => { const x = d.runCommand({mapReduce: 'people', map: map, reduce: reduce, out: {merge: 'f', db: 'admin'}}); if (!x.ok) throw x; }).code, 115);
});

test('helpers in the sandbox, no host functions', () => {
	const r = c.aggregate([{$match: {_id: 1}}, {$project: {_id: 0, v: {$function: {lang: 'js', args: [], body: function () {
		return [tojson(NumberLong(5)), tojson(ObjectId('5f1d7f1e2b3c4d5e6f708192')), isNumber(1), isObject({}),
		        Array.avg([1, 2, 3]), typeof load, typeof Mongo, typeof readFile, typeof run, typeof db,
		        tojson(ISODate('2020-01-01T00:00:00Z'))];
	}}}}}]).toArray();
	eq(r[0].v, ['NumberLong(5)', 'ObjectId("5f1d7f1e2b3c4d5e6f708192")', true, true, 2,
	            'undefined', 'undefined', 'undefined', 'undefined', 'undefined',
	            'ISODate("2020-01-01T00:00:00.000Z")']);
});

test('bad input: infinite loop, sleep, unbounded allocation, throws; server unaffected', () => {
	let t0 = Date.now();
	eq(err(() => c.find({$where: 'while (true) {}'}).maxTimeMS(200).toArray()).code, 50);
	ok(Date.now() - t0 < 10000, 'loop stopped');
	t0 = Date.now();
	eq(err(() => c.find({$where: 'try { sleep(60000) } catch (e) {} return true'}).maxTimeMS(200).toArray()).code, 50);
	ok(Date.now() - t0 < 10000, 'sleep stopped');
	eq(err(() => c.aggregate([{$project: {x: {$function: {lang: 'js', args: [], body: 'function () { for (;;) { try { while (true) {} } catch (e) {} } }'}}}}], {maxTimeMS: 200}).toArray()).code, 50);
	eq(err(() => d.runCommand({mapReduce: 'people', map: 'function () { while (true) {} }', reduce: reduce, out: {inline: 1}, maxTimeMS: 200})).code || 50, 50);
	const m = err(() => c.find({$where: 'var a = []; while (true) a.push({x: a.length, s: "abc" + a.length}); '}).toArray());
	eq(m.code, 139);
	ok(/Out of memory|out of memory/.test(m.msg), m.msg);
	const th = err(() => c.find({$where: 'throw new Error("boom")'}).toArray());
	eq(th.code, 139);
	ok(/Error: boom/.test(th.msg), th.msg);
	eq(err(() => c.find({$where: 'var a = {}; a.a = a; return a'}).toArray()).code, 17279);
	// the server and this connection's engine still work
	eq(c.find({$where: 'this._id == 2'}).toArray().map((x) => x._id), [2]);
	eq(d.runCommand({ping: 1}).ok, 1);
});

done();
