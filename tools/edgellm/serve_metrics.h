// serve's /metrics: counters since the server started, in Prometheus's text format (as
// llama-server's /metrics, with edgellm's names): requests, prompt and generated tokens, decode
// calls, and speculation's guesses (drafted, kept, forced by a grammar). A dashboard reads the
// acceptance and the tokens per decode from them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "edgellm/edgellm.h"

namespace cli {

class ServeMetrics {
 public:
  // One finished generation (streamed or not, whatever its finish reason).
  void Add(const edgellm::Stats& s) {
    requests_ += 1;
    prompt_ += s.n_prompt;
    cached_ += s.n_cached;
    generated_ += s.n_gen;
    decode_calls_ += s.decode_calls;
    drafted_ += s.spec_drafted;
    accepted_ += s.spec_accepted;
    forced_ += s.spec_forced;
    draft_drafted_ += s.spec_draft_drafted;
    draft_accepted_ += s.spec_draft_accepted;
  }
  void AddError() { errors_ += 1; }

  std::string Text() const {
    std::string out;
    auto counter = [&out](const char* name, const char* help, uint64_t v) {
      out += std::string("# HELP edgellm_") + name + " " + help + "\n# TYPE edgellm_" + name +
             " counter\nedgellm_" + name + " " + std::to_string(v) + "\n";
    };
    counter("requests_total", "Generations finished.", requests_.load());
    counter("request_errors_total", "Generations that failed after they were admitted.",
            errors_.load());
    counter("prompt_tokens_total", "Prompt tokens prefilled.", prompt_.load());
    counter("prompt_tokens_cached_total", "Prompt tokens reused from the KV cache.",
            cached_.load());
    counter("tokens_predicted_total", "Tokens generated.", generated_.load());
    counter("decode_calls_total", "llama_decode calls while generating.", decode_calls_.load());
    counter("spec_drafted_total", "Speculative guesses checked.", drafted_.load());
    counter("spec_accepted_total", "Speculative guesses kept.", accepted_.load());
    counter("spec_forced_total", "Kept guesses a grammar forced (jump-forward).",
            forced_.load());
    counter("spec_draft_model_drafted_total", "Speculative guesses from the draft model.",
            draft_drafted_.load());
    counter("spec_draft_model_accepted_total", "Draft model guesses kept.",
            draft_accepted_.load());
    return out;
  }

 private:
  std::atomic<uint64_t> requests_{0}, errors_{0}, prompt_{0}, cached_{0}, generated_{0};
  std::atomic<uint64_t> decode_calls_{0}, drafted_{0}, accepted_{0}, forced_{0};
  std::atomic<uint64_t> draft_drafted_{0}, draft_accepted_{0};
};

}  // namespace cli
