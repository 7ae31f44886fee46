#!/usr/bin/env bash
# run.sh -- the bookstore walk-through of ../shared/seeds/ as a golden test.
#
#   tests/e2e/bookstore/run.sh [--demo] TAMGAD_OR_URI [MONGOSH]
#
# With a path to tamgad, starts a fresh one (with_tamgad.sh: free port,
# temporary --dbpath; with --auth when BOOKSTORE_AUTH=1) and runs against it;
# with a mongodb:// URI, uses that server (its `bookstore` database is
# dropped and reloaded).  Loads examples/bookstore (load.sh), runs every
# examples/bookstore/scripts/NN-*.js in order with mongosh and diffs its output
# against examples/bookstore/expected/NN-*.out.  10-roles.js needs --auth and
# is skipped without it.  --demo prints each script's output instead of
# diffing (make demo).  Exit status: non-zero when any output differs.
set -u
DEMO=0
if [ "${1:-}" = "--demo" ]; then DEMO=1; shift; fi
if [ $# -lt 1 ]; then
	echo "usage: $0 [--demo] TAMGAD_OR_URI [MONGOSH]" >&2
	exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
EX=$ROOT/examples/bookstore
TARGET=$1
MONGOSH=${2:-$ROOT/tests/clients/node_modules/.bin/mongosh}
MONGOSH=$(cd "$(dirname "$MONGOSH")" && pwd)/$(basename "$MONGOSH")

case "$TARGET" in
mongodb://*) ;;
*)
	# a tamgad binary: start a fresh server and come back with its URI
	FLAGS=()
	[ "${BOOKSTORE_AUTH:-0}" = 1 ] && FLAGS+=(--auth)
	ARGS=()
	[ $DEMO = 1 ] && ARGS+=(--demo)
	export BOOKSTORE_MONGOSH=$MONGOSH
	exec "$ROOT/tests/e2e/with_tamgad.sh" "$TARGET" "${FLAGS[@]}" -- \
		sh -c 'exec "$0" "$@" "$TAMGA_URI" "$BOOKSTORE_MONGOSH"' "$0" "${ARGS[@]}"
	;;
esac

# host:port from the URI (credentials and path dropped)
HOSTPORT=${TARGET#mongodb://}
HOSTPORT=${HOSTPORT%%/*}
HOSTPORT=${HOSTPORT%%\?*}
HOSTPORT=${HOSTPORT#*@}
AUTH=0
if "$MONGOSH" "mongodb://$HOSTPORT" --quiet --norc --eval \
	'try { const o = db.adminCommand({getCmdLineOpts: 1}); print(o.parsed && o.parsed.security && o.parsed.security.authorization === "enabled" ? 1 : 0) } catch (e) { print(e.code === 13 ? 1 : 0) }' \
	2>/dev/null | grep -qx 1; then
	AUTH=1
fi
ADMIN_PWD=${BOOKSTORE_ADMIN_PWD:-admin-secret}
APP_PWD=${BOOKSTORE_APP_PWD:-app-secret}
if [ $AUTH = 1 ]; then
	# the first load creates the users through the localhost exception
	if "$MONGOSH" "mongodb://bookstoreAdmin:$ADMIN_PWD@$HOSTPORT/?authSource=admin" --quiet --norc --eval 1 >/dev/null 2>&1; then
		LOAD_URI="mongodb://bookstoreAdmin:$ADMIN_PWD@$HOSTPORT/?authSource=admin"
	else
		LOAD_URI="mongodb://$HOSTPORT"
	fi
	URI="mongodb://bookstoreAdmin:$ADMIN_PWD@$HOSTPORT/bookstore?authSource=admin"
	export BOOKSTORE_APP_URI="mongodb://bookstoreApp:$APP_PWD@$HOSTPORT/bookstore?authSource=bookstore"
else
	LOAD_URI="mongodb://$HOSTPORT"
	URI="mongodb://$HOSTPORT/bookstore"
fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/bookstore-e2e-XXXXXX")
trap 'rm -rf "$OUT"' EXIT
if ! "$EX/load.sh" "$LOAD_URI" "$MONGOSH" >"$OUT/load.out" 2>&1; then
	echo "not ok - load"
	cat "$OUT/load.out"
	exit 1
fi
[ $DEMO = 1 ] && { echo "### load"; cat "$OUT/load.out"; }
fail=0
for js in "$EX"/scripts/[0-9][0-9]-*.js; do
	name=$(basename "$js" .js)
	if [ "$name" = 10-roles ] && [ $AUTH = 0 ]; then
		[ $DEMO = 1 ] && echo "### $name: skipped (the server runs without --auth)" || echo "ok - $name # SKIP needs --auth"
		continue
	fi
	"$MONGOSH" "$URI" --quiet --norc --file "$js" >"$OUT/$name.out" 2>&1
	if [ $DEMO = 1 ]; then
		echo "### $name"
		cat "$OUT/$name.out"
	elif diff -u "$EX/expected/$name.out" "$OUT/$name.out"; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		fail=1
	fi
done
exit $fail
