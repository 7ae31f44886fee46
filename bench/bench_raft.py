"""bench_raft.py -- issue 24's figures on a three-member set on 127.0.0.1
(tests/e2e/replset/raft_cluster.py starts it):
  - single inserts from one connection, w: 1 against w: "majority";
  - batched inserts (100 documents per insert), w: 1 against w: "majority";
    each phase starts once every member applied what came before (settle);
  - failover: kill -9 of the primary to the first acknowledged w: "majority"
    write on the new one (electionTimeoutMillis 2000), over R runs;
  - reads by _id from 64 connections (bench_rs_reads, a C client next to
    tamgad in the build's bench/ folder) with readPreference primary against
    secondaryPreferred, for SECONDS each, two rounds alternating, best round
    counted; with each member's CPU per read (utime + stime of
    /proc/<pid>/stat around the round) and the client's, so that the ratio
    can be read on a machine of two cores, where the three members and the
    client share the same CPUs.

usage: bench_raft.py path/to/tamgad [N] [R] [PHASES]
  N single inserts per case, R failovers, PHASES a comma list of
  writes,failover,reads (default all) and latency (not in the default: the
  median of each insert's time, N single inserts and N / 5 batches of 100
  per case, a figure that moves less than throughput on a loaded machine) and
  applycpu (not in the default: N / 10 w: "majority" batches of 100, each
  member's CPU per batch, utime + stime of /proc/<pid>/stat from the first
  batch to every member having applied the last: a follower's applier cost,
  which load on the machine does not change much; then N / 2 single
  w: "majority" inserts, each member's CPU per insert); BENCH_SECONDS the read rounds' length
  (default 10), BENCH_READ_KEYS the documents read (default 20000),
  BENCH_READ_THREADS the connections (default 64).
"""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pymongo_python  # noqa: E402
pymongo_python.require()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e", "replset"))
from pymongo import MongoClient, WriteConcern  # noqa: E402
from pymongo.errors import PyMongoError  # noqa: E402
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
R = int(sys.argv[3]) if len(sys.argv) > 3 else 5
PHASES = (sys.argv[4] if len(sys.argv) > 4 else "writes,failover,reads").split(",")
READ_SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
READ_KEYS = int(os.environ.get("BENCH_READ_KEYS", "20000"))
READ_THREADS = int(os.environ.get("BENCH_READ_THREADS", "64"))
READER = os.path.join(os.path.dirname(os.path.abspath(TAMGAD)), "bench", "bench_rs_reads")


