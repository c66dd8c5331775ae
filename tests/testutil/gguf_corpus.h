// Malformed GGUF files for check_gguf_* and the loader: each case is a small valid GGUF
// with one thing broken, and the error the validator must report for it.
#pragma once

#include <string>
#include <vector>

#include "edgellm/gguf_check.h"

namespace testutil {

struct GgufCase {
  std::string name;  // e.g. "trunc_tensor_data"
  std::string bytes;
  edgellm::GgufError expected;
  std::string field;  // a substring of the field the validator must name
};

// A valid GGUF v3 of about 2.5 KiB, built in code: 11 KVs (general.architecture,
// general.alignment 32, a bool, a Qwen-like tokenizer with 16 tokens, scores, token types
// and merges) and 4 tensors (F32 and Q8_0) with their data, padded as ggml writes it.
std::string gguf_valid_base();

// At least 30 malformed variants of gguf_valid_base(): truncations in every section,
// absurd counts and lengths, bad shapes, types, alignments, offsets, duplicates, and
// well-known keys of the wrong type.
std::vector<GgufCase> gguf_malformed_corpus();

}  // namespace testutil
