// unified-runner.js -- a Unified Test Format runner on the official Node
// driver, for the spec tests in ../shared/conformance (run.sh: crud-unified on
// a standalone; the transactions, retryable, sessions and run-command folders
// on a replica set, whose topology "replicaset" comes from hello's setName).
//
//   node unified-runner.js <uri> <dir-or-file>... [--filter substring] [--verbose]
//   node unified-runner.js --uri-from-env ...   (TAMGA_URI, as set by with_tamgad.sh)
//
// For every file: runOnRequirements, createEntities, initialData, each test's
// operations (expectResult, expectError), expectEvents (through the driver's
// command monitoring) and outcome.  Prints per file, per folder and in total
// "N passed, N failed, N skipped" with the reason of each skip.  A test that
// throws, times out or uses something the runner does not implement is never
// counted as passed: it fails, or is skipped with the reason given.
// Tests that only exercise the driver (isClientError everywhere, the
// *-validation files) are counted on their own line, not in the total.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const mongodbPath = path.join(__dirname, '../clients/node_modules/mongodb');
const mongodb = require(mongodbPath);
const { MongoClient, MongoServerError, MongoBulkWriteError, BSON } = mongodb;
const { EJSON, Long, Int32, Double, Decimal128, ObjectId, Binary, Timestamp } = BSON;

const TEST_TIMEOUT_MS = 20000;

class Skip extends Error {}

// ---- values and matching ----------------------------------------------------

function typeOf(v) {
	if (v === undefined) return 'undefined';
	if (v === null) return 'null';
	if (typeof v === 'number') return Number.isInteger(v) ? 'intlike' : 'double';
	if (typeof v === 'bigint') return 'long';
	if (typeof v === 'string') return 'string';
	if (typeof v === 'boolean') return 'bool';
	if (Array.isArray(v)) return 'array';
	if (v instanceof Date) return 'date';
	switch (v._bsontype) {
	case 'Int32': return 'int';
	case 'Long': return 'long';
	case 'Double': return 'double';
	case 'Decimal128': return 'decimal';
	case 'ObjectId': case 'ObjectID': return 'objectId';
	case 'Binary': return 'binData';
	case 'Timestamp': return 'timestamp';
	case 'BSONRegExp': return 'regex';
	case 'MinKey': return 'minKey';
	case 'MaxKey': return 'maxKey';
	case 'Code': return 'javascript';
	case 'BSONSymbol': return 'symbol';
	}
	if (v instanceof RegExp) return 'regex';
	return 'object';
}

function isNumeric(v) {
	const t = typeOf(v);
	return t === 'intlike' || t === 'double' || t === 'int' || t === 'long';
}

function numValue(v) {
	if (typeof v === 'number') return v;
	if (typeof v === 'bigint') return Number(v);
	if (v._bsontype === 'Long') return v.toNumber();
	return Number(v.valueOf());
}

function typeMatches(actual, alias) {
	const t = typeOf(actual);
	switch (alias) {
	case 'int': return t === 'int' || t === 'intlike';
	case 'long': return t === 'long' || t === 'intlike';
	case 'double': return t === 'double' || t === 'intlike';
	case 'number': return isNumeric(actual) || t === 'decimal';
	case 'object': return t === 'object';
	default: return t === alias;
	}
}

function show(v) {
	try { return EJSON.stringify(v, { relaxed: true }); } catch (e) { return String(v); }
}

class Mismatch extends Error {}

// Match per the spec's "Evaluating Matches": root-level documents may carry
// extra fields; nested ones may not; numbers compare by value.
function match(expected, actual, ctx, where, root) {
	if (actual instanceof Map) actual = Object.fromEntries([...actual.entries()].map(([k, v]) => [String(k), v]));
	const fail = (msg) => { throw new Mismatch(`${where || '(root)'}: ${msg}: expected ${show(expected)}, got ${show(actual)}`); };
	const et = typeOf(expected);
	if (et === 'object') {
		const keys = Object.keys(expected);
		if (keys.length === 1 && keys[0].startsWith('$$')) {
			return matchOperator(keys[0], expected[keys[0]], actual, ctx, where, root);
		}
		if (typeOf(actual) !== 'object') fail('not a document');
		for (const k of keys) {
			const ev = expected[k];
			if (typeOf(ev) === 'object' && Object.keys(ev).length === 1) {
				const op = Object.keys(ev)[0];
				if (op === '$$exists') {
					if ((actual[k] !== undefined) !== ev[op]) fail(`field ${k} $$exists ${ev[op]}`);
					continue;
				}
				if (op === '$$unsetOrMatches' && actual[k] === undefined) continue;
			}
			if (!(k in actual)) fail(`missing field ${k}`);
			match(ev, actual[k], ctx, where ? `${where}.${k}` : k, false);
		}
		if (!root) {
			for (const k of Object.keys(actual)) {
				if (!(k in expected)) fail(`unexpected field ${k}`);
			}
		}
		return;
	}
	if (et === 'array') {
		if (!Array.isArray(actual)) fail('not an array');
		if (actual.length !== expected.length) fail(`array length ${actual.length} != ${expected.length}`);
		// documents of a root-level array (find's result) are root-level too
		expected.forEach((e, i) => match(e, actual[i], ctx, `${where}[${i}]`, root));
		return;
	}
	if (isNumeric(expected)) {
		if (!isNumeric(actual) || numValue(actual) !== numValue(expected)) fail('numbers differ');
		return;
	}
	if (et === 'decimal') {
		if (typeOf(actual) !== 'decimal' || actual.toString() !== expected.toString()) fail('decimals differ');
		return;
	}
	if (et === 'null') {
		if (actual !== null) fail('not null');
		return;
	}
	if (et === 'date') {
		if (!(actual instanceof Date) || actual.getTime() !== expected.getTime()) fail('dates differ');
		return;
	}
	if (et === 'objectId' || et === 'binData' || et === 'timestamp' || et === 'regex' || et === 'javascript') {
		if (show(expected) !== show(actual)) fail('values differ');
		return;
	}
	if (expected !== actual) fail('values differ');
}

function matchOperator(op, arg, actual, ctx, where, root) {
	const fail = (msg) => { throw new Mismatch(`${where || '(root)'}: ${op} ${msg}: got ${show(actual)}`); };
	switch (op) {
	case '$$unsetOrMatches':
		if (actual === undefined) return;
		return match(arg, actual, ctx, where, root);
	case '$$exists':
		if ((actual !== undefined) !== arg) fail(`${arg}`);
		return;
	case '$$type': {
		const aliases = Array.isArray(arg) ? arg : [arg];
		if (!aliases.some((a) => typeMatches(actual, a))) fail(`not of type ${aliases.join('|')}`);
		return;
	}
	case '$$matchesEntity':
		return match(ctx.entity(arg), actual, ctx, where, root);
	case '$$lte':
		if (!isNumeric(actual) || numValue(actual) > numValue(arg)) fail(`> ${show(arg)}`);
		return;
	case '$$sessionLsid': {
		const s = ctx.entity(arg);
		if (!s || !s.id || show(s.id) !== show(actual)) fail('not the session lsid');
		return;
	}
	case '$$matchAsDocument':
		if (typeof actual !== 'string') fail('not a string');
		return match(arg, EJSON.parse(actual, { relaxed: false }), ctx, where, false);
	case '$$matchAsRoot':
		return match(arg, actual, ctx, where, true);
	case '$$matchesHexBytes':
		if (typeOf(actual) !== 'binData' || Buffer.from(actual.buffer).toString('hex') !== arg.toLowerCase())
			fail('bytes differ');
		return;
	default:
		throw new Skip(`matcher ${op} is not implemented by the runner`);
	}
}

