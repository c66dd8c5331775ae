#!/usr/bin/env bash
# Consumer tests: edgellm used the way a user installs it, from a temporary folder outside this
# checkout, with nothing from the tree but what was installed or packed (docs/install.md).
#   native   `cmake --install build` into a prefix; nothing in it names this tree (grep, RUNPATHs);
#            tests/consumer/consumer.cc built with find_package(edgellm) (shared and static) and
#            with pkg-config (edgellm, edgellm-static); the installed CLI with no other setup,
#            also after the prefix is moved; one version everywhere
#   npm      scripts/dist.sh packs the npm tarball (portable linux-x64 addon, linux-arm64 from
#            build-aarch64/); an empty npm project installs it and runs generate and a
#            conversation; its types compile (tsc --strict); a platform without a prebuild gets
#            a clear error
#   aarch64  `cmake --install build-aarch64` (scripts/cross.sh aarch64 builds it); the consumer
#            cross-built against it with find_package and run under qemu-aarch64, and the
#            installed aarch64 CLI
# Every program prints a greedy answer to one of the main job's prompts, which must be the text
# `bash scripts/main.sh PROMPT` prints.
#   scripts/consumer.sh [native|npm|aarch64]...    (default: all three)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '\n==> %s\n' "$*" >&2; }
die() { echo "consumer: $*" >&2; exit 1; }
ok() { echo "consumer: $*" >&2; }

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(native npm aarch64)
for s in "${stages[@]}"; do
  case $s in native|npm|aarch64) ;; *) die "unknown stage '$s' (native, npm or aarch64)";; esac
done
[ -x build/bin/edgellm ] || die "build/bin/edgellm missing: run scripts/setup.sh first"

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
jobs="${EDGELLM_JOBS:-$(nproc)}"
tmp=$(mktemp -d /tmp/edgellm-consumer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
version=$(node -p "require('./bindings/node/package.json').version")
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
prompt="用一句话介绍端侧大模型。"

expected=
reference() {  # the main job's text for $prompt, once
  [ -n "$expected" ] && return
  expected=$(bash scripts/main.sh "$prompt" 2>/dev/null)
  [ -n "$expected" ] || die "scripts/main.sh printed no text"
  ok "reference: scripts/main.sh \"$prompt\" -> $expected"
}
same_text() {  # same_text WHAT ACTUAL
  reference
  [ "$2" = "$expected" ] || die "$1 printed '$2', scripts/main.sh printed '$expected'"
  ok "$1: the main job's text"
}
# A copy of the consumer app in its own folder, as an app developer's project would be.
app_copy() {
  mkdir -p "$tmp/app"
  cp tests/consumer/CMakeLists.txt tests/consumer/consumer.cc "$tmp/app/"
}
# Nothing under $1 names this checkout: no file holds its path, no ELF has a RUNPATH into it.
check_clean() {
  local hits
  hits=$(grep -rlF "$root" "$1" || true)
  [ -z "$hits" ] || die "installed files name the source or build tree ($root): $hits"
  local f rp
  while IFS= read -r f; do
    rp=$(readelf -d "$f" 2>/dev/null | grep -E 'R(UN)?PATH' || true)
    case $rp in *"$root"*) die "$f has a RUNPATH into the tree: $rp";; esac
  done < <(find "$1" -type f \( -name '*.so*' -o -name '*.node' -o -perm -u+x \))
  ok "$(basename "$1"): $(find "$1" -type f | wc -l) files, none names $root (grep -r, readelf -d)"
}
check_install() {  # check_install PREFIX: the layout docs/install.md promises
  local p=$1 f
  for f in include/edgellm/edgellm.h lib/libedgellm.so.$version lib/libedgellm.a bin/edgellm \
           lib/cmake/edgellm/edgellmConfig.cmake lib/cmake/edgellm/edgellmConfigVersion.cmake \
           lib/pkgconfig/edgellm.pc lib/pkgconfig/edgellm-static.pc \
           share/edgellm/edgellm-tiny-F32.gguf share/doc/edgellm/LICENSE.llama.cpp; do
    [ -e "$p/$f" ] || die "the install lacks $f"
  done
  local soname
  soname=$(readelf -d "$p/lib/libedgellm.so.$version" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ "$soname" = "libedgellm.so.${version%.*}" ] || die "SONAME is '$soname', expected libedgellm.so.${version%.*}"
  [ -L "$p/lib/$soname" ] || die "the install lacks the SONAME link lib/$soname"
  # llama.cpp is inside libedgellm.so, its symbols hidden: another llama.cpp in the app cannot clash.
  local leaked
  leaked=$(nm -D --defined-only "$p/lib/libedgellm.so.$version" | grep -cE ' (llama|ggml|gguf)_' || true)
  [ "$leaked" = 0 ] || die "libedgellm.so exports $leaked llama.cpp/ggml symbols"
  # (grep -c reads all of nm's output: with -q, pipefail would see nm's SIGPIPE.)
  [ "$(nm -DC --defined-only "$p/lib/libedgellm.so.$version" | grep -c 'edgellm::Model::Load(')" -gt 0 ] ||
    die "libedgellm.so does not export edgellm::Model::Load"
  ok "$(basename "$p"): headers, $soname, libedgellm.a ($(du -m "$p/lib/libedgellm.a" | cut -f1) MiB), CMake package, pkg-config, CLI, default model; no llama.cpp symbol exported"
}

