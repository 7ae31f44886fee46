"""raft_set.py -- a replica set of three tamgad members on 127.0.0.1 (issue 24):
bad configurations, initiation, election, hello and replSetGetStatus, the
secondary's gate, replication of CRUD / DDL / transactions (every member's
data equal: a hash of each collection in _id order), and kill -9 of the
primary under a PyMongo write load (retryWrites, replicaSet URI, w:
"majority"): a new primary within 10 s, every acknowledged write on the
survivors, and the killed member back in the set as a secondary with the
same data (after a rollback when it held unreplicated entries).

usage: raft_set.py path/to/tamgad [path/to/mongosh]
"""
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import bson
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, __import__("os").path.dirname(__file__))
from raft_cluster import Cluster, coll_hash, free_ports, wait_equal  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def expect_code(fn, code, what):
    try:
        fn()
    except PyMongoError as e:
        got = getattr(e, "code", None)
        if got is None and isinstance(getattr(e, "details", None), dict):
            got = e.details.get("code")
        check(got == code, "%s: expected code %d, got %r (%s)" % (what, code, got, e))
        return e
    raise AssertionError("%s: expected code %d, got success" % (what, code))


def raw_command(host, db, cmd):
    """One OP_MSG without the secondaryOk a driver adds on a direct
    connection."""
    h, p = host.rsplit(":", 1)
    body = dict(cmd)
    body["$db"] = db
    doc = bson.encode(body)
    msg = struct.pack("<iiii", 16 + 4 + 1 + len(doc), 7, 0, 2013) + struct.pack("<I", 0) + b"\x00" + doc
    with socket.create_connection((h, int(p)), timeout=10) as s:
        s.sendall(msg)
        hdr = b""
        while len(hdr) < 16:
            hdr += s.recv(16 - len(hdr))
        n = struct.unpack("<i", hdr[:4])[0] - 16
        rest = b""
        while len(rest) < n:
            rest += s.recv(n - len(rest))
    return bson.decode(rest[5:])


def bad_configs(cl):
    m0, m1 = cl.members[0], cl.members[1]
    with m0.client() as c:
        cfg = cl.config()
        cfg["members"][2]["host"] = cfg["members"][1]["host"]
        e = expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "duplicate hosts")
        check("same host field" in str(e), "duplicate hosts message: %s" % e)
        cfg = cl.config()
        cfg["members"][2]["_id"] = 1
        expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "duplicate _id")
        # a member that does not answer: nothing is stored anywhere
        dead = free_ports(1)[0]
        cfg = cl.config()
        cfg["members"][2]["host"] = "127.0.0.1:%d" % dead
        e = expect_code(lambda: c.admin.command("replSetInitiate", cfg), 74, "unreachable member")
        check("quorum check failed" in str(e), "unreachable member message: %s" % e)
        # a member port whose Raft port would pass 65535
        cfg = cl.config()
        cfg["members"][2]["host"] = "127.0.0.1:65000"
        expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "raft port out of range")
        # this node is not in the configuration
        cfg = cl.config()
        cfg["members"] = cfg["members"][1:]
        # mongod's replSetInitiate answers validateConfigForInitiate's
        # NodeNotFound as 93 with its reason
        e = expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "self not a member")
        check("maps to this node" in str(e), "self not a member message: %s" % e)
        # another set name: mongod's 9.0 text
        cfg = cl.config()
        cfg["_id"] = "other"
        e = expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "another set name")
        check("Rejecting initiate with a set name that differs from command line set name, initiate set name: other, "
              "command line set name: %s" % cl.set_name in str(e), "another set name message: %s" % e)
        # a version other than 1
        cfg = cl.config()
        cfg["version"] = 3
        e = expect_code(lambda: c.admin.command("replSetInitiate", cfg), 93, "initiate version 3")
        check("must  have version 1, but found 3" in str(e), "initiate version message: %s" % e)
    for m in (m0, m1):
        with m.client() as c:
            expect_code(lambda: c.admin.command("replSetGetStatus"), 94, "nothing stored after a failed initiate")


