// The llama.cpp glue for embeddings and rerank: context parameters, pooling, pooled outputs,
// the classification head's size and the rerank template (llama_glue.h).
#include <string>

#include "engine/llama_glue.h"

namespace edgellm::engine {

llama_context_params embed_context_params(int32_t n_tokens, int32_t n_seq, int32_t n_threads,
                                          int pooling) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_tokens);
  cp.n_batch = static_cast<uint32_t>(n_tokens);
  cp.n_ubatch = static_cast<uint32_t>(n_tokens);
  cp.n_seq_max = static_cast<uint32_t>(n_seq);
  // One memory shared by the texts of a decode (as llama-embedding runs): a decoder
  // embedder's cells of all sequences fit in n_tokens, and attention is masked per sequence.
  cp.kv_unified = true;
  cp.embeddings = true;
  cp.pooling_type = static_cast<enum llama_pooling_type>(pooling);
  if (n_threads > 0) {
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
  }
  cp.no_perf = true;
  return cp;
}

int model_pooling(const llama_model* model) {
  char arch[64] = {0};
  if (llama_model_meta_val_str(model, "general.architecture", arch, sizeof(arch)) < 0) return -1;
  char value[32] = {0};
  const std::string key = std::string(arch) + ".pooling_type";
  if (llama_model_meta_val_str(model, key.c_str(), value, sizeof(value)) < 0) return -1;
  try {
    return std::stoi(value);
  } catch (const std::exception&) {
    return -1;
  }
}

int context_pooling(const llama_context* ctx) { return llama_pooling_type(ctx); }

const float* sequence_output(llama_context* ctx, int32_t seq) {
  return llama_get_embeddings_seq(ctx, seq);
}

int32_t model_embd_out(const llama_model* model) { return llama_model_n_embd_out(model); }

int32_t model_cls_out(const llama_model* model) {
  return static_cast<int32_t>(llama_model_n_cls_out(model));
}

const char* rerank_template(const llama_model* model) {
  return llama_model_chat_template(model, "rerank");
}

int32_t max_sequences() { return static_cast<int32_t>(llama_max_parallel_sequences()); }

bool is_encoder_decoder(const llama_model* model) {
  return llama_model_has_encoder(model) && llama_model_has_decoder(model);
}

}  // namespace edgellm::engine
