// `edgellm serve` as a chat backend: a client that sends the whole history every turn gets
// the prefix reused (usage.prompt_tokens_details.cached_tokens) and the same text as a cold
// server; interleaved conversations stay correct; content parts, n, a base model's ChatML
// fallback and a request too long for the context behave as OpenAI clients expect; requests on
// new connections start no threads (one engine thread decodes).
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#pragma GCC diagnostic ignored "-Wrestrict"
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"
#include "testutil/serve_process.h"

namespace edgellm {
namespace {

using json = nlohmann::json;

struct Reply {
  int status = 0;
  json body;
  std::string chat_template_header;
};

Reply Post(const testutil::ServeProcess& server, const json& body,
           const char* content_type = "application/json") {
  httplib::Client c("127.0.0.1", server.port());
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/chat/completions", body.dump(), content_type);
  Reply out;
  if (!r) return out;
  out.status = r->status;
  out.body = json::parse(r->body, nullptr, false);
  out.chat_template_header = r->get_header_value("X-Edgellm-Chat-Template");
  return out;
}

json Request(const json& messages, int max_tokens = 12) {
  return {{"model", "m"}, {"messages", messages}, {"temperature", 0}, {"max_tokens", max_tokens}};
}

std::string Text(const Reply& r) {
  return r.body.is_object() ? r.body["choices"][0]["message"]["content"].get<std::string>() : "";
}

int Cached(const Reply& r) {
  return r.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
}

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = testutil::synth_model("tiny", "Q8_0"); }
  static inline std::string model_;
};

// A client's conversation: user turns, the server's replies appended as assistant messages.
struct Chat {
  json messages = json::array({{{"role", "system"}, {"content", "Be brief."}}});
  Reply Turn(const testutil::ServeProcess& s, const std::string& user) {
    messages.push_back({{"role", "user"}, {"content", user}});
    Reply r = Post(s, Request(messages));
    if (r.status == 200) messages.push_back({{"role", "assistant"}, {"content", Text(r)}});
    return r;
  }
};

TEST_F(ServeTest, TheSecondTurnReusesThePrefixAndMatchesAColdServer) {
  testutil::ServeProcess warm(model_, {"--ctx", "1024"});
  ASSERT_GT(warm.port(), 0) << warm.log();
  Chat chat;
  const std::vector<std::string> turns = {"你好", "What runs offline?", "再说一遍"};
  std::vector<std::string> texts;
  for (size_t i = 0; i < turns.size(); ++i) {
    Reply r = chat.Turn(warm, turns[i]);
    ASSERT_EQ(r.status, 200) << r.body.dump();
    texts.push_back(Text(r));
    if (i == 0) {
      EXPECT_EQ(Cached(r), 0);
    } else {
      EXPECT_GT(Cached(r), r.body["usage"]["prompt_tokens"].get<int>() / 2) << "turn " << i;
    }
  }
  // Each turn against a server that has seen nothing: the same text, nothing cached.
  for (size_t i = 0; i < turns.size(); ++i) {
    testutil::ServeProcess cold(model_, {"--ctx", "1024"});
    ASSERT_GT(cold.port(), 0) << cold.log();
    json history = json::array();
    for (size_t k = 0; k < 1 + 2 * i + 1; ++k) history.push_back(chat.messages[k]);
    Reply r = Post(cold, Request(history));
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(Text(r), texts[i]) << "turn " << i;
    EXPECT_EQ(Cached(r), 0);
  }
}

