"""kill -9 against a `tamgad --replSet` in the middle of the seed's computed
pattern (issue 16 item 8), through PyMongo: a transaction that inserted the
review but not yet the book's summary update is killed: after the restart
neither write is there; a transaction committed with {w: 1, j: true} and
acknowledged survives the kill whole.

    python3 txn_kill9.py path/to/tamgad

Starts its own tamgad (raft_cluster.Member: a free port, a temporary --dbpath
under TMPDIR) twice; prints "N passed, N failed".
"""
import os
import shutil
import sys
import tempfile
import time

import pymongo
from pymongo.write_concern import WriteConcern

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "replset"))
from raft_cluster import Member, free_ports  # noqa: E402

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


def start(member):
    member.start()
    client = pymongo.MongoClient("mongodb://%s/?replicaSet=rs0" % member.host, serverSelectionTimeoutMS=20000)
    for _ in range(200):
        try:
            if client.admin.command("hello").get("isWritablePrimary"):
                break
        except pymongo.errors.PyMongoError:
            pass
        time.sleep(0.1)
    return client


def kill9(member, client):
    client.close()
    member.kill9()


def main():
    work = tempfile.mkdtemp(prefix="txn-kill9-", dir=os.environ.get("TMPDIR"))
    member = Member(TAMGAD, free_ports(1)[0], os.path.join(work, "db"), "rs0", ["--replSetAutoInitiate"])
    try:
        client = start(member)
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
        kill9(member, client)

        client = start(member)
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
        kill9(member, client)
    finally:
        member.kill9()
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
