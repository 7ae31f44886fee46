"""raft_heartbeat.py -- mongod's replSetHeartbeat between the members of a
3-member set (issue 24, src/commands/cmd_repl_heartbeat.c): what operators
see in rs.status() on a secondary, which a Raft follower alone does not
know (it hears from its leader only).  Three tamgad on 127.0.0.1 with
heartbeatIntervalMillis 500 and heartbeatTimeoutSecs 3:
  - on a secondary, through PyMongo: every member with its real state
    (one PRIMARY, two SECONDARY, health 1), optime / optimeDurable that
    move with writes, lastHeartbeat and lastHeartbeatRecv that advance,
    pingMs, syncSourceHost the primary for the other secondary,
    configVersion/configTerm the set's;
  - serverStatus({repl: 1}).repl.replicationProgress: one entry per
    member with mongod's fields, the other secondary's optime moving;
  - the other secondary SIGSTOPped: after the heartbeat timeout it is
    "(not reachable/healthy)", health 0, state 8, with a
    lastHeartbeatMessage, on the secondary and on the primary; SIGCONT:
    SECONDARY with health 1 again;
  - replSetHeartbeat itself: a heartbeat of another set name answers 108,
    one claiming this member's _id 2, a missing field 4, as mongod;
  - rs.status() through mongosh when it is given (its members' stateStr);
  - the primary's durableOpTime (heartbeat, rs.status()) is its journaled
    last write while the commit point is held back (both secondaries
    paused), as mongod's lastDurable -- not the commit point;
  - a cluster time gossiped into the primary reaches a secondary by
    heartbeat replies, so an afterClusterTime read up to it waits there
    (until an entry that recent is applied) instead of answering 72.

usage: raft_heartbeat.py path/to/tamgad [path/to/mongosh]
"""
import json
import os
import subprocess
import sys
import threading
import time

from bson import Int64, Timestamp

from pymongo.errors import OperationFailure
from pymongo.write_concern import WriteConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, check, report, wait_state  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
TIMEOUT_S = 3


def status(m):
    with m.client() as c:
        return c.admin.command("replSetGetStatus")


def by_name(st):
    return {x["name"]: x for x in st["members"]}


def wait_for(m, pred, timeout, what):
    deadline, st = time.time() + timeout, None
    while time.time() < deadline:
        try:
            st = status(m)
            if pred(by_name(st)):
                return by_name(st)
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError("%s within %ss: %r" % (what, timeout, st and st["members"]))


