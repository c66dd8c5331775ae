// The one place the binding includes Node-API. Node.js ships it as <node_api.h>; HarmonyOS NEXT's
// NDK as <napi/native_api.h> (libace_napi.z.so, Node-API at NAPI_VERSION 8, API 12). The rest
// of the binding is written for the intersection of the two rule sets (docs/harmonyos.md):
//   - only functions both export: tests/napi_symbols_test.sh checks the addon's undefined
//     napi_*/node_api_* symbols against bindings/harmonyos/napi-api12.txt;
//   - a finalizer on every napi_wrap / napi_add_finalizer / external, no napi_remove_wrap;
//   - no Buffers (HarmonyOS caps napi_create_buffer* at 2 MiB): text crosses as strings;
//   - threadsafe functions called non-blocking from workers only, released by their owner or by
//     the environment's cleanup hook (Channel in napi_util.h);
//   - never NAPI_EXPERIMENTAL.
#pragma once

#if defined(NAPI_EXPERIMENTAL)
#error "edgellm's binding must build without NAPI_EXPERIMENTAL (HarmonyOS NAPI lacks those calls)"
#endif

#if defined(__OHOS__)
#include <napi/native_api.h>
#else
#include <node_api.h>
#endif
