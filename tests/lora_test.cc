// LoRA adapters against real libllama: synth adapters on the tiny fixture, applied, rescaled,
// removed and swapped between generations; bad adapters refused with a reason.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class LoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testutil::synth_model("tiny", "Q8_0");
    ASSERT_FALSE(path.empty());
    auto m = Model::Load(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m.value()).release();
    dir_ = testutil::scratch_dir("lora_test");
    for (uint64_t seed : {1, 2}) {
      SynthLoraOptions o;
      o.preset = "tiny";
      o.seed = seed;
      o.output = dir_ + "/tiny-lora-s" + std::to_string(seed) + ".gguf";
      ASSERT_TRUE(synth_lora(o).ok());
    }
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static std::unique_ptr<Session> NewSession() {
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 256;
    auto s = Session::Create(*model_, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }
  static std::string Greedy(Session& s, int n = 24) {
    GenerateOptions g;
    g.temperature = 0;
    // Every guess checked: the same greedy text run after run (docs/speculative.md).
    g.speculative.adaptive = false;
    g.max_tokens = n;
    g.ignore_eos = true;
    auto out = s.Generate("The weather in the mountains today is", g);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? out->text : "";
  }
  static std::shared_ptr<LoraAdapter> Adapter(uint64_t seed) {
    auto a = LoraAdapter::Load(*model_, dir_ + "/tiny-lora-s" + std::to_string(seed) + ".gguf");
    EXPECT_TRUE(a.ok()) << a.status().ToString();
    return a.ok() ? *a : nullptr;
  }
  static inline Model* model_ = nullptr;
  static inline std::string dir_;
};

TEST_F(LoraTest, InfoFromTheFile) {
  auto a = Adapter(1);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->info().arch, "qwen2");
  EXPECT_EQ(a->info().rank, 8);
  EXPECT_FLOAT_EQ(a->info().alpha, 16.0f);
  EXPECT_EQ(a->info().n_pairs, 2 * 7);  // tiny: 2 layers x (q, k, v, o, gate, up, down)
  EXPECT_GT(a->info().file_bytes, 0u);
}

TEST_F(LoraTest, OnChangesOutputDeterministicallyAndOffRestoresBaseExactly) {
  auto s = NewSession();
  ASSERT_NE(s, nullptr);
  const std::string base = Greedy(*s);
  ASSERT_FALSE(base.empty());
  EXPECT_EQ(Greedy(*s), base);

  auto a1 = Adapter(1);
  ASSERT_TRUE(s->SetLora(a1, 1.0f).ok());
  ASSERT_EQ(s->loras().size(), 1u);
  const std::string on = Greedy(*s);
  EXPECT_NE(on, base);
  EXPECT_EQ(Greedy(*s), on);  // deterministic with the adapter

  // Another scale is another model; the same scale again is the same output.
  ASSERT_TRUE(s->SetLora(a1, 0.25f).ok());
  const std::string quarter = Greedy(*s);
  EXPECT_NE(quarter, on);
  ASSERT_TRUE(s->SetLora(a1, 1.0f).ok());
  EXPECT_EQ(Greedy(*s), on);

  // Swapping to another adapter gives its own output; back again gives the first one's.
  auto a2 = Adapter(2);
  ASSERT_TRUE(s->RemoveLora(*a1).ok());
  ASSERT_TRUE(s->SetLora(a2, 1.0f).ok());
  const std::string other = Greedy(*s);
  EXPECT_NE(other, on);
  EXPECT_NE(other, base);
  ASSERT_TRUE(s->ClearLora().ok());
  ASSERT_TRUE(s->SetLora(a1, 1.0f).ok());
  EXPECT_EQ(Greedy(*s), on);

  // Off restores the base output exactly, by remove and by scale 0.
  ASSERT_TRUE(s->RemoveLora(*a1).ok());
  EXPECT_TRUE(s->loras().empty());
  EXPECT_EQ(Greedy(*s), base);
  ASSERT_TRUE(s->SetLora(a1, 1.0f).ok());
  ASSERT_TRUE(s->SetLora(a1, 0.0f).ok());
  EXPECT_TRUE(s->loras().empty());
  EXPECT_EQ(Greedy(*s), base);
  EXPECT_EQ(s->RemoveLora(*a1).code(), Code::kNotFound);

  // A fresh session with the adapter matches the swapped-in one: per-session state only.
  auto s2 = NewSession();
  ASSERT_TRUE(s2->SetLora(a1, 1.0f).ok());
  EXPECT_EQ(Greedy(*s2), on);
  EXPECT_EQ(Greedy(*s), base);  // the first session is untouched by the second's adapter
}

