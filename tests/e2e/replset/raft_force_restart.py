"""raft_force_restart.py -- a replica set brought down to one member, then
restarted (issue 24; commands/cmd_repl_member.c cmd_repl_member_on_self_host,
repl/replset.h repl_set_open_raft):
  - a 3-member set takes majority writes; the two secondaries are killed
    (-9) and the survivor is forced (replSetReconfig {force: true}) to a
    one-member configuration; it takes writes;
  - the survivor restarts (SIGTERM, start): as mongod's single member it is
    PRIMARY again by itself, here by its Raft server's single voter (its
    Raft log holds the set's history): never PRIMARY before that server
    runs, the writes from before the restart all there, w: "majority"
    writes acknowledged;
  - rs.add() of a killed member (it comes back REMOVED, the survivor's newer
    configuration) grows the set on Raft again: SECONDARY, equal data,
    w: 2 acknowledged;
  - rs.remove() of that member brings the set to one again; the survivor
    restarts, is PRIMARY, takes writes, and rs.add() brings the member back
    (SECONDARY, equal data).
  - entries only in a left-out member's Raft log when it was killed (a
    delayed member: its applier waits) that the forced survivor never had
    are saved to its rollback files (<dbpath>/rollback/<uuid>/removed.*.bson)
    when it is added back; the writes the set has are not (repl/raft_leftover.h).
Before, a restarted one-member set ran without Raft and rs.add() could not
grow it (238), and those entries vanished without a file.

usage: raft_force_restart.py path/to/tamgad
"""
import os
import sys
import time

import bson

from pymongo import WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, get_config, reconfig, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def write_some(m, tag, n=50, w="majority"):
    with m.client() as c:
        coll = c.rd.get_collection("data", write_concern=WriteConcern(w=w, wtimeout=30000))
        r = coll.insert_many([{"_id": "%s-%d" % (tag, i), "v": i} for i in range(n)])
        check(len(r.inserted_ids) == n and r.acknowledged, "%s: %d writes acknowledged (w: %r)" % (tag, n, w))


def count(m, tag):
    with m.client() as c:
        return c.rd.data.count_documents({"_id": {"$regex": "^%s-" % tag}})


def restart_as_primary(cl, m):
    """Stop m, start it again: it is PRIMARY by itself within 30 s, and
    the log says its Raft server elected it (no single-member election)."""
    check(m.stop() == 0, "%s stopped cleanly" % m.host)
    with open(m.log, "rb") as f:
        f.seek(0, os.SEEK_END)
        at = f.tell()
    m.start()
    check(cl.wait_primary(30, among=[m]) is m, "%s is PRIMARY again after its restart" % m.host)
    with open(m.log, "rb") as f:
        f.seek(at)
        logged = f.read().decode("utf-8", "replace")
    # Raft's single voter elected it: its Raft server started (5000245)
    # before it became PRIMARY (21331); the single-member path without
    # Raft would elect it as the folder opens, with no Raft server at all
    started = logged.find('"id":5000245,')
    primary = logged.find('"id":21331,')
    check(0 <= started < primary, "PRIMARY by its Raft server after the restart (%d, %d)" % (started, primary))
    with m.client() as c:
        st = c.admin.command("replSetGetStatus")
        check(st["myState"] == 1 and len(st["members"]) == 1, "rs.status() after the restart: %r" % st["members"])


def add_back(p, m, _id):
    cfg = get_config(p)
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=cfg["members"] + [{"_id": _id, "host": m.host}]))
    check(wait_state(m, (2,), timeout=90) == 2, "%s: SECONDARY once added" % m.host)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        body(cl)
    with Cluster(TAMGAD, n=3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        leftover(cl)
    print("raft_force_restart: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


def body(cl):
    """The scenario of the file's comment on a 3-member set."""
    with cl.members[0].client() as cli:
        cli.admin.command("replSetInitiate", cl.config(election_ms=2000))
    p = cl.wait_primary(30)
    write_some(p, "start")
    wait_equal(cl.members, "rd", "data", timeout=60)
    lost = [m for m in cl.members if m is not p]
    for m in lost:
        m.kill9()
    one = {"_id": cl.set_name, "version": get_config(p)["version"] + 1,
           "members": [{"_id": cl.members.index(p), "host": p.host}]}
    with p.client() as cli:
        check(cli.admin.command("replSetReconfig", one, force=True)["ok"] == 1, "forced to one member")
    check(cl.wait_primary(30, among=[p]) is p, "the forced member is PRIMARY")
    write_some(p, "forced")

    # forced down to one, restarted: PRIMARY again, nothing lost
    restart_as_primary(cl, p)
    check(count(p, "start") == 50 and count(p, "forced") == 50, "the writes from before the restart are there")
    write_some(p, "after-restart")

    # grow it again: a killed member comes back REMOVED and is added
    back = lost[0]
    back.start()
    check(wait_state(back, (10,), timeout=30) == 10, "%s comes back REMOVED" % back.host)
    add_back(p, back, cl.members.index(back))
    wait_equal([p, back], "rd", "data", timeout=90)
    check(count(back, "forced") == 50 and count(back, "after-restart") == 50,
          "the added member holds the writes taken alone before and after the restart")
    check(True, "equal data after the re-add")
    write_some(p, "two", w=2)

    # rs.remove() down to one, restart, rs.add() again
    cfg = get_config(p)
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=[x for x in cfg["members"] if x["host"] == p.host]))
    check(wait_state(back, (10,), timeout=30) == 10, "%s REMOVED by rs.remove()" % back.host)
    restart_as_primary(cl, p)
    write_some(p, "removed-restart")
    try:
        with p.client() as cli:
            h = cli.admin.command("hello")
        check(h["isWritablePrimary"] and h["hosts"] == [p.host], "hello of the one-member set: %r" % h)
    except PyMongoError as e:
        raise AssertionError("hello after the restart: %s" % e)
    add_back(p, back, cl.members.index(back) + 10)
    wait_equal([p, back], "rd", "data", timeout=90)
    write_some(p, "regrown", w=2)
    check(True, "the set grew again after rs.remove() and a restart")



