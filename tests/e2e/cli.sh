#!/usr/bin/env bash
# cli.sh TAMGA -- the command-line tool end to end: import JSON lines and a
# JSON array (mongoimport's formats, canonical and relaxed Extended JSON),
# export them back as canonical Extended JSON, re-import the export and check
# nothing changed, stats, and the errors for a missing folder and bad JSON.
set -u
TAMGA=${1:?usage: cli.sh path/to/tamga}
dir=$(mktemp -d "${TMPDIR:-/tmp}/tamga-cli-XXXXXX")
trap 'rm -rf "$dir"' EXIT
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1" >&2; fail=$((fail + 1)); fi; }

printf '%s\n' \
  '{"_id":{"$oid":"6af85e4c5a7edf5858284d0c"},"n":1,"at":{"$date":"2025-07-01T00:00:00Z"},"price":{"$numberDecimal":"390.50"}}' \
  '{"_id":2,"tags":["a","b"],"nested":{"x":{"$numberLong":"9007199254740993"}}}' > "$dir/in.json"
echo '[{"_id":10,"v":1.5},{"_id":11,"v":null}]' > "$dir/arr.json"

check "import lines" '"$TAMGA" import --dbpath "$dir/db" --db s --collection c --file "$dir/in.json" 2>/dev/null'
check "import array" '"$TAMGA" import --dbpath "$dir/db" --db s --collection d --file "$dir/arr.json" --jsonArray 2>/dev/null'
check "export" '"$TAMGA" export --dbpath "$dir/db" --db s --collection c --out "$dir/out.json" 2>/dev/null'
check "two documents exported" '[ "$(wc -l < "$dir/out.json")" -eq 2 ]'
check "types kept" 'grep -q "\"\$numberDecimal\" : \"390.50\"" "$dir/out.json" && grep -q "\"\$numberLong\" : \"9007199254740993\"" "$dir/out.json"'
check "re-import with --drop" '"$TAMGA" import --dbpath "$dir/db" --db s --collection c --file "$dir/out.json" --drop 2>/dev/null'
check "round trip identical" '"$TAMGA" export --dbpath "$dir/db" --db s --collection c --out "$dir/out2.json" 2>/dev/null && cmp -s "$dir/out.json" "$dir/out2.json"'
check "export array" '"$TAMGA" export --dbpath "$dir/db" --db s --collection d --jsonArray 2>/dev/null | grep -q "^\[{"'
check "stats" '"$TAMGA" stats --dbpath "$dir/db" | grep -q "^s  *c  *2 "'
check "missing folder refused" '! "$TAMGA" export --dbpath "$dir/nope" --db s --collection c 2>/dev/null'
echo '{"bad": ' > "$dir/bad.json"
check "bad JSON refused" '! "$TAMGA" import --dbpath "$dir/db" --db s --collection e --file "$dir/bad.json" 2>/dev/null'
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
