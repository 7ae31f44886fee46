"""find by _id through PyMongo against tamgad (issue 23): the express path
(EXPRESS_IXSCAN, no plan built) must answer what the general path answers --
find_one by int, long, double, ObjectId, a missing _id, a missing collection,
a view, with a session (lsid), with a comment -- and leave mongod's traces:
explain's EXPRESS_IXSCAN, the profiler's planSummary and examined counts,
$indexStats accesses on _id_.  Prints "N passed, N failed".
"""
import os
import sys

import pymongo
from bson import ObjectId
from bson.int64 import Int64

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


client = pymongo.MongoClient("127.0.0.1", PORT, serverSelectionTimeoutMS=10000)
db = client.e2e_express
db.c.drop()
oid = ObjectId()
db.c.insert_many([{"_id": 1, "v": "int"}, {"_id": Int64(2 ** 53 + 1), "v": "long"}, {"_id": 2.5, "v": "dbl"},
                  {"_id": oid, "v": "oid"}, {"_id": "s", "v": "str"}])


def ops(name="_id_"):
    for s in db.c.aggregate([{"$indexStats": {}}]):
        if s["name"] == name:
            return s["accesses"]["ops"]
    return None


@case
def answers():
    assert db.c.find_one({"_id": 1}) == {"_id": 1, "v": "int"}
    assert db.c.find_one({"_id": 1.0}) == {"_id": 1, "v": "int"}
    assert db.c.find_one({"_id": Int64(2 ** 53 + 1)})["v"] == "long"
    assert db.c.find_one({"_id": Int64(2 ** 53)}) is None
    assert db.c.find_one({"_id": 2.5})["v"] == "dbl"
    assert db.c.find_one({"_id": oid})["v"] == "oid"
    assert db.c.find_one({"_id": "s"})["v"] == "str"       # general path
    assert db.c.find_one({"_id": 99}) is None
    assert db.nope.find_one({"_id": 1}) is None
    assert list(db.c.find({"_id": 1}).comment("hi")) == [{"_id": 1, "v": "int"}]
    with client.start_session() as s:
        assert db.c.find_one({"_id": 1}, session=s) == {"_id": 1, "v": "int"}


@case
def reply_shape():
    r = db.command("find", "c", filter={"_id": 1})
    assert r["cursor"]["id"] == 0 and r["cursor"]["ns"] == "e2e_express.c", r
    assert r["cursor"]["firstBatch"] == [{"_id": 1, "v": "int"}], r
    assert r["ok"] == 1.0
    r = db.command("find", "c", filter={"_id": 7})
    assert r["cursor"]["firstBatch"] == [] and r["cursor"]["id"] == 0, r


@case
def unknown_field_still_refused():
    try:
        db.command("find", "c", filter={"_id": 1}, bogus=1)
        raise AssertionError("no error")
    except pymongo.errors.OperationFailure as e:
        assert e.code == 40415, e


@case
def view():
    db.v.drop()
    db.command("create", "v", viewOn="c", pipeline=[{"$match": {"v": "int"}}])
    assert db.v.find_one({"_id": 1}) == {"_id": 1, "v": "int"}
    assert db.v.find_one({"_id": 2.5}) is None


@case
def traces():
    before = ops()
    db.c.find_one({"_id": 1})
    db.c.find_one({"_id": 42})
    assert ops() - before == 2, (before, ops())
    e = db.command("explain", {"find": "c", "filter": {"_id": 1}}, verbosity="executionStats")
    assert e["queryPlanner"]["winningPlan"]["stage"] == "EXPRESS_IXSCAN", e["queryPlanner"]
    assert e["executionStats"]["totalKeysExamined"] == 1 and e["executionStats"]["nReturned"] == 1
    db.command("profile", 2)
    db.c.find_one({"_id": 2.5})
    db.command("profile", 0)
    p = list(db.system.profile.find({"ns": "e2e_express.c", "op": "query", "command.filter._id": 2.5}))
    assert p, "no profile entry"
    assert p[-1]["planSummary"] == "EXPRESS_IXSCAN { _id: 1 }", p[-1]
    assert p[-1]["keysExamined"] == 1 and p[-1]["docsExamined"] == 1 and p[-1]["nreturned"] == 1, p[-1]


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
