"""Time-series reads through PyMongo against tamgad (issue 19): the shapes the
read side rewrites answer what a plain collection holding the same
measurements answers, and explain shows mongod's shapes --
  - "average per sensor per hour over one day" ($match on the time, $group by
    meta and $dateTrunc): the $match becomes the unpack's eventFilter (its
    meta part goes to the buckets) with the wholeBucketFilter of the time
    range, the unpack's include list in mongod's order, the $group after it
    (run on the buckets' columns);
  - mongod's $group on the buckets (rewriteGroupStage: $max of fields,
    $min/$max of the meta, {$sum: 1}): no unpack, control.max / control.count;
  - measurements with missing fields, nulls, mixed types and arrays, buckets
    closed and compressed (v2) and still open (v1).
Prints "N passed, N failed".
"""
import datetime
import os
import random
import sys

import bson
import pymongo

PORT = int(os.environ["TAMGA_PORT"])
passed = failed = 0


def case(fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print("ok - " + fn.__name__)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("not ok - %s: %r" % (fn.__name__, e))
    return fn


client = pymongo.MongoClient("127.0.0.1", PORT)
db = client.e2e_ts_reads
db.drop_collection("w")
db.drop_collection("p")
db.create_collection("w", timeseries={"timeField": "t", "metaField": "s"})
db.create_collection("p")
BASE = datetime.datetime(2024, 3, 1)
rng = random.Random(19)
rng2 = random.Random(7)


def value():
    k = rng.randrange(8)
    if k < 4:
        return rng.randrange(100) + 0.5 * (k % 2)
    return [None, "str", [rng.randrange(9), 1], {"x": 1}][k - 4]


docs = []
for sec in range(0, 3 * 3600, 20):          # three hours, 12 sensors, a reading each 20 s
    for s in range(12):
        d = {"_id": len(docs), "t": BASE + datetime.timedelta(seconds=sec), "s": s}
        if rng.randrange(5):
            d["temp"] = value()
        k = rng2.randrange(6)       # h: mixed types, no arrays (a bucket index takes it)
        if k < 5:
            d["h"] = [rng2.randrange(100) + 0.5, rng2.randrange(100), None, "str", {"x": 1}][k]
        docs.append(d)
rng.shuffle(docs[: len(docs) // 3])          # out-of-order times close (and compress) buckets
for i in range(0, len(docs), 500):
    db.w.insert_many(docs[i:i + 500])
    db.p.insert_many(docs[i:i + 500])
# New buckets are compressed (v2) from their first measurement; a v1 bucket
# (what older Tamga wrote, and mongod before 8.0) is written raw, and its
# measurements go into the plain collection too.
T1 = BASE + datetime.timedelta(hours=4)   # past the others: $first/$last of a bin see one order
v1 = [{"_id": 10 ** 6 + i, "t": T1 + datetime.timedelta(seconds=10 * i), "s": 99, "temp": [7.5, 2, 3][i]}
      for i in range(3)]
db.command("insert", "w", rawData=True, documents=[{
    "_id": bson.ObjectId.from_datetime(T1),
    "control": {"version": 1,
                "min": {"_id": v1[0]["_id"], "t": v1[0]["t"], "temp": 2},
                "max": {"_id": v1[-1]["_id"], "t": v1[-1]["t"], "temp": 7.5}},
    "meta": 99,
    "data": {f: {str(i): d[f] for i, d in enumerate(v1)} for f in ("_id", "t", "temp")}}])
db.p.insert_many(v1)
docs += v1
LO, HI = BASE + datetime.timedelta(minutes=50), BASE + datetime.timedelta(hours=2, minutes=10)


def same(pipeline):
    a = list(db.w.aggregate(pipeline + [{"$sort": {"_id": 1}}]))
    b = list(db.p.aggregate(pipeline + [{"$sort": {"_id": 1}}]))
    assert a == b, (pipeline, a[:3], b[:3])
    assert a, pipeline


def stages(pipeline):
    return db.command("explain", {"aggregate": "w", "pipeline": pipeline, "cursor": {}},
                      verbosity="queryPlanner")["stages"]


AVG = [{"$match": {"t": {"$gte": LO, "$lt": HI}}},
       {"$group": {"_id": {"s": "$s", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                   "avg": {"$avg": "$temp"}, "n": {"$sum": 1}, "hi": {"$max": "$temp"}, "lo": {"$min": "$temp"}}}]


@case
def buckets_of_both_kinds():
    assert db.w.count_documents({}) == len(docs)
    v2 = db.command("count", "w", query={"control.version": 2}, rawData=True)["n"]
    v1 = db.command("count", "w", query={"control.version": 1}, rawData=True)["n"]
    assert v2 > 0 and v1 > 0, (v1, v2)


@case
def average_per_sensor_per_hour():
    same(AVG)
    same([{"$match": {"s": {"$in": [1, 5]}, "t": {"$gt": LO}}}] + AVG[1:])
    same([{"$group": {"_id": {"$dateTrunc": {"date": "$t", "unit": "minute"}}, "v": {"$avg": "$temp"},
                      "f": {"$min": "$temp"}, "l": {"$last": "$t"}}}])


@case
def average_explain_shape():
    st = stages(AVG)
    assert "$cursor" in st[0], st[0]
    un = st[1]["$_internalUnpackBucket"]
    assert un["include"] == ["t", "temp", "s"], un   # sorted, then the metaField
    assert un["eventFilter"] == {"$and": [{"t": {"$gte": LO}}, {"t": {"$lt": HI}}]}, un
    assert un["wholeBucketFilter"] == {"$and": [{"control.min.t": {"$gte": LO}}, {"control.max.t": {"$lt": HI}}]}, un
    assert list(st[2]) == ["$group"], st[2]
    assert len(st) == 3, st


@case
def meta_match_goes_to_the_buckets():
    st = stages([{"$match": {"s": 3, "temp": {"$gt": 10}}}, {"$project": {"temp": 1}}])
    un = st[1]["$_internalUnpackBucket"]
    assert un["eventFilter"] == {"temp": {"$gt": 10}}, un
    assert "wholeBucketFilter" not in un, un
    same([{"$match": {"s": 3, "temp": {"$gt": 10}}}, {"$project": {"temp": 1}}])


@case
def group_on_buckets():
    p = [{"$match": {"s": {"$lt": 6}}},
         {"$group": {"_id": "$s", "hi": {"$max": "$temp"}, "last": {"$max": "$t"}, "n": {"$count": {}}}}]
    st = stages(p)
    assert len(st) == 2 and list(st[1]) == ["$group"], st
    g = st[1]["$group"]
    assert g["_id"] == "$meta" and g["hi"] == {"$max": "$control.max.temp"} and g["last"] == {"$max": "$control.max.t"}, g
    same(p)
    same([{"$group": {"_id": None, "n": {"$sum": 1}, "lo": {"$min": "$s"}}}])
    # $min of a measurement from control.min, $max of a subfield from
    # control.max (field-by-field bounds; a type change closes a bucket, so a
    # null sits in a bucket of nulls the accumulator skips, as unpacked)
    p = [{"$group": {"_id": "$s", "lo": {"$min": "$temp"}, "hi": {"$max": "$temp"}}}]
    st = stages(p)
    assert list(st[1]) == ["$group"] and st[1]["$group"]["lo"] == {"$min": "$control.min.temp"}, st
    same(p)
    # $min of the time stays unpacked (control.min of the time is rounded down)
    assert "$_internalUnpackBucket" in stages([{"$group": {"_id": "$s", "lo": {"$min": "$t"}}}])[1]


@case
def measurement_index():
    """A user index on a measurement field: listIndexes shows the user's
    spec, rawData the bucket one; every range answers what the plain
    collection answers, through the bucket index (explain) and hinted."""
    # temp holds arrays: mongod refuses an index on a measurement field
    # holding one (validateDocumentCommon, 5930501) and builds nothing
    try:
        db.w.create_index([("temp", pymongo.DESCENDING)], name="temp_down")
        raise AssertionError("index on a measurement holding arrays created")
    except pymongo.errors.OperationFailure as e:
        assert e.code == 5930501 and "Indexed measurement field contains an array value" in str(e), e
    assert "temp_down" not in {i["name"] for i in db.w.list_indexes()}
    db.w.create_index([("h", pymongo.DESCENDING)], name="temp_down")
    try:
        shown = {i["name"]: i for i in db.w.list_indexes()}
        assert shown["temp_down"]["key"] == {"h": -1}, shown
        assert "originalSpec" not in shown["temp_down"], shown
        raw = {i["name"]: i for i in db.command("listIndexes", "w", rawData=True)["cursor"]["firstBatch"]}
        assert raw["temp_down"]["key"] == {"control.max.h": -1, "control.min.h": -1}, raw
        for f in ({"h": {"$gt": 90}}, {"h": {"$gte": 99.5}}, {"h": {"$lt": 3}}, {"h": {"$lte": 0}, "s": 4}):
            same([{"$match": f}])
            a = sorted(d["_id"] for d in db.w.find(f, {"_id": 1}).hint("temp_down"))
            b = sorted(d["_id"] for d in db.p.find(f, {"_id": 1}))
            assert a == b, (f, len(a), len(b))
            a = sorted(d["_id"] for d in db.w.find(f, {"_id": 1}).hint([("h", -1)]))
            assert a == b, (f, "by key")
        # the hinted read scans the bucket index under the unpack
        ex = db.command("explain", {"find": "w", "filter": {"temp": {"$gt": 90}}, "hint": {"h": -1}},
                        verbosity="queryPlanner")
        plan = ex["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
        assert plan["stage"] == "FETCH" and plan["inputStage"]["stage"] == "IXSCAN", plan
        assert plan["inputStage"]["indexName"] == "temp_down", plan
        assert "$_internalUnpackBucket" in ex["stages"][1], ex["stages"]
        try:
            db.w.create_index([("h", 1)], unique=True, name="u")
            raise AssertionError("unique index created")
        except pymongo.errors.OperationFailure as e:
            assert e.code == 72, e
    finally:
        db.command("dropIndexes", "w", index={"h": -1})   # by the user's key
    assert "temp_down" not in {i["name"] for i in db.w.list_indexes()}


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
