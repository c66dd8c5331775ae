// splice_held_tokens: the held tokens as far as they spell the text, then the rest tokenized.
#include "chat/token_splice.h"

#include <string>

#include "core/utf8.h"
#include "engine/model_impl.h"

namespace edgellm::chat {
namespace {

bool spells_at(std::string_view text, size_t off, const std::string& piece) {
  return !piece.empty() && off + piece.size() <= text.size() &&
         text.compare(off, piece.size(), piece) == 0;
}

}  // namespace

std::vector<llama_token> splice_held_tokens(const llama_vocab* vocab, std::string_view text,
                                            const std::vector<llama_token>& canonical,
                                            const std::vector<llama_token>& held) {
  size_t p = 0;
  while (p < canonical.size() && p < held.size() && canonical[p] == held[p]) ++p;
  if (p == held.size() || p == canonical.size()) return canonical;
  if (llama_vocab_type(vocab) != LLAMA_VOCAB_TYPE_BPE) return canonical;
  // The text the common prefix spells (a BOS the tokenizer added spells nothing of it).
  size_t i = 0;
  if (llama_vocab_get_add_bos(vocab) && canonical[0] == llama_vocab_bos(vocab)) ++i;
  if (p < i) return canonical;
  size_t off = 0;
  for (; i < p; ++i) {
    const std::string piece = token_bytes(vocab, canonical[i], /*special=*/true);
    if (!spells_at(text, off, piece)) return canonical;
    off += piece.size();
  }
  // Extend over the held tokens while what they spell is the text's next characters. A reply's
  // text is its tokens' bytes through the streaming UTF-8 decoder (bytes that never form a
  // character became U+FFFD), so the held bytes go through one too: the model keeps the
  // tokens it sampled where the history only has their replacement characters. A cut is
  // only made where the decoder holds nothing (never inside a character).
  const size_t start = off;
  Utf8Decoder decoder;
  std::string decoded;
  size_t j = p;
  for (size_t k = p; k < held.size(); ++k) {
    decoder.Push(token_bytes(vocab, held[k], /*special=*/true), &decoded);
    if (decoded.size() > text.size() - start || text.compare(start, decoded.size(), decoded) != 0) {
      break;
    }
    if (!decoder.has_pending()) {
      j = k + 1;
      off = start + decoded.size();
    }
  }
  if (j == p) return canonical;
  std::vector<llama_token> out(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(j));
  if (off == text.size()) return out;
  Result<std::vector<int32_t>> rest =
      tokenize(vocab, text.substr(off), /*add_special=*/false, /*parse_special=*/true);
  if (!rest.ok() || rest->empty()) return canonical;
  std::string spelled;
  for (int32_t t : *rest) spelled += token_bytes(vocab, t, /*special=*/true);
  if (spelled != text.substr(off)) return canonical;
  out.insert(out.end(), rest->begin(), rest->end());
  return out;
}

}  // namespace edgellm::chat
