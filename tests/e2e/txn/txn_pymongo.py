"""PyMongo (Debian's python3-pymongo) transactions against a `tamgad
--replSet`: `with client.start_session() as s: with s.start_transaction()`
committing the seed's computed pattern (a review and its book's summary),
an exception inside the block aborting both writes, a write conflict
labelled TransientTransactionError, and with_transaction's retry.

Run by CTest through with_tamgad.sh (TAMGA_URI); prints "N passed, N failed".
"""
import os
import sys
import threading
import time
import unittest

import pymongo
from pymongo.errors import OperationFailure
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

URI = os.environ.get("TAMGA_URI", "mongodb://127.0.0.1:27017")


class TamgaTransactions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        direct = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000, directConnection=True) \
            if pymongo.version_tuple >= (3, 11) else pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000)
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
        cls.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000)
        cls.client.drop_database("e2e_txn_py")
        cls.db = cls.client["e2e_txn_py"]
        cls.db.create_collection("books")
        cls.db.create_collection("reviews")
        cls.db.books.insert_one({"_id": 1, "reviewCount": 0, "ratingSum": 0})

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def add_review(self, s, rating):
        self.db.reviews.insert_one({"bookId": 1, "rating": rating}, session=s)
        self.db.books.update_one({"_id": 1}, {"$inc": {"reviewCount": 1, "ratingSum": rating}}, session=s)

    def test_1_commit(self):
        with self.client.start_session() as s:
            with s.start_transaction(read_concern=ReadConcern("snapshot"),
                                     write_concern=WriteConcern(w="majority", j=True)):
                self.add_review(s, 4)
                # its own writes, nobody else's
                self.assertEqual(self.db.books.find_one({"_id": 1}, session=s)["reviewCount"], 1)
                self.assertEqual(self.db.books.find_one({"_id": 1})["reviewCount"], 0)
        self.assertEqual(self.db.books.find_one({"_id": 1})["ratingSum"], 4)
        self.assertEqual(self.db.reviews.count_documents({}), 1)

    def test_2_exception_aborts(self):
        with self.client.start_session() as s:
            with self.assertRaises(RuntimeError):
                with s.start_transaction():
                    self.add_review(s, 1)
                    raise RuntimeError("application error")
        self.assertEqual(self.db.books.find_one({"_id": 1})["reviewCount"], 1)
        self.assertEqual(self.db.reviews.count_documents({}), 1)

    def test_3_conflict_and_with_transaction(self):
        with self.client.start_session() as s1, self.client.start_session() as s2:
            s1.start_transaction()
            self.db.books.update_one({"_id": 1}, {"$inc": {"ratingSum": 1}}, session=s1)
            s2.start_transaction()
            with self.assertRaises(OperationFailure) as cm:
                self.db.books.update_one({"_id": 1}, {"$inc": {"ratingSum": 1}}, session=s2)
            self.assertEqual(cm.exception.code, 112)
            self.assertTrue(cm.exception.has_error_label("TransientTransactionError"))
            s2.abort_transaction()
            timer = threading.Timer(0.2, s1.commit_transaction)
            timer.start()
            s2.with_transaction(lambda s: self.db.books.update_one(
                {"_id": 1}, {"$inc": {"ratingSum": 10}}, session=s))
            timer.join()
        self.assertEqual(self.db.books.find_one({"_id": 1})["ratingSum"], 15)

    def test_4_standalone_rules(self):
        with self.client.start_session() as s:
            with s.start_transaction():
                with self.assertRaises(OperationFailure) as cm:
                    self.db.command("count", "books", session=s)
                self.assertEqual(cm.exception.code, 263)
                # refused before the transaction began: nothing to commit
                # (mongod answers the commit 251 too)
                s.abort_transaction()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    print("%d passed, %d failed" % (result.testsRun - failed - skipped, failed))
    sys.exit(1 if failed else 0)
