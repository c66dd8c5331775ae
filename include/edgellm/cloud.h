// CloudClient: an OpenAI-compatible /v1/chat/completions client that streams (SSE) into the
// same TextSink and returns the same Generation as a local Session, so a caller cannot tell
// the two paths apart. Used by Runtime for cloud routing and fallback.
//
// Thread safety: one Generate() at a time per client; Cancel() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "edgellm/session.h"
#include "edgellm/status.h"

namespace edgellm {

struct CloudOptions {
  // Base URL of the service: "http://127.0.0.1:8080", "https://host/v1" or the full
  // ".../chat/completions" URL. Required.
  std::string base_url;
  // The request's "model" field. Default "default" (edgellm serve answers any name).
  std::string model = "default";
  // Bearer token. Empty: read from the environment variable `api_key_env` (unset = none).
  // Never logged and never part of an error message.
  std::string api_key;
  std::string api_key_env = "EDGELLM_CLOUD_API_KEY";
  double connect_timeout_s = 5;   // TCP/TLS connect. Default 5
  double idle_timeout_s = 30;     // no byte for this long (before or during the stream) = stalled
  double total_timeout_s = 600;   // the whole request. Default 600
  // Retries on 429, 5xx and connection failures, only while no text reached the sink (a
  // stream is never resumed twice into the sink). Default 3 (4 attempts).
  int32_t max_retries = 3;
  double backoff_initial_s = 0.5; // doubled per retry, capped by backoff_max_s; a Retry-After
  double backoff_max_s = 8;       // header wins when present (capped at 60 s)
};

class CloudClient {
 public:
  // Checks the options (URL scheme http/https); makes no request.
  static Result<std::unique_ptr<CloudClient>> Create(const CloudOptions& options);
  ~CloudClient();
  CloudClient(const CloudClient&) = delete;
  CloudClient& operator=(const CloudClient&) = delete;

  // Sends `prompt` as the user turn (after options.system_prompt and options.history) with
  // max_tokens, temperature, top_p, seed and stop, streamed. Pieces reach `sink` batched as a
  // local generation's are (the first at once, then every stream_every_tokens deltas or
  // stream_every_ms). Stats: ttft_ms, n_gen (the server's usage, else one per delta),
  // decode_ms/decode_tps, n_prompt when the server reports usage.
  // Errors: kUnavailable (unreachable, 429/5xx after retries, stalled, or a stream cut
  // mid-way: the message says how much text already reached the sink), kFailedPrecondition
  // (401/403: the API key), kInvalidArgument (other 4xx, with the server's message),
  // kCorruptData (a malformed event). Cancel() or a sink returning false: kCancelled finish,
  // not an error.
  Result<Generation> Generate(std::string_view prompt, const GenerateOptions& options = {},
                              const TextSink& sink = {});
  void Cancel();

  const std::string& url() const;  // the chat completions URL, credentials removed
  int32_t last_attempts() const;   // attempts the last Generate() made

  struct Impl;

 private:
  explicit CloudClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
