#!/usr/bin/env bash
# load.sh -- (re)load the bookstore example into a running tamgad (or mongod).
#
#   examples/bookstore/load.sh [URI] [MONGOSH]
#
# URI defaults to mongodb://127.0.0.1:27017, MONGOSH to the pinned mongosh in
# tests/clients.  Drops and refills the `bookstore` database from data/*.json.
# With a server started with --auth, the first run creates admin.bookstoreAdmin
# (localhost exception) and bookstore.bookstoreApp (readWrite); give later runs
# the admin's URI: mongodb://bookstoreAdmin:admin-secret@127.0.0.1:PORT/?authSource=admin
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
URI=${1:-mongodb://127.0.0.1:27017}
MONGOSH=${2:-$HERE/../../tests/clients/node_modules/.bin/mongosh}
BOOKSTORE_DATA=$HERE/data "$MONGOSH" "$URI" --quiet --norc --file "$HERE/load.js"
