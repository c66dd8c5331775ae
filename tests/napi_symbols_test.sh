#!/usr/bin/env bash
# napi_symbols_test.sh ADDON LIST: the addon keeps to what HarmonyOS NEXT's NAPI offers.
#   1. every napi_*/node_api_* function the addon imports (nm -D --undefined-only) is in LIST
#      (bindings/harmonyos/napi-api12.txt: the NDK's exports at API 12, source named there);
#   2. none of the calls whose HarmonyOS semantics differ in a way the binding must not meet:
#      napi_create_buffer* (capped at 2 MiB there), napi_get_node_version (sets nothing there),
#      napi_remove_wrap (calls the finalizer there, so the usual remove-then-delete frees twice);
#   3. the addon registers through napi_module_register only: it exports no
#      napi_register_module_v1 (HarmonyOS never looks that up), so Node loads it the same way;
#   4. the check itself catches a missing name (a LIST without one imported name must fail).
set -euo pipefail
addon=$1 list=$2
fail() { echo "napi_symbols_test: $*" >&2; exit 1; }
[[ -f $addon ]] || fail "no addon at $addon: build the edgellm_node target"
[[ -f $list ]] || fail "no symbol list at $list"

imported=$(nm -D --undefined-only "$addon" | awk '{print $NF}' | sed 's/@.*//' |
           grep -E '^(napi_|node_api_)' | sort -u)
[[ -n $imported ]] || fail "the addon imports no napi_* symbol: is $addon a Node-API addon?"
allowed=$(grep -v '^#' "$list" | sed '/^$/d' | sort -u)

check() {  # check ALLOWED: prints the imported names not in ALLOWED
  comm -23 <(printf '%s\n' "$imported") <(printf '%s\n' "$1")
}
missing=$(check "$allowed")
[[ -z $missing ]] || fail "the addon imports calls HarmonyOS NAPI (API 12) does not export:
$missing"

for bad in napi_create_buffer napi_create_buffer_copy napi_create_external_buffer \
           napi_get_node_version napi_remove_wrap; do
  if grep -qx "$bad" <<<"$imported"; then
    fail "the addon calls $bad, whose HarmonyOS semantics differ (see bindings/node/src/napi.h)"
  fi
done

exported=$(nm -D --defined-only "$addon" | awk '{print $NF}')
if grep -qE '^(napi_register_module_v1|node_api_module_get_api_version_v1)$' <<<"$exported"; then
  fail "the addon exports napi_register_module_v1: it must register by napi_module_register only"
fi

# 4: drop one imported name from the list; the check must report exactly that name.
victim=$(head -n1 <<<"$imported")
reported=$(check "$(grep -vx "$victim" <<<"$allowed")")
[[ $reported == "$victim" ]] || fail "self-check: a list without $victim was not caught"

echo "napi_symbols_test: $(wc -l <<<"$imported") imported Node-API functions, all in $(basename "$list")" \
     "($(wc -l <<<"$allowed") names); registration by napi_module_register only"
