// Speculative decoding with a draft model (SessionOptions::draft_model) against real libllama:
// the output with the draft's guesses is the output without them. The committed model (F32)
// with its own Q8_0 quantization as the draft: the same tokenizer, cheaper decodes, guesses that
// mostly agree, exactly as a Qwen2.5-0.5B drafts for a 1.5B. The random-weight tiny fixture with
// a Q4_0 copy as the draft for sampling and cancels. A draft with another vocabulary is refused
// by the session, the planner and the CLI; the planner counts the draft's weights and context.
// Also built with ASan + UBSan (speculative_draft_test_asan), fewer prompts and seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include <nlohmann/json.hpp>
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

std::string committed_model() {
  return std::string(EDGELLM_TEST_SOURCE_DIR) + "/assets/edgellm-tiny-F32.gguf";
}

std::vector<std::string> task_prompts(size_t n) {
  const char* names[] = {"Wang Fang", "Li Lei", "Zhang Wei", "Chen Jing", "Liu Yang"};
  const char* cities[] = {"Chengdu", "Shanghai", "Beijing", "Hangzhou", "Wuhan"};
  std::vector<std::string> out = {"用一句话介绍端侧大模型。", "87加99等于多少？"};
  for (size_t i = 0; out.size() < n; ++i) {
    const std::string name = names[i % 5], city = cities[(i / 5) % 5];
    switch (i % 4) {
      case 0: out.push_back("city: " + name + " flies to " + city + " on Friday."); break;
      case 1: out.push_back("x=" + std::to_string(i % 9 + 1) + "; x=x*" +
                            std::to_string(i % 5 + 2) + "; print(x)"); break;
      case 2: out.push_back(std::to_string(10 + i % 80) + "+" + std::to_string(11 + i % 70) + "="); break;
      default: out.push_back("summary: " + name + " will visit " + city + "."); break;
    }
  }
  return out;
}

GenerateOptions greedy(int n, bool chat = true) {
  GenerateOptions o;
  o.temperature = 0;
  o.max_tokens = n;
  o.chat = chat;
  return o;
}

GenerateOptions spec_off(GenerateOptions o) {
  o.speculative.max_draft = 0;
  return o;
}

// The draft model's guesses on every step (adaptive off: the adaptation would rightly stop
// asking a draft that costs about what the target costs, as these small pairs do) and without
// its confidence cut (random weights are never confident).
GenerateOptions draft_only(GenerateOptions o) {
  o.speculative.ngram = o.speculative.jump = false;
  o.speculative.adaptive = false;
  o.speculative.draft_p_min = 0;
  return o;
}

GenerateOptions every_source(GenerateOptions o) {
  o.speculative.adaptive = false;
  o.speculative.draft_p_min = 0;
  return o;
}

std::unique_ptr<Model> load(const std::string& path) {
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

class SpeculativeDraftTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = testutil::scratch_dir("speculative_draft");
    draft_path_ = dir + "/edgellm-tiny-Q8_0.gguf";
    QuantizeOptions q;
    q.input = committed_model();
    q.output = draft_path_;
    q.type = "Q8_0";
    q.n_threads = 1;
    ASSERT_TRUE(quantize_model(q).ok());
    tiny_path_ = testutil::synth_model("tiny", "Q8_0");
    ASSERT_FALSE(tiny_path_.empty());
    q.input = tiny_path_;
    q.output = dir + "/tiny-Q4_0.gguf";
    q.type = "Q4_0";
    q.allow_requantize = true;
    ASSERT_TRUE(quantize_model(q).ok());
    model_ = load(committed_model()).release();
    draft_ = load(draft_path_).release();
    tiny_ = load(tiny_path_).release();
    tiny_draft_ = load(q.output).release();
    ASSERT_TRUE(model_ && draft_ && tiny_ && tiny_draft_);
  }
  static void TearDownTestSuite() {
    for (Model* m : {model_, draft_, tiny_, tiny_draft_}) delete m;
  }
  static std::unique_ptr<Session> NewSession(const Model& model, const Model* draft,
                                             int32_t n_ctx = 256) {
    SessionOptions so;
    so.n_threads = 1;  // two ctest processes share two cores
    so.n_ctx = n_ctx;
    so.draft_model = draft;
    auto s = Session::Create(model, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }
  static Generation Run(Session& s, const std::string& p, const GenerateOptions& o,
                        const TextSink& sink = {}) {
    auto r = s.Generate(p, o, sink);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r.value()) : Generation{};
  }
  static std::string draft_path_, tiny_path_;
  static Model *model_, *draft_, *tiny_, *tiny_draft_;
};
std::string SpeculativeDraftTest::draft_path_, SpeculativeDraftTest::tiny_path_;
Model *SpeculativeDraftTest::model_ = nullptr, *SpeculativeDraftTest::draft_ = nullptr,
      *SpeculativeDraftTest::tiny_ = nullptr, *SpeculativeDraftTest::tiny_draft_ = nullptr;

