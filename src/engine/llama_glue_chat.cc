// The llama.cpp glue for chat turns that carry tools or reasoning: llama.cpp common's chat
// library renders the model's own Jinja template with the tools, gives the tool-call grammar
// (lazy, with the template's triggers) and the parser that splits the model's output into
// reasoning, content and tool calls.
#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"  // llama.cpp common: regex_escape
#include "json.h"    // llama.cpp common: common_json
#include "core/log.h"
#include "engine/llama_glue_chat.h"
#include "engine/llama_glue_common.h"

namespace edgellm::engine {

struct ChatParser {
  common_chat_parser_params params;
};

namespace {

common_chat_msg to_common(const ChatMessage& m) {
  common_chat_msg out;
  out.role = m.role;
  out.content = m.content;
  out.reasoning_content = m.reasoning;
  out.tool_call_id = m.tool_call_id;
  out.tool_name = m.name;
  for (const ToolCall& c : m.tool_calls) out.tool_calls.push_back({c.name, c.arguments, c.id});
  return out;
}

// common's trigger kinds as the patterns and tokens llama.cpp's lazy grammar takes.
void add_trigger(const common_grammar_trigger& t, GrammarSpec* spec) {
  switch (t.type) {
    case COMMON_GRAMMAR_TRIGGER_TYPE_WORD: spec->trigger_patterns.push_back(regex_escape(t.value)); break;
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN: spec->trigger_patterns.push_back(t.value); break;
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: {
      std::string p = t.value;
      if (p.empty() || p.front() != '^') p = "^" + p;
      if (p.back() != '$') p += "$";
      spec->trigger_patterns.push_back(p);
      break;
    }
    case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN: spec->trigger_tokens.push_back(t.token); break;
  }
}

// common's "required" grammar still lets free text come before the first call (its root
// holds an optional `until-N` rule up to the call's opening). A required or named call starts
// at the first token: the optional text is taken out of the root rule.
void require_call_first(std::string* gbnf) {
  const size_t root = gbnf->rfind("\nroot ::= ", std::string::npos) != std::string::npos
                          ? gbnf->rfind("\nroot ::= ") + 1
                          : (gbnf->rfind("root ::= ", 0) == 0 ? 0 : std::string::npos);
  if (root == std::string::npos) return;
  const size_t end = gbnf->find('\n', root);
  std::string line = gbnf->substr(root, end == std::string::npos ? std::string::npos : end - root);
  const size_t old_size = line.size();
  for (size_t p = line.find(" until-"); p != std::string::npos; p = line.find(" until-", p)) {
    size_t q = p + 7;
    while (q < line.size() && std::isdigit(static_cast<unsigned char>(line[q]))) ++q;
    if (q < line.size() && line[q] == '?') {
      line.erase(p, q + 1 - p);
    } else {
      p = q;
    }
  }
  gbnf->replace(root, old_size, line);
}

}  // namespace

Result<ChatRender> render_chat(const ChatTemplates& t, const llama_model* model,
                               const std::vector<ChatMessage>& messages, const GenerateOptions& o) {
  common_chat_templates_inputs in;
  in.use_jinja = true;
  in.add_generation_prompt = true;
  for (const ChatMessage& m : messages) {
    if (m.role.empty()) return Status::InvalidArgument("a chat message has no role");
    in.messages.push_back(to_common(m));
  }
  std::vector<ToolSpec> tools = o.tools;
  const std::string& choice = o.tool_choice;
  if (choice == "none") {
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_NONE;
  } else if (choice == "required") {
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
  } else if (choice == "auto" || choice.empty()) {
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_AUTO;
  } else {  // a tool's name: that tool, and a call to it is required
    std::vector<ToolSpec> named;
    for (const ToolSpec& s : tools) {
      if (s.name == choice) named.push_back(s);
    }
    if (named.empty()) {
      return Status::InvalidArgument("tool_choice names \"" + choice + "\", which is not one of "
                                     "the tools: use auto, none, required or a tool's name");
    }
    tools = std::move(named);
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
  }
  for (const ToolSpec& s : tools) in.tools.push_back({s.name, s.description, s.parameters});
  in.parallel_tool_calls = o.parallel_tool_calls;
  in.reasoning_format = o.reasoning == Reasoning::kInline ? COMMON_REASONING_FORMAT_NONE
                                                          : COMMON_REASONING_FORMAT_DEEPSEEK;
  common_chat_params p;
  try {
    p = common_chat_templates_apply(t.t.get(), in);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the model's chat template failed on these "
                                               "messages and tools: ") + e.what());
  }
  ChatRender r;
  r.prompt = std::move(p.prompt);
  r.format = common_chat_format_name(p.format);
  r.stops = p.additional_stops;
  r.generation_prompt = p.generation_prompt;
  r.supports_thinking = p.supports_thinking;
  r.preserved_tokens = p.preserved_tokens;
  if (!p.thinking_start_tag.empty()) r.preserved_tokens.push_back(p.thinking_start_tag);
  for (const std::string& tag : p.thinking_end_tags) r.preserved_tokens.push_back(tag);
  if (!tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE) {
    const auto caps = common_chat_templates_get_caps(t.t.get());
    const auto it = caps.find("supports_tool_calls");
    r.generic_tools = it != caps.end() && !it->second;
    if (r.generic_tools) {
      detail::emit_log(LogLevel::kWarn, "edgellm",
                       "the model's chat template has no tool-call format of its own: tools "
                       "use llama.cpp's generic JSON tool-call format");
    }
    r.grammar.gbnf = p.grammar;
    r.grammar.lazy = p.grammar_lazy;
    if (in.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED) require_call_first(&r.grammar.gbnf);
    if (!o.parallel_tool_calls) {  // common's rule repeats calls either way: one call
      const std::string many = "tool-calls ::= (tool-call space)+";
      if (const size_t at = r.grammar.gbnf.find(many); at != std::string::npos) {
        r.grammar.gbnf.replace(at, many.size(), "tool-calls ::= tool-call space");
      }
    }
    for (const common_grammar_trigger& trig : p.grammar_triggers) add_trigger(trig, &r.grammar);
  }
  r.parse = !tools.empty() || (o.reasoning != Reasoning::kInline && p.supports_thinking);
  if (r.parse) {
    auto parser = std::make_shared<ChatParser>();
    parser->params = common_chat_parser_params(p);
    parser->params.reasoning_format = in.reasoning_format;
    parser->params.parse_tool_calls = !tools.empty();
    try {
      if (!p.parser.empty()) parser->params.parser.load(p.parser);
    } catch (const std::exception& e) {
      return Status::Internal(std::string("llama.cpp's chat parser did not load: ") + e.what());
    }
    r.parser = std::move(parser);
  }
  (void)model;
  return r;
}

ParsedReply parse_reply(const ChatParser& parser, const std::string& text, bool partial) {
  ParsedReply out;
  try {
    const common_chat_msg m = common_chat_parse(text, partial, parser.params);
    out.content = m.content;
    out.reasoning = m.reasoning_content;
    for (const common_chat_tool_call& c : m.tool_calls) {
      // A call cut off (max_tokens) has arguments that are not JSON yet: not a call to run.
      if (!partial && common_json::parse_no_throw(c.arguments).is_discarded()) {
        ++out.dropped_calls;
        continue;
      }
      out.tool_calls.push_back({c.id, c.name, c.arguments});
    }
    out.ok = true;
  } catch (const std::exception& e) {
    // Output that does not follow the format (a model that wrote something else): all of it
    // is content, as llama-server returns it.
    out.content = text;
    out.error = e.what();
  }
  return out;
}

}  // namespace edgellm::engine