def main():
    t0 = time.time()
    with Cluster(TAMGAD, n=3) as cl:
        cfg = cl.config(election_ms=2000)
        cfg["settings"]["heartbeatIntervalMillis"] = 500
        cfg["settings"]["heartbeatTimeoutSecs"] = TIMEOUT_S
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cfg)
        p = cl.wait_primary(30)
        secs = [m for m in cl.members if m is not p]
        for m in secs:
            check(wait_state(m, (2,), timeout=60) == 2, "%s SECONDARY" % m.host)
        s1, s2 = secs
        with p.client() as c:
            c.test.hb.insert_one({"_id": 0}, )

        # on a secondary: every member's real state (not UNKNOWN)
        rows = wait_for(s1, lambda r: sorted(x["stateStr"] for x in r.values()) ==
                        ["PRIMARY", "SECONDARY", "SECONDARY"] and all(x["health"] == 1 for x in r.values())
                        and "pingMs" in r[s2.host], 30, "real states on a secondary")
        o = rows[s2.host]
        check(o["state"] == 2 and o["stateStr"] == "SECONDARY", "the other secondary: %r" % o)
        for f in ("optime", "optimeDurable", "optimeDate", "optimeDurableDate", "lastAppliedWallTime",
                  "lastDurableWallTime", "lastHeartbeat", "lastHeartbeatRecv", "pingMs", "lastHeartbeatMessage",
                  "syncSourceHost", "syncSourceId", "infoMessage", "configVersion", "configTerm", "uptime"):
            check(f in o, "mongod's member field %s: %r" % (f, o))
        check(o["syncSourceHost"] == p.host, "the other secondary syncs from the primary: %r" % o)
        check(o["lastHeartbeatMessage"] == "" and o["pingMs"] >= 0, "a healthy member: %r" % o)
        check(o["configVersion"] == 1 and o["configTerm"] >= 1, "its configuration: %r" % o)
        pr = rows[p.host]
        check(pr["syncSourceHost"] == "" and "electionTime" in pr and "electionDate" in pr,
              "the primary's row: %r" % pr)
        st1 = status(s1)
        check(st1["heartbeatIntervalMillis"] == 500, "heartbeatIntervalMillis from the settings")
        me = by_name(st1)[s1.host]
        for f in ("optimeWritten", "lastAppliedWallTime", "lastDurableWallTime", "syncSourceId", "infoMessage",
                  "lastHeartbeatMessage"):
            check(f in me, "the self row's %s: %r" % (f, me))
        check(me["syncSourceHost"] == p.host and me["syncSourceId"] == cl.members.index(p), "self syncs from the primary")
        check("durableOpTime" in st1["optimes"] and "lastDurableWallTime" in st1["optimes"],
              "optimes.durableOpTime: %r" % st1["optimes"])

        # optimes move with writes; heartbeats keep coming
        before = o["optime"]["ts"]
        hb_before, recv_before = o["lastHeartbeat"], o["lastHeartbeatRecv"]
        with p.client() as c:
            for i in range(1, 20):
                c.test.hb.insert_one({"_id": i})
            last_ts = c.local.oplog.rs.find_one(sort=[("$natural", -1)])["ts"]
        rows = wait_for(s1, lambda r: r[s2.host]["optime"]["ts"] >= last_ts and r[p.host]["optime"]["ts"] >= last_ts
                        and r[s2.host]["lastHeartbeat"] > hb_before and r[s2.host]["lastHeartbeatRecv"] > recv_before,
                        20, "optimes reach the last write, heartbeats go on")
        check(rows[s2.host]["optime"]["ts"] > before, "the other secondary's optime moved")
        check(rows[s2.host]["optimeDurable"]["ts"] >= last_ts, "and its durable optime: %r" % rows[s2.host])
        check(rows[s2.host]["lastHeartbeat"] > hb_before and rows[s2.host]["lastHeartbeatRecv"] > recv_before,
              "heartbeats sent and received advance: %r" % rows[s2.host])

        # serverStatus({repl: 1}).repl.replicationProgress
        with s1.client() as c:
            ss = c.admin.command("serverStatus", repl=1)
            plain = c.admin.command("serverStatus")
        prog = {x["host"]: x for x in ss["repl"]["replicationProgress"]}
        check(sorted(prog) == sorted(m.host for m in cl.members), "one entry per member: %r" % prog)
        for x in prog.values():
            check(sorted(x) == sorted(["host", "optime", "lastAppliedOpTime", "heartbeatAppliedOpTime",
                                       "heartbeatDurableOpTime", "memberId"]), "mongod's entry: %r" % x)
        check(prog[s2.host]["lastAppliedOpTime"]["ts"] >= last_ts, "the other secondary's progress: %r" % prog)
        check("replicationProgress" not in plain["repl"], "only with {repl: 1}")

        # a paused member is down after the heartbeat timeout, back after
        s2.pause()
        t_pause = time.time()
        try:
            rows = wait_for(s1, lambda r: r[s2.host]["health"] == 0, TIMEOUT_S + 10, "down on the secondary")
            took = time.time() - t_pause
            d = rows[s2.host]
            check(d["state"] == 8 and d["stateStr"] == "(not reachable/healthy)" and d["lastHeartbeatMessage"] != "",
                  "mongod's down member: %r" % d)
            check(took >= TIMEOUT_S - 1, "down only after the heartbeat timeout (%.1fs)" % took)
            check(d["optime"]["t"] == -1 and d["syncSourceHost"] == "", "a down member's optimes forgotten: %r" % d)
            wait_for(p, lambda r: r[s2.host]["health"] == 0, TIMEOUT_S + 10, "down on the primary")
        finally:
            s2.resume()
        wait_for(s1, lambda r: r[s2.host]["health"] == 1 and r[s2.host]["stateStr"] == "SECONDARY", 30,
                 "back on the secondary")
        wait_for(p, lambda r: r[s2.host]["health"] == 1 and r[s2.host]["stateStr"] == "SECONDARY", 30,
                 "back on the primary")
        check(True, "paused member came back")

        # the command's refusals
        hb = {"replSetHeartbeat": cl.set_name, "configVersion": 1, "configTerm": 1, "hbv": 1,
              "from": s2.host, "fromId": 9, "term": 1}
        with s1.client() as c:
            r = c.admin.command(dict(hb))
            check(r["set"] == cl.set_name and r["state"] == 2 and "opTime" in r and r["v"] == 1,
                  "a heartbeat's answer: %r" % r)
            for bad, code in (({"replSetHeartbeat": "other"}, 108), ({"fromId": by_id(s1, cl)}, 2)):
                try:
                    c.admin.command(dict(hb, **bad))
                    raise AssertionError("heartbeat %r accepted" % bad)
                except OperationFailure as e:
                    check(e.code == code, "heartbeat %r: %s %s" % (bad, e.code, e))
            try:
                c.admin.command({k: v for k, v in hb.items() if k != "term"})
                raise AssertionError("heartbeat without term accepted")
            except OperationFailure as e:
                check(e.code == 4 and 'Missing expected field "term"' in str(e), "no term: %s" % e)

        if MONGOSH is not None:
            out = subprocess.run([MONGOSH, "mongodb://%s/?directConnection=true" % s1.host, "--quiet", "--norc",
                                  "--eval", "print(JSON.stringify(rs.status().members.map(m => [m.name, m.stateStr, "
                                  "m.health])))"], capture_output=True, text=True, timeout=120)
            check(out.returncode == 0, "mongosh rs.status(): %s" % out.stderr[-600:])
            got = {n: (s, h) for n, s, h in json.loads(out.stdout.strip().splitlines()[-1])}
            check(got[p.host] == ("PRIMARY", 1) and got[s2.host] == ("SECONDARY", 1) and
                  got[s1.host] == ("SECONDARY", 1), "mongosh rs.status(): %r" % got)

        primary_durable(cl, hb)
        secondary_cluster_time(cl)
    report("raft_heartbeat", t0)


