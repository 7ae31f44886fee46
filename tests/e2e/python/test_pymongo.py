"""PyMongo (Debian's python3-pymongo) against tamgad: the legacy OP_QUERY
isMaster handshake, CRUD, a cursor over several getMore batches, errors, a
capped collection tailed by a TAILABLE_AWAIT cursor woken by another client.

Run by CTest through with_tamgad.sh (TAMGA_URI); prints "N passed, N failed".
"""
import os
import sys
import unittest

import pymongo
from pymongo.errors import DuplicateKeyError, OperationFailure

URI = os.environ.get("TAMGA_URI", "mongodb://127.0.0.1:27017")


def count(db, name, query):
    """The count command (count_documents runs an aggregation)."""
    return db.command("count", name, query=query)["n"]


class TamgaPyMongo(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000)
        cls.db = cls.client["e2e_python"]
        cls.client.drop_database("e2e_python")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_handshake(self):
        hello = self.client.admin.command("ismaster")
        self.assertTrue(hello["ismaster"])
        self.assertEqual(hello["maxBsonObjectSize"], 16 * 1024 * 1024)
        self.assertEqual(self.client.server_info()["javascriptEngine"], "mozjs")

    def test_compressed(self):
        for comp in ("zlib", "zstd", "snappy"):
            try:
                c = pymongo.MongoClient(URI, compressors=comp, serverSelectionTimeoutMS=10000)
                c.admin.command("ping")
            except Exception as e:  # compressor module not installed on this machine
                if "not available" in str(e) or "not installed" in str(e) or isinstance(e, pymongo.errors.ConfigurationError):
                    continue
                raise
            coll = c["e2e_python"]["z_" + comp]
            coll.insert_many([{"i": i, "pad": "z" * 300} for i in range(40)])
            self.assertEqual(count(c["e2e_python"], "z_" + comp, {}), 40)
            coll.drop()
            c.close()

    def test_crud_and_cursor(self):
        coll = self.db["items"]
        coll.insert_many([{"_id": i, "n": i, "odd": i % 2 == 1} for i in range(300)])
        self.assertEqual(count(self.db, "items", {"odd": True}), 150)
        ids = [d["_id"] for d in coll.find({}).sort("_id", 1).batch_size(25)]
        self.assertEqual(ids, list(range(300)))
        self.assertEqual(coll.find_one({"_id": 42})["n"], 42)
        r = coll.update_one({"_id": 42}, {"$set": {"n": -1}})
        self.assertEqual(r.modified_count, 1)
        self.assertEqual(coll.find_one({"_id": 42})["n"], -1)
        r = coll.delete_many({"odd": True})
        self.assertEqual(r.deleted_count, 150)

    def test_errors(self):
        coll = self.db["dups"]
        coll.insert_one({"_id": 1})
        with self.assertRaises(DuplicateKeyError) as cm:
            coll.insert_one({"_id": 1})
        self.assertEqual(cm.exception.code, 11000)
        with self.assertRaises(OperationFailure) as cm:
            self.db.command("noSuchCommand")
        self.assertEqual(cm.exception.code, 59)

    def test_capped_tailable_await(self):
        import threading
        import time
        self.db.create_collection("capped", capped=True, size=4096, max=3)
        coll = self.db["capped"]
        self.assertTrue(coll.options()["capped"])
        coll.insert_many([{"_id": i} for i in range(5)])
        self.assertEqual([d["_id"] for d in coll.find()], [2, 3, 4])
        cursor = coll.find(cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(3000)
        self.assertEqual([next(cursor)["_id"] for _ in range(3)], [2, 3, 4])
        writer = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000)
        timer = threading.Timer(0.2, lambda: writer["e2e_python"]["capped"].insert_one({"_id": 5}))
        started = time.monotonic()
        timer.start()
        doc = next(cursor)   # the getMore waits, woken by the other client's insert
        waited = time.monotonic() - started
        timer.join()
        writer.close()
        self.assertEqual(doc["_id"], 5)
        self.assertTrue(0.15 <= waited < 2.5, waited)
        self.assertTrue(cursor.alive)
        cursor.close()

    def test_validate_metadata_and_query_stats(self):
        # validate {metadata: true}: the catalog entry only (issue 20)
        coll = self.db["tb_meta"]
        coll.drop()
        coll.insert_many([{"_id": i, "a": i} for i in range(3)])
        coll.create_index("a")
        r = self.db.command("validate", "tb_meta", metadata=True)
        self.assertTrue(r["valid"])
        self.assertNotIn("nrecords", r)
        self.assertEqual(r["nIndexes"], 2)
        self.assertEqual(r["keysPerIndex"], {"_id_": 0, "a_1": 0})
        self.assertEqual(self.db.validate_collection("tb_meta")["nrecords"], 3)
        with self.assertRaises(pymongo.errors.OperationFailure) as e:
            self.db.command("validate", "tb_meta", metadata=True, full=True)
        self.assertEqual(e.exception.code, 72)
        # $queryStats on every query: the same shape counted on one entry
        admin = self.client.admin
        admin.command("setParameter", 1, internalQueryStatsRateLimit=-1)
        try:
            for i in range(4):
                list(coll.find({"a": i}))
            list(coll.find({"a": "x"}))
            rows = list(admin.aggregate([{"$queryStats": {}}, {"$match": {
                "key.queryShape.cmdNs.coll": "tb_meta"}}]))
            counts = sorted((r["key"]["queryShape"]["filter"]["a"]["$eq"], r["metrics"]["execCount"])
                            for r in rows)
            self.assertEqual(counts, [("?number", 4), ("?string", 1)])
        finally:
            admin.command("setParameter", 1, internalQueryStatsRateLimit=0)

    def test_field_order_hole_through_carriers(self):
        # A $$REMOVE hole (mongod keeps the missing Value's place in the
        # Document) handed through two $unwind, a $group's $topN of $$ROOT,
        # an $unwind and a $sort comes back in place when set again (seeds
        # 1796642882 and 1013 of unit.test_agg's randomized slot check).
        chain = [{"$unwind": "$r"}, {"$unwind": "$r"},
                 {"$group": {"_id": "$_id", "d": {"$topN": {"n": 1, "output": "$$ROOT", "sortBy": {"k": 1}}}}},
                 {"$unwind": "$d"}, {"$sort": {"_id": 1}}, {"$replaceWith": "$d"}]
        coll = self.db["slot_carry"]
        coll.drop()
        coll.insert_one({"_id": 9, "d": 92, "r": [{}]})
        got = list(coll.aggregate([{"$set": {"d": "$$REMOVE"}}] + chain + [{"$set": {"d": 901}}]))
        self.assertEqual([list(x.items()) for x in got], [[("_id", 9), ("d", 901), ("r", {})]])
        got = list(coll.aggregate([{"$set": {"d": "$$REMOVE"}},
                                   {"$facet": {"o": chain + [{"$set": {"d": 901}}]}}]))
        self.assertEqual(list(got[0]["o"][0].keys()), ["_id", "d", "r"])
        coll.drop()
        coll.insert_one({"_id": 6, "s": {"z": 602, "x": 603}, "r": [{}]})
        got = list(coll.aggregate([{"$set": {"s.z": "$$REMOVE"}}] + chain + [
            {"$lookup": {"from": "slot_carry", "pipeline": [{"$project": {"_id": 1}}], "as": "s.z"}}]))
        self.assertEqual(list(got[0].keys()), ["_id", "s", "r"])
        self.assertEqual(list(got[0]["s"].items()), [("z", [{"_id": 6}]), ("x", 603)])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print("%d passed, %d failed" % (result.testsRun - failed - skipped, failed))
    sys.exit(1 if failed else 0)
