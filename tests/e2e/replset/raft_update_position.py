"""raft_update_position.py -- a secondary's replSetUpdatePosition to its
sync source (issue 24, src/commands/cmd_repl_heartbeat.c's reporter and
command): the primary's member data moves within milliseconds of a
secondary applying an entry, not a heartbeat interval later.  Three tamgad
on 127.0.0.1 with heartbeatIntervalMillis 5000 (so a heartbeat cannot be
what brings the position), through PyMongo:
  - after each of several w: "majority" inserts, within 500 ms (typically
    a few ms) the primary's serverStatus({repl: 1}).repl.replicationProgress
    shows both secondaries' lastAppliedOpTime and optime (durable) at the
    write's entry, and rs.status()'s lastAppliedWallTime /
    lastDurableWallTime of both at or after the write (mongod's MemberData,
    which replSetUpdatePosition advances; rs.status()'s optime /
    optimeDurable stay the last heartbeat's, as mongod's
    getHeartbeatAppliedOpTime);
  - under a steady w: "majority" load the lag the primary sees stays under
    a second, never a heartbeat interval;
  - through mongosh when it is given: the command's refusal of an unknown
    memberId (74) from a shell.

usage: raft_update_position.py path/to/tamgad [path/to/mongosh]
"""
import os
import subprocess
import sys
import threading
import time

from pymongo.write_concern import WriteConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, report, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
LIMIT_S = 0.5


def ts_key(t):
    return (t.time, t.inc)


def progress(c):
    """host -> its replicationProgress entry, on the member of client c."""
    ss = c.admin.command("serverStatus", repl=1)
    return {x["host"]: x for x in ss["repl"]["replicationProgress"]}


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        cfg = cl.config(election_ms=2000)
        cfg["settings"]["heartbeatIntervalMillis"] = 5000
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30)
        secs = [m for m in cl.members if m is not p]
        for m in secs:
            check(wait_state(m, (2,), timeout=60) == 2, "%s SECONDARY" % m.host)
        with p.client() as c:
            coll = c.test.get_collection("up", write_concern=WriteConcern(w="majority", wtimeout=20000))
            coll.insert_one({"_id": -1})
            time.sleep(1)

            # each write: the secondaries' positions on the primary at once
            took, gaps = [], []
            sclients = [m.client() for m in secs]
            for i in range(6):
                time.sleep(0.3)
                before_ms = int(time.time() * 1000)
                coll.insert_one({"_id": i})
                ts = c.local.oplog.rs.find_one(sort=[("$natural", -1)])["ts"]
                start, rows, st = time.time(), None, None
                own = {}   # when each secondary itself had applied the entry
                while True:
                    for m, sc in zip(secs, sclients):
                        if m.host not in own and ts_key(sc.admin.command("hello")["lastWrite"]["opTime"]["ts"]) >= \
                                ts_key(ts):
                            own[m.host] = time.time()
                    rows = progress(c)
                    st = {x["name"]: x for x in c.admin.command("replSetGetStatus")["members"]}
                    if all(ts_key(rows[m.host]["lastAppliedOpTime"]["ts"]) >= ts_key(ts) and
                           ts_key(rows[m.host]["optime"]["ts"]) >= ts_key(ts) and
                           int(st[m.host]["lastAppliedWallTime"].timestamp() * 1000) >= before_ms - 1 and
                           int(st[m.host]["lastDurableWallTime"].timestamp() * 1000) >= before_ms - 1
                           for m in secs):
                        break
                    if time.time() - start > LIMIT_S:
                        raise AssertionError("write %d at %r: the primary's member data after %.0f ms: %r / %r" %
                                             (i, ts, (time.time() - start) * 1000, rows,
                                              {h: (x.get("lastAppliedWallTime"), x.get("lastDurableWallTime"))
                                               for h, x in st.items()}))
                    time.sleep(0.005)
                seen = time.time()
                took.append((seen - start) * 1000)
                gaps.append((seen - max(own.values() or [start])) * 1000)
                check(True, "write %d seen on the primary in %.0f ms" % (i, took[-1]))
            for sc in sclients:
                sc.close()
            took.sort()
            gaps.sort()
            print("positions on the primary after a majority write: median %.1f ms, max %.1f ms; after the later "
                  "secondary's own hello showed it applied: median %.1f ms, max %.1f ms" %
                  (took[len(took) // 2], took[-1], gaps[len(gaps) // 2], gaps[-1]))
            # the heartbeats' own optimes (rs.status()'s optime) still come
            # with heartbeats: present, and never past the member data
            rows = progress(c)
            for m in secs:
                r = rows[m.host]
                check(ts_key(r["heartbeatAppliedOpTime"]["ts"]) <= ts_key(r["lastAppliedOpTime"]["ts"]),
                      "heartbeat optime not past the reported one: %r" % r)

            # a steady load: the lag the primary sees stays small
            stop = threading.Event()
            errors = []

            def load():
                try:
                    k = 1000
                    while not stop.is_set():
                        coll.insert_one({"_id": k})
                        k += 1
                except Exception as e:  # reported below
                    errors.append(e)

            th = threading.Thread(target=load)
            th.start()
            worst = 0.0
            try:
                time.sleep(0.5)
                end = time.time() + 3
                while time.time() < end:
                    now_ms = time.time() * 1000
                    st = {x["name"]: x for x in c.admin.command("replSetGetStatus")["members"]}
                    for m in secs:
                        lag = now_ms - st[m.host]["lastAppliedWallTime"].timestamp() * 1000
                        worst = max(worst, lag)
                    time.sleep(0.1)
            finally:
                stop.set()
                th.join()
            check(not errors, "load errors: %r" % errors)
            print("under load: the primary's oldest view of a secondary's lastAppliedWallTime %.0f ms" % worst)
            check(worst < 1000, "lag under a steady load %.0f ms (heartbeat interval 5000)" % worst)

        if MONGOSH:
            js = ("try { db.adminCommand({replSetUpdatePosition: 1, optimes: [{appliedOpTime: {ts: Timestamp(1, 1), "
                  "t: 1}, appliedWallTime: new Date(), durableOpTime: {ts: Timestamp(1, 1), t: 1}, "
                  "durableWallTime: new Date(), memberId: 9, cfgver: rs.conf().version}]}); print('accepted') } "
                  "catch (e) { print(JSON.stringify({code: e.code})) }")
            out = subprocess.run([MONGOSH, "--quiet", "--port", str(p.port), "--eval", js], capture_output=True,
                                 text=True, timeout=60)
            check('"code":74' in out.stdout, "mongosh: an unknown memberId: %s %s" % (out.stdout, out.stderr))
    report("raft_update_position", t0)


if __name__ == "__main__":
    main()