def primary_durable(cl, hb):
    """A primary's durableOpTime is the newest write its journal holds
    (mongod's lastDurable, from the journal flusher's rounds), not the
    commit point: with both secondaries paused a w: 1 write cannot commit,
    yet within a flusher round the primary's heartbeat answer and
    rs.status() call it durable.  Done before the primary steps down for
    want of a majority (election timeout 2 s); tried again if it did."""
    for attempt in range(3):
        got = r = None
        p = cl.wait_primary(30)
        secs = [m for m in cl.members if m is not p]
        for m in secs:
            check(wait_state(m, (2,), timeout=60) == 2, "%s SECONDARY" % m.host)
        for m in secs:
            m.pause()
        try:
            with p.client(serverSelectionTimeoutMS=2000) as c:
                # w: 1 (the set's default is majority, which cannot be met)
                c.test.get_collection("hb", write_concern=WriteConcern(w=1)).insert_one({"_id": "durable-%d" % attempt})
                ts = c.local.oplog.rs.find_one(sort=[("$natural", -1)])["ts"]
                deadline = time.time() + 1.5
                while time.time() < deadline:
                    r = c.admin.command(dict(hb))
                    st = c.admin.command("replSetGetStatus")
                    if r["state"] != 1:
                        break
                    if r["durableOpTime"]["ts"] >= ts:
                        got = (r, st)
                        break
                    time.sleep(0.05)
        except (OperationFailure, Exception) as e:  # stepped down under load: again
            print("primary_durable attempt %d: %s" % (attempt, e))
        finally:
            for m in secs:
                m.resume()
        if got is None:
            print("primary_durable attempt %d: %r" % (attempt, r), file=sys.stderr)
            time.sleep(3)
            continue
        r, st = got
        check(r["durableOpTime"]["ts"] == ts and r["opTime"]["ts"] == ts,
              "the heartbeat's durableOpTime is the journaled write: %r, %r" % (r, ts))
        check(r["durableWallTime"] is not None, "durableWallTime: %r" % r)
        check(st["optimes"]["lastCommittedOpTime"]["ts"] < ts,
              "the commit point stayed behind: %r" % st["optimes"])
        check(st["optimes"]["durableOpTime"]["ts"] == ts, "rs.status() optimes.durableOpTime: %r" % st["optimes"])
        return
    raise AssertionError("3 tries: the primary stepped down, or its durableOpTime never reached its w: 1 write "
                         "(see the attempts above)")


