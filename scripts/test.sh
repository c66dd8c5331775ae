#!/usr/bin/env bash
# Sets everything up, builds, starts the servers the tests need (nginx on loopback), and runs
# every test (unit, model, CLI, store, fuzz, and the ASan+UBSan twins) in one ctest invocation,
# then the Node, web, cross-build and consumer (install, npm tarball) tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
printf '\n==> starting nginx on loopback (store tests pull from a stock server)\n' >&2
read -r EDGELLM_NGINX_URL EDGELLM_NGINX_ROOT < <(bash scripts/nginx.sh start)
export EDGELLM_NGINX_URL EDGELLM_NGINX_ROOT
trap 'bash scripts/nginx.sh stop' EXIT
printf '\n==> running tests\n' >&2
ctest --test-dir build --output-on-failure -j "${EDGELLM_TEST_JOBS:-2}" --timeout 900
printf '\n==> running the Node-API bridge tests (node --test)\n' >&2
node --test bindings/node/test/
printf '\n==> running the web demo end-to-end test (headless Chromium)\n' >&2
node --test web/test/
printf '\n==> the HarmonyOS shape: clang 15 + libc++, aarch64-linux-ohos compile, aarch64 under qemu\n' >&2
bash scripts/cross.sh
printf '\n==> consumer tests: the install, the npm tarball and aarch64, used from outside the tree\n' >&2
bash scripts/consumer.sh
