#!/usr/bin/env bash
# repl_insns.sh -- instructions per operation inside tamgad's
# engine_run_command (the command's own work), replica set or standalone
# (issue 16; docs/benchmarks.md "Session 9 -- the replica-set write path's
# floor").  A release tamgad under callgrind
# (--toggle-collect=engine_run_command), bench/repl_insns.py driving it with
# PyMongo: a warm-up, the counters zeroed (callgrind_control -z), N
# operations, a dump (callgrind_control -d).  Deterministic whatever the load.
#   bench/repl_insns.sh BUILD_DIR rs|sa insert|inc|txn [N]     (N default 2000)
# Prints "<mode> <kind>: <per operation> per operation (<total> over <N>)";
# REPL_INSNS_KEEP=FILE keeps the callgrind output there.
set -euo pipefail
build=$1 mode=$2 kind=$3 n=${4:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/tamga-repl-insns-XXXXXX")
port=$(( 30000 + $(od -An -N2 -tu2 /dev/urandom) % 30000 ))
rs=(); [ "$mode" = rs ] && rs=(--replSet rs0)
valgrind --tool=callgrind --toggle-collect=engine_run_command --callgrind-out-file="$dir/cg.out" \
	"$build/tamgad" --port "$port" --bind_ip 127.0.0.1 --dbpath "$dir" --nounixsocket "${rs[@]}" >"$dir/log" 2>&1 &
vg=$!
trap 'kill "$vg" 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 240); do
	/usr/bin/python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1',$port)))" && break
	sleep 0.5
done
mkfifo "$dir/in"
/usr/bin/python3 "$root/bench/repl_insns.py" "mongodb://127.0.0.1:$port" "$mode" "$n" "$kind" <"$dir/in" >"$dir/out" &
cl=$!
exec 3>"$dir/in"
while ! grep -q WARM "$dir/out"; do kill -0 "$cl" 2>/dev/null || { echo "repl_insns: the client failed" >&2; exit 1; }; sleep 0.3; done
callgrind_control -z "$vg" >/dev/null
echo go >&3
wait "$cl"
exec 3>&-
callgrind_control -d "$vg" >/dev/null
total=$(awk '/^totals:/ {print $2; exit}' "$dir/cg.out.1")
echo "$mode $kind: $(( total / n )) per operation ($total over $n)"
[ -n "${REPL_INSNS_KEEP:-}" ] && cp "$dir/cg.out.1" "$REPL_INSNS_KEEP"
kill "$vg"; wait "$vg" 2>/dev/null || true
