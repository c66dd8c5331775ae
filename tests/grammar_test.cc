// Constrained output against real libllama on the tiny synth fixture (random weights, the
// real Qwen2 vocabulary: the worst case for a model's own JSON habits). Also built with ASan +
// UBSan (grammar_test_asan): every bad grammar and schema below is an error, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

using json = nlohmann::json;

class GrammarTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = testutil::synth_model("tiny", "Q8_0");
    ASSERT_FALSE(path.empty());
    auto m = Model::Load(path);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m.value()).release();
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 1024;
    auto s = Session::Create(*model_, so);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    session_ = std::move(s.value()).release();
  }
  static void TearDownTestSuite() {
    delete session_;
    delete model_;
  }
  static GenerateOptions Opts(float temp, uint32_t seed, int n = 200) {
    GenerateOptions o;
    o.temperature = temp;
    o.seed = seed;
    o.max_tokens = n;
    return o;
  }
  // The error a bad constraint gives, from Generate and from CheckOutputConstraint alike.
  static std::string ErrorOf(const GenerateOptions& o) {
    Status pre = CheckOutputConstraint(*model_, o);
    EXPECT_FALSE(pre.ok());
    EXPECT_EQ(pre.code(), Code::kInvalidArgument) << pre.ToString();
    auto r = session_->Generate("hello", o);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return "";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
    EXPECT_EQ(r.status().message(), pre.message());
    return r.status().message();
  }
  static GenerateOptions WithGrammar(const std::string& g) {
    GenerateOptions o = Opts(0, 1, 8);
    o.grammar = g;
    return o;
  }
  static GenerateOptions WithSchema(const std::string& s) {
    GenerateOptions o = Opts(0, 1, 8);
    o.json_schema = s;
    return o;
  }
  static Model* model_;
  static Session* session_;
};
Model* GrammarTest::model_ = nullptr;
Session* GrammarTest::session_ = nullptr;

TEST_F(GrammarTest, GrammarAllowsOnlyItsStrings) {
  for (float temp : {0.0f, 0.8f, 1.5f}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      GenerateOptions o = Opts(temp, seed, 16);
      o.grammar = R"(root ::= ("yes" | "no" | "可能") "!")";
      auto r = session_->Generate("Answer:", o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r->text == "yes!" || r->text == "no!" || r->text == "可能!") << r->text;
      EXPECT_EQ(r->finish_reason, FinishReason::kStop);
      EXPECT_EQ(r->json_state, JsonState::kNone);  // a grammar, not a schema
      EXPECT_GT(r->stats.grammar_ms, 0);
    }
  }
}

TEST_F(GrammarTest, SchemaOutputParsesAndFollowsTheSchema) {
  const std::string schema = R"({"type":"object","properties":{
      "intent":{"enum":["weather","alarm","music"]},
      "count":{"type":"integer","minimum":1,"maximum":9}},
      "required":["intent","count"],"additionalProperties":false})";
  int complete = 0;
  for (float temp : {0.0f, 0.7f, 1.2f}) {
    for (uint32_t seed : {11u, 12u}) {
      GenerateOptions o = Opts(temp, seed, 120);
      o.json_schema = schema;
      auto r = session_->Generate("JSON:", o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->finish_reason == FinishReason::kLength) {
        EXPECT_EQ(r->json_state, JsonState::kIncomplete);
        EXPECT_TRUE(r->json.empty());
        continue;
      }
      ASSERT_EQ(r->json_state, JsonState::kComplete) << r->text;
      ++complete;
      json j = json::parse(r->json);
      ASSERT_TRUE(j.is_object()) << r->json;
      EXPECT_EQ(j.size(), 2u) << r->json;
      const std::string intent = j.at("intent");
      EXPECT_TRUE(intent == "weather" || intent == "alarm" || intent == "music") << intent;
      const int count = j.at("count");
      EXPECT_GE(count, 1);
      EXPECT_LE(count, 9);
      EXPECT_EQ(json::parse(r->text), j);  // the text is that JSON (whitespace aside)
    }
  }
  EXPECT_GT(complete, 0) << "no output finished within 120 tokens";
}

