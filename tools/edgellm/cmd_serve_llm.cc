// edgellm serve [-m MODEL] [--embedding-model MODEL] [--host H] [--port P] [--ctx N] [--threads T]
// [--queue N] [--id NAME]: an OpenAI-compatible HTTP server over the local engine.
// /v1/chat/completions (streamed over SSE or not), /v1/completions, /v1/models, /health,
// /metrics (serve_metrics.h); with an embedding or rerank model also /v1/embeddings or
// /v1/rerank (serve_embed.cc). One generation at a time; up to --queue requests wait their
// turn, more get 429. Runs until SIGINT or SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <httplib.h>

#include "common.h"
#include "http_serve.h"
#include "serve_embed.h"
#include "serve_metrics.h"
#include "serve_queue.h"
#include "serve_request.h"

namespace cli {
namespace {

using json = nlohmann::json;

struct LlmServeArgs {
  std::string model, host = "127.0.0.1", id, api_key_env = "EDGELLM_SERVE_API_KEY";
  std::string embedding_model;
  MediaArgs media;                // --mmproj, --image-max-tokens
  MediaLimits media_limits;       // --max-media, --max-media-bytes
  std::string json_whitespace = "compact";  // --json-whitespace: a request's default
  SpecArgs spec;                  // --spec, --spec-max, --spec-fixed: a request's default
  int port = 8080, ctx = -1, threads = -1, queue = 8, max_inputs = 2048;
  // Bounds on a client's schema or grammar (a request over one is a 400 naming it).
  edgellm::GrammarLimits limits{64 * 1024, 32, 2048};
};

class LlmServer {
 public:
  // `model` and `session` may be null (an embedding server); `embed` may be null. Every call
  // into them runs on `engine` (serve_queue.h).
  LlmServer(const LlmServeArgs& a, std::unique_ptr<edgellm::Model> model,
            std::unique_ptr<edgellm::Session> session, EmbedRoutes* embed, EngineThread* engine)
      : a_(a), model_(std::move(model)), session_(std::move(session)), embed_(embed),
        engine_(engine), gate_(a.queue) {}

