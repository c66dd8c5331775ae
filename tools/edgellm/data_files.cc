// The CLI's data: the default model (edgellm's own, assets/edgellm-tiny-F32.gguf) and the
// vocabulary `synth` and `plan` build fixtures from (llama.cpp's ggml-vocab-qwen2.gguf).
// `cmake --install` puts both in PREFIX/share/edgellm/; a CLI run from a build folder finds them
// in the source tree. Both places are relative to the executable, so neither an installed CLI
// nor a moved install refers back to the tree it was built in.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common.h"

namespace cli {
namespace fs = std::filesystem;

namespace {

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// Where a data file may be, most specific first: EDGELLM_DATA_DIR, the install's share folder,
// the source tree's folder for that file.
std::vector<fs::path> candidates(const std::string& name, const char* tree_rel) {
  std::vector<fs::path> out;
  const char* dir = std::getenv("EDGELLM_DATA_DIR");
  if (dir && *dir) out.push_back(fs::path(dir) / name);
  const fs::path exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    out.push_back(exe_dir / EDGELLM_DATA_REL / name);
    out.push_back(exe_dir / tree_rel / name);
  }
  return out;
}

std::string find_first(const std::vector<fs::path>& paths) {
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.lexically_normal().string();
  }
  return "";
}

// kNotFound says where it looked and what to do.
edgellm::Result<std::string> default_model() {
  const std::vector<fs::path> paths = candidates(kDefaultModel, EDGELLM_TREE_ASSETS_REL);
  std::string found = find_first(paths);
  if (!found.empty()) return found;
  std::string looked;
  for (const fs::path& p : paths) {
    looked += (looked.empty() ? "" : ", ") + p.lexically_normal().string();
  }
  return edgellm::Status::NotFound(std::string("no -m given and the default model ") +
                                   kDefaultModel + " is not installed (looked in " + looked +
                                   "): pass -m MODEL.gguf, or install edgellm with "
                                   "`cmake --install build --prefix DIR`");
}

}  // namespace

edgellm::Status use_default_model(std::string* model, bool quiet) {
  if (!model->empty()) return edgellm::Status::Ok();
  auto m = default_model();
  if (!m.ok()) return m.status();
  *model = *m;
  if (!quiet) {
    std::fprintf(stderr, "[model] %s (the default; -m chooses another)\n", model->c_str());
  }
  return edgellm::Status::Ok();
}

std::string default_vocab() {
  std::string found = find_first(candidates("ggml-vocab-qwen2.gguf", EDGELLM_TREE_VOCAB_REL));
  // Not found: the name alone, so the load error names the file that is missing.
  return found.empty() ? "ggml-vocab-qwen2.gguf" : found;
}

}  // namespace cli
