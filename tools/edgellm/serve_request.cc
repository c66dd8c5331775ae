// Parsing and shaping the OpenAI-compatible bodies of `edgellm serve`.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "serve_request.h"

#include "common.h"

namespace cli {

using json = nlohmann::json;

void send_error(httplib::Response& res, int status, const std::string& type,
                const std::string& message) {
  res.status = status;
  res.set_content(json{{"error", {{"message", message}, {"type", type}, {"code", status}}}}.dump(),
                  "application/json");
}

const char* finish_name(edgellm::FinishReason r) {
  switch (r) {
    case edgellm::FinishReason::kLength:
    case edgellm::FinishReason::kContextFull: return "length";
    case edgellm::FinishReason::kCancelled: return "cancelled";
    case edgellm::FinishReason::kToolCalls: return "tool_calls";
    default: return "stop";
  }
}

namespace {

// response_format, json_schema and grammar into o->json_schema / o->grammar.
bool read_format(const json& body, edgellm::GenerateOptions* o, std::string* err) {
  const size_t max_bytes = o->grammar_limits.max_bytes;
  auto schema_text = [&](const json& schema) {
    if (!schema.is_object() && !schema.is_boolean()) {
      *err = "the JSON schema must be an object";
      return false;
    }
    o->json_schema = schema.dump();
    return true;
  };
  if (body.contains("response_format") && !body["response_format"].is_null()) {
    const json& rf = body["response_format"];
    const std::string type =
        rf.is_object() && rf.contains("type") && rf["type"].is_string() ? rf["type"].get<std::string>()
                                                                        : "";
    if (type == "json_object") {
      // Any JSON object; a "schema" next to it (llama-server's extension) narrows it.
      if (rf.contains("schema") && !schema_text(rf["schema"])) return false;
      if (o->json_schema.empty()) o->json_schema = R"({"type":"object"})";
    } else if (type == "json_schema") {
      if (!rf.contains("json_schema") || !rf["json_schema"].is_object() ||
          !rf["json_schema"].contains("schema")) {
        *err = "response_format json_schema needs json_schema.schema (the JSON Schema)";
        return false;
      }
      if (!schema_text(rf["json_schema"]["schema"])) return false;
    } else if (type != "text") {
      *err = "response_format.type must be text, json_object or json_schema";
      return false;
    }
  }
  if (body.contains("json_schema") && !body["json_schema"].is_null()) {
    if (!o->json_schema.empty()) {
      *err = "send response_format or json_schema, not both";
      return false;
    }
    if (!schema_text(body["json_schema"])) return false;
  }
  if (body.contains("grammar") && !body["grammar"].is_null()) {
    if (!body["grammar"].is_string()) {
      *err = "grammar must be a string (GBNF)";
      return false;
    }
    if (!o->json_schema.empty()) {
      *err = "send a grammar or a JSON schema (response_format), not both";
      return false;
    }
    o->grammar = body["grammar"].get<std::string>();
  }
  if (body.contains("json_whitespace") && !body["json_whitespace"].is_null()) {
    const json& w = body["json_whitespace"];
    if (!w.is_string() || !edgellm::parse_json_whitespace(w.get<std::string>(), &o->json_whitespace)) {
      *err = "json_whitespace must be \"compact\", \"none\" or \"free\"";
      return false;
    }
  }
  const size_t size = std::max(o->json_schema.size(), o->grammar.size());
  if (size > max_bytes) {
    *err = std::string(o->grammar.empty() ? "the JSON schema" : "the grammar") + " is " +
           std::to_string(size) + " bytes, more than this server's limit of " +
           std::to_string(max_bytes) + " (--max-schema-bytes)";
    return false;
  }
  return true;
}

}  // namespace

// edgellm's `speculative`: false (off), true (the defaults) or {ngram, jump, draft,
// max_draft, adaptive}, each optional (draft: the server's --spec draft:FILE model).
bool read_speculative(const json& body, edgellm::GenerateOptions* o, std::string* err) {
  if (!body.contains("speculative") || body["speculative"].is_null()) return true;
  const json& v = body["speculative"];
  edgellm::SpeculativeOptions& s = o->speculative;
  if (v.is_boolean()) {
    if (!v.get<bool>()) s.max_draft = 0;
    return true;
  }
  if (!v.is_object()) {
    *err = "speculative must be true, false or an object {ngram, jump, jump_commit, draft, "
           "max_draft, adaptive}";
    return false;
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    const json& x = it.value();
    if (k == "ngram" || k == "jump" || k == "jump_commit" || k == "draft" || k == "adaptive") {
      if (!x.is_boolean()) {
        *err = "speculative." + k + " must be true or false";
        return false;
      }
      (k == "ngram" ? s.ngram : k == "jump" ? s.jump : k == "jump_commit" ? s.jump_commit
       : k == "draft" ? s.draft : s.adaptive) = x.get<bool>();
    } else if (k == "max_draft") {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > 16) {
        *err = "speculative.max_draft must be an integer from 0 (off) to 16";
        return false;
      }
      s.max_draft = x.get<int32_t>();
    } else {
      *err = "speculative has no field '" + k.substr(0, 40) +
             "': use ngram, jump, jump_commit, draft, max_draft, adaptive";
      return false;
    }
  }
  return true;
}

