#!/usr/bin/env bash
# Sets everything up, builds, and runs every test (unit, model, CLI, and their ASan+UBSan
# twins) in one ctest invocation.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
printf '\n==> running tests\n' >&2
ctest --test-dir build --output-on-failure -j "${EDGELLM_TEST_JOBS:-2}" --timeout 900
