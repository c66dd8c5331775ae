// Tool calls and reasoning against real libllama, through llama.cpp common's chat library, on
// tiny synth models stamped with real templates (Qwen2.5-Instruct's <tool_call> format,
// DeepSeek-R1-Distill's <think>). Also built with ASan + UBSan (tools_test_asan): bad tools,
// tool choices and tool turns are errors, never a crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

using json = nlohmann::json;

// A tiny synth with llama.cpp's models/templates/`name`.
std::string templated(const std::string& name) {
  const std::string path = testutil::fixture_dir() + "/tiny-Q8_0-" + name + ".gguf";
  if (std::filesystem::exists(path)) return path;
  SynthOptions o;
  o.preset = "tiny";
  o.type = "Q8_0";
  o.output = path;
  o.vocab_path = testutil::vocab_path();
  o.chat_template_file =
      std::string(EDGELLM_TEST_SOURCE_DIR) + "/third_party/llama.cpp/models/templates/" + name;
  Status st = synth_model(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return path;
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
};
Loaded load(const std::string& path) {
  Loaded l;
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return l;
  l.model = std::move(m.value());
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = 1024;
  auto s = Session::Create(*l.model, so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) l.session = std::move(s.value());
  return l;
}

ToolSpec weather_tool() {
  ToolSpec t;
  t.name = "get_weather";
  t.description = "Weather forecast for a city";
  t.parameters = R"({"type":"object","properties":{"city":{"type":"string","maxLength":10},
      "days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],
      "additionalProperties":false})";
  return t;
}

TEST(ToolsTest, RequiredAndNamedCallsFollowTheToolSchema) {
  Loaded l = load(templated("Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_TRUE(l.session);
  ToolSpec other;
  other.name = "set_alarm";
  other.parameters = R"({"type":"object","properties":{"time":{"enum":["07:00","08:00"]}},
      "required":["time"]})";
  for (const char* choice : {"required", "get_weather", "set_alarm"}) {
    for (uint32_t seed : {1u, 2u}) {
      GenerateOptions o;
      o.chat = true;
      o.tools = {weather_tool(), other};
      o.tool_choice = choice;
      o.seed = seed;
      o.max_tokens = 160;
      std::string streamed;
      auto r = l.session->Generate("上海明天天气怎么样？", o, [&](std::string_view p) {
        streamed += p;
        return true;
      });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->finish_reason, FinishReason::kToolCalls) << choice << " " << r->text;
      ASSERT_EQ(r->tool_calls.size(), 1u);
      const ToolCall& c = r->tool_calls[0];
      EXPECT_EQ(streamed, r->text);  // the tool-call markup is not part of the answer
      EXPECT_FALSE(c.id.empty());
      json args = json::parse(c.arguments);
      if (std::string(choice) != "required") {
        EXPECT_EQ(c.name, choice);
      }
      if (c.name == "get_weather") {
        EXPECT_EQ(args.size(), 2u) << c.arguments;
        EXPECT_LE(args.at("city").get<std::string>().size(), 40u);
        EXPECT_GE(args.at("days").get<int>(), 1);
        EXPECT_LE(args.at("days").get<int>(), 7);
      } else {
        ASSERT_EQ(c.name, "set_alarm");
        const std::string t = args.at("time");
        EXPECT_TRUE(t == "07:00" || t == "08:00") << t;
      }
    }
  }
}

