// load.js -- (re)creates the bookstore database from data/*.json (canonical
// Extended JSON, one document per line).  Run through load.sh.
//
// When the server runs with --auth it also makes sure two users exist:
//   admin.bookstoreAdmin  (root)            password $BOOKSTORE_ADMIN_PWD or "admin-secret"
//   bookstore.bookstoreApp (readWrite on bookstore) password $BOOKSTORE_APP_PWD or "app-secret"
// The first one is created through the localhost exception (no user yet);
// later runs must connect as bookstoreAdmin (load.sh does).
const fs = require("fs");
const path = require("path");
const dir = process.env.BOOKSTORE_DATA;
const adminPwd = process.env.BOOKSTORE_ADMIN_PWD || "admin-secret";
const appPwd = process.env.BOOKSTORE_APP_PWD || "app-secret";

function authEnabled() {
  try {
    const o = db.adminCommand({ getCmdLineOpts: 1 });
    if (o.ok) return !!(o.parsed && o.parsed.security && o.parsed.security.authorization === "enabled");
  } catch (e) {
    // not allowed before authenticating: only an --auth server refuses it
    if (e.code === 13) return true;
  }
  return false;
}

if (authEnabled()) {
  const admin = db.getSiblingDB("admin");
  let me = db.adminCommand({ connectionStatus: 1 }).authInfo.authenticatedUsers;
  if (me.length === 0) {
    // localhost exception: only while there is no user at all
    admin.createUser({ user: "bookstoreAdmin", pwd: adminPwd, roles: [{ role: "root", db: "admin" }] });
    admin.auth("bookstoreAdmin", adminPwd);
    print("users: created admin.bookstoreAdmin (root)");
  }
  const bs = db.getSiblingDB("bookstore");
  if (bs.getUser("bookstoreApp") === null) {
    bs.createUser({ user: "bookstoreApp", pwd: appPwd, roles: [{ role: "readWrite", db: "bookstore" }] });
    print("users: created bookstore.bookstoreApp (readWrite on bookstore)");
  } else {
    print("users: bookstore.bookstoreApp exists");
  }
} else {
  print("users: server runs without --auth, no users created");
}

const bookstore = db.getSiblingDB("bookstore");
bookstore.dropDatabase();
for (const name of ["books", "customers", "reviews", "orders"]) {
  const docs = fs.readFileSync(path.join(dir, name + ".json"), "utf8").split("\n")
    .filter(l => l.trim() !== "").map(l => EJSON.parse(l, { relaxed: false }));
  const r = bookstore[name].insertMany(docs);
  print(`${name}: ${Object.keys(r.insertedIds).length}`);
}
