// synth writes loadable models with the preset's shapes, deterministically, through libllama.
#include <gtest/gtest.h>

#include <filesystem>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testutil::scratch_dir("synth"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Status Synth(const std::string& preset, const std::string& type, const std::string& out,
               uint64_t seed = 1) {
    SynthOptions o;
    o.preset = preset;
    o.type = type;
    o.output = out;
    o.seed = seed;
    o.vocab_path = testutil::vocab_path();
    return synth_model(o);
  }
  std::string dir_;
};

TEST_F(SynthTest, QuantTypesLoadWithTheirType) {
  for (const char* type : {"F16", "Q4_0", "Q4_K_M"}) {
    const std::string out = dir_ + "/tiny-" + type + ".gguf";
    Status st = Synth("tiny", type, out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto m = Model::Load(out);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->info().quant, type);
    EXPECT_EQ((*m)->info().n_vocab, 151936);
    EXPECT_FALSE(std::filesystem::exists(out + ".partial." + std::to_string(::getpid())));
  }
  EXPECT_LT(std::filesystem::file_size(dir_ + "/tiny-Q4_K_M.gguf"),
            std::filesystem::file_size(dir_ + "/tiny-F16.gguf") / 2);
}

TEST_F(SynthTest, SameSeedSameBytesOtherSeedOtherBytes) {
  ASSERT_TRUE(Synth("tiny", "F16", dir_ + "/a.gguf", 5).ok());
  ASSERT_TRUE(Synth("tiny", "F16", dir_ + "/b.gguf", 5).ok());
  ASSERT_TRUE(Synth("tiny", "F16", dir_ + "/c.gguf", 6).ok());
  const std::string a = testutil::read_file(dir_ + "/a.gguf");
  EXPECT_EQ(a, testutil::read_file(dir_ + "/b.gguf"));
  EXPECT_NE(a, testutil::read_file(dir_ + "/c.gguf"));
}

TEST_F(SynthTest, PresetShapesMatchTheRealModels) {
  auto p = find_synth_preset("qwen2.5-1.5b");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->n_layer, 28);
  EXPECT_EQ(p->n_embd, 1536);
  EXPECT_EQ(p->n_head, 12);
  EXPECT_EQ(p->n_head_kv, 2);
  EXPECT_EQ(p->n_ff, 8960);
  EXPECT_EQ(p->n_vocab, 151936);
  EXPECT_TRUE(p->tied_embeddings);
  EXPECT_TRUE(find_synth_preset("qwen2.5-0.5b").ok());
  EXPECT_TRUE(find_synth_preset("qwen2.5-7b").ok());
  EXPECT_FALSE(find_synth_preset("qwen2.5-7b")->tied_embeddings);
}

TEST_F(SynthTest, BadArgumentsAreClearErrors) {
  Status st = Synth("nope", "Q4_K_M", dir_ + "/x.gguf");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("qwen2.5-1.5b"), std::string::npos);  // lists the choices
  EXPECT_EQ(Synth("tiny", "Q9_Z", dir_ + "/x.gguf").code(), Code::kInvalidArgument);
  SynthOptions o;
  o.preset = "tiny";
  o.output = dir_ + "/x.gguf";
  o.vocab_path = dir_ + "/missing-vocab.gguf";
  EXPECT_EQ(synth_model(o).code(), Code::kNotFound);
  EXPECT_EQ(Synth("tiny", "F16", dir_ + "/no/such/dir/x.gguf").code(), Code::kUnavailable);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.gguf"));
}

}  // namespace
}  // namespace edgellm
