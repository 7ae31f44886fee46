#!/usr/bin/env bash
# unix_socket.sh -- tamgad's Unix domain sockets as a process, as mongod's:
# <prefix>/mongodb-<port>.sock by default with mode 0700, --unixSocketPrefix,
# --filePermissions, --nounixsocket, the config-file names, a --bind_ip entry
# that is a path, the file removed at a clean shutdown, a stale one from a
# killed server replaced, a live server's socket and a non-socket file
# refused; and real clients through mongodb://%2F...sock: mongosh and the
# Node driver (CRUD, whatsmyuri), when tests/clients is installed.
#
#   tests/e2e/unix_socket.sh path/to/tamgad [path/to/node_modules]
#
# Prints "N passed, N failed"; exits non-zero when anything failed.
set -u
TAMGAD=$1
MODULES=${2:-}
BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/tamgad-unix-XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$WORK"
}
trap cleanup EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
nok() { failed=$((failed + 1)); echo "not ok - $1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
# wait until a socket file answers (or the process is gone)
wait_sock() {
	for _ in $(seq 1 300); do
		kill -0 "$2" 2>/dev/null || return 1
		python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(0.2); sys.exit(0 if s.connect_ex('$1')==0 else 1)" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
stop() { kill -"${2:-TERM}" "$1" 2>/dev/null; wait "$1"; }
mode() { stat -c %a "$1" 2>/dev/null; }
# mongodb://%2Fpath%2Fto%2Fmongodb-1234.sock
sock_uri() { printf 'mongodb://%s' "$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1")"; }
# one OP_MSG command over the socket, printing the reply as JSON
sock_cmd() {
	python3 - "$1" "$2" <<'PY'
import json, socket, struct, sys
path, cmd = sys.argv[1], json.loads(sys.argv[2])
def enc(d):
    out = b""
    for k, v in d.items():
        k = k.encode() + b"\0"
        if isinstance(v, bool): out += b"\x08" + k + (b"\x01" if v else b"\x00")
        elif isinstance(v, int): out += b"\x10" + k + struct.pack("<i", v)
        elif isinstance(v, list): out += b"\x04" + k + enc({str(i): x for i, x in enumerate(v)})
        elif isinstance(v, dict): out += b"\x03" + k + enc(v)
        else:
            v = v.encode() + b"\0"; out += b"\x02" + k + struct.pack("<i", len(v)) + v
    return struct.pack("<i", len(out) + 5) + out + b"\0"
def dec(b):
    out, i = {}, 4
    while b[i] != 0:
        t = b[i]; j = b.index(b"\0", i + 1); k = b[i + 1:j].decode(); i = j + 1
        if t == 1: out[k] = struct.unpack("<d", b[i:i + 8])[0]; i += 8
        elif t == 2: n = struct.unpack("<i", b[i:i + 4])[0]; out[k] = b[i + 4:i + 3 + n].decode(); i += 4 + n
        elif t in (3, 4): n = struct.unpack("<i", b[i:i + 4])[0]; out[k] = dec(b[i:i + n]); i += n
        elif t == 8: out[k] = b[i] == 1; i += 1
        elif t == 16: out[k] = struct.unpack("<i", b[i:i + 4])[0]; i += 4
        elif t in (9, 17, 18): out[k] = struct.unpack("<q", b[i:i + 8])[0]; i += 8
        elif t == 7: out[k] = b[i:i + 12].hex(); i += 12
        elif t == 10: out[k] = None
        else: raise ValueError("BSON type %d not decoded here" % t)
    return out
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(path)
body = enc(cmd)
s.sendall(struct.pack("<iiiiI", 21 + len(body), 1, 0, 2013, 0) + b"\0" + body)
h = b""
while len(h) < 16: h += s.recv(16 - len(h))
n = struct.unpack("<i", h[:4])[0]; r = b""
while len(r) < n - 16: r += s.recv(n - 16 - len(r))
print(json.dumps(dec(r[5:])))
PY
}

mkdir -p "$WORK/db" "$WORK/db2" "$WORK/s"

# 1. the default socket under --unixSocketPrefix, mode 0700, served
P1=$(free_port)
S1="$WORK/s/mongodb-$P1.sock"
"$TAMGAD" --dbpath "$WORK/db" --port "$P1" --unixSocketPrefix "$WORK/s" --logpath "$WORK/one.log" &
PID1=$!
PIDS+=("$PID1")
if wait_sock "$S1" "$PID1"; then ok "listens on <prefix>/mongodb-<port>.sock"; else nok "no socket at $S1"; fi
[ "$(mode "$S1")" = 700 ] && ok "default mode 0700" || nok "mode $(mode "$S1")"
grep -q "\"id\":23015.*\"address\":\"$S1\"" "$WORK/one.log" && ok "23015 Listening on the socket" || nok "no 23015 for the socket"
out=$(sock_cmd "$S1" '{"whatsmyuri": 1, "$db": "admin"}')
[[ $out == *'"you": "anonymous unix socket:27017"'* ]] && ok "whatsmyuri over the socket" || nok "whatsmyuri: $out"
grep -q '"remote":"anonymous unix socket:27017"' "$WORK/one.log" && ok "22943 names the peer as mongod" || nok "no anonymous unix socket in the log"

# 2. real clients through mongodb://%2F...sock
URI=$(sock_uri "$S1")
WROTE=0
if [ -n "$MODULES" ] && [ -x "$MODULES/.bin/mongosh" ]; then
	out=$("$MODULES/.bin/mongosh" "$URI" --quiet --norc --eval '
		const c = db.getSiblingDB("unix_e2e").items;
		c.drop();
		c.insertMany([{_id: 1, v: "a"}, {_id: 2, v: "b"}]);
		print(c.countDocuments({}) + " " + c.findOne({_id: 2}).v + " " + db.runCommand({whatsmyuri: 1}).you);
	' 2>&1)
	[[ $out == *"2 b anonymous unix socket:27017"* ]] && ok "mongosh through the socket" || nok "mongosh: $out"
	WROTE=1
else
	echo "# mongosh not installed: skipped"
fi
if [ -n "$MODULES" ] && [ -d "$MODULES/mongodb" ] && command -v node >/dev/null; then
	out=$(TAMGA_SOCKET_URI="$URI" MODULES="$MODULES" node -e '
		const { MongoClient } = require(process.env.MODULES + "/mongodb");
		(async () => {
			const client = new MongoClient(process.env.TAMGA_SOCKET_URI, { serverSelectionTimeoutMS: 10000 });
			await client.connect();
			const c = client.db("unix_e2e").collection("node");
			await c.deleteMany({});
			await c.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i })));
			const n = (await c.find({}).batchSize(100).toArray()).length;
			const me = await client.db("admin").command({ whatsmyuri: 1 });
			console.log(n + " " + me.you);
			await client.close();
		})().catch((e) => { console.log("error " + e.message); process.exit(1); });
	' 2>&1)
	[[ $out == "250 anonymous unix socket:27017" ]] && ok "Node driver through the socket (getMore batches)" || nok "Node driver: $out"