run_native() {
  step "native: cmake --install build --prefix $tmp/P"
  cmake --build build -j "$jobs" --target edgellm_shared edgellm_static_dist edgellm_cli >&2
  cmake --install build --prefix "$tmp/P" >/dev/null
  check_install "$tmp/P"
  check_clean "$tmp/P"

  step "native: one version ($version) everywhere"
  local v
  v=$("$tmp/P/bin/edgellm" --version)
  case $v in "edgellm $version (commit $commit), llama.cpp "*) ;; *) die "--version says '$v'";; esac
  grep -q "^## $version " CHANGELOG.md || die "CHANGELOG.md has no '## $version' entry"
  grep -q "\"version\": \"$version\"" bindings/harmonyos/edgellm/oh-package.json5 ||
    die "the HAR's oh-package.json5 is not at $version: node bindings/harmonyos/gen.mjs"
  grep -q "^Version: $version$" "$tmp/P/lib/pkgconfig/edgellm.pc" || die "edgellm.pc is not at $version"
  ok "$v; CHANGELOG.md, the HAR, edgellm.pc and the CMake package agree"

  step "native: a C++ app with find_package(edgellm CONFIG REQUIRED)"
  app_copy
  cmake -S "$tmp/app" -B "$tmp/app/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/P" >/dev/null
  cmake --build "$tmp/app/build" >/dev/null
  same_text "find_package, edgellm::edgellm (libedgellm.so)" "$(cd "$tmp" && "$tmp/app/build/consumer" "$prompt" 2>/dev/null)"
  same_text "find_package, edgellm::edgellm_static (libedgellm.a)" "$(cd "$tmp" && "$tmp/app/build/consumer_static" "$prompt" 2>/dev/null)"

  step "native: the same app with pkg-config"
  local pc=(env PKG_CONFIG_PATH="$tmp/P/lib/pkgconfig" pkg-config)
  local model
  model=$("${pc[@]}" --variable=default_model edgellm)
  # shellcheck disable=SC2046  # pkg-config's output is meant to be split
  c++ -std=c++20 -O2 "$tmp/app/consumer.cc" -o "$tmp/app/pc_shared" -DEDGELLM_DEFAULT_MODEL="\"$model\"" \
    $("${pc[@]}" --cflags --libs edgellm) -Wl,-rpath,"$("${pc[@]}" --variable=libdir edgellm)"
  same_text "pkg-config edgellm" "$(cd "$tmp" && "$tmp/app/pc_shared" "$prompt" 2>/dev/null)"
  # shellcheck disable=SC2046
  c++ -std=c++20 -O2 "$tmp/app/consumer.cc" -o "$tmp/app/pc_static" -DEDGELLM_DEFAULT_MODEL="\"$model\"" \
    $("${pc[@]}" --cflags --libs edgellm-static)
  [ "$(readelf -d "$tmp/app/pc_static" | grep -c 'libedgellm')" = 0 ] || die "pc_static links libedgellm.so"
  same_text "pkg-config edgellm-static" "$(cd "$tmp" && "$tmp/app/pc_static" "$prompt" 2>/dev/null)"

  step "native: the installed CLI, no -m, a bare environment"
  local cli=(env -i PATH=/usr/bin:/bin HOME="$tmp")
  same_text "P/bin/edgellm run" "$(cd "$tmp" && "${cli[@]}" "$tmp/P/bin/edgellm" run -p "$prompt" --chat --temp 0 -n 64 -q)"
  mv "$tmp/P" "$tmp/moved"
  same_text "the CLI of a moved install" "$(cd "$tmp" && "${cli[@]}" "$tmp/moved/bin/edgellm" run -p "$prompt" --chat --temp 0 -n 64 -q)"
  mv "$tmp/moved" "$tmp/P"
}

