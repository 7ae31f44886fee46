"""raft_grow.py -- a replica set initiated with ONE member grows, as mongod's
users build one (rs.initiate(), then rs.add() of the other machines; issue
24): one tamgad with --replSet, rs.initiate() with itself alone (the set runs
without Raft), ~2,000 documents in two databases with an index and a view,
then two tamgad with empty data folders added one at a time -- the first
with PyMongo's replSetReconfig while a retryable writer runs (the primary
moves onto Raft: its writers retry across the move), the second with
mongosh's rs.add().  Each new member copies the data (STARTUP2, then
SECONDARY); every member then holds the same collections (a hash of each in
_id order), indexes and view.  Then kill -9 of the primary under a
`w: "majority"` retryable write load: a new primary, every acknowledged
write on every member, equal data; the killed member comes back; last, all
three are restarted and the set has a primary again; rs.remove() of the
founding member (under another primary) leaves it REMOVED and majority
writes go on; added back with its data it follows the primary although
the set's snapshot names it alone -- an rs.add() whose Raft catch-up fails
answers 74 and the same rs.add() retried succeeds.  Refusals kept: a
member holding data of its own is refused (74, nothing changes); a move
that fails (Raft's port taken) leaves the single primary without Raft.

usage: raft_grow.py path/to/tamgad path/to/mongosh
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

from pymongo import MongoClient, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, coll_hash, get_config, passed, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None


def code_of(e):
    got = getattr(e, "code", None)
    if got is None and isinstance(getattr(e, "details", None), dict):
        got = e.details.get("code")
    return got


class Writer(threading.Thread):
    """Retryable inserts of {_id: n} into grow.w with the given write
    concern until stopped; keeps the _ids acknowledged."""

    def __init__(self, uri, prefix, w):
        super().__init__(daemon=True)
        self.uri, self.prefix, self.w = uri, prefix, w
        self.acked, self.failed = [], []
        self.stop_flag = threading.Event()

    def run(self):
        with MongoClient(self.uri, retryWrites=True, serverSelectionTimeoutMS=30000) as c:
            coll = c.grow.get_collection("w", write_concern=WriteConcern(w=self.w, wtimeout=30000))
            n = 0
            while not self.stop_flag.is_set():
                _id = "%s-%d" % (self.prefix, n)
                try:
                    coll.insert_one({"_id": _id, "n": n})
                    self.acked.append(_id)
                except PyMongoError as e:
                    self.failed.append((_id, str(e)[:200]))
                n += 1
                time.sleep(0.01)

    def finish(self):
        self.stop_flag.set()
        self.join(60)


def data_of(m):
    """What a member holds: the collections' hashes, indexes and views."""
    with m.client() as c:
        out = {}
        for db, coll in (("grow", "a"), ("grow2", "b")):
            out["%s.%s" % (db, coll)] = coll_hash(c, db, coll)
            out["%s.%s.indexes" % (db, coll)] = sorted(
                (i["name"], json.dumps(i["key"], sort_keys=True), bool(i.get("unique")))
                for i in c[db][coll].list_indexes())
        out["views"] = sorted((v["name"], json.dumps(v["options"], sort_keys=True))
                              for v in c.grow.list_collections(filter={"type": "view"}))
        out["view_count"] = len(list(c.grow.v.find()))
        return out