else
	echo "# Node driver not installed: skipped"
fi

# 3. a second server naming the same path with --bind_ip: refused, the first keeps it
P2=$(free_port)
err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$P2" --nounixsocket --bind_ip "127.0.0.1,$S1" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 48 && $err == *"$S1: Address already in use"* ]] && ok "a live server's socket is refused (48)" || nok "live socket: $rc $err"
out=$(sock_cmd "$S1" '{"ping": 1, "$db": "admin"}')
[[ $out == *'"ok": 1.0'* ]] && ok "the first server still answers there" || nok "first server after refusal: $out"

# 4. clean shutdown removes the file (23017)
stop "$PID1" TERM; rc=$?
[ $rc -eq 0 ] && ok "SIGTERM exits 0" || nok "SIGTERM exits $rc"
[ ! -e "$S1" ] && ok "socket file removed at shutdown" || nok "socket file left at shutdown"
grep -q '"id":23017' "$WORK/one.log" && ok "23017 removing socket file" || nok "no 23017"

# 5. a killed server's file is stale: the next start replaces it
"$TAMGAD" --dbpath "$WORK/db" --port "$P1" --unixSocketPrefix "$WORK/s" >"$WORK/two.log" 2>&1 &
PID2=$!
PIDS+=("$PID2")
wait_sock "$S1" "$PID2" || nok "restart did not listen"
{ stop "$PID2" KILL; } 2>/dev/null
[ -S "$S1" ] && ok "kill -9 leaves the socket file" || nok "no file after kill -9"
"$TAMGAD" --dbpath "$WORK/db" --port "$P1" --unixSocketPrefix "$WORK/s" >"$WORK/three.log" 2>&1 &
PID3=$!
PIDS+=("$PID3")
if wait_sock "$S1" "$PID3"; then ok "stale socket file replaced"; else nok "stale file: $(tail -n 3 "$WORK/three.log")"; fi
out=$(sock_cmd "$S1" '{"count": "items", "$db": "unix_e2e"}')
if [ $WROTE -eq 1 ]; then
	[[ $out == *'"n": 2'* ]] && ok "what mongosh wrote through the socket survived" || nok "count after restart: $out"
fi
stop "$PID3" TERM

