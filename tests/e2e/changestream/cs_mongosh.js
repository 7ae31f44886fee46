// cs_mongosh.js -- mongosh's watch() against a `tamgad --replSet`: a
// collection's, a database's and the deployment's stream, tryNext() and
// getResumeToken(), resuming with resumeAfter, the standalone-only
// errors a shell user meets, updateDescription's paths and
// $changeStreamSplitLargeEvent, changeStreamOptions (set/getClusterParameter).
load(__dirname + '/../mongosh/harness.js');

{
	try {
		db.adminCommand({replSetInitiate: {}});
	} catch (e) {
		if (e.code !== 23) throw e;   // AlreadyInitialized (--replSetAutoInitiate)
	}
	for (let i = 0; i < 100 && !db.adminCommand({hello: 1}).isWritablePrimary; i++) sleep(100);
}
const d = db.getSiblingDB('e2e_cs_sh');
d.dropDatabase();
d.reviews.insertOne({_id: 0});

function nextOf(cs) {
	for (let i = 0; i < 50; i++) {
		const e = cs.tryNext();
		if (e !== null) return e;
	}
	throw new Error('no event');
}

let token;
test('db.coll.watch() with tryNext and getResumeToken', () => {
	const cs = d.reviews.watch([], {maxAwaitTimeMS: 100});
	ok(cs.tryNext() === null, 'nothing yet');
	ok(cs.getResumeToken() !== undefined && cs.getResumeToken()._data.length > 0, 'a token before any event');
	d.reviews.insertOne({_id: 1, rating: 5});
	d.reviews.updateOne({_id: 1}, {$set: {rating: 4}});
	const a = nextOf(cs), b = nextOf(cs);
	eq(a.operationType, 'insert');
	eq(a.fullDocument, {_id: 1, rating: 5});
	eq(b.updateDescription.updatedFields, {rating: 4});
	token = a._id;
	eq(cs.getResumeToken(), b._id, 'the token of the last event');
	cs.close();
});

test('resumeAfter', () => {
	const cs = d.reviews.watch([], {resumeAfter: token, maxAwaitTimeMS: 100});
	eq(nextOf(cs).operationType, 'update');
	cs.close();
});

test('db.watch() and Mongo.watch()', () => {
	const dcs = d.watch([{$match: {operationType: 'insert'}}], {maxAwaitTimeMS: 100});
	const ccs = db.getMongo().watch([{$match: {'ns.db': 'e2e_cs_sh_2'}}], {maxAwaitTimeMS: 100});
	d.other.insertOne({_id: 'x'});
	db.getSiblingDB('e2e_cs_sh_2').c.insertOne({_id: 'y'});
	eq(nextOf(dcs).ns, {db: 'e2e_cs_sh', coll: 'other'});
	eq(nextOf(ccs).documentKey, {_id: 'y'});
	dcs.close();
	ccs.close();
});

test('stages after $changeStream: allowed ones run, others refused (20)', () => {
	const cs = d.reviews.watch([{$project: {operationType: 1, 'fullDocument.rating': 1}}, {$addFields: {seen: true}}], {maxAwaitTimeMS: 100});
	d.reviews.insertOne({_id: 2, rating: 3, text: 'long'});
	const e = nextOf(cs);
	eq(e.fullDocument, {rating: 3});
	eq(e.seen, true);
	cs.close();
	eq(code(() => d.runCommand({aggregate: 'reviews', pipeline: [{$changeStream: {}}, {$sort: {x: 1}}], cursor: {}})), 20);
	eq(code(() => db.getSiblingDB('local').watch()), 73);
});

test('updateDescription as mongod logs operator updates; disambiguatedPaths', () => {
	d.amb.insertOne({_id: 1, a: {'1': 1}, arr: [{'0': 'x'}]});
	const cs = d.amb.watch([], {showExpandedEvents: true, maxAwaitTimeMS: 100});
	d.amb.updateOne({_id: 1}, {$set: {'a.1': 2, 'arr.0.0': 'y'}});
	const e = nextOf(cs);
	eq(e.updateDescription.updatedFields, {'a.1': 2, 'arr.0.0': 'y'});
	eq(e.updateDescription.disambiguatedPaths, {'a.1': ['a', '1'], 'arr.0.0': ['arr', 0, '0']});
	cs.close();
});

test('$changeStreamSplitLargeEvent: a 27 MB event in three fragments', () => {
	d.createCollection('big', {changeStreamPreAndPostImages: {enabled: true}});
	d.big.insertOne({_id: 1, s: 'a'.repeat(9 * 1024 * 1024)});
	const opts = {fullDocument: 'required', fullDocumentBeforeChange: 'required', maxAwaitTimeMS: 100};
	const cs = d.big.watch([{$changeStreamSplitLargeEvent: {}}], opts);
	d.big.updateOne({_id: 1}, {$set: {s: 'b'.repeat(9 * 1024 * 1024)}});
	const f = [nextOf(cs), nextOf(cs), nextOf(cs)];
	eq(f.map((x) => x.splitEvent), [{fragment: 1, of: 3}, {fragment: 2, of: 3}, {fragment: 3, of: 3}]);
	eq(f[0].operationType, 'update');
	ok(f[0]._id._data < f[1]._id._data && f[1]._id._data < f[2]._id._data, 'fragment tokens in order');
	cs.close();
	const again = d.big.watch([{$changeStreamSplitLargeEvent: {}}], Object.assign({resumeAfter: f[0]._id}, opts));
	eq(nextOf(again).splitEvent, {fragment: 2, of: 3});
	again.close();
	eq(code(() => d.runCommand({aggregate: 'big', pipeline: [{$changeStream: {}}, {$changeStreamSplitLargeEvent: {}}, {$match: {}}], cursor: {}})), 7182802);
	eq(code(() => d.runCommand({aggregate: 'big', pipeline: [{$changeStream: {resumeAfter: f[0]._id}}], cursor: {}})), 280);
});

test('changeStreamOptions through setClusterParameter / getClusterParameter', () => {
	const admin = db.getSiblingDB('admin');
	const set = (v) => admin.runCommand({setClusterParameter: {changeStreamOptions: {preAndPostImages: {expireAfterSeconds: v}}}});
	eq(code(() => set(0)), 2);
	eq(code(() => set(-10)), 2);
	eq(code(() => set('never')), 2);
	eq(code(() => admin.runCommand({getClusterParameter: 'nothing'})), 4);
	eq(set(86400).ok, 1);
	const p = admin.runCommand({getClusterParameter: '*'}).clusterParameters;
	eq(p.length, 1);
	eq(p[0]._id, 'changeStreamOptions');
	eq(Number(p[0].preAndPostImages.expireAfterSeconds), 86400);
	ok(p[0].clusterParameterTime.t > 0, 'clusterParameterTime stamped');
	eq(set('off').ok, 1);
	eq(admin.runCommand({getClusterParameter: ['changeStreamOptions']}).clusterParameters[0].preAndPostImages,
	    {expireAfterSeconds: 'off'});
});

done();
