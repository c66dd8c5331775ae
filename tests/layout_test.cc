// The source tree against docs/architecture.md and the llama.cpp rule of docs/engine.md:
// every folder of src/ is in the architecture table and uses only the folders the table
// allows, the allowed graph has no cycle, llama.cpp headers stay where the table says, and
// llama.cpp's version-sensitive calls appear only in the glue.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kRoot = EDGELLM_TEST_SOURCE_DIR;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The words of a table cell ("core, device" -> {core, device}; "—" -> {}).
std::vector<std::string> split_list(const std::string& cell) {
  std::vector<std::string> out;
  std::string w;
  for (char c : cell + " ") {
    if (ident_char(c) || c == '.') {
      w += c;
    } else if (!w.empty()) {
      out.push_back(w);
      w.clear();
    }
  }
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  const size_t b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

struct Room {
  std::set<std::string> deps;
  std::set<std::string> headers;
  std::string llama;  // "libllama", "ggml" or "none"
};

// The rows of the folder table: | `name/` | holds | may depend on | owns | llama.cpp |
std::map<std::string, Room> read_table() {
  std::map<std::string, Room> rooms;
  std::istringstream in(read(kRoot / "docs/architecture.md"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string c; std::getline(ss, c, '|');) cells.push_back(trim(c));
    if (cells.size() < 5 || cells[0].size() < 4 || cells[0].substr(cells[0].size() - 2) != "/`") {
      continue;
    }
    Room r;
    for (const std::string& d : split_list(cells[2])) r.deps.insert(d);
    for (const std::string& h : split_list(cells[3])) r.headers.insert(h);
    r.llama = cells[4];
    rooms[cells[0].substr(1, cells[0].size() - 3)] = r;
  }
  return rooms;
}

// Our .cc/.h files under `dir`; installed packages (node_modules) and build output are not ours.
std::vector<fs::path> sources(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
       ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == "node_modules" || name == "build")) {
      it.disable_recursion_pending();
      continue;
    }
    const std::string ext = it->path().extension().string();
    if (it->is_regular_file() && (ext == ".cc" || ext == ".h")) out.push_back(it->path());
  }
  return out;
}

// What `#include "x"` / `#include <x>` lines name.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> out;
  for (size_t p = text.find("#include"); p != std::string::npos; p = text.find("#include", p + 1)) {
    size_t q = text.find_first_not_of(" \t", p + 8);
    if (q == std::string::npos || (text[q] != '"' && text[q] != '<')) continue;
    const size_t end = text.find(text[q] == '"' ? '"' : '>', q + 1);
    if (end != std::string::npos) out.push_back(text.substr(q + 1, end - q - 1));
  }
  return out;
}

// The first call `name(` in `text` whose name starts with one of `prefixes`; "" if none.
std::string find_call(const std::string& text, const std::vector<std::string>& prefixes) {
  for (const std::string& prefix : prefixes) {
    for (size_t p = text.find(prefix); p != std::string::npos; p = text.find(prefix, p + 1)) {
      if (p > 0 && ident_char(text[p - 1])) continue;
      size_t e = p;
      while (e < text.size() && ident_char(text[e])) ++e;
      const size_t paren = text.find_first_not_of(" \t\n", e);
      if (paren != std::string::npos && text[paren] == '(') return text.substr(p, e - p);
    }
  }
  return "";
}

bool is_llama_header(const std::string& inc) {
  return inc == "llama.h" || inc == "llama-ext.h" || inc == "llama-cpp.h";
}
bool is_ggml_header(const std::string& inc) {
  return inc.rfind("ggml", 0) == 0 || inc == "gguf.h";
}

// What a header of ours exposes, following our own includes: 2 = libllama, 1 = ggml, 0 = none.
int exposure(const std::string& inc, std::map<std::string, int>* memo) {
  if (is_llama_header(inc)) return 2;
  if (is_ggml_header(inc)) return 1;
  fs::path p = inc.rfind("edgellm/", 0) == 0 ? kRoot / "include" / inc : kRoot / "src" / inc;
  if (!fs::exists(p)) return 0;
  if (auto it = memo->find(inc); it != memo->end()) return it->second;
  (*memo)[inc] = 0;  // cycles in includes resolve to what is found elsewhere
  int level = 0;
  for (const std::string& i : quoted_includes(read(p))) level = std::max(level, exposure(i, memo));
  (*memo)[inc] = level;
  return level;
}

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rooms_ = read_table();
    ASSERT_FALSE(rooms_.empty()) << "docs/architecture.md has no folder table";
    for (const auto& [name, room] : rooms_) {
      for (const std::string& h : room.headers) owner_[h] = name;
    }
  }
  // The folder whose code `inc` (an include line's name) belongs to; "" when none of ours.
  std::string folder_of(const std::string& inc) const {
    const size_t slash = inc.find('/');
    if (slash == std::string::npos) return "";
    const std::string top = inc.substr(0, slash);
    if (top == "edgellm") {
      auto it = owner_.find(inc.substr(slash + 1));
      return it == owner_.end() ? "" : it->second;
    }
    return rooms_.count(top) ? top : "";
  }
  // `where` (in folder `room`) includes `inc`: fine when it is the folder's own or allowed.
  void check_use(const std::string& room, const std::string& where, const std::string& inc) {
    EXPECT_NE(inc, "edgellm/edgellm.h") << where << ": include the headers it needs, not the umbrella";
    const std::string u = folder_of(inc);
    if (u.empty() || u == room) return;
    EXPECT_TRUE(rooms_[room].deps.count(u))
        << where << " includes " << inc << " (folder " << u << "/), which docs/architecture.md "
        << "does not allow for " << room << "/";
  }
  std::map<std::string, Room> rooms_;
  std::map<std::string, std::string> owner_;
};