  void Routes(httplib::Server& s) {
    // With a key in the environment, /v1/* wants "Authorization: Bearer KEY" (401 otherwise).
    const char* key = a_.api_key_env.empty() ? nullptr : std::getenv(a_.api_key_env.c_str());
    std::string expect = key && *key ? "Bearer " + std::string(key) : std::string();
    s.set_pre_routing_handler([expect = std::move(expect)](const httplib::Request& req,
                                                            httplib::Response& res) {
      if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
      // `curl -d` labels its body application/x-www-form-urlencoded, and httplib answers such a
      // body over 8 KiB (an image's base64) with an empty 413 before any handler runs. Every
      // /v1/ body is JSON: label it so (the request is the server's own, not const there).
      if (req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) ==
          0) {
        auto& headers = const_cast<httplib::Request&>(req).headers;
        headers.erase("Content-Type");
        headers.emplace("Content-Type", "application/json");
      }
      if (expect.empty()) return httplib::Server::HandlerResponse::Unhandled;
      const std::string got = req.get_header_value("Authorization");
      unsigned diff = got.size() != expect.size();
      for (size_t i = 0; i < got.size() && i < expect.size(); ++i) diff |= got[i] ^ expect[i];
      if (diff == 0) return httplib::Server::HandlerResponse::Unhandled;
      send_error(res, 401, "invalid_request_error",
                 "missing or wrong API key: send Authorization: Bearer <key>");
      return httplib::Server::HandlerResponse::Handled;
    });
    s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(json{{"status", "ok"}, {"model", a_.id}}.dump(), "application/json");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.Text(), "text/plain; version=0.0.4");
    });
    s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      json data = json::array();
      if (model_) {
        data.push_back({{"id", a_.id}, {"object", "model"}, {"created", created_},
                        {"owned_by", "edgellm"}});
      }
      if (embed_) data.push_back(embed_->ModelEntry(created_));
      res.set_content(json{{"object", "list"}, {"data", data}}.dump(), "application/json");
    });
    if (embed_) embed_->Routes(s);
    for (const char* path : {"/v1/chat/completions", "/v1/completions"}) {
      const bool chat = std::string(path) == "/v1/chat/completions";
      s.Post(path, [this, chat](const httplib::Request& req, httplib::Response& res) {
        if (!model_) {
          return send_error(res, 404, "invalid_request_error",
                            "this server has no chat model (it serves embeddings): start it "
                            "with -m MODEL for completions");
        }
        Handle(req, res, chat);
      });
    }
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res, bool chat) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      return send_error(res, 400, "invalid_request_error", "the body is not a JSON object");
    }
    auto o = std::make_shared<edgellm::GenerateOptions>();
    std::string err;
    o->grammar_limits = a_.limits;
    edgellm::parse_json_whitespace(a_.json_whitespace, &o->json_whitespace);  // CLI11 checked it
    (void)apply_spec(a_.spec, o.get());  // checked at startup
    if (!read_options(body, o.get(), &err)) {
      return send_error(res, 400, "invalid_request_error", err);
    }
    // A bad schema, grammar or tool schema is a 400 before anything streams.
    for (const edgellm::ToolSpec& t : o->tools) {
      edgellm::GenerateOptions probe;
      probe.grammar_limits = o->grammar_limits;
      probe.json_schema = t.parameters;
      if (edgellm::Status st = edgellm::CheckOutputConstraint(*model_, probe); !st.ok()) {
        return send_error(res, 400, "invalid_request_error",
                          "tool \"" + t.name + "\": " + st.message());
      }
    }
    if (edgellm::Status st = edgellm::CheckOutputConstraint(*model_, *o); !st.ok()) {
      std::string m = st.message();
      if (m.find("more than the limit") != std::string::npos) {
        m += "; this server's limits: --max-schema-bytes, --max-schema-depth, --max-grammar-rules";
      }
      return send_error(res, 400, "invalid_request_error", m);
    }
    auto prompt = std::make_shared<std::string>();
    auto request = std::make_shared<ChatRequest>();
    if (chat) {
      if (!parse_messages(body, a_.media_limits, request.get(), &err)) {
        return send_error(res, 400, "invalid_request_error", err);
      }
      if (request->n_media > 0 && model_->info().mmproj_path.empty()) {
        return send_error(res, 400, "invalid_request_error",
                          "the request carries images or audio, but this server was started "
                          "without the model's projector: restart it with --mmproj FILE");
      }
    } else {
      if (!body.contains("prompt") || !body["prompt"].is_string()) {
        return send_error(res, 400, "invalid_request_error", "prompt must be a string");
      }
      *prompt = body["prompt"].get<std::string>();
      o->reuse_prefix = true;  // like llama-server's cache_prompt
    }
    if (body.contains("n") && !body["n"].is_null() &&
        !(body["n"].is_number_integer() && body["n"].get<int64_t>() == 1)) {
      return send_error(res, 400, "invalid_request_error",
                        "n must be 1: this server returns one choice; send n requests for more");
    }
    if (chat && !model_->info().has_chat_template) {
      res.set_header("X-Edgellm-Chat-Template", "chatml-fallback");
    }
    const bool stream = body.value("stream", false);
    bool include_usage = false;
    if (body.contains("stream_options") && body["stream_options"].is_object()) {
      const json& so = body["stream_options"];
      include_usage = so.contains("include_usage") && so["include_usage"].is_boolean() &&
                      so["include_usage"].get<bool>();
    }
    const std::string id = std::string(chat ? "chatcmpl-" : "cmpl-") + std::to_string(++seq_);
    const std::string object = chat ? "chat.completion" : "text_completion";

    if (!gate_.Enter()) {
      res.set_header("Retry-After", "1");
      return send_error(res, 429, "rate_limit_error",
                        "the server is busy: " + std::to_string(a_.queue) +
                            " requests are already waiting; retry later");
    }
    // Media are decoded and tokenized before anything is streamed: a damaged image is a 400.
    if (chat && request->n_media > 0) {
      if (edgellm::Status st = engine_->Run([&] { return CheckMedia(*request); }); !st.ok()) {
        gate_.Leave();
        return send_error(res, 400, "invalid_request_error", st.message());
      }
    }
    if (!stream) {
      auto gen = engine_->Run([&] {
        return chat ? Reply(*request, *o, {}) : session_->Generate(*prompt, *o);
      });
      gate_.Leave();
      if (!gen.ok()) {
        metrics_.AddError();
        return send_error(res, 400, "invalid_request_error", gen.status().message());
      }
      metrics_.Add(gen->stats);
      if (too_long(*gen)) {
        return send_error(res, 400, "context_length_exceeded", too_long_message());
      }
      json choice = {{"index", 0}, {"finish_reason", finish_name(gen->finish_reason)}};
      if (chat) {
        json message = {{"role", "assistant"}, {"content", gen->text}};
        if (!gen->tool_calls.empty()) {
          message["tool_calls"] = tool_calls_json(gen->tool_calls);
          if (gen->text.empty()) message["content"] = nullptr;
        }
        if (!gen->reasoning.empty()) message["reasoning_content"] = gen->reasoning;
        choice["message"] = std::move(message);
      } else {
        choice["text"] = gen->text;
      }
      res.set_content(json{{"id", id},
                           {"object", object},
                           {"created", std::time(nullptr)},
                           {"model", a_.id},
                           {"choices", {choice}},
                           {"usage", usage_json(gen->stats)}}
                          .dump(),
                      "application/json");
      return;
    }
    // Streamed: the generation runs inside the content provider, on the engine thread while this
    // connection's thread waits, and holds the turnstile until it ends. A client that goes away cancels it.
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, o, prompt, request, id, object, chat, include_usage](size_t,
                                                                    httplib::DataSink& sink) {
          auto chunk = [&](const json& delta, const char* finish) {
            json c = {{"index", 0}, {"finish_reason", finish ? json(finish) : json(nullptr)}};
            if (chat) {
              c["delta"] = delta;
            } else {
              c["text"] = delta.value("content", "");
            }
            const std::string line =
                "data: " +
                json{{"id", id},
                     {"object", chat ? "chat.completion.chunk" : object},
                     {"created", std::time(nullptr)},
                     {"model", a_.id},
                     {"choices", {c}}}
                    .dump() +
                "\n\n";
            return sink.write(line.data(), line.size());
          };
          bool ok = !chat || chunk({{"role", "assistant"}, {"content", ""}}, nullptr);
          edgellm::Result<edgellm::Generation> gen = edgellm::Status::Cancelled("client gone");
          if (ok) {
            const edgellm::TextSink piece_sink = [&](std::string_view piece) {
              ok = chunk({{"content", std::string(piece)}}, nullptr);
              return ok;  // a failed write (client gone) cancels the generation
            };
            // A reasoning model's thinking streams as its own delta (reasoning_content).
            o->reasoning_sink = [&](std::string_view piece) {
              ok = chunk({{"reasoning_content", std::string(piece)}}, nullptr);
              return ok;
            };
            // The pieces are written from the engine thread while this one waits.
            gen = engine_->Run([&] {
              return chat ? Reply(*request, *o, piece_sink)
                          : session_->Generate(*prompt, *o, piece_sink);
            });
            if (gen.ok() && too_long(*gen)) {
              gen = edgellm::Status::InvalidArgument(too_long_message());
            }
          }
          gate_.Leave();
          if (gen.ok()) {
            metrics_.Add(gen->stats);
          } else {
            metrics_.AddError();
          }
          if (ok) {
            if (gen.ok()) {
              // Tool calls: one delta each, whole (the arguments are known once they parse).
              for (size_t i = 0; i < gen->tool_calls.size() && ok; ++i) {
                json call = tool_calls_json({gen->tool_calls[i]})[0];
                call["index"] = i;
                ok = chunk({{"tool_calls", json::array({call})}}, nullptr);
              }
              chunk(json::object(), finish_name(gen->finish_reason));
              if (include_usage) {  // stream_options.include_usage: a last chunk with usage
                const std::string line =
                    "data: " +
                    json{{"id", id},
                         {"object", chat ? "chat.completion.chunk" : object},
                         {"created", std::time(nullptr)},
                         {"model", a_.id},
                         {"choices", json::array()},
                         {"usage", usage_json(gen->stats)}}
                        .dump() +
                    "\n\n";
                sink.write(line.data(), line.size());
              }
            } else {
              const std::string line =
                  "data: " +
                  json{{"error", {{"message", gen.status().message()}, {"type", "server_error"}}}}
                      .dump() +
                  "\n\n";
              sink.write(line.data(), line.size());
            }
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
          }
          sink.done();
          return true;
        });
  }

  // The reply to a chat request: a conversation rebuilt from its messages over the one
  // session, whose KV cache keeps the previous request's tokens, so a client that sends the
  // whole history every turn prefills only what is new. Too long a history drops its oldest
  // turns first.
  edgellm::Result<edgellm::Generation> Reply(const ChatRequest& r, const edgellm::GenerateOptions& o,
                                             const edgellm::TextSink& sink) {
    // Tools, tool results and reasoning go through the chat format's renderer and parser:
    // the messages as history of one stateless chat turn, whose longest cached prefix the
    // session keeps (reuse_prefix).
    if (!o.tools.empty() || r.has_tool_messages ||
        (o.reasoning != edgellm::Reasoning::kInline && model_->Reasons())) {
      edgellm::GenerateOptions go = o;
      go.chat = true;
      go.reuse_prefix = true;
      go.system_prompt = r.system;
      go.history = r.messages;
      std::string last;
      if (go.history.back().role == "user") {
        last = go.history.back().content;
        go.media = std::move(go.history.back().media);
        go.history.pop_back();
      }
      return session_->Generate(last, go, sink);
    }
    auto c = ConversationOf(r);
    if (!c.ok()) return c.status();
    return (*c)->Regenerate(o, sink);
  }
  // A conversation over the one session holding the request's messages.
  edgellm::Result<std::unique_ptr<edgellm::Conversation>> ConversationOf(const ChatRequest& r) {
    edgellm::ConversationOptions co;
    co.system_prompt = r.system;
    co.chatml_fallback = true;
    auto c = edgellm::Conversation::Create(*session_, co);
    if (!c.ok()) return c.status();
    EDGELLM_RETURN_IF_ERROR((*c)->SetHistory(r.messages));
    return c;
  }
  // The request's media decoded, bounded and tokenized (the model keeps their shapes, so the
  // reply does not decode them again).
  edgellm::Status CheckMedia(const ChatRequest& r) {
    auto c = ConversationOf(r);
    if (!c.ok()) return c.status();
    auto n = (*c)->CountTokens();
    return n.ok() ? edgellm::Status::Ok() : n.status();
  }
  bool too_long(const edgellm::Generation& g) const {
    return g.finish_reason == edgellm::FinishReason::kContextFull && g.stats.n_gen == 0;
  }
  std::string too_long_message() const {
    return "the request does not fit the context of " + std::to_string(session_->n_ctx()) +
           " tokens, even after dropping its earliest turns: shorten the last message or the "
           "system prompt, or start the server with a larger --ctx";
  }

  LlmServeArgs a_;
  std::unique_ptr<edgellm::Model> model_;
  std::unique_ptr<edgellm::Session> session_;
  EmbedRoutes* embed_;
  EngineThread* engine_;
  Turnstile gate_;
  ServeMetrics metrics_;
  std::atomic<uint64_t> seq_{0};
  const int64_t created_ = std::time(nullptr);
};