// Another tokenizer (the committed model's own against Qwen2's): refused before anything runs,
// by the session and by the planner, with a message that names the difference.
TEST_F(SpeculativeDraftTest, ADraftWithAnotherVocabularyIsRefused) {
  for (auto [target, draft] : {std::pair{model_, tiny_}, std::pair{tiny_, model_}}) {
    SessionOptions so;
    so.n_ctx = 256;
    so.n_threads = 1;
    so.draft_model = draft;
    auto s = Session::Create(*target, so);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("vocabulary"), std::string::npos)
        << s.status().message();
    EXPECT_NE(s.status().message().find("same tokenizer"), std::string::npos);
  }
  PlanOptions po;
  po.n_ctx = 256;
  po.draft_path = tiny_path_;
  auto plan = plan_memory(committed_model(), po);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Code::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("vocabulary"), std::string::npos);
  GenerateOptions bad = greedy(4);
  bad.speculative.draft_p_min = 1.5f;
  auto s = NewSession(*model_, draft_);
  ASSERT_TRUE(s);
  auto r = s->Generate("hi", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("draft_p_min"), std::string::npos);
}

// The draft model alone, and with n-gram lookup and jump-forward: the text speculation off
// gives, token for token; the draft's guesses were checked and kept.
TEST_F(SpeculativeDraftTest, GreedyOutputEqualsPlainDecode) {
  auto s = NewSession(*model_, draft_);
  ASSERT_TRUE(s);
  int32_t drafted = 0, accepted = 0, calls = 0, gen = 0;
  for (const std::string& p : task_prompts(testutil::kSanitized ? 6 : 50)) {
    const Generation off = Run(*s, p, spec_off(greedy(64)));
    const Generation d = Run(*s, p, draft_only(greedy(64)));
    const Generation all = Run(*s, p, every_source(greedy(64)));
    const Generation adaptive = Run(*s, p, greedy(64));
    EXPECT_EQ(adaptive.text, off.text) << p;
    EXPECT_EQ(d.text, off.text) << p;
    EXPECT_EQ(all.text, off.text) << p;
    EXPECT_EQ(d.finish_reason, off.finish_reason) << p;
    EXPECT_EQ(d.stats.spec_draft_drafted, d.stats.spec_drafted) << "the draft model's only";
    EXPECT_LE(all.stats.spec_draft_drafted, all.stats.spec_drafted);
    drafted += d.stats.spec_draft_drafted;
    accepted += d.stats.spec_draft_accepted;
    calls += d.stats.decode_calls;
    gen += d.stats.n_gen;
    if (d.stats.spec_draft_drafted > 0) {
      EXPECT_GT(d.stats.spec_draft_ms, 0) << p;
    }
  }
  std::printf("draft model: %d of %d guesses kept; %d tokens in %d decodes\n", accepted, drafted,
              gen, calls);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, drafted / 2) << "a Q8_0 copy should agree with its F32 model";
  EXPECT_LT(calls, gen);
}

