// EmbedRoutes: /v1/embeddings and /v1/rerank over an Embedder (serve_embed.h).
#include "serve_embed.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <span>

#include "serve_request.h"

namespace cli {
namespace {

using json = nlohmann::json;

// Little-endian float32 bytes in base64, as OpenAI's encoding_format "base64" sends them.
std::string base64_floats(std::span<const float> v) {
  static const char* kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// An edgellm error from the embedder as an HTTP error: bad input 400, the rest 500.
void send_status(httplib::Response& res, const edgellm::Status& st) {
  const bool client = st.code() == edgellm::Code::kInvalidArgument;
  send_error(res, client ? 400 : 500, client ? "invalid_request_error" : "server_error",
             st.message());
}

}  // namespace

void EmbedRoutes::Routes(httplib::Server& s) {
  s.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) {
    Embeddings(req, res);
  });
  for (const char* path : {"/v1/rerank", "/rerank"}) {
    s.Post(path, [this](const httplib::Request& req, httplib::Response& res) { Rerank(req, res); });
  }
}

json EmbedRoutes::ModelEntry(int64_t created) const {
  const edgellm::EmbedderInfo& i = embedder_->info();
  return {{"id", id_},
          {"object", "model"},
          {"created", created},
          {"owned_by", "edgellm"},
          {"edgellm", {{"kind", i.can_rerank ? "rerank" : "embedding"},
                       {"dims", i.dims},
                       {"pooling", edgellm::pooling_name(i.pooling)},
                       {"max_tokens", i.max_tokens}}}};
}

void EmbedRoutes::Embeddings(const httplib::Request& req, httplib::Response& res) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return send_error(res, 400, "invalid_request_error", "the body is not a JSON object");
  }
  if (!embedder_->info().can_embed) {
    return send_error(res, 400, "invalid_request_error",
                      id_ + " is a rerank model: use /v1/rerank");
  }
  if (!body.contains("input")) {
    return send_error(res, 400, "invalid_request_error", "input is missing");
  }
  // input: "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
  const json& in = body["input"];
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> tokens;
  auto as_ids = [&](const json& a, std::vector<int32_t>* out) {
    for (const json& t : a) {
      if (!t.is_number_integer()) return false;
      const int64_t v = t.get<int64_t>();
      out->push_back(v < INT32_MIN || v > INT32_MAX ? -1 : static_cast<int32_t>(v));
    }
    return true;
  };
  const char* kShape = "input must be a string, an array of strings, an array of token ids or "
                       "an array of such arrays";
  if (in.is_string()) {
    texts.push_back(in.get<std::string>());
  } else if (in.is_array() && !in.empty() && in[0].is_number_integer()) {
    tokens.emplace_back();
    if (!as_ids(in, &tokens.back())) return send_error(res, 400, "invalid_request_error", kShape);
  } else if (in.is_array() && !in.empty()) {
    for (const json& x : in) {
      if (x.is_string()) {
        texts.push_back(x.get<std::string>());
      } else if (x.is_array() && texts.empty()) {
        tokens.emplace_back();
        if (!as_ids(x, &tokens.back())) {
          return send_error(res, 400, "invalid_request_error", kShape);
        }
      } else {
        return send_error(res, 400, "invalid_request_error", kShape);
      }
    }
    if (!texts.empty() && !tokens.empty()) {
      return send_error(res, 400, "invalid_request_error", "input mixes strings and token arrays");
    }
  } else {
    return send_error(res, 400, "invalid_request_error", kShape);
  }
  const size_t n = texts.size() + tokens.size();
  if (n > static_cast<size_t>(max_inputs_)) {
    return send_error(res, 400, "invalid_request_error",
                      "input has " + std::to_string(n) + " items, more than this server's " +
                          std::to_string(max_inputs_) + " (--max-inputs): send them in parts");
  }
  std::string format = "float";
  if (body.contains("encoding_format") && !body["encoding_format"].is_null()) {
    if (!body["encoding_format"].is_string() ||
        (body["encoding_format"] != "float" && body["encoding_format"] != "base64")) {
      return send_error(res, 400, "invalid_request_error",
                        "encoding_format must be \"float\" or \"base64\"");
    }
    format = body["encoding_format"].get<std::string>();
  }
  const int32_t dims = embedder_->info().dims;
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    if (!body["dimensions"].is_number_integer() || body["dimensions"].get<int64_t>() != dims) {
      return send_error(res, 400, "invalid_request_error",
                        id_ + " gives vectors of " + std::to_string(dims) +
                            " dimensions and does not support shortening them: omit dimensions "
                            "or send " + std::to_string(dims));
    }
  }
  edgellm::EmbedOptions eo;  // no truncation: an input over the model's length is a 400
  auto r = engine_->Run([&] {
    return texts.empty() ? embedder_->EmbedTokens(tokens, eo) : embedder_->Embed(texts, eo);
  });
  if (!r.ok()) return send_status(res, r.status());
  json data = json::array();
  for (size_t i = 0; i < r->size(); ++i) {
    const auto v = r->vector(i);
    json item = {{"object", "embedding"}, {"index", i}};
    if (format == "base64") {
      item["embedding"] = base64_floats(v);
    } else {
      item["embedding"] = std::vector<float>(v.begin(), v.end());
    }
    data.push_back(std::move(item));
  }
  res.set_content(json{{"object", "list"},
                       {"data", std::move(data)},
                       {"model", id_},
                       {"usage", {{"prompt_tokens", r->stats.n_tokens},
                                  {"total_tokens", r->stats.n_tokens}}}}
                      .dump(),
                  "application/json");
}

