"""Reopening closed time-series buckets across a restart (issue 19), through
PyMongo against a real tamgad: an in-order ingest of several sensors, a clean
restart (the bucket catalog starts empty), then late and out-of-order
measurements.  As on mongod 8.0+, they go back into the stored buckets whose
time span holds them (query-based reopening, then archived buckets fetched by
_id) instead of each opening a new bucket: the bucket count stays what the
in-order ingest made, collStats' timeseries counters say how
(numBucketsQueried, numBucketsReopened, numBucketsArchivedDueToTimeBackward,
numBucketsFetched), and every answer equals a plain collection holding the
same measurements.

    python3 ts_reopen.py path/to/tamgad

Starts its own tamgad (free port, temporary --dbpath under TMPDIR) twice;
prints "N passed, N failed".
"""
import datetime
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pymongo

TAMGAD = sys.argv[1]
SENSORS = 8
HOURS = 3
STEP = 60          # one reading per sensor per minute: 60 per bucket-hour
passed = failed = 0
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, (": " + why) if why else ""))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(dbpath, port, log):
    proc = subprocess.Popen([TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", dbpath,
                             "--nounixsocket"], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        if proc.poll() is not None:
            raise RuntimeError("tamgad exited with %s" % proc.returncode)
        c = socket.socket()
        c.settimeout(0.2)
        if c.connect_ex(("127.0.0.1", port)) == 0:
            c.close()
            break
        c.close()
        time.sleep(0.1)
    return proc, pymongo.MongoClient("mongodb://127.0.0.1:%d/" % port, serverSelectionTimeoutMS=20000)


def stop(proc, client):
    client.close()
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)


def reading(s, sec, v):
    return {"sensor": s, "t": T0 + datetime.timedelta(seconds=sec), "v": v, "w": float(sec % 97)}


def both(db, docs, ordered=True):
    db.ts.insert_many([dict(d) for d in docs], ordered=ordered)
    db.plain.insert_many([dict(d) for d in docs], ordered=ordered)


def ts_stats(db):
    return db.command("collStats", "ts")["timeseries"]


def same_answers(db, what):
    pipes = [
        [{"$group": {"_id": {"s": "$sensor", "h": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                     "n": {"$sum": 1}, "v": {"$sum": "$v"}, "lo": {"$min": "$t"}, "hi": {"$max": "$t"}}},
         {"$sort": {"_id.s": 1, "_id.h": 1}}],
        [{"$match": {"sensor": 3}}, {"$sort": {"t": 1, "v": 1}}, {"$project": {"_id": 0, "t": 1, "v": 1, "w": 1}}],
        [{"$match": {"t": {"$gte": T0 + datetime.timedelta(minutes=50), "$lt": T0 + datetime.timedelta(minutes=130)}}},
         {"$sort": {"sensor": 1, "t": 1, "v": 1}}, {"$project": {"_id": 0, "sensor": 1, "t": 1, "v": 1}}],
        [{"$sort": {"sensor": 1, "t": -1}}, {"$group": {"_id": "$sensor", "last": {"$first": "$t"}}},
         {"$sort": {"_id": 1}}],
    ]
    for i, p in enumerate(pipes):
        a = list(db.ts.aggregate(p))
        b = list(db.plain.aggregate(p))
        check("%s: pipeline %d equal to the plain collection" % (what, i), a == b and len(a) > 0,
              "%d vs %d documents" % (len(a), len(b)))
    check("%s: counts equal" % what, db.ts.count_documents({}) == db.plain.count_documents({}))


def main():
    work = tempfile.mkdtemp(prefix="ts_reopen_", dir=os.environ.get("TMPDIR"))
    dbpath = os.path.join(work, "db")
    os.makedirs(dbpath)
    port = free_port()
    log = open(os.path.join(work, "tamgad.log"), "w")
    rnd = random.Random(19)
    try:
        proc, client = start(dbpath, port, log)
        db = client.tsreopen
        db.create_collection("ts", timeseries={"timeField": "t", "metaField": "sensor", "granularity": "seconds"})
        db.create_collection("plain")
        # in order: every sensor, every minute, HOURS hours, in batches of ten minutes
        for m0 in range(0, HOURS * 60, 10):
            both(db, [reading(s, (m0 + m) * STEP, m0 + m) for m in range(10) for s in range(SENSORS)])
        buckets = db.command("count", "ts", rawData=True)["n"]
        check("in-order ingest: one bucket per sensor and hour", buckets == SENSORS * HOURS, "%d" % buckets)
        same_answers(db, "in order")
        stop(proc, client)

        # after a restart: late readings (half-minute marks), newest first
        proc, client = start(dbpath, port, log)
        db = client.tsreopen
        late = [reading(s, m * STEP + 30, -m) for m in range(HOURS * 60 - 1, -1, -3) for s in range(SENSORS)]
        for i in range(0, len(late), 40):
            both(db, late[i:i + 40], ordered=(i % 80 == 0))
        n = db.command("count", "ts", rawData=True)["n"]
        check("late readings after a restart joined the stored buckets", n == buckets, "%d buckets, were %d" % (n, buckets))
        st = ts_stats(db)
        check("one query per sensor, then one per older hour", st["numBucketsQueried"] == SENSORS * HOURS, repr(st))
        check("numBucketsReopened counted", st["numBucketsReopened"] == st["numBucketsQueried"], repr(st))
        check("time backward archives", st["numBucketsArchivedDueToTimeBackward"] == SENSORS * (HOURS - 1), repr(st))
        check("no bucket opened for them", st["numBucketInserts"] == 0 and st["numBucketQueriesFailed"] == 0, repr(st))
        check("counters mongod names", all(k in st for k in (
            "numBucketFetchesFailed", "numBucketsFetched", "numActiveBuckets", "numBucketsClosedDueToTimeForward")))
        same_answers(db, "after a restart")

        # then readings in random order: time forward opens a bucket (mongod
        # queries only after a time-backward rollover), time backward goes
        # back into a stored or archived bucket
        shuffled = [reading(s, m * STEP + 15, 1000 + m) for m in range(HOURS * 60) if m % 4 == 1 for s in range(SENSORS)]
        rnd.shuffle(shuffled)
        for i in range(0, len(shuffled), 40):
            both(db, shuffled[i:i + 40])
        n1 = db.command("count", "ts", rawData=True)["n"]
        st = ts_stats(db)
        check("out-of-order readings mostly joined stored buckets", n1 - buckets < len(shuffled) // 4,
              "%d new buckets for %d readings" % (n1 - buckets, len(shuffled)))
        check("archived buckets fetched", st["numBucketsFetched"] > 0, repr(st))
        same_answers(db, "after out-of-order readings")

        # one reading later than every bucket's span: a new bucket per sensor
        both(db, [reading(s, (HOURS + 2) * 3600, 999) for s in range(SENSORS)])
        n2 = db.command("count", "ts", rawData=True)["n"]
        check("time forward past every bucket opens new ones", n2 == n1 + SENSORS, "%d, were %d" % (n2, n1))
        same_answers(db, "after time forward")
        stop(proc, client)
    finally:
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
