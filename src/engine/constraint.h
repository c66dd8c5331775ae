// Constrained output for one generation: GenerateOptions' grammar or JSON schema compiled to
// a grammar sampler, and the JSON result read back from the text.
#pragma once

#include "edgellm/session.h"
#include "engine/llama_glue.h"
#include "engine/llama_glue_chat.h"
#include "engine/model_impl.h"
#include "engine/sampler.h"

namespace edgellm::engine {

// Compiles o.grammar or o.json_schema (checked against o.grammar_limits) and hands the grammar
// to `sampler`; nothing to do when neither is set. Fills st->grammar_ms. kInvalidArgument
// naming the problem, before any decode.
Status apply_constraint(const Model::Impl* model, const GenerateOptions& o, TokenSampler* sampler,
                        Stats* st);

// The tool-call grammar of a chat turn (render.grammar) into `sampler`: lazy with the
// format's triggers, or from the first token (advanced past the generation prompt the
// template already wrote). Adds to st->grammar_ms.
Status apply_tool_grammar(const Model::Impl* model, const ChatRender& render, TokenSampler* sampler,
                          Stats* st);

// With o.json_schema: reads gen->text into gen->json_state and gen->json. Complete only when
// the model ended the output itself (the grammar allows the end only where the schema ends);
// `stop_string`: a stop string ended it instead (kInvalid).
void finish_json(const GenerateOptions& o, bool stop_string, Generation* gen);

}  // namespace edgellm::engine
