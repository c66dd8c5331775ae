// chunk_text: sentences (or smaller pieces of a long sentence) packed greedily into chunks.
#include "retrieval/chunker.h"

#include <algorithm>

namespace edgellm::retrieval {
namespace {

// Length of the UTF-8 character starting at s[i] (1 for a stray continuation byte).
size_t char_len(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  return std::min(n, s.size() - i);
}

bool starts(std::string_view s, size_t i, std::string_view what) {
  return s.substr(i, what.size()) == what;
}

// Bytes of a sentence end at s[i] (0 when there is none): ASCII . ! ? ; before a space or the
// end, a newline, or a full-width 。！？； (which need no space after them).
size_t sentence_end(std::string_view s, size_t i) {
  const char c = s[i];
  if (c == '\n') return 1;
  if (c == '.' || c == '!' || c == '?' || c == ';') {
    return i + 1 == s.size() || s[i + 1] == ' ' || s[i + 1] == '\n' || s[i + 1] == '\t' ? 1 : 0;
  }
  for (std::string_view w : {"。", "！", "？", "；"}) {
    if (starts(s, i, w)) return w.size();
  }
  return 0;
}

size_t clause_end(std::string_view s, size_t i) {
  if (s[i] == ',' || s[i] == ' ' || s[i] == '\t') return 1;
  for (std::string_view w : {"，", "、", "："}) {
    if (starts(s, i, w)) return w.size();
  }
  return 0;
}

// Cuts [a, b) after every mark `end` finds, trailing whitespace kept with the piece before.
std::vector<Chunk> split(std::string_view s, size_t a, size_t b,
                         size_t (*end)(std::string_view, size_t)) {
  std::vector<Chunk> out;
  size_t from = a;
  for (size_t i = a; i < b;) {
    const size_t n = end(s, i);
    if (n == 0) {
      i += char_len(s, i);
      continue;
    }
    i += n;
    while (i < b && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
    out.push_back({from, i, 0});
    from = i;
  }
  if (from < b) out.push_back({from, b, 0});
  return out;
}

bool blank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

std::vector<Chunk> chunk_text(std::string_view text, int32_t max_tokens, int32_t overlap,
                              const std::function<int32_t(std::string_view)>& count) {
  // 1. Units: sentences; a sentence over max_tokens by clauses; a clause over it by the
  // longest run of characters that fits.
  std::vector<Chunk> units;
  for (Chunk& sent : split(text, 0, text.size(), sentence_end)) {
    sent.n_tokens = count(text.substr(sent.start, sent.end - sent.start));
    if (sent.n_tokens <= max_tokens) {
      units.push_back(sent);
      continue;
    }
    for (Chunk& cl : split(text, sent.start, sent.end, clause_end)) {
      cl.n_tokens = count(text.substr(cl.start, cl.end - cl.start));
      while (cl.n_tokens > max_tokens) {
        // Binary search over character boundaries for the longest prefix that fits.
        std::vector<size_t> cuts;
        for (size_t i = cl.start; i < cl.end; i += char_len(text, i)) cuts.push_back(i);
        if (cuts.size() < 2) break;  // one character: kept whole
        size_t lo = 1, hi = cuts.size() - 1, best = 1;
        while (lo <= hi) {
          const size_t mid = (lo + hi) / 2;
          if (count(text.substr(cl.start, cuts[mid] - cl.start)) <= max_tokens) {
            best = mid;
            lo = mid + 1;
          } else {
            hi = mid - 1;
          }
        }
        Chunk head{cl.start, cuts[best], 0};
        head.n_tokens = count(text.substr(head.start, head.end - head.start));
        units.push_back(head);
        cl.start = head.end;
        cl.n_tokens = count(text.substr(cl.start, cl.end - cl.start));
      }
      if (cl.end > cl.start) units.push_back(cl);
    }
  }
  // 2. Pack units greedily; the next chunk starts with the last units of this one that hold
  // at most `overlap` tokens.
  std::vector<Chunk> chunks;
  size_t i = 0;
  while (i < units.size()) {
    size_t j = i;
    int32_t tokens = 0;
    while (j < units.size() && (j == i || tokens + units[j].n_tokens <= max_tokens)) {
      tokens += units[j].n_tokens;
      ++j;
    }
    Chunk c{units[i].start, units[j - 1].end, tokens};
    if (!blank(text.substr(c.start, c.end - c.start))) chunks.push_back(c);
    if (j >= units.size()) break;
    size_t k = j;
    int32_t back = 0;
    while (k > i + 1 && back + units[k - 1].n_tokens <= overlap) {
      back += units[k - 1].n_tokens;
      --k;
    }
    i = k;
  }
  return chunks;
}

}  // namespace edgellm::retrieval
