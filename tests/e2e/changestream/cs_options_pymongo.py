"""changeStreamOptions through PyMongo (issue 17): setClusterParameter /
getClusterParameter against a `tamgad --replSet` -- the default, a value
set, kept across a restart, logged in the oplog, mongod's errors for bad
values -- pre-images in config.system.preimages expired by
preAndPostImages.expireAfterSeconds while the oplog still holds their
entries; and on a standalone with --auth: the privileges (13 without
setClusterParameter / getClusterParameter on the cluster), 20 for
setClusterParameter, getClusterParameter without clusterParameterTime.
    python3 cs_options_pymongo.py path/to/tamgad
Starts its own tamgad (free port, temporary --dbpath); prints "N passed,
N failed".
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pymongo
from bson.timestamp import Timestamp
from pymongo.errors import OperationFailure

TAMGAD = sys.argv[1]
passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, (": " + str(why)) if why != "" else ""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(dbpath, port, log, extra):
    proc = subprocess.Popen([TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", dbpath,
                             "--nounixsocket"] + extra, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError("tamgad exited with %s" % proc.returncode)
        c = socket.socket()
        c.settimeout(0.2)
        if c.connect_ex(("127.0.0.1", port)) == 0:
            c.close()
            break
        c.close()
        time.sleep(0.1)
    return proc


def stop(proc):
    proc.terminate()
    proc.wait(timeout=60)


def code_of(fn):
    try:
        fn()
    except OperationFailure as e:
        return e.code, e.details.get("errmsg")
    return None, None


def primary(port):
    client = pymongo.MongoClient("mongodb://127.0.0.1:%d/?replicaSet=rs0" % port, serverSelectionTimeoutMS=20000)
    client.admin.command("ping")
    return client


def cso(n):
    return {"changeStreamOptions": {"preAndPostImages": {"expireAfterSeconds": n}}}


def replica_set(tmp, log):
    port = free_port()
    proc = start(tmp, port, log, ["--replSet", "rs0", "--replSetAutoInitiate"])
    try:
        client = primary(port)
        admin = client.admin
        r = admin.command("getClusterParameter", "*")
        check("'*' lists changeStreamOptions", [p["_id"] for p in r["clusterParameters"]] == ["changeStreamOptions"], r)
        p = r["clusterParameters"][0]
        check("default is off with Timestamp(0, 0)",
              p == {"_id": "changeStreamOptions", "clusterParameterTime": Timestamp(0, 0),
                    "preAndPostImages": {"expireAfterSeconds": "off"}}, p)
        bad = [
            (cso(-1), 2, "Numeric value of 'expireAfterSeconds' should be positive"),
            (cso(0), 2, "Numeric value of 'expireAfterSeconds' should be positive"),
            (cso("on"), 2, "Non-numeric value of 'expireAfterSeconds' should be 'off'"),
            ({"changeStreamOptions": {}}, 2, None),
            ({"changeStreamOptions": {"preAndPostImages": {}}}, 2, None),
            ({"changeStreamOptions": 1}, 2, "Cluster parameter value must be an object"),
            ({"noSuchParameter": {}}, 4, "Unknown server parameter: noSuchParameter"),
        ]
        for cmd, code, msg in bad:
            got, m = code_of(lambda: admin.command("setClusterParameter", cmd))
            check("setClusterParameter %r -> %d" % (cmd, code), got == code and (msg is None or m == msg), (got, m))
        got, _ = code_of(lambda: admin.command("getClusterParameter", "noSuchParameter"))
        check("getClusterParameter of an unknown name -> 4", got == 4, got)
        got, _ = code_of(lambda: admin.command("getClusterParameter", []))
        check("getClusterParameter [] -> 2", got == 2, got)

        # pre-images kept, then expired by the parameter
        db = client["e2e_cso"]
        db.drop_collection("p")
        db.create_collection("p", changeStreamPreAndPostImages={"enabled": True})
        db.p.insert_one({"_id": 1, "n": 0})
        for _ in range(5):
            db.p.update_one({"_id": 1}, {"$inc": {"n": 1}})
        pre = client.config["system.preimages"]
        check("five pre-images kept with the default", pre.count_documents({}) == 5)
        time.sleep(1.5)
        check("still kept after a while with 'off'", pre.count_documents({}) == 5)
        admin.command("setClusterParameter", cso(1))
        r = admin.command("getClusterParameter", ["changeStreamOptions"])["clusterParameters"][0]
        check("value read back", r["preAndPostImages"]["expireAfterSeconds"] == 1 and
              r["clusterParameterTime"] != Timestamp(0, 0), r)
        logged = list(client.local["oplog.rs"].find({"ns": "config.clusterParameters"}))
        check("the write is in the oplog", len(logged) == 1 and logged[0]["o"]["_id"] == "changeStreamOptions", logged)
        n = -1
        for _ in range(100):
            n = pre.count_documents({})
            if n == 0:
                break
            time.sleep(0.1)
        check("pre-images older than expireAfterSeconds removed", n == 0, n)
        # (Debian's PyMongo has no full_document_before_change: the command)
        r = db.command("update", "p", updates=[{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}])
        at = r["operationTime"]
        r = db.command("aggregate", "p", pipeline=[{"$changeStream": {
            "fullDocumentBeforeChange": "whenAvailable", "startAtOperationTime": at}}], cursor={})
        evs = r["cursor"]["firstBatch"]
        check("a new pre-image still serves the stream",
              len(evs) == 1 and evs[0].get("fullDocumentBeforeChange") == {"_id": 1, "n": 5}, evs)
        db.command("killCursors", "p", cursors=[r["cursor"]["id"]])
        admin.command("setClusterParameter", cso("off"))
        check("'off' again", admin.command("getClusterParameter", "changeStreamOptions")["clusterParameters"][0]
              ["preAndPostImages"] == {"expireAfterSeconds": "off"})
        admin.command("setClusterParameter", cso(3600))
        client.close()
    finally:
        stop(proc)
    proc = start(tmp, port, log, ["--replSet", "rs0"])
    try:
        client = primary(port)
        r = client.admin.command("getClusterParameter", "changeStreamOptions")["clusterParameters"][0]
        check("kept across a restart", r["preAndPostImages"]["expireAfterSeconds"] == 3600, r)
        client.close()
    finally:
        stop(proc)


def standalone(tmp, log):
    port = free_port()
    proc = start(tmp, port, log, ["--auth"])
    try:
        uri = "mongodb://127.0.0.1:%d" % port
        local = pymongo.MongoClient(uri, directConnection=True)
        local.admin.command("createUser", "root", pwd="pw", roles=["root"])
        local.close()
        root = pymongo.MongoClient(uri, username="root", password="pw", directConnection=True)
        root.admin.command("createUser", "reader", pwd="pw", roles=["readAnyDatabase"])
        root.admin.command("createUser", "monitor", pwd="pw", roles=["clusterMonitor"])
        got, m = code_of(lambda: root.admin.command("setClusterParameter", cso(10)))
        check("standalone refuses setClusterParameter (20)",
              got == 20 and m == "setClusterParameter cannot be run on standalones", (got, m))
        r = root.admin.command("getClusterParameter", "*")["clusterParameters"]
        check("standalone: no clusterParameterTime",
              r == [{"_id": "changeStreamOptions", "preAndPostImages": {"expireAfterSeconds": "off"}}], r)
        reader = pymongo.MongoClient(uri, username="reader", password="pw", directConnection=True)
        got, _ = code_of(lambda: reader.admin.command("getClusterParameter", "*"))
        check("getClusterParameter needs its action (13)", got == 13, got)
        monitor = pymongo.MongoClient(uri, username="monitor", password="pw", directConnection=True)
        got, _ = code_of(lambda: monitor.admin.command("getClusterParameter", "changeStreamOptions"))
        check("clusterMonitor may getClusterParameter", got is None, got)
        got, _ = code_of(lambda: monitor.admin.command("setClusterParameter", cso(10)))
        check("clusterMonitor may not setClusterParameter (13)", got == 13, got)
        for c in (root, reader, monitor):
            c.close()
    finally:
        stop(proc)


def main():
    tmp = tempfile.mkdtemp(prefix="tamga-cso-")
    try:
        with open(tmp + "/log", "w") as log:
            os.makedirs(tmp + "/rs")
            os.makedirs(tmp + "/sa")
            replica_set(tmp + "/rs", log)
            standalone(tmp + "/sa", log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
