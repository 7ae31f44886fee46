"""PyMongo (Debian's python3-pymongo) change streams against a `tamgad
--replSet`: Collection.watch(), Database.watch() and MongoClient.watch()
with the events of inserts, updates, replaces, deletes and a drop with its
invalidate; resume_after, start_after and start_at_operation_time;
full_document='updateLookup'; a pipeline stage that is not allowed, and a
stream on a standalone-only namespace, refused with mongod's codes.

Run by CTest through with_tamgad.sh (TAMGA_URI); prints "N passed, N failed".
"""
import os
import sys
import time
import unittest

import pymongo
from pymongo.errors import OperationFailure

URI = os.environ.get("TAMGA_URI", "mongodb://127.0.0.1:27017")


class TamgaChangeStreams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        direct = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000, directConnection=True)
        try:
            direct.admin.command("replSetInitiate", {})
        except OperationFailure as e:
            if e.code != 23:  # AlreadyInitialized
                raise
        for _ in range(100):
            if direct.admin.command("hello").get("isWritablePrimary"):
                break
            time.sleep(0.1)
        direct.close()
        cls.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000, directConnection=True)
        cls.client.drop_database("e2e_cs_py")
        cls.db = cls.client["e2e_cs_py"]

    def next_events(self, stream, n):
        out = []
        deadline = time.time() + 10
        while len(out) < n and time.time() < deadline:
            ev = stream.try_next()
            if ev is not None:
                out.append(ev)
        return out

    def test_collection_events(self):
        c = self.db["books"]
        c.insert_one({"_id": 0})
        with c.watch(max_await_time_ms=200) as s:
            c.insert_one({"_id": 1, "t": "a"})
            c.update_one({"_id": 1}, {"$set": {"t": "b"}})
            c.replace_one({"_id": 1}, {"t": "c"})
            c.delete_one({"_id": 1})
            evs = self.next_events(s, 4)
            self.assertEqual([e["operationType"] for e in evs], ["insert", "update", "replace", "delete"])
            self.assertEqual(evs[0]["fullDocument"], {"_id": 1, "t": "a"})
            self.assertEqual(evs[1]["updateDescription"]["updatedFields"], {"t": "b"})
            self.assertEqual(evs[2]["fullDocument"], {"_id": 1, "t": "c"})
            self.assertEqual(evs[3]["documentKey"], {"_id": 1})
            self.assertEqual(evs[0]["ns"], {"db": "e2e_cs_py", "coll": "books"})
            self.assertIsNotNone(s.resume_token)
            c.drop()
            evs = self.next_events(s, 2)
            self.assertEqual([e["operationType"] for e in evs], ["drop", "invalidate"])
            self.assertFalse(s.alive)

    def test_database_and_client(self):
        with self.db.watch(max_await_time_ms=200) as dbs, self.client.watch(max_await_time_ms=200) as cls_:
            self.db["a"].insert_one({"_id": "x"})
            self.client["e2e_cs_py_other"]["b"].insert_one({"_id": "y"})
            ev = self.next_events(dbs, 1)
            self.assertEqual(ev[0]["ns"], {"db": "e2e_cs_py", "coll": "a"})
            evs = self.next_events(cls_, 2)
            self.assertEqual(sorted(e["ns"]["db"] for e in evs), ["e2e_cs_py", "e2e_cs_py_other"])

    def test_resume_options(self):
        c = self.db["resume"]
        c.insert_one({"_id": 0})
        with c.watch(max_await_time_ms=200) as s:
            c.insert_many([{"_id": 1}, {"_id": 2}, {"_id": 3}])
            evs = self.next_events(s, 3)
            token = evs[0]["_id"]
        with c.watch(resume_after=token, max_await_time_ms=200) as s:
            self.assertEqual([e["documentKey"]["_id"] for e in self.next_events(s, 2)], [2, 3])
        with c.watch(start_after=token, max_await_time_ms=200) as s:
            self.assertEqual(self.next_events(s, 1)[0]["documentKey"]["_id"], 2)
        op_time = self.db.command("insert", "resume", documents=[{"_id": 4}])["operationTime"]
        with c.watch(start_at_operation_time=op_time, max_await_time_ms=200) as s:
            self.assertEqual(self.next_events(s, 1)[0]["documentKey"]["_id"], 4)

    def test_update_lookup(self):
        c = self.db["lookup"]
        c.insert_one({"_id": 1, "n": 0})
        with c.watch(full_document="updateLookup", max_await_time_ms=200) as s:
            c.update_one({"_id": 1}, {"$inc": {"n": 1}})
            ev = self.next_events(s, 1)[0]
            self.assertEqual(ev["fullDocument"], {"_id": 1, "n": 1})

    def test_refused(self):
        with self.assertRaises(OperationFailure) as cm:
            with self.db["x"].watch([{"$group": {"_id": 1}}]) as s:
                s.try_next()
        self.assertEqual(cm.exception.code, 20)
        with self.assertRaises(OperationFailure) as cm:
            with self.db["system.js"].watch() as s:
                s.try_next()
        self.assertEqual(cm.exception.code, 73)


if __name__ == "__main__":
    r = unittest.main(exit=False, verbosity=0).result
    failed = len(r.failures) + len(r.errors)
    print("%d passed, %d failed" % (r.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
