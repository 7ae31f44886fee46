#!/usr/bin/env bash
# cluster.sh -- `make cluster`: a replica set of three tamgad members on
# 127.0.0.1 (ports PORT, PORT+1, PORT+2; their Raft ports are each + 1000),
# data under DBPATH/rs0, rs1, rs2, logs in each folder's tamgad.log.  The
# set is initiated on its first start (rs.initiate with the three members)
# and comes back as it was on later ones.  Runs in the foreground: Ctrl-C
# stops the three members cleanly.
#
#   scripts/cluster.sh path/to/tamgad [PORT] [DBPATH] [SET]
set -euo pipefail

TAMGAD=${1:?usage: cluster.sh path/to/tamgad [port] [dbpath] [set]}
PORT=${2:-27017}
DBPATH=${3:-./data}
SET=${4:-rs0}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

pids=()
stop() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT INT TERM

hosts=()
for i in 0 1 2; do
	port=$((PORT + i))
	dir="$DBPATH/rs$i"
	mkdir -p "$dir"
	"$TAMGAD" --dbpath "$dir" --port "$port" --bind_ip 127.0.0.1 --replSet "$SET" \
		--nounixsocket >>"$dir/tamgad.log" 2>&1 &
	pids+=($!)
	hosts+=("127.0.0.1:$port")
done

"$PY" - "$SET" "${hosts[@]}" <<'EOF'
import sys, time
from pymongo import MongoClient
from pymongo.errors import OperationFailure, PyMongoError

name, hosts = sys.argv[1], sys.argv[2:]
deadline = time.time() + 60
for h in hosts:
    while True:
        try:
            MongoClient(h, directConnection=True, serverSelectionTimeoutMS=500).admin.command("ping")
            break
        except PyMongoError:
            if time.time() > deadline:
                sys.exit("member %s did not start (see its tamgad.log)" % h)
            time.sleep(0.2)
c = MongoClient(hosts[0], directConnection=True)
try:
    c.admin.command("replSetGetStatus")
    print("replica set %s: already initiated" % name)
except OperationFailure as e:
    if e.code != 94:
        raise
    cfg = {"_id": name, "members": [{"_id": i, "host": h} for i, h in enumerate(hosts)]}
    c.admin.command("replSetInitiate", cfg)
    print("replica set %s: initiated" % name)
while time.time() < deadline:
    for h in hosts:
        try:
            if MongoClient(h, directConnection=True, serverSelectionTimeoutMS=500).admin.command("hello").get("isWritablePrimary"):
                print("primary: %s" % h)
                print("connect with: mongodb://%s/?replicaSet=%s" % (",".join(hosts), name))
                sys.exit(0)
        except PyMongoError:
            pass
    time.sleep(0.2)
sys.exit("no primary within 60 s")
EOF

echo "three members running; Ctrl-C stops them"
wait
