// Time-series collections through mongosh: create (listCollections type
// "timeseries", viewless: no system.buckets namespace), insertMany routed
// into buckets, reads that return measurements (find, aggregate with
// $dateTrunc groups, countDocuments, distinct), explain's
// $_internalUnpackBucket and bucket-level filter, rawData reads of the
// buckets, deletes and updates with any filter, collMod, collStats,
// secondary indexes (measurement keys, 2dsphere_bucket, partial filters, TTL),
// geo queries on measurements ($geoWithin through the bucket index, $geoNear
// first) compared with a plain collection, and mongod's codes for bad input;
// buckets closed on a schema change and field-by-field control.min/max
// (subfield ranges, $min on the bounds); raw mixed-schema buckets refused
// (408) until collMod timeseriesBucketsMayHaveMixedSchemaData; $geoNear on the
// metaField, $group by $dateTrunc on fixed buckets, $geoWithin partial filters.
load(__dirname + '/harness.js');

const t = db.getSiblingDB('timeseries_e2e');
t.dropDatabase();
const base = new Date('2024-03-01T00:00:00Z').getTime();

test('create and listCollections', () => {
	eq(t.createCollection('w', {timeseries: {timeField: 'ts', metaField: 'sensor'}, expireAfterSeconds: 86400}).ok, 1, 'create');
	const info = t.getCollectionInfos({name: 'w'})[0];
	eq(info.type, 'timeseries', 'type');
	eq(info.options.timeseries, {timeField: 'ts', metaField: 'sensor', granularity: 'seconds', bucketMaxSpanSeconds: 3600}, 'options');
	eq(Number(info.options.expireAfterSeconds), 86400, 'ttl');
	eq(t.getCollectionNames().filter(n => n.startsWith('system.buckets')), [], 'viewless');
	eq(t.w.getIndexes().map(i => i.name), ['sensor_1_ts_1'], 'default index');
});

test('insertMany fills buckets; reads return measurements', () => {
	const docs = [];
	for (let i = 0; i < 600; i++)
		docs.push({sensor: {id: i % 4, room: 'r' + (i % 2)}, ts: new Date(base + i * 30000), temp: 15 + (i % 11), ...(i % 3 ? {hum: 40 + i % 7} : {})});
	eq(t.w.insertMany(docs).insertedIds[599] !== undefined, true, 'inserted');
	eq(t.w.countDocuments(), 600, 'count');
	eq(t.w.find({'sensor.id': 2}).itcount(), 150, 'meta filter');
	const raw = t.runCommand({count: 'w', rawData: true}).n;
	ok(raw >= 4 && raw <= 24, 'buckets: ' + raw);
	const one = t.w.find({'sensor.id': 1}).sort({ts: 1}).limit(1).toArray()[0];
	eq(one.temp, 16, 'first measurement of sensor 1');
	eq(one.sensor, {id: 1, room: 'r1'}, 'meta back in place');
	const hours = t.w.aggregate([
		{$match: {'sensor.id': 0}},
		{$group: {_id: {$dateTrunc: {date: '$ts', unit: 'hour'}}, avg: {$avg: '$temp'}, n: {$sum: 1}}},
		{$sort: {_id: 1}}]).toArray();
	eq(hours.length, 5, 'hours');
	eq(hours.reduce((s, h) => s + h.n, 0), 150, 'all of sensor 0');
	eq(t.w.distinct('sensor.room').sort(), ['r0', 'r1'], 'distinct');
	const last = t.w.aggregate([{$sort: {ts: -1}}, {$group: {_id: '$sensor.id', last: {$first: '$temp'}}}, {$sort: {_id: 1}}]).toArray();
	eq(last.map(l => l._id), [0, 1, 2, 3], 'last reading per sensor');
});

