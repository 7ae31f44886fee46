"""raft_initiate_roles.py -- replSetInitiate of a set whose members are not
all electable (issue 24), as mongod takes it: only the node that runs
replSetInitiate must be electable (validateConfigForInitiate's
findSelfInConfigIfElectable); the members it hands the configuration to
need only find themselves in it (validateConfigForHeartbeatReconfig's
findSelfInConfig).  Four tamgad on 127.0.0.1:
  - replSetInitiate run on the priority-0 member itself: 93 "This node,
    <host>, with _id MemberId(2) is not electable under the new configuration ...",
    nothing initiated anywhere;
  - rs.initiate() through mongosh on an electable member, with a hidden
    delayed priority-0 member (secondaryDelaySecs 2) and a non-voting one
    (votes 0, priority 0): ok, every member SECONDARY or PRIMARY (on the
    primary a member not reached yet is UNKNOWN, never unreachable), the
    primary one of the two electable members, hidden members out of
    hello's hosts, the delayed member's hello says hidden and its delay;
  - PyMongo writes with w: 3 and w: 4 (every member, the delayed one
    included) acknowledged without writeConcernError, the data equal on
    every member.

usage: raft_initiate_roles.py path/to/tamgad [path/to/mongosh]
"""
import json
import os
import subprocess
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
DELAY = 2
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def cmd(m, *a, **kw):
    with m.client() as c:
        return c.admin.command(*a, **kw)


def not_initiated(m):
    try:
        cmd(m, "replSetGetStatus")
    except PyMongoError as e:
        return getattr(e, "code", None) == 94
    return False


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=4) as cl:
        m0, m1, m2, m3 = cl.members
        cfg = {"_id": cl.set_name, "settings": {"electionTimeoutMillis": 2000},
               "members": [{"_id": 0, "host": m0.host},
                           {"_id": 1, "host": m1.host},
                           {"_id": 2, "host": m2.host, "priority": 0, "hidden": True, "secondaryDelaySecs": DELAY},
                           {"_id": 3, "host": m3.host, "priority": 0, "votes": 0}]}

        # the initiating node must be electable: run on the hidden member
        try:
            cmd(m2, "replSetInitiate", cfg)
            raise AssertionError("replSetInitiate on a priority-0 member succeeded")
        except PyMongoError as e:
            code = getattr(e, "code", None)
            check(code == 93 and ("This node, %s, with _id MemberId(2) is not electable under the new configuration with "
                                  "{version: 1, term: 0} for replica set %s" % (m2.host, cl.set_name)) in str(e),
                  "initiate on the priority-0 member: 93 not electable, got %r %s" % (code, e))
        for m in cl.members:
            check(not_initiated(m), "%s: nothing initiated after the refusal" % m.host)

        # an electable member initiates it: mongosh's rs.initiate()
        if MONGOSH is not None:
            out = subprocess.run([MONGOSH, "mongodb://%s/?directConnection=true" % m0.host, "--quiet", "--norc",
                                  "--eval", "const r = rs.initiate(%s); print(JSON.stringify({ok: r.ok}))" %
                                  json.dumps(cfg)], capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "mongosh rs.initiate: %s %s" % (out.stdout[-400:], out.stderr[-800:]))
            check(json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": 1}, "rs.initiate ok: %s" % out.stdout)
        else:
            check(cmd(m0, "replSetInitiate", cfg)["ok"] == 1, "replSetInitiate ok")
        p = cl.wait_primary(30)
        check(p in (m0, m1), "the primary is an electable member: %s" % p.host)
        for m in (m2, m3):
            check(wait_state(m, (2,), timeout=60) == 2, "%s is SECONDARY" % m.host)
        h = cmd(p, "hello")
        check(sorted(h["hosts"]) == sorted([m0.host, m1.host]) and m2.host not in h.get("passives", []),
              "hello hosts: the electable members, the hidden one nowhere: %r" % h)
        check(h.get("passives") == [m3.host], "the priority-0 visible member is a passive: %r" % h.get("passives"))
        h2 = cmd(m2, "hello")
        check(h2.get("hidden") is True and h2.get("secondaryDelaySecs") == DELAY and h2.get("passive") is True,
              "the delayed member's hello: %r" % h2)
        # the primary's view of each member follows its Raft progress: ask
        # until every member has answered it once
        # until then a member it has not reached is mongod's UNKNOWN (state
        # 6, health -1), never "(not reachable/healthy)": every member is up
        deadline, t_wait, seen = time.time() + 30, time.time(), {}
        while True:
            st = cmd(p, "replSetGetStatus")
            for x in st["members"]:
                seen.setdefault(x["stateStr"], x)
                if x["stateStr"] == "UNKNOWN":
                    check(x["state"] == 6 and x["health"] == -1.0 and x.get("syncSourceHost") == "",
                          "a member not reached yet is mongod's UNKNOWN: %r" % x)
            states = sorted(x["stateStr"] for x in st["members"])
            if states == ["PRIMARY", "SECONDARY", "SECONDARY", "SECONDARY"] or time.time() > deadline:
                break
            time.sleep(0.02)
        check(states == ["PRIMARY", "SECONDARY", "SECONDARY", "SECONDARY"],
              "rs.status(): %r" % [(x["name"], x["stateStr"]) for x in st["members"]])
        check("(not reachable/healthy)" not in seen,
              "no live member shown unreachable: %r" % seen.get("(not reachable/healthy)"))
        print("every member reached %.2fs after the last reported SECONDARY (seen: %s)" %
              (time.time() - t_wait, sorted(seen)))

        # writes acknowledged by three, then by all four (the delayed member
        # applies DELAY seconds late)
        with p.client() as c:
            for w in (3, 4):
                coll = c.rd.get_collection("data", write_concern=WriteConcern(w=w, wtimeout=30000))
                t = time.time()
                r = coll.insert_many([{"_id": "w%d-%d" % (w, i), "w": w} for i in range(50)])
                check(len(r.inserted_ids) == 50, "w: %d insert acknowledged (%.1fs)" % (w, time.time() - t))
            r = c.rd.command("update", "data", updates=[{"q": {"w": 3}, "u": {"$set": {"u": 1}}, "multi": True}],
                             writeConcern={"w": 3, "wtimeout": 30000})
            check(r["nModified"] == 50 and "writeConcernError" not in r, "w: 3 update: %r" % r)
        wait_equal(cl.members, "rd", "data", timeout=30)
        check(True, "equal data on every member")
        with m2.client() as c:
            check(c.rd.data.count_documents({}) == 100, "the delayed member holds every write")
    print("raft_initiate_roles: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