run_npm() {
  step "npm: pack (scripts/dist.sh)"
  local tgz want_arm64=0
  for s in "${stages[@]}"; do [ "$s" = aarch64 ] && want_arm64=1; done
  tgz=$(bash scripts/dist.sh "$tmp/pkg")
  local files
  files=$(tar tzf "$tgz")
  for f in package/index.js package/index.d.ts package/package.json package/LICENSE.llama.cpp \
           package/prebuilds/linux-x64/edgellm.node; do
    grep -qx "$f" <<<"$files" || die "the tarball lacks $f"
  done
  if [ $want_arm64 = 1 ]; then
    grep -qx package/prebuilds/linux-arm64/edgellm.node <<<"$files" ||
      die "the tarball lacks the linux-arm64 addon (scripts/cross.sh aarch64 builds it)"
  fi
  grep -q '^package/build/' <<<"$files" && die "the tarball carries build/ from this checkout"
  ok "$(basename "$tgz"): $(du -k "$tgz" | cut -f1) KiB; $(grep -c '^package/prebuilds/.*\.node$' <<<"$files") prebuilt addons"

  step "npm: the prebuilds need only the system's libraries"
  mkdir -p "$tmp/unpacked" && tar xzf "$tgz" -C "$tmp/unpacked"
  local x64="$tmp/unpacked/package/prebuilds/linux-x64/edgellm.node" rp
  rp=$(readelf -d "$x64" | sed -n 's/.*Library runpath: \[\(.*\)\]/\1/p')
  [ "$rp" = '$ORIGIN' ] || die "the linux-x64 addon's RUNPATH is '$rp', expected \$ORIGIN alone"
  [ "$(ldd "$x64" | grep -c 'not found')" = 0 ] || die "the linux-x64 addon has unresolved libraries: $(ldd "$x64")"
  # Portable: no AVX-512 (zmm registers), which -march=native would use on this machine.
  local zmm
  zmm=$(objdump -d --no-show-raw-insn "$x64" | grep -c zmm || true)
  [ "$zmm" = 0 ] || die "the linux-x64 addon uses AVX-512 ($zmm instructions): not portable"
  local glibc
  glibc=$(objdump -T "$x64" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
  if [ $want_arm64 = 1 ]; then
    file -b "$tmp/unpacked/package/prebuilds/linux-arm64/edgellm.node" | grep -q aarch64 ||
      die "prebuilds/linux-arm64/edgellm.node is not an aarch64 object"
  fi
  check_clean "$tmp/unpacked"
  ok "linux-x64: RUNPATH \$ORIGIN, every library resolved, no AVX-512, needs $glibc"

  step "npm: an empty project installs the tarball"
  mkdir -p "$tmp/napp"
  (cd "$tmp/napp" && npm init -y >/dev/null &&
   npm install --no-audit --no-fund --prefer-offline --loglevel=error "$tgz" >&2)
  cp tests/consumer/node/consumer.cjs tests/consumer/node/consumer.ts "$tmp/napp/"
  local out
  build/bin/edgellm synth --preset minilm-l6 --type Q8_0 -o "$tmp/minilm.gguf" >/dev/null 2>&1 ||
    die "edgellm synth --preset minilm-l6 failed"
  out=$(cd "$tmp/napp" && node consumer.cjs "$tmp/P/share/edgellm/edgellm-tiny-F32.gguf" "$prompt" \
        "$tmp/minilm.gguf" "$tmp/napp-index")
  local field
  field() { node -e 'const o = JSON.parse(process.argv[1]); const v = process.argv[2].split(".").reduce((a, k) => a[k], o); console.log(v)' "$out" "$1"; }
  case $(field package) in "$tmp/napp/node_modules/edgellm/"*) ;; *) die "require('edgellm') resolved to $(field package)";; esac
  [ "$(field version.edgellm)" = "$version" ] || die "the addon says version $(field version.edgellm)"
  [ "$(field version.commit)" = "$commit" ] || die "the addon says commit $(field version.commit)"
  same_text "npm: model.generate" "$(field generate)"
  same_text "npm: onToken's stream" "$(field streamed)"
  same_text "npm: conversation, turn 1" "$(field turn1)"
  [ -n "$(field turn2)" ] && [ "$(field turn2Reused)" -gt 0 ] ||
    die "conversation turn 2: '$(field turn2)', reused $(field turn2Reused) tokens"
  ok "npm: conversation, turn 2 reused $(field turn2Reused) tokens of turn 1"
  [ "$(field dims)" = 384 ] && [ "$(field float32)" = true ] && [ "$(field found)" = notes.txt ] ||
    die "embed/index: dims $(field dims), Float32Array $(field float32), found '$(field found)'"
  ok "npm: loadEmbedder + openIndex: 384-dim Float32Array, cosine $(field cosine), '账本' found in notes.txt"

  step "npm: the package's types (tsc --strict)"
  (cd "$tmp/napp" && node "$root/bindings/node/test/node_modules/typescript/bin/tsc" --strict \
     --noEmit --target es2022 --module node16 --moduleResolution node16 consumer.ts) >&2 ||
    die "an app's TypeScript against the packed index.d.ts does not compile (above)"
  ok "npm: consumer.ts compiles against the package's index.d.ts"

  step "npm: a platform without a prebuild"
  local err
  err=$(cd "$tmp/napp" && node -e "Object.defineProperty(process, 'arch', { value: 'riscv64' });
    try { require('edgellm'); console.log('loaded'); } catch (e) { console.log(e.code + ': ' + e.message); }")
  case $err in "ERR_EDGELLM_ADDON_MISSING: edgellm: no native addon for linux-riscv64"*"Build one"*) ;;
    *) die "a missing prebuild gave: $err";; esac
  ok "npm: linux-riscv64 -> $err"
}

