"""raft_join_minvalid.py -- a member that starts without the set's history
serves no read before it holds it (issue 24; src/repl/raft_min_valid.h).

Two members on 127.0.0.1 take N documents (w: "majority"), short of the Raft
log's compaction, so a member joining later replays the log from its first
entry (no copy runs).  A third member is added with replSetReconfig while a
poller asks it directly, again and again, for hello, its state and a count
with readPreference secondary.  Until it has applied the set's log through
its minValid (the primary's last Raft log point at the hand-over) it must be
STARTUP2: `secondary: false` in hello, reads refused with 13436; once
SECONDARY every count must be N.  Then its data folder is wiped, M more
documents written, and it is started again: the primary's rejoin thread hands
it the configuration and the same holds with N + M; wiped again, its applier
held by mongod's rsSyncApplyStop fail point, killed (kill -9) while STARTUP2
and started again, it is STARTUP2 again (its minValid is stored) until it
applied through it.
Before, the member was SECONDARY about 30 ms after its Raft started and
counted part of the documents.

usage: raft_join_minvalid.py path/to/tamgad
"""
import os
import shutil
import sys
import threading
import time

from pymongo import MongoClient, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, report, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
N = 4000    # well below the 8192 entries of a snapshot: the log is not compacted
M = 2000


class Poller(threading.Thread):
    """Asks the member hello, replSetGetStatus and a secondary count of
    mv.docs until stopped; keeps (state, hello secondary, count or code)."""

    def __init__(self, m):
        super().__init__(daemon=True)
        self.m, self.seen, self.stopping = m, [], False

    def run(self):
        while not self.stopping:
            try:
                with MongoClient(self.m.host, directConnection=True, readPreference="secondary",
                                 serverSelectionTimeoutMS=300, connectTimeoutMS=300) as c:
                    while not self.stopping:
                        h = c.admin.command("hello")
                        try:
                            st = c.admin.command("replSetGetStatus")["myState"]
                        except PyMongoError as e:
                            st = "err %s" % getattr(e, "code", None)
                        try:
                            n = c.mv.docs.count_documents({})
                        except PyMongoError as e:
                            # PyMongo 3.11 raises NotMasterError without its code
                            det = getattr(e, "details", None) or {}
                            n = "err %s" % (getattr(e, "code", None) or det.get("code") or str(e)[:60])
                        self.seen.append((st, h.get("secondary"), n))
                        time.sleep(0.01)
            except PyMongoError:
                time.sleep(0.05)

    def stop(self):
        self.stopping = True
        self.join(10)


