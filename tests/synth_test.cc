// synth writes loadable models with the preset's shapes, deterministically, through libllama.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>

#include "edgellm/edgellm.h"
#include "gguf.h"
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

// A header-only file holds exactly the tensor table libllama's quantizer writes: same names,
// types and sizes (the quantizer orders tensors its own way), and the same file size, with no
// data blocks on disk.
TEST_F(SynthTest, HeaderOnlyMatchesTheQuantizedFileTensorForTensor) {
  for (const char* type : {"Q4_K_M", "Q8_0", "Q4_0"}) {
    const std::string real = dir_ + "/real-" + type + ".gguf";
    const std::string head = dir_ + "/head-" + type + ".gguf";
    ASSERT_TRUE(Synth("tiny", type, real).ok());
    SynthOptions o;
    o.preset = "tiny";
    o.type = type;
    o.output = head;
    o.header_only = true;
    o.vocab_path = testutil::vocab_path();
    Status st = synth_model(o);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_EQ(std::filesystem::file_size(head), std::filesystem::file_size(real)) << type;
    struct stat sb {};
    ASSERT_EQ(::stat(head.c_str(), &sb), 0);
    EXPECT_LT(static_cast<uint64_t>(sb.st_blocks) * 512, std::filesystem::file_size(real) / 2)
        << "the data section should be a hole";

    gguf_init_params gp{/*no_alloc=*/true, /*ctx=*/nullptr};
    gguf_context* a = gguf_init_from_file(real.c_str(), gp);
    gguf_context* b = gguf_init_from_file(head.c_str(), gp);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(gguf_get_n_tensors(a), gguf_get_n_tensors(b));
    int quantized = 0;
    for (int64_t i = 0; i < gguf_get_n_tensors(a); ++i) {
      const std::string name = gguf_get_tensor_name(a, i);
      const int64_t j = gguf_find_tensor(b, name.c_str());
      ASSERT_GE(j, 0) << name;
      EXPECT_EQ(gguf_get_tensor_type(a, i), gguf_get_tensor_type(b, j)) << type << " " << name;
      EXPECT_EQ(gguf_get_tensor_size(a, i), gguf_get_tensor_size(b, j)) << name;
      if (gguf_get_tensor_type(a, i) != GGML_TYPE_F32) ++quantized;
    }
    EXPECT_GT(quantized, 10);
    gguf_free(a);
    gguf_free(b);

    // A metadata-only load sees the same model.
    LoadOptions lo;
    lo.metadata_only = true;
    auto ma = Model::Load(real, lo);
    auto mb = Model::Load(head, lo);
    ASSERT_TRUE(ma.ok() && mb.ok());
    EXPECT_EQ((*ma)->info().weights_bytes, (*mb)->info().weights_bytes);
    EXPECT_EQ((*mb)->info().quant, type);
  }
}

}  // namespace
}  // namespace edgellm
