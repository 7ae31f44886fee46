/*
 * fuzz_command.c -- libFuzzer target for the command layer behind the wire:
 * each input is a BSON command document run through engine_run_command on
 * an in-memory engine (database "fuzz"), exactly as tamgad would after
 * parsing a message.  Whatever the document, the engine must answer with a
 * reply (ok: 1, or ok: 0 with a code) and never crash.
 *
 * The mutator is structure-aware (LLVMFuzzerCustomMutator): it decodes the
 * command, changes one value in place -- a number becomes an edge value
 * (INT32/INT64 min and max, +-2^53, NaN, +-inf, -0.0, decimal extremes), any
 * value becomes a random nested document/array built from a dictionary of
 * command options, stages, operators and paths, a field is added or removed,
 * the command name is swapped -- and re-encodes it, so nearly every input is
 * a valid command that reaches a handler (raw byte flips almost never do).
 * It falls back to libFuzzer's byte mutations for undecodable inputs.
 *
 * Inputs that are not valid BSON are skipped (the wire parser rejects them
 * before they could reach the engine).  Built as a libFuzzer binary by
 * `make fuzz`, and as a replay program (FUZZ_REPLAY_MAIN) in the normal
 * build: the corpus, then a fixed number of seeded mutations of each file
 * (fuzz_replay_main.h), under ASan+UBSan in `make test`.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands/commands.h"
#include "server/wire.h"

static engine_t *eng;
static client_t *cl;
static char dir[256];
static unsigned long runs;

static void
fuzz_cleanup(void)
{
	char cmd[300];

	client_free(cl);
	engine_close(eng);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

static void
fuzz_init(void)
{
	engine_options_t eo;
	client_info_t ci = {1, "127.0.0.1:1", true};
	terr_t err = TERR_INIT;
	const char *base = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/tamga-fuzz-command-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(dir) == NULL)
		abort();
	memset(&eo, 0, sizeof(eo));
	eo.storage.create = true;
	eo.storage.in_memory = true;
	if (engine_open(dir, &eo, &eng, &err) != 0) {
		fprintf(stderr, "engine_open: %s\n", err.msg);
		abort();
	}
	cl = client_new(eng, &ci);
	atexit(fuzz_cleanup);
}

/* Commands whose effect would end the run, or change the server for every
 * later input, rather than test anything. */
static bool
skipped(const bson_t *cmd)
{
	static const char *const names[] = {"shutdown", "setParameter", "fsync", "sleep", NULL};
	bson_iter_t it;

	if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it))
		return false;
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(bson_iter_key(&it), names[i]) == 0)
			return true;
	return false;
}

/* Run one command document; abort when the reply breaks its contract. */
static void
run_one(const bson_t *cmd)
{
	terr_t err = TERR_INIT;
	bson_t reply;
	bson_iter_t it;
	int rc;

	rc = engine_run_command(eng, cl, "fuzz", cmd, &reply, &err);
#ifdef FUZZ_REPLAY_MAIN
	if (getenv("FUZZ_REPLAY_PRINT") != NULL) {
		char *j = bson_as_relaxed_extended_json(&reply, NULL);
		printf("  -> %.300s\n", j ? j : "(not printable)");
		bson_free(j);
	}
#endif
	/* the reply contract: ok is there, and an error carries its code */
	if (!bson_iter_init_find(&it, &reply, "ok"))
		abort();
	if (rc != 0 && (!bson_iter_init_find(&it, &reply, "code") || !BSON_ITER_HOLDS_INT32(&it)))
		abort();
	bson_destroy(&reply);
	terr_clear(&err);
}

/* A few documents for the commands to find, with the field names the
 * dictionary uses; put back every so often so the data stays small. */
