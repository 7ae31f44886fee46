"""Retryable findAndModify on a time-series collection (issue 19) through
PyMongo against a single-member `tamgad --replSet --setParameter
enableTestCommands=1`.  Its oplog entries are the buckets', so the first
reply is kept whole for the txnNumber (as a time-series insert is): the same
statement re-sent with the same lsid/txnNumber answers that reply (with
retriedStmtId) and is not applied again; the driver's retry after the
connection closes after the commit (onPrimaryTransactionalWrite) or before
the command (failCommand closeConnection) applies it once.  A retryable
bulkWrite command on a time-series collection is kept whole the same way
(e2e.replset_retry_ts retries these on a new primary after a failover).

Run by CTest through with_tamgad.sh (TAMGA_URI); prints "N passed, N failed".
"""
import datetime
import os
import sys
import time
import unittest

import pymongo
from bson.int64 import Int64
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

URI = os.environ.get("TAMGA_URI", "mongodb://127.0.0.1:27017")
T0 = datetime.datetime(2026, 1, 1)


class RetryTimeseries(unittest.TestCase):
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
        cls.client = pymongo.MongoClient(URI, serverSelectionTimeoutMS=10000, retryWrites=True)
        cls.client.drop_database("e2e_retry_ts")
        cls.db = cls.client["e2e_retry_ts"]

    @classmethod
    def tearDownClass(cls):
        cls.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        cls.client.admin.command("configureFailPoint", "failCommand", mode="off")
        cls.client.close()

    @staticmethod
    def end_raw(s):
        """a session given txnNumbers by hand never goes back to the
        driver's pool (its own counter would be behind)"""
        s._server_session.mark_dirty()
        s.end_session()

    def make(self, name):
        self.db.drop_collection(name)
        self.db.create_collection(name, timeseries={"timeField": "t", "metaField": "m"})
        c = self.db[name]
        c.insert_many([{"t": T0 + datetime.timedelta(seconds=i), "m": "s1", "v": i, "k": i} for i in range(3)])
        return c

    def test_same_statement_resent(self):
        """update by hand, re-sent with the same lsid/txnNumber: the first
        reply again, $inc applied once; then a remove the same way"""
        c = self.make("resend")
        s = self.client.start_session()
        self.addCleanup(self.end_raw, s)
        lsid = s.session_id
        cmd = {"findAndModify": "resend", "query": {"k": 1}, "update": {"$inc": {"v": 100}}, "new": True,
               "lsid": lsid, "txnNumber": Int64(7)}
        first = self.db.command(cmd, session=s)
        again = self.db.command(cmd, session=s)
        self.assertEqual(first["value"]["v"], 101)
        self.assertEqual(again["value"], first["value"])
        self.assertEqual(again["lastErrorObject"], first["lastErrorObject"])
        self.assertEqual(again.get("retriedStmtId"), 0)
        self.assertEqual(c.find_one({"k": 1})["v"], 101)
        rm = {"findAndModify": "resend", "query": {"k": 2}, "remove": True,
              "lsid": lsid, "txnNumber": Int64(8)}
        r1 = self.db.command(rm, session=s)
        c.insert_one({"t": T0, "m": "s1", "v": 2, "k": 2})   # the same measurement again
        r2 = self.db.command(rm, session=s)
        self.assertEqual(r1["value"]["k"], 2)
        self.assertEqual(r2["value"], r1["value"])
        self.assertEqual(c.count_documents({"k": 2}), 1)   # the retry removed nothing
        # a new txnNumber runs again
        r3 = self.db.command(dict(rm, txnNumber=Int64(9)), session=s)
        self.assertEqual(r3["lastErrorObject"]["n"], 1)
        self.assertEqual(c.count_documents({"k": 2}), 0)

    def test_driver_retry_after_commit(self):
        """the connection closes after the commit: PyMongo retries, the retry
        answers the first reply, the $inc shows once"""
        c = self.make("after")
        self.client.admin.command({"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}})
        try:
            doc = c.find_one_and_update({"k": 0}, {"$inc": {"v": 5}}, return_document=ReturnDocument.AFTER)
        finally:
            self.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        self.assertEqual(doc["v"], 5)
        self.assertEqual(c.find_one({"k": 0})["v"], 5)
        before = c.count_documents({})
        self.client.admin.command({"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}})
        try:
            gone = c.find_one_and_delete({"k": 1})
        finally:
            self.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        self.assertEqual(gone["k"], 1)
        self.assertEqual(c.count_documents({}), before - 1)

    def test_driver_retry_fail_command(self):
        """failCommand closes the connection: the driver's retry applies it once"""
        c = self.make("failcmd")
        self.client.admin.command({"configureFailPoint": "failCommand", "mode": {"times": 1},
                                   "data": {"failCommands": ["findAndModify"], "closeConnection": True}})
        try:
            doc = c.find_one_and_update({"k": 2}, {"$inc": {"v": 1}}, return_document=ReturnDocument.BEFORE)
        finally:
            self.client.admin.command("configureFailPoint", "failCommand", mode="off")
        self.assertEqual(doc["v"], 2)
        self.assertEqual(c.find_one({"k": 2})["v"], 3)

    def test_bulk_write_command_resent(self):
        """the bulkWrite command's time-series insert, update and delete as
        a retryable write, re-sent with the same lsid/txnNumber: its first
        reply (cursor items included), nothing applied twice"""
        c = self.make("bw")
        s = self.client.start_session()
        self.addCleanup(self.end_raw, s)
        cmd = {"bulkWrite": 1, "ops": [
            {"insert": 0, "document": {"t": T0, "m": "s2", "v": 1, "k": 10}},
            {"update": 0, "filter": {"k": 0}, "updateMods": {"$inc": {"v": 7}}},
            {"delete": 0, "filter": {"k": 1}}],
            "nsInfo": [{"ns": "e2e_retry_ts.bw"}], "lsid": s.session_id, "txnNumber": Int64(1000)}
        first = self.client.admin.command(cmd, session=s)
        self.assertEqual((first["nErrors"], first["nInserted"], first["nModified"], first["nDeleted"]), (0, 1, 1, 1))
        c.insert_one({"t": T0, "m": "s1", "v": 1, "k": 1})   # the deleted measurement again
        again = self.client.admin.command(cmd, session=s)
        for f in ("nErrors", "nInserted", "nMatched", "nModified", "nDeleted", "nUpserted"):
            self.assertEqual(again[f], first[f], f)
        self.assertEqual(again["cursor"]["firstBatch"], first["cursor"]["firstBatch"])
        self.assertEqual(c.count_documents({"k": 10}), 1)
        self.assertEqual(c.find_one({"k": 0})["v"], 7)
        self.assertEqual(c.count_documents({"k": 1}), 1)

    def test_bulk_write_closed_after_commit(self):
        """the connection closes after the bulkWrite committed: the same
        command on a new connection answers its first reply"""
        c = self.make("bwclose")
        s = self.client.start_session()
        self.addCleanup(self.end_raw, s)
        cmd = {"bulkWrite": 1, "ops": [{"update": 0, "filter": {"k": 2}, "updateMods": {"$inc": {"v": 1}}}],
               "nsInfo": [{"ns": "e2e_retry_ts.bwclose"}], "lsid": s.session_id, "txnNumber": Int64(1001)}
        self.client.admin.command({"configureFailPoint": "onPrimaryTransactionalWrite", "mode": {"times": 1}})
        try:
            with self.assertRaises(pymongo.errors.AutoReconnect):
                self.client.admin.command(cmd, session=s)
        finally:
            self.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        again = self.client.admin.command(cmd, session=s)
        self.assertEqual((again["nErrors"], again["nMatched"], again["nModified"]), (0, 1, 1))
        self.assertEqual(c.find_one({"k": 2})["v"], 3)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
