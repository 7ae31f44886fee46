"""Retryable writes retried after kill -9 and a restart of a `tamgad --replSet`
(issue 16): each write, sent with an lsid and a txnNumber (as a driver's
retryable write) and acknowledged with {j: true}, is retried on a new
connection to the restarted server with the same lsid and txnNumber, and
must answer its original reply without being applied again: an insert
(n: 1), an update ($inc: n and nModified 1, the document incremented
once), an upsert (upserted _id), and findAndModify (value from the image
mongod 5.1+ keeps in config.image_collection).  Batches too, per statement
(mongod's history read back from the oplog chain the config.transactions
row starts): an insert batch whose second document failed, an update batch
with an upsert, a delete batch -- each retried after the restart answers
the statements it executed from their entries (retriedStmtIds) and runs
only the others; the admin bulkWrite likewise (mongod's per-op
checkStatementExecuted).  A findAndModify with `fields` retried after the
restart answers the stored image unprojected with retriedStmtId, as mongod.
Last, with `--oplogSize 1`: a batch whose oplog entries truncation removed
is retried after a restart and answers 217 IncompleteTransactionHistory
(nothing applied twice).  A time-series findAndModify (an upsert) and
bulkWrite (one op, and three ops whose first reply's cursor had more than
one batch), kept whole in config.tamga_retry_replies with the write,
retried after the restart answer their first replies (the three ops'
results as a new cursor under the retry's batchSize); one whose kept reply
was removed answers mongod's 5637601, never a reply rebuilt from a
bucket's entry.  Raw OP_MSG, so the lsid is ours and not a driver's
implicit session.

    python3 retry_restart.py path/to/tamgad

Prints "N passed, N failed".
"""
import datetime
import os
import socket
import struct
import sys
import tempfile
import time
import uuid

import bson
from bson.binary import Binary, UUID_SUBTYPE
from bson.int64 import Int64

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "replset"))
from raft_cluster import Member, free_ports  # noqa: E402

TAMGAD = sys.argv[1]
passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, (": " + str(why)) if why else ""))


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.req = 0

    def cmd(self, db, doc):
        doc = dict(doc)
        doc["$db"] = db
        body = bson.encode(doc)
        self.req += 1
        msg = struct.pack("<iiiiI", 16 + 4 + 1 + len(body), self.req, 0, 2013, 0) + b"\x00" + body
        self.s.sendall(msg)
        head = self._read(16)
        length = struct.unpack("<i", head[:4])[0]
        rest = self._read(length - 16)
        return bson.decode(rest[5:])

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise RuntimeError("connection closed")
            out += chunk
        return out


def start(member):
    member.start()
    for _ in range(300):
        if member.proc.poll() is not None:
            raise RuntimeError("tamgad exited with %s" % member.proc.returncode)
        try:
            c = Conn(member.port)
            if c.cmd("admin", {"hello": 1}).get("isWritablePrimary"):
                return c
        except (OSError, RuntimeError):
            pass
        time.sleep(0.1)
    raise RuntimeError("no primary")


def lsid(n):
    return {"id": Binary(uuid.UUID(int=n).bytes, UUID_SUBTYPE)}


# batches: (name, lsid number, command, first reply check, retry reply check)
BATCHES = [
    ("insert batch", 200, {"insert": "b", "ordered": False,
                           "documents": [{"_id": 30, "n": 0}, {"_id": 31}, {"_id": 32}]},
     lambda r: r.get("n") == 2 and [e["index"] for e in r.get("writeErrors", [])] == [1],
     lambda r: r.get("n") == 3 and "writeErrors" not in r and r.get("retriedStmtIds") == [0, 2]),
    ("update batch", 201, {"update": "b", "updates": [{"q": {"_id": 30}, "u": {"$inc": {"n": 1}}},
                                                      {"q": {"_id": 40}, "u": {"$set": {"u": 1}}, "upsert": True},
                                                      {"q": {"_id": 99}, "u": {"$set": {"z": 1}}}]},
     lambda r: (r.get("n"), r.get("nModified"), r.get("upserted")) == (2, 1, [{"index": 1, "_id": 40}]),
     lambda r: (r.get("n"), r.get("nModified"), r.get("upserted"), r.get("retriedStmtIds")) ==
     (2, 1, [{"index": 1, "_id": 40}], [0, 1])),
    ("delete batch", 202, {"delete": "b", "deletes": [{"q": {"_id": 32}, "limit": 1},
                                                      {"q": {"_id": 40}, "limit": 1}]},
     lambda r: r.get("n") == 2,
     lambda r: r.get("n") == 2 and r.get("retriedStmtIds") == [0, 1]),
]

