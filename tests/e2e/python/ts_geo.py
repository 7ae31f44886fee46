"""Geo queries on a time-series collection through PyMongo against tamgad
(issue 19), as mongod 9.0 answers them: a '2dsphere' index on a measurement
field (the buckets' 2dsphere_bucket index over every measurement of a bucket;
listIndexes in the user's terms, rawData: true in the buckets'),
$geoWithin / $geoIntersects pushed to the buckets as $_internalBucketGeoWithin
(scanned through that index), and $geoNear as the first stage (mongod's
splitForTimeseries) -- every answer compared with the same query on a plain
collection holding the same measurements (random points, lines, polygons,
nulls and missing locations; open, closed and compressed buckets; after
updates and deletes that rewrite buckets).
Prints "N passed, N failed".
"""
import datetime
import os
import random
import sys

import pymongo
from pymongo.errors import OperationFailure

PORT = int(os.environ["TAMGA_PORT"])
passed = failed = 0


def case(fn):
    global passed, failed
    try:
        fn()
        passed += 1
        print("ok - " + fn.__name__)
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("not ok - %s: %r" % (fn.__name__, e))
    return fn


client = pymongo.MongoClient("127.0.0.1", PORT)
db = client.e2e_ts_geo
db.command("dropDatabase")
rng = random.Random(1919)
T0 = datetime.datetime(2026, 5, 1)


def location():
    r = rng.random()
    x, y = rng.uniform(-20, 20), rng.uniform(-20, 20)
    if r < 0.7:
        return {"type": "Point", "coordinates": [x, y]}
    if r < 0.78:
        return [x, y]                       # a legacy pair
    if r < 0.84:
        return {"type": "LineString", "coordinates": [[x, y], [x + rng.uniform(0.1, 3), y + rng.uniform(0.1, 3)]]}
    if r < 0.88:
        d = rng.uniform(0.2, 2)
        return {"type": "Polygon", "coordinates": [[[x, y], [x + d, y], [x + d, y + d], [x, y + d], [x, y]]]}
    if r < 0.94:
        return None
    return "missing"


def batch(start, n):
    out = []
    for i in range(start, start + n):
        d = {"i": i, "t": T0 + datetime.timedelta(seconds=i * 7), "m": {"s": i % 5}, "v": rng.randint(0, 9)}
        loc = location()
        if loc != "missing":
            d["loc"] = loc
        out.append(d)
    return out


def ids(cursor):
    return sorted(d["i"] for d in cursor)


def regions():
    out = []
    for _ in range(12):
        x, y, d = rng.uniform(-20, 15), rng.uniform(-20, 15), rng.uniform(1, 12)
        out.append({"$geometry": {"type": "Polygon",
                                  "coordinates": [[[x, y], [x + d, y], [x + d / 2, y + d], [x, y]]]}})
        out.append({"$centerSphere": [[x, y], d / 57.3]})
        out.append({"$box": [[x, y], [x + d, y + d]]})
        out.append({"$center": [[x, y], d]})
    return out


def compare_geo(label):
    n = 0
    for reg in regions():
        for op in ("$geoWithin", "$geoIntersects"):
            if op == "$geoIntersects" and "$geometry" not in reg:
                continue
            q = {"loc": {op: reg}}
            a, b = ids(db.w.find(q)), ids(db.plain.find(q))
            assert a == b, (label, q, len(a), len(b))
            q2 = {"loc": {op: reg}, "m.s": {"$lt": 3}, "v": {"$gte": 2}}
            assert ids(db.w.find(q2)) == ids(db.plain.find(q2)), (label, q2)
            n += 1
    return n


@case
def index_and_queries_match_a_plain_collection():
    db.create_collection("w", timeseries={"timeField": "t", "metaField": "m", "granularity": "minutes"})
    db.w.create_index([("loc", "2dsphere")], name="loc_geo")
    db.plain.create_index([("loc", "2dsphere")])
    for start in range(0, 3000, 300):                # many inserts append to open buckets
        docs = batch(start, 300)
        db.w.insert_many([dict(d) for d in docs])
        db.plain.insert_many([dict(d) for d in docs])
    shown = {i["name"]: i for i in db.w.list_indexes()}["loc_geo"]
    assert shown["key"] == {"loc": "2dsphere"}, shown
    raw = {i["name"]: i for i in db.command("listIndexes", "w", rawData=True)["cursor"]["firstBatch"]}["loc_geo"]
    assert raw["key"] == {"data.loc": "2dsphere_bucket"} and raw["2dsphereIndexVersion"] == 3, raw
    assert compare_geo("fresh") > 30
    # the measurements' $geoWithin reaches the buckets through the index
    poly = {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [5, 0], [5, 5], [0, 0]]]}}
    ex = db.command("explain", {"aggregate": "w", "pipeline": [{"$match": {"loc": {"$geoWithin": poly}}}],
                                "cursor": {}}, verbosity="queryPlanner")
    cur = repr(ex["stages"][0])
    assert "$_internalBucketGeoWithin" in cur and "loc_geo" in cur and "IXSCAN" in cur, cur
    # without the index the same answers (a collection scan of the buckets)
    db.w.drop_index("loc_geo")
    assert compare_geo("no index") > 30
    db.w.create_index([("loc", "2dsphere")], name="loc_geo")     # built over the stored buckets


