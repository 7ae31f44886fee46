"""raft_metrics.py -- serverStatus().metrics.repl's counters on a 3-member
set (issue 24), each moved by its real event and in mongod 9.0's shape
(sections in name order, counters NumberLong):
  - apply.attemptsToBecomeSecondary: a member that entered SECONDARY from
    STARTUP counts one; apply.batchSize: the entries of the applier's
    rounds (at least apply.ops, at least batches.num), moving with writes;
  - buffer.apply {count, sizeBytes}: a delayed member (secondaryDelaySecs)
    holds the entries its applier has not taken yet, and empties its queue
    once the delay passed;
  - stateTransition {lastStateTransition, totalOperationsKilled,
    totalOperationsRunning}: "stepUp" on the elected primary, "stepDown"
    on it after replSetStepDown, "stepUp" on the new one; 0 killed (Tamga
    kills no operation at a transition);
  - waiters.replication on the primary while a w: 3 write waits (one
    member paused), 0 again after its wtimeout; waiters.opTime on the
    delayed member while a read with afterClusterTime waits for it to
    apply, 0 again after.

usage: raft_metrics.py path/to/tamgad
"""
import os
import sys
import threading
import time

from bson import Int64
from pymongo import WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
DELAY = 4
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def metrics(m):
    with m.client() as c:
        return c.admin.command("serverStatus")["metrics"]["repl"]


def longs(d, path=""):
    """Every number under d is a NumberLong (bson Int64)."""
    for k, v in d.items():
        if isinstance(v, dict):
            longs(v, path + k + ".")
        elif not isinstance(v, str):
            check(type(v) is Int64, "metrics.repl.%s%s is a NumberLong: %r" % (path, k, type(v)))


def shape(m):
    mr = metrics(m)
    check(list(mr.keys()) == ["apply", "buffer", "initialSync", "reconfig", "stateTransition", "waiters"],
          "%s: metrics.repl's sections: %r" % (m.host, list(mr.keys())))
    check(list(mr["apply"].keys()) == ["attemptsToBecomeSecondary", "batchSize", "batches", "ops"],
          "apply's fields: %r" % mr["apply"])
    check(list(mr["buffer"].keys()) == ["apply"] and list(mr["buffer"]["apply"].keys()) == ["count", "sizeBytes"],
          "buffer's fields: %r" % mr["buffer"])
    check(list(mr["stateTransition"].keys()) ==
          ["lastStateTransition", "totalOperationsKilled", "totalOperationsRunning"],
          "stateTransition's fields: %r" % mr["stateTransition"])
    check(isinstance(mr["stateTransition"]["lastStateTransition"], str), "lastStateTransition is a string")
    check(list(mr["waiters"].keys()) == ["opTime", "replication"], "waiters' fields: %r" % mr["waiters"])
    longs(mr)
    return mr