bool read_options(const json& body, edgellm::GenerateOptions* o, std::string* err) {
  if (!read_format(body, o, err)) return false;
  if (!read_tools(body, o, err)) return false;
  if (!read_speculative(body, o, err)) return false;
  // Each sampling field checked for its JSON type first, so a wrong one is a 400 naming the
  // field and the type it wants (not a JSON library's exception text).
  auto present = [&](const char* k) { return body.contains(k) && !body[k].is_null(); };
  auto wrong = [&](const char* k, const char* want) {
    *err = std::string(k) + " must be " + want + ", not " + body[k].type_name() + " (" +
           body[k].dump().substr(0, 40) + ")";
    return false;
  };
  for (const char* k : {"max_tokens", "max_completion_tokens"}) {
    if (!present(k)) continue;
    if (!body[k].is_number_integer()) return wrong(k, "an integer");
    const int64_t v = body[k].get<int64_t>();
    o->max_tokens = v < 0 ? -1 : static_cast<int32_t>(std::min<int64_t>(v, INT32_MAX));
  }
  if (present("temperature")) {
    if (!body["temperature"].is_number()) return wrong("temperature", "a number");
    o->temperature = body["temperature"].get<float>();
  }
  if (present("top_p")) {
    if (!body["top_p"].is_number()) return wrong("top_p", "a number");
    o->top_p = body["top_p"].get<float>();
  }
  if (present("seed")) {
    if (!body["seed"].is_number_integer() || body["seed"].get<int64_t>() < 0 ||
        body["seed"].get<int64_t>() > UINT32_MAX) {
      return wrong("seed", "an integer from 0 to 4294967295");
    }
    o->seed = body["seed"].get<uint32_t>();
  }
  if (present("stop")) {
    const json& st = body["stop"];
    if (st.is_string()) {
      o->stop.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      for (const json& x : st) {
        if (!x.is_string()) return wrong("stop", "a string or an array of strings");
        o->stop.push_back(x.get<std::string>());
      }
    } else {
      return wrong("stop", "a string or an array of strings");
    }
  }
  if (o->max_tokens < 1 || o->max_tokens > 1 << 20) {
    *err = "max_tokens must be between 1 and 1048576";
    return false;
  }
  if (!(o->temperature >= 0 && o->temperature <= 10)) {
    *err = "temperature must be between 0 and 10";
    return false;
  }
  if (!(o->top_p > 0 && o->top_p <= 1)) {
    *err = "top_p must be in (0, 1]";
    return false;
  }
  return true;
}

