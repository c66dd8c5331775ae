// Jump-forward with jump_commit (the grammar's forced text taken unchecked, in the tokenizer's
// split) and the session's decode cost model, against real libllama: the committed model and
// the random-weight tiny fixture. Unchecked text is not exact by design (docs/speculative.md),
// so these tests assert what it promises instead: the answer is the schema's JSON, the forced
// text costs fewer decodes, max_tokens and stops inside the unchecked run end where they
// should, and the cache left behind is the one a later call can reuse. Also built with ASan +
// UBSan (speculative_jump_test_asan).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

const char* kSchema = R"({"type":"object","properties":{
    "city":{"type":"string","maxLength":16},"name":{"type":"string","maxLength":16},
    "day":{"type":"string","maxLength":10},"confirmed":{"type":"boolean"},
    "seats":{"type":"integer","minimum":1,"maximum":9}},
    "required":["city","name","day","confirmed","seats"],"additionalProperties":false})";

const char* kPrompts[] = {"city: Wang Fang flies to Chengdu on Friday.",
                          "name: Li Lei meets us in Shanghai tomorrow.",
                          "summary: Zhang Wei will visit Beijing on Sunday and call Chen Jing.",
                          "Book two seats to Wuhan for Liu Yang on Monday."};

GenerateOptions schema_greedy(int n) {
  GenerateOptions o;
  o.temperature = 0;
  o.max_tokens = n;
  o.chat = true;
  o.json_schema = kSchema;
  o.speculative.ngram = false;
  return o;
}

std::unique_ptr<Session> session(const Model& m, int32_t n_ctx) {
  SessionOptions so;
  so.n_threads = 1;  // two test processes share two cores under ctest -j2
  so.n_ctx = n_ctx;
  auto s = Session::Create(m, so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s.value()) : nullptr;
}

Generation run(Session& s, const std::string& p, const GenerateOptions& o) {
  auto r = s.Generate(p, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r.value()) : Generation{};
}

std::unique_ptr<Model> load(const std::string& path) {
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m.value()) : nullptr;
}

std::string committed_path() {
  return std::string(EDGELLM_TEST_SOURCE_DIR) + "/assets/edgellm-tiny-F32.gguf";
}

// On both models: with jump_commit the answer is JSON of the schema (every key, the types),
// the forced tokens are counted, and it takes fewer decodes than the checked jump-forward and
// than no speculation. On the trained model the text also matches the exact decode's where the
// model spells the forced text the tokenizer's way (counted, printed: not promised).
TEST(SpeculativeJump, CommitGivesTheSchemasJsonInFewerDecodes) {
  const std::string tiny = testutil::synth_model("tiny", "Q8_0");
  ASSERT_FALSE(tiny.empty());
  for (const std::string& path : {committed_path(), tiny}) {
    auto m = load(path);
    ASSERT_TRUE(m);
    auto s = session(*m, 256);
    ASSERT_TRUE(s);
    int same = 0, n = 0, commit_calls = 0, jump_calls = 0, off_calls = 0;
    for (const char* p : kPrompts) {
      if (testutil::kSanitized && n == 2) break;
      GenerateOptions off = schema_greedy(96), jump = off, commit = off;
      off.speculative.max_draft = 0;
      commit.speculative.jump_commit = true;
      const Generation g_off = run(*s, p, off), g_jump = run(*s, p, jump),
                       g_commit = run(*s, p, commit);
      ++n;
      same += g_commit.text == g_off.text;
      EXPECT_EQ(g_jump.text, g_off.text) << p;  // the checked jump-forward stays exact
      if (g_off.json_state != JsonState::kComplete) continue;  // 96 tokens were not enough
      ASSERT_EQ(g_commit.json_state, JsonState::kComplete) << p << ": " << g_commit.text;
      const auto j = nlohmann::json::parse(g_commit.text, nullptr, false);
      ASSERT_TRUE(j.is_object()) << g_commit.text;
      for (const char* key : {"city", "name", "day", "confirmed", "seats"}) {
        EXPECT_TRUE(j.contains(key)) << key << " missing: " << g_commit.text;
      }
      EXPECT_TRUE(j["confirmed"].is_boolean()) << g_commit.text;
      EXPECT_TRUE(j["seats"].is_number_integer()) << g_commit.text;
      EXPECT_GT(g_commit.stats.spec_forced, 0) << p;
      EXPECT_LE(g_commit.stats.spec_accepted, g_commit.stats.spec_drafted);
      commit_calls += g_commit.stats.decode_calls;
      jump_calls += g_jump.stats.decode_calls;
      off_calls += g_off.stats.decode_calls;
    }
    EXPECT_GT(off_calls, 0) << path << ": no answer completed within 96 tokens";
    EXPECT_LT(commit_calls, off_calls) << path;
    EXPECT_LE(commit_calls, jump_calls) << path;
    std::printf("%s: %d prompts, commit's text = exact's on %d; decodes off %d, jump %d, "
                "commit %d\n", path.c_str(), n, same, off_calls, jump_calls, commit_calls);
  }
}

// max_tokens that falls inside an unchecked run ends the answer at exactly max_tokens, and a
// stop string inside it ends the text before the string; the session's cache then holds what
// it generated, so a plain call after it gives a fresh session's text.
TEST(SpeculativeJump, MaxTokensAndStopsInsideTheUncheckedText) {
  auto m = load(committed_path());
  ASSERT_TRUE(m);
  auto s = session(*m, 256), fresh = session(*m, 256);
  ASSERT_TRUE(s && fresh);
  GenerateOptions plain;
  plain.temperature = 0;
  plain.max_tokens = 24;
  plain.chat = true;
  const std::string after = "city: Chen Jing flies to Hangzhou on Monday.";
  const std::string expected = run(*fresh, after, plain).text;
  for (int max_tokens : {1, 2, 3, 5, 8}) {
    GenerateOptions o = schema_greedy(max_tokens);
    o.speculative.jump_commit = true;
    const Generation g = run(*s, kPrompts[max_tokens % 4], o);
    EXPECT_EQ(g.stats.n_gen, max_tokens);
    EXPECT_EQ(g.finish_reason, FinishReason::kLength);
    EXPECT_EQ(g.json_state, JsonState::kIncomplete);
    EXPECT_EQ(run(*s, after, plain).text, expected) << "after max_tokens " << max_tokens;
  }
  GenerateOptions o = schema_greedy(64);
  o.speculative.jump_commit = true;
  o.stop = {"\"name\""};  // the second key: inside forced text
  const Generation g = run(*s, kPrompts[0], o);
  EXPECT_EQ(g.finish_reason, FinishReason::kStop);
  EXPECT_EQ(g.text.find("\"name\""), std::string::npos) << g.text;
  EXPECT_EQ(g.text.rfind("{", 0), 0u) << g.text;
  EXPECT_EQ(run(*s, after, plain).text, expected) << "after a stop";
}

}  // namespace
}  // namespace edgellm
