"""raft_takeover.py -- mongod's priority takeover on a replica set of three
tamgad members on 127.0.0.1 (issue 24), through PyMongo and mongosh:
  - initiated with member 2 at priority 2 (the others 1): whoever Raft
    elects first, member 2 is primary soon after and stays so;
  - replSetStepDown of member 2 for 6 s: another member takes over, member 2
    does not take the primary back within its stepdown period (mongod), and
    does once the period is over (about one election timeout later, rank 0);
    a PyMongo writer with retryWrites loses no acknowledged write meanwhile;
  - rs.reconfig() in mongosh giving member 0 priority 5: member 0 takes over
    (rank 0, an election timeout after it sees the lower-priority primary),
    and rs.status() in mongosh names it PRIMARY;
  - serverStatus().electionMetrics and rs.status().electionCandidateMetrics
    name each of those elections as mongod does: the first by an election
    timeout, the stepdown's handoff as a step-up (stepUpCmd,
    "stepUpRequestSkipDryRun"), the takeovers as priorityTakeover; only the
    primary shows electionCandidateMetrics; electionMetrics has mongod's
    catch-up fields, all 0 (no catch-up runs on Raft);
  - rs.status().electionParticipantMetrics on the member that voted in the
    stepdown's election (PyMongo: the vote for the new primary in its term,
    mongod's types) and, through mongosh, on the last primary.

usage: raft_takeover.py path/to/tamgad [path/to/mongosh]
"""
import datetime
import json
import os
import subprocess
import sys
import threading
import time

from bson import Int64, Timestamp
from pymongo import MongoClient
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
ET = 2000   # settings.electionTimeoutMillis
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def primary_of(cl):
    for m in cl.members:
        try:
            with m.client(serverSelectionTimeoutMS=500) as c:
                if c.admin.command("hello").get("isWritablePrimary"):
                    return m
        except PyMongoError:
            pass
    return None


