// --spec, --spec-max and --spec-fixed for `run` and `chat`: speculative decoding's options,
// and its stats for the summary line and --json.
#include <cstdio>
#include <sstream>

#include "common.h"
#include "edgellm/planner.h"

namespace cli {

void add_spec_options(CLI::App* cmd, SpecArgs* s) {
  cmd->add_option("--spec", s->sources,
                  "Speculative decoding's guesses, checked in the same decode: ngram (the "
                  "tokens that followed the last few where they appeared before), jump (the "
                  "text a grammar or schema forces, checked), jump-commit (that text taken "
                  "unchecked in the tokenizer's split: faster, not exact), draft:FILE (a "
                  "smaller model with the same "
                  "tokenizer, e.g. Qwen2.5-0.5B for 1.5B, in a context of its own), a "
                  "comma-separated list of them (default ngram,jump), or off");
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
  o.ngram = o.jump = o.draft = false;
  std::stringstream ss(s.sources);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "ngram") {
      o.ngram = true;
    } else if (item == "jump") {
      o.jump = true;
    } else if (item == "jump-commit") {
      o.jump = o.jump_commit = true;
    } else if (item.rfind("draft:", 0) == 0 && item.size() > 6 && !o.draft) {
      o.draft = true;
    } else {
      return edgellm::Status::InvalidArgument(
          "--spec '" + s.sources + "': '" + item +
          "' is not a source: use ngram, jump, jump-commit, draft:FILE (once), a list such as "
          "ngram,jump,draft:FILE, or off");
    }
  }
  return edgellm::Status::Ok();
}

std::string spec_draft_path(const SpecArgs& s) {
  std::stringstream ss(s.sources);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.rfind("draft:", 0) == 0) return item.substr(6);
  }
  return {};
}

edgellm::Status load_spec_draft(const SpecArgs& s, const std::string& model, int32_t n_ctx,
                                std::unique_ptr<edgellm::Model>* out) {
  const std::string path = spec_draft_path(s);
  if (path.empty() || s.sources == "off") return edgellm::Status::Ok();
  edgellm::PlanOptions po;
  po.n_ctx = n_ctx;
  po.draft_path = path;
  auto plan = edgellm::plan_memory(model, po);
  if (!plan.ok()) {
    return edgellm::Status(plan.status().code(),
                           "draft model " + path + ": " + plan.status().message());
  }
  if (!plan->fits) {
    return edgellm::Status::ResourceExhausted("the model with draft model " + path +
                                              " does not fit this device: " + plan->advice);
  }
  std::fprintf(stderr, "[load] %s (draft model)\n", path.c_str());
  auto d = edgellm::Model::Load(path);
  if (!d.ok()) return d.status();
  *out = std::move(*d);
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
