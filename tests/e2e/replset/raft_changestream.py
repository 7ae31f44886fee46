"""raft_changestream.py -- change streams on a replica set of three tamgad
members on 127.0.0.1 across a failover (issue 24 item 5), through PyMongo:
  - a stream on the primary shows only majority-committed events: with both
    secondaries paused (SIGSTOP) a w: 1 insert's event does not come, nor
    does a postBatchResumeToken past it; it comes once they resume;
  - a stream opened on the primary, a single writer inserting _id 0, 1, ...
    with w: "majority" and retryWrites, the primary killed (kill -9) in the
    middle: PyMongo resumes on the new primary with its resume token and
    sees every acknowledged insert exactly once, in order, and no event of a
    write that is not in the set's data afterwards (nothing rolled back);
  - the same stream resumed on a secondary (readPreference secondary) from
    a token taken before the kill gives exactly the events after it.

usage: raft_changestream.py path/to/tamgad
"""
import os
import sys
import threading
import time

from pymongo import MongoClient, ReadPreference, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster  # noqa: E402

TAMGAD = sys.argv[1]
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def majority_only(cl, client):
    """A w: 1 write the secondaries do not have never reaches a stream."""
    coll = client.cs.held
    coll.insert_one({"_id": "before"}, )
    with coll.watch(max_await_time_ms=200) as s:
        for m in cl.members:
            if m is not cl.primary:
                m.pause()
        try:
            coll.with_options(write_concern=WriteConcern(w=1)).insert_one({"_id": "held"})
            tok0 = s.resume_token
            deadline = time.time() + 1.5
            while time.time() < deadline:
                ev = s.try_next()
                check(ev is None, "an event of an uncommitted write: %r" % (ev,))
            check(s.resume_token == tok0, "the resume token passed an uncommitted write")
        finally:
            for m in cl.members:
                if m is not cl.primary:
                    m.resume()
        deadline = time.time() + 10
        ev = None
        while ev is None and time.time() < deadline:
            ev = s.try_next()
        check(ev is not None and ev["documentKey"]["_id"] == "held",
              "the event comes once the write is committed: %r" % (ev,))


def failover(cl, client):
    coll = client.cs.seq
    acked = []
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        while not stop.is_set():
            try:
                coll.insert_one({"_id": i})
                acked.append(i)
                i += 1
            except PyMongoError as e:
                # a retryable write that failed twice: its fate is unknown
                # (it may be committed); the next one uses the next _id
                errors.append(repr(e))
                i += 1
                time.sleep(0.05)

    seen, tokens = [], {}
    with coll.watch(max_await_time_ms=200) as s:
        t = threading.Thread(target=writer)
        t.start()
        try:
            killed = False
            deadline = time.time() + 60
            while time.time() < deadline:
                ev = s.try_next()
                if ev is not None:
                    seen.append(ev["documentKey"]["_id"])
                    tokens[seen[-1]] = ev["_id"]
                if not killed and len(seen) >= 40:
                    old = cl.primary
                    old.kill9()
                    killed = True
                    kill_at = len(seen)
                if killed and len(acked) >= kill_at + 80:
                    break
            check(killed, "the primary was killed (events seen: %d)" % len(seen))
        finally:
            stop.set()
            t.join()
        # everything acknowledged reaches the stream
        last = acked[-1]
        deadline = time.time() + 20
        while (not seen or seen[-1] < last) and time.time() < deadline:
            ev = s.try_next()
            if ev is not None:
                seen.append(ev["documentKey"]["_id"])
                tokens[seen[-1]] = ev["_id"]
    new = cl.wait_primary(among=[m for m in cl.members if m is not old])
    check(new is not old, "a new primary")
    check(len(seen) == len(set(seen)), "no event twice: %r" % [x for x in seen if seen.count(x) > 1][:10])
    check(seen == sorted(seen), "events in order")
    missing = sorted(set(acked) - set(seen))
    check(not missing, "every acknowledged insert has its event; missing %r" % missing[:10])
    with MongoClient(cl.uri(), serverSelectionTimeoutMS=10000) as c:
        present = {d["_id"] for d in c.cs.seq.find({}, {"_id": 1})}
    ghosts = sorted(set(seen) - present)
    check(not ghosts, "no event of a write the set does not hold: %r" % ghosts[:10])
    print("failover: %d events, %d acknowledged, %d writes failed (unknown fate), kill after %d" % (
        len(seen), len(acked), len(errors), kill_at))

    # a resume on a secondary from a token taken before the kill
    k = kill_at // 2
    sec = [m for m in cl.members if m is not old and m is not new][0]
    with sec.client(read_preference=ReadPreference.SECONDARY) as c:
        got = []
        with c.cs.seq.watch(resume_after=tokens[seen[k]], max_await_time_ms=200) as s2:
            deadline = time.time() + 20
            while len(got) < len(seen) - k - 1 and time.time() < deadline:
                ev = s2.try_next()
                if ev is not None:
                    got.append(ev["documentKey"]["_id"])
        check(c.admin.command("hello").get("secondary") is True, "the resumed stream ran on a secondary")
    check(got == seen[k + 1:], "the stream resumed on a secondary gives the same events: %r vs %r" % (
        got[:5], seen[k + 1:k + 6]))
    return old


def main():
    with Cluster(TAMGAD) as cl:
        with cl.members[0].client() as c:
            c.admin.command("replSetInitiate", cl.config(election_ms=2000))
        cl.primary = cl.wait_primary()
        with MongoClient(cl.uri(), serverSelectionTimeoutMS=20000, w="majority", retryWrites=True) as client:
            majority_only(cl, client)
            old = failover(cl, client)
        # the killed member comes back and the set heals
        old.start()
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                with old.client(serverSelectionTimeoutMS=1000) as c:
                    if c.admin.command("hello").get("secondary"):
                        break
            except PyMongoError:
                pass
            time.sleep(0.2)
    print("raft_changestream: %d checks passed" % checks)


if __name__ == "__main__":
    main()
