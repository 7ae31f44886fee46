"""Retryable *batches* per statement (issue 16) through PyMongo against a
`tamgad --replSet --setParameter enableTestCommands=1`: mongod's
onPrimaryTransactionalWrite fail point acts in the commit of each storage
transaction of a retryable write, so a batch can be cut after some of its
statements committed; the driver retries the whole command on its network
error and the server answers each executed statement from the session's
history (insert/delete n: 1, an update's n/nModified/upserted from its oplog
entry) and runs only the others, as mongod's checkStatementExecuted.  Also
raw commands with explicit stmtIds (retriedStmtIds in the reply), mongod's
refusals (multi=true, limit=0: 72 write errors; stmtId with stmtIds: 72;
a stmtIds of the wrong length: 16), and the oplog entries' stmtIds and
prevOpTime chain across a retry.

Run by CTest through with_tamgad.sh (TAMGA_URI); prints "N passed, N failed".
"""
import os
import sys
import time
import unittest

import pymongo
from bson.int64 import Int64
from pymongo import UpdateOne, InsertOne, DeleteOne
from pymongo.errors import OperationFailure

URI = os.environ.get("TAMGA_URI", "mongodb://127.0.0.1:27017")


class RetryBatch(unittest.TestCase):
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
        cls.client.drop_database("e2e_retry_batch")
        cls.db = cls.client["e2e_retry_batch"]

    @classmethod
    def tearDownClass(cls):
        cls.client.admin.command("configureFailPoint", "onPrimaryTransactionalWrite", mode="off")
        cls.client.close()

    def fail_point(self, mode, data=None):
        cmd = {"configureFailPoint": "onPrimaryTransactionalWrite", "mode": mode}
        if data is not None:
            cmd["data"] = data
        self.client.admin.command(cmd)

    def retried_before(self):
        return self.client.admin.command("serverStatus")["transactions"]["retriedStatementsCount"]

    def test_update_batch_closed_after_commit(self):
        """the third of three updates commits and the connection closes (the
        driver splits the bulk into an insert and an update command): the
        retried update answers both statements from their entries"""
        c = self.db.upd
        c.insert_one({"_id": 1, "x": 10})
        before = self.retried_before()
        self.fail_point({"skip": 2})
        try:
            r = c.bulk_write([InsertOne({"_id": 2, "x": 20}), UpdateOne({"_id": 1}, {"$inc": {"x": 1}}),
                              UpdateOne({"_id": 2}, {"$inc": {"x": 1}})], ordered=True)
        finally:
            self.fail_point("off")
        self.assertEqual((r.inserted_count, r.matched_count, r.modified_count), (1, 2, 2))
        self.assertEqual(sorted(d["x"] for d in c.find()), [11, 21])
        self.assertEqual(self.retried_before() - before, 2)

    def test_update_batch_cut_before_commit(self):
        """mongod's retryable_writes jstest: the second update fails before
        its commit; the same command again answers the first from its entry
        (retriedStmtIds [0]) and runs the second"""
        c = self.db.cut
        c.insert_many([{"_id": 0, "x": 0}, {"_id": 1, "x": 1}])
        s = self.client.start_session()
        cmd = {"update": "cut", "updates": [{"q": {"x": 0}, "u": {"$inc": {"y": 1}}},
                                            {"q": {"x": 1}, "u": {"$inc": {"y": 1}}}],
               "ordered": True, "txnNumber": Int64(2)}
        self.fail_point({"skip": 1}, {"closeConnection": False, "failBeforeCommitExceptionCode": 1})
        try:
            r = self.db.command(cmd, session=s)
        finally:
            self.fail_point("off")
        self.assertEqual(r["nModified"], 1)
        self.assertEqual([(e["index"], e["code"]) for e in r["writeErrors"]], [(1, 1)])
        r = self.db.command(cmd, session=s)
        self.assertEqual((r["n"], r["nModified"], r["retriedStmtIds"]), (2, 2, [0]))
        self.assertNotIn("writeErrors", r)
        self.assertEqual([d.get("y") for d in c.find().sort("_id", 1)], [1, 1])

    def test_insert_batch_closed_after_commit(self):
        """the connection closes after the batch committed: the retry
        inserts nothing again and answers n from the history"""
        c = self.db.ins
        self.fail_point({"times": 1})   # closeConnection defaults to true
        r = c.insert_many([{"_id": i} for i in range(5)])
        self.assertEqual(len(r.inserted_ids), 5)
        self.assertEqual(c.count_documents({}), 5)
        entries = list(self.client.local["oplog.rs"].find({"ns": "e2e_retry_batch.ins", "op": "i"}))
        self.assertEqual(sorted(e["stmtId"] for e in entries), [0, 1, 2, 3, 4])

    def test_mixed_bulk_upsert_delete(self):
        """a bulkWrite's upserts and deletes retried after their commit: the
        upserted ids come from the entries, deletes answer n: 1"""
        c = self.db.mix
        c.insert_many([{"_id": "a"}, {"_id": "b"}])
        self.fail_point({"times": 2})
        r = c.bulk_write([UpdateOne({"_id": "u1"}, {"$set": {"v": 1}}, upsert=True),
                          UpdateOne({"_id": "u2"}, {"$set": {"v": 2}}, upsert=True),
                          DeleteOne({"_id": "a"}), DeleteOne({"_id": "b"}), InsertOne({"_id": "c"})],
                         ordered=True)
        self.assertEqual(r.upserted_ids, {0: "u1", 1: "u2"})
        self.assertEqual(r.deleted_count, 2)
        self.assertEqual(r.inserted_count, 1)
        self.assertEqual(sorted(d["_id"] for d in c.find()), ["c", "u1", "u2"])

    def test_raw_stmt_ids(self):
        """explicit stmtIds: a retry of a batch that overlaps the first
        answers the common statements (retriedStmtIds) and runs the new one"""
        s = self.client.start_session()  # its lsid; the txnNumbers are ours
        r = self.db.command({"insert": "raw", "documents": [{"_id": 1}, {"_id": 2}], "stmtIds": [7, 8],
                             "txnNumber": Int64(1)}, session=s)
        self.assertEqual(r["n"], 2)
        self.assertNotIn("retriedStmtIds", r)
        r = self.db.command({"insert": "raw", "documents": [{"_id": 2}, {"_id": 3}], "stmtIds": [8, 9],
                             "txnNumber": Int64(1)}, session=s)
        self.assertEqual(r["n"], 2)
        self.assertEqual(r["retriedStmtIds"], [8])
        self.assertEqual(sorted(d["_id"] for d in self.db.raw.find()), [1, 2, 3])
        # the chain: the third insert's entry links to the second's
        e = {x["stmtId"]: x for x in self.client.local["oplog.rs"].find({"ns": "e2e_retry_batch.raw"})}
        self.assertEqual(e[9]["prevOpTime"]["ts"], e[8]["ts"])
        self.assertEqual(e[8]["prevOpTime"]["ts"], e[7]["ts"])
        # stmtId base: stmtId 8 + index
        r = self.db.command({"delete": "raw", "deletes": [{"q": {"_id": 5}, "limit": 1},
                                                          {"q": {"_id": 3}, "limit": 1}],
                             "stmtId": 8, "txnNumber": Int64(1)}, session=s)
        self.assertEqual((r["n"], r["retriedStmtIds"]), (2, [8, 9]))
        self.assertEqual(self.db.raw.count_documents({}), 3)

    def test_update_retry_from_entries(self):
        s = self.client.start_session()  # its lsid; the txnNumbers are ours
        self.db.up2.insert_one({"_id": 1, "x": 0})
        cmd = {"update": "up2", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"x": 1}}},
                                            {"q": {"_id": 2}, "u": {"$set": {"y": 1}}, "upsert": True},
                                            {"q": {"_id": 99}, "u": {"$set": {"z": 1}}}],
               "txnNumber": Int64(4)}
        first = self.db.command(cmd, session=s)
        again = self.db.command(cmd, session=s)
        self.assertEqual((first["n"], first["nModified"], first["upserted"]),
                         (again["n"], again["nModified"], again["upserted"]))
        self.assertEqual(again["retriedStmtIds"], [0, 1])
        self.assertEqual(self.db.up2.find_one({"_id": 1})["x"], 1)

    def test_timeseries_batch_kept_whole(self):
        """a time-series insert writes several measurements per bucket entry:
        its retry answers the first reply whole, nothing is inserted twice"""
        import datetime
        self.db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
        now = datetime.datetime(2026, 1, 1)
        docs = [{"t": now + datetime.timedelta(seconds=i), "m": "a", "v": i} for i in range(4)]
        self.fail_point({"times": 1})   # closes the connection after the commit
        r = self.db.ts.insert_many(docs)
        self.assertEqual(len(r.inserted_ids), 4)
        self.assertEqual(self.db.ts.count_documents({}), 4)
        s = self.client.start_session()
        cmd = {"insert": "ts", "documents": [{"t": now, "m": "b", "v": 9}, {"t": now, "m": "b", "v": 10}],
               "txnNumber": Int64(1)}
        self.assertEqual(self.db.command(cmd, session=s)["n"], 2)
        self.assertEqual(self.db.command(cmd, session=s)["n"], 2)
        self.assertEqual(self.db.ts.count_documents({"m": "b"}), 2)

    def test_refusals(self):
        s = self.client.start_session()  # its lsid; the txnNumbers are ours
        r = self.db.command({"update": "ref", "updates": [{"q": {}, "u": {"$set": {"a": 1}}, "multi": True}],
                             "txnNumber": Int64(1)}, session=s)
        self.assertEqual(r["writeErrors"][0]["code"], 72)
        self.assertIn("multi=true", r["writeErrors"][0]["errmsg"])
        r = self.db.command({"delete": "ref", "deletes": [{"q": {}, "limit": 0}],
                             "txnNumber": Int64(2)}, session=s)
        self.assertEqual(r["writeErrors"][0]["code"], 72)
        with self.assertRaises(OperationFailure) as cm:
            self.db.command({"insert": "ref", "documents": [{}], "stmtId": 1, "stmtIds": [1],
                             "txnNumber": Int64(3)}, session=s)
        self.assertEqual(cm.exception.code, 72)
        with self.assertRaises(OperationFailure) as cm:
            self.db.command({"insert": "ref", "documents": [{}, {}], "stmtIds": [1],
                             "txnNumber": Int64(4)}, session=s)
        self.assertEqual(cm.exception.code, 16)


if __name__ == "__main__":
    res = unittest.main(exit=False, verbosity=2).result
    ran = res.testsRun
    bad = len(res.failures) + len(res.errors)
    print("%d passed, %d failed" % (ran - bad, bad))
    sys.exit(1 if bad else 0)
