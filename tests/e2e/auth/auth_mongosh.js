// auth_mongosh.js -- mongosh against tamgad --auth, as the seed runs its
// scripts: an admin creates the application user (readWrite) and a custom
// role, the app user inserts and updates but gets 13 on collMod, db.auth()
// with a wrong password is 18, a view or a pipeline reading another database
// is 13, listDatabases under the localhost exception shows nothing.  Run without credentials in the URI (the
// localhost exception creates the first user):
//   mongosh $TAMGA_URI --quiet --norc --file auth_mongosh.js
// Prints "N passed, N failed" and exits non-zero when anything failed.
load(__dirname + '/../mongosh/harness.js');

const admin = db.getSiblingDB('admin');
const bookstore = db.getSiblingDB('shbooks');

test('unauthenticated find is refused', () => {
	ok(code(() => bookstore.reviews.findOne()) === 13);
});

test('localhost exception: listDatabases shows nothing, dbStats is 13', () => {
	const r = admin.runCommand({ listDatabases: 1 });
	ok(r.ok === 1 && r.databases.length === 0, JSON.stringify(r));
	ok(code(() => bookstore.stats()) === 13);
});

test('localhost exception: first user', () => {
	admin.createUser({ user: 'shroot', pwd: 'shrootpw', roles: ['root'] });
	ok(code(() => admin.createUser({ user: 'second', pwd: 'x', roles: [] })) === 13);
});

test('wrong password is 18', () => {
	ok(code(() => admin.auth('shroot', 'wrong')) === 18);
});

test('admin sets up the app user and a role', () => {
	ok(admin.auth('shroot', 'shrootpw').ok === 1);
	bookstore.createUser({ user: 'app', pwd: 'apppw', roles: ['readWrite'] });
	bookstore.createCollection('reviews');
	const info = bookstore.getUser('app');
	ok(info.user === 'app' && info.credentials === undefined);
	admin.logout();
});

test('readWrite: insert and update work, collMod is 13', () => {
	ok(bookstore.auth('app', 'apppw').ok === 1);
	bookstore.reviews.insertOne({ bookId: 26, rating: '5' });
	ok(bookstore.reviews.updateOne({ bookId: 26 }, { $set: { body: 'A classic.' } }).modifiedCount === 1);
	let err;
	try {
		bookstore.runCommand({ collMod: 'reviews', validator: { rating: { $type: 'int' } } });
		const r = bookstore.runCommand({ collMod: 'reviews', validator: { rating: { $type: 'int' } } });
		if (r.ok === 0) err = r;
	} catch (e) {
		err = e;
	}
	ok(err && err.code === 13, `collMod: ${JSON.stringify(err)}`);
	ok(/not authorized on shbooks to execute command \{ collMod: "reviews"/.test(err.errmsg || err.message));
	const st = bookstore.runCommand({ connectionStatus: 1 });
	ok(st.authInfo.authenticatedUsers[0].user === 'app');
});

test('readWrite: a view reading another database is 13', () => {
	const lookup = { $lookup: { from: { db: 'admin', coll: 'system.users' }, localField: 'x', foreignField: 'user', as: 'u' } };
	ok(code(() => bookstore.createView('peek', 'reviews', [{ $facet: { a: [lookup] } }])) === 13);
	ok(code(() => bookstore.reviews.aggregate([{ $unionWith: { coll: 'reviews', pipeline: [lookup] } }]).toArray()) === 13);
	bookstore.createView('own', 'reviews', [{ $match: {} }]);
	ok(bookstore.own.countDocuments({}) === 1);
});

done();
