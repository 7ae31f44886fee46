// Attribute pattern: aranabilir özellikler tek bir k/v array'inde, tek index'le
// (runs on the editions written by 05-polymorphic.js)
db.editions.updateMany({}, [{ $set: { attributes: {
  $filter: {
    input: { $objectToArray: "$$ROOT" },
    cond: { $in: ["$$this.k", ["binding", "pageCount", "drm", "narrator", "durationMinutes"]] }
  }
} } }]);
db.editions.createIndex({ "attributes.k": 1, "attributes.v": 1 });
const stats = db.editions.find({ attributes: { $elemMatch: { k: "narrator", v: "Grace Hopper" } } })
  .explain("executionStats");
print("narrator query:", stats.queryPlanner.winningPlan.inputStage?.stage ?? stats.queryPlanner.winningPlan.stage,
  "keysExamined", stats.executionStats.totalKeysExamined, "returned", stats.executionStats.nReturned);
printjson(db.editions.findOne({ _id: "26-audio" }, { _id: 0, attributes: 1 }));