// ---- requirements ------------------------------------------------------------

function versionCmp(a, b) {
	const pa = a.split('.').map(Number), pb = b.split('.').map(Number);
	for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
		const x = pa[i] || 0, y = pb[i] || 0;
		if (x !== y) return x < y ? -1 : 1;
	}
	return 0;
}

async function requirementsUnmet(reqs, server) {
	if (!reqs || reqs.length === 0) return null;
	const reasons = [];
	for (const r of reqs) {
		const why = [];
		if (r.minServerVersion && versionCmp(server.version, r.minServerVersion) < 0)
			why.push(`minServerVersion ${r.minServerVersion}`);
		if (r.maxServerVersion && versionCmp(server.version, r.maxServerVersion) > 0)
			why.push(`maxServerVersion ${r.maxServerVersion}`);
		if (r.topologies && !r.topologies.includes(server.topology || 'single'))
			why.push(`topologies ${r.topologies.join('/')} only (this server: ${server.topology || 'single'})`);
		if (r.serverless === 'require') why.push('serverless only');
		if (r.auth === true && !server.auth) why.push('auth required');
		if (r.auth === false && server.auth) why.push('no auth required');
		if (r.csfle) why.push('csfle');
		if (r.authMechanism) why.push(`authMechanism ${r.authMechanism}`);
		if (r.serverParameters) {
			for (const [k, v] of Object.entries(r.serverParameters)) {
				let got;
				try {
					got = (await server.admin.command({ getParameter: 1, [k]: 1 }))[k];
				} catch (e) { got = undefined; }
				try { match(v, got, null, k, true); } catch (e) { why.push(`serverParameter ${k}`); }
			}
		}
		if (why.length === 0) return null;
		reasons.push(why.join(', '));
	}
	return `runOnRequirements not met (${reasons.join('; ')})`;
}

// ---- entities ------------------------------------------------------------------

const SENSITIVE = new Set(['hello', 'ismaster', 'isMaster', 'saslStart', 'saslContinue', 'getnonce',
	'authenticate', 'createUser', 'updateUser', 'copydbgetnonce', 'copydbsaslstart', 'copydb']);

function readConcern(o) { return o && o.readConcern ? o.readConcern : undefined; }

// A spec readPreference ({mode, tagSets, maxStalenessSeconds, hedge} or a
// bare mode) as the driver's ReadPreference, every option kept.
function readPref(rp) {
	if (typeof rp === 'string' || rp instanceof mongodb.ReadPreference) return rp;
	const opts = {};
	if (rp.maxStalenessSeconds !== undefined) opts.maxStalenessSeconds = numValue(rp.maxStalenessSeconds);
	if (rp.hedge !== undefined) opts.hedge = rp.hedge;
	return new mongodb.ReadPreference(rp.mode, rp.tagSets || rp.tags, opts);
}

function dbCollOptions(o) {
	const out = {};
	if (!o) return out;
	if (o.readConcern) out.readConcern = o.readConcern;
	if (o.writeConcern) out.writeConcern = o.writeConcern;
	if (o.readPreference) out.readPreference = readPref(o.readPreference);
	if (o.timeoutMS !== undefined) throw new Skip('timeoutMS (CSOT) is not implemented by the runner');
	return out;
}

// The unified format's CMAP event names and the Node driver's.
const CMAP_EVENTS = new Map([
	['poolCreatedEvent', 'connectionPoolCreated'], ['poolReadyEvent', 'connectionPoolReady'],
	['poolClearedEvent', 'connectionPoolCleared'], ['poolClosedEvent', 'connectionPoolClosed'],
	['connectionCreatedEvent', 'connectionCreated'], ['connectionReadyEvent', 'connectionReady'],
	['connectionClosedEvent', 'connectionClosed'], ['connectionCheckOutStartedEvent', 'connectionCheckOutStarted'],
	['connectionCheckOutFailedEvent', 'connectionCheckOutFailed'], ['connectionCheckedOutEvent', 'connectionCheckedOut'],
	['connectionCheckedInEvent', 'connectionCheckedIn'],
]);

class Entities {
	constructor(uri) {
		this.uri = uri;
		this.cmapEvents = new Map();
		this.map = new Map();
		this.clients = [];
		this.events = new Map();   // client id -> [{type, event}]
	}
	entity(id) {
		if (!this.map.has(id)) throw new Error(`no entity ${id}`);
		return this.map.get(id);
	}
	async create(list) {
		for (const item of list) {
			const [kind, spec] = Object.entries(item)[0];
			if (kind === 'client') {
				const opts = { serverSelectionTimeoutMS: 5000, ...(spec.uriOptions || {}) };
				if (spec.serverApi) opts.serverApi = spec.serverApi;
				if (spec.observeEvents) opts.monitorCommands = true;
				if (spec.storeEventsAsEntities) throw new Skip('storeEventsAsEntities is not implemented by the runner');
				const c = new MongoClient(this.uri, opts);
				const evs = [];
				this.events.set(spec.id, evs);
				const ignore = new Set(spec.ignoreCommandMonitoringEvents || []);
				const observe = new Set(spec.observeEvents || []);
				const rec = (type) => (ev) => {
					if (!observe.has(type)) return;
					if (SENSITIVE.has(ev.commandName) || ignore.has(ev.commandName)) return;
					/* the failPoint operation's own command is never observed (UTF spec) */
					if (ev.commandName === 'configureFailPoint') return;
					/* the command as it was sent: the driver may change an object
					 * it shares with a later command (driver 6.22 assigns the
					 * client's readConcern document to a transaction's first
					 * command and adds afterClusterTime to it in place) */
					if (ev.command !== undefined)
						ev = { ...ev, command: mongodb.BSON.deserialize(mongodb.BSON.serialize(ev.command), { promoteLongs: false }) };
					evs.push({ type, ev });
				};
				/* connection pool (CMAP) events, in their own list: the
				 * driver's event names without the spec's "Event" suffix
				 * (pool* are the driver's connectionPool*) */
				const pool = [];
				this.cmapEvents.set(spec.id, pool);
				for (const type of observe) {
					if (!CMAP_EVENTS.has(type)) continue;
					c.on(CMAP_EVENTS.get(type), (ev) => pool.push({ type, ev }));
				}
				c.on('commandStarted', rec('commandStartedEvent'));
				c.on('commandSucceeded', rec('commandSucceededEvent'));
				c.on('commandFailed', rec('commandFailedEvent'));
				/* a client whose readPreference no member meets (secondary on a
				 * one-member set) connects on its first operation: connect()
				 * would select a server with it, fail and close the client */
				const rp = spec.uriOptions && spec.uriOptions.readPreference;
				if (!rp || rp === 'primary' || rp === 'primaryPreferred' || rp === 'nearest') await c.connect();
				/* connect() with credentials checks them with a ping of its
				 * own (a checkout): the runner's call, not the test's */
				pool.length = 0;
				this.clients.push(c);
				this.map.set(spec.id, c);
			} else if (kind === 'database') {
				const c = this.entity(spec.client);
				this.map.set(spec.id, c.db(spec.databaseName, dbCollOptions(spec.databaseOptions)));
			} else if (kind === 'collection') {
				const d = this.entity(spec.database);
				this.map.set(spec.id, d.collection(spec.collectionName, dbCollOptions(spec.collectionOptions)));
			} else if (kind === 'session') {
				const c = this.entity(spec.client);
				const so = { ...(spec.sessionOptions || {}) };
				if (so.defaultTransactionOptions) so.defaultTransactionOptions = txnOptions(so.defaultTransactionOptions);
				/* snapshotTime names an entity a getSnapshotTime saved */
				if (typeof so.snapshotTime === 'string') so.snapshotTime = this.entity(so.snapshotTime);
				this.map.set(spec.id, c.startSession(so));
			} else if (kind === 'bucket') {
				/* the driver's GridFS bucket over a database entity; its reads
				 * are finds on <bucketName>.files / .chunks (retryable reads) */
				const d = this.entity(spec.database);
				this.map.set(spec.id, new mongodb.GridFSBucket(d, { ...(spec.bucketOptions || {}) }));
			} else {
				throw new Skip(`entity type ${kind} is not implemented by the runner`);
			}
		}
	}
	async close() {
		for (const v of this.map.values()) {
			if (v && typeof v.endSession === 'function') {
				try { await v.endSession(); } catch (e) { /* ignore */ }
			}
		}
		for (const c of this.clients) {
			try { await c.close(); } catch (e) { /* ignore */ }
		}
	}
}