TEST_F(GrammarTest, WhitespaceFollowsThePolicy) {
  // No free strings: every space or newline in the text is the grammar's whitespace.
  const std::string schema = R"({"type":"object","properties":{
      "intent":{"enum":["weather","alarm"]},"flags":{"type":"array","items":{"type":"boolean"}},
      "count":{"type":"integer"}},"required":["intent","flags","count"]})";
  int free_loose = 0, free_tokens = 0, compact_tokens = 0;
  for (uint32_t seed : {21u, 22u, 23u, 24u}) {
    for (JsonWhitespace ws : {JsonWhitespace::kCompact, JsonWhitespace::kNone,
                              JsonWhitespace::kFree}) {
      GenerateOptions o = Opts(1.2f, seed, 120);
      o.json_schema = schema;
      o.json_whitespace = ws;
      auto r = session_->Generate("JSON:", o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string& t = r->text;
      const std::string name = json_whitespace_name(ws);
      if (ws == JsonWhitespace::kCompact) {
        compact_tokens += r->stats.n_gen;
        EXPECT_EQ(t.find_first_of("\n\t\r"), std::string::npos) << name << ": " << t;
        EXPECT_EQ(t.find("  "), std::string::npos) << name << ": " << t;
      } else if (ws == JsonWhitespace::kNone) {
        EXPECT_EQ(t.find_first_of(" \n\t\r"), std::string::npos) << name << ": " << t;
      } else {
        free_tokens += r->stats.n_gen;
        free_loose += t.find_first_of("\n\t") != std::string::npos || t.find("  ") != t.npos;
      }
      if (r->json_state == JsonState::kComplete) {
        EXPECT_TRUE(json::parse(r->json).is_object()) << r->json;
      }
    }
  }
  // The converter's own rule is kept under kFree: random weights use its room.
  EXPECT_GT(free_loose, 0) << "no free-form output had a newline or a run of spaces";
  EXPECT_GT(free_tokens, compact_tokens);
  JsonWhitespace w;
  EXPECT_TRUE(parse_json_whitespace("none", &w));
  EXPECT_EQ(w, JsonWhitespace::kNone);
  EXPECT_FALSE(parse_json_whitespace("tight", &w));
}

TEST_F(GrammarTest, GreedyWithASchemaIsDeterministic) {
  GenerateOptions o = Opts(0, 1, 60);
  o.json_schema = R"({"type":"array","items":{"type":"boolean"},"minItems":2,"maxItems":4})";
  auto a = session_->Generate("list:", o);
  auto b = session_->Generate("list:", o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->text, b->text);
  ASSERT_EQ(a->json_state, JsonState::kComplete) << a->text;
  json j = json::parse(a->json);
  ASSERT_TRUE(j.is_array());
  EXPECT_GE(j.size(), 2u);
  EXPECT_LE(j.size(), 4u);
  // The check-one-token-first path (the default) gives the greedy draw of the constrained
  // distribution: the same text as masking every token, which a grammar over one string shows.
  GenerateOptions exact = Opts(0, 1, 30);
  exact.grammar = R"(root ::= "[true, false]")";
  auto e = session_->Generate("list:", exact);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->text, "[true, false]");
}

TEST_F(GrammarTest, MaxTokensFirstIsIncompleteNeverHalfAnObject) {
  GenerateOptions o = Opts(0.8f, 5, 3);
  o.json_schema = R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})";
  auto r = session_->Generate("JSON:", o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kLength);
  EXPECT_EQ(r->json_state, JsonState::kIncomplete);
  EXPECT_TRUE(r->json.empty());
  EXPECT_FALSE(r->text.empty());
}

TEST_F(GrammarTest, AStopStringThatCutsTheJsonMakesItInvalid) {
  GenerateOptions o = Opts(0, 1, 40);
  o.json_schema = R"({"const":{"k":"vvv"}})";
  o.stop = {"vv"};
  auto r = session_->Generate("JSON:", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, FinishReason::kStop);
  EXPECT_EQ(r->json_state, JsonState::kInvalid) << r->text;
  EXPECT_TRUE(r->json.empty());
}

TEST_F(GrammarTest, ConversationTurnsFollowTheSchema) {
  ConversationOptions co;
  co.chatml_fallback = true;
  auto c = Conversation::Create(*session_, co);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  GenerateOptions o = Opts(0.9f, 7, 80);
  o.json_schema = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]})";
  for (const char* turn : {"first?", "second?"}) {
    auto r = (*c)->Send(turn, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (r->json_state == JsonState::kComplete) {
      json j = json::parse(r->json);
      EXPECT_TRUE(j.at("ok").is_boolean()) << r->json;
    } else {
      EXPECT_EQ(r->finish_reason, FinishReason::kLength) << r->text;
    }
  }
  EXPECT_EQ((*c)->history().size(), 4u);
}

