#!/usr/bin/env bash
# Fetches llama.cpp's source, pinned by deps/llama.cpp.lock, into third_party/llama.cpp.
# Idempotent: does nothing when the checkout already sits at the pinned commit.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=/dev/null
source <(grep -E '^[A-Z_]+=' "$root/deps/llama.cpp.lock")
dest="$root/third_party/llama.cpp"
cache="$root/third_party/cache"

if [ -d "$dest/.git" ] && [ "$(git -C "$dest" rev-parse HEAD 2>/dev/null)" = "$LLAMA_COMMIT" ]; then
  echo "[fetch] llama.cpp already at $LLAMA_TAG ($LLAMA_COMMIT)"
  exit 0
fi

mkdir -p "$cache"
tgz="$cache/${NPM_PACKAGE}-${NPM_VERSION}.tgz"
if [ ! -f "$tgz" ]; then
  echo "[fetch] npm pack ${NPM_PACKAGE}@${NPM_VERSION}"
  (cd "$cache" && npm pack --silent "${NPM_PACKAGE}@${NPM_VERSION}" >/dev/null)
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$NPM_INTEGRITY" ]; then
  echo "[fetch] ERROR: integrity mismatch for $tgz" >&2
  echo "  expected $NPM_INTEGRITY" >&2
  echo "  got      $got" >&2
  echo "  The tarball was altered or the registry served something else; delete it and retry." >&2
  rm -f "$tgz"
  exit 1
fi
echo "[fetch] sha512 verified"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tar -xzf "$tgz" -C "$work" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
grep -q "\"$LLAMA_TAG\"" "$work/package/llama/llama.cpp.info.json" || {
  echo "[fetch] ERROR: bundle is not llama.cpp $LLAMA_TAG" >&2; exit 1; }
rm -rf "$dest.tmp"
git -c advice.detachedHead=false clone -q "$work/package/llama/gitRelease.bundle" "$dest.tmp"
head="$(git -C "$dest.tmp" rev-parse HEAD)"
if [ "$head" != "$LLAMA_COMMIT" ]; then
  echo "[fetch] ERROR: bundle HEAD $head != pinned $LLAMA_COMMIT" >&2; exit 1
fi
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "[fetch] llama.cpp $LLAMA_TAG checked out at third_party/llama.cpp"