// ---- operations ------------------------------------------------------------------

function lower(v) { return typeof v === 'string' ? v.toLowerCase() : v; }

// Options are read by the driver as plain JS values: numeric wrappers from
// canonical Extended JSON (Int32, Double, Long) become numbers, also inside
// `sort` (whose directions the driver checks with ===).
function plainOption(k, v) {
	if (v !== null && typeof v === 'object' && isNumeric(v)) return numValue(v);
	if (k === 'sort' && typeOf(v) === 'object') {
		return Object.fromEntries(Object.entries(v).map(([f, d]) => [f, isNumeric(d) && typeof d === 'object' ? numValue(d) : d]));
	}
	return v;
}

// UTF argument names that are options for the driver call.
function splitArgs(args, positional, ents) {
	const pos = positional.map((k) => args[k]);
	const opts = {};
	for (const [k, v] of Object.entries(args || {})) {
		if (positional.includes(k)) continue;
		if (k === 'session') opts.session = ents.entity(v);
		else if (k === 'returnDocument') opts.returnDocument = lower(v);
		else if (k === 'timeoutMS') throw new Skip('timeoutMS (CSOT) is not implemented by the runner');
		else opts[k] = plainOption(k, v);
	}
	return [pos, opts];
}

function plainModel(a) {
	return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, plainOption(k, v)]));
}

function bulkModels(requests) {
	return requests.map((r) => {
		const [name, a] = Object.entries(r)[0];
		return { [name]: plainModel(a) };
	});
}

function clientBulkModels(models) {
	return models.map((m) => {
		const [name, a] = Object.entries(m)[0];
		return { name, ...plainModel(a) };
	});
}

// watch() on a collection, a database or a client; the driver sends the
// aggregate lazily, the spec wants it (and its error) here: the cursor is
// initialised before the stream is handed back.
async function createChangeStream(w, a, e) {
	const [[p], o] = splitArgs(a, ['pipeline'], e);
	const cs = w.watch(p || [], o);
	try {
		await cs.cursor.cursorInit();
	} catch (err) {
		await cs.close().catch(() => {});
		throw err;
	}
	return cs;
}

const CHANGE_STREAM_OPS = {
	iterateUntilDocumentOrError: (cs) => cs.next(),
	iterateOnce: (cs) => cs.tryNext(),
	close: (cs) => cs.close(),
};

// A cursor entity (createCommandCursor); tryNext answers null on an empty
// batch of a tailable cursor and leaves it open
const CURSOR_OPS = {
	iterateUntilDocumentOrError: (c) => c.next(),
	iterateOnce: (c) => c.tryNext(),
	close: (c) => c.close(),
};

const COLLECTION_OPS = {
	insertOne: (c, a, e) => { const [[doc], o] = splitArgs(a, ['document'], e); return c.insertOne(doc, o); },
	insertMany: (c, a, e) => { const [[docs], o] = splitArgs(a, ['documents'], e); return c.insertMany(docs, o); },
	deleteOne: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.deleteOne(f, o); },
	deleteMany: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.deleteMany(f, o); },
	updateOne: (c, a, e) => { const [[f, u], o] = splitArgs(a, ['filter', 'update'], e); return c.updateOne(f, u, o); },
	updateMany: (c, a, e) => { const [[f, u], o] = splitArgs(a, ['filter', 'update'], e); return c.updateMany(f, u, o); },
	replaceOne: (c, a, e) => { const [[f, r], o] = splitArgs(a, ['filter', 'replacement'], e); return c.replaceOne(f, r, o); },
	find: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.find(f || {}, o).toArray(); },
	findOne: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.findOne(f || {}, o); },
	findOneAndUpdate: (c, a, e) => { const [[f, u], o] = splitArgs(a, ['filter', 'update'], e); return c.findOneAndUpdate(f, u, o); },
	findOneAndReplace: (c, a, e) => { const [[f, r], o] = splitArgs(a, ['filter', 'replacement'], e); return c.findOneAndReplace(f, r, o); },
	findOneAndDelete: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.findOneAndDelete(f, o); },
	countDocuments: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.countDocuments(f || {}, o); },
	estimatedDocumentCount: (c, a, e) => { const [, o] = splitArgs(a, [], e); return c.estimatedDocumentCount(o); },
	count: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.count(f || {}, o); },
	distinct: (c, a, e) => { const [[k, f], o] = splitArgs(a, ['fieldName', 'filter'], e); return c.distinct(k, f || {}, o); },
	aggregate: (c, a, e) => { const [[p], o] = splitArgs(a, ['pipeline'], e); return c.aggregate(p, o).toArray(); },
	bulkWrite: (c, a, e) => { const [[r], o] = splitArgs(a, ['requests'], e); return c.bulkWrite(bulkModels(r), o); },
	createIndex: (c, a, e) => { const [[k], o] = splitArgs(a, ['keys'], e); return c.createIndex(k, o); },
	dropIndex: (c, a, e) => { const [[n], o] = splitArgs(a, ['name'], e); return c.dropIndex(n, o); },
	listIndexes: (c, a, e) => { const [, o] = splitArgs(a, [], e); return c.listIndexes(o).toArray(); },
	listIndexNames: (c, a, e) => { const [, o] = splitArgs(a, [], e); return c.listIndexes(o).toArray().then((l) => l.map((x) => x.name)); },
	createChangeStream: (w, a, e) => createChangeStream(w, a, e),
	drop: (c, a, e) => { const [, o] = splitArgs(a, [], e); return c.drop(o); },
	rename: (c, a, e) => { const [[to], o] = splitArgs(a, ['to'], e); return c.rename(to, o); },
};

