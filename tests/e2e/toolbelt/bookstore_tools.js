// bookstore_tools.js -- issue 20's tools on the seed's bookstore (loaded fresh
// by run.sh): the validation preview finds the one legacy review per rule as
// the seed's $nor query does; inference on reviews gives a validator that,
// tightened, accepts every review but the legacy one; the advisor finds the
// seed's anti-patterns (the 100,000-review embedded array, the unused and
// prefix indexes of 09-anti-patterns.js) and nothing on the clean
// collections; validate, the profiler and $queryStats on the same data.
load(process.env.TOOLBELT_LIB);
const bs = db.getSiblingDB("bookstore");
// a command's reply, or {code, codeName, errmsg} when it fails (mongosh throws)
function cmd(d, c) {
  try { const r = d.runCommand(c); return r; } catch (e) { return { ok: 0, code: e.code, codeName: e.codeName, errmsg: e.message }; }
}
const N = Number;
const admin = db.getSiblingDB("admin");

// ---- validation preview vs the seed's $nor query
const nor = bs.reviews.find({ $nor: [{ $jsonSchema: reviewSchema }] }, { _id: 1 }).toArray();
const pv = cmd(bs, { tamgaValidationPreview: "reviews", validator: { $jsonSchema: reviewSchema } });
print("preview ok:", pv.ok, " scanned:", N(pv.scanned), " failed:", N(pv.failed), " $nor finds:", nor.length);
pv.rules.filter(r => N(r.failed) > 0).forEach(r =>
  print("  rule", r.rule, "failed", N(r.failed), "ids", JSON.stringify(r.examples.map(e => e._id)),
    "same as $nor:", r.examples.every(e => nor.some(n => n._id.equals(e._id)))));
print("  rules listed:", pv.rules.length, " with no failure:", pv.rules.filter(r => N(r.failed) === 0).length);
print("  errInfo names the rule:", pv.rules.find(r => N(r.failed) > 0).examples[0].errInfo.details.operatorName);
print("  constraint upgrade succeeds:", pv.levels.constraint.upgradeSucceeds,
  " moderate skips updates of:", N(pv.levels.moderate.updatesNotChecked));
// resumable: two pages of 200 cover the collection once
const p1 = cmd(bs, { tamgaValidationPreview: "reviews", validator: { $jsonSchema: reviewSchema }, limit: 200 });
const p2 = cmd(bs, { tamgaValidationPreview: "reviews", validator: { $jsonSchema: reviewSchema }, limit: 200,
  resumeAfter: p1.resumeAfter });
print("pages:", N(p1.scanned), p1.complete, "+", N(p2.scanned), p2.complete, "=", N(p1.scanned) + N(p2.scanned),
  " failed:", N(p1.failed) + N(p2.failed));
const past = cmd(bs, { tamgaValidationPreview: "reviews", validator: { $jsonSchema: reviewSchema },
  resumeAfter: ObjectId("ffffffffffffffffffffffff") });
print("past the end:", past.code, past.codeName);
// the current validator (none yet) and bad input
let r = cmd(bs, { tamgaValidationPreview: "reviews" });
print("no validator:", r.code, r.errmsg);
r = cmd(bs, { tamgaValidationPreview: "reviews", validator: { $jsonSchema: { bsonType: "nope" } } });
print("bad validator:", r.code, r.errmsg);
r = cmd(bs, { tamgaValidationPreview: "nosuch", validator: {} });
print("missing collection:", r.code, r.errmsg);
bs.createView("reviews_view", "reviews", []);
r = cmd(bs, { tamgaValidationPreview: "reviews_view", validator: {} });
print("view:", r.code, r.codeName);
bs.reviews_view.drop();

// ---- inference
const inf = cmd(bs, { tamgaInferSchema: "reviews" });
print("infer ok:", inf.ok, " sampled:", N(inf.sampled), " required:", JSON.stringify(inf.validator.$jsonSchema.required));
print("  rating:", JSON.stringify(inf.validator.$jsonSchema.properties.rating),
  " customer.name:", JSON.stringify(inf.validator.$jsonSchema.properties.customer.properties.name));
