// The starting point of training: the llama architecture's tensors, their initial values,
// the GGUF metadata (hyperparameters, vocabulary, ChatML template) and the untrained file.
#include <cmath>
#include <vector>

#include "engine/gguf_io.h"
#include "train/train_internal.h"

namespace edgellm::train {

const char* const kChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' "
    "}}{% endif %}";

std::vector<TensorSpec> model_specs(const TrainOptions& o, int64_t n_vocab) {
  const float proj = 0.02f / std::sqrt(2.0f * o.n_layer);
  std::vector<TensorSpec> specs = {{"token_embd.weight", o.n_embd, n_vocab, 0.02f},
                             {"output_norm.weight", o.n_embd, 1, 0}};
  for (int i = 0; i < o.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    specs.push_back({b + "attn_norm.weight", o.n_embd, 1, 0});
    specs.push_back({b + "attn_q.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_k.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_v.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_output.weight", o.n_embd, o.n_embd, proj});
    specs.push_back({b + "ffn_norm.weight", o.n_embd, 1, 0});
    specs.push_back({b + "ffn_gate.weight", o.n_embd, o.n_ff, 0.02f});
    specs.push_back({b + "ffn_up.weight", o.n_embd, o.n_ff, 0.02f});
    specs.push_back({b + "ffn_down.weight", o.n_ff, o.n_embd, proj});
  }
  return specs;
}

void fill_initial(const TensorSpec& s, std::mt19937_64& rng, std::vector<float>* vals) {
  std::normal_distribution<float> nd(0.0f, s.std > 0 ? s.std : 1.0f);
  for (float& x : *vals) x = s.std > 0 ? nd(rng) : 1.0f;
}

void set_metadata(gguf_context* g, const TrainOptions& o, const Vocab& v) {
  gguf_set_val_str(g, "general.architecture", "llama");
  gguf_set_val_str(g, "general.name", "edgellm-tiny");
  gguf_set_val_u32(g, "general.file_type", 0);  // LLAMA_FTYPE_ALL_F32
  gguf_set_val_u32(g, "llama.context_length", static_cast<uint32_t>(o.n_ctx));
  gguf_set_val_u32(g, "llama.embedding_length", static_cast<uint32_t>(o.n_embd));
  gguf_set_val_u32(g, "llama.block_count", static_cast<uint32_t>(o.n_layer));
  gguf_set_val_u32(g, "llama.feed_forward_length", static_cast<uint32_t>(o.n_ff));
  gguf_set_val_u32(g, "llama.attention.head_count", static_cast<uint32_t>(o.n_head));
  gguf_set_val_u32(g, "llama.attention.head_count_kv", static_cast<uint32_t>(o.n_head));
  gguf_set_val_u32(g, "llama.rope.dimension_count", static_cast<uint32_t>(o.n_embd / o.n_head));
  gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
  gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gguf_set_val_u32(g, "llama.vocab_size", static_cast<uint32_t>(v.tokens.size()));
  gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
  std::vector<const char*> toks;
  for (const std::string& t : v.tokens) toks.push_back(t.c_str());
  gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks.data(), toks.size());
  gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v.scores.data(), v.scores.size());
  gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.types.data(), v.types.size());
  gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.im_end));
  gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
  gguf_set_val_bool(g, "tokenizer.ggml.add_bos_token", true);
  gguf_set_val_bool(g, "tokenizer.ggml.add_eos_token", false);
  gguf_set_val_bool(g, "tokenizer.ggml.add_space_prefix", false);
  set_run_record(g, o);
}

void set_run_record(gguf_context* g, const TrainOptions& o) {
  gguf_set_val_str(g, "tokenizer.chat_template", kChatTemplate);
  gguf_set_val_u64(g, "edgellm.train.seed", o.seed);
  gguf_set_val_u32(g, "edgellm.train.epochs", static_cast<uint32_t>(o.epochs));
  gguf_set_val_u32(g, "edgellm.train.items_per_task", static_cast<uint32_t>(o.items_per_task));
}

Status write_initial(const TrainOptions& o, const Vocab& v, const std::string& path,
                     uint64_t* n_params) {
  GgufPtr g(gguf_init_empty());
  set_metadata(g.get(), o, v);
  const std::vector<TensorSpec> specs = model_specs(o, static_cast<int64_t>(v.tokens.size()));
  ggml_init_params ip{specs.size() * ggml_tensor_overhead() + 1024, nullptr, true};
  GgmlPtr ctx(ggml_init(ip));
  std::vector<ggml_tensor*> ts;
  *n_params = 0;
  for (const TensorSpec& s : specs) {
    ggml_tensor* t = s.ne1 == 1 ? ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, s.ne0)
                                : ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, s.ne0, s.ne1);
    ggml_set_name(t, s.name.c_str());
    gguf_add_tensor(g.get(), t);
    ts.push_back(t);
    *n_params += static_cast<uint64_t>(ggml_nelements(t));
  }
  GgufStreamWriter w;
  EDGELLM_RETURN_IF_ERROR(w.Open(g.get(), path));
  std::mt19937_64 rng(o.seed);
  std::vector<float> vals;
  for (size_t i = 0; w.ok() && i < specs.size(); ++i) {
    vals.resize(static_cast<size_t>(ggml_nelements(ts[i])));
    fill_initial(specs[i], rng, &vals);
    w.Write(vals.data(), vals.size() * sizeof(float));
    w.EndTensor();
  }
  return w.Close();
}

}  // namespace edgellm::train