// A schema: the grammar's forced text first, then the draft model's guesses after it.
TEST_F(SpeculativeDraftTest, SchemaWithJumpForwardAndTheDraft) {
  auto s = NewSession(*model_, draft_);
  ASSERT_TRUE(s);
  GenerateOptions o = greedy(96);
  o.json_schema = R"({"type":"object","properties":{"city":{"type":"string","maxLength":24},
      "name":{"type":"string","maxLength":24},"seats":{"type":"integer","minimum":1,"maximum":9}},
      "required":["city","name","seats"],"additionalProperties":false})";
  int32_t forced = 0, from_draft = 0;
  for (const std::string& p : task_prompts(testutil::kSanitized ? 2 : 8)) {
    const Generation off = Run(*s, p, spec_off(o));
    GenerateOptions j = every_source(o);
    j.speculative.ngram = false;
    const Generation on = Run(*s, p, j);
    EXPECT_EQ(on.text, off.text) << p;
    EXPECT_EQ(on.json_state, off.json_state) << p;
    forced += on.stats.spec_forced;
    from_draft += on.stats.spec_draft_accepted;
  }
  EXPECT_GT(forced, 0);
  EXPECT_GT(from_draft, 0);
}

// Six turns with KV reuse, in a context that holds them and in one they overflow: the same
// replies and the same reuse as without speculation (the draft's cache follows the target's
// through every cut and dropped turn).
TEST_F(SpeculativeDraftTest, ConversationWithReuseAndOverflow) {
  for (int32_t n_ctx : {256, 128}) {
    auto s_on = NewSession(*model_, draft_, n_ctx), s_off = NewSession(*model_, nullptr, n_ctx);
    ASSERT_TRUE(s_on && s_off);
    auto on = Conversation::Create(*s_on), off = Conversation::Create(*s_off);
    ASSERT_TRUE(on.ok() && off.ok());
    int32_t accepted = 0;
    for (const std::string& t : task_prompts(6)) {
      auto a = (*on)->Send(t, draft_only(greedy(48))), b = (*off)->Send(t, spec_off(greedy(48)));
      ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status() : a.status()).ToString();
      EXPECT_EQ(a->text, b->text) << "ctx " << n_ctx << ", turn: " << t;
      EXPECT_EQ(a->stats.n_cached, b->stats.n_cached) << t;
      EXPECT_EQ(a->stats.turns_dropped, b->stats.turns_dropped) << t;
      accepted += a->stats.spec_draft_accepted;
    }
    EXPECT_GT(accepted, 0) << "ctx " << n_ctx;
  }
}

// The random-weight pair: greedy agrees at least as often as a one-token prefill agrees with a
// batched one (the floor); sampling with the same seeds gives the same draws.
TEST_F(SpeculativeDraftTest, RandomFixtureGreedyAndSampling) {
  auto s = NewSession(*tiny_, tiny_draft_, 512);
  SessionOptions one_token;  // prefill one token per decode: the floor's reference
  one_token.n_threads = 1;
  one_token.n_ctx = 512;
  one_token.n_batch = 1;
  auto single = Session::Create(*tiny_, one_token);
  ASSERT_TRUE(s && single.ok());
  const char* words[] = {"The", "river", "north", "data", "phone", "model", "quiet", "城市"};
  const int n = testutil::kSanitized ? 4 : 20;
  int floor_same = 0, spec_same = 0, accepted = 0;
  for (int i = 0; i < n; ++i) {
    std::string p;
    for (int w = 0; w < 5 + i % 6; ++w) p += std::string(words[(i * 5 + w * 3) % 8]) + " ";
    GenerateOptions o = greedy(32, false);
    const Generation off = Run(*s, p, spec_off(o));
    floor_same += Run(**single, p, spec_off(o)).text == off.text;
    const Generation on = Run(*s, p, draft_only(o));
    spec_same += on.text == off.text;
    accepted += on.stats.spec_draft_accepted;
  }
  int same_draws = 0;
  const int seeds = testutil::kSanitized ? 6 : 20;
  for (int seed = 0; seed < seeds; ++seed) {
    GenerateOptions o = greedy(32, false);
    o.temperature = 1.0f;
    o.seed = static_cast<uint32_t>(seed);
    const std::string p = "The river north data phone model";
    same_draws += Run(*s, p, draft_only(o)).text == Run(*s, p, spec_off(o)).text;
  }
  std::printf("tiny pair: greedy agrees on %d of %d (floor %d), %d draft guesses kept; "
              "sampling: %d of %d seeds identical\n", spec_same, n, floor_same, accepted,
              same_draws, seeds);
  EXPECT_GE(spec_same, floor_same - 1);
  EXPECT_GT(accepted, 0);
  EXPECT_GE(same_draws, seeds * 9 / 10);
}