run_aarch64() {
  step "aarch64: cmake --install build-aarch64 (scripts/cross.sh aarch64 builds it)"
  [ -f build-aarch64/build.ninja ] || die "build-aarch64/ missing: run bash scripts/cross.sh aarch64 first"
  command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 missing: run bash scripts/cross.sh aarch64 first"
  cmake --build build-aarch64 -j "$jobs" --target edgellm_shared edgellm_static_dist edgellm_cli >&2
  cmake --install build-aarch64 --prefix "$tmp/P64" >/dev/null
  file -b "$tmp/P64/lib/libedgellm.so.$version" | grep -q aarch64 || die "P64's libedgellm.so is not aarch64"
  check_install "$tmp/P64"
  check_clean "$tmp/P64"

  step "aarch64: the app cross-built with find_package(edgellm), run under qemu"
  app_copy
  cp cmake/aarch64-linux-gnu.cmake "$tmp/app/aarch64.cmake"  # the app's own toolchain file
  cmake -S "$tmp/app" -B "$tmp/app/build64" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$tmp/app/aarch64.cmake" -DCMAKE_PREFIX_PATH="$tmp/P64" >/dev/null
  cmake --build "$tmp/app/build64" >/dev/null
  file -b "$tmp/app/build64/consumer" | grep -q aarch64 || die "the cross-built consumer is not aarch64"
  same_text "aarch64 find_package, libedgellm.so, qemu" "$(cd "$tmp" && qemu-aarch64 "$tmp/app/build64/consumer" "$prompt" 2>/dev/null)"
  same_text "aarch64 find_package, libedgellm.a, qemu" "$(cd "$tmp" && qemu-aarch64 "$tmp/app/build64/consumer_static" "$prompt" 2>/dev/null)"
  same_text "aarch64 P/bin/edgellm run, qemu" "$(cd "$tmp" && qemu-aarch64 "$tmp/P64/bin/edgellm" run -p "$prompt" --chat --temp 0 -n 64 -q)"
}

# npm's consumer loads the model the native install put in place.
for s in "${stages[@]}"; do
  if [ "$s" = npm ] && [ ! -d "$tmp/P" ]; then
    cmake --install build --prefix "$tmp/P" >/dev/null
  fi
  "run_$s"
done
echo "consumer: ${stages[*]}: every check passed" >&2