TEST_F(LayoutTest, EveryFolderOfSrcIsInTheTableAndBack) {
  std::set<std::string> dirs;
  for (const auto& e : fs::directory_iterator(kRoot / "src")) {
    if (e.is_directory()) dirs.insert(e.path().filename().string());
  }
  for (const std::string& d : dirs) EXPECT_TRUE(rooms_.count(d)) << "src/" << d << " is missing";
  for (const auto& [name, room] : rooms_) {
    EXPECT_TRUE(dirs.count(name)) << "the table names src/" << name << ", which does not exist";
    for (const std::string& d : room.deps) {
      EXPECT_TRUE(rooms_.count(d)) << name << " may depend on unknown folder " << d;
    }
  }
}

TEST_F(LayoutTest, EveryPublicHeaderHasOneOwner) {
  std::map<std::string, int> seen;
  for (const auto& [name, room] : rooms_) {
    for (const std::string& h : room.headers) ++seen[h];
  }
  for (const auto& e : fs::directory_iterator(kRoot / "include/edgellm")) {
    const std::string h = e.path().filename().string();
    if (h == "edgellm.h") continue;  // the umbrella
    EXPECT_EQ(seen[h], 1) << "include/edgellm/" << h << " needs exactly one owner in the table";
    seen.erase(h);
  }
  for (const auto& [h, n] : seen) ADD_FAILURE() << "the table lists " << h << ", which is not in include/";
}

TEST_F(LayoutTest, FoldersUseOnlyWhatTheTableAllows) {
  for (const auto& [name, room] : rooms_) {
    if (!fs::exists(kRoot / "src" / name)) continue;
    for (const fs::path& file : sources(kRoot / "src" / name)) {
      const std::string rel = fs::relative(file, kRoot).string();
      for (const std::string& inc : quoted_includes(read(file))) check_use(name, rel, inc);
    }
  }
  // A public header may bring in only what its owner may use.
  for (const auto& [header, name] : owner_) {
    const fs::path p = kRoot / "include/edgellm" / header;
    if (!fs::exists(p)) continue;
    for (const std::string& inc : quoted_includes(read(p))) {
      check_use(name, "include/edgellm/" + header, inc);
    }
  }
}

TEST_F(LayoutTest, TheAllowedGraphHasNoCycle) {
  std::map<std::string, int> state;  // 1 visiting, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& n) {
    if (state[n] == 2) return;
    if (state[n] == 1) {
      std::string cycle;
      for (const std::string& p : path) cycle += p + " -> ";
      ADD_FAILURE() << "dependency cycle: " << cycle << n;
      return;
    }
    state[n] = 1;
    path.push_back(n);
    for (const std::string& d : rooms_[n].deps) visit(d);
    path.pop_back();
    state[n] = 2;
  };
  for (const auto& [name, room] : rooms_) visit(name);
}

TEST_F(LayoutTest, LlamaCppHeadersStayWhereTheTableSays) {
  std::map<std::string, int> memo;
  for (const auto& e : fs::directory_iterator(kRoot / "include/edgellm")) {
    for (const std::string& inc : quoted_includes(read(e.path()))) {
      EXPECT_EQ(exposure(inc, &memo), 0) << e.path().filename() << " includes " << inc;
    }
  }
  for (const auto& [name, room] : rooms_) {
    if (!fs::exists(kRoot / "src" / name)) continue;
    const int allowed = room.llama == "libllama" ? 2 : room.llama == "ggml" ? 1 : 0;
    for (const fs::path& file : sources(kRoot / "src" / name)) {
      for (const std::string& inc : quoted_includes(read(file))) {
        EXPECT_LE(exposure(inc, &memo), allowed)
            << fs::relative(file, kRoot).string() << " includes " << inc << ", but " << name
            << "/ is '" << room.llama << "' in docs/architecture.md";
      }
    }
  }
  // The CLI, the addon, the benchmarks and the consumer app (built against an install) see the
  // public API only.
  // bench/reference/ is the llama.cpp side of a side-by-side measurement, linked into a
  // benchmark or a llama.cpp tool, never into edgellm.
  for (const char* dir : {"tools", "bindings/node/src", "bench", "tests/consumer"}) {
    for (const fs::path& file : sources(kRoot / dir)) {
      if (fs::relative(file, kRoot).string().rfind("bench/reference/", 0) == 0) continue;
      for (const std::string& inc : quoted_includes(read(file))) {
        const bool ours = inc.rfind("edgellm/", 0) == 0;
        EXPECT_FALSE(is_llama_header(inc) || is_ggml_header(inc) ||
                     (!ours && fs::exists(kRoot / "src" / inc)))
            << fs::relative(file, kRoot).string() << " includes " << inc;
      }
    }
  }
}