void log_request(const httplib::Request& req, const httplib::Response& res) {
  std::fprintf(stderr, "%s %s -> %d\n", req.method.c_str(), req.path.c_str(), res.status);
}

int serve_llm(LlmServeArgs a) {
  if (a.model.empty() && a.embedding_model.empty()) {
    return fail(edgellm::Status::InvalidArgument(
        "nothing to serve: pass -m MODEL (chat), --embedding-model MODEL, or both"));
  }
  if (a.id.empty() && !a.model.empty()) a.id = std::filesystem::path(a.model).stem().string();
  const sigset_t stop_signals = block_stop_signals();
  // Declared first, so it outlives the models and sessions whose calls it runs.
  EngineThread engine;
  std::unique_ptr<edgellm::Model> model, draft;
  std::unique_ptr<edgellm::Session> session;
  std::unique_ptr<EmbedRoutes> embed;
  // Loading and warm-up run on the engine thread too (serve_queue.h says why).
  const int loaded = engine.Run([&]() -> int {
    if (!a.model.empty()) {
      std::fprintf(stderr, "[load] %s\n", a.model.c_str());
      edgellm::LoadOptions lo;
      edgellm::GenerateOptions unused;
      if (auto st = apply_media(a.media, &lo, &unused); !st.ok()) return fail(st);
      if (!a.media.mmproj.empty()) std::fprintf(stderr, "[load] %s (projector)\n", a.media.mmproj.c_str());
      auto m = edgellm::Model::Load(a.model, lo);
      if (!m.ok()) return fail(m.status());
      edgellm::SessionOptions so;
      so.n_ctx = a.ctx;
      so.n_threads = a.threads;
      if (auto st = load_spec_draft(a.spec, a.model, a.ctx, &draft); !st.ok()) return fail(st);
      so.draft_model = draft.get();
      std::fprintf(stderr, "[init] context and warm-up\n");
      auto sess = edgellm::Session::Create(**m, so);
      if (!sess.ok()) return fail(sess.status());
      if (!(*m)->info().has_chat_template) {
        std::fprintf(stderr, "[template] %s has no chat template: chat requests use ChatML, as "
                             "llama-server does (responses carry X-Edgellm-Chat-Template)\n",
                     a.model.c_str());
      }
      model = std::move(*m);
      session = std::move(*sess);
    }
    if (!a.embedding_model.empty()) {
      std::fprintf(stderr, "[load] %s (embeddings)\n", a.embedding_model.c_str());
      edgellm::EmbedderOptions eo;
      eo.n_threads = a.threads;
      auto e = edgellm::Embedder::Load(a.embedding_model, eo);
      if (!e.ok()) return fail(e.status());
      embed = std::make_unique<EmbedRoutes>(
          std::move(*e), std::filesystem::path(a.embedding_model).stem().string(), a.max_inputs,
          &engine);
    }
    return 0;
  });
  if (loaded != 0) return loaded;
  LlmServer llm(a, std::move(model), std::move(session), embed.get(), &engine);

  httplib::Server server;
  llm.Routes(server);
  server.set_logger(log_request);
  server.set_read_timeout(30, 0);
  // Each write goes out at once: with Nagle's algorithm on, a response's second small write waits
  // for the client's delayed ACK on a kept-alive connection (up to 40 ms per request).
  server.set_tcp_nodelay(true);
  // A request body holds its media as base64 (4/3 of their bytes) besides its text.
  server.set_payload_max_length(std::max<size_t>(size_t{8} << 20,
                                                 a.media_limits.max_bytes / 3 * 4 + (size_t{4} << 20)));
  return serve_until_signal(server, stop_signals, a.host, a.port, [&](int port) {
    // The address on stdout, alone on its line, so a script or test can read it (--port 0).
    std::printf("http://%s:%d\n", a.host.c_str(), port);
    std::fflush(stdout);
    if (!a.model.empty()) {
      std::fprintf(stderr, "serving %s as \"%s\" on http://%s:%d/v1 (Ctrl-C to stop)\n",
                   a.model.c_str(), a.id.c_str(), a.host.c_str(), port);
    }
    if (embed) {
      std::fprintf(stderr, "serving %s as \"%s\" on http://%s:%d/v1/%s\n",
                   a.embedding_model.c_str(), embed->id().c_str(), a.host.c_str(), port,
                   embed->kind());
    }
  });
}

}  // namespace

