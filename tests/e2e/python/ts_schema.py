"""Time-series buckets and their schema through PyMongo (issue 19): a
measurement whose field changes canonical type closes its bucket as mongod's
bucket catalog does (numBucketsClosedDueToSchemaChange), never a bucket
mixing types at a path; int/long/double stay one type; a bucket stored with
mixed types (written raw, as Tamga wrote them before) is not reopened
(numBucketReopeningsFailedDueToSchemaGeneration) and reads stay right.

Run by with_tamgad.sh (TAMGA_PORT); prints "N passed, N failed".
"""
import datetime
import os
import sys

import bson
import pymongo

PORT = int(os.environ["TAMGA_PORT"])
passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, (": " + why) if why else ""))


client = pymongo.MongoClient("127.0.0.1", PORT)
db = client.e2e_ts_schema
db.drop_collection("w")
db.create_collection("w", timeseries={"timeField": "t", "metaField": "m"})
BASE = datetime.datetime(2024, 5, 1)


def T(s):
    return BASE + datetime.timedelta(seconds=s)


def stats():
    return db.command("collStats", "w")["timeseries"]


def raw(coll="w"):
    return db.command("find", coll, filter={}, sort={"control.min.t": 1, "_id": 1}, rawData=True)["cursor"]["firstBatch"]


# numbers of every width are one canonical type: one bucket
db.w.insert_many([{"t": T(0), "m": 1, "v": 1}, {"t": T(1), "m": 1, "v": bson.Int64(2)}, {"t": T(2), "m": 1, "v": 2.5}])
check("numbers share a bucket", len(raw()) == 1 and stats()["numBucketsClosedDueToSchemaChange"] == 0, str(stats()))
# a string where numbers were: a new bucket, the old one closed for good
db.w.insert_one({"t": T(3), "m": 1, "v": "high"})
s = stats()
check("a type change closes the bucket", s["numBucketsClosedDueToSchemaChange"] == 1 and len(raw()) == 2, str(s))
# subfields and array positions count too; new fields and missing ones do not
db.w.insert_many([{"t": T(4), "m": 1, "v": "x", "o": {"a": 1}},
                  {"t": T(5), "m": 1, "v": "y", "o": {"a": 2, "b": [1]}},
                  {"t": T(6), "m": 1, "o": {"a": 3}}])
check("new and missing paths keep the bucket", stats()["numBucketsClosedDueToSchemaChange"] == 1, str(stats()))
db.w.insert_one({"t": T(7), "m": 1, "v": "z", "o": {"a": "three"}})
check("a subfield's type change closes it", stats()["numBucketsClosedDueToSchemaChange"] == 2, str(stats()))
db.w.insert_one({"t": T(8), "m": 1, "v": "z", "o": {"a": "four", "b": [1]}})
check("a new subfield keeps it", stats()["numBucketsClosedDueToSchemaChange"] == 2, str(stats()))
db.w.insert_one({"t": T(8), "m": 1, "v": "z", "o": {"a": "five", "b": ["s"]}})
check("an array element's type change closes it", stats()["numBucketsClosedDueToSchemaChange"] == 3, str(stats()))
# null is a type of its own
db.w.insert_one({"t": T(9), "m": 1, "v": None})
check("null after strings closes it", stats()["numBucketsClosedDueToSchemaChange"] == 4, str(stats()))
# the metaField is not part of the schema (another meta is another bucket anyway)
db.w.insert_one({"t": T(10), "m": "one", "v": None})
check("the meta is left out", stats()["numBucketsClosedDueToSchemaChange"] == 4, str(stats()))
# no stored bucket mixes canonical types at a top-level field
mixed = []
for b in raw():
    mn, mx = b["control"]["min"], b["control"]["max"]
    for f in mn:
        if type(mn[f]) is not type(mx[f]) and not (isinstance(mn[f], (int, float)) and isinstance(mx[f], (int, float))):
            mixed.append((b["_id"], f, mn[f], mx[f]))
check("no bucket mixes types", not mixed, str(mixed))
check("reads return every measurement", db.w.count_documents({}) == 12)
check("a read across the buckets", db.w.count_documents({"v": {"$type": "string"}}) == 6)

# a closed bucket is never reopened: an older measurement with the first
# bucket's types goes to another bucket, not into the hard-closed one
before = len(raw())
db.w.insert_one({"t": T(1), "m": 1, "v": 7})
check("a schema-closed bucket takes nothing more", len(raw()) == before + 1, "%d %d" % (len(raw()), before))

