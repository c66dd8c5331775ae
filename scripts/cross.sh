#!/usr/bin/env bash
# The HarmonyOS shape, built and checked on this x86-64 Debian machine (docs/harmonyos.md):
#   clang    clang 15 + libc++ 15 (OpenHarmony 4.x's compiler generation) build the library and
#            the addon (build-clang/); the addon's greedy text on the main job's five prompts
#            equals the gcc CLI's.
#   ohos     the binding compiled for --target=aarch64-linux-ohos -D__OHOS__ against Node's
#            headers at NAPI_VERSION 8 and bindings/harmonyos/shim (compile only: no HarmonyOS
#            runtime here).
#   aarch64  a cross build for 64-bit ARM with llama.cpp at -march=armv8.2-a+dotprod
#            (build-aarch64/), run under qemu-aarch64: the engine and streaming tests on the tiny
#            fixture, and the main job's five prompts, whose text must equal x86's. It also builds
#            what is installed and packed for aarch64 (libedgellm.so/.a, the npm package's
#            linux-arm64 addon in build-aarch64/node/), which scripts/consumer.sh uses.
#   scripts/cross.sh [clang|ohos|aarch64]...    (default: all three; needs build/ from setup.sh)
# Time under emulation is not a performance figure. ccache keeps the rebuilds short.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '\n==> %s\n' "$*" >&2; }
die() { echo "cross: $*" >&2; exit 1; }

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(clang ohos aarch64)
for s in "${stages[@]}"; do
  case $s in clang|ohos|aarch64) ;; *) die "unknown stage '$s' (clang, ohos or aarch64)";; esac
done
[ -x build/bin/edgellm ] || die "build/bin/edgellm missing: run scripts/setup.sh first"

# ---- packages: clang/libc++ 15, the aarch64 cross compiler, qemu-user, arm64 libraries ----
pkgs=(clang-15 libc++-15-dev libc++abi-15-dev g++-aarch64-linux-gnu qemu-user
      libssl-dev:arm64 libcurl4-openssl-dev:arm64 libsqlite3-dev:arm64 libgtest-dev:arm64 libcpp-httplib-dev:arm64
      libgomp1:arm64)  # ggml-cpu runs on OpenMP: its arm64 runtime, for qemu
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "need root to install ${missing[*]}"
  step "installing Debian packages: ${missing[*]}"
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
jobs="${EDGELLM_JOBS:-$(nproc)}"
# Only what these checks use: no sanitizer twins, benchmarks or llama.cpp reference tools.
lean=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DEDGELLM_SANITIZE=OFF -DEDGELLM_BUILD_BENCH=OFF
      -DEDGELLM_BUILD_REFERENCE_TOOLS=OFF)
model=assets/edgellm-tiny-F32.gguf
prompts=("用一句话介绍端侧大模型。" "Say it in English." "意图：明天上海会下雨吗"
         "city: Wang Fang flies to Chengdu on Friday." "87加99等于多少？")
main_job() {  # main_job CLI [WRAPPER...]: the texts of the main job's five prompts, one JSON line each
  local cli=$1; shift
  for p in "${prompts[@]}"; do
    "$@" "$cli" run -m "$model" -p "$p" --chat --temp 0 -n 64 --json -q 2>/dev/null |
      node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify(JSON.parse(s).text)))'
  done
}
same_text() {  # same_text WHAT EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") >&2 || true
    die "$1: the text differs from the x86 gcc build's (above)"
  fi
  echo "cross: $1: the same text as the x86 gcc build ($(printf '%s' "$3" | wc -c) bytes of JSON)" >&2
}
reference=
x86_reference() {  # the gcc CLI's texts, once, for the stages that compare against them
  [ -n "$reference" ] || reference=$(main_job build/bin/edgellm)
  [ "$(wc -l <<<"$reference")" = 5 ] || die "the x86 reference run gave no text"
}

