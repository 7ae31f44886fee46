"""raft_sync.py -- Raft log compaction and initial sync in a set of three
tamgad members on 127.0.0.1 (issue 24; src/repl/raft_member.c's snapshots,
src/repl/initial_sync.h, src/repl/member_rejoin.h):

  1. a secondary is killed (-9) while the primary takes more entries than
     the Raft log keeps behind a snapshot: Raft compacts its log (snapshot
     files, the log's first segment no longer at index 1); restarted, the
     member gets the leader's snapshot, catches up from the leader's oplog
     (or copies the data) and ends SECONDARY with equal data;
  2. another secondary's data folder is wiped under a write load: the
     primary hands it the configuration, Raft installs its snapshot, the
     member copies every collection (options, indexes, documents) and the
     oplog from the copy's start (STARTUP2 meanwhile) and ends SECONDARY
     with every collection equal (a hash in _id order) and the same indexes;
     after 1. and 2. a w: 3 write is acknowledged within 20 / 25 s (the
     leader kept a wiped member's old Raft match index and sent it nothing
     for 30 s: src/repl/raft_lost_log.h);
  3. a wiped member held in STARTUP2 (the fail point
     initialSyncHangBeforeCopyingDatabases) is never elected through two
     stepdowns and a kill -9 of the primary, then ends SECONDARY.

usage: raft_sync.py path/to/tamgad
"""
import os
import shutil
import sys
import threading
import time

from pymongo import ReadPreference, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, coll_hash, raft_compacted, report  # noqa: E402

TAMGAD = sys.argv[1]
# src/repl/raft_member.c: SNAPSHOT_THRESHOLD + SNAPSHOT_TRAILING
ENOUGH = 8192 + 8192 + 1500


def load(p, coll, n, start=0):
    with p.client() as c:
        db = c.get_database("sync", write_concern=WriteConcern(w=1))
        i = start
        while i < start + n:
            k = min(500, start + n - i)
            db[coll].insert_many([{"_id": j, "v": j % 97, "s": "x" * 40} for j in range(i, i + k)], ordered=True)
            i += k


def wait_equal_secondary(cl, m, colls, timeout=90):
    deadline = time.time() + timeout
    last = None
    seen = set()
    while time.time() < deadline:
        try:
            with m.client() as c:
                st = c.admin.command("replSetGetStatus")["myState"]
            seen.add(st)
            check(st != 3, "the member is not RECOVERING:\n%s" % m.tail(80))
            if st == 2:
                hs = []
                for x in cl.members:
                    with x.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
                        hs.append(tuple(coll_hash(c, "sync", n) for n in colls))
                if len(set(hs)) == 1:
                    return hs[0], seen
                last = hs
        except PyMongoError as e:
            last = repr(e)
        time.sleep(0.3)
    raise AssertionError("%s did not become an equal secondary: %r\n%s" % (m.host, last, m.tail(80)))


def w3_soon(p, what, timeout_ms):
    """A w: 3 write acknowledged within timeout_ms: the member that came
    back takes the next entries at once (src/repl/raft_lost_log.h: a wiped
    member was held 30 s in libraft's SNAPSHOT state)."""
    t = time.time()
    with p.client() as c:
        r = c.sync.command("insert", "w3", documents=[{"what": what}],
                           writeConcern={"w": 3, "wtimeout": timeout_ms})
    check("writeConcernError" not in r, "%s: w: 3 within %d ms, in %.1fs: %r" % (what, timeout_ms, time.time() - t, r))


def lost_log_lines(p):
    return p.tail(1000000).count('"id":5000277')


