"""Exhaust against tamgad: a getMore with exhaustAllowed over a raw socket
(every batch arrives without another request, moreToCome on all but the
last, each reply's responseTo the previous reply's requestID, checksums
kept), an awaitable hello streaming every maxAwaitTimeMS, and a client
that hangs up mid-stream.  (Debian's PyMongo 3.11 sends its exhaust cursors
as legacy OP_QUERY, which mongod 9.0 refuses too, so the stream is driven
by hand here.)  Also a tailable awaitData cursor's stream (an empty batch each
maxTimeMS, then what another client inserts) and a tailable cursor without an
await time, whose stream stops at the end instead of spinning.  Prints "N
passed, N failed".
"""
import struct
import sys
import time

import pymongo

from wire_raw import PORT, connect, crc32c, op_msg, read_msg, recv_exact

MORE_TO_COME, EXHAUST_ALLOWED = 1 << 1, 1 << 16
DOCS = 250

passed = failed = 0


def case(fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print("ok - " + fn.__name__)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("not ok - %s: %r" % (fn.__name__, e))
    return fn


client = pymongo.MongoClient("127.0.0.1", PORT, serverSelectionTimeoutMS=10000)
coll = client.e2e_exhaust.items
coll.drop()
coll.insert_many([{"_id": i, "pad": "x" * 100} for i in range(DOCS)])


def open_cursor(s, batch):
    s.sendall(op_msg({"find": "items", "batchSize": batch, "sort": {"_id": 1}, "$db": "e2e_exhaust"}, rid=1))
    _, _, _, body = read_msg(s)
    return body["cursor"]["id"], [d["_id"] for d in body["cursor"]["firstBatch"]]


def read_checked(s, rid):
    """Read one reply; with a checksum, check it and strip it first."""
    hdr = recv_exact(s, 16)
    n, r, rto, op = struct.unpack("<iiii", hdr)
    rest = recv_exact(s, n - 16)
    flags = struct.unpack("<I", rest[:4])[0]
    assert flags & 1, "reply to a checksummed request has no checksum"
    assert struct.unpack("<I", rest[-4:])[0] == crc32c(hdr + rest[:-4]), "bad checksum"
    return r, rto, flags


@case
def getmore_streams_to_the_end():
    s = connect()
    cid, got = open_cursor(s, 10)
    assert cid != 0
    s.sendall(op_msg({"getMore": cid, "collection": "items", "batchSize": 40, "$db": "e2e_exhaust"},
                     flags=EXHAUST_ALLOWED, rid=7))
    prev, replies = 7, 0
    while True:
        rid, rto, flags, body = read_msg(s)
        replies += 1
        assert rto == prev, "responseTo %d, expected %d" % (rto, prev)
        prev = rid
        assert body["ok"] == 1.0, body
        got += [d["_id"] for d in body["cursor"]["nextBatch"]]
        if not flags & MORE_TO_COME:
            assert body["cursor"]["id"] == 0, "the last reply leaves the cursor open"
            break
        assert body["cursor"]["id"] == cid
    assert got == list(range(DOCS)), "documents %d, out of order or missing" % len(got)
    assert replies in (6, 7), "%d replies for 240 documents in batches of 40" % replies
    # the connection takes requests again
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, rid=99))
    assert read_msg(s)[3]["ok"] == 1.0
    s.close()


@case
def getmore_stream_with_checksums():
    s = connect()
    cid, _ = open_cursor(s, 100)
    s.sendall(op_msg({"getMore": cid, "collection": "items", "batchSize": 60, "$db": "e2e_exhaust"},
                     flags=EXHAUST_ALLOWED, rid=8, checksum=True))
    prev, replies = 8, 0
    while True:
        rid, rto, flags = read_checked(s, prev)
        replies += 1
        assert rto == prev
        prev = rid
        if not flags & MORE_TO_COME:
            break
    assert replies == 3, "%d replies for 150 documents in batches of 60" % replies
    s.close()


@case
def without_exhaust_allowed_one_reply():
    s = connect()
    cid, _ = open_cursor(s, 10)
    s.sendall(op_msg({"getMore": cid, "collection": "items", "batchSize": 10, "$db": "e2e_exhaust"}, rid=9))
    _, rto, flags, body = read_msg(s)
    assert rto == 9 and not flags & MORE_TO_COME and body["cursor"]["id"] == cid
    s.sendall(op_msg({"killCursors": "items", "cursors": [cid], "$db": "e2e_exhaust"}, rid=10))
    assert read_msg(s)[3]["cursorsKilled"] == [cid]
    s.close()


