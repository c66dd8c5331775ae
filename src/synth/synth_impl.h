// Internals of synth_model shared by its architectures (synth.cc: Qwen2, synth_bert.cc: BERT).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/synth.h"
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

}  // namespace edgellm
