#!/bin/sh
# Installs the build into a temporary prefix and builds the embedded example
# the way a user outside this tree would: `pkg-config --static --cflags
# --libs tamga` against the installed libtamga.a, then runs it.  Fails when
# tamga.pc leaves out a library libtamga needs (a link error) or the
# installed header and library disagree (the example's check fails).
#   $1 build dir, $2 source dir, $3 extra compile/link flags (sanitizers)
set -eu
build=$1; src=$2; extra=${3:-}
tmp=$build/tmp/install-pkgconfig
rm -rf "$tmp"; mkdir -p "$tmp"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name tamga.pc)
export PKG_CONFIG_PATH=$(dirname "$pc")
# a static link: the shared library must not be picked
find "$tmp/prefix" -name 'libtamga.so*' -delete
cc $extra -o "$tmp/bookstore" "$src/examples/embedded/bookstore.c" \
   $(pkg-config --static --cflags --libs tamga)
"$tmp/bookstore" "$tmp/data" | grep -q 'Document failed validation'
echo "pkg-config static link and run: ok"