def secondary_cluster_time(cl):
    """A secondary learns the primary's cluster time from heartbeat replies
    (mongod: VectorClockMetadataHook on the replication executor's replies),
    not only from what it applied: a time gossiped into the primary alone
    reaches the secondary within a few heartbeat intervals, and an
    afterClusterTime read up to it -- sent without any $clusterTime past the
    secondary's -- waits for an entry that recent instead of answering 72
    (mongod's InvalidOptions check is against the member's own clock)."""
    p = cl.wait_primary(30)
    s = [m for m in cl.members if m is not p][0]
    check(wait_state(s, (2,), timeout=60) == 2, "%s SECONDARY" % s.host)
    with p.client() as c:
        # a write first: the primary's periodic no-op (after 10 s idle) must
        # not come during the case -- an entry past the gossiped time would
        # move the secondary's clock by itself
        c.test.get_collection("hb", write_concern=WriteConcern(w="majority")).insert_one({"_id": "before-gossip"})
        now = c.admin.command("ping")["$clusterTime"]["clusterTime"]
        ahead = Timestamp(now.time + 5, 1)
        with c.start_session() as sess:
            sess.advance_cluster_time({"clusterTime": ahead,
                                       "signature": {"hash": b"\0" * 20, "keyId": Int64(0)}})
            c.admin.command("ping", session=sess)
        check(c.admin.command("ping")["$clusterTime"]["clusterTime"] >= ahead, "the primary took the gossip")
    deadline, seen, applied = time.time() + 5, None, None
    while time.time() < deadline:
        with s.client() as c:
            seen = c.admin.command("ping")["$clusterTime"]["clusterTime"]
            applied = c.admin.command("replSetGetStatus")["optimes"]["appliedOpTime"]["ts"]
        if seen >= ahead:
            break
        time.sleep(0.1)
    check(seen is not None and seen >= ahead, "the secondary's clock reached the primary's by heartbeats: %r < %r"
          % (seen, ahead))
    check(applied < ahead, "before it applied anything that recent: %r" % applied)
    got = {}

    def read():
        try:
            with s.client() as c:
                got["r"] = c.test.command("find", "hb", filter={"_id": "after-gossip"},
                                          readConcern={"afterClusterTime": ahead}, maxTimeMS=20000)
        except OperationFailure as e:
            got["e"] = e

    t = threading.Thread(target=read)
    t.start()
    time.sleep(1)
    check(t.is_alive(), "the read waits for an entry at the gossiped time: %r" % got)
    with p.client() as c:
        c.test.get_collection("hb", write_concern=WriteConcern(w=1)).insert_one({"_id": "after-gossip"})
    t.join(30)
    check("e" not in got and [d["_id"] for d in got["r"]["cursor"]["firstBatch"]] == ["after-gossip"],
          "the waiting read answers with the write: %r" % got)


def by_id(m, cl):
    return cl.members.index(m)


if __name__ == "__main__":
    main()
