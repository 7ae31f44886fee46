// 01 - validation: "Önce Tahmin Et" (moderate vs strict on the legacy review),
// the errInfo of a rating 6, the $nor audit and 9.0's constraint level, on the
// bookstore data.  It runs first: the seed's computed-pattern numbers (Dune:
// count 5, sum 22) show its run came after "fixed: 1" turned the legacy
// rating "5" into 5 ($sum skips strings, so 4 other ratings could not reach 22).
// warn / errorAndLog and their log lines: tests/e2e/validation/seed_validation.js.
load(__dirname + "/lib.js");
const bookstore = db.getSiblingDB("bookstore");
// a re-run starts from strict (constraint forbids changing the validator)
bookstore.runCommand({ collMod: "reviews", validationLevel: "strict" });

for (const validationLevel of ["moderate", "strict"]) {
  bookstore.runCommand({ collMod: "reviews", validator: { $jsonSchema: reviewSchema }, validationLevel, validationAction: "error" });
  tryWrite(`${validationLevel.padEnd(8)} update legacy review`, () =>
    bookstore.reviews.updateOne({ "customer.customerId": 39, bookId: 26 }, { $set: { body: `A classic (${validationLevel}).` } }));
}

const e = tryWrite("insert rating 6", () => bookstore.reviews.insertOne({
  bookId: 26, customer: { customerId: 38, name: "Margaret Hamilton" }, rating: 6, reviewedAt: new Date() }));
printjson(e.errInfo.details.schemaRulesNotSatisfied);
print("invalid documents:", bookstore.reviews.countDocuments({ $nor: [{ $jsonSchema: reviewSchema }] }));

// 05 - MongoDB 9.0: constraint validation level
tryCommand("prepare", () => bookstore.runCommand({ collMod: "reviews", prepareConstraintValidationLevel: true }));
tryCommand("constraint (1)", () => bookstore.runCommand({ collMod: "reviews", validationLevel: "constraint", validationAction: "error" }));
// Kuralı ihlal eden eski document'i düzelt (string -> int)
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