def initiate(cl):
    with cl.members[0].client() as c:
        r = c.admin.command("replSetInitiate", cl.config())
        check(r["ok"] == 1, "initiate ok")
        expect_code(lambda: c.admin.command("replSetInitiate", cl.config()), 23, "initiate twice")
    t0 = time.time()
    p = cl.wait_primary(20)
    print("elected %s in %.1fs" % (p.host, time.time() - t0))
    return p


def topology(cl, p):
    secs = [m for m in cl.members if m is not p]
    with p.client() as c:
        h = c.admin.command("hello")
        check(h["isWritablePrimary"] and not h["secondary"], "primary's hello")
        check(sorted(h["hosts"]) == sorted(m.host for m in cl.members), "hosts: %r" % h["hosts"])
        check(h["primary"] == p.host and h["me"] == p.host, "primary/me")
        check(h["setName"] == "rs0" and h["setVersion"] == 1, "setName/setVersion")
        term = int(str(h["electionId"])[-16:], 16)
        check(term >= 1, "electionId carries the term: %s" % h["electionId"])
        st = c.admin.command("replSetGetStatus")
        check(st["term"] == term, "status term %r vs electionId %r" % (st["term"], term))
        check(len(st["members"]) == 3, "three members in status")
    # secondaries learn the primary within a heartbeat or two
    deadline = time.time() + 10
    while True:
        ok = True
        for s in secs:
            with s.client() as c:
                h = c.admin.command("hello")
                st = c.admin.command("replSetGetStatus")
            ok = ok and h["secondary"] and not h["isWritablePrimary"] and h.get("primary") == p.host
            ok = ok and st["syncSourceHost"] == p.host
            names = {m["name"]: m for m in st["members"]}
            ok = ok and names[p.host]["stateStr"] == "PRIMARY" and names[s.host]["stateStr"] == "SECONDARY"
            ok = ok and "optimeDate" in names[s.host] and "lastHeartbeat" in names[p.host]
        if ok or time.time() > deadline:
            break
        time.sleep(0.2)
    check(ok, "secondaries' hello and status name the primary")
    with p.client() as c:
        st = c.admin.command("replSetGetStatus")
        for m in st["members"]:
            if m["name"] != p.host:
                check(m["stateStr"] == "SECONDARY" and m["health"] == 1.0, "primary's view of %s" % m)
                check("lastHeartbeat" in m, "lastHeartbeat of %s" % m["name"])
    # the secondary's gate: writes 10107, reads without secondaryOk 13435
    s = secs[0]
    with s.client() as c:
        expect_code(lambda: c.test.gate.insert_one({"x": 1}), 10107, "write on a secondary")
    r = raw_command(s.host, "test", {"find": "gate"})
    check(r["ok"] == 0 and r["code"] == 13435, "read without secondaryOk: %r" % r)
    with s.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        check(c.test.gate.count_documents({}) == 0, "read with secondaryOk")


def mongosh_view(cl, p):
    """mongosh (when given) through the replicaSet URI: rs.status() and
    hello as an operator reads them, and a write that reaches the primary."""
    if MONGOSH is None:
        print("mongosh: not given, skipped")
        return
    script = ("const s = rs.status(); const h = db.hello();"
              "db.getSiblingDB('sh').t.insertOne({a: 1});"
              "print(JSON.stringify({states: s.members.map(m => m.stateStr).sort(), primary: h.primary,"
              " hosts: h.hosts.length, n: db.getSiblingDB('sh').t.countDocuments()}))")
    out = subprocess.run([MONGOSH, cl.uri(), "--quiet", "--norc", "--eval", script],
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, "mongosh ran: %s" % out.stderr[-500:])
    got = json.loads(out.stdout.strip().splitlines()[-1])
    check(got["states"] == ["PRIMARY", "SECONDARY", "SECONDARY"], "mongosh rs.status(): %r" % got)
    check(got["primary"] == p.host and got["hosts"] == 3 and got["n"] == 1, "mongosh hello/insert: %r" % got)


