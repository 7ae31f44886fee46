"""raft_concerns.py -- read and write concerns on a replica set of three
tamgad members on 127.0.0.1 (issue 24), through PyMongo and mongosh:
  - hello: every member's `tags`, lastWrite (opTime, lastWriteDate,
    majorityOpTime at the commit point);
  - readConcern "majority" reads at the commit point: with both secondaries
    paused (SIGSTOP) a w: 1 write is seen by a local read and not by a
    majority read (find, getMore, count, distinct, aggregate, the sub-reads
    of $lookup and $unionWith, the reads of $out and $merge), then seen
    once they resume;
  - mongod's 72 for a level a command does not take prints the whole read
    concern (ReadConcernArgs::toString, provenance "clientSupplied");
  - readConcern "linearizable": on the primary it answers once a majority
    confirmed; with the secondaries paused it fails with 50 after
    maxTimeMS; on a secondary 10107; with afterOpTime 9;
  - afterClusterTime: a causally consistent session reads its own write on a
    secondary that was paused while the write happened;
  - w: "<mode>" of settings.getLastErrorModes (dc tags): met by distinct
    tag values, a wtimeout (64) when a paused member is needed, 79 unknown;
  - w: 3 means applied: right after a w: 3 insert every secondary's local
    read sees it (applied, not only held in the Raft log);
  - a retryable insert of 100 documents: every member's config.transactions
    row of the session holds the txnNumber and the opTime of the batch's
    last entry (a secondary writes the row once per applied round), and a
    second batch of the session moves it on;
  - a secondary's run of entries in one transaction: snapshot reads at
    ts inside a batch of 100 inserts see exactly the inserts up to it,
    afterClusterTime waits for the batch; kill -9 of a secondary three
    times under batched inserts, then its oplog and data equal the
    primary's;
  - maxStalenessSeconds and tag sets: PyMongo selects secondaries with them
    (a tag set picks the one member that carries it).

usage: raft_concerns.py path/to/tamgad [path/to/mongosh]
"""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time

from bson.binary import Binary
from bson.timestamp import Timestamp
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.errors import PyMongoError, WriteConcernError
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import Secondary

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0
DCS = ["east", "west", "north"]
NO_AUTH_UID = Binary(hashlib.sha256(b"").digest())   # mongod's uid of a session without access control


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


def config(cl):
    return {"_id": cl.set_name, "settings": {"electionTimeoutMillis": 4000,
                                             "getLastErrorModes": {"twoDCs": {"dc": 2}, "allDCs": {"dc": 3}}},
            "members": [{"_id": i, "host": m.host, "tags": {"dc": DCS[i]}} for i, m in enumerate(cl.members)]}


def hello_fields(cl, p):
    for i, m in enumerate(cl.members):
        with m.client() as c:
            h = c.admin.command("hello")
        check(h.get("tags") == {"dc": DCS[i]}, "hello tags of %s: %r" % (m.host, h.get("tags")))
        lw = h.get("lastWrite", {})
        check("opTime" in lw and "lastWriteDate" in lw and "majorityOpTime" in lw and "majorityWriteDate" in lw,
              "hello lastWrite: %r" % lw)
        check(lw["majorityOpTime"]["ts"] <= lw["opTime"]["ts"], "commit point not past the applied point")
        check("passive" not in h and "hidden" not in h, "no passive/hidden: %r" % h)


