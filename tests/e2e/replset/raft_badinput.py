"""raft_badinput.py -- the bad input of issue 24 on replica sets of several
tamgad members on 127.0.0.1, each refused with mongod's code and message
(repl_set_config.cpp, check_quorum_for_config_change.cpp,
replication_coordinator_impl.cpp), nothing stored by a refused command and
the set taking majority writes after each refusal:
  - duplicate hosts (initiate and reconfig): 93 "Found two member
    configurations with same host field";
  - no majority of voters possible: 0 voting members, 8 voting members: 93;
  - a member that does not answer at initiate: 74, nothing initiated;
  - two sets claiming one member: initiating a second set with a member of
    the first: 103 "Our config version of 1 is no larger than the version
    on <host>, which is <v>"; a member started for another set name, at
    initiate and at reconfig: 103 "Our set name did not match that of
    <host>";
  - a reconfig removing the primary: 74 "... maps to this node";
  - a reconfig of another set name: 93 "Rejecting reconfig where new
    config set name differs from command line set name, ..." (9.0's text,
    before the whole set's faults); a host under another _id: 103 with
    mongod's MemberId(n); a reconfig on a secondary: 10107 "Safe reconfig
    is only allowed on a writable PRIMARY. Current state is SECONDARY";
  - a reconfig changing two voters at once (mongod's safe reconfig): 93;
  - replSetReconfig with force: true that leaves the node out (74), puts
    a host under another _id (103), names an arbiter (238): nothing
    changes.

usage: raft_badinput.py path/to/tamgad
"""
import os
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, Member, free_ports, wait_equal  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def expect(fn, code, text, what):
    try:
        fn()
    except PyMongoError as e:
        got = getattr(e, "code", None)
        if got is None and isinstance(getattr(e, "details", None), dict):
            got = e.details.get("code")
        check(got == code, "%s: expected code %d, got %r (%s)" % (what, code, got, e))
        check(text in str(e), "%s: message %r not in %s" % (what, text, e))
        return e
    raise AssertionError("%s: expected code %d, got success" % (what, code))


def cmd(m, *a, **kw):
    with m.client() as c:
        return c.admin.command(*a, **kw)


def not_initiated(m):
    try:
        cmd(m, "replSetGetStatus")
    except PyMongoError as e:
        return getattr(e, "code", None) == 94
    return False


def still_works(p, tag):
    with p.client() as c:
        coll = c.bad.get_collection("t", write_concern=WriteConcern(w="majority", wtimeout=20000))
        coll.insert_one({"_id": tag})
    global checks
    checks += 1