def replicate(cl, p):
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000, retryWrites=True, w="majority") as c:
        db = c.repl
        db.create_collection("docs")
        db.docs.create_index([("k", 1)], unique=True)
        db.docs.insert_many([{"_id": i, "k": i, "arr": [i, i + 1], "sub": {"a": i}} for i in range(300)])
        db.docs.update_many({"_id": {"$lt": 50}}, {"$set": {"sub.b": "x"}, "$inc": {"k": 1000}})
        db.docs.update_many({"_id": {"$gte": 50, "$lt": 80}}, {"$push": {"arr": 9}, "$unset": {"sub": 1}})
        db.docs.update_one({"_id": 90}, {"$set": {"arr.5": 1}})
        db.docs.replace_one({"_id": 100}, {"replaced": True})
        db.docs.delete_many({"_id": {"$gte": 200, "$lt": 250}})
        db.docs.find_one_and_update({"_id": 101}, {"$pop": {"arr": -1}})
        with c.start_session() as s:
            def txn(sess):
                db.docs.insert_one({"_id": "t1", "k": -1}, session=sess)
                db.docs.update_one({"_id": 1}, {"$set": {"intxn": True}}, session=sess)
                db.other.insert_one({"_id": 1}, session=sess)
            s.with_transaction(txn)
        db.tmp.insert_one({"_id": 1})
        db.tmp.rename("renamed")
        db.gone.insert_one({"_id": 1})
        db.gone.drop()
        db.capped_one.drop()
        db.docs.drop_index("k_1")
        db.docs.create_index([("sub.a", 1)])
    # w: N counts the members holding the write; more than the members: 100
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
        for w in (2, 3):
            r = c.repl.get_collection("wn", write_concern=WriteConcern(w=w, wtimeout=10000)).insert_one({"w": w})
            check(r.acknowledged, "w: %d" % w)
        r = c.repl.command("insert", "wn", documents=[{"w": 4}], writeConcern={"w": 4})
        check(r.get("writeConcernError", {}).get("code") == 100, "w: 4 of 3 members: %r" % r)
        r = c.repl.command("insert", "wn", documents=[{"w": 1}], writeConcern={"w": 1})
        check("writeConcernError" not in r and r["n"] == 1, "w: 1")
    wait_caught_up(cl.members)
    for coll in ("docs", "other", "renamed", "wn"):
        h = wait_equal(cl.members, "repl", coll)
        check(h, "equal %s" % coll)
    for m in cl.members:
        with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            names = sorted(c.repl.list_collection_names())
            check(names == ["docs", "other", "renamed", "wn"], "collections on %s: %r" % (m.host, names))
            idx = sorted(ix["name"] for ix in c.repl.docs.list_indexes())
            check(idx == ["_id_", "sub.a_1"], "indexes on %s: %r" % (m.host, idx))
            check(c.repl.docs.count_documents({}) == 251, "count on %s" % m.host)
            check(c.repl.docs.find_one({"_id": 1})["intxn"] is True, "transaction applied on %s" % m.host)
            ts = [e["ts"] for e in c.local["oplog.rs"].find({"ns": "repl.docs", "op": "d"})]
            check(len(ts) == 50, "50 delete entries on %s" % m.host)
    # the same entries with the same ts on every member
    tss = []
    for m in cl.members:
        with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            tss.append([e["ts"] for e in c.local["oplog.rs"].find({"ns": {"$regex": "^repl\\."}})])
    check(tss[0] == tss[1] == tss[2] and len(tss[0]) > 300, "same oplog ts on every member")


def wait_caught_up(members, timeout=20):
    """Every member's newest oplog entry is the same."""
    deadline = time.time() + timeout
    while True:
        last = []
        for m in members:
            with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
                e = c.local["oplog.rs"].find_one({"op": {"$ne": "n"}}, sort=[("$natural", -1)])
                last.append(e["ts"] if e else None)
        if len(set(last)) == 1:
            return
        if time.time() > deadline:
            raise AssertionError("members not caught up: %r" % last)
        time.sleep(0.2)