def majority_reads(cl, p):
    secs = [m for m in cl.members if m is not p]
    with p.client() as c:
        coll = c.rc.get_collection("maj", write_concern=WriteConcern(w="majority"))
        coll.insert_many([{"_id": i, "k": "old"} for i in range(5)])
        c.rc.get_collection("majf", write_concern=WriteConcern(w="majority")).insert_one({"_id": "f0", "k": "old"})
        c.rc.get_collection("majmerge", write_concern=WriteConcern(w="majority")).insert_one({"_id": 3, "k": "there"})
        for s in secs:
            s.pause()
        try:
            c.rc.get_collection("maj", write_concern=WriteConcern(w=1)).insert_many(
                [{"_id": 100 + i, "k": "new"} for i in range(5)])
            c.rc.get_collection("majf", write_concern=WriteConcern(w=1)).insert_one({"_id": "f1", "k": "old"})
            local = c.rc.maj
            maj = c.rc.get_collection("maj", read_concern=ReadConcern("majority"))
            check(local.count_documents({}) == 10, "local read sees the w:1 write")
            got = [d["_id"] for d in maj.find({}, batch_size=2).sort("_id", 1)]
            check(got == list(range(5)), "majority find (with getMores) sees only committed: %r" % got)
            check(maj.count_documents({}) == 5, "majority count")
            check(sorted(maj.distinct("k")) == ["old"], "majority distinct")
            agg = list(maj.aggregate([{"$group": {"_id": "$k", "n": {"$sum": 1}}}]))
            check(agg == [{"_id": "old", "n": 5}], "majority aggregate: %r" % agg)
            # the sub-reads of $lookup and $unionWith read at the same point
            lk = list(maj.aggregate([{"$match": {"_id": 0}},
                                     {"$lookup": {"from": "majf", "localField": "k", "foreignField": "k",
                                                  "as": "f"}}]))
            check([f["_id"] for f in lk[0]["f"]] == ["f0"], "majority $lookup: %r" % lk)
            un = sorted(d["_id"] for d in maj.aggregate([{"$match": {"_id": {"$lt": 0}}},
                                                         {"$unionWith": "majf"}]))
            check(un == ["f0"], "majority $unionWith: %r" % un)
            # $out / $merge read the commit point's snapshot too, and write the primary's latest data
            # (w: 1: the secondaries are paused)
            for stage in ({"$out": "majout"}, {"$merge": {"into": "majmerge"}}):
                c.rc.command("aggregate", "maj", pipeline=[{"$project": {"k": 1}}, stage], cursor={},
                             readConcern={"level": "majority"}, writeConcern={"w": 1})
            got = sorted(d["_id"] for d in c.rc.majout.find())
            check(got == list(range(5)), "majority $out writes only what was committed: %r" % got)
            got = sorted((d["_id"], d["k"]) for d in c.rc.majmerge.find())
            check(got == [(i, "old") for i in range(5)], "majority $merge: %r" % got)
            c.rc.command("aggregate", "maj", pipeline=[{"$out": "majout"}], cursor={}, writeConcern={"w": 1})
            check(c.rc.majout.count_documents({}) == 10, "a local $out reads the w: 1 write")
            # mongod's supportsReadConcern: commands that refuse the level
            for cmd in ({"listCollections": 1}, {"listIndexes": "maj"}, {"dbHash": 1}, {"collStats": "maj"},
                        {"insert": "maj", "documents": [{"_id": "never"}]},
                        {"mapReduce": "maj", "map": "function() { emit(this.k, 1); }",
                         "reduce": "function(k, v) { return Array.sum(v); }", "out": {"inline": 1}}):
                name = next(iter(cmd))
                e = expect_code(lambda: c.rc.command(dict(cmd, readConcern={"level": "majority"})), 72,
                                "%s with readConcern majority" % name)
                check('Command %s does not support { readConcern: { level: "majority", provenance: "clientSupplied" }'
                      ' } :: caused by :: read concern not supported' % name in str(e), "message: %s" % e)
            # the whole read concern, as mongod's ReadConcernArgs::toString prints it
            e = expect_code(lambda: c.rc.command({"listIndexes": "maj", "readConcern": {
                "afterClusterTime": Timestamp(1, 2), "level": "majority"}}), 72, "listIndexes, afterClusterTime")
            check('Command listIndexes does not support { readConcern: { level: "majority", afterClusterTime: '
                  'Timestamp(1, 2), provenance: "clientSupplied" } } :: caused by :: read concern not supported'
                  in str(e), "message: %s" % e)
            check(c.rc.majf.find_one({"_id": "f1"}) is not None, "nothing written by a refusal changed it")
            h = c.admin.command("hello")
            check(h["lastWrite"]["majorityOpTime"]["ts"] < h["lastWrite"]["opTime"]["ts"],
                  "hello: commit point behind the last write while the secondaries are paused")
            # linearizable cannot be confirmed without a majority
            lin = c.rc.get_collection("maj", read_concern=ReadConcern("linearizable"))
            expect_code(lambda: lin.find_one({"_id": 0}, max_time_ms=800), 50, "linearizable without a majority")
        finally:
            for s in secs:
                s.resume()
        deadline = time.time() + 20
        while maj.count_documents({}) != 10 and time.time() < deadline:
            time.sleep(0.1)
        check(maj.count_documents({}) == 10, "majority read sees the write once committed")
        r = c.rc.command("mapReduce", "maj", map="function() { emit(this.k, 1); }",
                         reduce="function(k, v) { return Array.sum(v); }", out={"inline": 1},
                         readConcern={"level": "available"})
        check(len(r["results"]) == 2, "mapReduce takes available: %r" % r)
        check(lin.find_one({"_id": 100}, max_time_ms=20000)["k"] == "new", "linearizable read on the primary")
        expect_code(lambda: c.rc.command("find", "maj", readConcern={
            "level": "linearizable", "afterOpTime": {"ts": h["lastWrite"]["opTime"]["ts"], "t": 1}}),
            9, "linearizable with afterOpTime")
    # on a secondary: majority reads the commit point it learned; linearizable is refused
    s = secs[0]
    with s.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        deadline = time.time() + 20
        maj = c.rc.get_collection("maj", read_concern=ReadConcern("majority"))
        while maj.count_documents({}) != 10 and time.time() < deadline:
            time.sleep(0.1)
        check(maj.count_documents({}) == 10, "majority read on a secondary")
        e = expect_code(lambda: c.rc.get_collection("maj", read_concern=ReadConcern("linearizable")).find_one(),
                        10107, "linearizable on a secondary")
        check("cannot satisfy linearizable read concern on non-primary node" in str(e), "message: %s" % e)