// A download's bytes as one Binary ($$matchesHexBytes compares them); the
// stream's error (no such file, a failed find) rejects.
function downloadAll(stream) {
	return new Promise((resolve, reject) => {
		const parts = [];
		stream.on('data', (b) => parts.push(b));
		stream.on('error', reject);
		stream.on('end', () => resolve(new mongodb.Binary(Buffer.concat(parts))));
	});
}

const BUCKET_OPS = {
	download: (b, a, e) => { const [[id], o] = splitArgs(a, ['id'], e); return downloadAll(b.openDownloadStream(id, o)); },
	downloadByName: (b, a, e) => {
		const [[name], o] = splitArgs(a, ['filename'], e);
		return downloadAll(b.openDownloadStreamByName(name, o));
	},
};

const DATABASE_OPS = {
	runCommand: (d, a, e) => {
		const [[cmd], o] = splitArgs(a, ['command', 'commandName'], e);
		if (o.readPreference) o.readPreference = readPref(o.readPreference);
		return d.command(cmd, o);
	},
	aggregate: (d, a, e) => { const [[p], o] = splitArgs(a, ['pipeline'], e); return d.aggregate(p, o).toArray(); },
	createCollection: (d, a, e) => { const [[n], o] = splitArgs(a, ['collection'], e); return d.createCollection(n, o); },
	dropCollection: (d, a, e) => { const [[n], o] = splitArgs(a, ['collection'], e); return d.dropCollection(n, o); },
	listCollections: (d, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return d.listCollections(f || {}, o).toArray(); },
	listCollectionNames: (d, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return d.listCollections(f || {}, { ...o, nameOnly: true }).toArray().then((l) => l.map((x) => x.name)); },
	listCollectionObjects: (d, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return d.listCollections(f || {}, o).toArray(); },
	createChangeStream: (w, a, e) => createChangeStream(w, a, e),
	// the run-command spec: a command whose reply is a cursor, iterated to the end
	runCursorCommand: (d, a, e) => {
		const [[cmd], o] = splitArgs(a, ['command', 'commandName'], e);
		const opts = {};
		if (o.session) opts.session = o.session;
		if (o.batchSize !== undefined) opts.batchSize = o.batchSize;
		if (o.comment !== undefined) opts.comment = o.comment;
		if (o.maxTimeMS !== undefined) opts.maxTimeMS = o.maxTimeMS;
		if (o.timeoutMode !== undefined || o.timeoutMS !== undefined) throw new Skip('timeoutMS (CSOT) is not implemented by the runner');
		const cur = d.runCursorCommand(cmd, opts);
		if (o.batchSize !== undefined) cur.setBatchSize(o.batchSize);
		if (o.maxTimeMS !== undefined) cur.setMaxTimeMS(o.maxTimeMS);
		if (o.comment !== undefined) cur.setComment(o.comment);
		return cur.toArray();
	},
	// the same command's cursor kept as an entity: its first batch is fetched
	// here (a reply without a cursor fails now), the rest by iterateOnce /
	// iterateUntilDocumentOrError, close kills it
	createCommandCursor: async (d, a, e) => {
		const [[cmd], o] = splitArgs(a, ['command', 'commandName'], e);
		const opts = {};
		if (o.session) opts.session = o.session;
		if (o.comment !== undefined) opts.comment = o.comment;
		if (o.cursorType === 'tailable' || o.cursorType === 'tailableAwait') opts.tailable = true;
		if (o.cursorType === 'tailableAwait') opts.awaitData = true;
		if (o.timeoutMode !== undefined || o.timeoutMS !== undefined) throw new Skip('timeoutMS (CSOT) is not implemented by the runner');
		const cur = d.runCursorCommand(cmd, opts);
		if (o.batchSize !== undefined) cur.setBatchSize(o.batchSize);
		if (o.maxTimeMS !== undefined) cur.setMaxTimeMS(o.maxTimeMS);
		await cur.hasNext();
		return cur;
	},
	modifyCollection: (d, a, e) => { const [[n], o] = splitArgs(a, ['collection'], e); return d.command({ collMod: n, ...o }); },
};

const CLIENT_OPS = {
	listDatabases: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.db('admin').admin().listDatabases({ ...o, filter: f }); },
	listDatabaseNames: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.db('admin').admin().listDatabases({ ...o, filter: f, nameOnly: true }).then((r) => r.databases.map((x) => x.name)); },
	listDatabaseObjects: (c, a, e) => { const [[f], o] = splitArgs(a, ['filter'], e); return c.db('admin').admin().listDatabases({ ...o, filter: f }).then((r) => r.databases); },
	createChangeStream: (w, a, e) => createChangeStream(w, a, e),
	clientBulkWrite: (c, a, e) => { const [[m], o] = splitArgs(a, ['models'], e); return c.bulkWrite(clientBulkModels(m), o); },
};

// ---- sessions and transactions (the session entity's operations) -------------

function txnOptions(o) {
	const out = {};
	if (!o) return out;
	if (o.readConcern) out.readConcern = o.readConcern;
	if (o.writeConcern) out.writeConcern = o.writeConcern;
	if (o.readPreference) out.readPreference = readPref(o.readPreference);
	if (o.maxCommitTimeMS !== undefined) out.maxCommitTimeMS = numValue(o.maxCommitTimeMS);
	if (o.timeoutMS !== undefined) throw new Skip('timeoutMS (CSOT) is not implemented by the runner');
	return out;
}

const SESSION_OPS = {
	startTransaction: (s, a) => { s.startTransaction(txnOptions(a)); return undefined; },
	commitTransaction: (s) => s.commitTransaction(),
	abortTransaction: (s) => s.abortTransaction(),
	endSession: (s) => s.endSession(),
	getSnapshotTime: (s) => s.snapshotTime,
	withTransaction: (s, a, e) => s.withTransaction(async () => {
		const was = e.inCallback;
		e.inCallback = true;
		try { await runOps(a.callback || [], e); } finally { e.inCallback = was; }
	}, txnOptions(a)),
};

