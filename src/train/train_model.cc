// train_model: options, the corpus (every task's train split, shuffled), the vocabulary
// learned from it, the untrained model, then edgellm's own training graph (train_graph.cc)
// or libllama's llama_opt path (train_llama_opt.cc).
#include <algorithm>
#include <cmath>
#include <random>

#include "core/atomic_file.h"
#include "edgellm/train.h"
#include "engine/llama_glue.h"
#include "train/train_internal.h"

namespace edgellm {

using train::Clock;

Result<TrainReport> train_model(const TrainOptions& o) {
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass -o FILE.gguf");
  if (o.n_embd < 16 || o.n_embd > 2048 || o.n_head < 1 || o.n_embd % o.n_head != 0 ||
      o.n_layer < 1 || o.n_layer > 64 || o.n_ff < 16 || o.n_ctx < 16 || o.n_ctx > 4096) {
    return Status::InvalidArgument("model shape out of range: n_embd 16..2048 divisible by "
                                   "n_head, 1..64 layers, n_ff >= 16, n_ctx 16..4096");
  }
  if (!(o.prompt_loss_weight >= 0 && o.prompt_loss_weight <= 1)) {
    return Status::InvalidArgument("the prompt loss weight must be in 0..1");
  }
  if (o.epochs < 1 || o.epochs > 1000 || !(o.lr > 0 && o.lr < 1) ||
      !(o.val_split >= 0 && o.val_split < 0.5f) || o.items_per_task < 1 ||
      std::any_of(o.task_mix.begin(), o.task_mix.end(),
                  [](const auto& m) { return !(m.second >= 0 && m.second <= 100); })) {
    return Status::InvalidArgument("epochs 1..1000, lr in (0, 1), val_split in [0, 0.5), items >= 1");
  }
  for (const auto& m : o.task_mix) {
    const auto& tasks = corpus_tasks();
    const auto& extra = copy_tasks();
    if (std::find(tasks.begin(), tasks.end(), m.first) == tasks.end() &&
        std::find(extra.begin(), extra.end(), m.first) == extra.end()) {
      return Status::InvalidArgument("task mix names an unknown task '" + m.first +
                                     "': use intent, extract, math, code, chat, rewrite or record");
    }
  }
  if (o.use_blas && o.use_llama_opt) {
    return Status::InvalidArgument("--blas applies to edgellm's own training graph, not --llama-opt");
  }
#if !defined(EDGELLM_TRAIN_BLAS)
  if (o.use_blas) {
    return Status::FailedPrecondition(
        "this edgellm was built without OpenBLAS: apt install libopenblas-openmp-dev and "
        "rebuild, or train without --blas");
  }
#endif
  train::Recorder rec;
  train::Recorder* expected = nullptr;
  if (!train::g_recorder.compare_exchange_strong(expected, &rec)) {
    return Status::FailedPrecondition("another training run is in progress in this process");
  }
  struct Release {
    ~Release() { train::g_recorder.store(nullptr); }
  } release;
  TrainReport report;
  rec.o = &o;
  rec.report = &report;
  rec.t0 = Clock::now();

  // 1. Corpus: every task's train split, examples shuffled together.
  std::vector<std::string> examples;
  std::vector<std::string> tasks = corpus_tasks();
  for (const std::string& t : copy_tasks()) {  // only when named
    if (std::any_of(o.task_mix.begin(), o.task_mix.end(), [&](const auto& m) { return m.first == t; })) {
      tasks.push_back(t);
    }
  }
  for (const std::string& task : tasks) {
    float share = 1.0f;
    for (const auto& [name, w] : o.task_mix) {
      if (name == task) share = w;
    }
    const int32_t n = std::max(0, static_cast<int32_t>(std::lround(o.items_per_task * share)));
    auto items = make_task_items(task, Split::kTrain, n, o.seed);
    if (!items.ok()) return items.status();
    for (const TaskItem& it : *items) examples.push_back(chat_example(it));
  }
  std::mt19937_64 shuffle_rng(o.seed ^ 0x5EED);
  std::shuffle(examples.begin(), examples.end(), shuffle_rng);
  std::string text;
  // Each example starts with BOS, as every prompt does at inference (add_bos_token): a model
  // that never saw BOS attends to an untrained vector at position 0 and falls apart.
  for (const std::string& e : examples) text += "<s>" + e;

  // 2. Vocabulary, 3. the untrained model.
  VocabOptions vo;
  vo.n_vocab = o.n_vocab;
  auto vocab = learn_vocab(text, vo);
  if (!vocab.ok()) return vocab.status();
  report.n_vocab = static_cast<int32_t>(vocab->tokens.size());
  AtomicFile init_file(o.output, "init.partial");  // scratch: removed on return
  const std::string& init_path = init_file.path();
  EDGELLM_RETURN_IF_ERROR(train::write_initial(o, *vocab, init_path, &report.n_params));

  if (!o.use_llama_opt) {
    // Tokenize with llama.cpp's own tokenizer over the new vocabulary (a vocab-only load).
    engine::ensure_backend();
    llama_model_params vp = llama_model_default_params();
    vp.vocab_only = true;
    engine::ModelPtr vm(llama_model_load_from_file(init_path.c_str(), vp));
    if (!vm) return Status::Internal("cannot load the new vocabulary: " + engine::take_llama_errors());
    // Example by example: llama.cpp's special-token split copies the rest of the text at each
    // special token, quadratic in one multi-megabyte string (minutes); each example starts with
    // BOS, so the pieces tokenize exactly as the whole text would.
    std::vector<llama_token> toks, buf;
    for (const std::string& e : examples) {
      const std::string piece = "<s>" + e;
      buf.resize(piece.size() + 16);
      const int32_t nt = llama_tokenize(llama_model_get_vocab(vm.get()), piece.data(),
                                        static_cast<int32_t>(piece.size()), buf.data(),
                                        static_cast<int32_t>(buf.size()), false, true);
      if (nt < 0) return Status::Internal("tokenizing the corpus failed");
      toks.insert(toks.end(), buf.begin(), buf.begin() + nt);
    }
    EDGELLM_RETURN_IF_ERROR(train::train_direct(o, *vocab, toks, &rec, &report));
    report.seconds = std::chrono::duration<double>(Clock::now() - rec.t0).count();
    return report;
  }

  EDGELLM_RETURN_IF_ERROR(train::train_llama_opt(o, init_path, text, &rec, &report));
  report.seconds = std::chrono::duration<double>(Clock::now() - rec.t0).count();
  return report;
}

}  // namespace edgellm