def causal(cl, p):
    """A causally consistent session's reads on a secondary that was paused
    while the session wrote (the driver sends afterClusterTime)."""
    i, s = [(i, m) for i, m in enumerate(cl.members) if m is not p][0]
    pick = Secondary(tag_sets=[{"dc": DCS[i]}])
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
        c.rc.get_collection("causal", read_preference=pick).find_one({})   # a connection to s first
        for k, level in enumerate((None, "majority")):
            with c.start_session(causal_consistency=True) as sess:
                s.pause()
                try:
                    c.rc.get_collection("causal", write_concern=WriteConcern(w="majority")).insert_one(
                        {"_id": k, "v": "mine"}, session=sess)
                finally:
                    threading.Timer(0.5, s.resume).start()
                coll = c.rc.get_collection("causal", read_preference=pick,
                                           read_concern=ReadConcern(level) if level else ReadConcern())
                cur = coll.find({"_id": k}, session=sess)
                got = list(cur)
                check("%s:%d" % cur.address == s.host, "served by the paused secondary: %r" % (cur.address,))
                check(got == [{"_id": k, "v": "mine"}],
                      "afterClusterTime (level %s) on a secondary waits for the session's write: %r" % (level, got))


def w_applied(cl, p):
    secs = [m for m in cl.members if m is not p]
    with p.client() as c:
        coll = c.rc.get_collection("w3", write_concern=WriteConcern(w=3, wtimeout=20000))
        clients = [s.client(read_preference=ReadPreference.SECONDARY_PREFERRED) for s in secs]
        try:
            for i in range(30):
                coll.insert_one({"_id": i})
                for sc in clients:
                    check(sc.rc.w3.find_one({"_id": i}) is not None, "w:3 write %d applied on every member" % i)
        finally:
            for sc in clients:
                sc.close()


