"""raft_readd.py -- a removed member added to its set again (issue 24), as
mongod lets rs.remove(h) be followed by rs.add(h) of the same member:
  - still running, its data still there (REMOVED, state 10), writes made
    meanwhile: rs.add() through mongosh (a new _id, so a new Raft id) ->
    SECONDARY, the collection's hash equal on every member, w: 3 works;
  - removed, stopped, restarted (REMOVED again from its stored
    configuration), more writes, added again with its first _id through
    PyMongo -> SECONDARY, equal data;
  - removed, stopped, its data folder wiped, restarted (no configuration),
    added again -> SECONDARY (the leader's log or snapshot), equal data;
  - removed while the set writes past Raft's kept log (the leader's log
    compacted beyond where this member's ends): added again it gets the
    leader's snapshot and catches up from the leader's oplog, equal data;
  - removed while it was down (it never heard of it, and comes back with
    a configuration naming it): it asks the others as it starts and goes
    REMOVED, then it rejoins;
  - a REMOVED member stops its Raft server (5000282): no ELECTION line in
    its log past the REMOVED transition while the set goes on writing, and
    its Raft server starts again (5000245) when it is added back;
  - serverStatus().repl on the primary, the member back and a removed
    member: hello's set fields, rbid, userWriteBlockMode (mongod 9.0's);
    metrics.repl.apply (ops, batches) counts what the secondary applied,
    metrics.repl.initialSync the catch-up of the member behind the kept log.

usage: raft_readd.py path/to/tamgad [path/to/mongosh]
"""
import json
import os
import shutil
import subprocess
import sys
import time

from bson import Int64
from pymongo import WriteConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, get_config, reconfig, wait_equal, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0
primary_of = [None]   # the primary server_status_repl writes through
# past Raft's snapshot threshold and its kept entries (raft_member.c: 8192
# and 8192), so the removed member's position is no longer in the log
COMPACT = 8192 + 8192 + 1500


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def remove(p, s):
    cfg = get_config(p)
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=[m for m in cfg["members"] if m["host"] != s.host]))
    check(wait_state(s, (10,), timeout=20) == 10, "%s is REMOVED" % s.host)
    with s.client() as c:
        r = c.admin.command("serverStatus")["repl"]
    check("setName" not in r and r["isWritablePrimary"] is False and "rbid" in r,
          "a removed member's serverStatus.repl is its no-config hello: %r" % r)


def log_lines(m):
    """The JSON lines of member m's log."""
    out = []
    with open(m.log, "rb") as f:
        for raw in f:
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                out.append(d)
    return out


def removed_quiet(s, quiet_secs):
    """The removed member s stopped its Raft server, and its log has no
    ELECTION line past its last transition to REMOVED for quiet_secs (more
    than two election timeouts); the index of that transition's line."""
    deadline = time.time() + 20
    while True:
        lines = log_lines(s)
        at = max([i for i, d in enumerate(lines) if d.get("id") == 21358 and
                  d.get("attr", {}).get("newState") == "REMOVED"] or [-1])
        if at >= 0 and any(d.get("id") == 5000282 for d in lines[at:]):
            break
        check(time.time() < deadline, "%s: its Raft server stopped after REMOVED: %s" % (s.host, lines[at:][-20:]))
        time.sleep(0.2)
    time.sleep(quiet_secs)
    lines = log_lines(s)
    el = [d for d in lines[at:] if d.get("c") == "ELECTION"]
    check(not el, "%s: no election once REMOVED: %r" % (s.host, el[:5]))
    return at


def add_pymongo(p, s, _id):
    cfg = get_config(p)
    reconfig(p, dict(cfg, version=cfg["version"] + 1, members=cfg["members"] + [{"_id": _id, "host": s.host}]))


def write_some(p, tag, n=200):
    with p.client() as c:
        coll = c.rd.get_collection("data", write_concern=WriteConcern(w="majority"))
        coll.insert_many([{"_id": "%s-%d" % (tag, i), "v": i} for i in range(n)])
        coll.update_many({"v": {"$lt": 50}}, {"$inc": {"u": 1}})
        coll.delete_many({"v": {"$gte": n - 20}})


