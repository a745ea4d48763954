#!/usr/bin/env bash
# Installs what the tests need and this machine lacks, and nothing else:
#
#   - Debian packages (through apt-get, as root or with sudo that asks no
#     password); elsewhere it names the missing tools and stops;
#   - rustup, if there is no Rust at all;
#   - a Python environment in target/python with PyPI packages the checkers
#     read traces with (Perfetto's own generated protos);
#   - the Rust toolchains the checks run on: stable (the newest a user has)
#     with clippy and rustfmt, the oldest supported (`rust-version` in
#     Cargo.toml), and one dated nightly with Miri.
#
# Called by scripts/test.sh; safe to run again (it installs only what is
# missing and updates nothing). `bash scripts/setup.sh --print-toolchains`
# prints the toolchain names the checks use.
set -euo pipefail
cd "$(dirname "$0")/.."

# The nightly that runs Miri: dated, so that a new nightly cannot break a
# check that passed. Move it forward on purpose, with the checks run again.
MIRI_NIGHTLY="nightly-2026-10-30"
# The oldest supported Rust, from the workspace manifest.
MSRV="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
[ -n "$MSRV" ] || { echo "setup: no rust-version in Cargo.toml" >&2; exit 1; }

if [ "${1:-}" = "--print-toolchains" ]; then
  echo "stable $MSRV $MIRI_NIGHTLY"
  exit 0
fi

say() { printf 'setup: %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------
# package: why the tests need it
PACKAGES=(
  "build-essential" # gcc, g++, make: the C and C++ API tests compile the examples
  "pkg-config"      # the C tests build through ringtrace.pc
  "ca-certificates" # rustup downloads over https
  "curl"            # rustup, when there is no Rust at all
  "git"             # scripts/newcomer.sh clones the repository
  "python3"         # the Perfetto export check; scripts/module_graph.py
  "python3-venv"    # the Python checkers' own environment (below): Perfetto's protos
  "babeltrace2"     # interoperability tests: babeltrace2 must read every trace
  "lttng-tools"     # the LTTng-UST reading test records with a real session daemon; the relay and rotation tests stream to a real lttng-relayd
  "liblttng-ust-dev" # ... and builds a program with LTTng-UST tracepoints (and its shipped examples)
  "liblttng-ust1"    # LTTng-UST's helper libraries (libc, pthread, cyg-profile, dl) the ringtrace-lttng-ust tests preload
  "binutils"        # objdump: the LTTng-UST library's exported symbols checked against LTTng-UST's; addr2line, objcopy, strip: the symbol tests (gcc pulls it in today)
  "cmake"           # LTTng-UST's cmake-multiple-shared-libraries example is built with it
  "liburcu-dev"     # the RCU benchmark links liburcu (benchmarks are built)
  "mount"           # the full-disk tests mount a tmpfs
  "passwd"          # useradd: the hostile-directory and setuid tests make a second user
)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for entry in "${PACKAGES[@]}"; do
    p="${entry%% *}"
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
      SUDO=()
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      SUDO=(sudo -n)
    else
      echo "setup: these Debian packages are missing: ${missing[*]}" >&2
      echo "setup: install them (sudo apt-get install ${missing[*]}) or run this as root" >&2
      exit 1
    fi
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  # Not Debian: name what is missing instead of guessing a package manager.
  for tool in cc c++ pkg-config git python3 babeltrace2 curl lttng lttng-sessiond lttng-relayd; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  python3 -c 'import venv, ensurepip' 2>/dev/null || missing+=("python3 venv module")
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: not a Debian system and these are missing: ${missing[*]}; install them, and liburcu" >&2
    exit 1
  fi
fi

# --- Rust ------------------------------------------------------------------
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
if ! command -v rustup >/dev/null 2>&1; then
  if command -v cargo >/dev/null 2>&1; then
    echo "setup: this Rust ($(cargo --version)) is not managed by rustup, so the checks' toolchains" >&2
    echo "setup: ($MSRV, stable, $MIRI_NIGHTLY with Miri) cannot be installed; install rustup (https://rustup.rs)" >&2
    exit 1
  fi
  say "no Rust: installing rustup"
  # rustup-init from the host the toolchains themselves come from.
  init="$(mktemp -d)/rustup-init"
  curl --proto '=https' --tlsv1.2 -sSf -o "$init" \
    "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"
  chmod +x "$init"
  "$init" -y --no-modify-path --profile minimal --default-toolchain none >/dev/null
fi

installed="$(rustup toolchain list)"
# toolchain NAME COMPONENT...: installs NAME and the components it lacks.
toolchain() {
  local name="$1"
  shift
  if ! grep -q "^$name-" <<<"$installed"; then
    say "installing Rust $name"
    local comps=""
    [ "$#" -gt 0 ] && comps="--component $(IFS=,; echo "$*")"
    # shellcheck disable=SC2086
    rustup toolchain install "$name" --profile minimal $comps --no-self-update
    return
  fi
  local have
  have="$(rustup component list --installed --toolchain "$name")"
  for c in "$@"; do
    grep -q "^$c" <<<"$have" || rustup component add "$c" --toolchain "$name"
  done
}
toolchain stable clippy rustfmt
toolchain "$MSRV"
toolchain "$MIRI_NIGHTLY" miri rust-src
# Miri's own standard library build (quiet when already done).
cargo "+$MIRI_NIGHTLY" miri setup >/dev/null 2>&1 || cargo "+$MIRI_NIGHTLY" miri setup

# --- Python ----------------------------------------------------------------
# The checkers' own environment, versions pinned: `perfetto` carries
# Perfetto's generated trace protos (perfetto_trace_pb2, the messages
# trace_processor reads), which need protobuf 6.31 or later, newer than
# Debian's python3-protobuf; `duckdb` queries the Parquet export;
# `barectf` generates the tracers of the barectf fixtures
# (scripts/barectf_fixtures.sh). barectf 3.1.2 asks for PyYAML below 6,
# whose source no longer builds with today's setuptools: its other
# requirements are installed first (PyYAML 6, whose API it uses alike),
# then barectf without them.
PYENV="target/python"
PYPKGS=("perfetto==0.59.1" "protobuf==6.31.1" "duckdb==2.0.1"
  "jinja2==3.1.6" "jsonschema==3.2.0" "pyyaml==6.0.2" "termcolor==1.1.0")
if ! "$PYENV/bin/python" -c 'import perfetto.protos.perfetto.trace.perfetto_trace_pb2, duckdb, barectf' >/dev/null 2>&1; then
  say "installing the Python checkers' environment in $PYENV: ${PYPKGS[*]} barectf==3.1.2"
  python3 -m venv "$PYENV"
  "$PYENV/bin/pip" install --quiet --disable-pip-version-check "${PYPKGS[@]}"
  "$PYENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "barectf==3.1.2"
fi