def retry_rows(cl, p):
    with p.client() as c:
        coll = c.rc.get_collection("rows", write_concern=WriteConcern(w=3, wtimeout=20000))
        clients = [m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) for m in cl.members]
        try:
            with c.start_session() as sess:
                lsid = sess.session_id
                for k in range(2):
                    coll.insert_many([{"_id": k * 100 + i} for i in range(100)], session=sess)
                    last = k * 100 + 99
                    nums = set()
                    for m, mc in zip(cl.members, clients):
                        entry = mc.local.oplog.rs.find_one({"ns": "rc.rows", "o._id": last})
                        # every member keys the row by the entry's lsid: {id, uid} (uid: SHA-256 of "")
                        row = mc.config.transactions.find_one({"_id": {"id": lsid["id"], "uid": NO_AUTH_UID}})
                        check(entry is not None and row is not None, "%s: batch %d's last entry and session row: %s %s" % (m.host, k, entry, row))
                        check(entry["lsid"] == row["_id"], "%s: the entry's lsid is the row's _id: %s" % (m.host, entry["lsid"]))
                        check(row["lastWriteOpTime"]["ts"] == entry["ts"] and row["lastWriteOpTime"]["t"] == entry["t"],
                              "%s: session row at the batch's last entry (%s, %s)" % (m.host, row, entry["ts"]))
                        check(row["txnNum"] == entry["txnNumber"], "%s: session row's txnNum %s" % (m.host, row))
                        nums.add(row["txnNum"])
                    check(len(nums) == 1, "every member's row has one txnNum: %s" % nums)
        finally:
            for mc in clients:
                mc.close()


def w_modes(cl, p):
    """w: "<mode>" of settings.getLastErrorModes waits for members whose
    tags meet the mode (distinct dc values), not for a majority."""
    secs = [m for m in cl.members if m is not p]
    with p.client() as c:
        two = c.rc.get_collection("modes", write_concern=WriteConcern(w="twoDCs", wtimeout=1500))
        three = c.rc.get_collection("modes", write_concern=WriteConcern(w="allDCs", wtimeout=1500))
        two.insert_one({"_id": "all up 2"})
        three.insert_one({"_id": "all up 3"})
        check(True, "both modes met with every member up")
        secs[1].pause()
        try:
            two.insert_one({"_id": "one paused 2"})
            check(True, "twoDCs met with one secondary paused")
            try:
                three.insert_one({"_id": "one paused 3"})
                check(False, "allDCs met with a member paused")
            except WriteConcernError as e:
                check(e.code == 64 and e.details.get("errInfo", {}).get("wtimeout") is True,
                      "allDCs: writeConcernError 64 wtimeout with a member paused: %r" % e.details)
        finally:
            secs[1].resume()
        three.insert_one({"_id": "resumed 3"})
        check(True, "allDCs met again once the member resumed")
        expect_code(lambda: c.rc.get_collection("modes", write_concern=WriteConcern(w="nope")).insert_one({}),
                    79, "an unknown mode")


def selection(cl, p):
    secs = [(i, m) for i, m in enumerate(cl.members) if m is not p]
    uri = cl.uri() + "&readPreference=secondary&maxStalenessSeconds=90"
    with MongoClient(uri, serverSelectionTimeoutMS=10000) as c:
        cur = c.rc.w3.find({})
        check(len(list(cur)) == 30, "maxStalenessSeconds read")
        check("%s:%d" % cur.address in [m.host for _, m in secs], "read served by a secondary: %r" % (cur.address,))
    for i, m in secs:
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
            coll = c.rc.get_collection("w3", read_preference=Secondary(tag_sets=[{"dc": DCS[i]}]))
            for _ in range(3):
                cur = coll.find({})
                check(len(list(cur)) == 30, "tagged read")
                check("%s:%d" % cur.address == m.host, "tag set dc:%s picks %s, got %r" % (DCS[i], m.host, cur.address))


def mongosh(cl, p):
    if MONGOSH is None:
        print("mongosh: not given, skipped")
        return
    script = ("const d = db.getSiblingDB('rc');"
              "d.sh.insertOne({_id: 1}, {writeConcern: {w: 'majority'}});"
              "const m = d.sh.find().readConcern('majority').toArray().length;"
              "const l = d.runCommand({find: 'sh', readConcern: {level: 'linearizable'}, maxTimeMS: 20000});"
              "const h = db.hello();"
              "print(JSON.stringify({m: m, l: l.cursor.firstBatch.length, tags: h.tags,"
              " maj: h.lastWrite.majorityOpTime !== undefined}))")
    out = subprocess.run([MONGOSH, cl.uri(), "--quiet", "--norc", "--eval", script],
                         capture_output=True, text=True, timeout=120)
    check(out.returncode == 0, "mongosh ran: %s" % out.stderr[-500:])
    got = json.loads(out.stdout.strip().splitlines()[-1])
    i = [m.host for m in cl.members].index(p.host)
    check(got == {"m": 1, "l": 1, "tags": {"dc": DCS[i]}, "maj": True}, "mongosh concerns: %r" % got)


