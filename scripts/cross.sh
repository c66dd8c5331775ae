#!/usr/bin/env bash
# The HarmonyOS shape, built and checked on this x86-64 Debian machine (docs/harmonyos.md):
#   clang    clang 15 + libc++ 15 (OpenHarmony 4.x's compiler generation) build the library and
#            the addon (build-clang/); the addon's greedy text on the main job's five prompts
#            equals the gcc CLI's.
#   ohos     compile only, for --target=aarch64-linux-ohos -D__OHOS__ with clang 15 and libc++ 15
#            against musl (Debian's musl-dev:arm64 for OpenHarmony's libc): every libedgellm
#            source, the llama.cpp it links (ggml, ggml-cpu's arm NEON code, llama, common,
#            mtmd) and the binding at NAPI_VERSION 8 (build-ohos/obj/). No linking, no
#            OpenHarmony NDK, no HarmonyOS runtime here.
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
      libgomp1:arm64   # ggml-cpu runs on OpenMP: its arm64 runtime, for qemu
      musl-dev:arm64   # ohos: musl's headers for aarch64, standing in for OpenHarmony's libc
      libomp-15-dev)   # ohos: clang 15's <omp.h> (ggml-cpu is compiled with -fopenmp)
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
  # llama.cpp's host-side code (llama, common, mtmd; not ggml's kernels) at -O1: this build is
  # a check, never shipped, and -O1 compiles in a fraction of -O3's time; the text it generates
  # is compared with the gcc build's. (The aarch64 build is packed for npm: -O3 there.)
  [ -f build-clang/build.ninja ] ||
    cmake -S . -B build-clang "${lean[@]}" -DEDGELLM_BUILD_TESTS=OFF -DEDGELLM_BUILD_CLI=OFF \
      -DEDGELLM_LLAMA_HOST_OPT=-O1 \
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

# The ohos stage's compiles, one object each: LANG SRC OBJ. Its flags: build-ohos/LANG.rsp (target
# and sysroot) and OBJ.rsp (the source's own, from build/compile_commands.json); its diagnostics
# go to OBJ.log, printed when it fails.
ohos_cc() {
  local cc=clang-15
  [ "$1" = c++ ] && cc=clang++-15
  rm -f "$3"
  if ! ccache "$cc" "@build-ohos/$1.rsp" "@$3.rsp" -MD -MF "$3.d" -c "$2" -o "$3" 2>"$3.log"; then
    cat "$3.log" >&2
    echo "cross: ohos: $2 does not compile (above)" >&2
    return 1
  fi
}
export -f ohos_cc

