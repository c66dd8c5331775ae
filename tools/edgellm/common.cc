#include "common.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace cli {

int fail(const edgellm::Status& st) {
  std::fprintf(stderr, "edgellm: error: %s\n", st.ToString().c_str());
  return 1;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / double(1ull << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  }
  return buf;
}

void progress_line(const char* stage, float f, bool done) {
  static const bool tty = isatty(STDERR_FILENO);
  static std::string last_stage;
  static int last_pct = -1;
  const int pct = static_cast<int>(f * 100.0f + 0.5f);
  if (last_stage != stage) {
    last_stage = stage;
    last_pct = -1;
  }
  if (pct == last_pct || (!tty && !done && pct % 25 != 0)) return;
  last_pct = pct;
  const int width = 30, filled = pct * width / 100;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '-');
  std::fprintf(stderr, "%s[%s] %s %3d%%%s", tty ? "\r" : "", stage, bar.c_str(), pct,
               (done || !tty) ? "\n" : "");
  std::fflush(stderr);
}

edgellm::Result<uint64_t> parse_size(const std::string& text) {
  size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  if (pos == 0 || mult == 0 || !(v > 0) || v * mult > 1e15) {
    return edgellm::Status::InvalidArgument("'" + text +
                                            "' is not a memory size: use e.g. 6G, 8GB, 12GiB");
  }
  return static_cast<uint64_t>(v * mult);
}

nlohmann::json info_json(const edgellm::ModelInfo& i) {
  return {{"path", i.path},
          {"arch", i.arch},
          {"name", i.name},
          {"description", i.description},
          {"quant", i.quant},
          {"n_params", i.n_params},
          {"weights_bytes", i.weights_bytes},
          {"file_bytes", i.file_bytes},
          {"n_layer", i.n_layer},
          {"n_embd", i.n_embd},
          {"n_head", i.n_head},
          {"n_head_kv", i.n_head_kv},
          {"n_ctx_train", i.n_ctx_train},
          {"n_vocab", i.n_vocab},
          {"vocab_type", i.vocab_type},
          {"has_chat_template", i.has_chat_template},
          {"load_mode", edgellm::load_mode_name(i.load_mode)},
          {"metadata_only", i.metadata_only},
          {"load_ms", i.load_ms}};
}