# the admin bulkWrite: op 1 fails the first time (its _id is taken), then
# is free for the retry; ops 0, 2, 3, 4 are answered from their entries
BULK = {"bulkWrite": 1, "nsInfo": [{"ns": "t.bw"}], "ordered": False,
        "ops": [{"insert": 0, "document": {"_id": 1, "n": 0}}, {"insert": 0, "document": {"_id": 2}},
                {"update": 0, "filter": {"_id": 1}, "updateMods": {"$inc": {"n": 1}}},
                {"update": 0, "filter": {"_id": 5}, "updateMods": {"$set": {"u": 1}}, "upsert": True},
                {"delete": 0, "filter": {"_id": 3}}]}
FAM_FIELDS = {"findAndModify": "bw", "query": {"_id": 1}, "update": {"$inc": {"n": 10}}, "new": True,
              "fields": {"n": 0}}
T0 = datetime.datetime(2026, 1, 1)
TS_FAM = {"findAndModify": "ts", "query": {"k": 2}, "update": {"$set": {"t": T0, "m": 1, "v": 5}},
          "upsert": True, "new": True}
TS_BULK = {"bulkWrite": 1, "nsInfo": [{"ns": "t.ts"}],
           "ops": [{"update": 0, "filter": {"k": 1}, "updateMods": {"$inc": {"v": 1}}}]}
TS_BULK3 = {"bulkWrite": 1, "nsInfo": [{"ns": "t.ts"}], "cursor": {"batchSize": 1},
            "ops": [{"insert": 0, "document": {"t": T0, "m": 3, "k": 3, "v": 0}},
                    {"update": 0, "filter": {"k": 3}, "updateMods": {"$inc": {"v": 7}}},
                    {"delete": 0, "filter": {"k": 9}}]}
TS_FAM_GONE = {"findAndModify": "ts", "query": {"k": 1}, "update": {"$inc": {"w": 1}}, "new": True}


def bulk_counts(r):
    return tuple(r.get(k) for k in ("nErrors", "nInserted", "nMatched", "nModified", "nUpserted", "nDeleted"))


