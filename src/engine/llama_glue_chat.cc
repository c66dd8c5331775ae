// The llama.cpp glue for chat turns that carry tools or reasoning: llama.cpp common's chat
// library renders the model's own Jinja template with the tools, gives the tool-call grammar
// (lazy, with the template's triggers) and the parser that splits the model's output into
// reasoning, content and tool calls.
#include "engine/llama_glue_chat.h"

#include <cctype>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.h"  // llama.cpp common: regex_escape
#include "core/log.h"
#include "engine/llama_glue_common.h"
#include "json.h"  // llama.cpp common: common_json

namespace edgellm::engine {

struct ChatParser {
  common_chat_parser_params params;
  // The generic JSON tool-call format (a template without one of its own): the reply is one
  // JSON object, {"tool_call": {"name", "arguments"}} or {"response": "..."}.
  bool generic = false;
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
    case COMMON_GRAMMAR_TRIGGER_TYPE_WORD:
      spec->trigger_patterns.push_back(regex_escape(t.value));
      break;
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN:
      spec->trigger_patterns.push_back(t.value);
      break;
    case COMMON_GRAMMAR_TRIGGER_TYPE_PATTERN_FULL: {
      std::string p = t.value;
      if (p.empty() || p.front() != '^') p = "^" + p;
      if (p.back() != '$') p += "$";
      spec->trigger_patterns.push_back(p);
      break;
    }
    case COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN:
      spec->trigger_tokens.push_back(t.token);
      break;
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

// The tools and the answer format, told in a system message (appended to the app's own).
std::string generic_instructions(const std::vector<ToolSpec>& tools, bool required) {
  std::string list = "[";
  for (size_t i = 0; i < tools.size(); ++i) {
    if (i) list += ",";
    common_json t = common_json::object();
    t["name"] = tools[i].name;
    t["description"] = tools[i].description;
    t["parameters"] = common_json::parse_no_throw(tools[i].parameters);
    list += t.dump();
  }
  list += "]";
  return std::string("You can call these tools: ") + list +
         "\nAnswer with one JSON object: {\"tool_call\": {\"name\": <a tool's name>, "
         "\"arguments\": <its arguments>}} to call a tool" +
         (required ? "." : ", or {\"response\": <your answer>} to answer directly.");
}

// A template without a tool-call format: llama.cpp's generic JSON format, rendered and
// constrained here (the pinned common library renders the tools but gives no grammar).
Result<ChatRender> render_generic(const ChatTemplates& t, std::vector<ChatMessage> messages,
                                  const std::vector<ToolSpec>& tools, bool required,
                                  JsonWhitespace ws) {
  common_chat_templates_inputs in;
  in.use_jinja = true;
  in.add_generation_prompt = true;
  const std::string told = generic_instructions(tools, required);
  bool merged = false;
  for (ChatMessage& m : messages) {
    if (m.role == "system" && !merged) {
      m.content += "\n\n" + told;
      merged = true;
    }
  }
  if (!merged) messages.insert(messages.begin(), ChatMessage{"system", told});
  for (const ChatMessage& m : messages) {
    common_chat_msg out;
    out.role = m.role;
    out.content = m.content;
    if (m.role == "assistant" && !m.tool_calls.empty()) {  // the call as the format writes it
      common_json call = common_json::object();
      call["name"] = m.tool_calls[0].name;
      call["arguments"] = common_json::parse_no_throw(m.tool_calls[0].arguments);
      common_json body = common_json::object();
      body["tool_call"] = call;
      out.content = body.dump();
    } else if (m.role == "tool") {  // a template without tools may not know the role
      out.role = "user";
      out.content = "Result of the tool" + (m.name.empty() ? "" : " " + m.name) + ": " + m.content;
    }
    in.messages.push_back(std::move(out));
  }
  common_chat_params p;
  try {
    p = common_chat_templates_apply(t.t.get(), in);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("the model's chat template failed on these "
                                               "messages: ") +
                                   e.what());
  }
  // The answer's schema: a call to one of the tools, or (auto) a direct response.
  std::string calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    common_json name = common_json::make(tools[i].name);
    calls += std::string(i ? "," : "") + R"({"type":"object","properties":{"name":{"const":)" +
             name.dump() + R"(},"arguments":)" + tools[i].parameters +
             R"(},"required":["name","arguments"],"additionalProperties":false})";
  }
  std::string schema = R"({"type":"object","properties":{"tool_call":{"anyOf":[)" + calls +
                       R"(]}},"required":["tool_call"],"additionalProperties":false})";
  if (!required) {
    schema = R"({"anyOf":[)" + schema +
             R"(,{"type":"object","properties":{"response":{"type":"string"}},)"
             R"("required":["response"],"additionalProperties":false}]})";
  }
  GrammarLimits lim;
  lim.max_bytes = size_t{16} << 20;
  lim.max_depth = 1 << 10;
  Result<std::string> gbnf = json_schema_to_gbnf(schema, lim, ws);
  if (!gbnf.ok()) return gbnf.status();
  ChatRender r;
  r.prompt = std::move(p.prompt);
  r.format = "generic JSON";
  r.generic_tools = true;
  r.parse = true;
  r.grammar.gbnf = std::move(gbnf).value();
  auto parser = std::make_shared<ChatParser>();
  parser->generic = true;
  r.parser = std::move(parser);
  detail::emit_log(LogLevel::kWarn, "edgellm",
                   "the model's chat template has no tool-call format of its own: tools use "
                   "the generic JSON tool-call format ({\"tool_call\": ...} or "
                   "{\"response\": ...})");
  return r;
}

}  // namespace