def grouped_apply(cl, p):
    """A secondary applies a run of entries in one storage transaction, each
    write at its own entry's ts: a snapshot read at any ts inside a batch
    of 100 inserts sees exactly the documents inserted up to it, an
    afterClusterTime read waits for the whole batch; kill -9 of a secondary
    while it applies batches leaves its data and oplog equal to the
    primary's after it restarts (the run was all or nothing)."""
    sec = [m for m in cl.members if m is not p][0]
    with p.client() as c, sec.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as sc:
        # a first snapshot read: from then on the member keeps 5 s of history
        sc.rc.command("find", "grp", readConcern={"level": "snapshot"},
                      read_preference=ReadPreference.SECONDARY_PREFERRED)
        time.sleep(0.5)
        coll = c.rc.get_collection("grp", write_concern=WriteConcern(w=3, wtimeout=20000))
        coll.insert_many([{"_id": i} for i in range(100)])
        ents = list(sc.local.oplog.rs.find({"ns": "rc.grp", "op": "i"}).sort("ts", 1))
        check(len(ents) == 100 and [e["o"]["_id"] for e in ents] == list(range(100)),
              "the secondary's oplog holds the batch's 100 entries in order")
        for k in (0, 1, 36, 98, 99):
            r = sc.rc.command("find", "grp", readConcern={"level": "snapshot", "atClusterTime": ents[k]["ts"]},
                              batchSize=1000, read_preference=ReadPreference.SECONDARY_PREFERRED)
            got = sorted(d["_id"] for d in r["cursor"]["firstBatch"])
            check(got == list(range(k + 1)),
                  "snapshot read at the batch's entry %d on a secondary: %d documents %r" % (k, len(got), got[-3:]))
        r = sc.rc.command("find", "grp", readConcern={"afterClusterTime": ents[-1]["ts"]}, batchSize=1000,
                          read_preference=ReadPreference.SECONDARY_PREFERRED)
        check(len(r["cursor"]["firstBatch"]) == 100, "afterClusterTime read on a secondary sees the whole batch")

    stop = threading.Event()
    wrote = [0]

    def writer():
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as wc:
            kc = wc.rc.get_collection("kill", write_concern=WriteConcern(w=1))
            # at most 6,000 entries: a member behind by more than Raft keeps
            # (8192 entries) would copy the data instead of applying the log
            while not stop.is_set() and wrote[0] < 6000:
                kc.insert_many([{"_id": wrote[0] + i, "pad": "x" * 100} for i in range(100)])
                wrote[0] += 100
                time.sleep(0.03)

    t = threading.Thread(target=writer)
    t.start()
    try:
        for delay in (0.6, 0.45, 0.8):
            time.sleep(delay)
            sec.kill9()
            time.sleep(0.3)
            sec.start()
    finally:
        stop.set()
        t.join()
    with p.client() as c:
        c.rc.get_collection("kill", write_concern=WriteConcern(w=3, wtimeout=60000)).insert_one({"_id": -1})
    from raft_cluster import wait_equal
    wait_equal(cl.members, "rc", "kill", timeout=60)
    with p.client() as c, sec.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as sc:
        mine = [e["ts"] for e in c.local.oplog.rs.find({"ns": "rc.kill"}, {"ts": 1}).sort("ts", 1)]
        its = [e["ts"] for e in sc.local.oplog.rs.find({"ns": "rc.kill"}, {"ts": 1}).sort("ts", 1)]
        check(mine == its and len(its) == wrote[0] + 1,
              "the killed secondary's oplog holds the primary's %d entries (has %d)" % (len(mine), len(its)))
        check(sc.rc.kill.count_documents({}) == wrote[0] + 1, "the killed secondary's data: every document")


def main():
    t0 = time.time()
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", config(cl))
        p = cl.wait_primary(30)
        hello_fields(cl, p)
        majority_reads(cl, p)
        causal(cl, p)
        w_applied(cl, p)
        retry_rows(cl, p)
        grouped_apply(cl, p)
        w_modes(cl, p)
        selection(cl, p)
        mongosh(cl, p)
    print("raft_concerns: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
