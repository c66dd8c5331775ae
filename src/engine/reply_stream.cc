#include "engine/reply_stream.h"

#include <cstdio>
#include <random>

#include "core/log.h"
#include "core/rng.h"

namespace edgellm::engine {
namespace {

// `text` without the whitespace it starts with (DeepSeek-R1 writes "\n\n" after </think> and
// its template opens the thinking with "<think>\n").
std::string_view trimmed(const std::string& text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? std::string_view() : std::string_view(text).substr(b);
}

// The part of `now` after what was already sent, when `now` extends it (a partial parse can
// revise its last bytes: then nothing more is sent until it extends again).
std::string_view grown(const std::string& sent, std::string_view now) {
  if (now.size() <= sent.size() || now.compare(0, sent.size(), sent) != 0) return {};
  return now.substr(sent.size());
}

// "call_" and 16 hex digits: unique enough for a client to match tool results to calls.
std::string call_id() {
  static thread_local SplitMix64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                     std::random_device{}()};
  char buf[24];
  std::snprintf(buf, sizeof(buf), "call_%016llx", static_cast<unsigned long long>(rng.next()));
  return buf;
}

}  // namespace

ReplyStream::ReplyStream(const ChatParser& parser, const GenerateOptions& o, const TextSink& sink)
    : parser_(parser), o_(o), sink_(sink) {
  raw_sink_ = [this](std::string_view piece) {
    raw_.append(piece);
    return Forward(parse_reply(parser_, raw_, /*partial=*/true));
  };
}

bool ReplyStream::Forward(const ParsedReply& r) {
  if (!r.ok) return true;  // not parseable yet: wait for more
  if (std::string_view d = grown(content_sent_, trimmed(r.content)); !d.empty()) {
    content_sent_.append(d);
    if (sink_ && !sink_(d)) return false;
  }
  if (o_.reasoning == Reasoning::kSeparate) {
    if (std::string_view d = grown(reasoning_sent_, trimmed(r.reasoning)); !d.empty()) {
      reasoning_sent_.append(d);
      if (o_.reasoning_sink && !o_.reasoning_sink(d)) return false;
    }
  }
  return true;
}

bool ReplyStream::Finish(Generation* gen) {
  ParsedReply r = parse_reply(parser_, raw_, /*partial=*/false);
  const FinishReason why = gen->finish_reason;
  const bool cut = why == FinishReason::kLength || why == FinishReason::kContextFull ||
                   why == FinishReason::kCancelled;
  if (cut && (!r.ok || r.dropped_calls > 0)) {
    // Generation stopped inside a tool call: its JSON is not the answer. What streamed (the
    // text before it) stays the text; the call so far goes to tool_calls, as OpenAI sends a
    // call cut by max_tokens, and the finish reason stays.
    ParsedReply p = parse_cut_reply(parser_, raw_);
    if (p.ok) r = std::move(p);
  }
  if (!r.ok) {  // the model left the format: its text is the answer (as llama-server does)
    detail::emit_log(LogLevel::kWarn, "edgellm",
                     "the reply does not follow the chat format (" + r.error +
                         "): returned as text without tool calls");
    r.ok = true;
    r.reasoning = reasoning_sent_;
  }
  const bool ok = Forward(r);
  // The text is what the sink got (the pieces add up to it); a final parse that revised the
  // answer's last bytes keeps what streamed.
  gen->text = content_sent_;
  if (o_.reasoning == Reasoning::kSeparate) gen->reasoning = reasoning_sent_;
  gen->tool_calls = r.tool_calls;
  for (size_t i = 0; i < gen->tool_calls.size(); ++i) {
    if (gen->tool_calls[i].id.empty()) gen->tool_calls[i].id = call_id();
  }
  if (!gen->tool_calls.empty() && gen->finish_reason == FinishReason::kStop) {
    gen->finish_reason = FinishReason::kToolCalls;
  }
  return ok;
}

}  // namespace edgellm::engine
