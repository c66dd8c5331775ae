// read_capabilities(): the ggml backend registry and CPU features of this build.
#include <sys/utsname.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "edgellm/policy.h"
#include "engine/llama_glue.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

namespace edgellm {
namespace {

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

const char* dev_type_name(enum ggml_backend_dev_type t) {
  switch (t) {
    case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
    case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
    case GGML_BACKEND_DEVICE_TYPE_META: return "meta";
  }
  return "unknown";
}

}  // namespace

bool Capabilities::has_backend(std::string_view name) const {
  return std::any_of(backends.begin(), backends.end(),
                     [&](const std::string& b) { return iequal(b, name); });
}

Capabilities read_capabilities() {
  engine::ensure_backend();
  Capabilities c;
  for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
    c.backends.emplace_back(ggml_backend_reg_name(ggml_backend_reg_get(i)));
  }
  for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
    ggml_backend_dev_t d = ggml_backend_dev_get(i);
    BackendDevice bd;
    bd.name = ggml_backend_dev_name(d);
    bd.description = ggml_backend_dev_description(d);
    bd.type = dev_type_name(ggml_backend_dev_type(d));
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(d, &free, &total);
    bd.memory_free_bytes = free;
    bd.memory_total_bytes = total;
    c.devices.push_back(std::move(bd));
  }
  const struct {
    const char* name;
    int (*has)(void);
  } features[] = {
      {"SSE3", ggml_cpu_has_sse3},         {"SSSE3", ggml_cpu_has_ssse3},
      {"AVX", ggml_cpu_has_avx},           {"AVX_VNNI", ggml_cpu_has_avx_vnni},
      {"AVX2", ggml_cpu_has_avx2},         {"BMI2", ggml_cpu_has_bmi2},
      {"F16C", ggml_cpu_has_f16c},         {"FMA", ggml_cpu_has_fma},
      {"AVX512", ggml_cpu_has_avx512},     {"AVX512_VBMI", ggml_cpu_has_avx512_vbmi},
      {"AVX512_VNNI", ggml_cpu_has_avx512_vnni}, {"AVX512_BF16", ggml_cpu_has_avx512_bf16},
      {"AMX_INT8", ggml_cpu_has_amx_int8}, {"NEON", ggml_cpu_has_neon},
      {"ARM_FMA", ggml_cpu_has_arm_fma},   {"FP16_VA", ggml_cpu_has_fp16_va},
      {"DOTPROD", ggml_cpu_has_dotprod},   {"MATMUL_INT8", ggml_cpu_has_matmul_int8},
      {"SVE", ggml_cpu_has_sve},           {"SME", ggml_cpu_has_sme},
      {"RISCV_V", ggml_cpu_has_riscv_v},   {"VSX", ggml_cpu_has_vsx},
      {"WASM_SIMD", ggml_cpu_has_wasm_simd}, {"LLAMAFILE", ggml_cpu_has_llamafile},
  };
  for (const auto& f : features) {
    if (f.has()) c.cpu_features.emplace_back(f.name);
  }
  return c;
}

std::string read_os_name(const std::string& root) {
  std::ifstream in(root + "/etc/os-release");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NAME=", 0) != 0) continue;
    std::string v = line.substr(5);
    if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) {
      v = v.substr(1, v.size() - 2);
    }
    return v;
  }
  if (!root.empty()) return "";
  struct utsname u {};
  return ::uname(&u) == 0 ? std::string(u.sysname) : std::string();
}

}  // namespace edgellm