test('explain shows the unpack stage and the bucket filter', () => {
	const e = t.w.explain().aggregate([{$match: {'sensor.id': 3, ts: {$gte: new Date(base + 3600000)}}}]);
	const names = e.stages.map(s => Object.keys(s)[0]);
	eq(names[0], '$cursor', 'cursor');
	eq(names[1], '$_internalUnpackBucket', 'unpack');
	const q = JSON.stringify(e.stages[0].$cursor.queryPlanner.parsedQuery);
	ok(q.includes('meta.id') && q.includes('control.max.ts'), 'bucket filter ' + q);
	eq(e.stages[1].$_internalUnpackBucket.timeField, 'ts', 'timeField');
	// mongod moves the rest of the $match into the unpack: eventFilter, and
	// the wholeBucketFilter of a time range
	const u = e.stages[1].$_internalUnpackBucket;
	eq(Object.keys(u.eventFilter), ['ts'], 'eventFilter ' + JSON.stringify(u.eventFilter));
	eq(Object.keys(u.wholeBucketFilter), ['control.min.ts'], 'wholeBucketFilter ' + JSON.stringify(u.wholeBucketFilter));
	eq(names.length, 2, 'no $match left after the unpack');
	// a $group by the meta of $max and counts runs on the buckets (no unpack)
	const g = t.w.explain().aggregate([{$group: {_id: '$sensor.id', hi: {$max: '$temp'}, n: {$count: {}}}}]);
	eq(g.stages.map(s => Object.keys(s)[0]), ['$cursor', '$group'], 'rewritten group');
	eq(g.stages[1].$group.hi, {$max: '$control.max.temp'}, 'control.max');
	const a = t.w.aggregate([{$group: {_id: '$sensor.id', hi: {$max: '$temp'}, n: {$count: {}}}}, {$sort: {_id: 1}}]).toArray();
	eq(a.map(x => x.n), [150, 150, 150, 150], 'counts from the buckets');
	eq(a.map(x => x.hi), [25, 25, 25, 25], 'max from the buckets');
	// an _id expression over the meta, and {$sum: 1.0}: a count from the buckets (an int, as mongod)
	const p2 = [{$group: {_id: {$concat: ['s', {$toString: '$sensor.id'}]}, n: {$sum: Double(1)}}}, {$sort: {_id: 1}}];
	const g2 = t.w.explain().aggregate(p2);
	eq(g2.stages.map(s => Object.keys(s)[0]), ['$cursor', '$group', '$sort'], 'rewritten group (expression _id)');
	eq(JSON.stringify(g2.stages[1].$group._id).includes('$meta.id'), true, 'meta path renamed');
	const a2 = t.w.aggregate(p2).toArray();
	eq(a2.map(x => x.n), [150, 150, 150, 150], 'counts of {$sum: 1.0} from the buckets');
	const f = t.w.find({'sensor.id': 3}).explain();
	ok(JSON.stringify(f).includes('$_internalUnpackBucket'), 'find explain');
});

test('rawData reads the buckets', () => {
	// every bucket is compressed from its first measurement (v2, BSONColumns, control.count), open ones too
	eq(t.runCommand({count: 'w', query: {'control.version': 1}, rawData: true}).n, 0, 'no v1 bucket');
	const b = t.runCommand({find: 'w', filter: {'meta.id': 0}, rawData: true, sort: {'control.min.ts': -1}, limit: 1}).cursor.firstBatch[0];
	ok(b.control.version === 2 || b.control.version === 3, 'version');
	eq(b.meta, {id: 0, room: 'r0'}, 'meta');
	ok(b.data.ts.sub_type === 7, 'time column');
	ok(b.control.min.ts <= b.control.max.ts, 'control');
	const c = t.runCommand({find: 'w', filter: {'control.version': 2}, rawData: true, limit: 1}).cursor.firstBatch[0];
	ok(c !== undefined, 'a closed bucket');
	ok(c.data.ts.sub_type === 7, 'time column as BSONColumn');
	ok(c.control.count > 0 && c.control.min.ts <= c.control.max.ts, 'count and bounds');
	eq(t.w.countDocuments({'sensor.id': c.meta.id, ts: {$gte: c.control.min.ts, $lte: c.control.max.ts}}) >= c.control.count, true, 'its measurements read back');
});

test('deletes and updates with any filter', () => {
	const hot = t.w.countDocuments({temp: {$gte: 24}});
	ok(hot > 0, 'some to delete');
	eq(t.w.deleteMany({temp: {$gte: 24}}).deletedCount, hot, 'deletedCount');
	eq(t.w.countDocuments({temp: {$gte: 24}}), 0, 'deleted');
	const before = t.w.countDocuments();
	const r = t.w.updateMany({hum: {$exists: false}}, {$set: {hum: 0}});
	eq(r.matchedCount, r.modifiedCount, 'modified');
	eq(t.w.countDocuments({hum: 0}), r.matchedCount, 'updated');
	eq(t.w.countDocuments(), before, 'same count');
	t.w.updateOne({'sensor.id': 3}, {$set: {'sensor.id': 9}});
	eq(t.w.countDocuments({'sensor.id': 9}), 1, 'meta changed: moved');
	eq(t.w.deleteOne({'sensor.id': 9}).deletedCount, 1, 'deleteOne');
});

test('collStats timeseries section', () => {
	ok(t.w.aggregate([{$collStats: {count: {}}}]).toArray().length === 1, '$collStats stays first');
	ok(t.w.aggregate([{$indexStats: {}}]).toArray().length >= 1, '$indexStats');
	const s = t.runCommand({collStats: 'w'});
	ok(s.timeseries.bucketCount > 0, 'bucketCount');
	ok(s.timeseries.numBucketInserts > 0, 'inserts');
	ok(s.timeseries.avgNumMeasurementsPerCommit > 0, 'avg');
});

