"""Geo queries on a time-series collection through PyMongo against tamgad
(issue 19), as mongod 9.0 answers them: a '2dsphere' index on a measurement
field (the buckets' 2dsphere_bucket index over every measurement of a bucket;
listIndexes in the user's terms, rawData: true in the buckets'),
$geoWithin / $geoIntersects pushed to the buckets as $_internalBucketGeoWithin
(scanned through that index), and $geoNear as the first stage (mongod's
splitForTimeseries) -- every answer compared with the same query on a plain
collection holding the same measurements (random points, lines, polygons,
nulls and missing locations; open, closed and compressed buckets; after
updates and deletes that rewrite buckets); $geoNear keyed on the metaField
(run on the buckets' meta index before the unpack, the distance and location
handed to every measurement), and partial filters holding $geoWithin /
$geoIntersects on a measurement ($_internalBucketGeoWithin on the buckets);
and a $geoNear leading a $lookup / $unionWith sub-pipeline on a time-series
collection, answered as the same stages at top level (mongod's refusals too).
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


def meta_batch(start, n, sites):
    out = []
    for i in range(start, start + n):
        s = sites[i % len(sites)]
        d = {"i": i, "t": T0 + datetime.timedelta(seconds=i * 13), "tags": dict(s), "v": rng.randint(0, 9)}
        if i % 11 == 0:
            d["d"] = "a measurement field the distance replaces"
        out.append(d)
    return out


def sites():
    out = []
    for k in range(40):
        x, y = rng.uniform(-30, 30), rng.uniform(-30, 30)
        loc = {"type": "Point", "coordinates": [x, y]} if k % 4 else [x, y]
        out.append({"site": k, "loc": loc})
    out.append({"site": "noloc"})                      # no location: never near
    return out


def norm(d):
    d = dict(d)
    d.pop("_id", None)
    return repr(sorted((k, repr(v)) for k, v in d.items()))


@case
def geo_near_on_the_meta_field():
    # mongod moves a $geoNear keyed on the metaField before the unpack, onto the buckets' meta.<sub>
    # index: the same measurements, in the same distance order, with the same distance and location
    # as a plain collection holding them
    db.create_collection("wm", timeseries={"timeField": "t", "metaField": "tags"})
    db.wm.create_index([("tags.loc", "2dsphere")], name="tags_loc")
    db.pm.create_index([("tags.loc", "2dsphere")])
    st = sites()
    for start in range(0, 2400, 400):
        docs = meta_batch(start, 400, st)
        db.wm.insert_many([dict(d) for d in docs])
        db.pm.insert_many([dict(d) for d in docs])
    raw = {i["name"]: i for i in db.command("listIndexes", "wm", rawData=True)["cursor"]["firstBatch"]}
    assert raw["tags_loc"]["key"] == {"meta.loc": "2dsphere"}, raw
    n = 0
    for _ in range(3):
        near = {"type": "Point", "coordinates": [rng.uniform(-30, 30), rng.uniform(-30, 30)]}
        for extra in ({}, {"maxDistance": 2500000}, {"minDistance": 800000, "maxDistance": 3000000},
                      {"distanceMultiplier": 0.001, "includeLocs": "tags.where"},
                      {"includeLocs": "at", "distanceField": "tags.dist"},
                      {"distanceField": "d", "includeLocs": "d"},
                      {"spherical": True}):
            spec = dict({"near": near, "key": "tags.loc", "distanceField": "dist"}, **extra)
            for tail in ([], [{"$match": {"v": {"$gte": 3}}}], [{"$limit": 57}],
                         [{"$group": {"_id": "$tags.site", "n": {"$sum": 1}, "far": {"$max": "$dist"}}},
                          {"$sort": {"_id": 1}}]):
                a = list(db.wm.aggregate([{"$geoNear": spec}] + tail))
                b = list(db.pm.aggregate([{"$geoNear": spec}] + tail))
                assert len(a) == len(b) and len(a) > 0, (spec, tail, len(a), len(b))
                if tail and "$group" in tail[0]:
                    assert a == b, (spec, a[:2], b[:2])
                    continue
                dist = spec["distanceField"]

                def dval(d):
                    return d["tags"][dist[5:]] if dist.startswith("tags.") else d[dist]
                # the same distance sequence; equal distances (one site's measurements) in any order
                if spec.get("includeLocs") != dist:
                    assert [round(dval(d), 6) for d in a] == [round(dval(d), 6) for d in b], (spec, tail)
                if "$limit" not in repr(tail):
                    assert sorted(map(norm, a)) == sorted(map(norm, b)), (spec, tail, a[:1], b[:1])
                n += 1
    assert n > 40, n
    # explain: the $geoNear runs on the buckets through the meta index, then the unpack
    spec = {"near": {"type": "Point", "coordinates": [1, 1]}, "key": "tags.loc", "distanceField": "dist"}
    ex = db.command("explain", {"aggregate": "wm", "pipeline": [{"$geoNear": spec}], "cursor": {}},
                    verbosity="queryPlanner")
    text = repr(ex["stages"])
    assert "GEO_NEAR_2DSPHERE" in text and "'meta.loc'" in text and "tags_loc" in text, text
    unpack = [s for s in ex["stages"] if "$_internalUnpackBucket" in s][0]["$_internalUnpackBucket"]
    assert unpack["computedMetaProjFields"] == ["dist"], unpack
    # mongod's refusals come first; a path Tamga cannot carry: 238
    for bad, code in (({"near": [0, 0], "distanceField": "d"}, 5892921),
                      ({"near": [0, 0], "key": "tags.loc", "distanceField": "d", "query": {"v": 1}}, 1938439),
                      ({"near": [0, 0], "key": "tags.loc", "distanceField": "a.b"}, 238),
                      ({"near": [0, 0], "key": "tags.loc", "distanceField": "data"}, 238),
                      ({"near": [0, 0], "key": "tags.loc", "distanceField": "d", "includeLocs": "control"}, 238)):
        try:
            list(db.wm.aggregate([{"$geoNear": bad}]))
            raise AssertionError("accepted %r" % bad)
        except OperationFailure as e:
            assert e.code == code, (bad, e.code, str(e))
    # without an index on the meta location, the buckets' $geoNear answers as a plain collection's
    db.wm.drop_index("tags_loc")
    db.pm.drop_index("tags.loc_2dsphere")
    codes = []
    for coll in (db.wm, db.pm):
        try:
            list(coll.aggregate([{"$geoNear": spec}]))
            raise AssertionError("no index, accepted")
        except OperationFailure as e:
            codes.append(e.code)
    assert codes[0] == codes[1], codes


@case
def partial_filter_with_geo_within():
    # mongod's pushdownPredicate turns a measurement $geoWithin/$geoIntersects of a partial filter into
    # $_internalBucketGeoWithin on the buckets: the index holds every bucket one of whose measurements
    # is in the region
    region = {"$geometry": {"type": "Polygon", "coordinates": [[[0, 0], [8, 0], [8, 8], [0, 8], [0, 0]]]}}
    for op, name in (("$geoWithin", "v_in_box"), ("$geoIntersects", "v_meets_box"), ("$within", "v_within")):
        pf = {"loc": {op: region if op != "$within" else {"$box": [[0, 0], [8, 8]]}}}
        db.w.create_index([("v", 1)], name=name, partialFilterExpression=pf)
        raw = {i["name"]: i for i in db.command("listIndexes", "w", rawData=True)["cursor"]["firstBatch"]}[name]
        got = raw["partialFilterExpression"]["$_internalBucketGeoWithin"]
        assert got["field"] == "loc" and got["withinRegion"] == pf["loc"][op], raw
        shown = {i["name"]: i for i in db.w.list_indexes()}[name]
        assert shown["partialFilterExpression"] == pf and shown["key"] == {"v": 1}, shown
        # the index holds exactly the buckets the filter keeps; a hinted read of the matching
        # measurements answers as the plain collection
        q = dict(pf, v={"$gte": 0})
        a = ids(db.w.find(q).hint(name))
        b = ids(db.plain.find(q))
        assert a == b and len(a) > 0, (op, len(a), len(b))
        db.w.drop_index(name)
    # the filter is still mongod's: $near is refused as any predicate it cannot translate
    for bad in ({"loc": {"$near": [0, 0]}},):
        try:
            db.w.create_index([("v", 1)], name="bad", partialFilterExpression=bad)
            raise AssertionError("accepted %r" % bad)
        except OperationFailure as e:
            assert e.code in (5916301, 2, 67), (bad, e.code, str(e))


def sub_answers(coll, stages):
    """The stages at top level on coll, as a $lookup's sub-pipeline (unwound) and as a $unionWith's."""
    top = list(db[coll].aggregate(stages))
    db.one.replace_one({"_id": 1}, {"_id": 1}, upsert=True)
    lk = list(db.one.aggregate([{"$lookup": {"from": coll, "pipeline": stages, "as": "r"}},
                                {"$unwind": "$r"}, {"$replaceWith": "$r"}]))
    uw = list(db.none_here.aggregate([{"$unionWith": {"coll": coll, "pipeline": stages}}]))
    return top, lk, uw


@case
def geo_near_in_sub_pipelines():
    # a $geoNear leading a $lookup / $unionWith sub-pipeline on a time-series collection takes the
    # top-level rewrite (mongod resolves the namespace and optimizes the sub-pipeline the same way):
    # the same answers as the same stages run at top level
    n = 0
    for near, extra in (({"type": "Point", "coordinates": [1, 2]}, {}),
                        ({"type": "Point", "coordinates": [0, 0]}, {"minDistance": 200000, "maxDistance": 1500000}),
                        ([3, 3], {"spherical": True, "maxDistance": 0.2, "distanceMultiplier": 6371})):
        spec = dict(near=near, distanceField="dist", key="loc", **extra)
        stages = [{"$geoNear": spec}, {"$match": {"m.s": {"$ne": 2}}}, {"$project": {"_id": 0, "i": 1, "dist": 1}},
                  {"$limit": 50}]
        top, lk, uw = sub_answers("w", stages)
        assert len(top) > 0 and top == lk == uw, (spec, top[:2], lk[:2], uw[:2])
        if "maxDistance" in extra:
            # and the distances a plain collection's sub-pipeline gives (its $geoNear over the index)
            plain = list(db.one.aggregate([{"$lookup": {"from": "plain", "pipeline": stages, "as": "r"}}]))[0]["r"]
            assert [round(d["dist"], 6) for d in plain] == [round(d["dist"], 6) for d in top], spec
        n += 1
    # the metaField key: the $geoNear on the buckets' meta index before the unpack (mongod's
    # timeseries_geonear_lookup.js shape), with let variables read after it
    db.wm.create_index([("tags.loc", "2dsphere")], name="tags_loc")
    spec = {"near": {"type": "Point", "coordinates": [0, 0]}, "key": "tags.loc", "distanceField": "tags.distance"}
    top, lk, uw = sub_answers("wm", [{"$geoNear": spec}, {"$sort": {"tags.distance": 1, "i": 1}},
                                     {"$project": {"_id": 0}}])
    assert len(top) == db.wm.count_documents({}) - db.wm.count_documents({"tags.loc": None}) and \
        top == lk == uw, (len(top), len(lk), len(uw))
    db.sites.insert_many([{"_id": 0, "s": 3, "max": 2500000}, {"_id": 1, "s": 7, "max": 4000000}])
    got = list(db.sites.aggregate([{"$lookup": {
        "from": "wm", "let": {"s": "$s", "mx": "$max"}, "as": "r",
        "pipeline": [{"$geoNear": spec},
                     {"$match": {"$expr": {"$and": [{"$eq": ["$tags.site", "$$s"]},
                                                    {"$lte": ["$tags.distance", "$$mx"]}]}}},
                     {"$sort": {"i": 1}}, {"$project": {"_id": 0, "i": 1, "tags.distance": 1}}]}},
        {"$sort": {"_id": 1}}]))
    for site, mx, row in ((3, 2500000, got[0]), (7, 4000000, got[1])):
        want = list(db.wm.aggregate([{"$geoNear": dict(spec, maxDistance=mx)}, {"$match": {"tags.site": site}},
                                     {"$sort": {"i": 1}}, {"$project": {"_id": 0, "i": 1, "tags.distance": 1}}]))
        assert row["r"] == want, (site, len(row["r"]), len(want))
    # mongod's refusals, in either sub-pipeline as at top level
    for stages, code in (([{"$geoNear": {"near": [0, 0], "distanceField": "d"}}], 5892921),
                         ([{"$geoNear": {"near": [0, 0], "key": "loc", "distanceField": "d", "query": {"v": 1}}}],
                          1938439),
                         ([{"$geoNear": {"near": [0, 0], "key": "loc"}}], 5860206),
                         ([{"$geoNear": {"near": [0, 0], "key": "loc", "distanceField": "d", "includeLocs": "l"}}],
                          5860208),
                         ([{"$match": {"v": 1}}, {"$geoNear": {"near": [0, 0], "key": "loc", "distanceField": "d"}}],
                          40602)):
        for pipeline in (stages,
                         [{"$lookup": {"from": "w", "pipeline": stages, "as": "r"}}],
                         [{"$unionWith": {"coll": "w", "pipeline": stages}}]):
            try:
                list((db.w if pipeline is stages else db.one).aggregate(pipeline))
                raise AssertionError("accepted %r" % pipeline)
            except OperationFailure as e:
                assert e.code == code, (pipeline, e.code, str(e))
    # the buckets' $geoNear needs the meta index: without it, the sub-pipeline answers as top level
    db.wm.drop_index("tags_loc")
    codes = []
    for run in (lambda: db.wm.aggregate([{"$geoNear": spec}]),
                lambda: db.one.aggregate([{"$lookup": {"from": "wm", "pipeline": [{"$geoNear": spec}], "as": "r"}}])):
        try:
            list(run())
            codes.append(0)
        except OperationFailure as e:
            codes.append(e.code)
    assert codes[0] != 0 and codes[0] == codes[1], codes
    assert n == 3


print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