# a bucket stored with mixed types (raw, v1, whole-value min/max) is not
# reopened after a restart-like forget: its schema cannot be generated
db.drop_collection("x")
db.create_collection("x", timeseries={"timeField": "t", "metaField": "m"})
t0 = datetime.datetime(2024, 6, 1)
mixed_bucket = {
    "_id": bson.ObjectId.from_datetime(t0),
    "control": {"version": 1, "min": {"t": t0, "v": 1}, "max": {"t": t0 + datetime.timedelta(seconds=1), "v": "s"}},
    "meta": 5,
    "data": {"t": {"0": t0, "1": t0 + datetime.timedelta(seconds=1)}, "v": {"0": 1, "1": "s"}}}
# mongod refuses a raw bucket mixing types (408) until collMod allows it
r = db.command("insert", "x", rawData=True, documents=[mixed_bucket])
check("a raw mixed bucket answers 408", r["n"] == 0 and r.get("writeErrors", [{}])[0].get("code") == 408
      and "timeseriesBucketsMayHaveMixedSchemaData" in r["writeErrors"][0].get("errmsg", ""), str(r))
check("and stores nothing", raw("x") == [])
db.command("collMod", "x", timeseriesBucketsMayHaveMixedSchemaData=True)
db.command("insert", "x", rawData=True, documents=[mixed_bucket])
db.x.insert_one({"t": t0 + datetime.timedelta(seconds=2), "m": 5, "v": 2})
xs = db.command("collStats", "x")["timeseries"]
check("a mixed stored bucket is not reopened",
      len(raw("x")) == 2 and xs["numBucketReopeningsFailedDueToSchemaGeneration"] == 1
      and xs["numBucketsReopened"] == 0, str(xs))
check("its measurements still read", sorted(str(d["v"]) for d in db.x.find()) == ["1", "2", "s"])

# field-by-field control.min/max (mongod's MinMax): objects through their
# fields, so a range on a measurement subfield prunes buckets before
# unpacking; $min/$max of measurements come from the bounds ($group rewrite)
db.drop_collection("s")
db.create_collection("s", timeseries={"timeField": "t", "metaField": "m"})
db.drop_collection("sp")
docs = []
for i in range(400):
    d = {"t": BASE + datetime.timedelta(seconds=i), "m": i % 4, "o": {"a": i, "b": {"c": i % 7}}}
    if i % 50 == 49:
        d["o"] = {"a": "s%d" % i}          # a type change: a bucket of its own
    docs.append(d)
db.s.insert_many(docs)
db.sp.insert_many([dict(d) for d in docs])
b0 = raw("s")[0]
check("control.max of an object is field by field",
      isinstance(b0["control"]["max"]["o"], dict) and "b" in b0["control"]["max"]["o"], str(b0["control"]))
for f in ({"o.a": {"$gt": 390}}, {"o.a": {"$lte": 3}}, {"o.b.c": {"$gte": 6}}, {"o.a": {"$gte": 100, "$lt": 102}}):
    a = sorted(x["o"]["a"] for x in db.s.find(f))
    b = sorted(x["o"]["a"] for x in db.sp.find(f))
    check("subfield range %s answers as a plain collection" % f, a == b and a, "%s %s" % (a[:5], b[:5]))
ex = db.command("explain", {"find": "s", "filter": {"o.a": {"$gt": 390}}}, verbosity="executionStats")
exs = str(ex)
check("the subfield bound reaches the buckets", "control.max.o.a" in exs, exs[:600])
nb = len(raw("s"))
plan = ex["stages"][0]["$cursor"]["executionStats"]["executionStages"] if "stages" in ex else ex["executionStats"]["executionStages"]
check("buckets are pruned", plan["nReturned"] < nb and plan["nReturned"] >= 1, "%s of %d" % (plan.get("nReturned"), nb))
g = [{"$group": {"_id": "$m", "lo": {"$min": "$o.a"}, "hi": {"$max": "$o.b.c"}, "n": {"$count": {}}}}, {"$sort": {"_id": 1}}]
st = db.command("explain", {"aggregate": "s", "pipeline": g, "cursor": {}}, verbosity="queryPlanner")["stages"]
check("$min/$max of subfields on the bounds", "$group" in st[1] and st[1]["$group"]["lo"] == {"$min": "$control.min.o.a"}
      and st[1]["$group"]["hi"] == {"$max": "$control.max.o.b.c"}, str(st)[:400])
check("and answer as unpacked", list(db.s.aggregate(g)) == list(db.sp.aggregate(g)),
      "%s %s" % (list(db.s.aggregate(g))[:2], list(db.sp.aggregate(g))[:2]))