// glibc's malloc extensions are named in one platform shim (src/core/allocator.cc), so the
// library, the CLI and the addon build against musl (HarmonyOS's libc) unchanged.
TEST_F(LayoutTest, GlibcAllocatorCallsOnlyInThePlatformShim) {
  int checked = 0;
  for (const char* dir : {"src", "tools", "bindings/node/src", "bench"}) {
    for (const fs::path& file : sources(kRoot / dir)) {
      const std::string rel = fs::relative(file, kRoot).string();
      if (rel == "src/core/allocator.cc") continue;
      ++checked;
      const std::string text = read(file);
      for (const char* glibc : {"malloc_trim", "mallopt", "<malloc.h>", "malloc_info", "mallinfo"}) {
        EXPECT_EQ(text.find(glibc), std::string::npos)
            << rel << " names glibc's " << glibc << ": go through edgellm/platform.h "
            << "(ReturnFreedMemory, TuneAllocator)";
      }
    }
  }
  EXPECT_GT(checked, 50);
  EXPECT_NE(read(kRoot / "src/core/allocator.cc").find("malloc_trim"), std::string::npos);
}

// llama.cpp's common library (chat templates, grammars) is used by the glue alone.
TEST_F(LayoutTest, LlamaCppCommonOnlyInTheGlue) {
  const std::set<std::string> common = {"chat.h", "common.h", "sampling.h", "log.h", "arg.h",
                                        "json-schema-to-grammar.h", "ngram-cache.h",
                                        "json.h", "llama-grammar.h"};
  for (const fs::path& file : sources(kRoot / "src")) {
    const std::string rel = fs::relative(file, kRoot).string();
    if (rel.rfind("src/engine/llama_glue", 0) == 0) continue;
    for (const std::string& inc : quoted_includes(read(file))) {
      EXPECT_FALSE(common.count(inc)) << rel << " includes llama.cpp common's " << inc
                                      << ": go through src/engine/llama_glue.h";
    }
  }
}

// llama.cpp's multimodal library (tools/mtmd) and the stb decoder it carries: the glue alone
// (llama_glue_mtmd.cc).
TEST_F(LayoutTest, MtmdOnlyInTheGlue) {
  const std::set<std::string> mtmd = {"mtmd.h", "mtmd-helper.h", "clip.h", "stb/stb_image.h"};
  int found = 0;
  for (const char* dir : {"src", "tools", "bindings/node/src"}) {
    for (const fs::path& file : sources(kRoot / dir)) {
      const std::string rel = fs::relative(file, kRoot).string();
      for (const std::string& inc : quoted_includes(read(file))) {
        if (!mtmd.count(inc)) continue;
        if (rel == "src/engine/llama_glue_mtmd.cc") {
          ++found;
          continue;
        }
        ADD_FAILURE() << rel << " includes llama.cpp's " << inc
                      << ": go through src/engine/llama_glue_mtmd.h";
      }
    }
  }
  EXPECT_GE(found, 2);
}

// The llama.cpp calls that change between versions go through src/engine/llama_glue.h.
TEST_F(LayoutTest, VersionSensitiveLlamaCallsOnlyInTheGlue) {
  const std::vector<std::string> versioned = {
      "llama_memory_",      "llama_state_",          "llama_sampler_chain_",
      "llama_sampler_init_", "llama_chat_",          "llama_log_set",
      "llama_kv_self_",     "llama_set_adapter_lora", "llama_set_adapters_lora",
      "llama_clear_adapter_lora", "llama_rm_adapter_lora", "llama_get_embeddings",
      "llama_pooling_type", "llama_model_n_cls_out", "llama_max_parallel_sequences",
      "llama_model_n_embd_out", "mtmd_"};
  int checked = 0;
  for (const char* dir : {"src", "tools", "bindings/node/src", "bench"}) {
    for (const fs::path& file : sources(kRoot / dir)) {
      const std::string rel = fs::relative(file, kRoot).string();
      if (rel.rfind("src/engine/llama_glue", 0) == 0) continue;
      if (rel.rfind("bench/reference/", 0) == 0) continue;  // the llama.cpp side, as is
      ++checked;
      const std::string name = find_call(read(file), versioned);
      EXPECT_EQ(name, "") << rel << " calls " << name << ": move it behind src/engine/llama_glue.h";
    }
  }
  EXPECT_GT(checked, 50);
  // And the glue does hold them (so the rule is not vacuous).
  EXPECT_NE(find_call(read(kRoot / "src/engine/llama_glue.cc"), versioned), "");
}

}  // namespace
