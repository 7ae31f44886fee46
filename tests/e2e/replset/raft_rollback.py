"""raft_rollback.py -- rollback of a deposed primary in a set of three tamgad
members on 127.0.0.1 (issue 24, src/repl/rollback.h), forced
deterministically:

  1. the secondaries are killed (-9), the primary takes w: 1 writes
     (inserts, updates, a delete, a retryable insert) that no majority
     can take, then is killed (-9) -- or, in the second round, paused
     (SIGSTOP);
  2. the others restart and elect a new primary, which takes writes of its
     own (one of them on a document the old primary had updated);
  3. the old primary comes back (a restart, or SIGCONT): it must roll its
     entries back and end SECONDARY with every collection equal (a hash in
     _id order) to the others', its oplog without the rolled-back entries,
     and the documents of its rolled-back inserts and updates saved in
     <dbpath>/rollback/<collection uuid>/removed.<time>.<n>.bson as mongod.
     In the first round the old primary is then elected again and the
     retries of its rolled-back retryable writes (same lsid and txnNumber,
     through PyMongo) are sent to it: they run again, once; in the second
     round they go to the new primary;
  4. a fourth round restarts the old primary only after the new one took
     more entries than the Raft log keeps: it gets the leader's snapshot,
     finds the common point in the leader's oplog, rolls back (files as
     above) and catches up from the leader's oplog;
  5. replSetGetRBID: mongod's reply ({rbid}), 94 before initiation, the id
     one more after each rollback (rounds 1-3), kept across the restart;
  6. a third round rolls back DDL too (an index build, a new collection),
     which cannot be undone from the entries: the member saves the
     documents, then copies the data again from the new primary.

usage: raft_rollback.py path/to/tamgad
"""
import datetime
import glob
import os
import uuid as uuidlib
import signal
import sys
import time

import bson
from bson.binary import Binary, UuidRepresentation
from bson.int64 import Int64
from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, Member, check, coll_hash, each, raft_compacted, report  # noqa: E402

TAMGAD = sys.argv[1]


def state_of(m):
    with m.client() as c:
        return c.admin.command("replSetGetStatus")["myState"]


def wait_secondary_equal(cl, old, colls, timeout=40):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            st = state_of(old)
            if st == 3:
                raise AssertionError("the old primary is RECOVERING:\n%s" % old.tail(60))
            if st == 2:
                hs = []
                for m in cl.members:
                    with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
                        hs.append(tuple(coll_hash(c, "rb", n) for n in colls))
                if len(set(hs)) == 1:
                    return hs[0]
                last = hs
        except PyMongoError as e:
            last = repr(e)
        time.sleep(0.3)
    raise AssertionError("the old primary did not become an equal secondary: %r\n%s" % (last, repl_lines(old)))


def repl_lines(m):
    """The member's replication log lines (the tail is mostly connections)."""
    keep = [line for line in m.tail(100000).splitlines()
            if any(k in line for k in ('"REPL"', '"INITSYNC"', '"ROLLBACK"', '"s":"E"')) and "Slow query" not in line]
    return "\n".join(keep[-40:])


def read_bson_file(path):
    with open(path, "rb") as f:
        data = f.read()
    return bson.decode_all(data)


def rbid(m):
    with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        r = c.admin.command("replSetGetRBID")
    check(isinstance(r["rbid"], int) and r["ok"] == 1, "replSetGetRBID's reply: %r" % r)
    return r["rbid"]


