"""kill -9 against a `tamgad --replSet` in the middle of the seed's computed
pattern (issue 16 item 8), through PyMongo: a transaction that inserted the
review but not yet the book's summary update is killed: after the restart
neither write is there; a transaction committed with {w: 1, j: true} and
acknowledged survives the kill whole.

    python3 txn_kill9.py path/to/tamgad

Starts its own tamgad (free port, temporary --dbpath under TMPDIR) twice;
prints "N passed, N failed".
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pymongo
from pymongo.write_concern import WriteConcern

TAMGAD = sys.argv[1]
passed = failed = 0


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
                             "--nounixsocket", "--replSet", "rs0", "--replSetAutoInitiate"],
                            stdout=log, stderr=subprocess.STDOUT)
    for _ in range(300):
        if proc.poll() is not None:
            raise RuntimeError("tamgad exited with %s" % proc.returncode)
        c = socket.socket()
        c.settimeout(0.2)
        if c.connect_ex(("127.0.0.1", port)) == 0:
            c.close()
            break
        c.close()
        time.sleep(0.1)
    client = pymongo.MongoClient("mongodb://127.0.0.1:%d/?replicaSet=rs0" % port, serverSelectionTimeoutMS=20000)
    for _ in range(200):
        try:
            if client.admin.command("hello").get("isWritablePrimary"):
                break
        except pymongo.errors.PyMongoError:
            pass
        time.sleep(0.1)
    return proc, client


def kill9(proc, client):
    client.close()
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def main():
    work = tempfile.mkdtemp(prefix="txn-kill9-", dir=os.environ.get("TMPDIR"))
    dbpath = os.path.join(work, "db")
    os.mkdir(dbpath)
    log = open(os.path.join(work, "tamgad.log"), "ab")
    port = free_port()
    try:
        proc, client = start(dbpath, port, log)
        db = client["shop"]
        db.create_collection("reviews")
        db.books.insert_one({"_id": 1, "title": "Dune", "reviewCount": 0, "ratingSum": 0},
                            bypass_document_validation=False)
        jdb = client.get_database("shop", write_concern=WriteConcern(w=1, j=True))
        # 1. committed with j: true and acknowledged
        with client.start_session() as s:
            with s.start_transaction(write_concern=WriteConcern(w=1, j=True)):
                jdb.reviews.insert_one({"_id": 1, "bookId": 1, "rating": 5}, session=s)
                jdb.books.update_one({"_id": 1}, {"$inc": {"reviewCount": 1, "ratingSum": 5}}, session=s)
        # 2. killed between the two writes: the review is inserted in the
        # transaction, the summary update never comes
        s = client.start_session()
        s.start_transaction()
        db.reviews.insert_one({"_id": 2, "bookId": 1, "rating": 1}, session=s)
        kill9(proc, client)

        proc, client = start(dbpath, port, log)
        db = client["shop"]
        book = db.books.find_one({"_id": 1})
        reviews = list(db.reviews.find({}, sort=[("_id", 1)]))
        check("the acknowledged j:true transaction survived", book is not None and book["reviewCount"] == 1 and
              book["ratingSum"] == 5 and [r["_id"] for r in reviews][:1] == [1], "book %r reviews %r" % (book, reviews))
        check("the killed transaction left nothing (no half-applied review)", [r["_id"] for r in reviews] == [1],
              "reviews %r" % reviews)
        check("summary agrees with the reviews", book is not None and book["reviewCount"] == len(reviews) and
              book["ratingSum"] == sum(r["rating"] for r in reviews), "book %r reviews %r" % (book, reviews))
        # the oplog has exactly the committed transaction's applyOps
        ops = list(client.local["oplog.rs"].find({"o.applyOps": {"$exists": True}}))
        check("one applyOps entry, for the committed transaction", len(ops) == 1 and
              len(ops[0]["o"]["applyOps"]) == 2, "entries %r" % ops)
        kill9(proc, client)
    finally:
        log.close()
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