test('collMod granularity and expireAfterSeconds', () => {
	eq(t.runCommand({collMod: 'w', timeseries: {granularity: 'hours'}}).ok, 1, 'coarser');
	eq(code(() => t.runCommand({collMod: 'w', timeseries: {granularity: 'minutes'}})), 72, 'finer refused');
	eq(t.getCollectionInfos({name: 'w'})[0].options.timeseries.bucketMaxSpanSeconds, 2592000, 'span');
	eq(t.runCommand({collMod: 'w', expireAfterSeconds: 10}).ok, 1, 'ttl');
	eq(Number(t.getCollectionInfos({name: 'w'})[0].options.expireAfterSeconds), 10, 'ttl stored');
});

test('secondary indexes on meta subfields and time', () => {
	eq(t.w.createIndex({'sensor.room': 1, ts: -1}), 'sensor.room_1_ts_-1', 'created');
	const ix = t.w.getIndexes().find(i => i.name === 'sensor.room_1_ts_-1');
	eq(ix.key, {'sensor.room': 1, ts: -1}, 'shown in measurement terms');
	const raw = t.runCommand({listIndexes: 'w', rawData: true}).cursor.firstBatch.find(i => i.name === 'sensor.room_1_ts_-1');
	eq(raw.key, {'meta.room': 1, 'control.max.ts': -1, 'control.min.ts': -1}, 'bucket terms');
	eq(t.w.find({'sensor.room': 'r1'}).itcount(), t.w.countDocuments({'sensor.room': 'r1'}), 'reads');
	eq(t.w.dropIndex({'sensor.room': 1, ts: -1}).ok, 1, 'dropped by the user key');
});

