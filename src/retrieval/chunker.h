// Splitting a document into overlapping chunks of at most N tokens, at natural boundaries,
// never inside a UTF-8 character; byte offsets into the original text are kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace edgellm::retrieval {

struct Chunk {
  size_t start = 0, end = 0;  // bytes [start, end) of the text
  int32_t n_tokens = 0;       // as counted (without the model's special tokens)
};

// Chunks of at most `max_tokens` tokens by `count` (a tokenizer's count of a piece of text),
// cut after a paragraph or sentence end (. ! ? ; and 。！？；), else after a clause mark or a
// space (, ， 、), else between two UTF-8 characters; each chunk starts with about `overlap`
// tokens of the previous one (whole sentences; 0 for none). Whitespace-only text gives none.
std::vector<Chunk> chunk_text(std::string_view text, int32_t max_tokens, int32_t overlap,
                              const std::function<int32_t(std::string_view)>& count);

}  // namespace edgellm::retrieval
