"""jepsen_set.py -- fault injection in the spirit of Jepsen on a set of three
tamgad members on 127.0.0.1 (issue 24), bounded in time:

  - client threads (PyMongo, one client each, retryable writes off so each
    outcome is known to be one attempt) run operations on a few registers
    (documents {_id: k, v}): writes (update with upsert, w: "majority"),
    compare-and-set (findAndModify filtered on the current value,
    w: "majority") and reads (readConcern "linearizable", primary); each is
    recorded with its invocation and completion times and its outcome: ok,
    fail (certainly not applied: refused before it ran, or never sent) or
    info (indeterminate: a network error, a timeout, a write concern error
    -- it may have been applied, now or later);
  - a nemesis at random: kill -9 of a member (the primary more often) and
    its restart, kill -9 of every member at once and their restart,
    SIGSTOP/SIGCONT pauses, and network partitions (a member cut off from
    the two others, or a one-way cut);
  - at the end: every fault healed, the set waited for, a final
    linearizable read of every register, every member's data equal (a hash
    of the collection in _id order), no member crashed or reported a
    sanitizer error, and the history checked for linearizability
    (linearizability.py: WGL with memoisation, each key alone).
Any anomaly fails the test; the history (one JSON operation a line) is
saved to <out>/jepsen-<time>.jsonl and its path printed (python3
linearizability.py <file> checks it again).

Partitions are the dropRaftMessagesFrom fail point (configureFailPoint,
enableTestCommands=1): a member drops the Raft messages that arrive from the
members it names, and its member-to-member commands (rollback's refetch,
initial sync) cannot reach them.  Network namespaces would cut the clients
too, but they need root and addresses other than 127.0.0.1 (each namespace
has its own loopback, so the set's hosts would have to be veth addresses),
and the test suite runs as any user on loopback; a member cut off by the
fail point still answers clients -- the harder case for a deposed primary,
which must not serve a linearizable read or acknowledge a majority write.

Duration: JEPSEN_SECONDS (default 60); JEPSEN_RUNS runs it that many times
(each a fresh set), JEPSEN_SEED fixes the random choices of the first run.

usage: jepsen_set.py path/to/tamgad out_dir
"""
import json
import os
import random
import re
import sys
import threading
import time

from pymongo import MongoClient, ReadPreference, ReturnDocument
from pymongo.errors import (AutoReconnect, ConnectionFailure, ExecutionTimeout, NetworkTimeout, OperationFailure,
                            PyMongoError, ServerSelectionTimeoutError, WriteConcernError, WTimeoutError)
try:
    from pymongo.errors import NotPrimaryError          # PyMongo 4
except ImportError:
    from pymongo.errors import NotMasterError as NotPrimaryError   # 3.x (Debian's)
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, coll_hash  # noqa: E402
import linearizability  # noqa: E402

TAMGAD = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else "."
SECONDS = float(os.environ.get("JEPSEN_SECONDS", "60"))
RUNS = int(os.environ.get("JEPSEN_RUNS", "1"))
KEYS = 4
THREADS = 5
ELECTION_MS = 2000

# mongod's codes that say the write was refused before it ran: not primary
# (10107 NotWritablePrimary, 13435 NotPrimaryNoSecondaryOk, 13436
# NotPrimaryOrSecondary), a primary stepping down before it took the write
# (189 PrimarySteppedDown); anything else (11602 a write cut by a stepdown,
# a write concern error after the write ran) is indeterminate
REFUSED = {10107, 13435, 13436, 189}


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.ops = []
        self.t0 = time.monotonic()

    def now(self):
        return time.monotonic() - self.t0

    def add(self, op):
        with self.lock:
            self.ops.append(op)


