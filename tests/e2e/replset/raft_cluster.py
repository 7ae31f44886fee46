"""raft_cluster.py -- start and stop a set of tamgad members on 127.0.0.1 for
the tests of replica sets of several members (issue 24), and small helpers;
the single-member sets of tests/e2e/txn (kill -9 and restart) start their
member with Member too.

Each member gets a free port p whose Raft port p + 1000 is free too (see
src/repl/raft_member.h), its own --dbpath under a temporary folder, and is
stopped by the test (SIGTERM, then SIGKILL) whatever happens; a set's
members start and stop side by side (each()).  The scripts share check() /
report() (their pass count, the closing lines ctest shows; each check's
time with TAMGA_CHECK_TIMES=1), coll_hash() / wait_equal() (data equality)
and raft_compacted() (a member's Raft snapshot and log).
"""
import hashlib
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time

from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import MongoClient

RAFT_OFFSET = 1000


def port_free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_ports(n):
    """n ports p, each with p + RAFT_OFFSET free too, below Linux's
    ephemeral range (32768 and up by default): a member killed and started
    again must find its port free, and an outgoing connection anywhere on
    the machine may take a port of the ephemeral range as its own."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = low - 1 - RAFT_OFFSET if low - 1 - RAFT_OFFSET > 30500 else 50000
    got = []
    while len(got) < n:
        p = random.randint(30000, top)
        # nor one member's Raft port another's port (p - 1000 taken)
        if p in got or p + RAFT_OFFSET in got or p - RAFT_OFFSET in got:
            continue
        if port_free(p) and port_free(p + RAFT_OFFSET):
            got.append(p)
    return got


class Member:
    def __init__(self, tamgad, port, dbpath, set_name, extra):
        self.tamgad, self.port, self.dbpath = tamgad, port, dbpath
        self.set_name, self.extra = set_name, extra
        self.proc = None
        self.host = "127.0.0.1:%d" % port
        self.log = os.path.join(os.path.dirname(dbpath), "member-%d.log" % port)

    def start(self):
        # a port taken meanwhile (a short-lived connection's own end): again
        for attempt in range(30):
            try:
                return self._start()
            except RuntimeError:
                if "Address already in use" not in self.tail(5) or attempt == 29:
                    raise
                time.sleep(0.5)

    def _start(self):
        os.makedirs(self.dbpath, exist_ok=True)
        try:
            start_at = os.path.getsize(self.log)
        except OSError:
            start_at = 0
        logf = open(self.log, "ab")
        # 64 MB of oplog unless the test sets its own (a small one to see it truncated)
        oplog = [] if "--oplogSize" in self.extra else ["--oplogSize", "64"]
        self.proc = subprocess.Popen(
            [self.tamgad, "--port", str(self.port), "--bind_ip", "127.0.0.1", "--dbpath", self.dbpath,
             "--replSet", self.set_name, "--nounixsocket"] + oplog + self.extra,
            stdout=logf, stderr=subprocess.STDOUT)
        logf.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("member %s exited at start:\n%s" % (self.host, self.tail()))
            # this process's own "Waiting for connections" (a connect alone
            # could reach another test's server that took the port first)
            if self.listening_since(start_at):
                return
            time.sleep(0.05)
        raise RuntimeError("member %s did not listen" % self.host)

    def listening_since(self, offset):
        try:
            with open(self.log, "rb") as f:
                f.seek(offset)
                return b'"Waiting for connections"' in f.read()
        except OSError:
            return False

    def client(self, **kw):
        kw.setdefault("serverSelectionTimeoutMS", 5000)
        return MongoClient(self.host, directConnection=True, **kw)

    def kill9(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def pause(self):
        """SIGSTOP: the member stops answering (Raft and clients)."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        """SIGTERM; returns the exit code (SIGKILL after 30 s: -9)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        return rc

    def tail(self, n=120):
        try:
            with open(self.log, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""


def each(fn, members):
    """fn(m) for every member at once, one thread each (the members start
    and stop side by side: a set's start or stop costs one member's, not
    three); returns their results in order, or raises the first error once
    every call has ended."""
    results = [None] * len(members)
    errors = []

    def run(i, m):
        try:
            results[i] = fn(m)
        except BaseException as e:   # noqa: BLE001 -- raised below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, m)) for i, m in enumerate(members)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


class Cluster:
    def __init__(self, tamgad, n=3, set_name="rs0", extra=None):
        self.dir = tempfile.mkdtemp(prefix="tamga-raft-", dir=os.environ.get("TMPDIR", "/tmp"))
        self.set_name = set_name
        self.members = [Member(tamgad, p, os.path.join(self.dir, "db%d" % i), set_name, extra or [])
                        for i, p in enumerate(free_ports(n))]

    def __enter__(self):
        try:
            each(Member.start, self.members)
        except BaseException:
            each(Member.stop, self.members)
            raise
        return self

    def __exit__(self, *exc):
        for m in self.members:
            if m.proc is not None and m.proc.poll() is None:
                m.resume()   # a test that failed while a member was paused
        rcs = each(Member.stop, self.members)
        bad = [(m.host, rc) for m, rc in zip(self.members, rcs) if rc not in (0, None)]
        if exc[0] is not None or bad:
            for m in self.members:
                print("---- log of %s ----\n%s" % (m.host, m.tail()))
        if bad and exc[0] is None:
            raise AssertionError("members did not stop cleanly: %r" % bad)
        keep = os.environ.get("TAMGA_KEEP_LOGS")   # a folder: the members' logs are copied there
        if keep:
            os.makedirs(keep, exist_ok=True)
            for m in self.members:
                subprocess.call(["cp", m.log, keep])
        subprocess.call(["rm", "-rf", self.dir])
        return False

    def config(self, election_ms=4000):
        return {"_id": self.set_name,
                "members": [{"_id": i, "host": m.host} for i, m in enumerate(self.members)],
                "settings": {"electionTimeoutMillis": election_ms}}

    def uri(self):
        return "mongodb://%s/?replicaSet=%s" % (",".join(m.host for m in self.members), self.set_name)

    def wait_primary(self, timeout=20, among=None):
        """The member that says it is primary (and that every other live
        member names as primary), within timeout seconds."""
        among = among or [m for m in self.members if m.proc is not None]
        deadline = time.time() + timeout
        while time.time() < deadline:
            for m in among:
                try:
                    with m.client(serverSelectionTimeoutMS=500) as c:
                        h = c.admin.command("hello")
                    if h.get("isWritablePrimary"):
                        return m
                except Exception:
                    pass
            time.sleep(0.1)
        raise AssertionError("no primary within %ss" % timeout)


_RAW = CodecOptions(document_class=RawBSONDocument)


def coll_hash(client, db, coll):
    """sha1 of every document of db.coll in _id order (the data-equality
    check of the issue): the bytes each member sends, taken as they are
    (decoding each document and encoding it again cost seconds per check on
    the large collections, and could only hide a difference)."""
    h = hashlib.sha1()
    for d in client[db].get_collection(coll, codec_options=_RAW).find({}, sort=[("_id", 1)]):
        h.update(d.raw)
    return h.hexdigest()


def wait_equal(members, db, coll, timeout=20):
    """Wait until every member holds the same db.coll.  A member that cannot
    be read yet (a restarted old primary may show SECONDARY before its
    rollback starts: 13436 meanwhile) is asked again until the timeout."""
    from pymongo.errors import PyMongoError
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        hashes = []
        for m in members:
            try:
                with m.client() as c:
                    hashes.append(coll_hash(c, db, coll))
            except PyMongoError as e:
                hashes.append("unreadable: %s" % e)
        if len(set(hashes)) == 1:
            return hashes[0]
        last = hashes
        time.sleep(0.2)
    raise AssertionError("members differ on %s.%s: %r" % (db, coll, last))


def get_config(m):
    """The member's replSetGetConfig configuration."""
    with m.client() as c:
        return c.admin.command("replSetGetConfig")["config"]


def reconfig(m, cfg):
    """replSetReconfig on the member (a minute at most)."""
    with m.client() as c:
        return c.admin.command("replSetReconfig", cfg, maxTimeMS=60000)


def wait_state(m, states, timeout=60):
    """Wait until the member's myState is one of states; returns it."""
    from pymongo.errors import PyMongoError
    deadline = time.time() + timeout
    st = None
    while time.time() < deadline:
        try:
            with m.client() as c:
                st = c.admin.command("replSetGetStatus")["myState"]
            if st in states:
                return st
        except PyMongoError as e:
            if getattr(e, "code", None) == 93 and 10 in states and "REMOVED" in str(e):
                return 10   # a REMOVED member answers rs.status() with 93
        time.sleep(0.2)
    raise AssertionError("%s: state %r, wanted %r" % (m.host, st, states))


# ---- the scripts' pass/fail counter (one for every script that imports it)
#
# check(cond, what) raises AssertionError(what) when cond is false (the
# script stops there: what follows would test a broken set) and counts a
# pass otherwise; report(name, t0) prints the closing lines ctest shows.
# With TAMGA_CHECK_TIMES=1 each passed check is also printed with the
# seconds since the script started and since the previous check: where a
# test spends its time, without a profiler.
_checks = {"passed": 0, "t0": time.monotonic(), "last": time.monotonic()}
_times = os.environ.get("TAMGA_CHECK_TIMES") not in (None, "", "0")


def check(cond, what):
    """Counts a pass, or raises AssertionError(what)."""
    if not cond:
        raise AssertionError(what)
    _checks["passed"] += 1
    if _times:
        now = time.monotonic()
        print("[%7.2fs +%6.2fs] %s" % (now - _checks["t0"], now - _checks["last"], str(what)[:100]), flush=True)
        _checks["last"] = now


def passed():
    """How many checks passed so far."""
    return _checks["passed"]


def report(name, t0=None):
    """The closing lines: "<name>: N checks passed in S s" and "N passed,
    0 failed" (a failed check has raised before)."""
    took = "" if t0 is None else " in %.1fs" % (time.time() - t0)
    print("%s: %d checks passed%s" % (name, _checks["passed"], took))
    print("%d passed, 0 failed" % _checks["passed"])


def raft_compacted(m):
    """The member's Raft folder: (snapshot files, the first index of its
    oldest closed segment or None, every name) -- a leader past its
    snapshot threshold (src/repl/raft_member.c) has a snapshot and a first
    index above 1."""
    names = os.listdir(os.path.join(m.dbpath, "raft"))
    snaps = [n for n in names if n.startswith("snapshot-") and not n.endswith(".meta")]
    closed = sorted(n for n in names if "-" in n and n[0].isdigit())
    first = int(closed[0].split("-")[0]) if closed else None
    return snaps, first, names
