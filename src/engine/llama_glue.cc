#include "engine/llama_glue.h"

#include "engine/llama_glue_common.h"  // llama.cpp common: Jinja chat templates

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>

#include "core/log.h"

namespace edgellm::engine {
namespace {

std::atomic<bool> g_verbose{false};
thread_local std::string t_errors;

// llama.cpp logs fragments (CONT continues the previous level's line, a progress line comes
// dot by dot): the host's sink (include/edgellm/log.h) gets whole lines, assembled per thread.
thread_local std::string t_line;
thread_local LogLevel t_line_level = LogLevel::kInfo;

LogLevel to_level(ggml_log_level level) {
  switch (level) {
    case GGML_LOG_LEVEL_ERROR: return LogLevel::kError;
    case GGML_LOG_LEVEL_WARN: return LogLevel::kWarn;
    case GGML_LOG_LEVEL_DEBUG: return LogLevel::kDebug;
    default: return LogLevel::kInfo;
  }
}

void forward_to_sink(ggml_log_level level, const char* text) {
  if (level != GGML_LOG_LEVEL_CONT) {
    if (!t_line.empty()) detail::emit_log(t_line_level, "llama.cpp", t_line);  // unterminated
    t_line.clear();
    t_line_level = to_level(level);
  }
  if (!detail::log_wanted(t_line_level)) {
    t_line.clear();
    return;
  }
  for (const char* p = text; *p; ++p) {
    if (*p == '\n') {
      detail::emit_log(t_line_level, "llama.cpp", t_line);
      t_line.clear();
    } else if (t_line.size() < 4096) {
      t_line += *p;
    }
  }
}

void log_callback(ggml_log_level level, const char* text, void* /*user*/) {
  if (g_verbose.load(std::memory_order_relaxed)) std::fputs(text, stderr);
  if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN ||
      (level == GGML_LOG_LEVEL_CONT && !t_errors.empty())) {
    if (t_errors.size() < 4096) t_errors += text;
  }
  forward_to_sink(level, text);
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
  // edgellm reads the last token's logits, or with speculation those of the token and its
  // guesses (at most 1 + kMaxDraftTokens). The default (n_batch outputs) makes libllama
  // reserve n_batch x n_vocab floats of compute buffer: 297 MiB for Qwen2's 151,936-token
  // vocabulary at n_batch 512; 17 outputs take 9.9 MiB.
  cp.n_outputs_max = static_cast<uint32_t>(std::min(n_batch, 1 + kMaxDraftTokens));
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

bool kv_remove(llama_context* ctx, int32_t p0, int32_t p1) {
  return llama_memory_seq_rm(llama_get_memory(ctx), 0, p0, p1);
}

bool kv_can_shift(llama_context* ctx) { return llama_memory_can_shift(llama_get_memory(ctx)); }

bool kv_can_cut_tail(const llama_model* model) {
  return !llama_model_is_recurrent(model) && !llama_model_is_hybrid(model) &&
         !llama_model_is_diffusion(model);
}

void kv_shift(llama_context* ctx, int32_t p0, int32_t delta) {
  llama_memory_seq_add(llama_get_memory(ctx), 0, p0, -1, delta);
}

int32_t kv_pos_max(llama_context* ctx) {
  return llama_memory_seq_pos_max(llama_get_memory(ctx), 0);
}

std::vector<uint8_t> kv_state_get(llama_context* ctx) {
  std::vector<uint8_t> out(llama_state_seq_get_size(ctx, 0));
  const size_t n = llama_state_seq_get_data(ctx, out.data(), out.size(), 0);
  out.resize(n);
  return out;
}

bool kv_state_set(llama_context* ctx, const std::vector<uint8_t>& bytes) {
  if (llama_state_seq_set_data(ctx, bytes.data(), bytes.size(), 0) != 0) return true;
  kv_clear(ctx);
  return false;
}

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

Result<SamplerPtr> make_grammar_sampler(const llama_vocab* vocab, const GrammarSpec& spec) {
  take_llama_errors();  // only this call's lines
  llama_sampler* s = nullptr;
  try {
    if (spec.lazy) {
      std::vector<const char*> patterns;
      for (const std::string& p : spec.trigger_patterns) patterns.push_back(p.c_str());
      s = llama_sampler_init_grammar_lazy_patterns(
          vocab, spec.gbnf.c_str(), "root", patterns.data(), patterns.size(),
          spec.trigger_tokens.data(), spec.trigger_tokens.size());
    } else {
      s = llama_sampler_init_grammar(vocab, spec.gbnf.c_str(), "root");
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the grammar was refused: ") + e.what());
  }
  if (s == nullptr) {
    const std::string why = take_llama_errors();
    return Status::InvalidArgument("the grammar was refused" +
                                   (why.empty() ? std::string() : ": " + why));
  }
  return SamplerPtr(s);
}

bool grammar_allows(llama_sampler* grammar, llama_token tok) {
  llama_token_data one = {tok, 0.0f, 0.0f};
  llama_token_data_array arr = {&one, 1, -1, false};
  llama_sampler_apply(grammar, &arr);
  return std::isfinite(one.logit);
}

Status grammar_accept(llama_sampler* grammar, llama_token tok) {
  try {
    llama_sampler_accept(grammar, tok);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("the grammar refused a token it had allowed: ") +
                            e.what());
  }
  return Status::Ok();
}

void ChatTemplatesFree::operator()(ChatTemplates* t) const { delete t; }

Result<ChatTemplatesPtr> load_chat_templates(const llama_model* model) {
  try {
    ChatTemplatesPtr out(new ChatTemplates);
    out->t = common_chat_templates_init(model, /*chat_template_override=*/"");
    if (!out->t) return Status::InvalidArgument("the model's chat template could not be read");
    return out;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the model's chat template does not parse (") +
                                   e.what() + "): use plain-prompt mode or another model file");
  }
}

bool chat_template_thinks(const ChatTemplates& t) {
  return common_chat_templates_source(t.t.get()).find("<think>") != std::string::npos;
}

bool chat_template_explicit(const ChatTemplates& t) {
  return common_chat_templates_was_explicit(t.t.get());
}

Result<std::string> apply_chat_template(const ChatTemplates& t,
                                        const std::vector<ChatMessage>& messages,
                                        bool add_assistant) {
  common_chat_templates_inputs in;
  in.use_jinja = true;
  in.add_generation_prompt = add_assistant;
  for (const ChatMessage& m : messages) {
    if (m.role.empty()) return Status::InvalidArgument("a chat message has no role");
    common_chat_msg msg;
    msg.role = m.role;
    msg.content = m.content;
    in.messages.push_back(std::move(msg));
  }
  try {
    return common_chat_templates_apply(t.t.get(), in).prompt;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the model's chat template failed on these "
                                               "messages: ") + e.what());
  }
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
