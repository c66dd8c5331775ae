// --spec, --spec-max and --spec-fixed for `run` and `chat`: speculative decoding's options,
// and its stats for the summary line and --json.
#include <cstdio>
#include <sstream>

#include "common.h"

namespace cli {

void add_spec_options(CLI::App* cmd, SpecArgs* s) {
  cmd->add_option("--spec", s->sources,
                  "Speculative decoding's guesses, checked in the same decode: ngram (the "
                  "tokens that followed the last few where they appeared before), jump (the "
                  "text a grammar or schema forces), both as ngram,jump (default), or off");
  cmd->add_option("--spec-max", s->max_draft, "Tokens guessed per decode at most (default 8, "
                                              "0 = off, at most 16)")
      ->check(CLI::Range(0, 16));
  cmd->add_flag("--spec-fixed", s->fixed,
                "Always check --spec-max guesses when there are, instead of as many as the "
                "measured acceptance and decode cost say pay (benchmarks)");
}

edgellm::Status apply_spec(const SpecArgs& s, edgellm::GenerateOptions* go) {
  edgellm::SpeculativeOptions& o = go->speculative;
  o.max_draft = s.max_draft;
  o.adaptive = !s.fixed;
  if (s.sources == "off") {
    o.max_draft = 0;
    return edgellm::Status::Ok();
  }
  o.ngram = o.jump = false;
  std::stringstream ss(s.sources);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "ngram") {
      o.ngram = true;
    } else if (item == "jump") {
      o.jump = true;
    } else {
      return edgellm::Status::InvalidArgument(
          "--spec '" + s.sources + "': '" + item +
          "' is not a source: use ngram, jump, ngram,jump or off");
    }
  }
  return edgellm::Status::Ok();
}

std::string spec_summary(const edgellm::Stats& s) {
  if (s.spec_drafted <= 0 || s.decode_calls <= 0) return {};
  char b[160];
  std::snprintf(b, sizeof b, " | spec %d/%d kept (%d forced), %.2f tok/decode", s.spec_accepted,
                s.spec_drafted, s.spec_forced,
                static_cast<double>(s.n_gen) / s.decode_calls);
  return b;
}

}  // namespace cli
