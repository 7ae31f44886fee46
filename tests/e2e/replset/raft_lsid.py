"""raft_lsid.py -- the whole logical session id {id, uid} on every member of
a set of three tamgad members on 127.0.0.1 (issue 24), as mongod keeps it:

  - without access control: a retryable insert's oplog entry carries
    `lsid: {id, uid}` with uid the SHA-256 of "" (mongod's kNoAuthDigest), and
    every member holds the same config.transactions row, keyed by that lsid;
  - with --keyFile and a user app@test: the entries of a retryable write and
    of a transaction carry uid = SHA-256("app@test") (mongod's user digest),
    the transaction's change event shows that lsid, every member's
    config.transactions rows are equal (_id, txnNum, lastWriteOpTime,
    state) and so are the config.system.sessions rows after a refresh; the
    primary steps down and the same retryable insert (same lsid and
    txnNumber) sent again answers its first result from the new primary
    (retriedStmtIds [0], nothing inserted twice) without a second row.

Before, the entries carried the driver's `{id}` only: the primary keyed its
row {id, uid} and the secondaries {id}.

usage: raft_lsid.py path/to/tamgad
"""
import base64
import hashlib
import os
import subprocess
import sys
import time

from bson.int64 import Int64
from pymongo import MongoClient, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0
NO_AUTH_UID = hashlib.sha256(b"").digest()
APP_UID = hashlib.sha256(b"app@test").digest()


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def uuid_bytes(u):
    return u.bytes if hasattr(u, "bytes") else bytes(u or b"")


def lsid_of(doc):
    """(id bytes, uid bytes, field names) of an lsid document."""
    return uuid_bytes(doc.get("id")), bytes(doc.get("uid") or b""), list(doc.keys())


def rows(c, coll):
    """A collection's rows with the fields members must agree on."""
    keep = ("_id", "txnNum", "lastWriteOpTime", "state", "user")
    out = [{k: d[k] for k in keep if k in d} for d in c.config[coll].find({})]
    return sorted(out, key=lambda d: (uuid_bytes(d["_id"]["id"]), bytes(d["_id"].get("uid") or b"")))


