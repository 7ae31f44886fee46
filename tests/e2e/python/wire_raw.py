"""Raw OP_MSG over a socket for the end-to-end tests (bad_input.py,
exhaust.py): framing, checksums, document sequences, reading replies with
their header ids.  Needs only the `bson` module of python3-pymongo.
"""
import os
import socket
import struct

import bson

PORT = int(os.environ.get("TAMGA_PORT", "27017"))
OP_REPLY, OP_QUERY, OP_COMPRESSED, OP_MSG = 1, 2004, 2012, 2013

_crc_table = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _crc_table.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _crc_table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def connect():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
    return s


def frame(opcode, payload, rid=1, length=None):
    n = 16 + len(payload) if length is None else length
    return struct.pack("<iiii", n, rid, 0, opcode) + payload


def op_msg(doc, flags=0, sections=b"", rid=1, checksum=False):
    body = struct.pack("<I", flags | (1 if checksum else 0)) + b"\x00" + bson.BSON.encode(doc) + sections
    m = frame(OP_MSG, body, rid, 16 + len(body) + (4 if checksum else 0))
    if checksum:
        m += struct.pack("<I", crc32c(m))
    return m


def seq(name, docs):
    inner = name.encode() + b"\x00" + b"".join(bson.BSON.encode(d) for d in docs)
    return b"\x01" + struct.pack("<i", 4 + len(inner)) + inner


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_msg(s):
    """(requestID, responseTo, flagBits, body) of one OP_MSG reply, or None when the server closed."""
    hdr = recv_exact(s, 16)
    if hdr is None:
        return None
    n, rid, rto, op = struct.unpack("<iiii", hdr)
    rest = recv_exact(s, n - 16)
    if rest is None or op != OP_MSG:
        return None
    flags = struct.unpack("<I", rest[:4])[0]
    blen = struct.unpack("<i", rest[5:9])[0]
    return rid, rto, flags, bson.BSON(rest[5:5 + blen]).decode()


def read_reply(s):
    """(opcode, flags, doc, raw) or None when the server closed."""
    hdr = recv_exact(s, 16)
    if hdr is None:
        return None
    n, rid, rto, op = struct.unpack("<iiii", hdr)
    rest = recv_exact(s, n - 16)
    if rest is None:
        return None
    if op == OP_MSG:
        flags = struct.unpack("<I", rest[:4])[0]
        blen = struct.unpack("<i", rest[5:9])[0]
        return op, flags, bson.BSON(rest[5:5 + blen]).decode(), hdr + rest
    if op == OP_REPLY:
        blen = struct.unpack("<i", rest[20:24])[0]
        return op, 0, bson.BSON(rest[20:20 + blen]).decode(), hdr + rest
    return op, 0, None, hdr + rest


