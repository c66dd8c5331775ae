// Model: a GGUF file loaded through llama.cpp, with the seed's load policy.
//
// Thread safety: a loaded Model is immutable and may be shared by several
// Sessions on different threads. Load() itself may be called concurrently for
// different files.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

enum class LoadMode {
  kAuto,  // mmap below LoadOptions::mmap_threshold_bytes, plain reads at or above it
  kMmap,  // memory-map the file; pages come in on demand
  kRead,  // read the weights into anonymous memory (some kernels mishandle mmap of >1 GB files)
};
const char* load_mode_name(LoadMode mode);

// Per-model options. Lifetime: one Load() call.
struct LoadOptions {
  // How weights reach memory. Default: kAuto.
  LoadMode mode = LoadMode::kAuto;
  // kAuto picks mmap for files smaller than this. Default: 500 MiB (the seed's threshold).
  uint64_t mmap_threshold_bytes = 500ull << 20;
  // Called with progress in [0, 1] while weights load, on the loading thread.
  // Return false to cancel: Load() then returns Code::kCancelled. Default: none.
  std::function<bool(float progress)> on_progress;
  // Forward llama.cpp's own log lines to stderr. Default: false (errors come back as Status).
  bool verbose = false;
  // Read metadata, vocabulary and tensor shapes only; no weight bytes are read or allocated.
  // For info, token counting and planning. Session::Create refuses such a model. Default false.
  bool metadata_only = false;
  // Read the tokenizer only (also works on llama.cpp's tensor-less models/ggml-vocab-*.gguf).
  // Only Tokenize()/TokenBytes() are meaningful on such a model. Default false.
  bool vocab_only = false;
  // A projector (an "mmproj" GGUF: the vision or audio encoder made for this text model) for
  // images and audio in prompts (GenerateOptions::media), through llama.cpp's mtmd. Checked
  // like any GGUF; one made for another text model (another embedding width) is an error
  // naming both. Default "": text only.
  std::string mmproj_path;
  // At most this many tokens per image: the projector resizes and tiles images to fit (SmolVLM:
  // 64 per 512-pixel tile; its own limit is 17 tiles, 1088 tokens). Fewer tokens encode faster
  // and use less context. -1 (default): the projector's own limit.
  int32_t image_max_tokens = -1;
  // Threads of the projector's encoder. -1 (default): the physical cores.
  int32_t mmproj_threads = -1;
};

// What a model is, read from its GGUF metadata and llama.cpp after load.
struct ModelInfo {
  std::string path;
  std::string arch;            // general.architecture, e.g. "qwen2"
  std::string name;            // general.name, may be empty
  std::string description;     // llama.cpp's one-line description, e.g. "qwen2 1.5B Q4_K - Medium"
  std::string quant;           // file type, e.g. "Q4_K_M", "F16"
  uint64_t n_params = 0;
  uint64_t weights_bytes = 0;  // bytes of tensor data
  uint64_t file_bytes = 0;
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t n_ctx_train = 0;
  int32_t n_vocab = 0;
  std::string vocab_type;      // "bpe", "spm", "wpm", "ugm", "rwkv", "plamo2" or "none"
  bool has_chat_template = false;
  LoadMode load_mode = LoadMode::kAuto;  // the mode actually used (never kAuto)
  bool metadata_only = false;
  double load_ms = 0;
  // With a projector (LoadOptions::mmproj_path): its file, size, and what it takes.
  std::string mmproj_path;
  uint64_t mmproj_bytes = 0;
  bool vision = false;
  bool audio = false;
  double mmproj_load_ms = 0;
};

class Session;
struct SessionOptions;

class Model {
 public:
  // Loads the GGUF at `path`. Checks the file before llama.cpp sees it:
  // missing -> kNotFound; a directory, empty or non-GGUF file -> kInvalidArgument /
  // kCorruptData; a truncated or inconsistent GGUF -> kCorruptData.
  static Result<std::unique_ptr<Model>> Load(const std::string& path,
                                             const LoadOptions& options = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelInfo& info() const;

  // Tokenizes `text`. add_special adds BOS where the vocabulary wants it.
  Result<std::vector<int32_t>> Tokenize(std::string_view text, bool add_special) const;
  // The raw bytes of one token (may be part of a UTF-8 character).
  std::string TokenBytes(int32_t token) const;
  // Whether the model's chat template writes <think> reasoning (DeepSeek-R1 distills): chat
  // replies then carry it apart from the answer (GenerateOptions::reasoning).
  bool Reasons() const;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