def classify(e, f):
    """ok is not an error; fail: certainly not applied; info: maybe."""
    if f == "read":
        return "fail"                 # a read that failed has no effect
    if isinstance(e, ServerSelectionTimeoutError):
        return "fail"                 # never sent (retryable writes are off)
    if isinstance(e, (WTimeoutError, WriteConcernError)):
        return "info"                 # the write ran; its commit is unknown
    if isinstance(e, NotPrimaryError):   # before AutoReconnect: its subclass
        # the server's reply said so: refused, unless it is 11602
        # InterruptedDueToReplStateChange (ran and was cut)
        code = getattr(e, "code", None) or (e.details or {}).get("code")
        return "fail" if code in REFUSED else "info"
    if isinstance(e, (AutoReconnect, NetworkTimeout, ConnectionFailure, ExecutionTimeout)):
        return "info"
    if isinstance(e, OperationFailure):
        det = e.details or {}
        if det.get("writeConcernError") is not None:
            return "info"
        return "fail" if e.code in REFUSED else "info"
    return "info"


class Worker(threading.Thread):
    def __init__(self, idx, uri, hist, stop, rng_seed):
        super().__init__(daemon=True)
        self.idx, self.uri, self.hist, self.stop = idx, uri, hist, stop
        self.rng = random.Random(rng_seed)
        self.process = idx
        self.counter = 0
        self.seen = {}                # key -> the last value this thread read
        self.errors = 0
        self.oks = 0

    def run(self):
        client = MongoClient(self.uri, retryWrites=False, retryReads=False, serverSelectionTimeoutMS=2000,
                             socketTimeoutMS=6000, connectTimeoutMS=2000, w="majority", wtimeoutMS=5000)
        coll = client.jepsen.get_collection("reg")
        lin = coll.with_options(read_concern=ReadConcern("linearizable"), read_preference=ReadPreference.PRIMARY)
        try:
            while not self.stop.is_set():
                self.one(coll, lin)
        finally:
            client.close()

    def next_value(self):
        self.counter += 1
        return self.idx * 1000000 + self.counter

    def one(self, coll, lin):
        k = self.rng.randrange(KEYS)
        r = self.rng.random()
        op = {"process": self.process, "key": k}
        if r < 0.4:
            op["f"] = "read"
        elif r < 0.7:
            op["f"] = "write"
            op["value"] = self.next_value()
        else:
            op["f"] = "cas"
            e = self.seen.get(k)
            op["value"] = [e, self.next_value()]
        op["invoke"] = self.hist.now()
        try:
            if op["f"] == "read":
                d = lin.find_one({"_id": k}, max_time_ms=5000)
                op["value"] = None if d is None else d.get("v")
                self.seen[k] = op["value"]
            elif op["f"] == "write":
                coll.update_one({"_id": k}, {"$set": {"v": op["value"]}}, upsert=True)
            else:
                e, n = op["value"]
                flt = {"_id": k, "v": e} if e is not None else {"_id": k, "v": {"$exists": False}}
                d = coll.find_one_and_update(flt, {"$set": {"v": n}}, return_document=ReturnDocument.BEFORE)
                op["matched"] = d is not None
                if d is not None:
                    self.seen[k] = n
            op["type"] = "ok"
            op["complete"] = self.hist.now()
            self.oks += 1
        except PyMongoError as e:
            op["type"] = classify(e, op["f"])
            op["complete"] = None if op["type"] == "info" else self.hist.now()
            op["error"] = "%s: %s" % (type(e).__name__, str(e)[:160])
            self.errors += 1
            if op["type"] == "info":
                # the operation stays open: a new process continues
                self.process += 100
            time.sleep(self.rng.uniform(0.02, 0.1))
        self.hist.add(op)


