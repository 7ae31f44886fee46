"""raft_force.py -- replSetReconfig {force: true} in a set of several members
(issue 24; commands/cmd_repl_force.c, src/repl/README.md "Forced reconfig"):
  - refusals first: a forced configuration that does not name the node
    (74 NodeNotFound), of another set name (93, the command line's), a host moved to another
    _id (103), an arbiter (238);
  - a 3-member set takes majority writes, then, one member cut off, more
    majority writes only the two others hold (a partition: the fail point
    dropRaftMessagesFrom on it); those two are killed (-9);
    the survivor, a SECONDARY with no majority, is forced to a one-member
    configuration: its version jumps by 10000 + less than 100000 (term
    -1), it becomes PRIMARY and takes writes (w: "majority" too);
  - the two others restart with the old configuration: they ask the
    survivor for its configuration before their Raft servers start and go
    REMOVED (no primary of the old majority), none of them is ever primary;
  - they are added back one at a time (rs.add through PyMongo's
    replSetReconfig on the primary): their majority-committed writes the
    survivor never had are gone from every member (rolled back, saved
    under rollback/ when the oplog held them at the kill; as mongod warns
    a forced reconfig may do), SECONDARY, the collection equal on
    the three (its hash in _id order), w: 3 works;
  - a second forced reconfig on a secondary while the primary runs: the
    running primary learns the newer configuration leaves it out (REMOVED),
    a killed member comes back REMOVED, both added back, equal data and
    the forced side's write kept.

usage: raft_force.py path/to/tamgad
"""
import os
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, get_config, reconfig, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def refused(m, cfg, code, what):
    try:
        with m.client() as c:
            c.admin.command("replSetReconfig", cfg, force=True)
    except OperationFailure as e:
        check(e.code == code, "%s: code %r (wanted %d): %s" % (what, e.code, code, e))
        return e
    raise AssertionError("%s: the forced reconfig was taken" % what)


def write_some(p, tag, n=100, w="majority"):
    with p.client() as c:
        coll = c.rd.get_collection("data", write_concern=WriteConcern(w=w))
        coll.insert_many([{"_id": "%s-%d" % (tag, i), "v": i} for i in range(n)])
        coll.update_many({"v": {"$lt": 30}}, {"$inc": {"u": 1}})
        coll.delete_many({"v": {"$gte": n - 10}})


def never_primary(members, secs):
    """None of members says it is a writable primary for secs seconds."""
    deadline = time.time() + secs
    while time.time() < deadline:
        for m in members:
            try:
                with m.client(serverSelectionTimeoutMS=500) as c:
                    check(not c.admin.command("hello").get("isWritablePrimary"),
                          "%s (left out by the forced configuration) is never primary" % m.host)
            except OperationFailure:
                pass
        time.sleep(0.3)