# (name, command, what its reply must hold)
WRITES = [
    ("insert", {"insert": "r", "documents": [{"_id": 1, "n": 0}]}, lambda r: r.get("n") == 1),
    ("update", {"update": "r", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": 1}}}]},
     lambda r: r.get("n") == 1 and r.get("nModified") == 1),
    ("upsert", {"update": "r", "updates": [{"q": {"_id": 2}, "u": {"$set": {"u": 1}}, "upsert": True}]},
     lambda r: r.get("n") == 1 and r.get("upserted", [{}])[0].get("_id") == 2),
    ("findAndModify", {"findAndModify": "r", "query": {"_id": 1}, "update": {"$inc": {"n": 10}}, "new": True},
     lambda r: r.get("value", {}).get("n") == 11 and r.get("lastErrorObject", {}).get("updatedExisting") is True),
]


def main():
    work = tempfile.mkdtemp(prefix="retry-restart-", dir=os.environ.get("TMPDIR"))
    member = Member(TAMGAD, free_ports(1)[0], os.path.join(work, "db"), "rs0",
                    ["--replSetAutoInitiate", "--oplogSize", "1"])
    c = start(member)
    try:
        for i, (name, cmd, good) in enumerate(WRITES):
            full = dict(cmd, lsid=lsid(100 + i), txnNumber=Int64(1), writeConcern={"w": 1, "j": True})
            r = c.cmd("t", full)
            check("%s applied" % name, r.get("ok") == 1 and good(r), r)
        # the insert batch's second document fails the first time (its _id
        # is taken), then is free for the retry
        c.cmd("t", {"insert": "b", "documents": [{"_id": 31, "pre": 1}]})
        for name, n, cmd, first, _ in BATCHES:
            r = c.cmd("t", dict(cmd, lsid=lsid(n), txnNumber=Int64(3), writeConcern={"w": 1, "j": True}))
            check("%s applied" % name, r.get("ok") == 1 and first(r), r)
            if n == 200:
                c.cmd("t", {"delete": "b", "deletes": [{"q": {"_id": 31}, "limit": 1}],
                            "writeConcern": {"w": 1, "j": True}})
        c.cmd("t", {"insert": "bw", "documents": [{"_id": 2}, {"_id": 3}]})
        r = c.cmd("admin", dict(BULK, lsid=lsid(210), txnNumber=Int64(4), writeConcern={"w": 1, "j": True}))
        check("bulkWrite applied", r.get("ok") == 1 and bulk_counts(r) == (1, 1, 1, 1, 1, 1)
              and r["cursor"]["firstBatch"][1].get("code") == 11000, r)
        c.cmd("t", {"delete": "bw", "deletes": [{"q": {"_id": 2}, "limit": 1}], "writeConcern": {"w": 1, "j": True}})
        r = c.cmd("t", dict(FAM_FIELDS, lsid=lsid(211), txnNumber=Int64(5), writeConcern={"w": 1, "j": True}))
        check("findAndModify with fields applied", r.get("ok") == 1 and "n" not in r.get("value", {"n": 0}), r)
        # time-series: findAndModify (an upsert: a new bucket's 'i' entry)
        # and bulkWrite kept whole; after the restart that reply is gone
        c.cmd("t", {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}})
        c.cmd("t", {"insert": "ts", "documents": [{"t": T0, "m": 1, "k": 1, "v": 0}]})
        r = c.cmd("t", dict(TS_FAM, lsid=lsid(220), txnNumber=Int64(1), writeConcern={"w": 1, "j": True}))
        check("time-series findAndModify upsert applied", r.get("ok") == 1 and r["value"]["v"] == 5, r)
        ts_first = r
        r = c.cmd("admin", dict(TS_BULK, lsid=lsid(221), txnNumber=Int64(1), writeConcern={"w": 1, "j": True}))
        check("time-series bulkWrite applied", r.get("ok") == 1 and r.get("nModified") == 1, r)
        bulk_first = r
        r = c.cmd("admin", dict(TS_BULK3, lsid=lsid(222), txnNumber=Int64(1), writeConcern={"w": 1, "j": True}))
        check("time-series bulkWrite of three ops applied, its cursor in more than one batch",
              r.get("ok") == 1 and bulk_counts(r) == (0, 1, 1, 1, 0, 0) and r["cursor"]["id"] != 0
              and len(r["cursor"]["firstBatch"]) == 1, r)
        bulk3_counts = bulk_counts(r)
        r = c.cmd("t", dict(TS_FAM_GONE, lsid=lsid(223), txnNumber=Int64(1), writeConcern={"w": 1, "j": True}))
        check("time-series findAndModify applied (its kept reply removed next)", r.get("ok") == 1, r)
        r = c.cmd("config", {"delete": "tamga_retry_replies", "deletes": [{"q": {"_id.id": lsid(223)["id"]}, "limit": 1}],
                             "writeConcern": {"w": 1, "j": True}})
        check("the kept reply is a document of config.tamga_retry_replies", r.get("n") == 1, r)
        member.kill9()
        c = start(member)
        r = c.cmd("t", dict(TS_FAM, lsid=lsid(220), txnNumber=Int64(1)))
        check("time-series findAndModify retried after kill -9 answers its first reply (retriedStmtId)",
              r.get("ok") == 1 and r.get("value") == ts_first.get("value")
              and r.get("lastErrorObject") == ts_first.get("lastErrorObject") and r.get("retriedStmtId") == 0, r)
        r = c.cmd("admin", dict(TS_BULK, lsid=lsid(221), txnNumber=Int64(1)))
        check("time-series bulkWrite retried after kill -9 answers its first reply",
              r.get("ok") == 1 and bulk_counts(r) == bulk_counts(bulk_first)
              and r["cursor"]["firstBatch"] == bulk_first["cursor"]["firstBatch"], r)
        r = c.cmd("admin", dict(TS_BULK3, lsid=lsid(222), txnNumber=Int64(1)))
        ok = r.get("ok") == 1 and bulk_counts(r) == bulk3_counts and len(r["cursor"]["firstBatch"]) == 1
        items = list(r.get("cursor", {}).get("firstBatch", []))
        if ok and r["cursor"]["id"] != 0:
            more = c.cmd("admin", {"getMore": r["cursor"]["id"], "collection": "$cmd.bulkWrite"})
            items += more.get("cursor", {}).get("nextBatch", [])
        check("... the three-op bulkWrite's retry: every result again, as a new cursor of batchSize 1",
              ok and [i.get("idx") for i in items] == [0, 1, 2] and [i.get("n") for i in items] == [1, 1, 0], (r, items))
        r = c.cmd("t", dict(TS_FAM_GONE, lsid=lsid(223), txnNumber=Int64(1)))
        check("a time-series findAndModify whose kept reply is gone answers 5637601 (mongod's, image gone)",
              r.get("code") == 5637601, r)
        r = c.cmd("t", dict(TS_FAM, lsid=lsid(220), txnNumber=Int64(0)))
        check("... an older txnNumber than the kept reply's is too old (225)", r.get("code") == 225, r)
        r = c.cmd("t", {"find": "ts", "sort": {"k": 1}, "projection": {"_id": 0, "k": 1, "v": 1, "w": 1}})
        docs = r["cursor"]["firstBatch"]
        check("... and nothing of them applied twice",
              docs == [{"k": 1, "v": 1, "w": 1}, {"k": 2, "v": 5}, {"k": 3, "v": 7}], docs)
        r = c.cmd("admin", dict(BULK, lsid=lsid(210), txnNumber=Int64(4)))
        check("bulkWrite retried after kill -9: ops that ran from the oplog, the failed one runs",
              r.get("ok") == 1 and bulk_counts(r) == (0, 2, 1, 1, 1, 1) and r.get("retriedStmtIds") == [0, 2, 3, 4]
              and r["cursor"]["firstBatch"][3].get("upserted") == {"_id": 5}, r)
        r = c.cmd("t", dict(FAM_FIELDS, lsid=lsid(211), txnNumber=Int64(5)))
        check("findAndModify with fields retried after kill -9: the image unprojected, retriedStmtId (mongod's)",
              r.get("ok") == 1 and r.get("value") == {"_id": 1, "n": 11} and r.get("retriedStmtId") == 0, r)
        r = c.cmd("t", {"find": "bw", "sort": {"_id": 1}})
        docs = r["cursor"]["firstBatch"]
        check("no op of the bulkWrite applied twice", docs == [{"_id": 1, "n": 11}, {"_id": 2}, {"_id": 5, "u": 1}],
              docs)
        for i, (name, cmd, good) in enumerate(WRITES):
            full = dict(cmd, lsid=lsid(100 + i), txnNumber=Int64(1))
            r = c.cmd("t", full)
            check("%s retried after kill -9 answers its reply" % name, r.get("ok") == 1 and good(r), r)
        r = c.cmd("t", {"find": "r", "sort": {"_id": 1}})
        docs = r["cursor"]["firstBatch"]
        check("nothing applied twice", docs == [{"_id": 1, "n": 11}, {"_id": 2, "u": 1}], docs)
        for name, n, cmd, _, again in BATCHES:
            r = c.cmd("t", dict(cmd, lsid=lsid(n), txnNumber=Int64(3)))
            check("%s retried after kill -9: executed statements from the oplog, the rest run" % name,
                  r.get("ok") == 1 and again(r), r)
        r = c.cmd("t", {"find": "b", "sort": {"_id": 1}})
        docs = r["cursor"]["firstBatch"]
        check("no statement of a batch applied twice", docs == [{"_id": 30, "n": 1}, {"_id": 31}], docs)
        r = c.cmd("t", {"insert": "r", "documents": [{"_id": 1}], "lsid": lsid(100), "txnNumber": Int64(0)})
        check("an older txnNumber is too old (225)", r.get("code") == 225, r)

        # truncation past a session's history: its retry after a restart
        # cannot tell what ran and answers 217, applying nothing
        trunc = {"insert": "tr", "documents": [{"_id": 1}, {"_id": 2}]}
        r = c.cmd("t", dict(trunc, lsid=lsid(300), txnNumber=Int64(1), writeConcern={"w": 1, "j": True}))
        check("a batch before truncation applied", r.get("ok") == 1 and r.get("n") == 2, r)
        first = c.cmd("local", {"find": "oplog.rs", "filter": {"ns": "t.tr"}})["cursor"]["firstBatch"][0]["ts"]
        pad = "x" * 60000
        gone = False
        for k in range(200):   # at most ~12 MB of filler; the oplog holds 1 MB
            c.cmd("t", {"insert": "filler", "documents": [{"_id": k, "p": pad}]})
            if k % 20 == 19:
                time.sleep(1.2)   # the truncation pass runs once a second
                oldest = c.cmd("local", {"find": "oplog.rs", "limit": 1})["cursor"]["firstBatch"][0]["ts"]
                if oldest > first:
                    gone = True
                    break
        check("truncation removed the batch's entries", gone)
        c.cmd("t", {"insert": "x", "documents": [{}], "writeConcern": {"w": 1, "j": True}})
        member.kill9()
        c = start(member)
        r = c.cmd("t", dict(trunc, lsid=lsid(300), txnNumber=Int64(1)))
        check("the batch retried after truncation and a restart answers 217 IncompleteTransactionHistory",
              r.get("code") == 217 and r.get("codeName") == "IncompleteTransactionHistory", r)
        r = c.cmd("t", {"count": "tr"})
        check("... and applies nothing", r.get("n") == 2, r)
    finally:
        member.stop()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