def rate(coll, n, batch):
    t0 = time.perf_counter()
    if batch == 1:
        for i in range(n):
            coll.insert_one({"i": i, "pad": "x" * 100})
    else:
        for k in range(n // batch):
            coll.insert_many([{"i": k * batch + j, "pad": "x" * 100} for j in range(batch)])
    return n / (time.perf_counter() - t0)


def settle(cl, timeout=120):
    """Wait until every member applied what the primary wrote: a w: 1 phase
    leaves the secondaries' application behind, and on two cores their
    catching up would be charged to the next phase."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        tops = []
        for m in cl.members:
            with m.client() as c:
                tops.append(c.admin.command("hello")["lastWrite"]["opTime"]["ts"])
        if min(tops) == max(tops):
            return
        time.sleep(0.2)


def throughput():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
            db = c.bench
            for batch, n in ((1, N), (100, N * 20)):
                w1 = db.get_collection("w1_%d" % batch, write_concern=WriteConcern(w=1))
                wm = db.get_collection("wm_%d" % batch, write_concern=WriteConcern(w="majority"))
                rate(w1, min(n, 500), batch)   # warm up
                settle(cl)
                a = rate(w1, n, batch)
                settle(cl)
                b = rate(wm, n, batch)
                settle(cl)
                print("inserts batch %3d: w:1 %8.0f/s  w:majority %8.0f/s  ratio %.2f" % (batch, a, b, b / a))


def latency():
    def p50(coll, n, batch):
        out = []
        for k in range(n):
            docs = [{"i": k * batch + j, "pad": "x" * 100} for j in range(batch)]
            t0 = time.perf_counter()
            if batch == 1:
                coll.insert_one(docs[0])
            else:
                coll.insert_many(docs)
            out.append(time.perf_counter() - t0)
        return statistics.median(out) * 1e6

    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
            db = c.bench
            for batch, n in ((1, N), (100, max(N // 5, 1))):
                w1 = db.get_collection("l1_%d" % batch, write_concern=WriteConcern(w=1))
                wm = db.get_collection("lm_%d" % batch, write_concern=WriteConcern(w="majority"))
                p50(w1, min(n, 200), batch)   # warm up
                settle(cl)
                a = p50(w1, n, batch)
                settle(cl)
                b = p50(wm, n, batch)
                settle(cl)
                print("latency batch %3d: p50 w:1 %7.0f us  w:majority %7.0f us  ratio %.2f" % (batch, a, b, a / b))


def applycpu():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        p = cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
            wm = c.bench.get_collection("cpu", write_concern=WriteConcern(w="majority"))
            rate(wm, 2000, 100)   # warm up
            settle(cl)
            batches = max(N // 10, 1)
            before = [cpu_seconds(m.proc.pid) for m in cl.members]
            rate(wm, batches * 100, 100)
            settle(cl)
            after = [cpu_seconds(m.proc.pid) for m in cl.members]
            # single w: "majority" inserts: each member's CPU per insert
            singles = max(N // 2, 1)
            before1 = [cpu_seconds(m.proc.pid) for m in cl.members]
            rate(wm, singles, 1)
            settle(cl)
            after1 = [cpu_seconds(m.proc.pid) for m in cl.members]
        for m, a, b in zip(cl.members, before, after):
            print("applycpu %-9s %s: %6.0f us CPU per batch of 100 (%d batches)" %
                  ("primary" if m is p else "secondary", m.host, (b - a) / batches * 1e6, batches))
        for m, a, b in zip(cl.members, before1, after1):
            print("applycpu %-9s %s: %6.0f us CPU per single insert (%d inserts)" %
                  ("primary" if m is p else "secondary", m.host, (b - a) / singles * 1e6, singles))


def failover():
    times = []
    for _ in range(R):
        with Cluster(TAMGAD) as cl:
            with cl.members[0].client() as c:
                c.admin.command("replSetInitiate", cl.config())
            p = cl.wait_primary()
            with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, w="majority", retryWrites=True) as c:
                c.bench.f.insert_one({"x": 0})
                t0 = time.perf_counter()
                p.kill9()
                while True:
                    try:
                        c.bench.f.insert_one({"x": 1})
                        break
                    except PyMongoError:
                        time.sleep(0.01)
                times.append(time.perf_counter() - t0)
    times.sort()
    print("failover (kill -9 to the first majority write), %d runs: p50 %.2f s, max %.2f s" %
          (len(times), statistics.median(times), times[-1]))


def cpu_seconds(pid):
    """utime + stime of a process, in seconds (fields 14 and 15 of
    /proc/<pid>/stat, after the parenthesised command name)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_round(cl, mode):
    """One round of READ_SECONDS: (reads/s, [member CPU us per read], client
    CPU us per read, [member share of the reads])."""
    # localThresholdMS 100 (the drivers' default is 15): on two loaded cores
    # libmongoc's first round-trip sample of a member (connection set-up
    # included) often exceeds the 15 ms window, and it then sends every
    # read to one secondary for the whole round (seen: 99% / 1%); on
    # machines of their own both secondaries share the reads
    uri = "%s&readPreference=%s&maxPoolSize=%d&serverSelectionTimeoutMS=10000&localThresholdMS=100" % (
        cl.uri(), mode, READ_THREADS + 4)
    before = [cpu_seconds(m.proc.pid) for m in cl.members]
    ops0 = [member_reads(m) for m in cl.members]
    out = subprocess.run([READER, uri, str(READ_SECONDS), str(READ_THREADS), str(READ_KEYS)],
                         check=True, capture_output=True, text=True).stdout.split()
    after = [cpu_seconds(m.proc.pid) for m in cl.members]
    ops1 = [member_reads(m) for m in cl.members]
    reads, secs, client_cpu = int(out[1]), float(out[3]), float(out[5])
    per = [(a - b) * 1e6 / reads for a, b in zip(after, before)]
    share = [(b - a) / reads for a, b in zip(ops0, ops1)]
    return reads / secs, per, client_cpu * 1e6 / reads, share


def member_reads(m):
    with m.client() as c:
        return c.admin.command("serverStatus")["opcounters"]["query"]


def reads():
    if not os.access(READER, os.X_OK):
        print("reads: %s not built (needs libmongoc): skipped" % READER)
        return
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config())
        cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
            coll = c.bench.get_collection("reads", write_concern=WriteConcern(w=3))
            for k in range(0, READ_KEYS, 1000):
                coll.insert_many([{"_id": i, "i": i, "pad": "x" * 100}
                                  for i in range(k, min(k + 1000, READ_KEYS))])
        settle(cl)
        primary = cl.wait_primary()
        best = {}
        for _ in range(2):
            for mode in ("primary", "secondaryPreferred"):
                r = read_round(cl, mode)
                if mode not in best or r[0] > best[mode][0]:
                    best[mode] = r
        names = ["%s%s" % (m.host, " (P)" if m is primary else "") for m in cl.members]
        for mode in ("primary", "secondaryPreferred"):
            rate_, per, client, share = best[mode]
            print("reads %-18s %8.0f/s from %d connections; us CPU per read: %s, set %.1f, client %.1f;"
                  " reads served: %s" % (
                      mode + ":", rate_, READ_THREADS,
                      ", ".join("%s %.1f" % (n, c) for n, c in zip(names, per)), sum(per), client,
                      ", ".join("%.0f%%" % (100 * x) for x in share)))
        print("reads secondaryPreferred / primary: ratio %.2f (load %s)" % (
            best["secondaryPreferred"][0] / best["primary"][0],
            open("/proc/loadavg").read().split()[0]))


if __name__ == "__main__":
    if "writes" in PHASES:
        throughput()
    if "applycpu" in PHASES:
        applycpu()
    if "latency" in PHASES:
        latency()
    if "failover" in PHASES:
        failover()
    if "reads" in PHASES:
        reads()
