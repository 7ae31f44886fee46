// rs_mongosh.js -- a single-node replica set through mongosh, as a new user
// meets it: tamgad --replSet rs0 not yet initiated (hello as mongod's ghost
// member, writes refused with NotWritablePrimary), rs.initiate(),
// rs.status(), rs.conf(), db.hello(), rs.initiate() again (23), concerns in
// a set and fail points.  Run on `tamgad --replSet rs0 --setParameter
// enableTestCommands=1` (tests/e2e/CMakeLists.txt).  Prints "N passed,
// N failed".
let passed = 0, failed = 0;
function check(name, cond, detail) {
	if (cond) { passed++; print('ok - ' + name); }
	else { failed++; print('not ok - ' + name + (detail !== undefined ? ': ' + JSON.stringify(detail) : '')); }
}
function code(fn) {
	try { fn(); return 0; } catch (e) { return e.code; }
}
// Before initiation mongosh's own startup reads may get 13436 (mongod's
// answer there too), after which the driver waits for its monitor to see
// the server again: retry what failed only on server selection.
function codeRetrying(fn) {
	for (let i = 0; ; i++) {
		try { fn(); return 0; } catch (e) {
			if (e.name === 'MongoServerSelectionError' && i < 20) { sleep(300); continue; }
			return e.code;
		}
	}
}
// The result is taken into a variable inside the try: mongosh's implicit
// await does not apply to `return fn()`, so a rejection there escaped the catch.
function retrying(fn, tries = 20) {
	for (let i = 0; ; i++) {
		try { const r = fn(); return r; } catch (e) {
			if (e.name !== 'MongoServerSelectionError' || i >= tries) throw e;
			sleep(300);
		}
	}
}

const admin = db.getSiblingDB('admin');
let h = db.hello();
check('before initiation: isreplicaset', h.isreplicaset === true, h);
check('before initiation: not writable', h.isWritablePrimary === false && h.secondary === false, h);
check('before initiation: no setName', h.setName === undefined, h);
check('before initiation: replSetGetStatus 94', codeRetrying(() => admin.runCommand({ replSetGetStatus: 1 })) === 94);

const r = retrying(() => rs.initiate());
check('rs.initiate() without a config', r.ok === 1 && r.info2 !== undefined && /:\d+$/.test(r.me), r);
for (let i = 0; i < 100 && !db.hello().isWritablePrimary; i++) sleep(100);
h = db.hello();
check('hello: primary of rs0', h.isWritablePrimary === true && h.setName === 'rs0' && h.secondary === false, h);
check('hello: me, primary, hosts', h.me === r.me && h.primary === r.me && h.hosts.length === 1 && h.hosts[0] === r.me, h);
check('hello: electionId of term 1', h.electionId.toHexString() === '7fffffff0000000000000001', h.electionId);
check('hello: setVersion 1', Number(h.setVersion) === 1);
check('hello: lastWrite', h.lastWrite && h.lastWrite.opTime && h.lastWrite.majorityOpTime && h.lastWrite.lastWriteDate instanceof Date, h.lastWrite);
check('hello: topologyVersion moved', Number(h.topologyVersion.counter) >= 1, h.topologyVersion);
check('rs.initiate() again: 23 AlreadyInitialized', code(() => rs.initiate()) === 23);

const s = rs.status();
check('rs.status(): set, myState, term', s.set === 'rs0' && s.myState === 1 && Number(s.term) === 1, s);
const m = s.members[0];
check('rs.status(): the member', s.members.length === 1 && m._id === 0 && m.name === r.me && m.health === 1 &&
	m.state === 1 && m.stateStr === 'PRIMARY' && m.self === true, m);
check('rs.status(): optime, election', m.optime.ts instanceof Timestamp && m.optimeDate instanceof Date &&
	m.electionTime instanceof Timestamp && m.electionDate instanceof Date, m);
