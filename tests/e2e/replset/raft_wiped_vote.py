"""raft_wiped_vote.py -- a voting member that lost its disk (issue 24,
src/repl/raft_vote_floor.h), on a set of three tamgad members on 127.0.0.1.

A secondary W is killed (-9), its data folder removed and it is started
again under the same host: before the primary hands it the configuration it
answers rs.status() with 94 NotYetInitialized (mongod's STARTUP) and runs no
Raft server, so it answers no vote request; the primary's hand-over carries
its term T and W stores the vote floor T + 1 before its Raft server starts
(a line and the file in <dbpath>/raft), then copies the set's log and is
SECONDARY.  A restart of W keeps the floor.  Once W's Raft log reached the
primary's last index at the hand-over (the floor's index part, a line; the
empty-log hazard: e2e.replset_wiped_vote_log) the primary is killed
(-9): the first election after it is of term T + 1, which W neither votes
in (a refusal line) nor stands in (a line) -- a vote in T + 1 could be one
it gave before the wipe -- so the new primary is of a term past the floor,
elected with W's vote or W itself; W later wins an election (the others
frozen, a stepdown) and takes majority writes, and every member holds the
same data.  Last, Y is wiped under W: a stepdown of W right after the
hand-over goes to the old primary, not to Y (whose candidacy would not pass
its floor), and Y grants no vote in that election.

usage: raft_wiped_vote.py path/to/tamgad
"""
import json
import os
import shutil
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, report, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]


def log_entries(m, log_id):
    """The member's log lines of id log_id, parsed."""
    out = []
    for line in m.tail(200000).splitlines():
        if ('"id":%d' % log_id) not in line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def term_of(m):
    with m.client() as c:
        return c.admin.command("replSetGetStatus")["term"]