// A cancel from the sink while the draft's guesses are being kept: kCancelled, a prefix of the
// full text; the session and its draft go on (a reused prefix, then a released KV cache).
TEST_F(SpeculativeDraftTest, CancelAndReleaseKv) {
  auto s = NewSession(*tiny_, tiny_draft_, 512);
  ASSERT_TRUE(s);
  GenerateOptions o = draft_only(greedy(48, false));
  o.stream_every_tokens = 1;
  const std::string p = "The river north data phone model quiet";
  const Generation off = Run(*s, p, spec_off(greedy(48, false)));
  const Generation on = Run(*s, p, o);
  ASSERT_EQ(on.text, off.text);
  ASSERT_GT(on.stats.spec_draft_accepted, 4) << "no guesses to cancel inside";
  for (int stop_after : {1, 2, 4, 7}) {
    int pieces = 0;
    const Generation g = Run(*s, p, o, [&](std::string_view) { return ++pieces < stop_after; });
    EXPECT_EQ(g.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(off.text.rfind(g.text, 0), 0u) << "not a prefix: " << g.text;
    GenerateOptions r = o;
    r.reuse_prefix = true;
    EXPECT_EQ(Run(*s, p, r).text, off.text);
  }
  s->ReleaseKv();
  EXPECT_EQ(Run(*s, p, o).text, off.text);
}

// The planner counts the draft: its weights and its own context, in the total and the verdict;
// a budget that holds the model alone but not with the draft says so.
TEST_F(SpeculativeDraftTest, PlannerCountsTheDraftModel) {
  PlanOptions po;
  po.n_ctx = 256;
  auto alone = plan_memory(committed_model(), po);
  po.draft_path = draft_path_;
  auto with = plan_memory(committed_model(), po);
  ASSERT_TRUE(alone.ok() && with.ok()) << (alone.ok() ? with.status() : alone.status()).ToString();
  EXPECT_EQ(alone->draft_bytes, 0u);
  EXPECT_GT(with->draft_bytes, draft_->info().weights_bytes);
  EXPECT_EQ(with->total_bytes, alone->total_bytes + with->draft_bytes);
  po.ram_bytes = static_cast<uint64_t>((alone->total_bytes + with->draft_bytes / 2) / 0.4);
  auto tight = plan_memory(committed_model(), po);
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->fits);
  EXPECT_NE(tight->advice.find("draft"), std::string::npos) << tight->advice;
  po.draft_path.clear();
  auto tight_alone = plan_memory(committed_model(), po);
  ASSERT_TRUE(tight_alone.ok());
  EXPECT_TRUE(tight_alone->fits);
}

// The CLI: --spec draft:FILE runs and reports the draft's counts; another vocabulary and a
// malformed source are errors that say what to do.
TEST_F(SpeculativeDraftTest, CliSpecDraft) {
  const testutil::CliRun ok = testutil::run_cli(
      "run -m " + committed_model() + " --chat -p '用一句话介绍端侧大模型。' "
      "-n 32 --temp 0 --threads 1 --spec draft:" + draft_path_ + " --spec-fixed --json -q");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  const nlohmann::json j = nlohmann::json::parse(ok.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << ok.out;
  const nlohmann::json& st = j.contains("stats") ? j["stats"] : j;
  EXPECT_GT(st.value("spec_draft_drafted", 0), 0) << ok.out;
  const testutil::CliRun bad = testutil::run_cli("run -m " + committed_model() +
                                                 " -p hi -n 4 --spec draft:" + tiny_path_ + " -q");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("vocabulary"), std::string::npos) << bad.err;
  const testutil::CliRun malformed =
      testutil::run_cli("run -m " + committed_model() + " -p hi -n 4 --spec draft: -q");
  EXPECT_NE(malformed.rc, 0);
  EXPECT_NE(malformed.err.find("draft:FILE"), std::string::npos) << malformed.err;
}

}  // namespace
}  // namespace edgellm
