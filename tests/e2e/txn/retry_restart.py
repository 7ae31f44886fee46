"""Retryable writes retried after kill -9 and a restart of a `tamgad --replSet`
(issue 16): each write, sent with an lsid and a txnNumber (as a driver's
retryable write) and acknowledged with {j: true}, is retried on a new
connection to the restarted server with the same lsid and txnNumber, and
must answer its original reply without being applied again: an insert
(n: 1), an update ($inc: n and nModified 1, the document incremented
once), an upsert (upserted _id), and findAndModify (value from the image
mongod 5.1+ keeps in config.image_collection).  Raw OP_MSG, so the lsid is
ours and not a driver's implicit session.

    python3 retry_restart.py path/to/tamgad

Prints "N passed, N failed".
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid

import bson
from bson.binary import Binary, UUID_SUBTYPE
from bson.int64 import Int64

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


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


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


def start(dbpath, port, log):
    proc = subprocess.Popen([TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", dbpath,
                             "--nounixsocket", "--replSet", "rs0", "--replSetAutoInitiate"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError("tamgad exited with %s" % proc.returncode)
        try:
            c = Conn(port)
            if c.cmd("admin", {"hello": 1}).get("isWritablePrimary"):
                return proc, c
        except (OSError, RuntimeError):
            pass
        time.sleep(0.1)
    raise RuntimeError("no primary")


def lsid(n):
    return {"id": Binary(uuid.UUID(int=n).bytes, UUID_SUBTYPE)}


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
    dbpath = os.path.join(work, "db")
    os.mkdir(dbpath)
    log = open(os.path.join(work, "tamgad.log"), "ab")
    port = free_port()
    proc, c = start(dbpath, port, log)
    try:
        for i, (name, cmd, good) in enumerate(WRITES):
            full = dict(cmd, lsid=lsid(100 + i), txnNumber=Int64(1), writeConcern={"w": 1, "j": True})
            r = c.cmd("t", full)
            check("%s applied" % name, r.get("ok") == 1 and good(r), r)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc, c = start(dbpath, port, log)
        for i, (name, cmd, good) in enumerate(WRITES):
            full = dict(cmd, lsid=lsid(100 + i), txnNumber=Int64(1))
            r = c.cmd("t", full)
            check("%s retried after kill -9 answers its reply" % name, r.get("ok") == 1 and good(r), r)
        r = c.cmd("t", {"find": "r", "sort": {"_id": 1}})
        docs = r["cursor"]["firstBatch"]
        check("nothing applied twice", docs == [{"_id": 1, "n": 11}, {"_id": 2, "u": 1}], docs)
        r = c.cmd("t", {"insert": "r", "documents": [{"_id": 1}], "lsid": lsid(100), "txnNumber": Int64(0)})
        check("an older txnNumber is too old (225)", r.get("code") == 225, r)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
