/*
 * js_helpers.c -- what a fresh global gets before user code runs: mongod's
 * type classes and helpers (NumberLong, NumberInt, NumberDecimal, ObjectId,
 * ISODate, Timestamp, BinData, UUID, HexData, DBRef, DBPointer, MinKey,
 * MaxKey, Code, tojson, tojsononeline, printjson, print, sleep, hex_md5,
 * isNumber, isObject, isString, Array.sum / avg / contains / unique /
 * stdDev, Object.bsonsize) and the internal function maker that turns a
 * $where / $function source into a function as mongod's parse helper does.
 *
 * Natives (written in C here): sleep (bounded by the operation's deadline:
 * it ends the script with 50 once maxTimeMS passes), hex_md5 (OpenSSL),
 * print (to the server log, as mongod prints on the server), a new
 * ObjectId's bytes, Object.bsonsize.  Everything else is the JavaScript
 * prelude below.  Nothing here reaches files, network or processes: the
 * shell's load/run/readFile/Mongo/... do not exist in the server's engine.
 */
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/log.h"
#include "common/opctx.h"
#include "js/script.h"

static const char prelude[] =
"(function (g) {\n"
"'use strict';\n"
"function hide(o, k, v) { Object.defineProperty(o, k, {value: v, writable: false, enumerable: false, configurable: false}); }\n"
"function method(ctor, name, fn) { Object.defineProperty(ctor.prototype, name, {value: fn, writable: true, enumerable: false, configurable: true}); }\n"
"function global(name, v) { Object.defineProperty(g, name, {value: v, writable: true, enumerable: false, configurable: true}); }\n"
"var MAXSAFE = 9007199254740991;\n"
/* NumberLong */
"function NumberLong(v) {\n"
"  if (!(this instanceof NumberLong)) return new NumberLong(v);\n"
"  var b;\n"
"  if (v === undefined) b = 0n;\n"
"  else if (typeof v === 'bigint') b = v;\n"
"  else if (typeof v === 'number') { if (!isFinite(v)) throw new Error('number passed to NumberLong must be finite'); b = BigInt(Math.trunc(v)); }\n"
"  else if (v instanceof NumberLong) b = v.__v;\n"
"  else if (v instanceof NumberInt) b = BigInt(v.__v);\n"
"  else { var s = String(v).trim(); if (!/^[+-]?[0-9]+$/.test(s)) throw new Error('could not convert \"' + v + '\" to NumberLong'); b = BigInt(s); if (b > 9223372036854775807n || b < -9223372036854775808n) throw new Error('could not convert \"' + v + '\" to NumberLong'); }\n"
"  hide(this, '__v', BigInt.asIntN(64, b));\n"
"}\n"
"method(NumberLong, 'valueOf', function () { return Number(this.__v); });\n"
"method(NumberLong, 'toNumber', function () { return Number(this.__v); });\n"
"method(NumberLong, 'toString', function () { var n = Number(this.__v); return Math.abs(n) <= MAXSAFE ? 'NumberLong(' + n + ')' : 'NumberLong(\"' + this.__v.toString() + '\")'; });\n"
"method(NumberLong, 'tojson', function () { return this.toString(); });\n"
"method(NumberLong, 'compare', function (o) { var b = o instanceof NumberLong ? o.__v : BigInt(Math.trunc(Number(o))); return this.__v < b ? -1 : this.__v > b ? 1 : 0; });\n"
"method(NumberLong, 'equals', function (o) { return this.compare(o) === 0; });\n"
"Object.defineProperty(NumberLong.prototype, 'floatApprox', {get: function () { return Number(this.__v); }, enumerable: false, configurable: true});\n"
"Object.defineProperty(NumberLong.prototype, 'top', {get: function () { return Number(BigInt.asIntN(32, this.__v >> 32n)); }, enumerable: false, configurable: true});\n"
"Object.defineProperty(NumberLong.prototype, 'bottom', {get: function () { return Number(BigInt.asUintN(32, this.__v)); }, enumerable: false, configurable: true});\n"
"global('NumberLong', NumberLong);\n"
/* NumberInt */
"function NumberInt(v) {\n"
"  if (!(this instanceof NumberInt)) return new NumberInt(v);\n"
"  hide(this, '__v', v === undefined ? 0 : (Number(v) | 0));\n"
"}\n"
"method(NumberInt, 'valueOf', function () { return this.__v; });\n"
"method(NumberInt, 'toNumber', function () { return this.__v; });\n"
"method(NumberInt, 'toString', function () { return 'NumberInt(' + this.__v + ')'; });\n"
"method(NumberInt, 'tojson', function () { return this.toString(); });\n"
"global('NumberInt', NumberInt);\n"
/* NumberDecimal */
"function NumberDecimal(v) {\n"
"  if (!(this instanceof NumberDecimal)) return new NumberDecimal(v);\n"
"  var s = v === undefined ? '0' : (v instanceof NumberDecimal ? v.__v : String(v));\n"
"  if (!/^\\s*[+-]?((\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?|inf(inity)?|nan)\\s*$/i.test(s)) throw new Error('Input is not a valid Decimal128 value.');\n"
"  hide(this, '__v', s.trim());\n"
"}\n"
"method(NumberDecimal, 'toString', function () { return 'NumberDecimal(\"' + this.__v + '\")'; });\n"
"method(NumberDecimal, 'tojson', function () { return this.toString(); });\n"
"method(NumberDecimal, 'toJSON', function () { return {'$numberDecimal': this.__v}; });\n"
"global('NumberDecimal', NumberDecimal);\n"
/* ObjectId */
"function ObjectId(h) {\n"
"  if (!(this instanceof ObjectId)) return new ObjectId(h);\n"
"  if (h === undefined) h = __tm_oid_new();\n"
"  if (typeof h !== 'string' || !/^[0-9a-fA-F]{24}$/.test(h)) throw new Error('Invalid object id: ' + h);\n"
"  hide(this, 'str', h.toLowerCase());\n"
"}\n"
"method(ObjectId, 'toString', function () { return 'ObjectId(\"' + this.str + '\")'; });\n"
"method(ObjectId, 'tojson', function () { return this.toString(); });\n"
"method(ObjectId, 'valueOf', function () { return this.str; });\n"
"method(ObjectId, 'toHexString', function () { return this.str; });\n"
"method(ObjectId, 'equals', function (o) { return o instanceof ObjectId && o.str === this.str; });\n"
"method(ObjectId, 'getTimestamp', function () { return new Date(parseInt(this.str.substr(0, 8), 16) * 1000); });\n"
"global('ObjectId', ObjectId);\n"
/* Timestamp */
"function Timestamp(t, i) {\n"
"  if (!(this instanceof Timestamp)) return new Timestamp(t, i);\n"
"  t = t === undefined ? 0 : Number(t); i = i === undefined ? 0 : Number(i);\n"
"  if (!(t >= 0 && t <= 4294967295)) throw new Error('Timestamp time must be a number between 0 and 4294967295');\n"
"  if (!(i >= 0 && i <= 4294967295)) throw new Error('Timestamp increment must be a number between 0 and 4294967295');\n"
"  hide(this, 't', t); hide(this, 'i', i);\n"
"}\n"
"method(Timestamp, 'toString', function () { return 'Timestamp(' + this.t + ', ' + this.i + ')'; });\n"
"method(Timestamp, 'tojson', function () { return this.toString(); });\n"
"method(Timestamp, 'getTime', function () { return this.t; });\n"
"method(Timestamp, 'getInc', function () { return this.i; });\n"
"global('Timestamp', Timestamp);\n"
/* BinData, HexData, UUID, MD5 */
"var B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';\n"
"function b64len(s) { var p = 0; while (p < 2 && s.length > p && s[s.length - 1 - p] === '=') p++; return s.length / 4 * 3 - p; }\n"
"function BinData(type, b64) {\n"
"  if (!(this instanceof BinData)) return new BinData(type, b64);\n"
"  type = Number(type);\n"
"  if (!(type >= 0 && type <= 255) || Math.floor(type) !== type) throw new Error('BinData subtype must be between 0 and 255');\n"
"  b64 = String(b64);\n"
"  if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+\\/]*={0,2}$/.test(b64)) throw new Error('BinData data must be Base64-encoded');\n"
"  hide(this, 'type', type); hide(this, '__b', b64); hide(this, 'len', b64len(b64));\n"
"}\n"
"function hexOf(b64) { var out = '', acc = 0, bits = 0; for (var k = 0; k < b64.length && b64[k] !== '='; k++) { acc = (acc << 6) | B64.indexOf(b64[k]); bits += 6; if (bits >= 8) { bits -= 8; out += ((acc >> bits) & 255).toString(16).padStart(2, '0'); } } return out; }\n"
"function b64Of(hex) { var bytes = []; for (var k = 0; k + 1 < hex.length; k += 2) bytes.push(parseInt(hex.substr(k, 2), 16)); var out = ''; for (var j = 0; j < bytes.length; j += 3) { var n = (bytes[j] << 16) | ((bytes[j + 1] || 0) << 8) | (bytes[j + 2] || 0); out += B64[(n >> 18) & 63] + B64[(n >> 12) & 63] + (j + 1 < bytes.length ? B64[(n >> 6) & 63] : '=') + (j + 2 < bytes.length ? B64[n & 63] : '='); } return out; }\n"
"method(BinData, 'base64', function () { return this.__b; });\n"
"method(BinData, 'hex', function () { return hexOf(this.__b); });\n"
"method(BinData, 'length', function () { return this.len; });\n"
"method(BinData, 'subtype', function () { return this.type; });\n"
"method(BinData, 'toString', function () { if (this.type === 4 && this.len === 16) { var h = this.hex(); return 'UUID(\"' + h.substr(0, 8) + '-' + h.substr(8, 4) + '-' + h.substr(12, 4) + '-' + h.substr(16, 4) + '-' + h.substr(20) + '\")'; } return 'BinData(' + this.type + ',\"' + this.__b + '\")'; });\n"
"method(BinData, 'tojson', function () { return this.toString(); });\n"
"global('BinData', BinData);\n"
"function HexData(type, hex) { hex = String(hex); if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new Error('Invalid hex string'); return new BinData(type, b64Of(hex)); }\n"
"global('HexData', HexData);\n"
"global('UUID', function (s) { if (s === undefined) { var h = ''; for (var k = 0; k < 32; k++) h += Math.floor(Math.random() * 16).toString(16); s = h; } s = String(s).replace(/-/g, ''); if (!/^[0-9a-fA-F]{32}$/.test(s)) throw new Error('UUID string must have 32 hex digits'); return HexData(4, s); });\n"
"global('MD5', function (s) { return HexData(5, s); });\n"
/* DBRef, DBPointer, MinKey, MaxKey, Code */
"function DBRef(ref, id, db) {\n"
"  if (!(this instanceof DBRef)) return new DBRef(ref, id, db);\n"
"  if (typeof ref !== 'string') throw new Error('The DBRef $ref field must be a string');\n"
"  this.$ref = ref; this.$id = id; if (db !== undefined) { if (typeof db !== 'string') throw new Error('The DBRef $db field must be a string'); this.$db = db; }\n"
"}\n"
"method(DBRef, 'getCollection', function () { return this.$ref; });\n"
"method(DBRef, 'getId', function () { return this.$id; });\n"
"method(DBRef, 'getDb', function () { return this.$db; });\n"
"method(DBRef, 'toString', function () { return 'DBRef(' + tojson(this.$ref) + ', ' + tojson(this.$id) + (this.$db !== undefined ? ', ' + tojson(this.$db) : '') + ')'; });\n"
"method(DBRef, 'tojson', function () { return this.toString(); });\n"
"global('DBRef', DBRef);\n"
"function DBPointer(ns, id) { if (!(this instanceof DBPointer)) return new DBPointer(ns, id); if (typeof ns !== 'string') throw new Error('DBPointer ns must be a string'); if (!(id instanceof ObjectId)) throw new Error('DBPointer id must be an ObjectId'); hide(this, 'ns', ns); hide(this, 'id', id); }\n"
"method(DBPointer, 'toString', function () { return 'DBPointer(' + tojson(this.ns) + ', ' + tojson(this.id) + ')'; });\n"
"method(DBPointer, 'tojson', function () { return this.toString(); });\n"
"global('DBPointer', DBPointer);\n"
"function MinKey() { if (!(this instanceof MinKey)) return new MinKey(); }\n"
"method(MinKey, 'tojson', function () { return '{ \"$minKey\" : 1 }'; });\n"
"method(MinKey, 'toString', function () { return '[object Function]'; });\n"
"global('MinKey', MinKey);\n"
"function MaxKey() { if (!(this instanceof MaxKey)) return new MaxKey(); }\n"
"method(MaxKey, 'tojson', function () { return '{ \"$maxKey\" : 1 }'; });\n"
"method(MaxKey, 'toString', function () { return '[object Function]'; });\n"
"global('MaxKey', MaxKey);\n"
"function Code(code, scope) { if (!(this instanceof Code)) return new Code(code, scope); hide(this, 'code', String(code)); if (scope !== undefined) hide(this, 'scope', scope); }\n"
"method(Code, 'toString', function () { return 'Code(' + tojson(this.code) + (this.scope !== undefined ? ', ' + tojson(this.scope) : '') + ')'; });\n"
"method(Code, 'tojson', function () { return this.toString(); });\n"
"global('Code', Code);\n"
/* ISODate */
"function ISODate(s) {\n"
"  if (s === undefined) return new Date();\n"
"  if (s instanceof Date) return new Date(s.getTime());\n"
"  s = String(s);\n"
"  var m = /^(\\d{4})-?(\\d{2})-?(\\d{2})(?:[T ](\\d{2}):?(\\d{2})(?::?(\\d{2})(?:\\.(\\d+))?)?)?\\s*(Z|[+-]\\d{2}(?::?\\d{2})?)?$/.exec(s);\n"
"  if (!m) throw new Error('invalid ISO date: ' + s);\n"
"  var ms = m[7] ? Math.round(Number('0.' + m[7]) * 1000) : 0;\n"
"  var t = Date.UTC(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), +(m[6] || 0), ms);\n"
"  if (m[8] && m[8] !== 'Z') { var sign = m[8][0] === '-' ? -1 : 1, z = m[8].substr(1).replace(':', ''); t -= sign * (Number(z.substr(0, 2)) * 60 + Number(z.substr(2, 2) || 0)) * 60000; }\n"
"  if (isNaN(t)) throw new Error('invalid ISO date: ' + s);\n"
"  return new Date(t);\n"
"}\n"
"global('ISODate', ISODate);\n"
"Object.defineProperty(Date.prototype, 'tojson', {value: function () { var t = this.getTime(); if (isNaN(t)) return 'new Date(NaN)'; return 'ISODate(\"' + this.toISOString() + '\")'; }, enumerable: false, writable: true, configurable: true});\n"
/* tojson, as mongod's shell types.js formats */
"function tojsonObject(x, indent, nolint) {\n"
"  var lineEnding = nolint ? ' ' : '\\n', tabSpace = nolint ? '' : '\\t';\n"
"  indent = indent || '';\n"
"  if (typeof x.tojson === 'function' && x.tojson !== tojson) return x.tojson(indent, nolint);\n"
"  var keys = Object.keys(x);\n"
"  if (keys.length === 0) return '{ }';\n"
"  var s = '{' + lineEnding, inner = indent + tabSpace;\n"
"  for (var k = 0; k < keys.length; k++) {\n"
"    var v = x[keys[k]];\n"
"    if (typeof v === 'function') continue;\n"
"    s += inner + JSON.stringify(keys[k]) + ' : ' + tojson(v, inner, nolint) + (k + 1 < keys.length ? ',' : '') + lineEnding;\n"
"  }\n"
"  return s + inner.substring(1) + '}';\n"
"}\n"
"function tojsonArray(a, indent, nolint) {\n"
"  if (a.length === 0) return '[ ]';\n"
"  indent = indent || '';\n"
"  var parts = [], multi = false, total = 0;\n"
"  for (var k = 0; k < a.length; k++) { var p = tojson(a[k], indent + (nolint ? '' : '\\t'), nolint); if (p.indexOf('\\n') >= 0) multi = true; total += p.length; parts.push(p); }\n"
"  if (!nolint && (multi || total > 80)) return '[\\n' + indent + '\\t' + parts.join(',\\n' + indent + '\\t') + '\\n' + indent + ']';\n"
"  return '[ ' + parts.join(', ') + ' ]';\n"
"}\n"
"function tojson(x, indent, nolint) {\n"
"  if (x === null) return 'null';\n"
"  if (x === undefined) return 'undefined';\n"
"  switch (typeof x) {\n"
"  case 'string': return JSON.stringify(x);\n"
"  case 'number': return (x === 0 && 1 / x < 0) ? '-0' : String(x);\n"
"  case 'boolean': return String(x);\n"
"  case 'bigint': return String(x) + 'n';\n"
"  case 'function': return x.toString();\n"
"  case 'object':\n"
"    if (Array.isArray(x)) return tojsonArray(x, indent, nolint);\n"
"    if (x instanceof RegExp) return x.toString();\n"
"    return tojsonObject(x, indent, nolint);\n"
"  }\n"
"  return String(x);\n"
"}\n"
"global('tojson', tojson);\n"
"global('tojsonObject', tojsonObject);\n"
"global('tojsononeline', function (x) { return tojson(x, ' ', true); });\n"
"global('printjson', function (x) { print(tojson(x)); });\n"
"global('printjsononeline', function (x) { print(tojson(x, ' ', true)); });\n"
"global('isNumber', function (x) { return typeof x === 'number'; });\n"
"global('isObject', function (x) { return typeof x === 'object'; });\n"
"global('isString', function (x) { return typeof x === 'string'; });\n"
/* Array helpers */
"function arrDefine(n, f) { Object.defineProperty(Array, n, {value: f, writable: true, enumerable: false, configurable: true}); }\n"
"arrDefine('sum', function (arr) { if (arr.length === 0) return null; var s = arr[0]; for (var k = 1; k < arr.length; k++) s += arr[k]; return s; });\n"
"arrDefine('avg', function (arr) { if (arr.length === 0) return null; return Array.sum(arr) / arr.length; });\n"
"arrDefine('contains', function (arr, v) { if (!Array.isArray(arr)) throw new Error('The first argument to Array.contains must be an array'); for (var k = 0; k < arr.length; k++) if (arr[k] == v) return true; return false; });\n"
"arrDefine('unique', function (arr) { if (!Array.isArray(arr)) throw new Error('The first argument to Array.unique must be an array'); var seen = {}, out = []; for (var k = 0; k < arr.length; k++) { var key = tojson(arr[k]); if (!seen[key]) { seen[key] = true; out.push(arr[k]); } } return out; });\n"
"arrDefine('stdDev', function (arr) { if (!Array.isArray(arr)) throw new Error('The first argument to Array.stdDev must be an array'); var avg = Array.avg(arr), s = 0; for (var k = 0; k < arr.length; k++) s += Math.pow(arr[k] - avg, 2); return Math.sqrt(s / arr.length); });\n"
"arrDefine('tojson', function (a, indent, nolint) { return tojsonArray(a, indent, nolint); });\n"
/* The function maker: mongod's parse helper, in effect */
"function internal(name, v) { Object.defineProperty(g, name, {value: v, writable: false, enumerable: false, configurable: false}); }\n"
"var R = typeof Reflect !== 'undefined' ? Reflect : null;\n"
"internal('__tm_makefn', function (src) {\n"
"  var s = String(src);\n"
"  while (/[;\\s]$/.test(s)) s = s.slice(0, -1);\n"
"  var f;\n"
"  if (/^\\s*(async\\s+)?function\\b/.test(s)) {\n"
"    try { f = (0, eval)('(' + s + '\\n)'); } catch (e) { if (!(e instanceof SyntaxError)) throw e; }\n"
"    if (typeof f === 'function') return f;\n"
"  }\n"
"  try { return new Function('return (' + s + '\\n);'); } catch (e) { if (!(e instanceof SyntaxError)) throw e; }\n"
/* statements: as mongod, the last expression statement's value is returned */
"  if (R && typeof R.parse === 'function') {\n"
"    var tree = null;\n"
"    try { tree = R.parse(s); } catch (e) { if (!(e instanceof SyntaxError)) throw e; }\n"
"    var body = tree ? tree.body : [], last = body[body.length - 1];\n"
"    if (last && last.type === 'ExpressionStatement' && last.loc) {\n"
"      var lines = s.split('\\n'), ln = last.loc.start.line - 1, col = last.loc.start.column;\n"
"      lines[ln] = lines[ln].substr(0, col) + 'return ' + lines[ln].substr(col);\n"
"      try { return new Function(lines.join('\\n')); } catch (e) { if (!(e instanceof SyntaxError)) throw e; }\n"
"    }\n"
"  }\n"
"  return new Function(s);\n"
"});\n"
"})(this);\n";

