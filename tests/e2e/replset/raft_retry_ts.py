"""raft_retry_ts.py -- retryable time-series writes retried on a new primary
after a failover (issues 19/24), on a replica set of three tamgad members on
127.0.0.1, through PyMongo with explicit lsid/txnNumber.

mongod answers a retried time-series write on a new primary with its first
result (its bucket entries carry the measurements' stmtIds and
config.transactions is derived on every member).  Tamga keeps such a reply
whole (config.tamga_retry_replies) and ships it to the followers as a no-op
entry written in the write's own storage transaction, so:
  - an insertMany, an update, a delete, a findAndModify and a bulkWrite on a
    time-series collection are sent once (w: majority), the primary steps
    down (replSetStepDown), and the same lsid/txnNumber re-sent to the new
    primary answers the first reply (n, nModified, value, every bulkWrite
    result), with no measurement written twice;
  - every member holds each kept reply (config.tamga_retry_replies);
  - the old primary, elected again after a second stepdown, answers them
    too (its own copy);
  - a kept reply removed on purpose is really gone: the retry answers 217
    (bulkWrite) and nothing runs again;
  - a bulkWrite whose results pass 16 MB is kept in chunks (rows of
    config.tamga_retry_replies, each with its own no-op entry): every member
    holds them all and the new primary answers every first result.

usage: raft_retry_ts.py path/to/tamgad
"""
import datetime
import os
import sys
import time

from bson.int64 import Int64
from pymongo import MongoClient
from pymongo.errors import OperationFailure

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "txn"))
from raft_cluster import Cluster, check, report  # noqa: E402
from retry_big_reply import all_results, cmd_seq  # noqa: E402
from retry_restart import Conn  # noqa: E402

TAMGAD = sys.argv[1]
ET = 2000   # settings.electionTimeoutMillis
T0 = datetime.datetime(2026, 1, 1)
DB = "rts"


def strip(r):
    """the reply's fields a retry must give back unchanged"""
    drop = {"operationTime", "$clusterTime", "electionId", "opTime", "retriedStmtId", "retriedStmtIds"}
    out = {k: v for k, v in r.items() if k not in drop}
    if "cursor" in out:
        cur = dict(out["cursor"])
        cur.pop("id", None)
        out["cursor"] = cur
    return out


def commands(lsids):
    """(name, db, command) of each write, each on its own session (only a
    session's newest txnNumber can be retried: an older one is 225)"""
    ts = [T0 + datetime.timedelta(seconds=i) for i in range(100, 110)]
    return [
        ("insertMany", DB, {"insert": "m", "documents": [{"t": t, "m": "a", "v": i} for i, t in enumerate(ts)],
                            "ordered": True, "lsid": lsids[0], "txnNumber": Int64(5),
                            "writeConcern": {"w": "majority"}}),
        ("update", DB, {"update": "m", "updates": [{"q": {"m": "b", "v": 2}, "u": {"$inc": {"v": 1000}}}],
                        "lsid": lsids[1], "txnNumber": Int64(5), "writeConcern": {"w": "majority"}}),
        ("delete", DB, {"delete": "m", "deletes": [{"q": {"m": "b", "v": 3}, "limit": 1}],
                        "lsid": lsids[2], "txnNumber": Int64(5), "writeConcern": {"w": "majority"}}),
        ("findAndModify", DB, {"findAndModify": "m", "query": {"m": "b", "v": 4}, "update": {"$inc": {"v": 500}},
                               "new": True, "lsid": lsids[3], "txnNumber": Int64(5),
                               "writeConcern": {"w": "majority"}}),
        ("bulkWrite", "admin", {"bulkWrite": 1, "nsInfo": [{"ns": DB + ".m"}], "ops": [
            {"insert": 0, "document": {"t": T0 + datetime.timedelta(seconds=200), "m": "c", "v": 1}},
            {"insert": 0, "document": {"t": T0 + datetime.timedelta(seconds=201), "m": "c", "v": 2}},
            {"update": 0, "filter": {"m": "b", "v": 5}, "updateMods": {"$inc": {"v": 7}}},
            {"delete": 0, "filter": {"m": "b", "v": 6}},
        ], "lsid": lsids[4], "txnNumber": Int64(5), "writeConcern": {"w": "majority"}}),
    ]


def contents(m):
    with m.client() as c:
        return sorted((d["m"], d["v"], d["t"]) for d in c[DB].m.find({}, {"_id": 0}))


def kept_rows(m, lsid):
    with m.client(readPreference="secondaryPreferred") as c:
        return {d["txnNum"]: d for d in c.config.tamga_retry_replies.find({"_id.id": lsid["id"]})}


