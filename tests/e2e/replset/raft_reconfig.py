"""raft_reconfig.py -- replSetReconfig, rs.add() and rs.remove() on a replica
set of tamgad members on 127.0.0.1 (issue 24), through PyMongo and mongosh:
  - mongod's refusals: on a secondary 10107, a version not above the
    current one 103, two voting members added at once 93, the primary
    removed 74, the primary made unelectable 104, a new member that does not
    answer 74 (nothing changes: the set goes on with its members);
  - rs.add() (mongosh) of a fourth member with an empty data folder once
    the leader's Raft log is compacted: it gets the leader's snapshot and
    copies the data (initial sync), has the same data, counts for w: 4 and
    shows in hello / rs.status();
  - priority 0 + hidden: gone from `hosts`, the member says hidden/passive;
  - secondaryDelaySecs: a delayed member applies writes that late;
  - votes: 0 and back (one voting change at a time);
  - the priority-0 member is never primary across stepdowns;
  - rs.remove() (mongosh): the member leaves hello's hosts, writes go on.

usage: raft_reconfig.py path/to/tamgad [path/to/mongosh]
"""
import json
import os
import subprocess
import sys
import time

from pymongo import ReadPreference, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, free_ports, get_config, reconfig, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def expect_code(fn, code, what):
    try:
        fn()
    except PyMongoError as e:
        got = getattr(e, "code", None)
        if got is None and isinstance(getattr(e, "details", None), dict):
            got = e.details.get("code")
        check(got == code, "%s: expected code %d, got %r (%s)" % (what, code, got, e))
        return e
    raise AssertionError("%s: expected code %d, got success" % (what, code))


def mongosh(cl, script):
    out = subprocess.run([MONGOSH, cl.uri3, "--quiet", "--norc", "--eval", script],
                         capture_output=True, text=True, timeout=180)
    check(out.returncode == 0, "mongosh ran: %s %s" % (out.stdout[-500:], out.stderr[-800:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def refusals(cl, p):
    s = [m for m in cl.members[:3] if m is not p][0]
    cfg = get_config(p)
    with s.client() as c:
        cfg2 = dict(cfg, version=cfg["version"] + 1)
        expect_code(lambda: c.admin.command("replSetReconfig", cfg2), 10107, "reconfig on a secondary")
    expect_code(lambda: reconfig(p, dict(cfg)), 103, "version not above the current one")
    two = dict(cfg, version=cfg["version"] + 1,
               members=cfg["members"] + [{"_id": 10, "host": cl.members[3].host},
                                         {"_id": 11, "host": "127.0.0.1:%d" % free_ports(1)[0]}])
    e = expect_code(lambda: reconfig(p, two), 103, "two voting members at once")
    check("at most 1 voting member" in str(e), "message: %s" % e)
    gone = dict(cfg, version=cfg["version"] + 1, members=[m for m in cfg["members"] if m["host"] != p.host])
    e = expect_code(lambda: reconfig(p, gone), 74, "the primary removed")
    check("maps to this node" in str(e), "message: %s" % e)
    low = dict(cfg, version=cfg["version"] + 1,
               members=[dict(m, priority=0) if m["host"] == p.host else m for m in cfg["members"]])
    # mongod 9.0's non-force reconfig runs checkElectable on this node
    # (104 as it is): the primary may not make itself priority 0
    e = expect_code(lambda: reconfig(p, low), 104, "the primary made unelectable")
    pid = [m["_id"] for m in cfg["members"] if m["host"] == p.host][0]
    check(("This node, %s, with _id MemberId(%d) is not electable under the new configuration with {version: %d, "
           "term: " % (p.host, pid, cfg["version"] + 1)) in str(e), "message: %s" % e)
    # the version check of old against new comes before finding this node
    stale_gone = dict(gone, version=cfg["version"])
    expect_code(lambda: reconfig(p, stale_gone), 103, "an old version without the primary")
    dead = dict(cfg, version=cfg["version"] + 1,
                members=cfg["members"] + [{"_id": 11, "host": "127.0.0.1:%d" % free_ports(1)[0]}])
    expect_code(lambda: reconfig(p, dead), 74, "a new member that does not answer")
    check(get_config(p)["version"] == cfg["version"], "nothing changed after the refusals")
    with p.client() as c:
        c.rc.t.insert_one({"_id": "after refusals"})
        check(len(c.admin.command("hello")["hosts"]) == 3, "three hosts still")


# past Raft's snapshot threshold and kept entries (raft_member.c: 8192 and
# 8192): the new member cannot catch up from the log's first entry and gets
# the leader's snapshot, then copies the data (an initial sync)
COMPACT = 8192 + 8192 + 1500


def compacted(m):
    names = os.listdir(os.path.join(m.dbpath, "raft"))
    closed = sorted(n for n in names if "-" in n and n[0].isdigit())
    return bool([n for n in names if n.startswith("snapshot-") and not n.endswith(".meta")]) and \
        bool(closed) and int(closed[0].split("-")[0]) > 1


def add_member(cl, p):
    new = cl.members[3]
    with p.client() as c:
        data = c.rc.get_collection("data", write_concern=WriteConcern(w=1))
        for i in range(0, COMPACT, 500):
            data.insert_many([{"_id": j, "v": "x" * 20} for j in range(i, min(COMPACT, i + 500))])
        c.rc.get_collection("data", write_concern=WriteConcern(w="majority")).insert_one({"_id": "last"})
    deadline = time.time() + 30
    while not compacted(p) and time.time() < deadline:
        time.sleep(0.5)
    check(compacted(p), "the leader's Raft log is compacted before the add")
    if MONGOSH is not None:
        got = mongosh(cl, "const r = rs.add('%s'); print(JSON.stringify({ok: r.ok}))" % new.host)
        check(got == {"ok": 1}, "rs.add through mongosh: %r" % got)
    else:
        cfg = get_config(p)
        cfg = dict(cfg, version=cfg["version"] + 1, members=cfg["members"] + [{"_id": 3, "host": new.host}])
        reconfig(p, cfg)
    wait_state(new, (2,))
    h = wait_equal(cl.members, "rc", "data", timeout=60)
    check(h is not None, "the new member has the data")
    with p.client() as c:
        hello = c.admin.command("hello")
        check(new.host in hello["hosts"] and len(hello["hosts"]) == 4, "hello hosts: %r" % hello["hosts"])
        st = c.admin.command("replSetGetStatus")
        check(len(st["members"]) == 4, "rs.status() lists four members")
        r = c.rc.command("insert", "w4", documents=[{"_id": 1}], writeConcern={"w": 4, "wtimeout": 20000})
        check("writeConcernError" not in r, "w: 4 with the new member: %r" % r)
    with new.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        check(c.rc.w4.find_one({"_id": 1}) is not None, "w: 4 applied on the new member")
        check(c.admin.command("replSetGetConfig")["config"]["version"] == get_config(p)["version"],
              "the new member has the configuration")


def member_options(cl, p):
    new = cl.members[3]
    cfg = get_config(p)
    members = [dict(m, priority=0, hidden=True) if m["host"] == new.host else m for m in cfg["members"]]
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=members))
    with p.client() as c:
        hello = c.admin.command("hello")
        check(new.host not in hello["hosts"] and new.host not in hello.get("passives", []),
              "a hidden member is not listed: %r" % hello)
    deadline = time.time() + 20
    while True:
        with new.client() as c:
            h = c.admin.command("hello")
        if h.get("hidden") or time.time() > deadline:
            break
        time.sleep(0.2)
    check(h.get("hidden") is True and h.get("passive") is True, "the member says hidden/passive: %r" % h)
    # secondaryDelaySecs: the delayed member applies 4 s late
    cfg = get_config(p)
    members = [dict(m, secondaryDelaySecs=4) if m["host"] == new.host else m for m in cfg["members"]]
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=members))
    time.sleep(1)
    with p.client() as c:
        c.rc.get_collection("delay", write_concern=WriteConcern(w="majority")).insert_one({"_id": "late"})
    t0 = time.time()
    with new.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        check(c.rc.delay.find_one({"_id": "late"}) is None, "not applied at once on the delayed member")
        while c.rc.delay.find_one({"_id": "late"}) is None and time.time() - t0 < 30:
            time.sleep(0.2)
        took = time.time() - t0
    check(2.5 <= took <= 15, "applied about 4 s later: %.1f s" % took)
    # votes: 0, then back to 1 (one voting change each)
    for votes in (0, 1):
        cfg = get_config(p)
        members = [dict(m, votes=votes, secondaryDelaySecs=0) if m["host"] == new.host else m
                   for m in cfg["members"]]
        reconfig(p, dict(cfg, version=cfg["version"] + 1, members=members))
        with p.client() as c:
            r = c.rc.command("insert", "votes", documents=[{"v": votes}], writeConcern={"w": "majority",
                                                                                         "wtimeout": 20000})
            check("writeConcernError" not in r, "majority with votes %d: %r" % (votes, r))
    check([m for m in get_config(p)["members"] if m["host"] == new.host][0]["votes"] == 1, "votes back to 1")


