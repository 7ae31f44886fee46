"""raft_keyfile.py -- member authentication with a keyFile (issue 24 item 1):
three tamgad members on 127.0.0.1 started with --keyFile.

- the key file's rules at startup, with mongod's messages (too open, an
  invalid character, too short, nothing in it, a missing file), through the
  command line and the YAML config's security.keyFile;
- initiation: a member with another key fails the quorum check (74,
  "Authentication failed.") and nothing is stored; with the right key the
  set elects a primary;
- keyFile turns access control on: a client without credentials gets 13,
  `__system` with a wrong password gets 18; a user created through the
  localhost exception writes with w: "majority" through PyMongo's replica
  set URI and every member holds the writes;
- a member restarted with another key stays out: no Raft message and no
  wire-protocol call of the others passes its handshake, the other two keep
  taking majority writes, rs.status() shows it unhealthy as mongod's
  authentication issue (health 0, state 6, authenticated: false; its
  heartbeats are refused), and it holds none of the
  new writes; the same for a member restarted without any keyFile; back
  with the right key it catches up (data equal);
- mongosh with the user's credentials: rs.status() and a majority write.
  (TLS between members and key rollover: raft_tls.py.)

usage: raft_keyfile.py path/to/tamgad [path/to/mongosh]
"""
import base64
import os
import subprocess
import sys
import time

from pymongo import MongoClient, WriteConcern
from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, coll_hash, free_ports, wait_equal  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def expect_code(fn, code, what):
    try:
        fn()
    except PyMongoError as e:
        got = getattr(e, "code", None)
        check(got == code, "%s: expected code %d, got %r (%s)" % (what, code, got, e))
        return e
    raise AssertionError("%s: expected code %d, got success" % (what, code))