Action add_serve_llm(CLI::App& app) {
  auto* a = new LlmServeArgs();
  auto* cmd = app.add_subcommand(
      "serve", "OpenAI-compatible HTTP server over the local engine (/v1/chat/completions, ...)");
  cmd->add_option("-m,--model", a->model, "GGUF chat model to serve");
  cmd->add_option("--embedding-model", a->embedding_model,
                  "an embedding or rerank model (GGUF) for /v1/embeddings or /v1/rerank");
  cmd->add_option("--max-inputs", a->max_inputs,
                  "most inputs (or documents) one embedding or rerank request may send "
                  "(default 2048)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--mmproj", a->media.mmproj,
                  "the model's projector (mmproj .gguf): image_url and input_audio parts");
  cmd->add_option("--image-max-tokens", a->media.image_max_tokens,
                  "tokens per image at most: fewer encode faster (default: the projector's)");
  cmd->add_option("--max-media", a->media_limits.max_items,
                  "images and audio clips one request may carry (default 8)")
      ->check(CLI::Range(size_t{1}, size_t{32}));
  cmd->add_option("--max-media-bytes", a->media_limits.max_bytes,
                  "bytes of media one request may carry, all items together (default 20 MiB)")
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20));
  cmd->add_option("--host", a->host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", a->port, "TCP port; 0 picks a free one (default 8080)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--ctx", a->ctx, "context length (default: min(trained, 2048))");
  cmd->add_option("--threads", a->threads, "threads (default: physical cores)");
  cmd->add_option("--queue", a->queue, "requests that may wait for the model (default 8)")
      ->check(CLI::Range(0, 10000));
  cmd->add_option("--id", a->id, "model id in the API (default: the file name)");
  cmd->add_option("--api-key-env", a->api_key_env,
                  "when this environment variable is set, /v1/* requires it as a Bearer token "
                  "(default EDGELLM_SERVE_API_KEY)");
  cmd->add_option("--max-schema-bytes", a->limits.max_bytes,
                  "largest JSON schema or grammar a request may send (default 65536)")
      ->check(CLI::Range(size_t{16}, size_t{16} << 20));
  cmd->add_option("--max-schema-depth", a->limits.max_depth,
                  "deepest nesting of a request's JSON schema (default 32)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-grammar-rules", a->limits.max_rules,
                  "most grammar rules a request's schema or grammar may make (default 2048)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--json-whitespace", a->json_whitespace,
                  "whitespace in a schema's or tool call's JSON when the request's "
                  "json_whitespace does not say: compact (default: at most one space, no "
                  "newline), none, or free (newlines and indentation)")
      ->check(CLI::IsMember({"compact", "none", "free"}));
  add_spec_options(cmd, &a->spec);
  return [a] {
    edgellm::GenerateOptions probe;
    if (edgellm::Status st = apply_spec(a->spec, &probe); !st.ok()) return fail(st);
    return serve_llm(*a);
  };
}

}  // namespace cli
