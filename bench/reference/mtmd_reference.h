// llama.cpp's own path for a prompt with media, as llama-mtmd-cli evaluates it, timed by phase:
// the reference edgellm-mediabench measures edgellm against. Its implementation calls mtmd and
// libllama directly (it is the llama.cpp side of the comparison); this header does not expose
// them, so the benchmark itself sees edgellm's public API only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// Milliseconds of one request, from handing over the media's bytes to the first token.
struct Phases {
  double decode_ms = 0;   // decoding and preparing the media (mtmd's bitmap and tokenizer)
  double encode_ms = 0;   // the projector's encoder
  double prefill_ms = 0;  // text tokens and the media's embeddings into the context
  double ttft_ms = 0;     // all of it and the first greedy token
};

class MtmdReference {
 public:
  // The text model and its projector, loaded by llama.cpp; null with `*why` on failure.
  static std::unique_ptr<MtmdReference> Load(const std::string& model, const std::string& mmproj,
                                             int threads, int image_max_tokens, std::string* why);
  ~MtmdReference();
  // `prompt` (one media marker) with `bytes`, on a fresh context of `n_ctx`: per chunk,
  // mtmd_encode_chunk and mtmd_helper_decode_image_chunk, or llama_decode for text in batches of
  // 512 (llama-mtmd-cli's mtmd_helper_eval_chunks, split to time the phases).
  bool Run(const std::string& prompt, const std::vector<uint8_t>& bytes, int n_ctx, Phases* out,
           std::string* why);

  struct Impl;

 private:
  explicit MtmdReference(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
