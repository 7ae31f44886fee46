#!/usr/bin/env bash
# restart.sh -- a single-node replica set survives a restart: tamgad
# --replSet rs0 --replSetAutoInitiate comes up as the primary of rs0 (what
# `make run` starts), a second start with the option is a no-op (idempotent),
# a start with the set name from a YAML config file (replication.replSetName)
# and without the option comes back as the same initiated set, in the next
# term, with its data; a start under another set name does not take the
# stored configuration; a start without --replSet is a standalone.
# Prints "N passed, N failed".
set -u
TAMGAD=$1
PY=${PYTHON:-/usr/bin/python3}
BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/tamgad-rs-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() { failed=$((failed + 1)); echo "not ok - $1"; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
wait_port() {
	for _ in $(seq 1 300); do
		"$PY" -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(0 if s.connect_ex(('127.0.0.1',$1))==0 else 1)" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1"; }
# q PORT EXPR: evaluate EXPR with `h` = hello, `s` = replSetGetStatus (or
# the error), `c` = the client; prints the result
q() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sys, time, pymongo
port, expr = int(sys.argv[1]), sys.argv[2]
c = pymongo.MongoClient("mongodb://127.0.0.1:%d/?directConnection=true&retryWrites=false" % port, serverSelectionTimeoutMS=10000)
for _ in range(100):
    h = c.admin.command("hello")
    if h.get("isWritablePrimary") or h.get("isreplicaset") or "setName" not in h:
        break
    time.sleep(0.1)
try:
    s = c.admin.command("replSetGetStatus")
except pymongo.errors.OperationFailure as e:
    s = {"code": e.code}
print(eval(expr))
PYEOF
}

mkdir -p "$WORK/db"
P=$(free_port)
"$TAMGAD" --dbpath "$WORK/db" --port "$P" --bind_ip 127.0.0.1 --nounixsocket --replSet rs0 --replSetAutoInitiate >"$WORK/1.log" 2>&1 &
PID=$!
wait_port "$P" && ok "auto-initiating start" || nok "auto-initiating start"
out=$(q "$P" '(h.get("setName"), h.get("isWritablePrimary"), h.get("me"), int(s.get("term", -1)))')
[ "$out" = "('rs0', True, '127.0.0.1:$P', 1)" ] && ok "primary of rs0 in term 1" || nok "first start: $out"
out=$(q "$P" 'c.t.c.insert_one({"_id": 1}).inserted_id')
[ "$out" = "1" ] && ok "a write" || nok "write: $out"
stop "$PID"

"$TAMGAD" --dbpath "$WORK/db" --port "$P" --bind_ip 127.0.0.1 --nounixsocket --replSet rs0 --replSetAutoInitiate >"$WORK/2.log" 2>&1 &
PID=$!
wait_port "$P" && ok "second auto-initiating start (already initiated)" || nok "second start"
out=$(q "$P" '(h.get("setName"), h.get("isWritablePrimary"), int(s.get("term", -1)), int(h.get("setVersion", 0)))')
[ "$out" = "('rs0', True, 2, 1)" ] && ok "same set, term 2, config version 1" || nok "second start: $out"
stop "$PID"

cat >"$WORK/tamgad.conf" <<CONF
storage:
  dbPath: "$WORK/db"
net:
  port: $P
  bindIp: 127.0.0.1
  unixDomainSocket:
    enabled: false
replication:
  replSetName: rs0
CONF
"$TAMGAD" --config "$WORK/tamgad.conf" >"$WORK/3.log" 2>&1 &
PID=$!
wait_port "$P" && ok "start from a config file" || nok "start from a config file"
out=$(q "$P" '(h.get("setName"), h.get("isWritablePrimary"), int(s.get("term", -1)), c.t.c.count_documents({}))')
[ "$out" = "('rs0', True, 3, 1)" ] && ok "replication.replSetName: the same initiated set, term 3, the data" || nok "config file start: $out"
out=$(q "$P" '[d["_id"] for d in c["local"]["system.replset"].find()]')
[ "$out" = "['rs0']" ] && ok "local.system.replset holds the configuration" || nok "local.system.replset: $out"
stop "$PID"

"$TAMGAD" --dbpath "$WORK/db" --port "$P" --bind_ip 127.0.0.1 --nounixsocket --replSet other >"$WORK/4.log" 2>&1 &
PID=$!
wait_port "$P"
out=$(q "$P" '(h.get("isreplicaset"), h.get("setName"), s.get("code"))')
[ "$out" = "(True, None, 94)" ] && ok "another set name: not initiated" || nok "another set name: $out"
grep -q '"id":21406' "$WORK/4.log" && ok "log 21406 (set name differs)" || nok "no 21406 in the log"
stop "$PID"

"$TAMGAD" --dbpath "$WORK/db" --port "$P" --bind_ip 127.0.0.1 --nounixsocket >"$WORK/5.log" 2>&1 &
PID=$!
wait_port "$P"
out=$(q "$P" '(h.get("setName"), h.get("isWritablePrimary"), s.get("code"), "$clusterTime" in h)')
[ "$out" = "(None, True, 76, False)" ] && ok "without --replSet: a standalone" || nok "standalone: $out"
stop "$PID"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
