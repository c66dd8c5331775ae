// ReplyStream: a reply read through the chat format's parser while it streams. The model's
// raw text comes in (from TextStreamer); the answer goes to the app's sink, the reasoning to
// the reasoning sink (Reasoning::kSeparate), tool calls are collected. Each piece re-parses
// the text so far as partial output (llama-server does the same) and forwards what grew.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "edgellm/session.h"
#include "engine/llama_glue_chat.h"

namespace edgellm::engine {

class ReplyStream {
 public:
  ReplyStream(const ChatParser& parser, const GenerateOptions& o, const TextSink& sink);
  // The sink TextStreamer writes the raw text to. Must not outlive this object.
  const TextSink& raw_sink() const { return raw_sink_; }
  // Parses the whole text as final output, forwards what is left and fills `gen`'s text
  // (the answer), reasoning and tool calls; finish reason kToolCalls when the model called
  // tools and stopped on its own. A reply cut short inside a tool call keeps the call's text
  // out of `gen->text`: the call so far is its last tool call. False when a sink cancelled.
  bool Finish(Generation* gen);

 private:
  bool Forward(const ParsedReply& r);

  const ChatParser& parser_;
  const GenerateOptions& o_;
  const TextSink& sink_;
  TextSink raw_sink_;
  std::string raw_;
  std::string content_sent_, reasoning_sent_;
};

}  // namespace edgellm::engine
