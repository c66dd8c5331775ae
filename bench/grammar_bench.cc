// edgellm-grammarbench: what constrained output costs, side by side in one run.
//
//  1. Decode speed: the same prompt and sampling with a typical extraction schema (an intent
//     enum, a city string, a time, a confidence percentage, a list of tags) and without one,
//     alternating round by round. Prints decode tok/s of both, their ratio, and how many
//     tokens the grammar rejected at first (each drawn again from the allowed set).
//  2. Compile time: the schema converted (llama.cpp common's json-schema-to-grammar), checked
//     and built into a grammar sampler, median of --compiles runs.
//
// A random-weights model (synth) is the worst case: it knows nothing of JSON, so the grammar
// rejects far more first draws than a trained model's.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"

namespace {

using json = nlohmann::json;

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "intent": {"enum": ["weather", "alarm", "music", "navigate", "call", "timer"]},
    "city": {"type": "string", "maxLength": 24},
    "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
    "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}
  },
  "required": ["intent", "city", "confidence"],
  "additionalProperties": false
})";

struct Args {
  std::string model;
  int threads = 2, tokens = 64, rounds = 4, compiles = 20;
  float temperature = 0.8f;
  bool json = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run(const Args& a) {
  auto model = edgellm::Model::Load(a.model);
  if (!model.ok()) {
    std::fprintf(stderr, "edgellm-grammarbench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  edgellm::SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = 1024;
  auto session = edgellm::Session::Create(**model, so);
  if (!session.ok()) {
    std::fprintf(stderr, "edgellm-grammarbench: %s\n", session.status().ToString().c_str());
    return 1;
  }
  const std::string prompt =
      "Extract the intent as JSON: will it rain in Shanghai tomorrow at 08:30? 明天上海会下雨吗";
  std::vector<double> free_tps, constrained_tps;
  int64_t resamples = 0, constrained_tokens = 0, complete = 0;
  for (int round = 0; round < a.rounds; ++round) {
    for (int constrained = 0; constrained < 2; ++constrained) {
      edgellm::GenerateOptions o;
      o.max_tokens = a.tokens;
      o.temperature = a.temperature;
      o.seed = 100 + static_cast<uint32_t>(round);
      // The free run ignores end-of-generation, so it decodes `tokens` tokens; the
      // constrained one ends where the object ends (or at `tokens`). tok/s compares the
      // per-token cost either way.
      o.ignore_eos = !constrained;
      if (constrained) o.json_schema = kSchema;
      auto r = (*session)->Generate(prompt, o);
      if (!r.ok()) {
        std::fprintf(stderr, "edgellm-grammarbench: %s\n", r.status().ToString().c_str());
        return 1;
      }
      const edgellm::Stats& s = r->stats;
      if (constrained) {
        constrained_tps.push_back(s.decode_tps);
        resamples += s.grammar_resamples;
        constrained_tokens += s.n_gen;
        complete += r->json_state == edgellm::JsonState::kComplete;
      } else {
        free_tps.push_back(s.decode_tps);
      }
      if (!a.json) {
        std::fprintf(
            stderr, "round %d %-11s %3d tokens, decode %.2f tok/s%s\n", round + 1,
            constrained ? "constrained" : "free", s.n_gen, s.decode_tps,
            constrained ? (", " + std::to_string(s.grammar_resamples) +
                           " first draws rejected, json " + edgellm::json_state_name(r->json_state))
                              .c_str()
                        : "");
      }
    }
  }
  std::vector<double> compile_ms;
  edgellm::GenerateOptions co;
  co.json_schema = kSchema;
  for (int i = 0; i < a.compiles; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    edgellm::Status st = edgellm::CheckOutputConstraint(**model, co);
    compile_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!st.ok()) {
      std::fprintf(stderr, "edgellm-grammarbench: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  const double f = median(free_tps), c = median(constrained_tps);
  json out = {{"model", (*model)->info().description},
              {"threads", a.threads},
              {"tokens", a.tokens},
              {"rounds", a.rounds},
              {"temperature", a.temperature},
              {"free_decode_tps", f},
              {"constrained_decode_tps", c},
              {"ratio", f > 0 ? c / f : 0},
              {"first_draws_rejected", resamples},
              {"constrained_tokens", constrained_tokens},
              {"complete_objects", complete},
              {"schema_compile_ms", median(compile_ms)}};
  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("decode, median of %d rounds (%d threads, %d tokens, temp %.2f):\n", a.rounds,
                a.threads, a.tokens, a.temperature);
    std::printf("  free         %.2f tok/s\n", f);
    std::printf("  with schema  %.2f tok/s   ratio %.3f   first draws rejected %lld of %lld\n", c,
                f > 0 ? c / f : 0, static_cast<long long>(resamples),
                static_cast<long long>(constrained_tokens));
    std::printf("schema compile (convert + check + sampler), median of %d: %.2f ms\n", a.compiles,
                median(compile_ms));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "edgellm-grammarbench: decode speed with a JSON schema vs without, schema "
      "compile time"};
  app.add_option("-m,--model", a.model, "GGUF model (e.g. a qwen2.5-1.5b Q4_K_M synth)")
      ->required();
  app.add_option("--threads", a.threads, "threads (default 2)")->check(CLI::Range(1, 256));
  app.add_option("--tokens", a.tokens, "tokens per generation (default 64)")
      ->check(CLI::Range(8, 4096));
  app.add_option("--rounds", a.rounds, "rounds, each one free and one constrained (default 4)")
      ->check(CLI::Range(1, 100));
  app.add_option("--compiles", a.compiles, "schema compiles timed (default 20)")
      ->check(CLI::Range(1, 10000));
  app.add_option("--temp", a.temperature, "temperature (default 0.8)")->check(CLI::Range(0.0, 5.0));
  app.add_flag("--json", a.json, "one JSON object on stdout");
  CLI11_PARSE(app, argc, argv);
  return run(a);
}