TEST_F(ServeTest, InterleavedConversationsStayCorrect) {
  testutil::ServeProcess s(model_, {"--ctx", "1024"});
  ASSERT_GT(s.port(), 0) << s.log();
  Chat a, b;
  b.messages[0]["content"] = "You are a different assistant, 另一个助手。";
  std::vector<std::string> ta, tb;
  for (int i = 0; i < 3; ++i) {
    Reply ra = a.Turn(s, "A turn " + std::to_string(i));
    Reply rb = b.Turn(s, "B 的第 " + std::to_string(i) + " 轮");
    ASSERT_EQ(ra.status, 200);
    ASSERT_EQ(rb.status, 200);
    ta.push_back(Text(ra));
    tb.push_back(Text(rb));
  }
  // The same conversations alone, one after the other, on a fresh server.
  testutil::ServeProcess alone(model_, {"--ctx", "1024"});
  ASSERT_GT(alone.port(), 0);
  Chat a2, b2;
  b2.messages[0]["content"] = b.messages[0]["content"];
  for (int i = 0; i < 3; ++i) EXPECT_EQ(Text(a2.Turn(alone, "A turn " + std::to_string(i))), ta[i]);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Text(b2.Turn(alone, "B 的第 " + std::to_string(i) + " 轮")), tb[i]);
  }
}

TEST_F(ServeTest, ContentPartsNAndLimits) {
  testutil::ServeProcess s(model_, {"--ctx", "256"});
  ASSERT_GT(s.port(), 0) << s.log();
  const json plain = {{{"role", "user"}, {"content", "hello there"}}};
  const json parts = {{{"role", "user"},
                       {"content", {{{"type", "text"}, {"text", "hello "}},
                                    {{"type", "text"}, {"text", "there"}}}}}};
  Reply a = Post(s, Request(plain));
  Reply b = Post(s, Request(parts));
  ASSERT_EQ(a.status, 200) << a.body.dump();
  ASSERT_EQ(b.status, 200) << b.body.dump();
  EXPECT_EQ(Text(a), Text(b));

  const json image = {{{"role", "user"},
                       {"content", {{{"type", "text"}, {"text", "what is this?"}},
                                    {{"type", "image_url"},
                                     {"image_url", {{"url", "data:image/png;base64,AAAA"}}}}}}}};
  Reply img = Post(s, Request(image));
  EXPECT_EQ(img.status, 400);
  EXPECT_NE(img.body["error"]["message"].get<std::string>().find("--mmproj"), std::string::npos)
      << img.body.dump();

  json two = Request(plain);
  two["n"] = 2;
  Reply n2 = Post(s, two);
  EXPECT_EQ(n2.status, 400);
  EXPECT_NE(n2.body["error"]["message"].get<std::string>().find("n must be 1"), std::string::npos);

  std::string huge;
  for (int i = 0; i < 400; ++i) huge += "word" + std::to_string(i) + " ";
  Reply big = Post(s, Request({{{"role", "user"}, {"content", huge}}}));
  EXPECT_EQ(big.status, 400);
  EXPECT_EQ(big.body["error"]["type"], "context_length_exceeded") << big.body.dump();
  EXPECT_NE(big.body["error"]["message"].get<std::string>().find("256"), std::string::npos);

  // A long history in a small context: the oldest turns go, the request is answered.
  json longchat = json::array();
  for (int i = 0; i < 30; ++i) {
    longchat.push_back({{"role", "user"}, {"content", "question " + std::to_string(i)}});
    longchat.push_back({{"role", "assistant"}, {"content", "answer number " + std::to_string(i)}});
  }
  longchat.push_back({{"role", "user"}, {"content", "and the last one?"}});
  Reply fits = Post(s, Request(longchat));
  EXPECT_EQ(fits.status, 200) << fits.body.dump();
  EXPECT_LE(fits.body["usage"]["prompt_tokens"].get<int>(), 256);

  // `curl -d` without a Content-Type: its body is labelled form-urlencoded, which httplib
  // alone refuses over 8 KiB with an empty 413 (an image's base64 always is). Taken as JSON.
  json curl_body = json::array();
  for (int i = 0; i < 150; ++i) {
    curl_body.push_back({{"role", "user"}, {"content", "question " + std::to_string(i)}});
    curl_body.push_back({{"role", "assistant"}, {"content", "answer number " + std::to_string(i)}});
  }
  curl_body.push_back({{"role", "user"}, {"content", "and the last one?"}});
  const json curl_request = Request(curl_body);
  ASSERT_GT(curl_request.dump().size(), 8192u);
  Reply curl = Post(s, curl_request, "application/x-www-form-urlencoded");
  EXPECT_EQ(curl.status, 200) << curl.body.dump();
  EXPECT_EQ(Text(curl), Text(Post(s, curl_request)));

  // A sampling field of the wrong JSON type: a 400 naming the field and the type it wants.
  for (const auto& [field, value, want] :
       std::vector<std::tuple<std::string, json, std::string>>{
           {"temperature", "hot", "temperature must be a number, not string"},
           {"max_tokens", 1.5, "max_tokens must be an integer, not number"},
           {"seed", -3, "seed must be an integer from 0 to 4294967295"},
           {"stop", json::array({"ok", 7}), "stop must be a string or an array of strings"}}) {
    json r = Request(plain);
    r[field] = value;
    Reply typed = Post(s, r);
    EXPECT_EQ(typed.status, 400) << field;
    const std::string m = typed.body["error"]["message"].get<std::string>();
    EXPECT_NE(m.find(want), std::string::npos) << m;
    EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;
  }

  Reply bad_role = Post(s, Request({{{"role", "wizard"}, {"content", "x"}}}));
  EXPECT_EQ(bad_role.status, 400);
  Reply last_not_user = Post(s, Request({{{"role", "user"}, {"content", "x"}},
                                         {{"role", "assistant"}, {"content", "y"}}}));
  EXPECT_EQ(last_not_user.status, 400);
}