void EmbedRoutes::Rerank(const httplib::Request& req, httplib::Response& res) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    return send_error(res, 400, "invalid_request_error", "the body is not a JSON object");
  }
  if (!embedder_->info().can_rerank) {
    return send_error(res, 400, "invalid_request_error",
                      id_ + " is an embedding model, not a rerank model: start serve with "
                            "--embedding-model RERANKER.gguf");
  }
  if (!body.contains("query") || !body["query"].is_string()) {
    return send_error(res, 400, "invalid_request_error", "query must be a string");
  }
  if (!body.contains("documents") || !body["documents"].is_array() || body["documents"].empty()) {
    return send_error(res, 400, "invalid_request_error",
                      "documents must be a non-empty array of strings");
  }
  std::vector<std::string> docs;
  for (const json& d : body["documents"]) {
    if (!d.is_string()) {
      return send_error(res, 400, "invalid_request_error", "documents must be strings");
    }
    docs.push_back(d.get<std::string>());
  }
  if (docs.size() > static_cast<size_t>(max_inputs_)) {
    return send_error(res, 400, "invalid_request_error",
                      std::to_string(docs.size()) + " documents, more than this server's " +
                          std::to_string(max_inputs_) + " (--max-inputs): send them in parts");
  }
  size_t top_n = docs.size();
  if (body.contains("top_n") && !body["top_n"].is_null()) {
    if (!body["top_n"].is_number_integer() || body["top_n"].get<int64_t>() < 1) {
      return send_error(res, 400, "invalid_request_error", "top_n must be a positive integer");
    }
    top_n = std::min(top_n, static_cast<size_t>(body["top_n"].get<int64_t>()));
  }
  if (body.contains("return_documents") && !body["return_documents"].is_null() &&
      !body["return_documents"].is_boolean()) {
    return send_error(res, 400, "invalid_request_error", "return_documents must be true or false");
  }
  const bool with_docs = body.contains("return_documents") && body["return_documents"] == true;
  auto r = engine_->Run([&] { return embedder_->Rerank(body["query"].get<std::string>(), docs); });
  if (!r.ok()) return send_status(res, r.status());
  json results = json::array();
  for (size_t k = 0; k < top_n; ++k) {
    const auto i = static_cast<size_t>(r->order[k]);
    json item = {{"index", i}, {"relevance_score", r->scores[i]}};
    if (with_docs) item["document"] = {{"text", docs[i]}};
    results.push_back(std::move(item));
  }
  res.set_content(json{{"object", "list"},
                       {"model", id_},
                       {"results", std::move(results)},
                       {"usage", {{"prompt_tokens", r->stats.n_tokens},
                                  {"total_tokens", r->stats.n_tokens}}}}
                      .dump(),
                  "application/json");
}

}  // namespace cli
