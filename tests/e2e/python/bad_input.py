"""Hostile bytes against tamgad over raw sockets.

Garbage, a length over 48 MB or under the header, truncated messages, an
unknown opcode, invalid BSON, unknown document sequences, a payload that
does not decompress, bad checksums, moreToCome, the legacy OP_QUERY
handshake, and 1000 connections opened and dropped at once.  After each,
the server must still answer a ping on a fresh connection.  Prints
"N passed, N failed".  Needs only the `bson` module of python3-pymongo.
"""
import os
import socket
import struct
import sys
import time
import zlib

import bson

from wire_raw import (OP_COMPRESSED, OP_MSG, OP_QUERY, OP_REPLY, PORT, connect, crc32c, frame,  # noqa: F401
                      op_msg, read_reply, recv_exact, seq)


def closed(s):
    """True when the server closed the connection (no reply)."""
    try:
        s.settimeout(10)
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def ping_ok():
    s = connect()
    s.sendall(op_msg({"ping": 1, "$db": "admin"}))
    r = read_reply(s)
    s.close()
    return r is not None and r[2]["ok"] == 1.0


passed = failed = 0


def case(fn):
    global passed, failed
    try:
        fn()
        assert ping_ok(), "server does not answer a ping afterwards"
        passed += 1
        print("ok - " + fn.__name__)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("not ok - %s: %r" % (fn.__name__, e))
    return fn


@case
def garbage_bytes():
    s = connect()
    s.sendall(os.urandom(3) + b"\xff" + os.urandom(2000))
    assert closed(s)
    s.close()


@case
def length_over_48mb():
    s = connect()
    s.sendall(struct.pack("<iiii", 48000001, 1, 0, OP_MSG))
    assert closed(s)
    s.close()


@case
def length_under_header():
    s = connect()
    s.sendall(struct.pack("<iiii", 8, 1, 0, OP_MSG))
    assert closed(s)
    s.close()


@case
def truncated_then_hangup():
    s = connect()
    m = op_msg({"ping": 1, "$db": "admin"})
    s.sendall(m[: len(m) // 2])
    s.close()


@case
def unknown_opcode():
    s = connect()
    s.sendall(frame(2002, b"\x00" * 40))
    assert closed(s)
    s.close()


@case
def invalid_bson_gets_error_reply():
    s = connect()
    body = bytearray(bson.BSON.encode({"ping": 1, "$db": "admin"}))
    body[4] = 0x42  # unknown element type
    payload = struct.pack("<I", 0) + b"\x00" + bytes(body)
    s.sendall(frame(OP_MSG, payload, rid=77))
    r = read_reply(s)
    assert r is not None and r[2]["ok"] == 0 and r[2]["code"] == 22, r
    # the connection is still usable
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, rid=78))
    r = read_reply(s)
    assert r[2]["ok"] == 1.0
    s.close()


@case
def unknown_sequence_identifier():
    s = connect()
    s.sendall(op_msg({"insert": "c", "$db": "e2e_bad"}, sections=seq("bogus", [{"a": 1}])))
    r = read_reply(s)
    assert r[2]["code"] == 40415, r[2]
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, sections=seq("documents", [{"a": 1}])))
    r = read_reply(s)
    assert r[2]["code"] == 40472, r[2]
    s.close()


@case
def bad_compressed_payload():
    s = connect()
    inner = op_msg({"ping": 1, "$db": "admin"})[16:]
    payload = struct.pack("<iiB", OP_MSG, len(inner), 2) + b"not zlib at all" * 3
    s.sendall(frame(OP_COMPRESSED, payload))
    assert closed(s)
    s.close()


@case
def good_zlib_message():
    s = connect()
    inner = op_msg({"ping": 1, "$db": "admin"})[16:]
    payload = struct.pack("<iiB", OP_MSG, len(inner), 2) + zlib.compress(inner)
    s.sendall(frame(OP_COMPRESSED, payload, rid=5))
    hdr = recv_exact(s, 16)
    n, rid, rto, op = struct.unpack("<iiii", hdr)
    assert op == OP_COMPRESSED and rto == 5, (op, rto)
    rest = recv_exact(s, n - 16)
    orig, usize, cid = struct.unpack("<iiB", rest[:9])
    assert orig == OP_MSG and cid == 2
    plain = zlib.decompress(rest[9:])
    assert len(plain) == usize
    assert bson.BSON(plain[5:]).decode()["ok"] == 1.0
    s.close()


