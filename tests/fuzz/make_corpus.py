"""Write the seed corpus for fuzz_wire (tests/fuzz/corpus/): valid and
nearly valid messages of every shape the parser knows.  Run with a Python
that has python3-pymongo's `bson`:  /usr/bin/python3 make_corpus.py"""
import os
import struct
import zlib

import bson
import bson.regex

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
_t = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _t.append(c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def frame(op, payload, rid=1):
    return struct.pack("<iiii", 16 + len(payload), rid, 0, op) + payload


def msg(doc, flags=0, sections=b"", checksum=False):
    body = struct.pack("<I", flags | (1 if checksum else 0)) + b"\x00" + bson.BSON.encode(doc) + sections
    if checksum:
        m = struct.pack("<iiii", 16 + len(body) + 4, 1, 0, 2013) + body
        return m + struct.pack("<I", crc32c(m))
    return frame(2013, body)


def seq(name, docs):
    inner = name.encode() + b"\x00" + b"".join(bson.BSON.encode(d) for d in docs)
    return b"\x01" + struct.pack("<i", 4 + len(inner)) + inner


def compressed(m, cid, data):
    return frame(2012, struct.pack("<iiB", struct.unpack("<i", m[12:16])[0], len(m) - 16, cid) + data)


seeds = {
    "ping": msg({"ping": 1, "$db": "admin"}),
    "hello_compression": msg({"hello": 1, "helloOk": True, "compression": ["zstd", "zlib", "snappy"],
                              "client": {"driver": {"name": "x", "version": "1"}}, "$db": "admin"}),
    "checksum": msg({"find": "c", "filter": {"a": {"$gt": 1}}, "$db": "test"}, checksum=True),
    "insert_seq": msg({"insert": "c", "$db": "test"}, sections=seq("documents", [{"_id": 1}, {"_id": 2, "a": [1, 2]}])),
    "bulk_two_seqs": msg({"bulkWrite": 1, "$db": "admin"},
                         sections=seq("ops", [{"insert": 0, "document": {"a": 1}}]) + seq("nsInfo", [{"ns": "t.c"}])),
    "more_to_come": msg({"insert": "c", "documents": [{"x": 1}], "$db": "test"}, flags=2),
    "all_types": msg({"$db": "t", "d": 1.5, "s": "x", "o": {"a": None}, "arr": [1, "2"], "b": True,
                      "i": 1, "l": bson.int64.Int64(2), "oid": bson.ObjectId("0123456789abcdef01234567"), "re": bson.regex.Regex("a", "i"),
                      "bin": bson.binary.Binary(b"\x00\x01", 4), "ts": bson.timestamp.Timestamp(1, 2),
                      "dec": bson.decimal128.Decimal128("1.5"), "code": bson.code.Code("f", {"a": 1}),
                      "min": bson.min_key.MinKey(), "max": bson.max_key.MaxKey()}),
    "op_query_ismaster": frame(2004, struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1)
                               + bson.BSON.encode({"$query": {"isMaster": 1}, "$readPreference": {"mode": "primary"}})),
    "op_query_find": frame(2004, struct.pack("<i", 0) + b"test.c\x00" + struct.pack("<ii", 0, -1)
                           + bson.BSON.encode({"a": 1})),
    "bad_flags": msg({"ping": 1, "$db": "admin"}, flags=1 << 5),
    "unknown_section": msg({"ping": 1, "$db": "admin"}, sections=b"\x05"),
    "bad_bson": frame(2013, struct.pack("<I", 0) + b"\x00" + b"\x10\x00\x00\x00\x42a\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"),
}
p = msg({"ping": 1, "$db": "admin", "pad": "z" * 100})
seeds["zlib"] = compressed(p, 2, zlib.compress(p[16:]))
seeds["noop"] = compressed(p, 0, p[16:])
seeds["bad_zlib"] = compressed(p, 2, b"garbage" * 5)
seeds["unknown_compressor"] = compressed(p, 9, p[16:])
seeds["nested"] = msg({"$db": "t", "a": {"b": {"c": {"d": [[[{"e": 1}]]]}}}})

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print("wrote %d seeds to %s" % (len(seeds), OUT))

