"""Index options on time-series collections through PyMongo against tamgad
(issue 19), as mongod 9.0 has them:
  - partial filter expressions on the metaField, the timeField and measurement
    fields, translated to bucket predicates (listIndexes in the user's terms,
    rawData: true in the buckets'); mongod's refusals (5916301 for what has no
    bucket form, 85 with a collation); reads with such indexes present answer
    what a plain collection holding the same measurements answers (random
    filters over mixed types, NaN and missing values; arrays in a field no
    index holds), and a query
    implied by a time partial filter scans that index;
  - an array in an indexed measurement field (mongod's 5930501): createIndex
    refused with nothing built, an insert or update putting one there refused
    with nothing stored; arrays in fields no index holds stay fine;
  - TTL indexes (expireAfterSeconds on the timeField with a metaField-only
    partial filter): the TTL monitor (ttlMonitorSleepSecs=1, given by the
    test registration) deletes whole buckets of that meta once every
    measurement they may hold is expired (control.min.<time> older than
    expireAfterSeconds + bucketMaxSpanSeconds), nothing of other metas, nothing
    recent; mongod's refusals (72).
Prints "N passed, N failed".
"""
import datetime
import math
import os
import random
import sys
import time

import pymongo
from bson import ObjectId
from bson.binary import Binary
from pymongo.errors import OperationFailure

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


def refused(code, fn):
    try:
        fn()
    except OperationFailure as e:
        assert e.code == code, (code, e.code, str(e))
        return str(e)
    raise AssertionError("not refused (wanted %d)" % code)


client = pymongo.MongoClient("127.0.0.1", PORT)
db = client.e2e_ts_index_opts
db.command("dropDatabase")
T0 = datetime.datetime(2026, 3, 1)   # naive: UTC, as PyMongo returns dates
rng = random.Random(19)
VALUES = [1, 5, -3, 7.5, float("nan"), "a", "b", True, [1], [9, "c"], [], {"k": 1}, None,
          T0, 2 ** 40, 6]
# an indexed measurement field holds no array (mongod refuses them, 5930501):
# x (indexed below) takes these, z (never indexed) every value
X_VALUES = [v for v in VALUES if not isinstance(v, list)]


def measurements(n):
    out = []
    for i in range(n):
        d = {"t": T0 + datetime.timedelta(seconds=37 * i), "m": {"s": i % 4}}
        if rng.random() < 0.85:
            d["x"] = rng.choice(VALUES[:7]) if rng.random() < 0.6 else rng.choice(X_VALUES)
        if rng.random() < 0.5:
            d["z"] = rng.choice(VALUES)
        if rng.random() < 0.7:
            d["y"] = rng.randint(0, 20)
        out.append(d)
    return out


def same(filter_, ts, plain):
    def key(d):
        return repr(sorted((k, repr(v)) for k, v in d.items() if k != "_id"))
    a = sorted((key(d) for d in ts.find(filter_)))
    b = sorted((key(d) for d in plain.find(filter_)))
    assert a == b, (filter_, len(a), len(b))


@case
def partial_measurement_and_time():
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    ms = measurements(1500)
    db.w.insert_many([dict(d) for d in ms])
    db.plain.insert_many([dict(d) for d in ms])
    db.w.create_index([("y", 1)], name="y_big", partialFilterExpression={"x": {"$gt": 5}})
    db.w.create_index([("m.s", 1)], name="late",
                      partialFilterExpression={"t": {"$gte": T0 + datetime.timedelta(hours=10)}})
    db.w.create_index([("x", 1)], name="x_in",
                      partialFilterExpression={"$or": [{"x": {"$in": [1, "b"]}}, {"m.s": 2}]})
    shown = {i["name"]: i for i in db.w.list_indexes()}
    assert shown["y_big"]["key"] == {"y": 1} and shown["y_big"]["partialFilterExpression"] == {"x": {"$gt": 5}}, \
        shown["y_big"]
    raw = {i["name"]: i for i in db.command("listIndexes", "w", rawData=True)["cursor"]["firstBatch"]}
    assert raw["late"]["partialFilterExpression"] == \
        {"control.max.t": {"$gte": T0 + datetime.timedelta(hours=10)}}, raw["late"]
    assert "$or" in raw["y_big"]["partialFilterExpression"], raw["y_big"]
    assert raw["y_big"]["key"] == {"control.min.y": 1, "control.max.y": 1}, raw["y_big"]
    # a query the time partial filter implies scans that index
    q = {"m.s": 1, "t": {"$gte": T0 + datetime.timedelta(hours=12)}}
    ex = db.command("explain", {"find": "w", "filter": q}, verbosity="queryPlanner")
    assert "late" in repr(ex["stages"][0]), ex["stages"][0]
    same(q, db.w, db.plain)
    # random filters, the partial indexes present: the plain collection's answers
    ops = ["$gt", "$gte", "$lt", "$lte", "$eq"]
    for _ in range(150):
        f = rng.choice(["x", "y", "z"])
        v = rng.choice([1, 5, 6, 7.5, -3, "b", True, 10, 15])
        filt = {f: {rng.choice(ops): v}}
        if rng.random() < 0.3:
            filt["m.s"] = rng.randint(0, 3)
        if rng.random() < 0.3:
            filt["t"] = {"$gte": T0 + datetime.timedelta(hours=rng.randint(0, 16))}
        same(filt, db.w, db.plain)
    # writes keep the partial indexes right (measurements moved in and out)
    db.w.update_many({"y": {"$lt": 3}}, {"$set": {"x": 100}})
    db.plain.update_many({"y": {"$lt": 3}}, {"$set": {"x": 100}})
    db.w.delete_many({"x": "b"})
    db.plain.delete_many({"x": "b"})
    for q in ({"x": {"$gt": 5}}, {"x": {"$gt": 5}, "y": {"$gte": 1}}, {"x": 1}, {"x": 100, "m.s": 2}):
        same(q, db.w, db.plain)
    db.command("validate", "w")