class Nemesis(threading.Thread):
    def __init__(self, cl, stop, rng, events):
        super().__init__(daemon=True)
        self.cl, self.stop, self.rng, self.events = cl, stop, rng, events
        self.error = None
        self.down = set()
        self.paused = set()
        self.cut = {}                 # member -> hosts it drops

    def log(self, what):
        self.events.append((round(time.monotonic(), 3), what))

    def primary(self):
        for m in self.cl.members:
            if m.proc is None or m in self.paused:
                continue
            try:
                with MongoClient(m.host, directConnection=True, serverSelectionTimeoutMS=500,
                                 socketTimeoutMS=1000) as c:
                    if c.admin.command("hello").get("isWritablePrimary"):
                        return m
            except PyMongoError:
                pass
        return None

    def target(self):
        p = self.primary()
        if p is not None and self.rng.random() < 0.65:
            return p
        return self.rng.choice(self.cl.members)

    def set_cut(self, m, hosts):
        # a member slow to answer on a loaded machine is tried again; one
        # that never answers fails the run
        deadline = time.monotonic() + 60
        while True:
            try:
                with MongoClient(m.host, directConnection=True, serverSelectionTimeoutMS=5000,
                                 socketTimeoutMS=10000) as c:
                    if hosts:
                        c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="alwaysOn",
                                        data={"hosts": hosts})
                    else:
                        c.admin.command("configureFailPoint", "dropRaftMessagesFrom", mode="off")
                break
            except PyMongoError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        if hosts:
            self.cut[m] = hosts
        else:
            self.cut.pop(m, None)

    def sleep(self, lo, hi):
        end = time.monotonic() + self.rng.uniform(lo, hi)
        while time.monotonic() < end and not self.stop.is_set():
            time.sleep(0.05)

    def run(self):
        try:
            while not self.stop.is_set():
                self.sleep(0.5, 3)
                if self.stop.is_set():
                    break
                f = self.rng.choice(["kill", "kill", "pause", "partition", "partition", "oneway", "killall"])
                m = self.target()
                if f == "killall":
                    # every member at once (a power cut): what a majority
                    # acknowledged is in the Raft logs, replayed at restart
                    self.log("kill -9 every member")
                    for o in self.cl.members:
                        o.kill9()
                        self.down.add(o)
                    self.sleep(0.2, 2)
                    for o in self.cl.members:
                        self.log("restart %s" % o.host)
                        o.start()
                        self.down.discard(o)
                elif f == "kill":
                    self.log("kill -9 %s" % m.host)
                    m.kill9()
                    self.down.add(m)
                    self.sleep(0.2, 3)
                    self.log("restart %s" % m.host)
                    m.start()
                    self.down.discard(m)
                elif f == "pause":
                    self.log("SIGSTOP %s" % m.host)
                    m.pause()
                    self.paused.add(m)
                    self.sleep(0.5, 5)
                    self.log("SIGCONT %s" % m.host)
                    m.resume()
                    self.paused.discard(m)
                else:
                    others = [o for o in self.cl.members if o is not m]
                    if f == "partition":
                        self.log("partition %s | %s" % (m.host, ",".join(o.host for o in others)))
                        self.set_cut(m, [o.host for o in others])
                        for o in others:
                            self.set_cut(o, [m.host])
                    else:
                        o = self.rng.choice(others)
                        self.log("one-way: %s drops %s" % (m.host, o.host))
                        self.set_cut(m, [o.host])
                    self.sleep(1, 6)
                    self.heal_cuts()
        except Exception as e:   # noqa: BLE001 -- reported by the test
            self.error = e

    def heal_cuts(self):
        for m in list(self.cut):
            self.log("heal %s" % m.host)
            self.set_cut(m, [])

    def heal(self):
        for m in list(self.paused):
            m.resume()
            self.paused.discard(m)
        for m in list(self.down):
            m.start()
            self.down.discard(m)
        self.heal_cuts()


SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer")