def server_status_repl(m, primary):
    """serverStatus().repl is hello's set fields, rbid and
    userWriteBlockMode, as mongod 9.0's ReplicationInfoServerStatus."""
    with m.client() as c:
        r = c.admin.command("serverStatus")["repl"]
        h = c.admin.command("hello")
        rbid = c.admin.command("replSetGetRBID")["rbid"]
    for k in ("hosts", "setName", "setVersion", "isWritablePrimary", "secondary", "primary", "me"):
        check(r.get(k) == h.get(k), "%s: serverStatus.repl.%s %r, hello %r" % (m.host, k, r.get(k), h.get(k)))
    check("ismaster" not in r and r["topologyVersion"]["processId"] == h["topologyVersion"]["processId"],
          "%s: 9.0's field names and topologyVersion: %r" % (m.host, r))
    check(("electionId" in r) == primary, "%s: electionId only on the primary: %r" % (m.host, r))
    lw = r["lastWrite"]
    check(set(lw) >= {"opTime", "lastWriteDate", "majorityOpTime", "majorityWriteDate"}, "lastWrite: %r" % lw)
    check(r["rbid"] == rbid and r["userWriteBlockMode"] == 1, "%s: rbid and userWriteBlockMode: %r" % (m.host, r))
    if not primary:
        # metrics.repl.apply: this secondary's applier applied the set's writes
        with m.client() as c:
            before = c.admin.command("serverStatus")["metrics"]["repl"]["apply"]
        with primary_of[0].client() as c:
            c.rd.get_collection("metrics", write_concern=WriteConcern(w=3)).insert_many([{"i": i} for i in range(5)])
        with m.client() as c:
            after = c.admin.command("serverStatus")["metrics"]["repl"]["apply"]
        check(after["ops"] >= before["ops"] + 5 and after["batches"]["num"] > before["batches"]["num"] and
              after["batches"]["num"] <= after["ops"] and after["batches"]["totalMillis"] >= 0,
              "%s: metrics.repl.apply counts the applied entries: %r -> %r" % (m.host, before, after))