async function sessionRunnerOp(op, ents) {
	const a = op.arguments || {};
	switch (op.name) {
	case 'assertSessionTransactionState': {
		const s = ents.entity(a.session);
		const states = { none: 'NO_TRANSACTION', starting: 'STARTING_TRANSACTION',
			in_progress: 'TRANSACTION_IN_PROGRESS', committed: 'TRANSACTION_COMMITTED',
			aborted: 'TRANSACTION_ABORTED' };
		const got = s.transaction && s.transaction.state;
		if (got !== states[a.state]) throw new Mismatch(`session transaction state ${got}, expected ${a.state}`);
		return true;
	}
	case 'assertSessionPinned':
	case 'assertSessionUnpinned': {
		const s = ents.entity(a.session);
		const pinned = !!(s.transaction && s.transaction.server);
		/* a replica set never pins (mongos only) */
		if (op.name === 'assertSessionPinned' && !pinned) throw new Mismatch('session not pinned');
		if (op.name === 'assertSessionUnpinned' && pinned) throw new Mismatch('session pinned');
		return true;
	}
	case 'assertSessionDirty':
	case 'assertSessionNotDirty': {
		const s = ents.entity(a.session);
		const dirty = !!(s.serverSession && s.serverSession.isDirty);
		if (dirty !== (op.name === 'assertSessionDirty')) throw new Mismatch(`session dirty: ${dirty}`);
		return true;
	}
	case 'assertSameLsidOnLastTwoCommands':
	case 'assertDifferentLsidOnLastTwoCommands': {
		const evs = (ents.events.get(a.client) || []).filter((x) => x.type === 'commandStartedEvent');
		if (evs.length < 2) throw new Mismatch('fewer than two commands');
		const l1 = evs[evs.length - 2].ev.command.lsid, l2 = evs[evs.length - 1].ev.command.lsid;
		const same = EJSON.stringify(l1) === EJSON.stringify(l2);
		if (same !== (op.name === 'assertSameLsidOnLastTwoCommands')) throw new Mismatch(`lsids same: ${same}`);
		return true;
	}
	case 'targetedFailPoint': {
		/* one server: the session's pinned server is this one */
		const s = ents.entity(a.session);
		const c = s.client;
		await c.db('admin').command(a.failPoint);
		ents.failPoints.push({ client: c, name: a.failPoint.configureFailPoint });
		return true;
	}
	default:
		return false;
	}
}

async function runnerOp(op, ents) {
	if ((await sessionRunnerOp(op, ents)) === true) return undefined;
	const a = op.arguments || {};
	switch (op.name) {
	case 'failPoint': {
		const c = ents.entity(a.client);
		try {
			await c.db('admin').command(a.failPoint);
		} catch (e) {
			if (e.code === 59) throw new Skip('configureFailPoint answered 59 (the server runs without enableTestCommands)');
			throw e;
		}
		ents.failPoints.push({ client: c, name: a.failPoint.configureFailPoint });
		return;
	}
	case 'assertCollectionExists':
	case 'assertCollectionNotExists': {
		// the spec's "internal MongoClient": not a test client, whose events are checked
		const c = ents.internal;
		const names = (await c.db(a.databaseName).listCollections({}, { nameOnly: true }).toArray()).map((x) => x.name);
		const exists = names.includes(a.collectionName);
		if (exists !== (op.name === 'assertCollectionExists'))
			throw new Mismatch(`${op.name} ${a.databaseName}.${a.collectionName}`);
		return;
	}
	case 'assertIndexExists':
	case 'assertIndexNotExists': {
		const c = ents.internal;
		let names = [];
		try {
			names = (await c.db(a.databaseName).collection(a.collectionName).listIndexes().toArray()).map((x) => x.name);
		} catch (e) { if (e.code !== 26) throw e; }
		if (names.includes(a.indexName) !== (op.name === 'assertIndexExists'))
			throw new Mismatch(`${op.name} ${a.indexName}`);
		return;
	}
	case 'createEntities':
		return ents.create(a.entities);
	default:
		throw new Skip(`testRunner operation ${op.name} is not implemented by the runner`);
	}
}

async function runOp(op, ents) {
	if (op.object === 'testRunner') return runnerOp(op, ents);
	const target = ents.entity(op.object);
	let table;
	if (target instanceof mongodb.Collection) table = COLLECTION_OPS;
	else if (target instanceof mongodb.Db) table = DATABASE_OPS;
	else if (target instanceof MongoClient) table = CLIENT_OPS;
	else if (target instanceof mongodb.ClientSession) table = SESSION_OPS;
	else if (target instanceof mongodb.ChangeStream) table = CHANGE_STREAM_OPS;
	else if (target instanceof mongodb.GridFSBucket) table = BUCKET_OPS;
	else if (target instanceof mongodb.AbstractCursor) table = CURSOR_OPS;
	else throw new Skip(`operations on ${op.object} are not implemented by the runner`);
	const fn = table[op.name];
	if (!fn) throw new Skip(`operation ${op.name} is not implemented by the runner`);
	return fn(target, op.arguments || {}, ents);
}

// Normalise driver results into the shapes the spec's expectResult uses.
function resultForMatch(r) {
	if (r && typeof r === 'object' && r.constructor && r.constructor.name === 'BulkWriteResult') {
		return {
			insertedCount: r.insertedCount, matchedCount: r.matchedCount, modifiedCount: r.modifiedCount,
			deletedCount: r.deletedCount, upsertedCount: r.upsertedCount, upsertedIds: r.upsertedIds,
			insertedIds: r.insertedIds,
		};
	}
	// the client bulkWrite's result (a plain object in driver 6.x)
	if (r && typeof r === 'object' && ((r.constructor && r.constructor.name === 'ClientBulkWriteResult') ||
		('insertResults' in r && 'updateResults' in r && 'deleteResults' in r))) {
		const out = {
			insertedCount: r.insertedCount, upsertedCount: r.upsertedCount, matchedCount: r.matchedCount,
			modifiedCount: r.modifiedCount, deletedCount: r.deletedCount,
		};
		for (const k of ['insertResults', 'updateResults', 'deleteResults']) {
			if (r[k]) out[k] = Object.fromEntries([...r[k].entries()].map(([i, v]) => [String(i), v]));
		}
		// the CRUD spec's client UpdateResult is {matchedCount, modifiedCount,
		// upsertedId}: the Node driver adds didUpsert, which no test lists
		if (out.updateResults) {
			for (const [i, v] of Object.entries(out.updateResults)) {
				const u = { matchedCount: v.matchedCount, modifiedCount: v.modifiedCount };
				if (v.upsertedId !== undefined && v.upsertedId !== null) u.upsertedId = v.upsertedId;
				out.updateResults[i] = u;
			}
		}
		return out;
	}
	return r;
}

function isServerError(e) {
	return e instanceof MongoServerError || (e && e.name === 'MongoBulkWriteError') ||
		(e && e.name === 'MongoClientBulkWriteError') || (e && e.name === 'MongoWriteConcernError');
}

