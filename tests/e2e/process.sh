#!/usr/bin/env bash
# process.sh -- tamgad as a process: --version/--help, bad options, a
# missing --dbpath, a second server on the same --dbpath, a taken port, a
# YAML --config file, --logpath, SIGINT.  Prints "N passed, N failed".
set -u
TAMGAD=$1
BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/tamgad-proc-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() { failed=$((failed + 1)); echo "not ok - $1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() {
	for _ in $(seq 1 300); do
		python3 -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(0 if s.connect_ex(('127.0.0.1',$1))==0 else 1)" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
stop() { kill -"${2:-TERM}" "$1" 2>/dev/null; wait "$1"; }

out=$("$TAMGAD" --version)
[[ $out == "db version v"* ]] && ok "--version" || nok "--version: $out"
"$TAMGAD" --help | grep -q -- "--dbpath" && ok "--help" || nok "--help"
"$TAMGAD" --no-such-flag >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "unknown flag exits 2" || nok "unknown flag exits $rc"
"$TAMGAD" --port notanumber >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "bad --port exits 2" || nok "bad --port exits $rc"

err=$("$TAMGAD" --dbpath "$WORK/missing" --port "$(free_port)" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 100 && $err == *"not found"* ]] && ok "missing dbpath exits 100" || nok "missing dbpath: $rc $err"

mkdir -p "$WORK/db" "$WORK/db2"
P1=$(free_port)
"$TAMGAD" --dbpath "$WORK/db" --port "$P1" --logpath "$WORK/one.log" &
PID1=$!
if wait_port "$P1"; then ok "first server up (--logpath)"; else nok "first server up"; fi
grep -q '"id":23016' "$WORK/one.log" && ok "log line 23016 Waiting for connections" || nok "no 23016 in the log"
grep -q '"msg":"\*\*\*\*\* SERVER RESTARTED \*\*\*\*\*"' "$WORK/one.log" && ok "log line 20698" || nok "no 20698"

err=$("$TAMGAD" --dbpath "$WORK/db" --port "$(free_port)" 2>&1 >/dev/null); rc=$?
[[ $rc -ne 0 && ( $err == *"DBPathInUse"* || $err == *"lock"* || $err == *"already"* ) ]] \
	&& ok "second server on the same dbpath refuses" || nok "second server: $rc $err"

err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$P1" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 48 && $err == *"Address already in use"* ]] && ok "taken port exits 48" || nok "taken port: $rc $err"

stop "$PID1" INT; rc=$?
[ $rc -eq 0 ] && ok "SIGINT exits 0" || nok "SIGINT exits $rc"
grep -q '"id":23138' "$WORK/one.log" && ok "log line 23138 Shutting down" || nok "no 23138"

P2=$(free_port)
cat >"$WORK/tamgad.conf" <<CONF
# a mongod-style config file
storage:
  dbPath: "$WORK/db2"
net:
  port: $P2
  bindIp: 127.0.0.1   # loopback only
systemLog:
  destination: file
  path: $WORK/two.log
  logAppend: true
CONF
"$TAMGAD" --config "$WORK/tamgad.conf" &
PID2=$!
if wait_port "$P2"; then ok "--config YAML"; else nok "--config YAML"; fi
stop "$PID2" TERM; rc=$?
[ $rc -eq 0 ] && ok "SIGTERM exits 0" || nok "SIGTERM exits $rc"

P3=$(free_port)
"$TAMGAD" --dbpath "$WORK/db2" --port "$P3" --bind_ip localhost --maxConns 2 >"$WORK/three.log" 2>&1 &
PID3=$!
if wait_port "$P3"; then
	# the wait probe above has come and gone; two connections fit, a third is closed at once
	sleep 0.5
	if python3 - "$P3" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
a = socket.create_connection(("127.0.0.1", port)); b = socket.create_connection(("127.0.0.1", port))
time.sleep(0.3)
c = socket.create_connection(("127.0.0.1", port)); c.settimeout(5)
try:
    closed = c.recv(1) == b""
