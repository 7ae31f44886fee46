// 12 - second seed (003), outlier pattern: most users have a few posts, kept in
// their own document; a user who passes the limit keeps only the latest 3 in
// the main document, marked overflow: true, the older ones in an overflow
// document.  (The seed's blogger has 500,000 posts; 1,000 show the same shape.)
db.foydalanuvchilar.drop();
db.overflow.drop();
const LIMIT = 100;
function addPost(u, p) {
  // the common case: room in the main document
  const r = db.foydalanuvchilar.updateOne(
    { _id: u, overflow: { $exists: false }, [`post_ids.${LIMIT - 1}`]: { $exists: false } },
    { $push: { post_ids: p } });
  if (r.matchedCount === 1) return;
  const main = db.foydalanuvchilar.findOne({ _id: u });
  if (!main.overflow) {
    // becoming an outlier: all but the latest 2 move out, the new post joins them
    db.overflow.updateOne({ foydalanuvchi_id: u },
      { $push: { post_ids: { $each: main.post_ids.slice(0, -2) } } }, { upsert: true });
    db.foydalanuvchilar.updateOne({ _id: u },
      { $set: { overflow: true }, $push: { post_ids: { $each: [p], $slice: -3 } } });
  } else {
    // already an outlier: the oldest of the 3 moves out
    db.overflow.updateOne({ foydalanuvchi_id: u }, { $push: { post_ids: main.post_ids[0] } });
    db.foydalanuvchilar.updateOne({ _id: u }, { $push: { post_ids: { $each: [p], $slice: -3 } } });
  }
}
db.foydalanuvchilar.insertMany([
  { _id: "u_ali", ism: "Ali", post_ids: [] },
  { _id: "u_yasmin", ism: "Yasmin", post_ids: [] }
]);
for (let i = 1; i <= 60; i++) addPost("u_ali", `a${i}`);
for (let i = 1; i <= 1000; i++) addPost("u_yasmin", `p${i}`);
db.foydalanuvchilar.find().sort({ _id: 1 }).forEach(u =>
  print(u.ism, "main posts", u.post_ids.length, "overflow", u.overflow === true));
printjson(db.foydalanuvchilar.findOne({ _id: "u_yasmin" }));
const o = db.overflow.findOne({ foydalanuvchi_id: "u_yasmin" });
print("overflow document: posts", o.post_ids.length, "first", o.post_ids[0], "last", o.post_ids[o.post_ids.length - 1]);
// every post of an outlier: the main document plus its overflow
const all = db.foydalanuvchilar.aggregate([
  { $match: { _id: "u_yasmin" } },
  { $lookup: { from: "overflow", localField: "_id", foreignField: "foydalanuvchi_id", as: "o" } },
  { $project: { _id: 0, total: { $add: [{ $size: "$post_ids" }, { $sum: { $map: { input: "$o", in: { $size: "$$this.post_ids" } } } }] } } }
]).toArray();
print("Yasmin's posts in all:", all[0].total);