def rejoined(cl, p, s, what):
    check(wait_state(s, (2,), timeout=60) == 2, "%s: SECONDARY again" % what)
    wait_equal(cl.members, "rd", "data", timeout=60)
    check(True, "%s: equal data on every member" % what)
    with p.client() as c:
        hello = c.admin.command("hello")
        check(s.host in hello["hosts"] and len(hello["hosts"]) == 3, "%s: hello hosts %r" % (what, hello["hosts"]))
        r = c.rd.command("insert", "w3", documents=[{"what": what}], writeConcern={"w": 3, "wtimeout": 20000})
        check("writeConcernError" not in r, "%s: w: 3 with the member back: %r" % (what, r))
    with s.client() as c:
        check(c.admin.command("replSetGetConfig")["config"]["version"] == get_config(p)["version"],
              "%s: the member has the configuration" % what)
        st = c.admin.command("replSetGetStatus")
        check(st["myState"] == 2 and len(st["members"]) == 3, "%s: its rs.status()" % what)
    primary_of[0] = p
    server_status_repl(p, True)
    server_status_repl(s, False)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        p = cl.wait_primary(30)
        write_some(p, "start")
        wait_equal(cl.members, "rd", "data")
        s = [m for m in cl.members if m is not p][0]
        others = [m for m in cl.members if m is not s]

        # 1. removed, still running: rs.add() through mongosh (a new _id)
        remove(p, s)
        write_some(p, "while-removed")
        at = removed_quiet(s, 3 * 2.0)
        if MONGOSH is not None:
            uri = "mongodb://%s/?replicaSet=%s" % (",".join(m.host for m in others), cl.set_name)
            out = subprocess.run([MONGOSH, uri, "--quiet", "--norc", "--eval",
                                  "const r = rs.add('%s'); print(JSON.stringify({ok: r.ok}))" % s.host],
                                 capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "mongosh rs.add: %s %s" % (out.stdout[-400:], out.stderr[-800:]))
            check(json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": 1}, "rs.add answered ok: %s" % out.stdout)
        else:
            add_pymongo(p, s, 7)
        rejoined(cl, p, s, "running member")
        check(any(d.get("id") == 5000245 for d in log_lines(s)[at:]), "its Raft server started again when added")

        # 2. removed, restarted with its data: REMOVED from its stored
        # configuration, then added with its first _id again
        first_id = cl.members.index(s)
        remove(p, s)
        s.stop()
        write_some(p, "while-down")
        n0 = len(log_lines(s))
        s.start()
        check(wait_state(s, (10,), timeout=20) == 10, "REMOVED after a restart")
        time.sleep(4.0)
        el = [d for d in log_lines(s)[n0:] if d.get("c") == "ELECTION" or d.get("id") == 5000245]
        check(not el, "a member restarted REMOVED starts no Raft server nor election: %r" % el[:5])
        add_pymongo(p, s, first_id)
        rejoined(cl, p, s, "restarted member")

        # 3. removed, wiped, restarted: a member with no data at all
        remove(p, s)
        s.stop()
        shutil.rmtree(s.dbpath)
        write_some(p, "while-wiped")
        s.start()
        add_pymongo(p, s, 9)
        rejoined(cl, p, s, "wiped member")

        # 4. removed while the leader's log moves past Raft's kept entries
        remove(p, s)
        with p.client() as c:
            big = c.rd.get_collection("big", write_concern=WriteConcern(w=1))
            for i in range(0, COMPACT, 1000):
                big.insert_many([{"_id": j} for j in range(i, min(COMPACT, i + 1000))])
            c.rd.get_collection("data", write_concern=WriteConcern(w="majority")).insert_one({"_id": "last"})
        add_pymongo(p, s, 11)
        rejoined(cl, p, s, "member behind the kept log")
        wait_equal(cl.members, "rd", "big", timeout=60)
        check(True, "the big collection equal too")
        # it caught up from the leader's snapshot and oplog: mongod's
        # metrics.repl.initialSync counts that sync (this process's)
        with s.client() as c:
            mr = c.admin.command("serverStatus")["metrics"]["repl"]
        check(list(mr.keys()) == ["apply", "buffer", "initialSync", "reconfig", "stateTransition", "waiters"],
              "metrics.repl's sections: %r" % mr)
        isy = mr["initialSync"]
        check(list(isy.keys()) == ["completed", "failedAttempts", "failures"] and
              all(isinstance(v, Int64) for v in isy.values()), "initialSync's counters: %r" % isy)
        check(isy["completed"] >= 1 and isy["failures"] == 0, "the catch-up counted as completed: %r" % isy)
        check(mr["reconfig"] == {"numAutoReconfigsForRemovalOfNewlyAddedFields": 0}, "reconfig: %r" % mr)

        # 5. removed while it was down: it never heard of it and comes back
        # believing itself a member (its stored configuration names it); the
        # add tells it first (REMOVED), then it rejoins as above
        s.stop()
        cfg = get_config(p)
        reconfig(p, dict(cfg, version=cfg["version"] + 1, members=[m for m in cfg["members"] if m["host"] != s.host]))
        write_some(p, "while-unknown")
        s.start()
        # it asks the others for their configuration as it starts (the
        # configuration watch, commands/cmd_repl_force.c): REMOVED, as
        # mongod's member learns from a heartbeat
        check(wait_state(s, (10,), timeout=20) == 10, "a member removed while down learns it as it starts")
        add_pymongo(p, s, 13)
        rejoined(cl, p, s, "member removed while down")
    print("raft_readd: %d checks passed in %.1fs" % (checks, time.time() - t0))
    print("%d passed, 0 failed" % checks)


if __name__ == "__main__":
    main()