def write_key(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def new_key(path):
    # as `openssl rand -base64 756`: base64 wrapped at 64 characters
    raw = base64.b64encode(os.urandom(756)).decode()
    return write_key(path, "\n".join(raw[i:i + 64] for i in range(0, len(raw), 64)) + "\n")


def startup_refusals(tmp):
    """tamgad refuses a bad key file before it listens, as mongod."""
    port = free_ports(1)[0]
    db = os.path.join(tmp, "rules-db")
    os.makedirs(db, exist_ok=True)
    cases = [
        (write_key(os.path.join(tmp, "open.key"), "abcdefghij", 0o644),
         ["Read security file failed", "permissions on %s are too open"]),
        (write_key(os.path.join(tmp, "badchar.key"), "abcdef-ghij"),
         ["Read security file failed", "invalid char in key file %s", "UnsupportedFormat"]),
        (write_key(os.path.join(tmp, "short.key"), "ab c\n"),
         ["Security key size is out range", "must be between 6 and 1024"]),
        (write_key(os.path.join(tmp, "long.key"), "A" * 1025),
         ["Security key size is out range", "has length 1025"]),
        (write_key(os.path.join(tmp, "empty.key"), " \n\t\n"),
         ["Security key file %s does not contain any valid keys"]),
        (os.path.join(tmp, "missing.key"),
         ["Error reading file %s: No such file or directory", "InvalidPath"]),
    ]
    for path, wants in cases:
        r = subprocess.run([TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", db,
                            "--nounixsocket", "--replSet", "rs0", "--keyFile", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        out = r.stdout.decode("utf-8", "replace")
        check(r.returncode == 1, "%s: exit code %d (want 1)\n%s" % (path, r.returncode, out))
        for w in wants:
            w = w % path if "%s" in w else w
            check(w in out, "%s: %r not in the output:\n%s" % (path, w, out))
        check("Unable to acquire security key[s]" in out, "%s: the fatal line\n%s" % (path, out))
    # the YAML config's security.keyFile, same rules
    cfg = os.path.join(tmp, "bad.yaml")
    with open(cfg, "w") as f:
        f.write("security:\n  keyFile: %s\n" % os.path.join(tmp, "open.key"))
    r = subprocess.run([TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", db,
                        "--nounixsocket", "--config", cfg],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    out = r.stdout.decode("utf-8", "replace")
    check(r.returncode == 1 and "are too open" in out, "config keyFile refused: %d\n%s" % (r.returncode, out))


def authed(m, **kw):
    return m.client(username="admin", password="pw", authSource="admin", **kw)


def main():
    tmp = os.environ.get("TMPDIR", "/tmp")
    kdir = os.path.join(tmp, "tamga-keys-%d" % os.getpid())
    os.makedirs(kdir, exist_ok=True)
    try:
        startup_refusals(kdir)
        key = new_key(os.path.join(kdir, "set.key"))
        other = new_key(os.path.join(kdir, "other.key"))
        run_set(key, other)
    finally:
        subprocess.call(["rm", "-rf", kdir])
    print("raft_keyfile: %d checks passed" % checks)


def run_set(key, other):
    with Cluster(TAMGAD, extra=["--keyFile", key]) as cl:
        m0, m1, m2 = cl.members
        # a member with another key fails the quorum check; nothing stored
        m2.stop()
        m2.extra = ["--keyFile", other]
        m2.start()
        with m0.client() as c:
            e = expect_code(lambda: c.admin.command("replSetInitiate", cl.config()), 74, "wrong key at initiate")
            check("Authentication failed" in str(e), "initiate's message: %s" % e)
            expect_code(lambda: c.admin.command("replSetGetStatus"), 94, "nothing stored after the refusal")
        m2.stop()
        m2.extra = ["--keyFile", key]
        m2.start()

        # initiation through the localhost exception, as mongod's keyFile
        # deployment starts, then the first user
        with m0.client() as c:
            check(c.admin.command("replSetInitiate", cl.config())["ok"] == 1, "initiate")
        p = cl.wait_primary(30)
        with p.client() as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
            expect_code(lambda: c.t.c.find_one(), 13, "unauthenticated find")
            expect_code(lambda: c.t.c.insert_one({"x": 1}), 13, "unauthenticated insert")
        bad = p.client(username="__system", password="not-the-key", authSource="local")
        expect_code(lambda: bad.admin.command("ping"), 18, "__system without the key")
        bad.close()

        # writes through the set's URI with w: majority reach every member
        uri = "mongodb://admin:pw@%s/?replicaSet=rs0&authSource=admin" % ",".join(m.host for m in cl.members)
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(50):
                coll.insert_one({"_id": i, "v": "x" * 20})
            coll.update_many({}, {"$set": {"u": 1}})
            check(coll.count_documents({}) == 50, "50 documents on the primary")
        wait_equal_auth(cl.members, 50)

        # m2 restarted with another key stays out
        m2.stop()
        m2.extra = ["--keyFile", other]
        m2.start()
        time.sleep(3)
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(50, 80):
                coll.insert_one({"_id": i, "v": "y"})
            check(coll.count_documents({}) == 80, "the other two keep taking majority writes")
        p = cl.wait_primary(20, among=[m0, m1])
        deadline = time.time() + 20
        row = None
        while time.time() < deadline:
            with authed(p) as c:
                st = c.admin.command("replSetGetStatus")
            row = [r for r in st["members"] if r["name"] == m2.host][0]
            if row["health"] == 0 and row.get("authenticated") is False:
                break
            time.sleep(0.5)
        check(row["health"] == 0 and row["stateStr"] == "(not reachable/healthy)",
              "the member with another key is unhealthy: %r" % row)
        # mongod's MemberData::setAuthIssue: state UNKNOWN, no message,
        # authenticated: false (its heartbeats are refused)
        check(row["state"] == 6 and row.get("authenticated") is False and row.get("lastHeartbeatMessage") == "",
              "an authentication issue as mongod shows it: %r" % row)
        with authed(m2) as c:
            n = c.t.c.count_documents({})
            check(n == 50, "the member with another key got none of the new writes (%d)" % n)
            st = c.admin.command("replSetGetStatus")
            check(st["myState"] != 1, "it is not primary: %r" % st["myState"])

        # m2 restarted without any keyFile (no access control of its own):
        # out as well, and the others say why
        m2.stop()
        m2.extra = []
        m2.start()
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(80, 90):
                coll.insert_one({"_id": i, "v": "z"})
        p = cl.wait_primary(20, among=[m0, m1])
        deadline = time.time() + 20
        while time.time() < deadline:
            with authed(p) as c:
                st = c.admin.command("replSetGetStatus")
            row = [r for r in st["members"] if r["name"] == m2.host][0]
            if row["health"] == 0 and row.get("authenticated") is False:
                break
            time.sleep(0.5)
        check(row["health"] == 0 and row.get("authenticated") is False and row["state"] == 6,
              "the member without a keyFile is unhealthy: %r" % row)
        with m2.client() as c:
            n = c.t.c.count_documents({})
            check(n == 50, "the member without a keyFile got none of the new writes (%d)" % n)

        # back with the right key: it catches up
        m2.stop()
        m2.extra = ["--keyFile", key]
        m2.start()
        wait_equal_auth(cl.members, 90)

        if MONGOSH:
            js = ("const s = rs.status(); if (s.members.length !== 3) throw new Error('members');"
                  "db.getSiblingDB('t').c.insertOne({_id: 'sh'}, {writeConcern: {w: 'majority'}});"
                  "print('ok ' + db.getSiblingDB('t').c.countDocuments({}));")
            r = subprocess.run([MONGOSH, uri, "--quiet", "--norc", "--eval", js],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode("utf-8", "replace")
            check(r.returncode == 0 and "ok 91" in out, "mongosh: %s" % out)
            r = subprocess.run([MONGOSH, "mongodb://%s/?directConnection=true" % p.host, "--quiet", "--norc",
                                "--eval", "db.getSiblingDB('t').c.findOne()"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode("utf-8", "replace")
            check(r.returncode != 0 and "requires authentication" in out, "mongosh without credentials: %s" % out)


def wait_equal_auth(members, n, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        counts, hashes = [], []
        for m in members:
            try:
                with authed(m) as c:
                    counts.append(c.t.c.count_documents({}))
                    hashes.append(coll_hash(c, "t", "c"))
            except OperationFailure as e:
                counts.append(str(e))
        if counts == [n] * len(members) and len(set(hashes)) == 1:
            check(True, "every member holds %d documents" % n)
            return
        last = counts
        time.sleep(0.3)
    raise AssertionError("members differ: %r (want %d)" % (last, n))


if __name__ == "__main__":
    main()