def priority_zero(cl, p):
    """The hidden priority-0 member never becomes primary: two stepdowns
    (Raft may hand it the leadership; it hands it on at once)."""
    new = cl.members[3]
    for _ in range(2):
        with p.client() as c:
            try:
                c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
            except PyMongoError:
                pass   # the connection may close as the member steps down
        time.sleep(1)   # a hand-over through the priority-0 member takes two transfers
        np = cl.wait_primary(30, among=cl.members)
        check(np is not new, "the priority-0 member never primary (got %s)" % np.host)
        with new.client() as c:
            check(not c.admin.command("hello")["isWritablePrimary"], "the hidden member is no primary")
        p = np
    return p


def remove_member(cl, p):
    new = cl.members[3]
    if MONGOSH is not None:
        got = mongosh(cl, "const r = rs.remove('%s'); print(JSON.stringify({ok: r.ok}))" % new.host)
        check(got == {"ok": 1}, "rs.remove through mongosh: %r" % got)
    else:
        cfg = get_config(p)
        reconfig(p, dict(cfg, version=cfg["version"] + 1,
                         members=[m for m in cfg["members"] if m["host"] != new.host]))
    with p.client() as c:
        hello = c.admin.command("hello")
        check(new.host not in hello["hosts"] and len(hello["hosts"]) == 3, "removed from hosts: %r" % hello)
        check(len(c.admin.command("replSetGetStatus")["members"]) == 3, "three members in status")
        r = c.rc.command("insert", "after", documents=[{"x": 1}], writeConcern={"w": 3, "wtimeout": 20000})
        check("writeConcernError" not in r, "w: 3 after the removal: %r" % r)
    wait_equal(cl.members[:3], "rc", "after")


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=4) as cl:
        three = cl.members[:3]
        cl.uri3 = "mongodb://%s/?replicaSet=%s" % (",".join(m.host for m in three), cl.set_name)
        cfg = {"_id": cl.set_name, "settings": {"electionTimeoutMillis": 4000},
               "members": [{"_id": i, "host": m.host} for i, m in enumerate(three)]}
        with three[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30, among=three)
        refusals(cl, p)
        add_member(cl, p)
        member_options(cl, p)
        p = priority_zero(cl, p)
        remove_member(cl, p)
    print("raft_reconfig: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