test('indexes on measurement fields', () => {
	t.mi.drop();
	t.createCollection('mi', {timeseries: {timeField: 'ts', metaField: 'sensor'}});
	const t0 = Date.UTC(2024, 0, 1), docs = [];
	for (let i = 0; i < 4000; i++)
		docs.push({ts: new Date(t0 + i * 1000), sensor: i % 4, temp: i % 1000, hum: i});
	t.mi.insertMany(docs);
	eq(t.mi.createIndex({temp: 1}), 'temp_1', 'ascending');
	eq(t.mi.createIndex({hum: -1}, {name: 'hum_down'}), 'hum_down', 'descending');
	const shown = t.mi.getIndexes();
	eq(shown.find(i => i.name === 'temp_1').key, {temp: 1}, 'listIndexes: the user key');
	eq(shown.find(i => i.name === 'hum_down').key, {hum: -1}, 'listIndexes: descending');
	ok(shown.every(i => i.originalSpec === undefined), 'no originalSpec shown');
	const raw = t.runCommand({listIndexes: 'mi', rawData: true}).cursor.firstBatch;
	eq(raw.find(i => i.name === 'temp_1').key, {'control.min.temp': 1, 'control.max.temp': 1}, 'rawData: bucket key');
	eq(raw.find(i => i.name === 'hum_down').key, {'control.max.hum': -1, 'control.min.hum': -1}, 'rawData: descending');
	eq(raw.find(i => i.name === 'temp_1').originalSpec.key, {temp: 1}, 'rawData: originalSpec');
	// answers equal the index-free ones; the plan: unpack above an IXSCAN of the bucket index
	for (const f of [{temp: {$lt: 3}}, {hum: {$gte: 3990}}, {hum: {$gt: 100, $lte: 120}}, {temp: {$lte: 0}, sensor: 0}]) {
		const want = t.mi.find(f).hint({$natural: 1}).itcount();
		ok(want > 0, 'matches ' + JSON.stringify(f));
		eq(t.mi.find(f).itcount(), want, 'same answer ' + JSON.stringify(f));
	}
	const ex = t.mi.find({hum: {$gte: 3990}}).explain('executionStats');
	const cur = ex.stages[0].$cursor, plan = cur.queryPlanner.winningPlan;
	eq(plan.stage, 'FETCH', 'FETCH');
	eq(plan.inputStage.stage, 'IXSCAN', 'IXSCAN');
	eq(plan.inputStage.indexName, 'hum_down', 'the descending index');
	eq(plan.inputStage.keyPattern, {'control.max.hum': -1, 'control.min.hum': -1}, 'bucket key pattern');
	ok(ex.stages[1].$_internalUnpackBucket !== undefined, 'unpack above it');
	ok(cur.executionStats.totalDocsExamined <= 4, 'only the buckets in range (one per sensor): ' + cur.executionStats.totalDocsExamined);
	const low = t.mi.find({temp: {$lt: 3}}).explain().stages[0].$cursor.queryPlanner.winningPlan;
	ok(JSON.stringify(low).includes('temp_1'), 'temp_1 scanned for $lt');
	// hint by the user's key pattern or by name
	for (const h of [{temp: 1}, 'temp_1', {hum: -1}]) {
		const p = t.mi.find({temp: {$gt: 997}}).hint(h).explain().stages[0].$cursor.queryPlanner.winningPlan;
		ok(JSON.stringify(p).includes('IXSCAN'), 'hinted ' + JSON.stringify(h));
		eq(t.mi.find({temp: {$gt: 997}}).hint(h).itcount(), 8, 'hinted answer ' + JSON.stringify(h));
	}
	eq(code(() => t.mi.find({temp: 1}).hint({nope: 1}).itcount()), 2, 'hint of no index');
	// mongod's refusals
	eq(code(() => t.mi.createIndex({temp: 1}, {unique: true, name: 'u'})), 72, 'unique');
	eq(code(() => t.mi.createIndex({temp: 'text'})), 72, 'text');
	eq(code(() => t.mi.createIndex({temp: 1}, {sparse: true, name: 's'})), 72, 'sparse on a measurement');
	eq(code(() => t.mi.createIndex({temp: 'hashed'})), 67, 'hashed measurement');
	eq(code(() => t.mi.createIndex({ts: 1}, {expireAfterSeconds: 5, name: 'ttl'})), 72, 'TTL without a meta filter');
	// mongod's 2dsphere_bucket over the buckets, shown in the user's terms
	eq(t.mi.createIndex({loc: '2dsphere'}), 'loc_2dsphere', '2dsphere on a measurement');
	eq(t.mi.getIndexes().find(i => i.name === 'loc_2dsphere').key, {loc: '2dsphere'}, '2dsphere shown');
	eq(t.runCommand({listIndexes: 'mi', rawData: true}).cursor.firstBatch.find(i => i.name === 'loc_2dsphere').key,
	    {'data.loc': '2dsphere_bucket'}, '2dsphere_bucket on buckets');
	eq(t.mi.dropIndex('loc_2dsphere').ok, 1, 'drop 2dsphere');
	// partial filters on measurements and the time; TTL on the time with a meta filter
	eq(t.mi.createIndex({hum: 1}, {partialFilterExpression: {temp: {$gte: 990}}, name: 'hot'}), 'hot', 'measurement partial');
	eq(code(() => t.mi.createIndex({hum: 1}, {partialFilterExpression: {temp: {$type: 'int'}}, name: 'x'})), 5916301,
	    'partial with no bucket form');
	eq(t.mi.createIndex({ts: 1}, {expireAfterSeconds: 3600, partialFilterExpression: {sensor: 7}, name: 'ttl7'}), 'ttl7', 'TTL index');
	eq(t.runCommand({listIndexes: 'mi', rawData: true}).cursor.firstBatch.find(i => i.name === 'ttl7').key,
	    {'control.min.ts': 1}, 'TTL on control.min');
	eq(t.mi.dropIndex('hot').ok + t.mi.dropIndex('ttl7').ok, 2, 'drop partial and TTL');
	eq(t.mi.createIndex({hum: 1}, {partialFilterExpression: {sensor: {$gt: 1}}, name: 'hum_part'}), 'hum_part', 'meta partial');
	eq(t.mi.getIndexes().find(i => i.name === 'hum_part').partialFilterExpression, {sensor: {$gt: 1}}, 'partial shown as given');
	eq(t.runCommand({listIndexes: 'mi', rawData: true}).cursor.firstBatch.find(i => i.name === 'hum_part').partialFilterExpression,
	    {meta: {$gt: 1}}, 'partial on buckets');
	eq(t.mi.find({hum: {$lt: 50}, sensor: 3}).itcount(), 12, 'partial-indexed answer');
	// dropIndexes by the user's key pattern and by name
	eq(t.mi.dropIndex({temp: 1}).ok, 1, 'drop by key');
	eq(t.mi.dropIndex('hum_down').ok, 1, 'drop by name');
	eq(code(() => t.mi.dropIndex({temp: 1})), 27, 'gone');
	eq(t.mi.getIndexes().map(i => i.name).sort(), ['hum_part', 'sensor_1_ts_1'], 'what is left');
});

