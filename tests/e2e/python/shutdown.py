"""The shutdown command: refused outside admin, then stops tamgad cleanly
(the connection closes without a reply, as with mongod, and the port stops
listening), and a tailable awaitData getMore waiting for inserts ends with
11600 InterruptedAtShutdown instead of holding it up.  with_tamgad.sh then
checks that tamgad exited with status 0."""
import os
import socket
import struct
import sys
import time

import bson
import bson.int64

PORT = int(os.environ["TAMGA_PORT"])


def op_msg(doc, rid=1):
    body = struct.pack("<I", 0) + b"\x00" + bson.BSON.encode(doc)
    return struct.pack("<iiii", 16 + len(body), rid, 0, 2013) + body


def reply(s):
    hdr = s.recv(16, socket.MSG_WAITALL)
    if len(hdr) < 16:
        return None
    n = struct.unpack("<i", hdr[:4])[0]
    rest = s.recv(n - 16, socket.MSG_WAITALL)
    return bson.BSON(rest[5:]).decode()


passed = failed = 0
s = socket.create_connection(("127.0.0.1", PORT), timeout=30)
s.sendall(op_msg({"shutdown": 1, "$db": "test"}))
r = reply(s)
if r and r["code"] == 13 and r["errmsg"] == "shutdown may only be run against the admin database.":
    passed += 1
    print("ok - shutdown outside admin is 13")
else:
    failed += 1
    print("not ok - shutdown outside admin: %r" % (r,))

# a tailable awaitData getMore waiting for inserts (maxTimeMS 60 s) must not
# hold the shutdown up: it ends with 11600 InterruptedAtShutdown
tail = socket.create_connection(("127.0.0.1", PORT), timeout=30)
tail.sendall(op_msg({"create": "tail", "capped": True, "size": 4096, "$db": "test"}))
reply(tail)
tail.sendall(op_msg({"insert": "tail", "documents": [{"_id": 1}], "$db": "test"}))
reply(tail)
tail.sendall(op_msg({"find": "tail", "tailable": True, "awaitData": True, "$db": "test"}))
cid = reply(tail)["cursor"]["id"]
tail.sendall(op_msg({"getMore": bson.int64.Int64(cid), "collection": "tail", "maxTimeMS": 60000, "$db": "test"}))
time.sleep(0.3)
started = time.time()

s.sendall(op_msg({"shutdown": 1, "$db": "admin"}))
r = reply(s)
if r is None:
    passed += 1
    print("ok - shutdown closes the connection")
else:
    failed += 1
    print("not ok - shutdown replied %r" % (r,))

deadline = time.time() + 30
stopped = False
while time.time() < deadline:
    t = socket.socket()
    t.settimeout(0.5)
    if t.connect_ex(("127.0.0.1", PORT)) != 0:
        stopped = True
        t.close()
        break
    t.close()
    time.sleep(0.1)
if stopped:
    passed += 1
    print("ok - the server stopped listening")
else:
    failed += 1
    print("not ok - the server still listens")
try:
    r = reply(tail)
except OSError as e:
    r = e
# The getMore answers 11600 when its reply is written before the server
# closes the connection's socket (a race: shutdown wakes the wait, then shuts
# every socket down); either way it must not wait out its 60 s maxTimeMS.
if ((isinstance(r, dict) and r.get("code") == 11600) or r is None or isinstance(r, OSError)) \
        and time.time() - started < 15:
    passed += 1
    print("ok - the waiting awaitData getMore ended at shutdown (%s)" %
          ("11600" if isinstance(r, dict) else "connection closed"))
else:
    failed += 1
    print("not ok - the waiting getMore: %r after %.1f s" % (r, time.time() - started))
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
