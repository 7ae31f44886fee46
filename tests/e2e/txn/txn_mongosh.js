// txn_mongosh.js -- mongosh's session.startTransaction() against a `tamgad
// --replSet`: commit, abort, reads inside and outside, the errors a shell
// user meets (251 after an abort, 263 for count, 20 never).
load(__dirname + '/../mongosh/harness.js');

// the one-member set: initiated here, then writable primary
{
	const r = db.adminCommand({replSetInitiate: {}});
	if (!r.ok && r.code !== 23) throw new Error('replSetInitiate: ' + tojson(r));
	for (let i = 0; i < 100 && !db.adminCommand({hello: 1}).isWritablePrimary; i++) sleep(100);
}
const name = 'e2e_txn_sh';
db.getSiblingDB(name).dropDatabase();
const plain = db.getSiblingDB(name);
plain.createCollection('books');
plain.createCollection('reviews');
plain.books.insertOne({_id: 1, reviewCount: 0, ratingSum: 0});

test('startTransaction / commitTransaction', () => {
	const session = db.getMongo().startSession();
	const sdb = session.getDatabase(name);
	session.startTransaction({readConcern: {level: 'snapshot'}, writeConcern: {w: 'majority'}});
	sdb.reviews.insertOne({bookId: 1, rating: 3});
	sdb.books.updateOne({_id: 1}, {$inc: {reviewCount: 1, ratingSum: 3}});
	eq(sdb.books.findOne({_id: 1}).reviewCount, 1, 'inside');
	eq(plain.books.findOne({_id: 1}).reviewCount, 0, 'outside before commit');
	session.commitTransaction();
	eq(plain.books.findOne({_id: 1}).reviewCount, 1, 'after commit');
	session.endSession();
});

test('abortTransaction leaves nothing', () => {
	const session = db.getMongo().startSession();
	const sdb = session.getDatabase(name);
	session.startTransaction();
	sdb.reviews.insertOne({bookId: 1, rating: 1});
	session.abortTransaction();
	eq(plain.reviews.countDocuments({}), 1, 'reviews');
	session.endSession();
});

test('count is refused inside, the next statement answers 251', () => {
	const session = db.getMongo().startSession();
	const sdb = session.getDatabase(name);
	session.startTransaction();
	// mongosh throws the error of a command in a transaction
	const r = err(() => { const x = sdb.runCommand({count: 'books'}); if (!x.ok) throw x; });
	eq(r.code, 263, 'count');
	ok(/Cannot run 'count' in a multi-document transaction/.test(r.msg), r.msg);
	// refused before the transaction began (as mongod): the next statement
	// finds no transaction to continue
	const next = err(() => sdb.books.findOne({_id: 1}));
	eq(next.code, 251, 'next statement');
	try { session.abortTransaction(); } catch (e) { /* nothing to abort */ }
	session.endSession();
});

test('TXN verbosity 3 writes mongod\'s D3 20507 / 20508 as commit / abort start (2: nothing)', () => {
	const admin = db.getSiblingDB('admin');
	const lines = (id) => admin.runCommand({getLog: 'global'}).log.map((l) => JSON.parse(l)).filter((l) => l.id === id);
	const txn = (commit) => {
		const s = db.getMongo().startSession();
		s.startTransaction();
		s.getDatabase(name).reviews.insertOne({bookId: 9, rating: 5});
		if (commit)
			s.commitTransaction();
		else
			s.abortTransaction();
		s.endSession();
	};
	const verb = (v) => admin.runCommand({setParameter: 1, logComponentVerbosity: {transaction: {verbosity: v}}});
	const before = lines(20507).length;
	verb(2);
	txn(true);
	eq(lines(20507).length, before, 'nothing at 2');
	verb(3);
	txn(true);
	txn(false);
	verb(-1);
	const cl = lines(20507), al = lines(20508);
	eq(cl.length, before + 1, 'commit line');
	eq(al.length, 1, 'abort line');
	const c = cl[cl.length - 1], a = al[0];
	eq([c.s, c.c, c.msg, a.s, a.c, a.msg].join('|'),
		'D3|TXN|Received commitTransaction|D3|TXN|Received abortTransaction', 'lines');
	for (const l of [c, a])
		ok(Number(l.attr.txnNumberAndRetryCounter.txnNumber) >= 1 && /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/.test(l.attr.sessionId.id.$uuid), 'attrs (the lsid as $uuid) ' + JSON.stringify(l.attr));
});

test('serverStatus.transactions', () => {
	const t = db.adminCommand({serverStatus: 1}).transactions;
	ok(t.totalCommitted >= 1, 'committed');
	ok(t.totalStarted >= 2, 'started');
});

done();
