// Project-owned stand-in for HarmonyOS NDK's <napi/native_api.h>, used only to compile the
// binding for aarch64-linux-ohos on a machine without the OpenHarmony SDK (scripts/cross.sh
// ohos). The NDK's header is Node-API at NAPI_VERSION 8 plus HarmonyOS-only additions; the
// binding uses none of those additions, so Node's own <node_api.h> (pinned to NAPI_VERSION 8 by
// the compile flags) declares everything it calls. Were a HarmonyOS-only call ever used, its
// declaration would go here, checked against bindings/harmonyos/napi-api12.txt.
#pragma once

#if !defined(NAPI_VERSION) || NAPI_VERSION != 8
#error "HarmonyOS NAPI (API 12) is Node-API at NAPI_VERSION 8: compile with -DNAPI_VERSION=8"
#endif

#include <node_api.h>