/* ---- natives ---------------------------------------------------------------- */

static int
n_print(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	bson_string_t *line = bson_string_new(NULL);
	bson_t attr = BSON_INITIALIZER;

	for (int i = 0; i < argc; i++) {
		char *s = NULL;
		size_t len;
		if (js_to_string(ctx, args[i], &s, &len) != 0) {
			bson_string_free(line, true);
			bson_destroy(&attr);
			return terr_set(err, 139, "print: cannot convert an argument to a string");
		}
		if (i > 0)
			bson_string_append_c(line, ' ');
		bson_string_append(line, s);
		free(s);
	}
	BSON_APPEND_UTF8(&attr, "message", line->str);
	tlog('I', "QUERY", 20163, "js print", &attr);
	bson_destroy(&attr);
	bson_string_free(line, true);
	return 0;
}

/* sleep(ms): in steps of at most 10 ms, each followed by the operation's
 * check, so maxTimeMS and killOp end it (uncatchably, as mongod's sleep
 * raises the operation's interruption). */
static int
n_sleep(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	double ms = 0;

	if (argc < 1 || js_to_number(ctx, args[0], &ms) != 0)
		return terr_set(err, 16259, "sleep takes a single numeric argument -- sleep(milliseconds)");
	if (!(ms > 0))
		return 0;
	if (ms > 1e9)
		ms = 1e9;
	int64_t end = tm_now_us() + (int64_t)(ms * 1000.0);
	for (;;) {
		int64_t now = tm_now_us();
		if (tm_interrupt_check_now(err) != 0)
			return JS_NATIVE_TERMINATE;
		if (now >= end)
			break;
		int64_t step = end - now > 10000 ? 10000 : end - now;
		struct timespec ts = {0, (long)step * 1000L};
		nanosleep(&ts, NULL);
	}
	return 0;
}

