#!/usr/bin/env bash
# kill9.sh -- the oplog and the data agree after kill -9: a replica-set
# tamgad is killed while a mongosh client inserts and updates; restarted on
# the same folder, every document of the collection has its insert entry in
# local.oplog.rs and every insert entry its document, and the next write's
# ts is above every entry's (the clock resumed above the last one).
# Prints "N passed, N failed".
set -u
TAMGAD=$1
MONGOSH=$2/.bin/mongosh
BASE=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$BASE/tamgad-oplog9-XXXXXX")
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
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$WORK/db"
PORT=$(free_port)

# bad sizes are refused at start, with mongod's words
err=$("$TAMGAD" --dbpath "$WORK/db" --port "$PORT" --replSet rs0 --oplogSize 0 2>&1 >/dev/null); rc=$?
[[ $rc -ne 0 && $err == *"bad --oplogSize, arg must be greater than 0, found: 0"* ]] \
	&& ok "--oplogSize 0 refused" || nok "--oplogSize 0: $rc $err"
err=$("$TAMGAD" --dbpath "$WORK/db" --port "$PORT" --replSet rs0 --oplogSize x 2>&1 >/dev/null); rc=$?
[[ $rc -ne 0 && $err == *"bad --oplogSize"* ]] && ok "--oplogSize x refused" || nok "--oplogSize x: $rc $err"
URI="mongodb://127.0.0.1:$PORT/?directConnection=true&retryWrites=false"

"$TAMGAD" --dbpath "$WORK/db" --port "$PORT" --bind_ip 127.0.0.1 --nounixsocket --replSet rs0 >"$WORK/1.log" 2>&1 &
PID=$!
PIDS+=("$PID")
wait_port "$PORT" && ok "replica-set tamgad up" || nok "tamgad did not start"
out=$("$MONGOSH" "$URI" --quiet --norc --eval 'rs.initiate().ok' 2>&1)
[ "$out" = "1" ] && ok "rs.initiate()" || nok "rs.initiate(): $out"
sleep 1

# a writer that never stops by itself; it reports its progress
"$MONGOSH" "$URI" --quiet --norc --eval '
	for (let i = 0; i < 200 && !db.hello().isWritablePrimary; i++) sleep(50);
	const c = db.getSiblingDB("shop").items;
	for (let k = 0; ; k++) {
		c.insertMany([{_id: 2 * k, n: 0}, {_id: 2 * k + 1, n: 0}]);
		if (k % 20 === 0) c.updateMany({}, {$inc: {n: 1}});
		if (k % 50 === 0) print(k);
	}' >"$WORK/writer.out" 2>&1 &
WPID=$!
PIDS+=("$WPID")
# kill once it has written a few hundred documents
for _ in $(seq 1 300); do
	last=$(tail -n 1 "$WORK/writer.out" 2>/dev/null)
	case $last in ''|*[!0-9]*) ;; *) [ "$last" -ge 150 ] && break ;; esac
	sleep 0.1
done
kill -9 "$PID"
wait "$PID" 2>/dev/null
kill -9 "$WPID" 2>/dev/null
wait "$WPID" 2>/dev/null
ok "killed with -9 mid-stream"

"$TAMGAD" --dbpath "$WORK/db" --port "$PORT" --bind_ip 127.0.0.1 --nounixsocket --replSet rs0 >"$WORK/2.log" 2>&1 &
PID=$!
PIDS+=("$PID")
wait_port "$PORT" && ok "restarted on the same folder" || nok "no restart"
out=$("$MONGOSH" "$URI" --quiet --norc --eval '
	for (let i = 0; i < 100 && !db.hello().isWritablePrimary; i++) sleep(50);
	const shop = db.getSiblingDB("shop"), oplog = db.getSiblingDB("local").oplog.rs;
	const ids = shop.items.find({}, {_id: 1}).sort({_id: 1}).toArray().map(d => d._id);
	const logged = oplog.find({op: "i", ns: "shop.items"}, {"o._id": 1}).toArray().map(e => e.o._id).sort((a, b) => a - b);
	const maxTs = oplog.find().sort({$natural: -1}).limit(1).next().ts;
	let dense = ids.every((v, i) => v === i);
	shop.items.insertOne({_id: "after"});
	const after = oplog.find({ns: "shop.items", "o._id": "after"}).next().ts;
	print(JSON.stringify({n: ids.length, same: JSON.stringify(ids) === JSON.stringify(logged), dense,
	    above: after.compare(maxTs) > 0}));' 2>&1)
case $out in
*'"same":true'*) ok "every document has its entry and every entry its document ($out)" ;;
*) nok "data and oplog disagree: $out" ;;
esac
case $out in *'"dense":true'*) ok "no insert lost in the middle" ;; *) nok "gaps: $out" ;; esac
case $out in *'"above":true'*) ok "the clock resumed above the last entry" ;; *) nok "clock: $out" ;; esac
n=$(echo "$out" | sed -n 's/.*"n":\([0-9]*\).*/\1/p')
[ "${n:-0}" -gt 100 ] && ok "$n documents written before the kill" || nok "too few documents: $out"
kill -TERM "$PID"
wait "$PID"
rc=$?
[ $rc -eq 0 ] && ok "clean stop" || { nok "stop exit $rc"; tail -30 "$WORK/2.log"; }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