def behind(cl, p):
    s1 = [m for m in cl.members if m is not p][0]
    with p.client() as c:
        db = c.get_database("sync", write_concern=WriteConcern(w="majority"))
        db.a.create_index([("v", 1)], name="v_1")
        db.a.insert_one({"_id": -1, "v": 0})
    with p.client() as c:
        term0 = c.admin.command("replSetGetStatus")["term"]
    s1.kill9()
    t0 = time.time()
    load(p, "a", ENOUGH)
    with p.client() as c:
        db = c.get_database("sync", write_concern=WriteConcern(w="majority"))
        db.a.update_many({"v": 5}, {"$set": {"u": True}})
        db.a.delete_many({"v": 7})
    print("behind: %d entries in %.1fs" % (ENOUGH, time.time() - t0))
    deadline = time.time() + 20
    while True:
        snaps, first, names = raft_compacted(p)
        if (snaps and first and first > 1) or time.time() > deadline:
            break
        time.sleep(0.5)
    check(snaps, "the leader took a Raft snapshot: %r" % names)
    check(first is not None and first > 1, "the leader's Raft log was compacted (first index %r): %r" % (first, names))
    s1.start()
    (h,), seen = wait_equal_secondary(cl, s1, ["a"])
    log = s1.tail(100000)
    with cl.wait_primary(10).client() as c:
        term1 = c.admin.command("replSetGetStatus")["term"]
    # through the leader's snapshot as a rule (a catch-up from the leader's
    # oplog, sometimes a copy); when an election at the start made another
    # member leader, its log may still reach back and Raft alone brings the
    # member back: reported, not asserted (e2e.replset_rollback round 4
    # asserts the catch-up)
    method = ("oplog catch-up" if "oplog catch-up" in log else "logical copy" if "Initial sync done" in log
              else "the Raft log")
    check(method != "the Raft log" or term0 > 1, "reached the leader's snapshot (terms %d -> %d)" % (term0, term1))
    check("Starting rollback" not in log, "no rollback after the catch-up")
    with s1.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
        check(c.sync.a.count_documents({}) == ENOUGH + 1 - sum(1 for j in range(ENOUGH) if j % 97 == 7),
              "document count after the catch-up")
    # its Raft log was kept (libraft may still answer below what it
    # acknowledged: a snapshot it answered 'have all entries' for before
    # they were stored; then the leader's reset is logged, harmlessly)
    w3_soon(cl.wait_primary(10), "behind", 20000)
    print("behind: %s back as a secondary by %s (states seen %r)" % (s1.host, method, sorted(seen)))
    return s1


