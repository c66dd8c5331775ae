// edgellm info MODEL [--json]
#include <cstdio>

#include "common.h"

namespace cli {

Action add_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show what a GGUF model is (architecture, shapes, size)");
  static std::string path;
  static bool json = false;
  cmd->add_option("model", path, "GGUF model file")->required();
  cmd->add_flag("--json", json, "Print one JSON object");
  return [] {
    edgellm::LoadOptions lo;
    lo.metadata_only = true;  // shapes and metadata only: instant even for a 7B file
    auto model = edgellm::Model::Load(path, lo);
    if (!model.ok()) return fail(model.status());
    const edgellm::ModelInfo& i = (*model)->info();
    if (json) {
      std::printf("%s\n", info_json(i).dump(2).c_str());
      return 0;
    }
    std::printf("model        %s\n", i.path.c_str());
    std::printf("architecture %s (%s)\n", i.arch.c_str(), i.description.c_str());
    std::printf("name         %s\n", i.name.c_str());
    std::printf("parameters   %.3f B\n", i.n_params / 1e9);
    std::printf("quantization %s\n", i.quant.c_str());
    std::printf("file size    %s (weights %s)\n", human_bytes(i.file_bytes).c_str(),
                human_bytes(i.weights_bytes).c_str());
    std::printf("layers       %d\n", i.n_layer);
    std::printf("n_embd       %d\n", i.n_embd);
    std::printf("heads        %d (kv heads %d)\n", i.n_head, i.n_head_kv);
    std::printf("ctx_train    %d\n", i.n_ctx_train);
    std::printf("vocab        %d tokens (%s)\n", i.n_vocab, i.vocab_type.c_str());
    std::printf("chat template %s\n", i.has_chat_template ? "yes" : "no");
    return 0;
  };
}

}  // namespace cli
