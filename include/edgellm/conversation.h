// Conversation: a chat that keeps its KV cache between turns, and PromptCache: prefilled
// prompts (a system prompt) kept on disk across app starts.
//
// Each reply renders the whole history with the model's own chat template (its Jinja source,
// through llama.cpp's common chat library), tokenizes it, and keeps the longest token prefix
// the session's KV cache already holds: only the new turn is prefilled (Stats::n_cached says
// how many tokens were reused). A template that rewrites earlier turns (one that drops old
// reasoning, or dates its system prompt) still gives a correct prompt: reuse stops at the
// first differing token. When a turn, or the reply being generated, does not fit the
// context, the oldest whole turns go (the system prompt stays) and the cells of the turns
// kept are shifted down (SessionOptions::context_shift) instead of being prefilled again.
//
// Thread safety: a Conversation is used by one thread at a time, and by one thread with its
// Session: several conversations may share a session (one request at a time); a request
// whose conversation is not the one in the cache prefills what differs.
// Session::Cancel() stops a reply from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/session.h"
#include "edgellm/status.h"

namespace edgellm {

enum class OverflowPolicy {
  kDropOldest,  // drop the oldest whole turns, keep the system prompt (default)
  kFail,        // kResourceExhausted naming the sizes
};
const char* overflow_policy_name(OverflowPolicy policy);  // "drop_oldest", "fail"
Result<OverflowPolicy> overflow_policy_from_name(std::string_view name);

class PromptCache;

// Lifetime: the Conversation.
struct ConversationOptions {
  std::string system_prompt;  // empty = none (a template may still add its default one)
  OverflowPolicy overflow = OverflowPolicy::kDropOldest;
  // A model without a chat template of its own is refused (kInvalidArgument) unless this is
  // set: then ChatML is used, as llama-server does. Default false.
  bool chatml_fallback = false;
  // Where Prepare() finds and keeps the system prompt's KV cells. Not owned; must outlive
  // the conversation. Default none.
  PromptCache* prompt_cache = nullptr;
  // The next turn's prompt keeps the tokens the replies were sampled as, where their bytes
  // spell the rendered history, rather than the history tokenized again (which can differ
  // from them mid-reply, and everything after the first difference would be prefilled
  // again). The model sees the same text either way. False: the prompt is always the
  // rendered history tokenized, as a fresh session would tokenize it. Default true.
  bool keep_sampled_tokens = true;
};

// What Prepare() did.
struct PrepareStats {
  int32_t n_tokens = 0;     // tokens of the prepared prefix (system prompt and template header)
  bool restored = false;    // from the prompt cache, not prefilled
  double ms = 0;
  uint64_t state_bytes = 0;  // the cache file's size (0 without a prompt cache)
  std::string why_not_restored;  // with a prompt cache and restored false: why (a log line)
};

// What Load() could restore.
struct RestoreInfo {
  bool kv_restored = false;  // the KV cells came back: the next reply prefills only its turn
  int32_t n_tokens = 0;
  std::string why_not;       // when kv_restored is false: why (other model, damaged, ...)
};

class Conversation {
 public:
  // `session` must outlive the conversation. kInvalidArgument when the model has no chat
  // template (see chatml_fallback) or it does not parse.
  static Result<std::unique_ptr<Conversation>> Create(Session& session,
                                                      ConversationOptions options = {});
  // Restores what Save() wrote: the system prompt, the overflow policy and the history; and
  // the KV cells when the file was made with this session's model, context options, adapters
  // and llama.cpp build and is intact (else they are recomputed at the next reply, and
  // `info` says why). A file whose history is damaged is kCorruptData; a missing one
  // kNotFound. `options` supplies what the file does not hold (prompt_cache, fallback).
  static Result<std::unique_ptr<Conversation>> Load(Session& session, const std::string& path,
                                                    ConversationOptions options = {},
                                                    RestoreInfo* info = nullptr);
  ~Conversation();
  Conversation(const Conversation&) = delete;
  Conversation& operator=(const Conversation&) = delete;

  // Prefills the system prompt now, ahead of the first question (the seed's warm-up stage),
  // from the prompt cache when it holds it (and into it when not).
  Result<PrepareStats> Prepare();

  // Adds `user_text` as a user turn and generates the reply, streamed to `sink`; the reply is
  // added to the history (a cancelled reply with text too). `options` gives sampling, stop
  // strings, max_tokens and callbacks; its chat, system_prompt, history, truncate_prompt and
  // reuse_prefix fields are the conversation's business and ignored. On an error the history
  // is as before the call.
  Result<Generation> Send(std::string_view user_text, const GenerateOptions& options = {},
                          const TextSink& sink = {});
  // Drops the last reply (if the history ends with one) and generates a reply again to the
  // last user turn. kFailedPrecondition when there is no user turn to answer.
  Result<Generation> Regenerate(const GenerateOptions& options = {}, const TextSink& sink = {});

  // Keeps the first `n_messages` messages (kInvalidArgument when there are fewer).
  Status Truncate(size_t n_messages);
  // Replaces the text of message `index` and drops the messages after it; then Regenerate()
  // answers an edited user turn. The KV cache is reused up to the first changed token.
  Status Edit(size_t index, std::string content);
  // Empties the history; the system prompt stays.
  void Reset();
  // Replaces the whole history (an OpenAI request's messages, say): roles "user",
  // "assistant", "system", ...; the next Regenerate() answers its last user turn.
  Status SetHistory(std::vector<ChatMessage> messages);

  const std::vector<ChatMessage>& history() const;
  const ConversationOptions& options() const;
  // Tokens the rendered history (with the assistant's turn opened) takes now.
  Result<int32_t> CountTokens() const;

  // Writes the history and, when this conversation's cells are the ones in the session's
  // cache, those cells too, atomically to `path` (docs/conversations.md has the format).
  Status Save(const std::string& path) const;

  struct Impl;

 private:
  explicit Conversation(std::unique_ptr<Impl> impl);
  Result<PrepareStats> PrepareNow();
  std::unique_ptr<Impl> impl_;
};

// Lifetime: the PromptCache.
struct PromptCacheOptions {
  std::string dir;                      // created if missing; keep it under the app's files dir
  uint64_t max_bytes = 256ull << 20;    // least recently used files go beyond this. Default 256 MiB
};

// A folder of KV state files, one per prepared prefix, keyed by the model's identity, the
// context options and the tokens. A file that is missing, damaged, cut short or made for
// another model, options or llama.cpp build is never loaded: it is removed and the prefix is
// prefilled again.
//
// Thread safety: all methods may be called from any thread.
class PromptCache {
 public:
  static Result<std::unique_ptr<PromptCache>> Open(const PromptCacheOptions& options);
  ~PromptCache();
  PromptCache(const PromptCache&) = delete;
  PromptCache& operator=(const PromptCache&) = delete;

  uint64_t size_bytes() const;  // of the files now in the folder
  int32_t entries() const;
  const PromptCacheOptions& options() const;

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit PromptCache(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