# ---- command documents for fuzz_command (corpus_command/) -------------------
OUT2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_command")
commands = {
    "insert": {"insert": "c", "documents": [{"_id": 1, "a": 1, "b": [1, 2, {"c": "x"}]}, {"_id": 2, "a": "s"}]},
    "find": {"find": "c", "filter": {"a": {"$gt": 0}, "b.c": {"$in": ["x", None]}}, "sort": {"a": -1},
             "projection": {"a": 1}, "limit": 5, "batchSize": 1},
    "find_expr": {"find": "c", "filter": {"$expr": {"$gt": [{"$add": ["$a", 1]}, 1]}}},
    "update": {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 2}, "$push": {"b": 3}}, "upsert": True}]},
    "update_pipeline": {"update": "c", "updates": [{"q": {}, "u": [{"$set": {"z": {"$concat": ["a", "b"]}}}], "multi": True}]},
    "delete": {"delete": "c", "deletes": [{"q": {"a": {"$type": "string"}}, "limit": 1}]},
    "aggregate": {"aggregate": "c", "pipeline": [{"$match": {}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}},
                                                  {"$sort": {"n": -1}}], "cursor": {}},
    "count": {"count": "c", "query": {"a": {"$exists": True}}},
    "distinct": {"distinct": "c", "key": "a"},
    "findAndModify": {"findAndModify": "c", "query": {"_id": 2}, "update": {"$inc": {"n": 1}}, "new": True},
    "createIndexes": {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": -1}, "name": "a_1_b_-1", "unique": False}]},
    "create_validator": {"create": "v", "validator": {"$jsonSchema": {"bsonType": "object", "required": ["x"],
                                                      "properties": {"x": {"bsonType": "int", "minimum": 0}}}},
                         "validationLevel": "strict", "validationAction": "error"},
    "listCollections": {"listCollections": 1, "filter": {"name": {"$regex": "^c"}}},
    "hello": {"hello": 1, "client": {"driver": {"name": "fuzz", "version": "0"}}},
    "explain": {"explain": {"find": "c", "filter": {"a": 1}}, "verbosity": "executionStats"},
    # index bounds from regexes, null, $ne/$nin, $exists; the IXSCAN key filter
    "createIndexes_t": {"createIndexes": "c", "indexes": [{"key": {"t": 1}, "name": "t_1"},
                                                        {"key": {"s": 1}, "name": "s_1", "sparse": True}]},
    "find_regex_ix": {"find": "c", "filter": {"t": {"$regex": "^a\\Qb.c\\E|x?", "$options": "x"},
                                              "a": {"$in": [bson.regex.Regex("^ab"), None, 3]}},
                      "projection": {"t": 1, "_id": 0}},
    "find_ne_ix": {"find": "c", "filter": {"a": {"$ne": 2, "$gt": 0}, "t": {"$nin": [1, "x"]},
                                           "s": {"$exists": False}}},
    "explain_regex": {"explain": {"find": "c", "filter": {"t": {"$regex": "b", "$options": "i"}, "a": None}},
                      "verbosity": "allPlansExecution"},
    # text and hashed indexes, $text with textScore, hashed bounds
    "createIndexes_text": {"createIndexes": "c", "indexes": [
        {"key": {"g": 1, "t": "text", "$**": "text"}, "name": "text", "weights": {"t": 5},
         "default_language": "french", "language_override": "lang"},
        {"key": {"h": "hashed", "a": 1}, "name": "h_hashed"}]},
    "find_text": {"find": "c", "filter": {"g": 1, "$text": {"$search": "-\"a b\" café -x y", "$language": "en",
                                                           "$caseSensitive": True}, "h": {"$in": [1, "x"]}},
                  "projection": {"s": {"$meta": "textScore"}}, "sort": {"s": {"$meta": "textScore"}}},
    "aggregate_text": {"aggregate": "c", "pipeline": [{"$match": {"g": 1, "$text": {"$search": "slow start"}}},
                                                      {"$addFields": {"s": {"$meta": "textScore"}}},
                                                      {"$sort": {"s": -1}}], "cursor": {}},
}
# the numbers of issue 21 at the places that size, count or loop by them
L = bson.int64.Int64
D = bson.decimal128.Decimal128
LMIN, LMAX = L(-2 ** 63), L(2 ** 63 - 1)
DMIN = {"$toDate": LMIN}  # (this python-bson has no out-of-range datetimes)
DMAX = {"$toDate": LMAX}


def agg(*stages):
    return {"aggregate": "c", "pipeline": list(stages), "cursor": {}}


def proj(**fields):
    return agg({"$project": dict(fields, _id=0)})