def log_lines(m, ids=None):
    """The JSON lines of member m's log (the ids given, or all)."""
    out = []
    with open(m.log, "rb") as f:
        for raw in f:
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict) and (ids is None or d.get("id") in ids):
                out.append(d)
    return out


def wait_log(m, pred, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        hit = [d for d in log_lines(m) if pred(d)]
        if hit:
            return hit
        time.sleep(0.1)
    raise AssertionError("%s: no such line in %s's log:\n%s" % (what, m.host, m.tail(40)))


def repl_log(cl, p):
    """mongod's replication and election lines in each member's log (issue
    22): the configuration (21392 / 21393) and state transitions (21358,
    state names) at level 0 on every member, the election (4615652, 21438,
    21444, 21450, ELECTION) on the primary, a secondary's REPL D2 21230
    "Oplog application batch size" at replication verbosity 2, and UUIDs as
    {"$uuid": ...} (STORAGE D2 22336's collection_uuid)."""
    with p.client() as c:
        term = c.admin.command("replSetGetStatus")["term"]
    for m in cl.members:
        cfg = [d for d in log_lines(m, {21392}) if d["c"] == "REPL" and d["s"] == "I"]
        check(cfg and cfg[-1]["attr"]["config"]["_id"] == "rs0" and
              len(cfg[-1]["attr"]["config"]["members"]) == 3, "21392 New replica set config in use on %s" % m.host)
        me = [d for d in log_lines(m, {21393}) if d["msg"] == "Found self in config"]
        check(me and me[-1]["attr"] == {"hostAndPort": m.host}, "21393 Found self in config on %s: %r" % (m.host, me))
        tr = [d["attr"] for d in log_lines(m, {21358}) if d["msg"] == "Replica set state transition"]
        check({"newState": "STARTUP2", "oldState": "STARTUP"} in tr, "21358 STARTUP -> STARTUP2 on %s: %r" % (m.host, tr))
        want = "PRIMARY" if m is p else "SECONDARY"
        check(any(a["newState"] == want for a in tr), "21358 to %s on %s: %r" % (want, m.host, tr))
    el = {d["id"]: d for d in log_lines(p, {4615652, 21438, 21444, 21450}) if d["c"] == "ELECTION"}
    check(el.get(21450, {}).get("attr") == {"term": term} and el[21450]["msg"] ==
          "Election succeeded, assuming primary role", "21450 on the primary: %r" % el.get(21450))
    check(el.get(21444, {}).get("attr") == {"newTerm": term}, "21444 dry run succeeded: %r" % el.get(21444))
    check(el.get(21438, {}).get("attr") == {"currentTerm": term - 1}, "21438 dry run: %r" % el.get(21438))
    check(el.get(4615652, {}).get("attr") == {"electionTimeoutPeriodMillis": 4000}, "4615652: %r" % el.get(4615652))
    check(all(d["s"] == "I" for d in el.values()), "election lines at level 0")
    # a secondary's oplog application at replication verbosity 2
    sec = [m for m in cl.members if m is not p][0]
    with sec.client() as c:
        c.admin.command("setParameter", 1, logComponentVerbosity={"replication": {"verbosity": 2}})
    with p.client() as c:
        c.admin.command("setParameter", 1, logComponentVerbosity={"storage": {"verbosity": 2}})
        c.logdb.logcheck.insert_many([{"i": i} for i in range(5)])
        c.logdb.command("insert", "logcheck", documents=[{"x": 1}], writeConcern={"w": 3, "wtimeout": 10000})
        c.admin.command("setParameter", 1, logComponentVerbosity={"storage": {"verbosity": -1}})
    batches = wait_log(sec, lambda d: d.get("id") == 21230, "21230 Oplog application batch size")
    check(all(d["s"] == "D2" and d["c"] == "REPL" and d["msg"] == "Oplog application batch size" and
              isinstance(d["attr"]["size"], int) and d["attr"]["size"] >= 1 for d in batches), "21230: %r" % batches[:2])
    with sec.client() as c:
        c.admin.command("setParameter", 1, logComponentVerbosity={"replication": {"verbosity": -1}})
    n = len(log_lines(sec, {21230}))
    with p.client() as c:
        c.logdb.command("insert", "logcheck", documents=[{"x": 2}], writeConcern={"w": 3, "wtimeout": 10000})
    check(len(log_lines(sec, {21230})) == n, "no 21230 once replication verbosity is back to 0")
    made = [d for d in log_lines(p, {22336})]
    check(made and all(set(d["attr"]["collection_uuid"]) == {"$uuid"} and
                       len(d["attr"]["collection_uuid"]["$uuid"]) == 36 for d in made),
          "22336 collection_uuid as $uuid: %r" % made[:1])
    with open(p.log, "rb") as f:
        check(b'"subType":"4"' not in f.read(), "no UUID printed as $binary")
    print("replication log lines: %d batches logged, term %d" % (len(batches), term))


def step_down(cl, p):
    """replSetStepDown hands the leadership to another member while a
    PyMongo writer (retryWrites, replicaSet URI) keeps writing."""
    acked, stop, errors, twice = [], threading.Event(), [], []

    def writer():
        # a surfaced error leaves the write's outcome unknown: the same _id
        # is tried again, and a duplicate key then means the first attempt
        # landed; a duplicate key on an _id's first call would be the
        # driver's own retry running the write twice
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, retryWrites=True, w="majority") as c:
            i, attempt = 0, 0
            while not stop.is_set():
                attempt += 1
                try:
                    c.repl.sd.insert_one({"_id": i})
                    ok = True
                except PyMongoError as e:
                    ok = "duplicate key" in str(e) and attempt > 1
                    if "duplicate key" in str(e) and attempt == 1:
                        twice.append(i)
                    if not ok:
                        errors.append(repr(e))
                        time.sleep(0.05)
                if ok:
                    acked.append(i)
                    i, attempt = i + 1, 0

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(1)
    with p.client() as c:
        r = c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
        check(r["ok"] == 1, "replSetStepDown")
        h = c.admin.command("hello")
        check(not h["isWritablePrimary"], "the old primary no longer takes writes")
        expect_code(lambda: c.repl.sd.insert_one({"_id": "x"}), 10107, "a write on the stepped-down member")
    np = cl.wait_primary(10, among=[m for m in cl.members if m is not p])
    before = len(acked)
    deadline = time.time() + 10
    while len(acked) < before + 20 and time.time() < deadline:
        time.sleep(0.1)
    stop.set()
    t.join(60)
    check(len(acked) >= before + 20, "writes went on after the stepdown: %r" % errors[-3:])
    check(not twice, "a retried write ran twice: %r" % twice)
    with np.client() as c:
        have = set(d["_id"] for d in c.repl.sd.find({}, {"_id": 1}))
    check(all(i in have for i in acked), "acknowledged writes on the new primary")
    with p.client() as c:
        expect_code(lambda: c.admin.command("replSetStepDown", 30), 10107, "stepping down a secondary")
    print("stepdown: %s -> %s, %d writes, writer errors %d %r" % (p.host, np.host, len(acked), len(errors), errors[:2]))
    return cl.wait_primary(10)


