"""raft_isync.py -- initial sync copies everything (issue 24): on a set of
two tamgad members on 127.0.0.1, one of each kind of namespace and index is
created -- a view, a time-series collection (its buckets, options and
default index), a clustered collection, a capped one, a validator with its
level and action, a collection default collation, indexes with their options
(unique, partial, sparse, TTL, hashed, text, 2dsphere, collated), users and a
role -- then the Raft log is compacted and a third member is added with
rs.add(): it gets the leader's snapshot and copies the data (src/repl/
initial_sync.c).  Every member must then answer the same listCollections,
listIndexes, documents (the buckets too, through rawData), view results,
users and roles.  Then the new member's data folder is wiped and it copies
everything again, and a `w: 3` write right after its copy is acknowledged
within 10 s (the leader kept the wiped member's old Raft match index and
sent it nothing for libraft's 30 s install-snapshot timeout:
src/repl/raft_lost_log.h).

usage: raft_isync.py path/to/tamgad
"""
import datetime
import os
import shutil
import sys
import time

from pymongo import ReadPreference, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, coll_hash, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
# src/repl/raft_member.c: SNAPSHOT_THRESHOLD + SNAPSHOT_TRAILING
COMPACT = 8192 + 8192 + 1500
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def create_everything(c):
    db = c.get_database("isync", write_concern=WriteConcern(w="majority"))
    db.create_collection("plain", collation={"locale": "fr", "strength": 2})
    db.plain.insert_many([{"_id": i, "a": i % 7, "b": "w%d" % i, "s": "word %d and more" % i,
                           "loc": {"type": "Point", "coordinates": [i % 50, i % 40]},
                           "t": datetime.datetime(2026, 1, 1) + datetime.timedelta(minutes=i),
                           "u": i} for i in range(300)])
    db.plain.create_index([("u", 1)], unique=True, name="u_unique")
    db.plain.create_index([("a", 1), ("b", -1)], partialFilterExpression={"a": {"$gt": 2}}, name="a_partial")
    db.plain.create_index([("sp", 1)], sparse=True)
    db.plain.create_index([("t", 1)], expireAfterSeconds=10 ** 9)
    db.plain.create_index([("b", "hashed")])
    db.plain.create_index([("s", "text")], weights={"s": 3}, default_language="english")
    db.plain.create_index([("loc", "2dsphere")])
    db.plain.create_index([("b", 1)], collation={"locale": "en", "strength": 1}, name="b_en")
    db.create_collection("v", viewOn="plain", pipeline=[{"$match": {"a": 3}}, {"$project": {"b": 1}}])
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    db.ts.insert_many([{"t": datetime.datetime(2026, 1, 1) + datetime.timedelta(minutes=i), "m": i % 3, "x": i}
                       for i in range(100)])
    db.create_collection("clust", clusteredIndex={"key": {"_id": 1}, "unique": True})
    db.clust.insert_many([{"_id": i, "x": i} for i in range(50)])
    db.create_collection("cap", capped=True, size=100000, max=20)
    db.cap.insert_many([{"_id": i} for i in range(30)])
    db.create_collection("val", validator={"$jsonSchema": {"required": ["x"]}}, validationLevel="moderate",
                         validationAction="warn")
    db.val.insert_many([{"x": 1}, {"y": 2}])
    c.admin.command("createRole", "isyncRole", privileges=[{"resource": {"db": "isync", "collection": ""},
                                                           "actions": ["find"]}], roles=[])
    c.admin.command("createUser", "isyncUser", pwd="pw", roles=["isyncRole", {"role": "read", "db": "isync"}])
    db.command("createUser", "dbUser", pwd="pw2", roles=["readWrite"])


def snapshot(m):
    """What a member holds, as comparable values."""
    with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        db = c.isync
        colls = sorted(db.list_collections(), key=lambda x: x["name"])
        out = {"collections": colls, "indexes": {}, "docs": {}}
        for x in colls:
            n = x["name"]
            if x.get("type") == "view":
                out["docs"][n] = list(db[n].find({}, sort=[("_id", 1)]))
                continue
            out["indexes"][n] = sorted(db[n].list_indexes(), key=lambda i: i["name"])
            out["docs"][n] = coll_hash(c, "isync", n)
            if x.get("type") == "timeseries":
                raw = db.command("find", n, rawData=True, sort={"_id": 1})
                out["docs"][n + " buckets"] = raw["cursor"]["firstBatch"]
        out["users"] = sorted(c.admin.command("usersInfo", {"forAllDBs": True}, showCredentials=True)["users"],
                              key=lambda u: u["_id"])
        out["roles"] = c.admin.command("rolesInfo", 1, showPrivileges=True)["roles"]
        out["textsearch"] = sorted(d["_id"] for d in db.plain.find({"$text": {"$search": "word"}}))
        return out


def diff(a, b):
    for k in a:
        if a[k] != b.get(k):
            if isinstance(a[k], dict):
                for kk in a[k]:
                    if a[k][kk] != b[k].get(kk):
                        return "%s.%s: %r != %r" % (k, kk, a[k][kk], b[k].get(kk))
            return "%s: %r != %r" % (k, a[k], b.get(k))
    return None


