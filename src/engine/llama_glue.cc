#include "engine/llama_glue.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>

namespace edgellm::engine {
namespace {

std::atomic<bool> g_verbose{false};
thread_local std::string t_errors;

void log_callback(ggml_log_level level, const char* text, void* /*user*/) {
  if (g_verbose.load(std::memory_order_relaxed)) std::fputs(text, stderr);
  if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN ||
      (level == GGML_LOG_LEVEL_CONT && !t_errors.empty())) {
    if (t_errors.size() < 4096) t_errors += text;
  }
}

struct FtypeName {
  llama_ftype type;
  const char* name;
};
constexpr FtypeName kFtypes[] = {
    {LLAMA_FTYPE_ALL_F32, "F32"},         {LLAMA_FTYPE_MOSTLY_F16, "F16"},
    {LLAMA_FTYPE_MOSTLY_BF16, "BF16"},    {LLAMA_FTYPE_MOSTLY_Q8_0, "Q8_0"},
    {LLAMA_FTYPE_MOSTLY_Q4_0, "Q4_0"},    {LLAMA_FTYPE_MOSTLY_Q4_1, "Q4_1"},
    {LLAMA_FTYPE_MOSTLY_Q5_0, "Q5_0"},    {LLAMA_FTYPE_MOSTLY_Q5_1, "Q5_1"},
    {LLAMA_FTYPE_MOSTLY_Q2_K, "Q2_K"},    {LLAMA_FTYPE_MOSTLY_Q3_K_S, "Q3_K_S"},
    {LLAMA_FTYPE_MOSTLY_Q3_K_M, "Q3_K_M"}, {LLAMA_FTYPE_MOSTLY_Q3_K_L, "Q3_K_L"},
    {LLAMA_FTYPE_MOSTLY_Q4_K_S, "Q4_K_S"}, {LLAMA_FTYPE_MOSTLY_Q4_K_M, "Q4_K_M"},
    {LLAMA_FTYPE_MOSTLY_Q5_K_S, "Q5_K_S"}, {LLAMA_FTYPE_MOSTLY_Q5_K_M, "Q5_K_M"},
    {LLAMA_FTYPE_MOSTLY_Q6_K, "Q6_K"},    {LLAMA_FTYPE_MOSTLY_IQ4_NL, "IQ4_NL"},
    {LLAMA_FTYPE_MOSTLY_IQ4_XS, "IQ4_XS"},
};

}  // namespace

void ensure_backend() {
  static std::once_flag once;
  std::call_once(once, [] {
    llama_log_set(log_callback, nullptr);
    llama_backend_init();
  });
}

void set_llama_verbose(bool verbose) { g_verbose.store(verbose); }

std::string take_llama_errors() {
  std::string out;
  out.swap(t_errors);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

llama_context_params context_params(int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                                    ggml_type kv_type) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_batch = static_cast<uint32_t>(n_batch);
  cp.n_ubatch = static_cast<uint32_t>(n_batch);  // chunked prefill: one chunk, one ubatch
  cp.n_seq_max = 1;
  // edgellm only reads the last token's logits (llama_batch_get_one marks just that one as an
  // output). The default (n_batch outputs) makes libllama reserve n_batch x n_vocab floats of
  // compute buffer: 297 MiB for Qwen2's 151,936-token vocabulary at n_batch 512.
  cp.n_outputs_max = 1;
  if (n_threads > 0) {
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
  }
  cp.type_k = kv_type;
  cp.type_v = kv_type;
  cp.no_perf = true;
  return cp;
}

void kv_clear(llama_context* ctx) { llama_memory_clear(llama_get_memory(ctx), true); }

void set_lora_adapters(llama_context* ctx, std::vector<llama_adapter_lora*>& adapters,
                       std::vector<float>& scales) {
  llama_set_adapters_lora(ctx, adapters.data(), adapters.size(), scales.data());
}

SamplerPtr make_sampler_chain(const GenerateOptions& o, int32_t n_vocab) {
  llama_sampler_chain_params cp = llama_sampler_chain_default_params();
  cp.no_perf = true;
  SamplerPtr chain(llama_sampler_chain_init(cp));
  if (o.repeat_penalty != 1.0f && o.repeat_last_n != 0) {
    llama_sampler_chain_add(chain.get(),
                            llama_sampler_init_penalties(n_vocab, o.repeat_last_n,
                                                         o.repeat_penalty, 0, 0));
  }
  if (o.temperature <= 0) {
    llama_sampler_chain_add(chain.get(), llama_sampler_init_greedy());
    return chain;
  }
  if (o.top_k > 0) llama_sampler_chain_add(chain.get(), llama_sampler_init_top_k(o.top_k));
  if (o.top_p < 1) llama_sampler_chain_add(chain.get(), llama_sampler_init_top_p(o.top_p, 1));
  if (o.min_p > 0) llama_sampler_chain_add(chain.get(), llama_sampler_init_min_p(o.min_p, 1));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_temp(o.temperature));
  llama_sampler_chain_add(chain.get(), llama_sampler_init_dist(o.seed));
  return chain;
}

Result<std::string> apply_chat_template(const llama_model* model,
                                        const std::vector<ChatMessage>& messages,
                                        bool add_assistant) {
  const char* tmpl = llama_model_chat_template(model, nullptr);
  if (!tmpl) {
    return Status::InvalidArgument(
        "model has no chat template (tokenizer.chat_template): use plain-prompt mode");
  }
  std::vector<llama_chat_message> msgs;
  size_t total = 256;
  for (const ChatMessage& m : messages) {
    if (m.role.empty()) return Status::InvalidArgument("a chat message has no role");
    msgs.push_back({m.role.c_str(), m.content.c_str()});
    total += m.content.size() + 64;
  }
  std::vector<char> buf(total);
  int32_t n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_assistant,
                                        buf.data(), static_cast<int32_t>(buf.size()));
  if (n > static_cast<int32_t>(buf.size())) {
    buf.resize(static_cast<size_t>(n));
    n = llama_chat_apply_template(tmpl, msgs.data(), msgs.size(), add_assistant, buf.data(),
                                  static_cast<int32_t>(buf.size()));
  }
  if (n < 0) {
    return Status::InvalidArgument(
        "the model's chat template is not one llama.cpp recognizes: use plain-prompt mode");
  }
  return std::string(buf.data(), static_cast<size_t>(n));
}

const char* ftype_name(int ftype) {
  for (const auto& f : kFtypes) {
    if (static_cast<int>(f.type) == ftype) return f.name;
  }
  return "unknown";
}

bool ftype_from_name(const std::string& name, llama_ftype* out) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const auto& f : kFtypes) {
    if (upper == f.name) {
      *out = f.type;
      return true;
    }
  }
  return false;
}

const char* vocab_type_name(enum llama_vocab_type type) {
  switch (type) {
    case LLAMA_VOCAB_TYPE_NONE: return "none";
    case LLAMA_VOCAB_TYPE_SPM: return "spm";
    case LLAMA_VOCAB_TYPE_BPE: return "bpe";
    case LLAMA_VOCAB_TYPE_WPM: return "wpm";
    case LLAMA_VOCAB_TYPE_UGM: return "ugm";
    case LLAMA_VOCAB_TYPE_RWKV: return "rwkv";
    case LLAMA_VOCAB_TYPE_PLAMO2: return "plamo2";
  }
  return "unknown";
}

}  // namespace edgellm::engine
