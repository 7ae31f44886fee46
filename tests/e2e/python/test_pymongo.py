"""PyMongo (Debian's python3-pymongo) against tamgad: the legacy OP_QUERY
isMaster handshake, CRUD, a cursor over several getMore batches, errors.

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
        self.assertEqual(self.client.server_info()["javascriptEngine"], "none")

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


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print("%d passed, %d failed" % (result.testsRun - failed - skipped, failed))
    sys.exit(1 if failed else 0)
