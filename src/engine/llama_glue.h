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
// The most tokens speculative decoding guesses per decode: a context keeps the logits of
// 1 + this many positions of a decode (n_outputs_max).
constexpr int32_t kMaxDraftTokens = 16;
// Context parameters edgellm uses everywhere (sessions and the planner's dry run), so the
// planner sizes exactly the context a Session creates.
llama_context_params context_params(int32_t n_ctx, int32_t n_batch, int32_t n_threads,
                                    ggml_type kv_type);
// Empties the context's memory (every sequence, data too): the next decode starts at 0.
void kv_clear(llama_context* ctx);
// Removes sequence 0's cells at positions [p0, p1) (p1 < 0: to the end). False when the
// memory cannot remove part of a sequence (then nothing changed).
bool kv_remove(llama_context* ctx, int32_t p0, int32_t p1);
// Whether cells can move to other positions (RoPE models with a plain KV cache can).
bool kv_can_shift(llama_context* ctx);
// Whether the model's memory can drop a sequence's last cells and decode them again from the
// cells before (a KV cache can; a recurrent or hybrid model's state cannot): what speculative
// decoding needs to undo rejected guesses.
bool kv_can_cut_tail(const llama_model* model);
// Moves sequence 0's cells at positions >= p0 by `delta` (negative: towards 0).
void kv_shift(llama_context* ctx, int32_t p0, int32_t delta);
// The largest position sequence 0 holds, -1 when empty.
int32_t kv_pos_max(llama_context* ctx);
// Sequence 0's state (its KV cells) as bytes, and back. set returns false when llama.cpp
// refuses the bytes (the cache is then empty).
std::vector<uint8_t> kv_state_get(llama_context* ctx);
bool kv_state_set(llama_context* ctx, const std::vector<uint8_t>& bytes);

// Replaces the context's LoRA adapters with `adapters` at `scales` (same length; empty: none).
void set_lora_adapters(llama_context* ctx, std::vector<llama_adapter_lora*>& adapters,
                       std::vector<float>& scales);

// ---- sampling ----
// The chain for `o` (sampling fields already validated): repetition penalty, then greedy
// (temperature 0) or top-k, top-p, min-p, temperature and a seeded draw.
SamplerPtr make_sampler_chain(const GenerateOptions& o, int32_t n_vocab);

// ---- constrained output (checks and conversion: llama_glue_grammar.cc) ----
// What a grammar sampler is made from. Lazy: the grammar starts constraining only once the
// output matches one of the trigger patterns (regexes) or a trigger token appears (tool
// calls with tool_choice "auto"); until then every token passes.
struct GrammarSpec {
  std::string gbnf;
  bool lazy = false;
  std::vector<std::string> trigger_patterns;
  std::vector<llama_token> trigger_tokens;
};
// Checks a GBNF grammar with llama.cpp's parser before it is used: kInvalidArgument naming
// what is wrong (parse error, undefined rule, no root, a root that can never end, a limit),
// `what` naming the grammar in the message ("the grammar"). `token_refs` (may be null): set
// when the grammar matches token ids (`<[id]>`, `<think>`), not only text.
Status check_gbnf(const llama_vocab* vocab, const std::string& gbnf, const GrammarLimits& limits,
                  const char* what, bool* token_refs = nullptr);
// A JSON schema (JSON text) as GBNF, converted by llama.cpp common's json-schema-to-grammar.
// kInvalidArgument: not JSON, not a schema, a limit, or what the converter cannot express.
// `ws` rewrites the converter's `space` rule (JsonWhitespace).
Result<std::string> json_schema_to_gbnf(const std::string& schema, const GrammarLimits& limits,
                                        JsonWhitespace ws);
// Rewrites the `space` rule of a grammar made by llama.cpp's JSON-schema converter (a schema's,
// or a chat format's tool-call grammar) to `ws`. False when the grammar has no such rule (it
// then allows no whitespace between JSON's tokens anyway, or was written by hand).
bool set_json_whitespace(std::string* gbnf, JsonWhitespace ws);
// The grammar sampler (kInvalidArgument with llama.cpp's logged reason when it refuses).
Result<SamplerPtr> make_grammar_sampler(const llama_vocab* vocab, const GrammarSpec& spec);
// Whether the grammar allows `tok` next (one candidate checked, not the vocabulary).
bool grammar_allows(llama_sampler* grammar, llama_token tok);
// Advances the grammar past `tok`, which it must allow (kInternal, never an abort, otherwise).
Status grammar_accept(llama_sampler* grammar, llama_token tok);
// True when `text` is one JSON value; `out` then holds it without surrounding whitespace.
bool json_trimmed(const std::string& text, std::string* out);

// ---- chat templates ----
// A model's chat templates, rendered with llama.cpp's common chat library (its Jinja engine),
// so a template renders exactly as the model's authors wrote it. A model without
// tokenizer.chat_template gets ChatML, as llama-server does (explicit() is then false).
class ChatTemplates;
struct ChatTemplatesFree {
  void operator()(ChatTemplates* t) const;
};
using ChatTemplatesPtr = std::unique_ptr<ChatTemplates, ChatTemplatesFree>;
// kInvalidArgument when the model's template does not parse.
Result<ChatTemplatesPtr> load_chat_templates(const llama_model* model);
// Whether the template writes or strips <think> reasoning (a reasoning model's).
bool chat_template_thinks(const ChatTemplates& t);
// Whether the model carries a template of its own (false: the ChatML fallback).
bool chat_template_explicit(const ChatTemplates& t);
// Renders `messages`, ending with the assistant's turn opened when `add_assistant`. Never
// includes the BOS token the tokenizer adds. kInvalidArgument when the template fails on them.
Result<std::string> apply_chat_template(const ChatTemplates& t,
                                        const std::vector<ChatMessage>& messages,
                                        bool add_assistant);

// ---- embeddings and rerank (llama_glue_embed.cc) ----
// Parameters of an embedding context: every token an output, `pooling` (llama_pooling_type),
// up to `n_seq` texts per decode in one unified memory, one ubatch of `n_tokens` (an encoder
// must see a whole text at once).
llama_context_params embed_context_params(int32_t n_tokens, int32_t n_seq, int32_t n_threads,
                                          int pooling);
// The pooling the model's GGUF names (<arch>.pooling_type), -1 when it names none.
int model_pooling(const llama_model* model);
// The pooling a context applies.
int context_pooling(const llama_context* ctx);
// Sequence `seq`'s pooled output after a decode: model_embd_out() floats, or for rank pooling
// model_cls_out() scores. Null when the context has none.
const float* sequence_output(llama_context* ctx, int32_t seq);
int32_t model_embd_out(const llama_model* model);
int32_t model_cls_out(const llama_model* model);
// The model's rerank prompt ("...{query}...{document}..."), null when it has none.
const char* rerank_template(const llama_model* model);
// The most sequences one context can hold.
int32_t max_sequences();
// True for encoder-decoder models (T5), whose embeddings llama.cpp does not compute.
bool is_encoder_decoder(const llama_model* model);

// ---- names ----
const char* ftype_name(int ftype);  // "Q4_K_M", "F16", ...; "unknown" otherwise
bool ftype_from_name(const std::string& name, llama_ftype* out);
const char* vocab_type_name(enum llama_vocab_type type);

}  // namespace edgellm::engine