TEST_F(GrammarTest, BadGrammarsAreErrorsThatNameTheProblem) {
  EXPECT_NE(ErrorOf(WithGrammar("root ::= \"a")).find("does not parse"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= [a-")).find("does not parse"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root := \"a\"")).find("does not parse"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= item")).find("`item`"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("start ::= \"a\"")).find("no `root`"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= \"a\" root")).find("never end"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= x\nx ::= \"(\" x \")\"")).find("never end"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= root \"a\" | \"b\"")).find("left recursion"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("   \n# only a comment\n")).find("empty"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar(std::string("root ::= \"a\"\0", 13))).find("NUL"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= \"a\"{1000000}")).find("does not parse"),
            std::string::npos);
  // llama.cpp's parser would allocate without bound on this one (found by the fuzzer).
  EXPECT_NE(ErrorOf(WithGrammar("root ::= [^-z]{5,3} \"x\"")).find("maximum is below"),
            std::string::npos);
  // Stacked repetitions made matching take exponential time (found by the fuzzer).
  EXPECT_NE(ErrorOf(WithGrammar("root ::= [a-z]+ + \"x\"")).find("stacks repetition"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= \"a\"*?")).find("stacks repetition"), std::string::npos);
  EXPECT_NE(ErrorOf(WithGrammar("root ::= \"a\"{2}*")).find("stacks repetition"),
            std::string::npos);
  GenerateOptions small = WithGrammar("root ::= a b c\na ::= \"a\"\nb ::= \"b\"\nc ::= \"c\"");
  small.grammar_limits.max_rules = 3;
  EXPECT_NE(ErrorOf(small).find("max_rules"), std::string::npos);
  GenerateOptions tiny = WithGrammar("root ::= \"abcdefghijklmnopqrstuvwxyz\"");
  tiny.grammar_limits.max_bytes = 16;
  EXPECT_NE(ErrorOf(tiny).find("max_bytes"), std::string::npos);
  GenerateOptions both = WithGrammar("root ::= \"a\"");
  both.json_schema = "{}";
  EXPECT_NE(ErrorOf(both).find("not both"), std::string::npos);
}

TEST_F(GrammarTest, BadSchemasAreErrorsThatNameTheProblem) {
  EXPECT_NE(ErrorOf(WithSchema("{\"type\": ")).find("not valid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf(WithSchema("[1, 2]")).find("is an object"), std::string::npos);
  EXPECT_NE(ErrorOf(WithSchema(R"({"$ref":"#/$defs/missing"})")).find("cannot be turned"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithSchema(R"({"type":"string","pattern":"^(a$"})")).find("cannot be turned"),
            std::string::npos);
  // A huge bound is no error: the grammar repeats lazily and max_tokens ends the output.
  auto long_string =
      session_->Generate("x", WithSchema(R"({"type":"string","maxLength":100000000})"));
  ASSERT_TRUE(long_string.ok()) << long_string.status().ToString();
  EXPECT_EQ(long_string->json_state, JsonState::kIncomplete);
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 80; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  EXPECT_NE(ErrorOf(WithSchema(deep)).find("max_depth"), std::string::npos);
  auto r = session_->Generate("hello", Opts(0, 1, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.n_gen, 4);
}

// Schemas past the size limits: 30,000 enum values, 1,500 objects (the plain binary only:
// converting them takes minutes under ASan and goes through no code the case above does not).
TEST_F(GrammarTest, SchemasPastTheLimitsAreErrorsThatNameTheLimit) {
  std::string huge = R"({"enum":[)";
  for (int i = 0; i < 30000; ++i) huge += "\"value" + std::to_string(i) + "\",";
  huge += "\"last\"]}";
  EXPECT_NE(ErrorOf(WithSchema(huge)).find("max_bytes"), std::string::npos);
  std::string wide = R"({"type":"object","properties":{)";
  for (int i = 0; i < 1500; ++i) {
    wide += "\"p" + std::to_string(i) + "\":{\"type\":\"object\",\"properties\":{\"x\":" +
            "{\"type\":\"integer\",\"minimum\":" + std::to_string(i) + "}}},";
  }
  wide += R"("z":{"type":"null"}}})";
  EXPECT_NE(ErrorOf(WithSchema(wide)).find("max_rules"), std::string::npos);
  // The session is unharmed by all of the above.
  auto r = session_->Generate("hello", Opts(0, 1, 4));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.n_gen, 4);
}

TEST_F(GrammarTest, AGrammarTheVocabularyCannotContinueIsAnError) {
  // A NUL character: no token of the vocabulary spells it.
  auto r = session_->Generate("x", WithGrammar(R"(root ::= "a" [\x00])"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("allows no token"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace edgellm
