// geo.js -- geospatial queries through mongosh against tamgad: a 2dsphere
// index and its stored spec (2dsphereIndexVersion 3), every GeoJSON type
// accepted and bad ones refused with 16755 (nothing half-indexed),
// $near / $nearSphere nearest first with $minDistance / $maxDistance,
// 291 without an index and 2 for $near under $or, $geoWithin with every
// shape and $geoIntersects, explain's GEO_NEAR_2DSPHERE and covering
// IXSCAN bounds, $geoNear's options and its distances (S2's angle times
// 6378.1 km), a 2d index with bits/min/max and 13027, and a document's
// distance from its nearest geometry (arrays of pairs), time-series too.
// Prints "N passed, N failed"; exits non-zero when anything failed.
load(__dirname + '/harness.js');

const gdb = db.getSiblingDB('geo_e2e');
gdb.dropDatabase();
const shops = gdb.shops;

test('2dsphere index: created with its version, every GeoJSON type', () => {
	eq(shops.createIndex({loc: '2dsphere'}), 'loc_2dsphere');
	eq(shops.getIndexes().find((i) => i.name === 'loc_2dsphere')['2dsphereIndexVersion'], 3);
	shops.insertMany([
		{_id: 1, name: 'Alex', loc: {type: 'Point', coordinates: [13.4050, 52.5200]}},
		{_id: 2, name: 'Mitte', loc: {type: 'Point', coordinates: [13.4100, 52.5230]}},
		{_id: 3, name: 'Pankow', loc: [13.50, 52.60]},
		{_id: 4, name: 'Park', loc: {type: 'Polygon', coordinates: [[[13.3, 52.4], [13.35, 52.4], [13.35, 52.45], [13.3, 52.45], [13.3, 52.4]]]}},
		{_id: 5, name: 'Paris', loc: {type: 'Point', coordinates: [2.35, 48.85]}},
		{_id: 6, name: 'Spree', loc: {type: 'LineString', coordinates: [[13.2, 52.5], [13.3, 52.51]]}},
		{_id: 7, name: 'Kiosks', loc: {type: 'MultiPoint', coordinates: [[13.6, 52.4], [13.61, 52.41]]}},
		{_id: 8, name: 'Canals', loc: {type: 'MultiLineString', coordinates: [[[13.1, 52.3], [13.11, 52.31]]]}},
		{_id: 9, name: 'Islands', loc: {type: 'MultiPolygon', coordinates: [[[[13.0, 52.0], [13.01, 52.0], [13.01, 52.01], [13.0, 52.0]]]]}},
		{_id: 10, name: 'Mixed', loc: {type: 'GeometryCollection', geometries: [{type: 'Point', coordinates: [13.7, 52.7]}]}},
		{_id: 11, name: 'Nowhere'},
	]);
	eq(shops.countDocuments({}), 11);
});