@case
def indexed_measurement_arrays():
    """mongod's validateDocumentCommon: an array in an indexed measurement
    field refuses the index build and the write (5930501); arrays elsewhere
    are fine."""
    db.create_collection("ar", timeseries={"timeField": "t", "metaField": "m"})
    db.ar.insert_many([{"t": T0, "m": 1, "x": 1, "z": [1, 2]},
                       {"t": T0 + datetime.timedelta(seconds=1), "m": 1, "x": 2.5, "z": []},
                       {"t": T0, "m": 2, "x": [3, 4]},
                       {"t": T0, "m": 3, "w": {"a": [1]}}])
    names = sorted(i["name"] for i in db.ar.list_indexes())
    raw = len(db.command("listIndexes", "ar", rawData=True)["cursor"]["firstBatch"])
    msg = refused(5930501, lambda: db.ar.create_index([("x", 1)], name="x_arr"))
    assert "Indexed measurement field contains an array value" in msg, msg
    refused(5930501, lambda: db.ar.create_index([("m", 1), ("w.a", -1)], name="wa_arr"))
    assert sorted(i["name"] for i in db.ar.list_indexes()) == names
    assert len(db.command("listIndexes", "ar", rawData=True)["cursor"]["firstBatch"]) == raw
    # without the array the index builds; arrays in z (not indexed) stay fine
    db.ar.delete_many({"m": 2})
    db.ar.create_index([("x", 1)], name="x_ok")
    db.ar.create_index([("w.b", 1)], name="wb_ok")   # w.a holds the array, not w.b
    db.ar.insert_one({"t": T0 + datetime.timedelta(seconds=2), "m": 1, "x": 4, "z": [7, [8]]})
    assert db.ar.count_documents({"z": 7}) == 1
    # a measurement with an array in x: refused, nothing stored
    n = db.ar.count_documents({})
    refused(5930501, lambda: db.ar.insert_one({"t": T0 + datetime.timedelta(seconds=3), "m": 1, "x": [5]}))
    refused(5930501, lambda: db.ar.insert_one({"t": T0 + datetime.timedelta(seconds=3), "m": 9, "x": []}))
    assert db.ar.count_documents({}) == n
    assert db.ar.count_documents({"x": 5}) == 0 and db.ar.count_documents({"m": 9}) == 0
    # nor may an update put one there
    refused(5930501, lambda: db.ar.update_one({"x": 4}, {"$set": {"x": [4]}}))
    assert db.ar.count_documents({"x": 4}) == 1 and db.ar.count_documents({"x": [4]}) == 0
    db.command("validate", "ar")


@case
def partial_refusals():
    msg = refused(5916301, lambda: db.w.create_index([("y", 1)], name="p1",
                                                     partialFilterExpression={"x": {"$ne": 1}}))
    assert "Error translating non-metadata time-series predicate to operate on buckets" in msg, msg
    refused(5916301, lambda: db.w.create_index([("y", 1)], name="p2", partialFilterExpression={"x": None}))
    refused(5916301, lambda: db.w.create_index([("y", 1)], name="p3", partialFilterExpression={"t": {"$gt": 5}}))
    refused(85, lambda: db.w.create_index([("y", 1)], name="p4", partialFilterExpression={"x": {"$gt": 1}},
                                          collation={"locale": "fr"}))
    assert not {"p1", "p2", "p3", "p4"} & {i["name"] for i in db.w.list_indexes()}