TEST(ToolsTest, AToolResultInTheHistoryIsAnswered) {
  Loaded l = load(templated("Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_TRUE(l.session);
  GenerateOptions o;
  o.chat = true;
  o.tools = {weather_tool()};
  o.seed = 3;
  o.max_tokens = 8;
  ChatMessage call{"assistant", ""};
  call.tool_calls = {{"call_1", "get_weather", R"({"city":"上海","days":1})"}};
  ChatMessage result{"tool", R"({"temp_c": 21})"};
  result.tool_call_id = "call_1";
  result.name = "get_weather";
  o.history = {{"user", "上海明天天气怎么样？"}, call, result};
  auto r = l.session->Generate("", o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->finish_reason, FinishReason::kToolCalls);
  EXPECT_GT(r->stats.n_prompt, 40);  // the call and its result were rendered into the prompt
}

TEST(ToolsTest, BadToolsAndChoicesAreErrors) {
  Loaded l = load(templated("Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_TRUE(l.session);
  auto fails = [&](GenerateOptions o, const char* want) {
    auto r = l.session->Generate("hi", o);
    ASSERT_FALSE(r.ok()) << want;
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
  };
  GenerateOptions o;
  o.chat = true;
  o.max_tokens = 4;
  o.tools = {weather_tool()};
  GenerateOptions no_chat = o;
  no_chat.chat = false;
  fails(no_chat, "chat");
  GenerateOptions named = o;
  named.tool_choice = "missing_tool";
  fails(named, "not one of the tools");
  GenerateOptions both = o;
  both.json_schema = "{}";
  fails(both, "cannot be combined");
  GenerateOptions unnamed = o;
  unnamed.tools[0].name.clear();
  fails(unnamed, "no name");
  GenerateOptions bad_schema = o;
  bad_schema.tools[0].parameters = R"({"type":"object","properties":{"x":{"$ref":"#/nope"}}})";
  bad_schema.tool_choice = "required";
  auto r = l.session->Generate("hi", bad_schema);
  EXPECT_FALSE(r.ok());
  GenerateOptions not_json = o;
  not_json.tools[0].parameters = "{not json";
  EXPECT_FALSE(l.session->Generate("hi", not_json).ok());
  // Still usable.
  GenerateOptions plain;
  plain.max_tokens = 3;
  plain.ignore_eos = true;
  auto ok = l.session->Generate("hi", plain);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->stats.n_gen, 3);
}

TEST(ToolsTest, ATemplateWithoutAToolFormatGetsTheGenericOneAndSaysSo) {
  // The tiny fixture's template (the Qwen2 vocabulary file's) knows no tools.
  Loaded l = load(testutil::synth_model("tiny", "Q8_0"));
  ASSERT_TRUE(l.session);
  std::mutex mu;
  std::vector<std::string> warnings;
  SetLogSink(
      [&](LogLevel level, std::string_view, std::string_view line) {
        std::lock_guard<std::mutex> lock(mu);
        if (level == LogLevel::kWarn) warnings.emplace_back(line);
      },
      LogLevel::kWarn);
  GenerateOptions o;
  o.chat = true;
  o.tools = {weather_tool()};
  o.tool_choice = "required";
  o.seed = 1;
  o.max_tokens = 150;
  auto r = l.session->Generate("weather in Paris?", o);
  SetLogSink(nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->finish_reason, FinishReason::kToolCalls) << r->text;
  ASSERT_EQ(r->tool_calls.size(), 1u);
  EXPECT_EQ(r->tool_calls[0].name, "get_weather");
  json args = json::parse(r->tool_calls[0].arguments);
  EXPECT_GE(args.at("days").get<int>(), 1);
  bool said = false;
  for (const std::string& w : warnings)
    said |= w.find("generic JSON tool-call format") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(ToolsTest, ACallCutByMaxTokensNeverLeaksIntoTheText) {
  // Qwen2.5's <tool_call> format, parsed by common's chat parser, and the generic JSON format
  // (the tiny fixture's template knows no tools), parsed here.
  for (const std::string& path :
       {templated("Qwen-Qwen2.5-7B-Instruct.jinja"), testutil::synth_model("tiny", "Q8_0")}) {
    Loaded l = load(path);
    ASSERT_TRUE(l.session);
    int named = 0;
    for (int32_t max_tokens : {3, 9, 14, 20, 28}) {
      GenerateOptions o;
      o.chat = true;
      o.tools = {weather_tool()};
      o.tool_choice = "required";
      o.seed = 7;
      o.max_tokens = max_tokens;
      std::string streamed;
      auto r = l.session->Generate("weather in Paris?", o, [&](std::string_view p) {
        streamed += p;
        return true;
      });
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      const std::string where = path + " max_tokens " + std::to_string(max_tokens);
      if (r->finish_reason != FinishReason::kLength) {
        EXPECT_EQ(r->finish_reason, FinishReason::kToolCalls) << where;
        continue;
      }
      // A call was under way from the first token: none of its JSON is the answer.
      EXPECT_EQ(r->text, "") << where;
      EXPECT_EQ(streamed, r->text) << where;
      ASSERT_LE(r->tool_calls.size(), 1u) << where;
      if (r->tool_calls.empty()) continue;
      const ToolCall& c = r->tool_calls[0];
      EXPECT_EQ(c.name, "get_weather") << where;
      named += c.name == "get_weather";
      EXPECT_FALSE(c.id.empty()) << where;
      // What was written of the arguments, as OpenAI sends a cut call: an object begun.
      if (!c.arguments.empty()) {
        EXPECT_EQ(c.arguments[0], '{') << where << ": " << c.arguments;
      }
      EXPECT_EQ(c.arguments.find('\n'), std::string::npos) << where << ": " << c.arguments;
    }
    EXPECT_GT(named, 0) << path << ": no cut call had got as far as its name";
  }
}

TEST(ToolsTest, ReasoningComesApartFromTheAnswer) {
  Loaded l = load(templated("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
  ASSERT_TRUE(l.session);
  EXPECT_TRUE(l.model->Reasons());
  GenerateOptions o;
  o.chat = true;
  o.max_tokens = 40;
  o.grammar = R"(root ::= "let me think" "</think>" "\n\nParis.")";
  std::string answer, thinking;
  o.reasoning_sink = [&](std::string_view p) {
    EXPECT_TRUE(answer.empty()) << "the reasoning streams before the answer";
    thinking += p;
    return true;
  };
  auto r = l.session->Generate("capital of France?", o, [&](std::string_view p) {
    answer += p;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "Paris.");
  EXPECT_EQ(r->reasoning, "let me think");
  EXPECT_EQ(answer, r->text);
  EXPECT_EQ(thinking, r->reasoning);
  o.reasoning = Reasoning::kHide;
  thinking.clear();
  auto hidden = l.session->Generate("capital of France?", o);
  ASSERT_TRUE(hidden.ok());
  EXPECT_EQ(hidden->text, "Paris.");
  EXPECT_TRUE(hidden->reasoning.empty());
  EXPECT_TRUE(thinking.empty());
  o.reasoning = Reasoning::kInline;
  auto inline_r = l.session->Generate("capital of France?", o);
  ASSERT_TRUE(inline_r.ok());
  EXPECT_EQ(inline_r->text, "let me think</think>\n\nParis.");
  // A model without <think> in its template keeps the plain path.
  Loaded q = load(templated("Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_TRUE(q.model);
  EXPECT_FALSE(q.model->Reasons());
}

}  // namespace
}  // namespace edgellm
