// Internals of train_model shared by its parts (train-private):
//   train_init.cc      the model's tensors, initial values, metadata, the untrained GGUF
//   train_schedule.cc  the learning-rate schedule and the loss curve (ggml-opt callbacks)
//   train_graph.cc     edgellm's own training graph (the default path)
//   train_llama_opt.cc libllama's llama_opt path (--llama-opt)
//   train_model.cc     train_model(): options, corpus, vocabulary, then one of the two paths
#pragma once

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "edgellm/train.h"
#include "ggml-opt.h"
#include "gguf.h"
#include "llama.h"

namespace edgellm::train {

using Clock = std::chrono::steady_clock;

// ChatML, the template edgellm's own models carry.
extern const char* const kChatTemplate;

struct TensorSpec {
  std::string name;
  int64_t ne0, ne1;
  float std;  // initial normal std; 0: ones (norm weights)
};

// The llama architecture's tensors (tied embeddings: no output.weight). Matrices start as
// normal(0, 0.02), output projections scaled down by sqrt(2 * n_layer) as GPT-2 does.
std::vector<TensorSpec> model_specs(const TrainOptions& o, int64_t n_vocab);
void fill_initial(const TensorSpec& s, std::mt19937_64& rng, std::vector<float>* vals);
// Hyperparameters, vocabulary, then set_run_record.
void set_metadata(gguf_context* g, const TrainOptions& o, const Vocab& v);
// The ChatML template and the run's record (seed, epochs, items per task).
void set_run_record(gguf_context* g, const TrainOptions& o);
// Writes the untrained model to `path` (a scratch file: the vocabulary for tokenizing, and
// the starting point of the llama_opt path).
Status write_initial(const TrainOptions& o, const Vocab& v, const std::string& path,
                     uint64_t* n_params);

// ggml-opt's callbacks carry no user pointer: one training run per process at a time, whose
// Recorder g_recorder points to.
struct Recorder {
  const TrainOptions* o = nullptr;
  TrainReport* report = nullptr;
  int32_t epoch = 0;
  int64_t steps_per_epoch = 0, last_ibatch = 0;
  double last_sum = 0;  // loss x batches at the last report
  double lr = 0;
  int64_t opt_steps = 0, total_steps = 0;
  Clock::time_point t0;
  std::atomic<bool> stop{false};
};
extern std::atomic<Recorder*> g_recorder;

// Linear warm-up over the first 2% of steps, then cosine from lr to lr / 20. `ud`: Recorder.
ggml_opt_optimizer_params lr_schedule(void* ud);
// Records the curve and reports progress; `loss` is the epoch's mean training loss so far.
void report_batch(Recorder* r, int64_t ibatch, int64_t ibatch_max, double loss);
// llama_opt_epoch's per-batch callback.
void on_train_batch(bool train, ggml_opt_context_t, ggml_opt_dataset_t, ggml_opt_result_t result,
                    int64_t ibatch, int64_t ibatch_max, int64_t);

// Trains through edgellm's own graph on `toks` and saves o.output.
Status train_direct(const TrainOptions& o, const Vocab& v, const std::vector<llama_token>& toks,
                    Recorder* rec, TrainReport* report);
// Trains through libllama's llama_opt from the untrained model at `init_path` on `text` and
// saves o.output.
Status train_llama_opt(const TrainOptions& o, const std::string& init_path,
                       const std::string& text, Recorder* rec, TrainReport* report);

}  // namespace edgellm::train
