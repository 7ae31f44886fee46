// cs_mongosh.js -- mongosh's watch() against a `tamgad --replSet`: a
// collection's, a database's and the deployment's stream, tryNext() and
// getResumeToken(), resuming with resumeAfter, and the standalone-only
// errors a shell user meets.
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

done();