def until(fn, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("not within %ss: %s" % (timeout, what))


def main():
    with Cluster(TAMGAD, n=3) as cl:
        m0, m1, d = cl.members
        cfg = cl.config(election_ms=2000)
        cfg["members"][2].update(priority=0, secondaryDelaySecs=DELAY)
        with m0.client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30, among=[m0, m1])
        s = m1 if p is m0 else m0
        wait_state(s, (2,))
        wait_state(d, (2,))
        # ---- the elected primary: a step up; the others entered SECONDARY
        mp = shape(p)
        check(mp["stateTransition"]["lastStateTransition"] == "stepUp", "primary: %r" % mp["stateTransition"])
        check(mp["stateTransition"]["totalOperationsKilled"] == 0, "nothing killed: %r" % mp["stateTransition"])
        for m in (s, d):
            mm = shape(m)
            check(mm["apply"]["attemptsToBecomeSecondary"] >= 1,
                  "%s entered SECONDARY: %r" % (m.host, mm["apply"]))
            check(mm["stateTransition"]["lastStateTransition"] in ("", "stepDown"),
                  "%s never stepped up: %r" % (m.host, mm["stateTransition"]))
        # ---- apply.batchSize moves with the secondary's applier
        before = shape(s)["apply"]
        with p.client() as c:
            coll = c.mt.get_collection("t", write_concern=WriteConcern(w=2))
            for i in range(5):
                coll.insert_many([{"b": i, "i": j} for j in range(10)])
        after = until(lambda: (lambda a: a if a["ops"] >= before["ops"] + 50 else None)(shape(s)["apply"]),
                      "the secondary applied 50 entries")
        check(after["batchSize"] - before["batchSize"] >= after["ops"] - before["ops"],
              "batchSize counts every entry of the rounds: %r -> %r" % (before, after))
        check(after["batches"]["num"] > before["batches"]["num"] and
              after["batchSize"] >= after["batches"]["num"], "rounds and sizes: %r -> %r" % (before, after))
        # ---- buffer.apply: the delayed member's queue fills, then empties
        with p.client() as c:
            coll = c.mt.get_collection("t", write_concern=WriteConcern(w=1))
            coll.insert_one({"first": 1})
            time.sleep(0.5)   # its applier takes this one and waits DELAY s on it
            for i in range(20):
                coll.insert_one({"queued": i})
        full = until(lambda: (lambda b: b if b["count"] >= 10 and b["sizeBytes"] > 0 else None)(
            shape(d)["buffer"]["apply"]), "the delayed member's queue holds the entries", timeout=DELAY)
        check(full["sizeBytes"] >= full["count"] * 20, "sizeBytes counts the entries' bytes: %r" % full)
        until(lambda: shape(d)["buffer"]["apply"]["count"] == 0, "the queue empties after the delay",
              timeout=DELAY * 4)
        # ---- waiters.opTime: a read on the delayed member after the newest write
        with p.client() as c:
            with c.start_session(causal_consistency=True) as ses:
                c.mt.t.insert_one({"late": 1}, session=ses)
                op_time, cluster_time = ses.operation_time, ses.cluster_time
        done = {}

        def late_read():
            try:
                with d.client() as c:
                    # the primary's signed $clusterTime through a session (a
                    # new client would gossip only the member's own): the
                    # member learns the time, then waits to apply it
                    with c.start_session(causal_consistency=True) as s2:
                        s2.advance_cluster_time(cluster_time)
                        s2.advance_operation_time(op_time)
                        done["r"] = list(c.mt.t.find({"late": 1}, session=s2, max_time_ms=DELAY * 5000))
            except PyMongoError as e:
                done["e"] = e

        t = threading.Thread(target=late_read)
        t.start()
        until(lambda: shape(d)["waiters"]["opTime"] >= 1 or "e" in done,
              "the read waits on the delayed member", timeout=DELAY)
        check("e" not in done, "the late read: %r" % done)
        t.join(DELAY * 6)
        check("r" in done and len(done["r"]) == 1, "the late read found it: %r" % done)
        check(shape(d)["waiters"]["opTime"] == 0, "no opTime waiter after the read")
        # ---- waiters.replication: a w: 3 write with the secondary paused
        s.pause()
        try:
            def w3():
                try:
                    with p.client() as c:
                        c.mt.get_collection("t", write_concern=WriteConcern(w=3, wtimeout=3000)).insert_one({"w3": 1})
                except PyMongoError as e:
                    done["w3"] = e

            t = threading.Thread(target=w3)
            t.start()
            until(lambda: shape(p)["waiters"]["replication"] >= 1, "the w: 3 write waits", timeout=3)
            t.join(20)
            check(getattr(done.get("w3"), "code", None) == 64 or "w3" in done, "the w: 3 write timed out: %r" % done)
            check(shape(p)["waiters"]["replication"] == 0, "no replication waiter after its wtimeout")
        finally:
            s.resume()
        wait_state(s, (2,))
        # ---- a step down: "stepDown" on the old primary, "stepUp" on the new
        time.sleep(1)
        with p.client() as c:
            try:
                c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=20)
            except PyMongoError:
                pass   # the connection may close with the step down
        newp = cl.wait_primary(30, among=[s])
        mo = shape(p)
        check(mo["stateTransition"]["lastStateTransition"] == "stepDown", "old primary: %r" % mo["stateTransition"])
        check(mo["stateTransition"]["totalOperationsKilled"] == 0, "nothing killed at the step down")
        mn = shape(newp)
        check(mn["stateTransition"]["lastStateTransition"] == "stepUp", "new primary: %r" % mn["stateTransition"])
    print("raft_metrics: %d checks passed" % checks)


if __name__ == "__main__":
    main()
