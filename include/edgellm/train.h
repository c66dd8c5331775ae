// Training edgellm's own small model: a deterministic bilingual multi-task corpus, a small
// vocabulary learned from it, and next-token training through libllama's optimizer.
//
// Thread safety: every function here is self-contained and may run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

// ---- Corpus ----

// One task item: a prompt and its one right answer (exact match).
struct TaskItem {
  std::string task;    // "intent", "extract", "math", "code", "chat", "rewrite", "record"
  std::string prompt;  // the user turn
  std::string answer;  // the assistant turn
};

// The default corpus's task names, in a fixed order.
const std::vector<std::string>& corpus_tasks();
// Tasks outside the default corpus, trained only when TrainOptions::task_mix names them:
// "rewrite" (replace a name in 3-4 sentences; the answer copies the rest) and "record" (eight
// fields of the prompt as JSON without whitespace). Answers copy long spans of the prompt, for
// measuring n-gram lookup and jump-forward (docs/speculative.md).
const std::vector<std::string>& copy_tasks();

enum class Split { kTrain, kTest };

// `n` items of `task` from `split`, deterministic in (task, split, n, seed). Held-out items
// never occur in the train split: an item belongs to the test split when a hash of its
// prompt falls in the test tenth, whatever the seed. kInvalidArgument for an unknown task.
Result<std::vector<TaskItem>> make_task_items(const std::string& task, Split split, int32_t n,
                                              uint64_t seed);

// The chat format the model is trained on and prompted with (ChatML):
// "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n" + answer + "<|im_end|>\n".
std::string chat_prompt(const std::string& user);
std::string chat_example(const TaskItem& item);

// ---- Vocabulary ----

struct VocabOptions {
  int32_t n_vocab = 2048;    // total size, specials and the 256 byte tokens included
  int32_t min_count = 2;     // a merge must occur at least this often
};

// A SentencePiece-style vocabulary (llama.cpp's "llama" tokenizer): <unk>, <s>, </s>, the
// ChatML control tokens, 256 byte-fallback tokens <0xXX>, every character of the text, then
// merges learned BPE-style from `text` (scores rank them). Each merge joins two existing
// tokens, so llama.cpp's score-driven merging reaches every learned token.
struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte
  int32_t bos = 1, eos = 2, unk = 0, im_start = 3, im_end = 4;
};

Result<Vocab> learn_vocab(const std::string& text, const VocabOptions& options);

// ---- Training ----

struct TrainOptions {
  std::string output;          // the trained model (F32 GGUF); required. Written atomically.
  // Shape: a llama-architecture model (RMSNorm, RoPE, SwiGLU, tied embeddings).
  // The default widths are multiples of 256, the block size of llama.cpp's K-quants, so
  // every matrix can take Q4_K_M, Q6_K, ... without a fallback type.
  int32_t n_vocab = 2048, n_embd = 256, n_layer = 4, n_head = 4, n_ff = 512;
  int32_t n_ctx = 256;  // the training window, rounded up to a multiple of 256
  int32_t items_per_task = 6000;  // train-split items of each task, scaled by task_mix
                                  // (chat: its fixed turns, cycled)
  // Share of items_per_task per task (tasks not named: 1). The default favours what a small
  // model finds hard (arithmetic, copying) over intents, which it learns from few items, and
  // the fixed chat turns, which it memorises.
  std::vector<std::pair<std::string, float>> task_mix = {
      {"intent", 0.3f}, {"extract", 1.5f}, {"math", 2.0f}, {"code", 1.5f}, {"chat", 0.4f}};
  int32_t epochs = 3;
  float lr = 2.5e-4f;          // AdamW peak learning rate, cosine-decayed to lr / 20
                               // (2e-3 left the 256-wide model unable to copy digits)
  float weight_decay = 0.0f;
  // Loss weight of tokens outside the answers (the user's prompt and the chat template), with
  // answers (the assistant's text and its <|im_end|>) at 1. Prompts are templated text full of
  // random names and numbers the model cannot predict; weighting them down spends the model's
  // capacity on answering (as supervised fine-tuning masks prompts), while a little weight
  // keeps it a language model of the prompts. 1 = plain language modelling. Default 0.1.
  // Reported losses are means over the tokens that counted: training, answers plus the
  // sampled prompt tokens; validation, answers only (every token at weight 1).
  float prompt_loss_weight = 0.1f;
  float val_split = 0.05f;     // the last share of the windows, evaluated after each epoch
  uint64_t seed = 1;
  int32_t n_threads = -1;      // -1 = physical cores
  // Matrix products and weight gradients through OpenBLAS, when edgellm was built with it
  // (TrainReport::gradient_backend says which ran). About 1.14x faster on an idle machine, but
  // OpenBLAS's and ggml's OpenMP regions alternate at every product, and next to another busy
  // process the run gets many times slower (docs/training.md). Default: ggml's CPU kernels.
  bool use_blas = false;
  // Train through libllama's llama_opt_init/llama_opt_epoch instead of edgellm's own ggml
  // graph. In the pinned llama.cpp that path never trains attn_k/attn_v (gradients stop at
  // the KV cache; docs/training.md), so it is kept only to show the difference. Default false.
  bool use_llama_opt = false;
  // Called every `report_every` optimizer steps and at each epoch's end. Return false to stop
  // (kCancelled, nothing written).
  int32_t report_every = 20;
  struct Progress {
    int32_t epoch, epochs;
    int64_t step, steps_per_epoch;
    double loss;        // mean training loss over the last report interval
    double lr;
    double elapsed_s;
  };
  std::function<bool(const Progress&)> on_progress;
};

struct TrainReport {
  uint64_t n_params = 0;
  int64_t n_train_tokens = 0;   // tokens in the training windows of one epoch
  int32_t n_vocab = 0;
  double seconds = 0;
  struct Point {
    int64_t step;     // global optimizer step
    double loss;      // mean training loss over the interval ending at `step`
  };
  std::vector<Point> curve;
  std::vector<double> epoch_train_loss, epoch_val_loss;
  // The first training window (n_ctx + 1 tokens) and the trained graph's mean loss on it;
  // llama.cpp's inference on the saved model gives the same loss (EvalOptions::tokens).
  // Empty with use_llama_opt.
  std::vector<int32_t> probe_tokens;
  double probe_loss = 0;
  // What computed the matrix products and weight gradients: "OpenBLAS" (built with it) or
  // "ggml CPU".
  std::string gradient_backend;
};

Result<TrainReport> train_model(const TrainOptions& options);

}  // namespace edgellm