lc = db.command("listCollections", filter={"name": "s"})["cursor"]["firstBatch"][0]
check("listCollections shows mongod's options", "tamgaBucketBounds" not in lc["options"], str(lc))
db.command("create", "s", timeseries={"timeField": "t", "metaField": "m"})   # same options: no error
check("create of the same collection again succeeds", True)
try:
    db.command("create", "s", timeseries={"timeField": "t", "metaField": "other"})
    check("create with other options refused", False)
except pymongo.errors.OperationFailure as e:
    check("create with other options: 48 without Tamga's key in the message",
          e.code == 48 and "tamgaBucketBounds" not in str(e) and "timeField" in str(e), str(e))

# timeseriesBucketsMayHaveMixedSchemaData (mongod's collMod flag): raw writes
# of mixed buckets refused (408, nothing stored) until it is set; then the
# readers leave out what relies on one type per bucket and answer as a plain
# collection with the same measurements
db.drop_collection("mx")
db.drop_collection("mxp")
db.create_collection("mx", timeseries={"timeField": "t", "metaField": "m"})
M0 = datetime.datetime(2024, 8, 1)
good = [{"t": M0 + datetime.timedelta(seconds=i), "m": i % 2, "v": i, "o": {"a": i, "b": i % 5}} for i in range(40)]
db.mx.insert_many([dict(d) for d in good])
db.mxp.insert_many([dict(d) for d in good])
BT = M0 + datetime.timedelta(minutes=30)
bm = [{"_id": bson.ObjectId.from_datetime(BT), "t": BT, "m": 0, "v": 5, "o": {"a": 1, "b": "x"}},
      {"_id": bson.ObjectId.from_datetime(BT + datetime.timedelta(seconds=1)), "t": BT + datetime.timedelta(seconds=1),
       "m": 0, "v": 6, "o": {"a": 50, "b": 3}},
      {"_id": bson.ObjectId.from_datetime(BT + datetime.timedelta(seconds=2)), "t": BT + datetime.timedelta(seconds=2),
       "m": 0, "v": 7, "o": {"a": "z", "b": 4}}]
bucket = {"_id": bson.ObjectId.from_datetime(BT),
          "control": {"version": 1,
                      "min": {"_id": bm[0]["_id"], "t": BT, "v": 5, "o": {"a": 1, "b": 3}},
                      "max": {"_id": bm[-1]["_id"], "t": bm[-1]["t"], "v": 7, "o": {"a": "z", "b": "x"}}},
          "meta": 0,
          "data": {f: {str(i): d[f] for i, d in enumerate(bm)} for f in ("_id", "t", "v", "o")}}
nraw = len(raw("mx"))
r = db.command("insert", "mx", rawData=True, documents=[bucket])
check("mixed subfields: raw insert 408", r.get("writeErrors", [{}])[0].get("code") == 408, str(r))
check("nothing stored", len(raw("mx")) == nraw)
b0 = raw("mx")[0]
r = db.command("update", "mx", rawData=True, updates=[{"q": {"_id": b0["_id"]},
                                                       "u": {"$set": {"control.max.v": "s"}}}])
check("a raw update making a bucket mixed: 408", r.get("writeErrors", [{}])[0].get("code") == 408
      and r["nModified"] == 0, str(r))
check("the bucket unchanged", raw("mx")[0] == b0)
try:
    db.command("findAndModify", "mx", rawData=True, query={"_id": b0["_id"]},
               update={"$set": {"control.min.o": 1}})
    check("findAndModify of a mixed bucket refused", False)
except pymongo.errors.OperationFailure as e:
    check("findAndModify of a mixed bucket refused", e.code == 408, str(e))
db.drop_collection("plain")
db.create_collection("plain")
for bad, code in (({"collMod": "plain", "timeseriesBucketsMayHaveMixedSchemaData": True}, 72),
                  ({"collMod": "mx", "timeseriesBucketsMayHaveMixedSchemaData": "yes"}, 14)):
    try:
        db.command(bad)
        check("collMod %s refused" % bad, False)
    except pymongo.errors.OperationFailure as e:
        check("collMod %s: %d" % (bad, code), e.code == code, str(e))
lc = db.command("listCollections", filter={"name": "mx"})["cursor"]["firstBatch"][0]["options"]
check("no flag shown before", "storageEngine" not in lc, str(lc))
db.command("collMod", "mx", timeseriesBucketsMayHaveMixedSchemaData=True)
lc = db.command("listCollections", filter={"name": "mx"})["cursor"]["firstBatch"][0]["options"]
check("listCollections shows the flag as mongod",
      lc.get("storageEngine") == {"wiredTiger": {"configString":
                                                 "app_metadata=(timeseriesBucketsMayHaveMixedSchemaData=true)"}}
      and "timeseriesBucketsMayHaveMixedSchemaData" not in lc, str(lc))
