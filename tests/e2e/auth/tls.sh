#!/usr/bin/env bash
# tls.sh -- tamgad with TLS: makes a CA and a server certificate (CN and SAN
# localhost/127.0.0.1) with the openssl tool, then runs auth_tls.py (PyMongo)
# and mongosh against tamgad --tlsMode requireTLS, and auth_tls.py's plain
# checks against --tlsMode allowTLS and preferTLS.
#
#   tests/e2e/auth/tls.sh path/to/tamgad
#
# Prints the clients' "N passed, N failed" lines; exits non-zero on failure.
set -u
TAMGAD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WITH=$HERE/../with_tamgad.sh
NODE_MODULES=$HERE/../../clients/node_modules
PY=${PYTHON3:-/usr/bin/python3}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/tamga-tls-XXXXXX")
trap 'rm -rf "$DIR"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/O=Tamga tests/CN=Tamga test CA" \
	-keyout "$DIR/ca.key" -out "$DIR/ca.pem" -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null || exit 1
openssl req -newkey rsa:2048 -nodes -subj "/O=Tamga tests/CN=localhost" \
	-keyout "$DIR/server.key" -out "$DIR/server.csr" 2>/dev/null || exit 1
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$DIR/san.ext"
openssl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
	-days 2 -extfile "$DIR/san.ext" -out "$DIR/server.crt" 2>/dev/null || exit 1
cat "$DIR/server.crt" "$DIR/server.key" >"$DIR/server.pem"
openssl req -newkey rsa:2048 -nodes -subj "/O=Tamga tests/CN=app-client" \
	-keyout "$DIR/client.key" -out "$DIR/client.csr" 2>/dev/null || exit 1
openssl x509 -req -in "$DIR/client.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
	-days 2 -out "$DIR/client.crt" 2>/dev/null || exit 1
cat "$DIR/client.crt" "$DIR/client.key" >"$DIR/client.pem"
export TLS_CA_FILE=$DIR/ca.pem TLS_CLIENT_PEM=$DIR/client.pem

rc=0
for mode in requireTLS preferTLS allowTLS; do
	echo "# tlsMode $mode"
	TLS_MODE=$mode "$WITH" "$TAMGAD" --tlsMode "$mode" --tlsCertificateKeyFile "$DIR/server.pem" \
		--tlsCAFile "$DIR/ca.pem" --tlsAllowConnectionsWithoutCertificates -- "$PY" "$HERE/auth_tls.py" || rc=1
done
if [ -x "$NODE_MODULES/.bin/mongosh" ]; then
	echo "# mongosh --tls"
	"$WITH" "$TAMGAD" --tlsMode requireTLS --tlsCertificateKeyFile "$DIR/server.pem" -- sh -c \
		"'$NODE_MODULES/.bin/mongosh' \"mongodb://localhost:\$TAMGA_PORT/?tls=true&tlsCAFile=$DIR/ca.pem\" --quiet --norc --eval 'const r = db.runCommand({ping: 1}); print(r.ok === 1 ? \"1 passed, 0 failed\" : \"0 passed, 1 failed\"); if (r.ok !== 1) quit(1)'" || rc=1
fi
exit $rc
