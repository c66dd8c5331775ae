// The OpenAI-compatible request and response shapes of `edgellm serve` (cmd_serve_llm.cc):
// sampling fields, chat messages (string or parts: text, image_url, input_audio), usage, errors.
#pragma once

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"

namespace cli {

// An OpenAI error object with `status`.
void send_error(httplib::Response& res, int status, const std::string& type,
                const std::string& message);
// finish_reason as OpenAI names it ("tool_calls" included).
const char* finish_name(edgellm::FinishReason r);
// The request's sampling fields into GenerateOptions; false with *err on a bad value.
// Constrained output: `response_format` ({"type": "json_object"} or {"type": "json_schema",
// "json_schema": {"schema": {...}}}), and llama-server's `json_schema` and `grammar` fields,
// bounded by o->grammar_limits (set by the caller); edgellm's `json_whitespace` ("compact",
// "none", "free") for the schema's and the tool calls' JSON; edgellm's `speculative` (false,
// true, or {ngram, jump, max_draft, adaptive}).
bool read_options(const nlohmann::json& body, edgellm::GenerateOptions* o, std::string* err);

// A chat request's messages: the leading system message apart, the rest as the history
// whose last message is the user turn to answer.
struct ChatRequest {
  std::string system;
  std::vector<edgellm::ChatMessage> messages;
  bool has_tool_messages = false;  // assistant tool_calls or tool results among them
  size_t n_media = 0, media_bytes = 0;  // images and audio clips in user messages
};
// Bounds on a request's media (serve's --max-media, --max-media-bytes).
struct MediaLimits {
  size_t max_items = 8;
  size_t max_bytes = size_t{20} << 20;
};
// tools, tool_choice, parallel_tool_calls and reasoning_format into `o` (the tools bounded by
// o->grammar_limits); false with *err. Part of read_options.
bool read_tools(const nlohmann::json& body, edgellm::GenerateOptions* o, std::string* err);
// False with *err naming the first bad message. Content parts: text; in user messages
// image_url (data: URLs only: a remote URL is refused) and input_audio, within `limits`.
bool parse_messages(const nlohmann::json& body, const MediaLimits& limits, ChatRequest* r,
                    std::string* err);
// usage, with prompt_tokens_details.cached_tokens, completion_tokens_details' accepted and
// rejected prediction tokens (speculation's guesses) and edgellm's `speculative` counts.
nlohmann::json usage_json(const edgellm::Stats& s);

}  // namespace cli