static void
reset_data(void)
{
	static const char *const docs =
	    "{\"insert\": \"c\", \"documents\": ["
	    "{\"_id\": 1, \"a\": 1, \"b\": [1, 2, {\"c\": \"x\"}], \"s\": \"abc\", \"d\": {\"$date\": \"2020-01-01T00:00:00Z\"}},"
	    "{\"_id\": 2, \"a\": -2.5, \"b\": [], \"s\": \"\\u00e9t\\u00e9\", \"d\": {\"$date\": \"1969-12-31T23:59:59.999Z\"}},"
	    "{\"_id\": 3, \"a\": {\"$numberLong\": \"-9223372036854775808\"}, \"b\": {\"c\": [3]}, \"t\": \"a.b\"},"
	    "{\"_id\": 4, \"a\": null, \"b\": [[1], [2, 3]], \"d\": {\"$date\": {\"$numberLong\": \"9223372036854775807\"}}}]}";
	bson_error_t be;
	bson_t *drop = BCON_NEW("dropDatabase", BCON_INT32(1));
	bson_t *ins = bson_new_from_json((const uint8_t *)docs, -1, &be);

	run_one(drop);
	if (ins != NULL)
		run_one(ins);
	bson_destroy(drop);
	bson_destroy(ins);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	terr_t err = TERR_INIT;
	uint32_t len;
	bson_t cmd;

	if (eng == NULL)
		fuzz_init();
	if (runs++ % 512 == 0)
		reset_data();
	if (wire_bson_validate(data, size, &len, &err) != 0) {
#ifdef FUZZ_REPLAY_MAIN
		if (getenv("FUZZ_REPLAY_PRINT") != NULL)
			printf("invalid (%zu bytes): %s\n", size, err.msg);
#endif
		terr_clear(&err);
		return 0;
	}
	if (!bson_init_static(&cmd, data, len) || skipped(&cmd))
		return 0;
#ifdef FUZZ_REPLAY_MAIN
	if (getenv("FUZZ_REPLAY_PRINT") != NULL) {
		char *j = bson_as_relaxed_extended_json(&cmd, NULL);
		printf("%s\n", j ? j : "(not printable)");
		bson_free(j);
	}
#endif
	run_one(&cmd);
	return 0;
}

/* ---- the structure-aware mutator ----------------------------------------- */

static uint64_t rng;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? (uint32_t)(rng % n) : 0;
}

static const char *const cmd_names[] = {
	"find", "aggregate", "update", "insert", "delete", "count", "distinct", "findAndModify",
	"collMod", "createIndexes", "explain", "getMore", "killCursors", "bulkWrite", "create",
	"dropIndexes", "listIndexes", "listCollections", "validate", "collStats", "dbStats",
};

/* keys: command options, stages, operators, paths */
static const char *const keys[] = {
	"filter", "projection", "sort", "limit", "skip", "batchSize", "hint", "collation", "let", "maxTimeMS",
	"pipeline", "cursor", "allowDiskUse", "updates", "deletes", "documents", "q", "u", "multi", "upsert",
	"arrayFilters", "query", "update", "new", "fields", "remove", "key", "indexes", "name", "unique",
	"sparse", "expireAfterSeconds", "partialFilterExpression", "validator", "validationLevel",
	"validationAction", "index", "hidden", "min", "max", "returnKey", "showRecordId", "singleBatch",
	"ordered", "writeConcern", "readConcern", "comment", "size", "n", "buckets", "groupBy", "step",
	"bounds", "unit", "range", "window", "output", "partitionBy", "sortBy", "by", "input", "as",
	"from", "localField", "foreignField", "startWith", "connectFromField", "connectToField",
	"maxDepth", "depthField", "into", "on", "whenMatched", "coll", "path", "includeArrayIndex",
	"preserveNullAndEmptyArrays", "newRoot", "boundaries", "default", "date", "timezone", "format",
	"startDate", "endDate", "amount", "binSize", "startOfWeek", "year", "month", "day", "hour",
	"millisecond", "isoWeekYear", "isoWeek", "inputs", "useLongestLength", "initialValue", "in",
	"cond", "then", "else", "vars", "to", "onError", "onNull", "regex", "options", "find",
	"replacement", "chars", "method", "value", "$each", "$slice", "$position", "$sort", "N", "alpha",
	"_id", "a", "b", "b.c", "b.0", "b.99999999999", "a.$", "b.$[]", "b.$[x]", "s", "d", "t", "x",
	"$sample", "$limit", "$skip", "$project", "$group", "$bucketAuto", "$densify", "$fill",
	"$setWindowFields", "$unwind", "$lookup", "$graphLookup", "$facet", "$unionWith", "$sortByCount",
	"$bucket", "$replaceRoot", "$addFields", "$set", "$unset", "$count", "$documents", "$redact",
	"$match", "$out", "$merge", "$add", "$subtract", "$multiply", "$divide", "$mod", "$abs", "$pow",
	"$round", "$trunc", "$toInt", "$toLong", "$toDate", "$toString", "$convert", "$range", "$substr",
	"$substrBytes", "$substrCP", "$split", "$replaceAll", "$replaceOne", "$concat", "$strLenBytes",
	"$strLenCP", "$zip", "$slice", "$arrayElemAt", "$firstN", "$lastN", "$topN", "$bottomN", "$maxN",
	"$minN", "$first", "$last", "$push", "$sum", "$avg", "$shift", "$rank", "$derivative",
	"$integral", "$expMovingAvg", "$locf", "$linearFill", "$year", "$isoWeek", "$dateToParts",
	"$dateFromParts", "$dateDiff", "$dateTrunc", "$dateAdd", "$dateSubtract", "$dateToString",
	"$dateFromString", "$reduce", "$map", "$filter", "$indexOfBytes", "$indexOfCP", "$indexOfArray",
	"$regexFind", "$regexFindAll", "$literal", "$cond", "$ifNull", "$switch", "$let", "$setField",
	"$getField", "$bitAnd", "$bitNot", "$exp", "$ln", "$log", "$sqrt", "$gt", "$lt", "$eq", "$in",
	"$nin", "$ne", "$exists", "$type", "$size", "$all", "$elemMatch", "$regex", "$options", "$bitsAllSet",
	"$bitsAnySet", "$sampleRate", "$expr", "$jsonSchema", "$and", "$or", "$nor", "$not", "$inc", "$mul",
	"$min", "$max", "$pop", "$pull", "$pullAll", "$addToSet", "$rename", "$currentDate", "$bit",
	"$setOnInsert", "$meta", "$elemMatch", "and", "or", "xor", "bsonType", "minimum", "maxLength",
	"minItems", "maxItems", "multipleOf", "required", "properties", "items",
};