try:
    db.command("collMod", "mx", timeseriesBucketsMayHaveMixedSchemaData=False)
    check("the flag is never cleared", False)
except pymongo.errors.OperationFailure as e:
    check("the flag is never cleared (72)", e.code == 72, str(e))
db.command("collMod", "mx", timeseriesBucketsMayHaveMixedSchemaData=True)   # again: no change, no error
db.command("create", "mx", timeseries={"timeField": "t", "metaField": "m"})   # same options still
r = db.command("insert", "mx", rawData=True, documents=[bucket])
check("after collMod the mixed bucket is accepted", r["n"] == 1 and "writeErrors" not in r, str(r))
db.mxp.insert_many([dict(d) for d in bm])
for f in ({"o.a": {"$gt": 10}}, {"o.a": {"$lt": 60}}, {"o.b": {"$gte": 3}}, {"o.b": {"$lte": 3}}, {"v": {"$gte": 6}},
          {"o.a": {"$type": "string"}}):
    a = sorted((x["t"], x["v"]) for x in db.mx.find(f))   # the good measurements' _ids differ
    b = sorted((x["t"], x["v"]) for x in db.mxp.find(f))
    check("mixed: %s answers as a plain collection" % f, a == b and a, "%d %d" % (len(a), len(b)))
g = [{"$group": {"_id": "$m", "lo": {"$min": "$o"}, "hi": {"$max": "$o"}, "la": {"$min": "$o.a"},
                 "hb": {"$max": "$o.b"}, "hv": {"$max": "$v"}}}, {"$sort": {"_id": 1}}]
check("mixed: $min/$max answer as unpacked", list(db.mx.aggregate(g)) == list(db.mxp.aggregate(g)),
      "%s %s" % (list(db.mx.aggregate(g)), list(db.mxp.aggregate(g))))
st = db.command("explain", {"aggregate": "mx", "pipeline": g, "cursor": {}}, verbosity="queryPlanner")["stages"]
check("mixed: no $group on the bounds", "$_internalUnpackBucket" in st[1] or "$_internalUnpackBucket" in str(st[0]),
      str(st)[:400])
check("mixed: explain says assumeNoMixedSchemaData false", "'assumeNoMixedSchemaData': False" in str(st), str(st)[:400])
ex = str(db.command("explain", {"find": "mx", "filter": {"o.a": {"$gt": 10}}}, verbosity="queryPlanner"))
check("mixed: no subfield bound", "control.max.o.a" not in ex, ex[:400])
for other in ("mx", "mxp", "plain"):
    db.drop_collection(other)

# the bucket catalog's memory bound (mongod's idle bucket expiry): over
# timeseriesIdleBucketExpiryMemoryUsageThreshold bytes, open buckets are
# archived (least recently used first) and then archived ones forgotten,
# at most timeseriesIdleBucketExpiryMaxCountPerAttempt per insert
adm = client.admin
got = adm.command("getParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=1,
                  timeseriesIdleBucketExpiryMaxCountPerAttempt=1)
check("the expiry parameters", got["timeseriesIdleBucketExpiryMemoryUsageThreshold"] == 0
      and got["timeseriesIdleBucketExpiryMaxCountPerAttempt"] == 3, str(got))
for other in ("w", "x", "s", "mem"):   # the catalog is global: only this collection's buckets in it
    db.drop_collection(other)
db.create_collection("mem", timeseries={"timeField": "t", "metaField": "m"})
adm.command("setParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=1)
try:
    T0 = datetime.datetime(2024, 7, 1)
    db.mem.insert_many([{"t": T0, "m": k, "v": k} for k in range(4)])
    ms = db.command("collStats", "mem")["timeseries"]
    check("over the bound, open buckets are archived", ms["numBucketsArchivedDueToMemoryThreshold"] == 3, str(ms))
    for i in range(1, 4):
        db.mem.insert_one({"t": T0 + datetime.timedelta(seconds=i), "m": 0, "v": i})
    ms = db.command("collStats", "mem")["timeseries"]
    check("then archived ones are closed", ms["numBucketsClosedDueToMemoryThreshold"] > 0, str(ms))
    check("an archived bucket is reopened for its span", ms["numBucketsReopened"] > 0, str(ms))
    check("no measurement lost", db.mem.count_documents({}) == 7 and
          sorted(d["v"] for d in db.mem.find({"m": 0})) == [0, 1, 2, 3])
finally:
    adm.command("setParameter", 1, timeseriesIdleBucketExpiryMemoryUsageThreshold=0)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
