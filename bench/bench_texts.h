// Deterministic varied text for the retrieval benchmarks: English and Chinese sentences made
// from fixed word lists by a seeded generator, sized in the embedding model's tokens. The
// same seed gives the same texts on every machine. Public API only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/embed.h"

namespace bench {

// A 64-bit LCG (Knuth's MMIX constants): small, fast and the same everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 2862933555777941757ULL + 3037000493ULL) {}
  uint32_t next() {
    s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(s_ >> 33);
  }
  int uniform(int lo, int hi) { return lo + static_cast<int>(next() % (hi - lo + 1)); }  // [lo, hi]
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[next() % v.size()];
  }

 private:
  uint64_t s_;
};

inline const std::vector<std::string>& english_words() {
  static const std::vector<std::string> w = {
      "battery", "phone",   "model",    "river",    "garden",   "kitchen",  "engineer", "teacher",
      "memory",  "cache",   "window",   "letter",   "market",   "bridge",   "station",  "winter",
      "summer",  "recipe",  "bread",    "coffee",   "meeting",  "report",   "invoice",  "ticket",
      "doctor",  "patient", "medicine", "holiday",  "train",    "airport",  "camera",   "picture",
      "music",   "guitar",  "library",  "student",  "lesson",   "history",  "network",  "server",
      "storage", "thermal", "power",    "screen",   "keyboard", "question", "answer",   "notes",
      "quiet",   "small",   "bright",   "careful",  "early",    "late",     "warm",     "cold",
      "fast",    "slow",    "local",    "private",  "shared",   "daily",    "weekly",   "broken",
      "new",     "old",     "repairs",  "checks",   "writes",   "reads",    "moves",    "keeps",
      "opens",   "closes",  "finds",    "sends",    "saves",    "loads",    "bakes",    "plays",
      "visits",  "cleans",  "measures", "explains", "near",     "after",    "before",   "under",
      "beside",  "during",  "without",  "inside",   "across",   "the",      "a",        "every",
      "this",    "our",     "their",    "some",     "two",      "three",    "seven"};
  return w;
}

inline const std::vector<std::string>& chinese_words() {
  static const std::vector<std::string> w = {
      "手机", "电池", "模型", "内存", "温度", "线程", "回答", "问题", "文件", "笔记",
      "会议", "报告", "火车", "机场", "医生", "药品", "面包", "咖啡", "音乐", "图书",
      "学生", "老师", "历史", "网络", "服务", "存储", "屏幕", "键盘", "窗口", "花园",
      "厨房", "河流", "冬天", "夏天", "本地", "私人", "每天", "检查", "保存", "打开",
      "关闭", "发送", "测量", "解释", "修理", "读取", "写入", "安静", "明亮", "缓存"};
  return w;
}

// One sentence of `words` words (Chinese: two-character words, no spaces, ending in 。).
inline std::string sentence(Rng& rng, int words, bool chinese) {
  std::string s;
  if (chinese) {
    for (int i = 0; i < words; ++i) s += rng.pick(chinese_words());
    return s + "。";
  }
  for (int i = 0; i < words; ++i) {
    std::string w = rng.pick(english_words());
    if (i == 0 && !w.empty()) w[0] = static_cast<char>(w[0] - 'a' + 'A');
    if (i) s += ' ';
    s += w;
  }
  return s + ".";
}

inline int token_count(const edgellm::Embedder& e, const std::string& text, bool special) {
  auto t = e.Tokenize(text, special);
  return t.ok() ? static_cast<int>(t->size()) : -1;
}

// A sentence whose tokens (no special tokens) lie in [lo, hi]; one in five is Chinese.
inline std::string sentence_of_tokens(Rng& rng, const edgellm::Embedder& e, int lo, int hi) {
  for (;;) {
    const bool zh = rng.uniform(0, 4) == 0;
    const int words = zh ? rng.uniform((lo + 1) / 2, hi / 2 - 1) : rng.uniform(lo - 2, hi - 2);
    std::string s = sentence(rng, words, zh);
    const int n = token_count(e, s, false);
    if (n >= lo && n <= hi) return s;
  }
}

// A text of about `target` tokens, [CLS]/[SEP] included: sentences (one in five Chinese) added
// word by word until the count reaches the target.
inline std::string text_of_tokens(Rng& rng, const edgellm::Embedder& e, int target) {
  std::string text;
  while (token_count(e, text, true) < target) {
    const bool zh = rng.uniform(0, 4) == 0;
    const std::string s = sentence(rng, zh ? rng.uniform(4, 8) : rng.uniform(6, 14), zh);
    // Add the sentence a word (or a Chinese word) at a time so the text ends near the target.
    std::string piece;
    size_t i = 0;
    const std::string sep = text.empty() ? "" : " ";
    while (i < s.size() && token_count(e, text + sep + piece, true) < target) {
      size_t j = zh ? std::min(s.size(), i + 6) : s.find(' ', i + 1);
      if (j == std::string::npos) j = s.size();
      piece += s.substr(i, j - i);
      i = j;
    }
    text += sep;
    text += piece;
  }
  return text;
}

}  // namespace bench
