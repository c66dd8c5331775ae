// edgellm tokens MODEL TEXT|--file F [--json]: the prompt budget of a text under a tokenizer.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common.h"

namespace cli {
namespace {

size_t utf8_chars(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

Action add_tokens(CLI::App& app) {
  static std::string path, text, file;
  static bool json = false;
  auto* cmd = app.add_subcommand("tokens", "Count the tokens a text costs under a model's tokenizer");
  cmd->add_option("model", path, "GGUF model, or a vocabulary-only GGUF")->required();
  auto* t = cmd->add_option("text", text, "Text to count");
  auto* f = cmd->add_option("-f,--file", file, "Read the text from a file");
  t->excludes(f);
  cmd->add_flag("--json", json, "Print one JSON object");
  return [] {
    if (!file.empty()) {
      std::ifstream in(file, std::ios::binary);
      if (!in) return fail(edgellm::Status::NotFound("text file not found: " + file));
      std::ostringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    if (text.empty()) return fail(edgellm::Status::InvalidArgument("no text: pass TEXT or -f FILE"));
    edgellm::LoadOptions lo;
    lo.vocab_only = true;
    auto model = edgellm::Model::Load(path, lo);
    if (!model.ok()) return fail(model.status());
    auto toks = (*model)->Tokenize(text, false);
    if (!toks.ok()) return fail(toks.status());
    const size_t chars = utf8_chars(text);
    const double per_char = chars ? static_cast<double>(toks->size()) / chars : 0;
    if (json) {
      nlohmann::json j = {{"model", path},          {"tokens", toks->size()},
                          {"chars", chars},          {"bytes", text.size()},
                          {"tokens_per_char", per_char}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%zu tokens, %zu characters (%zu bytes): %.3f tokens per character\n",
                  toks->size(), chars, text.size(), per_char);
    }
    return 0;
  };
}

}  // namespace cli