function checkError(exp, e, ctx) {
	if (exp.isClientError === true && isServerError(e)) throw new Mismatch(`expected a client error, got ${e.name}: ${e.message}`);
	if (exp.isClientError === false && !isServerError(e)) throw new Mismatch(`expected a server error, got ${e.name}: ${e.message}`);
	if (exp.isTimeoutError) throw new Skip('isTimeoutError (CSOT) is not implemented by the runner');
	if (exp.errorContains !== undefined &&
		!String(e.message).toLowerCase().includes(exp.errorContains.toLowerCase()))
		throw new Mismatch(`error "${e.message}" does not contain "${exp.errorContains}"`);
	const code = e.code !== undefined ? e.code : (e.errorResponse && e.errorResponse.code !== undefined ?
		e.errorResponse.code : (e.cause && e.cause.code));
	if (exp.errorCode !== undefined && (code === undefined || numValue(code) !== numValue(exp.errorCode)))
		throw new Mismatch(`error code ${code} != ${exp.errorCode} (${e.message})`);
	if (exp.errorCodeName !== undefined && e.codeName !== exp.errorCodeName &&
		!(e.errorResponse && e.errorResponse.codeName === exp.errorCodeName))
		throw new Mismatch(`error codeName ${e.codeName} != ${exp.errorCodeName}`);
	for (const l of exp.errorLabelsContain || [])
		if (!(e.hasErrorLabel && e.hasErrorLabel(l))) throw new Mismatch(`error label ${l} missing`);
	for (const l of exp.errorLabelsOmit || [])
		if (e.hasErrorLabel && e.hasErrorLabel(l)) throw new Mismatch(`error label ${l} present`);
	if (exp.errorResponse !== undefined) {
		// a client bulkWrite error carries the server's reply in its cause
		const resp = (e.name === 'MongoClientBulkWriteError' && e.cause && e.cause.errorResponse) || e.errorResponse || e;
		match(exp.errorResponse, resp, ctx, 'errorResponse', true);
	}
	if (exp.expectResult !== undefined) {
		const partial = e.result || e.partialResult;
		match(exp.expectResult, resultForMatch(partial), ctx, 'expectError.expectResult', true);
	}
	// writeErrors: exactly the expected indexes, each write error matched as
	// a root-level document; writeConcernErrors: in order, each root-level
	if (exp.writeErrors !== undefined) {
		const we = e.writeErrors instanceof Map ? Object.fromEntries([...e.writeErrors.entries()].map(([i, v]) => [String(i), v])) : (e.writeErrors || {});
		const want = Object.keys(exp.writeErrors).sort(), got = Object.keys(we).sort();
		if (want.join(',') !== got.join(','))
			throw new Mismatch(`writeErrors: indexes ${got.join(',') || '(none)'}, expected ${want.join(',')}`);
		for (const k of want) match(exp.writeErrors[k], we[k], ctx, `writeErrors.${k}`, true);
	}
	if (exp.writeConcernErrors !== undefined) {
		const wce = e.writeConcernErrors || [];
		if (wce.length !== exp.writeConcernErrors.length)
			throw new Mismatch(`writeConcernErrors: ${wce.length}, expected ${exp.writeConcernErrors.length}`);
		exp.writeConcernErrors.forEach((w, i) => match(w, wce[i], ctx, `writeConcernErrors[${i}]`, true));
	}
}

// Node driver 6.22 (sessions.js, without CSOT) merges {wtimeoutMS: 10000}
// into every commitTransaction's writeConcern, where the spec adds it to
// retried commits only: the observed command is compared without that
// wtimeout when the expected writeConcern names none.
function withoutDriverWtimeout(want, got) {
	if (!got || !got.writeConcern || got.writeConcern.wtimeout === undefined || !want || !want.writeConcern ||
		typeof want.writeConcern !== 'object' || 'wtimeout' in want.writeConcern ||
		!(got.commitTransaction || got.abortTransaction) || numValue(got.writeConcern.wtimeout) !== 10000)
		return got;
	const wc = { ...got.writeConcern };
	delete wc.wtimeout;
	return { ...got, writeConcern: wc };
}

// CMAP events: the same kinds in the same order; the fields a spec names
// (a reason, hasServiceId) compared as the driver reports them.
function checkCmapEvents(ee, ents) {
	const actual = ents.cmapEvents.get(ee.client) || [];
	const want = ee.events;
	if (ee.ignoreExtraEvents ? actual.length < want.length : actual.length !== want.length)
		throw new Mismatch(`client ${ee.client}: ${actual.length} CMAP events, expected ${want.length}: ` +
			actual.map((a) => a.type).join(', '));
	want.forEach((w, i) => {
		const [wtype, wspec] = Object.entries(w)[0];
		if (actual[i].type !== wtype) throw new Mismatch(`CMAP event ${i}: ${actual[i].type}, expected ${wtype}`);
		for (const [k, v] of Object.entries(wspec || {})) {
			if (k === 'hasServiceId') {
				if ((actual[i].ev.serviceId !== undefined) !== v) throw new Mismatch(`CMAP event ${i}: hasServiceId ${!v}`);
			} else {
				match(v, actual[i].ev[k], ents, `CMAP event ${i} ${k}`, true);
			}
		}
	});
}

function checkEvents(expectEvents, ents) {
	for (const ee of expectEvents) {
		const type = ee.eventType || 'command';
		if (type === 'cmap') {
			checkCmapEvents(ee, ents);
			continue;
		}
		if (type !== 'command') throw new Skip(`expectEvents of type ${type} are not implemented by the runner`);
		const actual = (ents.events.get(ee.client) || []);
		const want = ee.events;
		if (ee.ignoreExtraEvents ? actual.length < want.length : actual.length !== want.length)
			throw new Mismatch(`client ${ee.client}: ${actual.length} events, expected ${want.length}: ` +
				actual.map((a) => `${a.type}:${a.ev.commandName}`).join(', '));
		want.forEach((w, i) => {
			const [wtype, wspec] = Object.entries(w)[0];
			const a = actual[i];
			if (a.type !== wtype) throw new Mismatch(`event ${i}: ${a.type} (${a.ev.commandName}), expected ${wtype}`);
			if (wspec.commandName !== undefined && a.ev.commandName !== wspec.commandName)
				throw new Mismatch(`event ${i}: command ${a.ev.commandName}, expected ${wspec.commandName}`);
			if (wspec.databaseName !== undefined && a.ev.databaseName !== wspec.databaseName)
				throw new Mismatch(`event ${i}: database ${a.ev.databaseName}, expected ${wspec.databaseName}`);
			if (wspec.command !== undefined) match(wspec.command, withoutDriverWtimeout(wspec.command, a.ev.command), ents,
				`event ${i} command`, true);
			if (wspec.reply !== undefined) match(wspec.reply, a.ev.reply, ents, `event ${i} reply`, true);
			if (wspec.hasServiceId !== undefined || wspec.hasServerConnectionId !== undefined) {
				/* load-balanced only; a standalone has no serviceId */
				if (wspec.hasServiceId === true) throw new Mismatch('hasServiceId on a standalone');
			}
		});
	}
}

// ---- data setup and outcome ---------------------------------------------------------

async function setupData(client, initialData) {
	for (const d of initialData || []) {
		const db = client.db(d.databaseName);
		await db.collection(d.collectionName).drop({ writeConcern: { w: 'majority' } }).catch((e) => {
			if (e.code !== 26) throw e;
		});
		if (d.createOptions || !d.documents || d.documents.length === 0) {
			await db.createCollection(d.collectionName, { writeConcern: { w: 'majority' }, ...(d.createOptions || {}) });
		}
		if (d.documents && d.documents.length > 0) {
			await db.collection(d.collectionName).insertMany(d.documents, { writeConcern: { w: 'majority' } });
		}
	}
}

