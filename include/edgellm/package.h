// Packaging: a model file plus its manifest (manifest.h), the unit a device downloads.
//
// Thread safety: free functions, no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/manifest.h"
#include "edgellm/status.h"

namespace edgellm {

struct PackOptions {
  std::string id;
  uint32_t version = 1;
  uint64_t chunk_size = 10ull << 20;  // 10 MiB, as the first seed
  std::string out_dir;                // created if missing; gets <file> and manifest.json
  // Called with (bytes hashed, total). Return false to cancel (kCancelled; nothing left).
  std::function<bool(uint64_t, uint64_t)> on_progress;
};

// Validates the model (structure and a metadata-only load), copies it into out_dir, hashes
// it in chunks and writes manifest.json (atomically, last).
//  - Copy and hash are one pass; when out_dir/<basename> already is the model file (same
//    inode), it is hashed in place and not copied.
//  - toolchain: the GGUF's "edgellm.toolchain" string when present, else llama_build().
//  - required_format_version: the GGUF's "edgellm.format_version" when present (a file
//    stamped newer than kFormatVersion is refused: kFailedPrecondition), else kFormatVersion.
//  - plan: plan_memory at n_ctx min(n_ctx_train, 2048), 8 GiB RAM; plan_ram_bytes = total.
// Errors: what check_gguf_file / Model::Load report for a bad model (kCorruptData for a
// truncated one), kInvalidArgument for bad options, kCancelled from on_progress. On any error
// the model copy and manifest.json are not in out_dir (an earlier manifest.json stays as it
// was); a directory pack_model created is removed when it is left empty.
Result<Manifest> pack_model(const std::string& model_path, const PackOptions& options);

}  // namespace edgellm