const ratingStats = inf.fields.find(f => f.path === "rating");
print("  rating types:", JSON.stringify(ratingStats.types.map(t => [t.bsonType, N(t.count)])));
print("  accepts every review:",
  bs.reviews.countDocuments({ $nor: [inf.validator] }) === 0);
const tight = cmd(bs, { tamgaInferSchema: "reviews", tighten: true });
print("  tightened rating:", JSON.stringify(tight.validator.$jsonSchema.properties.rating));
const rejected = bs.reviews.find({ $nor: [tight.validator] }, { _id: 1 }).toArray();
print("  tightened rejects:", rejected.length, " the legacy one:", rejected.length === 1 && rejected[0]._id.equals(nor[0]._id));
r = cmd(bs, { tamgaInferSchema: "reviews", sample: 0 });
print("sample 0:", r.code);
r = cmd(bs, { tamgaInferSchema: "reviews", sample: 1000000 });
print("sample past the collection:", r.code, r.errmsg);
// polymorphic editions: a discriminator, one schema per variant
// (the seed's editions: one collection, three formats with their own fields)
const cu = cmd(bs, { tamgaInferSchema: "customers" });
print("customers discriminator:", cu.discriminator === undefined ? "none" : cu.discriminator);
bs.editions_t.drop();
bs.editions_t.insertMany([
  { bookId: 1, format: "print", price: 20, pages: 412 }, { bookId: 1, format: "print", price: 22, pages: 390 },
  { bookId: 1, format: "ebook", price: 9, fileSizeMB: 3 }, { bookId: 2, format: "ebook", price: 8, fileSizeMB: 2 },
  { bookId: 1, format: "audiobook", price: 30, narrator: "Grace Hopper", minutes: 620 }]);
const ed = cmd(bs, { tamgaInferSchema: "editions_t" });
print("editions discriminator:", ed.discriminator, " variants:", JSON.stringify(ed.variants.map(v => [v.value, N(v.count)])));
ed.validator.$jsonSchema.anyOf.forEach(v => print("  variant", JSON.stringify(v.properties.format), "required", JSON.stringify(v.required)));
print("  accepts every edition:", bs.editions_t.countDocuments({ $nor: [ed.validator] }) === 0);
bs.editions_t.insertOne({ bookId: 3, format: "ebook", price: 5, pages: 3 });
print("  rejects an ebook without fileSizeMB:", bs.editions_t.countDocuments({ $nor: [ed.validator] }) === 1);
bs.editions_t.drop();

// ---- violation counters after a scripted mix of writes
cmd(bs, { collMod: "reviews", validator: { $jsonSchema: reviewSchema }, validationLevel: "strict",
  validationAction: "warn" });
const good = { bookId: 1, customer: { customerId: 1, name: "Ada" }, rating: 4, reviewedAt: new Date(0) };
for (let i = 0; i < 5; i++) bs.reviews.insertOne(Object.assign({}, good));
bs.reviews.insertOne(Object.assign({}, good, { rating: 9 }));          // warned: maximum
bs.reviews.insertOne(Object.assign({}, good, { rating: "9" }));        // warned: bsonType
cmd(bs, { collMod: "reviews", validationAction: "error" });
try { bs.reviews.insertOne(Object.assign({}, good, { rating: 0 })); } catch (e) { print("refused:", e.code); }
try { bs.reviews.insertOne({ bookId: 1 }); } catch (e) { print("refused:", e.code); }
const cv = cmd(bs, { collStats: "reviews" }).validation;
print("collStats.validation passed", N(cv.passed), "failed", N(cv.failed), "warned", N(cv.warned));
Object.keys(cv.rules).sort().forEach(k => print("  ", k, "failed", N(cv.rules[k].failed), "warned", N(cv.rules[k].warned)));
const csv = bs.reviews.aggregate([{ $collStats: { validation: {} } }]).toArray()[0].validation;
print("$collStats.validation same:", JSON.stringify(csv) === JSON.stringify(cv));
const ssv = db.adminCommand({ serverStatus: 1 }).validation.collections["bookstore.reviews"];
print("serverStatus.validation same:", JSON.stringify(ssv) === JSON.stringify(cv));
cmd(bs, { collMod: "reviews", validator: {}, validationLevel: "strict", validationAction: "error" });
bs.reviews.deleteMany({ bookId: 1, "customer.name": "Ada" });

