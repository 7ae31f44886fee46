"""linearizability.py -- a linearizability checker for histories of
operations on independent registers (the fault-injection test of issue 24,
jepsen_set.py, records them; test_linearizability.py tests this checker).

The search is Wing & Gong's, with Lowe's memoisation (the "WGL" algorithm
Porcupine and Knossos's linear checker use): the history's invocations and
completions are one list ordered by time; the search walks it, linearizing
an invoked operation whenever the model allows it and backtracking when it
meets the completion of an operation it has not linearized; a
configuration (set of linearized operations, register value) already seen
is not explored twice.  Each key is an independent register (its
sub-history is checked alone: linearizability is local, Herlihy & Wing).

Operations (dicts, as jepsen_set.py writes them one JSON object a line):
  {"process": p, "key": k, "f": "write" | "read" | "cas",
   "value": v (write), the value read (read), [expected, new] (cas),
   "matched": true | false (an ok cas: did the filter match),
   "type": "ok" | "fail" | "info",
   "invoke": t0, "complete": t1 (seconds; null for info)}
  - ok: the operation took effect between invoke and complete, with that
    result;
  - fail: it certainly did not take effect (it is left out);
  - info: indeterminate (a timeout, a network error): it may or may not
    have taken effect, at any time after its invocation -- it stays open
    until the end of the history.  An info read says nothing and is left
    out.
The register starts missing (None).  A cas that matched read `expected`
and wrote `new` at one point; one that did not match read a value other
than `expected`.

Two reductions keep indeterminate operations from blowing the search up,
both exact (they change neither answer):
  - values no operation can tell apart -- written, but never read and
    never a cas's expected value -- are one value, UNSEEN: no read or cas
    distinguishes them;
  - indeterminate operations with the same effect after that (say two
    writes of unseen values) are interchangeable, both being open until
    the end: they are linearized in invocation order only (a linearization
    using the later one alone can use the earlier one instead).

check(ops) -> Result (per key: ok, or the operation at which no
linearization of the prefix can continue, with the operations open then).
python3 linearizability.py history.jsonl checks a saved history.
"""
import json
import sys
import time

UNSEEN = ("<unseen value>",)
INF = float("inf")


class Result:
    def __init__(self):
        self.keys = {}       # key -> (verdict, detail) ; verdict ok | anomaly | unknown
        self.ops = 0

    @property
    def valid(self):
        return all(v == "ok" for v, _ in self.keys.values())

    def anomalies(self):
        return {k: d for k, (v, d) in self.keys.items() if v != "ok"}

    def __repr__(self):
        return "Result(valid=%r, ops=%d, %r)" % (self.valid, self.ops, self.anomalies())


def _freeze(v):
    """Values as hashable (a JSON round trip turns tuples into lists)."""
    if isinstance(v, list):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
    return v


class _Op:
    __slots__ = ("i", "f", "arg", "res", "invoke", "complete", "info", "raw", "cls", "prev")

    def __init__(self, i, raw):
        self.i, self.raw = i, raw
        self.f = raw["f"]
        self.info = raw["type"] == "info"
        self.invoke = float(raw["invoke"])
        self.complete = INF if self.info or raw.get("complete") is None else float(raw["complete"])
        if self.f == "cas":
            e, n = raw["value"]
            self.arg = (_freeze(e), _freeze(n))
            self.res = None if self.info else bool(raw["matched"])
        else:
            self.arg = _freeze(raw.get("value"))
            self.res = None
        self.cls = None
        self.prev = None   # the previous op of its class (info ops), index


def _step(op, state):
    """The register's model: (allowed, new state) of op at state."""
    if op.f == "write":
        return True, op.arg
    if op.f == "read":
        return state == op.arg, state
    e, n = op.arg
    if op.info:                       # indeterminate: only its effect matters
        return state == e, n
    if op.res:
        return state == e, n
    return state != e, state


def _prepare(raw_ops):
    ops = []
    for r in raw_ops:
        if r["type"] == "fail":
            continue
        if r["type"] == "info" and r["f"] == "read":
            continue
        ops.append(_Op(len(ops), r))
    seen = {None}
    for op in ops:
        if op.f == "read":
            seen.add(op.arg)
        elif op.f == "cas":
            seen.add(op.arg[0])
    for op in ops:
        if op.f == "write" and op.arg not in seen:
            op.arg = UNSEEN
        elif op.f == "cas" and op.arg[1] not in seen:
            op.arg = (op.arg[0], UNSEEN)
    last = {}
    for op in sorted(ops, key=lambda o: o.invoke):
        if op.info:
            op.cls = (op.f, op.arg)
            if op.cls in last:
                op.prev = last[op.cls]
            last[op.cls] = op.i
    return ops