test('bad GeoJSON: 16755, nothing inserted', () => {
	eq(code(() => shops.insertOne({_id: 20, loc: {type: 'Point', coordinates: [181, 0]}})), 16755);
	eq(code(() => shops.insertOne({_id: 21, loc: {type: 'Polygon', coordinates: [[[0, 0], [1, 1], [1, 0]]]}})), 16755);
	eq(code(() => shops.insertOne({_id: 22, loc: {type: 'Polygon', coordinates: [[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]}})), 16755);
	eq(code(() => shops.insertOne({_id: 23, loc: {type: 'LineString', coordinates: []}})), 16755);
	let msg = '';
	try { shops.insertOne({_id: 24, loc: {type: 'Point', coordinates: [200, 0]}}); } catch (e) { msg = e.message; }
	ok(msg.includes("Can't extract geo keys") && msg.includes('longitude/latitude is out of bounds, lng: 200 lat: 0'), msg);
	eq(shops.countDocuments({_id: {$gte: 20}}), 0);
});

const here = {type: 'Point', coordinates: [13.4, 52.52]};

test('$near / $nearSphere: nearest first, metres and radians', () => {
	eq(shops.find({loc: {$near: {$geometry: here, $maxDistance: 1000}}}).toArray().map((d) => d._id), [1, 2]);
	eq(shops.find({loc: {$near: {$geometry: here, $minDistance: 500, $maxDistance: 12000}}}).toArray().map((d) => d._id), [2, 6, 4, 3]);
	eq(shops.find({loc: {$nearSphere: [13.4, 52.52], $maxDistance: 0.0002}}).toArray().map((d) => d._id), [1, 2]);
	eq(shops.find({loc: {$near: {$geometry: here}}}).limit(3).toArray().map((d) => d._id), [1, 2, 6]);
	eq(shops.find({loc: {$near: {$geometry: here}}, name: /^P/}).toArray().map((d) => d._id), [4, 3, 5]);
});

test('$near errors: 291 without an index, 2 under $or', () => {
	gdb.noidx.insertOne({loc: [1, 1]});
	eq(code(() => gdb.noidx.find({loc: {$near: [0, 0]}}).toArray()), 291);
	eq(code(() => gdb.noidx.find({loc: {$nearSphere: {$geometry: here}}}).toArray()), 291);
	eq(code(() => shops.find({$or: [{loc: {$near: {$geometry: here}}}, {_id: 1}]}).toArray()), 2);
	eq(code(() => shops.find({loc: {$near: {$geometry: here}}}).sort({$natural: 1}).toArray()), 2);
	eq(code(() => shops.find({loc: {$near: {$geometry: {type: 'Point', coordinates: [0, 95]}}}}).toArray()), 2);
});

test('$geoWithin every shape, $geoIntersects, with and without the index', () => {
	const box = {type: 'Polygon', coordinates: [[[13.25, 52.35], [13.45, 52.35], [13.45, 52.55], [13.25, 52.55], [13.25, 52.35]]]};
	eq(shops.find({loc: {$geoWithin: {$geometry: box}}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2, 4]);
	eq(shops.find({loc: {$geoWithin: {$geometry: box}}}).hint({$natural: 1}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2, 4]);
	eq(shops.countDocuments({loc: {$geoWithin: {$geometry: {type: "MultiPolygon", coordinates: [box.coordinates]}}}}), 3);
	eq(shops.find({loc: {$geoWithin: {$centerSphere: [[13.4, 52.52], 1 / 6378.1]}}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2]);
	eq(shops.find({loc: {$geoWithin: {$box: [[13.4, 52.5], [13.6, 52.7]]}}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2, 3]);
	eq(shops.find({loc: {$geoWithin: {$polygon: [[13.4, 52.5], [13.6, 52.5], [13.4, 52.65]]}}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 2]);
	eq(shops.find({loc: {$geoWithin: {$center: [[13.5, 52.6], 0.01]}}}).toArray().map((d) => d._id), [3]);
	eq(shops.find({loc: {$geoIntersects: {$geometry: {type: 'LineString', coordinates: [[13.32, 52.3], [13.32, 52.5]]}}}}).toArray().map((d) => d._id), [4]);
	eq(shops.find({loc: {$geoIntersects: {$geometry: {type: 'LineString', coordinates: [[13.25, 52.4], [13.25, 52.6]]}}}}).toArray().map((d) => d._id), [6]);
});

test('explain: GEO_NEAR_2DSPHERE and covering bounds', () => {
	const near = shops.find({loc: {$near: {$geometry: here}}}).limit(2).explain().queryPlanner.winningPlan;
	eq(near.stage, 'LIMIT');
	eq(near.inputStage.stage, 'GEO_NEAR_2DSPHERE');
	eq(near.inputStage.indexName, 'loc_2dsphere');
	const within = shops.find({loc: {$geoWithin: {$centerSphere: [[13.4, 52.52], 0.0002]}}}).explain('executionStats');
	eq(within.queryPlanner.winningPlan.stage, 'FETCH');
	eq(within.queryPlanner.winningPlan.inputStage.stage, 'IXSCAN');
	ok(within.queryPlanner.winningPlan.inputStage.indexBounds.loc.length > 0);
	ok(/^\[-?\d+, -?\d+\]$/.test(within.queryPlanner.winningPlan.inputStage.indexBounds.loc[0]));
	eq(within.executionStats.nReturned, 2);
});

test('$geoNear: distances, options, errors', () => {
	const got = shops.aggregate([
		{$geoNear: {near: here, distanceField: 'dist.calculated', maxDistance: 2000, includeLocs: 'dist.location', query: {name: {$ne: 'Mitte'}}}},
	]).toArray();
	eq(got.map((d) => d._id), [1]);
	// S2's angle between the points times mongod's 6378.1 km
	ok(Math.abs(got[0].dist.calculated - 338.67893608418586) < 1e-9 * 338.7, String(got[0].dist.calculated));
	eq(got[0].dist.location, {type: 'Point', coordinates: [13.4050, 52.5200]});
	const km = shops.aggregate([{$geoNear: {near: here, distanceField: 'd', distanceMultiplier: 0.001, key: 'loc'}}, {$limit: 1}]).toArray();
	ok(Math.abs(km[0].d - 0.33867893608418586) < 1e-12);
	const rad = shops.aggregate([{$geoNear: {near: [13.4, 52.52], distanceField: 'd', spherical: true, minDistance: 0.0001}}, {$limit: 1}]).toArray();
	eq(rad[0]._id, 2);
	eq(code(() => shops.aggregate([{$geoNear: {}}]).toArray()), 5860400);
	eq(code(() => shops.aggregate([{$geoNear: {near: here, distanceField: 5}}]).toArray()), 16606);
	eq(code(() => shops.aggregate([{$match: {}}, {$geoNear: {near: here, distanceField: 'd'}}]).toArray()), 40602);
	eq(code(() => gdb.noidx.aggregate([{$geoNear: {near: here, distanceField: 'd'}}]).toArray()), 27);
});

test('2d index: bits, min, max, out of bounds, flat $near', () => {
	const flat = gdb.flat;
	eq(flat.createIndex({pos: '2d'}, {min: -10, max: 10, bits: 24}), 'pos_2d');
	flat.insertMany([{_id: 1, pos: [0, 0]}, {_id: 2, pos: [3, 4]}, {_id: 3, pos: [1, 1]}, {_id: 4, pos: {x: -2, y: 0}}]);
	eq(code(() => flat.insertOne({_id: 5, pos: [11, 0]})), 13027);
	eq(flat.find({pos: {$near: [0, 0]}}).toArray().map((d) => d._id), [1, 3, 4, 2]);
	eq(flat.find({pos: {$near: [0, 0], $maxDistance: 1.5}}).toArray().map((d) => d._id), [1, 3]);
	eq(flat.find({pos: {$geoWithin: {$box: [[0, 0], [2, 2]]}}}).sort({_id: 1}).toArray().map((d) => d._id), [1, 3]);
	const d = flat.aggregate([{$geoNear: {near: [0, 0], distanceField: 'd'}}]).toArray();
	eq(d.map((x) => x.d), [0, Math.sqrt(2), 2, 5]);
	eq(flat.find({pos: {$near: [0, 0]}}).explain().queryPlanner.winningPlan.stage, 'GEO_NEAR_2D');
	eq(code(() => flat.createIndex({a: 1, q: '2d'})), 16801);
});

test('a document\'s distance: its nearest geometry, plain and time-series alike', () => {
	// an array of pairs: each pair; a pair with an extra element: that pair only
	// (mongod's extractGeometries); time-series $geoNear measures the same way
	const t = new Date('2026-01-01T00:00:00Z');
	const docs = [{_id: 1, t, m: 1, loc: [[3, 4], [1, 0]]}, {_id: 2, t, m: 1, loc: [2, 0]},
		{_id: 3, t, m: 1, loc: [6, 8, [0, 0.5]]}];
	gdb.createCollection('dts', {timeseries: {timeField: 't', metaField: 'm'}});
	gdb.dts.insertMany(docs);
	gdb.dplain.insertMany(docs);
	eq(gdb.dplain.createIndex({loc: '2d'}), 'loc_2d');
	const stage = {$geoNear: {near: [0, 0], key: 'loc', distanceField: 'd'}};
	for (const c of [gdb.dplain, gdb.dts])
		eq(c.aggregate([stage, {$project: {d: 1}}]).toArray(), [{_id: 1, d: 1}, {_id: 2, d: 2}, {_id: 3, d: 10}]);
	const locs = gdb.dplain.aggregate([{$geoNear: {near: [0, 0], distanceField: 'd', includeLocs: 'at'}}]).toArray();
	eq(locs.map((x) => x.at), [[1, 0], [2, 0], [6, 8, [0, 0.5]]]);
});

done();