# 6. --nounixsocket, --filePermissions, a --bind_ip path
P4=$(free_port)
"$TAMGAD" --dbpath "$WORK/db2" --port "$P4" --unixSocketPrefix "$WORK/s" --nounixsocket \
	--bind_ip "127.0.0.1,$WORK/bind.sock" --filePermissions 0777 >"$WORK/four.log" 2>&1 &
PID4=$!
PIDS+=("$PID4")
if wait_sock "$WORK/bind.sock" "$PID4"; then ok "--bind_ip path listens"; else nok "--bind_ip path: $(tail -n 3 "$WORK/four.log")"; fi
[ "$(mode "$WORK/bind.sock")" = 777 ] && ok "--filePermissions 0777 (octal)" || nok "mode $(mode "$WORK/bind.sock")"
[ ! -e "$WORK/s/mongodb-$P4.sock" ] && ok "--nounixsocket: no default socket" || nok "--nounixsocket made one"
out=$(sock_cmd "$WORK/bind.sock" '{"getCmdLineOpts": 1, "$db": "admin"}')
[[ $out == *'"unixDomainSocket": {"enabled": false, "filePermissions": 511, "pathPrefix": "'"$WORK/s"'"}'* ]] \
	&& ok "getCmdLineOpts parsed net.unixDomainSocket" || nok "getCmdLineOpts: $out"
stop "$PID4" TERM
[ ! -e "$WORK/bind.sock" ] && ok "--bind_ip socket removed at shutdown" || nok "--bind_ip socket left"

# 7. the config file's names
P5=$(free_port)
cat >"$WORK/unix.conf" <<CONF
storage:
  dbPath: $WORK/db2
net:
  port: $P5
  bindIp: 127.0.0.1
  unixDomainSocket:
    enabled: true
    pathPrefix: $WORK/s
    filePermissions: 0750
CONF
"$TAMGAD" --config "$WORK/unix.conf" >"$WORK/five.log" 2>&1 &
PID5=$!
PIDS+=("$PID5")
if wait_sock "$WORK/s/mongodb-$P5.sock" "$PID5"; then ok "net.unixDomainSocket from --config"; else nok "config: $(tail -n 3 "$WORK/five.log")"; fi
[ "$(mode "$WORK/s/mongodb-$P5.sock")" = 750 ] && ok "filePermissions: 0750 from --config" || nok "mode $(mode "$WORK/s/mongodb-$P5.sock")"
out=$(sock_cmd "$WORK/s/mongodb-$P5.sock" '{"getCmdLineOpts": 1, "$db": "admin"}')
[[ $out == *'"unixDomainSocket": {"enabled": true, "filePermissions": 488, "pathPrefix": "'"$WORK/s"'"}'* ]] \
	&& ok "getCmdLineOpts echoes enabled: true from --config" || nok "getCmdLineOpts: $out"
stop "$PID5" TERM

# 8. refusals: a file that is not a socket, a bad --filePermissions
P6=$(free_port)
echo "not a socket" >"$WORK/s/mongodb-$P6.sock"
err=$("$TAMGAD" --dbpath "$WORK/db2" --port "$P6" --unixSocketPrefix "$WORK/s" 2>&1 >/dev/null); rc=$?
[[ $rc -eq 48 && $err == *"not a socket"* && $(cat "$WORK/s/mongodb-$P6.sock") == "not a socket" ]] \
	&& ok "a regular file at the path is refused and kept" || nok "regular file: $rc $err"
"$TAMGAD" --dbpath "$WORK/db2" --filePermissions rwx >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "bad --filePermissions exits 2" || nok "bad --filePermissions exits $rc"

# 9. a socket peer is local: the localhost exception lets it create the first user
P7=$(free_port)
mkdir -p "$WORK/db3"
"$TAMGAD" --dbpath "$WORK/db3" --port "$P7" --unixSocketPrefix "$WORK/s" --auth >"$WORK/seven.log" 2>&1 &
PID7=$!
PIDS+=("$PID7")
if wait_sock "$WORK/s/mongodb-$P7.sock" "$PID7"; then
	out=$(sock_cmd "$WORK/s/mongodb-$P7.sock" '{"createUser": "root", "pwd": "pw", "roles": [], "$db": "admin"}' 2>&1)
	out2=$(sock_cmd "$WORK/s/mongodb-$P7.sock" '{"createUser": "other", "pwd": "pw", "roles": [], "$db": "admin"}' 2>&1)
	[[ $out == *'"ok": 1.0'* && $out2 == *'"code": 13'* ]] && ok "localhost exception over the socket" || nok "localhost exception: $out / $out2"
else
	nok "--auth server did not listen"
fi
stop "$PID7" TERM

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