TEST_F(ServeTest, ABaseModelFallsBackToChatML) {
  SynthOptions so;
  so.preset = "tiny";
  so.type = "Q8_0";
  so.vocab_path = testutil::vocab_path();
  so.no_chat_template = true;
  so.output = testutil::scratch_dir("serve-base") + "/base.gguf";
  ASSERT_TRUE(synth_model(so).ok());
  testutil::ServeProcess s(so.output, {"--ctx", "256"});
  ASSERT_GT(s.port(), 0) << s.log();
  Reply r = Post(s, Request({{{"role", "user"}, {"content", "hi"}}}));
  ASSERT_EQ(r.status, 200) << r.body.dump();
  EXPECT_EQ(r.chat_template_header, "chatml-fallback");
  EXPECT_NE(s.log().find("ChatML"), std::string::npos) << s.log();
}

// Every model call runs on serve's one engine thread (tools/edgellm/serve_queue.h): requests on
// new connections, which httplib hands to different pool threads, start no OpenMP worker
// threads beyond the first request's. Decoding on each connection's thread gave each of them
// a pool, and once they outnumbered the CPUs libgomp slept between every ggml barrier.
TEST_F(ServeTest, RequestsOnNewConnectionsStartNoThreads) {
  testutil::ServeProcess s(model_, {"--ctx", "256", "--threads", "2"});
  ASSERT_GT(s.port(), 0) << s.log();
  const auto threads = [&] {
    const std::filesystem::path task = "/proc/" + std::to_string(s.pid()) + "/task";
    return std::distance(std::filesystem::directory_iterator(task),
                         std::filesystem::directory_iterator());
  };
  ASSERT_EQ(Post(s, Request({{{"role", "user"}, {"content", "hi"}}}, 4)).status, 200);
  const auto before = threads();
  for (int i = 0; i < 8; ++i) {  // Post opens a new connection each time
    Reply r = Post(s, Request({{{"role", "user"}, {"content", "hello " + std::to_string(i)}}}, 4));
    ASSERT_EQ(r.status, 200) << r.body.dump();
  }
  EXPECT_EQ(threads(), before);
}

}  // namespace
}  // namespace edgellm