TEST_F(LoraTest, SurvivesReleaseKv) {
  auto s = NewSession();
  ASSERT_NE(s, nullptr);
  auto a1 = Adapter(1);
  ASSERT_TRUE(s->SetLora(a1, 1.0f).ok());
  const std::string on = Greedy(*s);
  s->ReleaseKv();
  EXPECT_FALSE(s->kv_allocated());
  EXPECT_EQ(Greedy(*s), on);  // the rebuilt context gets the adapter again
}

TEST_F(LoraTest, RefusedWhileGenerating) {
  auto s = NewSession();
  ASSERT_NE(s, nullptr);
  auto a1 = Adapter(1);
  std::atomic<bool> started{false};
  Status during;
  std::thread t([&] {
    GenerateOptions g;
    g.temperature = 0;
    g.max_tokens = 200;
    g.ignore_eos = true;
    g.stream_every_tokens = 1;
    auto out = s->Generate("Count:", g, [&](std::string_view) {
      if (!started.exchange(true)) during = s->SetLora(a1, 1.0f);
      return true;
    });
    EXPECT_TRUE(out.ok());
  });
  t.join();
  ASSERT_TRUE(started.load());
  EXPECT_EQ(during.code(), Code::kFailedPrecondition) << during.ToString();
  EXPECT_TRUE(s->loras().empty());
  EXPECT_TRUE(s->SetLora(a1, 1.0f).ok());  // fine again once the generation ended
}

TEST_F(LoraTest, BadAdaptersAreRefusedWithAReason) {
  EXPECT_EQ(LoraAdapter::Load(*model_, dir_ + "/missing.gguf").status().code(), Code::kNotFound);

  // A base model is not an adapter.
  auto base = LoraAdapter::Load(*model_, testutil::synth_model("tiny", "Q8_0"));
  EXPECT_EQ(base.status().code(), Code::kInvalidArgument);
  EXPECT_NE(base.status().message().find("not a LoRA adapter"), std::string::npos);

  // An adapter for other shapes (the 0.5B preset) names the mismatch instead of aborting.
  SynthLoraOptions o;
  o.preset = "qwen2.5-0.5b";
  o.rank = 2;
  o.output = dir_ + "/other-shapes.gguf";
  ASSERT_TRUE(synth_lora(o).ok());
  auto other = LoraAdapter::Load(*model_, o.output);
  EXPECT_EQ(other.status().code(), Code::kInvalidArgument);
  EXPECT_NE(other.status().message().find("shape"), std::string::npos) << other.status().ToString();

  // Truncated: refused before llama.cpp reads it.
  const std::string good = testutil::read_file(dir_ + "/tiny-lora-s1.gguf");
  testutil::write_file(dir_ + "/truncated.gguf", good.substr(0, good.size() / 2));
  EXPECT_EQ(LoraAdapter::Load(*model_, dir_ + "/truncated.gguf").status().code(),
            Code::kCorruptData);

  // Bad scale; adapter of another Model object.
  auto s = NewSession();
  auto a1 = Adapter(1);
  EXPECT_EQ(s->SetLora(a1, std::nanf("")).code(), Code::kInvalidArgument);
  EXPECT_EQ(s->SetLora(nullptr, 1.0f).code(), Code::kInvalidArgument);
  auto m2 = Model::Load(testutil::synth_model("tiny", "Q8_0"));
  ASSERT_TRUE(m2.ok());
  auto foreign = LoraAdapter::Load(**m2, dir_ + "/tiny-lora-s1.gguf");
  ASSERT_TRUE(foreign.ok());
  EXPECT_EQ(s->SetLora(*foreign, 1.0f).code(), Code::kInvalidArgument);
  // Destroying the model first, then the adapter, is safe (the model freed its weights).
  m2->reset();
  foreign->reset();

  // Synth refuses absurd ranks.
  o.rank = 0;
  EXPECT_EQ(synth_lora(o).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace edgellm