async function checkOutcome(client, outcome, ents) {
	for (const o of outcome || []) {
		const docs = await client.db(o.databaseName).collection(o.collectionName)
			.find({}, { sort: { _id: 1 }, readConcern: { level: 'local' } }).toArray();
		match(o.documents, docs, ents, `outcome ${o.databaseName}.${o.collectionName}`, false);
	}
}

// ---- running ------------------------------------------------------------------------

function withTimeout(p, ms, what) {
	let t;
	return Promise.race([p, new Promise((_, rej) => { t = setTimeout(() => rej(new Error(`timeout after ${ms} ms in ${what}`)), ms); })])
		.finally(() => clearTimeout(t));
}

// Where the Node driver itself departs from the spec test (nothing the
// server can change): a test that fails in exactly this way is skipped with
// the reason instead (one that passes still counts as passed).
const DRIVER_DEVIATIONS = [
	// ClientSession ignores the snapshotTime option in driver 6.22 (its
	// first snapshot read then takes none: the server answers the latest)
	[/with snapshot and snapshot ?[tT]ime/, /./, 'Node driver 6.22 has no snapshotTime session option'],
	// causal consistency: the spec expects afterClusterTime on a session's
	// writes too; driver 6.22 sends readConcern only on reads and in
	// transactions
	[/./, /missing field readConcern: expected \{"insert"/,
		'Node driver 6.22 sends no readConcern.afterClusterTime on writes outside transactions'],
	// client backpressure (SystemOverloadedError / RetryableError labels) is a
	// newer driver feature than 6.22
	[/backpressure labels/, /./, 'Node driver 6.22 does not retry on backpressure (SystemOverloadedError) labels'],
	[/passes bypassDocumentValidation: false/, /missing field bypassDocumentValidation/,
		'Node driver 6.22 omits bypassDocumentValidation: false from the command'],
	// NODE-6468: the driver replaces _id: null with a new ObjectId before
	// sending the insert (the command carries no null _id)
	[/^inserting _id with type null via/, /countDocuments: numbers differ: expected 1, got 0/,
		'Node driver 6.22 replaces a null _id with an ObjectId (NODE-6468)'],
	// NODE-6384: the driver sets partialResult even when no write succeeded
	[/^partialResult is unset when/, /expectError\.expectResult: field insertedCount \$\$exists false/,
		'Node driver 6.22 sets partialResult when no write succeeded (NODE-6384)'],
	// the server's reply carries errorLabels: ["RetryableWriteError"] (checked
	// by hand against tamgad); driver 6.22's client bulkWrite error drops them
	[/^client bulkWrite .*(retryable top-level error|retryWrites: false does not retry)/,
		/error label RetryableWriteError missing/,
		'Node driver 6.22 drops a client bulkWrite top-level error\'s errorLabels'],
	// a client-side check (isClientError) driver 6.22 lacks: it drops the
	// writeConcern and sends the bulkWrite, which the transaction runs
	[/^client bulkWrite with writeConcern in a transaction/, /expected an error/,
		'Node driver 6.22 does not refuse a writeConcern on a client bulkWrite in a transaction'],
	// the bulkWrite failed before anything was inserted (tamgad's reply: no
	// insert applied); driver 6.22 reports the request's ids as inserted
	[/^First insertOne is never committed/, /insertedIds: unexpected field 0/,
		'Node driver 6.22 reports insertedIds of a bulkWrite whose inserts never ran'],
];

// tests a single-member replica set cannot meet: they select a secondary
// (the client's readPreference: secondary), and there is none to select
const TOPOLOGY_NEEDS = [
	[/^(run command with secondary read preference in client option|readPreference inherited from client)/,
		/Server selection timed out/, 'needs a secondary member (a single-member replica set has none)'],
];

function driverOnly(file, test) {
	if (/-validation\.json$/.test(file)) return true;
	const ops = test.operations || [];
	return ops.length > 0 && ops.every((op) => op.expectError && op.expectError.isClientError === true);
}

// Run operations with their expectations (a test's, or a withTransaction
// callback's: an error it expects is caught there, one it does not expect is
// thrown on to withTransaction, which retries or aborts as the driver does).
async function runOps(ops, ents) {
	for (const op of ops) {
		let result, error;
		try {
			result = await runOp(op, ents);
		} catch (e) {
			if (e instanceof Skip || e instanceof Mismatch) throw e;
			error = e;
		}
		/* a network error inside withTransaction's callback still reaches
		 * withTransaction (callback-retry.json's "callback succeeds after
		 * multiple connection errors" expects its abort and retry) */
		if (op.ignoreResultAndError && ents.inCallback && error && /MongoNetwork/.test(error.name)) throw error;
		if (op.ignoreResultAndError) continue;
		if (op.expectError) {
			if (!error) throw new Mismatch(`${op.name}: expected an error, got ${show(resultForMatch(result))}`);
			checkError(op.expectError, error, ents);
			/* UTF: inside withTransaction's callback an expected error is
			 * still raised, for withTransaction to act on */
			if (ents.inCallback) throw error;
		} else if (error) {
			if (ents.inCallback) throw error;
			throw new Mismatch(`${op.name}: unexpected error ${error.name} ${error.code !== undefined ? error.code + ' ' : ''}${error.message}`);
		} else {
			if (op.expectResult !== undefined) match(op.expectResult, resultForMatch(result), ents, op.name, true);
			if (op.saveResultAsEntity) ents.map.set(op.saveResultAsEntity, result);
		}
	}
}

async function runTest(file, spec, test, server, verbose) {
	const skipReason = test.skipReason || (await requirementsUnmet(test.runOnRequirements, server));
	if (skipReason) return { status: 'skip', reason: skipReason };
	const ents = new Entities(server.uri);
	ents.internal = server.client;
	ents.failPoints = [];
	try {
		await setupData(server.client, spec.initialData);
		await ents.create(spec.createEntities || []);
		await runOps(test.operations || [], ents);
		if (test.expectEvents) checkEvents(test.expectEvents, ents);
		await checkOutcome(server.client, test.outcome, ents);
		return { status: 'pass' };
	} catch (e) {
		if (e instanceof Skip) return { status: 'skip', reason: e.message };
		return { status: 'fail', reason: e instanceof Mismatch ? e.message : `${e.name}: ${e.message}` };
	} finally {
		for (const fp of ents.failPoints) {
			await fp.client.db('admin').command({ configureFailPoint: fp.name, mode: 'off' }).catch(() => {});
		}
		await ents.close();
	}
}

// Whether a test's requirements (its file's and its own) fail on a
// standalone and hold on a replica set of this server's version.
async function needsReplset(spec, test, server) {
	const as = (topology) => ({ ...server, topology });
	const unmet = async (sv) => (await requirementsUnmet(spec.runOnRequirements, sv)) ||
		(await requirementsUnmet(test.runOnRequirements, sv));
	if (test.skipReason) return false;
	return (await unmet(as('single'))) !== null && (await unmet(as('replicaset'))) === null;
}

// The URI with a root user's credentials, the user created first (the
// localhost exception lets the first user be created unauthenticated).
async function authUri(uri) {
	const user = 'conformance', pwd = 'conformance-pw';
	const c = new MongoClient(uri, { serverSelectionTimeoutMS: 10000 });
	try {
		await c.connect();
		await c.db('admin').command({ createUser: user, pwd, roles: ['root'] });
	} finally {
		await c.close().catch(() => {});
	}
	const u = new URL(uri);
	u.username = user;
	u.password = pwd;
	u.searchParams.set('authSource', 'admin');
	return u.toString();
}

async function main() {
	const args = process.argv.slice(2);
	const verbose = args.includes('--verbose');
	let filter = null;
	const fi = args.indexOf('--filter');
	if (fi >= 0) { filter = args[fi + 1]; args.splice(fi, 2); }
	const pos = args.filter((a) => !a.startsWith('--'));
	let uri = args.includes('--uri-from-env') ? process.env.TAMGA_URI : pos.shift();
	// --auth: the server runs with --auth and no user yet; the runner creates
	// one through the localhost exception and every client authenticates
	// (SCRAM) as it, so handshakes carry saslStart / saslContinue
	const auth = args.includes('--auth');
	if (auth) uri = await authUri(uri);
	// --auth-files-elsewhere: a file every test of which needs auth is left
	// to the --auth run (counted there, not here); the --auth run runs only
	// those files
	const authElsewhere = args.includes('--auth-files-elsewhere');
	// --replset-tests-elsewhere (a standalone's run): a test that only a
	// replica set can run is left to the replica set's run of the same
	// files, --only-replset-tests (that run) runs only those tests
	const replsetElsewhere = args.includes('--replset-tests-elsewhere');
	const onlyReplset = args.includes('--only-replset-tests');
	const files = [];
	for (const p of pos) {
		if (fs.statSync(p).isDirectory()) {
			for (const f of fs.readdirSync(p).sort()) if (f.endsWith('.json')) files.push(path.join(p, f));
		} else files.push(p);
	}
	// the runner's own client (initialData, outcome, fail points off): not
	// under test, so it does not depend on retryable writes
	const client = new MongoClient(uri, { serverSelectionTimeoutMS: 10000, retryWrites: false });
	await client.connect();
	const bi = await client.db('admin').command({ buildInfo: 1 });
	const hello = await client.db('admin').command({ hello: 1 });
	// a replica-set member answers hello with setName (txn's sessions section)
	const topology = hello.setName ? 'replicaset' : hello.msg === 'isdbgrid' ? 'sharded' : 'single';
	const server = { uri, client, admin: client.db('admin'), version: bi.version, topology, auth };
	console.log(`# server ${bi.version} (tamga ${bi.tamgaVersion || '?'}) at ${uri}, topology ${topology}`);

	const total = { pass: 0, fail: 0, skip: 0 };
	const drv = { pass: 0, fail: 0, skip: 0 };
	const skipReasons = new Map();
	let serverDown = null;
	const alive = async () => {
		const c = new MongoClient(uri, { serverSelectionTimeoutMS: 2000 });
		try { await c.connect(); await c.db('admin').command({ ping: 1 }); return true; } catch (e) { return false; }
		finally { await c.close().catch(() => {}); }
	};
	const folders = new Map();   // folder -> {pass, fail, skip}
	for (const file of files) {
		const name = path.basename(file);
		const folder = path.basename(path.dirname(file));
		if (!folders.has(folder)) folders.set(folder, { pass: 0, fail: 0, skip: 0 });
		if (filter && !name.includes(filter)) continue;
		let spec;
		try {
			spec = EJSON.parse(fs.readFileSync(file, 'utf8'), { relaxed: false });
		} catch (e) {
			console.log(`${name}: cannot parse: ${e.message}`);
			total.fail++;
			continue;
		}
		const reqs = spec.runOnRequirements || [];
		const authOnly = reqs.length > 0 && reqs.every((r) => r.auth === true);
		if (authElsewhere && authOnly) {
			console.log(`${name}: needs auth, runs in the --auth run`);
			continue;
		}
		/* the --auth run is for the files that need it; the rest ran without */
		if (auth && !authOnly) continue;
		const counts = { pass: 0, fail: 0, skip: 0 };
		const lines = [];
		const fileSkip = await requirementsUnmet(spec.runOnRequirements, server);
		for (const test of spec.tests || []) {
			if (replsetElsewhere || onlyReplset) {
				const moved = await needsReplset(spec, test, server);
				if (replsetElsewhere && moved) continue;
				if (onlyReplset && !moved) continue;
			}
			const bucket = driverOnly(name, test) ? drv : total;
			let r;
			if (fileSkip) r = { status: 'skip', reason: fileSkip };
			else if (serverDown) r = { status: 'fail', reason: serverDown };
			else {
				try {
					r = await withTimeout(runTest(name, spec, test, server, verbose), TEST_TIMEOUT_MS, test.description);
				} catch (e) {
					r = { status: 'fail', reason: e.message };
				}
			}
			if (r.status === 'fail') {
				const dev = DRIVER_DEVIATIONS.find(([d, f]) => d.test(test.description) && f.test(r.reason));
				if (dev) r = { status: 'skip', reason: `driver deviation: ${dev[2]}` };
				const need = TOPOLOGY_NEEDS.find(([d, f]) => d.test(test.description) && f.test(r.reason));
				if (!dev && need) r = { status: 'skip', reason: need[2] };
			}
			if (r.status === 'fail' && /ECONNREFUSED|closed|ServerSelection|MongoNetwork/.test(r.reason) && !(await alive()))
				serverDown = `the server stopped answering (crashed?) during ${name}: ${test.description}`;
			counts[r.status]++;
			bucket[r.status]++;
			if (bucket === total) folders.get(folder)[r.status]++;
			if (r.status === 'skip') skipReasons.set(r.reason, (skipReasons.get(r.reason) || 0) + 1);
			if (r.status !== 'pass' || verbose)
				lines.push(`  ${r.status === 'pass' ? 'ok' : r.status === 'skip' ? 'skip' : 'not ok'} - ${test.description}${r.reason ? ': ' + r.reason : ''}`);
		}
		/* a run over a few tests of its files names only the files it ran */
		if ((onlyReplset || auth) && counts.pass + counts.fail + counts.skip === 0 && lines.length === 0) continue;
		console.log(`${name}: ${counts.pass} passed, ${counts.fail} failed, ${counts.skip} skipped`);
		for (const l of lines) console.log(l);
	}
	await client.close();
	console.log('');
	console.log('# skip reasons');
	for (const [r, n] of [...skipReasons.entries()].sort((a, b) => b[1] - a[1])) console.log(`#   ${n} x ${r}`);
	console.log(`# driver-side only tests (not in the total): ${drv.pass} passed, ${drv.fail} failed, ${drv.skip} skipped`);
	for (const [f, n] of folders) console.log(`folder ${f}: ${n.pass} passed, ${n.fail} failed, ${n.skip} skipped`);
	console.log(`total: ${total.pass} passed, ${total.fail} failed, ${total.skip} skipped`);
	process.exitCode = total.fail > 0 ? 1 : 0;
}

main().catch((e) => {
	console.error(`runner error: ${e.stack || e}`);
	process.exit(2);
});