def wait_log(m, log_id, pred=lambda e: True, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        hits = [e for e in log_entries(m, log_id) if pred(e)]
        if hits:
            return hits
        time.sleep(0.2)
    return []


def main():
    t0 = time.time()
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(20)
        with p.client() as c:
            db = c.get_database("wv", write_concern=WriteConcern(w="majority"))
            db.c.insert_many([{"_id": i, "v": "before"} for i in range(50)])
        w, y = [m for m in cl.members if m is not p]

        # W loses its disk
        w.kill9()
        shutil.rmtree(w.dbpath)
        w.start()
        # nothing stored yet: mongod's STARTUP answer (until the primary's
        # rejoin thread, every 2 s, reaches it)
        try:
            with w.client() as c:
                c.admin.command("replSetGetStatus")
            early = None
        except OperationFailure as e:
            early = e.code
        check(early in (94, None), "a wiped member before the hand-over: 94 NotYetInitialized, got %r" % early)
        check(wait_state(w, [2], 60) == 2, "the wiped member is SECONDARY again")
        handed = [e for e in log_entries(p, 5000323) if e.get("attr", {}).get("member") == w.host]
        check(handed, "the primary logged the hand-over to %s" % w.host)
        t_hand = handed[-1]["attr"]["term"]
        floors = log_entries(w, 5000292)
        check(floors and floors[-1]["attr"]["voteFloor"] == t_hand + 1,
              "the wiped member's vote floor is the primary's term + 1: %r (term %r)" % (floors, t_hand))
        floor = t_hand + 1
        with open(os.path.join(w.dbpath, "raft", "tamga-vote-floor")) as f:
            check(int(f.read().split()[0]) == floor, "the floor is stored in the Raft folder")
        check(term_of(p) == t_hand, "no election meanwhile (term %r, hand-over %r)" % (term_of(p), t_hand))

        # a restart within the window keeps it
        check(w.stop() == 0, "W stops cleanly")
        w.start()
        check(wait_state(w, [2], 60) == 2, "W is SECONDARY after its restart")
        check(len(log_entries(w, 5000292)) == 2 and log_entries(w, 5000292)[-1]["attr"]["voteFloor"] == floor,
              "the floor survives the restart")

        # W votes only once its Raft log holds what it held before the wipe
        # (the floor's index part, reached through the primary's log: else
        # a set of three that loses the primary elects no one)
        check(wait_log(w, 5000293, lambda e: True, 30), "W's Raft log reached the hand-over's index")
        with open(os.path.join(w.dbpath, "raft", "tamga-vote-floor")) as f:
            check(f.read().split() == [str(floor), "0"], "the index part is cleared, the floor kept")

        # the primary dies: the election of term floor (= T + 1) goes without
        # W's vote or candidacy
        p.kill9()
        np = cl.wait_primary(30, among=[w, y])
        t_new = term_of(np)
        check(t_new > floor, "the new primary's term %r is past the floor %r" % (t_new, floor))
        refused = [e for e in log_entries(w, 5000290) + log_entries(w, 5000291) if e["attr"]["term"] == floor]
        check(refused, "W refused the vote or the candidacy of term %d: %r" % (floor, log_entries(w, 5000290) +
                                                                              log_entries(w, 5000291)))
        check(all(e["attr"]["term"] <= floor for e in log_entries(w, 5000290) + log_entries(w, 5000291)),
              "nothing refused past the floor")
        print("hand-over in term %d, floor %d; new primary %s (%s) in term %d; refused: %r" % (
            t_hand, floor, np.host, "W" if np is w else "Y", t_new,
            [(e["id"], e["attr"]["term"]) for e in refused]))
        if np is y:
            with w.client() as c:
                epm = c.admin.command("replSetGetStatus").get("electionParticipantMetrics", {})
            check(epm.get("votedForCandidate") is True and epm.get("electionTerm") == t_new,
                  "W voted for the new primary in term %r: %r" % (t_new, epm))
        with np.client() as c:
            db = c.get_database("wv", write_concern=WriteConcern(w="majority", wtimeout=20000))
            db.c.insert_one({"_id": "after-failover", "v": t_new})

        # W elected: the others frozen, the primary (if not W) steps down
        p.start()
        check(wait_state(p, [2], 60) == 2, "the old primary is SECONDARY again")
        if np is not w:
            with p.client() as c:
                c.admin.command("replSetFreeze", 60)
            try:
                with np.client() as c:
                    c.admin.command("replSetStepDown", 60, secondaryCatchUpPeriodSecs=10)
            except PyMongoError:
                pass   # the connection closes as the primary steps down
            check(cl.wait_primary(30) is w, "W is elected")
            with p.client() as c:
                c.admin.command("replSetFreeze", 0)
        with w.client() as c:
            st = c.admin.command("replSetGetStatus")
            check(st["myState"] == 1 and st["term"] > floor, "W primary in term %r" % st["term"])
            db = c.get_database("wv", write_concern=WriteConcern(w="majority", wtimeout=20000))
            db.c.insert_one({"_id": "w-primary", "v": st["term"]})
        wait_equal(cl.members, "wv", "c", 30)
        with w.client() as c:
            check(c.wv.c.count_documents({}) == 52, "every write is on W")

        # a stepdown right after a hand-over (no election since): the
        # transfer goes to the member that kept its disk, never to the
        # wiped one (its candidacy of the next term would not pass its
        # floor: 262), and the wiped one refuses that election's vote
        for m in (p, y):
            with m.client() as c:
                c.admin.command("replSetFreeze", 0)
        y.kill9()
        shutil.rmtree(y.dbpath)
        y.start()
        check(wait_state(y, [2], 60) == 2, "Y wiped and SECONDARY again")
        check(wait_log(y, 5000293, lambda e: True, 30), "Y's Raft log reached the hand-over's index")
        t_w = term_of(w)
        y_floor = log_entries(y, 5000292)[-1]["attr"]["voteFloor"]
        check(y_floor == t_w + 1, "Y's floor %r is W's term %r + 1" % (y_floor, t_w))
        try:
            with w.client() as c:
                c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
        except OperationFailure as e:
            check(False, "the stepdown right after the hand-over: %r" % e)
        except PyMongoError:
            pass   # the connection closes as the primary steps down
        check(cl.wait_primary(30) is p, "the stepdown went to the member that kept its disk")
        check(term_of(p) == y_floor, "elected in the wiped member's floor term")
        # (the request may not reach Y at all: the new leader's Raft
        # connection to the restarted Y may not be up yet)
        with y.client() as c:
            epm = c.admin.command("replSetGetStatus").get("electionParticipantMetrics", {})
        check(not (epm.get("votedForCandidate") and epm.get("electionTerm") == y_floor),
              "Y granted no vote in its floor's term: %r" % epm)
        check(all(e["attr"]["term"] == y_floor for e in log_entries(y, 5000290)), "Y's refusals: its floor's term")
        check(not log_entries(y, 5000291), "Y stood in no election")
        with p.client() as c:
            db = c.get_database("wv", write_concern=WriteConcern(w=3, wtimeout=20000))
            db.c.insert_one({"_id": "after-stepdown"})
        wait_equal(cl.members, "wv", "c", 30)
    report("raft_wiped_vote", t0)


if __name__ == "__main__":
    main()