static int
n_hex_md5(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	char *s = NULL;
	size_t len = 0;

	if (argc != 1 || js_type(ctx, args[0]) != JS_T_STRING)
		return terr_set(err, TERR_BAD_VALUE, "hex_md5 takes a single string argument -- hex_md5(string)");
	if (js_to_string(ctx, args[0], &s, &len) != 0)
		return terr_set(err, 139, "Out of memory");
	if (!EVP_Digest(s, len, md, &mdlen, EVP_md5(), NULL)) {
		free(s);
		return terr_set(err, TERR_INTERNAL_ERROR, "md5 failed");
	}
	free(s);
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	*ret = js_push_string(ctx, hex, 2 * mdlen);
	return 0;
}

static int
n_oid_new(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	bson_oid_t oid;
	char hex[25];

	bson_oid_init(&oid, NULL);
	bson_oid_to_string(&oid, hex);
	*ret = js_push_string(ctx, hex, 24);
	return 0;
}

static int
n_bsonsize(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	bson_t doc = BSON_INITIALIZER;
	js_type_t t;

	if (argc != 1)
		return terr_set(err, TERR_BAD_VALUE, "bsonsize needs 1 argument");
	t = js_type(ctx, args[0]);
	if (t == JS_T_NULL || t == JS_T_UNDEFINED) {
		bson_destroy(&doc);
		*ret = js_push_int32(ctx, 0);
		return 0;
	}
	if (t != JS_T_OBJECT && t != JS_T_ARRAY) {
		bson_destroy(&doc);
		return terr_set(err, TERR_BAD_VALUE, "argument to bsonsize has to be an object");
	}
	if (js_object_to_bson(ctx, args[0], &doc, err) != 0) {
		bson_destroy(&doc);
		return -1;
	}
	*ret = js_push_double(ctx, (double)doc.len);
	bson_destroy(&doc);
	return 0;
}