@case
def awaitable_hello_streams():
    before = client.admin.command("serverStatus")["connections"]["current"]
    s = connect()
    s.sendall(op_msg({"hello": 1, "$db": "admin"}, rid=1))
    tv = read_msg(s)[3]["topologyVersion"]
    t0 = time.monotonic()
    s.sendall(op_msg({"hello": 1, "topologyVersion": tv, "maxAwaitTimeMS": 200, "$db": "admin"},
                     flags=EXHAUST_ALLOWED, rid=2))
    prev = 2
    for _ in range(3):
        rid, rto, flags, body = read_msg(s)
        assert rto == prev and flags & MORE_TO_COME and body["isWritablePrimary"] is True
        assert body["topologyVersion"] == tv
        prev = rid
    # each reply waited maxAwaitTimeMS (nothing changes on a standalone)
    assert time.monotonic() - t0 >= 0.5, "replies came faster than maxAwaitTimeMS"
    s.close()  # the client ends a stream by closing the connection
    # the server notices within a maxAwaitTimeMS and ends the stream's thread
    deadline = time.time() + 2
    while time.time() < deadline:
        if client.admin.command("serverStatus")["connections"]["current"] <= before:
            break
        time.sleep(0.05)
    assert client.admin.command("serverStatus")["connections"]["current"] <= before, "stream thread left behind"


@case
def exhaust_hello_needs_max_await():
    s = connect()
    s.sendall(op_msg({"hello": 1, "$db": "admin"}, flags=EXHAUST_ALLOWED, rid=3))
    _, _, flags, body = read_msg(s)
    assert not flags & MORE_TO_COME and body["code"] == 51756, body
    s.close()


def open_tailable(s, name, await_data):
    coll = client.e2e_exhaust[name]
    coll.drop()
    client.e2e_exhaust.create_collection(name, capped=True, size=1 << 20)
    coll.insert_one({"_id": 0})
    s.sendall(op_msg({"find": name, "tailable": True, "awaitData": await_data, "$db": "e2e_exhaust"}, rid=1))
    body = read_msg(s)[3]
    assert [d["_id"] for d in body["cursor"]["firstBatch"]] == [0], body
    return coll, body["cursor"]["id"]


@case
def tailable_await_stream_waits_for_inserts():
    from bson.int64 import Int64
    s = connect()
    coll, cid = open_tailable(s, "tail_await", True)
    s.sendall(op_msg({"getMore": Int64(cid), "collection": "tail_await", "maxTimeMS": 200, "$db": "e2e_exhaust"},
                     flags=EXHAUST_ALLOWED, rid=5))
    t0 = time.monotonic()
    # nothing new: an empty batch after the await time, the stream goes on
    _, _, flags, body = read_msg(s)
    assert body["ok"] == 1.0 and body["cursor"]["nextBatch"] == [] and flags & MORE_TO_COME, body
    assert time.monotonic() - t0 >= 0.15, "an empty batch came before maxTimeMS"
    coll.insert_one({"_id": 1})
    got = []
    for _ in range(5):
        _, _, flags, body = read_msg(s)
        assert flags & MORE_TO_COME and body["cursor"]["id"] == cid, body
        got += [d["_id"] for d in body["cursor"]["nextBatch"]]
        if got:
            break
    assert got == [1], got
    s.close()


@case
def tailable_stream_without_await_stops_at_the_end():
    from bson.int64 import Int64
    s = connect()
    _, cid = open_tailable(s, "tail_plain", False)
    s.sendall(op_msg({"getMore": Int64(cid), "collection": "tail_plain", "$db": "e2e_exhaust"},
                     flags=EXHAUST_ALLOWED, rid=5))
    _, _, flags, body = read_msg(s)
    # an empty batch at once and no moreToCome: the stream would spin
    assert body["cursor"]["nextBatch"] == [] and body["cursor"]["id"] == cid and not flags & MORE_TO_COME, body
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, rid=99))
    assert read_msg(s)[3]["ok"] == 1.0
    s.close()


client.close()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