except ConnectionResetError:
    closed = True
sys.exit(0 if closed else 1)
PY
	then ok "--maxConns refuses the connection over the limit"; else nok "--maxConns"; fi
else
	nok "--bind_ip localhost --maxConns 2 did not start"
fi
stop "$PID3" TERM

echo "bogus:
  option: 1" >"$WORK/bad.conf"
"$TAMGAD" --config "$WORK/bad.conf" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "unknown config option exits 2" || nok "unknown config option exits $rc"

# --setParameter: mongod's refusals (exit 2), and the YAML setParameter: map
err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$(free_port)" --setParameter noSuchParameter=1 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && $err == *'Illegal --setParameter parameter: "noSuchParameter"'* ]] && ok "unknown --setParameter exits 2" ||
	nok "unknown --setParameter: $rc $err"
err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$(free_port)" --setParameter ttlMonitorSleepSecs=0 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && $err == *'Bad value for parameter "ttlMonitorSleepSecs": Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than or equal to 1'* ]] &&
	ok "out-of-bounds --setParameter exits 2" || nok "out-of-bounds --setParameter: $rc $err"
err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$(free_port)" --setParameter requireApiVersion=maybe 2>&1 >/dev/null); rc=$?
[[ $rc -eq 2 && $err == *'Bad value for parameter "requireApiVersion"'* ]] && ok "bad boolean --setParameter exits 2" ||
	nok "bad boolean --setParameter: $rc $err"
"$TAMGAD" --dbpath "$WORK/db2" --port "$(free_port)" --setParameter ttlMonitorSleepSecs >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "--setParameter without = exits 2" || nok "--setParameter without =: $rc"
P4=$(free_port)
cat >"$WORK/params.conf" <<CONF
storage:
  dbPath: "$WORK/db2"
net:
  port: $P4
  bindIp: 127.0.0.1
setParameter:
  ttlMonitorSleepSecs: 3
  enableTestCommands: true
  ingressConnectionEstablishmentMaxQueueDepth: 5
CONF
"$TAMGAD" --config "$WORK/params.conf" >"$WORK/four.log" 2>&1 &
PID4=$!
if wait_port "$P4"; then
	if python3 - "$P4" <<'PY'
import socket, struct, sys
# getParameter over OP_MSG with a hand-built BSON body (no driver needed)
def cstr(s): return s.encode() + b"\0"
def elem_i32(k, v): return b"\x10" + cstr(k) + struct.pack("<i", v)
def elem_str(k, v): b = v.encode() + b"\0"; return b"\x02" + cstr(k) + struct.pack("<i", len(b)) + b
def doc(*els): body = b"".join(els); return struct.pack("<i", len(body) + 5) + body + b"\0"
body = doc(elem_str("getParameter", "*"), elem_str("$db", "admin"))
msg = struct.pack("<I", 0) + b"\0" + body
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(struct.pack("<iiii", 16 + len(msg), 1, 0, 2013) + msg)
hdr = s.recv(16, socket.MSG_WAITALL); n = struct.unpack("<i", hdr[:4])[0]
rep = s.recv(n - 16, socket.MSG_WAITALL)
want = [b"ttlMonitorSleepSecs\0" + struct.pack("<i", 3), b"enableTestCommands\0\x01",
        b"ingressConnectionEstablishmentMaxQueueDepth\0" + struct.pack("<i", 5)]
sys.exit(0 if all(w in rep for w in want) else 1)
PY
	then ok "YAML setParameter: applied"; else nok "YAML setParameter: not applied"; fi
	grep -q '"id":4539300' "$WORK/four.log" && ok "log line 4539300 Setting server parameter" || nok "no 4539300"
else
	nok "--config with setParameter: did not start"
fi
stop "$PID4" TERM

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
