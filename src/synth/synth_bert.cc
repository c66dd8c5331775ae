// BERT encoders for synth_model: the embedding and rerank fixtures (minilm-l6,
// bge-small-en-v1.5, bge-reranker-base), at the published models' shapes.
#include <filesystem>

#include "llama.h"
#include "synth/synth_impl.h"

namespace edgellm {

std::vector<TensorSpec> bert_tensor_specs(const SynthPreset& p) {
  std::vector<TensorSpec> t;
  t.push_back({"token_embd.weight", p.n_embd, p.n_vocab, TensorSpec::kWeight});
  t.push_back({"token_types.weight", p.n_embd, 2, TensorSpec::kWeight, /*keep_f32=*/true});
  t.push_back({"position_embd.weight", p.n_embd, p.n_ctx_train, TensorSpec::kWeight});
  t.push_back({"token_embd_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
  t.push_back({"token_embd_norm.bias", p.n_embd, 1, TensorSpec::kBias});
  for (int i = 0; i < p.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      t.push_back({b + w + ".weight", p.n_embd, p.n_embd, TensorSpec::kWeight});
      t.push_back({b + w + ".bias", p.n_embd, 1, TensorSpec::kBias});
    }
    t.push_back({b + "attn_output_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
    t.push_back({b + "attn_output_norm.bias", p.n_embd, 1, TensorSpec::kBias});
    t.push_back({b + "ffn_up.weight", p.n_embd, p.n_ff, TensorSpec::kWeight});
    t.push_back({b + "ffn_up.bias", p.n_ff, 1, TensorSpec::kBias});
    t.push_back({b + "ffn_down.weight", p.n_ff, p.n_embd, TensorSpec::kWeight});
    t.push_back({b + "ffn_down.bias", p.n_embd, 1, TensorSpec::kBias});
    t.push_back({b + "layer_output_norm.weight", p.n_embd, 1, TensorSpec::kOnes});
    t.push_back({b + "layer_output_norm.bias", p.n_embd, 1, TensorSpec::kBias});
  }
  if (p.classifier) {
    // Dense + tanh, then one relevance logit (a sequence-classification head with one label).
    t.push_back({"cls.weight", p.n_embd, p.n_embd, TensorSpec::kWeight});
    t.push_back({"cls.bias", p.n_embd, 1, TensorSpec::kBias});
    t.push_back({"cls.output.weight", p.n_embd, 1, TensorSpec::kWeight});
    t.push_back({"cls.output.bias", 1, 1, TensorSpec::kBias});
  }
  return t;
}

void set_bert_hparams(const SynthPreset& p, bool f32, gguf_context* out) {
  gguf_set_val_str(out, "general.architecture", "bert");
  gguf_set_val_str(out, "general.name", ("edgellm-synth-" + p.name).c_str());
  gguf_set_val_u32(out, "general.file_type", f32 ? LLAMA_FTYPE_ALL_F32 : LLAMA_FTYPE_MOSTLY_F16);
  gguf_set_val_u32(out, "bert.context_length", static_cast<uint32_t>(p.n_ctx_train));
  gguf_set_val_u32(out, "bert.embedding_length", static_cast<uint32_t>(p.n_embd));
  gguf_set_val_u32(out, "bert.block_count", static_cast<uint32_t>(p.n_layer));
  gguf_set_val_u32(out, "bert.feed_forward_length", static_cast<uint32_t>(p.n_ff));
  gguf_set_val_u32(out, "bert.attention.head_count", static_cast<uint32_t>(p.n_head));
  gguf_set_val_f32(out, "bert.attention.layer_norm_epsilon", 1e-12f);
  gguf_set_val_bool(out, "bert.attention.causal", false);
  if (p.pooling >= 0) gguf_set_val_u32(out, "bert.pooling_type", static_cast<uint32_t>(p.pooling));
  if (p.classifier) {
    const char* labels[] = {"relevance"};
    gguf_set_arr_str(out, "bert.classifier.output_labels", labels, 1);
  }
}

std::string preset_vocab_path(const SynthPreset& p, const std::string& vocab_path) {
  const std::filesystem::path given(vocab_path);
  if (p.vocab_file.empty() || given.filename() != "ggml-vocab-qwen2.gguf") return vocab_path;
  return (given.parent_path() / p.vocab_file).string();
}

}  // namespace edgellm
