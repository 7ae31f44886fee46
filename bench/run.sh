#!/usr/bin/env bash
# run.sh BUILD_DIR -- run every benchmark built in BUILD_DIR (what `make bench`
# does).  Each prints lines of the form
#   bench <case>: tamga <ops/s>, <peer> <ops/s>, ratio <tamga/peer>
#   bench <case>: tamga not available yet (<reason>), <peer> <ops/s>
# (peers: wiredtiger, sqlite, postgresql; docs/benchmarks.md says what each
# case measures).  Progress and server logs go to stderr / the work folder.
#
# Environment:
#   BENCH_N        document count (default 1000000); use 20000 while developing
#   BENCH_SECONDS  time cap per side of each read case through tamgad (default 10)
#   BENCH_ONLY     space-separated subset of: core update schema text wire node repl geo changestream js toolbelt bookstore timeseries raft
#   BENCH_RAFT_RUNS failovers of bench_raft.py (default 20; issue 24: a 3-member set of its own)
#   BENCH_BOOKS    books of the bookstore case (default BENCH_N; 10x as many reviews)
#   BENCH_TS_N     measurements for bench_timeseries (default 10000000; issue 19)
#   BENCH_KEEP=1   keep the work folder (data, tamgad.log, postgresql.log)
#
# This script starts, for the run only, PostgreSQL 15 (Debian's, as the
# postgres OS user because it refuses to run as root) on a free port with a
# temporary data folder, and tamgad on another free port (its Unix socket in
# the work folder); both are stopped on exit, whatever happens.
set -uo pipefail
build=${1:-build-bench}
only=${BENCH_ONLY:-core update schema text wire node repl geo changestream js toolbelt bookstore timeseries raft}
export BENCH_N=${BENCH_N:-1000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/tamga-bench-XXXXXX")
chmod 755 "$work"
pg_bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
pg_dir="$work/pg"
tamgad_pid=""
rs_pid=""
pg_started=0

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	elif [ "$(id -un)" = postgres ]; then
		"$@"
	else
		sudo -n -u postgres -- "$@"
	fi
}

stop_pid() {
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 1 300); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	[ -n "$tamgad_pid" ] && stop_pid "$tamgad_pid"
	[ -n "$rs_pid" ] && stop_pid "$rs_pid"
	if [ "$pg_started" -eq 1 ]; then
		as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1
	fi
	if [ "${BENCH_KEEP:-0}" = 1 ]; then
		echo "run.sh: work folder kept: $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# PostgreSQL 15: TCP on 127.0.0.1 (BENCH_PG: the target lines reach both
# servers over TCP loopback) and a Unix socket in its own folder
# (BENCH_PG_UNIX: the extra Unix-socket line, next to tamgad's socket);
# durability as tamgad's default (WAL on, commits not waited for:
# synchronous_commit=off), 256 MB of shared buffers like tamgad's 256 MB
# WiredTiger cache.
start_postgres() {
	local port
	if [ ! -x "$pg_bin/initdb" ]; then
		echo "run.sh: no PostgreSQL in $pg_bin: postgresql lines will say not available" >&2
		return 1
	fi
	mkdir -p "$pg_dir"
	chown postgres "$pg_dir" 2>/dev/null
	port=$(free_port)
	if ! as_postgres "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres -E UTF8 --no-sync \
		>"$pg_dir/initdb.log" 2>&1; then
		echo "run.sh: initdb failed:" >&2
		tail -n 20 "$pg_dir/initdb.log" >&2
		return 1
	fi
	if ! as_postgres "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/postgresql.log" -w -t 60 \
		-o "-p $port -k $pg_dir -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c shared_buffers=256MB \
		-c max_connections=200 -c max_wal_size=4GB -c checkpoint_timeout=30min -c fsync=on" \
		start >/dev/null 2>&1; then
		echo "run.sh: PostgreSQL did not start:" >&2
		tail -n 20 "$pg_dir/postgresql.log" >&2
		return 1
	fi
	pg_started=1
	export BENCH_PG="host=127.0.0.1 port=$port user=postgres dbname=postgres"
	export BENCH_PG_UNIX="host=$pg_dir port=$port user=postgres dbname=postgres"
	echo "run.sh: $("$pg_bin/postgres" --version) on 127.0.0.1 and $pg_dir, port $port" >&2
}

start_tamgad() {
	local port
	if [ ! -x "$build/tamgad" ]; then
		echo "run.sh: no $build/tamgad: tamga lines through the wire protocol say not available" >&2
		return 1
	fi
	mkdir -p "$work/tamgad"
	port=$(free_port)
	"$build/tamgad" --port "$port" --bind_ip 127.0.0.1 --dbpath "$work/tamgad" --quiet \
		--unixSocketPrefix "$work" >"$work/tamgad.log" 2>&1 &
	tamgad_pid=$!
	for _ in $(seq 1 300); do
		if ! kill -0 "$tamgad_pid" 2>/dev/null; then
			echo "run.sh: tamgad exited:" >&2
			tail -n 20 "$work/tamgad.log" >&2
			tamgad_pid=""
			return 1
		fi
		if python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(0 if s.connect_ex(('127.0.0.1',$port))==0 else 1)" 2>/dev/null; then
			export TAMGA_URI="mongodb://127.0.0.1:$port" TAMGAD_PID="$tamgad_pid"
			export TAMGA_SOCKET="$work/mongodb-$port.sock"
			echo "run.sh: tamgad on port $port" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "run.sh: tamgad did not listen on port $port" >&2
	return 1
}

