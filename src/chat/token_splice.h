// Keeping the tokens a reply was sampled as when the next turn's prompt is tokenized.
//
// A conversation's prompt is its rendered history, tokenized. A reply's text tokenizes
// canonically into tokens that may differ from the ones the model sampled ("Hello" sampled
// as "Hel"+"lo" comes back as "Hello"), and every token after the first difference is
// prefilled again on the next turn. node-llama-cpp keeps the sampled tokens; so does this:
// the prompt becomes the held tokens as far as their bytes spell the rendered text, then
// the rest of the text tokenized. The model sees the text it wrote as it wrote it: where a
// reply's bytes formed no character (shown as U+FFFD in its text) the held raw bytes stay.
#pragma once

#include <string_view>
#include <vector>

#include "llama.h"

namespace edgellm::chat {

// Tokens for `text` that start with the longest run of `held` whose pieces spell the start
// of `text` (through a streaming UTF-8 decoder, as a reply's text was made from them: bytes
// that form no character match the U+FFFD standing for them; ending on a character
// boundary), then the rest of `text` tokenized (no BOS, special tokens parsed).
// `canonical` is `text` tokenized whole; it comes back unchanged when `held` adds nothing to
// its common prefix with it, when the vocabulary is not byte-level BPE (SentencePiece adds a
// space when a text starts again), or when any piece fails to spell the text.
std::vector<llama_token> splice_held_tokens(const llama_vocab* vocab, std::string_view text,
                                            const std::vector<llama_token>& canonical,
                                            const std::vector<llama_token>& held);

}  // namespace edgellm::chat
