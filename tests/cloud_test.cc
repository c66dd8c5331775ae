// CloudClient against real HTTP servers on loopback: `edgellm serve` (a child process over the
// tiny fixture) for the real path, and an in-process cpp-httplib server scripted to answer
// 429, 5xx, 4xx, 401, cut streams, stalls and malformed events.
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#pragma GCC diagnostic ignored "-Wrestrict"
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "edgellm/cloud.h"
#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"
#include "testutil/serve_process.h"

namespace edgellm {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kKey = "sk-test-0123456789-secret";

std::string chunk(const std::string& content, const char* finish = nullptr) {
  json c = {{"index", 0}, {"delta", {{"content", content}}},
            {"finish_reason", finish ? json(finish) : json(nullptr)}};
  return "data: " + json{{"object", "chat.completion.chunk"}, {"choices", {c}}}.dump() + "\n\n";
}

// Scripted OpenAI-like endpoints, one path per behaviour; counts requests per path.
class FaultServer {
 public:
  FaultServer() {
    auto sse_ok = [](httplib::Response& res, int pieces) {
      res.set_chunked_content_provider("text/event-stream", [pieces](size_t, httplib::DataSink& s) {
        for (int i = 0; i < pieces; ++i) {
          const std::string c = chunk("w" + std::to_string(i) + " ");
          s.write(c.data(), c.size());
        }
        const std::string end = chunk("", "stop") + "data: [DONE]\n\n";
        s.write(end.data(), end.size());
        s.done();
        return true;
      });
    };
    Post("/ok", [this, sse_ok](const httplib::Request& req, httplib::Response& res, int) {
      last_body_ = req.body;
      last_auth_ = req.get_header_value("Authorization");
      sse_ok(res, 5);
    });
    Post("/fail500", [sse_ok](const httplib::Request&, httplib::Response& res, int n) {
      if (n <= 2) {
        res.status = 500;
        res.set_content(R"({"error":{"message":"overloaded"}})", "application/json");
      } else {
        sse_ok(res, 3);
      }
    });
    Post("/busy429", [sse_ok](const httplib::Request&, httplib::Response& res, int n) {
      if (n == 1) {
        res.status = 429;
        res.set_header("Retry-After", "1");
        res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
      } else {
        sse_ok(res, 3);
      }
    });
    Post("/always503", [](const httplib::Request&, httplib::Response& res, int) {
      res.status = 503;
      res.set_content("maintenance", "text/plain");
    });
    Post("/bad400", [](const httplib::Request&, httplib::Response& res, int) {
      res.status = 400;
      res.set_content(R"({"error":{"message":"max_tokens is too large"}})", "application/json");
    });
    Post("/auth", [](const httplib::Request&, httplib::Response& res, int) {
      res.status = 401;
      res.set_content(R"({"error":{"message":"invalid api key"}})", "application/json");
    });
    Post("/cut", [](const httplib::Request&, httplib::Response& res, int) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& s) {
        for (int i = 0; i < 3; ++i) {
          const std::string c = chunk("part" + std::to_string(i) + " ");
          s.write(c.data(), c.size());
        }
        return false;  // the connection drops: no finish, no [DONE], no last chunk
      });
    });
    Post("/stall", [this](const httplib::Request&, httplib::Response& res, int) {
      res.set_chunked_content_provider("text/event-stream", [this](size_t, httplib::DataSink& s) {
        const std::string c = chunk("first ");
        s.write(c.data(), c.size());
        for (int i = 0; i < 100 && !stopping_.load(); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
      });
    });
    Post("/garbage", [](const httplib::Request&, httplib::Response& res, int) {
      res.set_content(chunk("ok ") + "data: {not json\n\n", "text/event-stream");
    });
    Post("/json", [](const httplib::Request&, httplib::Response& res, int) {
      res.set_content(
          R"({"choices":[{"index":0,"message":{"role":"assistant","content":"whole answer"},)"
          R"("finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2}})",
          "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FaultServer() {
    stopping_.store(true);
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int count(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    return counts_[path];
  }
  std::string last_body_, last_auth_;

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, int)>;
  void Post(const std::string& path, Handler h) {
    server_.Post(path + "/v1/chat/completions",
                 [this, path, h](const httplib::Request& req, httplib::Response& res) {
                   int n;
                   {
                     std::lock_guard<std::mutex> l(mu_);
                     n = ++counts_[path];
                   }
                   h(req, res, n);
                 });
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

std::unique_ptr<CloudClient> Client(const std::string& url, CloudOptions o = {}) {
  o.base_url = url;
  o.api_key = kKey;
  o.backoff_initial_s = 0.05;
  o.idle_timeout_s = 1;
  auto c = CloudClient::Create(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

class CloudTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_path_ = testutil::synth_model("tiny", "Q8_0");
    server_ = new testutil::ServeProcess(model_path_, {"--ctx", "512"},
                                         {std::string("EDGELLM_SERVE_API_KEY=") + kKey});
    faults_ = new FaultServer();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete faults_;
  }
  static inline std::string model_path_;
  static inline testutil::ServeProcess* server_ = nullptr;
  static inline FaultServer* faults_ = nullptr;
};

GenerateOptions Greedy(int n) {
  GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = n;
  g.chat = true;
  g.system_prompt = "be brief";
  g.history = {{"user", "hi"}, {"assistant", "hello"}};
  return g;
}

TEST_F(CloudTest, StreamsFromServeExactlyAsTheLocalEngine) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  auto cloud = Client(server_->url());
  std::vector<std::string> pieces;
  auto remote = cloud->Generate("and now?", Greedy(16), [&](std::string_view p) {
    pieces.emplace_back(p);
    return true;
  });
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  ASSERT_FALSE(remote->text.empty());
  std::string joined;
  for (const auto& p : pieces) joined += p;
  EXPECT_EQ(joined, remote->text);
  EXPECT_EQ(cloud->last_attempts(), 1);

  // The same request on a local Session: the same text, finish reason and token count.
  const Generation local_gen = testutil::generate_locally(model_path_, "and now?", Greedy(16));
  const Generation* local = &local_gen;
  EXPECT_EQ(remote->text, local->text);
  EXPECT_EQ(remote->finish_reason, local->finish_reason);
  EXPECT_EQ(remote->stats.n_gen, local->stats.n_gen);      // from the stream's usage chunk
  EXPECT_EQ(remote->stats.n_prompt, local->stats.n_prompt);
  EXPECT_GT(remote->stats.ttft_ms, 0);
}

