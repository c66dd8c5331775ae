// Images in the prompt: the SmolVLM-256M-shape fixture (a llama text model and its idefics3
// vision projector, random weights) against llama.cpp's own llama-mtmd-cli.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "edgellm/synth.h"
#include "gguf.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

const std::string kImage = std::string(EDGELLM_TEST_SOURCE_DIR) +
                           "/third_party/llama.cpp/tools/mtmd/test-1.jpeg";

struct ToolRun {
  int rc;
  std::string out;
};

ToolRun run_tool(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  return {p ? pclose(p) : -1, out};
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The projector is what llama.cpp's converter writes for SmolVLM-256M: clip.cpp reads each
// key with one exact type (another aborts the process), 198 tensors, 93.5M parameters.
TEST(MultimodalFixture, SmolVlmProjectorHasTheConvertersKeysAndTensors) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  ASSERT_FALSE(text.empty());
  gguf_init_params ip{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* g = gguf_init_from_file(testutil::synth_mmproj_path("smolvlm-256m").c_str(), ip);
  ASSERT_NE(g, nullptr);
  auto type_of = [&](const char* key) {
    const int64_t id = gguf_find_key(g, key);
    return id < 0 ? GGUF_TYPE_COUNT : gguf_get_kv_type(g, id);
  };
  EXPECT_EQ(std::string(gguf_get_val_str(g, gguf_find_key(g, "clip.projector_type"))), "idefics3");
  for (const char* k : {"clip.vision.image_size", "clip.vision.patch_size",
                        "clip.vision.embedding_length", "clip.vision.feed_forward_length",
                        "clip.vision.block_count", "clip.vision.attention.head_count",
                        "clip.vision.projection_dim", "clip.vision.projector.scale_factor",
                        "clip.vision.preproc_image_size"}) {
    EXPECT_EQ(type_of(k), GGUF_TYPE_UINT32) << k;
  }
  EXPECT_EQ(type_of("clip.vision.attention.layer_norm_epsilon"), GGUF_TYPE_FLOAT32);
  EXPECT_EQ(type_of("clip.has_vision_encoder"), GGUF_TYPE_BOOL);
  EXPECT_EQ(gguf_get_arr_type(g, gguf_find_key(g, "clip.vision.image_mean")), GGUF_TYPE_FLOAT32);
  EXPECT_EQ(gguf_get_n_tensors(g), 198);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.patch_embd.weight")), GGML_TYPE_F32);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.blk.0.attn_q.weight")), GGML_TYPE_F16);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.blk.0.attn_q.bias")), GGML_TYPE_F32);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "mm.model.fc.weight")), GGML_TYPE_F16);
  gguf_free(g);
}

// llama.cpp's own multimodal CLI loads the pair and generates from test-1.jpeg. At SmolVLM's
// own settings an image is 4x4 tiles of 512 and an overview: 17 encoder passes of ~3.3 s each
// on this machine's 2 threads. With at most 64 image tokens it is one tile and the overview.
TEST(MultimodalFixture, LlamaMtmdCliRunsTheSmolVlmPair) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  ASSERT_FALSE(text.empty());
  const ToolRun r = run_tool(std::string(EDGELLM_LLAMA_MTMD_CLI) + " -m " + text + " --mmproj " +
                             testutil::synth_mmproj_path("smolvlm-256m") + " --image " + kImage +
                             " -p 'What is in the image?' -n 4 --temp 0 -t 2 --no-warmup -c 2048"
                             " --image-max-tokens 64");
  ASSERT_EQ(r.rc, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
  EXPECT_EQ(count(r.out, "mtmd batch encoding done"), 2u) << r.out.substr(0, 6000);
  // The template it formats with is the fixture's: SmolVLM's turns.
  EXPECT_NE(r.out.find("User: How are you?<end_of_utterance>\nAssistant:"), std::string::npos);
}

TEST(MultimodalFixture, AProjectorOnlyForPresetsWithOneAndNotOverTheModel) {
  const std::string dir = testutil::scratch_dir("mm-synth");
  SynthOptions o;
  o.preset = "tiny";
  o.type = "F16";
  o.output = dir + "/tiny.gguf";
  o.mmproj_output = dir + "/mmproj.gguf";
  o.vocab_path = testutil::vocab_path();
  Status st = synth_model(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("preset tiny has no projector"), std::string::npos) << st.message();
  o.preset = "smolvlm-256m";
  o.mmproj_output = o.output;
  st = synth_model(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("cannot both be written"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(o.output));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace edgellm
