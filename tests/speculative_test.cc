// Speculative decoding (n-gram lookup, grammar jump-forward) against real libllama: the output
// with speculation on is the output with it off. On the committed model (trained: its answers
// copy their prompts) exactly; on the random-weight tiny fixture at least as often as the same
// greedy run with a one-token prefill agrees with a batched one (ggml's batched and one-token
// logits may differ in their last bits: the floor, measured here). Also built with ASan + UBSan
// (speculative_test_asan) for the cases that cut the cache: stops, max_tokens, cancels, bad
// options.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

std::string committed_model() { return std::string(EDGELLM_TEST_SOURCE_DIR) + "/assets/edgellm-tiny-F32.gguf"; }

// The committed model's tasks (docs/training.md), in both languages: extraction and code copy
// their input; math and intent mostly do not.
std::vector<std::string> task_prompts(size_t n) {
  const char* names[] = {"Wang Fang", "Li Lei", "Zhang Wei", "Chen Jing", "Liu Yang"};
  const char* cities[] = {"Chengdu", "Shanghai", "Beijing", "Hangzhou", "Wuhan"};
  const char* days[] = {"Friday", "Monday", "tomorrow", "Sunday"};
  std::vector<std::string> out = {"用一句话介绍端侧大模型。", "Say it in English.",
                                  "意图：明天上海会下雨吗", "87加99等于多少？",
                                  "city: Wang Fang flies to Chengdu on Friday."};
  for (size_t i = 0; out.size() < n; ++i) {
    const std::string name = names[i % 5], city = cities[(i / 5) % 5], day = days[i % 4];
    switch (i % 5) {
      case 0: out.push_back("city: " + name + " flies to " + city + " on " + day + "."); break;
      case 1: out.push_back("name: " + name + " meets us in " + city + " " + day + "."); break;
      case 2: out.push_back("x=" + std::to_string(i % 9 + 1) + "; x=x+" +
                            std::to_string(i % 7 + 2) + "; print(x)"); break;
      case 3: out.push_back(std::to_string(10 + i % 80) + "+" + std::to_string(11 + i % 70) + "="); break;
      default: out.push_back("summary: " + name + " will visit " + city + " on " + day +
                             " and call " + names[(i + 1) % 5] + "."); break;
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

// Every guess a source has is checked (no adaptation): the exactness is asserted over all of
// them, and whether a check pays on this machine (the adaptation's measure) cannot take the
// guesses away from the test.
GenerateOptions fixed(GenerateOptions o) {
  o.speculative.adaptive = false;
  return o;
}

class SpeculativeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(committed_model());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m.value()).release();
    const std::string path = testutil::synth_model("tiny", "Q8_0");
    ASSERT_FALSE(path.empty());
    auto t = Model::Load(path);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tiny_ = std::move(t.value()).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete tiny_;
  }
  static std::unique_ptr<Session> NewSession(int32_t n_ctx = 256, int32_t n_batch = 512,
                                             const Model* model = nullptr) {
    SessionOptions so;
    // One thread: two test processes share two cores under ctest -j2, and ggml's threads spin
    // while they wait for each other (many small decodes ran 100x slower with two).
    so.n_threads = 1;
    so.n_ctx = n_ctx;
    so.n_batch = n_batch;
    auto s = Session::Create(model ? *model : *model_, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }
  static Generation Run(Session& s, const std::string& p, const GenerateOptions& o,
                        const TextSink& sink = {}) {
    auto r = s.Generate(p, o, sink);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r.value()) : Generation{};
  }
  static Model* model_;  // the committed model (trained, 256-token context)
  static Model* tiny_;   // the random-weight tiny fixture (Qwen2's vocabulary)
};
Model* SpeculativeTest::model_ = nullptr;
Model* SpeculativeTest::tiny_ = nullptr;

