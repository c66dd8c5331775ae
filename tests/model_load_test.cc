// Bad model files give a clear Status, never a crash.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

Status LoadStatus(const std::string& path) {
  auto m = Model::Load(path);
  return m.ok() ? Status::Ok() : m.status();
}

class ModelLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testutil::scratch_dir("load");
    good_ = testutil::synth_model("tiny", "Q8_0");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, good_;
};

TEST_F(ModelLoadTest, MissingFile) {
  Status st = LoadStatus(dir_ + "/nope.gguf");
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("nope.gguf"), std::string::npos);
}

TEST_F(ModelLoadTest, Directory) {
  Status st = LoadStatus(dir_);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("directory"), std::string::npos);
}

TEST_F(ModelLoadTest, EmptyFile) {
  testutil::write_file(dir_ + "/empty.gguf", "");
  Status st = LoadStatus(dir_ + "/empty.gguf");
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("empty"), std::string::npos);
}

TEST_F(ModelLoadTest, NotGguf) {
  testutil::write_file(dir_ + "/x.gguf", "<html>404 Not Found</html>");
  Status st = LoadStatus(dir_ + "/x.gguf");
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("not a GGUF"), std::string::npos);
}

TEST_F(ModelLoadTest, WrongVersion) {
  testutil::write_file(dir_ + "/v9.gguf", std::string("GGUF\x09\0\0\0", 8) + std::string(64, '\0'));
  EXPECT_EQ(LoadStatus(dir_ + "/v9.gguf").code(), Code::kCorruptData);
}

TEST_F(ModelLoadTest, TruncatedAnywhereIsCorruptData) {
  ASSERT_FALSE(good_.empty());
  const std::string bytes = testutil::read_file(good_);
  ASSERT_GT(bytes.size(), 1u << 20);
  // Cuts inside the header, the KV section (tokenizer arrays), the tensor table and the data.
  for (size_t cut : {size_t{6}, size_t{30}, size_t{4096}, size_t{1} << 20, bytes.size() / 2,
                     bytes.size() - 1}) {
    const std::string path = dir_ + "/cut.gguf";
    testutil::write_file(path, bytes.substr(0, cut));
    Status st = LoadStatus(path);
    EXPECT_EQ(st.code(), Code::kCorruptData) << "cut at " << cut << ": " << st.ToString();
  }
}

TEST_F(ModelLoadTest, GgufWithoutWeightsIsRefused) {
  // llama.cpp's vocabulary files are valid GGUF with a full tokenizer but no tensors.
  Status st = LoadStatus(testutil::vocab_path());
  EXPECT_EQ(st.code(), Code::kCorruptData) << st.ToString();
  EXPECT_NE(st.message().find("token_embd"), std::string::npos) << st.message();
}

TEST_F(ModelLoadTest, ProgressCallbackCanCancel) {
  LoadOptions lo;
  int calls = 0;
  lo.on_progress = [&](float) { return ++calls < 2; };
  auto m = Model::Load(good_, lo);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kCancelled);
  LoadOptions ok;
  float last = 0;
  ok.on_progress = [&](float p) {
    EXPECT_GE(p, last);
    last = p;
    return true;
  };
  ASSERT_TRUE(Model::Load(good_, ok).ok());
  EXPECT_FLOAT_EQ(last, 1.0f);
}

// Resident bytes of this process's mappings of `path` (/proc/self/smaps "Rss:").
int64_t mapped_rss(const std::string& path) {
  const std::string want = std::filesystem::canonical(path).string();
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  int64_t kb = 0;
  while (std::getline(smaps, line)) {
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      in = line.size() >= want.size() && line.compare(line.size() - want.size(), want.size(), want) == 0;
    } else if (in && line.rfind("Rss:", 0) == 0) {
      kb += std::stoll(line.substr(4));
    }
  }
  return kb * 1024;
}

// An mmap load drops the file pages it read (weights llama.cpp copied into repacked buffers),
// so right after Load the mapping holds nothing resident; pages of the weights that live in
// the mapping come back when inference touches them.
TEST_F(ModelLoadTest, MmapLoadLeavesNoCopiedPagesResident) {
  const std::string q4 = testutil::synth_model("tiny", "Q4_0");  // Q4_0 layers are repacked
  ASSERT_FALSE(q4.empty());
  LoadOptions lo;
  lo.mode = LoadMode::kMmap;
  auto m = Model::Load(q4, lo);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_LT(mapped_rss(q4), 64 * 1024) << "file pages still resident after the load";
  SessionOptions so;
  so.n_ctx = 128;
  so.warmup = false;
  auto s = Session::Create(**m, so);
  ASSERT_TRUE(s.ok());
  GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = 4;
  auto r = (*s)->Generate("Hello there", g);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(mapped_rss(q4), 0) << "the embeddings are read from the mapping";
  // The same model read into memory generates the same text.
  LoadOptions rd;
  rd.mode = LoadMode::kRead;
  auto m2 = Model::Load(q4, rd);
  ASSERT_TRUE(m2.ok());
  auto s2 = Session::Create(**m2, so);
  ASSERT_TRUE(s2.ok());
  auto r2 = (*s2)->Generate("Hello there", g);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r->text, r2->text);
}

}  // namespace
}  // namespace edgellm
