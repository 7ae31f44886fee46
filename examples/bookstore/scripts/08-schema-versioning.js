// Yeni kod v2 yazar: yeni ve güncellenen müşteriler
db.customers.updateOne({ _id: 3 }, [
  { $set: { schemaVersion: 2, address: { city: "$city", country: "$country" } } },
  { $unset: ["city", "country"] }
]);
// Okuma iki şekli birlikte destekler
printjson(db.customers.aggregate([
  { $match: { _id: { $in: [2, 3] } } },
  { $project: {
    _id: 1,
    schemaVersion: { $ifNull: ["$schemaVersion", 1] },
    city: { $ifNull: ["$address.city", "$city"] }
  } }
]).toArray());
// Arka planda migration: küçük batch'ler, kaldığı yerden devam edebilir
let migrated = 0;
while (true) {
  const ids = db.customers.find({ schemaVersion: { $exists: false } }, { _id: 1 }).limit(15).toArray().map(c => c._id);
  if (ids.length === 0) break;
  const r = db.customers.updateMany({ _id: { $in: ids }, schemaVersion: { $exists: false } }, [
    { $set: { schemaVersion: 2, address: { city: "$city", country: "$country" } } },
    { $unset: ["city", "country"] }
  ]);
  migrated += r.modifiedCount;
  print("batch:", r.modifiedCount);
}
print("migrated:", migrated, " v1 left:", db.customers.countDocuments({ schemaVersion: { $exists: false } }));
printjson(db.customers.findOne({ _id: 2 }, { _id: 0, firstName: 1, schemaVersion: 1, address: 1 }));