run_ohos() {
  step "aarch64-linux-ohos against musl: libedgellm, llama.cpp and the binding, compile only (build-ohos/)"
  local out=build-ohos musl=/usr/include/aarch64-linux-musl v1=/usr/lib/llvm-15/include/c++/v1
  local t0=$SECONDS node_inc
  node_inc=$(node -p "require('path').resolve(process.execPath, '../../include/node')")
  [ -f build/compile_commands.json ] || die "build/compile_commands.json missing: run scripts/setup.sh"
  [ -f "$musl/stdlib.h" ] || die "$musl missing: the musl-dev:arm64 package"
  # No OpenHarmony NDK here. Its sysroot is stood in for by, in this search order: libc++ 15's
  # headers (as a libc++ built for musl: _LIBCPP_HAS_MUSL_LIBC), clang's own headers (arm_neon.h,
  # omp.h), Debian's musl for aarch64, the kernel's UAPI headers for arm64 (llama.cpp's common/
  # includes <linux/limits.h>; the OHOS sysroot has them too), and the headers of Debian's arm64
  # OpenSSL, curl and SQLite, which an app builds for OHOS itself (docs/harmonyos.md step 3).
  # -nostdlibinc keeps every other host header out; the .d files are checked for that below.
  local sys=$out/sysroot
  rm -rf "$sys" "$out"/*.o
  mkdir -p "$sys/kernel" "$sys/deps-arch" "$sys/deps"
  local d
  for d in linux asm asm-generic; do ln -s "/usr/aarch64-linux-gnu/include/$d" "$sys/kernel/$d"; done
  for d in openssl curl; do ln -s "/usr/include/aarch64-linux-gnu/$d" "$sys/deps-arch/$d"; done
  for d in openssl sqlite3.h nlohmann; do ln -s "/usr/include/$d" "$sys/deps/$d"; done
  # clang 15 does not know the ohos environment: the script defines __OHOS__ and undefines
  # __gnu_linux__, as OpenHarmony's clang does.
  local target=(--target=aarch64-linux-ohos -D__OHOS__ -U__gnu_linux__ -nostdlibinc
                -idirafter "$musl" -idirafter "$sys/kernel" -idirafter "$sys/deps-arch"
                -idirafter "$sys/deps")
  printf "'%s'\n" "${target[@]}" >"$out/c.rsp"
  printf "'%s'\n" "${target[@]}" -nostdinc++ -isystem "$v1" -D_LIBCPP_HAS_MUSL_LIBC >"$out/c++.rsp"

  # What libedgellm.so links, with each source's defines, include paths and warnings as the
  # gcc build compiles it (build/compile_commands.json): libedgellm (its llama.cpp glue
  # included) and llama.cpp's ggml, ggml-base, ggml-cpu (arch/arm/ for arch/x86/, at the
  # -march docs/harmonyos.md gives phones), llama, common and its httplib, mtmd and its hashes.
  # Not OpenBLAS (the trainer's option: no OHOS build of it here).
  local jobs_file=$out/jobs.tsv
  node scripts/ohos_jobs.cjs "$out" armv8.2-a+dotprod+fp16 >"$jobs_file" || die "could not read build/compile_commands.json"
  # Every library source (src/**/*.cc but tests), or build/ is older than src/.
  [ "$(awk -F'\t' '$1 == "edgellm" && $3 ~ /^src\// {print $3}' "$jobs_file" | sort)" = \
    "$(find src -name '*.cc' ! -name '*_test.cc' | sort)" ] ||
    die "build/compile_commands.json does not list src/'s sources: rebuild build/ (scripts/setup.sh)"
  # The binding, at NAPI_VERSION 8 against Node's headers and bindings/harmonyos/shim.
  local src obj
  for src in bindings/node/src/*.cc; do
    obj=$out/obj/$src.o
    mkdir -p "$(dirname "$obj")"
    printf "'%s'\n" -std=c++20 -O2 -fPIC -Wall -Wextra -Werror -Wno-missing-field-initializers \
      -DNAPI_VERSION=8 -Ibindings/harmonyos/shim -isystem "$node_inc" -Iinclude >"$obj.rsp"
    printf 'binding\tc++\t%s\t%s\n' "$src" "$obj" >>"$jobs_file"
  done

  # Niced, two at a time by default: this is a background check beside the other builds.
  local total
  total=$(wc -l <"$jobs_file")
  echo "cross: ohos: compiling $total sources (${EDGELLM_OHOS_JOBS:-2} at a time)" >&2
  cut -f2-4 "$jobs_file" | tr '\t' '\n' |
    nice -n 15 xargs -d '\n' -n 3 -P "${EDGELLM_OHOS_JOBS:-2}" bash -c 'ohos_cc "$@"' _ ||
    die "ohos: $(cut -f4 "$jobs_file" | while read -r o; do [ -f "$o" ] || echo x; done | wc -l) of $total sources do not compile (above)"

  # Every object is aarch64, and no header came from outside the stand-in sysroot (a glibc one).
  local wrong leaked
  wrong=$(cut -f4 "$jobs_file" | xargs -d '\n' file | grep -v ':[[:space:]]*ELF 64-bit LSB relocatable, ARM aarch64,' || true)
  [ -z "$wrong" ] || die "not aarch64 objects: $wrong"
  leaked=$(cut -f4 "$jobs_file" | sed 's/$/.d/' | xargs -d '\n' cat | tr -s ' \\' '\n\n' |
           grep '^/' | grep -v -e '^/usr/lib/llvm-15/' -e "^$musl/" -e "^$node_inc/" | sort -u || true)
  [ -z "$leaked" ] || die "headers from outside the musl sysroot: $(head -5 <<<"$leaked")"
  n_jobs() { awk -F'\t' -v g="$1" -v p="$2" '$1 == g && $3 ~ p' "$jobs_file" | wc -l; }
  local warned
  warned=$(awk -F'\t' '$1 == "llama.cpp" {print $4 ".log"}' "$jobs_file" |
           xargs -d '\n' grep -l 'warning:' | wc -l || true)
  echo "cross: ohos: $(n_jobs edgellm '') edgellm sources ($(n_jobs edgellm '^src/') in src/, the" \
       "generated build_info.cc), $(n_jobs llama.cpp '') llama.cpp sources and $(n_jobs binding '')" \
       "binding sources compiled for aarch64 against musl in $((SECONDS - t0)) s" \
       "(llama.cpp: $warned with clang warnings, in $out/obj/**/*.log)" >&2
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