commands.update({
    "sample_huge": agg({"$sample": {"size": L(2 ** 61)}}),
    "count_limit_min": {"count": "c", "limit": LMIN, "skip": LMAX},
    "find_edges": {"find": "c", "limit": LMAX, "skip": LMAX, "batchSize": LMAX, "maxTimeMS": 1000,
                   "projection": {"b": {"$slice": [LMIN, LMAX]}}},
    "dates_min_max": proj(y={"$year": DMIN}, p={"$dateToParts": {"date": DMAX, "timezone": "+14:00"}},
                          w={"$isoWeek": DMIN}, s={"$dateToString": {"date": DMAX, "format": "%G-%V"}}),
    "date_diff_trunc": proj(d={"$dateDiff": {"startDate": DMIN, "endDate": DMAX, "unit": "millisecond"}},
                            t={"$dateTrunc": {"date": "$d", "unit": "day", "binSize": LMAX}},
                            a={"$dateAdd": {"startDate": "$d", "unit": "month", "amount": LMIN}},
                            f={"$dateFromParts": {"year": 2020, "millisecond": LMAX}}),
    "arith_min": proj(a={"$abs": LMIN}, m={"$mod": [LMIN, -1]}, x={"$multiply": [LMIN, -1]},
                      r={"$round": [LMIN, -18]}, i={"$toInt": 1e300}, l={"$toLong": D("1E+30")}),
    "arrays": proj(r={"$range": [0, 2 ** 31 - 1, 2 ** 31 - 1]}, s={"$slice": ["$b", -2 ** 31, 2 ** 31 - 1]},
                   e={"$arrayElemAt": ["$b", LMIN]}, f={"$firstN": {"input": "$b", "n": LMAX}},
                   z={"$zip": {"inputs": ["$b", [1]], "useLongestLength": True}}),
    "strings": proj(a={"$substrBytes": ["$s", LMAX, LMAX]}, b={"$substrCP": ["$s", 1, 2 ** 31 - 1]},
                    c={"$split": ["$s", "b"]}, d={"$replaceAll": {"input": "$s", "find": "", "replacement": "x"}},
                    e={"$indexOfCP": ["$s", "c", 2 ** 31 - 1]}, f={"$concat": ["$s", "$s"]}),
    "group_n": agg({"$group": {"_id": None, "f": {"$firstN": {"input": "$a", "n": LMAX}},
                               "t": {"$topN": {"output": "$a", "sortBy": {"a": 1}, "n": LMAX}},
                               "s": {"$sum": LMAX}}}),
    "bucket_auto": agg({"$bucketAuto": {"groupBy": "$a", "buckets": 2 ** 31 - 1}}),
    "densify": agg({"$densify": {"field": "a", "range": {"step": LMAX, "bounds": [LMIN, LMAX]}}}),
    "window": agg({"$setWindowFields": {"sortBy": {"a": 1}, "output": {
        "v": {"$sum": 1, "window": {"documents": [LMIN, LMAX]}},
        "s": {"$shift": {"output": "$a", "by": 2 ** 31 - 1}}}}}),
    "fill": agg({"$fill": {"sortBy": {"a": 1}, "output": {"b": {"method": "linear"}, "s": {"method": "locf"}}}}),
    "update_push": {"update": "c", "updates": [{"q": {"_id": 1}, "u": {
        "$push": {"b": {"$each": [9], "$slice": LMIN, "$position": LMAX}}, "$inc": {"n": LMAX},
        "$bit": {"x": {"and": LMIN}}}}]},
    "update_paths": {"update": "c", "updates": [{"q": {}, "u": {"$set": {"b.99999999": 1}, "$pop": {"s": 1},
                                                              "$mul": {"a": LMIN}}, "multi": True}]},
    "find_mod": {"find": "c", "filter": {"a": {"$mod": [LMIN, -1]}, "b.99999999999": {"$exists": False},
                                         "s": {"$bitsAllSet": LMAX}}},
    "collMod": {"collMod": "c", "validator": {"a": {"$gte": LMIN}}, "validationLevel": "moderate"},
    "findAndModify_slice": {"findAndModify": "c", "query": {"_id": 1}, "update": {
        "$push": {"b": {"$each": [], "$slice": L(-2 ** 31)}}}, "new": True},
})
os.makedirs(OUT2, exist_ok=True)
for name, doc in commands.items():
    with open(os.path.join(OUT2, name), "wb") as f:
        f.write(bson.BSON.encode(doc))
print("wrote %d command seeds to %s" % (len(commands), OUT2))
