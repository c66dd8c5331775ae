// libFuzzer target for the constrained-output input path: a GBNF grammar or a JSON schema
// from an app or a `serve` client (check_gbnf, json_schema_to_gbnf), then llama.cpp's grammar
// built from what passed and fed text. Any input must come back as an error or a grammar,
// never a crash, an abort, a hang or an unbounded allocation (ASan + UBSan, -rss_limit_mb).
//
// Input: byte 0 picks the kind (even: GBNF, odd: JSON schema); the rest up to the first 0x01
// byte is the grammar or schema, what follows is text fed to the grammar.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "engine/llama_glue.h"
#include "llama-grammar.h"  // llama_grammar_init_impl, llama_grammar_accept_str

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool schema = (data[0] & 1) != 0;
  std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::string text;
  if (const size_t cut = body.find('\x01'); cut != std::string::npos) {
    text = body.substr(cut + 1);
    body.resize(cut);
  }
  edgellm::GrammarLimits limits;
  limits.max_bytes = 8192;
  limits.max_rules = 512;
  std::string gbnf = body;
  if (schema) {
    // The policy from the body's length: each of the three rewrites fuzzed.
    const auto ws = static_cast<edgellm::JsonWhitespace>(body.size() % 3);
    edgellm::Result<std::string> g = edgellm::engine::json_schema_to_gbnf(body, limits, ws);
    if (!g.ok()) {
      if (g.status().message().empty()) std::abort();  // an error always says why
      return 0;
    }
    gbnf = std::move(g).value();
    limits.max_bytes *= 16;
  }
  const edgellm::Status st = edgellm::engine::check_gbnf(nullptr, gbnf, limits, "the grammar");
  if (!st.ok()) {
    if (st.message().empty()) std::abort();
    return 0;
  }
  // What the checks pass, llama.cpp builds (or refuses: left recursion) and can be fed.
  llama_grammar* g =
      llama_grammar_init_impl(nullptr, gbnf.c_str(), "root", false, nullptr, 0, nullptr, 0);
  if (g == nullptr) return 0;
  try {
    for (size_t i = 0; i < text.size(); i += 4) llama_grammar_accept_str(*g, text.substr(i, 4));
  } catch (const std::exception&) {
    // the text left the grammar: the sampler never feeds such text (it checks first)
  }
  llama_grammar_free_impl(g);
  return 0;
}
