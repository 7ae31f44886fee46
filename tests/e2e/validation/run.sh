#!/usr/bin/env bash
# run.sh -- run each validation scenario with mongosh and compare its output
# with the golden file next to it.
#
#   tests/e2e/validation/run.sh path/to/mongosh mongodb://127.0.0.1:PORT
#
# For every X.js here, X.expected holds the exact output.  Differences are
# printed as a unified diff; the exit status is non-zero when any differ.
# Usually started through with_tamgad.sh, which provides a fresh tamgad.
set -u
if [ $# -ne 2 ]; then
	echo "usage: $0 path/to/mongosh URI" >&2
	exit 2
fi
MONGOSH=$1
URI=$2
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=$(mktemp -d "${TMPDIR:-/tmp}/validation-e2e-XXXXXX")
fail=0
for js in "$HERE"/*.js; do
	name=$(basename "$js" .js)
	"$MONGOSH" "$URI" --quiet --norc --file "$js" >"$OUT/$name.out" 2>&1
	if diff -u "$HERE/$name.expected" "$OUT/$name.out"; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		fail=1
	fi
done
rm -rf "$OUT"
exit $fail
