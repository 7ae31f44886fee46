#!/bin/sh
# run.sh -- `make compat`: start a tamgad from the given build folder and run
# issue 22's compatibility cases (tests/compat/item*.js) through mongosh;
# prints per item how many cases pass.  Usage: tests/compat/run.sh [build]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${1:-build}
MONGOSH="$ROOT/tests/clients/node_modules/.bin/mongosh"
exec "$ROOT/tests/e2e/with_tamgad.sh" "$ROOT/$BUILD/tamgad" --setParameter enableTestCommands=1 -- \
	sh -c "\"$MONGOSH\" \"\$TAMGA_URI\" --quiet --norc --file \"$HERE/run.js\""
