// 10 - the role split: the application user (readWrite on bookstore) reads and
// writes, but collMod -- changing the validator -- needs dbAdmin; the admin
// can.  Needs a server started with --auth and the users load.sh creates;
// the runner gives the application user's URI in BOOKSTORE_APP_URI.
const appUri = process.env.BOOKSTORE_APP_URI;
const app = new Mongo(appUri).getDB("bookstore");
print("app reads books:", app.books.countDocuments({}));
const w = app.reviews.insertOne({ bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 5,
  body: "Written by the application user.", reviewedAt: ISODate("2026-06-30T13:00:00Z") });
print("app inserts a review:", w.acknowledged);
app.reviews.deleteOne({ _id: w.insertedId });
try {
  app.runCommand({ collMod: "reviews", validationLevel: "moderate" });
  print("app collMod: ok");
} catch (e) {
  print("app collMod:", e.name, "code", e.code, e.codeName);
}
const r = db.runCommand({ collMod: "orders", validator: {} });
print("admin collMod:", r.ok === 1 ? "ok" : r.errmsg);