TEST_F(SpeculativeTest, BadOptionsAreErrorsNamingTheField) {
  auto s = NewSession();
  ASSERT_TRUE(s);
  struct Case {
    int32_t max_draft, ngram_min, ngram_max;
    const char* field;
  } cases[] = {{17, 2, 4, "max_draft"}, {-1, 2, 4, "max_draft"}, {8, 0, 4, "ngram_min"},
               {8, 3, 2, "ngram_max"}, {8, 2, 9, "ngram_max"}};
  for (const Case& c : cases) {
    GenerateOptions o = greedy(4);
    o.speculative.max_draft = c.max_draft;
    o.speculative.ngram_min = c.ngram_min;
    o.speculative.ngram_max = c.ngram_max;
    auto r = s->Generate("hello", o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.field), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(s->Generate("hello", greedy(4)).ok());  // the session still works
}

// Each source alone and both together give the text speculation off gives, token for token,
// on the committed model; its copying tasks keep guesses, so speculation did run.
TEST_F(SpeculativeTest, GreedyOutputEqualsPlainDecodeOnTheCommittedModel) {
  auto s = NewSession();
  ASSERT_TRUE(s);
  const std::vector<std::string> prompts = task_prompts(testutil::kSanitized ? 6 : 50);
  int32_t accepted = 0, drafted = 0, calls = 0, gen = 0;
  for (const std::string& p : prompts) {
    const Generation off = Run(*s, p, spec_off(greedy(64)));
    EXPECT_EQ(off.stats.spec_drafted, 0);
    // One decode per token, but for the last when max_tokens ends it.
    EXPECT_LE(off.stats.decode_calls, off.stats.n_gen) << p;
    EXPECT_GE(off.stats.decode_calls, off.stats.n_gen - 1) << p;
    for (int mode = 0; mode < 3; ++mode) {
      GenerateOptions o = greedy(64);
      o.speculative.ngram = mode != 1;
      o.speculative.jump = mode != 0;
      const Generation on = Run(*s, p, fixed(o));
      EXPECT_EQ(on.text, off.text) << p << " (mode " << mode << ")";
      EXPECT_EQ(on.finish_reason, off.finish_reason) << p;
      EXPECT_EQ(on.stats.n_gen, off.stats.n_gen) << p;
      EXPECT_LE(on.stats.spec_accepted, on.stats.spec_drafted);
      if (mode == 1) {
        EXPECT_EQ(on.stats.spec_drafted, 0) << "jump-forward without a grammar guessed: " << p;
      }
      if (mode == 2) {
        accepted += on.stats.spec_accepted;
        drafted += on.stats.spec_drafted;
        calls += on.stats.decode_calls;
        gen += on.stats.n_gen;
      }
    }
  }
  // Its answers are short: 3 of 78 guesses are kept over the 50 prompts, none in the twin's
  // six (whose kept guesses are checked on the tiny fixture below).
  if (!testutil::kSanitized) {
    EXPECT_GT(accepted, 0);
    EXPECT_LT(calls, gen) << "no decode call took more than one token";
  }
  std::printf("committed model, %zu prompts: %d of %d guesses kept, %d tokens in %d decodes\n",
              prompts.size(), accepted, drafted, gen, calls);
}

// A JSON schema: the keys, quotes and colons the grammar forces are guessed (jump-forward) and
// kept, and the answer is the same JSON.
TEST_F(SpeculativeTest, JumpForwardThroughASchemaKeepsTheSameJson) {
  auto s = NewSession();
  ASSERT_TRUE(s);
  const std::string schema = R"({"type":"object","properties":{
      "city":{"type":"string","maxLength":24},"name":{"type":"string","maxLength":24},
      "day":{"type":"string","maxLength":12},"confirmed":{"type":"boolean"},
      "seats":{"type":"integer","minimum":1,"maximum":9}},
      "required":["city","name","day","confirmed","seats"],"additionalProperties":false})";
  int32_t forced = 0;
  for (const std::string& p : task_prompts(testutil::kSanitized ? 2 : 10)) {
    GenerateOptions o = greedy(96);
    o.json_schema = schema;
    const Generation off = Run(*s, p, spec_off(o));
    o.speculative.ngram = false;
    const Generation jump = Run(*s, p, fixed(o));
    o.speculative.ngram = true;
    const Generation all = Run(*s, p, fixed(o));
    const Generation adaptive = Run(*s, p, o);  // whatever this machine's costs choose
    EXPECT_EQ(adaptive.text, off.text) << p;
    EXPECT_EQ(jump.text, off.text) << p;
    EXPECT_EQ(all.text, off.text) << p;
    EXPECT_EQ(all.json_state, off.json_state) << p;
    EXPECT_GT(jump.stats.spec_forced, 0) << p << ": " << jump.text;
    EXPECT_EQ(jump.stats.spec_forced, jump.stats.spec_accepted) << "jump guesses only";
    EXPECT_LT(jump.stats.decode_calls, off.stats.decode_calls) << p;
    forced += jump.stats.spec_forced;
  }
  std::printf("schema: %d forced tokens taken without a decode of their own\n", forced);
}

