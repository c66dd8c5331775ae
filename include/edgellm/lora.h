// LoRA adapters: GGUF LoRA files (llama.cpp's convert_lora_to_gguf.py format) loaded against a
// Model and applied per Session, between generations, at any scale.
//
// Thread safety: a loaded LoraAdapter is immutable and may be applied to several Sessions of
// its Model at once. Load() may run concurrently with generations on other Sessions.
// Lifetime: the adapter must not outlive its Model (as a Session must not); destroying it
// after the Model is safe (the Model already freed its weights), using it is not.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "edgellm/model.h"
#include "edgellm/status.h"

namespace edgellm {

struct LoraInfo {
  std::string path;
  std::string arch;       // general.architecture of the adapter
  int32_t rank = 0;       // the inner dimension of the first A/B pair
  float alpha = 0;        // adapter.lora.alpha (0 when absent: scale is used as is)
  int32_t n_pairs = 0;    // adapted weight matrices
  uint64_t file_bytes = 0;
  double load_ms = 0;
};

class LoraAdapter {
 public:
  // Loads the adapter at `path` for `model`. The file is checked before llama.cpp reads it:
  // missing -> kNotFound; not a GGUF, truncated -> kCorruptData; not a LoRA adapter, another
  // architecture or shapes of another model -> kInvalidArgument naming the mismatch.
  static Result<std::shared_ptr<LoraAdapter>> Load(const Model& model, const std::string& path);
  ~LoraAdapter();
  LoraAdapter(const LoraAdapter&) = delete;
  LoraAdapter& operator=(const LoraAdapter&) = delete;

  const LoraInfo& info() const;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit LoraAdapter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