# A second tamgad, `--replSet rs0`, for bench_repl (which initiates it):
# TAMGA_RS_URI.
start_tamgad_rs() {
	local port
	[ -x "$build/tamgad" ] || return 1
	mkdir -p "$work/tamgad-rs"
	port=$(free_port)
	"$build/tamgad" --port "$port" --bind_ip 127.0.0.1 --dbpath "$work/tamgad-rs" --quiet --nounixsocket \
		--replSet rs0 >"$work/tamgad-rs.log" 2>&1 &
	rs_pid=$!
	for _ in $(seq 1 300); do
		if ! kill -0 "$rs_pid" 2>/dev/null; then
			echo "run.sh: tamgad --replSet exited:" >&2
			tail -n 20 "$work/tamgad-rs.log" >&2
			rs_pid=""
			return 1
		fi
		if python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(0 if s.connect_ex(('127.0.0.1',$port))==0 else 1)" 2>/dev/null; then
			export TAMGA_RS_URI="mongodb://127.0.0.1:$port" TAMGA_RS_PID=$rs_pid
			echo "run.sh: tamgad --replSet rs0 on port $port" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "run.sh: tamgad --replSet did not listen on port $port" >&2
	return 1
}

echo "run.sh: N=$BENCH_N, $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start_postgres
status=0
for b in $only; do
	if [ "$b" = node ]; then
		if ! command -v node >/dev/null 2>&1; then
			echo "run.sh: no node: bench_node skipped" >&2
			continue
		fi
		cmd=(node "$(dirname "$0")/bench_node.js" "$work")
	# --- changestream (issue 17): the Node driver against the --replSet tamgad
	elif [ "$b" = changestream ]; then
		if ! command -v node >/dev/null 2>&1; then
			echo "run.sh: no node: bench_changestream skipped" >&2
			continue
		fi
		cmd=(node "$(dirname "$0")/bench_changestream.js" "$work")
	# --- end changestream
	# --- raft (issue 24): a three-member set of its own (PyMongo, the
	# Debian package: /usr/bin/python3); majority writes, failover, reads
	# from secondaries (bench_rs_reads)
	elif [ "$b" = raft ]; then
		cmd=(/usr/bin/python3 "$(dirname "$0")/bench_raft.py" "$build/tamgad" 2000 "${BENCH_RAFT_RUNS:-20}")
	# --- end raft
	else
		cmd=("$build/bench/bench_$b" "$work")
		if [ ! -x "${cmd[0]}" ]; then
			echo "run.sh: ${cmd[0]} not built, skipped" >&2
			continue
		fi
	fi
	# (toolbelt: issue 20's profiler case runs through tamgad)
	# --- bookstore (issue 23): through tamgad like wire ---
	if { [ "$b" = wire ] || [ "$b" = node ] || [ "$b" = repl ] || [ "$b" = toolbelt ] || [ "$b" = bookstore ]; } && [ -z "$tamgad_pid" ]; then
		start_tamgad
	fi
	if { [ "$b" = repl ] || [ "$b" = changestream ]; } && [ -z "$rs_pid" ]; then
		start_tamgad_rs
	fi
	# --- issue 20: inference's peer, the mongodb-schema npm package, on the
	# first 100 000 reviews (it analyses about 10 000 documents a second) ---
	if [ "$b" = toolbelt ] && command -v node >/dev/null 2>&1 &&
	    [ -d "$(dirname "$0")/../tests/clients/node_modules/mongodb-schema" ]; then
		peer_n=$(( BENCH_N < 100000 ? BENCH_N : 100000 ))
		if peer=$(BENCH_N=$peer_n node "$(dirname "$0")/bench_infer_peer.js"); then
			export BENCH_INFER_PEER=$(echo "$peer" | cut -d' ' -f2) BENCH_INFER_PEER_N=$peer_n
			echo "run.sh: mongodb-schema: $peer_n documents in $(echo "$peer" | cut -d' ' -f3) s" >&2
		fi
	fi
	# --- end issue 20 ---
	start=$(date +%s)
	"${cmd[@]}" || { echo "run.sh: bench_$b failed" >&2; status=1; }
	echo "run.sh: bench_$b took $(( $(date +%s) - start )) s" >&2
	# each program's data is dropped as soon as it is done with it
	rm -rf "$work/tamga-ts"   # issue 19
	rm -rf "$work/tamga" "$work/tamga-update" "$work/tamga-schema" "$work/tamga-text" "$work/wt" "$work/wt-update" "$work"/sqlite.db*
	# --- geo (issue 18): bench_geo's data ---
	rm -rf "$work/tamga-geo"
	# --- end geo ---
	# ---- js (issue 22 item 8): bench_js's data
	rm -rf "$work/tamga-js"
	# ---- end js
	# --- issue 20 (toolbelt): bench_toolbelt's data ---
	rm -rf "$work/tamga-toolbelt"
	# --- end issue 20 ---
done
echo "run.sh: done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
exit $status