check('rs.status(): optimes', s.optimes && s.optimes.appliedOpTime && s.optimes.durableOpTime, s.optimes);
const ecm = s.electionCandidateMetrics;
check('rs.status(): electionCandidateMetrics of the initiate', ecm && ecm.lastElectionReason === 'electionTimeout' &&
	Number(ecm.electionTerm) === 1 && ecm.numVotesNeeded === 1 && ecm.priorityAtElection === 1 &&
	Number(ecm.electionTimeoutMillis) === 10000 && ecm.lastElectionDate instanceof Date &&
	ecm.lastCommittedOpTimeAtElection.ts instanceof Timestamp, ecm);
const em = db.serverStatus().electionMetrics;
check('serverStatus().electionMetrics: the initiate\'s election', Number(em.electionTimeout.called) === 1 &&
	Number(em.electionTimeout.successful) === 1 && Number(em.stepUpCmd.called) === 0 &&
	Number(em.priorityTakeover.called) === 0 && Number(em.freezeTimeout.called) === 0 &&
	Number(em.numStepDownsCausedByHigherTerm) === 0, em);

const c = rs.conf();
check('rs.conf()', c._id === 'rs0' && c.version === 1 && c.members.length === 1 && c.members[0].host === r.me &&
	c.members[0].priority === 1 && c.members[0].votes === 1 && c.settings.replicaSetId !== undefined, c);

// a reconfig through rs.reconfig (version bumped by the shell)
c.members[0].tags = { dc: 'east' };
c.settings.getLastErrorModes = { east: { dc: 1 } };
const rr = rs.reconfig(c);
check('rs.reconfig()', rr.ok === 1, rr);
check('rs.conf() after reconfig', rs.conf().version === 2 && rs.conf().members[0].tags.dc === 'east');
// a second member on a set initiated with one (it runs without Raft): the
// set moves onto Raft only once the new member answered mongod's quorum
// check -- one that does not answer is 74, and nothing changed (a member
// that does answer: e2e.replset_grow)
check('rs.add() of a member that does not answer: 74', code(() => rs.add('127.0.0.1:1')) === 74);
check('rs.conf() kept after the refused rs.add()', rs.conf().version === 2 && rs.conf().members.length === 1, rs.conf());
check('still the writable primary', db.hello().isWritablePrimary === true);

// writes and concerns in a set
const t = db.getSiblingDB('e2e_rs').c;
t.drop();
const w = db.getSiblingDB('e2e_rs').runCommand({ insert: 'c', documents: [{ _id: 1 }] });
check('insert: ok with operationTime and $clusterTime', w.ok === 1 && w.n === 1 && w.operationTime instanceof Timestamp &&
	w.$clusterTime && w.$clusterTime.clusterTime instanceof Timestamp, w);
// a writeConcernError comes back as MongoWriteConcernError (the write applied)
function wce(cmd) {
	try { db.getSiblingDB('e2e_rs').runCommand(cmd); return 0; } catch (e) { return e.code; }
}
check('w: 3 writes, then writeConcernError 100', wce({ insert: 'c', documents: [{ _id: 2 }], writeConcern: { w: 3 } }) === 100);
check('... and the write applied', t.countDocuments({ _id: 2 }) === 1);
const wc = db.getSiblingDB('e2e_rs').runCommand({ insert: 'c', documents: [{ _id: 3 }], writeConcern: { w: 'east' } });
check('w: "east" (a getLastErrorModes mode) is satisfied', wc.n === 1 && wc.writeConcernError === undefined, wc);
check('w: "west" unknown mode: writeConcernError 79', wce({ insert: 'c', documents: [{ _id: 4 }], writeConcern: { w: 'west' } }) === 79);
check('w: 51: FailedToParse', code(() => db.getSiblingDB('e2e_rs').runCommand({ insert: 'c', documents: [{ _id: 5 }], writeConcern: { w: 51 } })) === 9);
check('readConcern unknown: BadValue', code(() => t.find().readConcern('unknown').toArray()) === 2);
check('readConcern snapshot in a set', t.find().readConcern('snapshot').toArray().length === 4);
check('readConcern majority in a set', t.find().readConcern('majority').toArray().length === 4);

