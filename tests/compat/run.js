// run.js -- issue 22's compatibility cases, run by mongosh against a tamgad
// (tests/compat/run.sh starts one).  Each tests/compat/item<N>_*.js file is
// data: calls of  compat(item, name, fn)  where fn throws when tamgad's
// answer is not mongod's (9.0, checked against mongod's source, IDL files and
// error_codes.yml).  Cases tamgad does not pass yet are written with
// compat.todo(item, name, fn): they are run and counted, but only a
// compat() case that fails (or a todo case that starts to pass, so that it
// is promoted) makes the run fail.  Prints one line per case, then one line
// per item ("item 3: 7/9 pass"), then the totals.
const ITEMS = {
	1: 'answers that differ from mongod',
	2: 'inputs mongod refuses',
	3: 'inputs mongod accepts',
	4: 'error codes',
	5: 'explain and optimisation',
	6: 'concurrency corners',
	7: 'server commands tools expect',
};
const results = [];

function runCase(item, name, fn, todo) {
	let ok = true, why = '';
	try {
		fn();
	} catch (e) {
		ok = false;
		why = e && e.stack ? String(e.stack).split('\n').slice(0, 3).join(' | ') : String(e);
	}
	results.push({item, name, ok, todo});
	const tag = ok ? (todo ? 'PASS (todo: promote it)' : 'ok') : (todo ? 'todo' : 'FAIL');
	print(`${tag} - [${item}] ${name}${ok ? '' : ': ' + why}`);
}
function compat(item, name, fn) { runCase(item, name, fn, false); }
compat.todo = function (item, name, fn) { runCase(item, name, fn, true); };

// ---- helpers the case files share -------------------------------------
function cj(v) { return EJSON.stringify(v, {relaxed: false}); }
function eq(a, b, what) {
	const ja = cj(a), jb = cj(b);
	if (ja !== jb) throw new Error(`${what || 'value'}: got ${ja}, want ${jb}`);
}
function ok(c, what) { if (!c) throw new Error(what || 'assertion failed'); }
// the reply of db.runCommand(cmd), which must succeed
function cmdOk(d, cmd) {
	const r = d.runCommand(cmd);
	if (!r.ok) throw new Error(`${cj(cmd)} failed: ${cj(r)}`);
	return r;
}
// the error of cmd as {code, errmsg}; throws when it succeeds
function cmdErr(d, cmd) {
	let r;
	try {
		r = d.runCommand(cmd);
	} catch (e) {
		return {code: e.code, errmsg: e.errmsg || e.message, reply: e};
	}
	if (r.ok) throw new Error(`${cj(cmd)} succeeded: ${cj(r)}`);
	return {code: r.code, errmsg: r.errmsg, reply: r};
}
// the reply of cmd, or {ok: 0, code, errmsg} when it fails (mongosh throws
// for some commands' errors, getMore among them)
function cmdErrOrOk(d, cmd) {
	try {
		const r = d.runCommand(cmd); // not `return d.runCommand()`: mongosh would not await it inside try
		return r;
	} catch (e) {
		return {ok: 0, code: e.code, errmsg: e.errmsg || e.message};
	}
}
// cmd fails with code (and, when given, exactly errmsg)
function wantErr(d, cmd, code, errmsg) {
	const e = cmdErr(d, cmd);
	if (e.code !== code) throw new Error(`${cj(cmd)}: code ${e.code} (${e.errmsg}), want ${code}`);
	if (errmsg !== undefined && e.errmsg !== errmsg)
		throw new Error(`${cj(cmd)}: errmsg ${cj(e.errmsg)}, want ${cj(errmsg)}`);
	return e;
}
// the documents of an aggregate on d.coll (cursor drained)
function agg(d, coll, pipeline, opts) {
	return d.getCollection(coll).aggregate(pipeline, opts || {}).toArray();
}

// ---- run every case file ------------------------------------------------
const cdb = db.getSiblingDB('compat22');
cdb.dropDatabase();
const dir = __dirname;
// COMPAT_ITEMS=1,3 in the environment runs only those items' files
const only = (process.env.COMPAT_ITEMS || '').split(',').filter((x) => x !== '');
const files = fs.readdirSync(dir).filter((f) => /^item[1-7]_.*\.js$/.test(f) &&
	(only.length === 0 || only.includes(f.slice(4, f.indexOf('_'))))).sort();
for (const f of files)
	load(dir + '/' + f);

let bad = 0;
print('');
for (const k of Object.keys(ITEMS)) {
	const rs = results.filter((r) => String(r.item) === k);
	const p = rs.filter((r) => r.ok).length;
	print(`item ${k} (${ITEMS[k]}): ${p}/${rs.length} pass`);
}
for (const r of results)
	if (r.ok === r.todo)
		bad++;
const np = results.filter((r) => r.ok).length;
print(`total: ${np}/${results.length} pass, ${results.filter((r) => r.todo && !r.ok).length} known todo, ${bad} unexpected`);
if (bad > 0)
	quit(1);
