// The package manifest: what a device needs to download a model in verified chunks, check it
// against this runtime, and keep versions side by side. Written by pack_model (package.h),
// read by the downloader and the model store.
//
// Manifest schema: docs/manifest.md. Thread safety: free functions, no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

// The GGUF format edgellm writes and reads (stamped as "edgellm.format_version" by
// `edgellm quantize`; a manifest's required_format_version above this is refused).
constexpr uint32_t kFormatVersion = 1;

struct Manifest {
  uint32_t schema = 1;              // manifest schema version
  std::string id;                   // e.g. "qwen2.5-1.5b-chat": [a-z0-9._-], 1..64 chars
  uint32_t version = 0;             // >= 1; larger is newer
  std::string file;                 // file name inside the package folder, e.g. "model.gguf"
  uint64_t size = 0;                // bytes
  std::string sha256;               // whole file, lowercase hex
  uint64_t chunk_size = 0;          // bytes per chunk (the last may be shorter); default 10 MiB
  std::vector<std::string> chunks;  // sha256 of each chunk, in order
  std::string quant;                // e.g. "Q4_K_M"
  std::string architecture;         // e.g. "qwen2"
  uint64_t n_params = 0;
  uint32_t required_format_version = kFormatVersion;
  std::string toolchain;            // llama.cpp build that produced the file, e.g. "b1-80fb11a"
  // Planner summary at the default context (2048): bytes of RAM the model needs.
  int32_t plan_n_ctx = 0;
  uint64_t plan_ram_bytes = 0;

  friend bool operator==(const Manifest&, const Manifest&) = default;
};

// JSON text <-> Manifest. Parsing validates every field (types, ranges, hex digests, chunk
// count = ceil(size / chunk_size)) and names the first bad one (kCorruptData).
std::string manifest_to_json(const Manifest& m);
Result<Manifest> manifest_from_json(const std::string& text);
// The same field checks on a Manifest value (pack_model runs them before writing one).
Status validate_manifest(const Manifest& m);
// Whether this runtime can use the package: kFailedPrecondition when required_format_version is
// above kFormatVersion (the message says to update edgellm). Separate from validation: such a
// manifest is well-formed, only too new.
Status check_manifest_supported(const Manifest& m);
// The name pack_model writes next to the model file.
constexpr const char* kManifestFileName = "manifest.json";

}  // namespace edgellm