def wait_same(cl, m, timeout=120):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            with m.client() as c:
                st = c.admin.command("replSetGetStatus")["myState"]
            if st == 2:
                snaps = [snapshot(x) for x in cl.members]
                d = [diff(snaps[0], s) for s in snaps[1:]]
                if d == [None] * len(d):
                    return snaps[0]
                last = d
        except PyMongoError as e:
            last = str(e)
        time.sleep(0.5)
    raise AssertionError("members differ: %s\n%s" % (last, m.tail(60)))


def compact(p):
    with p.client() as c:
        data = c.isync.get_collection("bulk", write_concern=WriteConcern(w=1))
        for i in range(0, COMPACT, 500):
            data.insert_many([{"_id": j} for j in range(i, min(COMPACT, i + 500))])
        c.isync.get_collection("bulk", write_concern=WriteConcern(w="majority")).insert_one({"_id": "last"})
    raft = os.path.join(p.dbpath, "raft")
    deadline = time.time() + 60
    while time.time() < deadline:
        names = os.listdir(raft)
        closed = sorted(n for n in names if "-" in n and n[0].isdigit())
        if [n for n in names if n.startswith("snapshot-")] and closed and int(closed[0].split("-")[0]) > 1:
            return
        time.sleep(0.5)
    raise AssertionError("the leader's Raft log was not compacted")


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        two, new = cl.members[:2], cl.members[2]
        cfg = {"_id": cl.set_name, "settings": {"electionTimeoutMillis": 4000},
               "members": [{"_id": i, "host": m.host} for i, m in enumerate(two)]}
        with two[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30, among=two)
        with p.client() as c:
            create_everything(c)
        compact(p)
        with p.client() as c:
            conf = c.admin.command("replSetGetConfig")["config"]
            conf = dict(conf, version=conf["version"] + 1, members=conf["members"] + [{"_id": 2, "host": new.host}])
            c.admin.command("replSetReconfig", conf, maxTimeMS=60000)
        s = wait_same(cl, new)
        check(len(s["collections"]) == 8, "eight namespaces (system.views too): %r" % [x["name"] for x in s["collections"]])
        kinds = {x["name"]: x.get("type") for x in s["collections"]}
        check(kinds["v"] == "view" and kinds["ts"] == "timeseries", "a view and a time-series: %r" % kinds)
        check(len(s["indexes"]["plain"]) == 9, "nine indexes on plain: %r" % s["indexes"]["plain"])
        check(len(s["docs"]["v"]) > 0, "the view answers")
        check(all("uuid" in x["info"] for x in s["collections"] if x.get("type") != "view"),
              "the same UUIDs on every member (compared with listCollections)")
        check(len(s["docs"]["ts buckets"]) > 0, "buckets copied")
        check(len(s["textsearch"]) == 300, "the text index answers on every member")
        check(any(u["_id"] == "admin.isyncUser" for u in s["users"]) and
              any(r["_id"] == "admin.isyncRole" for r in s["roles"]), "users and roles")
        with new.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            check(c.isync.cap.count_documents({}) == 20, "capped keeps its max")
            st = c.admin.command("replSetGetStatus")
            check(st["myState"] == 2, "the new member is SECONDARY")
        # wiped: the member copies everything again
        new.kill9()
        shutil.rmtree(new.dbpath)
        with p.client() as c:
            c.isync.get_collection("after", write_concern=WriteConcern(w="majority")).insert_one({"_id": 1})
        new.start()
        # the member copies, goes SECONDARY, and takes the next entry at
        # once: the leader once held it in libraft's SNAPSHOT state for the
        # 30 s install-snapshot timeout (src/repl/raft_lost_log.h)
        wait_state(new, [2], 120)
        t1 = time.time()
        with p.client() as c:
            r = c.isync.command("insert", "w3", documents=[{"_id": 0}], writeConcern={"w": 3, "wtimeout": 10000})
        check("writeConcernError" not in r, "w: 3 right after the wiped member's copy, in %.1fs: %r" %
              (time.time() - t1, r))
        with open(p.log, "rb") as f:
            check(b'"id":5000277' in f.read(), "the leader logged the member's shorter Raft log (5000277)")
        s2 = wait_same(cl, new)
        check([x["name"] for x in s2["collections"]] == sorted([x["name"] for x in s["collections"]] + ["after", "w3"]),
              "the wiped member has every namespace: %r" % [x["name"] for x in s2["collections"]])
        with open(new.log, "rb") as f:
            copies = f.read().count(b'"id":21164')
        check(copies >= 2, "the new member copied the data twice (log id 21164): %d" % copies)
        with p.client() as c:
            r = c.isync.command("insert", "w3", documents=[{"_id": 1}], writeConcern={"w": 3, "wtimeout": 30000})
            check("writeConcernError" not in r, "w: 3 after the copies: %r" % r)
    print("raft_isync: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