TEST_F(CloudTest, ApiKeyIsSentAndNeverInMessages) {
  ASSERT_GT(server_->port(), 0) << server_->log();
  CloudOptions o;
  o.base_url = server_->url() + "/v1";
  o.api_key_env = "EDGELLM_TEST_NO_SUCH_VAR";
  auto nokey = CloudClient::Create(o);
  ASSERT_TRUE(nokey.ok());
  auto r = (*nokey)->Generate("hi", Greedy(4));
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("401"), std::string::npos);
  EXPECT_NE(r.status().message().find("EDGELLM_TEST_NO_SUCH_VAR"), std::string::npos);

  // The key from the environment works; a wrong one is refused without echoing it.
  ::setenv("EDGELLM_TEST_CLOUD_KEY", kKey, 1);
  o.api_key_env = "EDGELLM_TEST_CLOUD_KEY";
  auto envkey = CloudClient::Create(o);
  ASSERT_TRUE(envkey.ok());
  EXPECT_TRUE((*envkey)->Generate("hi", Greedy(4)).ok());
  o.api_key = "sk-wrong-key-987654321";
  auto wrong = CloudClient::Create(o);
  auto w = (*wrong)->Generate("hi", Greedy(4));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(w.status().message().find("sk-wrong"), std::string::npos) << w.status().message();

  // The fault server sees the header and the request we send.
  auto c = Client(faults_->url("/ok"));
  GenerateOptions g = Greedy(9);
  g.stop = {"zz"};
  g.seed = 42;
  auto ok = c->Generate("question", g);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->text, "w0 w1 w2 w3 w4 ");
  EXPECT_EQ(faults_->last_auth_, std::string("Bearer ") + kKey);
  auto body = json::parse(faults_->last_body_);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["max_tokens"], 9);
  EXPECT_EQ(body["seed"], 42);
  EXPECT_EQ(body["stop"][0], "zz");
  ASSERT_EQ(body["messages"].size(), 4u);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][2]["content"], "hello");
  EXPECT_EQ(body["messages"][3]["content"], "question");
  // Credentials in the URL are not shown either.
  auto creds = CloudClient::Create({.base_url = "http://user:pa55w0rd@127.0.0.1:1"});
  ASSERT_TRUE(creds.ok());
  EXPECT_EQ((*creds)->url().find("pa55w0rd"), std::string::npos);
}

