// Internals of Conversation and PromptCache (chat-private).
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "chat/kv_file.h"
#include "edgellm/conversation.h"
#include "engine/llama_glue.h"
#include "engine/media.h"
#include "engine/session_impl.h"

namespace edgellm {

// Runs `f` with the session marked busy (LoRA changes wait) and exceptions turned into
// Status, as Session::Generate does.
template <typename F>
auto guarded(Session::Impl* s, F&& f) -> decltype(f()) {
  struct Busy {
    std::atomic<bool>& flag;
    ~Busy() { flag.store(false); }
  } busy{s->generating};
  s->generating.store(true);
  try {
    return f();
  } catch (const std::exception& e) {
    return Status::Internal(std::string("conversation failed: ") + e.what());
  }
}

struct PromptCache::Impl {
  PromptCacheOptions options;
  mutable std::mutex mu;

  // The file that holds `tokens` for this session's model and options.
  Result<std::string> PathFor(Session::Impl& s, const std::vector<llama_token>& tokens) const;
  // Loads `tokens`' cells into the session when a valid file holds exactly them. A file
  // that fails any check is removed; `why` says what was wrong (or that there was none).
  bool Restore(Session::Impl& s, const std::vector<llama_token>& tokens, std::string* why,
               uint64_t* file_bytes);
  // Writes the session's cache (which must hold exactly `tokens`), then evicts.
  Status Store(Session::Impl& s, const std::vector<llama_token>& tokens, uint64_t* file_bytes);
  // Removes least recently used files until the folder fits max_bytes.
  void Evict();
};

struct Conversation::Impl : CacheOwner {
  Session::Impl* session = nullptr;
  const engine::ChatTemplates* templates = nullptr;
  ConversationOptions options;
  std::vector<ChatMessage> messages;  // the history, system prompt not included
  // With a prompt cache: the tokens whose cells were stashed there when another user took
  // the session's cache, restored when this conversation comes back.
  std::vector<llama_token> stashed;

  // Another conversation (or a plain Generate) takes the session's cache: with a prompt
  // cache, keep this conversation's cells there.
  void Evicted(Session::Impl& s) override;
  // Makes this conversation the cache's owner, restoring its stashed cells when it has some.
  void Own();

  // The rendered and tokenized prompt for system + messages[first, last), with the
  // assistant's turn opened when `open_reply`. With media in those messages their
  // placeholders stand in the tokens and `media` (may be null) gets the items. A text-only
  // prompt keeps the tokens of `held` (null: the session's cache, when this conversation
  // owns it and options.keep_sampled_tokens) as far as they spell it (chat/token_splice.h).
  Result<std::vector<llama_token>> Tokens(size_t first, size_t last, bool open_reply,
                                          engine::MediaPrompt* media = nullptr,
                                          const std::vector<llama_token>* held = nullptr) const;
  // Where the turn after messages[i] starts (the next "user" message), or messages.size().
  size_t NextTurn(size_t i) const;
  // Generates the reply to the last user message, fitting the context per options.overflow.
  Result<Generation> Respond(const GenerateOptions& o, const TextSink& sink);
  // Drops messages[0, end) (whole turns) from the history; when the session's cache holds
  // them and the kept turns after them, moves those cells down instead of prefilling them
  // again (through `control` when the memory cannot shift; may be null before a reply).
  // Adds to *st the tokens dropped. False when the cache could not follow (then the next
  // prefill recomputes what differs: still correct).
  Result<bool> DropTurns(size_t end, engine::DecodeControl* control, Stats* st);
  // The history as JSON, for Save(), media as base64 (a media file gone is kNotFound).
  Result<std::string> ToJson() const;
};

}  // namespace edgellm