test('$lookup and $unionWith read measurements', () => {
	t.sensors.drop();
	t.sensors.insertMany([{_id: 0, name: 'zero'}, {_id: 1, name: 'one'}]);
	const j = t.sensors.aggregate([
		{$lookup: {from: 'w', localField: '_id', foreignField: 'sensor.id', as: 'r'}},
		{$project: {name: 1, n: {$size: '$r'}}}, {$sort: {_id: 1}}]).toArray();
	eq(j.map(d => d.n), [t.w.countDocuments({'sensor.id': 0}), t.w.countDocuments({'sensor.id': 1})], 'lookup counts');
	ok(j[0].n > 0, 'some');
	const u = t.sensors.aggregate([{$unionWith: {coll: 'w', pipeline: [{$match: {'sensor.id': 1}}]}}, {$count: 'n'}]).toArray();
	eq(u[0].n, 2 + t.w.countDocuments({'sensor.id': 1}), 'unionWith');
	// findAndModify (no sort) on measurements
	const fm = t.w.findOneAndUpdate({'sensor.id': 1}, {$set: {x: 1}}, {returnDocument: 'after'});
	eq(fm.x, 1, 'findOneAndUpdate returns the new measurement');
	eq(t.w.countDocuments({x: 1}), 1, 'one measurement changed');
	const fd = t.w.findOneAndDelete({x: 1});
	eq(fd._id, fm._id, 'findOneAndDelete returns it');
	eq(t.w.countDocuments({x: 1}), 0, 'and removes it');
	eq(code(() => t.w.findOneAndUpdate({}, {$set: {x: 1}}, {sort: {ts: 1}})), 72, 'findAndModify with a sort: InvalidOptions as mongod 9.0');
	// mongod 8.0's bulkWrite command on measurements
	const nb = t.w.countDocuments({});
	const bw = db.adminCommand({bulkWrite: 1, nsInfo: [{ns: 'timeseries_e2e.w'}], ordered: false, ops: [
		{insert: 0, document: {sensor: {id: 77}, ts: new Date(base), temp: 1}},
		{insert: 0, document: {sensor: {id: 77}}},
		{update: 0, filter: {'sensor.id': 77}, updateMods: {$set: {temp: 2}}, multi: true},
		{delete: 0, filter: {'sensor.id': 77, temp: 2}, multi: true}]});
	eq([bw.nInserted, bw.nErrors, bw.nMatched, bw.nDeleted], [1, 1, 1, 1], 'bulkWrite counts');
	eq(bw.cursor.firstBatch[1].code, 2, 'a measurement without its time field');
	eq(t.w.countDocuments({}), nb, 'inserted then deleted');
	// upserts (mongod 8.0+): the upsert document becomes a measurement
	const before = t.w.countDocuments({});
	const up = t.w.updateOne({'sensor.id': 42, temp: -1}, {$set: {ts: new Date()}}, {upsert: true});
	eq(up.upsertedCount, 1, 'upserted');
	ok(up.insertedId !== null && up.insertedId !== undefined, 'upserted _id (mongosh: insertedId)');
	eq(t.w.countDocuments({}), before + 1, 'one more measurement');
	eq(t.w.findOne({_id: up.insertedId}).temp, -1, 'seeded from the filter');
	eq(t.w.updateOne({'sensor.id': 42, temp: -1}, {$set: {temp: -2}}, {upsert: true}).modifiedCount, 1, 'then matched');
	eq(code(() => t.w.updateOne({'sensor.id': 43}, {$set: {temp: 1}}, {upsert: true})), 2, 'upsert without time');
	eq(t.w.countDocuments({}), before + 1, 'nothing stored');
	eq(code(() => t.sensors.aggregate([{$out: 'w'}]).toArray()), 238, '$out into time-series: not built');
});

test('bad input', () => {
	eq(code(() => t.w.insertOne({sensor: 1})), 2, 'no time');
	eq(code(() => t.w.insertOne({sensor: 1, ts: 'yesterday'})), 2, 'not a date');
	const c = (o) => code(() => t.runCommand(Object.assign({create: 'bad'}, o)));
	eq(c({timeseries: {timeField: 't', metaField: '_id'}}), 72, 'meta _id');
	eq(c({timeseries: {timeField: 't', metaField: 't'}}), 72, 'meta = time');
	eq(c({timeseries: {metaField: 'm'}}), 40414, 'no timeField');
	eq(c({timeseries: {timeField: 't'}, capped: true, size: 10}), 72, 'capped');
	eq(c({timeseries: {timeField: 't', granularity: 'weeks'}}), 2, 'granularity');
	t.createCollection('plain');
	eq(code(() => t.runCommand({create: 'plain', timeseries: {timeField: 't'}})), 48, 'existing collection');
	eq(t.getCollectionNames().includes('bad'), false, 'nothing created');
});