// A stop string that straddles tokens inside a kept guess ends the text where plain decode
// ends it; max_tokens ends at exactly max_tokens; the cache then holds what plain decode's
// holds (the next call reuses it and gives the same text).
TEST_F(SpeculativeTest, StopStringsAndMaxTokensInsideAGuess) {
  auto s = NewSession();
  ASSERT_TRUE(s);
  GenerateOptions fixed = greedy(64);
  fixed.speculative.adaptive = false;  // check every guess: stops land inside them
  int checked = 0;
  for (const std::string& p : task_prompts(testutil::kSanitized ? 12 : 20)) {
    const Generation off = Run(*s, p, spec_off(greedy(64)));
    if (off.text.size() < 8) continue;
    const size_t mid = off.text.size() / 2;
    GenerateOptions o = fixed;
    o.stop = {off.text.substr(mid, 3)};
    GenerateOptions o_off = spec_off(greedy(64));
    o_off.stop = o.stop;
    const Generation a = Run(*s, p, o_off), b = Run(*s, p, o);
    EXPECT_EQ(b.text, a.text) << p << " stop '" << o.stop[0] << "'";
    EXPECT_EQ(b.finish_reason, FinishReason::kStop);
    for (int n : {1, 2, 5, 13}) {
      GenerateOptions m = fixed;
      m.max_tokens = n;
      const Generation c = Run(*s, p, m), d = Run(*s, p, spec_off(m));
      EXPECT_EQ(c.text, d.text) << p << " max_tokens " << n;
      EXPECT_EQ(c.stats.n_gen, d.stats.n_gen);
      EXPECT_LE(c.stats.n_gen, n);
    }
    // Reusing the prefix after a speculative generation: the same as a fresh session's.
    GenerateOptions r = fixed;
    r.reuse_prefix = true;
    const Generation first = Run(*s, p, r), again = Run(*s, p, r);
    EXPECT_EQ(again.text, off.text) << p;
    EXPECT_EQ(first.text, off.text) << p;
    ++checked;
  }
  EXPECT_GT(checked, 3);
}

// A conversation of six turns with KV reuse, speculation on and off: the same replies, the
// same reuse; and a context so small that the reply overflows it (the oldest turns dropped).
TEST_F(SpeculativeTest, ConversationWithReuseAndOverflow) {
  for (int32_t n_ctx : {256, 128}) {
    auto s_on = NewSession(n_ctx), s_off = NewSession(n_ctx);
    ASSERT_TRUE(s_on && s_off);
    auto on = Conversation::Create(*s_on), off = Conversation::Create(*s_off);
    ASSERT_TRUE(on.ok() && off.ok());
    const std::vector<std::string> turns = task_prompts(6);
    for (const std::string& t : turns) {
      auto a = (*on)->Send(t, greedy(48)), b = (*off)->Send(t, spec_off(greedy(48)));
      ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status() : a.status()).ToString();
      EXPECT_EQ(a->text, b->text) << "ctx " << n_ctx << ", turn: " << t;
      EXPECT_EQ(a->stats.n_cached, b->stats.n_cached) << t;
      EXPECT_EQ(a->stats.turns_dropped, b->stats.turns_dropped) << t;
    }
  }
}

