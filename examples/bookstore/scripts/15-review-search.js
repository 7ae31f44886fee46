// 15 - review search: "reviews saying the middle is hard going", by relevance.
// A text index on the review bodies (English stemming and stop words), $text
// with the score mongod computes, a negated term, and the same as an
// aggregation (a leading $text $match, then $sort by the score).
db.reviews.createIndex({ body: "text" }, { name: "reviews_body_text" });
// "hard going in the middle": in, the are stop words; going stems to go,
// middle to middl: 3 terms, each 0.5 * 1/3 + 0.5, and the query meets two
db.reviews.find({ $text: { $search: "hard middle" } }, { _id: 0, body: 1, score: { $meta: "textScore" } })
  .sort({ score: { $meta: "textScore" }, _id: 1 }).limit(2)
  .forEach(r => print(r.body, r.score));
print("matching:", db.reviews.countDocuments({ $text: { $search: "hard middle" } }));
// books, but not book clubs
db.reviews.find({ $text: { $search: "book -club" } }, { _id: 0, body: 1 }).sort({ _id: 1 })
  .forEach(r => print("book, no club:", r.body));
// the books with the most reviews saying they could not put it down
db.reviews.aggregate([
  { $match: { $text: { $search: "\"put it down\"" } } },
  { $group: { _id: "$bookId", n: { $sum: 1 } } },
  { $sort: { n: -1, _id: 1 } },
  { $limit: 3 }
]).forEach(g => print("book", g._id, "put down:", g.n));
