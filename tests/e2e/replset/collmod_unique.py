"""collmod_unique.py -- collMod's unique-index conversion (mongod 9.0's
coll_mod.cpp) through PyMongo on a set of two tamgad members (issue 19):

  1. `prepareUnique: true` on an index holding duplicates: the reply's
     prepareUnique_old/_new, listIndexes shows it, a new duplicate is
     refused (DuplicateKeyError 11000, mongod's message) while the old ones
     stay; the secondary shows it too (the collMod oplog entry applied) and
     a change stream with expanded events sees a `modify` event;
  2. `unique: true` with duplicates: 359 CannotConvertIndexToUnique with
     `violations: [{ids: [...]}]`; `dryRun: true` checks without changing
     anything; with the duplicates gone the index converts (unique_new),
     the secondary's too;
  3. both members killed (-9) and restarted: the index is still unique
     (listIndexes, a duplicate refused on the new primary) and still
     answers queries; `forceNonUnique: true` turns it back, and that
     survives a restart as well; an index created unique goes back too
     (its entries moved to the key+RecordId layout), on the secondary too.

usage: collmod_unique.py path/to/tamgad
Prints "N passed, N failed".
"""
import os
import sys
import time

from pymongo import WriteConcern
from pymongo.errors import DuplicateKeyError, OperationFailure

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
passed = failed = 0