namespace {

// A message's content: a string, or an array of parts (what the OpenAI SDKs send): text, and
// in user messages images (`image_url` with a data: URL) and audio (`input_audio`, base64
// wav/mp3), each put at its place as a media marker. False with *err for anything else.
bool content_parts(const json& c, size_t i, const std::string& role, const MediaLimits& limits,
                   edgellm::ChatMessage* msg, ChatRequest* r, std::string* err) {
  const std::string at = "messages[" + std::to_string(i) + "]";
  if (c.is_string()) {
    msg->content = c.get<std::string>();
    return true;
  }
  if (!c.is_array()) {
    *err = at + ".content must be a string or an array of parts";
    return false;
  }
  for (const json& part : c) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "text" && part.contains("text") && part["text"].is_string()) {
      msg->content += part["text"].get<std::string>();
      continue;
    }
    if (type != "image_url" && type != "input_audio") {
      *err = at + (type == "image" || type == "file"
                       ? " has a '" + type + "' part: send images as image_url parts with a "
                                             "data: URL, audio as input_audio parts"
                       : " has a content part of type '" + type +
                             "': use text, image_url or input_audio");
      return false;
    }
    if (role != "user") {
      *err = at + " (" + role + ") has a '" + type + "' part: only user messages carry media";
      return false;
    }
    edgellm::Result<edgellm::Media> media = edgellm::Status::InvalidArgument("");
    if (type == "image_url") {
      const json* u = part.contains("image_url") ? &part["image_url"] : nullptr;
      if (u && u->is_object() && u->contains("url")) u = &(*u)["url"];
      if (!u || !u->is_string()) {
        *err = at + " has an image_url part without a url";
        return false;
      }
      const std::string url = u->get<std::string>();
      if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
        *err = at + " has a remote image URL: this server does not fetch URLs (a phone-side "
                    "server must not); send the image inline as a data: URL (base64)";
        return false;
      }
      media = edgellm::media_from_data_url(url, limits.max_bytes);
    } else {
      const json* a = part.contains("input_audio") ? &part["input_audio"] : nullptr;
      if (!a || !a->is_object() || !a->contains("data") || !(*a)["data"].is_string()) {
        *err = at + " has an input_audio part without base64 data";
        return false;
      }
      const std::string format = a->value("format", "wav");
      if (format != "wav" && format != "mp3" && format != "flac") {
        *err = at + " has input_audio in format '" + format + "': use wav, mp3 or flac";
        return false;
      }
      media = edgellm::media_from_data_url("data:audio/" + format + ";base64," +
                                               (*a)["data"].get<std::string>(),
                                           limits.max_bytes);
    }
    if (!media.ok()) {
      *err = at + ": " + media.status().message();
      return false;
    }
    r->media_bytes += media->bytes.size();
    if (++r->n_media > limits.max_items) {
      *err = "the request carries more than " + std::to_string(limits.max_items) +
             " images or audio clips (this server's --max-media)";
      return false;
    }
    if (r->media_bytes > limits.max_bytes) {
      *err = "the request's media take more than " + std::to_string(limits.max_bytes) +
             " bytes (this server's --max-media-bytes)";
      return false;
    }
    msg->content += edgellm::media_marker();
    msg->media.push_back(std::move(media).value());
  }
  return true;
}

}  // namespace

bool parse_messages(const json& body, const MediaLimits& limits, ChatRequest* r,
                    std::string* err) {
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
    *err = "messages must be a non-empty array";
    return false;
  }
  const json& msgs = body["messages"];
  if (msgs.size() > 10000) {
    *err = "messages holds " + std::to_string(msgs.size()) + " entries; at most 10000";
    return false;
  }
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      *err = at + " needs a string role and a content";
      return false;
    }
    const std::string role = m["role"];
    const bool calls = role == "assistant" && m.contains("tool_calls") &&
                       m["tool_calls"].is_array() && !m["tool_calls"].empty();
    if (!m.contains("content") && !calls) {
      *err = at + " needs a string role and a content";
      return false;
    }
    if (role != "system" && role != "user" && role != "assistant" && role != "developer" &&
        role != "tool") {
      *err = at + " has role '" + role + "': use system, user, assistant or tool";
      return false;
    }
    edgellm::ChatMessage msg{role == "developer" ? "system" : role, ""};
    if (m.contains("content") && !m["content"].is_null() &&
        !content_parts(m["content"], i, role, limits, &msg, r, err)) {
      return false;
    }
    const std::string content = msg.content;
    if (role == "tool") {
      if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string()) {
        *err = at + " (a tool result) needs tool_call_id: the id of the call it answers";
        return false;
      }
      msg.tool_call_id = m["tool_call_id"];
      if (m.contains("name") && m["name"].is_string()) msg.name = m["name"];
      r->has_tool_messages = true;
    }
    if (calls) {
      for (const json& c : m["tool_calls"]) {
        const json* f = c.is_object() && c.contains("function") ? &c["function"] : nullptr;
        if (!f || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string()) {
          *err = at + ".tool_calls needs {id, type: function, function: {name, arguments}}";
          return false;
        }
        edgellm::ToolCall call;
        call.name = (*f)["name"];
        if (c.contains("id") && c["id"].is_string()) call.id = c["id"];
        if (f->contains("arguments")) {
          const json& a = (*f)["arguments"];
          call.arguments = a.is_string() ? a.get<std::string>() : a.dump();
        }
        msg.tool_calls.push_back(std::move(call));
      }
      r->has_tool_messages = true;
    }
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
      msg.reasoning = m["reasoning_content"];
    }
    if (i == 0 && (role == "system" || role == "developer")) {
      r->system = content;
    } else {
      r->messages.push_back(std::move(msg));
    }
  }
  if (r->messages.empty() ||
      (r->messages.back().role != "user" && r->messages.back().role != "tool")) {
    *err = "the last message must have role user (or tool: a tool's result to answer)";
    return false;
  }
  return true;
}

