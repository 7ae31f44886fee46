#!/usr/bin/env bash
# insns.sh BUILD_DIR [CASE...] -- instructions per operation of the core
# cases under callgrind (bench/bench_insns.c says what each case runs):
#   insns <case>: <instructions> per <unit> (<total> over <n>)
# Deterministic, unlike the rates of run.sh: docs/benchmarks.md records these
# so that a regression shows as a number.  BENCH_N sizes the collections
# (default 20000).  Takes a few minutes (callgrind is ~50x slower).
set -uo pipefail
build=${1:-build-bench}
shift || true
cases=${*:-insert_single insert_batch insert_3_indexes id_lookup id_lookup_toolbelt full_scan filter_scan constraint_scan preview_scan set_stage addfields_stage sort_set_stage unset_sort_set_stage covered_find floor_insert_batch floor_insert_3_indexes floor_id_lookup floor_scan}
prog="$build/bench/bench_insns"
[ -x "$prog" ] || { echo "insns.sh: $prog not built (make bench builds it)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "insns.sh: valgrind not installed" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tamga-insns-XXXXXX")
trap 'rm -rf "$work"' EXIT
for c in $cases; do
	out="$work/cg.$c"
	ops=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" "$prog" "$work" "$c" \
		2>"$work/log.$c" | awk '/^ops /{print $2" "$3}')
	total=$(awk '/^(summary|totals):/{print $2; exit}' "$out" 2>/dev/null)
	if [ -z "$ops" ] || [ -z "$total" ]; then
		echo "insns $c: failed (see below)"; tail -n 5 "$work/log.$c"; continue
	fi
	set -- $ops
	echo "insns $c: $(( total / $1 )) per ${2%s} ($total over $1)"
	rm -rf "$work/tamga-insns-$c"
done