def wiped(cl, p):
    s2 = [m for m in cl.members if m is not p][1]
    stop = threading.Event()
    acked = []
    errors = []

    def writer():
        with p.client() as c:
            db = c.get_database("sync", write_concern=WriteConcern(w=1))
            i = 0
            while not stop.is_set():
                try:
                    db.b.insert_many([{"_id": i + k, "n": 0} for k in range(50)])
                    db.b.update_one({"_id": i // 2}, {"$inc": {"n": 1}})
                    if i % 500 == 0:
                        db.b.delete_one({"_id": i // 3})
                    acked.append(i)
                    i += 50
                    time.sleep(0.005)
                except PyMongoError as e:
                    errors.append(repr(e))
                    time.sleep(0.05)

    with p.client() as c:
        db = c.get_database("sync", write_concern=WriteConcern(w="majority"))
        db.create_collection("capped", capped=True, size=1 << 20)
        db.capped.insert_many([{"_id": i} for i in range(100)])
        db.c.create_index([("k", 1)], unique=True, name="k_u")
        db.c.insert_many([{"_id": i, "k": i} for i in range(200)])
    with p.client() as c:
        term0 = c.admin.command("replSetGetStatus")["term"]
    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(1)
        s2.kill9()
        shutil.rmtree(s2.dbpath)
        time.sleep(1)
        s2.start()
        # STARTUP2 while it copies (it may be short)
        seen = set()
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with s2.client() as c:
                    st = c.admin.command("replSetGetStatus")
                seen.add(st["myState"])
                if st["myState"] == 2:
                    break
            except PyMongoError:
                pass
            time.sleep(0.1)
        time.sleep(1)
    finally:
        stop.set()
        t.join(60)
    check(len(acked) > 10, "the writer went on: %d batches, errors %r" % (len(acked), errors[:3]))
    # SECONDARY after its copy: it takes the writer's last entries and the
    # next one at once, not after libraft's 30 s install-snapshot timeout
    w3_soon(p, "wiped", 25000)
    with p.client() as c:
        term1 = c.admin.command("replSetGetStatus")["term"]
    # the same leader as before the wipe (it held the member's old match index)
    check(term1 != term0 or lost_log_lines(p) >= 1, "the leader logged the wiped member's shorter Raft log (5000277)")
    hs, seen2 = wait_equal_secondary(cl, s2, ["a", "b", "c", "capped"])
    check(len(hs) == 4, "hashes")
    log = s2.tail(100000)
    check("Initial sync done" in log and "logical copy" in log, "the wiped member copied the data")
    check("Starting rollback" not in log, "no rollback after the copy (the oplog refilled from the snapshot point)")
    # STARTUP2 while it copies: seen by a poll, or in its log (the copy may
    # be shorter than a poll on a loaded machine)
    check(5 in seen or 5 in seen2 or '"newState":"STARTUP2"' in log,
          "STARTUP2 during the initial sync: %r %r" % (sorted(seen), sorted(seen2)))
    with s2.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c, \
            p.client() as pc:
        for n in ("a", "c", "capped"):
            mine = sorted((i["name"], tuple(i["key"].items()), bool(i.get("unique"))) for i in c.sync[n].list_indexes())
            theirs = sorted((i["name"], tuple(i["key"].items()), bool(i.get("unique")))
                            for i in pc.sync[n].list_indexes())
            check(mine == theirs, "indexes of %s: %r vs %r" % (n, mine, theirs))
        opts = c.sync.capped.options()
        check(opts.get("capped") is True, "capped options copied: %r" % opts)
    print("wiped: %s back as a secondary after a copy (states seen %r), %d writer batches" %
          (s2.host, sorted(seen | seen2), len(acked)))


def state(m):
    try:
        with m.client(serverSelectionTimeoutMS=1000) as c:
            return c.admin.command("replSetGetStatus")["myState"]
    except PyMongoError:
        return None


def held(cl, p):
    """A member copying data (STARTUP2) is never elected, as in mongod:
    its copy held by mongod's initialSyncHangBeforeCopyingDatabases, the
    primary steps down twice and is then killed; another member takes over
    each time, the copying one never; released, it ends SECONDARY."""
    # the member the previous case wiped stands in no election of the term
    # after its hand-over's (src/repl/raft_vote_floor.h): with a second
    # member wiped in the same term no secondary could take a stepdown over
    # (262), so the set's term moves on first
    s = [m for m in cl.members if m is not p][0]
    with s.client() as c:
        t_before = c.admin.command("replSetGetStatus")["term"]
    try:
        with p.client() as c:
            c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
    except PyMongoError as e:
        check(False, "stepdown before the held copy: %r" % e)
    np = cl.wait_primary(30)
    with p.client() as c:
        check(c.admin.command("replSetFreeze", 0).get("info") == "unfreezing", "unfreeze")
    p = np
    with p.client() as c:
        check(c.admin.command("replSetGetStatus")["term"] > t_before, "the term moved on")
    s = [m for m in cl.members if m is not p][0]
    s.kill9()
    before = s.tail(100000).count("Starting initial sync")
    shutil.rmtree(s.dbpath)
    s.start()
    with s.client() as c:
        c.admin.command("configureFailPoint", "initialSyncHangBeforeCopyingDatabases", mode="alwaysOn")
    # held once its copy began (before the join it has no state to show)
    deadline = time.time() + 60
    while time.time() < deadline and s.tail(100000).count("Starting initial sync") == before:
        time.sleep(0.1)
    time.sleep(0.5)
    check(state(s) == 5, "the wiped member waits in STARTUP2: %r" % state(s))
    for rnd in range(3):
        with p.client() as c:
            c.sync.held.insert_one({"_id": rnd}, )
        if rnd < 2:
            try:
                with p.client() as c:
                    c.admin.command("replSetStepDown", 30, secondaryCatchUpPeriodSecs=10)
            except PyMongoError as e:
                check(False, "stepdown %d: %r" % (rnd, e))
        else:
            p.kill9()
        others = [m for m in cl.members if m is not s and m.proc is not None]
        np = cl.wait_primary(30, among=others + [s])
        check(np is not s, "the member in STARTUP2 is never elected (round %d)" % rnd)
        st = state(s)
        check(st == 5, "and stays in STARTUP2 (round %d): %r\n%s" % (rnd, st, "\n".join(
            x for x in s.tail(3000).splitlines() if '"REPL"' in x or "INITSYNC" in x)))
        if rnd < 2:
            # the stepped-down member is frozen for its period (mongod);
            # unfrozen, it may take over again (the copying one never)
            with p.client() as c:
                check(c.admin.command("replSetFreeze", 0).get("info") == "unfreezing", "unfreeze")
        p = np
    old = [m for m in cl.members if m.proc is None][0]
    old.start()
    with s.client() as c:
        c.admin.command("configureFailPoint", "initialSyncHangBeforeCopyingDatabases", mode="off")
    hs, seen = wait_equal_secondary(cl, s, ["a", "b", "c", "held"])
    check(len(hs) == 4, "hashes after the held copy")
    print("held: %s stayed in STARTUP2 through two stepdowns and a kill -9" % s.host)
    return cl.wait_primary(20)


def main():
    t0 = time.time()
    with Cluster(TAMGAD, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=4000))
        p = cl.wait_primary(20)
        behind(cl, p)
        p = cl.wait_primary(10)
        wiped(cl, p)
        p = cl.wait_primary(10)
        held(cl, p)
    report("raft_sync", t0)


if __name__ == "__main__":
    main()