static const char *const strings[] = {
	"c", "v", "$a", "$b", "$b.c", "$s", "$d", "$$ROOT", "$$CURRENT", "$$REMOVE", "$$NOW", "a", "b.c",
	"", "x", "millisecond", "second", "hour", "day", "week", "month", "quarter", "year", "UTC",
	"+14:00", "-14:00", "Pacific/Kiritimati", "America/New_York", "+99:99", "%Y-%m-%d %H:%M:%S.%L",
	"%G-%V-%u %j %U %z %Z", "full", "partition", "linear", "locf", "int", "long", "double", "decimal",
	"date", "string", "objectId", "bool", "i", "imsxsu", "^a.*", "(a+)+$", "textScore", "randVal",
	"strict", "moderate", "off", "error", "warn", "executionStats", "allPlansExecution", "2dsphere",
	"text", "hashed", "2d", "\xc3\xa9t\xc3\xa9", "\xff\xfe", "a\x01" "b",
};

static void random_value(bson_t *parent, const char *key, int depth);

/* an edge value: the numbers where overflow, truncation and rounding live */
static void
edge_number(bson_t *parent, const char *key)
{
	bson_decimal128_t dec;
	static const char *const decs[] = {"NaN", "Infinity", "-Infinity", "9.999999999999999999999999999999999E+6144",
		"-1E-6176", "1E+30", "9223372036854775808", "-9223372036854775809", "0E-6176", "-0", "1.5",
		"2147483648"};

	switch (rnd(24)) {
	case 0: BSON_APPEND_INT32(parent, key, INT32_MIN); break;
	case 1: BSON_APPEND_INT32(parent, key, INT32_MAX); break;
	case 2: BSON_APPEND_INT32(parent, key, 0); break;
	case 3: BSON_APPEND_INT32(parent, key, -1); break;
	case 4: BSON_APPEND_INT64(parent, key, INT64_MIN); break;
	case 5: BSON_APPEND_INT64(parent, key, INT64_MAX); break;
	case 6: BSON_APPEND_INT64(parent, key, INT64_MIN + 1); break;
	case 7: BSON_APPEND_INT64(parent, key, (int64_t)1 << 53); break;
	case 8: BSON_APPEND_INT64(parent, key, -((int64_t)1 << 61)); break;
	case 9: BSON_APPEND_DOUBLE(parent, key, NAN); break;
	case 10: BSON_APPEND_DOUBLE(parent, key, INFINITY); break;
	case 11: BSON_APPEND_DOUBLE(parent, key, -INFINITY); break;
	case 12: BSON_APPEND_DOUBLE(parent, key, -0.0); break;
	case 13: BSON_APPEND_DOUBLE(parent, key, 1.7976931348623157e308); break;
	case 14: BSON_APPEND_DOUBLE(parent, key, 4.9e-324); break;
	case 15: BSON_APPEND_DOUBLE(parent, key, 9223372036854775808.0); break;
	case 16: BSON_APPEND_DOUBLE(parent, key, -9223372036854775808.0); break;
	case 17: BSON_APPEND_DOUBLE(parent, key, 2147483648.5); break;
	case 18: BSON_APPEND_DOUBLE(parent, key, 1e-300); break;
	case 19:
		bson_decimal128_from_string(decs[rnd(sizeof(decs) / sizeof(decs[0]))], &dec);
		BSON_APPEND_DECIMAL128(parent, key, &dec);
		break;
	case 20: BSON_APPEND_DATE_TIME(parent, key, INT64_MIN); break;
	case 21: BSON_APPEND_DATE_TIME(parent, key, INT64_MAX); break;
	case 22: BSON_APPEND_TIMESTAMP(parent, key, UINT32_MAX, UINT32_MAX); break;
	default: BSON_APPEND_INT32(parent, key, (int32_t)rnd(12) - 3); break;
	}
}

