"""rs_pymongo.py -- PyMongo against a single-node replica set: initiated
through a direct connection, then discovered from a plain
mongodb://127.0.0.1:PORT and from ?replicaSet=rs0 (the server is the
set's RSPrimary; with replicaSet= the topology is ReplicaSetWithPrimary), writes and reads
(retryWrites=false until retryable writes exist), a causally consistent
session's operation_time, and the bad concerns mongod refuses.
Run on `tamgad --replSet rs0`; TAMGA_PORT comes from with_tamgad.sh."""
import os
import sys
import time

import pymongo
from pymongo.errors import OperationFailure, WriteConcernError

PORT = int(os.environ["TAMGA_PORT"])
HOST = "127.0.0.1:%d" % PORT
passed = failed = 0


def check(name, cond, detail=None):
    global passed, failed
    if cond:
        passed += 1
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, "" if detail is None else ": %r" % (detail,)))


direct = pymongo.MongoClient("mongodb://%s/?directConnection=true&retryWrites=false" % HOST,
                             serverSelectionTimeoutMS=10000)
hello = direct.admin.command("hello")
check("before initiation: isreplicaset", hello.get("isreplicaset") is True, hello)
r = direct.admin.command("replSetInitiate", {})
check("replSetInitiate", r["ok"] == 1 and r["me"] == HOST, r)
for _ in range(100):
    if direct.admin.command("hello").get("isWritablePrimary"):
        break
    time.sleep(0.1)
direct.close()

for what, uri in (("a plain URI", "mongodb://%s/?retryWrites=false" % HOST),
                  ("replicaSet=rs0", "mongodb://%s/?replicaSet=rs0&retryWrites=false" % HOST)):
    c = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
    coll = c.e2e_rs_py.c
    coll.insert_one({"what": what})
    td = c._topology.description
    sd = td.server_descriptions()[("127.0.0.1", PORT)]
    # PyMongo 3.x connects to a single seed without replicaSet directly
    # (topology Single); the server it describes is still the set's primary
    check("%s: the server is RSPrimary of rs0" % what,
          sd.server_type_name == "RSPrimary" and sd.replica_set_name == "rs0", (sd.server_type_name, sd.replica_set_name))
    if what == "replicaSet=rs0":
        check("%s: topology ReplicaSetWithPrimary" % what,
              td.topology_type_name == "ReplicaSetWithPrimary", td.topology_type_name)
        check("%s: primary is this node" % what, c.primary == ("127.0.0.1", PORT), c.primary)
    check("%s: the write is read back" % what, coll.count_documents({"what": what}) == 1)
    c.close()

c = pymongo.MongoClient("mongodb://%s/?replicaSet=rs0&retryWrites=false" % HOST)
coll = c.e2e_rs_py.cc
with c.start_session(causal_consistency=True) as s:
    coll.insert_one({"x": 1}, session=s)
    t1 = s.operation_time
    coll.insert_one({"x": 2}, session=s)
    check("a session's operation_time moves with writes", t1 is not None and s.operation_time > t1,
          (t1, s.operation_time))
    check("a causally consistent read", len(list(coll.find({}, session=s))) == 2)

try:
    c.e2e_rs_py.command("find", "cc", readConcern={"level": "unknown"})
    check("readConcern level unknown: BadValue", False)
except OperationFailure as e:
    check("readConcern level unknown: BadValue", e.code == 2, e.details)
try:
    c.e2e_rs_py.cc.with_options(write_concern=pymongo.WriteConcern(w=2)).insert_one({"x": 3})
    check("w: 2 on one member: writeConcernError 100", False)
except WriteConcernError as e:
    check("w: 2 on one member: writeConcernError 100", e.code == 100, e.details)
check("... the write applied", coll.count_documents({"x": 3}) == 1)
st = c.admin.command("replSetGetStatus")
check("replSetGetStatus", st["set"] == "rs0" and st["members"][0]["stateStr"] == "PRIMARY", st)
c.close()

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
