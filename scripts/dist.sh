#!/usr/bin/env bash
# The npm package: builds the portable linux-x64 addon (build-dist/: llama.cpp without
# -march=native, for any x86-64 CPU with AVX2, FMA and F16C) and runs `npm pack` in
# bindings/node, whose prepack step (bindings/node/prebuilds.js) puts it in prebuilds/linux-x64/,
# with the linux-arm64 addon of build-aarch64/ (bash scripts/cross.sh aarch64) when there is one.
#   scripts/dist.sh [OUT_DIR]    (default: dist/) the tarball's path goes to stdout
# build/ (scripts/setup.sh) stays a -march=native build for this machine, as llama.cpp's is.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${1:-$root/dist}"
step() { printf '\n==> %s\n' "$*" >&2; }

[ -f third_party/llama.cpp/CMakeLists.txt ] || bash scripts/fetch_llama.sh >&2
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
step "the portable linux-x64 addon (build-dist/: GGML_NATIVE=OFF, x86-64 with AVX2/FMA/F16C)"
# Flags as build/'s wherever they can be, so ccache shares all but ggml's CPU kernels with it.
cmake -S . -B build-dist -G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGELLM_SANITIZE=OFF \
  -DEDGELLM_BUILD_BENCH=OFF -DEDGELLM_BUILD_REFERENCE_TOOLS=OFF -DEDGELLM_BUILD_TESTS=OFF \
  -DEDGELLM_BUILD_CLI=OFF -DGGML_NATIVE=OFF -DEDGELLM_NODE_OUTPUT_DIR="$root/build-dist/node" >/dev/null
cmake --build build-dist -j "${EDGELLM_JOBS:-$(nproc)}" --target edgellm_node >&2

step "npm pack (bindings/node) into $out"
mkdir -p "$out"
# The JSON report on stdout; prebuilds.js's lines and any error on stderr.
json=$(cd bindings/node && npm pack --json --loglevel=warn --pack-destination "$out")
node -e '
  const [p] = JSON.parse(process.argv[1]);
  const mib = (n) => (n / 1048576).toFixed(1) + " MiB";
  console.error(`dist: ${p.filename}: ${mib(p.size)} packed, ${mib(p.unpackedSize)} unpacked, ${p.entryCount} files`);
  for (const f of p.files) if (f.path.startsWith("prebuilds/")) console.error(`dist:   ${f.path} ${mib(f.size)}`);
  console.log(require("path").join(process.argv[2], p.filename));
' "$json" "$out"
