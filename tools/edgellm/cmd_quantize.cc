// edgellm quantize IN.gguf OUT.gguf --type q4_k_m [--imatrix FILE] [--threads N]
#include <cstdio>

#include "common.h"

namespace cli {

Action add_quantize(CLI::App& app) {
  static edgellm::QuantizeOptions o;
  auto* cmd = app.add_subcommand(
      "quantize", "Quantize a GGUF (F16/BF16/F32) through libllama, stamped with edgellm's format");
  cmd->add_option("input", o.input, "GGUF to read")->required();
  cmd->add_option("output", o.output, "GGUF to write (atomically)")->required();
  cmd->add_option("--type", o.type,
                  "Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, IQ4_XS, F16 ... (default Q4_K_M)");
  cmd->add_option("--imatrix", o.imatrix_path,
                  "Importance matrix from llama-imatrix (GGUF or .dat)");
  cmd->add_option("--threads", o.n_threads, "Quantization threads (default: physical cores)");
  cmd->add_flag("--allow-requantize", o.allow_requantize,
                "Accept an already quantized input (compounds the error)");
  return [] {
    o.on_progress = [](float f) { progress_line("quantize", f, f >= 1.0f); };
    edgellm::Status st = edgellm::quantize_model(o);
    if (!st.ok()) return fail(st);
    edgellm::LoadOptions lo;
    lo.metadata_only = true;
    auto model = edgellm::Model::Load(o.output, lo);
    if (!model.ok()) return fail(model.status());
    const edgellm::ModelInfo& i = (*model)->info();
    std::fprintf(stderr, "wrote %s (%s, %s, %s)\n", o.output.c_str(), i.quant.c_str(),
                 i.description.c_str(), human_bytes(i.file_bytes).c_str());
    return 0;
  };
}

}  // namespace cli