@case
def writes_keep_the_index_right():
    db.w.update_many({"v": {"$lt": 3}}, {"$set": {"loc": {"type": "Point", "coordinates": [1.5, 1.5]}}})
    db.plain.update_many({"v": {"$lt": 3}}, {"$set": {"loc": {"type": "Point", "coordinates": [1.5, 1.5]}}})
    db.w.delete_many({"v": 9})
    db.plain.delete_many({"v": 9})
    db.w.update_many({"v": 4}, {"$unset": {"loc": ""}})
    db.plain.update_many({"v": 4}, {"$unset": {"loc": ""}})
    assert compare_geo("after writes") > 30
    db.command("validate", "w")


@case
def geo_near_first_stage():
    for near, extra in (({"type": "Point", "coordinates": [1, 2]}, {}),
                        ({"type": "Point", "coordinates": [-5, 3]}, {"maxDistance": 900000}),
                        ({"type": "Point", "coordinates": [0, 0]}, {"minDistance": 200000, "maxDistance": 1500000}),
                        ([3, 3], {"spherical": True, "maxDistance": 0.2, "distanceMultiplier": 6371}),
                        ([3, 3], {"maxDistance": 6})):
        spec = dict(near=near, distanceField="dist", key="loc", **extra)
        tail = [{"$match": {"m.s": {"$ne": 2}}}, {"$project": {"_id": 0, "i": 1, "dist": 1}}]
        a = list(db.w.aggregate([{"$geoNear": spec}] + tail))
        if "maxDistance" not in extra:
            # as mongod's rewrite: a measurement without a geometry has distance -1 (first)
            nogeo = [d for d in a if d["dist"] == -1.0]
            assert a[:len(nogeo)] == nogeo and len(nogeo) > 0, a[:3]
            a = a[len(nogeo):]
        a = a[:40]
        tail.append({"$limit": 40})
        if isinstance(near, list) and not extra.get("spherical"):
            # a flat $geoNear on the plain collection needs a 2d index over legacy pairs only: compare
            # with the plane distances of the plain collection's points (legacy pairs and GeoJSON
            # points both project onto the plane)
            def xy(loc):
                return loc if isinstance(loc, list) else loc["coordinates"]
            pts = db.plain.find({"$or": [{"loc": {"$type": "array"}}, {"loc.type": "Point"}], "m.s": {"$ne": 2}})
            b = sorted(({"i": d["i"], "dist": ((xy(d["loc"])[0] - 3) ** 2 + (xy(d["loc"])[1] - 3) ** 2) ** 0.5}
                        for d in pts), key=lambda d: d["dist"])
            b = [d for d in b if d["dist"] <= 6][:40]
            a = [d for d in a if isinstance(d.get("dist"), float) and d["dist"] >= 0]
        else:
            b = list(db.plain.aggregate([{"$geoNear": spec}] + tail))
        assert [round(d["dist"], 6) for d in a] == [round(d["dist"], 6) for d in b], (spec, a[:3], b[:3])
        assert {d["i"] for d in a if d["dist"] != a[-1]["dist"]} == \
            {d["i"] for d in b if d["dist"] != b[-1]["dist"]}, spec
    for spec, code in (({"near": [0, 0], "distanceField": "d"}, 5892921),
                       ({"near": [0, 0], "key": "loc", "distanceField": "d", "query": {"v": 1}}, 1938439),
                       ({"near": [0, 0], "key": "loc"}, 5860206),
                       ({"near": [0, 0], "key": "loc", "distanceField": "d", "includeLocs": "l"}, 5860208)):
        try:
            list(db.w.aggregate([{"$geoNear": spec}]))
            raise AssertionError("accepted %r" % spec)
        except OperationFailure as e:
            assert e.code == code, (spec, e.code, str(e))


@case
def bad_geometry_is_refused_whole():
    before = db.w.count_documents({})
    try:
        db.w.insert_many([{"t": T0, "m": {"s": 0}, "loc": {"type": "Point", "coordinates": [1, 1]}},
                          {"t": T0, "m": {"s": 0}, "loc": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1]]]}}],
                         ordered=True)
        raise AssertionError("a malformed polygon indexed")
    except pymongo.errors.BulkWriteError as e:
        assert e.details["writeErrors"][0]["code"] == 16755, e.details
    # nothing half-bucketed: the first measurement of the batch stands or falls with its bucket write
    after = db.w.count_documents({})
    assert after in (before, before + 1), (before, after)


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