def wait_rows(m, lsid, n, timeout=20):
    deadline = time.time() + timeout
    rows = {}
    while time.time() < deadline:
        rows = kept_rows(m, lsid)
        if len(rows) >= n:
            return rows
        time.sleep(0.1)
    return rows


def retry_all(rs, sessions, m, cmds, first, what):
    """re-send cmds through the set's client (to m, its primary now)"""
    check(rs.primary == (m.host.split(":")[0], int(m.host.split(":")[1])) or wait_client_primary(rs, m),
          "%s: the client's primary is %s" % (what, m.host))
    if True:
        for (name, db, cmd), r1, sess in zip(cmds, first, sessions):
            r2 = rs[db].command(cmd, session=sess)
            check(strip(r2) == strip(r1), "%s: the retry of %s answers the first reply:\n%r\n%r" %
                  (what, name, r1, r2))
            if name == "findAndModify":
                check(r2.get("retriedStmtId") == 0, "%s: findAndModify's retriedStmtId %r" % (what, r2))


def wait_client_primary(rs, m, timeout=20):
    want = (m.host.split(":")[0], int(m.host.split(":")[1]))
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            rs.admin.command("ping")
        except Exception:
            pass
        if rs.primary == want:
            return True
        time.sleep(0.2)
    return False


def end_raw(s):
    """a session given txnNumbers by hand never goes back to the driver's
    pool (its own counter would be behind)"""
    s._server_session.mark_dirty()
    s.end_session()


LAST_STEPDOWN = [0.0]


STEPDOWN_SECS = 4   # the period matters not here (e2e.replset_freeze tests it)


def stepdown(p):
    """replSetStepDown STEPDOWN_SECS on p, once the previous stepped-down
    member's period ended (it is electable again: a caught-up secondary
    exists); a period of 10 s made the test wait 21 s for them"""
    time.sleep(max(0.0, LAST_STEPDOWN[0] + STEPDOWN_SECS + 1 - time.time()))
    LAST_STEPDOWN[0] = time.time()
    with p.client() as c:
        try:
            c.admin.command("replSetStepDown", STEPDOWN_SECS, secondaryCatchUpPeriodSecs=STEPDOWN_SECS - 1)
        except OperationFailure as e:
            raise AssertionError("replSetStepDown: %s" % e)
        except Exception:
            pass   # the connection may close as the member steps down


