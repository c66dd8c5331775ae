// Internals of Model shared with Session (engine-private).
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/model.h"
#include "engine/llama_glue.h"
#include "engine/media.h"
#include "llama.h"

namespace edgellm {

struct Model::Impl {
  llama_model* model = nullptr;
  const llama_vocab* vocab = nullptr;
  ModelInfo info;
  // With LoadOptions::mmproj_path: the projector, its encode lock and its cache of encoded
  // media chunks.
  std::unique_ptr<engine::ProjectorState> media;
  // Expires when the model is freed: a LoraAdapter that outlives its Model (whose llama_model
  // freed the adapter's weights with it) must not free them again.
  std::shared_ptr<int> alive = std::make_shared<int>(0);
  ~Impl();

  // The model's chat templates, parsed on first use (thread-safe).
  Result<const engine::ChatTemplates*> chat_templates() const;
  // The vocabulary grouped by the first byte of each token's text (as the grammar sees it),
  // for constrained sampling (sampler.cc): a grammar that rejects byte b as the next byte
  // rejects every token whose text starts with it. by_byte[b]: those tokens; by_byte[256]:
  // end-of-generation tokens, tokens without text, and every token of a byte without a
  // one-byte token (never filtered); one_byte[b]: a token whose text is exactly b, or -1.
  // Built on first use (thread-safe).
  struct VocabIndex {
    std::array<std::vector<llama_token>, 257> by_byte;
    std::array<llama_token, 256> one_byte;
  };
  const VocabIndex& vocab_index() const;
  // sha256 (hex) of the GGUF's header and tensor table: which weights these are, for files
  // that store state computed from them. Read on first use (thread-safe).
  Result<std::string> identity() const;

 private:
  mutable std::once_flag templates_once_, identity_once_, vocab_index_once_;
  mutable VocabIndex vocab_index_;
  mutable engine::ChatTemplatesPtr templates_;
  mutable Status templates_status_, identity_status_;
  mutable std::string identity_;
};

// Checks a file before llama.cpp sees it: exists, regular, non-empty, GGUF magic and
// version, a parseable header, and tensor data that lies inside the file.
Status precheck_gguf(const std::string& path, uint64_t* file_bytes);
// Checks a projector (mmproj) after precheck_gguf, for what would abort llama.cpp's clip.cpp:
// its keys' types, and its tensors' shapes for a text model `text_n_embd` wide
// (projector_check.cc).
Status check_projector(const std::string& path, int32_t text_n_embd);

Result<std::vector<int32_t>> tokenize(const llama_vocab* vocab, std::string_view text,
                                      bool add_special, bool parse_special);
// A token's bytes; special: a special token's text too (else it prints nothing).
std::string token_bytes(const llama_vocab* vocab, int32_t token, bool special = false);

}  // namespace edgellm
