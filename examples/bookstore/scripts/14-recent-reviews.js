// 14 - second seed (003), subset pattern: the book page shows the latest 3
// reviews, the average and the count from the book document; all reviews stay
// in reviews and "more reviews" pages through them.
const bookId = 10; // Fahrenheit 451, the most reviewed book
const summary = db.reviews.aggregate([
  { $match: { bookId } },
  { $group: { _id: null, n: { $sum: 1 }, avg: { $avg: "$rating" } } }
]).toArray()[0];
const latest3 = db.reviews.find({ bookId }, { _id: 0, body: 1, rating: 1, reviewedAt: 1 })
  .sort({ reviewedAt: -1, _id: 1 }).limit(3).toArray();
db.books.updateOne({ _id: bookId }, { $set: {
  so_nggi_sharhlar: latest3, o_rtacha_baho: Math.round(summary.avg * 10) / 10, sharhlar_soni: summary.n } });
// first load: the small document
printjson(db.books.findOne({ _id: bookId }, { _id: 0, title: 1, so_nggi_sharhlar: 1, o_rtacha_baho: 1, sharhlar_soni: 1 }));
// "more reviews": the next page from reviews
db.reviews.find({ bookId }, { _id: 0, rating: 1, reviewedAt: 1 }).sort({ reviewedAt: -1, _id: 1 }).skip(3).limit(3)
  .forEach(r => print("more:", r.reviewedAt.toISOString(), "rating", r.rating));
