"""kill -9 of a standalone tamgad in the middle of a time-series ingest
(issue 19), through PyMongo: batches of one second of every sensor (each
batch appends one measurement to every open bucket: the buckets are written
as byte changes, WiredTiger's modify) acknowledged with {j: true} while a
second thread kills the server.  After the restart every acknowledged
measurement is there exactly once, the batch in flight is there whole or not
at all, the buckets hold what their measurements say, and the ingest goes on
into the recovered buckets (appended again after the restart) up to a clean
restart that still agrees.

    python3 ts_kill9.py path/to/tamgad

Starts its own tamgad (free port, temporary --dbpath under TMPDIR) three
times; prints "N passed, N failed".
"""
import datetime
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pymongo
from pymongo.write_concern import WriteConcern

TAMGAD = sys.argv[1]
SENSORS = 50
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
    client = pymongo.MongoClient("mongodb://127.0.0.1:%d/" % port, serverSelectionTimeoutMS=20000,
                                 retryWrites=False)
    return proc, client


def batch(sec):
    """One second of every sensor: a measurement per sensor, 3 fields."""
    return [{"sensor": s, "t": T0 + datetime.timedelta(seconds=sec), "temp": 15.0 + (sec * 7 + s) % 200 / 10.0,
             "hum": float((sec * 3 + s) % 500), "tag": "s%d" % (sec % 7)} for s in range(SENSORS)]


def ingest(coll, first, stop_after, acked, errors):
    """Insert seconds first, first + 1, ... until an error (the kill) or
    stop_after seconds; each acknowledged second goes into acked."""
    sec = first
    while stop_after is None or sec < first + stop_after:
        try:
            coll.insert_many(batch(sec), ordered=True)
        except pymongo.errors.PyMongoError as e:
            errors.append(e)
            return sec   # in flight when the server died
        acked.append(sec)
        sec += 1
    return None


def seconds_stored(db):
    """{second: count of measurements} over the whole collection."""
    out = {}
    for g in db.m.aggregate([{"$group": {"_id": "$t", "n": {"$sum": 1}}}]):
        out[int((g["_id"].replace(tzinfo=datetime.timezone.utc) - T0).total_seconds())] = g["n"]
    return out


def check_state(db, acked, in_flight, label):
    stored = seconds_stored(db)
    missing = [s for s in acked if stored.get(s) != SENSORS]
    check("%s: every acknowledged second is there with all %d sensors" % (label, SENSORS), not missing,
          "missing or short: %r" % missing[:10])
    extra = sorted(s for s in stored if s not in acked and s != in_flight)
    check("%s: nothing stored that was never sent" % label, not extra, "extra seconds %r" % extra[:10])
    if in_flight is not None:
        check("%s: the batch in flight is whole or absent" % label, stored.get(in_flight, 0) in (0, SENSORS),
              "second %d has %r measurements" % (in_flight, stored.get(in_flight)))
    # each sensor's measurements once, in its buckets
    dup = list(db.m.aggregate([{"$group": {"_id": {"s": "$sensor", "t": "$t"}, "n": {"$sum": 1}}},
                               {"$match": {"n": {"$gt": 1}}}, {"$limit": 3}]))
    check("%s: no measurement twice" % label, not dup, "duplicates %r" % dup)
    # buckets: compressed from their first measurement (control.version 2, or 3
    # when out of order), their counts add up to the measurements their columns
    # unpack to, and each sensor's newest control.max.t is its newest measurement
    buckets = db.command("find", "m", rawData=True, batchSize=100000)["cursor"]["firstBatch"]
    bad = [b["_id"] for b in buckets
           if b["control"]["version"] not in (2, 3) or not 0 < b["control"]["count"] <= 1000
           or any(not isinstance(c, bytes) for c in b["data"].values())]
    counted = sum(b["control"]["count"] for b in buckets)
    unpacked = next(iter(db.m.aggregate([{"$group": {"_id": None, "n": {"$sum": 1}}}])), {"n": 0})["n"]
    newest = {}
    for b in buckets:
        newest[b["meta"]] = max(newest.get(b["meta"], b["control"]["max"]["t"]), b["control"]["max"]["t"])
    want = {d["_id"]: d["t"] for d in db.m.aggregate([{"$group": {"_id": "$sensor", "t": {"$max": "$t"}}}])}
    check("%s: every bucket compressed, counts match what its columns unpack to" % label,
          not bad and counted == unpacked, "%d bad buckets, counts %d, unpacked %d" % (len(bad), counted, unpacked))
    check("%s: each sensor's newest control.max.t is its newest measurement" % label, newest == want,
          "%d sensors differ" % sum(1 for k in want if newest.get(k) != want[k]))


def main():
    work = tempfile.mkdtemp(prefix="ts-kill9-", dir=os.environ.get("TMPDIR"))
    dbpath = os.path.join(work, "db")
    os.mkdir(dbpath)
    log = open(os.path.join(work, "tamgad.log"), "ab")
    port = free_port()
    try:
        proc, client = start(dbpath, port, log)
        db = client.get_database("tsk", write_concern=WriteConcern(w=1, j=True))
        db.create_collection("m", timeseries={"timeField": "t", "metaField": "sensor"})
        acked, errors = [], []
        result = {}

        def writer():
            result["in_flight"] = ingest(db.m, 0, None, acked, errors)

        th = threading.Thread(target=writer)
        th.start()
        # kill once the buckets have grown (appends, not new buckets)
        deadline = time.time() + 60
        while len(acked) < 25 and time.time() < deadline and th.is_alive():
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        th.join(60)
        in_flight = result.get("in_flight")
        check("the writer saw the kill mid-ingest", in_flight is not None and len(acked) >= 25,
              "acked %d, errors %r" % (len(acked), errors[:1]))

        # the old client is closed once a server answers again: closed with
        # none, its endSessions waited serverSelectionTimeoutMS (20 s) for one
        old = client
        proc, client = start(dbpath, port, log)
        old.close()
        db = client.get_database("tsk", write_concern=WriteConcern(w=1, j=True))
        check_state(db, acked, in_flight, "after kill -9")
        # the recovered buckets take appends again
        more = []
        nxt = (in_flight if in_flight is not None else len(acked)) + 1
        ingest(db.m, nxt, 15, more, errors)
        acked2 = acked + more
        check_state(db, acked2, in_flight, "after more ingest")
        client.close()   # before the stop (see above)
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)

        proc, client = start(dbpath, port, log)
        db = client.get_database("tsk")
        check_state(db, acked2, in_flight, "after a clean restart")
        client.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
