"""bench_raft.py -- issue 24's figures on a three-member set on 127.0.0.1
(tests/e2e/replset/raft_cluster.py starts it):
  - single inserts from one connection, w: 1 against w: "majority";
  - batched inserts (100 documents per insert), w: 1 against w: "majority";
    each phase starts once every member applied what came before (settle);
  - failover: kill -9 of the primary to the first acknowledged w: "majority"
    write on the new one (electionTimeoutMillis 2000), over R runs.

usage: bench_raft.py path/to/tamgad [N] [R]   (N single inserts per case, R failovers)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e", "replset"))
from pymongo import MongoClient, WriteConcern  # noqa: E402
from pymongo.errors import PyMongoError  # noqa: E402
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
R = int(sys.argv[3]) if len(sys.argv) > 3 else 5


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


if __name__ == "__main__":
    throughput()
    failover()