static __thread js_emit_fn emit_fn;
static __thread void *emit_arg;

void
js_set_emit_sink(js_emit_fn fn, void *arg)
{
	emit_fn = fn;
	emit_arg = arg;
}

static int
n_emit(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	bson_t kv = BSON_INITIALIZER;
	int rc;

	if (emit_fn == NULL) {
		bson_destroy(&kv);
		return terr_set(err, 139, "emit is only available in mapReduce's map function");
	}
	if (argc != 2) {
		bson_destroy(&kv);
		return terr_set(err, 139, "emit takes 2 args");
	}
	rc = js_append_bson(ctx, &kv, "k", 1, args[0], err);
	if (rc == 0)
		rc = js_append_bson(ctx, &kv, "v", 1, args[1], err);
	if (rc == 0)
		rc = emit_fn(emit_arg, &kv, err);
	bson_destroy(&kv);
	return rc;
}

/* Re-raise nothing: a getter's exception stays pending and this call makes
 * js_call report it (js_bson.c uses it after a failed conversion step). */
static int
n_rethrow(js_ctx_t *ctx, int argc, const js_ref_t *args, js_ref_t self, js_ref_t *ret, terr_t *err)
{
	return 0;
}

static const struct native_row {
	const char *name;
	js_native_fn fn;
	unsigned nargs;
} natives[] = {
	{"print", n_print, 0},
	{"sleep", n_sleep, 1},
	{"hex_md5", n_hex_md5, 1},
	{"__tm_oid_new", n_oid_new, 0},
	{"emit", n_emit, 2},
	{"__tm_rethrow", n_rethrow, 0},
};

