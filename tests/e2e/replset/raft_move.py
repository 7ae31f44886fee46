"""raft_move.py -- a member moved to another host under its _id (issue 24;
commands/cmd_repl_reconfig.c), as mongod lets a reconfig change
members[i].host:
  - a 3-member set takes majority writes; a secondary is stopped and
    started on another loopback port with its data folder (REMOVED there:
    its stored configuration names its old host);
  - replSetReconfig on the primary with that member's host changed (same
    _id): it keeps its data, its Raft address follows (Raft removes and adds
    its id at the new address); SECONDARY, hello lists the new host and not
    the old one, w: 3 and equal data (the collection's hash in _id order)
    on the three; writes made while it was down reach it;
  - moving the primary itself answers 74 (NodeNotFound: the new
    configuration does not name this node), moving a member onto another
    member's host 103 (mongod's duplicate host check, which a reconfig
    answers as 103 like every validateConfigForReconfig failure).

usage: raft_move.py path/to/tamgad
"""
import os
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import OperationFailure

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, free_ports, get_config, reconfig, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def write_some(p, tag, n=100):
    with p.client() as c:
        coll = c.rd.get_collection("data", write_concern=WriteConcern(w="majority"))
        coll.insert_many([{"_id": "%s-%d" % (tag, i), "v": i} for i in range(n)])
        coll.update_many({"v": {"$lt": 30}}, {"$inc": {"u": 1}})


def refused(p, cfg, code, what):
    try:
        reconfig(p, cfg)
    except OperationFailure as e:
        check(e.code == code, "%s: code %r (wanted %d): %s" % (what, e.code, code, e))
        return
    raise AssertionError("%s: taken" % what)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(30)
        write_some(p, "start")
        wait_equal(cl.members, "rd", "data", timeout=60)
        s = [m for m in cl.members if m is not p][0]
        other = [m for m in cl.members if m is not p and m is not s][0]
        cfg = get_config(p)

        # refusals
        me = dict(cfg, version=cfg["version"] + 1,
                  members=[dict(x, host="127.0.0.1:1") if x["host"] == p.host else x for x in cfg["members"]])
        refused(p, me, 74, "moving the primary itself")
        onto = dict(cfg, version=cfg["version"] + 1,
                    members=[dict(x, host=other.host) if x["host"] == s.host else x for x in cfg["members"]])
        refused(p, onto, 103, "moving a member onto another member's host (two members, one host)")

        # stopped, started on another port with its data
        old_host = s.host
        s.stop()
        write_some(p, "while-moving")
        port = [x for x in free_ports(4) if x not in (m.port for m in cl.members)][0]
        s.port, s.host = port, "127.0.0.1:%d" % port
        s.log = os.path.join(os.path.dirname(s.dbpath), "member-%d.log" % port)
        s.start()
        check(wait_state(s, (10,), timeout=30) == 10, "on its new host, its configuration names the old one: REMOVED")
        cfg = get_config(p)
        moved = dict(cfg, version=cfg["version"] + 1,
                     members=[dict(x, host=s.host) if x["host"] == old_host else x for x in cfg["members"]])
        r = reconfig(p, moved)
        check(r["ok"] == 1, "the reconfig moving %s to %s answered ok: %r" % (old_host, s.host, r))
        check(wait_state(s, (2,), timeout=60) == 2, "the moved member is SECONDARY")
        with p.client() as c:
            hello = c.admin.command("hello")
            check(s.host in hello["hosts"] and old_host not in hello["hosts"] and len(hello["hosts"]) == 3,
                  "hello lists the new host: %r" % hello["hosts"])
            r = c.rd.command("insert", "w3", documents=[{"x": 1}], writeConcern={"w": 3, "wtimeout": 30000})
            check("writeConcernError" not in r, "w: 3 with the moved member: %r" % r)
        write_some(p, "after-move")
        wait_equal(cl.members, "rd", "data", timeout=60)
        check(True, "equal data on the three after the move")
        with s.client() as c:
            check(c.admin.command("replSetGetConfig")["config"]["version"] == moved["version"],
                  "the moved member has the configuration")
            st = c.admin.command("replSetGetStatus")
            check(st["myState"] == 2 and any(x["name"] == s.host and x.get("self") for x in st["members"]),
                  "its rs.status() names it at its new host")
        # the set still fails over with the moved member in it
        p.kill9()
        np_ = cl.wait_primary(30, among=[s, other])
        write_some(np_, "after-failover")
        p.start()
        wait_equal(cl.members, "rd", "data", timeout=90)
        check(True, "equal data after a failover with the moved member")
    print("raft_move: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
