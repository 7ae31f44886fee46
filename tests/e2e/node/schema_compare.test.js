// schema_compare.test.js -- tamgaInferSchema's per-field statistics against
// the mongodb-schema npm package (the analysis behind Compass's schema tab) on
// the same documents: the bookstore's reviews and customers (examples/
// bookstore/data), read back through the Node driver with BSON types kept
// (promoteValues: false), every document of each.  Paths, presence counts and
// probabilities, and per-type counts must agree (mongodb-schema's type names
// mapped to $jsonSchema's bsonType names).  TAMGA_URI from with_tamgad.sh.
'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const clients = path.join(__dirname, '../../clients/node_modules');
const { MongoClient, BSON } = require(path.join(clients, 'mongodb'));
const { EJSON } = BSON;
const { parseSchema } = require(path.join(clients, 'mongodb-schema'));

const uri = process.env.TAMGA_URI || 'mongodb://127.0.0.1:27017';
const data = path.join(__dirname, '../../../examples/bookstore/data');
let client, db;

// mongodb-schema's names -> bsonType
const TYPES = { Int32: 'int', Double: 'double', Long: 'long', Decimal128: 'decimal', String: 'string',
	Date: 'date', ObjectId: 'objectId', Document: 'object', Array: 'array', Boolean: 'bool', Null: 'null',
	Binary: 'binData', Timestamp: 'timestamp', BSONRegExp: 'regex', RegExp: 'regex' };

before(async () => {
	client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	await client.connect();
	db = client.db('e2e_schema_compare');
	await db.dropDatabase().catch(() => {});
	for (const name of ['reviews', 'customers']) {
		const docs = fs.readFileSync(path.join(data, name + '.json'), 'utf8').split('\n').filter(l => l.trim())
			.map(l => EJSON.parse(l, { relaxed: false }));
		await db.collection(name).insertMany(docs);
	}
});
after(async () => {
	if (client) await client.close();
});

// mongodb-schema's fields, flattened: path -> {count, probability, types: {bsonType: count}}
function flatten(fields, prefix, out) {
	for (const f of fields) {
		const p = prefix + f.name;
		const types = {};
		for (const t of f.types) {
			if (t.name === 'Undefined')
				continue;
			types[TYPES[t.name] || t.name] = t.count;
			if (t.name === 'Document' && t.fields)
				flatten(t.fields, p + '.', out);
		}
		out[p] = { count: f.count, probability: f.probability, types };
	}
	return out;
}

for (const name of ['reviews', 'customers']) {
	test(`${name}: tamgaInferSchema's statistics are mongodb-schema's`, async () => {
		const docs = await db.collection(name).find({}, { promoteValues: false }).toArray();
		const theirs = flatten((await parseSchema(docs)).fields, '', {});
		const ours = await db.command({ tamgaInferSchema: name });
		assert.equal(Number(ours.sampled), docs.length);
		const mine = {};
		for (const f of ours.fields) {
			if (f.path.endsWith('[]'))
				continue;   // array elements: mongodb-schema reports them inside the Array type
			const types = {};
			for (const t of f.types)
				types[t.bsonType] = Number(t.count);
			mine[f.path] = { count: Number(f.count), probability: f.probability, types };
		}
		assert.deepEqual(Object.keys(mine).sort(), Object.keys(theirs).sort());
		for (const p of Object.keys(theirs)) {
			assert.equal(mine[p].count, theirs[p].count, `${p} count`);
			assert.ok(Math.abs(mine[p].probability - theirs[p].probability) < 1e-12, `${p} probability`);
			assert.deepEqual(mine[p].types, theirs[p].types, `${p} types`);
		}
	});
}
