#!/usr/bin/env bash
# run.sh -- the Unified Test Format conformance run (`make conformance`).
#
#   tests/conformance/run.sh BUILD_DIR [--filter substring] [--verbose] [spec files or dirs...]
#
# Starts a fresh tamgad from BUILD_DIR (free port, temporary --dbpath) and
# runs unified-runner.js on the Node driver over the CRUD spec tests
# ($TAMGA_SHARED/conformance/crud-unified, default ../shared next to the
# repository).  Prints per file and in total "N passed, N failed, N skipped".
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR [--filter s] [--verbose] [paths...]}
shift
case $BUILD in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
SHARED=${TAMGA_SHARED:-$ROOT/../shared}
TAMGAD="$BUILD/tamgad"
if [ ! -x "$TAMGAD" ]; then
	echo "run.sh: $TAMGAD not found (build first: make build)" >&2
	exit 2
fi
if [ ! -d "$ROOT/tests/clients/node_modules/mongodb" ]; then
	echo "run.sh: the Node driver is missing (scripts/install-deps.sh installs it)" >&2
	exit 2
fi
opts=()
paths=()
while [ $# -gt 0 ]; do
	case $1 in
	--filter) opts+=("$1" "$2"); shift 2 ;;
	--*) opts+=("$1"); shift ;;
	*) paths+=("$1"); shift ;;
	esac
done
[ ${#paths[@]} -eq 0 ] && paths=("$SHARED/conformance/crud-unified")
mkdir -p "$BUILD/tmp"
export TMPDIR="$BUILD/tmp"
export WITH_TAMGAD_NO_LOG=1
exec "$ROOT/tests/e2e/with_tamgad.sh" "$TAMGAD" --quiet -- \
	node "$ROOT/tests/conformance/unified-runner.js" --uri-from-env "${opts[@]}" "${paths[@]}"