def zlib_ping(rid):
    inner = op_msg({"ping": 1, "$db": "admin"}, rid=rid)[16:]
    return frame(OP_COMPRESSED, struct.pack("<iiB", OP_MSG, len(inner), 2) + zlib.compress(inner), rid)


@case
def compression_negotiated_by_hello():
    s = connect()
    s.sendall(op_msg({"hello": 1, "compression": ["zlib", "nope"], "$db": "admin"}, rid=40))
    doc = read_reply(s)[2]
    assert doc.get("compression") == ["zlib"], doc
    s.sendall(op_msg({"hello": 1, "$db": "admin"}, rid=41))
    assert read_reply(s)[2].get("compression") == ["zlib"], "negotiated list repeated"
    s.sendall(zlib_ping(42))
    op, flags, doc, raw = read_reply(s)
    assert op == OP_COMPRESSED and struct.unpack("<iiii", raw[:16])[2] == 42, op
    s.close()


@case
def compression_not_negotiated():
    s = connect()
    s.sendall(op_msg({"hello": 1, "$db": "admin"}, rid=50))
    assert "compression" not in read_reply(s)[2]
    s.sendall(zlib_ping(51))
    assert closed(s), "a compressed message after a hello without compression ends the connection"
    s.close()


@case
def checksums():
    s = connect()
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, checksum=True, rid=9))
    op, flags, doc, raw = read_reply(s)
    assert doc["ok"] == 1.0 and flags & 1, flags
    assert struct.unpack("<I", raw[-4:])[0] == crc32c(raw[:-4]), "reply checksum"
    bad = bytearray(op_msg({"ping": 1, "$db": "admin"}, checksum=True, rid=10))
    bad[-1] ^= 0xFF
    s.sendall(bytes(bad))
    op, flags, doc, raw = read_reply(s)
    assert doc["code"] == 288, doc
    s.close()


@case
def more_to_come():
    s = connect()
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, flags=2, rid=20))
    s.sendall(op_msg({"noSuchCommand": 1, "$db": "admin"}, flags=2, rid=21))
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, rid=22))
    hdr = recv_exact(s, 16)
    assert struct.unpack("<iiii", hdr)[2] == 22, "only the last request is answered"
    recv_exact(s, struct.unpack("<i", hdr[:4])[0] - 16)
    s.close()


@case
def legacy_op_query():
    s = connect()
    q = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + bson.BSON.encode({"isMaster": 1})
    s.sendall(frame(OP_QUERY, q, rid=30))
    op, flags, doc, raw = read_reply(s)
    assert op == OP_REPLY and doc["ismaster"] is True, doc
    q = struct.pack("<i", 0) + b"test.c\x00" + struct.pack("<ii", 0, -1) + bson.BSON.encode({"a": 1})
    s.sendall(frame(OP_QUERY, q, rid=31))
    op, flags, doc, raw = read_reply(s)
    assert op == OP_REPLY and doc["code"] == 352, doc
    s.close()


@case
def no_db_and_two_bodies():
    s = connect()
    s.sendall(op_msg({"ping": 1}))
    assert read_reply(s)[2]["code"] == 40571
    s.sendall(op_msg({"ping": 1, "$db": "admin"}, sections=b"\x00" + bson.BSON.encode({"x": 1})))
    assert read_reply(s)[2]["code"] == 40430
    s.close()


@case
def thousand_connections():
    socks = []
    for _ in range(1000):
        try:
            socks.append(connect())
        except OSError:
            break
    assert len(socks) >= 900, len(socks)
    for s in socks[::2]:
        s.sendall(op_msg({"ping": 1, "$db": "admin"}))
    for s in socks:
        s.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        s = connect()
        s.sendall(op_msg({"serverStatus": 1, "$db": "admin"}))
        cur = read_reply(s)[2]["connections"]["current"]
        s.close()
        if cur <= 2:
            break
        time.sleep(0.2)
    assert cur <= 2, "connections still open: %d" % cur


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
