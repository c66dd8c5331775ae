// Conversation: history, rendering, context overflow and replies over a Session's KV reuse.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <nlohmann/json.hpp>

#include "chat/chat_impl.h"
#include "chat/token_splice.h"
#include "core/base64.h"
#include "core/sys.h"
#include "engine/decode_control.h"

namespace edgellm {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
// Media saved in a conversation file (as base64 in its header, which readers bound at 256 MiB).
constexpr size_t kMaxSavedMediaBytes = size_t{160} << 20;

size_t common_prefix(const std::vector<llama_token>& a, const std::vector<llama_token>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

const char* overflow_policy_name(OverflowPolicy policy) {
  return policy == OverflowPolicy::kFail ? "fail" : "drop_oldest";
}

Result<OverflowPolicy> overflow_policy_from_name(std::string_view name) {
  if (name == "drop_oldest") return OverflowPolicy::kDropOldest;
  if (name == "fail") return OverflowPolicy::kFail;
  return Status::InvalidArgument("overflow policy '" + std::string(name) +
                                 "' is not one of drop_oldest, fail");
}

Result<std::vector<llama_token>> Conversation::Impl::Tokens(
    size_t first, size_t last, bool open_reply, engine::MediaPrompt* media,
    const std::vector<llama_token>* held) const {
  std::vector<ChatMessage> msgs;
  msgs.reserve(last - first + 1);
  if (!options.system_prompt.empty()) msgs.push_back({"system", options.system_prompt});
  msgs.insert(msgs.end(), messages.begin() + static_cast<std::ptrdiff_t>(first),
              messages.begin() + static_cast<std::ptrdiff_t>(last));
  if (engine::has_media(msgs)) {
    engine::MediaPrompt unused;
    return session->MediaChatTokens(*templates, std::move(msgs), open_reply,
                                    media ? media : &unused);
  }
  Result<std::string> text = engine::apply_chat_template(*templates, msgs, open_reply);
  if (!text.ok()) return text.status();
  Result<std::vector<int32_t>> toks =
      tokenize(session->model->vocab, *text, /*add_special=*/true, /*parse_special=*/true);
  if (!toks.ok()) return toks.status();
  std::vector<llama_token> canonical(toks->begin(), toks->end());
  if (!held && options.keep_sampled_tokens && session->owner == this) held = &session->cached;
  if (!held) return canonical;
  return chat::splice_held_tokens(session->model->vocab, *text, canonical, *held);
}

size_t Conversation::Impl::NextTurn(size_t i) const {
  size_t j = i + 1;
  while (j < messages.size() && messages[j].role != "user") ++j;
  return j;
}

Result<bool> Conversation::Impl::DropTurns(size_t end, engine::DecodeControl* control,
                                           Stats* st) {
  Result<std::vector<llama_token>> before = Tokens(0, end, /*open_reply=*/false);
  if (!before.ok()) return before.status();
  for (size_t i = 0; i < end; ++i) st->turns_dropped += messages[i].role == "user";
  messages.erase(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(end));
  const std::vector<llama_token> none;
  Result<std::vector<llama_token>> after =
      Tokens(0, messages.size(), /*open_reply=*/true, nullptr, &none);
  if (!after.ok()) return after.status();
  // before = H + D (the header: the system prompt; the dropped turns), after = H + K (the
  // kept turns). The cache holds before, then K: the cut is [|H|, |before|). D and K may
  // start alike ("<|im_start|>user\n"), so |H| is the longest common prefix or less: the
  // longest p from which after[p...] starts as the cache does after before. `after` is the
  // history tokenized afresh here; the cache's K may hold sampled tokens (keep_sampled_tokens)
  // that the check below takes over once the cut is known.
  const size_t b = before->size();
  const size_t shared = common_prefix(*before, *after);
  const std::vector<llama_token>& cache = session->cached;
  const bool cached_before =
      cache.size() > b && std::equal(before->begin(), before->end(), cache.begin());
  bool aligned = false;
  size_t p = shared;
  for (size_t q = shared + 1; cached_before && q-- > 0 && !aligned;) {
    const size_t want = std::min<size_t>({after->size() - q, cache.size() - b, 16});
    aligned = want > 0 && std::equal(after->begin() + static_cast<std::ptrdiff_t>(q),
                                     after->begin() + static_cast<std::ptrdiff_t>(q + want),
                                     cache.begin() + static_cast<std::ptrdiff_t>(b));
    if (aligned) p = q;
  }
  if (aligned && control) {
    // Mid-reply the kept prompt must be cached whole (generation goes on from the cache);
    // before a reply a start is enough: the prefill recomputes from the first change.
    std::vector<llama_token> moved(cache.begin(), cache.begin() + static_cast<std::ptrdiff_t>(p));
    moved.insert(moved.end(), cache.begin() + static_cast<std::ptrdiff_t>(b), cache.end());
    Result<std::vector<llama_token>> kept =
        options.keep_sampled_tokens ? Tokens(0, messages.size(), true, nullptr, &moved) : after;
    if (!kept.ok()) return kept.status();
    aligned = kept->size() <= moved.size() &&
              std::equal(kept->begin(), kept->end(), moved.begin());
  }
  st->tokens_dropped += static_cast<int32_t>(b - p);
  if (!aligned) return false;
  return session->DropCached(static_cast<int32_t>(p), static_cast<int32_t>(b), control);
}

void Conversation::Impl::Evicted(Session::Impl& s) {
  stashed.clear();
  if (!options.prompt_cache || s.cached.empty()) return;
  uint64_t bytes = 0;
  if (options.prompt_cache->impl()->Store(s, s.cached, &bytes).ok()) stashed = s.cached;
}

void Conversation::Impl::Own() {
  if (session->owner == this) return;
  session->TakeCache(this);
  if (stashed.empty() || !options.prompt_cache) return;
  // Worth a restore only when the cache now shares less with this conversation.
  if (common_prefix(session->cached, stashed) < stashed.size()) {
    std::string why;
    uint64_t bytes = 0;
    options.prompt_cache->impl()->Restore(*session, stashed, &why, &bytes);
  }
  stashed.clear();
}

Result<Generation> Conversation::Impl::Respond(const GenerateOptions& o, const TextSink& sink) {
  const auto t0 = Clock::now();
  if (messages.empty() || messages.back().role != "user") {
    return Status::FailedPrecondition("the conversation has no user turn to answer: Send() one");
  }
  Own();
  if (!o.tools.empty()) {
    return Status::InvalidArgument(
        "tools are not supported on a Conversation yet: pass them to Session::Generate (or "
        "model.generate) with the conversation's messages as history");
  }
  GenerateOptions go = o;
  go.chat = false;
  go.system_prompt.clear();
  go.history.clear();
  go.truncate_prompt = false;
  go.reuse_prefix = true;
  const int32_t n_ctx = session->options.n_ctx;
  const int32_t reserve = std::min(go.max_tokens, n_ctx / 4);
  go.media.clear();
  size_t current = messages.size() - 1;  // the turn to answer; turns before it may go
  Stats dropped;
  // The media of the prompt: the held items keep their bytes (and decoded chunks) while the
  // reply runs, even when make_room drops their turns from the history.
  engine::MediaPrompt media;
  Result<std::vector<llama_token>> toks = Tokens(0, messages.size(), true, &media);
  if (!toks.ok()) return toks.status();
  if (static_cast<int32_t>(toks->size()) + reserve > n_ctx) {
    const std::vector<llama_token> none;
    Result<std::vector<llama_token>> alone = Tokens(current, messages.size(), true, nullptr, &none);
    if (!alone.ok()) return alone.status();
    const std::string sizes = "the conversation needs " + std::to_string(toks->size()) +
                              " tokens plus " + std::to_string(reserve) +
                              " for the reply, the context holds " + std::to_string(n_ctx);
    if (options.overflow == OverflowPolicy::kFail) {
      return Status::ResourceExhausted(sizes + ": start a new conversation, Truncate() this "
                                               "one, or use a larger context");
    }
    if (static_cast<int32_t>(alone->size()) >= n_ctx) {
      Generation g;  // not even the system prompt and this turn fit: nothing to drop helps
      g.finish_reason = FinishReason::kContextFull;
      g.stats.n_ctx = n_ctx;
      g.stats.n_threads = session->options.n_threads;
      g.stats.n_batch = session->options.n_batch;
      return g;
    }
    while (static_cast<int32_t>(toks->size()) + reserve > n_ctx && current > 0) {
      const size_t end = std::min(NextTurn(0), current);
      Result<bool> moved = DropTurns(end, nullptr, &dropped);
      if (!moved.ok()) return moved.status();
      current -= end;
      media = engine::MediaPrompt();
      toks = Tokens(0, messages.size(), true, &media);
      if (!toks.ok()) return toks.status();
    }
  }
  auto make_room = [&](engine::DecodeControl& control) -> Result<bool> {
    if (options.overflow == OverflowPolicy::kFail || current == 0) return false;
    const size_t end = std::min(NextTurn(0), current);
    Result<bool> moved = DropTurns(end, &control, &dropped);
    if (moved.ok() && *moved) current -= end;
    return moved;
  };
  // A reasoning model's reply goes through its format's parser (thinking apart from the
  // answer); the history keeps the answer, and the template decides whether earlier thinking
  // is shown again (DeepSeek-R1's drops it).
  std::optional<engine::ChatRender> render;
  if (wants_reply_parser(session->model, o)) {
    std::vector<ChatMessage> msgs;
    if (!options.system_prompt.empty()) msgs.push_back({"system", options.system_prompt});
    msgs.insert(msgs.end(), messages.begin(), messages.end());
    GenerateOptions ro = o;
    ro.tools.clear();
    Result<engine::ChatRender> rendered = engine::render_chat(*templates, msgs, ro);
    if (!rendered.ok()) return rendered.status();
    render = std::move(rendered).value();
  }
  Result<Generation> r = session->Run(std::move(toks).value(), go, sink, make_room, t0,
                                      render ? &*render : nullptr,
                                      media.items.empty() ? nullptr : &media);
  if (!r.ok()) return r;
  r->stats.turns_dropped = dropped.turns_dropped;
  r->stats.tokens_dropped = dropped.tokens_dropped;
  if (!r->text.empty() || r->finish_reason == FinishReason::kStop ||
      r->finish_reason == FinishReason::kLength) {
    ChatMessage reply{"assistant", r->text};
    reply.reasoning = r->reasoning;
    messages.push_back(std::move(reply));
  }
  return r;
}

Result<std::string> Conversation::Impl::ToJson() const {
  json j;
  j["format"] = "edgellm.conversation";
  j["version"] = 1;
  j["system_prompt"] = options.system_prompt;
  j["overflow"] = overflow_policy_name(options.overflow);
  j["messages"] = json::array();
  size_t media_bytes = 0;
  for (const ChatMessage& m : messages) {
    json jm = {{"role", m.role}, {"content", m.content}};
    // Media are saved as their bytes: the file alone restores the history (and its cells).
    for (const Media& x : m.media) {
      std::vector<uint8_t> read;
      const std::vector<uint8_t>* bytes = &x.bytes;
      if (x.bytes.empty()) {
        std::ifstream f(x.path, std::ios::binary);
        read.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        if (!f.good() && !f.eof()) read.clear();
        if (read.empty()) {
          return Status::NotFound("cannot save the conversation: its media file " + x.path +
                                  " cannot be read any more");
        }
        bytes = &read;
      }
      media_bytes += bytes->size();
      if (media_bytes > kMaxSavedMediaBytes) {
        return Status::ResourceExhausted(
            "cannot save the conversation: its images and audio take more than " +
            std::to_string(kMaxSavedMediaBytes >> 20) + " MiB; Truncate() it first");
      }
      jm["media"].push_back({{"base64", base64_encode(bytes->data(), bytes->size())}});
    }
    j["messages"].push_back(std::move(jm));
  }
  return j.dump();
}

Conversation::Conversation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Conversation::~Conversation() {
  if (impl_->session->owner == impl_.get()) impl_->session->owner = nullptr;
}

Result<std::unique_ptr<Conversation>> Conversation::Create(Session& session,
                                                           ConversationOptions options) {
  Session::Impl* s = session.impl();
  if (!s->model->info.has_chat_template && !options.chatml_fallback) {
    return Status::InvalidArgument("model " + s->model->info.path +
                                   " has no chat template (tokenizer.chat_template): use a chat "
                                   "model, or allow the ChatML fallback");
  }
  Result<const engine::ChatTemplates*> t = s->model->chat_templates();
  if (!t.ok()) return t.status();
  auto impl = std::make_unique<Impl>();
  impl->session = s;
  impl->templates = *t;
  impl->options = std::move(options);
  return std::unique_ptr<Conversation>(new Conversation(std::move(impl)));
}

Result<Generation> Conversation::Send(std::string_view user_text, const GenerateOptions& options,
                                      const TextSink& sink) {
  if (user_text.empty() && options.media.empty()) {
    return Status::InvalidArgument("the user turn is empty: type something");
  }
  const std::vector<ChatMessage> before = impl_->messages;
  ChatMessage user{"user", std::string(user_text)};
  user.media = options.media;
  impl_->messages.push_back(std::move(user));
  Result<Generation> r = guarded(impl_->session, [&] { return impl_->Respond(options, sink); });
  if (!r.ok()) impl_->messages = before;
  return r;
}

Result<Generation> Conversation::Regenerate(const GenerateOptions& options, const TextSink& sink) {
  const std::vector<ChatMessage> before = impl_->messages;
  if (!impl_->messages.empty() && impl_->messages.back().role == "assistant") {
    impl_->messages.pop_back();
  }
  Result<Generation> r = guarded(impl_->session, [&] { return impl_->Respond(options, sink); });
  if (!r.ok()) impl_->messages = before;
  return r;
}

Status Conversation::Truncate(size_t n_messages) {
  if (n_messages > impl_->messages.size()) {
    return Status::InvalidArgument("the history has " + std::to_string(impl_->messages.size()) +
                                   " messages, cannot keep " + std::to_string(n_messages));
  }
  impl_->messages.resize(n_messages);
  return Status::Ok();
}

Status Conversation::Edit(size_t index, std::string content) {
  if (index >= impl_->messages.size()) {
    return Status::InvalidArgument("no message " + std::to_string(index) + ": the history has " +
                                   std::to_string(impl_->messages.size()));
  }
  impl_->messages[index].content = std::move(content);
  impl_->messages.resize(index + 1);
  return Status::Ok();
}

void Conversation::Reset() { impl_->messages.clear(); }

Status Conversation::SetHistory(std::vector<ChatMessage> messages) {
  for (const ChatMessage& m : messages) {
    if (m.role.empty()) return Status::InvalidArgument("a chat message has no role");
  }
  impl_->messages = std::move(messages);
  return Status::Ok();
}

const std::vector<ChatMessage>& Conversation::history() const { return impl_->messages; }
const ConversationOptions& Conversation::options() const { return impl_->options; }

Result<int32_t> Conversation::CountTokens() const {
  Result<std::vector<llama_token>> t = impl_->Tokens(0, impl_->messages.size(), true);
  if (!t.ok()) return t.status();
  return static_cast<int32_t>(t->size());
}

}  // namespace edgellm