TEST_F(CloudTest, RetriesOn5xxAnd429ThenStreams) {
  auto c = Client(faults_->url("/fail500"));
  auto r = c->Generate("x", Greedy(8));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "w0 w1 w2 ");
  EXPECT_EQ(c->last_attempts(), 3);
  EXPECT_EQ(faults_->count("/fail500"), 3);

  auto b = Client(faults_->url("/busy429"));
  const auto t0 = Clock::now();
  auto r2 = b->Generate("x", Greedy(8));
  const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(b->last_attempts(), 2);
  EXPECT_GE(waited, 0.9);  // Retry-After: 1 was honoured over the 50 ms backoff

  CloudOptions o;
  o.max_retries = 2;
  auto a = Client(faults_->url("/always503"), o);
  auto r3 = a->Generate("x", Greedy(8));
  EXPECT_EQ(r3.status().code(), Code::kUnavailable);
  EXPECT_NE(r3.status().message().find("3 attempts"), std::string::npos) << r3.status().message();
  EXPECT_NE(r3.status().message().find("HTTP 503"), std::string::npos);
  EXPECT_EQ(faults_->count("/always503"), 3);
}

TEST_F(CloudTest, ClientErrorsAreNotRetried) {
  auto c = Client(faults_->url("/bad400"));
  auto r = c->Generate("x", Greedy(8));
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_tokens is too large"), std::string::npos);
  EXPECT_EQ(faults_->count("/bad400"), 1);
  auto a = Client(faults_->url("/auth"));
  EXPECT_EQ(a->Generate("x", Greedy(8)).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(faults_->count("/auth"), 1);
}

TEST_F(CloudTest, CutAndStalledStreamsAreReportedNotRetried) {
  std::string got;
  auto c = Client(faults_->url("/cut"));
  auto r = c->Generate("x", Greedy(8), [&](std::string_view p) {
    got += p;
    return true;
  });
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("cut mid-way"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("already delivered"), std::string::npos);
  EXPECT_EQ(got, "part0 part1 part2 ");  // what came is delivered once, nothing twice
  EXPECT_EQ(faults_->count("/cut"), 1);

  got.clear();
  auto s = Client(faults_->url("/stall"));
  const auto t0 = Clock::now();
  auto r2 = s->Generate("x", Greedy(8), [&](std::string_view p) {
    got += p;
    return true;
  });
  const double took = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(r2.status().code(), Code::kUnavailable);
  EXPECT_NE(r2.status().message().find("cut mid-way"), std::string::npos) << r2.status().message();
  EXPECT_EQ(got, "first ");
  EXPECT_LT(took, 4.0);  // idle timeout 1 s, not the server's 5 s stall

  auto g = Client(faults_->url("/garbage"));
  auto r3 = g->Generate("x", Greedy(8));
  EXPECT_EQ(r3.status().code(), Code::kCorruptData);
  EXPECT_NE(r3.status().message().find("malformed"), std::string::npos);
}

TEST_F(CloudTest, DeadServerNonStreamedAnswerAndCancel) {
  // Nothing listens: connection refused, retried, then a clear error.
  auto dead = Client("http://127.0.0.1:1");
  auto r = dead->Generate("x", Greedy(4));
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_NE(r.status().message().find("did not answer"), std::string::npos);
  EXPECT_EQ(dead->last_attempts(), 4);

  auto j = Client(faults_->url("/json"));
  auto whole = j->Generate("x", Greedy(4));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->text, "whole answer");
  EXPECT_EQ(whole->finish_reason, FinishReason::kLength);
  EXPECT_EQ(whole->stats.n_gen, 2);

  // A sink that returns false cancels: partial text, kCancelled, not an error; the server
  // serves the next request.
  ASSERT_GT(server_->port(), 0);
  auto c = Client(server_->url());
  GenerateOptions g = Greedy(64);
  g.stream_every_tokens = 1;
  int calls = 0;
  auto cut = c->Generate("count to fifty", g, [&](std::string_view) { return ++calls < 2; });
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(calls, 2);
  auto after = c->Generate("hi", Greedy(4));
  EXPECT_TRUE(after.ok()) << after.status().ToString();

  // Bad options.
  EXPECT_EQ(CloudClient::Create({.base_url = "ftp://x"}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(c->Generate("", Greedy(4)).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace edgellm