test('reopening: a late measurement goes back into its stored bucket', () => {
	t.createCollection('ro', {timeseries: {timeField: 'ts', metaField: 'sensor', granularity: 'seconds'}});
	const h = 3600000;
	t.ro.insertMany([{sensor: 'a', ts: new Date(base)}, {sensor: 'a', ts: new Date(base + 10 * 60000)}]);
	t.ro.insertOne({sensor: 'a', ts: new Date(base + 2 * h)});            // time forward: a new bucket
	eq(t.ro.countDocuments({}, {rawData: true}), 2, 'two buckets');
	t.ro.insertOne({sensor: 'a', ts: new Date(base + 5 * 60000)});        // back: archive, query, reopen
	eq(t.ro.countDocuments({}, {rawData: true}), 2, 'still two buckets');
	let s = t.runCommand({collStats: 'ro'}).timeseries;
	eq([s.numBucketsArchivedDueToTimeBackward, s.numBucketsQueried, s.numBucketsReopened], [1, 1, 1], 'queried and reopened');
	t.ro.insertOne({sensor: 'a', ts: new Date(base + 2 * h + 1000)});      // forward again: the archived one, fetched
	s = t.runCommand({collStats: 'ro'}).timeseries;
	eq([s.numBucketsFetched, s.numBucketsReopened, s.numBucketsClosedDueToTimeForward], [1, 2, 2], 'fetched');
	eq(t.ro.countDocuments({}, {rawData: true}), 2, 'no new bucket');
	eq(t.ro.find({}, {_id: 0, ts: 1}).sort({ts: 1}).toArray().map(d => d.ts.getTime() - base),
	   [0, 5 * 60000, 10 * 60000, 2 * h, 2 * h + 1000], 'measurements');
	eq(s.numActiveBuckets, 1, 'one open (the one time forward left is closed, not archived)');
});

test('schema changes close buckets; subfield ranges and $min on field-by-field bounds', () => {
	t.createCollection('sc', {timeseries: {timeField: 'ts', metaField: 'sensor'}});
	const docs = [];
	for (let i = 0; i < 120; i++)
		docs.push({sensor: 'a', ts: new Date(base + i * 1000), o: i % 40 === 39 ? {v: 'x' + i} : {v: i, w: {z: i % 5}}});
	t.sc.insertMany(docs);
	let s = t.runCommand({collStats: 'sc'}).timeseries;
	eq(s.numBucketsClosedDueToSchemaChange, 5, 'a string where numbers were, and back: a new bucket each time');
	const raw = t.runCommand({find: 'sc', filter: {}, sort: {'control.min.ts': 1}, rawData: true}).cursor.firstBatch;
	eq(raw[0].control.max.o, {v: 38, w: {z: 4}}, 'control.max field by field');
	eq(t.sc.countDocuments({'o.v': {$gte: 100}}), 19, 'a subfield range');
	const ex = JSON.stringify(t.sc.find({'o.v': {$gte: 100}}).explain());
	ok(ex.includes('control.max.o.v'), 'the bound reaches the buckets');
	const g = t.sc.explain().aggregate([{$group: {_id: '$sensor', lo: {$min: '$o.w.z'}}}]);
	eq(g.stages[1].$group.lo, {$min: '$control.min.o.w.z'}, '$min on control.min');
	eq(t.sc.aggregate([{$group: {_id: '$sensor', lo: {$min: '$o.v'}, hi: {$max: '$o.w.z'}}}]).toArray(),
	   [{_id: 'a', lo: 0, hi: 4}], 'and its answer');
});

test('geo on measurements: 2dsphere_bucket, $geoWithin, $geoNear', () => {
	t.geo.drop(); t.geop.drop();
	t.createCollection('geo', {timeseries: {timeField: 'ts', metaField: 'sensor'}});
	const docs = [];
	for (let i = 0; i < 400; i++)
		docs.push({i, sensor: i % 4, ts: new Date(1700000000000 + i * 1000),
		           loc: {type: 'Point', coordinates: [(i % 25) - 12 + i / 997, Math.floor(i / 25) - 8]}});
	t.geo.insertMany(docs); t.geop.insertMany(docs);
	t.geo.createIndex({loc: '2dsphere'}); t.geop.createIndex({loc: '2dsphere'});
	const poly = {$geometry: {type: 'Polygon', coordinates: [[[0, 0], [6, 0], [3, 6], [0, 0]]]}};
	const ids = (c, q) => c.find(q).toArray().map(d => d.i).sort((a, b) => a - b);
	for (const q of [{loc: {$geoWithin: poly}}, {loc: {$geoIntersects: poly}}, {loc: {$geoWithin: {$centerSphere: [[-3, 2], 0.06]}}},
	                 {loc: {$geoWithin: poly}, sensor: 2}])
		eq(ids(t.geo, q), ids(t.geop, q), 'same answer ' + JSON.stringify(q));
	const cur = JSON.stringify(t.geo.explain().aggregate([{$match: {loc: {$geoWithin: poly}}}]).stages[0]);
	ok(cur.includes('$_internalBucketGeoWithin') && cur.includes('loc_2dsphere'), 'bucket predicate through the index');
	const near = {near: {type: 'Point', coordinates: [1, 1]}, distanceField: 'd', maxDistance: 500000};
	const a = t.geo.aggregate([{$geoNear: Object.assign({key: 'loc'}, near)}, {$limit: 10}]).toArray();
	const b = t.geop.aggregate([{$geoNear: near}, {$limit: 10}]).toArray();
	eq(a.map(d => d.d.toFixed(3)), b.map(d => d.d.toFixed(3)), '$geoNear distances');
	eq(code(() => t.geo.aggregate([{$geoNear: near}]).toArray()), 5892921, '$geoNear needs key');
});

