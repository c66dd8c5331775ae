#include "common.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <string>

namespace cli {

int fail(const edgellm::Status& st) {
  std::fprintf(stderr, "edgellm: error: %s\n", st.ToString().c_str());
  return 1;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / double(1ull << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  }
  return buf;
}

void progress_line(const char* stage, float f, bool done) {
  static const bool tty = isatty(STDERR_FILENO);
  static std::string last_stage;
  static int last_pct = -1;
  const int pct = static_cast<int>(f * 100.0f + 0.5f);
  if (last_stage != stage) {
    last_stage = stage;
    last_pct = -1;
  }
  if (pct == last_pct || (!tty && !done && pct % 25 != 0)) return;
  last_pct = pct;
  const int width = 30, filled = pct * width / 100;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '-');
  std::fprintf(stderr, "%s[%s] %s %3d%%%s", tty ? "\r" : "", stage, bar.c_str(), pct,
               (done || !tty) ? "\n" : "");
  std::fflush(stderr);
}

edgellm::Result<uint64_t> parse_size(const std::string& text) {
  size_t pos = 0;
  double v = -1;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    pos = 0;
  }
  std::string unit = text.substr(pos);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  if (pos == 0 || mult == 0 || !(v > 0) || v * mult > 1e15) {
    return edgellm::Status::InvalidArgument("'" + text +
                                            "' is not a memory size: use e.g. 6G, 8GB, 12GiB");
  }
  return static_cast<uint64_t>(v * mult);
}

nlohmann::json info_json(const edgellm::ModelInfo& i) {
  return {{"path", i.path},
          {"arch", i.arch},
          {"name", i.name},
          {"description", i.description},
          {"quant", i.quant},
          {"n_params", i.n_params},
          {"weights_bytes", i.weights_bytes},
          {"file_bytes", i.file_bytes},
          {"n_layer", i.n_layer},
          {"n_embd", i.n_embd},
          {"n_head", i.n_head},
          {"n_head_kv", i.n_head_kv},
          {"n_ctx_train", i.n_ctx_train},
          {"n_vocab", i.n_vocab},
          {"vocab_type", i.vocab_type},
          {"has_chat_template", i.has_chat_template},
          {"load_mode", edgellm::load_mode_name(i.load_mode)},
          {"metadata_only", i.metadata_only},
          {"load_ms", i.load_ms}};
}

}  // namespace cli
