// item5_explain.js -- issue 22 item 5: the pipeline rewrites mongod makes,
// as explain shows them, and the plan cache / index filter commands.
{
	const c = cdb.i5;
	const docs = [];
	for (let i = 0; i < 20; i++) docs.push({_id: i, a: i % 4, b: i, n: {x: i}});
	c.insertMany(docs);
	c.createIndex({a: 1});
	const ex = (p) => {
		const r = cmdOk(cdb, {explain: {aggregate: 'i5', pipeline: p, cursor: {}}, verbosity: 'queryPlanner'});
		return r;
	};
	const stageNames = (r) => (r.stages || []).map((s) => Object.keys(s)[0]);
	const plan = (r) => r.queryPlanner || r.stages[0].$cursor.queryPlanner;
	const usesIndex = (r, name) => JSON.stringify(plan(r).winningPlan).includes(`"indexName":"${name}"`);

	compat(5, '$skip + $skip and $limit + $limit coalesce; the pipeline becomes a find plan', () => {
		const p = [{$match: {a: 1}}, {$sort: {b: 1}}, {$skip: 1}, {$skip: 1}, {$limit: 5}, {$limit: 2}];
		const r = ex(p);
		eq(r.stages, undefined, 'no stages: optimised into the find layer');
		const w = JSON.stringify(plan(r).winningPlan);
		// mongod's find plan: SKIP 2 over a top-k SORT of 2 + 2
		ok(w.includes('"stage":"SKIP","skipAmount":2'), w);
		ok(w.includes('"stage":"SORT"') && w.includes('"limitAmount":4'), w);
		eq(agg(cdb, 'i5', p).map((d) => d._id), [9, 13]);
	});
	compat(5, '$match after $project moves before it (an index serves it)', () => {
		const p = [{$project: {a: 1, b: 1}}, {$match: {a: 2}}];
		const r = ex(p);
		ok(!stageNames(r).includes('$match'), cj(stageNames(r)));
		ok(usesIndex(r, 'a_1'), cj(plan(r).winningPlan));
		eq(agg(cdb, 'i5', p.concat([{$sort: {_id: 1}}, {$limit: 2}])), [{_id: 2, a: 2, b: 2}, {_id: 6, a: 2, b: 6}]);
	});
	compat(5, '$match split across $addFields: the unchanged part moves, the rest stays', () => {
		const p = [{$addFields: {z: {$mod: ['$b', 2]}}}, {$match: {a: 1, z: 1}}];
		const r = ex(p);
		eq(stageNames(r), ['$cursor', '$addFields', '$match']);
		eq(r.stages[2].$match, {z: 1});
		ok(usesIndex(r, 'a_1'), cj(plan(r).winningPlan));
		eq(agg(cdb, 'i5', p).map((d) => d._id).sort((x, y) => x - y), [1, 5, 9, 13, 17]);
	});
	compat(5, '$match swapped across a rename ({x: "$a"}) matches the old name', () => {
		const p = [{$project: {x: '$a', b: 1}}, {$match: {x: 3}}];
		const r = ex(p);
		ok(usesIndex(r, 'a_1'), cj(r));
		eq(agg(cdb, 'i5', p.concat([{$sort: {_id: 1}}, {$limit: 1}])), [{_id: 3, b: 3, x: 3}]);
	});
	compat(5, '$match on a field the stage changes does not move', () => {
		const p = [{$addFields: {a: {$add: ['$a', 1]}}}, {$match: {a: 1}}];
		eq(stageNames(ex(p)), ['$cursor', '$addFields', '$match']);
		eq(agg(cdb, 'i5', p).length, 5);
		const q = [{$project: {n: 0}}, {$match: {'n.x': 3}}];
		eq(stageNames(ex(q)), ['$cursor', '$project', '$match']);
		eq(agg(cdb, 'i5', q), []);
	});
	compat(5, '$sort + $match: the $match runs first', () => {
		const p = [{$sort: {b: -1}}, {$match: {a: 0}}];
		const r = ex(p);
		eq(r.stages, undefined);
		eq(agg(cdb, 'i5', p).map((d) => d._id), [16, 12, 8, 4, 0]);
	});
	compat(5, 'explain of $out / $merge names the target', () => {
		const r = ex([{$match: {a: 1}}, {$out: 'i5out'}]);
		eq(r.stages[r.stages.length - 1], {$out: {db: 'compat22', coll: 'i5out'}});
		const m = ex([{$match: {a: 1}}, {$merge: {into: 'i5m'}}]);
		eq(m.stages[m.stages.length - 1], {$merge: {into: {db: 'compat22', coll: 'i5m'}, on: '_id',
			whenMatched: 'merge', whenNotMatched: 'insert'}});
	});
	compat(5, 'plan cache commands and index filters (indexFilterSet)', () => {
		eq(cmdOk(cdb, {planCacheListFilters: 'i5'}).filters, []);
		c.createIndex({b: 1});
		cmdOk(cdb, {planCacheSetFilter: 'i5', query: {a: 1, b: 2}, indexes: [{b: 1}]});
		const f = cmdOk(cdb, {planCacheListFilters: 'i5'}).filters;
		eq(f.length, 1);
		eq(f[0].indexes, [{b: 1}]);
		const e = cmdOk(cdb, {explain: {find: 'i5', filter: {a: 3, b: 7}}, verbosity: 'queryPlanner'});
		eq(e.queryPlanner.indexFilterSet, true);
		ok(JSON.stringify(e.queryPlanner.winningPlan).includes('"indexName":"b_1"'), cj(e.queryPlanner.winningPlan));
		eq(c.find({a: 3, b: 7}).toArray().length, 1);
		const other = cmdOk(cdb, {explain: {find: 'i5', filter: {a: 3}}, verbosity: 'queryPlanner'});
		eq(other.queryPlanner.indexFilterSet, false);
		cmdOk(cdb, {planCacheClearFilters: 'i5', query: {a: 9, b: 9}});
		eq(cmdOk(cdb, {planCacheListFilters: 'i5'}).filters, []);
		cmdOk(cdb, {planCacheClear: 'i5'});
		eq(agg(cdb, 'i5', [{$planCacheStats: {}}]), []);
	});
	compat(5, 'index filters apply to count, distinct and aggregate; the planner races the indexes a filter lists', () => {
		const c = cdb.i5f;
		c.drop();
		const docs = [];
		for (let i = 0; i < 400; i++)
			docs.push({a: i % 2, b: i, c: i % 5});
		c.insertMany(docs);
		c.createIndexes([{a: 1}, {b: 1}, {c: 1}]);
		const ixOf = (plan) => (JSON.stringify(plan).match(/"indexName":"([^"]+)"/) || [])[1];
		cmdOk(cdb, {planCacheSetFilter: 'i5f', query: {a: 1, b: 1}, indexes: [{a: 1}, {b: 1}]});
		// both listed indexes compete: b_1 (one key) beats a_1 (200 keys)
		let e = cmdOk(cdb, {explain: {find: 'i5f', filter: {a: 1, b: 7}}, verbosity: 'queryPlanner'});
		eq([e.queryPlanner.indexFilterSet, ixOf(e.queryPlanner.winningPlan), ixOf(e.queryPlanner.rejectedPlans)],
			[true, 'b_1', 'a_1']);
		// an index hint is ignored under a filter (mongod's planner drops it)
		e = cmdOk(cdb, {explain: {find: 'i5f', filter: {a: 1, b: 7}, hint: {c: 1}}, verbosity: 'queryPlanner'});
		eq(ixOf(e.queryPlanner.winningPlan), 'b_1');
		e = cmdOk(cdb, {explain: {count: 'i5f', query: {a: 1, b: 7}}, verbosity: 'queryPlanner'});
		eq([e.queryPlanner.indexFilterSet, ixOf(e.queryPlanner.winningPlan)], [true, 'b_1']);
		e = cmdOk(cdb, {explain: {distinct: 'i5f', key: 'c', query: {a: 1, b: 7}}, verbosity: 'queryPlanner'});
		eq([e.queryPlanner.indexFilterSet, ixOf(e.queryPlanner.winningPlan)], [true, 'b_1']);
		e = cmdOk(cdb, {explain: {aggregate: 'i5f', pipeline: [{$match: {a: 1, b: 7}}], cursor: {}}, verbosity: 'queryPlanner'});
		ok(JSON.stringify(e).includes('"indexFilterSet":true'), cj(e));
		eq(cmdOk(cdb, {count: 'i5f', query: {a: 1, b: 7}}).n, 1);
		eq(cmdOk(cdb, {distinct: 'i5f', key: 'c', query: {a: 1, b: 7}}).values, [2]);
		eq(agg(cdb, 'i5f', [{$match: {a: 1, b: 7}}, {$project: {_id: 0, b: 1}}]), [{b: 7}]);
		// a filter none of whose indexes applies leaves a collection scan
		cmdOk(cdb, {planCacheSetFilter: 'i5f', query: {c: 1}, indexes: [{a: 1}]});
		e = cmdOk(cdb, {explain: {count: 'i5f', query: {c: 3}}, verbosity: 'queryPlanner'});
		ok(JSON.stringify(e.queryPlanner.winningPlan).includes('COLLSCAN'), cj(e.queryPlanner.winningPlan));
		eq(cmdOk(cdb, {count: 'i5f', query: {c: 3}}).n, 80);
		cmdOk(cdb, {planCacheClearFilters: 'i5f'});
	});
	compat(5, '$sort + $group with $first on the sorted prefix is a DISTINCT_SCAN', () => {
		const p = [{$sort: {a: 1}}, {$group: {_id: '$a', f: {$first: '$b'}}}];
		const r = ex(p);
		ok(JSON.stringify(r).includes('"stage":"DISTINCT_SCAN"'), cj(r));
		eq(agg(cdb, 'i5', p.concat([{$sort: {_id: 1}}])), [{_id: 0, f: 0}, {_id: 1, f: 1}, {_id: 2, f: 2}, {_id: 3, f: 3}]);
		// not with $last, another sort, or no index
		ok(!JSON.stringify(ex([{$sort: {a: 1}}, {$group: {_id: '$a', f: {$last: '$b'}}}])).includes('DISTINCT_SCAN'));
		ok(!JSON.stringify(ex([{$sort: {b: 1}}, {$group: {_id: '$b', f: {$first: '$a'}}}])).includes('DISTINCT_SCAN') ||
			c.getIndexes().some((i) => i.name === 'b_1'));
	});
}
