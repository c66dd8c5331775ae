// Internals of Session (engine-private), shared with the conversation code in src/chat/.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "edgellm/session.h"
#include "engine/decode_control.h"
#include "engine/decode_cost.h"
#include "engine/llama_glue_chat.h"
#include "engine/lora_impl.h"
#include "engine/model_impl.h"
#include "engine/text_prefiller.h"
#include "llama.h"

namespace edgellm {

namespace engine {
class DecodeControl;
class DraftModel;
struct ChatRender;
struct MediaPrompt;
}

// Whoever's tokens a session's KV cache holds (a conversation). Told before another user
// takes the cache over, while the cells are still there: a chance to keep them elsewhere.
class CacheOwner {
 public:
  virtual ~CacheOwner() = default;
  virtual void Evicted(Session::Impl& session) = 0;
};

struct Session::Impl {
  using Clock = std::chrono::steady_clock;
  // Called when the context fills while a reply is generated: frees cells (DropCached) and
  // returns true, or returns false to end the reply with kContextFull.
  using MakeRoom = std::function<Result<bool>(engine::DecodeControl& control)>;

  const Model::Impl* model = nullptr;
  SessionOptions options;  // resolved: no -1 left
  llama_context* ctx = nullptr;
  // SessionOptions::draft_model's context (null without one).
  std::unique_ptr<engine::DraftModel> draft;
  std::atomic<bool> cancel{false};
  std::atomic<bool> generating{false};
  std::vector<std::pair<std::shared_ptr<const LoraAdapter>, float>> loras;
  double warmup_ms = 0;
  // What a decode of n tokens costs here, for speculation: timed at warm-up, then by every
  // generation's decodes.
  engine::DecodeCost decode_cost;
  // How often this model keeps a forced (jump-forward) guess, across generations: starts at
  // the prior 0.9, moved by every checked forced guess.
  double forced_accept = 0.9;
  // The tokens whose KV cells the context holds in sequence 0, and their positions (0..size()-1
  // but for M-RoPE media: decode_control.h). Every decode appends to both (DecodeControl),
  // every removal trims both (engine::cut_cache): it is what a later call may reuse.
  std::vector<llama_token> cached;
  engine::KvPositions kv_pos;
  // Whose turns `cached` holds (null: none, or a plain Generate's prompt).
  CacheOwner* owner = nullptr;
  // While Run() goes: the prompt's media and the call's stats (null otherwise).
  const engine::MediaPrompt* active_media = nullptr;
  Stats* active_stats = nullptr;

  ~Impl();
  // Creates the llama context if ReleaseKv() dropped it.
  Status EnsureContext();
  Status Warmup();
  // Hands the adapter set to the context (no-op without a context: EnsureContext applies it).
  // The cached cells were computed with the old set: they are dropped.
  void ApplyLoras();
  void ClearKv();
  Result<Generation> Generate(std::string_view prompt, const GenerateOptions& o,
                              const TextSink& sink);
  // The prompt's tokens: rendered with the chat template when o.chat, tokenized with the
  // model's special tokens. kInvalidArgument when nothing is left.
  Result<std::vector<llama_token>> PromptTokens(std::string_view prompt,
                                                const GenerateOptions& o) const;
  // A chat turn with tools or reasoning rendered by llama.cpp common's chat library: the
  // system prompt, o.history and `user` (none when the history ends with a tool result).
  Result<engine::ChatRender> RenderChat(std::string_view user, const GenerateOptions& o) const;
  // A prompt longer than the context: kInvalidArgument, or cut per o.truncate_prompt.
  Status FitPrompt(std::vector<llama_token>* toks, const GenerateOptions& o, Stats* st) const;

  // Prefills `tokens` (the whole prompt: earlier turns included) and generates the reply.
  // With o.reuse_prefix the longest prefix already cached is kept (Stats::n_cached) and only
  // the rest is decoded; without it the cache starts empty. `make_room` may be empty.
  // `render` (may be null): a chat turn with tools or reasoning (its grammar, stop strings and
  // the parser that splits the reply).
  // `media` (may be null): the prompt's media chunks, whose placeholders `tokens` holds.
  Result<Generation> Run(std::vector<llama_token> tokens, const GenerateOptions& o,
                         const TextSink& sink, const MakeRoom& make_room, Clock::time_point t0,
                         const engine::ChatRender* render = nullptr,
                         const engine::MediaPrompt* media = nullptr);
  // Generate with media (GenerateOptions::media, or in o.history's messages): markers
  // placed, the prompt tokenized with its media (generate_media.cc).
  Result<Generation> GenerateWithMedia(std::string_view prompt, const GenerateOptions& o,
                                       const TextSink& sink, Clock::time_point t0);
  // The tokens of chat `messages` (system prompt included) with their media, rendered with
  // `templates` (the assistant's turn opened when `open_reply`); `out` gets the media.
  // kFailedPrecondition without a projector.
  Result<std::vector<llama_token>> MediaChatTokens(const engine::ChatTemplates& templates,
                                                   std::vector<ChatMessage> messages,
                                                   bool open_reply, engine::MediaPrompt* out) const;
  // Decodes `tokens` into the cache after the longest cached prefix (no reply): a system
  // prompt prepared ahead of the first question. Stats: n_cached, n_prompt, prefill_ms.
  Result<Stats> Prefill(const std::vector<llama_token>& tokens);
  // Keeps the longest common prefix of `tokens` and the cache, never all of `tokens` (the
  // last one is decoded again for its logits), and removes the rest. Returns its length.
  int32_t KeepPrefix(const std::vector<llama_token>& tokens);
  // Removes cached positions [p0, p1) and moves the later cells down: by a KV shift where
  // the memory allows it and SessionOptions::context_shift is on, else by decoding them
  // again through `control` (null: then nothing is removed and the result is false).
  Result<bool> DropCached(int32_t p0, int32_t p1, engine::DecodeControl* control);
  bool can_shift() const;
  // The prefiller's evaluator of the active prompt's media placeholders (empty without).
  engine::MediaEval MediaEvalFor(engine::DecodeControl& control);
  // Makes `next` the cache's owner, telling the previous one first.
  void TakeCache(CacheOwner* next);
};

// Whether a chat reply of `model` needs the format's parser without tools: a reasoning model
// whose thinking is separated or hidden.
bool wants_reply_parser(const Model::Impl* model, const GenerateOptions& o);

// The model's chat templates; kInvalidArgument for a model without one.
Result<const engine::ChatTemplates*> model_chat_templates(const Model::Impl* model);
// The system prompt (when not empty), the history and the user's turn, as a template takes them.
std::vector<ChatMessage> chat_messages(std::string_view system,
                                       const std::vector<ChatMessage>& history, ChatMessage user);

Result<std::string> format_chat(const Model::Impl* model, std::string_view user,
                                std::string_view system,
                                const std::vector<ChatMessage>& history = {});

}  // namespace edgellm