// ---- validate
const v = cmd(bs, { validate: "reviews" });
print("validate:", v.valid, N(v.nrecords), JSON.stringify(v.keysPerIndex), v.errors.length, N(v.nInvalidDocuments));
r = cmd(bs, { validate: "nosuch" });
print("validate missing:", r.code, r.errmsg);
const vm = cmd(bs, { validate: "reviews", metadata: true });
print("validate metadata:", vm.valid, vm.nrecords === undefined, JSON.stringify(vm.keysPerIndex), vm.warnings.length,
  vm.errors.length, vm.nIndexes);
r = cmd(bs, { validate: "reviews", metadata: true, full: true });
print("validate metadata full:", r.code, r.errmsg);

// ---- the seed's anti-patterns, then the advisor
bs.books_embedded.drop();
bs.books_embedded.insertOne({ _id: 26, title: "Dune", reviews: [] });
const one = { bookId: 26, customer: { customerId: 7, name: "Adele Goldberg" }, rating: 5,
  body: "Still the best world-building I know.", reviewedAt: ISODate("2026-05-04T01:49:15Z") };
const batch = Array.from({ length: 10000 }, () => one);
for (let i = 0; i < 10; i++) bs.books_embedded.updateOne({ _id: 26 }, { $push: { reviews: { $each: batch } } });
bs.orders.createIndex({ customerId: 1, orderedAt: -1 });
bs.orders.createIndex({ customerId: 1 });
bs.orders.createIndex({ status: 1, total: 1 });
bs.orders.find({ customerId: 7 }).sort({ orderedAt: -1 }).hint({ customerId: 1, orderedAt: -1 }).toArray();
const adv = cmd(bs, { tamgaSchemaAdvice: 1 });
print("advice ok:", adv.ok, " collections checked:", adv.collectionsChecked);
adv.findings.forEach(f => print("  [" + f.severity + "]", f.type, f.ns, JSON.stringify(
  f.evidence.path !== undefined ? { path: f.evidence.path, maxLength: N(f.evidence.maxLength) } :
  f.evidence.index !== undefined ? { index: f.evidence.index, prefixOf: f.evidence.prefixOf } :
  f.evidence.field !== undefined ? { field: f.evidence.field } :
  { documents: N(f.evidence.documents) }), "->", f.pattern, f.doc));
const clean = ["books", "customers", "reviews"].filter(c => adv.findings.every(f => f.ns !== "bookstore." + c));
print("clean collections without findings:", JSON.stringify(clean));
bs.books_embedded.drop();
["customerId_1_orderedAt_-1", "customerId_1", "status_1_total_1"].forEach(n => bs.orders.dropIndex(n));

