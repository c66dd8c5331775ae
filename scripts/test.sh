#!/usr/bin/env bash
# Sets everything up, builds, starts the servers the tests need (nginx on loopback), and runs
# every test (unit, model, CLI, store, fuzz, and the ASan+UBSan twins) in one ctest invocation,
# then the Node, web, cross-build and consumer (install, npm tarball) tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
# Each phase says how long the run has taken so far: CI's time budget is checked from the log.
phase() { printf '\n==> [%dm%02ds] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$1" >&2; }
bash scripts/setup.sh
phase 'setup and build done'
printf '\n==> starting nginx on loopback (store tests pull from a stock server)\n' >&2
read -r EDGELLM_NGINX_URL EDGELLM_NGINX_ROOT < <(bash scripts/nginx.sh start)
export EDGELLM_NGINX_URL EDGELLM_NGINX_ROOT
trap 'bash scripts/nginx.sh stop' EXIT
phase 'running tests'
ctest --test-dir build --output-on-failure -j "${EDGELLM_TEST_JOBS:-2}" --timeout 900
phase 'running the Node-API bridge tests (node --test)'
node --test bindings/node/test/
phase 'running the web demo end-to-end test (headless Chromium)'
node --test web/test/
phase 'the HarmonyOS shape: clang 15 + libc++, aarch64-linux-ohos compile, aarch64 under qemu'
bash scripts/cross.sh
phase 'consumer tests: the install, the npm tarball and aarch64, used from outside the tree'
bash scripts/consumer.sh
phase 'all tests passed'
