// edgellm synth --preset NAME --type TYPE -o FILE: a fixture model with random weights.
#include <cstdio>

#include "common.h"

namespace cli {

Action add_synth(CLI::App& app) {
  static edgellm::SynthOptions o;
  static bool list = false, lora = false;
  static edgellm::SynthLoraOptions lo;
  o.vocab_path = default_vocab();
  auto* cmd = app.add_subcommand(
      "synth", "Write a GGUF with random weights at a real model's shapes and a real vocabulary");
  cmd->add_option("--preset", o.preset, "Shape preset (see --list)");
  cmd->add_option("--type", o.type, "F32, F16, Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q4_0 ... (default Q4_K_M)");
  cmd->add_option("-o,--output", o.output, "Output .gguf path (written atomically)");
  cmd->add_option("--mmproj", o.mmproj_output,
                  "Also write the preset's projector (mmproj .gguf) here (smolvlm-256m, "
                  "qwen2-vl-2b: vision; ultravox-v0.5-llama-3.2-1b: audio)");
  cmd->add_option("--seed", o.seed, "Weight seed (default 1)");
  cmd->add_option("--vocab", o.vocab_path, "Tokenizer GGUF (default: llama.cpp's ggml-vocab-qwen2.gguf)");
  cmd->add_option("--threads", o.n_threads, "Quantization threads (default: physical cores)");
  cmd->add_option("--chat-template", o.chat_template_file,
                  "Jinja chat template file to stamp (default: the preset's, from llama.cpp's "
                  "models/templates)");
  cmd->add_flag("--no-chat-template", o.no_chat_template,
                "No chat template, as a base model (e.g. to test fallbacks)");
  cmd->add_flag("--header-only", o.header_only,
                "Header and tensor table only, weights as a sparse hole (for planning)");
  cmd->add_flag("--lora", lora,
                "Write a random LoRA adapter for the preset's shapes instead of a model");
  cmd->add_option("--rank", lo.rank, "LoRA rank, with --lora (default 8)");
  cmd->add_option("--alpha", lo.alpha, "LoRA alpha, with --lora (default 16)");
  cmd->add_flag("--list", list, "List the presets");
  return [] {
    if (list) {
      static const char* kPooling[] = {"none", "mean", "cls", "last", "rank"};
      std::printf("%-29s %-5s %6s %6s %5s %7s %6s %7s %4s %s\n", "preset", "arch", "layers",
                  "n_embd", "heads", "kv_heads", "n_ff", "vocab", "tied",
                  "chat template / pooling");
      for (const auto& p : edgellm::synth_presets()) {
        const std::string vocab = p.vocab_file.empty() ? "ggml-vocab-qwen2.gguf" : p.vocab_file;
        const std::string use =
            p.pooling >= 0 ? std::string("pooling ") + kPooling[p.pooling] + ", " + vocab
            : !p.projector.type.empty()
                ? (p.chat_template.empty() ? std::string("built-in template") : p.chat_template) +
                      ", " + vocab + ", --mmproj " + p.projector.type
            : p.chat_template.empty() ? "(the vocabulary's)"
                                      : p.chat_template;
        std::printf("%-29s %-5s %6d %6d %5d %7d %6d %7d %4s %s\n", p.name.c_str(),
                    p.arch.c_str(), p.n_layer, p.n_embd, p.n_head, p.n_head_kv, p.n_ff,
                    p.n_vocab, p.tied_embeddings ? "yes" : "no", use.c_str());
      }
      return 0;
    }
    if (o.preset.empty()) return fail(edgellm::Status::InvalidArgument("pass --preset NAME (see --list)"));
    if (lora) {
      lo.preset = o.preset;
      lo.output = o.output;
      lo.seed = o.seed;
      edgellm::Status st = edgellm::synth_lora(lo);
      if (!st.ok()) return fail(st);
      std::fprintf(stderr, "wrote %s (LoRA for %s, rank %d, alpha %g)\n", o.output.c_str(),
                   o.preset.c_str(), lo.rank, static_cast<double>(lo.alpha));
      return 0;
    }
    o.on_progress = [](const char* stage, float f) {
      progress_line(stage, f, f >= 1.0f);
      return true;
    };
    edgellm::Status st = edgellm::synth_model(o);
    if (!st.ok()) return fail(st);
    std::fprintf(stderr, "wrote %s (%s, %s)\n", o.output.c_str(), o.preset.c_str(), o.type.c_str());
    if (!o.mmproj_output.empty()) {
      std::fprintf(stderr, "wrote %s (its %s projector, F16)\n", o.mmproj_output.c_str(),
                   edgellm::find_synth_preset(o.preset)->projector.type.c_str());
    }
    return 0;
  };
}

}  // namespace cli
