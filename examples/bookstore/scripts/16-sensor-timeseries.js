// 16 - the sensor readings of 11 both ways: the seed's manual buckets (one
// document per sensor and hour, kept by upserts) and a time-series
// collection, which does the same grouping itself (MongoDB 5.0+; viewless
// as in 9.0).  The same 180 readings, the same hourly answer, and what each
// way stores: documents and their bytes (collStats size).  The readings carry
// their number as `_id` so the compressed sizes repeat from run to run.
db.sensorlar_ts.drop();
db.createCollection("sensorlar_ts", { timeseries: { timeField: "vaqt", metaField: "sensor", granularity: "minutes" } });
const t0 = ISODate("2024-01-01T00:00:00Z").getTime();
const readings = [];
for (let i = 0; i < 180; i++)
  readings.push({ _id: i, sensor: "s1", vaqt: new Date(t0 + i * 60 * 1000),
                  harorat: (221 + (i * 7) % 10 + Math.floor(i / 60) * 3) / 10 });
db.sensorlar_ts.insertMany(readings);
print("time-series: readings", db.sensorlar_ts.countDocuments(),
      " buckets", db.runCommand({ count: "sensorlar_ts", rawData: true }).n);
db.sensorlar_ts.aggregate([
  { $group: { _id: { $dateTrunc: { date: "$vaqt", unit: "hour" } }, n: { $sum: 1 },
              min: { $min: "$harorat" }, max: { $max: "$harorat" }, o_rtacha: { $avg: "$harorat" } } },
  { $sort: { _id: 1 } }
]).forEach(h => print(h._id.toISOString(), "readings", h.n, "min", h.min, "max", h.max,
                      "o_rtacha", Math.round(h.o_rtacha * 100) / 100));
const manual = db.runCommand({ collStats: "sensorlar" });
const ts = db.runCommand({ collStats: "sensorlar_ts" });
print("manual buckets:", Number(manual.count), "documents,", manual.size, "bytes");
print("time-series:   ", Number(ts.timeseries.bucketCount), "bucket documents,", ts.size, "bytes");
const plain = db.sensorlar_plain;
plain.drop();
plain.insertMany(readings.map(r => ({ sensor: r.sensor, vaqt: r.vaqt, harorat: r.harorat })));
print("one per reading:", Number(db.runCommand({ collStats: "sensorlar_plain" }).count), "documents,",
      db.runCommand({ collStats: "sensorlar_plain" }).size, "bytes");
