// Measuring what quantization costs a model, per task: an importance matrix computed from the
// training corpus (the activation-aware path of llama.cpp's imatrix), quantized variants of a
// full-precision model with and without it, and for each variant its size, decode speed,
// per-task accuracy, perplexity and KL divergence from the original. advise_quantization()
// picks the smallest variant whose accuracy on one task stays within a budget.
//
// Thread safety: the functions may run concurrently for different outputs / work folders.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/eval.h"
#include "edgellm/status.h"

namespace edgellm {

struct ImatrixOptions {
  std::string model;    // GGUF to run (normally the F32/F16 original); required
  std::string output;   // imatrix GGUF to write (llama-imatrix's format); required. Atomic
  // Calibration text: this many train-split items of each corpus task (never the held-out
  // items eval scores), in chat format. Default 100.
  int32_t items_per_task = 100;
  uint64_t seed = 11;
  int32_t n_threads = -1;
  std::function<void(int32_t done, int32_t total)> on_progress;  // windows decoded
};

// Runs the calibration text through the model and records, for every weight matrix, the mean
// squared activation of each input column (what llama-imatrix records), written as
// "<weight>.in_sum2" / "<weight>.counts" F32 tensors that quantize_model's --imatrix reads.
// Errors: the model's load errors; kInvalidArgument for bad options; kUnavailable when the
// output cannot be written (nothing is left behind).
Status compute_imatrix(const ImatrixOptions& options);

struct QuantStudyOptions {
  std::string model;     // full-precision GGUF (F32/F16/BF16); required
  std::string work_dir;  // where the variants and the imatrix are written; required
  // Default: the seed report's ladder.
  std::vector<std::string> types = {"F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M"};
  bool plain = true;    // quantize without an importance matrix
  bool imatrix = true;  // quantize with one (types that ignore it, F16 and Q8_0, are skipped)
  EvalOptions eval;     // tasks, items and seed; model and reference are set per variant
  int32_t decode_tokens = 128;  // greedy tokens timed for decode speed (best of 3 runs)
  bool keep_files = true;       // false: delete each variant after measuring it
  int32_t n_threads = -1;
  // Stage messages ("quantize Q4_K_M+imatrix", "eval Q4_K_M+imatrix", ...).
  std::function<void(const std::string& stage)> on_stage;
};

struct QuantVariant {
  std::string type;      // "F32" for the original, else as asked
  bool imatrix = false;
  std::string path;      // the file measured ("" once deleted)
  uint64_t file_bytes = 0;
  double bits_per_weight = 0;  // tensor data bits / parameters
  double decode_tps = 0;
  EvalReport eval;       // accuracy per task, perplexity; KL against the original
  std::string name() const { return imatrix ? type + "+imatrix" : type; }  // "Q4_K_M+imatrix"
};

struct QuantStudy {
  std::string model;
  std::vector<QuantVariant> variants;  // the original first, then types x {plain, imatrix}
  double seconds = 0;
};

// Measures the original and every variant. Errors: the first failing step's error, naming it.
Result<QuantStudy> run_quant_study(const QuantStudyOptions& options);

struct QuantPick {
  bool found = false;       // false: no quantized variant stays within the budget
  QuantVariant pick;        // the smallest variant within budget (the original when !found)
  double reference_accuracy = 0;
  double drop = 0;          // reference accuracy - pick's accuracy (a share, 0.02 = 2 points)
  std::string reason;       // one line saying why
};

// The smallest variant (by file size) whose accuracy on `task` is at most `max_drop` below the
// original's (in accuracy points: 0.02 = 2 points). kInvalidArgument when the study did not
// score `task`, or max_drop is outside [0, 1]; kFailedPrecondition when the original itself is
// no better than guessing on `task` (nothing to keep).
Result<QuantPick> advise_quantization(const QuantStudy& study, const std::string& task,
                                        double max_drop);

}  // namespace edgellm
