"""Writes of measurements through PyMongo (issue 19): the driver's bulk of
mixed operations (insert/update/delete commands) and mongod 8.0's
cluster-level bulkWrite command on a time-series collection and a plain one
holding the same measurements (same counts, same data after), a missing time
field failing its own operation (2), and findAndModify / updateOne with a
sort refused as mongod 9.0 refuses them (72 InvalidOptions).

Run by with_tamgad.sh (TAMGA_PORT); prints "N passed, N failed".
"""
import datetime
import os
import sys

import pymongo
from pymongo import DeleteMany, DeleteOne, InsertOne, UpdateMany, UpdateOne

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


def code_of(fn):
    try:
        fn()
    except pymongo.errors.OperationFailure as e:
        return e.code
    return 0


client = pymongo.MongoClient("127.0.0.1", PORT)
db = client.e2e_ts_writes
db.drop_collection("w")
db.drop_collection("p")
db.create_collection("w", timeseries={"timeField": "t", "metaField": "s"})
db.create_collection("p")
BASE = datetime.datetime(2024, 3, 1)
docs = [{"_id": i, "t": BASE + datetime.timedelta(seconds=30 * i), "s": i % 5, "v": i} for i in range(300)]
db.w.insert_many(docs)
db.p.insert_many(docs)


def same(what):
    a = list(db.w.find({}, {"_id": 1, "t": 1, "s": 1, "v": 1, "x": 1}).sort("_id", 1))
    b = list(db.p.find({}, {"_id": 1, "t": 1, "s": 1, "v": 1, "x": 1}).sort("_id", 1))
    norm = lambda ds: [sorted(d.items()) for d in ds]  # noqa: E731
    check(what + ": same measurements as the plain collection", norm(a) == norm(b), "%d vs %d" % (len(a), len(b)))


# the driver's bulk of mixed operations (separate insert / update / delete commands)
ops = [InsertOne({"_id": 1000, "t": BASE, "s": 9, "v": -1}),
       UpdateOne({"_id": 10}, {"$inc": {"v": 1000}}),
       UpdateMany({"s": 2}, {"$set": {"x": 1}}),
       DeleteOne({"_id": 11}),
       DeleteMany({"v": {"$lt": 5}}),
       InsertOne({"_id": 1001, "t": BASE + datetime.timedelta(hours=5), "s": 9, "v": -2})]
rw = db.w.bulk_write(ops)
rp = db.p.bulk_write(ops)
check("driver bulk: counts equal", (rw.inserted_count, rw.matched_count, rw.modified_count, rw.deleted_count) ==
      (rp.inserted_count, rp.matched_count, rp.modified_count, rp.deleted_count) and rw.deleted_count > 1,
      "%r vs %r" % (rw.bulk_api_result, rp.bulk_api_result))
same("driver bulk")

# mongod 8.0's bulkWrite command (admin): both namespaces in one request
res = client.admin.command({
    "bulkWrite": 1, "ordered": False,
    "nsInfo": [{"ns": "e2e_ts_writes.w"}, {"ns": "e2e_ts_writes.p"}],
    "ops": [
        {"insert": 0, "document": {"_id": 2000, "t": BASE + datetime.timedelta(minutes=7), "s": 1, "v": 7}},
        {"insert": 1, "document": {"_id": 2000, "t": BASE + datetime.timedelta(minutes=7), "s": 1, "v": 7}},
        {"insert": 0, "document": {"_id": 2001, "s": 1}},   # no time field: its own error
        {"update": 0, "filter": {"s": 3}, "updateMods": {"$inc": {"v": 1}}, "multi": True},
        {"update": 1, "filter": {"s": 3}, "updateMods": {"$inc": {"v": 1}}, "multi": True},
        {"update": 0, "filter": {"_id": 3000, "t": BASE}, "updateMods": {"$set": {"v": 30}}, "upsert": True},
        {"update": 1, "filter": {"_id": 3000, "t": BASE}, "updateMods": {"$set": {"v": 30}}, "upsert": True},
        {"delete": 0, "filter": {"s": 4, "v": {"$gt": 250}}, "multi": True},
        {"delete": 1, "filter": {"s": 4, "v": {"$gt": 250}}, "multi": True},
    ]})
first = res["cursor"]["firstBatch"]
check("bulkWrite: one error, the missing time field (2)", res["nErrors"] == 1 and first[2]["code"] == 2, repr(res))
check("bulkWrite: inserted, matched, upserted, deleted on both", res["nInserted"] == 2 and res["nUpserted"] == 2 and
      first[3]["n"] == first[4]["n"] > 0 and first[7]["n"] == first[8]["n"] > 0, repr(first))
same("bulkWrite")
check("bulkWrite: measurements went into buckets",
      db.command("count", "w", rawData=True)["n"] < db.w.count_documents({}) // 10)

# a sort is refused on measurements (mongod 9.0: InvalidOptions), an empty one is no sort
check("findAndModify with a sort: 72", code_of(lambda: db.w.find_one_and_update(
    {"s": 1}, {"$set": {"x": 2}}, sort=[("t", 1)])) == 72)
check("findAndModify remove with a sort: 72", code_of(lambda: db.w.find_one_and_delete({}, sort=[("v", -1)])) == 72)
check("updateOne with a sort (bulkWrite): 72", client.admin.command({
    "bulkWrite": 1, "nsInfo": [{"ns": "e2e_ts_writes.w"}],
    "ops": [{"update": 0, "filter": {}, "updateMods": {"$set": {"x": 3}}, "sort": {"t": 1}}]})
    ["cursor"]["firstBatch"][0].get("code") == 72)
check("findAndModify without a sort works", db.w.find_one_and_update({"_id": 20}, {"$set": {"x": 4}},
                                                                    return_document=True)["x"] == 4)
db.p.update_one({"_id": 20}, {"$set": {"x": 4}})
same("after the refusals")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
