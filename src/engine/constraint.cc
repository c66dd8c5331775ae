#include "engine/constraint.h"

#include <cctype>
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

Status apply_constraint(const Model::Impl* model, const GenerateOptions& o, TokenSampler* sampler,
                        Stats* st) {
  const llama_vocab* vocab = model->vocab;
  if (o.grammar.empty() && o.json_schema.empty()) return Status::Ok();
  if (!o.grammar.empty() && !o.json_schema.empty()) {
    return Status::InvalidArgument("set a grammar or a JSON schema, not both");
  }
  const GrammarLimits& lim = o.grammar_limits;
  if (lim.max_bytes < 1 || lim.max_depth < 1 || lim.max_rules < 1) {
    return Status::InvalidArgument(
        "grammar limits must be >= 1 (max_bytes, max_depth, "
        "max_rules)");
  }
  const auto t0 = std::chrono::steady_clock::now();
  GrammarSpec spec;
  bool token_refs = false;
  if (!o.json_schema.empty()) {
    Result<std::string> gbnf = json_schema_to_gbnf(o.json_schema, lim, o.json_whitespace);
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

Status apply_tool_grammar(const Model::Impl* model, const ChatRender& render, TokenSampler* sampler,
                          Stats* st) {
  const auto t0 = std::chrono::steady_clock::now();
  // The format's own grammar: trusted, but checked like any (a broken one is an error, not
  // an abort) with bounds far above what a tool list makes.
  GrammarLimits lim;
  lim.max_bytes = size_t{16} << 20;
  lim.max_depth = 1 << 20;
  lim.max_rules = 1 << 20;
  bool token_refs = false;
  EDGELLM_RETURN_IF_ERROR(
      check_gbnf(model->vocab, render.grammar.gbnf, lim, "the tool-call grammar", &token_refs));
  Result<SamplerPtr> grammar = make_grammar_sampler(model->vocab, render.grammar);
  if (!grammar.ok()) return grammar.status();
  if (!render.grammar.lazy && !render.generation_prompt.empty()) {
    // The grammar matches from the generation prompt on (llama.cpp's common sampler feeds it
    // the same way): advance it past the tokens the template already wrote.
    Result<std::vector<int32_t>> toks =
        tokenize(model->vocab, render.generation_prompt, /*add_special=*/false,
                 /*parse_special=*/true);
    if (!toks.ok()) return toks.status();
    for (size_t i = 0; i < toks->size(); ++i) {
      const llama_token t = (*toks)[i];
      const std::string piece = token_bytes(model->vocab, t);
      if (i == 0 && !piece.empty() && std::isspace(static_cast<unsigned char>(piece[0])) &&
          !std::isspace(static_cast<unsigned char>(render.generation_prompt[0]))) {
        continue;  // a tokenizer's space before a leading special token
      }
      if (llama_vocab_is_eog(model->vocab, t) || !grammar_allows(grammar->get(), t)) {
        return Status::Internal(
            "the tool-call grammar does not start with the template's "
            "generation prompt");
      }
      EDGELLM_RETURN_IF_ERROR(grammar_accept(grammar->get(), t));
    }
  }
  sampler->SetGrammar(std::move(grammar).value(), token_refs ? nullptr : &model->vocab_index());
  st->grammar_ms +=
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
