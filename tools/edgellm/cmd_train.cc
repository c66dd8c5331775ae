// edgellm train -o MODEL.gguf [--record RUN.json] [shape and schedule flags]: trains edgellm's
// own small bilingual model on the generated multi-task corpus (see include/edgellm/train.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "common.h"
#include "edgellm/train.h"

namespace cli {

Action add_train(CLI::App& app) {
  static edgellm::TrainOptions o;
  static std::string record;
  static bool json = false;
  auto* cmd = app.add_subcommand(
      "train", "Train edgellm's small bilingual model on its generated multi-task corpus");
  cmd->add_option("-o,--output", o.output, "Trained model (F32 GGUF)")->required();
  cmd->add_option("--record", record, "Write the run's record (loss curve, losses, timing) as JSON");
  cmd->add_option("--vocab-size", o.n_vocab, "Vocabulary size (default 2048)")->check(CLI::Range(512, 65536));
  cmd->add_option("--embd", o.n_embd, "Embedding width (default 256)");
  cmd->add_option("--layers", o.n_layer, "Layers (default 4)");
  cmd->add_option("--heads", o.n_head, "Attention heads (default 4)");
  cmd->add_option("--ff", o.n_ff, "Feed-forward width (default 512)");
  cmd->add_option("--ctx", o.n_ctx, "Training window in tokens, a multiple of 256 (default 256)");
  cmd->add_option("--items", o.items_per_task, "Training items per task, before --mix (default 6000)");
  static std::string mix;
  cmd->add_option("--mix", mix,
                  "Task shares of --items; the tasks named replace their default share "
                  "(intent=0.3,extract=1.5,math=2,code=1.5,chat=0.4), e.g. math=3,chat=0.2; the copying "
                  "tasks rewrite and record train only when named (docs/training.md)");
  cmd->add_option("--epochs", o.epochs, "Epochs (default 3)");
  cmd->add_option("--lr", o.lr, "Peak AdamW learning rate (default 2.5e-4)");
  cmd->add_option("--prompt-weight", o.prompt_loss_weight,
                  "Loss weight of prompt tokens, answers at 1 (default 0.1; 1 = plain LM)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", o.seed, "Seed for corpus, weights and shuffling (default 1)");
  cmd->add_option("--threads", o.n_threads, "Threads (default: physical cores)");
  cmd->add_flag("--blas", o.use_blas,
                "Matrix products and gradients through OpenBLAS: about 1.14x faster on an idle "
                "machine, many times slower next to another busy process");
  cmd->add_flag("--llama-opt", o.use_llama_opt,
                "Train through llama_opt_epoch (does not train attn_k/attn_v; see docs/training.md)");
  cmd->add_flag("--json", json, "Print the record as JSON on stdout at the end");
  return [] {
    if (!mix.empty()) {
      size_t start = 0;
      while (start <= mix.size()) {
        const size_t end = std::min(mix.find(',', start), mix.size());
        const std::string part = mix.substr(start, end - start);
        const size_t eq = part.find('=');
        char* rest = nullptr;
        const float w = eq == std::string::npos ? -1 : std::strtof(part.c_str() + eq + 1, &rest);
        if (eq == std::string::npos || eq == 0 || !rest || *rest != 0 || !(w >= 0 && w <= 100)) {
          return fail(edgellm::Status::InvalidArgument(
              "--mix: '" + part + "' is not TASK=SHARE with a share in 0..100 (e.g. math=2)"));
        }
        const std::string task = part.substr(0, eq);
        auto it = std::find_if(o.task_mix.begin(), o.task_mix.end(),
                               [&](const auto& m) { return m.first == task; });
        if (it != o.task_mix.end()) {
          it->second = w;
        } else {
          o.task_mix.push_back({task, w});
        }
        start = end + 1;
      }
    }
    o.on_progress = [](const edgellm::TrainOptions::Progress& p) {
      std::fprintf(stderr, "\r[train] epoch %d/%d step %lld/%lld loss %.4f lr %.2e %.0f s   ",
                   p.epoch, p.epochs, static_cast<long long>(p.step),
                   static_cast<long long>(p.steps_per_epoch), p.loss, p.lr, p.elapsed_s);
      return true;
    };
    auto r = edgellm::train_model(o);
    std::fprintf(stderr, "\n");
    if (!r.ok()) return fail(r.status());
    nlohmann::json j = {{"output", o.output},
                        {"n_params", r->n_params},
                        {"n_vocab", r->n_vocab},
                        {"n_embd", o.n_embd},
                        {"n_layer", o.n_layer},
                        {"n_head", o.n_head},
                        {"n_ff", o.n_ff},
                        {"n_ctx", o.n_ctx},
                        {"items_per_task", o.items_per_task},
                        {"task_mix", o.task_mix},
                        {"prompt_loss_weight", o.prompt_loss_weight},
                        {"epochs", o.epochs},
                        {"lr", o.lr},
                        {"seed", o.seed},
                        {"train_tokens_per_epoch", r->n_train_tokens},
                        {"seconds", r->seconds},
                        {"gradient_backend", r->gradient_backend},
                        {"epoch_train_loss", r->epoch_train_loss},
                        {"epoch_val_loss", r->epoch_val_loss}};
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& p : r->curve) curve.push_back({p.step, p.loss});
    j["curve"] = curve;
    if (!record.empty()) {
      std::ofstream f(record);
      f << j.dump(1) << "\n";
      if (!f) return fail(edgellm::Status::Unavailable("cannot write " + record));
    }
    if (json) {
      std::printf("%s\n", j.dump().c_str());
    }
    std::fprintf(stderr, "wrote %s: %.2fM parameters, vocabulary %d, %lld tokens/epoch, %.0f s (%s)",
                 o.output.c_str(), r->n_params / 1e6, r->n_vocab,
                 static_cast<long long>(r->n_train_tokens), r->seconds,
                 r->gradient_backend.empty() ? "llama_opt" : r->gradient_backend.c_str());
    for (size_t e = 0; e < r->epoch_train_loss.size(); ++e) {
      std::fprintf(stderr, "%s epoch %zu loss %.3f", e ? "," : ";", e + 1, r->epoch_train_loss[e]);
      if (e < r->epoch_val_loss.size()) std::fprintf(stderr, " (val %.3f)", r->epoch_val_loss[e]);
    }
    std::fprintf(stderr, "\n");
    return 0;
  };
}

}  // namespace cli