static const struct {
	int kind;
	const char *ctor;
} kinds[] = {
	{JS_K_NUMBER_LONG, "NumberLong"}, {JS_K_NUMBER_INT, "NumberInt"},
	{JS_K_NUMBER_DECIMAL, "NumberDecimal"}, {JS_K_OBJECT_ID, "ObjectId"},
	{JS_K_TIMESTAMP, "Timestamp"}, {JS_K_BINDATA, "BinData"}, {JS_K_DBREF, "DBRef"},
	{JS_K_DBPOINTER, "DBPointer"}, {JS_K_MINKEY, "MinKey"}, {JS_K_MAXKEY, "MaxKey"},
	{JS_K_CODE, "Code"},
};

int
js_helpers_install(js_ctx_t *ctx, terr_t *err)
{
	int mark = js_top(ctx);
	js_ref_t g = js_push_global(ctx), obj, r;

	if (g < 0)
		return terr_set(err, 139, "Out of memory");
	for (size_t i = 0; i < sizeof(natives) / sizeof(natives[0]); i++)
		if (js_define_native(ctx, g, natives[i].name, natives[i].fn, natives[i].nargs) != 0)
			goto oom;
	obj = js_get(ctx, g, "Object");
	if (obj < 0 || js_define_native(ctx, obj, "bsonsize", n_bsonsize, 1) != 0)
		goto oom;
	r = js_eval(ctx, prelude, sizeof(prelude) - 1, "tamga:prelude", err);
	if (r < 0) {
		js_pop_to(ctx, mark);
		return -1;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		js_ref_t c = js_get(ctx, g, kinds[i].ctor);
		if (c < 0 || js_proto_register(ctx, kinds[i].kind, c) != 0)
			goto oom;
	}
	js_pop_to(ctx, mark);
	return 0;
oom:
	js_pop_to(ctx, mark);
	return terr_set(err, 139, "Failed to install the JavaScript helpers");
}