def failover(cl, p):
    acked = []
    stop = threading.Event()
    errors = []

    def writer():
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, retryWrites=True, w="majority",
                         wtimeoutMS=0) as c:
            coll = c.repl.load
            i = 0
            while not stop.is_set():
                try:
                    coll.insert_one({"_id": i, "v": "x" * 50})
                    acked.append(i)
                    i += 1
                except PyMongoError as e:
                    # a duplicate key would be a retry that ran twice
                    errors.append(repr(e))
                    time.sleep(0.05)

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(2)
    before = len(acked)
    check(before > 10, "writes before the kill: %d" % before)
    t_kill = time.time()
    p.kill9()
    survivors = [m for m in cl.members if m is not p]
    np = cl.wait_primary(10, among=survivors)
    took = time.time() - t_kill
    print("new primary %s %.1fs after kill -9" % (np.host, took))
    check(took <= 10, "new primary within 10 s: %.1f" % took)
    # two members left: w: 3 cannot be met (64 after wtimeout), majority can
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
        r = c.repl.command("insert", "wn3", documents=[{"x": 1}], writeConcern={"w": 3, "wtimeout": 500})
        wce = r.get("writeConcernError", {})
        check(wce.get("code") == 64 and wce.get("errInfo", {}).get("wtimeout") is True, "w: 3 of 2 alive: %r" % r)
        r = c.repl.command("insert", "wn3", documents=[{"x": 2}], writeConcern={"w": "majority", "wtimeout": 5000})
        check("writeConcernError" not in r, "majority of 2 alive: %r" % r)
    deadline = time.time() + 15
    while len(acked) < before + 20 and time.time() < deadline:
        time.sleep(0.1)
    stop.set()
    t.join(60)
    check(len(acked) >= before + 20, "writes kept going after the failover: %d -> %d (errors %r)" %
          (before, len(acked), errors[-3:]))
    check(not [e for e in errors if "duplicate key" in e], "a retried write ran twice: %r" % errors[:3])
    print("writes acknowledged: %d (%d before the kill), errors seen by the writer: %d" %
          (len(acked), before, len(errors)))
    h = wait_equal(survivors, "repl", "load")
    for m in survivors:
        with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            have = set(d["_id"] for d in c.repl.load.find({}, {"_id": 1}))
        missing = [i for i in acked if i not in have]
        check(not missing, "acknowledged majority writes missing on %s: %r" % (m.host, missing[:10]))
    # the killed member comes back as a secondary with the same data; when it
    # had committed entries locally that Raft never took (writes in flight
    # at the kill, never acknowledged) it rolls them back first
    # (src/repl/rollback.h)
    p.start()
    deadline = time.time() + 40
    state = None
    while time.time() < deadline:
        with p.client() as c:
            state = c.admin.command("replSetGetStatus")["myState"]
        check(state != 3, "the restarted member is not RECOVERING:\n%s" % p.tail(60))
        if state == 2:
            try:
                hs = set()
                for m in cl.members:
                    with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
                        hs.add(coll_hash(c, "repl", "load"))
                if len(hs) == 1:
                    break
            except PyMongoError:
                pass
        time.sleep(0.2)
    h3 = wait_equal(cl.members, "repl", "load", timeout=30)
    check(h3 == h, "the restarted member has the same data")
    with p.client() as c:
        check(c.admin.command("hello")["secondary"], "the old primary is a secondary")
    rolled = "Rollback summary" in p.tail(100000)
    print("the killed member is back as a secondary%s" % (" after a rollback" if rolled else ""))
    return np, state


def main():
    t0 = time.time()
    with Cluster(TAMGAD) as cl:
        bad_configs(cl)
        p = initiate(cl)
        topology(cl, p)
        repl_log(cl, p)
        mongosh_view(cl, p)
        replicate(cl, p)
        old = p
        p = step_down(cl, p)
        el = [d for d in log_lines(p, {21437, 21444, 21450}) if d["c"] == "ELECTION"]
        with p.client() as c:
            term = c.admin.command("replSetGetStatus")["term"]
        check([d for d in el if d["id"] == 21450 and d["attr"] == {"term": term}] and
              [d for d in el if d["id"] in (21437, 21444) and d["attr"] == {"newTerm": term}],
              "the new primary's election lines after the stepdown: %r" % el)
        check({"newState": "SECONDARY", "oldState": "PRIMARY"} in
              [d["attr"] for d in log_lines(old, {21358})], "21358 PRIMARY -> SECONDARY on the old primary")
        np, state = failover(cl, p)
        wait_equal(cl.members, "repl", "docs")
    print("raft_set: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