// A cancel from the sink in the middle of a kept guess: kCancelled, and the session goes on
// to give plain decode's text.
TEST_F(SpeculativeTest, CancelMidGuess) {
  auto s = NewSession(512, 512, tiny_);
  ASSERT_TRUE(s);
  GenerateOptions o = greedy(64, false);
  o.speculative.adaptive = false;
  o.stream_every_tokens = 1;
  const std::string p = "The river north data phone model quiet";
  const Generation off = Run(*s, p, spec_off(greedy(64, false)));
  const Generation on = Run(*s, p, o);
  ASSERT_EQ(on.text, off.text);
  ASSERT_GT(on.stats.spec_accepted, 8) << "no guesses to cancel inside";
  for (int stop_after : {1, 2, 3, 5, 8}) {
    int pieces = 0;
    const Generation g = Run(*s, p, o, [&](std::string_view) { return ++pieces < stop_after; });
    EXPECT_EQ(g.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(off.text.rfind(g.text, 0), 0u) << "not a prefix: " << g.text;
    GenerateOptions r = o;
    r.reuse_prefix = true;
    const Generation again = Run(*s, p, r);
    EXPECT_EQ(again.text, off.text);
    EXPECT_GT(again.stats.n_cached, 0);
  }
}

// Sampling: the same seeds give the same draws with speculation on; the distribution of the
// answer's length matches too (chi-square over the seeds). On the tiny fixture with a schema:
// its keys are guessed (jump-forward) and kept, its values drawn from a flat distribution.
TEST_F(SpeculativeTest, SamplingDrawsTheSameDistribution) {
  auto s = NewSession(512, 512, tiny_);
  ASSERT_TRUE(s);
  const int seeds = testutil::kSanitized ? 20 : 100;
  std::map<int32_t, std::pair<int, int>> counts;  // tokens in the answer: (off, on)
  int same = 0, accepted = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    GenerateOptions o = greedy(48, false);
    o.temperature = 1.0f;
    o.seed = static_cast<uint32_t>(seed);
    o.json_schema = R"({"type":"object","properties":{"title":{"type":"string","maxLength":6},
        "label":{"type":"string","maxLength":6},"checked":{"type":"boolean"}},
        "required":["title","label","checked"],"additionalProperties":false})";
    o.speculative.adaptive = false;
    const std::string p = "The river north data phone model";
    const Generation off = Run(*s, p, spec_off(o)), on = Run(*s, p, o);
    same += on.text == off.text;
    accepted += on.stats.spec_accepted;
    counts[off.stats.n_gen].first++;
    counts[on.stats.n_gen].second++;
  }
  double chi2 = 0;
  int bins = 0;
  for (const auto& [k, c] : counts) {
    if (c.first + c.second < 5) continue;
    chi2 += std::pow(c.first - c.second, 2) / (c.first + c.second);
    ++bins;
  }
  std::printf("sampling: %d of %d seeds identical, %d guesses kept, chi-square %.2f over %d "
              "bins\n", same, seeds, accepted, chi2, bins);
  EXPECT_GE(same, seeds * 9 / 10);
  EXPECT_GT(accepted, 0) << "no guess was kept: the test checked nothing";
  if (!testutil::kSanitized) {
    EXPECT_GE(bins, 3) << "the answers' lengths hardly vary";
  }
  // The 0.001 quantile of chi-square with `bins` degrees of freedom is below 3.1 * bins + 11.
  EXPECT_LT(chi2, 3.1 * bins + 11);
}

