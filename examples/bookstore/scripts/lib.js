// lib.js -- helpers the seed's scripts call without showing them (load()ed by
// the scripts that need them): tryWrite prints "label: ok" or the error,
// tryCommand prints "label: ok", the first writeError, or the error.
function tryWrite(label, fn) {
  try {
    const r = fn();
    print(`${label}: ok${r && r.modifiedCount !== undefined ? ` (modified ${r.modifiedCount})` : ""}`);
    return null;
  } catch (e) {
    print(`${label}: ${e.name}: ${e.message}`);
    return e;
  }
}

function tryCommand(label, fn) {
  try {
    const r = fn();
    if (r.writeErrors && r.writeErrors.length > 0) {
      const we = r.writeErrors[0];
      print(`${label}: inserted ${r.n}, writeError code ${we.code}: ${we.errmsg}`);
    } else {
      print(`${label}: ok`);
    }
    return r;
  } catch (e) {
    print(`${label}: ${e.name}: ${e.message}`);
    return e;
  }
}

const reviewSchema = {
  bsonType: "object",
  required: ["bookId", "customer", "rating", "reviewedAt"],
  properties: {
    bookId: { bsonType: "int" },
    customer: {
      bsonType: "object",
      required: ["customerId", "name"],
      properties: { customerId: { bsonType: "int" }, name: { bsonType: "string", minLength: 1 } }
    },
    rating: { bsonType: "int", minimum: 1, maximum: 5 },
    body: { bsonType: "string", maxLength: 1000 },
    reviewedAt: { bsonType: "date" },
    helpfulCount: { bsonType: "int", minimum: 0 },
    helpfulVoters: { bsonType: "array", items: { bsonType: "int" } }
  }
};
