"""raft_bigtxn.py -- transactions larger than one oplog entry (16 MB) on a
replica set of three tamgad members on 127.0.0.1 (issue 24), through PyMongo:
  - a 40 MB transaction (40 documents of 1 MB) commits with w: "majority";
    the primary writes it as a chain of applyOps entries (partialTxn: true,
    linked by prevOpTime, the last with count: 40), every member holds the
    chain with the same ts and the same data (a hash in _id order);
  - a change stream opened before it sees one insert event per document, in
    order, each with the transaction's lsid and txnNumber;
  - kill -9 of the primary while a 20 MB transaction commits: afterwards
    (new primary, old one restarted and caught up) every member holds all
    of the transaction or none of it, and the members are equal;
  - a 20 MB transaction only the primary holds (w: 1, both secondaries
    killed), then the primary killed: restarted, it rolls the chain back
    (its 20 documents saved to rollback/<uuid>/removed.*.bson, gone from
    its data and oplog) and equals the others;
  - a one-member set started with maxNumberOfTransactionOperationsInSingleOplogEntry=2
    (mongod's startup parameter: getParameter shows it, setParameter
    answers 20) writes a 5-insert transaction as entries of 2, 2 and 1.

usage: raft_bigtxn.py path/to/tamgad
"""
import glob
import os
import random
import sys
import threading
import time

import bson
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.errors import PyMongoError
from pymongo.read_concern import ReadConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, Member, check, each, report, wait_equal  # noqa: E402

TAMGAD = sys.argv[1]
MB = 1024 * 1024


def uuid_bytes(u):
    """A session id's 16 bytes, whether decoded as a UUID or a Binary."""
    return u.bytes if hasattr(u, "bytes") else bytes(u or b"")


def big_docs(tag, n):
    # 1 MB of a character that differs per document (no two alike)
    return [{"_id": i, "tag": tag, "pad": chr(ord("a") + i % 26) * (MB - 64)} for i in range(n)]


def chain_of(member, lsid):
    """The transaction entries of lsid in member's oplog, oldest first."""
    with member.client() as c:
        got = c.local.oplog.rs.find({"op": "c", "ns": "admin.$cmd"},
                                    {"ts": 1, "t": 1, "lsid": 1, "prevOpTime": 1, "o.partialTxn": 1, "o.count": 1,
                                     "txnNumber": 1}, sort=[("ts", 1)])
        return [e for e in got if uuid_bytes(e.get("lsid", {}).get("id")) == uuid_bytes(lsid["id"])]


def big_commit(cl, client):
    coll = client.big.docs
    coll.insert_one({"_id": "before"})
    with coll.watch(max_await_time_ms=200) as stream:
        with client.start_session() as s:
            t0 = time.time()
            with s.start_transaction(write_concern=WriteConcern(w="majority")):
                for d in big_docs("t40", 40):
                    coll.insert_one(d, session=s)
            took = time.time() - t0
            lsid = s.session_id
        events = []
        deadline = time.time() + 60
        while len(events) < 40 and time.time() < deadline:
            ev = stream.try_next()
            if ev is not None:
                events.append(ev)
    check(len(events) == 40, "one change event per operation: %d of 40" % len(events))
    check([e["documentKey"]["_id"] for e in events] == list(range(40)), "events in the transaction's order")
    check(all(e["operationType"] == "insert" for e in events), "insert events")
    check(all(uuid_bytes(e.get("lsid", {}).get("id")) == uuid_bytes(lsid["id"]) and "txnNumber" in e for e in events),
          "each event has lsid and txnNumber: %r" % ({k: events[0].get(k) for k in ("lsid", "txnNumber")},))
    check(len({e["txnNumber"] for e in events}) == 1, "one txnNumber")
    check(len({e["clusterTime"] for e in events}) == 1, "the events share the commit's clusterTime")
    check(all(len(e["fullDocument"]["pad"]) == MB - 64 for e in events), "full documents in the events")

    # every member applies the chain (a secondary may still be writing it)
    chains = [chain_of(m, lsid) for m in cl.members]
    deadline = time.time() + 60
    while any(len(ch) < 3 for ch in chains) and time.time() < deadline:
        time.sleep(0.2)
        chains = [chain_of(m, lsid) for m in cl.members]
    ch = chains[0]
    check(len(ch) == 3, "40 MB is three applyOps entries (16 MB each at most): %d" % len(ch))
    check([e["o"].get("partialTxn") for e in ch] == [True, True, None], "partialTxn on all but the last: %r" % ch)
    check(ch[-1]["o"].get("count") == 40, "the commit entry counts 40 operations")
    check(all(ch[i]["prevOpTime"]["ts"] == ch[i - 1]["ts"] for i in (1, 2)), "prevOpTime links the chain")
    for other in chains[1:]:
        check([(e["ts"], e["t"]) for e in other] == [(e["ts"], e["t"]) for e in ch],
              "every member holds the same chain")
    h = wait_equal(cl.members, "big", "docs", timeout=60)
    for m in cl.members:
        with m.client() as c:
            check(c.big.docs.count_documents({"tag": "t40"}) == 40, "%s holds the 40 documents" % m.host)
    print("40 MB transaction: committed in %.1f s, %d events, chain of %d entries, members equal (%s)" % (
        took, len(events), len(ch), h[:8]))


