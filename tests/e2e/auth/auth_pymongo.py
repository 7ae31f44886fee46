"""PyMongo against tamgad --auth: the localhost exception creates the first
user, SCRAM-SHA-1 and SCRAM-SHA-256 logins (right and wrong passwords,
unknown users: the same 18 AuthenticationFailed), the seed's role split
(readWrite inserts and updates, collMod is 13 Unauthorized), a custom role
that may collMod one collection, unauthenticated clients refused, SASLprep
of SCRAM-SHA-256 passwords ("\u2163"), a SCRAM-SHA-1-only user logging in
without naming a mechanism, and a run of failed attempts after which the
server still serves.

Run by CTest through with_tamgad.sh --auth (TAMGA_URI, TAMGA_PORT); prints
"N passed, N failed".  AUTH_FAILED_ATTEMPTS scales the failed-attempt run
(default 300).
"""
import os
import sys
import time
import unittest

import bson
import bson.int64
import pymongo
from pymongo.errors import OperationFailure

PORT = os.environ.get("TAMGA_PORT", "27017")
HOST = "127.0.0.1:" + PORT
ATTEMPTS = int(os.environ.get("AUTH_FAILED_ATTEMPTS", "300"))


def client(user=None, pwd=None, source="admin", mech=None, **kw):
    opts = dict(serverSelectionTimeoutMS=10000, **kw)
    if user is not None:
        opts.update(username=user, password=pwd, authSource=source)
        if mech:
            opts["authMechanism"] = mech
    return pymongo.MongoClient("mongodb://" + HOST, **opts)


def code_of(fn):
    try:
        fn()
    except OperationFailure as e:
        return e.code, str(e)
    return 0, ""


class TamgaAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        anon = client()
        # the localhost exception: the first user, in admin, and nothing else
        code, _ = code_of(lambda: anon.test.command("insert", "c", documents=[{}]))
        assert code == 13, code
        code, _ = code_of(lambda: anon.test.command("createUser", "x", pwd="p", roles=[]))
        assert code == 13, code
        anon.admin.command("createUser", "root", pwd="rootpw", roles=["root"])
        anon.close()
        cls.root = client("root", "rootpw")
        bs = cls.root.bookstore
        bs.command("createUser", "app", pwd="apppw", roles=["readWrite"])
        bs.command("createRole", "validatorAdmin",
                   privileges=[{"resource": {"db": "bookstore", "collection": "reviews"}, "actions": ["collMod"]}],
                   roles=[])
        bs.command("createUser", "curator", pwd="curatorpw", roles=["readWrite", "validatorAdmin"])
        bs.create_collection("reviews")
        bs.create_collection("books")

    @classmethod
    def tearDownClass(cls):
        cls.root.close()

    def test_localhost_exception_is_over(self):
        anon = client()
        code, msg = code_of(lambda: anon.admin.command("createUser", "late", pwd="p", roles=[]))
        self.assertEqual(code, 13)
        self.assertIn("requires authentication", msg)
        anon.close()

    def test_both_mechanisms(self):
        for mech in ("SCRAM-SHA-1", "SCRAM-SHA-256", None):
            c = client("app", "apppw", "bookstore", mech)
            st = c.bookstore.command("connectionStatus")
            self.assertEqual(st["authInfo"]["authenticatedUsers"], [{"user": "app", "db": "bookstore"}])
            self.assertIn({"role": "readWrite", "db": "bookstore"}, st["authInfo"]["authenticatedUserRoles"])
            c.close()

    def test_wrong_password_and_unknown_user_look_the_same(self):
        seen = set()
        for user, pwd in (("app", "nope"), ("ghost", "nope")):
            for mech in ("SCRAM-SHA-1", "SCRAM-SHA-256"):
                c = client(user, pwd, "bookstore", mech)
                code, msg = code_of(lambda: c.bookstore.command("ping"))
                self.assertEqual(code, 18)
                seen.add(msg)
                c.close()
        self.assertEqual(len(seen), 1, seen)
        self.assertIn("Authentication failed.", seen.pop())

    def test_readwrite_cannot_collmod(self):
        c = client("app", "apppw", "bookstore")
        bs = c.bookstore
        bs.reviews.insert_one({"bookId": 26, "rating": "5"})
        r = bs.reviews.update_one({"bookId": 26}, {"$set": {"body": "A classic."}})
        self.assertEqual(r.modified_count, 1)
        code, msg = code_of(lambda: bs.command("collMod", "reviews", validator={"rating": {"$type": "int"}}))
        self.assertEqual(code, 13)
        self.assertIn('not authorized on bookstore to execute command { collMod: "reviews"', msg)
        code, _ = code_of(lambda: bs.reviews.insert_one({"x": 1}, bypass_document_validation=True))
        self.assertEqual(code, 13)
        code, _ = code_of(lambda: c.admin.command("serverStatus"))
        self.assertEqual(code, 13)
        c.close()

    def test_custom_role_collmod_one_collection(self):
        c = client("curator", "curatorpw", "bookstore")
        bs = c.bookstore
        bs.command("collMod", "reviews", validator={"$jsonSchema": {"bsonType": "object"}})
        code, _ = code_of(lambda: bs.command("collMod", "books", validator={}))
        self.assertEqual(code, 13)
        c.close()

    def test_users_info_hides_credentials(self):
        info = self.root.bookstore.command("usersInfo", "app")
        self.assertEqual(len(info["users"]), 1)
        u = info["users"][0]
        self.assertEqual((u["_id"], u["user"], u["db"]), ("bookstore.app", "app", "bookstore"))
        self.assertNotIn("credentials", u)
        self.assertEqual(u["mechanisms"], ["SCRAM-SHA-1", "SCRAM-SHA-256"])
        raw = self.root.admin.system.users.find_one({"_id": "bookstore.app"})
        self.assertEqual(raw["credentials"]["SCRAM-SHA-256"]["iterationCount"], 15000)
        self.assertEqual(raw["credentials"]["SCRAM-SHA-1"]["iterationCount"], 10000)
        self.assertNotIn("apppw", repr(raw))

    def test_unauthenticated_refused(self):
        anon = client()
        code, msg = code_of(lambda: anon.bookstore.reviews.find_one())
        self.assertEqual(code, 13)
        self.assertEqual(msg.split(",")[0], "Command find requires authentication")
        anon.admin.command("ping")
        anon.close()

    def test_cursor_belongs_to_its_user(self):
        owner = client("app", "apppw", "bookstore")
        owner.bookstore.cursors.insert_many([{"i": i} for i in range(5)])
        first = owner.bookstore.command("find", "cursors", batchSize=1)
        cid = first["cursor"]["id"]
        self.assertNotEqual(cid, 0)
        other = client("curator", "curatorpw", "bookstore")
        code, msg = code_of(lambda: other.bookstore.command("getMore", bson.int64.Int64(cid),
                                                            collection="cursors"))
        self.assertEqual(code, 13)
        self.assertIn("was not created by the authenticated user", msg)
        more = owner.bookstore.command("getMore", bson.int64.Int64(cid), collection="cursors")
        self.assertEqual(len(more["cursor"]["nextBatch"]), 4)
        owner.close()
        other.close()

    def test_saslprep_password(self):
        # createUser SASLpreps the SCRAM-SHA-256 password as mongod: PyMongo
        # preps "\u2163" to "IV" on its side, so both log in
        self.root.admin.command("createUser", "pyroman", pwd="\u2163", roles=[])
        for pwd in ("\u2163", "IV"):
            c = client("pyroman", pwd, "admin", "SCRAM-SHA-256")
            st = c.admin.command("connectionStatus")
            self.assertEqual(st["authInfo"]["authenticatedUsers"], [{"user": "pyroman", "db": "admin"}])
            c.close()
        code, msg = code_of(lambda: self.root.admin.command("createUser", "pybad", pwd="a\u0007b", roles=[]))
        self.assertEqual((code, msg.split(",")[0]), (2, "Unable to normalize input string"))

    def test_sha1_only_user_default_mechanism(self):
        # the speculative SCRAM-SHA-256 of PyMongo's handshake is not taken
        # for a user without SCRAM-SHA-256 credentials: it falls back
        self.root.admin.command("createUser", "pylegacy", pwd="legacypw", roles=[], mechanisms=["SCRAM-SHA-1"])
        c = client("pylegacy", "legacypw", "admin")
        st = c.admin.command("connectionStatus")
        self.assertEqual(st["authInfo"]["authenticatedUsers"], [{"user": "pylegacy", "db": "admin"}])
        c.close()
        c = client("pylegacy", "legacypw", "admin", "SCRAM-SHA-256")
        code, _ = code_of(lambda: c.admin.command("ping"))
        self.assertEqual(code, 18)
        c.close()

    def test_list_sessions_privileges(self):
        # mongod's listSessionsRequiredPrivileges: allUsers (or another
        # user's sessions) needs listSessions on the cluster (root through
        # clusterAdmin, clusterMonitor); one's own sessions need nothing, and
        # the stage reads config.system.sessions without find on it
        self.root.admin.command("createUser", "pymon", pwd="monpw", roles=["clusterMonitor"])
        mon = client("pymon", "monpw", "admin")
        app = client("app", "apppw", "bookstore")
        with app.start_session() as s:
            app.bookstore.books.find_one({}, session=s)
        everyone = [{"$listSessions": {"allUsers": True}}]
        for c in (self.root, mon):
            list(c.config.system.sessions.aggregate(everyone))
            list(c.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}]))
            list(c.config.system.sessions.aggregate([{"$listSessions": {"users": [{"user": "app", "db": "bookstore"}]}}]))
        for pipe in (everyone, [{"$listSessions": {"users": [{"user": "root", "db": "admin"}]}}],
                     [{"$listSessions": {"users": [{"user": "app", "db": "bookstore"}, {"user": "root", "db": "admin"}]}}]):
            code, msg = code_of(lambda: list(app.config.system.sessions.aggregate(pipe)))
            self.assertEqual(code, 13, pipe)
            self.assertIn("not authorized on config to execute command", msg)
        code, msg = code_of(lambda: list(app.admin.aggregate([{"$listLocalSessions": {"allUsers": True}}])))
        self.assertEqual(code, 13)
        self.assertIn("not authorized on admin to execute command", msg)
        # the caller's own: allowed without the action, and only its own rows
        own = list(app.admin.aggregate([{"$listLocalSessions": {}}]))
        self.assertTrue(own)
        self.assertTrue(all(d["_id"]["uid"] == own[0]["_id"]["uid"] for d in own))
        for spec in ({}, {"allUsers": False}, {"users": [{"user": "app", "db": "bookstore"}]}):
            list(app.config.system.sessions.aggregate([{"$listSessions": spec}]))
        # the stage's own bad input is its error, not 13 (mongod parses first)
        code, _ = code_of(lambda: list(app.config.system.sessions.aggregate([{"$listSessions": {"allUsers": 1}}])))
        self.assertEqual(code, 14)
        code, _ = code_of(lambda: list(app.config.system.sessions.aggregate(
            [{"$listSessions": {"users": [{"user": "root"}]}}])))
        self.assertEqual(code, 40414)
        mon.close()
        app.close()

    def test_many_failed_attempts(self):
        t0 = time.time()
        for i in range(ATTEMPTS):
            c = client("app" if i % 2 else "ghost%d" % i, "bad%d" % i, "bookstore", "SCRAM-SHA-256")
            code, _ = code_of(lambda: c.bookstore.command("ping"))
            self.assertEqual(code, 18)
            c.close()
        c = client("app", "apppw", "bookstore")
        self.assertEqual(c.bookstore.command("ping")["ok"], 1.0)
        c.close()
        sys.stderr.write("%d failed attempts in %.1fs\n" % (ATTEMPTS, time.time() - t0))


if __name__ == "__main__":
    suite = unittest.TestLoader().loadTestsFromTestCase(TamgaAuth)
    res = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(res.failures) + len(res.errors)
    print("%d passed, %d failed" % (res.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
