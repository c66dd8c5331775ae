// learn_vocab: BPE-style merges over the corpus, written as a SentencePiece-style vocabulary
// (scores rank the merges) that llama.cpp's "llama" tokenizer applies.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "edgellm/train.h"

namespace edgellm {
namespace {

constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6;
const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

// Splits valid UTF-8 into characters (invalid bytes become one-byte pieces).
std::vector<std::string> chars_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + n > s.size()) n = 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

// Caps a token's length so templated text does not turn whole phrases into single tokens:
// 3 characters when it holds Chinese (or other non-ASCII) text, 12 otherwise. A merged token
// never holds a digit: numbers stay one token per digit, so "87+99=" is 6 tokens and the
// model can learn arithmetic digit by digit instead of a token per number.
bool short_enough(const std::string& token) {
  if (std::any_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  std::string t = token;
  if (t.rfind(kSpace, 0) == 0) t = t.substr(kSpace.size());
  const std::vector<std::string> cs = chars_of(t);
  const bool ascii = std::all_of(t.begin(), t.end(), [](char c) { return (c & 0x80) == 0; });
  return cs.size() <= (ascii ? 12u : 3u);
}

}  // namespace

Result<Vocab> learn_vocab(const std::string& text, const VocabOptions& o) {
  if (o.n_vocab < 512 || o.n_vocab > 65536) {
    return Status::InvalidArgument("vocabulary size must be in 512..65536");
  }
  Vocab v;
  auto add = [&](const std::string& t, float score, int32_t type) {
    v.tokens.push_back(t);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, kUnknown);
  add("<s>", 0, kControl);
  add("</s>", 0, kControl);
  add("<|im_start|>", 0, kControl);
  add("<|im_end|>", 0, kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0, kByte);
  }

  // Words: the text without control tokens, spaces as U+2581 starting a word, newlines alone.
  std::string plain = text;
  for (const char* special : {"<|im_start|>", "<|im_end|>", "<s>"}) {
    for (size_t p = plain.find(special); p != std::string::npos; p = plain.find(special, p)) {
      plain.replace(p, std::string(special).size(), "\n");
    }
  }
  std::map<std::string, int64_t> word_count;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) ++word_count[word];
    word.clear();
  };
  for (const std::string& ch : chars_of(plain)) {
    if (ch.size() == 1 && ch[0] >= '0' && ch[0] <= '9') {
      // No merge holds a digit (short_enough), so a digit ends a word as far as merges go.
      // Splitting there gives the same merges and far fewer distinct words to recount (the
      // corpus holds thousands of distinct numbers).
      flush();
      ++word_count[ch];
    } else if (ch == "\n") {
      flush();
      ++word_count["\n"];
    } else if (ch == " ") {
      flush();
      word = kSpace;
    } else {
      word += ch;
    }
  }
  flush();

  // Every character seen becomes a token (most frequent first), then merges.
  std::map<std::string, int64_t> char_count;
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (const auto& [w, n] : word_count) {
    std::vector<std::string> syms = chars_of(w);
    for (const std::string& c : syms) char_count[c] += n;
    words.push_back({std::move(syms), n});
  }
  std::vector<std::pair<int64_t, std::string>> chars;
  for (const auto& [c, n] : char_count) chars.push_back({-n, c});
  std::sort(chars.begin(), chars.end());
  std::set<std::string> known(v.tokens.begin(), v.tokens.end());
  for (const auto& [n, c] : chars) {
    if (static_cast<int32_t>(v.tokens.size()) >= o.n_vocab) break;
    if (known.insert(c).second) add(c, 0, kNormal);
  }

  for (int32_t rank = 1; static_cast<int32_t>(v.tokens.size()) < o.n_vocab; ++rank) {
    std::map<std::pair<std::string, std::string>, int64_t> pairs;
    for (const auto& [syms, n] : words) {
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += n;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    int64_t best_n = 0;
    for (const auto& [p, n] : pairs) {  // map order: ties go to the smallest pair, deterministic
      if (n > best_n && !known.count(p.first + p.second) && short_enough(p.first + p.second)) {
        best = &p;
        best_n = n;
      }
    }
    if (!best || best_n < o.min_count) break;
    const std::string a = best->first, b = best->second, ab = a + b;
    known.insert(ab);
    add(ab, -static_cast<float>(rank), kNormal);
    for (auto& [syms, n] : words) {
      std::vector<std::string> out;
      out.reserve(syms.size());
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == a && syms[i + 1] == b) {
          out.push_back(ab);
          ++i;
        } else {
          out.push_back(syms[i]);
        }
      }
      syms.swap(out);
    }
  }
  return v;
}

}  // namespace edgellm