def judge(seen, want, what, need_held=True):
    """A sample is hello, then replSetGetStatus, then the count, not at one
    instant; the member only goes STARTUP2 -> SECONDARY.  So: a sample whose
    state is STARTUP2 said secondary: false before it; every count that
    answered holds the want documents (whatever the state said); while
    STARTUP2 reads are refused with 13436."""
    held = [s for s in seen if s[0] == 5]
    counts = [s for s in seen if isinstance(s[2], int)]
    check(held or not need_held, "%s: STARTUP2 seen while it replays (samples: %d, first %r)" % (what, len(seen), seen[:5]))
    check(all(s[1] is False for s in held), "%s: STARTUP2 says secondary: false: %r" % (what, [s for s in held if s[1]][:5]))
    check(not need_held or any(s[2] == "err 13436" for s in held),
          "%s: reads refused with 13436 while STARTUP2: %r" % (what, held[:5]))
    check(counts and all(s[2] == want for s in counts),
          "%s: every secondary read holds the %d majority-committed documents: %r" %
          (what, want, [s for s in counts if s[2] != want][:5]))
    check(all(s[2] == "err 13436" for s in seen if not isinstance(s[2], int) and s[0] in (2, 5)),
          "%s: a refused read says 13436: %r" % (what, [s for s in seen if not isinstance(s[2], int)][:5]))


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        two, new = cl.members[:2], cl.members[2]
        cfg = {"_id": cl.set_name, "settings": {"electionTimeoutMillis": 4000},
               "members": [{"_id": i, "host": m.host} for i, m in enumerate(two)]}
        with two[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30, among=two)
        with p.client() as c:
            # the hand-over's minValid fields: both or neither, non-negative, not with term
            for bad in ({"minValidIndex": 5}, {"minValidTerm": 2}, {"minValidIndex": -1, "minValidTerm": 2},
                        {"minValidIndex": 5, "minValidTerm": 2, "term": 2}):
                try:
                    c.admin.command(dict({"_tamgaReplSetJoin": {}}, **bad))
                    check(False, "_tamgaReplSetJoin %r must fail" % bad)
                except PyMongoError as e:
                    check(getattr(e, "code", None) == 2, "_tamgaReplSetJoin %r: 2 BadValue: %r" % (bad, e))
            docs = c.mv.get_collection("docs", write_concern=WriteConcern(w="majority"))
            for i in range(0, N, 500):
                docs.insert_many([{"_id": j, "pad": "x" * 100} for j in range(i, i + 500)])
            conf = c.admin.command("replSetGetConfig")["config"]
            conf = dict(conf, version=conf["version"] + 1, members=conf["members"] + [{"_id": 2, "host": new.host}])
            poll = Poller(new)
            poll.start()
            c.admin.command("replSetReconfig", conf, maxTimeMS=60000)
        wait_state(new, [2], 90)
        time.sleep(0.3)
        poll.stop()
        judge(poll.seen, N, "added")
        with open(new.log, "rb") as f:
            log = f.read()
        check(b'"id":5000322' in log and b'"id":5000321' in log, "the member logged its minValid and reaching it")
        check(b'"id":21164' not in log, "no copy ran: the log was replayed from its first entry")
        deadline = time.time() + 15   # the primary learns it from a heartbeat (every 2 s)
        with p.client() as c:
            while True:
                st = c.admin.command("replSetGetStatus")
                shown = [x["stateStr"] for x in st["members"] if x["name"] == new.host]
                if shown == ["SECONDARY"] or time.time() > deadline:
                    break
                time.sleep(0.2)
        check(shown == ["SECONDARY"], "rs.status() on the primary shows it SECONDARY at last: %r" % shown)

        # wiped: the rejoin thread's hand-over, then a kill -9 while STARTUP2
        new.kill9()
        shutil.rmtree(new.dbpath)
        with p.client() as c:
            docs = c.mv.get_collection("docs", write_concern=WriteConcern(w="majority"))
            for i in range(N, N + M, 500):
                docs.insert_many([{"_id": j, "pad": "y" * 100} for j in range(i, i + 500)])
        poll = Poller(new)
        poll.start()
        new.start()
        wait_state(new, [2], 90)
        time.sleep(0.3)
        poll.stop()
        judge(poll.seen, N + M, "wiped")
        with open(new.log, "rb") as f:
            log = f.read()
        check(log.count(b'"id":5000321') >= 2, "the wiped member reached its minValid again")
        # a restart before its minValid: wiped again, its applier held
        # (mongod's rsSyncApplyStop fail point) once it has the
        # configuration, killed while STARTUP2, started again: STARTUP2
        # from the stored minValid until it applied through it
        new.kill9()
        shutil.rmtree(new.dbpath)
        new.start()
        with new.client() as c:
            c.admin.command("configureFailPoint", "rsSyncApplyStop", mode="alwaysOn")
        wait_state(new, [5], 30)
        mv = os.path.join(new.dbpath, "raft", "tamga-min-valid")
        deadline = time.time() + 30
        while time.time() < deadline and not os.path.exists(mv):
            time.sleep(0.05)
        time.sleep(1)   # the log arrives; nothing is applied
        with new.client(readPreference="secondary") as c:
            h = c.admin.command("hello")
            check(h.get("secondary") is False and c.admin.command("replSetGetStatus")["myState"] == 5,
                  "held: STARTUP2, hello secondary: false")
            try:
                c.mv.docs.count_documents({})
                check(False, "held: a secondary read must be refused")
            except PyMongoError as e:
                det = getattr(e, "details", None) or {}
                check((getattr(e, "code", None) or det.get("code")) == 13436, "held: 13436: %r" % e)
        with open(mv) as f:
            words = f.read().split()
        check(len(words) == 2 and int(words[0]) > N, "the minValid stored: %r" % words)
        new.kill9()
        poll = Poller(new)
        poll.start()
        new.start()
        # held again as soon as it listens: STARTUP2 with part of the data
        # (without the stored minValid: SECONDARY with part of it)
        with new.client(readPreference="secondary") as c:
            c.admin.command("configureFailPoint", "rsSyncApplyStop", mode="alwaysOn")
            time.sleep(0.5)
            st = c.admin.command("replSetGetStatus")["myState"]
            try:
                n = c.mv.docs.count_documents({})
            except PyMongoError as e:
                det = getattr(e, "details", None) or {}
                n = getattr(e, "code", None) or det.get("code")
            if st == 2:
                print("raft_join_minvalid: the restarted member applied through its minValid before it was held")
            check((st, n) in ((5, 13436), (2, N + M)),
                  "restarted before its minValid: STARTUP2, reads refused (or SECONDARY with every document): %r" %
                  ((st, n),))
            c.admin.command("configureFailPoint", "rsSyncApplyStop", mode="off")
        wait_state(new, [2], 90)
        time.sleep(0.3)
        poll.stop()
        check(poll.seen and poll.seen[0][0] != 2, "restarted before its minValid: not SECONDARY at first: %r" %
              poll.seen[:3])
        judge(poll.seen, N + M, "restarted", need_held=False)
        check(not os.path.exists(mv), "the minValid file removed once reached")
    report("raft_join_minvalid", t0)


if __name__ == "__main__":
    main()
