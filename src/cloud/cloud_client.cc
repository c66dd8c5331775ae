// CloudClient: OpenAI-compatible chat completions over libcurl, streamed (SSE) into a
// TextSink through the same TextStreamer a local generation uses.
#include "edgellm/cloud.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/streamer.h"

namespace edgellm {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// "http://user:secret@host/x" -> "http://host/x": URLs go into messages, credentials never.
std::string redact(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t host = scheme + 3;
  const size_t end = url.find_first_of("/?#", host);
  const size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < host) return url;
  return url.substr(0, host) + url.substr(at + 1);
}

std::string chat_url(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 17 && base.compare(base.size() - 17, 17, "/chat/completions") == 0) {
    return base;
  }
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) {
    return base + "/chat/completions";
  }
  return base + "/v1/chat/completions";
}

FinishReason finish_from(const std::string& s) {
  if (s == "length") return FinishReason::kLength;
  if (s == "cancelled") return FinishReason::kCancelled;
  return FinishReason::kStop;  // "stop", "content_filter", "tool_calls", ...
}

// One HTTP attempt's state, shared with curl's callbacks.
struct Attempt {
  TextStreamer* streamer = nullptr;
  std::atomic<bool>* cancel = nullptr;
  CURL* curl = nullptr;
  long http = 0;
  bool is_sse = false;
  std::string content_type;
  double retry_after_s = -1;
  std::string line;        // SSE line being assembled
  std::string error_body;  // the body of a non-2xx answer (bounded)
  std::string json_body;   // the body of a non-streamed 200 answer (bounded)
  bool done = false;       // [DONE] seen
  bool finished = false;   // a finish_reason seen
  FinishReason finish = FinishReason::kNone;
  bool sink_stopped = false;   // the streamer asked to end (stop string or sink false)
  Status event_error;          // a malformed event or an error event mid-stream
  int32_t deltas = 0, usage_prompt = -1, usage_completion = -1;
  Clock::time_point first_delta, last_delta;
  bool any_delta = false;
  Clock::time_point last_byte = Clock::now();
  double idle_s = 30;
  bool stalled = false;

  bool Delta(const std::string& text) {
    if (text.empty()) return true;
    const auto now = Clock::now();
    if (!any_delta) first_delta = now;
    any_delta = true;
    last_delta = now;
    ++deltas;
    if (!streamer->Push(text)) {
      sink_stopped = true;
      return false;
    }
    return true;
  }

