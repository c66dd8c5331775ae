// fts_terms / fts_query: CJK bigrams, everything else as words.
#include "retrieval/lexical.h"

#include <set>
#include <vector>

namespace edgellm::retrieval {
namespace {

// Decodes the UTF-8 character at s[i] into *cp; returns its length (1 for a bad byte).
size_t decode(std::string_view s, size_t i, char32_t* cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *cp = 0xFFFD;
    return 1;
  }
  char32_t v = n == 1 ? c : n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  *cp = v;
  return n;
}

bool is_cjk(char32_t c) {
  return (c >= 0x3040 && c <= 0x30FF) ||    // Hiragana, Katakana
         (c >= 0x3400 && c <= 0x4DBF) ||    // CJK Extension A
         (c >= 0x4E00 && c <= 0x9FFF) ||    // CJK Unified Ideographs
         (c >= 0xAC00 && c <= 0xD7AF) ||    // Hangul syllables
         (c >= 0xF900 && c <= 0xFAFF) ||    // CJK Compatibility Ideographs
         (c >= 0x20000 && c <= 0x2FFFF);    // Extensions B-F
}

void flush_run(const std::vector<std::string_view>& run, std::string* out) {
  if (run.empty()) return;
  *out += ' ';
  if (run.size() == 1) {
    *out += run[0];
  } else {
    for (size_t i = 0; i + 1 < run.size(); ++i) {
      *out += run[i];
      *out += run[i + 1];
      *out += ' ';
    }
  }
  *out += ' ';
}

}  // namespace

std::string fts_terms(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  std::vector<std::string_view> run;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    const size_t n = decode(text, i, &cp);
    if (is_cjk(cp)) {
      run.push_back(text.substr(i, n));
    } else {
      flush_run(run, &out);
      run.clear();
      out.append(text.substr(i, n));
    }
    i += n;
  }
  flush_run(run, &out);
  return out;
}

std::string fts_query(std::string_view query) {
  const std::string terms = fts_terms(query);
  std::set<std::string> seen;
  std::string expr;
  std::string word;
  auto emit = [&] {
    if (!word.empty() && seen.insert(word).second) {
      expr += expr.empty() ? "\"" : " OR \"";
      expr += word;
      expr += '"';
    }
    word.clear();
  };
  for (size_t i = 0; i < terms.size();) {
    char32_t cp;
    const size_t n = decode(terms, i, &cp);
    // Word characters: ASCII letters and digits, and non-ASCII characters other than
    // punctuation (unicode61 splits the rest the same way); '"' never reaches the expression.
    const bool punct = (cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F) ||
                       (cp >= 0xFF00 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20) ||
                       (cp >= 0xFF3B && cp <= 0xFF40) || (cp >= 0xFF5B && cp <= 0xFF65) ||
                       cp == 0xFFFD;
    const bool word_char = cp >= 0x80 ? !punct
                                      : (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
                                            (cp >= 'A' && cp <= 'Z');
    if (word_char) {
      word.append(terms, i, n);
    } else {
      emit();
    }
    i += n;
  }
  emit();
  return expr;
}

}  // namespace edgellm::retrieval
