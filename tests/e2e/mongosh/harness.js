// harness.js -- the few helpers every mongosh test script shares; a script
// starts with  load(__dirname + '/harness.js')  (mongosh sets __dirname) and
// ends with  done().  Output is one "ok - name" / "not ok - name: why" line
// per test, then "N passed, N failed"; the exit status is non-zero when
// anything failed.
let passed = 0, failed = 0;

// Run fn as the test called name; an exception fails it.
function test(name, fn) {
	try {
		fn();
		passed++;
		print(`ok - ${name}`);
	} catch (e) {
		failed++;
		print(`not ok - ${name}: ${e && e.stack ? e.stack : e}`);
	}
}

// a and b are equal as JSON (field order matters, as in BSON).
function eq(a, b, what) {
	const ja = JSON.stringify(a), jb = JSON.stringify(b);
	if (ja !== jb) throw new Error(`${what || 'value'}: got ${ja}, want ${jb}`);
}

function ok(c, what) {
	if (!c) throw new Error(what || 'assertion failed');
}

// The error code fn throws, 0 when it does not throw.
function code(fn) {
	try {
		fn();
	} catch (e) {
		return e.code;
	}
	return 0;
}

// The error fn throws as {code, msg}; throws when fn does not.
function err(fn) {
	try {
		fn();
	} catch (e) {
		return {code: e.code, msg: e.errmsg || e.message};
	}
	throw new Error('expected an error');
}

function done() {
	print(`${passed} passed, ${failed} failed`);
	if (failed > 0) quit(1);
}