bool read_tools(const json& body, edgellm::GenerateOptions* o, std::string* err) {
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const json& c = body["tool_choice"];
    if (c.is_string()) {
      o->tool_choice = c.get<std::string>();
      if (o->tool_choice != "auto" && o->tool_choice != "none" && o->tool_choice != "required") {
        *err = "tool_choice must be auto, none, required or {\"type\": \"function\", "
               "\"function\": {\"name\": ...}}";
        return false;
      }
    } else if (c.is_object() && c.contains("function") && c["function"].is_object() &&
               c["function"].contains("name") && c["function"]["name"].is_string()) {
      o->tool_choice = c["function"]["name"];
    } else {
      *err = "tool_choice must be auto, none, required or {\"type\": \"function\", "
             "\"function\": {\"name\": ...}}";
      return false;
    }
  }
  if (body.contains("parallel_tool_calls") && body["parallel_tool_calls"].is_boolean()) {
    o->parallel_tool_calls = body["parallel_tool_calls"];
  }
  if (body.contains("reasoning_format") && body["reasoning_format"].is_string()) {
    const std::string f = body["reasoning_format"];
    if (f == "none") {
      o->reasoning = edgellm::Reasoning::kInline;
    } else if (f == "hidden") {
      o->reasoning = edgellm::Reasoning::kHide;
    } else if (f != "deepseek" && f != "auto") {
      *err = "reasoning_format must be deepseek (default), auto, hidden or none";
      return false;
    }
  }
  if (!body.contains("tools") || body["tools"].is_null()) return true;
  const json& tools = body["tools"];
  if (!tools.is_array()) {
    *err = "tools must be an array of {\"type\": \"function\", \"function\": {...}}";
    return false;
  }
  if (tools.size() > 128) {
    *err = "tools holds " + std::to_string(tools.size()) + " entries; at most 128";
    return false;
  }
  const std::string text = tools.dump();
  if (text.size() > o->grammar_limits.max_bytes) {
    *err = "tools are " + std::to_string(text.size()) + " bytes, more than this server's limit "
           "of " + std::to_string(o->grammar_limits.max_bytes) + " (--max-schema-bytes)";
    return false;
  }
  auto specs = parse_tools(tools);
  if (!specs.ok()) {
    *err = specs.status().message();
    return false;
  }
  o->tools = std::move(specs).value();
  return true;
}

json usage_json(const edgellm::Stats& s) {
  const int32_t prompt = s.n_prompt + s.n_cached;
  json details = {{"cached_tokens", s.n_cached}};
  if (s.n_media > 0) details["media_tokens"] = s.n_media_tokens;  // images' and audio's
  // Speculation's guesses as OpenAI's predicted-output counts: kept and thrown away.
  json completion = {{"accepted_prediction_tokens", s.spec_accepted},
                     {"rejected_prediction_tokens", s.spec_drafted - s.spec_accepted}};
  return {{"prompt_tokens", prompt},
          {"completion_tokens", s.n_gen},
          {"total_tokens", prompt + s.n_gen},
          {"prompt_tokens_details", std::move(details)},
          {"completion_tokens_details", std::move(completion)},
          // edgellm's: the same, with the grammar's share and the decode calls.
          {"speculative", {{"drafted", s.spec_drafted},
                           {"accepted", s.spec_accepted},
                           {"forced", s.spec_forced},
                           {"draft_model_drafted", s.spec_draft_drafted},
                           {"draft_model_accepted", s.spec_draft_accepted},
                           {"decode_calls", s.decode_calls}}}};
}

}  // namespace cli
