// query_validators.js -- validators written as query expressions, through
// mongosh: the errInfo each operator gives (mongod's doc_validation_error
// shapes), validators refused at create/collMod with mongod's codes, and
// $$NOW evaluated at write time.  Compared with query_validators.expected.
const t = db.getSiblingDB("validators");
t.dropDatabase();

function show(label, fn) {
  try {
    const r = fn();
    if (r && r.writeErrors && r.writeErrors.length > 0) {
      const we = r.writeErrors[0];
      print(`${label}: writeError ${we.code} ${we.errmsg}`);
      if (we.errInfo) print(JSON.stringify(we.errInfo));
    } else {
      print(`${label}: ok`);
    }
  } catch (e) {
    print(`${label}: ${e.name} ${e.code} ${e.message}`);
    if (e.errInfo) print(JSON.stringify(e.errInfo));
  }
}

// the conformance case: findOneAndUpdate's errInfo.details for {x: {$type: "string"}}
t.test.insertOne({ _id: 1, x: "foo" });
t.runCommand({ collMod: "test", validator: { x: { $type: "string" } } });
show("findOneAndUpdate", () => t.test.findOneAndUpdate({ _id: 1 }, { $set: { x: 1 } }));

// one collection per validator form
const cases = [
  ["implicit $and", { a: { $gt: 0, $lt: 10 } }, { _id: 1, a: 11 }],
  ["$or", { $or: [{ a: { $lt: 10 } }, { a: { $gt: 20 } }] }, { _id: 1, a: 15 }],
  ["$nor", { $nor: [{ a: { $gt: 10 } }, { b: { $lt: 10 } }] }, { _id: 1, a: 9, b: 9 }],
  ["$not", { a: { $not: { $lt: 10 } } }, { _id: 1, a: 9 }],
  ["$ne and $nin", { a: { $ne: 2 }, b: { $nin: [1, 2] } }, { _id: 1, a: 2, b: 1 }],
  ["$exists", { a: { $exists: true }, b: { $exists: false } }, { _id: 1, b: 1 }],
  ["$in", { a: { $in: [1, 2, 3] } }, { _id: 1, a: [4, 5] }],
  ["$regex", { name: { $regex: "^A", $options: "i" } }, { _id: 1, name: "Grace" }],
  ["$size and $all", { tags: { $size: 2, $all: ["x", "y"] } }, { _id: 1, tags: ["x"] }],
  ["$elemMatch", { votes: { $elemMatch: { $gt: 5 } } }, { _id: 1, votes: 3 }],
  ["$mod", { n: { $mod: [2, 0] } }, { _id: 1, n: "two" }],
  ["$bitsAllSet", { flags: { $bitsAllSet: [0, 2] } }, { _id: 1, flags: 4 }],
  ["$expr", { $expr: { $lte: ["$spent", "$budget"] } }, { _id: 1, spent: 12, budget: 10 }],
  ["$expr error", { $expr: { $divide: ["$a", "$b"] } }, { _id: 1, a: 1, b: 0 }],
  ["mixed with $jsonSchema", { $and: [{ $jsonSchema: { required: ["bookId"] } }, { rating: { $gte: 1 } }] },
    { _id: 1, rating: 0 }],
  ["$nor of $jsonSchema", { $nor: [{ $jsonSchema: { required: ["legacy"] } }] }, { _id: 1, legacy: true }],
];
cases.forEach(([label, validator, doc], i) => {
  t.createCollection(`c${i}`, { validator });
  show(label, () => t.runCommand({ insert: `c${i}`, documents: [doc] }));
});

// $$NOW is the time of the write
t.createCollection("now", { validator: { $expr: { $lt: ["$ts", "$$NOW"] } } });
show("$$NOW past", () => t.runCommand({ insert: "now", documents: [{ _id: 1, ts: new Date(1589617694938) }] }));
show("$$NOW future", () => t.runCommand({ insert: "now", documents: [{ _id: 2, ts: new Date(2708791380000) }] }));

// validators refused where they are set
show("create validator: 7", () => t.runCommand({ create: "bad", validator: 7 }));
show("create $where", () => t.runCommand({ create: "bad", validator: { $where: "this.a == this.b" } }));
show("create $text", () => t.runCommand({ create: "bad", validator: { $text: { $search: "bob" } } }));
show("create $near", () => t.runCommand({ create: "bad", validator: { a: { $near: [0, 0] } } }));
show("create $jsonSchema invalid", () => t.runCommand({ create: "bad", validator: { $jsonSchema: { invalid: 1 } } }));
show("create level", () => t.runCommand({ create: "bad", validator: { a: 1 }, validationLevel: "sometimes" }));
show("create constraint+warn", () => t.runCommand({ create: "bad", validator: { a: 1 }, validationLevel: "constraint", validationAction: "warn" }));
show("create encrypt+warn", () => t.runCommand({ create: "bad", validator: { $jsonSchema: { properties: { _id: { encrypt: {} } } } }, validationAction: "warn" }));
show("collMod $where", () => t.runCommand({ collMod: "test", validator: { $where: "this.a == this.b" } }));
show("collMod $jsonSchema invalid", () => t.runCommand({ collMod: "test", validator: { $jsonSchema: { invalid: 7 } } }));
show("collMod encrypt+moderate", () => t.runCommand({ collMod: "test", validator: { $jsonSchema: { properties: { _id: { encrypt: {} } } } }, validationLevel: "moderate" }));
show("collMod action", () => t.runCommand({ collMod: "test", validationAction: "shout" }));
print("collections:", t.getCollectionNames().filter(n => n === "bad").length);
