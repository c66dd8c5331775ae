#!/usr/bin/env bash
# Sets up a Debian 12 machine (as root) and builds edgellm.
#   scripts/setup.sh            build everything (library, CLI, tests, bench, llama.cpp references)
#   scripts/setup.sh TARGET...  build only these CMake targets (e.g. edgellm_cli)
# Idempotent and incremental: packages already present are skipped, llama.cpp is fetched once,
# and ccache keeps rebuilds short.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

step() { printf '\n==> %s\n' "$*" >&2; }

pkgs=(build-essential cmake ninja-build ccache git ca-certificates openssl
      libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
      libcurl4-openssl-dev libssl-dev libcpp-httplib-dev libsqlite3-dev
      pkg-config libopenblas-openmp-dev   # training's gradient matrix products
      clang-14 libclang-rt-14-dev nginx   # clang: the fuzzer; nginx: store tests
      chromium fonts-noto-cjk)            # the web demo's end-to-end test (CJK text renders)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# Node's C headers for the addon: part of nodesource's nodejs, in libnode-dev on Debian's.
if ! command -v node >/dev/null 2>&1 ||
   [ ! -f "$(node -p "require('path').resolve(process.execPath, '../../include/node')" 2>/dev/null)/node_api.h" ]; then
  missing+=(libnode-dev)
fi
if [ ${#missing[@]} -gt 0 ]; then
  step "installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "setup: need root to install ${missing[*]} (run as root or install them first)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

step "fetching llama.cpp (pinned in deps/llama.cpp.lock)"
bash scripts/fetch_llama.sh

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
# Paths under the checkout are hashed relative to it, so a fresh clone in another folder
# (CI) reuses the compiled llama.cpp objects instead of rebuilding them cold.
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1
jobs="${EDGELLM_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  step "configuring build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGELLM_SANITIZE=ON >/dev/null
fi
step "building ${*:-everything} (first build compiles llama.cpp: several minutes on 2 cores)"
if [ $# -gt 0 ]; then
  cmake --build build -j "$jobs" --target "$@"
else
  cmake --build build -j "$jobs"
fi
if [ $# -eq 0 ]; then
  step "installing the web demo's test dependency (web/: npm ci, playwright-core)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
  step "installing the Node tests' dependencies (bindings/node/test: npm ci, ajv, openai)"
  (cd bindings/node/test && npm ci --no-audit --no-fund --loglevel=error)
  step "installing the ArkTS page checker (bindings/harmonyos/check: npm ci, ohos-typescript)"
  (cd bindings/harmonyos/check && npm ci --no-audit --no-fund --loglevel=error)
fi