def wait_secondary(m, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with m.client(serverSelectionTimeoutMS=1000) as c:
                if c.admin.command("hello").get("secondary"):
                    return
        except PyMongoError:
            pass
        time.sleep(0.2)
    raise AssertionError("%s is not SECONDARY within %ss" % (m.host, timeout))


def commit_in_thread(uri, tag, n, result):
    try:
        with MongoClient(uri, serverSelectionTimeoutMS=20000, retryWrites=False) as c:
            coll = c.big.kill
            with c.start_session() as s:
                s.start_transaction(write_concern=WriteConcern(w="majority"))
                for d in big_docs(tag, n):
                    coll.insert_one(d, session=s)
                result["inserted"] = time.time()
                s.commit_transaction()
                result["committed"] = True
    except PyMongoError as e:
        result["error"] = repr(e)


def kill_during_commit(cl, run):
    """kill -9 of the primary while a 20 MB transaction commits: all or
    nothing everywhere afterwards."""
    tag = "k%d" % run
    old = cl.wait_primary()
    result = {}
    t = threading.Thread(target=commit_in_thread, args=(cl.uri(), tag, 20, result))
    t.start()
    deadline = time.time() + 60
    while "inserted" not in result and "error" not in result and time.time() < deadline:
        time.sleep(0.005)
    check("inserted" in result, "the transaction's inserts ran: %r" % result)
    # the commit is under way: the chain is being written, fed to Raft,
    # replicated, applied
    time.sleep(random.uniform(0.0, 0.4))
    old.kill9()
    t.join(60)
    new = cl.wait_primary(timeout=30, among=[m for m in cl.members if m is not old])
    old.start()
    wait_secondary(old, 60)
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000) as c:
        c.big.marker.with_options(write_concern=WriteConcern(w=3, wtimeout=60000)).insert_one({"run": run})
    wait_equal(cl.members, "big", "kill", timeout=60)
    counts = []
    for m in cl.members:
        with m.client() as c:
            counts.append(c.big.kill.count_documents({"tag": tag}))
    check(counts[0] in (0, 20), "all of the transaction or none: %r" % counts)
    check(len(set(counts)) == 1, "every member the same: %r" % counts)
    if result.get("committed"):
        check(counts[0] == 20, "an acknowledged commit is kept: %r" % counts)
    print("kill -9 during a 20 MB commit (run %d): %d of 20 documents on every member, commit %s" % (
        run, counts[0], "acknowledged" if result.get("committed") else result.get("error", "not answered")[:80]))
    return new