run_clang() {
  step "clang 15 + libc++ 15: the library and the addon (build-clang/)"
  [ -f build-clang/build.ninja ] ||
    cmake -S . -B build-clang "${lean[@]}" -DEDGELLM_BUILD_TESTS=OFF -DEDGELLM_BUILD_CLI=OFF \
      -DCMAKE_C_COMPILER=clang-15 -DCMAKE_CXX_COMPILER=clang++-15 \
      -DCMAKE_CXX_FLAGS=-stdlib=libc++ -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ \
      -DCMAKE_SHARED_LINKER_FLAGS=-stdlib=libc++ -DCMAKE_MODULE_LINKER_FLAGS=-stdlib=libc++ \
      -DEDGELLM_NODE_OUTPUT_DIR="$root/build-clang/node" >/dev/null
  # No CLI: Debian's libcpp-httplib.so (serve) is built against libstdc++, not libc++.
  cmake --build build-clang -j "$jobs" --target edgellm edgellm_node
  # The main job's five prompts through the clang-built addon in Node.
  local js='(async () => {
    const m = await require(process.argv[1]).Model.load(process.argv[2], { threads: 2 });
    for (const p of process.argv.slice(3)) {
      const r = await m.generate(p, { chat: true, temperature: 0, maxTokens: 64 });
      console.log(JSON.stringify(r.text));
    }
    await m.dispose();
  })()'
  x86_reference
  same_text "clang 15 addon in Node, main job" "$reference" \
    "$(EDGELLM_NODE_ADDON="$root/build-clang/node/edgellm.node" \
       node -e "$js" "$root/bindings/node" "$model" "${prompts[@]}")"
}

run_ohos() {
  step "the binding for aarch64-linux-ohos (-D__OHOS__, NAPI_VERSION 8): compile only"
  local node_inc
  node_inc=$(node -p "require('path').resolve(process.execPath, '../../include/node')")
  mkdir -p build-ohos
  # No OpenHarmony sysroot here: libc++ 15's headers with Debian's aarch64 C headers stand in
  # for the NDK's libc++ and musl (see docs/harmonyos.md for what this does and does not show).
  local flags=(--target=aarch64-linux-ohos -D__OHOS__ -U__gnu_linux__ -std=c++20 -O2 -fPIC
               -Wall -Wextra -Werror -Wno-missing-field-initializers -nostdinc++
               -isystem /usr/lib/llvm-15/include/c++/v1 -isystem /usr/aarch64-linux-gnu/include
               -DNAPI_VERSION=8 -I bindings/harmonyos/shim -isystem "$node_inc" -I include)
  local n=0
  for src in bindings/node/src/*.cc; do
    clang++-15 "${flags[@]}" -c "$src" -o "build-ohos/$(basename "$src" .cc).o"
    n=$((n + 1))
  done
  local arch
  arch=$(file -b build-ohos/addon.o)
  case $arch in *aarch64*) ;; *) die "build-ohos/addon.o is not an aarch64 object: $arch";; esac
  echo "cross: ohos: $n binding sources compiled for aarch64-linux-ohos ($arch)" >&2
}

run_aarch64() {
  step "aarch64 (armv8.2-a+dotprod): cross build (build-aarch64/), tests under qemu-aarch64"
  # The addon is compiled against this machine's Node headers: node_api.h is the same C API on
  # every architecture.
  cmake -S . -B build-aarch64 "${lean[@]}" -DEDGELLM_BUILD_NODE=ON \
    -DEDGELLM_NODE_OUTPUT_DIR="$root/build-aarch64/node" \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
    -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH=armv8.2-a+dotprod >/dev/null
  cmake --build build-aarch64 -j "$jobs" --target edgellm_cli engine_test streamer_test \
    edgellm_shared edgellm_static_dist edgellm_node
  file -b build-aarch64/node/edgellm.node | grep -q aarch64 || die "build-aarch64/node/edgellm.node is not aarch64"
  file -b build-aarch64/bin/edgellm | grep -q aarch64 || die "build-aarch64/bin/edgellm is not aarch64"
  # Under qemu every test but two, which run the same C++ on every architecture and take
  # half of this stage's 4 minutes there: the UTF-8 streaming test's 400 full-vocabulary
  # samples, and the cancel inside one large prompt decode. The x86 builds run both.
  GTEST_FILTER='-EngineTest.StreamedPiecesAreValidUtf8AndReassembleExactly:EngineTest.CancelInsideOneLargeDecodeUsesAbortCallback' \
  ctest --test-dir build-aarch64 --output-on-failure --timeout 900 \
    -R '^(fixtures_setup|engine_test|streamer_test)$'
  x86_reference
  same_text "aarch64 under qemu, main job" "$reference" \
            "$(main_job build-aarch64/bin/edgellm qemu-aarch64)"
}

for s in "${stages[@]}"; do "run_$s"; done
