// 09 - anti-patterns the seed lists, checked on the bookstore:
// (1) the unbounded array: embedding every review in the book hits the 16 MiB
//     document limit (the seed's 4th article hit it at 110,000 reviews);
// (2) unneeded indexes: $indexStats finds the never-used ones, and the key
//     patterns show which are a prefix of another index.
db.books_embedded.drop();
db.books_embedded.insertOne({ _id: 26, title: "Dune", reviews: [] });
const one = { bookId: 26, customer: { customerId: 7, name: "Adele Goldberg" }, rating: 5,
  body: "Still the best world-building I know.", reviewedAt: ISODate("2026-05-04T01:49:15Z") };
const batch = Array.from({ length: 10000 }, () => one);
let embedded = 0;
try {
  for (;;) {
    db.books_embedded.updateOne({ _id: 26 }, { $push: { reviews: { $each: batch } } });
    embedded += batch.length;
  }
} catch (e) {
  print("embedded reviews:", embedded, " size:", bsonsize(db.books_embedded.findOne({ _id: 26 })), "bytes");
  print(`push ${embedded + batch.length}: ${e.name}: ${e.message}`);
  print("code:", e.code);
}
db.books_embedded.drop();

// indexes: one used, one never used, one a prefix of the used one
db.orders.createIndex({ customerId: 1, orderedAt: -1 });
db.orders.createIndex({ customerId: 1 });
db.orders.createIndex({ status: 1, total: 1 });
db.orders.find({ customerId: 7 }).sort({ orderedAt: -1 }).hint({ customerId: 1, orderedAt: -1 }).toArray();
db.orders.find({ customerId: 9, orderedAt: { $gte: ISODate("2025-07-01T00:00:00Z") } })
  .hint({ customerId: 1, orderedAt: -1 }).toArray();
const stats = db.orders.aggregate([{ $indexStats: {} }, { $sort: { name: 1 } }]).toArray();
// (_id_ is left out: the earlier scripts used it)
stats.filter(s => s.name !== "_id_").forEach(s => print("index", s.name, "ops", Number(s.accesses.ops)));
const keys = stats.map(s => Object.keys(s.key));
const unused = stats.filter(s => s.name !== "_id_" && Number(s.accesses.ops) === 0).map(s => s.name);
const prefixes = stats.filter((s, i) => keys.some((k, j) => j !== i && k.length > keys[i].length &&
  keys[i].every((f, n) => k[n] === f && s.key[f] === stats[j].key[f]))).map(s => s.name);
print("unused:", unused.join(", "));
print("prefix of another index:", prefixes.join(", "));
["customerId_1_orderedAt_-1", "customerId_1", "status_1_total_1"].forEach(n => db.orders.dropIndex(n));
