#include "engine/constraint.h"

#include <chrono>

#include "engine/model_impl.h"

namespace edgellm {

Status CheckOutputConstraint(const Model& model, const GenerateOptions& o) {
  engine::TokenSampler sampler(o, model.impl()->info.n_vocab);
  Stats st;
  return engine::apply_constraint(model.impl(), o, &sampler, &st);
}

}  // namespace edgellm

namespace edgellm::engine {

Status apply_constraint(const Model::Impl* model, const GenerateOptions& o,
                        TokenSampler* sampler, Stats* st) {
  const llama_vocab* vocab = model->vocab;
  if (o.grammar.empty() && o.json_schema.empty()) return Status::Ok();
  if (!o.grammar.empty() && !o.json_schema.empty()) {
    return Status::InvalidArgument("set a grammar or a JSON schema, not both");
  }
  const GrammarLimits& lim = o.grammar_limits;
  if (lim.max_bytes < 1 || lim.max_depth < 1 || lim.max_rules < 1) {
    return Status::InvalidArgument("grammar limits must be >= 1 (max_bytes, max_depth, "
                                   "max_rules)");
  }
  const auto t0 = std::chrono::steady_clock::now();
  GrammarSpec spec;
  bool token_refs = false;
  if (!o.json_schema.empty()) {
    Result<std::string> gbnf = json_schema_to_gbnf(o.json_schema, lim);
    if (!gbnf.ok()) return gbnf.status();
    spec.gbnf = std::move(gbnf).value();
    // The converter writes the rules; the limits still bound what it made of the schema.
    GrammarLimits converted = lim;
    converted.max_bytes = lim.max_bytes * 16;
    EDGELLM_RETURN_IF_ERROR(
        check_gbnf(vocab, spec.gbnf, converted, "the schema's grammar", &token_refs));
  } else {
    spec.gbnf = o.grammar;
    EDGELLM_RETURN_IF_ERROR(check_gbnf(vocab, spec.gbnf, lim, "the grammar", &token_refs));
  }
  Result<SamplerPtr> grammar = make_grammar_sampler(vocab, spec);
  if (!grammar.ok()) return grammar.status();
  // A grammar that matches token ids is not decided by a token's first byte.
  sampler->SetGrammar(std::move(grammar).value(), token_refs ? nullptr : &model->vocab_index());
  st->grammar_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

void finish_json(const GenerateOptions& o, bool stop_string, Generation* gen) {
  if (o.json_schema.empty()) return;
  gen->json.clear();
  if (gen->finish_reason != FinishReason::kStop) {
    gen->json_state = JsonState::kIncomplete;
    return;
  }
  if (stop_string) {  // cut where the schema did not end: not the schema's JSON
    gen->json_state = JsonState::kInvalid;
    return;
  }
  gen->json_state =
      json_trimmed(gen->text, &gen->json) ? JsonState::kComplete : JsonState::kInvalid;
}

}  // namespace edgellm::engine