def rollback_docs(m):
    """Every document of m's rollback files (<dbpath>/rollback/<uuid>/removed.*.bson)."""
    docs = []
    for root, _dirs, files in os.walk(os.path.join(m.dbpath, "rollback")):
        for f in files:
            check(f.startswith("removed.") and f.endswith(".bson"), "mongod's rollback file name: %s" % f)
            with open(os.path.join(root, f), "rb") as fh:
                docs += bson.decode_all(fh.read())
    return docs


def leftover(cl):
    """Entries only in a left-out member's Raft log when it was killed: a
    delayed member (secondaryDelaySecs: its applier waits, its Raft log has
    the entries) holds majority writes the forced survivor never had; killed,
    left out by the forced configuration, added back: those writes' documents
    are in its rollback files, the writes the set has are not, and its data
    is the set's."""
    a, b, c = cl.members
    cfg = cl.config(election_ms=2000)
    cfg["members"] = cfg["members"][:2]
    cfg["members"][0]["priority"] = 2
    with a.client() as cli:
        cli.admin.command("replSetInitiate", cfg)
    check(cl.wait_primary(30) in (a, b), "a primary")
    deadline = time.time() + 60
    while cl.wait_primary(30) is not a:
        check(time.time() < deadline, "the priority-2 member takes over")
        time.sleep(0.5)
    cfg = get_config(a)
    reconfig(a, dict(cfg, version=cfg["version"] + 1,
                     members=cfg["members"] + [{"_id": 2, "host": c.host, "priority": 0, "hidden": True,
                                                "secondaryDelaySecs": 120}]))
    write_some(a, "kept", n=20)
    wait_equal([a, b], "rd", "data", timeout=60)
    # its catch-up to the hand-over's minValid is not delayed (mongod's
    # initial sync ignores secondaryDelaySecs): SECONDARY well before 120 s
    check(wait_state(c, (2,), timeout=30) == 2, "the delayed c reaches SECONDARY")
    # b stops hearing a: a and the delayed c commit writes b never gets
    with b.client() as cli:
        cli.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="alwaysOn", data={"hosts": [a.host]})
    write_some(a, "lost", n=20)
    check(count(b, "lost") == 0 and count(c, "lost") == 0, "neither b nor the delayed c applied the lost writes")
    a.kill9()
    c.kill9()
    with b.client() as cli:
        cli.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="off")
    check(wait_state(b, (2,), timeout=30) == 2, "b is SECONDARY alone")
    one = {"_id": cl.set_name, "version": get_config(b)["version"] + 1, "members": [{"_id": 1, "host": b.host}]}
    with b.client() as cli:
        cli.admin.command("replSetReconfig", one, force=True)
    check(cl.wait_primary(30, among=[b]) is b, "b forced to one member is PRIMARY")
    write_some(b, "forced", n=10)
    c.start()
    check(wait_state(c, (10,), timeout=30) == 10, "the delayed member comes back REMOVED")
    cfg = get_config(b)
    reconfig(b, dict(cfg, version=cfg["version"] + 1,
                     members=cfg["members"] + [{"_id": 2, "host": c.host, "priority": 0}]))
    check(wait_state(c, (2,), timeout=90) == 2, "the delayed member added back is SECONDARY")
    wait_equal([b, c], "rd", "data", timeout=90)
    check(count(c, "lost") == 0 and count(c, "kept") == 20 and count(c, "forced") == 10,
          "the added member holds the set's data, not the lost writes")
    saved = rollback_docs(c)
    ids = sorted(d["_id"] for d in saved)
    check(ids == sorted("lost-%d" % i for i in range(20)),
          "the lost writes' documents are in its rollback files, nothing else: %r" % ids)
    with open(c.log, "rb") as f:
        logged = f.read().decode("utf-8", "replace")
    check('"id":5000280,' in logged and '"saved":20' in logged, "the saved entries logged")


if __name__ == "__main__":
    main()