def members(*ms, **extra):
    return [dict({"_id": i, "host": m.host}, **extra) for i, m in enumerate(ms)]


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=4) as cl:
        m0, m1, m2, m3 = cl.members
        other_port = free_ports(1)[0]
        other = Member(TAMGAD, other_port, os.path.join(cl.dir, "other"), "rsOther", [])
        other.start()
        try:
            run(cl, m0, m1, m2, m3, other)
        finally:
            other.stop()
    print("raft_badinput: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


def run(cl, m0, m1, m2, m3, other):
    name = cl.set_name
    # ---- at initiate: nothing is stored anywhere
    dup = {"_id": name, "members": [{"_id": 0, "host": m0.host}, {"_id": 1, "host": m0.host}]}
    expect(lambda: cmd(m0, "replSetInitiate", dup), 93,
           "Found two member configurations with same host field, members.0.host == members.1.host == %s" % m0.host,
           "duplicate hosts at initiate")
    novote = {"_id": name, "members": members(m0, m1, votes=0, priority=0)}
    expect(lambda: cmd(m0, "replSetInitiate", novote), 93,
           "Replica set configuration contains 0 voting members, but must be at least 1 and no more than 7",
           "no voting member")
    eight = {"_id": name, "members": [{"_id": i, "host": "127.0.0.1:%d" % (m0.port + (0 if i == 0 else 60 + i))}
                                      for i in range(8)]}
    expect(lambda: cmd(m0, "replSetInitiate", eight), 93,
           "Replica set configuration contains 8 voting members, but must be at least 1 and no more than 7",
           "eight voting members")
    silent = {"_id": name, "members": members(m0, m1) + [{"_id": 2, "host": "127.0.0.1:%d" % free_ports(1)[0]}]}
    expect(lambda: cmd(m0, "replSetInitiate", silent), 74,
           "replSetInitiate quorum check failed because not all proposed set members responded affirmatively",
           "a member that does not answer")
    other_set = {"_id": name, "members": members(m0, other)}
    expect(lambda: cmd(m0, "replSetInitiate", other_set), 103,
           "Our set name did not match that of %s" % other.host, "a member of another set name at initiate")
    for m in (m0, m1, other):
        check(not_initiated(m), "%s was left uninitiated" % m.host)
    # ---- the set
    cmd(m0, "replSetInitiate", {"_id": name, "settings": {"electionTimeoutMillis": 4000},
                                "members": members(m0, m1, m2)})
    p = cl.wait_primary(30, among=[m0, m1, m2])
    still_works(p, "initiated")
    cfg = cmd(p, "replSetGetConfig")["config"]
    version = cfg["version"]
    # ---- two sets claiming one member: a second set that names m2
    second = {"_id": name, "members": [{"_id": 0, "host": m3.host}, {"_id": 1, "host": m2.host}]}
    expect(lambda: cmd(m3, "replSetInitiate", second), 103,
           "Our config version of 1 is no larger than the version on %s, which is %d" % (m2.host, version),
           "a member of the first set claimed by a second")
    check(not_initiated(m3), "the second set was not initiated")
    still_works(p, "after two sets")
    # ---- reconfigs
    def reconfig(c, **kw):
        return lambda: cmd(p, "replSetReconfig", c, maxTimeMS=60000, **kw)

    nxt = dict(cfg, version=version + 1)
    expect(reconfig(dict(nxt, members=cfg["members"] + [{"_id": 5, "host": other.host}])), 103,
           "Our set name did not match that of %s" % other.host, "a member of another set name at reconfig")
    still_works(p, "after another set's member")
    # the whole set's faults at a reconfig: 103 (mongod's validateConfigForReconfig)
    expect(reconfig(dict(nxt, members=cfg["members"] + [{"_id": 5, "host": cfg["members"][1]["host"]}])), 103,
           "Found two member configurations with same host field", "duplicate hosts at reconfig")
    expect(reconfig(dict(nxt, members=[dict(m, votes=0, priority=0) for m in cfg["members"]])), 103,
           "Replica set configuration contains 0 voting members", "no voting member at reconfig")
    still_works(p, "after duplicates")
    # another set name: mongod's 9.0 text, 93, before the whole set's
    # faults (its getNewConfig compares the name before validating)
    expect(reconfig(dict(nxt, _id="other")), 93,
           "Rejecting reconfig where new config set name differs from command line set name, "
           "new config set name: other, old config set name: %s" % name, "another set name at reconfig")
    expect(reconfig(dict(nxt, _id="other", members=cfg["members"] + [{"_id": 5, "host": cfg["members"][1]["host"]}])),
           93, "Rejecting reconfig where new config set name differs", "another set name and duplicate hosts")
    # a host under another _id: mongod streams MemberId
    moved = [dict(m, _id=9) if m["host"] == cfg["members"][1]["host"] else m for m in cfg["members"]]
    expect(reconfig(dict(nxt, members=moved)), 103,
           "New and old configurations both have members with host of %s but in the new configuration the _id field "
           "is MemberId(9) and in the old configuration it is MemberId(%d)" % (cfg["members"][1]["host"],
                                                                             cfg["members"][1]["_id"]),
           "a host under another _id at reconfig")
    sec = [m for m in (m0, m1, m2) if m is not p][0]
    expect(lambda: cmd(sec, "replSetReconfig", nxt), 10107,
           "Safe reconfig is only allowed on a writable PRIMARY. Current state is SECONDARY", "reconfig on a secondary")
    still_works(p, "after another set name")
    expect(reconfig(dict(nxt, members=[m for m in cfg["members"] if m["host"] != p.host])), 74,
           "No host described in new configuration with {version: %d" % (version + 1), "the primary removed")
    still_works(p, "after removing the primary")
    two = [dict(m, votes=0, priority=0) if m["host"] != p.host else m for m in cfg["members"]]
    expect(reconfig(dict(nxt, members=two)), 103,
           "Non force replica set reconfig can only add or remove at most 1 voting member.", "two voters at once")
    still_works(p, "after two voters")
    s = [m for m in (m0, m1, m2) if m is not p][0]
    # a forced reconfig is taken on any member (e2e.replset_force); bad
    # ones change nothing
    forced = lambda: cmd(s, "replSetReconfig", dict(cfg, members=[m for m in cfg["members"] if m["host"] != s.host]),  # noqa: E731
                         force=True)
    expect(forced, 74, "No host described in new configuration with {version: ", "force leaving this secondary out")
    moved_id = [dict(m, _id=9) if m["host"] == s.host else m for m in cfg["members"]]
    expect(lambda: cmd(s, "replSetReconfig", dict(cfg, members=moved_id), force=True), 103,
           "New and old configurations both have members with host of %s" % s.host, "force with a host under another _id")
    expect(reconfig(dict(nxt, members=cfg["members"] + [{"_id": 6, "host": other.host, "arbiterOnly": True}]),
                    force=True), 238, "arbiters are not supported", "force with an arbiter on the primary")
    still_works(p, "after force")
    # ---- nothing changed, nobody lost anything
    for m in (m0, m1, m2):
        with m.client() as c:
            got = c.admin.command("replSetGetConfig")["config"]
        check(got["version"] == version and len(got["members"]) == 3, "%s keeps the configuration" % m.host)
    check(cl.wait_primary(10, among=[m0, m1, m2]) is p, "the primary stayed")
    wait_equal([m0, m1, m2], "bad", "t")
    with p.client() as c:
        n = c.bad.t.count_documents({})
        check(n == 8, "every acknowledged write is there: %d" % n)
    check(not_initiated(m3) and not_initiated(other), "the outsiders stayed out")
    removed(cl, p, [m for m in (m0, m1, m2) if m is not p][1], cfg)


def removed_state(r):
    h = cmd(r, "hello")
    check(h.get("isWritablePrimary") is False and h.get("secondary") is False and "setName" not in h and
          h.get("info") == "Does not have a valid replica set config" and h.get("isreplicaset") is True,
          "a removed member's hello is mongod's no-config one: %r" % h)
    e = expect(lambda: cmd(r, "replSetGetStatus"), 93, "Our replica set config is invalid or we are not a member of it",
               "rs.status() on a removed member")
    check(e.details.get("state") == 10 and e.details.get("stateStr") == "REMOVED", "state REMOVED: %r" % e.details)
    with r.client(readPreference="secondaryPreferred") as c:
        expect(lambda: c.bad.t.find_one(), 13436, "node is not in primary or recovering state",
               "a read with secondaryOk on a removed member")
        expect(lambda: c.bad.t.insert_one({"_id": "never"}), 10107, "not primary", "a write on a removed member")


def removed(cl, p, r, cfg):
    """A member removed from the configuration: REMOVED in its own hello /
    rs.status(), reads refused as mongod refuses them, across a restart;
    the set goes on without it."""
    cfg = cmd(p, "replSetGetConfig")["config"]
    cmd(p, "replSetReconfig", dict(cfg, version=cfg["version"] + 1,
                                   members=[m for m in cfg["members"] if m["host"] != r.host]), maxTimeMS=60000)
    deadline = time.time() + 20
    while time.time() < deadline and cmd(r, "hello").get("setName") is not None:
        time.sleep(0.2)
    removed_state(r)
    still_works(p, "after the removal")
    r.stop()
    r.start()
    removed_state(r)
    time.sleep(3)   # the removed member's old Raft configuration must not disturb the set
    check(cl.wait_primary(10, among=[m for m in cl.members[:3] if m is not r]) is p, "the primary stayed")
    still_works(p, "after the removed member's restart")
    with p.client() as c:
        check(len(c.admin.command("hello")["hosts"]) == 2, "two hosts left")


if __name__ == "__main__":
    main()