test('raw mixed-schema buckets: 408 until collMod timeseriesBucketsMayHaveMixedSchemaData', () => {
	t.mix.drop(); t.mixp.drop();
	t.createCollection('mix', {timeseries: {timeField: 'ts', metaField: 'm'}});
	const docs = [];
	for (let i = 0; i < 20; i++)
		docs.push({m: 1, ts: new Date(base + i * 1000), v: i});
	t.mix.insertMany(docs.map(d => Object.assign({}, d))); t.mixp.insertMany(docs.map(d => Object.assign({}, d)));
	const T0 = new Date(base + 7200000), T1 = new Date(base + 7201000);
	const bucket = {_id: ObjectId.createFromTime(T0.getTime() / 1000), meta: 1,
		control: {version: 1, min: {ts: T0, v: 3}, max: {ts: T1, v: 'zz'}},
		data: {ts: {'0': T0, '1': T1}, v: {'0': 3, '1': 'zz'}}};
	const before = t.runCommand({count: 'mix', rawData: true}).n;
	const r = t.runCommand({insert: 'mix', documents: [bucket], rawData: true});
	eq(r.writeErrors && r.writeErrors[0].code, 408, 'raw insert refused');
	eq(t.runCommand({count: 'mix', rawData: true}).n, before, 'nothing stored');
	eq(t.runCommand({collMod: 'mix', timeseriesBucketsMayHaveMixedSchemaData: true}).ok, 1, 'collMod');
	eq(t.getCollectionInfos({name: 'mix'})[0].options.storageEngine.wiredTiger.configString,
	   'app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)', 'listCollections');
	eq(t.runCommand({insert: 'mix', documents: [bucket], rawData: true}).n, 1, 'accepted after collMod');
	t.mixp.insertMany([{m: 1, ts: T0, v: 3}, {m: 1, ts: T1, v: 'zz'}]);
	const strip = a => a.map(d => [d.ts.getTime(), d.v]).sort();
	for (const q of [{v: {$gte: 10}}, {v: {$type: 'string'}}, {}])
		eq(strip(t.mix.find(q).toArray()), strip(t.mixp.find(q).toArray()), 'same answer ' + JSON.stringify(q));
	const g = [{$group: {_id: '$m', lo: {$min: '$v'}, hi: {$max: '$v'}}}];
	eq(t.mix.aggregate(g).toArray(), t.mixp.aggregate(g).toArray(), '$min/$max as unpacked');
	eq(code(() => {
		const x = t.runCommand({collMod: 'mix', timeseriesBucketsMayHaveMixedSchemaData: false});
		if (x.ok !== 1) throw x;
	}), 72, 'never cleared');
	// an index reading the measurement v over that mixed bucket: mongod's 67
	let ci = null;
	try { t.runCommand({createIndexes: 'mix', indexes: [{key: {v: 1}, name: 'v_1'}]}); } catch (e) { ci = e; }
	eq(ci && ci.code, 67, 'measurement index on mixed buckets refused');
	ok(ci && /failed due to the detection of mixed-schema data/.test(ci.message), String(ci));
	eq(t.runCommand({createIndexes: 'mix', indexes: [{key: {m: 1}, name: 'm_1'}]}).ok, 1, 'meta index built');
});

