# repl_insns.py -- the client side of bench/repl_insns.sh (issue 16): PyMongo
# with its defaults (retryable writes: every insert and update on a replica
# set carries lsid + txnNumber) against one tamgad.
#   python3 repl_insns.py URI rs|sa N insert|inc|txn
# Initiates a replica set when asked (rs), preloads 1,000 documents for
# `inc`, warms up (300 operations, 50 transactions), prints WARM, waits for a
# line on stdin (the caller zeroes callgrind's counters), runs N operations
# (insert_one; update_one({_id}, {$inc}); a transaction of 10 insert_one)
# and prints DONE.
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pymongo_python  # noqa: E402
pymongo_python.require()
import pymongo  # noqa: E402

uri, mode, n, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
client = pymongo.MongoClient(uri, directConnection=True)
db = client.bench
if mode == "rs":
    try:
        client.admin.command("replSetInitiate")
    except pymongo.errors.OperationFailure:
        pass   # already initiated
    for _ in range(100):
        if client.admin.command("hello").get("isWritablePrimary"):
            break
        time.sleep(0.1)
db.drop_collection("ins")
db.drop_collection("inc")
db.inc.insert_many([{"_id": i, "n": 0, "pad": "x" * 50} for i in range(1000)])


def op(i):
    if kind == "insert":
        db.ins.insert_one({"_id": 10_000_000 + i, "a": i, "b": "hello world", "c": [1, 2, 3]})
    elif kind == "inc":
        db.inc.update_one({"_id": i % 1000}, {"$inc": {"n": 1}})
    else:
        with client.start_session() as s:
            with s.start_transaction():
                for k in range(10):
                    db.ins.insert_one({"_id": 20_000_000 + i * 10 + k, "a": k}, session=s)


for i in range(300 if kind != "txn" else 50):
    op(i)
print("WARM", flush=True)
sys.stdin.readline()
for i in range(1000, 1000 + n):
    op(i)
print("DONE", flush=True)