def rollback_chain(cl):
    p = cl.wait_primary()
    others = [m for m in cl.members if m is not p]
    with p.client() as c:
        db = c.get_database("big", write_concern=WriteConcern(w="majority"))
        db.rb.insert_one({"_id": "seed"})
        uuid = [x for x in db.list_collections() if x["name"] == "rb"][0]["info"]["uuid"]
    for m in others:   # no majority can take what follows
        m.kill9()
    try:
        with MongoClient(p.host, directConnection=True) as c:
            with c.start_session() as s:
                with s.start_transaction(write_concern=WriteConcern(w=1)):
                    for d in big_docs("rb", 20):
                        c.big.rb.insert_one(d, session=s)
            n = c.local.oplog.rs.count_documents({"o.applyOps": {"$exists": True}, "o.applyOps.ns": "big.rb"})
            check(n == 2, "the primary wrote the 20 MB chain (2 entries): %d" % n)
        time.sleep(0.5)   # the journal flusher takes it (w: 1, j: false)
        p.kill9()
    finally:
        each(Member.start, others)
    np = cl.wait_primary(30, among=others)
    with np.client() as c:
        c.big.rb.with_options(write_concern=WriteConcern(w="majority")).insert_one({"_id": "after"})
    p.start()
    wait_secondary(p, 90)   # ROLLBACK (9) meanwhile: reads answer 13436
    wait_equal(cl.members, "big", "rb", timeout=90)
    with p.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        check(c.big.rb.count_documents({"tag": "rb"}) == 0, "the rolled-back transaction's documents are gone")
        n = c.local.oplog.rs.count_documents({"o.applyOps.ns": "big.rb"})
        check(n == 0, "its chain is gone from the oplog: %d" % n)
    files = glob.glob(os.path.join(p.dbpath, "rollback", str(uuid), "removed.*.bson"))
    saved = []
    for f in files:
        with open(f, "rb") as fh:
            saved += [d["_id"] for d in bson.decode_file_iter(fh)]
    check(sorted(saved) == list(range(20)), "the chain's 20 documents saved for the operator: %r" % sorted(saved)[:25])
    print("rollback of a 20 MB chain: %d documents saved in %d file(s), members equal" % (len(saved), len(files)))


def ops_per_entry():
    with Cluster(TAMGAD, n=1, extra=["--setParameter", "maxNumberOfTransactionOperationsInSingleOplogEntry=2"]) as one:
        m = one.members[0]
        with m.client() as c:
            c.admin.command("replSetInitiate")
        one.wait_primary()
        with m.client() as c:
            got = c.admin.command("getParameter", 1, maxNumberOfTransactionOperationsInSingleOplogEntry=1)
            check(got["maxNumberOfTransactionOperationsInSingleOplogEntry"] == 2, "getParameter: %r" % got)
            try:
                c.admin.command("setParameter", 1, maxNumberOfTransactionOperationsInSingleOplogEntry=5)
                check(False, "setParameter of a startup parameter refused")
            except PyMongoError as e:
                check(getattr(e, "code", None) == 20, "setParameter at runtime: 20, got %r" % e)
            c.t.c.insert_one({"_id": "seed"})
            with c.start_session() as s:
                with s.start_transaction():
                    for i in range(5):
                        c.t.c.insert_one({"_id": i}, session=s)
            shape = [(len(e["o"]["applyOps"]), e["o"].get("partialTxn"), e["o"].get("count"))
                     for e in c.local.oplog.rs.find({"o.applyOps": {"$exists": True}}, sort=[("ts", 1)])]
            check(shape == [(2, True, None), (2, True, None), (1, None, 5)], "entries of 2, 2, 1: %r" % shape)
            check(c.t.c.count_documents({}) == 6, "the transaction's documents")


def main():
    ops_per_entry()
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=4000))
        cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, w="majority") as client:
            client.big.kill.insert_one({"_id": "seed"})
            client.big.marker.insert_one({"_id": "seed"})
            big_commit(cl, client)
        for run in range(int(os.environ.get("BIGTXN_KILLS", "1"))):
            kill_during_commit(cl, run)
        rollback_chain(cl)
    report("raft_bigtxn")


if __name__ == "__main__":
    main()