  // One parsed event object (a streamed chunk or a whole non-streamed answer).
  bool Event(const json& ev, bool whole) {
    if (ev.contains("error") && ev["error"].is_object()) {
      event_error = Status::Unavailable("the cloud reported an error mid-stream: " +
                                        ev["error"].value("message", std::string("(no message)")));
      return false;
    }
    if (ev.contains("usage") && ev["usage"].is_object()) {
      const json& u = ev["usage"];
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
        usage_prompt = u["prompt_tokens"].get<int32_t>();
      }
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
        usage_completion = u["completion_tokens"].get<int32_t>();
      }
    }
    if (!ev.contains("choices") || !ev["choices"].is_array() || ev["choices"].empty()) return true;
    const json& c = ev["choices"][0];
    if (!c.is_object()) return true;
    const char* field = whole ? "message" : "delta";
    if (c.contains(field) && c[field].is_object()) {
      const json& d = c[field];
      if (d.contains("content") && d["content"].is_string()) {
        if (!Delta(d["content"].get<std::string>())) return false;
      }
    } else if (c.contains("text") && c["text"].is_string()) {
      if (!Delta(c["text"].get<std::string>())) return false;
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string()) {
      finished = true;
      finish = finish_from(c["finish_reason"].get<std::string>());
    }
    return true;
  }

  bool Line(std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty() || l.front() == ':') return true;  // event separator, comment (keep-alive)
    if (l.rfind("data:", 0) != 0) return true;        // event:, id:, retry: fields
    l.remove_prefix(5);
    if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    if (l == "[DONE]") {
      done = true;
      return true;
    }
    json ev = json::parse(l, nullptr, false);
    if (ev.is_discarded() || !ev.is_object()) {
      event_error = Status::CorruptData("the cloud sent a malformed stream event: " +
                                        std::string(l.substr(0, 120)));
      return false;
    }
    return Event(ev, false);
  }

  size_t Body(const char* data, size_t n) {
    last_byte = Clock::now();
    if (http == 0) {
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
      is_sse = content_type.find("text/event-stream") != std::string::npos;
    }
    if (http < 200 || http >= 300) {
      if (error_body.size() < 8192) error_body.append(data, std::min<size_t>(n, 8192));
      return n;
    }
    if (!is_sse) {
      if (json_body.size() + n > (64u << 20)) {
        event_error = Status::CorruptData("the cloud's answer is larger than 64 MiB");
        return 0;
      }
      json_body.append(data, n);
      return n;
    }
    for (size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') {
        line.push_back(data[i]);
        if (line.size() > (16u << 20)) {
          event_error = Status::CorruptData("the cloud sent a stream line over 16 MiB");
          return 0;
        }
        continue;
      }
      const bool go = Line(line);
      line.clear();
      if (!go) return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    return n;
  }
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  return static_cast<Attempt*>(user)->Body(data, size * n);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Attempt*>(user);
  std::string h(data, size * n);
  std::string lower = h;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.rfind("http/", 0) == 0) {  // a new status line (after a 100 Continue or redirect)
    a->content_type.clear();
    a->retry_after_s = -1;
  } else if (lower.rfind("content-type:", 0) == 0) {
    a->content_type = lower.substr(13);
  } else if (lower.rfind("retry-after:", 0) == 0) {
    char* end = nullptr;
    const double v = std::strtod(h.c_str() + 12, &end);
    if (end != h.c_str() + 12 && std::isfinite(v) && v >= 0) a->retry_after_s = v;
  }
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* a = static_cast<Attempt*>(user);
  if (a->cancel->load()) return 1;
  if (std::chrono::duration<double>(Clock::now() - a->last_byte).count() > a->idle_s) {
    a->stalled = true;
    return 1;
  }
  return 0;
}

std::string server_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) {
      return e["message"].get<std::string>();
    }
    if (e.is_string()) return e.get<std::string>();
  }
  std::string s = body.substr(0, 200);
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

struct CloudClient::Impl {
  CloudOptions options;
  std::string url, shown_url, api_key;
  std::atomic<bool> cancel{false};
  int32_t attempts = 0;