static void
random_container(bson_t *parent, const char *key, int depth, bool array)
{
	bson_t child;
	int n = (int)rnd(4);
	char idx[16];

	if (array)
		bson_append_array_begin(parent, key, -1, &child);
	else
		bson_append_document_begin(parent, key, -1, &child);
	for (int i = 0; i < n; i++) {
		if (array)
			snprintf(idx, sizeof(idx), "%d", i);
		random_value(&child, array ? idx : keys[rnd(sizeof(keys) / sizeof(keys[0]))], depth - 1);
	}
	if (array)
		bson_append_array_end(parent, &child);
	else
		bson_append_document_end(parent, &child);
}

static void
random_value(bson_t *parent, const char *key, int depth)
{
	/* (libbson's BSON_APPEND_UTF8 evaluates its value twice) */
	const char *str = strings[rnd(sizeof(strings) / sizeof(strings[0]))];

	switch (rnd(depth > 0 ? 10 : 6)) {
	case 0:
	case 1: edge_number(parent, key); break;
	case 2: BSON_APPEND_UTF8(parent, key, str); break;
	case 3: BSON_APPEND_BOOL(parent, key, rnd(2)); break;
	case 4: BSON_APPEND_NULL(parent, key); break;
	case 5: BSON_APPEND_REGEX(parent, key, "^a|b*", rnd(2) ? "i" : "zz"); break;
	case 6:
	case 7: random_container(parent, key, depth, false); break;
	default: random_container(parent, key, depth, true); break;
	}
}

/* Copy src into dst, mutating the element whose depth-first number is
 * *target (counting down); *target < 0 afterwards when it was reached. */
