#!/usr/bin/env bash
# run.sh -- issue 20's tools end to end: a fresh tamgad (with_tamgad.sh), the
# bookstore loaded, each X.js here run with mongosh and diffed against
# X.expected; then the CLI (tamga schema check / schema infer / advise) on a
# data folder holding the bookstore's reviews and orders, diffed against
# expected/cli-*.out.
#
#   tests/e2e/toolbelt/run.sh TAMGAD TAMGA MONGOSH
set -u
if [ $# -ne 3 ]; then
	echo "usage: $0 path/to/tamgad path/to/tamga path/to/mongosh" >&2
	exit 2
fi
TAMGAD=$1
TAMGA=$2
MONGOSH=$3
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/toolbelt-e2e-XXXXXX")
trap 'rm -rf "$OUT"' EXIT
fail=0
export TOOLBELT_LIB=$ROOT/examples/bookstore/scripts/lib.js
for js in "$HERE"/*.js; do
	name=$(basename "$js" .js)
	"$ROOT/tests/e2e/with_tamgad.sh" "$TAMGAD" -- sh -c \
	    "'$ROOT/examples/bookstore/load.sh' \"\$TAMGA_URI\" '$MONGOSH' >/dev/null && '$MONGOSH' \"\$TAMGA_URI\" --quiet --norc --file '$js'" \
	    >"$OUT/$name.out" 2>&1
	if diff -u "$HERE/$name.expected" "$OUT/$name.out"; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		fail=1
	fi
done
# the CLI on a data folder: golden outputs of the three tools
db=$OUT/db
"$TAMGA" import --dbpath "$db" --db bookstore --collection reviews --file "$ROOT/examples/bookstore/data/reviews.json" 2>/dev/null
"$TAMGA" import --dbpath "$db" --db bookstore --collection orders --file "$ROOT/examples/bookstore/data/orders.json" 2>/dev/null
printf '%s' '{"$jsonSchema": {"bsonType": "object", "required": ["bookId", "rating"], "properties": {"rating": {"bsonType": "int", "minimum": 1, "maximum": 5}}}}' >"$OUT/validator.json"
for tool in check infer advise; do
	case $tool in
	check) "$TAMGA" schema check --dbpath "$db" --db bookstore --collection reviews --validator "@$OUT/validator.json" ;;
	infer) "$TAMGA" schema infer --dbpath "$db" --db bookstore --collection reviews --ranges ;;
	advise) "$TAMGA" advise --dbpath "$db" --db bookstore --array-max 3 ;;
	esac >"$OUT/cli-$tool.out" 2>&1
	if diff -u "$HERE/expected/cli-$tool.out" "$OUT/cli-$tool.out"; then
		echo "ok - cli-$tool"
	else
		echo "not ok - cli-$tool"
		fail=1
	fi
done
exit $fail