// ---- the profiler and the slow query log
print("profile:", JSON.stringify(cmd(bs, { profile: 2 })));
bs.customers.find({ name: /^ada/i }).toArray();
bs.customers.find({ _id: 7 }).toArray();
print("profile now:", JSON.stringify(cmd(bs, { profile: 1, slowms: 0 })));
bs.books.find({ _id: 26 }).toArray();
bs.books.updateOne({ _id: 26 }, { $push: { tags_t: "dune" } });                          // grows
bs.books.updateOne({ _id: 26 }, { $push: { recent_t: { $each: [1], $slice: -3 } } });    // bounded
cmd(bs, { profile: 0, slowms: 100 });
const up = cmd(bs, { tamgaSchemaAdvice: "books" }).findings.filter(f => f.type === "unboundedPush");
print("unbounded pushes from the profiler:", JSON.stringify(up.map(f => [f.evidence.path, N(f.evidence.withoutSlice), f.pattern])));
bs.books.updateOne({ _id: 26 }, { $unset: { tags_t: "", recent_t: "" } });
const entries = bs.system.profile.find({ ns: { $in: ["bookstore.customers", "bookstore.books"] } }, { op: 1, ns: 1, nreturned: 1, docsExamined: 1,
  keysExamined: 1, planSummary: 1 }).toArray();
entries.forEach(e => print("  entry", e.op, e.ns, e.planSummary, "keys", N(e.keysExamined), "docs", N(e.docsExamined),
  "returned", e.nreturned === undefined ? "-" : N(e.nreturned)));
const ci = cmd(bs, { tamgaSchemaAdvice: "customers" }).findings.filter(f => f.type === "caseInsensitiveRegex");
print("case-insensitive regex found from the profiler:", ci.length, ci.length ? ci[0].pattern : "");
const slow = db.adminCommand({ getLog: "global" }).log.map(l => JSON.parse(l)).filter(l => l.id === 51803 &&
  l.attr.ns === "bookstore.books" && (l.attr.command.find || l.attr.command.update));
print("slow query lines:", slow.length, slow.length ? JSON.stringify(Object.keys(slow[0].attr)) : "");
r = cmd(bs, { profile: 1, sampleRate: 2 });
print("bad sampleRate:", r.code, r.errmsg);
print("system.profile capped:", bs.getCollectionInfos({ name: "system.profile" })[0].options.capped);

// ---- $queryStats
cmd(admin, { setParameter: 1, internalQueryStatsRateLimit: -1 });
for (let i = 0; i < 3; i++) bs.books.find({ _id: i, price: { $gte: 10 } }).toArray();
bs.books.aggregate([{ $match: { year: 1965 } }, { $lookup: { from: "reviews", localField: "_id",
  foreignField: "bookId", as: "r" } }]).toArray();
const qs = admin.aggregate([{ $queryStats: {} }]).toArray().filter(e => e.key.queryShape.cmdNs.coll === "books");
qs.forEach(e => print("  shape", JSON.stringify(e.key.queryShape.filter || e.key.queryShape.pipeline),
  "execCount", N(e.metrics.execCount)));
const hm = admin.aggregate([{ $queryStats: { transformIdentifiers: { algorithm: "hmac-sha-256",
  hmacKey: BinData(8, "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=") } } }]).toArray()
  .filter(e => e.key.queryShape.command === "find");
print("hmac hides names:", hm.length > 0 && hm.every(e => e.key.queryShape.cmdNs.coll !== "books" &&
  !JSON.stringify(e.key.queryShape.filter).includes("price")));
r = cmd(admin, { aggregate: 1, pipeline: [{ $queryStats: { transformIdentifiers: { algorithm: "md5" } } }],
  cursor: {} });
print("bad algorithm:", r.code);
r = cmd(bs, { aggregate: 1, pipeline: [{ $queryStats: {} }], cursor: {} });
print("not admin:", r.code, r.errmsg);
// the same $lookup on every read of the book page: ten more times
for (let i = 0; i < 10; i++) bs.books.aggregate([{ $match: { year: 1965 + i } }, { $lookup: { from: "reviews",
  localField: "_id", foreignField: "bookId", as: "r" } }]).toArray();
const lk = cmd(bs, { tamgaSchemaAdvice: "books" }).findings.filter(f => f.type === "lookupEveryRead");
print("lookup on every read:", lk.length, lk.length ? N(lk[0].evidence.executions) + " executions -> " + lk[0].pattern : "");
cmd(admin, { setParameter: 1, internalQueryStatsRateLimit: 0 });