test('partial indexes taken as mongod takes them', () => {
	t.pt.drop(); t.ptp.drop();
	t.createCollection('pt', {timeseries: {timeField: 'ts', metaField: 'm'}});
	const docs = [];
	for (let i = 0; i < 30; i++)
		docs.push({m: {s: i % 3}, ts: new Date(base + i * 1000), a: i, b: i % 17});
	t.pt.insertMany(docs.map(d => Object.assign({}, d))); t.ptp.insertMany(docs.map(d => Object.assign({}, d)));
	t.pt.createIndex({a: 1}, {name: 'a_b', partialFilterExpression: {b: {$gt: 5}}});
	const plan = q => JSON.stringify(t.pt.find(q).explain().stages[0].$cursor.queryPlanner.winningPlan);
	for (const [q, used] of [[{a: {$lt: 99}, b: {$gt: 6}}, true], [{a: {$lt: 99}, b: {$gte: 5}}, false],
	                         [{a: {$lt: 99}, b: 9}, true], [{a: {$lt: 99}}, false]]) {
		eq(plan(q).includes('"a_b"'), used, 'index a_b for ' + JSON.stringify(q));
		const s = a => a.map(d => d.a).sort((x, y) => x - y);
		eq(s(t.pt.find(q).toArray()), s(t.ptp.find(q).toArray()), 'answer ' + JSON.stringify(q));
	}
});

test('$geoNear on the metaField, fixed-bucket $dateTrunc groups, $geoWithin partial filters', () => {
	// mongod moves a $geoNear keyed on the metaField onto the buckets' meta index, before the unpack
	t.createCollection('gm', {timeseries: {timeField: 'ts', metaField: 'st'}});
	t.gm.createIndex({'st.loc': '2dsphere'});
	t.gmp.createIndex({'st.loc': '2dsphere'});
	const docs = [];
	for (let i = 0; i < 300; i++)
		docs.push({ts: new Date(base + i * 7000), st: {id: i % 6, loc: {type: 'Point', coordinates: [i % 6, (i % 6) / 2]}}, v: i});
	t.gm.insertMany(docs.map(d => Object.assign({}, d)));
	t.gmp.insertMany(docs.map(d => Object.assign({}, d)));
	const p = [{$geoNear: {near: {type: 'Point', coordinates: [2.2, 1]}, key: 'st.loc', distanceField: 'dist', includeLocs: 'st.at', maxDistance: 300000}},
	           {$project: {_id: 0}}, {$sort: {dist: 1, v: 1}}];
	const a = t.gm.aggregate(p).toArray(), b = t.gmp.aggregate(p).toArray();
	eq(a.length, b.length, 'as many as a plain collection');
	ok(a.length > 0, 'some near');
	eq(a.map(d => [d.v, d.dist, d.st.at]), b.map(d => [d.v, d.dist, d.st.at]), 'same distances and locations');
	const ex = t.gm.explain().aggregate([p[0]]);
	ok(JSON.stringify(ex).includes('GEO_NEAR_2DSPHERE') && JSON.stringify(ex).includes('meta.loc'), 'on the meta index');
	// a $group by $dateTrunc of the time on fixed buckets runs on the buckets
	t.createCollection('fx', {timeseries: {timeField: 'ts', metaField: 'st', bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600}});
	t.fx.insertMany(docs.map(d => Object.assign({}, d)));
	const g = [{$group: {_id: {$dateTrunc: {date: '$ts', unit: 'hour'}}, n: {$sum: 1}, hi: {$max: '$v'}}}, {$sort: {_id: 1}}];
	eq(t.fx.aggregate(g).toArray(), t.gmp.aggregate(g).toArray(), 'same groups as a plain collection');
	const gx = JSON.stringify(t.fx.explain().aggregate(g));
	ok(gx.includes('$control.min.ts') && !gx.includes('$_internalUnpackBucket'), 'grouped on the buckets: ' + gx.slice(0, 200));
	// a partial filter with $geoWithin on a measurement: $_internalBucketGeoWithin on the buckets
	t.gm.insertMany([{ts: new Date(base), st: {id: 9}, pos: [1, 1], v: 1}, {ts: new Date(base), st: {id: 10}, pos: [50, 50], v: 2}]);
	eq(t.runCommand({createIndexes: 'gm', indexes: [{key: {v: 1}, name: 'pv', partialFilterExpression: {pos: {$geoWithin: {$box: [[0, 0], [5, 5]]}}}}]}).ok, 1, 'created');
	const raw = t.runCommand({listIndexes: 'gm', rawData: true}).cursor.firstBatch.filter(i => i.name === 'pv')[0];
	eq(raw.partialFilterExpression, {$_internalBucketGeoWithin: {withinRegion: {$box: [[0, 0], [5, 5]]}, field: 'pos'}}, 'bucket filter');
	eq(t.gm.find({pos: {$geoWithin: {$box: [[0, 0], [5, 5]]}}, v: {$gte: 0}}).hint('pv').toArray().map(d => d.v), [1], 'hinted read');
});

done();