static void
copy_mutated(const bson_t *src, bson_t *dst, long *target, bool top, bool array)
{
	bson_iter_t it;
	unsigned idx = 0;
	char ikey[16];

	if (!bson_iter_init(&it, src))
		return;
	while (bson_iter_next(&it)) {
		/* an array's keys stay "0", "1", ... whatever is added or removed */
		const char *key = array ? (snprintf(ikey, sizeof(ikey), "%u", idx), ikey) : bson_iter_key(&it);
		bool here = (*target)-- == 0;

		idx++;
		if (here && top && dst->len == 5) {
			/* the command name and its collection: another command
			 * (same collection) a quarter of the time, else as is --
			 * a broken name never reaches a handler */
			if (rnd(4) == 0) {
				bson_append_iter(dst, cmd_names[rnd(sizeof(cmd_names) / sizeof(cmd_names[0]))], -1, &it);
				continue;
			}
		} else if (here && array) {
			switch (rnd(5)) {
			case 0: /* delete */
				idx--;
				continue;
			case 1:
				edge_number(dst, key);
				continue;
			case 2:
				random_value(dst, key, 3);
				continue;
			default:
				break;
			}
		} else if (here) {

			switch (rnd(8)) {
			case 0: /* delete */
				continue;
			case 1: /* a field more, then this one unchanged */
				random_value(dst, keys[rnd(sizeof(keys) / sizeof(keys[0]))], 3);
				bson_append_iter(dst, key, -1, &it);
				continue;
			case 2:
			case 3:
				edge_number(dst, key);
				continue;
			case 4:
			case 5:
				random_value(dst, key, 3);
				continue;
			case 6: { /* wrap in an array */
				bson_t arr;
				bson_append_array_begin(dst, key, -1, &arr);
				bson_append_iter(&arr, "0", -1, &it);
				bson_append_array_end(dst, &arr);
				continue;
			}
			case 7: /* the same value under a dictionary key */
				bson_append_iter(dst, keys[rnd(sizeof(keys) / sizeof(keys[0]))], -1, &it);
				continue;
			default:
				break;
			}
		}
		if (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) {
			const uint8_t *d;
			uint32_t l;
			bson_t sub, out;
			bool arr = BSON_ITER_HOLDS_ARRAY(&it);
			if (arr)
				bson_iter_array(&it, &l, &d);
			else
				bson_iter_document(&it, &l, &d);
			if (!bson_init_static(&sub, d, l))
				continue;
			if (arr)
				bson_append_array_begin(dst, key, -1, &out);
			else
				bson_append_document_begin(dst, key, -1, &out);
			copy_mutated(&sub, &out, target, false, arr);
			if (arr)
				bson_append_array_end(dst, &out);
			else
				bson_append_document_end(dst, &out);
		} else {
			bson_append_iter(dst, key, -1, &it);
		}
	}
}

static long
count_elements(const bson_t *b)
{
	bson_iter_t it, child;
	long n = 0;

	if (!bson_iter_init(&it, b))
		return 0;
	while (bson_iter_next(&it)) {
		n++;
		if ((BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && bson_iter_recurse(&it, &child)) {
			const uint8_t *d;
			uint32_t l;
			bson_t sub;
			if (BSON_ITER_HOLDS_ARRAY(&it))
				bson_iter_array(&it, &l, &d);
			else
				bson_iter_document(&it, &l, &d);
			if (bson_init_static(&sub, d, l))
				n += count_elements(&sub);
		}
	}
	return n;
}

/* One structural mutation of a valid command in data (in place); 0 when
 * data is not a command document or the result does not fit max_size. */
static size_t
mutate_command(uint8_t *data, size_t size, size_t max_size)
{
	terr_t err = TERR_INIT;
	uint32_t len;
	bson_t cmd, out;
	long n, target;
	size_t r = 0;

	if (wire_bson_validate(data, size, &len, &err) != 0 || !bson_init_static(&cmd, data, len)) {
		terr_clear(&err);
		return 0;
	}
	for (int round = 0, rounds = 1 + (int)rnd(3); round < rounds; round++) {
		n = count_elements(&cmd);
		target = n > 0 ? (long)rnd((uint32_t)n) : 0;
		bson_init(&out);
		if (n == 0)
			random_value(&out, cmd_names[rnd(sizeof(cmd_names) / sizeof(cmd_names[0]))], 2);
		else
			copy_mutated(&cmd, &out, &target, true, false);
		if (out.len > max_size || out.len == 5) {
			bson_destroy(&out);
			return r;
		}
		memcpy(data, bson_get_data(&out), out.len);
		r = out.len;
		bson_destroy(&out);
		if (!bson_init_static(&cmd, data, (uint32_t)r))
			return r;
	}
	return r;
}

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	size_t r;

	rng = ((uint64_t)seed << 32 | 0x9e3779b9u) ^ 0x2545f4914f6cdd1dULL;
	rnd(1);
	r = mutate_command(data, size, max_size);
#ifndef FUZZ_REPLAY_MAIN
	if (r == 0 || rnd(16) == 0)
		return LLVMFuzzerMutate(data, r ? r : size, max_size);
#endif
	return r ? r : size;
}

#ifdef FUZZ_REPLAY_MAIN
#define FUZZ_HAVE_MUTATOR 1
#include "fuzz_replay_main.h"
#endif