def check(name, cond, why=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok - %s" % name)
    else:
        failed += 1
        print("not ok - %s%s" % (name, (": " + repr(why)) if why else ""))


def index_of(member, name, timeout=20):
    """The index spec `name` of t.c as member lists it (waits for the
    secondary to apply up to `timeout` s for the predicate's callers)."""
    with member.client() as c:
        for ix in c.t.c.list_indexes():
            if ix["name"] == name:
                return dict(ix)
    return None


def wait_index(member, name, pred, timeout=20):
    deadline = time.time() + timeout
    ix = None
    while time.time() < deadline:
        ix = index_of(member, name)
        if ix is not None and pred(ix):
            return ix
        time.sleep(0.1)
    return ix


def restart_all(cl):
    for m in cl.members:
        m.kill9()
    for m in cl.members:
        m.start()
    return cl.wait_primary(timeout=60)


def main():
    with Cluster(TAMGAD, n=2) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=4000))
        p = cl.wait_primary()
        s = [m for m in cl.members if m is not p][0]
        with p.client() as c:
            db = c.get_database("t", write_concern=WriteConcern(w=2, j=True))
            db.c.insert_many([{"_id": 1, "a": 1}, {"_id": 2, "a": 1}, {"_id": 3, "a": 2}])
            db.c.create_index("a")
            t0 = db.command("ping")["operationTime"]

            # 1. prepareUnique
            r = db.command("collMod", "c", index={"keyPattern": {"a": 1}, "prepareUnique": True})
            check("prepareUnique: the reply's old and new values",
                  r.get("prepareUnique_old") is False and r.get("prepareUnique_new") is True, r)
            check("listIndexes shows prepareUnique", index_of(p, "a_1").get("prepareUnique") is True)
            try:
                db.c.insert_one({"_id": 4, "a": 1})
                check("a new duplicate is refused", False)
            except DuplicateKeyError as e:
                check("a new duplicate is refused with mongod's message",
                      e.code == 11000 and "E11000 duplicate key error collection: t.c index: a_1 dup key: { a: 1 }"
                      in str(e), e.details)
            check("the old duplicates stay", db.c.count_documents({"a": 1}) == 2)
            db.c.insert_one({"_id": 5, "a": 5})
            ix = wait_index(s, "a_1", lambda x: x.get("prepareUnique") is True)
            check("the secondary applied the collMod entry (prepareUnique)", ix and ix.get("prepareUnique") is True, ix)
            # (PyMongo 3.11 has no show_expanded_events: the command itself)
            r = db.command("aggregate", "c", pipeline=[{"$changeStream": {"showExpandedEvents": True,
                                                                          "startAtOperationTime": t0}}],
                           cursor={"batchSize": 10})
            evs = list(r["cursor"]["firstBatch"])
            deadline = time.time() + 10
            while not any(e.get("operationType") == "modify" for e in evs) and time.time() < deadline:
                r = db.command("getMore", r["cursor"]["id"], collection="c", maxTimeMS=500)
                evs += r["cursor"]["nextBatch"]
            mods = [e for e in evs if e.get("operationType") == "modify"]
            check("a change stream sees the collMod as a modify event",
                  len(mods) == 1 and mods[0].get("operationDescription", {}).get("index", {}).get("prepareUnique")
                  is True, evs)

            # 2. the conversion
            try:
                db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True})
                check("unique: true with duplicates refused", False)
            except OperationFailure as e:
                check("unique: true with duplicates: 359 with the violations",
                      e.code == 359 and e.details.get("codeName") == "CannotConvertIndexToUnique"
                      and e.details.get("violations") == [{"ids": [1, 2]}], e.details)
            try:
                db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True}, dryRun=True)
                check("dryRun with duplicates refused", False)
            except OperationFailure as e:
                check("dryRun sees the duplicates too (359)", e.code == 359, e.details)
            db.c.delete_one({"_id": 2})
            r = db.command("collMod", "c", index={"keyPattern": {"a": 1}, "unique": True}, dryRun=True)
            check("dryRun without duplicates: ok, nothing changed",
                  "unique_new" not in r and index_of(p, "a_1").get("unique") is None, r)
            r = db.command("collMod", "c", index={"name": "a_1", "unique": True})
            check("the conversion answers unique_new", r.get("unique_new") is True, r)
            ix = index_of(p, "a_1")
            check("listIndexes: unique, prepareUnique gone", ix.get("unique") is True and "prepareUnique" not in ix, ix)
            ix = wait_index(s, "a_1", lambda x: x.get("unique") is True)
            check("the secondary's index is unique too", ix and ix.get("unique") is True and "prepareUnique" not in ix,
                  ix)

        # 3. restarts
        p = restart_all(cl)
        with p.client() as c:
            db = c.get_database("t", write_concern=WriteConcern(w=2, j=True))
            ix = index_of(p, "a_1")
            check("after kill -9 and a restart the index is still unique", ix.get("unique") is True, ix)
            try:
                db.c.insert_one({"_id": 6, "a": 5})
                check("... and refuses a duplicate", False)
            except DuplicateKeyError as e:
                check("... and refuses a duplicate", e.code == 11000, e.details)
            docs = list(db.c.find({"a": {"$gte": 1}}, {"_id": 1}).hint("a_1"))
            check("... and answers queries through it", [d["_id"] for d in docs] == [1, 3, 5], docs)
            r = db.command("collMod", "c", index={"keyPattern": {"a": 1}, "forceNonUnique": True})
            check("forceNonUnique: true answers forceNonUnique_new", r.get("forceNonUnique_new") is True, r)
            db.c.insert_one({"_id": 6, "a": 5})
            check("... then duplicates are accepted", db.c.count_documents({"a": 5}) == 2)
            ix = wait_index(s, "a_1", lambda x: "unique" not in x)
            check("... on the secondary too", ix is not None and "unique" not in ix, ix)
        p = restart_all(cl)
        with p.client() as c:
            db = c.get_database("t", write_concern=WriteConcern(w=2, j=True))
            ix = index_of(p, "a_1")
            check("after another restart the index is not unique", "unique" not in ix and "prepareUnique" not in ix, ix)
            db.c.insert_one({"_id": 7, "a": 5})
            check("... and takes a third duplicate", db.c.count_documents({"a": 5}, hint="a_1") == 3)
            # an index created unique: forceNonUnique moves its entries to the
            # other layout, on the secondary too (its apply does the same)
            db.c.create_index("u", unique=True, sparse=True)
            db.c.insert_one({"_id": 8, "u": 1})
            r = db.command("collMod", "c", index={"name": "u_1", "forceNonUnique": True})
            check("forceNonUnique on an index created unique", r.get("forceNonUnique_new") is True, r)
            db.c.insert_one({"_id": 9, "u": 1})
            check("... takes a duplicate (written to both members)",
                  db.c.count_documents({"u": 1}, hint="u_1") == 2)
            ix = wait_index(s, "u_1", lambda x: "unique" not in x)
            check("... the secondary's index is not unique either", ix is not None and "unique" not in ix, ix)
            with s.client() as sc:
                n = sc.t.c.count_documents({"u": 1}, hint="u_1")
            check("... and holds both entries", n == 2, n)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
