#!/usr/bin/env bash
# run.sh BUILD_DIR -- run every benchmark built in BUILD_DIR; each prints
# "bench <case>: tamga <ops/s>, <peer> <ops/s>, ratio <tamga/peer>".
# BENCH_N sets the document count (default 1000000).
set -euo pipefail
build=${1:-build-bench}
work=$(mktemp -d "${TMPDIR:-/tmp}/tamga-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/bench/bench_core" "$work"