def one_round(cl, p, rnd, kill, ddl=False, far=False, retry_on_old=False):
    others = [m for m in cl.members if m is not p]
    coll = "c%d" % rnd
    rb0 = rbid(p)
    with p.client() as c:
        db = c.get_database("rb", write_concern=WriteConcern(w="majority"))
        db[coll].insert_many([{"_id": i, "v": "base"} for i in range(10)])
        db.other.insert_one({"_id": "r%d" % rnd, "v": 1})
        uuid = [x for x in db.list_collections() if x["name"] == coll][0]["info"]["uuid"]
        if not ddl and not far:
            db.create_collection("ts%d" % rnd, timeseries={"timeField": "t", "metaField": "m"})
    # the sessions of two lost retryable writes with their own txnNumbers: a
    # time-series insert (its reply kept whole in config.tamga_retry_replies,
    # shipped as a no-op note) and a plain insert (config.transactions)
    lsid_ts = {"id": Binary.from_uuid(uuidlib.uuid4(), UuidRepresentation.STANDARD)}
    lsid_plain = {"id": Binary.from_uuid(uuidlib.uuid4(), UuidRepresentation.STANDARD)}
    t0 = datetime.datetime(2026, 1, 1)

    def as_session(client, lsid, cmd):
        """cmd sent on a driver session carrying lsid (the driver would put
        its own implicit one); it never goes back to the driver's pool"""
        s = client.start_session()
        s._server_session.session_id = lsid
        try:
            return client.rb.command(dict(cmd, lsid=lsid), session=s)
        finally:
            s._server_session.mark_dirty()
            s.end_session()

    def writes(client, wc):
        """the two writes at txnNumber 5: their replies' n"""
        a = as_session(client, lsid_ts, {"insert": "ts%d" % rnd, "documents": [{"t": t0, "m": "x", "v": 1},
                       {"t": t0, "m": "y", "v": 2}], "txnNumber": Int64(5), "writeConcern": {"w": wc}})
        b = as_session(client, lsid_plain, {"insert": "retry", "documents": [{"_id": "p%d" % rnd}],
                       "txnNumber": Int64(5), "writeConcern": {"w": wc}})
        return a["n"], b["n"]

    if not ddl and not far:
        # a kept reply the set holds first: config.tamga_retry_replies exists
        # before the lost writes (its creation among them is DDL: a resync)
        with p.client() as c:
            warm = {"id": Binary.from_uuid(uuidlib.uuid4(), UuidRepresentation.STANDARD)}
            as_session(c, warm, {"insert": "ts%d" % rnd, "documents": [{"t": t0, "m": "w", "v": 0}],
                                 "txnNumber": Int64(1), "writeConcern": {"w": "majority"}})
            c.get_database("rb", write_concern=WriteConcern(w="majority")).retry.insert_one({"_id": "warm%d" % rnd})
    # the secondaries die (a pause would not do: what the primary sends
    # waits in their sockets, and a majority that reads it keeps it)
    for m in others:
        m.kill9()
    try:
        # w: 1 writes that no majority can take
        with MongoClient(p.host, directConnection=True, w=1, retryWrites=True) as c:
            db = c.rb
            db[coll].insert_many([{"_id": 100 + i, "v": "lost"} for i in range(5)])
            db[coll].update_one({"_id": 0}, {"$set": {"v": "lost-update"}})
            db[coll].update_one({"_id": 3}, {"$set": {"v": "lost-update-3"}})
            db[coll].delete_one({"_id": 1})
            db.other.update_one({"_id": "r%d" % rnd}, {"$inc": {"v": 10}})
            with c.start_session() as s:
                db[coll].insert_one({"_id": 300, "v": "lost-retryable"}, session=s)
            if not ddl and not far:
                check(writes(c, 1) == (2, 1), "the lost retryable writes ran")
                check(c.config.tamga_retry_replies.count_documents({"_id.id": lsid_ts["id"]}) == 1,
                      "the lost time-series insert's reply is kept on the old primary")
            if ddl:
                # commands cannot be undone from the entries: the member
                # saves the documents, then copies the data again
                db[coll].create_index([("v", 1)], name="lost_index")
                db.lostcoll.insert_one({"_id": 1})
            last_local = c.local.oplog.rs.find_one(sort=[("$natural", -1)])["ts"]
        time.sleep(0.3)   # let the journal flusher take them (w: 1, j: false)
        if kill:
            p.kill9()
        else:
            p.proc.send_signal(signal.SIGSTOP)
    finally:
        each(Member.start, others)
    np = cl.wait_primary(20, among=others)
    with np.client() as c:
        db = c.get_database("rb", write_concern=WriteConcern(w="majority"))
        db[coll].update_one({"_id": 3}, {"$set": {"v": "new-primary"}})
        db[coll].insert_one({"_id": 200, "v": "new"})
        have = sorted(d["_id"] for d in db[coll].find())
    check(have == [0] + list(range(1, 10)) + [200], "the new primary never saw the lost writes: %r" % have)
    if far:
        # past the Raft log the leader keeps (src/repl/raft_member.c: 8192 +
        # 8192): the old primary gets the leader's snapshot, finds the
        # common point in the leader's oplog, rolls back, then catches up
        with np.client() as c:
            db = c.get_database("rb", write_concern=WriteConcern(w=1))
            for i in range(0, 18000, 500):
                db.far.insert_many([{"_id": j} for j in range(i, i + 500)])
            # Raft asks for a snapshot as it applies entries: a few more
            # until one is taken and the log compacted (was: fixed sleeps
            # of 5 s; the old primary's catch-up from the leader's oplog,
            # checked below, needs that snapshot either way)
            deadline = time.time() + 60
            i = 0
            while True:
                snaps, first, names = raft_compacted(np)
                if (snaps and first and first > 1) or time.time() > deadline:
                    break
                db.far.insert_one({"_id": "tick%d" % i})
                i += 1
                time.sleep(0.1)
            check(snaps and first and first > 1, "the new primary compacted its Raft log: %r" % names)
    if kill:
        p.start()
    else:
        p.proc.send_signal(signal.SIGCONT)
    hs = wait_secondary_equal(cl, p, [coll, "other"])
    check(len(hs) == 2, "hashes")
    with p.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        docs = {d["_id"]: d["v"] for d in c.rb[coll].find()}
        check(docs.get(0) == "base" and docs.get(1) == "base" and docs.get(3) == "new-primary",
              "rolled-back update/delete undone, the new primary's kept: %r" % docs)
        check(not any(i in docs for i in (100, 101, 102, 103, 104, 300)), "rolled-back inserts gone: %r" % docs)
        check(c.rb.other.find_one({"_id": "r%d" % rnd})["v"] == 1, "rolled-back $inc undone")
        n = c.local.oplog.rs.count_documents({"ns": "rb.%s" % coll, "o._id": {"$in": [100, 101, 102, 103, 104, 300]}})
        check(n == 0, "the rolled-back inserts' entries are gone from the oplog: %d" % n)
        check(c.local.oplog.rs.find_one({"ts": last_local}) is None or
              c.local.oplog.rs.find_one({"ts": last_local}).get("o", {}).get("msg") == "new primary",
              "the old primary's last entry is gone")
        check(c.admin.command("hello")["secondary"], "hello says secondary")
        if not ddl and not far:
            # the rolled-back writes' session rows are the set's (none):
            # nothing on this member answers a retry with their first reply
            check(c.config.tamga_retry_replies.count_documents({"_id.id": lsid_ts["id"]}) == 0,
                  "the rolled-back time-series insert's kept reply is gone")
            check(c.config.transactions.count_documents({"_id.id": lsid_plain["id"]}) == 0,
                  "the rolled-back plain insert's config.transactions row is gone")
            check(c.rb["ts%d" % rnd].count_documents({}) == 1 and c.rb.retry.count_documents({"_id": "p%d" % rnd}) == 0,
                  "the rolled-back retryable inserts are undone")
    if not ddl and not far and retry_on_old:
        # the old primary elected again (the third member frozen, the new
        # primary stepping down): its memory of the rolled-back writes is
        # gone, a retry sent to it runs them again
        third = [m for m in others if m is not np][0]
        with third.client() as c:
            c.admin.command("replSetFreeze", 60)
        try:
            with np.client() as c:
                c.admin.command("replSetStepDown", 60, secondaryCatchUpPeriodSecs=10)
        except PyMongoError:
            pass   # the connection closes as the primary steps down
        check(cl.wait_primary(30) is p, "the old primary is elected again")
        # (the two stay frozen: the next round kills and restarts them)
        with p.client() as c:
            check(c.admin.command("hello")["isWritablePrimary"], "the old primary is primary")
            check(c.rb["ts%d" % rnd].count_documents({}) == 1 and c.rb.retry.count_documents({"_id": "p%d" % rnd}) == 0,
                  "the re-elected old primary does not hold the rolled-back writes")
    if not ddl and not far:
        # a retry of the rolled-back writes executes them again (as mongod:
        # config.transactions no longer records them), once -- on the new
        # primary, or on the old one elected again
        target = cl.wait_primary(10)
        check(target is p if retry_on_old else target is np, "the retries go to %s" % target.host)
        with target.client() as c:
            check(writes(c, "majority") == (2, 1), "the retries after the rollback inserted again")
            check(c.rb["ts%d" % rnd].count_documents({}) == 3 and c.rb.retry.count_documents({"_id": "p%d" % rnd}) == 1,
                  "each retried write applied once")
            check(writes(c, "majority") == (2, 1), "a second retry answers the new first reply")
            check(c.rb["ts%d" % rnd].count_documents({}) == 3, "the second retry applied nothing")
    # the rollback files
    folder = os.path.join(p.dbpath, "rollback", str(uuid))
    files = sorted(glob.glob(os.path.join(folder, "removed.*.bson")))
    check(files, "a rollback file under %s (have %r)" % (folder, glob.glob(os.path.join(p.dbpath, "rollback", "*"))))
    check(all(len(os.path.basename(f).split(".")) == 4 for f in files), "removed.<time>.<n>.bson: %r" % files)
    saved = {}
    for f in files:
        for d in read_bson_file(f):
            saved[d["_id"]] = d["v"]
    want = {100: "lost", 101: "lost", 102: "lost", 103: "lost", 104: "lost", 300: "lost-retryable",
            0: "lost-update", 3: "lost-update-3"}
    check(saved == want, "saved documents: %r" % saved)
    log = p.tail(100000)
    if not far:
        # mongod's rollback id: moved by the rollback, kept across a restart
        check(rbid(p) == rb0 + 1, "replSetGetRBID moved by one rollback: %d -> %d" % (rb0, rbid(p)))
    if ddl:
        check("copies the data again" in log and "Initial sync done" in log, "a rollback of DDL resyncs")
        with p.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            names = c.rb.list_collection_names()
            check("lostcoll" not in names, "the rolled-back create is gone: %r" % names)
            check("lost_index" not in [i["name"] for i in c.rb[coll].list_indexes()], "the rolled-back index is gone")
    else:
        check("Rollback summary" in log, "the rollback is logged")
    if far:
        check("oplog catch-up" in log, "caught up from the leader's oplog after the rollback")
    print("round %d (%s): rolled back on %s, files %s" % (rnd, "kill -9" if kill else "pause",
                                                         p.host, [os.path.basename(f) for f in files]))
    return cl.wait_primary(10)


def main():
    t0 = time.time()
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            try:
                c.admin.command("replSetGetRBID")
                check(False, "replSetGetRBID before initiation")
            except OperationFailure as e:
                check(e.code == 94, "replSetGetRBID before initiation: 94 NotYetInitialized, got %r" % e.code)
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(20)
        p = one_round(cl, p, 1, kill=True, retry_on_old=True)
        p = one_round(cl, p, 2, kill=False)
        p = one_round(cl, p, 3, kill=True, ddl=True)
        p = one_round(cl, p, 4, kill=True, far=True)
    report("raft_rollback", t0)


if __name__ == "__main__":
    main()