def add_back(p, m, _id):
    cfg = get_config(p)
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=cfg["members"] + [{"_id": _id, "host": m.host}]))
    check(wait_state(m, (2,), timeout=90) == 2, "%s: SECONDARY once added back" % m.host)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        a, b, c = cl.members
        with a.client() as cli:
            cli.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(30)
        write_some(p, "start")
        wait_equal(cl.members, "rd", "data", timeout=60)
        survivor = [m for m in cl.members if m is not p][0]
        lost = [m for m in cl.members if m is not survivor]
        old = get_config(survivor)

        # refusals (nothing changes)
        one = {"_id": cl.set_name, "version": old["version"] + 1,
               "members": [{"_id": cl.members.index(survivor), "host": survivor.host}]}
        refused(survivor, dict(one, members=[{"_id": cl.members.index(lost[0]), "host": lost[0].host}]), 74,
                "a configuration without this node")
        e = refused(survivor, dict(one, _id="other"), 93, "another set name (the command line's)")
        check("Rejecting reconfig where new config set name differs from command line set name, new config set "
              "name: other, old config set name: %s" % cl.set_name in str(e), "force of another set name: %s" % e)
        refused(survivor, dict(one, members=[{"_id": 9, "host": survivor.host}]), 103, "a host moved to another _id")
        refused(survivor, dict(one, members=one["members"] + [{"_id": 8, "host": lost[0].host, "arbiterOnly": True}]),
                238, "an arbiter")
        check(get_config(survivor)["version"] == old["version"], "the refused forced reconfigs changed nothing")

        # writes the survivor never gets, majority-committed by the two
        # others (it drops their Raft messages: a partition); then those two
        # are killed: the survivor alone has no majority
        with survivor.client() as cli:
            cli.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="alwaysOn",
                              data={"hosts": [m.host for m in lost]})
        write_some(p, "lost", n=50)
        for m in lost:
            m.kill9()
        with survivor.client() as cli:
            cli.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="off")
            check(cli.rd.data.count_documents({"_id": {"$regex": "^lost-"}}) == 0,
                  "the survivor never had the partitioned writes")
        check(wait_state(survivor, (2,), timeout=30) == 2, "the survivor is SECONDARY")
        with survivor.client() as cli:
            try:
                cli.admin.command("replSetReconfig", one)
                raise AssertionError("a reconfig without force on a secondary was taken")
            except PyMongoError as e:
                code = getattr(e, "code", None) or (getattr(e, "details", None) or {}).get("code")
                check(code == 10107, "without force on a secondary: 10107, got %r" % code)
            r = cli.admin.command("replSetReconfig", one, force=True)
            check(r["ok"] == 1, "forced reconfig answered ok: %r" % r)
        new = get_config(survivor)
        jump = new["version"] - one["version"]
        check(10000 <= jump < 110000, "the forced version jumps by 10000 + [0, 100000): %d" % jump)
        check(new.get("term") == -1 and len(new["members"]) == 1, "a forced configuration's term is -1: %r" % new)
        check(cl.wait_primary(30, among=[survivor]) is survivor, "the survivor becomes primary")
        write_some(survivor, "forced")
        with survivor.client() as cli:
            st = cli.admin.command("replSetGetStatus")
            check(st["myState"] == 1 and len(st["members"]) == 1, "rs.status() of the one-member set: %r" % st["myState"])

        # the others come back with the old configuration: REMOVED, never primary
        for m in lost:
            m.start()
        for m in lost:
            check(wait_state(m, (10,), timeout=30) == 10, "%s is REMOVED (the survivor's newer configuration)" % m.host)
        never_primary(lost, 6)
        write_some(survivor, "while-removed")

        # added back one at a time: they roll back / catch up, equal data
        for m in lost:
            add_back(survivor, m, cl.members.index(m))
        wait_equal(cl.members, "rd", "data", timeout=90)
        check(True, "every member equal after the re-adds")
        for m in cl.members:
            with m.client() as cli:
                check(cli.rd.data.count_documents({"_id": {"$regex": "^lost-"}}) == 0,
                      "%s: the writes the forced member never had are rolled back" % m.host)
        # the old primary rolled them back (saved under rollback/) when its
        # oplog held them at the kill; entries only its Raft log held are
        # dropped with its emptied Raft folder (src/repl/README.md)
        saved = []
        for _root, _dirs, files in os.walk(os.path.join(p.dbpath, "rollback")):
            saved += [f for f in files if f.endswith(".bson")]
        print("raft_force: the old primary saved %d rollback file(s)" % len(saved))
        with survivor.client() as cli:
            r = cli.rd.command("insert", "w3", documents=[{"x": 1}], writeConcern={"w": 3, "wtimeout": 30000})
            check("writeConcernError" not in r, "w: 3 once the set is whole again: %r" % r)
            hello = cli.admin.command("hello")
            check(len(hello["hosts"]) == 3 and hello["isWritablePrimary"], "hello of the whole set: %r" % hello["hosts"])

        # the misuse mongod warns of: a left-out majority that elects its own
        # primary while the forced member is down takes writes the set
        # never had; the forced member's configuration wins when they meet
        p = cl.wait_primary(30)
        s1, s2 = [m for m in cl.members if m is not p]
        with s1.client() as cli:
            cfg = cli.admin.command("replSetGetConfig")["config"]
        s2.kill9()
        with s1.client() as cli:
            cli.admin.command("replSetReconfig", dict(cfg, members=[x for x in cfg["members"] if x["host"] == s1.host]),
                              force=True)
        check(cl.wait_primary(30, among=[s1]) is s1, "the second forced member is primary")
        with s1.client() as cli:
            cli.rd.get_collection("data", write_concern=WriteConcern(w="majority")).insert_one({"_id": "s1-only"})
        win = get_config(s1)["version"]
        # p (still believing in the three) is REMOVED by s1's newer configuration
        check(wait_state(p, (10,), timeout=30) == 10, "the old primary learns it is REMOVED")
        s2.start()
        check(wait_state(s2, (10,), timeout=30) == 10, "the killed member comes back REMOVED")
        check(get_config(s1)["version"] == win, "the forced member kept its configuration")
        add_back(s1, p, cl.members.index(p))
        add_back(s1, s2, cl.members.index(s2))
        wait_equal(cl.members, "rd", "data", timeout=90)
        with s1.client() as cli:
            check(cli.rd.data.find_one({"_id": "s1-only"}) is not None, "the forced side's write is kept")
        check(True, "every member equal after the second forced reconfig")
    print("raft_force: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
