#!/usr/bin/env bash
# tls.sh -- tamgad with --tlsMode requireTLS: the Node driver connects over
# TLS (verifying a throw-away self-signed certificate), runs a write and a
# read, and a plain connection is refused.  Needs the openssl CLI.
set -u
TAMGAD=$1
HERE=$(cd "$(dirname "$0")" && pwd)
CERTS=$(mktemp -d "${TMPDIR:-/tmp}/tamgad-tls-XXXXXX")
trap 'rm -rf "$CERTS"' EXIT
if ! openssl req -x509 -newkey rsa:2048 -nodes -keyout "$CERTS/key.pem" -out "$CERTS/cert.pem" -days 2 \
	-subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1; then
	echo "tls.sh: cannot make a certificate (openssl CLI missing?)" >&2
	exit 1
fi
cat "$CERTS/cert.pem" "$CERTS/key.pem" >"$CERTS/server.pem"
export TAMGA_TLS_CA="$CERTS/cert.pem"
"$HERE/with_tamgad.sh" "$TAMGAD" --tlsMode requireTLS --tlsCertificateKeyFile "$CERTS/server.pem" -- \
	node "$HERE/node/tls_check.js"