def own_data(m):
    """m's data folder gets a database of its own: tamgad started once as a
    standalone (no --replSet) on it."""
    os.makedirs(m.dbpath, exist_ok=True)
    with open(m.log, "ab") as logf:
        p = subprocess.Popen([TAMGAD, "--port", str(m.port), "--bind_ip", "127.0.0.1", "--dbpath", m.dbpath,
                              "--nounixsocket"], stdout=logf, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 30
        while True:
            try:
                with MongoClient(m.host, directConnection=True, serverSelectionTimeoutMS=500) as c:
                    c.own.x.insert_one({"mine": 1})
                break
            except PyMongoError:
                if time.time() > deadline or p.poll() is not None:
                    raise
                time.sleep(0.2)
    finally:
        p.terminate()
        p.wait(30)


def add_member(primary, host):
    cfg = get_config(primary)
    cfg["version"] += 1
    cfg["members"].append({"_id": max(x["_id"] for x in cfg["members"]) + 1, "host": host})
    with primary.client() as c:
        return c.admin.command("replSetReconfig", cfg, maxTimeMS=120000)


def main():
    cl = Cluster(TAMGAD, n=4, extra=["--setParameter", "enableTestCommands=1"])
    m0, m1, m2, spare = cl.members
    try:
        m0.start()
        with m0.client() as c:
            c.admin.command("replSetInitiate", {"_id": cl.set_name, "members": [{"_id": 0, "host": m0.host}],
                                                "settings": {"electionTimeoutMillis": 2000}})
        cl.wait_primary(among=[m0])
        with m0.client() as c:
            # a term above 1 before the move (a step-down re-elects): the
            # terms Raft writes must pass it
            try:
                c.admin.command("replSetStepDown", 1, force=True)
            except PyMongoError:
                pass
        cl.wait_primary(among=[m0])
        with m0.client() as c:
            term0 = c.admin.command("replSetGetStatus")["term"]
            db = c.grow
            db.a.insert_many([{"_id": i, "x": i % 37, "s": "doc %d" % i} for i in range(1500)])
            db.a.create_index([("x", 1), ("s", -1)], name="x_s")
            db.a.create_index([("s", 1)], unique=True, name="s_unique")
            db.create_collection("v", viewOn="a", pipeline=[{"$match": {"x": 3}}])
            c.grow2.b.insert_many([{"_id": "k%d" % i, "v": i} for i in range(500)])
            last_ts = c.local.oplog.rs.find_one(sort=[("$natural", -1)])["ts"]
        check(term0 >= 2, "the single member's term moved: %r" % term0)
        before = data_of(m0)

        # a member holding data of its own is refused, nothing changes
        own_data(spare)
        spare.start()
        try:
            add_member(m0, spare.host)
            raise AssertionError("adding a member with data of its own succeeded")
        except PyMongoError as e:
            check(code_of(e) == 74, "a member with data: 74, got %r (%s)" % (code_of(e), e))
        with m0.client() as c:
            h = c.admin.command("hello")
        check(h.get("isWritablePrimary") and get_config(m0)["version"] == 1 and len(h["hosts"]) == 1,
              "the set is unchanged after the refused add: %r" % h)
        spare.stop()

        # the move itself fails (Raft's port, this member's + 1000, taken):
        # the set stays the single primary without Raft
        m1.start()
        m2.start()
        taken = socket.socket()
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", m0.port + 1000))
        taken.listen(1)
        try:
            add_member(m0, m1.host)
            raise AssertionError("the move succeeded with Raft's port taken")
        except PyMongoError as e:
            check("could not be moved onto Raft" in str(e), "the failed move's answer: %s" % e)
        finally:
            taken.close()
        cl.wait_primary(among=[m0], timeout=10)
        with m0.client() as c:
            c.grow.x.insert_one({"after": "failed move"})
            c.grow.x.delete_many({})
        check(get_config(m0)["version"] == 1 and not os.listdir(os.path.join(m0.dbpath, "raft")),
              "the set is unchanged after the failed move (no Raft folder content)")

        # rs.add() of the first empty member (PyMongo) while a writer runs
        uri1 = "mongodb://%s/?replicaSet=%s" % (m0.host, cl.set_name)
        w1 = Writer(uri1, "move", 1)
        w1.start()
        time.sleep(0.5)
        t = time.time()
        r = add_member(m0, m1.host)
        check(r.get("ok") == 1, "rs.add of the first member: %r" % r)
        add_secs = time.time() - t
        wait_state(m1, [2], timeout=90)
        time.sleep(0.5)
        w1.finish()
        check(len(w1.acked) > 0, "the writer wrote across the move")
        check(not w1.failed, "writes failed across the move: %r" % w1.failed[:3])
        with m0.client() as c:
            st = c.admin.command("replSetGetStatus")
            newest = c.local.oplog.rs.find_one(sort=[("$natural", -1)])
        check(st["term"] > term0, "Raft's term is above the set's: %r -> %r" % (term0, st["term"]))
        check(newest["t"] > term0 and newest["ts"] > last_ts, "optimes go on forward: %r" % newest)

        # the second with mongosh's rs.add()
        if MONGOSH:
            out = subprocess.run([MONGOSH, "mongodb://%s/?directConnection=true" % m0.host, "--quiet", "--norc",
                                  "--eval", "const r = rs.add('%s'); print(JSON.stringify({ok: r.ok}))" % m2.host],
                                 capture_output=True, text=True, timeout=180)
            check(out.returncode == 0 and json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": 1},
                  "rs.add through mongosh: %s %s" % (out.stdout[-500:], out.stderr[-800:]))
        else:
            check(add_member(m0, m2.host).get("ok") == 1, "rs.add of the second member")
        wait_state(m2, [2], timeout=90)
        members = [m0, m1, m2]
        with m0.client() as c:
            hosts = c.admin.command("hello")["hosts"]
        check(sorted(hosts) == sorted(m.host for m in members), "hello's hosts: %r" % hosts)
        for m in members:
            deadline = time.time() + 30
            while data_of(m) != before and time.time() < deadline:
                time.sleep(0.2)
            check(data_of(m) == before, "%s holds the data: %r" % (m.host, data_of(m)))
        wait_equal(members, "grow", "w", timeout=30)
        with m2.client() as c:
            got = set(d["_id"] for d in c.grow.w.find({}, {"_id": 1}))
        check(set(w1.acked) <= got, "every write acknowledged across the move is on a new member")

        # kill -9 of the primary under a w: "majority" retryable load
        w2 = Writer("mongodb://%s/?replicaSet=%s" % (",".join(m.host for m in members), cl.set_name), "maj",
                    "majority")
        w2.start()
        time.sleep(1.5)
        old = cl.wait_primary(among=members)
        old.kill9()
        t = time.time()
        new = cl.wait_primary(timeout=30, among=[m for m in members if m is not old])
        failover = time.time() - t
        time.sleep(1.5)
        w2.finish()
        check(len(w2.acked) > 10, "majority writes acknowledged: %d" % len(w2.acked))
        check(not w2.failed, "majority writes failed: %r" % w2.failed[:3])
        old.start()
        wait_state(old, [2], timeout=60)
        h = wait_equal(members, "grow", "w", timeout=60)
        for m in members:
            with m.client() as c:
                got = set(d["_id"] for d in c.grow.w.find({}, {"_id": 1}))
            check(set(w2.acked) <= got, "%s holds every acknowledged majority write" % m.host)
            check(data_of(m) == before, "%s data equal after the failover" % m.host)
        check(h, "equal grow.w")

        # every member restarted: a primary again, the data still there
        for m in members:
            check(m.stop() == 0, "%s stopped cleanly" % m.host)
        for m in members:
            m.start()
        p = cl.wait_primary(timeout=60, among=members)
        with p.client() as c:
            c.grow.get_collection("w", write_concern=WriteConcern(w="majority", wtimeout=30000)).insert_one(
                {"_id": "after-restart"})
        wait_equal(members, "grow", "w", timeout=60)
        for m in members:
            check(data_of(m) == before, "%s data equal after the restart" % m.host)

        # rs.remove() of a member: REMOVED, majority writes go on with two.
        # The founding member m0 goes, under another primary: the set's
        # snapshot (taken at the move) names m0 alone
        if p is m0:
            with m0.client() as c:
                try:
                    c.admin.command("replSetStepDown", 10, force=True)
                except PyMongoError:
                    pass
            p = cl.wait_primary(timeout=30, among=[m1, m2])
        gone = m0
        cfg = get_config(p)
        cfg["version"] += 1
        cfg["members"] = [x for x in cfg["members"] if x["host"] != gone.host]
        with p.client() as c:
            check(c.admin.command("replSetReconfig", cfg, maxTimeMS=60000).get("ok") == 1, "rs.remove")
        wait_state(gone, [10], timeout=30)
        with p.client() as c:
            c.grow.get_collection("w", write_concern=WriteConcern(w="majority", wtimeout=30000)).insert_one(
                {"_id": "after-remove"})
            check(len(c.admin.command("hello")["hosts"]) == 2, "two members after rs.remove")

        # m0 added back with its data (the removed-member path: its Raft log
        # emptied, the primary's snapshot sent, whose configuration names m0
        # alone).  First with m0 dropping the primary's Raft messages (fail
        # point): Raft's catch-up of it fails (74) and the set is unchanged;
        # then the same rs.add() retried, the fail point off: m0 follows the
        # primary although the snapshot's configuration does not name it
        # (it does not elect itself), SECONDARY, equal data
        back = get_config(p)
        back["version"] += 1
        back["members"].append({"_id": 0, "host": m0.host})
        with m0.client() as c:
            c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="alwaysOn",
                            data={"hosts": [m.host for m in members if m is not m0]})
        t = time.time()
        try:
            with p.client() as c:
                c.admin.command("replSetReconfig", back, maxTimeMS=60000)
            raise AssertionError("rs.add of a member that cannot catch up succeeded")
        except PyMongoError as e:
            check(code_of(e) == 74, "rs.add of a member that cannot catch up: 74, got %r (%s)" % (code_of(e), e))
        fail_secs = time.time() - t
        check(len(get_config(p)["members"]) == 2, "the failed rs.add left the configuration as it was")
        with m0.client() as c:
            c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="off")
        with p.client() as c:
            r = c.admin.command("replSetReconfig", back, maxTimeMS=60000)
        check(r.get("ok") == 1, "the same rs.add retried: %r" % r)
        wait_state(m0, [2], timeout=60)
        with p.client() as c:
            r = c.grow.command("insert", "w", documents=[{"_id": "back"}], writeConcern={"w": 3, "wtimeout": 30000})
            check("writeConcernError" not in r, "w: 3 with m0 back: %r" % r)
            check(c.admin.command("hello")["primary"] == p.host, "the primary stayed the primary")
        wait_equal(members, "grow", "w", timeout=60)
        check(data_of(m0) == before, "m0 data equal after its re-add")
        with m0.client() as c:
            check(c.admin.command("replSetGetStatus")["myState"] == 2, "m0 is SECONDARY, not a leader of its own")
        print("raft_grow: %d checks passed (first rs.add %.1f s, failover %.1f s, %d writes across the move, "
              "%d majority writes across the kill, failed re-add %.1f s)" % (passed(), add_secs, failover,
                                                                             len(w1.acked), len(w2.acked), fail_secs))
        cl.__exit__(None, None, None)
    except BaseException:
        cl.__exit__(*sys.exc_info())
        raise


if __name__ == "__main__":
    main()