@case
def ttl_index_deletes_whole_expired_buckets():
    db.create_collection("tt", timeseries={"timeField": "t", "metaField": "m",
                                           "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 60})
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    docs = []
    for meta in ("a", "b"):
        for age in (3000, 2900, 1000, 400, 200):           # expired for expireAfterSeconds 100
            docs.append({"t": now - datetime.timedelta(seconds=age), "m": meta, "age": age})
        for age in (20, 5):                                 # recent
            docs.append({"t": now - datetime.timedelta(seconds=age), "m": meta, "age": age})
    db.tt.insert_many(docs)
    refused(72, lambda: db.tt.create_index([("t", 1)], expireAfterSeconds=100, name="bad"))
    refused(72, lambda: db.tt.create_index([("t", 1)], expireAfterSeconds=100, name="bad",
                                           partialFilterExpression={"m": "a", "age": {"$gt": 1}}))
    refused(72, lambda: db.tt.create_index([("age", 1)], expireAfterSeconds=100, name="bad",
                                           partialFilterExpression={"m": "a"}))
    refused(67, lambda: db.tt.create_index([("t", 1), ("m", 1)], expireAfterSeconds=100, name="bad",
                                           partialFilterExpression={"m": "a"}))
    db.tt.create_index([("t", 1)], expireAfterSeconds=100, name="ttl_a", partialFilterExpression={"m": "a"})
    ix = {i["name"]: i for i in db.tt.list_indexes()}["ttl_a"]
    assert ix["key"] == {"t": 1} and ix["expireAfterSeconds"] == 100, ix
    raw = {i["name"]: i for i in db.command("listIndexes", "tt", rawData=True)["cursor"]["firstBatch"]}["ttl_a"]
    assert raw["key"] == {"control.min.t": 1} and raw["partialFilterExpression"] == {"meta": "a"}, raw
    deadline = time.time() + 30
    while time.time() < deadline:
        left = sorted(d["age"] for d in db.tt.find({"m": "a"}))
        if len(left) == 2:
            break
        time.sleep(0.5)
    # the bucket of age 200 may hold times up to 60 s later, so it goes only
    # when its start is older than 100 + 60 s: it has (start <= now - 200)
    assert sorted(d["age"] for d in db.tt.find({"m": "a"})) == [5, 20], list(db.tt.find({"m": "a"}))
    assert sorted(d["age"] for d in db.tt.find({"m": "b"})) == [5, 20, 200, 400, 1000, 2900, 3000]
    st = db.command("serverStatus")["metrics"]["ttl"]
    assert st["deletedDocuments"] >= 1, st
    db.tt.drop_index("ttl_a")
    assert "ttl_a" not in {i["name"] for i in db.tt.list_indexes()}


@case
def ttl_keeps_a_bucket_until_its_span_has_passed():
    # granularity seconds: buckets start on a minute and span an hour
    db.create_collection("tk", timeseries={"timeField": "t", "metaField": "m", "granularity": "seconds"})
    now = datetime.datetime.now(datetime.timezone.utc)
    # expired by expireAfterSeconds 1, but its bucket (started at most 90 s
    # ago) may still take times up to an hour after its start: mongod keeps
    # it (safeExpirationDate)
    db.tk.insert_one({"t": now - datetime.timedelta(seconds=30), "m": 1})
    # a bucket whose whole hour ended more than a second ago: deleted
    db.tk.insert_one({"t": now - datetime.timedelta(hours=3), "m": 1})
    db.tk.create_index([("t", -1)], expireAfterSeconds=1, name="ttl", partialFilterExpression={"m": 1})
    deadline = time.time() + 30
    while time.time() < deadline and db.tk.count_documents({}) != 1:
        time.sleep(0.5)
    passes = db.command("serverStatus")["metrics"]["ttl"]["passes"]
    while time.time() < deadline and db.command("serverStatus")["metrics"]["ttl"]["passes"] < passes + 2:
        time.sleep(0.5)
    left = list(db.tk.find())
    assert len(left) == 1 and left[0]["t"] > (now - datetime.timedelta(minutes=1)).replace(tzinfo=None), left


@case
def partial_filter_chosen_as_mongod():
    """timeseries_index_partial.js: mongod's planner takes a partial index
    when the query's bucket-level predicate implies the index's (its
    $_internalExpr bounds, strict on another operator's equal constant);
    explain's winning plan names it, and answers stay the plain ones."""
    db.create_collection("pc", timeseries={"timeField": "time", "metaField": "m"})
    docs = []
    for k, name in enumerate("ABC"):
        for i in range(5):
            b = 20 - 4 * i if k == 0 else (99 if k == 1 else 0)
            docs.append({"time": datetime.datetime(2000, 1, 1, 0, 0, i), "m": {"bucket": name},
                         "a": k * 5 + i, "b": b})
    db.pc.insert_many([dict(d) for d in docs])
    db.pcp.insert_many([dict(d) for d in docs])
    cases = [
        ({"b": {"$lt": 12}}, {"a": {"$lt": 999}, "b": {"$lt": 12}}, True),
        ({"b": {"$lt": 12}}, {"a": {"$lt": 999}, "b": {"$lt": 11}}, True),
        ({"b": {"$lt": 12}}, {"a": {"$lt": 999}, "b": {"$lt": 13}}, False),
        ({"b": {"$lte": 12}}, {"a": {"$lt": 999}, "b": {"$lte": 11}}, True),
        ({"b": {"$lte": 12}}, {"a": {"$lt": 999}, "b": {"$lt": 12}}, False),
        ({"b": {"$gt": 12}}, {"a": {"$lt": 999}, "b": {"$gt": 13}}, True),
        ({"b": {"$gte": 12}}, {"a": {"$lt": 999}, "b": {"$gte": 12}}, True),
        ({"b": {"$gte": 12}}, {"a": {"$lt": 999}}, False),
        ({"m.bucket": {"$gte": "B"}}, {"a": {"$lt": 999}, "m.bucket": "C"}, True),
        ({"m.bucket": {"$gte": "B"}}, {"a": {"$lt": 999}, "m.bucket": "A"}, False),
        ({"$or": [{"b": {"$lt": 2}}, {"m.bucket": "C"}]}, {"a": {"$lt": 999}, "b": {"$lt": 1}}, True),
    ]
    for pf, q, used in cases:
        db.pc.create_index([("a", 1)], name="a_1", partialFilterExpression=pf)
        ex = db.command("explain", {"find": "pc", "filter": q}, verbosity="queryPlanner")
        wp = ex["stages"][0]["$cursor"]["queryPlanner"]["winningPlan"]
        assert ("'a_1'" in repr(wp)) == used, (pf, q, wp)
        same(q, db.pc, db.pcp)
        db.pc.drop_index("a_1")


@case
def mixed_schema_measurement_index_refused():
    """An index reading a measurement on a collection flagged
    timeseriesBucketsMayHaveMixedSchemaData whose buckets mix types: mongod's
    67 CannotCreateIndex, nothing built; meta indexes still build."""
    db.create_collection("mx", timeseries={"timeField": "t", "metaField": "m"})
    db.mx.insert_many([{"t": T0, "m": 1, "a": 1}, {"t": T0 + datetime.timedelta(seconds=1), "m": 1, "a": 2}])
    db.command("collMod", "mx", timeseriesBucketsMayHaveMixedSchemaData=True)
    t1 = T0 + datetime.timedelta(hours=2)
    bucket = {"_id": ObjectId.from_datetime(t1),
              "control": {"version": 1, "min": {"_id": 1, "t": t1, "a": 3}, "max": {"_id": 2, "t": t1, "a": "x"}},
              "meta": 2, "data": {"_id": {"0": 1, "1": 2}, "t": {"0": t1, "1": t1}, "a": {"0": 3, "1": "x"}}}
    db.command("insert", "mx", documents=[bucket], rawData=True)
    uuid = db.command("listCollections", filter={"name": "mx"})["cursor"]["firstBatch"][0]["info"]["uuid"]
    uuid = str(uuid.as_uuid() if isinstance(uuid, Binary) else uuid)
    msg = refused(67, lambda: db.mx.create_index([("a", 1)], name="a_1"))
    assert ("Index build on collection 'e2e_ts_index_opts.mx' (%s) failed due to the detection of mixed-schema "
            "data in the time-series buckets collection" % uuid) in msg, msg
    assert "a_1" not in {i["name"] for i in db.mx.list_indexes()}
    refused(67, lambda: db.mx.create_index([("m", 1)], name="m_part", partialFilterExpression={"a": {"$gt": 0}}))
    db.mx.create_index([("m", -1)], name="m_desc")
    db.command("delete", "mx", deletes=[{"q": {"_id": bucket["_id"]}, "limit": 1}], rawData=True)
    db.mx.create_index([("a", 1)], name="a_1")


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