  // Sleeps up to `seconds`, waking early on Cancel(). False when cancelled.
  bool Backoff(double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until) {
      if (cancel.load()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return !cancel.load();
  }
};

CloudClient::CloudClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CloudClient::~CloudClient() = default;
const std::string& CloudClient::url() const { return impl_->shown_url; }
int32_t CloudClient::last_attempts() const { return impl_->attempts; }
void CloudClient::Cancel() { impl_->cancel.store(true); }

Result<std::unique_ptr<CloudClient>> CloudClient::Create(const CloudOptions& o) {
  if (o.base_url.rfind("http://", 0) != 0 && o.base_url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("cloud URL '" + redact(o.base_url) +
                                   "' must start with http:// or https://");
  }
  if (o.max_retries < 0 || o.max_retries > 100) {
    return Status::InvalidArgument("cloud max_retries must be in 0..100");
  }
  if (!(o.connect_timeout_s > 0) || !(o.idle_timeout_s > 0) || !(o.total_timeout_s > 0) ||
      !(o.backoff_initial_s >= 0) || !(o.backoff_max_s >= 0)) {
    return Status::InvalidArgument("cloud timeouts must be positive numbers of seconds");
  }
  curl_init_once();
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->url = chat_url(o.base_url);
  impl->shown_url = redact(impl->url);
  impl->api_key = o.api_key;
  if (impl->api_key.empty() && !o.api_key_env.empty()) {
    if (const char* v = std::getenv(o.api_key_env.c_str())) impl->api_key = v;
  }
  return std::unique_ptr<CloudClient>(new CloudClient(std::move(impl)));
}

Result<Generation> CloudClient::Generate(std::string_view prompt, const GenerateOptions& o,
                                         const TextSink& sink) {
  Impl& im = *impl_;
  const CloudOptions& co = im.options;
  const auto t_start = Clock::now();
  im.cancel.store(false);
  im.attempts = 0;
  if (prompt.empty()) {
    return Status::InvalidArgument("prompt is empty: pass the text to continue or answer");
  }
  if (o.max_tokens < 1) return Status::InvalidArgument("max_tokens must be >= 1");
  if (!o.tools.empty()) {
    return Status::InvalidArgument("tools are not sent to the cloud yet: this request needs "
                                   "the on-device model (or call the cloud's API directly)");
  }

  json messages = json::array();
  if (!o.system_prompt.empty()) messages.push_back({{"role", "system"}, {"content", o.system_prompt}});
  for (const ChatMessage& m : o.history) messages.push_back({{"role", m.role}, {"content", m.content}});
  messages.push_back({{"role", "user"}, {"content", std::string(prompt)}});
  json body = {{"model", co.model},
               {"messages", messages},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", o.max_tokens},
               {"temperature", o.temperature},
               {"top_p", o.top_p}};
  if (o.seed != 0xFFFFFFFFu) body["seed"] = o.seed;
  if (!o.stop.empty()) body["stop"] = o.stop;
  // Constrained output: the OpenAI shape for a schema, llama-server's field for a grammar.
  if (!o.json_schema.empty()) {
    json schema = json::parse(o.json_schema, nullptr, false);
    if (schema.is_discarded()) return Status::InvalidArgument("the JSON schema is not valid JSON");
    body["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "output"}, {"schema", schema}}}};
  }
  if (!o.grammar.empty()) body["grammar"] = o.grammar;
  const std::string payload = body.dump();

  TextStreamer streamer(sink, o.stop, o.stream_every_tokens, o.stream_every_ms);
  Generation gen;
  std::string last_error;
  double wait = co.backoff_initial_s;
  for (int32_t attempt = 0;; ++attempt) {
    im.attempts = attempt + 1;
    Attempt at;
    at.streamer = &streamer;
    at.cancel = &im.cancel;
    at.idle_s = co.idle_timeout_s;
    CURL* c = curl_easy_init();
    if (!c) return Status::Internal("curl_easy_init failed");
    at.curl = c;
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Accept: text/event-stream");
    std::string auth;
    if (!im.api_key.empty()) {
      auth = "Authorization: Bearer " + im.api_key;
      headers = curl_slist_append(headers, auth.c_str());
    }
    char errbuf[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(c, CURLOPT_URL, im.url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(payload.size()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &at);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &at);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &at);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::max(1.0, co.connect_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(std::max(1.0, co.total_timeout_s * 1000)));
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    const CURLcode rc = curl_easy_perform(c);
    if (at.http == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &at.http);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);

    // A non-streamed 200 (a server that ignores "stream"): one whole answer.
    if (rc == CURLE_OK && at.http >= 200 && at.http < 300 && !at.is_sse && at.event_error.ok()) {
      json whole = json::parse(at.json_body, nullptr, false);
      if (whole.is_discarded() || !whole.is_object()) {
        return Status::CorruptData("the cloud at " + im.shown_url +
                                   " answered 200 with neither an event stream nor JSON");
      }
      at.Event(whole, true);
      at.done = true;
      if (!at.event_error.ok()) return at.event_error;
    }

    const bool user_cancel = (im.cancel.load() && !at.stalled) || at.sink_stopped;
    if (user_cancel || at.done || (rc == CURLE_OK && at.finished)) {
      streamer.Finish();
      gen.text = streamer.text();
      if (im.cancel.load() || streamer.sink_cancelled()) {
        gen.finish_reason = FinishReason::kCancelled;
      } else if (streamer.stop_matched()) {
        gen.finish_reason = FinishReason::kStop;
      } else {
        gen.finish_reason = at.finished ? at.finish : FinishReason::kStop;
      }
      Stats& st = gen.stats;
      st.n_gen = at.usage_completion >= 0 ? at.usage_completion : at.deltas;
      st.n_prompt = std::max(0, at.usage_prompt);
      if (at.any_delta) {
        st.ttft_ms = ms_between(t_start, at.first_delta);
        st.decode_ms = ms_between(at.first_delta, at.last_delta);
        if (st.decode_ms > 0 && at.deltas > 1) st.decode_tps = (at.deltas - 1) * 1000.0 / st.decode_ms;
      }
      if (!o.json_schema.empty()) {  // as the engine reports it (Generation::json_state)
        json parsed = json::parse(gen.text, nullptr, false);
        if (gen.finish_reason != FinishReason::kStop) {
          gen.json_state = JsonState::kIncomplete;
        } else if (streamer.stop_matched() || parsed.is_discarded()) {
          gen.json_state = JsonState::kInvalid;
        } else {
          gen.json_state = JsonState::kComplete;
          gen.json = parsed.dump();
        }
      }
      return gen;
    }
    if (!at.event_error.ok()) {
      if (at.any_delta) {
        return Status(at.event_error.code(),
                      at.event_error.message() + " (after " + std::to_string(streamer.text().size()) +
                          " bytes of text had reached the sink)");
      }
      return at.event_error;
    }

    // Failures. Text already in the sink: report the cut, never retry into the same sink.
    const bool http_error = rc == CURLE_OK && (at.http < 200 || at.http >= 300);
    std::string stall_why;
    if (at.stalled) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "no data for %g s", co.idle_timeout_s);
      stall_why = buf;
    }
    if (at.any_delta || (rc == CURLE_OK && !http_error)) {
      streamer.Finish();  // what did arrive reaches the sink, once
      const std::string why = at.stalled      ? "stalled: " + stall_why
                              : rc == CURLE_OK ? "the connection closed before the end of the stream"
                                              : std::string(errbuf[0] ? errbuf : curl_easy_strerror(rc));
      return Status::Unavailable("the cloud stream from " + im.shown_url + " was cut mid-way (" +
                                 why + ") after " + std::to_string(at.deltas) + " pieces, " +
                                 std::to_string(streamer.text().size()) +
                                 " bytes of text already delivered to the sink; the answer is "
                                 "incomplete: retry the request");
    }
    bool retryable = false;
    if (http_error) {
      const std::string msg = server_message(at.error_body);
      if (at.http == 401 || at.http == 403) {
        return Status::FailedPrecondition(
            "the cloud at " + im.shown_url + " refused the request (HTTP " +
            std::to_string(at.http) + (msg.empty() ? "" : ": " + msg) + "): " +
            (im.api_key.empty() ? "no API key is set: set " + co.api_key_env
                                : "check the API key in " + co.api_key_env));
      }
      retryable = at.http == 429 || at.http >= 500;
      last_error = "HTTP " + std::to_string(at.http) + (msg.empty() ? "" : ": " + msg);
      if (!retryable) {
        return Status::InvalidArgument("the cloud at " + im.shown_url + " rejected the request (" +
                                       last_error + ")");
      }
    } else {
      last_error = at.stalled ? "stalled, " + stall_why : errbuf[0] ? errbuf : curl_easy_strerror(rc);
      retryable = at.stalled || rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
                  rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR ||
                  rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING ||
                  rc == CURLE_PARTIAL_FILE || rc == CURLE_SSL_CONNECT_ERROR;
      if (rc == CURLE_OPERATION_TIMEDOUT) {
        last_error += " (over the " + std::to_string(static_cast<int>(co.total_timeout_s)) +
                      " s limit for one request)";
      }
    }
    if (!retryable || attempt >= co.max_retries) {
      return Status::Unavailable("the cloud at " + im.shown_url + " did not answer after " +
                                 std::to_string(attempt + 1) + " attempt" +
                                 (attempt ? "s" : "") + ": " + last_error);
    }
    double pause = std::min(wait, co.backoff_max_s);
    if (at.retry_after_s >= 0) pause = std::min(at.retry_after_s, 60.0);
    wait *= 2;
    if (!im.Backoff(pause)) {
      gen.finish_reason = FinishReason::kCancelled;
      return gen;
    }
  }
}

}  // namespace edgellm
