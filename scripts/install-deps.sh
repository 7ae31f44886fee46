#!/usr/bin/env bash
# install-deps.sh -- install everything Tamga needs to build, test and bench
# on Debian/Ubuntu: Debian packages by name (sudo when not root), then the
# pinned npm test clients (tests/clients/package-lock.json).
# Idempotent and quiet when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libbson-dev libmongoc-dev libwiredtiger-dev wiredtiger libpcre2-dev libssl-dev libicu-dev libstemmer-dev
      zlib1g-dev libzstd-dev libsnappy-dev libyaml-dev
      libsqlite3-dev libpq-dev postgresql postgresql-15-postgis-3
      libs2-dev libmozjs-102-dev libraft-dev libuv1-dev libintelrdfpmath-dev
      python3 python3-pymongo openssl)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from another Debian-format build that bundles npm: only
# ask for Debian's when there is no node at all.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# npm clients (mongosh, the Node driver), exactly as locked.
if [ -f tests/clients/package-lock.json ]; then
  if [ ! -d tests/clients/node_modules ] || [ tests/clients/package-lock.json -nt tests/clients/node_modules/.stamp ]; then
    echo "install-deps: npm ci in tests/clients" >&2
    (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error >&2 && touch node_modules/.stamp)
  fi
fi