Result<ChatRender> render_chat(const ChatTemplates& t, const std::vector<ChatMessage>& messages,
                               const GenerateOptions& o) {
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
      return Status::InvalidArgument("tool_choice names \"" + choice +
                                     "\", which is not one of "
                                     "the tools: use auto, none, required or a tool's name");
    }
    tools = std::move(named);
    in.tool_choice = COMMON_CHAT_TOOL_CHOICE_REQUIRED;
  }
  if (!tools.empty() && in.tool_choice != COMMON_CHAT_TOOL_CHOICE_NONE) {
    const auto caps = common_chat_templates_get_caps(t.t.get());
    const auto it = caps.find("supports_tool_calls");
    if (it != caps.end() && !it->second) {
      return render_generic(t, messages, tools, in.tool_choice == COMMON_CHAT_TOOL_CHOICE_REQUIRED,
                            o.json_whitespace);
    }
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
                                               "messages and tools: ") +
                                   e.what());
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
    r.grammar.gbnf = p.grammar;
    r.grammar.lazy = p.grammar_lazy;
    // The arguments' JSON: common builds it with the schema converter's `space` rule.
    set_json_whitespace(&r.grammar.gbnf, o.json_whitespace);
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
  return r;
}

ParsedReply parse_reply(const ChatParser& parser, const std::string& text, bool partial) {
  ParsedReply out;
  if (parser.generic) {  // one JSON object: nothing streams before it is whole
    if (partial) return out;
    const common_json j = common_json::parse_no_throw(text);
    if (j.is_object() && j.contains("tool_call") && j.at("tool_call").is_object()) {
      const common_json& c = j.at("tool_call");
      ToolCall call;
      if (c.contains("name") && c.at("name").is_string())
        call.name = c.at("name").get<std::string>();
      if (c.contains("arguments")) call.arguments = c.at("arguments").dump();
      out.tool_calls.push_back(std::move(call));
      out.ok = true;
    } else if (j.is_object() && j.contains("response") && j.at("response").is_string()) {
      out.content = j.at("response").get<std::string>();
      out.ok = true;
    } else {
      out.content = text;
      out.error = "not the generic tool-call format's JSON";
    }
    return out;
  }
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

namespace {

// The decoded part of a JSON string whose closing quote was cut off: `text` starts just after
// its opening quote. An escape cut in the middle is left out.
std::string json_string_prefix(std::string_view text) {
  for (size_t trim = 0; trim <= 6 && trim <= text.size(); ++trim) {
    const std::string quoted = "\"" + std::string(text.substr(0, text.size() - trim)) + "\"";
    const common_json j = common_json::parse_no_throw(quoted);
    if (j.is_string()) return j.get<std::string>();
  }
  return {};
}

// The length of the object or array `text` starts with, when it closes in `text`; else all of
// `text` (a value cut off).
size_t json_value_size(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      ++depth;
    } else if ((ch == '}' || ch == ']') && --depth <= 0) {
      return i + 1;
    }
  }
  return text.size();
}

// `"key"` then `:` after `from` in `text`: the position after the colon and its whitespace.
size_t after_key(const std::string& text, const std::string& key, size_t from) {
  const size_t k = text.find("\"" + key + "\"", from);
  if (k == std::string::npos) return std::string::npos;
  size_t p = text.find_first_not_of(" \t\r\n", k + key.size() + 2);
  if (p == std::string::npos || text[p] != ':') return std::string::npos;
  p = text.find_first_not_of(" \t\r\n", p + 1);
  return p == std::string::npos ? text.size() : p;
}

// The generic format's {"tool_call": {"name": ..., "arguments": ...}} or {"response": ...}
// as far as the grammar had let the model write it.
ParsedReply generic_cut(const std::string& text) {
  ParsedReply out;
  out.ok = true;
  // The object's first key says which: a tool's arguments may have a key "response" too.
  const size_t r = after_key(text, "response", 0);
  const size_t call = after_key(text, "tool_call", 0);
  if (r < call) {
    if (r < text.size() && text[r] == '"') out.content = json_string_prefix(text.substr(r + 1));
    return out;
  }
  if (call == std::string::npos) return out;
  const size_t name = after_key(text, "name", call);
  if (name == std::string::npos || name >= text.size() || text[name] != '"') return out;
  const size_t name_end = text.find('"', name + 1);  // the grammar's names have no escapes
  if (name_end == std::string::npos) return out;
  ToolCall c;
  c.name = text.substr(name + 1, name_end - name - 1);
  if (size_t a = after_key(text, "arguments", name_end); a != std::string::npos) {
    c.arguments = text.substr(a, json_value_size(std::string_view(text).substr(a)));
  }
  out.tool_calls.push_back(std::move(c));
  return out;
}

}  // namespace

ParsedReply parse_cut_reply(const ChatParser& parser, const std::string& text) {
  if (parser.generic) return generic_cut(text);
  return parse_reply(parser, text, /*partial=*/true);
}

}  // namespace edgellm::engine
