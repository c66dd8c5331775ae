// A program outside edgellm's tree, built only against an installed edgellm (scripts/consumer.sh
// builds it with find_package(edgellm) and with pkg-config, natively and for aarch64): it loads a
// model, by default the installed default model, and streams a greedy chat answer to a prompt.
//   consumer [PROMPT [MODEL.gguf]]
#include <cstdio>
#include <string>
#include <string_view>

#include "edgellm/edgellm.h"

#ifndef EDGELLM_DEFAULT_MODEL
#error "define EDGELLM_DEFAULT_MODEL: CMake's edgellm_DEFAULT_MODEL or pkg-config's default_model"
#endif

int main(int argc, char** argv) {
  const std::string prompt = argc > 1 ? argv[1] : "用一句话介绍端侧大模型。";
  const std::string path = argc > 2 ? argv[2] : EDGELLM_DEFAULT_MODEL;
  std::fprintf(stderr, "consumer: edgellm %s (commit %s), llama.cpp %s\n", edgellm::version(),
               edgellm::git_commit(), edgellm::llama_build());

  auto model = edgellm::Model::Load(path);
  if (!model.ok()) {
    std::fprintf(stderr, "consumer: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto session = edgellm::Session::Create(**model, {});
  if (!session.ok()) {
    std::fprintf(stderr, "consumer: %s\n", session.status().ToString().c_str());
    return 1;
  }
  edgellm::GenerateOptions opt;
  opt.chat = true;
  opt.temperature = 0;  // greedy: the same text as `edgellm run --chat --temp 0`
  opt.max_tokens = 64;
  auto gen = (*session)->Generate(prompt, opt, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!gen.ok()) {
    std::fprintf(stderr, "\nconsumer: %s\n", gen.status().ToString().c_str());
    return 1;
  }
  std::printf("\n");
  std::fprintf(stderr, "consumer: %d tokens, %.1f tok/s\n", gen->stats.n_gen,
               gen->stats.decode_tps);
  return 0;
}
