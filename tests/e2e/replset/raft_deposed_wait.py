"""raft_deposed_wait.py -- a deposed primary must not acknowledge a
w: "majority" write (nor a linearizable read) that the set never committed
(issue 24; found by the fault-injection test jepsen_set.py).

The primary P of three tamgad members on 127.0.0.1 is paused (SIGSTOP); the
others elect a new primary, which keeps taking writes; a majority write and
a linearizable read are sent to the paused P.  When P resumes it runs them
as the primary it still believes it is, and its Raft loop reads the new
leader's log: P's entries are replaced, and the new leader's, whose
timestamps are past P's, are committed.  Before the fix P took them for the
commit of its own entries (the wait compared timestamps alone) and
acknowledged a write it then rolled back, and answered the read; and
readConcern "majority" reads on P, at the commit point, returned the write
until P's rollback removed it (in 3 rounds of 4).  Now the
wait needs an entry of its own term: the write gets writeConcernError 11602
and the read 11602, majority reads read no further than the applier's
position in the set's log, and every write acknowledged anywhere is on every
member afterwards.  A write acknowledged is looked for on the new primary
once it applied up to the write's optime (afterClusterTime: committed in the
set's log is not applied there yet, and the resumed member may lead again by
then), and on every member after healing.  Several rounds, since the pause may land before or
after P's own step-down.

usage: raft_deposed_wait.py path/to/tamgad
"""
import os
import sys
import threading
import time

from pymongo import MongoClient, ReadPreference
from pymongo.errors import PyMongoError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, coll_hash, report  # noqa: E402

TAMGAD = sys.argv[1]
ROUNDS = 4


def one_round(cl, p, rnd):
    others = [m for m in cl.members if m is not p]
    outcome = {}
    stop = threading.Event()

    def write():
        try:
            with p.client(socketTimeoutMS=60000) as c:
                with c.start_session(causal_consistency=True) as s:
                    c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=30000)).insert_one(
                        {"_id": "lost-%d" % rnd}, session=s)
                    # the write's optime: a member has it once it applied
                    # that far (afterClusterTime below)
                    outcome["optime"] = s.operation_time
            outcome["write"] = "ok"
        except PyMongoError as e:
            outcome["write"] = e

    def read():
        try:
            with p.client(socketTimeoutMS=60000) as c:
                d = c.t.get_collection("c", read_concern=ReadConcern("linearizable")).find_one(
                    {"_id": "lost-%d" % rnd}, max_time_ms=30000)
            outcome["read"] = "ok: %s" % ("found" if d is not None else "none")
        except PyMongoError as e:
            outcome["read"] = e

    def load(q):
        # the new primary keeps writing: its entries' timestamps pass the
        # deposed primary's when it resumes
        i = 0
        with q.client() as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority"))
            while not stop.is_set():
                try:
                    coll.insert_one({"_id": "new-%d-%d" % (rnd, i)})
                    i += 1
                except PyMongoError:
                    time.sleep(0.05)

    p.pause()
    q = cl.wait_primary(30, among=others)
    loader = threading.Thread(target=load, args=(q,))
    loader.start()
    time.sleep(1.2)
    # sent to the paused member: it runs them when it resumes, before it
    # learns it was deposed
    seen = []
    healed = threading.Event()

    def majority_reads():
        # readConcern majority on P from before its resume until the set
        # has healed (P rolled back or kept the write, every member equal):
        # never the write the set did not commit.  Reads after that prove
        # nothing more; a fixed window of 8 s made every round last 8 s
        end = time.time() + 150
        with p.client(socketTimeoutMS=60000, read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
            coll = c.t.get_collection("c", read_concern=ReadConcern("majority"))
            while time.time() < end and not healed.is_set():
                try:
                    if coll.find_one({"_id": "lost-%d" % rnd}) is not None:
                        seen.append(time.time())
                except PyMongoError:
                    time.sleep(0.01)

    th = [threading.Thread(target=write), threading.Thread(target=read),
          threading.Thread(target=majority_reads, daemon=True)]
    th[0].start()
    time.sleep(0.05)         # the read after the write: it sees the write's document
    th[1].start()
    th[2].start()
    time.sleep(0.3)
    p.resume()
    for t in th[:2]:
        t.join(90)
    stop.set()
    loader.join(30)
    check(not any(t.is_alive() for t in th[:2]), "round %d: the write and the read ended" % rnd)
    # an acknowledged majority write is in the set's log, but the new
    # primary need not have applied it yet -- nor still be primary: the
    # resumed member may have been elected again and the write be one of
    # that later term, which q then receives as a secondary.  Read q once it
    # applied up to the write's optime (afterClusterTime), never before
    with q.client() as c:
        if outcome["write"] == "ok":
            d = c.t.command("find", "c", filter={"_id": "lost-%d" % rnd},
                            readConcern={"level": "local", "afterClusterTime": outcome["optime"]},
                            maxTimeMS=120000)
            present = len(d["cursor"]["firstBatch"]) == 1
        else:
            present = c.t.c.find_one({"_id": "lost-%d" % rnd}) is not None
        q_primary = c.admin.command("hello").get("isWritablePrimary")
    print("round %d: write %r, read %r, the write's document %s on the new primary (%s)" % (
        rnd, outcome["write"], outcome["read"], "is" if present else "is not",
        "still primary" if q_primary else "no longer primary"))
    if outcome["write"] == "ok":
        check(present, "round %d: an acknowledged majority write was rolled back" % rnd)
    else:
        check(getattr(outcome["write"], "code", None) in (11602, 64, 10107, 13435, None),
              "round %d: the write's error %r" % (rnd, outcome["write"]))
    if outcome["read"] == "ok: found":
        # the read saw P's write: linearizable only if the write stayed
        check(present, "round %d: a linearizable read saw a write the set never committed" % rnd)
    # the set heals: every member equal (the resumed member's rollback and
    # catch-up run under ASan on a loaded machine: two minutes at most)
    deadline = time.time() + 120
    hs = []
    while True:
        try:
            hs = []
            for m in cl.members:
                with m.client() as c:
                    hs.append(coll_hash(c, "t", "c"))
            if len(set(hs)) == 1:
                break
        except PyMongoError as e:
            hs.append("unreadable: %s" % e)
        check(time.time() < deadline, "round %d: members equal after healing: %r" % (rnd, hs))
        time.sleep(0.3)
    check(True, "round %d: members equal" % rnd)
    healed.set()
    th[2].join(90)
    check(not th[2].is_alive(), "round %d: the majority reads ended" % rnd)
    check(not seen or present, "round %d: majority reads on the deposed primary returned a write the set "
          "never committed (%d times)" % (rnd, len(seen)))
    if outcome["write"] == "ok":
        # and every member holds the acknowledged write
        for m in cl.members:
            with m.client() as c:
                check(c.t.c.find_one({"_id": "lost-%d" % rnd}) is not None,
                      "round %d: the acknowledged majority write is on %s" % (rnd, m.host))
    return cl.wait_primary(30)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, 3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(30)
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000) as c:
            c.t.get_collection("c", write_concern=WriteConcern("majority")).insert_one({"_id": "first"})
        for rnd in range(ROUNDS):
            p = one_round(cl, p, rnd)
    report("raft_deposed_wait", t0)


if __name__ == "__main__":
    main()
