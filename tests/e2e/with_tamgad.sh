#!/usr/bin/env bash
# with_tamgad.sh -- start a fresh tamgad, run one command against it, stop it.
#
#   tests/e2e/with_tamgad.sh path/to/tamgad [tamgad flags...] -- command [args...]
#
# The server gets a free port, a temporary --dbpath and its Unix domain
# socket in the same temporary folder (not /tmp); the command sees TAMGA_PORT,
# TAMGA_URI (mongodb://127.0.0.1:PORT) and TAMGA_SOCKET (the socket's path)
# in its environment (TAMGA_SOCKET empty when the folder's path is too long
# for a socket address).
# tamgad is always stopped (SIGTERM, then SIGKILL after 30 s).  The result is
# the command's exit status, or failure when tamgad did not stop cleanly
# (a crash, a sanitizer report, a leak): the test then prints its log tail.
# WITH_TAMGAD_NO_LOG=1 keeps the log out of the output when only the command
# failed (the conformance run, whose failures are counted, not debugged here).
set -u

if [ $# -lt 3 ]; then
	echo "usage: $0 path/to/tamgad [flags...] -- command [args...]" >&2
	exit 2
fi
TAMGAD=$1
shift
EXTRA=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	EXTRA+=("$1")
	shift
done
shift # --

BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/tamgad-e2e-XXXXXX")
mkdir -p "$WORK/db"
LOG="$WORK/tamgad.log"

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Ready once this process's own log says "Waiting for connections" (a
# connect alone could reach another test's server on the same port when
# tests run side by side); a port taken between free_port and tamgad's
# bind ("Address already in use") is tried again with another one.
start_tamgad() {
	PORT=$(free_port)
	SOCKET="$WORK/mongodb-$PORT.sock"
	SOCKET_FLAGS=(--unixSocketPrefix "$WORK")
	if [ ${#SOCKET} -ge 100 ]; then
		# too long for a socket address (108 bytes): TCP only
		SOCKET=""
		SOCKET_FLAGS=(--nounixsocket)
	fi
	local from
	from=$(($(wc -c <"$LOG") + 1))
	"$TAMGAD" --port "$PORT" --bind_ip 127.0.0.1 --dbpath "$WORK/db" "${SOCKET_FLAGS[@]}" "${EXTRA[@]}" >>"$LOG" 2>&1 &
	PID=$!
	for _ in $(seq 1 600); do
		if tail -c +"$from" "$LOG" | grep -q '"Waiting for connections"'; then
			return 0
		fi
		if ! kill -0 "$PID" 2>/dev/null; then
			wait "$PID" 2>/dev/null
			tail -c +"$from" "$LOG" | grep -q "Address already in use" && return 2
			return 1
		fi
		sleep 0.05
	done
	return 1
}

cleanup_dir() { rm -rf "$WORK"; }

: >"$LOG"
ready=0
for _ in 1 2 3 4 5; do
	start_tamgad
	st=$?
	[ $st -eq 2 ] && continue
	[ $st -eq 0 ] && ready=1
	break
done
if [ $ready -ne 1 ]; then
	echo "with_tamgad: tamgad did not start on port $PORT; log:" >&2
	tail -n 50 "$LOG" >&2
	kill -9 "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	cleanup_dir
	exit 1
fi

export TAMGA_PORT=$PORT
export TAMGA_URI="mongodb://127.0.0.1:$PORT"
export TAMGA_SOCKET="$SOCKET"
export TAMGA_LOG=$LOG
"$@"
rc=$?

if kill -0 "$PID" 2>/dev/null; then
	kill -TERM "$PID" 2>/dev/null
	for _ in $(seq 1 300); do
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$PID" 2>/dev/null; then
		echo "with_tamgad: tamgad did not stop within 30 s after SIGTERM" >&2
		kill -9 "$PID" 2>/dev/null
		rc=1
	fi
fi
wait "$PID"
src=$?
if [ $src -ne 0 ]; then
	echo "with_tamgad: tamgad exited with status $src; log tail:" >&2
	tail -n 80 "$LOG" >&2
	[ $rc -eq 0 ] && rc=1
elif [ $rc -ne 0 ] && [ -z "${WITH_TAMGAD_NO_LOG:-}" ]; then
	echo "with_tamgad: the test failed; tamgad log tail:" >&2
	tail -n 30 "$LOG" >&2
fi
cleanup_dir
exit $rc
