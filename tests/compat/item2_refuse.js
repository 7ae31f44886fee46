// item2_refuse.js -- issue 22 item 2: inputs mongod refuses that tamgad
// accepted, each with mongod's code and message.
{
	cdb.i2.insertMany([{_id: 1, k: 1}, {_id: 2, k: 2}]);

	compat(2, '$merge on a field with no unique index: 51183', () => {
		cdb.i2t.drop();
		cdb.i2t.insertOne({_id: 9, k: 9});
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$merge: {into: 'i2t', on: 'k'}}], cursor: {}}, 51183,
			'Cannot find index to verify that join fields will be unique');
	});
	compat(2, '$merge into system.*: 31319; into an internal database: 31320', () => {
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$merge: {into: 'system.foo'}}], cursor: {}}, 31319,
			'Cannot $merge to special collection: system.foo');
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$merge: {into: {db: 'admin', coll: 'x'}}}], cursor: {}}, 31320,
			'Cannot $merge to internal database: admin');
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$merge: {into: {db: 'local', coll: 'x'}}}], cursor: {}}, 31320,
			'Cannot $merge to internal database: local');
	});
	compat(2, '$out into system.*: 17385; into an internal database: 31321', () => {
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$out: 'system.foo'}], cursor: {}}, 17385,
			"Can't $out to special collection: system.foo");
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$out: {db: 'config', coll: 'x'}}], cursor: {}}, 31321,
			"Can't $out to internal database: config");
	});
	compat(2, 'aggregate with a collectionUUID that does not match: 361', () => {
		const e = wantErr(cdb, {aggregate: 'i2', pipeline: [], cursor: {},
			collectionUUID: UUID('00000000-0000-4000-8000-000000000000')}, 361);
		eq(e.reply.collectionUUID, UUID('00000000-0000-4000-8000-000000000000'));
		eq(e.reply.expectedCollection, 'i2');
	});
	compat(2, 'find with a collectionUUID that does not match: 361', () => {
		wantErr(cdb, {find: 'i2', filter: {}, collectionUUID: UUID('00000000-0000-4000-8000-000000000000')}, 361);
	});
	compat(2, '$regexMatch with an unknown option: 51108', () => {
		wantErr(cdb, {aggregate: 'i2', pipeline: [{$project: {m: {$regexMatch: {input: 'a', regex: 'a', options: 'z'}}}}],
			cursor: {}}, 51108, '$regexMatch invalid flag in regex options: z');
	});
	compat(2, '$regexFind with a pattern that does not compile: 51111', () => {
		const e = wantErr(cdb, {aggregate: 'i2', pipeline: [{$project: {m: {$regexFind: {input: 'a', regex: '('}}}}],
			cursor: {}}, 51111);
		ok(e.errmsg.startsWith('Invalid Regex in $regexFind: '), e.errmsg);
	});
	compat(2, 'find with $regex and unknown $options: 51108', () => {
		// mongod's flagsToOptions with an empty operator name: a leading space
		wantErr(cdb, {find: 'i2', filter: {k: {$regex: 'x', $options: 'zzzz'}}}, 51108,
			' invalid flag in regex options: z');
		cdb.i2empty.drop();
		wantErr(cdb, {find: 'i2empty', filter: {k: {$regex: 'x', $options: 'zzzz'}}}, 51108);
	});
	compat(2, 'let variables with invalid names: 16866 / 16867 / 16870', () => {
		wantErr(cdb, {aggregate: 'i2', pipeline: [], cursor: {}, let: {A: 1}}, 16867,
			"'A' starts with an invalid character for a user variable name");
		wantErr(cdb, {aggregate: 'i2', pipeline: [], cursor: {}, let: {'': 1}}, 16866,
			'empty variable names are not allowed');
		wantErr(cdb, {aggregate: 'i2', pipeline: [], cursor: {}, let: {'a-b': 1}}, 16868,
			"'a-b' contains an invalid character for a variable name: '-'");
		wantErr(cdb, {find: 'i2', filter: {}, let: {Zz: 1}}, 16867);
	});
	compat(2, 'apiStrict / apiDeprecationErrors without apiVersion: 4886600', () => {
		wantErr(cdb, {ping: 1, apiStrict: true}, 4886600, 'Provided apiStrict without passing apiVersion');
		wantErr(cdb, {ping: 1, apiDeprecationErrors: false}, 4886600,
			'Provided apiDeprecationErrors without passing apiVersion');
	});
	compat(2, 'apiStrict: true with a command outside API Version 1: 323', () => {
		wantErr(cdb, {dbStats: 1, apiVersion: '1', apiStrict: true}, 323,
			"Provided apiStrict:true, but the command dbStats is not in API Version 1. Information on supported commands and migrations in API Version 1 can be found at https://dochub.mongodb.org/core/manual-versioned-api.");
		cmdOk(cdb, {find: 'i2', apiVersion: '1', apiStrict: true});
		cmdOk(cdb, {dbStats: 1, apiVersion: '1', apiStrict: false});
	});
	compat(2, 'apiStrict: true with a stage outside API Version 1: 323', () => {
		const e = wantErr(cdb, {aggregate: 'i2', pipeline: [{$collStats: {}}], cursor: {}, apiVersion: '1', apiStrict: true}, 323);
		ok(/\$collStats/.test(e.errmsg), e.errmsg);
	});
	compat(2, 'apiVersion other than "1": 322', () => {
		wantErr(cdb, {ping: 1, apiVersion: '2'}, 322, "API version must be \"1\"");
	});
}
