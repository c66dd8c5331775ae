// Parsing and shaping the OpenAI-compatible bodies of `edgellm serve`.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "serve_request.h"

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
    default: return "stop";
  }
}

bool read_options(const json& body, edgellm::GenerateOptions* o, std::string* err) {
  try {
    if (body.contains("max_tokens") && !body["max_tokens"].is_null()) {
      o->max_tokens = body["max_tokens"].get<int32_t>();
    }
    if (body.contains("max_completion_tokens") && !body["max_completion_tokens"].is_null()) {
      o->max_tokens = body["max_completion_tokens"].get<int32_t>();
    }
    if (body.contains("temperature") && !body["temperature"].is_null()) {
      o->temperature = body["temperature"].get<float>();
    }
    if (body.contains("top_p") && !body["top_p"].is_null()) o->top_p = body["top_p"].get<float>();
    if (body.contains("seed") && !body["seed"].is_null()) o->seed = body["seed"].get<uint32_t>();
    if (body.contains("stop") && !body["stop"].is_null()) {
      const json& s = body["stop"];
      if (s.is_string()) {
        o->stop.push_back(s.get<std::string>());
      } else {
        for (const json& x : s) o->stop.push_back(x.get<std::string>());
      }
    }
  } catch (const json::exception& e) {
    *err = std::string("a sampling field has the wrong type: ") + e.what();
    return false;
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

// A message's content: a string, or an array of parts of which only text is read (what the
// OpenAI SDKs send). False with *err for anything else.
bool content_text(const json& c, size_t i, std::string* out, std::string* err) {
  if (c.is_string()) {
    *out = c.get<std::string>();
    return true;
  }
  if (!c.is_array()) {
    *err = "messages[" + std::to_string(i) + "].content must be a string or an array of parts";
    return false;
  }
  for (const json& part : c) {
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type == "text" && part.contains("text") && part["text"].is_string()) {
      *out += part["text"].get<std::string>();
    } else if (type == "image_url" || type == "input_audio" || type == "image" ||
               type == "file") {
      *err = "messages[" + std::to_string(i) + "] has a '" + type +
             "' part: this model reads text only; send text parts";
      return false;
    } else {
      *err = "messages[" + std::to_string(i) + "] has a content part without type text";
      return false;
    }
  }
  return true;
}

}  // namespace

bool parse_messages(const json& body, ChatRequest* r, std::string* err) {
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
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content")) {
      *err = "messages[" + std::to_string(i) + "] needs a string role and a content";
      return false;
    }
    std::string content;
    if (!m["content"].is_null() && !content_text(m["content"], i, &content, err)) return false;
    const std::string role = m["role"];
    if (role != "system" && role != "user" && role != "assistant" && role != "developer") {
      *err = "messages[" + std::to_string(i) + "] has role '" + role +
             "': use system, user or assistant";
      return false;
    }
    if (i == 0 && (role == "system" || role == "developer")) {
      r->system = content;
    } else {
      r->messages.push_back({role == "developer" ? "system" : role, content});
    }
  }
  if (r->messages.empty() || r->messages.back().role != "user") {
    *err = "the last message must have role user";
    return false;
  }
  return true;
}

json usage_json(const edgellm::Stats& s) {
  const int32_t prompt = s.n_prompt + s.n_cached;
  return {{"prompt_tokens", prompt},
          {"completion_tokens", s.n_gen},
          {"total_tokens", prompt + s.n_gen},
          {"prompt_tokens_details", {{"cached_tokens", s.n_cached}}}};
}

}  // namespace cli
