// The GGUF validator against a corpus of malformed files, every truncation of a valid one,
// byte-flip fuzzing, llama.cpp's own vocabulary files and real quantized models. The _asan
// twin runs all of it, and Model::Load on every corpus file, under ASan + UBSan.
#include "edgellm/gguf_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>

#include "edgellm/edgellm.h"
#include "edgellm/session.h"
#include "edgellm/synth.h"
#include "gguf.h"
#include "testutil/fixtures.h"
#include "testutil/gguf_corpus.h"

namespace fs = std::filesystem;

namespace edgellm {
namespace {

// An exact-size heap copy, so that ASan sees any read past the end.
GgufCheckResult check_exact(const std::string& bytes, size_t n) {
  std::vector<uint8_t> copy(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
  return check_gguf_bytes(copy.empty() ? nullptr : copy.data(), n);
}

Status load_status(const std::string& path) {
  auto m = Model::Load(path);
  return m.ok() ? Status::Ok() : m.status();
}

class GgufCheckTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testutil::scratch_dir("gguf_check"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(GgufCheckTest, ValidBasePasses) {
  const std::string b = testutil::gguf_valid_base();
  GgufCheckResult r = check_exact(b, b.size());
  ASSERT_TRUE(r.ok()) << r.status.ToString();
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.summary.version, 3u);
  EXPECT_EQ(r.summary.n_kv, 11u);
  EXPECT_EQ(r.summary.n_tensors, 4u);
  EXPECT_EQ(r.summary.alignment, 32u);
  EXPECT_EQ(r.summary.data_offset % 32, 0u);
  EXPECT_EQ(r.summary.data_offset + r.summary.data_bytes, b.size());
  EXPECT_EQ(r.summary.file_bytes, b.size());
  EXPECT_EQ(r.summary.architecture, "llama");
  testutil::write_file(dir_ + "/base.gguf", b);
  GgufCheckResult f = check_gguf_file(dir_ + "/base.gguf");
  EXPECT_TRUE(f.ok()) << f.status.ToString();
  // ggml's reader agrees that the base is well formed.
  gguf_init_params p{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* g = gguf_init_from_file((dir_ + "/base.gguf").c_str(), p);
  EXPECT_NE(g, nullptr);
  if (g) gguf_free(g);
}

TEST_F(GgufCheckTest, CorpusIsLargeAndNamed) {
  const auto corpus = testutil::gguf_malformed_corpus();
  EXPECT_GE(corpus.size(), 30u);
  std::set<std::string> names;
  for (const auto& c : corpus) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

TEST_F(GgufCheckTest, EveryCaseReportsItsError) {
  for (const testutil::GgufCase& c : testutil::gguf_malformed_corpus()) {
    SCOPED_TRACE(c.name);
    GgufCheckResult r = check_exact(c.bytes, c.bytes.size());
    EXPECT_EQ(gguf_error_name(r.error), std::string(gguf_error_name(c.expected)))
        << r.status.ToString();
    EXPECT_NE(r.field.find(c.field), std::string::npos) << "field: " << r.field;
    EXPECT_EQ(r.status.code(), Code::kCorruptData);
    EXPECT_NE(r.status.message().find(r.field), std::string::npos) << r.status.message();
    const std::string& msg = r.status.message();
    EXPECT_TRUE(msg.find("fetch the model again") != std::string::npos ||
                msg.find("convert") != std::string::npos)
        << "no advice in: " << msg;

    const std::string path = dir_ + "/" + c.name + ".gguf";
    testutil::write_file(path, c.bytes);
    GgufCheckResult f = check_gguf_file(path);
    EXPECT_EQ(f.error, r.error) << f.status.ToString();
    EXPECT_EQ(f.field, r.field);
    EXPECT_EQ(f.offset, r.offset);
    EXPECT_EQ(f.status.code(), Code::kCorruptData);
    EXPECT_NE(f.status.message().find(path), std::string::npos);

    Status st = load_status(path);
    EXPECT_EQ(st.code(), Code::kCorruptData) << st.ToString();
  }
}

// ggml's reader on the same files: it must not crash either; the cases it accepts are
// the ones only our validator keeps away from libllama.
TEST_F(GgufCheckTest, GgmlReaderOnCorpus) {
  std::string accepted;
  for (const testutil::GgufCase& c : testutil::gguf_malformed_corpus()) {
    const std::string path = dir_ + "/" + c.name + ".gguf";
    testutil::write_file(path, c.bytes);
    gguf_init_params p{/*no_alloc=*/true, /*ctx=*/nullptr};
    gguf_context* g = gguf_init_from_file(path.c_str(), p);
    if (g) {
      accepted += " " + c.name;
      gguf_free(g);
    }
  }
  std::printf("ggml's reader accepts:%s\n", accepted.c_str());
}

TEST_F(GgufCheckTest, MissingFileAndDirectory) {
  GgufCheckResult r = check_gguf_file(dir_ + "/nope.gguf");
  EXPECT_EQ(r.error, GgufError::kIo);
  EXPECT_EQ(r.status.code(), Code::kNotFound);
  EXPECT_NE(r.status.message().find("nope.gguf"), std::string::npos);
  EXPECT_EQ(check_gguf_file(dir_).status.code(), Code::kInvalidArgument);
}

TEST_F(GgufCheckTest, EveryPrefixIsRejected) {
  const std::string b = testutil::gguf_valid_base();
  const std::string path = dir_ + "/prefix.gguf";
  testutil::write_file(path, b);
  for (size_t n = b.size(); n-- > 0;) {  // shrinking one file is cheaper than writing many
    GgufCheckResult r = check_exact(b, n);
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes accepted";
    ASSERT_EQ(r.status.code(), Code::kCorruptData) << n << ": " << r.status.ToString();
    fs::resize_file(path, n);
    GgufCheckResult f = check_gguf_file(path);
    ASSERT_EQ(f.error, r.error) << n;
    ASSERT_EQ(f.field, r.field) << n;
    ASSERT_FALSE(load_status(path).ok()) << n;
  }
}

// Random byte changes and extreme 64-bit values at random places: never a crash, and the
// result is self-consistent.
TEST_F(GgufCheckTest, ByteFlipFuzz) {
  const std::string b = testutil::gguf_valid_base();
  std::mt19937_64 rng(42);
  int rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string m = b;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % m.size();
      if (rng() % 4 == 0 && pos + 8 <= m.size()) {
        static const uint64_t kExtreme[] = {
            0, 1, ~uint64_t{0}, uint64_t{1} << 63, uint64_t{1} << 31, 0x7fffffffffffffff};
        const uint64_t v = kExtreme[rng() % 6];
        std::memcpy(m.data() + pos, &v, 8);
      } else {
        m[pos] = static_cast<char>(rng());
      }
    }
    const size_t len = rng() % 8 == 0 ? rng() % m.size() : m.size();
    GgufCheckResult r = check_exact(m, len);
    ASSERT_EQ(r.ok(), r.status.ok()) << iter;
    if (!r.ok()) {
      ++rejected;
      ASSERT_EQ(r.status.code(), Code::kCorruptData) << iter;
      ASSERT_FALSE(r.field.empty()) << iter;
    }
  }
  EXPECT_GT(rejected, 1000);
}

// Claims that would cost gigabytes if anything were sized from them.
TEST_F(GgufCheckTest, ClaimedSizesAllocateNothing) {
  const std::string b = testutil::gguf_valid_base();
  std::vector<std::string> cases;
  auto with = [&](size_t pos, uint64_t v) {
    std::string m = b;
    std::memcpy(m.data() + pos, &v, 8);
    cases.push_back(m);
  };
  with(16, uint64_t{1} << 40);  // n_kv
  with(16, uint64_t{1} << 20);  // n_kv: plausible, so the loop runs until the bytes end
  with(8, uint64_t{1} << 63);   // n_tensors
  with(8, uint64_t{1} << 20);
  for (const auto& c : testutil::gguf_malformed_corpus()) {
    // Includes a 2^30-byte string and a 2^30-element string array: within the caps (so
    // only the bytes left refuse them), and gigabytes if anything were sized from them.
    if (c.name.rfind("huge_", 0) == 0 || c.name.find("past_eof") != std::string::npos) {
      cases.push_back(c.bytes);
    }
  }
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5" << std::flush;  // resets VmHWM (Linux >= 4.0) so that growth is measurable
  const bool reset = clear.good();
  const int64_t before = peak_rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  for (int round = 0; round < 20; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      GgufCheckResult r = check_exact(cases[i], cases[i].size());
      ASSERT_FALSE(r.ok()) << i;
    }
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir_ + "/claim" + std::to_string(i) + ".gguf";
    testutil::write_file(path, cases[i]);
    ASSERT_FALSE(check_gguf_file(path).ok()) << i;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const int64_t growth = peak_rss_bytes() - before;
  EXPECT_LT(growth, 16 << 20) << "peak RSS grew by " << growth << " bytes";
  EXPECT_LT(ms, 2000.0);
  if (reset) {  // the probe itself sees a real 48 MiB allocation
    std::vector<char> big(48 << 20, 1);
    EXPECT_GT(peak_rss_bytes() - before, 32 << 20) << static_cast<int>(big[big.size() / 2]);
  }
  std::printf("%zu claim cases x 20 in %.1f ms, peak RSS growth %lld KiB\n", cases.size(), ms,
              static_cast<long long>(growth / 1024));
}

TEST_F(GgufCheckTest, LlamaVocabFilesPass) {
  const fs::path dir = fs::path(testutil::vocab_path()).parent_path();
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ggml-vocab-", 0) != 0 || e.path().extension() != ".gguf") continue;
    GgufCheckResult r = check_gguf_file(e.path().string());
    EXPECT_TRUE(r.ok()) << r.status.ToString();
    EXPECT_EQ(r.summary.n_tensors, 0u) << name;
    EXPECT_FALSE(r.summary.architecture.empty()) << name;
    ++n;
  }
  EXPECT_GE(n, 1) << "no ggml-vocab-*.gguf in " << dir;
  std::printf("%d vocabulary files pass\n", n);
}

TEST_F(GgufCheckTest, QuantizedAndHeaderOnlyModelsPass) {
  std::vector<std::string> paths = {testutil::synth_model("tiny", "Q8_0")};
  SynthOptions o;
  o.preset = "qwen2.5-0.5b";
  o.type = "Q4_K_M";
  o.header_only = true;
  o.output = dir_ + "/header-only.gguf";
  o.vocab_path = testutil::vocab_path();
  ASSERT_TRUE(synth_model(o).ok());
  paths.push_back(o.output);
  // The committed trained model (assets/) and the repository's models/ when present.
  for (const char* sub : {"/assets", "/models"}) {
    const fs::path dir = std::string(EDGELLM_TEST_SOURCE_DIR) + sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".gguf") paths.push_back(e.path().string());
    }
  }
  for (const std::string& p : paths) {
    const auto t0 = std::chrono::steady_clock::now();
    GgufCheckResult r = check_gguf_file(p);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(r.ok()) << r.status.ToString();
    EXPECT_GT(r.summary.n_tensors, 0u) << p;
    // edgellm's own trained models are llama-architecture; the synth ones have Qwen2 shapes.
    const bool own = fs::path(p).filename().string().rfind("edgellm-", 0) == 0;
    EXPECT_EQ(r.summary.architecture, own ? "llama" : "qwen2") << p;
    EXPECT_LE(r.summary.data_offset + r.summary.data_bytes, r.summary.file_bytes) << p;
    std::printf("%s: %llu tensors, %llu KVs, checked in %.1f ms\n", fs::path(p).filename().c_str(),
                static_cast<unsigned long long>(r.summary.n_tensors),
                static_cast<unsigned long long>(r.summary.n_kv), ms);
  }
}

}  // namespace
}  // namespace edgellm
