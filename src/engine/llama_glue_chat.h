// Chat turns with tools or reasoning, through llama.cpp common's chat library (the glue:
// llama_glue_chat.cc). A ChatRender says how to prompt, constrain and read back one reply.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "edgellm/session.h"
#include "engine/llama_glue.h"

namespace edgellm::engine {

struct ChatParser;  // opaque: common's parser parameters for this template and request

struct ChatRender {
  std::string prompt;  // the rendered turns, the assistant's turn opened
  std::string format;  // common's name for the output format (for the log)
  bool parse = false;  // the reply goes through `parser` (tools, or reasoning)
  bool supports_thinking = false;
  bool generic_tools = false;      // the template has no tool-call format: common's generic one
  GrammarSpec grammar;             // the tool-call grammar (gbnf empty: none)
  std::vector<std::string> stops;  // stop strings the format adds
  std::string generation_prompt;   // what the template put after the last turn
  // Special tokens of the format (<tool_call>, </think>, ...) that must reach the parser as
  // their text, not as the nothing a special token otherwise prints.
  std::vector<std::string> preserved_tokens;
  std::shared_ptr<const ChatParser> parser;
};

// Renders `messages` (the last one answered next) with the model's template, the tools of `o`
// and its tool_choice ("auto", "none", "required" or a tool's name). kInvalidArgument when the
// template fails or tool_choice names no tool.
Result<ChatRender> render_chat(const ChatTemplates& t, const std::vector<ChatMessage>& messages,
                               const GenerateOptions& o);

struct ParsedReply {
  std::string content, reasoning;
  std::vector<ToolCall> tool_calls;
  bool ok = false;        // false: the text does not follow the format (all of it is content)
  int dropped_calls = 0;  // final parse: calls whose arguments were cut off (not JSON)
  std::string error;
};
// Splits the model's text (partial: more may follow) into reasoning, content and tool calls.
ParsedReply parse_reply(const ChatParser& parser, const std::string& text, bool partial);
// A reply that generation cut short (max_tokens, a full context, a cancel): the content
// before a tool call the model had begun, and that call so far (its name, and its arguments as
// the text written up to the cut, not JSON yet), as OpenAI streams a cut call. ok false when
// not even that parses.
ParsedReply parse_cut_reply(const ChatParser& parser, const std::string& text);

}  // namespace edgellm::engine
