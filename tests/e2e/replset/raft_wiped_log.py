"""raft_wiped_log.py -- the empty-log hazard of a wiped voter (issue 24,
src/repl/raft_vote_floor.h's index part), on a set of three tamgad members
on 127.0.0.1.

A (primary), B, C.  C takes A's Raft messages without their log entries (the
dropRaftMessagesFrom fail point with stripEntries: C still answers A, as a
follower that cannot store would, so A keeps its quorum), so a write W with
w: "majority" is acknowledged by A and B alone and C lacks it.  B is killed
(-9), its data folder removed, and it is started again taking A's messages
the same way, so that it cannot copy W back (the slow copy of a large data
set, in which a wiped member answers its leader long before it holds what
it held); A hands it the configuration (over the member channel, not Raft)
with A's term and last Raft log index.  Then A is killed (-9).  Without the
floor's index part, C stands past B's term floor and B, whose log is the
bootstrap entry alone, grants its vote: C is primary without W, an
acknowledged majority write lost.  With it, B refuses every real vote while
its log is short of the index (a log line; electionParticipantMetrics shows
the refusal as mongod shows a refused vote), so no primary is elected while
C stands again and again.  The fail points are lifted and A started again:
A is elected, B's log reaches the index (a log line: it votes again), W is
on the primary and every member holds the same data.

usage: raft_wiped_log.py path/to/tamgad
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
ELECTION_MS = 1000


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


def wait_log(m, log_id, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        hits = log_entries(m, log_id)
        if hits:
            return hits
        time.sleep(0.1)
    return []


def strip_from(m, hosts):
    """m takes the Raft messages from hosts without their log entries (none:
    the fail point off): it answers the leader, so the leader keeps its
    quorum, but stores none of its entries."""
    with m.client() as c:
        if hosts:
            c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="alwaysOn",
                            data={"hosts": hosts, "stripEntries": True})
        else:
            c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="off")


def primaries(members):
    out = []
    for m in members:
        try:
            with m.client(serverSelectionTimeoutMS=500) as c:
                if c.admin.command("hello").get("isWritablePrimary"):
                    out.append(m)
        except PyMongoError:
            pass
    return out


def main():
    t0 = time.time()
    with Cluster(TAMGAD, 3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=ELECTION_MS))
        a = cl.wait_primary(20)
        b, c_ = [m for m in cl.members if m is not a]
        with a.client() as c:
            db = c.get_database("wl", write_concern=WriteConcern(w=3, wtimeout=20000))
            db.c.insert_many([{"_id": i} for i in range(20)])

        # the hand-over's raftIndex: only with a term, never negative (2)
        with c_.client() as c:
            cfg = c.admin.command("replSetGetConfig")["config"]
            for extra in ({"raftIndex": 5}, {"term": 1, "raftIndex": -1}):
                try:
                    c.admin.command(dict([("_tamgaReplSetJoin", cfg), ("dryRun", True)] + list(extra.items())))
                    code = None
                except OperationFailure as e:
                    code = e.code
                check(code == 2, "_tamgaReplSetJoin %r: BadValue, got %r" % (extra, code))

        # W reaches A and B only (C answers A's heartbeats: A keeps its
        # quorum while B is down)
        strip_from(c_, [a.host])
        with a.client() as c:
            db = c.get_database("wl", write_concern=WriteConcern(w="majority", wtimeout=20000))
            db.c.insert_one({"_id": "W"})
        with c_.client() as c:
            check(c.wl.c.find_one({"_id": "W"}) is None, "C lacks W")

        # B wiped, and kept from copying W back; the hand-over still reaches it
        early = False
        for _ in range(3):
            b.kill9()
            shutil.rmtree(b.dbpath)
            b.start()
            strip_from(b, [a.host])
            early = bool(log_entries(b, 5000292))
            if not early:
                break   # the fail point is on before the hand-over (else: again)
        check(not early, "B's fail point set before the hand-over")
        floors = wait_log(b, 5000292, 30)
        check(floors, "A handed B the configuration")
        fl = floors[-1]["attr"]
        # (A's line is written once B's answer arrives)
        deadline = time.time() + 15
        handed = []
        while not handed and time.time() < deadline:
            handed = [e for e in log_entries(a, 5000323) if e.get("attr", {}).get("member") == b.host]
            time.sleep(0.1)
        check(handed and handed[-1]["attr"]["raftIndex"] == fl["voteFloorIndex"] and
              fl["voteFloor"] == handed[-1]["attr"]["term"] + 1,
              "B's floor is A's term + 1 and A's last Raft index: %r / %r" % (fl, handed))
        check(fl["voteFloorIndex"] > 1, "the index part is past B's bootstrap entry: %r" % fl)
        with a.client() as c:
            t_hand = c.admin.command("replSetGetStatus")["term"]

        # A dies before B holds W: no primary (C lacks W, B's log is short)
        a.kill9()
        time.sleep(8 * ELECTION_MS / 1000.0)
        got = primaries([b, c_])
        with c_.client() as c:
            t_c = c.admin.command("replSetGetStatus")["term"]
        refused = log_entries(b, 5000297)
        print("hand-over term %d, floor %r; after 8 election timeouts: primaries %r, C's term %d, B refused %r" % (
            t_hand, fl, [m.host for m in got], t_c, [(e["attr"]["term"], e["attr"]["candidate"]) for e in refused]))
        check(not got, "no primary while B's log lacks W (C lacks it): %r" % [m.host for m in got])
        check(t_c > fl["voteFloor"], "C stood past B's term floor (term %d)" % t_c)
        check(refused and refused[-1]["attr"]["term"] > fl["voteFloor"],
              "B refused a vote past its term floor for its short log: %r" % refused)
        with b.client() as c:
            epm = c.admin.command("replSetGetStatus").get("electionParticipantMetrics", {})
        check(epm.get("votedForCandidate") is False and "does not yet hold" in epm.get("voteReason", "") and
              epm.get("electionTerm", 0) > fl["voteFloor"],
              "B's electionParticipantMetrics show the refused vote: %r" % epm)
        check(not log_entries(b, 5000293), "B's index part still holds")

        # the network heals and A comes back: A is elected, B copies W
        strip_from(b, [])
        strip_from(c_, [])
        a.start()
        p = cl.wait_primary(40)
        check(p is a, "the member that holds W is elected: %s" % p.host)
        with p.client() as c:
            check(c.wl.c.find_one({"_id": "W"}) is not None, "W is on the new primary")
            db = c.get_database("wl", write_concern=WriteConcern(w=3, wtimeout=30000))
            db.c.insert_one({"_id": "after"})
        check(wait_log(b, 5000293, 30), "B's log reached the index: it votes again")
        with open(os.path.join(b.dbpath, "raft", "tamga-vote-floor")) as f:
            stored = f.read().split()
        check(stored == [str(fl["voteFloor"]), "0"], "the index part cleared in the file: %r" % stored)
        check(wait_state(b, [2], 60) == 2, "B is SECONDARY")
        wait_equal(cl.members, "wl", "c", 30)
        with b.client() as c:
            check(c.wl.c.find_one({"_id": "W"}) is not None, "W is on B")
    report("raft_wiped_log", t0)


if __name__ == "__main__":
    main()
