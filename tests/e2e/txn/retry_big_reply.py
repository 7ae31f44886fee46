"""A retryable bulkWrite on a time-series collection whose results pass 16 MB
(issue 19), retried with the same lsid/txnNumber against a `tamgad --replSet`
member: in memory, after kill -9 and a restart, and once a chunk of its kept
reply is removed on purpose.

mongod keeps no reply: a retry answers each executed statement from its
oplog entry (bulk_write.cpp's per-op checkStatementExecuted), whatever the
reply's size, so its retry answers the first result of every op.  Tamga
keeps a time-series bulkWrite's reply whole (its entries are the buckets');
one past 8 MB is kept in chunks of config.tamga_retry_replies rows, each
carried by its own no-op entry, since one row (or one oplog entry) cannot
pass 16 MB.  Before, such a reply was not kept at all and the retry after a
restart answered 217 IncompleteTransactionHistory.

The bulkWrite is 24 upserts whose filters name a 1 MB string _id (a request
of 24 MB, so its ops go as an OP_MSG document sequence, as drivers send
them); each result carries its upserted _id: 24 MB of results, a first
batch and getMores.  Raw OP_MSG, so the lsid is ours.
    python3 retry_big_reply.py path/to/tamgad
Prints "N passed, N failed".
"""
import datetime
import os
import struct
import sys
import tempfile

import bson
from bson.int64 import Int64

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "replset"))
from raft_cluster import Member, free_ports  # noqa: E402
from retry_restart import bulk_counts, check, lsid, start  # noqa: E402
import retry_restart  # noqa: E402

TAMGAD = sys.argv[1]
T0 = datetime.datetime(2026, 1, 1)
N, SIZE = 24, 1000000


def cmd_seq(conn, db, doc, name, docs):
    """doc as the body section, docs as a document sequence `name`."""
    doc = dict(doc)
    doc["$db"] = db
    body = bson.encode(doc)
    seq = b"".join(bson.encode(d) for d in docs)
    ident = name.encode() + b"\x00"
    payload = b"\x00" + body + b"\x01" + struct.pack("<i", 4 + len(ident) + len(seq)) + ident + seq
    conn.req += 1
    conn.s.sendall(struct.pack("<iiiiI", 16 + 4 + len(payload), conn.req, 0, 2013, 0) + payload)
    head = conn._read(16)
    length = struct.unpack("<i", head[:4])[0]
    return bson.decode(conn._read(length - 16)[5:])


def all_results(conn, r):
    """Every result of a bulkWrite reply: its first batch and the getMores."""
    cur = r.get("cursor", {})
    items = list(cur.get("firstBatch", []))
    cid = cur.get("id", 0)
    while cid:
        more = conn.cmd("admin", {"getMore": cid, "collection": "$cmd.bulkWrite"})
        items += more.get("cursor", {}).get("nextBatch", [])
        cid = more.get("cursor", {}).get("id", 0)
    return items


def main():
    work = tempfile.mkdtemp(prefix="retry-big-", dir=os.environ.get("TMPDIR"))
    member = Member(TAMGAD, free_ports(1)[0], os.path.join(work, "db"), "rs0", ["--replSetAutoInitiate"])
    c = start(member)
    try:
        c.cmd("t", {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m"}})
        ops = [{"update": 0, "filter": {"_id": "%04d" % i + "x" * SIZE, "t": T0, "m": i},
                "updateMods": {"$set": {"v": i}}, "upsert": True} for i in range(N)]
        cmd = {"bulkWrite": 1, "nsInfo": [{"ns": "t.ts"}], "lsid": lsid(500), "txnNumber": Int64(1),
               "writeConcern": {"w": 1, "j": True}}
        r = cmd_seq(c, "admin", cmd, "ops", ops)
        first = all_results(c, r)
        counts = bulk_counts(r)
        check("the bulkWrite applied: 24 upserts, its results past 16 MB",
              r.get("ok") == 1 and counts == (0, 0, 0, 0, N, 0) and len(first) == N
              and sum(len(bson.encode(i)) for i in first) > 16 * 1024 * 1024, (r.get("errmsg"), counts))
        want = [(i.get("idx"), i.get("n"), i.get("nModified"), i.get("upserted", {}).get("_id", "")[:4])
                for i in first]
        check("... every op's result in order", want == [(k, 1, 0, "%04d" % k) for k in range(N)], want[:3])
        rows = c.cmd("config", {"find": "tamga_retry_replies", "filter": {"_id.id": lsid(500)["id"]},
                                "projection": {"_id": 1, "chunks": 1, "txnNum": 1}})["cursor"]["firstBatch"]
        heads = [x for x in rows if "chunk" not in x["_id"]]
        check("the kept reply is in chunks: the session's row names them, each chunk a row",
              len(heads) == 1 and heads[0].get("chunks", 0) >= 4 and len(rows) == heads[0]["chunks"] + 1
              and all(x["txnNum"] == 1 for x in rows), rows)

        r = cmd_seq(c, "admin", cmd, "ops", ops)
        again = all_results(c, r)
        check("retried at once: the first results again", r.get("ok") == 1 and bulk_counts(r) == counts
              and again == first, (r.get("errmsg"), bulk_counts(r)))

        member.kill9()
        c = start(member)
        r = cmd_seq(c, "admin", cmd, "ops", ops)
        again = all_results(c, r)
        check("retried after kill -9 and a restart: the first results, not 217",
              r.get("ok") == 1 and bulk_counts(r) == counts and again == first,
              (r.get("code"), r.get("errmsg", "")[:120], bulk_counts(r)))
        n = c.cmd("t", {"count": "ts"}).get("n")
        check("... nothing applied twice", n == N, n)

        # a chunk gone: the reply cannot be put together, and the retry
        # answers 217 rather than a part of the results (nothing runs again)
        gone = c.cmd("config", {"delete": "tamga_retry_replies", "deletes": [
            {"q": {"_id.id": lsid(500)["id"], "_id.chunk": 2}, "limit": 1}], "writeConcern": {"w": 1, "j": True}})
        check("a chunk row removed on purpose", gone.get("n") == 1, gone)
        member.kill9()
        c = start(member)
        r = cmd_seq(c, "admin", cmd, "ops", ops)
        check("... then the retry answers 217 IncompleteTransactionHistory", r.get("code") == 217, r)
        n = c.cmd("t", {"count": "ts"}).get("n")
        check("... and applies nothing", n == N, n)

        # the session's next txnNumber keeps a small reply whole again
        small = dict(cmd, txnNumber=Int64(2))
        ops2 = [{"insert": 0, "document": {"t": T0, "m": 99, "v": 1}}]
        r1 = cmd_seq(c, "admin", small, "ops", ops2)
        r2 = cmd_seq(c, "admin", small, "ops", ops2)
        check("a later txnNumber's small reply kept whole and answered",
              r1.get("ok") == 1 and bulk_counts(r1) == bulk_counts(r2) == (0, 1, 0, 0, 0, 0)
              and c.cmd("t", {"count": "ts"}).get("n") == N + 1, (r1, r2))
    finally:
        member.stop()
    print("%d passed, %d failed" % (retry_restart.passed, retry_restart.failed))
    return 1 if retry_restart.failed else 0


if __name__ == "__main__":
    sys.exit(main())