// Required tool calls (the tiny fixture's Qwen2.5 template, the tool's schema as a grammar):
// the same calls and text with speculation on; jump-forward takes the call's forced JSON.
TEST_F(SpeculativeTest, ToolCallsAreTheSame) {
  auto s = NewSession(1024, 512, tiny_);
  ASSERT_TRUE(s);
  ToolSpec tool;
  tool.name = "book_trip";
  tool.description = "Book a trip";
  tool.parameters = R"({"type":"object","properties":{"city":{"type":"string","maxLength":12},
      "day":{"type":"string","maxLength":10},"seats":{"type":"integer","minimum":1,"maximum":9}},
      "required":["city","day","seats"],"additionalProperties":false})";
  int32_t forced = 0, calls = 0;
  for (const std::string& p : task_prompts(testutil::kSanitized ? 1 : 4)) {
    GenerateOptions o = greedy(64);
    o.tools = {tool};
    o.tool_choice = "required";
    const Generation off = Run(*s, p, spec_off(o)), on = Run(*s, p, fixed(o));
    EXPECT_EQ(on.text, off.text) << p;
    EXPECT_EQ(on.finish_reason, off.finish_reason) << p;
    ASSERT_EQ(on.tool_calls.size(), off.tool_calls.size()) << p;
    for (size_t i = 0; i < on.tool_calls.size(); ++i) {
      EXPECT_EQ(on.tool_calls[i].name, off.tool_calls[i].name) << p;
      EXPECT_EQ(on.tool_calls[i].arguments, off.tool_calls[i].arguments) << p;
    }
    forced += on.stats.spec_forced;
    calls += static_cast<int32_t>(on.tool_calls.size());
  }
  EXPECT_GT(calls, 0);
  EXPECT_GT(forced, 0) << "jump-forward took nothing from the tool call's grammar";
  std::printf("tool calls: %d calls, %d forced tokens\n", calls, forced);
}

// Random-weight fixtures with two vocabularies (the tiny Qwen2 one; SmolVLM-256M's llama text
// model with SmolLM's), raw completion: speculation on agrees with off at least as often as a
// one-token prefill agrees with a batched one.
TEST_F(SpeculativeTest, RandomFixturesAgreeAtLeastAsOftenAsBatchedDecode) {
  // The multimodal tests' fixture pair (its text model alone here).
  const std::string smol_path = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  ASSERT_FALSE(smol_path.empty());
  auto smol = Model::Load(smol_path);
  ASSERT_TRUE(smol.ok()) << smol.status().ToString();
  struct Fixture {
    const char* name;
    const Model* model;
    int tokens;
  } fixtures[] = {{"tiny", tiny_, 40}, {"smolvlm-256m", smol->get(), 16}};
  const char* words[] = {"The", "river", "north", "data", "phone", "model", "quiet",
                         "城市", "下雨", "code", "print", "value"};
  const int n = testutil::kSanitized ? 4 : 50;
  for (const Fixture& f : fixtures) {
    auto batched = NewSession(512, 512, f.model), single = NewSession(512, 1, f.model);
    ASSERT_TRUE(batched && single);
    int floor_same = 0, spec_same = 0, accepted = 0;
    for (int i = 0; i < n; ++i) {
      std::string p;
      for (int w = 0; w < 6 + i % 7; ++w) p += std::string(words[(i * 7 + w * 3) % 12]) + " ";
      const Generation off = Run(*batched, p, spec_off(greedy(f.tokens, false)));
      floor_same += Run(*single, p, spec_off(greedy(f.tokens, false))).text == off.text;
      const Generation on = Run(*batched, p, fixed(greedy(f.tokens, false)));
      spec_same += on.text == off.text;
      accepted += on.stats.spec_accepted;
    }
    std::printf("%s fixture, %d prompts: speculation agrees on %d, one-token prefill on %d; "
                "%d guesses kept\n", f.name, n, spec_same, floor_same, accepted);
    EXPECT_GE(spec_same, floor_same) << f.name;
    if (std::string(f.name) == "tiny") {
      EXPECT_GT(accepted, 0) << f.name;
    }
  }
}

}  // namespace
}  // namespace edgellm
