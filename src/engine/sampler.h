// Builds llama.cpp sampler chains from GenerateOptions.
#pragma once

#include <memory>

#include "edgellm/session.h"
#include "llama.h"

namespace edgellm::engine {

struct SamplerFree {
  void operator()(llama_sampler* s) const { llama_sampler_free(s); }
};
using SamplerPtr = std::unique_ptr<llama_sampler, SamplerFree>;

// Checks the sampling fields of `o`: kInvalidArgument naming the bad field.
Status validate_sampling(const GenerateOptions& o);
// Order: repetition penalty, then greedy (temperature 0) or top-k, top-p, min-p,
// temperature and a seeded draw.
SamplerPtr make_sampler(const GenerateOptions& o, int32_t n_vocab);

}  // namespace edgellm::engine
