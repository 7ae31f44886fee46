"""test_linearizability.py -- the linearizability checker (linearizability.py)
on small hand-written histories, linearizable and not, so the
fault-injection test (jepsen_set.py) is known to be able to fail: the
classic stale read and lost write, a cas that read an impossible value,
indeterminate operations that may or may not have happened, the two
reductions' corners, independent keys, and a larger random history made
from a real sequential run (linearizable by construction) and then broken.

usage: python3 test_linearizability.py
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from linearizability import check, check_register  # noqa: E402

checks = 0


def op(p, f, value, t0, t1, typ="ok", key="x", matched=None):
    d = {"process": p, "key": key, "f": f, "value": value, "type": typ, "invoke": t0,
         "complete": None if typ == "info" else t1}
    if f == "cas" and typ == "ok":
        d["matched"] = matched
    return d


def expect(ops, verdict, what):
    global checks
    got, detail = check_register(ops)
    if got != verdict:
        raise AssertionError("%s: expected %s, got %s %r" % (what, verdict, got, detail))
    checks += 1


W = lambda p, v, a, b, **k: op(p, "write", v, a, b, **k)  # noqa: E731
R = lambda p, v, a, b, **k: op(p, "read", v, a, b, **k)   # noqa: E731
C = lambda p, e, n, a, b, m=None, **k: op(p, "cas", [e, n], a, b, matched=m, **k)  # noqa: E731

# sequential
expect([], "ok", "empty history")
expect([R(0, None, 0, 1)], "ok", "read of the initial missing register")
expect([R(0, 1, 0, 1)], "anomaly", "read of a value never written")
expect([W(0, 1, 0, 1), R(0, 1, 2, 3)], "ok", "write then read")
expect([W(0, 1, 0, 1), W(0, 2, 2, 3), R(0, 2, 4, 5)], "ok", "two writes, read the last")

# the classic stale read: a read that starts after a write completed
# returns the older value (a deposed primary answering)
expect([W(0, 1, 0, 1), W(0, 2, 2, 3), R(1, 1, 4, 5)], "anomaly", "stale read")
expect([W(0, 1, 0, 1), W(0, 2, 2, 3), R(1, 1, 2.5, 5)], "ok", "read concurrent with the second write")
expect([W(0, 1, 0, 1), R(1, None, 2, 3)], "anomaly", "stale read of the initial value")

# the classic lost write: an acknowledged write disappears (rolled back)
expect([W(0, 1, 0, 1), W(1, 2, 2, 3), R(0, 2, 4, 5), R(1, 1, 6, 7)], "anomaly",
       "lost write (the later read goes back to 1)")
expect([W(0, 1, 0, 1), W(1, 2, 2, 3), R(0, 1, 4, 5)], "anomaly", "acknowledged write 2 lost")

# concurrency allows either order
expect([W(0, 1, 0, 5), W(1, 2, 1, 4), R(2, 1, 6, 7)], "ok", "concurrent writes: 1 last")
expect([W(0, 1, 0, 5), W(1, 2, 1, 4), R(2, 2, 6, 7)], "ok", "concurrent writes: 2 last")
expect([W(0, 1, 0, 5), W(1, 2, 1, 4), R(2, 2, 6, 7), R(2, 1, 8, 9)], "anomaly",
       "concurrent writes, then the value goes back")
expect([W(0, 1, 0, 10), R(1, 1, 1, 2), R(2, None, 3, 4)], "anomaly",
       "a read sees the write, a later read does not (no going back)")
expect([W(0, 1, 0, 10), R(1, None, 1, 2), R(2, 1, 3, 4)], "ok", "read before, read after the write")
# equal times are taken as overlapping
expect([W(0, 1, 0, 1), R(1, None, 1, 2)], "ok", "a read invoked at the write's completion time")

# compare-and-set
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 3, True), R(0, 2, 4, 5)], "ok", "cas matched")
expect([W(0, 1, 0, 1), C(1, 3, 2, 2, 3, True)], "anomaly", "cas matched a value that was not there")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 3, False)], "anomaly", "cas did not match the value that was there")
expect([W(0, 1, 0, 1), C(1, 5, 2, 2, 3, False), R(0, 1, 4, 5)], "ok", "cas not matched leaves the value")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 3, True), C(2, 1, 3, 4, 5, True)], "anomaly",
       "two sequential cas both matched the same value (a lost update)")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 5, True), C(2, 1, 3, 3, 6, True)], "anomaly",
       "two concurrent cas from 1 cannot both match")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 5, True), C(2, 2, 3, 3, 6, True), R(0, 3, 7, 8)], "ok",
       "concurrent cas chain 1 -> 2 -> 3")

# indeterminate operations
expect([W(0, 1, 0, 1, typ="info"), R(1, 1, 5, 6)], "ok", "an info write that happened")
expect([W(0, 1, 0, 1, typ="info"), R(1, None, 5, 6)], "ok", "an info write that did not happen")
expect([W(0, 1, 0, 1, typ="info"), R(1, None, 5, 6), R(1, 1, 7, 8)], "ok",
       "an info write that took effect late (still open)")
expect([W(0, 1, 0, 1, typ="info"), R(1, 1, 5, 6), R(1, None, 7, 8)], "anomaly",
       "an info write that happened then vanished")
expect([R(1, 1, 0, 1), W(0, 1, 2, 3, typ="info")], "anomaly",
       "a read of an info write invoked after the read completed")
expect([W(0, 1, 0, 1, typ="fail"), R(1, 1, 5, 6)], "anomaly", "a failed write must not be seen")
expect([W(0, 1, 0, 1, typ="fail"), R(1, None, 5, 6)], "ok", "a failed write not seen")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 3, typ="info"), R(0, 2, 4, 5), R(0, 2, 6, 7)], "ok",
       "an info cas that happened")
expect([W(0, 1, 0, 1), C(1, 1, 2, 2, 3, typ="info"), R(0, 1, 4, 5)], "ok", "an info cas that did not")
expect([W(0, 1, 0, 1), C(1, 7, 2, 2, 3, typ="info"), R(0, 2, 4, 5)], "anomaly",
       "an info cas cannot take effect from another value")
expect([R(0, 9, 0, 1, typ="info")], "ok", "an info read says nothing")
# the UNSEEN reduction: a cas that did not match must stay explainable by
# an unseen indeterminate write (values 5 and 6 are never read)
expect([W(0, 1, 0, 1), W(1, 5, 2, 3, typ="info"), C(2, 1, 9, 4, 5, False)], "ok",
       "a cas miss explained by an unseen info write")
expect([W(0, 1, 0, 1), W(1, 5, 2, 3, typ="fail"), C(2, 1, 9, 4, 5, False)], "anomaly",
       "the same cas miss with that write failed")
expect([W(0, 1, 0, 1), W(1, 5, 2, 3, typ="info"), W(1, 6, 3, 4, typ="info"), C(2, 1, 9, 5, 6, False),
        R(2, 1, 7, 8)], "anomaly", "unseen info writes cannot be undone")
expect([W(0, 1, 0, 1), W(1, 5, 2, 3, typ="info"), W(2, 6, 3, 4, typ="info"), R(2, 5, 5, 6), R(2, 6, 7, 8),
        R(2, 5, 9, 10)], "anomaly", "two info writes, each happens at most once")
expect([W(0, 1, 0, 1), W(1, 5, 2, 3, typ="info"), W(2, 6, 3, 4, typ="info"), R(2, 6, 5, 6), R(2, 5, 7, 8)],
       "ok", "two info writes in either order")
expect([W(1, 5, 0, 1, typ="info"), W(2, 6, 0, 1, typ="info"), W(3, 7, 0, 1, typ="info"),
        C(0, None, 1, 2, 3, False), C(0, None, 1, 4, 5, False), R(0, None, 6, 7)], "anomaly",
       "interchangeable unseen info writes: none can be taken back")

# many indeterminate writes of unseen values stay fast (the reduction)
many = [W(i, 100 + i, i, i + 0.5, typ="info") for i in range(200)]
many += [W(999, 1, 300, 301), R(998, 1, 302, 303)]
expect(many, "ok", "200 unseen info writes")
expect(many + [R(998, None, 304, 305)], "anomaly", "200 unseen info writes, then the register empty")

# independent keys: each checked alone
res = check([W(0, 1, 0, 1, key="a"), R(1, 1, 2, 3, key="b")])
assert not res.valid and set(res.anomalies()) == {"b"}, res
checks += 1
res = check([W(0, 1, 0, 1, key="a"), R(1, 1, 2, 3, key="a"), R(1, None, 2, 3, key="b")])
assert res.valid, res
checks += 1


# a random concurrent history from a sequential execution (linearizable by
# construction: each op takes effect at a point inside its interval; each
# process runs one op at a time, as the test's client threads), then broken
# by one stale read
def random_history(seed, n=500, procs=5):
    rng = random.Random(seed)
    effect = [0.0]
    for _ in range(n - 1):
        effect.append(effect[-1] + rng.random())
    state = None
    hist = []
    nextv = [1]
    free = [0.0] * procs     # when each process's previous op completed
    for k in range(n):
        p = k % procs
        t = effect[k]
        invoke = free[p] + (t - free[p]) * rng.random()
        nxt = effect[k + procs] if k + procs < n else t + 1
        complete = t + (nxt - t) * rng.random()
        free[p] = complete
        f = rng.choice(["write", "read", "cas", "cas"])
        if f == "write":
            v = nextv[0]
            nextv[0] += 1
            state = v
            d = W(p, v, invoke, complete)
        elif f == "read":
            d = R(p, state, invoke, complete)
        else:
            e = state if rng.random() < 0.6 else rng.randint(0, nextv[0])
            v = nextv[0]
            nextv[0] += 1
            d = C(p, e, v, invoke, complete, state == e)
            if state == e:
                state = v
        if rng.random() < 0.03 and f != "read":
            d["type"] = "info"
            d["complete"] = None
            d.pop("matched", None)
        hist.append(d)
    return hist


for seed in range(6):
    h = random_history(seed)
    expect(h, "ok", "random linearizable history %d" % seed)
    bad = [dict(d) for d in h]
    # a read far after everything else that returns the first value written
    first = next(d["value"] for d in h if d["f"] == "write")
    last_t = max(d["complete"] or d["invoke"] for d in h)
    bad.append(R(7, first, last_t + 1, last_t + 2))
    expect(bad, "anomaly", "random history %d with a stale read at the end" % seed)

print("test_linearizability: %d checks passed" % checks)