// REPL verbosity 2: mongod's D2 22548 (the implicit default write concern)
// and 22549 before each write's wait for its write concern; at 1 nothing
const replLines = (id) => admin.runCommand({ getLog: 'global' }).log.map((l) => JSON.parse(l)).filter((l) => l.id === id);
const replVerb = (v) => admin.runCommand({ setParameter: 1, logComponentVerbosity: { replication: { verbosity: v } } });
const n22549 = replLines(22549).length;
replVerb(1);
db.getSiblingDB('e2e_rs').runCommand({ insert: 'logv', documents: [{ _id: 1 }] });
check('REPL verbosity 1: no 22549', replLines(22549).length === n22549);
replVerb(2);
db.getSiblingDB('e2e_rs').runCommand({ insert: 'logv', documents: [{ _id: 2 }] });
db.getSiblingDB('e2e_rs').runCommand({ insert: 'logv', documents: [{ _id: 3 }], writeConcern: { w: 1, j: true } });
replVerb(-1);
db.getSiblingDB('e2e_rs').runCommand({ insert: 'logv', documents: [{ _id: 4 }] });
const waits = replLines(22549).slice(n22549);
const dflt = replLines(22548).pop();
check('REPL D2 22548 Applying default writeConcern', dflt && dflt.s === 'D2' && dflt.c === 'REPL' &&
	dflt.msg === 'Applying default writeConcern on {cmdObj_firstElementFieldName} of {wcDefault}' &&
	dflt.attr.cmdObj_firstElementFieldName === 'insert' && dflt.attr.wcDefault.w === 'majority', dflt);
check('REPL D2 22549 for the two writes at 2 only', waits.length === 2, waits);
if (waits.length === 2) {
	const [a, b] = waits;
	check('22549: severity, component, message, replOpTime', a.s === 'D2' && a.c === 'REPL' &&
		a.msg === 'Waiting for write concern. OpTime: {replOpTime}, write concern: {writeConcern}' &&
		a.attr.replOpTime.ts.$timestamp.t > 0 && a.attr.replOpTime.t === 1, a);
	check('22549: the implicit default', JSON.stringify(a.attr.writeConcern) ===
		JSON.stringify({ w: 'majority', wtimeout: 0, provenance: 'implicitDefault' }), a.attr.writeConcern);
	check('22549: the client\'s', JSON.stringify(b.attr.writeConcern) ===
		JSON.stringify({ w: 1, j: true, wtimeout: 0, provenance: 'clientSupplied' }), b.attr.writeConcern);
}

// fail points (enableTestCommands=1)
check('configureFailPoint failCommand', admin.runCommand({ configureFailPoint: 'failCommand', mode: { times: 1 },
	data: { failCommands: ['count'], errorCode: 91 } }).ok === 1);
check('failCommand fails the next count', code(() => db.getSiblingDB('e2e_rs').runCommand({ count: 'c' })) === 91);
// 91 is a state-change error: the driver marks the server Unknown and, on
// the streaming protocol, sees it again only when its awaitable hello
// returns (heartbeatFrequencyMS, 10 s) -- mongod's clients wait the same
check('then count works again', retrying(() => db.getSiblingDB('e2e_rs').runCommand({ count: 'c' }), 50).n === 4);
check('unknown fail point: 266', code(() => admin.runCommand({ configureFailPoint: 'noSuchFailPoint', mode: 'alwaysOn' })) === 266);

// stepdown as a single member answers it
check('rs.stepDown() without force: 262', code(() => admin.runCommand({ replSetStepDown: 10, secondaryCatchUpPeriodSecs: 0 })) === 262);
check('replSetFreeze on the primary: 95', code(() => admin.runCommand({ replSetFreeze: 10 })) === 95);

print(`${passed} passed, ${failed} failed`);
if (failed > 0) quit(1);