def wait_for_primary(cl, m, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if primary_of(cl) is m:
            return time.time()
        time.sleep(0.1)
    return None


def metrics(m):
    with m.client() as c:
        return c.admin.command("serverStatus")["electionMetrics"]


def candidate(m):
    """(rs.status().electionCandidateMetrics or None, term)"""
    with m.client() as c:
        st = c.admin.command("replSetGetStatus")
    return st.get("electionCandidateMetrics"), st["term"]


def check_candidate(m, reasons, priority, what):
    ecm, term = candidate(m)
    check(ecm is not None, "%s: electionCandidateMetrics on the primary" % what)
    check(ecm["lastElectionReason"] in reasons, "%s: lastElectionReason %r" % (what, ecm))
    check(ecm["electionTerm"] == term and ecm["numVotesNeeded"] == 2 and ecm["priorityAtElection"] == priority
          and ecm["electionTimeoutMillis"] == ET, "%s: %r (term %d)" % (what, ecm, term))
    check(ecm["lastCommittedOpTimeAtElection"]["ts"] <= ecm["lastSeenOpTimeAtElection"]["ts"],
          "%s: committed <= seen at the election: %r" % (what, ecm))
    return ecm["lastElectionReason"]


def check_participant(cl, p, old):
    """The member that was neither the old primary nor the new one voted
    for the new one in the new primary's term (libraft's answer, read as it
    left): mongod's electionParticipantMetrics with mongod's types."""
    voter = [m for m in cl.members if m is not p and m is not old][0]
    with p.client() as c:
        term = c.admin.command("replSetGetStatus")["term"]
    with voter.client() as c:
        st = c.admin.command("replSetGetStatus")
    epm = st.get("electionParticipantMetrics")
    check(epm is not None, "electionParticipantMetrics on the member that voted: %r" % sorted(st))
    check(list(epm.keys()) == ["votedForCandidate", "electionTerm", "lastVoteDate", "electionCandidateMemberId",
                               "voteReason", "lastWrittenOpTimeAtElection", "maxWrittenOpTimeInSet",
                               "lastAppliedOpTimeAtElection", "maxAppliedOpTimeInSet", "priorityAtElection"],
          "electionParticipantMetrics' fields in mongod's order: %r" % epm)
    check(epm["votedForCandidate"] is True and epm["voteReason"] == "", "a vote granted: %r" % epm)
    check(isinstance(epm["electionTerm"], Int64) and epm["electionTerm"] == term,
          "electionTerm the new primary's term %d: %r" % (term, epm))
    check(type(epm["electionCandidateMemberId"]) is int and epm["electionCandidateMemberId"] == cl.members.index(p),
          "electionCandidateMemberId the new primary's _id: %r" % epm)
    check(isinstance(epm["lastVoteDate"], datetime.datetime) and isinstance(epm["priorityAtElection"], float)
          and epm["priorityAtElection"] == 1.0, "lastVoteDate a date, priorityAtElection 1.0: %r" % epm)
    for k in ("lastWrittenOpTimeAtElection", "maxWrittenOpTimeInSet", "lastAppliedOpTimeAtElection",
              "maxAppliedOpTimeInSet"):
        check(isinstance(epm[k]["ts"], Timestamp) and isinstance(epm[k]["t"], Int64), "%s an optime: %r" % (k, epm))
    check(epm["lastAppliedOpTimeAtElection"]["ts"] <= epm["maxAppliedOpTimeInSet"]["ts"],
          "applied <= max applied in the set: %r" % epm)
    check("electionCandidateMetrics" not in st, "the voter, a secondary, shows no candidate metrics")


def main():
    with Cluster(TAMGAD) as cl:
        cfg = cl.config(election_ms=ET)
        cfg["members"][2]["priority"] = 2
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        m0, m1, m2 = cl.members
        cl.wait_primary()
        check(wait_for_primary(cl, m2, 20) is not None, "the priority-2 member becomes primary")
        time.sleep(ET / 1000 * 1.5)
        check(primary_of(cl) is m2, "and stays primary")
        # the first election ran by an election timeout; member 2 won by it or by a takeover
        ems = [metrics(m) for m in cl.members]
        check(sum(e["electionTimeout"]["successful"] for e in ems) >= 1, "an election timeout won: %r" % ems)
        for e in ems:
            for k in ("stepUpCmd", "priorityTakeover", "electionTimeout", "freezeTimeout"):
                check(0 <= e[k]["successful"] <= e[k]["called"], "successful <= called: %r" % e)
            keys = list(e.keys())
            check(keys == ["stepUpCmd", "priorityTakeover", "catchUpTakeover", "electionTimeout", "freezeTimeout",
                           "numStepDownsCausedByHigherTerm", "numCatchUps", "numCatchUpsSucceeded",
                           "numCatchUpsAlreadyCaughtUp", "numCatchUpsSkipped", "numCatchUpsTimedOut",
                           "numCatchUpsFailedWithError", "numCatchUpsFailedWithNewTerm",
                           "numCatchUpsFailedWithReplSetAbortPrimaryCatchUpCmd", "averageCatchUpOps"],
                  "electionMetrics' fields in mongod's order: %r" % keys)
            check(e["catchUpTakeover"] == {"called": 0, "successful": 0} and
                  all(isinstance(e[k], Int64) and e[k] == 0 for k in keys[6:14]) and
                  isinstance(e["averageCatchUpOps"], float) and e["averageCatchUpOps"] == 0,
                  "catch-up counters 0 (none run on Raft): %r" % e)
        r = check_candidate(m2, ("electionTimeout", "priorityTakeover"), 2, "member 2 first")
        if r == "priorityTakeover":
            check(ems[2]["priorityTakeover"]["successful"] >= 1, "member 2's takeover counted: %r" % ems[2])
        check(candidate(m0)[0] is None and candidate(m1)[0] is None, "no electionCandidateMetrics on secondaries")

        acked, stop = [], threading.Event()

        def writer():
            with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, w="majority", retryWrites=True) as c:
                i = 0
                while not stop.is_set():
                    try:
                        c.t.w.insert_one({"_id": i})
                        acked.append(i)
                    except PyMongoError:
                        pass
                    i += 1
                    time.sleep(0.005)

        t = threading.Thread(target=writer)
        t.start()
        try:
            with m2.client() as c:
                c.admin.command("replSetStepDown", 6, secondaryCatchUpPeriodSecs=5)
            t0 = time.time()
            p = cl.wait_primary(among=[m0, m1])
            check(p in (m0, m1), "another member takes over after the stepdown")
            # the stepdown hands the leadership over: mongod's step-up request
            check(check_candidate(p, ("stepUpRequestSkipDryRun",), 1, "after the stepdown") ==
                  "stepUpRequestSkipDryRun", "")
            check(metrics(p)["stepUpCmd"]["successful"] >= 1, "stepUpCmd counted: %r" % metrics(p))
            check_participant(cl, p, m2)
            # the stepdown period (6 s): member 2 must not take over
            while time.time() < t0 + 5:
                check(primary_of(cl) is not m2, "no takeover within the stepdown period")
                time.sleep(0.25)
            back = wait_for_primary(cl, m2, 6 + 3 * ET / 1000 + 10)
            check(back is not None, "member 2 takes the primary back after its stepdown period")
            print("takeover after the stepdown: %.1f s after the stepdown" % (back - t0))
            check(back - t0 >= 6, "not before the stepdown period ended (%.1f s)" % (back - t0))
            check_candidate(m2, ("priorityTakeover",), 2, "member 2 back")
            e2 = metrics(m2)
            check(e2["priorityTakeover"]["successful"] >= 1 and e2["numStepDownsCausedByHigherTerm"] == 0,
                  "member 2's takeover counted, its stepdown not a higher term's: %r" % e2)
            time.sleep(1)
        finally:
            stop.set()
            t.join()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000) as c:
            have = {d["_id"] for d in c.t.w.find({}, {"_id": 1})}
        check(len(acked) > 50, "the writer wrote (%d)" % len(acked))
        check(set(acked) <= have, "no acknowledged write lost: %r" % sorted(set(acked) - have)[:10])

        # mongosh: rs.reconfig gives member 0 the highest priority
        if MONGOSH:
            script = ("var c = rs.conf(); c.members[0].priority = 5; rs.reconfig(c);"
                      "print(JSON.stringify({ok: 1}))")
            out = subprocess.run([MONGOSH, cl.uri(), "--quiet", "--norc", "--eval", script],
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "mongosh rs.reconfig ran: %s %s" % (out.stdout[-500:], out.stderr[-800:]))
        else:
            with m2.client() as c:
                conf = c.admin.command("replSetGetConfig")["config"]
                conf["version"] += 1
                conf["members"][0]["priority"] = 5
                c.admin.command("replSetReconfig", conf)
        t0 = time.time()
        got = wait_for_primary(cl, m0, 3 * ET / 1000 + 15)
        check(got is not None, "the member given priority 5 takes over")
        print("takeover after the reconfig: %.1f s" % (got - t0))
        if MONGOSH:
            script = ("var s = rs.status(); print(JSON.stringify(s.members.map(function (m) {"
                      "return [m.name, m.stateStr]; }).concat([['reason', s.electionCandidateMetrics ? "
                      "s.electionCandidateMetrics.lastElectionReason : null], ['called', "
                      "Number(db.serverStatus().electionMetrics.priorityTakeover.called)], ['epm', "
                      "s.electionParticipantMetrics ? [typeof s.electionParticipantMetrics.votedForCandidate, "
                      "s.electionParticipantMetrics.electionTerm instanceof Long, "
                      "s.electionParticipantMetrics.lastVoteDate instanceof Date, "
                      "typeof s.electionParticipantMetrics.voteReason, "
                      "s.electionParticipantMetrics.maxAppliedOpTimeInSet.ts instanceof Timestamp] : null]])))")
            out = subprocess.run([MONGOSH, cl.uri(), "--quiet", "--norc", "--eval", script],
                                 capture_output=True, text=True, timeout=60)
            check(out.returncode == 0, "mongosh rs.status ran: %s" % out.stderr[-500:])
            states = dict(json.loads(out.stdout.strip().splitlines()[-1]))
            check(states.get(m0.host) == "PRIMARY", "rs.status() in mongosh: %r" % states)
            # member 0 voted when member 2 took the primary back
            check(states.get("epm") == ["boolean", True, True, "string", True],
                  "mongosh: electionParticipantMetrics' types: %r" % states)
            if primary_of(cl) is m0:
                check(states.get("reason") == "priorityTakeover" and states.get("called") >= 1,
                      "mongosh: electionCandidateMetrics and electionMetrics: %r" % states)
        check_candidate(m0, ("priorityTakeover",), 5, "member 0 after the reconfig")
        time.sleep(ET / 1000 * 1.5)
        check(primary_of(cl) is m0, "member 0 stays primary")
    print("raft_takeover: %d checks passed" % checks)


if __name__ == "__main__":
    main()