def wait_rows_equal(members, connect, coll, want, timeout=30):
    """Every member's rows of config.<coll> equal, with `want` rows."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            got = []
            for m in members:
                with connect(m) as c:
                    got.append(rows(c, coll))
            if all(g == got[0] for g in got) and len(got[0]) == want:
                return got[0]
            last = got
        except PyMongoError as e:
            last = str(e)
        time.sleep(0.3)
    raise AssertionError("config.%s differs between members: %r" % (coll, last))


def entries_of(c, ns):
    return list(c.local.oplog.rs.find({"ns": ns}, sort=[("ts", 1)]))


def no_auth():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        p = cl.wait_primary(30)
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000) as c:
            coll = c.na.get_collection("c", write_concern=WriteConcern(w=3, wtimeout=20000))
            with c.start_session() as s:
                coll.insert_one({"_id": 1}, session=s)
                sid = uuid_bytes(s.session_id["id"])
        for m in cl.members:
            with m.client() as c:
                e = entries_of(c, "na.c")
                check(len(e) == 1 and "lsid" in e[0], "%s: one entry with an lsid: %r" % (m.host, e))
                i, u, keys = lsid_of(e[0]["lsid"])
                check(keys == ["id", "uid"] and i == sid and u == NO_AUTH_UID,
                      "%s: the entry's lsid is {id, uid: SHA-256('')}: %r" % (m.host, e[0]["lsid"]))
        r = wait_rows_equal(cl.members, lambda m: m.client(), "transactions", 1)
        check(lsid_of(r[0]["_id"])[:2] == (sid, NO_AUTH_UID), "the row's _id is the entry's lsid: %r" % r)
        del p


def with_auth(key):
    with Cluster(TAMGAD, extra=["--keyFile", key, "--setParameter", "enableTestCommands=1"]) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        p = cl.wait_primary(30)
        with p.client() as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        with p.client(username="admin", password="pw", authSource="admin") as c:
            c.test.command("createUser", "app", pwd="apw", roles=["readWrite"],
                           writeConcern={"w": "majority"})

        def root(m):
            return m.client(username="admin", password="pw", authSource="admin")

        def system(m):
            # config.system.sessions is readable by __system (the key's user)
            with open(key) as f:
                return m.client(username="__system", password="".join(f.read().split()), authSource="local",
                                authMechanism="SCRAM-SHA-256")

        hosts = ",".join(m.host for m in cl.members)
        uri = "mongodb://app:apw@%s/?replicaSet=rs0&authSource=test" % hosts
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as app:
            db = app.get_database("test", write_concern=WriteConcern(w="majority", wtimeout=20000))
            db.create_collection("c")
            stream = db.c.watch()
            # a retryable insert with our own txnNumber (sent again below)
            s = app.start_session()
            sid = uuid_bytes(s.session_id["id"])
            first = db.command({"insert": "c", "documents": [{"_id": "r1"}], "txnNumber": Int64(7)}, session=s)
            check(first["n"] == 1 and "retriedStmtIds" not in first, "the first insert: %r" % first)
            # a transaction on another session
            with app.start_session() as ts:
                tid = uuid_bytes(ts.session_id["id"])
                with ts.start_transaction(write_concern=WriteConcern(w="majority")):
                    db.c.insert_one({"_id": "t1"}, session=ts)
                    db.c.insert_one({"_id": "t2"}, session=ts)
            events = []
            deadline = time.time() + 20
            while len(events) < 3 and time.time() < deadline:
                ev = stream.try_next()
                if ev is not None:
                    events.append(ev)
            stream.close()
            txn_events = [ev for ev in events if ev["documentKey"]["_id"] in ("t1", "t2")]
            check(len(txn_events) == 2, "the transaction's two events: %r" % events)
            for ev in txn_events:
                i, u, keys = lsid_of(ev["lsid"])
                check(keys == ["id", "uid"] and i == tid and u == APP_UID,
                      "the change event's lsid is {id, uid: SHA-256('app@test')}: %r" % ev["lsid"])
            plain = [ev for ev in events if ev["documentKey"]["_id"] == "r1"]
            check(plain and "lsid" not in plain[0], "a retryable write's event has no lsid (mongod): %r" % plain)

            # every member: the entries' lsid, the same config.transactions rows
            with root(p) as c:
                c.test.command("insert", "sync", documents=[{"_id": 0}], writeConcern={"w": 3, "wtimeout": 20000})
            for m in cl.members:
                with root(m) as c:
                    es = [e for e in entries_of(c, "test.c") if e["op"] == "i"]
                    es += [e for e in entries_of(c, "admin.$cmd") if "applyOps" in e.get("o", {})]
                    check(len(es) == 2, "%s: the insert's and the commit's entries: %r" % (m.host, es))
                    for e in es:
                        i, u, keys = lsid_of(e["lsid"])
                        check(keys == ["id", "uid"] and i in (sid, tid) and u == APP_UID,
                              "%s: an entry's lsid {id, uid: SHA-256('app@test')}: %r" % (m.host, e["lsid"]))
            r = wait_rows_equal(cl.members, root, "transactions", 2)
            check(sorted(lsid_of(x["_id"])[:2] for x in r) == sorted([(sid, APP_UID), (tid, APP_UID)]),
                  "the rows are keyed by the entries' lsid: %r" % r)
            check([x.get("state") for x in r if lsid_of(x["_id"])[0] == tid] == ["committed"],
                  "the transaction's row is committed on every member: %r" % r)
            first_row = [x for x in r if lsid_of(x["_id"])[0] == sid][0]

            # config.system.sessions: the primary's refresh, replicated
            with root(p) as c:
                c.admin.command("refreshLogicalSessionCacheNow")
            with app.start_session() as s2:
                db.command("ping", session=s2)
            with root(p) as c:
                c.admin.command("refreshLogicalSessionCacheNow")
                c.test.command("insert", "sync", documents=[{"_id": 1}], writeConcern={"w": 3, "wtimeout": 20000})
            with system(p) as c:
                n_sessions = len(rows(c, "system.sessions"))
            ss = wait_rows_equal(cl.members, system, "system.sessions", n_sessions)
            check(any(lsid_of(x["_id"])[:2] == (sid, APP_UID) and x.get("user") == {"name": "app@test"} for x in ss),
                  "config.system.sessions: the session as {id, uid} with its user on every member: %r" % ss)

            # the primary steps down; the retry reaches the new one
            with root(p) as c:
                try:
                    c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
                except PyMongoError:
                    pass   # the connection may close as the member steps down
            newp = cl.wait_primary(30)
            check(newp is not p, "a new primary after the stepdown")
            again = None
            deadline = time.time() + 30
            while again is None and time.time() < deadline:
                try:
                    again = db.command({"insert": "c", "documents": [{"_id": "r1"}], "txnNumber": Int64(7)},
                                       session=s)
                except PyMongoError as e:
                    if "duplicate key" in str(e):
                        raise AssertionError("the retry ran the insert again: %s" % e)
                    time.sleep(0.3)
            check(again is not None and again["n"] == 1 and again.get("retriedStmtIds") == [0],
                  "the retry on the new primary answers the first result: %r" % again)
            s.end_session()
            check(db.c.count_documents({"_id": "r1"}) == 1, "inserted once")
            with root(newp) as c:
                got = [x for x in rows(c, "transactions") if lsid_of(x["_id"])[0] == sid]
            check(len(got) == 1 and lsid_of(got[0]["_id"])[1] == APP_UID and got[0]["txnNum"] == 7 and
                  got[0]["lastWriteOpTime"] == first_row["lastWriteOpTime"],
                  "one row of the session on the new primary, the first write's: %r" % got)


def main():
    t0 = time.time()
    no_auth()
    tmp = os.environ.get("TMPDIR", "/tmp")
    kdir = os.path.join(tmp, "tamga-lsid-%d" % os.getpid())
    os.makedirs(kdir, exist_ok=True)
    key = os.path.join(kdir, "set.key")
    with open(key, "w") as f:
        f.write(base64.b64encode(os.urandom(600)).decode() + "\n")
    os.chmod(key, 0o600)
    try:
        with_auth(key)
    finally:
        subprocess.call(["rm", "-rf", kdir])
    print("raft_lsid: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
