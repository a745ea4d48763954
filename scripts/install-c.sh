#!/usr/bin/env bash
# Installs the C and C++ API: ringtrace.h, libringtrace.a, libringtrace.so
# and ringtrace.pc under PREFIX (default /usr/local).
#
#   bash scripts/install-c.sh [PREFIX]
#   cc prog.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs ringtrace)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' crates/ringtrace-ffi/Cargo.toml | head -1)"

cargo build --release -p ringtrace-ffi --lib
install -d -m 0755 "$prefix/include" "$prefix/lib/pkgconfig"
install -m 0644 crates/ringtrace-ffi/include/ringtrace.h "$prefix/include/"
install -m 0644 target/release/libringtrace.a "$prefix/lib/"
install -m 0755 target/release/libringtrace.so "$prefix/lib/"
sed -e "s|@INCLUDEDIR@|$prefix/include|" -e "s|@LIBDIR@|$prefix/lib|" -e "s|@VERSION@|$version|" \
  crates/ringtrace-ffi/ringtrace.pc.in >"$prefix/lib/pkgconfig/ringtrace.pc"
chmod 0644 "$prefix/lib/pkgconfig/ringtrace.pc"
echo "installed ringtrace $version under $prefix (header, libringtrace.a, libringtrace.so, ringtrace.pc)"
