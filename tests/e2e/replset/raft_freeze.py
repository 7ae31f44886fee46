"""raft_freeze.py -- replSetFreeze and replSetStepDown's period on a replica
set of three tamgad members on 127.0.0.1 (issue 24), through PyMongo, as
mongod answers them:
  - replSetFreeze on the primary: 95 NotSecondary (with 0 too), mongod's
    message; on a secondary the reply's `warning` for 1 s, `info:
    "unfreezing"` for 0, nothing else for N;
  - a frozen secondary is not elected when the primary is killed (the other
    secondary is), and hello still says it is a secondary; unfrozen, it is
    elected when the other secondary is frozen and the primary is killed;
  - replSetStepDown 60: the stepped-down member stays SECONDARY through a
    second failover within its period (kill -9 of the member that took over:
    the third member is elected);
  - replSetStepDown {force: true} with no electable member to take over (the
    other live member still within its stepdown period): ok, SECONDARY at
    once, no primary until its own period (5 s) ended, then primary again.

usage: raft_freeze.py path/to/tamgad
"""
import os
import sys
import time

from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, report  # noqa: E402

TAMGAD = sys.argv[1]
ET = 2000   # settings.electionTimeoutMillis


def hello(m):
    try:
        with m.client(serverSelectionTimeoutMS=500) as c:
            return c.admin.command("hello")
    except PyMongoError:
        return {}


def cmd(m, *args, **kw):
    with m.client() as c:
        return c.admin.command(*args, **kw)


def code_of(m, *args, **kw):
    try:
        cmd(m, *args, **kw)
    except OperationFailure as e:
        return e.code, str(e)
    return 0, ""


def never_primary(m, secs):
    """m does not say it is primary for secs seconds."""
    end = time.time() + secs
    while time.time() < end:
        check(not hello(m).get("isWritablePrimary"), "%s must not be primary" % m.host)
        time.sleep(0.2)


def main():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=ET))
        p = cl.wait_primary()
        s1, s2 = [m for m in cl.members if m is not p]

        # errors on the primary, mongod's code and message
        code, msg = code_of(p, "replSetFreeze", 30)
        check(code == 95, "replSetFreeze on the primary: 95 (%s %s)" % (code, msg))
        check("Cannot freeze node when primary or running for election, state: Primary" in msg, msg)
        code, msg = code_of(p, "replSetFreeze", 0)
        check(code == 95, "unfreezing the primary: 95 (%s)" % code)
        code, msg = code_of(s1, "replSetFreeze", -1)
        check(code != 0, "a negative period is refused")

        # the reply fields on a secondary
        r = cmd(s1, "replSetFreeze", 1)
        check(r.get("warning") == "you really want to freeze for only 1 second?" and "info" not in r, repr(r))
        r = cmd(s1, "replSetFreeze", 0)
        check(r.get("info") == "unfreezing", repr(r))
        r = cmd(s1, "replSetFreeze", 60)
        check(r.get("ok") == 1 and "info" not in r and "warning" not in r, repr(r))
        h = hello(s1)
        check(h.get("secondary") is True and h.get("primary") == p.host, "a frozen member's hello: %r" % h)

        # kill the primary: the frozen secondary is not elected, the other is
        p.kill9()
        t0 = time.time()
        n = cl.wait_primary(among=[s1, s2], timeout=20)
        check(n is s2, "the unfrozen secondary is elected, not the frozen one")
        print("failover with a frozen member: %.1f s" % (time.time() - t0))
        never_primary(s1, 2 * ET / 1000)
        p.start()

        # unfreeze s1, freeze p; kill s2: s1 is elected now
        r = cmd(s1, "replSetFreeze", 0)
        check(r.get("info") == "unfreezing", repr(r))
        deadline = time.time() + 30
        while time.time() < deadline and not hello(p).get("secondary"):
            time.sleep(0.2)
        check(hello(p).get("secondary") is True, "the restarted member is a secondary again")
        cmd(p, "replSetFreeze", 60)
        s2.kill9()
        n = cl.wait_primary(among=[p, s1], timeout=20)
        check(n is s1, "the unfrozen member is elected, not the frozen one")
        never_primary(p, ET / 1000)
        s2.start()
        cmd(p, "replSetFreeze", 0)
        deadline = time.time() + 30
        while time.time() < deadline and not hello(s2).get("secondary"):
            time.sleep(0.2)
        check(hello(s2).get("secondary") is True, "member back as secondary")

        # replSetStepDown 60 on s1: whoever takes over is killed; s1 stays
        # SECONDARY within its period, the third member is elected
        cmd(s1, "replSetStepDown", 60, secondaryCatchUpPeriodSecs=10)
        n1 = cl.wait_primary(among=[p, s2], timeout=20)
        third = p if n1 is s2 else s2
        n1.kill9()
        t0 = time.time()
        n2 = cl.wait_primary(among=[s1, third], timeout=20)
        check(n2 is third, "the stepped-down member is not elected within its period")
        print("second failover within the stepdown period: %.1f s" % (time.time() - t0))
        never_primary(s1, 2 * ET / 1000)

        # force: true with nobody electable (s1 still within its period):
        # SECONDARY at once, no primary until the 5 s period ended
        t0 = time.time()
        r = cmd(third, "replSetStepDown", 5, force=True)
        check(r.get("ok") == 1, repr(r))
        h = hello(third)
        check(not h.get("isWritablePrimary"), "SECONDARY after a forced stepdown: %r" % h)
        while time.time() < t0 + 4:
            check(not hello(third).get("isWritablePrimary") and not hello(s1).get("isWritablePrimary"),
                  "no primary within the forced stepdown period")
            time.sleep(0.2)
        back = cl.wait_primary(among=[s1, third], timeout=20)
        check(back is third, "the member whose period ended is primary again")
        print("primary again %.1f s after the forced stepdown" % (time.time() - t0))
        with back.client(w="majority") as c:
            c.t.c.insert_one({"_id": 1})
            check(c.t.c.find_one({"_id": 1}) is not None, "it takes writes")
    report("raft_freeze")


if __name__ == "__main__":
    main()