def main():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=ET))
        p = cl.wait_primary()
        rs = MongoClient(cl.uri(), retryWrites=False, serverSelectionTimeoutMS=30000)
        sessions = [rs.start_session() for _ in range(5)]
        with p.client(w="majority") as c:
            c[DB].create_collection("m", timeseries={"timeField": "t", "metaField": "m"})
            c[DB].create_collection("big", timeseries={"timeField": "t", "metaField": "m"})
            c[DB].m.insert_many([{"t": T0 + datetime.timedelta(seconds=i), "m": "b", "v": i} for i in range(10)])
        check(wait_client_primary(rs, p), "the set's client sees the primary")
        cmds = commands([x.session_id for x in sessions])
        first = [rs[db].command(cmd, session=x) for (_, db, cmd), x in zip(cmds, sessions)]
        check(first[0]["n"] == 10, "insertMany: %r" % first[0])
        check(first[1]["n"] == 1 and first[1]["nModified"] == 1, "update: %r" % first[1])
        check(first[2]["n"] == 1, "delete: %r" % first[2])
        check(first[3]["value"]["v"] == 504, "findAndModify: %r" % first[3])
        check(first[4]["nInserted"] == 2 and first[4]["nModified"] == 1 and first[4]["nDeleted"] == 1,
              "bulkWrite: %r" % first[4])
        before = contents(p)
        check(len(before) == 10 + 10 - 1 + 2 - 1, "measurements after the writes: %d" % len(before))

        # a retry on the same primary (in memory) answers the first reply
        retry_all(rs, sessions, p, cmds, first, "same primary")
        check(contents(p) == before, "nothing applied twice on the same primary")

        # every member holds every kept reply
        for m in cl.members:
            for (name, _, _), x in zip(cmds, sessions):
                rows = wait_rows(m, x.session_id, 1)
                check(rows.get(5, {}).get("cmd") in (name, "insert"),
                      "%s holds the kept reply of %s: %r" % (m.host, name, rows))

        # a bulkWrite whose results pass 16 MB (20 upserts naming a 1 MB _id,
        # its ops as an OP_MSG document sequence): its kept reply goes in
        # chunks, each row carried to the followers by its own no-op entry
        big_lsid = {"id": rs.start_session().session_id["id"]}
        big_ops = [{"update": 0, "filter": {"_id": "%04d" % i + "x" * 1000000, "t": T0, "m": "big"},
                    "updateMods": {"$set": {"v": i}}, "upsert": True} for i in range(20)]
        big_cmd = {"bulkWrite": 1, "nsInfo": [{"ns": DB + ".big"}], "lsid": big_lsid, "txnNumber": Int64(1),
                   "writeConcern": {"w": "majority"}}
        conn = Conn(p.port)
        r = cmd_seq(conn, "admin", big_cmd, "ops", big_ops)
        big_first = all_results(conn, r)
        check(r.get("ok") == 1 and r.get("nUpserted") == 20 and len(big_first) == 20, "big bulkWrite: %r" %
              {k: v for k, v in r.items() if k != "cursor"})
        conn.s.close()
        for m in cl.members:
            deadline = time.time() + 20
            while True:
                with m.client(readPreference="secondaryPreferred") as c:
                    rows = list(c.config.tamga_retry_replies.find({"_id.id": big_lsid["id"]}, {"chunks": 1}))
                heads = [x for x in rows if "chunk" not in x["_id"]]
                if (len(heads) == 1 and len(rows) == heads[0].get("chunks", 0) + 1) or time.time() > deadline:
                    break
                time.sleep(0.2)
            check(len(heads) == 1 and heads[0].get("chunks", 0) >= 4 and len(rows) == heads[0]["chunks"] + 1,
                  "%s holds the big reply's chunks: %r" % (m.host, rows))

        # stepdown: the new primary answers every retry with the first reply
        stepdown(p)
        n = cl.wait_primary(among=[m for m in cl.members if m is not p], timeout=30)
        check(wait_client_primary(rs, n), "the set's client sees the new primary")
        conn = Conn(n.port)
        r = cmd_seq(conn, "admin", big_cmd, "ops", big_ops)
        check(r.get("ok") == 1 and r.get("nUpserted") == 20 and all_results(conn, r) == big_first,
              "the big bulkWrite's retry on the new primary answers every first result: %r" %
              {k: v for k, v in r.items() if k != "cursor"})
        conn.s.close()
        with n.client() as c:
            check(c[DB].big.count_documents({}) == 20, "the big bulkWrite applied once")
        t0 = time.time()
        retry_all(rs, sessions, n, cmds, first, "new primary")
        print("retries on the new primary: %.2f s" % (time.time() - t0))
        check(contents(n) == before, "nothing applied twice on the new primary")
        for m in cl.members:
            deadline = time.time() + 20
            while time.time() < deadline and contents(m) != before:
                time.sleep(0.2)
            check(contents(m) == before, "%s holds the same measurements" % m.host)

        # a later txnNumber on the new primary, then back to the old one:
        # its retry answers the reply the new primary kept
        more = ("insertMany", DB, {"insert": "m", "documents": [
            {"t": T0 + datetime.timedelta(seconds=300 + i), "m": "d", "v": i} for i in range(4)],
            "lsid": sessions[0].session_id, "txnNumber": Int64(6), "writeConcern": {"w": "majority"}})
        r6 = rs[DB].command(more[2], session=sessions[0])
        check(r6["n"] == 4, "insertMany on the new primary: %r" % r6)
        after = contents(n)
        stepdown(n)
        back = cl.wait_primary(among=[m for m in cl.members if m is not n], timeout=90)
        check(wait_client_primary(rs, back), "the set's client sees the third primary")
        retry_all(rs, sessions[:1], back, [more], [r6], "after a second failover")
        check(contents(back) == after, "nothing applied twice after the second failover")

        # a kept reply really gone: the retry answers 217, nothing runs again
        sess2 = rs.start_session()
        bw = dict(commands([sess2.session_id] * 5)[4][2])
        rs.admin.command(bw, session=sess2)
        with back.client(w="majority") as c:
            r = c.config.command({"delete": "tamga_retry_replies", "deletes": [
                {"q": {"_id.id": sess2.session_id["id"]}, "limit": 1}], "writeConcern": {"w": "majority"}})
            check(r.get("n") == 1, "the kept reply removed: %r" % r)
        gone_before = contents(back)
        stepdown(back)
        last = cl.wait_primary(among=[m for m in cl.members if m is not back], timeout=90)
        check(wait_client_primary(rs, last), "the set's client sees the last primary")
        try:
            rs.admin.command(bw, session=sess2)
            check(False, "a retry whose kept reply is gone must fail")
        except OperationFailure as e:
            check(e.code == 217, "a gone reply: 217 (%s %s)" % (e.code, e))
        check(contents(last) == gone_before, "nothing applied again when the reply is gone")
        for x in sessions:
            end_raw(x)
        end_raw(sess2)
        rs.close()
    report("raft_retry_ts")


if __name__ == "__main__":
    main()