namespace {

edgellm::Result<std::string> read_text(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return edgellm::Status::NotFound(std::string(what) + " file not found: " + path);
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

void add_constraint_options(CLI::App* cmd, ConstraintArgs* c) {
  auto* js = cmd->add_option("--json-schema", c->json_schema,
                             "Constrain the output to this JSON Schema: a file, or the schema "
                             "itself when it starts with '{' (--json adds the parsed \"json\")");
  auto* gr = cmd->add_option("--grammar", c->grammar,
                             "Constrain the output to this GBNF grammar file (start rule root)");
  js->excludes(gr);
  auto* tl = cmd->add_option("--tools", c->tools,
                             "Tools the model may call: an OpenAI tools JSON file (needs --chat "
                             "with run); calls are printed as JSON");
  tl->excludes(js);
  tl->excludes(gr);
  cmd->add_option("--json-whitespace", c->json_whitespace,
                  "Whitespace allowed in --json-schema's and tool calls' JSON: compact (default: "
                  "at most one space at a separator, no newline), none, or free (the schema "
                  "converter's own: newlines and indentation)")
      ->check(CLI::IsMember({"compact", "none", "free"}));
  cmd->add_option("--tool-choice", c->tool_choice,
                  "auto (default), required, none, or a tool's name");
  cmd->add_option("--reasoning", c->reasoning,
                  "A reasoning model's <think> text: separate (default: on stderr, apart from "
                  "the answer), hide, or inline")
      ->check(CLI::IsMember({"separate", "hide", "inline"}));
}

edgellm::Result<std::vector<edgellm::ToolSpec>> parse_tools(const nlohmann::json& tools) {
  const nlohmann::json list = tools.is_array() ? tools : nlohmann::json::array({tools});
  std::vector<edgellm::ToolSpec> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& t = list[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    const nlohmann::json* f = &t;
    if (t.is_object() && t.contains("function")) f = &t["function"];
    if (!f->is_object() || !f->contains("name") || !(*f)["name"].is_string()) {
      return edgellm::Status::InvalidArgument(
          where + " needs {\"type\": \"function\", \"function\": {\"name\": ..., "
                  "\"parameters\": {...}}}");
    }
    edgellm::ToolSpec s;
    s.name = (*f)["name"];
    if (f->contains("description") && (*f)["description"].is_string()) {
      s.description = (*f)["description"];
    }
    if (f->contains("parameters")) {
      if (!(*f)["parameters"].is_object()) {
        return edgellm::Status::InvalidArgument(where + ".parameters must be a JSON Schema object");
      }
      s.parameters = (*f)["parameters"].dump();
    }
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json tool_calls_json(const std::vector<edgellm::ToolCall>& calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const edgellm::ToolCall& c : calls) {
    out.push_back({{"id", c.id},
                   {"type", "function"},
                   {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return out;
}

edgellm::Status load_constraint(const ConstraintArgs& c, edgellm::GenerateOptions* go) {
  if (!c.json_schema.empty()) {
    const size_t first = c.json_schema.find_first_not_of(" \t\r\n");
    const bool inline_schema = first != std::string::npos &&
                               (c.json_schema[first] == '{' || c.json_schema == "true");
    if (inline_schema) {
      go->json_schema = c.json_schema;
    } else {
      auto text = read_text(c.json_schema, "--json-schema");
      if (!text.ok()) return text.status();
      go->json_schema = std::move(text).value();
      if (go->json_schema.empty()) {
        return edgellm::Status::InvalidArgument("--json-schema file is empty: " + c.json_schema);
      }
    }
  }
  if (!c.grammar.empty()) {
    auto text = read_text(c.grammar, "--grammar");
    if (!text.ok()) return text.status();
    go->grammar = std::move(text).value();
  }
  if (!c.tools.empty()) {
    auto text = read_text(c.tools, "--tools");
    if (!text.ok()) return text.status();
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded()) {
      return edgellm::Status::InvalidArgument("--tools file is not JSON: " + c.tools);
    }
    auto tools = parse_tools(j);
    if (!tools.ok()) return tools.status();
    go->tools = std::move(tools).value();
  }
  go->tool_choice = c.tool_choice;
  edgellm::parse_json_whitespace(c.json_whitespace, &go->json_whitespace);  // checked by CLI11
  go->reasoning = c.reasoning == "hide"     ? edgellm::Reasoning::kHide
                  : c.reasoning == "inline" ? edgellm::Reasoning::kInline
                                            : edgellm::Reasoning::kSeparate;
  return edgellm::Status::Ok();
}

void add_json_result(const edgellm::Generation& g, nlohmann::json* out) {
  if (!g.reasoning.empty()) (*out)["reasoning"] = g.reasoning;
  if (!g.tool_calls.empty()) (*out)["tool_calls"] = tool_calls_json(g.tool_calls);
  if (g.json_state == edgellm::JsonState::kNone) return;
  (*out)["json_state"] = edgellm::json_state_name(g.json_state);
  if (g.json_state == edgellm::JsonState::kComplete) {
    (*out)["json"] = nlohmann::json::parse(g.json, nullptr, /*allow_exceptions=*/false);
  }
}

void warn_json_state(const edgellm::Generation& g) {
  if (g.json_state == edgellm::JsonState::kIncomplete) {
    std::fprintf(stderr, "edgellm: the JSON is incomplete (%s before the schema's end): raise "
                 "--max-tokens\n", edgellm::finish_reason_name(g.finish_reason));
  } else if (g.json_state == edgellm::JsonState::kInvalid) {
    std::fprintf(stderr, "edgellm: a stop string ended the output before the schema's end: "
                 "it is not the schema's JSON\n");
  }
}

std::string preview(const std::string& text, size_t max_bytes) {
  size_t n = std::min(max_bytes, text.size());
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::string out = text.substr(0, n);
  for (char& c : out) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return n < text.size() ? out + "..." : out;
}

}  // namespace cli
