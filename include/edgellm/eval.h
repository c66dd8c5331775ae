// Evaluating a model on the held-out part of edgellm's task corpus (train.h): exact-match
// accuracy per task, perplexity, and the KL divergence from a reference model (the
// full-precision original of a quantized file).
//
// Thread safety: evaluate_model() may run concurrently for different models.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

struct EvalOptions {
  std::string model;
  std::string reference;  // "" = no KL divergence
  std::vector<std::string> tasks = {"intent", "extract", "math", "code"};
  int32_t items = 200;    // held-out items per task
  uint64_t seed = 7;      // which held-out items (all from the test split)
  int32_t n_threads = -1;
  // When set, perplexity (and KL) are computed over these token ids instead of the held-out
  // items' text (e.g. TrainReport::probe_tokens). Tasks may then be empty.
  std::vector<int32_t> tokens;
  // Called after each item with (task, done, total). Return false to cancel.
  std::function<bool(const std::string& task, int32_t done, int32_t total)> on_progress;
};

struct TaskScore {
  std::string task;
  int32_t n = 0, correct = 0;
  double accuracy = 0;    // correct / n
  double chance = 0;      // accuracy of guessing the most common answer
  std::vector<std::string> examples;  // a few "prompt => output (want answer)" lines
};

struct EvalReport {
  std::vector<TaskScore> tasks;
  int64_t n_tokens = 0;      // tokens scored for perplexity
  double perplexity = 0;     // over the held-out items in chat format
  double kl_mean = -1;       // mean KL(reference || model) per token; -1 without a reference
  double kl_p99 = -1;
  double top1_agree = -1;    // share of tokens where both models' argmax agree
  double seconds = 0;
};

Result<EvalReport> evaluate_model(const EvalOptions& options);

}  // namespace edgellm
