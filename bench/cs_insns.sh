#!/bin/sh
# cs_insns.sh -- tamgad's instructions per insert with 0 and 8 change streams
# (issue 17 item 2): a release tamgad --replSet under callgrind
# (--instr-atstart=no; instrumentation switched on once the streams are open),
# bench/cs_insns.js writing N inserts with 8 writers.  Prints the total
# instructions of the measured part and per insert.
#   bench/cs_insns.sh build-bench [N]      (N default 2000)
set -e
build=$1; n=${2:-2000}
root=$(cd "$(dirname "$0")/.." && pwd)
for streams in 0 8; do
	dir=$(mktemp -d); port=$(( 30000 + $(od -An -N2 -tu2 /dev/urandom) % 30000 ))
	valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$dir/cg.out" \
		"$build/tamgad" --port "$port" --bind_ip 127.0.0.1 --dbpath "$dir" --nounixsocket --replSet rs0 \
		>"$dir/log" 2>&1 &
	vg=$!
	# up when it accepts connections (valgrind starts slowly on a loaded machine)
	for i in $(seq 1 120); do
		node -e "require('net').connect($port, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))" && break
		sleep 0.5
	done
	mkfifo "$dir/in"
	node "$root/bench/cs_insns.js" "mongodb://127.0.0.1:$port" "$streams" "$n" <"$dir/in" >"$dir/out" &
	cl=$!
	exec 3>"$dir/in"
	while ! grep -q START "$dir/out"; do sleep 0.5; done
	callgrind_control -i on "$vg" >/dev/null
	echo go >&3
	wait "$cl"
	exec 3>&-
	callgrind_control -i off "$vg" >/dev/null
	kill "$vg"; wait "$vg" || true
	total=$(awk '/^totals:/ {print $2; exit}' "$dir/cg.out")
	echo "streams=$streams inserts=$n instructions=$total per_insert=$((total / n)) ($(grep END "$dir/out"))"
	[ -n "$CS_INSNS_KEEP" ] && cp "$dir/cg.out" "$CS_INSNS_KEEP.$streams"
	rm -rf "$dir"
done