class _Entry:
    __slots__ = ("op", "is_call", "match", "prev", "next")

    def __init__(self, op, is_call):
        self.op, self.is_call = op, is_call
        self.match = self.prev = self.next = None


def check_register(raw_ops, budget_s=60.0):
    """One register's history. Returns ("ok", None), ("anomaly", detail) or
    ("unknown", detail) when the search ran past budget_s seconds."""
    ops = _prepare(raw_ops)
    if not ops:
        return "ok", None
    events = []
    for op in ops:
        c, r = _Entry(op, True), _Entry(op, False)
        c.match, r.match = r, c
        # completions sort after invocations at the same time: equal times
        # are taken as overlapping (the safe side)
        events.append((op.invoke, 0, op.i, c))
        events.append((op.complete, 1, op.i, r))
    events.sort(key=lambda e: e[:3])
    head = _Entry(None, True)
    prev = head
    for _, _, _, e in events:
        prev.next, e.prev = e, prev
        prev = e

    def lift(c):
        c.prev.next = c.next
        if c.next is not None:
            c.next.prev = c.prev
        r = c.match
        r.prev.next = r.next
        if r.next is not None:
            r.next.prev = r.prev

    def unlift(c):
        r = c.match
        r.prev.next = r
        if r.next is not None:
            r.next.prev = r
        c.prev.next = c
        if c.next is not None:
            c.next.prev = c

    state = None
    linearized = 0
    cache = set()
    calls = []
    entry = head.next
    best = -1              # the furthest completion the search was stuck at
    stuck = None
    deadline = time.monotonic() + budget_s
    steps = 0
    while head.next is not None:
        steps += 1
        if steps & 0xFFF == 0 and time.monotonic() > deadline:
            return "unknown", {"reason": "search past %.0f s" % budget_s, "ops": len(ops)}
        if entry.is_call:
            op = entry.op
            if op.prev is not None and not (linearized >> op.prev) & 1:
                entry = entry.next
                continue
            ok, new_state = _step(op, state)
            if ok:
                new_lin = linearized | (1 << op.i)
                key = (new_lin, new_state)
                if key not in cache:
                    cache.add(key)
                    calls.append((entry, state))
                    state, linearized = new_state, new_lin
                    lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            if entry.op.info:
                return "ok", None      # only open-ended operations are left
            if len(calls) > best:
                best = len(calls)
                stuck = (entry.op, state, linearized)
            if not calls:
                return "anomaly", _detail(ops, stuck)
            entry, state = calls.pop()
            linearized &= ~(1 << entry.op.i)
            unlift(entry)
            entry = entry.next
    return "ok", None


def _detail(ops, stuck):
    op, state, linearized = stuck
    t = op.complete
    window = [o for o in ops if o.invoke <= t and o.complete >= op.invoke]
    window.sort(key=lambda o: o.invoke)
    return {
        "op": op.raw,
        "state": None if state is UNSEEN else state,
        "linearized_before": bin(linearized).count("1"),
        "concurrent": [o.raw for o in window if o is not op][:40],
        "message": "no linearization of the ops completed by %s can include %s" % (t, _fmt(op.raw)),
    }


def _fmt(r):
    return "%s %s(%r)%s [%s]" % (r.get("process"), r["f"], r.get("value"),
                                 "" if r["f"] != "cas" or r["type"] != "ok" else " -> %s" % r["matched"], r["type"])


def check(raw_ops, budget_s=60.0):
    """Every key's sub-history checked alone; returns a Result."""
    res = Result()
    by_key = {}
    for r in raw_ops:
        by_key.setdefault(_freeze(r["key"]), []).append(r)
    res.ops = len(raw_ops)
    for k, sub in sorted(by_key.items(), key=lambda kv: repr(kv[0])):
        res.keys[k] = check_register(sub, budget_s)
    return res


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    r = check(load(sys.argv[1]))
    for k, (v, d) in r.keys.items():
        print("key %r: %s" % (k, v))
        if d:
            print(json.dumps(d, indent=1, default=str))
    sys.exit(0 if r.valid else 1)
