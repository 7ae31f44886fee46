// item4_codes.js -- issue 22 item 4: the code (and message) current mongod
// answers, including the prefix of errors raised during a getMore.
{
	cdb.i4.insertMany([{_id: 1, s: 'x', n: 1}, {_id: 2, s: 'y', n: 2}, {_id: 3, s: 'z', n: 0}]);
	const proj = (e) => ({aggregate: 'i4', pipeline: [{$match: {_id: 1}}, {$project: {v: e}}], cursor: {}});

	compat(4, '$skip: 5107200 with parseIntegerElementToNonNegativeLong messages', () => {
		const st = (v) => ({aggregate: 'i4', pipeline: [{$skip: v}], cursor: {}});
		wantErr(cdb, st(-1), 5107200, 'invalid argument to $skip stage: Expected a non-negative number in: $skip: -1');
		wantErr(cdb, st(1.5), 5107200, 'invalid argument to $skip stage: Expected an integer: $skip: 1.5');
		wantErr(cdb, st('a'), 5107200, 'invalid argument to $skip stage: Expected a number in: $skip: "a"');
		wantErr(cdb, st(1e300), 5107200);
	});
	compat(4, '$limit: 5107201, and 15958 for zero', () => {
		const st = (v) => ({aggregate: 'i4', pipeline: [{$limit: v}], cursor: {}});
		wantErr(cdb, st(-1), 5107201, 'invalid argument to $limit stage: Expected a non-negative number in: $limit: -1');
		wantErr(cdb, st(2.5), 5107201, 'invalid argument to $limit stage: Expected an integer: $limit: 2.5');
		wantErr(cdb, st(true), 5107201, 'invalid argument to $limit stage: Expected a number in: $limit: true');
		wantErr(cdb, st(0), 15958, 'the limit must be positive');
	});
	compat(4, 'arithmetic type errors: TypeMismatch (14) with mongod 9.0 messages', () => {
		wantErr(cdb, proj({$add: ['$s', 1]}), 14, 'Executor error during aggregate command on namespace: compat22.i4 :: caused by :: $add only supports numeric or date types, not string');
		wantErr(cdb, proj({$multiply: ['$s', 1]}), 14);
		wantErr(cdb, proj({$divide: ['$s', 1]}), 14);
		wantErr(cdb, proj({$mod: ['$s', 1]}), 16611);
	});
	compat(4, 'divide and mod by zero: 2 / 16610', () => {
		wantErr(cdb, {aggregate: 'i4', pipeline: [{$match: {_id: 3}}, {$project: {v: {$divide: [1, '$n']}}}], cursor: {}}, 2, "Executor error during aggregate command on namespace: compat22.i4 :: caused by :: can't $divide by zero");
		wantErr(cdb, {aggregate: 'i4', pipeline: [{$match: {_id: 3}}, {$project: {v: {$mod: [1, '$n']}}}], cursor: {}}, 16610);
	});
	compat(4, 'an expression with the wrong number of arguments: 16020', () => {
		wantErr(cdb, proj({$subtract: [1]}), 16020, 'Expression $subtract takes exactly 2 arguments. 1 were passed in.');
	});
	compat(4, 'an error raised during a getMore carries "Executor error during getMore"', () => {
		cdb.i4big.drop();
		const docs = [];
		for (let i = 0; i < 10; i++) docs.push({_id: i, v: i < 5 ? 1 : 'x'});
		cdb.i4big.insertMany(docs);
		const r = cmdOk(cdb, {aggregate: 'i4big', pipeline: [{$sort: {_id: 1}}, {$project: {w: {$add: ['$v', 1]}}}], cursor: {batchSize: 2}});
		let e = null;
		for (let i = 0; i < 10 && !e; i++) {
			const m = cmdErrOrOk(cdb, {getMore: r.cursor.id, collection: 'i4big', batchSize: 2});
			if (!m.ok) e = m;
		}
		ok(e, 'no error');
		eq(e.code, 14);
		eq(e.errmsg, 'Executor error during getMore :: caused by :: $add only supports numeric or date types, not string');
	});
	compat(4, 'find getMore error prefix too', () => {
		const r = cmdOk(cdb, {find: 'i4big', filter: {$expr: {$gt: [{$add: ['$v', 1]}, 0]}}, sort: {_id: 1}, batchSize: 2});
		let e = null;
		for (let i = 0; i < 10 && !e; i++) {
			const m = cmdErrOrOk(cdb, {getMore: r.cursor.id, collection: 'i4big', batchSize: 2});
			if (!m.ok) e = m;
		}
		ok(e, 'no error');
		ok(e.errmsg.startsWith('Executor error during getMore :: caused by :: '), e.errmsg);
	});
	compat(4, 'constant subexpressions fail while the pipeline is optimized: "Failed to optimize pipeline"', () => {
		// mongod evaluates constant subtrees in optimize(), which adds this context
		wantErr(cdb, proj({$divide: [1, 0]}), 2, "Failed to optimize pipeline :: caused by :: can't $divide by zero");
		wantErr(cdb, {aggregate: 'i4', pipeline: [{$match: {$expr: {$divide: [1, 0]}}}], cursor: {}}, 2,
			"Failed to optimize pipeline :: caused by :: can't $divide by zero");
		// decimal $mod by zero: 5733415 (not 16610)
		wantErr(cdb, proj({$mod: [NumberDecimal('1'), 0]}), 5733415, "Failed to optimize pipeline :: caused by :: can't $mod by zero");
		// parse errors stay as they are; a find's filter is not a pipeline
		wantErr(cdb, proj({$cond: [1]}), 16020, 'Expression $cond takes exactly 3 arguments. 1 were passed in.');
		wantErr(cdb, {find: 'i4', filter: {$expr: {$divide: [1, 0]}}}, 2, "can't $divide by zero");
	});
	compat(4, 'distinct errors carry "Executor error during distinct command on namespace: <ns>"', () => {
		wantErr(cdb, {distinct: 'i4', key: 'n', query: {$expr: {$gt: [{$add: ['$s', 1]}, 0]}}}, 14,
			'Executor error during distinct command on namespace: compat22.i4 :: caused by :: $add only supports numeric or date types, not string');
	});
	compat(4, 'getMore of a find on a view: "Executor error during getMore"', () => {
		cdb.i4v.drop();
		cdb.createView('i4v', 'i4big', [{$sort: {_id: 1}}]);
		const f = {$expr: {$gt: [{$add: ['$v', 1]}, 0]}};
		for (const [coll, cmd] of [['i4v', {find: 'i4v', filter: f, batchSize: 2}]]) {
			const r = cmdOk(cdb, cmd);
			let e = null;
			for (let i = 0; i < 10 && !e; i++) {
				const m = cmdErrOrOk(cdb, {getMore: r.cursor.id, collection: coll, batchSize: 2});
				if (!m.ok) e = m;
			}
			ok(e, 'no error');
			eq(e.errmsg, 'Executor error during getMore :: caused by :: $add only supports numeric or date types, not string');
		}
	});
	compat(4, 'write errors raised while a statement runs carry "Plan executor error during update|delete|findAndModify"', () => {
		cdb.i4w.drop();
		cdb.i4w.insertMany([{_id: 1, s: 'x', n: 1}, {_id: 2, n: 2}]);
		cdb.i4w.createIndex({n: 1}, {unique: true});
		const we = (cmd) => cmdOk(cdb, cmd).writeErrors[0];
		// applying the update to the stored document, a duplicate key, the query itself
		eq(we({update: 'i4w', updates: [{q: {_id: 1}, u: {$inc: {s: 1}}}]}).errmsg,
			"Plan executor error during update :: caused by :: Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 's' of non-numeric type string");
		const dup = we({update: 'i4w', updates: [{q: {_id: 1}, u: {$set: {n: 2}}}]});
		eq([dup.code, dup.errmsg.startsWith('Plan executor error during update :: caused by :: E11000 duplicate key error')], [11000, true]);
		eq(we({delete: 'i4w', deletes: [{q: {$expr: {$add: ['$s', 1]}}, limit: 0}]}).errmsg,
			'Plan executor error during delete :: caused by :: $add only supports numeric or date types, not string');
		wantErr(cdb, {findAndModify: 'i4w', query: {_id: 1}, update: {$set: {_id: 5}}}, 66,
			"Plan executor error during findAndModify :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'");
		// what the update spec alone shows is a parse error: no context
		eq(we({update: 'i4w', updates: [{q: {_id: 1}, u: {$inc: {n: 'x'}}}]}).errmsg, 'Cannot increment with non-numeric argument: {n: "x"}');
	});
	compat(4, 'dropIndexes of a missing index: 27 IndexNotFound', () => {
		wantErr(cdb, {dropIndexes: 'i4', index: 'nope_1'}, 27, "index not found with name [nope_1]");
		wantErr(cdb, {dropIndexes: 'i4', index: {nope: 1}}, 27);
	});
	// JavaScript's codes in 9.0: CodeWScope in $where (4649201,
	// where_parser), $where and a JavaScript expression in one operation
	// (4649200, getJsExecWithScope), a CodeWScope in system.js (4546000,
	// Scope::loadStored), $function in a validator (4660800,
	// doc_validation_invalid_validators.js)
	compat(4, 'server-side JavaScript codes: 4649201, 4649200, 4546000, 4660800', () => {
		cdb.i4js.drop();
		cdb.system.js.drop();
		cdb.i4js.insertOne({_id: 1, a: 1});
		wantErr(cdb, {find: 'i4js', filter: {$where: Code('function() { return x; }', {x: true})}}, 4649201,
			'$where no longer supports deprecated BSON type CodeWScope');
		wantErr(cdb, {find: 'i4js', filter: {$and: [{$expr: {$function: {body: 'function() { return true; }',
			args: [], lang: 'js'}}}, {$where: 'true'}]}}, 4649200,
			'Executor error during find command: compat22.i4js :: caused by :: ' +
			'A single operation cannot use both JavaScript aggregation expressions and $where.');
		cdb.system.js.insertOne({_id: 'cws', value: Code('function() { return 1; }', {})});
		wantErr(cdb, {find: 'i4js', filter: {$where: 'true'}}, 4546000,
			'Executor error during find command: compat22.i4js :: caused by :: ' +
			"BSON type 'CodeWithScope' not supported in system.js scripts. As an alternative use 'Code'. " +
			"Script _id value: 'cws'");
		cdb.system.js.drop();
		wantErr(cdb, {collMod: 'i4js', validator: {$expr: {$function: {body: 'function(a) { return true; }',
			args: ['$a'], lang: 'js'}}}}, 4660800);
		cdb.i4js.drop();
	});
}
