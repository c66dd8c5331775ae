// The llama.cpp glue: process-wide set-up and every libllama call that changes between
// llama.cpp versions (the memory/KV API, sampler chains, chat templates, LoRA adapter sets,
// logging; state save/load and KV shifting join here when they are used). Any folder of src/ may include
// llama.h for the stable core API (model load, tokenize, decode, logits); the calls below go
// through this header only, so a llama.cpp upgrade touches llama_glue.cc and nothing else.
// docs/engine.md states the rule; tests/layout_test.cc enforces it.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/session.h"
#include "edgellm/status.h"
#include "llama.h"

namespace edgellm::engine {

// ---- logging and the backend ----
// Initializes the llama.cpp backend once and routes its log through edgellm.
void ensure_backend();
// Whether llama.cpp's own log lines are echoed to stderr (process-wide; default off).
void set_llama_verbose(bool verbose);
// The last error/warning lines llama.cpp logged on this thread, then cleared.
std::string take_llama_errors();

// ---- owners ----
struct ModelFree {
  void operator()(llama_model* m) const { llama_model_free(m); }
};
struct ContextFree {
  void operator()(llama_context* c) const { llama_free(c); }
};
struct SamplerFree {
  void operator()(llama_sampler* s) const { llama_sampler_free(s); }
};
using ModelPtr = std::unique_ptr<llama_model, ModelFree>;
using ContextPtr = std::unique_ptr<llama_context, ContextFree>;
using SamplerPtr = std::unique_ptr<llama_sampler, SamplerFree>;

// ---- contexts and their memory (the KV cache) ----
// Context parameters edgellm uses everywhere (sessions and the planner's dry run), so the
// planner sizes exactly the context a Session creates.
llama_context_params context_params(int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                                    ggml_type kv_type);
// Empties the context's memory (every sequence, data too): the next decode starts at 0.
void kv_clear(llama_context* ctx);

// Replaces the context's LoRA adapters with `adapters` at `scales` (same length; empty: none).
void set_lora_adapters(llama_context* ctx, std::vector<llama_adapter_lora*>& adapters,
                       std::vector<float>& scales);

// ---- sampling ----
// The chain for `o` (sampling fields already validated): repetition penalty, then greedy
// (temperature 0) or top-k, top-p, min-p, temperature and a seeded draw.
SamplerPtr make_sampler_chain(const GenerateOptions& o, int32_t n_vocab);

// ---- chat templates ----
// Renders `messages` with the model's own chat template (tokenizer.chat_template), ending
// with the assistant's turn opened when `add_assistant`. kInvalidArgument when the model has
// no template or llama.cpp does not recognize it.
Result<std::string> apply_chat_template(const llama_model* model,
                                        const std::vector<ChatMessage>& messages,
                                        bool add_assistant);

// ---- names ----
const char* ftype_name(int ftype);  // "Q4_K_M", "F16", ...; "unknown" otherwise
bool ftype_from_name(const std::string& name, llama_ftype* out);
const char* vocab_type_name(enum llama_vocab_type type);

}  // namespace edgellm::engine