def one_run(run, seed):
    rng = random.Random(seed)
    t0 = time.time()
    hist = History()
    events = []
    with Cluster(TAMGAD, 3, extra=["--setParameter", "enableTestCommands=1"]) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=ELECTION_MS))
        cl.wait_primary(30)
        uri = cl.uri() + "&w=majority"
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000) as c:
            coll = c.jepsen.get_collection("reg", write_concern=WriteConcern("majority"))
            for k in range(KEYS):
                coll.replace_one({"_id": k}, {"_id": k, "v": 0}, upsert=True)
        t_setup = hist.now()
        for k in range(KEYS):
            hist.add({"process": -1, "key": k, "f": "write", "value": 0, "type": "ok", "invoke": 0,
                      "complete": t_setup})
        stop = threading.Event()
        workers = [Worker(i, uri, hist, stop, rng.random()) for i in range(THREADS)]
        nem = Nemesis(cl, stop, random.Random(rng.random()), events)
        for w in workers:
            w.start()
        nem.start()
        time.sleep(SECONDS)
        stop.set()
        nem.join(60)
        for w in workers:
            w.join(60)
        problems = []
        if nem.is_alive() or any(w.is_alive() for w in workers):
            problems.append("a client or the nemesis hung past the run's end")
        if nem.error is not None:
            problems.append("nemesis: %r" % nem.error)
        nem.heal()
        # members that died by themselves (not killed by the nemesis)
        for m in cl.members:
            if m.proc is not None and m.proc.poll() is not None:
                problems.append("member %s exited by itself (rc %s):\n%s" % (m.host, m.proc.returncode, m.tail(40)))
                m.proc = None
                m.start()
        try:
            cl.wait_primary(60)
        except AssertionError as e:
            problems.append("after healing: %s" % e)
        # the final state: one linearizable read of each register
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=30000, retryReads=True) as c:
            lin = c.jepsen.get_collection("reg", read_concern=ReadConcern("linearizable"))
            for k in range(KEYS):
                op = {"process": "final", "key": k, "f": "read", "invoke": hist.now()}
                try:
                    d = lin.find_one({"_id": k}, max_time_ms=20000)
                    op.update(value=None if d is None else d.get("v"), type="ok", complete=hist.now())
                except PyMongoError as e:
                    problems.append("final read of %d: %r" % (k, e))
                    op.update(type="fail", complete=hist.now())
                hist.add(op)
            # a majority write the members must all apply before the hashes
            c.jepsen.get_collection("done", write_concern=WriteConcern("majority")).insert_one({"run": run})
        hashes = None
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                hashes = []
                for m in cl.members:
                    with m.client(read_preference=ReadPreference.SECONDARY_PREFERRED) as c:
                        hashes.append((coll_hash(c, "jepsen", "reg"), coll_hash(c, "jepsen", "done")))
                if len(set(hashes)) == 1:
                    break
            except PyMongoError as e:
                hashes = repr(e)
            time.sleep(0.5)
        else:
            problems.append("members' data differ after healing: %r" % (hashes,))
        for m in cl.members:
            if SANITIZER.search(m.tail(1000000)):
                problems.append("sanitizer report in %s's log:\n%s" % (m.host, m.tail(80)))
        ops = sorted(hist.ops, key=lambda o: o["invoke"])
        t_check = time.time()
        res = linearizability.check(ops)
        check_s = time.time() - t_check
        counts = {}
        for o in ops:
            counts[o["type"]] = counts.get(o["type"], 0) + 1
        print("run %d (seed %r): %d operations %r in %.0f s, %d nemesis events, checked in %.1f s: %s" % (
            run, seed, len(ops), counts, time.time() - t0, len(events), check_s,
            "linearizable" if res.valid else "NOT LINEARIZABLE"))
        sys.stdout.flush()
        if not res.valid:
            problems.append("history not linearizable: %s" % json.dumps(res.anomalies(), default=str)[:4000])
        if problems or os.environ.get("JEPSEN_KEEP"):
            os.makedirs(OUT, exist_ok=True)
            path = os.path.join(os.path.abspath(OUT), "jepsen-%s-%d.jsonl" % (time.strftime("%Y%m%d-%H%M%S"), run))
            with open(path, "w") as f:
                for o in ops:
                    f.write(json.dumps(o, default=str) + "\n")
            with open(path + ".events", "w") as f:
                base = hist.t0
                for t, what in events:
                    f.write("%.3f %s\n" % (t - base, what))
            for m in cl.members:
                dest = "%s.member-%d.log" % (path, m.port)
                subprocess_copy(m.log, dest)
            print("history saved to %s (nemesis events in %s.events, member logs beside)" % (path, path))
        if problems:
            raise AssertionError("run %d: %s" % (run, "\n".join(problems)))
        return len(ops), counts


def subprocess_copy(src, dest):
    try:
        with open(src, "rb") as a, open(dest, "wb") as b:
            b.write(a.read())
    except OSError:
        pass


def main():
    base = int(os.environ.get("JEPSEN_SEED", random.randrange(1 << 30)))
    total = 0
    for run in range(RUNS):
        n, _ = one_run(run, base + run)
        total += n
    print("jepsen_set: %d run(s), %d operations, all linearizable, members equal" % (RUNS, total))
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
