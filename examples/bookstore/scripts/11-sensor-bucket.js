// 11 - second seed (003), bucket pattern: one document per sensor and hour
// holding that hour's readings, with min, max and the average kept up to date
// on every write.  Three hours of one reading a minute from sensor s1.
db.sensorlar.drop();
const t0 = ISODate("2024-01-01T00:00:00Z").getTime();
for (let i = 0; i < 180; i++) {
  const at = new Date(t0 + i * 60 * 1000);
  const soat = new Date(Math.floor(at.getTime() / 3600000) * 3600000);
  const harorat = (221 + (i * 7) % 10 + Math.floor(i / 60) * 3) / 10; // 22.1 .. 23.6
  db.sensorlar.updateOne(
    { sensor: "s1", soat },
    { $push: { o_lchashlar: { daqiqa: at.getUTCMinutes(), harorat } },
      $min: { min: harorat }, $max: { max: harorat }, $inc: { n: 1, yigindi: harorat } },
    { upsert: true }
  );
}
// the average from the running sum and count, rounded, in one pipeline update
db.sensorlar.updateMany({}, [{ $set: { o_rtacha: { $round: [{ $divide: ["$yigindi", "$n"] }, 2] } } }]);
print("readings: 180  documents:", db.sensorlar.countDocuments());
db.sensorlar.find({}, { _id: 0, o_lchashlar: 0 }).sort({ soat: 1 }).forEach(b =>
  print(b.soat.toISOString(), "readings", b.n, "min", b.min, "max", b.max, "o_rtacha", b.o_rtacha));
printjson(db.sensorlar.findOne({ soat: ISODate("2024-01-01T00:00:00Z") },
  { _id: 0, sensor: 1, soat: 1, o_lchashlar: { $slice: 3 }, min: 1, max: 1, o_rtacha: 1 }));
