// seed_validation.js -- the validation walk-through of
// ../shared/seeds/000_b0f4def502d08968.txt against tamgad, on a small data
// set of its own: "guess first" (moderate vs strict on a legacy review whose
// rating is the string "5"), the errInfo of a rating 6, the $nor audit,
// validationAction warn and errorAndLog with their getLog lines, and 9.0's
// constraint level.  Its output is compared with seed_validation.expected by
// run.sh; the lines the seed prints are printed by the seed's own code (the
// seed's web rendering collapses runs of spaces and indentation: mongosh
// prints "strict   update legacy review", "level: constraint  action: error"
// and indented printjson output; the seed also shortens the validator in
// the constraint (1) message, printed here in full).
const bookstore = db.getSiblingDB("bookstore");
bookstore.dropDatabase();

// ---- the data set: a few reviews, one written years ago by another app ----
bookstore.reviews.insertMany([
  { _id: ObjectId("6af85e4c5a7edf5858284d01"), bookId: 26, customer: { customerId: 7, name: "Adele Goldberg" },
    rating: 5, body: "A classic.", reviewedAt: ISODate("2026-05-04T01:49:15Z") },
  { _id: ObjectId("6af85e4c5a7edf5858284d02"), bookId: 26, customer: { customerId: 12, name: "Barbara Liskov" },
    rating: 4, reviewedAt: ISODate("2026-04-11T09:30:00Z"), helpfulCount: 3, helpfulVoters: [7, 9, 40] },
  { _id: ObjectId("6af85e4c5a7edf5858284d03"), bookId: 31, customer: { customerId: 7, name: "Adele Goldberg" },
    rating: 3, body: "Too long.", reviewedAt: ISODate("2026-03-02T18:00:00Z") },
  // the legacy review: rating is a string
  { _id: ObjectId("6af85e4c5a7edf5858284d0c"), bookId: 26, customer: { customerId: 39, name: "Grace Hopper" },
    rating: "5", body: "A classic.", reviewedAt: ISODate("2019-08-21T14:05:00Z") },
]);

// tryWrite, tryCommand and the seed's reviewSchema: the walk-through's own helpers
load(__dirname + "/../../../examples/bookstore/scripts/lib.js");

// ---- guess first: moderate, then strict ------------------------------------
for (const validationLevel of ["moderate", "strict"]) {
  bookstore.runCommand({ collMod: "reviews", validator: { $jsonSchema: reviewSchema }, validationLevel, validationAction: "error" });
  tryWrite(`${validationLevel.padEnd(8)} update legacy review`, () =>
    bookstore.reviews.updateOne({ "customer.customerId": 39, bookId: 26 }, { $set: { body: `A classic (${validationLevel}).` } }));
}

// ---- what the server says about a rating of 6 -------------------------------
const e = tryWrite("insert rating 6", () => bookstore.reviews.insertOne({
  bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 6, reviewedAt: new Date() }));
printjson(e.errInfo.details.schemaRulesNotSatisfied);
print("invalid documents:", bookstore.reviews.countDocuments({ $nor: [{ $jsonSchema: reviewSchema }] }));

// ---- warn and errorAndLog: the write's fate and the log line ---------------
bookstore.createCollection("reviews_audit", { validator: { $jsonSchema: reviewSchema }, validationAction: "warn" });
function lastLog(id) {
  const lines = db.adminCommand({ getLog: "global" }).log.map(l => JSON.parse(l)).filter(l => l.id === id);
  return lines[lines.length - 1];
}
function showLog(label, l) {
  print(`${label}: ${l.s} ${l.c} ${l.id} "${l.msg}" namespace ${l.attr.namespace}`,
    `_id ${l.attr.document._id} failingDocumentId ${l.attr.errInfo.failingDocumentId}`,
    `rule ${l.attr.errInfo.details.schemaRulesNotSatisfied[0].propertiesNotSatisfied[0].details[0].operatorName}`);
}
tryWrite("warn insert rating 7", () => bookstore.reviews_audit.insertOne({
  _id: 1, bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 7, reviewedAt: new Date() }));
showLog("warn log", lastLog(20294));
bookstore.runCommand({ collMod: "reviews_audit", validationAction: "errorAndLog" });
tryWrite("errorAndLog insert rating 0", () => bookstore.reviews_audit.insertOne({
  _id: 2, bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 0, reviewedAt: new Date() }));
showLog("errorAndLog log", lastLog(7488700));
print("audit documents:", bookstore.reviews_audit.countDocuments());

// ---- 9.0: the constraint level ----------------------------------------------
tryCommand("prepare", () => bookstore.runCommand({ collMod: "reviews", prepareConstraintValidationLevel: true }));
tryCommand("constraint (1)", () => bookstore.runCommand({ collMod: "reviews", validationLevel: "constraint", validationAction: "error" }));
// fix the offending document (string -> int)
const fixed = bookstore.reviews.updateMany({ rating: { $type: "string" } }, [{ $set: { rating: { $toInt: "$rating" } } }]);
print("fixed:", fixed.modifiedCount);
tryCommand("constraint (2)", () => bookstore.runCommand({ collMod: "reviews", validationLevel: "constraint", validationAction: "error" }));
tryCommand("bypassDocumentValidation", () => bookstore.runCommand({
  insert: "reviews", bypassDocumentValidation: true,
  documents: [{ bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 6, reviewedAt: new Date() }]
}));
tryCommand("change validator", () => bookstore.runCommand({ collMod: "reviews", validator: { $jsonSchema: { bsonType: "object" } } }));
const options = bookstore.getCollectionInfos({ name: "reviews" })[0].options;
print("level:", options.validationLevel, " action:", options.validationAction);

// ---- back to strict, and the rules can change again -------------------------
tryCommand("back to strict", () => bookstore.runCommand({ collMod: "reviews", validationLevel: "strict" }));
tryCommand("change validator (strict)", () => bookstore.runCommand({ collMod: "reviews", validator: { $jsonSchema: reviewSchema } }));
print("level:", bookstore.getCollectionInfos({ name: "reviews" })[0].options.validationLevel);
