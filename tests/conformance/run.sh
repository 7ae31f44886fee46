#!/usr/bin/env bash
# run.sh -- the Unified Test Format conformance run (`make conformance`).
#
#   tests/conformance/run.sh BUILD_DIR [--replset|--standalone] [--filter substring] [--verbose] [spec files or dirs...]
#
# Without paths: the CRUD spec tests ($TAMGA_SHARED/conformance/crud-unified,
# default ../shared next to the repository) against a fresh standalone
# tamgad (with test commands, for the failCommand tests), then the replica-set folders (transactions-unified,
# transactions-convenient-api-unified, retryable-writes-unified,
# retryable-reads-unified, sessions-unified, run-command-unified) against a
# fresh `tamgad --replSet rs0 --replSetAutoInitiate --setParameter
# enableTestCommands=1` (initiated before the run: topology "replicaset" in
# runOnRequirements), the same folders again on a set of three members
# (with_replset3.py), and the files of those folders whose every test needs
# authentication on a third server, the same replica set with --auth.  With
# paths, they run on a standalone, or on the replica set with --replset.  Each run starts its server on a free port with
# a temporary --dbpath and prints per file, per folder and in total
# "N passed, N failed, N skipped" with the reason of each skip class; the
# last line sums both runs.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:?usage: run.sh BUILD_DIR [--replset|--standalone] [--filter s] [--verbose] [paths...]}
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
mode=both
while [ $# -gt 0 ]; do
	case $1 in
	--filter) opts+=("$1" "$2"); shift 2 ;;
	--replset) mode=replset; shift ;;
	--standalone) mode=standalone; shift ;;
	--*) opts+=("$1"); shift ;;
	*) paths+=("$1"); shift ;;
	esac
done
REPLSET_FOLDERS=(transactions-unified transactions-convenient-api-unified retryable-writes-unified
	retryable-reads-unified sessions-unified run-command-unified change-streams-unified
	collection-management-unified/createCollection-pre_and_post_images.json
	collection-management-unified/modifyCollection-pre_and_post_images.json)
mkdir -p "$BUILD/tmp"
export TMPDIR="$BUILD/tmp"
export WITH_TAMGAD_NO_LOG=1
RS_FLAGS=(--replSet rs0 --replSetAutoInitiate --setParameter enableTestCommands=1)

# run_one LABEL FLAGS... -- PATHS...: one server, one runner; its output is
# printed and its total line kept for the sum
totals=()
rc=0
run_one() {
	local label=$1
	shift
	local flags=()
	while [ "$1" != "--" ]; do flags+=("$1"); shift; done
	shift
	local out
	echo "## $label"
	out=$("${LAUNCHER:-$ROOT/tests/e2e/with_tamgad.sh}" "$TAMGAD" --quiet "${flags[@]}" -- \
		node "$ROOT/tests/conformance/unified-runner.js" --uri-from-env "${opts[@]}" "$@" 2>&1)
	local r=$?
	echo "$out"
	[ $r -ne 0 ] && rc=1
	totals+=("$(echo "$out" | grep '^total:' | tail -n 1)")
}

if [ ${#paths[@]} -gt 0 ]; then
	if [ "$mode" = replset ]; then
		run_one "replica set rs0" "${RS_FLAGS[@]}" -- "${paths[@]}"
	else
		run_one "standalone" --setParameter enableTestCommands=1 -- "${paths[@]}"
	fi
	exit $rc
fi
# collection management on a standalone of its own (its pre/post-image files
# need a replica set: they run there)
STANDALONE_CM_FILES=(clustered-indexes.json listCollections-rawdata.json modifyCollection-errorResponse.json
	timeseries-collection.json)
if [ "$mode" != replset ]; then
	run_one "standalone: crud-unified" --setParameter enableTestCommands=1 -- --replset-tests-elsewhere "$SHARED/conformance/crud-unified"
	cm_paths=()
	for f in "${STANDALONE_CM_FILES[@]}"; do cm_paths+=("$SHARED/conformance/collection-management-unified/$f"); done
	run_one "standalone: collection-management-unified" --setParameter enableTestCommands=1 -- "${cm_paths[@]}"
fi
if [ "$mode" != standalone ]; then
	rs_paths=()
	for f in "${REPLSET_FOLDERS[@]}"; do rs_paths+=("$SHARED/conformance/$f"); done
	run_one "replica set rs0: ${REPLSET_FOLDERS[*]}" "${RS_FLAGS[@]}" -- --auth-files-elsewhere "${rs_paths[@]}"
	# the same folders on a set of three members (Raft: majority commit over
	# the network, secondaries to read from)
	LAUNCHER="$ROOT/tests/conformance/with_replset3.py" run_one \
		"replica set of three members: ${REPLSET_FOLDERS[*]}" --setParameter enableTestCommands=1 -- \
		--auth-files-elsewhere "${rs_paths[@]}"
	# crud-unified's tests that only a replica set can run (the standalone's
	# run leaves them out)
	[ "$mode" != replset ] && run_one "replica set rs0: crud-unified's replica-set tests" "${RS_FLAGS[@]}" -- \
		--only-replset-tests "$SHARED/conformance/crud-unified"
	# the files whose every test needs authentication (handshake errors:
	# saslContinue fails): a replica set with --auth, the runner's clients
	# authenticated as a user it creates through the localhost exception
	run_one "replica set rs0 with --auth: the files that need auth" "${RS_FLAGS[@]}" --auth -- --auth "${rs_paths[@]}"
fi
# the sum of the runs' totals
p=0 f=0 s=0
for t in "${totals[@]}"; do
	if [[ $t =~ total:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
		p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); s=$((s + BASH_REMATCH[3]))
	else
		rc=1
	fi
done
echo ""
echo "all runs: $p passed, $f failed, $s skipped"
exit $rc
