// Internals of synth_model shared by its architectures (synth.cc: Qwen2, Qwen3, Llama;
// synth_bert.cc: BERT; synth_mmproj.cc: projectors; synth_presets_mm.cc: multimodal presets).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/synth.h"
#include "ggml.h"
#include "gguf.h"

namespace edgellm {

// One tensor to write: its GGUF name, shape and how its random values are drawn.
struct TensorSpec {
  std::string name;
  int64_t ne0, ne1;  // ne1 == 1 for vectors
  enum Init { kWeight, kOnes, kBias } init;
  // Written as F32 even in an F16 base (and so kept by the quantizer): tensors llama.cpp adds
  // without a row lookup, such as BERT's token type embeddings (its CPU add takes no F16).
  bool keep_f32 = false;
  int64_t ne2 = 1, ne3 = 1;  // convolution kernels (a projector's patch embedding)
  bool is_vector() const { return ne1 == 1 && ne2 == 1 && ne3 == 1; }
};

// A BERT encoder's tensors, in llama.cpp's names (src/models/bert.cpp): embeddings (token,
// token type, position) with their LayerNorm, per layer Q/K/V/output with biases and two
// LayerNorms, a GELU feed-forward, and with p.classifier the classification head.
std::vector<TensorSpec> bert_tensor_specs(const SynthPreset& p);
// bert.* hyperparameters: non-causal attention, LayerNorm epsilon 1e-12, p.pooling.
void set_bert_hparams(const SynthPreset& p, bool f32, gguf_context* out);
// The vocabulary a preset reads: p.vocab_file in the folder of `vocab_path` (llama.cpp's
// models/) when the preset names one and `vocab_path` is the default Qwen2 file; else
// `vocab_path` as given.
std::string preset_vocab_path(const SynthPreset& p, const std::string& vocab_path);

// Random values for elements [first, first + n) of tensor `t`: ones for kOnes, else uniform
// with std 0.02, one stream per tensor name and seed.
void fill_values(const TensorSpec& t, uint64_t seed, int64_t first, float* dst, int64_t n);

// Adds `specs` to `out`'s tensor table (F32 for vectors, keep_f32 and `f32`; F16 otherwise),
// their tensors made in `ctx` (no_alloc), returned in order; `*total` gets their bytes.
std::vector<ggml_tensor*> add_tensor_table(const std::vector<TensorSpec>& specs, bool f32,
                                           ggml_context* ctx, gguf_context* out, uint64_t* total);

// Writes `out` (metadata and the tensors of `tensors`, filled by fill_values) to `path`,
// calling `on_progress(stage, fraction)`; kCancelled when it returns false.
Status write_random_gguf(gguf_context* out, const std::vector<TensorSpec>& specs,
                         const std::vector<ggml_tensor*>& tensors, uint64_t total, uint64_t seed,
                         const std::string& path, const char* stage,
                         const std::function<bool(const char*, float)>& on_progress);

// The multimodal presets (synth_presets_mm.cc): SmolVLM-256M-Instruct, Qwen2-VL-2B-Instruct
// and Ultravox v0.5 on Llama-3.2-1B.
SynthPreset smolvlm_256m_preset();
SynthPreset qwen2vl_preset();
SynthPreset ultravox_preset();

// Writes the projector of `p` (p.projector) as an mmproj GGUF at `path` (not atomically: the
// caller's AtomicFile path).
Status write_mmproj(const SynthPreset& p, const SynthOptions& o, const std::string& path);

}  // namespace edgellm
